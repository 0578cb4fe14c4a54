/*
 * W-serve's model and step (serve.h). The step runs W-mlp's forward pass
 * (bench/mlp, mlp_forward_enqueue) at the bucket's batch, then the masked
 * softmax (serve_kernels.cu) over the real rows.
 *
 * Scratch is two activation buffers of bucket x 1024 floats, used in turn
 * by the five layers (each layer reads the other buffer), so a bucket's
 * plan is 2 x 4 KiB per row plus cuBLAS's workspace: 512 KiB of
 * activations at bucket 64. Every bucket's graph shares the runtime's
 * arena, so the seven buckets cost the largest plan, not the sum.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "serve.h"
#include "serve_kernels.h"

const int64_t serve_buckets[SERVE_N_BUCKETS] = {1, 2, 4, 8, 16, 32, 64};

int serve_bucket_index(int B)
{
    int i = 0;
    while (i < SERVE_N_BUCKETS - 1 && B > serve_buckets[i])
        i++;
    return i;
}

int serve_model_init(serve_model *m)
{
    memset(m, 0, sizeof *m);
    mlp_cfg_default(&m->cfg, SERVE_MAX_BATCH);
    if (mlp_layout_init(&m->L, &m->cfg) != 0 ||
        !(m->host_params = malloc(m->L.n_floats * sizeof(float))) ||
        mlp_init_params(&m->cfg, m->host_params, 0x5e7eULL) != 0) {
        bench_error("W-serve model: %s", m->host_params ? mlp_last_error() : "out of memory");
        free(m->host_params);
        m->host_params = NULL;
        return -1;
    }
    return 0;
}

void serve_model_free(serve_model *m)
{
    free(m->host_params);
    m->host_params = NULL;
}

static cgr_status serve_step_fn(cgr_ctx *ctx, void *user)
{
    const serve_rt *r = user;
    const serve_model *m = r->model;
    cgr_stream s;
    cgr_cublas_handle h;
    float *x, *probs, *act[2];
    int64_t bucket = 0;
    const int64_t *true_dev = NULL;
    cgr_status st;
    if ((st = cgr_ctx_stream(ctx, &s)) || (st = cgr_ctx_cublas(ctx, &h)) ||
        (st = cgr_ctx_dim(ctx, 0, &bucket, NULL, &true_dev)) ||
        (st = cgr_ctx_input(ctx, 0, (void **)&x)) ||
        (st = cgr_ctx_output(ctx, 0, (void **)&probs)))
        return st;
    const size_t act_bytes = (size_t)bucket * (size_t)m->cfg.hidden * sizeof(float);
    if ((st = cgr_ctx_alloc(ctx, act_bytes, (void **)&act[0])) ||
        (st = cgr_ctx_alloc(ctx, act_bytes, (void **)&act[1])))
        return st;
    mlp_cfg cfg = m->cfg;
    cfg.batch = (int)bucket;
    mlp_bufs b;
    memset(&b, 0, sizeof b);
    b.params = r->dev_params;
    b.x = x;
    /* Layer l reads act[l - 1] and writes act[l]: alternating buffers never alias. */
    for (int l = 0; l < m->L.n_layers; l++)
        b.act[l] = act[l % 2];
    const int last = m->L.n_layers - 1;
    /* The weights never change while serving: w_early = 1. */
    if (mlp_forward_enqueue(&cfg, &b, h, s, r->pdl, 1) != 0) {
        fprintf(stderr, "cgr-bench: W-serve: %s\n", mlp_last_error());
        return CGR_STATUS_CUDA_ERROR;
    }
    if (serve_softmax_masked(probs, b.act[last], (int)bucket, m->cfg.classes, true_dev, s,
                             r->pdl) != cudaSuccess)
        return CGR_STATUS_CUDA_ERROR;
    if ((st = cgr_ctx_free(ctx, act[1])) || (st = cgr_ctx_free(ctx, act[0])))
        return st;
    return CGR_STATUS_OK;
}

int serve_rt_create(serve_rt *r, const serve_model *m, int device, int capture, int pdl,
                    int armable)
{
    memset(r, 0, sizeof *r);
    r->model = m;
    r->pdl = pdl;
    r->armable = armable;
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = device;
    o.capture = capture;
    CGR_CK(cgr_runtime_create(&r->rt, &o));
    r->slots = o.staging_slots;
    TRY(bench_upload(r->rt, m->host_params, m->L.n_floats * sizeof(float),
                     (void **)&r->dev_params));

    cgr_tensor_desc in = {.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2,
                          .dims = {SERVE_MAX_BATCH, m->cfg.in_dim}};
    cgr_tensor_desc out = {.name = "probs", .dtype = CGR_DTYPE_F32, .rank = 2,
                           .dims = {SERVE_MAX_BATCH, m->cfg.classes}};
    cgr_dyn_dim dim = {.name = "batch", .buckets = serve_buckets, .n_buckets = SERVE_N_BUCKETS,
                       .max = SERVE_MAX_BATCH};
    cgr_dim_use uses[2] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0}};
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = "W-serve";
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = serve_step_fn;
    d.user = r;
    d.dyn_dims = &dim;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    d.armable = armable;
    CGR_CK(cgr_step_create(r->rt, &d, &r->step));
    return 0;
}

int serve_acquire(serve_rt *r, int B, cgr_slot *slot)
{
    const int64_t dims[1] = {B};
    CGR_CK(cgr_step_acquire(r->step, dims, r->armable ? CGR_ACQUIRE_ARM : 0, slot));
    return 0;
}

int serve_write_input(serve_rt *r, const cgr_slot *slot, const float *src, size_t bytes)
{
    CGR_CK(cgr_step_write_input(r->step, slot, 0, 0, src, bytes));
    return 0;
}

void serve_rt_destroy(serve_rt *r)
{
    BENCH_RUNTIME_DESTROY(&r->rt);
    r->step = NULL;
    r->dev_params = NULL;
}

void serve_ref_row(const serve_model *m, const float *x, double *probs)
{
    const mlp_layout *L = &m->L;
    double a[1024], z[1024];
    for (int i = 0; i < L->in[0]; i++)
        a[i] = x[i];
    for (int l = 0; l < L->n_layers; l++) {
        const float *W = m->host_params + L->w_off[l];
        const float *bias = m->host_params + L->b_off[l];
        const int hidden = l < L->n_layers - 1;
        for (int o = 0; o < L->out[l]; o++) {
            double acc = bias[o];
            for (int i = 0; i < L->in[l]; i++)
                acc += (double)W[(size_t)o * L->in[l] + i] * a[i];
            z[o] = hidden && acc < 0.0 ? 0.0 : acc;
        }
        memcpy(a, z, (size_t)L->out[l] * sizeof a[0]);
    }
    const int C = L->out[L->n_layers - 1];
    double mx = a[0], sum = 0.0;
    for (int c = 1; c < C; c++)
        mx = a[c] > mx ? a[c] : mx;
    for (int c = 0; c < C; c++)
        sum += exp(a[c] - mx);
    for (int c = 0; c < C; c++)
        probs[c] = exp(a[c] - mx) / sum;
}
