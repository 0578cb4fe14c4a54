/*
 * The step context: accessors, scratch requests and the call into the
 * user's step function.
 *
 * Scratch follows the trace/plan/replay scheme of planner.h. The first
 * warm-up serves requests from a private stream-ordered memory pool and
 * records them; later runs must make the same requests in the same order
 * and get arena addresses from the plan. Checking each request against the
 * trace (size and position on the alloc/free clock) is what makes it safe
 * to bake those addresses into a graph: a step that asks for something
 * else is stopped with CGR_STATUS_TRACE_MISMATCH before it gets a pointer.
 */
#include <string.h>

#include "fault.h"
#include "capture.h"

CGR_API cgr_status cgr_ctx_stream(const cgr_ctx *c, cgr_stream *out)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_stream"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_stream: out is NULL");
    *out = c->rt->stream;
    return CGR_STATUS_OK;
}

/* Tensor `index` of the step's inputs (out_side 0) or outputs (1), for `fn`, which writes *out. */
static cgr_status tensor_at(const cgr_ctx *c, const char *fn, int out_side, int index,
                            const void *out, const cgr__tensor **t)
{
    CGR_TRY(cgr__check_ctx(c, fn));
    if (out_side != 0 && out_side != 1)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: output is %d, must be 0 (an input) or "
                        "1 (an output)", fn, out_side);
    int n = out_side ? c->step->n_out : c->step->n_in;
    if (index < 0 || index >= n)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: index %d, step '%s' has %d %s", fn,
                        index, c->step->name, n, out_side ? "outputs" : "inputs");
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *t = out_side ? &c->step->out[index] : &c->step->in[index];
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_input(const cgr_ctx *c, int index, void **out)
{
    const cgr__tensor *t = NULL;
    if (out)
        *out = NULL; /* what every refusal leaves (docs/errors.md) */
    CGR_TRY(tensor_at(c, "cgr_ctx_input", 0, index, out, &t));
    *out = t->dev;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_output(const cgr_ctx *c, int index, void **out)
{
    const cgr__tensor *t = NULL;
    if (out)
        *out = NULL;
    CGR_TRY(tensor_at(c, "cgr_ctx_output", 1, index, out, &t));
    *out = t->dev;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_desc(const cgr_ctx *c, int output, int index,
                                const cgr_tensor_desc **out)
{
    const cgr__tensor *t = NULL;
    CGR_TRY(tensor_at(c, "cgr_ctx_desc", output, index, out, &t));
    *out = &t->cur;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_dim(const cgr_ctx *c, int index, int64_t *bucket,
                               int64_t *true_value, const int64_t **dev)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_dim"));
    const cgr_step *s = c->step;
    if (index < 0 || index >= s->n_dyn)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_dim: index %d, step '%s' has %d "
                        "dynamic dims", index, s->name, s->n_dyn);
    if (bucket)
        *bucket = s->cur_bucket[index];
    if (true_value)
        *true_value = s->run_dims[index];
    if (dev)
        *dev = s->dims_dev + index;
    return CGR_STATUS_OK;
}

CGR_API int cgr_ctx_is_capturing(const cgr_ctx *c)
{
    return c && c->magic == CGR__MAGIC_CTX && c->mode == CGR__CTX_CAPTURE;
}

/* Marks the run failed; later scratch calls keep failing with the same status. */
cgr_status cgr__ctx_fail(cgr_ctx *c, cgr_status s)
{
    if (c->error == CGR_STATUS_OK)
        c->error = s;
    return s;
}

/* The trace counts alloc and free events in 32 bits; a run past that cannot be planned. */
static cgr_status clock_full(cgr_ctx *c, const char *fn)
{
    return cgr__ctx_fail(c, CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                 "%s: step '%s' made more scratch requests and frees in one run "
                                 "than the trace counts (about 4 billion)",
                                 fn, c->step->name));
}

