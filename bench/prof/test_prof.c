/* cgr-bench's CUPTI profiler (prof.h) on its own. Needs a GPU.
 *
 * Exit status: 0 pass, 1 fail, 77 skip (no usable CUDA device).
 *
 * One window of 10 steps, each a ~20 us spin kernel plus a 1 MiB HtoD copy
 * from pinned memory on one stream. Checks: 10 kernels and 10 memcpys
 * (1 + 1 per step), busy time per step in [10, 200] us, the top kernel is
 * the spin kernel, and the trace file looks like valid JSON. Then the same
 * step plus a 1 MiB memset, captured in a CUDA graph and replayed 10 times:
 * 1 kernel, 1 memcpy and 1 memset per step (graph nodes are traced one by
 * one). Also checks that an empty window sees nothing (earlier records are
 * discarded), that a prof_begin ends the last window's records, and a few
 * misuse paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "common.h"
#include "prof.h"
#include "prof_records.h"
#include "test_prof_kernels.h"

#define STEPS 10
#define SPIN_NS 20000ull
#define COPY_BYTES ((size_t)1 << 20)

/* A failed check ends the test with its message (exit 1). */
#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#define PROF_OK_(call, p)                                                     \
    do {                                                                      \
        int r_ = (call);                                                      \
        if (r_ != PROF_OK)                                                    \
            TEST_FAIL_("%s: code %d: %s", #call, r_, prof_errmsg(p));         \
    } while (0)

/* Checks the trace file at path, which it removes once read. */
static void check_trace(const char *path)
{
    char *txt = test_read_file(path);
    unlink(path);
    const char *head = "{\"traceEvents\":[";
    CHECK(txt != NULL, "cannot read back %s", path);
    size_t end = strlen(txt);
    while (end > 0 && (txt[end - 1] == '\n' || txt[end - 1] == ' ' ||
                       txt[end - 1] == '\r' || txt[end - 1] == '\t'))
        end--;
    CHECK(strncmp(txt, head, strlen(head)) == 0, "trace does not start with %s",
          head);
    CHECK(end > 0 && txt[end - 1] == '}', "trace does not end with }");
    CHECK(json_balanced(txt), "trace brackets/strings do not balance");
    CHECK(count(txt, "\"ph\":\"X\"") == 5 * STEPS,
          "trace has %zu complete events, expected %d (eager 2, graph 3 per "
          "step)",
          count(txt, "\"ph\":\"X\""), 5 * STEPS);
    CHECK(strstr(txt, "\"memset\"") != NULL, "memset not in trace");
    CHECK(strstr(txt, "prof_test_spin") != NULL, "kernel name not in trace");
    CHECK(strstr(txt, "memcpy HtoD") != NULL, "memcpy HtoD not in trace");
    CHECK(strstr(txt, "\"process_name\"") != NULL, "no process_name event");
    CHECK(strstr(txt, "\"displayTimeUnit\":\"ns\"") != NULL,
          "no displayTimeUnit");
    free(txt);
}

static cudaStream_t stream;
static unsigned char *h_buf, *d_buf;
static unsigned long long *d_sink;

/* One step: the spin kernel and the copy, or a replay of exec. */
static void step(cudaGraphExec_t exec)
{
    if (exec) {
        CUDA_OK(cudaGraphLaunch(exec, stream));
        return;
    }
    CUDA_OK(prof_test_launch_spin(stream, SPIN_NS, d_sink));
    CUDA_OK(cudaMemcpyAsync(d_buf, h_buf, COPY_BYTES, cudaMemcpyHostToDevice, stream));
}

/*
 * Window `label` of STEPS steps into *w, after 3 untimed ones (module load
 * and first-launch costs; they also absorb CUPTI's stall after the last
 * prof_end's flush).
 */
static void window(prof *p, const char *label, cudaGraphExec_t exec, prof_window *w)
{
    for (int i = 0; i < 3; i++)
        step(exec);
    CUDA_OK(cudaDeviceSynchronize());
    PROF_OK_(prof_begin(p), p);
    for (int i = 0; i < STEPS; i++)
        step(exec);
    CUDA_OK(cudaDeviceSynchronize());
    PROF_OK_(prof_end(p, STEPS, w), p);
    printf("window '%s': steps %d records %llu dropped %llu\n", label, STEPS,
           (unsigned long long)w->records, (unsigned long long)w->dropped);
    printf("  per step: busy %.2f us (union %.2f us; kernel %.2f); %.2f kernels, %.2f memcpys\n",
           w->busy_us, w->busy_union_us, w->kernel_us, w->kernels_per_step, w->memcpys_per_step);
    ASSERT_EQ(w->dropped, 0);
    CHECK(w->busy_us >= 10.0 && w->busy_us <= 200.0, "busy_us per step %.2f not in [10, 200]",
          w->busy_us);
}

int main(void)
{
    int n = 0;
    prof *p = NULL, *p2 = NULL;
    char err[256];
    prof_window w, w2, wg;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t gexec = NULL;
    prof_kernel_stat top[8];
    char path[4096];
    const char *tmpdir = getenv("TMPDIR");

    require_gpu();
    int r = prof_create(&p, err, sizeof err);
    if (r != PROF_OK) {
        /* Under compute-sanitizer (or nsys) CUPTI belongs to that tool. */
        if (r == PROF_ENOLIB) {
            printf("SKIP: CUPTI is not loadable here: %s\n", err);
            return TEST_SKIP;
        }
        if (strstr(err, "MULTIPLE_SUBSCRIBERS")) {
            printf("SKIP: another CUPTI client is attached: %s\n", err);
            return TEST_SKIP;
        }
        TEST_FAIL_("prof_create: code %d: %s", r, err);
    }
    /* CUPTI allows one set of callbacks: a second prof must be refused. */
    ASSERT_EQ(prof_create(&p2, err, sizeof err), PROF_EBUSY);
    ASSERT(p2 == NULL);
    prof_destroy(&p2);
    /* Out-of-order calls are errors, not crashes. */
    ASSERT_EQ(prof_end(p, STEPS, &w), PROF_ESTATE);
    ASSERT_EQ(prof_top_kernels(p, top, 8, &n), PROF_ESTATE);

    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OK(cudaMallocHost((void **)&h_buf, COPY_BYTES));
    CUDA_OK(cudaMalloc((void **)&d_buf, COPY_BYTES));
    CUDA_OK(cudaMalloc((void **)&d_sink, sizeof *d_sink));
    memset(h_buf, 0x5a, COPY_BYTES);

    window(p, "test", NULL, &w);
    ASSERT_EQ(w.kernels, STEPS);
    ASSERT_EQ(w.memcpys, STEPS);
    ASSERT_EQ(w.memsets, 0);
    CHECK(w.kernels_per_step == 1.0, "kernels_per_step %g", w.kernels_per_step);
    CHECK(w.memcpys_per_step == 1.0, "memcpys_per_step %g", w.memcpys_per_step);
    CHECK(w.kernel_us >= 10.0, "kernel_us per step %.2f < 10 (spin ~20 us)", w.kernel_us);
    CHECK(w.busy_union_us > 0.0 && w.busy_union_us <= w.busy_us + 1e-6,
          "busy_union_us %.3f vs busy_us %.3f", w.busy_union_us, w.busy_us);
    /* The window's records themselves, in start order. */
    ASSERT_EQ(w.records, 2 * STEPS);
    for (uint64_t i = 1; i < w.records; i++)
        CHECK(w.recs[i - 1].start <= w.recs[i].start, "record %llu starts before the one before",
              (unsigned long long)i);

    PROF_OK_(prof_top_kernels(p, top, 8, &n), p);
    for (int i = 0; i < n; i++)
        printf("  top %d: %-40s calls %llu total %.2f us mean %.2f us share %.1f%%\n", i,
               top[i].name, (unsigned long long)top[i].calls, top[i].total_us, top[i].mean_us,
               100.0 * top[i].share);
    ASSERT_GE(n, 1);
    CHECK(strstr(top[0].name, "prof_test_spin") != NULL, "top kernel is '%s'", top[0].name);
    ASSERT_EQ(top[0].calls, STEPS);
    CHECK(top[0].share > 0.999, "top kernel share %g", top[0].share);

    /* Trace: add the window (written after the graph window below). */
    PROF_OK_(prof_trace_add(p, "test (eager)", 1), p);

    /* Graph replay: the same step plus a memset, captured once. */
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    step(NULL);
    CUDA_OK(cudaMemsetAsync(d_buf, 0, COPY_BYTES, stream));
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    CUDA_OK(cudaGraphInstantiate(&gexec, graph, 0));
    window(p, "graph", gexec, &wg);
    ASSERT_EQ(wg.kernels, STEPS);
    ASSERT_EQ(wg.memcpys, STEPS);
    ASSERT_EQ(wg.memsets, STEPS);
    PROF_OK_(prof_trace_add(p, "test (graph)", 2), p);

    /* Write the trace to a temp file and read it back. */
    snprintf(path, sizeof path, "%s/prof_trace_XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp(%s) failed", path);
    close(fd);
    PROF_OK_(prof_trace_write(p, path), p);
    check_trace(path);

    /* An empty window after the first sees nothing: earlier records are
     * discarded at prof_begin. (The main window also had the 3 warm-up
     * steps, still in CUPTI's buffers, to discard.) */
    PROF_OK_(prof_begin(p), p);
    /* The last window went with the begin: the collector refills its store. */
    ASSERT_EQ(prof_top_kernels(p, top, 8, &n), PROF_ESTATE);
    CUDA_OK(cudaDeviceSynchronize());
    PROF_OK_(prof_end(p, 1, &w2), p);
    ASSERT_EQ(w2.records, 0);
    ASSERT_EQ(w2.kernels, 0);
    CHECK(w2.busy_us == 0.0, "empty window busy %.3f us", w2.busy_us);
    ASSERT_EQ(prof_end(p, 0, &w2), PROF_EINVAL);

    prof_destroy(&p);
    ASSERT(p == NULL);
    /* Destroy detached CUPTI (cuptiFinalize); a later profiler attaches it again. */
    r = prof_create(&p, err, sizeof err);
    CHECK(r == PROF_OK, "prof_create after a destroy: %s", err);
    prof_destroy(&p);
    CUDA_OK(cudaGraphExecDestroy(gexec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaFree(d_sink));
    CUDA_OK(cudaFree(d_buf));
    CUDA_OK(cudaFreeHost(h_buf));
    CUDA_OK(cudaStreamDestroy(stream));
    printf("PASS\n");
    return 0;
}
