/*
 * W-mlp kernels: everything of one fp32 training step except the
 * large-batch GEMMs (cuBLAS). The API and its conventions are in
 * mlp_kernels.h.
 *
 * At B=1 the step is 17 kernels: 5 fused Linear forwards, the loss, 4
 * data-gradient GEMVs, 5 weight gradients, and one AdamW pass over every
 * parameter, the longest of them (docs/benchmarks.md has the step's
 * figures). Memory traffic, not FLOPs, bounds every kernel here: at B <= 8
 * a Linear layer does 2*B FLOPs per 4-byte weight it touches.
 *
 * Determinism: no kernel uses floating-point atomics and every sum has a
 * fixed order that does not depend on scheduling, so a step is bitwise
 * reproducible. Where a sum is split across threads or blocks, the partial
 * sums are combined in index order (shared memory, then distributed shared
 * memory within a thread block cluster).
 *
 * PDL: every kernel begins with pdl_begin(): cudaGridDependencySynchronize()
 * waits until the previous grid in the stream has completed and its writes
 * are visible (PTX griddepcontrol.wait; a no-op for a normal launch), and
 * only then touches global memory, so there are no read-after-write or
 * write-after-read hazards whichever way a kernel is launched. It then calls
 * cudaTriggerProgrammaticLaunchCompletion() so that the next PDL kernel can
 * be scheduled as soon as every block of this one has started, instead of
 * when this one exits: the next kernel's launch latency then hides behind
 * this kernel's work. The trigger carries no memory guarantee and needs
 * none, because the next kernel waits for full completion anyway.
 * (mlp_linear_fwd with w_early is the one exception: it loads the weights,
 * which nothing writes, before the wait.)
 *
 * So no kernel here takes a `const T *__restrict__` parameter. const plus
 * restrict promise the compiler that the memory does not change while the
 * kernel runs; it may then read it through the non-coherent path and move
 * those loads ahead of cudaGridDependencySynchronize(), before the previous
 * kernel has written it. A Linear kernel whose x is const __restrict__
 * gives W-serve outputs off by up to 3 % from the float64 reference, and
 * graph and eager runs that differ; without the qualifier they are right.
 * The PTX of this file has no ld.global.nc, and the unit test pdl_restrict
 * (tests/unit/test_pdl_restrict.c) keeps it so.
 */
#include <math.h>
#include <stdint.h>

#include <cooperative_groups.h>

#include <cgr/cgr_philox.h>

#include "mlp_kernels.h"

/*
 * The data-gradient GEMV needs thread block clusters, and PDL needs
 * griddepcontrol: both sm_90 and newer. The file is still compiled for every
 * architecture of the build, so that a build for older GPUs links: there the
 * cluster kernel traps and PDL waits are left out, and mlp_device_ok()
 * (mlp.h) keeps the W-mlp step off such devices.
 */
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define MLP_SM90 1
#else
#define MLP_SM90 0
#endif

namespace cg = cooperative_groups;

/* ---- shared helpers --------------------------------------------------------- */

static __device__ __forceinline__ void pdl_begin(void)
{
#if MLP_SM90
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

/*
 * One launch path for both modes, so that pdl=0 and pdl=1 run the very same
 * kernel with the same grid: only the attribute differs. It goes through
 * cgr_launch_kernel(), cgr's helper for programmatic dependent launch. The
 * arguments are first converted to the kernel's exact parameter types,
 * because the helper takes their addresses. A failure comes back as
 * cudaErrorLaunchFailure, with cgr_last_error() naming the CUDA error.
 */
template <typename... KArgs>
static cudaError_t launch_exact(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s,
                                int pdl, KArgs... args)
{
    void *argv[] = {(void *)&args..., nullptr};
    cgr_launch_cfg cfg;
    cfg.grid[0] = grid.x, cfg.grid[1] = grid.y, cfg.grid[2] = grid.z;
    cfg.block[0] = block.x, cfg.block[1] = block.y, cfg.block[2] = block.z;
    cfg.shared_bytes = 0;
    cfg.pdl = pdl;
    const cgr_status st = cgr_launch_kernel(s, (const void *)kernel, &cfg, argv);
    return st == CGR_STATUS_OK ? cudaSuccess : cudaErrorLaunchFailure;
}

template <typename... KArgs, typename... Args>
static cudaError_t launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s,
                          int pdl, Args... args)
{
    return launch_exact<KArgs...>(kernel, grid, block, s, pdl, static_cast<KArgs>(args)...);
}

static bool aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

