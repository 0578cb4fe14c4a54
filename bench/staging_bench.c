/*
 * Staging suite: measurements behind cgr's staging design
 * (docs/staging.md), on a 100-kernel W-chain graph in raw CUDA with two mapped
 * pinned slots, launched alternately as cgr does.
 *
 * (a) Pointing the graph at the current slot, 4 KiB in + 4 B out by
 *     zero-copy kernels: one executable per slot; one executable whose two
 *     staging nodes are repointed before every launch; one executable whose
 *     staging kernels read the slot index from mapped memory; and the same
 *     graph without I/O as the baseline.
 * (b) Input crossover: 4 KiB .. 16 MiB in through a cgr__stage_copy kernel
 *     node against a memcpy node. The 4 B output goes through the same
 *     zero-copy kernel in the baseline and in both variants, so the added
 *     time is the input's alone.
 *
 * The host writes each step's fresh input straight into the slot (cgr's
 * fast path), before the clocks start. Every step with an input checks its
 * output against the host model, and every mode with an input compares the
 * whole device input buffer with the last slot at the end.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "chain.h"
#include "stage.h"
#include "staging.h"
#include "util.h"

#define N_SLOTS 2
#define SLOT_IN_BYTES 4096
#define OUT_BYTES 4
#define MAX_IN_BYTES ((size_t)16 << 20)

static const size_t sweep_sizes[SWEEP_SIZES] = {
    (size_t)4 << 10, (size_t)64 << 10, (size_t)256 << 10,
    (size_t)1 << 20, (size_t)4 << 20,  (size_t)16 << 20,
};

typedef struct stage_env {
    const bench_config *cfg;
    cudaStream_t stream;
    float *x, *d_in, *d_out; /* device: chain state, input, output */
    int *d_idx_seen;         /* device: slot index handed from input to output kernel */
    unsigned char *slots_h;  /* mapped pinned: N_SLOTS slots of `stride` bytes */
    unsigned char *slots_d;  /* device view of the same memory */
    size_t stride, out_off;  /* slot k's input at k*stride, output at k*stride + out_off */
    int *idx_h, *idx_d;      /* mapped pinned slot index (host / device view) */
    unsigned char *readback; /* host: whole-input check */
    float x_init[CHAIN_ELEMS];
    bench_rng rng;
} stage_env;

static float *slot_in_h(const stage_env *e, int k)
{
    return (float *)(void *)(e->slots_h + (size_t)k * e->stride);
}

static void *slot_in_d(const stage_env *e, int k)
{
    return e->slots_d + (size_t)k * e->stride;
}

static float *slot_out_h(const stage_env *e, int k)
{
    return (float *)(void *)(e->slots_h + (size_t)k * e->stride + e->out_off);
}

static void *slot_out_d(const stage_env *e, int k)
{
    return e->slots_d + (size_t)k * e->stride + e->out_off;
}

/* ---- graphs ---------------------------------------------------------- */

enum stage_kind { STAGE_NONE = 0, STAGE_ZC, STAGE_MEMCPY, STAGE_INDEX };

typedef struct io_graph {
    cudaGraph_t graph; /* kept: the repoint mode takes node parameters from it */
    cudaGraphNode_t in_node, out_node;
    cudaGraphExec_t exec;
} io_graph;

static cgr__copy_list one_copy(const void *src, void *dst, size_t bytes)
{
    cgr__copy_list l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.src[0] = src;
    l.dst[0] = dst;
    l.bytes[0] = bytes;
    return l;
}

static int record_in(const stage_env *e, size_t bytes, int kind, int slot, cudaGraphNode_t *node)
{
    cudaStream_t s = e->stream;
    cgr__copy_list l = one_copy(slot_in_d(e, slot), e->d_in, bytes);
    switch (kind) {
    case STAGE_NONE:
        return 0;
    case STAGE_ZC:
        CK(cgr__stage_copy(&l, s, 0));
        break;
    case STAGE_MEMCPY:
        CK(cudaMemcpyAsync(e->d_in, slot_in_h(e, slot), bytes, cudaMemcpyHostToDevice, s));
        break;
    default:
        CK(idx_stage_in(e->idx_d, e->d_idx_seen, e->slots_d, e->stride, N_SLOTS, e->d_in, bytes,
                        s));
        break;
    }
    return capture_last_node(s, node);
}

