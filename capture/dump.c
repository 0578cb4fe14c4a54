/*
 * What a capture produced: node counts by type (kept in the step's stats
 * and logged), and on request the graph as a Graphviz DOT file from
 * cudaGraphDebugDotPrint, for looking at what the step really enqueued.
 * A dump that cannot be written is logged and the capture goes on; nodes
 * that cannot be counted fail it, since the count is what the shape cache
 * charges the graph.
 */
#include <stdio.h>
#include <stdlib.h>

#include "capture.h"

cudaError_t cgr__graph_count(cudaGraph_t g, size_t counts[cudaGraphNodeTypeCount], size_t *count)
{
    size_t n = 0;
    cudaError_t e = cudaGraphGetNodes(g, NULL, &n);
    if (e == cudaSuccess && n > 0) {
        cudaGraphNode_t *nodes = malloc(n * sizeof *nodes);
        if (nodes && cudaGraphGetNodes(g, nodes, &n) == cudaSuccess)
            for (size_t i = 0; i < n; i++) {
                enum cudaGraphNodeType t;
                if (cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess &&
                    t < cudaGraphNodeTypeCount)
                    counts[t]++;
            }
        free(nodes);
    }
    (void)cudaGetLastError();
    *count = n;
    return e;
}

cgr_status cgr__graph_report(cgr_step *s, cudaGraph_t g, size_t *nodes, uint64_t *kernel_nodes,
                             uint64_t *memcpy_nodes)
{
    cgr_runtime *rt = s->rt;
    size_t counts[cudaGraphNodeTypeCount] = {0}, n = 0;
    cudaError_t ce = cgr__graph_count(g, counts, &n);
    /* The count is what the cache charges the graph: without it the graph is not kept. */
    if (ce != cudaSuccess)
        return cgr__cuda_fail((int)ce, "cudaGraphGetNodes");
    *nodes = n;
    s->graphs_reported++;
    uint64_t kernels = counts[cudaGraphNodeTypeKernel], copies = counts[cudaGraphNodeTypeMemcpy];
    uint64_t events = counts[cudaGraphNodeTypeEventRecord] + counts[cudaGraphNodeTypeWaitEvent];
    uint64_t other = n - kernels - copies - events;
    *kernel_nodes = kernels;
    *memcpy_nodes = copies;
    cgr__log(rt, CGR_LOG_INFO,
             "step '%s' graph: %zu nodes (%llu kernel, %llu memcpy, %llu event, %llu other)",
             s->name, n, (unsigned long long)kernels, (unsigned long long)copies,
             (unsigned long long)events, (unsigned long long)other);
    /* cgr_runtime_create resolved CGR_DUMP_DIR and copied the string. */
    const char *dir = rt->opt.dump_dir;
    if (!dir)
        return CGR_STATUS_OK;
    char path[1024];
    /* One file per capture (a step with dynamic dims captures once per shape), numbered
     * from 1 even when an earlier capture failed to instantiate. */
    snprintf(path, sizeof path, "%s/cgr-%s-%llu.dot", dir, s->file_name,
             (unsigned long long)s->graphs_reported);
    cudaError_t e = cudaGraphDebugDotPrint(g, path, cudaGraphDebugDotFlagsVerbose);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        cgr__log(rt, CGR_LOG_WARN, "could not write %s: %s", path, cudaGetErrorString(e));
    } else {
        cgr__log(rt, CGR_LOG_INFO, "step '%s' graph written to %s", s->name, path);
    }
    return CGR_STATUS_OK;
}
