/*
 * Option and description checks. Pure C with no CUDA call, so the unit
 * suite covers every rule on a machine without a GPU. Each failure names
 * the field and the accepted range.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "bucket.h"
#include "lib.h"

#define CGR__MIB ((size_t)1 << 20)
#define CGR__GIB ((size_t)1 << 30)

/* ---- options ---------------------------------------------------------------- */

static void options_defaults(cgr_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->struct_size = sizeof *opt;
    opt->device = 0;
    opt->staging_slots = 2;
    opt->warmup_runs = 2;
    opt->log_level = CGR_LOG_OFF;
    opt->arena_limit = 16 * CGR__GIB;
    /* On the H200 a zero-copy kernel node was as fast as or faster than a
     * memcpy node at every size measured, up to 16 MiB (docs/benchmarks.md,
     * "Staging: zero-copy kernels against copy nodes"). */
    opt->advanced.zero_copy_max_bytes = 16 * CGR__MIB;
    opt->advanced.wait_spin_us = 200;
    opt->arm_timeout_us = 100000;
    opt->capture = 1;
    /* W-serve's 7 buckets fit with room to spare; docs/shapes.md has the guard's reasoning. */
    opt->shape_cache_entries = 16;
    opt->churn_shapes = 8;
    opt->churn_window = 64;
    opt->churn_stable = 32;
    opt->frozen_check = 1;
    opt->profile.skip = 10;
}

CGR_API cgr_status cgr_options_init_size(cgr_options *opt, size_t struct_size)
{
    if (!opt)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_options_init: opt is NULL");
    cgr_options d;
    options_defaults(&d);
    return cgr__struct_init(opt, struct_size, &d, sizeof d, CGR__OPTIONS_MIN_SIZE, "cgr_options");
}

#define CGR__PROFILE_RUNS_MAX 1000000
#define CGR__PROFILE_SKIP_MAX 1000000000
#define CGR__RECHECK_MAX 1000000000

/* A whole decimal number in 0..max, or -1. */
static long parse_count(const char *s, size_t n, long max)
{
    long v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
        if (v > max)
            return -1;
    }
    return v;
}

cgr_status cgr__profile_parse(const char *text, cgr_profile_options *out, const char **path)
{
    static const char usage[] = "CGR_PROFILE is \"%s\": %s; write RUNS[,skip=N][,path=PREFIX], "
                                "for example CGR_PROFILE=200,skip=50,path=/tmp/prof";
    *path = NULL;
    const char *p = text;
    size_t n = strcspn(p, ",");
    long runs = parse_count(p, n, CGR__PROFILE_RUNS_MAX);
    if (runs < 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, usage, text,
                        "it must start with the runs per mode, 0..1000000");
    out->runs = (int)runs;
    p += n;
    while (*p == ',') {
        p++;
        n = strcspn(p, ",");
        if (n > 5 && !strncmp(p, "skip=", 5)) {
            long v = parse_count(p + 5, n - 5, CGR__PROFILE_SKIP_MAX);
            if (v < 0)
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, usage, text,
                                "skip must be a number, 0..1000000000");
            out->skip = (int)v;
        } else if (n > 5 && !strncmp(p, "path=", 5)) {
            /* The prefix is the rest: a path may hold commas. */
            *path = p + 5;
            return CGR_STATUS_OK;
        } else {
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, usage, text,
                            "after the runs come skip=N and path=PREFIX");
        }
        p += n;
    }
    return CGR_STATUS_OK;
}

/* INVALID_ARGUMENT, "<what> is <v>, must be <lo>..<hi><note>", unless v is in lo..hi. */
static cgr_status in_range(const char *what, long long v, long long lo, long long hi,
                           const char *note)
{
    if (v >= lo && v <= hi)
        return CGR_STATUS_OK;
    if (hi == INT_MAX)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s is %lld, must be >= %lld%s", what, v,
                        lo, note);
    return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "%s is %lld, must be %lld..%lld%s", what, v, lo,
                    hi, note);
}