static int record_out(const stage_env *e, int kind, int slot, cudaGraphNode_t *node)
{
    cudaStream_t s = e->stream;
    cgr__copy_list l = one_copy(e->d_out, slot_out_d(e, slot), OUT_BYTES);
    switch (kind) {
    case STAGE_NONE:
        return 0;
    case STAGE_ZC:
        CK(cgr__stage_copy(&l, s, 0));
        break;
    default:
        CK(idx_stage_out(e->d_idx_seen, e->slots_d, e->stride, e->out_off, N_SLOTS, e->d_out,
                         OUT_BYTES, s));
        break;
    }
    return capture_last_node(s, node);
}

/* Captures in-staging -> 100 chain kernels -> out-staging for `slot`, and instantiates it. */
static int build_graph(const stage_env *e, size_t in_bytes, int in_kind, int out_kind, int slot,
                       io_graph *g)
{
    chain_args a = {e->x, STAGING_KERNELS, e->d_in, in_bytes / sizeof(float), e->d_out, 0};
    TRY(capture_begin(e->stream));
    int ok = record_in(e, in_bytes, in_kind, slot, &g->in_node) == 0;
    ok = ok && !bench_cuda_failed(chain_enqueue(&a, e->stream), "chain_enqueue", __FILE__,
                                  __LINE__);
    ok = ok && record_out(e, out_kind, slot, &g->out_node) == 0;
    TRY(capture_end(e->stream, ok, &g->graph));
    return graph_instantiate(g->graph, e->stream, &g->exec);
}

static void graph_release(io_graph *g)
{
    if (g->exec)
        cudaGraphExecDestroy(g->exec);
    if (g->graph)
        cudaGraphDestroy(g->graph);
    memset(g, 0, sizeof *g);
}

/* ---- one measured mode ------------------------------------------------ */

enum pointing {
    POINT_SINGLE = 0, /* one executable, nothing per launch (no slot involved) */
    POINT_PER_EXEC,   /* executable k for slot k */
    POINT_REPOINT,    /* cudaGraphExecKernelNodeSetParams on both staging nodes */
    POINT_INDEX       /* the host writes the slot index to mapped memory */
};

typedef struct stage_mode {
    stage_env *e;
    const char *name;
    size_t in_bytes;
    int in_kind, out_kind, pointing;
    io_graph g[N_SLOTS];
    /* Repoint mode: node parameters for each slot, built before timing. */
    struct cudaKernelNodeParams pin[N_SLOTS], pout[N_SLOTS];
    cgr__copy_list lin[N_SLOTS], lout[N_SLOTS];
    void *ain[N_SLOTS][1], *aout[N_SLOTS][1];
    float expect;
    long last_k;
} stage_mode;

static int repoint_params(stage_mode *m)
{
    const stage_env *e = m->e;
    struct cudaKernelNodeParams tin, tout;
    CK(cudaGraphKernelNodeGetParams(m->g[0].in_node, &tin));
    CK(cudaGraphKernelNodeGetParams(m->g[0].out_node, &tout));
    for (int k = 0; k < N_SLOTS; k++) {
        m->lin[k] = one_copy(slot_in_d(e, k), e->d_in, m->in_bytes);
        m->lout[k] = one_copy(e->d_out, slot_out_d(e, k), OUT_BYTES);
        m->ain[k][0] = &m->lin[k];
        m->aout[k][0] = &m->lout[k];
        m->pin[k] = tin;
        m->pin[k].kernelParams = m->ain[k];
        m->pin[k].extra = NULL;
        m->pout[k] = tout;
        m->pout[k].kernelParams = m->aout[k];
        m->pout[k].extra = NULL;
    }
    return 0;
}

