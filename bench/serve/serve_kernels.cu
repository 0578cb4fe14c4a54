/*
 * W-serve's masked softmax (API in serve_kernels.h).
 *
 * Napkin math: a row of 1000 logits is 4 KB read and 4 KB written, with
 * about 3 flops per element; at most 64 rows (512 KB) per request, so the
 * kernel is bound by latency, not by the H200's bandwidth: a few us, most
 * of it launch and the three block-wide reductions' barriers. One block
 * per row keeps each reduction inside a block (no atomics, no second pass);
 * padded rows exit at once, which is what makes the mask worth having: a
 * request of 33 rows in the 64-row bucket pays for 33 rows here.
 *
 * Determinism: each thread walks its columns in increasing order, and the
 * 256 partial results are combined by a fixed shared-memory tree, so the
 * same logits always give the same bits, eager or replayed.
 */
#include <math.h>

#include <cgr/cgr.h>

#include "serve_kernels.h"

#define SERVE_SOFTMAX_THREADS 256

/* Tree reduction over the block's 256 values in a fixed order; every thread gets the result. */
template <bool IS_MAX>
static __device__ float block_reduce(float v, float *buf)
{
    const int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int half = SERVE_SOFTMAX_THREADS / 2; half > 0; half /= 2) {
        if (t < half)
            buf[t] = IS_MAX ? fmaxf(buf[t], buf[t + half]) : buf[t] + buf[t + half];
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads(); /* buf is reused by the next reduction */
    return r;
}

__global__ void __launch_bounds__(SERVE_SOFTMAX_THREADS)
    serve_softmax_masked_kernel(float *probs, const float *logits, int rows, int cols,
                                const int64_t *true_rows)
{
    __shared__ float buf[SERVE_SOFTMAX_THREADS];
    /* A no-op unless launched with PDL: then it waits for the logits' writer. */
    cudaGridDependencySynchronize();
    const int64_t t = *true_rows;
    const int T = t < 1 ? 1 : t > rows ? rows : (int)t;
    const int r = blockIdx.x;
    if (r >= T)
        return; /* a padded row: uniform across the block, so no barrier is skipped by some */
    const float *x = logits + (size_t)r * cols;
    float *y = probs + (size_t)r * cols;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += SERVE_SOFTMAX_THREADS)
        m = fmaxf(m, x[c]);
    m = block_reduce<true>(m, buf);

    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += SERVE_SOFTMAX_THREADS)
        s += expf(x[c] - m);
    s = block_reduce<false>(s, buf);

    const float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += SERVE_SOFTMAX_THREADS)
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
    cfg.block[0] = SERVE_SOFTMAX_THREADS, cfg.block[1] = 1, cfg.block[2] = 1;
    cfg.shared_bytes = 0;
    cfg.pdl = pdl;
    /* cgr_last_error() names the CUDA error when this fails. */
    return cgr_launch_kernel(s, (const void *)serve_softmax_masked_kernel, &cfg, args) ==
                   CGR_STATUS_OK
               ? cudaSuccess
               : cudaErrorLaunchFailure;
}
