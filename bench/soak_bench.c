/*
 * cgr-bench soak: a million replays on one runtime, looking for slow leaks
 * and silent corruption.
 *
 * The workload is a two-layer MLP forward pass (D = 256, weights in
 * persistent memory, the hidden layer in scratch) as one step with a
 * dynamic batch (buckets 1, 4, 16, 64), run at true batches 1, 3, 13 and
 * 50, so three of the four pad their input. Every step gets fresh random
 * inputs, written straight into the acquired pinned slot; the batch
 * changes every SOAK_PHASE steps. The host fills step k + 1 while the GPU
 * runs step k.
 *
 * Changing shape. The graph runtime caches two graphs per step, so every
 * change to a bucket not among the last two used warms that shape up
 * again, evicts the least recently used graph and updates its executable
 * in place (docs/shapes.md): a million runs go through about a hundred
 * evictions and updates, which is where a leak would show.
 *
 * What is checked:
 * - leaks: host RSS (/proc/self/statm), device memory in use
 *   (cudaMemGetInfo) and pinned bytes (cgr_runtime_get_stats), sampled
 *   after warm-up, every SOAK_SAMPLE steps and at the end; growth from
 *   after warm-up to the end above 1 MiB on any of them fails;
 * - corruption: every SOAK_CHECK-th output is compared bit for bit with an
 *   eager run (a second runtime, cgr_options.capture = 0) of the same
 *   inputs; in warm-up both are also compared with the host. The kernels
 *   are deterministic (soak_kernels.cu), so any difference fails;
 * - fallbacks: no run after the warm-up may go eagerly. With
 *   CGR_FROZEN_RECHECK set, the graphs are also rechecked all along
 *   (cgr_options.frozen_recheck), which this suite then soaks too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "soak.h"
#include "util.h"

#define SOAK_D 256
#define SOAK_PHASE 10000L   /* steps between shape changes */
#define SOAK_CHECK 10000L   /* every this many steps one output is checked */
#define SOAK_SAMPLE 100000L /* steps between memory samples */
#define SOAK_WARMUP 100     /* warm-up steps per shape */

static const int64_t soak_buckets[SOAK_SHAPES] = {1, 4, 16, 64};
/* The true batch run in each bucket: all but the first pad. */
static const int soak_batches[SOAK_SHAPES] = {1, 3, 13, 50};
/* Graphs the graph runtime keeps: fewer than the shapes, so they rotate. */
#define SOAK_CACHE 2

/* Weights, shared by every step of a runtime (persistent allocations). */
typedef struct soak_model {
    float *w1, *b1, *w2, *b2;
} soak_model;

/* x[B,D] -> h = relu(x W1 + b1) (scratch) -> y = h W2 + b2. */
static cgr_status soak_step_fn(cgr_ctx *ctx, void *user)
{
    const soak_model *m = user;
    const cgr_tensor_desc *d;
    cgr_stream st;
    float *x, *y, *h;
    cgr_status s;
    if ((s = cgr_ctx_stream(ctx, &st)) || (s = cgr_ctx_desc(ctx, 0, 0, &d)) ||
        (s = cgr_ctx_input(ctx, 0, (void **)&x)) || (s = cgr_ctx_output(ctx, 0, (void **)&y)))
        return s;
    int B = (int)d->dims[0];
    if ((s = cgr_ctx_alloc(ctx, (size_t)B * SOAK_D * sizeof(float), (void **)&h)))
        return s;
    if (soak_layer(h, x, m->w1, m->b1, B, SOAK_D, 1, st) != cudaSuccess ||
        soak_layer(y, h, m->w2, m->b2, B, SOAK_D, 0, st) != cudaSuccess)
        return CGR_STATUS_CUDA_ERROR;
    return cgr_ctx_free(ctx, h);
}

/* One runtime with the step. */
typedef struct soak_rt {
    cgr_runtime *rt;
    soak_model m;
    cgr_step *step;
} soak_rt;

typedef struct soak {
    const bench_config *cfg;
    long steps;
    soak_rt graph, eager;
    float *host_w1, *host_b1, *host_w2, *host_b2;
    float saved_x[64 * SOAK_D]; /* inputs of the run being checked */
    float want[64 * SOAK_D];
    bench_rng rng;
    soak_result r; /* what the report shows */
} soak;

/* ---- setup ----------------------------------------------------------------- */

