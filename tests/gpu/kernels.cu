/*
 * Small kernels for the gpu suite. They are deliberately plain: each output
 * element is computed by one thread in a fixed order, so eager and graphed
 * runs must agree bit for bit.
 */
#include "cgr/cgr.h"
#include "cgr/cgr_philox.h"
#include "cuda_compat.h"
#include "kernels.h"

__global__ void bias_relu_kernel(float *y, const float *x, const float *bias, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) {
        float v = x[i] + bias[i % cols];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

__global__ void row_sum_kernel(float *out, const float *x, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int c = 0; c < cols; c++)
            acc += 0.5f * x[(size_t)r * cols + c];
        out[r] = acc;
    }
}

__global__ void affine_kernel(float *y, const float *x, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

/* t by value: what a graph freezes at its capture. */
__global__ void add_scalar_kernel(float *y, const float *x, float t, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] + t;
}

/* t read from device memory: what a graph replays correctly. */
__global__ void add_device_kernel(float *y, const float *x, const float *t, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] + *t;
}

__global__ void affine_pdl_kernel(float *y, const float *x, size_t n)
{
    /* griddepcontrol exists from sm_90 on; before it no launch is programmatic. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

__global__ void uniform_kernel(float *out, const cgr_philox_state *st, uint64_t sub, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        cgr_philox4 r = cgr_philox4x32(st->seed, st->offset + sub + i / 4, 0);
        out[i] = cgr_philox_uniform(r.v[i % 4]);
    }
}

__global__ void gate_kernel(const volatile int *gate, int *timed_out)
{
    long long start = clock64();
    /* About 2 s at 2 GHz: a test that never opens the gate fails, not hangs. */
    while (*gate == 0) {
        if (clock64() - start > 4000000000LL) {
            *timed_out = 1;
            return;
        }
    }
}

__global__ void write_ptr_kernel(int64_t *out, const void *ptr)
{
    out[0] = (int64_t)(intptr_t)ptr;
}

