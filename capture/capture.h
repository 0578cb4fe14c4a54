/*
 * The capture layer: eager runs (warm-up and fallback), stream capture into
 * one executable per shape, the staging around the step, the library
 * handles, the RNG state, the step's I/O memory and the gate of armed runs.
 */
#ifndef CGR_CAPTURE_H
#define CGR_CAPTURE_H

#include "core.h"
#include "frozen_values.h"

/* A tensor that crosses by a memcpy node, repointed at the run's slot before a launch. */
typedef struct cgr__graph_copy {
    cudaGraphNode_t node; /* in the graph the executable was instantiated from */
    void *dev;            /* the tensor's device buffer */
    size_t slot_offset;   /* its place in each slot */
    size_t bytes;
    int to_host;          /* an output */
} cgr__graph_copy;

/*
 * A captured shape: one executable for every staging slot (capture.c says
 * how its staging finds the run's slot).
 */
typedef struct cgr__graph {
    cudaGraphExec_t exec;
    /* What exec was instantiated from, kept while it has memcpy nodes:
     * their handles in it are how the executable's copies are repointed. */
    cudaGraph_t tmpl;
    int n_copies;
    cgr__graph_copy copies[2 * CGR_MAX_TENSORS];
    uint32_t copy_slot;       /* the slot its memcpy nodes point at; UINT32_MAX: unknown */
    /* The template of its capture, kept until the next run's capture of the
     * shape was compared with it (freeze.c), and after that for rechecks
     * (cgr_options.frozen_recheck); NULL once checked without rechecks, or
     * when the check is off. May be tmpl itself. */
    cudaGraph_t check;
    cgr__stack_range check_stack; /* the stack of the thread that captured check */
    /* With check: replays before the next comparison; 0: the next REPLAY
     * decision compares instead (cgr__graph_check_due). */
    uint64_t check_in;
    int rechecking;           /* 1 once a comparison passed: a later difference is a recheck's */
    /* Its staging kernels read the slot index, the last one advances it and
     * publishes a completion flag. 0: it has no staging kernel. */
    int flag;
    int gated;                /* its input kernel waits at the slot's gate (armable step) */
    uint64_t nodes, kernel_nodes, memcpy_nodes;
    uint64_t zero_copy_tensors, memcpy_tensors;
    size_t bytes;             /* estimate charged to the cache's byte budget */
} cgr__graph;

/* Whether g's next replay is a frozen-value comparison instead: its first
 * replay, or a recheck (cgr_options.frozen_recheck). Due until it passes. */
static inline int cgr__graph_check_due(const cgr__graph *g)
{
    return g->check != NULL && g->check_in == 0;
}

/* Counts a replay of g that was not due toward its next recheck. */
static inline void cgr__graph_replayed(cgr__graph *g)
{
    if (g->check)
        g->check_in--;
}

/* The step's static device buffers, pinned slots and events (capture/io.c).
 * free_io frees what alloc_io made, all or part of it, just before the step
 * itself is freed: on alloc_io's failure and at cgr__step_free. */
cgr_status cgr__step_alloc_io(cgr_step *s);
void cgr__step_free_io(cgr_step *s);

/* Runs the step eagerly on `slot` (warm-up or fallback) with scratch from `plan`,
 * tracing and planning it on its first run; a wait then waits for done[slot].
 * A run that traced and could not back its plan in the arena still completes:
 * CGR_STATUS_OK with plan->planned 0 and the reason in plan->unbacked. */
cgr_status cgr__run_eager(cgr_step *s, uint32_t slot, cgr__shape_plan *plan);
/* What a capture made (capture.c). */
typedef struct cgr__capture_out {
    cgr__graph *graph;    /* the new graph, or the offered one when updated */
    int updated;
    int update_result;    /* refused: its cudaGraphExecUpdateResult */
    char update_text[200];
    double capture_us, make_us;
    /*
     * What the capture leaves to destroy once this run's graph is launched
     * (cgr__capture_retire): destroying costs host time the launch need not
     * wait for. Templates no longer needed, and the offer when updating it
     * failed: it may be half updated and is never launched again.
     */
    cudaGraph_t retired[2];
    int n_retired;
    cgr__graph *refused;
} cgr__capture_out;
/* Destroys what out retired; call it on every path after cgr__capture, after the run's launch. */
void cgr__capture_retire(cgr__capture_out *out);
/*
 * Captures the step's current shape with scratch from `plan`. With `offer`,
 * first tries cudaGraphExecUpdate on its executables; when that fails, the
 * offer goes to out->refused (the caller takes it out of its table, and
 * cgr__capture_retire frees it) and a new graph is instantiated. On failure
 * out->graph is NULL. A plan the arena could not back, or one never made
 * because the shape's warm-ups failed, fails at once with
 * CGR_STATUS_CAPTURE_FAILED and its reason.
 */
cgr_status cgr__capture(cgr_step *s, cgr__shape_plan *plan, cgr__graph *offer,
                        cgr__capture_out *out);
