/*
 * Clocks, the per-step measurement loop, statistics and the watchdog.
 *
 * Measurement rules, the same for every suite: warm up, then time every step
 * on its own. Per step: fresh inputs are made before the clocks start;
 * host CPU time spans only the submission (what the submitting thread
 * pays), wall time spans submission plus the wait for completion.
 */
#ifndef BENCH_TIMING_H
#define BENCH_TIMING_H

#include <stdint.h>

/* CLOCK_MONOTONIC in microseconds. */
double now_us(void);

typedef struct bench_stats {
    double median, p10, p90, mean, min, max;
} bench_stats;

/* Sorts v[0..n) and fills *out (percentiles by linear interpolation). */
void stats_compute(double *v, int n, bench_stats *out);
/* Sorts v[0..n) in increasing order (as stats_compute does). */
void stats_sort(double *v, int n);
/* Percentile p (0..1) of sorted[0..n), n >= 1, by linear interpolation (as stats_compute). */
double stats_percentile(const double *sorted, int n, double p);

/* What one measured mode produced. */
typedef struct mode_result {
    char name[48];
    int ran;          /* measured to the end */
    int failed;       /* a call failed or a check did not pass */
    int wrong;        /* a computed value was wrong (a hard failure) */
    int skipped;      /* not run (earlier failure left the device unusable) */
    char error[512];
    int warmup, steps;
    long verified;    /* steps whose output was checked against the host model */
    bench_stats wall; /* us per step */
    bench_stats cpu;  /* host CPU us per step (submission only) */
} mode_result;

/*
 * One step, split where the clocks start and stop. Each callback returns 0,
 * -1 on an error (already reported), or CHECK_WRONG from check() when an
 * output value is wrong. k counts steps from 0, warm-up included.
 */
#define CHECK_WRONG (-2)
typedef struct step_ops {
    int (*prepare)(void *self, long k); /* untimed: fresh inputs; may be NULL */
    int (*submit)(void *self, long k);  /* timed: host CPU and wall */
    int (*wait)(void *self, long k);    /* timed: wall only */
    int (*check)(void *self, long k);   /* untimed: verify outputs; may be NULL */
    int (*after_warmup)(void *self);    /* untimed: e.g. assert graph replay; may be NULL */
} step_ops;

/*
 * One measured mode: its result, its steps and what happens around them
 * (run_group, bench.h: setup before any mode of the group warms up, finish
 * (final checks) after the last round, teardown always, last).
 */
typedef struct bench_mode {
    mode_result *r;
    step_ops ops;
    void *self;
    int (*setup)(void *self);                  /* NULL: none */
    int (*finish)(void *self, mode_result *r); /* NULL: none */
    void (*teardown)(void *self);              /* NULL: none */
    double *round_wall; /* [rounds]: median wall of each round's steps (NaN when not run);
                           may be NULL */
} bench_mode;

/*
 * Warms up, then times `steps` steps into r->wall and r->cpu. Returns 0, or
 * -1 after marking r failed (and wrong, for CHECK_WRONG).
 */
int measure(const step_ops *ops, void *self, int warmup, int steps, mode_result *r);

/*
 * Interleaved rounds: how modes that are compared with each other are
 * measured. Every mode is warmed up in turn; then come `rounds` rounds, in
 * each of which every mode still running times its share of `steps`
 * (steps / rounds, the remainder spread over the first rounds) in a row.
 * A drift of the GPU or the host over the run then reaches every mode
 * alike. Each round takes the modes in a new order (a shuffle with a fixed
 * seed), so what a mode leaves behind in the host or the GPU reaches the
 * modes after it alike too, and a ratio of two modes' medians depends
 * neither on which ran first nor on what ran before each; rotating only
 * the first mode of a round would keep every mode's neighbours. Each
 * mode's statistics are over all its timed steps.
 *
 * measure_rounds measures m[0..n) so (their setup, finish and teardown are
 * run_group's). A mode that fails is marked failed and left out of the
 * later rounds; the others go on while the device still works. Returns 0
 * when every mode ran to the end, -1 when some failed, -2 when the device
 * became unusable (every unfinished mode is then marked failed).
 */
int measure_rounds(bench_mode *m, int n, int warmup, int steps, int rounds);

/* Starts a result: name, zeroed figures, NaN statistics. */
void mode_result_init(mode_result *r, const char *name);
/* Marks r failed with the last bench_error() message. */
void mode_result_fail(mode_result *r);
/* Marks a mode that could not start: skipped (device lost earlier) or failed (setup). */
void mode_result_not_run(mode_result *r, int skipped);

/*
 * Watchdog: a CUDA wait that never returns (hung kernel, lost GPU) must not
 * hang a one-shot CI run. While armed, SIGALRM after `seconds` prints what
 * was running (`what`, copied when armed) and exits the process with status 1.
 */
void watchdog_install(void);
void watchdog_arm(const char *what, unsigned seconds);
void watchdog_disarm(void);

#endif
