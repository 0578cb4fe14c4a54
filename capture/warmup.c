/*
 * Eager runs: the warm-up runs before capture, and the fallback for steps
 * whose capture failed. The first warm-up traces the scratch requests and
 * plans them; every later eager run already uses the planned addresses, so
 * a warm-up also proves the plan on real work before a graph bakes it in.
 */
#include "internal.h"
#include "trace.h"

/* Plans the trace of the first warm-up and backs it with arena memory. */
static cgr_status plan_trace(cgr_step *s)
{
    cgr_runtime *rt = s->rt;
    size_t peak = 0, lower = 0;
    /*
     * The tracing pool's memory is only needed for that first run: once the
     * stream has drained its frees, give it back to the device. Before the
     * arena grows, not after: growing may fail for want of exactly that
     * memory, and a failed growth must not leave the pool holding it.
     */
    CGR_CUDA_TRY(cudaStreamSynchronize(rt->stream));
    CGR_CUDA_TRY(cudaMemPoolTrimTo(rt->trace_pool, 0));
    CGR_TRY(cgr__plan(s->trace.bufs, s->trace.n, CGR__ALIGN, &peak, &lower));
    CGR_TRY(cgr__arena_ensure(&rt->arena, peak));
    s->planned = 1;
    s->stats.scratch_requests = s->trace.n;
    s->stats.scratch_peak = peak;
    s->stats.scratch_lower_bound = lower;
    cgr__log(rt, CGR_LOG_DEBUG, "step '%s': %zu scratch requests planned into %zu bytes "
             "(lower bound %zu), arena %zu bytes", s->name, s->trace.n, peak, lower,
             rt->arena.mapped);
    return CGR_STATUS_OK;
}

static cgr_status run_eager(cgr_step *s, uint32_t slot)
{
    cgr_runtime *rt = s->rt;
    const unsigned char *host = cgr__slot_host(s, slot);
    for (int i = 0; i < s->n_in; i++)
        CGR_CUDA_TRY(cudaMemcpyAsync(s->in[i].dev, host + s->in[i].slot_offset, s->in[i].bytes,
                                     cudaMemcpyHostToDevice, rt->stream));
    int tracing = !s->planned;
    cgr_status st = cgr__call_step(s, tracing ? CGR__CTX_TRACE : CGR__CTX_PLANNED);
    if (st != CGR_STATUS_OK) {
        if (tracing) {
            /*
             * The next run traces again from scratch. Do not keep this run's
             * pool memory meanwhile (after an out-of-memory error least of
             * all). The run's own error is the one reported, so this cleanup
             * neither fails nor touches the message.
             */
            if (cudaStreamSynchronize(rt->stream) == cudaSuccess)
                (void)cudaMemPoolTrimTo(rt->trace_pool, 0);
            (void)cudaGetLastError();
        }
        return st;
    }
    if (tracing)
        CGR_TRY(plan_trace(s));
    unsigned char *out = cgr__slot_host(s, slot);
    for (int i = 0; i < s->n_out; i++)
        CGR_CUDA_TRY(cudaMemcpyAsync(out + s->out[i].slot_offset, s->out[i].dev, s->out[i].bytes,
                                     cudaMemcpyDeviceToHost, rt->stream));
    CGR_CUDA_TRY(cudaEventRecord(s->done[slot], rt->stream));
    return CGR_STATUS_OK;
}

cgr_status cgr__run_eager(cgr_step *s, uint32_t slot)
{
    cgr__range_push(s->planned ? "cgr eager run" : "cgr warm-up (tracing)");
    cgr_status st = run_eager(s, slot);
    cgr__range_pop();
    return st;
}
