/*
 * Steps that cannot be captured: each fails its capture with a message
 * naming the CUDA error and the likely cause (kept in the step's stats),
 * while the run whose capture failed executes eagerly with correct results,
 * and the step keeps running eagerly after it; a good step on the same
 * runtime still captures and replays afterwards. A step function that
 * fails only while captured fails its run (CGR_STATUS_STEP_FAILED). A step
 * whose kernel launch fails and which returns OK anyway fails its run
 * (CGR_STATUS_CUDA_ERROR), naming the error, instead of reporting stale
 * outputs as a success; one whose launch fails only while captured fails
 * that capture, and the run executes eagerly.
 */
#include <string.h>

#include "common.h"
#include "kernels.h"

enum { LEN = 1024 };

typedef enum bad_kind {
    GOOD, BAD_MALLOC, BAD_SYNC, BAD_HOST_READ, BAD_RETURN, BAD_LAUNCH, BAD_LAUNCH_IN_CAPTURE
} bad_kind;

typedef struct bad_step {
    bad_kind kind;
    int calls;
    cudaError_t launch_err; /* BAD_LAUNCH: what the failed launch returned */
} bad_step;

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    bad_step *b = user;
    b->calls++;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(tk_affine(y, x, LEN, st));
    switch (b->kind) {
    case GOOD:
        break;
    case BAD_MALLOC: {
        void *p = NULL;
        /* Legal eagerly, illegal in capture. Ignore the error like careless code would. */
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            (void)cudaFree(p);
        break;
    }
    case BAD_SYNC:
        (void)cudaStreamSynchronize(st);
        break;
    case BAD_HOST_READ: {
        float host[4];
        /* A synchronous copy on the legacy stream to look at a result. */
        (void)cudaMemcpy(host, y, sizeof host, cudaMemcpyDeviceToHost);
        break;
    }
    case BAD_RETURN:
        if (cgr_ctx_is_capturing(ctx))
            return CGR_STATUS_INVALID_ARGUMENT;
        break;
    case BAD_LAUNCH_IN_CAPTURE:
        if (!cgr_ctx_is_capturing(ctx))
            break;
        /* fall through */
    case BAD_LAUNCH: {
        /* 2048 threads a block is past every GPU's limit; careless code ignores the error. */
        size_t n = LEN;
        void *args[] = {&y, &x, &n};
        const dim3 grid = {1, 1, 1}, block = {2048, 1, 1};
        b->launch_err = cudaLaunchKernel(tk_affine_pdl_kernel(), grid, block, args, 0, st);
        break;
    }
    }
    return CGR_STATUS_OK;
}

/* Runs once with fresh input and checks y = 2x + 1 exactly. */
static cgr_status run_checked(cgr_step *s, rng *r)
{
    static float x[LEN];
    rng_fill(r, x, LEN);
    const void *ins[1] = {x};
    uint64_t t;
    cgr_status st = cgr_step_run(s, NULL, ins, &t);
    if (st != CGR_STATUS_OK)
        return st;
    ASSERT_OK(cgr_step_wait(s, t));
    const float *y;
    y = test_output(s, t, 0, NULL);
    check_affine(x, y, LEN, 1, "run %llu", (unsigned long long)t);
    return CGR_STATUS_OK;
}

