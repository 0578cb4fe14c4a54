/*
 * The profile window (cgr_options.profile): is the step launch-bound?
 *
 * The window runs over the caller's own runs of one shape, once its graph
 * replays (checked) and `skip` runs have passed: the next 2 x runs runs
 * alternate eager and graph, eager first, so that a drift of the machine
 * (clocks, other work) weighs on both modes alike. An eager run takes the
 * path every eagerly running shape takes (cgr__run_eager): the same inputs
 * from the same slot, the same planned scratch, the same Philox counters,
 * so it computes what the graph would, and the graph run after it finds
 * its slot word reset by cgr__launch_graph.
 *
 * Attribution: each run's launch call is bracketed by a CUPTI external
 * correlation id (the run's index), so every CUDA call it makes, and the
 * GPU work those calls launch, is tagged with its run even when the caller
 * keeps several runs in flight. Work the tags do not reach (another
 * shape's runs in the window, another thread's) is left out of the runs.
 * Without any tag (a CUPTI that made none) records go by time.
 *
 * Cost: nothing before the window but one test of s->profile in the replay
 * path. CUPTI is loaded and attached when the window opens, and detached
 * (cuptiFinalize) when it closes: a process that keeps CUPTI attached pays
 * more for every later launch. The reports are summed and written once,
 * at the run that closes the window, after the stream drained.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prof_report.h"
#include "profiler.h"
#include "replay.h"

/* snprintf that may cut: every message here fits, or is worth its start alone. */
static void put(char *dst, size_t cap, const char *fmt, ...) CGR__PRINTF(3, 4);
static void put(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(dst, cap, fmt, ap) < 0 && cap)
        dst[0] = '\0';
    va_end(ap);
}

typedef struct cgr__profile {
    int chosen;           /* 1 once the shape profiled is known: the first to replay */
    int64_t dims[CGR_MAX_DYN_DIMS]; /* its bucketed dims (table entries are reused) */
    uint64_t others;      /* replays of other shapes while the window is open */
    uint64_t seen;        /* its graph runs seen while waiting */
    cgr__prof *prof;      /* while collecting; NULL while waiting */
    size_t n;             /* the runs recorded so far */
    cgr__prof_run runs[]; /* 2 x cgr_options.profile.runs of them */
} cgr__profile;

void cgr__profile_attach(cgr_step *s)
{
    const cgr_profile_options *o = &s->rt->opt.profile;
    memset(&s->stats.profile, 0, sizeof s->stats.profile);
    if (o->runs <= 0)
        return;
    cgr__profile *p = calloc(1, sizeof *p + (size_t)o->runs * 2 * sizeof p->runs[0]);
    if (!p) {
        cgr_profile_result *r = &s->stats.profile;
        r->state = CGR_PROFILE_FAILED;
        r->status = CGR_STATUS_OUT_OF_MEMORY;
        put(r->error, sizeof r->error,
            "cgr_step_create: step '%s': no profile: host allocation of %d runs failed", s->name,
            o->runs * 2);
        return;
    }
    s->profile = p;
}

void cgr__profile_detach(cgr_step *s)
{
    cgr__profile *p = s->profile;
    if (!p)
        return;
    /* Destroyed in its window: CUPTI is detached, nothing is written. */
    cgr__prof_destroy(&p->prof);
    free(p);
    s->profile = NULL;
}

/* The window ends without a result: why goes to the stats and the log. why may be the
 * profiler's message, which the detach frees, so it is copied first. */
static void give_up(cgr_step *s, cgr_status st, const char *why)
{
    cgr_profile_result *r = &s->stats.profile;
    r->state = CGR_PROFILE_FAILED;
    r->status = st;
    /* Cut to fit: the start says what and where, the end is CUPTI's or the loader's detail. */
    put(r->error, sizeof r->error, "%s: step '%s': no profile: %s",
        s->api_fn ? s->api_fn : "cgr_step_run", s->name, why);
    cgr__log(s->rt, CGR_LOG_WARN, "%s", r->error);
    cgr__profile_detach(s);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec t;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0)
        return 0;
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Opens the window; 0: opened, 1: not now (CUPTI busy), -1: given up. */
static int open_window(cgr_step *s, cgr__profile *p)
{
    char err[512];
    int rc = cgr__prof_create(&p->prof, CGR__PROF_CORRELATE | CGR__PROF_RANGES, err, sizeof err);
    if (rc == CGR__PROF_EBUSY)
        return 1; /* another step's window (or cgr-bench's profiler) holds CUPTI */
    if (rc != CGR__PROF_OK) {
        /* A CUPTI that is there but refuses (another tool attached) is no more usable. */
        give_up(s, rc == CGR__PROF_ENOMEM ? CGR_STATUS_OUT_OF_MEMORY : CGR_STATUS_NOT_SUPPORTED,
                err);
        return -1;
    }
    if (cgr__prof_begin(p->prof) != CGR__PROF_OK) {
        give_up(s, CGR_STATUS_NOT_SUPPORTED, cgr__prof_errmsg(p->prof));
        return -1;
    }
    s->stats.profile.state = CGR_PROFILE_COLLECTING;
    return 0;
}

