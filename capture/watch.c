/*
 * Watching the CUDA API while a failed capture is run again, to name the
 * call that broke it (cgr_options.diagnose).
 *
 * A failed capture's own error says what kind of call broke it, not which
 * one, and a step that clears errors with cudaGetLastError() hides even
 * that. CUPTI calls back on every runtime and driver API call, with the
 * call's name and its return value: the first call on the capturing
 * thread that returns an error is the culprit, and the stack at that
 * moment says who made it.
 *
 * The price is why this is opt-in and brief. Once a process has
 * subscribed to CUPTI callbacks, later cudaGraphLaunch calls cost far more
 * host time even after unsubscribing (docs/benchmarks.md, "CUPTI attached
 * slows every later launch"), so the watch unsubscribes and then detaches
 * CUPTI (cgr__cupti_detach: cuptiFinalize() from a callback at a runtime
 * call's exit, so that no other thread's CUDA call is inside CUPTI then),
 * which gives the process back its launch cost. A program that uses CUPTI
 * itself keeps its subscriber: CUPTI allows one, so the diagnosis then
 * says it could not watch.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "dynload.h"
#include "profiler.h"
#include "srcline.h"

#if CGR_HAVE_CUPTI

enum { FRAMES = 24 };

/* The first failing call of each API on the watched thread. */
typedef struct failure {
    int seen;
    char call[64];
    int error;
    void *frames[FRAMES];
    int n_frames;
} failure;

static struct {
    pthread_t thread;
    failure runtime, driver;
} watch;
/* CUPTI has one subscriber per process: one diagnosis at a time, another
 * waiting here (before the claim on CUPTI, which would refuse it). */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Calls whose error is not their own failure: the error getters return an
 * earlier error, and a query's "not ready" is an answer.
 */
static int reports_only(const char *name, int e)
{
    static const char *const getters[] = {"cudaGetLastError", "cudaPeekAtLastError",
                                          "cuGetErrorString", "cuGetErrorName"};
    for (size_t i = 0; i < sizeof getters / sizeof getters[0]; i++)
        if (strcmp(name, getters[i]) == 0)
            return 1;
    /* cudaErrorNotReady and CUDA_ERROR_NOT_READY are both 600. */
    return e == 600 && strstr(name, "Query") != NULL;
}

static void CUPTIAPI on_call(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *data)
{
    const CUpti_CallbackData *cb = data;
    if (cb->callbackSite != CUPTI_API_EXIT || !pthread_equal(pthread_self(), watch.thread) ||
        !cb->functionName || !cb->functionReturnValue)
        return;
    failure *f = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? &watch.runtime : &watch.driver;
    if (f->seen)
        return;
    int e = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                ? (int)*(const cudaError_t *)cb->functionReturnValue
                : (int)*(const CUresult *)cb->functionReturnValue;
    if (e == 0 || reports_only(cb->functionName, e))
        return;
    f->seen = 1;
    f->error = e;
    snprintf(f->call, sizeof f->call, "%s", cb->functionName);
    f->n_frames = backtrace(f->frames, FRAMES);
}

/* A frame of CUDA's own libraries, not the caller being looked for. */
static int inside(const Dl_info *d)
{
    static const char *const libs[] = {"libcupti", "libcudart", "libcuda.so", "libcublas",
                                       "libcudnn", "libnccl"};
    for (size_t i = 0; d->dli_fname && i < sizeof libs / sizeof libs[0]; i++)
        if (strstr(d->dli_fname, libs[i]))
            return 1;
    return 0;
}

/*
 * "name+0x1c at file.c:42 (object+0x1234)" for the first frame past CUDA's
 * own. The file and line come from the object's line table, so only when
 * it was built with -g; otherwise "name+0x1c (object+0x1234, address
 * 0x...)", whose offset addr2line resolves where a debug file exists.
 */
