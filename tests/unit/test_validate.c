/*
 * Options and step-description validation: defaults, accepted edges,
 * tensor sizes, the struct_size rule of versioned structs and the strings
 * a runtime keeps. The rejected inputs are in test_bad_input.c's table.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "abi.h"
#include "cgr/cgr.h"
#include "lib.h"
#include "test.h"

/* The validation of cgr_runtime_create and cgr_step_create, without the copy they keep. */
static cgr_status validate_options(const cgr_options *opt)
{
    cgr_options loaded;
    return cgr__options_load(opt, &loaded);
}

static cgr_status validate_step_desc(const cgr_step_desc *desc)
{
    cgr_step_desc loaded;
    return cgr__step_desc_load(desc, &loaded);
}

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
    ASSERT_EQ(o.advanced.zero_copy_max_bytes, (size_t)16 << 20);
    ASSERT_EQ(o.advanced.wait_spin_us, 200);
    ASSERT_OK(validate_options(&o));


    /* Edges that are allowed. */
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = CGR_MAX_SLOTS;
    o.warmup_runs = 1;
    o.advanced.zero_copy_max_bytes = 0;
    o.log_level = CGR_LOG_DEBUG;
    ASSERT_OK(validate_options(&o));
}

/* ---- the struct_size rule (abi.h, cgr.h "Versioned structs") ---------------- */

#define GUARD 0xA5

static int bytes_are(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/*
 * Two versions of one struct, as cgr's would be after a field is added:
 * v2 appends `added` at or past v1's sizeof (the rule of abi.h), and its
 * library default is 77. The mechanism is the one every versioned struct
 * goes through; cgr_options has a single version so far.
 */
typedef struct v1 {
    size_t struct_size;
    int a;
    double b;
} v1;
typedef struct v2 {
    size_t struct_size;
    int a;
    double b;
    int added;
} v2;
_Static_assert(offsetof(v2, added) >= sizeof(v1), "v2 appends after v1's size");

static void v2_defaults(v2 *d)
{
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->a = 1;
    d->b = 2.5;
    d->added = 77;
}

static void test_struct_versions(void)
{
    const size_t v2_min = CGR__END_OF(v1, b); /* v1's fields: the first version */
    v2 lib;
    /* An older caller (v1) gets its own fields and the default of the one it lacks. */
    v1 old;
    memset(&old, 0, sizeof old);
    old.struct_size = sizeof old;
    old.a = -4;
    old.b = 8.0;
    v2_defaults(&lib);
    ASSERT_OK(cgr__struct_in(&lib, sizeof lib, &old, v2_min, "v2"));
    ASSERT_EQ(lib.struct_size, sizeof lib);
    ASSERT_EQ(lib.a, -4);
    ASSERT(lib.b == 8.0);
    ASSERT_EQ(lib.added, 77);

    /* An older caller's init writes its own size and never past it. */
    union {
        v1 s;
        unsigned char b[sizeof(v1) + 32];
    } u;
    memset(&u, GUARD, sizeof u);
    v2_defaults(&lib);
    ASSERT_OK(cgr__struct_init(&u.s, sizeof u.s, &lib, sizeof lib, v2_min, "v2"));
    ASSERT_EQ(u.s.struct_size, sizeof(v1));
    ASSERT_EQ(u.s.a, 1);
    ASSERT(bytes_are(u.b + sizeof(v1), 32, GUARD));

}

/* cgr_options under the rule: smaller, larger with a zero tail, larger with a field set. */
static void test_options_size(void)
{
    union {
        cgr_options o;
        unsigned char b[sizeof(cgr_options) + 64];
    } u;
    cgr_options def, got;
    ASSERT_OK(cgr_options_init(&def));

    /* The first version's fields without trailing padding: read as given. */
    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr_options_init_size(&u.o, CGR__OPTIONS_MIN_SIZE));
    ASSERT_EQ(u.o.struct_size, CGR__OPTIONS_MIN_SIZE);
    ASSERT(bytes_are(u.b + CGR__OPTIONS_MIN_SIZE, sizeof u - CGR__OPTIONS_MIN_SIZE, GUARD));
    u.o.warmup_runs = 5;
    u.o.arm_timeout_us = 1234;
    ASSERT_OK(cgr__options_load(&u.o, &got));
    ASSERT_EQ(got.struct_size, sizeof got);
    ASSERT_EQ(got.warmup_runs, 5);
    ASSERT_EQ(got.arm_timeout_us, 1234);
    ASSERT_EQ(got.shape_cache_entries, def.shape_cache_entries);
    /* The profile block came later: an older caller gets it off, with its defaults. */
    ASSERT_EQ(got.profile.runs, 0);
    ASSERT_EQ(got.profile.skip, 10);
    ASSERT(got.profile.path == NULL);
    ASSERT_EQ(got.frozen_recheck, 0u);

    /* Below the first version, or past the largest size: refused, and init writes nothing. */
    memset(&u, GUARD, sizeof u);
    expect_invalid(cgr_options_init_size(&u.o, CGR__OPTIONS_MIN_SIZE - 1), "struct_size",
                   "init below the first version");
    ASSERT(bytes_are(u.b, sizeof u, GUARD));
    ASSERT_OK(cgr_options_init(&u.o));
    u.o.struct_size = CGR__OPTIONS_MIN_SIZE - 4;
    expect_invalid(validate_options(&u.o), "struct_size", "options below the first version");
    u.o.struct_size = CGR_MAX_STRUCT_SIZE + 1;
    expect_invalid(validate_options(&u.o), "struct_size", "options too large");

    /* A newer header's struct: its init (this library) zeros the fields it does not know. */
    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr_options_init_size(&u.o, sizeof u));
    ASSERT_EQ(u.o.struct_size, sizeof u);
    ASSERT(bytes_are(u.b + sizeof(cgr_options), 64, 0));
    ASSERT_EQ(u.o.warmup_runs, def.warmup_runs);
    ASSERT_OK(cgr__options_load(&u.o, &got));
    ASSERT_EQ(got.struct_size, sizeof got);
    ASSERT_EQ(got.arm_timeout_us, def.arm_timeout_us);
    /* ... and refuses one whose unknown field is set, naming the byte. */
    u.b[sizeof(cgr_options) + 63] = 1;
    expect_invalid(validate_options(&u.o), "newer", "newer field set");
    char byte[32];
    snprintf(byte, sizeof byte, "byte %zu", sizeof(cgr_options) + 63);
    ASSERT(strstr(cgr_last_error(), byte) != NULL);
}

