/*
 * Submitting a run: acquire a slot, write the inputs, launch, or give the
 * slot back; cgr_step_run() does all of it from host pointers.
 * docs/architecture.md, "The path of one replay", walks through it. The
 * replay path is kept to what cannot be avoided: a handle check, the
 * runtime lock, the ring check, the device check, the table's lookup and
 * one cudaGraphLaunch.
 *
 * Threads (docs/threading.md): every entry point here holds rt->lock while
 * it reads or changes step state, and submitting holds it throughout, so a
 * capture on the runtime's stream never sees another thread's launch.
 */
#include <stdint.h>
#include <string.h>

#include "host_write.h"
#include "replay.h"
#include "trace.h"

/* ---- launching a graph ------------------------------------------------------------ */

/* Points g's memcpy nodes at `slot` (capture/capture.c says why they, alone, need it). */
static cgr_status repoint_copies(cgr_step *s, cgr__graph *g, uint32_t slot)
{
    unsigned char *host = cgr__slot_host(s, slot);
    /* Unknown until every node is done: a failure part way must not leave a stale claim. */
    g->copy_slot = UINT32_MAX;
    for (int k = 0; k < g->n_copies; k++) {
        const cgr__graph_copy *c = &g->copies[k];
        unsigned char *h = host + c->slot_offset;
        CGR_CUDA_TRY(c->to_host ? cudaGraphExecMemcpyNodeSetParams1D(g->exec, c->node, h, c->dev,
                                                                     c->bytes,
                                                                     cudaMemcpyDeviceToHost)
                                : cudaGraphExecMemcpyNodeSetParams1D(g->exec, c->node, c->dev, h,
                                                                     c->bytes,
                                                                     cudaMemcpyHostToDevice));
    }
    g->copy_slot = slot;
    return CGR_STATUS_OK;
}

cgr_status cgr__launch_graph(cgr_step *s, cgr__graph *g, uint32_t slot, int ahead)
{
    /*
     * The staging kernels take the slot from the slot word. Consecutive
     * graph runs find it right, since each advances it; after anything else
     * (an eager run, a run launched again on its slot) it is reset here,
     * in stream order, so no graph still running can see the change.
     */
    if (g->flag && s->slot_next != slot) {
        CGR_CUDA_TRY(cudaMemsetAsync(s->slot_word, (int)slot, 1, s->rt->stream));
        s->slot_next = slot;
    }
    if (g->n_copies && g->copy_slot != slot)
        CGR_TRY(repoint_copies(s, g, slot));
    if (g->gated)
        cgr__gate_set(s, slot, ahead ? 0 : 1);
    cgr__range_push("cgr replay");
    cudaError_t e = cudaGraphLaunch(g->exec, s->rt->stream);
    cgr__range_pop();
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, "cudaGraphLaunch");
    s->sig_graph[slot] = ++s->graph_runs;
    if (g->flag) {
        s->slot_next = slot + 1 == s->ring.slots ? 0 : slot + 1;
        s->sig_kind[slot] = CGR__SIG_FLAG;
        s->sig_expect[slot]++;
    } else {
        s->sig_kind[slot] = CGR__SIG_GRAPH;
    }
    return CGR_STATUS_OK;
}

/* ---- one run ------------------------------------------------------------------------ */

/*
 * Every launched run is counted here and only here, once, by what it did
 * (cgr_step_stats says how the counters add up; the runtime's are the sums
 * of its steps').
 */
static void count_run(cgr_step *s, uint8_t action, uint8_t reason)
{
    cgr_step_stats *ss = &s->stats;
    ss->runs++;
    if (action == CGR_RUN_WARMUP) {
        ss->warmup_runs++;
    } else if (action == CGR_RUN_EAGER) {
        ss->eager_runs++;
        ss->eager_by_reason[reason < CGR_EAGER_REASONS ? reason : CGR_EAGER_NONE]++;
    } else {
        /* A capturing run (an update is one) launches its new graph: a replay too. */
        ss->replays++;
        if (action != CGR_RUN_REPLAY) {
            ss->captures++;
            ss->updates += action == CGR_RUN_UPDATE;
        }
    }
}

