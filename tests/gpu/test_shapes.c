/*
 * Steps with a dynamic batch dim (docs/shapes.md): one step
 * declared at x[64][K] -> y[64][M] with the batch bucketed to
 * {1, 2, 4, 8, 16, 32, 64}, run at true sizes through every path a shape
 * change can take.
 *
 * The step (shapes_kernels.cu) shapes its launches and its scratch by the
 * bucket (cgr_ctx_dim's bucket; the scratch grows with it, so the arena
 * bound means something), and one kernel reads the true batch from device
 * memory to center the batch over the real rows only: a padded row in the
 * mean would change every real row. Each run gets fresh random inputs and
 * is checked against the same kernels run directly on a plain stream at
 * exactly the true size, bit for bit (the per-row arithmetic does not
 * depend on the launch size), and against what the step must have seen:
 * the input padded up to the bucket with the step's pad value, and the
 * true batch in device memory. Parts:
 *
 *   sizes     every batch 1..64: warm-up, capture, replay per bucket, 7
 *             captures, counters consistent, per-shape replays and last use;
 *             plus a capture = 0 runtime (always eager)
 *   update    a cache of one graph: each new bucket updates the cached
 *             executable in place (cudaGraphExecUpdate); once with
 *             zero-copy staging, once with every tensor crossing by
 *             memcpy nodes over three slots
 *   topology  buckets >= 32 add a kernel: updating across that line fails
 *             with cudaGraphExecUpdateErrorTopologyChanged and falls back
 *             to instantiating; within it the update succeeds
 *   eviction  three buckets rotated through a cache of two, bounded by
 *             count (update in place) and by bytes (re-capture)
 *   too large a byte budget below one graph: the capturing run launches its
 *             graph once (exact results), the shape then runs eagerly
 *             with the reason listed, and nothing is cached
 *   uncapturable  bucket 16 syncs its stream while captured: that run fails,
 *             the shape runs eagerly from then on, the others replay
 *   churn     K = 3 new shapes within W = 10 runs trip the guard, S = 4
 *             runs without a new one recover it
 *   arena     all 7 buckets need at most 1.2 x the arena of bucket 64 alone;
 *             with cgr_options.dump_dir, one DOT file per captured bucket,
 *             cgr-shapes-1.dot to cgr-shapes-7.dot
 *
 * Under compute-sanitizer (CGR_TEST_SANITIZER) the sizes part runs a
 * subset of the batch sizes and the eviction part fewer rounds.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "shapes_kernels.h"
#include "shapes_ref.h"

enum { MAXB = 64, K = 32, M = 48, WIDE = 16384, NB = 7 };

static const int64_t buckets[NB] = {1, 2, 4, 8, 16, 32, 64};
static const float SENTINEL = -7.25f; /* rows of x_seen past the bucket */

static float W_host[K * M], b_host[M];
static rng g_rng = {0x5ba9e5ULL};
static int g_sanitizer;

/* The smallest bucket that holds B (1 <= B <= 64). */
static int bucket_of(int B)
{
    int i = 0;
    while (i < NB - 1 && B > buckets[i])
        i++;
    return (int)buckets[i];
}

/* ---- the step -------------------------------------------------------------------------- */

typedef struct model {
    float *W, *b;    /* persistent, per runtime */
    int sync_bucket; /* > 0: cudaStreamSynchronize while capturing this bucket */
    int extra_from;  /* > 0: one more kernel (and scratch) for buckets >= this */
    int calls;       /* step function calls (replays call nothing) */
    int bad_desc;    /* calls that saw an I/O shape other than the bucket's */
    int64_t last_bucket, last_true;
} model;

/*
 * x [bucket][K] -> h = x W + b (scratch) -> y = h - mean of the real rows.
 * Outputs: y (dynamic), x_seen = the step's whole padded input (static
 * [64][K], rows past the bucket set to SENTINEL) and the true batch as the
 * graph read it from device memory (static [1]).
 */
static cgr_status shapes_step(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cgr_stream st;
    float *x, *y, *x_seen, *h, *wide, *extra = NULL;
    int64_t *true_out, bucket = 0, true_b = 0;
    const int64_t *true_dev = NULL;
    const cgr_tensor_desc *xd, *yd;
    m->calls++;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_dim(ctx, 0, &bucket, &true_b, &true_dev));
    STEP_TRY(cgr_ctx_desc(ctx, 0, 0, &xd));
    STEP_TRY(cgr_ctx_desc(ctx, 1, 0, &yd));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_output(ctx, 1, (void **)&x_seen));
    STEP_TRY(cgr_ctx_output(ctx, 2, (void **)&true_out));
    m->last_bucket = bucket;
    m->last_true = true_b;
    if (xd->dims[0] != bucket || xd->dims[1] != K || yd->dims[0] != bucket || yd->dims[1] != M)
        m->bad_desc++;
    const int rows = (int)bucket;
    /* Scratch that scales with the bucket: 64 KiB a row, so 7 buckets' plans
     * sum to ~2x the largest. */
    STEP_TRY(cgr_ctx_alloc(ctx, (size_t)rows * WIDE * sizeof(float), (void **)&wide));
    STEP_TRY(cgr_ctx_alloc(ctx, (size_t)rows * M * sizeof(float), (void **)&h));
    STEP_CUDA(shk_fill(wide, (size_t)rows * WIDE, 0.5f, st));
    STEP_CUDA(shk_linear(h, x, m->W, m->b, rows, K, M, st));
    if (m->extra_from > 0 && bucket >= m->extra_from) {
        STEP_TRY(cgr_ctx_alloc(ctx, (size_t)rows * M * sizeof(float), (void **)&extra));
        STEP_CUDA(shk_twice(extra, h, (size_t)rows * M, st));
    }
    STEP_CUDA(shk_center(y, h, rows, M, true_dev, st));
    STEP_CUDA(shk_copy_rows(x_seen, x, rows, MAXB, K, SENTINEL, st));
    STEP_CUDA(shk_copy_i64(true_out, true_dev, st));
    if (m->sync_bucket > 0 && bucket == m->sync_bucket && cgr_ctx_is_capturing(ctx))
        (void)cudaStreamSynchronize(st); /* illegal in capture; ignored like careless code would */
    if (extra)
        STEP_TRY(cgr_ctx_free(ctx, extra));
    STEP_TRY(cgr_ctx_free(ctx, h));
    STEP_TRY(cgr_ctx_free(ctx, wide));
    return CGR_STATUS_OK;
}

