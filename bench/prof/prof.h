/* prof: cgr-bench's CUPTI profiler, built on libcgr's own collector
 * (lib/base/profiler.h, the code behind cgr_options.profile), so the bench
 * and the library measure with the same records; the collector's notes
 * (one per process, one thread, CUPTI's host cost, the detach at destroy)
 * hold for prof as well.
 *
 * It measures what the GPU did inside a "window" of a benchmark
 * (bench/timing.h has the measurement rules): GPU busy time per step is
 * the sum of the durations of the kernel, memcpy and memset records whose
 * start lies in the window; the overhead figure is wall / busy. It also
 * keeps the last window's records for a top-kernels table and for a
 * Chrome / Perfetto JSON trace of several windows. Usage:
 *
 *     prof *p; char err[256];
 *     if (prof_create(&p, err, sizeof err) != PROF_OK) { report err; }
 *     ... warm up, cudaDeviceSynchronize() ...
 *     prof_begin(p);
 *     for (i = 0; i < steps; i++) run_one_step();
 *     cudaDeviceSynchronize();              // the caller synchronizes
 *     prof_window w; prof_end(p, steps, &w);
 *     prof_top_kernels(p, top, 10, &n);
 *     prof_trace_add(p, "graph", 2);        // optional
 *     prof_trace_write(p, "trace.json");    // optional, after all windows
 *     prof_destroy(&p);
 */
#ifndef CGR_BENCH_PROF_H
#define CGR_BENCH_PROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. Negative is an error; PROF_WTRUNC is a warning. The
 * collector's codes pass through unchanged; the three of prof's own take
 * values the collector does not use (prof.c checks). */
enum {
    PROF_OK = CGR__PROF_OK,
    PROF_WTRUNC = 1,             /* prof_trace_add: the trace hit its size cap; some
                                    events were left out (the rest is valid) */
    PROF_EINVAL = -1,            /* prof_end: steps < 1 */
    PROF_ECUPTI = CGR__PROF_ECUPTI,   /* a CUPTI call failed (see prof_errmsg) */
    PROF_ENOMEM = CGR__PROF_ENOMEM,   /* out of memory */
    PROF_ESTATE = CGR__PROF_ESTATE,   /* call out of order (e.g. prof_end without begin) */
    PROF_EIO = -5,               /* writing the trace file failed */
    PROF_EBUSY = CGR__PROF_EBUSY,     /* another collector already exists in this process */
    PROF_ENOLIB = CGR__PROF_ENOLIB,   /* CUPTI could not be loaded (or cgr was built without it) */
};

/* Caps that keep the trace's memory bounded (a window's records are
 * bounded by the collector's CGR__PROF_MAX_RECORDS). */
#define PROF_TRACE_MAX_EVENTS 2000000u     /* events in one trace file */
#define PROF_TRACE_MAX_BYTES (768u << 20)  /* bytes of JSON in one trace */

typedef struct prof prof; /* opaque */

/* The result of one measurement window. "per step" figures are the window
 * totals divided by `steps`. Times are in microseconds, from CUPTI's
 * timestamps (ns). */
typedef struct prof_window {
    double busy_us;            /* per step: sum of kernel + memcpy + memset
                                  durations (overlapping work counted twice) */
    double busy_union_us;      /* per step: length of the union of those
                                  intervals (overlap counted once); the better
                                  figure when kernels overlap, e.g. with
                                  programmatic dependent launch */
    double kernel_us;          /* per step: sum of kernel durations */
    double kernels_per_step;   /* kernels / steps */
    double memcpys_per_step;   /* memcpys / steps */

    uint64_t kernels;          /* totals over the window */
    uint64_t memcpys;
    uint64_t memsets;
    uint64_t records;          /* records counted in the window */
    const cgr__prof_rec *recs; /* they, in start order (ns, CUPTI clock);
                                  valid until the next prof_begin */
    uint64_t dropped;          /* records lost: the store's cap, CUPTI's own
                                  dropped count, or unreadable records. If
                                  nonzero the figures are too low. */
} prof_window;

/* A row of the top-kernels table (prof_report.h): names demangled when a
 * demangler is already in the process (libstdc++'s __cxa_demangle),
 * otherwise as CUPTI gives them (often mangled). */
typedef cgr__prof_kernel prof_kernel_stat;

/* Creates the collector (cgr__prof_create). On failure *out is NULL and err
 * (if not NULL) holds a message. */
int prof_create(prof **out, char *err, size_t errlen);

/* Detaches CUPTI, frees, and sets *p to NULL. Safe with p == NULL or
 * *p == NULL. */
void prof_destroy(prof **p);

/* Starts a window (cgr__prof_begin, which says why to run a warm-up step
 * between prof_end and the next prof_begin); the last window's records go. */
int prof_begin(prof *p);

/* Ends the window (cgr__prof_end: synchronize the device first) and sums its
 * records per step; steps must be >= 1. out may be NULL (the window is
 * still kept, until the next prof_begin, for prof_top_kernels /
 * prof_trace_add). */
int prof_end(prof *p, int steps, prof_window *out);

/* The kernels of the last window, sorted by total time (descending).
 * Writes up to max entries to out and their number to *n. */
int prof_top_kernels(prof *p, prof_kernel_stat *out, int max, int *n);

/* Appends the last window's records to the in-memory trace as Chrome trace
 * events under process `pid`, named `label`. ts is relative to the start
 * of the first window added, so windows added one after another line up on
 * one timeline. Returns PROF_WTRUNC if the trace caps were hit. */
int prof_trace_add(prof *p, const char *label, int pid);

/* Writes {"traceEvents":[...],"displayTimeUnit":"ns"} to path (opens in
 * ui.perfetto.dev and chrome://tracing). May be called more than once. */
int prof_trace_write(prof *p, const char *path);

/* The message for the last error on p ("" if none). Never NULL. */
const char *prof_errmsg(const prof *p);

/*
 * The trace in memory, built one window at a time and written out later
 * (prof_trace_add, prof_trace_write); the unit suite checks it alone. Zero
 * it, set out.max_events / out.max_bytes, and free it with
 * prof_trace_buf_free.
 */
typedef struct prof_trace_buf {
    cgr__prof_trace_out out; /* out.f: a memory stream, opened by the first add */
    char *buf;               /* the stream's bytes (open_memstream) */
    size_t size;
} prof_trace_buf;

/*
 * Appends process pid, named name, with a thread per stream of recs[0..n)
 * and a slice per record (cgr__prof_trace_gpu). Returns 0; 1 when the caps
 * left records out (the trace stays valid); -1 when memory ran out, and
 * then the events of this call are taken back, or, should the memory
 * stream fail to seek back to where they began, the whole trace is dropped.
 */
int prof_trace_buf_add(prof_trace_buf *t, int pid, const char *name, const cgr__prof_rec *recs,
                       size_t n, const int32_t *run_of, const char *const *names,
                       size_t n_names, uint64_t origin);

/* {"traceEvents":[...],"displayTimeUnit":"ns"} with t's events to f; 0 or -1.
 * It flushes t's memory stream, which updates t->buf and t->size. */
int prof_trace_buf_write(prof_trace_buf *t, FILE *f);

/* Frees t's memory and zeroes it (caps included). */
void prof_trace_buf_free(prof_trace_buf *t);

#ifdef __cplusplus
}
#endif

#endif /* CGR_BENCH_PROF_H */