/* "<prefix>.<step name><suffix>", the name kept to characters safe in a file name. */
static void report_path(const cgr_step *s, const char *suffix, char *out, size_t cap)
{
    const char *prefix = s->rt->opt.profile.path ? s->rt->opt.profile.path : "cgr_profile";
    put(out, cap, "%s.%s%s", prefix, s->file_name, suffix);
}

enum { TEXT, JSON, TRACE };

/* The figures of a mode that cgr_profile_result shows: a subset of the report's. */
static cgr_profile_mode public_mode(const cgr__prof_mode *m)
{
    return (cgr_profile_mode){.runs = m->runs, .wall_us = m->wall_us, .cpu_us = m->cpu_us,
                              .busy_us = m->busy_us, .busy_union_us = m->busy_union_us,
                              .kernels = m->kernels, .idle_share = m->idle_share};
}

/* The run that completes the window: drain, sum, write, detach CUPTI. */
static void close_window(cgr_step *s, cgr__profile *p)
{
    char why[512];
    cudaError_t e = cgr__sync_stream(s->rt);
    if (e != cudaSuccess) {
        /* The run's own error shows at its wait; the profile just ends. */
        put(why, sizeof why, "cudaStreamSynchronize failed at the end of the window (%s)",
            cudaGetErrorName(e));
        give_up(s, CGR_STATUS_CUDA_ERROR, why);
        return;
    }
    cgr__prof_window w;
    const int ended = cgr__prof_end(p->prof, &w);
    if (ended != CGR__PROF_OK) {
        give_up(s, ended == CGR__PROF_ENOMEM ? CGR_STATUS_OUT_OF_MEMORY : CGR_STATUS_NOT_SUPPORTED,
                cgr__prof_errmsg(p->prof));
        return;
    }
    int32_t *run_of = malloc((w.n ? w.n : 1) * sizeof *run_of);
    cgr__prof_summary sum;
    uint64_t by_time = 0;
    if (run_of)
        cgr__prof_attribute(w.recs, w.n, w.links, w.n_links, p->runs, p->n, run_of, &by_time);
    if (!run_of || cgr__prof_summarize(w.recs, w.n, run_of, p->runs, p->n, w.names, w.n_names,
                                       w.dropped, &sum) != 0) {
        free(run_of);
        give_up(s, CGR_STATUS_OUT_OF_MEMORY, "host allocation while summing the records");
        return;
    }
    sum.by_time = by_time;
    sum.ranges = w.n_ranges;
    sum.ranges_open = w.ranges_open;
    sum.ranges_dropped = w.ranges_dropped;
    static const char *const suffix[] = {".txt", ".json", ".trace.json"};
    char path[3][4096];
    int bad = -1;
    for (int k = TEXT; k <= TRACE; k++) {
        report_path(s, suffix[k], path[k], sizeof path[k]);
        FILE *f = fopen(path[k], "w");
        int failed = !f || (k == TEXT   ? cgr__prof_write_text(f, s->name, &sum)
                            : k == JSON ? cgr__prof_write_json(f, s->name, &sum)
                                        : cgr__prof_write_trace(f, s->name, w.recs, w.n, run_of,
                                                                p->runs, p->n, w.names,
                                                                w.n_names, w.ranges, w.n_ranges));
        if (f && fclose(f) != 0)
            failed = 1;
        if (failed && bad < 0)
            bad = k;
    }
    free(run_of);
    cgr__prof_destroy(&p->prof);

    cgr_profile_result *r = &s->stats.profile;
    r->eager = public_mode(&sum.mode[CGR__PROF_EAGER]);
    r->graph = public_mode(&sum.mode[CGR__PROF_GRAPH]);
    r->verdict = sum.verdict == CGR__PROF_LAUNCH_BOUND ? CGR_PROFILE_LAUNCH_BOUND
                 : sum.verdict == CGR__PROF_GPU_BOUND  ? CGR_PROFILE_GPU_BOUND
                                                       : CGR_PROFILE_UNKNOWN;
    r->speedup = sum.speedup;
    if (sum.n_top > 0) {
        put(r->top_kernel, sizeof r->top_kernel, "%s", sum.top[0].name);
        r->top_kernel_share = sum.top[0].share;
    }
    if (bad >= 0) {
        put(why, sizeof why,
            "the figures are in cgr_step_stats.profile, but %s could not be written", path[bad]);
        /* The figures stand (give_up sets only state, status and error); only the files failed. */
        give_up(s, CGR_STATUS_INVALID_ARGUMENT, why);
        return;
    }
    r->state = CGR_PROFILE_DONE;
    r->status = CGR_STATUS_OK;
    cgr__log(s->rt, CGR_LOG_INFO,
             "step '%s' is %s: the GPU is idle %.0f%% of an eager run; eager %.1f us, graph "
             "%.1f us per run; report %s",
             s->name, cgr__prof_verdict_name(sum.verdict),
             100.0 * sum.mode[CGR__PROF_EAGER].idle_share, sum.mode[CGR__PROF_EAGER].wall_us,
             sum.mode[CGR__PROF_GRAPH].wall_us, path[TEXT]);
    cgr__profile_detach(s);
}

