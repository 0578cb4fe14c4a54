/*
 * Scratch trace and greedy-by-size liveness planner (see planner.h).
 *
 * Everything here is plain C: the planner runs once per step, after the
 * first warm-up run, and its result is baked into the captured graph, so
 * being deterministic and correct matters far more than being fast.
 *
 * A trace pointer is never NULL in cgr's own calls, so that is asserted.
 * The contents are checked and reported as statuses: the sizes and
 * intervals come from what a step function requested, and the fuzz
 * target holds every entry point to that contract on arbitrary traces.
 */
#include "planner.h"

#include <assert.h>
#include <stdlib.h>

/*
 * Largest clock value an event may be recorded at. UINT32_MAX itself marks
 * an open interval, so no end may ever take that value; keeping every
 * event strictly below this bound also leaves room for the clock to
 * advance after the event without wrapping.
 */
#define CGR__CLOCK_LIMIT (UINT32_MAX - 1u)

/* Initial table size, so small steps grow the table only once or twice. */
#define CGR__TRACE_MIN_CAP 16u

void cgr__trace_init(cgr__trace *t)
{
    assert(t != NULL);
    *t = (cgr__trace){0};
}

void cgr__trace_destroy(cgr__trace *t)
{
    assert(t != NULL);
    free(t->bufs);
    cgr__trace_init(t);
}

void cgr__trace_reset(cgr__trace *t)
{
    assert(t != NULL);
    t->n = 0;
    t->clock = 0;
}

cgr_status cgr__trace_alloc(cgr__trace *t, size_t size, size_t *id)
{
    assert(t != NULL && id != NULL);
    if (size == 0)
        return CGR_STATUS_INVALID_ARGUMENT;
    /*
     * The alloc takes tick `clock` and its eventual end is at least
     * clock + 1, which must stay below the open-interval marker; the same
     * limit on frees keeps the clock itself from ever reaching it.
     */
    if (t->clock >= CGR__CLOCK_LIMIT)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (t->n == t->cap) {
        /* Doubling keeps recording linear; it must wrap neither the count nor the byte size.
         * A failed realloc leaves the old table, so the trace is untouched on OUT_OF_MEMORY. */
        if (t->cap > SIZE_MAX / 2 / sizeof(cgr__buf))
            return CGR_STATUS_OUT_OF_MEMORY;
        size_t cap = t->cap ? t->cap * 2 : CGR__TRACE_MIN_CAP;
        cgr__buf *p = realloc(t->bufs, cap * sizeof(cgr__buf));
        if (p == NULL)
            return CGR_STATUS_OUT_OF_MEMORY;
        t->bufs = p;
        t->cap = cap;
    }
    t->bufs[t->n] = (cgr__buf){.size = size, .start = t->clock, .end = UINT32_MAX};
    *id = t->n;
    t->n++;
    t->clock++;
    return CGR_STATUS_OK;
}

cgr_status cgr__trace_free(cgr__trace *t, size_t id)
{
    assert(t != NULL);
    if (id >= t->n || t->bufs[id].end != UINT32_MAX)
        return CGR_STATUS_INVALID_ARGUMENT;
    /*
     * A free at the limit would need an end equal to the open-interval
     * marker, or push the clock past it; refusing keeps the buffer open,
     * which cgr__trace_close() then ends safely.
     */
    if (t->clock >= CGR__CLOCK_LIMIT)
        return CGR_STATUS_INVALID_ARGUMENT;
    t->bufs[id].end = t->clock;
    t->clock++;
    return CGR_STATUS_OK;
}

void cgr__trace_close(cgr__trace *t)
{
    size_t i;

    assert(t != NULL);
    for (i = 0; i < t->n; i++) {
        cgr__buf *b = &t->bufs[i];
        if (b->end != UINT32_MAX)
            continue;
        /*
         * The alloc already advanced the clock past start, so end > start
         * normally holds; the fallback keeps the interval non-empty for a
         * trace edited by hand, because an empty interval would let the
         * planner place this buffer on top of anything. Past UINT32_MAX - 1
         * there is no room for it (alloc and free never get there), and
         * cgr__plan then refuses the trace rather than plan it wrongly.
         */
        b->end = t->clock;
        if (b->end <= b->start)
            b->end = b->start + 1;
    }
}

/* ---- Planner ------------------------------------------------------------- */

/* One request as the planner sees it, kept apart so failure changes nothing. */
typedef struct cgr__plan_item {
    size_t asz;     /* size rounded up to align */
    size_t index;   /* position in the caller's array (tie-break, write-back) */
    size_t offset;  /* chosen offset */
    uint32_t start;
    uint32_t end;
} cgr__plan_item;

/*
 * Larger footprints first; equal footprints by earlier start, then by
 * index. The order is total, so qsort's lack of stability cannot make two
 * runs on the same trace produce different plans.
 */
static int cgr__plan_item_cmp(const void *pa, const void *pb)
{
    const cgr__plan_item *a = pa;
    const cgr__plan_item *b = pb;

    if (a->asz != b->asz)
        return a->asz > b->asz ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    return 0;
}

