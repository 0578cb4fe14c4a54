/* The README's example, kept compiling and passing as a gpu test. */
#include <stdio.h>

#include <cublas_v2.h>
#include <cgr/cgr.h>

enum { N = 1024 };

typedef struct model {
    float *w, *b; /* persistent weights: W[N,N] (column-major), b[N] */
} model;

/* y = W x + b. Enqueues work on cgr's stream and does nothing else. */
static cgr_status step(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cublasHandle_t h;
    float *x, *y, *tmp;
    cgr_status s;
    if ((s = cgr_ctx_cublas(ctx, &h)) || (s = cgr_ctx_input(ctx, 0, (void **)&x)) ||
        (s = cgr_ctx_output(ctx, 0, (void **)&y)) ||
        (s = cgr_ctx_alloc(ctx, N * sizeof(float), (void **)&tmp)))
        return s;
    const float one = 1.0f, zero = 0.0f;
    if (cublasSgemv(h, CUBLAS_OP_N, N, N, &one, m->w, N, x, 1, &zero, tmp, 1) ||
        cublasScopy(h, N, m->b, 1, y, 1) || cublasSaxpy(h, N, &one, tmp, 1, y, 1))
        return CGR_STATUS_CUBLAS_ERROR;
    return CGR_STATUS_OK;
}

int main(void)
{
    cgr_runtime *rt;
    cgr_status s = cgr_runtime_create(&rt, NULL); /* device 0, defaults */
    if (s == CGR_STATUS_NO_DEVICE)
        return 77; /* skip: no GPU */
    if (s) {
        fprintf(stderr, "%s: %s\n", cgr_status_name(s), cgr_last_error());
        return 1;
    }
    model m;
    cgr_persistent_alloc(rt, (size_t)N * N * sizeof(float), (void **)&m.w);
    cgr_persistent_alloc(rt, N * sizeof(float), (void **)&m.b);
    static float w[N * N]; /* W = 2 I, so y = 2 x + b exactly */
    float bias[N];
    for (int i = 0; i < N; i++) {
        w[(size_t)i * N + i] = 2.0f;
        bias[i] = (float)i;
    }
    cudaMemcpy(m.w, w, sizeof w, cudaMemcpyHostToDevice);
    cudaMemcpy(m.b, bias, sizeof bias, cudaMemcpyHostToDevice);

    cgr_tensor_desc in = {.name = "x", .dtype = CGR_DTYPE_F32, .rank = 1, .dims = {N}};
    cgr_tensor_desc out = {.name = "y", .dtype = CGR_DTYPE_F32, .rank = 1, .dims = {N}};
    cgr_step_desc d;
    cgr_step_desc_init(&d);
    d.name = "affine";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = step;
    d.user = &m;
    cgr_step *st;
    if ((s = cgr_step_create(rt, &d, &st)))
        return fprintf(stderr, "%s\n", cgr_last_error()), 1;

    float x[N];
    for (int k = 0; k < 100; k++) {
        for (int i = 0; i < N; i++)
            x[i] = (float)((k * 7919 + i * 104729) % 2003) - 1001.5f; /* new input each run */
        const void *inputs[] = {x};
        uint64_t ticket;
        static float y[N];
        /* Runs 1-2 are eager warm-ups, run 3 captures, the rest replay. */
        if ((s = cgr_step_run(st, NULL, inputs, &ticket)) || (s = cgr_step_wait(st, ticket)) ||
            (s = cgr_step_output(st, ticket, 0, y, sizeof y, NULL)))
            return fprintf(stderr, "%s\n", cgr_last_error()), 1;
        for (int i = 0; i < N; i++)
            if (y[i] != 2.0f * x[i] + (float)i)
                return fprintf(stderr, "y[%d] = %g, expected %g\n", i, y[i], 2 * x[i] + i), 1;
    }
    cgr_step_stats ss;
    cgr_step_get_stats(st, &ss);
    printf("replays %llu, captures %llu, capture %.0f us\n", (unsigned long long)ss.replays,
           (unsigned long long)ss.captures, ss.capture_us);
    cgr_runtime_destroy(&rt); /* also destroys the step */
    return ss.replays == 98 ? 0 : 1;
}
