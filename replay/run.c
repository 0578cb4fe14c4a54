/*
 * Running a step: slot handling, the warm-up -> capture -> replay state
 * machine, waiting and reading outputs.
 *
 * The replay path is kept to what cannot be avoided: a handle check, the
 * ring check, the device check and one cudaGraphLaunch. The slot's event
 * is recorded by a node inside the graph, so no second API call is needed.
 */
#include <string.h>

#include "internal.h"
#include "trace.h"

/* One graph launch on `slot`, noting how its completion will be signalled. */
static cgr_status replay(cgr_step *s, uint32_t slot)
{
    cgr__range_push("cgr replay");
    cudaError_t e = cudaGraphLaunch(s->exec[slot], s->rt->stream);
    cgr__range_pop();
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, "cudaGraphLaunch", __FILE__, __LINE__);
    s->sig_kind[slot] = (uint8_t)s->sig_flag;
    if (s->sig_flag)
        s->sig_expect[slot] = ++s->sig_runs[slot];
    s->stats.replays++;
    s->rt->replays++;
    return CGR_STATUS_OK;
}

/* Launches run `ticket` on `slot` in whatever mode the step is in. */
static cgr_status submit(cgr_step *s, uint32_t slot)
{
    cgr_runtime *rt = s->rt;
    cgr_step_stats *ss = &s->stats;
    if (ss->mode == CGR_MODE_GRAPH)
        return replay(s, slot);
    if (ss->mode == CGR_MODE_WARMUP && ss->warmup_runs >= (uint64_t)rt->opt.warmup_runs &&
        !rt->opt.capture) {
        ss->mode = CGR_MODE_EAGER;
        strncpy(ss->capture_error, "capture disabled (cgr_options.capture = 0)",
                sizeof ss->capture_error - 1);
    }
    if (ss->mode == CGR_MODE_WARMUP && ss->warmup_runs >= (uint64_t)rt->opt.warmup_runs) {
        cgr_status st = cgr__capture(s);
        if (st == CGR_STATUS_CAPTURE_FAILED) {
            /* Keep the reason; later runs of this step run eagerly. */
            ss->mode = CGR_MODE_EAGER;
            ss->capture_failures++;
            strncpy(ss->capture_error, cgr_last_error(), sizeof ss->capture_error - 1);
            cgr__log(rt, CGR_LOG_WARN, "step '%s' runs eagerly: %s", s->name, ss->capture_error);
            return st;
        }
        if (st != CGR_STATUS_OK)
            return st;
        ss->mode = CGR_MODE_GRAPH;
        ss->capture_error[0] = '\0';
        return replay(s, slot);
    }
    CGR_TRY(cgr__run_eager(s, slot));
    s->sig_kind[slot] = 0;
    if (ss->mode == CGR_MODE_WARMUP)
        ss->warmup_runs++;
    else
        ss->eager_runs++;
    rt->eager_runs++;
    return CGR_STATUS_OK;
}

/* Submits the acquired slot and commits or cancels it. */
static cgr_status launch_acquired(cgr_step *s, uint64_t ticket)
{
    uint32_t slot = cgr__ring_slot(&s->ring, ticket);
    int prev = 0;
    cgr_status st = cgr__device_enter(s->rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = submit(s, slot);
        cgr__device_leave(prev);
    }
    if (st != CGR_STATUS_OK) {
        cgr__ring_cancel(&s->ring);
        return st;
    }
    s->stats.runs++;
    return cgr__ring_commit(&s->ring, ticket);
}

static cgr_status acquire(cgr_step *s, uint64_t *ticket, uint32_t *slot, const char *fn)
{
    cgr_status st = cgr__ring_acquire(&s->ring, ticket, slot);
    if (st == CGR_STATUS_BUSY)
        return CGR_FAIL(st,
                        "%s: all %u staging slots of step '%s' hold results not waited for; "
                        "call cgr_step_wait() on run %llu first",
                        fn, s->ring.slots, s->name,
                        (unsigned long long)(s->ring.launched - s->ring.slots));
    if (st == CGR_STATUS_WRONG_STATE)
        return CGR_FAIL(st, "%s: a slot of step '%s' is acquired and not launched yet", fn,
                        s->name);
    return st;
}