/*
 * Places items[k] at the lowest aligned offset where it overlaps no placed
 * item that is live at the same time; items[0..k) are already placed and
 * by_off[0..k) lists them by increasing offset. On success items[k] joins
 * by_off. Keeping that list sorted as items are placed (as TFLite does)
 * makes each placement one linear walk instead of a sort of neighbours.
 * Returns INVALID_ARGUMENT when the only free place would run past
 * SIZE_MAX; by_off is then unchanged.
 */
static cgr_status cgr__plan_place(cgr__plan_item *items, size_t k, size_t *by_off)
{
    cgr__plan_item *it = &items[k];
    size_t cand = 0;
    size_t j;

    /*
     * Walk the placed items bottom-up, looking only at those live at the
     * same time. They may overlap each other in memory (they need not be
     * live together), so cand is the highest end seen so far, not just the
     * previous one. Offsets and footprints are multiples of align, so every
     * cand is aligned without rounding.
     */
    for (j = 0; j < k; j++) {
        const cgr__plan_item *o = &items[by_off[j]];
        if (!(o->start < it->end && it->start < o->end) || o->asz == 0)
            continue;
        if (o->offset >= cand && o->offset - cand >= it->asz)
            break;
        if (o->offset + o->asz > cand) /* cannot wrap: checked when o was placed */
            cand = o->offset + o->asz;
    }
    if (cand > SIZE_MAX - it->asz)
        return CGR_STATUS_INVALID_ARGUMENT;
    it->offset = cand;

    /* Insert k after every placed item with an offset not above its own. */
    j = k;
    while (j > 0 && items[by_off[j - 1]].offset > cand) {
        by_off[j] = by_off[j - 1];
        j--;
    }
    by_off[j] = k;
    return CGR_STATUS_OK;
}

/*
 * Largest sum of footprints live at one tick. [s, e) is live at s, and the
 * live set grows only at a start, so the largest sum is found at some
 * item's start. The items live there are live together, so the plan put
 * them at disjoint places below its peak, and their sum cannot wrap.
 * Quadratic, as placement is: the planner runs once per shape.
 */
static size_t cgr__plan_lower_bound(const cgr__plan_item *items, size_t n)
{
    size_t best = 0;

    for (size_t i = 0; i < n; i++) {
        size_t live = 0;
        for (size_t j = 0; j < n; j++)
            if (items[j].start <= items[i].start && items[i].start < items[j].end)
                live += items[j].asz;
        if (live > best)
            best = live;
    }
    return best;
}

cgr_status cgr__plan(cgr__buf *bufs, size_t n, size_t align, size_t *peak, size_t *lower_bound)
{
    cgr__plan_item *items = NULL;
    size_t *by_off = NULL;
    cgr_status st = CGR_STATUS_OK;
    size_t top = 0;
    size_t i;

    assert(bufs != NULL || n == 0);
    if (align == 0 || (align & (align - 1)) != 0) /* not a power of two */
        return CGR_STATUS_INVALID_ARGUMENT;
    /* Validate everything first: a rejected trace must leave bufs untouched. */
    for (i = 0; i < n; i++) {
        if (bufs[i].end == UINT32_MAX || bufs[i].end <= bufs[i].start)
            return CGR_STATUS_INVALID_ARGUMENT;
        if (bufs[i].size > SIZE_MAX - (align - 1))
            return CGR_STATUS_INVALID_ARGUMENT;
    }
    if (n == 0) {
        if (peak != NULL)
            *peak = 0;
        if (lower_bound != NULL)
            *lower_bound = 0;
        return CGR_STATUS_OK;
    }
    /* Both tables' sizes must be representable (an item is larger than a size_t). */
    if (n > SIZE_MAX / sizeof(cgr__plan_item))
        return CGR_STATUS_OUT_OF_MEMORY;
    items = malloc(n * sizeof(*items));
    by_off = malloc(n * sizeof(*by_off));
    if (items == NULL || by_off == NULL) {
        st = CGR_STATUS_OUT_OF_MEMORY;
        goto done;
    }

    for (i = 0; i < n; i++)
        items[i] = (cgr__plan_item){.asz = (bufs[i].size + (align - 1)) & ~(align - 1),
                                    .index = i, .start = bufs[i].start, .end = bufs[i].end};
    qsort(items, n, sizeof(*items), cgr__plan_item_cmp);
    for (i = 0; i < n; i++) {
        st = cgr__plan_place(items, i, by_off);
        if (st != CGR_STATUS_OK)
            goto done;
        if (items[i].offset + items[i].asz > top)
            top = items[i].offset + items[i].asz;
    }

    /* Only now, with nothing left that can fail, publish the plan. */
    for (i = 0; i < n; i++)
        bufs[items[i].index].offset = items[i].offset;
    if (peak != NULL)
        *peak = top;
    if (lower_bound != NULL)
        *lower_bound = cgr__plan_lower_bound(items, n);

done:
    free(items);
    free(by_off);
    return st;
}
