/*
 * Armed runs (cgr_step_acquire with CGR_ACQUIRE_ARM, capture/gate.c): a
 * graph launched before its inputs are written, held at the slot's gate
 * until cgr_step_launch.
 *
 * The step is test_shapes' in small: x[64][K] with a bucketed batch ->
 * h = x W + b -> y = h centered over the true rows (shapes_kernels.cu),
 * plus the true batch as the device read it. Every checked run gets fresh
 * random inputs that are written only after the acquire returned, often
 * after a pause, so a gate that let the graph read the slot early would
 * show as outputs computed from the previous inputs. Outputs are compared
 * bit for bit with the same kernels run at the true size on a plain stream.
 *
 *   sizes     every batch 1..64 through arm: warm-up and capture runs are
 *             not armed, replays are; results exact; stats count them
 *   plain     ordinary launches (acquire without the flag, cgr_step_run)
 *             of the same armable step open the gate themselves
 *   rearm     armed for one bucket, released, armed again for another:
 *             the first armed run is let through, the second is exact
 *   release   cgr_step_release of an armed and of a plain slot; the next
 *             run is exact. A released run of bucket 1 on a slot that
 *             holds batch 60's dims sees true batch 1 (clamped to its
 *             bucket on the device)
 *   reuse     the run an armed run's slot held is refused by
 *             cgr_step_output from the acquire on, released or not
 *   expired   arm_timeout_us = 2 ms, 30 ms between arm and launch: the
 *             graph passed its gate on the timeout and the launch runs it
 *             again: exact, counted in arm_expired
 *   fixed     a step without dynamic dims arms with dims = NULL
 *   other     another step's warm-up (which synchronizes the stream)
 *             while a run is armed does not wait for arm_timeout_us
 *   errors    not armable, bad dims, unknown flags, twice, a seed set while
 *             armed, release of
 *             nothing, a slot of another run; cgr_step_write_input with a
 *             bad index, past the input's end, NULL src, another run's slot,
 *             a slot not held: clear statuses, nothing launched or written,
 *             the armed run still usable
 * Inputs go in three ways in turn (write_rows): memcpy into slot->inputs,
 * cgr_step_write_input whole, and row by row.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "shapes_kernels.h"
#include "shapes_ref.h"

enum { MAXB = 64, K = 32, M = 48, NB = 7 };

static const int64_t buckets[NB] = {1, 2, 4, 8, 16, 32, 64};
static float W_host[K * M], b_host[M];
static rng g_rng = {0xa53eULL};

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- the step -------------------------------------------------------------------------- */

typedef struct model {
    float *W, *b;
} model;

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    const model *m = user;
    cgr_stream st;
    float *x, *y, *h;
    int64_t *true_out, bucket = 0;
    const int64_t *true_dev = NULL;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_dim(ctx, 0, &bucket, NULL, &true_dev));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_output(ctx, 1, (void **)&true_out));
    STEP_TRY(cgr_ctx_alloc(ctx, (size_t)bucket * M * sizeof(float), (void **)&h));
    STEP_CUDA(shk_linear(h, x, m->W, m->b, (int)bucket, K, M, st));
    STEP_CUDA(shk_center(y, h, (int)bucket, M, true_dev, st));
    STEP_CUDA(shk_copy_i64(true_out, true_dev, st));
    STEP_TRY(cgr_ctx_free(ctx, h));
    return CGR_STATUS_OK;
}

/* The fixed-shape variant: batch 5, the true rows given as a constant. */
typedef struct fixed_model {
    float *W, *b;
    int64_t *rows; /* device, = 5 */
} fixed_model;

static cgr_status fixed_fn(cgr_ctx *ctx, void *user)
{
    const fixed_model *m = user;
    cgr_stream st;
    float *x, *y, *h;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_alloc(ctx, (size_t)5 * M * sizeof(float), (void **)&h));
    STEP_CUDA(shk_linear(h, x, m->W, m->b, 5, K, M, st));
    STEP_CUDA(shk_center(y, h, 5, M, m->rows, st));
    STEP_TRY(cgr_ctx_free(ctx, h));
    return CGR_STATUS_OK;
}