static int rt_setup(soak *s, soak_rt *r, int capture)
{
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = s->cfg->device;
    o.capture = capture;
    o.shape_cache_entries = SOAK_CACHE;
    CGR_CK(cgr_runtime_create(&r->rt, &o));
    const size_t wb = (size_t)SOAK_D * SOAK_D * sizeof(float), bb = SOAK_D * sizeof(float);
    TRY(bench_upload(r->rt, s->host_w1, wb, (void **)&r->m.w1));
    TRY(bench_upload(r->rt, s->host_b1, bb, (void **)&r->m.b1));
    TRY(bench_upload(r->rt, s->host_w2, wb, (void **)&r->m.w2));
    TRY(bench_upload(r->rt, s->host_b2, bb, (void **)&r->m.b2));
    const cgr_tensor_desc in = {.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2,
                                .dims = {soak_buckets[SOAK_SHAPES - 1], SOAK_D}};
    cgr_tensor_desc out = in;
    out.name = "y";
    const cgr_dyn_dim batch = {"batch", soak_buckets, SOAK_SHAPES,
                               soak_buckets[SOAK_SHAPES - 1]};
    const cgr_dim_use uses[2] = {{0, 0, 0, 0}, {0, 1, 0, 0}};
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = "soak";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = soak_step_fn;
    d.user = &r->m;
    d.dyn_dims = &batch;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    CGR_CK(cgr_step_create(r->rt, &d, &r->step));
    return 0;
}

static void rt_teardown(soak_rt *r)
{
    BENCH_RUNTIME_DESTROY(&r->rt);
    memset(r, 0, sizeof *r);
}

/* ---- checks ---------------------------------------------------------------- */

/* The same arithmetic as soak_layer on the host, bit for bit (fmaf, same order). */
static void host_layer(float *y, const float *x, const float *w, const float *b, int B, int relu)
{
    for (int i = 0; i < B; i++)
        for (int j = 0; j < SOAK_D; j++) {
            float acc = b[j];
            for (int k = 0; k < SOAK_D; k++)
                acc = fmaf(x[(size_t)i * SOAK_D + k], w[(size_t)k * SOAK_D + j], acc);
            y[(size_t)i * SOAK_D + j] = relu && acc < 0.0f ? 0.0f : acc;
        }
}

static int compare(const char *what, long k, int B, const float *got, const float *want)
{
    size_t n = (size_t)B * SOAK_D;
    if (memcmp(got, want, n * sizeof(float)) == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            bench_error("soak step %ld (B=%d): %s differs at [%zu]: %.9g, expected %.9g", k, B,
                        what, i, got[i], want[i]);
            break;
        }
    return 1;
}

/*
 * Compares the graph output of step k (waited for) with an eager run of
 * the same inputs (s->saved_x), and with the host when `host` is set.
 */
static int check_step(soak *s, long k, int shape, cgr_step *g, uint64_t ticket, int host)
{
    int B = soak_batches[shape];
    const int64_t dims[1] = {B};
    const void *got = NULL, *ref = NULL;
    size_t got_bytes = 0, ref_bytes = 0;
    if (!(got = bench_output(g, ticket, 0, &got_bytes)))
        return -1;
    cgr_step *e = s->eager.step;
    const void *ins[1] = {s->saved_x};
    uint64_t t;
    CGR_CK(cgr_step_run(e, dims, ins, &t));
    CGR_CK(cgr_step_wait(e, t));
    if (!(ref = bench_output(e, t, 0, &ref_bytes)))
        return -1;
    s->r.checks++;
    /* Outputs come back at the true batch, not the bucket. */
    int bad = got_bytes != (size_t)B * SOAK_D * sizeof(float) || ref_bytes != got_bytes;
    if (bad)
        bench_error("soak step %ld (B=%d): output bytes %zu (graph) and %zu (eager), expected "
                    "%zu", k, B, got_bytes, ref_bytes, (size_t)B * SOAK_D * sizeof(float));
    else
        bad = compare("graph vs eager", k, B, got, ref);
    if (host) {
        static float h[64 * SOAK_D];
        host_layer(h, s->saved_x, s->host_w1, s->host_b1, B, 1);
        host_layer(s->want, h, s->host_w2, s->host_b2, B, 0);
        bad |= compare("eager vs host", k, B, ref, s->want);
    }
    s->r.mismatches += bad;
    return 0;
}

/* ---- memory samples ---------------------------------------------------------- */

static int64_t host_rss(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = -1, resident = -1;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = -1;
        fclose(f);
    }
    return resident < 0 ? -1 : (int64_t)resident * (int64_t)sysconf(_SC_PAGESIZE);
}

