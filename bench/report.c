/*
 * Tables, the closing summary and the JSON file. Derived figures (ratios,
 * added costs) are computed in one place and used by both outputs, so the
 * table and the JSON cannot disagree.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "cgr/cgr.h"
#include "json.h"
#include "util.h"

/* ---- derived figures ------------------------------------------------------ */

static int usable(const mode_result *r)
{
    return r->ran && !r->failed;
}

static double wall_med(const mode_result *r)
{
    return usable(r) ? r->wall.median : NAN;
}

static double cpu_med(const mode_result *r)
{
    return usable(r) ? r->cpu.median : NAN;
}

typedef struct chain_derived {
    double per_kernel[CHAIN_MODES]; /* wall median / N */
    double speedup_vs_eager;        /* eager wall / cgr wall */
    double cgr_over_graph;          /* cgr per kernel / raw graph per kernel */
    double host_cgr_minus_graph;    /* us per step */
    double io_zero_copy, io_fast_path, io_memcpy_nodes, io_memcpy_async; /* added wall us */
    double io_event_wait;
} chain_derived;

static void chain_derive(const chain_result *c, chain_derived *d)
{
    const mode_result *m = c->mode;
    for (int i = 0; i < CHAIN_MODES; i++)
        d->per_kernel[i] = wall_med(&m[i]) / c->n_kernels;
    d->speedup_vs_eager = wall_med(&m[CHAIN_EAGER]) / wall_med(&m[CHAIN_CGR]);
    d->cgr_over_graph = wall_med(&m[CHAIN_CGR]) / wall_med(&m[CHAIN_GRAPH]);
    d->host_cgr_minus_graph = cpu_med(&m[CHAIN_CGR]) - cpu_med(&m[CHAIN_GRAPH]);
    d->io_zero_copy = wall_med(&m[CHAIN_CGR_IO]) - wall_med(&m[CHAIN_CGR]);
    d->io_fast_path = wall_med(&m[CHAIN_CGR_IO_FAST]) - wall_med(&m[CHAIN_CGR]);
    d->io_memcpy_nodes = wall_med(&m[CHAIN_CGR_IO_MEMCPY]) - wall_med(&m[CHAIN_CGR]);
    d->io_memcpy_async = wall_med(&m[CHAIN_GRAPH_IO]) - wall_med(&m[CHAIN_GRAPH]);
    d->io_event_wait = wall_med(&m[CHAIN_CGR_IO_EVENT]) - wall_med(&m[CHAIN_CGR]);
}

static double slot_added_wall(const staging_result *s, int mode)
{
    return wall_med(&s->slot[mode]) - wall_med(&s->slot[SLOT_BASELINE]);
}

static double slot_added_cpu(const staging_result *s, int mode)
{
    return cpu_med(&s->slot[mode]) - cpu_med(&s->slot[SLOT_BASELINE]);
}

static const chain_result *chain_for(const bench_results *res, int n)
{
    for (int i = 0; i < res->n_chain; i++)
        if (res->chain[i].n_kernels == n)
            return &res->chain[i];
    return NULL;
}

/*
 * 1 when the raw graph got slower across the cgr modes (host CPU up by more
 * than half and 1 us, or wall by 10 % and 2 us), 0 when not, -1 unknown.
 */
static int canary_side_effect(const bench_results *res)
{
    const mode_result *b = &res->canary_before, *a = &res->canary_after;
    if (!res->canary_ran || !usable(b) || !usable(a))
        return -1;
    double bc = b->cpu.median, ac = a->cpu.median, bw = b->wall.median, aw = a->wall.median;
    return (ac > 1.5 * bc && ac - bc > 1.0) || (aw > 1.1 * bw && aw - bw > 2.0);
}

/* ---- text helpers ------------------------------------------------------ */

/* A number in a column, or "n/a" when it could not be measured. */
static void num(int width, int prec, double v)
{
    if (isfinite(v))
        printf(" %*.*f", width, prec, v);
    else
        printf(" %*s", width, "n/a");
}

/* A signed difference in a column ("+3.30"). */
static void diff(int width, int prec, double v)
{
    if (isfinite(v))
        printf(" %+*.*f", width, prec, v);
    else
        printf(" %*s", width, "n/a");
}