/* What the frozen-value check of a graph found (cgr__capture_check). */
typedef struct cgr__check_out {
    int same;             /* the run's capture matched: replay the graph */
    int differs;          /* it did not: text says where */
    cgr__graph *own;      /* differs: this run's own graph, to launch once and free (NULL
                             when it could not be instantiated) */
    char text[512];       /* differs: the first difference */
} cgr__check_out;
/*
 * Captures the current run of the step again and compares it with the
 * template kept in `g` (freeze.c). Same: out->same = 1; the template stays
 * until cgr__graph_checked, once every rank agreed. Different:
 * out->differs = 1, the first difference in out->text, and the run's own
 * capture instantiated into out->own (it is this run, computed right;
 * NULL if that failed). Both return OK. A capture that fails, or graphs
 * that cannot be compared, return CGR_STATUS_CAPTURE_FAILED; a driver that
 * cannot read kernel parameters counts as the same.
 */
cgr_status cgr__capture_check(cgr_step *s, cgr__shape_plan *plan, cgr__graph *g,
                              cgr__check_out *out);
/*
 * The shape's graph passed its check: with recheck (cgr_options.frozen_recheck)
 * > 0 its template stays for the next comparison, due after that many
 * replays; with 0 it is dropped.
 */
void cgr__graph_checked(cgr__graph *g, unsigned recheck);
/*
 * Compares two captures of one shape node by node (freeze.c): OK when they
 * are the same graph, CGR_STATUS_CAPTURE_FAILED with the first difference
 * in msg otherwise, another status when the graphs cannot be read. a is
 * the graph's capture, b the run's; b_run names that run in msg ("the next
 * run").
 */
cgr_status cgr__graphs_compare(const cgr_step *s, cudaGraph_t a, cgr__stack_range a_stack,
                               cudaGraph_t b, const char *b_run, char *msg, size_t cap);
/* Destroys a graph's executables (in-flight ones are freed by CUDA once done) and frees it. */
void cgr__graph_free(cgr__graph *g);
void cgr__plan_reset(cgr__shape_plan *p);
/* Adds g's nodes of each type to counts and sets *count to how many it has; returns the
 * error of counting them (a node whose type cannot be read is left out) (dump.c). */
cudaError_t cgr__graph_count(cudaGraph_t g, size_t counts[cudaGraphNodeTypeCount], size_t *count);
/* Counts the graph's nodes and its kernel and memcpy nodes, logs a summary of every type
 * and writes a DOT file when a dump directory is set; fails only when the nodes cannot be
 * counted (capture/dump.c). */
cgr_status cgr__graph_report(cgr_step *s, cudaGraph_t g, size_t *nodes, uint64_t *kernel_nodes,
                             uint64_t *memcpy_nodes);
/* What went wrong in a capture, gathered by capture.c for diagnose.c. */
typedef struct cgr__capture_fault {
    int seen_err;        /* cudaGetLastError() right after the step returned */
    int end_err;         /* cudaStreamEndCapture's result */
    cgr_status body;     /* what the step function (or cgr's staging) returned */
    char body_msg[512];  /* its last-error message */
} cgr__capture_fault;
/*
 * The diagnosis of a failed capture (watch.c): runs the capture again
 * (cgr__capture_again) while watching every CUDA API call of this thread,
 * and describes the first one that failed and its caller in msg.
 * CGR_STATUS_NOT_SUPPORTED when CUPTI cannot be loaded or subscribed.
 */
cgr_status cgr__watch_capture(cgr_step *s, cgr__shape_plan *plan, char *msg, size_t cap);
/* Records the step's current shape once more and throws the graph away (capture.c). */
cgr_status cgr__capture_again(cgr_step *s, cgr__shape_plan *plan);
/* Formats a failed capture into the last-error message; returns CAPTURE_FAILED. */
cgr_status cgr__capture_failed(const cgr_step *s, const cgr__capture_fault *f);
/* Library handles (capture/handles.c). */
void cgr__handles_destroy(cgr_runtime *rt);
/* Ends a run's RNG use: checks the count and enqueues the offset advance. */
cgr_status cgr__philox_finish(cgr_ctx *c);
/* offset += n on the device (capture/rng_kernels.cu). */
cudaError_t cgr__philox_advance(cgr_philox_state *st, uint64_t n, cudaStream_t stream);
/* Calls the user's step function with a context in `mode` and scratch from `plan`. */
cgr_status cgr__call_step(cgr_step *s, cgr__ctx_mode mode, cgr__shape_plan *plan);
/*
 * Fails the run of `c` with `s` (the first failure of the run stands) and
 * returns `s`. For failures of cgr's own work inside a step (scratch, the
 * library handles, the RNG state): the run then reports that status and its
 * message, not CGR_STATUS_STEP_FAILED, since the step itself did nothing wrong.
 */
cgr_status cgr__ctx_fail(cgr_ctx *c, cgr_status s);

/* The gate of an armed run (capture/gate.c); rt->lock held. gate_set: the
 * slot's gate before a launch, go = 1 passes at once, 0 waits for the
 * host. arm_go opens the gate of the armed run on `slot` and returns 1
 * when that run had expired (it must be launched again); arm_drop lets the
 * step's armed run through unlaunched, if it has one. */
void cgr__gate_set(cgr_step *s, uint32_t slot, int go);
int cgr__arm_go(cgr_step *s, uint32_t slot);
void cgr__arm_drop(cgr_step *s);
/* arm_drop for every step of the runtime. */
void cgr__arm_drop_all(cgr_runtime *rt);
/* cudaStreamSynchronize of the runtime's stream, after letting every
 * step's armed run through: how cgr itself waits for its stream. */
cudaError_t cgr__sync_stream(cgr_runtime *rt);

#endif
