/*
 * Internal definitions shared by lib/, capture/, replay/ and allocator/.
 */
#ifndef CGR_INTERNAL_H
#define CGR_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "arena.h"
#include "cgr/cgr.h"
#include "check.h"
#include "persist.h"
#include "planner.h"
#include "ring.h"
#include "shapes.h"

/*
 * Handles carry a magic word, so that a pointer that is not a cgr handle
 * (where its memory reads back) is refused instead of being used. This is
 * a debugging aid, not a promise: using a handle after destroy is
 * undefined behaviour (cgr.h, "Handles").
 */
#define CGR__MAGIC_RUNTIME 0x52524743u /* "CGRR" */
#define CGR__MAGIC_STEP 0x53524743u    /* "CGRS" */
#define CGR__MAGIC_CTX 0x43524743u     /* "CGRC" */
#define CGR__MAGIC_DEAD 0xdeadc0deu

/* Alignment of scratch, staging and persistent buffers. */
#define CGR__ALIGN 256
/* cuBLAS workspace per step run; the size cuBLAS recommends for Hopper. */
#define CGR__CUBLAS_WORKSPACE ((size_t)32 << 20)

struct cgr_runtime {
    uint32_t magic;
    cgr_options opt;
    cudaStream_t stream;
    cgr__arena arena;
    cgr__persist persist;
    cudaMemPool_t trace_pool;   /* serves scratch during the tracing warm-up */
    void *cublas;               /* cublasHandle_t, created on first use */
    void *cudnn;                /* cudnnHandle_t, created on first use */
    struct cgr_step *steps;     /* live steps (singly linked) */
    uint64_t n_steps;
    uint64_t replays, captures, eager_runs;
    double capture_us;
    size_t pinned_bytes;
    struct cgr__comm *comm;     /* attached NCCL communicator (comm/comm.h); NULL: none */
    /*
     * Serializes every public call that reads or changes the runtime's or
     * its steps' state, and everything enqueued on `stream` outside a step
     * function (docs/threading.md). One stream means the work is serialized
     * on the GPU anyway; the lock only keeps the host side consistent, so an
     * uncontended lock/unlock pair per call is all it costs.
     */
    pthread_mutex_t lock;
};

/* What cgr_ctx_alloc does during one run of a step. */
typedef enum cgr__ctx_mode {
    CGR__CTX_TRACE = 0, /* first warm-up: real allocations, requests recorded */
    CGR__CTX_PLANNED,   /* later warm-ups and eager runs: planned arena addresses */
    CGR__CTX_CAPTURE    /* capture: planned addresses, baked into the graph */
} cgr__ctx_mode;

/*
 * Scratch of one shape: the trace of its first warm-up and the planned
 * arena offsets (planner.h). Every shape is planned from the arena's base,
 * so all shapes and steps of a runtime share one arena as large as the
 * largest plan: their graphs never run at the same time (one stream).
 */
typedef struct cgr__shape_plan {
    cgr__trace trace;
    void **trace_ptrs;    /* real pointers of the tracing run, by request */
    size_t trace_ptrs_cap;
    int planned;
    size_t peak, lower;
    /* Philox counters one run reserves (capture/rng.c), fixed by the first run. */
    uint64_t philox_per_run;
    int philox_known;
} cgr__shape_plan;

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
    /* Its staging kernels read the slot index, the last one advances it and
     * publishes a completion flag. 0: it has no staging kernel. */
    int flag;
    int gated;                /* its input kernel waits at the slot's gate (armable step) */
    uint64_t nodes, kernel_nodes, memcpy_nodes;
    uint64_t zero_copy_tensors, memcpy_tensors;
    size_t bytes;             /* estimate charged to the cache's byte budget */
} cgr__graph;

struct cgr_ctx {
    uint32_t magic;
    struct cgr_runtime *rt;
    struct cgr_step *step;
    cgr__shape_plan *plan;     /* this run's shape */
    cgr__ctx_mode mode;
    size_t next;         /* index of the next scratch request */
    uint32_t clock;      /* alloc/free events so far in this run */
    cgr_status error;    /* first scratch error of the run; fails the run */
    int cublas_bound;    /* workspace already set for this run */
    uint64_t philox_used; /* counters reserved so far in this run */
};

