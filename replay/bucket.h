/*
 * Bucket policy for one dynamic dim (pure C, no CUDA; docs/shapes.md,
 * "Buckets"). A true value is rounded up to its bucket, which keys the
 * shape table. A user list: 1 to CGR__BUCKET_MAX_SIZES sizes, strictly
 * increasing, from >= 1. Powers of two up to a max: 1, 2, 4, ... below the
 * max, then the max itself (max 100: ..., 64, 100). A dim below 1 or above
 * the largest bucket has none. Nothing overflows, even for INT64_MAX.
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
 * The smallest bucket >= true_dim of a policy from an init call; true_dim
 * is 1..max (asserted: the API edge refuses other dims).
 */
int64_t cgr__bucket_choose(const cgr__bucket_policy *p, int64_t true_dim);

/** 1 when p holds what an init call makes (its kind, and sizes or a max), for assertions. */
int cgr__bucket_valid(const cgr__bucket_policy *p);

#endif
