/*
 * Unit tests of the graph cache.
 *
 * Fixed sequences pin down LRU order, both budgets, the refusal of an
 * oversized entry, the payloads handed back, removal, forced hash
 * collisions and argument checks. Then 100,000 random operations over
 * several configurations compare the cache, after every single operation,
 * with a reference model that keeps its entries in a plain array in
 * recency order; every failed call must leave the cache's memory
 * byte-for-byte unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "test.h"

#define TEST_RNG_SEED 0x2545F4914F6CDD1Dull
#include "xorshift.h"

static uint64_t rng_below(uint64_t n)
{
    return rng_next() % n;
}

/*
 * Key k's signature: its shape varies with k (step, number of dims,
 * values). collide 0 keeps the true hash; 1 folds it to 4 values; 2 gives
 * every key the same hash, so every entry shares one chain.
 */
static cgr__sig key_sig(uint32_t k, int collide)
{
    int64_t dims[3] = {(int64_t)k * 16 + 1, 1024 - (int64_t)k, (int64_t)(k % 7)};
    cgr__sig s;
    ASSERT_EQ(cgr__sig_init(&s, k % 5, 1 + k % 3, dims), CGR_STATUS_OK);
    if (collide == 1)
        s.hash &= 3;
    else if (collide == 2)
        s.hash = 42;
    return s;
}

static void *pl(uintptr_t id)
{
    return (void *)id;
}

/* ---- byte-for-byte snapshots --------------------------------------------------- */

typedef struct snap {
    cgr__cache c;
    void *entries;
    void *heads;
} snap;

static void snap_take(snap *s, const cgr__cache *c)
{
    memcpy(&s->c, c, sizeof *c);
    s->entries = NULL;
    s->heads = NULL;
    if (c->entries != NULL) {
        s->entries = malloc((size_t)c->max_entries * sizeof *c->entries);
        s->heads = malloc(((size_t)c->head_mask + 1) * sizeof *c->heads);
        ASSERT(s->entries != NULL && s->heads != NULL);
        memcpy(s->entries, c->entries, (size_t)c->max_entries * sizeof *c->entries);
        memcpy(s->heads, c->heads, ((size_t)c->head_mask + 1) * sizeof *c->heads);
    }
}

static void snap_check(snap *s, const cgr__cache *c)
{
    ASSERT_EQ(memcmp(&s->c, c, sizeof *c), 0);
    if (s->entries != NULL) {
        ASSERT_EQ(memcmp(s->entries, c->entries, (size_t)c->max_entries * sizeof *c->entries), 0);
        ASSERT_EQ(memcmp(s->heads, c->heads, ((size_t)c->head_mask + 1) * sizeof *c->heads), 0);
    }
    free(s->entries);
    free(s->heads);
}

#define EXPECT_FAIL_UNCHANGED(c, call, want)                                               \
    do {                                                                                   \
        snap s_;                                                                           \
        snap_take(&s_, (c));                                                               \
        ASSERT_EQ((call), (want));                                                         \
        snap_check(&s_, (c));                                                              \
    } while (0)

/* ---- helpers for the fixed tests ------------------------------------------------- */

static uint32_t insert_ok(cgr__cache *c, uint32_t key, size_t bytes, uintptr_t payload,
                          cgr__cache_evicted *ev, uint32_t *n_ev)
{
    cgr__sig s = key_sig(key, 0);
    uint32_t idx = CGR__CACHE_NONE, n = UINT32_MAX;
    cgr__cache_evicted local[CGR__CACHE_MAX_ENTRIES];
    ASSERT_EQ(cgr__cache_insert(c, &s, bytes, pl(payload), ev != NULL ? ev : local,
                                CGR__CACHE_MAX_ENTRIES, &n, &idx),
              CGR_STATUS_OK);
    ASSERT_NE(idx, CGR__CACHE_NONE);
    if (n_ev != NULL)
        *n_ev = n;
    else
        ASSERT_EQ(n, 0);
    return idx;
}

static uint32_t lookup(cgr__cache *c, uint32_t key)
{
    cgr__sig s = key_sig(key, 0);
    uint32_t idx = 12345;
    ASSERT_EQ(cgr__cache_lookup(c, &s, &idx), CGR_STATUS_OK);
    return idx;
}

