/*
 * W-chain suite: the same N-kernel step run eagerly, as a raw CUDA graph
 * and through cgr, plain and with programmatic dependent launch, with and
 * without 4 KiB in + 4 B out. All modes of one N run interleaved in rounds
 * (measure_rounds), so the ratios compare like with like.
 *
 * Every mode has its own state, starts it from the same known values and
 * follows x[0] on the host (chain_model), so modes with an output check it
 * every step and the others check x[0] once at the end. All modes of one
 * N work on their state in the same device buffer (chain_env.x, see
 * state_enter): a step of short kernels runs a few percent faster or
 * slower depending on where its buffer lies, which would otherwise go
 * into the ratios between modes.
 *
 * The raw graph is also timed alone before the first cgr runtime exists
 * and after every cgr mode (the canary): if anything cgr does slowed the
 * process down for other graphs (as a CUPTI subscription once did:
 * docs/benchmarks.md, "CUPTI attached slows every later launch"), the
 * check on its host time says so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "chain.h"
#include "util.h"

/* One step of the chain: what every mode runs. */
typedef struct chain_args {
    float *x;          /* CHAIN_ELEMS floats of persistent state */
    int n_kernels;     /* N >= 1 */
    const float *in;   /* read by the first kernel; NULL for none */
    size_t n_in;       /* floats in `in` */
    float *out;        /* the last kernel writes x[0] here; NULL for none */
    int pdl;           /* launch with programmatic dependent launch */
} chain_args;

