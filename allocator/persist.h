/*
 * Persistent device allocations: step input/output buffers, weights,
 * optimizer state. Each is its own cudaMalloc, so it never moves and is
 * never handed to anyone else while it lives; graphs may bake its address.
 */
#ifndef CGR_PERSIST_H
#define CGR_PERSIST_H

#include <stddef.h>

#include "cgr/cgr.h"

typedef struct cgr__persist {
    struct cgr__persist_block {
        void *ptr;
        size_t bytes;  /**< as allocated: rounded up to 256 */
    } *blocks;
    size_t n;
    size_t cap;
    size_t bytes; /**< live bytes */
} cgr__persist;

/** 256-byte aligned device memory of at least `bytes` (>= 1), recorded in p. */
cgr_status cgr__persist_alloc(cgr__persist *p, size_t bytes, void **out);
/** Frees one allocation made by cgr__persist_alloc (NULL is a no-op). */
cgr_status cgr__persist_free(cgr__persist *p, void *ptr);
/** Frees everything still recorded. */
void cgr__persist_destroy(cgr__persist *p);

#endif