static const char *size_label(size_t bytes, char *buf, size_t n)
{
    if (bytes >= ((size_t)1 << 20) && bytes % ((size_t)1 << 20) == 0)
        snprintf(buf, n, "%zu MiB", bytes >> 20);
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, n, "%zu KiB", bytes >> 10);
    else
        snprintf(buf, n, "%zu B", bytes);
    return buf;
}

/* For a row that has no numbers: why. Returns 1 when it printed. */
static int row_problem(const mode_result *r)
{
    if (usable(r))
        return 0;
    if (r->skipped)
        printf("  skipped (device failed earlier)\n");
    else
        printf("  FAILED%s: %.90s\n", r->wrong ? " (WRONG RESULT)" : "", r->error);
    return 1;
}

static void checked(const mode_result *r)
{
    if (r->verified)
        printf(" %8ld", r->verified);
    else
        printf(" %8s", "-");
}

/* ---- chain table ---------------------------------------------------------- */

static const char *const chain_labels[CHAIN_MODES] = {
    [CHAIN_EAGER] = "eager <<<>>> launches",
    [CHAIN_GRAPH] = "raw CUDA graph",
    [CHAIN_CGR] = "cgr",
    [CHAIN_CGR_IO] = "cgr, I/O zero-copy",
    [CHAIN_CGR_IO_FAST] = "cgr, I/O zero-copy, slot fast path",
    [CHAIN_GRAPH_IO] = "raw graph + cudaMemcpyAsync I/O",
    [CHAIN_CGR_IO_MEMCPY] = "cgr, I/O by memcpy nodes",
    [CHAIN_CGR_IO_EVENT] = "cgr, I/O zero-copy, event wait",
};

/* Print order: the three comparisons first, then the I/O variants. */
static const int chain_order[CHAIN_MODES] = {
    CHAIN_EAGER, CHAIN_GRAPH, CHAIN_CGR, CHAIN_CGR_IO, CHAIN_CGR_IO_FAST, CHAIN_CGR_IO_EVENT,
    CHAIN_CGR_IO_MEMCPY, CHAIN_GRAPH_IO,
};

static void chain_rows(const chain_result *c)
{
    for (int j = 0; j < CHAIN_MODES; j++) {
        const mode_result *r = &c->mode[chain_order[j]];
        printf("%5d  %-35s", c->n_kernels, chain_labels[chain_order[j]]);
        if (row_problem(r))
            continue;
        num(9, 2, r->wall.median);
        num(9, 2, r->wall.p10);
        num(9, 2, r->wall.p90);
        num(9, 3, r->wall.median / c->n_kernels);
        num(9, 2, r->cpu.median);
        num(8, 2, r->cpu.p10);
        num(8, 2, r->cpu.p90);
        checked(r);
        printf("\n");
    }
}

static void chain_ratios(const chain_result *c)
{
    chain_derived d;
    chain_derive(c, &d);
    printf("%5d", c->n_kernels);
    num(11, 2, d.speedup_vs_eager);
    num(11, 3, d.cgr_over_graph);
    diff(12, 2, d.host_cgr_minus_graph);
    diff(12, 2, d.io_zero_copy);
    diff(12, 2, d.io_fast_path);
    diff(12, 2, d.io_event_wait);
    diff(12, 2, d.io_memcpy_nodes);
    diff(12, 2, d.io_memcpy_async);
    printf("\n");
}

static void canary_lines(const bench_results *res, const char *indent)
{
    if (!res->canary_ran)
        return;
    const mode_result *b = &res->canary_before, *a = &res->canary_after;
    printf("%sraw graph N=100 before | after the cgr modes and a capture diagnosis: wall",
           indent);
    num(8, 2, wall_med(b));
    printf(" |");
    num(8, 2, wall_med(a));
    printf(" us, host CPU");
    num(7, 2, cpu_med(b));
    printf(" |");
    num(7, 2, cpu_med(a));
    printf(" us\n");
    if (canary_side_effect(res) == 1)
        printf("%sWARNING: the same raw CUDA graph is slower after cgr ran: cgr changed the whole "
               "process\n%s(e.g. a CUPTI subscription makes every later cudaGraphLaunch slower "
               "until cuptiFinalize)\n", indent, indent);
}

