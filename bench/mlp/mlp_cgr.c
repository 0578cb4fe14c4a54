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
