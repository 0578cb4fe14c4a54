/*
 * Error checks, capture helpers, the input generator and shared cgr calls.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

uint32_t rng_below(bench_rng *r, uint32_t n)
{
    return (uint32_t)(rng_next(r) % n);
}

void rng_fill(bench_rng *r, float *x, size_t n)
{
    /* Two floats per 64-bit draw: inputs are refilled every step, outside the clocks but
     * inside the watchdog's budget, so the fill is kept cheap. */
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

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static const char *mode_name(cgr_step_mode m)
{
    return m == CGR_MODE_GRAPH ? "graph" : m == CGR_MODE_EAGER ? "eager (fallback)" : "warm-up";
}

/* The step's shape-change counters and one line per shape (cgr_step_shape_at). */
static void bench_print_shape_stats(const cgr_step *step)
{
    cgr_step_stats h;
    if (cgr_step_get_stats(step, &h) != CGR_STATUS_OK) {
        printf("               shape stats unavailable (%s)\n", cgr_last_error());
        return;
    }
    printf("               shapes: %llu hits, %llu misses; %llu captures (%llu updated in "
           "place, %llu updates failed, %llu capture failures), %llu evictions; %llu eager "
           "(churn %llu, capture failed %llu, too large %llu, frozen value %llu); %llu "
           "frozen-value checks; churn guard %llu trips, %llu recoveries\n",
           (unsigned long long)(h.replays - h.captures),
           (unsigned long long)(h.runs - (h.replays - h.captures)),
           (unsigned long long)h.captures, (unsigned long long)h.updates,
           (unsigned long long)h.update_failures, (unsigned long long)h.capture_failures,
           (unsigned long long)h.evictions, (unsigned long long)h.eager_runs,
           (unsigned long long)h.eager_by_reason[CGR_EAGER_CHURN],
           (unsigned long long)h.eager_by_reason[CGR_EAGER_CAPTURE_FAILED],
           (unsigned long long)h.eager_by_reason[CGR_EAGER_TOO_LARGE],
           (unsigned long long)h.eager_by_reason[CGR_EAGER_FROZEN_VALUE],
           (unsigned long long)h.frozen_checks, (unsigned long long)h.churn_activations,
           (unsigned long long)h.churn_recoveries);
    printf("               capture %.1f us, instantiate %.1f us, update %.1f us (totals); "
           "%u cached, %.3f MiB est.; arena %.2f MiB\n",
           h.capture_us, h.instantiate_us, h.update_us, h.entries, mib(h.bytes),
           mib(h.arena_bytes));
    if (h.last_update_error[0])
        printf("               last update failure: %s\n", h.last_update_error);
    if (h.churn_warning[0])
        printf("               churn warning: %s\n", h.churn_warning);
    for (int k = 0;; k++) {
        cgr_shape_info si;
        if (cgr_step_shape_at(step, k, &si) != CGR_STATUS_OK)
            break;
        char dims[160];
        int n = 0;
        dims[0] = '\0';
        for (int j = 0; j < si.n_dims && n < (int)sizeof dims - 24; j++)
            n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%lld", j ? "," : "",
                          (long long)si.dims[j]);
        if (si.cached)
            printf("               shape [%s]: graph, %llu replays, last use %llu\n", dims,
                   (unsigned long long)si.replays, (unsigned long long)si.last_use);
        else
            printf("               shape [%s]: eager (%llu runs): %s\n", dims,
                   (unsigned long long)si.eager_runs, si.text);
    }
}

