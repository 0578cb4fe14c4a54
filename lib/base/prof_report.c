/*
 * The arithmetic of a profile and its three reports (prof_report.h), and
 * the GPU trace writer that cgr-bench's trace of several windows shares.
 */
#define _POSIX_C_SOURCE 200809L /* newlocale, uselocale */
#include "prof_report.h"

#include <assert.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void cgr__prof_tally_add(cgr__prof_tally *t, const cgr__prof_rec *x)
{
    assert(x->kind >= CGR__PROF_KERNEL && x->kind <= CGR__PROF_MEMSET && x->end >= x->start);
    const uint64_t d = x->end - x->start;
    t->ns[x->kind] += d;
    t->count[x->kind]++;
    t->busy += d;
    /* Before the first record the open interval is [0, 0), which adds nothing. */
    if (x->start > t->open_end) {
        t->union_closed += t->open_end - t->open_start;
        t->open_start = x->start;
        t->open_end = x->end;
    } else if (x->end > t->open_end) {
        t->open_end = x->end;
    }
}

uint64_t cgr__prof_tally_union(const cgr__prof_tally *t)
{
    return t->union_closed + (t->open_end - t->open_start);
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

struct kagg {
    uint64_t calls, ns;
    const char *name; /* in the struct: qsort passes the comparison no context */
};

static int cmp_kagg(const void *a, const void *b)
{
    const struct kagg *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns > y->ns ? -1 : 1;
    if (x->calls != y->calls)
        return x->calls > y->calls ? -1 : 1;
    return strcmp(x->name, y->name);
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
        if (recs[i].kind != CGR__PROF_KERNEL || (run_of && run_of[i] < 0))
            continue;
        assert(recs[i].name_id < n_names);
        agg[recs[i].name_id].calls++;
        agg[recs[i].name_id].ns += recs[i].end - recs[i].start;
        total += recs[i].end - recs[i].start;
    }
    size_t m = 0;
    for (size_t i = 0; i < n_names; i++)
        if (agg[i].calls) {
            agg[m] = agg[i];
            agg[m].name = names[i];
            m++;
        }
    qsort(agg, m, sizeof *agg, cmp_kagg);
    int k = 0;
    for (; k < max && (size_t)k < m; k++) {
        cgr__prof_kernel *t = &out[k];
        memset(t, 0, sizeof *t);
        copy_trunc(t->name, sizeof t->name, agg[k].name);
        t->calls = agg[k].calls;
        t->total_us = (double)agg[k].ns / 1e3;
        t->mean_us = t->total_us / (double)agg[k].calls;
        t->share = total ? (double)agg[k].ns / (double)total : 0.0;
    }
    free(agg);
    return k;
}

int cgr__prof_summarize(const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                        const cgr__prof_run *runs, size_t n_runs, const char *const *names,
                        size_t n_names, uint64_t dropped, cgr__prof_summary *out)
{
    memset(out, 0, sizeof *out);
    out->dropped = dropped;
    cgr__prof_tally *rs = n_runs ? calloc(n_runs, sizeof *rs) : NULL;
    if (n_runs && !rs)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (run_of[i] < 0) {
            out->outside++;
            continue;
        }
        assert((size_t)run_of[i] < n_runs); /* cgr__prof_attribute's */
        out->records++;
        cgr__prof_tally_add(&rs[run_of[i]], &recs[i]);
    }
    double wall[CGR__PROF_MODES] = {0}, uni[CGR__PROF_MODES] = {0};
    uint64_t prev_last = 0;
    for (size_t j = 0; j < n_runs; j++) {
        const cgr__prof_tally *r = &rs[j];
        const uint64_t busy_union = cgr__prof_tally_union(r);
        /*
         * A run can start on the GPU once its launch call began and the run
         * before it is done there (one stream): waiting for either is the
         * run's own time, so pipelined runs do not count their queueing.
         */
        uint64_t ready = runs[j].begin > prev_last ? runs[j].begin : prev_last;
        uint64_t done = r->open_end > runs[j].end ? r->open_end : runs[j].end;
        uint64_t w = done > ready ? done - ready : 0;
        if (r->open_end > prev_last)
            prev_last = r->open_end;
        int m = runs[j].mode == CGR__PROF_GRAPH ? CGR__PROF_GRAPH : CGR__PROF_EAGER;
        cgr__prof_mode *pm = &out->mode[m];
        pm->runs++;
        wall[m] += (double)w;
        uni[m] += (double)busy_union;
        pm->cpu_us += (double)runs[j].cpu_ns / 1e3;
        pm->launch_us += (double)(runs[j].end - runs[j].begin) / 1e3;
        pm->busy_us += (double)r->busy / 1e3;
        pm->busy_union_us += (double)busy_union / 1e3;
        pm->kernel_us += (double)r->ns[CGR__PROF_KERNEL] / 1e3;
        pm->memcpy_us += (double)r->ns[CGR__PROF_MEMCPY] / 1e3;
        pm->memset_us += (double)r->ns[CGR__PROF_MEMSET] / 1e3;
        pm->kernels += (double)r->count[CGR__PROF_KERNEL];
        pm->memcpys += (double)r->count[CGR__PROF_MEMCPY];
        pm->memsets += (double)r->count[CGR__PROF_MEMSET];
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
    const int k = cgr__prof_rank_kernels(recs, n, run_of, names, n_names, out->top, CGR__PROF_TOP);
    out->n_top = k < 0 ? 0 : k;
    return k < 0 ? -1 : 0;
}

