/*
 * GPU test of the W-mlp kernels and training step (suite `gpu`).
 *
 *   (a) each kernel against a double-precision CPU reference on fresh
 *       random data (never zeros; outputs are poisoned with NaN first, so
 *       an element the kernel fails to write fails the check);
 *   (b) three full training steps (mlp_step_enqueue, plain cudaMalloc'd
 *       buffers, a cuBLAS handle with default math) against the fp64
 *       reference: the loss, every gradient and parameter tensor, the
 *       step count;
 *   (c) determinism: two identical 5-step runs give bitwise equal params;
 *   (d) pdl=1 gives bitwise the same params and losses as pdl=0;
 *   (e) the step captured once into a CUDA graph and replayed gives bitwise
 *       the same as eager steps (so it is capturable and its device-side
 *       step count advances on replay);
 *   (f) padded batches (mlp_bufs.true_batch, cgr's dynamic dims): the
 *       masked loss kernel against the fp64 reference over the real rows
 *       (padded rows exactly 0, T = B bitwise the unmasked kernel, device
 *       values outside [1, B] clamped); 3 training steps at bucket B with T
 *       real rows and random padding against fp64 training on the T rows
 *       alone, on the custom and the cuBLAS backward; one graph replayed
 *       with a different T each step equals eager steps bitwise.
 *
 * Tolerances (err <= rtol * scale + atol, per element):
 * - elementwise kernels and short reductions: rtol 1e-5 of |ref|;
 * - sums (gemv_bwd 1e-4; outer_acc, bias_grad 1e-5 with at most 256
 *   terms): relative to sum |terms|, the scale of fp32 rounding in a sum
 *   whose terms cancel; plus 1e-4 norm-wise for gemv_bwd;
 * - softmax-xent dlogits: rtol 1e-5 plus 1e-6 * max|ref| (softmax - 1
 *   cancels when one class dominates);
 * - training: each step is checked against one fp64 step taken from the
 *   GPU's own state before it (params, m, v, step count): the loss 1e-4
 *   relative; per parameter tensor the gradient 1e-4 norm-wise, the
 *   parameters 1e-4 norm-wise (||gpu - ref|| / ||ref||), the step's update
 *   1e-3 norm-wise, and each parameter within 1e-4 |ref| + 0.01 lr, plus,
 *   where the gradient is so small that AdamW's direction is rounding
 *   noise, the bound adamw_noise() derives (at most 2 lr).
 *
 * Exit: 0 all passed, 1 at the first failure, 77 no usable GPU (or one
 * older than sm_90).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cgr/cgr_philox.h>

#include "mlp.h"
#include "mlp_kernels.h"
#include "mlp_ref.h"
#include "test_util.h"

#define SEED 20240611ULL

#define CUBLAS_OK(expr)                                                                    \
    do {                                                                                   \
        cublasStatus_t s_ = (expr);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
            TEST_FAIL_("%s: %s", #expr, cublasGetStatusString(s_));                        \
    } while (0)

#define MLP_OK(expr) WORK_OK(expr, mlp_last_error)

static cudaStream_t stream;
/* The side stream and events of mlp_bufs (weight gradients in a parallel branch). */
static cudaStream_t side_stream;
static cudaEvent_t ev_fork, ev_join;

static void use_side(mlp_bufs *b)
{
    b->side = side_stream;
    b->ev_fork = ev_fork;
    b->ev_join = ev_join;
}
static cublasHandle_t blas;

/* n floats of h in a buffer of n + 4 floats, at float offset mis: misaligned when mis = 1. */
static float *dev_at(const float *h, size_t n, int mis)
{
    float *d = (float *)dmalloc((n + 4) * 4) + mis;
    up(d, h, n * 4);
    return d;
}

/* An int64 in device memory: a true batch, where the kernels read it. */
static int64_t *dev_int64(int64_t v)
{
    int64_t *d = dmalloc(sizeof v);
    up(d, &v, sizeof v);
    return d;
}

static rng rng_make(uint64_t seed)
{
    rng r;
    r.s = seed * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL;
    if (r.s == 0)
        r.s = 1;
    return r;
}

/* ---- (a) kernels --------------------------------------------------------------------- */

/*
 * One softmax-xent case's inputs and buffers, shared by the unmasked and the
 * masked (padded) tests: B rows of C random logits (+-8: peaked rows, and
 * exp underflows nothing), a random bias vector and random labels, label
 * `bad_label` at row bad_row when bad_row >= 0; on the device the same, and
 * outputs for xent_run() to poison. hd, hrl and loss hold the outputs of
 * the run under test, for xent_check(). Its buffers go with the caller's scope.
 */
typedef struct xent_fix {
    int B, C;
    size_t n; /* B * C */
    float *hl, *hb, *hd, *hrl, loss;
    int *lab;
    float *dl, *db, *dd, *drl, *dloss;
    int *dlab;
} xent_fix;

static void xent_setup(rng *r, xent_fix *f, int B, int C, int bad_row, int bad_label)
{
    f->B = B;
    f->C = C;
    f->n = (size_t)B * C;
    f->hl = xmalloc(f->n * 4);
    f->hd = xmalloc(f->n * 4);
    f->hrl = xmalloc((size_t)B * 4);
    f->hb = rand_new(r, (size_t)C, 1.f);
    f->lab = xmalloc((size_t)B * sizeof(int));
    fill(r, f->hl, f->n, 8.f);
    for (int b = 0; b < B; b++)
        f->lab[b] = (int)(rng_next(r) % (uint64_t)C);
    if (bad_row >= 0)
        f->lab[bad_row] = bad_label;
    f->dl = dev_of(f->hl, f->n);
    f->db = dev_of(f->hb, (size_t)C);
    f->dd = dmalloc(f->n * 4);
    f->drl = dmalloc((size_t)B * 4);
    f->dloss = dmalloc(4);
    f->dlab = dmalloc((size_t)B * sizeof(int));
    up(f->dlab, f->lab, (size_t)B * sizeof(int));
}

static void xent_run(const xent_fix *f, const int64_t *dtb, int bias, int pdl, float *hd,
                     float *hrl, float *loss)
{
    const float *db = bias ? f->db : NULL;
    poison(f->dd, f->n * 4, stream);
    poison(f->drl, (size_t)f->B * 4, stream);
    poison(f->dloss, 4, stream);
    CUDA_OK(mlp_softmax_xent_masked(f->dl, db, f->dlab, dtb, f->drl, f->dloss, f->dd, f->B, f->C,
                                    stream, pdl));
    down(hd, f->dd, f->n * 4);
    down(hrl, f->drl, (size_t)f->B * 4);
    down(loss, f->dloss, 4);
}

/*
 * f->hd, f->hrl and f->loss over the first T rows against the fp64
 * reference over those rows alone: dlogits within 1e-5 plus 1e-6 * max|ref|,
 * row losses 1e-5 plus 1e-6, the mean loss 1e-5. `id` names the case in the
 * messages ("B=8 C=1000"), `detail` follows it in the dlogits one
 * (" pdl=1 bias"); `real` says the rows are the real ones of a padded batch.
 */
