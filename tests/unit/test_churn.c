/*
 * Unit tests of the churn guard: scripted shape sequences (steady, one
 * change, K changes within W trips, K changes spread beyond W do not, the
 * window slides, recovery after S stable steps and not before, a new shape
 * while eager restarting the count, tripping again), the argument checks,
 * and random sequences against a model that keeps every new shape's step
 * number and counts the ones inside the window.
 */
#define _POSIX_C_SOURCE 200809L /* fork, for the asserted preconditions */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"
#include "death.h"
#include "test.h"

#define TEST_RNG_SEED 0xA0761D6478BD642Full
#include "xorshift.h"

static void guard(cgr__churn *g, uint32_t k, uint64_t w, uint64_t s)
{
    memset(g, 0xEE, sizeof *g);
    cgr__churn_init(g, k, w, s);
}

/* One step and whether it tripped or recovered the guard (by its counters). */
static void observe(cgr__churn *g, int is_new, int *eager, int *trip, int *rec)
{
    const uint64_t trips = g->counters.activations, recs = g->counters.recoveries;
    *eager = cgr__churn_observe(g, is_new);
    *trip = (int)(g->counters.activations - trips);
    *rec = (int)(g->counters.recoveries - recs);
}

/* One step; checks the three outcomes. */
static void step(cgr__churn *g, int is_new, int want_eager, int want_trip, int want_rec)
{
    int eager = -1, trip = -1, rec = -1;
    observe(g, is_new, &eager, &trip, &rec);
    if (eager != want_eager || trip != want_trip || rec != want_rec)
        TEST_FAIL_("step %llu (new %d): eager %d tripped %d recovered %d, expected %d %d %d",
                   (unsigned long long)(g->counters.steps - 1), is_new, eager, trip, rec,
                   want_eager, want_trip, want_rec);
    ASSERT_EQ((g)->eager, want_eager);
}

/*
 * Runs a script: one character per step. '.' same shape, 'n' new shape.
 * The expected mode per step: 'g' graph, 'E' eager; 'T' the guard trips on
 * this step (eager), 'R' it recovers on this step (graph).
 */
static void script(cgr__churn *g, const char *shapes, const char *modes)
{
    ASSERT_EQ(strlen(shapes), strlen(modes));
    for (size_t i = 0; shapes[i] != '\0'; i++) {
        int is_new = shapes[i] == 'n';
        char m = modes[i];
        step(g, is_new, m == 'E' || m == 'T', m == 'T', m == 'R');
    }
}

static void test_init(void)
{
    cgr__churn g;
    /* What the API edge refuses (lib/validate.c) is asserted here, as are NULL pointers. */
    ASSERT_DIES(cgr__churn_init(&g, CGR__CHURN_MAX_K + 1, 1000, 10));
    ASSERT_DIES(cgr__churn_init(&g, 3, 2, 10)); /* W < K */
    ASSERT_DIES(cgr__churn_init(&g, 3, 0, 10));
    ASSERT_DIES(cgr__churn_init(&g, 3, 10, 0)); /* S = 0 */
    ASSERT_DIES(cgr__churn_init(&g, 1, 0, 1));
    ASSERT_DIES(cgr__churn_init(NULL, 3, 10, 10));
    ASSERT_DIES(cgr__churn_observe(NULL, 1));

    guard(&g, 3, 3, 1); /* W = K is the smallest window */
    ASSERT_EQ(g.counters.steps, 0);
    ASSERT_EQ((&g)->eager, 0);
    guard(&g, CGR__CHURN_MAX_K, UINT64_MAX, UINT64_MAX);
    guard(&g, 0, 0, 0); /* off: window and S are ignored */
}