void report_chain(const bench_results *res)
{
    if (!res->chain_ran)
        return;
    printf("\n== W-chain: N launches of a 16x256-thread elementwise kernel on 4096 floats ==\n");
    printf("    N  %-35s %9s %9s %9s %9s %9s %8s %8s %8s\n", "mode", "wall med", "p10", "p90",
           "us/kernel", "host med", "p10", "p90", "checked");
    for (int i = 0; i < res->n_chain; i++)
        chain_rows(&res->chain[i]);
    printf("\n  ratios: speedup = eager/cgr wall; cgr/raw = per-kernel wall; host = cgr minus raw "
           "graph host CPU us;\n  I/O (4 KiB in + 4 B out) = added wall us: cgr modes vs cgr "
           "without I/O, memcpyAsync vs raw graph\n");
    printf("%5s %11s %11s %12s %12s %12s %12s %12s %12s\n", "N", "speedup", "cgr/raw",
           "host +us", "I/O zc", "I/O fast", "I/O event", "I/O mcpy nd", "I/O mcpyAsy");
    for (int i = 0; i < res->n_chain; i++)
        chain_ratios(&res->chain[i]);
    if (usable(&res->timer))
        printf("  clock overhead (empty step): wall %.2f us, host CPU %.2f us\n",
               res->timer.wall.median, res->timer.cpu.median);
    canary_lines(res, "  ");
}

/* ---- staging tables ------------------------------------------------------ */

static const char *const slot_labels[SLOT_MODES] = {
    [SLOT_PER_EXEC] = "one executable per slot",
    [SLOT_REPOINT] = "repoint staging nodes per launch",
    [SLOT_INDEX] = "slot index in mapped memory",
    [SLOT_BASELINE] = "no I/O (baseline)",
};

static void slot_table(const staging_result *s)
{
    printf("\n== Staging (a): pointing a %d-kernel graph at the current slot, 4 KiB in + 4 B "
           "out, zero-copy ==\n", STAGING_KERNELS);
    printf("  %-34s %9s %9s %9s %9s %11s %11s %8s\n", "mode", "wall med", "p10", "p90",
           "host med", "added wall", "added host", "checked");
    for (int m = 0; m < SLOT_MODES; m++) {
        const mode_result *r = &s->slot[m];
        printf("  %-34s", slot_labels[m]);
        if (row_problem(r))
            continue;
        num(9, 2, r->wall.median);
        num(9, 2, r->wall.p10);
        num(9, 2, r->wall.p90);
        num(9, 2, r->cpu.median);
        diff(11, 2, m == SLOT_BASELINE ? 0.0 : slot_added_wall(s, m));
        diff(11, 2, m == SLOT_BASELINE ? 0.0 : slot_added_cpu(s, m));
        checked(r);
        printf("\n");
    }
}

static void sweep_row(const sweep_point *p)
{
    char sz[32];
    printf("  %-8s", size_label(p->in_bytes, sz, sizeof sz));
    double zc = wall_med(&p->zc) - wall_med(&p->base);
    double mc = wall_med(&p->memcpy) - wall_med(&p->base);
    num(10, 2, wall_med(&p->base));
    diff(12, 2, zc);
    diff(12, 2, mc);
    num(9, 2, cpu_med(&p->zc));
    num(9, 2, cpu_med(&p->memcpy));
    printf("  %s", !(isfinite(zc) && isfinite(mc)) ? "n/a" : mc < zc ? "memcpy node" : "kernel");
    const mode_result *bad[3] = {&p->base, &p->zc, &p->memcpy};
    for (int i = 0; i < 3; i++)
        if (!usable(bad[i]))
            printf("  [%s %s%s]", bad[i]->name, bad[i]->skipped ? "skipped" : "FAILED",
                   bad[i]->wrong ? ", WRONG RESULT" : "");
    printf("\n");
}

static void crossover_line(const staging_result *s, const char *indent)
{
    char sz[32], first[32];
    const char *note = s->crossover_valid ? "" : " [some sizes failed]";
    if (s->crossover_bytes) {
        printf("%scrossover zero-copy -> memcpy node: %s (memcpy node faster from there up)%s\n",
               indent, size_label(s->crossover_bytes, sz, sizeof sz), note);
        if (s->first_memcpy_faster_bytes != s->crossover_bytes)
            printf("%s(memcpy node first faster at %s, not at every size above it)\n", indent,
                   size_label(s->first_memcpy_faster_bytes, first, sizeof first));
    } else {
        printf("%scrossover zero-copy -> memcpy node: none up to %s%s\n", indent,
               size_label(s->sweep[s->n_sweep - 1].in_bytes, sz, sizeof sz), note);
    }
}