static void xent_check(const char *g, const xent_fix *f, int T, int bias, const char *id,
                       const char *detail, int real)
{
    const size_t mark = scope(), nt = (size_t)T * f->C;
    double *logits = to_double(f->hl, nt);
    if (bias)
        for (size_t i = 0; i < nt; i++)
            logits[i] += (double)f->hb[i % (size_t)f->C];
    double *want = xmalloc(nt * sizeof(double)), *wrl = xmalloc((size_t)T * sizeof(double));
    const double wl = mlp_ref_softmax_xent(logits, f->lab, T, f->C, want, wrl);
    double mx = 0.0;
    for (size_t i = 0; i < nt; i++)
        mx = fabs(want[i]) > mx ? fabs(want[i]) : mx;
    char what[160];
    snprintf(what, sizeof what, "%s%s%s dlogits", id, detail, real ? " real" : "");
    check_close(g, what, f->hd, want, NULL, nt, 1e-5, 1e-6 * mx, 0.0);
    snprintf(what, sizeof what, "%s%s row_loss", id, real ? " real" : "");
    check_close(g, what, f->hrl, wrl, NULL, (size_t)T, 1e-5, 1e-6, 0.0);
    snprintf(what, sizeof what, "%s %s", id, real ? "mean over the real rows" : "mean loss");
    check_close(g, what, &f->loss, &wl, NULL, 1, 1e-5, 0.0, 0.0);
    release(mark);
}

/*
 * One softmax-xent case; bad_row >= 0 puts label `bad_label` there; with
 * `bias` the kernel adds a random bias vector to the logits as it reads them.
 */
static void softmax_case(rng *r, const char *g, int B, int C, int pdl, int bad_row, int bad_label,
                         int bias)
{
    const size_t mark = scope();
    xent_fix f;
    xent_setup(r, &f, B, C, bad_row, bad_label);
    xent_run(&f, NULL, bias, pdl, f.hd, f.hrl, &f.loss);
    char id[48], detail[48];
    snprintf(id, sizeof id, "B=%d C=%d", B, C);
    snprintf(detail, sizeof detail, " pdl=%d%s%s", pdl, bad_row >= 0 ? " bad label" : "",
             bias ? " bias" : "");
    xent_check(g, &f, B, bias, id, detail, 0);
    release(mark);
}

static void test_softmax(rng *r)
{
    static const int cases[][2] = {{1, 1000}, {3, 1000}, {8, 1000}, {32, 1000}, {33, 1000},
                                   {256, 1000}, {100, 37}, {8, 10}, {1, 1}, {5, 3}};
    const char *g = "softmax_xent_fwd_bwd";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int bias = 0; bias <= 1; bias++)
            softmax_case(r, g, cases[i][0], cases[i][1], (int)(i % 2), -1, 0, bias);
    /* Labels out of range: NaN loss, zero gradient row, no crash. */
    const char *gb = "softmax_xent bad label";
    softmax_case(r, gb, 3, 1000, 0, 1, 1000, 0);
    softmax_case(r, gb, 40, 1000, 1, 7, -1, 1);
    softmax_case(r, gb, 1, 37, 0, 0, 37, 1);
}

/*
 * mlp_softmax_xent_masked with a padded batch: B rows launched, T = *tb
 * of them real (tb as stored; the kernel clamps it to [1, B], and want_T is
 * what it should use). The padded rows hold random logits and labels, one
 * of them out of range, so any row the mask misses shows: rows >= want_T
 * must come out exactly 0 in row_loss and dlogits, rows below must match
 * the fp64 reference over those rows alone (dlogits / want_T), and the loss
 * their mean. With want_T == B the result must also be bitwise that of
 * the unmasked kernel (true_batch == NULL).
 */
static void softmax_masked_case(rng *r, const char *g, int B, int64_t tb, int want_T, int C,
                                int pdl, int bias)
{
    const size_t mark = scope();
    xent_fix f;
    /* With padding, a bad label in a padded row: it must not turn the loss into NaN. */
    xent_setup(r, &f, B, C, want_T < B ? B - 1 : -1, C);
    int64_t *dtb = dev_int64(tb);
    xent_run(&f, dtb, bias, pdl, f.hd, f.hrl, &f.loss);
    char id[64], detail[48], what[112];
    snprintf(id, sizeof id, "B=%d T=%lld C=%d", B, (long long)tb, C);
    snprintf(detail, sizeof detail, " pdl=%d%s", pdl, bias ? " bias" : "");
    xent_check(g, &f, want_T, bias, id, detail, 1);
    /* Padded rows: exactly zero, bit for bit (+0.0f), in both outputs. */
    size_t nonzero = 0;
    for (size_t i = (size_t)want_T * C; i < f.n; i++)
        nonzero += f.hd[i] != 0.f || signbit(f.hd[i]);
    for (int b = want_T; b < B; b++)
        nonzero += f.hrl[b] != 0.f || signbit(f.hrl[b]);
    if (nonzero)
        TEST_FAIL_("%s: B=%d T=%lld: %zu padded outputs are not +0", g, B, (long long)tb,
                   nonzero);
    if (want_T == B) {
        float *ud = xmalloc(f.n * 4), *url = xmalloc((size_t)B * 4), uloss;
        xent_run(&f, NULL, bias, pdl, ud, url, &uloss);
        snprintf(what, sizeof what, "B=%d T=B == unmasked: dlogits", B);
        same_bytes(f.hd, ud, f.n * 4, "%s: %s", g, what);
        snprintf(what, sizeof what, "B=%d T=B == unmasked: row_loss", B);
        same_bytes(f.hrl, url, (size_t)B * 4, "%s: %s", g, what);
        snprintf(what, sizeof what, "B=%d T=B == unmasked: loss", B);
        same_bytes(&f.loss, &uloss, 4, "%s: %s", g, what);
    }
    release(mark);
}

static void test_softmax_masked(rng *r)
{
    /* B (the bucket), T as stored on the device, the T the kernel must use, C. */
    static const struct {
        int B;
        int64_t tb;
        int T, C;
    } cases[] = {
        {8, 5, 5, 1000},    {8, 1, 1, 1000},     {1, 1, 1, 1000},     {16, 13, 13, 1000},
        {32, 27, 27, 1000}, {32, 32, 32, 1000},  {33, 1, 1, 1000},    {256, 200, 200, 1000},
        {8, 3, 3, 37},      {40, 17, 17, 10},    {5, 5, 5, 3},
        /* Out of range on the device: clamped to [1, B] instead of dividing by 0. */
        {8, 0, 1, 1000},    {8, -7, 1, 1000},    {8, 9, 8, 1000},     {4, INT64_MAX, 4, 37},
    };
    const char *g = "softmax_xent masked (padded)";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int bias = 0; bias <= 1; bias++)
            softmax_masked_case(r, g, cases[i].B, cases[i].tb, cases[i].T, cases[i].C,
                                (int)((i + (size_t)bias) % 2), bias);
}

/* ---- dropout ------------------------------------------------------------------------- */

#define DROP_P 0.1f

/* A Philox state in device memory, as cgr_ctx_philox() would hand out. */
static cgr_philox_state *philox_dev(uint64_t seed, uint64_t offset)
{
    const cgr_philox_state h = {seed, offset};
    cgr_philox_state *d = dmalloc(sizeof h);
    up(d, &h, sizeof h);
    return d;
}

/*
 * Dropped elements must be exactly 0, whatever the tolerance of the value
 * check; also counts them, so that the rate can be checked.
 */