/* A runtime with one dynamic-batch step. */
typedef struct env {
    cgr_runtime *rt;
    cgr_step *step;
    model m;
    float pad; /* what the padded input rows must hold */
} env;

static cgr_options options(int warmup_runs, int cache_entries)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.warmup_runs = warmup_runs;
    o.shape_cache_entries = cache_entries;
    return o;
}

/* pad NULL: the default (zeros). */
static void env_make(env *e, const cgr_options *o, const double *pad, int sync_bucket,
                     int extra_from)
{
    memset(e, 0, sizeof *e);
    ASSERT_OK(cgr_runtime_create(&e->rt, o));
    ASSERT_OK(cgr_persistent_alloc(e->rt, sizeof W_host, (void **)&e->m.W));
    ASSERT_OK(cgr_persistent_alloc(e->rt, sizeof b_host, (void **)&e->m.b));
    CUDA_OK(cudaMemcpy(e->m.W, W_host, sizeof W_host, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(e->m.b, b_host, sizeof b_host, cudaMemcpyHostToDevice));
    e->m.sync_bucket = sync_bucket;
    e->m.extra_from = extra_from;
    e->pad = pad ? (float)*pad : 0.0f;

    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, MAXB, K);
    cgr_tensor_desc out[3] = {tensor2("y", CGR_DTYPE_F32, MAXB, M),
                              tensor2("x_seen", CGR_DTYPE_F32, MAXB, K),
                              tensor1("true_b", CGR_DTYPE_I64, 1)};
    cgr_dyn_dim dim = {.name = "batch", .buckets = buckets, .n_buckets = NB, .max = MAXB};
    /* The batch is axis 0 of input x and of output y. */
    cgr_dim_use uses[2] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0}};
    cgr_step_desc d = step_desc("shapes", &in, 1, out, 3, shapes_step, &e->m);
    d.dyn_dims = &dim;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    d.input_pad = pad;
    ASSERT_OK(cgr_step_create(e->rt, &d, &e->step));
}

static void env_free(env *e)
{
    ASSERT_EQ(e->m.bad_desc, 0);
    ASSERT_OK(cgr_runtime_destroy(&e->rt));
    ASSERT(e->rt == NULL);
}

/* The same kernels at exactly the true size, outside cgr (shapes_ref.h). */
static shapes_ref ref;

/* ---- one checked run ------------------------------------------------------------------- */

typedef struct run_out {
    cgr_status status;
    cgr_run_action action;
    int called; /* the step function ran (not a replay) */
} run_out;

/* Where a run is checked from, for failure messages: "line 123". */
#define STR_(x) #x
#define STR(x) STR_(x)
#define HERE "line " STR(__LINE__)

/*
 * Runs the step at batch B on fresh inputs. On success checks every
 * output: y bitwise equal to the reference and packed at the true size,
 * the input the step saw (true rows, then the pad value up to the bucket),
 * the true batch the device held, and the true and bucket values the step
 * function was given (when it ran).
 */
