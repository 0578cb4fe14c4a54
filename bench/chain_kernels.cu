/*
 * W-chain kernel: x[i] = fma(x[i] + in[i % n_in], a, b) on 4096 floats,
 * 16 blocks of 256 threads, one element per thread. The chain's first
 * kernel gets `in` (the step input) and its last one `out` (x[0] is the
 * step output); every other kernel gets neither.
 *
 * Napkin math: one launch moves 4096 * 8 B = 32 KiB (read + write of x),
 * which sits in L2 (50 MiB on an H200): about 10 ns of bandwidth at
 * ~3 TB/s. The kernel is therefore pure launch and scheduling latency:
 * about 0.5-1 us of GPU time per node inside a graph and ~4 us of host
 * time per <<<>>> launch. That is exactly what W-chain is
 * meant to expose. With `in`, the first kernel also reads 16 KiB at most
 * (n_in >= 4096 reads its first 4096 floats), still latency bound.
 *
 * fmaf is written out so the host model (chain_model in chain_bench.c,
 * also fmaf, correctly rounded in C11 and on the GPU) gives bit-identical
 * results: no compiler-chosen contraction can differ between the two sides.
 */
#include "cgr/cgr.h"
#include "chain.h"

__global__ void __launch_bounds__(CHAIN_THREADS)
    chain_kernel(float *x, const float *in, size_t n_in, float *out, float a, float b)
{
    /* No-op unless launched with programmatic dependent launch (the PDL modes):
     * then the previous kernel's writes to x are visible after it. Only
     * sm_90 and newer have it; older GPUs never launch programmatically. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    if (in)
        v += in[(size_t)i % n_in];
    v = fmaf(v, a, b);
    x[i] = v;
    if (out && i == 0)
        out[0] = v;
}

extern "C" cudaError_t chain_kernel_launch(float *x, const float *in, size_t n_in, float *out,
                                           int pdl, cudaStream_t s)
{
    if (!pdl) {
        chain_kernel<<<CHAIN_BLOCKS, CHAIN_THREADS, 0, s>>>(x, in, n_in, out, CHAIN_A, CHAIN_B);
        return cudaGetLastError();
    }
    /* Through cgr's public launch helper, as a cgr user would write it. */
    float a = CHAIN_A, b = CHAIN_B;
    void *args[] = {&x, &in, &n_in, &out, &a, &b};
    cgr_launch_cfg cfg = {{CHAIN_BLOCKS, 1, 1}, {CHAIN_THREADS, 1, 1}, 0, 1};
    cgr_status st = cgr_launch_kernel(s, (const void *)chain_kernel, &cfg, args);
    return st == CGR_STATUS_OK ? cudaSuccess : cudaErrorLaunchFailure;
}
