/*
 * Bucket policy (see bucket.h).
 *
 * Powers of two are computed in uint64_t: the next power of two of any
 * int64_t value >= 1 is at most 2^63, which fits, and every power above
 * max is replaced by max before it is converted back.
 *
 * Pointers, that a policy came from one of the init calls and that a dim
 * is within it are asserted (cgr's callers never break them: run.c checks
 * a run's dims at the API edge); the sizes are reported, since the API
 * edge checks a step description's buckets with the init calls.
 */
#include "bucket.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

/* Smallest power of two >= v, for 1 <= v <= 2^63. */
static uint64_t next_pow2(uint64_t v)
{
    v--;
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    v |= v >> 32;
    return v + 1;
}

cgr_status cgr__bucket_init_list(cgr__bucket_policy *p, const int64_t *sizes, uint32_t count)
{
    assert(p != NULL && sizes != NULL);
    if (count == 0 || count > CGR__BUCKET_MAX_SIZES)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (sizes[0] < 1)
        return CGR_STATUS_INVALID_ARGUMENT;
    for (uint32_t i = 1; i < count; i++)
        if (sizes[i] <= sizes[i - 1])
            return CGR_STATUS_INVALID_ARGUMENT;
    *p = (cgr__bucket_policy){.kind = CGR__BUCKET_LIST, .count = count, .max = sizes[count - 1]};
    memcpy(p->sizes, sizes, (size_t)count * sizeof sizes[0]);
    return CGR_STATUS_OK;
}

cgr_status cgr__bucket_init_pow2(cgr__bucket_policy *p, int64_t max)
{
    assert(p != NULL);
    if (max < 1)
        return CGR_STATUS_INVALID_ARGUMENT;
    *p = (cgr__bucket_policy){.kind = CGR__BUCKET_POW2, .max = max};
    return CGR_STATUS_OK;
}

int64_t cgr__bucket_choose(const cgr__bucket_policy *p, int64_t true_dim)
{
    assert(p != NULL && cgr__bucket_valid(p) && true_dim >= 1 && true_dim <= p->max);
    if (p->kind == CGR__BUCKET_POW2) {
        uint64_t b = next_pow2((uint64_t)true_dim);
        return b > (uint64_t)p->max ? p->max : (int64_t)b;
    }
    /* Smallest i with sizes[i] >= true_dim; it exists since true_dim <= max. */
    uint32_t lo = 0, hi = p->count - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->sizes[mid] >= true_dim)
            hi = mid;
        else
            lo = mid + 1;
    }
    return p->sizes[lo];
}

int cgr__bucket_valid(const cgr__bucket_policy *p)
{
    return (p->kind == CGR__BUCKET_LIST && p->count >= 1 && p->count <= CGR__BUCKET_MAX_SIZES) ||
           (p->kind == CGR__BUCKET_POW2 && p->max >= 1);
}
