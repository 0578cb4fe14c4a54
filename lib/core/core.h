/*
 * The runtime's objects: what a runtime, a step and a step function's
 * context hold, shared by every layer above this one (docs/architecture.md).
 * Only the fields are here and the few calls every layer makes on them
 * (the lock, handle checks, the device, logging, the clock); each layer
 * declares its own work on them in its own header.
 */
#ifndef CGR_CORE_H
#define CGR_CORE_H

#include <pthread.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "arena.h"
#include "cgr/cgr.h"
#include "check.h"
#include "persist.h"
#include "planner.h"
#include "ring.h"

/* Owned by the layers above; the objects here only point at them. */
struct cgr__graph;
struct cgr__shapes;
struct cgr__comm;
struct cgr__profile;

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

/* bytes rounded up to CGR__ALIGN, as a staging slot lays out its tensors. */
static inline size_t cgr__align_up(size_t bytes)
{
    return (bytes + CGR__ALIGN - 1) & ~(size_t)(CGR__ALIGN - 1);
}
/* cuBLAS workspace per step run; the size cuBLAS recommends for Hopper. */
#define CGR__CUBLAS_WORKSPACE ((size_t)32 << 20)

struct cgr_runtime {
    uint32_t magic;
    cgr_options opt;
    cudaStream_t stream;
    /* Forks the calling thread's per-thread default stream off `stream` and
     * joins it back around every call of a step function (capture/ctx.c). */
    cudaEvent_t join;
    cgr__arena arena;
    cgr__persist persist;
    cudaMemPool_t trace_pool;   /* serves scratch during the tracing warm-up */
    void *cublas;               /* cublasHandle_t, created on first use */
    void *cudnn;                /* cudnnHandle_t, created on first use */
    struct cgr_step *steps;     /* live steps (singly linked) */
    /* The run counters of destroyed steps: cgr_runtime_get_stats adds the live ones'. */
    cgr_runtime_stats gone;
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
    cgr__trace trace;     /* with the tracing run's real pointers */
    /* 1 once a tracing run's scratch is planned into the arena. A tracing
     * run also completes when the arena cannot back the plan (cgr__run_eager):
     * it stays 0, and the shape's runs keep taking scratch from the tracing
     * pool. */
    int planned;
    /*
     * Why the arena could not back the plan (the message of
     * CGR_STATUS_ARENA_LIMIT or OUT_OF_MEMORY); empty while it could. Kept
     * for the shape's capture run, which fails with it instead of capturing:
     * a failure found there is agreed with the peers like any other, so
     * that no rank runs a shape eagerly while another captures it.
     */
    char unbacked[256];
    /* Philox counters one run reserves (capture/rng.c), fixed by the first run. */
    uint64_t philox_per_run;
    int philox_known;
} cgr__shape_plan;

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
    char name[CGR_MAX_NAME + 1];
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
} cgr__slot_run;

