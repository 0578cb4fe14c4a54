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
    int rounds;          /* interleaved rounds the timed steps are split into */
    int quick;           /* only N = 100 for the chain suite */
    int no_pdl;          /* W-serve's kernels without PDL (serve's default is with) */
    int profile;         /* print the top kernels of each graphed workload */
    const char *trace_path; /* Chrome/Perfetto trace of the workloads' profiled steps */
    unsigned timeout_s;  /* watchdog base per mode; more is added per step */
    const char *json_path;
    const char *limits_path; /* --limits: the limits file (limits_file.h) */
    int stats;           /* --stats: print cgr's runtime and step stats after each workload */
    long soak_steps;     /* replays of the soak suite (--soak-steps) */
} bench_config;

#define BENCH_MAX_ROUNDS 100

/* ---- chain suite ---- */
enum chain_mode {
    CHAIN_EAGER = 0,     /* N <<<>>> launches + cudaStreamSynchronize */
    CHAIN_GRAPH,         /* raw CUDA graph: cudaGraphLaunch + sync */
    CHAIN_CGR,           /* cgr step without I/O */
    CHAIN_EAGER_PDL,     /* the same three with programmatic dependent launch */
    CHAIN_GRAPH_PDL,
    CHAIN_CGR_PDL,
    CHAIN_CGR_IO,        /* cgr, 4 KiB in + 4 B out, zero-copy staging (cgr_step_run) */
    CHAIN_CGR_IO_FAST,   /* same, inputs written straight into the acquired slot */
    CHAIN_CGR_IO_EVENT,  /* cgr, zero-copy I/O, waits on the event (wait_spin_us = 0) */
    CHAIN_CGR_IO_MEMCPY, /* cgr, I/O through memcpy nodes (zero_copy_max_bytes = 0) */
    CHAIN_GRAPH_IO,      /* raw graph + cudaMemcpyAsync in/out (the PyTorch way) */
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
    int rounds;
    mode_result mode[CHAIN_MODES];
    cgr_info cgr[CHAIN_MODES];
    double round_wall[CHAIN_MODES][BENCH_MAX_ROUNDS]; /* median wall per round */
} chain_result;

/* ---- staging suite: zero-copy kernel vs memcpy node by input size ---- */
#define SWEEP_SIZES 6
#define STAGING_KERNELS 100

typedef struct sweep_point {
    size_t in_bytes;
    mode_result base;   /* cgr step with the 4 B output only */
    mode_result zc;     /* + the input by cgr's zero-copy kernel */
    mode_result memcpy; /* + the input by a memcpy node */
} sweep_point;

typedef struct staging_result {
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

/* A check against a limit of the limits file (limits_file.h). */
/* A check of a message cgr gives: ok when it says what it must. */
typedef struct said_check {
    const char *name; /* in the JSON's checks[] */
    const char *what; /* the line the summary prints */
    int ok;
    char message[512];
} said_check;

typedef struct check_result {
    char name[48];     /* the limit's name */
    char what[160];    /* what was checked, in words */
    double value, limit;
    int ran, ok;
    int warn_only;     /* a failed check is printed but does not fail the run */
} check_result;

#define BENCH_MAX_CHECKS 8

typedef struct bench_results {
    char device_name[256];
    int device, cc_major, cc_minor, sm_count, driver_version, runtime_version;
    /* Launches that ask for PDL get it (lib/base/pdl.h); else why not. */
    int pdl_allowed;
    char pdl_off_why[128];
    bench_config cfg;
    const char *suite_name; /* as given on the command line ("default" when none) */
    mode_result timer;  /* empty submit + empty wait: the clocks' own cost */
    int chain_ran;
    int n_chain;
    chain_result chain[CHAIN_MAX_SIZES];
    int staging_ran;
    staging_result staging;
    /*
     * The N = 100 raw graph measured alone before the first cgr runtime
     * exists and again after every cgr mode, a diagnosis and a profile: a
     * process-wide side effect of cgr (a CUPTI subscription, for one, makes
     * every later cudaGraphLaunch slower) shows in its host CPU time.
     */
    int canary_ran;
    mode_result canary_before, canary_after;
    /* Checks of what cgr says rather than of a figure: the capture
     * diagnosis and the profile window (chain_diagnosis, chain_profile). */
    int n_said;
    said_check said[4];
    int n_checks;
    check_result checks[BENCH_MAX_CHECKS];
    int aborted;        /* the device became unusable; later modes skipped */
    int n_work;
    work_result work[16]; /* W-mlp (with and without PDL) and W-cnn at each batch size */
} bench_results;

/*
 * Suites (each returns 0 when it ran; failed modes are marked in *res).
 * All modes of one W-chain N run interleaved (measure_rounds), raw CUDA
 * and cgr alike.
 */
int chain_suite(const bench_config *cfg, bench_results *res);
/* Measures the N = 100 raw graph alone into *r (the canary). */
void chain_canary(const bench_config *cfg, bench_results *res, mode_result *r);
/*
 * Diagnoses one capture that fails (cgr_options.diagnose, a step that
 * synchronizes its stream): the message must name the failing call.
 */
void chain_diagnosis(const bench_config *cfg, bench_results *res);
/*
 * Profiles one W-chain step (N = 100, cgr_options.profile): the window must
 * close with the verdict launch-bound, as an eager N = 100 step is.
 */
void chain_profile(const bench_config *cfg, bench_results *res);
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
 * One mode of a group measured in interleaved rounds: its steps, and what
 * happens around them. setup runs before any mode of the group warms up,
 * finish (final checks) after the last round, teardown always, last.
 */
typedef struct bench_mode {
    mode_result *r;
    step_ops ops;
    void *self;
    int (*setup)(void *self);                  /* NULL: none */
    int (*finish)(void *self, mode_result *r); /* NULL: none */
    void (*teardown)(void *self);              /* NULL: none */
    double *round_wall;                        /* [cfg->rounds] or NULL */
} bench_mode;

/*
 * Runs modes m[0..n) of one group (named in messages, e.g. "chain N=100")
 * under the watchdog: setup of each, measure_rounds over those set up,
 * finish and teardown of each. Marks them skipped when the device is
 * already lost, and res->aborted when it is lost now. budget_s is the
 * watchdog's allowance for the whole group.
 */
void run_group(bench_results *res, const char *group, bench_mode *m, int n, unsigned budget_s);

/* Adds a check of value against the named limit (limits_file.h): ok when value <= limit. */
void add_check(bench_results *res, const char *name, const char *what, double value,
               int warn_only);

/* report.c */
/*
 * Version of the JSON files' layout (docs/bench-json.md): raised whenever a
 * key changes meaning, moves or goes; new keys alone do not raise it.
 */
#define BENCH_JSON_SCHEMA_VERSION 2
/*
 * Prints the tables, checks and summary of res and, when json_path is
 * given, writes the same figures as JSON. 0, or -1 (reported) when the JSON
 * file could not be written.
 */
int report(const bench_results *res, const char *json_path);
/*
 * A suite that writes its own JSON file (serve, newshape, soak, ddp): opens
 * path into *w and begins the top object with "schema_version", "tool",
 * "cgr_version", "suite" and "device_name". 0, or
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