static run_out run_checked(env *e, int B, const char *where)
{
    static float x[MAXB * K], want[MAXB * M];
    rng_fill(&g_rng, x, (size_t)B * K);
    const int64_t dims[1] = {B};
    const void *ins[1] = {x};
    uint64_t t = 0;
    run_out o = {CGR_STATUS_OK, CGR_RUN_EAGER, 0};
    const int calls = e->m.calls;
    o.status = cgr_step_run(e->step, dims, ins, &t);
    o.called = e->m.calls > calls;
    if (o.status != CGR_STATUS_OK)
        return o;
    ASSERT_OK(cgr_step_run_action(e->step, t, &o.action));
    ASSERT_OK(cgr_step_wait(e->step, t));
    const int bk = bucket_of(B);
    if (o.called) {
        if (e->m.last_true != B || e->m.last_bucket != bk)
            TEST_FAIL_("%s: B=%d: the step function got true %lld, bucket %lld (want %d)",
                       where, B, (long long)e->m.last_true, (long long)e->m.last_bucket, bk);
    }

    const float *y, *xs;
    const int64_t *tb;
    size_t by, bx, bt;
    y = test_output(e->step, t, 0, &by);
    xs = test_output(e->step, t, 1, &bx);
    tb = test_output(e->step, t, 2, &bt);
    ASSERT_EQ(by, (size_t)B * M * sizeof(float)); /* packed at the true size */
    ASSERT_EQ(bx, (size_t)MAXB * K * sizeof(float));
    ASSERT_EQ(bt, sizeof(int64_t));
    if (*tb != B)
        TEST_FAIL_("%s: B=%d (%s): the device held true batch %lld", where, B,
                   cgr_run_action_name(o.action), (long long)*tb);
    shapes_ref_run(&ref, x, B, want);
    if (memcmp(y, want, by) != 0)
        for (int i = 0; i < B * M; i++)
            if (memcmp(&y[i], &want[i], sizeof(float)) != 0)
                TEST_FAIL_("%s: B=%d (%s): y[%d][%d] = %.9g, reference %.9g", where, B,
                           cgr_run_action_name(o.action), i / M, i % M, y[i], want[i]);
    for (int i = 0; i < MAXB * K; i++) {
        int r = i / K;
        float w = r < B ? x[i] : r < bk ? e->pad : SENTINEL;
        if (memcmp(&xs[i], &w, sizeof(float)) != 0)
            TEST_FAIL_("%s: B=%d (%s, bucket %d): the step saw x[%d][%d] = %.9g, expected "
                       "%.9g (%s)",
                       where, B, cgr_run_action_name(o.action), bk, r, i % K, xs[i], w,
                       r < B ? "input" : r < bk ? "padding" : "past the bucket");
    }
    return o;
}

/* One run that must succeed with the given action. */
#define EXPECT_RUN(e, B, want) expect_run_((e), (B), (want), HERE)
static void expect_run_(env *e, int B, cgr_run_action want, const char *where)
{
    run_out o = run_checked(e, B, where);
    if (o.status != CGR_STATUS_OK)
        TEST_FAIL_("%s: B=%d: cgr_step_run returned %s (%s)", where, B,
                   cgr_status_name(o.status), cgr_last_error());
    if (o.action != want)
        TEST_FAIL_("%s: B=%d: the run was %s, expected %s", where, B,
                   cgr_run_action_name(o.action), cgr_run_action_name(want));
}

/* One run of a script: batch B, which must succeed with action `want`. */
typedef struct expect {
    int B;
    cgr_run_action want;
} expect;

/* A script's runs in order; a failure names the script's line and the run's place in it. */
#define EXPECT_RUNS(e, script)                                                             \
    expect_runs_((e), (script), sizeof(script) / sizeof((script)[0]), __LINE__)
static void expect_runs_(env *e, const expect *script, size_t n, int line)
{
    for (size_t i = 0; i < n; i++) {
        char where[48];
        snprintf(where, sizeof where, "line %d, run %zu", line, i + 1);
        expect_run_(e, script[i].B, script[i].want, where);
    }
}

/* ---- stats ------------------------------------------------------------------------------ */

/* Runs that replayed a graph already cached, and the others. */
static uint64_t hits_of(const cgr_step_stats *s)
{
    return s->replays - s->captures;
}

static uint64_t misses_of(const cgr_step_stats *s)
{
    return s->runs - hits_of(s);
}

/* The step's counters, checked for consistency (cgr_step_stats says how they add up). */
static cgr_step_stats shape_stats(const env *e)
{
    cgr_step_stats s;
    memset(&s, 0, sizeof s);
    ASSERT_OK(cgr_step_get_stats(e->step, &s));
    ASSERT_U64_EQ(s.runs, s.warmup_runs + s.replays + s.eager_runs);
    ASSERT(s.captures <= s.replays);
    uint64_t by_reason = 0, fails = 0;
    for (int r = 0; r < CGR_EAGER_REASONS; r++)
        by_reason += s.eager_by_reason[r];
    ASSERT_U64_EQ(by_reason, s.eager_runs);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_NONE], 0);
    for (int r = 0; r < 16; r++)
        fails += s.update_failures_by_reason[r];
    ASSERT_U64_EQ(fails, s.update_failures);
    ASSERT(s.updates <= s.captures);
    ASSERT(s.new_shapes <= misses_of(&s) + s.capture_failures);
    ASSERT(s.churn_recoveries <= s.churn_activations);
    ASSERT(s.arena_bytes >= s.scratch_peak);
    ASSERT(s.capture_us >= 0 && s.instantiate_us >= 0 && s.update_us >= 0);
    return s;
}

/* Shape i of the step; 0 when there is none (and *out is left as it was). */
static int shape_at(const env *e, int i, cgr_shape_info *out)
{
    memset(out, 0xab, sizeof *out);
    const cgr_shape_info before = *out;
    cgr_status s = cgr_step_shape_at(e->step, i, out);
    if (s == CGR_STATUS_INVALID_ARGUMENT) {
        if (memcmp(&before, out, sizeof before) != 0)
            TEST_FAIL_("cgr_step_shape_at refused index %d but wrote its output", i);
        return 0;
    }
    ASSERT_OK(s);
    ASSERT_EQ(out->n_dims, 1);
    ASSERT(bucket_of((int)out->dims[0]) == out->dims[0]);
    return 1;
}

