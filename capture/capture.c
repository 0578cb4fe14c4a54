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
 *   nodes (large inputs), the body, the same for outputs, the last
 *   publishing the completion flag, then the record of the step's
 *   graph_done event. So a replay is one cudaGraphLaunch and nothing else.
 *
 * Pointing the graph at the current slot. Each captured shape has one
 * executable, whatever the number of slots. Its staging kernels find the
 * run's slot in a device word (stage.h): every address of a slot is
 * captured for slot 0 and moved on the device, and the graph's last
 * staging kernel advances the word to the next slot once the run's
 * outputs are out. The host never writes the word while a graph may read
 * it: it knows what each launch does to the word (replay/run.c keeps
 * slot_next) and enqueues a reset only before a launch that would find it
 * wrong, which happens only after runs that do not advance it (eager
 * runs, a run launched again or let through by an armed slot). So a
 * replay costs one cudaGraphLaunch, and a capture one instantiation and
 * one upload. Tensors too large for the zero-copy kernels cross by memcpy
 * nodes, whose addresses cannot move on the device: those nodes are
 * repointed at the slot before a launch that uses another slot than the
 * last (cudaGraphExecMemcpyNodeSetParams1D, which leaves launches already
 * enqueued as they were); next to copies of that size the call is noise.
 * docs/staging.md gives this design's reasons, and docs/benchmarks.md
 * ("Staging: pointing the graph at the slot") the measurements.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "capture.h"
#include "cuda_compat.h"
#include "stage.h"
#include "trace.h"

/* The nodes cgr adds around the body: inputs' memcpy nodes first, then outputs'. */
typedef struct io_nodes {
    cgr__copy_list zin, zout;
    int n_copies;
    cgr__graph_copy copies[2 * CGR_MAX_TENSORS];
} io_nodes;

/* One more copy for l's kernel. */
static void add_copy(cgr__copy_list *l, const void *src, void *dst, size_t bytes)
{
    l->src[l->n] = src;
    l->dst[l->n] = dst;
    l->bytes[l->n++] = bytes;
}

/* Tensor t, to or from slot 0, by l's zero-copy kernel or, larger than max, a memcpy node. */
static void plan_tensor(io_nodes *io, cgr__copy_list *l, const cgr__tensor *t,
                        unsigned char *slot, size_t max)
{
    if (t->cur_bytes > max)
        io->copies[io->n_copies++] =
            (cgr__graph_copy){NULL, t->dev, t->slot_offset, t->cur_bytes, l->to_host};
    else if (l->to_host)
        add_copy(l, t->dev, slot + t->slot_offset, t->cur_bytes);
    else
        add_copy(l, slot + t->slot_offset, t->dev, t->cur_bytes);
}

/*
 * Splits tensors by size and fills the zero-copy lists with slot 0's
 * addresses: the sources of the input list, the destinations of the
 * output list. Sizes are the current shape's (its bucket), and a step
 * with dynamic dims also moves the run's true dims from the slot to their
 * device buffer in the input kernel, so every replay sees its own run's
 * dims, clamped to the bucket (stage.h). A graph with any staging kernel
 * ends with the output kernel,
 * which publishes the completion flag and advances the slot word, even
 * when it has no tensor to copy.
 */
