/*
 * W-ddp through cgr on 2 GPUs (on 1 where the host has one), with a small
 * W-mlp (hidden 256).
 *
 * The test forks its ranks itself (bench/ddp/boot.h: one process per GPU,
 * NCCL's unique id through a pipe) before any CUDA call, and each rank
 * checks, after an armable step that asks for the communicator has failed
 * its first run, a step that uses it has not been profiled, and a
 * host-function call into NCCL's library whose argument changes every run
 * has passed the frozen-value check (one into the test's own did not):
 *   A. at per-GPU batch B = 1 (W-mlp's small-batch kernels) and B = 16
 *      (its cuBLAS path): 50 graphed W-ddp steps (10 under
 *      compute-sanitizer) end with parameters
 *      bitwise equal to 50 eager W-ddp steps on the same data; rank 0
 *      also trains the single-GPU step on the concatenated batch 2B (each
 *      step's x and labels are rank 0's batch, then rank 1's) on its GPU.
 *      After one step the all-reduced W-ddp gradient must equal the
 *      single-GPU gradient within 1e-5 relative, norm-wise; after 50
 *      steps so must the parameters, with AdamW's eps raised to 1e-3 for
 *      this comparison only. With eps 1e-8 AdamW turns a gradient element
 *      near zero, whose sign fp32 rounding decides, into a full +-lr
 *      step, so two correct fp32 runs
 *      that merely sum the batch in a different order drift apart (0.0105
 *      relative after 50 steps at B = 16 on the H200, 2e-7 at B = 1); that
 *      figure is printed, not asserted. Bad uses of the API are refused on
 *      the way.
 *   B. a capture that fails on the last rank only, in three ways: its step
 *      calls cudaStreamSynchronize while cgr captures it; its arena
 *      cannot back the step's scratch (arena_limit 1 MiB there, 8 MiB of
 *      scratch), which that rank finds in the first warm-up; or its step
 *      reports a failure in both warm-ups (after enqueueing its work, so
 *      the collectives still pair up), so that rank has no scratch plan
 *      when its peers capture. Every way, every rank's capture run
 *      executes eagerly, the capture error names that rank, and the
 *      following eager runs still train the ranks alike;
 *   C. a capture agreement that rank 1 never joins ends on rank 0 within
 *      cgr_nccl_options.timeout_ms (3 s here) with an error, not a hang.
 * The parent compares the ranks' parameter hashes (shared memory): they
 * must be bitwise identical after A and after B. Every process also has
 * an alarm(), so a hang fails the test instead of stalling it.
 *
 * With one GPU the test runs one rank: a communicator of one, whose
 * all-reduce inside the graph changes nothing, so A's graphed W-ddp must
 * equal single-GPU training on the same batch bitwise, gradient and
 * parameters; B fails rank 0's own capture; C, which needs a peer that
 * never joins, is left out. That way attaching, the private communicator,
 * the agreement after each capture and collectives inside a graph run on
 * every GPU machine, and the 2-rank run adds what needs a peer.
 *
 * Exits 77 (skipped) without NCCL or without a usable GPU.
 */
/* MAP_ANONYMOUS (the shared results page) is not in POSIX 2008. */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#if !TEST_HAVE_NCCL

int main(void)
{
    printf("SKIP: cgr was built without NCCL\n");
    return TEST_SKIP;
}

#else

#include <sys/mman.h>

#include <nccl.h>

#include "cgr/cgr_nccl.h"
#include "common.h"
#include "ddp/boot.h"
#include "ddp/ddp.h"
#include "mlp/mlp.h"

#define WORLD 2 /* at most: one rank on a one-GPU host */
/* Steps per training run: 50, or 10 under compute-sanitizer, whose kernels run far slower. */
static int g_steps = 50;
#define N_B 2
static const int batches[N_B] = {1, 16};

/* How B makes the last rank's capture fail. */
enum { B_CAPTURE_SYNC, B_ARENA_LIMIT, B_WARMUP_FAILS, B_WAYS };

