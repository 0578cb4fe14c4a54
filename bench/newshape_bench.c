/*
 * cgr-bench newshape: the cost of a new shape of the W-mlp training step
 * with a dynamic batch: capture + instantiate, and capture + update in
 * place, warm-up excluded.
 *
 * The step is W-mlp training (forward, masked loss, backward, AdamW; PDL on,
 * weight gradients on the side branch at small batch) declared once at its
 * largest batch, with the batch as a dynamic dim (bench/mlp/mlp_cgr.h).
 * Two pairs of buckets, one per code path of mlp_step_enqueue:
 * - {4, 8}: both at or below mlp_cfg.small_batch_max (8), the custom
 *   small-batch kernels. Their graphs have the same nodes and edges; only
 *   kernel functions (templated on the batch) and launch shapes differ,
 *   which cudaGraphExecUpdate may change.
 * - {16, 32}: the cuBLAS path. Whether they share a topology depends on the
 *   GEMM kernels cuBLAS picks for each size (a split-K kernel adds a node);
 *   the suite reports what happened and why.
 *
 * What is measured (cgr_step_get_stats right after the run that
 * captured, so warm-up runs are never in the figures):
 * (a) capture + instantiate: a runtime whose steps cache 16 graphs, so
 *     every new bucket is instantiated. Each repetition creates a fresh
 *     step, brings each bucket through its eager warm-ups and its capture,
 *     and reads last_capture_us (stream capture) and last_make_us
 *     (instantiate + upload). One priming repetition runs first and is
 *     reported on its own as "cold": it also pays for one-off costs of the
 *     runtime (the arena growing to the largest plan, lazily loaded
 *     kernels), which are not a new shape's.
 * (b) capture + update: a runtime whose steps cache one graph. One step
 *     alternates between the pair's buckets; each change evicts the cached
 *     graph, warms the other bucket up and captures it, offering the
 *     evicted executable for cudaGraphExecUpdate. last_make_us is then
 *     update + upload. A failed update falls back to instantiation and is
 *     counted, with cgr's reason.
 * (c) the training step replayed at each bucket (wall us per step, true
 *     batch varying within the bucket) next to its graph's node count.
 *
 * Every run gets fresh random inputs at a true batch below the bucket
 * (padding exercised), and every loss read back must be finite.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "mlp/mlp.h"
#include "mlp/mlp_cgr.h"
#include "newshape.h"
#include "util.h"

#define NS_REPS 30       /* repetitions per figure (--quick: 20; at least 20) */
#define NS_MAX_REPS 64
#define NS_WARMUP_RUNS 2 /* cgr_options.warmup_runs: eager runs per new shape */
#define NS_PAIRS 2

typedef struct ns_model {
    mlp_cfg cfg; /* batch = the step's largest bucket */
    mlp_bufs dev; /* persistent state of the runtime */
    float *x;    /* host inputs, up to NS_MAX_BATCH rows */
    int *labels;
    bench_rng rng;
} ns_model;

#define NS_MAX_BATCH 32

typedef struct ns_bucket {
    int64_t bucket, lo;         /* true batches lo..bucket fall in it */
    uint64_t nodes, kernel_nodes;
    double cold_capture_us, cold_make_us;
    bench_stats capture, instantiate, total; /* (a), over the repetitions */
    bench_stats step;           /* (c) wall us per replayed step */
} ns_bucket;

typedef struct ns_pair {
    const char *path;
    ns_bucket b[2];
    int ran_instantiate, ran_update, ran_step;
    /* (b) */
    int attempts, updates, failures;
    uint64_t by_reason[16];
    char last_update_error[256];
    bench_stats ucapture, update, utotal;
} ns_pair;

typedef struct ns_suite {
    const bench_config *cfg;
    int reps;
    ns_pair pair[NS_PAIRS];
    int failed;
    int aborted; /* the device is lost: nothing more runs */
} ns_suite;

/* ---- the step ----------------------------------------------------------------------- */

typedef struct ns_step_user {
    const ns_model *m;
    mlp_cfg cfg; /* m->cfg with batch = this step's largest bucket */
} ns_step_user;

