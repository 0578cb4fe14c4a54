/*
 * Unit tests of shape signatures: construction and its checks, equality,
 * the hash's properties (deterministic, pinned, no collisions over a large
 * structured set, every one-field change detected, avalanche), colliding
 * hashes not fooling equality, and the formatter at every buffer size.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "signature.h"
#include "test.h"

#define TEST_RNG_SEED 0x9E3779B97F4A7C15ull
#include "xorshift.h"

static cgr__sig make(uint64_t step, uint32_t n, const int64_t *dims)
{
    cgr__sig s;
    memset(&s, 0xCD, sizeof s);
    ASSERT_EQ(cgr__sig_init(&s, step, n, dims), CGR_STATUS_OK);
    return s;
}

static void test_init(void)
{
    int64_t d[CGR__SIG_MAX_DIMS + 1];
    for (uint32_t i = 0; i <= CGR__SIG_MAX_DIMS; i++)
        d[i] = (int64_t)i + 1;

    cgr__sig s = make(3, 2, d);
    ASSERT_U64_EQ(s.step, 3);
    ASSERT_EQ(s.n_dims, 2);
    ASSERT_EQ(s.reserved_, 0);
    ASSERT_EQ(s.dims[0], 1);
    ASSERT_EQ(s.dims[1], 2);
    for (uint32_t i = 2; i < CGR__SIG_MAX_DIMS; i++)
        ASSERT_EQ(s.dims[i], 0);
    ASSERT_U64_EQ(s.hash, cgr__sig_hash(&s));

    /* Zero dims, with or without an array. */
    cgr__sig z0 = make(7, 0, NULL);
    cgr__sig z1 = make(7, 0, d);
    ASSERT_EQ(memcmp(&z0, &z1, sizeof z0), 0);
    ASSERT(cgr__sig_equal(&z0, &z1));

    /* The maximum number of dims. */
    cgr__sig full = make(1, CGR__SIG_MAX_DIMS, d);
    ASSERT_EQ(full.dims[CGR__SIG_MAX_DIMS - 1], CGR__SIG_MAX_DIMS);
    ASSERT_U64_EQ(full.hash, cgr__sig_hash(&full));

    /* Two equal signatures are equal byte for byte, whatever was there before. */
    cgr__sig a, b;
    memset(&a, 0x11, sizeof a);
    memset(&b, 0xEE, sizeof b);
    ASSERT_EQ(cgr__sig_init(&a, 5, 3, d), CGR_STATUS_OK);
    ASSERT_EQ(cgr__sig_init(&b, 5, 3, d), CGR_STATUS_OK);
    ASSERT_EQ(memcmp(&a, &b, sizeof a), 0);

    /* dims may alias the signature's own dims. */
    cgr__sig al = make(9, 4, d);
    cgr__sig want = make(9, 2, d);
    ASSERT_EQ(cgr__sig_init(&al, 9, 2, al.dims), CGR_STATUS_OK);
    ASSERT_EQ(memcmp(&al, &want, sizeof al), 0);

    /* Errors change nothing. */
    cgr__sig before;
    memset(&s, 0x5A, sizeof s);
    memcpy(&before, &s, sizeof s);
    ASSERT_EQ(cgr__sig_init(&s, 1, CGR__SIG_MAX_DIMS + 1, d), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__sig_init(&s, 1, UINT32_MAX, d), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__sig_init(&s, 1, 1, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(memcmp(&before, &s, sizeof s), 0);
    ASSERT_EQ(cgr__sig_init(NULL, 1, 1, d), CGR_STATUS_INVALID_ARGUMENT);
}

static void test_equal(void)
{
    int64_t d[4] = {16, 1024, 3, 7};
    cgr__sig a = make(3, 4, d);
    cgr__sig b = make(3, 4, d);

    ASSERT(cgr__sig_equal(&a, &a));
    ASSERT(cgr__sig_equal(&a, &b));
    ASSERT(cgr__sig_equal(&b, &a));
    ASSERT(!cgr__sig_equal(&a, NULL));
    ASSERT(!cgr__sig_equal(NULL, &a));
    ASSERT(!cgr__sig_equal(NULL, NULL));

    /* Each field on its own makes a difference (and, with one word changed, a new hash). */
    cgr__sig c = make(4, 4, d);
    ASSERT(!cgr__sig_equal(&a, &c));
    ASSERT(a.hash != c.hash);
    c = make(3, 3, d);
    ASSERT(!cgr__sig_equal(&a, &c));
    for (int i = 0; i < 4; i++) {
        int64_t e[4];
        memcpy(e, d, sizeof e);
        e[i]++;
        c = make(3, 4, e);
        ASSERT(!cgr__sig_equal(&a, &c));
        ASSERT(!cgr__sig_equal(&c, &a));
        ASSERT(a.hash != c.hash);
    }
    /* Order matters. */
    int64_t swapped[2] = {1024, 16};
    cgr__sig p = make(3, 2, d), q = make(3, 2, swapped);
    ASSERT(!cgr__sig_equal(&p, &q));
    ASSERT(p.hash != q.hash);
    /* A trailing zero dim is not the same as no dim. */
    int64_t z[2] = {16, 0};
    cgr__sig one = make(3, 1, z), two = make(3, 2, z), none = make(3, 0, NULL);
    ASSERT(!cgr__sig_equal(&one, &two));
    ASSERT(one.hash != two.hash);
    ASSERT(one.hash != none.hash);
    ASSERT(two.hash != none.hash);

    /* Dims past n_dims take no part in the hash or in equality. */
    cgr__sig g = make(3, 2, d);
    g.dims[2] = 999;
    g.dims[CGR__SIG_MAX_DIMS - 1] = -1;
    ASSERT_U64_EQ(cgr__sig_hash(&g), p.hash);
    ASSERT(cgr__sig_equal(&g, &p));

    /* A wild n_dims is never equal and hashes to 0. */
    cgr__sig w = make(3, 2, d);
    w.n_dims = CGR__SIG_MAX_DIMS + 1;
    ASSERT(!cgr__sig_equal(&w, &w));
    ASSERT_U64_EQ(cgr__sig_hash(&w), 0);
    ASSERT_U64_EQ(cgr__sig_hash(NULL), 0);
}

/* Forced hash collisions: equality still looks at every field. */
static void test_collisions(void)
{
    int64_t d1[2] = {16, 1024}, d2[2] = {32, 1024};
    cgr__sig a = make(3, 2, d1);
    cgr__sig b = make(3, 2, d2);
    b.hash = a.hash;
    ASSERT(!cgr__sig_equal(&a, &b));
    cgr__sig c = make(4, 2, d1);
    c.hash = a.hash;
    ASSERT(!cgr__sig_equal(&a, &c));
    cgr__sig e = make(3, 1, d1);
    e.hash = a.hash;
    ASSERT(!cgr__sig_equal(&a, &e));
    /* The stored hash is compared first: it is part of a signature's identity. */
    cgr__sig f = make(3, 2, d1);
    f.hash ^= 1;
    ASSERT(!cgr__sig_equal(&a, &f));
    /* Recomputing restores it. */
    f.hash = cgr__sig_hash(&f);
    ASSERT(cgr__sig_equal(&a, &f));
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int popcount64(uint64_t x)
{
    int n = 0;
    while (x != 0) {
        x &= x - 1;
        n++;
    }
    return n;
}

static void test_hash(void)
{
    /* Pinned: the hash must not change by accident (it is documented as stable). */
    int64_t d[2] = {16, 1024};
    cgr__sig s = make(3, 2, d);
    cgr__sig s2 = make(3, 2, d);
    ASSERT_U64_EQ(s.hash, s2.hash);
    ASSERT_U64_EQ(cgr__sig_hash(&s), s.hash);
    ASSERT_U64_EQ(s.hash, UINT64_C(0x65187e81eef4cba6));

    /*
     * No collisions over a large structured set: steps 0..3, 0..3 dims,
     * each dim a power of two 1..2^12 or its negative. Structured
     * keys (small integers, powers of two) are where weak hashes fail.
     */
    enum { VALS = 26 };
    int64_t vals[VALS];
    for (int i = 0; i < 13; i++) {
        vals[2 * i] = (int64_t)1 << i;
        vals[2 * i + 1] = -((int64_t)1 << i);
    }
    size_t cap = 4 * (1 + VALS + VALS * VALS + VALS * VALS * VALS);
    uint64_t *h = malloc(cap * sizeof *h);
    ASSERT(h != NULL);
    size_t n = 0;
    for (uint64_t step = 0; step < 4; step++) {
        h[n++] = make(step, 0, NULL).hash;
        for (int i = 0; i < VALS; i++) {
            int64_t v1[1] = {vals[i]};
            h[n++] = make(step, 1, v1).hash;
            for (int j = 0; j < VALS; j++) {
                int64_t v2[2] = {vals[i], vals[j]};
                h[n++] = make(step, 2, v2).hash;
                for (int k = 0; k < VALS; k++) {
                    int64_t v3[3] = {vals[i], vals[j], vals[k]};
                    h[n++] = make(step, 3, v3).hash;
                }
            }
        }
    }
    ASSERT_EQ(n, cap);
    qsort(h, n, sizeof *h, cmp_u64);
    for (size_t i = 1; i < n; i++)
        ASSERT(h[i] != h[i - 1]);
    /* The low bits (what a table of buckets uses) spread evenly. */
    enum { BUCKETS = 256 };
    size_t counts[BUCKETS] = {0};
    for (size_t i = 0; i < n; i++)
        counts[h[i] & (BUCKETS - 1)]++;
    for (int b = 0; b < BUCKETS; b++) {
        ASSERT_GT(counts[b], n / BUCKETS / 2);
        ASSERT_LT(counts[b], n / BUCKETS * 2);
    }
    free(h);

    /* Avalanche: one flipped input bit flips about half the output bits. */
    int64_t dims[8];
    long total = 0, trials = 0;
    for (int t = 0; t < 2000; t++) {
        for (int i = 0; i < 8; i++)
            dims[i] = (int64_t)(rng_next() & 0xFFFF);
        uint32_t nd = (uint32_t)(rng_next() % 8) + 1;
        cgr__sig base = make(rng_next() % 16, nd, dims);
        int which = (int)(rng_next() % nd);
        int bit = (int)(rng_next() % 64);
        int64_t flipped[8];
        memcpy(flipped, dims, sizeof dims);
        flipped[which] = (int64_t)((uint64_t)flipped[which] ^ (UINT64_C(1) << bit));
        cgr__sig other = make(base.step, nd, flipped);
        int diff = popcount64(base.hash ^ other.hash);
        ASSERT_GT(diff, 0);
        total += diff;
        trials++;
    }
    double mean = (double)total / (double)trials;
    ASSERT(mean > 30.0 && mean < 34.0);
}

/* Formats into a buffer with canaries after cap; checks nothing past cap is written. */
static size_t fmt(const cgr__sig *s, const cgr__sig_dim_name *names, char *out, size_t cap)
{
    char buf[512];
    size_t len = (size_t)-1;
    ASSERT(cap + 16 <= sizeof buf);
    memset(buf, '#', sizeof buf);
    ASSERT_EQ(cgr__sig_format(s, names, buf, cap, &len), CGR_STATUS_OK);
    for (size_t i = cap; i < sizeof buf; i++)
        ASSERT_EQ(buf[i], '#');
    if (cap > 0) {
        ASSERT(memchr(buf, '\0', cap) != NULL);
        memcpy(out, buf, cap);
    }
    return len;
}

static void test_format(void)
{
    char out[512];
    int64_t d[3] = {16, 1024, -5};
    cgr__sig s = make(3, 2, d);
    cgr__sig_dim_name names[3] = {{"x", 0}, {"x", 1}, {"mask", -1}};

    ASSERT_EQ(fmt(&s, names, out, sizeof out - 16), 25);
    ASSERT_STR_EQ(out, "step 3 [x.0=16, x.1=1024]");
    fmt(&s, NULL, out, 100);
    ASSERT_STR_EQ(out, "step 3 [d0=16, d1=1024]");

    cgr__sig s3 = make(12, 3, d);
    fmt(&s3, names, out, 100);
    ASSERT_STR_EQ(out, "step 12 [x.0=16, x.1=1024, mask=-5]");
    cgr__sig_dim_name partial[3] = {{"x", 0}, {NULL, 7}, {"y", 12}};
    fmt(&s3, partial, out, 100);
    ASSERT_STR_EQ(out, "step 12 [x.0=16, d1=1024, y.12=-5]");

    cgr__sig z = make(0, 0, NULL);
    fmt(&z, NULL, out, 100);
    ASSERT_STR_EQ(out, "step 0 []");

    int64_t ext[3] = {INT64_MIN, INT64_MAX, 0};
    cgr__sig e = make(UINT64_MAX, 3, ext);
    fmt(&e, NULL, out, 200);
    ASSERT_STR_EQ(out, "step 18446744073709551615 [d0=-9223372036854775808, "
                       "d1=9223372036854775807, d2=0]");

    /* Measuring only. */
    size_t len = 0;
    ASSERT_EQ(cgr__sig_format(&s, names, NULL, 0, &len), CGR_STATUS_OK);
    ASSERT_EQ(len, 25);
    ASSERT_EQ(cgr__sig_format(&s, names, NULL, 0, NULL), CGR_STATUS_OK);

    /* Every buffer size around the full text's length. */
    const char *full = "step 12 [x.0=16, x.1=1024, mask=-5]";
    size_t flen = strlen(full);
    for (size_t cap = 0; cap <= flen + 3; cap++) {
        memset(out, 0, sizeof out);
        ASSERT_EQ(fmt(&s3, names, out, cap), flen);
        if (cap == 0)
            continue;
        size_t got = strlen(out);
        if (cap > flen) {
            ASSERT_STR_EQ(out, full);
        } else if (cap >= 4) {
            /* A cut text ends with "..." after the longest prefix that fits. */
            ASSERT_EQ(got, cap - 1);
            ASSERT_EQ(memcmp(out, full, cap - 4), 0);
            ASSERT_STR_EQ(out + cap - 4, "...");
        } else {
            ASSERT_EQ(got, cap - 1);
            ASSERT_EQ(memcmp(out, full, got), 0);
        }
    }

    /* The largest signature formats in full, and measures the same. */
    int64_t big[CGR__SIG_MAX_DIMS];
    for (uint32_t i = 0; i < CGR__SIG_MAX_DIMS; i++)
        big[i] = INT64_MIN;
    cgr__sig b = make(UINT64_MAX, CGR__SIG_MAX_DIMS, big);
    size_t need = 0;
    ASSERT_EQ(cgr__sig_format(&b, NULL, NULL, 0, &need), CGR_STATUS_OK);
    char *heap = malloc(need + 1);
    ASSERT(heap != NULL);
    size_t again = 0;
    ASSERT_EQ(cgr__sig_format(&b, NULL, heap, need + 1, &again), CGR_STATUS_OK);
    ASSERT_EQ(again, need);
    ASSERT_EQ(strlen(heap), need);
    ASSERT_EQ(heap[need - 1], ']');
    ASSERT(strstr(heap, "d127=-9223372036854775808]") != NULL);
    free(heap);

    /* Errors write nothing. */
    memset(out, '#', 64);
    len = 1234;
    ASSERT_EQ(cgr__sig_format(NULL, NULL, out, 64, &len), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__sig_format(&s, NULL, NULL, 64, &len), CGR_STATUS_INVALID_ARGUMENT);
    cgr__sig w = s;
    w.n_dims = CGR__SIG_MAX_DIMS + 1;
    ASSERT_EQ(cgr__sig_format(&w, NULL, out, 64, &len), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(len, 1234);
    for (int i = 0; i < 64; i++)
        ASSERT_EQ(out[i], '#');
}

int main(void)
{
    test_init();
    test_equal();
    test_collisions();
    test_hash();
    test_format();
    printf("signature: ok\n");
    return 0;
}
