/*
 * Eager runs: the warm-up runs of each new shape before its capture, and
 * the runs of shapes that do not replay a graph. The first run of a shape
 * traces its scratch requests and plans them; every later eager run of it
 * already uses the planned addresses, so a warm-up also proves the plan on
 * real work before a graph bakes it in.
 */
#include <stdio.h>

#include "capture.h"
#include "trace.h"

void cgr__plan_reset(cgr__shape_plan *p)
{
    cgr__trace_reset(&p->trace);
    p->planned = 0;
    p->unbacked[0] = '\0';
    p->philox_per_run = 0;
    p->philox_known = 0;
}

/*
 * Plans the trace of a shape's first run and backs it with arena memory,
 * once the stream has drained the run's frees to the tracing pool.
 */
static cgr_status plan_trace(cgr_step *s, cgr__shape_plan *p)
{
    cgr_runtime *rt = s->rt;
    size_t peak = 0, lower = 0;
    /*
     * The tracing pool's memory is only needed for that first run: give it
     * back to the device. Before the arena grows, not after: growing may
     * fail for want of exactly that memory, and a failed growth must not
     * leave the pool holding it.
     */
    CGR_CUDA_TRY(cudaMemPoolTrimTo(rt->trace_pool, 0));
    cgr_status st = cgr__plan(p->trace.bufs, p->trace.n, CGR__ALIGN, &peak, &lower);
    if (st == CGR_STATUS_OUT_OF_MEMORY)
        return CGR_FAIL(st, "step '%s': planning %zu scratch requests: host allocation", s->name,
                        p->trace.n);
    /* The trace is closed (every interval ended) and CGR__ALIGN is a power of two. */
    if (st != CGR_STATUS_OK)
        return CGR_BUG("step '%s': the planner refused the closed trace of %zu requests (%s)",
                       s->name, p->trace.n, cgr_status_name(st));
    /* Every shape is laid out from the arena's base: the arena only grows to the largest plan. */
    CGR_TRY(cgr__arena_ensure(&rt->arena, peak));
    p->planned = 1;
    s->stats.scratch_requests = p->trace.n;
    s->stats.scratch_lower_bound = lower;
    if (peak > s->stats.scratch_peak)
        s->stats.scratch_peak = peak; /* the largest plan among its shapes */
    cgr__log(rt, CGR_LOG_DEBUG, "step '%s': %zu scratch requests planned into %zu bytes "
             "(lower bound %zu), arena %zu bytes", s->name, p->trace.n, peak, lower,
             rt->arena.mapped);
    return CGR_STATUS_OK;
}

cgr_status cgr__run_eager(cgr_step *s, uint32_t slot, cgr__shape_plan *p)
{
    cgr_runtime *rt = s->rt;
    unsigned char *host = cgr__slot_host(s, slot);
    int tracing = !p->planned;
    cgr_status st = CGR_STATUS_OK;
    /*
     * A tracing run synchronizes the stream when it plans (plan_trace),
     * which lets every armed run through. Do that first instead: before
     * it, the run's own calls (the input copies, scratch from the tracing
     * pool, the step function's) may block behind an armed run, as they
     * do under compute-sanitizer's initcheck, until its arm_timeout_us.
     */
    if (tracing)
        cgr__arm_drop_all(rt);
    cgr__range_push(tracing ? "cgr warm-up (tracing)" : "cgr eager run");
    for (int i = 0; i < s->n_in; i++)
        CGR_CUDA_TRY_GOTO(cudaMemcpyAsync(s->in[i].dev, host + s->in[i].slot_offset,
                                          s->in[i].cur_bytes, cudaMemcpyHostToDevice, rt->stream),
                          st, out);
    if (s->n_dyn)
        CGR_CUDA_TRY_GOTO(cudaMemcpyAsync(s->dims_dev, host + CGR__SLOT_DIMS_OFFSET,
                                          (size_t)s->n_dyn * sizeof(int64_t),
                                          cudaMemcpyHostToDevice, rt->stream),
                          st, out);
    st = cgr__call_step(s, tracing ? CGR__CTX_TRACE : CGR__CTX_PLANNED, p);
    if (st != CGR_STATUS_OK) {
        if (tracing) {
            /*
             * The next run traces again from scratch. Do not keep this run's
             * pool memory meanwhile (after an out-of-memory error least of
             * all). The run's own error is the one reported, so this cleanup
             * neither fails nor touches the message.
             */
            if (cgr__sync_stream(rt) == cudaSuccess)
                (void)cudaMemPoolTrimTo(rt->trace_pool, 0);
            (void)cudaGetLastError();
        }
        goto out;
    }
    if (tracing && !p->unbacked[0]) {
        /* A stream that failed has no trustworthy outputs: the run fails. */
        cudaError_t e = cgr__sync_stream(rt);
        if (e != cudaSuccess) {
            st = cgr__cuda_fail((int)e, "cudaStreamSynchronize");
            goto out;
        }
        /*
         * The step's work has run, on memory from the tracing pool. A plan
         * the arena cannot back (ARENA_LIMIT, out of memory, a mapping the
         * driver refused) does not undo it: the run completes as it is, so
         * that a caller is never told that work which ran did not, and the
         * shape is left unplanned, the reason kept for its capture run to
         * fail with. Its later runs take scratch from the tracing pool
         * without planning, so they neither synchronize the stream nor try
         * the arena again.
         */
        if (plan_trace(s, p) != CGR_STATUS_OK)
            snprintf(p->unbacked, sizeof p->unbacked, "%s", cgr_last_error());
    }
    for (int i = 0; i < s->n_out; i++)
        CGR_CUDA_TRY_GOTO(cudaMemcpyAsync(host + s->out[i].slot_offset, s->out[i].dev,
                                          s->out[i].cur_bytes, cudaMemcpyDeviceToHost, rt->stream),
                          st, out);
    CGR_CUDA_TRY_GOTO(cudaEventRecord(s->done[slot], rt->stream), st, out);
    s->sig_kind[slot] = CGR__SIG_EAGER;
out:
    cgr__range_pop();
    return st;
}