static void plan_io(const cgr_step *s, io_nodes *io)
{
    const size_t zero_copy_max = s->rt->opt.advanced.zero_copy_max_bytes;
    unsigned char *dev = s->pinned_dev;
    memset(io, 0, sizeof *io);
    io->zout.to_host = 1;
    for (int i = 0; i < s->n_in; i++)
        plan_tensor(io, &io->zin, &s->in[i], dev, zero_copy_max);
    io->zin.n_dims = s->n_dyn;
    io->zin.dims_src = (const long long *)(dev + CGR__SLOT_DIMS_OFFSET);
    io->zin.dims_dst = (long long *)s->dims_dev;
    for (int j = 0; j < s->n_dyn; j++)
        io->zin.dims_max[j] = s->cur_bucket[j];
    for (int i = 0; i < s->n_out; i++)
        plan_tensor(io, &io->zout, &s->out[i], dev, zero_copy_max);
    /* An armable step's input kernel waits at the slot's gate (capture/gate.c). */
    if (s->armable) {
        io->zin.gate = (unsigned long long *)(dev + CGR__SLOT_GATE_OFFSET);
        io->zin.gate_relay = (unsigned int *)(s->sig_dev + 2 * s->ring.slots);
        io->zin.gate_timeout_ns = (unsigned long long)s->rt->opt.arm_timeout_us * 1000ull;
    }
    if (!io->zin.n && !io->zin.n_dims && !io->zin.gate && !io->zout.n)
        return;
    cgr__copy_list *l[2] = {&io->zin, &io->zout};
    for (int k = 0; k < 2; k++) {
        l[k]->slot_word = s->slot_word;
        l[k]->slot_stride = s->slot_stride;
        l[k]->n_slots = s->ring.slots;
    }
    io->zout.flag = (unsigned long long *)dev; /* the slot's first word */
    io->zout.seq = s->sig_dev;
    io->zout.arrive = (unsigned int *)(s->sig_dev + s->ring.slots);
}

/* The node just captured on `stream` (the capture's single dependency). */
static cgr_status last_node(cudaStream_t stream, cudaGraphNode_t *node)
{
    enum cudaStreamCaptureStatus cs;
    const cudaGraphNode_t *deps = NULL;
    size_t n = 0;
    cudaError_t e = cgr__capture_deps(stream, &cs, NULL, &deps, &n);
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, "cudaStreamGetCaptureInfo");
    /* The step may have invalidated the capture; a staging node cgr just
     * added with more or fewer than one dependency would be cgr's bug. */
    if (cs != cudaStreamCaptureStatusActive)
        return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                        "the capture ended before cgr's staging node (status %d)", (int)cs);
    if (n != 1)
        return CGR_FAIL(CGR_STATUS_INTERNAL,
                        "capture lost track of its staging node (%zu dependencies)", n);
    *node = deps[0];
    return CGR_STATUS_OK;
}

static cgr_status record_inputs(cgr_step *s, io_nodes *io)
{
    cudaStream_t st = s->rt->stream;
    /* With a gate the kernel comes first even with nothing to copy: memcpy nodes wait behind it. */
    if (io->zin.n || io->zin.n_dims || io->zin.gate)
        CGR_CUDA_TRY(cgr__stage_copy(&io->zin, st));
    const unsigned char *host = cgr__slot_host(s, 0);
    for (cgr__graph_copy *c = io->copies; c < io->copies + io->n_copies && !c->to_host; c++) {
        CGR_CUDA_TRY(cudaMemcpyAsync(c->dev, host + c->slot_offset, c->bytes,
                                     cudaMemcpyHostToDevice, st));
        CGR_TRY(last_node(st, &c->node));
    }
    return CGR_STATUS_OK;
}

static cgr_status record_outputs(cgr_step *s, io_nodes *io)
{
    cudaStream_t st = s->rt->stream;
    unsigned char *host = cgr__slot_host(s, 0);
    for (int k = 0; k < io->n_copies; k++) {
        cgr__graph_copy *c = &io->copies[k];
        if (!c->to_host)
            continue;
        CGR_CUDA_TRY(cudaMemcpyAsync(host + c->slot_offset, c->dev, c->bytes,
                                     cudaMemcpyDeviceToHost, st));
        CGR_TRY(last_node(st, &c->node));
    }
    /*
     * The zero-copy output kernel comes last because it publishes the
     * completion flag and advances the slot word: everything the host will
     * read must be written by then, and every earlier node done with the
     * slot. Not a programmatic launch: launched with PDL behind ordinary
     * kernels, the output copy made W-chain's I/O cost higher
     * (docs/benchmarks.md, "Staging: zero-copy kernels against copy nodes").
     */
    if (io->zout.flag)
        CGR_CUDA_TRY(cgr__stage_copy(&io->zout, st));
    /*
     * The graph records graph_done itself, after everything else, so that a
     * replay is one host call and no run can be launched without its
     * record. Against a host record after each launch, W-chain's cgr/raw
     * and host CPU per replay measured the same (docs/benchmarks.md): the
     * record's host time did not go away, it went into the launch.
     */
    CGR_CUDA_TRY(cudaEventRecordWithFlags(s->graph_done, st, cudaEventRecordExternal));
    return CGR_STATUS_OK;
}

