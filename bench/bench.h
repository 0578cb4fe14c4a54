/*
 * cgr-bench: configuration, the results of every suite, and the entry
 * points main.c calls. Suites fill a bench_results; report.c prints and
 * serializes it, so printing never runs in the middle of a measurement.
 */
#ifndef BENCH_BENCH_H
#define BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "timing.h"

typedef struct bench_config {
    int device;
    int steps;           /* timed steps per mode (>= 200) */
    int warmup;          /* warm-up steps per mode (>= 20) */
    int quick;           /* only N = 100 for the chain suite */
    unsigned timeout_s;  /* watchdog base per mode; more is added per step */
    const char *json_path;
} bench_config;

/* ---- chain suite ---- */
enum chain_mode {
    CHAIN_EAGER = 0,     /* N <<<>>> launches + cudaStreamSynchronize */
    CHAIN_GRAPH,         /* raw CUDA graph: cudaGraphLaunch + sync */
    CHAIN_CGR,           /* cgr step without I/O */
    CHAIN_CGR_IO,        /* cgr, 4 KiB in + 4 B out, zero-copy staging (cgr_step_run) */
    CHAIN_CGR_IO_FAST,   /* same, inputs written straight into the acquired slot */
    CHAIN_GRAPH_IO,      /* raw graph + cudaMemcpyAsync in/out (the PyTorch way) */
    CHAIN_CGR_IO_MEMCPY, /* cgr, I/O through memcpy nodes (zero_copy_max_bytes = 0) */
    CHAIN_MODES
};

#define CHAIN_MAX_SIZES 3
#define CHAIN_IN_FLOATS 1024 /* 4 KiB input */

/* What cgr reported about a step (cgr modes only). */
typedef struct cgr_info {
    int valid;
    uint64_t graph_nodes, zero_copy_tensors, memcpy_tensors, replays, warmup_runs;
    double capture_us;
} cgr_info;

typedef struct chain_result {
    int n_kernels;
    mode_result mode[CHAIN_MODES];
    cgr_info cgr[CHAIN_MODES];
} chain_result;

/* ---- staging suite ---- */
enum slot_mode {
    SLOT_PER_EXEC = 0, /* one executable per slot, launched alternately */
    SLOT_REPOINT,      /* one executable, staging nodes repointed before each launch */
    SLOT_INDEX,        /* one executable, staging kernels read the slot index (mapped) */
    SLOT_BASELINE,     /* the same graph without I/O */
    SLOT_MODES
};

#define SWEEP_SIZES 6
#define STAGING_KERNELS 100

typedef struct sweep_point {
    size_t in_bytes;
    mode_result base;   /* graph + 4 B zero-copy output, no input transfer */
    mode_result zc;     /* + input by a cgr__stage_copy kernel node */
    mode_result memcpy; /* + input by a memcpy node */
} sweep_point;

typedef struct staging_result {
    mode_result slot[SLOT_MODES];
    sweep_point sweep[SWEEP_SIZES];
    int n_sweep;
    /* Smallest size where the memcpy node adds less than the kernel; 0: none. */
    size_t crossover_bytes;
    int crossover_valid; /* every sweep point measured */
} staging_result;

typedef struct bench_results {
    char device_name[256];
    int device, cc_major, cc_minor, sm_count, driver_version, runtime_version;
    bench_config cfg;
    mode_result timer;  /* empty submit + empty wait: the clocks' own cost */
    int chain_ran;
    int n_chain;
    chain_result chain[CHAIN_MAX_SIZES];
    int staging_ran;
    staging_result staging;
    int aborted;        /* the device became unusable; later modes skipped */
} bench_results;

/* Suites (each returns 0 when it ran, failed modes are marked in *res). */
int chain_suite(const bench_config *cfg, bench_results *res);
int staging_suite(const bench_config *cfg, bench_results *res);
/* Measures the clocks' own overhead into res->timer. */
void timer_overhead(const bench_config *cfg, bench_results *res);

/* Watchdog budget for one mode of `cfg` (setup + warm-up + steps). */
unsigned mode_budget_s(const bench_config *cfg, double ms_per_step);

/*
 * Runs one mode under the watchdog: marks it skipped when the device is
 * already lost, and checks the device after a failure.
 */
typedef int (*mode_fn)(void *ctx, mode_result *r);
void run_mode(bench_results *res, mode_result *r, unsigned budget_s, mode_fn fn, void *ctx);

/* report.c */
void report_chain(const bench_results *res);
void report_staging(const bench_results *res);
void report_summary(const bench_results *res);
int report_json(const bench_results *res, const char *path);
/* 1 when any mode failed or produced a wrong value. */
int results_failed(const bench_results *res);

#endif
