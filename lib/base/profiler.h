/* cgr__prof: the CUPTI activity collector behind cgr's profile window
 * (replay/profile.c, cgr_options.profile) and cgr-bench's profiler
 * (bench/prof/prof.h is a thin layer over it).
 *
 * It measures what the GPU did inside a "window": GPU busy time per step is
 * the sum of the durations of the
 * kernel, memcpy and memset activity records whose start lies in the window;
 * the overhead figure is wall / busy. It also keeps the last window's
 * records for a top-kernels table and for a Chrome / Perfetto JSON trace.
 *
 * Usage:
 *
 *     cgr__prof *p; char err[256];
 *     if (cgr__prof_create(&p, 0, err, sizeof err) != CGR__PROF_OK) { report err; }
 *     ... warm up, cudaDeviceSynchronize() ...
 *     cgr__prof_begin(p, "graph");
 *     for (i = 0; i < steps; i++) run_one_step();
 *     cudaDeviceSynchronize();              // the caller synchronizes
 *     cgr__prof_window w; cgr__prof_end(p, steps, &w);
 *     cgr__prof_top_kernels(p, top, 10, &n);
 *     cgr__prof_trace_add(p, "graph", 2);        // optional
 *     cgr__prof_trace_write(p, "trace.json");    // optional, after all windows
 *     cgr__prof_destroy(&p);
 *
 * Notes:
 *  - CUPTI's buffer callbacks carry no user pointer, so at most one cgr__prof
 *    exists per process at a time (cgr__prof_create fails with CGR__PROF_EBUSY).
 *  - The functions are meant to be called from one thread; CUPTI delivers
 *    records on its own thread and that path is guarded by a mutex.
 *  - CUPTI tracing costs host CPU time (its worker thread and the launch
 *    hooks), so wall / host-CPU figures are best taken from a run without a
 *    cgr__prof, and busy figures from a run with one.
 *  - No function calls exit() or abort(); errors come back as CGR__PROF_E* codes
 *    and cgr__prof_errmsg() says what went wrong.
 *  - libcgr does not link CUPTI: cgr__prof_create loads it (dynload.h, with
 *    CGR_CUPTI_LIBRARY naming another file) and fails with
 *    CGR__PROF_ENOLIB, the message naming the files tried, when it cannot;
 *    in a build without CUPTI's headers every call fails that way.
 *  - cgr__prof_destroy detaches CUPTI (cuptiFinalize): a process that keeps
 *    CUPTI's activity tracing pays more host time for every later
 *    cudaGraphLaunch (capture/watch.c measured it).
 */
#ifndef CGR_PROF_H
#define CGR_PROF_H

#include <stddef.h>
#include <stdint.h>

#include "prof_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. Negative is an error; CGR__PROF_WTRUNC is a warning. */
enum {
    CGR__PROF_OK = 0,
    CGR__PROF_WTRUNC = 1,   /* cgr__prof_trace_add: the trace hit its size cap; some
                          events were left out (the rest is valid) */
    CGR__PROF_EINVAL = -1,  /* bad argument */
    CGR__PROF_ECUPTI = -2,  /* a CUPTI call failed (see cgr__prof_errmsg) */
    CGR__PROF_ENOMEM = -3,  /* out of memory */
    CGR__PROF_ESTATE = -4,  /* call out of order (e.g. cgr__prof_end without begin) */
    CGR__PROF_EIO = -5,     /* writing the trace file failed */
    CGR__PROF_EBUSY = -6,   /* another cgr__prof already exists in this process */
    CGR__PROF_ENOLIB = -7,  /* CUPTI could not be loaded (or cgr was built without it) */
};

