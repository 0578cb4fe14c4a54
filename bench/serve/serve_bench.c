/*
 * cgr-bench serve: W-serve (serve.h), a serving loop with a dynamic batch.
 *
 * The request sequence: 10,000 requests (2,000 with --quick), batch sizes
 * uniform in 1..64 from a fixed seed, each with fresh random inputs
 * written by the host. It runs three times, on three runtimes, same
 * step, same inputs, same order:
 *   graph  cgr's graphs (per new bucket, warm-up runs, one capture, then
 *          replays) on an armable step: each request is armed with
 *          CGR_ACQUIRE_ARM, so its bucket's graph is launched before the host
 *          writes the inputs and waits on the GPU for the launch;
 *   eager  cgr_options.capture = 0: every run eager;
 *   plain  graphs as in "graph", but the step is not armable and each
 *          graph is launched at submission (cgr_step_acquire): the
 *          comparison for arming, and the runtime the profiled pass uses.
 *
 * One request, closed loop (the next is submitted only after this one's
 * output was read):
 *   untimed  cgr_step_acquire with CGR_ACQUIRE_ARM (graph, eager) or without (plain), then
 *            the host writes the request's inputs into the pinned slot,
 *            packed at the true batch (cgr's fast path, as in the other
 *            workload suites);
 *   timed    cgr_step_launch + cgr_step_wait + cgr_step_output: from
 *            submission to the probabilities in host memory (cgr pads the
 *            input to the bucket, stages it in the graph, and packs the
 *            output back to the true batch);
 *   untimed  the client reads the output: every 100th request's is kept
 *            and compared bit for bit with the eager run of the same
 *            request, and the first replayed request of each bucket is
 *            checked against a float64 host reference (first and last row).
 *
 * Figures: latency p50/p99 per request overall and per bucket, and the
 * p50 of the launch call alone; closed-loop throughput (requests/s and
 * rows/s over the summed request latencies, so input generation is not
 * counted) overall and for requests of batch <= 8; captures, updates,
 * evictions and arena bytes from cgr's shape stats. "Steady" figures
 * leave out the first pass over the buckets: every request up to the last
 * one that did not replay in the graph run (the same requests are left
 * out of the eager run's steady figures).
 *
 * Requests in flight (serve_pipe.c): the steady requests, and those of
 * batch <= 8, again, as a serving loop with a queue runs them: the next
 * request is staged and launched while the GPU runs the current one, up
 * to the step's two staging slots. Throughput = requests / wall time, the
 * median of SERVE_PIPE_REPS passes per mode, the modes taking turns.
 *
 * The model's kernels use programmatic dependent launch unless --no-pdl:
 * each one's launch then overlaps the previous one's work, inside the
 * graph and eagerly alike.
 *
 * GPU busy time per bucket comes from a separate, profiled pass after
 * the timed passes (CUPTI slows every later launch, so it must not
 * overlap them), on the plain runtime: an armed graph's input kernel
 * spends its wait for the launch inside the kernel, which is not work,
 * and a plain graph has no gate to pass. 50 replays per bucket with
 * batches drawn from the bucket's range, the busy time being the summed
 * kernel and memcpy durations per replay (as in the other suites) and,
 * beside it, the union of their intervals. The same pass splits each
 * request's latency on CUPTI's clock: submission to the first kernel,
 * the kernels' span, and the end to the wait's return.
 *
 * The summary at the end of the report (figures only, not judged):
 *   throughput of requests with batch <= 8, in flight, graph / eager
 *   (the closed loop's ratio is printed beside it);
 *   p50 per request / the GPU busy time of its bucket's graph (the union
 *   of its kernels' intervals: with PDL they overlap), per bucket;
 *   p99 / p50 per bucket, after the first pass over the buckets;
 *   captures over the whole sequence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "json.h"
#include "serve.h"
#include "util.h"

#if BENCH_HAVE_PROF
#include "prof.h"
#endif

#define SERVE_REQUESTS 10000
#define SERVE_REQUESTS_QUICK 2000
#define SERVE_SAMPLE_EVERY 100 /* graph vs eager, bitwise */
#define SERVE_PROF_STEPS 50
#define SERVE_PROF_RECORDS (SERVE_PROF_STEPS * 64) /* a replay has 8 (small) to 18 records */
#define SERVE_BATCH_SEED 0x5e7e0001ULL
#define SERVE_INPUT_SEED 0x5e7e0002ULL
#define SERVE_MAX_SUMMARY 20
#define SERVE_PIPE_REPS 5 /* passes with requests in flight, per mode and set */

/*
 * graph: cgr's graphs, each request armed (CGR_ACQUIRE_ARM) before its inputs
 * are written; eager: every run eager; plain: graphs launched at
 * submission (cgr_step_acquire, a step that is not armable), the same
 * requests, for the comparison and for the profiled pass; graph-memcpy:
 * graph's way, but the inputs go in with memcpy into slot->inputs where
 * the others use cgr_step_write_input (streaming stores).
 */
enum { MODE_GRAPH = 0, MODE_EAGER, MODE_PLAIN, MODE_MEMCPY, MODES };
static const char *const mode_names[MODES] = {"graph", "eager", "plain", "graph-memcpy"};

/* Latency figures of one set of requests. */
typedef struct lat_stats {
    long n;
    long rows;
    double p50, p99, mean, sum_us;
    double req_per_s, rows_per_s;
} lat_stats;

typedef struct bucket_fig {
    lat_stats lat[MODES];        /* steady requests of this bucket */
    double launch_p50[MODES];    /* p50 of the launch call alone */
    double write_p50[MODES];     /* p50 of the input write, before the latency's start */
    int prof_ok;
    double busy_us, busy_union_us, kernels, memcpys;
    /*
     * Profiled pass, medians over its requests, on CUPTI's clock: the
     * request's latency, submission to first GPU record ("to GPU"), first
     * record's start to last record's end ("span"), last end to the wait's
     * return ("back"; the flag is written inside the last kernel, so it can
     * be below zero), and the span's idle gaps (span minus the union).
     */
    int split_ok;
    double prof_lat_us, to_gpu_us, span_us, back_us, gaps_us;
    /*
     * The same for armed requests (graph runtime), whose input kernel
     * starts before submission: a request owns the records that end inside
     * its [t0, t1]; "in" = submission to the input kernel's end (the gate
     * opening and the inputs crossing), "rest" = from there to the last end.
     */
    int armed_split_ok;
    double armed_lat_us, armed_in_us, armed_rest_us, armed_back_us;
} bucket_fig;

