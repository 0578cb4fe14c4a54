/*
 * cgr-bench newshape: what a new shape of the W-mlp training step costs
 * with a dynamic batch, warm-up excluded (docs/benchmarks.md, "New shapes",
 * has the method and the figures).
 *
 * The step is declared once at its largest batch (bench/mlp/mlp_cgr.h) and
 * run on two pairs of buckets, one per code path of mlp_step_enqueue:
 * {4, 8} (the small-batch kernels: same topology, only kernel functions and
 * launch shapes differ) and {16, 32} (cuBLAS, whose kernel choice decides
 * whether the two share a topology). Figures come from cgr_step_get_stats
 * right after the run that captured, so warm-up runs are never in them:
 * (a) capture + instantiate on a 16-graph cache, a fresh step per
 *     repetition, after one "cold" priming repetition that also pays the
 *     runtime's one-off costs;
 * (b) capture + update in place on a one-graph cache, one step alternating
 *     between the buckets, failed updates counted with cgr's reason;
 * (c) the replayed step at each bucket;
 * (d) the frozen-value check (cgr_options.frozen_check), which captures a
 *     new graph's next run again and compares the two graphs, so it should
 *     cost about one capture per shape and nothing per replay: two
 *     runtimes, with and without it, taking turns at going first; a new
 *     shape's first runs are timed with cgr's action checked run by run
 *     (with the check on, the run after the capture is the check and the
 *     only one that counts a frozen check), then each bucket's replays, on
 *     against off, in interleaved rounds.
 * (a) and (b) also capture the same shapes into a raw CUDA graph by hand,
 * taking turns with cgr, so that cgr's figures can be read against what
 * capturing and instantiating the step costs without any runtime.
 *
 * Every run gets fresh inputs at a true batch below the bucket (padding
 * exercised), and every loss read back must be finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "bench.h"
#include "mlp/mlp.h"
#include "mlp/mlp_cgr.h"
#include "util.h"

#define NS_REPS 30       /* repetitions per figure (--quick: 20; at least 20) */
#define NS_MAX_REPS 64
#define NS_WARMUP_RUNS 2 /* cgr_options.warmup_runs: eager runs per new shape */
/* (d): warm-ups, the capture, the check run (or a replay), one more replay. */
#define NS_FROZEN_RUNS (NS_WARMUP_RUNS + 3)

typedef struct ns_model {
    mlp_cfg cfg;      /* batch = the step's largest bucket */
    mlp_bufs dev[2];  /* persistent state of each runtime alive at once */
    float *x;         /* host inputs, up to NS_MAX_BATCH rows */
    int *labels;
    bench_rng rng;
    long checked;     /* losses read back and found finite */
} ns_model;

#define NS_MAX_BATCH 32

typedef struct ns_suite {
    const bench_config *cfg;
    bench_results *res;
    newshape_result *r;
    int reps;
    int aborted; /* the device is lost: nothing more runs */
} ns_suite;

/* ---- the step ----------------------------------------------------------------------- */

typedef struct ns_step_user {
    const ns_model *m;
    const mlp_bufs *dev; /* the state on the step's runtime */
    mlp_cfg cfg;         /* m->cfg with batch = this step's largest bucket */
} ns_step_user;

static cgr_status ns_step_fn(cgr_ctx *ctx, void *user)
{
    const ns_step_user *u = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_cfg rc;
    mlp_bufs b;
    cgr_status st = mlp_cgr_bind_dyn(ctx, &u->cfg, u->dev, &rc, &b, &h, &s);
    if (st != CGR_STATUS_OK)
        return st;
    if (mlp_step_enqueue(&rc, &b, h, s, 1) != 0) {
        fprintf(stderr, "cgr-bench: newshape: %s\n", mlp_last_error());
        return CGR_STATUS_CUDA_ERROR;
    }
    return CGR_STATUS_OK;
}

static int ns_step_create(cgr_runtime *rt, ns_step_user *u, const int64_t *buckets,
                          cgr_step **out)
{
    mlp_cgr_dyn d;
    cgr_step_desc desc;
    u->cfg = u->m->cfg;
    u->cfg.batch = (int)buckets[1];
    if (mlp_cgr_dyn_init(&d, &u->cfg, buckets, 2) != 0) {
        bench_error("newshape: %s", mlp_last_error());
        return -1;
    }
    CGR_CK(cgr_step_desc_init(&desc));
    mlp_cgr_dyn_desc(&d, "W-mlp dyn", ns_step_fn, u, &desc);
    CGR_CK(cgr_step_create(rt, &desc, out));
    return 0;
}

/* A runtime holding the model's state in *dev; frozen_check as in cgr_options. */
static int ns_runtime(ns_model *m, const float *params0, int cache_entries, int frozen_check,
                      mlp_bufs *dev, cgr_runtime **rt)
{
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.warmup_runs = NS_WARMUP_RUNS;
    o.shape_cache_entries = cache_entries;
    o.frozen_check = frozen_check;
    /* The suite changes shape on purpose, far more often than the guard allows. */
    o.churn_shapes = 0;
    CGR_CK(cgr_runtime_create(rt, &o));
    if (mlp_cgr_state_create(*rt, &m->cfg, params0, dev) != 0) {
        bench_error("newshape: %s", mlp_last_error());
        cgr_runtime_destroy(rt);
        return -1;
    }
    return 0;
}