static unsigned grid_for(size_t items, unsigned threads, unsigned max_blocks)
{
    size_t b = (items + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return b > max_blocks ? max_blocks : (unsigned)b;
}

/* Four consecutive floats row[c..c+3]; zeros past n. VEC: one 16-byte load. */
template <bool VEC>
static __device__ __forceinline__ float4 load4(const float *row, int c, int n)
{
    if (VEC)
        return c < n ? *reinterpret_cast<const float4 *>(row + c) : make_float4(0.f, 0.f, 0.f, 0.f);
    float4 v;
    v.x = c < n ? row[c] : 0.f;
    v.y = c + 1 < n ? row[c + 1] : 0.f;
    v.z = c + 2 < n ? row[c + 2] : 0.f;
    v.w = c + 3 < n ? row[c + 3] : 0.f;
    return v;
}

template <bool VEC>
static __device__ __forceinline__ void store4(float *__restrict__ row, int c, int n, float4 v)
{
    if (VEC) {
        if (c < n)
            *reinterpret_cast<float4 *>(row + c) = v;
        return;
    }
    if (c < n)
        row[c] = v.x;
    if (c + 1 < n)
        row[c + 1] = v.y;
    if (c + 2 < n)
        row[c + 2] = v.z;
    if (c + 3 < n)
        row[c + 3] = v.w;
}

/*
 * Butterfly reductions: every lane ends with the same value, and the order
 * of the additions is fixed, so the result is deterministic.
 */
static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

static __device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* ReLU that keeps NaN (a NaN activation should not be silently zeroed). */
static __device__ __forceinline__ float relu(float x)
{
    return x < 0.f ? 0.f : x;
}

/*
 * Dropout's parameters as a kernel argument: the Philox state stays in
 * device memory (a replay must see the offset the graph advanced), the
 * rest is baked in. drop_if(u) compares 24-bit uniforms, so p is
 * effectively rounded to a multiple of 2^-24.
 */
struct dropout_arg {
    const cgr_philox_state *state; /* NULL: no dropout */
    uint64_t sub;
    float p, scale;
};

static dropout_arg dropout_of(const mlp_dropout *dr)
{
    dropout_arg a = {nullptr, 0, 0.f, 1.f};
    if (dr) {
        a.state = dr->state;
        a.sub = dr->sub;
        a.p = dr->p;
        a.scale = 1.f / (1.f - dr->p);
    }
    return a;
}

static bool dropout_ok(const mlp_dropout *dr)
{
    return !dr || (dr->state && dr->p > 0.f && dr->p < 1.f);
}

/* The four Philox words of elements 4k .. 4k+3 of a layer. */
static __device__ __forceinline__ cgr_philox4 dropout_bits(const dropout_arg &d, size_t k)
{
    return cgr_philox4x32(d.state->seed, d.state->offset + d.sub + (uint64_t)k, 0);
}

static __device__ __forceinline__ float dropout_apply(float v, uint32_t bits, const dropout_arg &d)
{
    return cgr_philox_uniform(bits) < d.p ? 0.f : v * d.scale;
}

#define EW_THREADS 256
#define EW_MAX_BLOCKS 4096

/* ---- bias (+ ReLU) forward ---------------------------------------------------
 * y[r][c] = relu(y[r][c] + b[c]) in place, after a cuBLAS GEMM wrote y.
 * Bytes: 8*B*cols + 4*cols (B=1, cols=1024: 12 KiB); FLOPs: 1-2 per element.
 * Bound: latency (one wave, ~1 us inside a graph) up to B ~ 64; at B=256
 * 2 MiB, ~1 us of HBM/L2 bandwidth on top.
 */
template <bool RELU, bool DROP>
static __global__ void __launch_bounds__(EW_THREADS)
    bias_act_kernel(float *__restrict__ y, const float *b, int rows, int cols, int vec,
                    dropout_arg dr)
{
    pdl_begin();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (vec) {
        /* Element 4i..4i+3 here are the 4 words of Philox block i. */
        const size_t c4n = (size_t)cols / 4;
        const size_t n4 = (size_t)rows * c4n;
        float4 *y4 = reinterpret_cast<float4 *>(y);
        const float4 *b4 = reinterpret_cast<const float4 *>(b);
        for (size_t i = i0; i < n4; i += stride) {
            float4 v = y4[i];
            const float4 bb = b4[i % c4n];
            v.x += bb.x;
            v.y += bb.y;
            v.z += bb.z;
            v.w += bb.w;
            if (RELU) {
                v.x = relu(v.x);
                v.y = relu(v.y);
                v.z = relu(v.z);
                v.w = relu(v.w);
            }
            if (DROP) {
                const cgr_philox4 r = dropout_bits(dr, i);
                v.x = dropout_apply(v.x, r.v[0], dr);
                v.y = dropout_apply(v.y, r.v[1], dr);
                v.z = dropout_apply(v.z, r.v[2], dr);
                v.w = dropout_apply(v.w, r.v[3], dr);
            }
            y4[i] = v;
        }
    } else {
        const size_t n = (size_t)rows * cols;
        for (size_t i = i0; i < n; i += stride) {
            float v = y[i] + b[i % (size_t)cols];
            v = RELU ? relu(v) : v;
            if (DROP)
                v = dropout_apply(v, dropout_bits(dr, i / 4).v[i % 4], dr);
            y[i] = v;
        }
    }
}

template <bool RELU, bool DROP>
static cudaError_t bias_act(float *y, const float *b, int rows, int cols, const mlp_dropout *dr,
                            cudaStream_t s, int pdl)
{
    if (!y || !b || rows < 1 || cols < 1 || !dropout_ok(dr) || (DROP && !dr))
        return cudaErrorInvalidValue;
    const int vec = cols % 4 == 0 && aligned16(y) && aligned16(b);
    const size_t items = (size_t)rows * cols / (vec ? 4 : 1);
    return launch(bias_act_kernel<RELU, DROP>, dim3(grid_for(items, EW_THREADS, EW_MAX_BLOCKS)),
                  dim3(EW_THREADS), s, pdl, y, b, rows, cols, vec, dropout_of(dr));
}

extern "C" cudaError_t mlp_bias_relu_fwd(float *y, const float *b, int rows, int cols,
                                         cudaStream_t s, int pdl)
{
    return bias_act<true, false>(y, b, rows, cols, nullptr, s, pdl);
}

extern "C" cudaError_t mlp_bias_fwd(float *y, const float *b, int rows, int cols, cudaStream_t s,
                                    int pdl)
{
    return bias_act<false, false>(y, b, rows, cols, nullptr, s, pdl);
}

extern "C" cudaError_t mlp_bias_relu_dropout_fwd(float *y, const float *b, int rows, int cols,
                                                 const mlp_dropout *dr, cudaStream_t s, int pdl)
{
    if (!dr)
        return cudaErrorInvalidValue;
    return bias_act<true, true>(y, b, rows, cols, dr, s, pdl);
}

/* ---- ReLU backward -----------------------------------------------------------
 * dy = y > 0 ? scale * dy : 0 in place; only on the large-batch path (at
 * small B mlp_gemv_bwd applies the mask as it writes dx).
 * Bytes: 12*B*cols (B=256, cols=1024: 3 MiB, ~1 us); FLOPs: none.
 * Bound: HBM/L2 bandwidth at large B, latency below.
 */
static __global__ void __launch_bounds__(EW_THREADS)
    relu_bwd_kernel(float *__restrict__ dy, const float *y, float scale, size_t n,
                    int vec)
{
    pdl_begin();
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (vec) {
        float4 *d4 = reinterpret_cast<float4 *>(dy);
        const float4 *y4 = reinterpret_cast<const float4 *>(y);
        for (size_t i = i0; i < n / 4; i += stride) {
            float4 d = d4[i];
            const float4 a = y4[i];
            d.x = a.x > 0.f ? scale * d.x : 0.f;
            d.y = a.y > 0.f ? scale * d.y : 0.f;
            d.z = a.z > 0.f ? scale * d.z : 0.f;
            d.w = a.w > 0.f ? scale * d.w : 0.f;
            d4[i] = d;
        }
    } else {
        for (size_t i = i0; i < n; i += stride)
            dy[i] = y[i] > 0.f ? scale * dy[i] : 0.f;
    }
}

extern "C" cudaError_t mlp_relu_bwd(float *dy, const float *y, float scale, int rows, int cols,
                                    cudaStream_t s, int pdl)
{
    if (!dy || !y || rows < 1 || cols < 1 || !(scale > 0.f) || !isfinite(scale))
        return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * cols;
    const int vec = n % 4 == 0 && aligned16(dy) && aligned16(y);
    return launch(relu_bwd_kernel, dim3(grid_for(vec ? n / 4 : n, EW_THREADS, EW_MAX_BLOCKS)),
                  dim3(EW_THREADS), s, pdl, dy, y, scale, n, vec);
}

/* ---- softmax cross-entropy, forward and backward --------------------------------
 * One block of 256 threads per row, three passes over the row (max; sum of
 * exp; dlogits), each followed by a block reduction: a warp butterfly, then
 * warp 0 combines the 8 warp results in warp order, so the sums have a
 * fixed order and the result is deterministic. The last Linear's bias is
 * added as the row is read. At B = 1 the block also writes the mean, so
 * the loss costs one launch; above that a one-warp kernel averages the
 * per-row losses (lane i takes rows i, i+32, ..., then a butterfly).
 * Bytes: 4*B*C read (the 2nd and 3rd pass hit L1) + 4*B*C written
 * (B=1, C=1000: 8 KB). FLOPs: ~2 expf per element.
 * Bound: latency. A block spreads a row over 256 threads, so each pass is
 * one round of loads (one float4 per thread at C = 1000), not the chain of
 * 8 that one warp per row needed; rows run on separate SMs.
 *
 * Padded batches (true_batch != NULL; cgr's dynamic dims): the launch is
 * shaped for B rows (the bucket), and T = *true_batch, read on the device
 * after pdl_begin() (cgr's staging writes it earlier in the graph), says
 * how many of them are real. Rows >= T get row_loss 0 and a zero dlogits
 * row and read nothing else; real rows divide by T; the mean kernel
 * averages rows 0..T-1. Every gradient upstream of a zero dlogits row is
 * zero (mlp.c explains why), so the step's parameter gradients are those
 * of the T real rows alone. The mean kernel always runs then, even at
 * B = 1, so every bucket's graph has the same nodes (an update in place
 * needs the same topology). With true_batch == NULL nothing changes: the
 * same instructions run on the same values.
 */
#define SX_THREADS 256
#define SX_WARPS (SX_THREADS / 32)

/* Mean of vals[0..n) by one full warp, in the fixed order described above. */
static __device__ __forceinline__ float warp_mean(const float *vals, int n, int lane)
{
    float acc = 0.f;
    for (int i = lane; i < n; i += 32)
        acc += vals[i];
    return warp_sum(acc) / (float)n;
}

/* Block-wide sum or max, the same value in every thread; sh holds SX_WARPS + 1. */
template <bool MAX>
static __device__ __forceinline__ float block_reduce(float v, float *sh)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = MAX ? warp_max(v) : warp_sum(v);
    if (lane == 0)
        sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float r = lane < SX_WARPS ? sh[lane] : (MAX ? -INFINITY : 0.f);
        r = MAX ? warp_max(r) : warp_sum(r);
        if (lane == 0)
            sh[SX_WARPS] = r;
    }
    __syncthreads();
    const float r = sh[SX_WARPS];
    __syncthreads(); /* sh is reused by the next reduction */
    return r;
}

