/*
 * cgr-bench ddp: W-ddp, the data-parallel workload, on `--nproc` GPUs.
 *
 * Each rank is its own process on its own GPU (boot.h). At each per-GPU
 * batch B (1 and 32) every rank measures, on the same input sequence:
 *   single     the graphed single-GPU W-mlp step at batch B (no
 *              collective): the weak-scaling baseline;
 *   eager      W-ddp with cgr_options.capture = 0: every kernel and the
 *              all-reduce launched one by one;
 *   graph      W-ddp captured by cgr: one launch per step, all-reduce
 *              inside;
 *   allreduce  the step's all-reduce alone, a one-node graph: the floor
 *              under the graphed step.
 * The four run in interleaved rounds (run_group), in the same order on
 * every rank, so the ranks' collectives stay matched and a drift reaches
 * every mode alike. Steps are timed as in the other suites (timing.h):
 * fresh random inputs written into the acquired pinned slot outside the
 * clocks, then launch + wait; median, p10 and p90 of --steps steps after
 * --warmup steps. Rank 0 prints its figures; the all-reduce keeps the
 * ranks in step, so every rank's step time is the same to within noise.
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
#include "report.h"

typedef struct ddp_job {
    const bench_config *cfg;
    /* Filled by each rank in its own process. */
    ncclComm_t comm;
    ddp_rank_info who;
    bench_results res;  /* this rank's device and checks; rank 0 reports them */
    ddp_result out;
    uint64_t params_hash[DDP_MAX_B][DDP_MODES];
} ddp_job;

/* One W-mlp or W-ddp mode's state at batch B. */
typedef struct ddp_run {
    bench_slot run; /* first: the fast path's step ops take the mode's state as theirs */
    ddp_job *job;
    int B, mode;
    const float *params0;
    uint64_t *hash;     /* the parameters after the last round */
    ddp_model model;
    ddp_io io;          /* the step's tensors (model and io must not move once set up) */
    cgr_runtime *rt;
    uint64_t rng;
} ddp_run;

static int r_prepare(void *self, long k)
{
    ddp_run *r = self;
    (void)k;
    CGR_CK(cgr_step_acquire(r->run.step, NULL, 0, &r->run.slot));
    ddp_fill(&r->rng, &r->model.cfg, r->run.slot.inputs[0], r->run.slot.inputs[1]);
    return 0;
}

static int r_wait(void *self, long k)
{
    ddp_run *r = self;
    TRY(bench_slot_wait(self, k));
    float loss = 0.0f;
    CGR_CK(cgr_step_output(r->run.step, r->run.slot.ticket, 0, &loss, sizeof loss, NULL));
    if (!isfinite(loss)) {
        bench_error("W-ddp B=%d: the loss is %g", r->B, (double)loss);
        return CHECK_WRONG;
    }
    return 0;
}

static void r_teardown(void *self);

/* A fresh runtime and step for the mode; the same input sequence in every mode. */
static int r_open(ddp_run *r)
{
    const ddp_job *job = r->job;
    mlp_cfg mc;
    mlp_cfg_default(&mc, r->B);
    if (ddp_model_init(&r->model, &mc, 1, r->mode != DDP_SINGLE) != 0) {
        bench_error("W-ddp: %s", mlp_last_error());
        return -1;
    }
    r->rng = ddp_seed(0xda7a0000u + (uint64_t)r->B, job->who.rank);
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = job->who.local_rank;
    o.capture = r->mode != DDP_EAGER;
    CGR_CK(cgr_runtime_create(&r->rt, &o));
    if (r->model.nccl)
        CGR_CK(cgr_runtime_attach_nccl(r->rt, job->comm, NULL));
    if (ddp_model_setup(&r->model, r->rt, r->params0) != 0) {
        bench_error("W-ddp: %s", mlp_last_error());
        return -1;
    }
    cgr_step_desc d;
    ddp_step_desc(&r->model, r->mode == DDP_SINGLE ? "W-mlp" : "W-ddp", &r->io, &d);
    CGR_CK(cgr_step_create(r->rt, &d, &r->run.step));
    r->run.mode = r->mode == DDP_EAGER ? CGR_MODE_EAGER : CGR_MODE_GRAPH;
    snprintf(r->run.who, sizeof r->run.who, "W-ddp B=%d", r->B);
    return 0;
}

/* run_group tears down only the modes it set up, so a failed setup undoes itself. */
static int r_setup(void *self)
{
    if (r_open(self) == 0)
        return 0;
    r_teardown(self);
    return -1;
}