static int mode_setup(stage_mode *m)
{
    stage_env *e = m->e;
    int n_exec = m->pointing == POINT_PER_EXEC ? N_SLOTS : 1;
    for (int k = 0; k < n_exec; k++)
        TRY(build_graph(e, m->in_bytes, m->in_kind, m->out_kind, k, &m->g[k]));
    if (m->pointing == POINT_REPOINT)
        TRY(repoint_params(m));
    CK(cudaMemcpy(e->x, e->x_init, sizeof e->x_init, cudaMemcpyHostToDevice));
    m->expect = e->x_init[0];
    return 0;
}

static int st_prepare(void *self, long k)
{
    stage_mode *m = self;
    stage_env *e = m->e;
    int slot = (int)(k % N_SLOTS);
    m->last_k = k;
    if (m->out_kind != STAGE_NONE)
        *slot_out_h(e, slot) = NAN; /* a step that writes nothing cannot pass */
    if (m->in_kind == STAGE_NONE)
        return 0;
    float *in = slot_in_h(e, slot);
    rng_fill(&e->rng, in, m->in_bytes / sizeof(float));
    m->expect = chain_model(m->expect, 1, in[0], STAGING_KERNELS);
    return 0;
}

static int st_submit(void *self, long k)
{
    stage_mode *m = self;
    stage_env *e = m->e;
    int slot = (int)(k % N_SLOTS);
    cudaGraphExec_t x = m->g[0].exec;
    switch (m->pointing) {
    case POINT_PER_EXEC:
        x = m->g[slot].exec;
        break;
    case POINT_REPOINT:
        CK(cudaGraphExecKernelNodeSetParams(x, m->g[0].in_node, &m->pin[slot]));
        CK(cudaGraphExecKernelNodeSetParams(x, m->g[0].out_node, &m->pout[slot]));
        break;
    case POINT_INDEX:
        *(volatile int *)e->idx_h = slot;
        /* The store must be ordered before the launch's doorbell write. */
        atomic_thread_fence(memory_order_seq_cst);
        break;
    default:
        break;
    }
    CK(cudaGraphLaunch(x, e->stream));
    return 0;
}

static int st_wait(void *self, long k)
{
    stage_mode *m = self;
    (void)k;
    CK(cudaStreamSynchronize(m->e->stream));
    return 0;
}

static int st_check(void *self, long k)
{
    stage_mode *m = self;
    float got = *(volatile float *)slot_out_h(m->e, (int)(k % N_SLOTS));
    if (float_matches(got, m->expect))
        return 0;
    bench_error("%s (%zu B in): step %ld output is %.9g, the host model says %.9g (wrong result)",
                m->name, m->in_bytes, k, (double)got, (double)m->expect);
    return CHECK_WRONG;
}

/* The device input buffer must hold exactly the last step's slot. */
static int check_whole_input(stage_mode *m, mode_result *r)
{
    stage_env *e = m->e;
    const float *want = slot_in_h(e, (int)(m->last_k % N_SLOTS));
    CK(cudaMemcpy(e->readback, e->d_in, m->in_bytes, cudaMemcpyDeviceToHost));
    if (memcmp(e->readback, want, m->in_bytes) == 0)
        return 0;
    size_t i = 0;
    while (i < m->in_bytes && e->readback[i] == ((const unsigned char *)want)[i])
        i++;
    bench_error("%s (%zu B in): the device input differs from the slot at byte %zu "
                "(wrong result)", m->name, m->in_bytes, i);
    r->wrong = 1;
    return -1;
}

static int stage_mode_run(void *ctx, mode_result *r)
{
    stage_mode *m = ctx;
    int verify = m->in_kind != STAGE_NONE && m->out_kind != STAGE_NONE;
    step_ops ops = {st_prepare, st_submit, st_wait, verify ? st_check : NULL, NULL};
    int rc = -1;
    TRY_GOTO(mode_setup(m), out);
    TRY_GOTO(measure(&ops, m, m->e->cfg->warmup, m->e->cfg->steps, r), out);
    if (m->in_kind != STAGE_NONE)
        TRY_GOTO(check_whole_input(m, r), out);
    rc = 0;
out:
    for (int k = 0; k < N_SLOTS; k++)
        graph_release(&m->g[k]);
    return rc;
}