/* The shape with bucket bk: 1 and *out, or 0 when the step lists none. */
static int find_shape(const env *e, int64_t bk, cgr_shape_info *out)
{
    for (int i = 0; shape_at(e, i, out); i++)
        if (out->dims[0] == bk)
            return 1;
    return 0;
}

static int count_shapes(const env *e, int *cached)
{
    cgr_shape_info info;
    int n = 0;
    *cached = 0;
    while (shape_at(e, n, &info)) {
        *cached += info.cached;
        n++;
    }
    return n;
}

/* Shape `bk` is listed as running eagerly for `reason`, `runs` times, with a reason text. */
static cgr_shape_info expect_eager_shape(const env *e, int64_t bk, cgr_eager_reason reason,
                                         uint64_t runs)
{
    cgr_shape_info info;
    ASSERT(find_shape(e, bk, &info));
    ASSERT_EQ(info.cached, 0);
    ASSERT_EQ(info.reason, reason);
    ASSERT_U64_EQ(info.eager_runs, runs);
    ASSERT(info.text[0] != '\0');
    return info;
}

/* ---- the parts -------------------------------------------------------------------------- */

/*
 * Every batch size 1..64, three runs each in increasing order (each
 * bucket's first two runs warm up, the third captures), then every size
 * once more in a shuffled order (all replays). Default options: 2 warm-up
 * runs, 16 cached graphs, churn guard K = 8.
 */
static void part_sizes(void)
{
    const double pad = 0.75; /* not zero: the padded rows must hold exactly this */
    cgr_options o = options(2, 16);
    env e;
    env_make(&e, &o, &pad, 0, 0);
    int seen[MAXB + 1] = {0};
    uint64_t replays[MAXB + 1] = {0};
    int order[MAXB], n = 0, runs = 0, last_bucket = 0;
    for (int B = 1; B <= MAXB; B++) {
        /* Under a sanitizer: each bucket's edges and one size inside it. */
        int bk = bucket_of(B);
        if (g_sanitizer && !(B == bk || B == bk / 2 + 1 || B == (bk + bk / 2) / 2 + 1))
            continue;
        order[n++] = B;
        for (int k = 0; k < 3; k++) {
            cgr_run_action want = seen[bk] < 2 ? CGR_RUN_WARMUP
                                  : seen[bk] == 2 ? CGR_RUN_CAPTURE
                                                  : CGR_RUN_REPLAY;
            EXPECT_RUN(&e, B, want);
            replays[bk] += want == CGR_RUN_REPLAY;
            seen[bk]++;
            runs++;
            last_bucket = bk;
        }
    }
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rng_next(&g_rng) % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int i = 0; i < n; i++) {
        EXPECT_RUN(&e, order[i], CGR_RUN_REPLAY);
        replays[bucket_of(order[i])]++;
        runs++;
        last_bucket = bucket_of(order[i]);
    }
    /* Dims the step cannot take are refused before anything runs (s.runs below). */
    static float xin[MAXB * K];
    const void *ins[1] = {xin};
    const int64_t zero[1] = {0}, big[1] = {MAXB + 1};
    uint64_t t = 0;
    ASSERT_STATUS(cgr_step_run(e.step, NULL, ins, &t), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "dynamic dims") != NULL);
    ASSERT_STATUS(cgr_step_run(e.step, zero, ins, &t), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_run(e.step, big, ins, &t), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "must be 1..") != NULL);

    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.runs, runs);
    ASSERT_U64_EQ(s.captures, NB);
    ASSERT_U64_EQ(misses_of(&s), 3 * NB);
    ASSERT_U64_EQ(hits_of(&s), runs - 3 * NB);
    ASSERT_U64_EQ(s.warmup_runs, 2 * NB);
    ASSERT_U64_EQ(s.new_shapes, NB);
    ASSERT_U64_EQ(s.updates, 0);
    ASSERT_U64_EQ(s.update_failures, 0);
    ASSERT_U64_EQ(s.evictions, 0);
    ASSERT_U64_EQ(s.eager_runs, 0);
    ASSERT_U64_EQ(s.capture_failures, 0);
    ASSERT_U64_EQ(s.churn_activations, 0);
    ASSERT_EQ(s.entries, NB);
    ASSERT(s.bytes > 0);
    ASSERT(s.capture_us > 0 && s.instantiate_us > 0);
    ASSERT(s.last_update_error[0] == '\0' && s.churn_warning[0] == '\0');
    /* The largest plan is bucket 64's: wide and h, 256-byte aligned. */
    ASSERT(s.scratch_peak >= (uint64_t)MAXB * (WIDE + M) * sizeof(float));

    /* Per shape: cached graphs, most recently used first, with their replays. */
    uint64_t replay_sum = 0, prev_use = UINT64_MAX, bytes = 0;
    cgr_shape_info info;
    int i = 0;
    for (; shape_at(&e, i, &info); i++) {
        ASSERT_EQ(info.cached, 1);
        int64_t bk = info.dims[0];
        if (info.replays != replays[bk])
            TEST_FAIL_("bucket %lld: %llu replays listed, %llu made", (long long)bk,
                       (unsigned long long)info.replays, (unsigned long long)replays[bk]);
        ASSERT(info.last_use < prev_use);
        ASSERT(info.bytes > 0);
        if (i == 0)
            ASSERT_EQ(bk, last_bucket);
        prev_use = info.last_use;
        replay_sum += info.replays;
        bytes += info.bytes;
    }
    ASSERT_EQ(i, NB);
    ASSERT_U64_EQ(replay_sum, hits_of(&s));
    ASSERT_U64_EQ(bytes, s.bytes);
    printf("sizes: %d runs over %d batch sizes, bitwise equal to the true-size reference; "
           "%llu captures (%.0f us capture + %.0f us instantiate in all), %llu hits; arena "
           "%llu bytes, largest plan %llu\n",
           runs, n, (unsigned long long)s.captures, s.capture_us, s.instantiate_us,
           (unsigned long long)hits_of(&s), (unsigned long long)s.arena_bytes,
           (unsigned long long)s.scratch_peak);
    env_free(&e);

    /* capture = 0: every run eager (its first runs may count as warm-up), same results. */
    o = options(2, 16);
    o.capture = 0;
    env_make(&e, &o, &pad, 0, 0);
    /* After three runs of a bucket, whatever counted as its warm-up is over. */
    const int eager_sizes[] = {5, 7, 6, 8, 1, 1, 1, 1, 33, 64};
    int runs_of[MAXB + 1] = {0};
    for (size_t k = 0; k < sizeof eager_sizes / sizeof eager_sizes[0]; k++) {
        int B = eager_sizes[k];
        run_out r = run_checked(&e, B, HERE);
        ASSERT_OK(r.status);
        ASSERT(r.called);
        if (r.action != CGR_RUN_EAGER &&
            (r.action != CGR_RUN_WARMUP || runs_of[bucket_of(B)] >= 3))
            TEST_FAIL_("capture = 0, B=%d (run %d of its bucket): run was %s", B,
                       runs_of[bucket_of(B)] + 1, cgr_run_action_name(r.action));
        runs_of[bucket_of(B)]++;
    }
    s = shape_stats(&e);
    ASSERT_U64_EQ(s.captures, 0);
    ASSERT_U64_EQ(hits_of(&s), 0);
    ASSERT_EQ(s.entries, 0);
    env_free(&e);
}

