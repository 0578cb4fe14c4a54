/*
 * Attaching an NCCL communicator to a runtime (cgr_nccl.h): checks, the
 * private agreement communicator's life, and the step-side accessor.
 *
 * What is enforced, and where (docs/multigpu.md has the rules):
 * - the communicator's GPU is the runtime's (ncclCommCuDevice), so the
 *   collectives a step enqueues on the runtime's stream run on their GPU;
 * - one communicator per runtime, attached before any step of the runtime
 *   was captured, so no graph holds collectives that were captured without
 *   the agreement;
 * - the ranks' warm-up counts and capture settings match (checked over the
 *   private communicator at attach time), so all ranks capture at the same
 *   run of a step;
 * - every capture of a step that used the communicator is agreed on by all
 *   ranks before its graph is launched (agree.c), with bounded waits
 *   (wait.c).
 * Communicators on several GPUs of one process are allowed but logged as a
 * warning: NCCL warns that graph launches may deadlock then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cgr/cgr_nccl.h"
#include "comm.h"

#define NOT_BUILT " (cgr was built without NCCL; see the meson option nccl)"

/* What the first version of cgr_nccl_options held (abi.h). */
#define NCCL_OPTIONS_MIN_SIZE CGR__END_OF(cgr_nccl_options, timeout_ms)

static void options_defaults(cgr_nccl_options *o)
{
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->timeout_ms = CGR_NCCL_DEFAULT_TIMEOUT_MS;
}

/*
 * The argument checks cgr_runtime_attach_nccl makes with or without NCCL;
 * the caller's options (NULL: the defaults) go into *out under the
 * struct_size rule, which is only meaningful on success.
 */
static cgr_status check_attach(cgr_runtime *rt, cgr_nccl_comm comm, const cgr_nccl_options *opt,
                               cgr_nccl_options *out, const char *fn)
{
    CGR_TRY(cgr__check_runtime(rt, fn));
    if (!comm)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: comm is NULL", fn);
    options_defaults(out);
    if (!opt)
        return CGR_STATUS_OK;
    cgr_status st = cgr__struct_in(out, sizeof *out, opt, NCCL_OPTIONS_MIN_SIZE,
                                   "cgr_nccl_options");
    if (st != CGR_STATUS_OK) {
        cgr__error_append("in %s", fn);
        return st;
    }
    if (out->timeout_ms < 1 || out->timeout_ms > CGR_NCCL_MAX_TIMEOUT_MS)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: timeout_ms %u is outside 1..%u", fn,
                        out->timeout_ms, CGR_NCCL_MAX_TIMEOUT_MS);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_nccl_options_init_size(cgr_nccl_options *opt, size_t struct_size)
{
    if (!opt)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_nccl_options_init: opt is NULL");
    cgr_nccl_options d;
    options_defaults(&d);
    return cgr__struct_init(opt, struct_size, &d, sizeof d, NCCL_OPTIONS_MIN_SIZE,
                            "cgr_nccl_options");
}

CGR_API int cgr_has_nccl(void)
{
    return CGR_HAVE_NCCL;
}

#if CGR_HAVE_NCCL

cgr_status cgr__nccl_fail(ncclResult_t r, const char *expr)
{
    /* The message names the NCCL call, not the table it was reached through. */
    static const char via[] = "cgr__nccl()->";
    if (!strncmp(expr, via, sizeof via - 1))
        expr += sizeof via - 1;
    /* Only reached after a call through the loaded table. */
    const char *detail = cgr__nccl()->ncclGetLastError(NULL);
    return CGR_FAIL(CGR_STATUS_COMM_ERROR, "NCCL: %s failed: %s%s%s", expr,
                     cgr__nccl()->ncclGetErrorString(r), detail && detail[0] ? ": " : "",
                     detail ? detail : "");
}

/* Communicators attached per device in this process, for the one-GPU-per-process warning. */
#define MAX_DEVICES 1024
static int g_attached[MAX_DEVICES];

static int other_devices_attached(int device)
{
    for (int d = 0; d < MAX_DEVICES; d++)
        if (d != device && __atomic_load_n(&g_attached[d], __ATOMIC_RELAXED) > 0)
            return 1;
    return 0;
}

/*
 * Frees c and everything in it. priv, unless an agreement aborted it
 * already, is flushed and destroyed (ncclCommFinalize, a bounded wait,
 * ncclCommDestroy), or aborted when that fails. Failures here cannot be reported to anyone who
 * could act on them, so they are logged.
 */
