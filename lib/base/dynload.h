/*
 * cuDNN and NCCL, loaded on first use.
 *
 * libcgr is compiled against cudnn.h and nccl.h when the build finds them,
 * but links neither: together they weigh over 200 MB, and a program that
 * uses neither must not need them installed. The few functions cgr calls
 * are resolved with dlopen and dlsym the first time a call needs them
 * (cgr_ctx_cudnn, cgr_runtime_attach_nccl), once per process.
 *
 * Where a library is looked for, in this order:
 *   1. the file named by CGR_CUDNN_LIBRARY / CGR_NCCL_LIBRARY, when set,
 *      and nothing else;
 *   2. its soname (libcudnn.so.9, libnccl.so.2: the major version of the
 *      header cgr was built with) through the dynamic loader's own search:
 *      a copy the program has loaded already, LD_LIBRARY_PATH, runpaths,
 *      the ld.so cache;
 *   3. the directory the build found it in (CGR_CUDNN_LIBDIR,
 *      CGR_NCCL_LIBDIR in cgr_config.h), which is how the build tree's
 *      tests find a Python wheel's copy.
 * A program that calls cuDNN or NCCL itself has the library loaded
 * already, and step 2 returns that very copy, so the handles and
 * communicators it shares with cgr belong to the library cgr calls.
 *
 * When the library cannot be loaded, the call that needed it fails with
 * CGR_STATUS_NOT_SUPPORTED and a message naming the files tried and how
 * to make one loadable; every later call fails the same way.
 */
#ifndef CGR_DYNLOAD_H
#define CGR_DYNLOAD_H

#include <stddef.h>

#include "cgr/cgr.h"
#include "cgr_config.h"

/* One shared library to load: where to look and which symbols to resolve. */
typedef struct cgr__dl_spec {
    const char *what;          /* "cuDNN", for messages */
    const char *soname;        /* "libcudnn.so.9" */
    const char *env;           /* variable naming the file to load instead */
    const char *fallback_dir;  /* tried after the soname; "" for none */
    const char *install_hint;  /* how to get the library, for messages */
    const char *const *symbols;
    size_t n_symbols;
} cgr__dl_spec;

/*
 * Loads spec's library and resolves its symbols into the n_symbols
 * pointers at syms (an array of void pointers, or a table of function
 * pointers of the same size).
 * Returns 0, or -1 with why it failed in msg (msg_size bytes, always
 * terminated) and syms untouched. A loaded library is never unloaded:
 * handles made from it may live as long as the process. No caching and no
 * locking: cgr__cudnn_load and cgr__nccl_load call it once.
 */
int cgr__dl_load(const cgr__dl_spec *spec, void *syms, char *msg, size_t msg_size);

/* The most symbols one library may have (its table is checked at compile time). */
#define CGR__DL_MAX_SYMBOLS 64

/* A table member: the function's pointer, with the header's type. */
#define CGR__DL_MEMBER(ret, name, args) ret(*name) args;

#if CGR_HAVE_CUDNN
#include <cudnn.h>

/* The cuDNN functions cgr calls, with the header's types (checked in dynload.c). */
#define CGR__CUDNN_FUNCTIONS(X)                                                            \
    X(cudnnStatus_t, cudnnCreate, (cudnnHandle_t *))                                       \
    X(cudnnStatus_t, cudnnDestroy, (cudnnHandle_t))                                        \
    X(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t, cudaStream_t))                        \
    X(const char *, cudnnGetErrorString, (cudnnStatus_t))

typedef struct cgr__cudnn_api {
    CGR__CUDNN_FUNCTIONS(CGR__DL_MEMBER)
} cgr__cudnn_api;

/* The table, or NULL before cgr__cudnn_load has succeeded. */
const cgr__cudnn_api *cgr__cudnn(void);
#endif

#if CGR_HAVE_NCCL
#include <nccl.h>

