/*
 * Step registration: description copy, buffers, slots, stats.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "lib.h"
#include "replay.h"

/* A call that validation made already on the same description, so it cannot fail here. */
static void validated(cgr_status st)
{
    assert(st == CGR_STATUS_OK);
    (void)st;
}

static void copy_tensor(cgr__tensor *dst, const cgr_tensor_desc *src)
{
    dst->desc = *src;
    /* Validation limited names to 63 characters; keep our own copy. */
    strncpy(dst->name, src->name, sizeof dst->name - 1);
    dst->desc.name = dst->name;
    for (int i = src->rank; i < CGR_MAX_RANK; i++)
        dst->desc.dims[i] = 1;
    validated(cgr__tensor_bytes(&dst->desc, &dst->bytes));
    memset(dst->dyn, -1, sizeof dst->dyn);
    /* Until a run says otherwise the step is at its declared shape. */
    dst->cur = dst->desc;
    dst->cur_bytes = dst->bytes;
}

/*
 * Dynamic dims: names, maxima, which tensor axes they size, padding values,
 * and the shape table that decides what each run does. A step without
 * dynamic dims gets a manager too, with no dims: its one shape warms up,
 * captures and replays through the same code.
 */
static cgr_status setup_shapes(cgr_step *s, const cgr_step_desc *d)
{
    const cgr_options *o = &s->rt->opt;
    s->n_dyn = d->n_dyn_dims;
    cgr__shapes_dim_desc dims[CGR_MAX_DYN_DIMS];
    memset(dims, 0, sizeof dims);
    for (int j = 0; j < s->n_dyn; j++) {
        const cgr_dyn_dim *dd = &d->dyn_dims[j];
        validated(cgr__dyn_policy(dd, j, &dims[j].policy));
        dims[j].name = dd->name; /* copied by the table */
    }
    for (int u = 0; u < d->n_dim_uses; u++) {
        const cgr_dim_use *x = &d->dim_uses[u];
        cgr__tensor *t = x->output ? &s->out[x->tensor] : &s->in[x->tensor];
        t->dyn[x->axis] = (int8_t)x->dim;
        t->n_dyn_axes++;
    }
    if (s->n_dyn && d->input_pad)
        for (int i = 0; i < s->n_in; i++)
            validated(cgr__pad_bytes(s->in[i].desc.dtype, d->input_pad[i], s->in[i].pad,
                                     &s->in[i].pad_nonzero));
    const cgr__shapes_config cfg = {
        .step_name = s->name,
        .dims = dims,
        .n_dims = (uint32_t)s->n_dyn,
        .warmup_runs = (uint32_t)o->warmup_runs,
        .max_entries = (uint32_t)o->shape_cache_entries,
        .max_bytes = o->shape_cache_bytes,
        .churn_k = (uint32_t)o->churn_shapes,
        .churn_window = (uint64_t)o->churn_window,
        .churn_stable = (uint64_t)o->churn_stable,
        .keep_spare = o->advanced.shape_spare,
    };
    s->shapes = calloc(1, sizeof *s->shapes);
    /* cfg comes from options and a description that passed validation: only memory can fail. */
    if (!s->shapes || cgr__shapes_init(s->shapes, &cfg) != CGR_STATUS_OK)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_step_create: step '%s': shape table",
                        s->name);
    s->plans = calloc(s->shapes->capacity, sizeof *s->plans);
    if (!s->plans)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_step_create: scratch plans of step '%s'",
                        s->name);
    return CGR_STATUS_OK;
}

/* Frees every graph the step still holds and its scratch plans. */
static void release_shapes(cgr_step *s)
{
    if (!s->shapes)
        return;
    cgr__shapes_freed e;
    while (cgr__shapes_drain(s->shapes, &e) == CGR_STATUS_OK)
        cgr__graph_free(e.payload);
    if (s->plans)
        for (uint32_t i = 0; i < s->shapes->capacity; i++)
            cgr__trace_destroy(&s->plans[i].trace);
    free(s->plans);
    s->plans = NULL;
    cgr__shapes_destroy(s->shapes);
    free(s->shapes);
    s->shapes = NULL;
}