void bench_print_stats(const cgr_runtime *rt, const cgr_step *step, const char *title, ...)
{
    va_list ap;
    va_start(ap, title);
    vprintf(title, ap);
    va_end(ap);
    cgr_runtime_stats r;
    if (cgr_runtime_get_stats(rt, &r) != CGR_STATUS_OK) {
        printf("  cgr stats: unavailable (%s)\n", cgr_last_error());
        return;
    }
    printf("  cgr runtime: %llu step%s, %llu replays, %llu eager runs (warm-up included), "
           "%llu captures in %.1f us\n",
           (unsigned long long)r.steps, r.steps == 1 ? "" : "s", (unsigned long long)r.replays,
           (unsigned long long)r.eager_runs, (unsigned long long)r.captures, r.capture_us);
    printf("               arena %.2f MiB mapped, largest plan %.3f MiB (lower bound %.3f MiB); "
           "persistent %.3f MiB, pinned %.3f MiB\n",
           mib(r.arena_reserved), mib(r.arena_planned), mib(r.arena_lower_bound),
           mib(r.persistent_bytes), mib(r.pinned_bytes));
    cgr_step_stats s;
    if (!step)
        return;
    if (cgr_step_get_stats(step, &s) != CGR_STATUS_OK) {
        printf("  step 0: stats unavailable (%s)\n", cgr_last_error());
        return;
    }
    printf("  step 0       %s; %llu runs = %llu warm-up + %llu replays + %llu eager\n",
           mode_name(s.mode), (unsigned long long)s.runs, (unsigned long long)s.warmup_runs,
           (unsigned long long)s.replays, (unsigned long long)s.eager_runs);
    printf("               %llu captures (%llu failed), last %.1f us; graph %llu nodes "
           "(%llu kernel, %llu memcpy)\n",
           (unsigned long long)s.captures, (unsigned long long)s.capture_failures,
           s.last_capture_us + s.last_make_us, (unsigned long long)s.graph_nodes,
           (unsigned long long)s.graph_kernel_nodes, (unsigned long long)s.graph_memcpy_nodes);
    printf("               I/O %llu zero-copy + %llu memcpy tensors; scratch %llu requests, "
           "plan %.3f MiB (lower bound %.3f MiB); pinned %.3f MiB\n",
           (unsigned long long)s.zero_copy_tensors, (unsigned long long)s.memcpy_tensors,
           (unsigned long long)s.scratch_requests, mib(s.scratch_peak),
           mib(s.scratch_lower_bound), mib(s.pinned_bytes));
    if (s.capture_error[0])
        printf("               capture error: %s\n", s.capture_error);
    if (s.armed_runs || s.arm_released)
        printf("               armed: %llu runs launched ahead (%llu expired and ran "
               "again), %llu let through without their launch\n",
               (unsigned long long)s.armed_runs, (unsigned long long)s.arm_expired,
               (unsigned long long)s.arm_released);
    bench_print_shape_stats(step);
}

int bench_upload(cgr_runtime *rt, const void *host, size_t bytes, void **dev)
{
    cgr_stream st;
    CGR_CK(cgr_persistent_alloc(rt, bytes, dev));
    CGR_CK(cgr_runtime_stream(rt, &st));
    CK(cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyHostToDevice, st));
    CK(cudaStreamSynchronize(st));
    return 0;
}

int bench_slot_submit(void *self, long k)
{
    bench_slot *b = self;
    (void)k;
    CGR_CK(cgr_step_launch(b->step, &b->slot));
    return 0;
}

int bench_slot_wait(void *self, long k)
{
    bench_slot *b = self;
    (void)k;
    CGR_CK(cgr_step_wait(b->step, b->slot.ticket));
    return 0;
}

int bench_slot_after_warmup(void *self)
{
    bench_slot *b = self;
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(b->step, &s));
    if (s.mode != b->mode) {
        bench_error("%s: step mode %d after warm-up, expected %d: %s", b->who, (int)s.mode,
                    (int)b->mode, s.capture_error);
        return -1;
    }
    return 0;
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
        (void)cudaGraphDestroy(graph);
    if (body_ok)
        bench_cuda_failed(e == cudaSuccess ? cudaErrorStreamCaptureInvalidated : e,
                          "cudaStreamEndCapture", __FILE__, __LINE__);
    return -1;
}

int graph_instantiate(cudaGraph_t g, cudaStream_t s, cudaGraphExec_t *exec)
{
    cudaGraphExec_t x = NULL;
    CK(cudaGraphInstantiate(&x, g, 0));
    cudaError_t e = cudaGraphUpload(x, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    if (bench_cuda_failed(e, "cudaGraphUpload + cudaStreamSynchronize", __FILE__, __LINE__)) {
        (void)cudaGraphExecDestroy(x);
        return -1;
    }
    *exec = x;
    return 0;
}

const void *bench_output(cgr_step *s, uint64_t ticket, int index, size_t *bytes)
{
    enum { RING = 8 };
    static _Thread_local void *buf[RING];
    static _Thread_local size_t cap[RING];
    static _Thread_local unsigned next;
    unsigned k = next++ % RING;
    size_t n = 0;
    if (bench_cgr_failed(cgr_step_output(s, ticket, index, NULL, 0, &n), "cgr_step_output",
                         __FILE__, __LINE__))
        return NULL;
    if (n > cap[k]) {
        free(buf[k]);
        buf[k] = malloc(n);
        cap[k] = buf[k] ? n : 0;
        if (!buf[k]) {
            bench_error("out of host memory for an output of %zu bytes", n);
            return NULL;
        }
    }
    if (bench_cgr_failed(cgr_step_output(s, ticket, index, buf[k], cap[k], bytes),
                         "cgr_step_output", __FILE__, __LINE__))
        return NULL;
    return buf[k];
}
