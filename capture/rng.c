/*
 * Graph-safe random numbers: a step's Philox seed and offset live in device
 * memory. Kernels read them there instead of taking them as (frozen)
 * kernel arguments, and a node at the end of the step advances the offset
 * by the counters the run reserved. Eager runs do the same, so the k-th
 * run of a step draws the same numbers whether it was replayed or not.
 */
#include "capture.h"

CGR_API cgr_status cgr_ctx_philox(cgr_ctx *c, uint64_t count, const cgr_philox_state **state,
                                  uint64_t *sub)
{
    CGR_TRY(cgr__check_ctx(c, "cgr_ctx_philox"));
    if (!state || !sub)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_philox: %s is NULL",
                        state ? "sub" : "state");
    if (count == 0 || count > UINT64_MAX / 2 - c->philox_used)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_ctx_philox: count %llu out of range",
                        (unsigned long long)count);
    cgr_step *s = c->step;
    /*
     * An armed run that is released or outlives arm_timeout_us still runs
     * its graph once on whatever the slot holds, and the offset advance
     * with it: the numbers of every later run would then differ from the
     * eager sequence.
     */
    if (s->armable)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_ctx_philox: step '%s' is armable; an armed run that is released "
                        "or times out still runs once and would advance the random offset; "
                        "draw random numbers in a step that is not armable",
                        s->name);
    if (!s->philox_dev) {
        if (c->mode == CGR__CTX_CAPTURE)
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_ctx_philox: first called during capture; call it on every run");
        /* cgr's own failures fail the run with their status (cgr__ctx_fail). */
        void *p = NULL;
        cgr_status st = cgr__persist_alloc(&c->rt->persist, sizeof(cgr_philox_state), &p);
        if (st != CGR_STATUS_OK)
            return cgr__ctx_fail(c, st);
        cudaError_t e = cudaMemcpyAsync(p, &s->philox_init, sizeof s->philox_init,
                                        cudaMemcpyHostToDevice, c->rt->stream);
        if (e != cudaSuccess) {
            /* Not kept: a state that was never seeded would be used as is by the next run. */
            cgr__persist_free(&c->rt->persist, p);
            return cgr__ctx_fail(c, cgr__cuda_fail((int)e, "cudaMemcpyAsync (seed)"));
        }
        s->philox_dev = p;
    }
    *state = s->philox_dev;
    *sub = c->philox_used;
    c->philox_used += count;
    return CGR_STATUS_OK;
}

cgr_status cgr__philox_finish(cgr_ctx *c)
{
    cgr_step *s = c->step;
    /* Per shape: a graph bakes the advance in, and a bigger bucket may draw more. */
    cgr__shape_plan *p = c->plan;
    if (!p->philox_known) {
        p->philox_per_run = c->philox_used;
        p->philox_known = 1;
    } else if (c->philox_used != p->philox_per_run) {
        return CGR_FAIL(CGR_STATUS_TRACE_MISMATCH,
                        "step '%s' reserved %llu Philox counters, its first run of this shape "
                        "%llu; a step must reserve the same on every run of a shape",
                        s->name, (unsigned long long)c->philox_used,
                        (unsigned long long)p->philox_per_run);
    }
    if (c->philox_used)
        CGR_CUDA_TRY(cgr__philox_advance(s->philox_dev, c->philox_used, c->rt->stream));
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_set_seed(cgr_step *s, uint64_t seed)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_set_seed"));
    /* Locked: the copy must not land inside another thread's capture of the stream. */
    CGR_TRY(cgr__lock(s->rt, "cgr_step_set_seed"));
    if (s->armed) {
        /* Its graph is on the stream already: the seed would land after the run it is for. */
        cgr__unlock(s->rt);
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_step_set_seed: step '%s' has an armed run acquired "
                        "(CGR_ACQUIRE_ARM); launch or release it first",
                        s->name);
    }
    s->philox_init.seed = seed;
    s->philox_init.offset = 0;
    cgr_status st = CGR_STATUS_OK;
    int prev = 0;
    if (s->philox_dev && (st = cgr__device_enter(s->rt, &prev)) == CGR_STATUS_OK) {
        /* Stream-ordered, so it lands between the runs before and after it. */
        cudaError_t e = cudaMemcpyAsync(s->philox_dev, &s->philox_init, sizeof s->philox_init,
                                        cudaMemcpyHostToDevice, s->rt->stream);
        cgr__device_leave(prev);
        if (e != cudaSuccess)
            st = cgr__cuda_fail((int)e, "cudaMemcpyAsync (seed)");
    }
    cgr__unlock(s->rt);
    return st;
}
