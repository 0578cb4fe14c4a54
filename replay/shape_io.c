/*
 * Padding inputs to their bucket and packing outputs back (shape_io.h).
 *
 * The tensor is seen as rows: k is the last axis whose true and bucket
 * sizes differ, a row is everything from axis k inward (true: t[k] * inner
 * elements, bucket: b[k] * inner), and rows are numbered over the axes
 * before k. True row r goes to bucket row P(r), P increasing, P(r) >= r,
 * and bucket rows are at least as long, so copying rows from the last to
 * the first never overwrites a row not yet copied (and packing goes the
 * other way, first to last). The bucket rows that no true row lands on,
 * those between P(r) and P(r + 1), are padding, filled on the way.
 */
#include <string.h>

#include "host_write.h"
#include "shape_io.h"

size_t cgr__shape_bytes(int rank, const int64_t *dims, size_t esize)
{
    size_t n = esize;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

/* Axis k and the byte sizes of one true and one bucket row; -1 when no axis differs. */
static int rows_of(int rank, const int64_t *t, const int64_t *b, size_t esize, size_t *true_row,
                   size_t *bucket_row, size_t *n_true_rows, size_t *n_bucket_rows)
{
    int k = -1;
    for (int i = 0; i < rank; i++)
        if (t[i] != b[i])
            k = i;
    if (k < 0)
        return -1;
    size_t inner = esize;
    for (int i = k + 1; i < rank; i++)
        inner *= (size_t)b[i];
    *true_row = (size_t)t[k] * inner;
    *bucket_row = (size_t)b[k] * inner;
    *n_true_rows = *n_bucket_rows = 1;
    for (int i = 0; i < k; i++) {
        *n_true_rows *= (size_t)t[i];
        *n_bucket_rows *= (size_t)b[i];
    }
    return k;
}

/* Bucket row of true row r (mixed radix t[0..k) re-read in radix b[0..k)). */
static size_t bucket_row_of(size_t r, int k, const int64_t *t, const int64_t *b)
{
    size_t q = 0, scale = 1;
    for (int i = k - 1; i >= 0; i--) {
        size_t idx = r % (size_t)t[i];
        r /= (size_t)t[i];
        q += idx * scale;
        scale *= (size_t)b[i];
    }
    return q;
}

static void fill(unsigned char *p, size_t bytes, size_t esize, const unsigned char *pad)
{
    if (!pad) {
        cgr__host_write(p, NULL, bytes); /* streaming stores: the GPU reads it next */
        return;
    }
    for (size_t i = 0; i + esize <= bytes; i += esize)
        memcpy(p + i, pad, esize);
}

void cgr__shape_pad(unsigned char *buf, int rank, const int64_t *t, const int64_t *b,
                    size_t esize, const unsigned char *pad)
{
    size_t tr, br, nt, nb;
    int k = rows_of(rank, t, b, esize, &tr, &br, &nt, &nb);
    if (k < 0)
        return;
    size_t next = nb; /* the bucket row of true row r + 1 */
    for (size_t r = nt; r-- > 0;) {
        size_t q = bucket_row_of(r, k, t, b);
        memmove(buf + q * br, buf + r * tr, tr); /* br > tr: only row 0 stays in place */
        fill(buf + q * br + tr, br - tr, esize, pad);
        /* The bucket rows between two true rows' are the padding rows. */
        fill(buf + (q + 1) * br, (next - q - 1) * br, esize, pad);
        next = q;
    }
}

void cgr__shape_compact(unsigned char *buf, int rank, const int64_t *t, const int64_t *b,
                        size_t esize)
{
    size_t tr, br, nt, nb;
    int k = rows_of(rank, t, b, esize, &tr, &br, &nt, &nb);
    if (k < 0)
        return;
    for (size_t r = 0; r < nt; r++) {
        size_t q = bucket_row_of(r, k, t, b);
        if (q * br != r * tr)
            memmove(buf + r * tr, buf + q * br, tr);
    }
}
