/*
 * The reporter: the text report (each suite's tables, then the closing
 * summary with every check) and the JSON file (docs/bench-json.md), from
 * the figures the suites filled in. Derived figures (ratios, added costs,
 * spreads) are computed in one place and used by both outputs, so the
 * table and the JSON cannot disagree. This file holds the shared parts
 * (report.h) and the W-chain and workload sections; report_suites.c the
 * others.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cgr/cgr.h"
#include "limits_file.h"
#include "report.h"
#include "util.h"

/* ---- shared parts --------------------------------------------------------- */

int report_usable(const mode_result *r)
{
    return r->ran && !r->failed;
}

double report_wall(const mode_result *r)
{
    return report_usable(r) ? r->wall.median : NAN;
}

double report_cpu(const mode_result *r)
{
    return report_usable(r) ? r->cpu.median : NAN;
}

static void cell(const report_col *c, double v)
{
    const int suffix = (c->flags & (REPORT_TIMES | REPORT_PCT)) != 0;
    if (c->flags & REPORT_GAP)
        putchar(' ');
    if (!isfinite(v)) {
        printf(" %*s", c->width, c->flags & REPORT_DASH ? "-" : "n/a");
        return;
    }
    if (c->flags & REPORT_PCT)
        v *= 100.0;
    if (c->flags & REPORT_SIGNED)
        printf(" %+*.*f", c->width - suffix, c->prec, v);
    else
        printf(" %*.*f", c->width - suffix, c->prec, v);
    if (suffix)
        putchar(c->flags & REPORT_TIMES ? 'x' : '%');
}

void report_num(int width, int prec, double v)
{
    cell(&(report_col){"", width, prec, 0}, v);
}

void report_diff(int width, int prec, double v)
{
    cell(&(report_col){"", width, prec, REPORT_SIGNED}, v);
}

void report_head(const report_table *t)
{
    printf("%s%*s", t->indent, t->label_width, t->label_head);
    for (int i = 0; i < t->n_col; i++)
        printf("%s %*s", t->col[i].flags & REPORT_GAP ? " " : "", t->col[i].width,
               t->col[i].head);
    putchar('\n');
}

void report_row(const report_table *t, const char *label, const double *v)
{
    printf("%s%*s", t->indent, t->label_width, label);
    for (int i = 0; i < t->n_col; i++)
        cell(&t->col[i], v[i]);
    putchar('\n');
}

void report_line(const char *label, const double *v, int n, int prec, unsigned flags)
{
    const report_col c = {"", 8, prec, flags};
    printf("%-46s", label);
    for (int i = 0; i < n; i++)
        cell(&c, v[i]);
    putchar('\n');
}

void report_row_text(const report_table *t, const char *label, const char *why)
{
    printf("%s%*s  %s\n", t->indent, t->label_width, label, why);
}

void report_mode_row(const report_table *t, const char *label, const mode_result *r,
                     const double *v)
{
    char why[160];
    if (report_usable(r))
        report_row(t, label, v);
    else if (r->skipped)
        report_row_text(t, label, "skipped (device failed earlier)");
    else {
        snprintf(why, sizeof why, "FAILED%s: %.90s", r->wrong ? " (WRONG RESULT)" : "", r->error);
        report_row_text(t, label, why);
    }
}

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

void report_json_mode_begin(json_writer *w, const char *key, const mode_result *r)
{
    const int ok = report_usable(r);
    json_begin_object(w, key ? key : r->name);
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
}

void report_json_mode(json_writer *w, const char *key, const mode_result *r)
{
    report_json_mode_begin(w, key, r);
    json_end_object(w);
}

void report_json_values(json_writer *w, const char *key, const char *const *names,
                        const double *v, int n)
{
    json_begin_object(w, key);
    for (int i = 0; i < n; i++)
        json_number(w, names[i], v[i]);
    json_end_object(w);
}

