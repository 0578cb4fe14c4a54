/*
 * Step registration: description copy, buffers, slots, stats.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

cgr_status cgr__check_step(const cgr_step *s, const char *fn)
{
    if (!s)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s: step is NULL", fn);
    if (s->magic != CGR__MAGIC_STEP)
        return CGR_FAIL(CGR_STATUS_INVALID_HANDLE,
                        "%s: %p is not a live cgr_step (destroyed or not a step)", fn,
                        (const void *)s);
    return cgr__check_runtime(s->rt, fn);
}

static void copy_tensor(cgr__tensor *dst, const cgr_tensor_desc *src)
{
    dst->desc = *src;
    /* Validation limited names to 63 characters; keep our own copy. */
    strncpy(dst->name, src->name, sizeof dst->name - 1);
    dst->desc.name = dst->name;
    for (int i = src->rank; i < CGR_MAX_RANK; i++)
        dst->desc.dims[i] = 1;
    cgr__tensor_bytes(&dst->desc, &dst->bytes);
}

static void unlink_step(cgr_runtime *rt, cgr_step *s)
{
    for (cgr_step **p = &rt->steps; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            rt->n_steps--;
            return;
        }
    }
}

CGR_API cgr_status cgr_step_create(cgr_runtime *rt, const cgr_step_desc *desc, cgr_step **out)
{
    CGR_TRY(cgr__check_runtime(rt, "cgr_step_create"));
    if (!desc || !out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_create: %s is NULL",
                        desc ? "out" : "desc");
    *out = NULL;
    CGR_TRY(cgr__validate_step_desc(desc));

    cgr_step *s = calloc(1, sizeof *s);
    if (!s)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_step_create: host allocation");
    s->rt = rt;
    strncpy(s->name, desc->name ? desc->name : "step", sizeof s->name - 1);
    s->fn = desc->fn;
    s->user = desc->user;
    s->n_in = desc->n_inputs;
    s->n_out = desc->n_outputs;
    for (int i = 0; i < s->n_in; i++)
        copy_tensor(&s->in[i], &desc->inputs[i]);
    for (int i = 0; i < s->n_out; i++)
        copy_tensor(&s->out[i], &desc->outputs[i]);
    cgr__ring_init(&s->ring, (uint32_t)rt->opt.staging_slots);
    cgr__trace_init(&s->trace);
    s->stats.mode = CGR_MODE_WARMUP;

    /* The I/O buffers come from the runtime's persistent table and pinned count. */
    cgr_status st = cgr__lock(rt, "cgr_step_create");
    if (st != CGR_STATUS_OK) {
        free(s);
        return st;
    }
    int prev = 0;
    st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = cgr__step_alloc_io(s);
        cgr__device_leave(prev);
    }
    if (st != CGR_STATUS_OK) {
        cgr__unlock(rt);
        free(s);
        return st;
    }
    s->magic = CGR__MAGIC_STEP;
    s->next = rt->steps;
    rt->steps = s;
    rt->n_steps++;
    cgr__log(rt, CGR_LOG_DEBUG, "step '%s': %d inputs, %d outputs, %zu pinned bytes", s->name,
             s->n_in, s->n_out, (size_t)s->stats.pinned_bytes);
    cgr__unlock(rt);
    *out = s;
    return CGR_STATUS_OK;
}

int cgr__step_busy(const cgr_step *s)
{
    /* The slot's holder is only recorded by cgr_step_acquire; cgr_step_run
     * acquires and commits inside one locked section, invisible to others. */
    return s->waiters > 0 ||
           (s->ring.acquired && !pthread_equal(s->acquirer, pthread_self()));
}

cgr_status cgr__step_destroy_locked(cgr_step *s, int *destroyed)
{
    cgr_runtime *rt = s->rt;
    int prev = 0;
    *destroyed = 0;
    CGR_TRY(cgr__device_enter(rt, &prev));
    cgr_status st = CGR_STATUS_OK;
    /* The step's graphs may still be running on the stream. */
    cudaError_t e = cudaStreamSynchronize(rt->stream);
    if (e != cudaSuccess)
        st = cgr__cuda_fail((int)e, "cudaStreamSynchronize", __FILE__, __LINE__);
    cgr__release_graphs(s);
    cgr__philox_free(s);
    cgr__step_free_io(s);
    cgr__trace_destroy(&s->trace);
    free(s->trace_ptrs);
    unlink_step(rt, s);
    s->magic = CGR__MAGIC_DEAD;
    cgr__device_leave(prev);
    free(s);
    *destroyed = 1;
    return st;
}

CGR_API cgr_status cgr_step_destroy(cgr_step **ps)
{
    if (!ps || !*ps)
        return CGR_STATUS_OK;
    cgr_step *s = *ps;
    CGR_TRY(cgr__check_step(s, "cgr_step_destroy"));
    cgr_runtime *rt = s->rt;
    CGR_TRY(cgr__lock(rt, "cgr_step_destroy"));
    /* Freeing the events and slots under a waiting thread would crash it. */
    if (cgr__step_busy(s)) {
        cgr__unlock(rt);
        return CGR_FAIL(CGR_STATUS_BUSY,
                        "cgr_step_destroy: another thread is waiting on step '%s' or holds its "
                        "acquired slot",
                        s->name);
    }
    int destroyed = 0;
    cgr_status st = cgr__step_destroy_locked(s, &destroyed);
    cgr__unlock(rt);
    if (destroyed)
        *ps = NULL;
    return st;
}

CGR_API cgr_status cgr_step_get_stats(const cgr_step *s, cgr_step_stats *out)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_get_stats"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_get_stats: out is NULL");
    /* A consistent snapshot: counters move together under the lock. */
    CGR_TRY(cgr__lock(s->rt, "cgr_step_get_stats"));
    *out = s->stats;
    cgr__unlock(s->rt);
    return CGR_STATUS_OK;
}
