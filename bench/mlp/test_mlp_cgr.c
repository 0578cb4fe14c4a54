/*
 * W-mlp training through cgr (suite `gpu`): the step function cgr-bench
 * runs (mlp_step_enqueue on cgr's stream, cuBLAS handle and arena), with
 * programmatic dependent launch on, checked three ways.
 *
 *   (a) float64 reference: the first 3 steps (warm-up run, capture, first
 *       replay; warmup_runs = 1) against mlp_ref_step started from the
 *       GPU's state before each step: the loss within 1e-4 relative, and
 *       every parameter tensor within 1e-4 relative, norm-wise
 *       (||gpu - ref|| / ||ref||). The reference takes the GPU's ReLU
 *       decision only where |pre-activation| < 1e-4, where fp32 cannot
 *       tell the sign (mlp_ref.h).
 *   (b) graph == eager: 200 graphed steps and 200 eager steps (12 under
 *       compute-sanitizer) (capture = 0)
 *       on the same inputs give bitwise the same loss curve, hidden
 *       activations at every step, and final parameters, moments and
 *       device step count; at B = 1 and B = 8, without and with dropout.
 *   (c) dropout (p = 0.1) is graph-safe: at every step, every unit that the
 *       host's Philox computation of that step's counters drops is exactly
 *       0 in the GPU's first hidden activation, so the masks follow the
 *       offset the graph advances; consecutive replays drop different
 *       units; the drop rate is p within 5 sigma. With (b), replay k
 *       equals eager step k for the same seed.
 *
 *
 * With a dynamic batch (mlp_cgr_dyn_*: tensors declared at the largest
 * bucket, each run given its true batch T, the loss masked to the T real
 * rows through cgr_ctx_dim's device pointer):
 *   (d) float64 reference: buckets {8, 16, 32}, one warm-up run per shape,
 *       11 steps at T = 5, 7, 3, 13, 9, 16, 27, 17, 32, 6, 14 (a warm-up, a
 *       capture and a replay per bucket, then replays): cgr's action on
 *       each run is the expected one, the step function saw T's bucket and
 *       T, the outputs come back at T rows, and the loss and parameters
 *       match float64 training on the T real rows alone (limits as in (a)).
 *   (e) graph == eager: 50 steps (12 under a sanitizer) at T drawn from
 *       1..32 give bitwise the same loss curve, first hidden activations
 *       (T rows) at every step, and final parameters, moments and step
 *       count as the same step run with capture = 0; every run's action
 *       follows docs/shapes.md (warm-ups, one capture per bucket, then
 *       replays) and the shape stats agree.
 *   (f) update in place: the same with a one-graph cache, so each change of
 *       bucket evicts the graph and offers it for cudaGraphExecUpdate. On
 *       the small-batch buckets {2, 4, 8} (same topology) at least one
 *       update must happen, and the results stay bitwise equal to eager.
 *       The cuBLAS-path buckets {16, 32} are run the same way, without
 *       requiring updates (cuBLAS's kernel choice decides the topology).
 *   (g) rechecks (cgr_options.frozen_recheck): (e) with a recheck after
 *       every 3 replays, and (f) on runs of one bucket at a time with one
 *       after every 2, so that updated executables are rechecked against
 *       their new shape's capture: rechecks run, none finds a difference
 *       (the step keeps no host value that changes), and the results stay
 *       bitwise equal to eager.
 *
 * The step runs as cgr-bench runs it: PDL on and, at small batch, the
 * weight gradients on a side stream (parallel graph branches). It exposes
 * its hidden activations as extra outputs (device-to-device copies inside
 * the step) so the test can see them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"
#include "mlp_cgr.h"
#include "mlp_ref.h"
#include "test_util.h"

enum { MAX_STEPS = 200, REF_STEPS = 3 };
/* 200 steps; fewer under compute-sanitizer (CGR_TEST_SANITIZER, set by meson's setups). */
static int STEPS = MAX_STEPS;
#define SEED 0x5eed5eedULL
#define DROP_P 0.1f

typedef struct model {
    mlp_cfg cfg;
    mlp_layout L;
    mlp_scratch scratch;
    mlp_bufs dev; /* persistent part */
    int n_hidden;
} model;

/* The names of outputs 1.. (the hidden activations). */
static const char *const act_names[] = {"act0", "act1", "act2", "act3", "act4", "act5", "act6"};

/*
 * The training step as cgr-bench enqueues it (PDL on), then the first
 * n_hidden layers' activations, c->batch rows of L->out[l] floats each,
 * copied to outputs 1.. for the test to see.
 */
static cgr_status step_with_acts(cgr_ctx *ctx, const mlp_cfg *c, const mlp_layout *L,
                                 int n_hidden, const mlp_bufs *b, cgr_cublas_handle h,
                                 cgr_stream s)
{
    if (mlp_step_enqueue(c, b, h, s, 1) != 0) {
        fprintf(stderr, "test_mlp_cgr: %s\n", mlp_last_error());
        return CGR_STATUS_CUDA_ERROR;
    }
    for (int l = 0; l < n_hidden; l++) {
        void *out;
        STEP_TRY(cgr_ctx_output(ctx, 1 + l, &out));
        STEP_CUDA(cudaMemcpyAsync(out, b->act[l], (size_t)c->batch * L->out[l] * sizeof(float),
                                  cudaMemcpyDeviceToDevice, s));
    }
    return CGR_STATUS_OK;
}

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_bufs b;
    STEP_TRY(mlp_cgr_bind(ctx, &m->cfg, m->scratch.total_bytes, &m->dev, &b, &h, &s));
    /* c->batch * L->out[l] floats is m->scratch.act_bytes[l] (mlp_scratch_sizes). */
    return step_with_acts(ctx, &m->cfg, &m->L, m->n_hidden, &b, h, s);
}