/*
 * What this run would do that must wait while another thread is inside
 * cgr_step_wait on the step, or NULL: a capture records into the stream
 * while that thread synchronizes the step's events, which CUDA does not
 * allow. Asked without deciding, so that a refused run leaves the shape
 * table as it was (docs/threading.md). An armed run is never either: its
 * graph is cached and was not due when it was armed. A capture due for a
 * shape without a scratch plan records nothing: it warms up again, or
 * fails at once and runs eagerly (capture_run, replay/dispatch.c).
 */
static const char *waits_for_waiters(const cgr_step *s, const int64_t *dims)
{
    uint32_t i;
    const cgr__shapes_action a = cgr__shapes_peek(s->shapes, dims, &i);
    if (a == CGR__SHAPES_REPLAY && cgr__graph_check_due(s->shapes->entries[i].payload))
        return "due for its frozen-value check";
    if (a == CGR__SHAPES_CAPTURE && s->rt->opt.capture && s->plans[i].planned)
        return "due for capture";
    return NULL;
}

/*
 * Carries out the run of the acquired slot `slot` at the dims given at
 * acquire (s->run_dims). An armed run goes right after the device check:
 * while the slot is acquired nothing else runs the step, so the table
 * cannot have changed since it chose that graph, and every nanosecond
 * before go is latency. Not before the check: once it has gone the run
 * executes, and a call that failed after that would report a run that
 * executed as not launched; failing before go, the caller lets the armed
 * run through instead (arm_released).
 */
static cgr_status submit(cgr_step *s, uint32_t slot)
{
    const int64_t *dims = s->run_dims;
    cgr__graph *armed = s->armed;
    int expired = 0;
    const char *later = s->waiters > 0 ? waits_for_waiters(s, dims) : NULL;
    if (later)
        return CGR_FAIL(CGR_STATUS_BUSY,
                        "step '%s' is %s while another thread waits on it; nothing was "
                        "launched, try again",
                        s->name, later);
    /* plain_launch: only cgr__launch_graph runs, none of the caller's code. */
    int prev = 0, plain_launch = 0;
    CGR_TRY(cgr__device_enter(s->rt, &prev));
    if (armed) {
        if (s->n_dyn)
            cgr__stage_shape(s, slot, s->armed_bucket, dims);
        expired = cgr__arm_go(s, slot);
    }
    /* The dims were checked at acquire, and nothing but this run can be capturing. */
    cgr__shapes_decision d;
    cgr__shapes_decide(s->shapes, dims, &d);
    cgr_status st = CGR_STATUS_OK;
    if (armed && (d.action != CGR__SHAPES_REPLAY || d.payload != armed)) {
        st = CGR_BUG("step '%s': an armed run went, but the shape table decided otherwise; "
                     "its outputs are dropped",
                     s->name);
        goto out;
    }
    if (s->n_dyn && !armed)
        cgr__stage_shape(s, slot, d.dims, dims);
    uint8_t action = CGR_RUN_REPLAY, reason = CGR_EAGER_NONE;
    cgr__graph *g = d.payload;
    /* A graph due for its frozen-value check goes to cgr__run_miss (arm_ahead never arms one). */
    if (d.action == CGR__SHAPES_REPLAY && !cgr__graph_check_due(g)) {
        cgr__graph_replayed(g);
        plain_launch = armed || s->profile == NULL;
        /* An armed run that went is launched; again only if it had expired. */
        if (armed)
            st = expired ? cgr__launch_graph(s, g, slot, 0) : CGR_STATUS_OK;
        else if (__builtin_expect(s->profile != NULL, 0))
            st = cgr__profile_replay(s, slot, &d, &action); /* the profile window */
        else
            st = cgr__launch_graph(s, g, slot, 0);
        if (st == CGR_STATUS_OK)
            s->stats.mode = CGR_MODE_GRAPH;
    } else {
        st = cgr__run_miss(s, slot, &d, &action, &reason);
    }
    if (st == CGR_STATUS_OK) {
        count_run(s, action, reason);
        cgr__slot_run *sr = &s->slot_run[slot];
        sr->action = action;
        memcpy(sr->true_dims, dims, (size_t)s->n_dyn * sizeof(int64_t));
        memcpy(sr->bucket, d.dims, (size_t)s->n_dyn * sizeof(int64_t));
    }
out:
    /* A step function may change the current device; a graph launch cannot. */
    if (plain_launch)
        cgr__device_undo(s->rt, prev);
    else
        cgr__device_leave(prev);
    return st;
}

