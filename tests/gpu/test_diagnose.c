/*
 * The capture diagnosis (cgr_options.diagnose): a step makes an illegal
 * call during capture and then clears the error with cudaGetLastError(),
 * as code with its own error checks often does. Without the diagnosis the
 * message can only say that an earlier call broke the capture, and points
 * at CGR_DIAGNOSE; with it, cgr runs the capture once more while watching
 * every CUDA call and names the first one that failed, its error and the
 * function that made it (diag_bad_step is exported, --export-dynamic in
 * tests/meson.build, so that dladdr finds its name), with the file and
 * line of the call (this file is compiled with -g, so its line table is
 * there to read). Every run's output is checked: the failed capture's run
 * executes eagerly. Once more with another thread making CUDA calls all
 * the while, which the watch and the detach after it must leave alone, and
 * with two threads whose captures fail at once: CUDA has one API watcher
 * per process, so the second diagnosis waits for the first and both name
 * their call.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, nanosleep */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "kernels.h"
#include "neighbour.h"

enum { LEN = 2048, RUNS = 5 };

typedef enum bad { MALLOC, SYNC, EVENT_QUERY } bad;

/* Two threads' failing steps, counting their captures (test_two_at_once). */
typedef struct rendezvous {
    int captures[2];
} rendezvous;

typedef struct bad_step {
    bad kind;
    cudaEvent_t ev;
    int line;         /* of the call that breaks the capture */
    rendezvous *pair; /* NULL: a step alone */
    int idx;          /* its thread's index in pair */
} bad_step;

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    (void)nanosleep(&t, NULL);
}

/*
 * A step's second capture is its diagnosis, which holds the process's one
 * watch of the CUDA API. It lingers there until the other thread's capture
 * has failed too and that thread had time to ask for its own diagnosis.
 */
static void linger_in_diagnosis(bad_step *b)
{
    rendezvous *r = b->pair;
    if (__atomic_add_fetch(&r->captures[b->idx], 1, __ATOMIC_ACQ_REL) != 2)
        return;
    for (int i = 0; i < 5000 && __atomic_load_n(&r->captures[1 - b->idx], __ATOMIC_ACQUIRE) < 1;
         i++)
        sleep_ms(1);
    sleep_ms(50);
}

/* Exported (the build hides symbols by default): the diagnosis names the caller by it. */
__attribute__((visibility("default"))) cgr_status diag_bad_step(cgr_ctx *ctx, void *user);
cgr_status diag_bad_step(cgr_ctx *ctx, void *user)
{
    bad_step *b = user;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(tk_affine(y, x, LEN, st));
    if (b->pair && cgr_ctx_is_capturing(ctx))
        linger_in_diagnosis(b);
    if (b->kind == MALLOC) {
        void *p = NULL;
        b->line = __LINE__ + 1;
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            (void)cudaFree(p);
    } else if (b->kind == SYNC) {
        b->line = __LINE__ + 1;
        (void)cudaStreamSynchronize(st);
    } else {
        (void)cudaEventRecord(b->ev, st);
        b->line = __LINE__ + 1;
        (void)cudaEventQuery(b->ev);
    }
    (void)cudaGetLastError(); /* the step's own checks clear what it saw */
    return CGR_STATUS_OK;
}

/* One run of s on fresh inputs, its output checked. */
static void run_checked(cgr_step *s, rng *r, int k)
{
    float x[LEN];
    rng_fill(r, x, LEN);
    const void *ins[1] = {x};
    uint64_t t;
    ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
    ASSERT_OK(cgr_step_wait(s, t));
    const float *y = test_output(s, t, 0, NULL);
    check_affine(x, y, LEN, 1, "run %d", k);
}

/* RUNS runs, each checked; returns the step's stats, and in *line that of its bad call.
 * pair: the rendezvous of test_two_at_once, and idx this thread's place in it. */