/* Logit c of a row (float4 c: logits 4c..4c+3), with the bias added when BIAS. */
template <bool BIAS>
static __device__ __forceinline__ float4 logit4(const float *x,
                                                const float *bias, int c)
{
    float4 v = reinterpret_cast<const float4 *>(x)[c];
    if (BIAS) {
        const float4 bb = reinterpret_cast<const float4 *>(bias)[c];
        v.x += bb.x, v.y += bb.y, v.z += bb.z, v.w += bb.w;
    }
    return v;
}

template <bool BIAS>
static __device__ __forceinline__ float logit1(const float *x,
                                               const float *bias, int c)
{
    return x[c] + (BIAS ? bias[c] : 0.f);
}

/*
 * The real rows of a padded batch of B: *true_batch clamped to [1, B], so
 * that a corrupt value can neither divide by zero nor read past the batch;
 * B when true_batch is NULL.
 */
static __device__ __forceinline__ int rows_real(const int64_t *true_batch, int B)
{
    if (!true_batch)
        return B;
    const int64_t t = *true_batch;
    return t < 1 ? 1 : t > B ? B : (int)t;
}

template <bool VEC, bool BIAS>
static __global__ void __launch_bounds__(SX_THREADS)
    softmax_xent_kernel(const float *logits, const float *bias,
                        const int *labels, const int64_t *true_batch,
                        float *__restrict__ row_loss, float *__restrict__ loss,
                        float *__restrict__ dlogits, int B, int C)
{
    __shared__ float sh[SX_WARPS + 1];
    pdl_begin();
    const int r = blockIdx.x;
    const int T = rows_real(true_batch, B);
    float *dx = dlogits + (size_t)r * C;
    const int n = VEC ? C / 4 : C;
    if (r >= T) {
        /* A padded row: no loss, no gradient (the whole block leaves, so no
         * barrier below is left waiting). */
        for (int c = threadIdx.x; c < n; c += SX_THREADS) {
            if (VEC)
                reinterpret_cast<float4 *>(dx)[c] = make_float4(0.f, 0.f, 0.f, 0.f);
            else
                dx[c] = 0.f;
        }
        if (threadIdx.x == 0)
            row_loss[r] = 0.f;
        return;
    }
    const float *x = logits + (size_t)r * C;
    const int label = labels[r];
    const bool ok = label >= 0 && label < C;
    const float fb = (float)T;

    float mx = -INFINITY;
    for (int c = threadIdx.x; c < n; c += SX_THREADS) {
        if (VEC) {
            const float4 v = logit4<BIAS>(x, bias, c);
            mx = fmaxf(mx, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        } else {
            mx = fmaxf(mx, logit1<BIAS>(x, bias, c));
        }
    }
    mx = block_reduce<true>(mx, sh);

    float sum = 0.f;
    for (int c = threadIdx.x; c < n; c += SX_THREADS) {
        if (VEC) {
            const float4 v = logit4<BIAS>(x, bias, c);
            sum += expf(v.x - mx) + expf(v.y - mx) + expf(v.z - mx) + expf(v.w - mx);
        } else {
            sum += expf(logit1<BIAS>(x, bias, c) - mx);
        }
    }
    sum = block_reduce<false>(sum, sh);

    /* (softmax - onehot) / B; a bad label's row gets no gradient. */
    for (int c = threadIdx.x; c < n; c += SX_THREADS) {
        if (VEC) {
            const float4 v = logit4<BIAS>(x, bias, c);
            float4 d;
            d.x = (expf(v.x - mx) / sum - (4 * c + 0 == label ? 1.f : 0.f)) / fb;
            d.y = (expf(v.y - mx) / sum - (4 * c + 1 == label ? 1.f : 0.f)) / fb;
            d.z = (expf(v.z - mx) / sum - (4 * c + 2 == label ? 1.f : 0.f)) / fb;
            d.w = (expf(v.w - mx) / sum - (4 * c + 3 == label ? 1.f : 0.f)) / fb;
            reinterpret_cast<float4 *>(dx)[c] = ok ? d : make_float4(0.f, 0.f, 0.f, 0.f);
        } else {
            const float v = logit1<BIAS>(x, bias, c);
            const float d = (expf(v - mx) / sum - (c == label ? 1.f : 0.f)) / fb;
            dx[c] = ok ? d : 0.f;
        }
    }

    if (threadIdx.x == 0) {
        /* -log softmax[label] = log(sum) - (x[label] - max) */
        const float xl = ok ? logit1<BIAS>(x, bias, label) : 0.f;
        const float rl = ok ? logf(sum) - (xl - mx) : __int_as_float(0x7fc00000);
        row_loss[r] = rl;
        if (B == 1 && !true_batch)
            *loss = rl; /* the mean of one row, as warp_mean would give it */
    }
}

/* *out = mean of vals[0..n), or of its first *true_batch values (clamped as above). */
static __global__ void __launch_bounds__(32)
    mean_kernel(const float *vals, float *__restrict__ out, int n,
                const int64_t *true_batch)
{
    pdl_begin();
    const float m = warp_mean(vals, rows_real(true_batch, n), (int)threadIdx.x);
    if (threadIdx.x == 0)
        *out = m;
}

extern "C" cudaError_t mlp_softmax_xent_masked(const float *logits, const float *bias,
                                               const int *labels, const int64_t *true_batch,
                                               float *row_loss, float *loss, float *dlogits, int B,
                                               int C, cudaStream_t s, int pdl)
{
    if (!logits || !labels || !row_loss || !loss || !dlogits || B < 1 || C < 1 ||
        logits == dlogits)
        return cudaErrorInvalidValue;
    const bool vec = C % 4 == 0 && aligned16(logits) && aligned16(dlogits) &&
                     (!bias || aligned16(bias));
    void (*k)(const float *, const float *, const int *, const int64_t *, float *, float *,
              float *, int, int) =
        vec ? (bias ? softmax_xent_kernel<true, true> : softmax_xent_kernel<true, false>)
            : (bias ? softmax_xent_kernel<false, true> : softmax_xent_kernel<false, false>);
    cudaError_t e = launch(k, dim3((unsigned)B), dim3(SX_THREADS), s, pdl, logits, bias, labels,
                           true_batch, row_loss, loss, dlogits, B, C);
    if (e != cudaSuccess || (B == 1 && !true_batch))
        return e;
    return launch(mean_kernel, dim3(1), dim3(32), s, pdl, (const float *)row_loss, loss, B,
                  true_batch);
}

/* ---- AdamW --------------------------------------------------------------------
 * One grid-stride pass over the flat parameter buffer, float4 loads and
 * stores. Bytes: 28 per parameter (read p, g, m, v; write p, m, v): W-mlp's
 * 5.2 M parameters move 146 MB. FLOPs: ~15 per parameter (a sqrt and a
 * divide). Bound: HBM bandwidth: ~38 us at ~3.8 TB/s on an H200.
 *
 * g, m and v are loaded and stored with the streaming (evict-first) hint:
 * the next step does not read them until its own AdamW, while p is read by
 * the very next forward pass, so it is the one worth keeping in L2.
 *
 * The step count: every thread reads *step (the number of steps already
 * taken) and uses t = *step + 1. Incrementing *step in this kernel would
 * race: a block that starts late could read the new value. Hence the
 * separate one-thread mlp_adamw_step_count_inc(), launched right after.
 * It costs one more (tiny) node per step, ~0.5 us with PDL; the increment
 * could also be folded into a kernel that runs before AdamW in the step,
 * but that would tie unrelated kernels together for half a microsecond.
 * The count is an int: exact far beyond any run length, and its float
 * conversion is exact up to 2^24 steps.
 */
#define ADAMW_THREADS 256
#define ADAMW_MAX_BLOCKS 8192

struct adamw_hp {
    float decay;     /* 1 - lr * wd */
    float b1, omb1;  /* beta1, 1 - beta1 */
    float b2, omb2;  /* beta2, 1 - beta2 */
    float step_size; /* lr / (1 - beta1^t) */
    float bc2_sqrt;  /* sqrt(1 - beta2^t) */
    float eps;
};

static __device__ __forceinline__ float adamw_elem(float p, float g, float *m, float *v,
                                                   const adamw_hp &h)
{
    const float mm = h.b1 * *m + h.omb1 * g;
    const float vv = h.b2 * *v + h.omb2 * (g * g);
    *m = mm;
    *v = vv;
    p = p * h.decay;
    /* PyTorch's form: denom = sqrt(v) / sqrt(1 - b2^t) + eps. */
    return p - h.step_size * (mm / (sqrtf(vv) / h.bc2_sqrt + h.eps));
}

template <bool VEC>
static __global__ void __launch_bounds__(ADAMW_THREADS)
    adamw_kernel(float *__restrict__ p, const float *g, float *__restrict__ m,
                 float *__restrict__ v, size_t n, const int *step, float lr,
                 float beta1, float beta2, float eps, float wd)
{
    pdl_begin();
    const float t = (float)(*step + 1);
    adamw_hp h;
    h.decay = 1.f - lr * wd;
    h.b1 = beta1;
    h.omb1 = 1.f - beta1;
    h.b2 = beta2;
    h.omb2 = 1.f - beta2;
    h.step_size = lr / (1.f - powf(beta1, t));
    h.bc2_sqrt = sqrtf(1.f - powf(beta2, t));
    h.eps = eps;

    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t i0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t tail = 0;
    if (VEC) {
        const size_t n4 = n / 4;
        float4 *p4 = reinterpret_cast<float4 *>(p);
        const float4 *g4 = reinterpret_cast<const float4 *>(g);
        float4 *m4 = reinterpret_cast<float4 *>(m);
        float4 *v4 = reinterpret_cast<float4 *>(v);
        for (size_t i = i0; i < n4; i += stride) {
            float4 pp = p4[i];
            const float4 gg = __ldcs(g4 + i);
            float4 mm = __ldcs(m4 + i);
            float4 vv = __ldcs(v4 + i);
            pp.x = adamw_elem(pp.x, gg.x, &mm.x, &vv.x, h);
            pp.y = adamw_elem(pp.y, gg.y, &mm.y, &vv.y, h);
            pp.z = adamw_elem(pp.z, gg.z, &mm.z, &vv.z, h);
            pp.w = adamw_elem(pp.w, gg.w, &mm.w, &vv.w, h);
            p4[i] = pp;
            __stcs(m4 + i, mm);
            __stcs(v4 + i, vv);
        }
        tail = n4 * 4;
    }
    for (size_t i = tail + i0; i < n; i += stride) {
        float mm = m[i], vv = v[i];
        p[i] = adamw_elem(p[i], g[i], &mm, &vv, h);
        m[i] = mm;
        v[i] = vv;
    }
}

extern "C" cudaError_t mlp_adamw_fused(float *params, const float *grads, float *m, float *v,
                                       size_t n, const int *step, float lr, float beta1,
                                       float beta2, float eps, float weight_decay, cudaStream_t s,
                                       int pdl)
{
    if (!params || !grads || !m || !v || !step || n == 0)
        return cudaErrorInvalidValue;
    const bool vec = aligned16(params) && aligned16(grads) && aligned16(m) && aligned16(v);
    const unsigned blocks = grid_for(vec ? (n + 3) / 4 : n, ADAMW_THREADS, ADAMW_MAX_BLOCKS);
    if (vec)
        return launch(adamw_kernel<true>, dim3(blocks), dim3(ADAMW_THREADS), s, pdl, params, grads,
                      m, v, n, step, lr, beta1, beta2, eps, weight_decay);
    return launch(adamw_kernel<false>, dim3(blocks), dim3(ADAMW_THREADS), s, pdl, params, grads, m,
                  v, n, step, lr, beta1, beta2, eps, weight_decay);
}

static __global__ void __launch_bounds__(32) step_inc_kernel(int *step)
{
    pdl_begin();
    if (threadIdx.x == 0)
        *step += 1;
}

extern "C" cudaError_t mlp_adamw_step_count_inc(int *step, cudaStream_t s, int pdl)
{
    if (!step)
        return cudaErrorInvalidValue;
    return launch(step_inc_kernel, dim3(1), dim3(32), s, pdl, step);
}

/* ---- data gradient at small batch: dx = dy W ------------------------------------
 * dx[b][i] = sum_o dy[b][o] W[o][i], B <= 8. cuBLAS would run this as an
 * (N,N) GEMM, which picks a slow kernel at small B (9-10 us for 1024x1024).
 * Bytes: 4*out*in of W read once (4 MiB) + 4*B*(out+in); FLOPs 2*B*out*in.
 * Bound: HBM bandwidth, 4 MiB / ~3.5 TB/s = 1.2 us, plus ~1 us of launch
 * and reduction latency: ~2-3 us (less when W is still in L2 from the
 * forward pass).
 *
 * Work split: a thread block cluster of 8 blocks owns a tile of 64 columns;
 * the 8 blocks split the `out` rows into 8 contiguous ranges. Inside a
 * block, 16 threads across (one float4 of columns each, so a row's 256 bytes
 * are one coalesced load) by 16 threads down (rows ty, ty+16, ...); each
 * thread issues 8 rows' float4 loads before using them and keeps B x 4
 * accumulators. For 1024x1024 that is 8 x 16 B per thread, the whole 4 MiB
 * in flight at once: one HBM round trip instead of a chain of them. 1024
 * columns make 16 clusters = 128 blocks, about one per SM (up to 158
 * registers per thread at B=8, no spills).
 * Reduction, in a fixed order: the 16 row-threads of a block through shared
 * memory, then the 8 blocks of the cluster through distributed shared
 * memory (each block finishes 1/8 of the tile's outputs, reading the 8
 * partials in rank order). No global scratch, no atomics, one launch.
 * The ReLU mask of the layer below is applied as dx is written.
 */
#define GB_TX 16
#define GB_TY 16
#define GB_COLS (4 * GB_TX)
#define GB_CLUSTER 8
#define GB_UNROLL 8

#if MLP_SM90
#define GB_CLUSTER_DIMS __cluster_dims__(GB_CLUSTER, 1, 1)
#else
#define GB_CLUSTER_DIMS
#endif

template <int NB, bool VEC, bool MASK>
static __global__ void GB_CLUSTER_DIMS __launch_bounds__(GB_TX *GB_TY)
    gemv_bwd_kernel(float *__restrict__ dx, const float *dy,
                    const float *W, const float *mask, float scale,
                    int out, int in)
{
#if !MLP_SM90
    __trap(); /* no clusters before sm_90; mlp_device_ok() keeps W-mlp off such GPUs */
#else
    __shared__ __align__(16) float red[GB_TY][NB][GB_COLS];
    __shared__ float part[NB * GB_COLS];
    cg::cluster_group cluster = cg::this_cluster();
    pdl_begin();

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int rank = (int)cluster.block_rank();
    const int col = blockIdx.y * GB_COLS + tx * 4;
    const int rows_per = (out + GB_CLUSTER - 1) / GB_CLUSTER;
    const int r_begin = rank * rows_per;
    const int r_end = min(out, r_begin + rows_per);

    float acc[NB][4];
#pragma unroll
    for (int b = 0; b < NB; b++)
        acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = 0.f;

    for (int r = r_begin + ty; r < r_end; r += GB_UNROLL * GB_TY) {
        float4 w[GB_UNROLL];
        float d[GB_UNROLL][NB];
#pragma unroll
        for (int u = 0; u < GB_UNROLL; u++) {
            const int rr = r + u * GB_TY;
            if (rr < r_end) {
                w[u] = load4<VEC>(W + (size_t)rr * in, col, in);
#pragma unroll
                for (int b = 0; b < NB; b++)
                    d[u][b] = dy[(size_t)b * out + rr];
            } else {
                w[u] = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
                for (int b = 0; b < NB; b++)
                    d[u][b] = 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < GB_UNROLL; u++) {
#pragma unroll
            for (int b = 0; b < NB; b++) {
                acc[b][0] = fmaf(d[u][b], w[u].x, acc[b][0]);
                acc[b][1] = fmaf(d[u][b], w[u].y, acc[b][1]);
                acc[b][2] = fmaf(d[u][b], w[u].z, acc[b][2]);
                acc[b][3] = fmaf(d[u][b], w[u].w, acc[b][3]);
            }
        }
    }

#pragma unroll
    for (int b = 0; b < NB; b++)
        *reinterpret_cast<float4 *>(&red[ty][b][tx * 4]) =
            make_float4(acc[b][0], acc[b][1], acc[b][2], acc[b][3]);
    __syncthreads();

    const int tid = ty * GB_TX + tx;
    for (int o = tid; o < NB * GB_COLS; o += GB_TX * GB_TY) {
        const int b = o / GB_COLS, c = o % GB_COLS;
        float sum = red[0][b][c];
#pragma unroll
        for (int k = 1; k < GB_TY; k++)
            sum += red[k][b][c];
        part[o] = sum;
    }
    cluster.sync(); /* every block's `part` is complete */

    const int chunk = NB * GB_COLS / GB_CLUSTER;
    if (tid < chunk) {
        const int o = rank * chunk + tid;
        const int b = o / GB_COLS, c = o % GB_COLS;
        float sum = *cluster.map_shared_rank(&part[o], 0);
#pragma unroll
        for (int q = 1; q < GB_CLUSTER; q++)
            sum += *cluster.map_shared_rank(&part[o], q);
        const int gc = blockIdx.y * GB_COLS + c;
        if (gc < in) {
            if (MASK)
                sum = mask[(size_t)b * in + gc] > 0.f ? scale * sum : 0.f;
            dx[(size_t)b * in + gc] = sum;
        }
    }
    cluster.sync(); /* no block leaves while another still reads its `part` */
#endif
}

template <int NB>
static cudaError_t gemv_bwd_nb(float *dx, const float *dy, const float *W, const float *mask,
                               float scale, int out, int in, cudaStream_t s, int pdl)
{
    const dim3 grid(GB_CLUSTER, (unsigned)((in + GB_COLS - 1) / GB_COLS));
    const dim3 block(GB_TX, GB_TY);
    const bool vec = in % 4 == 0 && aligned16(W);
    if (vec && mask)
        return launch(gemv_bwd_kernel<NB, true, true>, grid, block, s, pdl, dx, dy, W, mask, scale,
                      out, in);
    if (vec)
        return launch(gemv_bwd_kernel<NB, true, false>, grid, block, s, pdl, dx, dy, W, mask, scale,
                      out, in);
    if (mask)
        return launch(gemv_bwd_kernel<NB, false, true>, grid, block, s, pdl, dx, dy, W, mask, scale,
                      out, in);
    return launch(gemv_bwd_kernel<NB, false, false>, grid, block, s, pdl, dx, dy, W, mask, scale,
                      out, in);
}

extern "C" cudaError_t mlp_gemv_bwd(float *dx, const float *dy, const float *W, const float *mask,
                                    float scale, int B, int out, int in, cudaStream_t s, int pdl)
{
    if (!dx || !dy || !W || out < 1 || in < 1 || (in + GB_COLS - 1) / GB_COLS > 65535 ||
        !(scale > 0.f) || !isfinite(scale))
        return cudaErrorInvalidValue;
    switch (B) {
    case 1: return gemv_bwd_nb<1>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 2: return gemv_bwd_nb<2>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 3: return gemv_bwd_nb<3>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 4: return gemv_bwd_nb<4>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 5: return gemv_bwd_nb<5>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 6: return gemv_bwd_nb<6>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 7: return gemv_bwd_nb<7>(dx, dy, W, mask, scale, out, in, s, pdl);
    case 8: return gemv_bwd_nb<8>(dx, dy, W, mask, scale, out, in, s, pdl);
    default: return cudaErrorInvalidValue;
    }
}

/* ---- weight (and bias) gradient at small batch: dW = dy^T x --------------------
 * dW[o][i] = sum_b dy[b][o] x[b][i] (overwritten), B <= 8; db[o] = sum_b
 * dy[b][o] when db != NULL, so the bias gradient costs no launch of its own.
 * Each thread keeps B float4s of x in registers and writes 4 consecutive
 * rows' float4 of dW, summing over the batch in order b = 0, 1, ... (the
 * first term a product, the rest fmaf). dy values are block-wide broadcasts.
 * Bytes: 4*out*in written (4 MiB) + 4*B*(out+in) read; FLOPs 2*B*out*in.
 * Bound: HBM write bandwidth (the stores mostly land in L2, where the
 * AdamW pass finds them): ~1.3 us + latency, ~2 us; 1024x1024 makes 256
 * blocks of 256 threads.
 */
#define OA_THREADS 256
#define OA_ROWS 4

template <int NB, bool VEC>
static __global__ void __launch_bounds__(OA_THREADS)
    outer_acc_kernel(float *__restrict__ dW, float *__restrict__ db, const float *dy,
                     const float *x, int out, int in)
{
    pdl_begin();
    const int r0 = blockIdx.y * OA_ROWS;
    if (db != nullptr && blockIdx.x == 0 && threadIdx.x < OA_ROWS) {
        const int r = r0 + threadIdx.x;
        if (r < out) {
            float sum = dy[r];
            for (int b = 1; b < NB; b++)
                sum += dy[(size_t)b * out + r];
            db[r] = sum;
        }
    }
    const int c = (blockIdx.x * OA_THREADS + threadIdx.x) * 4;
    if (c >= in)
        return;
    float4 xv[NB];
#pragma unroll
    for (int b = 0; b < NB; b++)
        xv[b] = load4<VEC>(x + (size_t)b * in, c, in);
#pragma unroll
    for (int k = 0; k < OA_ROWS; k++) {
        const int r = r0 + k;
        if (r >= out)
            break;
        float d = dy[r];
        float4 a = make_float4(d * xv[0].x, d * xv[0].y, d * xv[0].z, d * xv[0].w);
#pragma unroll
        for (int b = 1; b < NB; b++) {
            d = dy[(size_t)b * out + r];
            a.x = fmaf(d, xv[b].x, a.x);
            a.y = fmaf(d, xv[b].y, a.y);
            a.z = fmaf(d, xv[b].z, a.z);
            a.w = fmaf(d, xv[b].w, a.w);
        }
        store4<VEC>(dW + (size_t)r * in, c, in, a);
    }
}

template <int NB>
static cudaError_t outer_acc_nb(float *dW, float *db, const float *dy, const float *x, int out,
                                int in, cudaStream_t s, int pdl)
{
    const dim3 grid((unsigned)((in + 4 * OA_THREADS - 1) / (4 * OA_THREADS)),
                    (unsigned)((out + OA_ROWS - 1) / OA_ROWS));
    const bool vec = in % 4 == 0 && aligned16(dW) && aligned16(x);
    if (vec)
        return launch(outer_acc_kernel<NB, true>, grid, dim3(OA_THREADS), s, pdl, dW, db, dy, x,
                      out, in);
    return launch(outer_acc_kernel<NB, false>, grid, dim3(OA_THREADS), s, pdl, dW, db, dy, x, out,
                  in);
}

extern "C" cudaError_t mlp_outer_acc(float *dW, float *db, const float *dy, const float *x, int B,
                                     int out, int in, cudaStream_t s, int pdl)
{
    if (!dW || !dy || !x || out < 1 || in < 1 || (out + OA_ROWS - 1) / OA_ROWS > 65535)
        return cudaErrorInvalidValue;
    switch (B) {
    case 1: return outer_acc_nb<1>(dW, db, dy, x, out, in, s, pdl);
    case 2: return outer_acc_nb<2>(dW, db, dy, x, out, in, s, pdl);
    case 3: return outer_acc_nb<3>(dW, db, dy, x, out, in, s, pdl);
    case 4: return outer_acc_nb<4>(dW, db, dy, x, out, in, s, pdl);
    case 5: return outer_acc_nb<5>(dW, db, dy, x, out, in, s, pdl);
    case 6: return outer_acc_nb<6>(dW, db, dy, x, out, in, s, pdl);
    case 7: return outer_acc_nb<7>(dW, db, dy, x, out, in, s, pdl);
    case 8: return outer_acc_nb<8>(dW, db, dy, x, out, in, s, pdl);
    default: return cudaErrorInvalidValue;
    }
}

/* ---- bias gradient at any batch --------------------------------------------------
 * db[o] = sum_b dy[b][o] (the large-batch path). A block owns 32 columns;
 * its 32 x 32 threads split the rows into 32 strided groups (thread row g
 * sums rows g, g+32, ... in order, each warp reading 128 contiguous bytes
 * of a row), then row 0 adds the 32 partial sums in group order: a fixed
 * order, so db is deterministic. Bytes: 4*B*out read (B=256, out=1024:
 * 1 MiB, coalesced). Bound: latency; 8 dependent loads per thread at
 * B=256 instead of the 256 of one thread per column.
 */
#define BG_TILE 32

static __global__ void __launch_bounds__(BG_TILE *BG_TILE)
    bias_grad_kernel(float *__restrict__ db, const float *dy, int B, int out)
{
    __shared__ float part[BG_TILE][BG_TILE + 1];
    pdl_begin();
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int o = blockIdx.x * BG_TILE + tx;
    float sum = 0.f;
    if (o < out)
        for (int b = ty; b < B; b += BG_TILE)
            sum += dy[(size_t)b * out + o];
    part[ty][tx] = sum;
    __syncthreads();
    if (ty == 0 && o < out) {
        float t = part[0][tx];
        for (int g = 1; g < BG_TILE; g++)
            t += part[g][tx];
        db[o] = t;
    }
}

extern "C" cudaError_t mlp_bias_grad(float *db, const float *dy, int B, int out, cudaStream_t s,
                                     int pdl)
{
    if (!db || !dy || B < 1 || out < 1)
        return cudaErrorInvalidValue;
    return launch(bias_grad_kernel, dim3((unsigned)((out + BG_TILE - 1) / BG_TILE)),
                  dim3(BG_TILE, BG_TILE), s, pdl, db, dy, B, out);
}

/* ---- Linear forward at small batch, bias and activation fused --------------------
 * y[b][o] = act(sum_i W[o][i] x[b][i] + bias[o]), B <= 8. cuBLAS's GEMV-like
 * kernel for this takes ~2.6 us at B=1 and a 128x32 SGEMM tile ~6.8 us at
 * B=8, plus ~1 us for a separate bias kernel. Bytes: 4*out*in of W (4 MiB)
 * + small; FLOPs 2*B*out*in: HBM or L2 bandwidth plus a round of load
 * latency, ~2 us alone.
 *
 * A block owns LF_ROWS output features and splits the columns among its
 * warps: in each pass of LF_COLS columns, lane l of warp w takes the four
 * columns at (w * 32 + l) * 4, loads them from the block's LF_ROWS rows of
 * W and from the B rows of x (so x crosses from L2 once per block, and W is
 * in flight all at once), and keeps LF_ROWS x B partial sums. The warp then
 * adds its partial sums across lanes (warp_sum_split) and the block across
 * warps, in warp order, through shared memory; one thread per output adds
 * the bias, applies the activation and stores.
 *
 * Inside a chain of dependent launches (a graph, PDL) what decides the time
 * is the latency after the previous kernel ends, not the bandwidth: hence
 * the bias read before the sums, the split sums (warp_sum_split), and
 * w_early (W and bias loaded before the PDL wait; inference only, see
 * mlp_kernels.h).
 *
 * Every sum has a fixed order: per lane over the passes in column order
 * (four columns at a time), then across lanes in warp_sum()'s tree, then
 * across warps in warp order. So y is deterministic, and the same for
 * every B, pdl and w_early.
 */
#define LF_THREADS 256
#define LF_WARPS (LF_THREADS / 32)
#define LF_ROWS 8                       /* output features per block */
#define LF_COLS (LF_THREADS * 4)        /* columns of one pass: 1024 */

static constexpr __host__ __device__ int pow2_at_least(int n)
{
    return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2);
}

static constexpr __host__ __device__ int log2_of(int p)
{
    return p <= 1 ? 0 : 1 + log2_of(p / 2);
}

/*
 * P sums at once (P a power of two), each spread over the warp's 32 lanes:
 * on entry v[i] is this lane's part of sum i. At each of warp_sum()'s
 * levels (partners 16, 8, 4, 2, 1 lanes apart) a lane keeps half of its
 * sums and sends the other half, so every sum is built from the same
 * additions in the same tree as warp_sum() would build it, with P - 1
 * shuffles for the first levels instead of 5 P. On return the lane holds
 * sums j .. j + Q - 1 (Q = P / 32, at least 1) in v[0 .. Q - 1]; where
 * several lanes hold the same sums, all but one return -1.
 */
template <int P>
static __device__ __forceinline__ int warp_sum_split(float (&v)[P], int lane)
{
    int n = P, j = 0;
#pragma unroll
    for (int k = 16; k >= 1; k >>= 1) {
        if (n > 1) {
            const bool up = lane & k;
#pragma unroll
            for (int i = 0; i < P / 2; i++) {
                if (i < n / 2) {
                    const float send = up ? v[i] : v[i + n / 2];
                    const float keep = up ? v[i + n / 2] : v[i];
                    v[i] = keep + __shfl_xor_sync(0xffffffffu, send, k);
                }
            }
            if (up)
                j += n / 2;
            n /= 2;
        } else {
            v[0] += __shfl_xor_sync(0xffffffffu, v[0], k);
        }
    }
    constexpr int same = log2_of(P) >= 5 ? 0 : 5 - log2_of(P); /* levels that did not split */
    return (lane & ((1 << same) - 1)) == 0 ? j : -1;
}

/* The grid is about one block per SM, so registers do not limit occupancy:
 * the ", 1" lets ptxas use up to 255 (it held one kernel of this family to
 * 128 and spilled). */
template <int NB, bool VEC, bool RELU, bool DROP>
static __global__ void __launch_bounds__(LF_THREADS, 1)
    linear_fwd_kernel(float *__restrict__ y, const float *W, const float *bias, const float *x,
                      int out, int in, dropout_arg dr, int w_early)
{
    constexpr int N = LF_ROWS * NB, P = pow2_at_least(N), Q = P > 32 ? P / 32 : 1;
    __shared__ float part[LF_WARPS][N];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, t = threadIdx.x;
    const int r0 = blockIdx.x * LF_ROWS;
    if (!w_early)
        pdl_begin();
    /* Rows past `out` read row out - 1 and are never stored. */
    const float *wr[LF_ROWS];
#pragma unroll
    for (int r = 0; r < LF_ROWS; r++)
        wr[r] = W + (size_t)(r0 + r < out ? r0 + r : out - 1) * in;
    /* Thread t < N finishes output t: row t / NB, batch row t % NB. */
    const int o = r0 + (t < N ? t / NB : 0);
    const float bo = bias[o < out ? o : out - 1];
    float acc[LF_ROWS][NB];
#pragma unroll
    for (int r = 0; r < LF_ROWS; r++)
#pragma unroll
        for (int b = 0; b < NB; b++)
            acc[r][b] = 0.f;
    for (int c0 = 0; c0 < in; c0 += LF_COLS) {
        const int c = c0 + t * 4;
        float4 wv[LF_ROWS];
#pragma unroll
        for (int r = 0; r < LF_ROWS; r++)
            wv[r] = load4<VEC>(wr[r], c, in);
        if (w_early && c0 == 0)
            pdl_begin(); /* W and bias are on their way; x is the previous kernel's output */
        float4 xv[NB];
#pragma unroll
        for (int b = 0; b < NB; b++)
            xv[b] = load4<VEC>(x + (size_t)b * in, c, in);
        /* Columns past `in` are zeros in W and x: a sum that starts at +0
         * keeps its bits when 0 * 0 is added. */
#pragma unroll
        for (int r = 0; r < LF_ROWS; r++)
#pragma unroll
            for (int b = 0; b < NB; b++) {
                acc[r][b] = fmaf(wv[r].x, xv[b].x, acc[r][b]);
                acc[r][b] = fmaf(wv[r].y, xv[b].y, acc[r][b]);
                acc[r][b] = fmaf(wv[r].z, xv[b].z, acc[r][b]);
                acc[r][b] = fmaf(wv[r].w, xv[b].w, acc[r][b]);
            }
    }
    float v[P];
#pragma unroll
    for (int i = 0; i < P; i++)
        v[i] = i < N ? acc[i / NB][i % NB] : 0.f;
    const int j = warp_sum_split<P>(v, lane);
#pragma unroll
    for (int i = 0; i < Q; i++)
        if (j >= 0 && j + i < N)
            part[warp][j + i] = v[i];
    __syncthreads();
    if (t >= N || o >= out)
        return;
    float s = part[0][t];
#pragma unroll
    for (int w = 1; w < LF_WARPS; w++)
        s += part[w][t];
    s += bo;
    if (RELU)
        s = relu(s);
    const int b = t % NB;
    if (DROP) {
        const size_t e = (size_t)b * out + o;
        s = dropout_apply(s, dropout_bits(dr, e / 4).v[e % 4], dr);
    }
    y[(size_t)b * out + o] = s;
}

template <int NB>
static cudaError_t linear_fwd_nb(float *y, const float *W, const float *bias, const float *x,
                                 int out, int in, int relu_on, const mlp_dropout *dr,
                                 cudaStream_t s, int pdl, int w_early)
{
    const dim3 grid((unsigned)((out + LF_ROWS - 1) / LF_ROWS)), block(LF_THREADS);
    const bool vec = in % 4 == 0 && aligned16(W) && aligned16(x);
    const dropout_arg d = dropout_of(dr);
    const int early = w_early ? 1 : 0;
#define LF_LAUNCH(V, R, D)                                                                         \
    return launch(linear_fwd_kernel<NB, V, R, D>, grid, block, s, pdl, y, W, bias, x, out, in, d,  \
                  early)
    if (dr) {
        if (vec)
            LF_LAUNCH(true, true, true);
        LF_LAUNCH(false, true, true);
    }
    if (relu_on) {
        if (vec)
            LF_LAUNCH(true, true, false);
        LF_LAUNCH(false, true, false);
    }
    if (vec)
        LF_LAUNCH(true, false, false);
    LF_LAUNCH(false, false, false);
#undef LF_LAUNCH
}

extern "C" cudaError_t mlp_linear_fwd(float *y, const float *W, const float *bias, const float *x,
                                      int B, int out, int in, int relu_on, const mlp_dropout *dr,
                                      cudaStream_t s, int pdl, int w_early)
{
    if (!y || !W || !bias || !x || out < 1 || in < 1 || (void *)y == (const void *)x ||
        !dropout_ok(dr) || (dr && !relu_on))
        return cudaErrorInvalidValue;
    switch (B) {
    case 1: return linear_fwd_nb<1>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 2: return linear_fwd_nb<2>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 3: return linear_fwd_nb<3>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 4: return linear_fwd_nb<4>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 5: return linear_fwd_nb<5>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 6: return linear_fwd_nb<6>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 7: return linear_fwd_nb<7>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    case 8: return linear_fwd_nb<8>(y, W, bias, x, out, in, relu_on, dr, s, pdl, w_early);
    default: return cudaErrorInvalidValue;
    }
}