/* What the ranks report to the parent. */
typedef struct shared {
    uint64_t hash_a[N_B][WORLD];  /* parameters after A (graphed W-ddp) */
    double rel_err[N_B];          /* rank 0: W-ddp vs single GPU on 2B */
    uint64_t hash_b[B_WAYS][WORLD]; /* parameters after B's eager steps, for each way */
    int saw_failure[B_WAYS][WORLD]; /* B: the capture run failed as expected */
    int c_done;                   /* C: rank 0 got its timeout */
    double c_ms;                  /* ... after this long */
} shared;

static void small_cfg(mlp_cfg *c, int B)
{
    mlp_cfg_default(c, B);
    c->in_dim = 512;
    c->hidden = 256;
}

/* AdamW's eps for the 50-step comparison with single-GPU training (top of file). */
#define CMP_EPS 1e-3f

#define RANK_LOG(who, ...)                                                                 \
    do {                                                                                   \
        printf("[rank %d] ", (who)->rank);                                                 \
        printf(__VA_ARGS__);                                                               \
        printf("\n");                                                                      \
        fflush(stdout);                                                                    \
    } while (0)

typedef struct rank_ctx {
    const ddp_rank_info *who;
    ncclComm_t comm;
    shared *sh;
} rank_ctx;

static cgr_runtime *new_runtime_limit(const rank_ctx *rc, int capture, size_t arena_limit)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.device = rc->who->local_rank;
    o.capture = capture;
    if (arena_limit)
        o.arena_limit = arena_limit;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    return rt;
}

static cgr_runtime *new_runtime(const rank_ctx *rc, int capture)
{
    return new_runtime_limit(rc, capture, 0);
}

/*
 * Trains `steps` steps of the model for cfg (nccl: W-ddp on rc->comm;
 * otherwise single GPU) from params0 and copies the final parameters to
 * out. concat: the step's batch is the concatenation of every rank's
 * batch of the per-rank config `rank_cfg` (the single-GPU reference);
 * otherwise this rank's own batches.
 */
static void train_n(const rank_ctx *rc, const mlp_cfg *cfg, const mlp_cfg *rank_cfg, int nccl,
                    int capture, int concat, const float *params0, float *out, int steps,
                    float *grads_out)
{
    ddp_model m;
    ASSERT_EQ(ddp_model_init(&m, cfg, 1, nccl), 0);
    cgr_runtime *rt = new_runtime(rc, capture);
    if (nccl) {
        cgr_nccl_options no;
        ASSERT_OK(cgr_nccl_options_init(&no));
        ASSERT_OK(cgr_runtime_attach_nccl(rt, rc->comm, &no));
        /* One communicator per runtime. */
        ASSERT_STATUS(cgr_runtime_attach_nccl(rt, rc->comm, &no), CGR_STATUS_WRONG_STATE);
        int r = -1, w = -1;
        ASSERT_OK(cgr_runtime_nccl_rank(rt, &r, &w));
        ASSERT_EQ(r, rc->who->rank);
        ASSERT_EQ(w, rc->who->world);
    }
    ASSERT_EQ(ddp_model_setup(&m, rt, params0), 0);
    ddp_io io;
    cgr_step_desc d;
    ddp_step_desc(&m, nccl ? "W-ddp" : "W-mlp", &io, &d);
    cgr_step *st = NULL;
    ASSERT_OK(cgr_step_create(rt, &d, &st));

    const size_t xb = (size_t)rank_cfg->batch * (size_t)rank_cfg->in_dim;
    const int world = rc->who->world;
    float *x = malloc(sizeof(float) * xb * (size_t)world);
    int *labels = malloc(sizeof(int) * (size_t)rank_cfg->batch * (size_t)world);
    ASSERT(x && labels);
    uint64_t seeds[WORLD];
    for (int r = 0; r < world; r++)
        seeds[r] = ddp_seed(0x7e57u + (uint64_t)rank_cfg->batch, r);
    for (int k = 0; k < steps; k++) {
        if (concat) {
            for (int r = 0; r < world; r++)
                ddp_fill(&seeds[r], rank_cfg, x + (size_t)r * xb, labels + r * rank_cfg->batch);
        } else {
            ddp_fill(&seeds[rc->who->rank], rank_cfg, x, labels);
        }
        const void *in[2] = {x, labels};
        uint64_t t = 0;
        ASSERT_OK(cgr_step_run(st, NULL, in, &t));
        ASSERT_OK(cgr_step_wait(st, t));
        float loss = NAN;
        ASSERT_OK(cgr_step_output(st, t, 0, &loss, sizeof loss, NULL));
        if (!isfinite(loss))
            TEST_FAIL_("rank %d step %d: loss %g", rc->who->rank, k, loss);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(st, &ss));
    cgr_options dflt;
    ASSERT_OK(cgr_options_init(&dflt));
    /* A run shorter than the warm-up (the one-step gradient check) is still warming up. */
    if (steps > dflt.warmup_runs) {
        ASSERT_EQ(ss.mode, capture ? CGR_MODE_GRAPH : CGR_MODE_EAGER);
        ASSERT_EQ(ss.captures, capture ? 1 : 0);
    } else {
        ASSERT_EQ(ss.mode, CGR_MODE_WARMUP);
    }
    ASSERT(cudaMemcpy(out, m.dev.params, m.n_floats * sizeof(float), cudaMemcpyDeviceToHost) ==
           cudaSuccess);
    /* The last step's gradient: all-reduced and scaled for W-ddp, before AdamW used it. */
    if (grads_out)
        ASSERT(cudaMemcpy(grads_out, m.dev.grads, m.n_floats * sizeof(float),
                          cudaMemcpyDeviceToHost) == cudaSuccess);
    if (nccl && capture && steps > dflt.warmup_runs) {
        /* Detaching leaves the graph as it is; detaching twice is refused. */
        ASSERT_OK(cgr_runtime_detach_nccl(rt));
        ASSERT_STATUS(cgr_runtime_detach_nccl(rt), CGR_STATUS_WRONG_STATE);
        /* A runtime with a captured step cannot get a communicator any more (no peer asked). */
        ASSERT_STATUS(cgr_runtime_attach_nccl(rt, rc->comm, NULL), CGR_STATUS_WRONG_STATE);
    }
    free(x);
    free(labels);
    /* The runtime and its graphs go before the communicator ever does. */
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ddp_model_teardown(&m);
}

