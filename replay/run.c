/*
 * Running a step: slot handling, the warm-up -> capture -> replay state
 * machine, waiting and reading outputs.
 *
 * The replay path is kept to what cannot be avoided: a handle check, the
 * runtime lock, the ring check, the device check and one cudaGraphLaunch.
 * The graph itself publishes its completion (a flag word, an event record
 * node), so no second API call is needed.
 *
 * Threads (docs/threading.md): every entry point here holds rt->lock while
 * it reads or changes step state, and submitting holds it throughout, so a
 * capture on the runtime's stream never sees another thread's launch.
 * Only waiting lets go of the lock while it blocks.
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include <sched.h>
#include <string.h>

#include "host_write.h"
#include "internal.h"

/* Submits the acquired slot and commits or cancels it. */
static cgr_status launch_acquired(cgr_step *s, uint64_t ticket, const int64_t *dims)
{
    uint32_t slot = cgr__ring_slot(&s->ring, ticket);
    cgr_status st = cgr__dispatch(s, slot, dims);
    if (st != CGR_STATUS_OK) {
        /* A run launched ahead must not hold the stream for a slot given back. */
        cgr__arm_drop(s);
        cgr__ring_cancel(&s->ring);
        return st;
    }
    s->stats.runs++;
    return cgr__ring_commit(&s->ring, ticket);
}

cgr_status cgr__step_acquire(cgr_step *s, uint64_t *ticket, uint32_t *slot, const char *fn)
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
    return st;
}

cgr_status cgr__check_dims(const cgr_step *s, const int64_t *dims, int given, const char *fn)
{
    if (!given) {
        if (s->n_dyn)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s: step '%s' has %d dynamic dims; run it with %s_dims()", fn,
                            s->name, s->n_dyn, fn);
        return CGR_STATUS_OK;
    }
    if (s->n_dyn && !dims)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s_dims: dims is NULL but step '%s' has "
                        "%d dynamic dims", fn, s->name, s->n_dyn);
    for (int j = 0; j < s->n_dyn; j++)
        if (dims[j] < 1 || dims[j] > s->dyn_max[j])
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s_dims: dims[%d] (\"%s\") is %lld, must be 1..%lld", fn, j,
                            s->dyn_name[j], (long long)dims[j], (long long)s->dyn_max[j]);
    return CGR_STATUS_OK;
}

static cgr_status run_inputs(cgr_step *s, const int64_t *dims, int given,
                             const void *const *inputs, uint64_t *ticket, const char *fn)
{
    CGR_TRY(cgr__check_step(s, fn));
    CGR_TRY(cgr__check_dims(s, dims, given, fn));
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
    cgr_status st = cgr__step_acquire(s, &t, &slot, fn);
    if (st == CGR_STATUS_OK) {
        unsigned char *host = cgr__slot_host(s, slot);
        for (int i = 0; i < s->n_in; i++)
            cgr__host_write(host + s->in[i].slot_offset, inputs[i],
                            cgr__tensor_bytes_at(&s->in[i], dims));
        st = launch_acquired(s, t, dims);
    }
    cgr__unlock(s->rt);
    if (st == CGR_STATUS_OK && ticket)
        *ticket = t;
    return st;
}

CGR_API cgr_status cgr_step_run(cgr_step *s, const void *const *inputs, uint64_t *ticket)
{
    return run_inputs(s, NULL, 0, inputs, ticket, "cgr_step_run");
}

CGR_API cgr_status cgr_step_run_dims(cgr_step *s, const int64_t *dims, const void *const *inputs,
                                     uint64_t *ticket)
{
    return run_inputs(s, dims, 1, inputs, ticket, "cgr_step_run");
}

CGR_API cgr_status cgr_step_acquire(cgr_step *s, cgr_slot *out)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_acquire"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_acquire: slot is NULL");
    uint64_t t;
    uint32_t slot;
    CGR_TRY(cgr__lock(s->rt, "cgr_step_acquire"));
    cgr_status st = cgr__step_acquire(s, &t, &slot, "cgr_step_acquire");
    if (st == CGR_STATUS_OK)
        s->acquirer = pthread_self();
    cgr__unlock(s->rt);
    CGR_TRY(st);
    cgr__slot_fill(s, t, 0, out);
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
    CGR_TRY(cgr__lock(s->rt, fn));
    cgr_status st = cgr__check_acquired(s, slot, fn);
    cgr__unlock(s->rt);
    CGR_TRY(st);
    /* Only this thread can launch or give back the slot, so the write needs no lock. */
    cgr__host_write(cgr__slot_host(s, cgr__ring_slot(&s->ring, slot->ticket)) + t->slot_offset +
                        offset,
                    src, bytes);
    return CGR_STATUS_OK;
}