/*
 * A cache of one graph: every new bucket updates the cached executable in
 * place. zero_copy_max 0 moves every tensor by memcpy nodes, which the
 * runtime repoints at each run's slot; with three slots the runs of one
 * executable land on every slot in turn.
 */
static void part_update(size_t zero_copy_max, int slots)
{
    static const expect script[] = {
        {1, CGR_RUN_WARMUP}, {1, CGR_RUN_CAPTURE}, {1, CGR_RUN_REPLAY},
        /* The update: bucket 1's executable becomes bucket 2's. */
        {2, CGR_RUN_WARMUP}, {2, CGR_RUN_UPDATE}, {2, CGR_RUN_REPLAY},
        {3, CGR_RUN_WARMUP}, {4, CGR_RUN_UPDATE}, {3, CGR_RUN_REPLAY}, {4, CGR_RUN_REPLAY},
        /* Bucket 1, evicted by the update, is new again. */
        {1, CGR_RUN_WARMUP}, {1, CGR_RUN_UPDATE}, {1, CGR_RUN_REPLAY},
    };
    cgr_options o = options(1, 1);
    o.advanced.zero_copy_max_bytes = zero_copy_max;
    o.staging_slots = slots;
    env e;
    env_make(&e, &o, NULL, 0, 0); /* padding: zeros */
    EXPECT_RUNS(&e, script);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(e.step, &ss));
    ASSERT_U64_EQ(ss.memcpy_tensors, zero_copy_max ? 0 : 4); /* x, y, x_seen, true_b */
    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.captures, 4);
    ASSERT_U64_EQ(s.updates, 3);
    ASSERT_U64_EQ(s.update_failures, 0);
    ASSERT_U64_EQ(s.evictions, 3);
    ASSERT_U64_EQ(hits_of(&s), 5);
    ASSERT_EQ(s.entries, 1);
    ASSERT(s.update_us > 0);
    int cached;
    ASSERT_EQ(count_shapes(&e, &cached), 1);
    cgr_shape_info info;
    ASSERT(shape_at(&e, 0, &info) && info.dims[0] == 1 && info.cached && info.replays == 1);
    printf("update (%s, %d slots): 3 updates in place, 1 instantiate; per graph: capture + "
           "instantiate %.0f us, capture + update %.0f us (capture %.0f us in all)\n",
           zero_copy_max ? "zero-copy" : "memcpy nodes", slots,
           s.instantiate_us + s.capture_us / 4.0, s.update_us / 3.0 + s.capture_us / 4.0,
           s.capture_us);
    env_free(&e);
}

/*
 * Buckets >= 32 add a kernel. Updating bucket 16's executable into bucket
 * 32 fails (the topology changed), the runtime records why and
 * instantiates; 32 into 64 keeps the topology and updates.
 */
