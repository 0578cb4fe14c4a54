/*
 * Bucket policy for one dynamic dim (pure C, no CUDA).
 *
 * A dynamic dim's true value is rounded up to a bucket, and the bucket is
 * what keys the step's shape table: every true value that falls into one
 * bucket replays the same graph, with the inputs padded up to the bucket
 * (the true dims travel to the device separately, so kernels can mask the
 * padding). Two policies:
 *
 *  - a list given by the user: 1 to CGR__BUCKET_MAX_SIZES sizes, strictly
 *    increasing, the first >= 1. A dim is rounded up to the next size in
 *    the list; a dim above the last size is refused.
 *  - powers of two up to a max: the buckets are 1, 2, 4, ... up to the
 *    largest power of two below max, and then max itself (so max need not
 *    be a power of two: max 100 gives 1, 2, ..., 64, 100, and a true dim of
 *    65..100 pads to 100, never past the max). A dim above max is refused.
 *
 * Every value is an int64_t; nothing overflows even for max = INT64_MAX.
 */
#ifndef CGR_BUCKET_H
#define CGR_BUCKET_H

#include <stdint.h>

#include "cgr/cgr.h"

/** Most sizes a user list may hold; also the most buckets any policy has. */
#define CGR__BUCKET_MAX_SIZES 64

typedef enum cgr__bucket_kind {
    CGR__BUCKET_LIST = 1,  /**< sizes[0..count) from the user */
    CGR__BUCKET_POW2 = 2   /**< powers of two below max, then max */
} cgr__bucket_kind;

typedef struct cgr__bucket_policy {
    cgr__bucket_kind kind;
    uint32_t count;                        /**< LIST: number of sizes, 1..CGR__BUCKET_MAX_SIZES;
                                                POW2: 0 */
    int64_t max;                           /**< the largest bucket */
    int64_t sizes[CGR__BUCKET_MAX_SIZES];  /**< LIST: the sizes; zero past count.
                                                POW2: unused, zero */
} cgr__bucket_policy;

/**
 * A user list of `count` bucket sizes (p and sizes not NULL, asserted).
 * CGR_STATUS_INVALID_ARGUMENT when count is 0 or above
 * CGR__BUCKET_MAX_SIZES, a size is below 1, or the sizes are not strictly
 * increasing; *p is left unchanged.
 */
cgr_status cgr__bucket_init_list(cgr__bucket_policy *p, const int64_t *sizes, uint32_t count);

/**
 * Powers of two up to max (see the top of this file).
 * CGR_STATUS_INVALID_ARGUMENT when max < 1; *p is left unchanged.
 */
cgr_status cgr__bucket_init_pow2(cgr__bucket_policy *p, int64_t max);

/**
 * *bucketed = the smallest bucket >= true_dim of a policy from an init
 * call. CGR_STATUS_INVALID_ARGUMENT when true_dim < 1 or true_dim is above
 * the largest bucket; *bucketed is left unchanged then.
 */
cgr_status cgr__bucket_choose(const cgr__bucket_policy *p, int64_t true_dim, int64_t *bucketed);

/** 1 when p holds what an init call makes (its kind, and sizes or a max), for assertions. */
int cgr__bucket_valid(const cgr__bucket_policy *p);

#endif