/* A runtime with options o, holding the model's persistent state (from params0) in *dev. */
static cgr_runtime *runtime_open(const cgr_options *o, const mlp_cfg *cfg, const float *params0,
                                 mlp_bufs *dev)
{
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, o));
    WORK_OK(mlp_cgr_state_create(rt, cfg, params0, dev), mlp_last_error);
    return rt;
}

static void runtime_close(cgr_runtime **rt, mlp_bufs *dev)
{
    ASSERT_OK(cgr_runtime_destroy(rt));
    WORK_OK(mlp_cgr_state_release(dev), mlp_last_error);
}

/* One training run: a runtime, the model's persistent state and its step. */
typedef struct run {
    model m;
    cgr_runtime *rt;
    cgr_step *step;
} run;

static void run_open(run *r, int B, float dropout, int capture, int warmup,
                     const float *params0)
{
    memset(r, 0, sizeof *r);
    model *m = &r->m;
    mlp_cfg_default(&m->cfg, B);
    m->cfg.dropout = dropout;
    ASSERT_EQ(mlp_layout_init(&m->L, &m->cfg), 0);
    ASSERT_EQ(mlp_scratch_sizes(&m->cfg, &m->scratch), 0);
    m->n_hidden = m->cfg.n_hidden;
    ASSERT_LE(1 + m->n_hidden, CGR_MAX_TENSORS);

    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.capture = capture;
    o.warmup_runs = warmup;
    r->rt = runtime_open(&o, &m->cfg, params0, &m->dev);

    cgr_tensor_desc in[2] = {tensor2("x", CGR_DTYPE_F32, B, m->cfg.in_dim),
                             tensor1("labels", CGR_DTYPE_I32, B)};
    cgr_tensor_desc out[1 + MLP_MAX_LAYERS];
    memset(out, 0, sizeof out);
    out[0].name = "loss";
    out[0].dtype = CGR_DTYPE_F32;
    out[0].rank = 0;
    for (int l = 0; l < m->n_hidden; l++)
        out[1 + l] = tensor2(act_names[l], CGR_DTYPE_F32, B, m->L.out[l]);
    r->step = make_step(r->rt, "W-mlp", in, 2, out, 1 + m->n_hidden, step_fn, m);
    ASSERT_OK(cgr_step_set_seed(r->step, SEED));
}

static void run_close(run *r)
{
    runtime_close(&r->rt, &r->m.dev);
}

/* The batch of step k: fresh random data, the same in every run. */
static void make_batch(const mlp_cfg *c, int k, float *x, int *labels)
{
    rng g = {0x9e3779b97f4a7c15ULL ^ (uint64_t)(k + 1) * 0xbf58476d1ce4e5b9ULL};
    rng_fill(&g, x, (size_t)c->batch * c->in_dim);
    for (int b = 0; b < c->batch; b++)
        labels[b] = (int)(rng_next(&g) % (uint64_t)c->classes);
}

/*
 * The outputs of a finished run: the loss into *loss, and each hidden
 * layer's activations, which must be rows * L->out[l] floats, into acts[l].
 */
static void read_outputs(cgr_step *step, uint64_t ticket, const mlp_layout *L, int n_hidden,
                         size_t rows, float *loss, float **acts)
{
    size_t bytes;
    ASSERT_OK(cgr_step_output(step, ticket, 0, loss, sizeof(float), &bytes));
    ASSERT_EQ(bytes, sizeof(float));
    for (int l = 0; l < n_hidden; l++) {
        const size_t want = rows * L->out[l] * sizeof(float);
        ASSERT_OK(cgr_step_output(step, ticket, 1 + l, acts[l], want, &bytes));
        ASSERT_EQ(bytes, want);
    }
}

/*
 * Runs step k; loss and acts (n_hidden arrays of B * hidden floats) receive
 * its outputs.
 */
static void run_step(run *r, int k, float *x, int *labels, float *loss, float **acts)
{
    const model *m = &r->m;
    make_batch(&m->cfg, k, x, labels);
    const void *inputs[2] = {x, labels};
    uint64_t ticket = 0;
    ASSERT_OK(cgr_step_run(r->step, NULL, inputs, &ticket));
    ASSERT_OK(cgr_step_wait(r->step, ticket));
    /* B rows of L.out[l] floats: m->scratch.act_bytes[l] (mlp_scratch_sizes). */
    read_outputs(r->step, ticket, &m->L, m->n_hidden, (size_t)m->cfg.batch, loss, acts);
}

/*
 * Once the step is idle: the GPU's parameters and AdamW moments, nb bytes
 * each, into p, m and v (m and v may be NULL).
 */
static void down_state(cgr_step *step, const mlp_bufs *dev, float *p, float *m, float *v,
                       size_t nb)
{
    ASSERT_OK(cgr_step_wait(step, CGR_TICKET_LAST));
    down(p, dev->params, nb);
    if (m)
        down(m, dev->m, nb);
    if (v)
        down(v, dev->v, nb);
}

static float **alloc_acts(const model *m)
{
    float **a = xmalloc((size_t)m->n_hidden * sizeof *a);
    for (int l = 0; l < m->n_hidden; l++)
        a[l] = xmalloc(m->scratch.act_bytes[l]);
    return a;
}

/* ---- (a) float64 reference ------------------------------------------------------- */

static double norm_rel(const float *got, const double *want, size_t n)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/*
 * Layer by layer, the norm-wise error of the GPU's parameters p against the
 * reference's: the weights' in ew[l], the biases' in eb[l]; *worst is raised
 * to the largest (a NaN leaves it as it is).
 */
