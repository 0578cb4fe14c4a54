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
#include <stdio.h>
#include <stdlib.h>
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

/*
 * Splits tensors by size and fills the zero-copy lists for `slot`. Sizes
 * are the current shape's (its bucket), and a step with dynamic dims also
 * moves the run's true dims from the slot to their device buffer in the
 * input kernel, so every replay sees its own run's dims.
 */
static void plan_io(const cgr_step *s, uint32_t slot, size_t zero_copy_max, io_nodes *io)
{
    unsigned char *dev = cgr__slot_dev(s, slot);
    memset(&io->zin, 0, sizeof io->zin);
    memset(&io->zout, 0, sizeof io->zout);
    io->n_min = io->n_mout = 0;
    for (int i = 0; i < s->n_in; i++) {
        const cgr__tensor *t = &s->in[i];
        if (t->cur_bytes <= zero_copy_max) {
            int k = io->zin.n++;
            io->zin.src[k] = dev + t->slot_offset;
            io->zin.dst[k] = t->dev;
            io->zin.bytes[k] = t->cur_bytes;
        } else {
            io->min[io->n_min++] = i;
        }
    }
    if (s->n_dyn) {
        int k = io->zin.n++;
        io->zin.src[k] = dev + CGR__SLOT_DIMS_OFFSET;
        io->zin.dst[k] = s->dims_dev;
        io->zin.bytes[k] = (size_t)s->n_dyn * sizeof(int64_t);
    }
    for (int i = 0; i < s->n_out; i++) {
        const cgr__tensor *t = &s->out[i];
        if (t->cur_bytes <= zero_copy_max) {
            int k = io->zout.n++;
            io->zout.src[k] = t->dev;
            io->zout.dst[k] = dev + t->slot_offset;
            io->zout.bytes[k] = t->cur_bytes;
        } else {
            io->mout[io->n_mout++] = i;
        }
    }
    /* An armable step's input kernel waits at the slot's gate (replay/arm.c). */
    if (s->armable) {
        io->zin.gate = (unsigned long long *)(dev + CGR__SLOT_GATE_OFFSET);
        io->zin.gate_relay = (unsigned int *)(s->sig_dev + 2 * s->ring.slots) + 2 * slot;
        io->zin.gate_timeout_ns = (unsigned long long)s->rt->opt.arm_timeout_us * 1000ull;
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
    /* With a gate the kernel comes first even with nothing to copy: memcpy nodes wait behind it. */
    if (io->zin.n || io->zin.gate) {
        CGR_CUDA_TRY(cgr__stage_copy(&io->zin, st, 0));
        CGR_TRY(last_node(st, &io->zin_node));
    }
    const unsigned char *host = cgr__slot_host(s, 0);
    for (int k = 0; k < io->n_min; k++) {
        const cgr__tensor *t = &s->in[io->min[k]];
        CGR_CUDA_TRY(cudaMemcpyAsync(t->dev, host + t->slot_offset, t->cur_bytes,
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
        CGR_CUDA_TRY(cudaMemcpyAsync(host + t->slot_offset, t->dev, t->cur_bytes,
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
    if (io->zin.n || io->zin.gate)
        CGR_TRY(patch_kernel(io->zin_node, &io->zin));
    if (io->zout.n)
        CGR_TRY(patch_kernel(io->zout_node, &io->zout));
    unsigned char *host = cgr__slot_host(s, slot);
    for (int k = 0; k < io->n_min; k++) {
        const cgr__tensor *t = &s->in[io->min[k]];
        CGR_CUDA_TRY(cudaGraphMemcpyNodeSetParams1D(io->min_node[k], t->dev,
                                                    host + t->slot_offset, t->cur_bytes,
                                                    cudaMemcpyHostToDevice));
    }
    for (int k = 0; k < io->n_mout; k++) {
        const cgr__tensor *t = &s->out[io->mout[k]];
        CGR_CUDA_TRY(cudaGraphMemcpyNodeSetParams1D(io->mout_node[k], host + t->slot_offset,
                                                    t->dev, t->cur_bytes,
                                                    cudaMemcpyDeviceToHost));
    }
    CGR_CUDA_TRY(cudaGraphEventRecordNodeSetEvent(io->ev_node, s->done[slot]));
    return CGR_STATUS_OK;
}

/* Estimated bytes of one node's executable state; CUDA reports none (docs/shapes.md). */
#define CGR__EXEC_NODE_BYTES 4096

void cgr__graph_free(cgr__graph *g)
{
    if (!g)
        return;
    /* CUDA frees an executable that is still running once it completes. */
    for (int k = 0; k < CGR_MAX_SLOTS; k++)
        if (g->exec[k])
            cudaGraphExecDestroy(g->exec[k]);
    free(g);
}

/* Stats of a finished graph, from the capture's template. */
static cgr_status graph_finish(cgr_step *s, cudaGraph_t g, const io_nodes *io, cgr__graph *out)
{
    size_t nodes = 0;
    CGR_CUDA_TRY(cudaGraphGetNodes(g, NULL, &nodes));
    out->nodes = nodes;
    out->zero_copy_tensors = (uint64_t)(io->zin.n + io->zout.n - (s->n_dyn ? 1 : 0));
    out->memcpy_tensors = (uint64_t)(io->n_min + io->n_mout);
    out->flag = io->zout.n > 0;
    out->gated = io->zin.gate != NULL;
    out->bytes = (size_t)nodes * s->ring.slots * CGR__EXEC_NODE_BYTES;
    return CGR_STATUS_OK;
}

/* One executable per slot from the template, into out->exec[]. */
static cgr_status instantiate_all(cgr_step *s, cudaGraph_t g, io_nodes *io, cgr__graph *out)
{
    for (uint32_t k = 0; k < s->ring.slots; k++) {
        CGR_TRY(patch_for_slot(s, io, k));
        /*
         * Stored only on success: CUDA does not say what a failed call leaves
         * in its out pointer, and the caller destroys whatever exec[] holds.
         */
        cudaGraphExec_t exec = NULL;
        cudaError_t e = CGR__FAULT(CGR__FAULT_INSTANTIATE) ? cudaErrorInvalidValue
                                                            : cudaGraphInstantiate(&exec, g, 0);
        if (e != cudaSuccess)
            return cgr__cuda_fail((int)e, "cudaGraphInstantiate", __FILE__, __LINE__);
        out->exec[k] = exec;
        /* Upload now so the first replay does not pay for it. */
        CGR_CUDA_TRY(cudaGraphUpload(out->exec[k], s->rt->stream));
    }
    return graph_finish(s, g, io, out);
}

/*
 * Updates the offered graph's executables to the template, slot by slot.
 * Launches already enqueued keep running what they were launched with; the
 * update applies from the next launch on. A refusal (different topology,
 * say) returns CGR_STATUS_CAPTURE_FAILED with the reason in *result; the
 * offer may then be half updated, and the caller frees it.
 */
static cgr_status update_all(cgr_step *s, cudaGraph_t g, io_nodes *io, cgr__graph *offer,
                             int *result, char *text, size_t text_size)
{
    for (uint32_t k = 0; k < s->ring.slots; k++) {
        CGR_TRY(patch_for_slot(s, io, k));
        cudaGraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof info);
        cudaError_t e = cudaGraphExecUpdate(offer->exec[k], g, &info);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            *result = (int)info.result;
            snprintf(text, text_size, "cudaGraphExecUpdate on slot %u: %s (update result %d)", k,
                     cudaGetErrorString(e), (int)info.result);
            return CGR_STATUS_CAPTURE_FAILED;
        }
        CGR_CUDA_TRY(cudaGraphUpload(offer->exec[k], s->rt->stream));
    }
    return graph_finish(s, g, io, offer);
}

/* Turns the captured template into a graph: update the offer, or instantiate. */
static cgr_status make_graph(cgr_step *s, cudaGraph_t g, io_nodes *io, cgr__graph *offer,
                             cgr__capture_out *out)
{
    double t0 = cgr__now_us();
    if (offer) {
        cgr__range_push("cgr update");
        cgr_status st = update_all(s, g, io, offer, &out->update_result, out->update_text,
                                   sizeof out->update_text);
        cgr__range_pop();
        if (st == CGR_STATUS_OK) {
            out->graph = offer;
            out->updated = 1;
            out->make_us = cgr__now_us() - t0;
            return st;
        }
        /*
         * Any failure may leave the offer half updated, so it must never be
         * replayed again: the caller drops it whatever the error was.
         */
        out->update_failed = 1;
        if (st != CGR_STATUS_CAPTURE_FAILED) {
            out->update_result = -1;
            snprintf(out->update_text, sizeof out->update_text, "%s", cgr_last_error());
            return st;
        }
        cgr__log(s->rt, CGR_LOG_INFO, "step '%s': %s; instantiating instead", s->name,
                 out->update_text);
        t0 = cgr__now_us();
    }
    cgr__graph *ng = calloc(1, sizeof *ng);
    if (!ng)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "graph table of step '%s'", s->name);
    cgr__range_push("cgr instantiate");
    cgr_status st = instantiate_all(s, g, io, ng);
    cgr__range_pop();
    if (st != CGR_STATUS_OK) {
        cgr__graph_free(ng);
        return st;
    }
    out->graph = ng;
    out->make_us = cgr__now_us() - t0;
    return CGR_STATUS_OK;
}

static cgr_status capture(cgr_step *s, cgr__shape_plan *plan, cgr__graph *offer,
                          cgr__capture_out *out)
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
        f.body = cgr__call_step(s, CGR__CTX_CAPTURE, plan);
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
    out->capture_us = cgr__now_us() - t0;
    cgr__graph node_counts;
    memset(&node_counts, 0, sizeof node_counts);
    cgr__graph_report(s, g, &node_counts);
    cgr_status st = make_graph(s, g, &io, offer, out);
    cudaGraphDestroy(g);
    if (st != CGR_STATUS_OK)
        return st;
    out->graph->kernel_nodes = node_counts.kernel_nodes;
    out->graph->memcpy_nodes = node_counts.memcpy_nodes;
    cgr__log(rt, CGR_LOG_INFO,
             "step '%s' captured: %llu nodes, %u executables %s, capture %.1f us + %.1f us",
             s->name, (unsigned long long)out->graph->nodes, s->ring.slots,
             out->updated ? "updated in place" : "instantiated", out->capture_us, out->make_us);
    return CGR_STATUS_OK;
}

cgr_status cgr__capture(cgr_step *s, cgr__shape_plan *plan, cgr__graph *offer, cgr__capture_out *out)
{
    memset(out, 0, sizeof *out);
    cgr__range_push("cgr capture");
    cgr_status st = capture(s, plan, offer, out);
    cgr__range_pop();
    return st;
}
