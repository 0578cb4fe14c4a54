/*
 * The runtime calls whose form depends on the CUDA toolkit cgr is built
 * with. cgr builds with CUDA 12.0 and newer; the calls it needs that changed
 * on the way:
 *
 *   - graph edges carry data (an edge's type and ports, which programmatic
 *     dependent launch sets) from CUDA 12.3, read through
 *     cudaGraphGetEdges_v2; CUDA 13 made that form cudaGraphGetEdges.
 *     Before 12.3 an edge is just a pair of nodes, and its data reads as
 *     zeros;
 *   - cudaStreamGetCaptureInfo and cudaStreamUpdateCaptureDependencies
 *     gained the same edge data as an argument in CUDA 13;
 *   - a driver entry point of a given CUDA version is asked for with
 *     cudaGetDriverEntryPointByVersion from CUDA 12.5. Before, the runtime
 *     gives the form of its own version: for the entry points cgr uses,
 *     the same form as asked for (none has changed since it appeared), or
 *     none at all when the entry point is newer than the runtime, which
 *     cgr then reports as a runtime too old for it (driver.c).
 *
 * Header-only: static inline functions, so every layer may include it.
 */
#ifndef CGR_CUDA_COMPAT_H
#define CGR_CUDA_COMPAT_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#if CUDART_VERSION >= 12030
typedef cudaGraphEdgeData cgr__edge_data;
#else
typedef struct cgr__edge_data {
    unsigned char none; /* always 0: this CUDA has no edge data */
} cgr__edge_data;
#endif

/*
 * cudaGraphGetEdges with the edges' data: the count in *n when from, to
 * and data are NULL, else up to *n edges. Before CUDA 12.3, data is left
 * as the caller gave it; pass it zeroed.
 */
static inline cudaError_t cgr__graph_edges(cudaGraph_t g, cudaGraphNode_t *from,
                                           cudaGraphNode_t *to, cgr__edge_data *data, size_t *n)
{
#if CUDART_VERSION >= 13000
    return cudaGraphGetEdges(g, from, to, data, n);
#elif CUDART_VERSION >= 12030
    return cudaGraphGetEdges_v2(g, from, to, data, n);
#else
    (void)data;
    return cudaGraphGetEdges(g, from, to, n);
#endif
}

/* The capture status of `stream`, the graph it captures into (when graph is
 * not NULL) and the nodes the next captured node will depend on. */
static inline cudaError_t cgr__capture_deps(cudaStream_t stream, enum cudaStreamCaptureStatus *cs,
                                            cudaGraph_t *graph, const cudaGraphNode_t **deps,
                                            size_t *n)
{
#if CUDART_VERSION >= 13000
    return cudaStreamGetCaptureInfo(stream, cs, NULL, graph, deps, NULL, n);
#else
    return cudaStreamGetCaptureInfo(stream, cs, NULL, graph, deps, n);
#endif
}

/* Makes the next node captured on `stream` depend on nodes[0..n) alone: for a
 * node added to the capture's graph by hand. */
static inline cudaError_t cgr__capture_set_deps(cudaStream_t stream, cudaGraphNode_t *nodes,
                                                size_t n)
{
#if CUDART_VERSION >= 13000
    return cudaStreamUpdateCaptureDependencies(stream, nodes, NULL, n,
                                               cudaStreamSetCaptureDependencies);
#else
    return cudaStreamUpdateCaptureDependencies(stream, nodes, n,
                                               cudaStreamSetCaptureDependencies);
#endif
}

/* The driver's `name` in the form of CUDA version `version` (12040 for 12.4), as above;
 * CGR__DRIVER_ENTRY_POINT_CALL names the call for messages. */
#if CUDART_VERSION >= 12050
#define CGR__DRIVER_ENTRY_POINT_CALL "cudaGetDriverEntryPointByVersion"
#else
#define CGR__DRIVER_ENTRY_POINT_CALL "cudaGetDriverEntryPoint"
#endif
static inline cudaError_t cgr__driver_entry_point(const char *name, void **fn, int version,
                                                  enum cudaDriverEntryPointQueryResult *q)
{
#if CUDART_VERSION >= 12050
    return cudaGetDriverEntryPointByVersion(name, fn, (unsigned)version, cudaEnableDefault, q);
#else
    (void)version;
    return cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, q);
#endif
}

#endif
