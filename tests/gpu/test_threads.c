/*
 * Threads (docs/threading.md).
 *
 * (a) One runtime per thread: 8 threads, each with its own runtime, step
 *     and persistent bias, run 10,000 steps each with fresh random inputs.
 *     They start together, so each thread's warm-up and capture overlap the
 *     other threads' replays. Every output is compared bit for bit with the
 *     host (the kernels are deterministic, see kernels.cu).
 * (b) One runtime shared by two threads: both hammer one shared step (runs
 *     in bursts, through both cgr_step_run and acquire/launch) and each its
 *     own step. Every result must be right or a documented status: BUSY
 *     (slots full, the other thread holds the acquired slot, capture
 *     postponed while the other thread waits) or INVALID_ARGUMENT from
 *     cgr_step_output (the other thread's runs reused the slot: the
 *     result is gone, never mixed). The thread's own step never sees either.
 *     Afterwards the counters add up and the runtime still works.
 * (c) Cross-thread acquire, deterministically: while one thread holds the
 *     acquired slot, another gets BUSY from acquire/run/destroy and
 *     WRONG_STATE from launching it.
 * (d) cgr calls from inside a step function return WRONG_STATE, not a
 *     deadlock on the runtime's lock.
 * (e) A run due for its frozen-value check while another thread waits on
 *     the step, deterministically (the awaited run held on the GPU by a
 *     gate kernel): BUSY, and nothing of the step or its shape counted;
 *     once the wait is over the same run goes through and is checked.
 * (f) The capture run of a shape whose scratch the arena cannot back,
 *     while another thread waits on the step: it records nothing (its
 *     capture fails at once), so it is not refused; it runs eagerly,
 *     queued behind the held run, and both results are right.
 *
 * Under compute-sanitizer everything is far slower, so the counts shrink:
 * the meson sanitizer setups set CGR_TEST_SANITIZER (to the tool's name); CGR_TEST_SCALE=F
 * (0 < F <= 1) scales them by hand.
 *
 * No thread touches the legacy default stream (cudaMemcpy, cudaMemset) or
 * synchronizes the device once the workers run: while any thread captures,
 * that would fail its capture (docs/threading.md). Host references need
 * neither.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "kernels.h"

#define A_THREADS 8
#define A_STEPS 10000
#define B_ITERS 5000
#define MAX_ROWS 8
#define MAX_COLS 160

/*
 * A failure on a worker thread: print and leave at once. _exit rather than
 * exit, so that no atexit handler (CUDA's teardown) runs under the other
 * threads' CUDA calls.
 */
#define T_FAIL(...)                                                                        \
    do {                                                                                   \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
        fprintf(stderr, __VA_ARGS__);                                                      \
        fprintf(stderr, "\n");                                                             \
        fflush(stderr);                                                                    \
        _exit(1);                                                                          \
    } while (0)
#define T_ASSERT(expr)                                                                     \
    do {                                                                                   \
        if (!(expr))                                                                       \
            T_FAIL("assertion failed: %s", #expr);                                         \
    } while (0)
#define T_STATUS(call, want)                                                               \
    do {                                                                                   \
        cgr_status s_ = (call);                                                            \
        if (s_ != (want))                                                                  \
            T_FAIL("%s returned %s, expected %s (last error: %s)", #call,                  \
                   cgr_status_name(s_), cgr_status_name(want), cgr_last_error());          \
    } while (0)
#define T_OK(call) T_STATUS(call, CGR_STATUS_OK)
#define T_CUDA(expr)                                                                       \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            T_FAIL("%s: %s", #expr, cudaGetErrorString(e_));                               \
    } while (0)

static double g_scale = 1.0;

static int scaled(int n)
{
    int v = (int)(n * g_scale);
    return v < 50 ? 50 : v;
}

static void read_scale(void)
{
    const char *san = getenv("CGR_TEST_SANITIZER");
    if (san && san[0] && strcmp(san, "0") != 0)
        g_scale = 0.02;
    const char *s = getenv("CGR_TEST_SCALE");
    if (s && s[0]) {
        double v = atof(s);
        if (v > 0.0 && v <= 1.0)
            g_scale = v;
    }
}

/* ---- the step: h = relu(x + bias) (scratch), y = 2h + 1, rows = sum 0.5 h ---- */

typedef struct model {
    int rows, cols;
    float *bias;                /* persistent device copy */
    float bias_host[MAX_COLS];  /* for the host reference */
} model;

