/* prof: a small CUPTI activity-trace profiler for cgr-bench.
 *
 * It measures what the GPU did inside a "window" of a benchmark
 * (bench/timing.h has the measurement rules): GPU busy time per step is the sum of the durations of the
 * kernel, memcpy and memset activity records whose start lies in the window;
 * the overhead figure is wall / busy. It also keeps the last window's
 * records for a top-kernels table and for a Chrome / Perfetto JSON trace.
 *
 * Usage:
 *
 *     prof *p; char err[256];
 *     if (prof_create(&p, err, sizeof err) != PROF_OK) { report err; }
 *     ... warm up, cudaDeviceSynchronize() ...
 *     prof_begin(p, "graph");
 *     for (i = 0; i < steps; i++) run_one_step();
 *     cudaDeviceSynchronize();              // the caller synchronizes
 *     prof_window w; prof_end(p, steps, &w);
 *     prof_top_kernels(p, top, 10, &n);
 *     prof_trace_add(p, "graph", 2);        // optional
 *     prof_trace_write(p, "trace.json");    // optional, after all windows
 *     prof_destroy(&p);
 *
 * Notes:
 *  - CUPTI's buffer callbacks carry no user pointer, so at most one prof
 *    exists per process at a time (prof_create fails with PROF_EBUSY).
 *  - The functions are meant to be called from one thread; CUPTI delivers
 *    records on its own thread and that path is guarded by a mutex.
 *  - CUPTI tracing costs host CPU time (its worker thread and the launch
 *    hooks), so wall / host-CPU figures are best taken from a run without a
 *    prof, and busy figures from a run with one.
 *  - No function calls exit() or abort(); errors come back as PROF_E* codes
 *    and prof_errmsg() says what went wrong.
 */
#ifndef CGR_BENCH_PROF_H
#define CGR_BENCH_PROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. Negative is an error; PROF_WTRUNC is a warning. */
enum {
    PROF_OK = 0,
    PROF_WTRUNC = 1,   /* prof_trace_add: the trace hit its size cap; some
                          events were left out (the rest is valid) */
    PROF_EINVAL = -1,  /* bad argument */
    PROF_ECUPTI = -2,  /* a CUPTI call failed (see prof_errmsg) */
    PROF_ENOMEM = -3,  /* out of memory */
    PROF_ESTATE = -4,  /* call out of order (e.g. prof_end without begin) */
    PROF_EIO = -5,     /* writing the trace file failed */
    PROF_EBUSY = -6,   /* another prof already exists in this process */
};

/* Caps that keep memory bounded. Records beyond PROF_MAX_RECORDS in one
 * window are counted in prof_window.dropped. */
#define PROF_MAX_RECORDS (1u << 22)        /* ~4.2 M records, <= ~300 MB */
#define PROF_TRACE_MAX_EVENTS 2000000u     /* events in one trace file */
#define PROF_TRACE_MAX_BYTES (768u << 20)  /* bytes of JSON in one trace */

typedef struct prof prof; /* opaque */

/* The result of one measurement window. "per step" figures are the window
 * totals divided by `steps`. Times are in microseconds, from CUPTI's
 * timestamps (ns). */
typedef struct prof_window {
    char label[64];            /* the label given to prof_begin */
    int steps;                 /* as given to prof_end */

    double busy_us;            /* per step: sum of kernel + memcpy + memset
                                  durations (overlapping work counted twice) */
    double busy_union_us;      /* per step: length of the union of those
                                  intervals (overlap counted once); the better
                                  figure when kernels overlap, e.g. with
                                  programmatic dependent launch */
    double kernel_us;          /* per step: sum of kernel durations */
    double memcpy_us;          /* per step: sum of memcpy durations */
    double memset_us;          /* per step: sum of memset durations */

    double kernels_per_step;   /* kernels / steps */
    double memcpys_per_step;   /* memcpys / steps */
    double memsets_per_step;   /* memsets / steps */

    double span_us;            /* per step: (last end - first start) of the
                                  window's records / steps, i.e. the GPU
                                  timeline the window covered */
    double window_us;          /* whole window: prof_begin .. prof_end on
                                  CUPTI's clock (not per step) */

    uint64_t kernels;          /* totals over the window */
    uint64_t memcpys;
    uint64_t memsets;
    uint64_t records;          /* records counted in the window */
    uint64_t untimed;          /* records left out: CUPTI had no timestamps
                                  for them (start == end == 0 or end < start) */
    uint64_t dropped;          /* records lost: the store's cap, CUPTI's own
                                  dropped count, or unreadable records. If
                                  nonzero the figures are too low. */
} prof_window;