static void run_stage_mode(stage_env *e, bench_results *res, const char *group, mode_result *r,
                           size_t in_bytes, int in_kind, int out_kind, int pointing)
{
    stage_mode m;
    memset(&m, 0, sizeof m);
    m.e = e;
    m.name = r->name;
    m.in_bytes = in_bytes;
    m.in_kind = in_kind;
    m.out_kind = out_kind;
    m.pointing = pointing;
    /* Budget: refilling up to 16 MiB of input per step on the host, plus the copy. */
    double ms = 0.5 + (in_kind != STAGE_NONE ? (double)in_bytes / (1 << 20) * 2.0 : 0.0);
    run_mode(res, group, r, mode_budget_s(e->cfg, ms), stage_mode_run, &m);
}

/* ---- environment ------------------------------------------------------- */

static int env_setup(stage_env *e)
{
    e->out_off = MAX_IN_BYTES;
    e->stride = MAX_IN_BYTES + 256;
    CK(cudaStreamCreateWithFlags(&e->stream, cudaStreamDefault));
    CK(cudaMalloc((void **)&e->x, sizeof e->x_init));
    CK(cudaMalloc((void **)&e->d_in, MAX_IN_BYTES));
    CK(cudaMalloc((void **)&e->d_out, OUT_BYTES));
    CK(cudaMalloc((void **)&e->d_idx_seen, sizeof(int)));
    CK(cudaMemset(e->d_in, 0, MAX_IN_BYTES));
    CK(cudaMemset(e->d_out, 0, OUT_BYTES));
    CK(cudaMemset(e->d_idx_seen, 0, sizeof(int)));
    CK(cudaHostAlloc((void **)&e->slots_h, e->stride * N_SLOTS, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&e->slots_d, e->slots_h, 0));
    CK(cudaHostAlloc((void **)&e->idx_h, sizeof(int), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&e->idx_d, e->idx_h, 0));
    memset(e->slots_h, 0, e->stride * N_SLOTS);
    *e->idx_h = 0;
    e->readback = malloc(MAX_IN_BYTES);
    if (!e->readback) {
        bench_error("out of host memory (%zu bytes)", MAX_IN_BYTES);
        return -1;
    }
    return 0;
}

static void env_teardown(stage_env *e)
{
    if (e->stream)
        cudaStreamSynchronize(e->stream);
    cudaFree(e->x);
    cudaFree(e->d_in);
    cudaFree(e->d_out);
    cudaFree(e->d_idx_seen);
    cudaFreeHost(e->slots_h);
    cudaFreeHost(e->idx_h);
    free(e->readback);
    if (e->stream)
        cudaStreamDestroy(e->stream);
    (void)cudaGetLastError();
}

/* ---- the suite ------------------------------------------------------- */

static const char *const slot_mode_names[SLOT_MODES] = {
    [SLOT_PER_EXEC] = "exec_per_slot",
    [SLOT_REPOINT] = "repoint_nodes",
    [SLOT_INDEX] = "slot_index_mapped",
    [SLOT_BASELINE] = "no_io_baseline",
};

static void run_slot_modes(stage_env *e, bench_results *res)
{
    mode_result *r = res->staging.slot;
    const char *g = "staging slot pointing";
    run_stage_mode(e, res, g, &r[SLOT_BASELINE], SLOT_IN_BYTES, STAGE_NONE, STAGE_NONE,
                   POINT_SINGLE);
    run_stage_mode(e, res, g, &r[SLOT_PER_EXEC], SLOT_IN_BYTES, STAGE_ZC, STAGE_ZC,
                   POINT_PER_EXEC);
    run_stage_mode(e, res, g, &r[SLOT_REPOINT], SLOT_IN_BYTES, STAGE_ZC, STAGE_ZC,
                   POINT_REPOINT);
    run_stage_mode(e, res, g, &r[SLOT_INDEX], SLOT_IN_BYTES, STAGE_INDEX, STAGE_INDEX,
                   POINT_INDEX);
}

