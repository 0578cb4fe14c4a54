#include <cuda_runtime_api.h>

#include "driver.h"

cgr_status cgr__driver_entry(const char *name, int version, const char *why, void **out)
{
    enum cudaDriverEntryPointQueryResult q;
    *out = NULL;
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, out, (unsigned)version,
                                                     cudaEnableDefault, &q);
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, "cudaGetDriverEntryPointByVersion", __FILE__, __LINE__);
    if (q != cudaDriverEntryPointSuccess || *out == NULL)
        return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "the driver has no %s (%s)", name, why);
    return CGR_STATUS_OK;
}
