/*
 * Creating and destroying a runtime (device, stream, arena, persistent
 * memory), its stream and its counters.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "lib.h"
#include "pdl.h"
#include "replay.h"

/* CGR_LOG=error|warn|info|debug overrides the level in the options. */
static void log_level_from_env(cgr_options *o)
{
    const char *v = getenv("CGR_LOG");
    if (!v)
        return;
    static const char *names[] = {"off", "error", "warn", "info", "debug"};
    for (int i = 0; i <= CGR_LOG_DEBUG; i++)
        if (strcmp(v, names[i]) == 0)
            o->log_level = (cgr_log_level)i;
}

/*
 * Destroys what rt holds on its device, which is current: all of it, or
 * what a failed cgr_runtime_create got to (the rest is still zero).
 */
static void release_device(cgr_runtime *rt)
{
    cgr__comm_release(rt);
    cgr__handles_destroy(rt);
    if (rt->trace_pool)
        (void)cudaMemPoolDestroy(rt->trace_pool);
    cgr__arena_destroy(&rt->arena);
    cgr__persist_destroy(&rt->persist);
    if (rt->join)
        (void)cudaEventDestroy(rt->join);
    if (rt->stream)
        (void)cudaStreamDestroy(rt->stream);
}

/* Frees rt's host side: its lock, its strings and rt itself. */
static void free_host(cgr_runtime *rt)
{
    pthread_mutex_destroy(&rt->lock);
    cgr__options_free_strings(&rt->opt);
    free(rt);
}

static cgr_status runtime_create(cgr_runtime **out, const cgr_options *opt)
{
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_runtime_create: out is NULL");
    *out = NULL;
    cgr_options o;
    if (opt)
        CGR_TRY(cgr__options_load(opt, &o));
    else
        cgr_options_init(&o);
    log_level_from_env(&o);

    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        /* A machine without a driver reports "insufficient driver" or
         * similar rather than zero devices: all of them mean no GPU. */
        return CGR_FAIL(CGR_STATUS_NO_DEVICE, "cudaGetDeviceCount failed: %s (%s)",
                        cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (count == 0)
        return CGR_FAIL(CGR_STATUS_NO_DEVICE, "no CUDA device found");
    if (o.device >= count)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.device is %d but only %d device%s", o.device, count,
                        count == 1 ? " exists" : "s exist");

    cgr_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_runtime_create: host allocation");
    if (pthread_mutex_init(&rt->lock, NULL) != 0) {
        free(rt);
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_runtime_create: pthread_mutex_init");
    }
    rt->opt = o;
    /* The caller's strings may be gone by the first capture. */
    cgr_status st = cgr__options_own_strings(&rt->opt);
    int prev = 0;
    if (st == CGR_STATUS_OK)
        st = cgr__device_enter(rt, &prev);
    if (st != CGR_STATUS_OK) {
        free_host(rt);
        return st;
    }
    /*
     * A blocking stream on purpose: if a step touches the legacy default
     * stream (a synchronous cudaMemcpy to read a result, say) while it is
     * being captured, CUDA reports cudaErrorStreamCaptureImplicit instead of
     * silently running that copy outside the graph.
     */
    CGR_CUDA_TRY_GOTO(cudaStreamCreateWithFlags(&rt->stream, cudaStreamDefault), st, fail);
    CGR_CUDA_TRY_GOTO(cudaEventCreateWithFlags(&rt->join, cudaEventDisableTiming), st, fail);
    /* Decided once here, for every launch on this device that asks for
     * programmatic dependent launch (cgr_launch_kernel). */
    cgr__pdl pdl;
    CGR_CUDA_TRY_GOTO(cgr__pdl_probe(o.device, &pdl), st, fail);
    CGR_TRY_GOTO(cgr__arena_init(&rt->arena, o.device, o.arena_limit), st, fail);
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = o.device;
    CGR_CUDA_TRY_GOTO(cudaMemPoolCreate(&rt->trace_pool, &props), st, fail);
    rt->magic = CGR__MAGIC_RUNTIME;
    cgr__device_leave(prev);
    cgr__log(rt, CGR_LOG_INFO,
             "runtime on device %d (compute capability %d.%d): %d staging slots, %d warm-up "
             "runs, programmatic dependent launch %s%s%s",
             o.device, pdl.major, pdl.minor, o.staging_slots, o.warmup_runs,
             pdl.allowed ? "on" : "off (", cgr__pdl_why_off(&pdl), pdl.allowed ? "" : ")");
    *out = rt;
    return CGR_STATUS_OK;

fail:
    release_device(rt);
    cgr__device_leave(prev);
    free_host(rt);
    return st;
}

