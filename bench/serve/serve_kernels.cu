/*
 * W-serve's masked softmax (API in serve_kernels.h).
 *
 * Napkin math: a row of 1000 logits is 4 KB read and 4 KB written, with
 * about 3 flops per element; at most 64 rows (512 KB) per request, so the
 * kernel is bound by latency, not by the H200's bandwidth: a few us, most
 * of it launch, the global reads and the block-wide reductions. One block
 * per row keeps each reduction inside a block (no atomics, no second
 * pass); padded rows exit at once, which is what makes the mask worth
 * having: a request of 33 rows in the 64-row bucket pays for 33 rows here.
 *
 * Up to SM_PER x 256 columns (1024; W-serve has 1000) the row is read
 * once into registers and exp() is taken once per element, and each
 * reduction is a warp butterfly plus one exchange through shared memory
 * (two barriers, not the nine of a shared-memory tree). Wider rows take
 * the same steps column by column from memory.
 *
 * Determinism: each thread combines its columns in increasing order, each
 * warp in a fixed butterfly, and the 8 warp results in warp order, so the
 * same logits always give the same bits, eager or replayed.
 */
#include <math.h>

#include <cgr/cgr.h>

#include "serve_kernels.h"

#define SM_THREADS 256
#define SM_WARPS (SM_THREADS / 32)
#define SM_PER 4 /* columns a thread keeps in registers */

/* The block's max (IS_MAX) or sum of v, the same on every thread, in a fixed order. */
template <bool IS_MAX>
static __device__ float block_reduce(float v, float *buf)
{
    for (int o = 16; o > 0; o /= 2) {
        const float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = IS_MAX ? fmaxf(v, u) : v + u;
    }
    if (threadIdx.x % 32 == 0)
        buf[threadIdx.x / 32] = v;
    __syncthreads();
    float r = buf[0];
#pragma unroll
    for (int w = 1; w < SM_WARPS; w++)
        r = IS_MAX ? fmaxf(r, buf[w]) : r + buf[w];
    __syncthreads(); /* buf is reused by the next reduction */
    return r;
}

__global__ void __launch_bounds__(SM_THREADS)
    serve_softmax_masked_kernel(float *probs, const float *logits, int rows, int cols,
                                const int64_t *true_rows)
{
    __shared__ float buf[SM_WARPS];
    /* PDL exists from sm_90 on; older GPUs never launch programmatically. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* A no-op unless launched with PDL: then it waits for the logits' writer. */
    cudaGridDependencySynchronize();
    /* The next kernel (cgr's output copy) may be scheduled now; it waits for this one's writes. */
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    const int64_t t = *true_rows;
    const int T = t < 1 ? 1 : t > rows ? rows : (int)t;
    const int r = blockIdx.x;
    if (r >= T)
        return; /* a padded row: uniform across the block, so no barrier is skipped by some */
    const float *x = logits + (size_t)r * cols;
    float *y = probs + (size_t)r * cols;
    const int tid = threadIdx.x;

    if (cols <= SM_PER * SM_THREADS) {
        float v[SM_PER];
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < SM_PER; k++) {
            const int c = tid + k * SM_THREADS;
            v[k] = c < cols ? x[c] : -INFINITY;
            m = fmaxf(m, v[k]);
        }
        m = block_reduce<true>(m, buf);
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < SM_PER; k++) {
            v[k] = tid + k * SM_THREADS < cols ? expf(v[k] - m) : 0.0f;
            s += v[k];
        }
        const float inv = 1.0f / block_reduce<false>(s, buf);
#pragma unroll
        for (int k = 0; k < SM_PER; k++) {
            const int c = tid + k * SM_THREADS;
            if (c < cols)
                y[c] = v[k] * inv;
        }
        return;
    }

    float m = -INFINITY;
    for (int c = tid; c < cols; c += SM_THREADS)
        m = fmaxf(m, x[c]);
    m = block_reduce<true>(m, buf);
    float s = 0.0f;
    for (int c = tid; c < cols; c += SM_THREADS)
        s += expf(x[c] - m);
    const float inv = 1.0f / block_reduce<false>(s, buf);
    for (int c = tid; c < cols; c += SM_THREADS)
        y[c] = expf(x[c] - m) * inv;
}

extern "C" cudaError_t serve_softmax_masked(float *probs, const float *logits, int rows, int cols,
                                            const int64_t *true_rows, cudaStream_t s, int pdl)
{
    if (!probs || !logits || !true_rows || rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    void *args[] = {&probs, &logits, &rows, &cols, &true_rows};
    cgr_launch_cfg cfg;
    cfg.grid[0] = (unsigned)rows, cfg.grid[1] = 1, cfg.grid[2] = 1;
    cfg.block[0] = SM_THREADS, cfg.block[1] = 1, cfg.block[2] = 1;
    cfg.shared_bytes = 0;
    cfg.pdl = pdl;
    /* cgr_last_error() names the CUDA error when this fails. */
    return cgr_launch_kernel(s, (const void *)serve_softmax_masked_kernel, &cfg, args) ==
                   CGR_STATUS_OK
               ? cudaSuccess
               : cudaErrorLaunchFailure;
}
