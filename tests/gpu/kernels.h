/* Test kernels (kernels.cu), callable from C. Each returns the launch error. */
#ifndef CGR_TEST_KERNELS_H
#define CGR_TEST_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[r,c] = max(x[r,c] + bias[c], 0) over rows x cols. */
cudaError_t tk_bias_relu(float *y, const float *x, const float *bias, int rows, int cols,
                         cudaStream_t s);
/* out[r] = sum over c of 0.5 * x[r,c], summed left to right (deterministic). */
cudaError_t tk_row_sum(float *out, const float *x, int rows, int cols, cudaStream_t s);
/* y = 2 x + 1 elementwise. */
cudaError_t tk_affine(float *y, const float *x, size_t n, cudaStream_t s);
/* tk_affine and tk_add_scalar, except that while s is capturing, the kernel is the node of
 * a child graph node added to the capture (as a library's prebuilt graph joins one). */
cudaError_t tk_affine_child(float *y, const float *x, size_t n, cudaStream_t s);
cudaError_t tk_add_scalar_child(float *y, const float *x, float t, size_t n, cudaStream_t s);
/* *y = a new allocation of n floats holding 2 x + 1: while s is capturing, made by a
 * memory-allocation node inside a child graph node whose graph the capture's graph takes
 * over (CUDA 13 and newer, else cudaErrorNotSupported); otherwise cudaMallocAsync and
 * tk_affine. The caller frees it on s. */
cudaError_t tk_affine_alloc_child(float **y, const float *x, size_t n, cudaStream_t s);
/* Whether tk_affine_alloc_child can capture: the build's CUDA is 13 or newer. */
int tk_moved_child_graphs(void);
/* y = x + t, t passed by value (a graph freezes it) or read from device memory. */
cudaError_t tk_add_scalar(float *y, const float *x, float t, size_t n, cudaStream_t s);
cudaError_t tk_add_device(float *y, const float *x, const float *t, size_t n, cudaStream_t s);
/* Spins until *gate != 0 (mapped host memory) or about 2 s pass; then *timed_out = 1. */
cudaError_t tk_gate(const volatile int *gate, int *timed_out, cudaStream_t s);
/* y = 2 x + 1 like tk_affine, launched through cgr_launch_kernel with pdl = 1
 * (the kernel waits on cudaGridDependencySynchronize before reading x). */
cudaError_t tk_affine_pdl(float *y, const float *x, size_t n, cudaStream_t s);
/* The raw kernel for tk_affine_pdl, for tests that call cgr_launch_kernel. */
const void *tk_affine_pdl_kernel(void);
/* out[i] = uniform float from Philox block (st->offset + sub + i / 4), word i % 4. */
struct cgr_philox_state;
cudaError_t tk_uniform(float *out, const struct cgr_philox_state *st, uint64_t sub, size_t n,
                       cudaStream_t s);
/* out[0] = (int64_t)ptr: lets a test see the scratch address a graph baked in. */
cudaError_t tk_write_ptr(int64_t *out, const void *ptr, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
