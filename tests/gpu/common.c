#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "kernels.h"

void require_gpu(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("SKIP: no usable GPU (%s)\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
        exit(TEST_SKIP);
    }
}

uint64_t rng_next(rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}

float rng_float(rng *r)
{
    float v = (float)((rng_next(r) >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
    return v == 0.0f ? 0.5f : v;
}

void rng_fill(rng *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_float(r);
}

cgr_step_desc step_desc(const char *name, const cgr_tensor_desc *in, int n_in,
                        const cgr_tensor_desc *out, int n_out, cgr_step_fn fn, void *user)
{
    cgr_step_desc d;
    ASSERT_OK(cgr_step_desc_init(&d));
    d.name = name;
    d.inputs = in;
    d.n_inputs = n_in;
    d.outputs = out;
    d.n_outputs = n_out;
    d.fn = fn;
    d.user = user;
    return d;
}

cgr_step *make_step_armable(cgr_runtime *rt, const char *name, const cgr_tensor_desc *in,
                            int n_in, const cgr_tensor_desc *out, int n_out, cgr_step_fn fn,
                            void *user, int armable)
{
    cgr_step_desc d = step_desc(name, in, n_in, out, n_out, fn, user);
    d.armable = armable;
    cgr_step *s = NULL;
    ASSERT_OK(cgr_step_create(rt, &d, &s));
    return s;
}

cgr_step *make_step(cgr_runtime *rt, const char *name, const cgr_tensor_desc *in, int n_in,
                    const cgr_tensor_desc *out, int n_out, cgr_step_fn fn, void *user)
{
    return make_step_armable(rt, name, in, n_in, out, n_out, fn, user, 0);
}

cgr_step *make_xy(cgr_runtime *rt, const char *name, int64_t n, cgr_step_fn fn, void *user)
{
    cgr_tensor_desc in = tensor1("x", CGR_DTYPE_F32, n), out = tensor1("y", CGR_DTYPE_F32, n);
    return make_step(rt, name, &in, 1, &out, 1, fn, user);
}

cgr_tensor_desc tensor2(const char *name, cgr_dtype t, int64_t d0, int64_t d1)
{
    cgr_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = t;
    d.rank = 2;
    d.dims[0] = d0;
    d.dims[1] = d1;
    return d;
}

cgr_tensor_desc tensor1(const char *name, cgr_dtype t, int64_t d0)
{
    cgr_tensor_desc d = tensor2(name, t, d0, 1);
    d.rank = 1;
    return d;
}

int under_sanitizer(const char *tool)
{
    const char *v = getenv("CGR_TEST_SANITIZER");
    if (!v || !*v || strcmp(v, "0") == 0)
        return 0;
    return !tool || strcmp(v, tool) == 0;
}

uint64_t test_run(cgr_step *s, const void *const *inputs, cgr_run_action *action)
{
    uint64_t ticket;
    ASSERT_OK(cgr_step_run(s, NULL, inputs, &ticket));
    ASSERT_OK(cgr_step_wait(s, ticket));
    ASSERT_OK(cgr_step_run_action(s, ticket, action));
    return ticket;
}

const void *test_output(cgr_step *s, uint64_t ticket, int index, size_t *bytes)
{
    /* A ring per thread: the pointer stays good for the next 15 calls on this thread. */
    enum { RING = 16 };
    static _Thread_local void *buf[RING];
    static _Thread_local size_t cap[RING];
    static _Thread_local unsigned next;
    unsigned k = next++ % RING;
    size_t n = 0;
    cgr_status st = cgr_step_output(s, ticket, index, NULL, 0, &n);
    if (st != CGR_STATUS_OK)
        TEST_FAIL_("cgr_step_output(run %llu, output %d) returned %s: %s",
                   (unsigned long long)ticket, index, cgr_status_name(st), cgr_last_error());
    if (n > cap[k]) {
        free(buf[k]);
        buf[k] = malloc(n);
        cap[k] = buf[k] ? n : 0;
        if (!buf[k])
            TEST_FAIL_("out of host memory for an output of %zu bytes", n);
    }
    st = cgr_step_output(s, ticket, index, buf[k], cap[k], bytes);
    if (st != CGR_STATUS_OK)
        TEST_FAIL_("cgr_step_output(run %llu, output %d) returned %s: %s",
                   (unsigned long long)ticket, index, cgr_status_name(st), cgr_last_error());
    return buf[k];
}

cgr_status affine_step(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    const cgr_tensor_desc *d;
    float *x, *y;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_desc(ctx, 0, 0, &d));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    size_t n = 1;
    for (int i = 0; i < d->rank; i++)
        n *= (size_t)d->dims[i];
    STEP_CUDA(tk_affine(y, x, n, st));
    return CGR_STATUS_OK;
}

/*
 * One rounding per round, as in the kernel: 2 v is exact, so this multiply
 * and add give the same float whether or not nvcc fuses the kernel's.
 */
void check_affine_at(const char *file, int line, const float *x, const float *y, size_t n,
                     int times, const char *fmt, ...)
{
    for (size_t i = 0; i < n; i++) {
        float want = x[i];
        for (int k = 0; k < times; k++)
            want = 2.0f * want + 1.0f;
        if (y[i] == want && memcmp(&y[i], &want, sizeof want) == 0)
            continue;
        char what[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s:%d: %s: y[%zu] = %.9g, expected %.9g (x = %.9g)\n", file, line, what,
                i, (double)y[i], (double)want, (double)x[i]);
        exit(1);
    }
}