static void test_steady(void)
{
    cgr__churn g;
    guard(&g, 3, 10, 5);
    step(&g, 1, 0, 0, 0); /* the first shape is new */
    for (int i = 0; i < 10000; i++)
        step(&g, 0, 0, 0, 0);
    ASSERT_U64_EQ(g.counters.steps, 10001);
    ASSERT_U64_EQ(g.counters.new_shapes, 1);
    ASSERT_U64_EQ(g.counters.activations, 0);

    /* One change now and then, and even a burst of K - 1: never trips. */
    guard(&g, 3, 10, 5);
    for (int i = 0; i < 1000; i++)
        step(&g, i % 7 == 0, 0, 0, 0);
    script(&g, "..........nn........nn........", "gggggggggggggggggggggggggggggg");
    /* Changes exactly W apart, K of them: 0, 5, 10 span 10 steps, not within 10. */
    guard(&g, 3, 10, 5);
    script(&g, "n....n....n....n....n", "ggggggggggggggggggggg");
    ASSERT_U64_EQ(g.counters.new_shapes, 5);
    ASSERT_U64_EQ(g.counters.activations, 0);
}

static void test_trip(void)
{
    cgr__churn g;

    /* K = 3 new shapes at steps 0, 4, 9: within W = 10, trips on the third. */
    guard(&g, 3, 10, 5);
    script(&g, "n...n....n", "gggggggggT");
    ASSERT_U64_EQ(g.counters.activations, 1);

    /* Back to back. */
    guard(&g, 3, 10, 5);
    script(&g, "nnn", "ggT");

    /* The window slides: 0, 5, 10 do not trip, then 12 does (5, 10, 12). */
    guard(&g, 3, 10, 5);
    script(&g, "n....n....n.n", "ggggggggggggT");

    /* Only the latest K count: an old burst does not help a later one. */
    guard(&g, 3, 10, 5);
    script(&g, "nn..........n.n", "ggggggggggggggg");
    script(&g, "n", "T"); /* 12, 14, 15 */

    /* K = 1: any new shape trips. */
    guard(&g, 1, 1, 2);
    script(&g, "n..", "TER");
    script(&g, "...n.n..", "gggTEEER");
    ASSERT_U64_EQ(g.counters.activations, 2);
    ASSERT_U64_EQ(g.counters.recoveries, 2);

    /* K = 0: off. */
    guard(&g, 0, 0, 0);
    for (int i = 0; i < 1000; i++)
        step(&g, 1, 0, 0, 0);
    ASSERT_U64_EQ(g.counters.new_shapes, 1000);
    ASSERT_U64_EQ(g.counters.activations, 0);

    /* The largest K. */
    guard(&g, CGR__CHURN_MAX_K, CGR__CHURN_MAX_K, 3);
    for (uint32_t i = 0; i + 1 < CGR__CHURN_MAX_K; i++)
        step(&g, 1, 0, 0, 0);
    step(&g, 1, 1, 1, 0);
    guard(&g, CGR__CHURN_MAX_K, CGR__CHURN_MAX_K, 3);
    step(&g, 0, 0, 0, 0);
    for (uint32_t i = 0; i + 1 < CGR__CHURN_MAX_K; i++)
        step(&g, 1, 0, 0, 0); /* steps 1..63 */
    step(&g, 0, 0, 0, 0);
    step(&g, 1, 0, 0, 0); /* 64 new shapes over steps 1..65: not within 64 */
    step(&g, 1, 0, 0, 0); /* 2..63, 65, 66: still not */
    step(&g, 0, 0, 0, 0);
}

