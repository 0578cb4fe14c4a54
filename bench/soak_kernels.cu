/*
 * Soak kernel: one dense layer, y[i,j] = act(b[j] + sum_k x[i,k] * W[k,j]),
 * x[B,D], W[D,D] row-major, one thread per output element, k summed in
 * order with fmaf. act is ReLU or the identity.
 *
 * Napkin math at the soak's largest shape (B = 64, D = 256): 4.2 MFLOP and
 * 256 KiB of W read per layer, which sits in L2 (50 MiB on an H200). That
 * is a few microseconds of GPU time: the soak measures cgr's bookkeeping
 * over a million replays, not the GPU.
 *
 * Deterministic on purpose: each output is one thread's fixed-order chain
 * of fmaf, so a graph replay, an eager run and the host model (soak_bench.c,
 * also fmaf, correctly rounded in C11) agree bit for bit.
 */
#include "soak.h"

__global__ void soak_layer_kernel(float *y, const float *x, const float *w, const float *b, int B,
                                  int D, int relu)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= B * D)
        return;
    int i = t / D, j = t % D;
    float acc = b[j];
    for (int k = 0; k < D; k++)
        acc = fmaf(x[(size_t)i * D + k], w[(size_t)k * D + j], acc);
    y[t] = relu && acc < 0.0f ? 0.0f : acc;
}

extern "C" cudaError_t soak_layer(float *y, const float *x, const float *w, const float *b,
                                  int B, int D, int relu, cudaStream_t s)
{
    int n = B * D;
    soak_layer_kernel<<<(n + 255) / 256, 256, 0, s>>>(y, x, w, b, B, D, relu);
    return cudaGetLastError();
}
