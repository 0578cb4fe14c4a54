/*
 * Kernels of the dynamic-shape test (shapes_kernels.cu), callable from C.
 * Each returns the launch error.
 *
 * Every kernel computes each output element in one thread, in a fixed
 * order, and its per-row arithmetic does not depend on how many rows it is
 * launched for. So the same rows give bitwise the same results whether the
 * kernels run at a bucket's size inside a graph or at the true size on a
 * plain stream, which is what the test compares.
 */
#ifndef CGR_TEST_SHAPES_KERNELS_H
#define CGR_TEST_SHAPES_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* h[r][m] = b[m] + sum over k (in order) of x[r][k] * W[k][m], r < rows; x [rows][K], W [K][M]. */
cudaError_t shk_linear(float *h, const float *x, const float *W, const float *b, int rows, int K,
                       int M, cudaStream_t s);

/*
 * Batch centering that must not see padded rows. T = *true_rows (device
 * memory, clamped to [1, rows]); per column m, mean = (sum of h[r][m] over
 * r < T, in order) / T; y[r][m] = h[r][m] - mean for r < T and 0 for the
 * padded rows T <= r < rows. Including one padded row in the mean would
 * change every real row's result.
 */
cudaError_t shk_center(float *y, const float *h, int rows, int M, const int64_t *true_rows,
                       cudaStream_t s);

/* dst[r][k] = src[r][k] for r < rows, `sentinel` for rows <= r < total_rows. */
cudaError_t shk_copy_rows(float *dst, const float *src, int rows, int total_rows, int K,
                          float sentinel, cudaStream_t s);

/* dst[0] = src[0] (an int64 in device memory). */
cudaError_t shk_copy_i64(int64_t *dst, const int64_t *src, cudaStream_t s);

/* w[i] = v + i % 7 for i < n, by a grid of fixed size (scratch that scales with the bucket). */
cudaError_t shk_fill(float *w, size_t n, float v, cudaStream_t s);

/* y[i] = 2 * x[i], i < n: an extra node that changes a graph's topology. */
cudaError_t shk_twice(float *y, const float *x, size_t n, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