/* A true batch in lo..bucket (fresh each call), so padding is always in play. */
static int64_t ns_true_batch(ns_model *m, const newshape_bucket *b)
{
    float f;
    rng_fill(&m->rng, &f, 1); /* [-1, 1) */
    int64_t t = b->lo + (int64_t)((f + 1.0f) * 0.5f * (float)(b->bucket - b->lo + 1));
    return t > b->bucket ? b->bucket : t;
}

/* Counts one checked loss; CHECK_WRONG, with `who` in the message, when it is not finite. */
static int ns_check_loss(ns_model *m, float loss, const char *who)
{
    if (!isfinite(loss)) {
        bench_error("newshape: %s: W-mlp loss %g", who, (double)loss);
        return CHECK_WRONG;
    }
    m->checked++;
    return 0;
}

/* The loss of a waited run, which must be finite. */
static int ns_loss_ok(ns_model *m, cgr_step *step, uint64_t ticket, int64_t T,
                      cgr_run_action action)
{
    float loss = NAN;
    CGR_CK(cgr_step_output(step, ticket, 0, &loss, sizeof loss, NULL));
    char who[64];
    snprintf(who, sizeof who, "true batch %lld, %s run", (long long)T,
             cgr_run_action_name(action));
    return ns_check_loss(m, loss, who);
}

/* One run at true batch T with fresh inputs; *action what cgr did; the loss must be finite. */
static int ns_run(ns_model *m, cgr_step *step, int64_t T, cgr_run_action *action,
                  double *wall_us)
{
    mlp_fill_rows(&m->rng, &m->cfg, T, m->x, m->labels);
    const void *inputs[2] = {m->x, m->labels};
    uint64_t ticket = 0;
    const double t0 = now_us();
    CGR_CK(cgr_step_run(step, &T, inputs, &ticket));
    CGR_CK(cgr_step_wait(step, ticket));
    if (wall_us)
        *wall_us = now_us() - t0;
    CGR_CK(cgr_step_run_action(step, ticket, action));
    return ns_loss_ok(m, step, ticket, T, *action) == 0 ? 0 : -1;
}

/*
 * Brings bucket b of a step through its warm-ups to its capture run and
 * returns that run's action and shape stats (read right after it, so its
 * last_capture_us / last_make_us are this capture's). Fails when cgr
 * replays or runs eagerly where a warm-up or a capture is due.
 */
static int ns_capture(ns_model *m, cgr_step *step, const newshape_bucket *b,
                      cgr_run_action *action, cgr_step_stats *ss)
{
    memset(ss, 0, sizeof *ss);
    for (int i = 0; i <= NS_WARMUP_RUNS + 1; i++) {
        TRY(ns_run(m, step, ns_true_batch(m, b), action, NULL));
        if (*action == CGR_RUN_WARMUP)
            continue;
        CGR_CK(cgr_step_get_stats(step, ss));
        if (*action == CGR_RUN_CAPTURE || *action == CGR_RUN_UPDATE)
            return 0;
        break;
    }
    bench_error("newshape: bucket %lld: cgr did '%s' where a warm-up or a capture was due "
                "(eager runs by reason: churn %llu, capture failed %llu, too large %llu)",
                (long long)b->bucket, cgr_run_action_name(*action),
                (unsigned long long)ss->eager_by_reason[CGR_EAGER_CHURN],
                (unsigned long long)ss->eager_by_reason[CGR_EAGER_CAPTURE_FAILED],
                (unsigned long long)ss->eager_by_reason[CGR_EAGER_TOO_LARGE]);
    return -1;
}

/* ---- the same shapes captured by hand: a raw CUDA graph ---------------------------- */

/*
 * The W-mlp step of a bucket captured into a plain CUDA graph on a stream
 * of its own, with the same cuBLAS workspace size as cgr's handle and the
 * same eager warm-ups before each capture. Inputs are copied outside the
 * graph and outside the clocks, so the graph holds the step's own nodes
 * and nothing else: against it, cgr's figures show what cgr adds to a new
 * shape (its staging nodes, the step context, its tables), and what is the
 * step's own capture cost, which no runtime can take away.
 */
#define NS_RAW_WORKSPACE ((size_t)32 << 20) /* what cgr gives its own cuBLAS handle */

typedef struct ns_raw {
    cudaStream_t s;
    cublasHandle_t h;
    void *ws, *scratch;
    float *x, *loss;
    int *labels;
    int64_t *true_batch;
    mlp_bufs b;          /* the persistent state, on the phase's runtime */
    cudaGraphExec_t exec; /* the executable of the latest shape */
} ns_raw;

