/*
 * Code written without streams, as much existing CUDA code is: a launch
 * with <<<grid, block>>> and a cudaMemsetAsync on stream 0. tests/meson.build
 * compiles this file twice: with nvcc --default-stream per-thread, where
 * stream 0 is the calling thread's default stream (SK_NAME = sk_per_thread),
 * and without, where it is the legacy default stream (SK_NAME = sk_legacy).
 */
#include "stream_kernels.h"

namespace {

__global__ void affine_kernel(float *y, const float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

} // namespace

extern "C" cudaError_t SK_NAME(float *y, const float *x, float *tmp, size_t n)
{
    /* tmp = 0, then y = 2 x + 1 + tmp[0]: both must run, in order, in every replay. */
    cudaError_t e = cudaMemsetAsync(tmp, 0, n * sizeof(float));
    if (e != cudaSuccess)
        return e;
    affine_kernel<<<(unsigned)((n + 255) / 256), 256>>>(y, x, n);
    return cudaGetLastError();
}
