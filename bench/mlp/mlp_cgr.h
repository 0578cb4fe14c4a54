/*
 * W-mlp as a cgr step: what cgr-bench's workload and the gpu test share.
 *
 * The step's inputs are x [B][in_dim] (input 0) and int32 labels [B]
 * (input 1); its output 0 is the loss. Parameters, gradients, both AdamW
 * moments and the step count are persistent cgr allocations; activations
 * and gradient buffers come from the step's scratch (cgr's arena); the
 * dropout variant draws from the step's Philox state. The same step with
 * a dynamic batch is declared and bound by the mlp_cgr_dyn_* calls.
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
 * The step's tensors at batch B = cfg->batch: in[0] x [B][in_dim] (f32),
 * in[1] labels [B] (i32), *loss the loss (f32 scalar).
 */
void mlp_cgr_tensors(const mlp_cfg *cfg, cgr_tensor_desc in[2], cgr_tensor_desc *loss);

/**
 * Inside a step function: the step's buffers (dev's persistent part, the
 * step's inputs and output, scratch carved from one cgr_ctx_alloc of
 * scratch_bytes, the Philox state when cfg->dropout > 0) into *b, plus the
 * handle and stream to enqueue on. Returns cgr's status; a failure of the
 * carving comes back as CGR_STATUS_INVALID_ARGUMENT with mlp_last_error().
 */
cgr_status mlp_cgr_bind(cgr_ctx *ctx, const mlp_cfg *cfg, size_t scratch_bytes,
                        const mlp_bufs *dev, mlp_bufs *b, cgr_cublas_handle *h, cgr_stream *s);

/* ---- a dynamic batch (cgr's dynamic dims, docs/shapes.md) ------------------------
 *
 * One step serves every batch 1..Bmax: its tensors are declared at Bmax
 * (= cfg->batch), the batch is dynamic dim 0 with a bucket list, and each
 * run passes its true batch to cgr_step_run(). cgr pads x and labels
 * to the bucket with zeros (label 0 is a valid class; the loss kernel
 * masks the padded rows anyway). Inside the step everything is shaped for
 * the bucket (launch shapes, cuBLAS sizes, scratch), so one graph per
 * bucket serves every true batch in it, while the loss kernel reads the
 * true batch from device memory: the loss is the mean over the true
 * batch and the gradients are the true rows' alone (mlp.c says why).
 * With dropout, Philox counters are reserved for the bucket's rows.
 */

/**
 * The declaration of a dynamic-batch W-mlp step: input 0 x [Bmax][in_dim]
 * (f32), input 1 labels [Bmax] (i32), the batch on axis 0 of both; output 0
 * the loss (f32 scalar). Fill it with mlp_cgr_dyn_init(), optionally add
 * outputs, then make the step description with mlp_cgr_dyn_desc(); the
 * description points into this struct, which must outlive
 * cgr_step_create() (cgr copies what it keeps).
 */
typedef struct mlp_cgr_dyn {
    cgr_tensor_desc in[2];
    cgr_tensor_desc out[CGR_MAX_TENSORS];
    int n_out;
    int64_t buckets[CGR_MAX_BUCKETS];
    cgr_dyn_dim dim;
    cgr_dim_use uses[2 + CGR_MAX_TENSORS];
    int n_uses;
} mlp_cgr_dyn;

/**
 * Declares the step for cfg (Bmax = cfg->batch) with the batch's buckets:
 * n_buckets sizes, strictly increasing, the last one Bmax; buckets NULL
 * (n_buckets 0) lets cgr use powers of two up to Bmax. 0, or -1 with
 * mlp_last_error().
 */
int mlp_cgr_dyn_init(mlp_cgr_dyn *d, const mlp_cfg *cfg, const int64_t *buckets, int n_buckets);

/**
 * Appends output `name`, f32 [Bmax][cols], whose axis 0 is the batch: cgr
 * hands it back packed at the run's true batch. Returns its output index,
 * or -1 with mlp_last_error() when the table is full or cols < 1.
 */
int mlp_cgr_dyn_add_batch_output(mlp_cgr_dyn *d, const char *name, int cols);

/** Fills desc (start from cgr_step_desc_init()) with d's tensors and dynamic dim, fn and user. */
void mlp_cgr_dyn_desc(const mlp_cgr_dyn *d, const char *name, cgr_step_fn fn, void *user,
                      cgr_step_desc *desc);

/**
 * Inside the step function of a step declared by mlp_cgr_dyn_init(): *run
 * receives cfg with batch = this run's bucket (cgr_ctx_dim(ctx, 0, ...)),
 * and *b the buffers as mlp_cgr_bind() gives them, scratch sized for the
 * bucket, plus b->true_batch, the true batch in device memory. Enqueue with
 * mlp_step_enqueue(run, b, ...). Returns cgr's status;
 * CGR_STATUS_INVALID_ARGUMENT (with mlp_last_error()) when the bucket is
 * outside 1..cfg->batch.
 */
cgr_status mlp_cgr_bind_dyn(cgr_ctx *ctx, const mlp_cfg *cfg, const mlp_bufs *dev, mlp_cfg *run,
                            mlp_bufs *b, cgr_cublas_handle *h, cgr_stream *s);

#ifdef __cplusplus
}
#endif

#endif