/* The payloads from most to least recent, as a 0-terminated list. */
static void expect_order(const cgr__cache *c, const uintptr_t *want)
{
    size_t n = 0;
    size_t bytes = 0;
    for (uint32_t i = cgr__cache_first(c); i != CGR__CACHE_NONE; i = cgr__cache_next(c, i)) {
        const cgr__cache_entry *e = cgr__cache_entry_at(c, i);
        ASSERT(e != NULL);
        ASSERT(want[n] != 0);
        ASSERT_EQ((uintptr_t)e->payload, want[n]);
        bytes += e->bytes;
        n++;
    }
    ASSERT_EQ(want[n], 0);
    ASSERT_EQ(c->count, n);
    ASSERT_EQ(c->bytes, bytes);
    if (n > 0)
        ASSERT_EQ((uintptr_t)cgr__cache_entry_at(c, cgr__cache_lru(c))->payload, want[n - 1]);
    else
        ASSERT_EQ(cgr__cache_lru(c), CGR__CACHE_NONE);
}

static void test_init(void)
{
    cgr__cache c, before;
    memset(&c, 0x5A, sizeof c);
    memcpy(&before, &c, sizeof c);
    ASSERT_EQ(cgr__cache_init(&c, 0, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__cache_init(&c, CGR__CACHE_MAX_ENTRIES + 1, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__cache_init(&c, UINT32_MAX, 100), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(memcmp(&c, &before, sizeof c), 0);
    ASSERT_EQ(cgr__cache_init(NULL, 4, 0), CGR_STATUS_INVALID_ARGUMENT);

    ASSERT_EQ(cgr__cache_init(&c, CGR__CACHE_MAX_ENTRIES, 0), CGR_STATUS_OK);
    ASSERT_EQ(c.count, 0);
    ASSERT_EQ(c.bytes, 0);
    ASSERT_EQ(c.budget, SIZE_MAX);
    ASSERT_GE(c.head_mask + 1, 2 * CGR__CACHE_MAX_ENTRIES);
    ASSERT_EQ(cgr__cache_first(&c), CGR__CACHE_NONE);
    ASSERT_EQ(cgr__cache_lru(&c), CGR__CACHE_NONE);
    /* Fill it completely: no eviction until the 4097th. */
    for (uint32_t k = 0; k < CGR__CACHE_MAX_ENTRIES; k++)
        insert_ok(&c, k, 1, k + 1, NULL, NULL);
    ASSERT_EQ(c.count, CGR__CACHE_MAX_ENTRIES);
    for (uint32_t k = 0; k < CGR__CACHE_MAX_ENTRIES; k += 97)
        ASSERT_NE(lookup(&c, k), CGR__CACHE_NONE);
    cgr__cache_evicted ev[1];
    uint32_t n;
    insert_ok(&c, CGR__CACHE_MAX_ENTRIES, 1, 99999, ev, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 2); /* key 0 was looked up, so key 1 is oldest */
    cgr__cache_destroy(&c);
    ASSERT(c.entries == NULL);
    cgr__cache_destroy(&c);
    cgr__cache_destroy(NULL);

    /* A destroyed (zeroed) cache refuses everything. */
    cgr__sig s = key_sig(1, 0);
    uint32_t idx = 7;
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_lookup(&c, &s, &idx), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_find(&c, &s, &idx), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s, 1, NULL, NULL, 0, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(&c, 0, NULL), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_pop_lru(&c, NULL), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_evictions_needed(&c, 1, &n), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(idx, 7);
    ASSERT(cgr__cache_entry_at(&c, 0) == NULL);
    ASSERT_EQ(cgr__cache_first(&c), CGR__CACHE_NONE);
    ASSERT_EQ(cgr__cache_next(&c, 0), CGR__CACHE_NONE);
    ASSERT_EQ(cgr__cache_lru(&c), CGR__CACHE_NONE);
    ASSERT_EQ(cgr__cache_first(NULL), CGR__CACHE_NONE);
}

static void test_lru(void)
{
    cgr__cache c;
    cgr__cache_evicted ev[4];
    uint32_t n;
    ASSERT_EQ(cgr__cache_init(&c, 3, 0), CGR_STATUS_OK);

    uint32_t ia = insert_ok(&c, 10, 100, 0xA, NULL, NULL);
    uint32_t ib = insert_ok(&c, 11, 200, 0xB, NULL, NULL);
    uint32_t ic = insert_ok(&c, 12, 300, 0xC, NULL, NULL);
    ASSERT(ia != ib && ib != ic && ia != ic);
    expect_order(&c, (const uintptr_t[]){0xC, 0xB, 0xA, 0});
    ASSERT_U64_EQ(c.tick, 3);
    ASSERT_U64_EQ(cgr__cache_entry_at(&c, ia)->inserted, 1);
    ASSERT_U64_EQ(cgr__cache_entry_at(&c, ic)->last_use, 3);

    /* A hit moves the entry to the front and counts. */
    ASSERT_EQ(lookup(&c, 10), ia);
    expect_order(&c, (const uintptr_t[]){0xA, 0xC, 0xB, 0});
    const cgr__cache_entry *ea = cgr__cache_entry_at(&c, ia);
    ASSERT_U64_EQ(ea->hits, 1);
    ASSERT_U64_EQ(ea->last_use, 4);
    ASSERT_U64_EQ(ea->inserted, 1);
    ASSERT_EQ(lookup(&c, 10), ia); /* already at the front */
    ASSERT_U64_EQ(ea->hits, 2);
    ASSERT_U64_EQ(ea->last_use, 5);
    expect_order(&c, (const uintptr_t[]){0xA, 0xC, 0xB, 0});

    /* find looks without touching anything. */
    snap s;
    snap_take(&s, &c);
    cgr__sig sb = key_sig(11, 0);
    uint32_t idx = 0;
    ASSERT_EQ(cgr__cache_find(&c, &sb, &idx), CGR_STATUS_OK);
    ASSERT_EQ(idx, ib);
    cgr__sig sx = key_sig(99, 0);
    ASSERT_EQ(cgr__cache_find(&c, &sx, &idx), CGR_STATUS_OK);
    ASSERT_EQ(idx, CGR__CACHE_NONE);
    snap_check(&s, &c);

    /* A miss counts, moves nothing. */
    ASSERT_EQ(lookup(&c, 99), CGR__CACHE_NONE);
    expect_order(&c, (const uintptr_t[]){0xA, 0xC, 0xB, 0});
    ASSERT_U64_EQ(c.counters.lookups, 3);
    ASSERT_U64_EQ(c.counters.hits, 2);
    ASSERT_U64_EQ(c.counters.misses, 1);
    ASSERT_U64_EQ(c.tick, 5);

    /* Full: the next insert evicts the least recently used (B) and hands it back. */
    ASSERT_EQ(cgr__cache_lru(&c), ib);
    ASSERT_EQ(cgr__cache_evictions_needed(&c, 1, &n), CGR_STATUS_OK);
    ASSERT_EQ(n, 1);
    uint32_t id = insert_ok(&c, 13, 400, 0xD, ev, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 0xB);
    ASSERT_EQ(ev[0].bytes, 200);
    ASSERT_U64_EQ(ev[0].step, key_sig(11, 0).step);
    ASSERT_U64_EQ(ev[0].sig_hash, key_sig(11, 0).hash);
    ASSERT_U64_EQ(ev[0].hits, 0);
    ASSERT_EQ(ev[0].index, ib);
    ASSERT_EQ(id, ib); /* its slot was reused */
    expect_order(&c, (const uintptr_t[]){0xD, 0xA, 0xC, 0});
    ASSERT_EQ(lookup(&c, 11), CGR__CACHE_NONE);
    ASSERT_U64_EQ(c.counters.evictions, 1);
    ASSERT_U64_EQ(c.counters.inserts, 4);
    ASSERT_EQ(c.bytes, 800);
    ASSERT_EQ(c.counters.peak_bytes, 800);
    ASSERT_EQ(c.counters.peak_entries, 3);

    /* Hits decide what goes next: touch C, then E evicts A. */
    ASSERT_EQ(lookup(&c, 12), ic);
    insert_ok(&c, 14, 1, 0xE, ev, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 0xA);
    ASSERT_U64_EQ(ev[0].hits, 2);
    expect_order(&c, (const uintptr_t[]){0xE, 0xC, 0xD, 0});
    ASSERT_EQ(c.counters.peak_bytes, 800);
    cgr__cache_destroy(&c);
}

static void test_bytes(void)
{
    cgr__cache c;
    cgr__cache_evicted ev[8];
    uint32_t n, idx;
    ASSERT_EQ(cgr__cache_init(&c, 10, 100), CGR_STATUS_OK);
    ASSERT_EQ(c.budget, 100);

    insert_ok(&c, 1, 40, 1, NULL, NULL);
    insert_ok(&c, 2, 40, 2, NULL, NULL);
    insert_ok(&c, 3, 20, 3, NULL, NULL); /* exactly 100: fits */
    expect_order(&c, (const uintptr_t[]){3, 2, 1, 0});
    insert_ok(&c, 4, 0, 4, NULL, NULL);  /* 0 bytes always fits */

    /* 30 more bytes: the oldest (40) goes, 90 remain. */
    insert_ok(&c, 5, 30, 5, ev, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 1);
    ASSERT_EQ(c.bytes, 90);
    expect_order(&c, (const uintptr_t[]){5, 4, 3, 2, 0});

    /* 75 bytes: 2 (40), 3 (20), the 0-byte 4 and 5 (30, since 30 + 75 > 100) go, oldest first. */
    ASSERT_EQ(cgr__cache_evictions_needed(&c, 75, &n), CGR_STATUS_OK);
    ASSERT_EQ(n, 4);
    insert_ok(&c, 6, 75, 6, ev, &n);
    ASSERT_EQ(n, 4);
    ASSERT_EQ((uintptr_t)ev[0].payload, 2);
    ASSERT_EQ((uintptr_t)ev[1].payload, 3);
    ASSERT_EQ((uintptr_t)ev[2].payload, 4);
    ASSERT_EQ((uintptr_t)ev[3].payload, 5);
    expect_order(&c, (const uintptr_t[]){6, 0});

    /* 25 fits beside 75. */
    insert_ok(&c, 7, 25, 7, NULL, NULL);
    expect_order(&c, (const uintptr_t[]){7, 6, 0});

    /* Exactly the budget: empties the cache but is accepted. */
    insert_ok(&c, 8, 100, 8, ev, &n);
    ASSERT_EQ(n, 2);
    ASSERT_EQ((uintptr_t)ev[0].payload, 6);
    ASSERT_EQ((uintptr_t)ev[1].payload, 7);
    expect_order(&c, (const uintptr_t[]){8, 0});

    /* Larger than the budget alone: refused, nothing evicted, nothing counted. */
    cgr__sig s9 = key_sig(9, 0);
    n = 77;
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s9, 101, pl(9), ev, 8, &n, &idx),
                          CGR__CACHE_TOO_LARGE);
    ASSERT_EQ(n, 0);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s9, SIZE_MAX, pl(9), ev, 8, &n, &idx),
                          CGR__CACHE_TOO_LARGE);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_evictions_needed(&c, 101, &n), CGR__CACHE_TOO_LARGE);
    expect_order(&c, (const uintptr_t[]){8, 0});
    cgr__cache_destroy(&c);

    /* Both budgets: the count limit bites with bytes to spare, and the other way round. */
    ASSERT_EQ(cgr__cache_init(&c, 3, 1000), CGR_STATUS_OK);
    insert_ok(&c, 1, 10, 1, NULL, NULL);
    insert_ok(&c, 2, 10, 2, NULL, NULL);
    insert_ok(&c, 3, 10, 3, NULL, NULL);
    insert_ok(&c, 4, 10, 4, ev, &n); /* count */
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 1);
    /* 990 more: the count limit takes 2, then 20 + 990 > 1000 takes 3 as well. */
    insert_ok(&c, 5, 990, 5, ev, &n);
    ASSERT_EQ(n, 2);
    ASSERT_EQ((uintptr_t)ev[0].payload, 2);
    ASSERT_EQ((uintptr_t)ev[1].payload, 3);
    expect_order(&c, (const uintptr_t[]){5, 4, 0});
    insert_ok(&c, 6, 10, 6, ev, &n); /* bytes only: 1000 + 10 > 1000, count is fine */
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 4);
    expect_order(&c, (const uintptr_t[]){6, 5, 0});
    cgr__cache_destroy(&c);

    /* No byte budget (0): SIZE_MAX bytes fit, and the total never wraps. */
    ASSERT_EQ(cgr__cache_init(&c, 4, 0), CGR_STATUS_OK);
    insert_ok(&c, 1, SIZE_MAX - 10, 1, NULL, NULL);
    insert_ok(&c, 2, 10, 2, NULL, NULL);
    ASSERT_EQ(c.bytes, SIZE_MAX);
    insert_ok(&c, 3, 1, 3, ev, &n);
    ASSERT_EQ(n, 1);
    ASSERT_EQ((uintptr_t)ev[0].payload, 1);
    insert_ok(&c, 4, SIZE_MAX, 4, ev, &n);
    ASSERT_EQ(n, 2);
    expect_order(&c, (const uintptr_t[]){4, 0});
    cgr__cache_destroy(&c);
}