void cgr__slot_fill(const cgr_step *s, uint64_t ticket, int armed, cgr_slot *out)
{
    memset(out, 0, sizeof *out);
    out->ticket = ticket;
    out->armed = armed;
    unsigned char *host = cgr__slot_host(s, cgr__ring_slot(&s->ring, ticket));
    for (int i = 0; i < s->n_in; i++)
        out->inputs[i] = host + s->in[i].slot_offset;
}

cgr_status cgr__check_acquired(const cgr_step *s, const cgr_slot *slot, const char *fn)
{
    if (!s->ring.acquired)
        return CGR_FAIL(CGR_STATUS_WRONG_STATE, "%s: no slot of step '%s' is acquired", fn,
                        s->name);
    if (!pthread_equal(s->acquirer, pthread_self()))
        /* The acquiring thread may still be writing the inputs. */
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "%s: the acquired slot of step '%s' belongs to another thread; "
                        "acquire and launch on the same thread",
                        fn, s->name);
    if (slot->ticket != s->ring.launched)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: slot is for run %llu, the acquired one is run %llu", fn,
                        (unsigned long long)slot->ticket, (unsigned long long)s->ring.launched);
    return CGR_STATUS_OK;
}

static cgr_status launch_slot(cgr_step *s, const cgr_slot *slot, const int64_t *dims, int given)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_launch"));
    if (!slot)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_launch: slot is NULL");
    CGR_TRY(cgr__check_dims(s, dims, given, "cgr_step_launch"));
    CGR_TRY(cgr__lock(s->rt, "cgr_step_launch"));
    cgr_status st = cgr__check_acquired(s, slot, "cgr_step_launch");
    if (st == CGR_STATUS_OK)
        st = launch_acquired(s, slot->ticket, dims);
    cgr__unlock(s->rt);
    return st;
}

CGR_API cgr_status cgr_step_launch(cgr_step *s, const cgr_slot *slot)
{
    return launch_slot(s, slot, NULL, 0);
}

CGR_API cgr_status cgr_step_launch_dims(cgr_step *s, const cgr_slot *slot, const int64_t *dims)
{
    return launch_slot(s, slot, dims, 1);
}

/*
 * Waits for the last run on `slot`, by how that run signals (CGR__SIG_*).
 *
 * A graph run with staging kernels publishes a sequence number into the
 * slot's flag word as soon as its outputs are visible; the host sees that
 * a few microseconds before the graph's end would reach an event
 * (measured in docs/staging.md). The wait spins on the word for up to
 * cgr_options.wait_spin_us, then blocks on the step's graph_done event,
 * which also reports a failed run instead of spinning forever on a flag
 * that will never come. Every graph of the step records graph_done, so
 * it tells of this run only while no later graph run of the step was
 * launched (`latest`); otherwise blocking on it would also wait for the
 * later run, and the wait polls the flag between yields of the CPU,
 * asking the event only whether the stream failed. A graph without
 * staging kernels has no flag and is waited for on graph_done, which
 * then may also wait for a later graph run of the step; an eager run on
 * its slot's own event.
 *
 * Runs without rt->lock, on what the caller read under it: how the run
 * signals (kind), which value (want) and whether it was the latest. If
 * other threads meanwhile retire this run and launch a later one on the
 * slot, the flag only grows and the events' new records complete later,
 * so the wait can only last longer, never end before this run has.
 */
static cgr_status wait_slot(cgr_step *s, uint32_t slot, int kind, uint64_t want, int latest)
{
    if (kind == CGR__SIG_EAGER) {
        CGR_CUDA_TRY(cudaEventSynchronize(s->done[slot]));
        return CGR_STATUS_OK;
    }
    if (kind == CGR__SIG_GRAPH) {
        CGR_CUDA_TRY(cudaEventSynchronize(s->graph_done));
        return CGR_STATUS_OK;
    }
    const uint64_t *flag = (const uint64_t *)cgr__slot_host(s, slot);
    double spin_us = (double)s->rt->opt.wait_spin_us, start = 0.0;
    for (unsigned i = 1; spin_us > 0.0; i++) {
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
    for (;;) {
        cudaError_t e = latest ? cudaEventSynchronize(s->graph_done) : cudaEventQuery(s->graph_done);
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) >= want)
            return CGR_STATUS_OK;
        if (e == cudaSuccess)
            /* Every graph run of the step launched so far has ended, this one too. */
            return CGR_FAIL(CGR_STATUS_CUDA_ERROR,
                            "step '%s': a run on slot %u finished without publishing its outputs",
                            s->name, slot);
        if (e != cudaErrorNotReady)
            return cgr__cuda_fail((int)e, latest ? "cudaEventSynchronize" : "cudaEventQuery",
                                  __FILE__, __LINE__);
        sched_yield();
    }
}