static void expect_capture_failure(cgr_runtime *rt, bad_kind kind, const char *name,
                                   const char *want_error, const char *want_hint, rng *r)
{
    bad_step b = {kind, 0, cudaSuccess};
    cgr_step *s = make_xy(rt, name, LEN, step_fn, &b);
    ASSERT_OK(run_checked(s, r)); /* warm-up 1 */
    ASSERT_OK(run_checked(s, r)); /* warm-up 2 */
    cgr_step_stats ss;
    char msg[1024];
    if (kind == BAD_RETURN) {
        ASSERT_STATUS(run_checked(s, r), CGR_STATUS_STEP_FAILED);
        snprintf(msg, sizeof msg, "%s", cgr_last_error());
        ASSERT_OK(cgr_step_get_stats(s, &ss));
    } else {
        /* The capture fails, but the run is not lost: run_checked checks its outputs. */
        ASSERT_OK(run_checked(s, r));
        ASSERT_EQ(b.calls, 4); /* 2 warm-ups, the capture, the same run again eagerly */
        ASSERT_OK(cgr_step_get_stats(s, &ss));
        snprintf(msg, sizeof msg, "%s", ss.capture_error);
    }
    printf("%s: %s\n", name, msg);
    /* The launch's own error leads the message, whatever this driver calls it. */
    if (kind == BAD_LAUNCH_IN_CAPTURE && !strstr(msg, cudaGetErrorName(b.launch_err)))
        TEST_FAIL_("message lacks %s: %s", cudaGetErrorName(b.launch_err), msg);
    if (want_error && !strstr(msg, want_error))
        TEST_FAIL_("message lacks \"%s\": %s", want_error, msg);
    if (want_hint && !strstr(msg, want_hint))
        TEST_FAIL_("message lacks \"%s\": %s", want_hint, msg);
    if (kind == BAD_RETURN) {
        /* A failing step is not a capture failure: it is tried again. */
        ASSERT_EQ(ss.mode, CGR_MODE_WARMUP);
        ASSERT_STATUS(run_checked(s, r), CGR_STATUS_STEP_FAILED);
    } else {
        ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
        ASSERT_U64_EQ(ss.capture_failures, 1);
        ASSERT(strstr(ss.capture_error, "capture of step") != NULL);
        /* The capture run counts once, as an eager run for that reason. */
        ASSERT_U64_EQ(ss.runs, 3);
        ASSERT_U64_EQ(ss.eager_by_reason[CGR_EAGER_CAPTURE_FAILED], 1);
        /* From now on it runs eagerly, with correct results. */
        for (int i = 0; i < 3; i++)
            ASSERT_OK(run_checked(s, r));
        ASSERT_OK(cgr_step_get_stats(s, &ss));
        ASSERT_U64_EQ(ss.eager_runs, 4);
        ASSERT_U64_EQ(ss.replays, 0);
    }
    /* The stream is out of capture mode and usable. */
    cgr_stream st;
    ASSERT_OK(cgr_runtime_stream(rt, &st));
    enum cudaStreamCaptureStatus cs;
    CUDA_OK(cudaStreamIsCapturing(st, &cs));
    ASSERT_EQ(cs, cudaStreamCaptureStatusNone);
    CUDA_OK(cudaGetLastError());
    ASSERT_OK(cgr_step_destroy(&s));
}

/* A launch that fails inside the step: every run fails with the error, none reports success. */
static void expect_launch_failure(cgr_runtime *rt, rng *r)
{
    bad_step b = {BAD_LAUNCH, 0, cudaSuccess};
    cgr_step *s = make_xy(rt, "bad_launch", LEN, step_fn, &b);
    for (int i = 0; i < 3; i++) {
        ASSERT_STATUS(run_checked(s, r), CGR_STATUS_CUDA_ERROR);
        ASSERT(b.launch_err != cudaSuccess);
        if (!strstr(cgr_last_error(), cudaGetErrorName(b.launch_err)) ||
            !strstr(cgr_last_error(), "bad_launch"))
            TEST_FAIL_("message lacks the step or %s: %s", cudaGetErrorName(b.launch_err),
                       cgr_last_error());
    }
    printf("bad_launch: %s\n", cgr_last_error());
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_U64_EQ(ss.runs, 0);
    ASSERT_U64_EQ(ss.replays, 0);
    ASSERT_EQ(b.calls, 3);
    /* cgr read the error: none is left pending for the caller's next CUDA call. */
    CUDA_OK(cudaGetLastError());
    ASSERT_OK(cgr_step_destroy(&s));
}

static void expect_good(cgr_runtime *rt, rng *r)
{
    bad_step b = {GOOD, 0, cudaSuccess};
    cgr_step *s = make_xy(rt, "good", LEN, step_fn, &b);
    for (int i = 0; i < 10; i++)
        ASSERT_OK(run_checked(s, r));
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.replays, 8);
    ASSERT_EQ(b.calls, 4); /* 2 warm-ups, the capture, its frozen-value check */
    ASSERT_OK(cgr_step_destroy(&s));
}

int main(void)
{
    require_gpu();
    rng r = {42};
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));
    expect_good(rt, &r);
    expect_capture_failure(rt, BAD_MALLOC, "bad_malloc", "cudaErrorStreamCapture", "cudaMalloc",
                           &r);
    expect_good(rt, &r);
    expect_capture_failure(rt, BAD_SYNC, "bad_sync", "cudaErrorStreamCapture",
                           "cudaStreamSynchronize", &r);
    expect_good(rt, &r);
    expect_capture_failure(rt, BAD_HOST_READ, "bad_host_read", "cudaErrorStreamCapture",
                           "cudaMemcpy", &r);
    expect_good(rt, &r);
    expect_capture_failure(rt, BAD_RETURN, "bad_return", "returned CGR_STATUS_INVALID_ARGUMENT",
                           NULL, &r);
    expect_good(rt, &r);
    expect_launch_failure(rt, &r);
    expect_good(rt, &r);
    /* A launch that fails only while captured invalidates the capture: the run goes eagerly. */
    expect_capture_failure(rt, BAD_LAUNCH_IN_CAPTURE, "bad_launch_in_capture",
                           "cudaErrorStreamCaptureInvalidated", "failed during capture", &r);
    expect_good(rt, &r);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS\n");
    return 0;
}