void report_json_figs(json_writer *w, const char *key, const report_fig *f, int n)
{
    json_begin_array(w, key);
    for (int i = 0; i < n; i++) {
        json_begin_object(w, NULL);
        json_string(w, "name", f[i].name);
        json_number(w, "value", f[i].value);
        json_bool(w, "measured", f[i].measured);
        json_end_object(w);
    }
    json_end_array(w);
}

/* ---- derived figures of W-chain ------------------------------------------------ */

/* cgr against the raw graph, per round: the figure whose repeatability the spread gives. */
typedef struct round_spread {
    int n;                         /* rounds where both modes ran */
    double ratio[BENCH_MAX_ROUNDS]; /* cgr median / raw graph median, per round */
    double median, iqr_rel, range_rel; /* of the ratios; relative to their median */
} round_spread;

/*
 * The figures of the ratio table, in the order of its columns and of
 * chain_fig_keys, the JSON's names: the first FIG_IO in "ratios", the
 * others in "io_cost_us".
 */
enum chain_fig {
    FIG_SPEEDUP,        /* eager wall / cgr wall */
    FIG_CGR_OVER_GRAPH, /* cgr per kernel / raw graph per kernel */
    FIG_HOST,           /* host CPU us per step, cgr minus raw graph */
    FIG_PDL,            /* FIG_PDL + each of the three above: the same with PDL */
    FIG_IO = 2 * FIG_PDL, /* I/O, added wall us: cgr zero-copy against cgr without I/O */
    FIG_IO_FAST,        /* the same, the slot fast path */
    FIG_IO_EVENT,       /* the same, waiting on the event */
    FIG_IO_MEMCPY,      /* raw graph + cudaMemcpyAsync against the raw graph */
    CHAIN_FIGS
};

static const char *const chain_fig_keys[CHAIN_FIGS] = {
    "speedup_cgr_vs_eager",     "cgr_over_graph_per_kernel",     "host_cpu_cgr_minus_graph_us",
    "pdl_speedup_cgr_vs_eager", "pdl_cgr_over_graph_per_kernel", "pdl_host_cpu_cgr_minus_graph_us",
    "cgr_zero_copy",            "cgr_zero_copy_fast_path",       "cgr_zero_copy_event_wait",
    "graph_memcpy_async",
};

typedef struct chain_derived {
    double per_kernel[CHAIN_MODES]; /* wall median / N */
    double fig[CHAIN_FIGS];
    round_spread spread[2]; /* [0] without PDL, [1] with */
} chain_derived;

static void spread_of(const chain_result *c, int cgr, int graph, round_spread *s)
{
    double v[BENCH_MAX_ROUNDS];
    s->n = 0;
    if (report_usable(&c->mode[cgr]) && report_usable(&c->mode[graph]))
        for (int k = 0; k < c->rounds && k < BENCH_MAX_ROUNDS; k++) {
            double r = c->round_wall[cgr][k] / c->round_wall[graph][k];
            if (isfinite(r))
                s->ratio[s->n++] = r;
        }
    s->median = s->iqr_rel = s->range_rel = NAN;
    if (s->n < 2)
        return;
    memcpy(v, s->ratio, sizeof(double) * (size_t)s->n);
    stats_sort(v, s->n);
    s->median = stats_percentile(v, s->n, 0.5);
    s->iqr_rel = (stats_percentile(v, s->n, 0.75) - stats_percentile(v, s->n, 0.25)) / s->median;
    s->range_rel = (v[s->n - 1] - v[0]) / s->median;
}

