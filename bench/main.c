/*
 * cgr-bench: command line, device checks and the suite runner.
 *
 *   cgr-bench [chain|mlp|cnn|soak|newshape|serve|ddp|default] [options]
 *
 * Exit status: 0 all modes ran, every checked value was right and every
 * check passed; 1 a mode or suite failed, a value was wrong, a check failed,
 * the limits file could not be read, the JSON or trace file could not be
 * written or the watchdog fired; 2 no usable CUDA device; 64 bad command
 * line.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "chain.h"
#include "limits_file.h"
#include "pdl.h"
#if BENCH_HAVE_DDP
#include "ddp/ddp_bench.h"
#endif
#include "util.h"

#define EXIT_USAGE 64

/* The parts of the default run that run_suites measures. */
enum { RUN_CHAIN = 1, RUN_MLP = 2, RUN_CNN = 4, RUN_SMALL_B = 8 };

static const char *const canary_limits[] = {"canary_host_growth_us", NULL};
static const char *const soak_limits[] = {"soak_rss_growth_bytes", "soak_device_growth_bytes",
                                          "soak_pinned_growth_bytes", NULL};

typedef struct bench_suite {
    const char *name;
    unsigned parts; /* RUN_*: run_suites' parts, with the canary around them */
    int (*run)(const bench_config *cfg, bench_results *res); /* or a suite of its own */
    /* The limits its checks use: they must be in the file before hours of measuring. */
    const char *const *limits;
    int traces; /* 1: it profiles steps, so --trace has something to write */
} bench_suite;

static const bench_suite suites[] = {
    {"default", RUN_CHAIN | RUN_MLP | RUN_CNN | RUN_SMALL_B, NULL, canary_limits, 1},
    {"chain", RUN_CHAIN, NULL, canary_limits, 0},
    {"mlp", RUN_MLP, NULL, canary_limits, 1},
    {"cnn", RUN_CNN, NULL, canary_limits, 1},
    {"soak", 0, soak_suite, soak_limits, 0},
    {"newshape", 0, newshape_suite, NULL, 0},
    {"serve", 0, serve_suite, NULL, 1}, /* writes its own trace */
    {"ddp", 0, NULL, NULL, 0},          /* forks its ranks, before any CUDA call */
};

/* --nproc: ranks of the ddp suite. */
static int g_nproc = 2;

