/* Kernel of the soak suite (soak_kernels.cu), callable from C. */
#ifndef BENCH_SOAK_H
#define BENCH_SOAK_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[B,D] = act(x[B,D] W[D,D] + b[D]), act = ReLU when relu != 0; returns the launch error. */
cudaError_t soak_layer(float *y, const float *x, const float *w, const float *b, int B, int D,
                       int relu, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