static void train(const rank_ctx *rc, const mlp_cfg *cfg, const mlp_cfg *rank_cfg, int nccl,
                  int capture, int concat, const float *params0, float *out)
{
    train_n(rc, cfg, rank_cfg, nccl, capture, concat, params0, out, g_steps, NULL);
}

static double rel_norm_diff(const float *a, const float *ref, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : INFINITY;
}

static void part_a(const rank_ctx *rc)
{
    for (int bi = 0; bi < N_B; bi++) {
        const int B = batches[bi];
        mlp_cfg cfg;
        small_cfg(&cfg, B);
        mlp_layout L;
        ASSERT_EQ(mlp_layout_init(&L, &cfg), 0);
        const size_t n = L.n_floats;
        float *p0 = malloc(n * sizeof(float)), *pg = malloc(n * sizeof(float)),
              *pe = malloc(n * sizeof(float));
        ASSERT(p0 && pg && pe);
        ASSERT_EQ(mlp_init_params(&cfg, p0, 0x5eedULL), 0);

        train(rc, &cfg, &cfg, 1, 1, 0, p0, pg);
        train(rc, &cfg, &cfg, 1, 0, 0, p0, pe);
        if (memcmp(pg, pe, n * sizeof(float)) != 0)
            TEST_FAIL_("rank %d B=%d: graphed and eager W-ddp parameters differ after %d steps",
                       rc->who->rank, B, g_steps);
        rc->sh->hash_a[bi][rc->who->rank] = ddp_hash(pg, n * sizeof(float));
        RANK_LOG(rc->who, "B=%d: %d graphed W-ddp steps == %d eager ones, bitwise", B, g_steps,
                 g_steps);

        /* Against single-GPU training on the concatenated batch (top of file). Both
         * ranks train W-ddp; rank 0 alone trains the single-GPU step. */
        const int world = rc->who->world;
        mlp_cfg big, cfg_e, big_e;
        small_cfg(&big, world * B);
        cfg_e = cfg;
        big_e = big;
        cfg_e.eps = big_e.eps = CMP_EPS;
        float *g1 = malloc(n * sizeof(float)), *pq = malloc(n * sizeof(float)),
              *ps = malloc(n * sizeof(float)), *gs = malloc(n * sizeof(float));
        ASSERT(g1 && pq && ps && gs);
        train_n(rc, &cfg, &cfg, 1, 1, 0, p0, pq, 1, g1);
        float *pqe = malloc(n * sizeof(float));
        ASSERT(pqe);
        train_n(rc, &cfg_e, &cfg_e, 1, 1, 0, p0, pqe, g_steps, NULL);
        if (rc->who->rank == 0) {
            train_n(rc, &big, &cfg, 0, 1, 1, p0, ps, 1, gs);
            double eg = rel_norm_diff(g1, gs, n);
            train_n(rc, &big_e, &cfg_e, 0, 1, 1, p0, ps, g_steps, NULL);
            double e = rel_norm_diff(pqe, ps, n);
            train(rc, &big, &cfg, 0, 1, 1, p0, ps);
            double e8 = rel_norm_diff(pg, ps, n);
            rc->sh->rel_err[bi] = e;
            RANK_LOG(rc->who,
                     "B=%d: W-ddp vs single GPU at batch %d, relative (norm-wise): gradient "
                     "after 1 step %.3g; parameters after %d steps %.3g (AdamW eps %g), %.3g "
                     "with eps 1e-8 (information only)",
                     B, world * B, eg, g_steps, e, (double)CMP_EPS, e8);
            if (!(eg <= 1e-5))
                TEST_FAIL_("B=%d: the all-reduced W-ddp gradient differs from the single-GPU "
                           "gradient of the concatenated batch by %.3g relative (limit 1e-5)",
                           B, eg);
            if (!(e <= 1e-5))
                TEST_FAIL_("B=%d: W-ddp parameters differ from single-GPU training on the "
                           "concatenated batch by %.3g relative after %d steps (limit 1e-5)",
                           B, e, g_steps);
            /* One rank: the all-reduce and the scale by 1 leave every bit as it was. */
            if (world == 1 && (memcmp(g1, gs, n * sizeof(float)) != 0 || e8 != 0.0))
                TEST_FAIL_("B=%d: one-rank W-ddp differs from single-GPU training on the same "
                           "batch (gradient after 1 step %.3g, parameters after %d steps %.3g "
                           "relative); they must be bitwise equal",
                           B, eg, g_steps, e8);
        }
        free(g1);
        free(pq);
        free(pqe);
        free(ps);
        free(gs);
        free(p0);
        free(pg);
        free(pe);
    }
}