static cgr_step_stats run_bad_in(int diagnose, bad kind, rng *r, int *line, rendezvous *pair,
                                 int idx)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.diagnose = diagnose;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    bad_step b = {kind, NULL, 0, pair, idx};
    CUDA_OK(cudaEventCreateWithFlags(&b.ev, cudaEventDisableTiming));
    cgr_step *s = make_xy(rt, "bad", LEN, diag_bad_step, &b);
    for (int k = 0; k < RUNS; k++)
        run_checked(s, r, k);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
    ASSERT_U64_EQ(ss.capture_failures, 1);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    CUDA_OK(cudaEventDestroy(b.ev));
    ASSERT_GT(b.line, 0);
    *line = b.line;
    return ss;
}

static cgr_step_stats run_bad(int diagnose, bad kind, rng *r, int *line)
{
    return run_bad_in(diagnose, kind, r, line, NULL, 0);
}

static void expect(const char *msg, const char *want)
{
    if (!strstr(msg, want))
        TEST_FAIL_("the message lacks \"%s\": %s", want, msg);
}

typedef struct twin {
    rendezvous *pair;
    int idx;
    cgr_step_stats stats;
} twin;

static void *twin_main(void *arg)
{
    twin *t = arg;
    rng r = {100u + (unsigned)t->idx};
    int line = 0;
    t->stats = run_bad_in(1, SYNC, &r, &line, t->pair, t->idx);
    return NULL;
}

/*
 * Two threads, each with its own runtime, whose captures fail at once.
 * Whichever diagnosis comes first holds the watch until the other thread
 * has asked for its own; that one waits, then is diagnosed in turn. Both
 * name cudaStreamSynchronize; neither is told that the API could not be
 * watched, which is the answer for a profile window alone.
 */
static void test_two_at_once(void)
{
    rendezvous pair = {{0, 0}};
    twin t[2] = {{&pair, 0, {0}}, {&pair, 1, {0}}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, twin_main, &t[i]), 0);
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        const char *msg = t[i].stats.capture_error;
        printf("two at once, thread %d: %s\n", i, msg);
        if (under_sanitizer(NULL) && strstr(msg, "could not be watched"))
            continue;
        expect(msg, "the first failing call was cudaStreamSynchronize (");
        expect(msg, "called from diag_bad_step+0x");
    }
}

/*
 * A capture that fails while another step's profile window collects: the
 * watch would end the window's CUPTI collection (cuptiFinalize), so the
 * diagnosis says it cannot watch, the failed capture's runs still execute,
 * and the window completes with its exact kernel counts. Once the window
 * has closed, the next failing capture is diagnosed again.
 */
static void test_during_window(rng *r)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], prefix[600];
    snprintf(dir, sizeof dir, "%s/cgr-diagnose-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir))
        TEST_FAIL_("mkdtemp(%s) failed", dir);
    snprintf(prefix, sizeof prefix, "%s/p", dir);
    enum { WINDOW = 20 };
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.diagnose = 1;
    o.profile.runs = WINDOW;
    o.profile.skip = 0;
    o.profile.path = prefix;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    cgr_step *good = make_xy(rt, "good", LEN, affine_step, NULL);
    cgr_step_stats gs;
    int k = 0;
    do {
        run_checked(good, r, k++);
        ASSERT_OK(cgr_step_get_stats(good, &gs));
    } while (gs.profile.state == CGR_PROFILE_NONE && k < 10);
    if (gs.profile.state == CGR_PROFILE_FAILED && under_sanitizer(NULL)) {
        printf("window skipped under compute-sanitizer, which holds CUPTI: %s\n",
               gs.profile.error);
        ASSERT_OK(cgr_runtime_destroy(&rt));
        (void)rmdir(dir);
        return;
    }
    if (gs.profile.state != CGR_PROFILE_COLLECTING)
        TEST_FAIL_("the window did not open: state %d, %s", (int)gs.profile.state,
                   gs.profile.error);

    bad_step b = {SYNC, NULL, 0, NULL, 0};
    cgr_step *bad1 = make_xy(rt, "bad_in_window", LEN, diag_bad_step, &b);
    for (int i = 0; i < RUNS; i++)
        run_checked(bad1, r, i);
    cgr_step_stats bs;
    ASSERT_OK(cgr_step_get_stats(bad1, &bs));
    ASSERT_U64_EQ(bs.capture_failures, 1);
    printf("in a window: %s\n", bs.capture_error);
    expect(bs.capture_error, "could not be watched while a profile window");

    for (int i = 0; i < 2 * WINDOW + 5 && gs.profile.state == CGR_PROFILE_COLLECTING; i++) {
        run_checked(good, r, k++);
        ASSERT_OK(cgr_step_get_stats(good, &gs));
    }
    const cgr_profile_result *p = &gs.profile;
    if (p->state != CGR_PROFILE_DONE)
        TEST_FAIL_("profile state %d: %s", (int)p->state, p->error);
    /* One kernel eagerly; the graph adds cgr's two staging kernels. */
    if (p->eager.kernels != 1.0 || p->graph.kernels != 3.0)
        TEST_FAIL_("kernels per run: eager %.2f, graph %.2f; expected 1 and 3",
                   p->eager.kernels, p->graph.kernels);

    cgr_step *bad2 = make_xy(rt, "bad_after_window", LEN, diag_bad_step, &b);
    for (int i = 0; i < RUNS; i++)
        run_checked(bad2, r, i);
    ASSERT_OK(cgr_step_get_stats(bad2, &bs));
    printf("after the window: %s\n", bs.capture_error);
    expect(bs.capture_error, "the first failing call was cudaStreamSynchronize (");
    ASSERT_OK(cgr_runtime_destroy(&rt));
    static const char *const files[] = {"good.txt", "good.json", "good.trace.json"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[700];
        if (snprintf(path, sizeof path, "%s.%s", prefix, files[i]) < (int)sizeof path)
            (void)unlink(path);
    }
    (void)rmdir(dir);
}

