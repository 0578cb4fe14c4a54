/*
 * Padding to a bucket and packing back (replay/shape_io.h): random shapes
 * of rank 0..4, every element size, true dims anywhere up to the bucket,
 * checked element by element against the index arithmetic, in place.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shape_io.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Row-major offset (in elements) of multi-index idx in dims. */
static size_t offset(int rank, const int64_t *idx, const int64_t *dims)
{
    size_t o = 0;
    for (int i = 0; i < rank; i++)
        o = o * (size_t)dims[i] + (size_t)idx[i];
    return o;
}

static int one_case(int rank, size_t es, int zero)
{
    int64_t t[4], b[4];
    for (int i = 0; i < rank; i++) {
        b[i] = 1 + (int64_t)(next() % 6);
        t[i] = 1 + (int64_t)(next() % (uint64_t)b[i]);
    }
    size_t tb = cgr__shape_bytes(rank, t, es), bb = cgr__shape_bytes(rank, b, es);
    unsigned char *buf = malloc(bb), *src = malloc(tb);
    ASSERT(buf && src);
    for (size_t i = 0; i < tb; i++)
        src[i] = (unsigned char)(1 + next() % 255); /* never the zero padding */
    for (size_t i = 0; i < bb; i++)
        buf[i] = 0xEE;
    memcpy(buf, src, tb);
    unsigned char pad[8] = {0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8};
    cgr__shape_pad(buf, rank, t, b, es, zero ? NULL : pad);
    /* Walk every element of the bucket. */
    size_t n = bb / es;
    int64_t idx[4] = {0, 0, 0, 0};
    for (size_t e = 0; e < n; e++) {
        size_t r = e;
        int inside = 1;
        for (int i = rank - 1; i >= 0; i--) {
            idx[i] = (int64_t)(r % (size_t)b[i]);
            r /= (size_t)b[i];
            inside &= idx[i] < t[i];
        }
        const unsigned char *got = buf + e * es;
        if (inside) {
            const unsigned char *want = src + offset(rank, idx, t) * es;
            if (memcmp(got, want, es) != 0)
                TEST_FAIL_("rank %d es %zu: element %zu (inside) moved wrong", rank, es, e);
        } else {
            for (size_t k = 0; k < es; k++)
                if (got[k] != (zero ? 0 : pad[k]))
                    TEST_FAIL_("rank %d es %zu: padding element %zu byte %zu is %u", rank, es,
                               e, k, got[k]);
        }
    }
    cgr__shape_compact(buf, rank, t, b, es);
    if (memcmp(buf, src, tb) != 0)
        TEST_FAIL_("rank %d es %zu: packing back did not restore the true tensor", rank, es);
    free(buf);
    free(src);
    return 0;
}

int main(void)
{
    static const size_t sizes[] = {1, 2, 4, 8};
    int cases = 0;
    for (int rep = 0; rep < 400; rep++)
        for (int rank = 0; rank <= 4; rank++)
            for (int s = 0; s < 4; s++, cases++)
                one_case(rank, sizes[s], rep & 1);
    /* W-serve's case: batch on axis 0 only; the packed input is already in place. */
    int64_t t[2] = {3, 1024}, b[2] = {4, 1024};
    ASSERT_EQ(cgr__shape_bytes(2, b, 4), (size_t)4 * 1024 * 4);
    float *x = calloc(4 * 1024, sizeof *x);
    ASSERT(x);
    for (int i = 0; i < 3 * 1024; i++)
        x[i] = (float)i + 1.0f;
    cgr__shape_pad((unsigned char *)x, 2, t, b, 4, NULL);
    for (int i = 0; i < 4 * 1024; i++)
        ASSERT(x[i] == (i < 3 * 1024 ? (float)i + 1.0f : 0.0f));
    free(x);
    printf("PASS: %d random pad/pack cases\n", cases);
    return 0;
}
