/* Kernels for test_prof.c (defined in test_prof_kernels.cu). */
#ifndef CGR_BENCH_TEST_PROF_KERNELS_H
#define CGR_BENCH_TEST_PROF_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Launches prof_test_spin<<<1, 32, 0, stream>>>, which spins for about `ns`
 * nanoseconds of %globaltimer (bounded by a clock64 cap, so it always ends)
 * and writes its iteration count to *sink (device memory). Returns the
 * launch error. */
cudaError_t prof_test_launch_spin(cudaStream_t stream, unsigned long long ns,
                                  unsigned long long *sink);

#ifdef __cplusplus
}
#endif

#endif