/* The same kernels at exactly the true size, outside cgr (shapes_ref.h). */
static shapes_ref ref;

/* ---- a runtime with the armable step ---------------------------------------------------- */

typedef struct env {
    cgr_runtime *rt;
    cgr_step *step;
    model m;
} env;

static void env_make(env *e, unsigned arm_timeout_us, int armable)
{
    memset(e, 0, sizeof *e);
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    if (arm_timeout_us)
        o.arm_timeout_us = arm_timeout_us;
    ASSERT_OK(cgr_runtime_create(&e->rt, &o));
    ASSERT_OK(cgr_persistent_alloc(e->rt, sizeof W_host, (void **)&e->m.W));
    ASSERT_OK(cgr_persistent_alloc(e->rt, sizeof b_host, (void **)&e->m.b));
    CUDA_OK(cudaMemcpy(e->m.W, W_host, sizeof W_host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(e->m.b, b_host, sizeof b_host, cudaMemcpyHostToDevice));
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, MAXB, K);
    cgr_tensor_desc out[2] = {tensor2("y", CGR_DTYPE_F32, MAXB, M),
                              tensor1("true_b", CGR_DTYPE_I64, 1)};
    cgr_dyn_dim dim = {.name = "batch", .buckets = buckets, .n_buckets = NB, .max = MAXB};
    cgr_dim_use uses[2] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0}};
    cgr_step_desc d = step_desc("armed", &in, 1, out, 2, step_fn, &e->m);
    d.dyn_dims = &dim;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    d.armable = armable;
    ASSERT_OK(cgr_step_create(e->rt, &d, &e->step));
}

static cgr_step_stats step_stats(const env *e)
{
    cgr_step_stats s;
    ASSERT_OK(cgr_step_get_stats(e->step, &s));
    return s;
}

/* Waits for run t at batch B with inputs x and checks its outputs bit for bit. */
static void check_run(env *e, uint64_t t, int B, const float *x, const char *what)
{
    static float want[MAXB * M];
    ASSERT_OK(cgr_step_wait(e->step, t));
    const float *y;
    const int64_t *tb;
    size_t by, bt;
    y = test_output(e->step, t, 0, &by);
    tb = test_output(e->step, t, 1, &bt);
    ASSERT_EQ(by, (size_t)B * M * sizeof(float));
    if (*tb != B)
        TEST_FAIL_("%s: B=%d: the device held true batch %lld", what, B, (long long)*tb);
    shapes_ref_run(&ref, x, B, want);
    for (int i = 0; i < B * M; i++)
        if (memcmp(&y[i], &want[i], sizeof(float)) != 0)
            TEST_FAIL_("%s: B=%d: y[%d][%d] = %.9g, reference %.9g", what, B, i / M, i % M,
                       y[i], want[i]);
}

/*
 * Writes B rows x into input 0 of the held slot, the n-th time in one of
 * three ways: memcpy into slot->inputs, one cgr_step_write_input, or one
 * cgr_step_write_input per row (128-byte rows: below the streaming size,
 * so both store paths and their sfence run).
 */
static void write_rows(env *e, const cgr_slot *slot, const float *x, int B, unsigned n)
{
    const size_t row = K * sizeof(float);
    switch (n % 3) {
    case 0:
        memcpy(slot->inputs[0], x, (size_t)B * row);
        break;
    case 1:
        ASSERT_OK(cgr_step_write_input(e->step, slot, 0, 0, x, (size_t)B * row));
        break;
    default:
        for (int r = 0; r < B; r++)
            ASSERT_OK(cgr_step_write_input(e->step, slot, 0, (size_t)r * row, x + (size_t)r * K,
                                           row));
    }
}

/*
 * One armed run: acquire with CGR_ACQUIRE_ARM at batch B, pause
 * `pause_us`, write fresh inputs (write_rows), launch, check. Returns
 * slot.armed.
 */