/* A step input or output. */
typedef struct cgr__tensor {
    cgr_tensor_desc desc; /* as declared: the largest shape */
    char name[64];
    size_t bytes;         /* at the declared shape: sizes the buffer and slot space */
    void *dev;            /* static device buffer */
    size_t slot_offset;   /* offset inside each pinned slot */
    int8_t dyn[CGR_MAX_RANK]; /* dynamic dim on each axis, -1 for none */
    int n_dyn_axes;
    cgr_tensor_desc cur;  /* this run's shape (the bucket), what the step sees */
    size_t cur_bytes;
    unsigned char pad[8]; /* padding value, one element in the tensor's dtype */
    int pad_nonzero;
} cgr__tensor;

/* What a staging slot's run was, for its outputs and cgr_step_run_action. */
typedef struct cgr__slot_run {
    uint8_t action;                         /* cgr_run_action */
    int64_t true_dims[CGR_MAX_DYN_DIMS];
    int64_t bucket[CGR_MAX_DYN_DIMS];
    uint64_t compacted;                     /* ticket + 1 whose outputs are packed */
} cgr__slot_run;

struct cgr_step {
    uint32_t magic;
    struct cgr_runtime *rt;
    struct cgr_step *next;
    char name[64];
    cgr_step_fn fn;
    void *user;
    int n_in, n_out;
    cgr__tensor in[CGR_MAX_TENSORS];
    cgr__tensor out[CGR_MAX_TENSORS];
    /* Pinned staging: slots back to back, each slot_stride bytes. */
    unsigned char *pinned;     /* host view */
    unsigned char *pinned_dev; /* device view of the same memory */
    size_t slot_stride;
    cudaEvent_t done[CGR_MAX_SLOTS]; /* recorded when an eager run on the slot ends */
    cudaEvent_t graph_done;          /* recorded after every graph launch of the step */
    int graph_done_error;            /* a cudaError_t of a failed record; 0: none */
    /*
     * Completion flags (replay/run.c). A graph with staging kernels has its
     * last one publish a per-slot sequence number into the slot's flag word
     * (at offset 0 of the slot); the host waits for the number instead of
     * for the graph's end. sig_dev holds the device side: N sequence
     * counters, then N block-arrival counters (32-bit), then per slot the
     * two 32-bit words of an armed run's gate relay (capture/stage.cu),
     * then the slot word: the index of the slot the next graph run uses.
     */
    unsigned long long *sig_dev;
    unsigned char *slot_word;             /* in sig_dev, see above */
    /* What the slot word will hold when the stream reaches the next
     * launch: flag graphs advance it, nothing else touches it. */
    uint32_t slot_next;
    uint8_t sig_kind[CGR_MAX_SLOTS];      /* last run on the slot: CGR__SIG_* */
    uint64_t sig_expect[CGR_MAX_SLOTS];   /* flag value that run will publish */
    uint64_t sig_runs[CGR_MAX_SLOTS];     /* flag-publishing runs launched per slot */
    uint64_t graph_runs;                  /* graph launches of the step so far */
    uint64_t sig_graph[CGR_MAX_SLOTS];    /* graph_runs after the slot's last graph launch */
    cgr__ring ring;
    /* Armed runs (replay/arm.c): graphs begin with a gate; the graph
     * launched ahead on the acquired slot, NULL when it is not armed. */
    int armable;
    struct cgr__graph *armed;
    int64_t armed_bucket[CGR_MAX_DYN_DIMS]; /* its bucketed dims */
    int64_t run_dims[CGR_MAX_DYN_DIMS];     /* the acquired run's true dims */
    /*
     * Shapes (replay/shapes.h decides what each run does). A step without
     * dynamic dims has one shape and takes the same path.
     */
    int n_dyn;
    char dyn_name[CGR_MAX_DYN_DIMS][64];
    int64_t dyn_max[CGR_MAX_DYN_DIMS];
    cgr__shapes shapes;
    cgr__shape_plan *plans;             /* the scratch plan of each shape-table entry */
    int64_t *dims_dev;                  /* the run's true dims on the device */
    int64_t cur_true[CGR_MAX_DYN_DIMS]; /* this run's, for cgr_ctx_dim */
    int64_t cur_bucket[CGR_MAX_DYN_DIMS];
    cgr__slot_run slot_run[CGR_MAX_SLOTS];
    size_t scratch_peak_max;            /* largest plan among its shapes */
    double last_capture_us, last_make_us; /* of the latest capture */
    /* Graph-safe RNG (capture/rng.c): device state and its host mirror for
     * (re)seeding. */
    cgr_philox_state *philox_dev;
    cgr_philox_state philox_init;
    cgr_step_stats stats;
    /* Threads (all under rt->lock; docs/threading.md). */
    pthread_t acquirer;  /* holder of the slot from cgr_step_acquire, while ring.acquired */
    uint32_t waiters;    /* threads inside cgr_step_wait with the lock let go */
};