/* Estimated bytes of one node's executable state; CUDA reports none (docs/shapes.md). */
#define CGR__EXEC_NODE_BYTES 4096

/* Takes g's check template away; returns it when g does not also keep it as its template. */
static cudaGraph_t take_check(cgr__graph *g)
{
    cudaGraph_t t = g->check != g->tmpl ? g->check : NULL;
    g->check = NULL;
    return t;
}

static void drop_check(cgr__graph *g)
{
    cudaGraph_t t = take_check(g);
    if (t)
        (void)cudaGraphDestroy(t);
}

void cgr__graph_free(cgr__graph *g)
{
    if (!g)
        return;
    /* CUDA frees an executable that is still running once it completes. */
    if (g->exec)
        (void)cudaGraphExecDestroy(g->exec);
    drop_check(g);
    if (g->tmpl)
        (void)cudaGraphDestroy(g->tmpl);
    free(g);
}

/*
 * The staging nodes of the capture, on g, the graph made from it. The
 * capture used slot 0's addresses. An updated graph keeps the memcpy nodes
 * it was instantiated with (same order, same topology): their handles are
 * how its executable's copies are repointed.
 */
static void take_staging(cgr__graph *g, const io_nodes *io, int updated)
{
    for (int k = 0; k < io->n_copies; k++) {
        cudaGraphNode_t node = g->copies[k].node;
        g->copies[k] = io->copies[k];
        if (updated)
            g->copies[k].node = node;
    }
    g->n_copies = io->n_copies;
    g->copy_slot = 0;
    g->zero_copy_tensors = (uint64_t)(io->zin.n + io->zout.n);
    g->memcpy_tensors = (uint64_t)io->n_copies;
    g->flag = io->zout.flag != NULL;
    g->gated = io->zin.gate != NULL;
}

/*
 * A graph that captured cleanly but cannot be instantiated is still a
 * capture that failed, for a reason of the step's making: the caller runs
 * the shape eagerly, as after any failed capture.
 */
static cgr_status instantiate_failed(const cgr_step *s, cudaGraph_t g, cudaError_t e)
{
    /* Memory-allocation nodes: what most often makes an instantiation fail. */
    size_t counts[cudaGraphNodeTypeCount] = {0}, n = 0;
    (void)cgr__graph_count(g, counts, &n);
    size_t allocs = counts[cudaGraphNodeTypeMemAlloc];
    CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
              "capture of step '%s': cudaGraphInstantiate failed with %s (%s)", s->name,
              cudaGetErrorName(e), cudaGetErrorString(e));
    if (allocs)
        cgr__error_append(
            "the graph holds %zu memory-allocation nodes, which CUDA allows in only one "
            "executable and not in every graph: they come from cudaMallocAsync in the step, "
            "or from a cuBLAS handle without a workspace (use cgr_ctx_cublas(), or give your "
            "handle one with cublasSetWorkspace); allocate with cgr_ctx_alloc() instead",
            allocs);
    return CGR_STATUS_CAPTURE_FAILED;
}

/*
 * Updates the offered graph's executable to the template; returns 1 when
 * CUDA took it. Launches already enqueued keep running what they were
 * launched with; the update applies from the next launch on. A refusal
 * (different topology, say) returns 0 with its cudaGraphExecUpdateResult
 * and reason in out.
 */
