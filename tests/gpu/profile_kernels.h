/* Kernels of the profile window's test (profile_kernels.cu), callable from C. */
#ifndef CGR_TEST_PROFILE_KERNELS_H
#define CGR_TEST_PROFILE_KERNELS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = 1.0625 x + 0.25 elementwise (in place when y == x): a kernel of a few us. */
cudaError_t pk_tiny(float *y, const float *x, size_t n, cudaStream_t s);
/* One block spinning `cycles` of clock64, then y = 2 x + 1. */
cudaError_t pk_spin(float *y, const float *x, size_t n, long long cycles, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
