/*
 * GPU test of the W-cnn forward pass (suite `gpu`; standalone: it needs the
 * CUDA runtime and cuDNN, not cgr).
 *
 * For B in {1, 8} and for the algorithm policies "measured" (the default:
 * the fastest of the usable algorithms, fused or not, timed on the device),
 * "auto" (fused conv + bias + ReLU where cuDNN allows) and "unfused" (three
 * cuDNN calls per layer):
 *   (a) one forward pass on plain cudaMalloc'd buffers against the float64
 *       CPU reference: norm-wise ||gpu - ref|| / ||ref|| <= 1e-4, and per
 *       element |gpu - ref| <= 1e-4 |ref| + 1e-5 max|ref|. Scratch and
 *       logits are filled with NaN bytes before every pass, so a value the
 *       pass fails to write (or a read of stale scratch) cannot go unnoticed;
 *   (b) determinism: a second forward pass gives bitwise the same logits;
 *   (c) the forward pass captured into a CUDA graph (thread-local capture
 *       mode) and replayed gives bitwise the same logits as eager; after
 *       the input changes, a replay equals a new eager pass (so the graph
 *       reads the input buffer, not a baked copy), and the logits changed;
 *   then, for information only, the GPU time of one replay (CUDA events).
 *
 * No usable GPU: prints SKIP and exits 77. Failure: exits 1. A watchdog
 * ends the test with a message after CNN_TEST_TIMEOUT seconds (default 600)
 * so that a hung GPU never hangs the suite.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cnn.h"
#include "cnn_ref.h"

#define TEST_SKIP 77
#define PARAM_SEED 20240611u
#define RTOL 1e-4
#define ATOL_REL_MAX 1e-5

/* ---- helpers ------------------------------------------------------------------ */

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: test_cnn: watchdog expired (a GPU call hung?)\n";
    ssize_t r = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)r;
    _exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xorshift64*: uniform in (-1, 1), never exactly 0. */
static float rng_sym(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    const int64_t k = (int64_t)((x * 0x2545F4914F6CDD1DULL) >> 40);
    return (float)(2 * k + 1 - (1LL << 24)) / (float)(1LL << 24);
}

static void fill_input(uint64_t seed, float *x, size_t n)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ULL + 1;
    for (size_t i = 0; i < n; i++)
        x[i] = rng_sym(&s);
}

#define FAILF(...)                                                                         \
    do {                                                                                   \
        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                               \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fputc('\n', stderr);                                                               \
        goto out;                                                                          \
    } while (0)

#define CUDA_CHECK(expr)                                                                   \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            FAILF("%s: %s (%s)", #expr, cudaGetErrorName(e_), cudaGetErrorString(e_));     \
    } while (0)

#define DNN_CHECK(expr)                                                                    \
    do {                                                                                   \
        cudnnStatus_t s_ = (expr);                                                         \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                    \
            FAILF("%s: %s", #expr, cudnnGetErrorString(s_));                               \
    } while (0)

#define CNN_CHECK(expr)                                                                    \
    do {                                                                                   \
        if ((expr) != 0)                                                                   \
            FAILF("%s: %s", #expr, cnn_last_error());                                      \
    } while (0)

/* Compares logits with the reference; prints the worst errors. Returns 0 when within tolerance. */
static int compare_ref(const char *what, const float *g, const double *r, size_t n)
{
    double maxref = 0.0, num = 0.0, den = 0.0, worst = 0.0;
    size_t worst_i = 0, bad = 0;
    for (size_t i = 0; i < n; i++)
        maxref = fmax(maxref, fabs(r[i]));
    const double floor_abs = ATOL_REL_MAX * maxref;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(g[i])) {
            fprintf(stderr, "FAIL %s: logit[%zu] = %g is not finite (reference %.9g)\n", what, i,
                    (double)g[i], r[i]);
            return -1;
        }
        const double d = fabs((double)g[i] - r[i]);
        num += d * d;
        den += r[i] * r[i];
        const double ratio = d / (RTOL * fabs(r[i]) + floor_abs);
        if (ratio > worst) {
            worst = ratio;
            worst_i = i;
        }
        if (ratio > 1.0)
            bad++;
    }
    const double normwise = den > 0 ? sqrt(num / den) : sqrt(num);
    printf("  %s: norm-wise rel err %.3g (tol %.0e); worst element %zu: gpu %.9g ref %.9g "
           "(%.3g of its tolerance)\n",
           what, normwise, RTOL, worst_i, (double)g[worst_i], r[worst_i], worst);
    if (maxref == 0.0) {
        fprintf(stderr, "FAIL %s: reference logits are all zero (degenerate test)\n", what);
        return -1;
    }
    if (normwise > RTOL) {
        fprintf(stderr, "FAIL %s: norm-wise relative error %.3g > %.0e\n", what, normwise, RTOL);
        return -1;
    }
    if (bad) {
        fprintf(stderr,
                "FAIL %s: %zu of %zu logits outside |gpu-ref| <= %.0e|ref| + %.0e*max|ref|\n",
                what, bad, n, RTOL, ATOL_REL_MAX);
        return -1;
    }
    return 0;
}

