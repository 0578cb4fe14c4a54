/* Kernels launched without a stream (stream_kernels.cu), callable from C. */
#ifndef CGR_TEST_STREAM_KERNELS_H
#define CGR_TEST_STREAM_KERNELS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* tmp = 0 (cudaMemsetAsync on stream 0), then y = 2 x + 1 (<<<grid, block>>>). */
cudaError_t sk_per_thread(float *y, const float *x, float *tmp, size_t n);
cudaError_t sk_legacy(float *y, const float *x, float *tmp, size_t n);

#ifdef __cplusplus
}
#endif

#endif