static int update(cudaGraph_t g, const io_nodes *io, cgr__graph *offer, cgr__capture_out *out)
{
    if (offer->n_copies != io->n_copies) {
        out->update_result = (int)cudaGraphExecUpdateErrorTopologyChanged;
        snprintf(out->update_text, sizeof out->update_text,
                 "the new shape crosses %d tensors by memcpy nodes, the offer %d", io->n_copies,
                 offer->n_copies);
        return 0;
    }
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    cudaError_t e = cudaGraphExecUpdate(offer->exec, g, &info);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        out->update_result = (int)info.result;
        snprintf(out->update_text, sizeof out->update_text,
                 "cudaGraphExecUpdate: %s (update result %d)", cudaGetErrorString(e),
                 (int)info.result);
        return 0;
    }
    return 1;
}

/*
 * Turns the captured template into a graph: update the offer, or
 * instantiate. keep_check: keep the template for the frozen-value check of
 * the shape's next run. Takes the template (kept or retired).
 */
static cgr_status make_graph(cgr_step *s, cudaGraph_t g, const io_nodes *io, cgr__graph *offer,
                             int keep_check, cgr__capture_out *out)
{
    double t0 = cgr__now_us();
    cgr__graph *made = offer;
    if (offer) {
        cgr__range_push("cgr update");
        out->updated = update(g, io, offer, out);
        cgr__range_pop();
        if (out->updated) {
            /* An offer never checked still holds its own old template. */
            cudaGraph_t old = take_check(offer);
            if (old)
                out->retired[out->n_retired++] = old;
            /* A new shape's graph: its first check is still to come. */
            offer->check_in = 0;
            offer->rechecking = 0;
        } else {
            /* A refused update may leave the offer half updated: it is never replayed again. */
            out->refused = offer;
            cgr__log(s->rt, CGR_LOG_INFO, "step '%s': %s; instantiating instead", s->name,
                     out->update_text);
            made = NULL;
            t0 = cgr__now_us();
        }
    }
    if (!made) {
        made = calloc(1, sizeof *made);
        if (!made) {
            (void)cudaGraphDestroy(g);
            return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "graph table of step '%s'", s->name);
        }
        cgr__range_push("cgr instantiate");
        /* Stored only on success: CUDA does not say what a failed call leaves in its out
         * pointer, and cgr__graph_free destroys whatever made holds. */
        cudaGraphExec_t exec = NULL;
        cudaError_t e = CGR__FAULT(CGR__FAULT_INSTANTIATE) ? cudaErrorInvalidValue
                                                            : cudaGraphInstantiate(&exec, g, 0);
        cgr__range_pop();
        if (e != cudaSuccess) {
            cgr_status st = instantiate_failed(s, g, e);
            (void)cudaGraphDestroy(g);
            free(made);
            return st;
        }
        /*
         * Not uploaded here, nor after an update: the run that captured
         * launches it at once, and a launch uploads an executable that
         * needs it. Measured on the H200 (docs/benchmarks.md),
         * cudaGraphUpload before that launch saved the launch nothing and
         * made the run's new graph finish later.
         */
        made->exec = exec;
        /* Kept where its memcpy nodes are needed to repoint the executable. */
        if (io->n_copies)
            made->tmpl = g;
    }
    take_staging(made, io, out->updated);
    /* An updated offer keeps its own template: g is kept only for the check. */
    if (keep_check) {
        made->check = g;
        made->check_stack = cgr__thread_stack(); /* this thread captured it */
    } else if (made->tmpl != g) {
        out->retired[out->n_retired++] = g;
    }
    out->graph = made;
    out->make_us = cgr__now_us() - t0;
    return CGR_STATUS_OK;
}

/* Records one run of the step, staging included, into *out and its staging nodes into *io;
 * nothing executes. */
