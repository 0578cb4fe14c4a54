/*
 * Step I/O memory: static device buffers (persistent, so graphs may bake
 * their addresses) and the pinned staging slots.
 *
 * All slots of a step live in one mapped pinned block, allocated once at
 * step creation and never per run. A slot holds every input and then every
 * output, each at a 256-byte aligned offset, so the staging kernel can move
 * them with 16-byte accesses. The host writes run k+1's inputs into slot
 * (k+1) % N while the GPU still reads slot k % N; ring.h explains when a
 * slot may be reused, and replay/run.c what the host waits on.
 */
#include <assert.h>
#include <string.h>

#include "fault.h"
#include "capture.h"

cgr_status cgr__step_alloc_io(cgr_step *s)
{
    cgr_runtime *rt = s->rt;
    cgr_status st = CGR_STATUS_OK;
    /* The slot's completion flag word comes first (replay/wait.c), then the
     * run's true dims at CGR__SLOT_DIMS_OFFSET, inside the same 256 bytes. */
    size_t off = CGR__ALIGN;
    for (int i = 0; i < s->n_in; i++) {
        s->in[i].slot_offset = off;
        off += cgr__align_up(s->in[i].bytes);
    }
    for (int i = 0; i < s->n_out; i++) {
        s->out[i].slot_offset = off;
        off += cgr__align_up(s->out[i].bytes);
    }
    s->slot_stride = off;
    size_t slots = s->ring.slots;
    /* cgr_step_create's validation bounds a slot so that CGR_MAX_SLOTS of them fit. */
    assert(slots <= CGR_MAX_SLOTS && s->slot_stride <= SIZE_MAX / CGR_MAX_SLOTS);
    size_t pinned = s->slot_stride * slots;

    for (int i = 0; i < s->n_in; i++)
        CGR_TRY_GOTO(cgr__persist_alloc(&rt->persist, s->in[i].bytes, &s->in[i].dev), st, fail);
    for (int i = 0; i < s->n_out; i++)
        CGR_TRY_GOTO(cgr__persist_alloc(&rt->persist, s->out[i].bytes, &s->out[i].dev), st, fail);
    void *host = NULL;
    cudaError_t e = CGR__FAULT(CGR__FAULT_PINNED_ALLOC)
                        ? cudaErrorMemoryAllocation
                        : cudaHostAlloc(&host, pinned, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
        st = cgr__cuda_fail((int)e, "cudaHostAlloc (staging slots)");
        goto fail;
    }
    s->pinned = host;
    CGR__FAULT_PINNED(pinned, +1);
    void *dev = NULL;
    CGR_CUDA_TRY_GOTO(cudaHostGetDevicePointer(&dev, host, 0), st, fail);
    s->pinned_dev = dev;
    for (size_t k = 0; k < slots; k++)
        CGR_CUDA_TRY_GOTO(cudaEventCreateWithFlags(&s->done[k], cudaEventDisableTiming), st, fail);
    CGR_CUDA_TRY_GOTO(cudaEventCreateWithFlags(&s->graph_done, cudaEventDisableTiming), st, fail);
    memset(host, 0, pinned);
    CGR_TRY_GOTO(cgr__persist_alloc(&rt->persist, CGR__SIG_BYTES(slots), (void **)&s->sig_dev),
                 st, fail);
    s->slot_word = (unsigned char *)s->sig_dev + CGR__SIG_SLOT_WORD(slots);
    s->slot_next = 0; /* zeroed with the rest below */
    if (s->n_dyn) {
        /* The run's true dims, where kernels read them (cgr_ctx_dim). */
        CGR_TRY_GOTO(cgr__persist_alloc(&rt->persist, CGR_MAX_DYN_DIMS * sizeof(int64_t),
                                        (void **)&s->dims_dev), st, fail);
        CGR_CUDA_TRY_GOTO(cudaMemsetAsync(s->dims_dev, 0, CGR_MAX_DYN_DIMS * sizeof(int64_t),
                                          rt->stream), st, fail);
    }
    /*
     * On the runtime's stream, which orders it before every graph that
     * reads the counters. Not cudaMemset: the legacy default stream waits
     * for every blocking stream, and touching it while another thread's
     * runtime captures fails that capture (docs/threading.md).
     */
    CGR_CUDA_TRY_GOTO(cudaMemsetAsync(s->sig_dev, 0, CGR__SIG_BYTES(slots), rt->stream), st, fail);
    s->stats.pinned_bytes = pinned;
    return CGR_STATUS_OK;

fail:
    cgr__step_free_io(s);
    return st;
}

void cgr__step_free_io(cgr_step *s)
{
    cgr_runtime *rt = s->rt;
    for (uint32_t k = 0; k < CGR_MAX_SLOTS; k++)
        if (s->done[k])
            (void)cudaEventDestroy(s->done[k]);
    if (s->graph_done)
        (void)cudaEventDestroy(s->graph_done);
    if (s->pinned) {
        CGR__FAULT_PINNED(s->slot_stride * s->ring.slots, -1);
        (void)cudaFreeHost(s->pinned);
    }
    cgr__persist_free(&rt->persist, s->sig_dev);
    cgr__persist_free(&rt->persist, s->dims_dev);
    for (int i = 0; i < s->n_in; i++)
        cgr__persist_free(&rt->persist, s->in[i].dev);
    for (int i = 0; i < s->n_out; i++)
        cgr__persist_free(&rt->persist, s->out[i].dev);
}