/* cgr__prof_create flags. */
enum {
    /* Also record which CUDA API call each run made (the RUNTIME and DRIVER
     * activity kinds, and EXTERNAL_CORRELATION): cgr__prof_push/pop then
     * tag every call in between, and cgr__prof_links gives the tags. */
    CGR__PROF_CORRELATE = 1,
    /* Also record host ranges (cgr__prof_window.ranges): cgr's phases
     * (trace.h) first-hand, and the user's NVTX ranges and marks (CUPTI's
     * MARKER kind). NVTX reaches CUPTI only when the process loaded libcupti
     * as its NVTX injection (NVTX_INJECTION64_PATH, read at the first NVTX
     * call); without that, or if CUPTI refuses the kind, cgr's phases alone. */
    CGR__PROF_RANGES = 2,
};

/* Caps that keep memory bounded. Records beyond CGR__PROF_MAX_RECORDS in one
 * window are counted in cgr__prof_window.dropped. */
#define CGR__PROF_MAX_RECORDS (1u << 22)        /* ~4.2 M records, <= ~300 MB */
#define CGR__PROF_TRACE_MAX_EVENTS 2000000u     /* events in one trace file */
#define CGR__PROF_TRACE_MAX_BYTES (768u << 20)  /* bytes of JSON in one trace */
#define CGR__PROF_MAX_MARKS (1u << 16)          /* host range ends in one window (6 MB) */

/* The NVTX domain of cgr's own ranges (trace.c): CUPTI's records of them
 * are left out, as cgr__prof_phase has them already. */
#define CGR__PROF_NVTX_DOMAIN "cgr"

/* Nonzero while a CGR__PROF_RANGES window is open: trace.c then calls
 * cgr__prof_phase, from any thread, with a phase's name as it begins and
 * NULL as it ends. It never fails; marks past the cap are counted. */
extern int cgr__prof_phases_on;
void cgr__prof_phase(const char *name);

typedef struct cgr__prof cgr__prof; /* opaque */

/* The result of one measurement window. "per step" figures are the window
 * totals divided by `steps`. Times are in microseconds, from CUPTI's
 * timestamps (ns). */
typedef struct cgr__prof_window {
    char label[64];            /* the label given to cgr__prof_begin */
    int steps;                 /* as given to cgr__prof_end */

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
    double window_us;          /* whole window: cgr__prof_begin .. cgr__prof_end on
                                  CUPTI's clock (not per step) */

    uint64_t start, end;       /* the window on CUPTI's clock (ns): the
                                  timestamps cgr__prof_begin and cgr__prof_end
                                  took; its records start inside it */

    uint64_t kernels;          /* totals over the window */
    uint64_t memcpys;
    uint64_t memsets;
    uint64_t records;          /* records counted in the window */
    uint64_t untimed;          /* records left out: CUPTI had no timestamps
                                  for them (start == end == 0 or end < start) */
    uint64_t dropped;          /* records lost: the store's cap, CUPTI's own
                                  dropped count, or unreadable records. If
                                  nonzero the figures are too low. */

    /* CGR__PROF_RANGES: the host ranges, joined by cgr__prof_pair_ranges
     * (valid until the next cgr__prof_begin; cgr__prof_trace_add leaves
     * them out); those begun in the window but still open at its end, left
     * out; and the ends lost past CGR__PROF_MAX_MARKS or to memory. */
    const cgr__prof_range *ranges;
    size_t n_ranges;
    uint64_t ranges_open, ranges_dropped;
} cgr__prof_window;

/* A row of the top-kernels table (prof_report.h): names demangled when a
 * demangler is already in the process (libstdc++'s __cxa_demangle),
 * otherwise as CUPTI gives them (often mangled). */
typedef cgr__prof_kernel cgr__prof_kernel_stat;

/* Enables the CUPTI activity kinds CONCURRENT_KERNEL, MEMCPY and MEMSET (and
 * those that the CGR__PROF_* flags ask for) and registers the buffer
 * callbacks. On failure *out is NULL and err (if not NULL) holds a message. */
int cgr__prof_create(cgr__prof **out, unsigned flags, char *err, size_t errlen);