/*
 * Submits the acquired slot and commits it, or gives it back on failure.
 * fn is the public call: what its messages, and the step's capture_error,
 * lead with.
 */
static cgr_status launch_acquired(cgr_step *s, uint64_t ticket, const char *fn)
{
    s->api_fn = fn;
    cgr_status st = submit(s, cgr__ring_slot(&s->ring, ticket));
    if (st != CGR_STATUS_OK) {
        cgr__error_lead(fn);
        /* A run launched ahead must not hold the stream for a slot given back. */
        cgr__arm_drop(s);
        cgr__ring_cancel(&s->ring);
        return st;
    }
    /* The slot was acquired under this same lock, for this ticket. */
    cgr__ring_commit(&s->ring, ticket);
    return CGR_STATUS_OK;
}

/* ---- checks ------------------------------------------------------------------------- */

/* The run's dims: NULL for a fixed-shape step, else each in 1..its max. */
static cgr_status check_dims(const cgr_step *s, const int64_t *dims, const char *fn)
{
    if (!s->n_dyn)
        return CGR_STATUS_OK;
    if (!dims)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: step '%s' has %d dynamic dims; pass their true values in dims", fn,
                        s->name, s->n_dyn);
    for (int j = 0; j < s->n_dyn; j++) {
        const int64_t max = s->shapes->policy[j].max;
        if (dims[j] < 1 || dims[j] > max)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s: dims[%d] (\"%s\") is %lld, must be 1..%lld", fn, j,
                            s->shapes->dim_name[j], (long long)dims[j], (long long)max);
    }
    return CGR_STATUS_OK;
}

/* Hands out the step's next slot for a run at `dims` (checked); rt->lock held. */
static cgr_status acquire(cgr_step *s, const int64_t *dims, uint64_t *ticket, uint32_t *slot,
                          const char *fn)
{
    cgr_status st = cgr__ring_acquire(&s->ring, ticket, slot);
    if (st == CGR_STATUS_BUSY)
        return CGR_FAIL(st,
                        "%s: all %u staging slots of step '%s' hold results not waited for; "
                        "call cgr_step_wait() on run %llu first",
                        fn, s->ring.slots, s->name,
                        (unsigned long long)(s->ring.launched - s->ring.slots));
    /*
     * Held by another thread: it is about to launch, so this is "try
     * again" (BUSY), not a misuse by the caller. Held by this thread: the
     * caller forgot its own cgr_step_launch.
     */
    if (st == CGR_STATUS_WRONG_STATE && s->ring.acquired &&
        !pthread_equal(s->acquirer, pthread_self()))
        return CGR_FAIL(CGR_STATUS_BUSY,
                        "%s: another thread holds an acquired slot of step '%s' and has not "
                        "launched it yet",
                        fn, s->name);
    if (st == CGR_STATUS_WRONG_STATE)
        return CGR_FAIL(st, "%s: a slot of step '%s' is acquired and not launched yet", fn,
                        s->name);
    CGR_TRY(st);
    s->acquirer = pthread_self();
    if (s->n_dyn)
        memcpy(s->run_dims, dims, (size_t)s->n_dyn * sizeof dims[0]);
    return CGR_STATUS_OK;
}