static const char *const b_way_name[B_WAYS] = {"a synchronization in the captured step",
                                               "scratch its arena cannot back",
                                               "warm-ups that failed"};

/* B_WARMUP_FAILS: W-ddp's step, whose first `fail_left` uncaptured runs report a failure. */
typedef struct {
    ddp_model *m;
    int fail_left;
} failing_warmups;

static cgr_status fail_warmups_step(cgr_ctx *ctx, void *user)
{
    failing_warmups *f = user;
    cgr_status st = ddp_step(ctx, f->m);
    if (st != CGR_STATUS_OK || cgr_ctx_is_capturing(ctx) || f->fail_left == 0)
        return st;
    f->fail_left--;
    return CGR_STATUS_STEP_FAILED;
}

/* B: the last rank's capture fails; every rank must fail that run, then train on eagerly. */
static void part_b(const rank_ctx *rc, int way)
{
    const int bad = rc->who->world - 1;
    const int is_bad = rc->who->rank == bad;
    mlp_cfg cfg;
    small_cfg(&cfg, 1);
    mlp_layout L;
    ASSERT_EQ(mlp_layout_init(&L, &cfg), 0);
    float *p = malloc(L.n_floats * sizeof(float));
    ASSERT(p);
    ASSERT_EQ(mlp_init_params(&cfg, p, 0x5eedULL), 0);
    ddp_model m;
    ASSERT_EQ(ddp_model_init(&m, &cfg, 1, 1), 0);
    m.fail_capture = way == B_CAPTURE_SYNC && is_bad;
    /*
     * More scratch than the limit allows, even rounded up to the arena's
     * granularity (2 MiB); the step uses only the part it carves.
     */
    const size_t limit = (size_t)1 << 20;
    if (way == B_ARENA_LIMIT && is_bad)
        m.scratch.total_bytes = 8 * limit;
    cgr_runtime *rt = new_runtime_limit(rc, 1, way == B_ARENA_LIMIT && is_bad ? limit : 0);
    cgr_nccl_options no;
    ASSERT_OK(cgr_nccl_options_init(&no));
    no.timeout_ms = 20000;
    ASSERT_OK(cgr_runtime_attach_nccl(rt, rc->comm, &no));
    ASSERT_EQ(ddp_model_setup(&m, rt, p), 0);
    ddp_io io;
    cgr_step_desc d;
    ddp_step_desc(&m, "W-ddp-faulty", &io, &d);
    failing_warmups fw = {&m, 2};
    const int warmups_fail = way == B_WARMUP_FAILS && is_bad;
    if (warmups_fail) {
        d.fn = fail_warmups_step;
        d.user = &fw;
    }
    cgr_step *st = NULL;
    ASSERT_OK(cgr_step_create(rt, &d, &st));
    float x[512];
    int label = 0;
    uint64_t seed = ddp_seed(0xfa17u, rc->who->rank);
    for (int k = 0; k < 6; k++) {
        ddp_fill(&seed, &cfg, x, &label);
        const void *in[2] = {x, &label};
        uint64_t t = 0;
        cgr_run_action a = CGR_RUN_REPLAY;
        cgr_status s = cgr_step_run(st, NULL, in, &t);
        if (s == CGR_STATUS_OK)
            ASSERT_OK(cgr_step_run_action(st, t, &a));
        if (k < 2 && warmups_fail) {
            ASSERT_STATUS(s, CGR_STATUS_STEP_FAILED);
            continue;
        }
        if (k < 2 && s == CGR_STATUS_OK && a != CGR_RUN_WARMUP)
            TEST_FAIL_("rank %d (%s): run %d did %s, expected a warm-up", rc->who->rank,
                       b_way_name[way], k, cgr_run_action_name(a));
        if (k == 2) {
            /* The capture run (2 warm-ups by default). */
            if (s != CGR_STATUS_OK)
                TEST_FAIL_("rank %d: the capture run returned %s, expected it to run "
                           "eagerly (%s)",
                           rc->who->rank, cgr_status_name(s), cgr_last_error());
            ASSERT_EQ(a, CGR_RUN_EAGER);
            ASSERT_OK(cgr_step_wait(st, t));
            cgr_step_stats fs;
            ASSERT_OK(cgr_step_get_stats(st, &fs));
            ASSERT_U64_EQ(fs.capture_failures, 1);
            ASSERT_U64_EQ(fs.warmup_runs, warmups_fail ? 0 : 2); /* failed runs count nowhere */
            ASSERT_U64_EQ(fs.eager_runs, 1);
            const char *msg = fs.capture_error;
            RANK_LOG(rc->who, "capture run (%s): %s", b_way_name[way], msg);
            char names[32];
            snprintf(names, sizeof names, "failed on rank %d", bad);
            if (!strstr(msg, names))
                TEST_FAIL_("rank %d: the message does not name rank %d: %s", rc->who->rank, bad,
                           msg);
            if (is_bad && !strstr(msg, "this rank's failure"))
                TEST_FAIL_("rank %d: the message lacks its own reason: %s", bad, msg);
            if (is_bad && way == B_ARENA_LIMIT && !strstr(msg, "arena_limit"))
                TEST_FAIL_("rank %d: the message does not name arena_limit: %s", bad, msg);
            if (warmups_fail && !strstr(msg, "warm-ups failed"))
                TEST_FAIL_("rank %d: the message does not say its warm-ups failed: %s", bad, msg);
            rc->sh->saw_failure[way][rc->who->rank] = 1;
            continue;
        }
        ASSERT_OK(s);
        ASSERT_OK(cgr_step_wait(st, t));
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(st, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
    ASSERT_EQ(ss.captures, 0);
    ASSERT(cudaMemcpy(p, m.dev.params, m.n_floats * sizeof(float), cudaMemcpyDeviceToHost) ==
           cudaSuccess);
    rc->sh->hash_b[way][rc->who->rank] = ddp_hash(p, m.n_floats * sizeof(float));
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ddp_model_teardown(&m);
    free(p);
}

/* C: a step that uses the communicator but enqueues no collective; only rank 0 runs it. */
static cgr_status lonely_step(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_nccl_comm c;
    cgr_status s = cgr_ctx_nccl(ctx, &c);
    if (s != CGR_STATUS_OK)
        return s;
    float *out;
    cgr_stream st;
    if ((s = cgr_ctx_output(ctx, 0, (void **)&out)) || (s = cgr_ctx_stream(ctx, &st)))
        return s;
    return cudaMemsetAsync(out, 0, sizeof(float), st) == cudaSuccess ? CGR_STATUS_OK
                                                                      : CGR_STATUS_CUDA_ERROR;
}

/* A runtime with rc's communicator attached (timeout_ms 0: the default), from options o. */
static cgr_runtime *attached(const rank_ctx *rc, cgr_options *o, unsigned timeout_ms)
{
    o->device = rc->who->local_rank;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, o));
    cgr_nccl_options no;
    ASSERT_OK(cgr_nccl_options_init(&no));
    if (timeout_ms)
        no.timeout_ms = timeout_ms;
    ASSERT_OK(cgr_runtime_attach_nccl(rt, rc->comm, &no));
    return rt;
}

