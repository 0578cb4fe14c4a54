/*
 * W-cnn custom kernels (cnn_kernels.cu): global average pooling, the
 * final Linear layer, and a wait used when timing algorithms. Each
 * launcher enqueues one kernel on `stream` and returns the launch status
 * (cudaGetLastError() right after the launch).
 * Both are capturable and deterministic (fixed summation order, no atomics).
 */
#ifndef BENCH_CNN_KERNELS_H
#define BENCH_CNN_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pooled[p] = mean of act[p*hw .. p*hw + hw - 1] for p in [0, planes):
 * the global average pool of an NCHW tensor with planes = N*C, hw = H*W.
 * act must be 16-byte aligned when hw is a multiple of 4 (it then reads
 * float4s). planes >= 1, hw >= 1.
 */
cudaError_t cnn_gap_launch(const float *act, float *pooled, int planes, int hw,
                           cudaStream_t stream);

/**
 * out[n][o] = bias[o] + sum_k w[o][k] * in[n][k] for n < batch, o < out_f:
 * a Linear layer, row-major weight [out_f][in_f]. batch >= 1,
 * 1 <= in_f, 1 <= out_f.
 */
cudaError_t cnn_linear_launch(const float *in, const float *w, const float *bias, float *out,
                              int batch, int in_f, int out_f, cudaStream_t stream);

/**
 * One thread that spins on the GPU's nanosecond timer for `ns`: it holds
 * the stream while the host enqueues the work to be timed behind it, so
 * that work runs back to back and its events measure the GPU, not the
 * host's launch rate. Not for graphs.
 */
cudaError_t cnn_hold_launch(unsigned long long ns, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
