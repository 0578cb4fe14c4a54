/*
 * W-chain suite: the same N-kernel step run eagerly, as a raw CUDA graph
 * and through cgr, with and without 4 KiB in + 4 B out, all in one run on
 * one GPU so the ratios compare like with like.
 *
 * Every mode starts x from the same known state and follows x[0] on the
 * host (chain_model), so modes with an output check it every step and the
 * others check x[0] once at the end.
 *
 * The raw modes of every N run in a first pass and the cgr modes in a
 * second one (main.c), and the raw graph is timed again after the cgr
 * modes: if anything cgr does slowed the process down for other graphs
 * (as a CUPTI subscription once did: every later cudaGraphLaunch cost
 * ~20 us of host time instead of ~2), the summary says so.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "chain.h"
#include "util.h"

/* Raw CUDA state shared by the raw modes of one N. */
typedef struct chain_env {
    const bench_config *cfg;
    int n;
    cudaStream_t stream;
    float *x, *d_in, *d_out; /* device */
    float *h_in, *h_out;     /* pinned, for the cudaMemcpyAsync mode */
    float x_init[CHAIN_ELEMS];
    bench_rng rng;
} chain_env;

/* Reads x[0] back and compares it with the host model. */
static int check_final_x(const float *x_dev, float expect, mode_result *r)
{
    float got = 0.0f;
    CK(cudaMemcpy(&got, x_dev, sizeof got, cudaMemcpyDeviceToHost));
    if (float_matches(got, expect))
        return 0;
    bench_error("%s: x[0] after the last step is %.9g, the host model says %.9g", r->name,
                (double)got, (double)expect);
    r->wrong = 1;
    return -1;
}

static int check_output(const char *mode, long k, float got, float expect)
{
    if (float_matches(got, expect))
        return 0;
    bench_error("%s: step %ld output is %.9g, the host model says %.9g (wrong result)", mode, k,
                (double)got, (double)expect);
    return CHECK_WRONG;
}

/* ---- raw modes: eager, graph, graph + cudaMemcpyAsync ---------------- */

typedef struct raw_mode {
    chain_env *e;
    const char *name;
    int use_graph;        /* 0: N eager launches per step */
    int io;               /* cudaMemcpyAsync in/out around the graph launch */
    cudaGraphExec_t exec;
    float expect;         /* host model of x[0] */
} raw_mode;

static chain_args raw_args(const chain_env *e, int io)
{
    chain_args a = {e->x, e->n, io ? e->d_in : NULL, CHAIN_IN_FLOATS, io ? e->d_out : NULL,
                    e->cfg->pdl};
    return a;
}

static int raw_capture(raw_mode *m)
{
    chain_env *e = m->e;
    cudaGraph_t g = NULL;
    chain_args a = raw_args(e, m->io);
    TRY(capture_begin(e->stream));
    int ok = !bench_cuda_failed(chain_enqueue(&a, e->stream), "chain_enqueue", __FILE__, __LINE__);
    TRY(capture_end(e->stream, ok, &g));
    int rc = graph_instantiate(g, e->stream, &m->exec);
    cudaGraphDestroy(g);
    return rc;
}

static int raw_prepare(void *self, long k)
{
    raw_mode *m = self;
    chain_env *e = m->e;
    (void)k;
    if (m->io) {
        rng_fill(&e->rng, e->h_in, CHAIN_IN_FLOATS);
        *e->h_out = NAN; /* a step that writes nothing cannot pass the check */
    }
    m->expect = chain_model(m->expect, m->io, m->io ? e->h_in[0] : 0.0f, e->n);
    return 0;
}

static int raw_submit(void *self, long k)
{
    raw_mode *m = self;
    chain_env *e = m->e;
    (void)k;
    if (!m->use_graph) {
        chain_args a = raw_args(e, 0);
        CK(chain_enqueue(&a, e->stream));
        return 0;
    }
    if (m->io)
        CK(cudaMemcpyAsync(e->d_in, e->h_in, CHAIN_IN_FLOATS * sizeof(float),
                           cudaMemcpyHostToDevice, e->stream));
    CK(cudaGraphLaunch(m->exec, e->stream));
    if (m->io)
        CK(cudaMemcpyAsync(e->h_out, e->d_out, sizeof(float), cudaMemcpyDeviceToHost, e->stream));
    return 0;
}

