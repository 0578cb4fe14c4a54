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
 * The step runs as cgr-bench runs it: PDL on and, at small batch, the
 * weight gradients on a side stream (parallel graph branches). It exposes
 * its hidden activations as extra outputs (device-to-device copies inside
 * the step) so the test can see them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgr/cgr_philox.h"
#include "common.h"
#include "mlp.h"
#include "mlp_cgr.h"
#include "mlp_ref.h"

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

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_bufs b;
    STEP_TRY(mlp_cgr_bind(ctx, &m->cfg, m->scratch.total_bytes, &m->dev, &b, &h, &s));
    if (mlp_step_enqueue(&m->cfg, &b, h, s, 1) != 0) {
        fprintf(stderr, "test_mlp_cgr: %s\n", mlp_last_error());
        return CGR_STATUS_CUDA_ERROR;
    }
    for (int l = 0; l < m->n_hidden; l++) {
        void *out;
        STEP_TRY(cgr_ctx_output(ctx, 1 + l, &out));
        STEP_CUDA(cudaMemcpyAsync(out, b.act[l], m->scratch.act_bytes[l],
                                  cudaMemcpyDeviceToDevice, s));
    }
    return CGR_STATUS_OK;
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
    ASSERT_OK(cgr_runtime_create(&r->rt, &o));
    if (mlp_cgr_state_create(r->rt, &m->cfg, params0, &m->dev) != 0)
        TEST_FAIL_("%s", mlp_last_error());

    cgr_tensor_desc in[2] = {tensor2("x", CGR_DTYPE_F32, B, m->cfg.in_dim),
                             tensor1("labels", CGR_DTYPE_I32, B)};
    cgr_tensor_desc out[1 + MLP_MAX_LAYERS];
    memset(out, 0, sizeof out);
    out[0].name = "loss";
    out[0].dtype = CGR_DTYPE_F32;
    out[0].rank = 0;
    static const char *names[] = {"act0", "act1", "act2", "act3", "act4", "act5", "act6"};
    for (int l = 0; l < m->n_hidden; l++)
        out[1 + l] = tensor2(names[l], CGR_DTYPE_F32, B, m->L.out[l]);
    r->step = make_step(r->rt, "W-mlp", in, 2, out, 1 + m->n_hidden, step_fn, m);
    ASSERT_OK(cgr_step_set_seed(r->step, SEED));
}

