/*
 * W-mlp: layout, initialization and the enqueued training step (mlp.h).
 *
 * Why the step looks the way it does, at small batch (napkin numbers):
 * - Forward: mlp_linear_fwd, 8 output features per block reading W once,
 *   with bias, ReLU and dropout fused: one launch per layer instead of
 *   cuBLAS's GEMV (2.6 us at B=1; a 6.8 us SGEMM tile at B=8) plus a bias
 *   kernel. The last layer's bias goes into the loss kernel.
 * - Backward dx = dy W would be cublasSgemm(N, N), for which cuBLAS picks a
 *   ~10 us kernel at B=1; mlp_gemv_bwd reads W once at HBM speed instead,
 *   with the ReLU mask of the layer below fused into its store.
 * - dW = dy^T x is a rank-B update; mlp_outer_acc writes it (and db) in one
 *   pass, instead of a GEMM plus a bias-reduction kernel.
 * - AdamW is one fused pass over the flat buffers.
 * Above small_batch_max the forward and backward use cuBLAS GEMMs (the
 * forward as (T,N), y^T = W x^T), which are then compute-efficient, plus
 * separate bias, bias-gradient and ReLU-backward kernels.
 *
 * Dropout (the workload's variant) is inverted dropout after each hidden
 * ReLU. The stored activation is the dropped one, and it is > 0 exactly
 * where the unit passed both the ReLU and the mask, so the backward reuses
 * the ReLU-mask path with a 1/(1-p) scale and draws no random numbers.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mlp.h"

/* ---- errors ------------------------------------------------------------------ */

static _Thread_local char last_error[512];

int mlp_set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -1;
}

/* Every failure here sets the message and returns -1. */
#define fail mlp_set_error

const char *mlp_last_error(void)
{
    return last_error;
}

/* The kernels launch through cgr_launch_kernel(), which keeps the CUDA error's
 * details in cgr_last_error() and reports cudaErrorLaunchFailure. */
#define MLP_CUDA(expr)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            return fail("%s:%d: %s: %s (%s)%s%s", __FILE__, __LINE__, #expr,               \
                        cudaGetErrorName(e_), cudaGetErrorString(e_),                      \
                        e_ == cudaErrorLaunchFailure ? ": " : "",                          \
                        e_ == cudaErrorLaunchFailure ? cgr_last_error() : "");             \
    } while (0)