static void test_step_desc_size(void)
{
    union {
        cgr_step_desc d;
        unsigned char b[sizeof(cgr_step_desc) + 16];
    } u;
    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr_step_desc_init_size(&u.d, CGR__STEP_DESC_MIN_SIZE));
    ASSERT(bytes_are(u.b + CGR__STEP_DESC_MIN_SIZE, sizeof u - CGR__STEP_DESC_MIN_SIZE, GUARD));
    u.d.fn = dummy_step;
    u.d.armable = 1;
    cgr_step_desc got;
    ASSERT_OK(cgr__step_desc_load(&u.d, &got));
    ASSERT_EQ(got.struct_size, sizeof got);
    ASSERT_EQ(got.armable, 1);
    ASSERT(got.fn == dummy_step);

    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr_step_desc_init_size(&u.d, sizeof u));
    ASSERT(bytes_are(u.b + sizeof(cgr_step_desc), 16, 0));
    u.d.fn = dummy_step;
    ASSERT_OK(validate_step_desc(&u.d));
    u.b[sizeof(cgr_step_desc)] = 3;
    expect_invalid(validate_step_desc(&u.d), "newer", "newer desc field set");
}

/* The runtime's options own dump_dir: the caller's buffer may change after create. */
static void test_dump_dir_copy(void)
{
    unsetenv("CGR_DUMP_DIR");
    char dir[32];
    snprintf(dir, sizeof dir, "/tmp/cgr-dump-test");
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.dump_dir = dir;
    cgr_options kept;
    ASSERT_OK(cgr__options_load(&o, &kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT(kept.dump_dir != NULL && kept.dump_dir != dir);
    memset(dir, 'x', sizeof dir - 1);
    ASSERT_STR_EQ(kept.dump_dir, "/tmp/cgr-dump-test");
    cgr__options_free_strings(&kept);
    ASSERT(kept.dump_dir == NULL);

    /* Without dump_dir, CGR_DUMP_DIR is copied as it is at create. */
    ASSERT_EQ(setenv("CGR_DUMP_DIR", "/tmp/from-env", 1), 0);
    ASSERT_OK(cgr_options_init(&kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT_EQ(setenv("CGR_DUMP_DIR", "/elsewhere", 1), 0);
    ASSERT(kept.dump_dir != NULL);
    ASSERT_STR_EQ(kept.dump_dir, "/tmp/from-env");
    cgr__options_free_strings(&kept);
    /* An empty name means no dump, as no name does. */
    ASSERT_EQ(setenv("CGR_DUMP_DIR", "", 1), 0);
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT(kept.dump_dir == NULL);
    unsetenv("CGR_DUMP_DIR");
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT(kept.dump_dir == NULL);
}

/* cgr_options.profile, CGR_PROFILE, and the copy of profile.path. */
static void test_profile_options(void)
{
    unsetenv("CGR_PROFILE");
    cgr_options o, kept;
    ASSERT_OK(cgr_options_init(&o));
    ASSERT_EQ(o.profile.runs, 0);
    ASSERT_EQ(o.profile.skip, 10);
    o.profile.runs = -1;
    expect_invalid(validate_options(&o), "profile.runs", "negative runs");
    o.profile.runs = 1000001;
    expect_invalid(validate_options(&o), "profile.runs", "too many runs");
    o.profile.runs = 5;
    o.profile.skip = -2;
    expect_invalid(validate_options(&o), "profile.skip", "negative skip");
    o.profile.skip = 0;
    char path[32];
    snprintf(path, sizeof path, "/tmp/mine");
    o.profile.path = path;
    ASSERT_OK(cgr__options_load(&o, &kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT(kept.profile.path != NULL && kept.profile.path != path);
    memset(path, 'x', sizeof path - 1);
    ASSERT_STR_EQ(kept.profile.path, "/tmp/mine");
    ASSERT_EQ(kept.profile.runs, 5);
    cgr__options_free_strings(&kept);
    ASSERT(kept.profile.path == NULL);

    /* The variable fills a profile the options left off, and only then. */
    ASSERT_EQ(setenv("CGR_PROFILE", "200,skip=50,path=/tmp/p,q", 1), 0);
    ASSERT_OK(cgr_options_init(&kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT_EQ(kept.profile.runs, 200);
    ASSERT_EQ(kept.profile.skip, 50);
    ASSERT_STR_EQ(kept.profile.path, "/tmp/p,q"); /* the rest, commas and all */
    cgr__options_free_strings(&kept);
    ASSERT_OK(cgr__options_load(&o, &kept)); /* runs = 5 from the program */
    kept.profile.path = NULL;
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT_EQ(kept.profile.runs, 5);
    ASSERT_EQ(kept.profile.skip, 0);
    ASSERT(kept.profile.path == NULL);
    cgr__options_free_strings(&kept);
    ASSERT_EQ(setenv("CGR_PROFILE", "64", 1), 0);
    ASSERT_OK(cgr_options_init(&kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT_EQ(kept.profile.runs, 64);
    ASSERT_EQ(kept.profile.skip, 10);
    ASSERT(kept.profile.path == NULL);
    cgr__options_free_strings(&kept);
    static const char *const bad[] = {"x", "", "200,", "200,skip=", "200,skip=-1",
                                      "200,runs=3", "2000000", "12,skip=9999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cgr_profile_options p = {0, 10, NULL};
        const char *pp = NULL;
        if (!bad[i][0])
            continue; /* an empty variable is no profile: never parsed */
        expect_invalid(cgr__profile_parse(bad[i], &p, &pp), "CGR_PROFILE", bad[i]);
    }
    ASSERT_EQ(setenv("CGR_PROFILE", "", 1), 0);
    ASSERT_OK(cgr_options_init(&kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    ASSERT_EQ(kept.profile.runs, 0);
    cgr__options_free_strings(&kept);
    unsetenv("CGR_PROFILE");
}

/* Options from the defaults with frozen_recheck = preset, after CGR_FROZEN_RECHECK = v. */
static cgr_status recheck_from_env(const char *v, unsigned preset, cgr_options *kept)
{
    ASSERT_EQ(setenv("CGR_FROZEN_RECHECK", v, 1), 0);
    ASSERT_OK(cgr_options_init(kept));
    kept->frozen_recheck = preset;
    cgr_status st = cgr__options_own_strings(kept);
    cgr__options_free_strings(kept); /* safe after a refusal too */
    return st;
}

/* cgr_options.frozen_recheck and CGR_FROZEN_RECHECK. */
static void test_recheck_options(void)
{
    unsetenv("CGR_FROZEN_RECHECK");
    cgr_options o, kept;
    ASSERT_OK(cgr_options_init(&o));
    ASSERT_EQ(o.frozen_recheck, 0u);
    o.frozen_recheck = 1000000001u;
    expect_invalid(validate_options(&o), "frozen_recheck", "too many replays");
    o.frozen_recheck = 1000000000u;
    ASSERT_OK(cgr__options_load(&o, &kept));
    ASSERT_EQ(kept.frozen_recheck, 1000000000u);

    /* The variable fills a recheck the options left off, and only then. */
    ASSERT_OK(recheck_from_env("250", 0, &kept));
    ASSERT_EQ(kept.frozen_recheck, 250u);
    ASSERT_OK(recheck_from_env("250", 7, &kept));
    ASSERT_EQ(kept.frozen_recheck, 7u);
    static const char *const bad[] = {"x", "-1", "12k", "1000000001", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_invalid(recheck_from_env(bad[i], 0, &kept), "CGR_FROZEN_RECHECK", bad[i]);
        ASSERT_EQ(kept.frozen_recheck, 0u);
    }
    ASSERT_OK(recheck_from_env("", 0, &kept));
    ASSERT_EQ(kept.frozen_recheck, 0u);
    unsetenv("CGR_FROZEN_RECHECK");
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
    ASSERT_OK(validate_step_desc(&d));
    /* No inputs and no outputs is a valid (if unusual) step. */
    d.n_inputs = d.n_outputs = 0;
    d.inputs = d.outputs = NULL;
    ASSERT_OK(validate_step_desc(&d));
    /* The longest allowed names. */
    char name63[64];
    memset(name63, 'x', 63);
    name63[63] = '\0';
    d.name = name63;
    in[0].name = name63;
    d.inputs = in;
    d.n_inputs = 2;
    ASSERT_OK(validate_step_desc(&d));
}

/*
 * Creating a runtime succeeds where CUDA sees a device, and without one
 * says so (NO_DEVICE, with a message) instead of failing oddly.
 */
static void test_create_without_gpu(void)
{
    int devices = 0;
    const int have_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
    cgr_runtime *rt = NULL;
    cgr_status cs = cgr_runtime_create(&rt, NULL);
    if (have_gpu) {
        ASSERT_OK(cs);
        ASSERT_OK(cgr_runtime_destroy(&rt));
    } else {
        ASSERT(cs == CGR_STATUS_NO_DEVICE);
        ASSERT(rt == NULL && cgr_last_error()[0] != '\0');
    }
}

int main(void)
{
    test_options();
    test_struct_versions();
    test_options_size();
    test_step_desc_size();
    test_dump_dir_copy();
    test_profile_options();
    test_recheck_options();
    test_tensor_bytes();
    test_step_desc();
    test_create_without_gpu();
    printf("PASS\n");
    return 0;
}