static int armed_run(env *e, int B, long pause_us, cgr_run_action *action, const char *what)
{
    static float x[MAXB * K];
    const int64_t dims[1] = {B};
    cgr_slot slot;
    ASSERT_OK(cgr_step_acquire(e->step, dims, CGR_ACQUIRE_ARM, &slot));
    if (pause_us)
        sleep_us(pause_us);
    rng_fill(&g_rng, x, (size_t)B * K);
    static unsigned n_writes;
    write_rows(e, &slot, x, B, n_writes++);
    ASSERT_OK(cgr_step_launch(e->step, &slot));
    ASSERT_OK(cgr_step_run_action(e->step, slot.ticket, action));
    check_run(e, slot.ticket, B, x, what);
    return slot.armed;
}

/* ---- the parts -------------------------------------------------------------------------- */

static void part_sizes(void)
{
    env e;
    env_make(&e, 0, 1);
    uint64_t armed = 0;
    /*
     * Per bucket: two warm-ups and a capture (not armed: no graph yet), the
     * first replay (not armed: it is captured again for the frozen-value
     * check), then replays (armed).
     */
    for (int b = 0; b < NB; b++) {
        const int B = (int)buckets[b];
        for (int r = 0; r < 6; r++) {
            cgr_run_action a;
            int was = armed_run(&e, B, r == 5 ? 300 : 0, &a, "sizes, first pass");
            const cgr_run_action want = r < 2 ? CGR_RUN_WARMUP : r == 2 ? CGR_RUN_CAPTURE
                                                                        : CGR_RUN_REPLAY;
            if (a != want || was != (r >= 4))
                TEST_FAIL_("B=%d run %d: %s, armed %d; expected %s, armed %d", B, r,
                           cgr_run_action_name(a), was, cgr_run_action_name(want), r >= 4);
            armed += (uint64_t)was;
        }
    }
    /* Every size, shuffled, every third with a pause: all armed replays. */
    int order[MAXB];
    for (int i = 0; i < MAXB; i++)
        order[i] = i + 1;
    for (int i = MAXB - 1; i > 0; i--) {
        int j = (int)(rng_next(&g_rng) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < MAXB; i++) {
        cgr_run_action a;
        ASSERT_EQ(armed_run(&e, order[i], i % 3 == 0 ? 200 : 0, &a, "sizes, shuffled"), 1);
        ASSERT_EQ(a, CGR_RUN_REPLAY);
        armed++;
    }
    cgr_step_stats s = step_stats(&e);
    ASSERT_U64_EQ(s.armed_runs, armed);
    ASSERT_U64_EQ(s.arm_expired, 0);
    ASSERT_U64_EQ(s.arm_released, 0);
    ASSERT_U64_EQ(s.captures, NB);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("sizes: %llu armed replays exact\n", (unsigned long long)armed);
}

static void part_plain(void)
{
    env e;
    env_make(&e, 0, 1);
    static float x[MAXB * K];
    /*
     * Four plain runs for each bucket of 1..8, true batches random inside it,
     * the two ways in turn: two warm-ups, the capture, and the frozen-value
     * check's run, so that every graph below has been checked.
     */
    for (int b = 0; b < 4; b++) {
        const int lo = b == 0 ? 1 : (int)buckets[b - 1] + 1;
        for (int r = 0; r < 4; r++) {
            const int B = lo + (int)(rng_next(&g_rng) % (uint64_t)(buckets[b] - lo + 1));
            rng_fill(&g_rng, x, (size_t)B * K);
            const int64_t dims[1] = {B};
            uint64_t t;
            if (r % 2) {
                const void *ins[1] = {x};
                ASSERT_OK(cgr_step_run(e.step, dims, ins, &t));
            } else {
                cgr_slot slot;
                ASSERT_OK(cgr_step_acquire(e.step, dims, 0, &slot));
                ASSERT_EQ(slot.armed, 0);
                write_rows(&e, &slot, x, B, (unsigned)(4 * b + r) / 2);
                ASSERT_OK(cgr_step_launch(e.step, &slot));
                t = slot.ticket;
            }
            check_run(&e, t, B, x, "plain");
            cgr_run_action a;
            ASSERT_OK(cgr_step_run_action(e.step, t, &a));
            const cgr_run_action want = r < 2 ? CGR_RUN_WARMUP : r == 2 ? CGR_RUN_CAPTURE
                                                                        : CGR_RUN_REPLAY;
            if (a != want)
                TEST_FAIL_("plain B=%d run %d: %s, expected %s", B, r, cgr_run_action_name(a),
                           cgr_run_action_name(want));
        }
    }
    /* Then armed, on graphs a plain launch used last: every run an armed replay. */
    const uint64_t checks = step_stats(&e).frozen_checks;
    for (int B = 1; B <= 8; B++) {
        cgr_run_action a;
        int was = armed_run(&e, B, 100, &a, "plain, then armed");
        if (a != CGR_RUN_REPLAY || !was)
            TEST_FAIL_("plain, then armed, B=%d: %s, armed %d; expected an armed replay", B,
                       cgr_run_action_name(a), was);
    }
    ASSERT_U64_EQ(step_stats(&e).frozen_checks, checks);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("plain: ordinary launches of an armable step exact\n");
}

/* Warms up, captures and checks every bucket of e through ordinary runs. */
static void capture_all(env *e)
{
    static float x[MAXB * K];
    for (int b = 0; b < NB; b++)
        for (int r = 0; r < 4; r++) {
            const int B = (int)buckets[b];
            rng_fill(&g_rng, x, (size_t)B * K);
            const int64_t dims[1] = {B};
            const void *ins[1] = {x};
            uint64_t t;
            ASSERT_OK(cgr_step_run(e->step, dims, ins, &t));
            check_run(e, t, B, x, "capture_all");
        }
}

/*
 * A caller whose batch changed after arming gives the slot back and arms
 * again: the first armed run is let through (its outputs are never read),
 * and the second, in another bucket, is exact.
 */
static void part_rearm(void)
{
    env e;
    env_make(&e, 0, 1);
    capture_all(&e);
    const int pairs[][2] = {{3, 20}, {20, 3}, {1, 64}, {64, 2}, {7, 8}};
    const size_t n = sizeof pairs / sizeof pairs[0];
    for (size_t i = 0; i < n; i++) {
        const int64_t first[1] = {pairs[i][0]};
        cgr_slot slot;
        ASSERT_OK(cgr_step_acquire(e.step, first, CGR_ACQUIRE_ARM, &slot));
        ASSERT_EQ(slot.armed, 1);
        sleep_us(100);
        ASSERT_OK(cgr_step_release(e.step, &slot));
        cgr_run_action a;
        ASSERT_EQ(armed_run(&e, pairs[i][1], 100, &a, "rearm"), 1);
        ASSERT_EQ(a, CGR_RUN_REPLAY);
    }
    cgr_step_stats s = step_stats(&e);
    ASSERT_U64_EQ(s.arm_released, n);
    ASSERT_U64_EQ(s.armed_runs, n);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("rearm: %zu armed runs let through, the runs armed after them exact\n", n);
}

/*
 * A released armed run reads whatever its slot holds, the true dims too:
 * here those of an earlier run at batch 60. The graph of bucket 1 must
 * still tell the step 1, not 60, or a kernel that trusts the device's
 * true dims would run past the bucket's buffers.
 */
static void released_stale_dims(env *e)
{
    static float x[MAXB * K];
    const int64_t big[1] = {60}, one[1] = {1};
    uint64_t t = 0;
    /* Both staging slots hold dims 60 after two runs. */
    for (int r = 0; r < 2; r++) {
        rng_fill(&g_rng, x, (size_t)60 * K);
        const void *ins[1] = {x};
        ASSERT_OK(cgr_step_run(e->step, big, ins, &t));
        check_run(e, t, 60, x, "before the stale release");
    }
    cgr_slot slot;
    ASSERT_OK(cgr_step_acquire(e->step, one, CGR_ACQUIRE_ARM, &slot));
    ASSERT_EQ(slot.armed, 1);
    /* The slot's last run wrote 60 here; the released run overwrites it with what it saw. */
    const volatile int64_t *seen = slot.outputs[1];
    ASSERT_OK(cgr_step_release(e->step, &slot));
    cgr_stream st;
    ASSERT_OK(cgr_runtime_stream(e->rt, &st));
    CUDA_OK(cudaStreamSynchronize(st));
    if (*seen != 1)
        TEST_FAIL_("a released run of bucket 1 on a slot holding batch 60 told the step %lld",
                   (long long)*seen);
}

static void part_release(void)
{
    env e;
    env_make(&e, 0, 1);
    capture_all(&e);
    const int64_t dims[1] = {6};
    cgr_slot slot;
    for (int r = 0; r < 3; r++) {
        ASSERT_OK(cgr_step_acquire(e.step, dims, CGR_ACQUIRE_ARM, &slot));
        ASSERT_EQ(slot.armed, 1);
        ASSERT_OK(cgr_step_release(e.step, &slot));
    }
    ASSERT_OK(cgr_step_acquire(e.step, dims, 0, &slot));
    ASSERT_OK(cgr_step_release(e.step, &slot));
    ASSERT_STATUS(cgr_step_release(e.step, &slot), CGR_STATUS_WRONG_STATE);
    released_stale_dims(&e);
    for (int r = 0; r < 4; r++) {
        cgr_run_action a;
        ASSERT_EQ(armed_run(&e, 6, 0, &a, "after release"), 1);
    }
    cgr_step_stats s = step_stats(&e);
    ASSERT_U64_EQ(s.arm_released, 4);
    ASSERT_U64_EQ(s.armed_runs, 4);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("release: 4 armed and 1 plain slot given back, later runs exact; a released run "
           "saw its bucket's batch, not the slot's stale one\n");
}

/*
 * An armed run is launched on its slot at acquire, so the run that slot held
 * cannot be read from then on, even after the armed run is released (it
 * still runs); the other slot's run still can.
 */
static void part_reuse(void)
{
    env e;
    env_make(&e, 0, 1);
    capture_all(&e);
    static float x[MAXB * K];
    const int64_t dims[1] = {6};
    const void *ins[1] = {x};
    uint64_t t0, t1;
    rng_fill(&g_rng, x, 6 * K);
    ASSERT_OK(cgr_step_run(e.step, dims, ins, &t0));
    rng_fill(&g_rng, x, 6 * K);
    ASSERT_OK(cgr_step_run(e.step, dims, ins, &t1));
    check_run(&e, t1, 6, x, "reuse, second run");
    size_t bytes = 0;
    ASSERT_OK(cgr_step_output(e.step, t0, 0, NULL, 0, &bytes));
    cgr_slot slot;
    ASSERT_OK(cgr_step_acquire(e.step, dims, CGR_ACQUIRE_ARM, &slot));
    ASSERT_EQ(slot.armed, 1);
    ASSERT_STATUS(cgr_step_output(e.step, t0, 0, NULL, 0, &bytes), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "armed run") != NULL);
    ASSERT_OK(cgr_step_release(e.step, &slot));
    ASSERT_STATUS(cgr_step_output(e.step, t0, 0, NULL, 0, &bytes), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(cgr_step_output(e.step, t1, 0, NULL, 0, &bytes));
    cgr_run_action a;
    ASSERT_EQ(armed_run(&e, 6, 0, &a, "reuse, after release"), 1);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("reuse: a run whose slot an armed run took is refused, the other slot's is read\n");
}

static void part_expired(void)
{
    env e;
    env_make(&e, 2000, 1);
    capture_all(&e);
    cgr_run_action a;
    ASSERT_EQ(armed_run(&e, 5, 30000, &a, "expired"), 1);
    ASSERT_EQ(a, CGR_RUN_REPLAY);
    ASSERT_EQ(armed_run(&e, 30, 30000, &a, "expired"), 1);
    ASSERT_EQ(armed_run(&e, 30, 0, &a, "after expired"), 1);
    cgr_step_stats s = step_stats(&e);
    ASSERT_U64_EQ(s.armed_runs, 3);
    /* The third run's launch came at once; a 2 ms timeout only passes if the host stalls. */
    ASSERT(s.arm_expired >= 2 && s.arm_expired <= 3);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("expired: %llu armed runs ran again after their timeout, exact\n",
           (unsigned long long)s.arm_expired);
}

static void part_fixed(void)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    fixed_model m;
    const int64_t five = 5;
    ASSERT_OK(cgr_persistent_alloc(rt, sizeof W_host, (void **)&m.W));
    ASSERT_OK(cgr_persistent_alloc(rt, sizeof b_host, (void **)&m.b));
    ASSERT_OK(cgr_persistent_alloc(rt, sizeof five, (void **)&m.rows));
    CUDA_OK(cudaMemcpy(m.W, W_host, sizeof W_host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(m.b, b_host, sizeof b_host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(m.rows, &five, sizeof five, cudaMemcpyHostToDevice));
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, 5, K);
    cgr_tensor_desc out = tensor2("y", CGR_DTYPE_F32, 5, M);
    cgr_step_desc d;
    ASSERT_OK(cgr_step_desc_init(&d));
    d.name = "fixed";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = fixed_fn;
    d.user = &m;
    d.armable = 1;
    cgr_step *s;
    ASSERT_OK(cgr_step_create(rt, &d, &s));
    static float x[5 * K], want[5 * M];
    int armed = 0;
    for (int r = 0; r < 8; r++) {
        cgr_slot slot;
        ASSERT_OK(cgr_step_acquire(s, NULL, CGR_ACQUIRE_ARM, &slot));
        armed += slot.armed;
        sleep_us(r % 2 ? 150 : 0);
        rng_fill(&g_rng, x, 5 * K);
        memcpy(slot.inputs[0], x, sizeof x);
        ASSERT_OK(cgr_step_launch(s, &slot));
        ASSERT_OK(cgr_step_wait(s, slot.ticket));
        const float *y;
        size_t by;
        y = test_output(s, slot.ticket, 0, &by);
        ASSERT_EQ(by, sizeof want);
        shapes_ref_run(&ref, x, 5, want);
        ASSERT(memcmp(y, want, sizeof want) == 0);
    }
    ASSERT_EQ(armed, 4); /* runs 5..8: after 2 warm-ups, the capture and its check */
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("fixed: a fixed-shape step armed with dims = NULL, exact\n");
}

static cgr_status other_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(cudaMemcpyAsync(y, x, 4 * sizeof(float), cudaMemcpyDeviceToDevice, st));
    return CGR_STATUS_OK;
}

