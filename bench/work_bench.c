/*
 * Workload suite: W-cnn (and W-mlp) through cgr, eager vs graphed.
 *
 * Both modes run the same step function, each on its own copy of the
 * workload (parameters, runtime), on the same input sequence (same seed,
 * same number of steps), interleaved in rounds (measure_rounds); only
 * cgr_options.capture differs. So the last step's outputs must be bitwise
 * equal, which is checked (for a training step the parameters evolve
 * identically, so the loss is too). Wall and host CPU come from the timed
 * rounds; GPU busy time from a profiled pass of each mode after them, since
 * CUPTI itself adds host overhead.
 *
 * Inputs take cgr's fast path: the workload writes a step's fresh inputs
 * straight into the pinned slot from cgr_step_acquire(), outside the
 * clocks, and the timed part is cgr_step_launch() plus the wait. That is
 * what the PyTorch peer measures too: its inputs wait in pinned host
 * tensors generated beforehand, and its timed part copies them in and
 * replays.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "work.h"

#if BENCH_HAVE_PROF
#include "prof.h"
static prof *g_prof;
static int g_prof_failed;
static int g_trace_pid;
#endif

#define WORK_PROF_STEPS 50

typedef struct work_ctx {
    bench_slot run; /* first: the fast path's step ops take the context as theirs */
    const bench_config *cfg;
    const workload *w;
    work_mode *out;
    work_result *r;
    int capture;
    cgr_runtime *rt;
    bench_rng rng;
} work_ctx;

static int w_prepare(void *self, long k)
{
    work_ctx *c = self;
    (void)k;
    CGR_CK(cgr_step_acquire(c->run.step, NULL, 0, &c->run.slot));
    c->w->fill(c->w->user, &c->rng, c->run.slot.inputs);
    return 0;
}

/* One step outside the clocks (used around the profiled window). */
static int one_step(work_ctx *c)
{
    TRY(w_prepare(c, 0));
    TRY(bench_slot_submit(c, 0));
    return bench_slot_wait(c, 0);
}

static int keep_output(work_ctx *c)
{
    const void *data = NULL;
    size_t bytes = 0;
    if (!(data = bench_output(c->run.step, c->run.slot.ticket, 0, &bytes)))
        return -1;
    c->out->last_out_bytes = bytes < WORK_OUT_KEEP ? bytes : WORK_OUT_KEEP;
    memcpy(c->out->last_out, data, c->out->last_out_bytes);
    cgr_step_stats s;
    CGR_CK(cgr_step_get_stats(c->run.step, &s));
    c->out->capture_us = s.last_capture_us + s.last_make_us;
    c->out->graph_nodes = s.graph_nodes;
    return 0;
}

#if BENCH_HAVE_PROF
static int profile_window(work_ctx *c, work_result *r)
{
    /* A step after the previous window's flush keeps its delay out of this one. */
    TRY(one_step(c));
    char label[64];
    snprintf(label, sizeof label, "%s B=%d %s", c->w->name, c->w->B,
             c->capture ? "graph" : "eager");
    if (prof_begin(g_prof) != PROF_OK)
        return 0;
    for (int i = 0; i < WORK_PROF_STEPS; i++)
        TRY(one_step(c));
    CK(cudaDeviceSynchronize());
    prof_window win;
    if (prof_end(g_prof, WORK_PROF_STEPS, &win) != PROF_OK) {
        fprintf(stderr, "cgr-bench: profiling %s failed: %s\n", label, prof_errmsg(g_prof));
        return 0;
    }
    c->out->prof_ok = 1;
    c->out->busy_us = win.busy_us;
    c->out->busy_union_us = win.busy_union_us;
    c->out->kernels_per_step = win.kernels_per_step;
    c->out->memcpys_per_step = win.memcpys_per_step;
    if (c->capture) {
        prof_kernel_stat top[8];
        int n = 0;
        if (prof_top_kernels(g_prof, top, 8, &n) == PROF_OK) {
            r->n_top = n;
            for (int i = 0; i < n; i++)
                snprintf(r->top[i], sizeof r->top[i], "%-90.90s %6llu %9.1f %6.1f%%",
                         top[i].name, (unsigned long long)top[i].calls, top[i].total_us,
                         100.0 * top[i].share);
        }
    }
    if (c->cfg->trace_path)
        prof_trace_add(g_prof, label, ++g_trace_pid);
    return 0;
}

/*
 * The profiled pass after a mode's timed rounds. The profiler lives for
 * this pass only: while it exists CUPTI is attached, and every launch of
 * the modes and workloads timed after it would pay for that in host time
 * per replay (docs/benchmarks.md, "CUPTI attached slows every later
 * launch"). With --trace it
 * stays, since the trace gathers every pass, and the help text says so.
 */
static int profile_pass(work_ctx *c, work_result *r)
{
    if (g_prof_failed)
        return 0;
    if (!g_prof) {
        char err[256];
        if (prof_create(&g_prof, err, sizeof err) != PROF_OK) {
            g_prof_failed = 1; /* said once, not at every pass */
            fprintf(stderr, "cgr-bench: no GPU busy times: %s\n", err);
            return 0;
        }
    }
    int rc = profile_window(c, r);
    if (!c->cfg->trace_path)
        prof_destroy(&g_prof);
    return rc;
}
#else
static int profile_pass(work_ctx *c, work_result *r)
{
    (void)c;
    (void)r;
    return 0;
}
#endif