static void comm_free(const cgr_runtime *rt, struct cgr__comm *c)
{
    if (c->priv) {
        ncclResult_t r = cgr__nccl()->ncclCommFinalize(c->priv);
        cgr_status st = r == ncclSuccess || r == ncclInProgress
                            ? cgr__comm_wait(c->priv, NULL, cgr__comm_deadline(c->timeout_ms),
                                             c->timeout_ms, "ncclCommFinalize")
                            : cgr__nccl_fail(r, "ncclCommFinalize");
        if (st == CGR_STATUS_OK && (r = cgr__nccl()->ncclCommDestroy(c->priv)) != ncclSuccess)
            st = cgr__nccl_fail(r, "ncclCommDestroy");
        if (st != CGR_STATUS_OK) {
            cgr__log(rt, CGR_LOG_WARN, "releasing cgr's agreement communicator: %s; aborting it",
                     cgr_last_error());
            (void)cgr__nccl()->ncclCommAbort(c->priv);
        }
        c->priv = NULL;
    }
    if (c->done)
        (void)cudaEventDestroy(c->done);
    if (c->stream)
        (void)cudaStreamDestroy(c->stream);
    if (c->dev)
        (void)cudaFree(c->dev);
    if (c->host)
        (void)cudaFreeHost(c->host);
    (void)cudaGetLastError();
    if (c->device >= 0 && c->device < MAX_DEVICES)
        __atomic_fetch_sub(&g_attached[c->device], 1, __ATOMIC_RELAXED);
    free(c);
}

/*
 * Splits cgr's private communicator off c->user and waits, bounded, until
 * it is usable. With a non-blocking user communicator NCCL writes c->priv
 * from its own thread when the split completes, which is why c->priv is
 * read atomically and why a timeout leaves c allocated (the caller leaks
 * it rather than free memory NCCL may still write).
 */
static cgr_status split_private(struct cgr__comm *c, int *leak)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;   /* every wait on it is ours to bound */
    cfg.splitShare = 0; /* own resources: aborting it leaves the user's alone */
    double deadline = cgr__comm_deadline(c->timeout_ms);
    CGR_NCCL_TRY(cgr__nccl()->ncclCommSplit(c->user, 0, c->rank, &c->priv, &cfg));
    unsigned spins = 0;
    for (;;) {
        ncclComm_t p = __atomic_load_n(&c->priv, __ATOMIC_ACQUIRE);
        if (p)
            return cgr__comm_wait(p, NULL, deadline, c->timeout_ms, "ncclCommSplit");
        /* Not there yet: the split runs in NCCL's thread; its errors land on the parent. */
        ncclResult_t async = ncclSuccess;
        CGR_NCCL_TRY(cgr__nccl()->ncclCommGetAsyncError(c->user, &async));
        if (async != ncclSuccess && async != ncclInProgress)
            return cgr__nccl_fail(async, "ncclCommSplit");
        if (cgr__now_us() > deadline) {
            *leak = 1;
            return CGR_FAIL(CGR_STATUS_TIMEOUT,
                            "NCCL: ncclCommSplit did not complete within %u ms: every rank must "
                            "call cgr_runtime_attach_nccl",
                            c->timeout_ms);
        }
        cgr__comm_pause(&spins);
    }
}

