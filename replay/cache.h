/*
 * Graph cache keyed by shape signature (pure C, no CUDA).
 *
 * Each entry maps a signature (signature.h) to an opaque payload, which the
 * runtime uses for a step shape's graph executable, and to the payload's
 * size in bytes. The cache is bounded twice:
 *
 *  - by count: at most max_entries entries (1..CGR__CACHE_MAX_ENTRIES);
 *  - by bytes: the entries' bytes add up to at most max_bytes. max_bytes 0
 *    means no byte budget (internally the budget is then SIZE_MAX, so the
 *    total can never wrap either).
 *
 * Inserting evicts least-recently-used entries until the new entry fits
 * both budgets. "Used" means inserted or found by cgr__cache_lookup();
 * cgr__cache_find() looks without touching. The cache never frees, reads
 * or calls through a payload: evicted and removed payloads are handed back
 * to the caller, who frees them. An entry larger than max_bytes on its own
 * is refused (CGR__CACHE_TOO_LARGE) rather than emptying the cache for it.
 *
 * Signatures must come from cgr__sig_init(): the cache trusts their stored
 * hash to pick a bucket, and tells colliding signatures apart with
 * cgr__sig_equal().
 *
 * Entries are addressed by an index in 0..max_entries-1 that stays valid
 * while the entry lives; a freed index may be reused by a later insert.
 * All memory is allocated by cgr__cache_init(); no other call allocates,
 * and lookups, inserts and removals take O(1) time plus a hash chain walk
 * (and one step per evicted entry). Failed calls change nothing, counters
 * included.
 */
#ifndef CGR_CACHE_H
#define CGR_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cgr/cgr.h"
#include "signature.h"

/** Largest max_entries accepted by cgr__cache_init(). */
#define CGR__CACHE_MAX_ENTRIES 4096u
/** "No entry": a miss, or the end of an iteration. */
#define CGR__CACHE_NONE UINT32_MAX
/**
 * Status of inserting an entry whose bytes alone exceed max_bytes. cgr.h
 * has no code for "over a cache budget"; OUT_OF_MEMORY is the nearest
 * (the entry's memory does not fit the budget). Tests and callers use this
 * name, so a dedicated code can replace it here alone.
 */
#define CGR__CACHE_TOO_LARGE CGR_STATUS_OUT_OF_MEMORY

/** One cached shape. Read it through cgr__cache_entry_at(); do not write. */
typedef struct cgr__cache_entry {
    cgr__sig sig;
    void *payload;
    size_t bytes;
    uint64_t hits;       /**< cgr__cache_lookup() hits on this entry */
    uint64_t last_use;   /**< cache tick of the insert or of the latest hit */
    uint64_t inserted;   /**< cache tick of the insert */
    uint32_t newer;      /**< LRU list: toward the most recent; NONE at the head */
    uint32_t older;      /**< LRU list: toward the least recent; NONE at the tail */
    uint32_t chain;      /**< next entry in the hash bucket, or in the free list */
    uint32_t live;       /**< 1 while the entry holds a shape */
} cgr__cache_entry;

/** What an eviction or removal hands back: the caller frees the payload. */
typedef struct cgr__cache_evicted {
    void *payload;
    size_t bytes;
    uint64_t step;       /**< sig.step of the entry */
    uint64_t sig_hash;   /**< sig.hash of the entry */
    uint64_t hits;
    uint32_t index;      /**< the index the entry had (now free) */
} cgr__cache_evicted;

/** Cumulative counters; only successful calls move them. */
typedef struct cgr__cache_counters {
    uint64_t lookups;    /**< cgr__cache_lookup() calls */
    uint64_t hits;
    uint64_t misses;
    uint64_t inserts;
    uint64_t evictions;  /**< entries evicted by inserts */
    uint64_t removals;   /**< entries removed by cgr__cache_remove() / _pop_lru() */
    size_t peak_bytes;   /**< highest total bytes held */
    uint32_t peak_entries;
} cgr__cache_counters;

typedef struct cgr__cache {
    cgr__cache_entry *entries;  /**< max_entries of them */
    uint32_t *heads;            /**< hash buckets: first entry or NONE */
    uint32_t max_entries;
    uint32_t head_mask;         /**< number of buckets - 1 (a power of two) */
    uint32_t count;             /**< live entries */
    uint32_t free_head;         /**< free list through .chain */
    uint32_t mru;               /**< most recently used live entry, or NONE */
    uint32_t lru;               /**< least recently used live entry, or NONE */
    size_t max_bytes;           /**< as given: 0 is no byte budget */
    size_t budget;              /**< max_bytes, or SIZE_MAX for 0 */
    size_t bytes;               /**< sum over live entries */
    uint64_t tick;              /**< advances on every insert and every hit */
    cgr__cache_counters counters;
} cgr__cache;

