/*
 * Error checks, graph capture helpers, the input generator and the cgr
 * calls every suite makes the same way (stats, uploads, the fast path's
 * step ops), shared by cgr-bench.
 *
 * A failed check prints "cgr-bench: error: file:line: call: reason" at once
 * and makes the calling function return -1 (or jump to its cleanup), so a
 * failing mode is reported and the next one still runs when the device is
 * healthy. Nothing here exits.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cgr/cgr.h"

#if defined(__GNUC__)
#define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BENCH_PRINTF(f, a)
#endif

/* Prints the message to stderr and keeps it as the last error. */
void bench_error(const char *fmt, ...) BENCH_PRINTF(1, 2);
/* The last message of bench_error(); "" when none since bench_clear_error(). */
const char *bench_last_error(void);
void bench_clear_error(void);
/* Nonzero (and reported) when e is not cudaSuccess. */
int bench_cuda_failed(cudaError_t e, const char *expr, const char *file, int line);
/* Nonzero (and reported, with cgr_last_error()) when s is not CGR_STATUS_OK. */
int bench_cgr_failed(cgr_status s, const char *expr, const char *file, int line);

#define CK(expr)                                                                           \
    do {                                                                                   \
        if (bench_cuda_failed((expr), #expr, __FILE__, __LINE__))                          \
            return -1;                                                                     \
    } while (0)
#define CK_GOTO(expr, label)                                                               \
    do {                                                                                   \
        if (bench_cuda_failed((expr), #expr, __FILE__, __LINE__))                          \
            goto label;                                                                    \
    } while (0)
#define CGR_CK(expr)                                                                       \
    do {                                                                                   \
        if (bench_cgr_failed((expr), #expr, __FILE__, __LINE__))                           \
            return -1;                                                                     \
    } while (0)
#define CGR_CK_GOTO(expr, label)                                                           \
    do {                                                                                   \
        if (bench_cgr_failed((expr), #expr, __FILE__, __LINE__))                           \
            goto label;                                                                    \
    } while (0)
#define TRY(expr)                                                                          \
    do {                                                                                   \
        if ((expr) != 0)                                                                   \
            return -1;                                                                     \
    } while (0)
#define TRY_GOTO(expr, label)                                                              \
    do {                                                                                   \
        if ((expr) != 0)                                                                   \
            goto label;                                                                    \
    } while (0)

/*
 * After a failed mode: clears a non-sticky CUDA error and returns 0 when
 * the device still works, -1 when the context is lost (later modes would
 * only fail the same way).
 */
int bench_device_recover(void);

/*
 * Output `index` of waited run `ticket`, copied by cgr_step_output() into a
 * buffer of the calling thread's that stays valid for its next 7 calls;
 * *bytes (may be NULL) gets its size. NULL on failure, with the error set.
 */
const void *bench_output(cgr_step *s, uint64_t ticket, int index, size_t *bytes);

/* xorshift64*: fresh, reproducible input data every step. */
typedef struct bench_rng {
    uint64_t s;
} bench_rng;
void rng_seed(bench_rng *r, uint64_t seed);
/* Uniform in [-1, 1), never exactly 0 (so a zeroed buffer never passes a check). */
void rng_fill(bench_rng *r, float *x, size_t n);
/* Uniform in 0..n-1, n >= 1 (for the small n of mode orders; the modulo's bias is negligible). */
uint32_t rng_below(bench_rng *r, uint32_t n);

/* True when got equals want exactly or within 1e-6 relative. */
int float_matches(float got, float want);

/*
 * cgr-bench --stats: prints the title (printf-style), then
 * cgr_runtime_get_stats of rt and cgr_step_get_stats of step (none when
 * NULL) to stdout as a readable block. Call it after a workload's last
 * step and before destroying the runtime.
 */
void bench_print_stats(const cgr_runtime *rt, const cgr_step *step, const char *title, ...)
    BENCH_PRINTF(3, 4);

/* Destroys *rt (NULL or none: nothing) and its steps; nonzero (and reported) on a failure. */
#define BENCH_RUNTIME_DESTROY(rt)                                                          \
    bench_cgr_failed(cgr_runtime_destroy(rt), "cgr_runtime_destroy", __FILE__, __LINE__)

/* Copies `bytes` of host data into a new persistent allocation *dev of rt. 0, or -1 (reported). */
int bench_upload(cgr_runtime *rt, const void *host, size_t bytes, void **dev);

/*
 * A mode of cgr's fast path (timing.h's step_ops): its state starts with a
 * bench_slot. Its prepare acquires `slot` (cgr_step_acquire) and writes the
 * inputs into it, outside the clocks; bench_slot_submit launches it
 * (cgr_step_launch), bench_slot_wait waits for it, and
 * bench_slot_after_warmup fails unless the step runs in `mode` after the
 * warm-up (`who` names it in the message).
 */
typedef struct bench_slot {
    cgr_step *step;
    cgr_slot slot;
    cgr_step_mode mode;
    char who[48];
} bench_slot;
int bench_slot_submit(void *self, long k);
int bench_slot_wait(void *self, long k);
int bench_slot_after_warmup(void *self);

/* ---- graph capture --------------------------------------------------- */

/* Begins a thread-local capture on s (the mode cgr itself uses). */
int capture_begin(cudaStream_t s);
/*
 * Ends the capture on s whatever happened, so the stream stays usable.
 * With body_ok != 0 and a valid capture, *g receives the graph; otherwise
 * the graph is destroyed and -1 returned.
 */
int capture_end(cudaStream_t s, int body_ok, cudaGraph_t *g);
/* Instantiates and uploads g, so the first timed launch pays for neither. */
int graph_instantiate(cudaGraph_t g, cudaStream_t s, cudaGraphExec_t *exec);

#endif
