/* prof: cgr-bench's CUPTI profiler, a thin layer over libcgr's own
 * collector (lib/base/profiler.h, the code behind cgr_options.profile):
 * the bench and the library measure with the same code.
 *
 * It measures what the GPU did inside a "window" of a benchmark
 * (bench/timing.h has the measurement rules): GPU busy time per step, kernel
 * counts, a top-kernels table and a Chrome / Perfetto trace. Usage:
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
 * lib/base/profiler.h documents every call and field; the names here are
 * those without the library's cgr__ prefix. CUPTI is loaded at prof_create
 * (CGR_CUPTI_LIBRARY names another file); prof_destroy detaches it.
 */
#ifndef CGR_BENCH_PROF_H
#define CGR_BENCH_PROF_H

#include "profiler.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    PROF_OK = CGR__PROF_OK,
    PROF_WTRUNC = CGR__PROF_WTRUNC,
    PROF_EINVAL = CGR__PROF_EINVAL,
    PROF_ECUPTI = CGR__PROF_ECUPTI,
    PROF_ENOMEM = CGR__PROF_ENOMEM,
    PROF_ESTATE = CGR__PROF_ESTATE,
    PROF_EIO = CGR__PROF_EIO,
    PROF_EBUSY = CGR__PROF_EBUSY,
    PROF_ENOLIB = CGR__PROF_ENOLIB,
};

#define PROF_MAX_RECORDS CGR__PROF_MAX_RECORDS
#define PROF_TRACE_MAX_EVENTS CGR__PROF_TRACE_MAX_EVENTS
#define PROF_TRACE_MAX_BYTES CGR__PROF_TRACE_MAX_BYTES

typedef cgr__prof prof;
typedef cgr__prof_window prof_window;
typedef cgr__prof_kernel_stat prof_kernel_stat;

static inline int prof_create(prof **out, char *err, size_t errlen)
{
    return cgr__prof_create(out, 0, err, errlen);
}
static inline void prof_destroy(prof **p)
{
    cgr__prof_destroy(p);
}
static inline int prof_begin(prof *p, const char *label)
{
    return cgr__prof_begin(p, label);
}
static inline int prof_end(prof *p, int steps, prof_window *out)
{
    return cgr__prof_end(p, steps, out);
}
static inline int prof_top_kernels(prof *p, prof_kernel_stat *out, int max, int *n)
{
    return cgr__prof_top_kernels(p, out, max, n);
}
static inline int prof_trace_add(prof *p, const char *label, int pid)
{
    return cgr__prof_trace_add(p, label, pid);
}
static inline int prof_trace_write(prof *p, const char *path)
{
    return cgr__prof_trace_write(p, path);
}
static inline int prof_now(prof *p, uint64_t *ns)
{
    return cgr__prof_now(p, ns);
}
static inline int prof_intervals(prof *p, uint64_t *start, uint64_t *end, size_t max,
                                 size_t *n)
{
    return cgr__prof_intervals(p, start, end, max, n);
}
static inline const char *prof_errmsg(const prof *p)
{
    return cgr__prof_errmsg(p);
}

#ifdef __cplusplus
}
#endif

#endif /* CGR_BENCH_PROF_H */
