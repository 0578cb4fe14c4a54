/*
 * Shared by the bench's gpu tests, on top of the gpu suite's helpers
 * (tests/gpu/common.h): buffers freed together, copies to and from the
 * device, random host data, comparisons, and dropout's decisions and rate
 * as the host computes them. Any failure fails the test (exit 1).
 */
#ifndef CGR_BENCH_TEST_UTIL_H
#define CGR_BENCH_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "common.h"

/* For the workloads' calls that return nonzero on failure and keep a message. */
#define WORK_OK(expr, last_error)                                                          \
    do {                                                                                   \
        if ((expr) != 0)                                                                   \
            TEST_FAIL_("%s: %s", #expr, last_error());                                     \
    } while (0)

/*
 * Host (xmalloc) and device (dmalloc) buffers, tracked so that a case
 * frees all it allocated with release(scope()) taken at its start, newest
 * first, instead of one by one.
 */
size_t scope(void);
void release(size_t mark);
void *xmalloc(size_t n);
void *dmalloc(size_t n);

/* n bytes from host to device; the copy is done when it returns. */
void up(void *d, const void *h, size_t n);
/* n bytes from device to host, after all the device's work so far (a failed kernel fails here). */
void down(void *h, const void *d, size_t n);
/* n floats of h in a new device buffer (dmalloc). */
float *dev_of(const float *h, size_t n);
/* n floats of device buffer d in a new host buffer (xmalloc), as down() reads them. */
float *down_new(const float *d, size_t n);
/* 0xff bytes on stream s: a NaN in every float, so an output left unwritten fails a check. */
void poison(void *d, size_t n, cudaStream_t s);

/* x[i] = rng_float(r) * scale for n floats: uniform in [-scale, scale), never 0. */
void fill(rng *r, float *x, size_t n, float scale);
/* The same in a new host buffer (xmalloc). */
float *rand_new(rng *r, size_t n, float scale);
/* x as doubles in a new host buffer (xmalloc). */
double *to_double(const float *x, size_t n);

/*
 * Element i of got passes when |got_i - want_i| <= rtol * scale_i + atol,
 * scale_i = scale[i] when given, |want_i| otherwise; a NaN want needs a NaN
 * got, and any other non-finite got fails. With norm_tol > 0, ||got -
 * want|| / ||want|| <= norm_tol too. `name` (what is checked) and `what`
 * (the case) go into the failure message. Returns the norm-wise error.
 */
double check_close(const char *name, const char *what, const float *got, const double *want,
                   const double *scale, size_t n, double rtol, double atol, double norm_tol);

/*
 * Fails with the first differing byte unless a and b are bitwise equal (a
 * bug that changes nothing but rounding still shows); the printf-style
 * fmt names what is compared in the message.
 */
void same_bytes(const void *a, const void *b, size_t bytes, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * mlp_dropout's contract: element e of a layer whose Philox counters start
 * at `counter` (state offset plus the layer's subsequence) is dropped.
 */
int host_dropped(uint64_t seed, uint64_t counter, size_t e, float p);

/* Fails unless dropped of n decisions is within 5 sigma of p; returns the rate. */
double check_rate(const char *what, size_t dropped, size_t n, double p);

#endif
