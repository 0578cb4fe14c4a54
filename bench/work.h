/*
 * Workloads run through cgr (W-cnn, W-mlp): the same step function measured
 * with cgr's eager path (cgr_options.capture = 0) and graphed, in one run,
 * plus GPU busy time from CUPTI when the profiler is available.
 */
#ifndef BENCH_WORK_H
#define BENCH_WORK_H

#include <stdint.h>

#include "cgr/cgr.h"
#include "timing.h"
#include "util.h"

#define WORK_MAX_IO 4
#define WORK_OUT_KEEP 4096 /* bytes of the last output kept for the eager/graph check */

/* A workload for one batch size: its step and how to feed it. */
typedef struct workload {
    char name[16];  /* "W-cnn" */
    int B;
    int n_in, n_out;
    cgr_tensor_desc in[WORK_MAX_IO], out[WORK_MAX_IO];
    cgr_step_fn fn;
    void *user;
    /* Per runtime, before its step exists: e.g. persistent parameters. */
    int (*setup)(void *user, cgr_runtime *rt);
    /* Fresh host inputs for one step, in the declared layouts. */
    void (*fill)(void *user, bench_rng *r, void *const *inputs);
    /* After the runtime is gone. */
    void (*teardown)(void *user);
} workload;

/* One mode (eager or graph) of a workload. */
typedef struct work_mode {
    mode_result m;
    int prof_ok;
    double busy_us, busy_union_us, kernels_per_step, memcpys_per_step;
    double capture_us;
    uint64_t graph_nodes;
    unsigned char last_out[WORK_OUT_KEEP];
    size_t last_out_bytes;
} work_mode;

enum { WORK_EAGER = 0, WORK_GRAPH, WORK_MODES };

typedef struct work_result {
    char name[16];
    int B;
    work_mode mode[WORK_MODES];
    int outputs_equal; /* last step's outputs bitwise equal in both modes; -1 unknown */
    char top[8][160];  /* graph mode: top kernels by time ("name calls total_us share") */
    int n_top;
} work_result;

struct bench_config;
struct bench_results;
/* Builds the workload for batch B (arg: a variant, e.g. PDL); 0 on success. */
typedef int (*work_make)(int B, int arg, workload *w);
/*
 * Both modes of each batch size, interleaved in rounds, each mode on its own
 * workload made by `make` (so each has its own parameters) and freed by free_fn.
 */
void work_suite(const struct bench_config *cfg, struct bench_results *res, const int *batches,
                int n, work_make make, void (*free_fn)(workload *), int arg);
/* Writes the Chrome/Perfetto trace collected by work_suite (when cfg->trace_path). */
int work_trace_write(const char *path);
/* Releases the profiler. */
void work_finish(void);

/* W-mlp variants (bits of mlp_workload's variant argument). */
#define MLP_VARIANT_PDL 1     /* our kernels with programmatic dependent launch */
#define MLP_VARIANT_DROPOUT 2 /* dropout p = 0.1 after each ReLU */
/* W-mlp training at batch B (bench/mlp_work.c); 0 on success. */
int mlp_workload(int B, int variant, workload *w);
void mlp_workload_free(workload *w);
struct mlp_cfg;
/* Fresh W-mlp training inputs: rows x cfg->in_dim of x, rows labels. */
void mlp_fill_rows(bench_rng *r, const struct mlp_cfg *cfg, int64_t rows, float *x, int *labels);

/* W-cnn at batch B (bench/cnn_work.c; arg unused); 0 on success. */
int cnn_workload(int B, int arg, workload *w);
void cnn_workload_free(workload *w);

#endif