/* After the last round: the stats when asked, and the parameters' hash. */
static int r_finish(void *self, mode_result *mr)
{
    ddp_run *r = self;
    (void)mr;
    if (r->job->cfg->stats)
        bench_print_stats(r->rt, r->run.step, "cgr stats, rank %d, W-ddp B=%d %s:\n",
                          r->job->who.rank, r->B, ddp_mode_names[r->mode]);
    size_t bytes = r->model.n_floats * sizeof(float);
    float *host = malloc(bytes);
    if (!host) {
        bench_error("W-ddp: out of host memory");
        return -1;
    }
    cudaError_t e = cudaMemcpy(host, r->model.dev.params, bytes, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        *r->hash = ddp_hash(host, bytes);
    free(host);
    CK(e);
    return 0;
}

static void r_teardown(void *self)
{
    ddp_run *r = self;
    if (r->rt) {
        /* The runtime (and its graphs) goes before the communicator ever does. */
        BENCH_RUNTIME_DESTROY(&r->rt);
        ddp_model_teardown(&r->model);
    }
}

/*
 * The floor under the DDP step: the same all-reduce (n floats, sum) as a
 * one-node graph, launched and waited for like a step, on the same
 * communicator (captured only, like the step's). Every rank runs it, in the
 * same rounds as the steps.
 */
typedef struct ar_run {
    ncclComm_t comm;
    const float *params0;
    size_t n;
    cudaStream_t s;
    float *buf;
    cudaGraphExec_t ge;
} ar_run;

static void ar_teardown(void *self);

static int ar_open(ar_run *a)
{
    /* Real values, not zeros: the initial parameters. */
    CK(cudaStreamCreateWithFlags(&a->s, cudaStreamNonBlocking));
    CK(cudaMalloc((void **)&a->buf, a->n * sizeof(float)));
    CK(cudaMemcpy(a->buf, a->params0, a->n * sizeof(float), cudaMemcpyHostToDevice));
    cudaGraph_t g = NULL;
    TRY(capture_begin(a->s));
    ncclResult_t nr = ncclAllReduce(a->buf, a->buf, a->n, ncclFloat, ncclSum, a->comm, a->s);
    if (nr != ncclSuccess)
        bench_error("W-ddp: ncclAllReduce: %s", ncclGetErrorString(nr));
    TRY(capture_end(a->s, nr == ncclSuccess, &g));
    const int rc = graph_instantiate(g, a->s, &a->ge);
    (void)cudaGraphDestroy(g);
    return rc;
}

static int ar_setup(void *self)
{
    if (ar_open(self) == 0)
        return 0;
    ar_teardown(self);
    return -1;
}

static int ar_submit(void *self, long k)
{
    ar_run *a = self;
    (void)k;
    CK(cudaGraphLaunch(a->ge, a->s));
    return 0;
}

static int ar_wait(void *self, long k)
{
    ar_run *a = self;
    (void)k;
    CK(cudaStreamSynchronize(a->s));
    return 0;
}

static void ar_teardown(void *self)
{
    ar_run *a = self;
    if (a->ge)
        (void)cudaGraphExecDestroy(a->ge);
    (void)cudaFree(a->buf);
    if (a->s)
        (void)cudaStreamDestroy(a->s);
    a->ge = NULL;
    a->buf = NULL;
    a->s = NULL;
}

/*
 * Batch B: the three step modes and the all-reduce alone, each set up on
 * its own, then measured in interleaved rounds (run_group), so a drift of
 * the GPUs or the network reaches every mode alike. Every rank runs the
 * same modes in the same order, which keeps their collectives matched.
 */
static void run_batch(ddp_job *job, ddp_batch *b, const float *params0, size_t n_floats,
                      uint64_t *hash)
{
    char group[64];
    snprintf(group, sizeof group, "W-ddp B=%d (rank %d)", b->B, job->who.rank);
    ddp_run runs[DDP_ALLREDUCE];
    ar_run ar = {job->comm, params0, n_floats, NULL, NULL, NULL};
    bench_mode bm[DDP_MODES];
    memset(runs, 0, sizeof runs);
    memset(bm, 0, sizeof bm);
    for (int m = 0; m < DDP_MODES; m++)
        mode_result_init(&b->mode[m], ddp_mode_names[m]);
    for (int m = 0; m < DDP_ALLREDUCE; m++) {
        runs[m] = (ddp_run){.job = job, .B = b->B, .mode = m, .params0 = params0,
                            .hash = &hash[m]};
        bm[m] = (bench_mode){&b->mode[m],
                             {r_prepare, bench_slot_submit, r_wait, NULL, bench_slot_after_warmup},
                             &runs[m], r_setup, r_finish, r_teardown, NULL};
    }
    bm[DDP_ALLREDUCE] = (bench_mode){&b->mode[DDP_ALLREDUCE], {NULL, ar_submit, ar_wait, NULL,
                                     NULL}, &ar, ar_setup, NULL, ar_teardown, NULL};
    run_group(&job->res, group, bm, DDP_MODES, mode_budget_s(job->cfg, DDP_MODES * 5.0));
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
        run_batch(job, r, params0, L.n_floats, hash);
        for (int m = 0; m < DDP_MODES; m++)
            failed |= !r->mode[m].ran || r->mode[m].failed;
        free(params0);
        if (report_usable(&r->mode[DDP_EAGER]) && report_usable(&r->mode[DDP_GRAPH])) {
            r->eager_equals_graph = hash[DDP_EAGER] == hash[DDP_GRAPH];
            if (!r->eager_equals_graph) {
                fprintf(stderr, "cgr-bench: rank %d: W-ddp B=%d: eager and graphed parameters "
                                "differ\n", who->rank, B);
                failed = 1;
            }
        }
        if (failed || job->res.aborted)
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