static cgr_status record(cgr_step *s, cgr__shape_plan *plan, io_nodes *io, cudaGraph_t *out)
{
    cgr_runtime *rt = s->rt;
    plan_io(s, io);

    /* Start from a clean error state so the diagnosis sees the step's error. */
    (void)cudaGetLastError();
    CGR_CUDA_TRY(cudaStreamBeginCapture(rt->stream, cudaStreamCaptureModeThreadLocal));
    cgr__capture_fault f;
    memset(&f, 0, sizeof f);
    s->fn_cuda_error = 0;
    f.body = record_inputs(s, io);
    if (f.body == CGR_STATUS_OK)
        f.body = cgr__call_step(s, CGR__CTX_CAPTURE, plan);
    /*
     * Read the step's own CUDA error now: the first illegal call (say
     * cudaMalloc -> cudaErrorStreamCaptureUnsupported) is the useful one,
     * and any later call, ours included, would only report "invalidated".
     */
    f.seen_err = s->fn_cuda_error ? s->fn_cuda_error : (int)cudaGetLastError();
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t qe = cudaStreamIsCapturing(rt->stream, &cs);
    if (f.body == CGR_STATUS_OK && qe == cudaSuccess && cs == cudaStreamCaptureStatusActive)
        f.body = record_outputs(s, io);
    strncpy(f.body_msg, cgr_last_error(), sizeof f.body_msg - 1);
    if (qe == cudaSuccess && cs == cudaStreamCaptureStatusActive)
        qe = cudaStreamIsCapturing(rt->stream, &cs);

    cudaGraph_t g = NULL;
    /* Always end the capture, whatever happened, so the stream is usable again. */
    f.end_err = (int)cudaStreamEndCapture(rt->stream, &g);
    (void)cudaGetLastError();
    if (qe != cudaSuccess || cs == cudaStreamCaptureStatusInvalidated || f.end_err) {
        if (g)
            (void)cudaGraphDestroy(g);
        return cgr__capture_failed(s, &f);
    }
    if (f.body != CGR_STATUS_OK) {
        (void)cudaGraphDestroy(g);
        return CGR_FAIL(f.body, "%s", f.body_msg);
    }
    *out = g;
    return CGR_STATUS_OK;
}

cgr_status cgr__capture_again(cgr_step *s, cgr__shape_plan *plan)
{
    io_nodes io;
    cudaGraph_t g = NULL;
    cgr_status st = record(s, plan, &io, &g);
    if (g)
        (void)cudaGraphDestroy(g);
    return st;
}

/* A failed capture, with the diagnosis appended when cgr_options.diagnose asks for one. */
static cgr_status failed(cgr_step *s, cgr__shape_plan *plan, cgr_status st)
{
    if (st != CGR_STATUS_CAPTURE_FAILED || !s->rt->opt.diagnose)
        return st;
    char why[1024], diag[512];
    snprintf(why, sizeof why, "%s", cgr_last_error());
    cgr_status ds = cgr__watch_capture(s, plan, diag, sizeof diag);
    if (ds != CGR_STATUS_OK) {
        snprintf(diag, sizeof diag, "%s", cgr_last_error());
        return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED, "capture of step '%s' (no diagnosis: %s); %s",
                        s->name, diag, why);
    }
    /* The diagnosis first: it is what the error alone could not say, and messages are cut. */
    return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED, "capture of step '%s': %s; %s", s->name, diag, why);
}