static void run_sweep(stage_env *e, bench_results *res)
{
    staging_result *s = &res->staging;
    char group[48];
    for (int i = 0; i < s->n_sweep; i++) {
        sweep_point *p = &s->sweep[i];
        snprintf(group, sizeof group, "staging crossover %zu KiB", p->in_bytes >> 10);
        run_stage_mode(e, res, group, &p->base, p->in_bytes, STAGE_NONE, STAGE_ZC,
                       POINT_PER_EXEC);
        run_stage_mode(e, res, group, &p->zc, p->in_bytes, STAGE_ZC, STAGE_ZC, POINT_PER_EXEC);
        run_stage_mode(e, res, group, &p->memcpy, p->in_bytes, STAGE_MEMCPY, STAGE_ZC,
                       POINT_PER_EXEC);
    }
}

static int memcpy_faster(const sweep_point *p, int *ok)
{
    *ok = p->base.ran && p->zc.ran && p->memcpy.ran && !p->base.failed && !p->zc.failed &&
          !p->memcpy.failed;
    return *ok && p->memcpy.wall.median < p->zc.wall.median;
}

/*
 * The crossover is where the memcpy node wins from then on (this size and
 * every larger one), so a single noisy small size cannot set it; the first
 * size where it wins at all is kept too.
 */
static void find_crossover(staging_result *s)
{
    int ok = 1;
    s->crossover_valid = 1;
    s->crossover_bytes = 0;
    s->first_memcpy_faster_bytes = 0;
    for (int i = 0; i < s->n_sweep; i++) {
        if (memcpy_faster(&s->sweep[i], &ok) && !s->first_memcpy_faster_bytes)
            s->first_memcpy_faster_bytes = s->sweep[i].in_bytes;
        if (!ok)
            s->crossover_valid = 0;
    }
    for (int i = s->n_sweep - 1; i >= 0 && memcpy_faster(&s->sweep[i], &ok); i--)
        s->crossover_bytes = s->sweep[i].in_bytes;
}

static void init_results(staging_result *s)
{
    for (int i = 0; i < SLOT_MODES; i++)
        mode_result_init(&s->slot[i], slot_mode_names[i]);
    s->n_sweep = SWEEP_SIZES;
    for (int i = 0; i < SWEEP_SIZES; i++) {
        s->sweep[i].in_bytes = sweep_sizes[i];
        mode_result_init(&s->sweep[i].base, "baseline");
        mode_result_init(&s->sweep[i].zc, "zero_copy_kernel");
        mode_result_init(&s->sweep[i].memcpy, "memcpy_node");
    }
}

int staging_suite(const bench_config *cfg, bench_results *res)
{
    stage_env e;
    memset(&e, 0, sizeof e);
    e.cfg = cfg;
    rng_seed(&e.rng, 0x57a9e5eedULL);
    chain_init_state(e.x_init, CHAIN_ELEMS);
    res->staging_ran = 1;
    init_results(&res->staging);

    watchdog_arm("staging setup", cfg->timeout_s);
    int ok = res->aborted ? 0 : env_setup(&e) == 0;
    watchdog_disarm();
    if (ok) {
        run_slot_modes(&e, res);
        run_sweep(&e, res);
    } else {
        int skipped = res->aborted;
        for (int i = 0; i < SLOT_MODES; i++)
            mode_result_not_run(&res->staging.slot[i], skipped);
        for (int i = 0; i < SWEEP_SIZES; i++) {
            mode_result_not_run(&res->staging.sweep[i].base, skipped);
            mode_result_not_run(&res->staging.sweep[i].zc, skipped);
            mode_result_not_run(&res->staging.sweep[i].memcpy, skipped);
        }
        if (!skipped && bench_device_recover() != 0)
            res->aborted = 1;
    }
    find_crossover(&res->staging);
    env_teardown(&e);
    return 0;
}
