/*
 * W-serve's own kernel (serve_kernels.cu), callable from C: the softmax
 * that ends the serving forward pass, masked to the request's real rows.
 */
#ifndef BENCH_SERVE_KERNELS_H
#define BENCH_SERVE_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * probs[r][c] = exp(logits[r][c] - max_r) / sum_c' exp(logits[r][c'] - max_r)
 * for the real rows r < T, where T = *true_rows is read on the device
 * (cgr_ctx_dim()'s `dev`; clamped to [1, rows]), so one captured graph
 * serves every request size of its bucket. The padded rows T <= r < rows
 * do no work and are left as they were: cgr returns only the real rows.
 * logits and probs are [rows][cols] (rows = the bucket). One block of 256
 * threads per row; every sum and max is reduced in a fixed order, so the
 * result is bitwise reproducible. pdl != 0 launches with programmatic
 * dependent launch (through cgr_launch_kernel); the kernel waits for the
 * previous grid before it reads, so results are the same either way.
 * Returns the launch error (cudaErrorInvalidValue for bad sizes).
 */
cudaError_t serve_softmax_masked(float *probs, const float *logits, int rows, int cols,
                                 const int64_t *true_rows, cudaStream_t s, int pdl);

#ifdef __cplusplus
}
#endif

#endif