extern "C" cudaError_t tk_bias_relu(float *y, const float *x, const float *bias, int rows,
                                    int cols, cudaStream_t s)
{
    int n = rows * cols;
    bias_relu_kernel<<<(n + 255) / 256, 256, 0, s>>>(y, x, bias, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_row_sum(float *out, const float *x, int rows, int cols, cudaStream_t s)
{
    row_sum_kernel<<<(rows + 127) / 128, 128, 0, s>>>(out, x, rows, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_affine(float *y, const float *x, size_t n, cudaStream_t s)
{
    affine_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(y, x, n);
    return cudaGetLastError();
}

/* The kernel node of func(args) over n elements, in 256-thread blocks. */
static cudaKernelNodeParams kernel_node(void *func, size_t n, void **args)
{
    cudaKernelNodeParams k = {};
    k.func = func;
    k.gridDim = dim3((unsigned)((n + 255) / 256));
    k.blockDim = dim3(256);
    k.kernelParams = args;
    return k;
}

/*
 * While s is capturing, adds func(args) over n elements as the one kernel
 * node of a child graph node, which the stream's next work depends on, and
 * sets *added; else leaves *added 0 for the caller to launch it plainly.
 */
static cudaError_t add_child_kernel(cudaStream_t s, void *func, size_t n, void **args,
                                    int *added)
{
    *added = 0;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t g = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t n_deps = 0;
    cudaError_t e = cgr__capture_deps(s, &cs, &g, &deps, &n_deps);
    if (e != cudaSuccess || cs != cudaStreamCaptureStatusActive)
        return e;
    cudaGraph_t child = NULL;
    if ((e = cudaGraphCreate(&child, 0)) != cudaSuccess)
        return e;
    cudaKernelNodeParams k = kernel_node(func, n, args);
    cudaGraphNode_t kernel, node;
    e = cudaGraphAddKernelNode(&kernel, child, NULL, 0, &k);
    /* The child is cloned into the node. */
    if (e == cudaSuccess)
        e = cudaGraphAddChildGraphNode(&node, g, deps, n_deps, child);
    if (e == cudaSuccess)
        e = cgr__capture_set_deps(s, &node, 1);
    cudaError_t d = cudaGraphDestroy(child);
    *added = 1;
    return e != cudaSuccess ? e : d;
}

extern "C" cudaError_t tk_affine_child(float *y, const float *x, size_t n, cudaStream_t s)
{
    void *args[] = {&y, &x, &n};
    int added;
    cudaError_t e = add_child_kernel(s, (void *)affine_kernel, n, args, &added);
    return e != cudaSuccess || added ? e : tk_affine(y, x, n, s);
}

extern "C" cudaError_t tk_add_scalar_child(float *y, const float *x, float t, size_t n,
                                           cudaStream_t s)
{
    void *args[] = {&y, &x, &t, &n};
    int added;
    cudaError_t e = add_child_kernel(s, (void *)add_scalar_kernel, n, args, &added);
    return e != cudaSuccess || added ? e : tk_add_scalar(y, x, t, n, s);
}

extern "C" int tk_moved_child_graphs(void)
{
    return CUDART_VERSION >= 13000;
}

extern "C" cudaError_t tk_affine_alloc_child(float **y, const float *x, size_t n, cudaStream_t s)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaGraph_t g = NULL;
    const cudaGraphNode_t *deps = NULL;
    size_t n_deps = 0;
    cudaError_t e = cgr__capture_deps(s, &cs, &g, &deps, &n_deps);
    if (e != cudaSuccess)
        return e;
    if (cs != cudaStreamCaptureStatusActive) {
        if ((e = cudaMallocAsync((void **)y, n * sizeof **y, s)) != cudaSuccess)
            return e;
        return tk_affine(*y, x, n, s);
    }
#if CUDART_VERSION >= 13000
    int dev;
    cudaGraph_t child = NULL;
    if ((e = cudaGetDevice(&dev)) != cudaSuccess || (e = cudaGraphCreate(&child, 0)) != cudaSuccess)
        return e;
    cudaMemAllocNodeParams a = {};
    a.poolProps.allocType = cudaMemAllocationTypePinned;
    a.poolProps.location.type = cudaMemLocationTypeDevice;
    a.poolProps.location.id = dev;
    a.bytesize = n * sizeof **y;
    cudaGraphNode_t alloc, kernel, node;
    e = cudaGraphAddMemAllocNode(&alloc, child, NULL, 0, &a);
    float *out = (float *)a.dptr;
    void *args[] = {&out, &x, &n};
    cudaKernelNodeParams k = kernel_node((void *)affine_kernel, n, args);
    if (e == cudaSuccess)
        e = cudaGraphAddKernelNode(&kernel, child, &alloc, 1, &k);
    /* A graph with memory nodes joins another only by handing it over. */
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeGraph;
    p.graph.graph = child;
    p.graph.ownership = cudaGraphChildGraphOwnershipMove;
    if (e == cudaSuccess)
        e = cudaGraphAddNode(&node, g, deps, NULL, n_deps, &p);
    if (e != cudaSuccess) {
        (void)cudaGraphDestroy(child);
        return e;
    }
    *y = out;
    return cgr__capture_set_deps(s, &node, 1);
#else
    return cudaErrorNotSupported;
#endif
}

extern "C" cudaError_t tk_add_scalar(float *y, const float *x, float t, size_t n, cudaStream_t s)
{
    add_scalar_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(y, x, t, n);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_add_device(float *y, const float *x, const float *t, size_t n,
                                     cudaStream_t s)
{
    add_device_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(y, x, t, n);
    return cudaGetLastError();
}

extern "C" const void *tk_affine_pdl_kernel(void)
{
    return (const void *)affine_pdl_kernel;
}

extern "C" cudaError_t tk_affine_pdl(float *y, const float *x, size_t n, cudaStream_t s)
{
    void *args[] = {&y, &x, &n};
    cgr_launch_cfg cfg = {{(unsigned)((n + 255) / 256), 1, 1}, {256, 1, 1}, 0, 1};
    return cgr_launch_kernel(s, tk_affine_pdl_kernel(), &cfg, args) == CGR_STATUS_OK
               ? cudaSuccess
               : cudaErrorLaunchFailure;
}

extern "C" cudaError_t tk_uniform(float *out, const cgr_philox_state *st, uint64_t sub, size_t n,
                                  cudaStream_t s)
{
    uniform_kernel<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(out, st, sub, n);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_gate(const volatile int *gate, int *timed_out, cudaStream_t s)
{
    gate_kernel<<<1, 1, 0, s>>>(gate, timed_out);
    return cudaGetLastError();
}

extern "C" cudaError_t tk_write_ptr(int64_t *out, const void *ptr, cudaStream_t s)
{
    write_ptr_kernel<<<1, 1, 0, s>>>(out, ptr);
    return cudaGetLastError();
}