static void part_other(void)
{
    env e;
    env_make(&e, 30000000, 1); /* 30 s: only dropping the armed run keeps this quick */
    capture_all(&e);
    cgr_tensor_desc vin = tensor1("v", CGR_DTYPE_F32, 4), vout = tensor1("w", CGR_DTYPE_F32, 4);
    cgr_step *other = make_step(e.rt, "other", &vin, 1, &vout, 1, other_fn, NULL);
    const int64_t dims[1] = {12};
    cgr_slot slot;
    ASSERT_OK(cgr_step_acquire(e.step, dims, CGR_ACQUIRE_ARM, &slot));
    ASSERT_EQ(slot.armed, 1);
    /* The other step's first run traces its scratch and synchronizes the stream. */
    const float v[4] = {1.5f, -2.25f, 3.0f, 0.125f};
    const void *ins[1] = {v};
    uint64_t t;
    double t0 = now_ms();
    ASSERT_OK(cgr_step_run(other, NULL, ins, &t));
    ASSERT_OK(cgr_step_wait(other, t));
    double ms = now_ms() - t0;
    if (ms > 5000.0)
        TEST_FAIL_("another step's warm-up waited %.0f ms behind the armed run", ms);
    const float *o;
    o = test_output(other, t, 0, NULL);
    ASSERT(memcmp(o, v, sizeof v) == 0);
    /* The armed slot is still this thread's; its launch runs the graph the ordinary way. */
    static float x[MAXB * K];
    rng_fill(&g_rng, x, 12 * K);
    memcpy(slot.inputs[0], x, 12 * K * sizeof(float));
    ASSERT_OK(cgr_step_launch(e.step, &slot));
    check_run(&e, slot.ticket, 12, x, "other");
    ASSERT_U64_EQ(step_stats(&e).arm_released, 1);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("other: another step's warm-up took %.1f ms with a run armed\n", ms);
}