static void usage(FILE *f)
{
    fputs("usage: cgr-bench [suite] [options]\n"
          "suites:\n"
          "  chain      W-chain (N = 10, 100, 1000): eager vs raw CUDA graph vs cgr, plain\n"
          "             and with programmatic dependent launch, with and without 4 KiB in +\n"
          "             4 B out; all modes of one N interleaved in rounds\n"
          "  mlp        W-mlp training (B = 1, 8, 32, 256) through cgr, without and with\n"
          "             programmatic dependent launch, and with dropout: eager vs graph,\n"
          "             GPU busy time\n"
          "  cnn        W-cnn (B = 1, 8, 32) through cgr: eager vs graph, GPU busy time\n"
          "  default    chain, then W-mlp and W-cnn at B = 1 (what runs when no suite is\n"
          "             given)\n"
          "  soak       1,000,000 runs (--soak-steps) of a step with a dynamic batch, fresh\n"
          "             inputs, the batch changed every 10,000 steps (2 graphs cached for 4\n"
          "             buckets: evictions and updates in place): fails when host RSS,\n"
          "             device memory or pinned bytes grow beyond the limits file's soak_*\n"
          "             limits, on any output unlike an eager run's, or on a run that goes\n"
          "             eagerly\n"
          "  newshape   a new shape of the W-mlp training step (dynamic batch): capture +\n"
          "             instantiate, and capture + update in place, warm-up excluded,\n"
          "             against a raw CUDA graph of the same shapes; what the frozen-value\n"
          "             check adds, once per shape and per replay\n"
          "  serve      W-serve: 10,000 requests (2,000 with --quick), batch uniform in\n"
          "             1..64, one step with buckets {1,2,4,...,64}: armed graphs vs eager\n"
          "             vs graphs launched at submission, latency p50/p99 per bucket,\n"
          "             throughput, GPU busy per bucket (CUPTI), latency over GPU busy\n"
          "             time; fails only on wrong outputs\n"
          "  ddp        W-ddp: W-mlp data-parallel on --nproc GPUs (B = 1, 32 per GPU),\n"
          "             one process per GPU, NCCL all-reduce inside the graph: single-GPU\n"
          "             graph vs DDP eager vs DDP graph vs the all-reduce alone,\n"
          "             interleaved in rounds, weak-scaling efficiency; with\n"
          "             RANK/WORLD_SIZE/LOCAL_RANK set, runs as one rank (docs/multigpu.md)\n"
          "options:\n"
          "  --device N      CUDA device ordinal (default 0; ddp's ranks ignore it: rank i\n"
          "                  takes GPU i, or GPU LOCAL_RANK when that is set)\n"
          "  --steps S       timed steps per mode (default 1000, at least 200)\n"
          "  --warmup W      warm-up steps per mode (default 50, at least 20)\n"
          "  --rounds R      interleaved rounds the timed steps are split into (default 20,\n"
          "                  at most 100 and at most steps / 10)\n"
          "  --limits FILE   the limits the checks use (default: limits.txt beside\n"
          "                  cgr-bench, or ../share/cgr/limits.txt from it)\n"
          "  --json FILE     also write the figures as JSON to FILE (docs/bench-json.md)\n"
          "  --quick         200 steps, 20 warm-up (unless --steps or --warmup says\n"
          "                  otherwise); chain only at N = 100, mlp and cnn only at\n"
          "                  B = 1, newshape 20 repetitions, serve 2,000 requests\n"
          "  --profile       print the top kernels of each W-mlp and W-cnn graph (CUPTI)\n"
          "  --trace FILE    Chrome/Perfetto trace of the profiled steps of W-mlp, W-cnn\n"
          "                  and W-serve (refused for other suites); keeps CUPTI\n"
          "                  attached from the first profiled pass on, which slows the\n"
          "                  launches timed after it: take timings from a run without it\n"
          "  --no-pdl        W-serve's kernels without programmatic dependent launch\n"
          "                  (serve uses it by default)\n"
          "  --timeout SEC   watchdog per mode, plus an allowance per step (default 60)\n"
          "  --stats         print cgr's runtime and step stats after each workload\n"
          "  --soak-steps N  runs of the soak suite (default 1000000)\n"
          "  --nproc N       GPUs (processes) of the ddp suite (default 2)\n"
          "  -h, --help      this text\n"
          "An option's value is the next argument or follows '=' (--steps=500).\n",
          f);
}

static int parse_int(const char *opt, const char *v, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || end == v || *end || x < min || x > max) {
        fprintf(stderr, "cgr-bench: %s needs an integer in %ld..%ld, got '%s'\n", opt, min, max,
                v ? v : "(nothing)");
        return -1;
    }
    *out = x;
    return 0;
}