static cgr_status ns_step_fn(cgr_ctx *ctx, void *user)
{
    const ns_step_user *u = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_cfg rc;
    mlp_bufs b;
    cgr_status st = mlp_cgr_bind_dyn(ctx, &u->cfg, &u->m->dev, &rc, &b, &h, &s);
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

static int ns_runtime(ns_model *m, const float *params0, int cache_entries, cgr_runtime **rt)
{
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.warmup_runs = NS_WARMUP_RUNS;
    o.shape_cache_entries = cache_entries;
    /* The suite changes shape on purpose, far more often than the guard allows. */
    o.churn_shapes = 0;
    CGR_CK(cgr_runtime_create(rt, &o));
    if (mlp_cgr_state_create(*rt, &m->cfg, params0, &m->dev) != 0) {
        bench_error("newshape: %s", mlp_last_error());
        cgr_runtime_destroy(rt);
        return -1;
    }
    return 0;
}

/* A true batch in lo..bucket (fresh each call), so padding is always in play. */
static int64_t ns_true_batch(ns_model *m, const ns_bucket *b)
{
    float f;
    rng_fill(&m->rng, &f, 1); /* [-1, 1) */
    int64_t t = b->lo + (int64_t)((f + 1.0f) * 0.5f * (float)(b->bucket - b->lo + 1));
    return t > b->bucket ? b->bucket : t;
}

/* One run at true batch T with fresh inputs; *action what cgr did; the loss must be finite. */
static int ns_run(ns_model *m, cgr_step *step, int64_t T, cgr_run_action *action,
                  double *wall_us)
{
    rng_fill(&m->rng, m->x, (size_t)T * (size_t)m->cfg.in_dim);
    for (int64_t i = 0; i < T; i++) {
        float f;
        rng_fill(&m->rng, &f, 1);
        int l = (int)((f + 1.0f) * 0.5f * (float)m->cfg.classes);
        m->labels[i] = l < 0 ? 0 : l >= m->cfg.classes ? m->cfg.classes - 1 : l;
    }
    const void *inputs[2] = {m->x, m->labels};
    uint64_t ticket = 0;
    const double t0 = now_us();
    CGR_CK(cgr_step_run(step, &T, inputs, &ticket));
    CGR_CK(cgr_step_wait(step, ticket));
    if (wall_us)
        *wall_us = now_us() - t0;
    CGR_CK(cgr_step_run_action(step, ticket, action));
    float loss = NAN;
    CGR_CK(cgr_step_output(step, ticket, 0, &loss, sizeof loss, NULL));
    if (!isfinite(loss)) {
        bench_error("newshape: W-mlp loss %g at true batch %lld (%s run)", (double)loss,
                    (long long)T, cgr_run_action_name(*action));
        return -1;
    }
    return 0;
}

static int ns_shape_stats(const cgr_step *step, cgr_step_stats *ss)
{
    memset(ss, 0, sizeof *ss);
    CGR_CK(cgr_step_get_stats(step, ss));
    return 0;
}

/*
 * Brings bucket b of a step through its warm-ups to its capture run and
 * returns that run's action and shape stats (read right after it, so its
 * last_capture_us / last_make_us are this capture's). Fails when cgr
 * replays or runs eagerly where a warm-up or a capture is due.
 */
static int ns_capture(ns_model *m, cgr_step *step, const ns_bucket *b, cgr_run_action *action,
                      cgr_step_stats *ss, cgr_step_stats *st)
{
    memset(ss, 0, sizeof *ss);
    for (int i = 0; i <= NS_WARMUP_RUNS + 1; i++) {
        TRY(ns_run(m, step, ns_true_batch(m, b), action, NULL));
        if (*action == CGR_RUN_WARMUP)
            continue;
        TRY(ns_shape_stats(step, ss));
        if (st)
            CGR_CK(cgr_step_get_stats(step, st));
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

/* ---- (a) capture + instantiate, then (c) the step at each bucket -------------------- */

static int ns_instantiate(ns_suite *S, ns_model *m, cgr_runtime *rt, ns_pair *p)
{
    const int64_t buckets[2] = {p->b[0].bucket, p->b[1].bucket};
    double cap[2][NS_MAX_REPS], make[2][NS_MAX_REPS], tot[2][NS_MAX_REPS];
    ns_step_user u = {.m = m};
    cgr_step *step = NULL;
    for (int rep = -1; rep < S->reps; rep++) {
        /* A fresh step: its cache is empty, so each bucket is a new shape. */
        CGR_CK(cgr_step_destroy(&step));
        TRY(ns_step_create(rt, &u, buckets, &step));
        for (int k = 0; k < 2; k++) {
            cgr_run_action a;
            cgr_step_stats ss;
            cgr_step_stats st;
            TRY_GOTO(ns_capture(m, step, &p->b[k], &a, &ss, &st), fail);
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
            tot[k][rep] = ss.last_capture_us + ss.last_make_us;
            p->b[k].nodes = st.graph_nodes;
            p->b[k].kernel_nodes = st.graph_kernel_nodes;
        }
    }
    for (int k = 0; k < 2; k++) {
        stats_compute(cap[k], S->reps, &p->b[k].capture);
        stats_compute(make[k], S->reps, &p->b[k].instantiate);
        stats_compute(tot[k], S->reps, &p->b[k].total);
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

static int ns_update(ns_suite *S, ns_model *m, cgr_runtime *rt, ns_pair *p)
{
    const int64_t buckets[2] = {p->b[0].bucket, p->b[1].bucket};
    double cap[NS_MAX_REPS], upd[NS_MAX_REPS], tot[NS_MAX_REPS];
    int n = 0;
    ns_step_user u = {.m = m};
    cgr_step *step = NULL;
    cgr_run_action a;
    cgr_step_stats ss;
    TRY(ns_step_create(rt, &u, buckets, &step));
    /* The first bucket fills the one-graph cache (an instantiation, not counted). */
    TRY_GOTO(ns_capture(m, step, &p->b[0], &a, &ss, NULL), fail);
    for (int rep = 0; rep < S->reps; rep++) {
        const int k = (rep + 1) % 2;
        const uint64_t failures_before = ss.update_failures;
        TRY_GOTO(ns_capture(m, step, &p->b[k], &a, &ss, NULL), fail);
        p->attempts++;
        if (a == CGR_RUN_UPDATE) {
            cap[n] = ss.last_capture_us;
            upd[n] = ss.last_make_us;
            tot[n] = ss.last_capture_us + ss.last_make_us;
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
    stats_compute(cap, n, &p->ucapture);
    stats_compute(upd, n, &p->update);
    stats_compute(tot, n, &p->utotal);
    p->ran_update = 1;
    CGR_CK(cgr_step_destroy(&step));
    return 0;
fail:
    cgr_step_destroy(&step);
    return -1;
}

/* ---- report -------------------------------------------------------------------------- */

static void print_stat(const char *label, const bench_stats *s)
{
    printf("  %-22s %9.1f %9.1f %9.1f %9.1f %9.1f\n", label, s->median, s->p10, s->p90, s->min,
           s->max);
}

static void summary_line(const char *what, const char *where, double median, int n)
{
    if (n > 0)
        printf("  %s: %s: median %.1f us over %d\n", what, where, median, n);
    else
        printf("  %s: %s: no sample\n", what, where);
}

static void ns_print(const ns_suite *S)
{
    printf("newshape: W-mlp training step (PDL) with a dynamic batch: the cost of a new shape, "
           "%d eager warm-up runs per shape excluded; %d repetitions per figure; us\n",
           NS_WARMUP_RUNS, S->reps);
    for (int i = 0; i < NS_PAIRS; i++) {
        const ns_pair *p = &S->pair[i];
        for (int k = 0; k < 2 && p->ran_instantiate; k++) {
            const ns_bucket *b = &p->b[k];
            printf("%s path, bucket %lld (true batch %lld..%lld): %llu graph nodes (%llu "
                   "kernels)",
                   p->path, (long long)b->bucket, (long long)b->lo, (long long)b->bucket,
                   (unsigned long long)b->nodes, (unsigned long long)b->kernel_nodes);
            if (p->ran_step)
                printf(", replayed step %.1f us (p10 %.1f, p90 %.1f)", b->step.median,
                       b->step.p10, b->step.p90);
            printf("\n  %-22s %9s %9s %9s %9s %9s\n", "capture + instantiate", "median", "p10",
                   "p90", "min", "max");
            print_stat("capture", &b->capture);
            print_stat("instantiate + upload", &b->instantiate);
            print_stat("capture + instantiate", &b->total);
            if (b->nodes)
                printf("  instantiate per node %.2f us; cold (first on the runtime): capture "
                       "%.1f + instantiate %.1f\n",
                       b->instantiate.median / (double)b->nodes, b->cold_capture_us,
                       b->cold_make_us);
        }
        if (p->ran_update) {
            printf("%s path, update in place alternating buckets %lld and %lld (one-graph "
                   "cache): %d of %d captures updated, %d update(s) failed%s%s\n",
                   p->path, (long long)p->b[0].bucket, (long long)p->b[1].bucket, p->updates,
                   p->attempts, p->failures, p->failures ? "; last reason: " : "",
                   p->failures ? p->last_update_error : "");
            for (int r = 0; r < 16 && p->failures; r++)
                if (p->by_reason[r])
                    printf("  failures with cudaGraphExecUpdateResult %d%s: %llu\n", r,
                           r == 15 ? " (or above)" : "", (unsigned long long)p->by_reason[r]);
            if (p->updates) {
                printf("  %-22s %9s %9s %9s %9s %9s\n", "capture + update", "median", "p10",
                       "p90", "min", "max");
                print_stat("capture", &p->ucapture);
                print_stat("update + upload", &p->update);
                print_stat("capture + update", &p->utotal);
                const uint64_t nodes = p->b[1].nodes ? p->b[1].nodes : p->b[0].nodes;
                if (nodes)
                    printf("  update per node %.2f us (about %llu nodes)\n",
                           p->update.median / (double)nodes, (unsigned long long)nodes);
            }
        }
    }
    printf("summary (W-mlp training step, new shape, warm-up excluded):\n");
    for (int i = 0; i < NS_PAIRS; i++) {
        const ns_pair *p = &S->pair[i];
        char where[96];
        for (int k = 0; k < 2 && p->ran_instantiate; k++) {
            snprintf(where, sizeof where, "%s path, bucket %lld", p->path,
                     (long long)p->b[k].bucket);
            summary_line("capture + instantiate", where, p->b[k].total.median, S->reps);
        }
        if (p->ran_update) {
            snprintf(where, sizeof where, "%s path, buckets %lld <-> %lld", p->path,
                     (long long)p->b[0].bucket, (long long)p->b[1].bucket);
            summary_line("capture + update", where, p->utotal.median, p->updates);
        }
    }
}

/* Statistics over the repetitions (NaN, written as null, when none ran). */
static void json_stats(json_writer *w, const char *key, const bench_stats *s)
{
    report_json_stats(w, key, s, 1);
}

static int ns_json(const ns_suite *S, const bench_results *res)
{
    json_writer w;
    TRY(report_suite_json_open(&w, S->cfg->json_path, "newshape", res->device_name));
    json_string(&w, "workload", "W-mlp training step, dynamic batch, pdl");
    json_int(&w, "repetitions", S->reps);
    json_int(&w, "warmup_runs_per_shape", NS_WARMUP_RUNS);
    json_int(&w, "timed_steps", S->cfg->steps);
    json_begin_array(&w, "pairs");
    for (int i = 0; i < NS_PAIRS; i++) {
        const ns_pair *p = &S->pair[i];
        json_begin_object(&w, NULL);
        json_string(&w, "path", p->path);
        json_begin_array(&w, "buckets");
        for (int k = 0; k < 2; k++) {
            const ns_bucket *b = &p->b[k];
            json_begin_object(&w, NULL);
            json_int(&w, "bucket", b->bucket);
            json_int(&w, "true_batch_min", b->lo);
            json_bool(&w, "ran", p->ran_instantiate);
            json_int(&w, "graph_nodes", (long long)b->nodes);
            json_int(&w, "graph_kernel_nodes", (long long)b->kernel_nodes);
            json_stats(&w, "capture_us", &b->capture);
            json_stats(&w, "instantiate_us", &b->instantiate);
            json_stats(&w, "capture_instantiate_us", &b->total);
            json_number(&w, "cold_capture_us", b->cold_capture_us);
            json_number(&w, "cold_instantiate_us", b->cold_make_us);
            json_stats(&w, "step_wall_us", &b->step);
            json_end_object(&w);
        }
        json_end_array(&w);
        json_begin_object(&w, "update");
        json_bool(&w, "ran", p->ran_update);
        json_int(&w, "attempts", p->attempts);
        json_int(&w, "updates", p->updates);
        json_int(&w, "failures", p->failures);
        json_begin_array(&w, "failures_by_reason");
        for (int r = 0; r < 16; r++)
            json_int(&w, NULL, (long long)p->by_reason[r]);
        json_end_array(&w);
        json_string(&w, "last_update_error", p->last_update_error);
        json_stats(&w, "capture_us", &p->ucapture);
        json_stats(&w, "update_us", &p->update);
        json_stats(&w, "capture_update_us", &p->utotal);
        json_end_object(&w);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_bool(&w, "failed", S->failed);
    return report_suite_json_close(&w, S->cfg->json_path);
}

/* ---- the suite ------------------------------------------------------------------------ */

int newshape_suite(const bench_config *cfg, const bench_results *res)
{
    static ns_suite S; /* large: kept off the stack */
    if (!mlp_device_ok()) {
        fprintf(stderr, "cgr-bench: newshape skipped: the W-mlp training step needs compute "
                        "capability 9.0 (thread block clusters)\n");
        return 0;
    }
    memset(&S, 0, sizeof S);
    S.cfg = cfg;
    S.reps = cfg->quick ? 20 : NS_REPS;
    static const struct {
        const char *path;
        int64_t lo0, b0, lo1, b1;
    } pairs[NS_PAIRS] = {{"small-batch", 3, 4, 5, 8}, {"cuBLAS", 9, 16, 17, 32}};
    for (int i = 0; i < NS_PAIRS; i++) {
        S.pair[i].path = pairs[i].path;
        S.pair[i].b[0] = (ns_bucket){.bucket = pairs[i].b0, .lo = pairs[i].lo0};
        S.pair[i].b[1] = (ns_bucket){.bucket = pairs[i].b1, .lo = pairs[i].lo1};
    }

    ns_model m;
    memset(&m, 0, sizeof m);
    mlp_cfg_default(&m.cfg, NS_MAX_BATCH);
    rng_seed(&m.rng, 0x6e657773ULL);
    mlp_layout lay;
    float *params0 = NULL;
    cgr_runtime *rt = NULL;
    int rc = 1;
    m.x = malloc((size_t)NS_MAX_BATCH * m.cfg.in_dim * sizeof(float));
    m.labels = malloc(NS_MAX_BATCH * sizeof(int));
    if (mlp_layout_init(&lay, &m.cfg) != 0 || !m.x || !m.labels ||
        !(params0 = malloc(lay.n_floats * sizeof(float))) ||
        mlp_init_params(&m.cfg, params0, 0x5eedULL) != 0) {
        bench_error("newshape setup: %s", m.x && m.labels && params0 ? mlp_last_error()
                                                                    : "out of host memory");
        goto out;
    }

    /*
     * Phase 0, (a) and (c): 16 graphs per step, so every bucket instantiates.
     * Phase 1, (b): one graph per step, so every change of bucket offers the
     * cached executable for an update in place. Each phase has its own
     * runtime (the cache size is a runtime option) and its own copy of the
     * model's state, uploaded from the same initial parameters.
     */
    for (int phase = 0; phase < 2 && !S.aborted; phase++) {
        watchdog_arm(phase ? "newshape: capture + update" : "newshape: capture + instantiate",
                     mode_budget_s(cfg, 10.0));
        if (ns_runtime(&m, params0, phase ? 1 : 16, &rt) != 0) {
            S.failed = 1;
            watchdog_disarm();
            break;
        }
        for (int i = 0; i < NS_PAIRS && !S.aborted; i++) {
            bench_clear_error();
            const int r = phase ? ns_update(&S, &m, rt, &S.pair[i])
                                : ns_instantiate(&S, &m, rt, &S.pair[i]);
            if (r != 0) {
                S.failed = 1;
                fprintf(stderr, "cgr-bench: newshape: %s path failed: %s\n", S.pair[i].path,
                        bench_last_error());
                if (bench_device_recover() != 0)
                    S.aborted = 1;
            }
        }
        if (bench_cgr_failed(cgr_runtime_destroy(&rt), "cgr_runtime_destroy", __FILE__,
                             __LINE__))
            S.failed = 1;
        if (mlp_cgr_state_release(&m.dev) != 0) {
            bench_error("newshape: %s", mlp_last_error());
            S.failed = 1;
        }
        watchdog_disarm();
    }
    ns_print(&S);
    if (cfg->json_path && ns_json(&S, res) != 0)
        S.failed = 1;
    printf("newshape: %s\n", S.failed ? "FAILED (see the errors above)" : "all measurements ran");
    rc = S.failed ? 1 : 0;
out:
    free(params0);
    free(m.x);
    free(m.labels);
    return rc;
}
