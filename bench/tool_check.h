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

#endif
