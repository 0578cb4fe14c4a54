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
#include "work.h"

typedef struct bench_config {
    int device;
    int steps;           /* timed steps per mode (>= 200) */
    int warmup;          /* warm-up steps per mode (>= 20) */
    int quick;           /* only N = 100 for the chain suite */
    int pdl;             /* chain kernels use programmatic dependent launch */
    int no_pdl;          /* W-serve's kernels without it (serve's default is with) */
    int profile;         /* print the top kernels of each graphed workload */
    const char *trace_path; /* Chrome/Perfetto trace of the workloads' profiled steps */
    unsigned timeout_s;  /* watchdog base per mode; more is added per step */
    const char *json_path;
    int stats;           /* --stats: print cgr's runtime and step stats after each workload */
    long soak_steps;     /* replays of the soak suite (--soak-steps) */
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
    CHAIN_CGR_IO_EVENT,  /* cgr, zero-copy I/O, waits on the event (wait_spin_us = 0) */
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
    /*
     * Crossover: the smallest size from which the memcpy node is faster at
     * that size and every larger one (0: none), so one noisy small size
     * cannot set it. first_memcpy_faster_bytes is the first size where it
     * is faster at all.
     */
    size_t crossover_bytes;
    size_t first_memcpy_faster_bytes;
    int crossover_valid; /* every sweep point measured */
} staging_result;

typedef struct bench_results {
    char device_name[256];
    int device, cc_major, cc_minor, sm_count, driver_version, runtime_version;
    /* Launches that ask for PDL get it (lib/base/pdl.h); else why not. */
    int pdl_allowed;
    char pdl_off_why[128];
    bench_config cfg;
    mode_result timer;  /* empty submit + empty wait: the clocks' own cost */
    int chain_ran;
    int n_chain;
    chain_result chain[CHAIN_MAX_SIZES];
    int staging_ran;
    staging_result staging;
    /*
     * The same raw graph (N = 100) measured right before and right after the
     * cgr modes: a process-wide side effect of cgr (for example a CUPTI
     * subscription, which slows every later cudaGraphLaunch) shows here.
     */
    int canary_ran;
    mode_result canary_before, canary_after;
    /* The capture diagnosis run between the canaries (chain_diagnosis): its message. */
    int diagnosis_ran, diagnosis_ok;
    char diagnosis[512];
    int aborted;        /* the device became unusable; later modes skipped */
    int n_work;
    work_result work[16]; /* W-mlp (with and without PDL) and W-cnn at each batch size */
} bench_results;

/*
 * Suites (each returns 0 when it ran, failed modes are marked in *res).
 * The chain suite runs in two passes: every raw-CUDA mode first, the cgr
 * modes last, so no raw measurement runs after cgr changed the process
 * (see canary above). CHAIN_PASS_RAW also resets the chain results.
 */
enum chain_pass { CHAIN_PASS_RAW = 0, CHAIN_PASS_CGR };
int chain_suite(const bench_config *cfg, bench_results *res, enum chain_pass pass);
/* Measures the N = 100 raw graph into *r (the canary). */
void chain_canary(const bench_config *cfg, bench_results *res, mode_result *r);
/*
 * Diagnoses one capture that fails (cgr_options.diagnose, a step that
 * synchronizes its stream), so that the canary after it shows whether the
 * diagnosis left later launches slower.
 */
void chain_diagnosis(const bench_config *cfg, bench_results *res);
int staging_suite(const bench_config *cfg, bench_results *res);
/* W-mlp at the given batch sizes, without and with PDL (through cgr, eager vs graph). */
int mlp_suite(const bench_config *cfg, bench_results *res, const int *batches, int n);
/* W-cnn at the given batch sizes (through cgr, eager vs graph). */
int cnn_suite(const bench_config *cfg, bench_results *res, const int *batches, int n);
/*
 * The soak suite (soak_bench.c): prints its own table (and JSON to
 * cfg->json_path) and returns the exit status: 0 pass, 1 growth or mismatch.
 */
int soak_suite(const bench_config *cfg, const bench_results *res);
/* Measures the clocks' own overhead into res->timer. */
void timer_overhead(const bench_config *cfg, bench_results *res);

/* Watchdog budget for one mode of `cfg` (setup + warm-up + steps). */
unsigned mode_budget_s(const bench_config *cfg, double ms_per_step);

/*
 * Runs one mode under the watchdog (group names it in messages, e.g.
 * "chain N=100"): marks it skipped when the device is already lost, and
 * checks the device after a failure.
 */
typedef int (*mode_fn)(void *ctx, mode_result *r);
void run_mode(bench_results *res, const char *group, mode_result *r, unsigned budget_s,
              mode_fn fn, void *ctx);

/* report.c */
void report_chain(const bench_results *res);
void report_staging(const bench_results *res);
void report_summary(const bench_results *res);
void report_work(const bench_results *res);
int report_json(const bench_results *res, const char *path);
/*
 * A suite that writes its own JSON file (serve, newshape, soak): opens path
 * into *w and begins the top object with "suite" and "device_name". 0, or
 * -1 (reported) when the file cannot be opened.
 */
struct json_writer;
int report_suite_json_open(struct json_writer *w, const char *path, const char *suite,
                           const char *device_name);
/* Ends the top object and closes the file: 0, or -1 (reported) when anything failed to write. */
int report_suite_json_close(struct json_writer *w, const char *path);
/* s as an object under key: median, p10, p90, mean, min, max; all null unless ok. */
void report_json_stats(struct json_writer *w, const char *key, const bench_stats *s, int ok);
/* 1 when any mode failed or produced a wrong value. */
int results_failed(const bench_results *res);

#endif