static void params_err(const mlp_layout *L, const float *p, const double *ref, double *ew,
                       double *eb, double *worst)
{
    for (int l = 0; l < L->n_layers; l++) {
        ew[l] = norm_rel(p + L->w_off[l], ref + L->w_off[l], (size_t)L->out[l] * (size_t)L->in[l]);
        eb[l] = norm_rel(p + L->b_off[l], ref + L->b_off[l], (size_t)L->out[l]);
        *worst = ew[l] > *worst ? ew[l] : *worst;
        *worst = eb[l] > *worst ? eb[l] : *worst;
    }
}

/*
 * Step k, run with loss and acts as its outputs, against ref's float64 step
 * on the same inputs (ref started from the GPU's state before the step):
 * the loss within 1e-4 relative, then, read back, the parameters within
 * 1e-4 norm-wise per tensor and the device step count. `what` names the
 * step in the messages; *worst_loss and *worst_param are raised.
 */
static void check_fp64_step(const char *what, cgr_step *step, const mlp_bufs *dev,
                            const mlp_layout *L, mlp_ref *ref, const float *x, const int *labels,
                            float *const *acts, float loss, int k, float *p, size_t nb,
                            double *worst_loss, double *worst_param)
{
    long hinted = 0;
    const double want = mlp_ref_step(ref, x, labels, (const float *const *)acts, 1e-4, &hinted);
    const double el = fabs((double)loss - want) / fabs(want);
    if (!(el <= 1e-4))
        TEST_FAIL_("%s: loss %.9g, float64 %.9g (rel %.3g > 1e-4)", what, (double)loss, want, el);
    *worst_loss = el > *worst_loss ? el : *worst_loss;
    down_state(step, dev, p, NULL, NULL, nb);
    double ew[MLP_MAX_LAYERS], eb[MLP_MAX_LAYERS];
    params_err(L, p, ref->p, ew, eb, worst_param);
    for (int l = 0; l < L->n_layers; l++)
        if (!(ew[l] <= 1e-4 && eb[l] <= 1e-4))
            TEST_FAIL_("%s layer %d: params off the float64 reference: weight %.3g, bias %.3g "
                       "(norm-wise, limit 1e-4)",
                       what, l, ew[l], eb[l]);
    int count = -1;
    down(&count, dev->step, sizeof count);
    ASSERT_EQ(count, k + 1);
}

static void test_reference(int B, const float *params0)
{
    const size_t mark = scope();
    run r;
    run_open(&r, B, 0.f, 1, 1, params0);
    const model *m = &r.m;
    const size_t n = m->L.n_floats, nb = n * sizeof(float);
    mlp_ref ref;
    ASSERT_EQ(mlp_ref_init(&ref, &m->cfg, params0), 0);
    float *p = xmalloc(nb), *mm = xmalloc(nb), *vv = xmalloc(nb);
    float *x = xmalloc((size_t)B * m->cfg.in_dim * sizeof(float));
    int *labels = xmalloc((size_t)B * sizeof(int));
    float **acts = alloc_acts(m);
    double worst_loss = 0.0, worst_param = 0.0;
    for (int k = 0; k < REF_STEPS; k++) {
        /* The reference starts from the GPU's state before this step. */
        down_state(r.step, &m->dev, p, mm, vv, nb);
        mlp_ref_set_state(&ref, p, mm, vv, k);
        float loss;
        run_step(&r, k, x, labels, &loss, acts);
        char what[64];
        snprintf(what, sizeof what, "B=%d step %d", B, k + 1);
        check_fp64_step(what, r.step, &m->dev, &m->L, &ref, x, labels, acts, loss, k, p, nb,
                        &worst_loss, &worst_param);
    }
    cgr_step_stats st;
    ASSERT_OK(cgr_step_get_stats(r.step, &st));
    ASSERT_EQ(st.mode, CGR_MODE_GRAPH);
    printf("fp64 B=%d: %d steps (warm-up, capture, replay): worst loss rel err %.2e, worst "
           "param norm-wise rel err %.2e (limits 1e-4)\n",
           B, REF_STEPS, worst_loss, worst_param);
    mlp_ref_free(&ref);
    run_close(&r);
    release(mark);
}

/* ---- (b) graph == eager, (c) dropout ---------------------------------------------- */

typedef struct trajectory {
    float loss[MAX_STEPS];
    float *act0; /* [STEPS][B * hidden]: the first hidden layer's output */
    float *acts_last[MLP_MAX_LAYERS];
    float *params, *m, *v;
    int count;
    cgr_step_mode mode;
} trajectory;

static void trajectory_run(trajectory *t, int B, float dropout, int capture,
                           const float *params0)
{
    run r;
    run_open(&r, B, dropout, capture, 2, params0);
    const model *m = &r.m;
    const size_t a0 = (size_t)B * m->L.out[0], nb = m->L.n_floats * sizeof(float);
    t->act0 = xmalloc(STEPS * a0 * sizeof(float));
    t->params = xmalloc(nb);
    t->m = xmalloc(nb);
    t->v = xmalloc(nb);
    float *x = xmalloc((size_t)B * m->cfg.in_dim * sizeof(float));
    int *labels = xmalloc((size_t)B * sizeof(int));
    float **acts = alloc_acts(m);
    for (int k = 0; k < STEPS; k++) {
        run_step(&r, k, x, labels, &t->loss[k], acts);
        memcpy(t->act0 + (size_t)k * a0, acts[0], a0 * sizeof(float));
    }
    for (int l = 0; l < m->n_hidden; l++) {
        t->acts_last[l] = xmalloc(m->scratch.act_bytes[l]);
        memcpy(t->acts_last[l], acts[l], m->scratch.act_bytes[l]);
    }
    down_state(r.step, &m->dev, t->params, t->m, t->v, nb);
    down(&t->count, m->dev.step, sizeof t->count);
    cgr_step_stats st;
    ASSERT_OK(cgr_step_get_stats(r.step, &st));
    t->mode = st.mode;
    run_close(&r);
}

