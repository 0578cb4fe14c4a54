/*
 * Options and step-description validation: defaults, accepted edges,
 * tensor sizes, the struct_size rule of versioned structs and the strings
 * a runtime keeps. The rejected inputs are in test_bad_input.c's table.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <limits.h>
#include <math.h>
#include <stddef.h>
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

/* ---- every bounded option at both ends of its range ------------------------------------- */

typedef void (*opt_set)(cgr_options *o, long long v);
#define OPT_SETTER(fn, field)                                                              \
    static void fn(cgr_options *o, long long v)                                            \
    {                                                                                      \
        o->field = v;                                                                      \
    }
OPT_SETTER(set_device, device)
OPT_SETTER(set_slots, staging_slots)
OPT_SETTER(set_warmup, warmup_runs)
OPT_SETTER(set_log_level, log_level)
OPT_SETTER(set_arena, arena_limit)
OPT_SETTER(set_capture, capture)
OPT_SETTER(set_cache, shape_cache_entries)
OPT_SETTER(set_churn, churn_shapes)
OPT_SETTER(set_arm_timeout, arm_timeout_us)
OPT_SETTER(set_frozen_check, frozen_check)
OPT_SETTER(set_diagnose, diagnose)
OPT_SETTER(set_zero_copy, advanced.zero_copy_max_bytes)
OPT_SETTER(set_spin, advanced.wait_spin_us)
OPT_SETTER(set_spare, advanced.shape_spare)
OPT_SETTER(set_profile_runs, profile.runs)
OPT_SETTER(set_profile_skip, profile.skip)
OPT_SETTER(set_recheck, frozen_recheck)

static void test_option_edges(void)
{
    /* below / above: whether a value one past that end exists in the field's type. */
    static const struct {
        const char *name;
        opt_set set;
        long long lo, hi;
        int below, above;
    } f[] = {
        {"device", set_device, 0, INT_MAX, 1, 0},
        {"staging_slots", set_slots, 2, CGR_MAX_SLOTS, 1, 1},
        {"warmup_runs", set_warmup, 1, CGR_MAX_WARMUP, 1, 1},
        {"log_level", set_log_level, CGR_LOG_OFF, CGR_LOG_DEBUG, 1, 1},
        {"arena_limit", set_arena, 1 << 20, 1LL << 40, 1, 1},
        {"capture", set_capture, 0, 1, 1, 1},
        {"shape_cache_entries", set_cache, 1, 4096, 1, 1},
        {"churn_shapes", set_churn, 0, 64, 1, 1}, /* the default churn_window is 64 */
        {"arm_timeout_us", set_arm_timeout, 1, 60000000, 1, 1},
        {"frozen_check", set_frozen_check, 0, 1, 1, 1},
        {"diagnose", set_diagnose, 0, 1, 1, 1},
        {"zero_copy_max_bytes", set_zero_copy, 0, 1 << 30, 0, 1},
        {"wait_spin_us", set_spin, 0, 1000000, 0, 1},
        {"shape_spare", set_spare, 0, 1, 1, 1},
        {"profile.runs", set_profile_runs, 0, 1000000, 1, 1},
        {"profile.skip", set_profile_skip, 0, 1000000000, 1, 1},
        {"frozen_recheck", set_recheck, 0, 1000000000, 0, 1},
    };
    cgr_options o;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        for (int end = 0; end < 2; end++) {
            ASSERT_OK(cgr_options_init(&o));
            f[i].set(&o, end ? f[i].hi : f[i].lo);
            if (validate_options(&o) != CGR_STATUS_OK)
                TEST_FAIL_("%s = %lld refused: %s", f[i].name, end ? f[i].hi : f[i].lo,
                           cgr_last_error());
            if (!(end ? f[i].above : f[i].below))
                continue;
            ASSERT_OK(cgr_options_init(&o));
            f[i].set(&o, end ? f[i].hi + 1 : f[i].lo - 1);
            expect_invalid(validate_options(&o), f[i].name, f[i].name);
        }
    }
    /* The churn guard's window holds at least its K shapes, and recovery takes a run. */
    ASSERT_OK(cgr_options_init(&o));
    o.churn_shapes = 8;
    o.churn_window = 8;
    o.churn_stable = 1;
    ASSERT_OK(validate_options(&o));
    o.churn_window = 7;
    expect_invalid(validate_options(&o), "churn_window is 7", "window shorter than K");
    o.churn_window = 8;
    o.churn_stable = 0;
    expect_invalid(validate_options(&o), "churn_stable 0", "no stable run");
    o.churn_shapes = 0; /* guard off: the window and stable runs are not read */
    o.churn_window = 0;
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