CGR_API cgr_status cgr_runtime_destroy(cgr_runtime **prt)
{
    if (!prt || !*prt)
        return CGR_STATUS_OK;
    cgr_runtime *rt = *prt;
    CGR_TRY(cgr__check_runtime(rt, "cgr_runtime_destroy"));
    CGR_TRY(cgr__lock(rt, "cgr_runtime_destroy"));
    /*
     * A thread still inside cgr_step_wait, or holding an acquired slot,
     * would touch freed memory: refuse and change nothing. Threads that may
     * still *start* a call on this runtime cannot be detected; the caller
     * must have stopped them (docs/threading.md).
     */
    cgr_status st = CGR_STATUS_OK;
    for (const cgr_step *s = rt->steps; s && st == CGR_STATUS_OK; s = s->next)
        st = cgr__step_check_idle(s, "cgr_runtime_destroy");
    int prev = 0;
    if (st == CGR_STATUS_OK)
        st = cgr__device_enter(rt, &prev);
    if (st != CGR_STATUS_OK) {
        cgr__unlock(rt);
        return st;
    }
    cudaError_t e = cgr__sync_stream(rt);
    if (e != cudaSuccess)
        st = cgr__cuda_fail((int)e, "cudaStreamSynchronize");
    while (rt->steps)
        cgr__step_free(rt->steps);
    release_device(rt);
    rt->magic = CGR__MAGIC_DEAD;
    cgr__device_leave(prev);
    cgr__unlock(rt);
    free_host(rt);
    *prt = NULL;
    return st;
}

CGR_API cgr_status cgr_runtime_stream(const cgr_runtime *rt, cgr_stream *out)
{
    CGR_TRY(cgr__check_runtime(rt, "cgr_runtime_stream"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_runtime_stream: out is NULL");
    *out = rt->stream;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_persistent_alloc(cgr_runtime *rt, size_t bytes, void **out)
{
    /* First, so that every refusal and failure below leaves *out NULL (docs/errors.md). */
    if (out)
        *out = NULL;
    CGR_TRY(cgr__check_runtime(rt, "cgr_persistent_alloc"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_persistent_alloc: out is NULL");
    /* Bad input is refused before anything touches the device. */
    if (bytes == 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_persistent_alloc: bytes is 0");
    CGR_TRY(cgr__lock(rt, "cgr_persistent_alloc"));
    int prev = 0;
    cgr_status st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = cgr__persist_alloc(&rt->persist, bytes, out);
        cgr__device_leave(prev);
    }
    cgr__unlock(rt);
    if (st != CGR_STATUS_OK)
        cgr__error_lead("cgr_persistent_alloc");
    return st;
}

void cgr__runtime_stats_add(cgr_runtime_stats *to, const cgr_step_stats *s)
{
    to->runs += s->runs;
    to->warmup_runs += s->warmup_runs;
    to->replays += s->replays;
    to->captures += s->captures;
    to->eager_runs += s->eager_runs;
    to->capture_us += s->capture_us + s->instantiate_us + s->update_us;
}

CGR_API cgr_status cgr_runtime_get_stats_size(const cgr_runtime *rt, cgr_runtime_stats *out,
                                              size_t size)
{
    CGR_TRY(cgr__check_runtime(rt, "cgr_runtime_get_stats"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_runtime_get_stats: out is NULL");
    CGR_TRY(cgr__struct_out_check(size, CGR__RUNTIME_STATS_MIN_SIZE, "cgr_runtime_get_stats"));
    /* The lock is runtime state, not part of the value the caller passed as const. */
    cgr_runtime *mrt = (cgr_runtime *)rt;
    CGR_TRY(cgr__lock(mrt, "cgr_runtime_get_stats"));
    cgr_runtime_stats st = rt->gone;
    st.arena_reserved = rt->arena.mapped;
    for (const cgr_step *s = rt->steps; s; s = s->next) {
        st.steps++;
        cgr__runtime_stats_add(&st, &s->stats);
        /* The largest plan of any shape of any step: what the shared arena must hold. */
        if (s->stats.scratch_peak > st.arena_planned)
            st.arena_planned = s->stats.scratch_peak;
        if (s->stats.scratch_lower_bound > st.arena_lower_bound)
            st.arena_lower_bound = s->stats.scratch_lower_bound;
        st.pinned_bytes += s->stats.pinned_bytes;
    }
    st.persistent_bytes = rt->persist.bytes;
    cgr__unlock(mrt);
    cgr__struct_out(out, size, &st, sizeof st);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_runtime_create(cgr_runtime **out, const cgr_options *opt)
{
    cgr_status st = runtime_create(out, opt);
    if (st != CGR_STATUS_OK)
        cgr__error_lead("cgr_runtime_create");
    return st;
}
