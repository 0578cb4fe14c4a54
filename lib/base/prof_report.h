/*
 * The arithmetic of a profile: plain C over arrays of GPU activity
 * records, host run records and host ranges, with no CUDA, no CUPTI and none of the
 * runtime's objects, so the unit suite checks every figure without a GPU.
 *
 * The collector (profiler.h) fills the records from CUPTI; the replay layer's
 * profile window (replay/profile.c) records the runs and calls these to
 * attribute records to runs, sum them per mode, reach the verdict and
 * write the three report files. All times are nanoseconds on CUPTI's
 * clock, which the host figures are taken on as well.
 */
#ifndef CGR_PROF_REPORT_H
#define CGR_PROF_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a record is. */
enum { CGR__PROF_KERNEL = 1, CGR__PROF_MEMCPY = 2, CGR__PROF_MEMSET = 3 };

/* One kernel, memcpy or memset as the GPU ran it. */
typedef struct cgr__prof_rec {
    uint64_t start, end;    /* ns, CUPTI clock */
    uint64_t bytes;         /* memcpy / memset */
    const char *cupti_name; /* kernel: CUPTI's name; the collector's, until the window ends */
    uint32_t name_id;       /* kernel: index into the names table once the window ended */
    uint32_t correlation;   /* the CUDA API call that launched it (CUPTI correlation id) */
    uint32_t stream;        /* CUPTI stream id */
    int32_t grid[3];
    uint16_t block[3];
    uint16_t regs;          /* kernel: registers per thread */
    uint32_t smem;          /* kernel: static + dynamic shared memory */
    uint32_t graph_id;      /* 0 if not launched from a graph */
    uint8_t kind;           /* CGR__PROF_* */
    uint8_t copy_kind;      /* memcpy: CUpti_ActivityMemcpyKind */
} cgr__prof_rec;

/* A CUDA API call made inside run `run`'s launch (CUPTI external correlation). */
typedef struct cgr__prof_link {
    uint32_t correlation;
    uint32_t run; /* index into the runs */
} cgr__prof_link;

/* Modes of a run in the window. */
enum { CGR__PROF_EAGER = 0, CGR__PROF_GRAPH = 1, CGR__PROF_MODES = 2 };

/* One run of the window, as the host saw cgr's launch call. */
typedef struct cgr__prof_run {
    uint64_t begin, end; /* ns, CUPTI clock: the launch call */
    uint64_t cpu_ns;     /* the calling thread's CPU time in it */
    uint8_t mode;        /* CGR__PROF_EAGER or CGR__PROF_GRAPH */
} cgr__prof_run;

/*
 * A host range: one of cgr's phases (the collector records them as cgr
 * enters and leaves them) or the user's NVTX range or mark (CUPTI's marker
 * records). Each is recorded as its two ends; cgr__prof_pair_ranges joins them.
 */
enum { CGR__PROF_RANGE_WHOLE = 0, CGR__PROF_RANGE_START = 1, CGR__PROF_RANGE_END = 2,
       CGR__PROF_RANGE_MARK = 3 };

typedef struct cgr__prof_range {
    uint64_t start, end; /* ns, CUPTI clock; an end's time is in start until joined */
    uint32_t tid;        /* the OS thread */
    uint32_t id;         /* the user's: CUPTI's marker id, shared by a start and its end */
    uint32_t seq;        /* order of recording: cgr's ends pair up by it, per thread */
    uint8_t what;        /* CGR__PROF_RANGE_START, _END or _MARK (an instant); joined: _WHOLE */
    uint8_t user;        /* 0: cgr's phase; 1: the user's NVTX */
    int16_t depth;       /* joined: nesting on its track, 0 outermost; -1: it ends after the
                            range it began in, so cannot nest in that track */
    char name[64];       /* starts and marks; cut to fit */
} cgr__prof_range;

/*
 * Joins the ends in r[0..n), in place: cgr's per thread, the last start
 * with the next end; the user's by id. An end without its start (begun
 * before the window) is dropped, and so is a start without its end,
 * counted in *open. The *n_out ranges and marks left are sorted by track
 * (cgr's, then the user's; by thread), start, longest first, with their
 * depth. 0, or -1 (r untouched) when a host allocation failed.
 */
int cgr__prof_pair_ranges(cgr__prof_range *r, size_t n, size_t *n_out, uint64_t *open);

/* Per-run figures of one mode, averaged over its runs. Times in us. */
typedef struct cgr__prof_mode {
    uint64_t runs;
    double wall_us;       /* from when the run could start (its launch call began, or
                             the GPU finished the run before, whichever is later) to
                             the end of its last GPU work or of its launch call */
    double cpu_us;        /* host CPU time in the launch call */
    double launch_us;     /* host wall time in the launch call */
    double busy_us;       /* sum of kernel + memcpy + memset durations */
    double busy_union_us; /* the union of their intervals (overlap counted once) */
    double kernel_us, memcpy_us, memset_us;
    double kernels, memcpys, memsets; /* per run */
    double idle_share;    /* 1 - busy_union / wall over the mode's runs: the launch-bound share */
} cgr__prof_mode;

/* A row of the top-kernels table. */
typedef struct cgr__prof_kernel {
    char name[128];  /* truncated with "..." */
    uint64_t calls;
    double total_us, mean_us;
    double share;    /* of all kernel time in the window, 0..1 */
} cgr__prof_kernel;

#define CGR__PROF_TOP 10

/* The verdicts (the values of the public cgr_profile_verdict). */
enum { CGR__PROF_UNKNOWN = 0, CGR__PROF_LAUNCH_BOUND = 1, CGR__PROF_GPU_BOUND = 2 };