void report_staging(const bench_results *res)
{
    if (!res->staging_ran)
        return;
    const staging_result *s = &res->staging;
    slot_table(s);
    printf("\n== Staging (b): input by zero-copy kernel node vs memcpy node (%d-kernel graph, "
           "4 B zero-copy output in all) ==\n", STAGING_KERNELS);
    printf("  %-8s %10s %12s %12s %9s %9s  %s\n", "input", "baseline", "+zero-copy",
           "+memcpy nd", "zc host", "mc host", "faster");
    for (int i = 0; i < s->n_sweep; i++)
        sweep_row(&s->sweep[i]);
    crossover_line(s, "  ");
}

/* ---- all results, for the verdict --------------------------------------- */

typedef void (*mode_visit)(const char *group, const mode_result *r, void *u);

static void visit_modes(const bench_results *res, mode_visit fn, void *u)
{
    char g[48];
    for (int i = 0; res->chain_ran && i < res->n_chain; i++) {
        snprintf(g, sizeof g, "chain N=%d", res->chain[i].n_kernels);
        for (int m = 0; m < CHAIN_MODES; m++)
            fn(g, &res->chain[i].mode[m], u);
    }
    if (res->canary_ran) {
        fn("canary", &res->canary_before, u);
        fn("canary", &res->canary_after, u);
    }
    for (int i = 0; i < res->n_work; i++) {
        snprintf(g, sizeof g, "%s B=%d", res->work[i].name, res->work[i].B);
        for (int m = 0; m < WORK_MODES; m++)
            fn(g, &res->work[i].mode[m].m, u);
    }
    if (!res->staging_ran)
        return;
    for (int m = 0; m < SLOT_MODES; m++)
        fn("staging slot", &res->staging.slot[m], u);
    for (int i = 0; i < res->staging.n_sweep; i++) {
        const sweep_point *p = &res->staging.sweep[i];
        snprintf(g, sizeof g, "staging %zu KiB", p->in_bytes >> 10);
        fn(g, &p->base, u);
        fn(g, &p->zc, u);
        fn(g, &p->memcpy, u);
    }
}

typedef struct verdict {
    int failed, wrong, skipped;
    long verified;
    char first[160];
} verdict;

static void tally(const char *group, const mode_result *r, void *u)
{
    verdict *v = u;
    v->verified += r->verified;
    v->wrong += r->wrong;
    v->skipped += r->skipped;
    if (!usable(r) && !r->skipped) {
        if (!v->failed)
            snprintf(v->first, sizeof v->first, "%s %s", group, r->name);
        v->failed++;
    }
}

static void get_verdict(const bench_results *res, verdict *v)
{
    memset(v, 0, sizeof *v);
    visit_modes(res, tally, v);
}

int results_failed(const bench_results *res)
{
    verdict v;
    get_verdict(res, &v);
    return v.failed || v.wrong || v.skipped || res->aborted ||
           (res->diagnosis_ran && !res->diagnosis_ok);
}

/* ---- summary ---------------------------------------------------------- */

static void summary_chain(const bench_results *res)
{
    const chain_result *c = chain_for(res, 100);
    if (!c)
        return;
    chain_derived d;
    chain_derive(c, &d);
    printf("%-46s", res->cfg.pdl ? "W-chain N=100 PDL us/kernel: eager|graph|cgr"
                                     : "W-chain N=100 us/kernel: eager | graph | cgr");
    num(8, 3, d.per_kernel[CHAIN_EAGER]);
    num(8, 3, d.per_kernel[CHAIN_GRAPH]);
    num(8, 3, d.per_kernel[CHAIN_CGR]);
    printf("\n%-46s", "cgr/raw graph per kernel | speedup vs eager");
    num(8, 3, d.cgr_over_graph);
    printf("x");
    num(7, 2, d.speedup_vs_eager);
    printf("x\n%-46s", "host CPU us/step: cgr | raw graph | diff");
    num(8, 2, cpu_med(&c->mode[CHAIN_CGR]));
    num(8, 2, cpu_med(&c->mode[CHAIN_GRAPH]));
    diff(8, 2, d.host_cgr_minus_graph);
    printf("\n%-46s", "I/O 4KiB+4B added us: zc | zc, event wait");
    diff(8, 2, d.io_zero_copy);
    diff(8, 2, d.io_event_wait);
    printf("\n%-46s", "I/O 4KiB+4B added us: memcpy nd | mcpyAsync");
    diff(8, 2, d.io_memcpy_nodes);
    diff(8, 2, d.io_memcpy_async);
    printf("\n");
}

