/*
 * Turning a failed capture into a message a user can act on: the call that
 * broke it (when CUPTI could tell us), the CUDA error, and what to do
 * instead.
 */
#include <string.h>

#include "internal.h"

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Advice for a known offending call; NULL when the name says nothing. */
static const char *advice_for_call(const char *call)
{
    if (starts(call, "cudaMalloc") || starts(call, "cudaFree") || starts(call, "cudaHostAlloc"))
        return "a step must not allocate: use cgr_ctx_alloc/cgr_ctx_free for temporaries and "
               "cgr_persistent_alloc, before the first run, for long-lived buffers";
    if (strstr(call, "Synchronize") || starts(call, "cudaStreamQuery") ||
        starts(call, "cudaEventQuery"))
        return "a step must not wait on the host: enqueue work only, and make data the host "
               "needs a step output";
    if ((starts(call, "cudaMemcpy") || starts(call, "cudaMemset")) && !strstr(call, "Async"))
        return "synchronous copies use the legacy default stream and wait for the host: use "
               "cudaMemcpyAsync/cudaMemsetAsync on cgr_ctx_stream(), and make data the host "
               "needs a step output";
    return NULL;
}

/* Advice from the error code alone. */
static const char *advice_for_error(cudaError_t e)
{
    switch (e) {
    case cudaErrorStreamCaptureUnsupported:
        return "the step made a call that is not allowed while its stream is captured: "
               "cudaMalloc/cudaFree (use cgr_ctx_alloc/cgr_ctx_free or cgr_persistent_alloc), "
               "or cudaStreamSynchronize/cudaDeviceSynchronize/cudaEventSynchronize or a "
               "synchronous cudaMemcpy (a step must not wait on the host)";
    case cudaErrorStreamCaptureImplicit:
        return "the step used the legacy default stream, for example a synchronous "
               "cudaMemcpy to read device data on the host, or a launch without a stream: "
               "enqueue everything on cgr_ctx_stream() and make data the host needs a step output";
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorStreamCaptureMerge:
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureUnmatched:
        return "the step forked work onto another stream without joining it back to "
               "cgr_ctx_stream(), or waited on an event recorded outside the capture";
    case cudaErrorStreamCaptureWrongThread:
        return "the step's work was enqueued from another thread; run the whole step on the "
               "thread that called cgr_step_run";
    case cudaErrorStreamCaptureInvalidated:
        return "an earlier call in the step was illegal during capture (a host "
               "synchronization, cudaMalloc/cudaFree, or a host read of device data)";
    default:
        return "a call inside the step failed during capture";
    }
}

cgr_status cgr__capture_failed(const cgr_step *s, const cgr__capture_fault *f)
{
    cudaError_t e = (cudaError_t)(f->call_err   ? f->call_err
                                  : f->seen_err ? f->seen_err
                                                : f->end_err);
    if (e == cudaSuccess)
        e = cudaErrorStreamCaptureInvalidated;
    const char *advice = f->call[0] ? advice_for_call(f->call) : NULL;
    if (!advice)
        advice = advice_for_error(e);
    if (f->call[0])
        cgr__fail(CGR_STATUS_CAPTURE_FAILED, __FILE__, __LINE__,
                  "capture of step '%s' failed: %s returned %s (%s). %s", s->name, f->call,
                  cudaGetErrorName(e), cudaGetErrorString(e), advice);
    else
        cgr__fail(CGR_STATUS_CAPTURE_FAILED, __FILE__, __LINE__,
                  "capture of step '%s' failed with %s (%s). Likely cause: %s", s->name,
                  cudaGetErrorName(e), cudaGetErrorString(e), advice);
    if (f->body != CGR_STATUS_OK && f->body_msg[0])
        cgr__error_append("the step reported %s: %s", cgr_status_name(f->body), f->body_msg);
    return CGR_STATUS_CAPTURE_FAILED;
}
