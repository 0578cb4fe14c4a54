/*
 * Error checks, capture helpers and the input generator.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/*
 * The last error message, copied into the failing mode's result. cgr-bench
 * runs its modes on one thread, so one buffer is enough.
 */
static char last_error[512];

void bench_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cgr-bench: error: %s\n", last_error);
    fflush(stderr);
}

const char *bench_last_error(void)
{
    return last_error;
}

void bench_clear_error(void)
{
    last_error[0] = '\0';
}

int bench_cuda_failed(cudaError_t e, const char *expr, const char *file, int line)
{
    if (e == cudaSuccess)
        return 0;
    bench_error("%s:%d: %s: %s (%s)", file, line, expr, cudaGetErrorName(e),
                cudaGetErrorString(e));
    return 1;
}

int bench_cgr_failed(cgr_status s, const char *expr, const char *file, int line)
{
    if (s == CGR_STATUS_OK)
        return 0;
    bench_error("%s:%d: %s: %s: %s", file, line, expr, cgr_status_name(s), cgr_last_error());
    return 1;
}

int bench_device_recover(void)
{
    (void)cudaGetLastError();
    cudaError_t e = cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (e == cudaSuccess)
        return 0;
    bench_error("the device is in an error state after the failure (%s: %s); "
                "skipping the remaining modes",
                cudaGetErrorName(e), cudaGetErrorString(e));
    return -1;
}

void rng_seed(bench_rng *r, uint64_t seed)
{
    /* xorshift must not start from 0. */
    r->s = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

static uint64_t rng_next(bench_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

void rng_fill(bench_rng *r, float *x, size_t n)
{
    /* Two floats per 64-bit draw: the 16 MiB sweep inputs are refilled every step. */
    for (size_t i = 0; i < n; i += 2) {
        uint64_t v = rng_next(r);
        for (size_t j = 0; j < 2 && i + j < n; j++) {
            uint32_t bits = (uint32_t)(v >> (j ? 40 : 8)) & 0xffffffu;
            float f = (float)bits * (1.0f / 16777216.0f) * 2.0f - 1.0f;
            x[i + j] = f == 0.0f ? 0.5f : f;
        }
    }
}

int float_matches(float got, float want)
{
    if (got == want)
        return 1;
    if (!isfinite(got) || !isfinite(want))
        return 0;
    return fabsf(got - want) <= 1e-6f * fabsf(want);
}

int capture_begin(cudaStream_t s)
{
    (void)cudaGetLastError();
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    return 0;
}

int capture_end(cudaStream_t s, int body_ok, cudaGraph_t *g)
{
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    (void)cudaGetLastError();
    if (body_ok && e == cudaSuccess && graph) {
        *g = graph;
        return 0;
    }
    if (graph)
        cudaGraphDestroy(graph);
    if (body_ok)
        bench_cuda_failed(e == cudaSuccess ? cudaErrorStreamCaptureInvalidated : e,
                          "cudaStreamEndCapture", __FILE__, __LINE__);
    return -1;
}

int capture_last_node(cudaStream_t s, cudaGraphNode_t *node)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    const cudaGraphNode_t *deps = NULL;
    size_t n = 0;
    CK(cudaStreamGetCaptureInfo(s, &cs, NULL, NULL, &deps, NULL, &n));
    if (cs != cudaStreamCaptureStatusActive || n != 1 || !deps) {
        bench_error("capture lost track of the node just captured (status %d, %zu dependencies)",
                    (int)cs, n);
        return -1;
    }
    *node = deps[0];
    return 0;
}

int graph_instantiate(cudaGraph_t g, cudaStream_t s, cudaGraphExec_t *exec)
{
    cudaGraphExec_t x = NULL;
    CK(cudaGraphInstantiate(&x, g, 0));
    cudaError_t e = cudaGraphUpload(x, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    if (bench_cuda_failed(e, "cudaGraphUpload + cudaStreamSynchronize", __FILE__, __LINE__)) {
        cudaGraphExecDestroy(x);
        return -1;
    }
    *exec = x;
    return 0;
}
