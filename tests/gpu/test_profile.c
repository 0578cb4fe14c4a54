/*
 * The profile window (cgr_options.profile) over purpose-written steps:
 *
 *  - "tiny": 64 small kernels per run, launch-bound. Its eager runs launch
 *    64 kernels and copy one input in and one output out (2 memcpys); its
 *    graph runs hold the same 64 kernels plus cgr's two staging kernels
 *    (the zero-copy input kernel and the output kernel that publishes the
 *    completion flag, capture/capture.c), and, after an eager run, a
 *    1-byte memset of the slot word (replay/run.c). The verdict must be
 *    launch-bound and the kernels per run exact.
 *  - "spin": one kernel spinning a clock64 count that takes about 2 ms,
 *    GPU-bound. Its busy time per run must match the kernel's duration
 *    measured with CUDA events outside cgr, within 15%.
 *  - Every run's output, inside the window and after it, is bitwise equal
 *    to the same step's on a runtime without a profile.
 *  - The three report files exist; the JSON names the verdict. The trace
 *    holds cgr's phases: one "cgr eager run" per eager run of the window,
 *    a "cgr replay" per graph run, none before the window's first run and
 *    none left open.
 *
 *  - A window follows its shape, not the shape table's entry: with a cache
 *    of one graph, a second shape that evicts the first replays outside
 *    the window (every run a plain replay), and once it has replayed past
 *    the bound (4 x runs + 100) the window, whose shape no longer replays,
 *    ends without a result instead of keeping CUPTI attached.
 *  - A window that closes while another thread keeps making CUDA calls (its
 *    own kernels on its own stream): CUPTI detaches without a hang, and
 *    every one of that thread's calls succeeds, before, during and after.
 *
 * With the argument "nvtx" (the test registered with NVTX_INJECTION64_PATH
 * and CGR_CUPTI_LIBRARY naming the libcupti the build found): the same
 * launch-bound window, and the range "attention" and the mark "tick" that
 * "tiny" makes with NVTX are in the trace once per eager run, while cgr's
 * own ranges are there only as its phases. Without the variable it skips.
 *
 * With the argument "absent" (the test registered with CGR_CUPTI_LIBRARY
 * naming a file that does not exist): the profile fails with
 * CGR_STATUS_NOT_SUPPORTED and a message naming the variable and the
 * file, and every run still replays correctly.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, mkdtemp */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "neighbour.h"
#include "profile_kernels.h"

/* The NVTX v3 header casts dlsym's result to a function pointer, which -Wpedantic rejects. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <nvtx3/nvToolsExt.h>
#pragma GCC diagnostic pop

enum { LEN = 256, TINY_KERNELS = 64, STAGING_KERNELS = 2 };

typedef struct spin_user {
    long long cycles;
} spin_user;

static cgr_status tiny_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    /* The user's own NVTX: in the trace when CUPTI is the process's NVTX injection. */
    nvtxRangePushA("attention");
    nvtxMarkA("tick");
    STEP_CUDA(pk_tiny(y, x, LEN, st));
    for (int k = 1; k < TINY_KERNELS; k++)
        STEP_CUDA(pk_tiny(y, y, LEN, st));
    nvtxRangePop();
    return CGR_STATUS_OK;
}

static cgr_status spin_fn(cgr_ctx *ctx, void *user)
{
    const spin_user *u = user;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(pk_spin(y, x, LEN, u->cycles, st));
    return CGR_STATUS_OK;
}

/* pk_tiny over the run's bucket of the dynamic dim "n" (1, 2 or 4 elements). */
static cgr_status shaped_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *x, *y;
    int64_t bucket = 0;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_dim(ctx, 0, &bucket, NULL, NULL));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(pk_tiny(y, x, (size_t)bucket, st));
    return CGR_STATUS_OK;
}

static cgr_runtime *make_runtime(int runs, int skip, const char *path)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.profile.runs = runs;
    o.profile.skip = skip;
    o.profile.path = path;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    return rt;
}

/*
 * `runs` runs of step a (profiled) and b (not), on the same fresh inputs,
 * each output compared bitwise; actions[i] gets what a's run i did.
 */
