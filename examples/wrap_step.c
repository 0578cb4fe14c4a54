/*
 * Wrapping an existing step: a program already has a function that
 * enqueues its kernels on a stream (legacy_features, legacy.cu). To run it
 * through cgr, the step function passes it cgr's stream, the step's input
 * and output buffers, and scratch from cgr_ctx_alloc instead of its own
 * cudaMalloc'd buffers; the function itself does not change. Inputs go in
 * through a pinned staging slot (cgr_step_acquire, then written in place,
 * then cgr_step_launch), and the output comes back the same way.
 *
 * Each run is checked bit for bit against the same function run the old
 * way, on its own stream with its own buffers and copies.
 *
 * Exit status: 0 when every check passed, 77 without a usable GPU, 1 on a
 * failure.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cgr/cgr.h>

#include "legacy.h"

enum { ROWS = 512, COLS = 96, RUNS = 50 };

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

/* The step function: the existing call, with everything it needs from cgr. */
static cgr_status wrapped(cgr_ctx *ctx, void *user)
{
    const float *scale = user; /* persistent device memory */
    cgr_stream stream;
    float *x, *y, *t;
    cgr_status s;
    if ((s = cgr_ctx_stream(ctx, &stream)) || (s = cgr_ctx_input(ctx, 0, (void **)&x)) ||
        (s = cgr_ctx_output(ctx, 0, (void **)&y)) ||
        (s = cgr_ctx_alloc(ctx, (size_t)ROWS * COLS * sizeof(float), (void **)&t)))
        return s;
    /* cgr_stream is the cudaStream_t the kernels are captured from. */
    return legacy_features(x, scale, t, y, ROWS, COLS, stream) == cudaSuccess
               ? CGR_STATUS_OK
               : CGR_STATUS_CUDA_ERROR;
}

/* The program before cgr: its own buffers, copies and stream (the reference). */
typedef struct old_way {
    cudaStream_t stream;
    float *x, *t, *y;
} old_way;

static cudaError_t old_run(const old_way *o, const float *scale, const float *x, float *y)
{
    cudaError_t e = cudaMemcpyAsync(o->x, x, (size_t)ROWS * COLS * sizeof(float),
                                    cudaMemcpyHostToDevice, o->stream);
    if (e == cudaSuccess)
        e = legacy_features(o->x, scale, o->t, o->y, ROWS, COLS, o->stream);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(y, o->y, ROWS * sizeof(float), cudaMemcpyDeviceToHost, o->stream);
    return e == cudaSuccess ? cudaStreamSynchronize(o->stream) : e;
}

static float uniform(void)
{
    static uint64_t s = 0x853c49e6748fea9bull;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (float)(s >> 40) / 8388608.0f - 1.0f;
}

int main(void)
{
    cgr_runtime *rt;
    cgr_status st = cgr_runtime_create(&rt, NULL);
    if (st == CGR_STATUS_NO_DEVICE)
        return printf("skipped: %s\n", cgr_last_error()), 77;
    CHECK(st);
    static float scale_host[COLS];
    for (int c = 0; c < COLS; c++)
        scale_host[c] = 2.0f * uniform();
    float *scale;
    CHECK(cgr_persistent_alloc(rt, sizeof scale_host, (void **)&scale));
    CHECK_CUDA(cudaMemcpy(scale, scale_host, sizeof scale_host, cudaMemcpyHostToDevice));

    cgr_tensor_desc in = {.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2, .dims = {ROWS, COLS}};
    cgr_tensor_desc out = {.name = "y", .dtype = CGR_DTYPE_F32, .rank = 1, .dims = {ROWS}};
    cgr_step_desc d;
    CHECK(cgr_step_desc_init(&d));
    d.name = "legacy_features";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = wrapped;
    d.user = scale;
    cgr_step *step;
    CHECK(cgr_step_create(rt, &d, &step));

    old_way o;
    CHECK_CUDA(cudaStreamCreate(&o.stream));
    CHECK_CUDA(cudaMalloc((void **)&o.x, (size_t)ROWS * COLS * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&o.t, (size_t)ROWS * COLS * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&o.y, ROWS * sizeof(float)));

    static float y_cgr[ROWS], y_old[ROWS];
    for (int k = 0; k < RUNS; k++) {
        cgr_slot slot;
        CHECK(cgr_step_acquire(step, NULL, 0, &slot));
        /* Fill the input right in its pinned slot: no copy on the host. */
        float *x = slot.inputs[0];
        for (int i = 0; i < ROWS * COLS; i++)
            x[i] = uniform();
        CHECK_CUDA(old_run(&o, scale, x, y_old)); /* the reference, before the slot is launched */
        CHECK(cgr_step_launch(step, &slot));
        CHECK(cgr_step_wait(step, slot.ticket));
        CHECK(cgr_step_output(step, slot.ticket, 0, y_cgr, sizeof y_cgr, NULL));
        for (int r = 0; r < ROWS; r++)
            if (memcmp(&y_cgr[r], &y_old[r], sizeof(float)) != 0)
                return fprintf(stderr, "run %d: y[%d] = %.9g through cgr, %.9g the old way\n", k,
                               r, y_cgr[r], y_old[r]), 1;
    }
    cgr_step_stats ss;
    CHECK(cgr_step_get_stats(step, &ss));
    printf("%d runs bitwise equal to the old way (y[0] = %.6g on the last); %llu graph "
           "replays, %llu graph nodes, %llu scratch bytes planned\n", RUNS, y_cgr[0],
           (unsigned long long)ss.replays, (unsigned long long)ss.graph_nodes,
           (unsigned long long)ss.scratch_peak);
    CHECK_CUDA(cudaFree(o.x));
    CHECK_CUDA(cudaFree(o.t));
    CHECK_CUDA(cudaFree(o.y));
    CHECK_CUDA(cudaStreamDestroy(o.stream));
    CHECK(cgr_runtime_destroy(&rt));
    return ss.replays == RUNS - 2 ? 0 : 1;
}
