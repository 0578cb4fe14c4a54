/*
 * W-serve, the serving workload: a serving loop on the W-mlp forward pass
 * plus softmax, through one cgr step with a dynamic batch.
 *
 *   x[B][1024] -> 4 x (Linear 1024->1024 + bias + ReLU)
 *              -> Linear 1024->1000 + bias -> softmax -> probs[B][1000]
 *
 * B is the request's batch, 1..64, bucketed to {1, 2, 4, 8, 16, 32, 64}:
 * the step is declared at x[64][1024] and probs[64][1000] with the batch
 * as dynamic dim "batch" on axis 0 of both. It computes at the bucket's
 * size (W-mlp's forward, bench/mlp: its fused small-batch kernels up to 8
 * rows, cuBLAS fp32 GEMMs with default math, no TF32, above), and the
 * softmax reads the true batch from device memory and skips the padded
 * rows. Weights are persistent cgr allocations, activations cgr scratch.
 *
 * serve_step.c holds the model and the step, serve_bench.c the suite,
 * serve_pipe.c the passes with requests in flight.
 */
#ifndef BENCH_SERVE_H
#define BENCH_SERVE_H

#include <stdint.h>

#include "bench.h"
#include "cgr/cgr.h"
#include "mlp/mlp.h"

#define SERVE_MAX_BATCH 64

/** The batch buckets, {1, 2, 4, 8, 16, 32, 64}. */
extern const int64_t serve_buckets[SERVE_N_BUCKETS];
/** Index into serve_buckets of the smallest bucket that holds batch B (1..64). */
int serve_bucket_index(int B);

/** The model's host side: sizes, layout and the initial parameters. */
typedef struct serve_model {
    mlp_cfg cfg;        /**< W-mlp's sizes (cfg.batch is set per bucket in the step) */
    mlp_layout L;
    float *host_params; /**< L.n_floats floats, from mlp_init_params (never zero) */
} serve_model;

/** Builds the model with W-mlp's deterministic initialization; 0, or -1 (reported). */
int serve_model_init(serve_model *m);
void serve_model_free(serve_model *m);

/** One runtime serving the model: its step and the parameters in its persistent memory. */
typedef struct serve_rt {
    const serve_model *model;
    int pdl;            /**< our kernels with programmatic dependent launch */
    cgr_runtime *rt;
    cgr_step *step;
    float *dev_params;  /**< persistent, on rt */
    int slots;          /**< the step's staging slots: requests that can be in flight */
    int armable;        /**< the step is armable and requests are armed (CGR_ACQUIRE_ARM) */
} serve_rt;

/**
 * Creates the runtime (capture = 1: graphs; 0: every run eager), uploads
 * the parameters and creates the step, armable or not. 0, or -1
 * (reported); on failure whatever was made is released by
 * serve_rt_destroy().
 */
int serve_rt_create(serve_rt *r, const serve_model *m, int device, int capture, int pdl,
                    int armable);
/**
 * Takes a slot for a request of batch B: armed (CGR_ACQUIRE_ARM) on an armable
 * runtime (the bucket's graph is launched at once and waits for the
 * launch), cgr_step_acquire otherwise. 0, or -1 (reported).
 */
int serve_acquire(serve_rt *r, int B, cgr_slot *slot);
/**
 * Writes a request's packed input rows (bytes) into the acquired slot with
 * cgr_step_write_input. 0, or -1 (reported).
 */
int serve_write_input(serve_rt *r, const cgr_slot *slot, const float *src, size_t bytes);
void serve_rt_destroy(serve_rt *r);

/**
 * The reference for one row, in double precision on the host: the
 * probabilities (SERVE classes = 1000) of input row x (1024 floats).
 */
void serve_ref_row(const serve_model *m, const float *x, double *probs);

/* ---- requests in flight (serve_pipe.c) ---- */

#define SERVE_PIPE_POOL_ROWS 256  /* random input rows the requests take theirs from */
#define SERVE_PIPE_HASH_EVERY 16  /* every 16th request's first and last row are hashed */

/**
 * Runs requests from..n-1 (those with batch <= max_batch when max_batch >
 * 0) with up to srt->slots in flight: a request is staged and launched
 * while earlier ones run, and the oldest is retired (waited, its output
 * read) only when every slot is taken. Inputs are rows of `pool`
 * (SERVE_PIPE_POOL_ROWS x in_dim floats). hashes (optional, n /
 * SERVE_PIPE_HASH_EVERY + 1 entries) gets the hash of the first and last
 * output row of every 16th request. 0, or -1 (reported).
 */
int serve_pipe_pass(serve_rt *srt, const int *batch, int from, int n, int max_batch,
                    const float *pool, int in_dim, int classes, uint64_t *hashes,
                    serve_pipe_result *out);

#endif
