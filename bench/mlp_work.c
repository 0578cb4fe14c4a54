/*
 * W-mlp training as a cgr step (bench/mlp/ holds the model and kernels):
 * inputs x[B,1024] and int32 labels[B], output the loss; parameters,
 * gradients, both AdamW moments and the step count in persistent memory
 * (the step count is advanced on the device, so replays move it on);
 * activations from cgr's arena; cuBLAS bound to cgr's stream. The dropout
 * variant (p = 0.1 after each ReLU) draws its masks from the step's
 * graph-safe Philox state (cgr_ctx_philox), so every replay drops new units.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "mlp/mlp.h"
#include "mlp/mlp_cgr.h"
#include "work.h"

typedef struct mlp_user {
    mlp_cfg cfg;
    mlp_scratch scratch;
    float *host_params;
    int pdl;
    mlp_bufs dev; /* persistent part, per runtime */
} mlp_user;

static cgr_status mlp_step(cgr_ctx *ctx, void *user)
{
    mlp_user *u = user;
    cgr_cublas_handle h;
    cgr_stream s;
    mlp_bufs b;
    cgr_status st = mlp_cgr_bind(ctx, &u->cfg, u->scratch.total_bytes, &u->dev, &b, &h, &s);
    if (st != CGR_STATUS_OK)
        return st;
    if (mlp_step_enqueue(&u->cfg, &b, h, s, u->pdl) != 0) {
        fprintf(stderr, "cgr-bench: W-mlp: %s\n", mlp_last_error());
        return CGR_STATUS_CUDA_ERROR;
    }
    return CGR_STATUS_OK;
}

static int mlp_setup(void *user, cgr_runtime *rt)
{
    mlp_user *u = user;
    if (mlp_cgr_state_create(rt, &u->cfg, u->host_params, &u->dev) != 0) {
        bench_error("W-mlp setup: %s", mlp_last_error());
        return -1;
    }
    return 0;
}

void mlp_fill_rows(bench_rng *r, const mlp_cfg *cfg, int64_t rows, float *x, int *labels)
{
    rng_fill(r, x, (size_t)rows * (size_t)cfg->in_dim);
    for (int64_t i = 0; i < rows; i++) {
        float f;
        rng_fill(r, &f, 1); /* in [-1, 1) */
        int l = (int)((f + 1.0f) * 0.5f * (float)cfg->classes);
        labels[i] = l < 0 ? 0 : l >= cfg->classes ? cfg->classes - 1 : l;
    }
}

static void mlp_fill(void *user, bench_rng *r, void *const *inputs)
{
    mlp_user *u = user;
    mlp_fill_rows(r, &u->cfg, u->cfg.batch, inputs[0], inputs[1]);
}

static void mlp_teardown(void *user)
{
    mlp_user *u = user;
    /* Teardown cannot fail the run; a failure is reported and leaks a handle. */
    if (mlp_cgr_state_release(&u->dev) != 0)
        fprintf(stderr, "cgr-bench: W-mlp teardown: %s\n", mlp_last_error());
    memset(&u->dev, 0, sizeof u->dev); /* the buffers are freed with the runtime */
}

int mlp_workload(int B, int variant, workload *w)
{
    memset(w, 0, sizeof *w);
    mlp_user *u = calloc(1, sizeof *u);
    if (!u)
        return -1;
    u->pdl = (variant & MLP_VARIANT_PDL) != 0;
    mlp_cfg_default(&u->cfg, B);
    if (variant & MLP_VARIANT_DROPOUT)
        u->cfg.dropout = 0.1f;
    mlp_layout lay;
    if (mlp_layout_init(&lay, &u->cfg) != 0 || mlp_scratch_sizes(&u->cfg, &u->scratch) != 0 ||
        !(u->host_params = malloc(lay.n_floats * sizeof(float))) ||
        mlp_init_params(&u->cfg, u->host_params, 0x5eedULL) != 0) {
        bench_error("W-mlp setup: %s", mlp_last_error());
        free(u->host_params);
        free(u);
        return -1;
    }
    snprintf(w->name, sizeof w->name, "W-mlp%s%s", u->pdl ? "+pdl" : "",
             u->cfg.dropout > 0.f ? "+drop" : "");
    w->B = B;
    w->n_in = 2;
    w->n_out = 1;
    mlp_cgr_tensors(&u->cfg, w->in, &w->out[0]);
    w->fn = mlp_step;
    w->user = u;
    w->setup = mlp_setup;
    w->fill = mlp_fill;
    w->teardown = mlp_teardown;
    return 0;
}

void mlp_workload_free(workload *w)
{
    mlp_user *u = w->user;
    if (!u)
        return;
    free(u->host_params);
    free(u);
    w->user = NULL;
}

int mlp_suite(const bench_config *cfg, bench_results *res, const int *batches, int n)
{
    if (!mlp_device_ok()) {
        fprintf(stderr, "cgr-bench: W-mlp skipped: its training step needs compute capability "
                        "9.0 (thread block clusters)\n");
        return 0;
    }
    /* Plain launches, then PDL for our kernels, then PDL with dropout. */
    static const int variants[] = {0, MLP_VARIANT_PDL, MLP_VARIANT_PDL | MLP_VARIANT_DROPOUT};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
        work_suite(cfg, res, batches, n, mlp_workload, mlp_workload_free, variants[v]);
    return 0;
}