/* The range of every field of options that passed the struct_size rule. */
static cgr_status check_options(const cgr_options *o)
{
    const struct {
        const char *what;
        long long v, lo, hi;
        const char *note;
    } fields[] = {
        {"cgr_options.device", o->device, 0, INT_MAX, ""},
        {"cgr_options.staging_slots", o->staging_slots, 2, CGR_MAX_SLOTS, ""},
        {"cgr_options.warmup_runs", o->warmup_runs, 1, CGR_MAX_WARMUP,
         " (the first run records the scratch trace)"},
        {"cgr_options.log_level", (long long)o->log_level, 0, CGR_LOG_DEBUG, ""},
        {"cgr_options.capture", o->capture, 0, 1, ""},
        {"cgr_options.advanced.wait_spin_us", o->advanced.wait_spin_us, 0, 1000000, ""},
        {"cgr_options.shape_cache_entries", o->shape_cache_entries, 1, 4096, ""},
        {"cgr_options.churn_shapes", o->churn_shapes, 0, 64, " (0: guard off)"},
        {"cgr_options.arm_timeout_us", o->arm_timeout_us, 1, 60000000, ""},
        {"cgr_options.advanced.shape_spare", o->advanced.shape_spare, 0, 1, ""},
        {"cgr_options.diagnose", o->diagnose, 0, 1, ""},
        {"cgr_options.frozen_check", o->frozen_check, 0, 1, ""},
        {"cgr_options.profile.runs", o->profile.runs, 0, CGR__PROFILE_RUNS_MAX,
         " (0: no profile)"},
        {"cgr_options.profile.skip", o->profile.skip, 0, CGR__PROFILE_SKIP_MAX, ""},
        {"cgr_options.frozen_recheck", o->frozen_recheck, 0, CGR__RECHECK_MAX,
         " (0: no recheck)"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CGR_TRY(in_range(fields[i].what, fields[i].v, fields[i].lo, fields[i].hi,
                         fields[i].note));
    if (o->arena_limit < CGR__MIB || o->arena_limit > ((size_t)1 << 40))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.arena_limit is %zu, must be 1 MiB..1 TiB", o->arena_limit);
    if (o->advanced.zero_copy_max_bytes > CGR__GIB)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.advanced.zero_copy_max_bytes is %zu, must be <= 1 GiB",
                        o->advanced.zero_copy_max_bytes);
    if (o->churn_shapes > 0 && (o->churn_window < o->churn_shapes || o->churn_stable < 1))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_options.churn_window is %d and churn_stable %d: the window must be "
                        ">= churn_shapes (%d) and churn_stable >= 1",
                        o->churn_window, o->churn_stable, o->churn_shapes);
    return CGR_STATUS_OK;
}

cgr_status cgr__options_load(const cgr_options *opt, cgr_options *out)
{
    cgr_options o;
    options_defaults(&o);
    CGR_TRY(cgr__struct_in(&o, sizeof o, opt, CGR__OPTIONS_MIN_SIZE, "cgr_options"));
    CGR_TRY(check_options(&o));
    *out = o;
    return CGR_STATUS_OK;
}

/* *field = a copy of src (NULL or "" gives NULL). */
static cgr_status own_string(const char **field, const char *src, const char *what)
{
    *field = NULL;
    if (!src || !src[0])
        return CGR_STATUS_OK;
    size_t n = strlen(src) + 1;
    char *copy = malloc(n);
    if (!copy)
        return CGR_FAIL(CGR_STATUS_OUT_OF_MEMORY, "cgr_runtime_create: copying %s", what);
    memcpy(copy, src, n);
    *field = copy;
    return CGR_STATUS_OK;
}

cgr_status cgr__options_own_strings(cgr_options *o)
{
    /* The caller's strings are read here and nowhere else: o holds only copies after. */
    const char *dir = o->dump_dir ? o->dump_dir : getenv("CGR_DUMP_DIR");
    const char *allow = o->frozen_allow;
    const char *ppath = o->profile.path;
    o->dump_dir = o->frozen_allow = o->profile.path = NULL;
    const char *diagnose = getenv("CGR_DIAGNOSE");
    if (diagnose && diagnose[0] && strcmp(diagnose, "0") != 0)
        o->diagnose = 1;
    /* CGR_FROZEN_RECHECK only when the program left the recheck off. */
    const char *recheck = o->frozen_recheck == 0 ? getenv("CGR_FROZEN_RECHECK") : NULL;
    if (recheck && recheck[0]) {
        long v = parse_count(recheck, strlen(recheck), CGR__RECHECK_MAX);
        if (v < 0)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "CGR_FROZEN_RECHECK is \"%s\": it must be the replays between "
                            "rechecks, a whole number 0..%d",
                            recheck, CGR__RECHECK_MAX);
        o->frozen_recheck = (unsigned)v;
    }
    /* CGR_PROFILE only when the program left the profile off. */
    const char *profile = o->profile.runs == 0 ? getenv("CGR_PROFILE") : NULL;
    if (profile && profile[0]) {
        const char *env_path = NULL;
        CGR_TRY(cgr__profile_parse(profile, &o->profile, &env_path));
        if (env_path)
            ppath = env_path;
    }
    cgr_status st = own_string(&o->dump_dir, dir, "dump_dir");
    if (st == CGR_STATUS_OK)
        st = own_string(&o->frozen_allow, allow, "frozen_allow");
    if (st == CGR_STATUS_OK)
        st = own_string(&o->profile.path, ppath, "profile.path");
    if (st != CGR_STATUS_OK)
        cgr__options_free_strings(o);
    return st;
}