#define MLP_CUBLAS(expr)                                                                   \
    do {                                                                                   \
        cublasStatus_t s_ = (expr);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
            return fail("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #expr,                   \
                        cublasGetStatusName(s_), cublasGetStatusString(s_));               \
    } while (0)

#define MLP_TRY(expr)                                                                      \
    do {                                                                                   \
        if ((expr) != 0)                                                                   \
            return -1;                                                                     \
    } while (0)

/* ---- configuration and layout -------------------------------------------------- */

void mlp_cfg_default(mlp_cfg *cfg, int batch)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->batch = batch;
    cfg->in_dim = 1024;
    cfg->hidden = 1024;
    cfg->n_hidden = 4;
    cfg->classes = 1000;
    cfg->small_batch_max = MLP_SMALL_B_MAX;
    cfg->lr = 1e-3f;
    cfg->beta1 = 0.9f;
    cfg->beta2 = 0.999f;
    cfg->eps = 1e-8f;
    cfg->weight_decay = 0.01f;
    cfg->dropout = 0.f;
}

/* Feature counts stay below 2^20, so every index product fits in size_t and
 * every per-row count in int. */
#define MLP_DIM_MAX (1 << 20)
#define MLP_BATCH_MAX (1 << 20)

int mlp_cfg_check(const mlp_cfg *cfg)
{
    if (!cfg)
        return fail("mlp_cfg_check: cfg is NULL");
    if (cfg->batch < 1 || cfg->batch > MLP_BATCH_MAX)
        return fail("mlp: batch %d out of range [1, %d]", cfg->batch, MLP_BATCH_MAX);
    if (cfg->in_dim < 1 || cfg->in_dim > MLP_DIM_MAX || cfg->hidden < 1 ||
        cfg->hidden > MLP_DIM_MAX || cfg->classes < 1 || cfg->classes > MLP_DIM_MAX)
        return fail("mlp: in_dim %d, hidden %d, classes %d: each must be in [1, %d]", cfg->in_dim,
                    cfg->hidden, cfg->classes, MLP_DIM_MAX);
    if (cfg->n_hidden < 0 || cfg->n_hidden > MLP_MAX_LAYERS - 1)
        return fail("mlp: n_hidden %d out of range [0, %d]", cfg->n_hidden, MLP_MAX_LAYERS - 1);
    if (cfg->small_batch_max < 0 || cfg->small_batch_max > MLP_SMALL_B_MAX)
        return fail("mlp: small_batch_max %d out of range [0, %d]", cfg->small_batch_max,
                    MLP_SMALL_B_MAX);
    if (!(cfg->lr >= 0.f && isfinite(cfg->lr)) || !(cfg->beta1 >= 0.f && cfg->beta1 < 1.f) ||
        !(cfg->beta2 >= 0.f && cfg->beta2 < 1.f) || !(cfg->eps > 0.f && isfinite(cfg->eps)) ||
        !(cfg->weight_decay >= 0.f && isfinite(cfg->weight_decay)))
        return fail("mlp: hyperparameters out of range (lr %g, betas %g/%g, eps %g, wd %g)",
                    (double)cfg->lr, (double)cfg->beta1, (double)cfg->beta2, (double)cfg->eps,
                    (double)cfg->weight_decay);
    if (!(cfg->dropout == 0.f || (cfg->dropout > 0.f && cfg->dropout < 1.f)))
        return fail("mlp: dropout %g out of range: 0 (off) or in (0, 1)", (double)cfg->dropout);
    return 0;
}

static size_t round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

int mlp_layout_init(mlp_layout *layout, const mlp_cfg *cfg)
{
    if (!layout)
        return fail("mlp_layout_init: layout is NULL");
    MLP_TRY(mlp_cfg_check(cfg));
    memset(layout, 0, sizeof *layout);
    layout->n_layers = cfg->n_hidden + 1;
    size_t off = 0, n = 0;
    for (int l = 0; l < layout->n_layers; l++) {
        const int in = l == 0 ? cfg->in_dim : cfg->hidden;
        const int out = l == cfg->n_hidden ? cfg->classes : cfg->hidden;
        layout->in[l] = in;
        layout->out[l] = out;
        layout->w_off[l] = off;
        off += round_up((size_t)out * (size_t)in, MLP_TENSOR_ALIGN_FLOATS);
        layout->b_off[l] = off;
        off += round_up((size_t)out, MLP_TENSOR_ALIGN_FLOATS);
        n += (size_t)out * (size_t)in + (size_t)out;
    }
    layout->n_floats = off;
    layout->n_params = n;
    return 0;
}

/* splitmix64: a full-period generator that any seed (0 too) starts well. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [-k, k), never exactly 0. */
static float uniform_nonzero(uint64_t *s, float k)
{
    const double u = (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
    float v = (float)((2.0 * u - 1.0) * (double)k);
    return v == 0.f ? 0.5f * k : v;
}

int mlp_init_params(const mlp_cfg *cfg, float *params, uint64_t seed)
{
    mlp_layout L;
    if (!params)
        return fail("mlp_init_params: params is NULL");
    MLP_TRY(mlp_layout_init(&L, cfg));
    memset(params, 0, L.n_floats * sizeof *params);
    uint64_t s = seed;
    for (int l = 0; l < L.n_layers; l++) {
        const float k = (float)(1.0 / sqrt((double)L.in[l]));
        const size_t nw = (size_t)L.out[l] * (size_t)L.in[l];
        for (size_t i = 0; i < nw; i++)
            params[L.w_off[l] + i] = uniform_nonzero(&s, k);
        for (int o = 0; o < L.out[l]; o++)
            params[L.b_off[l] + (size_t)o] = uniform_nonzero(&s, k);
    }
    return 0;
}

static uint64_t layer_counters(const mlp_cfg *cfg, const mlp_layout *L, int l)
{
    return ((uint64_t)cfg->batch * (uint64_t)L->out[l] + 3) / 4;
}

uint64_t mlp_dropout_counters(const mlp_cfg *cfg)
{
    mlp_layout L;
    if (!cfg || cfg->dropout == 0.f || mlp_layout_init(&L, cfg) != 0)
        return 0;
    uint64_t n = 0;
    for (int l = 0; l < L.n_layers - 1; l++)
        n += layer_counters(cfg, &L, l);
    return n;
}

/* ---- scratch --------------------------------------------------------------------- */

static int max_features(const mlp_layout *L)
{
    /* dbuf holds dlogits / dy ([B][out[l]]) and dx ([B][in[l]], l > 0). */
    int m = 0;
    for (int l = 0; l < L->n_layers; l++) {
        if (L->out[l] > m)
            m = L->out[l];
        if (l > 0 && L->in[l] > m)
            m = L->in[l];
    }
    return m;
}

int mlp_scratch_sizes(const mlp_cfg *cfg, mlp_scratch *sizes)
{
    mlp_layout L;
    if (!sizes)
        return fail("mlp_scratch_sizes: sizes is NULL");
    MLP_TRY(mlp_layout_init(&L, cfg));
    memset(sizes, 0, sizeof *sizes);
    const size_t B = (size_t)cfg->batch;
    size_t total = 0;
    sizes->n_act = L.n_layers;
    for (int l = 0; l < L.n_layers; l++) {
        sizes->act_bytes[l] = B * (size_t)L.out[l] * sizeof(float);
        total += round_up(sizes->act_bytes[l], MLP_SCRATCH_ALIGN);
    }
    sizes->dbuf_bytes = B * (size_t)max_features(&L) * sizeof(float);
    total += (size_t)L.n_layers * round_up(sizes->dbuf_bytes, MLP_SCRATCH_ALIGN);
    sizes->row_loss_bytes = B * sizeof(float);
    total += round_up(sizes->row_loss_bytes, MLP_SCRATCH_ALIGN);
    sizes->total_bytes = total;
    return 0;
}

int mlp_scratch_carve(const mlp_cfg *cfg, void *base, mlp_bufs *b)
{
    mlp_scratch sz;
    if (!base || !b)
        return fail("mlp_scratch_carve: NULL argument");
    if ((uintptr_t)base % MLP_SCRATCH_ALIGN != 0)
        return fail("mlp_scratch_carve: base %p is not %d-byte aligned", base, MLP_SCRATCH_ALIGN);
    MLP_TRY(mlp_scratch_sizes(cfg, &sz));
    char *p = (char *)base;
    for (int l = 0; l < sz.n_act; l++) {
        b->act[l] = (float *)(void *)p;
        p += round_up(sz.act_bytes[l], MLP_SCRATCH_ALIGN);
    }
    for (int i = 0; i < sz.n_act; i++) {
        b->dbuf[i] = (float *)(void *)p;
        p += round_up(sz.dbuf_bytes, MLP_SCRATCH_ALIGN);
    }
    b->row_loss = (float *)(void *)p;
    return 0;
}

/* ---- the step ---------------------------------------------------------------------- */

static int check_bufs(const mlp_cfg *cfg, const mlp_layout *L, const mlp_bufs *b, int training)
{
    if (!b)
        return fail("mlp: bufs is NULL");
    if (!b->params || !b->x)
        return fail("mlp: params or x is NULL");
    for (int l = 0; l < L->n_layers; l++)
        if (!b->act[l])
            return fail("mlp: act[%d] is NULL", l);
    if (training) {
        if (!b->grads || !b->m || !b->v || !b->step || !b->labels || !b->loss || !b->row_loss)
            return fail("mlp: a training buffer is NULL (grads, m, v, step, labels, loss or "
                        "row_loss)");
        for (int l = 0; l < L->n_layers; l++)
            if (!b->dbuf[l])
                return fail("mlp: dbuf[%d] is NULL", l);
        if (b->side && (!b->ev_fork || !b->ev_join))
            return fail("mlp: a side stream needs both events (ev_fork, ev_join)");
        if (((uintptr_t)b->grads | (uintptr_t)b->m | (uintptr_t)b->v) % 16 != 0)
            return fail("mlp: grads, m and v must be 16-byte aligned");
        if (cfg->dropout > 0.f && !b->rng)
            return fail("mlp: dropout %g needs a Philox state (mlp_bufs.rng)",
                        (double)cfg->dropout);
    }
    if ((uintptr_t)b->params % 16 != 0)
        return fail("mlp: params must be 16-byte aligned");
    return 0;
}

/* The handle must already run on s, with alpha/beta read from the host. */
static int check_handle(cublasHandle_t h, cudaStream_t s)
{
    cudaStream_t hs = NULL;
    cublasPointerMode_t pm;
    if (!h)
        return fail("mlp: cuBLAS handle is NULL");
    MLP_CUBLAS(cublasGetStream(h, &hs));
    if (hs != s)
        return fail("mlp: the cuBLAS handle is bound to stream %p, not the step's stream %p "
                    "(call cublasSetStream, then cublasSetWorkspace)",
                    (void *)hs, (void *)s);
    MLP_CUBLAS(cublasGetPointerMode(h, &pm));
    if (pm != CUBLAS_POINTER_MODE_HOST)
        return fail("mlp: the cuBLAS handle must use CUBLAS_POINTER_MODE_HOST");
    return 0;
}

static const float one = 1.0f, zero = 0.0f;

/*
 * The forward pass. At small batch every layer is one mlp_linear_fwd
 * launch, bias fused. Above it, each layer is a cuBLAS GEMM and a bias
 * kernel, except that a training step leaves the last layer's bias to the
 * loss kernel, which adds it as it reads the logits (one launch fewer).
 */
static int forward(const mlp_cfg *cfg, const mlp_layout *L, const mlp_bufs *b, cublasHandle_t h,
                   cudaStream_t s, int pdl, int training, int w_early)
{
    const int B = cfg->batch;
    const int small = B <= cfg->small_batch_max;
    const int drop = training && cfg->dropout > 0.f;
    uint64_t sub = b->rng_sub;
    for (int l = 0; l < L->n_layers; l++) {
        const int in = L->in[l], out = L->out[l];
        const int hidden = l < L->n_layers - 1;
        const float *W = b->params + L->w_off[l];
        const float *bias = b->params + L->b_off[l];
        const float *a = l == 0 ? b->x : b->act[l - 1];
        const mlp_dropout dr = {b->rng, sub, cfg->dropout};
        const mlp_dropout *drp = drop && hidden ? &dr : NULL;
        if (drp)
            sub += layer_counters(cfg, L, l);
        if (small) {
            MLP_CUDA(mlp_linear_fwd(b->act[l], W, bias, a, B, out, in, hidden, drp, s, pdl,
                                    w_early));
            continue;
        }
        /* act[l]^T [out x B] = W [out x in] . a^T [in x B] (column-major view) */
        MLP_CUBLAS(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, out, B, in, &one, W, in, a, in, &zero,
                               b->act[l], out));
        if (drp)
            MLP_CUDA(mlp_bias_relu_dropout_fwd(b->act[l], bias, B, out, drp, s, pdl));
        else if (hidden)
            MLP_CUDA(mlp_bias_relu_fwd(b->act[l], bias, B, out, s, pdl));
        else if (!training)
            MLP_CUDA(mlp_bias_fwd(b->act[l], bias, B, out, s, pdl));
    }
    return 0;
}

int mlp_forward_enqueue(const mlp_cfg *cfg, const mlp_bufs *b, cublasHandle_t h, cudaStream_t s,
                        int pdl, int w_early)
{
    mlp_layout L;
    MLP_TRY(mlp_layout_init(&L, cfg));
    MLP_TRY(check_bufs(cfg, &L, b, 0));
    MLP_TRY(check_handle(h, s));
    return forward(cfg, &L, b, h, s, pdl, 0, w_early);
}

int mlp_step_enqueue(const mlp_cfg *cfg, const mlp_bufs *b, cublasHandle_t h, cudaStream_t s,
                     int pdl)
{
    mlp_layout L;
    MLP_TRY(mlp_layout_init(&L, cfg));
    MLP_TRY(check_bufs(cfg, &L, b, 1));
    MLP_TRY(check_handle(h, s));
    const int B = cfg->batch;
    const int last = L.n_layers - 1;
    const int small = B <= cfg->small_batch_max;
    /* 1 / (1 - p) for the kept units' gradients; exactly 1 without dropout. */
    const float keep_scale = cfg->dropout > 0.f ? 1.f / (1.f - cfg->dropout) : 1.f;

    /* Not w_early: this step's AdamW writes the weights, and with PDL the
     * next step's first layer could otherwise read them before it ends. */
    MLP_TRY(forward(cfg, &L, b, h, s, pdl, 1, 0));

    /* Loss and dlogits (into dbuf[last]); the last bias is added here above small B. */
    float *dy = b->dbuf[last];
    /* Weight gradients on the side stream: small batch only (cuBLAS's handle has one stream). */
    const int branch = small && b->side;
    /*
     * A padded batch (b->true_batch) is masked here and only here. The loss
     * kernel gives rows >= T a zero dlogits row. Every gradient below is
     * linear in dlogits row by row: dx = dy W (mlp_gemv_bwd or a GEMM) and
     * the ReLU/dropout backward (a mask times a scale) keep a zero row zero,
     * so each padded row's dy is zero at every layer; dW = dy^T a and
     * db = sum_b dy (mlp_outer_acc, mlp_bias_grad or a GEMM) then get 0 * a
     * = 0 from it, as long as a is finite, which the padded rows' inputs
     * (zeros, or any finite fill) and activations are. So the gradients are
     * the T real rows' alone, on the small-batch and the cuBLAS path alike;
     * the padded rows' forward work is wasted, not wrong.
     */
    MLP_CUDA(mlp_softmax_xent_masked(b->act[last], small ? NULL : b->params + L.b_off[last],
                                     b->labels, b->true_batch, b->row_loss, b->loss, dy, B,
                                     L.out[last], s, pdl));

    /*
     * Backward, top layer first. dy = dbuf[l] holds d(loss)/d(layer l's
     * pre-activation output); the layer's input is a = act[l-1] (x for
     * l = 0), whose post-ReLU values also give the ReLU mask of layer l-1.
     */
    for (int l = last; l >= 0; l--) {
        const int in = L.in[l], out = L.out[l];
        const float *W = b->params + L.w_off[l];
        float *dW = b->grads + L.w_off[l];
        float *db = b->grads + L.b_off[l];
        const float *a = l == 0 ? b->x : b->act[l - 1];
        float *dx = l > 0 ? b->dbuf[l - 1] : NULL;
        if (branch) {
            MLP_CUDA(cudaEventRecord(b->ev_fork, s));
            MLP_CUDA(cudaStreamWaitEvent(b->side, b->ev_fork, 0));
            MLP_CUDA(mlp_outer_acc(dW, db, dy, a, B, out, in, b->side, pdl));
            if (l > 0)
                MLP_CUDA(mlp_gemv_bwd(dx, dy, W, a, keep_scale, B, out, in, s, pdl));
        } else if (small) {
            MLP_CUDA(mlp_outer_acc(dW, db, dy, a, B, out, in, s, pdl));
            if (l > 0)
                MLP_CUDA(mlp_gemv_bwd(dx, dy, W, a, keep_scale, B, out, in, s, pdl));
        } else {
            /* dW^T [in x out] = a^T [in x B] . dy [B x out] (column-major view) */
            MLP_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, in, out, B, &one, a, in, dy, out,
                                   &zero, dW, in));
            MLP_CUDA(mlp_bias_grad(db, dy, B, out, s, pdl));
            if (l > 0) {
                /* dx^T [in x B] = W^T [in x out] . dy^T [out x B] */
                MLP_CUBLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, in, B, out, &one, W, in, dy,
                                       out, &zero, dx, in));
                MLP_CUDA(mlp_relu_bwd(dx, a, keep_scale, B, in, s, pdl));
            }
        }
        dy = dx;
    }
    if (branch) {
        MLP_CUDA(cudaEventRecord(b->ev_join, b->side));
        MLP_CUDA(cudaStreamWaitEvent(s, b->ev_join, 0));
    }

    if (b->grad_hook)
        MLP_TRY(b->grad_hook(b->grad_hook_user, b->grads, L.n_floats, s));
    MLP_CUDA(mlp_adamw_fused(b->params, b->grads, b->m, b->v, L.n_floats, b->step, cfg->lr,
                             cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, s, pdl));
    MLP_CUDA(mlp_adamw_step_count_inc(b->step, s, pdl));
    return 0;
}

int mlp_device_ok(void)
{
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
        return 0;
    return major >= 9;
}