/* One figure of the summary. */
typedef struct summary_fig {
    char name[96];
    double value;
    int measured; /* 0: the figure is missing (no profiler, no request in the bucket) */
} summary_fig;

typedef struct serve_run {
    const bench_config *cfg;
    int n;                   /* requests */
    int *batch;              /* [n] */
    double *lat[MODES];      /* [n] us */
    double *launch_us[MODES];/* [n] host time inside cgr_step_launch */
    double *write_us[MODES]; /* [n] host time writing the inputs into the slot */
    unsigned char *action;   /* [n] graph run's cgr_run_action */
    float **sample;          /* [n / SAMPLE_EVERY + 1] graph outputs kept for the eager check */
    int steady_from;         /* first request after the first pass over the buckets */
    long samples_checked, sample_mismatches;
    int host_checked[SERVE_N_BUCKETS];
    long host_checks, host_mismatches;
    double host_worst_rel;
    double wall_s[MODES];
    cgr_step_stats shape[MODES];
    cgr_runtime_stats rts[MODES];
    lat_stats overall[MODES], overall_steady[MODES], small[MODES];
    serve_pipe_result pipe[MODES][2]; /* requests in flight: [0] steady, [1] steady batch <= 8;
                                         wall_us is the median pass's */
    uint64_t *pipe_hash[MODES];       /* [n / SERVE_PIPE_HASH_EVERY + 1], steady pass */
    long pipe_hashes_checked, pipe_hash_mismatches;
    int pipe_depth;                   /* requests in flight at most: the staging slots */
    bucket_fig bk[SERVE_N_BUCKETS];
    summary_fig summary[SERVE_MAX_SUMMARY];
    int n_summary;
    int prof_tried;
    char prof_note[512];
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
 * Figures of mode m's requests i in [from, n) that pass `keep` (bucket
 * index >= 0: only that bucket; max_batch > 0: only batches up to it).
 */