static void ns_raw_free(ns_raw *r)
{
    if (r->exec)
        (void)cudaGraphExecDestroy(r->exec);
    if (r->h)
        (void)cublasDestroy(r->h);
    void *bufs[] = {r->ws, r->scratch, r->x, r->loss, r->labels, r->true_batch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        (void)cudaFree(bufs[i]);
    if (r->s)
        (void)cudaStreamDestroy(r->s);
    (void)mlp_cgr_state_release(&r->b);
    memset(r, 0, sizeof *r);
}

static int ns_raw_init(ns_raw *r, const ns_model *m, cgr_runtime *rt, const float *params0)
{
    mlp_scratch sz;
    memset(r, 0, sizeof *r);
    if (mlp_cgr_state_create(rt, &m->cfg, params0, &r->b) != 0 ||
        mlp_scratch_sizes(&m->cfg, &sz) != 0) {
        bench_error("newshape: raw graph state: %s", mlp_last_error());
        return -1;
    }
    const size_t xb = (size_t)NS_MAX_BATCH * m->cfg.in_dim * sizeof(float);
    CK_GOTO(cudaStreamCreate(&r->s), fail);
    CK_GOTO(cudaMalloc(&r->ws, NS_RAW_WORKSPACE), fail);
    CK_GOTO(cudaMalloc(&r->scratch, sz.total_bytes), fail);
    CK_GOTO(cudaMalloc((void **)&r->x, xb), fail);
    CK_GOTO(cudaMalloc((void **)&r->labels, NS_MAX_BATCH * sizeof(int)), fail);
    CK_GOTO(cudaMalloc((void **)&r->loss, sizeof(float)), fail);
    CK_GOTO(cudaMalloc((void **)&r->true_batch, sizeof(int64_t)), fail);
    if (cublasCreate(&r->h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(r->h, r->s) != CUBLAS_STATUS_SUCCESS ||
        cublasSetWorkspace(r->h, r->ws, NS_RAW_WORKSPACE) != CUBLAS_STATUS_SUCCESS) {
        bench_error("newshape: raw graph: cuBLAS handle setup failed");
        goto fail;
    }
    r->b.x = r->x;
    r->b.labels = r->labels;
    r->b.loss = r->loss;
    r->b.true_batch = r->true_batch;
    return 0;
fail:
    ns_raw_free(r);
    return -1;
}

/* Fresh inputs at a true batch of bucket b, padded with zeros as cgr pads them. */
static int ns_raw_inputs(ns_raw *r, ns_model *m, const newshape_bucket *b)
{
    int64_t T = ns_true_batch(m, b);
    mlp_fill_rows(&m->rng, &m->cfg, T, m->x, m->labels);
    const size_t row = (size_t)m->cfg.in_dim;
    memset(m->x + T * row, 0, (size_t)(b->bucket - T) * row * sizeof(float));
    memset(m->labels + T, 0, (size_t)(b->bucket - T) * sizeof(int));
    CK(cudaMemcpyAsync(r->x, m->x, (size_t)b->bucket * row * sizeof(float),
                       cudaMemcpyHostToDevice, r->s));
    CK(cudaMemcpyAsync(r->labels, m->labels, (size_t)b->bucket * sizeof(int),
                       cudaMemcpyHostToDevice, r->s));
    CK(cudaMemcpyAsync(r->true_batch, &T, sizeof T, cudaMemcpyHostToDevice, r->s));
    CK(cudaStreamSynchronize(r->s)); /* T and the host rows are reused at once */
    return 0;
}

/* The loss of the run just finished, which must be finite. */
static int ns_raw_loss_ok(ns_raw *r, ns_model *m)
{
    float loss = NAN;
    CK(cudaMemcpy(&loss, r->loss, sizeof loss, cudaMemcpyDeviceToHost));
    return ns_check_loss(m, loss, "raw graph");
}

/*
 * A new shape of bucket b: the warm-ups, then the timed capture into *g
 * (*capture_us), then the timed making of r->exec from it, by update in
 * place when `update` and an executable exists, and its launch (*make_us,
 * what cgr's last_make_us covers). *updated: whether the update took.
 */
static int ns_raw_shape(ns_raw *r, ns_model *m, const newshape_bucket *b, int update,
                        double *capture_us, double *make_us, int *updated)
{
    mlp_cfg rc = m->cfg;
    rc.batch = (int)b->bucket;
    if (mlp_scratch_carve(&rc, r->scratch, &r->b) != 0) {
        bench_error("newshape: raw graph: %s", mlp_last_error());
        return -1;
    }
    for (int i = 0; i < NS_WARMUP_RUNS; i++) {
        TRY(ns_raw_inputs(r, m, b));
        if (mlp_step_enqueue(&rc, &r->b, r->h, r->s, 1) != 0) {
            bench_error("newshape: raw graph warm-up: %s", mlp_last_error());
            return -1;
        }
        CK(cudaStreamSynchronize(r->s));
        TRY(ns_raw_loss_ok(r, m));
    }
    TRY(ns_raw_inputs(r, m, b));
    cudaGraph_t g = NULL;
    double t0 = now_us();
    TRY(capture_begin(r->s));
    const int body = mlp_step_enqueue(&rc, &r->b, r->h, r->s, 1);
    if (capture_end(r->s, body == 0, &g) != 0) {
        if (body != 0)
            bench_error("newshape: raw graph capture: %s", mlp_last_error());
        return -1;
    }
    double t1 = now_us();
    *capture_us = t1 - t0;
    *updated = 0;
    cudaError_t e = cudaSuccess;
    if (update && r->exec) {
        cudaGraphExecUpdateResultInfo info;
        e = cudaGraphExecUpdate(r->exec, g, &info);
        *updated = e == cudaSuccess;
        (void)cudaGetLastError();
    }
    /* The executable this one replaces goes after the clock stops, as cgr's evicted ones do. */
    cudaGraphExec_t old = NULL;
    if (!*updated) {
        cudaGraphExec_t x = NULL;
        e = cudaGraphInstantiate(&x, g, 0);
        if (e == cudaSuccess) {
            old = r->exec;
            r->exec = x;
        }
    }
    if (e == cudaSuccess)
        e = cudaGraphLaunch(r->exec, r->s);
    *make_us = now_us() - t1;
    if (old)
        (void)cudaGraphExecDestroy(old);
    (void)cudaGraphDestroy(g);
    CK(e);
    CK(cudaStreamSynchronize(r->s));
    return ns_raw_loss_ok(r, m);
}

/* ---- (a) capture + instantiate, then (c) the step at each bucket -------------------- */

/* Both buckets of p as new raw-graph shapes, into repetition rep's slots (none when rep < 0). */
static int ns_raw_instantiate(ns_raw *r, ns_model *m, newshape_pair *p, int rep,
                              double cap[2][NS_MAX_REPS], double make[2][NS_MAX_REPS])
{
    for (int k = 0; k < 2; k++) {
        double c, mk;
        int updated;
        TRY(ns_raw_shape(r, m, &p->b[k], 0, &c, &mk, &updated));
        if (rep >= 0) {
            cap[k][rep] = c;
            make[k][rep] = mk;
        }
    }
    return 0;
}

/* Statistics of a[], b[] and of their sums (a and b end up sorted, so the sums go first). */
static void ns_stats3(double *a, double *b, int n, bench_stats *sa, bench_stats *sb,
                      bench_stats *sum)
{
    double t[NS_MAX_REPS];
    for (int i = 0; i < n; i++)
        t[i] = a[i] + b[i];
    stats_compute(a, n, sa);
    stats_compute(b, n, sb);
    stats_compute(t, n, sum);
}

static int ns_instantiate(ns_suite *S, ns_model *m, cgr_runtime *rt, ns_raw *raw,
                          newshape_pair *p)
{
    const int64_t buckets[2] = {p->b[0].bucket, p->b[1].bucket};
    double cap[2][NS_MAX_REPS], make[2][NS_MAX_REPS];
    double rcap[2][NS_MAX_REPS], rmake[2][NS_MAX_REPS];
    ns_step_user u = {.m = m, .dev = &m->dev[0]};
    cgr_step *step = NULL;
    for (int rep = -1; rep < S->reps; rep++) {
        /* cgr and the raw graph take turns at going first. */
        if ((rep & 1) == 0)
            TRY_GOTO(ns_raw_instantiate(raw, m, p, rep, rcap, rmake), fail);
        /* A fresh step: its cache is empty, so each bucket is a new shape. */
        CGR_CK_GOTO(cgr_step_destroy(&step), fail);
        TRY(ns_step_create(rt, &u, buckets, &step));
        if (rep & 1)
            TRY_GOTO(ns_raw_instantiate(raw, m, p, rep, rcap, rmake), fail);
        for (int k = 0; k < 2; k++) {
            cgr_run_action a;
            cgr_step_stats ss;
            TRY_GOTO(ns_capture(m, step, &p->b[k], &a, &ss), fail);
            if (a != CGR_RUN_CAPTURE) {
                bench_error("newshape: %s path bucket %lld: '%s' with 16 cache entries free; "
                            "expected an instantiation",
                            p->path, (long long)buckets[k], cgr_run_action_name(a));
                goto fail;
            }
            if (rep < 0) {
                p->b[k].cold_capture_us = ss.last_capture_us;
                p->b[k].cold_make_us = ss.last_make_us;
                continue;
            }
            cap[k][rep] = ss.last_capture_us;
            make[k][rep] = ss.last_make_us;
            p->b[k].nodes = ss.graph_nodes;
            p->b[k].kernel_nodes = ss.graph_kernel_nodes;
        }
    }
    for (int k = 0; k < 2; k++) {
        ns_stats3(cap[k], make[k], S->reps, &p->b[k].capture, &p->b[k].instantiate,
                  &p->b[k].total);
        ns_stats3(rcap[k], rmake[k], S->reps, &p->b[k].raw_capture, &p->b[k].raw_instantiate,
                  &p->b[k].raw_total);
    }
    p->ran_instantiate = 1;

    /* (c) Both buckets are cached in the last step: time their replays. */
    const int steps = S->cfg->steps, warm = S->cfg->warmup;
    double *wall = malloc((size_t)steps * sizeof *wall);
    if (!wall) {
        bench_error("newshape: out of host memory");
        goto fail;
    }
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < warm + steps; i++) {
            cgr_run_action a;
            double us = 0.0;
            if (ns_run(m, step, ns_true_batch(m, &p->b[k]), &a, &us) != 0) {
                free(wall);
                goto fail;
            }
            if (a != CGR_RUN_REPLAY) {
                bench_error("newshape: %s path bucket %lld: timed run %d was '%s', not a replay",
                            p->path, (long long)buckets[k], i, cgr_run_action_name(a));
                free(wall);
                goto fail;
            }
            if (i >= warm)
                wall[i - warm] = us;
        }
        stats_compute(wall, steps, &p->b[k].step);
    }
    free(wall);
    p->ran_step = 1;
    CGR_CK(cgr_step_destroy(&step));
    return 0;
fail:
    cgr_step_destroy(&step);
    return -1;
}