static void same(const char *what, int B, float p, const void *a, const void *b, size_t bytes)
{
    same_bytes(a, b, bytes, "B=%d dropout %g: graphed and eager %s", B, (double)p, what);
}

/* The host's decision for unit e of hidden layer 0 (subsequence 0) in step k. */
static int dropped_at(uint64_t counters_per_step, int k, size_t e)
{
    return host_dropped(SEED, (uint64_t)k * counters_per_step, e, DROP_P);
}

static void check_dropout(const trajectory *t, int B, const mlp_cfg *cfg)
{
    const uint64_t per_step = mlp_dropout_counters(cfg);
    const size_t a0 = (size_t)B * (size_t)cfg->hidden;
    size_t dropped = 0, total = 0, not_zero = 0, moved = 0;
    for (int k = 0; k < STEPS; k++) {
        const float *a = t->act0 + (size_t)k * a0;
        for (size_t e = 0; e < a0; e++) {
            const int d = dropped_at(per_step, k, e);
            dropped += (size_t)d;
            not_zero += (size_t)(d && a[e] != 0.f);
            if (k > 0)
                moved += (size_t)(d != dropped_at(per_step, k - 1, e));
        }
        total += a0;
    }
    if (not_zero)
        TEST_FAIL_("B=%d: %zu units the host's Philox drops are not 0 on the GPU", B, not_zero);
    char what[32];
    snprintf(what, sizeof what, "dropout B=%d", B);
    const double rate = check_rate(what, dropped, total, DROP_P);
    /* Independent masks differ in 2 p (1 - p) of the units from one replay to the next. */
    ASSERT_GT(moved, (size_t)(0.1 * (double)total));
    printf("dropout B=%d: %zu units over %d steps, drop rate %.4f, every dropped unit 0 on the "
           "GPU, %.1f%% of decisions change between consecutive steps\n",
           B, total, STEPS, rate, 100.0 * (double)moved / (double)(total - a0));
}

static void test_graph_eager(int B, float dropout, const float *params0)
{
    const size_t mark = scope();
    trajectory g, e;
    memset(&g, 0, sizeof g);
    memset(&e, 0, sizeof e);
    trajectory_run(&g, B, dropout, 1, params0);
    trajectory_run(&e, B, dropout, 0, params0);
    ASSERT_EQ(g.mode, CGR_MODE_GRAPH);
    ASSERT_EQ(e.mode, CGR_MODE_EAGER);
    mlp_cfg c;
    mlp_cfg_default(&c, B);
    c.dropout = dropout;
    mlp_layout L;
    ASSERT_EQ(mlp_layout_init(&L, &c), 0);
    const size_t nb = L.n_floats * sizeof(float);
    same("loss curves", B, dropout, g.loss, e.loss, (size_t)STEPS * sizeof g.loss[0]);
    same("first hidden activations", B, dropout, g.act0, e.act0,
         STEPS * (size_t)B * L.out[0] * sizeof(float));
    for (int l = 0; l < c.n_hidden; l++)
        same("last step's activations", B, dropout, g.acts_last[l], e.acts_last[l],
             (size_t)B * L.out[l] * sizeof(float));
    same("parameters", B, dropout, g.params, e.params, nb);
    same("first moments", B, dropout, g.m, e.m, nb);
    same("second moments", B, dropout, g.v, e.v, nb);
    ASSERT_EQ(g.count, STEPS);
    ASSERT_EQ(e.count, STEPS);
    for (int k = 0; k < STEPS; k++)
        ASSERT(isfinite(g.loss[k]));
    printf("graph == eager B=%d dropout %.1f: %d steps bitwise (loss %.6f -> %.6f)\n", B,
           (double)dropout, STEPS, (double)g.loss[0], (double)g.loss[STEPS - 1]);
    if (dropout > 0.f)
        check_dropout(&g, B, &c);
    release(mark);
}

/* ---- dynamic batch: (d) float64 reference, (e) graph == eager, (f) update in place ---- */

enum { DYN_MAX_STEPS = 50, DYN_MAX_BUCKETS = 4 };

/* A W-mlp step with a dynamic batch (mlp_cgr_dyn_*), its hidden activations as outputs. */
typedef struct dyn_model {
    mlp_cfg cfg; /* batch = Bmax, the largest bucket */
    mlp_layout L;
    mlp_bufs dev;
    int n_hidden;
    /* What the step function saw in its latest call, and how often it ran. */
    int64_t seen_bucket, seen_true;
    long calls;
} dyn_model;

static cgr_status dyn_step_fn(cgr_ctx *ctx, void *user)
{
    dyn_model *m = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_cfg rc; /* m->cfg shaped for this run's bucket */
    mlp_bufs b;
    int64_t tv = 0;
    STEP_TRY(mlp_cgr_bind_dyn(ctx, &m->cfg, &m->dev, &rc, &b, &h, &s));
    STEP_TRY(cgr_ctx_dim(ctx, 0, NULL, &tv, NULL));
    m->seen_bucket = rc.batch;
    m->seen_true = tv;
    m->calls++;
    /* The bucket's rows; cgr hands back the true batch's. */
    return step_with_acts(ctx, &rc, &m->L, m->n_hidden, &b, h, s);
}