static void run_both(cgr_step *a, cgr_step *b, int runs, uint64_t seed, cgr_run_action *actions)
{
    rng r = {seed};
    float x[LEN], ya[LEN];
    for (int i = 0; i < runs; i++) {
        rng_fill(&r, x, LEN);
        const void *in[1] = {x};
        uint64_t ta, tb;
        ASSERT_OK(cgr_step_run(a, NULL, in, &ta));
        ASSERT_OK(cgr_step_run(b, NULL, in, &tb));
        ASSERT_OK(cgr_step_wait(a, ta));
        ASSERT_OK(cgr_step_wait(b, tb));
        if (actions)
            ASSERT_OK(cgr_step_run_action(a, ta, &actions[i]));
        memcpy(ya, test_output(a, ta, 0, NULL), sizeof ya);
        const float *yb = test_output(b, tb, 0, NULL);
        if (memcmp(ya, yb, sizeof ya) != 0)
            TEST_FAIL_("run %d (seed %llu): the profiled output differs from the plain one", i,
                       (unsigned long long)seed);
    }
}

static int file_has(const char *path, const char *needle)
{
    char *t = test_read_file(path);
    if (!t)
        TEST_FAIL_("%s was not written", path);
    int found = strstr(t, needle) != NULL;
    free(t);
    return found;
}

/* The value of "key" in a flat JSON text, as the string between its quotes. */
static void json_string(const char *path, const char *key, char *out, size_t cap)
{
    char *t = test_read_file(path);
    if (!t)
        TEST_FAIL_("%s was not written", path);
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *v = strstr(t, pat);
    if (!v)
        TEST_FAIL_("%s has no \"%s\" string", path, key);
    v += strlen(pat);
    size_t n = strcspn(v, "\"");
    if (n >= cap)
        n = cap - 1;
    memcpy(out, v, n);
    out[n] = '\0';
    free(t);
}

static size_t count(const char *t, const char *sub)
{
    size_t k = 0;
    for (const char *c = t; (c = strstr(c, sub)) != NULL; c++)
        k++;
    return k;
}

/*
 * The host ranges of the trace at path: cgr's phases of the window (the
 * "tiny" step's eager runs, and the graph runs of both steps, which run
 * alternately), and with nvtx the user's ranges of tiny_fn.
 */
static void check_ranges(const char *path, int runs, int nvtx)
{
    char *t = test_read_file(path);
    if (!t)
        TEST_FAIL_("%s was not written", path);
    const size_t eager = count(t, "{\"name\":\"cgr eager run\",\"cat\":\"cgr phase\""),
                 replay = count(t, "{\"name\":\"cgr replay\",\"cat\":\"cgr phase\""),
                 user = count(t, "{\"name\":\"attention\",\"cat\":\"nvtx\""),
                 ticks = count(t, "{\"name\":\"tick\",\"cat\":\"nvtx\""),
                 own = count(t, "{\"name\":\"cgr eager run\",\"cat\":\"nvtx\"");
    printf("trace: %zu eager-run and %zu replay phases, %zu user ranges, %zu marks, %zu of "
           "cgr's ranges from CUPTI\n", eager, replay, user, ticks, own);
    if (eager != (size_t)runs || replay < (size_t)runs)
        TEST_FAIL_("%s: %zu \"cgr eager run\" and %zu \"cgr replay\" phases, expected %d and "
                   "at least %d", path, eager, replay, runs, runs);
    ASSERT(strstr(t, "\"args\":{\"name\":\"cgr phases, thread ") != NULL);
    /* Every phase began after the first run's launch call, the trace's origin. */
    for (const char *c = t; (c = strstr(c, "\"cat\":\"cgr phase\"")) != NULL; c++) {
        const char *ts = strstr(c, "\"ts\":");
        if (!ts || ts[5] == '-')
            TEST_FAIL_("%s: a phase without a time, or before the window: %.120s", path, c);
    }
    if (nvtx && (user != (size_t)runs || ticks != (size_t)runs || own != 0))
        TEST_FAIL_("%s: %zu \"attention\" ranges and %zu \"tick\" marks (expected %d each), "
                   "%zu of cgr's own ranges from CUPTI (expected 0)", path, user, ticks, runs, own);
    free(t);
}

/* Run count before a step's window opens: warm-ups, capture, frozen-value check, skip. */
static int before_window(int skip)
{
    return 2 + 1 + 1 + skip;
}