static void test_args(void)
{
    cgr__cache c;
    cgr__cache_evicted ev[4];
    uint32_t n = 5, idx = 5;
    ASSERT_EQ(cgr__cache_init(&c, 2, 100), CGR_STATUS_OK);
    uint32_t i1 = insert_ok(&c, 1, 60, 1, NULL, NULL);
    cgr__sig s1 = key_sig(1, 0), s2 = key_sig(2, 0);

    /* Already cached: WRONG_STATE, even when an eviction would make room. */
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s1, 10, pl(9), ev, 4, &n, &idx),
                          CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(idx, 5);
    /* Too little room for the evictions needed: refused before evicting. */
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s2, 50, pl(2), NULL, 0, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s2, 50, pl(2), NULL, 1, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, NULL, 1, pl(2), ev, 4, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s2, 1, pl(2), ev, 4, NULL, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(NULL, &s2, 1, pl(2), ev, 4, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    cgr__sig wild = s2;
    wild.n_dims = CGR__SIG_MAX_DIMS + 1;
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &wild, 1, pl(2), ev, 4, &n, &idx),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_lookup(&c, &wild, &idx), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_lookup(&c, NULL, &idx), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_lookup(&c, &s1, NULL), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_find(&c, &s1, NULL), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_evictions_needed(&c, 1, NULL),
                          CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(idx, 5);

    /* No evictions needed: evicted may be NULL; NULL payloads are allowed; index optional. */
    ASSERT_EQ(cgr__cache_insert(&c, &s2, 40, NULL, NULL, 0, &n, NULL), CGR_STATUS_OK);
    ASSERT_EQ(n, 0);
    ASSERT_EQ(cgr__cache_find(&c, &s2, &idx), CGR_STATUS_OK);
    ASSERT(cgr__cache_entry_at(&c, idx)->payload == NULL);

    /* remove: live indices only. */
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(&c, CGR__CACHE_NONE, NULL),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(&c, 2, NULL), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(NULL, 0, NULL), CGR_STATUS_INVALID_ARGUMENT);
    cgr__cache_evicted out;
    ASSERT_EQ(cgr__cache_remove(&c, i1, &out), CGR_STATUS_OK);
    ASSERT_EQ((uintptr_t)out.payload, 1);
    ASSERT_EQ(out.bytes, 60);
    ASSERT_EQ(out.index, i1);
    ASSERT_U64_EQ(c.counters.removals, 1);
    ASSERT_U64_EQ(c.counters.evictions, 0);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(&c, i1, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(cgr__cache_entry_at(&c, i1) == NULL);
    ASSERT_EQ(cgr__cache_next(&c, i1), CGR__CACHE_NONE);
    ASSERT_EQ(lookup(&c, 1), CGR__CACHE_NONE);
    ASSERT_EQ(c.bytes, 40);

    /* pop_lru drains; WRONG_STATE once empty. */
    ASSERT_EQ(cgr__cache_pop_lru(&c, NULL), CGR_STATUS_OK);
    ASSERT_EQ(c.count, 0);
    ASSERT_EQ(c.bytes, 0);
    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_pop_lru(&c, &out), CGR_STATUS_WRONG_STATE);
    ASSERT_U64_EQ(c.counters.removals, 2);
    cgr__cache_destroy(&c);
}

