/*
 * W-mlp as a cgr step: what cgr-bench's workload and the gpu test share.
 *
 * The step's inputs are x [B][in_dim] (input 0) and int32 labels [B]
 * (input 1); its output 0 is the loss. Parameters, gradients, both AdamW
 * moments and the step count are persistent cgr allocations; activations
 * and gradient buffers come from the step's scratch (cgr's arena); the
 * dropout variant draws from the step's Philox state.
 */
#ifndef BENCH_MLP_CGR_H
#define BENCH_MLP_CGR_H

#include <cgr/cgr.h>

#include "mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Allocates the persistent state on rt into *dev (params from params0,
 * layout.n_floats floats; grads, moments and the step count zero) and
 * creates the side stream and events of the parallel weight-gradient
 * branch. The buffers live as long as rt; the stream and events until
 * mlp_cgr_state_release(). Returns 0, or -1 with mlp_last_error().
 */
int mlp_cgr_state_create(cgr_runtime *rt, const mlp_cfg *cfg, const float *params0, mlp_bufs *dev);

/** Destroys the side stream and events; 0, or -1 with mlp_last_error(). */
int mlp_cgr_state_release(mlp_bufs *dev);

/**
 * Inside a step function: the step's buffers (dev's persistent part, the
 * step's inputs and output, scratch carved from one cgr_ctx_alloc of
 * scratch_bytes, the Philox state when cfg->dropout > 0) into *b, plus the
 * handle and stream to enqueue on. Returns cgr's status; a failure of the
 * carving comes back as CGR_STATUS_INVALID_ARGUMENT with mlp_last_error().
 */
cgr_status mlp_cgr_bind(cgr_ctx *ctx, const mlp_cfg *cfg, size_t scratch_bytes,
                        const mlp_bufs *dev, mlp_bufs *b, cgr_cublas_handle *h, cgr_stream *s);

#ifdef __cplusplus
}
#endif

#endif
