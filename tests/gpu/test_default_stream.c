/*
 * Steps written without streams: their memset and kernel go to "stream 0".
 *
 * Built with nvcc --default-stream per-thread, stream 0 is the calling
 * thread's default stream, which cgr forks off its own stream and joins
 * back around every call of the step function. Such a step is captured
 * unmodified: its graph holds both operations, and every replay computes
 * its own run's output (checked bitwise against the host, and the same as
 * the eager runs before it).
 *
 * Built without it, stream 0 is the legacy default stream, which a
 * capture cannot hold: the capture fails, the run executes eagerly with a
 * correct output, and the message says to build with --default-stream
 * per-thread.
 */
#include <string.h>

#include "common.h"
#include "stream_kernels.h"

enum { LEN = 8192, RUNS = 10 };

typedef struct streamless {
    int per_thread;
    int calls;
} streamless;

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    streamless *u = user;
    u->calls++;
    float *x, *y, *tmp;
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_alloc(ctx, LEN * sizeof(float), (void **)&tmp));
    STEP_CUDA(u->per_thread ? sk_per_thread(y, x, tmp, LEN) : sk_legacy(y, x, tmp, LEN));
    STEP_TRY(cgr_ctx_free(ctx, tmp));
    return CGR_STATUS_OK;
}

/* RUNS runs with fresh inputs; every output must be 2x + 1 exactly. */
static void run_all(cgr_step *s, rng *r, cgr_run_action *actions)
{
    static float x[LEN], y[LEN];
    for (int k = 0; k < RUNS; k++) {
        rng_fill(r, x, LEN);
        const void *ins[1] = {x};
        uint64_t t;
        ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(s, t));
        ASSERT_OK(cgr_step_run_action(s, t, &actions[k]));
        ASSERT_OK(cgr_step_output(s, t, 0, y, sizeof y, NULL));
        check_affine(x, y, LEN, 1, "run %d (%s)", k, cgr_run_action_name(actions[k]));
    }
}

int main(void)
{
    require_gpu();
    rng r = {11};
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));
    cgr_run_action a[RUNS];

    streamless pt = {1, 0};
    cgr_step *s = make_xy(rt, "per_thread", LEN, step_fn, &pt);
    run_all(s, &r, a);
    for (int k = 3; k < RUNS; k++)
        ASSERT_EQ(a[k], CGR_RUN_REPLAY);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_EQ(pt.calls, 4); /* 2 warm-ups, the capture, its frozen-value check */
    /* The memset and the kernel are in the graph, between cgr's staging kernels,
     * and the record of the step's event ends it. */
    ASSERT_U64_EQ(ss.graph_kernel_nodes, 3);
    ASSERT_U64_EQ(ss.graph_nodes, 5);
    printf("per-thread default stream: captured, %llu nodes, %d replays exact\n",
           (unsigned long long)ss.graph_nodes, RUNS - 3);
    ASSERT_OK(cgr_step_destroy(&s));

    streamless lg = {0, 0};
    s = make_xy(rt, "legacy", LEN, step_fn, &lg);
    run_all(s, &r, a);
    for (int k = 2; k < RUNS; k++)
        ASSERT_EQ(a[k], CGR_RUN_EAGER);
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    printf("legacy default stream: %s\n", ss.capture_error);
    ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
    ASSERT_U64_EQ(ss.capture_failures, 1);
    ASSERT_U64_EQ(ss.replays, 0);
    ASSERT(strstr(ss.capture_error, "cudaErrorStreamCaptureImplicit") != NULL);
    ASSERT(strstr(ss.capture_error, "--default-stream per-thread") != NULL);
    ASSERT_EQ(lg.calls, RUNS + 1); /* the failed capture's run went again, eagerly */
    ASSERT_OK(cgr_step_destroy(&s));

    /* The runtime's stream and the calling thread's default stream are out of capture. */
    enum cudaStreamCaptureStatus cs;
    CUDA_OK(cudaStreamIsCapturing(cudaStreamPerThread, &cs));
    ASSERT_EQ(cs, cudaStreamCaptureStatusNone);
    CUDA_OK(cudaGetLastError());
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS\n");
    return 0;
}
