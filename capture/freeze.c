/*
 * The frozen-value check: are two captures of one shape, made at two
 * different runs, the same graph?
 *
 * A graph replays the values it was captured with. A step that passes a
 * host value that changes from run to run as a kernel argument (the step
 * count of an optimizer, a learning rate from a schedule) or as a memset
 * value or copy address gets that value frozen at the capture, and every
 * replay computes something the eager step would not. Nothing in CUDA
 * says so. So the run after a shape's first capture is captured too, and
 * the two graphs are compared node by node, in the order the step created
 * them: the node types, the edges, every kernel's function, launch
 * configuration and parameters (their offsets and sizes from the driver),
 * memset values, copy extents and addresses, host-function calls, events,
 * allocation sizes, child graphs. The first difference is described in the
 * message. A node of a kind whose values are not read here (a stream
 * memory operation, an external semaphore, a conditional node) makes the
 * graphs ones that cannot be compared: never taken for the same.
 *
 * Addresses that differ only because each capture got its own
 * memory-allocation node (cudaMallocAsync in the step, a library
 * allocating in the graph) are matched through those nodes: the k-th
 * allocation of one graph stands for the k-th of the other, counted over
 * the graph and the child graphs inside it, whose nodes may use the
 * graph's allocations and it theirs. A word that holds an address in the
 * capturing thread's stack in both graphs is not a value either: a replay
 * runs long after that stack frame is gone, so no kernel can use it
 * (cuBLAS passes the address of a host-mode alpha this way next to its
 * value, and the two captures are called from different depths).
 * frozen_values.c decides this for each value. NCCL's own
 * kernels are exempt, since NCCL gives every captured graph work buffers
 * of its own, and so are its host-function calls: before a collective
 * whose transport needs NCCL's proxy thread (a network), it calls back
 * with a plan of its own, new at every capture. So are kernels the user
 * names in cgr_options.frozen_allow.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "capture.h"
#include "cuda_compat.h"
#include "driver.h"
#include "dynload.h"
#include "frozen_values.h"

/* ---- driver entry points --------------------------------------------------------------- */

typedef CUresult (*fn_node_params)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*fn_func_param)(CUfunction, size_t, size_t *, size_t *);
typedef CUresult (*fn_kern_param)(CUkernel, size_t, size_t *, size_t *);
typedef CUresult (*fn_func_name)(const char **, CUfunction);
typedef CUresult (*fn_kern_name)(const char **, CUkernel);

static struct {
    fn_node_params node_params;
    fn_func_param func_param;
    fn_kern_param kern_param;
    fn_func_name func_name;
    fn_kern_name kern_name;
} drv;
static const cgr__driver_fn drv_fns[] = {
    {"cuGraphKernelNodeGetParams", (void **)&drv.node_params},
    {"cuFuncGetParamInfo", (void **)&drv.func_param},
    {"cuKernelGetParamInfo", (void **)&drv.kern_param},
    {"cuFuncGetName", (void **)&drv.func_name},
    {"cuKernelGetName", (void **)&drv.kern_name},
};
static cgr__driver_set drv_set = {
    .fns = drv_fns,
    .n = sizeof drv_fns / sizeof drv_fns[0],
    .version = 12040,
    .why = "it reports kernel parameters for the frozen-value check; CUDA 12.4 drivers and "
           "runtimes and newer have it",
};

/* ---- one graph's nodes ------------------------------------------------------------------ */

typedef struct node_list {
    size_t n;
    cudaGraphNode_t *node;
    enum cudaGraphNodeType *type;
    size_t next_alloc; /* the side's alloc_list entry of the next allocation node compared */
} node_list;

/*
 * The memory-allocation nodes of one side, at every level listed so far:
 * a child graph's kernels may use an allocation of the graph around it,
 * and the graph around it one that the child made (owned by the parent).
 */
typedef struct alloc_list {
    cgr__alloc_range *range;
    size_t n, cap;
} alloc_list;

/* Room in *v (of *cap elements of elem bytes, n used) for one more; 0 when out of memory. */
static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 1;
    const size_t c = *cap ? 2 * *cap : 16;
    void *g = realloc(*v, c * elem);
    if (!g)
        return 0;
    *v = g;
    *cap = c;
    return 1;
}