cgr_status cgr__capture(cgr_step *s, cgr__shape_plan *plan, cgr__graph *offer,
                        cgr__capture_out *out)
{
    cgr_runtime *rt = s->rt;
    memset(out, 0, sizeof *out);
    /* Without arena memory behind its scratch the shape cannot be captured. */
    if (plan->unbacked[0])
        return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                        "step '%s': this shape is not captured: its scratch cannot be planned "
                        "into the arena: %s", s->name, plan->unbacked);
    if (!plan->planned)
        return CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                        "step '%s': this shape is not captured: its warm-ups failed before "
                        "its scratch was planned", s->name);
    cgr__range_push("cgr capture");
    double t0 = cgr__now_us();
    io_nodes io;
    cudaGraph_t g = NULL;
    cgr_status st = record(s, plan, &io, &g);
    if (st != CGR_STATUS_OK) {
        st = failed(s, plan, st);
        goto out;
    }
    uint64_t kernel_nodes = 0, memcpy_nodes = 0;
    size_t nodes = 0;
    st = cgr__graph_report(s, g, &nodes, &kernel_nodes, &memcpy_nodes);
    if (st != CGR_STATUS_OK) {
        (void)cudaGraphDestroy(g);
        goto out;
    }
    /* Counting the nodes is part of what a new shape costs, so the capture's clock covers it. */
    out->capture_us = cgr__now_us() - t0;
    st = make_graph(s, g, &io, offer, rt->opt.frozen_check, out);
    if (st != CGR_STATUS_OK)
        goto out;
    out->graph->nodes = nodes;
    out->graph->kernel_nodes = kernel_nodes;
    out->graph->memcpy_nodes = memcpy_nodes;
    out->graph->bytes = nodes * CGR__EXEC_NODE_BYTES;
out:
    cgr__range_pop();
    return st;
}

cgr_status cgr__capture_check(cgr_step *s, cgr__shape_plan *plan, cgr__graph *g,
                              cgr__check_out *out)
{
    memset(out, 0, sizeof *out);
    io_nodes io;
    cudaGraph_t again = NULL;
    cgr__range_push("cgr frozen-value check");
    cgr_status st = record(s, plan, &io, &again);
    if (st == CGR_STATUS_OK) {
        st = cgr__graphs_compare(s, g->check, g->check_stack, again,
                                 g->rechecking ? "this run" : "the next run", out->text,
                                 sizeof out->text);
        if (st == CGR_STATUS_NOT_SUPPORTED) {
            /* A driver without the calls that read kernel parameters: replay unchecked, as
             * with the check off. */
            cgr__log(s->rt, CGR_LOG_WARN,
                     "step '%s': the frozen-value check could not compare this shape's graphs, "
                     "so it replays unchecked: %s",
                     s->name, cgr_last_error());
            st = CGR_STATUS_OK;
        } else if (st != CGR_STATUS_OK && st != CGR_STATUS_CAPTURE_FAILED) {
            /* Unchecked is not trusted: this run and the shape run eagerly. */
            st = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                          "step '%s': the frozen-value check could not compare the graphs (%s)",
                          s->name, cgr_last_error());
            (void)cudaGraphDestroy(again);
            again = NULL;
        }
    }
    if (st == CGR_STATUS_OK) {
        (void)cudaGraphDestroy(again);
        /* The template goes, or stays for a recheck, once the peers agree (cgr__graph_checked). */
        out->same = 1;
    } else if (st == CGR_STATUS_CAPTURE_FAILED && again) {
        /* This run's own capture is right for this run: instantiated, it runs once. */
        out->differs = 1;
        cgr__capture_out co;
        memset(&co, 0, sizeof co);
        cgr_status ms = make_graph(s, again, &io, NULL, 0, &co);
        cgr__capture_retire(&co);
        out->own = co.graph;
        /* Without its own graph the run goes eagerly, still for the difference found. */
        if (ms != CGR_STATUS_OK)
            cgr__log(s->rt, CGR_LOG_WARN, "step '%s': %s; this run executes eagerly", s->name,
                     cgr_last_error());
        st = CGR_STATUS_OK;
    }
    cgr__range_pop();
    return st;
}

void cgr__capture_retire(cgr__capture_out *out)
{
    for (int i = 0; i < out->n_retired; i++)
        (void)cudaGraphDestroy(out->retired[i]);
    out->n_retired = 0;
    cgr__graph_free(out->refused);
    out->refused = NULL;
}

void cgr__graph_checked(cgr__graph *g, unsigned recheck)
{
    g->rechecking = 1;
    if (recheck && g->check)
        g->check_in = recheck;
    else
        drop_check(g);
}