static int take_sample(soak *s, long step)
{
    soak_result *r = &s->r;
    soak_sample *x = &r->samples[r->n_samples < SOAK_MAX_SAMPLES ? r->n_samples++
                                                                 : SOAK_MAX_SAMPLES - 1];
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    cgr_runtime_stats a, b;
    CGR_CK(cgr_runtime_get_stats(s->graph.rt, &a));
    CGR_CK(cgr_runtime_get_stats(s->eager.rt, &b));
    x->step = step;
    x->rss = host_rss();
    x->device = (int64_t)(total_b - free_b);
    x->pinned = (int64_t)(a.pinned_bytes + b.pinned_bytes);
    /* Progress of a long run; the report has the table. */
    fprintf(stderr, "cgr-bench: soak step %ld: host RSS %.2f MiB, device used %.2f MiB, "
                    "pinned %.3f MiB\n",
            step, (double)x->rss / 1048576.0, (double)x->device / 1048576.0,
            (double)x->pinned / 1048576.0);
    return 0;
}

/* ---- the loop ---------------------------------------------------------------- */

/* A launched run not yet waited for. */
typedef struct pending {
    cgr_step *step;
    uint64_t ticket;
    long k;
    int shape, check, host;
} pending;

static int retire(soak *s, pending *p)
{
    if (!p->step)
        return 0;
    CGR_CK(cgr_step_wait(p->step, p->ticket));
    if (p->check)
        TRY(check_step(s, p->k, p->shape, p->step, p->ticket, p->host));
    p->step = NULL;
    return 0;
}

/*
 * Steps [k0, k1) of the schedule. Step k is launched before step k - 1 is
 * waited for, so the host fills one slot while the GPU works on the other.
 * `check_every` > 0 checks step k when (k + 1) % check_every == 0: the last
 * step of a phase, a replay. In warm-up, `host` adds the host comparison.
 */
static int run_range(soak *s, long k0, long k1, long (*sched)(long), long check_every, int host)
{
    pending prev = {0};
    for (long k = k0; k < k1; k++) {
        int shape = (int)sched(k);
        cgr_step *st = s->graph.step;
        int B = soak_batches[shape];
        const int64_t dims[1] = {B};
        cgr_slot slot;
        CGR_CK(cgr_step_acquire(st, dims, 0, &slot));
        /* Packed at the true batch; cgr pads it to the bucket in place. */
        rng_fill(&s->rng, slot.inputs[0], (size_t)B * SOAK_D);
        int check = check_every > 0 && (k + 1) % check_every == 0;
        if (check)
            memcpy(s->saved_x, slot.inputs[0], (size_t)B * SOAK_D * sizeof(float));
        CGR_CK(cgr_step_launch(st, &slot));
        TRY(retire(s, &prev));
        prev = (pending){st, slot.ticket, k, shape, check, host};
    }
    return retire(s, &prev);
}

/* The batch changes every SOAK_PHASE steps. */
static long sched_main(long k)
{
    return (k / SOAK_PHASE) % SOAK_SHAPES;
}

/* Warm-up: SOAK_WARMUP steps per shape, the last of each checked with the host. */
static long sched_warmup(long k)
{
    return (k / SOAK_WARMUP) % SOAK_SHAPES;
}

static int soak_body(soak *s)
{
    TRY(rt_setup(s, &s->graph, 1));
    TRY(rt_setup(s, &s->eager, 0));
    watchdog_arm("soak: warm-up", s->cfg->timeout_s);
    int rc = run_range(s, 0, (long)SOAK_WARMUP * SOAK_SHAPES, sched_warmup, SOAK_WARMUP, 1);
    watchdog_disarm();
    TRY(rc);
    cgr_step_stats h0;
    CGR_CK(cgr_step_get_stats(s->graph.step, &h0));
    if (h0.captures < SOAK_SHAPES || h0.entries != SOAK_CACHE || h0.eager_runs != 0) {
        bench_error("soak: after warm-up %llu captures, %u cached graphs, %llu eager runs; "
                    "expected %d, %d, 0", (unsigned long long)h0.captures, h0.entries,
                    (unsigned long long)h0.eager_runs, SOAK_SHAPES, SOAK_CACHE);
        return -1;
    }
    s->r.warm_checks = s->r.checks;
    TRY(take_sample(s, 0));
    double t0 = now_us();
    for (long k = 0; k < s->steps; k += SOAK_SAMPLE) {
        long end = k + SOAK_SAMPLE < s->steps ? k + SOAK_SAMPLE : s->steps;
        /* Re-armed per chunk: a hang shows within a chunk's budget (0.2 ms a step is 10x slack). */
        watchdog_arm("soak", s->cfg->timeout_s + (unsigned)((end - k) / 5000));
        rc = run_range(s, k, end, sched_main, SOAK_CHECK, 0);
        watchdog_disarm();
        TRY(rc);
        TRY(take_sample(s, end));
    }
    s->r.wall_s = (now_us() - t0) * 1e-6;
    CGR_CK(cgr_step_get_stats(s->graph.step, &s->r.graph));
    if (s->cfg->stats) {
        bench_print_stats(s->graph.rt, s->graph.step, "  graph runtime:\n");
        bench_print_stats(s->eager.rt, s->eager.step, "  eager reference runtime:\n");
    }
    return 0;
}