/* Frees l's lists and leaves it empty. */
static void list_free(node_list *l)
{
    free(l->node);
    free(l->type);
    *l = (node_list){0};
}

/* Lists g's nodes into l, which starts empty, and appends its allocations
 * to allocs; on failure l is left empty. */
static cgr_status list_nodes(cudaGraph_t g, node_list *l, alloc_list *allocs)
{
    cgr_status st = CGR_STATUS_OK;
    l->next_alloc = allocs->n;
    CGR_CUDA_TRY_GOTO(cudaGraphGetNodes(g, NULL, &l->n), st, fail);
    if (l->n == 0)
        return CGR_STATUS_OK;
    l->node = malloc(l->n * sizeof *l->node);
    l->type = malloc(l->n * sizeof *l->type);
    if (!l->node || !l->type) {
        st = CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "frozen-value check: %zu graph nodes", l->n);
        goto fail;
    }
    size_t listed = l->n; /* a pointer into l would make the static analyzer forget its lists */
    CGR_CUDA_TRY_GOTO(cudaGraphGetNodes(g, l->node, &listed), st, fail);
    l->n = listed;
    for (size_t i = 0; i < l->n; i++) {
        CGR_CUDA_TRY_GOTO(cudaGraphNodeGetType(l->node[i], &l->type[i]), st, fail);
        if (l->type[i] != cudaGraphNodeTypeMemAlloc)
            continue;
        struct cudaMemAllocNodeParams p;
        memset(&p, 0, sizeof p);
        CGR_CUDA_TRY_GOTO(cudaGraphMemAllocNodeGetParams(l->node[i], &p), st, fail);
        if (!grow((void **)&allocs->range, &allocs->cap, allocs->n, sizeof *allocs->range)) {
            st = CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "frozen-value check: allocation nodes");
            goto fail;
        }
        allocs->range[allocs->n++] = (cgr__alloc_range){(uintptr_t)p.dptr, p.bytesize};
    }
    return CGR_STATUS_OK;
fail:
    list_free(l);
    return st;
}

/* ---- comparing values ------------------------------------------------------------------- */

/* Where kernel parameter i lies in the argument buffer. */
typedef struct param {
    size_t off, size;
} param;

/* The parameters of one kernel function: layout.n entries of pair.params from layout.first. */
typedef struct layout {
    const void *fn; /* its CUfunction or CUkernel */
    size_t first, n;
} layout;

/* The two graphs being compared: a (the graph's capture) and b (the run's). */
typedef struct pair {
    const cgr_step *s;
    const char *b_run;  /* b's run in messages: "the next run" or "this run" */
    cgr__stack_range stack_a; /* the stack of the thread that captured a */
    cgr__stack_range stack_b; /* the same for b: the calling thread's */
    node_list a, b;       /* the nodes of the graphs compared at this level */
    alloc_list alloc_a, alloc_b;
    char where[160];      /* "" at the top, else the child graph node(s) this level is in */
    char *msg;
    size_t cap;
    /*
     * The driver is asked for each kernel function's parameters once per
     * comparison, not once per node: a step launches the same few kernels
     * many times, and these calls were most of the check's cost.
     */
    layout *layouts;
    size_t n_layouts, cap_layouts;
    param *params;
    size_t n_params, cap_params;
} pair;

/* The two graphs' allocations and stacks. */
static cgr__frozen_spaces spaces(const pair *p)
{
    return (cgr__frozen_spaces){{p->alloc_a.range, p->alloc_a.n, p->stack_a},
                                {p->alloc_b.range, p->alloc_b.n, p->stack_b}};
}

static int same_ptr(const pair *p, const void *a, const void *b)
{
    cgr__frozen_spaces sp = spaces(p);
    return (uintptr_t)a == cgr__frozen_in_a(&sp, (uintptr_t)b);
}

