/*
 * The arithmetic of a profile and its three reports (prof_report.h).
 */
#include "prof_report.h"

#include <stdlib.h>
#include <string.h>

uint64_t cgr__prof_union_ns(const cgr__prof_rec *recs, size_t n)
{
    uint64_t total = 0, cur_s = 0, cur_e = 0;
    for (size_t i = 0; i < n; i++) {
        const cgr__prof_rec *x = &recs[i];
        if (i == 0) {
            cur_s = x->start;
            cur_e = x->end;
        } else if (x->start > cur_e) {
            total += cur_e - cur_s;
            cur_s = x->start;
            cur_e = x->end;
        } else if (x->end > cur_e) {
            cur_e = x->end;
        }
    }
    return n ? total + (cur_e - cur_s) : 0;
}

static int cmp_link(const void *a, const void *b)
{
    const cgr__prof_link *x = a, *y = b;
    return x->correlation < y->correlation ? -1 : x->correlation > y->correlation;
}

/* The latest run whose launch call began at or before t; -1 before the first. */
static int32_t run_at(const cgr__prof_run *runs, size_t n_runs, uint64_t t)
{
    size_t lo = 0, hi = n_runs; /* runs are in launch order, so their begins ascend */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (runs[mid].begin <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? -1 : (int32_t)(lo - 1);
}

void cgr__prof_attribute(const cgr__prof_rec *recs, size_t n, cgr__prof_link *links,
                         size_t n_links, const cgr__prof_run *runs, size_t n_runs,
                         int32_t *run_of, uint64_t *by_time)
{
    uint64_t timed = 0;
    if (n_links > 1)
        qsort(links, n_links, sizeof *links, cmp_link);
    for (size_t i = 0; i < n; i++) {
        cgr__prof_link key = {.correlation = recs[i].correlation, .run = 0};
        const cgr__prof_link *l =
            n_links && recs[i].correlation
                ? bsearch(&key, links, n_links, sizeof *links, cmp_link)
                : NULL;
        if (l && l->run < n_runs) {
            run_of[i] = (int32_t)l->run;
        } else if (n_links) {
            /* Launched by a call outside every run (another thread, another shape). */
            run_of[i] = -1;
        } else {
            /*
             * No tags at all (a CUPTI that made no external correlation
             * records): by time, which is right unless runs overlap on the GPU.
             */
            run_of[i] = run_at(runs, n_runs, recs[i].start);
            timed += run_of[i] >= 0;
        }
    }
    if (by_time)
        *by_time = timed;
}

/* ---- per run and per mode ------------------------------------------------------ */

typedef struct run_sum {
    uint64_t first, last; /* the run's GPU work: earliest start, latest end */
    uint64_t busy, busy_union, k_ns, mc_ns, ms_ns;
    uint64_t kernels, memcpys, memsets;
    uint64_t n;
    uint64_t cur_s, cur_e; /* the union's open interval (records come sorted by start) */
} run_sum;

struct kagg {
    uint64_t calls, ns;
    uint32_t id;
};

static const char *const *sort_names;

static int cmp_kagg(const void *a, const void *b)
{
    const struct kagg *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns > y->ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return strcmp(sort_names[x->id], sort_names[y->id]);
}

static void copy_trunc(char *dst, size_t len, const char *src)
{
    size_t n = strlen(src);
    if (n < len) {
        memcpy(dst, src, n + 1);
        return;
    }
    memcpy(dst, src, len - 4);
    memcpy(dst + len - 4, "...", 4);
}

int cgr__prof_rank_kernels(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                           const char *const *names, size_t n_names, cgr__prof_kernel *out,
                           int max)
{
    if (n_names == 0 || max <= 0)
        return 0;
    struct kagg *agg = calloc(n_names, sizeof *agg);
    if (!agg)
        return -1;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind != CGR__PROF_KERNEL || (run_of && run_of[i] < 0) ||
            recs[i].name_id >= n_names)
            continue;
        agg[recs[i].name_id].calls++;
        agg[recs[i].name_id].ns += recs[i].end - recs[i].start;
        total += recs[i].end - recs[i].start;
    }
    size_t m = 0;
    for (size_t i = 0; i < n_names; i++)
        if (agg[i].calls) {
            agg[m] = agg[i];
            agg[m].id = (uint32_t)i;
            m++;
        }
    /* qsort has no context argument; both callers hold their object's lock
     * or are its one thread. */
    sort_names = names;
    qsort(agg, m, sizeof *agg, cmp_kagg);
    sort_names = NULL;
    int k = 0;
    for (; k < max && (size_t)k < m; k++) {
        cgr__prof_kernel *t = &out[k];
        memset(t, 0, sizeof *t);
        copy_trunc(t->name, sizeof t->name, names[agg[k].id]);
        t->calls = agg[k].calls;
        t->total_us = (double)agg[k].ns / 1e3;
        t->mean_us = t->total_us / (double)agg[k].calls;
        t->share = total ? (double)agg[k].ns / (double)total : 0.0;
    }
    free(agg);
    return k;
}

