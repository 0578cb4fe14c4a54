/*
 * The device scratch arena.
 *
 * Captured graphs bake scratch addresses in, and every graph of a runtime
 * shares one arena. So the arena's base address must never change while
 * the runtime lives, yet it should hold only as much memory as the largest
 * plan needs. We get both with CUDA's virtual memory management: the whole
 * address range (the arena limit) is reserved once at creation, and
 * physical memory is mapped onto its front, chunk by chunk, when a plan
 * needs more. Growing maps new pages behind the existing ones, so no
 * address moves and no graph needs re-capturing. Growth happens only
 * between runs, never during capture.
 *
 * The driver's VMM entry points are fetched through the runtime
 * (cudaGetDriverEntryPointByVersion), so cgr does not link libcuda and the
 * test binaries still load on machines without a driver.
 */
#ifndef CGR_ARENA_H
#define CGR_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "cgr/cgr.h"

typedef struct cgr__arena {
    uintptr_t base;         /**< start of the reserved range; 0 if none */
    size_t reserved;        /**< bytes of address space reserved */
    size_t mapped;          /**< bytes backed by device memory (from base) */
    size_t granularity;     /**< mapping granularity */
    int device;
    struct cgr__arena_chunk {
        unsigned long long handle; /**< the allocation mapped there */
        size_t bytes;
    } *chunks;                     /**< the mapped chunks, from base up */
    size_t n_chunks;
    size_t cap_chunks;
} cgr__arena;

/** Reserves `limit` bytes (rounded up to the granularity) of address space. */
cgr_status cgr__arena_init(cgr__arena *a, int device, size_t limit);
/**
 * Makes sure [base, base + bytes) is backed. Never moves base.
 * CGR_STATUS_ARENA_LIMIT when bytes exceeds the reservation;
 * CGR_STATUS_OUT_OF_MEMORY when the device has no memory left (the arena
 * is unchanged then).
 */
cgr_status cgr__arena_ensure(cgr__arena *a, size_t bytes);
/** Unmaps and frees everything. Safe on a zeroed or failed arena. */
void cgr__arena_destroy(cgr__arena *a);

#endif