static void check_dropped(const char *g, const char *what, const float *got,
                          const unsigned char *drop, size_t n, size_t *n_dropped)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (drop[i]) {
            (*n_dropped)++;
            bad += got[i] != 0.f;
        }
    }
    if (bad)
        TEST_FAIL_("%s: %s: %zu dropped elements are not 0", g, what, bad);
}

/* The rate of `dropped` of n decisions, which check_rate() bounds, shown. */
static void show_rate(const char *what, size_t dropped, size_t n)
{
    printf("  %s: drop rate %.4f of %zu\n", what, check_rate(what, dropped, n, DROP_P), n);
}

/*
 * The elementwise kernels in one table: the bias forward plain, with ReLU
 * and with ReLU and dropout, and ReLU's backward (every other case with
 * dropout's 1/(1-p) scale). Each case alternates pdl and, where the kind
 * says so, runs on buffers at a 4-byte offset, which forces the scalar
 * path.
 */
enum { EW_BIAS, EW_BIAS_RELU, EW_BIAS_RELU_DROP, EW_RELU_BWD, EW_KINDS };

static void test_elementwise(rng *r)
{
    static const struct {
        const char *name;
        int Bs[4];
        int mis_1024_only; /* misaligned buffers only at 1024 columns */
    } kinds[EW_KINDS] = {
        [EW_BIAS] = {"bias_fwd", {1, 3, 8, 32}, 1},
        [EW_BIAS_RELU] = {"bias_relu_fwd", {1, 3, 8, 32}, 1},
        [EW_BIAS_RELU_DROP] = {"bias_relu_dropout_fwd", {1, 3, 8, 256}, 0},
        [EW_RELU_BWD] = {"relu_bwd", {1, 3, 8, 32}, 0},
    };
    static const int Cs[] = {1024, 1000, 37};
    size_t dropped = 0, total = 0;
    for (int kind = 0; kind < EW_KINDS; kind++) {
        const char *g = kinds[kind].name;
        int k = 0;
        for (int bi = 0; bi < 4; bi++)
            for (size_t ci = 0; ci < sizeof Cs / sizeof Cs[0]; ci++)
                for (int mis = 0; mis <= (!kinds[kind].mis_1024_only || Cs[ci] == 1024);
                     mis++, k++) {
                    const size_t mark = scope();
                    const int B = kinds[kind].Bs[bi], C = Cs[ci], pdl = k % 2;
                    const int bwd = kind == EW_RELU_BWD, drop_on = kind == EW_BIAS_RELU_DROP;
                    const size_t n = (size_t)B * C, n1 = bwd ? n : (size_t)C;
                    /* y and the bias, or for the backward dy and y */
                    const float *h0 = rand_new(r, n, 1.f), *h1 = rand_new(r, n1, 1.f);
                    float *d0 = dev_at(h0, n, mis), *d1 = dev_at(h1, n1, mis);
                    const cgr_philox_state hs = {rng_next(r), rng_next(r) >> 8};
                    const uint64_t sub = rng_next(r) >> 40;
                    float scale = 1.f;
                    if (kind == EW_BIAS)
                        CUDA_OK(mlp_bias_fwd(d0, d1, B, C, stream, pdl));
                    else if (kind == EW_BIAS_RELU)
                        CUDA_OK(mlp_bias_relu_fwd(d0, d1, B, C, stream, pdl));
                    else if (drop_on) {
                        const mlp_dropout dr = {philox_dev(hs.seed, hs.offset), sub, DROP_P};
                        scale = 1.f / (1.f - DROP_P);
                        CUDA_OK(mlp_bias_relu_dropout_fwd(d0, d1, B, C, &dr, stream, pdl));
                    } else {
                        scale = k % 2 ? 1.f / (1.f - DROP_P) : 1.f;
                        CUDA_OK(mlp_relu_bwd(d0, d1, scale, B, C, stream, pdl));
                    }
                    const float *out = down_new(d0, n);
                    double *want = xmalloc(n * sizeof *want);
                    unsigned char *drop = xmalloc(n);
                    for (size_t i = 0; i < n; i++) {
                        const double v =
                            (double)h0[i] + (bwd ? 0.0 : (double)h1[i % (size_t)C]);
                        drop[i] = (unsigned char)(drop_on && host_dropped(hs.seed, hs.offset + sub,
                                                                          i, DROP_P));
                        const int zero = bwd ? !(h1[i] > 0.f) : (kind != EW_BIAS && v < 0.0);
                        want[i] = zero || drop[i] ? 0.0 : v * (double)scale;
                    }
                    char what[80];
                    snprintf(what, sizeof what, "B=%d cols=%d%s pdl=%d scale=%g", B, C,
                             mis ? " misaligned" : "", pdl, (double)scale);
                    check_close(g, what, out, want, NULL, n, 1e-5, 0.0, 0.0);
                    if (drop_on) {
                        total += n;
                        check_dropped(g, what, out, drop, n, &dropped);
                    }
                    release(mark);
                }
    }
    show_rate("bias_relu_dropout rate", dropped, total);
}

/* mlp_linear_fwd: act 0 none, 1 ReLU, 2 ReLU + dropout. */
static void test_linear_fwd(rng *r)
{
    /* Every row count has its own kernel instance (and split-sum layout). */
    static const int Bs[] = {1, 2, 3, 4, 5, 7, 8};
    /* out, in, misaligned W and x */
    static const int shapes[][3] = {{1024, 1024, 0}, {1000, 1024, 0}, {37, 100, 0},
                                    {50, 37, 0},     {8, 5, 0},       {64, 2000, 0},
                                    {64, 64, 1}};
    const char *g = "linear_fwd", *gd = "linear_fwd bitwise (rerun, pdl, pdl + w_early)";
    const char *gr = "linear_fwd dropout rate";
    size_t dropped = 0, total = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++)
            for (int act = 0; act <= 2; act++) {
                const size_t mark = scope();
                const int out = shapes[si][0], in = shapes[si][1], mis = shapes[si][2];
                const int B = Bs[bi];
                const size_t nw = (size_t)out * in, ny = (size_t)B * out, nx = (size_t)B * in;
                const float *hW = rand_new(r, nw, 0.05f), *hx = rand_new(r, nx, 1.f);
                const float *hb = rand_new(r, (size_t)out, 0.5f);
                float *dW = dev_at(hW, nw, mis), *dx = dev_at(hx, nx, mis);
                float *db = dev_of(hb, (size_t)out), *dy = dmalloc(ny * 4);
                const cgr_philox_state hs = {rng_next(r), rng_next(r) >> 8};
                const uint64_t sub = rng_next(r) >> 40;
                const mlp_dropout dr = {philox_dev(hs.seed, hs.offset), sub, DROP_P};
                const mlp_dropout *drp = act == 2 ? &dr : NULL;
                /* plain, plain again, PDL, PDL with the weights loaded before the wait */
                const float *got[4];
                for (int v = 0; v < 4; v++) {
                    poison(dy, ny * 4, stream);
                    CUDA_OK(mlp_linear_fwd(dy, dW, db, dx, B, out, in, act > 0, drp, stream,
                                           v >= 2, v == 3));
                    got[v] = down_new(dy, ny);
                }
                double *want = xmalloc(ny * 8), *wabs = xmalloc(ny * 8);
                unsigned char *drop = xmalloc(ny);
                const float scale = act == 2 ? 1.f / (1.f - DROP_P) : 1.f;
                for (int b = 0; b < B; b++)
                    for (int o = 0; o < out; o++) {
                        double z = (double)hb[o], za = fabs((double)hb[o]);
                        for (int i = 0; i < in; i++) {
                            const double t = (double)hW[(size_t)o * in + i] *
                                             (double)hx[(size_t)b * in + i];
                            z += t;
                            za += fabs(t);
                        }
                        const size_t e = (size_t)b * out + o;
                        drop[e] = act == 2 && host_dropped(hs.seed, hs.offset + sub, e, DROP_P);
                        if (act > 0 && z < 0.0)
                            z = 0.0;
                        want[e] = drop[e] ? 0.0 : z * (double)scale;
                        wabs[e] = za * (double)scale;
                    }
                char what[96];
                snprintf(what, sizeof what, "B=%d out=%d in=%d act=%d%s", B, out, in, act,
                         mis ? " misaligned" : "");
                check_close(g, what, got[0], want, wabs, ny, 1e-4, 0.0, 1e-4);
                if (act == 2) {
                    total += ny;
                    check_dropped(g, what, got[0], drop, ny, &dropped);
                }
                for (int v = 1; v < 4; v++)
                    same_bytes(got[0], got[v], ny * 4, "%s: %s", gd, what);
                release(mark);
            }
    show_rate(gr, dropped, total);
}