static cgr_status small_step(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cgr_stream st;
    float *x, *y, *rs, *h;
    size_t n = (size_t)m->rows * (size_t)m->cols;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_output(ctx, 1, (void **)&rs));
    STEP_TRY(cgr_ctx_alloc(ctx, n * sizeof(float), (void **)&h));
    STEP_CUDA(tk_bias_relu(h, x, m->bias, m->rows, m->cols, st));
    STEP_CUDA(tk_affine(y, h, n, st));
    STEP_CUDA(tk_row_sum(rs, h, m->rows, m->cols, st));
    STEP_TRY(cgr_ctx_free(ctx, h));
    return CGR_STATUS_OK;
}

/*
 * The same arithmetic on the host. Each device operation rounds once and so
 * does each of these (2h and 0.5h are exact; ISO C mode does not contract
 * a*b+c into an fma), so the results are equal bit for bit.
 */
static void reference(const model *m, const float *x, float *y, float *rs)
{
    for (int r = 0; r < m->rows; r++) {
        float acc = 0.0f;
        for (int c = 0; c < m->cols; c++) {
            float v = x[r * m->cols + c] + m->bias_host[c];
            float h = v > 0.0f ? v : 0.0f;
            y[r * m->cols + c] = 2.0f * h + 1.0f;
            acc += 0.5f * h;
        }
        rs[r] = acc;
    }
}

/* Fails unless got[0..n) equals want[0..n) bit for bit. */
static void expect_bits(const char *what, int who, uint64_t ticket, const float *got,
                        const float *want, size_t n)
{
    if (memcmp(got, want, n * sizeof(float)) == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0)
            T_FAIL("thread %d, run %llu: %s[%zu] = %.9g, expected %.9g", who,
                   (unsigned long long)ticket, what, i, got[i], want[i]);
}

static void model_init(model *m, cgr_runtime *rt, rng *r, int rows, int cols)
{
    cgr_stream st;
    m->rows = rows;
    m->cols = cols;
    rng_fill(r, m->bias_host, (size_t)cols);
    T_OK(cgr_persistent_alloc(rt, (size_t)cols * sizeof(float), (void **)&m->bias));
    /* On the runtime's own stream, not cudaMemcpy: see the top of the file. */
    T_OK(cgr_runtime_stream(rt, &st));
    T_CUDA(cudaMemcpyAsync(m->bias, m->bias_host, (size_t)cols * sizeof(float),
                           cudaMemcpyHostToDevice, st));
    T_CUDA(cudaStreamSynchronize(st));
}

static cgr_step *model_step(cgr_runtime *rt, const char *name, model *m)
{
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, m->rows, m->cols);
    cgr_tensor_desc out[2] = {tensor2("y", CGR_DTYPE_F32, m->rows, m->cols),
                              tensor1("rows", CGR_DTYPE_F32, m->rows)};
    cgr_step_desc d;
    T_OK(cgr_step_desc_init(&d));
    d.name = name;
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = out;
    d.n_outputs = 2;
    d.fn = small_step;
    d.user = m;
    cgr_step *s = NULL;
    T_OK(cgr_step_create(rt, &d, &s));
    return s;
}

/* ---- (a) one runtime per thread ---------------------------------------- */

typedef struct worker_a {
    int id, steps;
    pthread_barrier_t *start;
} worker_a;

#define A_SLOTS 3

static void *run_own_runtime(void *arg)
{
    worker_a *w = arg;
    rng r = {0x9e3779b97f4a7c15ULL * (uint64_t)(w->id + 1)};
    cgr_options o;
    T_OK(cgr_options_init(&o));
    o.staging_slots = A_SLOTS;
    cgr_runtime *rt = NULL;
    T_OK(cgr_runtime_create(&rt, &o));
    model m;
    /* Different shapes per thread, so a mix-up between runtimes would show. */
    model_init(&m, rt, &r, 2 + w->id % 5, 32 + 16 * w->id);
    cgr_step *s = model_step(rt, "own", &m);
    size_t n = (size_t)m.rows * (size_t)m.cols;

    static _Thread_local float xs[A_SLOTS][MAX_ROWS * MAX_COLS];
    float y[MAX_ROWS * MAX_COLS], rs[MAX_ROWS];
    pthread_barrier_wait(w->start);
    /* Two runs in flight: the host fills run k while the GPU still runs k - 1. */
    for (int k = 0; k <= w->steps; k++) {
        if (k < w->steps) {
            float *x = xs[k % A_SLOTS];
            rng_fill(&r, x, n);
            uint64_t t = 0;
            if (k % 2) {
                cgr_slot slot;
                T_OK(cgr_step_acquire(s, NULL, 0, &slot));
                memcpy(slot.inputs[0], x, n * sizeof(float));
                T_OK(cgr_step_launch(s, &slot));
                t = slot.ticket;
            } else {
                const void *ins[1] = {x};
                T_OK(cgr_step_run(s, NULL, ins, &t));
            }
            T_ASSERT(t == (uint64_t)k);
        }
        if (k == 0)
            continue;
        uint64_t t = (uint64_t)k - 1;
        const void *py, *prs;
        T_OK(cgr_step_wait(s, t));
        py = test_output(s, t, 0, NULL);
        prs = test_output(s, t, 1, NULL);
        reference(&m, xs[t % A_SLOTS], y, rs);
        expect_bits("y", w->id, t, py, y, n);
        expect_bits("rows", w->id, t, prs, rs, (size_t)m.rows);
    }

    cgr_step_stats ss;
    T_OK(cgr_step_get_stats(s, &ss));
    T_ASSERT(ss.mode == CGR_MODE_GRAPH);
    T_ASSERT(ss.runs == (uint64_t)w->steps);
    T_ASSERT(ss.captures == 1);
    T_ASSERT(ss.replays == (uint64_t)w->steps - ss.warmup_runs);
    cgr_runtime_stats rs_;
    T_OK(cgr_runtime_get_stats(rt, &rs_));
    T_ASSERT(rs_.runs == (uint64_t)w->steps);
    T_ASSERT(rs_.warmup_runs + rs_.replays + rs_.eager_runs == rs_.runs);
    T_ASSERT(rs_.steps == 1);
    T_OK(cgr_runtime_destroy(&rt));
    return NULL;
}

