/*
 * W-mlp kernels (mlp_kernels.cu): the parts of one fp32 training step that
 * cuBLAS does not do, or does slowly at small batch.
 *
 * Conventions shared by every launcher below:
 * - Activations and their gradients are row-major [rows = B][cols].
 *   A Linear weight is row-major [out][in] (PyTorch's layout).
 * - Every launcher enqueues on `s` and returns the launch error
 *   (cudaGetLastError() after the launch). Bad arguments launch nothing
 *   and return cudaErrorInvalidValue.
 * - pdl != 0 launches with programmatic stream serialization (PDL,
 *   sm_90): the kernel may start while the previous kernel of the stream
 *   is still running. Every kernel here first calls
 *   cudaGridDependencySynchronize(), which waits until that previous grid
 *   has completed and its writes are visible, so results are bitwise the
 *   same with and without PDL; only the launch latency overlaps.
 * - No kernel uses floating-point atomics; every sum has a fixed order, so
 *   results are bitwise reproducible run to run.
 * - Nothing here synchronizes or allocates: all of it can be captured into a
 *   CUDA graph.
 *
 * The file needs sm_90 or newer (thread block clusters, PDL).
 */
#ifndef BENCH_MLP_KERNELS_H
#define BENCH_MLP_KERNELS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest batch the small-batch kernels (gemv_bwd, outer_acc) take. */
#define MLP_SMALL_B_MAX 8

/** y[r][c] = max(y[r][c] + b[c], 0), in place. */
cudaError_t mlp_bias_relu_fwd(float *y, const float *b, int rows, int cols, cudaStream_t s,
                              int pdl);

/** y[r][c] += b[c], in place (the last layer: no ReLU). */
cudaError_t mlp_bias_fwd(float *y, const float *b, int rows, int cols, cudaStream_t s, int pdl);

/**
 * dy[r][c] = y[r][c] > 0 ? dy[r][c] : 0, in place. y is the ReLU's output
 * (y > 0 exactly where its input was > 0).
 */
cudaError_t mlp_relu_bwd(float *dy, const float *y, int rows, int cols, cudaStream_t s, int pdl);

/**
 * Softmax cross-entropy, forward and backward in one pass over the logits.
 *
 * logits [B][C]; labels [B] in [0, C); row_loss [B] (scratch, receives the
 * per-row losses); loss [1] receives the mean over the batch; dlogits [B][C]
 * receives d(mean loss)/d(logits) = (softmax - onehot) / B. dlogits may not
 * alias logits.
 *
 * A label outside [0, C) is a caller bug and does not crash: that row's loss
 * is NaN (so the mean is NaN and shows up in the loss read back every
 * step) and its dlogits row is zero (so the parameters stay finite).
 *
 * One launch when B <= 32; two (rows, then a one-warp mean) above that.
 */
cudaError_t mlp_softmax_xent_fwd_bwd(const float *logits, const int *labels, float *row_loss,
                                     float *loss, float *dlogits, int B, int C, cudaStream_t s,
                                     int pdl);

/**
 * Fused AdamW over n floats (PyTorch AdamW semantics, decoupled weight
 * decay), one launch:
 *   t = *step + 1
 *   p -= lr * wd * p
 *   m = b1 * m + (1 - b1) * g;  v = b2 * v + (1 - b2) * g * g
 *   p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
 * *step is only read: follow with mlp_adamw_step_count_inc() (see the .cu
 * for why the increment is a separate kernel). float4 path when the four
 * pointers are 16-byte aligned; n need not be a multiple of 4.
 */
cudaError_t mlp_adamw_fused(float *params, const float *grads, float *m, float *v, size_t n,
                            const int *step, float lr, float beta1, float beta2, float eps,
                            float weight_decay, cudaStream_t s, int pdl);

/** *step += 1 (one thread). Launch right after mlp_adamw_fused(). */
cudaError_t mlp_adamw_step_count_inc(int *step, cudaStream_t s, int pdl);

/**
 * Data gradient of a Linear layer at small batch, dx = dy W:
 *   dx[b][i] = sum_o dy[b][o] * W[o][i]          (B <= MLP_SMALL_B_MAX)
 * and, when mask != NULL, the ReLU backward of the layer below fused in:
 *   dx[b][i] = mask[b][i] > 0 ? dx[b][i] : 0     (mask [B][in]).
 * dy [B][out], W [out][in], dx [B][in] (overwritten).
 */
cudaError_t mlp_gemv_bwd(float *dx, const float *dy, const float *W, const float *mask, int B,
                         int out, int in, cudaStream_t s, int pdl);

/**
 * Weight (and optionally bias) gradient of a Linear layer at small batch:
 *   dW[o][i] = sum_b dy[b][o] * x[b][i]          (B <= MLP_SMALL_B_MAX)
 *   db[o]    = sum_b dy[b][o]                    (when db != NULL)
 * dy [B][out], x [B][in], dW [out][in] and db [out] overwritten.
 */
cudaError_t mlp_outer_acc(float *dW, float *db, const float *dy, const float *x, int B, int out,
                          int in, cudaStream_t s, int pdl);

/** db[o] = sum_b dy[b][o] for any B (same summation order as mlp_outer_acc). */
cudaError_t mlp_bias_grad(float *db, const float *dy, int B, int out, cudaStream_t s, int pdl);

#ifdef __cplusplus
}
#endif

#endif