static void summary_staging(const bench_results *res)
{
    if (!res->staging_ran)
        return;
    const staging_result *s = &res->staging;
    static const char *const short_names[SLOT_MODES] = {
        [SLOT_PER_EXEC] = "exec per slot", [SLOT_REPOINT] = "repoint nodes",
        [SLOT_INDEX] = "slot index (mapped)", [SLOT_BASELINE] = "",
    };
    for (int m = 0; m < SLOT_BASELINE; m++) {
        char label[64];
        snprintf(label, sizeof label, "slot: %s, added us wall | host", short_names[m]);
        printf("%-46s", label);
        diff(8, 2, slot_added_wall(s, m));
        diff(8, 2, slot_added_cpu(s, m));
        printf("\n");
    }
    char sz[32];
    printf("%-46s %s%s\n", "crossover zero-copy -> memcpy node",
           s->crossover_bytes ? size_label(s->crossover_bytes, sz, sizeof sz)
                              : "none up to 16 MiB",
           s->crossover_valid ? "" : " (incomplete: some sizes failed)");
}

static void summary_canary(const bench_results *res)
{
    if (!res->canary_ran)
        return;
    printf("%-46s", "raw graph N=100 host us: before | after cgr");
    num(8, 2, cpu_med(&res->canary_before));
    num(8, 2, cpu_med(&res->canary_after));
    int fx = canary_side_effect(res);
    printf("%s\n", fx == 1 ? "  WARNING: cgr slowed the process" : fx == 0 ? "  (unchanged)" : "");
    /* The cgr modes and a capture diagnosis ran between the two canaries. */
    if (res->diagnosis_ran)
        printf("%-46s %s%.200s\n", "diagnosis between the canaries",
               res->diagnosis_ok ? "" : "FAILED: ", res->diagnosis);
}

void report_summary(const bench_results *res)
{
    verdict v;
    get_verdict(res, &v);
    printf("\n==== cgr-bench summary: %s, %d steps/mode ====\n", res->device_name,
           res->cfg.steps);
    summary_chain(res);
    summary_canary(res);
    summary_staging(res);
    if (res->n_work > 0) {
        printf("%-16s %4s %8s %8s %7s %7s %8s %8s %8s %8s\n", "workload (us)", "B", "eager",
               "graph", "speedup", "g.host", "g.busy", "g.busy-u", "wall/bsy", "wall/b-u");
        for (int i = 0; i < res->n_work; i++) {
            const work_result *w = &res->work[i];
            const work_mode *e = &w->mode[WORK_EAGER], *g = &w->mode[WORK_GRAPH];
            printf("%-16s %4d", w->name, w->B);
            num(8, 1, wall_med(&e->m));
            num(8, 1, wall_med(&g->m));
            num(6, 2, wall_med(&e->m) / wall_med(&g->m));
            printf("x");
            num(7, 1, cpu_med(&g->m));
            num(8, 1, g->prof_ok ? g->busy_us : NAN);
            num(8, 1, g->prof_ok ? g->busy_union_us : NAN);
            num(8, 2, g->prof_ok ? wall_med(&g->m) / g->busy_us : NAN);
            num(8, 2, g->prof_ok ? wall_med(&g->m) / g->busy_union_us : NAN);
            printf("\n");
        }
    }
    if (!v.failed && !v.wrong && !v.skipped && !res->aborted)
        printf("%-46s PASS (%ld outputs checked)\n", "result", v.verified);
    else
        printf("%-46s FAIL: %d failed, %d wrong, %d skipped%s%s\n", "result", v.failed, v.wrong,
               v.skipped, v.first[0] ? "; first: " : "", v.first);
}

/* ---- JSON ------------------------------------------------------------ */