/* ---- (b) capture + update in place ---------------------------------------------------- */

static int ns_update(ns_suite *S, ns_model *m, cgr_runtime *rt, ns_raw *raw, newshape_pair *p)
{
    const int64_t buckets[2] = {p->b[0].bucket, p->b[1].bucket};
    double cap[NS_MAX_REPS], upd[NS_MAX_REPS], rcap[NS_MAX_REPS], rupd[NS_MAX_REPS];
    int n = 0, nr = 0;
    ns_step_user u = {.m = m, .dev = &m->dev[0]};
    cgr_step *step = NULL;
    cgr_run_action a;
    cgr_step_stats ss;
    double c, mk;
    int updated;
    TRY(ns_step_create(rt, &u, buckets, &step));
    /* The first bucket fills the one-graph cache (an instantiation, not counted); the raw
     * graph's first executable likewise. */
    TRY_GOTO(ns_capture(m, step, &p->b[0], &a, &ss), fail);
    TRY_GOTO(ns_raw_shape(raw, m, &p->b[0], 0, &c, &mk, &updated), fail);
    for (int rep = 0; rep < S->reps; rep++) {
        const int k = (rep + 1) % 2;
        const uint64_t failures_before = ss.update_failures;
        /* cgr and the raw graph take turns at going first. */
        for (int turn = 0; turn < 2; turn++) {
            if (turn == (rep & 1)) {
                TRY_GOTO(ns_raw_shape(raw, m, &p->b[k], 1, &c, &mk, &updated), fail);
                if (updated) {
                    rcap[nr] = c;
                    rupd[nr++] = mk;
                }
            } else {
                TRY_GOTO(ns_capture(m, step, &p->b[k], &a, &ss), fail);
            }
        }
        p->attempts++;
        if (a == CGR_RUN_UPDATE) {
            cap[n] = ss.last_capture_us;
            upd[n] = ss.last_make_us;
            n++;
        } else if (ss.update_failures == failures_before) {
            /* Instantiated without trying: the executable was not offered. */
            bench_error("newshape: %s path bucket %lld: instantiated with a one-graph cache "
                        "full, and no update was tried (shape stats: %llu evictions)",
                        p->path, (long long)buckets[k], (unsigned long long)ss.evictions);
            goto fail;
        }
    }
    p->updates = n;
    p->failures = (int)ss.update_failures;
    memcpy(p->by_reason, ss.update_failures_by_reason, sizeof p->by_reason);
    snprintf(p->last_update_error, sizeof p->last_update_error, "%s", ss.last_update_error);
    ns_stats3(cap, upd, n, &p->ucapture, &p->update, &p->utotal);
    p->raw_updates = nr;
    ns_stats3(rcap, rupd, nr, &p->raw_ucapture, &p->raw_update, &p->raw_utotal);
    p->ran_update = 1;
    CGR_CK(cgr_step_destroy(&step));
    return 0;
fail:
    cgr_step_destroy(&step);
    return -1;
}