/* Enqueues the N kernels of one step on `s`. */
static cudaError_t chain_enqueue(const chain_args *a, cudaStream_t s)
{
    for (int k = 0; k < a->n_kernels; k++) {
        const float *in = k == 0 ? a->in : NULL;
        float *out = k == a->n_kernels - 1 ? a->out : NULL;
        cudaError_t e = chain_kernel_launch(a->x, in, in ? a->n_in : 1, out, a->pdl, s);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

/*
 * Host model of x[0] after one step that started from x0 (in0: in[0] of
 * the step's input; has_in = 0 for a step without input). Bit-exact with
 * the GPU, see chain_kernels.cu.
 */
static float chain_model(float x0, int has_in, float in0, int n_kernels)
{
    float v = x0;
    for (int k = 0; k < n_kernels; k++) {
        if (k == 0 && has_in)
            v += in0;
        v = fmaf(v, CHAIN_A, CHAIN_B);
    }
    return v;
}

/* Deterministic, non-zero initial state of x: spread over (0.5, 1.5), each element different. */
static void chain_init_state(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f + (float)((i * 2654435761u) % 1000u) / 1000.0f + 0.0005f;
}

/* Raw CUDA state shared by the modes of one N. */
typedef struct chain_env {
    const bench_config *cfg;
    int n;
    cudaStream_t stream;
    float *d_in, *d_out;     /* device, for the cudaMemcpyAsync mode */
    float *h_in, *h_out;     /* pinned, for the cudaMemcpyAsync mode */
    float x_init[CHAIN_ELEMS];
    bench_rng rng;
    float *x;            /* device: the state of the mode whose turn it is */
    const void *owner;   /* that mode */
    float *owner_saved;  /* where that mode's state goes when its turn ends */
} chain_env;

/*
 * Moves mode `who`'s state into e->x for its turn (untimed, from prepare),
 * after saving the previous owner's to its own buffer. Kernels and graphs
 * of every mode address e->x; each mode's `saved` buffer only holds its
 * state between turns. The copies end before the next step starts, so
 * the previous mode's stream and this one's need no other ordering.
 */
static int state_enter(chain_env *e, const void *who, float *saved)
{
    if (e->owner == who)
        return 0;
    if (e->owner)
        CK(cudaMemcpy(e->owner_saved, e->x, sizeof e->x_init, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(e->x, saved, sizeof e->x_init, cudaMemcpyDeviceToDevice));
    CK(cudaDeviceSynchronize());
    e->owner = who;
    e->owner_saved = saved;
    return 0;
}

/* Where mode `who`'s state is now. */
static const float *state_of(const chain_env *e, const void *who, const float *saved)
{
    return e->owner == who ? e->x : saved;
}

/* A mode's buffer for its state between turns, holding the initial state. */
static int state_new(const chain_env *e, float **saved)
{
    CK(cudaMalloc((void **)saved, sizeof e->x_init));
    CK(cudaMemcpy(*saved, e->x_init, sizeof e->x_init, cudaMemcpyHostToDevice));
    return 0;
}

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
    int pdl;
    float *saved;         /* this mode's state between its turns (device) */
    cudaGraphExec_t exec;
    float expect;         /* host model of x[0] */
} raw_mode;

static chain_args raw_args(const raw_mode *m)
{
    const chain_env *e = m->e;
    chain_args a = {e->x, e->n, m->io ? e->d_in : NULL, CHAIN_IN_FLOATS, m->io ? e->d_out : NULL,
                    m->pdl};
    return a;
}

static int raw_setup(void *self)
{
    raw_mode *m = self;
    chain_env *e = m->e;
    TRY(state_new(e, &m->saved));
    m->expect = e->x_init[0];
    if (!m->use_graph)
        return 0;
    cudaGraph_t g = NULL;
    chain_args a = raw_args(m);
    TRY(capture_begin(e->stream));
    int ok = !bench_cuda_failed(chain_enqueue(&a, e->stream), "chain_enqueue", __FILE__, __LINE__);
    TRY(capture_end(e->stream, ok, &g));
    int rc = graph_instantiate(g, e->stream, &m->exec);
    (void)cudaGraphDestroy(g);
    return rc;
}

static int raw_prepare(void *self, long k)
{
    raw_mode *m = self;
    chain_env *e = m->e;
    (void)k;
    TRY(state_enter(e, m, m->saved));
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
        chain_args a = raw_args(m);
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

static int raw_finish(void *self, mode_result *r)
{
    raw_mode *m = self;
    return check_final_x(state_of(m->e, m, m->saved), m->expect, r);
}

static void raw_teardown(void *self)
{
    raw_mode *m = self;
    if (m->exec)
        (void)cudaGraphExecDestroy(m->exec);
    (void)cudaFree(m->saved);
    m->exec = NULL;
    m->saved = NULL;
}

static void raw_bench_mode(raw_mode *m, mode_result *r, bench_mode *bm)
{
    *bm = (bench_mode){r, {raw_prepare, raw_submit, raw_wait, m->io ? raw_check : NULL, NULL},
                       m, raw_setup, raw_finish, raw_teardown, NULL};
}

/* ---- cgr modes ----------------------------------------------------------- */

typedef struct step_user {
    float *x;
    int n;
    int in, out;      /* the step has the input, the output */
    size_t in_floats;
    int pdl;
    const void *in_dev; /* the input's device buffer, as the last call of the step saw it */
} step_user;

/* The user's step: the same N kernels, on cgr's stream, I/O through cgr. */
static cgr_status chain_step_fn(cgr_ctx *ctx, void *user)
{
    step_user *u = user;
    cgr_stream s = NULL;
    cgr_status st = cgr_ctx_stream(ctx, &s);
    if (st != CGR_STATUS_OK)
        return st;
    chain_args a = {u->x, u->n, NULL, u->in_floats, NULL, u->pdl};
    void *in = NULL, *out = NULL;
    if (u->in && (st = cgr_ctx_input(ctx, 0, &in)) != CGR_STATUS_OK)
        return st;
    if (u->out && (st = cgr_ctx_output(ctx, 0, &out)) != CGR_STATUS_OK)
        return st;
    a.in = in;
    a.out = out;
    u->in_dev = in;
    if (bench_cuda_failed(chain_enqueue(&a, s), "chain_enqueue (step function)", __FILE__,
                          __LINE__))
        return CGR_STATUS_CUDA_ERROR;
    return CGR_STATUS_OK;
}

typedef struct cgr_mode {
    chain_env *e;
    const char *name;
    size_t in_floats; /* 0: no input */
    int out;          /* the 4 B output */
    int pdl;
    int fast;         /* cgr_step_acquire + write into the slot + cgr_step_launch */
    int event_wait;   /* wait_spin_us = 0: wait on the event, not the flag */
    uint64_t want_zc, want_mc; /* tensors staged each way, from the options */
    cgr_info *info;
    cgr_runtime *rt;
    cgr_step *step;
    step_user user;
    float in_host[CHAIN_IN_FLOATS];
    const float *in_ptr; /* the input of the step being prepared */
    cgr_slot slot;
    uint64_t ticket;
    uint64_t replays0;
    float *saved; /* this mode's state between its turns (device) */
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

static int cgr_setup(void *self)
{
    cgr_mode *m = self;
    const bench_config *cfg = m->e->cfg;
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = cfg->device;
    if (m->event_wait)
        o.advanced.wait_spin_us = 0;
    size_t zc = o.advanced.zero_copy_max_bytes, in_bytes = m->in_floats * sizeof(float);
    m->want_zc = (m->in_floats && in_bytes <= zc) + (m->out && sizeof(float) <= zc);
    m->want_mc = (m->in_floats && in_bytes > zc) + (m->out && sizeof(float) > zc);
    CGR_CK(cgr_runtime_create(&m->rt, &o));
    TRY(state_new(m->e, &m->saved));
    m->user = (step_user){m->e->x, m->e->n, m->in_floats > 0, m->out, m->in_floats, m->pdl, NULL};
    m->expect = m->e->x_init[0];

    cgr_tensor_desc in = vec_f32("in", (int64_t)m->in_floats), out = vec_f32("out", 1);
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = m->name;
    d.fn = chain_step_fn;
    d.user = &m->user;
    if (m->in_floats) {
        d.inputs = &in;
        d.n_inputs = 1;
    }
    if (m->out) {
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
    TRY(state_enter(m->e, m, m->saved));
    float *dst = m->in_host;
    if (m->fast) {
        /*
         * The fast path: the data is produced straight into cgr's pinned
         * slot. Acquiring the slot (a ring-index update) is therefore
         * outside the clocks, like producing the data.
         */
        CGR_CK(cgr_step_acquire(m->step, NULL, 0, &m->slot));
        dst = m->in_floats ? m->slot.inputs[0] : NULL;
    }
    if (!m->in_floats) {
        m->expect = chain_model(m->expect, 0, 0.0f, m->e->n);
        return 0;
    }
    rng_fill(&m->e->rng, dst, m->in_floats);
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
    CGR_CK(cgr_step_run(m->step, NULL, m->in_floats ? inputs : NULL, &m->ticket));
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
    if (s.zero_copy_tensors != m->want_zc || s.memcpy_tensors != m->want_mc) {
        bench_error("%s: cgr staged %llu tensors zero-copy and %llu by memcpy nodes, expected "
                    "%llu and %llu",
                    m->name, (unsigned long long)s.zero_copy_tensors,
                    (unsigned long long)s.memcpy_tensors, (unsigned long long)m->want_zc,
                    (unsigned long long)m->want_mc);
        return -1;
    }
    m->replays0 = s.replays;
    return 0;
}

/* The step's device input must hold exactly the last step's input, every byte. */
static int check_whole_input(cgr_mode *m, mode_result *r)
{
    size_t bytes = m->in_floats * sizeof(float);
    unsigned char *got = malloc(bytes);
    if (!got) {
        bench_error("out of host memory (%zu bytes)", bytes);
        return -1;
    }
    int rc = -1;
    CK_GOTO(cudaMemcpy(got, m->user.in_dev, bytes, cudaMemcpyDeviceToHost), out);
    const unsigned char *want = (const unsigned char *)m->in_ptr;
    size_t i = 0;
    while (i < bytes && got[i] == want[i])
        i++;
    rc = i == bytes ? 0 : -1;
    if (rc != 0) {
        bench_error("%s: the step's device input differs from the last input at byte %zu of %zu "
                    "(wrong result)", m->name, i, bytes);
        r->wrong = 1;
    }
out:
    free(got);
    return rc;
}

static int cgr_finish(void *self, mode_result *r)
{
    cgr_mode *m = self;
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(m->step, &s));
    if (m->info) {
        cgr_info *i = m->info;
        i->valid = 1;
        i->graph_nodes = s.graph_nodes;
        i->zero_copy_tensors = s.zero_copy_tensors;
        i->memcpy_tensors = s.memcpy_tensors;
        i->replays = s.replays;
        i->warmup_runs = s.warmup_runs;
        i->capture_us = s.last_capture_us + s.last_make_us;
    }
    if (s.replays - m->replays0 != (uint64_t)r->steps || s.mode != CGR_MODE_GRAPH) {
        bench_error("%s: %llu of %d timed steps were graph replays", m->name,
                    (unsigned long long)(s.replays - m->replays0), r->steps);
        return -1;
    }
    if (m->in_floats && m->user.in_dev)
        TRY(check_whole_input(m, r));
    return check_final_x(state_of(m->e, m, m->saved), m->expect, r);
}

static void cgr_teardown(void *self)
{
    cgr_mode *m = self;
    if (m->rt && m->e->cfg->stats)
        bench_print_stats(m->rt, m->step, "cgr stats, chain N=%d, %s:\n", m->e->n, m->name);
    BENCH_RUNTIME_DESTROY(&m->rt); /* and the step */
    m->step = NULL;
    (void)cudaFree(m->saved);
    m->saved = NULL;
}

static void cgr_bench_mode(cgr_mode *m, mode_result *r, bench_mode *bm)
{
    *bm = (bench_mode){r,
                       {cgr_prepare, cgr_submit, cgr_wait, m->out ? cgr_check : NULL,
                        cgr_after_warmup},
                       m, cgr_setup, cgr_finish, cgr_teardown, NULL};
}

/* ---- environment --------------------------------------------------------- */

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
        (void)cudaStreamSynchronize(e->stream);
    (void)cudaFree(e->x);
    (void)cudaFree(e->d_in);
    (void)cudaFree(e->d_out);
    (void)cudaFreeHost(e->h_in);
    (void)cudaFreeHost(e->h_out);
    if (e->stream)
        (void)cudaStreamDestroy(e->stream);
    (void)cudaGetLastError();
}

/* Sets up the raw state for N kernels; on failure marks r[0..n_modes) as not run. */
static int env_open(chain_env *e, const bench_config *cfg, bench_results *res, int n,
                    mode_result *r, int n_modes)
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
        mode_result_not_run(&r[i], skipped);
    if (!skipped && bench_device_recover() != 0)
        res->aborted = 1;
    env_teardown(e);
    return -1;
}

/* ---- W-chain ------------------------------------------------------------- */

static const char *const chain_mode_names[CHAIN_MODES] = {
    [CHAIN_EAGER] = "eager",
    [CHAIN_GRAPH] = "graph",
    [CHAIN_CGR] = "cgr",
    [CHAIN_EAGER_PDL] = "eager_pdl",
    [CHAIN_GRAPH_PDL] = "graph_pdl",
    [CHAIN_CGR_PDL] = "cgr_pdl",
    [CHAIN_CGR_IO] = "cgr_io_zero_copy",
    [CHAIN_CGR_IO_FAST] = "cgr_io_zero_copy_fast_path",
    [CHAIN_CGR_IO_EVENT] = "cgr_io_zero_copy_event_wait",
    [CHAIN_GRAPH_IO] = "graph_io_memcpy_async",
};

static void chain_one(const bench_config *cfg, bench_results *res, chain_result *cr)
{
    static const struct {
        int id, graph, io, pdl;
    } raws[] = {
        {CHAIN_EAGER, 0, 0, 0}, {CHAIN_GRAPH, 1, 0, 0}, {CHAIN_EAGER_PDL, 0, 0, 1},
        {CHAIN_GRAPH_PDL, 1, 0, 1}, {CHAIN_GRAPH_IO, 1, 1, 0},
    };
    static const struct {
        int id, io, pdl, fast, event_wait;
    } cgrs[] = {
        {CHAIN_CGR, 0, 0, 0, 0},         {CHAIN_CGR_PDL, 0, 1, 0, 0},
        {CHAIN_CGR_IO, 1, 0, 0, 0},      {CHAIN_CGR_IO_FAST, 1, 0, 1, 0},
        {CHAIN_CGR_IO_EVENT, 1, 0, 0, 1},
    };
    enum { N_RAW = sizeof raws / sizeof raws[0], N_CGR = sizeof cgrs / sizeof cgrs[0] };
    /* bm[] is indexed by mode and run whole: every mode needs its entry in one table. */
    _Static_assert(N_RAW + N_CGR == CHAIN_MODES, "a W-chain mode without its table entry");
    chain_env e;
    if (env_open(&e, cfg, res, cr->n_kernels, cr->mode, CHAIN_MODES) != 0)
        return;
    static raw_mode rm[N_RAW];
    static cgr_mode cm[N_CGR]; /* holds a 4 KiB input buffer each: off the stack */
    bench_mode bm[CHAIN_MODES];
    for (int i = 0; i < N_RAW; i++) {
        int id = raws[i].id;
        rm[i] = (raw_mode){&e, chain_mode_names[id], raws[i].graph, raws[i].io, raws[i].pdl,
                           NULL, NULL, 0.0f};
        raw_bench_mode(&rm[i], &cr->mode[id], &bm[id]);
    }
    for (int i = 0; i < N_CGR; i++) {
        int id = cgrs[i].id;
        cm[i] = (cgr_mode){.e = &e, .name = chain_mode_names[id],
                           .in_floats = cgrs[i].io ? CHAIN_IN_FLOATS : 0, .out = cgrs[i].io,
                           .pdl = cgrs[i].pdl, .fast = cgrs[i].fast,
                           .event_wait = cgrs[i].event_wait, .info = &cr->cgr[id]};
        cgr_bench_mode(&cm[i], &cr->mode[id], &bm[id]);
    }
    for (int id = 0; id < CHAIN_MODES; id++)
        bm[id].round_wall = cr->round_wall[id];
    char group[32];
    snprintf(group, sizeof group, "chain N=%d", e.n);
    /* Eager launches cost up to ~10 us of host time each. */
    run_group(res, group, bm, CHAIN_MODES, mode_budget_s(cfg, CHAIN_MODES * (0.5 + e.n * 0.01)));
    env_teardown(&e);
}

int chain_suite(const bench_config *cfg, bench_results *res)
{
    static const int all_n[CHAIN_MAX_SIZES] = {10, 100, 1000};
    static const int quick_n[1] = {100};
    const int *ns = cfg->quick ? quick_n : all_n;
    res->chain_ran = 1;
    res->n_chain = cfg->quick ? 1 : CHAIN_MAX_SIZES;
    for (int i = 0; i < res->n_chain; i++) {
        chain_result *cr = &res->chain[i];
        memset(cr, 0, sizeof *cr);
        cr->n_kernels = ns[i];
        cr->rounds = cfg->rounds;
        for (int m = 0; m < CHAIN_MODES; m++)
            mode_result_init(&cr->mode[m], chain_mode_names[m]);
    }
    for (int i = 0; i < res->n_chain; i++)
        chain_one(cfg, res, &res->chain[i]);
    return 0;
}

void chain_canary(const bench_config *cfg, bench_results *res, mode_result *r)
{
    chain_env e;
    if (env_open(&e, cfg, res, 100, r, 1) != 0)
        return;
    raw_mode graph = {&e, r->name, 1, 0, 0, NULL, NULL, 0.0f};
    bench_mode bm;
    raw_bench_mode(&graph, r, &bm);
    run_group(res, "canary", &bm, 1, mode_budget_s(cfg, 1.5));
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

/*
 * A runtime with options o and one W-chain step of n kernels without I/O,
 * its state a persistent allocation of the runtime (so it goes with it).
 */
static int solo_step(const cgr_options *o, const char *name, cgr_step_fn fn, step_user *u,
                     cgr_runtime **rt, cgr_step **step)
{
    CGR_CK(cgr_runtime_create(rt, o));
    CGR_CK(cgr_persistent_alloc(*rt, CHAIN_ELEMS * sizeof(float), (void **)&u->x));
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = name;
    d.fn = fn;
    d.user = u;
    CGR_CK(cgr_step_create(*rt, &d, step));
    return 0;
}

/* Runs one check of what cgr says; a failure without a message gets the last error. */
static void said_run(const bench_config *cfg, bench_results *res, const char *name,
                     const char *what, int (*once)(const bench_config *, said_check *))
{
    said_check *c = said_add(res, name, what);
    if (once(cfg, c) != 0 && !c->message[0])
        snprintf(c->message, sizeof c->message, "%s", bench_last_error());
}

static int diagnose_once(const bench_config *cfg, said_check *c)
{
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = cfg->device;
    o.diagnose = 1;
    cgr_runtime *rt = NULL;
    cgr_step *step = NULL;
    int rc = -1;
    step_user u = {NULL, 10, 0, 0, 0, 0, NULL};
    TRY_GOTO(solo_step(&o, "chain_syncing", syncing_step_fn, &u, &rt, &step), out);
    for (int k = 0; k < 3; k++) { /* two warm-ups, then the capture that fails */
        CGR_CK_GOTO(cgr_step_run(step, NULL, NULL, NULL), out);
        CGR_CK_GOTO(cgr_step_wait(step, CGR_TICKET_LAST), out);
    }
    cgr_step_stats s;
    CGR_CK_GOTO(cgr_step_get_stats(step, &s), out);
    const char *diag = strstr(s.capture_error, "the first failing call");
    snprintf(c->message, sizeof c->message, "%s", diag ? diag : s.capture_error);
    c->ok = diag && strstr(diag, "cudaStreamSynchronize");
    if (!c->ok)
        bench_error("the diagnosis did not name cudaStreamSynchronize: %s", s.capture_error);
    rc = c->ok ? 0 : -1;
out:
    BENCH_RUNTIME_DESTROY(&rt);
    return rc;
}

void chain_diagnosis(const bench_config *cfg, bench_results *res)
{
    said_run(cfg, res, "capture_diagnosis", "capture diagnosis names the call", diagnose_once);
}

/* Runs of each mode in the profile window: enough for stable medians,
 * short beside the suite. */
#define PROFILE_RUNS 100

static int profile_once(const bench_config *cfg, said_check *c)
{
    char prefix[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(prefix, sizeof prefix, "%s/cgr-bench-profile", tmp && tmp[0] ? tmp : "/tmp");
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = cfg->device;
    o.profile.runs = PROFILE_RUNS;
    o.profile.skip = 0;
    o.profile.path = prefix;
    cgr_runtime *rt = NULL;
    cgr_step *step = NULL;
    int rc = -1;
    step_user u = {NULL, 100, 0, 0, 0, 0, NULL};
    TRY_GOTO(solo_step(&o, "chain_profiled", chain_step_fn, &u, &rt, &step), out);
    cgr_step_stats s;
    /* Warm-ups, the capture and its check run first; the window then takes
     * 2 x PROFILE_RUNS runs. The bound only guards against a window that
     * never opens. */
    for (int k = 0; k < 2 * PROFILE_RUNS + 100; k++) {
        CGR_CK_GOTO(cgr_step_run(step, NULL, NULL, NULL), out);
        CGR_CK_GOTO(cgr_step_wait(step, CGR_TICKET_LAST), out);
        CGR_CK_GOTO(cgr_step_get_stats(step, &s), out);
        if (s.profile.state == CGR_PROFILE_DONE || s.profile.state == CGR_PROFILE_FAILED)
            break;
    }
    const cgr_profile_result *p = &s.profile;
    if (p->state == CGR_PROFILE_DONE) {
        c->ok = p->verdict == CGR_PROFILE_LAUNCH_BOUND;
        snprintf(c->message, sizeof c->message,
                 "%s; eager %.1f us wall, GPU idle %.0f%%; graph %.1f us (%.2fx); "
                 "%.0f kernels per eager run; report %.200s.chain_profiled.txt",
                 p->verdict == CGR_PROFILE_LAUNCH_BOUND ? "launch-bound"
                 : p->verdict == CGR_PROFILE_GPU_BOUND  ? "GPU-bound (expected launch-bound)"
                                                        : "no verdict",
                 p->eager.wall_us, 100.0 * p->eager.idle_share, p->graph.wall_us, p->speedup,
                 p->eager.kernels, prefix);
    } else {
        snprintf(c->message, sizeof c->message, "the window did not close: %.480s",
                 p->state == CGR_PROFILE_FAILED ? p->error : "still open");
    }
    rc = c->ok ? 0 : -1;
out:
    BENCH_RUNTIME_DESTROY(&rt);
    return rc;
}

void chain_profile(const bench_config *cfg, bench_results *res)
{
    said_run(cfg, res, "profile_window", "profile window: W-chain N=100 verdict", profile_once);
}