/* Splits "--opt=value" or takes the next argument as the value. */
static const char *option_value(int argc, char **argv, int *i, const char *arg, size_t name_len)
{
    if (arg[name_len] == '=')
        return arg + name_len + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

static int parse_suite(const char *arg, const bench_suite **s)
{
    if (*s) {
        fprintf(stderr, "cgr-bench: more than one suite given ('%s')\n", arg);
        return -1;
    }
    for (size_t k = 0; k < sizeof suites / sizeof suites[0]; k++) {
        if (strcmp(arg, suites[k].name) == 0) {
            *s = &suites[k];
            return 0;
        }
    }
    fprintf(stderr, "cgr-bench: unknown suite or option '%s'\n", arg);
    return -1;
}

static int is_opt(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* Returns 0, -1 on a bad command line, 1 when help was printed. */
static int parse_args(int argc, char **argv, bench_config *cfg, const bench_suite **suite)
{
    long nproc = g_nproc, soak = cfg->soak_steps, device = cfg->device, steps = cfg->steps,
         warmup = cfg->warmup, rounds = cfg->rounds, timeout = cfg->timeout_s;
    const struct {
        const char *name;
        int *set;
    } flags[] = {{"--quick", &cfg->quick},
                 {"--no-pdl", &cfg->no_pdl},
                 {"--profile", &cfg->profile},
                 {"--stats", &cfg->stats}};
    const struct {
        const char *name;
        long min, max;
        long *v;
    } ints[] = {{"--nproc", 1, 64, &nproc},          {"--soak-steps", 1, 2000000000L, &soak},
                {"--device", 0, 1023, &device},      {"--steps", 200, 10000000, &steps},
                {"--warmup", 20, 10000000, &warmup}, {"--rounds", 1, BENCH_MAX_ROUNDS, &rounds},
                {"--timeout", 5, 86400, &timeout}};
    const struct {
        const char *name;
        const char **v;
    } files[] = {{"--trace", &cfg->trace_path},
                 {"--limits", &cfg->limits_path},
                 {"--json", &cfg->json_path}};
    /* What the command line set itself, which --quick leaves as it is. */
    int steps_given = 0, warmup_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int done = 0;
        steps_given |= is_opt(a, "--steps");
        warmup_given |= is_opt(a, "--warmup");
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        for (size_t k = 0; !done && k < sizeof flags / sizeof flags[0]; k++)
            if ((done = !strcmp(a, flags[k].name)))
                *flags[k].set = 1;
        for (size_t k = 0; !done && k < sizeof ints / sizeof ints[0]; k++)
            if ((done = is_opt(a, ints[k].name)))
                TRY(parse_int(ints[k].name,
                              option_value(argc, argv, &i, a, strlen(ints[k].name)),
                              ints[k].min, ints[k].max, ints[k].v));
        for (size_t k = 0; !done && k < sizeof files / sizeof files[0]; k++) {
            if (!(done = is_opt(a, files[k].name)))
                continue;
            *files[k].v = option_value(argc, argv, &i, a, strlen(files[k].name));
            if (!*files[k].v || !(*files[k].v)[0]) {
                fprintf(stderr, "cgr-bench: %s needs a file name\n", files[k].name);
                return -1;
            }
        }
        if (done)
            continue;
        if (a[0] == '-') {
            fprintf(stderr, "cgr-bench: unknown option '%s'\n", a);
            return -1;
        }
        TRY(parse_suite(a, suite));
    }
    if (!*suite)
        *suite = &suites[0];
    if (cfg->trace_path && !(*suite)->traces) {
        fprintf(stderr, "cgr-bench: --trace: the %s suite profiles no step, so it would write "
                "no trace (default, mlp, cnn and serve do)\n", (*suite)->name);
        return -1;
    }
    g_nproc = (int)nproc;
    cfg->soak_steps = soak;
    cfg->device = (int)device;
    cfg->steps = (int)steps;
    cfg->warmup = (int)warmup;
    cfg->rounds = (int)rounds;
    cfg->timeout_s = (unsigned)timeout;
    if (cfg->quick && !steps_given)
        cfg->steps = 200;
    if (cfg->quick && !warmup_given)
        cfg->warmup = 20;
    /* At least 10 steps a round, so each round's median means something. */
    if (cfg->rounds > cfg->steps / 10) {
        fprintf(stderr, "cgr-bench: --rounds %d needs at least %d timed steps (--steps), got %d\n",
                cfg->rounds, cfg->rounds * 10, cfg->steps);
        return -1;
    }
    return 0;
}

int bench_device_probe(int device, bench_results *res)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    char why[256] = "";
    if (e != cudaSuccess)
        snprintf(why, sizeof why, "cudaGetDeviceCount: %s: %s", cudaGetErrorName(e),
                 cudaGetErrorString(e));
    else if (count == 0)
        snprintf(why, sizeof why, "cudaGetDeviceCount found no CUDA device");
    else if (device >= count)
        snprintf(why, sizeof why, "device %d, but only %d device%s present", device, count,
                 count == 1 ? " is" : "s are");
    else if ((e = cudaSetDevice(device)) != cudaSuccess)
        snprintf(why, sizeof why, "cudaSetDevice(%d): %s: %s", device, cudaGetErrorName(e),
                 cudaGetErrorString(e));
    if (why[0]) {
        fprintf(stderr, "cgr-bench: no usable CUDA device (%s)\n", why);
        return EXIT_NO_DEVICE;
    }
    struct cudaDeviceProp p;
    if (bench_cuda_failed(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties",
                          __FILE__, __LINE__))
        return 1;
    snprintf(res->device_name, sizeof res->device_name, "%s", p.name);
    res->device = device;
    res->cc_major = p.major;
    res->cc_minor = p.minor;
    res->sm_count = p.multiProcessorCount;
    if (bench_cuda_failed(cudaDriverGetVersion(&res->driver_version), "cudaDriverGetVersion",
                          __FILE__, __LINE__) ||
        bench_cuda_failed(cudaRuntimeGetVersion(&res->runtime_version), "cudaRuntimeGetVersion",
                          __FILE__, __LINE__))
        return 1;
    cgr__pdl pdl;
    if (bench_cuda_failed(cgr__pdl_probe(device, &pdl), "cgr__pdl_probe", __FILE__, __LINE__))
        return 1;
    res->pdl_allowed = pdl.allowed;
    snprintf(res->pdl_off_why, sizeof res->pdl_off_why, "%s", cgr__pdl_why_off(&pdl));
    if (!p.canMapHostMemory) {
        fprintf(stderr, "cgr-bench: no usable CUDA device (%s cannot map pinned host memory, "
                        "which zero-copy staging needs)\n", p.name);
        return EXIT_NO_DEVICE;
    }
    return 0;
}