static int lat_figures(const serve_run *r, int m, int from, int bucket, int max_batch,
                       double *scratch, lat_stats *out)
{
    memset(out, 0, sizeof *out);
    long k = 0;
    for (int i = from; i < r->n; i++) {
        int B = r->batch[i];
        if ((bucket >= 0 && serve_bucket_index(B) != bucket) || (max_batch > 0 && B > max_batch))
            continue;
        scratch[k++] = r->lat[m][i];
        out->rows += B;
        out->sum_us += r->lat[m][i];
    }
    out->n = k;
    if (k == 0) {
        out->p50 = out->p99 = out->mean = out->req_per_s = out->rows_per_s = NAN;
        return 0;
    }
    /* Percentiles as every other cgr-bench figure computes them (timing.c). */
    stats_sort(scratch, (int)k);
    out->p50 = stats_percentile(scratch, (int)k, 0.50);
    out->p99 = stats_percentile(scratch, (int)k, 0.99);
    out->mean = out->sum_us / (double)k;
    out->req_per_s = (double)k / (out->sum_us * 1e-6);
    out->rows_per_s = (double)out->rows / (out->sum_us * 1e-6);
    return 0;
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
    if (worst > r->host_worst_rel)
        r->host_worst_rel = worst;
    r->host_checks++;
    if (bad >= 0 || fabs(sum - 1.0) > 1e-4) {
        r->host_mismatches++;
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
    double t_start = now_us();
    for (int i = 0; i < r->n; i++) {
        const int B = r->batch[i];
        cgr_slot slot;
        TRY(serve_acquire(srt, B, &slot));
        /* The request's rows arrive in host memory; the clock starts once they are in the slot. */
        rng_fill(&rng, req_in, (size_t)B * in_dim);
        if (m == MODE_GRAPH) {
            memcpy(row_first, req_in, sizeof row_first);
            memcpy(row_last, req_in + (size_t)(B - 1) * in_dim, sizeof row_last);
        }
        const double tw = now_us();
        TRY(serve_write_input(srt, &slot, req_in, (size_t)B * in_dim * sizeof(float)));

        const void *out = NULL;
        size_t bytes = 0;
        double t0 = now_us();
        r->write_us[m][i] = t0 - tw;
        CGR_CK(cgr_step_launch(srt->step, &slot));
        double t1 = now_us();
        CGR_CK(cgr_step_wait(srt->step, slot.ticket));
        if (!(out = bench_output(srt->step, slot.ticket, 0, &bytes)))
            return -1;
        r->lat[m][i] = now_us() - t0;
        r->launch_us[m][i] = t1 - t0;

        if (bytes != (size_t)B * C * sizeof(float)) {
            bench_error("W-serve %s request %d (B=%d): output of %zu bytes, expected %zu",
                        mode_names[m], i, B, bytes, (size_t)B * C * sizeof(float));
            return -1;
        }
        cgr_run_action a;
        CGR_CK(cgr_step_run_action(srt->step, slot.ticket, &a));
        if (m == MODE_GRAPH) {
            r->action[i] = (unsigned char)a;
            int bi = serve_bucket_index(B);
            if (a == CGR_RUN_REPLAY && !r->host_checked[bi]) {
                r->host_checked[bi] = 1;
                host_check_row(r, model, i, 0, row_first, out);
                host_check_row(r, model, i, B - 1, row_last,
                               (const float *)out + (size_t)(B - 1) * C);
            }
            if (is_sample(i)) {
                float *keep = malloc(bytes);
                if (!keep) {
                    bench_error("W-serve: out of host memory");
                    return -1;
                }
                memcpy(keep, out, bytes);
                r->sample[i / SERVE_SAMPLE_EVERY] = keep;
            }
        } else {
            if (m == MODE_EAGER && a != CGR_RUN_EAGER && a != CGR_RUN_WARMUP) {
                bench_error("W-serve eager request %d (B=%d) ran as %s", i, B,
                            cgr_run_action_name(a));
                return -1;
            }
            if (is_sample(i) && r->sample[i / SERVE_SAMPLE_EVERY]) {
                r->samples_checked++;
                if (memcmp(r->sample[i / SERVE_SAMPLE_EVERY], out, bytes) != 0) {
                    r->sample_mismatches++;
                    bench_error("W-serve request %d (B=%d): graph and %s outputs differ", i,
                                B, mode_names[m]);
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

static double pipe_req_per_s(const serve_pipe_result *p)
{
    return (double)p->n / (p->wall_us * 1e-6);
}

static double pipe_rows_per_s(const serve_pipe_result *p)
{
    return (double)p->rows / (p->wall_us * 1e-6);
}

/* The first pass over the buckets ends with the graph run's last non-replay. */
static void find_steady(serve_run *r)
{
    r->steady_from = 0;
    for (int i = 0; i < r->n; i++)
        if (r->action[i] != CGR_RUN_REPLAY)
            r->steady_from = i + 1;
}

/*
 * The steady requests, then those of batch <= 8, with requests in flight,
 * in both modes; the graph runtime must only replay (its first pass
 * captured every bucket), the eager one never. Outputs: the hashed rows of
 * the steady pass, graph against eager, bit for bit.
 */
static int pipe_passes(serve_run *r, const serve_model *model, serve_rt rts[MODES])
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
    r->pipe_depth = rts[MODE_GRAPH].slots;
    /*
     * A pass over the batch <= 8 requests lasts ~40 ms, short enough for
     * one hiccup of the host to move it by 10 %: each pass runs
     * SERVE_PIPE_REPS times, the modes taking turns, and the median counts.
     */
    double wall[MODES][2][SERVE_PIPE_REPS];
    for (int rep = 0; rep < SERVE_PIPE_REPS && rc == 0; rep++)
        for (int k = 0; k < 2 && rc == 0; k++)
            for (int m = 0; m < MODES && rc == 0; m++) {
                serve_pipe_result *p = &r->pipe[m][k];
                rc = serve_pipe_pass(&rts[m], r->batch, r->steady_from, r->n, k ? 8 : 0, pool,
                                     in_dim, C, rep == 0 && k == 0 ? r->pipe_hash[m] : NULL, p);
                if (rc == 0 && p->replays != (m == MODE_EAGER ? 0 : p->n)) {
                    bench_error("W-serve %s pass with requests in flight: %ld of %ld requests "
                                "replayed a graph",
                                mode_names[m], p->replays, p->n);
                    rc = -1;
                }
                wall[m][k][rep] = p->wall_us;
            }
    /* Every pass of a set runs the same requests, so the median wall gives the median rates. */
    for (int m = 0; m < MODES && rc == 0; m++)
        for (int k = 0; k < 2; k++) {
            stats_sort(wall[m][k], SERVE_PIPE_REPS);
            r->pipe[m][k].wall_us = stats_percentile(wall[m][k], SERVE_PIPE_REPS, 0.5);
        }
    free(pool);
    for (int i = r->steady_from; rc == 0 && i < r->n; i++) {
        if (i % SERVE_PIPE_HASH_EVERY)
            continue;
        const int j = i / SERVE_PIPE_HASH_EVERY;
        for (int m = 0; m < MODES; m++) {
            if (m == MODE_EAGER)
                continue;
            r->pipe_hashes_checked++;
            if (r->pipe_hash[m][j] != r->pipe_hash[MODE_EAGER][j]) {
                r->pipe_hash_mismatches++;
                bench_error("W-serve request %d (B=%d), requests in flight: %s and eager "
                            "outputs differ", i, r->batch[i], mode_names[m]);
            }
        }
    }
    return rc;
}

/* ---- GPU busy time per bucket (a separate, profiled pass) -------------------------------- */

#if BENCH_HAVE_PROF
/* One request as the timed pass runs it; t (optional) gets CUPTI's clock at submission and after the wait. */
static int one_request(serve_rt *srt, prof *p, bench_rng *rng, int B, int in_dim,
                       cgr_run_action *a, uint64_t t[2])
{
    static float req_in[SERVE_MAX_BATCH * 1024];
    cgr_slot slot;
    TRY(serve_acquire(srt, B, &slot));
    rng_fill(rng, req_in, (size_t)B * in_dim);
    TRY(serve_write_input(srt, &slot, req_in, (size_t)B * in_dim * sizeof(float)));
    if (t && prof_now(p, &t[0]) != PROF_OK)
        return -1;
    CGR_CK(cgr_step_launch(srt->step, &slot));
    CGR_CK(cgr_step_wait(srt->step, slot.ticket));
    if (t && prof_now(p, &t[1]) != PROF_OK)
        return -1;
    CGR_CK(cgr_step_run_action(srt->step, slot.ticket, a));
    return 0;
}

/*
 * Where each profiled request's time went (bucket_fig's split figures):
 * the window's records are in start order and the requests ran one at a
 * time, so request k owns the records that start inside its [t0, t1].
 */
static void split_armed(bucket_fig *f, const uint64_t (*t)[2], int n, const uint64_t *rs,
                        const uint64_t *re, size_t nrec)
{
    double v[4][SERVE_PROF_STEPS];
    int m = 0;
    for (int k = 0; k < n; k++) {
        uint64_t first_end = 0, last = 0;
        for (size_t i = 0; i < nrec; i++) {
            if (re[i] < t[k][0] || re[i] > t[k][1])
                continue;
            if (first_end == 0 || re[i] < first_end)
                first_end = re[i];
            last = re[i] > last ? re[i] : last;
        }
        if (first_end == 0)
            continue;
        v[0][m] = (double)(t[k][1] - t[k][0]) / 1e3;
        v[1][m] = (double)(first_end - t[k][0]) / 1e3;
        v[2][m] = (double)(last - first_end) / 1e3;
        v[3][m] = ((double)t[k][1] - (double)last) / 1e3;
        m++;
    }
    if (m < n / 2)
        return;
    double *dst[4] = {&f->armed_lat_us, &f->armed_in_us, &f->armed_rest_us, &f->armed_back_us};
    for (int c = 0; c < 4; c++) {
        stats_sort(v[c], m);
        *dst[c] = stats_percentile(v[c], m, 0.50);
    }
    f->armed_split_ok = 1;
}

static void split_latency(bucket_fig *f, const uint64_t (*t)[2], int n, const uint64_t *rs,
                          const uint64_t *re, size_t nrec)
{
    double v[5][SERVE_PROF_STEPS];
    int m = 0;
    size_t i = 0;
    for (int k = 0; k < n; k++) {
        while (i < nrec && rs[i] < t[k][0])
            i++;
        if (i >= nrec || rs[i] > t[k][1])
            continue;
        uint64_t first = rs[i], last = re[i], cur_s = rs[i], cur_e = re[i], u = 0;
        for (i++; i < nrec && rs[i] <= t[k][1]; i++) {
            if (rs[i] > cur_e) {
                u += cur_e - cur_s;
                cur_s = rs[i];
            }
            cur_e = re[i] > cur_e ? re[i] : cur_e;
            last = re[i] > last ? re[i] : last;
        }
        u += cur_e - cur_s;
        v[0][m] = (double)(t[k][1] - t[k][0]) / 1e3;
        v[1][m] = (double)(first - t[k][0]) / 1e3;
        v[2][m] = (double)(last - first) / 1e3;
        v[3][m] = ((double)t[k][1] - (double)last) / 1e3;
        v[4][m] = (double)(last - first - u) / 1e3;
        m++;
    }
    if (m < n / 2)
        return; /* records missing: no figures rather than wrong ones */
    double *dst[5] = {&f->prof_lat_us, &f->to_gpu_us, &f->span_us, &f->back_us, &f->gaps_us};
    for (int c = 0; c < 5; c++) {
        stats_sort(v[c], m);
        *dst[c] = stats_percentile(v[c], m, 0.50);
    }
    f->split_ok = 1;
}

/*
 * One runtime's profiled requests per bucket. armed = 0 (the plain
 * runtime): busy figures and the plain split; armed = 1: the armed split.
 */
static int profile_runtime(serve_run *r, const serve_model *model, serve_rt *srt, prof *p,
                           int armed)
{
    bench_rng rng;
    rng_seed(&rng, SERVE_INPUT_SEED ^ 0xb05eULL);
    uint64_t s = SERVE_BATCH_SEED ^ 0xb05eULL;
    static uint64_t rs[SERVE_PROF_RECORDS], re[SERVE_PROF_RECORDS];
    int rc = 0;
    for (int b = 0; b < SERVE_N_BUCKETS && rc == 0; b++) {
        const int lo = b == 0 ? 1 : (int)serve_buckets[b - 1] + 1, hi = (int)serve_buckets[b];
        cgr_run_action a;
        /* One request outside the window keeps the previous window's flush out of this one. */
        if ((rc = one_request(srt, p, &rng, hi, model->cfg.in_dim, &a, NULL)) != 0)
            break;
        char label[64];
        snprintf(label, sizeof label, "W-serve %sbucket %d", armed ? "armed " : "", hi);
        if (prof_begin(p, label) != PROF_OK) {
            snprintf(r->prof_note, sizeof r->prof_note, "profiling failed: %s", prof_errmsg(p));
            break;
        }
        int replays = 0;
        uint64_t t[SERVE_PROF_STEPS][2];
        for (int k = 0; k < SERVE_PROF_STEPS && rc == 0; k++) {
            int B = lo + (int)(next_u64(&s) % (uint64_t)(hi - lo + 1));
            rc = one_request(srt, p, &rng, B, model->cfg.in_dim, &a, t[k]);
            replays += a == CGR_RUN_REPLAY;
        }
        if (rc != 0 || bench_cuda_failed(cudaDeviceSynchronize(), "cudaDeviceSynchronize",
                                         __FILE__, __LINE__)) {
            rc = -1;
            break;
        }
        prof_window w;
        if (prof_end(p, SERVE_PROF_STEPS, &w) != PROF_OK) {
            snprintf(r->prof_note, sizeof r->prof_note, "profiling %s failed: %s", label,
                     prof_errmsg(p));
            continue;
        }
        if (replays != SERVE_PROF_STEPS) {
            bench_error("W-serve bucket %d: %d of %d profiled requests replayed", hi, replays,
                        SERVE_PROF_STEPS);
            rc = -1;
            break;
        }
        bucket_fig *f = &r->bk[b];
        size_t nrec = 0;
        const int have = prof_intervals(p, rs, re, SERVE_PROF_RECORDS, &nrec) == PROF_OK;
        if (armed) {
            if (have)
                split_armed(f, (const uint64_t (*)[2])t, SERVE_PROF_STEPS, rs, re, nrec);
            if (r->cfg->trace_path)
                prof_trace_add(p, label, SERVE_N_BUCKETS + b + 1);
            continue;
        }
        f->prof_ok = 1;
        f->busy_us = w.busy_us;
        f->busy_union_us = w.busy_union_us;
        f->kernels = w.kernels_per_step;
        f->memcpys = w.memcpys_per_step;
        if (have)
            split_latency(f, (const uint64_t (*)[2])t, SERVE_PROF_STEPS, rs, re, nrec);
        if (w.dropped)
            snprintf(r->prof_note, sizeof r->prof_note,
                     "CUPTI dropped %llu records in bucket %d: its busy time is too low",
                     (unsigned long long)w.dropped, hi);
        if (r->cfg->trace_path)
            prof_trace_add(p, label, b + 1);
    }
    return rc;
}

static int profile_buckets(serve_run *r, const serve_model *model, serve_rt rts[MODES])
{
    prof *p = NULL;
    char err[256];
    r->prof_tried = 1;
    if (prof_create(&p, err, sizeof err) != PROF_OK) {
        snprintf(r->prof_note, sizeof r->prof_note, "no GPU busy times: %s", err);
        return 0;
    }
    /* Busy time on the runtime without gates: the graph's work alone. */
    int rc = profile_runtime(r, model, &rts[MODE_PLAIN], p, 0);
    if (rc == 0)
        rc = profile_runtime(r, model, &rts[MODE_GRAPH], p, 1);
    if (rc == 0 && r->cfg->trace_path && prof_trace_write(p, r->cfg->trace_path) != PROF_OK)
        fprintf(stderr, "cgr-bench: writing the trace %s failed: %s\n", r->cfg->trace_path,
                prof_errmsg(p));
    prof_destroy(&p);
    return rc;
}
#else
static int profile_buckets(serve_run *r, const serve_model *model, serve_rt rts[MODES])
{
    (void)model;
    (void)rts;
    r->prof_tried = 1;
    snprintf(r->prof_note, sizeof r->prof_note, "built without CUPTI: no GPU busy times");
    return 0;
}
#endif

/* ---- figures, summary and the report ------------------------------------------------------ */

static void add_summary(serve_run *r, const char *name, double value, int measured)
{
    if (r->n_summary >= SERVE_MAX_SUMMARY)
        return;
    summary_fig *f = &r->summary[r->n_summary++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->value = value;
    f->measured = measured && isfinite(value);
}

/* Median of per-request figures v over the steady requests of bucket b. */
static double bucket_p50(const serve_run *r, int b, const double *v, double *scratch)
{
    int k = 0;
    for (int i = r->steady_from; i < r->n; i++)
        if (serve_bucket_index(r->batch[i]) == b)
            scratch[k++] = v[i];
    stats_sort(scratch, k);
    return k ? stats_percentile(scratch, k, 0.50) : NAN;
}

static int compute_figures(serve_run *r)
{
    double *scratch = malloc((size_t)r->n * sizeof *scratch);
    if (!scratch) {
        bench_error("W-serve: out of host memory");
        return -1;
    }
    for (int m = 0; m < MODES; m++) {
        lat_figures(r, m, 0, -1, 0, scratch, &r->overall[m]);
        lat_figures(r, m, r->steady_from, -1, 0, scratch, &r->overall_steady[m]);
        lat_figures(r, m, r->steady_from, -1, 8, scratch, &r->small[m]);
        for (int b = 0; b < SERVE_N_BUCKETS; b++)
            lat_figures(r, m, r->steady_from, b, 0, scratch, &r->bk[b].lat[m]);
    }
    for (int m = 0; m < MODES; m++)
        for (int b = 0; b < SERVE_N_BUCKETS; b++) {
            r->bk[b].launch_p50[m] = bucket_p50(r, b, r->launch_us[m], scratch);
            r->bk[b].write_p50[m] = bucket_p50(r, b, r->write_us[m], scratch);
        }
    free(scratch);

    char name[96];
    /*
     * Throughput is summarised with requests in flight, as a serving loop with
     * a queue runs them; the closed loop's ratio (1 / latency) is printed too.
     */
    add_summary(r, "throughput, batch <= 8, in flight: graph / eager",
                pipe_req_per_s(&r->pipe[MODE_GRAPH][1]) / pipe_req_per_s(&r->pipe[MODE_EAGER][1]),
                1);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *f = &r->bk[b];
        /*
         * Against the union of kernel intervals: with PDL, kernels overlap and
         * the summed busy time counts the overlap twice, which puts the ratio
         * below 1 (0.8 measured on the H200). Without PDL the two agree.
         */
        snprintf(name, sizeof name, "bucket %2lld: p50 / GPU busy-u",
                 (long long)serve_buckets[b]);
        add_summary(r, name, f->lat[MODE_GRAPH].p50 / f->busy_union_us, f->prof_ok);
    }
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const lat_stats *l = &r->bk[b].lat[MODE_GRAPH];
        snprintf(name, sizeof name, "bucket %2lld: p99 / p50 (steady)",
                 (long long)serve_buckets[b]);
        add_summary(r, name, l->p99 / l->p50, l->n > 0);
    }
    add_summary(r, "captures", (double)r->shape[MODE_GRAPH].captures, 1);
    return 0;
}

static void print_lat_row(const char *what, const lat_stats *g, const lat_stats *e)
{
    printf("  %-22s %6ld  %9.1f %9.1f  %9.1f %9.1f  %9.0f %9.0f  %11.0f %11.0f  %6.2f\n", what,
           g->n, g->p50, g->p99, e->p50, e->p99, g->req_per_s, e->req_per_s, g->rows_per_s,
           e->rows_per_s, g->req_per_s / e->req_per_s);
}

static void serve_report(const serve_run *r, const bench_results *res)
{
    const cgr_step_stats *g = &r->shape[MODE_GRAPH];
    printf("\nW-serve: %d requests, batch uniform in 1..64 (seed %#llx), buckets "
           "{1,2,4,8,16,32,64}, fresh inputs per request; closed loop; latency = launch + wait "
           "+ output, in us%s\n",
           r->n, (unsigned long long)SERVE_BATCH_SEED,
           r->cfg->no_pdl ? "; PDL off (--no-pdl)" : "; PDL on");
    printf("  first pass over the buckets: requests 0..%d (left out of the steady figures)\n",
           r->steady_from - 1);
    printf("  %-22s %6s  %9s %9s  %9s %9s  %9s %9s  %11s %11s  %6s\n", "requests", "n",
           "graph p50", "p99", "eager p50", "p99", "graph r/s", "eager r/s", "graph rows/s",
           "eager rows/s", "speed");
    print_lat_row("all", &r->overall[MODE_GRAPH], &r->overall[MODE_EAGER]);
    print_lat_row("steady", &r->overall_steady[MODE_GRAPH], &r->overall_steady[MODE_EAGER]);
    print_lat_row("steady, batch <= 8", &r->small[MODE_GRAPH], &r->small[MODE_EAGER]);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        char what[32];
        snprintf(what, sizeof what, "steady, bucket %lld", (long long)serve_buckets[b]);
        print_lat_row(what, &r->bk[b].lat[MODE_GRAPH], &r->bk[b].lat[MODE_EAGER]);
    }
    printf("\n  requests in flight (up to %d; inputs copied from a pool of rows; throughput = "
           "requests / wall, copies and output reads included; median of %d passes)\n",
           r->pipe_depth, SERVE_PIPE_REPS);
    printf("  %-22s %6s  %9s %9s  %11s %11s  %6s\n", "requests", "n", "graph r/s", "eager r/s",
           "graph rows/s", "eager rows/s", "speed");
    for (int k = 0; k < 2; k++) {
        const serve_pipe_result *pg = &r->pipe[MODE_GRAPH][k], *pe = &r->pipe[MODE_EAGER][k];
        printf("  %-22s %6ld  %9.0f %9.0f  %11.0f %11.0f  %6.2f\n",
               k ? "steady, batch <= 8" : "steady", pg->n, pipe_req_per_s(pg), pipe_req_per_s(pe),
               pipe_rows_per_s(pg), pipe_rows_per_s(pe), pipe_req_per_s(pg) / pipe_req_per_s(pe));
    }
    printf("  closed loop (one at a time), batch <= 8: graph / eager %.2f\n",
           r->small[MODE_GRAPH].req_per_s / r->small[MODE_EAGER].req_per_s);
    {
        const serve_pipe_result *pp = &r->pipe[MODE_PLAIN][1], *pe = &r->pipe[MODE_EAGER][1];
        printf("  plain (graphs launched at submission), batch <= 8, in flight: %.0f r/s, "
               "%.2f x eager\n",
               pipe_req_per_s(pp), pipe_req_per_s(pp) / pipe_req_per_s(pe));
    }
    printf("\n  armed (CGR_ACQUIRE_ARM before the inputs are written) against plain (graph "
           "launched at submission), same requests, steady;\n  write = the input write before "
           "the clock starts (cgr_step_write_input; memcpy: memcpy into slot->inputs, armed)\n");
    printf("  %6s  %9s %9s %7s %6s  %9s %9s %7s %6s  %11s  %10s %6s %10s\n", "bucket",
           "armed p50", "p99", "launch", "write", "plain p50", "p99", "launch", "write",
           "armed/plain", "memcpy p50", "write", "armed/mcpy");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *f = &r->bk[b];
        const lat_stats *a = &f->lat[MODE_GRAPH], *q = &f->lat[MODE_PLAIN],
                        *c = &f->lat[MODE_MEMCPY];
        printf("  %6lld  %9.1f %9.1f %7.2f %6.2f  %9.1f %9.1f %7.2f %6.2f  %11.3f  %10.1f %6.2f "
               "%10.3f\n",
               (long long)serve_buckets[b], a->p50, a->p99, f->launch_p50[MODE_GRAPH],
               f->write_p50[MODE_GRAPH], q->p50, q->p99, f->launch_p50[MODE_PLAIN],
               f->write_p50[MODE_PLAIN], a->p50 / q->p50, c->p50, f->write_p50[MODE_MEMCPY],
               a->p50 / c->p50);
    }
    printf("\n  per bucket graph, profiled pass (%d replays each, plain runtime: no gate): GPU "
           "busy per replay\n",
           SERVE_PROF_STEPS);
    printf("  (graph p50: armed requests; plain: the same, launched at submission)\n");
    printf("  %6s  %9s %9s  %8s %8s  %9s  %10s %10s %11s\n", "bucket", "busy", "busy-u",
           "kernels", "memcpys", "graph p50", "p50/busy", "p50/busy-u", "plain/busy-u");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *f = &r->bk[b];
        if (!f->prof_ok) {
            printf("  %6lld  %9s\n", (long long)serve_buckets[b], "-");
            continue;
        }
        printf("  %6lld  %9.1f %9.1f  %8.1f %8.1f  %9.1f  %10.3f %10.3f %11.3f\n",
               (long long)serve_buckets[b], f->busy_us, f->busy_union_us, f->kernels, f->memcpys,
               f->lat[MODE_GRAPH].p50, f->lat[MODE_GRAPH].p50 / f->busy_us,
               f->lat[MODE_GRAPH].p50 / f->busy_union_us,
               f->lat[MODE_PLAIN].p50 / f->busy_union_us);
    }
    printf("\n  where a profiled (plain) request's time goes (medians, CUPTI's clock; CUPTI slows "
           "the launch):\n  to GPU = submission to the first kernel's start, span = first start to "
           "last end,\n  gaps = idle time inside the span, back = last end to the wait's "
           "return\n");
    printf("  %6s  %9s  %7s %7s %7s %7s\n", "bucket", "latency", "to GPU", "span", "gaps",
           "back");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *f = &r->bk[b];
        if (f->split_ok)
            printf("  %6lld  %9.1f  %7.2f %7.2f %7.2f %7.2f\n", (long long)serve_buckets[b],
                   f->prof_lat_us, f->to_gpu_us, f->span_us, f->gaps_us, f->back_us);
        else
            printf("  %6lld  %9s\n", (long long)serve_buckets[b], "-");
    }
    printf("\n  the same for armed requests (graph runtime; the input kernel starts before "
           "submission):\n  in = submission to the input kernel's end, rest = from there to "
           "the last end\n");
    printf("  %6s  %9s  %7s %7s %7s\n", "bucket", "latency", "in", "rest", "back");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *f = &r->bk[b];
        if (f->armed_split_ok)
            printf("  %6lld  %9.1f  %7.2f %7.2f %7.2f\n", (long long)serve_buckets[b],
                   f->armed_lat_us, f->armed_in_us, f->armed_rest_us, f->armed_back_us);
        else
            printf("  %6lld  %9s\n", (long long)serve_buckets[b], "-");
    }
    if (r->prof_note[0])
        printf("  %s\n", r->prof_note);
    printf("\n  graph runtime: %llu captures (%llu by update in place), %llu evictions, %llu "
           "eager runs; arena %.3f MiB (largest scratch plan %.3f MiB); capture %.0f us + "
           "instantiate %.0f us in all\n",
           (unsigned long long)g->captures, (unsigned long long)g->updates,
           (unsigned long long)g->evictions, (unsigned long long)g->eager_runs,
           (double)g->arena_bytes / 1048576.0, (double)g->scratch_peak / 1048576.0,
           g->capture_us, g->instantiate_us);
    printf("  eager runtime: arena %.3f MiB\n",
           (double)r->shape[MODE_EAGER].arena_bytes / 1048576.0);
    printf("  loop wall time (input generation and checks included): graph %.2f s, eager "
           "%.2f s\n",
           r->wall_s[MODE_GRAPH], r->wall_s[MODE_EAGER]);
    printf("  checks: %ld sampled outputs graph vs eager bitwise, %ld differ; %ld rows against "
           "float64, %ld wrong (worst relative error %.2e)\n",
           r->samples_checked, r->sample_mismatches, r->host_checks, r->host_mismatches,
           r->host_worst_rel);
    printf("  requests in flight: %ld hashed outputs (first and last row) graph vs eager, %ld "
           "differ\n",
           r->pipe_hashes_checked, r->pipe_hash_mismatches);
    int measured = 0;
    printf("\n  summary, on %s:\n", res->device_name);
    for (int i = 0; i < r->n_summary; i++) {
        const summary_fig *f = &r->summary[i];
        if (!f->measured)
            printf("    %-44s %8s  (not measured)\n", f->name, "-");
        else
            printf("    %-44s %8.3f\n", f->name, f->value);
        measured += f->measured;
    }
    printf("  %d of %d figures measured\n", measured, r->n_summary);
}