/*
 * Checks s and slot for `fn` and takes rt->lock, which it keeps only when
 * `slot` is the slot this thread acquired.
 */
static cgr_status lock_acquired(cgr_step *s, const cgr_slot *slot, const char *fn)
{
    CGR_TRY(cgr__check_step(s, fn));
    if (!slot)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: slot is NULL", fn);
    CGR_TRY(cgr__lock(s->rt, fn));
    cgr_status st = CGR_STATUS_OK;
    if (!s->ring.acquired)
        st = CGR_FAIL(CGR_STATUS_WRONG_STATE, "%s: no slot of step '%s' is acquired", fn,
                      s->name);
    else if (!pthread_equal(s->acquirer, pthread_self()))
        /* The acquiring thread may still be writing the inputs. */
        st = CGR_FAIL(CGR_STATUS_WRONG_STATE,
                      "%s: the acquired slot of step '%s' belongs to another thread; "
                      "acquire and launch on the same thread",
                      fn, s->name);
    else if (slot->ticket != s->ring.launched)
        st = CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                      "%s: slot is for run %llu, the acquired one is run %llu", fn,
                      (unsigned long long)slot->ticket, (unsigned long long)s->ring.launched);
    if (st != CGR_STATUS_OK)
        cgr__unlock(s->rt);
    return st;
}

/* ---- arming --------------------------------------------------------------------------- */

/*
 * Launches the acquired slot's run ahead when its shape replays a gated
 * graph (capture/gate.c): the graph's input kernel then waits at the slot's
 * gate until the launch opens it. Warm-up and capture runs, eager shapes
 * and graphs without a gate are not armed; an armed run is s->armed.
 */
static cgr_status arm_ahead(cgr_step *s, uint32_t slot)
{
    uint32_t i;
    if (cgr__shapes_peek(s->shapes, s->run_dims, &i) != CGR__SHAPES_REPLAY)
        return CGR_STATUS_OK;
    const cgr__shape *e = &s->shapes->entries[i];
    cgr__graph *g = e->payload;
    /* A graph due for its check must be captured again at this run, not launched ahead. */
    if (!g->gated || cgr__graph_check_due(g))
        return CGR_STATUS_OK;
    int prev = 0;
    CGR_TRY(cgr__device_enter(s->rt, &prev));
    cgr_status st = cgr__launch_graph(s, g, slot, 1);
    cgr__device_undo(s->rt, prev);
    CGR_TRY(st);
    s->armed = g;
    memcpy(s->armed_bucket, e->dims, (size_t)s->n_dyn * sizeof e->dims[0]);
    /* The run this slot held last is gone from now on, even if this one is released. */
    const uint64_t t = s->ring.launched;
    if (t >= s->ring.slots && t - s->ring.slots + 1 > s->readable_from)
        s->readable_from = t - s->ring.slots + 1;
    return CGR_STATUS_OK;
}

/* ---- the public calls ------------------------------------------------------------------ */

