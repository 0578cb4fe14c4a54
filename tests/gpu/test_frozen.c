/*
 * The frozen-value check: a step whose kernel takes a host counter by
 * value (y = x + t, t counting the step's runs, as an optimizer's step
 * count would) must never be replayed, since every replay would keep the
 * t of its capture. The run after the capture is captured again; the
 * graphs differ in that parameter, so cgr runs that run from its own
 * capture and the shape eagerly from then on, and says which kernel,
 * which parameter and both values. Every run's output is checked against
 * the host, so a frozen t would fail the test.
 *
 * The same step with t from a step input replays from the first capture;
 * with the kernel named in frozen_allow, or with the check off, the
 * frozen graph replays (its outputs keep the captured t, which is what
 * those options accept).
 *
 * Memory the step allocates in the graph (cudaMallocAsync) and uses
 * across a child graph node's boundary, the child's kernel using the
 * graph's allocation or the graph using one made inside the child, is not
 * a frozen value either: it is matched across the two captures as within
 * one graph. The counter passed by value to a kernel inside a child graph
 * node is found as it is outside one, and the message says where.
 *
 * Rechecks (frozen_recheck = K): a value that holds for the first runs
 * and changes later (a learning rate that decays in steps) passes the
 * first check; the recheck after K more replays finds it, runs that run
 * from its own capture and the shape eagerly from then on, while the
 * replays between the change and that recheck keep the old value, as
 * documented. A step whose values never change passes every recheck and
 * replays throughout, and an armable step is not armed at a run that is
 * due for its recheck.
 */
#include <string.h>

#include "common.h"
#include "kernels.h"

enum { LEN = 4096, RUNS = 12 };

typedef struct counter_step {
    int by_input; /* t from input 1 instead of a kernel argument */
    int calls;
    float t;      /* the host counter: one more per call of the step function */
    const float *host_value; /* when set, t is this value at each call instead */
    int armable;             /* cgr_step_desc.armable */
    int via;                 /* how t reaches the kernel when not by input (below) */
} counter_step;

enum {
    VIA_ARG,   /* a kernel argument */
    VIA_CHILD, /* the argument of a kernel inside a child graph node of the capture */
};

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    counter_step *c = user;
    c->calls++;
    c->t = c->host_value ? *c->host_value : c->t + 1.0f;
    cgr_stream st;
    float *x, *y, *t;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    if (c->by_input) {
        STEP_TRY(cgr_ctx_input(ctx, 1, (void **)&t));
        STEP_CUDA(tk_add_device(y, x, t, LEN, st));
    } else if (c->via == VIA_CHILD) {
        STEP_CUDA(tk_add_scalar_child(y, x, c->t, LEN, st));
    } else {
        STEP_CUDA(tk_add_scalar(y, x, c->t, LEN, st));
    }
    return CGR_STATUS_OK;
}

static cgr_step *make_counter_step(cgr_runtime *rt, counter_step *c, const char *name)
{
    cgr_tensor_desc in[2] = {tensor1("x", CGR_DTYPE_F32, LEN), tensor1("t", CGR_DTYPE_F32, 1)};
    cgr_tensor_desc out = tensor1("y", CGR_DTYPE_F32, LEN);
    return make_step_armable(rt, name, in, c->by_input ? 2 : 1, &out, 1, step_fn, c,
                             c->armable);
}

/*
 * One run with fresh x and the run's t (run k: t = k + 1); checks every
 * y[i] == x[i] + want_t bitwise (one fp32 add, the same on both sides).
 * arm: acquired with CGR_ACQUIRE_ARM (a step with t as an input), the
 * inputs written into the slot; returns whether it was launched ahead.
 */
