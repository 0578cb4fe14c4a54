// Kernels for test_prof.c: a spin kernel of known duration.
#include "test_prof_kernels.h"

// Spins until `ns` nanoseconds of %globaltimer have passed. The loop also
// stops after 4 * ns SM clock cycles (>= 1 ns at any clock below 4 GHz), so
// it ends even if the global timer does not advance.
__global__ void prof_test_spin(unsigned long long ns, unsigned long long *sink)
{
    unsigned long long t0, t;
    unsigned long long iters = 0;
    const long long c0 = clock64();
    const long long cap = (long long)(ns * 4ull);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        iters++;
        if (clock64() - c0 > cap)
            break;
    } while (t - t0 < ns);
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *sink = iters;
}

extern "C" cudaError_t prof_test_launch_spin(cudaStream_t stream,
                                             unsigned long long ns,
                                             unsigned long long *sink)
{
    prof_test_spin<<<1, 32, 0, stream>>>(ns, sink);
    return cudaGetLastError();
}
