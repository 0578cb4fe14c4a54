/*
 * W-ddp's one kernel of its own: x[i] *= s over the flat gradient buffer,
 * the "then scale by 1/world" after NCCL's sum.
 *
 * Napkin math for W-mlp (5,223,424 floats): 20.9 MB read + 20.9 MB
 * written; at the H200's ~3.8 TB/s that is ~11 us, about a quarter of the
 * fused AdamW pass that follows. float4 accesses (the flat buffers are
 * 16-byte aligned and a multiple of 4 floats long, mlp.h), a grid-stride
 * loop over at most 1024 blocks.
 *
 * Exactness: for a power-of-two world (2 here) the scale is exact, so the
 * averaged gradient is the rank sum halved, bit for bit.
 *
 * Launched through cgr_launch_kernel, optionally with programmatic
 * dependent launch: the kernel waits for the previous grid (the
 * all-reduce) before it touches memory, so the launch is correct either
 * way.
 */
#include <stdint.h>

#include <cgr/cgr.h>

#include "ddp.h"

#define SCALE_THREADS 256

static __global__ void __launch_bounds__(SCALE_THREADS)
    scale_kernel(float *__restrict__ x, size_t n, float s)
{
    /* sm_90 and newer only: older GPUs never launch programmatically. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 *x4 = reinterpret_cast<float4 *>(x);
    const size_t n4 = n / 4;
    for (size_t i = i0; i < n4; i += stride) {
        float4 v = x4[i];
        v.x *= s;
        v.y *= s;
        v.z *= s;
        v.w *= s;
        x4[i] = v;
    }
    for (size_t i = 4 * n4 + i0; i < n; i += stride)
        x[i] *= s;
}

extern "C" cgr_status ddp_scale(float *x, size_t n, float s, cudaStream_t stream, int pdl)
{
    if (n == 0)
        return CGR_STATUS_OK;
    if (((uintptr_t)x & 15u) != 0)
        return CGR_STATUS_INVALID_ARGUMENT;
    /*
     * At most 1024 blocks: about 4 waves of 2 blocks per SM on an H200's
     * 132 SMs, enough to saturate memory; a constant, so no device query
     * runs while the step is captured.
     */
    size_t want = (n / 4 + SCALE_THREADS - 1) / SCALE_THREADS;
    size_t cap = 1024;
    unsigned blocks = (unsigned)(want < 1 ? 1 : want > cap ? cap : want);
    void *args[] = {&x, &n, &s};
    cgr_launch_cfg cfg = {{blocks, 1, 1}, {SCALE_THREADS, 1, 1}, 0, pdl};
    return cgr_launch_kernel(stream, (const void *)scale_kernel, &cfg, args);
}