typedef struct prof_kernel_stat {
    char name[128];    /* demangled when a demangler is already in the
                          process (libstdc++'s __cxa_demangle), otherwise the
                          name CUPTI gives (often mangled); truncated with
                          "..." when longer */
    uint64_t calls;    /* launches in the window */
    double total_us;   /* total duration over the window */
    double mean_us;    /* total_us / calls */
    double share;      /* total_us / (sum of all kernel durations), 0..1 */
} prof_kernel_stat;

/* Enables the CUPTI activity kinds CONCURRENT_KERNEL, MEMCPY and MEMSET and
 * registers the buffer callbacks. On failure *out is NULL and err (if not
 * NULL) holds a message. */
int prof_create(prof **out, char *err, size_t errlen);

/* Disables the activity kinds, flushes, frees, and sets *p to NULL.
 * Safe with p == NULL or *p == NULL. */
void prof_destroy(prof **p);

/* Starts a window: takes the start timestamp and discards the records
 * gathered so far; records of work that started before it are ignored even
 * when CUPTI delivers them later. It does not flush CUPTI (unless built with
 * -DPROF_BEGIN_FLUSH=1): after any flush, CUPTI stalls the next launch by
 * 0.05-0.7 ms (measured on an H200) while it sets up a new buffer. prof_end
 * flushes, so put some GPU work (a warm-up step) between prof_end and the
 * next prof_begin, or that stall lands on the first launch of the next
 * window (it shows in wall time and span_us, not in busy_us). A second
 * prof_begin without prof_end restarts the window. label may be NULL. */
int prof_begin(prof *p, const char *label);

/* Ends the window. The caller must have synchronized the device (e.g.
 * cudaDeviceSynchronize) first, or the last records may be missing. Takes
 * the end timestamp, forces a flush and sums the records whose start lies in
 * [begin, end]. steps must be >= 1. out may be NULL (the window is still kept
 * for prof_top_kernels / prof_trace_add). */
int prof_end(prof *p, int steps, prof_window *out);

/* The kernels of the last window, sorted by total time (descending). Writes
 * up to max entries to out and their number to *n. */
int prof_top_kernels(const prof *p, prof_kernel_stat *out, int max, int *n);

/* Appends the last window's records to the in-memory trace as Chrome trace
 * events under process `pid`, named `label`. ts is relative to the start of
 * the first window added, so windows added one after another line up on one
 * timeline. Returns PROF_WTRUNC if the trace caps were hit. */
int prof_trace_add(prof *p, const char *label, int pid);

/* Writes {"traceEvents":[...],"displayTimeUnit":"ns"} to path (opens in
 * ui.perfetto.dev and chrome://tracing). May be called more than once. */
int prof_trace_write(const prof *p, const char *path);

/* CUPTI's clock now, in ns: the clock of the records' start and end, so a
 * host moment taken with it can be set against the GPU timeline. */
int prof_now(prof *p, uint64_t *ns);

/* The last window's records as intervals (ns, CUPTI clock), in start order:
 * start[i], end[i] for i < *n, at most max of them (*n says how many were
 * written; the window may hold more). */
int prof_intervals(const prof *p, uint64_t *start, uint64_t *end, size_t max, size_t *n);

/* The message for the last error on p ("" if none). Never NULL. */
const char *prof_errmsg(const prof *p);

/* A static name for a PROF_* code. */
const char *prof_strerror(int code);

#ifdef __cplusplus
}
#endif

#endif /* CGR_BENCH_PROF_H */
