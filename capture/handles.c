/*
 * Library handles owned by the runtime and bound to its stream.
 *
 * Handles are created on first use, which is always an eager warm-up run:
 * creating them allocates memory and may synchronize, both illegal during
 * capture. cuBLAS gets a workspace carved from the arena on every run
 * (a scratch request like any other, so it is planned and shared by all
 * steps); cublasSetWorkspace must follow cublasSetStream, which resets it,
 * so the stream is set once at creation and never again.
 *
 * A failure here is cgr's, not the step's, so it fails the run with its own
 * status (cgr__ctx_fail): CUBLAS_ERROR or CUDNN_ERROR, or OUT_OF_MEMORY for
 * an allocation failure, whatever the step function then returns. A handle
 * is kept only once it is fully set up, so the next run starts afresh.
 */
#include <cublas_v2.h>

#include "cgr_config.h"
#include "dynload.h"
#include "fault.h"
#include "capture.h"

/* A failed cuBLAS or cuDNN call of cgr's own; allocation failures are OUT_OF_MEMORY. */
static cgr_status cublas_fail(cublasStatus_t e, const char *expr)
{
    cgr_status s = e == CUBLAS_STATUS_ALLOC_FAILED ? CGR_STATUS_OUT_OF_MEMORY
                                                   : CGR_STATUS_CUBLAS_ERROR;
    return CGR_FAIL(s, "%s failed: %s (%s)", expr, cublasGetStatusName(e),
                     cublasGetStatusString(e));
}

#if CGR_HAVE_CUDNN
static cgr_status cudnn_fail(cudnnStatus_t e, const char *expr)
{
    cgr_status s = e == CUDNN_STATUS_ALLOC_FAILED ? CGR_STATUS_OUT_OF_MEMORY
                                                  : CGR_STATUS_CUDNN_ERROR;
    return CGR_FAIL(s, "%s failed: %s (%d)", expr,
                     cgr__cudnn()->cudnnGetErrorString(e), (int)e);
}
#endif

/*
 * A workspace from the arena for this run, set on h (after its stream, which
 * resets it). cgr's own handle's call is a fault-injection site.
 */
static cgr_status bind_workspace(cgr_ctx *c, cublasHandle_t h, int own)
{
    void *ws = NULL;
    CGR_TRY(cgr_ctx_alloc(c, CGR__CUBLAS_WORKSPACE, &ws)); /* fails the run itself */
    /*
     * A tracing run's scratch goes back to the pool, and the pool to the
     * device, once the run is over, while the caller's own handle keeps the
     * workspace it was last given and may be used outside any step. So in
     * a tracing run it keeps cuBLAS's own, which cublasSetStream restored;
     * the request is still made, so that later runs' requests match the
     * trace. (cgr's own handle is given a workspace at every run before
     * any use.)
     */
    if (!own && c->mode == CGR__CTX_TRACE)
        return CGR_STATUS_OK;
    cublasStatus_t e = own && CGR__FAULT(CGR__FAULT_CUBLAS)
                           ? CUBLAS_STATUS_EXECUTION_FAILED
                           : cublasSetWorkspace(h, ws, CGR__CUBLAS_WORKSPACE);
    if (e != CUBLAS_STATUS_SUCCESS)
        return cgr__ctx_fail(c, cublas_fail(e, "cublasSetWorkspace"));
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_cublas(cgr_ctx *c, cgr_cublas_handle *out)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_cublas"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_cublas: out is NULL");
    cgr_runtime *rt = c->rt;
    if (!rt->cublas) {
        if (c->mode == CGR__CTX_CAPTURE)
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_ctx_cublas: first called during capture; call it on every run");
        cublasHandle_t h = NULL;
        cublasStatus_t e =
            CGR__FAULT(CGR__FAULT_CUBLAS) ? CUBLAS_STATUS_NOT_INITIALIZED : cublasCreate(&h);
        if (e != CUBLAS_STATUS_SUCCESS)
            return cgr__ctx_fail(c, cublas_fail(e, "cublasCreate"));
        e = CGR__FAULT(CGR__FAULT_CUBLAS) ? CUBLAS_STATUS_EXECUTION_FAILED
                                          : cublasSetStream(h, rt->stream);
        if (e != CUBLAS_STATUS_SUCCESS) {
            (void)cublasDestroy(h);
            return cgr__ctx_fail(c, cublas_fail(e, "cublasSetStream"));
        }
        rt->cublas = h;
    }
    if (!c->cublas_bound) {
        CGR_TRY(bind_workspace(c, (cublasHandle_t)rt->cublas, 1));
        c->cublas_bound = 1;
    }
    *out = (cgr_cublas_handle)rt->cublas;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_ctx_bind_cublas(cgr_ctx *c, cgr_cublas_handle handle)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_bind_cublas"));
    if (!handle)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_bind_cublas: handle is NULL");
    cublasHandle_t h = (cublasHandle_t)handle;
    /* The stream first: cublasSetStream drops the handle's workspace. */
    cublasStatus_t e = cublasSetStream(h, c->rt->stream);
    if (e != CUBLAS_STATUS_SUCCESS)
        return cgr__ctx_fail(c, cublas_fail(e, "cublasSetStream"));
    return bind_workspace(c, h, 0);
}

