/*
 * Bad input across the public API, as one table (docs/errors.md lists the
 * same cases). Every case must return its specific status, leave a
 * last-error message that names the problem, and change nothing: out
 * pointers come back NULL, nothing is created or launched. None of these
 * needs a GPU; the cases that do (BUSY slots, wrong ticket, trace
 * mismatch, capture failures) live in the gpu suite.
 */
#include <stdint.h>
#include <string.h>

#include "cgr/cgr.h"
#include "lib.h"
#include "test.h"

/* The validation of cgr_step_create, without the copy it keeps. */
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

/* ---- fixtures ---------------------------------------------------------- */

static cgr_options opts(void)
{
    cgr_options o;
    cgr_options_init(&o);
    return o;
}

/* Creating a runtime must fail before touching the device, with *out NULL. */
static cgr_status create(const cgr_options *o)
{
    cgr_runtime *rt = (cgr_runtime *)(uintptr_t)0x1;
    cgr_status s = cgr_runtime_create(&rt, o);
    ASSERT(rt == NULL);
    return s;
}

/*
 * The structs as a newer header would declare them: one field more, which
 * this library does not know. Its first byte is set to `extra`.
 */
typedef struct newer_options {
    cgr_options o;
    unsigned char extra[8];
} newer_options;

static cgr_status create_newer(unsigned char extra)
{
    newer_options w;
    memset(&w, 0, sizeof w);
    cgr_options_init_size(&w.o, sizeof w);
    w.extra[0] = extra;
    return create(&w.o);
}

static cgr_tensor_desc tensors[3];

static cgr_step_desc desc(void)
{
    for (int i = 0; i < 3; i++) {
        memset(&tensors[i], 0, sizeof tensors[i]);
        tensors[i].name = i == 0 ? "a" : i == 1 ? "b" : "c";
        tensors[i].dtype = CGR_DTYPE_F32;
        tensors[i].rank = 2;
        tensors[i].dims[0] = 4;
        tensors[i].dims[1] = 8;
    }
    cgr_step_desc d;
    cgr_step_desc_init(&d);
    d.inputs = tensors;
    d.n_inputs = 2;
    d.outputs = tensors + 2;
    d.n_outputs = 1;
    d.fn = dummy_step;
    return d;
}

/* A step with one dynamic dim, "batch" (buckets 1, 2, 4), on axis 0 of a and c. */
static const int64_t batch_buckets[3] = {1, 2, 4};
static cgr_dyn_dim dyn[2];
static cgr_dim_use uses[2];

static cgr_step_desc dyn_desc(void)
{
    cgr_step_desc d = desc();
    memset(dyn, 0, sizeof dyn);
    dyn[0].name = "batch";
    dyn[0].buckets = batch_buckets;
    dyn[0].n_buckets = 3;
    dyn[0].max = 4;
    dyn[1] = dyn[0];
    dyn[1].name = "other";
    cgr_dim_use a = {0, 0, 0, 0}, c = {0, 1, 0, 0};
    uses[0] = a;
    uses[1] = c;
    d.dyn_dims = dyn;
    d.n_dyn_dims = 1;
    d.dim_uses = uses;
    d.n_dim_uses = 2;
    return d;
}

typedef struct newer_desc {
    cgr_step_desc d;
    unsigned char extra[8];
} newer_desc;

static cgr_status validate_newer_desc(unsigned char extra)
{
    newer_desc w;
    memset(&w, 0, sizeof w);
    w.d = desc();
    w.d.struct_size = sizeof w;
    w.extra[0] = extra;
    return validate_step_desc(&w.d);
}

static char long_name[80];
/*
 * Pointers whose magic word is not cgr's: zeroed memory, and memory that
 * holds the word cgr stamps into a handle as it destroys it. They are
 * static arrays, not freed handles: using a real handle after destroy is
 * undefined behaviour, which no test can assert on. What these rows show
 * is only that a call refuses a pointer whose word is wrong.
 */
static uint32_t fake_handle[64];
static uint32_t dead_handle[64] = {CGR__MAGIC_DEAD};
#define FAKE_RT ((cgr_runtime *)fake_handle)
#define DEAD_RT ((cgr_runtime *)dead_handle)
#define DEAD_STEP ((cgr_step *)dead_handle)
#define FAKE_CTX ((cgr_ctx *)fake_handle)

