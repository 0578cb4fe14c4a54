/*
 * cgr-bench ddp: W-ddp, the data-parallel workload, on `--nproc` GPUs.
 *
 * Each rank is its own process on its own GPU (boot.h). At each per-GPU
 * batch B (1 and 32) every rank measures, in this order and on the same
 * input sequence:
 *   single  the graphed single-GPU W-mlp step at batch B (no collective):
 *           the weak-scaling baseline;
 *   eager   W-ddp with cgr_options.capture = 0: every kernel and the
 *           all-reduce launched one by one;
 *   graph   W-ddp captured by cgr: one launch per step, all-reduce inside.
 * Steps are timed as in the other suites (timing.h): fresh random inputs
 * written into the acquired pinned slot outside the clocks, then launch +
 * wait; median, p10 and p90 of --steps steps after --warmup steps. Rank 0
 * prints its figures; the all-reduce keeps the ranks in step, so every
 * rank's step time is the same to within noise.
 *
 * Weak-scaling efficiency = single / graph at the same per-GPU batch; the
 * table also gives graph / single and eager / graph at each batch.
 *
 * Checked: after warm-up the graphed modes replay (mode GRAPH), and the
 * eager and graphed W-ddp runs end with bitwise equal parameters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "bench.h"
#include "boot.h"
#include "ddp.h"
#include "ddp_bench.h"
#include "mlp/mlp.h"

static const char *const mode_names[DDP_MODES] = {"single_graph", "ddp_eager", "ddp_graph"};

typedef struct ddp_job {
    const bench_config *cfg;
    /* Filled by each rank in its own process. */
    ncclComm_t comm;
    ddp_rank_info who;
    bench_results res;  /* this rank's device and checks; rank 0 reports them */
    ddp_result out;
    uint64_t params_hash[DDP_MAX_B][DDP_MODES];
} ddp_job;

/* One mode's measurement state. */
typedef struct ddp_run {
    ddp_model model;
    cgr_runtime *rt;
    cgr_step *step;
    cgr_slot slot;
    uint64_t ticket;
    uint64_t rng;
    int capture;
} ddp_run;

static int r_prepare(void *self, long k)
{
    ddp_run *r = self;
    (void)k;
    CGR_CK(cgr_step_acquire(r->step, NULL, 0, &r->slot));
    ddp_fill(&r->rng, &r->model.cfg, r->slot.inputs[0], r->slot.inputs[1]);
    return 0;
}

static int r_submit(void *self, long k)
{
    ddp_run *r = self;
    (void)k;
    CGR_CK(cgr_step_launch(r->step, &r->slot));
    r->ticket = r->slot.ticket;
    return 0;
}

static int r_wait(void *self, long k)
{
    ddp_run *r = self;
    (void)k;
    CGR_CK(cgr_step_wait(r->step, r->ticket));
    float loss = 0.0f;
    CGR_CK(cgr_step_output(r->step, r->ticket, 0, &loss, sizeof loss, NULL));
    if (!isfinite(loss)) {
        bench_error("W-ddp B=%d: the loss is %g", r->model.cfg.batch, (double)loss);
        return CHECK_WRONG;
    }
    return 0;
}

static int r_after_warmup(void *self)
{
    ddp_run *r = self;
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(r->step, &s));
    cgr_step_mode want = r->capture ? CGR_MODE_GRAPH : CGR_MODE_EAGER;
    if (s.mode != want) {
        bench_error("W-ddp B=%d: step mode %d after warm-up, expected %d: %s",
                    r->model.cfg.batch, (int)s.mode, (int)want, s.capture_error);
        return -1;
    }
    return 0;
}

