/*
 * Turning a failed capture into a message a user can act on: the CUDA
 * error, what usually causes it inside a step, and what to do instead.
 */
#include "internal.h"

static const char *hint(cudaError_t e)
{
    switch (e) {
    case cudaErrorStreamCaptureUnsupported:
        return "the step made a call that is not allowed while its stream is captured: "
               "cudaMalloc/cudaFree (use cgr_ctx_alloc/cgr_ctx_free or cgr_persistent_alloc), "
               "or cudaStreamSynchronize/cudaDeviceSynchronize/cudaEventSynchronize (a step "
               "must not wait on the host)";
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

cgr_status cgr__capture_failed(const cgr_step *s, int seen_err, int end_err, cgr_status body,
                               const char *body_msg)
{
    cudaError_t e = (cudaError_t)(seen_err != cudaSuccess ? seen_err : end_err);
    if (e == cudaSuccess)
        e = cudaErrorStreamCaptureInvalidated;
    cgr__fail(CGR_STATUS_CAPTURE_FAILED, __FILE__, __LINE__,
              "capture of step '%s' failed with %s (%s). Likely cause: %s", s->name,
              cudaGetErrorName(e), cudaGetErrorString(e), hint(e));
    if (body != CGR_STATUS_OK && body_msg && body_msg[0])
        cgr__error_append("the step reported %s: %s", cgr_status_name(body), body_msg);
    return CGR_STATUS_CAPTURE_FAILED;
}