/*
 * A refusal must leave the out pointer NULL (docs/errors.md): the rows
 * that check it start it at a stale value, call, and then pass status and
 * pointer here, which turns a status with the pointer left alone into OK,
 * failing the row.
 */
static cgr_status nulled(cgr_status st, const void *out)
{
    return out == NULL ? st : CGR_STATUS_OK;
}

static cgr_launch_cfg launch_cfg(unsigned grid, unsigned block_x, unsigned block_y)
{
    cgr_launch_cfg c = {{grid, 1, 1}, {block_x, block_y, 1}, 0, 0};
    return c;
}

/* ---- the table --------------------------------------------------------------
 * X(name, expected status, word the message must contain, body returning
 * the status). */
#define BAD_INPUT_CASES(X)                                                                 \
    X(options_init_null, INVALID_ARGUMENT, "NULL", return cgr_options_init(NULL);)         \
    X(desc_init_null, INVALID_ARGUMENT, "NULL", return cgr_step_desc_init(NULL);)          \
    X(runtime_create_out_null, INVALID_ARGUMENT, "out", return cgr_runtime_create(NULL, NULL);) \
    X(opt_struct_size_zero, INVALID_ARGUMENT, "struct_size",                               \
      cgr_options o = opts(); o.struct_size = 0; return create(&o);)                       \
    X(opt_newer_field_set, INVALID_ARGUMENT, "newer", return create_newer(1);)             \
    X(opt_device_negative, INVALID_ARGUMENT, "cgr_options.device is -1, must be >= 0",     \
      cgr_options o = opts(); o.device = -1; return create(&o);)                           \
    X(opt_one_slot, INVALID_ARGUMENT, "staging_slots",                                     \
      cgr_options o = opts(); o.staging_slots = 1; return create(&o);)                     \
    X(opt_too_many_slots, INVALID_ARGUMENT, "staging_slots",                               \
      cgr_options o = opts(); o.staging_slots = CGR_MAX_SLOTS + 1; return create(&o);)     \
    X(opt_no_warmup, INVALID_ARGUMENT, "warmup_runs",                                      \
      cgr_options o = opts(); o.warmup_runs = 0; return create(&o);)                       \
    X(opt_too_much_warmup, INVALID_ARGUMENT, "warmup_runs",                                \
      cgr_options o = opts(); o.warmup_runs = CGR_MAX_WARMUP + 1; return create(&o);)      \
    X(opt_log_level, INVALID_ARGUMENT, "log_level",                                        \
      cgr_options o = opts(); o.log_level = (cgr_log_level)9; return create(&o);)          \
    X(opt_arena_tiny, INVALID_ARGUMENT, "arena_limit",                                     \
      cgr_options o = opts(); o.arena_limit = 4096; return create(&o);)                    \
    X(opt_arena_huge, INVALID_ARGUMENT, "arena_limit",                                     \
      cgr_options o = opts(); o.arena_limit = SIZE_MAX; return create(&o);)                \
    X(opt_zero_copy_huge, INVALID_ARGUMENT, "zero_copy_max_bytes",                         \
      cgr_options o = opts(); o.advanced.zero_copy_max_bytes = SIZE_MAX; return create(&o);)       \
    X(opt_spin_huge, INVALID_ARGUMENT, "wait_spin_us",                                     \
      cgr_options o = opts(); o.advanced.wait_spin_us = 2000000; return create(&o);)               \
    X(opt_capture_flag, INVALID_ARGUMENT, "capture",                                       \
      cgr_options o = opts(); o.capture = -1; return create(&o);)                          \
    X(opt_struct_size_huge, INVALID_ARGUMENT, "struct_size",                               \
      cgr_options o = opts(); o.struct_size = CGR_MAX_STRUCT_SIZE + 1; return create(&o);) \
    X(runtime_stream_null, INVALID_ARGUMENT, "NULL",                                       \
      cgr_stream s; return cgr_runtime_stream(NULL, &s);)                                  \
    X(runtime_stream_fake, INVALID_HANDLE, "magic word",                                   \
      cgr_stream s; return cgr_runtime_stream(FAKE_RT, &s);)                               \
    X(runtime_dead_magic, INVALID_HANDLE, "magic word",                                    \
      cgr_runtime_stats st; return cgr_runtime_get_stats(DEAD_RT, &st);)                   \
    X(runtime_destroy_fake, INVALID_HANDLE, "magic word",                                  \
      cgr_runtime *rt = FAKE_RT; return cgr_runtime_destroy(&rt);)                         \
    X(runtime_stats_null, INVALID_ARGUMENT, "NULL",                                        \
      return cgr_runtime_get_stats(NULL, NULL);)                                           \
    X(persistent_alloc_null, INVALID_ARGUMENT, "NULL",                                     \
      void *p = fake_handle; cgr_status st = cgr_persistent_alloc(NULL, 64, &p);          \
      return nulled(st, p);)                                                               \
    X(step_create_null_runtime, INVALID_ARGUMENT, "NULL", cgr_step_desc d = desc();        \
      cgr_step *s = DEAD_STEP; cgr_status st = cgr_step_create(NULL, &d, &s);            \
      return nulled(st, s);)                                                               \
    X(step_create_dead_magic_runtime, INVALID_HANDLE, "magic word", cgr_step_desc d = desc(); \
      cgr_step *s = DEAD_STEP; cgr_status st = cgr_step_create(DEAD_RT, &d, &s);         \
      return nulled(st, s);)                                                               \
    X(step_run_null, INVALID_ARGUMENT, "cgr_step_run",                                     \
      return cgr_step_run(NULL, NULL, NULL, NULL);)                                        \
    X(step_run_dead_magic, INVALID_HANDLE, "magic word",                                   \
      return cgr_step_run(DEAD_STEP, NULL, NULL, NULL);)                                   \
    X(step_acquire_null, INVALID_ARGUMENT, "NULL",                                         \
      cgr_slot sl; return cgr_step_acquire(NULL, NULL, 0, &sl);)                           \
    X(step_launch_null, INVALID_ARGUMENT, "NULL",                                          \
      cgr_slot sl; memset(&sl, 0, sizeof sl); return cgr_step_launch(NULL, &sl);)          \
    X(step_wait_null, INVALID_ARGUMENT, "NULL", return cgr_step_wait(NULL, 0);)            \
    X(step_wait_last_dead_magic, INVALID_HANDLE, "magic word",                             \
      return cgr_step_wait(DEAD_STEP, CGR_TICKET_LAST);)                                   \
    X(step_output_null, INVALID_ARGUMENT, "NULL",                                          \
      float p; return cgr_step_output(NULL, 0, 0, &p, sizeof p, NULL);)                    \
    X(step_stats_null, INVALID_ARGUMENT, "NULL", return cgr_step_get_stats(NULL, NULL);)   \
    X(step_seed_dead_magic, INVALID_HANDLE, "magic word", return cgr_step_set_seed(DEAD_STEP, 1);) \
    X(step_destroy_dead_magic, INVALID_HANDLE, "magic word",                               \
      cgr_step *s = DEAD_STEP; return cgr_step_destroy(&s);)                               \
    X(ctx_stream_null, INVALID_ARGUMENT, "NULL", cgr_stream s; return cgr_ctx_stream(NULL, &s);) \
    X(ctx_input_outside_step, INVALID_HANDLE, "inside the step",                           \
      void *p; return cgr_ctx_input(FAKE_CTX, 0, &p);)                                     \
    X(ctx_output_null, INVALID_ARGUMENT, "NULL", void *p; return cgr_ctx_output(NULL, 0, &p);) \
    X(ctx_alloc_outside_step, INVALID_HANDLE, "inside the step",                           \
      void *p = fake_handle; cgr_status st = cgr_ctx_alloc(FAKE_CTX, 64, &p);             \
      return nulled(st, p);)                                                               \
    X(ctx_free_null, INVALID_ARGUMENT, "NULL", return cgr_ctx_free(NULL, NULL);)           \
    X(ctx_cublas_null, INVALID_ARGUMENT, "NULL", return cgr_ctx_cublas(NULL, NULL);)       \
    X(ctx_cudnn_null, INVALID_ARGUMENT, "NULL", return cgr_ctx_cudnn(NULL, NULL);)         \
    X(ctx_philox_null, INVALID_ARGUMENT, "NULL",                                           \
      const cgr_philox_state *st; uint64_t sub; return cgr_ctx_philox(NULL, 1, &st, &sub);) \
    X(launch_null_kernel, INVALID_ARGUMENT, "kernel",                                      \
      cgr_launch_cfg c = launch_cfg(1, 32, 1); return cgr_launch_kernel(NULL, NULL, &c, NULL);) \
    X(launch_null_cfg, INVALID_ARGUMENT, "cfg",                                            \
      return cgr_launch_kernel(NULL, (const void *)fake_handle, NULL, NULL);)              \
    X(launch_empty_grid, INVALID_ARGUMENT, "grid",                                         \
      cgr_launch_cfg c = launch_cfg(0, 32, 1);                                             \
      return cgr_launch_kernel(NULL, (const void *)fake_handle, &c, NULL);)                \
    X(launch_big_block, INVALID_ARGUMENT, "1024",                                          \
      cgr_launch_cfg c = launch_cfg(1, 1024, 2);                                           \
      return cgr_launch_kernel(NULL, (const void *)fake_handle, &c, NULL);)                \
    X(desc_struct_size, INVALID_ARGUMENT, "struct_size",                                   \
      cgr_step_desc d = desc(); d.struct_size = 1; return validate_step_desc(&d);)    \
    X(desc_no_fn, INVALID_ARGUMENT, "fn", cgr_step_desc d = desc(); d.fn = NULL;           \
      return validate_step_desc(&d);)                                                 \
    X(desc_negative_inputs, INVALID_ARGUMENT, "n_inputs",                                  \
      cgr_step_desc d = desc(); d.n_inputs = -1; return validate_step_desc(&d);)      \
    X(desc_too_many_outputs, INVALID_ARGUMENT, "n_outputs",                                \
      cgr_step_desc d = desc(); d.n_outputs = CGR_MAX_TENSORS + 1;                         \
      return validate_step_desc(&d);)                                                 \
    X(desc_inputs_null, INVALID_ARGUMENT, "inputs is NULL",                                \
      cgr_step_desc d = desc(); d.inputs = NULL; return validate_step_desc(&d);)      \
    X(desc_duplicate_name, INVALID_ARGUMENT, "used twice",                                 \
      cgr_step_desc d = desc(); tensors[1].name = "a"; return validate_step_desc(&d);) \
    X(desc_bad_dtype, INVALID_ARGUMENT, "dtype",                                           \
      cgr_step_desc d = desc(); tensors[0].dtype = (cgr_dtype)42;                          \
      return validate_step_desc(&d);)                                                 \
    X(desc_rank_too_big, INVALID_ARGUMENT, "rank",                                         \
      cgr_step_desc d = desc(); tensors[1].rank = CGR_MAX_RANK + 1;                        \
      return validate_step_desc(&d);)                                                 \
    X(desc_rank_negative, INVALID_ARGUMENT, "rank",                                        \
      cgr_step_desc d = desc(); tensors[1].rank = -2; return validate_step_desc(&d);) \
    X(desc_zero_dim, INVALID_ARGUMENT, "dims[1]",                                          \
      cgr_step_desc d = desc(); tensors[2].dims[1] = 0; return validate_step_desc(&d);) \
    X(desc_negative_dim, INVALID_ARGUMENT, "dims[0]",                                      \
      cgr_step_desc d = desc(); tensors[0].dims[0] = -5; return validate_step_desc(&d);) \
    X(desc_size_overflow, INVALID_ARGUMENT, "overflow",                                    \
      cgr_step_desc d = desc(); tensors[0].dims[0] = INT64_MAX;                            \
      return validate_step_desc(&d);)                                                 \
    X(desc_product_overflow, INVALID_ARGUMENT, "overflow",                                 \
      cgr_step_desc d = desc(); tensors[0].dims[0] = (int64_t)1 << 40;                     \
      tensors[0].dims[1] = (int64_t)1 << 40; return validate_step_desc(&d);)          \
    X(desc_slot_overflow, INVALID_ARGUMENT, "overflow a staging slot",                     \
      cgr_step_desc d = desc();                                                            \
      for (int i = 0; i < 3; i++) {                                                        \
          tensors[i].dims[0] = (int64_t)1 << 30;                                           \
          tensors[i].dims[1] = (int64_t)1 << 28;                                           \
      } return validate_step_desc(&d);)                                               \
    X(desc_name_null, INVALID_ARGUMENT, "name",                                            \
      cgr_step_desc d = desc(); tensors[2].name = NULL; return validate_step_desc(&d);) \
    X(desc_name_empty, INVALID_ARGUMENT, "name",                                           \
      cgr_step_desc d = desc(); tensors[2].name = ""; return validate_step_desc(&d);) \
    X(desc_name_long, INVALID_ARGUMENT, "longer",                                          \
      cgr_step_desc d = desc(); tensors[0].name = long_name;                               \
      return validate_step_desc(&d);)                                                 \
    X(desc_step_name_long, INVALID_ARGUMENT, "step name",                                  \
      cgr_step_desc d = desc(); d.name = long_name; return validate_step_desc(&d);)   \
    X(desc_newer_field_set, INVALID_ARGUMENT, "newer", return validate_newer_desc(7);)     \
    X(opt_shape_cache_zero, INVALID_ARGUMENT, "shape_cache_entries",                       \
      cgr_options o = opts(); o.shape_cache_entries = 0; return create(&o);)               \
    X(opt_churn_too_many, INVALID_ARGUMENT, "churn_shapes",                                \
      cgr_options o = opts(); o.churn_shapes = 65; return create(&o);)                     \
    X(opt_churn_window_short, INVALID_ARGUMENT, "churn_window",                            \
      cgr_options o = opts(); o.churn_window = o.churn_shapes - 1; return create(&o);)     \
    X(opt_shape_spare, INVALID_ARGUMENT, "shape_spare",                                    \
      cgr_options o = opts(); o.advanced.shape_spare = 2; return create(&o);)                      \
    X(dyn_too_many_dims, INVALID_ARGUMENT, "n_dyn_dims",                                   \
      cgr_step_desc d = dyn_desc(); d.n_dyn_dims = CGR_MAX_DYN_DIMS + 1;                   \
      return validate_step_desc(&d);)                                                 \
    X(dyn_dims_null, INVALID_ARGUMENT, "dyn_dims is NULL",                                 \
      cgr_step_desc d = dyn_desc(); d.dyn_dims = NULL; return validate_step_desc(&d);) \
    X(dyn_name_empty, INVALID_ARGUMENT, "name",                                            \
      cgr_step_desc d = dyn_desc(); dyn[0].name = ""; return validate_step_desc(&d);) \
    X(dyn_buckets_unsorted, INVALID_ARGUMENT, "increasing",                                \
      static const int64_t b[3] = {1, 4, 2}; cgr_step_desc d = dyn_desc();                 \
      dyn[0].buckets = b; dyn[0].max = 2; return validate_step_desc(&d);)             \
    X(dyn_max_not_last, INVALID_ARGUMENT, "max is 8 but the last bucket is 4",             \
      cgr_step_desc d = dyn_desc(); dyn[0].max = 8; return validate_step_desc(&d);)   \
    X(dyn_pow2_max_zero, INVALID_ARGUMENT, "max",                                          \
      cgr_step_desc d = dyn_desc(); dyn[0].buckets = NULL; dyn[0].n_buckets = 0;           \
      dyn[0].max = 0; return validate_step_desc(&d);)                                 \
    X(dyn_duplicate_name, INVALID_ARGUMENT, "used twice",                                  \
      cgr_step_desc d = dyn_desc(); dyn[1].name = "batch"; d.n_dyn_dims = 2;               \
      return validate_step_desc(&d);)                                                 \
    X(dyn_unused, INVALID_ARGUMENT, "not used",                                            \
      cgr_step_desc d = dyn_desc(); d.n_dyn_dims = 2; return validate_step_desc(&d);) \
    X(dyn_use_bad_axis, INVALID_ARGUMENT, "dim_uses[1].axis is 2",                         \
      cgr_step_desc d = dyn_desc(); uses[1].axis = 2; return validate_step_desc(&d);) \
    X(dyn_use_not_max, INVALID_ARGUMENT, "largest shape",                                  \
      cgr_step_desc d = dyn_desc(); uses[1].axis = 1; return validate_step_desc(&d);) \
    X(dyn_use_twice, INVALID_ARGUMENT, "both name",                                        \
      cgr_step_desc d = dyn_desc(); uses[1] = uses[0]; return validate_step_desc(&d);) \
    X(dyn_use_bad_tensor, INVALID_ARGUMENT, "dim_uses[1].tensor is 1",                     \
      cgr_step_desc d = dyn_desc(); uses[1].tensor = 1; return validate_step_desc(&d);) \
    X(dyn_pad_not_integer, INVALID_ARGUMENT, "padding value",                              \
      static const double pad[2] = {0.0, 0.5}; cgr_step_desc d = dyn_desc();               \
      tensors[1].dtype = CGR_DTYPE_I32; d.input_pad = pad;                                 \
      return validate_step_desc(&d);)                                                 \
    X(step_run_with_dims_null, INVALID_ARGUMENT, "cgr_step_run",                           \
      int64_t b = 1; return cgr_step_run(NULL, &b, NULL, NULL);)                           \
    X(step_launch_dead_magic, INVALID_HANDLE, "magic word",                                \
      cgr_slot sl; memset(&sl, 0, sizeof sl); return cgr_step_launch(DEAD_STEP, &sl);)     \
    X(step_run_action_null, INVALID_ARGUMENT, "NULL",                                      \
      cgr_run_action a; return cgr_step_run_action(NULL, 0, &a);)                          \
    X(step_stats_dead_magic, INVALID_HANDLE, "magic word",                                 \
      cgr_step_stats st; return cgr_step_get_stats(DEAD_STEP, &st);)                       \
    X(step_shape_at_null, INVALID_ARGUMENT, "NULL",                                        \
      cgr_shape_info si; return cgr_step_shape_at(NULL, 0, &si);)                         \
    X(ctx_dim_outside_step, INVALID_HANDLE, "inside the step",                             \
      int64_t b; return cgr_ctx_dim(FAKE_CTX, 0, &b, NULL, NULL);)                         \
    X(opt_arm_timeout_zero, INVALID_ARGUMENT, "arm_timeout_us",                            \
      cgr_options o = opts(); o.arm_timeout_us = 0; return create(&o);)                    \
    X(opt_arm_timeout_huge, INVALID_ARGUMENT, "arm_timeout_us",                            \
      cgr_options o = opts(); o.arm_timeout_us = 60000001; return create(&o);)             \
    X(desc_armable_bad, INVALID_ARGUMENT, "armable",                                       \
      cgr_step_desc d = desc(); d.armable = 2; return validate_step_desc(&d);)        \
    X(step_acquire_arm_null, INVALID_ARGUMENT, "NULL",                                     \
      cgr_slot sl; return cgr_step_acquire(NULL, NULL, CGR_ACQUIRE_ARM, &sl);)             \
    X(step_release_dead_magic, INVALID_HANDLE, "magic word",                               \
      cgr_slot sl; memset(&sl, 0, sizeof sl); return cgr_step_release(DEAD_STEP, &sl);)   \
    X(step_write_input_null, INVALID_ARGUMENT, "NULL",                                     \
      cgr_slot sl; memset(&sl, 0, sizeof sl); float x = 1.0f;                              \
      return cgr_step_write_input(NULL, &sl, 0, 0, &x, sizeof x);)                         \
    X(step_write_input_dead_magic, INVALID_HANDLE, "magic word",                           \
      cgr_slot sl; memset(&sl, 0, sizeof sl); float x = 1.0f;                              \
      return cgr_step_write_input(DEAD_STEP, &sl, 0, 0, &x, sizeof x);)                    \
    X(opt_frozen_recheck_huge, INVALID_ARGUMENT, "frozen_recheck",                         \
      cgr_options o = opts(); o.frozen_recheck = 1000000001u; return create(&o);)          \
    X(dyn_use_negative_tensor, INVALID_ARGUMENT, "dim_uses[0].tensor is -1",               \
      cgr_step_desc d = dyn_desc(); uses[0].tensor = -1; return validate_step_desc(&d);) \
    X(dyn_use_negative_axis, INVALID_ARGUMENT, "dim_uses[0].axis is -1",                   \
      cgr_step_desc d = dyn_desc(); uses[0].axis = -1; return validate_step_desc(&d);) \
    X(dyn_use_dim_past, INVALID_ARGUMENT, "dim_uses[1].dim is 1",                          \
      cgr_step_desc d = dyn_desc(); uses[1].dim = 1; return validate_step_desc(&d);) \
    X(dyn_use_dim_negative, INVALID_ARGUMENT, "dim_uses[0].dim is -1",                     \
      cgr_step_desc d = dyn_desc(); uses[0].dim = -1; return validate_step_desc(&d);) \
    X(dyn_use_bad_output, INVALID_ARGUMENT, "dim_uses[1].output is 2",                     \
      cgr_step_desc d = dyn_desc(); uses[1].output = 2; return validate_step_desc(&d);) \
    X(dyn_too_many_buckets, INVALID_ARGUMENT, "n_buckets is 65",                           \
      cgr_step_desc d = dyn_desc(); dyn[0].n_buckets = CGR_MAX_BUCKETS + 1;                \
      return validate_step_desc(&d);)                                                 \
    X(dyn_no_buckets_in_list, INVALID_ARGUMENT, "n_buckets is 0, must be 1..",             \
      cgr_step_desc d = dyn_desc(); dyn[0].n_buckets = 0; return validate_step_desc(&d);) \
    X(dyn_buckets_without_list, INVALID_ARGUMENT, "without a bucket list",                 \
      cgr_step_desc d = dyn_desc(); dyn[0].buckets = NULL; return validate_step_desc(&d);)