static int run_one_as(cgr_step *s, rng *r, float t, float want_t, int arm,
                      cgr_run_action *action)
{
    static float x[LEN], y[LEN];
    rng_fill(r, x, LEN);
    const void *ins[2] = {x, &t};
    uint64_t ticket;
    int armed = 0;
    if (arm) {
        cgr_slot slot;
        ASSERT_OK(cgr_step_acquire(s, NULL, CGR_ACQUIRE_ARM, &slot));
        ASSERT_OK(cgr_step_write_input(s, &slot, 0, 0, x, sizeof x));
        ASSERT_OK(cgr_step_write_input(s, &slot, 1, 0, &t, sizeof t));
        ASSERT_OK(cgr_step_launch(s, &slot));
        ticket = slot.ticket;
        armed = slot.armed;
    } else {
        ASSERT_OK(cgr_step_run(s, NULL, ins, &ticket));
    }
    ASSERT_OK(cgr_step_wait(s, ticket));
    ASSERT_OK(cgr_step_run_action(s, ticket, action));
    ASSERT_OK(cgr_step_output(s, ticket, 0, y, sizeof y, NULL));
    for (int i = 0; i < LEN; i++) {
        float want = x[i] + want_t;
        if (memcmp(&y[i], &want, sizeof want) != 0)
            TEST_FAIL_("run with t = %g (%s): y[%d] = %.9g, expected x + %g = %.9g", (double)t,
                       cgr_run_action_name(*action), i, (double)y[i], (double)want_t,
                       (double)want);
    }
    return armed;
}

static void run_one(cgr_step *s, rng *r, float t, float want_t, cgr_run_action *action)
{
    (void)run_one_as(s, r, t, want_t, 0, action);
}

static cgr_runtime *runtime_with(int check, const char *allow, unsigned recheck)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.frozen_check = check;
    o.frozen_allow = allow;
    o.frozen_recheck = recheck;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    return rt;
}

static cgr_runtime *runtime(int check, const char *allow)
{
    return runtime_with(check, allow, 0);
}

/*
 * The host counter passed by value: refused with the kernel, the parameter
 * and both values; VIA_CHILD, the kernel is in a child graph node, which
 * the message names too.
 */
