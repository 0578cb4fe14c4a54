/*
 * Shared by the bench's gpu tests, on top of the gpu suite's helpers
 * (tests/gpu/common.h): buffers freed together, bitwise comparison, and
 * dropout's decisions and rate as the host computes them. Any failure
 * fails the test (exit 1).
 */
#ifndef CGR_BENCH_TEST_UTIL_H
#define CGR_BENCH_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * Element i of got passes when |got_i - want_i| <= rtol * scale_i + atol,
 * scale_i = scale[i] when given, |want_i| otherwise; a NaN want needs a NaN
 * got, and any other non-finite got fails. With norm_tol > 0, ||got -
 * want|| / ||want|| <= norm_tol too. `name` (what is checked) and `what`
 * (the case) go into the failure message. Returns the norm-wise error.
 */
double check_close(const char *name, const char *what, const float *got, const double *want,
                   const double *scale, size_t n, double rtol, double atol, double norm_tol);

/* Fails with the first differing byte unless a and b are bitwise equal. */
void same_bytes(const char *what, const void *a, const void *b, size_t bytes);

/*
 * mlp_dropout's contract: element e of a layer whose Philox counters start
 * at `counter` (state offset plus the layer's subsequence) is dropped.
 */
int host_dropped(uint64_t seed, uint64_t counter, size_t e, float p);

/* Fails unless dropped of n decisions is within 5 sigma of p; returns the rate. */
double check_rate(const char *what, size_t dropped, size_t n, double p);

#endif