static void test_hysteresis(void)
{
    cgr__churn g;

    /* Trip, then S = 5 stable steps: eager for 4, recovered on the 5th. */
    guard(&g, 3, 10, 5);
    script(&g, "nnn.....", "ggTEEEER");
    ASSERT_U64_EQ(g.counters.recoveries, 1);

    /* A new shape while eager restarts the count (and does not trip again). */
    guard(&g, 3, 10, 5);
    script(&g, "nnn....n....n.....", "ggTEEEEEEEEEEEEEER");
    ASSERT_U64_EQ(g.counters.activations, 1);
    ASSERT_U64_EQ(g.counters.recoveries, 1);

    /* Constant churn keeps it eager forever. */
    guard(&g, 3, 10, 5);
    script(&g, "nnn", "ggT");
    for (int i = 0; i < 5000; i++)
        step(&g, i % 4 == 0, 1, 0, 0);
    ASSERT_U64_EQ(g.counters.activations, 1);

    /*
     * After recovering the history is gone: two new shapes right away do not
     * trip, even though with the shapes before the trip they would be K
     * within W. A third does: it trips again.
     */
    guard(&g, 3, 20, 2);
    script(&g, "nnn..", "ggTER");
    script(&g, "n.n", "ggg");
    script(&g, "n", "T");
    ASSERT_U64_EQ(g.counters.activations, 2);
    script(&g, "n.n..", "EEEER");
    ASSERT_U64_EQ(g.counters.recoveries, 2);

    /* S = 1: the first stable step recovers. */
    guard(&g, 2, 5, 1);
    script(&g, "nnnnn.n.n", "gTEEERggT");
}

/* ---- random sequences against a model ----------------------------------------------- */

typedef struct model {
    uint32_t k;
    uint64_t w, s;
    uint64_t t;
    int eager;
    uint64_t stable;
    uint64_t *news; /* step numbers of new shapes since the last trip or recovery */
    size_t n_news;
} model;

static void model_step(model *m, int is_new, int *eager, int *trip, int *rec)
{
    uint64_t t = m->t++;
    *trip = *rec = 0;
    if (!m->eager) {
        if (is_new && m->k > 0) {
            m->news[m->n_news++] = t;
            uint64_t inside = 0;
            for (size_t i = 0; i < m->n_news; i++)
                if (t - m->news[i] < m->w)
                    inside++;
            if (inside >= m->k) {
                m->eager = 1;
                m->stable = 0;
                m->n_news = 0;
                *trip = 1;
            }
        }
    } else if (is_new) {
        m->stable = 0;
    } else if (++m->stable == m->s) {
        m->eager = 0;
        m->n_news = 0;
        *rec = 1;
    }
    *eager = m->eager;
}

static void test_random(void)
{
    enum { STEPS = 20000 };
    uint64_t *news = malloc(STEPS * sizeof *news);
    ASSERT(news != NULL);
    uint64_t trips = 0, recs = 0;
    for (int run = 0; run < 40; run++) {
        cgr__churn g;
        model m;
        memset(&m, 0, sizeof m);
        m.k = (uint32_t)(rng_next() % 9);
        m.w = m.k + rng_next() % 30;
        m.s = 1 + rng_next() % 25;
        m.news = news;
        guard(&g, m.k, m.w, m.s);
        /* Phases of different churn rates, so both modes get long stretches. */
        uint64_t rate = 0;
        uint64_t n_new = 0, m_trips = 0, m_recs = 0;
        for (int i = 0; i < STEPS; i++) {
            if (i % 500 == 0)
                rate = rng_next() % 60;
            int is_new = (int)(rng_next() % 100 < rate);
            int e1, t1, r1, e2, t2, r2;
            observe(&g, is_new, &e1, &t1, &r1);
            model_step(&m, is_new, &e2, &t2, &r2);
            if (e1 != e2 || t1 != t2 || r1 != r2)
                TEST_FAIL_("run %d step %d: guard %d %d %d, model %d %d %d", run, i, e1, t1, r1,
                           e2, t2, r2);
            n_new += (uint64_t)is_new;
            m_trips += (uint64_t)t2;
            m_recs += (uint64_t)r2;
        }
        ASSERT_U64_EQ(g.counters.steps, STEPS);
        ASSERT_U64_EQ(g.counters.new_shapes, n_new);
        ASSERT_U64_EQ(g.counters.activations, m_trips);
        ASSERT_U64_EQ(g.counters.recoveries, m_recs);
        trips += m_trips;
        recs += m_recs;
    }
    free(news);
    ASSERT_GT(trips, 100);
    ASSERT_GT(recs, 100);
}

int main(void)
{
    test_init();
    test_steady();
    test_trip();
    test_hysteresis();
    test_random();
    printf("churn: ok\n");
    return 0;
}