/* ---- (d) the frozen-value check: once per new shape, and per replay ------------------- */

/*
 * One new shape of bucket b on a fresh step of each runtime (rt[0] with the
 * check, rt[1] without), `first` going first: the summed wall of its first
 * NS_FROZEN_RUNS runs into total[], that of the run after the capture into
 * after[], the capture's last_capture_us into capture[]. What cgr did is
 * checked run by run, frozen_checks included; checks[] and graphs[] add up
 * each step's frozen_checks and captures.
 */
static int ns_frozen_shape(ns_model *m, cgr_runtime *const rt[2], const int64_t buckets[2],
                           const newshape_bucket *b, int first, double total[2], double after[2],
                           double capture[2], uint64_t checks[2], uint64_t graphs[2])
{
    for (int j = 0; j < 2; j++) {
        const int side = (first + j) % 2;
        ns_step_user u = {.m = m, .dev = &m->dev[side]};
        cgr_step *step = NULL;
        cgr_step_stats ss;
        TRY(ns_step_create(rt[side], &u, buckets, &step));
        CGR_CK_GOTO(cgr_step_get_stats(step, &ss), fail);
        total[side] = 0.0;
        for (int i = 0; i < NS_FROZEN_RUNS; i++) {
            cgr_run_action a;
            double us = 0.0;
            const uint64_t checks_before = ss.frozen_checks;
            TRY_GOTO(ns_run(m, step, ns_true_batch(m, b), &a, &us), fail);
            CGR_CK_GOTO(cgr_step_get_stats(step, &ss), fail);
            const cgr_run_action want = i < NS_WARMUP_RUNS    ? CGR_RUN_WARMUP
                                        : i == NS_WARMUP_RUNS ? CGR_RUN_CAPTURE
                                                              : CGR_RUN_REPLAY;
            /* One check per new graph, at the run after its capture, and only with it on. */
            const uint64_t want_checks = side == 0 && i == NS_WARMUP_RUNS + 1;
            if (a != want || ss.frozen_checks - checks_before != want_checks) {
                bench_error("newshape: frozen-value check %s, bucket %lld, run %d of a new "
                            "shape: '%s' with %llu frozen-value check(s); expected '%s' with "
                            "%llu",
                            side ? "off" : "on", (long long)b->bucket, i + 1,
                            cgr_run_action_name(a),
                            (unsigned long long)(ss.frozen_checks - checks_before),
                            cgr_run_action_name(want), (unsigned long long)want_checks);
                goto fail;
            }
            total[side] += us;
            if (i == NS_WARMUP_RUNS)
                capture[side] = ss.last_capture_us;
            else if (i == NS_WARMUP_RUNS + 1)
                after[side] = us;
        }
        checks[side] += ss.frozen_checks;
        graphs[side] += ss.captures;
        CGR_CK(cgr_step_destroy(&step));
        continue;
    fail:
        cgr_step_destroy(&step);
        return -1;
    }
    return 0;
}

