/*
 * The error check of cgr-bench's small standalone tools (mlp-linear-chain,
 * graph-launch-cost): a failed CUDA call prints the call, CUDA's reason and
 * the place, and ends the program with status 1. cgr-bench itself uses
 * util.h instead, which reports the failure and goes on with the next mode.
 */
#ifndef BENCH_TOOL_CHECK_H
#define BENCH_TOOL_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define TOOL_CK(prog, x)                                                                           \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s failed: %s (%s:%d)\n", prog, #x, cudaGetErrorString(e_),       \
                    __FILE__, __LINE__);                                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/*
 * 1 when the tool may launch `kernel` with programmatic dependent launch on
 * the current device, by cgr's own rule (cgr.h, cgr_launch_cfg.pdl): compute
 * capability 9.0 or newer, the kernel's code compiled for compute_90 or
 * newer (so it has its dependency wait), and CGR_PDL is not "0".
 */
static inline int tool_pdl_allowed(const char *prog, const void *kernel)
{
    int dev = 0, major = 0;
    struct cudaFuncAttributes fa;
    TOOL_CK(prog, cudaGetDevice(&dev));
    TOOL_CK(prog, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    TOOL_CK(prog, cudaFuncGetAttributes(&fa, kernel));
    const char *v = getenv("CGR_PDL");
    return major >= 9 && fa.ptxVersion >= 90 && !(v && strcmp(v, "0") == 0);
}

#endif
