/*
 * Option and description checks. Pure C with no CUDA call, so the unit
 * suite covers every rule on a machine without a GPU. Each failure names
 * the field and the accepted range.
 */
#include <string.h>

#include "internal.h"

#define CGR__NAME_MAX 63
#define CGR__MIB ((size_t)1 << 20)
#define CGR__GIB ((size_t)1 << 30)

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

CGR_API cgr_status cgr_options_init(cgr_options *opt)
{
    if (!opt)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options_init: opt is NULL");
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->device = 0;
    opt->staging_slots = 2;
    opt->warmup_runs = 2;
    opt->log_level = CGR_LOG_OFF;
    opt->arena_limit = 16 * CGR__GIB;
    /* docs/staging.md: on the H200 a zero-copy kernel node was as fast as or
     * faster than a memcpy node at every size measured, 4 KiB to 16 MiB. */
    opt->zero_copy_max_bytes = 16 * CGR__MIB;
    opt->wait_spin_us = 200;
    opt->capture = 1;
    return CGR_STATUS_OK;
}

cgr_status cgr__validate_options(const cgr_options *o)
{
    if (o->struct_size != sizeof *o)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.struct_size is %zu, expected %zu: initialize the options "
                        "with cgr_options_init()",
                        o->struct_size, sizeof *o);
    if (o->device < 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options.device is %d, must be >= 0",
                        o->device);
    if (o->staging_slots < 2 || o->staging_slots > CGR_MAX_SLOTS)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.staging_slots is %d, must be 2..%d", o->staging_slots,
                        CGR_MAX_SLOTS);
    if (o->warmup_runs < 1 || o->warmup_runs > CGR_MAX_WARMUP)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.warmup_runs is %d, must be 1..%d (the first run records "
                        "the scratch trace)",
                        o->warmup_runs, CGR_MAX_WARMUP);
    if ((unsigned)o->log_level > CGR_LOG_DEBUG)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options.log_level is %d, must be 0..%d",
                        (int)o->log_level, CGR_LOG_DEBUG);
    if (o->arena_limit < CGR__MIB || o->arena_limit > ((size_t)1 << 40))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.arena_limit is %zu, must be 1 MiB..1 TiB", o->arena_limit);
    if (o->zero_copy_max_bytes > CGR__GIB)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.zero_copy_max_bytes is %zu, must be <= 1 GiB",
                        o->zero_copy_max_bytes);
    if (o->capture != 0 && o->capture != 1)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options.capture is %d, must be 0 or 1",
                        o->capture);
    if (o->wait_spin_us > 1000000)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.wait_spin_us is %u, must be <= 1000000", o->wait_spin_us);
    if (!all_zero(o->reserved, sizeof o->reserved))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options.reserved must be zero");
    return CGR_STATUS_OK;
}

CGR_API size_t cgr_dtype_size(cgr_dtype t)
{
    static const size_t sizes[CGR_DTYPE_COUNT_] = {4, 2, 2, 8, 4, 8, 1};
    return (unsigned)t < CGR_DTYPE_COUNT_ ? sizes[t] : 0;
}

CGR_API const char *cgr_dtype_name(cgr_dtype t)
{
    static const char *names[CGR_DTYPE_COUNT_] = {"f32", "f16", "bf16", "f64", "i32", "i64", "u8"};
    return (unsigned)t < CGR_DTYPE_COUNT_ ? names[t] : "invalid";
}

cgr_status cgr__tensor_bytes(const cgr_tensor_desc *t, size_t *bytes)
{
    const char *name = t->name ? t->name : "(null)";
    if (!t->name || !t->name[0])
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor name is NULL or empty");
    if (strlen(t->name) > CGR__NAME_MAX)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor name \"%.20s...\" is longer than %d",
                        t->name, CGR__NAME_MAX);
    size_t es = cgr_dtype_size(t->dtype);
    if (es == 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor \"%s\": dtype %d is not a cgr_dtype",
                        name, (int)t->dtype);
    if (t->rank < 0 || t->rank > CGR_MAX_RANK)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor \"%s\": rank %d, must be 0..%d", name,
                        t->rank, CGR_MAX_RANK);
    size_t n = es;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i];
        if (d < 1)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "tensor \"%s\": dims[%d] is %lld, must be >= 1", name, i, (long long)d);
        if ((uint64_t)d > SIZE_MAX / n)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "tensor \"%s\": byte size overflows at dims[%d] = %lld", name, i,
                            (long long)d);
        n *= (size_t)d;
    }
    /* Leave room for rounding to the staging alignment later. */
    if (n > SIZE_MAX / 4)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor \"%s\": %zu bytes is too large", name,
                        n);
    *bytes = n;
    return CGR_STATUS_OK;
}

static cgr_status check_list(const char *what, const cgr_tensor_desc *list, int n)
{
    if (n < 0 || n > CGR_MAX_TENSORS)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.n_%s is %d, must be 0..%d",
                        what, n, CGR_MAX_TENSORS);
    if (n > 0 && !list)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.%s is NULL but n_%s is %d",
                        what, what, n);
    for (int i = 0; i < n; i++) {
        size_t bytes;
        cgr_status s = cgr__tensor_bytes(&list[i], &bytes);
        if (s != CGR_STATUS_OK) {
            cgr__error_append("in %s[%d]", what, i);
            return s;
        }
    }
    return CGR_STATUS_OK;
}

static int same_name(const cgr_tensor_desc *a, const cgr_tensor_desc *b)
{
    return strcmp(a->name, b->name) == 0;
}

cgr_status cgr__validate_step_desc(const cgr_step_desc *d)
{
    if (d->struct_size != sizeof *d)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_desc.struct_size is %zu, expected %zu: initialize it with "
                        "cgr_step_desc_init()",
                        d->struct_size, sizeof *d);
    if (!d->fn)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.fn is NULL");
    if (d->name && strlen(d->name) > CGR__NAME_MAX)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "step name is longer than %d characters",
                        CGR__NAME_MAX);
    if (!all_zero(d->reserved, sizeof d->reserved))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.reserved must be zero");
    CGR_TRY(check_list("inputs", d->inputs, d->n_inputs));
    CGR_TRY(check_list("outputs", d->outputs, d->n_outputs));
    /* Names identify tensors in messages, so they must be unique. */
    int n = d->n_inputs + d->n_outputs;
    for (int i = 0; i < n; i++) {
        const cgr_tensor_desc *a = i < d->n_inputs ? &d->inputs[i] : &d->outputs[i - d->n_inputs];
        for (int j = i + 1; j < n; j++) {
            const cgr_tensor_desc *b =
                j < d->n_inputs ? &d->inputs[j] : &d->outputs[j - d->n_inputs];
            if (same_name(a, b))
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                "tensor name \"%s\" is used twice in the step", a->name);
        }
    }
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_desc_init(cgr_step_desc *desc)
{
    if (!desc)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc_init: desc is NULL");
    memset(desc, 0, sizeof *desc);
    desc->struct_size = sizeof *desc;
    return CGR_STATUS_OK;
}