static void test_collisions(void)
{
    enum { N = 40 };
    cgr__cache c;
    cgr__cache_evicted ev[N];
    uint32_t n, idx[N];
    ASSERT_EQ(cgr__cache_init(&c, N, 0), CGR_STATUS_OK);
    for (uint32_t k = 0; k < N; k++) {
        cgr__sig s = key_sig(k, 2); /* every hash is 42 */
        ASSERT_EQ(cgr__cache_insert(&c, &s, k, pl(k + 1), ev, N, &n, &idx[k]), CGR_STATUS_OK);
        ASSERT_EQ(n, 0);
    }
    for (uint32_t k = 0; k < N; k++) {
        cgr__sig s = key_sig(k, 2);
        uint32_t got;
        ASSERT_EQ(cgr__cache_lookup(&c, &s, &got), CGR_STATUS_OK);
        ASSERT_EQ(got, idx[k]);
        ASSERT_EQ((uintptr_t)cgr__cache_entry_at(&c, got)->payload, k + 1);
        /* Same hash, a duplicate key: still detected. */
        EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s, 1, NULL, ev, N, &n, NULL),
                              CGR_STATUS_WRONG_STATE);
    }
    /* A key never inserted, with the same hash, misses. */
    cgr__sig other = key_sig(1000, 2);
    uint32_t got;
    ASSERT_EQ(cgr__cache_lookup(&c, &other, &got), CGR_STATUS_OK);
    ASSERT_EQ(got, CGR__CACHE_NONE);
    /* Removing from the head, the middle and the tail of the chain. */
    uint32_t gone[3] = {N - 1, N / 2, 0};
    for (int j = 0; j < 3; j++)
        ASSERT_EQ(cgr__cache_remove(&c, idx[gone[j]], NULL), CGR_STATUS_OK);
    for (uint32_t k = 0; k < N; k++) {
        cgr__sig s = key_sig(k, 2);
        ASSERT_EQ(cgr__cache_find(&c, &s, &got), CGR_STATUS_OK);
        if (k == gone[0] || k == gone[1] || k == gone[2])
            ASSERT_EQ(got, CGR__CACHE_NONE);
        else
            ASSERT_EQ(got, idx[k]);
    }
    cgr__cache_destroy(&c);
}