/* New shapes of both buckets of pair p, check on and off, over the repetitions. */
static int ns_frozen_shapes(ns_suite *S, ns_model *m, cgr_runtime *const rt[2],
                            newshape_pair *p)
{
    const int64_t buckets[2] = {p->b[0].bucket, p->b[1].bucket};
    double tot[2][2][NS_MAX_REPS], aft[2][2][NS_MAX_REPS], add[2][NS_MAX_REPS],
        cap[2][NS_MAX_REPS];
    /* One priming repetition: the first shapes on a runtime also pay its one-off costs. */
    for (int rep = -1; rep < S->reps; rep++)
        for (int k = 0; k < 2; k++) {
            double total[2], after[2], capture[2];
            TRY(ns_frozen_shape(m, rt, buckets, &p->b[k], (rep + 1 + k) % 2, total, after,
                                capture, S->r->frozen_checks, S->r->new_graphs));
            if (rep < 0)
                continue;
            for (int side = 0; side < 2; side++) {
                tot[k][side][rep] = total[side];
                aft[k][side][rep] = after[side];
            }
            add[k][rep] = total[0] - total[1];
            cap[k][rep] = capture[0];
        }
    for (int k = 0; k < 2; k++) {
        newshape_frozen *f = &p->b[k].frozen;
        stats_compute(tot[k][0], S->reps, &f->first_on);
        stats_compute(tot[k][1], S->reps, &f->first_off);
        stats_compute(add[k], S->reps, &f->added);
        stats_compute(aft[k][0], S->reps, &f->check_run);
        stats_compute(aft[k][1], S->reps, &f->same_run_off);
        stats_compute(cap[k], S->reps, &f->capture);
    }
    return 0;
}

/*
 * A replayed step of one bucket on the runtime with or without the check,
 * as a mode of run_group: the inputs written into the acquired slot outside
 * the clocks, cgr_step_launch timed (host CPU) and its wait (wall).
 */
typedef struct ns_replay {
    bench_slot run; /* first: the fast path's step ops take the mode's state as theirs */
    ns_model *m;
    cgr_runtime *rt;
    const newshape_bucket *b;
    int64_t buckets[2];
    int check;  /* the runtime's frozen_check */
    int warmup; /* steps before the timed ones */
    ns_step_user u;
    int64_t T;
} ns_replay;

static int nr_setup(void *self)
{
    ns_replay *r = self;
    return ns_step_create(r->rt, &r->u, r->buckets, &r->run.step);
}

static int nr_prepare(void *self, long k)
{
    ns_replay *r = self;
    (void)k;
    r->T = ns_true_batch(r->m, r->b);
    CGR_CK(cgr_step_acquire(r->run.step, &r->T, 0, &r->run.slot));
    mlp_fill_rows(&r->m->rng, &r->m->cfg, r->T, r->run.slot.inputs[0], r->run.slot.inputs[1]);
    return 0;
}

static int nr_check(void *self, long k)
{
    ns_replay *r = self;
    cgr_run_action a;
    CGR_CK(cgr_step_run_action(r->run.step, r->run.slot.ticket, &a));
    if (k >= r->warmup && a != CGR_RUN_REPLAY) {
        bench_error("newshape: bucket %lld, frozen-value check %s: timed run %ld was '%s', not "
                    "a replay",
                    (long long)r->b->bucket, r->check ? "on" : "off", k - r->warmup,
                    cgr_run_action_name(a));
        return -1;
    }
    return ns_loss_ok(r->m, r->run.step, r->run.slot.ticket, r->T, a);
}

