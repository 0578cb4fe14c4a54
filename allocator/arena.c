#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "arena.h"
#include "check.h"
#include "driver.h"
#include "fault.h"

/* Driver VMM entry points, fetched once per process through the runtime. */
typedef CUresult (*fn_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*fn_addr_free)(CUdeviceptr, size_t);
typedef CUresult (*fn_create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*fn_release)(CUmemGenericAllocationHandle);
typedef CUresult (*fn_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);
typedef CUresult (*fn_unmap)(CUdeviceptr, size_t);
typedef CUresult (*fn_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
typedef CUresult (*fn_gran)(size_t *, const CUmemAllocationProp *,
                            CUmemAllocationGranularity_flags);

static struct {
    fn_reserve reserve;
    fn_addr_free addr_free;
    fn_create create;
    fn_release release;
    fn_map map;
    fn_unmap unmap;
    fn_access access;
    fn_gran gran;
} vmm;

static const cgr__driver_fn vmm_fns[] = {
    {"cuMemAddressReserve", (void **)&vmm.reserve},
    {"cuMemAddressFree", (void **)&vmm.addr_free},
    {"cuMemCreate", (void **)&vmm.create},
    {"cuMemRelease", (void **)&vmm.release},
    {"cuMemMap", (void **)&vmm.map},
    {"cuMemUnmap", (void **)&vmm.unmap},
    {"cuMemSetAccess", (void **)&vmm.access},
    {"cuMemGetAllocationGranularity", (void **)&vmm.gran},
};
static cgr__driver_set vmm_set = {
    .fns = vmm_fns,
    .n = sizeof vmm_fns / sizeof vmm_fns[0],
    .version = 12000,
    .why = "virtual memory management is needed for the arena",
};

static cgr_status drv_fail(CUresult r, const char *expr)
{
    /* No cuGetErrorName without linking libcuda; name the one code callers act on. */
    int oom = r == CUDA_ERROR_OUT_OF_MEMORY;
    return CGR_FAIL(oom ? CGR_STATUS_OUT_OF_MEMORY : CGR_STATUS_CUDA_ERROR,
                    "%s failed: CUresult %d%s", expr, (int)r,
                    oom ? " (CUDA_ERROR_OUT_OF_MEMORY)" : "");
}

#define DRV_TRY(expr)                                                                      \
    do {                                                                                   \
        CUresult r_ = (expr);                                                              \
        if (r_ != CUDA_SUCCESS)                                                            \
            return drv_fail(r_, #expr);                                                    \
    } while (0)

static void device_prop(CUmemAllocationProp *prop, int device)
{
    memset(prop, 0, sizeof *prop);
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = device;
}

cgr_status cgr__arena_init(cgr__arena *a, int device, size_t limit)
{
    memset(a, 0, sizeof *a);
    a->device = device;
    CGR_TRY(cgr__driver_load(&vmm_set));
    CUmemAllocationProp prop;
    device_prop(&prop, device);
    size_t gran = 0;
    DRV_TRY(vmm.gran(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    if (gran == 0)
        return CGR_FAIL(CGR_STATUS_CUDA_ERROR, "cuMemGetAllocationGranularity returned 0");
    /* cgr_options.arena_limit is validated to at most 1 TiB: rounding it up cannot wrap. */
    assert(limit <= SIZE_MAX - gran);
    size_t reserve = (limit + gran - 1) / gran * gran;
    CUdeviceptr base = 0;
    DRV_TRY(vmm.reserve(&base, reserve, 0, 0, 0));
    a->base = (uintptr_t)base;
    a->reserved = reserve;
    a->granularity = gran;
    return CGR_STATUS_OK;
}

cgr_status cgr__arena_ensure(cgr__arena *a, size_t bytes)
{
    if (bytes <= a->mapped)
        return CGR_STATUS_OK;
    if (bytes > a->reserved)
        return CGR_FAIL(CGR_STATUS_ARENA_LIMIT,
                        "scratch plan needs %zu bytes but the arena limit is %zu bytes "
                        "(raise cgr_options.arena_limit)",
                        bytes, a->reserved);
    if (a->n_chunks == a->cap_chunks) {
        size_t cap = a->cap_chunks ? a->cap_chunks * 2 : 8;
        struct cgr__arena_chunk *c = realloc(a->chunks, cap * sizeof *c);
        if (!c)
            return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "arena chunk table");
        a->chunks = c;
        a->cap_chunks = cap;
    }
    size_t grow = (bytes - a->mapped + a->granularity - 1) / a->granularity * a->granularity;
    CUmemAllocationProp prop;
    device_prop(&prop, a->device);
    CUmemGenericAllocationHandle h = 0;
    /* Both sites count every growth ('|', not '||'), see fault.h. */
    CUresult r = (CGR__FAULT(CGR__FAULT_DEVICE_ALLOC) | CGR__FAULT(CGR__FAULT_ARENA_CREATE))
                     ? CUDA_ERROR_OUT_OF_MEMORY
                     : vmm.create(&h, grow, &prop, 0);
    if (r != CUDA_SUCCESS)
        return drv_fail(r, "cuMemCreate");
    CUdeviceptr at = (CUdeviceptr)(a->base + a->mapped);
    r = CGR__FAULT(CGR__FAULT_ARENA_MAP) ? CUDA_ERROR_OUT_OF_MEMORY : vmm.map(at, grow, 0, h, 0);
    if (r != CUDA_SUCCESS) {
        (void)vmm.release(h);
        return drv_fail(r, "cuMemMap");
    }
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = a->device;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = vmm.access(at, grow, &acc, 1);
    if (r != CUDA_SUCCESS) {
        (void)vmm.unmap(at, grow);
        (void)vmm.release(h);
        return drv_fail(r, "cuMemSetAccess");
    }
    a->chunks[a->n_chunks++] = (struct cgr__arena_chunk){(unsigned long long)h, grow};
    a->mapped += grow;
    return CGR_STATUS_OK;
}

void cgr__arena_destroy(cgr__arena *a)
{
    if (a->base) {
        uintptr_t at = a->base;
        for (size_t i = 0; i < a->n_chunks; i++) {
            (void)vmm.unmap((CUdeviceptr)at, a->chunks[i].bytes);
            (void)vmm.release((CUmemGenericAllocationHandle)a->chunks[i].handle);
            at += a->chunks[i].bytes;
        }
        (void)vmm.addr_free((CUdeviceptr)a->base, a->reserved);
    }
    free(a->chunks);
    memset(a, 0, sizeof *a);
}