/* ---- lib/ ---- */
/*
 * Takes rt->lock. Fails with CGR_STATUS_WRONG_STATE, without blocking, when
 * the calling thread already holds a runtime lock: it is inside a step
 * function or a log callback, where only cgr_ctx_* calls are allowed.
 */
cgr_status cgr__lock(cgr_runtime *rt, const char *fn);
void cgr__unlock(cgr_runtime *rt);
/* CGR_STATUS_BUSY, reported as from `fn`, when another thread holds s's
 * acquired slot or waits on s; else OK (lock held). */
cgr_status cgr__step_check_idle(const cgr_step *s, const char *fn);
/* Destroys a step (rt->lock held, s not busy). *destroyed is 0 only when
 * the device could not be made current; the step is then left as it was. */
cgr_status cgr__step_destroy_locked(cgr_step *s, int *destroyed);
cgr_status cgr__check_runtime(const cgr_runtime *rt, const char *fn);
cgr_status cgr__check_step(const cgr_step *s, const char *fn);
cgr_status cgr__check_ctx(const cgr_ctx *c, const char *fn);
/* Makes rt's device current; *prev receives the one to restore. */
cgr_status cgr__device_enter(const cgr_runtime *rt, int *prev);
void cgr__device_leave(int prev);
void cgr__log(const cgr_runtime *rt, cgr_log_level level, const char *fmt, ...) CGR__PRINTF(3, 4);
double cgr__now_us(void);
/* Validation shared by create calls; pure C, unit-tested. */
cgr_status cgr__validate_options(const cgr_options *opt);
cgr_status cgr__validate_step_desc(const cgr_step_desc *d);
cgr_status cgr__tensor_bytes(const cgr_tensor_desc *t, size_t *bytes);
/* Bucket policy of dyn_dims[j] (validated); and one padding element in a dtype. */
cgr_status cgr__dyn_policy(const cgr_dyn_dim *dd, int j, cgr__bucket_policy *p);
cgr_status cgr__pad_bytes(cgr_dtype t, double v, unsigned char out[8], int *nonzero);

/* ---- allocator/ ---- */
cgr_status cgr__step_alloc_io(cgr_step *s);
void cgr__step_free_io(cgr_step *s);
static inline unsigned char *cgr__slot_host(const cgr_step *s, uint32_t slot)
{
    return s->pinned + (size_t)slot * s->slot_stride;
}
static inline unsigned char *cgr__slot_dev(const cgr_step *s, uint32_t slot)
{
    return s->pinned_dev + (size_t)slot * s->slot_stride;
}

/* How the host waits for the last run on a slot (replay/run.c). */
#define CGR__SIG_EAGER 0 /* its event done[slot] */
#define CGR__SIG_FLAG 1  /* the slot's flag word; graph_done tells of failures */
#define CGR__SIG_GRAPH 2 /* graph_done: a graph without staging kernels */

/* Bytes of a step's sig_dev block (see struct cgr_step) and where the slot word sits in it. */
#define CGR__SIG_BYTES(slots) ((size_t)(slots) * 32 + 64)
#define CGR__SIG_SLOT_WORD(slots) ((size_t)(slots) * 32)

/* Offset of the true dims inside each pinned slot (after the flag word). */
#define CGR__SLOT_DIMS_OFFSET 128
/* Offset of the two gate words of an armed run, go and expired (replay/arm.c). */
#define CGR__SLOT_GATE_OFFSET 64

/* ---- capture/ ---- */
/* Runs the step eagerly on `slot` (warm-up or fallback) with scratch from `plan`,
 * tracing and planning it on its first run. */
cgr_status cgr__run_eager(cgr_step *s, uint32_t slot, cgr__shape_plan *plan);
/* What a capture made (capture.c). */
typedef struct cgr__capture_out {
    cgr__graph *graph;    /* the new graph, or the offered one when updated */
    int updated;
    int update_failed;    /* updating the offer failed: it is the caller's to drop */
    int update_result;    /* its cudaGraphExecUpdateResult; -1 for another error */
    char update_text[200];
    double capture_us, make_us;
} cgr__capture_out;
/*
 * Captures the step's current shape with scratch from `plan`. With `offer`,
 * first tries cudaGraphExecUpdate on its executables; when that fails, says
 * so in out and instantiates a new graph (the offer is then the caller's to
 * free). On failure out->graph is NULL.
 */