static int work_mode_setup(void *self)
{
    work_ctx *c = self;
    const workload *w = c->w;
    cgr_options o;
    CGR_CK(cgr_options_init(&o));
    o.device = c->cfg->device;
    o.capture = c->capture;
    CGR_CK(cgr_runtime_create(&c->rt, &o));
    TRY(w->setup(w->user, c->rt));
    cgr_step_desc d;
    CGR_CK(cgr_step_desc_init(&d));
    d.name = w->name;
    d.inputs = w->in;
    d.n_inputs = w->n_in;
    d.outputs = w->out;
    d.n_outputs = w->n_out;
    d.fn = w->fn;
    d.user = w->user;
    CGR_CK(cgr_step_create(c->rt, &d, &c->run.step));
    rng_seed(&c->rng, 0xc0ffee00u + (uint64_t)w->B);
    return 0;
}

static int work_mode_finish(void *self, mode_result *r)
{
    work_ctx *c = self;
    (void)r;
    TRY(keep_output(c));
    return profile_pass(c, c->r);
}

static void work_mode_teardown(void *self)
{
    work_ctx *c = self;
    const workload *w = c->w;
    if (c->cfg->stats && c->rt)
        bench_print_stats(c->rt, c->run.step, "cgr stats, %s B=%d %s:\n", w->name, w->B,
                          c->capture ? "graph" : "eager");
    BENCH_RUNTIME_DESTROY(&c->rt);
    c->run.step = NULL;
    w->teardown(w->user);
}

/* Measures both modes of w (one workload instance per mode) into *r. */
static void work_run(const bench_config *cfg, bench_results *res, const workload *w,
                     work_result *r)
{
    snprintf(r->name, sizeof r->name, "%s", w[0].name);
    r->B = w[0].B;
    r->outputs_equal = -1;
    work_ctx c[WORK_MODES];
    bench_mode bm[WORK_MODES];
    for (int m = 0; m < WORK_MODES; m++) {
        memset(&c[m], 0, sizeof c[m]);
        c[m].cfg = cfg;
        c[m].w = &w[m];
        c[m].r = r;
        c[m].capture = m == WORK_GRAPH;
        c[m].out = &r->mode[m];
        c[m].run.mode = m == WORK_GRAPH ? CGR_MODE_GRAPH : CGR_MODE_EAGER;
        snprintf(c[m].run.who, sizeof c[m].run.who, "%.15s B=%d", w[m].name, w[m].B);
        bm[m] = (bench_mode){&r->mode[m].m,
                             {w_prepare, bench_slot_submit, bench_slot_wait, NULL,
                              bench_slot_after_warmup},
                             &c[m], work_mode_setup, work_mode_finish, work_mode_teardown, NULL};
    }
    char group[32];
    snprintf(group, sizeof group, "%s B=%d", w[0].name, w[0].B);
    run_group(res, group, bm, WORK_MODES, mode_budget_s(cfg, WORK_MODES * 5.0));
    const work_mode *e = &r->mode[WORK_EAGER], *g = &r->mode[WORK_GRAPH];
    if (e->m.ran && g->m.ran && e->last_out_bytes) {
        r->outputs_equal = e->last_out_bytes == g->last_out_bytes &&
                           memcmp(e->last_out, g->last_out, e->last_out_bytes) == 0;
        if (!r->outputs_equal) {
            bench_error("%s: graphed and eager outputs of the last step differ", group);
            /* Like a wrong value a step's check finds: no figure of this mode is reported. */
            r->mode[WORK_GRAPH].m.wrong = 1;
            mode_result_fail(&r->mode[WORK_GRAPH].m);
        }
    }
}

void work_suite(const bench_config *cfg, bench_results *res, const int *batches, int n,
                work_make make, void (*free_fn)(workload *), int arg)
{
    int cap = (int)(sizeof res->work / sizeof res->work[0]);
    for (int i = 0; i < n && res->n_work < cap; i++) {
        work_result *r = &res->work[res->n_work++];
        memset(r, 0, sizeof *r);
        mode_result_init(&r->mode[WORK_EAGER].m, "eager");
        mode_result_init(&r->mode[WORK_GRAPH].m, "graph");
        workload w[WORK_MODES];
        int made = 0;
        while (made < WORK_MODES && make(batches[i], arg, &w[made]) == 0)
            made++;
        if (made == WORK_MODES)
            work_run(cfg, res, w, r);
        else
            for (int m = 0; m < WORK_MODES; m++)
                mode_result_not_run(&r->mode[m].m, 0);
        for (int m = 0; m < made; m++)
            free_fn(&w[m]);
    }
}

int work_trace_write(const char *path)
{
#if BENCH_HAVE_PROF
    if (!g_prof) {
        bench_error("no step was profiled (%s)",
                    g_prof_failed ? "the profiler could not start" : "no workload ran");
        return -1;
    }
    if (prof_trace_write(g_prof, path) != PROF_OK) {
        bench_error("%s", prof_errmsg(g_prof));
        return -1;
    }
    return 0;
#else
    (void)path;
    bench_error("cgr-bench was built without CUPTI");
    return -1;
#endif
}

void work_finish(void)
{
#if BENCH_HAVE_PROF
    prof_destroy(&g_prof);
#endif
}