/* One chain kernel end to end: fails early, and clearly, on a wrong build arch. */
static int sanity_launch(const bench_results *res)
{
    float *x = NULL;
    cudaError_t e = cudaMalloc((void **)&x, CHAIN_ELEMS * sizeof(float));
    if (e == cudaSuccess)
        e = chain_kernel_launch(x, NULL, 1, NULL, 0, 0);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    (void)cudaFree(x);
    if (e == cudaSuccess)
        return 0;
    bench_error("a test kernel did not run on %s (sm_%d%d): %s: %s. cgr-bench is built for "
                BENCH_GPU_ARCH " (meson option gpu_arch)",
                res->device_name, res->cc_major, res->cc_minor, cudaGetErrorName(e),
                cudaGetErrorString(e));
    return -1;
}

unsigned mode_budget_s(const bench_config *cfg, double ms_per_step)
{
    /* Three times the expected time of the steps, on top of the base for setup. */
    double s = (double)(cfg->warmup + cfg->steps) * ms_per_step * 3.0 / 1000.0;
    double total = cfg->timeout_s + s;
    return total > 86400.0 ? 86400u : (unsigned)total;
}

void run_group(bench_results *res, const char *group, bench_mode *m, int n, unsigned budget_s)
{
    bench_mode tm[CHAIN_MODES + 4]; /* those set up */
    int *set_up = calloc((size_t)n, sizeof(int));
    int n_tm = 0;
    if (!set_up || n > (int)(sizeof tm / sizeof tm[0])) {
        bench_error("%s: cannot run %d modes", group, n);
        res->aborted = !set_up;
    }
    watchdog_arm(group, budget_s);
    for (int i = 0; i < n; i++) {
        if (res->aborted || !set_up || n > (int)(sizeof tm / sizeof tm[0])) {
            mode_result_not_run(m[i].r, res->aborted);
            continue;
        }
        bench_clear_error();
        if (m[i].setup && m[i].setup(m[i].self) != 0) {
            mode_result_fail(m[i].r);
            if (bench_device_recover() != 0)
                res->aborted = 1;
            continue;
        }
        set_up[i] = 1;
        tm[n_tm++] = m[i];
    }
    if (n_tm && !res->aborted &&
        measure_rounds(tm, n_tm, res->cfg.warmup, res->cfg.steps, res->cfg.rounds) == -2)
        res->aborted = 1;
    for (int i = 0; i < n; i++) {
        if (set_up && set_up[i] && m[i].r->ran && !res->aborted && m[i].finish) {
            bench_clear_error();
            if (m[i].finish(m[i].self, m[i].r) != 0) {
                mode_result_fail(m[i].r);
                if (bench_device_recover() != 0)
                    res->aborted = 1;
            }
        }
        if (set_up && set_up[i] && m[i].teardown)
            m[i].teardown(m[i].self);
    }
    watchdog_disarm();
    free(set_up);
    for (int i = 0; i < n; i++) {
        const mode_result *r = m[i].r;
        if (r->ran && !r->failed)
            fprintf(stderr, "cgr-bench: %-24s %-28s wall %9.2f us  host %8.2f us\n", group,
                    r->name, r->wall.median, r->cpu.median);
        else
            fprintf(stderr, "cgr-bench: %-24s %-28s %s%s\n", group, r->name,
                    r->skipped ? "skipped" : "FAILED", r->wrong ? " (wrong result)" : "");
    }
}

