/* W-ddp: the data-parallel W-mlp step (ddp.h). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <nccl.h>

#include "hash.h"
#include "ddp.h"
#include "mlp/mlp_cgr.h"

int ddp_model_init(ddp_model *m, const mlp_cfg *cfg, int pdl, int nccl)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->pdl = pdl;
    m->nccl = nccl;
    m->inv_world = 1.0f;
    mlp_layout L;
    if (mlp_cfg_check(cfg) != 0 || mlp_layout_init(&L, cfg) != 0 ||
        mlp_scratch_sizes(cfg, &m->scratch) != 0)
        return -1;
    m->n_floats = L.n_floats;
    return 0;
}

int ddp_model_setup(ddp_model *m, cgr_runtime *rt, const float *params0)
{
    if (m->nccl) {
        int world = 0;
        if (cgr_runtime_nccl_rank(rt, NULL, &world) != CGR_STATUS_OK)
            return mlp_set_error("ddp: %s", cgr_last_error());
        /* Exact for a power-of-two world: the average is the sum halved, bit for bit. */
        m->inv_world = 1.0f / (float)world;
    }
    return mlp_cgr_state_create(rt, &m->cfg, params0, &m->dev);
}

void ddp_model_teardown(ddp_model *m)
{
    if (mlp_cgr_state_release(&m->dev) != 0)
        fprintf(stderr, "ddp: teardown: %s\n", mlp_last_error());
    memset(&m->dev, 0, sizeof m->dev); /* the buffers are freed with the runtime */
}

void ddp_step_desc(ddp_model *m, const char *name, ddp_io *io, cgr_step_desc *desc)
{
    memset(io, 0, sizeof *io);
    mlp_cgr_tensors(&m->cfg, io->in, &io->out[0]);
    cgr_step_desc_init(desc);
    desc->name = name;
    desc->inputs = io->in;
    desc->n_inputs = 2;
    desc->outputs = io->out;
    desc->n_outputs = 1;
    desc->fn = ddp_step;
    desc->user = m;
}

/*
 * Between the backward pass and AdamW (mlp_bufs.grad_hook): sum the flat
 * gradient buffer over the ranks in place, then scale it by 1/world. The
 * padding between tensors is zero on every rank and stays zero.
 */
static int allreduce_grads(void *user, float *grads, size_t n, cudaStream_t s)
{
    ddp_model *m = user;
    ncclResult_t r = ncclAllReduce(grads, grads, n, ncclFloat, ncclSum, m->comm, s);
    if (r == ncclInProgress) {
        /*
         * A non-blocking communicator: the call must be enqueued before
         * anything follows. Bounded, so a lost peer cannot hang the step here.
         */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        ncclResult_t async = ncclInProgress;
        while (async == ncclInProgress && ncclCommGetAsyncError(m->comm, &async) == ncclSuccess) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 60)
                return mlp_set_error("ddp: ncclAllReduce still in progress after 60 s");
        }
        r = async;
    }
    if (r != ncclSuccess)
        return mlp_set_error("ddp: ncclAllReduce of %zu floats: %s", n, ncclGetErrorString(r));
    if (m->fail_capture == 2)
        (void)cudaStreamSynchronize(s); /* the injected fault: illegal while capturing */
    if (ddp_scale(grads, n, m->inv_world, s, m->pdl) != CGR_STATUS_OK)
        return mlp_set_error("ddp: scaling the gradients: %s",
                             ((uintptr_t)grads & 15u) ? "the buffer is not 16-byte aligned"
                                                      : cgr_last_error());
    return 0;
}

cgr_status ddp_step(cgr_ctx *ctx, void *user)
{
    ddp_model *m = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_bufs b;
    cgr_status st;
    if (m->nccl && (st = cgr_ctx_nccl(ctx, &m->comm)) != CGR_STATUS_OK)
        return st;
    if ((st = mlp_cgr_bind(ctx, &m->cfg, m->scratch.total_bytes, &m->dev, &b, &h, &s)) !=
        CGR_STATUS_OK)
        return st;
    if (m->nccl) {
        b.grad_hook = allreduce_grads;
        b.grad_hook_user = m;
    }
    /* fail_capture 1 arms the fault; 2 fires it, in captured runs only. */
    const int armed = m->fail_capture;
    if (armed && cgr_ctx_is_capturing(ctx))
        m->fail_capture = 2;
    int rc = mlp_step_enqueue(&m->cfg, &b, h, s, m->pdl);
    m->fail_capture = armed;
    if (rc != 0) {
        fprintf(stderr, "ddp: %s\n", mlp_last_error());
        return CGR_STATUS_STEP_FAILED;
    }
    return CGR_STATUS_OK;
}

uint64_t ddp_seed(uint64_t base, int rank)
{
    uint64_t s = base ^ (0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1));
    return s ? s : 1;
}

/* xorshift64*, as bench/util.c's generator (kept separate so the test can link this file). */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static float next_float(uint64_t *s)
{
    for (;;) {
        /* 24 random bits -> [-1, 1) in steps of 2^-23; 0 is redrawn. */
        float f = (float)(next_u64(s) >> 40) * (1.0f / 8388608.0f) - 1.0f;
        if (f != 0.0f)
            return f;
    }
}

void ddp_fill(uint64_t *state, const mlp_cfg *cfg, float *x, int *labels)
{
    const size_t n = (size_t)cfg->batch * (size_t)cfg->in_dim;
    for (size_t i = 0; i < n; i++)
        x[i] = next_float(state);
    for (int i = 0; i < cfg->batch; i++)
        labels[i] = (int)(next_u64(state) % (uint64_t)cfg->classes);
}

uint64_t ddp_hash(const void *p, size_t n)
{
    return cgr__fnv1a(p, n);
}