static void test_launch_bound(const char *dir, int nvtx)
{
    char prefix[600];
    if (snprintf(prefix, sizeof prefix, "%s/prof", dir) >= (int)sizeof prefix)
        TEST_FAIL_("%s: path too long", dir);
    enum { RUNS = 40, SKIP = 3 };
    cgr_runtime *rt = make_runtime(RUNS, SKIP, prefix), *plain = make_runtime(0, 0, NULL);
    cgr_step *a = make_xy(rt, "tiny", LEN, tiny_fn, NULL);
    cgr_step *b = make_xy(plain, "tiny", LEN, tiny_fn, NULL);
    const int pre = before_window(SKIP), total = pre + 2 * RUNS + 10;
    cgr_run_action act[64 + 2 * RUNS + 10];
    ASSERT(pre <= 64);
    cgr_step_stats ss;
    /* Up to the window: no profile yet. */
    run_both(a, b, pre, 1, act);
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    ASSERT_EQ(ss.profile.state, CGR_PROFILE_NONE);
    run_both(a, b, 1, 2, act + pre);
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    if (ss.profile.state == CGR_PROFILE_FAILED && under_sanitizer(NULL)) {
        printf("skipped under compute-sanitizer, which holds CUPTI: %s\n", ss.profile.error);
        exit(TEST_SKIP);
    }
    if (ss.profile.state != CGR_PROFILE_COLLECTING)
        TEST_FAIL_("the window did not open: state %d, %s", (int)ss.profile.state,
                   ss.profile.error);
    run_both(a, b, total - pre - 1, 3, act + pre + 1);
    for (int i = 0; i < total; i++) {
        cgr_run_action want = i < 2 ? CGR_RUN_WARMUP : i == 2 ? CGR_RUN_CAPTURE : CGR_RUN_REPLAY;
        if (i >= pre && i < pre + 2 * RUNS && (i - pre) % 2 == 0)
            want = CGR_RUN_EAGER; /* ABAB, eager first */
        if (act[i] != want)
            TEST_FAIL_("run %d was %s, expected %s", i, cgr_run_action_name(act[i]),
                       cgr_run_action_name(want));
    }
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    const cgr_profile_result *p = &ss.profile;
    if (p->state != CGR_PROFILE_DONE)
        TEST_FAIL_("profile state %d: %s", (int)p->state, p->error);
    ASSERT_EQ(p->status, CGR_STATUS_OK);
    ASSERT_U64_EQ(p->eager.runs, RUNS);
    ASSERT_U64_EQ(p->graph.runs, RUNS);
    ASSERT_U64_EQ(ss.eager_by_reason[CGR_EAGER_NONE], RUNS);
    ASSERT_U64_EQ(ss.eager_runs, RUNS);
    printf("tiny: eager wall %.1f us cpu %.1f us busy %.1f us (union %.1f) kernels %.2f idle "
           "%.2f; graph wall %.1f us cpu %.1f us busy %.1f us kernels %.2f idle %.2f; %.2fx; "
           "top %s (%.2f)\n",
           p->eager.wall_us, p->eager.cpu_us, p->eager.busy_us, p->eager.busy_union_us,
           p->eager.kernels, p->eager.idle_share, p->graph.wall_us, p->graph.cpu_us,
           p->graph.busy_us, p->graph.kernels, p->graph.idle_share, p->speedup, p->top_kernel,
           p->top_kernel_share);
    if (p->verdict != CGR_PROFILE_LAUNCH_BOUND)
        TEST_FAIL_("verdict %d, expected launch-bound (eager idle share %.3f)", (int)p->verdict,
                   p->eager.idle_share);
    ASSERT(p->eager.idle_share > 0.5);
    /* Exact counts: the eager body, and the graph's body plus cgr's staging kernels. */
    if (p->eager.kernels != TINY_KERNELS || p->graph.kernels != TINY_KERNELS + STAGING_KERNELS)
        TEST_FAIL_("kernels per run: eager %.3f (expected %d), graph %.3f (expected %d)",
                   p->eager.kernels, TINY_KERNELS, p->graph.kernels,
                   TINY_KERNELS + STAGING_KERNELS);
    /* 64 kernels of 256 elements: a few us each on the GPU, far below the eager wall. */
    ASSERT(p->eager.busy_us > 0 && p->eager.busy_us < 0.5 * p->eager.wall_us);
    ASSERT(p->eager.busy_union_us <= p->eager.busy_us + 1e-6);
    ASSERT(p->graph.busy_us > 0 && p->graph.busy_us < 64 * 20.0);
    ASSERT(p->eager.cpu_us > p->graph.cpu_us);
    ASSERT(p->speedup > 1.0);
    ASSERT(strstr(p->top_kernel, "pk_tiny_kernel") != NULL);
    /* The rest of the window's kernel time is cgr's two staging kernels:
     * under a microsecond each, but tens when nvcc compiled them for
     * debugging (-G, which meson passes at optimization 0). */
#ifdef CGR_TEST_DEVICE_O0
    ASSERT(p->top_kernel_share > 0.5);
#else
    ASSERT(p->top_kernel_share > 0.9);
#endif

    /* (d) The files. */
    char path[700], verdict[32];
    snprintf(path, sizeof path, "%s.tiny.json", prefix);
    json_string(path, "verdict", verdict, sizeof verdict);
    ASSERT_STR_EQ(verdict, "launch-bound");
    ASSERT(file_has(path, "\"top_kernels\":[{\"name\":"));
    snprintf(path, sizeof path, "%s.tiny.txt", prefix);
    ASSERT(file_has(path, "verdict: launch-bound"));
    ASSERT(file_has(path, "pk_tiny_kernel"));
    snprintf(path, sizeof path, "%s.tiny.trace.json", prefix);
    ASSERT(file_has(path, "{\"traceEvents\":["));
    ASSERT(file_has(path, "\"run 0 (eager)\""));
    ASSERT(file_has(path, "\"run 1 (graph)\""));
    check_ranges(path, RUNS, nvtx);
    snprintf(path, sizeof path, "%s.tiny.json", prefix);
    ASSERT(file_has(path, "\"ranges_open\":0,\"ranges_dropped\":0}"));

    ASSERT_OK(cgr_step_destroy(&a));
    ASSERT_OK(cgr_step_destroy(&b));
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_runtime_destroy(&plain));
}