void report_json_stats(json_writer *w, const char *key, const bench_stats *s, int ok)
{
    json_begin_object(w, key);
    json_number(w, "median", ok ? s->median : NAN);
    json_number(w, "p10", ok ? s->p10 : NAN);
    json_number(w, "p90", ok ? s->p90 : NAN);
    json_number(w, "mean", ok ? s->mean : NAN);
    json_number(w, "min", ok ? s->min : NAN);
    json_number(w, "max", ok ? s->max : NAN);
    json_end_object(w);
}

static void json_mode(json_writer *w, const mode_result *r, int n_kernels, const cgr_info *ci)
{
    int ok = usable(r);
    json_begin_object(w, r->name);
    json_bool(w, "ok", ok);
    json_bool(w, "wrong_result", r->wrong);
    json_bool(w, "skipped", r->skipped);
    if (r->error[0])
        json_string(w, "error", r->error);
    json_int(w, "warmup", r->warmup);
    json_int(w, "steps", r->steps);
    json_int(w, "checked_steps", r->verified);
    report_json_stats(w, "wall_us", &r->wall, ok);
    report_json_stats(w, "host_cpu_us", &r->cpu, ok);
    if (n_kernels > 0)
        json_number(w, "per_kernel_us", wall_med(r) / n_kernels);
    if (ci && ci->valid) {
        json_begin_object(w, "cgr");
        json_int(w, "graph_nodes", (long long)ci->graph_nodes);
        json_int(w, "zero_copy_tensors", (long long)ci->zero_copy_tensors);
        json_int(w, "memcpy_tensors", (long long)ci->memcpy_tensors);
        json_int(w, "replays", (long long)ci->replays);
        json_int(w, "warmup_runs", (long long)ci->warmup_runs);
        json_number(w, "capture_us", ci->capture_us);
        json_end_object(w);
    }
    json_end_object(w);
}

static void json_chain(json_writer *w, const chain_result *c)
{
    chain_derived d;
    chain_derive(c, &d);
    json_begin_object(w, NULL);
    json_int(w, "n_kernels", c->n_kernels);
    json_begin_object(w, "modes");
    for (int m = 0; m < CHAIN_MODES; m++)
        json_mode(w, &c->mode[m], c->n_kernels, c->cgr[m].valid ? &c->cgr[m] : NULL);
    json_end_object(w);
    json_begin_object(w, "ratios");
    json_number(w, "speedup_cgr_vs_eager", d.speedup_vs_eager);
    json_number(w, "cgr_over_graph_per_kernel", d.cgr_over_graph);
    json_number(w, "host_cpu_cgr_minus_graph_us", d.host_cgr_minus_graph);
    json_end_object(w);
    json_begin_object(w, "io_cost_us");
    json_number(w, "cgr_zero_copy", d.io_zero_copy);
    json_number(w, "cgr_zero_copy_fast_path", d.io_fast_path);
    json_number(w, "cgr_memcpy_nodes", d.io_memcpy_nodes);
    json_number(w, "cgr_zero_copy_event_wait", d.io_event_wait);
    json_number(w, "graph_memcpy_async", d.io_memcpy_async);
    json_end_object(w);
    json_end_object(w);
}

static void json_slots(json_writer *w, const staging_result *s)
{
    json_begin_object(w, "slot_pointing");
    json_int(w, "n_kernels", STAGING_KERNELS);
    json_int(w, "in_bytes", 4096);
    json_int(w, "out_bytes", 4);
    json_begin_object(w, "modes");
    for (int m = 0; m < SLOT_MODES; m++)
        json_mode(w, &s->slot[m], 0, NULL);
    json_end_object(w);
    json_begin_object(w, "added_wall_us");
    for (int m = 0; m < SLOT_BASELINE; m++)
        json_number(w, s->slot[m].name, slot_added_wall(s, m));
    json_end_object(w);
    json_begin_object(w, "added_host_cpu_us");
    for (int m = 0; m < SLOT_BASELINE; m++)
        json_number(w, s->slot[m].name, slot_added_cpu(s, m));
    json_end_object(w);
    json_end_object(w);
}

