/*
 * Graph cache (see cache.h).
 *
 * Fixed tables sized by cgr__cache_init(): an array of entries and a
 * power-of-two array of hash bucket heads (at least twice max_entries, so
 * chains stay short). Live entries sit on two lists at once: their hash
 * bucket's chain (singly linked through .chain) and the LRU list (doubly
 * linked through .newer/.older, mru at the head, lru at the tail). Free
 * entries sit on a free list through .chain, lowest index first at init.
 *
 * Invariants kept by every call: count live entries, all on the LRU list
 * and on the chain of bucket (sig.hash & head_mask); bytes = their sum <=
 * budget; count <= max_entries.
 */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

static int cache_ok(const cgr__cache *c)
{
    return c != NULL && c->entries != NULL && c->heads != NULL && c->max_entries > 0;
}

/* Signatures come from cgr__sig_init(); only a wild n_dims is caught here. */
static int sig_ok(const cgr__sig *sig)
{
    return sig != NULL && sig->n_dims <= CGR__SIG_MAX_DIMS;
}

static int live_index(const cgr__cache *c, uint32_t index)
{
    return cache_ok(c) && index < c->max_entries && c->entries[index].live;
}

cgr_status cgr__cache_init(cgr__cache *c, uint32_t max_entries, size_t max_bytes)
{
    if (c == NULL || max_entries == 0 || max_entries > CGR__CACHE_MAX_ENTRIES)
        return CGR_STATUS_INVALID_ARGUMENT;
    uint32_t n_heads = 1;
    while (n_heads < 2 * max_entries)
        n_heads <<= 1;
    cgr__cache_entry *entries = calloc(max_entries, sizeof *entries);
    uint32_t *heads = malloc((size_t)n_heads * sizeof *heads);
    if (entries == NULL || heads == NULL) {
        free(entries);
        free(heads);
        return CGR_STATUS_OUT_OF_MEMORY;
    }
    for (uint32_t i = 0; i < n_heads; i++)
        heads[i] = CGR__CACHE_NONE;
    for (uint32_t i = 0; i < max_entries; i++) {
        entries[i].chain = i + 1 < max_entries ? i + 1 : CGR__CACHE_NONE;
        entries[i].newer = CGR__CACHE_NONE;
        entries[i].older = CGR__CACHE_NONE;
    }
    memset(c, 0, sizeof *c);
    c->entries = entries;
    c->heads = heads;
    c->max_entries = max_entries;
    c->head_mask = n_heads - 1;
    c->free_head = 0;
    c->mru = CGR__CACHE_NONE;
    c->lru = CGR__CACHE_NONE;
    c->max_bytes = max_bytes;
    c->budget = max_bytes == 0 ? SIZE_MAX : max_bytes;
    return CGR_STATUS_OK;
}

void cgr__cache_destroy(cgr__cache *c)
{
    if (c == NULL)
        return;
    free(c->entries);
    free(c->heads);
    memset(c, 0, sizeof *c);
}

/* ---- the two lists ---------------------------------------------------------- */

static void lru_unlink(cgr__cache *c, uint32_t i)
{
    cgr__cache_entry *e = &c->entries[i];
    if (e->newer != CGR__CACHE_NONE)
        c->entries[e->newer].older = e->older;
    else
        c->mru = e->older;
    if (e->older != CGR__CACHE_NONE)
        c->entries[e->older].newer = e->newer;
    else
        c->lru = e->newer;
    e->newer = CGR__CACHE_NONE;
    e->older = CGR__CACHE_NONE;
}

static void lru_push_front(cgr__cache *c, uint32_t i)
{
    cgr__cache_entry *e = &c->entries[i];
    e->newer = CGR__CACHE_NONE;
    e->older = c->mru;
    if (c->mru != CGR__CACHE_NONE)
        c->entries[c->mru].newer = i;
    else
        c->lru = i;
    c->mru = i;
}

static uint32_t find_index(const cgr__cache *c, const cgr__sig *sig)
{
    uint32_t i = c->heads[sig->hash & c->head_mask];
    while (i != CGR__CACHE_NONE) {
        if (cgr__sig_equal(&c->entries[i].sig, sig))
            return i;
        i = c->entries[i].chain;
    }
    return CGR__CACHE_NONE;
}

static void chain_unlink(cgr__cache *c, uint32_t i)
{
    uint32_t *link = &c->heads[c->entries[i].sig.hash & c->head_mask];
    while (*link != i)
        link = &c->entries[*link].chain;
    *link = c->entries[i].chain;
}

/* Takes live entry i out of both lists and onto the free list. */
static void release(cgr__cache *c, uint32_t i, cgr__cache_evicted *out)
{
    cgr__cache_entry *e = &c->entries[i];
    if (out != NULL) {
        out->payload = e->payload;
        out->bytes = e->bytes;
        out->step = e->sig.step;
        out->sig_hash = e->sig.hash;
        out->hits = e->hits;
        out->index = i;
    }
    chain_unlink(c, i);
    lru_unlink(c, i);
    c->bytes -= e->bytes;
    c->count--;
    memset(e, 0, sizeof *e);
    e->newer = CGR__CACHE_NONE;
    e->older = CGR__CACHE_NONE;
    e->chain = c->free_head;
    c->free_head = i;
}