static void json_lat(json_writer *w, const char *key, const lat_stats *l)
{
    json_begin_object(w, key);
    json_int(w, "requests", l->n);
    json_int(w, "rows", l->rows);
    json_number(w, "p50_us", l->p50);
    json_number(w, "p99_us", l->p99);
    json_number(w, "mean_us", l->mean);
    json_number(w, "requests_per_s", l->req_per_s);
    json_number(w, "rows_per_s", l->rows_per_s);
    json_end_object(w);
}

static void json_modes(json_writer *w, const char *key, const lat_stats *l)
{
    json_begin_object(w, key);
    for (int m = 0; m < MODES; m++)
        json_lat(w, mode_names[m], &l[m]);
    json_end_object(w);
}

static int write_json(const serve_run *r, const bench_results *res, int pass)
{
    json_writer w;
    TRY(report_suite_json_open(&w, r->cfg->json_path, "serve", res->device_name));
    json_int(&w, "requests", r->n);
    json_bool(&w, "quick", r->cfg->quick);
    json_bool(&w, "pdl", !r->cfg->no_pdl);
    json_int(&w, "batch_seed", (long long)SERVE_BATCH_SEED);
    json_begin_array(&w, "buckets");
    for (int b = 0; b < SERVE_N_BUCKETS; b++)
        json_int(&w, NULL, serve_buckets[b]);
    json_end_array(&w);
    json_int(&w, "steady_from", r->steady_from);
    json_modes(&w, "all", r->overall);
    json_modes(&w, "steady", r->overall_steady);
    json_modes(&w, "steady_batch_le8", r->small);
    json_begin_object(&w, "in_flight");
    json_int(&w, "depth", r->pipe_depth);
    for (int k = 0; k < 2; k++) {
        json_begin_object(&w, k ? "steady_batch_le8" : "steady");
        for (int m = 0; m < MODES; m++) {
            json_begin_object(&w, mode_names[m]);
            json_int(&w, "requests", r->pipe[m][k].n);
            json_number(&w, "req_per_s", pipe_req_per_s(&r->pipe[m][k]));
            json_number(&w, "rows_per_s", pipe_rows_per_s(&r->pipe[m][k]));
            json_end_object(&w);
        }
        json_end_object(&w);
    }
    json_end_object(&w);
    json_begin_array(&w, "per_bucket");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const bucket_fig *bf = &r->bk[b];
        json_begin_object(&w, NULL);
        json_int(&w, "bucket", serve_buckets[b]);
        json_modes(&w, "steady", bf->lat);
        json_begin_object(&w, "launch_call_p50_us");
        for (int m = 0; m < MODES; m++)
            json_number(&w, mode_names[m], bf->launch_p50[m]);
        json_end_object(&w);
        json_begin_object(&w, "input_write_p50_us");
        for (int m = 0; m < MODES; m++)
            json_number(&w, mode_names[m], bf->write_p50[m]);
        json_end_object(&w);
        if (bf->prof_ok) {
            json_number(&w, "busy_us", bf->busy_us);
            json_number(&w, "busy_union_us", bf->busy_union_us);
            json_number(&w, "kernels_per_replay", bf->kernels);
            json_number(&w, "memcpys_per_replay", bf->memcpys);
            json_number(&w, "p50_over_busy", bf->lat[MODE_GRAPH].p50 / bf->busy_us);
            json_number(&w, "p50_over_busy_union", bf->lat[MODE_GRAPH].p50 / bf->busy_union_us);
            json_number(&w, "plain_p50_over_busy_union",
                        bf->lat[MODE_PLAIN].p50 / bf->busy_union_us);
            if (bf->split_ok) {
                json_begin_object(&w, "profiled_split_us");
                json_number(&w, "latency", bf->prof_lat_us);
                json_number(&w, "to_gpu", bf->to_gpu_us);
                json_number(&w, "span", bf->span_us);
                json_number(&w, "gaps", bf->gaps_us);
                json_number(&w, "back", bf->back_us);
                json_end_object(&w);
            }
        } else {
            json_null(&w, "busy_us");
        }
        json_end_object(&w);
    }
    json_end_array(&w);
    const cgr_step_stats *g = &r->shape[MODE_GRAPH];
    json_begin_object(&w, "graph_shape_stats");
    json_int(&w, "runs", (long long)g->runs);
    json_int(&w, "hits", (long long)(g->replays - g->captures));
    json_int(&w, "misses", (long long)(g->runs - (g->replays - g->captures)));
    json_int(&w, "warmup_runs", (long long)g->warmup_runs);
    json_int(&w, "captures", (long long)g->captures);
    json_int(&w, "updates", (long long)g->updates);
    json_int(&w, "update_failures", (long long)g->update_failures);
    json_int(&w, "evictions", (long long)g->evictions);
    json_int(&w, "eager_runs", (long long)g->eager_runs);
    json_number(&w, "capture_us", g->capture_us);
    json_number(&w, "instantiate_us", g->instantiate_us);
    json_number(&w, "update_us", g->update_us);
    json_int(&w, "arena_bytes", (long long)g->arena_bytes);
    json_int(&w, "scratch_peak", (long long)g->scratch_peak);
    json_end_object(&w);
    json_int(&w, "graph_arena_reserved", (long long)r->rts[MODE_GRAPH].arena_reserved);
    json_int(&w, "graph_arena_planned", (long long)r->rts[MODE_GRAPH].arena_planned);
    json_int(&w, "eager_arena_bytes", (long long)r->shape[MODE_EAGER].arena_bytes);
    json_number(&w, "graph_wall_s", r->wall_s[MODE_GRAPH]);
    json_number(&w, "eager_wall_s", r->wall_s[MODE_EAGER]);
    json_int(&w, "samples_checked", r->samples_checked);
    json_int(&w, "sample_mismatches", r->sample_mismatches);
    json_int(&w, "host_checks", r->host_checks);
    json_int(&w, "host_mismatches", r->host_mismatches);
    json_number(&w, "host_worst_rel", r->host_worst_rel);
    json_begin_array(&w, "summary");
    for (int i = 0; i < r->n_summary; i++) {
        const summary_fig *f = &r->summary[i];
        json_begin_object(&w, NULL);
        json_string(&w, "name", f->name);
        json_number(&w, "value", f->value);
        json_bool(&w, "measured", f->measured);
        json_end_object(&w);
    }
    json_end_array(&w);
    json_bool(&w, "pass", pass);
    return report_suite_json_close(&w, r->cfg->json_path);
}