static int raw_wait(void *self, long k)
{
    raw_mode *m = self;
    (void)k;
    CK(cudaStreamSynchronize(m->e->stream));
    return 0;
}

static int raw_check(void *self, long k)
{
    raw_mode *m = self;
    return check_output(m->name, k, *m->e->h_out, m->expect);
}

static int raw_mode_run(void *ctx, mode_result *r)
{
    raw_mode *m = ctx;
    chain_env *e = m->e;
    step_ops ops = {raw_prepare, raw_submit, raw_wait, m->io ? raw_check : NULL, NULL};
    int rc = -1;
    CK(cudaMemcpy(e->x, e->x_init, sizeof e->x_init, cudaMemcpyHostToDevice));
    m->expect = e->x_init[0];
    if (m->use_graph)
        TRY_GOTO(raw_capture(m), out);
    TRY_GOTO(measure(&ops, m, e->cfg->warmup, e->cfg->steps, r), out);
    TRY_GOTO(check_final_x(e->x, m->expect, r), out);
    rc = 0;
out:
    if (m->exec)
        cudaGraphExecDestroy(m->exec);
    m->exec = NULL;
    return rc;
}

/* ---- cgr modes ----------------------------------------------------------- */

typedef struct step_user {
    float *x;
    int n;
    int io;
    int pdl;
} step_user;

/* The user's step: the same N kernels, on cgr's stream, I/O through cgr. */
static cgr_status chain_step_fn(cgr_ctx *ctx, void *user)
{
    const step_user *u = user;
    cgr_stream s = NULL;
    cgr_status st = cgr_ctx_stream(ctx, &s);
    if (st != CGR_STATUS_OK)
        return st;
    chain_args a = {u->x, u->n, NULL, CHAIN_IN_FLOATS, NULL, u->pdl};
    if (u->io) {
        void *in = NULL, *out = NULL;
        if ((st = cgr_ctx_input(ctx, 0, &in)) != CGR_STATUS_OK ||
            (st = cgr_ctx_output(ctx, 0, &out)) != CGR_STATUS_OK)
            return st;
        a.in = in;
        a.out = out;
    }
    if (bench_cuda_failed(chain_enqueue(&a, s), "chain_enqueue (step function)", __FILE__,
                          __LINE__))
        return CGR_STATUS_CUDA_ERROR;
    return CGR_STATUS_OK;
}

typedef struct cgr_mode {
    chain_env *e;
    const char *name;
    int io;           /* 4 KiB in + 4 B out */
    int fast;         /* cgr_step_acquire + write into the slot + cgr_step_launch */
    int memcpy_nodes; /* zero_copy_max_bytes = 0 */
    int event_wait;   /* wait_spin_us = 0: wait on the event, not the flag */
    cgr_info *info;
    cgr_runtime *rt;
    cgr_step *step;
    step_user user;
    float in_host[CHAIN_IN_FLOATS];
    const float *in_ptr; /* the input of the step being prepared */
    cgr_slot slot;
    uint64_t ticket;
    uint64_t replays0;
    float expect;
} cgr_mode;

static cgr_tensor_desc vec_f32(const char *name, int64_t n)
{
    cgr_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = CGR_DTYPE_F32;
    d.rank = 1;
    d.dims[0] = n;
    return d;
}