void cgr__options_free_strings(cgr_options *o)
{
    free((void *)o->dump_dir);
    free((void *)o->frozen_allow);
    free((void *)o->profile.path);
    o->dump_dir = o->frozen_allow = o->profile.path = NULL;
}

cgr_status cgr__tensor_bytes(const cgr_tensor_desc *t, size_t *bytes)
{
    const char *name = t->name;
    if (!name || !name[0])
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor name is NULL or empty");
    if (strlen(name) > CGR_MAX_NAME)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "tensor name \"%.20s...\" is longer than %d",
                        name, CGR_MAX_NAME);
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

/* One of the description's counted lists: n_<what> in 0..max, and <what> set unless it is 0. */
static cgr_status check_count(const char *what, int n, const void *list, int max)
{
    char field[40];
    snprintf(field, sizeof field, "cgr_step_desc.n_%s", what);
    CGR_TRY(in_range(field, n, 0, max, ""));
    if (n > 0 && !list)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.%s is NULL but n_%s is %d",
                        what, what, n);
    return CGR_STATUS_OK;
}

/*
 * A list of tensors, each valid. Their bytes, each rounded up as a staging
 * slot lays them out (capture/io.c), are added to *slot, which
 * CGR_MAX_SLOTS slots must not overflow.
 */
static cgr_status check_list(const char *what, const cgr_tensor_desc *list, int n, size_t *slot)
{
    CGR_TRY(check_count(what, n, list, CGR_MAX_TENSORS));
    for (int i = 0; i < n; i++) {
        size_t bytes = 0;
        cgr_status s = cgr__tensor_bytes(&list[i], &bytes);
        if (s != CGR_STATUS_OK) {
            cgr__error_append("in %s[%d]", what, i);
            return s;
        }
        const size_t a = cgr__align_up(bytes);
        if (a > SIZE_MAX / CGR_MAX_SLOTS - *slot)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s[%d] (\"%s\"): the step's inputs and outputs together overflow "
                            "a staging slot",
                            what, i, list[i].name);
        *slot += a;
    }
    return CGR_STATUS_OK;
}

/* A dynamic dim's bucket policy, or why it is refused. */
cgr_status cgr__dyn_policy(const cgr_dyn_dim *dd, int j, cgr__bucket_policy *p)
{
    if (!dd->name || !dd->name[0] || strlen(dd->name) > CGR_MAX_NAME)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "dyn_dims[%d].name is NULL, empty or longer than %d characters", j,
                        CGR_MAX_NAME);
    if (dd->buckets) {
        if (dd->n_buckets < 1 || dd->n_buckets > CGR_MAX_BUCKETS)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dyn_dims[%d] (\"%s\"): n_buckets is %d, must be 1..%d", j, dd->name,
                            dd->n_buckets, CGR_MAX_BUCKETS);
        if (cgr__bucket_init_list(p, dd->buckets, (uint32_t)dd->n_buckets) != CGR_STATUS_OK)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dyn_dims[%d] (\"%s\"): buckets must be strictly increasing and "
                            "start at >= 1", j, dd->name);
        if (dd->max != dd->buckets[dd->n_buckets - 1])
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dyn_dims[%d] (\"%s\"): max is %lld but the last bucket is %lld", j,
                            dd->name, (long long)dd->max,
                            (long long)dd->buckets[dd->n_buckets - 1]);
        return CGR_STATUS_OK;
    }
    if (dd->n_buckets != 0)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "dyn_dims[%d] (\"%s\"): n_buckets is %d without a bucket list", j,
                        dd->name, dd->n_buckets);
    if (dd->max < 1)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "dyn_dims[%d] (\"%s\"): max is %lld, must be >= 1", j, dd->name,
                        (long long)dd->max);
    return cgr__bucket_init_pow2(p, dd->max);
}

/*
 * v in a 16-bit float format with `man` stored mantissa bits and exponent
 * bias `bias` (half: 10, 15; bfloat16: 7, 127), rounded once from the
 * double to the nearest value, ties to even, as IEEE 754 converts. Going
 * through float first would round twice: 1 + 2^-11 + 2^-40 becomes the
 * float 1 + 2^-11, a tie that half breaks down to 1.0, where the nearest
 * half is 1 + 2^-10. NaN becomes the quiet NaN; too large, infinity.
 */