CGR_API cgr_status cgr_step_run(cgr_step *s, const void *const *inputs, uint64_t *ticket)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_run"));
    if (s->n_in > 0) {
        if (!inputs)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "cgr_step_run: inputs is NULL but step '%s' has %d inputs", s->name,
                            s->n_in);
        for (int i = 0; i < s->n_in; i++)
            if (!inputs[i])
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                "cgr_step_run: inputs[%d] (\"%s\") is NULL", i, s->in[i].name);
    }
    uint64_t t;
    uint32_t slot;
    CGR_TRY(acquire(s, &t, &slot, "cgr_step_run"));
    unsigned char *host = cgr__slot_host(s, slot);
    for (int i = 0; i < s->n_in; i++)
        memcpy(host + s->in[i].slot_offset, inputs[i], s->in[i].bytes);
    CGR_TRY(launch_acquired(s, t));
    if (ticket)
        *ticket = t;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_acquire(cgr_step *s, cgr_slot *out)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_acquire"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_acquire: slot is NULL");
    uint64_t t;
    uint32_t slot;
    CGR_TRY(acquire(s, &t, &slot, "cgr_step_acquire"));
    memset(out, 0, sizeof *out);
    out->ticket = t;
    unsigned char *host = cgr__slot_host(s, slot);
    for (int i = 0; i < s->n_in; i++)
        out->inputs[i] = host + s->in[i].slot_offset;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_launch(cgr_step *s, const cgr_slot *slot)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_launch"));
    if (!slot)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_launch: slot is NULL");
    if (!s->ring.acquired)
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_step_launch: no slot of step '%s' is acquired", s->name);
    if (slot->ticket != s->ring.launched)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_launch: slot is for run %llu, the acquired one is run %llu",
                        (unsigned long long)slot->ticket,
                        (unsigned long long)s->ring.launched);
    return launch_acquired(s, slot->ticket);
}

/*
 * Waits for the last run on `slot`. A graph run whose outputs go through
 * the zero-copy kernel publishes a sequence number into the slot's flag
 * word as soon as its outputs are visible; the host sees that a few
 * microseconds before the graph's end would reach an event (measured in
 * docs/staging.md). Spinning is bounded: past cgr_options.wait_spin_us
 * the wait blocks on the run's event, which also
 * reports a failed run instead of spinning forever on a flag that will
 * never come.
 */
static cgr_status wait_slot(cgr_step *s, uint32_t slot)
{
    double spin_us = (double)s->rt->opt.wait_spin_us;
    if (s->sig_kind[slot] && spin_us > 0.0) {
        uint64_t *flag = (uint64_t *)cgr__slot_host(s, slot);
        uint64_t want = s->sig_expect[slot];
        double start = 0.0;
        for (unsigned i = 1;; i++) {
            if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) >= want)
                return CGR_STATUS_OK;
            if ((i & 255) == 0) {
                double now = cgr__now_us();
                if (start == 0.0)
                    start = now;
                else if (now - start > spin_us)
                    break;
            }
        }
    }
    CGR_CUDA_TRY(cudaEventSynchronize(s->done[slot]));
    if (s->sig_kind[slot] &&
        __atomic_load_n((uint64_t *)cgr__slot_host(s, slot), __ATOMIC_ACQUIRE) < s->sig_expect[slot])
        return CGR_FAIL(CGR_STATUS_CUDA_ERROR,
                        "step '%s': a run on slot %u finished without publishing its outputs",
                        s->name, slot);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_wait(cgr_step *s, uint64_t ticket)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_wait"));
    if (cgr__ring_check_wait(&s->ring, ticket) != CGR_STATUS_OK)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_wait: run %llu of step '%s' was never launched (%llu so far)",
                        (unsigned long long)ticket, s->name,
                        (unsigned long long)s->ring.launched);
    if (ticket < s->ring.waited)
        return CGR_STATUS_OK;
    CGR_TRY(wait_slot(s, cgr__ring_slot(&s->ring, ticket)));
    cgr__ring_mark_waited(&s->ring, ticket);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_sync(cgr_step *s)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_sync"));
    if (s->ring.launched == 0)
        return CGR_STATUS_OK;
    return cgr_step_wait(s, s->ring.launched - 1);
}

CGR_API cgr_status cgr_step_output(cgr_step *s, uint64_t ticket, int index, const void **data,
                                   size_t *bytes)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_output"));
    if (!data)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_output: data is NULL");
    if (index < 0 || index >= s->n_out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_output: index %d, step '%s' has %d outputs", index, s->name,
                        s->n_out);
    cgr_status st = cgr__ring_check_output(&s->ring, ticket);
    if (st == CGR_STATUS_WRONG_STATE)
        return CGR_FAIL(st, "cgr_step_output: run %llu of step '%s' was not waited for",
                        (unsigned long long)ticket, s->name);
    if (st != CGR_STATUS_OK)
        return CGR_FAIL(st,
                        "cgr_step_output: run %llu of step '%s' was never launched or its slot "
                        "was reused by a later run",
                        (unsigned long long)ticket, s->name);
    *data = cgr__slot_host(s, cgr__ring_slot(&s->ring, ticket)) + s->out[index].slot_offset;
    if (bytes)
        *bytes = s->out[index].bytes;
    return CGR_STATUS_OK;
}