int add_check(bench_results *res, const char *name, const char *what, double value,
              int warn_only)
{
    if (res->n_checks == BENCH_MAX_CHECKS) {
        bench_error("more than %d checks: '%s' left out", BENCH_MAX_CHECKS, name);
        res->aborted = 1;
        return 0;
    }
    check_result *c = &res->checks[res->n_checks++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->what, sizeof c->what, "%s", what);
    c->value = value;
    c->limit = limit_get(name);
    c->warn_only = warn_only;
    c->ran = isfinite(value);
    c->ok = c->ran && isfinite(c->limit) && value <= c->limit;
    return c->ok;
}

said_check *said_add(bench_results *res, const char *name, const char *what)
{
    static said_check spare;
    said_check *c = &spare;
    if (res->n_said < BENCH_MAX_SAID) {
        c = &res->said[res->n_said++];
    } else {
        bench_error("more than %d checks with a message: '%s' left out", BENCH_MAX_SAID, name);
        res->aborted = 1;
    }
    memset(c, 0, sizeof *c);
    c->name = name;
    c->what = what;
    return c;
}

void trace_said(bench_results *res, const char *path, int written, const char *why)
{
    said_check *c = said_add(res, "trace_written", "trace of the profiled steps (--trace)");
    c->ok = written;
    if (written)
        snprintf(c->message, sizeof c->message, "%s", path);
    else
        snprintf(c->message, sizeof c->message, "%s not written: %s", path, why);
}

static int nop_step(void *self, long k)
{
    (void)self;
    (void)k;
    return 0;
}

/* The clocks' own cost: an empty submit and an empty wait. */
static void timer_overhead(const bench_config *cfg, bench_results *res)
{
    const step_ops ops = {NULL, nop_step, nop_step, NULL, NULL};
    mode_result_init(&res->timer, "timer_overhead");
    watchdog_arm("clocks", mode_budget_s(cfg, 0.01));
    measure(&ops, NULL, cfg->warmup, cfg->steps, &res->timer);
    watchdog_disarm();
}

/*
 * The canary runs first, before the first cgr runtime exists, and again
 * after every suite of the call: cgr may change the whole process (a
 * CUPTI subscription, for one, makes every later cudaGraphLaunch slower),
 * which the interleaved rounds would hide, since they slow the raw graph
 * and cgr alike. After every suite, because any of them may be the one
 * (the workload suites' profiled passes attach CUPTI, for one).
 */
