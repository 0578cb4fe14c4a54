#include <pthread.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "cuda_compat.h"
#include "driver.h"

/*
 * *out = the driver's `name` in the form of CUDA version `version` (e.g.
 * 12040 for 12.4). CGR_STATUS_NOT_SUPPORTED, with a message naming the
 * entry point and `why` (what cgr needs it for), when the driver has none.
 */
static cgr_status driver_entry(const char *name, int version, const char *why, void **out)
{
    enum cudaDriverEntryPointQueryResult q;
    *out = NULL;
    cudaError_t e = cgr__driver_entry_point(name, out, version, &q);
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, CGR__DRIVER_ENTRY_POINT_CALL);
    if (q == cudaDriverEntryPointVersionNotSufficent) {
#if CUDART_VERSION >= 12050
        /* The entry point is newer than the version its set asks for. */
        return CGR_BUG("%s is newer than CUDA %d.%d, the version cgr asks for", name,
                       version / 1000, version % 1000 / 10);
#else
        /* The runtime's own version decides here (cuda_compat.h). */
        int rt = 0;
        (void)cudaRuntimeGetVersion(&rt);
        return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED,
                        "the CUDA runtime (%d.%d) is older than the driver's %s (%s)", rt / 1000,
                        rt % 1000 / 10, name, why);
#endif
    }
    if (q != cudaDriverEntryPointSuccess || *out == NULL)
        return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "the driver has no %s (%s)", name, why);
    return CGR_STATUS_OK;
}

cgr_status cgr__driver_load(cgr__driver_set *set)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    (void)pthread_mutex_lock(&lock);
    if (!set->tried) {
        set->tried = 1;
        set->status = CGR_STATUS_OK;
        for (size_t i = 0; i < set->n && set->status == CGR_STATUS_OK; i++)
            set->status = driver_entry(set->fns[i].name, set->version, set->why,
                                            set->fns[i].fn);
        if (set->status != CGR_STATUS_OK)
            snprintf(set->error, sizeof set->error, "%s", cgr_last_error());
    }
    (void)pthread_mutex_unlock(&lock);
    if (set->status != CGR_STATUS_OK)
        return CGR_FAIL(set->status, "%s", set->error);
    return CGR_STATUS_OK;
}
