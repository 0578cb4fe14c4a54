#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cgr/cgr_philox.h>

#include "test_util.h"

static struct {
    void *p;
    int dev;
} live[4096];
static size_t n_live;

static void *track(void *p, int dev)
{
    if (n_live == sizeof live / sizeof live[0])
        TEST_FAIL_("more than %zu buffers alive", n_live);
    live[n_live].p = p;
    live[n_live++].dev = dev;
    return p;
}

size_t scope(void)
{
    return n_live;
}

void release(size_t mark)
{
    while (n_live > mark) {
        n_live--;
        if (live[n_live].dev)
            CUDA_OK(cudaFree(live[n_live].p));
        else
            free(live[n_live].p);
    }
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        TEST_FAIL_("out of host memory (%zu bytes)", n);
    return track(p, 0);
}

void *dmalloc(size_t n)
{
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, n ? n : 1));
    return track(p, 1);
}

void up(void *d, const void *h, size_t n)
{
    CUDA_OK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
}

void down(void *h, const void *d, size_t n)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
}

float *dev_of(const float *h, size_t n)
{
    float *d = dmalloc(n * sizeof *d);
    up(d, h, n * sizeof *d);
    return d;
}

float *down_new(const float *d, size_t n)
{
    float *h = xmalloc(n * sizeof *h);
    down(h, d, n * sizeof *h);
    return h;
}

void poison(void *d, size_t n, cudaStream_t s)
{
    CUDA_OK(cudaMemsetAsync(d, 0xff, n, s));
}

void fill(rng *r, float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rng_float(r) * scale;
}

float *rand_new(rng *r, size_t n, float scale)
{
    float *x = xmalloc(n * sizeof *x);
    fill(r, x, n, scale);
    return x;
}

double *to_double(const float *x, size_t n)
{
    double *d = xmalloc(n * sizeof *d);
    for (size_t i = 0; i < n; i++)
        d[i] = (double)x[i];
    return d;
}

double check_close(const char *name, const char *what, const float *got, const double *want,
                   const double *scale, size_t n, double rtol, double atol, double norm_tol)
{
    double worst = 0.0, num = 0.0, den = 0.0, wtol = 0.0;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        const double gv = (double)got[i], wv = want[i];
        double ratio;
        const double tol = rtol * (scale ? scale[i] : fabs(wv)) + atol;
        if (isnan(wv)) {
            ratio = isnan(gv) ? 0.0 : INFINITY;
        } else if (!isfinite(gv)) {
            ratio = INFINITY;
        } else {
            const double err = fabs(gv - wv);
            ratio = tol > 0.0 ? err / tol : (err > 0.0 ? INFINITY : 0.0);
            num += err * err;
            den += wv * wv;
        }
        if (ratio > worst) {
            worst = ratio;
            wi = i;
            wtol = tol;
        }
    }
    const double nrel = den > 0.0 ? sqrt(num / den) : sqrt(num);
    if (norm_tol > 0.0 && nrel / norm_tol > worst)
        worst = nrel / norm_tol;
    if (!(worst <= 1.0))
        TEST_FAIL_("%s: %s: worst element %zu of %zu: got %.9g want %.9g (tol %.3g); "
                   "norm-wise rel err %.3g",
                   name, what, wi, n, (double)got[wi], want[wi], wtol, nrel);
    return nrel;
}

void same_bytes(const void *a, const void *b, size_t bytes, const char *fmt, ...)
{
    if (memcmp(a, b, bytes) == 0)
        return;
    const unsigned char *x = a, *y = b;
    size_t i = 0;
    while (x[i] == y[i])
        i++;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    TEST_FAIL_("%s: not bitwise equal, first differing byte %zu of %zu", what, i, bytes);
}

int host_dropped(uint64_t seed, uint64_t counter, size_t e, float p)
{
    const cgr_philox4 r = cgr_philox4x32(seed, counter + e / 4, 0);
    return cgr_philox_uniform(r.v[e % 4]) < p;
}

double check_rate(const char *what, size_t dropped, size_t n, double p)
{
    const double rate = (double)dropped / (double)n, sigma = sqrt(p * (1.0 - p) / (double)n);
    /* Written so that a NaN rate (no decisions at all) fails too. */
    if (!(fabs(rate - p) <= 5.0 * sigma))
        TEST_FAIL_("%s: drop rate %.5f over %zu decisions, expected %.3f within %.5f", what,
                   rate, n, p, 5.0 * sigma);
    return rate;
}
