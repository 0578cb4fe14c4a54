/* W-mlp as a cgr step (mlp_cgr.h). */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mlp_cgr.h"

/* mlp.c keeps the thread's message; this file reports through it too. */
static int failed(const char *what, const char *detail)
{
    mlp_set_error("mlp_cgr: %s: %s", what, detail);
    return -1;
}

int mlp_cgr_state_create(cgr_runtime *rt, const mlp_cfg *cfg, const float *params0, mlp_bufs *dev)
{
    mlp_layout L;
    if (!rt || !params0 || !dev)
        return failed("state_create", "NULL argument");
    if (mlp_layout_init(&L, cfg) != 0)
        return -1;
    memset(dev, 0, sizeof *dev);
    const size_t bytes = L.n_floats * sizeof(float);
    float **bufs[4] = {&dev->params, &dev->grads, &dev->m, &dev->v};
    for (int i = 0; i < 4; i++)
        if (cgr_persistent_alloc(rt, bytes, (void **)bufs[i]) != CGR_STATUS_OK)
            return failed("cgr_persistent_alloc", cgr_last_error());
    if (cgr_persistent_alloc(rt, sizeof(int), (void **)&dev->step) != CGR_STATUS_OK)
        return failed("cgr_persistent_alloc", cgr_last_error());
    cudaError_t e = cudaSuccess;
    for (int i = 1; i < 4 && e == cudaSuccess; i++)
        e = cudaMemset(*bufs[i], 0, bytes);
    if (e == cudaSuccess)
        e = cudaMemset(dev->step, 0, sizeof(int));
    if (e == cudaSuccess)
        e = cudaMemcpy(dev->params, params0, bytes, cudaMemcpyHostToDevice);
    /* The weight gradients' parallel branch (mlp_bufs.side). */
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&dev->side, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&dev->ev_fork, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&dev->ev_join, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        (void)mlp_cgr_state_release(dev); /* the error reported is the first one */
        return failed("state_create", cudaGetErrorString(e));
    }
    return 0;
}

int mlp_cgr_state_release(mlp_bufs *dev)
{
    cudaError_t first = cudaSuccess, e;
    if (dev->side && (e = cudaStreamDestroy(dev->side)) != cudaSuccess && first == cudaSuccess)
        first = e;
    if (dev->ev_fork && (e = cudaEventDestroy(dev->ev_fork)) != cudaSuccess &&
        first == cudaSuccess)
        first = e;
    if (dev->ev_join && (e = cudaEventDestroy(dev->ev_join)) != cudaSuccess &&
        first == cudaSuccess)
        first = e;
    dev->side = NULL;
    dev->ev_fork = dev->ev_join = NULL;
    return first == cudaSuccess ? 0 : failed("state_release", cudaGetErrorString(first));
}

void mlp_cgr_tensors(const mlp_cfg *cfg, cgr_tensor_desc in[2], cgr_tensor_desc *loss)
{
    in[0] = (cgr_tensor_desc){.name = "x", .dtype = CGR_DTYPE_F32, .rank = 2,
                              .dims = {cfg->batch, cfg->in_dim}};
    in[1] = (cgr_tensor_desc){.name = "labels", .dtype = CGR_DTYPE_I32, .rank = 1,
                              .dims = {cfg->batch}};
    *loss = (cgr_tensor_desc){.name = "loss", .dtype = CGR_DTYPE_F32, .rank = 0};
}

cgr_status mlp_cgr_bind(cgr_ctx *ctx, const mlp_cfg *cfg, size_t scratch_bytes,
                        const mlp_bufs *dev, mlp_bufs *b, cgr_cublas_handle *h, cgr_stream *s)
{
    void *x, *labels, *loss, *scratch;
    cgr_status st;
    if ((st = cgr_ctx_cublas(ctx, h)) || (st = cgr_ctx_stream(ctx, s)) ||
        (st = cgr_ctx_input(ctx, 0, &x)) || (st = cgr_ctx_input(ctx, 1, &labels)) ||
        (st = cgr_ctx_output(ctx, 0, &loss)) || (st = cgr_ctx_alloc(ctx, scratch_bytes, &scratch)))
        return st;
    *b = *dev;
    b->x = x;
    b->labels = labels;
    b->loss = loss;
    if (cfg->dropout > 0.f &&
        (st = cgr_ctx_philox(ctx, mlp_dropout_counters(cfg), &b->rng, &b->rng_sub)))
        return st;
    if (mlp_scratch_carve(cfg, scratch, b) != 0)
        return CGR_STATUS_INVALID_ARGUMENT;
    return CGR_STATUS_OK;
}

/* ---- a dynamic batch ----------------------------------------------------------------- */

