/*
 * 64-bit FNV-1a: a hash that is the same on every machine and in every
 * process for the same bytes, which the capture agreement needs (ranks
 * compare hashes of step names and options) and the profiler's table of
 * kernel names uses. Header-only, so every layer may include it.
 */
#ifndef CGR_HASH_H
#define CGR_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t cgr__fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull; /* the FNV offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull; /* the FNV prime */
    }
    return h;
}

#endif