typedef struct dyn_run {
    dyn_model m;
    cgr_runtime *rt;
    cgr_step *step;
    int64_t buckets[DYN_MAX_BUCKETS];
    int n_buckets;
} dyn_run;

static void dyn_open(dyn_run *r, const int64_t *buckets, int nb, int capture, int warmup,
                     int cache_entries, unsigned recheck, const float *params0)
{
    memset(r, 0, sizeof *r);
    ASSERT(nb >= 1 && nb <= DYN_MAX_BUCKETS);
    memcpy(r->buckets, buckets, (size_t)nb * sizeof *buckets);
    r->n_buckets = nb;
    dyn_model *m = &r->m;
    mlp_cfg_default(&m->cfg, (int)buckets[nb - 1]);
    ASSERT_EQ(mlp_layout_init(&m->L, &m->cfg), 0);
    m->n_hidden = m->cfg.n_hidden;

    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.capture = capture;
    o.warmup_runs = warmup;
    o.shape_cache_entries = cache_entries;
    o.frozen_recheck = recheck;
    /* The tests switch buckets on purpose, far more often than the guard allows. */
    o.churn_shapes = 0;
    r->rt = runtime_open(&o, &m->cfg, params0, &m->dev);

    mlp_cgr_dyn d;
    WORK_OK(mlp_cgr_dyn_init(&d, &m->cfg, buckets, nb), mlp_last_error);
    for (int l = 0; l < m->n_hidden; l++)
        ASSERT_EQ(mlp_cgr_dyn_add_batch_output(&d, act_names[l], m->L.out[l]), 1 + l);
    cgr_step_desc desc;
    ASSERT_OK(cgr_step_desc_init(&desc));
    mlp_cgr_dyn_desc(&d, "W-mlp dyn", dyn_step_fn, m, &desc);
    ASSERT_OK(cgr_step_create(r->rt, &desc, &r->step));
    ASSERT_OK(cgr_step_set_seed(r->step, SEED));
}

static void dyn_close(dyn_run *r)
{
    runtime_close(&r->rt, &r->m.dev);
}

/* Host buffers for a dynamic run's inputs and hidden activations, at the largest bucket. */
typedef struct dyn_io {
    float *x;
    int *labels;
    float *acts[MLP_MAX_LAYERS];
} dyn_io;

static void dyn_io_alloc(dyn_io *io, const dyn_model *m)
{
    const size_t bmax = (size_t)m->cfg.batch;
    memset(io, 0, sizeof *io);
    io->x = xmalloc(bmax * m->cfg.in_dim * sizeof(float));
    io->labels = xmalloc(bmax * sizeof(int));
    for (int l = 0; l < m->n_hidden; l++)
        io->acts[l] = xmalloc(bmax * m->L.out[l] * sizeof(float));
}

/* The smallest bucket that holds T (what cgr must round T up to). */
static int64_t bucket_in(const int64_t *buckets, int nb, int64_t T)
{
    for (int i = 0; i < nb; i++)
        if (T <= buckets[i])
            return buckets[i];
    TEST_FAIL_("true batch %lld above the largest bucket", (long long)T);
}

static int64_t bucket_of(const dyn_run *r, int64_t T)
{
    return bucket_in(r->buckets, r->n_buckets, T);
}

/*
 * Runs step k at true batch T (inputs packed at T rows, fresh random data
 * that depends on k only); loss and acts (n_hidden arrays of at least
 * T * hidden floats) receive its outputs, *action what cgr did. Also checks
 * that the outputs come back at the true batch, and that the step function,
 * when cgr called it, was shaped for T's bucket and saw T.
 */
static void dyn_step(dyn_run *r, int k, int64_t T, float *x, int *labels, float *loss,
                     float **acts, cgr_run_action *action)
{
    dyn_model *m = &r->m;
    mlp_cfg c = m->cfg;
    c.batch = (int)T;
    make_batch(&c, k, x, labels);
    const void *inputs[2] = {x, labels};
    const long calls = m->calls;
    cgr_step_stats before, after;
    ASSERT_OK(cgr_step_get_stats(r->step, &before));
    uint64_t ticket = 0;
    ASSERT_OK(cgr_step_run(r->step, &T, inputs, &ticket));
    ASSERT_OK(cgr_step_wait(r->step, ticket));
    ASSERT_OK(cgr_step_run_action(r->step, ticket, action));
    ASSERT_OK(cgr_step_get_stats(r->step, &after));
    /*
     * A replay is one graph launch: the step function does not run, except
     * at a graph's first replay, captured again for the frozen-value check.
     * An eager run (warm-up or not) calls it exactly once; a capture at
     * least once. Whenever it ran, it was shaped for T's bucket and saw T.
     */
    if (*action == CGR_RUN_REPLAY)
        ASSERT_EQ(m->calls, calls + (long)(after.frozen_checks - before.frozen_checks));
    else if (*action == CGR_RUN_WARMUP || *action == CGR_RUN_EAGER)
        ASSERT_EQ(m->calls, calls + 1);
    else
        ASSERT_GE(m->calls, calls + 1);
    if (m->calls != calls) {
        ASSERT_EQ(m->seen_bucket, bucket_of(r, T));
        ASSERT_EQ(m->seen_true, T);
    }
    read_outputs(r->step, ticket, &m->L, m->n_hidden, (size_t)T, loss, acts);
}

/*
 * What cgr should do on each run, from docs/shapes.md: a bucket in the
 * cache (at most `entries`, least recently used evicted) replays; another
 * one runs `warmup` eager warm-ups (counted per bucket until it is
 * captured), then captures: by an update in place when the cache is full
 * by count (the LRU entry is offered) or an instantiation. An evicted
 * bucket is new again. Returns the expected action, with CGR_RUN_UPDATE
 * meaning "CAPTURE or UPDATE" (an update may fail and fall back).
 */
