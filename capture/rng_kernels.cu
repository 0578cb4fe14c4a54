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
    /* Launched as stage.cu launches, for the reason it gives; and so the status is the
     * launch's own, not an earlier call's error. */
    cudaLaunchConfig_t c = {};
    c.gridDim.x = c.gridDim.y = c.gridDim.z = 1;
    c.blockDim = c.gridDim;
    c.stream = stream;
    void *args[] = {&st, &n};
    return cudaLaunchKernelExC(&c, (const void *)cgr__philox_advance_kernel, args);
}