typedef struct cgr__prof_summary {
    cgr__prof_mode mode[CGR__PROF_MODES];
    int verdict;           /* CGR__PROF_*_BOUND; UNKNOWN without an eager run */
    double speedup;        /* eager wall / graph wall per run; 0 when either is missing */
    cgr__prof_kernel top[CGR__PROF_TOP];
    int n_top;
    uint64_t records;      /* records attributed to a run */
    uint64_t by_time;      /* of which by time, for want of any correlation */
    uint64_t outside;      /* records of no run (another shape's, another thread's) */
    uint64_t dropped;      /* records CUPTI or the collector lost */
    uint64_t ranges;       /* host ranges in the trace (the caller's figures, as by_time) */
    uint64_t ranges_open;  /* ranges begun in the window and still open at its end: left out */
    uint64_t ranges_dropped; /* their marks lost to the cap or to memory */
} cgr__prof_summary;

/* The GPU must be idle more than this share of an eager run's wall for launch-bound. */
#define CGR__PROF_LAUNCH_BOUND_IDLE 0.5

/* The kernels of recs[0..n) (only those of a run when run_of is not NULL),
 * ranked by total time, then calls, then name: up to max rows into out.
 * Returns the rows written, or -1 when out of memory. */
int cgr__prof_rank_kernels(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                           const char *const *names, size_t n_names, cgr__prof_kernel *out,
                           int max);

/*
 * Sums of records added in start order, as a window's (cgr-bench's
 * profiler) or a run's (cgr__prof_summarize) figures need them. Zero it
 * before the first.
 */
typedef struct cgr__prof_tally {
    uint64_t ns[CGR__PROF_MEMSET + 1];    /* durations by CGR__PROF_KERNEL.. _MEMSET */
    uint64_t count[CGR__PROF_MEMSET + 1]; /* records by kind */
    uint64_t busy;                        /* all durations */
    uint64_t union_closed;                /* the union of the intervals before the open one */
    uint64_t open_start, open_end;        /* the union's interval still open: as records come
                                             in start order, open_end is the latest end */
} cgr__prof_tally;

void cgr__prof_tally_add(cgr__prof_tally *t, const cgr__prof_rec *x);

/* Length of the union of the [start, end) added (overlap counted once). */
uint64_t cgr__prof_tally_union(const cgr__prof_tally *t);

/*
 * The run of each record into run_of[i] (-1 for none): by its correlation
 * id in links (any order; sorted in place); a record whose launch call has
 * no link belongs to no run. Without any link at all, each record goes to
 * the latest run whose launch call began before the record did (right
 * unless runs overlap on the GPU); by_time (may be NULL) gets how many.
 */
void cgr__prof_attribute(const cgr__prof_rec *recs, size_t n, cgr__prof_link *links,
                         size_t n_links, const cgr__prof_run *runs, size_t n_runs,
                         int32_t *run_of, uint64_t *by_time);

/*
 * Sums recs (sorted by start; run_of from cgr__prof_attribute) per run and
 * per mode into *out, with the verdict and the top kernels, whose names
 * are names[name_id] (n_names of them). Returns 0, or -1 when a host
 * allocation failed.
 */
int cgr__prof_summarize(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                        const cgr__prof_run *runs, size_t n_runs, const char *const *names,
                        size_t n_names, uint64_t dropped, cgr__prof_summary *out);

/* "launch-bound", "gpu-bound", "unknown". */
const char *cgr__prof_verdict_name(int verdict);

/* The reports; each returns 0, or -1 when writing failed. */
int cgr__prof_write_text(FILE *f, const char *step, const cgr__prof_summary *s);
int cgr__prof_write_json(FILE *f, const char *step, const cgr__prof_summary *s);
/*
 * A Chrome / Perfetto trace: one slice per run on the host (its launch
 * call, named by mode), a track per thread of cgr's phases and one of the
 * user's NVTX ranges (joined by cgr__prof_pair_ranges; may be NULL), and
 * one slice per record on the GPU, by stream.
 */
int cgr__prof_write_trace(FILE *f, const char *step, const cgr__prof_rec *recs, size_t n,
                          const int32_t *run_of, const cgr__prof_run *runs, size_t n_runs,
                          const char *const *names, size_t n_names,
                          const cgr__prof_range *ranges, size_t n_ranges);

/*
 * Where the reports go: both traces (cgr__prof_write_trace's and
 * cgr-bench's, through cgr__prof_trace_gpu), and the text and JSON
 * reports, are written by the same functions into one of these. It counts
 * the events and their bytes, which the trace caps need, and keeps the
 * first write failure.
 */
typedef struct cgr__prof_trace_out {
    FILE *f;
    uint64_t events;     /* written so far */
    uint64_t bytes;      /* of the events and the separators between them */
    uint64_t max_events; /* caps: 0 for none; a window's records beyond them are */
    uint64_t max_bytes;  /* left out (its metadata is always written) */
    uint64_t left_out;   /* records left out by the caps */
    int bad;             /* a write failed; later writes are skipped */
} cgr__prof_trace_out;

/*
 * Process pid, named name, into o: a thread per stream of recs[0..n) and a
 * slice per record (ts relative to origin; run_of as for
 * cgr__prof_attribute, NULL for no run argument), up to o's caps. 0, or -1
 * when writing failed or memory ran out. A trace of several windows is
 * these, one call per window, between cgr__prof_trace_head and
 * cgr__prof_trace_tail.
 */
int cgr__prof_trace_gpu(cgr__prof_trace_out *o, int pid, const char *name,
                        const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                        const char *const *names, size_t n_names, uint64_t origin);

/* What comes before a trace's first event and after its last. */
extern const char cgr__prof_trace_head[];
extern const char cgr__prof_trace_tail[];

#endif