/*
 * The same two versions as structs cgr fills in (stats, shape info): an
 * older caller's v1 gets its fields and nothing past them, a newer caller's
 * struct gets this library's fields and zeros past them, and a size outside
 * the range is refused before anything is written.
 */
static void test_struct_out(void)
{
    const size_t v1_min = CGR__END_OF(v1, b);
    v2 lib;
    v2_defaults(&lib);
    lib.a = -9;
    union {
        v1 s;
        unsigned char b[sizeof(v2) + 32];
    } u;

    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr__struct_out_check(sizeof(v1), v1_min, "cgr_v_get"));
    cgr__struct_out(&u.s, sizeof(v1), &lib, sizeof lib);
    ASSERT_EQ(u.s.a, -9);
    ASSERT(u.s.b == 2.5);
    ASSERT(bytes_are(u.b + sizeof(v1), sizeof u - sizeof(v1), GUARD));

    /* A newer caller: two more fields of 8 bytes that this library does not know. */
    const size_t newer = sizeof(v2) + 16;
    memset(&u, GUARD, sizeof u);
    ASSERT_OK(cgr__struct_out_check(newer, v1_min, "cgr_v_get"));
    cgr__struct_out(&u.s, newer, &lib, sizeof lib);
    ASSERT(memcmp(u.b, &lib, sizeof lib) == 0);
    ASSERT(bytes_are(u.b + sizeof lib, 16, 0));
    ASSERT(bytes_are(u.b + newer, sizeof u - newer, GUARD));

    ASSERT_STATUS(cgr__struct_out_check(v1_min - 1, v1_min, "cgr_v_get"),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "cgr_v_get_size: the output struct's size is") != NULL);
    ASSERT(strstr(cgr_last_error(), "call cgr_v_get,") != NULL);
    ASSERT_STATUS(cgr__struct_out_check(CGR_MAX_STRUCT_SIZE + 1, v1_min, "cgr_v_get"),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_OK(cgr__struct_out_check(CGR_MAX_STRUCT_SIZE, v1_min, "cgr_v_get"));
    /* The structs cgr fills in fit the limit with room to grow. */
    ASSERT_LE(sizeof(cgr_step_stats) * 2, (size_t)CGR_MAX_STRUCT_SIZE);
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
    /* The largest size itself is a struct this library can read. */
    static union {
        cgr_options o;
        unsigned char b[CGR_MAX_STRUCT_SIZE];
    } big;
    ASSERT_OK(cgr_options_init_size(&big.o, sizeof big.b));
    ASSERT_EQ(big.o.struct_size, CGR_MAX_STRUCT_SIZE);
    ASSERT_OK(cgr__options_load(&big.o, &got));

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

/*
 * The option string at `offset` in cgr_options is the caller's until create
 * and the runtime's own copy after: the caller's buffer may change, and
 * freeing the options' strings clears the field.
 */
static void check_string_copied(size_t offset, const char *text)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%s", text);
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    const char **field = (const char **)((char *)&o + offset);
    *field = buf;
    cgr_options kept;
    ASSERT_OK(cgr__options_load(&o, &kept));
    ASSERT_OK(cgr__options_own_strings(&kept));
    field = (const char **)((char *)&kept + offset);
    ASSERT(*field != NULL && *field != buf);
    memset(buf, 'x', sizeof buf - 1);
    ASSERT_STR_EQ(*field, text);
    cgr__options_free_strings(&kept);
    ASSERT(*field == NULL);
}

