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

#define EXIT_NO_DEVICE 2

typedef struct bench_config {
    int device;
    int steps;           /* timed steps per mode (>= 200) */
    int warmup;          /* warm-up steps per mode (>= 20) */
    int rounds;          /* interleaved rounds the timed steps are split into */
    int quick;           /* --quick: fewer steps, sizes, repetitions and requests (usage) */
    int no_pdl;          /* W-serve's kernels without PDL (serve's default is with) */
    int profile;         /* print the top kernels of each graphed workload */
    const char *trace_path; /* Chrome/Perfetto trace of the workloads' profiled steps */
    unsigned timeout_s;  /* watchdog base per mode; more is added per step */
    const char *json_path;
    const char *limits_path; /* --limits: the limits file (limits_file.h) */
    int stats;           /* --stats: print cgr's runtime and step stats after each workload */
    long soak_steps;     /* runs of the soak suite (--soak-steps) */
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

/*
 * A check that passes or fails with a message: what cgr said (a capture
 * diagnosis, a profile's verdict) or what a suite counted (outputs that
 * differ, frozen-value checks per new graph).
 */
typedef struct said_check {
    const char *name; /* in the JSON's checks[] */
    const char *what; /* the line the summary prints */
    int ok;
    char message[512];
} said_check;

/* A check against a limit of the limits file (limits_file.h). */
typedef struct check_result {
    char name[48];     /* the limit's name */
    char what[160];    /* what was checked, in words */
    double value, limit;
    int ran, ok;
    int warn_only;     /* a failed check is printed but does not fail the run */
} check_result;

#define BENCH_MAX_CHECKS 8
#define BENCH_MAX_SAID 16

/* ---- serve suite (serve/serve_bench.c): W-serve, a serving loop ---- */
#define SERVE_N_BUCKETS 7
/*
 * graph: cgr's graphs, each request armed (CGR_ACQUIRE_ARM) before its
 * inputs are written; eager: every run eager; plain: graphs launched at
 * submission (a step that is not armable).
 */
enum { SERVE_GRAPH = 0, SERVE_EAGER, SERVE_PLAIN, SERVE_MODES };
/* "graph", "eager", "plain": in messages and as the JSON's keys. */
extern const char *const serve_mode_names[SERVE_MODES];

/* Latency figures of one set of requests. */
typedef struct serve_lat {
    long n, rows;
    double p50, p99, mean, sum_us;
    double req_per_s, rows_per_s; /* over the summed latencies (closed loop) */
} serve_lat;

/* One pass with requests in flight (serve_pipe_pass). */
typedef struct serve_pipe_result {
    long n, rows;   /* requests and rows submitted */
    long replays;   /* requests that replayed a graph */
    double wall_us; /* first acquire to last output */
} serve_pipe_result;

typedef struct serve_bucket {
    serve_lat lat[SERVE_MODES];       /* steady requests of this bucket */
    double launch_p50[SERVE_MODES];   /* p50 of the launch call alone */
    double write_p50[SERVE_MODES];    /* p50 of the input write, before the latency's start */
    int prof_ok;
    double busy_us, busy_union_us, kernels, memcpys;
} serve_bucket;

typedef struct serve_result {
    int ran;          /* every pass finished; else error says why */
    char error[512];
    int requests, pdl, quick;
    uint64_t batch_seed;
    int64_t buckets[SERVE_N_BUCKETS];
    int steady_from;  /* first request after the first pass over the buckets */
    serve_lat all[SERVE_MODES], steady[SERVE_MODES], small[SERVE_MODES]; /* small: batch <= 8 */
    serve_pipe_result pipe[SERVE_MODES][2]; /* in flight: [0] steady, [1] steady batch <= 8;
                                               wall_us is the median pass's */
    int pipe_depth, pipe_reps;
    serve_bucket bk[SERVE_N_BUCKETS];
    int prof_steps;   /* profiled replays per bucket */
    char prof_note[512];
    cgr_step_stats graph;          /* the graph runtime's step, at the end of its pass */
    uint64_t graph_arena_reserved, graph_arena_planned, eager_arena_bytes;
    double graph_wall_s, eager_wall_s;
    long samples_checked, sample_mismatches;
    long host_checks, host_mismatches;
    double host_worst_rel;
    long pipe_hashes_checked, pipe_hash_mismatches;
    int pass;         /* every checked output right, and some of each kind checked */
} serve_result;

/* ---- newshape suite (newshape_bench.c): a new shape of the W-mlp training step ---- */
#define NEWSHAPE_PAIRS 2

/* The frozen-value check at one bucket, on against off (cgr_options.frozen_check). */
typedef struct newshape_frozen {
    /* A new shape's first runs (warm-ups, the capture, the check run or a replay, a replay). */
    bench_stats first_on, first_off; /* wall us of those runs, summed */
    bench_stats added;               /* on minus off, paired by repetition */
    bench_stats check_run;           /* the run after the capture, check on: the check */
    bench_stats same_run_off;        /* that run with the check off: a replay */
    bench_stats capture;             /* the shape's last_capture_us, check on */
    mode_result replay[2];           /* [0] check on, [1] off: replays, interleaved in rounds */
} newshape_frozen;

typedef struct newshape_bucket {
    int64_t bucket, lo;         /* true batches lo..bucket fall in it */
    uint64_t nodes, kernel_nodes;
    double cold_capture_us, cold_make_us;
    bench_stats capture, instantiate, total; /* capture + instantiate, over the repetitions */
    bench_stats raw_capture, raw_instantiate, raw_total; /* the same, as a raw CUDA graph */
    bench_stats step;           /* wall us per replayed step */
    newshape_frozen frozen;
} newshape_bucket;

typedef struct newshape_pair {
    const char *path;
    newshape_bucket b[2];
    int ran_instantiate, ran_update, ran_step, ran_frozen;
    /* capture + update in place */
    int attempts, updates, failures;
    uint64_t by_reason[16];
    char last_update_error[256];
    bench_stats ucapture, update, utotal;
    /* The same alternation as a raw CUDA graph: updates that took, and their figures. */
    int raw_updates;
    bench_stats raw_ucapture, raw_update, raw_utotal;
} newshape_pair;

typedef struct newshape_result {
    int reps, warmup_runs, steps;
    newshape_pair pair[NEWSHAPE_PAIRS];
    int frozen_runs;            /* runs per new shape in the frozen-value check's figures */
    uint64_t frozen_checks[2];  /* [0] check on, [1] off: cgr_step_stats.frozen_checks summed */
    uint64_t new_graphs[2];     /* captures those steps made */
    long losses_checked;        /* runs whose loss was read back and finite */
    int failed;                 /* a call failed or a loss came back non-finite */
} newshape_result;

/* ---- soak suite (soak_bench.c): a million replays, leaks and corruption ---- */
#define SOAK_SHAPES 4
#define SOAK_MAX_SAMPLES 64

typedef struct soak_sample {
    long step;
    int64_t rss, device, pinned; /* bytes; rss -1 when /proc could not be read */
} soak_sample;

typedef struct soak_result {
    int ran;          /* every step ran; else error says why */
    char error[512];
    long steps, phase_steps, check_every;
    int dim, graphs_cached;
    int64_t buckets[SOAK_SHAPES];
    int batches[SOAK_SHAPES];
    soak_sample samples[SOAK_MAX_SAMPLES];
    int n_samples;
    int64_t growth[3];  /* host RSS, device, pinned: from after warm-up to the end */
    long checks, warm_checks, mismatches;
    cgr_step_stats graph; /* the graph runtime's step at the end */
    double wall_s;
    int pass;
} soak_result;

/* ---- ddp suite (ddp/ddp_bench.c): W-ddp on several GPUs, rank 0's figures ---- */
/* W-ddp's modes; the last is the gradient's all-reduce alone, graphed. */
enum { DDP_SINGLE = 0, DDP_EAGER, DDP_GRAPH, DDP_ALLREDUCE, DDP_MODES };
extern const char *const ddp_mode_names[DDP_MODES];
#define DDP_MAX_B 4

typedef struct ddp_batch {
    int B;
    mode_result mode[DDP_MODES];
    int eager_equals_graph; /* parameters after the run; -1 not compared */
} ddp_batch;

typedef struct ddp_result {
    int world;
    size_t n_floats;        /* floats all-reduced per step */
    int n;
    ddp_batch b[DDP_MAX_B];
} ddp_result;

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
    said_check said[BENCH_MAX_SAID];
    int n_checks;
    check_result checks[BENCH_MAX_CHECKS];
    int aborted;        /* the device became unusable; later modes skipped */
    int n_work;
    work_result work[16]; /* W-mlp (with and without PDL) and W-cnn at each batch size */
    /* The suites with figures of their own, when they ran (NULL otherwise). */
    const serve_result *serve;
    const newshape_result *newshape;
    const soak_result *soak;
    const ddp_result *ddp;
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
/* W-mlp at the given batch sizes, without and with PDL (through cgr, eager vs graph). */
int mlp_suite(const bench_config *cfg, bench_results *res, const int *batches, int n);
/* W-cnn at the given batch sizes (through cgr, eager vs graph). */
int cnn_suite(const bench_config *cfg, bench_results *res, const int *batches, int n);
/*
 * The suites with figures of their own fill res->soak, res->newshape or
 * res->serve (and their checks) for report(); each returns 0 when it ran
 * to the end.
 * soak (soak_bench.c): a million runs of a step with a dynamic batch,
 * checked for memory growth against the limits file and for outputs
 * unlike an eager run's.
 */
int soak_suite(const bench_config *cfg, bench_results *res);
/*
 * newshape (newshape_bench.c): what a new shape of the W-mlp training step
 * costs with a dynamic batch, warm-up excluded (capture + instantiate,
 * capture + update in place), and what the frozen-value check adds.
 */
int newshape_suite(const bench_config *cfg, bench_results *res);
/*
 * serve (serve/serve_bench.c): W-serve's request sequence with graphs and
 * eagerly, sampled outputs checked, each bucket's graph profiled.
 */
int serve_suite(const bench_config *cfg, bench_results *res);

/* Watchdog budget for one mode of `cfg` (setup + warm-up + steps). */
unsigned mode_budget_s(const bench_config *cfg, double ms_per_step);

/*
 * Runs modes m[0..n) of one group (named in messages, e.g. "chain N=100")
 * under the watchdog: setup of each, measure_rounds over those set up,
 * finish and teardown of each. Marks them skipped when the device is
 * already lost, and res->aborted when it is lost now. budget_s is the
 * watchdog's allowance for the whole group.
 */
void run_group(bench_results *res, const char *group, bench_mode *m, int n, unsigned budget_s);

/*
 * Adds a check of value against the named limit (limits_file.h): ok when
 * value <= limit. Returns 1 when it passed.
 */
int add_check(bench_results *res, const char *name, const char *what, double value,
              int warn_only);
/*
 * A new check with a message (said_check, not yet ok) for the caller to
 * fill; name and what must outlive res. Past BENCH_MAX_SAID, a slot that
 * no report shows, and res->aborted is set, so the run fails visibly.
 */
said_check *said_add(bench_results *res, const char *name, const char *what);
/*
 * The check `trace_written`: the --trace file `path` was written, or why
 * not (a suite that profiles steps calls it once it is done with them).
 */
void trace_said(bench_results *res, const char *path, int written, const char *why);

/*
 * Checks CUDA device `device` and fills res's device fields: 0, or
 * EXIT_NO_DEVICE (2) after printing why there is no usable device, or 1
 * when a CUDA call failed.
 */
int bench_device_probe(int device, bench_results *res);
/* The first lines of the text report: device, driver, steps, limits, PDL. */
void report_header(const bench_results *res);

/* report.c */
/*
 * Version of the JSON files' layout (docs/bench-json.md): raised whenever a
 * key changes meaning, moves or goes; new keys alone do not raise it.
 */
#define BENCH_JSON_SCHEMA_VERSION 5
/*
 * Prints the tables, checks and summary of every suite in res and, when
 * json_path is given, writes the same figures as JSON. 0, or -1 (reported)
 * when the JSON file could not be written.
 */
int report(const bench_results *res, const char *json_path);
/* 1 when any mode failed or produced a wrong value, a suite did not finish or a check failed. */
int results_failed(const bench_results *res);

#endif