/*
 * Five layers in a row through two buffers used in turn (layer l reads the
 * buffer layer l - 2 wrote before), as W-serve runs them: every layer
 * launched with PDL and w_early, so each loads its weights before it waits
 * for the layer before and must read that layer's output, not what the
 * buffer held two layers back, only after the wait. Against the same
 * chain run plainly, bit for bit: eagerly, and replayed in a graph with
 * the buffers poisoned before each replay.
 *
 * Why this shape: a first version of the split-column kernel read x
 * through a const __restrict__ pointer; W-serve's checks caught the stale
 * reads, while a two-layer chain with fresh buffers passed.
 */
#define CHAIN_LAYERS 5
static void chain_enqueue(const float *W, const float *b, const float *x, float *a0, float *a1,
                          int B, int n, int fast)
{
    for (int l = 0; l < CHAIN_LAYERS; l++) {
        const float *in = l == 0 ? x : l % 2 ? a0 : a1;
        float *out = l % 2 ? a1 : a0;
        CUDA_OK(mlp_linear_fwd(out, W + (size_t)l * n * n, b + (size_t)l * n, in, B, n, n,
                               l < CHAIN_LAYERS - 1, NULL, stream, fast, fast));
    }
}

static void test_linear_fwd_chain(rng *r)
{
    static const int Bs[] = {1, 2, 4, 8};
    const int n = 1024, L = CHAIN_LAYERS;
    const size_t mark = scope();
    const char *g = "linear_fwd chain (5 layers, pdl + w_early, eager and graph)";
    const float *hW = rand_new(r, (size_t)L * n * n, 0.05f);
    const float *hb = rand_new(r, (size_t)L * n, 0.5f), *hx = rand_new(r, (size_t)8 * n, 1.f);
    float *ref = xmalloc((size_t)8 * n * 4), *got = xmalloc((size_t)8 * n * 4);
    float *dW = dev_of(hW, (size_t)L * n * n), *db = dev_of(hb, (size_t)L * n);
    float *dx = dev_of(hx, (size_t)8 * n), *a0 = dmalloc((size_t)8 * n * 4);
    float *a1 = dmalloc((size_t)8 * n * 4);
    /* The last layer (4) writes a0. */
    for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++) {
        const int B = Bs[bi];
        const size_t bytes = (size_t)B * n * 4;
        char what[64];
        poison(a0, bytes, stream);
        poison(a1, bytes, stream);
        chain_enqueue(dW, db, dx, a0, a1, B, n, 0);
        down(ref, a0, bytes);
        size_t bad = 0; /* poison left in place: NaN */
        for (size_t i = 0; i < (size_t)B * n; i++)
            bad += !isfinite(ref[i]);
        if (bad)
            TEST_FAIL_("%s: B=%d: the plain chain left %zu outputs unwritten", g, B, bad);
        cudaGraph_t gr = NULL;
        cudaGraphExec_t exec = NULL;
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        chain_enqueue(dW, db, dx, a0, a1, B, n, 1);
        CUDA_OK(cudaStreamEndCapture(stream, &gr));
        CUDA_OK(cudaGraphInstantiate(&exec, gr, 0));
        /* 3 eager runs, then 10 replays of the graph */
        for (int run = 0; run < 13; run++) {
            poison(a0, bytes, stream);
            poison(a1, bytes, stream);
            if (run < 3)
                chain_enqueue(dW, db, dx, a0, a1, B, n, 1);
            else
                CUDA_OK(cudaGraphLaunch(exec, stream));
            down(got, a0, bytes);
            snprintf(what, sizeof what, "B=%d %s %d", B, run < 3 ? "eager run" : "graph replay",
                     run < 3 ? run : run - 3);
            same_bytes(ref, got, bytes, "%s: %s", g, what);
        }
        CUDA_OK(cudaGraphExecDestroy(exec));
        CUDA_OK(cudaGraphDestroy(gr));
    }
    release(mark);
}

static void test_gemv_bwd(rng *r)
{
    static const int Bs[] = {1, 2, 3, 8};
    /* out, in, misaligned W */
    static const int shapes[][3] = {{1024, 1024, 0}, {1000, 1024, 0}, {37, 100, 0},
                                    {50, 37, 0},     {8, 5, 0},       {2000, 64, 0},
                                    {64, 64, 1}};
    const char *g = "gemv_bwd", *gd = "gemv_bwd bitwise (rerun, pdl)";
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++)
            for (int use_mask = 0; use_mask <= 1; use_mask++) {
                const size_t mark = scope();
                const int out = shapes[si][0], in = shapes[si][1], mis = shapes[si][2];
                const int B = Bs[bi];
                const size_t nw = (size_t)out * in, ny = (size_t)B * out, nx = (size_t)B * in;
                const float *hW = rand_new(r, nw, 0.05f), *hdy = rand_new(r, ny, 1.f);
                const float *hm = rand_new(r, nx, 1.f);
                float *dW = dev_at(hW, nw, mis), *ddy = dev_of(hdy, ny), *dm = dev_of(hm, nx);
                float *ddx = dmalloc(nx * 4);
                const float *mask = use_mask ? dm : NULL;
                /* with the mask, half the cases use dropout's 1/(1-p) scale */
                const float scale = use_mask && bi % 2 ? 1.f / (1.f - 0.1f) : 1.f;
                /* plain, plain again, PDL */
                const float *o[3];
                for (int v = 0; v < 3; v++) {
                    poison(ddx, nx * 4, stream);
                    CUDA_OK(mlp_gemv_bwd(ddx, ddy, dW, mask, scale, B, out, in, stream, v == 2));
                    o[v] = down_new(ddx, nx);
                }
                double *W = to_double(hW, nw), *dy = to_double(hdy, ny);
                double *want = xmalloc(nx * 8), *wabs = xmalloc(nx * 8);
                unsigned char *m = xmalloc(nx);
                for (size_t i = 0; i < nx; i++)
                    m[i] = hm[i] > 0.f;
                mlp_ref_gemv_bwd(want, wabs, dy, W, use_mask ? m : NULL, B, out, in);
                for (size_t i = 0; i < nx; i++) {
                    want[i] *= (double)scale;
                    wabs[i] *= (double)scale;
                }
                char what[96];
                snprintf(what, sizeof what, "B=%d out=%d in=%d%s%s scale=%g", B, out, in,
                         use_mask ? " mask" : "", mis ? " misaligned" : "", (double)scale);
                check_close(g, what, o[0], want, wabs, nx, 1e-4, 0.0, 1e-4);
                same_bytes(o[0], o[1], nx * 4, "%s: %s", gd, what);
                same_bytes(o[0], o[2], nx * 4, "%s: %s", gd, what);
                release(mark);
            }
}

