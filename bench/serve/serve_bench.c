/*
 * cgr-bench serve: W-serve (serve.h), a serving loop with a dynamic batch.
 * docs/benchmarks.md ("W-serve") describes the method and the figures.
 *
 * One request sequence (10,000 requests, 2,000 with --quick; batches
 * uniform in 1..64 from a fixed seed, fresh inputs per request) runs once
 * per mode, each on its own runtime with the same step, in the same order:
 * graph (armed requests, CGR_ACQUIRE_ARM), eager (capture = 0) and plain
 * (graphs launched at submission); every mode writes its inputs into the
 * slot with cgr_step_write_input. A request's latency is cgr_step_launch +
 * cgr_step_wait, closed loop; the acquire and the input write stay outside
 * it (the write is timed apart), so a server that knows its batch can arm
 * before it copies the rows in.
 *
 * "Steady" figures leave out the first pass over the buckets: every
 * request up to the last one of the graph run that did not replay, or
 * replayed after the frozen-value check captured it once more; the same
 * requests are left out of every mode.
 *
 * The steady requests run again with requests in flight (serve_pipe.c),
 * SERVE_PIPE_REPS passes per mode taking turns. GPU busy time comes from a
 * profiled pass after every timed one (CUPTI slows every later launch), on
 * the plain runtime, since an armed graph's input kernel spends its wait
 * for the launch inside the kernel.
 *
 * Checked: every 100th output graph against the other modes bit for bit,
 * the first replay of each bucket against a float64 host reference, output
 * sizes, and hashed rows with requests in flight against eager's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "serve.h"
#include "util.h"

#if BENCH_HAVE_PROF
#include "prof.h"
#endif

#define SERVE_REQUESTS 10000
#define SERVE_REQUESTS_QUICK 2000
#define SERVE_SAMPLE_EVERY 100 /* graph vs eager, bitwise */
#define SERVE_PROF_STEPS 50
#define SERVE_BATCH_SEED 0x5e7e0001ULL
#define SERVE_INPUT_SEED 0x5e7e0002ULL
#define SERVE_PIPE_REPS 5 /* passes with requests in flight, per mode and set */

typedef struct serve_run {
    const bench_config *cfg;
    int n;                   /* requests */
    int *batch;              /* [n] */
    double *lat[SERVE_MODES];      /* [n] us */
    double *launch_us[SERVE_MODES];/* [n] host time inside cgr_step_launch */
    double *write_us[SERVE_MODES]; /* [n] host time writing the inputs into the slot */
    unsigned char *action;   /* [n] graph run's cgr_run_action */
    unsigned char *checked;  /* [n] graph run: the run was a frozen-value check */
    float **sample;          /* [n / SAMPLE_EVERY + 1] graph outputs kept for the eager check */
    int host_checked[SERVE_N_BUCKETS];
    double wall_s[SERVE_MODES];
    cgr_step_stats shape[SERVE_MODES];
    cgr_runtime_stats rts[SERVE_MODES];
    uint64_t *pipe_hash[SERVE_MODES]; /* [n / SERVE_PIPE_HASH_EVERY + 1], steady pass */
    serve_result f;          /* what the report shows */
    int trace_written;       /* --trace: the profiled pass's trace, or why not */
    char trace_why[256];
} serve_run;

/* ---- the request sequence ------------------------------------------------------------- */

/* splitmix64: the batch sizes, independent of the input stream. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void make_batches(serve_run *r)
{
    uint64_t s = SERVE_BATCH_SEED;
    for (int i = 0; i < r->n; i++)
        r->batch[i] = 1 + (int)(next_u64(&s) % SERVE_MAX_BATCH);
}

static int is_sample(int i)
{
    return i % SERVE_SAMPLE_EVERY == 0;
}

/* ---- statistics ------------------------------------------------------------------------ */

/*
 * Figures of per-request values v[i] for i in [from, n) (bucket index >= 0:
 * only that bucket; max_batch > 0: only batches up to it).
 */
