/*
 * A serving loop: requests of 1 to 64 rows through one step with a dynamic
 * batch dim, each run armed (CGR_ACQUIRE_ARM).
 *
 * The batch is rounded up to a bucket (1, 2, 4, ..., 64), the input is padded
 * to it, and each bucket gets its own graph after its warm-up runs; the
 * output comes back at the request's true size, in the slot, where this
 * loop reads it without a copy. Once a bucket has a graph,
 * acquiring a slot with CGR_ACQUIRE_ARM launches that graph at once, and it
 * waits on the GPU while the host writes the request's rows into the slot;
 * cgr_step_launch is then a single store to pinned memory. Every response is
 * checked against the CPU.
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

enum { MAXB = 64, K = 128, M = 64, REQUESTS = 400 };

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
    float *w, *b, *ones; /* W[K][M] row-major, b[M], MAXB ones; persistent device memory */
} model;

/*
 * y[rows][M] = x[rows][K] W + b for the run's bucket of rows. In cuBLAS's
 * column-major view that is y^T = W^T x^T, then b ones^T added by a rank-1
 * update. The padding rows (zeros) are computed too and dropped by cgr; a
 * step whose kernels must skip them reads the true batch from cgr_ctx_dim's
 * device pointer.
 */
static cgr_status serve_step(cgr_ctx *ctx, void *user)
{
    const model *m = user;
    cublasHandle_t h;
    float *x, *y;
    int64_t rows;
    cgr_status s;
    if ((s = cgr_ctx_cublas(ctx, &h)) || (s = cgr_ctx_input(ctx, 0, (void **)&x)) ||
        (s = cgr_ctx_output(ctx, 0, (void **)&y)) || (s = cgr_ctx_dim(ctx, 0, &rows, NULL, NULL)))
        return s;
    const float one = 1.0f, zero = 0.0f;
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, M, (int)rows, K, &one, m->w, M, x, K, &zero, y,
                    M) ||
        cublasSger(h, M, (int)rows, &one, m->b, 1, m->ones, 1, y, M))
        return CGR_STATUS_CUBLAS_ERROR;
    return CGR_STATUS_OK;
}

static uint64_t next(void)
{
    static uint64_t s = 0x2545f4914f6cdd1dull;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return s;
}

/* Uniform in [-1, 1). */
static float uniform(void)
{
    return (float)(next() >> 40) / 8388608.0f - 1.0f;
}

int main(void)
{
    cgr_runtime *rt;
    cgr_status st = cgr_runtime_create(&rt, NULL);
    if (st == CGR_STATUS_NO_DEVICE)
        return printf("skipped: %s\n", cgr_last_error()), 77;
    CHECK(st);
    static float w[K * M], b[M], ones[MAXB];
    for (int i = 0; i < K * M; i++)
        w[i] = uniform();
    for (int j = 0; j < M; j++)
        b[j] = uniform();
    for (int i = 0; i < MAXB; i++)
        ones[i] = 1.0f;
    model m;
    CHECK(cgr_persistent_alloc(rt, sizeof w, (void **)&m.w));
    CHECK(cgr_persistent_alloc(rt, sizeof b, (void **)&m.b));
    CHECK(cgr_persistent_alloc(rt, sizeof ones, (void **)&m.ones));
    CHECK_CUDA(cudaMemcpy(m.w, w, sizeof w, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(m.b, b, sizeof b, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(m.ones, ones, sizeof ones, cudaMemcpyHostToDevice));

    /* Tensors are declared at their largest shape; dim 0 of x and y is the batch. */
    static const int64_t buckets[] = {1, 2, 4, 8, 16, 32, 64};
    cgr_dyn_dim batch = {.name = "batch", .buckets = buckets, .n_buckets = 7, .max = MAXB};
    cgr_dim_use uses[2] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0}};
    cgr_tensor_desc in = {.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2, .dims = {MAXB, K}};
    cgr_tensor_desc out = {.name = "y", .dtype = CGR_DTYPE_F32, .rank = 2, .dims = {MAXB, M}};
    cgr_step_desc d;
    CHECK(cgr_step_desc_init(&d));
    d.name = "serve";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = serve_step;
    d.user = &m;
    d.dyn_dims = &batch;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    d.armable = 1; /* its graphs begin with the gate CGR_ACQUIRE_ARM waits at */
    cgr_step *step;
    CHECK(cgr_step_create(rt, &d, &step));

    static float x[MAXB * K];
    uint64_t armed = 0, by_action[5] = {0};
    double worst = 0;
    for (int q = 0; q < REQUESTS; q++) {
        /* Mostly small requests, now and then a large one. */
        int64_t rows = next() % 4 ? 1 + (int64_t)(next() % 8) : 1 + (int64_t)(next() % MAXB);
        for (int i = 0; i < rows * K; i++)
            x[i] = uniform();
        cgr_slot slot;
        /* A bucket with a graph: launched now, held at its gate. */
        CHECK(cgr_step_acquire(step, &rows, CGR_ACQUIRE_ARM, &slot));
        /* Packed at the true shape; cgr pads it to the bucket. */
        CHECK(cgr_step_write_input(step, &slot, 0, 0, x, (size_t)rows * K * sizeof(float)));
        CHECK(cgr_step_launch(step, &slot)); /* armed: opens the gate */
        CHECK(cgr_step_wait(step, slot.ticket));
        /* One thread drives this step, so it reads the output in place in the slot. */
        const float *y = slot.outputs[0];
        size_t bytes;
        CHECK(cgr_step_output(step, slot.ticket, 0, NULL, 0, &bytes));
        if (bytes != (size_t)rows * M * sizeof(float))
            return fprintf(stderr, "request %d: %zu output bytes for %lld rows\n", q, bytes,
                           (long long)rows), 1;
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < M; j++) {
                double want = b[j], mag = fabs(b[j]);
                for (int k = 0; k < K; k++) {
                    want += (double)x[r * K + k] * w[k * M + j];
                    mag += fabs((double)x[r * K + k] * w[k * M + j]);
                }
                const double err = fabs(y[r * M + j] - want) / mag;
                worst = err > worst ? err : worst;
                if (err > 2e-5)
                    return fprintf(stderr, "request %d (%lld rows): y[%d][%d] = %.7g, the CPU's "
                                   "%.7g\n", q, (long long)rows, r, j, y[r * M + j], want), 1;
            }
        cgr_run_action a;
        CHECK(cgr_step_run_action(step, slot.ticket, &a));
        by_action[a]++;
        armed += (uint64_t)slot.armed;
    }
    cgr_step_stats ss;
    CHECK(cgr_step_get_stats(step, &ss));
    printf("%d requests of 1..%d rows: %llu warm-up runs, %llu captures, %llu replays of which "
           "%llu armed; %u graphs cached; largest error %.1e of the CPU's sum\n", REQUESTS, MAXB,
           (unsigned long long)by_action[CGR_RUN_WARMUP],
           (unsigned long long)(by_action[CGR_RUN_CAPTURE] + by_action[CGR_RUN_UPDATE]),
           (unsigned long long)(by_action[CGR_RUN_REPLAY] + by_action[CGR_RUN_CAPTURE] +
                                by_action[CGR_RUN_UPDATE]),
           (unsigned long long)armed, (unsigned)ss.entries, worst);
    CHECK(cgr_runtime_destroy(&rt));
    /* Every bucket warms up and captures once; nearly every later request is armed. */
    return by_action[CGR_RUN_EAGER] == 0 && armed >= REQUESTS / 2 && armed == ss.armed_runs ? 0
                                                                                            : 1;
}