static void test_own_runtimes(void)
{
    pthread_t th[A_THREADS];
    worker_a w[A_THREADS];
    pthread_barrier_t start;
    ASSERT_EQ(pthread_barrier_init(&start, NULL, A_THREADS), 0);
    int steps = scaled(A_STEPS);
    double t0 = 0;
    {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t0 = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    }
    for (int i = 0; i < A_THREADS; i++) {
        w[i].id = i;
        w[i].steps = steps;
        w[i].start = &start;
        ASSERT_EQ(pthread_create(&th[i], NULL, run_own_runtime, &w[i]), 0);
    }
    for (int i = 0; i < A_THREADS; i++)
        ASSERT_EQ(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("(a) %d threads x %d steps, own runtime each, all outputs bitwise right: %.2f s\n",
           A_THREADS, steps, (double)ts.tv_sec + ts.tv_nsec * 1e-9 - t0);
}

/* ---- (b) one runtime, two threads --------------------------------------- */

typedef struct shared_rt {
    cgr_runtime *rt;
    cgr_step *shared;
    model shared_m;
    pthread_barrier_t *start;
} shared_rt;

typedef struct worker_b {
    int id, iters;
    shared_rt *sh;
    cgr_step *own;
    model own_m;
    /* What happened, for the totals. */
    uint64_t shared_runs, own_runs, busy, lost, checked;
} worker_b;

/* Waits for run t of s and checks both outputs; returns how many were lost. */
static int check_shared(worker_b *w, cgr_step *s, const model *m, uint64_t t, const float *x,
                        int may_lose)
{
    float want_y[MAX_ROWS * MAX_COLS], want_rs[MAX_ROWS];
    float got_y[MAX_ROWS * MAX_COLS], got_rs[MAX_ROWS];
    size_t n = (size_t)m->rows * (size_t)m->cols;
    T_OK(cgr_step_wait(s, t));
    reference(m, x, want_y, want_rs);
    int lost = 0;
    cgr_status a = cgr_step_output(s, t, 0, got_y, sizeof got_y, NULL);
    cgr_status b = cgr_step_output(s, t, 1, got_rs, sizeof got_rs, NULL);
    if (a == CGR_STATUS_OK)
        expect_bits("y", w->id, t, got_y, want_y, n);
    else if (may_lose && a == CGR_STATUS_INVALID_ARGUMENT)
        lost = 1;
    else
        T_FAIL("copy_output(y) of run %llu: %s: %s", (unsigned long long)t, cgr_status_name(a),
               cgr_last_error());
    if (b == CGR_STATUS_OK)
        expect_bits("rows", w->id, t, got_rs, want_rs, (size_t)m->rows);
    else if (may_lose && b == CGR_STATUS_INVALID_ARGUMENT)
        lost = 1;
    else
        T_FAIL("copy_output(rows) of run %llu: %s: %s", (unsigned long long)t,
               cgr_status_name(b), cgr_last_error());
    w->checked += (a == CGR_STATUS_OK) + (b == CGR_STATUS_OK);
    return lost;
}

/*
 * A burst of up to two runs of the shared step, then their results. Thread
 * 1 launches every other burst's first run through acquire/launch, so
 * thread 0 meets a slot held by another thread.
 */
static void shared_burst(worker_b *w, rng *r, int i)
{
    cgr_step *s = w->sh->shared;
    const model *m = &w->sh->shared_m;
    size_t n = (size_t)m->rows * (size_t)m->cols;
    float x[2][MAX_ROWS * MAX_COLS];
    uint64_t t[2];
    int have[2] = {0, 0};
    for (int j = 0; j < 2; j++) {
        rng_fill(r, x[j], n);
        cgr_status st;
        if (w->id == 1 && j == 0 && i % 2) {
            cgr_slot slot;
            st = cgr_step_acquire(s, NULL, 0, &slot);
            if (st == CGR_STATUS_OK) {
                memcpy(slot.inputs[0], x[j], n * sizeof(float));
                st = cgr_step_launch(s, &slot);
                t[j] = slot.ticket;
            }
        } else {
            const void *ins[1] = {x[j]};
            st = cgr_step_run(s, NULL, ins, &t[j]);
        }
        if (st == CGR_STATUS_BUSY) {
            w->busy++;
            sched_yield();
            continue;
        }
        if (st != CGR_STATUS_OK)
            T_FAIL("thread %d: shared step run: %s: %s", w->id, cgr_status_name(st),
                   cgr_last_error());
        have[j] = 1;
        w->shared_runs++;
    }
    for (int j = 0; j < 2; j++)
        if (have[j])
            w->lost += (uint64_t)check_shared(w, s, m, t[j], x[j], 1);
}

static void own_run(worker_b *w, rng *r)
{
    float x[MAX_ROWS * MAX_COLS];
    size_t n = (size_t)w->own_m.rows * (size_t)w->own_m.cols;
    rng_fill(r, x, n);
    const void *ins[1] = {x};
    uint64_t t;
    /* Nobody else touches this step: the other thread may only make us wait for the lock. */
    T_OK(cgr_step_run(w->own, NULL, ins, &t));
    w->own_runs++;
    check_shared(w, w->own, &w->own_m, t, x, 0);
}

static void *run_shared_runtime(void *arg)
{
    worker_b *w = arg;
    rng r = {0xabcdef12345ULL + 977ULL * (uint64_t)w->id};
    pthread_barrier_wait(w->sh->start);
    for (int i = 0; i < w->iters; i++) {
        if (i % 3 == 2)
            own_run(w, &r);
        else
            shared_burst(w, &r, i);
    }
    return NULL;
}

static void test_shared_runtime(void)
{
    rng r = {0x5eed5eedULL};
    shared_rt sh;
    memset(&sh, 0, sizeof sh);
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = 2; /* as few as possible: the most contention */
    ASSERT_OK(cgr_runtime_create(&sh.rt, &o));
    model_init(&sh.shared_m, sh.rt, &r, 4, 64);
    sh.shared = model_step(sh.rt, "shared", &sh.shared_m);
    worker_b w[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; i++) {
        w[i].id = i;
        w[i].iters = scaled(B_ITERS);
        w[i].sh = &sh;
        model_init(&w[i].own_m, sh.rt, &r, 3 + 2 * i, 32 + 16 * i);
        w[i].own = model_step(sh.rt, i ? "own1" : "own0", &w[i].own_m);
    }
    pthread_barrier_t start;
    ASSERT_EQ(pthread_barrier_init(&start, NULL, 2), 0);
    sh.start = &start;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, run_shared_runtime, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        ASSERT_EQ(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&start);

    /* The counters add up: every OK launch counted once, nothing else. */
    cgr_step_stats ss, so[2];
    ASSERT_OK(cgr_step_get_stats(sh.shared, &ss));
    ASSERT_U64_EQ(ss.runs, w[0].shared_runs + w[1].shared_runs);
    ASSERT_U64_EQ(ss.runs, ss.warmup_runs + ss.replays + ss.eager_runs);
    uint64_t total = ss.runs, captures = ss.captures;
    for (int i = 0; i < 2; i++) {
        ASSERT_OK(cgr_step_get_stats(w[i].own, &so[i]));
        ASSERT_U64_EQ(so[i].runs, w[i].own_runs);
        ASSERT_EQ(so[i].mode, CGR_MODE_GRAPH);
        ASSERT_U64_EQ(so[i].captures, 1);
        total += so[i].runs;
        captures += so[i].captures;
    }
    cgr_runtime_stats rs;
    ASSERT_OK(cgr_runtime_get_stats(sh.rt, &rs));
    ASSERT_U64_EQ(rs.steps, 3);
    ASSERT_U64_EQ(rs.runs, total);
    ASSERT_U64_EQ(rs.warmup_runs + rs.replays + rs.eager_runs, rs.runs);
    ASSERT_U64_EQ(rs.captures, captures);

    /* Still usable from one thread: each step runs and is right (the shared
     * one captures here at the latest, if the threads always postponed it). */
    worker_b solo;
    memset(&solo, 0, sizeof solo);
    solo.id = 99;
    for (int k = 0; k < 4; k++) {
        float x[MAX_ROWS * MAX_COLS];
        rng_fill(&r, x, (size_t)sh.shared_m.rows * (size_t)sh.shared_m.cols);
        const void *ins[1] = {x};
        uint64_t t;
        ASSERT_OK(cgr_step_run(sh.shared, NULL, ins, &t));
        check_shared(&solo, sh.shared, &sh.shared_m, t, x, 0);
        solo.own = w[k % 2].own;
        solo.own_m = w[k % 2].own_m;
        own_run(&solo, &r);
    }
    ASSERT_OK(cgr_step_get_stats(sh.shared, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    /* A destroyed step's runs stay in the runtime's counters. */
    cgr_runtime_stats before;
    ASSERT_OK(cgr_runtime_get_stats(sh.rt, &before));
    ASSERT_OK(cgr_step_destroy(&w[0].own));
    ASSERT_OK(cgr_runtime_get_stats(sh.rt, &rs));
    ASSERT_U64_EQ(rs.steps, 2);
    ASSERT_U64_EQ(rs.runs, before.runs);
    ASSERT_U64_EQ(rs.replays, before.replays);
    ASSERT_U64_EQ(rs.captures, before.captures);
    /* Summed in another order: equal up to rounding. */
    ASSERT(fabs(rs.capture_us - before.capture_us) <= 1e-9 * before.capture_us);
    ASSERT(rs.capture_us > 0);
    ASSERT_OK(cgr_runtime_destroy(&sh.rt));
    printf("(b) 2 threads x %d iterations on one runtime: shared step %llu + %llu runs, own "
           "steps %llu + %llu runs, %llu outputs checked bitwise, %llu BUSY, %llu results "
           "lost to the other thread's runs\n",
           w[0].iters, (unsigned long long)w[0].shared_runs,
           (unsigned long long)w[1].shared_runs, (unsigned long long)w[0].own_runs,
           (unsigned long long)w[1].own_runs,
           (unsigned long long)(w[0].checked + w[1].checked + solo.checked),
           (unsigned long long)(w[0].busy + w[1].busy),
           (unsigned long long)(w[0].lost + w[1].lost));
}

/* ---- (c) a slot acquired by another thread ------------------------------ */

typedef struct intruder {
    cgr_runtime *rt;
    cgr_step *s;
    const cgr_slot *held;
} intruder;

static void *intrude(void *arg)
{
    intruder *in = arg;
    float x[4 * 64];
    memset(x, 0, sizeof x);
    const void *ins[1] = {x};
    cgr_slot slot;
    T_STATUS(cgr_step_acquire(in->s, NULL, 0, &slot), CGR_STATUS_BUSY);
    T_STATUS(cgr_step_run(in->s, NULL, ins, NULL), CGR_STATUS_BUSY);
    T_ASSERT(strstr(cgr_last_error(), "another thread") != NULL);
    /* The other thread may still be writing that slot's inputs. */
    T_STATUS(cgr_step_launch(in->s, in->held), CGR_STATUS_WRONG_STATE);
    cgr_step *s = in->s;
    T_STATUS(cgr_step_destroy(&s), CGR_STATUS_BUSY);
    T_ASSERT(s == in->s);
    cgr_runtime *rt = in->rt;
    T_STATUS(cgr_runtime_destroy(&rt), CGR_STATUS_BUSY);
    T_ASSERT(rt == in->rt);
    /* Reading is no conflict. */
    cgr_step_stats ss;
    T_OK(cgr_step_get_stats(in->s, &ss));
    T_ASSERT(ss.mode == CGR_MODE_GRAPH);
    return NULL;
}

static void test_cross_thread_acquire(void)
{
    rng r = {0xc0ffeeULL};
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));
    model m;
    model_init(&m, rt, &r, 4, 64);
    cgr_step *s = model_step(rt, "held", &m);
    size_t n = (size_t)m.rows * (size_t)m.cols;
    float x[4 * 64], y[4 * 64], rs[4], got_y[4 * 64], got_rs[4];
    /* Warm-up and capture first: the test is about the slot, not the capture. */
    for (int k = 0; k < 4; k++) {
        rng_fill(&r, x, n);
        const void *ins[1] = {x};
        uint64_t t;
        ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(s, t));
    }
    cgr_slot slot, again;
    ASSERT_OK(cgr_step_acquire(s, NULL, 0, &slot));
    /* The same thread acquiring twice is its own mistake, not contention. */
    ASSERT_STATUS(cgr_step_acquire(s, NULL, 0, &again), CGR_STATUS_WRONG_STATE);
    intruder in = {rt, s, &slot};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, intrude, &in), 0);
    ASSERT_EQ(pthread_join(th, NULL), 0);
    rng_fill(&r, x, n);
    memcpy(slot.inputs[0], x, n * sizeof(float));
    ASSERT_OK(cgr_step_launch(s, &slot));
    ASSERT_OK(cgr_step_wait(s, slot.ticket));
    ASSERT_OK(cgr_step_output(s, slot.ticket, 0, got_y, sizeof got_y, NULL));
    ASSERT_OK(cgr_step_output(s, slot.ticket, 1, got_rs, sizeof got_rs, NULL));
    ASSERT_STATUS(cgr_step_output(s, slot.ticket, 0, got_y, 4, NULL), CGR_STATUS_INVALID_ARGUMENT);
    reference(&m, x, y, rs);
    expect_bits("y", 0, slot.ticket, got_y, y, n);
    expect_bits("rows", 0, slot.ticket, got_rs, rs, 4);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("(c) a slot held by another thread: BUSY for acquire, run and destroy, "
           "WRONG_STATE for launch\n");
}

