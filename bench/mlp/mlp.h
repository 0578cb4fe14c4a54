/*
 * W-mlp: the model and one training step.
 *
 *   x[B][1024] -> 4 x (Linear 1024->1024 + bias + ReLU) -> Linear 1024->1000
 *   + bias -> mean softmax cross-entropy on int32 labels -> full backward ->
 *   AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01, bias
 *   correction from a step count in device memory)
 *
 * and the variant with dropout p after each ReLU (cfg.dropout), drawing its
 * masks from a graph-safe Philox state (cgr_ctx_philox).
 *
 * fp32 throughout; the cuBLAS handle keeps its default math mode (no TF32).
 *
 * This object owns no device memory. The caller allocates, and passes in
 * through mlp_bufs:
 * - persistent state: params, grads, m, v (mlp_layout.n_floats floats each,
 *   16-byte aligned) and the step count (one int);
 * - the step's input x, labels and output loss;
 * - scratch (mlp_scratch_sizes()): one activation buffer per layer, kept
 *   from the forward pass for the backward pass, one output-gradient
 *   buffer per layer and the per-row losses.
 * mlp_step_enqueue() then only enqueues work: no synchronization, no
 * allocation, no host reads of device data, so a step can be captured into
 * a CUDA graph and replayed (the step count, read and advanced on the
 * device, moves on with every replay).
 *
 * Every function that can fail returns 0 on success and -1 on failure, with
 * a message for the calling thread in mlp_last_error().
 */
#ifndef BENCH_MLP_H
#define BENCH_MLP_H

#include <stddef.h>
#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "mlp_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Layers at most (hidden layers + the output layer). */
#define MLP_MAX_LAYERS 8
/* Alignment of every tensor in the flat buffers, and of each scratch buffer
 * carved by mlp_scratch_carve(). */
#define MLP_TENSOR_ALIGN_FLOATS 4
#define MLP_SCRATCH_ALIGN 256

/** Sizes and hyperparameters. mlp_cfg_default() gives W-mlp's. */
typedef struct mlp_cfg {
    int batch;           /**< B >= 1 */
    int in_dim;          /**< input features (1024) */
    int hidden;          /**< width of the hidden layers (1024) */
    int n_hidden;        /**< hidden layers, Linear + bias + ReLU (4); 0..MLP_MAX_LAYERS-1 */
    int classes;         /**< output classes (1000) */
    /**
     * Batches up to this size use the custom backward kernels
     * (mlp_gemv_bwd, mlp_outer_acc); larger ones use cuBLAS (N,N) and
     * (N,T) GEMMs. 0..MLP_SMALL_B_MAX; default MLP_SMALL_B_MAX.
     */
    int small_batch_max;
    float lr, beta1, beta2, eps, weight_decay;
    /** Dropout probability after each hidden ReLU: 0 (off, the default) or in (0, 1). */
    float dropout;
} mlp_cfg;

/** W-mlp's sizes and hyperparameters for batch size `batch`. */
void mlp_cfg_default(mlp_cfg *cfg, int batch);

/** 0 when every field is in range; -1 (and mlp_last_error()) otherwise. */
int mlp_cfg_check(const mlp_cfg *cfg);

/**
 * Where each tensor lives in the flat params / grads / m / v buffers (all
 * four use the same offsets). Layer l's weight is row-major [out[l]][in[l]]
 * at w_off[l], its bias [out[l]] at b_off[l]. Offsets are in floats and
 * multiples of MLP_TENSOR_ALIGN_FLOATS (16 bytes); the padding between
 * tensors is never read by the forward or backward pass.
 */
typedef struct mlp_layout {
    int n_layers;               /**< n_hidden + 1 */
    int in[MLP_MAX_LAYERS];     /**< input features of layer l */
    int out[MLP_MAX_LAYERS];    /**< output features of layer l */
    size_t w_off[MLP_MAX_LAYERS];
    size_t b_off[MLP_MAX_LAYERS];
    size_t n_floats;            /**< length of each flat buffer, a multiple of 4 */
    size_t n_params;            /**< parameters without the padding (5,223,400 for W-mlp) */
} mlp_layout;

/** Fills *layout for cfg. */
int mlp_layout_init(mlp_layout *layout, const mlp_cfg *cfg);

/**
 * Writes the initial parameters into a host buffer of layout.n_floats
 * floats: weights and biases uniform in [-1/sqrt(in), 1/sqrt(in)) like
 * PyTorch's nn.Linear, never exactly zero; padding zero. Deterministic for
 * a given seed.
 */
int mlp_init_params(const mlp_cfg *cfg, float *params, uint64_t seed);

/** Scratch one step needs, in bytes. */
typedef struct mlp_scratch {
    int n_act;                          /**< = n_layers */
    size_t act_bytes[MLP_MAX_LAYERS];   /**< act[l]: B * out[l] floats (layer l's output) */
    /**
     * Each of dbuf[0 .. n_act-1]: B * max feature count. The backward pass
     * writes each layer's output gradient to its own buffer, so a weight
     * gradient running on the side stream may still read it while the main
     * stream moves on (no ping-pong reuse).
     */
    size_t dbuf_bytes;
    size_t row_loss_bytes;              /**< B floats */
    /** All of the above in one block, each rounded up to MLP_SCRATCH_ALIGN. */
    size_t total_bytes;
} mlp_scratch;

/** Fills *sizes for cfg. */
int mlp_scratch_sizes(const mlp_cfg *cfg, mlp_scratch *sizes);

