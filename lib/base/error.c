/*
 * Status names and the thread-local last-error message.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"

/* Large enough for a capture diagnosis plus the CUDA error text. */
#define CGR__ERRBUF 1024

static _Thread_local char errbuf[CGR__ERRBUF];

static const struct {
    const char *name;
    const char *text;
} status_table[] = {
#define CGR__STATUS_ROW(name, value, text) [value] = {"CGR_STATUS_" #name, text},
    CGR_STATUS_MAP(CGR__STATUS_ROW)
#undef CGR__STATUS_ROW
};

CGR_API const char *cgr_status_name(cgr_status s)
{
    if ((unsigned)s >= CGR_STATUS_COUNT_)
        return "CGR_STATUS_UNKNOWN";
    return status_table[s].name;
}

CGR_API const char *cgr_status_string(cgr_status s)
{
    if ((unsigned)s >= CGR_STATUS_COUNT_)
        return "unknown status";
    return status_table[s].text;
}

CGR_API const char *cgr_last_error(void)
{
    return errbuf;
}

void cgr__clear_error(void)
{
    errbuf[0] = '\0';
}

cgr_status cgr__fail(cgr_status s, const char *fmt, ...)
{
    /*
     * Formatted aside first: an argument may be the message itself
     * (cgr_last_error(), to wrap the reason of a failure below). Messages
     * are for users, so they carry no source position; only cgr's own bugs
     * (cgr__bug) say where.
     */
    char out[CGR__ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, sizeof out, fmt, ap);
    va_end(ap);
    memcpy(errbuf, out, strlen(out) + 1);
    return s;
}

void cgr__error_lead(const char *fn)
{
    /* cgr__fail formats aside first, so the message may be its own argument. */
    if (strncmp(errbuf, fn, strlen(fn)) != 0)
        (void)cgr__fail(CGR_STATUS_OK, "%s: %s", fn, errbuf);
}

cgr_status cgr__bug(const char *file, int line, const char *fmt, ...)
{
    char what[CGR__ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    (void)cgr__fail(CGR_STATUS_INTERNAL, "internal error in cgr (please report it): %s", what);
    /* __FILE__ without its directories, so the message stays short. */
    const char *slash = strrchr(file, '/');
    cgr__error_append("at %s:%d", slash ? slash + 1 : file, line);
#ifndef NDEBUG
    /* A debug or test build: stop at the bug, as a failed assert() would. */
    fprintf(stderr, "cgr: %s\n", errbuf);
    abort();
#endif
    return CGR_STATUS_INTERNAL;
}

void cgr__error_append(const char *fmt, ...)
{
    /* Aside first, as in cgr__fail: an argument may be the message itself. */
    char more[CGR__ERRBUF];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(more, sizeof more, fmt, ap);
    va_end(ap);
    size_t n = strlen(errbuf);
    if (n + 3 >= sizeof errbuf)
        return;
    if (n > 0) {
        memcpy(errbuf + n, "; ", 3);
        n += 2;
    }
    snprintf(errbuf + n, sizeof errbuf - n, "%s", more);
}

cgr_status cgr__cuda_fail(int err, const char *expr)
{
    cudaError_t e = (cudaError_t)err;
    cgr_status s = CGR_STATUS_CUDA_ERROR;
    switch (e) {
    case cudaErrorMemoryAllocation:
        s = CGR_STATUS_OUT_OF_MEMORY;
        break;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
        s = CGR_STATUS_NO_DEVICE;
        break;
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnmatched:
    case cudaErrorStreamCaptureWrongThread:
        s = CGR_STATUS_CAPTURE_FAILED;
        break;
    default:
        break;
    }
    CGR_FAIL(s, "%s failed: %s (%s)", expr, cudaGetErrorName(e),
              cudaGetErrorString(e));
    /*
     * Clear the thread's CUDA error so the next call does not report this
     * one again. Sticky errors (a faulting kernel) survive this; they leave
     * the context unusable and every later call reports them.
     */
    (void)cudaGetLastError();
    return s;
}