/* One capture and, with the check on, one frozen-value check: the warm-up's, none since. */
static int nr_counts(void *self)
{
    ns_replay *r = self;
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(r->run.step, &s));
    if (s.mode != CGR_MODE_GRAPH || s.captures != 1 || s.frozen_checks != (uint64_t)r->check) {
        bench_error("newshape: bucket %lld, frozen-value check %s: %llu capture(s), %llu "
                    "frozen-value check(s), mode %d; expected 1, %d, graph: %s",
                    (long long)r->b->bucket, r->check ? "on" : "off",
                    (unsigned long long)s.captures, (unsigned long long)s.frozen_checks,
                    (int)s.mode, r->check, s.capture_error);
        return -1;
    }
    return 0;
}

static int nr_finish(void *self, mode_result *res)
{
    (void)res;
    return nr_counts(self);
}

static void nr_teardown(void *self)
{
    ns_replay *r = self;
    bench_cgr_failed(cgr_step_destroy(&r->run.step), "cgr_step_destroy", __FILE__, __LINE__);
}

static void ns_frozen_replays(ns_suite *S, ns_model *m, cgr_runtime *const rt[2],
                              newshape_pair *p)
{
    for (int k = 0; k < 2; k++) {
        newshape_bucket *b = &p->b[k];
        ns_replay nr[2];
        bench_mode bm[2];
        for (int side = 0; side < 2; side++) {
            nr[side] = (ns_replay){.m = m, .rt = rt[side], .b = b,
                                   .buckets = {p->b[0].bucket, p->b[1].bucket},
                                   .check = side == 0, .warmup = S->cfg->warmup,
                                   .u = {.m = m, .dev = &m->dev[side]}};
            bm[side] = (bench_mode){&b->frozen.replay[side],
                                    {nr_prepare, bench_slot_submit, bench_slot_wait, nr_check,
                                     nr_counts},
                                    &nr[side], nr_setup, nr_finish, nr_teardown, NULL};
        }
        char group[64];
        snprintf(group, sizeof group, "newshape frozen check, bucket %lld", (long long)b->bucket);
        run_group(S->res, group, bm, 2, mode_budget_s(S->cfg, 2 * 2.0));
    }
    p->ran_frozen = 1;
}

/* (d) for every pair, on two runtimes alive at once: [0] with the check, [1] without. */
static void ns_frozen(ns_suite *S, ns_model *m, const float *params0)
{
    cgr_runtime *rt[2] = {NULL, NULL};
    int made = 0;
    watchdog_arm("newshape: frozen-value check, new shapes", mode_budget_s(S->cfg, 10.0));
    while (made < 2 && ns_runtime(m, params0, 16, made == 0, &m->dev[made], &rt[made]) == 0)
        made++;
    int ok = made == 2;
    for (int i = 0; i < NEWSHAPE_PAIRS && ok && !S->aborted; i++) {
        bench_clear_error();
        if (ns_frozen_shapes(S, m, rt, &S->r->pair[i]) != 0) {
            fprintf(stderr, "cgr-bench: newshape: frozen-value check, %s path failed: %s\n",
                    S->r->pair[i].path, bench_last_error());
            ok = 0;
            S->aborted = bench_device_recover() != 0;
        }
    }
    watchdog_disarm();
    /* run_group arms the watchdog for each group itself. */
    for (int i = 0; i < NEWSHAPE_PAIRS && ok && !S->aborted; i++)
        ns_frozen_replays(S, m, rt, &S->r->pair[i]);
    S->r->failed |= !ok;
    for (int j = 0; j < made; j++) {
        if (BENCH_RUNTIME_DESTROY(&rt[j]))
            S->r->failed = 1;
        if (mlp_cgr_state_release(&m->dev[j]) != 0) {
            bench_error("newshape: %s", mlp_last_error());
            S->r->failed = 1;
        }
    }
    said_check *c = said_add(S->res, "frozen_checks_per_graph",
                             "frozen-value check: one per new graph, none when off");
    const uint64_t *fc = S->r->frozen_checks, *ng = S->r->new_graphs;
    c->ok = ok && ng[0] > 0 && fc[0] == ng[0] && fc[1] == 0;
    snprintf(c->message, sizeof c->message,
             "check on: %llu frozen-value checks for %llu new graphs; off: %llu for %llu",
             (unsigned long long)fc[0], (unsigned long long)ng[0], (unsigned long long)fc[1],
             (unsigned long long)ng[1]);
}

/* ---- the suite ------------------------------------------------------------------------ */