static uint16_t to_binary16(double v, int man, int bias)
{
    const uint16_t sign = signbit(v) ? 0x8000u : 0u;
    const uint16_t inf = (uint16_t)(0x7fffu & ~((1u << man) - 1u));
    if (isnan(v))
        return (uint16_t)(sign | inf | (1u << (man - 1)));
    double a = fabs(v);
    if (isinf(a))
        return (uint16_t)(sign | inf);
    /*
     * In units of the last place (man + 1 significant bits, never finer than
     * the smallest subnormal) the scalings and the fraction are exact, so the
     * one rounding is the tie rule here, whatever the caller's rounding mode.
     */
    const int sub_exp = 1 - bias - man;
    int e;
    (void)frexp(a, &e);
    int q = e - (man + 1) < sub_exp ? sub_exp : e - (man + 1);
    double units = ldexp(a, -q), n = floor(units), frac_part = units - n;
    if (frac_part > 0.5 || (frac_part == 0.5 && fmod(n, 2.0) != 0.0))
        n += 1.0;
    double r = ldexp(n, q);
    if (r > ldexp(2.0 - ldexp(1.0, -man), bias))
        return (uint16_t)(sign | inf);
    if (r < ldexp(1.0, 1 - bias)) /* subnormal or zero: a count of the smallest step */
        return (uint16_t)(sign | (uint16_t)ldexp(r, -sub_exp));
    double m = frexp(r, &e); /* r = m * 2^e, 1/2 <= m < 1 */
    uint32_t field = (uint32_t)(e - 1 + bias), frac = (uint32_t)ldexp(2.0 * m - 1.0, man);
    return (uint16_t)(sign | (field << man) | frac);
}

/* One element of `value` in dtype t, or INVALID_ARGUMENT when it does not fit. */
cgr_status cgr__pad_bytes(cgr_dtype t, double v, unsigned char out[8], int *nonzero)
{
    static const unsigned char zero[8];
    unsigned char b[8] = {0};
    switch (t) {
    case CGR_DTYPE_F32: {
        float f = (float)v;
        memcpy(b, &f, 4);
        break;
    }
    case CGR_DTYPE_F64:
        memcpy(b, &v, 8);
        break;
    case CGR_DTYPE_F16:
    case CGR_DTYPE_BF16: {
        uint16_t h = t == CGR_DTYPE_F16 ? to_binary16(v, 10, 15) : to_binary16(v, 7, 127);
        memcpy(b, &h, 2);
        break;
    }
    case CGR_DTYPE_I32:
    case CGR_DTYPE_I64:
    case CGR_DTYPE_U8: {
        double lo = t == CGR_DTYPE_U8 ? 0.0 : t == CGR_DTYPE_I32 ? -2147483648.0
                                                                 : -9223372036854775808.0;
        double hi = t == CGR_DTYPE_U8 ? 255.0 : t == CGR_DTYPE_I32 ? 2147483647.0
                                                                   : 9223372036854774784.0;
        if (!(v == floor(v)) || v < lo || v > hi)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "padding value %g is not a %s", v, cgr_dtype_name(t));
        if (t == CGR_DTYPE_U8)
            b[0] = (unsigned char)v;
        else if (t == CGR_DTYPE_I32) {
            int32_t i = (int32_t)v;
            memcpy(b, &i, 4);
        } else {
            int64_t i = (int64_t)v;
            memcpy(b, &i, 8);
        }
        break;
    }
    default:
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "dtype %d is not a cgr_dtype", (int)t);
    }
    memcpy(out, b, 8);
    *nonzero = memcmp(b, zero, sizeof zero) != 0;
    return CGR_STATUS_OK;
}

