/*
 * Options and step-description validation, and NULL handling of the public
 * API. None of these cases may touch the GPU, so the suite runs anywhere.
 */
#include <stdint.h>
#include <string.h>

#include "cgr/cgr.h"
#include "internal.h"
#include "test.h"

static cgr_status dummy_step(cgr_ctx *ctx, void *user)
{
    (void)ctx;
    (void)user;
    return CGR_STATUS_OK;
}

/* Expects `st` to be INVALID_ARGUMENT with `needle` in the message. */
static void expect_invalid(cgr_status st, const char *needle, const char *what)
{
    if (st != CGR_STATUS_INVALID_ARGUMENT)
        TEST_FAIL_("%s: got %s, expected CGR_STATUS_INVALID_ARGUMENT", what, cgr_status_name(st));
    if (!strstr(cgr_last_error(), needle))
        TEST_FAIL_("%s: message \"%s\" lacks \"%s\"", what, cgr_last_error(), needle);
}

static void test_options(void)
{
    cgr_options o;
    ASSERT_STATUS(cgr_options_init(NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(cgr_options_init(&o));
    ASSERT_EQ(o.struct_size, sizeof o);
    ASSERT_EQ(o.device, 0);
    ASSERT_EQ(o.staging_slots, 2);
    ASSERT_EQ(o.warmup_runs, 2);
    ASSERT_EQ(o.log_level, CGR_LOG_OFF);
    ASSERT_EQ(o.zero_copy_max_bytes, (size_t)16 << 20);
    ASSERT_EQ(o.wait_spin_us, 200);
    ASSERT_OK(cgr__validate_options(&o));

#define BAD(field_change, needle)                                                          \
    do {                                                                                   \
        ASSERT_OK(cgr_options_init(&o));                                                   \
        field_change;                                                                      \
        expect_invalid(cgr__validate_options(&o), needle, #field_change);                  \
        cgr_runtime *rt = (cgr_runtime *)0x1;                                              \
        expect_invalid(cgr_runtime_create(&rt, &o), needle, #field_change " (create)");    \
        ASSERT(rt == NULL);                                                                \
    } while (0)

    BAD(o.struct_size = 0, "struct_size");
    BAD(o.struct_size = sizeof o + 8, "struct_size");
    BAD(o.device = -1, "device");
    BAD(o.staging_slots = 1, "staging_slots");
    BAD(o.staging_slots = CGR_MAX_SLOTS + 1, "staging_slots");
    BAD(o.warmup_runs = 0, "warmup_runs");
    BAD(o.warmup_runs = CGR_MAX_WARMUP + 1, "warmup_runs");
    BAD(o.log_level = (cgr_log_level)7, "log_level");
    BAD(o.arena_limit = 1000, "arena_limit");
    BAD(o.arena_limit = SIZE_MAX, "arena_limit");
    BAD(o.zero_copy_max_bytes = ((size_t)1 << 30) + 1, "zero_copy_max_bytes");
    BAD(o.wait_spin_us = 1000001, "wait_spin_us");
    BAD(o.capture = 2, "capture");
    BAD(o.reserved[63] = 1, "reserved");
#undef BAD

    /* Edges that are allowed. */
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = CGR_MAX_SLOTS;
    o.warmup_runs = 1;
    o.zero_copy_max_bytes = 0;
    o.log_level = CGR_LOG_DEBUG;
    ASSERT_OK(cgr__validate_options(&o));
}

static cgr_tensor_desc t2(const char *name, cgr_dtype d, int64_t a, int64_t b)
{
    cgr_tensor_desc t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.dtype = d;
    t.rank = 2;
    t.dims[0] = a;
    t.dims[1] = b;
    return t;
}

static void test_tensor_bytes(void)
{
    size_t bytes = 0;
    cgr_tensor_desc t = t2("x", CGR_DTYPE_F32, 3, 5);
    ASSERT_OK(cgr__tensor_bytes(&t, &bytes));
    ASSERT_EQ(bytes, 60);
    t.rank = 0;
    ASSERT_OK(cgr__tensor_bytes(&t, &bytes));
    ASSERT_EQ(bytes, 4); /* a scalar */
    t = t2("x", CGR_DTYPE_F16, 7, 1);
    ASSERT_OK(cgr__tensor_bytes(&t, &bytes));
    ASSERT_EQ(bytes, 14);

    t = t2("x", CGR_DTYPE_F32, INT64_MAX, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "overflow", "dims overflow");
    t = t2("x", CGR_DTYPE_F64, (int64_t)1 << 31, (int64_t)1 << 31);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "overflow", "product overflow");
    t = t2("x", CGR_DTYPE_U8, (int64_t)1 << 40, (int64_t)1 << 22);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "too large", "too large");
    t = t2("x", CGR_DTYPE_F32, 0, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dims[0]", "zero dim");
    t = t2("x", CGR_DTYPE_F32, 4, -3);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dims[1]", "negative dim");
    t = t2("x", (cgr_dtype)99, 4, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dtype", "bad dtype");
    t = t2("x", CGR_DTYPE_F32, 4, 4);
    t.rank = CGR_MAX_RANK + 1;
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "rank", "rank too big");
    t.rank = -1;
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "rank", "negative rank");
    t = t2(NULL, CGR_DTYPE_F32, 4, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "name", "NULL name");
    t = t2("", CGR_DTYPE_F32, 4, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "name", "empty name");
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[79] = '\0';
    t = t2(longname, CGR_DTYPE_F32, 4, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "longer", "long name");

    ASSERT_EQ(cgr_dtype_size(CGR_DTYPE_BF16), 2);
    ASSERT_EQ(cgr_dtype_size(CGR_DTYPE_I64), 8);
    ASSERT_EQ(cgr_dtype_size((cgr_dtype)-1), 0);
    ASSERT_STR_EQ(cgr_dtype_name(CGR_DTYPE_F32), "f32");
    ASSERT_STR_EQ(cgr_dtype_name(CGR_DTYPE_COUNT_), "invalid");
}

static void test_step_desc(void)
{
    cgr_tensor_desc in[2] = {t2("a", CGR_DTYPE_F32, 2, 2), t2("b", CGR_DTYPE_F32, 2, 2)};
    cgr_tensor_desc out[1] = {t2("c", CGR_DTYPE_F32, 2, 2)};
    cgr_step_desc d;
    ASSERT_STATUS(cgr_step_desc_init(NULL), CGR_STATUS_INVALID_ARGUMENT);

#define RESET()                                                                            \
    do {                                                                                   \
        ASSERT_OK(cgr_step_desc_init(&d));                                                 \
        d.inputs = in;                                                                     \
        d.n_inputs = 2;                                                                    \
        d.outputs = out;                                                                   \
        d.n_outputs = 1;                                                                   \
        d.fn = dummy_step;                                                                 \
    } while (0)

    RESET();
    ASSERT_OK(cgr__validate_step_desc(&d));
    RESET();
    d.struct_size = 3;
    expect_invalid(cgr__validate_step_desc(&d), "struct_size", "struct_size");
    RESET();
    d.fn = NULL;
    expect_invalid(cgr__validate_step_desc(&d), "fn", "no fn");
    RESET();
    d.n_inputs = -1;
    expect_invalid(cgr__validate_step_desc(&d), "n_inputs", "negative n_inputs");
    RESET();
    d.n_outputs = CGR_MAX_TENSORS + 1;
    expect_invalid(cgr__validate_step_desc(&d), "n_outputs", "too many outputs");
    RESET();
    d.inputs = NULL;
    expect_invalid(cgr__validate_step_desc(&d), "inputs", "NULL inputs");
    RESET();
    in[1].name = "a";
    expect_invalid(cgr__validate_step_desc(&d), "used twice", "duplicate input name");
    in[1].name = "c";
    expect_invalid(cgr__validate_step_desc(&d), "used twice", "input name equals output");
    in[1].name = "b";
    RESET();
    out[0].dims[1] = 0;
    expect_invalid(cgr__validate_step_desc(&d), "outputs[0]", "bad output dims");
    out[0].dims[1] = 2;
    RESET();
    d.reserved[0] = 9;
    expect_invalid(cgr__validate_step_desc(&d), "reserved", "reserved");
    RESET();
    char longname[80];
    memset(longname, 's', sizeof longname - 1);
    longname[79] = '\0';
    d.name = longname;
    expect_invalid(cgr__validate_step_desc(&d), "step name", "long step name");
    /* No inputs and no outputs is a valid (if unusual) step. */
    RESET();
    d.n_inputs = d.n_outputs = 0;
    d.inputs = d.outputs = NULL;
    ASSERT_OK(cgr__validate_step_desc(&d));
#undef RESET
}

/* NULL handles and pointers: a status and a message, never a crash. */
static void test_null_handling(void)
{
    cgr_runtime *rt = NULL;
    cgr_step *s = NULL;
    uint64_t t;
    const void *p;
    cgr_slot slot;
    cgr_stream st;
    void *ptr;
    ASSERT_STATUS(cgr_runtime_create(NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(cgr_runtime_destroy(NULL));
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_step_destroy(NULL));
    ASSERT_OK(cgr_step_destroy(&s));
    ASSERT_STATUS(cgr_runtime_stream(NULL, &st), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_create(NULL, NULL, &s), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_run(NULL, NULL, &t), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "cgr_step_run") != NULL);
    ASSERT_STATUS(cgr_step_acquire(NULL, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_launch(NULL, &slot), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_wait(NULL, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_sync(NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_output(NULL, 0, 0, &p, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_step_get_stats(NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_runtime_get_stats(NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_persistent_alloc(NULL, 16, &ptr), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_stream(NULL, &st), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_input(NULL, 0, &ptr), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_output(NULL, 0, &ptr), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_alloc(NULL, 16, &ptr), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_free(NULL, ptr), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_cublas(NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_ctx_cudnn(NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr_ctx_is_capturing(NULL), 0);

    /* A pointer that is not a live handle is refused by its magic word. */
    uint32_t fake[64];
    memset(fake, 0, sizeof fake);
    ASSERT_STATUS(cgr_step_run((cgr_step *)fake, NULL, &t), CGR_STATUS_INVALID_HANDLE);
    ASSERT_STATUS(cgr_runtime_stream((cgr_runtime *)fake, &st), CGR_STATUS_INVALID_HANDLE);
    ASSERT_STATUS(cgr_ctx_alloc((cgr_ctx *)fake, 16, &ptr), CGR_STATUS_INVALID_HANDLE);

    /* Without a GPU, creating a runtime says so instead of failing oddly. */
    cgr_status cs = cgr_runtime_create(&rt, NULL);
    ASSERT(cs == CGR_STATUS_OK || cs == CGR_STATUS_NO_DEVICE);
    if (cs == CGR_STATUS_OK)
        ASSERT_OK(cgr_runtime_destroy(&rt));
    else
        ASSERT(rt == NULL);
}

int main(void)
{
    test_options();
    test_tensor_bytes();
    test_step_desc();
    test_null_handling();
    printf("PASS\n");
    return 0;
}