static int cgr_setup(cgr_mode *m)
{
    const bench_config *cfg = m->e->cfg;
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = cfg->device;
    if (m->memcpy_nodes)
        o.advanced.zero_copy_max_bytes = 0;
    if (m->event_wait)
        o.advanced.wait_spin_us = 0;
    CGR_CK(cgr_runtime_create(&m->rt, &o));
    void *x = NULL;
    CGR_CK(cgr_persistent_alloc(m->rt, sizeof m->e->x_init, &x));
    CK(cudaMemcpy(x, m->e->x_init, sizeof m->e->x_init, cudaMemcpyHostToDevice));
    m->user.x = x;
    m->user.n = m->e->n;
    m->user.io = m->io;
    m->user.pdl = m->e->cfg->pdl;
    m->expect = m->e->x_init[0];

    cgr_tensor_desc in = vec_f32("in", CHAIN_IN_FLOATS), out = vec_f32("out", 1);
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = m->name;
    d.fn = chain_step_fn;
    d.user = &m->user;
    if (m->io) {
        d.inputs = &in;
        d.n_inputs = 1;
        d.outputs = &out;
        d.n_outputs = 1;
    }
    CGR_CK(cgr_step_create(m->rt, &d, &m->step));
    return 0;
}

static int cgr_prepare(void *self, long k)
{
    cgr_mode *m = self;
    (void)k;
    if (!m->io) {
        m->expect = chain_model(m->expect, 0, 0.0f, m->e->n);
        return 0;
    }
    float *dst = m->in_host;
    if (m->fast) {
        /*
         * The fast path: the data is produced straight into cgr's pinned
         * slot. Acquiring the slot (a ring-index update) is therefore
         * outside the clocks, like producing the data.
         */
        CGR_CK(cgr_step_acquire(m->step, NULL, 0, &m->slot));
        dst = m->slot.inputs[0];
    }
    rng_fill(&m->e->rng, dst, CHAIN_IN_FLOATS);
    m->in_ptr = dst;
    m->expect = chain_model(m->expect, 1, dst[0], m->e->n);
    return 0;
}

static int cgr_submit(void *self, long k)
{
    cgr_mode *m = self;
    (void)k;
    if (m->fast) {
        CGR_CK(cgr_step_launch(m->step, &m->slot));
        m->ticket = m->slot.ticket;
        return 0;
    }
    const void *inputs[1] = {m->in_ptr};
    CGR_CK(cgr_step_run(m->step, NULL, m->io ? inputs : NULL, &m->ticket));
    return 0;
}

static int cgr_wait(void *self, long k)
{
    cgr_mode *m = self;
    (void)k;
    CGR_CK(cgr_step_wait(m->step, m->ticket));
    return 0;
}

static int cgr_check(void *self, long k)
{
    cgr_mode *m = self;
    float got;
    size_t bytes = 0;
    CGR_CK(cgr_step_output(m->step, m->ticket, 0, &got, sizeof got, &bytes));
    if (bytes != sizeof(float)) {
        bench_error("%s: output has %zu bytes, expected 4", m->name, bytes);
        return -1;
    }
    return check_output(m->name, k, got, m->expect);
}

/* After warm-up every step must be a graph replay, with I/O staged as configured. */
static int cgr_after_warmup(void *self)
{
    cgr_mode *m = self;
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(m->step, &s));
    if (s.mode != CGR_MODE_GRAPH) {
        bench_error("%s: the step is not replaying a graph after warm-up (mode %d): %s", m->name,
                    (int)s.mode, s.capture_error[0] ? s.capture_error : "no capture error given");
        return -1;
    }
    uint64_t want_zc = m->io && !m->memcpy_nodes ? 2 : 0;
    uint64_t want_mc = m->io && m->memcpy_nodes ? 2 : 0;
    if (s.zero_copy_tensors != want_zc || s.memcpy_tensors != want_mc) {
        bench_error("%s: cgr staged %llu tensors zero-copy and %llu by memcpy nodes, expected "
                    "%llu and %llu",
                    m->name, (unsigned long long)s.zero_copy_tensors,
                    (unsigned long long)s.memcpy_tensors, (unsigned long long)want_zc,
                    (unsigned long long)want_mc);
        return -1;
    }
    m->replays0 = s.replays;
    return 0;
}