static void test_outer_acc(rng *r)
{
    static const int Bs[] = {1, 2, 3, 8};
    /* out, in, misaligned x */
    static const int shapes[][3] = {{1024, 1024, 0}, {1000, 1024, 0}, {37, 37, 0}, {5, 6, 0},
                                    {3, 1, 0},       {1025, 12, 0},   {16, 64, 1}};
    const char *g = "outer_acc (dW, db)", *gd = "outer_acc bitwise (rerun, pdl)";
    const char *gb = "bias_grad == outer_acc db";
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++)
            for (int with_db = 0; with_db <= 1; with_db++) {
                const size_t mark = scope();
                const int out = shapes[si][0], in = shapes[si][1], mis = shapes[si][2];
                const int B = Bs[bi];
                const size_t nw = (size_t)out * in, ny = (size_t)B * out, nx = (size_t)B * in;
                const float *hdy = rand_new(r, ny, 1.f), *hx = rand_new(r, nx, 1.f);
                float *ddy = dev_of(hdy, ny), *dx = dev_at(hx, nx, mis), *ddW = dmalloc(nw * 4);
                float *ddb = dmalloc((size_t)out * 4);
                float *db = with_db ? ddb : NULL;
                poison(ddW, nw * 4, stream);
                poison(ddb, (size_t)out * 4, stream);
                CUDA_OK(mlp_outer_acc(ddW, db, ddy, dx, B, out, in, stream, 0));
                const float *w1 = down_new(ddW, nw), *b1 = down_new(ddb, (size_t)out);
                poison(ddW, nw * 4, stream);
                CUDA_OK(mlp_outer_acc(ddW, db, ddy, dx, B, out, in, stream, 1));
                const float *w2 = down_new(ddW, nw);

                double *dy = to_double(hdy, ny), *x = to_double(hx, nx);
                double *want = xmalloc(nw * 8), *wabs = xmalloc(nw * 8),
                       *bwant = xmalloc((size_t)out * 8), *babs = xmalloc((size_t)out * 8);
                mlp_ref_outer(want, wabs, bwant, babs, dy, x, B, out, in);
                char what[96];
                snprintf(what, sizeof what, "B=%d out=%d in=%d%s%s dW", B, out, in,
                         with_db ? " +db" : "", mis ? " misaligned" : "");
                check_close(g, what, w1, want, wabs, nw, 1e-5, 0.0, 0.0);
                same_bytes(w1, w2, nw * 4, "%s: %s", gd, what);
                if (with_db) {
                    snprintf(what, sizeof what, "B=%d out=%d in=%d db", B, out, in);
                    check_close(g, what, b1, bwant, babs, (size_t)out, 1e-5, 0.0, 0.0);
                    /* bias_grad sums in the same order: the same bits. */
                    poison(ddb, (size_t)out * 4, stream);
                    CUDA_OK(mlp_bias_grad(ddb, ddy, B, out, stream, 1));
                    same_bytes(b1, down_new(ddb, (size_t)out), (size_t)out * 4, "%s: %s", gb,
                               what);
                }
                release(mark);
            }
}

static void test_bias_grad(rng *r)
{
    static const int Bs[] = {1, 3, 8, 32, 256};
    static const int outs[] = {1000, 37, 1};
    const char *g = "bias_grad";
    int k = 0;
    for (size_t bi = 0; bi < sizeof Bs / sizeof Bs[0]; bi++)
        for (size_t oi = 0; oi < sizeof outs / sizeof outs[0]; oi++, k++) {
            const size_t mark = scope();
            const int B = Bs[bi], out = outs[oi];
            const size_t ny = (size_t)B * out;
            const float *hdy = rand_new(r, ny, 1.f);
            float *ddy = dev_of(hdy, ny), *ddb = dmalloc((size_t)out * 4);
            poison(ddb, (size_t)out * 4, stream);
            CUDA_OK(mlp_bias_grad(ddb, ddy, B, out, stream, k % 2));
            const float *got = down_new(ddb, (size_t)out);
            double *want = xmalloc((size_t)out * 8), *wabs = xmalloc((size_t)out * 8);
            for (int o = 0; o < out; o++) {
                double s = 0.0, a = 0.0;
                for (int b = 0; b < B; b++) {
                    s += hdy[(size_t)b * out + o];
                    a += fabs((double)hdy[(size_t)b * out + o]);
                }
                want[o] = s;
                wabs[o] = a;
            }
            char what[64];
            snprintf(what, sizeof what, "B=%d out=%d", B, out);
            check_close(g, what, got, want, wabs, (size_t)out, 1e-5, 0.0, 0.0);
            release(mark);
        }
}

typedef struct adamw_hp {
    float lr, b1, b2, eps, wd;
} adamw_hp;

static void adamw_case(rng *r, const char *g, size_t n, int mis, int step0, adamw_hp h, int pdl)
{
    const size_t mark = scope();
    const float *hp = rand_new(r, n, 1.f), *hg = rand_new(r, n, 1.f), *hm = rand_new(r, n, 0.1f);
    float *hv = rand_new(r, n, 0.01f);
    for (size_t i = 0; i < n; i++)
        hv[i] = fabsf(hv[i]);
    float *dp = dev_at(hp, n, mis), *dg = dev_at(hg, n, mis), *dm = dev_at(hm, n, mis),
          *dv = dev_at(hv, n, mis);
    int *dstep = dmalloc(sizeof(int));
    up(dstep, &step0, sizeof(int));
    CUDA_OK(mlp_adamw_fused(dp, dg, dm, dv, n, dstep, h.lr, h.b1, h.b2, h.eps, h.wd, stream, pdl));
    CUDA_OK(mlp_adamw_step_count_inc(dstep, stream, pdl));
    const float *op = down_new(dp, n), *om = down_new(dm, n), *ov = down_new(dv, n);
    int step1 = -1;
    down(&step1, dstep, sizeof(int));

    double *p = to_double(hp, n), *gg = to_double(hg, n), *m = to_double(hm, n),
           *v = to_double(hv, n);
    mlp_ref_adamw(p, gg, m, v, n, step0 + 1, h.lr, h.b1, h.b2, h.eps, h.wd);
    char what[96];
    snprintf(what, sizeof what, "n=%zu%s t=%d lr=%g p", n, mis ? " misaligned" : "", step0 + 1,
             (double)h.lr);
    check_close(g, what, op, p, NULL, n, 1e-5, 1e-6, 0.0);
    snprintf(what, sizeof what, "n=%zu t=%d m", n, step0 + 1);
    check_close(g, what, om, m, NULL, n, 1e-5, 1e-7, 0.0);
    snprintf(what, sizeof what, "n=%zu t=%d v", n, step0 + 1);
    check_close(g, what, ov, v, NULL, n, 1e-5, 0.0, 0.0);
    if (step1 != step0 + 1)
        TEST_FAIL_("%s: step count %d after one step from %d", g, step1, step0);
    release(mark);
}