/* Cycles of clock64 that take about 2 ms, and what they take (us), measured with events. */
static long long spin_cycles(double *took_us)
{
    int khz = 0;
    CUDA_OK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    long long cycles = (long long)khz * 2; /* 2 ms at the rated clock */
    float *buf = NULL;
    cudaEvent_t e0, e1;
    CUDA_OK(cudaMalloc((void **)&buf, 2 * LEN * sizeof(float)));
    CUDA_OK(cudaMemset(buf, 0, 2 * LEN * sizeof(float)));
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int i = 0; i < 5; i++) {
        float ms = 0;
        CUDA_OK(cudaEventRecord(e0, 0));
        CUDA_OK(pk_spin(buf + LEN, buf, LEN, cycles, 0));
        CUDA_OK(cudaEventRecord(e1, 0));
        CUDA_OK(cudaEventSynchronize(e1));
        CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
        if (i > 0 && ms < best) /* the first one loads the module */
            best = ms;
    }
    CUDA_OK(cudaEventDestroy(e0));
    CUDA_OK(cudaEventDestroy(e1));
    CUDA_OK(cudaFree(buf));
    *took_us = 1000.0 * best;
    return cycles;
}

static void test_gpu_bound(const char *dir)
{
    char prefix[600];
    if (snprintf(prefix, sizeof prefix, "%s/prof", dir) >= (int)sizeof prefix)
        TEST_FAIL_("%s: path too long", dir);
    double took = 0;
    spin_user u = {spin_cycles(&took)};
    printf("spin: %lld cycles take %.1f us\n", u.cycles, took);
    ASSERT(took > 1000.0 && took < 4000.0);
    enum { RUNS = 6, SKIP = 1 };
    cgr_runtime *rt = make_runtime(RUNS, SKIP, prefix), *plain = make_runtime(0, 0, NULL);
    cgr_step *a = make_xy(rt, "spin", LEN, spin_fn, &u);
    cgr_step *b = make_xy(plain, "spin", LEN, spin_fn, &u);
    run_both(a, b, before_window(SKIP) + 2 * RUNS + 3, 4, NULL);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    const cgr_profile_result *p = &ss.profile;
    if (p->state != CGR_PROFILE_DONE)
        TEST_FAIL_("profile state %d: %s", (int)p->state, p->error);
    printf("spin: eager wall %.1f us busy %.1f us idle %.3f; graph wall %.1f us busy %.1f us "
           "idle %.3f\n",
           p->eager.wall_us, p->eager.busy_us, p->eager.idle_share, p->graph.wall_us,
           p->graph.busy_us, p->graph.idle_share);
    if (p->verdict != CGR_PROFILE_GPU_BOUND)
        TEST_FAIL_("verdict %d, expected gpu-bound (eager idle share %.3f)", (int)p->verdict,
                   p->eager.idle_share);
    /* Busy per run: the spin (plus copies or staging kernels of a few us), within 15%. */
    ASSERT(p->eager.busy_us > 0.85 * took && p->eager.busy_us < 1.15 * took);
    ASSERT(p->graph.busy_us > 0.85 * took && p->graph.busy_us < 1.15 * took);
    ASSERT(p->eager.kernels == 1.0 && p->graph.kernels == 1.0 + STAGING_KERNELS);
    ASSERT(p->eager.idle_share < 0.5);
    char path[700], verdict[32];
    snprintf(path, sizeof path, "%s.spin.json", prefix);
    json_string(path, "verdict", verdict, sizeof verdict);
    ASSERT_STR_EQ(verdict, "gpu-bound");
    ASSERT_OK(cgr_step_destroy(&a));
    ASSERT_OK(cgr_step_destroy(&b));
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_runtime_destroy(&plain));
}