static void test_refused(rng *r, int via)
{
    static const char *const names[] = {"counter", "counter_child"};
    cgr_runtime *rt = runtime(1, NULL);
    counter_step c = {0, 0, 0.0f, NULL, 0, via};
    cgr_step *s = make_counter_step(rt, &c, names[via]);
    static const cgr_run_action want[4] = {CGR_RUN_WARMUP, CGR_RUN_WARMUP, CGR_RUN_CAPTURE,
                                           CGR_RUN_CAPTURE};
    for (int k = 0; k < RUNS; k++) {
        cgr_run_action a;
        /* Every run's output has its own t: none replayed a frozen one. */
        run_one(s, r, 0.0f, (float)(k + 1), &a);
        cgr_run_action w = k < 4 ? want[k] : CGR_RUN_EAGER;
        if (a != w)
            TEST_FAIL_("run %d was %s, expected %s", k, cgr_run_action_name(a),
                       cgr_run_action_name(w));
    }
    ASSERT_EQ(c.calls, RUNS); /* once per run: the refused run went from its own capture */
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    printf("refused: %s\n", ss.capture_error);
    ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    ASSERT_U64_EQ(ss.runs, RUNS);
    ASSERT_U64_EQ(ss.eager_runs, RUNS - 4);
    ASSERT_U64_EQ(ss.eager_by_reason[CGR_EAGER_FROZEN_VALUE], RUNS - 4);
    ASSERT(strstr(ss.capture_error, "add_scalar_kernel") != NULL);
    ASSERT(strstr(ss.capture_error, "parameter 2 (4 bytes at offset 16)") != NULL);
    /* The captured t (3) and the next run's (4), as floats. */
    ASSERT(strstr(ss.capture_error, "as float 3)") != NULL);
    ASSERT(strstr(ss.capture_error, "as float 4)") != NULL);
    ASSERT(strstr(ss.capture_error, "step input or device memory") != NULL);
    ASSERT((strstr(ss.capture_error, "in the child graph at node ") != NULL) ==
           (via == VIA_CHILD));
    if (via == VIA_CHILD)
        ASSERT(strstr(ss.capture_error, ", node 0 of 1: kernel ") != NULL);
    cgr_shape_info info;
    ASSERT_OK(cgr_step_shape_at(s, 0, &info));
    ASSERT_EQ(info.reason, CGR_EAGER_FROZEN_VALUE);
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/* t from an input: the second capture matches the first, which replays. */
static void test_from_input(rng *r)
{
    cgr_runtime *rt = runtime(1, NULL);
    counter_step c = {1, 0, 0.0f, NULL, 0, 0};
    cgr_step *s = make_counter_step(rt, &c, "counter_input");
    for (int k = 0; k < RUNS; k++) {
        cgr_run_action a;
        run_one(s, r, (float)(k + 1), (float)(k + 1), &a);
        cgr_run_action w = k < 2 ? CGR_RUN_WARMUP : k == 2 ? CGR_RUN_CAPTURE : CGR_RUN_REPLAY;
        if (a != w)
            TEST_FAIL_("run %d was %s, expected %s", k, cgr_run_action_name(a),
                       cgr_run_action_name(w));
    }
    ASSERT_EQ(c.calls, 4); /* 2 warm-ups, the capture, the check's capture */
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    ASSERT_U64_EQ(ss.captures, 1);
    ASSERT_U64_EQ(ss.replays, RUNS - 2);
    ASSERT(ss.capture_error[0] == '\0');
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/* y = 2 (2 x + 1) + 1 through a temporary the step allocates in the graph. With
 * graph_uses_child the child graph node allocates it and the graph around it reads
 * and frees it; otherwise the graph allocates it and the child node's kernel reads it. */
typedef struct alloc_step {
    int graph_uses_child;
    int calls;
} alloc_step;

static cgr_status child_fn(cgr_ctx *ctx, void *user)
{
    alloc_step *c = user;
    c->calls++;
    cgr_stream st;
    float *x, *y, *tmp = NULL;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    if (c->graph_uses_child) {
        STEP_CUDA(tk_affine_alloc_child(&tmp, x, LEN, st));
        STEP_CUDA(tk_affine(y, tmp, LEN, st));
    } else {
        STEP_CUDA(cudaMallocAsync((void **)&tmp, LEN * sizeof(float), st));
        STEP_CUDA(tk_affine(tmp, x, LEN, st));
        STEP_CUDA(tk_affine_child(y, tmp, LEN, st));
    }
    STEP_CUDA(cudaFreeAsync(tmp, st));
    return CGR_STATUS_OK;
}

/*
 * Memory allocated in the graph (cudaMallocAsync in the step) and used
 * across a child graph node's boundary, in either direction: each capture
 * gets its own allocation, and the check matches the argument that
 * carries it through the allocation nodes, as it does within one graph.
 * The first capture replays; y = 2 (2 x + 1) + 1 bitwise at every run.
 */
static void test_child_graph_allocation(rng *r, int graph_uses_child)
{
    cgr_runtime *rt = runtime(1, NULL);
    alloc_step c = {graph_uses_child, 0};
    cgr_step *s = make_xy(rt, graph_uses_child ? "graph_uses_child" : "child_uses_graph", LEN,
                          child_fn, &c);
    static float x[LEN], y[LEN];
    for (int k = 0; k < RUNS; k++) {
        rng_fill(r, x, LEN);
        const void *ins[1] = {x};
        cgr_run_action a;
        uint64_t ticket = test_run(s, ins, &a);
        ASSERT_OK(cgr_step_output(s, ticket, 0, y, sizeof y, NULL));
        check_affine(x, y, LEN, 2, "run %d (%s)", k, cgr_run_action_name(a));
        cgr_run_action w = k < 2 ? CGR_RUN_WARMUP : k == 2 ? CGR_RUN_CAPTURE : CGR_RUN_REPLAY;
        if (a != w)
            TEST_FAIL_("run %d was %s, expected %s (%s)", k, cgr_run_action_name(a),
                       cgr_run_action_name(w), cgr_last_error());
    }
    ASSERT_EQ(c.calls, 4); /* 2 warm-ups, the capture, the check's capture */
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    ASSERT_U64_EQ(ss.replays, RUNS - 2);
    if (ss.capture_error[0] != '\0')
        TEST_FAIL_("capture_error: %s", ss.capture_error);
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/* Accepted differences: the frozen graph replays with the captured t = 3. */
static void test_accepted(rng *r, int check, const char *allow)
{
    cgr_runtime *rt = runtime(check, allow);
    counter_step c = {0, 0, 0.0f, NULL, 0, 0};
    cgr_step *s = make_counter_step(rt, &c, "counter_allowed");
    for (int k = 0; k < RUNS; k++) {
        cgr_run_action a;
        run_one(s, r, 0.0f, k < 3 ? (float)(k + 1) : 3.0f, &a);
    }
    ASSERT_EQ(c.calls, check ? 4 : 3);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.frozen_checks, (uint64_t)check);
    ASSERT_U64_EQ(ss.replays, RUNS - 2);
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/*
 * Whether run k (0-based) of a shape is a frozen-value check, with warmup
 * runs 0..1, the capture at 2 and a recheck after every `recheck` replays:
 * checks at 3, then every recheck + 1 runs.
 */
static int is_check_run(int k, int recheck)
{
    return k == 3 || (recheck > 0 && k > 3 && (k - 3) % (recheck + 1) == 0);
}

enum { RECHECK = 4, LATE_RUNS = 20, CHANGE = 10 };

/*
 * A value passed by value that holds for the first CHANGE runs and changes
 * then, as a learning rate decaying in steps: the check at run 3 passes,
 * the replays up to the next recheck keep the captured value, the recheck
 * finds the new one and is right itself, and every run after it is eager
 * and right.
 */
static void test_recheck_finds_late_change(rng *r)
{
    cgr_runtime *rt = runtime_with(1, NULL, RECHECK);
    float value = 3.0f;
    counter_step c = {0, 0, 0.0f, &value, 0, 0};
    cgr_step *s = make_counter_step(rt, &c, "decaying");
    int found = -1;
    for (int k = 0; k < LATE_RUNS; k++) {
        if (k == CHANGE)
            value = 5.0f;
        const int check = is_check_run(k, RECHECK);
        if (found < 0 && k >= CHANGE && check)
            found = k;
        /* Replays between the change and the recheck that finds it keep the captured 3. */
        const int stale = k >= CHANGE && found < 0;
        cgr_run_action a, w;
        run_one(s, r, 0.0f, stale ? 3.0f : value, &a);
        if (k < 2)
            w = CGR_RUN_WARMUP;
        else if (k == 2 || k == found)
            w = CGR_RUN_CAPTURE; /* the capture; the recheck that differs runs its own */
        else if (found >= 0)
            w = CGR_RUN_EAGER;
        else
            w = CGR_RUN_REPLAY;
        if (a != w)
            TEST_FAIL_("run %d was %s, expected %s", k, cgr_run_action_name(a),
                       cgr_run_action_name(w));
    }
    ASSERT_EQ(found, 13);
    int checks = 0;
    for (int k = 0; k <= found; k++)
        checks += is_check_run(k, RECHECK);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    printf("recheck: %s\n", ss.capture_error);
    ASSERT_U64_EQ(ss.frozen_checks, (uint64_t)checks);
    ASSERT_EQ(c.calls, 3 + checks + (LATE_RUNS - 1 - found));
    ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
    ASSERT_U64_EQ(ss.eager_by_reason[CGR_EAGER_FROZEN_VALUE], (uint64_t)(LATE_RUNS - 1 - found));
    ASSERT(strstr(ss.capture_error, "has changed since") != NULL);
    ASSERT(strstr(ss.capture_error, "add_scalar_kernel") != NULL);
    ASSERT(strstr(ss.capture_error, "as float 3)") != NULL);
    ASSERT(strstr(ss.capture_error, "as float 5)") != NULL);
    ASSERT(strstr(ss.capture_error, "at this run") != NULL);
    ASSERT(strstr(ss.capture_error, "The 4 replays since the previous check") != NULL);
    ASSERT(strstr(ss.capture_error, "step input or device memory") != NULL); /* not cut */
    ASSERT_OK(cgr_step_destroy(&s));

    /* Without rechecks the same step replays the captured 3 for good: the blind spot. */
    ASSERT_OK(cgr_runtime_destroy(&rt));
    rt = runtime(1, NULL);
    value = 3.0f;
    c = (counter_step){0, 0, 0.0f, &value, 0, 0};
    s = make_counter_step(rt, &c, "decaying_unchecked");
    for (int k = 0; k < LATE_RUNS; k++) {
        if (k == CHANGE)
            value = 5.0f;
        cgr_run_action a;
        run_one(s, r, 0.0f, 3.0f, &a);
    }
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/*
 * t from an input never changes the graph: every recheck passes and the
 * graph replays. armable: every run is acquired with CGR_ACQUIRE_ARM, and
 * is launched ahead unless its graph is not checked yet or is due for a
 * recheck; those runs go the plain way and are the checks.
 */
static void test_recheck_passes(rng *r, int armable)
{
    cgr_runtime *rt = runtime_with(1, NULL, RECHECK);
    counter_step c = {1, 0, 0.0f, NULL, armable, 0};
    cgr_step *s = make_counter_step(rt, &c, armable ? "counter_armed" : "counter_rechecked");
    int checks = 0;
    for (int k = 0; k < LATE_RUNS; k++) {
        cgr_run_action a;
        const int check = is_check_run(k, RECHECK);
        checks += check;
        const int armed = run_one_as(s, r, (float)(k + 1), (float)(k + 1), armable, &a);
        if (armed != (armable && k > 3 && !check))
            TEST_FAIL_("run %d: armed %d, expected %d", k, armed, armable && k > 3 && !check);
        cgr_run_action w = k < 2 ? CGR_RUN_WARMUP : k == 2 ? CGR_RUN_CAPTURE : CGR_RUN_REPLAY;
        if (a != w)
            TEST_FAIL_("run %d was %s, expected %s", k, cgr_run_action_name(a),
                       cgr_run_action_name(w));
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(checks, 4); /* runs 3, 8, 13 and 18 */
    ASSERT_U64_EQ(ss.frozen_checks, (uint64_t)checks);
    ASSERT_EQ(c.calls, 3 + checks);
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.captures, 1);
    ASSERT_U64_EQ(ss.replays, LATE_RUNS - 2);
    ASSERT_U64_EQ(ss.armed_runs, armable ? (uint64_t)(LATE_RUNS - 4 - (checks - 1)) : 0);
    ASSERT(ss.capture_error[0] == '\0');
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

int main(void)
{
    require_gpu();
    rng r = {7};
    test_refused(&r, VIA_ARG);
    printf("a host counter passed by value: refused, every run correct\n");
    test_refused(&r, VIA_CHILD);
    printf("the same inside a child graph node: refused, every run correct\n");
    test_from_input(&r);
    printf("the counter from an input: replayed, every run correct\n");
    test_child_graph_allocation(&r, 0);
    printf("a child graph using the graph's own allocation: replayed, every run correct\n");
    if (tk_moved_child_graphs()) {
        test_child_graph_allocation(&r, 1);
        printf("the graph using a child graph's allocation: replayed, every run correct\n");
    } else {
        printf("the graph using a child graph's allocation: not run (needs CUDA 13)\n");
    }
    test_accepted(&r, 1, "no_such_kernel,add_scalar");
    printf("frozen_allow naming the kernel: the first capture replays\n");
    test_accepted(&r, 0, NULL);
    printf("frozen_check = 0: the first capture replays\n");
    test_recheck_finds_late_change(&r);
    printf("frozen_recheck: a value that changed later found at the next recheck\n");
    test_recheck_passes(&r, 0);
    printf("frozen_recheck: values from an input pass every recheck\n");
    test_recheck_passes(&r, 1);
    printf("frozen_recheck: an armed run is not launched ahead when its check is due\n");
    printf("PASS\n");
    return 0;
}