static void lat_figures(const serve_run *r, const double *v, int from, int bucket,
                        int max_batch, double *scratch, serve_lat *out)
{
    memset(out, 0, sizeof *out);
    long k = 0;
    for (int i = from; i < r->n; i++) {
        int B = r->batch[i];
        if ((bucket >= 0 && serve_bucket_index(B) != bucket) || (max_batch > 0 && B > max_batch))
            continue;
        scratch[k++] = v[i];
        out->rows += B;
        out->sum_us += v[i];
    }
    out->n = k;
    if (k == 0) {
        out->p50 = out->p99 = out->mean = out->req_per_s = out->rows_per_s = NAN;
        return;
    }
    /* Percentiles as every other cgr-bench figure computes them (timing.c). */
    stats_sort(scratch, (int)k);
    out->p50 = stats_percentile(scratch, (int)k, 0.50);
    out->p99 = stats_percentile(scratch, (int)k, 0.99);
    out->mean = out->sum_us / (double)k;
    out->req_per_s = (double)k / (out->sum_us * 1e-6);
    out->rows_per_s = (double)out->rows / (out->sum_us * 1e-6);
}

/* ---- checks ---------------------------------------------------------------------------- */

/* Row r of a request's output against the float64 reference of its input row. */
static void host_check_row(serve_run *r, const serve_model *m, int req, int row, const float *x,
                           const float *probs)
{
    static double ref[1000];
    const int C = m->cfg.classes;
    serve_ref_row(m, x, ref);
    double sum = 0.0, worst = 0.0;
    int bad = -1;
    for (int c = 0; c < C; c++) {
        double d = fabs((double)probs[c] - ref[c]);
        double rel = d / ref[c];
        if (rel > worst)
            worst = rel;
        /* fp32 through five 1024-long dot products: ~1e-6 relative; 1e-4 leaves room. */
        if (d > 1e-4 * ref[c] + 1e-9 && bad < 0)
            bad = c;
        sum += probs[c];
    }
    if (worst > r->f.host_worst_rel)
        r->f.host_worst_rel = worst;
    r->f.host_checks++;
    if (bad >= 0 || fabs(sum - 1.0) > 1e-4) {
        r->f.host_mismatches++;
        bench_error("W-serve request %d (B=%d) row %d: probs[%d] = %.9g, float64 reference "
                    "%.9g; row sum %.9g",
                    req, r->batch[req], row, bad < 0 ? 0 : bad, probs[bad < 0 ? 0 : bad],
                    ref[bad < 0 ? 0 : bad], sum);
    }
}

/* ---- one pass over the request sequence -------------------------------------------------- */

