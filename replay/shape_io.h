/*
 * Moving tensors between their true shape and their bucket shape, in the
 * pinned staging slot (host side, pure C).
 *
 * A run's inputs arrive packed at the true shape (row-major). The graph
 * copies the bucket-shaped bytes to the device, so before launch each
 * input is spread out in place to the bucket's layout and the gaps are
 * filled with the padding value. Outputs come back at the bucket's layout
 * and are packed in place to the true shape before the caller reads them.
 * Both work in place because, in row-major order, element i of the true
 * layout never lands before position i of the bucket layout.
 */
#ifndef CGR_SHAPE_IO_H
#define CGR_SHAPE_IO_H

#include <stddef.h>
#include <stdint.h>

/** Bytes of a rank-`rank` tensor of `dims` with elements of `esize` bytes. */
size_t cgr__shape_bytes(int rank, const int64_t *dims, size_t esize);

/**
 * Spreads the packed tensor at the front of buf (true dims `t`) to the
 * bucket layout (dims `b`, each b[i] >= t[i]) and fills every padded
 * element with the esize-byte `pad` (NULL: zeros).
 * buf holds cgr__shape_bytes(rank, b, esize) bytes.
 */
void cgr__shape_pad(unsigned char *buf, int rank, const int64_t *t, const int64_t *b,
                    size_t esize, const unsigned char *pad);

/** The inverse without the padding: packs the bucket layout at buf to the true shape. */
void cgr__shape_compact(unsigned char *buf, int rank, const int64_t *t, const int64_t *b,
                        size_t esize);

#endif
