/*
 * Staging kernels that find their slot through a slot index in mapped
 * pinned memory (staging_kernels.cu): variant (iii) of "pointing the graph
 * at the current slot" in the staging suite. cgr's own zero-copy kernel
 * (capture/stage.h) serves variants (i) and (ii).
 */
#ifndef BENCH_STAGING_H
#define BENCH_STAGING_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Reads the slot index from *slot_idx (mapped pinned, written by the host
 * before the launch), stores it in *idx_seen (device memory, for the output
 * kernel) and copies `bytes` from slots + idx * stride to dst with 16-byte
 * loads. bytes must be a multiple of 16 and every pointer 16-byte aligned.
 * n_slots bounds the index (an out-of-range index reads slot 0).
 */
cudaError_t idx_stage_in(const int *slot_idx, int *idx_seen, const void *slots, size_t stride,
                         int n_slots, void *dst, size_t bytes, cudaStream_t s);

/*
 * Writes `bytes` from src (device) to slots + idx * stride + out_off, with
 * idx read from *idx_seen. bytes must be a multiple of 4.
 */
cudaError_t idx_stage_out(const int *idx_seen, void *slots, size_t stride, size_t out_off,
                          int n_slots, const void *src, size_t bytes, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