int main(void)
{
    require_gpu();
    rng r = {3};
    int line = 0;
    cgr_step_stats ss = run_bad(0, MALLOC, &r, &line);
    printf("without diagnosis: %s\n", ss.capture_error);
    expect(ss.capture_error, "cudaErrorStreamCaptureInvalidated");
    expect(ss.capture_error, "CGR_DIAGNOSE=1");

    static const struct {
        bad kind;
        const char *call, *error;
    } cases[] = {
        {MALLOC, "cudaMalloc", "cudaErrorStreamCaptureUnsupported"},
        {SYNC, "cudaStreamSynchronize", "cudaErrorStreamCaptureUnsupported"},
        {EVENT_QUERY, "cudaEventQuery", "cudaErrorStreamCapture"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ss = run_bad(1, cases[i].kind, &r, &line);
        printf("diagnosed: %s\n", ss.capture_error);
        if (under_sanitizer(NULL) && strstr(ss.capture_error, "could not be watched"))
            continue; /* the sanitizer may hold CUDA's one tool slot itself */
        char want[128];
        snprintf(want, sizeof want, "the first failing call was %s (", cases[i].call);
        expect(ss.capture_error, want);
        expect(ss.capture_error, cases[i].error);
        expect(ss.capture_error, "called from diag_bad_step+0x");
        /* "diag_bad_step+0x5c at ../tests/gpu/test_diagnose.c:48 (test_gpu_diagnose+0x6117)" */
        snprintf(want, sizeof want, "test_diagnose.c:%d (test_gpu_diagnose+0x", line);
        expect(ss.capture_error, want);
    }
    /*
     * The watch and the detach that ends it, while another thread keeps
     * making CUDA calls: the diagnosis still names the step's own call
     * (the watch looks at the capturing thread only), and every call of
     * the other thread succeeds, before, during and after the detach.
     */
    neighbour n;
    neighbour_start(&n);
    ss = run_bad(1, SYNC, &r, &line);
    long rounds = neighbour_stop(&n);
    printf("diagnosed beside a busy thread (%ld rounds of its own): %s\n", rounds,
           ss.capture_error);
    if (!(under_sanitizer(NULL) && strstr(ss.capture_error, "could not be watched"))) {
        expect(ss.capture_error, "the first failing call was cudaStreamSynchronize (");
        expect(ss.capture_error, "called from diag_bad_step+0x");
    }
    test_two_at_once();
    test_during_window(&r);
    printf("PASS\n");
    return 0;
}