static void chain_derive(const chain_result *c, chain_derived *d)
{
    const mode_result *m = c->mode;
    for (int i = 0; i < CHAIN_MODES; i++)
        d->per_kernel[i] = report_wall(&m[i]) / c->n_kernels;
    /* eager, raw graph and cgr: without PDL, then with */
    static const int modes[2][3] = {{CHAIN_EAGER, CHAIN_GRAPH, CHAIN_CGR},
                                    {CHAIN_EAGER_PDL, CHAIN_GRAPH_PDL, CHAIN_CGR_PDL}};
    for (int p = 0; p < 2; p++) {
        const mode_result *e = &m[modes[p][0]], *g = &m[modes[p][1]], *x = &m[modes[p][2]];
        double *f = d->fig + p * FIG_PDL;
        f[FIG_SPEEDUP] = report_wall(e) / report_wall(x);
        f[FIG_CGR_OVER_GRAPH] = report_wall(x) / report_wall(g);
        f[FIG_HOST] = report_cpu(x) - report_cpu(g);
        spread_of(c, modes[p][2], modes[p][1], &d->spread[p]);
    }
    d->fig[FIG_IO] = report_wall(&m[CHAIN_CGR_IO]) - report_wall(&m[CHAIN_CGR]);
    d->fig[FIG_IO_FAST] = report_wall(&m[CHAIN_CGR_IO_FAST]) - report_wall(&m[CHAIN_CGR]);
    d->fig[FIG_IO_EVENT] = report_wall(&m[CHAIN_CGR_IO_EVENT]) - report_wall(&m[CHAIN_CGR]);
    d->fig[FIG_IO_MEMCPY] = report_wall(&m[CHAIN_GRAPH_IO]) - report_wall(&m[CHAIN_GRAPH]);
}

static const chain_result *chain_for(const bench_results *res, int n)
{
    for (int i = 0; i < res->n_chain; i++)
        if (res->chain[i].n_kernels == n)
            return &res->chain[i];
    return NULL;
}

/* ---- W-chain -------------------------------------------------------------------- */

static const char *const chain_labels[CHAIN_MODES] = {
    [CHAIN_EAGER] = "eager <<<>>> launches",
    [CHAIN_GRAPH] = "raw CUDA graph",
    [CHAIN_CGR] = "cgr",
    [CHAIN_EAGER_PDL] = "PDL: eager <<<>>> launches",
    [CHAIN_GRAPH_PDL] = "PDL: raw CUDA graph",
    [CHAIN_CGR_PDL] = "PDL: cgr",
    [CHAIN_CGR_IO] = "cgr, I/O zero-copy",
    [CHAIN_CGR_IO_FAST] = "cgr, I/O zero-copy, slot fast path",
    [CHAIN_CGR_IO_EVENT] = "cgr, I/O zero-copy, event wait",
    [CHAIN_GRAPH_IO] = "raw graph + cudaMemcpyAsync I/O",
};

static const report_col chain_cols[] = {
    {"wall med", 9, 2, 0}, {"p10", 9, 2, 0}, {"p90", 9, 2, 0}, {"us/kernel", 9, 3, 0},
    {"host med", 9, 2, 0}, {"p10", 8, 2, 0}, {"p90", 8, 2, 0}, {"checked", 8, 0, REPORT_DASH},
};
static const report_table chain_table = {"", -42, "    N  mode", chain_cols, 8};

static const report_col ratio_cols[] = {
    {"speedup", 9, 2, 0},   {"cgr/raw", 9, 3, 0},          {"host +us", 9, 2, REPORT_SIGNED},
    {"PDL spd", 9, 2, 0},   {"PDL c/r", 9, 3, 0},          {"PDL host", 9, 2, REPORT_SIGNED},
    {"I/O zc", 9, 2, REPORT_SIGNED},    {"I/O fast", 9, 2, REPORT_SIGNED},
    {"I/O event", 9, 2, REPORT_SIGNED}, {"I/O mcAsy", 9, 2, REPORT_SIGNED},
};
static const report_table ratio_table = {"", 5, "N", ratio_cols, CHAIN_FIGS};

static void chain_rows(const chain_result *c)
{
    for (int j = 0; j < CHAIN_MODES; j++) {
        const mode_result *r = &c->mode[j];
        char label[64];
        snprintf(label, sizeof label, "%5d  %-35s", c->n_kernels, chain_labels[j]);
        const double v[] = {r->wall.median, r->wall.p10,   r->wall.p90,
                            r->wall.median / c->n_kernels, r->cpu.median, r->cpu.p10,
                            r->cpu.p90,     r->verified ? (double)r->verified : NAN};
        report_mode_row(&chain_table, label, r, v);
    }
}

