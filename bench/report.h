/*
 * The reporter's parts shared by its sections: tables, figures that could
 * not be measured, mode objects and statistics in JSON. report.c holds the
 * entry point, the closing summary, the checks and the W-chain and
 * workload sections; report_suites.c those of serve, newshape, soak and
 * ddp. Every section prints and serializes figures a suite filled in,
 * and derives ratios and differences once for both outputs.
 */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include "bench.h"
#include "json.h"

/* Measured to the end without a failure. */
int report_usable(const mode_result *r);
/* The wall / host CPU median of a usable mode; NaN otherwise. */
double report_wall(const mode_result *r);
double report_cpu(const mode_result *r);

/* ---- tables ---- */

enum {
    REPORT_SIGNED = 1, /* "+3.30" */
    REPORT_TIMES = 2,  /* "1.25x" */
    REPORT_PCT = 4,    /* the value x 100 with "%" */
    REPORT_DASH = 8,   /* a missing value as "-" rather than "n/a" */
    REPORT_GAP = 16,   /* one more space before the column: starts a group */
};

typedef struct report_col {
    const char *head;
    int width, prec; /* characters of the cell (its suffix included), digits after the point */
    unsigned flags;
} report_col;

typedef struct report_table {
    const char *indent;     /* before each line */
    int label_width;        /* printf width of the row label; negative: left-aligned */
    const char *label_head; /* the label column's header */
    const report_col *col;
    int n_col;
} report_table;

void report_head(const report_table *t);
/* One row: the label, then v[0..t->n_col) (a NaN is "n/a", or "-"). */
void report_row(const report_table *t, const char *label, const double *v);
/* A row that has no figures: the label, then why. */
void report_row_text(const report_table *t, const char *label, const char *why);
/* Mode r's row: v when r is usable, else "skipped ..." or "FAILED: error". */
void report_mode_row(const report_table *t, const char *label, const mode_result *r,
                     const double *v);

/*
 * A line of the closing summary: the label in 46 columns, then v[0..n) in
 * cells of 8 characters with prec digits and flags as a table's.
 */
void report_line(const char *label, const double *v, int n, int prec, unsigned flags);
/* A number in a line of text (" %*.*f"), or "n/a" when it could not be measured. */
void report_num(int width, int prec, double v);
/* The same with its sign ("+3.30"). */
void report_diff(int width, int prec, double v);

/* A named figure of a summary: printed as a line, written as {name, value, measured}. */
typedef struct report_fig {
    char name[96];
    double value;
    int measured; /* 0: missing (no profiler, no request in the bucket, a mode failed) */
} report_fig;

/* ---- JSON ---- */

/* s as an object under key: median, p10, p90, mean, min, max; all null unless ok. */
void report_json_stats(json_writer *w, const char *key, const bench_stats *s, int ok);
/*
 * The mode object of r (docs/bench-json.md) under key (r->name when key is
 * NULL inside an object), left open for the caller's own members.
 */
void report_json_mode_begin(json_writer *w, const char *key, const mode_result *r);
/* The same, closed. */
void report_json_mode(json_writer *w, const char *key, const mode_result *r);
/* {names[i]: v[i]} under key. */
void report_json_values(json_writer *w, const char *key, const char *const *names,
                        const double *v, int n);
void report_json_figs(json_writer *w, const char *key, const report_fig *f, int n);

/* ---- the sections of report_suites.c ---- */

/* Each prints or writes nothing when its suite did not run. */
void report_serve(const bench_results *res);
void report_serve_summary(const bench_results *res);
void report_serve_json(json_writer *w, const bench_results *res);
void report_newshape(const bench_results *res);
void report_newshape_summary(const bench_results *res);
void report_newshape_json(json_writer *w, const bench_results *res);
void report_soak(const bench_results *res);
void report_soak_summary(const bench_results *res);
void report_soak_json(json_writer *w, const bench_results *res);
void report_ddp(const bench_results *res);
void report_ddp_summary(const bench_results *res);
void report_ddp_json(json_writer *w, const bench_results *res);
/* Visits the modes those suites measured, for the verdict. */
typedef void (*report_visit)(const char *group, const mode_result *r, void *u);
void report_suites_modes(const bench_results *res, report_visit fn, void *u);
/* Outputs those suites checked, and whether one of them did not finish (1). */
long report_suites_checked(const bench_results *res);
int report_suites_failed(const bench_results *res, char *first, size_t n);

#endif