static cgr_status step_create(cgr_runtime *rt, const cgr_step_desc *desc, cgr_step **out)
{
    /* First, so that every refusal below leaves *out NULL (docs/errors.md). */
    if (out)
        *out = NULL;
    CGR_TRY(cgr__check_runtime(rt, "cgr_step_create"));
    if (!desc || !out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_create: %s is NULL",
                        desc ? "out" : "desc");
    /* From here on only the loaded copy is read: it follows the struct_size rule. */
    cgr_step_desc d;
    CGR_TRY(cgr__step_desc_load(desc, &d));
    desc = &d;

    cgr_step *s = calloc(1, sizeof *s);
    if (!s)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_step_create: host allocation");
    s->rt = rt;
    strncpy(s->name, desc->name && desc->name[0] ? desc->name : "step", sizeof s->name - 1);
    for (size_t i = 0; s->name[i]; i++) {
        const char c = s->name[i];
        const int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
        s->file_name[i] = ok ? c : '_';
    }
    s->fn = desc->fn;
    s->user = desc->user;
    s->armable = desc->armable;
    s->n_in = desc->n_inputs;
    s->n_out = desc->n_outputs;
    for (int i = 0; i < s->n_in; i++)
        copy_tensor(&s->in[i], &desc->inputs[i]);
    for (int i = 0; i < s->n_out; i++)
        copy_tensor(&s->out[i], &desc->outputs[i]);
    cgr__ring_init(&s->ring, (uint32_t)rt->opt.staging_slots);
    s->stats.mode = CGR_MODE_WARMUP;
    int prev = 0;
    cgr_status st = setup_shapes(s, desc);
    /* The I/O buffers come from the runtime's persistent table and pinned count. */
    if (st == CGR_STATUS_OK)
        st = cgr__lock(rt, "cgr_step_create");
    if (st != CGR_STATUS_OK)
        goto fail;
    st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = cgr__step_alloc_io(s);
        cgr__device_leave(prev);
    }
    if (st != CGR_STATUS_OK) {
        cgr__unlock(rt);
        goto fail;
    }
    cgr__profile_attach(s);
    s->magic = CGR__MAGIC_STEP;
    s->next = rt->steps;
    rt->steps = s;
    cgr__log(rt, CGR_LOG_DEBUG, "step '%s': %d inputs, %d outputs, %zu pinned bytes", s->name,
             s->n_in, s->n_out, (size_t)s->stats.pinned_bytes);
    cgr__unlock(rt);
    *out = s;
    return CGR_STATUS_OK;

fail:
    release_shapes(s);
    free(s);
    return st;
}

cgr_status cgr__step_check_idle(const cgr_step *s, const char *fn)
{
    /* The slot's holder is only recorded by cgr_step_acquire; cgr_step_run
     * acquires and commits inside one locked section, invisible to others. */
    if (s->waiters > 0 || (s->ring.acquired && !pthread_equal(s->acquirer, pthread_self())))
        return CGR_FAIL(CGR_STATUS_BUSY,
                        "%s: another thread is waiting on step '%s' or holds its acquired slot",
                        fn, s->name);
    return CGR_STATUS_OK;
}

void cgr__step_free(cgr_step *s)
{
    cgr__profile_detach(s);
    release_shapes(s);
    cgr__persist_free(&s->rt->persist, s->philox_dev);
    cgr__step_free_io(s);
    for (cgr_step **p = &s->rt->steps; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            cgr__runtime_stats_add(&s->rt->gone, &s->stats);
            break;
        }
    }
    s->magic = CGR__MAGIC_DEAD;
    free(s);
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
    cgr_status st = cgr__step_check_idle(s, "cgr_step_destroy");
    int prev = 0;
    if (st == CGR_STATUS_OK)
        st = cgr__device_enter(rt, &prev);
    if (st != CGR_STATUS_OK) {
        cgr__unlock(rt);
        return st;
    }
    /* The step's graphs may still be running on the stream. */
    cudaError_t e = cgr__sync_stream(rt);
    if (e != cudaSuccess)
        st = cgr__cuda_fail((int)e, "cudaStreamSynchronize");
    cgr__step_free(s);
    cgr__device_leave(prev);
    cgr__unlock(rt);
    *ps = NULL;
    return st;
}

CGR_API cgr_status cgr_step_create(cgr_runtime *rt, const cgr_step_desc *desc, cgr_step **out)
{
    cgr_status st = step_create(rt, desc, out);
    if (st != CGR_STATUS_OK)
        cgr__error_lead("cgr_step_create");
    return st;
}