static int run_pass(serve_run *r, const serve_model *model, serve_rt *srt, int m)
{
    const int in_dim = model->cfg.in_dim, C = model->cfg.classes;
    static float row_first[1024], row_last[1024], req_in[SERVE_MAX_BATCH * 1024];
    if (in_dim > 1024) {
        bench_error("W-serve: input rows of %d floats, at most 1024 supported", in_dim);
        return -1;
    }
    bench_rng rng;
    rng_seed(&rng, SERVE_INPUT_SEED);
    cgr_step_stats s0;
    CGR_CK(cgr_step_get_stats(srt->step, &s0));
    uint64_t checks = s0.frozen_checks;
    double t_start = now_us();
    for (int i = 0; i < r->n; i++) {
        const int B = r->batch[i];
        cgr_slot slot;
        TRY(serve_acquire(srt, B, &slot));
        /* The request's rows arrive in host memory; the clock starts once they are in the slot. */
        rng_fill(&rng, req_in, (size_t)B * in_dim);
        if (m == SERVE_GRAPH) {
            memcpy(row_first, req_in, sizeof row_first);
            memcpy(row_last, req_in + (size_t)(B - 1) * in_dim, sizeof row_last);
        }
        const double tw = now_us();
        TRY(serve_write_input(srt, &slot, req_in, (size_t)B * in_dim * sizeof(float)));

        double t0 = now_us();
        r->write_us[m][i] = t0 - tw;
        CGR_CK(cgr_step_launch(srt->step, &slot));
        double t1 = now_us();
        CGR_CK(cgr_step_wait(srt->step, slot.ticket));
        r->lat[m][i] = now_us() - t0;
        r->launch_us[m][i] = t1 - t0;

        const void *out = slot.outputs[0];
        size_t bytes = 0;
        CGR_CK(cgr_step_output(srt->step, slot.ticket, 0, NULL, 0, &bytes));

        if (bytes != (size_t)B * C * sizeof(float)) {
            bench_error("W-serve %s request %d (B=%d): output of %zu bytes, expected %zu",
                        serve_mode_names[m], i, B, bytes, (size_t)B * C * sizeof(float));
            return -1;
        }
        cgr_run_action a;
        CGR_CK(cgr_step_run_action(srt->step, slot.ticket, &a));
        if (m == SERVE_GRAPH) {
            r->action[i] = (unsigned char)a;
            cgr_step_stats cs;
            CGR_CK(cgr_step_get_stats(srt->step, &cs));
            r->checked[i] = cs.frozen_checks > checks;
            checks = cs.frozen_checks;
            int bi = serve_bucket_index(B);
            if (a == CGR_RUN_REPLAY && !r->host_checked[bi]) {
                r->host_checked[bi] = 1;
                host_check_row(r, model, i, 0, row_first, out);
                host_check_row(r, model, i, B - 1, row_last,
                               (const float *)out + (size_t)(B - 1) * C);
            }
            if (is_sample(i)) {
                const void *copy = bench_output(srt->step, slot.ticket, 0, NULL);
                if (!copy)
                    return -1;
                if (memcmp(copy, out, bytes) != 0) {
                    bench_error("W-serve request %d (B=%d): the output read in place differs "
                                "from cgr_step_output's copy",
                                i, B);
                    return -1;
                }
                float *keep = malloc(bytes);
                if (!keep) {
                    bench_error("W-serve: out of host memory");
                    return -1;
                }
                memcpy(keep, out, bytes);
                r->sample[i / SERVE_SAMPLE_EVERY] = keep;
            }
        } else {
            if (m == SERVE_EAGER && a != CGR_RUN_EAGER && a != CGR_RUN_WARMUP) {
                bench_error("W-serve eager request %d (B=%d) ran as %s", i, B,
                            cgr_run_action_name(a));
                return -1;
            }
            if (is_sample(i) && r->sample[i / SERVE_SAMPLE_EVERY]) {
                r->f.samples_checked++;
                if (memcmp(r->sample[i / SERVE_SAMPLE_EVERY], out, bytes) != 0) {
                    r->f.sample_mismatches++;
                    bench_error("W-serve request %d (B=%d): graph and %s outputs differ", i,
                                B, serve_mode_names[m]);
                }
            }
        }
    }
    r->wall_s[m] = (now_us() - t_start) * 1e-6;
    CGR_CK(cgr_step_get_stats(srt->step, &r->shape[m]));
    CGR_CK(cgr_runtime_get_stats(srt->rt, &r->rts[m]));
    return 0;
}

/* ---- requests in flight (serve_pipe.c) ------------------------------------------------------ */

/* The first pass over the buckets ends with the graph run's last run of a new shape. */
static void find_steady(serve_run *r)
{
    r->f.steady_from = 0;
    for (int i = 0; i < r->n; i++)
        if (r->action[i] != CGR_RUN_REPLAY || r->checked[i])
            r->f.steady_from = i + 1;
}

/*
 * The steady requests, then those of batch <= 8, with requests in flight,
 * in both modes; the graph runtime must only replay (its first pass
 * captured every bucket), the eager one never. Outputs: the hashed rows of
 * the steady pass, graph against eager, bit for bit.
 */