static void part_topology(void)
{
    static const expect to32[] = {
        {16, CGR_RUN_WARMUP}, {9, CGR_RUN_CAPTURE}, {13, CGR_RUN_REPLAY},
        /* Bucket 32: the update was tried, failed, then instantiate. */
        {17, CGR_RUN_WARMUP}, {31, CGR_RUN_CAPTURE},
    };
    static const expect to64_to16[] = {
        {20, CGR_RUN_REPLAY},
        /* 32 -> 64: same kernels, an update. */
        {64, CGR_RUN_WARMUP}, {40, CGR_RUN_UPDATE}, {63, CGR_RUN_REPLAY},
        /* 64 -> 16: one kernel fewer, the update fails again. */
        {10, CGR_RUN_WARMUP}, {16, CGR_RUN_CAPTURE}, {11, CGR_RUN_REPLAY},
    };
    cgr_options o = options(1, 1);
    env e;
    env_make(&e, &o, NULL, 0, 32);
    EXPECT_RUNS(&e, to32);
    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.update_failures, 1);
    ASSERT_U64_EQ(s.update_failures_by_reason[cudaGraphExecUpdateErrorTopologyChanged], 1);
    ASSERT_U64_EQ(s.updates, 0);
    ASSERT(s.last_update_error[0] != '\0');
    printf("topology: update 16 -> 32 failed as expected: %s\n", s.last_update_error);
    EXPECT_RUNS(&e, to64_to16);
    s = shape_stats(&e);
    ASSERT_U64_EQ(s.update_failures, 2);
    ASSERT_U64_EQ(s.update_failures_by_reason[cudaGraphExecUpdateErrorTopologyChanged], 2);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.captures, 4);
    ASSERT_EQ(s.entries, 1);
    env_free(&e);
}

/*
 * Buckets 1, 2 and 4 in turn, through a cache that holds two graphs: each
 * visit finds its graph evicted, warms up again and makes a new one. Bounded
 * by count, the least recently used executable is updated in place; bounded
 * by bytes (and not full by count), the new graph is instantiated.
 */
static void rotate(env *e, int rounds, cgr_run_action remake)
{
    static const int bks[3] = {1, 2, 4};
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < 3; i++) {
            int B = bks[i];
            /* The first two of round 0 fill the cache by instantiating. */
            EXPECT_RUN(e, B, CGR_RUN_WARMUP);
            EXPECT_RUN(e, B, r == 0 && i < 2 ? CGR_RUN_CAPTURE : remake);
            EXPECT_RUN(e, B, CGR_RUN_REPLAY);
        }
}

static void part_eviction(void)
{
    const int rounds = g_sanitizer ? 2 : 4;
    const uint64_t remakes = 3 * (uint64_t)rounds - 2;

    /* By count: two entries. Every visit after an eviction is a new shape to the
     * churn guard (12 within 36 runs would trip it); this part is about eviction. */
    cgr_options o = options(1, 2);
    o.churn_shapes = 0;
    env e;
    env_make(&e, &o, NULL, 0, 0);
    rotate(&e, rounds, CGR_RUN_UPDATE);
    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.evictions, remakes);
    ASSERT_U64_EQ(s.updates, remakes);
    ASSERT_U64_EQ(s.captures, remakes + 2);
    ASSERT_EQ(s.entries, 2);
    env_free(&e);

    /* By bytes: find each bucket's graph size, then allow any two but not three. */
    o = options(1, 16);
    env_make(&e, &o, NULL, 0, 0);
    uint64_t total = 0;
    for (int B = 1; B <= 4; B *= 2) {
        EXPECT_RUN(&e, B, CGR_RUN_WARMUP);
        EXPECT_RUN(&e, B, CGR_RUN_CAPTURE);
        cgr_shape_info info;
        ASSERT(find_shape(&e, B, &info) && info.cached && info.bytes > 0);
        total += info.bytes;
    }
    env_free(&e);
    o = options(1, 16);
    o.churn_shapes = 0;
    o.shape_cache_bytes = (size_t)total - 1;
    env_make(&e, &o, NULL, 0, 0);
    rotate(&e, rounds, CGR_RUN_CAPTURE);
    s = shape_stats(&e);
    ASSERT_U64_EQ(s.evictions, remakes);
    ASSERT_U64_EQ(s.updates, 0);
    ASSERT_U64_EQ(s.captures, remakes + 2);
    ASSERT_EQ(s.entries, 2);
    ASSERT(s.bytes <= total - 1);
    printf("eviction: %d rounds over 3 buckets, %llu evictions by count (updated in place) "
           "and by bytes (budget %llu: re-captured), all results exact\n",
           rounds, (unsigned long long)remakes, (unsigned long long)(total - 1));
    env_free(&e);
}

/*
 * shape_cache_bytes = 1: no graph fits. The run that captures launches the
 * graph it made once (the result is exact), then frees it; every later run
 * of that shape is eager with reason TOO_LARGE, and so is each new shape
 * after its own capture.
 */