cgr_status cgr__capture(cgr_step *s, cgr__shape_plan *plan, cgr__graph *offer, cgr__capture_out *out);
/* Destroys a graph's executables (in-flight ones are freed by CUDA once done) and frees it. */
void cgr__graph_free(cgr__graph *g);
void cgr__plan_reset(cgr__shape_plan *p);
void cgr__plan_destroy(cgr__shape_plan *p);
/* Counts the graph's nodes by type into `out`, logs a summary and writes a
 * DOT file when a dump directory is set (capture/dump.c). */
void cgr__graph_report(cgr_step *s, cudaGraph_t g, cgr__graph *out);
/* What went wrong in a capture, gathered by capture.c for diagnose.c. */
typedef struct cgr__capture_fault {
    int seen_err;        /* cudaGetLastError() right after the step returned */
    int end_err;         /* cudaStreamEndCapture's result */
    cgr_status body;     /* what the step function (or cgr's staging) returned */
    char body_msg[512];  /* its last-error message */
} cgr__capture_fault;
/* Formats a failed capture into the last-error message; returns CAPTURE_FAILED. */
cgr_status cgr__capture_failed(const cgr_step *s, const cgr__capture_fault *f);
/* Library handles (capture/handles.c). */
void cgr__handles_destroy(cgr_runtime *rt);
/* Ends a run's RNG use: checks the count and enqueues the offset advance. */
cgr_status cgr__philox_finish(cgr_ctx *c);
void cgr__philox_free(cgr_step *s);
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

/* ---- replay/ ---- */
/* Launches g for `slot`, pointing its staging at the slot first where the
 * last launch left it elsewhere; a gated graph's gate is opened first, or
 * closed when `ahead` (an armed run); rt->lock held, device entered. */
cgr_status cgr__launch_graph(cgr_step *s, struct cgr__graph *g, uint32_t slot, int ahead);
/* Armed runs (replay/arm.c); rt->lock held. arm_go opens the gate of the
 * armed run on `slot` and returns 1 when that run had expired (it must be
 * launched again); arm_drop lets the step's armed run through unlaunched,
 * if it has one. */
int cgr__arm_go(cgr_step *s, uint32_t slot);
/* The slot's gate before a launch: go = 1 passes at once, 0 waits for the host. */
void cgr__gate_set(cgr_step *s, uint32_t slot, int go);
void cgr__arm_drop(cgr_step *s);
/* cudaStreamSynchronize of the runtime's stream, after letting every
 * step's armed run through: how cgr itself waits for its stream. */
cudaError_t cgr__sync_stream(cgr_runtime *rt);
/* Carries out a decision other than REPLAY on `slot` (replay/dispatch.c) and
 * says what the run was in *action (cgr_run_action); rt->lock held, device entered. */
cgr_status cgr__run_miss(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                         uint8_t *action);
/* Every tensor's shape for the run (what the step sees) from the bucket; and
 * the slot's packed inputs spread to the bucket, with the true dims stored. */
void cgr__apply_shape(cgr_step *s, const int64_t *bucket, const int64_t *true_dims);
void cgr__stage_inputs(cgr_step *s, uint32_t slot, const int64_t *true_dims);
/* Packs a waited run's outputs to their true shape (once per run); rt->lock held. */
void cgr__outputs_compact(cgr_step *s, uint32_t slot, uint64_t ticket);
size_t cgr__output_bytes(const cgr_step *s, uint32_t slot, int index);
/* Bytes of a tensor with its dynamic axes at vals (the step's n_dyn values;
 * unused when the tensor has none). */
size_t cgr__tensor_bytes_at(const cgr__tensor *t, const int64_t *vals);

/* ---- comm/ (multi-GPU) ---- */
/*
 * Called by replay/run.c after every capture attempt of a step, with the
 * attempt's status (CGR_STATUS_OK when the graph was made). With an NCCL
 * communicator attached, every rank learns whether all ranks captured and
 * the result is the same on all of them, so that no rank launches a graph
 * whose collectives a peer will never join. Without one it returns local.
 */
cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local);
/* Releases rt's NCCL attachment, if any (the user's communicator is left alone);
 * called by cgr_runtime_destroy once the steps and their graphs are gone. */
void cgr__comm_release(cgr_runtime *rt);

#endif