/* ---- randomized against a model ---------------------------------------------------- */

enum { MODEL_MAX = 512 };

typedef struct mrec {
    uint32_t key;
    uint32_t index;     /* as reported by the cache */
    size_t bytes;
    uintptr_t payload;
    uint64_t hits, last_use, inserted;
} mrec;

/* Entries in recency order, r[0] the most recent; counters kept on their own. */
typedef struct model {
    uint32_t max_entries;
    size_t max_bytes;
    int collide;
    mrec r[MODEL_MAX];
    uint32_t n;
    size_t bytes;
    uint64_t tick;
    cgr__cache_counters k;
} model;

static int model_find(const model *m, uint32_t key)
{
    for (uint32_t i = 0; i < m->n; i++)
        if (m->r[i].key == key)
            return (int)i;
    return -1;
}

static void model_to_front(model *m, uint32_t pos)
{
    mrec t = m->r[pos];
    memmove(&m->r[1], &m->r[0], pos * sizeof t);
    m->r[0] = t;
}

static void model_drop(model *m, uint32_t pos)
{
    m->bytes -= m->r[pos].bytes;
    memmove(&m->r[pos], &m->r[pos + 1], (m->n - pos - 1) * sizeof m->r[0]);
    m->n--;
}

/* Evictions for an insert of `bytes`, computed the plain way. */
static uint32_t model_evictions(const model *m, size_t bytes)
{
    uint32_t n = m->n, e = 0;
    size_t total = m->bytes;
    while (n >= m->max_entries || (m->max_bytes != 0 && total + bytes > m->max_bytes)) {
        total -= m->r[n - 1].bytes;
        n--;
        e++;
    }
    return e;
}