static int pipe_passes(serve_run *r, const serve_model *model, serve_rt rts[SERVE_MODES])
{
    const int in_dim = model->cfg.in_dim, C = model->cfg.classes;
    float *pool = malloc((size_t)SERVE_PIPE_POOL_ROWS * in_dim * sizeof *pool);
    if (!pool) {
        bench_error("W-serve: out of host memory");
        return -1;
    }
    bench_rng rng;
    rng_seed(&rng, SERVE_INPUT_SEED ^ 0x919eULL);
    rng_fill(&rng, pool, (size_t)SERVE_PIPE_POOL_ROWS * in_dim);
    int rc = 0;
    r->f.pipe_depth = rts[SERVE_GRAPH].slots;
    /*
     * A pass over the batch <= 8 requests lasts ~40 ms, short enough for
     * one hiccup of the host to move it by 10 %: each pass runs
     * SERVE_PIPE_REPS times, the modes taking turns, and the median counts.
     */
    double wall[SERVE_MODES][2][SERVE_PIPE_REPS];
    for (int rep = 0; rep < SERVE_PIPE_REPS && rc == 0; rep++)
        for (int k = 0; k < 2 && rc == 0; k++)
            for (int m = 0; m < SERVE_MODES && rc == 0; m++) {
                serve_pipe_result *p = &r->f.pipe[m][k];
                rc = serve_pipe_pass(&rts[m], r->batch, r->f.steady_from, r->n, k ? 8 : 0, pool,
                                     in_dim, C, rep == 0 && k == 0 ? r->pipe_hash[m] : NULL, p);
                if (rc == 0 && p->replays != (m == SERVE_EAGER ? 0 : p->n)) {
                    bench_error("W-serve %s pass with requests in flight: %ld of %ld requests "
                                "replayed a graph",
                                serve_mode_names[m], p->replays, p->n);
                    rc = -1;
                }
                wall[m][k][rep] = p->wall_us;
            }
    /* Every pass of a set runs the same requests, so the median wall gives the median rates. */
    for (int m = 0; m < SERVE_MODES && rc == 0; m++)
        for (int k = 0; k < 2; k++) {
            stats_sort(wall[m][k], SERVE_PIPE_REPS);
            r->f.pipe[m][k].wall_us = stats_percentile(wall[m][k], SERVE_PIPE_REPS, 0.5);
        }
    free(pool);
    for (int i = r->f.steady_from; rc == 0 && i < r->n; i++) {
        if (i % SERVE_PIPE_HASH_EVERY)
            continue;
        const int j = i / SERVE_PIPE_HASH_EVERY;
        for (int m = 0; m < SERVE_MODES; m++) {
            if (m == SERVE_EAGER)
                continue;
            r->f.pipe_hashes_checked++;
            if (r->pipe_hash[m][j] != r->pipe_hash[SERVE_EAGER][j]) {
                r->f.pipe_hash_mismatches++;
                bench_error("W-serve request %d (B=%d), requests in flight: %s and eager "
                            "outputs differ", i, r->batch[i], serve_mode_names[m]);
            }
        }
    }
    return rc;
}

/* ---- GPU busy time per bucket (a separate, profiled pass) -------------------------------- */

#if BENCH_HAVE_PROF
/* One request as the timed pass runs it. */
static int one_request(serve_rt *srt, bench_rng *rng, int B, int in_dim, cgr_run_action *a)
{
    static float req_in[SERVE_MAX_BATCH * 1024];
    cgr_slot slot;
    TRY(serve_acquire(srt, B, &slot));
    rng_fill(rng, req_in, (size_t)B * in_dim);
    TRY(serve_write_input(srt, &slot, req_in, (size_t)B * in_dim * sizeof(float)));
    CGR_CK(cgr_step_launch(srt->step, &slot));
    CGR_CK(cgr_step_wait(srt->step, slot.ticket));
    CGR_CK(cgr_step_run_action(srt->step, slot.ticket, a));
    return 0;
}

