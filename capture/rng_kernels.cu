/*
 * Advances a step's Philox offset after each run: one thread, 8 bytes.
 * It is a node of the captured graph, so replays advance it too.
 */
#include "cgr/cgr.h"

__global__ void cgr__philox_advance_kernel(cgr_philox_state *st, uint64_t n)
{
    st->offset += n;
}

extern "C" cudaError_t cgr__philox_advance(cgr_philox_state *st, uint64_t n, cudaStream_t stream)
{
    cgr__philox_advance_kernel<<<1, 1, 0, stream>>>(st, n);
    return cudaGetLastError();
}