static int top_kernels(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                       const char *const *names, size_t n_names, cgr__prof_summary *out)
{
    const int k = cgr__prof_rank_kernels(recs, n, run_of, names, n_names, out->top, CGR__PROF_TOP);
    if (k < 0)
        return -1;
    out->n_top = k;
    return 0;
}

int cgr__prof_summarize(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                        const cgr__prof_run *runs, size_t n_runs, const char *const *names,
                        size_t n_names, uint64_t dropped, cgr__prof_summary *out)
{
    memset(out, 0, sizeof *out);
    out->dropped = dropped;
    run_sum *rs = n_runs ? calloc(n_runs, sizeof *rs) : NULL;
    if (n_runs && !rs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (run_of[i] < 0 || (size_t)run_of[i] >= n_runs) {
            out->outside++;
            continue;
        }
        out->records++;
        const cgr__prof_rec *x = &recs[i];
        run_sum *r = &rs[run_of[i]];
        uint64_t d = x->end - x->start;
        r->busy += d;
        switch (x->kind) {
        case CGR__PROF_KERNEL: r->k_ns += d; r->kernels++; break;
        case CGR__PROF_MEMCPY: r->mc_ns += d; r->memcpys++; break;
        default: r->ms_ns += d; r->memsets++; break;
        }
        if (r->n == 0) {
            r->first = x->start;
            r->cur_s = x->start;
            r->cur_e = x->end;
        } else if (x->start > r->cur_e) {
            r->busy_union += r->cur_e - r->cur_s;
            r->cur_s = x->start;
            r->cur_e = x->end;
        } else if (x->end > r->cur_e) {
            r->cur_e = x->end;
        }
        if (x->end > r->last)
            r->last = x->end;
        r->n++;
    }
    double wall[CGR__PROF_MODES] = {0}, uni[CGR__PROF_MODES] = {0};
    uint64_t prev_last = 0;
    for (size_t j = 0; j < n_runs; j++) {
        run_sum *r = &rs[j];
        if (r->n)
            r->busy_union += r->cur_e - r->cur_s;
        /*
         * A run can start on the GPU once its launch call began and the run
         * before it is done there (one stream): waiting for either is the
         * run's own time, so pipelined runs do not count their queueing.
         */
        uint64_t ready = runs[j].begin > prev_last ? runs[j].begin : prev_last;
        uint64_t done = r->last > runs[j].end ? r->last : runs[j].end;
        uint64_t w = done > ready ? done - ready : 0;
        if (r->last > prev_last)
            prev_last = r->last;
        int m = runs[j].mode == CGR__PROF_GRAPH ? CGR__PROF_GRAPH : CGR__PROF_EAGER;
        cgr__prof_mode *pm = &out->mode[m];
        pm->runs++;
        wall[m] += (double)w;
        uni[m] += (double)r->busy_union;
        pm->cpu_us += (double)runs[j].cpu_ns / 1e3;
        pm->launch_us += (double)(runs[j].end - runs[j].begin) / 1e3;
        pm->busy_us += (double)r->busy / 1e3;
        pm->busy_union_us += (double)r->busy_union / 1e3;
        pm->kernel_us += (double)r->k_ns / 1e3;
        pm->memcpy_us += (double)r->mc_ns / 1e3;
        pm->memset_us += (double)r->ms_ns / 1e3;
        pm->kernels += (double)r->kernels;
        pm->memcpys += (double)r->memcpys;
        pm->memsets += (double)r->memsets;
    }
    free(rs);
    for (int m = 0; m < CGR__PROF_MODES; m++) {
        cgr__prof_mode *pm = &out->mode[m];
        if (!pm->runs)
            continue;
        double k = (double)pm->runs;
        pm->wall_us = wall[m] / 1e3 / k;
        pm->cpu_us /= k;
        pm->launch_us /= k;
        pm->busy_us /= k;
        pm->busy_union_us /= k;
        pm->kernel_us /= k;
        pm->memcpy_us /= k;
        pm->memset_us /= k;
        pm->kernels /= k;
        pm->memcpys /= k;
        pm->memsets /= k;
        double idle = wall[m] > 0 ? 1.0 - uni[m] / wall[m] : 0.0;
        pm->idle_share = idle < 0 ? 0 : idle > 1 ? 1 : idle;
    }
    const cgr__prof_mode *e = &out->mode[CGR__PROF_EAGER], *g = &out->mode[CGR__PROF_GRAPH];
    if (e->runs)
        out->verdict = e->idle_share > CGR__PROF_LAUNCH_BOUND_IDLE ? CGR__PROF_LAUNCH_BOUND
                                                                   : CGR__PROF_GPU_BOUND;
    if (e->runs && g->runs && g->wall_us > 0)
        out->speedup = e->wall_us / g->wall_us;
    return top_kernels(recs, n, run_of, names, n_names, out);
}