/* ---- (d) cgr calls from inside a step function ---------------------------- */

typedef struct nested {
    model m;
    cgr_runtime *rt;
    cgr_step *self, *other;
    int calls;
    cgr_status seen[5];
} nested;

static cgr_status nested_step(cgr_ctx *ctx, void *user)
{
    nested *n = user;
    cgr_step_stats ss;
    cgr_runtime_stats rs;
    void *p = NULL;
    const float x[4] = {1, 2, 3, 4};
    const void *ins[1] = {x};
    /* Each would need the lock this thread holds while the step runs. */
    cgr_status got[5] = {
        cgr_step_get_stats(n->self, &ss),
        cgr_runtime_get_stats(n->rt, &rs),
        cgr_persistent_alloc(n->rt, 256, &p),
        cgr_step_run(n->other, NULL, ins, NULL),
        cgr_step_wait(n->self, CGR_TICKET_LAST),
    };
    for (int i = 0; i < 5; i++)
        if (got[i] != CGR_STATUS_WRONG_STATE)
            n->seen[i] = got[i];
    n->calls++;
    return small_step(ctx, &n->m);
}

static cgr_status noop_step(cgr_ctx *ctx, void *user)
{
    (void)ctx;
    (void)user;
    return CGR_STATUS_OK;
}