static void part_too_large(void)
{
    static const expect script[] = {
        {3, CGR_RUN_WARMUP}, {4, CGR_RUN_CAPTURE}, {3, CGR_RUN_EAGER}, {4, CGR_RUN_EAGER},
        {2, CGR_RUN_WARMUP}, {2, CGR_RUN_CAPTURE}, {2, CGR_RUN_EAGER}, {3, CGR_RUN_EAGER},
    };
    cgr_options o = options(1, 16);
    o.shape_cache_bytes = 1;
    env e;
    env_make(&e, &o, NULL, 0, 0);
    EXPECT_RUNS(&e, script);
    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.captures, 2);
    ASSERT_U64_EQ(hits_of(&s), 0);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_TOO_LARGE], s.eager_runs);
    ASSERT_U64_EQ(s.eager_runs, 4);
    ASSERT_EQ(s.entries, 0);
    ASSERT_U64_EQ(s.bytes, 0);
    int cached;
    ASSERT_EQ(count_shapes(&e, &cached), 2);
    ASSERT_EQ(cached, 0);
    cgr_shape_info info = expect_eager_shape(&e, 4, CGR_EAGER_TOO_LARGE, 3);
    ASSERT(strstr(info.text, "budget") != NULL);
    printf("too large: %s\n", info.text);
    env_free(&e);
}

/*
 * Bucket 16 synchronizes its stream while being captured: that run fails
 * and launches nothing, bucket 16 runs eagerly from then on with the
 * reason listed, and bucket 4 captures and replays around it.
 */
static void part_uncapturable(void)
{
    /* Bucket 4 captures and replays; 16 (and 9, 15 in it) runs eagerly. */
    static const expect around[] = {
        {3, CGR_RUN_WARMUP}, {4, CGR_RUN_CAPTURE}, {16, CGR_RUN_EAGER}, {3, CGR_RUN_REPLAY},
        {9, CGR_RUN_EAGER},  {4, CGR_RUN_REPLAY},  {15, CGR_RUN_EAGER},
    };
    cgr_options o = options(1, 16);
    env e;
    env_make(&e, &o, NULL, 16, 0);
    EXPECT_RUN(&e, 10, CGR_RUN_WARMUP);
    /* Its capture fails, and the run itself goes eagerly, outputs checked. */
    EXPECT_RUN(&e, 12, CGR_RUN_EAGER);
    printf("uncapturable: %s\n", shape_stats(&e).capture_error);
    EXPECT_RUNS(&e, around);

    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.capture_failures, 1);
    ASSERT_U64_EQ(s.captures, 1);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_CAPTURE_FAILED], s.eager_runs);
    ASSERT_U64_EQ(s.eager_runs, 4);
    ASSERT_U64_EQ(hits_of(&s), 2);
    cgr_shape_info info = expect_eager_shape(&e, 16, CGR_EAGER_CAPTURE_FAILED, 3);
    printf("uncapturable: bucket 16 listed as eager: %s\n", info.text);
    ASSERT(find_shape(&e, 4, &info));
    ASSERT_EQ(info.cached, 1);
    ASSERT_U64_EQ(info.replays, 2);
    int cached;
    ASSERT_EQ(count_shapes(&e, &cached), 2);
    ASSERT_EQ(cached, 1);
    env_free(&e);
}

/*
 * Churn guard K = 3 new shapes within W = 10 runs, S = 4 stable runs to
 * recover, one warm-up run per shape. New shapes at runs 0, 3 and 4 trip
 * it; while tripped, new shapes run eagerly and the cached one keeps
 * replaying; four runs without a new shape bring warm-up and capture back.
 */
static void part_churn(void)
{
    /* New shapes 1 and 2. */
    static const expect two_new[] = {
        {1, CGR_RUN_WARMUP}, {1, CGR_RUN_CAPTURE}, {1, CGR_RUN_REPLAY}, {2, CGR_RUN_WARMUP},
    };
    /*
     * While tripped: bucket 1, cached, still replays (stable 1); 7 is a new
     * shape (bucket 8), the stable count restarts; 8 stable 1, 1 stable 2,
     * 5 stable 3; 6 stable 4: recovered, and bucket 8 warms up. Then 2
     * captures, warmed up before the trip; 4 warms up (its tripped run was
     * no warm-up) and captures; all replay.
     */
    static const expect tripped[] = {
        {1, CGR_RUN_REPLAY},  {7, CGR_RUN_EAGER},   {8, CGR_RUN_EAGER},  {1, CGR_RUN_REPLAY},
        {5, CGR_RUN_EAGER},   {6, CGR_RUN_WARMUP},  {8, CGR_RUN_CAPTURE},
        {2, CGR_RUN_CAPTURE}, {4, CGR_RUN_WARMUP},  {4, CGR_RUN_CAPTURE},
        {3, CGR_RUN_REPLAY},  {2, CGR_RUN_REPLAY},  {7, CGR_RUN_REPLAY},
    };
    cgr_options o = options(1, 16);
    o.churn_shapes = 3;
    o.churn_window = 10;
    o.churn_stable = 4;
    env e;
    env_make(&e, &o, NULL, 0, 0);
    EXPECT_RUNS(&e, two_new);
    cgr_step_stats s = shape_stats(&e);
    ASSERT_U64_EQ(s.churn_activations, 0);
    ASSERT(s.churn_warning[0] == '\0');
    EXPECT_RUN(&e, 3, CGR_RUN_EAGER); /* new shape 3 (bucket 4): trips */
    s = shape_stats(&e);
    ASSERT_U64_EQ(s.churn_activations, 1);
    ASSERT(strstr(s.churn_warning, "batch") != NULL);
    printf("churn: %s\n", s.churn_warning);
    EXPECT_RUNS(&e, tripped);
    s = shape_stats(&e);
    ASSERT_U64_EQ(s.churn_activations, 1);
    ASSERT_U64_EQ(s.churn_recoveries, 1);
    ASSERT_U64_EQ(s.eager_runs, 4);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_CHURN], 4);
    ASSERT_U64_EQ(s.new_shapes, 4);
    ASSERT_U64_EQ(s.captures, 4);
    ASSERT_EQ(s.entries, 4);
    env_free(&e);
}