static void check_evicted(const cgr__cache_evicted *ev, const mrec *r, int collide)
{
    cgr__sig s = key_sig(r->key, collide);
    ASSERT_EQ((uintptr_t)ev->payload, r->payload);
    ASSERT_EQ(ev->bytes, r->bytes);
    ASSERT_U64_EQ(ev->hits, r->hits);
    ASSERT_U64_EQ(ev->step, s.step);
    ASSERT_U64_EQ(ev->sig_hash, s.hash);
    ASSERT_EQ(ev->index, r->index);
}

static void compare(const cgr__cache *c, const model *m)
{
    uint32_t pos = 0;
    uint32_t last = CGR__CACHE_NONE;
    for (uint32_t i = cgr__cache_first(c); i != CGR__CACHE_NONE; i = cgr__cache_next(c, i)) {
        ASSERT_LT(pos, m->n);
        const mrec *r = &m->r[pos];
        const cgr__cache_entry *e = cgr__cache_entry_at(c, i);
        ASSERT(e != NULL);
        ASSERT_EQ(i, r->index);
        ASSERT_LT(i, m->max_entries);
        cgr__sig s = key_sig(r->key, m->collide);
        ASSERT(cgr__sig_equal(&e->sig, &s));
        ASSERT_EQ((uintptr_t)e->payload, r->payload);
        ASSERT_EQ(e->bytes, r->bytes);
        ASSERT_U64_EQ(e->hits, r->hits);
        ASSERT_U64_EQ(e->last_use, r->last_use);
        ASSERT_U64_EQ(e->inserted, r->inserted);
        last = i;
        pos++;
    }
    ASSERT_EQ(pos, m->n);
    ASSERT_EQ(c->count, m->n);
    ASSERT_EQ(c->bytes, m->bytes);
    ASSERT_EQ(cgr__cache_lru(c), last);
    ASSERT_U64_EQ(c->tick, m->tick);
    ASSERT_U64_EQ(c->counters.lookups, m->k.lookups);
    ASSERT_U64_EQ(c->counters.hits, m->k.hits);
    ASSERT_U64_EQ(c->counters.misses, m->k.misses);
    ASSERT_U64_EQ(c->counters.inserts, m->k.inserts);
    ASSERT_U64_EQ(c->counters.evictions, m->k.evictions);
    ASSERT_U64_EQ(c->counters.removals, m->k.removals);
    ASSERT_EQ(c->counters.peak_bytes, m->k.peak_bytes);
    ASSERT_EQ(c->counters.peak_entries, m->k.peak_entries);
}

/* A random size: mostly a fraction of the budget, sometimes right at it or past it. */
static size_t pick_bytes(const model *m)
{
    if (m->max_bytes == 0)
        return (size_t)rng_below(1u << 20);
    uint64_t r = rng_below(100);
    if (r < 5)
        return m->max_bytes;
    if (r < 10)
        return m->max_bytes + 1 + (size_t)rng_below(10);
    if (r < 15)
        return 0;
    return (size_t)rng_below(m->max_bytes / 2 + 1);
}

typedef struct run_stats {
    uint64_t hits, misses, evictions, too_large, dup, cap_small, removes, bad_removes;
} run_stats;