/* CGR_CUPTI_LIBRARY names a missing file: the profile says so, the runs are unaffected. */
static void test_absent(void)
{
    const char *lib = getenv("CGR_CUPTI_LIBRARY");
    if (!lib || !lib[0] || access(lib, F_OK) == 0)
        TEST_FAIL_("CGR_CUPTI_LIBRARY must name a file that does not exist (it is \"%s\")",
                   lib ? lib : "");
    cgr_runtime *rt = make_runtime(4, 0, "/nonexistent-dir/prof");
    cgr_runtime *plain = make_runtime(0, 0, NULL);
    cgr_step *a = make_xy(rt, "tiny", LEN, tiny_fn, NULL);
    cgr_step *b = make_xy(plain, "tiny", LEN, tiny_fn, NULL);
    cgr_run_action act[20];
    run_both(a, b, 20, 5, act);
    for (int i = 4; i < 20; i++)
        ASSERT_EQ(act[i], CGR_RUN_REPLAY);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    const cgr_profile_result *p = &ss.profile;
    printf("absent: %s\n", p->error);
    ASSERT_EQ(p->state, CGR_PROFILE_FAILED);
    ASSERT_EQ(p->status, CGR_STATUS_NOT_SUPPORTED);
    ASSERT_EQ(p->verdict, CGR_PROFILE_UNKNOWN);
    ASSERT(strncmp(p->error, "cgr_step_run: step 'tiny': no profile: ", 39) == 0);
    ASSERT(strstr(p->error, "CGR_CUPTI_LIBRARY") != NULL);
    ASSERT(strstr(p->error, lib) != NULL);
    ASSERT_U64_EQ(ss.eager_runs, 0);
    ASSERT_OK(cgr_step_destroy(&a));
    ASSERT_OK(cgr_step_destroy(&b));
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_runtime_destroy(&plain));
}

static void test_neighbour(const char *dir)
{
    char prefix[600];
    if (snprintf(prefix, sizeof prefix, "%s/prof", dir) >= (int)sizeof prefix)
        TEST_FAIL_("%s: path too long", dir);
    enum { RUNS = 20, SKIP = 0 };
    cgr_runtime *rt = make_runtime(RUNS, SKIP, prefix), *plain = make_runtime(0, 0, NULL);
    cgr_step *a = make_xy(rt, "neighbour", LEN, tiny_fn, NULL);
    cgr_step *b = make_xy(plain, "neighbour", LEN, tiny_fn, NULL);
    neighbour n;
    neighbour_start(&n);
    /* Through the window and past it: the run after the last one of the window closes it. */
    run_both(a, b, before_window(SKIP) + 2 * RUNS + 5, 11, NULL);
    long rounds = neighbour_stop(&n);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(a, &ss));
    if (ss.profile.state != CGR_PROFILE_DONE)
        TEST_FAIL_("profile state %d with a busy neighbour thread: %s", (int)ss.profile.state,
                   ss.profile.error);
    printf("neighbour: %ld rounds of its own kernels while the window collected and detached\n",
           rounds);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_runtime_destroy(&plain));
}