const char *cgr__prof_verdict_name(int verdict)
{
    switch (verdict) {
    case CGR__PROF_LAUNCH_BOUND: return "launch-bound";
    case CGR__PROF_GPU_BOUND: return "gpu-bound";
    default: return "unknown";
    }
}

/* ---- the reports ------------------------------------------------------------- */

/* "12.3 us", "1.23 ms" or "1.23 s": a table read by people. */
static void fmt_time(char *buf, size_t len, double us)
{
    if (us >= 1e6)
        snprintf(buf, len, "%.3f s", us / 1e6);
    else if (us >= 1e3)
        snprintf(buf, len, "%.3f ms", us / 1e3);
    else
        snprintf(buf, len, "%.2f us", us);
}

static const char *const mode_names[CGR__PROF_MODES] = {"eager", "graph"};

int cgr__prof_write_text(FILE *f, const char *step, const cgr__prof_summary *s)
{
    const cgr__prof_mode *e = &s->mode[CGR__PROF_EAGER];
    int bad = fprintf(f, "cgr profile of step '%s': %llu eager and %llu graph runs, "
                         "alternating\n\n", step, (unsigned long long)e->runs,
                      (unsigned long long)s->mode[CGR__PROF_GRAPH].runs) < 0;
    if (s->verdict == CGR__PROF_UNKNOWN)
        bad |= fprintf(f, "verdict: unknown (no eager run was measured)\n") < 0;
    else
        bad |= fprintf(f, "verdict: %s: the GPU is idle %.1f%% of an eager run's wall time "
                          "(launch-bound above %.0f%%)\n",
                       cgr__prof_verdict_name(s->verdict), 100.0 * e->idle_share,
                       100.0 * CGR__PROF_LAUNCH_BOUND_IDLE) < 0;
    if (s->speedup > 0)
        bad |= fprintf(f, "graph vs eager: %.2fx the speed (wall per run)\n", s->speedup) < 0;
    bad |= fprintf(f, "\n%-6s %8s %12s %12s %12s %12s %12s %9s %9s %7s\n", "mode", "runs",
                   "wall/run", "cpu/run", "launch/run", "busy/run", "busy-u/run", "kern/run",
                   "copy/run", "idle") < 0;
    for (int m = 0; m < CGR__PROF_MODES; m++) {
        const cgr__prof_mode *pm = &s->mode[m];
        char w[32], c[32], l[32], b[32], u[32];
        fmt_time(w, sizeof w, pm->wall_us);
        fmt_time(c, sizeof c, pm->cpu_us);
        fmt_time(l, sizeof l, pm->launch_us);
        fmt_time(b, sizeof b, pm->busy_us);
        fmt_time(u, sizeof u, pm->busy_union_us);
        bad |= fprintf(f, "%-6s %8llu %12s %12s %12s %12s %12s %9.1f %9.1f %6.1f%%\n",
                       mode_names[m], (unsigned long long)pm->runs, w, c, l, b, u, pm->kernels,
                       pm->memcpys + pm->memsets, 100.0 * pm->idle_share) < 0;
    }
    bad |= fprintf(f, "\n%-60s %8s %12s %12s %7s\n", "Kernel", "Calls", "GPU total",
                   "GPU mean", "Share") < 0;
    bad |= fprintf(f, "%-60s %8s %12s %12s %7s\n", "------", "-----", "---------", "--------",
                   "-----") < 0;
    for (int k = 0; k < s->n_top; k++) {
        const cgr__prof_kernel *t = &s->top[k];
        char tot[32], mean[32];
        fmt_time(tot, sizeof tot, t->total_us);
        fmt_time(mean, sizeof mean, t->mean_us);
        bad |= fprintf(f, "%-60.60s %8llu %12s %12s %6.1f%%\n", t->name,
                       (unsigned long long)t->calls, tot, mean, 100.0 * t->share) < 0;
    }
    bad |= fprintf(f, "\nwall: from when a run could start (its launch call began, or the run "
                      "before it ended on the GPU)\nto its last GPU work; cpu: host CPU time in "
                      "cgr's launch call; busy: kernel + copy durations;\nbusy-u: their union; "
                      "idle: 1 - busy-u / wall. %llu records (%llu by time, %llu outside the "
                      "runs, %llu dropped).\n",
                   (unsigned long long)s->records, (unsigned long long)s->by_time,
                   (unsigned long long)s->outside, (unsigned long long)s->dropped) < 0;
    return bad ? -1 : 0;
}