static void test_adamw(rng *r)
{
    const char *g = "adamw_fused + step_count_inc";
    mlp_cfg c;
    mlp_layout L;
    mlp_cfg_default(&c, 1);
    MLP_OK(mlp_layout_init(&L, &c));
    /* Every term matters with these: a dropped weight decay or a wrong
     * bias correction moves p by far more than the tolerance. */
    const adamw_hp odd = {0.05f, 0.8f, 0.95f, 1e-3f, 0.2f};
    const adamw_hp dflt = {c.lr, c.beta1, c.beta2, c.eps, c.weight_decay};
    adamw_case(r, g, L.n_floats, 0, 4, odd, 0);
    adamw_case(r, g, L.n_floats, 0, 0, dflt, 1);
    adamw_case(r, g, 1001, 1, 0, odd, 1);
    adamw_case(r, g, 4099, 0, 9, dflt, 0);
}

/* ---- training runs ----------------------------------------------------------------------- */

/* One training run's buffers; they go with the caller's scope. */
typedef struct run {
    mlp_cfg cfg;
    mlp_layout L;
    mlp_bufs b;
    void *scratch;
    float *x;       /* device */
    int *labels;    /* device */
    float *params0; /* host: the initial parameters */
} run;

static void run_create(run *r, int B, int small_max)
{
    mlp_scratch sz;
    memset(r, 0, sizeof *r);
    mlp_cfg_default(&r->cfg, B);
    r->cfg.small_batch_max = small_max;
    MLP_OK(mlp_layout_init(&r->L, &r->cfg));
    MLP_OK(mlp_scratch_sizes(&r->cfg, &sz));
    const size_t nb = r->L.n_floats * sizeof(float);
    r->params0 = xmalloc(nb);
    MLP_OK(mlp_init_params(&r->cfg, r->params0, SEED));
    r->b.params = dmalloc(nb);
    r->b.grads = dmalloc(nb);
    r->b.m = dmalloc(nb);
    r->b.v = dmalloc(nb);
    r->b.step = dmalloc(sizeof(int));
    r->b.loss = dmalloc(sizeof(float));
    r->x = dmalloc((size_t)B * r->cfg.in_dim * sizeof(float));
    r->labels = dmalloc((size_t)B * sizeof(int));
    r->b.x = r->x;
    r->b.labels = r->labels;
    r->scratch = dmalloc(sz.total_bytes);
    MLP_OK(mlp_scratch_carve(&r->cfg, r->scratch, &r->b));
    up(r->b.params, r->params0, nb);
    CUDA_OK(cudaMemset(r->b.grads, 0, nb));
    CUDA_OK(cudaMemset(r->b.m, 0, nb));
    CUDA_OK(cudaMemset(r->b.v, 0, nb));
    CUDA_OK(cudaMemset(r->b.step, 0, sizeof(int)));
    poison(r->scratch, sz.total_bytes, stream); /* the step must write before it reads */
    CUDA_OK(cudaDeviceSynchronize());
}

/* The batch of step k: fresh random data, the same for every run. */
static void make_batch(const mlp_cfg *c, int k, float *x, int *labels)
{
    rng r = rng_make(SEED + 1000u + (uint64_t)k);
    fill(&r, x, (size_t)c->batch * c->in_dim, 1.f);
    for (int b = 0; b < c->batch; b++)
        labels[b] = (int)(rng_next(&r) % (uint64_t)c->classes);
}