cgr_status cgr__profile_replay(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                               uint8_t *action)
{
    cgr__profile *p = s->profile;
    cgr__graph *g = d->payload;
    /*
     * The window's eager runs run the collectives uncaptured, which every
     * rank would have to do at the same runs; nothing makes them (the
     * profile options and CUPTI are each process's own).
     */
    if (cgr__step_has_peers(s)) {
        give_up(s, CGR_STATUS_NOT_SUPPORTED,
                "the step uses the NCCL communicator, and the window's eager runs would run "
                "its collectives uncaptured on this rank alone");
        return cgr__launch_graph(s, g, slot, 0);
    }
    const size_t dims_bytes = (size_t)s->n_dyn * sizeof p->dims[0];
    if (!p->chosen) {
        p->chosen = 1;
        memcpy(p->dims, d->dims, dims_bytes);
    }
    if (memcmp(p->dims, d->dims, dims_bytes) != 0) {
        /*
         * Another shape: not in the window. One that keeps the window open
         * while the shape profiled no longer replays (evicted, refused)
         * would keep CUPTI attached, slowing every launch: give up then.
         */
        const uint64_t limit = 4 * (uint64_t)s->rt->opt.profile.runs + 100;
        if (p->prof && ++p->others > limit) {
            char why[160];
            put(why, sizeof why, "the shape profiled stopped replaying (%llu replays of other "
                "shapes while its window was open)", (unsigned long long)p->others);
            give_up(s, CGR_STATUS_NOT_SUPPORTED, why);
        }
        return cgr__launch_graph(s, g, slot, 0);
    }
    if (!p->prof) {
        if (p->seen < (uint64_t)s->rt->opt.profile.skip) {
            p->seen++;
            return cgr__launch_graph(s, g, slot, 0);
        }
        if (open_window(s, p) != 0) {
            /* Busy: try again at the next run. Given up: s->profile is gone. */
            return cgr__launch_graph(s, g, slot, 0);
        }
    }
    const int eager = (p->n & 1) == 0;
    cgr__prof_run *run = &p->runs[p->n];
    uint64_t cpu0 = thread_cpu_ns();
    if (cgr__prof_now(p->prof, &run->begin) != CGR__PROF_OK ||
        cgr__prof_push(p->prof, p->n) != CGR__PROF_OK) {
        give_up(s, CGR_STATUS_NOT_SUPPORTED, cgr__prof_errmsg(p->prof));
        return cgr__launch_graph(s, g, slot, 0);
    }
    cgr_status st;
    if (eager) {
        st = cgr__run_eager(s, slot, &s->plans[d->entry]);
        if (st == CGR_STATUS_OK)
            *action = CGR_RUN_EAGER;
    } else {
        st = cgr__launch_graph(s, g, slot, 0);
    }
    int tag = cgr__prof_pop(p->prof);
    int now = cgr__prof_now(p->prof, &run->end);
    run->cpu_ns = thread_cpu_ns() - cpu0;
    run->mode = eager ? CGR__PROF_EAGER : CGR__PROF_GRAPH;
    if (st != CGR_STATUS_OK) {
        /* The run's error is the caller's to see; a window with a failed run says nothing. */
        char msg[512];
        put(msg, sizeof msg, "run %zu of the window failed (%s)", p->n, cgr_status_name(st));
        give_up(s, st, msg);
        return st;
    }
    if (tag != CGR__PROF_OK || now != CGR__PROF_OK) {
        give_up(s, CGR_STATUS_NOT_SUPPORTED, cgr__prof_errmsg(p->prof));
        return CGR_STATUS_OK;
    }
    if (++p->n == (size_t)s->rt->opt.profile.runs * 2)
        close_window(s, p);
    return CGR_STATUS_OK;
}