int cgr__prof_json_str(FILE *f, const char *s)
{
    int bad = fputc('"', f) == EOF;
    for (const unsigned char *u = (const unsigned char *)s; *u && !bad; u++) {
        if (*u == '"' || *u == '\\')
            bad = fprintf(f, "\\%c", *u) < 0;
        else if (*u < 0x20)
            bad = fprintf(f, "\\u%04x", *u) < 0;
        else
            bad = fputc(*u >= 0x80 ? '?' : *u, f) == EOF;
    }
    return bad || fputc('"', f) == EOF ? -1 : 0;
}

int cgr__prof_write_json(FILE *f, const char *step, const cgr__prof_summary *s)
{
    int bad = fputs("{\"step\":", f) < 0 || cgr__prof_json_str(f, step) != 0;
    bad |= fprintf(f, ",\"verdict\":\"%s\",\"launch_bound_idle\":%.3f,\"speedup\":%.6g,"
                      "\"modes\":{",
                   cgr__prof_verdict_name(s->verdict), CGR__PROF_LAUNCH_BOUND_IDLE,
                   s->speedup) < 0;
    for (int m = 0; m < CGR__PROF_MODES; m++) {
        const cgr__prof_mode *pm = &s->mode[m];
        bad |= fprintf(f, "%s\"%s\":{\"runs\":%llu,\"wall_us\":%.6g,\"cpu_us\":%.6g,"
                          "\"launch_us\":%.6g,\"busy_us\":%.6g,\"busy_union_us\":%.6g,"
                          "\"kernel_us\":%.6g,\"memcpy_us\":%.6g,\"memset_us\":%.6g,"
                          "\"kernels\":%.6g,\"memcpys\":%.6g,\"memsets\":%.6g,"
                          "\"idle_share\":%.6g}",
                       m ? "," : "", mode_names[m], (unsigned long long)pm->runs, pm->wall_us,
                       pm->cpu_us, pm->launch_us, pm->busy_us, pm->busy_union_us,
                       pm->kernel_us, pm->memcpy_us, pm->memset_us, pm->kernels, pm->memcpys,
                       pm->memsets, pm->idle_share) < 0;
    }
    bad |= fputs("},\"top_kernels\":[", f) < 0;
    for (int k = 0; k < s->n_top; k++) {
        const cgr__prof_kernel *t = &s->top[k];
        bad |= fputs(k ? ",{\"name\":" : "{\"name\":", f) < 0 || cgr__prof_json_str(f, t->name);
        bad |= fprintf(f, ",\"calls\":%llu,\"total_us\":%.6g,\"mean_us\":%.6g,\"share\":%.6g}",
                       (unsigned long long)t->calls, t->total_us, t->mean_us, t->share) < 0;
    }
    bad |= fprintf(f, "],\"records\":%llu,\"by_time\":%llu,\"outside\":%llu,\"dropped\":%llu}\n",
                   (unsigned long long)s->records, (unsigned long long)s->by_time,
                   (unsigned long long)s->outside, (unsigned long long)s->dropped) < 0;
    return bad ? -1 : 0;
}