#define CGR__NCCL_FUNCTIONS(X)                                                             \
    X(ncclResult_t, ncclGetVersion, (int *))                                               \
    X(const char *, ncclGetErrorString, (ncclResult_t))                                    \
    X(const char *, ncclGetLastError, (ncclComm_t))                                        \
    X(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t *))                   \
    X(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *))   \
    X(ncclResult_t, ncclCommCuDevice, (ncclComm_t, int *))                                 \
    X(ncclResult_t, ncclCommCount, (ncclComm_t, int *))                                    \
    X(ncclResult_t, ncclCommUserRank, (ncclComm_t, int *))                                 \
    X(ncclResult_t, ncclCommFinalize, (ncclComm_t))                                        \
    X(ncclResult_t, ncclCommDestroy, (ncclComm_t))                                         \
    X(ncclResult_t, ncclCommAbort, (ncclComm_t))                                           \
    X(ncclResult_t, ncclAllGather,                                                         \
      (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))

typedef struct cgr__nccl_api {
    CGR__NCCL_FUNCTIONS(CGR__DL_MEMBER)
} cgr__nccl_api;

/* The table, or NULL before cgr__nccl_load has succeeded. */
const cgr__nccl_api *cgr__nccl(void);
#endif

#if CGR_HAVE_CUPTI
/* cupti_activity.h has enumerators past INT_MAX, which -Wpedantic rejects in C11. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#include <cupti.h>
#pragma GCC diagnostic pop

/*
 * What a capture diagnosis needs (a callback on every CUDA API call, then
 * none) and what the profiler needs (activity records, profiler.c).
 */
#define CGR__CUPTI_FUNCTIONS(X)                                                            \
    X(CUptiResult, cuptiSubscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *)) \
    X(CUptiResult, cuptiUnsubscribe, (CUpti_SubscriberHandle))                             \
    X(CUptiResult, cuptiEnableDomain, (uint32_t, CUpti_SubscriberHandle,                   \
                                       CUpti_CallbackDomain))                              \
    X(CUptiResult, cuptiFinalize, (void))                                                  \
    X(CUptiResult, cuptiGetResultString, (CUptiResult, const char **))                     \
    X(CUptiResult, cuptiGetVersion, (uint32_t *))                                          \
    X(CUptiResult, cuptiGetTimestamp, (uint64_t *))                                        \
    X(CUptiResult, cuptiSetThreadIdType, (CUpti_ActivityThreadIdType))                     \
    X(CUptiResult, cuptiActivityEnable, (CUpti_ActivityKind))                              \
    X(CUptiResult, cuptiActivityDisable, (CUpti_ActivityKind))                             \
    X(CUptiResult, cuptiActivityFlushAll, (uint32_t))                                      \
    X(CUptiResult, cuptiActivityGetNextRecord, (uint8_t *, size_t, CUpti_Activity **))     \
    X(CUptiResult, cuptiActivityGetNumDroppedRecords, (CUcontext, uint32_t, size_t *))     \
    X(CUptiResult, cuptiActivityRegisterCallbacks, (CUpti_BuffersCallbackRequestFunc,      \
                                                    CUpti_BuffersCallbackCompleteFunc))    \
    X(CUptiResult, cuptiActivityPushExternalCorrelationId,                                 \
      (CUpti_ExternalCorrelationKind, uint64_t))                                           \
    X(CUptiResult, cuptiActivityPopExternalCorrelationId,                                  \
      (CUpti_ExternalCorrelationKind, uint64_t *))

typedef struct cgr__cupti_api {
    CGR__CUPTI_FUNCTIONS(CGR__DL_MEMBER)
} cgr__cupti_api;

/* The table, or NULL before cgr__cupti_load has succeeded. */
const cgr__cupti_api *cgr__cupti(void);
#endif

/*
 * Loads cuDNN / NCCL on the first call in the process (thread-safe); later
 * calls return the first one's outcome. CGR_STATUS_OK, after which
 * cgr__cudnn() / cgr__nccl() is the table, or CGR_STATUS_NOT_SUPPORTED
 * with the message, prefixed by fn (the public call that needs it). In a
 * build without the header they fail the same way, saying so.
 */
cgr_status cgr__cudnn_load(const char *fn);
cgr_status cgr__nccl_load(const char *fn);
#if CGR_HAVE_CUPTI
/* CUPTI (the toolkit's libcupti, CGR_CUPTI_LIBRARY to name another file), the same way. */
cgr_status cgr__cupti_load(const char *fn);
#endif

#endif
