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

/*
 * Handles carry a magic word so a destroyed or foreign pointer is refused
 * (where its memory still reads back) instead of being used.
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

struct cgr_ctx {
    uint32_t magic;
    struct cgr_runtime *rt;
    struct cgr_step *step;
    cgr__ctx_mode mode;
    size_t next;         /* index of the next scratch request */
    uint32_t clock;      /* alloc/free events so far in this run */
    cgr_status error;    /* first scratch error of the run; fails the run */
    int cublas_bound;    /* workspace already set for this run */
    uint64_t philox_used; /* counters reserved so far in this run */
};

/* A step input or output. */
typedef struct cgr__tensor {
    cgr_tensor_desc desc;
    char name[64];
    size_t bytes;
    void *dev;            /* static device buffer */
    size_t slot_offset;   /* offset inside each pinned slot */
} cgr__tensor;

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
    cudaEvent_t done[CGR_MAX_SLOTS]; /* recorded when a run on the slot ends */
    /*
     * Completion flags (replay/run.c). A graph whose outputs are staged by
     * the zero-copy kernel has that kernel also publish a per-slot sequence
     * number into the slot's flag word (at offset 0 of the slot); the host
     * waits for the number instead of for the graph's end. sig_dev holds
     * the device side: N sequence counters, then N block-arrival counters.
     */
    unsigned long long *sig_dev;
    int sig_flag;                         /* graph runs publish a flag */
    uint8_t sig_kind[CGR_MAX_SLOTS];      /* last run on the slot: 1 flag, 0 event */
    uint64_t sig_expect[CGR_MAX_SLOTS];   /* flag value that run will publish */
    uint64_t sig_runs[CGR_MAX_SLOTS];     /* flag-publishing runs launched per slot */
    cgr__ring ring;
    /* Scratch: the trace of the first warm-up, with planned offsets. */
    cgr__trace trace;
    void **trace_ptrs;  /* real pointers of the tracing run, by request */
    size_t trace_ptrs_cap;
    int planned;
    /* Replay: one executable per slot (see capture.c for why). */
    cudaGraphExec_t exec[CGR_MAX_SLOTS];
    /* Graph-safe RNG (capture/rng.c): device state, its host mirror for
     * (re)seeding, and the counters one run reserves (fixed after run 1). */
    cgr_philox_state *philox_dev;
    cgr_philox_state philox_init;
    uint64_t philox_per_run;
    int philox_known;
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
/* 1 when another thread holds s's acquired slot or waits on s (lock held). */
int cgr__step_busy(const cgr_step *s);
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

/* ---- capture/ ---- */
/* Runs the step eagerly on `slot` (warm-up or fallback). */
cgr_status cgr__run_eager(cgr_step *s, uint32_t slot);
/* Captures the step and instantiates one executable per slot. */
cgr_status cgr__capture(cgr_step *s);
void cgr__release_graphs(cgr_step *s);
/* Counts the graph's nodes by type into the step's stats, logs a summary
 * and writes a DOT file when a dump directory is set (capture/dump.c). */
void cgr__graph_report(cgr_step *s, cudaGraph_t g);
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
/* Calls the user's step function with a context in `mode`. */
cgr_status cgr__call_step(cgr_step *s, cgr__ctx_mode mode);
/*
 * Fails the run of `c` with `s` (the first failure of the run stands) and
 * returns `s`. For failures of cgr's own work inside a step (scratch, the
 * library handles, the RNG state): the run then reports that status and its
 * message, not CGR_STATUS_STEP_FAILED, since the step itself did nothing wrong.
 */
cgr_status cgr__ctx_fail(cgr_ctx *c, cgr_status s);

/* ---- comm/ (multi-GPU) ---- */
/*
 * Called by replay/run.c after every capture attempt of a step, with the
 * attempt's status (CGR_STATUS_OK when the graph was made). With an NCCL
 * communicator attached, every rank learns whether all ranks captured and
 * the result is the same on all of them, so that no rank launches a graph
 * whose collectives a peer will never join. Without one it returns local.
 */
cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local);

#endif
