/* cgr__prof: the CUPTI activity collector behind cgr's profile window
 * (replay/profile.c, cgr_options.profile) and cgr-bench's profiler
 * (bench/prof/prof.h computes its figures from these records).
 *
 * It gathers what the GPU did inside a "window": the kernel, memcpy and
 * memset activity records whose start lies in it, sorted by start with the
 * kernel names resolved, and, as flags ask, which run launched each record
 * and the host ranges. prof_report.h turns them into figures and reports.
 *
 * Usage, as the profile window does it:
 *
 *     cgr__prof *p; char err[256];
 *     if (cgr__prof_create(&p, CGR__PROF_CORRELATE, err, sizeof err) != CGR__PROF_OK)
 *         { report err; }
 *     cgr__prof_begin(p);
 *     for (i = 0; i < runs; i++) {
 *         cgr__prof_now(p, &run[i].begin); cgr__prof_push(p, i);
 *         launch_run(i);
 *         cgr__prof_pop(p); cgr__prof_now(p, &run[i].end);
 *     }
 *     cudaStreamSynchronize(stream);        // the caller synchronizes
 *     cgr__prof_window w; cgr__prof_end(p, &w);
 *     ... w.recs, w.links: prof_report.h's sums ...
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
 *  - libcgr does not link CUPTI: cgr__prof_create loads it (dynload.h, with
 *    CGR_CUPTI_LIBRARY naming another file) and fails with
 *    CGR__PROF_ENOLIB, the message naming the files tried, when it cannot;
 *    in a build without CUPTI's headers every call fails that way.
 *  - cgr__prof_destroy detaches CUPTI (cgr__cupti_detach): a process that
 *    keeps CUPTI's activity tracing pays more host time for every later
 *    cudaGraphLaunch (docs/benchmarks.md, "CUPTI attached slows every later
 *    launch").
 */
#ifndef CGR_PROF_H
#define CGR_PROF_H

#include <stddef.h>
#include <stdint.h>

#include "prof_report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes; cgr__prof_errmsg() says more. cgr-bench's profiler passes
 * them through beside codes of its own (bench/prof/prof.h), which it checks
 * are none of these. */
enum {
    CGR__PROF_OK = 0,
    CGR__PROF_ECUPTI = -2,  /* a CUPTI call failed (see cgr__prof_errmsg) */
    CGR__PROF_ENOMEM = -3,  /* out of memory */
    CGR__PROF_ESTATE = -4,  /* call out of order (e.g. cgr__prof_end without begin) */
    CGR__PROF_EBUSY = -6,   /* another cgr__prof already exists in this process */
    CGR__PROF_ENOLIB = -7,  /* CUPTI could not be loaded (or cgr was built without it) */
};

enum {
    /* Also record which CUDA API call each run made (the RUNTIME and DRIVER
     * activity kinds, and EXTERNAL_CORRELATION): cgr__prof_push/pop then
     * tag every call in between, and cgr__prof_window.links gives the tags. */
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

/* One window. The arrays stay valid until the next cgr__prof_begin or
 * cgr__prof_destroy. */
typedef struct cgr__prof_window {
    uint64_t start;            /* cgr__prof_begin's timestamp (ns, CUPTI's
                                  clock); the records start between it and
                                  cgr__prof_end's */
    uint64_t dropped;          /* records lost: the store's cap, CUPTI's own
                                  dropped count, or unreadable records. If
                                  nonzero the figures are too low. */

    /* The records, sorted by start, with kernel names resolved
     * (names[rec->name_id], n_names of them). */
    const cgr__prof_rec *recs;
    size_t n;
    const char *const *names;
    size_t n_names;
    /* CGR__PROF_CORRELATE: which CUDA API call (correlation id) was made
     * under which pushed id (stored in .run as given to cgr__prof_push).
     * The caller may reorder the array. */
    cgr__prof_link *links;
    size_t n_links;

    /* CGR__PROF_RANGES: the host ranges, joined by cgr__prof_pair_ranges;
     * those begun in the window but still open at its end, left out; and
     * the ends lost past CGR__PROF_MAX_MARKS or to memory. */
    const cgr__prof_range *ranges;
    size_t n_ranges;
    uint64_t ranges_open, ranges_dropped;
} cgr__prof_window;

/* Enables the CUPTI activity kinds CONCURRENT_KERNEL, MEMCPY and MEMSET (and
 * those that the CGR__PROF_* flags ask for) and registers the buffer
 * callbacks. On failure *out is NULL and err (if not NULL) holds a
 * message. */
int cgr__prof_create(cgr__prof **out, unsigned flags, char *err, size_t errlen);

/* A capture diagnosis's watch of the CUDA API (capture/watch.c) takes
 * CUPTI for itself: 1 when no profiler exists (none can be created until
 * cgr__prof_watch_end), 0 when one does. Built with CUPTI only. */
int cgr__prof_watch_begin(void);
void cgr__prof_watch_end(void);

/*
 * Detaches CUPTI from the process (cuptiFinalize) where CUPTI asks for it:
 * from a callback at the exit of a CUDA runtime API call, so that no other
 * thread's CUDA call is inside CUPTI while it is torn down. It subscribes
 * a callback of its own (so the caller must hold no subscriber), makes one
 * runtime call, whose exit (or an earlier exit on another thread)
 * detaches, and returns once CUPTI is detached. CUPTI must have been
 * loaded (cgr__cupti_load). Built with CUPTI only.
 */
void cgr__cupti_detach(void);

/* Detaches CUPTI, frees, and sets *p to NULL. Safe with p == NULL or *p == NULL. */
void cgr__prof_destroy(cgr__prof **p);

/* Starts a window: takes the start timestamp and discards the records
 * gathered so far; records of work that started before it are ignored even
 * when CUPTI delivers them later. It does not flush CUPTI: after a flush,
 * CUPTI stalls the next launch while it sets up a new buffer (tenths of a
 * millisecond). cgr__prof_end flushes, so put some GPU work (a warm-up step)
 * between cgr__prof_end and the next cgr__prof_begin, or that stall lands on
 * the first launch of the next window (it shows in wall time, not in the
 * records' durations). A second cgr__prof_begin without cgr__prof_end
 * restarts the window. */
int cgr__prof_begin(cgr__prof *p);

/* Ends the window. The caller must have synchronized the device (e.g.
 * cudaDeviceSynchronize) first, or the last records may be missing. Takes
 * the end timestamp, forces a flush and gives in *out the records whose
 * start lies in [begin, end], and the tags. *out is written only on
 * success. */
int cgr__prof_end(cgr__prof *p, cgr__prof_window *out);

/* CUPTI's clock now, in ns: the clock of the records' start and end, so a
 * host moment taken with it can be set against the GPU timeline. */
int cgr__prof_now(cgr__prof *p, uint64_t *ns);

/* Tags the calling thread's CUDA API calls with `id` until cgr__prof_pop
 * (CGR__PROF_CORRELATE). Cheap: no flush, no allocation. */
int cgr__prof_push(cgr__prof *p, uint64_t id);
int cgr__prof_pop(cgr__prof *p);

/* The message for the last error on p ("" if none). */
const char *cgr__prof_errmsg(const cgr__prof *p);

#ifdef __cplusplus
}
#endif

#endif /* CGR_PROF_H */