const char *cgr__prof_verdict_name(int verdict)
{
    switch (verdict) {
    case CGR__PROF_LAUNCH_BOUND: return "launch-bound";
    case CGR__PROF_GPU_BOUND: return "gpu-bound";
    default: return "unknown";
    }
}

/* ---- writing ------------------------------------------------------------------ */

/* The characters of s as inside a JSON string, adding their count to *bytes.
 * Bytes >= 0x80 become '?', so the output is plain ASCII and valid whatever
 * the encoding of the input (kernel names, step names). */
static int json_chars(FILE *f, const char *s, uint64_t *bytes)
{
    uint64_t k = 0;
    int bad = 0;
    for (const unsigned char *u = (const unsigned char *)s; *u && !bad; u++) {
        if (*u == '"' || *u == '\\') {
            bad = fputc('\\', f) == EOF || fputc(*u, f) == EOF;
            k += 2;
        } else if (*u < 0x20) {
            bad = fprintf(f, "\\u%04x", *u) < 0;
            k += 6;
        } else {
            bad = fputc(*u >= 0x80 ? '?' : *u, f) == EOF;
            k++;
        }
    }
    *bytes += k;
    return bad ? -1 : 0;
}

/*
 * The writes into a cgr__prof_trace_out: each counts its bytes and, after
 * the first failure, does nothing, so an event or a report is written by a
 * run of calls and checked once (o->bad) at its end.
 */