/**
 * An empty cache for at most max_entries entries and max_bytes bytes (0:
 * no byte budget). CGR_STATUS_INVALID_ARGUMENT when c is NULL or
 * max_entries is 0 or above CGR__CACHE_MAX_ENTRIES, CGR_STATUS_OUT_OF_MEMORY
 * when the tables cannot be allocated; *c is left unchanged on failure.
 */
cgr_status cgr__cache_init(cgr__cache *c, uint32_t max_entries, size_t max_bytes);

/**
 * Frees the cache's tables and zeroes *c; payloads still cached are not
 * touched (drain them first with cgr__cache_pop_lru() if they need
 * freeing). NULL and a zeroed cache are no-ops; destroying twice is safe.
 */
void cgr__cache_destroy(cgr__cache *c);

/**
 * Looks sig up. A hit sets *index, makes the entry the most recently used,
 * counts a hit on it and sets its last_use; a miss sets *index to
 * CGR__CACHE_NONE. Both return CGR_STATUS_OK and are counted.
 * CGR_STATUS_INVALID_ARGUMENT when an argument is NULL, sig's n_dims is out
 * of range or c is not initialized (nothing changes).
 */
cgr_status cgr__cache_lookup(cgr__cache *c, const cgr__sig *sig, uint32_t *index);

/** Like cgr__cache_lookup() but changes nothing: no LRU move, no counting. */
cgr_status cgr__cache_find(const cgr__cache *c, const cgr__sig *sig, uint32_t *index);

/**
 * How many entries an insert of `bytes` bytes would evict right now, into
 * *n. CGR__CACHE_TOO_LARGE when bytes > max_bytes (with a byte budget),
 * CGR_STATUS_INVALID_ARGUMENT for NULLs. Changes nothing.
 */
cgr_status cgr__cache_evictions_needed(const cgr__cache *c, size_t bytes, uint32_t *n);

/**
 * Inserts sig -> (payload, bytes) as the most recently used entry. First
 * evicts least-recently-used entries, oldest first, until the cache holds
 * fewer than max_entries entries and the total plus `bytes` is within the
 * byte budget; each eviction is written to evicted[0..*n_evicted) in that
 * order, and the caller owns those payloads from then on. The new entry is
 * never among them. *index (may be NULL) receives the new entry's index.
 *
 * Errors, all leaving the cache unchanged:
 *  - CGR_STATUS_INVALID_ARGUMENT: c, sig or n_evicted is NULL, sig's
 *    n_dims is out of range, c is not initialized, or the evictions needed exceed evicted_cap (an array of
 *    max_entries records is always enough; evicted may be NULL when
 *    evicted_cap is 0);
 *  - CGR_STATUS_WRONG_STATE: sig is already cached;
 *  - CGR__CACHE_TOO_LARGE: bytes > max_bytes (only with a byte budget).
 * *n_evicted is 0 on failure.
 */
cgr_status cgr__cache_insert(cgr__cache *c, const cgr__sig *sig, size_t bytes, void *payload,
                             cgr__cache_evicted *evicted, uint32_t evicted_cap,
                             uint32_t *n_evicted, uint32_t *index);

/**
 * Removes the live entry at index; *out (may be NULL) receives what it
 * held, and the caller owns the payload. CGR_STATUS_INVALID_ARGUMENT when
 * c is NULL or index is not a live entry (nothing changes).
 */
cgr_status cgr__cache_remove(cgr__cache *c, uint32_t index, cgr__cache_evicted *out);

/**
 * Removes the least recently used entry, as cgr__cache_remove() does; for
 * draining the cache, or for taking the executable that the next insert
 * would evict in order to update it in place. CGR_STATUS_WRONG_STATE when
 * the cache is empty, CGR_STATUS_INVALID_ARGUMENT when c is NULL.
 */
cgr_status cgr__cache_pop_lru(cgr__cache *c, cgr__cache_evicted *out);

/** The live entry at index, or NULL when there is none. */
const cgr__cache_entry *cgr__cache_entry_at(const cgr__cache *c, uint32_t index);

/**
 * Iteration from the most to the least recently used entry:
 *   for (uint32_t i = cgr__cache_first(c); i != CGR__CACHE_NONE; i = cgr__cache_next(c, i))
 * The cache must not change during the walk. Both return CGR__CACHE_NONE
 * at the end, for an empty or NULL cache, and for an index not live.
 */
uint32_t cgr__cache_first(const cgr__cache *c);
uint32_t cgr__cache_next(const cgr__cache *c, uint32_t index);

/** The least recently used entry (the next to be evicted), or CGR__CACHE_NONE. */
uint32_t cgr__cache_lru(const cgr__cache *c);

#endif