static cgr_status attach_locked(cgr_runtime *rt, ncclComm_t comm, unsigned timeout_ms,
                                const char *fn)
{
    if (rt->comm)
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "%s: the runtime already has a communicator (one per runtime; "
                        "cgr_runtime_detach_nccl first)",
                        fn);
    /* Any graph recorded counts, not only those launched: a graph cached whose first
     * launch failed is in the table without counting as a capture. */
    for (const cgr_step *s = rt->steps; s; s = s->next)
        if (s->stats.captures > 0 || s->graphs_reported > 0)
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "%s: step '%s' was captured already; attach before the first "
                            "capture, so that every graph with collectives is agreed on by all "
                            "ranks",
                            fn, s->name);
    int version = 0;
    CGR_NCCL_TRY(cgr__nccl()->ncclGetVersion(&version));
    if (version < 21800)
        return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED,
                        "%s: the loaded NCCL is version %d; cgr needs 2.18 or newer "
                        "(ncclCommSplit, non-blocking communicators)",
                        fn, version);
    /* A non-blocking communicator may still be initializing. */
    CGR_TRY(cgr__comm_wait(comm, NULL, cgr__comm_deadline(timeout_ms), timeout_ms,
                                 "the communicator's initialization"));
    int device = -1, world = 0, rank = -1;
    CGR_NCCL_TRY(cgr__nccl()->ncclCommCuDevice(comm, &device));
    CGR_NCCL_TRY(cgr__nccl()->ncclCommCount(comm, &world));
    CGR_NCCL_TRY(cgr__nccl()->ncclCommUserRank(comm, &rank));
    if (device != rt->opt.device)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s: the communicator is on device %d, the runtime on device %d; give "
                        "each rank's runtime the communicator's GPU (cgr_options.device)",
                        fn, device, rt->opt.device);

    struct cgr__comm *c = calloc(1, sizeof *c);
    if (!c)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "%s: host allocation", fn);
    c->user = comm;
    c->rank = rank;
    c->world = world;
    c->device = -1; /* counted in g_attached only once attached */
    c->timeout_ms = timeout_ms;
    cgr_status st = CGR_STATUS_OK;
    int leak = 0;
    CGR_TRY_GOTO(split_private(c, &leak), st, fail);
    int pworld = 0, prank = -1;
    CGR_NCCL_TRY_GOTO(cgr__nccl()->ncclCommCount(c->priv, &pworld), st, fail);
    CGR_NCCL_TRY_GOTO(cgr__nccl()->ncclCommUserRank(c->priv, &prank), st, fail);
    if (pworld != world || prank != rank) {
        st = CGR_FAIL(CGR_STATUS_COMM_ERROR,
                      "%s: the split communicator has rank %d of %d, the user's rank %d of %d", fn,
                      prank, pworld, rank, world);
        goto fail;
    }
    const size_t bytes = (size_t)(world + 1) * CGR__AGREE_WORDS * sizeof(int64_t);
    CGR_CUDA_TRY_GOTO(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), st, fail);
    CGR_CUDA_TRY_GOTO(cudaEventCreateWithFlags(&c->done, cudaEventDisableTiming), st, fail);
    CGR_CUDA_TRY_GOTO(cudaMalloc((void **)&c->dev, bytes), st, fail);
    CGR_CUDA_TRY_GOTO(cudaMallocHost((void **)&c->host, bytes), st, fail);
    /* The first exchange also connects priv, so the first capture does not pay for it. */
    CGR_TRY_GOTO(cgr__comm_agree_attach(rt, c), st, fail);

    if (other_devices_attached(device))
        cgr__log(rt, CGR_LOG_WARN,
                 "this process now has NCCL communicators on several GPUs; NCCL recommends one "
                 "GPU per process with CUDA graphs (graph launches may deadlock otherwise)");
    if (device < MAX_DEVICES)
        __atomic_fetch_add(&g_attached[device], 1, __ATOMIC_RELAXED);
    c->device = device;
    rt->comm = c;
    cgr__log(rt, CGR_LOG_INFO, "NCCL communicator attached: rank %d of %d on device %d", rank,
             world, device);
    return CGR_STATUS_OK;
fail:
    if (!leak) {
        /* Keep the failure's message: freeing may record messages of its own. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cgr_last_error());
        comm_free(rt, c);
        CGR_FAIL(st, "%s", msg);
    }
    return st;
}

CGR_API cgr_status cgr_runtime_attach_nccl(cgr_runtime *rt, cgr_nccl_comm comm,
                                           const cgr_nccl_options *opt)
{
    const char *fn = "cgr_runtime_attach_nccl";
    cgr_nccl_options o;
    CGR_TRY(check_attach(rt, comm, opt, &o, fn));
    /* libnccl is loaded here, on first use, so programs without NCCL never need it. */
    CGR_TRY(cgr__nccl_load(fn));
    const char *env = getenv("CGR_NCCL_TIMEOUT_MS");
    if (env && env[0]) {
        char *end = NULL;
        unsigned long v = strtoul(env, &end, 10);
        if (*end || v < 1 || v > CGR_NCCL_MAX_TIMEOUT_MS)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s: CGR_NCCL_TIMEOUT_MS='%s' is not a number of milliseconds in "
                            "1..%u",
                            fn, env, CGR_NCCL_MAX_TIMEOUT_MS);
        o.timeout_ms = (unsigned)v;
    }
    CGR_TRY(cgr__lock(rt, fn));
    int prev = 0;
    cgr_status st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = attach_locked(rt, comm, o.timeout_ms, fn);
        cgr__device_leave(prev);
    }
    cgr__unlock(rt);
    return st;
}