static void json_sweep(json_writer *w, const staging_result *s)
{
    json_begin_object(w, "crossover");
    json_int(w, "n_kernels", STAGING_KERNELS);
    json_int(w, "out_bytes", 4);
    json_begin_array(w, "points");
    for (int i = 0; i < s->n_sweep; i++) {
        const sweep_point *p = &s->sweep[i];
        json_begin_object(w, NULL);
        json_int(w, "in_bytes", (long long)p->in_bytes);
        json_mode(w, &p->base, 0, NULL);
        json_mode(w, &p->zc, 0, NULL);
        json_mode(w, &p->memcpy, 0, NULL);
        json_number(w, "added_zero_copy_us", wall_med(&p->zc) - wall_med(&p->base));
        json_number(w, "added_memcpy_node_us", wall_med(&p->memcpy) - wall_med(&p->base));
        json_end_object(w);
    }
    json_end_array(w);
    if (s->crossover_bytes)
        json_int(w, "crossover_bytes", (long long)s->crossover_bytes);
    else
        json_null(w, "crossover_bytes");
    if (s->first_memcpy_faster_bytes)
        json_int(w, "first_memcpy_faster_bytes", (long long)s->first_memcpy_faster_bytes);
    else
        json_null(w, "first_memcpy_faster_bytes");
    json_bool(w, "crossover_complete", s->crossover_valid);
    json_end_object(w);
}

static void json_header(json_writer *w, const bench_results *res)
{
    json_string(w, "tool", "cgr-bench");
    json_string(w, "cgr_version", CGR_VERSION_STRING);
    json_begin_object(w, "device");
    json_int(w, "index", res->device);
    json_string(w, "name", res->device_name);
    json_int(w, "cc_major", res->cc_major);
    json_int(w, "cc_minor", res->cc_minor);
    json_bool(w, "pdl_allowed", res->pdl_allowed);
    json_int(w, "sm_count", res->sm_count);
    json_int(w, "driver_version", res->driver_version);
    json_int(w, "runtime_version", res->runtime_version);
    json_end_object(w);
    json_begin_object(w, "config");
    json_int(w, "steps", res->cfg.steps);
    json_int(w, "warmup", res->cfg.warmup);
    json_bool(w, "quick", res->cfg.quick);
    json_end_object(w);
    json_begin_object(w, "clock_overhead");
    json_mode(w, &res->timer, 0, NULL);
    json_end_object(w);
}

static void json_work(json_writer *w, const bench_results *res);

int report_suite_json_open(json_writer *w, const char *path, const char *suite,
                           const char *device_name)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        bench_error("cannot write %s", path);
        return -1;
    }
    json_init(w, f);
    json_begin_object(w, NULL);
    json_string(w, "suite", suite);
    json_string(w, "device_name", device_name);
    return 0;
}

int report_suite_json_close(json_writer *w, const char *path)
{
    json_end_object(w);
    const int rc = json_finish(w);
    if (fclose(w->f) != 0 || rc != 0) {
        bench_error("writing %s failed", path);
        return -1;
    }
    return 0;
}

int report_json(const bench_results *res, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cgr-bench: error: cannot write %s: ", path);
        perror(NULL);
        return -1;
    }
    json_writer w;
    json_init(&w, f);
    json_begin_object(&w, NULL);
    json_header(&w, res);
    if (res->chain_ran) {
        json_begin_array(&w, "chain");
        for (int i = 0; i < res->n_chain; i++)
            json_chain(&w, &res->chain[i]);
        json_end_array(&w);
    }
    if (res->staging_ran) {
        json_begin_object(&w, "staging");
        json_slots(&w, &res->staging);
        json_sweep(&w, &res->staging);
        json_end_object(&w);
    }
    if (res->canary_ran) {
        int fx = canary_side_effect(res);
        json_begin_object(&w, "canary");
        json_string(&w, "what", "raw CUDA graph, N=100, measured before and after the cgr modes "
                                "and a capture diagnosis");
        json_mode(&w, &res->canary_before, 100, NULL);
        json_mode(&w, &res->canary_after, 100, NULL);
        if (fx < 0)
            json_null(&w, "process_slowed_by_cgr");
        else
            json_bool(&w, "process_slowed_by_cgr", fx);
        if (res->diagnosis_ran) {
            json_bool(&w, "diagnosis_ok", res->diagnosis_ok);
            json_string(&w, "diagnosis", res->diagnosis);
        }
        json_end_object(&w);
    }
    if (res->n_work)
        json_work(&w, res);
    json_bool(&w, "ok", !results_failed(res));
    json_end_object(&w);
    int rc = json_finish(&w);
    if (fclose(f) != 0 || rc != 0) {
        fprintf(stderr, "cgr-bench: error: writing %s failed\n", path);
        return -1;
    }
    return 0;
}