/*
 * GPU busy time per bucket, from profiled requests on the plain runtime:
 * without gates, so the graph's work alone.
 */
static int profile_runtime(serve_run *r, const serve_model *model, serve_rt *srt, prof *p)
{
    bench_rng rng;
    rng_seed(&rng, SERVE_INPUT_SEED ^ 0xb05eULL);
    uint64_t s = SERVE_BATCH_SEED ^ 0xb05eULL;
    int rc = 0;
    for (int b = 0; b < SERVE_N_BUCKETS && rc == 0; b++) {
        const int lo = b == 0 ? 1 : (int)serve_buckets[b - 1] + 1, hi = (int)serve_buckets[b];
        cgr_run_action a;
        /* One request outside the window keeps the previous window's flush out of this one. */
        if ((rc = one_request(srt, &rng, hi, model->cfg.in_dim, &a)) != 0)
            break;
        char label[64];
        snprintf(label, sizeof label, "W-serve bucket %d", hi);
        if (prof_begin(p) != PROF_OK) {
            snprintf(r->f.prof_note, sizeof r->f.prof_note, "profiling failed: %s",
                     prof_errmsg(p));
            break;
        }
        int replays = 0;
        for (int k = 0; k < SERVE_PROF_STEPS && rc == 0; k++) {
            int B = lo + (int)(next_u64(&s) % (uint64_t)(hi - lo + 1));
            rc = one_request(srt, &rng, B, model->cfg.in_dim, &a);
            replays += a == CGR_RUN_REPLAY;
        }
        if (rc != 0 || bench_cuda_failed(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
                                         __FILE__, __LINE__)) {
            rc = -1;
            break;
        }
        prof_window w;
        if (prof_end(p, SERVE_PROF_STEPS, &w) != PROF_OK) {
            snprintf(r->f.prof_note, sizeof r->f.prof_note, "profiling %s failed: %s", label,
                     prof_errmsg(p));
            continue;
        }
        if (replays != SERVE_PROF_STEPS) {
            bench_error("W-serve bucket %d: %d of %d profiled requests replayed", hi, replays,
                        SERVE_PROF_STEPS);
            rc = -1;
            break;
        }
        serve_bucket *f = &r->f.bk[b];
        f->prof_ok = 1;
        f->busy_us = w.busy_us;
        f->busy_union_us = w.busy_union_us;
        f->kernels = w.kernels_per_step;
        f->memcpys = w.memcpys_per_step;
        if (w.dropped)
            snprintf(r->f.prof_note, sizeof r->f.prof_note,
                     "CUPTI dropped %llu records in bucket %d: its busy time is too low",
                     (unsigned long long)w.dropped, hi);
        if (r->cfg->trace_path)
            prof_trace_add(p, label, b + 1);
    }
    return rc;
}

static int profile_buckets(serve_run *r, const serve_model *model, serve_rt rts[SERVE_MODES])
{
    prof *p = NULL;
    char err[256];
    if (prof_create(&p, err, sizeof err) != PROF_OK) {
        snprintf(r->f.prof_note, sizeof r->f.prof_note, "no GPU busy times: %s", err);
        snprintf(r->trace_why, sizeof r->trace_why, "%s", err);
        return 0;
    }
    int rc = profile_runtime(r, model, &rts[SERVE_PLAIN], p);
    if (rc != 0)
        snprintf(r->trace_why, sizeof r->trace_why, "the profiled pass failed");
    else if (r->cfg->trace_path && prof_trace_write(p, r->cfg->trace_path) != PROF_OK)
        snprintf(r->trace_why, sizeof r->trace_why, "%s", prof_errmsg(p));
    else if (r->cfg->trace_path)
        r->trace_written = 1;
    prof_destroy(&p);
    return rc;
}
#else
static int profile_buckets(serve_run *r, const serve_model *model, serve_rt rts[SERVE_MODES])
{
    (void)model;
    (void)rts;
    snprintf(r->f.prof_note, sizeof r->f.prof_note, "built without CUPTI: no GPU busy times");
    snprintf(r->trace_why, sizeof r->trace_why, "cgr-bench was built without CUPTI");
    return 0;
}
#endif