static void chain_ratios(const chain_result *c)
{
    chain_derived d;
    chain_derive(c, &d);
    char label[16];
    snprintf(label, sizeof label, "%d", c->n_kernels);
    report_row(&ratio_table, label, d.fig);
}

/* The spread line of one N: what the per-round cgr/raw ratios say about repeatability. */
static void spread_line(int n, const char *what, const round_spread *s)
{
    printf("  N=%-5d %-5s cgr/raw per round: median", n, what);
    report_num(7, 4, s->median);
    printf(", spread (IQR / median)");
    if (isfinite(s->iqr_rel))
        printf(" %5.2f %%", 100.0 * s->iqr_rel);
    else
        printf("   n/a");
    printf(", (max - min) / median");
    if (isfinite(s->range_rel))
        printf(" %5.2f %%", 100.0 * s->range_rel);
    else
        printf("   n/a");
    printf(", %d rounds\n", s->n);
}

static void canary_lines(const bench_results *res)
{
    if (!res->canary_ran)
        return;
    const mode_result *b = &res->canary_before, *a = &res->canary_after;
    printf("\n== The raw graph N=100 alone, before any cgr runtime | after every suite ==\n"
           "    wall");
    report_num(8, 2, report_wall(b));
    printf(" |");
    report_num(8, 2, report_wall(a));
    printf(" us, host CPU");
    report_num(7, 2, report_cpu(b));
    printf(" |");
    report_num(7, 2, report_cpu(a));
    printf(" us (not interleaved: the GPU's drift moves the wall figures)\n");
}

static void report_chain(const bench_results *res)
{
    if (!res->chain_ran)
        return;
    printf("\n== W-chain: N launches of a 16x256-thread elementwise kernel on 4096 floats ==\n");
    printf("  every mode of one N runs interleaved with the others: %d rounds, each mode's "
           "steps of a round in a row\n", res->cfg.rounds);
    report_head(&chain_table);
    for (int i = 0; i < res->n_chain; i++)
        chain_rows(&res->chain[i]);
    printf("\n  ratios: speedup = eager/cgr wall; cgr/raw = per-kernel wall; host = cgr minus raw "
           "graph host CPU us;\n  PDL: the same with programmatic dependent launch; I/O (4 KiB "
           "in + 4 B out) = added wall us:\n  cgr modes vs cgr without I/O, memcpyAsync vs raw "
           "graph\n");
    report_head(&ratio_table);
    for (int i = 0; i < res->n_chain; i++)
        chain_ratios(&res->chain[i]);
    printf("\n  spread: cgr/raw from each round's medians; IQR = p75 - p25 of those ratios\n");
    for (int i = 0; i < res->n_chain; i++) {
        chain_derived d;
        chain_derive(&res->chain[i], &d);
        spread_line(res->chain[i].n_kernels, "plain", &d.spread[0]);
        spread_line(res->chain[i].n_kernels, "PDL", &d.spread[1]);
    }
    if (report_usable(&res->timer))
        printf("  clock overhead (empty step): wall %.2f us, host CPU %.2f us\n",
               res->timer.wall.median, res->timer.cpu.median);
}