/* Returns 1 when --trace was given and the trace could not be written. */
static void run_suites(const bench_config *cfg, bench_results *res, unsigned parts)
{
    /* The default run keeps to small batch, as does --quick; `mlp` and `cnn` measure all. */
    const int small = (parts & RUN_SMALL_B) || cfg->quick;
    timer_overhead(cfg, res);
    mode_result_init(&res->canary_before, "graph_n100_before_cgr");
    mode_result_init(&res->canary_after, "graph_n100_after_cgr");
    res->canary_ran = 1;
    chain_canary(cfg, res, &res->canary_before);
    if (parts & RUN_CHAIN) {
        chain_suite(cfg, res);
        chain_diagnosis(cfg, res);
        chain_profile(cfg, res);
    }
    static const int mlp_b[] = {1, 8, 32, 256};
    if (parts & RUN_MLP)
        mlp_suite(cfg, res, mlp_b, small ? 1 : 4);
    if (parts & RUN_CNN) {
#if BENCH_HAVE_CNN
        static const int cnn_b[] = {1, 8, 32};
        cnn_suite(cfg, res, cnn_b, small ? 1 : 3);
#else
        fprintf(stderr, "cgr-bench: built without cuDNN: no W-cnn\n");
#endif
    }
    /* The trace's profiler goes first: the canary would otherwise find CUPTI attached. */
    if (cfg->trace_path) {
        const int written = work_trace_write(cfg->trace_path) == 0;
        trace_said(res, cfg->trace_path, written, bench_last_error());
    }
    work_finish();
    chain_canary(cfg, res, &res->canary_after);
    const mode_result *b = &res->canary_before, *a = &res->canary_after;
    int ok = b->ran && !b->failed && a->ran && !a->failed;
    add_check(res, "canary_host_growth_us",
              "host CPU us per launch of the N=100 raw graph: after every suite minus before",
              ok ? a->cpu.median - b->cpu.median : NAN, 0);
}

int main(int argc, char **argv)
{
    /* Line-buffered, so a watchdog exit or a killed run keeps what was printed. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    bench_config cfg = {.device = 0, .steps = 1000, .warmup = 50, .rounds = 20,
                        .timeout_s = 60, .soak_steps = 1000000};
    const bench_suite *suite = NULL;
    int pr = parse_args(argc, argv, &cfg, &suite);
    if (pr != 0) {
        if (pr < 0)
            usage(stderr);
        return pr < 0 ? EXIT_USAGE : 0;
    }
    char why[512];
    if (limits_load(cfg.limits_path, why, sizeof why) != 0) {
        fprintf(stderr, "cgr-bench: %s\n", why);
        return 1;
    }
    for (int i = 0; suite->limits && suite->limits[i]; i++) {
        if (isnan(limit_get(suite->limits[i]))) {
            fprintf(stderr, "cgr-bench: the limits file %s has no limit '%s'\n", limits_file(),
                    suite->limits[i]);
            return 1;
        }
    }
    static bench_results res; /* large (every mode's result): kept off the stack */
    memset(&res, 0, sizeof res);
    res.cfg = cfg;
    res.suite_name = suite->name;
    /* W-ddp forks its ranks before any CUDA call, so it starts before the device probe. */
    if (!strcmp(suite->name, "ddp")) {
#if BENCH_HAVE_DDP
        return ddp_suite(&cfg, g_nproc);
#else
        fprintf(stderr, "cgr-bench: no W-ddp: cgr-bench was built without NCCL\n");
        return EXIT_NO_DEVICE;
#endif
    }
    watchdog_install();

    watchdog_arm("device start-up", cfg.timeout_s);
    int rc = bench_device_probe(cfg.device, &res);
    if (rc == 0 && sanity_launch(&res) != 0)
        rc = 1;
    watchdog_disarm();
    if (rc != 0)
        return rc;

    report_header(&res);
    if (suite->run)
        suite->run(&cfg, &res);
    else
        run_suites(&cfg, &res, suite->parts);
    int failed = report(&res, cfg.json_path) != 0 || results_failed(&res);
    return failed ? 1 : 0;
}
