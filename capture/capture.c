/*
 * Capture: one step into one CUDA graph, staging included.
 *
 * Invariants that make replay correct:
 * - Capture runs in thread-local mode, so a step that calls something
 *   illegal during capture (cudaMalloc, a host synchronization) fails
 *   loudly instead of being silently left out of the graph, while other
 *   threads of the process stay free to call CUDA.
 * - Every address the graph bakes in is fixed while it lives: input and
 *   output device buffers are persistent allocations, scratch comes from
 *   the arena whose base never moves, and each slot's pinned memory is
 *   allocated once at step creation.
 * - The graph is the whole step: zero-copy kernel (small inputs), memcpy
 *   nodes (large inputs), the body, the same for outputs, and an event
 *   record node marking the slot free. So a replay is one cudaGraphLaunch.
 *
 * Pointing the graph at the current slot. We instantiate one executable
 * per slot from one capture, patching the staging and event nodes of the
 * template between instantiations. Replay then launches exec[slot] with
 * no per-launch parameter update (which costs host time and a node
 * update) and no indirection through a slot index read over PCIe. The
 * price is N instantiations at capture time. docs/staging.md has the
 * measurements behind this choice.
 */
#include <string.h>

#include "fault.h"
#include "internal.h"
#include "stage.h"
#include "trace.h"

/* The nodes cgr adds around the body, found again to patch them per slot. */
typedef struct io_nodes {
    cgr__copy_list zin, zout;
    cudaGraphNode_t zin_node, zout_node;
    int n_min, n_mout;
    int min[CGR_MAX_TENSORS], mout[CGR_MAX_TENSORS];
    cudaGraphNode_t min_node[CGR_MAX_TENSORS], mout_node[CGR_MAX_TENSORS];
    cudaGraphNode_t ev_node;
} io_nodes;

/* Splits tensors by size and fills the zero-copy lists for `slot`. */
static void plan_io(const cgr_step *s, uint32_t slot, size_t zero_copy_max, io_nodes *io)
{
    unsigned char *dev = cgr__slot_dev(s, slot);
    memset(&io->zin, 0, sizeof io->zin);
    memset(&io->zout, 0, sizeof io->zout);
    io->n_min = io->n_mout = 0;
    for (int i = 0; i < s->n_in; i++) {
        const cgr__tensor *t = &s->in[i];
        if (t->bytes <= zero_copy_max) {
            int k = io->zin.n++;
            io->zin.src[k] = dev + t->slot_offset;
            io->zin.dst[k] = t->dev;
            io->zin.bytes[k] = t->bytes;
        } else {
            io->min[io->n_min++] = i;
        }
    }
    for (int i = 0; i < s->n_out; i++) {
        const cgr__tensor *t = &s->out[i];
        if (t->bytes <= zero_copy_max) {
            int k = io->zout.n++;
            io->zout.src[k] = t->dev;
            io->zout.dst[k] = dev + t->slot_offset;
            io->zout.bytes[k] = t->bytes;
        } else {
            io->mout[io->n_mout++] = i;
        }
    }
    if (io->zout.n) {
        unsigned long long *seq = s->sig_dev;
        io->zout.flag = (unsigned long long *)dev; /* the slot's first word */
        io->zout.seq = seq + slot;
        io->zout.arrive = (unsigned int *)(seq + s->ring.slots) + slot;
    }
}

/* The node just captured on `stream` (the capture's single dependency). */
static cgr_status last_node(cudaStream_t stream, cudaGraphNode_t *node)
{
    enum cudaStreamCaptureStatus cs;
    const cudaGraphNode_t *deps = NULL;
    size_t n = 0;
    CGR_CUDA_TRY(cudaStreamGetCaptureInfo(stream, &cs, NULL, NULL, &deps, NULL, &n));
    if (cs != cudaStreamCaptureStatusActive || n != 1)
        return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                        "capture lost track of its staging node (status %d, %zu dependencies)",
                        (int)cs, n);
    *node = deps[0];
    return CGR_STATUS_OK;
}

