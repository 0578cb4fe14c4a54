/* Helpers shared by the gpu suite. */
#ifndef CGR_TEST_GPU_COMMON_H
#define CGR_TEST_GPU_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "cgr/cgr.h"
#include "test.h"

/* Exits 77 (skip) with a reason when no usable GPU is present. */
void require_gpu(void);

/*
 * 1 when the test runs under compute-sanitizer's `tool` (the meson setups
 * set CGR_TEST_SANITIZER to the tool's name); tool NULL: under any tool.
 */
int under_sanitizer(const char *tool);

/* xorshift64*: fresh, reproducible random data; never zeros. */
typedef struct rng {
    uint64_t s;
} rng;
uint64_t rng_next(rng *r);
/* Uniform in [-1, 1), never exactly 0. */
float rng_float(rng *r);
void rng_fill(rng *r, float *x, size_t n);

#define CUDA_OK(expr)                                                                      \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            TEST_FAIL_("%s: %s", #expr, cudaGetErrorString(e_));                           \
    } while (0)

/* Returns CGR_STATUS_CUDA_ERROR from a step function on a failed CUDA call. */
#define STEP_CUDA(expr)                                                                    \
    do {                                                                                   \
        if ((expr) != cudaSuccess)                                                         \
            return CGR_STATUS_CUDA_ERROR;                                                  \
    } while (0)

#define STEP_TRY(expr)                                                                     \
    do {                                                                                   \
        cgr_status s_ = (expr);                                                            \
        if (s_ != CGR_STATUS_OK)                                                           \
            return s_;                                                                     \
    } while (0)

/* A description of a step with the given I/O, the rest as cgr_step_desc_init() leaves it,
 * for a test to add to; any failure fails the test. */
cgr_step_desc step_desc(const char *name, const cgr_tensor_desc *in, int n_in,
                        const cgr_tensor_desc *out, int n_out, cgr_step_fn fn, void *user);
/* Creates a step on rt with the given I/O; any failure fails the test. */
cgr_step *make_step(cgr_runtime *rt, const char *name, const cgr_tensor_desc *in, int n_in,
                    const cgr_tensor_desc *out, int n_out, cgr_step_fn fn, void *user);
/* The same, with cgr_step_desc.armable = armable. */
cgr_step *make_step_armable(cgr_runtime *rt, const char *name, const cgr_tensor_desc *in,
                            int n_in, const cgr_tensor_desc *out, int n_out, cgr_step_fn fn,
                            void *user, int armable);
/* A step of one f32 input "x" and one f32 output "y", n elements each. */
cgr_step *make_xy(cgr_runtime *rt, const char *name, int64_t n, cgr_step_fn fn, void *user);

/* One run of fixed-shape step s on host inputs, waited for; its ticket, and what it did
 * in *action. Any failure fails the test. */
uint64_t test_run(cgr_step *s, const void *const *inputs, cgr_run_action *action);
/*
 * Output `index` of waited run `ticket`, copied by cgr_step_output() into a
 * buffer of the calling thread's that stays valid for its next 15 calls;
 * *bytes (may be NULL) gets its size. Any failure fails the test.
 */
const void *test_output(cgr_step *s, uint64_t ticket, int index, size_t *bytes);
/*
 * A step fn: y = 2 x + 1 (tk_affine) from f32 input 0 into output 0, over
 * every element input 0 is declared with (output 0 at least as large).
 */
cgr_status affine_step(cgr_ctx *ctx, void *user);
/*
 * Fails the test unless each y[i], i < n, is x[i] after `times` rounds of
 * v = 2 v + 1 (tk_affine's arithmetic), equal as a value and bit for bit:
 * neither a NaN nor a zero of the other sign passes. The failure, reported at
 * the caller's file:line as TEST_FAIL_ would, names the printf-formatted
 * context (run, ticket, shape...), the index, y[i], the expected value and x[i].
 */
#define check_affine(...) check_affine_at(__FILE__, __LINE__, __VA_ARGS__)
void check_affine_at(const char *file, int line, const float *x, const float *y, size_t n,
                     int times, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* A filled-in tensor description. */
cgr_tensor_desc tensor2(const char *name, cgr_dtype t, int64_t d0, int64_t d1);
cgr_tensor_desc tensor1(const char *name, cgr_dtype t, int64_t d0);

#endif