typedef struct action_model {
    int entries, warmup, n;
    int64_t cache[DYN_MAX_BUCKETS]; /* most recently used first */
    int64_t warm_bucket[DYN_MAX_BUCKETS];
    int warm[DYN_MAX_BUCKETS];
} action_model;

static int warm_slot(action_model *a, int64_t b)
{
    for (int i = 0; i < DYN_MAX_BUCKETS; i++)
        if (a->warm_bucket[i] == b)
            return i;
    for (int i = 0; i < DYN_MAX_BUCKETS; i++)
        if (a->warm_bucket[i] == 0) {
            a->warm_bucket[i] = b;
            a->warm[i] = 0;
            return i;
        }
    TEST_FAIL_("%s", "action model: too many buckets");
}

static cgr_run_action model_next(action_model *a, int64_t b)
{
    for (int i = 0; i < a->n; i++) {
        if (a->cache[i] == b) {
            memmove(&a->cache[1], &a->cache[0], (size_t)i * sizeof a->cache[0]);
            a->cache[0] = b;
            return CGR_RUN_REPLAY;
        }
    }
    const int w = warm_slot(a, b);
    if (a->warm[w] < a->warmup) {
        a->warm[w]++;
        return CGR_RUN_WARMUP;
    }
    a->warm_bucket[w] = 0;
    const int full = a->n == a->entries;
    if (full)
        a->n--; /* the least recently used leaves; it will warm up again */
    memmove(&a->cache[1], &a->cache[0], (size_t)a->n * sizeof a->cache[0]);
    a->cache[0] = b;
    a->n++;
    return full ? CGR_RUN_UPDATE : CGR_RUN_CAPTURE;
}

/* (d) The first steps through every bucket against float64 training at the true batch. */
static void test_dyn_reference(const float *params0, int sanitizer)
{
    static const int64_t buckets[] = {8, 16, 32};
    /* warmup_runs = 1: per bucket a warm-up, a capture and a replay, each at its own T. */
    static const int64_t seq[] = {5, 7, 3, 13, 9, 16, 27, 17, 32, 6, 14};
    static const cgr_run_action want[] = {
        CGR_RUN_WARMUP, CGR_RUN_CAPTURE, CGR_RUN_REPLAY, CGR_RUN_WARMUP,
        CGR_RUN_CAPTURE, CGR_RUN_REPLAY, CGR_RUN_WARMUP, CGR_RUN_CAPTURE,
        CGR_RUN_REPLAY, CGR_RUN_REPLAY, CGR_RUN_REPLAY};
    const int n_steps = sanitizer ? 6 : (int)(sizeof seq / sizeof seq[0]);
    const size_t mark = scope();
    dyn_run r;
    dyn_open(&r, buckets, 3, 1, 1, 16, 0, params0);
    const dyn_model *m = &r.m;
    const size_t n = m->L.n_floats, nb = n * sizeof(float);
    float *p = xmalloc(nb), *mm = xmalloc(nb), *vv = xmalloc(nb);
    dyn_io io;
    dyn_io_alloc(&io, m);
    double worst_loss = 0.0, worst_param = 0.0;
    for (int k = 0; k < n_steps; k++) {
        const int64_t T = seq[k];
        down_state(r.step, &m->dev, p, mm, vv, nb);
        /* The reference trains on the T real rows only, from the GPU's state. */
        mlp_cfg rc = m->cfg;
        rc.batch = (int)T;
        mlp_ref ref;
        ASSERT_EQ(mlp_ref_init(&ref, &rc, p), 0);
        mlp_ref_set_state(&ref, p, mm, vv, k);
        float loss;
        cgr_run_action act;
        dyn_step(&r, k, T, io.x, io.labels, &loss, io.acts, &act);
        if (act != want[k])
            TEST_FAIL_("step %d (T=%lld): cgr did '%s', expected '%s'", k + 1, (long long)T,
                       cgr_run_action_name(act), cgr_run_action_name(want[k]));
        char what[96];
        snprintf(what, sizeof what, "dyn step %d (T=%lld, %s, float64 on the true batch)", k + 1,
                 (long long)T, cgr_run_action_name(act));
        check_fp64_step(what, r.step, &m->dev, &m->L, &ref, io.x, io.labels, io.acts, loss, k, p,
                        nb, &worst_loss, &worst_param);
        mlp_ref_free(&ref);
    }
    cgr_step_stats ss;
    memset(&ss, 0, sizeof ss);
    ASSERT_OK(cgr_step_get_stats(r.step, &ss));
    const int n_buckets_seen = sanitizer ? 2 : 3;
    ASSERT_U64_EQ(ss.captures, n_buckets_seen);
    ASSERT_U64_EQ(ss.updates, 0);
    ASSERT_U64_EQ(ss.runs, n_steps);
    printf("dyn fp64 buckets {8,16,32}: %d steps at true batches 5..32 (warm-up, capture, "
           "replay per bucket): worst loss rel err %.2e, worst param norm-wise rel err %.2e "
           "(limits 1e-4)\n",
           n_steps, worst_loss, worst_param);
    dyn_close(&r);
    release(mark);
}

/* One dynamic run over a T sequence: the loss curve, act0 of every step, the final state. */
typedef struct dyn_traj {
    float loss[DYN_MAX_STEPS];
    float *act0; /* step k's act0 (T_k rows) at offset k * Bmax * hidden */
    float *params, *m, *v;
    int count;
    cgr_run_action action[DYN_MAX_STEPS];
    cgr_step_stats ss;
} dyn_traj;