static void run_random(uint32_t max_entries, size_t max_bytes, int collide, uint32_t keys,
                       uint32_t ops, run_stats *st)
{
    static model m; /* large: keep it off the stack */
    static cgr__cache_evicted ev[MODEL_MAX];
    cgr__cache c;
    uintptr_t next_payload = 1;
    uint64_t payloads_out = 0;

    ASSERT_LE(max_entries, MODEL_MAX);
    memset(&m, 0, sizeof m);
    m.max_entries = max_entries;
    m.max_bytes = max_bytes;
    m.collide = collide;
    ASSERT_EQ(cgr__cache_init(&c, max_entries, max_bytes), CGR_STATUS_OK);

    for (uint32_t op = 0; op < ops; op++) {
        uint64_t what = rng_below(100);
        uint32_t key = (uint32_t)rng_below(keys);
        cgr__sig s = key_sig(key, collide);
        int pos = model_find(&m, key);

        if (what < 35) {
            /* lookup */
            uint32_t idx = 0;
            ASSERT_EQ(cgr__cache_lookup(&c, &s, &idx), CGR_STATUS_OK);
            m.k.lookups++;
            if (pos < 0) {
                ASSERT_EQ(idx, CGR__CACHE_NONE);
                m.k.misses++;
                st->misses++;
            } else {
                ASSERT_EQ(idx, m.r[pos].index);
                m.k.hits++;
                m.tick++;
                m.r[pos].hits++;
                m.r[pos].last_use = m.tick;
                model_to_front(&m, (uint32_t)pos);
                st->hits++;
            }
        } else if (what < 42) {
            /* find: no change */
            uint32_t idx = 0;
            snap sn;
            snap_take(&sn, &c);
            ASSERT_EQ(cgr__cache_find(&c, &s, &idx), CGR_STATUS_OK);
            snap_check(&sn, &c);
            ASSERT_EQ(idx, pos < 0 ? CGR__CACHE_NONE : m.r[pos].index);
        } else if (what < 75) {
            /* insert */
            size_t bytes = pick_bytes(&m);
            uint32_t cap = max_entries;
            if (rng_below(10) == 0)
                cap = (uint32_t)rng_below(3);
            uint32_t n = 99, idx = 99;
            if (pos >= 0) {
                EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s, bytes, pl(next_payload), ev,
                                                             cap, &n, &idx),
                                      CGR_STATUS_WRONG_STATE);
                ASSERT_EQ(n, 0);
                st->dup++;
            } else if (max_bytes != 0 && bytes > max_bytes) {
                EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s, bytes, pl(next_payload), ev,
                                                             cap, &n, &idx),
                                      CGR__CACHE_TOO_LARGE);
                uint32_t need = 0;
                EXPECT_FAIL_UNCHANGED(&c, cgr__cache_evictions_needed(&c, bytes, &need),
                                      CGR__CACHE_TOO_LARGE);
                st->too_large++;
            } else {
                uint32_t want = model_evictions(&m, bytes);
                uint32_t need = 12345;
                ASSERT_EQ(cgr__cache_evictions_needed(&c, bytes, &need), CGR_STATUS_OK);
                ASSERT_EQ(need, want);
                if (want > cap) {
                    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_insert(&c, &s, bytes, pl(next_payload),
                                                                 ev, cap, &n, &idx),
                                          CGR_STATUS_INVALID_ARGUMENT);
                    ASSERT_EQ(n, 0);
                    st->cap_small++;
                } else {
                    ASSERT_EQ(cgr__cache_insert(&c, &s, bytes, pl(next_payload), ev, cap, &n,
                                                &idx),
                              CGR_STATUS_OK);
                    ASSERT_EQ(n, want);
                    for (uint32_t j = 0; j < want; j++) {
                        /* Oldest first; never the new one. */
                        check_evicted(&ev[j], &m.r[m.n - 1], collide);
                        ASSERT((uintptr_t)ev[j].payload != next_payload);
                        model_drop(&m, m.n - 1);
                        payloads_out++;
                    }
                    m.k.evictions += want;
                    st->evictions += want;
                    ASSERT_LT(m.n, max_entries);
                    m.tick++;
                    memmove(&m.r[1], &m.r[0], m.n * sizeof m.r[0]);
                    m.r[0] = (mrec){key, idx, bytes, next_payload, 0, m.tick, m.tick};
                    m.n++;
                    m.bytes += bytes;
                    m.k.inserts++;
                    if (m.bytes > m.k.peak_bytes)
                        m.k.peak_bytes = m.bytes;
                    if (m.n > m.k.peak_entries)
                        m.k.peak_entries = m.n;
                    next_payload++;
                    if (max_bytes != 0)
                        ASSERT_LE(c.bytes, max_bytes);
                }
            }
        } else if (what < 88) {
            /* remove by index: a live one, or one that is not */
            cgr__cache_evicted out;
            if (m.n > 0 && rng_below(4) != 0) {
                uint32_t p = (uint32_t)rng_below(m.n);
                ASSERT_EQ(cgr__cache_remove(&c, m.r[p].index, &out), CGR_STATUS_OK);
                check_evicted(&out, &m.r[p], collide);
                model_drop(&m, p);
                m.k.removals++;
                payloads_out++;
                st->removes++;
            } else {
                uint32_t idx = (uint32_t)rng_below(max_entries + 3);
                int live = 0;
                for (uint32_t j = 0; j < m.n; j++)
                    live |= m.r[j].index == idx;
                if (!live) {
                    EXPECT_FAIL_UNCHANGED(&c, cgr__cache_remove(&c, idx, &out),
                                          CGR_STATUS_INVALID_ARGUMENT);
                    ASSERT(cgr__cache_entry_at(&c, idx) == NULL);
                    st->bad_removes++;
                }
            }
        } else if (what < 93) {
            /* pop_lru */
            cgr__cache_evicted out;
            if (m.n == 0) {
                EXPECT_FAIL_UNCHANGED(&c, cgr__cache_pop_lru(&c, &out), CGR_STATUS_WRONG_STATE);
            } else {
                ASSERT_EQ(cgr__cache_pop_lru(&c, &out), CGR_STATUS_OK);
                check_evicted(&out, &m.r[m.n - 1], collide);
                model_drop(&m, m.n - 1);
                m.k.removals++;
                payloads_out++;
            }
        } else {
            /* evictions_needed for a random size: a pure query */
            size_t bytes = pick_bytes(&m);
            uint32_t need = 0;
            snap sn;
            snap_take(&sn, &c);
            cgr_status st2 = cgr__cache_evictions_needed(&c, bytes, &need);
            snap_check(&sn, &c);
            if (max_bytes != 0 && bytes > max_bytes) {
                ASSERT_EQ(st2, CGR__CACHE_TOO_LARGE);
            } else {
                ASSERT_EQ(st2, CGR_STATUS_OK);
                ASSERT_EQ(need, model_evictions(&m, bytes));
            }
        }
        compare(&c, &m);
    }

    /* Every payload ever inserted is either handed back or still cached, once. */
    ASSERT_U64_EQ(payloads_out + m.n, next_payload - 1);
    /* Draining hands back the rest, least recent first. */
    while (m.n > 0) {
        cgr__cache_evicted out;
        ASSERT_EQ(cgr__cache_pop_lru(&c, &out), CGR_STATUS_OK);
        check_evicted(&out, &m.r[m.n - 1], collide);
        model_drop(&m, m.n - 1);
    }
    ASSERT_EQ(c.count, 0);
    ASSERT_EQ(c.bytes, 0);
    for (uint32_t h = 0; h <= c.head_mask; h++)
        ASSERT_EQ(c.heads[h], CGR__CACHE_NONE);
    cgr__cache_destroy(&c);
}

