/*
 * Kernels of the dynamic-shape test (the API is in shapes_kernels.h).
 *
 * They are small and plain on purpose: at most 64 rows of 32 x 48 floats,
 * a few microseconds each, far from any bandwidth or FLOP bound. What
 * matters is determinism: one thread per output element (or per column),
 * sums in a fixed order, no atomics, so results are bitwise reproducible
 * and independent of the launch size.
 */
#include "shapes_kernels.h"

__global__ void shk_linear_kernel(float *h, const float *x, const float *W, const float *b,
                                  int rows, int K, int M)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * M)
        return;
    int r = i / M, m = i % M;
    float acc = b[m];
    for (int k = 0; k < K; k++)
        acc = fmaf(x[(size_t)r * K + k], W[(size_t)k * M + m], acc);
    h[i] = acc;
}

__global__ void shk_center_kernel(float *y, const float *h, int rows, int M,
                                  const int64_t *true_rows)
{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= M)
        return;
    int64_t t = *true_rows;
    int T = t < 1 ? 1 : t > rows ? rows : (int)t;
    float sum = 0.0f;
    for (int r = 0; r < T; r++)
        sum += h[(size_t)r * M + m];
    float mean = sum / (float)T;
    for (int r = 0; r < rows; r++)
        y[(size_t)r * M + m] = r < T ? h[(size_t)r * M + m] - mean : 0.0f;
}

__global__ void shk_copy_rows_kernel(float *dst, const float *src, int rows, int total_rows,
                                     int K, float sentinel)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < total_rows * K)
        dst[i] = i / K < rows ? src[i] : sentinel;
}

__global__ void shk_copy_i64_kernel(int64_t *dst, const int64_t *src)
{
    dst[0] = src[0];
}

__global__ void shk_fill_kernel(float *w, size_t n, float v)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        w[i] = v + (float)(i % 7);
}

__global__ void shk_twice_kernel(float *y, const float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i];
}

static unsigned blocks_for(size_t n, unsigned threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

extern "C" cudaError_t shk_linear(float *h, const float *x, const float *W, const float *b,
                                  int rows, int K, int M, cudaStream_t s)
{
    shk_linear_kernel<<<blocks_for((size_t)rows * M, 128), 128, 0, s>>>(h, x, W, b, rows, K, M);
    return cudaGetLastError();
}

extern "C" cudaError_t shk_center(float *y, const float *h, int rows, int M,
                                  const int64_t *true_rows, cudaStream_t s)
{
    shk_center_kernel<<<blocks_for((size_t)M, 64), 64, 0, s>>>(y, h, rows, M, true_rows);
    return cudaGetLastError();
}

extern "C" cudaError_t shk_copy_rows(float *dst, const float *src, int rows, int total_rows,
                                     int K, float sentinel, cudaStream_t s)
{
    shk_copy_rows_kernel<<<blocks_for((size_t)total_rows * K, 256), 256, 0, s>>>(
        dst, src, rows, total_rows, K, sentinel);
    return cudaGetLastError();
}

extern "C" cudaError_t shk_copy_i64(int64_t *dst, const int64_t *src, cudaStream_t s)
{
    shk_copy_i64_kernel<<<1, 1, 0, s>>>(dst, src);
    return cudaGetLastError();
}

extern "C" cudaError_t shk_fill(float *w, size_t n, float v, cudaStream_t s)
{
    /* A fixed grid whatever n is, so every bucket's graph has the same launch shape here. */
    shk_fill_kernel<<<64, 256, 0, s>>>(w, n, v);
    return cudaGetLastError();
}

extern "C" cudaError_t shk_twice(float *y, const float *x, size_t n, cudaStream_t s)
{
    shk_twice_kernel<<<blocks_for(n, 256), 256, 0, s>>>(y, x, n);
    return cudaGetLastError();
}