int newshape_suite(const bench_config *cfg, bench_results *res)
{
    static ns_suite S;       /* large: kept off the stack */
    static newshape_result R;
    if (!mlp_device_ok()) {
        fprintf(stderr, "cgr-bench: newshape skipped: the W-mlp training step needs compute "
                        "capability 9.0 (thread block clusters)\n");
        return 0;
    }
    memset(&S, 0, sizeof S);
    memset(&R, 0, sizeof R);
    S.cfg = cfg;
    S.res = res;
    S.r = &R;
    S.reps = cfg->quick ? 20 : NS_REPS;
    res->newshape = &R;
    R.reps = S.reps;
    R.warmup_runs = NS_WARMUP_RUNS;
    R.steps = cfg->steps;
    R.frozen_runs = NS_FROZEN_RUNS;
    static const struct {
        const char *path;
        int64_t lo0, b0, lo1, b1;
    } pairs[NEWSHAPE_PAIRS] = {{"small-batch", 3, 4, 5, 8}, {"cuBLAS", 9, 16, 17, 32}};
    for (int i = 0; i < NEWSHAPE_PAIRS; i++) {
        newshape_pair *p = &R.pair[i];
        p->path = pairs[i].path;
        p->b[0].bucket = pairs[i].b0;
        p->b[0].lo = pairs[i].lo0;
        p->b[1].bucket = pairs[i].b1;
        p->b[1].lo = pairs[i].lo1;
        /* Figures that are never measured stay NaN (null in the JSON). */
        bench_stats *ps[] = {&p->ucapture,     &p->update,     &p->utotal,
                             &p->raw_ucapture, &p->raw_update, &p->raw_utotal};
        for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++)
            stats_compute(NULL, 0, ps[j]);
        for (int k = 0; k < 2; k++) {
            newshape_bucket *b = &p->b[k];
            newshape_frozen *f = &b->frozen;
            bench_stats *bs[] = {&b->capture,   &b->instantiate, &b->total,     &b->step,
                                 &b->raw_capture, &b->raw_instantiate, &b->raw_total,
                                 &f->first_on,  &f->first_off,   &f->added,     &f->check_run,
                                 &f->same_run_off, &f->capture};
            for (size_t j = 0; j < sizeof bs / sizeof bs[0]; j++)
                stats_compute(NULL, 0, bs[j]);
            b->cold_capture_us = b->cold_make_us = NAN;
            mode_result_init(&f->replay[0], "check_on");
            mode_result_init(&f->replay[1], "check_off");
        }
    }

    ns_model m;
    memset(&m, 0, sizeof m);
    mlp_cfg_default(&m.cfg, NS_MAX_BATCH);
    rng_seed(&m.rng, 0x6e657773ULL);
    mlp_layout lay;
    float *params0 = NULL;
    cgr_runtime *rt = NULL;
    m.x = malloc((size_t)NS_MAX_BATCH * m.cfg.in_dim * sizeof(float));
    m.labels = malloc(NS_MAX_BATCH * sizeof(int));
    if (mlp_layout_init(&lay, &m.cfg) != 0 || !m.x || !m.labels ||
        !(params0 = malloc(lay.n_floats * sizeof(float))) ||
        mlp_init_params(&m.cfg, params0, 0x5eedULL) != 0) {
        bench_error("newshape setup: %s", m.x && m.labels && params0 ? mlp_last_error()
                                                                    : "out of host memory");
        R.failed = 1;
        goto out;
    }

    /*
     * Phase 0, (a) and (c): 16 graphs per step, so every bucket instantiates.
     * Phase 1, (b): one graph per step, so every change of bucket offers the
     * cached executable for an update in place. Each phase has its own
     * runtime (the cache size is a runtime option) and its own copy of the
     * model's state, uploaded from the same initial parameters; (d) has two.
     */
    for (int phase = 0; phase < 2 && !S.aborted; phase++) {
        watchdog_arm(phase ? "newshape: capture + update" : "newshape: capture + instantiate",
                     mode_budget_s(cfg, 10.0));
        ns_raw raw;
        if (ns_runtime(&m, params0, phase ? 1 : 16, 1, &m.dev[0], &rt) != 0) {
            R.failed = 1;
            watchdog_disarm();
            break;
        }
        if (ns_raw_init(&raw, &m, rt, params0) != 0) {
            R.failed = 1;
            S.aborted = bench_device_recover() != 0;
        }
        for (int i = 0; i < NEWSHAPE_PAIRS && !S.aborted && raw.s; i++) {
            bench_clear_error();
            const int r = phase ? ns_update(&S, &m, rt, &raw, &R.pair[i])
                                : ns_instantiate(&S, &m, rt, &raw, &R.pair[i]);
            if (r != 0) {
                R.failed = 1;
                fprintf(stderr, "cgr-bench: newshape: %s path failed: %s\n", R.pair[i].path,
                        bench_last_error());
                if (bench_device_recover() != 0)
                    S.aborted = 1;
            }
        }
        ns_raw_free(&raw); /* its state lives on rt */
        if (BENCH_RUNTIME_DESTROY(&rt))
            R.failed = 1;
        if (mlp_cgr_state_release(&m.dev[0]) != 0) {
            bench_error("newshape: %s", mlp_last_error());
            R.failed = 1;
        }
        watchdog_disarm();
    }
    if (!S.aborted)
        ns_frozen(&S, &m, params0);
    R.failed |= S.aborted;
    res->aborted |= S.aborted;
out:
    R.losses_checked = m.checked;
    free(params0);
    free(m.x);
    free(m.labels);
    return R.failed ? -1 : 0;
}