static cgr_status trace_alloc(cgr_ctx *c, size_t bytes, void **out)
{
    cgr__shape_plan *s = c->plan;
    size_t id;
    void *ptr = NULL;
    cudaError_t e = CGR__FAULT(CGR__FAULT_DEVICE_ALLOC)
                        ? cudaErrorMemoryAllocation
                        : cudaMallocFromPoolAsync(&ptr, bytes, c->rt->trace_pool, c->rt->stream);
    if (e != cudaSuccess)
        return cgr__ctx_fail(c, cgr__cuda_fail((int)e, "cudaMallocFromPoolAsync"));
    cgr_status st = cgr__trace_alloc(&s->trace, bytes, &id);
    if (st != CGR_STATUS_OK) {
        (void)cudaFreeAsync(ptr, c->rt->stream);
        /* bytes >= 1 was checked above, so only the table or the clock can refuse. */
        if (st == CGR_STATUS_OUT_OF_MEMORY)
            return cgr__ctx_fail(c, CGR_FAIL(st, "step '%s': scratch trace table", c->step->name));
        return clock_full(c, "cgr_ctx_alloc");
    }
    s->trace.bufs[id].ptr = ptr;
    *out = ptr;
    return CGR_STATUS_OK;
}

static cgr_status planned_alloc(cgr_ctx *c, size_t bytes, void **out)
{
    const cgr__trace *t = &c->plan->trace;
    size_t i = c->next;
    if (i >= t->n)
        return cgr__ctx_fail(c, CGR_FAIL(CGR_STATUS_TRACE_MISMATCH,
                                     "step '%s': scratch request #%zu (%zu bytes) was not made "
                                     "in warm-up, which made %zu; a step must make the same "
                                     "requests on every run",
                                     c->step->name, i, bytes, t->n));
    if (t->bufs[i].size != bytes || t->bufs[i].start != c->clock)
        return cgr__ctx_fail(c, CGR_FAIL(CGR_STATUS_TRACE_MISMATCH,
                                     "step '%s': scratch request #%zu is %zu bytes at event %u, "
                                     "warm-up asked %zu bytes at event %u",
                                     c->step->name, i, bytes, c->clock, t->bufs[i].size,
                                     t->bufs[i].start));
    if (c->mode == CGR__CTX_CAPTURE && CGR__FAULT(CGR__FAULT_CAPTURE_INVALIDATE)) {
        /*
         * Test builds only: invalidate the capture the way an illegal call
         * hidden in the step would (a host synchronization of the captured
         * stream), and drop that call's own error, so that the rest of the
         * step meets an invalidated capture, as it would in real life.
         */
        (void)cudaStreamSynchronize(c->rt->stream);
        (void)cudaGetLastError();
    }
    *out = (void *)(c->rt->arena.base + t->bufs[i].offset);
    c->next++;
    c->clock++;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_alloc(cgr_ctx *c, size_t bytes, void **out)
{
    if (out)
        *out = NULL; /* what every refusal leaves (docs/errors.md) */
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_alloc"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_alloc: out is NULL");
    if (bytes == 0 || bytes > ((size_t)1 << 40))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_alloc: %zu bytes (must be 1..1 TiB)",
                        bytes);
    if (c->error != CGR_STATUS_OK)
        return CGR_FAIL(c->error, "cgr_ctx_alloc: an earlier scratch request of this run failed");
    return c->mode == CGR__CTX_TRACE ? trace_alloc(c, bytes, out) : planned_alloc(c, bytes, out);
}

CGR_API cgr_status cgr_ctx_free(cgr_ctx *c, void *ptr)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_free"));
    if (!ptr)
        return CGR_STATUS_OK;
    if (c->error != CGR_STATUS_OK)
        return CGR_FAIL(c->error, "cgr_ctx_free: an earlier scratch request of this run failed");
    cgr_step *s = c->step;
    cgr__trace *t = &c->plan->trace;
    if (c->mode == CGR__CTX_TRACE) {
        for (size_t i = 0; i < t->n; i++) {
            if (t->bufs[i].ptr == ptr && t->bufs[i].end == UINT32_MAX) {
                /* i is live, so only the full clock can refuse the free. */
                if (cgr__trace_free(t, i) != CGR_STATUS_OK)
                    return clock_full(c, "cgr_ctx_free");
                cudaError_t e = cudaFreeAsync(ptr, c->rt->stream);
                if (e != cudaSuccess)
                    return cgr__ctx_fail(c, cgr__cuda_fail((int)e, "cudaFreeAsync"));
                return CGR_STATUS_OK;
            }
        }
    } else {
        /* The live buffer at this address is the one the trace frees now. */
        uintptr_t p = (uintptr_t)ptr;
        for (size_t i = 0; i < c->next; i++) {
            if (c->rt->arena.base + t->bufs[i].offset == p && t->bufs[i].end == c->clock) {
                c->clock++;
                return CGR_STATUS_OK;
            }
        }
        for (size_t i = 0; i < c->next; i++)
            if (c->rt->arena.base + t->bufs[i].offset == p)
                return cgr__ctx_fail(c, CGR_FAIL(CGR_STATUS_TRACE_MISMATCH,
                                             "step '%s': cgr_ctx_free(%p) at event %u does not "
                                             "follow the warm-up order of frees",
                                             s->name, ptr, c->clock));
    }
    return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                    "cgr_ctx_free: %p is not a live scratch buffer of this run", ptr);
}