static void test_nested_calls(void)
{
    rng r = {0xfeedULL};
    nested n;
    memset(&n, 0, sizeof n);
    for (int i = 0; i < 5; i++)
        n.seen[i] = CGR_STATUS_WRONG_STATE;
    ASSERT_OK(cgr_runtime_create(&n.rt, NULL));
    model_init(&n.m, n.rt, &r, 2, 32);
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, 2, 32);
    cgr_tensor_desc out[2] = {tensor2("y", CGR_DTYPE_F32, 2, 32),
                              tensor1("rows", CGR_DTYPE_F32, 2)};
    cgr_tensor_desc oin = tensor1("x", CGR_DTYPE_F32, 4);
    n.other = make_step(n.rt, "other", &oin, 1, NULL, 0, noop_step, NULL);
    n.self = make_step(n.rt, "nested", &in, 1, out, 2, nested_step, &n);
    float x[64], y[64], rs[2], got_y[64], got_rs[2];
    for (int k = 0; k < 5; k++) { /* warm-up, warm-up, capture, replays */
        rng_fill(&r, x, 64);
        const void *ins[1] = {x};
        uint64_t t;
        ASSERT_OK(cgr_step_run(n.self, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(n.self, t));
        ASSERT_OK(cgr_step_output(n.self, t, 0, got_y, sizeof got_y, NULL));
        ASSERT_OK(cgr_step_output(n.self, t, 1, got_rs, sizeof got_rs, NULL));
        reference(&n.m, x, y, rs);
        expect_bits("y", 0, t, got_y, y, 64);
        expect_bits("rows", 0, t, got_rs, rs, 2);
    }
    /* 2 warm-ups, the capture and its frozen-value check; replays call nothing. */
    ASSERT_EQ(n.calls, 4);
    for (int i = 0; i < 5; i++)
        ASSERT_STATUS(n.seen[i], CGR_STATUS_WRONG_STATE);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(n.self, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_OK(cgr_step_get_stats(n.other, &ss));
    ASSERT_U64_EQ(ss.runs, 0);
    ASSERT_OK(cgr_runtime_destroy(&n.rt));
    printf("(d) cgr calls inside a step function: WRONG_STATE, no deadlock, capture intact\n");
}

/* ---- (e) a run refused while another thread waits on the step ------------ */

enum { HELD_LEN = 1024 };

/* y = 2x + 1 behind a gate kernel that spins while the mapped host flag is 0. */
typedef struct held {
    volatile int *flags; /* host view: the gate, then the gate kernel's timed-out flag */
    int *flags_dev;
} held;

static cgr_status held_step(cgr_ctx *ctx, void *user)
{
    held *h = user;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(tk_gate(h->flags_dev, h->flags_dev + 1, st));
    STEP_CUDA(tk_affine(y, x, HELD_LEN, st));
    return CGR_STATUS_OK;
}

typedef struct waiter {
    cgr_step *s;
    uint64_t ticket;
    int started;
    cgr_status st;
} waiter;

static void *wait_on(void *arg)
{
    waiter *w = arg;
    __atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
    w->st = cgr_step_wait(w->s, w->ticket);
    return NULL;
}

/* Runs s on fresh x into *t; with check, waits and compares y = 2x + 1 bitwise. */
static cgr_status held_run(cgr_step *s, rng *r, float *x, uint64_t *t, int check)
{
    rng_fill(r, x, HELD_LEN);
    const void *ins[1] = {x};
    cgr_status st = cgr_step_run(s, NULL, ins, t);
    if (st != CGR_STATUS_OK || !check)
        return st;
    ASSERT_OK(cgr_step_wait(s, *t));
    check_affine(x, test_output(s, *t, 0, NULL), HELD_LEN, 1, "run %llu",
                 (unsigned long long)*t);
    return st;
}

/* A runtime with warm-ups and arena_limit as given (0: default), and the gate open. */
static cgr_runtime *held_open(held *h, int warmup_runs, size_t arena_limit)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.warmup_runs = warmup_runs;
    if (arena_limit)
        o.arena_limit = arena_limit;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    CUDA_OK(cudaHostAlloc((void **)&h->flags, 2 * sizeof(int), cudaHostAllocMapped));
    CUDA_OK(cudaHostGetDevicePointer((void **)&h->flags_dev, (void *)h->flags, 0));
    h->flags[0] = 1;
    h->flags[1] = 0;
    return rt;
}

