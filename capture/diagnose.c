/*
 * Turning a failed capture into a message a user can act on: the CUDA
 * error the step's illegal call left behind, which calls cause it, and
 * what to do instead.
 *
 * The error code narrows the cause to a short list, which the message
 * gives. Naming the exact call and its caller is capture/watch.c's, only
 * when asked (cgr_options.diagnose, CGR_DIAGNOSE=1), for the price that
 * watch.c gives.
 */
#include "capture.h"

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
               "cudaMemcpy to read device data on the host, or a launch without a stream "
               "compiled without nvcc --default-stream per-thread: enqueue everything on "
               "cgr_ctx_stream(), or build that code with --default-stream per-thread (cgr "
               "joins the calling thread's default stream into every run), and make data the "
               "host needs a step output";
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
               "synchronization, cudaMalloc/cudaFree, a host read of device data, an event "
               "query), and its error was cleared or not kept; set CGR_DIAGNOSE=1 "
               "(cgr_options.diagnose) to have the call named";
    default:
        return "a call inside the step failed during capture";
    }
}

cgr_status cgr__capture_failed(const cgr_step *s, const cgr__capture_fault *f)
{
    cudaError_t e = (cudaError_t)(f->seen_err ? f->seen_err : f->end_err);
    if (e == cudaSuccess)
        e = cudaErrorStreamCaptureInvalidated;
    CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
              "capture of step '%s' failed with %s (%s). Likely cause: %s", s->name,
              cudaGetErrorName(e), cudaGetErrorString(e), advice_for_error(e));
    if (f->body != CGR_STATUS_OK && f->body_msg[0])
        cgr__error_append("the step reported %s: %s", cgr_status_name(f->body), f->body_msg);
    return CGR_STATUS_CAPTURE_FAILED;
}