static int cgr_finish(cgr_mode *m, mode_result *r)
{
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(m->step, &s));
    cgr_info *i = m->info;
    i->valid = 1;
    i->graph_nodes = s.graph_nodes;
    i->zero_copy_tensors = s.zero_copy_tensors;
    i->memcpy_tensors = s.memcpy_tensors;
    i->replays = s.replays;
    i->warmup_runs = s.warmup_runs;
    i->capture_us = s.last_capture_us + s.last_make_us;
    if (s.replays - m->replays0 != (uint64_t)r->steps || s.mode != CGR_MODE_GRAPH) {
        bench_error("%s: %llu of %d timed steps were graph replays", m->name,
                    (unsigned long long)(s.replays - m->replays0), r->steps);
        return -1;
    }
    return check_final_x(m->user.x, m->expect, r);
}

static int cgr_mode_run(void *ctx, mode_result *r)
{
    cgr_mode *m = ctx;
    step_ops ops = {cgr_prepare, cgr_submit, cgr_wait, m->io ? cgr_check : NULL,
                    cgr_after_warmup};
    int rc = -1;
    TRY_GOTO(cgr_setup(m), out);
    TRY_GOTO(measure(&ops, m, m->e->cfg->warmup, m->e->cfg->steps, r), out);
    TRY_GOTO(cgr_finish(m, r), out);
    rc = 0;
out:
    if (m->rt && m->e->cfg->stats) {
        printf("cgr stats, chain N=%d, %s:\n", m->e->n, m->name);
        bench_print_stats(m->rt, (const cgr_step *const *)&m->step, m->step ? 1 : 0);
    }
    if (m->step)
        bench_cgr_failed(cgr_step_destroy(&m->step), "cgr_step_destroy", __FILE__, __LINE__);
    if (m->rt)
        bench_cgr_failed(cgr_runtime_destroy(&m->rt), "cgr_runtime_destroy", __FILE__,
                         __LINE__);
    return rc;
}

/* ---- one N ------------------------------------------------------------- */

static int env_setup(chain_env *e)
{
    CK(cudaStreamCreateWithFlags(&e->stream, cudaStreamDefault));
    CK(cudaMalloc((void **)&e->x, sizeof e->x_init));
    CK(cudaMalloc((void **)&e->d_in, CHAIN_IN_FLOATS * sizeof(float)));
    CK(cudaMalloc((void **)&e->d_out, sizeof(float)));
    CK(cudaHostAlloc((void **)&e->h_in, CHAIN_IN_FLOATS * sizeof(float), cudaHostAllocDefault));
    CK(cudaHostAlloc((void **)&e->h_out, sizeof(float), cudaHostAllocDefault));
    CK(cudaMemset(e->d_in, 0, CHAIN_IN_FLOATS * sizeof(float)));
    CK(cudaMemset(e->d_out, 0, sizeof(float)));
    return 0;
}

static void env_teardown(chain_env *e)
{
    if (e->stream)
        cudaStreamSynchronize(e->stream);
    cudaFree(e->x);
    cudaFree(e->d_in);
    cudaFree(e->d_out);
    cudaFreeHost(e->h_in);
    cudaFreeHost(e->h_out);
    if (e->stream)
        cudaStreamDestroy(e->stream);
    (void)cudaGetLastError();
}

static const char *const chain_mode_names[CHAIN_MODES] = {
    [CHAIN_EAGER] = "eager",
    [CHAIN_GRAPH] = "graph",
    [CHAIN_CGR] = "cgr",
    [CHAIN_CGR_IO] = "cgr_io_zero_copy",
    [CHAIN_CGR_IO_FAST] = "cgr_io_zero_copy_fast_path",
    [CHAIN_GRAPH_IO] = "graph_io_memcpy_async",
    [CHAIN_CGR_IO_MEMCPY] = "cgr_io_memcpy_nodes",
    [CHAIN_CGR_IO_EVENT] = "cgr_io_zero_copy_event_wait",
};

static unsigned chain_budget(const chain_env *e)
{
    /* Eager launches cost up to ~10 us of host time each. */
    return mode_budget_s(e->cfg, 0.5 + e->n * 0.01);
}

static void group_name(const chain_env *e, char *buf, size_t n)
{
    snprintf(buf, n, "chain N=%d", e->n);
}

