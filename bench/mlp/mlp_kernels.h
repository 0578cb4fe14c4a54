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
 * The whole step needs sm_90 or newer (thread block clusters in
 * mlp_gemv_bwd; mlp_device_ok() in mlp.h says whether the device has them).
 * PDL is used where the device has it (cgr_launch_kernel decides), so pdl
 * != 0 is harmless elsewhere.
 */
#ifndef BENCH_MLP_KERNELS_H
#define BENCH_MLP_KERNELS_H

#include <stddef.h>

#include <stdint.h>

#include <cuda_runtime_api.h>

#include <cgr/cgr.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest batch the small-batch kernels (linear_fwd, gemv_bwd, outer_acc) take. */
#define MLP_SMALL_B_MAX 8

/**
 * Inverted dropout after a ReLU, with graph-safe random numbers: element e
 * (= row * cols + col) of a layer's [rows][cols] output is dropped when
 * cgr_philox_uniform(word e % 4 of cgr_philox4x32(seed, offset + sub + e / 4, 0))
 * < p, and kept ones are scaled by 1 / (1 - p). seed and offset are read
 * on the device from *state (cgr_ctx_philox), so a graph replay draws new
 * masks; sub is baked in. A layer uses ceil(rows * cols / 4) counters.
 */
typedef struct mlp_dropout {
    const cgr_philox_state *state; /**< device memory */
    uint64_t sub;                  /**< first counter of this layer */
    float p;                       /**< drop probability, 0 < p < 1 */
} mlp_dropout;

/**
 * Linear forward at small batch, bias and activation fused (B <= MLP_SMALL_B_MAX):
 *   y[b][o] = act(sum_i W[o][i] x[b][i] + bias[o])
 * act: ReLU when relu != 0, then dropout when dr != NULL (requires relu).
 * A block of 256 threads owns 8 output features and splits the columns
 * among its warps, so W's rows and x are each read once per block;
 * W [out][in], x [B][in], y [B][out] (may not alias x).
 *
 * w_early = 1 promises that nothing writes W or bias while this kernel may
 * run (inference with fixed weights). With pdl = 1 the kernel then loads
 * them before it waits for the previous kernel, so the load overlaps that
 * kernel's work. Never set it where an earlier kernel that can still be
 * running updates the weights (an optimizer step launched with PDL): the
 * kernel would read the old values. The result's bits do not depend on it.
 */
cudaError_t mlp_linear_fwd(float *y, const float *W, const float *bias, const float *x, int B,
                           int out, int in, int relu, const mlp_dropout *dr, cudaStream_t s,
                           int pdl, int w_early);

/** y[r][c] = dropout(max(y[r][c] + b[c], 0)), in place (the large-batch path). */
cudaError_t mlp_bias_relu_dropout_fwd(float *y, const float *b, int rows, int cols,
                                      const mlp_dropout *dr, cudaStream_t s, int pdl);

/** y[r][c] = max(y[r][c] + b[c], 0), in place. */
cudaError_t mlp_bias_relu_fwd(float *y, const float *b, int rows, int cols, cudaStream_t s,
                              int pdl);

/** y[r][c] += b[c], in place (the last layer: no ReLU). */
cudaError_t mlp_bias_fwd(float *y, const float *b, int rows, int cols, cudaStream_t s, int pdl);

/**
 * dy[r][c] = y[r][c] > 0 ? scale * dy[r][c] : 0, in place. y is the ReLU's
 * (and dropout's) output: y > 0 exactly where the ReLU's input was > 0 and
 * dropout kept the unit, so the mask needs no random numbers again. scale
 * is 1 / (1 - p) after dropout, else 1 (exact: the product is dy itself).
 */
cudaError_t mlp_relu_bwd(float *dy, const float *y, float scale, int rows, int cols,
                         cudaStream_t s, int pdl);

/**
 * Softmax cross-entropy, forward and backward in one pass over the logits.
 *
 * logits [B][C], plus bias [C] when bias != NULL (the last Linear's bias,
 * fused here: the logits themselves are never stored); labels [B] in
 * [0, C); row_loss [B] (scratch, receives the per-row losses); loss [1]
 * receives the mean over the batch; dlogits [B][C] receives
 * d(mean loss)/d(logits) = (softmax - onehot) / B. dlogits may not alias
 * logits.
 *
 * A label outside [0, C) is a caller bug and does not crash: that row's loss
 * is NaN (so the mean is NaN and shows up in the loss read back every
 * step) and its dlogits row is zero (so the parameters stay finite).
 *
 * With true_batch NULL: one block per row; one launch when B == 1, two
 * (rows, then a one-warp mean) above that.
 *
 * For a padded batch (cgr's dynamic dims) the launch is shaped for B rows
 * (the bucket), and true_batch, when not NULL, points at the number T of
 * real rows in device memory (an int64 read by the kernels, so one
 * captured graph serves every T; clamped to [1, B]). Rows >= T get
 * row_loss 0 and a zero dlogits row, whatever their logits and labels; the
 * real rows get dlogits = (softmax - onehot) / T, and loss the mean of
 * their T losses. Two launches whenever true_batch is set, B = 1 included,
 * so that every bucket's graph has the same nodes; with T = B the results
 * equal true_batch NULL's bitwise.
 */
cudaError_t mlp_softmax_xent_masked(const float *logits, const float *bias, const int *labels,
                                    const int64_t *true_batch, float *row_loss, float *loss,
                                    float *dlogits, int B, int C, cudaStream_t s, int pdl);

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
 *   dx[b][i] = sum_o dy[b][o] * W[o][i]                   (B <= MLP_SMALL_B_MAX)
 * and, when mask != NULL, the ReLU (and dropout) backward of the layer
 * below fused in, as in mlp_relu_bwd():
 *   dx[b][i] = mask[b][i] > 0 ? scale * dx[b][i] : 0      (mask [B][in]).
 * dy [B][out], W [out][in], dx [B][in] (overwritten).
 */
cudaError_t mlp_gemv_bwd(float *dx, const float *dy, const float *W, const float *mask,
                         float scale, int B, int out, int in, cudaStream_t s, int pdl);

/**
 * Weight (and optionally bias) gradient of a Linear layer at small batch:
 *   dW[o][i] = sum_b dy[b][o] * x[b][i]          (B <= MLP_SMALL_B_MAX)
 *   db[o]    = sum_b dy[b][o]                    (when db != NULL)
 * dy [B][out], x [B][in], dW [out][in] and db [out] overwritten.
 */
cudaError_t mlp_outer_acc(float *dW, float *db, const float *dy, const float *x, int B, int out,
                          int in, cudaStream_t s, int pdl);

/**
 * db[o] = sum_b dy[b][o] for any B (the large-batch path): each of 32 row
 * groups sums rows g, g + 32, ... in order, then the 32 partial sums are
 * added in group order, so the result is deterministic.
 */
cudaError_t mlp_bias_grad(float *db, const float *dy, int B, int out, cudaStream_t s, int pdl);

#ifdef __cplusplus
}
#endif

#endif