static void out_printf(cgr__prof_trace_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * The "C" locale's numbers, whatever LC_NUMERIC the program set: JSON and
 * the trace want "1.5", and a program that called setlocale(LC_ALL, "")
 * under a German locale would otherwise print "1,5". NULL when it cannot
 * be made (then the program's locale stands). Made once, kept for good.
 */
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;
static locale_t c_numeric_locale;

static void c_numeric_make(void)
{
    c_numeric_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static void out_printf(cgr__prof_trace_out *o, const char *fmt, ...)
{
    if (o->bad)
        return;
    (void)pthread_once(&c_numeric_once, c_numeric_make);
    /* uselocale((locale_t)0) only asks: without the C locale nothing changes. */
    locale_t old = uselocale(c_numeric_locale);
    va_list ap;
    va_start(ap, fmt);
    const int k = vfprintf(o->f, fmt, ap);
    va_end(ap);
    if (c_numeric_locale)
        (void)uselocale(old);
    if (k < 0)
        o->bad = 1;
    else
        o->bytes += (uint64_t)k;
}

/* prefix + s as one JSON string. */
static void out_str(cgr__prof_trace_out *o, const char *prefix, const char *s)
{
    if (o->bad)
        return;
    uint64_t k = 2;
    o->bad = fputc('"', o->f) == EOF || json_chars(o->f, prefix, &k) != 0 ||
             json_chars(o->f, s, &k) != 0 || fputc('"', o->f) == EOF;
    if (!o->bad)
        o->bytes += k;
}

/* Starts an event: the separator from the one before. */
static void out_event(cgr__prof_trace_out *o)
{
    if (o->events)
        out_printf(o, ",\n");
    if (!o->bad)
        o->events++;
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
    cgr__prof_trace_out o = {.f = f};
    const cgr__prof_mode *e = &s->mode[CGR__PROF_EAGER];
    out_printf(&o, "cgr profile of step '%s': %llu eager and %llu graph runs, alternating\n\n",
               step, (unsigned long long)e->runs,
               (unsigned long long)s->mode[CGR__PROF_GRAPH].runs);
    if (s->verdict == CGR__PROF_UNKNOWN)
        out_printf(&o, "verdict: unknown (no eager run was measured)\n");
    else
        out_printf(&o, "verdict: %s: the GPU is idle %.1f%% of an eager run's wall time "
                       "(launch-bound above %.0f%%)\n",
                   cgr__prof_verdict_name(s->verdict), 100.0 * e->idle_share,
                   100.0 * CGR__PROF_LAUNCH_BOUND_IDLE);
    if (s->speedup > 0)
        out_printf(&o, "graph vs eager: %.2fx the speed (wall per run)\n", s->speedup);
    out_printf(&o, "\n%-6s %8s %12s %12s %12s %12s %12s %9s %9s %7s\n", "mode", "runs",
               "wall/run", "cpu/run", "launch/run", "busy/run", "busy-u/run", "kern/run",
               "copy/run", "idle");
    for (int m = 0; m < CGR__PROF_MODES; m++) {
        const cgr__prof_mode *pm = &s->mode[m];
        char w[32], c[32], l[32], b[32], u[32];
        fmt_time(w, sizeof w, pm->wall_us);
        fmt_time(c, sizeof c, pm->cpu_us);
        fmt_time(l, sizeof l, pm->launch_us);
        fmt_time(b, sizeof b, pm->busy_us);
        fmt_time(u, sizeof u, pm->busy_union_us);
        out_printf(&o, "%-6s %8llu %12s %12s %12s %12s %12s %9.1f %9.1f %6.1f%%\n",
                   mode_names[m], (unsigned long long)pm->runs, w, c, l, b, u, pm->kernels,
                   pm->memcpys + pm->memsets, 100.0 * pm->idle_share);
    }
    out_printf(&o, "\n%-60s %8s %12s %12s %7s\n", "Kernel", "Calls", "GPU total", "GPU mean",
               "Share");
    out_printf(&o, "%-60s %8s %12s %12s %7s\n", "------", "-----", "---------", "--------",
               "-----");
    for (int k = 0; k < s->n_top; k++) {
        const cgr__prof_kernel *t = &s->top[k];
        char tot[32], mean[32];
        fmt_time(tot, sizeof tot, t->total_us);
        fmt_time(mean, sizeof mean, t->mean_us);
        out_printf(&o, "%-60.60s %8llu %12s %12s %6.1f%%\n", t->name,
                   (unsigned long long)t->calls, tot, mean, 100.0 * t->share);
    }
    out_printf(&o, "\nwall: from when a run could start (its launch call began, or the run "
                   "before it ended on the GPU)\nto its last GPU work; cpu: host CPU time in "
                   "cgr's launch call; busy: kernel + copy durations;\nbusy-u: their union; "
                   "idle: 1 - busy-u / wall. %llu records (%llu by time, %llu outside the "
                   "runs, %llu dropped).\n",
               (unsigned long long)s->records, (unsigned long long)s->by_time,
               (unsigned long long)s->outside, (unsigned long long)s->dropped);
    return o.bad ? -1 : 0;
}

int cgr__prof_write_json(FILE *f, const char *step, const cgr__prof_summary *s)
{
    cgr__prof_trace_out o = {.f = f};
    out_printf(&o, "{\"step\":");
    out_str(&o, "", step);
    out_printf(&o, ",\"verdict\":\"%s\",\"launch_bound_idle\":%.3f,\"speedup\":%.6g,\"modes\":{",
               cgr__prof_verdict_name(s->verdict), CGR__PROF_LAUNCH_BOUND_IDLE, s->speedup);
    for (int m = 0; m < CGR__PROF_MODES; m++) {
        const cgr__prof_mode *pm = &s->mode[m];
        out_printf(&o, "%s\"%s\":{\"runs\":%llu,\"wall_us\":%.6g,\"cpu_us\":%.6g,"
                       "\"launch_us\":%.6g,\"busy_us\":%.6g,\"busy_union_us\":%.6g,"
                       "\"kernel_us\":%.6g,\"memcpy_us\":%.6g,\"memset_us\":%.6g,"
                       "\"kernels\":%.6g,\"memcpys\":%.6g,\"memsets\":%.6g,"
                       "\"idle_share\":%.6g}",
                   m ? "," : "", mode_names[m], (unsigned long long)pm->runs, pm->wall_us,
                   pm->cpu_us, pm->launch_us, pm->busy_us, pm->busy_union_us, pm->kernel_us,
                   pm->memcpy_us, pm->memset_us, pm->kernels, pm->memcpys, pm->memsets,
                   pm->idle_share);
    }
    out_printf(&o, "},\"top_kernels\":[");
    for (int k = 0; k < s->n_top; k++) {
        const cgr__prof_kernel *t = &s->top[k];
        out_printf(&o, k ? ",{\"name\":" : "{\"name\":");
        out_str(&o, "", t->name);
        out_printf(&o, ",\"calls\":%llu,\"total_us\":%.6g,\"mean_us\":%.6g,\"share\":%.6g}",
                   (unsigned long long)t->calls, t->total_us, t->mean_us, t->share);
    }
    out_printf(&o, "],\"records\":%llu,\"by_time\":%llu,\"outside\":%llu,\"dropped\":%llu,"
                   "\"ranges\":%llu,\"ranges_open\":%llu,\"ranges_dropped\":%llu}\n",
               (unsigned long long)s->records, (unsigned long long)s->by_time,
               (unsigned long long)s->outside, (unsigned long long)s->dropped,
               (unsigned long long)s->ranges, (unsigned long long)s->ranges_open,
               (unsigned long long)s->ranges_dropped);
    return o.bad ? -1 : 0;
}

/* ---- trace events -------------------------------------------------------------- */

/* ns after origin as microseconds with 3 decimals, without the locale's %f. */
static void fmt_us(char *buf, size_t len, uint64_t t, uint64_t origin)
{
    uint64_t a = t >= origin ? t - origin : origin - t;
    snprintf(buf, len, "%s%llu.%03u", t >= origin ? "" : "-", (unsigned long long)(a / 1000),
             (unsigned)(a % 1000));
}

/* By CUpti_ActivityMemcpyKind, whose values CUPTI keeps across versions
 * (profiler.c checks them against the headers it is built with). */
static const char *const copy_names[] = {
    "memcpy",      "memcpy HtoD", "memcpy DtoH", "memcpy HtoA", "memcpy AtoH", "memcpy AtoA",
    "memcpy AtoD", "memcpy DtoA", "memcpy DtoD", "memcpy HtoH", "memcpy PtoP",
};

static const char *rec_name(const cgr__prof_rec *x, const char *const *names, size_t n_names)
{
    if (x->kind == CGR__PROF_KERNEL)
        return x->name_id < n_names ? names[x->name_id] : "<unknown>";
    if (x->kind == CGR__PROF_MEMCPY)
        return x->copy_kind < sizeof copy_names / sizeof copy_names[0] ? copy_names[x->copy_kind]
                                                                       : copy_names[0];
    return "memset";
}

/* Metadata: process pid is named prefix + name, and sorted by pid. */
static void trace_process(cgr__prof_trace_out *o, int pid, const char *prefix, const char *name)
{
    out_event(o);
    out_printf(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                  "\"args\":{\"name\":",
               pid);
    out_str(o, prefix, name);
    out_printf(o, "}}");
    out_event(o);
    out_printf(o, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                  "\"args\":{\"sort_index\":%d}}",
               pid, pid);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Metadata: a "stream N" thread of process pid per stream of recs. -1 when
 * out of memory. */
static int trace_streams(cgr__prof_trace_out *o, int pid, const cgr__prof_rec *recs, size_t n)
{
    if (n == 0)
        return 0;
    uint32_t *streams = malloc(n * sizeof *streams);
    if (!streams)
        return -1;
    for (size_t i = 0; i < n; i++)
        streams[i] = recs[i].stream;
    qsort(streams, n, sizeof *streams, cmp_u32);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && streams[i] == streams[i - 1])
            continue;
        out_event(o);
        out_printf(o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
                      "\"args\":{\"name\":\"stream %u\"}}",
                   pid, (unsigned)streams[i], (unsigned)streams[i]);
    }
    free(streams);
    return 0;
}

/* The start of an event named name in category cat at t on track tid of process pid; the
 * caller writes its phase and the rest. */
static void event(cgr__prof_trace_out *o, const char *name, const char *cat, int pid,
                  unsigned tid, uint64_t t, uint64_t origin)
{
    char ts[32];
    fmt_us(ts, sizeof ts, t, origin);
    out_event(o);
    out_printf(o, "{\"name\":");
    out_str(o, "", name);
    out_printf(o, ",\"cat\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":%s,", cat, pid, tid, ts);
}

/* A complete slice's phase and its duration, start to end. */
static void slice(cgr__prof_trace_out *o, uint64_t start, uint64_t end)
{
    char dur[32];
    fmt_us(dur, sizeof dur, end, start);
    out_printf(o, "\"ph\":\"X\",\"dur\":%s", dur);
}

/* A slice for record x on its stream's thread of process pid; run NULL: no run argument. */
static void trace_rec(cgr__prof_trace_out *o, int pid, const cgr__prof_rec *x, uint64_t origin,
                      const char *const *names, size_t n_names, const int32_t *run)
{
    static const char *const cat[] = {"", "kernel", "memcpy", "memset"};
    assert(x->kind >= CGR__PROF_KERNEL && x->kind <= CGR__PROF_MEMSET);
    event(o, rec_name(x, names, n_names), cat[x->kind], pid, x->stream, x->start, origin);
    slice(o, x->start, x->end);
    out_printf(o, ",\"args\":{");
    if (run)
        out_printf(o, "\"run\":%d,", (int)*run);
    if (x->kind == CGR__PROF_KERNEL)
        out_printf(o, "\"grid\":[%d,%d,%d],\"block\":[%u,%u,%u],\"regs\":%u,\"smem\":%u,",
                   (int)x->grid[0], (int)x->grid[1], (int)x->grid[2], (unsigned)x->block[0],
                   (unsigned)x->block[1], (unsigned)x->block[2], (unsigned)x->regs,
                   (unsigned)x->smem);
    else
        out_printf(o, "\"bytes\":%llu,", (unsigned long long)x->bytes);
    out_printf(o, "\"graph\":%u}}", (unsigned)x->graph_id);
}

int cgr__prof_trace_gpu(cgr__prof_trace_out *o, int pid, const char *name,
                        const cgr__prof_rec *recs, size_t n, const int32_t *run_of,
                        const char *const *names, size_t n_names, uint64_t origin)
{
    trace_process(o, pid, "", name);
    if (trace_streams(o, pid, recs, n) != 0)
        return -1;
    for (size_t i = 0; i < n && !o->bad; i++) {
        if ((o->max_events && o->events >= o->max_events) ||
            (o->max_bytes && o->bytes >= o->max_bytes)) {
            o->left_out += n - i;
            break;
        }
        trace_rec(o, pid, &recs[i], origin, names, n_names, run_of ? &run_of[i] : NULL);
    }
    return o->bad ? -1 : 0;
}

/* ---- host ranges ----------------------------------------------------------------- */

/* The ends that pair among themselves: cgr's of one thread, the user's of one id. */
static int same_group(const cgr__prof_range *x, const cgr__prof_range *y)
{
    return x->user == y->user && (x->user ? x->id == y->id : x->tid == y->tid);
}

/* cgr's ends by thread in the order made; the user's by id, a start before its end. */
static int cmp_end(const void *a, const void *b)
{
    const cgr__prof_range *x = a, *y = b;
    const uint32_t kx = x->user ? x->id : x->tid, ky = y->user ? y->id : y->tid;
    const uint32_t sx = x->user ? x->what : x->seq, sy = y->user ? y->what : y->seq;
    if (x->user != y->user)
        return x->user < y->user ? -1 : 1;
    return kx != ky ? (kx < ky ? -1 : 1) : sx < sy ? -1 : sx > sy;
}

/* By track, then start; of two that start together the longer first, as it holds the other. */
static int cmp_track(const void *a, const void *b)
{
    const cgr__prof_range *x = a, *y = b;
    if (x->user != y->user || x->tid != y->tid)
        return x->user != y->user ? (x->user < y->user ? -1 : 1) : x->tid < y->tid ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end;
}

int cgr__prof_pair_ranges(cgr__prof_range *r, size_t n, size_t *n_out, uint64_t *open)
{
    size_t *stack = malloc((n ? n : 1) * sizeof *stack), top = 0, k = 0;
    *n_out = 0;
    *open = 0;
    if (!stack)
        return -1;
    if (n > 1)
        qsort(r, n, sizeof *r, cmp_end);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && !same_group(&r[i], &r[i - 1])) {
            *open += top;
            top = 0;
        }
        if (r[i].what == CGR__PROF_RANGE_START) {
            stack[top++] = i;
        } else if (r[i].what == CGR__PROF_RANGE_END && top > 0) {
            /* An end closes its group's last start still open. */
            cgr__prof_range *s = &r[stack[--top]];
            s->end = r[i].start;
            s->what = CGR__PROF_RANGE_WHOLE;
        } else if (r[i].what == CGR__PROF_RANGE_MARK) {
            r[i].end = r[i].start;
        }
    }
    *open += top;
    for (size_t i = 0; i < n; i++)
        if (r[i].what == CGR__PROF_RANGE_WHOLE || r[i].what == CGR__PROF_RANGE_MARK)
            r[k++] = r[i];
    if (k > 1)
        qsort(r, k, sizeof *r, cmp_track);
    /* Depth on each track: how many ranges still open hold this one. */
    top = 0;
    for (size_t i = 0; i < k; i++) {
        if (i > 0 && (r[i].user != r[i - 1].user || r[i].tid != r[i - 1].tid))
            top = 0;
        while (top > 0 && r[stack[top - 1]].end <= r[i].start)
            top--;
        if (top > 0 && r[i].end > r[stack[top - 1]].end) {
            r[i].depth = -1;
            continue;
        }
        r[i].depth = top < INT16_MAX ? (int16_t)top : INT16_MAX;
        stack[top++] = i;
    }
    free(stack);
    *n_out = k;
    return 0;
}

/*
 * The ranges on tracks of process 1 from tid 2 on, a named one per thread
 * for cgr's phases and one for the user's NVTX. A track's slices must nest;
 * a range that does not (nvtxRangeStart/End may cross) is an async slice.
 */
static void trace_ranges(cgr__prof_trace_out *o, const cgr__prof_range *r, size_t n,
                         uint64_t origin)
{
    unsigned tid = 1;
    for (size_t i = 0; i < n; i++) {
        const char *cat = r[i].user ? "nvtx" : "cgr phase";
        if (i == 0 || r[i].user != r[i - 1].user || r[i].tid != r[i - 1].tid) {
            tid++;
            out_event(o);
            out_printf(o, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
                          "\"args\":{\"name\":\"%s, thread %u\"}}",
                       tid, r[i].user ? "NVTX" : "cgr phases", (unsigned)r[i].tid);
        }
        event(o, r[i].name, cat, 1, tid, r[i].start, origin);
        if (r[i].what == CGR__PROF_RANGE_MARK) {
            out_printf(o, "\"ph\":\"i\",\"s\":\"t\"}");
        } else if (r[i].depth >= 0) {
            slice(o, r[i].start, r[i].end);
            out_printf(o, "}");
        } else {
            out_printf(o, "\"ph\":\"b\",\"id\":%zu}", i);
            event(o, r[i].name, cat, 1, tid, r[i].end, origin);
            out_printf(o, "\"ph\":\"e\",\"id\":%zu}", i);
        }
    }
}

const char cgr__prof_trace_head[] = "{\"traceEvents\":[\n";
const char cgr__prof_trace_tail[] = "\n],\"displayTimeUnit\":\"ns\"}\n";

int cgr__prof_write_trace(FILE *f, const char *step, const cgr__prof_rec *recs, size_t n,
                          const int32_t *run_of, const cgr__prof_run *runs, size_t n_runs,
                          const char *const *names, size_t n_names,
                          const cgr__prof_range *ranges, size_t n_ranges)
{
    const uint64_t origin = n_runs ? runs[0].begin : n ? recs[0].start : 0;
    cgr__prof_trace_out o = {.f = f};
    int bad = fputs(cgr__prof_trace_head, f) < 0;
    trace_process(&o, 1, "cgr host: step ", step);
    for (size_t j = 0; j < n_runs; j++) {
        char name[48];
        snprintf(name, sizeof name, "run %zu (%s)", j, mode_names[runs[j].mode == CGR__PROF_GRAPH]);
        event(&o, name, "cgr run", 1, 1, runs[j].begin, origin);
        slice(&o, runs[j].begin, runs[j].end);
        out_printf(&o, ",\"args\":{\"cpu_us\":%.3f}}", (double)runs[j].cpu_ns / 1e3);
    }
    trace_ranges(&o, ranges, n_ranges, origin);
    bad |= cgr__prof_trace_gpu(&o, 2, "GPU", recs, n, run_of, names, n_names, origin) != 0;
    bad |= fputs(cgr__prof_trace_tail, f) < 0;
    return bad ? -1 : 0;
}
