/*
 * Fault injection for tests: make the Nth call at a chosen site fail the way
 * the real call would, so that the error paths (status, message, cleanup,
 * the runtime staying usable) can be tested without exhausting a real GPU.
 *
 * A site is a named place in the library where a CUDA, driver, cuBLAS or
 * cuDNN call can fail. At a site the code reads
 *
 *     cudaError_t e = CGR__FAULT(CGR__FAULT_PINNED_ALLOC) ? cudaErrorMemoryAllocation
 *                                                          : cudaHostAlloc(...);
 *
 * and then handles `e` exactly as it handles a real failure. When the fault
 * fires the real call is not made, so nothing is acquired that the error path
 * would have to know about.
 *
 * Only a library compiled with -DCGR_FAULT_INJECTION has live sites: there
 * CGR__FAULT(site) counts the call and says whether to fail it. Everywhere
 * else, the shipped libcgr included, CGR__FAULT(site) is the constant 0, the
 * compiler folds the branch away and the library contains no hook at all.
 * tests/meson.build builds the one injecting variant (libcgr_fault.a: the
 * same sources, plus the sites' counters in tests/gpu/fault.c) for
 * tests/gpu/test_fault.c, which arms the sites through
 * tests/gpu/fault_control.h; docs/errors.md lists the sites and what is
 * guaranteed when one fires.
 */
#ifndef CGR_FAULT_H
#define CGR_FAULT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The sites: X(enum suffix, name, where and what the fault returns). One
 * list gives the enum and cgr__fault_site_name().
 */
#define CGR__FAULT_SITES(X)                                                                \
    X(DEVICE_ALLOC, "device_alloc",                                                        \
      "every device allocation: arena growth (cuMemCreate), persistent and step I/O "     \
      "buffers (cudaMalloc), tracing scratch (cudaMallocFromPoolAsync); out of memory")    \
    X(ARENA_CREATE, "arena_create", "cuMemCreate when the arena grows; out of memory")    \
    X(ARENA_MAP, "arena_map", "cuMemMap when the arena grows; out of memory")              \
    X(PINNED_ALLOC, "pinned_alloc", "cudaHostAlloc of a step's staging slots; out of memory") \
    X(CAPTURE_INVALIDATE, "capture_invalidate",                                            \
      "a scratch request during capture invalidates the capture, as an illegal call in "   \
      "the step would")                                                                    \
    X(INSTANTIATE, "instantiate", "cudaGraphInstantiate (once per shape); cudaErrorInvalidValue") \
    X(CUBLAS, "cublas",                                                                    \
      "cublasCreate, cublasSetStream (first use) and the per-run cublasSetWorkspace")      \
    X(CUDNN, "cudnn", "cudnnCreate and cudnnSetStream (first use)")

typedef enum cgr__fault_site {
#define CGR__FAULT_ENUM(id, name, what) CGR__FAULT_##id,
    CGR__FAULT_SITES(CGR__FAULT_ENUM)
#undef CGR__FAULT_ENUM
    CGR__FAULT_COUNT_
} cgr__fault_site;

#ifdef CGR_FAULT_INJECTION
/* Counts a call at `site`; nonzero when this is the armed Nth call. */
#define CGR__FAULT(site) cgr__fault_hit(site)
/* Notes pinned staging memory allocated (+) or freed (-), process-wide. */
#define CGR__FAULT_PINNED(bytes, sign) cgr__fault_note_pinned((bytes), (sign))
#else
#define CGR__FAULT(site) 0
#define CGR__FAULT_PINNED(bytes, sign) ((void)0)
#endif

/*
 * Defined only in the injecting build (tests/gpu/fault.c); a program that
 * calls these against the shipped libcgr does not link, which is intended.
 */
int cgr__fault_hit(cgr__fault_site site);
void cgr__fault_note_pinned(size_t bytes, int sign);

#endif