/* Fills scratch and logits with 0xFF bytes (NaN as floats). */
static cudaError_t poison(cudaStream_t s, void *scratch, size_t scratch_bytes, float *logits,
                          size_t logit_bytes)
{
    cudaError_t e = cudaMemsetAsync(scratch, 0xFF, scratch_bytes, s);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(logits, 0xFF, logit_bytes, s);
    return e;
}

/* ---- one case: batch size B, one policy ---------------------------------------------- */

static int run_case(cudnnHandle_t h, cudaStream_t s, int B, cnn_algo_policy policy,
                    const char *policy_name, const float *x, const float *x2, const double *ref)
{
    int ok = 0;
    cnn *m = NULL;
    float *params_d = NULL, *x_d = NULL, *logits_d = NULL, *host_params = NULL;
    void *scratch = NULL, *ws = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaEvent_t ev0 = NULL, ev1 = NULL;
    const size_t n_logits = (size_t)B * CNN_CLASSES;
    const size_t logit_bytes = n_logits * sizeof(float);
    const size_t x_bytes = (size_t)B * CNN_IN_C * CNN_H * CNN_W * sizeof(float);
    float *l1 = malloc(logit_bytes), *l2 = malloc(logit_bytes), *l3 = malloc(logit_bytes);
    float *l4 = malloc(logit_bytes), *l5 = malloc(logit_bytes);
    char what[64];
    snprintf(what, sizeof what, "B=%d %s", B, policy_name);
    if (!l1 || !l2 || !l3 || !l4 || !l5)
        FAILF("%s: out of host memory", what);

    CNN_CHECK(cnn_create(&m, B, PARAM_SEED));
    CNN_CHECK(cnn_set_algo_policy(m, policy));
    host_params = malloc(cnn_param_floats(m) * sizeof(float));
    if (host_params == NULL)
        FAILF("%s: out of host memory", what);
    cnn_host_params(m, host_params);
    CUDA_CHECK(cudaMalloc((void **)&params_d, cnn_param_floats(m) * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(params_d, host_params, cnn_param_floats(m) * sizeof(float),
                          cudaMemcpyHostToDevice));
    CNN_CHECK(cnn_set_device_params(m, params_d));
    CNN_CHECK(cnn_prepare(m, h));
    CNN_CHECK(cnn_prepare(m, h)); /* idempotent */
    const size_t scratch_bytes = cnn_scratch_bytes(m), ws_bytes = cnn_workspace_bytes(m);
    printf("%s: %s; scratch %zu B\n", what, cnn_describe(m), scratch_bytes);

    CUDA_CHECK(cudaMalloc((void **)&x_d, x_bytes));
    CUDA_CHECK(cudaMalloc((void **)&logits_d, logit_bytes));
    CUDA_CHECK(cudaMalloc(&scratch, scratch_bytes));
    if (ws_bytes)
        CUDA_CHECK(cudaMalloc(&ws, ws_bytes));
    CUDA_CHECK(cudaMemcpy(x_d, x, x_bytes, cudaMemcpyHostToDevice));

    /* (a) against the reference */
    CUDA_CHECK(poison(s, scratch, scratch_bytes, logits_d, logit_bytes));
    CNN_CHECK(cnn_forward_enqueue(m, h, s, x_d, logits_d, scratch, ws));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(l1, logits_d, logit_bytes, cudaMemcpyDeviceToHost));
    if (compare_ref(what, l1, ref, n_logits) != 0)
        goto out;
    const int fused_after_first = cnn_fused_layers(m);
    if (strcmp(policy_name, "unfused") == 0 && fused_after_first != 0)
        FAILF("%s: policy unfused but %d layers fused", what, fused_after_first);

    /* (b) determinism */
    CUDA_CHECK(poison(s, scratch, scratch_bytes, logits_d, logit_bytes));
    CNN_CHECK(cnn_forward_enqueue(m, h, s, x_d, logits_d, scratch, ws));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(l2, logits_d, logit_bytes, cudaMemcpyDeviceToHost));
    if (memcmp(l1, l2, logit_bytes) != 0)
        FAILF("%s: two eager forward passes on the same input differ (not deterministic)", what);

    /* (c) capture and replay */
    CUDA_CHECK(poison(s, scratch, scratch_bytes, logits_d, logit_bytes));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    if (cnn_forward_enqueue(m, h, s, x_d, logits_d, scratch, ws) != 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", cnn_last_error());
        cudaGraph_t g = NULL;
        cudaError_t e = cudaStreamEndCapture(s, &g);
        if (g)
            cudaGraphDestroy(g);
        (void)cudaGetLastError();
        FAILF("%s: forward pass failed during capture: %s (end capture: %s)", what, msg,
              cudaGetErrorString(e));
    }
    CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    size_t n_nodes = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph, NULL, &n_nodes));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(l3, logits_d, logit_bytes, cudaMemcpyDeviceToHost));
    if (memcmp(l1, l3, logit_bytes) != 0)
        FAILF("%s: graph replay differs from the eager forward pass", what);
    if (cnn_fused_layers(m) != fused_after_first)
        FAILF("%s: fused layers changed from %d to %d after the first pass", what,
              fused_after_first, cnn_fused_layers(m));

    /* New input: replay == eager, and the logits moved. */
    CUDA_CHECK(cudaMemcpy(x_d, x2, x_bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(poison(s, scratch, scratch_bytes, logits_d, logit_bytes));
    CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(l4, logits_d, logit_bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(poison(s, scratch, scratch_bytes, logits_d, logit_bytes));
    CNN_CHECK(cnn_forward_enqueue(m, h, s, x_d, logits_d, scratch, ws));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaMemcpy(l5, logits_d, logit_bytes, cudaMemcpyDeviceToHost));
    if (memcmp(l4, l5, logit_bytes) != 0)
        FAILF("%s: with a new input, graph replay differs from eager", what);
    for (size_t i = 0; i < n_logits; i++)
        if (!isfinite(l4[i]))
            FAILF("%s: new input gives logit[%zu] = %g", what, i, (double)l4[i]);
    if (memcmp(l1, l4, logit_bytes) == 0)
        FAILF("%s: logits did not change with the input (graph reads a stale input?)", what);

    /* Information only: GPU time of one replay. Under a sanitizer a replay
     * takes seconds (7.5 s each under racecheck on the H200) and its time
     * means nothing, so one replay is enough to have it checked. */
    CUDA_CHECK(cudaEventCreate(&ev0));
    CUDA_CHECK(cudaEventCreate(&ev1));
    const char *san = getenv("CGR_TEST_SANITIZER");
    const int REPS = san && *san && strcmp(san, "0") != 0 ? 1 : 20;
    CUDA_CHECK(cudaEventRecord(ev0, s));
    for (int i = 0; i < REPS; i++)
        CUDA_CHECK(cudaGraphLaunch(exec, s));
    CUDA_CHECK(cudaEventRecord(ev1, s));
    CUDA_CHECK(cudaEventSynchronize(ev1));
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
    printf("  %s: graph of %zu nodes, %d fused layers; back-to-back replay %.1f us each "
           "(information only)\n",
           what, n_nodes, cnn_fused_layers(m), 1000.0 * ms / REPS);
    printf("PASS: %s (reference, determinism, graph replay)\n", what);
    ok = 1;
out:
    if (ev0)
        cudaEventDestroy(ev0);
    if (ev1)
        cudaEventDestroy(ev1);
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    cudaStreamSynchronize(s);
    cudaFree(params_d);
    cudaFree(x_d);
    cudaFree(logits_d);
    cudaFree(scratch);
    cudaFree(ws);
    cnn_destroy(&m);
    free(host_params);
    free(l1);
    free(l2);
    free(l3);
    free(l4);
    free(l5);
    return ok ? 0 : 1;
}

int main(void)
{
    unsigned timeout = 600;
    const char *t = getenv("CNN_TEST_TIMEOUT");
    if (t && atoi(t) > 0)
        timeout = (unsigned)atoi(t);
    signal(SIGALRM, on_alarm);
    alarm(timeout);
    setvbuf(stdout, NULL, _IOLBF, 0);

    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev < 1) {
        printf("SKIP: no usable GPU (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA devices");
        return TEST_SKIP;
    }

    int failures = 0;
    cudnnHandle_t h = NULL;
    cudaStream_t s = NULL;
    float *x = NULL, *x2 = NULL, *params = NULL;
    double *ref = NULL;
    cnn *pm = NULL;
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaFree(NULL)); /* create the context now */
    DNN_CHECK(cudnnCreate(&h));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    DNN_CHECK(cudnnSetStream(h, s));
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s (sm_%d%d); cuDNN %zu (headers %d)\n", prop.name, prop.major, prop.minor,
           cudnnGetVersion(), CUDNN_VERSION);

    static const int batches[] = {1, 8};
    /* Under compute-sanitizer (CGR_TEST_SANITIZER, set by meson's setups) cuDNN's
     * kernels run far slower, racecheck most of all: B = 1 only. */
    const char *san = getenv("CGR_TEST_SANITIZER");
    const size_t n_batches = san && *san && strcmp(san, "0") != 0 ? 1 : 2;
    if (n_batches == 1)
        printf("under a sanitizer (CGR_TEST_SANITIZER=%s): B = 1 only\n", san);
    for (size_t bi = 0; bi < n_batches; bi++) {
        const int B = batches[bi];
        const size_t nx = (size_t)B * CNN_IN_C * CNN_H * CNN_W;
        x = malloc(nx * sizeof(float));
        x2 = malloc(nx * sizeof(float));
        ref = malloc((size_t)B * CNN_CLASSES * sizeof(double));
        if (!x || !x2 || !ref)
            FAILF("out of host memory");
        fill_input(1000u + (uint64_t)B, x, nx);
        fill_input(2000u + (uint64_t)B, x2, nx);
        CNN_CHECK(cnn_create(&pm, B, PARAM_SEED));
        params = malloc(cnn_param_floats(pm) * sizeof(float));
        if (!params)
            FAILF("out of host memory");
        cnn_host_params(pm, params);
        cnn_destroy(&pm);
        const double t0 = now_s();
        if (cnn_ref_forward(B, params, x, ref) != 0)
            FAILF("B=%d: CPU reference failed (out of memory?)", B);
        printf("B=%d: float64 CPU reference took %.2f s\n", B, now_s() - t0);
        failures += run_case(h, s, B, CNN_ALGO_MEASURED, "measured", x, x2, ref);
        failures += run_case(h, s, B, CNN_ALGO_AUTO, "auto", x, x2, ref);
        failures += run_case(h, s, B, CNN_ALGO_UNFUSED, "unfused", x, x2, ref);
        free(x);
        free(x2);
        free(ref);
        free(params);
        x = x2 = params = NULL;
        ref = NULL;
    }
    goto done;
out:
    failures++;
done:
    free(x);
    free(x2);
    free(ref);
    free(params);
    cnn_destroy(&pm);
    if (s)
        cudaStreamDestroy(s);
    if (h)
        cudnnDestroy(h);
    if (failures) {
        printf("FAIL: test_cnn: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    printf("PASS: test_cnn\n");
    return 0;
}