static void summary_chain(const bench_results *res)
{
    const chain_result *c = chain_for(res, 100);
    if (!c)
        return;
    chain_derived d;
    chain_derive(c, &d);
    const double *k = d.per_kernel, *f = d.fig;
    report_line("W-chain N=100 us/kernel: eager | graph | cgr",
                (const double[]){k[CHAIN_EAGER], k[CHAIN_GRAPH], k[CHAIN_CGR]}, 3, 3, 0);
    report_line("the same with PDL",
                (const double[]){k[CHAIN_EAGER_PDL], k[CHAIN_GRAPH_PDL], k[CHAIN_CGR_PDL]}, 3, 3,
                0);
    report_line("cgr/raw graph per kernel: plain | PDL",
                (const double[]){f[FIG_CGR_OVER_GRAPH], f[FIG_PDL + FIG_CGR_OVER_GRAPH]}, 2, 3, 0);
    report_line("cgr/raw spread (IQR / median): plain | PDL",
                (const double[]){d.spread[0].iqr_rel, d.spread[1].iqr_rel}, 2, 2, REPORT_PCT);
    report_line("cgr speedup vs eager: plain | PDL",
                (const double[]){f[FIG_SPEEDUP], f[FIG_PDL + FIG_SPEEDUP]}, 2, 2, REPORT_TIMES);
    report_line("host CPU us/step: cgr | raw graph",
                (const double[]){report_cpu(&c->mode[CHAIN_CGR]),
                                 report_cpu(&c->mode[CHAIN_GRAPH])},
                2, 2, 0);
    report_line("host CPU us/step: cgr minus raw graph", &f[FIG_HOST], 1, 2,
                REPORT_SIGNED);
    report_line("I/O 4KiB+4B added us: zc | zc, event wait",
                (const double[]){f[FIG_IO], f[FIG_IO_EVENT]}, 2, 2, REPORT_SIGNED);
    report_line("I/O 4KiB+4B added us: raw graph + mcpyAsync", &f[FIG_IO_MEMCPY], 1, 2,
                REPORT_SIGNED);
}

static void json_spread(json_writer *w, const char *key, const round_spread *s)
{
    json_begin_object(w, key);
    json_string(w, "what", "cgr / raw graph wall, from the medians of each round");
    json_int(w, "rounds", s->n);
    json_begin_array(w, "per_round");
    for (int i = 0; i < s->n; i++)
        json_number(w, NULL, s->ratio[i]);
    json_end_array(w);
    json_number(w, "median", s->median);
    json_number(w, "iqr_over_median", s->iqr_rel);
    json_number(w, "range_over_median", s->range_rel);
    json_end_object(w);
}