static void run_close(run *r)
{
    ASSERT_OK(cgr_runtime_destroy(&r->rt));
    if (mlp_cgr_state_release(&r->m.dev) != 0)
        TEST_FAIL_("%s", mlp_last_error());
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
 * Runs step k; loss and acts (n_hidden arrays of B * hidden floats) receive
 * its outputs.
 */
static void run_step(run *r, int k, float *x, int *labels, float *loss, float **acts)
{
    const model *m = &r->m;
    make_batch(&m->cfg, k, x, labels);
    const void *inputs[2] = {x, labels};
    uint64_t ticket = 0;
    ASSERT_OK(cgr_step_run(r->step, inputs, &ticket));
    ASSERT_OK(cgr_step_wait(r->step, ticket));
    const void *data;
    size_t bytes;
    ASSERT_OK(cgr_step_output(r->step, ticket, 0, &data, &bytes));
    ASSERT_EQ(bytes, sizeof(float));
    memcpy(loss, data, sizeof(float));
    for (int l = 0; l < m->n_hidden; l++) {
        ASSERT_OK(cgr_step_output(r->step, ticket, 1 + l, &data, &bytes));
        ASSERT_EQ(bytes, m->scratch.act_bytes[l]);
        memcpy(acts[l], data, bytes);
    }
}

static void down(void *h, const void *d, size_t n)
{
    CUDA_OK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
}

static float **alloc_acts(const model *m)
{
    float **a = calloc((size_t)m->n_hidden, sizeof *a);
    ASSERT(a != NULL);
    for (int l = 0; l < m->n_hidden; l++) {
        a[l] = malloc(m->scratch.act_bytes[l]);
        ASSERT(a[l] != NULL);
    }
    return a;
}

static void free_acts(const model *m, float **a)
{
    for (int l = 0; l < m->n_hidden; l++)
        free(a[l]);
    free(a);
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

static void test_reference(int B, const float *params0)
{
    run r;
    run_open(&r, B, 0.f, 1, 1, params0);
    const model *m = &r.m;
    const size_t n = m->L.n_floats, nb = n * sizeof(float);
    mlp_ref ref;
    ASSERT_EQ(mlp_ref_init(&ref, &m->cfg, params0), 0);
    float *p = malloc(nb), *mm = malloc(nb), *vv = malloc(nb);
    float *x = malloc((size_t)B * m->cfg.in_dim * sizeof(float));
    int *labels = malloc((size_t)B * sizeof(int));
    float **acts = alloc_acts(m);
    ASSERT(p && mm && vv && x && labels);
    double worst_loss = 0.0, worst_param = 0.0;
    for (int k = 0; k < REF_STEPS; k++) {
        /* The reference starts from the GPU's state before this step. */
        ASSERT_OK(cgr_step_sync(r.step));
        down(p, m->dev.params, nb);
        down(mm, m->dev.m, nb);
        down(vv, m->dev.v, nb);
        mlp_ref_set_state(&ref, p, mm, vv, k);
        float loss;
        run_step(&r, k, x, labels, &loss, acts);
        long hinted = 0;
        const double want = mlp_ref_step(&ref, x, labels, (const float *const *)acts, 1e-4,
                                         &hinted);
        const double el = fabs((double)loss - want) / fabs(want);
        if (el > 1e-4)
            TEST_FAIL_("B=%d step %d: loss %.9g, float64 %.9g (rel %.3g > 1e-4)", B, k + 1,
                       (double)loss, want, el);
        worst_loss = el > worst_loss ? el : worst_loss;
        ASSERT_OK(cgr_step_sync(r.step));
        down(p, m->dev.params, nb);
        for (int l = 0; l < m->L.n_layers; l++) {
            const double ew = norm_rel(p + m->L.w_off[l], ref.p + m->L.w_off[l],
                                       (size_t)m->L.out[l] * (size_t)m->L.in[l]);
            const double eb = norm_rel(p + m->L.b_off[l], ref.p + m->L.b_off[l],
                                       (size_t)m->L.out[l]);
            if (ew > 1e-4 || eb > 1e-4)
                TEST_FAIL_("B=%d step %d layer %d: params off the float64 reference: weight "
                           "%.3g, bias %.3g (norm-wise, limit 1e-4)",
                           B, k + 1, l, ew, eb);
            worst_param = ew > worst_param ? ew : worst_param;
            worst_param = eb > worst_param ? eb : worst_param;
        }
        int count = -1;
        down(&count, m->dev.step, sizeof count);
        ASSERT_EQ(count, k + 1);
    }
    cgr_step_stats st;
    ASSERT_OK(cgr_step_get_stats(r.step, &st));
    ASSERT_EQ(st.mode, CGR_MODE_GRAPH);
    printf("fp64 B=%d: %d steps (warm-up, capture, replay): worst loss rel err %.2e, worst "
           "param norm-wise rel err %.2e (limits 1e-4)\n",
           B, REF_STEPS, worst_loss, worst_param);
    free_acts(m, acts);
    free(p);
    free(mm);
    free(vv);
    free(x);
    free(labels);
    mlp_ref_free(&ref);
    run_close(&r);
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
    t->act0 = malloc(STEPS * a0 * sizeof(float));
    t->params = malloc(nb);
    t->m = malloc(nb);
    t->v = malloc(nb);
    float *x = malloc((size_t)B * m->cfg.in_dim * sizeof(float));
    int *labels = malloc((size_t)B * sizeof(int));
    float **acts = alloc_acts(m);
    ASSERT(t->act0 && t->params && t->m && t->v && x && labels);
    for (int k = 0; k < STEPS; k++) {
        run_step(&r, k, x, labels, &t->loss[k], acts);
        memcpy(t->act0 + (size_t)k * a0, acts[0], a0 * sizeof(float));
    }
    for (int l = 0; l < m->n_hidden; l++) {
        t->acts_last[l] = malloc(m->scratch.act_bytes[l]);
        ASSERT(t->acts_last[l] != NULL);
        memcpy(t->acts_last[l], acts[l], m->scratch.act_bytes[l]);
    }
    ASSERT_OK(cgr_step_sync(r.step));
    down(t->params, m->dev.params, nb);
    down(t->m, m->dev.m, nb);
    down(t->v, m->dev.v, nb);
    down(&t->count, m->dev.step, sizeof t->count);
    cgr_step_stats st;
    ASSERT_OK(cgr_step_get_stats(r.step, &st));
    t->mode = st.mode;
    free_acts(m, acts);
    free(x);
    free(labels);
    run_close(&r);
}

static void trajectory_free(trajectory *t, int n_hidden)
{
    free(t->act0);
    free(t->params);
    free(t->m);
    free(t->v);
    for (int l = 0; l < n_hidden; l++)
        free(t->acts_last[l]);
}

static void same(const char *what, int B, float p, const void *a, const void *b, size_t bytes)
{
    if (memcmp(a, b, bytes) != 0) {
        const unsigned char *x = a, *y = b;
        size_t i = 0;
        while (x[i] == y[i])
            i++;
        TEST_FAIL_("B=%d dropout %g: graphed and eager %s differ (first at byte %zu of %zu)", B,
                   (double)p, what, i, bytes);
    }
}

/* The host's decision for unit e of hidden layer 0 in step k (mlp_dropout's contract). */
static int host_dropped(uint64_t counters_per_step, int k, size_t e)
{
    const cgr_philox4 r =
        cgr_philox4x32(SEED, (uint64_t)k * counters_per_step + 0 + e / 4, 0);
    return cgr_philox_uniform(r.v[e % 4]) < DROP_P;
}

static void check_dropout(const trajectory *t, int B, const mlp_cfg *cfg)
{
    const uint64_t per_step = mlp_dropout_counters(cfg);
    const size_t a0 = (size_t)B * (size_t)cfg->hidden;
    size_t dropped = 0, total = 0, not_zero = 0, moved = 0;
    for (int k = 0; k < STEPS; k++) {
        const float *a = t->act0 + (size_t)k * a0;
        for (size_t e = 0; e < a0; e++) {
            const int d = host_dropped(per_step, k, e);
            dropped += (size_t)d;
            not_zero += (size_t)(d && a[e] != 0.f);
            if (k > 0)
                moved += (size_t)(d != host_dropped(per_step, k - 1, e));
        }
        total += a0;
    }
    if (not_zero)
        TEST_FAIL_("B=%d: %zu units the host's Philox drops are not 0 on the GPU", B, not_zero);
    const double rate = (double)dropped / (double)total;
    const double sigma = sqrt(DROP_P * (1.0 - DROP_P) / (double)total);
    if (fabs(rate - DROP_P) > 5.0 * sigma)
        TEST_FAIL_("B=%d: drop rate %.5f over %zu units, expected %.2f", B, rate, total,
                   (double)DROP_P);
    /* Independent masks differ in 2 p (1 - p) of the units from one replay to the next. */
    ASSERT_GT(moved, (size_t)(0.1 * (double)total));
    printf("dropout B=%d: %zu units over %d steps, drop rate %.4f, every dropped unit 0 on the "
           "GPU, %.1f%% of decisions change between consecutive steps\n",
           B, total, STEPS, rate, 100.0 * (double)moved / (double)(total - a0));
}

static void test_graph_eager(int B, float dropout, const float *params0)
{
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
    trajectory_free(&g, c.n_hidden);
    trajectory_free(&e, c.n_hidden);
}

int main(void)
{
    require_gpu();
    const int sanitizer = under_sanitizer(NULL);
    if (sanitizer) {
        STEPS = 12;
        printf("under a sanitizer (CGR_TEST_SANITIZER): %d steps, B = 1 only\n", STEPS);
    }
    mlp_cfg c;
    mlp_layout L;
    mlp_cfg_default(&c, 1);
    ASSERT_EQ(mlp_layout_init(&L, &c), 0);
    float *params0 = malloc(L.n_floats * sizeof(float));
    ASSERT(params0 != NULL);
    ASSERT_EQ(mlp_init_params(&c, params0, 0x5eedULL), 0);

    test_reference(1, params0);
    if (!sanitizer)
        test_reference(8, params0);
    static const int Bs[] = {1, 8};
    for (size_t i = 0; i < (sanitizer ? 1u : sizeof Bs / sizeof Bs[0]); i++) {
        test_graph_eager(Bs[i], 0.f, params0);
        test_graph_eager(Bs[i], DROP_P, params0);
    }
    free(params0);
    printf("PASS\n");
    return 0;
}
