/*
 * The struct_size rule of versioned public structs (abi.h), and the dtype
 * table: small pure helpers that every layer may use.
 */
#include <string.h>

#include "abi.h"
#include "check.h"

/* ---- the struct_size rule (abi.h) ---------------------------------------- */

/* The range of sizes a versioned struct, given or filled in, may have. */
static int size_ok(size_t given, size_t min_size)
{
    return given >= min_size && given <= CGR_MAX_STRUCT_SIZE;
}

static cgr_status check_struct_size(size_t given, size_t min_size, const char *type)
{
    if (!size_ok(given, min_size))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s.struct_size is %zu, must be %zu..%d: initialize the struct with "
                        "%s_init()",
                        type, given, min_size, CGR_MAX_STRUCT_SIZE, type);
    return CGR_STATUS_OK;
}

cgr_status cgr__struct_in(void *dst, size_t size, const void *src, size_t min_size,
                          const char *type)
{
    size_t given;
    memcpy(&given, src, sizeof given);
    CGR_TRY(check_struct_size(given, min_size, type));
    /*
     * A newer caller's fields: zero means "as its init left them", which an
     * older library can honour by not knowing them; anything else asks for
     * something this library cannot do, so it must not be dropped silently.
     */
    const unsigned char *bytes = src;
    for (size_t i = size; i < given; i++)
        if (bytes[i])
            return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                            "%s.struct_size is %zu and byte %zu is not zero: the caller sets a "
                            "field of a newer cgr than this library (cgr %s knows %zu bytes)",
                            type, given, i, cgr_version(), size);
    memcpy(dst, src, given < size ? given : size);
    memcpy(dst, &size, sizeof size);
    return CGR_STATUS_OK;
}

void cgr__struct_out(void *dst, size_t given, const void *src, size_t size)
{
    memcpy(dst, src, given < size ? given : size);
    if (given > size)
        memset((unsigned char *)dst + size, 0, given - size);
}

cgr_status cgr__struct_init(void *dst, size_t struct_size, const void *defaults, size_t size,
                            size_t min_size, const char *type)
{
    CGR_TRY(check_struct_size(struct_size, min_size, type));
    /* The defaults this library knows; zeros in the fields of a newer caller's struct. */
    cgr__struct_out(dst, struct_size, defaults, size);
    memcpy(dst, &struct_size, sizeof struct_size);
    return CGR_STATUS_OK;
}

cgr_status cgr__struct_out_check(size_t given, size_t min_size, const char *fn)
{
    if (!size_ok(given, min_size))
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "%s_size: the output struct's size is %zu, must be %zu..%d: call %s, "
                        "which passes sizeof the struct",
                        fn, given, min_size, CGR_MAX_STRUCT_SIZE, fn);
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