/* A W-chain or canary mode: the mode object, its us per kernel and what cgr reported. */
static void json_chain_mode(json_writer *w, const mode_result *r, int n_kernels,
                            const cgr_info *ci)
{
    report_json_mode_begin(w, NULL, r);
    json_number(w, "per_kernel_us", report_wall(r) / n_kernels);
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

static void json_chain(json_writer *w, const bench_results *res)
{
    if (res->chain_ran) {
        json_begin_array(w, "chain");
        for (int i = 0; i < res->n_chain; i++) {
            const chain_result *c = &res->chain[i];
            chain_derived d;
            chain_derive(c, &d);
            json_begin_object(w, NULL);
            json_int(w, "n_kernels", c->n_kernels);
            json_int(w, "rounds", c->rounds);
            json_begin_object(w, "modes");
            for (int m = 0; m < CHAIN_MODES; m++)
                json_chain_mode(w, &c->mode[m], c->n_kernels, &c->cgr[m]);
            json_end_object(w);
            report_json_values(w, "ratios", chain_fig_keys, d.fig, FIG_IO);
            json_begin_object(w, "spread");
            json_spread(w, "cgr_over_graph", &d.spread[0]);
            json_spread(w, "pdl_cgr_over_graph", &d.spread[1]);
            json_end_object(w);
            report_json_values(w, "io_cost_us", chain_fig_keys + FIG_IO, d.fig + FIG_IO,
                               CHAIN_FIGS - FIG_IO);
            json_end_object(w);
        }
        json_end_array(w);
    }
    if (res->canary_ran) {
        json_begin_object(w, "canary");
        json_string(w, "what", "raw CUDA graph, N=100, measured alone before any cgr runtime "
                               "and after every suite of the run");
        json_chain_mode(w, &res->canary_before, 100, NULL);
        json_chain_mode(w, &res->canary_after, 100, NULL);
        json_end_object(w);
    }
}

/* ---- workloads -------------------------------------------------------------------- */

static const report_col work_cols[] = {
    {"wall med", 9, 1, 0}, {"p10", 9, 1, 0},    {"p90", 9, 1, 0},
    {"host med", 9, 1, 0}, {"busy", 9, 1, REPORT_DASH}, {"busy-u", 9, 1, REPORT_DASH},
    {"wall/bsy", 8, 2, REPORT_DASH}, {"kern/st", 8, 1, REPORT_DASH},
};
static const report_table work_table = {"  ", -23, "work      B  mode", work_cols, 8};

static void report_work(const bench_results *res)
{
    static const char *const names[WORK_MODES] = {"cgr eager", "cgr graph"};
    if (res->n_work == 0)
        return;
    printf("\n== Workloads through cgr: eager (capture = 0) vs graph, same step function ==\n");
    printf("  busy: sum of kernel and memcpy durations (CUPTI); busy-u: their union on the\n"
           "  timeline, which is smaller when PDL kernels start while the previous one runs\n");
    report_head(&work_table);
    for (int i = 0; i < res->n_work; i++) {
        const work_result *w = &res->work[i];
        for (int m = 0; m < WORK_MODES; m++) {
            const work_mode *x = &w->mode[m];
            char label[48];
            snprintf(label, sizeof label, "%-6s %4d  %-10s", w->name, w->B, names[m]);
            const double p = x->prof_ok ? 1.0 : NAN;
            const double v[] = {x->m.wall.median,         x->m.wall.p10,
                                x->m.wall.p90,            x->m.cpu.median,
                                p * x->busy_us,           p * x->busy_union_us,
                                p * x->m.wall.median / x->busy_us, p * x->kernels_per_step};
            report_mode_row(&work_table, label, &x->m, v);
        }
        const work_mode *e = &w->mode[WORK_EAGER], *g = &w->mode[WORK_GRAPH];
        if (report_usable(&e->m) && report_usable(&g->m))
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

static const report_col work_sum_cols[] = {
    {"eager", 8, 1, 0},   {"graph", 8, 1, 0},    {"speedup", 7, 2, REPORT_TIMES},
    {"g.host", 7, 1, 0},  {"g.busy", 8, 1, 0},   {"g.busy-u", 8, 1, 0},
    {"wall/bsy", 8, 2, 0}, {"wall/b-u", 8, 2, 0},
};
static const report_table work_sum_table = {"", -21, "workload (us)       B",
                                            work_sum_cols, 8};

static void summary_work(const bench_results *res)
{
    if (res->n_work == 0)
        return;
    report_head(&work_sum_table);
    for (int i = 0; i < res->n_work; i++) {
        const work_result *w = &res->work[i];
        const work_mode *e = &w->mode[WORK_EAGER], *g = &w->mode[WORK_GRAPH];
        const double p = g->prof_ok ? 1.0 : NAN;
        const double gw = report_wall(&g->m);
        const double v[] = {report_wall(&e->m), gw, report_wall(&e->m) / gw,
                            report_cpu(&g->m),  p * g->busy_us, p * g->busy_union_us,
                            p * gw / g->busy_us, p * gw / g->busy_union_us};
        char label[32];
        snprintf(label, sizeof label, "%-16s %4d", w->name, w->B);
        report_row(&work_sum_table, label, v);
    }
}

static void json_work(json_writer *w, const bench_results *res)
{
    /* The common schema bench/peer/compare.py reads. */
    static const char *const modes[WORK_MODES] = {"eager", "graph"};
    if (res->n_work == 0)
        return;
    json_begin_array(w, "results");
    for (int i = 0; i < res->n_work; i++) {
        const work_result *r = &res->work[i];
        for (int m = 0; m < WORK_MODES; m++) {
            const work_mode *x = &r->mode[m];
            const int ok = report_usable(&x->m);
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
                json_number(w, "busy_us", NAN);
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

/* ---- every suite: the sections, the verdict, the summary, the JSON file --------------- */

/* The sections in the order the report prints them; a suite that did not run prints nothing. */
static const struct section {
    void (*text)(const bench_results *res);
    void (*summary)(const bench_results *res);
    void (*json)(json_writer *w, const bench_results *res);
} sections[] = {
    {report_chain, summary_chain, json_chain},
    {report_work, summary_work, json_work},
    {report_serve, report_serve_summary, report_serve_json},
    {report_newshape, report_newshape_summary, report_newshape_json},
    {report_soak, report_soak_summary, report_soak_json},
    {report_ddp, report_ddp_summary, report_ddp_json},
};
enum { N_SECTIONS = sizeof sections / sizeof sections[0] };

static void visit_modes(const bench_results *res, report_visit fn, void *u)
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
    report_suites_modes(res, fn, u);
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
    if (!report_usable(r) && !r->skipped) {
        if (!v->failed)
            snprintf(v->first, sizeof v->first, "%s %s", group, r->name);
        v->failed++;
    }
}

static void get_verdict(const bench_results *res, verdict *v)
{
    memset(v, 0, sizeof *v);
    visit_modes(res, tally, v);
    char first[160];
    if (report_suites_failed(res, first, sizeof first)) {
        if (!v->failed)
            snprintf(v->first, sizeof v->first, "%s", first);
        v->failed++;
    }
    v->verified += report_suites_checked(res);
}

static int checks_failed(const bench_results *res)
{
    int n = 0;
    for (int i = 0; i < res->n_said; i++)
        n += !res->said[i].ok;
    for (int i = 0; i < res->n_checks; i++)
        n += !res->checks[i].ok && !res->checks[i].warn_only;
    return n;
}

int results_failed(const bench_results *res)
{
    verdict v;
    get_verdict(res, &v);
    return v.failed || v.wrong || v.skipped || res->aborted || checks_failed(res);
}

/* The checks of messages and counts, then those against the limits file. */
static void summary_checks(const bench_results *res)
{
    for (int i = 0; i < res->n_said; i++)
        printf("check: %-39s %s%.200s\n", res->said[i].what, res->said[i].ok ? "ok: " : "FAILED: ",
               res->said[i].message);
    for (int i = 0; i < res->n_checks; i++) {
        const check_result *c = &res->checks[i];
        char label[64];
        snprintf(label, sizeof label, "check: %s", c->name);
        printf("%-46s ", label);
        if (!c->ran)
            printf("not measured");
        else if (!isfinite(c->limit))
            printf("FAILED: no limit '%s' in %s", c->name, limits_file());
        else
            printf("%s: %.3g (limit %.3g)",
                   c->ok ? "ok" : c->warn_only ? "over the limit (a warning only)" : "FAILED",
                   c->value, c->limit);
        printf("\n%-46s   %s\n", "", c->what);
    }
}

static void report_summary(const bench_results *res)
{
    verdict v;
    get_verdict(res, &v);
    if (res->soak)
        printf("\n==== cgr-bench summary: %s, %ld steps ====\n", res->device_name,
               res->soak->steps);
    else
        printf("\n==== cgr-bench summary: %s, %d steps/mode ====\n", res->device_name,
               res->cfg.steps);
    for (int i = 0; i < N_SECTIONS; i++)
        sections[i].summary(res);
    summary_checks(res);
    if (!results_failed(res))
        printf("%-46s PASS (%ld outputs checked)\n", "result", v.verified);
    else
        printf("%-46s FAIL: %d failed, %d wrong, %d skipped, %d checks failed%s%s\n", "result",
               v.failed, v.wrong, v.skipped, checks_failed(res), v.first[0] ? "; first: " : "",
               v.first);
}

static void json_checks(json_writer *w, const bench_results *res)
{
    json_begin_array(w, "checks");
    for (int i = 0; i < res->n_said; i++) {
        json_begin_object(w, NULL);
        json_string(w, "name", res->said[i].name);
        json_string(w, "what", res->said[i].what);
        json_bool(w, "ok", res->said[i].ok);
        json_string(w, "message", res->said[i].message);
        json_end_object(w);
    }
    for (int i = 0; i < res->n_checks; i++) {
        const check_result *c = &res->checks[i];
        json_begin_object(w, NULL);
        json_string(w, "name", c->name);
        json_string(w, "what", c->what);
        json_bool(w, "ok", c->ok);
        json_number(w, "value", c->value);
        json_number(w, "limit", c->limit);
        json_bool(w, "warn_only", c->warn_only);
        json_end_object(w);
    }
    json_end_array(w);
}

static int report_json(const bench_results *res, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        bench_error("cannot write %s", path);
        return -1;
    }
    json_writer w;
    json_init(&w, f);
    json_begin_object(&w, NULL);
    json_int(&w, "schema_version", BENCH_JSON_SCHEMA_VERSION);
    json_string(&w, "tool", "cgr-bench");
    json_string(&w, "suite", res->suite_name);
    json_string(&w, "cgr_version", CGR_VERSION_STRING);
    json_begin_object(&w, "device");
    json_int(&w, "index", res->device);
    json_string(&w, "name", res->device_name);
    json_int(&w, "cc_major", res->cc_major);
    json_int(&w, "cc_minor", res->cc_minor);
    json_bool(&w, "pdl_allowed", res->pdl_allowed);
    json_int(&w, "sm_count", res->sm_count);
    json_int(&w, "driver_version", res->driver_version);
    json_int(&w, "runtime_version", res->runtime_version);
    json_end_object(&w);
    json_begin_object(&w, "config");
    json_int(&w, "steps", res->cfg.steps);
    json_int(&w, "warmup", res->cfg.warmup);
    json_int(&w, "rounds", res->cfg.rounds);
    json_bool(&w, "quick", res->cfg.quick);
    json_string(&w, "limits_file", limits_file());
    json_end_object(&w);
    if (res->timer.name[0]) {
        json_begin_object(&w, "clock_overhead");
        report_json_mode(&w, NULL, &res->timer);
        json_end_object(&w);
    }
    for (int i = 0; i < N_SECTIONS; i++)
        sections[i].json(&w, res);
    json_checks(&w, res);
    json_bool(&w, "ok", !results_failed(res));
    json_end_object(&w);
    int rc = json_finish(&w);
    if (fclose(f) != 0 || rc != 0) {
        bench_error("writing %s failed", path);
        return -1;
    }
    return 0;
}

void report_header(const bench_results *res)
{
    const bench_config *c = &res->cfg;
    printf("cgr-bench %s on device %d: %s (sm_%d%d, %d SMs), CUDA driver %d.%d, runtime %d.%d\n",
           CGR_VERSION_STRING, res->device, res->device_name, res->cc_major, res->cc_minor,
           res->sm_count, res->driver_version / 1000, res->driver_version % 1000 / 10,
           res->runtime_version / 1000, res->runtime_version % 1000 / 10);
    printf("%d timed steps after %d warm-up steps per mode%s, compared modes interleaved in %d "
           "rounds; times in microseconds (us)\n",
           c->steps, c->warmup, c->quick ? " (--quick)" : "", c->rounds);
    if (limits_file()[0])
        printf("limits: %s\n", limits_file());
    /* Every "PDL" figure below is a plain launch when this says off. */
    if (res->pdl_allowed)
        printf("programmatic dependent launch: on\n");
    else
        printf("programmatic dependent launch: off (%s): kernels asking for it launch plainly\n",
               res->pdl_off_why);
}

int report(const bench_results *res, const char *json_path)
{
    for (int i = 0; i < N_SECTIONS; i++)
        sections[i].text(res);
    canary_lines(res);
    report_summary(res);
    return json_path ? report_json(res, json_path) : 0;
}