/* ---- the suite ------------------------------------------------------------------------------ */

static int serve_body(serve_run *r, const serve_model *model, serve_rt rts[MODES],
                      const bench_results *res)
{
    for (int m = 0; m < MODES; m++) {
        TRY(serve_rt_create(&rts[m], model, r->cfg->device, m != MODE_EAGER, !r->cfg->no_pdl,
                            m != MODE_PLAIN));
        rts[m].memcpy_inputs = m == MODE_MEMCPY;
        char label[32];
        snprintf(label, sizeof label, "serve: %s pass", mode_names[m]);
        /* A generous 2 ms a request on top of the base: a hang still shows within minutes. */
        watchdog_arm(label, r->cfg->timeout_s + (unsigned)(r->n / 500));
        int rc = run_pass(r, model, &rts[m], m);
        watchdog_disarm();
        TRY(rc);
        fprintf(stderr, "cgr-bench: serve %s pass: %d requests in %.2f s\n", mode_names[m], r->n,
                r->wall_s[m]);
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
    serve_report(r, res);
    if (r->cfg->stats)
        for (int m = 0; m < MODES; m++) {
            /* Runtime, step and shape counters, and every shape with its replays and last use. */
            printf("\ncgr stats, W-serve %s:\n", mode_names[m]);
            bench_print_stats(rts[m].rt, (const cgr_step *const *)&rts[m].step, 1);
        }
    return 0;
}

int serve_suite(const bench_config *cfg, const bench_results *res)
{
    static serve_run r; /* large: off the stack */
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.n = cfg->quick ? SERVE_REQUESTS_QUICK : SERVE_REQUESTS;
    serve_model model;
    serve_rt rts[MODES];
    memset(rts, 0, sizeof rts);
    int rc = 1, body = -1;
    const int n_samples = r.n / SERVE_SAMPLE_EVERY + 1;
    r.batch = malloc((size_t)r.n * sizeof *r.batch);
    r.action = malloc((size_t)r.n);
    r.sample = calloc((size_t)n_samples, sizeof *r.sample);
    for (int m = 0; m < MODES; m++)
        r.lat[m] = malloc((size_t)r.n * sizeof *r.lat[m]);
    int alloc_ok = r.batch && r.action && r.sample;
    for (int m = 0; m < MODES; m++) {
        r.launch_us[m] = malloc((size_t)r.n * sizeof *r.launch_us[m]);
        r.write_us[m] = malloc((size_t)r.n * sizeof *r.write_us[m]);
        r.pipe_hash[m] = calloc((size_t)(r.n / SERVE_PIPE_HASH_EVERY + 1), sizeof(uint64_t));
        alloc_ok = alloc_ok && r.lat[m] && r.launch_us[m] && r.write_us[m] && r.pipe_hash[m];
    }
    if (!alloc_ok) {
        bench_error("W-serve: out of host memory");
        goto out;
    }
    if (serve_model_init(&model) != 0)
        goto out;
    make_batches(&r);
    body = serve_body(&r, &model, rts, res);
    int pass = body == 0 && r.sample_mismatches == 0 && r.host_mismatches == 0 &&
               r.samples_checked > 0 && r.host_checks > 0 && r.pipe_hash_mismatches == 0 &&
               r.pipe_hashes_checked > 0;
    if (body == 0)
        printf("serve: %s\n", pass ? "PASS (every checked output right)"
                                   : "FAIL (outputs differ or were not checked)");
    if (cfg->json_path && body == 0 && write_json(&r, res, pass) != 0)
        pass = 0;
    rc = pass ? 0 : 1;
    serve_model_free(&model);
out:
    if (rc != 0 && body != 0)
        fprintf(stderr, "cgr-bench: serve failed: %s\n", bench_last_error());
    for (int m = 0; m < MODES; m++) {
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
    free(r.batch);
    return rc;
}