void cgr__comm_release(cgr_runtime *rt)
{
    if (!rt->comm)
        return;
    comm_free(rt, rt->comm);
    rt->comm = NULL;
    /* A communicator attached later learns anew which steps use it. */
    for (cgr_step *s = rt->steps; s; s = s->next)
        s->uses_nccl = 0;
}

/* Checks rt and takes its lock for `fn`, which needs a communicator: without one, unlocked. */
static cgr_status lock_attached(cgr_runtime *rt, const char *fn)
{
    CGR_TRY(cgr__check_runtime(rt, fn));
    CGR_TRY(cgr__lock(rt, fn));
    if (rt->comm)
        return CGR_STATUS_OK;
    cgr_status st = CGR_FAIL(CGR_STATUS_WRONG_STATE, "%s: no communicator is attached", fn);
    cgr__unlock(rt);
    return st;
}

CGR_API cgr_status cgr_runtime_detach_nccl(cgr_runtime *rt)
{
    CGR_TRY(lock_attached(rt, "cgr_runtime_detach_nccl"));
    int prev = 0;
    cgr_status st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        cgr__comm_release(rt);
        cgr__device_leave(prev);
    }
    cgr__unlock(rt);
    return st;
}

CGR_API cgr_status cgr_runtime_nccl_rank(const cgr_runtime *rt, int *rank, int *world)
{
    cgr_runtime *w = (cgr_runtime *)rt; /* the lock is the only thing written */
    CGR_TRY(lock_attached(w, "cgr_runtime_nccl_rank"));
    if (rank)
        *rank = rt->comm->rank;
    if (world)
        *world = rt->comm->world;
    cgr__unlock(w);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_nccl(cgr_ctx *ctx, cgr_nccl_comm *out)
{
    CGR_TRY(cgr__check_ctx(ctx, "cgr_ctx_nccl"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_nccl: out is NULL");
    struct cgr__comm *c = ctx->rt->comm;
    if (!c)
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_ctx_nccl: step '%s': no communicator is attached to its runtime "
                        "(cgr_runtime_attach_nccl)",
                        ctx->step->name);
    /*
     * An armed run that is released or outlives arm_timeout_us still runs
     * its graph once, collectives included, on this rank alone: its peers'
     * collectives would then pair with the wrong calls, or wait forever.
     */
    if (ctx->step->armable)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_ctx_nccl: step '%s' is armable; an armed run that is released or "
                        "times out still runs once on this rank alone, and its collectives "
                        "would not pair with its peers'; use a step that is not armable",
                        ctx->step->name);
    /* Its captures are agreed on from now on (agree.c). */
    ctx->step->uses_nccl = 1;
    *out = c->user;
    return CGR_STATUS_OK;
}

#else /* !CGR_HAVE_NCCL */

void cgr__comm_release(cgr_runtime *rt)
{
    (void)rt;
}

CGR_API cgr_status cgr_runtime_attach_nccl(cgr_runtime *rt, cgr_nccl_comm comm,
                                           const cgr_nccl_options *opt)
{
    const char *fn = "cgr_runtime_attach_nccl";
    cgr_nccl_options o;
    CGR_TRY(check_attach(rt, comm, opt, &o, fn));
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: no multi-GPU support%s", fn, NOT_BUILT);
}

CGR_API cgr_status cgr_runtime_detach_nccl(cgr_runtime *rt)
{
    CGR_TRY(cgr__check_runtime(rt, "cgr_runtime_detach_nccl"));
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "cgr_runtime_detach_nccl: no multi-GPU support%s",
                    NOT_BUILT);
}

CGR_API cgr_status cgr_runtime_nccl_rank(const cgr_runtime *rt, int *rank, int *world)
{
    (void)rank;
    (void)world;
    CGR_TRY(cgr__check_runtime(rt, "cgr_runtime_nccl_rank"));
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "cgr_runtime_nccl_rank: no multi-GPU support%s",
                    NOT_BUILT);
}

CGR_API cgr_status cgr_ctx_nccl(cgr_ctx *ctx, cgr_nccl_comm *out)
{
    CGR_TRY(cgr__check_ctx(ctx, "cgr_ctx_nccl"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_nccl: out is NULL");
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "cgr_ctx_nccl: no multi-GPU support%s", NOT_BUILT);
}

#endif