/* Starts a thread in cgr_step_wait(s, ticket), and gives it time to block there. */
static void start_waiter(waiter *w, pthread_t *th, cgr_step *s, uint64_t ticket)
{
    *w = (waiter){s, ticket, 0, CGR_STATUS_OK};
    ASSERT_EQ(pthread_create(th, NULL, wait_on, w), 0);
    while (!__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
        sched_yield();
    struct timespec nap = {0, 100 * 1000 * 1000};
    (void)nanosleep(&nap, NULL); /* into cgr_step_wait, which holds no lock while it waits */
}

/* Opens the gate, joins the waiter (its wait must succeed) and checks run t's output. */
static void release_waiter(held *h, waiter *w, pthread_t th, const float *x, uint64_t t)
{
    h->flags[0] = 1;
    ASSERT_EQ(pthread_join(th, NULL), 0);
    ASSERT_OK(w->st);
    ASSERT_EQ(h->flags[1], 0);
    check_affine(x, test_output(w->s, t, 0, NULL), HELD_LEN, 1, "run 2 (ticket %llu)",
                 (unsigned long long)t);
}

static void held_close(cgr_runtime *rt, held *h)
{
    ASSERT_OK(cgr_runtime_destroy(&rt));
    CUDA_OK(cudaFreeHost((void *)h->flags));
}

static void test_refused_while_waiting(void)
{
    /* initcheck runs kernels synchronously: a closed gate would hold the launch itself. */
    if (under_sanitizer("initcheck")) {
        printf("(e) skipped under initcheck, which runs kernels synchronously\n");
        return;
    }
    rng r = {0xfeedULL};
    held h;
    cgr_runtime *rt = held_open(&h, 1, 0);
    cgr_step *s = make_xy(rt, "held", HELD_LEN, held_step, &h);
    float x1[HELD_LEN], x2[HELD_LEN], x3[HELD_LEN];
    uint64_t t1, t2, t3;
    ASSERT_OK(held_run(s, &r, x1, &t1, 1)); /* the warm-up */

    /* The capture's run: its graph launches and stays at the closed gate. */
    h.flags[0] = 0;
    ASSERT_OK(held_run(s, &r, x2, &t2, 0));
    waiter w;
    pthread_t th;
    start_waiter(&w, &th, s, t2);

    cgr_step_stats before, after;
    cgr_shape_info sb, sa;
    ASSERT_OK(cgr_step_get_stats(s, &before));
    ASSERT_OK(cgr_step_shape_at(s, 0, &sb));
    ASSERT_STATUS(held_run(s, &r, x3, &t3, 0), CGR_STATUS_BUSY);
    ASSERT(strstr(cgr_last_error(), "due for its frozen-value check") != NULL);
    ASSERT_OK(cgr_step_get_stats(s, &after));
    ASSERT_OK(cgr_step_shape_at(s, 0, &sa));
    ASSERT_U64_EQ(after.runs, before.runs);
    ASSERT_U64_EQ(after.frozen_checks, before.frozen_checks);
    ASSERT_U64_EQ(sa.replays, sb.replays);
    ASSERT_U64_EQ(sa.last_use, sb.last_use);

    release_waiter(&h, &w, th, x2, t2);

    /* Nobody waits now: the same run is checked; the counts go on from where they were. */
    ASSERT_OK(held_run(s, &r, x3, &t3, 1));
    ASSERT_OK(cgr_step_get_stats(s, &after));
    ASSERT_OK(cgr_step_shape_at(s, 0, &sa));
    ASSERT_U64_EQ(after.runs, before.runs + 1);
    ASSERT_U64_EQ(after.frozen_checks, before.frozen_checks + 1);
    ASSERT_U64_EQ(sa.replays, sb.replays + 1);
    ASSERT_U64_EQ(sa.last_use, sb.last_use + 1);
    ASSERT_EQ(after.mode, CGR_MODE_GRAPH);
    held_close(rt, &h);
    printf("(e) a run due for its frozen-value check while another thread waits: BUSY, "
           "nothing counted; checked once the wait was over\n");
}

/* held_step behind scratch that arena_limit (1 MiB) cannot back: 8 MiB, one word touched. */
static cgr_status unbacked_step(cgr_ctx *ctx, void *user)
{
    void *scratch = NULL;
    cgr_stream st;
    STEP_TRY(cgr_ctx_alloc(ctx, (size_t)8 << 20, &scratch));
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_CUDA(cudaMemsetAsync(scratch, 0x5a, sizeof(int), st));
    STEP_TRY(held_step(ctx, user));
    return cgr_ctx_free(ctx, scratch);
}

static void test_unbacked_while_waiting(void)
{
    if (under_sanitizer("initcheck")) {
        printf("(f) skipped under initcheck, which runs kernels synchronously\n");
        return;
    }
    rng r = {0xbeefULL};
    held h;
    cgr_runtime *rt = held_open(&h, 2, (size_t)1 << 20);
    cgr_step *s = make_xy(rt, "unbacked", HELD_LEN, unbacked_step, &h);
    float x1[HELD_LEN], x2[HELD_LEN], x3[HELD_LEN];
    uint64_t t1, t2, t3;
    /* The first warm-up finds that the arena cannot back the plan; it synchronizes, so open. */
    ASSERT_OK(held_run(s, &r, x1, &t1, 1));
    /* The second warm-up plans nothing, so it neither synchronizes nor blocks here. */
    h.flags[0] = 0;
    ASSERT_OK(held_run(s, &r, x2, &t2, 0));
    waiter w;
    pthread_t th;
    start_waiter(&w, &th, s, t2);

    cgr_status st = held_run(s, &r, x3, &t3, 0);
    if (st != CGR_STATUS_OK)
        TEST_FAIL_("the capture run of an unbacked shape returned %s while another thread "
                   "waits: %s", cgr_status_name(st), cgr_last_error());
    cgr_run_action a = CGR_RUN_REPLAY;
    ASSERT_OK(cgr_step_run_action(s, t3, &a));
    ASSERT_EQ(a, CGR_RUN_EAGER);
    release_waiter(&h, &w, th, x2, t2);
    ASSERT_OK(cgr_step_wait(s, t3));
    check_affine(x3, test_output(s, t3, 0, NULL), HELD_LEN, 1, "run 3 (ticket %llu)",
                 (unsigned long long)t3);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_U64_EQ(ss.runs, 3);
    ASSERT_U64_EQ(ss.warmup_runs, 2);
    ASSERT_U64_EQ(ss.eager_runs, 1);
    ASSERT_U64_EQ(ss.capture_failures, 1);
    ASSERT(strstr(ss.capture_error, "arena_limit") != NULL);
    held_close(rt, &h);
    printf("(f) an unbacked shape's capture run while another thread waits: not refused, "
           "eager behind the held run, both right\n");
}

int main(void)
{
    require_gpu();
    read_scale();
    if (g_scale < 1.0)
        printf("counts scaled by %g (sanitizer or CGR_TEST_SCALE)\n", g_scale);
    test_nested_calls();
    test_cross_thread_acquire();
    test_own_runtimes();
    test_shared_runtime();
    test_refused_while_waiting();
    test_unbacked_while_waiting();
    printf("PASS\n");
    return 0;
}
