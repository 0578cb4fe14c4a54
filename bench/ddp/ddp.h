/*
 * W-ddp: W-mlp trained data-parallel, one process
 * per GPU. Each rank runs the W-mlp step on its own batch; between the
 * backward pass and the fused AdamW the flat gradient buffer is summed
 * over the ranks with one ncclAllReduce and scaled by 1/world, all on the
 * step's stream, so a captured step holds the collective and a replay
 * runs the whole data-parallel step in one launch. Every rank starts from
 * the same parameters and applies the same averaged gradient, so the
 * ranks' parameters stay bitwise identical.
 *
 * What the bench (ddp_bench.c) and the gpu test (tests/gpu/test_ddp.c)
 * share: the step function, its declaration, and the per-rank inputs.
 */
#ifndef BENCH_DDP_H
#define BENCH_DDP_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cgr/cgr.h"
#include "cgr/cgr_nccl.h"
#include "mlp/mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * x[i] *= s for i < n on stream, through cgr_launch_kernel: its status (the
 * message in cgr_last_error()), or CGR_STATUS_INVALID_ARGUMENT without a
 * message when x is not 16-byte aligned.
 */
cgr_status ddp_scale(float *x, size_t n, float s, cudaStream_t stream, int pdl);

/** One rank's W-ddp step (or the plain single-GPU W-mlp step, with nccl = 0). */
typedef struct ddp_model {
    mlp_cfg cfg;           /**< the per-GPU batch is cfg.batch */
    mlp_scratch scratch;
    size_t n_floats;       /**< of the flat parameter and gradient buffers */
    int pdl;               /**< the model's kernels with programmatic dependent launch */
    int nccl;              /**< 1: all-reduce the gradients (W-ddp); 0: single-GPU W-mlp */
    mlp_bufs dev;          /**< persistent part, from ddp_model_setup() */
    /**
     * Test hook: when set, the step calls cudaStreamSynchronize (illegal
     * during capture) after its all-reduce, but only while cgr captures it;
     * its eager runs stay legal.
     */
    int fail_capture;
    /* Set inside the step for the gradient hook. */
    cgr_nccl_comm comm;
    float inv_world;
} ddp_model;

/** Fills m for cfg (m->dev stays empty until ddp_model_setup). 0, or -1 with mlp_last_error(). */
int ddp_model_init(ddp_model *m, const mlp_cfg *cfg, int pdl, int nccl);
/**
 * The persistent state on rt, parameters from params0 (n_floats floats),
 * gradients, moments and step count zero. 0, or -1 with mlp_last_error().
 */
int ddp_model_setup(ddp_model *m, cgr_runtime *rt, const float *params0);
/** Releases what setup made besides rt's memory (side stream, events). */
void ddp_model_teardown(ddp_model *m);

/** The step's I/O: input 0 x [B][in_dim] f32, input 1 labels [B] i32; output 0 the loss. */
typedef struct ddp_io {
    cgr_tensor_desc in[2];
    cgr_tensor_desc out[1];
} ddp_io;
/** Fills io and desc (from cgr_step_desc_init) for m, with ddp_step and user m. */
void ddp_step_desc(ddp_model *m, const char *name, ddp_io *io, cgr_step_desc *desc);
/** The step function (user: the ddp_model). */
cgr_status ddp_step(cgr_ctx *ctx, void *user);

/**
 * Per-rank inputs: a rank's stream of batches is a xorshift64* sequence
 * seeded by ddp_seed(base, rank), so ranks see different data and the
 * test can regenerate any rank's batches. x is uniform in [-1, 1), never
 * 0; labels uniform over the classes.
 */
uint64_t ddp_seed(uint64_t base, int rank);
void ddp_fill(uint64_t *state, const mlp_cfg *cfg, float *x, int *labels);

/** FNV-1a over n bytes (cgr's own): compares parameters across ranks and modes by one word. */
uint64_t ddp_hash(const void *p, size_t n);

#ifdef __cplusplus
}
#endif

#endif
