/*
 * Staging kernels: the zero-copy half of moving step inputs in and outputs
 * out inside the graph.
 *
 * Small tensors cross PCIe fastest as loads and stores by a kernel on
 * mapped pinned memory (cudaHostAllocMapped): on the H200 that kernel was
 * as fast as a copy node or faster at every size measured, up to 16 MiB
 * (docs/benchmarks.md, "Staging: zero-copy kernels against copy nodes").
 * One kernel moves every small tensor of a direction, so a step with five
 * small inputs still adds one node, not five.
 */
#ifndef CGR_STAGE_H
#define CGR_STAGE_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#include "cgr/cgr.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Copies to make in one launch; passed to the kernel by value.
 *
 * Addresses that belong to a staging slot are given for slot 0 and moved
 * to the run's slot on the device: the kernel reads the slot index from
 * *slot_word (device memory) and adds slot * slot_stride to every such
 * address. So one executable serves every slot, and the host never writes
 * the index: the graph's last staging kernel (the one with a completion
 * flag) advances it, and the host, which knows what every launch did to
 * it, resets it with a memset only when a run in between did not advance
 * it (replay/run.c has the bookkeeping).
 */
typedef struct cgr__copy_list {
    int n; /* at most every tensor of a direction */
    const void *src[CGR_MAX_TENSORS];
    void *dst[CGR_MAX_TENSORS];
    size_t bytes[CGR_MAX_TENSORS];
    /* 0: every src[k] is a slot address (the inputs); 1: every dst[k] is (the outputs). */
    int to_host;
    const unsigned char *slot_word; /* the run's slot index, one byte */
    size_t slot_stride;
    unsigned n_slots;
    /*
     * Completion signal, all NULL when unused. Once every copy of the launch
     * is visible to the host, the last block to finish increments seq[slot]
     * and writes the new value to *flag (slot 0's flag word in mapped host
     * memory, moved to the run's slot), so the host learns that the step's
     * outputs have landed without waiting for the graph to complete (see
     * replay/wait.c), and then stores (slot + 1) % n_slots in *slot_word.
     * arrive: one block-arrival counter per slot.
     */
    unsigned long long *flag;
    unsigned long long *seq;
    unsigned int *arrive;
    /*
     * Gate of an armed run (capture/gate.c), NULL when unused: the device
     * view of slot 0's two gate words, go (written by the host) and
     * expired (written here), moved to the run's slot. Every block waits
     * until the run may go before it reads anything; a block that waited
     * gate_timeout_ns sets expired and goes, so a run that is never
     * launched gives the stream back. gate_relay: two device words per
     * slot (relay, arrivals), how block 0 passes go on to the other blocks
     * (see stage.cu).
     */
    unsigned long long *gate;
    unsigned int *gate_relay;
    unsigned long long gate_timeout_ns;
    /*
     * The run's true dims, on the way in (n_dims 0: none): n_dims int64
     * words from dims_src (slot 0's, moved to the run's slot) to dims_dst,
     * each clamped to 1..dims_max[j], the graph's bucket. A run that reads
     * a slot holding another run's dims (an armed run released or timed
     * out, whose slot the next run may fill before it starts) then still
     * never tells the step a dim past the bucket it was captured for.
     */
    int n_dims;
    const long long *dims_src;
    long long *dims_dst;
    long long dims_max[CGR_MAX_DYN_DIMS];
} cgr__copy_list;

/**
 * Enqueues one kernel doing every copy of `l` on `stream` (src/dst may be
 * device pointers or device views of mapped pinned memory) and returns the
 * launch error, if any. Pointers must be 16-byte aligned; sizes may be
 * anything. A plain launch: the kernel still lets a programmatic successor
 * start early (stage.cu), and capture.c says why it is not one itself.
 */
cudaError_t cgr__stage_copy(const cgr__copy_list *l, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