#define CASE_FN(name, status, word, ...)                                                   \
    static cgr_status case_##name(void)                                                    \
    {                                                                                      \
        __VA_ARGS__                                                                        \
    }
BAD_INPUT_CASES(CASE_FN)
#undef CASE_FN

static const struct {
    const char *name;
    cgr_status want;
    const char *word;
    cgr_status (*fn)(void);
} cases[] = {
#define CASE_ROW(name, status, word, ...) {#name, CGR_STATUS_##status, word, case_##name},
    BAD_INPUT_CASES(CASE_ROW)
#undef CASE_ROW
};

int main(void)
{
    memset(long_name, 'n', sizeof long_name - 1);
    int n = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < n; i++) {
        cgr__clear_error();
        cgr_status got = cases[i].fn();
        if (got != cases[i].want)
            TEST_FAIL_("case %s: got %s, expected %s (%s)", cases[i].name, cgr_status_name(got),
                       cgr_status_name(cases[i].want), cgr_last_error());
        if (!strstr(cgr_last_error(), cases[i].word))
            TEST_FAIL_("case %s: message \"%s\" lacks \"%s\"", cases[i].name, cgr_last_error(),
                       cases[i].word);
    }
    /* The fixtures the dynamic-dim cases start from are valid themselves, and so
     * are the newer structs whose extra field is left zero. */
    cgr_step_desc good = dyn_desc();
    ASSERT_OK(validate_step_desc(&good));
    ASSERT_OK(validate_newer_desc(0));
    /* Destroying NULL is allowed and leaves the pointer NULL. */
    cgr_runtime *rt = NULL;
    cgr_step *st = NULL;
    ASSERT_OK(cgr_runtime_destroy(&rt));
    ASSERT_OK(cgr_runtime_destroy(NULL));
    ASSERT_OK(cgr_step_destroy(&st));
    ASSERT_OK(cgr_step_destroy(NULL));
    /* The stamped memory was not written by any call. */
    ASSERT_EQ(dead_handle[0], CGR__MAGIC_DEAD);
    ASSERT_GE(n, 40);
    printf("PASS: %d bad-input cases\n", n);
    return 0;
}