/**
 * Philox counters one step draws when cfg->dropout > 0 (reserve them with
 * cgr_ctx_philox() and pass the result in mlp_bufs.rng / rng_sub); 0 when
 * dropout is off. Hidden layer l uses ceil(B * hidden / 4) of them, in
 * layer order.
 */
uint64_t mlp_dropout_counters(const mlp_cfg *cfg);

/** Device buffers of one step. */
typedef struct mlp_bufs {
    /* Persistent (allocate once; never move while a captured graph uses them). */
    float *params;     /**< n_floats; from mlp_init_params() (padding zero) */
    float *grads;      /**< n_floats; zero once before the first step (padding must stay 0) */
    float *m;          /**< n_floats; zero before the first step */
    float *v;          /**< n_floats; zero before the first step */
    int *step;         /**< 1 int: AdamW steps taken; 0 before the first step */
    /* The step's input and output. */
    const float *x;    /**< [B][in_dim] */
    const int *labels; /**< [B], each in [0, classes) */
    float *loss;       /**< 1 float: this step's mean loss (before the update) */
    /* Scratch (mlp_scratch). */
    float *act[MLP_MAX_LAYERS]; /**< act[l]: [B][out[l]]; act[n_layers-1] holds the logits */
    float *dbuf[MLP_MAX_LAYERS]; /**< dbuf[l]: d(loss)/d(layer l's output) */
    float *row_loss;            /**< [B] */
    /*
     * Padded batches (cgr's dynamic dims; optional). NULL: all B rows are
     * real. Otherwise it points at T, the number of real rows, in device
     * memory (cgr_ctx_dim()'s `dev`), with B = cfg.batch the bucket the
     * step is shaped for: rows >= T of x and labels are padding, the loss
     * is the mean over the T real rows, and the gradients are those of the
     * T real rows alone (mlp_softmax_xent_masked). Read on the device only,
     * so one captured graph serves every T up to B.
     */
    const int64_t *true_batch;
    /* Dropout only (cfg.dropout > 0): the step's Philox state in device
     * memory and the first of its mlp_dropout_counters() counters. */
    const cgr_philox_state *rng;
    uint64_t rng_sub;
    /*
     * Optional (side == NULL: everything on the step's stream). At small
     * batch each layer's weight gradient (mlp_outer_acc) does not feed the
     * data gradient chain, so it runs on `side`, forked after the layer's
     * output gradient is ready (ev_fork) and joined once before AdamW
     * (ev_join). Captured into a graph, the two chains become parallel
     * branches: the weight gradients leave the critical path. side must be
     * a non-blocking stream of the same device; the events may be reused
     * from step to step.
     */
    cudaStream_t side;
    cudaEvent_t ev_fork, ev_join;
    /*
     * Optional (NULL: none): called by mlp_step_enqueue once every gradient
     * of the step is in grads (the side stream joined) and before AdamW
     * reads them, to enqueue more work on s, e.g. the data-parallel
     * all-reduce of bench/ddp. Returns 0, or -1 with mlp_set_error().
     */
    int (*grad_hook)(void *user, float *grads, size_t n_floats, cudaStream_t s);
    void *grad_hook_user;
} mlp_bufs;

/**
 * Points b->act, b->dbuf and b->row_loss into one device block of
 * mlp_scratch.total_bytes starting at `base` (256-byte aligned). The other
 * fields of *b are left alone.
 */
int mlp_scratch_carve(const mlp_cfg *cfg, void *base, mlp_bufs *b);

/**
 * Enqueues the forward pass only, leaving the logits, bias included, in
 * b->act[n_layers - 1] (the serving path; no dropout). Reads b->params,
 * b->x; writes b->act. h must be bound to stream s (cublasSetStream) with
 * the host pointer mode. w_early = 1 promises that b->params is not written
 * while the pass may run, and lets the small-batch layers load their
 * weights before the PDL wait (mlp_linear_fwd); 0 otherwise.
 */
int mlp_forward_enqueue(const mlp_cfg *cfg, const mlp_bufs *b, cublasHandle_t h, cudaStream_t s,
                        int pdl, int w_early);

/**
 * Enqueues one whole training step on s: forward, loss (into b->loss),
 * backward (into b->grads) and AdamW (b->params, b->m, b->v, then
 * *b->step += 1). pdl != 0 launches this file's kernels with programmatic
 * dependent launch; the results are bitwise the same either way.
 *
 * Kernels per step at B <= small_batch_max: 5 Linear forwards (bias, ReLU
 * and dropout fused), 1 loss kernel (the last bias fused; plus a mean
 * kernel when B > 1 or b->true_batch is set), 5 weight+bias gradient and
 * 4 data-gradient kernels, AdamW and its step count: 17 at B = 1. Above
 * small_batch_max: 5 forward GEMMs + 4 bias kernels, the loss and its mean,
 * 9 backward GEMMs, 5 bias-gradient and 4 ReLU-backward kernels, AdamW and
 * its step count: 31.
 */
int mlp_step_enqueue(const mlp_cfg *cfg, const mlp_bufs *b, cublasHandle_t h, cudaStream_t s,
                     int pdl);

/**
 * 1 when the current device can run mlp_step_enqueue: compute capability
 * 9.0 or newer, for the thread block clusters of the small-batch data
 * gradient; 0 on older devices or when the device cannot be queried. The
 * forward pass alone runs on every architecture of the build.
 */
int mlp_device_ok(void);

/** The calling thread's last error message ("" when none). */
const char *mlp_last_error(void);

/** Sets the calling thread's message (printf-style) and returns -1. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
int mlp_set_error(const char *fmt, ...);

#ifdef __cplusplus
}
#endif

#endif
