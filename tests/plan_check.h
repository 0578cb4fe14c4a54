/*
 * The property a plan must have (allocator/planner.h), checked on its own:
 * shared by the planner's unit test and its fuzz target.
 */
#ifndef CGR_TEST_PLAN_CHECK_H
#define CGR_TEST_PLAN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "planner.h"

/*
 * Reports a bad pair through the optional outputs. SIZE_MAX names no
 * buffer, for failures that are not about one (a bad align or NULL array).
 */
static int plan_bad(size_t *a, size_t *b, size_t ia, size_t ib)
{
    if (a != NULL)
        *a = ia;
    if (b != NULL)
        *b = ib;
    return 1;
}

/*
 * 0 if no two live-overlapping buffers overlap in memory and every offset
 * is aligned, else 1 and the indices of a bad pair in *a, *b (both equal
 * for an alignment error).
 */
static int plan_check(const cgr__buf *bufs, size_t n, size_t align, size_t *a, size_t *b)
{
    size_t i, j;

    /* A check that cannot be carried out must not pass. */
    if (!(align != 0 && (align & (align - 1)) == 0) || (bufs == NULL && n > 0))
        return plan_bad(a, b, SIZE_MAX, SIZE_MAX);
    for (i = 0; i < n; i++) {
        /*
         * A buffer whose bytes would run past SIZE_MAX cannot exist in any
         * arena, so it counts as bad on its own, like a misaligned one.
         */
        if ((bufs[i].offset & (align - 1)) != 0 || bufs[i].offset > SIZE_MAX - bufs[i].size)
            return plan_bad(a, b, i, i);
    }
    /*
     * The requested bytes, not the aligned footprints, are what must stay
     * disjoint: that is the property the replayed graph relies on.
     */
    for (i = 0; i < n; i++) {
        const cgr__buf *x = &bufs[i];
        if (x->size == 0)
            continue;
        for (j = i + 1; j < n; j++) {
            const cgr__buf *y = &bufs[j];
            if (y->size == 0)
                continue;
            if (!(x->start < y->end && y->start < x->end))
                continue;
            if (x->offset < y->offset + y->size && y->offset < x->offset + x->size)
                return plan_bad(a, b, i, j);
        }
    }
    return 0;
}

#endif