/* A capture diagnosis's watch of the CUDA API (capture/watch.c) takes
 * CUPTI for itself: 1 when no profiler exists (none can be created until
 * cgr__prof_watch_end), 0 when one does. Built with CUPTI only. */
int cgr__prof_watch_begin(void);
void cgr__prof_watch_end(void);

/* Disables the activity kinds, flushes, frees, and sets *p to NULL.
 * Safe with p == NULL or *p == NULL. */
void cgr__prof_destroy(cgr__prof **p);

/* Starts a window: takes the start timestamp and discards the records
 * gathered so far; records of work that started before it are ignored even
 * when CUPTI delivers them later. It does not flush CUPTI: after a flush,
 * CUPTI stalls the next launch while it sets up a new buffer (tenths of a
 * millisecond). cgr__prof_end flushes, so put some GPU work (a warm-up step)
 * between cgr__prof_end and the next cgr__prof_begin, or that stall lands on
 * the first launch of the next window (it shows in wall time and span_us,
 * not in busy_us). A second cgr__prof_begin without cgr__prof_end restarts
 * the window. label may be NULL. */
int cgr__prof_begin(cgr__prof *p, const char *label);

/* Ends the window. The caller must have synchronized the device (e.g.
 * cudaDeviceSynchronize) first, or the last records may be missing. Takes
 * the end timestamp, forces a flush and sums the records whose start lies in
 * [begin, end]. steps must be >= 1. out may be NULL (the window is still kept
 * for cgr__prof_top_kernels / cgr__prof_trace_add). */
int cgr__prof_end(cgr__prof *p, int steps, cgr__prof_window *out);

/* The kernels of the last window, sorted by total time (descending). Writes
 * up to max entries to out and their number to *n. */
int cgr__prof_top_kernels(cgr__prof *p, cgr__prof_kernel_stat *out, int max, int *n);

/* Appends the last window's records to the in-memory trace as Chrome trace
 * events under process `pid`, named `label`. ts is relative to the start of
 * the first window added, so windows added one after another line up on one
 * timeline. Returns CGR__PROF_WTRUNC if the trace caps were hit. */
int cgr__prof_trace_add(cgr__prof *p, const char *label, int pid);

/* Writes {"traceEvents":[...],"displayTimeUnit":"ns"} to path (opens in
 * ui.perfetto.dev and chrome://tracing). May be called more than once. */
int cgr__prof_trace_write(cgr__prof *p, const char *path);

/* CUPTI's clock now, in ns: the clock of the records' start and end, so a
 * host moment taken with it can be set against the GPU timeline. */
int cgr__prof_now(cgr__prof *p, uint64_t *ns);

/* The last window's records as intervals (ns, CUPTI clock), in start order:
 * start[i], end[i] for i < *n, at most max of them (*n says how many were
 * written; the window may hold more). */
int cgr__prof_intervals(cgr__prof *p, uint64_t *start, uint64_t *end, size_t max, size_t *n);

/* Tags the calling thread's CUDA API calls with `id` until cgr__prof_pop
 * (CGR__PROF_CORRELATE). Cheap: no flush, no allocation. */
int cgr__prof_push(cgr__prof *p, uint64_t id);
int cgr__prof_pop(cgr__prof *p);

/* The last window's records, sorted by start, with kernel names resolved
 * (names[rec->name_id], n_names of them); valid until the next window or
 * cgr__prof_destroy. */
int cgr__prof_records(cgr__prof *p, const cgr__prof_rec **recs, size_t *n,
                      const char *const **names, size_t *n_names);
/* The last window's tags: which CUDA API call (correlation id) was made
 * under which pushed id (stored in .run as given to cgr__prof_push). The
 * caller may reorder the array. */
int cgr__prof_links(cgr__prof *p, cgr__prof_link **links, size_t *n);

/* The message for the last error on p ("" if none). Never NULL. */
const char *cgr__prof_errmsg(const cgr__prof *p);

#ifdef __cplusplus
}
#endif

#endif /* CGR_PROF_H */