static void dyn_traj_run(dyn_traj *t, const int64_t *buckets, int nb, int cache_entries,
                         unsigned recheck, int warmup, int capture, const int64_t *seq,
                         int steps, const float *params0)
{
    dyn_run r;
    dyn_open(&r, buckets, nb, capture, warmup, cache_entries, recheck, params0);
    const dyn_model *m = &r.m;
    const size_t bmax = (size_t)m->cfg.batch, a0 = bmax * m->L.out[0];
    const size_t nbytes = m->L.n_floats * sizeof(float);
    t->act0 = xmalloc((size_t)steps * a0 * sizeof(float));
    memset(t->act0, 0, (size_t)steps * a0 * sizeof(float));
    t->params = xmalloc(nbytes);
    t->m = xmalloc(nbytes);
    t->v = xmalloc(nbytes);
    dyn_io io;
    dyn_io_alloc(&io, m);
    for (int k = 0; k < steps; k++) {
        dyn_step(&r, k, seq[k], io.x, io.labels, &t->loss[k], io.acts, &t->action[k]);
        memcpy(t->act0 + (size_t)k * a0, io.acts[0],
               (size_t)seq[k] * m->L.out[0] * sizeof(float));
    }
    down_state(r.step, &m->dev, t->params, t->m, t->v, nbytes);
    down(&t->count, m->dev.step, sizeof t->count);
    memset(&t->ss, 0, sizeof t->ss);
    ASSERT_OK(cgr_step_get_stats(r.step, &t->ss));
    dyn_close(&r);
}

/*
 * (e), (f): the same T sequence through graphs (capture = 1) and eagerly
 * (capture = 0): bitwise equal loss curves, first hidden activations at
 * every step, final parameters, moments and step count. The graph run's
 * actions follow the model above, run by run.
 */
static void test_dyn_graph_eager(const char *what, const int64_t *buckets, int nb,
                                 int cache_entries, unsigned recheck, const int64_t *seq,
                                 int steps, const float *params0, int want_updates)
{
    enum { WARMUP = 2 };
    const size_t mark = scope();
    dyn_traj g, e;
    memset(&g, 0, sizeof g);
    memset(&e, 0, sizeof e);
    dyn_traj_run(&g, buckets, nb, cache_entries, recheck, WARMUP, 1, seq, steps, params0);
    dyn_traj_run(&e, buckets, nb, cache_entries, recheck, WARMUP, 0, seq, steps, params0);

    action_model am;
    memset(&am, 0, sizeof am);
    am.entries = cache_entries;
    am.warmup = WARMUP;
    int n_capture_points = 0, n_updates = 0, n_replays = 0;
    for (int k = 0; k < steps; k++) {
        const cgr_run_action w = model_next(&am, bucket_in(buckets, nb, seq[k]));
        const cgr_run_action a = g.action[k];
        const int ok = w == CGR_RUN_UPDATE ? a == CGR_RUN_UPDATE || a == CGR_RUN_CAPTURE : a == w;
        if (!ok)
            TEST_FAIL_("%s: graph run, step %d (T=%lld): cgr did '%s', expected '%s'", what,
                       k + 1, (long long)seq[k], cgr_run_action_name(a),
                       w == CGR_RUN_UPDATE ? "update or capture" : cgr_run_action_name(w));
        n_capture_points += w == CGR_RUN_UPDATE || w == CGR_RUN_CAPTURE;
        n_updates += a == CGR_RUN_UPDATE;
        n_replays += a == CGR_RUN_REPLAY;
        /* capture = 0: every run is eager, none captures or replays. */
        if (e.action[k] == CGR_RUN_REPLAY || e.action[k] == CGR_RUN_CAPTURE ||
            e.action[k] == CGR_RUN_UPDATE)
            TEST_FAIL_("%s: eager run, step %d: cgr did '%s'", what, k + 1,
                       cgr_run_action_name(e.action[k]));
    }
    ASSERT_U64_EQ(g.ss.captures, n_capture_points);
    ASSERT_U64_EQ(g.ss.updates, n_updates);
    ASSERT_U64_EQ((g.ss.replays - g.ss.captures), n_replays);
    ASSERT_U64_EQ(e.ss.captures, 0);
    if (g.ss.update_failures)
        printf("%s: %llu update(s) failed and were instantiated instead; last reason: %s\n",
               what, (unsigned long long)g.ss.update_failures, g.ss.last_update_error);
    if (want_updates && n_updates == 0)
        TEST_FAIL_("%s: no update in place over %d capture(s) (%llu failed: %s)", what,
                   n_capture_points, (unsigned long long)g.ss.update_failures,
                   g.ss.last_update_error);
    /*
     * Rechecks (the model counts them as the replays they are) compared
     * each graph with its own shape's capture, an updated one's included:
     * some ran, and none found a difference.
     */
    if (recheck && (g.ss.frozen_checks <= g.ss.captures || g.ss.eager_runs != 0))
        TEST_FAIL_("%s: %llu frozen-value checks for %llu captures, %llu eager runs (%s)", what,
                   (unsigned long long)g.ss.frozen_checks, (unsigned long long)g.ss.captures,
                   (unsigned long long)g.ss.eager_runs, g.ss.capture_error);

    mlp_cfg c;
    mlp_cfg_default(&c, (int)buckets[nb - 1]);
    mlp_layout L;
    ASSERT_EQ(mlp_layout_init(&L, &c), 0);
    const size_t nbytes = L.n_floats * sizeof(float), a0 = (size_t)c.batch * L.out[0];
    const int Bmax = c.batch;
    same("dyn loss curves", (int)buckets[nb - 1], 0.f, g.loss, e.loss,
         (size_t)steps * sizeof g.loss[0]);
    for (int k = 0; k < steps; k++)
        same("dyn first hidden activations", (int)seq[k], 0.f, g.act0 + (size_t)k * a0,
             e.act0 + (size_t)k * a0, (size_t)seq[k] * L.out[0] * sizeof(float));
    same("dyn parameters", Bmax, 0.f, g.params, e.params, nbytes);
    same("dyn first moments", Bmax, 0.f, g.m, e.m, nbytes);
    same("dyn second moments", Bmax, 0.f, g.v, e.v, nbytes);
    ASSERT_EQ(g.count, steps);
    ASSERT_EQ(e.count, steps);
    for (int k = 0; k < steps; k++)
        ASSERT(isfinite(g.loss[k]));
    printf("dyn graph == eager, %s: %d steps bitwise (loss %.6f -> %.6f); %d captures of which "
           "%d updates in place, %d replays, %llu frozen-value checks\n",
           what, steps, (double)g.loss[0], (double)g.loss[steps - 1], n_capture_points,
           n_updates, n_replays, (unsigned long long)g.ss.frozen_checks);
    release(mark);
}