static void upload_batch(run *r, int k, float *hx, int *hl)
{
    make_batch(&r->cfg, k, hx, hl);
    CUDA_OK(cudaMemcpyAsync(r->x, hx, (size_t)r->cfg.batch * r->cfg.in_dim * sizeof(float),
                            cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaMemcpyAsync(r->labels, hl, (size_t)r->cfg.batch * sizeof(int),
                            cudaMemcpyHostToDevice, stream));
}

/*
 * How far one AdamW step can move parameter i on fp32 rounding noise in
 * its gradient alone. The update lr * mhat / (sqrt(vhat) + eps) changes by
 * at most about
 *   S_i = lr * ((1 - b1) / bc1 + sqrt((1 - b2) / bc2)) / (sqrt(vhat_i) + eps)
 * per unit of g_i (the first term through m, the second through v), and
 * fp32 gets g_i right to within about 1e-5 |g_i| + 1e-8 (the absolute part:
 * sums of up to B terms as large as ~0.06 that cancel). Where the fp64
 * gradient is exactly 0 the GPU's is too (same ReLU masks), so there is no
 * noise. Capped at 2 lr, the most one step can move. For most elements this
 * is far below the 0.01 lr floor; it matters where vhat is tiny, i.e. the
 * gradient is near eps, where the step's direction is rounding noise.
 */
static double adamw_noise(const mlp_ref *ref, size_t i)
{
    const mlp_cfg *c = &ref->cfg;
    const double lr = c->lr, b1 = c->beta1, b2 = c->beta2, t = (double)ref->t;
    if (ref->g[i] == 0.0)
        return 0.0;
    const double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
    const double S =
        lr * ((1.0 - b1) / bc1 + sqrt((1.0 - b2) / bc2)) / (sqrt(ref->v[i] / bc2) + c->eps);
    const double e = S * (1e-5 * fabs(ref->g[i]) + 1e-8);
    return e < 2.0 * lr ? e : 2.0 * lr;
}

/*
 * One tensor [off, off + n) of the flat buffers after one step that the
 * GPU and the reference started from the same state (pre): the parameters
 * per element (1e-4 |ref| + 0.01 lr + adamw_noise) and norm-wise (1e-4),
 * the update p - pre norm-wise (1e-3), and the gradients norm-wise (1e-4).
 * *loosened counts the elements whose tolerance adamw_noise() raised above
 * the floor.
 */
static void check_tensor(const char *g, const char *what, const float *gpu_p, const float *gpu_g,
                         const float *pre, const mlp_ref *ref, size_t off, size_t n,
                         long *loosened)
{
    const double lr = ref->cfg.lr;
    double worst = 0.0, wtol = 0.0, num = 0.0, den = 0.0, upd = 0.0, gnum = 0.0, gden = 0.0;
    size_t wi = off;
    for (size_t i = off; i < off + n; i++) {
        const double want = ref->p[i], got = gpu_p[i];
        const double noise = adamw_noise(ref, i);
        const double tol = 1e-4 * fabs(want) + 0.01 * lr + noise;
        const double err = fabs(got - want);
        const double ratio = isfinite(got) ? err / tol : INFINITY;
        *loosened += noise > 0.01 * lr;
        if (!(ratio <= worst)) {
            worst = ratio;
            wi = i;
            wtol = tol;
        }
        num += err * err;
        den += want * want;
        upd += (want - pre[i]) * (want - pre[i]);
        const double ge = (double)gpu_g[i] - ref->g[i];
        gnum += ge * ge;
        gden += ref->g[i] * ref->g[i];
    }
    const double nrel = sqrt(num / den);
    const double urel = upd > 0.0 ? sqrt(num / upd) : (num > 0.0 ? INFINITY : 0.0);
    const double grel = gden > 0.0 ? sqrt(gnum / gden) : (gnum > 0.0 ? INFINITY : 0.0);
    if (!(nrel / 1e-4 <= worst))
        worst = nrel / 1e-4;
    if (!(urel / 1e-3 <= worst))
        worst = urel / 1e-3;
    if (!(grel / 1e-4 <= worst))
        worst = grel / 1e-4;
    if (!(worst <= 1.0))
        TEST_FAIL_("%s: %s: worst element %zu: gpu %.9g ref %.9g before %.9g (tol %.3g; "
                   "grad gpu %.3g ref %.3g); norm-wise rel err of params %.3g (tol 1e-4), of "
                   "the update %.3g (tol 1e-3), of the gradient %.3g (tol 1e-4)",
                   g, what, wi - off, (double)gpu_p[wi], ref->p[wi], (double)pre[wi], wtol,
                   (double)gpu_g[wi], ref->g[wi], nrel, urel, grel);
}

/*
 * (b): three steps, each checked against one fp64 step from the GPU's own
 * state before it (params, m, v, step count). Chaining fp64 steps instead
 * would compare two diverging trajectories: AdamW amplifies rounding noise
 * in near-zero gradients into updates of up to lr, and the next forward
 * pass then sees different weights.
 */
static void test_train_rows(int B, int T, int small_max)
{
    const int steps = 3;
    char name[64];
    if (T)
        snprintf(name, sizeof name, "train padded B=%d T=%d vs fp64, %s", B, T,
                 B <= small_max ? "custom bwd" : "cuBLAS bwd");
    else
        snprintf(name, sizeof name, "train vs fp64, B=%d %s", B,
                 B <= small_max ? "custom bwd" : "cuBLAS bwd");
    const char *g = name;
    const size_t mark = scope();
    run r;
    run_create(&r, B, small_max);
    /*
     * A padded batch (T > 0): the step is shaped for B rows, of which the
     * first T are real, and the reference trains on those T rows alone. The
     * padded rows hold random data (make_batch fills all B), which the
     * masked loss must keep out of the loss and every gradient.
     */
    int64_t *dtb = NULL;
    mlp_cfg ref_cfg = r.cfg;
    if (T) {
        dtb = dev_int64(T);
        r.b.true_batch = dtb;
        ref_cfg.batch = T;
    }
    mlp_ref ref;
    if (mlp_ref_init(&ref, &ref_cfg, r.params0) != 0)
        TEST_FAIL_("%s", "mlp_ref_init: out of host memory");
    const mlp_layout *L = &r.L;
    const size_t nb = L->n_floats * sizeof(float);
    float *hx = xmalloc((size_t)B * r.cfg.in_dim * 4);
    int *hl = xmalloc((size_t)B * sizeof(int));
    float *pre = xmalloc(nb), *m = xmalloc(nb), *v = xmalloc(nb), *params = xmalloc(nb),
          *grads = xmalloc(nb);
    float *acts[MLP_MAX_LAYERS] = {0};
    for (int l = 0; l < L->n_layers - 1; l++)
        acts[l] = xmalloc((size_t)B * L->out[l] * 4);
    memcpy(pre, r.params0, nb);
    memset(m, 0, nb);
    memset(v, 0, nb);
    long hinted_total = 0, loosened = 0;
    for (int k = 0; k < steps; k++) {
        mlp_ref_set_state(&ref, pre, m, v, k);
        upload_batch(&r, k, hx, hl);
        MLP_OK(mlp_step_enqueue(&r.cfg, &r.b, blas, stream, 0));
        float loss;
        int count = -1;
        down(&loss, r.b.loss, 4);
        down(&count, r.b.step, sizeof(int));
        down(params, r.b.params, nb);
        down(grads, r.b.grads, nb);
        down(m, r.b.m, nb);
        down(v, r.b.v, nb);
        for (int l = 0; l < L->n_layers - 1; l++)
            down(acts[l], r.b.act[l], (size_t)B * L->out[l] * 4);

        long hinted = 0;
        const double want = mlp_ref_step(&ref, hx, hl, (const float *const *)acts, 1e-4, &hinted);
        hinted_total += hinted;
        char what[96];
        snprintf(what, sizeof what, "step %d loss", k + 1);
        check_close(g, what, &loss, &want, NULL, 1, 1e-4, 0.0, 0.0);
        if (count != k + 1)
            TEST_FAIL_("%s: device step count %d after step %d", g, count, k + 1);
        for (int l = 0; l < L->n_layers; l++) {
            snprintf(what, sizeof what, "step %d W%d", k + 1, l);
            check_tensor(g, what, params, grads, pre, &ref, L->w_off[l],
                         (size_t)L->out[l] * L->in[l], &loosened);
            snprintf(what, sizeof what, "step %d b%d", k + 1, l);
            check_tensor(g, what, params, grads, pre, &ref, L->b_off[l], (size_t)L->out[l],
                         &loosened);
        }
        printf("  %s step %d: loss gpu %.7f ref %.7f\n", name, k + 1, (double)loss, want);
        memcpy(pre, params, nb);
    }
    printf("  %s: %ld of %zu params loosened (tiny grad), %ld ReLU sign(s) from GPU\n", name,
           loosened / steps, L->n_params, hinted_total);
    mlp_ref_free(&ref);
    release(mark);
}

/*
 * `steps` steps from the initial parameters on the fixed batches: eagerly,
 * or captured once into a graph and replayed (the inputs are copied into
 * the step's fixed input buffers before each launch). Returns the final
 * params, the per-step losses and the device step count.
 */
static void trajectory(int B, int small_max, int pdl, int graph, int side, int steps,
                       const int64_t *tseq, float *params, float *losses, int *count)
{
    const size_t mark = scope();
    run r;
    run_create(&r, B, small_max);
    if (side)
        use_side(&r.b);
    /* tseq: step k has tseq[k] real rows of B, written to the device before it runs. */
    int64_t *dtb = NULL;
    if (tseq) {
        dtb = dev_int64(tseq[0]);
        r.b.true_batch = dtb;
    }
    float *hx = xmalloc((size_t)B * r.cfg.in_dim * 4);
    int *hl = xmalloc((size_t)B * sizeof(int));
    cudaGraph_t gr = NULL;
    cudaGraphExec_t exec = NULL;
    if (graph) {
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        const int rc = mlp_step_enqueue(&r.cfg, &r.b, blas, stream, pdl);
        const cudaError_t ce = cudaStreamEndCapture(stream, &gr);
        if (rc != 0)
            TEST_FAIL_("capture: mlp_step_enqueue: %s", mlp_last_error());
        CUDA_OK(ce);
        CUDA_OK(cudaGraphInstantiate(&exec, gr, 0));
        CUDA_OK(cudaGraphUpload(exec, stream));
    }
    for (int k = 0; k < steps; k++) {
        upload_batch(&r, k, hx, hl);
        if (tseq)
            CUDA_OK(cudaMemcpyAsync(dtb, &tseq[k], sizeof(int64_t), cudaMemcpyHostToDevice,
                                    stream));
        if (graph)
            CUDA_OK(cudaGraphLaunch(exec, stream));
        else
            MLP_OK(mlp_step_enqueue(&r.cfg, &r.b, blas, stream, pdl));
        CUDA_OK(cudaMemcpyAsync(&losses[k], r.b.loss, sizeof(float), cudaMemcpyDeviceToHost,
                                stream));
        CUDA_OK(cudaStreamSynchronize(stream));
    }
    down(params, r.b.params, r.L.n_floats * 4);
    down(count, r.b.step, sizeof(int));
    if (exec)
        CUDA_OK(cudaGraphExecDestroy(exec));
    if (gr)
        CUDA_OK(cudaGraphDestroy(gr));
    release(mark);
}

/*
 * (c), (d), (e) for one batch size: every variant against eager pdl=0.
 *
 * With tseq (5 values), a padded batch in one graph: only the last variant
 * (graph + pdl + side), captured once (with the first T), then replayed
 * with a different number of real rows each step, only the device value
 * changing, against eager steps on the same T sequence: bitwise equal (the
 * graph reads T on the device, as cgr's dynamic-dim replays do). And the
 * losses differ from step to step's T: a graph that baked T in would not
 * match eager.
 */
static void test_bitwise_rows(int B, int small_max, const int64_t *tseq)
{
    enum { STEPS = 5 };
    static const struct {
        const char *name;
        int pdl, graph, side;
    } variants[] = {
        {"determinism (rerun)", 0, 0, 0},
        {"pdl=1 == pdl=0", 1, 0, 0},
        {"graph replay == eager", 0, 1, 0},
        {"graph+pdl replay == eager", 1, 1, 0},
        {"side stream == eager", 1, 0, 1},
        {"graph+pdl+side == eager", 1, 1, 1},
    };
    const size_t n_variants = sizeof variants / sizeof variants[0], mark = scope();
    mlp_cfg c;
    mlp_layout L;
    mlp_cfg_default(&c, B);
    MLP_OK(mlp_layout_init(&L, &c));
    float *p0 = xmalloc(L.n_floats * 4), *p1 = xmalloc(L.n_floats * 4);
    float l0[STEPS], l1[STEPS];
    int c0 = -1, c1 = -1;
    trajectory(B, small_max, 0, 0, 0, STEPS, tseq, p0, l0, &c0);
    for (size_t v = tseq ? n_variants - 1 : 0; v < n_variants; v++) {
        char name[64];
        snprintf(name, sizeof name, "%s%s, B=%d", tseq ? "padded " : "", variants[v].name, B);
        trajectory(B, small_max, variants[v].pdl, variants[v].graph, variants[v].side, STEPS,
                   tseq, p1, l1, &c1);
        same_bytes(p0, p1, L.n_floats * 4, "%s: params after 5 steps", name);
        same_bytes(l0, l1, sizeof l0, "%s: losses of 5 steps", name);
        if (c0 != STEPS || c1 != STEPS)
            TEST_FAIL_("%s: device step counts %d and %d, expected %d", name, c0, c1, STEPS);
        printf("  %s: bitwise equal (loss %.6f -> %.6f)\n", name, (double)l0[0],
               (double)l0[STEPS - 1]);
    }
    release(mark);
}

/* ---- main ------------------------------------------------------------------------------ */

int main(void)
{
    /* Under compute-sanitizer (meson's memcheck/racecheck/initcheck setups set
     * this) kernels run far slower: B = 32 is left out. */
    const int sanitizer = under_sanitizer(NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    require_gpu();
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    if (prop.major < 9) {
        printf("SKIP: %s is sm_%d%d; the W-mlp kernels need sm_90 (clusters, PDL)\n", prop.name,
               prop.major, prop.minor);
        return TEST_SKIP;
    }
    printf("test_mlp_kernels on %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
           prop.multiProcessorCount);
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreate(&stream));
    CUDA_OK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));
    CUDA_OK(cudaEventCreateWithFlags(&ev_fork, cudaEventDisableTiming));
    CUDA_OK(cudaEventCreateWithFlags(&ev_join, cudaEventDisableTiming));
    CUBLAS_OK(cublasCreate(&blas));
    CUBLAS_OK(cublasSetStream(blas, stream));
    /* An explicit workspace (after SetStream, which resets it), so capture
     * never needs cuBLAS to allocate, and eager and captured steps pick the
     * same kernels. */
    const size_t ws_bytes = 32u << 20;
    void *ws = dmalloc(ws_bytes);
    CUBLAS_OK(cublasSetWorkspace(blas, ws, ws_bytes));

    rng r = rng_make(SEED);
    printf("(a) kernels vs fp64 reference\n");
    test_elementwise(&r);
    test_linear_fwd(&r);
    test_linear_fwd_chain(&r);
    test_softmax(&r);
    test_softmax_masked(&r);
    test_gemv_bwd(&r);
    test_outer_acc(&r);
    test_bias_grad(&r);
    test_adamw(&r);

    /*
     * B, the real rows T of a padded batch (0: none; cgr's dynamic dims),
     * small_max (0: the cuBLAS backward at that batch). B = 32 is left out
     * under a sanitizer.
     */
    static const int trains[][3] = {{1, 0, MLP_SMALL_B_MAX}, {8, 0, MLP_SMALL_B_MAX}, {8, 0, 0},
                                    {32, 0, MLP_SMALL_B_MAX}, {8, 5, MLP_SMALL_B_MAX}, {8, 3, 0},
                                    {32, 27, MLP_SMALL_B_MAX}};
    printf("(b) 3 training steps vs fp64 reference\n");
    for (size_t i = 0; i < sizeof trains / sizeof trains[0]; i++)
        if (!sanitizer || trains[i][0] < 32)
            test_train_rows(trains[i][0], trains[i][1], trains[i][2]);

    /* B and, for a padded batch in one graph, the real rows of each of its 5 steps. */
    static const int64_t t8[5] = {5, 3, 8, 1, 7}, t32[5] = {27, 17, 32, 9, 20};
    static const struct {
        int B;
        const int64_t *tseq;
    } bitwise[] = {{1, NULL}, {8, NULL}, {32, NULL}, {8, t8}, {32, t32}};
    printf("(c-e) bitwise: rerun, pdl, graph replay\n");
    for (size_t i = 0; i < sizeof bitwise / sizeof bitwise[0]; i++)
        if (!sanitizer || bitwise[i].B < 32)
            test_bitwise_rows(bitwise[i].B, MLP_SMALL_B_MAX, bitwise[i].tseq);
    if (sanitizer)
        printf("under a sanitizer (CGR_TEST_SANITIZER): B = 32 left out\n");

    CUBLAS_OK(cublasDestroy(blas));
    release(0); /* the workspace */
    CUDA_OK(cudaStreamDestroy(stream));
    CUDA_OK(cudaStreamDestroy(side_stream));
    CUDA_OK(cudaEventDestroy(ev_fork));
    CUDA_OK(cudaEventDestroy(ev_join));
    printf("PASS\n");
    return 0;
}
