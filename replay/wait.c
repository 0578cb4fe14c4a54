/*
 * Waiting for runs and reading their outputs.
 *
 * Threads (docs/threading.md): waiting is the one place where cgr lets go
 * of rt->lock while it blocks, so that other threads can launch meanwhile;
 * everything it reads about the run is read under the lock first.
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */
#include <sched.h>
#include <string.h>

#include "replay.h"

/*
 * Waits for the last run on `slot`, by how that run signals (CGR__SIG_*).
 *
 * A graph run with staging kernels publishes a sequence number into the
 * slot's flag word as soon as its outputs are visible; the host sees that
 * sooner than the graph's end would reach an event (docs/benchmarks.md,
 * "Staging: the completion flag"). The wait spins on the word for up to
 * cgr_options.advanced.wait_spin_us, then blocks on the step's graph_done event,
 * which also reports a failed run instead of spinning forever on a flag
 * that will never come. Every graph of the step records it as its last
 * node (capture/capture.c), so it tells of this run only while no later graph
 * run of the step was launched (`latest`); otherwise blocking on it would
 * also wait for the later run, and the wait polls the flag between yields
 * of the CPU, asking the event only whether the stream failed. A graph without
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
    if (kind != CGR__SIG_FLAG) {
        cudaEvent_t done = kind == CGR__SIG_EAGER ? s->done[slot] : s->graph_done;
        CGR_CUDA_TRY(cudaEventSynchronize(done));
        return CGR_STATUS_OK;
    }
    const uint64_t *flag = (const uint64_t *)cgr__slot_host(s, slot);
    double spin_us = (double)s->rt->opt.advanced.wait_spin_us, start = 0.0;
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
        cudaError_t e =
            latest ? cudaEventSynchronize(s->graph_done) : cudaEventQuery(s->graph_done);
        if (__atomic_load_n(flag, __ATOMIC_ACQUIRE) >= want)
            return CGR_STATUS_OK;
        if (e == cudaSuccess)
            /* Every graph run of the step launched so far has ended, this one too. */
            return CGR_FAIL(CGR_STATUS_INTERNAL,
                            "step '%s': a run on slot %u finished without publishing its "
                            "outputs (a bug in cgr's staging; please report it)",
                            s->name, slot);
        if (e != cudaErrorNotReady)
            return cgr__cuda_fail((int)e, latest ? "cudaEventSynchronize" : "cudaEventQuery");
        sched_yield();
    }
}

/*
 * Waits for `ticket`, with rt->lock let go while blocking so that other
 * threads can launch meanwhile. `waiters` keeps the step's events and
 * slots alive (destroy refuses) and postpones its capture until then.
 */
CGR_API cgr_status cgr_step_wait(cgr_step *s, uint64_t ticket)
{
    static const char fn[] = "cgr_step_wait";
    CGR_TRY(cgr__check_step(s, fn));
    cgr_runtime *rt = s->rt;
    CGR_TRY(cgr__lock(rt, fn));
    if (ticket == CGR_TICKET_LAST) {
        if (s->ring.launched == 0) {
            cgr__unlock(rt);
            return CGR_STATUS_OK;
        }
        ticket = s->ring.launched - 1;
    }
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
    if (st != CGR_STATUS_OK)
        cgr__error_lead(fn);
    /* Cannot fail: this thread held no lock after the unlock above. */
    (void)cgr__lock(rt, fn);
    s->waiters--;
    if (st == CGR_STATUS_OK && ticket >= s->ring.waited) {
        uint64_t from = s->ring.waited;
        cgr__ring_mark_waited(&s->ring, ticket);
        cgr__outputs_compact(s, from, ticket);
    }
    cgr__unlock(rt);
    return st;
}

/* Where output `index` of waited run `ticket` is; rt->lock held. */
static cgr_status output_at(cgr_step *s, uint64_t ticket, int index, const char *fn,
                            const unsigned char **data, size_t *bytes)
{
    if (index < 0 || index >= s->n_out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: index %d, step '%s' has %d outputs", fn,
                        index, s->name, s->n_out);
    cgr_status st = cgr__ring_check_output(&s->ring, ticket);
    if (st == CGR_STATUS_OK && ticket < s->readable_from)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: run %llu of step '%s' cannot be read: an armed run "
                        "(CGR_ACQUIRE_ARM) was launched on its slot since",
                        fn, (unsigned long long)ticket, s->name);
    if (st == CGR_STATUS_WRONG_STATE)
        return CGR_FAIL(st, "%s: run %llu of step '%s' was not waited for", fn,
                        (unsigned long long)ticket, s->name);
    if (st != CGR_STATUS_OK)
        return CGR_FAIL(st,
                        "%s: run %llu of step '%s' was never launched or its slot was reused by "
                        "a later run",
                        fn, (unsigned long long)ticket, s->name);
    /* The wait that retired the run packed it, and the slot still holds it. */
    uint32_t slot = cgr__ring_slot(&s->ring, ticket);
    *data = cgr__slot_host(s, slot) + s->out[index].slot_offset;
    *bytes = cgr__tensor_bytes_at(&s->out[index], s->slot_run[slot].true_dims);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_output(cgr_step *s, uint64_t ticket, int index, void *dst,
                                   size_t capacity, size_t *bytes)
{
    static const char fn[] = "cgr_step_output";
    CGR_TRY(cgr__check_step(s, fn));
    if (!dst && capacity)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: dst is NULL but capacity is %zu", fn,
                        capacity);
    const unsigned char *p = NULL;
    size_t n = 0;
    CGR_TRY(cgr__lock(s->rt, fn));
    cgr_status st = output_at(s, ticket, index, fn, &p, &n);
    if (st == CGR_STATUS_OK && dst && capacity < n)
        st = CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                      "%s: output %d of step '%s' has %zu bytes, dst holds %zu", fn, index,
                      s->name, n, capacity);
    /*
     * Copying under the lock is the point: no thread can launch the run
     * that reuses this slot until the copy is done, so the bytes are this
     * run's, all of them.
     */
    if (st == CGR_STATUS_OK && dst)
        memcpy(dst, p, n);
    cgr__unlock(s->rt);
    if (st == CGR_STATUS_OK && bytes)
        *bytes = n;
    return st;
}