int soak_suite(const bench_config *cfg, bench_results *res)
{
    static soak s; /* large buffers: off the stack */
    memset(&s, 0, sizeof s);
    s.cfg = cfg;
    s.steps = cfg->soak_steps;
    soak_result *r = &s.r;
    res->soak = r;
    r->steps = s.steps;
    r->phase_steps = SOAK_PHASE;
    r->check_every = SOAK_CHECK;
    r->dim = SOAK_D;
    r->graphs_cached = SOAK_CACHE;
    memcpy(r->buckets, soak_buckets, sizeof r->buckets);
    memcpy(r->batches, soak_batches, sizeof r->batches);
    rng_seed(&s.rng, 0x50a4ULL);
    size_t ww = (size_t)SOAK_D * SOAK_D;
    s.host_w1 = malloc(ww * sizeof(float));
    s.host_w2 = malloc(ww * sizeof(float));
    s.host_b1 = malloc(SOAK_D * sizeof(float));
    s.host_b2 = malloc(SOAK_D * sizeof(float));
    if (!s.host_w1 || !s.host_w2 || !s.host_b1 || !s.host_b2) {
        bench_error("soak: out of host memory");
        goto out;
    }
    /* Scaled so activations stay O(1): x and W uniform in [-1, 1), W / sqrt(D). */
    rng_fill(&s.rng, s.host_w1, ww);
    rng_fill(&s.rng, s.host_w2, ww);
    rng_fill(&s.rng, s.host_b1, SOAK_D);
    rng_fill(&s.rng, s.host_b2, SOAK_D);
    for (size_t i = 0; i < ww; i++) {
        s.host_w1[i] *= 0.0625f;
        s.host_w2[i] *= 0.0625f;
    }
    r->ran = soak_body(&s) == 0;
out:
    if (!r->ran)
        snprintf(r->error, sizeof r->error, "%s", bench_last_error());
    rt_teardown(&s.graph);
    rt_teardown(&s.eager);
    free(s.host_w1);
    free(s.host_w2);
    free(s.host_b1);
    free(s.host_b2);
    if (!r->ran)
        return -1;
    const soak_sample *a = &r->samples[0], *z = &r->samples[r->n_samples - 1];
    const int64_t g[3] = {z->rss - a->rss, z->device - a->device, z->pinned - a->pinned};
    memcpy(r->growth, g, sizeof r->growth);
    /* No growth passes against a limit the file lacks (NaN), nor an RSS /proc did not give. */
    const int rss_ok = a->rss >= 0 && z->rss >= 0;
    int pass = add_check(res, "soak_rss_growth_bytes",
                         "soak: host RSS growth, after warm-up to the end",
                         rss_ok ? (double)g[0] : NAN, 0);
    pass &= add_check(res, "soak_device_growth_bytes", "soak: device memory in use, growth",
                      (double)g[1], 0);
    pass &= add_check(res, "soak_pinned_growth_bytes", "soak: pinned bytes, growth", (double)g[2],
                      0);
    said_check *c = said_add(res, "soak_outputs", "soak outputs equal eager's, bitwise");
    c->ok = r->mismatches == 0 && r->checks > 0;
    snprintf(c->message, sizeof c->message, "%ld checked, %ld differ", r->checks, r->mismatches);
    /* No run falls back: not the churn guard (one new shape per phase), nor a failed capture
     * or frozen-value check (rechecks among them, when CGR_FROZEN_RECHECK asks for them). */
    said_check *e = said_add(res, "soak_graphs", "soak runs replayed graphs, none eager");
    e->ok = r->graph.eager_runs == 0;
    snprintf(e->message, sizeof e->message, "%llu eager runs, %llu frozen-value checks%s%.400s",
             (unsigned long long)r->graph.eager_runs, (unsigned long long)r->graph.frozen_checks,
             r->graph.capture_error[0] ? "; " : "", r->graph.capture_error);
    r->pass = pass && c->ok && e->ok;
    return 0;
}