static void test_random(void)
{
    /* max_entries, max_bytes, collide, keys, ops: 100,000 operations in all. */
    static const struct {
        uint32_t entries;
        size_t bytes;
        int collide;
        uint32_t keys;
        uint32_t ops;
    } cfg[] = {
        {1, 0, 0, 3, 5000},        {2, 100, 0, 6, 5000},     {4, 1000, 1, 10, 10000},
        {8, 0, 0, 20, 10000},      {8, 500, 2, 16, 10000},   {16, 1000, 0, 40, 15000},
        {16, 64, 1, 24, 10000},    {5, 1u << 20, 0, 9, 5000}, {300, 20000, 0, 700, 15000},
        {64, 0, 2, 100, 15000},
    };
    run_stats st;
    memset(&st, 0, sizeof st);
    uint32_t total = 0;
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        run_random(cfg[i].entries, cfg[i].bytes, cfg[i].collide, cfg[i].keys, cfg[i].ops, &st);
        total += cfg[i].ops;
    }
    ASSERT_EQ(total, 100000);
    /* The run reached every path. */
    ASSERT_GT(st.hits, 1000);
    ASSERT_GT(st.misses, 1000);
    ASSERT_GT(st.evictions, 1000);
    ASSERT_GT(st.too_large, 100);
    ASSERT_GT(st.dup, 1000);
    ASSERT_GT(st.cap_small, 100);
    ASSERT_GT(st.removes, 1000);
    ASSERT_GT(st.bad_removes, 100);
    printf("random: %llu hits, %llu misses, %llu evictions, %llu too large, %llu duplicates, "
           "%llu short arrays, %llu removals, %llu bad removals\n",
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.evictions, (unsigned long long)st.too_large,
           (unsigned long long)st.dup, (unsigned long long)st.cap_small,
           (unsigned long long)st.removes, (unsigned long long)st.bad_removes);
}

int main(void)
{
    test_init();
    test_lru();
    test_bytes();
    test_args();
    test_collisions();
    test_random();
    printf("cache: ok\n");
    return 0;
}