/*
 * Waits for `ticket`, with rt->lock let go while blocking so that other
 * threads can launch meanwhile. `waiters` keeps the step's events and
 * slots alive (destroy refuses) and postpones its capture until then.
 */
static cgr_status wait_ticket(cgr_step *s, uint64_t ticket, const char *fn)
{
    cgr_runtime *rt = s->rt;
    CGR_TRY(cgr__lock(rt, fn));
    if (cgr__ring_check_wait(&s->ring, ticket) != CGR_STATUS_OK) {
        uint64_t launched = s->ring.launched;
        cgr__unlock(rt);
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: run %llu of step '%s' was never launched (%llu so far)", fn,
                        (unsigned long long)ticket, s->name, (unsigned long long)launched);
    }
    if (ticket < s->ring.waited) {
        cgr__unlock(rt);
        return CGR_STATUS_OK;
    }
    /* waited <= ticket < launched, so the slot's last run is this ticket's. */
    uint32_t slot = cgr__ring_slot(&s->ring, ticket);
    int kind = s->sig_kind[slot];
    uint64_t want = s->sig_expect[slot];
    int latest = s->sig_graph[slot] == s->graph_runs;
    s->waiters++;
    cgr__unlock(rt);
    cgr_status st = wait_slot(s, slot, kind, want, latest);
    /* Cannot fail: this thread held no lock after the unlock above. */
    (void)cgr__lock(rt, fn);
    s->waiters--;
    if (st == CGR_STATUS_OK)
        cgr__ring_mark_waited(&s->ring, ticket);
    cgr__unlock(rt);
    return st;
}

CGR_API cgr_status cgr_step_wait(cgr_step *s, uint64_t ticket)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_wait"));
    return wait_ticket(s, ticket, "cgr_step_wait");
}

CGR_API cgr_status cgr_step_sync(cgr_step *s)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_sync"));
    CGR_TRY(cgr__lock(s->rt, "cgr_step_sync"));
    uint64_t launched = s->ring.launched;
    cgr__unlock(s->rt);
    if (launched == 0)
        return CGR_STATUS_OK;
    return wait_ticket(s, launched - 1, "cgr_step_sync");
}

/* Where output `index` of waited run `ticket` is; rt->lock held. */
static cgr_status output_at(cgr_step *s, uint64_t ticket, int index, const char *fn,
                            const unsigned char **data, size_t *bytes)
{
    if (index < 0 || index >= s->n_out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: index %d, step '%s' has %d outputs", fn,
                        index, s->name, s->n_out);
    cgr_status st = cgr__ring_check_output(&s->ring, ticket);
    if (st == CGR_STATUS_WRONG_STATE)
        return CGR_FAIL(st, "%s: run %llu of step '%s' was not waited for", fn,
                        (unsigned long long)ticket, s->name);
    if (st != CGR_STATUS_OK)
        return CGR_FAIL(st,
                        "%s: run %llu of step '%s' was never launched or its slot was reused by "
                        "a later run",
                        fn, (unsigned long long)ticket, s->name);
    uint32_t slot = cgr__ring_slot(&s->ring, ticket);
    cgr__outputs_compact(s, slot, ticket);
    *data = cgr__slot_host(s, slot) + s->out[index].slot_offset;
    *bytes = cgr__output_bytes(s, slot, index);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_output(cgr_step *s, uint64_t ticket, int index, const void **data,
                                   size_t *bytes)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_output"));
    if (!data)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_output: data is NULL");
    const unsigned char *p = NULL;
    size_t n = 0;
    CGR_TRY(cgr__lock(s->rt, "cgr_step_output"));
    cgr_status st = output_at(s, ticket, index, "cgr_step_output", &p, &n);
    cgr__unlock(s->rt);
    CGR_TRY(st);
    *data = p;
    if (bytes)
        *bytes = n;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_copy_output(cgr_step *s, uint64_t ticket, int index, void *dst,
                                        size_t capacity)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_copy_output"));
    if (!dst)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_copy_output: dst is NULL");
    const unsigned char *p = NULL;
    size_t n = 0;
    CGR_TRY(cgr__lock(s->rt, "cgr_step_copy_output"));
    cgr_status st = output_at(s, ticket, index, "cgr_step_copy_output", &p, &n);
    if (st == CGR_STATUS_OK && capacity < n)
        st = CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                      "cgr_step_copy_output: output %d of step '%s' has %zu bytes, dst holds %zu",
                      index, s->name, n, capacity);
    /*
     * Copying under the lock is the point: no thread can launch the run
     * that reuses this slot until the copy is done, so the bytes are this
     * run's, all of them.
     */
    if (st == CGR_STATUS_OK)
        memcpy(dst, p, n);
    cgr__unlock(s->rt);
    return st;
}
