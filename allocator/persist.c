#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "check.h"
#include "fault.h"
#include "persist.h"

cgr_status cgr__persist_alloc(cgr__persist *p, size_t bytes, void **out)
{
    if (bytes == 0 || bytes > SIZE_MAX - 255)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "persistent allocation of %zu bytes", bytes);
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct cgr__persist_block *nb = realloc(p->blocks, cap * sizeof *nb);
        if (!nb)
            return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "persistent allocation table");
        p->blocks = nb;
        p->cap = cap;
    }
    /* cudaMalloc aligns to at least 256 bytes; rounding the size keeps the
     * accounting honest about what the allocation really occupies. */
    size_t rounded = (bytes + 255) & ~(size_t)255;
    void *ptr = NULL;
    cudaError_t e = CGR__FAULT(CGR__FAULT_DEVICE_ALLOC) ? cudaErrorMemoryAllocation
                                                         : cudaMalloc(&ptr, rounded);
    if (e != cudaSuccess)
        return cgr__cuda_fail((int)e, "cudaMalloc");
    p->blocks[p->n++] = (struct cgr__persist_block){ptr, rounded};
    p->bytes += rounded;
    *out = ptr;
    return CGR_STATUS_OK;
}

cgr_status cgr__persist_free(cgr__persist *p, void *ptr)
{
    if (!ptr)
        return CGR_STATUS_OK;
    for (size_t i = 0; i < p->n; i++) {
        if (p->blocks[i].ptr == ptr) {
            cudaError_t e = cudaFree(ptr);
            p->bytes -= p->blocks[i].bytes;
            p->blocks[i] = p->blocks[--p->n];
            if (e != cudaSuccess)
                return cgr__cuda_fail((int)e, "cudaFree");
            return CGR_STATUS_OK;
        }
    }
    /* Only cgr frees persistent memory, and only what it allocated there. */
    return CGR_BUG("%p is not a persistent allocation", ptr);
}

void cgr__persist_destroy(cgr__persist *p)
{
    for (size_t i = 0; i < p->n; i++)
        (void)cudaFree(p->blocks[i].ptr);
    free(p->blocks);
    memset(p, 0, sizeof *p);
}
