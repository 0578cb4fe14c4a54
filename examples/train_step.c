/*
 * A fixed-shape training step: linear regression trained by SGD, one
 * cgr_step_run per step. The step function enqueues cuBLAS calls on cgr's
 * stream. cgr runs it eagerly twice (warm-up), captures it into a CUDA graph
 * on the third run and replays that graph from then on. Each step takes a
 * fresh batch (x, y) and gives back the batch's loss; the weights live in
 * persistent device memory, updated in place by the graph. The losses and
 * the final weights are checked against the same training on the CPU.
 *
 * Exit status: 0 when every check passed, 77 without a usable GPU, 1 on a
 * failure.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cgr/cgr.h>

enum { B = 64, D = 256, STEPS = 200 };
#define LR 0.1f

/* On a failed call: say which and why, and leave main with status 1. */
#define CHECK(call)                                                                \
    do {                                                                           \
        cgr_status s_ = (call);                                                    \
        if (s_ != CGR_STATUS_OK)                                                   \
            return fprintf(stderr, "%s: %s\n", #call, cgr_last_error()), 1;       \
    } while (0)
#define CHECK_CUDA(call)                                                           \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess)                                                     \
            return fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)), 1;  \
    } while (0)

typedef struct model {
    float *w; /* D weights in persistent device memory */
} model;

/*
 * One SGD step: r = x w - y, loss = |r|^2 / 2B, w -= LR/B x^T r. x is
 * row-major [B][D], which column-major cuBLAS sees as D x B (leading
 * dimension D). Only enqueues work on cgr's stream: no sync, no cudaMalloc
 * (the scratch r comes from cgr_ctx_alloc), no reading results on the host.
 */
static cgr_status train_step(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cublasHandle_t h;
    float *x, *y, *loss, *r;
    cgr_status s;
    if ((s = cgr_ctx_cublas(ctx, &h)) || (s = cgr_ctx_input(ctx, 0, (void **)&x)) ||
        (s = cgr_ctx_input(ctx, 1, (void **)&y)) || (s = cgr_ctx_output(ctx, 0, (void **)&loss)) ||
        (s = cgr_ctx_alloc(ctx, B * sizeof(float), (void **)&r)))
        return s;
    const float one = 1.0f, zero = 0.0f, minus_one = -1.0f, half_mean = 0.5f / B, lr = -LR / B;
    if (cublasSgemv(h, CUBLAS_OP_T, D, B, &one, x, D, m->w, 1, &zero, r, 1) || /* r = x w */
        cublasSaxpy(h, B, &minus_one, y, 1, r, 1) ||                         /* r -= y */
        cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE) ||               /* the dot's result */
        cublasSdot(h, B, r, 1, r, 1, loss) ||                                /* stays on the GPU */
        cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST) ||
        cublasSscal(h, 1, &half_mean, loss, 1) ||
        cublasSgemv(h, CUBLAS_OP_N, D, B, &lr, x, D, r, 1, &one, m->w, 1))   /* w += lr x^T r */
        return CGR_STATUS_CUBLAS_ERROR;
    return CGR_STATUS_OK;
}

/* Uniform in [-1, 1) from a fixed seed (xorshift64). */
static float uniform(void)
{
    static uint64_t s = 0x9e3779b97f4a7c15ull;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (float)(s >> 40) / 8388608.0f - 1.0f;
}

/* The same step on the CPU, in double; returns the loss. */
static double cpu_step(double *w, const float *x, const float *y)
{
    double r[B], loss = 0;
    for (int i = 0; i < B; i++) {
        r[i] = -y[i];
        for (int j = 0; j < D; j++)
            r[i] += (double)x[i * D + j] * w[j];
        loss += r[i] * r[i] / (2.0 * B);
    }
    for (int j = 0; j < D; j++)
        for (int i = 0; i < B; i++)
            w[j] -= (double)LR / B * x[i * D + j] * r[i];
    return loss;
}

int main(void)
{
    cgr_runtime *rt;
    cgr_status st = cgr_runtime_create(&rt, NULL); /* device 0, default options */
    if (st == CGR_STATUS_NO_DEVICE)
        return printf("skipped: %s\n", cgr_last_error()), 77;
    CHECK(st);
    model m;
    CHECK(cgr_persistent_alloc(rt, D * sizeof(float), (void **)&m.w));
    CHECK_CUDA(cudaMemset(m.w, 0, D * sizeof(float))); /* training starts from w = 0 */

    cgr_tensor_desc in[2] = {{.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2, .dims = {B, D}},
                             {.name = "y", .dtype = CGR_DTYPE_F32, .rank = 1, .dims = {B}}};
    cgr_tensor_desc out = {.name = "loss", .dtype = CGR_DTYPE_F32, .rank = 0}; /* a scalar */
    cgr_step_desc d;
    CHECK(cgr_step_desc_init(&d));
    d.name = "sgd";
    d.inputs = in;
    d.n_inputs = 2;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = train_step;
    d.user = &m;
    cgr_step *step;
    CHECK(cgr_step_create(rt, &d, &step));

    static float x[B * D], y[B], w_true[D], w_gpu[D];
    static double w_cpu[D]; /* the CPU's run of the same training, from w = 0 */
    for (int j = 0; j < D; j++)
        w_true[j] = uniform();
    double first = 0, last = 0, worst = 0;
    for (int k = 0; k < STEPS; k++) {
        /* A fresh batch: y = x w_true + noise. */
        for (int i = 0; i < B; i++) {
            y[i] = 0.05f * uniform();
            for (int j = 0; j < D; j++) {
                x[i * D + j] = uniform();
                y[i] += x[i * D + j] * w_true[j];
            }
        }
        const void *inputs[] = {x, y};
        uint64_t ticket;
        float loss;
        /* Copies x and y into a pinned slot and launches (runs 1-2: warm-up, 3: capture). */
        CHECK(cgr_step_run(step, NULL, inputs, &ticket));
        CHECK(cgr_step_wait(step, ticket));
        CHECK(cgr_step_output(step, ticket, 0, &loss, sizeof loss, NULL));
        const double want = cpu_step(w_cpu, x, y);
        const double err = fabs(loss - want) / want;
        worst = err > worst ? err : worst;
        if (err > 1e-3)
            return fprintf(stderr, "step %d: loss %.7g, the CPU's %.7g\n", k, loss, want), 1;
        first = k == 0 ? loss : first;
        last = loss;
    }
    CHECK_CUDA(cudaMemcpy(w_gpu, m.w, sizeof w_gpu, cudaMemcpyDeviceToHost));
    double w_err = 0;
    for (int j = 0; j < D; j++)
        w_err = fmax(w_err, fabs(w_gpu[j] - w_cpu[j]));
    cgr_step_stats ss;
    CHECK(cgr_step_get_stats(step, &ss));
    printf("%d steps: loss %.4g -> %.4g (within %.1e of the CPU's), weights within %.1e; "
           "%llu graph replays, %llu capture\n", STEPS, first, last, worst, w_err,
           (unsigned long long)ss.replays, (unsigned long long)ss.captures);
    CHECK(cgr_runtime_destroy(&rt)); /* destroys the step too */
    /* One capture; every run after the 2 warm-ups replayed it, but for the
     * eager half of a profile window when CGR_PROFILE is set. */
    const int ok = w_err < 1e-3 && last < first / 100 && ss.captures == 1 &&
                   ss.replays + ss.eager_runs == STEPS - 2;
    return ok ? 0 : 1;
}