static void run_raw_modes(chain_env *e, bench_results *res, chain_result *cr)
{
    char group[32];
    group_name(e, group, sizeof group);
    raw_mode eager = {e, chain_mode_names[CHAIN_EAGER], 0, 0, NULL, 0.0f};
    raw_mode graph = {e, chain_mode_names[CHAIN_GRAPH], 1, 0, NULL, 0.0f};
    raw_mode graph_io = {e, chain_mode_names[CHAIN_GRAPH_IO], 1, 1, NULL, 0.0f};
    run_mode(res, group, &cr->mode[CHAIN_EAGER], chain_budget(e), raw_mode_run, &eager);
    run_mode(res, group, &cr->mode[CHAIN_GRAPH], chain_budget(e), raw_mode_run, &graph);
    run_mode(res, group, &cr->mode[CHAIN_GRAPH_IO], chain_budget(e), raw_mode_run, &graph_io);
}

static void run_cgr_modes(chain_env *e, bench_results *res, chain_result *cr)
{
    static const struct {
        int mode, io, fast, memcpy_nodes, event_wait;
    } modes[] = {
        {CHAIN_CGR, 0, 0, 0, 0},
        {CHAIN_CGR_IO, 1, 0, 0, 0},
        {CHAIN_CGR_IO_FAST, 1, 1, 0, 0},
        {CHAIN_CGR_IO_MEMCPY, 1, 0, 1, 0},
        {CHAIN_CGR_IO_EVENT, 1, 0, 0, 1},
    };
    char group[32];
    group_name(e, group, sizeof group);
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        int id = modes[i].mode;
        cgr_mode cm;
        memset(&cm, 0, sizeof cm);
        cm.e = e;
        cm.name = chain_mode_names[id];
        cm.io = modes[i].io;
        cm.fast = modes[i].fast;
        cm.memcpy_nodes = modes[i].memcpy_nodes;
        cm.event_wait = modes[i].event_wait;
        cm.info = &cr->cgr[id];
        run_mode(res, group, &cr->mode[id], chain_budget(e), cgr_mode_run, &cm);
    }
}

/* Sets up the raw state for N kernels; on failure marks `modes` of *r as not run. */
static int env_open(chain_env *e, const bench_config *cfg, bench_results *res, int n,
                    mode_result *const *modes, int n_modes)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->n = n;
    rng_seed(&e->rng, 0x5eed0000u + (uint64_t)n);
    chain_init_state(e->x_init, CHAIN_ELEMS);
    watchdog_arm("chain setup", cfg->timeout_s);
    int ok = res->aborted ? 0 : env_setup(e) == 0;
    watchdog_disarm();
    if (ok)
        return 0;
    int skipped = res->aborted;
    for (int i = 0; i < n_modes; i++)
        mode_result_not_run(modes[i], skipped);
    if (!skipped && bench_device_recover() != 0)
        res->aborted = 1;
    env_teardown(e);
    return -1;
}

static void chain_one(const bench_config *cfg, bench_results *res, chain_result *cr,
                      enum chain_pass pass)
{
    static const int raw_ids[] = {CHAIN_EAGER, CHAIN_GRAPH, CHAIN_GRAPH_IO};
    static const int cgr_ids[] = {CHAIN_CGR, CHAIN_CGR_IO, CHAIN_CGR_IO_FAST,
                                  CHAIN_CGR_IO_MEMCPY, CHAIN_CGR_IO_EVENT};
    const int *ids = pass == CHAIN_PASS_RAW ? raw_ids : cgr_ids;
    int n_ids = pass == CHAIN_PASS_RAW ? 3 : 5;
    mode_result *modes[CHAIN_MODES];
    for (int i = 0; i < n_ids; i++)
        modes[i] = &cr->mode[ids[i]];
    chain_env e;
    if (env_open(&e, cfg, res, cr->n_kernels, modes, n_ids) != 0)
        return;
    if (pass == CHAIN_PASS_RAW)
        run_raw_modes(&e, res, cr);
    else
        run_cgr_modes(&e, res, cr);
    env_teardown(&e);
}