/* The runtime's options own dump_dir: the caller's buffer may change after create. */
static void test_dump_dir_copy(void)
{
    unsetenv("CGR_DUMP_DIR");
    check_string_copied(offsetof(cgr_options, dump_dir), "/tmp/cgr-dump-test");
    cgr_options kept;

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
                                      "200,runs=3", "2000000", "12,skip=9999999999",
                                      ",skip=5", "200,path="};
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
    /* The largest size kept (SIZE_MAX / 4 = (2^31 - 1)(2^31 + 1) bytes) and one more. */
    t = t2("x", CGR_DTYPE_U8, ((int64_t)1 << 31) - 1, ((int64_t)1 << 31) + 1);
    ASSERT_OK(cgr__tensor_bytes(&t, &bytes));
    ASSERT_EQ(bytes, SIZE_MAX / 4);
    t = t2("x", CGR_DTYPE_U8, (int64_t)1 << 31, (int64_t)1 << 31);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "too large", "one byte too large");
    /* A product of exactly SIZE_MAX does not overflow: it is too large. */
    t = t2("x", CGR_DTYPE_U8, 3, (int64_t)(SIZE_MAX / 3));
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "is too large", "SIZE_MAX bytes");
    t = t2("x", CGR_DTYPE_F32, 0, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dims[0]", "zero dim");
    t = t2("x", CGR_DTYPE_F32, 4, -3);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dims[1]", "negative dim");
    t = t2("x", (cgr_dtype)99, 4, 4);
    expect_invalid(cgr__tensor_bytes(&t, &bytes), "dtype", "bad dtype");
    t = t2("x", CGR_DTYPE_F32, 4, 4);
    t.rank = CGR_MAX_RANK; /* the largest rank: dims past the first two are 1 */
    for (int i = 2; i < CGR_MAX_RANK; i++)
        t.dims[i] = 1;
    ASSERT_OK(cgr__tensor_bytes(&t, &bytes));
    ASSERT_EQ(bytes, 64);
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
    ASSERT_EQ(cgr_dtype_size(CGR_DTYPE_COUNT_), 0);
    ASSERT_EQ(cgr_dtype_size(CGR_DTYPE_U8), 1); /* the last entry */
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

    /* A fixed step's padding values are never read, so they are not checked either. */
    const double pad[2] = {0.5, 0.5};
    in[0] = t2("a", CGR_DTYPE_I32, 2, 2);
    d.input_pad = pad;
    ASSERT_OK(validate_step_desc(&d));
    /* The longest bucket list, CGR_MAX_BUCKETS sizes, on axis 0 of input "a". */
    int64_t sizes[CGR_MAX_BUCKETS];
    for (int i = 0; i < CGR_MAX_BUCKETS; i++)
        sizes[i] = i + 1;
    cgr_dyn_dim dyn;
    memset(&dyn, 0, sizeof dyn);
    dyn.name = "batch";
    dyn.buckets = sizes;
    dyn.n_buckets = CGR_MAX_BUCKETS;
    dyn.max = CGR_MAX_BUCKETS;
    cgr_dim_use use = {0, 0, 0, 0};
    in[0] = t2("a", CGR_DTYPE_I32, CGR_MAX_BUCKETS, 2);
    d.dyn_dims = &dyn;
    d.n_dyn_dims = 1;
    d.dim_uses = &use;
    d.n_dim_uses = 1;
    const double int_pad[2] = {-7.0, 0.5}; /* "b" is F32: 0.5 is a value of it */
    d.input_pad = int_pad;
    ASSERT_OK(validate_step_desc(&d));
    d.input_pad = pad; /* 0.5 for the i32 input "a", now read */
    expect_invalid(validate_step_desc(&d), "padding value 0.5", "a padding value read");

    /* The smallest dynamic dims: one bucket of 1, or powers of two up to 1; the longest name. */
    d.input_pad = int_pad;
    static const int64_t one[1] = {1};
    dyn.buckets = one;
    dyn.n_buckets = 1;
    dyn.max = 1;
    in[0] = t2("a", CGR_DTYPE_I32, 1, 2);
    ASSERT_OK(validate_step_desc(&d));
    dyn.buckets = NULL;
    dyn.n_buckets = 0;
    ASSERT_OK(validate_step_desc(&d));
    dyn.name = name63;
    ASSERT_OK(validate_step_desc(&d));
}