/* One mode at batch B: a fresh runtime, measured, then the parameters hashed. */
static int run_one(ddp_job *job, int B, int mode, const float *params0, mode_result *mr,
                   uint64_t *hash)
{
    const bench_config *cfg = job->cfg;
    ddp_run r;
    memset(&r, 0, sizeof r);
    int rc = -1;
    mlp_cfg mc;
    mlp_cfg_default(&mc, B);
    if (ddp_model_init(&r.model, &mc, 1, mode != DDP_SINGLE) != 0) {
        bench_error("W-ddp: %s", mlp_last_error());
        return -1;
    }
    r.capture = mode != DDP_EAGER;
    r.rng = ddp_seed(0xda7a0000u + (uint64_t)B, job->who.rank);
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = job->who.local_rank;
    o.capture = r.capture;
    CGR_CK(cgr_runtime_create(&r.rt, &o));
    if (r.model.nccl)
        CGR_CK_GOTO(cgr_runtime_attach_nccl(r.rt, job->comm, NULL), out);
    if (ddp_model_setup(&r.model, r.rt, params0) != 0) {
        bench_error("W-ddp: %s", mlp_last_error());
        goto out;
    }
    ddp_io io;
    cgr_step_desc d;
    ddp_step_desc(&r.model, mode == DDP_SINGLE ? "W-mlp" : "W-ddp", &io, &d);
    CGR_CK_GOTO(cgr_step_create(r.rt, &d, &r.step), out);
    step_ops ops = {r_prepare, r_submit, r_wait, NULL, r_after_warmup};
    TRY_GOTO(measure(&ops, &r, cfg->warmup, cfg->steps, mr), out);
    if (cfg->stats) {
        printf("cgr stats, rank %d, W-ddp B=%d %s:\n", job->who.rank, B, mode_names[mode]);
        bench_print_stats(r.rt, (const cgr_step *const *)&r.step, 1);
    }
    size_t bytes = r.model.n_floats * sizeof(float);
    float *host = malloc(bytes);
    if (!host) {
        bench_error("W-ddp: out of host memory");
        goto out;
    }
    cudaError_t e = cudaMemcpy(host, r.model.dev.params, bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        *hash = ddp_hash(host, bytes);
    free(host);
    CK_GOTO(e, out);
    rc = 0;
out:
    if (r.rt) {
        /* The runtime (and its graphs) goes before the communicator ever does. */
        bench_cgr_failed(cgr_runtime_destroy(&r.rt), "cgr_runtime_destroy", __FILE__, __LINE__);
        ddp_model_teardown(&r.model);
    }
    return rc;
}

/*
 * The floor under the DDP step: the same all-reduce (n floats, sum) as a
 * one-node graph, launched and waited for like a step, on the same
 * communicator (captured only, like the step's). Both ranks run it.
 */
static int time_allreduce(ddp_job *job, const float *params0, size_t n, bench_stats *out)
{
    const bench_config *c = job->cfg;
    cudaStream_t s = NULL;
    float *buf = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    double *t = malloc(sizeof(double) * (size_t)c->steps);
    int rc = -1;
    if (!t)
        return -1;
    /* Real values, not zeros: the initial parameters. */
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMalloc((void **)&buf, n * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(buf, params0, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        goto out;
    ncclResult_t nr = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, job->comm, s);
    cudaError_t ce = cudaStreamEndCapture(s, &g);
    if (nr != ncclSuccess || ce != cudaSuccess ||
        cudaGraphInstantiate(&ge, g, 0) != cudaSuccess)
        goto out;
    for (int k = 0; k < c->warmup + c->steps; k++) {
        double t0 = now_us();
        if (cudaGraphLaunch(ge, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess)
            goto out;
        if (k >= c->warmup)
            t[k - c->warmup] = now_us() - t0;
    }
    stats_compute(t, c->steps, out);
    rc = 0;
out:
    if (rc != 0)
        fprintf(stderr, "cgr-bench: rank %d: timing the all-reduce alone failed (%s)\n",
                job->who.rank, cudaGetErrorString(cudaGetLastError()));
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    cudaFree(buf);
    if (s)
        cudaStreamDestroy(s);
    free(t);
    return rc;
}

/* The body of every rank (boot.h): no CUDA call happened in this process before. */
static int rank_main(const ddp_rank_info *who, const ncclUniqueId *id, void *user)
{
    ddp_job *job = user;
    const bench_config *cfg = job->cfg;
    bench_results *res = &job->res;
    job->who = *who;
    res->cfg = *cfg;
    res->suite_name = "ddp";
    watchdog_install();
    watchdog_arm("W-ddp: device and communicator start-up", cfg->timeout_s);
    const int probe = bench_device_probe(who->local_rank, res);
    if (probe != 0) {
        watchdog_disarm();
        fprintf(stderr, "cgr-bench: rank %d has no usable device\n", who->rank);
        return probe;
    }
    if (who->rank == 0)
        report_header(res);
    if (!mlp_device_ok()) {
        watchdog_disarm();
        fprintf(stderr, "cgr-bench: rank %d: W-ddp needs compute capability 9.0 (the W-mlp "
                        "training step's thread block clusters)\n", who->rank);
        return EXIT_NO_DEVICE;
    }
    ncclResult_t nr = ncclCommInitRank(&job->comm, who->world, *id, who->rank);
    watchdog_disarm();
    if (nr != ncclSuccess) {
        fprintf(stderr, "cgr-bench: rank %d: ncclCommInitRank: %s\n", who->rank,
                ncclGetErrorString(nr));
        return 1;
    }
    ddp_id_done(who);

    static const int batches[] = {1, 32};
    int failed = 0;
    ddp_result *out = &job->out;
    out->world = who->world;
    out->n = 0;
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        const int B = batches[b];
        ddp_batch *r = &out->b[out->n];
        uint64_t *hash = job->params_hash[out->n++];
        memset(r, 0, sizeof *r);
        r->B = B;
        r->eager_equals_graph = -1;
        mlp_cfg mc;
        mlp_cfg_default(&mc, B);
        mlp_layout L;
        float *params0 = NULL;
        if (mlp_layout_init(&L, &mc) != 0 || !(params0 = malloc(L.n_floats * sizeof(float))) ||
            mlp_init_params(&mc, params0, 0x5eedULL) != 0) {
            fprintf(stderr, "cgr-bench: W-ddp setup: %s\n", mlp_last_error());
            free(params0);
            return 1;
        }
        out->n_floats = L.n_floats;
        for (int m = 0; m < DDP_MODES; m++) {
            mode_result *mr = &r->mode[m];
            mode_result_init(mr, mode_names[m]);
            char label[96];
            snprintf(label, sizeof label, "W-ddp B=%d %s (rank %d)", B, mode_names[m],
                     who->rank);
            bench_clear_error();
            /* The same watchdog budget as the single-GPU workloads (work_bench.c). */
            watchdog_arm(label, mode_budget_s(cfg, 5.0));
            int rc = run_one(job, B, m, params0, mr, &hash[m]);
            watchdog_disarm();
            if (rc != 0) {
                mode_result_fail(mr);
                failed = 1;
            }
            if (who->rank == 0)
                fprintf(stderr, "cgr-bench: %-36s %s %9.2f us\n", label,
                        mr->ran && !mr->failed ? "wall" : "FAILED", mr->wall.median);
        }
        if (!failed) {
            watchdog_arm("W-ddp: the all-reduce alone", mode_budget_s(cfg, 5.0));
            r->allreduce_ran = time_allreduce(job, params0, L.n_floats, &r->allreduce) == 0;
            watchdog_disarm();
        }
        free(params0);
        if (r->mode[DDP_EAGER].ran && r->mode[DDP_GRAPH].ran) {
            r->eager_equals_graph = hash[DDP_EAGER] == hash[DDP_GRAPH];
            if (!r->eager_equals_graph) {
                fprintf(stderr, "cgr-bench: rank %d: W-ddp B=%d: eager and graphed parameters "
                                "differ\n", who->rank, B);
                failed = 1;
            }
        }
        if (failed)
            break; /* a rank that stops makes its peers' collectives fail; stop together */
    }
    if (who->rank == 0 && out->n > 0) {
        said_check *c = said_add(res, "ddp_eager_equals_graph",
                                 "W-ddp eager and graphed parameters equal");
        int n = snprintf(c->message, sizeof c->message, "bitwise after the run:");
        c->ok = 1;
        for (int i = 0; i < out->n && n > 0 && (size_t)n < sizeof c->message; i++) {
            const int eq = out->b[i].eager_equals_graph;
            c->ok &= eq == 1;
            n += snprintf(c->message + n, sizeof c->message - (size_t)n, " B = %d %s;",
                          out->b[i].B, eq == 1 ? "equal" : eq == 0 ? "DIFFERENT" : "not compared");
        }
        res->ddp = out;
        if (report(res, cfg->json_path) != 0 || results_failed(res))
            failed = 1;
    }
    /* Every runtime (and graph) is gone, so NCCL's destroy does not wait on any. */
    nr = ncclCommDestroy(job->comm);
    if (nr != ncclSuccess) {
        fprintf(stderr, "cgr-bench: rank %d: ncclCommDestroy: %s\n", who->rank,
                ncclGetErrorString(nr));
        failed = 1;
    }
    return failed ? 1 : 0;
}

int ddp_suite(const bench_config *cfg, int nproc)
{
    static ddp_job job; /* large; one per process (each rank has its own copy) */
    memset(&job, 0, sizeof job);
    job.cfg = cfg;
    ddp_rank_info who;
    int env = ddp_rank_from_env(&who);
    if (env < 0)
        return 64;
    /* A whole job may take a while: setup, 3 modes x 2 batches of steps. */
    unsigned total_s = 6 * mode_budget_s(cfg, 5.0) + cfg->timeout_s;
    if (env == 1) {
        /* Started by a launcher (torchrun style): this process is one rank. */
        return ddp_run_from_env(&who, cfg->timeout_s, rank_main, &job);
    }
    int gpus = ddp_probe_gpus();
    if (gpus < nproc) {
        fprintf(stderr,
                "cgr-bench: no usable CUDA device for W-ddp (--nproc %d needs %d GPUs, %d "
                "found)\n",
                nproc, nproc, gpus < 0 ? 0 : gpus);
        return EXIT_NO_DEVICE;
    }
    int rc = ddp_launch_local(nproc, total_s, rank_main, &job);
    return rc == 0 ? 0 : rc == EXIT_NO_DEVICE ? EXIT_NO_DEVICE : 1;
}