int mlp_cgr_dyn_init(mlp_cgr_dyn *d, const mlp_cfg *cfg, const int64_t *buckets, int n_buckets)
{
    if (!d)
        return failed("dyn_init", "NULL argument");
    if (mlp_cfg_check(cfg) != 0)
        return -1;
    if (buckets ? n_buckets < 1 || n_buckets > CGR_MAX_BUCKETS : n_buckets != 0)
        return failed("dyn_init", "n_buckets must be 1..CGR_MAX_BUCKETS with a list, 0 without");
    const int64_t bmax = cfg->batch;
    for (int i = 0; buckets && i < n_buckets; i++) {
        if (buckets[i] < 1 || buckets[i] > bmax || (i > 0 && buckets[i] <= buckets[i - 1])) {
            char why[160];
            snprintf(why, sizeof why, "bucket %d (%lld) out of order or outside 1..%lld", i,
                     (long long)buckets[i], (long long)bmax);
            return failed("dyn_init", why);
        }
    }
    if (buckets && buckets[n_buckets - 1] != bmax)
        return failed("dyn_init", "the last bucket must equal cfg->batch (the tensors' max)");
    memset(d, 0, sizeof *d);
    mlp_cgr_tensors(cfg, d->in, &d->out[0]);
    d->n_out = 1;
    for (int i = 0; buckets && i < n_buckets; i++)
        d->buckets[i] = buckets[i];
    d->dim = (cgr_dyn_dim){.name = "batch", .buckets = buckets ? d->buckets : NULL,
                           .n_buckets = buckets ? n_buckets : 0, .max = bmax};
    d->uses[0] = (cgr_dim_use){.dim = 0, .output = 0, .tensor = 0, .axis = 0};
    d->uses[1] = (cgr_dim_use){.dim = 0, .output = 0, .tensor = 1, .axis = 0};
    d->n_uses = 2;
    return 0;
}

int mlp_cgr_dyn_add_batch_output(mlp_cgr_dyn *d, const char *name, int cols)
{
    if (!d || !name || !name[0] || cols < 1)
        return failed("dyn_add_batch_output", "NULL argument, empty name or cols < 1");
    if (d->n_out >= CGR_MAX_TENSORS)
        return failed("dyn_add_batch_output", "CGR_MAX_TENSORS outputs already");
    const int k = d->n_out++;
    d->out[k] = (cgr_tensor_desc){.name = name, .dtype = CGR_DTYPE_F32, .rank = 2,
                                  .dims = {d->dim.max, cols}};
    d->uses[d->n_uses++] = (cgr_dim_use){.dim = 0, .output = 1, .tensor = k, .axis = 0};
    return k;
}

void mlp_cgr_dyn_desc(const mlp_cgr_dyn *d, const char *name, cgr_step_fn fn, void *user,
                      cgr_step_desc *desc)
{
    desc->name = name;
    desc->inputs = d->in;
    desc->n_inputs = 2;
    desc->outputs = d->out;
    desc->n_outputs = d->n_out;
    desc->fn = fn;
    desc->user = user;
    desc->dyn_dims = &d->dim;
    desc->n_dyn_dims = 1;
    desc->dim_uses = d->uses;
    desc->n_dim_uses = d->n_uses;
    desc->input_pad = NULL; /* zeros: x rows of 0, labels of class 0 (masked) */
}

cgr_status mlp_cgr_bind_dyn(cgr_ctx *ctx, const mlp_cfg *cfg, const mlp_bufs *dev, mlp_cfg *run,
                            mlp_bufs *b, cgr_cublas_handle *h, cgr_stream *s)
{
    int64_t bucket = 0;
    const int64_t *true_dev = NULL;
    mlp_scratch sz;
    cgr_status st;
    if (!cfg || !run || !b)
        return CGR_STATUS_INVALID_ARGUMENT;
    /* The bucket shapes everything the graph bakes in; the true batch stays
     * on the device, for the loss kernel. */
    if ((st = cgr_ctx_dim(ctx, 0, &bucket, NULL, &true_dev)))
        return st;
    if (bucket < 1 || bucket > cfg->batch || !true_dev) {
        char why[128];
        snprintf(why, sizeof why, "bucket %lld outside 1..%d, or no device true batch",
                 (long long)bucket, cfg->batch);
        failed("bind_dyn", why);
        return CGR_STATUS_INVALID_ARGUMENT;
    }
    *run = *cfg;
    run->batch = (int)bucket;
    if (mlp_scratch_sizes(run, &sz) != 0)
        return CGR_STATUS_INVALID_ARGUMENT;
    if ((st = mlp_cgr_bind(ctx, run, sz.total_bytes, dev, b, h, s)))
        return st;
    b->true_batch = true_dev;
    return CGR_STATUS_OK;
}
