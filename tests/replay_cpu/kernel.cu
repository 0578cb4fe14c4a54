/*
 * The chain every mode runs: one block of REPLAY_CPU_ELEMS threads per
 * kernel, so a replay is pure launch cost. fmaf keeps every mode's result
 * bit-identical, which is how replay_cpu checks that each ran every step.
 */
#include <cuda_runtime.h>

extern "C" {
#include "side.h"
}

__global__ void replay_cpu_kernel(float *x, float a, float b)
{
    x[threadIdx.x] = fmaf(x[threadIdx.x], a, b);
}

extern "C" int replay_cpu_chain(void *stream, float *x, int n)
{
    for (int i = 0; i < n; i++)
        replay_cpu_kernel<<<1, REPLAY_CPU_ELEMS, 0, (cudaStream_t)stream>>>(x, 0.999f, 0.25f);
    return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
