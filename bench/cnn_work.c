/*
 * W-cnn as a cgr step (bench/cnn/ holds the model): input x[B,3,64,64],
 * output logits[B,10]; parameters in persistent memory; activations and the
 * cuDNN workspace from cgr's arena; algorithms chosen in the first eager
 * run, never while capturing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cnn/cnn.h"
#include "work.h"

typedef struct cnn_user {
    cnn *m;
    float *host_params;
} cnn_user;

static cgr_status cnn_step(cgr_ctx *ctx, void *user)
{
    cnn_user *u = user;
    cgr_cudnn_handle h;
    cgr_stream s;
    void *x, *y, *scratch, *ws = NULL;
    cgr_status st;
    if ((st = cgr_ctx_cudnn(ctx, &h)) || (st = cgr_ctx_stream(ctx, &s)))
        return st;
    if (!cgr_ctx_is_capturing(ctx) && cnn_prepare(u->m, h) != 0) {
        fprintf(stderr, "cgr-bench: cnn_prepare: %s\n", cnn_last_error());
        return CGR_STATUS_CUDNN_ERROR;
    }
    if ((st = cgr_ctx_input(ctx, 0, &x)) || (st = cgr_ctx_output(ctx, 0, &y)) ||
        (st = cgr_ctx_alloc(ctx, cnn_scratch_bytes(u->m), &scratch)))
        return st;
    if (cnn_workspace_bytes(u->m) &&
        (st = cgr_ctx_alloc(ctx, cnn_workspace_bytes(u->m), &ws)))
        return st;
    if (cnn_forward_enqueue(u->m, h, s, x, y, scratch, ws) != 0) {
        fprintf(stderr, "cgr-bench: cnn_forward_enqueue: %s\n", cnn_last_error());
        return CGR_STATUS_CUDNN_ERROR;
    }
    return CGR_STATUS_OK;
}

static int cnn_setup(void *user, cgr_runtime *rt)
{
    cnn_user *u = user;
    size_t bytes = cnn_param_floats(u->m) * sizeof(float);
    void *dev = NULL;
    TRY(bench_upload(rt, u->host_params, bytes, &dev));
    if (cnn_set_device_params(u->m, dev) != 0) {
        bench_error("cnn_set_device_params: %s", cnn_last_error());
        return -1;
    }
    return 0;
}

static void cnn_fill(void *user, bench_rng *r, void *const *inputs)
{
    cnn_user *u = user;
    rng_fill(r, inputs[0], (size_t)cnn_batch(u->m) * CNN_IN_C * CNN_H * CNN_W);
}

static void cnn_teardown(void *user)
{
    (void)user; /* the device parameters went with the runtime */
}

int cnn_workload(int B, int arg, workload *w)
{
    (void)arg;
    memset(w, 0, sizeof *w);
    cnn_user *u = calloc(1, sizeof *u);
    if (!u)
        return -1;
    if (cnn_create(&u->m, B, 0x5eedULL) != 0) {
        bench_error("cnn_create: %s", cnn_last_error());
        free(u);
        return -1;
    }
    u->host_params = malloc(cnn_param_floats(u->m) * sizeof(float));
    if (!u->host_params) {
        cnn_destroy(&u->m);
        free(u);
        return -1;
    }
    cnn_host_params(u->m, u->host_params);
    snprintf(w->name, sizeof w->name, "W-cnn");
    w->B = B;
    w->n_in = 1;
    w->n_out = 1;
    w->in[0] = (cgr_tensor_desc){.name = "x", .dtype = CGR_DTYPE_F32, .rank = 4,
                                 .dims = {B, CNN_IN_C, CNN_H, CNN_W}};
    w->out[0] = (cgr_tensor_desc){.name = "logits", .dtype = CGR_DTYPE_F32, .rank = 2,
                                  .dims = {B, CNN_CLASSES}};
    w->fn = cnn_step;
    w->user = u;
    w->setup = cnn_setup;
    w->fill = cnn_fill;
    w->teardown = cnn_teardown;
    return 0;
}

void cnn_workload_free(workload *w)
{
    cnn_user *u = w->user;
    if (!u)
        return;
    cnn_destroy(&u->m);
    free(u->host_params);
    free(u);
    w->user = NULL;
}

int cnn_suite(const bench_config *cfg, bench_results *res, const int *batches, int n)
{
    work_suite(cfg, res, batches, n, cnn_workload, cnn_workload_free, 0);
    return 0;
}