/* Formats the difference into p->msg and returns CGR_STATUS_CAPTURE_FAILED. */
static cgr_status differ(pair *p, size_t node, const char *fmt, ...) CGR__PRINTF(3, 4);
static cgr_status differ(pair *p, size_t node, const char *fmt, ...)
{
    int o = snprintf(p->msg, p->cap, "%snode %zu of %zu: ", p->where, node, p->a.n);
    va_list ap;
    va_start(ap, fmt);
    if (o > 0 && (size_t)o < p->cap)
        vsnprintf(p->msg + o, p->cap - (size_t)o, fmt, ap);
    va_end(ap);
    return CGR_STATUS_CAPTURE_FAILED;
}

/* ---- comparing nodes -------------------------------------------------------------------- */

static const char *kernel_name(const CUDA_KERNEL_NODE_PARAMS *k)
{
    const char *name = NULL;
    CUresult r = k->func ? drv.func_name(&name, k->func)
                         : k->kern ? drv.kern_name(&name, k->kern) : CUDA_ERROR_INVALID_VALUE;
    return r == CUDA_SUCCESS && name ? name : "(unnamed kernel)";
}

/* Offset and size of parameter i; 0 past the last one. */
static int param_info(const CUDA_KERNEL_NODE_PARAMS *k, size_t i, size_t *off, size_t *size)
{
    CUresult r = k->func ? drv.func_param(k->func, i, off, size)
                         : drv.kern_param(k->kern, i, off, size);
    return r == CUDA_SUCCESS;
}

/* k's parameters, asked of the driver the first time k's function is met. */
static cgr_status layout_of(pair *p, const CUDA_KERNEL_NODE_PARAMS *k, const layout **out)
{
    const void *fn = k->func ? (const void *)k->func : (const void *)k->kern;
    for (size_t i = 0; i < p->n_layouts; i++)
        if (p->layouts[i].fn == fn) {
            *out = &p->layouts[i];
            return CGR_STATUS_OK;
        }
    if (!grow((void **)&p->layouts, &p->cap_layouts, p->n_layouts, sizeof *p->layouts))
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "frozen-value check: kernel layouts");
    layout *l = &p->layouts[p->n_layouts++];
    *l = (layout){fn, p->n_params, 0};
    size_t off = 0, size = 0;
    while (param_info(k, l->n, &off, &size)) {
        if (!grow((void **)&p->params, &p->cap_params, p->n_params, sizeof *p->params))
            return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "frozen-value check: kernel parameters");
        p->params[p->n_params++] = (param){off, size};
        l->n++;
    }
    *out = l;
    return CGR_STATUS_OK;
}

/* Whether host function fn is in the NCCL library cgr loaded (the one cgr_ctx_nccl serves). */
static int nccl_host_fn(cudaHostFn_t fn)
{
#if CGR_HAVE_NCCL
    const cgr__nccl_api *api = cgr__nccl();
    if (!api)
        return 0;
    /* ISO C has no cast from a function pointer to void *; their bytes are the address. */
    void *at = NULL, *nccl = NULL;
    memcpy(&at, &fn, sizeof at);
    memcpy(&nccl, &api->ncclGetVersion, sizeof nccl);
    Dl_info a, b;
    return dladdr(at, &a) && dladdr(nccl, &b) && a.dli_fbase == b.dli_fbase;
#else
    (void)fn;
    return 0;
#endif
}

/* Whether differences in kernel `name` are accepted: NCCL's, and those in frozen_allow. */
static int allowed(const cgr_step *s, const char *name)
{
    if (strstr(name, "ncclDevKernel") || strstr(name, "ncclKernel"))
        return 1;
    const char *list = s->rt->opt.frozen_allow;
    if (!list)
        return 0;
    for (const char *q = list; *q;) {
        size_t n = strcspn(q, ",");
        char word[256];
        if (n > 0 && n < sizeof word) {
            memcpy(word, q, n);
            word[n] = '\0';
            if (strstr(name, word))
                return 1;
        }
        q += n;
        if (*q == ',')
            q++;
    }
    return 0;
}