struct cgr_step {
    uint32_t magic;
    struct cgr_runtime *rt;
    struct cgr_step *next;
    char name[CGR_MAX_NAME + 1];
    /* name with every character unsafe in a file name as '_': for the files it names
     * (graph dumps, profile reports), which must stay inside their directory */
    char file_name[CGR_MAX_NAME + 1];
    cgr_step_fn fn;
    int fn_cuda_error;          /* cudaGetLastError() as the step function returned (ctx.c) */
    const char *api_fn;         /* the public call submitting the current run (replay/run.c) */
    void *user;
    int n_in, n_out;
    cgr__tensor in[CGR_MAX_TENSORS];
    cgr__tensor out[CGR_MAX_TENSORS];
    /* Pinned staging: slots back to back, each slot_stride bytes. */
    unsigned char *pinned;     /* host view */
    unsigned char *pinned_dev; /* device view of the same memory */
    size_t slot_stride;
    cudaEvent_t done[CGR_MAX_SLOTS]; /* recorded when an eager run on the slot ends */
    cudaEvent_t graph_done;          /* recorded by every graph of the step, as its last node */
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
    uint64_t sig_expect[CGR_MAX_SLOTS];   /* flag value that run will publish: the flag
                                             graph runs launched on the slot so far */
    uint64_t graph_runs;                  /* graph launches of the step so far */
    uint64_t sig_graph[CGR_MAX_SLOTS];    /* graph_runs after the slot's last graph launch */
    cgr__ring ring;
    /* Armed runs (capture/gate.c): graphs begin with a gate; the graph
     * launched ahead on the acquired slot, NULL when it is not armed. */
    int armable;
    struct cgr__graph *armed;          /* capture/capture.h */
    int64_t armed_bucket[CGR_MAX_DYN_DIMS]; /* its bucketed dims */
    /* Runs before this ticket cannot be read: an armed run launched on their
     * slot may overwrite it whether or not it is ever committed. */
    uint64_t readable_from;
    int64_t run_dims[CGR_MAX_DYN_DIMS];     /* the acquired run's true dims (cgr_ctx_dim) */
    /*
     * Shapes (replay/shapes.h decides what each run does). A step without
     * dynamic dims has one shape and takes the same path.
     */
    int n_dyn;                          /* their names and bounds: the table's */
    struct cgr__shapes *shapes;         /* the step's shape table (replay/shapes.h) */
    cgr__shape_plan *plans;             /* the scratch plan of each shape-table entry */
    int64_t *dims_dev;                  /* the run's true dims on the device */
    int64_t cur_bucket[CGR_MAX_DYN_DIMS];
    cgr__slot_run slot_run[CGR_MAX_SLOTS];
    /* Graph-safe RNG (capture/rng.c): device state and its host mirror for
     * (re)seeding. */
    cgr_philox_state *philox_dev;
    cgr_philox_state philox_init;
    cgr_step_stats stats;
    /* The profile window (replay/profile.c) while it waits or collects; NULL
     * otherwise, so that a replay pays one test of it. */
    struct cgr__profile *profile;
    int uses_nccl;       /* called cgr_ctx_nccl since the communicator was attached (comm/) */
    uint64_t graphs_reported; /* graphs captured so far; capture/dump.c numbers its files by it */
    /* Threads (all under rt->lock; docs/threading.md). */
    pthread_t acquirer;  /* holder of the slot from cgr_step_acquire, while ring.acquired */
    uint32_t waiters;    /* threads inside cgr_step_wait with the lock let go */
};

/*
 * Whether the step's captures are agreed on with NCCL peers (comm/agree.c):
 * it asked for the attached communicator. Then every rank must take the
 * same action at each run, which decides what a rank may do on its own.
 */
static inline int cgr__step_has_peers(const struct cgr_step *s)
{
    return s->uses_nccl && s->rt->comm != NULL;
}

static inline unsigned char *cgr__slot_host(const cgr_step *s, uint32_t slot)
{
    return s->pinned + (size_t)slot * s->slot_stride;
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
/* Offset of the two gate words of an armed run, go and expired (capture/gate.c). */
#define CGR__SLOT_GATE_OFFSET 64

/*
 * Takes rt->lock. Fails with CGR_STATUS_WRONG_STATE, without blocking, when
 * the calling thread already holds a runtime lock: it is inside a step
 * function or a log callback, where only cgr_ctx_* calls are allowed.
 */
cgr_status cgr__lock(cgr_runtime *rt, const char *fn);
void cgr__unlock(cgr_runtime *rt);
/* Handle checks at the API edge: a NULL or a pointer without cgr's magic word. */
cgr_status cgr__check_runtime(const cgr_runtime *rt, const char *fn);
cgr_status cgr__check_step(const cgr_step *s, const char *fn);
cgr_status cgr__check_ctx(const cgr_ctx *c, const char *fn);
/* Makes rt's device current; *prev receives the one to restore. */
cgr_status cgr__device_enter(const cgr_runtime *rt, int *prev);
/* Restores prev after code that may have changed the current device (a step function). */
void cgr__device_leave(int prev);
/*
 * Restores prev after code that cannot change the current device (a graph
 * launch): only enter's own switch needs undoing, which saves leave's
 * cudaGetDevice on the replay path.
 */
void cgr__device_undo(const cgr_runtime *rt, int prev);
void cgr__log(const cgr_runtime *rt, cgr_log_level level, const char *fmt, ...) CGR__PRINTF(3, 4);
double cgr__now_us(void);

#endif