/* The variables' numbers at their edges, and CGR_DIAGNOSE. */
static void test_env_edges(void)
{
    cgr_profile_options p;
    const char *path = NULL;
    memset(&p, 0, sizeof p);
    ASSERT_OK(cgr__profile_parse("1000000,skip=1000000000", &p, &path));
    ASSERT_EQ(p.runs, 1000000);
    ASSERT_EQ(p.skip, 1000000000);
    ASSERT_OK(cgr__profile_parse("9,skip=0", &p, &path));
    ASSERT_EQ(p.runs, 9);
    ASSERT_EQ(p.skip, 0);
    ASSERT_OK(cgr__profile_parse("0", &p, &path));
    ASSERT_EQ(p.runs, 0);
    expect_invalid(cgr__profile_parse("1000001", &p, &path), "runs per mode", "runs past max");
    expect_invalid(cgr__profile_parse("5,skip=1000000001", &p, &path), "skip must be",
                   "skip past max");
    expect_invalid(cgr__profile_parse("5,skip=", &p, &path), "after the runs", "empty skip");

    cgr_options kept;
    ASSERT_OK(recheck_from_env("1999", 0, &kept));
    ASSERT_EQ(kept.frozen_recheck, 1999u);
    ASSERT_OK(recheck_from_env("0", 0, &kept));
    ASSERT_EQ(kept.frozen_recheck, 0u);
    unsetenv("CGR_FROZEN_RECHECK");

    static const struct {
        const char *v;
        int want;
    } diag[] = {{"1", 1}, {"yes", 1}, {"0", 0}, {"", 0}};
    for (size_t i = 0; i < sizeof diag / sizeof diag[0]; i++) {
        ASSERT_EQ(setenv("CGR_DIAGNOSE", diag[i].v, 1), 0);
        ASSERT_OK(cgr_options_init(&kept));
        ASSERT_OK(cgr__options_own_strings(&kept));
        ASSERT_EQ(kept.diagnose, diag[i].want);
        cgr__options_free_strings(&kept);
    }
    unsetenv("CGR_DIAGNOSE");

    /* frozen_allow is the caller's string until create, a copy after. */
    check_string_copied(offsetof(cgr_options, frozen_allow), "kern_a,kern_b");
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

/* ---- padding values (cgr__pad_bytes) ------------------------------------------------------ */

/* The value of half or bfloat16 bits h (sign left out); inf as 2^16 or 2^128, the next power. */
static double half_value(uint32_t h, int bf16)
{
    uint32_t man_bits = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
    uint32_t e = (h >> man_bits) & (bf16 ? 0xffu : 0x1fu), m = h & ((1u << man_bits) - 1);
    if (e == 0)
        return ldexp((double)m, 1 - (int)bias - (int)man_bits);
    return ldexp((double)((1u << man_bits) + m), (int)e - (int)bias - (int)man_bits);
}

/*
 * The bits a double rounds to in half (bf16 0) or bfloat16 (1): the nearest value, and of
 * two as near the even one, found by search over the encodings and a comparison with the
 * midpoint (exact in double) rather than by the arithmetic the library uses.
 */
static uint16_t round_ref(double v, int bf16)
{
    const uint32_t sign = signbit(v) ? 0x8000u : 0u, inf = bf16 ? 0x7f80u : 0x7c00u;
    if (isnan(v))
        return (uint16_t)(sign | (bf16 ? 0x7fc0u : 0x7e00u));
    double a = fabs(v);
    if (a >= half_value(inf, bf16))
        return (uint16_t)(sign | inf);
    uint32_t lo = 0, hi = inf; /* half_value(lo) <= a < half_value(hi) */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (half_value(mid, bf16) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double mid = (half_value(lo, bf16) + half_value(hi, bf16)) / 2;
    uint32_t h = a < mid ? lo : a > mid ? hi : (lo & 1u) ? hi : lo;
    return (uint16_t)(sign | h);
}

static uint16_t pad16(cgr_dtype t, double v)
{
    unsigned char b[8];
    int nz = -1;
    ASSERT_OK(cgr__pad_bytes(t, v, b, &nz));
    uint16_t h;
    memcpy(&h, b, 2);
    for (int i = 2; i < 8; i++)
        ASSERT_EQ(b[i], 0);
    ASSERT_EQ(nz, h != 0);
    return h;
}

static void test_pad_bytes(void)
{
    /* Half and bfloat16 against the reference, over float bit patterns across the whole
     * range (a stride of 997 meets every exponent and sign) and the values users pick. */
    for (uint64_t x = 0; x <= UINT32_MAX; x += 997) {
        uint32_t bits = (uint32_t)x;
        float f;
        memcpy(&f, &bits, 4);
        for (int bf16 = 0; bf16 < 2; bf16++) {
            uint16_t got = pad16(bf16 ? CGR_DTYPE_BF16 : CGR_DTYPE_F16, (double)f);
            uint16_t want = round_ref(f, bf16);
            if (got != want)
                TEST_FAIL_("%s of float bits 0x%08x (%g): 0x%04x, expected 0x%04x",
                           bf16 ? "bf16" : "f16", bits, (double)f, got, want);
        }
    }
    /*
     * Doubles at and beside every midpoint between two neighbours, of both signs: a
     * conversion that rounds to float first turns the values beside a midpoint into a
     * tie, and breaks it to the even side whichever side the double was on.
     */
    for (int bf16 = 0; bf16 < 2; bf16++) {
        const uint32_t inf = bf16 ? 0x7f80u : 0x7c00u;
        for (uint32_t h = 0; h < inf; h++) {
            double mid = (half_value(h, bf16) + half_value(h + 1, bf16)) / 2;
            const double at[3] = {nextafter(mid, 0.0), mid, nextafter(mid, INFINITY)};
            for (int k = 0; k < 6; k++) {
                double v = k < 3 ? at[k] : -at[k - 3];
                uint16_t got = pad16(bf16 ? CGR_DTYPE_BF16 : CGR_DTYPE_F16, v);
                uint16_t want = round_ref(v, bf16);
                if (got != want)
                    TEST_FAIL_("%s of %.17g: 0x%04x, expected 0x%04x", bf16 ? "bf16" : "f16",
                               v, got, want);
            }
        }
    }
    static const struct {
        double v;
        uint16_t f16, bf16;
    } known[] = {
        {1.0, 0x3c00, 0x3f80},     {-2.0, 0xc000, 0xc000},   {0.1, 0x2e66, 0x3dcd},
        {65504.0, 0x7bff, 0x4780}, {65519.0, 0x7bff, 0x4780}, {65520.0, 0x7c00, 0x4780},
        {-INFINITY, 0xfc00, 0xff80}, {-0.0, 0x8000, 0x8000}, {0.0, 0, 0},
        {5.9604644775390625e-8, 0x0001, 0x3380},             /* 2^-24, the smallest half */
        {2.98023223876953125e-8, 0x0000, 0x3300},            /* half of it: ties to 0 */
        {6.103515625e-5, 0x0400, 0x3880},                    /* 2^-14, the smallest normal */
        {-1e4, 0xf0e2, 0xc61c},
        {1.0 + 0x1p-11 + 0x1p-40, 0x3c01, 0x3f80}, /* above a half tie that float rounds onto */
        {1.0 + 0x1p-8 + 0x1p-40, 0x3c04, 0x3f81},  /* the same for bfloat16 */
        {1e-300, 0x0000, 0x0000},                  /* below both formats' smallest step */
        {1e300, 0x7c00, 0x7f80},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        ASSERT_EQ(pad16(CGR_DTYPE_F16, known[i].v), known[i].f16);
        ASSERT_EQ(pad16(CGR_DTYPE_BF16, known[i].v), known[i].bf16);
        ASSERT_EQ(round_ref(known[i].v, 0), known[i].f16); /* the reference agrees */
        ASSERT_EQ(round_ref(known[i].v, 1), known[i].bf16);
    }
    uint16_t nan = pad16(CGR_DTYPE_F16, NAN);
    ASSERT_EQ(nan & 0x7fff, 0x7e00);
    nan = pad16(CGR_DTYPE_BF16, NAN);
    ASSERT_EQ(nan & 0x7fff, 0x7fc0);

    /* Integers: the whole range, and nothing outside it or between two. */
    static const struct {
        cgr_dtype t;
        double v;
        int ok;
        int64_t want;
    } ints[] = {
        {CGR_DTYPE_U8, 255.0, 1, 255},
        {CGR_DTYPE_U8, 0.0, 1, 0},
        {CGR_DTYPE_U8, 256.0, 0, 0},
        {CGR_DTYPE_U8, -1.0, 0, 0},
        {CGR_DTYPE_U8, 1.5, 0, 0},
        {CGR_DTYPE_I32, -2147483648.0, 1, INT32_MIN},
        {CGR_DTYPE_I32, 2147483647.0, 1, INT32_MAX},
        {CGR_DTYPE_I32, 2147483648.0, 0, 0},
        {CGR_DTYPE_I32, -2147483649.0, 0, 0},
        {CGR_DTYPE_I32, -7.0, 1, -7},
        {CGR_DTYPE_I64, -9223372036854775808.0, 1, INT64_MIN},
        {CGR_DTYPE_I64, 9223372036854774784.0, 1, 9223372036854774784LL},
        {CGR_DTYPE_I64, 9223372036854775808.0, 0, 0},
        {CGR_DTYPE_I64, NAN, 0, 0},
        {CGR_DTYPE_I32, INFINITY, 0, 0},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        unsigned char b[8];
        int nz = -1;
        cgr_status st = cgr__pad_bytes(ints[i].t, ints[i].v, b, &nz);
        if (!ints[i].ok) {
            expect_invalid(st, "padding value", "integer padding out of range");
            continue;
        }
        ASSERT_OK(st);
        int64_t got = 0;
        if (ints[i].t == CGR_DTYPE_U8) {
            got = b[0];
        } else if (ints[i].t == CGR_DTYPE_I32) {
            int32_t v32;
            memcpy(&v32, b, 4);
            got = v32;
        } else {
            memcpy(&got, b, 8);
        }
        ASSERT_EQ(got, ints[i].want);
        ASSERT_EQ(nz, ints[i].want != 0);
    }
    /* F32 and F64 keep the value; -0.0 is not all zero bytes. */
    unsigned char b[8];
    int nz = -1;
    ASSERT_OK(cgr__pad_bytes(CGR_DTYPE_F32, -0.0, b, &nz));
    ASSERT_EQ(nz, 1);
    float f32;
    memcpy(&f32, b, 4);
    ASSERT(f32 == 0.0f && signbit(f32));
    ASSERT_OK(cgr__pad_bytes(CGR_DTYPE_F64, 0.1, b, &nz));
    double f64;
    memcpy(&f64, b, 8);
    ASSERT(f64 == 0.1);
    ASSERT_OK(cgr__pad_bytes(CGR_DTYPE_F32, 0.0, b, &nz));
    ASSERT_EQ(nz, 0);
    expect_invalid(cgr__pad_bytes((cgr_dtype)99, 0.0, b, &nz), "not a cgr_dtype", "bad dtype");
}

int main(void)
{
    test_options();
    test_option_edges();
    test_struct_versions();
    test_struct_out();
    test_options_size();
    test_step_desc_size();
    test_dump_dir_copy();
    test_profile_options();
    test_recheck_options();
    test_tensor_bytes();
    test_step_desc();
    test_env_edges();
    test_create_without_gpu();
    test_pad_bytes();
    printf("PASS\n");
    return 0;
}