/* ---- figures ------------------------------------------------------------------------------ */

static int compute_figures(serve_run *r)
{
    double *scratch = malloc((size_t)r->n * sizeof *scratch);
    if (!scratch) {
        bench_error("W-serve: out of host memory");
        return -1;
    }
    serve_result *f = &r->f;
    for (int m = 0; m < SERVE_MODES; m++) {
        lat_figures(r, r->lat[m], 0, -1, 0, scratch, &f->all[m]);
        lat_figures(r, r->lat[m], f->steady_from, -1, 0, scratch, &f->steady[m]);
        lat_figures(r, r->lat[m], f->steady_from, -1, 8, scratch, &f->small[m]);
        for (int b = 0; b < SERVE_N_BUCKETS; b++) {
            serve_lat launch, write;
            lat_figures(r, r->lat[m], f->steady_from, b, 0, scratch, &f->bk[b].lat[m]);
            lat_figures(r, r->launch_us[m], f->steady_from, b, 0, scratch, &launch);
            lat_figures(r, r->write_us[m], f->steady_from, b, 0, scratch, &write);
            f->bk[b].launch_p50[m] = launch.p50;
            f->bk[b].write_p50[m] = write.p50;
        }
    }
    free(scratch);
    f->graph = r->shape[SERVE_GRAPH];
    f->eager_arena_bytes = r->shape[SERVE_EAGER].arena_bytes;
    f->graph_arena_reserved = r->rts[SERVE_GRAPH].arena_reserved;
    f->graph_arena_planned = r->rts[SERVE_GRAPH].arena_planned;
    f->graph_wall_s = r->wall_s[SERVE_GRAPH];
    f->eager_wall_s = r->wall_s[SERVE_EAGER];
    return 0;
}

/* ---- the suite ------------------------------------------------------------------------------ */

static int serve_body(serve_run *r, const serve_model *model, serve_rt rts[SERVE_MODES])
{
    for (int m = 0; m < SERVE_MODES; m++) {
        TRY(serve_rt_create(&rts[m], model, r->cfg->device, m != SERVE_EAGER, !r->cfg->no_pdl,
                            m != SERVE_PLAIN));
        char label[32];
        snprintf(label, sizeof label, "serve: %s pass", serve_mode_names[m]);
        /* A generous 2 ms a request on top of the base: a hang still shows within minutes. */
        watchdog_arm(label, r->cfg->timeout_s + (unsigned)(r->n / 500));
        int rc = run_pass(r, model, &rts[m], m);
        watchdog_disarm();
        TRY(rc);
        fprintf(stderr, "cgr-bench: serve %s pass: %d requests in %.2f s\n", serve_mode_names[m],
                r->n, r->wall_s[m]);
    }
    find_steady(r);
    watchdog_arm("serve: requests in flight", r->cfg->timeout_s + (unsigned)(r->n / 500));
    int prc = pipe_passes(r, model, rts);
    watchdog_disarm();
    TRY(prc);
    watchdog_arm("serve: profiled pass", r->cfg->timeout_s);
    int rc = profile_buckets(r, model, rts);
    watchdog_disarm();
    TRY(rc);
    TRY(compute_figures(r));
    if (r->cfg->stats)
        for (int m = 0; m < SERVE_MODES; m++) {
            /* Runtime, step and shape counters, and every shape with its replays and last use. */
            bench_print_stats(rts[m].rt, rts[m].step, "\ncgr stats, W-serve %s:\n",
                              serve_mode_names[m]);
        }
    return 0;
}

