/*
 * The calls every layer makes on the runtime's objects (core.h): the
 * runtime lock, handle checks, the device, logging and the clock.
 */
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "core.h"

double cgr__now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void cgr__log(const cgr_runtime *rt, cgr_log_level level, const char *fmt, ...)
{
    assert(rt != NULL);
    if (level == CGR_LOG_OFF || level > rt->opt.log_level)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (rt->opt.log_fn) {
        rt->opt.log_fn(level, line, rt->opt.log_user);
    } else {
        static const char *tag[] = {"", "error", "warn", "info", "debug"};
        fprintf(stderr, "cgr %s: %s\n", tag[level], line);
    }
}

cgr_status cgr__check_runtime(const cgr_runtime *rt, const char *fn)
{
    if (!rt)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: runtime is NULL", fn);
    if (rt->magic != CGR__MAGIC_RUNTIME)
        return CGR_FAIL(CGR_STATUS_INVALID_HANDLE,
                        "%s: %p is not a cgr_runtime (its magic word is wrong; a runtime used "
                        "after cgr_runtime_destroy is undefined behaviour, not always caught)", fn,
                        (const void *)rt);
    return CGR_STATUS_OK;
}

/*
 * The runtime lock (docs/threading.md). Step functions and log callbacks
 * run with it held, so a cgr call from one of them would deadlock on a
 * plain mutex. tls_held remembers, per thread, that the thread is inside
 * a locked call: the inner call then fails with WRONG_STATE instead. It
 * also refuses a second runtime's lock there, which keeps two threads from
 * ever taking two runtime locks in opposite orders.
 */
static _Thread_local const cgr_runtime *tls_held;

cgr_status cgr__lock(cgr_runtime *rt, const char *fn)
{
    if (tls_held)
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "%s: called from inside a step function or a log callback, where only "
                        "cgr_ctx_* calls and cgr_launch_kernel are allowed",
                        fn);
    /* A default mutex cannot fail here: it is initialized and not held by this thread. */
    (void)pthread_mutex_lock(&rt->lock);
    tls_held = rt;
    return CGR_STATUS_OK;
}

void cgr__unlock(cgr_runtime *rt)
{
    tls_held = NULL;
    (void)pthread_mutex_unlock(&rt->lock);
}

cgr_status cgr__device_enter(const cgr_runtime *rt, int *prev)
{
    CGR_CUDA_TRY(cudaGetDevice(prev));
    if (*prev != rt->opt.device)
        CGR_CUDA_TRY(cudaSetDevice(rt->opt.device));
    return CGR_STATUS_OK;
}

void cgr__device_leave(int prev)
{
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev)
        (void)cudaSetDevice(prev);
}

void cgr__device_undo(const cgr_runtime *rt, int prev)
{
    if (prev != rt->opt.device)
        (void)cudaSetDevice(prev); /* as cgr__device_leave: nothing better to do on failure */
}

cgr_status cgr__check_step(const cgr_step *s, const char *fn)
{
    if (!s)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: step is NULL", fn);
    if (s->magic != CGR__MAGIC_STEP)
        return CGR_FAIL(CGR_STATUS_INVALID_HANDLE,
                        "%s: %p is not a cgr_step (its magic word is wrong; a step used after "
                        "cgr_step_destroy is undefined behaviour, not always caught)", fn,
                        (const void *)s);
    return cgr__check_runtime(s->rt, fn);
}

cgr_status cgr__check_ctx(const cgr_ctx *c, const char *fn)
{
    if (!c)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
    if (c->magic != CGR__MAGIC_CTX)
        return CGR_FAIL(CGR_STATUS_INVALID_HANDLE,
                        "%s: the context is only valid inside the step function", fn);
    return CGR_STATUS_OK;
}