/* One run of the shaped step at n, waited for; what it did. */
static cgr_run_action shaped_run(cgr_step *s, int64_t n)
{
    static float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const void *in[1] = {x};
    uint64_t t = 0;
    ASSERT_OK(cgr_step_run(s, &n, in, &t));
    ASSERT_OK(cgr_step_wait(s, t));
    cgr_run_action a;
    ASSERT_OK(cgr_step_run_action(s, t, &a));
    return a;
}

static void test_shape_left(const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/prof", dir);
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.profile.runs = 2;
    o.profile.skip = 0;
    o.profile.path = path;
    o.shape_cache_entries = 1;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    static const int64_t buckets[3] = {1, 2, 4};
    cgr_tensor_desc in = tensor1("x", CGR_DTYPE_F32, 4), out = tensor1("y", CGR_DTYPE_F32, 4);
    cgr_dyn_dim dim = {.name = "n", .buckets = buckets, .n_buckets = 3, .max = 4};
    cgr_dim_use uses[2] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0}};
    cgr_step_desc d = step_desc("shaped", &in, 1, &out, 1, shaped_fn, NULL);
    d.dyn_dims = &dim;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    cgr_step *s = NULL;
    ASSERT_OK(cgr_step_create(rt, &d, &s));
    /* Shape 1: two warm-ups, its capture, its check, then half of its window. */
    for (int k = 0; k < 4; k++)
        (void)shaped_run(s, 1);
    ASSERT_EQ(shaped_run(s, 1), CGR_RUN_EAGER);
    ASSERT_EQ(shaped_run(s, 1), CGR_RUN_REPLAY);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.profile.state, CGR_PROFILE_COLLECTING);
    /* Shape 2 evicts it and takes its place in the table; its replays stay out of the window. */
    for (int k = 0; k < 4; k++)
        (void)shaped_run(s, 2);
    for (int k = 0; k < 200; k++) {
        cgr_run_action a = shaped_run(s, 2);
        if (a != CGR_RUN_REPLAY)
            TEST_FAIL_("replay %d of the second shape did %s: it joined the first's window", k,
                       cgr_run_action_name(a));
    }
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.profile.state, CGR_PROFILE_FAILED);
    if (!strstr(ss.profile.error, "stopped replaying"))
        TEST_FAIL_("the window that lost its shape ended with: %s", ss.profile.error);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("a window whose shape was evicted: the next shape replayed outside it, and it ended: "
           "%s\n", ss.profile.error);
}

int main(int argc, char **argv)
{
    require_gpu();
    unsetenv("CGR_PROFILE");
    if (argc > 1 && strcmp(argv[1], "absent") == 0) {
        test_absent();
        printf("PASS\n");
        return 0;
    }
    const int nvtx = argc > 1 && strcmp(argv[1], "nvtx") == 0;
    const char *inj = getenv("NVTX_INJECTION64_PATH");
    if (nvtx && (!inj || !inj[0] || access(inj, R_OK) != 0)) {
        printf("skipped: NVTX_INJECTION64_PATH does not name a readable libcupti (\"%s\"); the "
               "build found none to point it at\n", inj ? inj : "");
        return TEST_SKIP;
    }
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/cgr-profile-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir))
        TEST_FAIL_("mkdtemp(%s) failed", dir);
    test_launch_bound(dir, nvtx);
    if (!nvtx) {
        test_gpu_bound(dir);
        test_neighbour(dir);
        test_shape_left(dir);
    }
    static const char *const files[] = {"tiny.txt",     "tiny.json",      "tiny.trace.json",
                                        "spin.txt",     "spin.json",      "spin.trace.json",
                                        "neighbour.txt", "neighbour.json", "neighbour.trace.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[700];
        if (snprintf(path, sizeof path, "%s/prof.%s", dir, files[i]) < (int)sizeof path)
            (void)unlink(path);
    }
    (void)rmdir(dir);
    printf("PASS\n");
    return 0;
}