int chain_suite(const bench_config *cfg, bench_results *res, enum chain_pass pass)
{
    static const int all_n[CHAIN_MAX_SIZES] = {10, 100, 1000};
    static const int quick_n[1] = {100};
    if (pass == CHAIN_PASS_RAW) {
        const int *ns = cfg->quick ? quick_n : all_n;
        res->chain_ran = 1;
        res->n_chain = cfg->quick ? 1 : CHAIN_MAX_SIZES;
        for (int i = 0; i < res->n_chain; i++) {
            chain_result *cr = &res->chain[i];
            memset(cr, 0, sizeof *cr);
            cr->n_kernels = ns[i];
            for (int m = 0; m < CHAIN_MODES; m++)
                mode_result_init(&cr->mode[m], chain_mode_names[m]);
        }
    }
    for (int i = 0; i < res->n_chain; i++)
        chain_one(cfg, res, &res->chain[i], pass);
    return 0;
}

void chain_canary(const bench_config *cfg, bench_results *res, mode_result *r)
{
    chain_env e;
    mode_result *modes[1] = {r};
    if (env_open(&e, cfg, res, 100, modes, 1) != 0)
        return;
    raw_mode graph = {&e, r->name, 1, 0, NULL, 0.0f};
    run_mode(res, "canary", r, chain_budget(&e), raw_mode_run, &graph);
    env_teardown(&e);
}

/* A chain step that synchronizes its stream, which no capture allows. */
static cgr_status syncing_step_fn(cgr_ctx *ctx, void *user)
{
    step_user *u = user;
    cgr_stream s = NULL;
    cgr_status st = cgr_ctx_stream(ctx, &s);
    if (st != CGR_STATUS_OK)
        return st;
    chain_args a = {u->x, u->n, NULL, CHAIN_IN_FLOATS, NULL, 0};
    if (bench_cuda_failed(chain_enqueue(&a, s), "chain_enqueue", __FILE__, __LINE__))
        return CGR_STATUS_CUDA_ERROR;
    /* Eagerly harmless; during capture it fails, and the error is dropped here. */
    (void)cudaStreamSynchronize(s);
    (void)cudaGetLastError();
    return CGR_STATUS_OK;
}

static int diagnose_once(const bench_config *cfg, bench_results *res)
{
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = cfg->device;
    o.diagnose = 1;
    cgr_runtime *rt = NULL;
    cgr_step *step = NULL;
    int rc = -1;
    CGR_CK(cgr_runtime_create(&rt, &o));
    step_user u = {NULL, 10, 0, 0};
    CGR_CK_GOTO(cgr_persistent_alloc(rt, CHAIN_ELEMS * sizeof(float), (void **)&u.x), out);
    cgr_step_desc d;
    CGR_CK_GOTO(cgr_step_desc_init(&d), out);
    d.name = "chain_syncing";
    d.fn = syncing_step_fn;
    d.user = &u;
    CGR_CK_GOTO(cgr_step_create(rt, &d, &step), out);
    for (int k = 0; k < 3; k++) { /* two warm-ups, then the capture that fails */
        CGR_CK_GOTO(cgr_step_run(step, NULL, NULL, NULL), out);
        CGR_CK_GOTO(cgr_step_wait(step, CGR_TICKET_LAST), out);
    }
    cgr_step_stats s;
    CGR_CK_GOTO(cgr_step_get_stats(step, &s), out);
    const char *diag = strstr(s.capture_error, "the first failing call");
    snprintf(res->diagnosis, sizeof res->diagnosis, "%s", diag ? diag : s.capture_error);
    res->diagnosis_ok = diag && strstr(diag, "cudaStreamSynchronize");
    if (!res->diagnosis_ok)
        bench_error("the diagnosis did not name cudaStreamSynchronize: %s", s.capture_error);
    rc = res->diagnosis_ok ? 0 : -1;
out:
    if (rt)
        bench_cgr_failed(cgr_runtime_destroy(&rt), "cgr_runtime_destroy", __FILE__, __LINE__);
    return rc;
}

void chain_diagnosis(const bench_config *cfg, bench_results *res)
{
    res->diagnosis_ran = 1;
    if (diagnose_once(cfg, res) != 0 && !res->diagnosis[0])
        snprintf(res->diagnosis, sizeof res->diagnosis, "%s", bench_last_error());
}