static cgr_status record_inputs(cgr_step *s, io_nodes *io)
{
    cudaStream_t st = s->rt->stream;
    if (io->zin.n) {
        CGR_CUDA_TRY(cgr__stage_copy(&io->zin, st, 0));
        CGR_TRY(last_node(st, &io->zin_node));
    }
    const unsigned char *host = cgr__slot_host(s, 0);
    for (int k = 0; k < io->n_min; k++) {
        const cgr__tensor *t = &s->in[io->min[k]];
        CGR_CUDA_TRY(cudaMemcpyAsync(t->dev, host + t->slot_offset, t->bytes,
                                     cudaMemcpyHostToDevice, st));
        CGR_TRY(last_node(st, &io->min_node[k]));
    }
    return CGR_STATUS_OK;
}

static cgr_status record_outputs(cgr_step *s, io_nodes *io)
{
    cudaStream_t st = s->rt->stream;
    unsigned char *host = cgr__slot_host(s, 0);
    for (int k = 0; k < io->n_mout; k++) {
        const cgr__tensor *t = &s->out[io->mout[k]];
        CGR_CUDA_TRY(cudaMemcpyAsync(host + t->slot_offset, t->dev, t->bytes,
                                     cudaMemcpyDeviceToHost, st));
        CGR_TRY(last_node(st, &io->mout_node[k]));
    }
    /*
     * The zero-copy output kernel comes last because it publishes the
     * completion flag: everything the host will read must be written by then.
     * Not a programmatic launch: measured on the H200 (W-chain N=100,
     * 4 KiB in + 4 B out), the I/O cost went from +3.97 to +4.83 us when the
     * output copy was launched with PDL behind ordinary kernels.
     */
    if (io->zout.n) {
        CGR_CUDA_TRY(cgr__stage_copy(&io->zout, st, 0));
        CGR_TRY(last_node(st, &io->zout_node));
    }
    /* External record: a real event record node, which the host can wait on. */
    CGR_CUDA_TRY(cudaEventRecordWithFlags(s->done[0], st, cudaEventRecordExternal));
    CGR_TRY(last_node(st, &io->ev_node));
    return CGR_STATUS_OK;
}

static cgr_status patch_kernel(cudaGraphNode_t node, cgr__copy_list *l)
{
    struct cudaKernelNodeParams p;
    CGR_CUDA_TRY(cudaGraphKernelNodeGetParams(node, &p));
    void *args[1] = {l};
    p.kernelParams = args;
    p.extra = NULL;
    CGR_CUDA_TRY(cudaGraphKernelNodeSetParams(node, &p));
    return CGR_STATUS_OK;
}

/* Points the template's staging and event nodes at `slot`. */
static cgr_status patch_for_slot(cgr_step *s, io_nodes *io, uint32_t slot)
{
    plan_io(s, slot, s->rt->opt.zero_copy_max_bytes, io);
    if (io->zin.n)
        CGR_TRY(patch_kernel(io->zin_node, &io->zin));
    if (io->zout.n)
        CGR_TRY(patch_kernel(io->zout_node, &io->zout));
    unsigned char *host = cgr__slot_host(s, slot);
    for (int k = 0; k < io->n_min; k++) {
        const cgr__tensor *t = &s->in[io->min[k]];
        CGR_CUDA_TRY(cudaGraphMemcpyNodeSetParams1D(io->min_node[k], t->dev,
                                                    host + t->slot_offset, t->bytes,
                                                    cudaMemcpyHostToDevice));
    }
    for (int k = 0; k < io->n_mout; k++) {
        const cgr__tensor *t = &s->out[io->mout[k]];
        CGR_CUDA_TRY(cudaGraphMemcpyNodeSetParams1D(io->mout_node[k], host + t->slot_offset,
                                                    t->dev, t->bytes, cudaMemcpyDeviceToHost));
    }
    CGR_CUDA_TRY(cudaGraphEventRecordNodeSetEvent(io->ev_node, s->done[slot]));
    return CGR_STATUS_OK;
}

void cgr__release_graphs(cgr_step *s)
{
    for (int k = 0; k < CGR_MAX_SLOTS; k++) {
        if (s->exec[k])
            cudaGraphExecDestroy(s->exec[k]);
        s->exec[k] = NULL;
    }
}