cgr_status cgr__call_step(cgr_step *s, cgr__ctx_mode mode, cgr__shape_plan *plan)
{
    cgr_ctx c;
    memset(&c, 0, sizeof c);
    c.magic = CGR__MAGIC_CTX;
    c.rt = s->rt;
    c.step = s;
    c.plan = plan;
    c.mode = mode;
    if (mode == CGR__CTX_TRACE)
        cgr__trace_reset(&plan->trace);
    /*
     * Code that launches without a stream, built with nvcc --default-stream
     * per-thread, enqueues on the calling thread's default stream. Forked
     * off cgr's stream before the step and joined back after it, that
     * stream's work is part of every run: captured with the rest, in
     * order, and never left out of a graph to run once at capture time.
     * A stream that gets no work adds no node.
     */
    CGR_CUDA_TRY(cudaEventRecord(s->rt->join, s->rt->stream));
    CGR_CUDA_TRY(cudaStreamWaitEvent(cudaStreamPerThread, s->rt->join, 0));
    /* Whatever the step's own cgr calls report becomes part of our message. */
    cgr__clear_error();
    /* And the CUDA error read after it is the step's own, not one the caller left pending. */
    (void)cudaGetLastError();
    cgr_status fs = s->fn(&c, s->user);
    c.magic = CGR__MAGIC_DEAD;
    /* Read before the join below, whose own error would hide the step's. */
    s->fn_cuda_error = (int)cudaGetLastError();
    /* Joined even after a failure, so that a capture can end. */
    cudaError_t je = cudaEventRecord(s->rt->join, cudaStreamPerThread);
    if (je == cudaSuccess)
        je = cudaStreamWaitEvent(s->rt->stream, s->rt->join, 0);
    if (mode == CGR__CTX_TRACE) {
        /* Releases what the tracing run left allocated; those buffers live to the end. */
        cgr__trace *t = &plan->trace;
        for (size_t i = 0; i < t->n; i++)
            if (t->bufs[i].end == UINT32_MAX)
                (void)cudaFreeAsync(t->bufs[i].ptr, s->rt->stream);
        cgr__trace_close(t);
    }
    if (c.error != CGR_STATUS_OK)
        return c.error; /* the message of the first scratch failure stands */
    if (je != cudaSuccess && fs == CGR_STATUS_OK)
        return cgr__cuda_fail((int)je, "joining the per-thread default stream");
    if (fs != CGR_STATUS_OK) {
        char detail[512];
        strncpy(detail, cgr_last_error(), sizeof detail - 1);
        detail[sizeof detail - 1] = '\0';
        return CGR_FAIL(CGR_STATUS_STEP_FAILED, "step '%s' returned %s%s%s", s->name,
                        cgr_status_name(fs), detail[0] ? " after: " : "", detail);
    }
    /*
     * A launch of the step that failed (a bad launch configuration, say)
     * leaves its error for cudaGetLastError(), which was read above: a run
     * that reported success would have stale outputs. A capture reports it
     * through its own failure instead (capture.c).
     */
    if (mode != CGR__CTX_CAPTURE && s->fn_cuda_error != (int)cudaSuccess)
        return CGR_FAIL(CGR_STATUS_CUDA_ERROR,
                        "step '%s' returned CGR_STATUS_OK, but one of its CUDA calls failed: "
                        "%s (%s); this run's outputs are not valid",
                        s->name, cudaGetErrorName((cudaError_t)s->fn_cuda_error),
                        cudaGetErrorString((cudaError_t)s->fn_cuda_error));
    if (mode != CGR__CTX_TRACE && c.next != plan->trace.n)
        return CGR_FAIL(CGR_STATUS_TRACE_MISMATCH,
                        "step '%s' made %zu scratch requests, warm-up made %zu", s->name, c.next,
                        plan->trace.n);
    return cgr__philox_finish(&c);
}