static cgr_status check_dyn(const cgr_step_desc *d)
{
    CGR_TRY(check_count("dyn_dims", d->n_dyn_dims, d->dyn_dims, CGR_MAX_DYN_DIMS));
    CGR_TRY(check_count("dim_uses", d->n_dim_uses, d->dim_uses, CGR_MAX_TENSORS * CGR_MAX_RANK));
    for (int j = 0; j < d->n_dyn_dims; j++) {
        cgr__bucket_policy p;
        CGR_TRY(cgr__dyn_policy(&d->dyn_dims[j], j, &p));
        for (int k = 0; k < j; k++)
            if (strcmp(d->dyn_dims[k].name, d->dyn_dims[j].name) == 0)
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                "dynamic dim name \"%s\" is used twice", d->dyn_dims[j].name);
    }
    unsigned used = 0;
    for (int u = 0; u < d->n_dim_uses; u++) {
        const cgr_dim_use *x = &d->dim_uses[u];
        if (x->dim < 0 || x->dim >= d->n_dyn_dims)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dim_uses[%d].dim is %d, the step has %d dynamic dims", u, x->dim,
                            d->n_dyn_dims);
        if (x->output != 0 && x->output != 1)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "dim_uses[%d].output is %d, must be 0 "
                            "or 1", u, x->output);
        int n = x->output ? d->n_outputs : d->n_inputs;
        if (x->tensor < 0 || x->tensor >= n)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "dim_uses[%d].tensor is %d, the step "
                            "has %d %s", u, x->tensor, n, x->output ? "outputs" : "inputs");
        const cgr_tensor_desc *t = x->output ? &d->outputs[x->tensor] : &d->inputs[x->tensor];
        if (x->axis < 0 || x->axis >= t->rank)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dim_uses[%d].axis is %d, tensor \"%s\" has rank %d", u, x->axis,
                            t->name, t->rank);
        const cgr_dyn_dim *dd = &d->dyn_dims[x->dim];
        if (t->dims[x->axis] != dd->max)
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "tensor \"%s\" dims[%d] is %lld but dynamic dim \"%s\" has max "
                            "%lld: declare tensors at their largest shape",
                            t->name, x->axis, (long long)t->dims[x->axis], dd->name,
                            (long long)dd->max);
        for (int k = 0; k < u; k++) {
            const cgr_dim_use *y = &d->dim_uses[k];
            if (y->output == x->output && y->tensor == x->tensor && y->axis == x->axis)
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                "dim_uses[%d] and [%d] both name axis %d of tensor \"%s\"", k,
                                u, x->axis, t->name);
        }
        used |= 1u << x->dim;
    }
    for (int j = 0; j < d->n_dyn_dims; j++)
        if (!(used & (1u << j)))
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "dynamic dim \"%s\" is not used by any tensor (dim_uses)",
                            d->dyn_dims[j].name);
    if (d->n_dyn_dims > 0 && d->input_pad) {
        for (int i = 0; i < d->n_inputs; i++) {
            unsigned char b[8];
            int nz;
            cgr_status st = cgr__pad_bytes(d->inputs[i].dtype, d->input_pad[i], b, &nz);
            if (st != CGR_STATUS_OK) {
                cgr__error_append("input_pad[%d] (input \"%s\")", i, d->inputs[i].name);
                return st;
            }
        }
    }
    return CGR_STATUS_OK;
}

/* Every rule of a step description that passed the struct_size rule. */
static cgr_status check_step_desc(const cgr_step_desc *d)
{
    if (!d->fn)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc.fn is NULL");
    if (d->name && strlen(d->name) > CGR_MAX_NAME)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "step name is longer than %d characters",
                        CGR_MAX_NAME);
    CGR_TRY(in_range("cgr_step_desc.armable", d->armable, 0, 1, ""));
    size_t slot = CGR__ALIGN; /* the slot's flag word and true dims come first */
    CGR_TRY(check_list("inputs", d->inputs, d->n_inputs, &slot));
    CGR_TRY(check_list("outputs", d->outputs, d->n_outputs, &slot));
    /* Names identify tensors in messages, so they must be unique. */
    int n = d->n_inputs + d->n_outputs;
    for (int i = 0; i < n; i++) {
        const cgr_tensor_desc *a = i < d->n_inputs ? &d->inputs[i] : &d->outputs[i - d->n_inputs];
        for (int j = i + 1; j < n; j++) {
            const cgr_tensor_desc *b =
                j < d->n_inputs ? &d->inputs[j] : &d->outputs[j - d->n_inputs];
            if (strcmp(a->name, b->name) == 0)
                return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                                "tensor name \"%s\" is used twice in the step", a->name);
        }
    }
    return check_dyn(d);
}

cgr_status cgr__step_desc_load(const cgr_step_desc *desc, cgr_step_desc *out)
{
    cgr_step_desc d;
    memset(&d, 0, sizeof d);
    CGR_TRY(cgr__struct_in(&d, sizeof d, desc, CGR__STEP_DESC_MIN_SIZE, "cgr_step_desc"));
    CGR_TRY(check_step_desc(&d));
    *out = d;
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_desc_init_size(cgr_step_desc *desc, size_t struct_size)
{
    if (!desc)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc_init: desc is NULL");
    /* Every field of a description defaults to zero (NULL, none, off). */
    cgr_step_desc d;
    memset(&d, 0, sizeof d);
    return cgr__struct_init(desc, struct_size, &d, sizeof d, CGR__STEP_DESC_MIN_SIZE,
                            "cgr_step_desc");
}
