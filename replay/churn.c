/*
 * Churn guard (see churn.h).
 *
 * In graph mode the ring recent[] holds the step numbers of the latest (at
 * most k) new shapes; head is where the next one goes, so once the ring is
 * full, recent[head] is the oldest of the last k. After writing step t,
 * "k new shapes within W steps" is "ring full and t - recent[head] < W".
 */
#include "churn.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

void cgr__churn_init(cgr__churn *g, uint32_t k, uint64_t window, uint64_t stable_steps)
{
    assert(g != NULL && k <= CGR__CHURN_MAX_K &&
           (k == 0 || (window >= k && stable_steps > 0)));
    memset(g, 0, sizeof *g);
    g->k = k;
    g->window = window;
    g->stable_needed = stable_steps;
}

int cgr__churn_observe(cgr__churn *g, int is_new_shape)
{
    assert(g != NULL);
    uint64_t t = g->counters.steps++;
    if (is_new_shape)
        g->counters.new_shapes++;

    if (!g->eager) {
        if (is_new_shape && g->k > 0) {
            g->recent[g->head] = t;
            g->head = g->head + 1 == g->k ? 0 : g->head + 1;
            if (g->filled < g->k)
                g->filled++;
            if (g->filled == g->k && t - g->recent[g->head] < g->window) {
                g->eager = 1;
                g->stable = 0;
                g->filled = 0;
                g->head = 0;
                g->counters.activations++;
            }
        }
    } else if (is_new_shape) {
        g->stable = 0;
    } else if (++g->stable >= g->stable_needed) {
        g->eager = 0;
        g->stable = 0;
        g->counters.recoveries++;
    }
    return g->eager;
}