/* ---- calls -------------------------------------------------------------------- */

cgr_status cgr__cache_find(const cgr__cache *c, const cgr__sig *sig, uint32_t *index)
{
    if (!cache_ok(c) || !sig_ok(sig) || index == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    *index = find_index(c, sig);
    return CGR_STATUS_OK;
}

cgr_status cgr__cache_lookup(cgr__cache *c, const cgr__sig *sig, uint32_t *index)
{
    if (!cache_ok(c) || !sig_ok(sig) || index == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    uint32_t i = find_index(c, sig);
    c->counters.lookups++;
    if (i == CGR__CACHE_NONE) {
        c->counters.misses++;
        *index = CGR__CACHE_NONE;
        return CGR_STATUS_OK;
    }
    c->counters.hits++;
    c->tick++;
    cgr__cache_entry *e = &c->entries[i];
    e->hits++;
    e->last_use = c->tick;
    if (c->mru != i) {
        lru_unlink(c, i);
        lru_push_front(c, i);
    }
    *index = i;
    return CGR_STATUS_OK;
}

/* Evictions an insert of `bytes` needs; bytes <= budget. */
static uint32_t count_evictions(const cgr__cache *c, size_t bytes)
{
    uint32_t n = 0, left = c->count;
    size_t total = c->bytes;
    size_t room = c->budget - bytes;
    uint32_t i = c->lru;
    /* Ends by the time the cache would be empty: 0 < max_entries, 0 <= room. */
    while (left >= c->max_entries || total > room) {
        total -= c->entries[i].bytes;
        left--;
        n++;
        i = c->entries[i].newer;
    }
    return n;
}

cgr_status cgr__cache_evictions_needed(const cgr__cache *c, size_t bytes, uint32_t *n)
{
    if (!cache_ok(c) || n == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (bytes > c->budget)
        return CGR__CACHE_TOO_LARGE;
    *n = count_evictions(c, bytes);
    return CGR_STATUS_OK;
}

cgr_status cgr__cache_insert(cgr__cache *c, const cgr__sig *sig, size_t bytes, void *payload,
                             cgr__cache_evicted *evicted, uint32_t evicted_cap,
                             uint32_t *n_evicted, uint32_t *index)
{
    if (n_evicted != NULL)
        *n_evicted = 0;
    if (!cache_ok(c) || !sig_ok(sig) || n_evicted == NULL || (evicted == NULL && evicted_cap > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (find_index(c, sig) != CGR__CACHE_NONE)
        return CGR_STATUS_WRONG_STATE;
    if (bytes > c->budget)
        return CGR__CACHE_TOO_LARGE;
    uint32_t need = count_evictions(c, bytes);
    if (need > evicted_cap)
        return CGR_STATUS_INVALID_ARGUMENT;

    /* From here on nothing can fail. */
    for (uint32_t k = 0; k < need; k++)
        release(c, c->lru, &evicted[k]);
    c->counters.evictions += need;

    uint32_t i = c->free_head;
    cgr__cache_entry *e = &c->entries[i];
    c->free_head = e->chain;
    c->tick++;
    e->sig = *sig;
    e->payload = payload;
    e->bytes = bytes;
    e->hits = 0;
    e->last_use = c->tick;
    e->inserted = c->tick;
    e->live = 1;
    uint32_t *head = &c->heads[sig->hash & c->head_mask];
    e->chain = *head;
    *head = i;
    lru_push_front(c, i);
    c->count++;
    c->bytes += bytes;
    c->counters.inserts++;
    if (c->bytes > c->counters.peak_bytes)
        c->counters.peak_bytes = c->bytes;
    if (c->count > c->counters.peak_entries)
        c->counters.peak_entries = c->count;
    *n_evicted = need;
    if (index != NULL)
        *index = i;
    return CGR_STATUS_OK;
}

cgr_status cgr__cache_remove(cgr__cache *c, uint32_t index, cgr__cache_evicted *out)
{
    if (!live_index(c, index))
        return CGR_STATUS_INVALID_ARGUMENT;
    release(c, index, out);
    c->counters.removals++;
    return CGR_STATUS_OK;
}

cgr_status cgr__cache_pop_lru(cgr__cache *c, cgr__cache_evicted *out)
{
    if (!cache_ok(c))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (c->lru == CGR__CACHE_NONE)
        return CGR_STATUS_WRONG_STATE;
    return cgr__cache_remove(c, c->lru, out);
}

const cgr__cache_entry *cgr__cache_entry_at(const cgr__cache *c, uint32_t index)
{
    return live_index(c, index) ? &c->entries[index] : NULL;
}

uint32_t cgr__cache_first(const cgr__cache *c)
{
    return cache_ok(c) ? c->mru : CGR__CACHE_NONE;
}

uint32_t cgr__cache_next(const cgr__cache *c, uint32_t index)
{
    return live_index(c, index) ? c->entries[index].older : CGR__CACHE_NONE;
}

uint32_t cgr__cache_lru(const cgr__cache *c)
{
    return cache_ok(c) ? c->lru : CGR__CACHE_NONE;
}
