/*
 * W-chain: N launches of a tiny elementwise kernel on 4096 floats. Its
 * kernel, for the chain suite (chain_bench.c) and main.c.
 */
#ifndef BENCH_CHAIN_H
#define BENCH_CHAIN_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHAIN_ELEMS 4096
#define CHAIN_BLOCKS 16
#define CHAIN_THREADS 256
/* |a| < 1 with fixed point a*1+b = 1 keeps x bounded however long it runs. */
#define CHAIN_A 0.999f
#define CHAIN_B 0.001f

/* One kernel of the chain (chain_kernels.cu); returns the launch error. */
cudaError_t chain_kernel_launch(float *x, const float *in, size_t n_in, float *out, int pdl,
                                cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
