/*
 * Unit tests of the bucket policies: every boundary (1, each bucket edge and
 * edge + 1, the max and max + 1, 0, negatives), invalid user lists, powers
 * of two up to INT64_MAX without overflow, every bucket a policy should
 * have mapping to itself, and a brute-force comparison over many small
 * policies.
 * A failed init must leave the policy unchanged; a dim outside the policy
 * (which the API edge refuses) stops at an assertion.
 */
#define _POSIX_C_SOURCE 200809L /* fork, for the asserted preconditions */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bucket.h"
#include "death.h"
#include "test.h"

/* choose() must answer `want`. */
static void expect_bucket(const cgr__bucket_policy *p, int64_t d, int64_t want)
{
    const int64_t got = cgr__bucket_choose(p, d);
    if (got != want)
        TEST_FAIL_("dim %lld: bucket %lld, expected %lld", (long long)d, (long long)got,
                   (long long)want);
}

/* A dim outside the policy: choose() must stop at its assertion. */
static void expect_refused(const cgr__bucket_policy *p, int64_t d)
{
    ASSERT_DIES(cgr__bucket_choose(p, d));
}

static void expect_init_list_fails(const int64_t *sizes, uint32_t count)
{
    cgr__bucket_policy p, before;
    memset(&p, 0x3C, sizeof p);
    memcpy(&before, &p, sizeof p);
    ASSERT_EQ(cgr__bucket_init_list(&p, sizes, count), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(memcmp(&before, &p, sizeof p), 0);
}

/* The smallest entry of an ascending list >= d, or -1. */
static int64_t ref_list(const int64_t *sizes, uint32_t n, int64_t d)
{
    if (d < 1)
        return -1;
    for (uint32_t i = 0; i < n; i++)
        if (sizes[i] >= d)
            return sizes[i];
    return -1;
}

/* The obvious loop, in a type wide enough for the small maxima it is used with. */
static int64_t ref_pow2(int64_t max, int64_t d)
{
    if (d < 1 || d > max)
        return -1;
    int64_t b = 1;
    while (b < d)
        b *= 2;
    return b > max ? max : b;
}

/* The buckets bucket.h defines for a policy, in increasing order; returns how many. */
static uint32_t buckets_of(const cgr__bucket_policy *p, int64_t out[CGR__BUCKET_MAX_SIZES])
{
    uint32_t n = 0;
    if (p->kind == CGR__BUCKET_LIST) {
        for (; n < p->count; n++)
            out[n] = p->sizes[n];
        return n;
    }
    /* Powers of two below max (in uint64_t: 2^63 ends the loop without overflow), then max. */
    for (uint64_t b = 1; b < (uint64_t)p->max; b *= 2)
        out[n++] = (int64_t)b;
    out[n++] = p->max;
    return n;
}

/* choose() agrees with the policy's buckets, of which there are want_count:
 * each bucket maps to itself, and so do the values just above the previous
 * bucket and just below it. */
static void check_buckets(const cgr__bucket_policy *p, uint32_t want_count)
{
    int64_t b[CGR__BUCKET_MAX_SIZES], prev = 0;
    const uint32_t n = buckets_of(p, b);
    if (want_count) /* 0: a sweep, where the count is only bounded */
        ASSERT_EQ(n, want_count);
    ASSERT_LE(n, CGR__BUCKET_MAX_SIZES);
    for (uint32_t i = 0; i < n; i++) {
        ASSERT_GT(b[i], prev);
        expect_bucket(p, b[i], b[i]);
        expect_bucket(p, prev + 1, b[i]);
        if (b[i] - prev > 2)
            expect_bucket(p, b[i] - 1, b[i]);
        prev = b[i];
    }
    ASSERT_EQ(prev, p->max);
    if (p->max < INT64_MAX)
        expect_refused(p, p->max + 1);
    expect_refused(p, 0);
    expect_refused(p, -1);
    expect_refused(p, INT64_MIN);
}

static void test_list_serve(void)
{
    /* W-serve's buckets. */
    const int64_t sizes[] = {1, 2, 4, 8, 16, 32, 64};
    cgr__bucket_policy p;
    ASSERT_EQ(cgr__bucket_init_list(&p, sizes, 7), CGR_STATUS_OK);
    ASSERT_EQ(p.kind, CGR__BUCKET_LIST);
    ASSERT_EQ(p.count, 7);
    ASSERT_EQ(p.max, 64);

    expect_bucket(&p, 1, 1);
    expect_bucket(&p, 2, 2);
    expect_bucket(&p, 3, 4);
    for (int i = 0; i < 7; i++) {
        expect_bucket(&p, sizes[i], sizes[i]);
        if (i + 1 < 7)
            expect_bucket(&p, sizes[i] + 1, sizes[i + 1]);
    }
    expect_bucket(&p, 33, 64);
    expect_bucket(&p, 63, 64);
    expect_bucket(&p, 64, 64);
    expect_refused(&p, 65);
    expect_refused(&p, INT64_MAX);
    expect_refused(&p, 0);
    expect_refused(&p, -1);
    expect_refused(&p, -64);
    expect_refused(&p, INT64_MIN);
    for (int64_t d = -3; d <= 70; d++) {
        int64_t want = ref_list(sizes, 7, d);
        if (want < 0)
            expect_refused(&p, d);
        else
            expect_bucket(&p, d, want);
    }
    check_buckets(&p, 7);
}

static void test_list_shapes(void)
{
    cgr__bucket_policy p;

    /* A first bucket above 1: everything below pads up to it. */
    const int64_t a[] = {8, 100, 1000};
    ASSERT_EQ(cgr__bucket_init_list(&p, a, 3), CGR_STATUS_OK);
    expect_bucket(&p, 1, 8);
    expect_bucket(&p, 7, 8);
    expect_bucket(&p, 8, 8);
    expect_bucket(&p, 9, 100);
    expect_bucket(&p, 100, 100);
    expect_bucket(&p, 101, 1000);
    expect_bucket(&p, 1000, 1000);
    expect_refused(&p, 1001);
    expect_refused(&p, 0);
    check_buckets(&p, 3);

    /* One bucket. */
    const int64_t one[] = {5};
    ASSERT_EQ(cgr__bucket_init_list(&p, one, 1), CGR_STATUS_OK);
    expect_bucket(&p, 1, 5);
    expect_bucket(&p, 5, 5);
    expect_refused(&p, 6);
    check_buckets(&p, 1);
    const int64_t just1[] = {1};
    ASSERT_EQ(cgr__bucket_init_list(&p, just1, 1), CGR_STATUS_OK);
    expect_bucket(&p, 1, 1);
    expect_refused(&p, 2);
    expect_refused(&p, 0);

    /* Up to INT64_MAX. */
    const int64_t huge[] = {1, INT64_MAX - 1, INT64_MAX};
    ASSERT_EQ(cgr__bucket_init_list(&p, huge, 3), CGR_STATUS_OK);
    expect_bucket(&p, 2, INT64_MAX - 1);
    expect_bucket(&p, INT64_MAX - 1, INT64_MAX - 1);
    expect_bucket(&p, INT64_MAX, INT64_MAX);
    check_buckets(&p, 3);

    /* The longest list: 64 sizes, 3, 6, 9, ... */
    int64_t many[CGR__BUCKET_MAX_SIZES + 1];
    for (int i = 0; i <= (int)CGR__BUCKET_MAX_SIZES; i++)
        many[i] = 3 * (int64_t)(i + 1);
    ASSERT_EQ(cgr__bucket_init_list(&p, many, CGR__BUCKET_MAX_SIZES), CGR_STATUS_OK);
    ASSERT_EQ(p.max, 3 * (int64_t)CGR__BUCKET_MAX_SIZES);
    for (int64_t d = -2; d <= p.max + 3; d++) {
        int64_t want = ref_list(many, CGR__BUCKET_MAX_SIZES, d);
        if (want < 0)
            expect_refused(&p, d);
        else
            expect_bucket(&p, d, want);
    }
    check_buckets(&p, CGR__BUCKET_MAX_SIZES);
    /* The unused tail of sizes[] is zero. */
    const int64_t two[] = {3, 9};
    ASSERT_EQ(cgr__bucket_init_list(&p, two, 2), CGR_STATUS_OK);
    for (uint32_t i = 2; i < CGR__BUCKET_MAX_SIZES; i++)
        ASSERT_EQ(p.sizes[i], 0);
}

static void test_list_invalid(void)
{
    int64_t many[CGR__BUCKET_MAX_SIZES + 1];
    for (int i = 0; i <= (int)CGR__BUCKET_MAX_SIZES; i++)
        many[i] = (int64_t)(i + 1);
    expect_init_list_fails(many, CGR__BUCKET_MAX_SIZES + 1);  /* too many */
    expect_init_list_fails(many, UINT32_MAX);
    expect_init_list_fails(many, 0);                          /* empty */
    ASSERT_DIES(cgr__bucket_init_list(&(cgr__bucket_policy){0}, NULL, 3));
    const int64_t zero_first[] = {0, 1, 2};
    expect_init_list_fails(zero_first, 3);
    expect_init_list_fails(zero_first, 1);
    const int64_t neg[] = {-4, 2};
    expect_init_list_fails(neg, 2);
    const int64_t min[] = {INT64_MIN};
    expect_init_list_fails(min, 1);
    const int64_t dup[] = {1, 2, 2, 4};
    expect_init_list_fails(dup, 4);
    const int64_t down[] = {1, 8, 4};
    expect_init_list_fails(down, 3);
    const int64_t down_last[] = {1, 2, 4, 8, 16, 32, 64, 63};
    expect_init_list_fails(down_last, 8);
    const int64_t down_first[] = {4, 2, 8};
    expect_init_list_fails(down_first, 3);
    /* But a prefix that is valid is accepted. */
    cgr__bucket_policy p;
    ASSERT_EQ(cgr__bucket_init_list(&p, down_last, 7), CGR_STATUS_OK);
    ASSERT_DIES(cgr__bucket_init_list(NULL, down_last, 7));
}

static void test_pow2(void)
{
    cgr__bucket_policy p;

    ASSERT_EQ(cgr__bucket_init_pow2(&p, 64), CGR_STATUS_OK);
    ASSERT_EQ(p.kind, CGR__BUCKET_POW2);
    ASSERT_EQ(p.max, 64);
    expect_bucket(&p, 1, 1);
    expect_bucket(&p, 2, 2);
    expect_bucket(&p, 3, 4);
    for (int64_t b = 1; b <= 64; b *= 2) {
        expect_bucket(&p, b, b);
        if (b > 2)
            expect_bucket(&p, b - 1, b);
        if (b < 64)
            expect_bucket(&p, b + 1, b * 2);
    }
    expect_refused(&p, 65);
    expect_refused(&p, 128);
    expect_refused(&p, 0);
    expect_refused(&p, -1);
    expect_refused(&p, INT64_MIN);
    check_buckets(&p, 7);

    /* A max that is not a power of two is the last bucket. */
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 100), CGR_STATUS_OK);
    expect_bucket(&p, 64, 64);
    expect_bucket(&p, 65, 100);
    expect_bucket(&p, 99, 100);
    expect_bucket(&p, 100, 100);
    expect_refused(&p, 101);
    check_buckets(&p, 8);

    /* The smallest maxima. */
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 1), CGR_STATUS_OK);
    expect_bucket(&p, 1, 1);
    expect_refused(&p, 2);
    check_buckets(&p, 1);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 2), CGR_STATUS_OK);
    check_buckets(&p, 2);
    expect_bucket(&p, 2, 2);
    expect_refused(&p, 3);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 3), CGR_STATUS_OK);
    check_buckets(&p, 3);
    expect_bucket(&p, 3, 3);
    expect_refused(&p, 4);

    /* The largest: no overflow on the way to 2^63. */
    const int64_t p62 = INT64_C(1) << 62;
    ASSERT_EQ(cgr__bucket_init_pow2(&p, INT64_MAX), CGR_STATUS_OK);
    expect_bucket(&p, p62 - 1, p62);
    expect_bucket(&p, p62, p62);
    expect_bucket(&p, p62 + 1, INT64_MAX);
    expect_bucket(&p, INT64_MAX - 1, INT64_MAX);
    expect_bucket(&p, INT64_MAX, INT64_MAX);
    check_buckets(&p, 64);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, p62), CGR_STATUS_OK);
    expect_bucket(&p, p62 - 1, p62);
    expect_bucket(&p, p62, p62);
    expect_refused(&p, p62 + 1);
    expect_refused(&p, INT64_MAX);
    check_buckets(&p, 63);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, p62 + 1), CGR_STATUS_OK);
    expect_bucket(&p, p62 + 1, p62 + 1);
    check_buckets(&p, 64);

    /* Against the obvious loop, for every max up to 300 and every dim around it. */
    for (int64_t max = 1; max <= 300; max++) {
        ASSERT_EQ(cgr__bucket_init_pow2(&p, max), CGR_STATUS_OK);
        for (int64_t d = -2; d <= max + 2; d++) {
            int64_t want = ref_pow2(max, d);
            if (want < 0)
                expect_refused(&p, d);
            else
                expect_bucket(&p, d, want);
        }
        check_buckets(&p, 0);
    }

    /* Invalid maxima change nothing. */
    cgr__bucket_policy before;
    memset(&p, 0x77, sizeof p);
    memcpy(&before, &p, sizeof p);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, -1), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__bucket_init_pow2(&p, INT64_MIN), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(memcmp(&before, &p, sizeof p), 0);
    ASSERT_DIES(cgr__bucket_init_pow2(NULL, 8));
}

static void test_bad_policy(void)
{
    cgr__bucket_policy p;
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 8), CGR_STATUS_OK);
    ASSERT_DIES(cgr__bucket_choose(NULL, 4));
    /* A zeroed (never initialized) or corrupt policy is asserted, not read. */
    memset(&p, 0, sizeof p);
    ASSERT_DIES(cgr__bucket_choose(&p, 1));
    ASSERT_EQ(cgr__bucket_init_pow2(&p, 8), CGR_STATUS_OK);
    p.kind = (cgr__bucket_kind)9;
    ASSERT_DIES(cgr__bucket_choose(&p, 1));
}

int main(void)
{
    test_list_serve();
    test_list_shapes();
    test_list_invalid();
    test_pow2();
    test_bad_policy();
    printf("bucket: ok\n");
    return 0;
}