/* ---- workloads ------------------------------------------------------------ */

static void work_row(const work_result *w, int m)
{
    static const char *names[WORK_MODES] = {"cgr eager", "cgr graph"};
    const work_mode *x = &w->mode[m];
    printf("  %-6s %4d  %-10s", w->name, w->B, names[m]);
    if (row_problem(&x->m))
        return;
    num(9, 1, x->m.wall.median);
    num(9, 1, x->m.wall.p10);
    num(9, 1, x->m.wall.p90);
    num(9, 1, x->m.cpu.median);
    if (x->prof_ok) {
        num(9, 1, x->busy_us);
        num(9, 1, x->busy_union_us);
        num(8, 2, x->m.wall.median / x->busy_us);
        num(8, 1, x->kernels_per_step);
    } else {
        printf("%9s %9s %8s %8s", "-", "-", "-", "-");
    }
    printf("\n");
}

void report_work(const bench_results *res)
{
    if (res->n_work == 0)
        return;
    printf("\n== Workloads through cgr: eager (capture = 0) vs graph, same step function ==\n");
    printf("  busy: sum of kernel and memcpy durations (CUPTI); busy-u: their union on the\n"
           "  timeline, which is smaller when PDL kernels start while the previous one runs\n");
    printf("  %-6s %4s  %-10s %9s %9s %9s %9s %9s %9s %8s %8s\n", "work", "B", "mode",
           "wall med", "p10", "p90", "host med", "busy", "busy-u", "wall/bsy", "kern/st");
    for (int i = 0; i < res->n_work; i++) {
        const work_result *w = &res->work[i];
        for (int m = 0; m < WORK_MODES; m++)
            work_row(w, m);
        const work_mode *e = &w->mode[WORK_EAGER], *g = &w->mode[WORK_GRAPH];
        if (usable(&e->m) && usable(&g->m))
            printf("  %-6s %4d  graph speedup over eager %.2fx; capture %.0f us, %llu nodes; "
                   "last outputs %s\n",
                   w->name, w->B, e->m.wall.median / g->m.wall.median, g->capture_us,
                   (unsigned long long)g->graph_nodes,
                   w->outputs_equal == 1 ? "bitwise equal" : "DIFFER");
        if (res->cfg.profile && w->n_top) {
            printf("    top kernels (graph): %-78s %6s %9s %7s\n", "name", "calls", "total us",
                   "share");
            for (int k = 0; k < w->n_top; k++)
                printf("    %s\n", w->top[k]);
        }
    }
}

static void json_work(json_writer *w, const bench_results *res)
{
    /* The common schema bench/peer/compare.py reads. */
    static const char *modes[WORK_MODES] = {"eager", "graph"};
    json_begin_array(w, "results");
    for (int i = 0; i < res->n_work; i++) {
        const work_result *r = &res->work[i];
        for (int m = 0; m < WORK_MODES; m++) {
            const work_mode *x = &r->mode[m];
            int ok = usable(&x->m);
            json_begin_object(w, NULL);
            json_string(w, "workload", r->name);
            json_int(w, "B", r->B);
            json_string(w, "mode", modes[m]);
            json_bool(w, "ok", ok);
            report_json_stats(w, "wall_us", &x->m.wall, ok);
            report_json_stats(w, "cpu_us", &x->m.cpu, ok);
            if (x->prof_ok) {
                json_number(w, "busy_us", x->busy_us);
                json_number(w, "busy_union_us", x->busy_union_us);
                json_number(w, "kernels_per_step", x->kernels_per_step);
                json_number(w, "memcpys_per_step", x->memcpys_per_step);
            } else {
                json_null(w, "busy_us");
            }
            if (m == WORK_GRAPH) {
                json_number(w, "capture_us", x->capture_us);
                json_int(w, "graph_nodes", (long long)x->graph_nodes);
                json_int(w, "outputs_equal_eager", r->outputs_equal);
            }
            json_end_object(w);
        }
    }
    json_end_array(w);
}
