/*
 * Bucket policy (see bucket.h).
 *
 * Powers of two are computed in uint64_t: the next power of two of any
 * int64_t value >= 1 is at most 2^63, which fits, and every power above
 * max is replaced by max before it is converted back.
 *
 * Pointers, and that a policy came from one of the init calls, are
 * asserted (cgr's callers never break either); the sizes and dims are
 * reported, since they come from the caller of the public API.
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
    cgr__bucket_policy t;
    memset(&t, 0, sizeof t);
    t.kind = CGR__BUCKET_LIST;
    t.count = count;
    t.max = sizes[count - 1];
    memcpy(t.sizes, sizes, (size_t)count * sizeof sizes[0]);
    *p = t;
    return CGR_STATUS_OK;
}

cgr_status cgr__bucket_init_pow2(cgr__bucket_policy *p, int64_t max)
{
    assert(p != NULL);
    if (max < 1)
        return CGR_STATUS_INVALID_ARGUMENT;
    cgr__bucket_policy t;
    memset(&t, 0, sizeof t);
    t.kind = CGR__BUCKET_POW2;
    t.max = max;
    *p = t;
    return CGR_STATUS_OK;
}

cgr_status cgr__bucket_choose(const cgr__bucket_policy *p, int64_t true_dim, int64_t *bucketed)
{
    assert(p != NULL && bucketed != NULL && cgr__bucket_valid(p));
    if (true_dim < 1 || true_dim > p->max)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (p->kind == CGR__BUCKET_POW2) {
        uint64_t b = next_pow2((uint64_t)true_dim);
        *bucketed = b > (uint64_t)p->max ? p->max : (int64_t)b;
        return CGR_STATUS_OK;
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
    *bucketed = p->sizes[lo];
    return CGR_STATUS_OK;
}

int cgr__bucket_valid(const cgr__bucket_policy *p)
{
    return (p->kind == CGR__BUCKET_LIST && p->count >= 1 && p->count <= CGR__BUCKET_MAX_SIZES) ||
           (p->kind == CGR__BUCKET_POW2 && p->max >= 1);
}