/* The packed argument buffer of a kernel launched with `extra`, or NULL. */
static const unsigned char *extra_buffer(void **extra, size_t *bytes)
{
    const unsigned char *buf = NULL;
    *bytes = 0;
    for (size_t k = 0; extra && extra[k] != CU_LAUNCH_PARAM_END; k += 2) {
        if (extra[k] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            buf = extra[k + 1];
        else if (extra[k] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            *bytes = *(const size_t *)extra[k + 1];
    }
    return buf;
}

static cgr_status compare_kernel(pair *p, size_t i)
{
    CUDA_KERNEL_NODE_PARAMS ka, kb;
    memset(&ka, 0, sizeof ka);
    memset(&kb, 0, sizeof kb);
    CUresult r = drv.node_params((CUgraphNode)p->a.node[i], &ka);
    if (r == CUDA_SUCCESS)
        r = drv.node_params((CUgraphNode)p->b.node[i], &kb);
    if (r != CUDA_SUCCESS)
        return CGR_FAIL(CGR_STATUS_CUDA_ERROR, "cuGraphKernelNodeGetParams failed (CUresult %d)",
                        (int)r);
    /* Named only for a message or frozen_allow: asking the driver costs a call per node. */
    if (ka.func != kb.func || ka.kern != kb.kern)
        return differ(p, i, "kernel %s at the capture, %s at %s", kernel_name(&ka),
                      kernel_name(&kb), p->b_run);
    if (ka.gridDimX != kb.gridDimX || ka.gridDimY != kb.gridDimY || ka.gridDimZ != kb.gridDimZ ||
        ka.blockDimX != kb.blockDimX || ka.blockDimY != kb.blockDimY ||
        ka.blockDimZ != kb.blockDimZ || ka.sharedMemBytes != kb.sharedMemBytes)
        return differ(p, i,
                      "kernel %s: launch configuration grid (%u,%u,%u) block (%u,%u,%u) shared "
                      "%u at the capture, grid (%u,%u,%u) block (%u,%u,%u) shared %u at %s",
                      kernel_name(&ka), ka.gridDimX, ka.gridDimY, ka.gridDimZ, ka.blockDimX,
                      ka.blockDimY, ka.blockDimZ, ka.sharedMemBytes, kb.gridDimX, kb.gridDimY,
                      kb.gridDimZ, kb.blockDimX, kb.blockDimY, kb.blockDimZ, kb.sharedMemBytes,
                      p->b_run);
    size_t ea = 0, eb = 0;
    const unsigned char *bufa = ka.kernelParams ? NULL : extra_buffer(ka.extra, &ea);
    const unsigned char *bufb = kb.kernelParams ? NULL : extra_buffer(kb.extra, &eb);
    /* Both as an array of arguments, or both as one packed buffer of the same size. */
    if (!ka.kernelParams != !kb.kernelParams || (!ka.kernelParams && (!bufa || !bufb || ea != eb)))
        return differ(p, i, "kernel %s: its arguments cannot be compared", kernel_name(&ka));
    const layout *lay = NULL;
    CGR_TRY(layout_of(p, &ka, &lay));
    const cgr__frozen_spaces sp = spaces(p);
    for (size_t j = 0; j < lay->n; j++) {
        const size_t off = p->params[lay->first + j].off, size = p->params[lay->first + j].size;
        const unsigned char *va = ka.kernelParams ? ka.kernelParams[j] : bufa + off;
        const unsigned char *vb = kb.kernelParams ? kb.kernelParams[j] : bufb + off;
        if (!ka.kernelParams && (off > ea || size > ea - off))
            return differ(p, i, "kernel %s: its arguments cannot be compared (parameter %zu "
                          "lies past the %zu bytes of its argument buffer)",
                          kernel_name(&ka), j, ea);
        if (cgr__frozen_same_bytes(&sp, va, vb, size))
            continue;
        const char *name = kernel_name(&ka);
        if (allowed(p->s, name))
            continue;
        char sa[96], sb[96];
        cgr__frozen_show(sa, sizeof sa, va, size);
        cgr__frozen_show(sb, sizeof sb, vb, size);
        return differ(p, i,
                      "kernel %s, parameter %zu (%zu bytes at offset %zu) is %s in the graph "
                      "captured at one run and %s at %s",
                      name, j, size, off, sa, sb, p->b_run);
    }
    return CGR_STATUS_OK;
}

static cgr_status compare_graphs(pair *p, cudaGraph_t a, cudaGraph_t b, int depth);

static cgr_status compare_node(pair *p, size_t i, int depth)
{
    cudaGraphNode_t na = p->a.node[i], nb = p->b.node[i];
    switch (p->a.type[i]) {
    case cudaGraphNodeTypeKernel:
        return compare_kernel(p, i);
    case cudaGraphNodeTypeMemset: {
        struct cudaMemsetParams ma, mb;
        CGR_CUDA_TRY(cudaGraphMemsetNodeGetParams(na, &ma));
        CGR_CUDA_TRY(cudaGraphMemsetNodeGetParams(nb, &mb));
        if (!same_ptr(p, ma.dst, mb.dst) || ma.pitch != mb.pitch ||
            ma.elementSize != mb.elementSize || ma.width != mb.width || ma.height != mb.height)
            return differ(p, i, "a memset writes %zu x %zu elements of %u bytes at %p at the "
                          "capture, %zu x %zu of %u at %p at %s",
                          ma.height, ma.width, ma.elementSize, ma.dst, mb.height, mb.width,
                          mb.elementSize, mb.dst, p->b_run);
        if (ma.value != mb.value)
            return differ(p, i, "a memset writes the value 0x%x at the capture, 0x%x at %s",
                          ma.value, mb.value, p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeMemcpy: {
        struct cudaMemcpy3DParms ca, cb;
        CGR_CUDA_TRY(cudaGraphMemcpyNodeGetParams(na, &ca));
        CGR_CUDA_TRY(cudaGraphMemcpyNodeGetParams(nb, &cb));
        if (!same_ptr(p, ca.srcPtr.ptr, cb.srcPtr.ptr) ||
            !same_ptr(p, ca.dstPtr.ptr, cb.dstPtr.ptr) || ca.srcArray != cb.srcArray ||
            ca.dstArray != cb.dstArray)
            return differ(p, i, "a copy goes from %p to %p at the capture, from %p to %p at "
                          "%s (an address that changes per run must not be captured)",
                          ca.srcPtr.ptr, ca.dstPtr.ptr, cb.srcPtr.ptr, cb.dstPtr.ptr, p->b_run);
        if (memcmp(&ca.extent, &cb.extent, sizeof ca.extent) != 0 || ca.kind != cb.kind ||
            ca.srcPtr.pitch != cb.srcPtr.pitch || ca.dstPtr.pitch != cb.dstPtr.pitch ||
            memcmp(&ca.srcPos, &cb.srcPos, sizeof ca.srcPos) != 0 ||
            memcmp(&ca.dstPos, &cb.dstPos, sizeof ca.dstPos) != 0)
            return differ(p, i, "a copy of %zu bytes at the capture copies %zu at %s",
                          ca.extent.width * ca.extent.height * ca.extent.depth,
                          cb.extent.width * cb.extent.height * cb.extent.depth, p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeHost: {
        struct cudaHostNodeParams ha, hb;
        CGR_CUDA_TRY(cudaGraphHostNodeGetParams(na, &ha));
        CGR_CUDA_TRY(cudaGraphHostNodeGetParams(nb, &hb));
        if (ha.fn != hb.fn || (ha.userData != hb.userData && !nccl_host_fn(ha.fn)))
            return differ(p, i, "a host function call (cudaLaunchHostFunc) has other arguments "
                          "at %s", p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeEventRecord:
    case cudaGraphNodeTypeWaitEvent: {
        cudaEvent_t ea, eb;
        int rec = p->a.type[i] == cudaGraphNodeTypeEventRecord;
        CGR_CUDA_TRY(rec ? cudaGraphEventRecordNodeGetEvent(na, &ea)
                         : cudaGraphEventWaitNodeGetEvent(na, &ea));
        CGR_CUDA_TRY(rec ? cudaGraphEventRecordNodeGetEvent(nb, &eb)
                         : cudaGraphEventWaitNodeGetEvent(nb, &eb));
        if (ea != eb)
            return differ(p, i, "an event %s names another event at %s",
                          rec ? "record" : "wait", p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeMemFree: {
        void *fa = NULL, *fb = NULL;
        CGR_CUDA_TRY(cudaGraphMemFreeNodeGetParams(na, &fa));
        CGR_CUDA_TRY(cudaGraphMemFreeNodeGetParams(nb, &fb));
        if (!same_ptr(p, fa, fb))
            return differ(p, i, "a free (cudaFreeAsync) frees another address at %s",
                          p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeGraph: {
        cudaGraph_t ga, gb;
        CGR_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(na, &ga));
        CGR_CUDA_TRY(cudaGraphChildGraphNodeGetGraph(nb, &gb));
        if (depth >= 8)
            return differ(p, i, "child graphs nest deeper than 8 levels");
        const size_t len = strlen(p->where);
        snprintf(p->where + len, sizeof p->where - len, "in the child graph at node %zu of %zu, ",
                 i, p->a.n);
        cgr_status st = compare_graphs(p, ga, gb, depth + 1);
        p->where[len] = '\0';
        return st;
    }
    case cudaGraphNodeTypeMemAlloc: {
        /* Their addresses are matched by order (cgr__frozen_in_a), their sizes here: as
         * list_nodes read them, this level's in node order from next_alloc on. */
        const size_t ba = p->alloc_a.range[p->a.next_alloc++].bytes;
        const size_t bb = p->alloc_b.range[p->b.next_alloc++].bytes;
        if (ba != bb)
            return differ(p, i, "an allocation (cudaMallocAsync) of %zu bytes at the capture "
                          "is one of %zu at %s", ba, bb, p->b_run);
        return CGR_STATUS_OK;
    }
    case cudaGraphNodeTypeEmpty:
        return CGR_STATUS_OK;
    default:
        /*
         * Stream memory operations (cuStreamWriteValue32 and the like),
         * external semaphores, conditional nodes and kinds newer than this
         * code hold values (a value written, a fence value, a body graph)
         * it does not read: a graph it cannot compare is not taken for the
         * same. Nor is it a value found to change: failing as when a node
         * cannot be read, the shape runs eagerly as one whose graphs could
         * not be compared (capture.c), not as a frozen value.
         */
        (void)differ(p, i, "an operation of type %d (a stream memory operation, an external "
                     "semaphore, a conditional node or a newer kind) cannot be checked for "
                     "frozen values; set cgr_options.frozen_check = 0 for this step's runtime "
                     "if its values never change", (int)p->a.type[i]);
        return CGR_FAIL(CGR_STATUS_CUDA_ERROR, "%s", p->msg);
    }
}

/* A node and its index in its list, sorted by node so that an edge's ends are found in log n. */
typedef struct node_at {
    cudaGraphNode_t node;
    size_t i;
} node_at;

static int node_at_cmp(const void *x, const void *y)
{
    const uintptr_t a = (uintptr_t)((const node_at *)x)->node;
    const uintptr_t b = (uintptr_t)((const node_at *)y)->node;
    return a < b ? -1 : a > b;
}

static size_t index_of(const node_at *by_node, size_t n, cudaGraphNode_t node)
{
    const node_at key = {node, 0};
    const node_at *f = bsearch(&key, by_node, n, sizeof key, node_at_cmp);
    return f ? f->i : SIZE_MAX;
}

typedef struct edge {
    size_t from, to;
    cgr__edge_data data;
} edge;

static int edge_cmp(const void *x, const void *y)
{
    const edge *a = x, *b = y;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    if (a->to != b->to)
        return a->to < b->to ? -1 : 1;
    return memcmp(&a->data, &b->data, sizeof a->data);
}

/* The edges of g as sorted (from, to, data) index triples; caller frees *out. On
 * failure *out is NULL and *n 0. */
static cgr_status list_edges(cudaGraph_t g, const node_list *l, edge **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t count = 0;
    cudaError_t ce = cgr__graph_edges(g, NULL, NULL, NULL, &count);
    if (ce != cudaSuccess)
        return cgr__cuda_fail((int)ce, "cudaGraphGetEdges");
    if (count == 0)
        return CGR_STATUS_OK;
    cudaGraphNode_t *from = malloc(count * sizeof *from), *to = malloc(count * sizeof *to);
    cgr__edge_data *data = calloc(count, sizeof *data); /* zeroed: see cgr__graph_edges */
    edge *e = malloc(count * sizeof *e);
    node_at *by_node = malloc((l->n ? l->n : 1) * sizeof *by_node);
    cgr_status st = CGR_STATUS_OK;
    if (!from || !to || !data || !e || !by_node) {
        st = CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "frozen-value check: %zu graph edges", count);
    } else if ((ce = cgr__graph_edges(g, from, to, data, &count)) != cudaSuccess) {
        st = cgr__cuda_fail((int)ce, "cudaGraphGetEdges");
    } else {
        for (size_t k = 0; k < l->n; k++)
            by_node[k] = (node_at){l->node[k], k};
        qsort(by_node, l->n, sizeof *by_node, node_at_cmp);
        for (size_t k = 0; k < count; k++) {
            e[k].from = index_of(by_node, l->n, from[k]);
            e[k].to = index_of(by_node, l->n, to[k]);
            e[k].data = data[k];
        }
        qsort(e, count, sizeof *e, edge_cmp);
    }
    free(by_node);
    free(from);
    free(to);
    free(data);
    if (st != CGR_STATUS_OK) {
        free(e);
        return st;
    }
    *out = e;
    *n = count;
    return CGR_STATUS_OK;
}

static cgr_status compare_edges(pair *p, cudaGraph_t a, cudaGraph_t b)
{
    edge *ea = NULL, *eb = NULL;
    size_t na = 0, nb = 0;
    cgr_status st = list_edges(a, &p->a, &ea, &na);
    if (st == CGR_STATUS_OK)
        st = list_edges(b, &p->b, &eb, &nb);
    if (st == CGR_STATUS_OK && (na != nb || (na && memcmp(ea, eb, na * sizeof *ea) != 0))) {
        snprintf(p->msg, p->cap, "%sthe nodes depend on each other differently (%zu edges at "
                 "the capture, %zu at %s)", p->where, na, nb, p->b_run);
        st = CGR_STATUS_CAPTURE_FAILED;
    }
    free(ea);
    free(eb);
    return st;
}

static cgr_status compare_graphs(pair *p, cudaGraph_t a, cudaGraph_t b, int depth)
{
    /* Emptied first: a failure listing a leaves b unlisted, and only this
     * level's lists are freed. */
    node_list outer_a = p->a, outer_b = p->b;
    memset(&p->a, 0, sizeof p->a);
    memset(&p->b, 0, sizeof p->b);
    cgr_status st = list_nodes(a, &p->a, &p->alloc_a);
    if (st == CGR_STATUS_OK)
        st = list_nodes(b, &p->b, &p->alloc_b);
    if (st == CGR_STATUS_OK && p->a.n != p->b.n) {
        snprintf(p->msg, p->cap, "%sthe step enqueued %zu operations at the capture and %zu at "
                 "%s", p->where, p->a.n, p->b.n, p->b_run);
        st = CGR_STATUS_CAPTURE_FAILED;
    }
    for (size_t i = 0; st == CGR_STATUS_OK && i < p->a.n; i++) {
        if (p->a.type[i] != p->b.type[i])
            st = differ(p, i, "operation of type %d at the capture, %d at %s",
                        (int)p->a.type[i], (int)p->b.type[i], p->b_run);
        else
            st = compare_node(p, i, depth);
    }
    if (st == CGR_STATUS_OK)
        st = compare_edges(p, a, b);
    list_free(&p->a);
    list_free(&p->b);
    p->a = outer_a;
    p->b = outer_b;
    return st;
}

cgr_status cgr__graphs_compare(const cgr_step *s, cudaGraph_t a, cgr__stack_range a_stack,
                               cudaGraph_t b, const char *b_run, char *msg, size_t cap)
{
    CGR_TRY(cgr__driver_load(&drv_set));
    pair p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.b_run = b_run;
    /* A capture on another thread put its own stack's addresses in a. */
    p.stack_a = a_stack;
    p.stack_b = cgr__thread_stack();
    p.msg = msg;
    p.cap = cap;
    msg[0] = '\0';
    cgr_status st = compare_graphs(&p, a, b, 0);
    free(p.layouts);
    free(p.params);
    free(p.alloc_a.range);
    free(p.alloc_b.range);
    (void)cudaGetLastError();
    return st;
}
