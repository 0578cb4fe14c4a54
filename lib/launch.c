/*
 * cgr_launch_kernel: cudaLaunchKernelExC with the programmatic-stream-
 * serialization attribute when asked and the device allows it (pdl.h).
 * Kept in C so users of the C API get programmatic dependent launch without
 * writing C++ launch code.
 */
#include <string.h>

#include "lib.h"
#include "pdl.h"

CGR_API cgr_status cgr_launch_kernel(cgr_stream stream, const void *kernel,
                                     const cgr_launch_cfg *cfg, void **args)
{
    if (!kernel || !cfg)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_launch_kernel: %s is NULL",
                        kernel ? "cfg" : "kernel");
    unsigned long long threads = 1;
    for (int i = 0; i < 3; i++) {
        if (cfg->grid[i] == 0 || cfg->block[i] == 0)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "cgr_launch_kernel: grid[%d] = %u, block[%d] = %u; each must be >= 1",
                            i, cfg->grid[i], i, cfg->block[i]);
        threads *= cfg->block[i];
    }
    if (threads > 1024)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_launch_kernel: %llu threads per block, at most 1024", threads);
    cudaLaunchConfig_t c;
    memset(&c, 0, sizeof c);
    c.gridDim.x = cfg->grid[0];
    c.gridDim.y = cfg->grid[1];
    c.gridDim.z = cfg->grid[2];
    c.blockDim.x = cfg->block[0];
    c.blockDim.y = cfg->block[1];
    c.blockDim.z = cfg->block[2];
    c.dynamicSmemBytes = cfg->shared_bytes;
    c.stream = stream;
    cudaLaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    if (cfg->pdl) {
        /* Before sm_90, or with CGR_PDL=0, the same kernel runs after its
         * predecessor instead: its dependency wait is then a no-op. */
        int allowed = 0;
        CGR_CUDA_TRY(cgr__pdl_here(&allowed));
        if (allowed) {
            c.attrs = &attr;
            c.numAttrs = 1;
        }
    }
    CGR_CUDA_TRY(cudaLaunchKernelExC(&c, kernel, args));
    return CGR_STATUS_OK;
}
