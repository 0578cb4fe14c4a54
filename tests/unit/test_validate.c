/*
 * Options and step-description validation: defaults, accepted edges and
 * tensor sizes. The rejected inputs are in test_bad_input.c's table.
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
    ASSERT_OK(cgr_step_desc_init(&d));
    ASSERT_EQ(d.struct_size, sizeof d);
    d.inputs = in;
    d.n_inputs = 2;
    d.outputs = out;
    d.n_outputs = 1;
    d.fn = dummy_step;
    ASSERT_OK(cgr__validate_step_desc(&d));
    /* No inputs and no outputs is a valid (if unusual) step. */
    d.n_inputs = d.n_outputs = 0;
    d.inputs = d.outputs = NULL;
    ASSERT_OK(cgr__validate_step_desc(&d));
    /* The longest allowed names. */
    char name63[64];
    memset(name63, 'x', 63);
    name63[63] = '\0';
    d.name = name63;
    in[0].name = name63;
    d.inputs = in;
    d.n_inputs = 2;
    ASSERT_OK(cgr__validate_step_desc(&d));
}

/* Without a GPU, creating a runtime says so instead of failing oddly. */
static void test_create_without_gpu(void)
{
    cgr_runtime *rt = NULL;
    cgr_status cs = cgr_runtime_create(&rt, NULL);
    ASSERT(cs == CGR_STATUS_OK || cs == CGR_STATUS_NO_DEVICE);
    if (cs == CGR_STATUS_OK)
        ASSERT_OK(cgr_runtime_destroy(&rt));
    else
        ASSERT(rt == NULL && cgr_last_error()[0] != '\0');
}

int main(void)
{
    test_options();
    test_tensor_bytes();
    test_step_desc();
    test_create_without_gpu();
    printf("PASS\n");
    return 0;
}