static void part_errors(void)
{
    env e;
    env_make(&e, 0, 0);
    const int64_t dims[1] = {4}, zero[1] = {0}, big[1] = {65};
    cgr_slot slot;
    ASSERT_STATUS(cgr_step_acquire(e.step, dims, CGR_ACQUIRE_ARM, &slot),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "armable") != NULL);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));

    env_make(&e, 0, 1);
    capture_all(&e);
    const unsigned ARM = CGR_ACQUIRE_ARM;
    ASSERT_STATUS(cgr_step_acquire(e.step, zero, ARM, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_acquire(e.step, big, ARM, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_acquire(e.step, NULL, ARM, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_acquire(e.step, dims, ARM, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_acquire(e.step, dims, ARM | 2u, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "flags") != NULL);
    ASSERT_STATUS(cgr_step_release(e.step, &slot), CGR_STATUS_WRONG_STATE);
    ASSERT_OK(cgr_step_acquire(e.step, dims, ARM, &slot));
    ASSERT_EQ(slot.armed, 1);
    /* Its graph is queued: a seed now would land after the run it was meant for. */
    ASSERT_STATUS(cgr_step_set_seed(e.step, 7), CGR_STATUS_WRONG_STATE);
    ASSERT(strstr(cgr_last_error(), "armed") != NULL);
    cgr_slot again;
    ASSERT_STATUS(cgr_step_acquire(e.step, dims, ARM, &again), CGR_STATUS_WRONG_STATE);
    ASSERT_STATUS(cgr_step_acquire(e.step, dims, 0, &again), CGR_STATUS_WRONG_STATE);
    cgr_slot wrong = slot;
    wrong.ticket++;
    ASSERT_STATUS(cgr_step_launch(e.step, &wrong), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_release(e.step, &wrong), CGR_STATUS_INVALID_ARGUMENT);
    /* cgr_step_write_input refusals: none of them may write a byte. */
    static float x[MAXB * K], junk[MAXB * K + 1];
    rng_fill(&g_rng, x, 4 * K);
    rng_fill(&g_rng, junk, MAXB * K + 1);
    ASSERT_OK(cgr_step_write_input(e.step, &slot, 0, 0, x, 4 * K * sizeof(float)));
    const size_t cap = (size_t)MAXB * K * sizeof(float);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 1, 0, junk, 4), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "input 1") != NULL);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, -1, 0, junk, 4),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 0, 0, junk, cap + 4),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "overrun") != NULL);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 0, 4, junk, cap),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 0, (size_t)-1, junk, 2),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 0, 0, NULL, 4), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_write_input(e.step, &wrong, 0, 0, junk, 4),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_write_input(e.step, NULL, 0, 0, junk, 4), CGR_STATUS_INVALID_ARGUMENT);
    /* A write that ends exactly at the input's end is allowed (zero bytes, too). */
    ASSERT_OK(cgr_step_write_input(e.step, &slot, 0, cap, junk, 0));
    /* After every refusal the armed run still launches and is exact. */
    ASSERT_OK(cgr_step_launch(e.step, &slot));
    check_run(&e, slot.ticket, 4, x, "errors");
    /* The slot is launched: it is not held any more. */
    ASSERT_STATUS(cgr_step_write_input(e.step, &slot, 0, 0, x, 4), CGR_STATUS_WRONG_STATE);
    cgr_step_stats s = step_stats(&e);
    ASSERT_U64_EQ(s.armed_runs, 1);
    ASSERT_U64_EQ(s.arm_released, 0);
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    printf("errors: refusals changed nothing\n");
}

int main(void)
{
    require_gpu();
    rng_fill(&g_rng, W_host, K * M);
    rng_fill(&g_rng, b_host, M);
    shapes_ref_init(&ref, W_host, b_host, MAXB, K, M);
    part_sizes();
    part_plain();
    part_rearm();
    part_release();
    part_reuse();
    part_expired();
    part_fixed();
    part_other();
    part_errors();
    shapes_ref_free(&ref);
    printf("PASS\n");
    return 0;
}