static cgr_runtime *attached_default(const rank_ctx *rc, unsigned timeout_ms)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    return attached(rc, &o, timeout_ms);
}

/* A step of one f32 scalar output running fn (lonely_step when NULL) on user. */
static cgr_step *small_step(cgr_runtime *rt, const char *name, int armable, cgr_step_fn fn,
                            void *user)
{
    cgr_tensor_desc out = {.name = "y", .dtype = CGR_DTYPE_F32, .rank = 0};
    cgr_step_desc d;
    ASSERT_OK(cgr_step_desc_init(&d));
    d.name = name;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = fn ? fn : lonely_step;
    d.user = user;
    d.armable = armable;
    cgr_step *st = NULL;
    ASSERT_OK(cgr_step_create(rt, &d, &st));
    return st;
}

/* n runs of st, each waited for. */
static void run_n(cgr_step *st, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t t = 0;
        ASSERT_OK(cgr_step_run(st, NULL, NULL, &t));
        ASSERT_OK(cgr_step_wait(st, t));
    }
}

static void part_c(const rank_ctx *rc)
{
    cgr_runtime *rt = attached_default(rc, 3000);
    if (rc->who->rank == 0) {
        cgr_step *st = small_step(rt, "lonely", 0, NULL, NULL);
        run_n(st, 2);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cgr_status s = cgr_step_run(st, NULL, NULL, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms =
            1e3 * (double)(t1.tv_sec - t0.tv_sec) + 1e-6 * (double)(t1.tv_nsec - t0.tv_nsec);
        RANK_LOG(rc->who, "agreement nobody joins: %s after %.0f ms: %s", cgr_status_name(s), ms,
                 cgr_last_error());
        if (s == CGR_STATUS_OK)
            TEST_FAIL_("%s", "a capture agreement without the peer succeeded");
        if (s != CGR_STATUS_TIMEOUT)
            TEST_FAIL_("the agreement nobody joins returned %s, expected CGR_STATUS_TIMEOUT",
                       cgr_status_name(s));
        if (ms > 20000.0)
            TEST_FAIL_("the agreement took %.0f ms to give up (timeout 3000 ms)", ms);
        /* The runtime fails fast from now on instead of waiting again. */
        s = cgr_step_run(st, NULL, NULL, NULL);
        ASSERT(s != CGR_STATUS_OK);
        rc->sh->c_done = 1;
        rc->sh->c_ms = ms;
    } else {
        /* Alive, attached, but never joining: rank 0 must time out, not hang. */
        sleep(6);
    }
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/*
 * An armable step cannot use the communicator: a released armed run still
 * runs once, here alone. Refused in its first run, before any collective.
 */
static void armable_refused(const rank_ctx *rc)
{
    cgr_runtime *rt = attached_default(rc, 0);
    cgr_step *st = small_step(rt, "armable", 1, NULL, NULL);
    /* The step returns cgr_ctx_nccl's status: the run fails as the step's. */
    ASSERT_STATUS(cgr_step_run(st, NULL, NULL, NULL), CGR_STATUS_STEP_FAILED);
    if (!strstr(cgr_last_error(), "armable"))
        TEST_FAIL_("rank %d: the refusal does not say why: %s", rc->who->rank, cgr_last_error());
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/*
 * A step that uses the communicator is not profiled: the window's eager
 * runs would run its collectives uncaptured on this rank alone. Its runs
 * replay as without a profile.
 */
static void profile_refused(const rank_ctx *rc)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.profile.runs = 2;
    o.profile.skip = 0;
    cgr_runtime *rt = attached(rc, &o, 0);
    cgr_step *st = small_step(rt, "profiled", 0, NULL, NULL);
    run_n(st, 8);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(st, &ss));
    ASSERT_EQ(ss.profile.state, CGR_PROFILE_FAILED);
    ASSERT_EQ(ss.profile.status, CGR_STATUS_NOT_SUPPORTED);
    if (!strstr(ss.profile.error, "NCCL"))
        TEST_FAIL_("rank %d: the profile's error does not say why: %s", rc->who->rank,
                   ss.profile.error);
    ASSERT_U64_EQ(ss.eager_runs, 0);
    ASSERT_U64_EQ(ss.replays, 6); /* the capture's run, the checked run and 4 more */
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

/*
 * A step with a host-function call whose argument changes every run, like
 * the plan NCCL passes its proxy before a collective over a network (which
 * one host does not need). A call into NCCL's library is NCCL's own: the
 * step replays its graph. The same call into the test's own function is a
 * frozen value: the shape runs eagerly.
 */
typedef struct host_calls {
    cudaHostFn_t fn;
    int box[2]; /* the argument alternates between these */
    int k;
} host_calls;

static void own_host_fn(void *p)
{
    *(int *)p = 1;
}

static cgr_status host_call_step(cgr_ctx *ctx, void *user)
{
    host_calls *h = user;
    cgr_stream st;
    float *out;
    cgr_status s;
    if ((s = cgr_ctx_output(ctx, 0, (void **)&out)) || (s = cgr_ctx_stream(ctx, &st)))
        return s;
    if (cudaLaunchHostFunc(st, h->fn, &h->box[h->k++ & 1]) != cudaSuccess ||
        cudaMemsetAsync(out, 0, sizeof(float), st) != cudaSuccess)
        return CGR_STATUS_CUDA_ERROR;
    return CGR_STATUS_OK;
}

static void nccl_host_node(const rank_ctx *rc, int in_nccl)
{
    cgr_runtime *rt = attached_default(rc, 0);
    /*
     * ncclGetVersion(int *) stands in for NCCL's callback: a function in
     * its library that is harmless to call with an int's address. Through
     * void (*)(void), the one cast that may change a function's type
     * without a warning; the call's result is dropped, as x86-64 and
     * AArch64 allow.
     */
    host_calls h = {in_nccl ? (cudaHostFn_t)(void (*)(void))ncclGetVersion : own_host_fn,
                    {0, 0}, 0};
    cgr_step *st =
        small_step(rt, in_nccl ? "nccl-host-call" : "own-host-call", 0, host_call_step, &h);
    run_n(st, 6);
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(st, &ss));
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    if (in_nccl) {
        if (ss.mode != CGR_MODE_GRAPH || ss.eager_runs != 0)
            TEST_FAIL_("rank %d: a host call into NCCL's library was taken for a frozen value "
                       "(%llu eager runs): %s", rc->who->rank,
                       (unsigned long long)ss.eager_runs, ss.capture_error);
    } else {
        ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
        ASSERT_U64_EQ(ss.eager_by_reason[CGR_EAGER_FROZEN_VALUE], 2); /* runs 4 and 5 */
        ASSERT(strstr(ss.capture_error, "host function") != NULL);
    }
    ASSERT_OK(cgr_runtime_destroy(&rt));
}

static int rank_main(const ddp_rank_info *who, const ncclUniqueId *id, void *user)
{
    alarm(240); /* SIGALRM's default action ends a hung rank; the parent then fails */
    rank_ctx rc = {who, NULL, user};
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < who->world)
        TEST_FAIL_("rank %d: %d GPUs", who->rank, n);
    ASSERT(cudaSetDevice(who->local_rank) == cudaSuccess);
    if (!mlp_device_ok()) {
        printf("SKIP: rank %d: the W-mlp training step needs compute capability 9.0\n",
               who->rank);
        return TEST_SKIP; /* main() passes the skip on */
    }
    ASSERT_EQ(cgr_has_nccl(), 1);
    ncclResult_t r = ncclCommInitRank(&rc.comm, who->world, *id, who->rank);
    if (r != ncclSuccess)
        TEST_FAIL_("rank %d: ncclCommInitRank: %s", who->rank, ncclGetErrorString(r));

    /* Refused without touching the peers. */
    cgr_runtime *rt = new_runtime(&rc, 1);
    ASSERT_STATUS(cgr_runtime_attach_nccl(rt, NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    cgr_nccl_options bad;
    ASSERT_OK(cgr_nccl_options_init(&bad));
    bad.timeout_ms = 0;
    ASSERT_STATUS(cgr_runtime_attach_nccl(rt, rc.comm, &bad), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_runtime_detach_nccl(rt), CGR_STATUS_WRONG_STATE);
    ASSERT_STATUS(cgr_runtime_nccl_rank(rt, NULL, NULL), CGR_STATUS_WRONG_STATE);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    armable_refused(&rc);
    profile_refused(&rc);
    nccl_host_node(&rc, 1);
    nccl_host_node(&rc, 0);

    part_a(&rc);
    for (int way = 0; way < B_WAYS; way++)
        part_b(&rc, way);
    if (who->world > 1)
        part_c(&rc);
    r = ncclCommDestroy(rc.comm);
    if (r != ncclSuccess)
        TEST_FAIL_("rank %d: ncclCommDestroy: %s", who->rank, ncclGetErrorString(r));
    RANK_LOG(who, "done");
    return 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    alarm(280);
    if (under_sanitizer(NULL))
        g_steps = 10; /* set before the ranks fork, so they inherit it */
    int gpus = ddp_probe_gpus();
    if (gpus < 1) {
        printf("SKIP: no usable GPU\n");
        return TEST_SKIP;
    }
    const int world = gpus < WORLD ? gpus : WORLD;
    if (world < WORLD)
        printf("one GPU: one rank; the part that needs a peer (an agreement it never joins) "
               "is left out\n");
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT(sh != MAP_FAILED);
    memset(sh, 0, sizeof *sh);
    int rc = ddp_launch_local(world, 260, rank_main, sh);
    if (rc == TEST_SKIP)
        return TEST_SKIP;
    if (rc != 0)
        TEST_FAIL_("a rank failed (status %d); its messages are above", rc);
    for (int bi = 0; bi < N_B; bi++) {
        for (int r = 1; r < world; r++)
            ASSERT_U64_EQ(sh->hash_a[bi][0], sh->hash_a[bi][r]);
        printf("B=%d: %s after %d graphed steps; vs single GPU %.3g\n", batches[bi],
               world > 1 ? "both ranks' parameters bitwise identical" : "one rank", g_steps,
               sh->rel_err[bi]);
    }
    for (int way = 0; way < B_WAYS; way++) {
        for (int r = 0; r < world; r++) {
            ASSERT(sh->saw_failure[way][r]);
            ASSERT_U64_EQ(sh->hash_b[way][0], sh->hash_b[way][r]);
        }
        printf("a capture failing on rank %d (%s) failed every rank's capture run; eager "
               "steps after it kept the ranks bitwise identical\n",
               world - 1, b_way_name[way]);
    }
    if (world > 1) {
        ASSERT(sh->c_done);
        printf("an agreement the peer never joined ended after %.0f ms (timeout 3000 ms)\n",
               sh->c_ms);
    }
    return 0;
}

#endif
