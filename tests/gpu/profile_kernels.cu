#include "profile_kernels.h"

__global__ void pk_tiny_kernel(float *y, const float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 1.0625f * x[i] + 0.25f;
}

__global__ void pk_spin_kernel(float *y, const float *x, size_t n, long long cycles)
{
    /* Every thread spins, so the block's time is the spin's, not a lucky warp's. */
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = 2.0f * x[i] + 1.0f;
}

extern "C" cudaError_t pk_tiny(float *y, const float *x, size_t n, cudaStream_t s)
{
    pk_tiny_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(y, x, n);
    return cudaGetLastError();
}

extern "C" cudaError_t pk_spin(float *y, const float *x, size_t n, long long cycles,
                               cudaStream_t s)
{
    pk_spin_kernel<<<1, 256, 0, s>>>(y, x, n, cycles);
    return cudaGetLastError();
}