/* ns after origin as microseconds with 3 decimals, without the locale's %f. */
static void fmt_us(char *buf, size_t len, uint64_t t, uint64_t origin)
{
    uint64_t a = t >= origin ? t - origin : origin - t;
    snprintf(buf, len, "%s%llu.%03u", t >= origin ? "" : "-", (unsigned long long)(a / 1000),
             (unsigned)(a % 1000));
}

static const char *rec_name(const cgr__prof_rec *x, const char *const *names, size_t n_names)
{
    if (x->kind == CGR__PROF_KERNEL)
        return x->name_id < n_names ? names[x->name_id] : "<unknown>";
    return x->kind == CGR__PROF_MEMCPY ? "memcpy" : "memset";
}

int cgr__prof_write_trace(FILE *f, const char *step, const cgr__prof_rec *recs, size_t n,
                          const int32_t *run_of, const cgr__prof_run *runs, size_t n_runs,
                          const char *const *names, size_t n_names)
{
    uint64_t origin = n_runs ? runs[0].begin : n ? recs[0].start : 0;
    char ts[32], dur[32];
    int bad = fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
                    "\"tid\":0,\"args\":{\"name\":",
                    f) < 0;
    bad |= fputs("\"cgr host: step ", f) < 0;
    for (const char *c = step; *c; c++)
        bad |= fputc(*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ||
                             (unsigned char)*c >= 0x80 ? '?' : *c, f) == EOF;
    bad |= fputs("\"}},\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"tid\":0,"
                 "\"args\":{\"name\":\"GPU\"}}",
                 f) < 0;
    for (size_t j = 0; j < n_runs; j++) {
        fmt_us(ts, sizeof ts, runs[j].begin, origin);
        fmt_us(dur, sizeof dur, runs[j].end, runs[j].begin);
        bad |= fprintf(f, ",\n{\"name\":\"run %zu (%s)\",\"cat\":\"cgr run\",\"ph\":\"X\","
                          "\"pid\":1,\"tid\":1,\"ts\":%s,\"dur\":%s,\"args\":{\"cpu_us\":%.3f}}",
                       j, mode_names[runs[j].mode == CGR__PROF_GRAPH], ts, dur,
                       (double)runs[j].cpu_ns / 1e3) < 0;
    }
    for (size_t i = 0; i < n && !bad; i++) {
        const cgr__prof_rec *x = &recs[i];
        fmt_us(ts, sizeof ts, x->start, origin);
        fmt_us(dur, sizeof dur, x->end, x->start);
        bad |= fputs(",\n{\"name\":", f) < 0 ||
               cgr__prof_json_str(f, rec_name(x, names, n_names)) != 0;
        bad |= fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":2,\"tid\":%u,\"ts\":%s,"
                          "\"dur\":%s,\"args\":{\"run\":%d,\"bytes\":%llu,\"graph\":%u}}",
                       x->kind == CGR__PROF_KERNEL   ? "kernel"
                       : x->kind == CGR__PROF_MEMCPY ? "memcpy"
                                                     : "memset",
                       (unsigned)x->stream, ts, dur, (int)run_of[i],
                       (unsigned long long)x->bytes, (unsigned)x->graph_id) < 0;
    }
    bad |= fputs("\n],\"displayTimeUnit\":\"ns\"}\n", f) < 0;
    return bad ? -1 : 0;
}