/* A check of outputs compared: ok when some were and none differed. */
static int serve_check(bench_results *res, const char *name, const char *what, long checked,
                       long differ, const char *detail)
{
    said_check *c = said_add(res, name, what);
    c->ok = checked > 0 && differ == 0;
    snprintf(c->message, sizeof c->message, "%ld compared, %ld differ%s", checked, differ,
             detail);
    return c->ok;
}

int serve_suite(const bench_config *cfg, bench_results *res)
{
    static serve_run r; /* large: off the stack */
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.n = cfg->quick ? SERVE_REQUESTS_QUICK : SERVE_REQUESTS;
    serve_result *f = &r.f;
    res->serve = f;
    f->requests = r.n;
    f->quick = cfg->quick;
    f->pdl = !cfg->no_pdl;
    f->batch_seed = SERVE_BATCH_SEED;
    memcpy(f->buckets, serve_buckets, sizeof f->buckets);
    f->pipe_reps = SERVE_PIPE_REPS;
    f->prof_steps = SERVE_PROF_STEPS;
    serve_model model;
    memset(&model, 0, sizeof model);
    serve_rt rts[SERVE_MODES];
    memset(rts, 0, sizeof rts);
    const int n_samples = r.n / SERVE_SAMPLE_EVERY + 1;
    r.batch = malloc((size_t)r.n * sizeof *r.batch);
    r.action = malloc((size_t)r.n);
    r.checked = malloc((size_t)r.n);
    r.sample = calloc((size_t)n_samples, sizeof *r.sample);
    int alloc_ok = r.batch && r.action && r.checked && r.sample;
    for (int m = 0; m < SERVE_MODES; m++) {
        r.lat[m] = malloc((size_t)r.n * sizeof *r.lat[m]);
        r.launch_us[m] = malloc((size_t)r.n * sizeof *r.launch_us[m]);
        r.write_us[m] = malloc((size_t)r.n * sizeof *r.write_us[m]);
        r.pipe_hash[m] = calloc((size_t)(r.n / SERVE_PIPE_HASH_EVERY + 1), sizeof(uint64_t));
        alloc_ok = alloc_ok && r.lat[m] && r.launch_us[m] && r.write_us[m] && r.pipe_hash[m];
    }
    if (!alloc_ok)
        bench_error("W-serve: out of host memory");
    else if (serve_model_init(&model) == 0) {
        make_batches(&r);
        f->ran = serve_body(&r, &model, rts) == 0;
    }
    if (f->ran) {
        char worst[64];
        snprintf(worst, sizeof worst, " (worst relative error %.2e)", f->host_worst_rel);
        f->pass = serve_check(res, "serve_samples", "W-serve sampled outputs, graph = eager",
                              f->samples_checked, f->sample_mismatches, ", bitwise");
        f->pass &= serve_check(res, "serve_reference", "W-serve rows against float64",
                               f->host_checks, f->host_mismatches, worst);
        f->pass &= serve_check(res, "serve_in_flight", "W-serve in flight, graph = eager",
                               f->pipe_hashes_checked, f->pipe_hash_mismatches,
                               " (hashed first and last rows)");
    } else {
        snprintf(f->error, sizeof f->error, "%s", bench_last_error());
    }
    if (cfg->trace_path)
        trace_said(res, cfg->trace_path, r.trace_written,
                   r.trace_why[0] ? r.trace_why : "the suite stopped before its profiled pass");
    serve_model_free(&model);
    for (int m = 0; m < SERVE_MODES; m++) {
        serve_rt_destroy(&rts[m]);
        free(r.lat[m]);
        free(r.launch_us[m]);
        free(r.write_us[m]);
        free(r.pipe_hash[m]);
    }
    if (r.sample)
        for (int i = 0; i < n_samples; i++)
            free(r.sample[i]);
    free(r.sample);
    free(r.action);
    free(r.checked);
    free(r.batch);
    return f->ran ? 0 : -1;
}