CGR_API cgr_status cgr_ctx_cudnn(cgr_ctx *c, cgr_cudnn_handle *out)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_cudnn"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_cudnn: out is NULL");
#if CGR_HAVE_CUDNN
    cgr_runtime *rt = c->rt;
    if (!rt->cudnn) {
        if (c->mode == CGR__CTX_CAPTURE)
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_ctx_cudnn: first called during capture; call it on every run");
        /* libcudnn is loaded here, on first use, so programs without cuDNN never need it. */
        cgr_status st = cgr__cudnn_load("cgr_ctx_cudnn");
        if (st != CGR_STATUS_OK)
            return cgr__ctx_fail(c, st);
        const cgr__cudnn_api *dnn = cgr__cudnn();
        cudnnHandle_t h = NULL;
        cudnnStatus_t e =
            CGR__FAULT(CGR__FAULT_CUDNN) ? CUDNN_STATUS_NOT_INITIALIZED : dnn->cudnnCreate(&h);
        if (e != CUDNN_STATUS_SUCCESS)
            return cgr__ctx_fail(c, cudnn_fail(e, "cudnnCreate"));
        e = CGR__FAULT(CGR__FAULT_CUDNN) ? CUDNN_STATUS_EXECUTION_FAILED
                                         : dnn->cudnnSetStream(h, rt->stream);
        if (e != CUDNN_STATUS_SUCCESS) {
            (void)dnn->cudnnDestroy(h);
            return cgr__ctx_fail(c, cudnn_fail(e, "cudnnSetStream"));
        }
        rt->cudnn = h;
    }
    *out = (cgr_cudnn_handle)rt->cudnn;
    return CGR_STATUS_OK;
#else
    *out = NULL;
    /* Through the context, like a failed load: the run fails with this status, not STEP_FAILED. */
    return cgr__ctx_fail(c, CGR_FAIL(CGR_STATUS_NOT_SUPPORTED,
                                     "cgr_ctx_cudnn: cgr was built without cuDNN"));
#endif
}

void cgr__handles_destroy(cgr_runtime *rt)
{
    if (rt->cublas)
        (void)cublasDestroy((cublasHandle_t)rt->cublas);
    rt->cublas = NULL;
#if CGR_HAVE_CUDNN
    /* A handle exists only once cuDNN was loaded. */
    if (rt->cudnn)
        (void)cgr__cudnn()->cudnnDestroy((cudnnHandle_t)rt->cudnn);
#endif
    rt->cudnn = NULL;
}