static void describe_caller(const failure *f, char *out, size_t cap)
{
    snprintf(out, cap, "an unknown caller");
    /* Frame 0 is backtrace's caller (on_call); CUPTI and CUDA follow it. */
    for (int i = 1; i < f->n_frames; i++) {
        Dl_info d;
        memset(&d, 0, sizeof d);
        if (!dladdr(f->frames[i], &d) || inside(&d))
            continue;
        const char *obj = d.dli_fname ? strrchr(d.dli_fname, '/') : NULL;
        obj = obj ? obj + 1 : d.dli_fname ? d.dli_fname : "?";
        const uintptr_t at = (uintptr_t)f->frames[i];
        const unsigned long off = (unsigned long)(at - (uintptr_t)d.dli_fbase);
        char sym[160] = "", line[256];
        if (d.dli_sname)
            snprintf(sym, sizeof sym, "%s+0x%lx",
                     d.dli_sname, (unsigned long)(at - (uintptr_t)d.dli_saddr));
        /* A return address is just past its call: the byte before is the call's line. */
        const int found = cgr__srcline((const void *)(at - 1), line, sizeof line);
        if (found && sym[0])
            snprintf(out, cap, "%s at %s (%s+0x%lx)", sym, line, obj, off);
        else if (found)
            snprintf(out, cap, "%s (%s+0x%lx; no exported symbol there)", line, obj, off);
        else if (sym[0])
            snprintf(out, cap, "%s (%s+0x%lx, address %p)", sym, obj, off, f->frames[i]);
        else
            snprintf(out, cap, "%s+0x%lx (address %p; no exported symbol there)", obj, off,
                     f->frames[i]);
        return;
    }
}

cgr_status cgr__watch_capture(cgr_step *s, cgr__shape_plan *plan, char *msg, size_t cap)
{
    CGR_TRY(cgr__cupti_load("diagnosis"));
    const cgr__cupti_api *api = cgr__cupti();
    pthread_mutex_lock(&watch_lock);
    /* The watch ends with cuptiFinalize(), which would end a profile window's collection too. */
    if (!cgr__prof_watch_begin()) {
        pthread_mutex_unlock(&watch_lock);
        return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED,
                        "the CUDA API could not be watched while a profile window "
                        "(cgr_options.profile) collects in this process; a capture that "
                        "fails after the window has closed is diagnosed");
    }
    memset(&watch, 0, sizeof watch);
    watch.thread = pthread_self();
    CUpti_SubscriberHandle sub = NULL;
    CUptiResult r = api->cuptiSubscribe(&sub, on_call, NULL);
    if (r == CUPTI_SUCCESS)
        r = api->cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (r == CUPTI_SUCCESS)
        r = api->cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
    cgr_status st = CGR_STATUS_OK;
    if (r == CUPTI_SUCCESS) {
        (void)cgr__capture_again(s, plan);
    } else {
        const char *why = "?";
        (void)api->cuptiGetResultString(r, &why);
        st = CGR_FAIL(CGR_STATUS_NOT_SUPPORTED,
                      "the CUDA API could not be watched (%s; another CUPTI subscriber in the "
                      "process?)",
                      why);
    }
    if (sub) {
        (void)api->cuptiUnsubscribe(sub);
        /* Detached, later launches cost what they cost before the watch. */
        cgr__cupti_detach();
    }
    const int from_runtime = watch.runtime.seen;
    failure f = from_runtime ? watch.runtime : watch.driver;
    cgr__prof_watch_end();
    pthread_mutex_unlock(&watch_lock);
    (void)cudaGetLastError();
    if (st != CGR_STATUS_OK)
        return st;
    if (!f.seen) {
        snprintf(msg, cap, "run again under watch, no CUDA call of the step returned an error");
        return CGR_STATUS_OK;
    }
    char caller[448];
    describe_caller(&f, caller, sizeof caller);
    if (from_runtime)
        snprintf(msg, cap, "the first failing call was %s (%s), called from %s", f.call,
                 cudaGetErrorName((cudaError_t)f.error), caller);
    else
        snprintf(msg, cap, "the first failing call was %s (CUresult %d), called from %s", f.call,
                 f.error, caller);
    return CGR_STATUS_OK;
}

#else

cgr_status cgr__watch_capture(cgr_step *s, cgr__shape_plan *plan, char *msg, size_t cap)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "cgr was built without CUPTI, which a diagnosis "
                                              "needs");
}

#endif