CGR_API cgr_status cgr_step_acquire(cgr_step *s, const int64_t *dims, unsigned flags,
                                    cgr_slot *out)
{
    static const char fn[] = "cgr_step_acquire";
    CGR_TRY(cgr__check_step(s, fn));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: slot is NULL", fn);
    if (flags & ~(unsigned)CGR_ACQUIRE_ARM)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: unknown flags 0x%x", fn,
                        flags & ~(unsigned)CGR_ACQUIRE_ARM);
    if ((flags & CGR_ACQUIRE_ARM) && !s->armable)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: CGR_ACQUIRE_ARM, but step '%s' was not created with "
                        "cgr_step_desc.armable = 1",
                        fn, s->name);
    CGR_TRY(check_dims(s, dims, fn));
    CGR_TRY(cgr__lock(s->rt, fn));
    uint64_t t = 0;
    uint32_t slot = 0;
    cgr_status st = acquire(s, dims, &t, &slot, fn);
    if (st == CGR_STATUS_OK && (flags & CGR_ACQUIRE_ARM)) {
        st = arm_ahead(s, slot);
        if (st != CGR_STATUS_OK) {
            cgr__ring_cancel(&s->ring);
            cgr__error_lead(fn);
        }
    }
    /* Nothing is armed while no slot is acquired, so this is arm_ahead's doing. */
    const int armed = s->armed != NULL;
    cgr__unlock(s->rt);
    CGR_TRY(st);
    memset(out, 0, sizeof *out);
    out->ticket = t;
    out->armed = armed;
    for (int i = 0; i < s->n_in; i++)
        out->inputs[i] = cgr__slot_host(s, slot) + s->in[i].slot_offset;
    for (int i = 0; i < s->n_out; i++)
        out->outputs[i] = cgr__slot_host(s, slot) + s->out[i].slot_offset;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_write_input(cgr_step *s, const cgr_slot *slot, int index,
                                        size_t offset, const void *src, size_t bytes)
{
    static const char fn[] = "cgr_step_write_input";
    CGR_TRY(cgr__check_step(s, fn));
    if (!slot)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: slot is NULL", fn);
    if (index < 0 || index >= s->n_in)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: input %d of step '%s', which has %d",
                        fn, index, s->name, s->n_in);
    const cgr__tensor *t = &s->in[index];
    if (offset > t->bytes || bytes > t->bytes - offset)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: %zu bytes at offset %zu overrun input %d (\"%s\") of step '%s', "
                        "%zu bytes at its largest shape",
                        fn, bytes, offset, index, t->name, s->name, t->bytes);
    if (bytes && !src)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: src is NULL", fn);
    CGR_TRY(lock_acquired(s, slot, fn));
    cgr__unlock(s->rt);
    /* Only this thread can launch or give back the slot, so the write needs no lock. */
    cgr__host_write(cgr__slot_host(s, cgr__ring_slot(&s->ring, slot->ticket)) + t->slot_offset +
                        offset,
                    src, bytes);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_launch(cgr_step *s, const cgr_slot *slot)
{
    CGR_TRY(lock_acquired(s, slot, "cgr_step_launch"));
    cgr_status st = launch_acquired(s, slot->ticket, "cgr_step_launch");
    cgr__unlock(s->rt);
    return st;
}

CGR_API cgr_status cgr_step_release(cgr_step *s, const cgr_slot *slot)
{
    CGR_TRY(lock_acquired(s, slot, "cgr_step_release"));
    cgr__arm_drop(s);
    cgr__ring_cancel(&s->ring);
    cgr__unlock(s->rt);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_run(cgr_step *s, const int64_t *dims, const void *const *inputs,
                                uint64_t *ticket)
{
    static const char fn[] = "cgr_step_run";
    CGR_TRY(cgr__check_step(s, fn));
    CGR_TRY(check_dims(s, dims, fn));
    if (s->n_in > 0) {
        if (!inputs)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s: inputs is NULL but step '%s' has %d inputs", fn, s->name,
                            s->n_in);
        for (int i = 0; i < s->n_in; i++)
            if (!inputs[i])
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: inputs[%d] (\"%s\") is NULL",
                                fn, i, s->in[i].name);
    }
    uint64_t t;
    uint32_t slot;
    /* One locked section from acquire to commit: no other thread ever sees this slot acquired. */
    CGR_TRY(cgr__lock(s->rt, fn));
    cgr_status st = acquire(s, dims, &t, &slot, fn);
    if (st == CGR_STATUS_OK) {
        unsigned char *host = cgr__slot_host(s, slot);
        for (int i = 0; i < s->n_in; i++)
            cgr__host_write(host + s->in[i].slot_offset, inputs[i],
                            cgr__tensor_bytes_at(&s->in[i], s->run_dims));
        st = launch_acquired(s, t, fn);
    }
    cgr__unlock(s->rt);
    if (st == CGR_STATUS_OK && ticket)
        *ticket = t;
    return st;
}