static cgr_status instantiate_all(cgr_step *s, cudaGraph_t g, io_nodes *io)
{
    cgr_status st = CGR_STATUS_OK;
    for (uint32_t k = 0; k < s->ring.slots; k++) {
        CGR_TRY_GOTO(patch_for_slot(s, io, k), st, fail);
        /*
         * Stored only on success: CUDA does not say what a failed call leaves
         * in its out pointer, and the fail path destroys whatever exec[] holds.
         */
        cudaGraphExec_t exec = NULL;
        cudaError_t e = CGR__FAULT(CGR__FAULT_INSTANTIATE) ? cudaErrorInvalidValue
                                                            : cudaGraphInstantiate(&exec, g, 0);
        if (e != cudaSuccess) {
            st = cgr__cuda_fail((int)e, "cudaGraphInstantiate", __FILE__, __LINE__);
            goto fail;
        }
        s->exec[k] = exec;
        /* Upload now so the first replay does not pay for it. */
        CGR_CUDA_TRY_GOTO(cudaGraphUpload(s->exec[k], s->rt->stream), st, fail);
    }
    size_t nodes = 0;
    CGR_CUDA_TRY_GOTO(cudaGraphGetNodes(g, NULL, &nodes), st, fail);
    s->stats.graph_nodes = nodes;
    s->stats.zero_copy_tensors = (uint64_t)(io->zin.n + io->zout.n);
    s->sig_flag = io->zout.n > 0;
    s->stats.memcpy_tensors = (uint64_t)(io->n_min + io->n_mout);
    return CGR_STATUS_OK;
fail:
    cgr__release_graphs(s);
    return st;
}

static cgr_status capture(cgr_step *s)
{
    cgr_runtime *rt = s->rt;
    double t0 = cgr__now_us();
    io_nodes io;
    memset(&io, 0, sizeof io);
    plan_io(s, 0, rt->opt.zero_copy_max_bytes, &io);

    /* Start from a clean error state so the diagnosis sees the step's error. */
    (void)cudaGetLastError();
    CGR_CUDA_TRY(cudaStreamBeginCapture(rt->stream, cudaStreamCaptureModeThreadLocal));
    cgr__capture_fault f;
    memset(&f, 0, sizeof f);
    f.body = record_inputs(s, &io);
    if (f.body == CGR_STATUS_OK)
        f.body = cgr__call_step(s, CGR__CTX_CAPTURE);
    /*
     * Read the step's own CUDA error now: the first illegal call (say
     * cudaMalloc -> cudaErrorStreamCaptureUnsupported) is the useful one,
     * and any later call, ours included, would only report "invalidated".
     */
    f.seen_err = (int)cudaGetLastError();
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t qe = cudaStreamIsCapturing(rt->stream, &cs);
    if (f.body == CGR_STATUS_OK && qe == cudaSuccess && cs == cudaStreamCaptureStatusActive)
        f.body = record_outputs(s, &io);
    strncpy(f.body_msg, cgr_last_error(), sizeof f.body_msg - 1);
    if (qe == cudaSuccess && cs == cudaStreamCaptureStatusActive)
        qe = cudaStreamIsCapturing(rt->stream, &cs);

    cudaGraph_t g = NULL;
    /* Always end the capture, whatever happened, so the stream is usable again. */
    f.end_err = (int)cudaStreamEndCapture(rt->stream, &g);
    (void)cudaGetLastError();
    if (qe != cudaSuccess || cs == cudaStreamCaptureStatusInvalidated || f.end_err) {
        if (g)
            cudaGraphDestroy(g);
        return cgr__capture_failed(s, &f);
    }
    if (f.body != CGR_STATUS_OK) {
        cudaGraphDestroy(g);
        return CGR_FAIL(f.body, "%s", f.body_msg);
    }
    cgr__graph_report(s, g);
    cgr__range_push("cgr instantiate");
    cgr_status st = instantiate_all(s, g, &io);
    cgr__range_pop();
    cudaGraphDestroy(g);
    if (st != CGR_STATUS_OK)
        return st;
    s->stats.capture_us = cgr__now_us() - t0;
    s->stats.captures++;
    rt->captures++;
    rt->capture_us += s->stats.capture_us;
    cgr__log(rt, CGR_LOG_INFO, "step '%s' captured: %llu nodes, %u executables, %.1f us", s->name,
             (unsigned long long)s->stats.graph_nodes, s->ring.slots, s->stats.capture_us);
    return CGR_STATUS_OK;
}

cgr_status cgr__capture(cgr_step *s)
{
    cgr__range_push("cgr capture");
    cgr_status st = capture(s);
    cgr__range_pop();
    return st;
}
