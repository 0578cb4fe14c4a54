/*
 * What a step says about itself: the action of each run, its counters and
 * the list of its shapes (public API in cgr.h).
 * Everything is read under rt->lock, so one snapshot is consistent.
 */
#include <assert.h>
#include <string.h>

#include "abi.h"
#include "replay.h"

_Static_assert(CGR__SHAPES_TEXT_MAX == sizeof(((cgr_shape_info *)0)->text) &&
                   CGR__SHAPES_TEXT_MAX == sizeof(((cgr_step_stats *)0)->last_update_error) &&
                   CGR__SHAPES_WARNING_MAX == sizeof(((cgr_step_stats *)0)->churn_warning),
               "cgr's public texts hold the shape table's");

CGR_API const char *cgr_run_action_name(cgr_run_action a)
{
    static const char *names[] = {"replay", "warmup", "capture", "update", "eager"};
    return (unsigned)a < sizeof names / sizeof names[0] ? names[a] : "invalid";
}

CGR_API cgr_status cgr_step_run_action(const cgr_step *s, uint64_t ticket, cgr_run_action *out)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_run_action"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_run_action: out is NULL");
    cgr_runtime *rt = s->rt;
    CGR_TRY(cgr__lock(rt, "cgr_step_run_action"));
    /* The slot remembers its latest run only. */
    uint64_t launched = s->ring.launched;
    int ok = ticket < launched && launched - ticket <= s->ring.slots;
    if (ok)
        *out = (cgr_run_action)s->slot_run[cgr__ring_slot(&s->ring, ticket)].action;
    cgr__unlock(rt);
    if (!ok)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_run_action: run %llu of step '%s' was never launched or its "
                        "slot was reused (%llu launched, %u slots)",
                        (unsigned long long)ticket, s->name, (unsigned long long)launched,
                        s->ring.slots);
    return CGR_STATUS_OK;
}

/*
 * The step's own counters (the runs, counted in replay/run.c) with the
 * shape table's (the shapes' events) and the times and sizes of the
 * latest capture. Called under the lock, so that one snapshot is
 * consistent.
 */
static void step_stats(const cgr_step *s, cgr_step_stats *out)
{
    const cgr__shapes *m = s->shapes;
    *out = s->stats;
    out->new_shapes = m->churn.counters.new_shapes;
    out->capture_failures = m->stats.capture_failures;
    _Static_assert(sizeof out->update_failures_by_reason ==
                       sizeof m->stats.update_failures_by_reason,
                   "one counter per update result");
    memcpy(out->update_failures_by_reason, m->stats.update_failures_by_reason,
           sizeof out->update_failures_by_reason);
    out->update_failures = 0;
    for (uint32_t r = 0; r < CGR__SHAPES_UPDATE_REASONS; r++)
        out->update_failures += out->update_failures_by_reason[r];
    out->evictions = m->stats.evictions;
    out->churn_activations = m->churn.counters.activations;
    out->churn_recoveries = m->churn.counters.recoveries;
    out->entries = m->n_graphs;
    out->bytes = m->bytes;
    out->arena_bytes = s->rt->arena.mapped;
    /* The table's texts always end in a NUL within these sizes. */
    memcpy(out->last_update_error, m->update_error, sizeof out->last_update_error);
    memcpy(out->churn_warning, m->warning, sizeof out->churn_warning);
}

CGR_API cgr_status cgr_step_get_stats_size(const cgr_step *s, cgr_step_stats *out, size_t size)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_get_stats"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_get_stats: out is NULL");
    CGR_TRY(cgr__struct_out_check(size, CGR__STEP_STATS_MIN_SIZE, "cgr_step_get_stats"));
    cgr_step_stats st;
    CGR_TRY(cgr__lock(s->rt, "cgr_step_get_stats"));
    step_stats(s, &st);
    cgr__unlock(s->rt);
    cgr__struct_out(out, size, &st, sizeof st);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_shape_at_size(const cgr_step *s, int index, cgr_shape_info *out,
                                          size_t size)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_shape_at"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_shape_at: out is NULL");
    CGR_TRY(cgr__struct_out_check(size, CGR__SHAPE_INFO_MIN_SIZE, "cgr_step_shape_at"));
    if (index < 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_shape_at: index %d", index);
    cgr_runtime *rt = s->rt;
    CGR_TRY(cgr__lock(rt, "cgr_step_shape_at"));
    /* Filled aside: a refused index leaves the caller's struct as it was. */
    cgr_shape_info info;
    memset(&info, 0, sizeof info);
    info.n_dims = s->n_dyn;
    /*
     * Cached shapes first, most recently used first (each decision touches
     * one entry, so their last uses differ), then those that run eagerly
     * for good; warming ones are not listed.
     */
    const cgr__shapes *m = s->shapes;
    const cgr__shape *pick = NULL;
    int k = (int)m->n_graphs;
    uint64_t below = UINT64_MAX;
    for (int j = 0; index < k && j <= index; j++) {
        pick = NULL;
        for (uint32_t i = 0; i < m->capacity; i++) {
            const cgr__shape *e = &m->entries[i];
            if (e->state == CGR__SHAPE_GRAPH && e->last_use < below &&
                (!pick || e->last_use > pick->last_use))
                pick = e;
        }
        assert(pick != NULL); /* n_graphs entries hold a graph */
        below = pick->last_use;
    }
    for (uint32_t i = 0; i < m->capacity && !pick; i++) {
        const cgr__shape *e = &m->entries[i];
        if (e->state == CGR__SHAPE_EAGER && k++ == index)
            pick = e;
    }
    const int found = pick != NULL;
    if (pick) {
        memcpy(info.dims, pick->dims, (size_t)s->n_dyn * sizeof(int64_t));
        if (pick->state == CGR__SHAPE_GRAPH) {
            info.cached = 1;
            info.replays = pick->replays;
            info.last_use = pick->last_use;
            info.bytes = pick->bytes;
        } else {
            info.eager_runs = pick->eager_runs;
            info.reason = (cgr_eager_reason)pick->reason;
            memcpy(info.text, pick->text, sizeof info.text);
        }
        cgr__struct_out(out, size, &info, sizeof info);
    }
    cgr__unlock(rt);
    if (!found)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_shape_at: index %d, step '%s' has %d shapes", index, s->name, k);
    return CGR_STATUS_OK;
}