/*
 * Whether DIR/cgr-shapes-1.dot .. -N.dot exist and -(N+1) does not, each
 * removed after; then DIR goes too.
 */
static void expect_dot_files(const char *dir, int n)
{
    for (int k = 1; k <= n + 1; k++) {
        char path[128];
        snprintf(path, sizeof path, "%s/cgr-shapes-%d.dot", dir, k);
        FILE *f = fopen(path, "r");
        if ((f != NULL) != (k <= n))
            TEST_FAIL_("%s %s after %d captures", path, f ? "exists" : "is missing", n);
        if (f) {
            fclose(f);
            remove(path);
        }
    }
    ASSERT(rmdir(dir) == 0);
}

/* All 7 buckets captured on one runtime against bucket 64 alone on a fresh one. */
static void part_arena(void)
{
    cgr_options o = options(1, 16);
    env all, one;
    char dir[] = "/tmp/cgr-shapes-dot-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    o.dump_dir = dir;
    env_make(&all, &o, NULL, 0, 0);
    o.dump_dir = NULL;
    for (int i = 0; i < NB; i++) {
        int B = (int)buckets[i];
        EXPECT_RUN(&all, B, CGR_RUN_WARMUP);
        EXPECT_RUN(&all, B, CGR_RUN_CAPTURE);
    }
    for (int i = NB - 1; i >= 0; i--)
        EXPECT_RUN(&all, (int)buckets[i], CGR_RUN_REPLAY);
    env_make(&one, &o, NULL, 0, 0);
    EXPECT_RUN(&one, MAXB, CGR_RUN_WARMUP);
    EXPECT_RUN(&one, MAXB, CGR_RUN_CAPTURE);
    EXPECT_RUN(&one, MAXB, CGR_RUN_REPLAY);
    cgr_step_stats sa = shape_stats(&all), so = shape_stats(&one);
    cgr_runtime_stats ra, ro;
    ASSERT_OK(cgr_runtime_get_stats(all.rt, &ra));
    ASSERT_OK(cgr_runtime_get_stats(one.rt, &ro));
    /* Separate plans would sum to about 127/64 of bucket 64's: the bound is not trivial. */
    printf("arena: all 7 buckets %llu bytes (%llu reserved), bucket 64 alone %llu (%llu "
           "reserved): %.3f x\n",
           (unsigned long long)sa.arena_bytes, (unsigned long long)ra.arena_reserved,
           (unsigned long long)so.arena_bytes, (unsigned long long)ro.arena_reserved,
           so.arena_bytes ? (double)sa.arena_bytes / (double)so.arena_bytes : 0.0);
    ASSERT(so.arena_bytes >= so.scratch_peak && so.scratch_peak > 0);
    ASSERT_U64_EQ(sa.scratch_peak, so.scratch_peak);
    ASSERT(sa.arena_bytes * 5 <= so.arena_bytes * 6);
    ASSERT(ra.arena_reserved * 5 <= ro.arena_reserved * 6);
    env_free(&all);
    env_free(&one);
    expect_dot_files(dir, NB);
}

/* A step named with '/' and '..' writes its DOT file inside dump_dir, each '/' as '_'. */
static void part_dot_name(void)
{
    char dir[] = "/tmp/cgr-dot-name-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.dump_dir = dir;
    o.warmup_runs = 1;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    cgr_step *s = make_xy(rt, "enc/../dec", 16, affine_step, NULL);
    float x[16];
    rng_fill(&g_rng, x, 16);
    const void *ins[1] = {x};
    cgr_run_action a;
    (void)test_run(s, ins, &a);
    ASSERT_EQ(a, CGR_RUN_WARMUP);
    (void)test_run(s, ins, &a);
    ASSERT_EQ(a, CGR_RUN_CAPTURE);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    char path[128];
    snprintf(path, sizeof path, "%s/cgr-enc_.._dec-1.dot", dir);
    if (remove(path) != 0)
        TEST_FAIL_("%s is missing", path);
    ASSERT(rmdir(dir) == 0); /* and nothing else was written there */
    printf("dot name: step 'enc/../dec' wrote cgr-enc_.._dec-1.dot inside dump_dir\n");
}

int main(void)
{
    require_gpu();
    g_sanitizer = under_sanitizer(NULL);
    rng_fill(&g_rng, W_host, K * M);
    rng_fill(&g_rng, b_host, M);
    shapes_ref_init(&ref, W_host, b_host, MAXB, K, M);
    part_sizes();
    part_update((size_t)16 << 20, 2);
    part_update(0, 3);
    part_topology();
    part_eviction();
    part_too_large();
    part_uncapturable();
    part_churn();
    part_arena();
    part_dot_name();
    shapes_ref_free(&ref);
    printf("PASS\n");
    return 0;
}