/* A true-batch sequence: `first` as given, then uniform in 1..max from a fixed seed. */
static void make_seq(int64_t *seq, int steps, const int64_t *first, int n_first, int64_t max,
                     uint64_t seed)
{
    rng g = {seed};
    for (int k = 0; k < steps; k++)
        seq[k] = k < n_first ? first[k] : 1 + (int64_t)(rng_next(&g) % (uint64_t)max);
}

int main(void)
{
    require_gpu();
    if (!mlp_device_ok()) {
        printf("SKIP: the W-mlp training step needs compute capability 9.0 (thread block "
               "clusters)\n");
        return TEST_SKIP;
    }
    const int sanitizer = under_sanitizer(NULL);
    if (sanitizer) {
        STEPS = 12;
        printf("under a sanitizer (CGR_TEST_SANITIZER): %d steps, B = 1 only\n", STEPS);
    }
    mlp_cfg c;
    mlp_layout L;
    mlp_cfg_default(&c, 1);
    ASSERT_EQ(mlp_layout_init(&L, &c), 0);
    float *params0 = xmalloc(L.n_floats * sizeof(float));
    ASSERT_EQ(mlp_init_params(&c, params0, 0x5eedULL), 0);

    test_reference(1, params0);
    if (!sanitizer)
        test_reference(8, params0);
    static const int Bs[] = {1, 8};
    for (size_t i = 0; i < (sanitizer ? 1u : sizeof Bs / sizeof Bs[0]); i++) {
        test_graph_eager(Bs[i], 0.f, params0);
        test_graph_eager(Bs[i], DROP_P, params0);
    }

    /* Dynamic batch. */
    test_dyn_reference(params0, sanitizer);
    const int dyn_steps = sanitizer ? 12 : DYN_MAX_STEPS;
    int64_t seq[DYN_MAX_STEPS];
    static const int64_t b3[] = {8, 16, 32}, first3[] = {5, 13, 27};
    make_seq(seq, dyn_steps, first3, 3, 32, 0x1234abcdULL);
    test_dyn_graph_eager("buckets {8,16,32}, cache 16", b3, 3, 16, 0, seq, dyn_steps, params0,
                         0);
    /* The same with a recheck after every 3 replays: small-batch and cuBLAS graphs alike. */
    if (!sanitizer)
        test_dyn_graph_eager("buckets {8,16,32}, cache 16, frozen_recheck 3", b3, 3, 16, 3, seq,
                             dyn_steps, params0, 0);
    /*
     * Cache of one graph: every change of bucket evicts the cached graph,
     * and the new bucket's capture is offered it for an update in place.
     * Buckets 2, 4 and 8 all take the small-batch path, whose graphs have
     * the same nodes and edges (only kernel functions and launch shapes
     * differ), so the updates must succeed.
     */
    static const int64_t bs[] = {2, 4, 8}, firsts[] = {3, 3, 3, 7, 7, 7, 2, 2, 2, 5, 5, 5};
    make_seq(seq, dyn_steps, firsts, 12, 8, 0x5678ef01ULL);
    test_dyn_graph_eager("small-path buckets {2,4,8}, cache 1 (update in place)", bs, 3, 1, 0,
                         seq, dyn_steps, params0, 1);
    /*
     * Runs of one bucket at a time, rechecked after every 2 replays, with a
     * one-graph cache: each change of bucket updates the executable in
     * place, and its rechecks compare with the new shape's capture.
     */
    if (!sanitizer) {
        for (int k = 0; k < dyn_steps; k++)
            seq[k] = (k / 12) % 2 ? 7 : 3;
        test_dyn_graph_eager("small-path buckets {4,8} in runs, cache 1, frozen_recheck 2", bs,
                             3, 1, 2, seq, dyn_steps, params0, 1);
        /* The cuBLAS path: whether cuBLAS picks kernels that keep the topology is its call. */
        static const int64_t bl[] = {16, 32}, firstl[] = {13, 13, 13, 27, 27, 27};
        make_seq(seq, dyn_steps, firstl, 6, 32, 0x9abc2345ULL);
        for (int k = 6; k < dyn_steps; k++)
            seq[k] = seq[k] < 9 ? seq[k] + 8 : seq[k]; /* keep to buckets 16 and 32 */
        test_dyn_graph_eager("cuBLAS-path buckets {16,32}, cache 1", bl, 2, 1, 0, seq,
                             dyn_steps, params0, 0);
    }

    printf("PASS\n");
    return 0;
}
