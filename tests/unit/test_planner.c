/*
 * Unit tests of the scratch trace and the greedy-by-size planner.
 *
 * Hand-written cases pin down the exact placements and every error path;
 * a randomized sweep over thousands of traces then checks the plan against
 * an independent overlap check and the liveness lower bound, and reports
 * how close greedy-by-size gets to that bound.
 */
#define _POSIX_C_SOURCE 200809L /* fork, for the asserted preconditions */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "death.h"
#include "plan_check.h"
#include "planner.h"
#include "test.h"

#define ALIGN 256u
#define MiB ((size_t)1 << 20)
/* Most buffers any test here plans at once. */
#define MAX_BUFS 256

/* ---- helpers ------------------------------------------------------------- */

/* xorshift64*: a fixed seed makes every failure reproducible. */
#define TEST_RNG_SEED 0x9E3779B97F4A7C15ull
#include "xorshift.h"

/* Uniform in [lo, hi]; the modulo bias is irrelevant for test data. */
static size_t rng_range(size_t lo, size_t hi)
{
    return lo + (size_t)(rng_next() % (uint64_t)(hi - lo + 1));
}

static size_t align_up(size_t x, size_t align)
{
    return (x + align - 1) & ~(align - 1);
}

static cgr__buf mk(size_t size, uint32_t start, uint32_t end)
{
    cgr__buf b;
    memset(&b, 0, sizeof(b));
    b.size = size;
    b.start = start;
    b.end = end;
    b.offset = 0;
    return b;
}

/*
 * An independent check of a plan, written without looking at
 * plan_check(): it uses the aligned footprints (stricter than the
 * requested bytes), and also verifies that the reported peak is exactly
 * the top of the highest footprint.
 */
static void check_plan_independently(const cgr__buf *b, size_t n, size_t align, size_t peak)
{
    size_t asz[MAX_BUFS];
    size_t top = 0;

    ASSERT(n <= MAX_BUFS);
    for (size_t i = 0; i < n; i++) {
        asz[i] = align_up(b[i].size, align);
        ASSERT_EQ(b[i].offset % align, 0);
        ASSERT(b[i].offset + asz[i] >= b[i].offset);
        if (b[i].offset + asz[i] > top)
            top = b[i].offset + asz[i];
    }
    for (size_t i = 0; i < n; i++) {
        size_t lo = b[i].offset, hi = b[i].offset + asz[i];
        for (size_t j = 0; j < i; j++) {
            int live_together = b[i].start < b[j].end && b[j].start < b[i].end;
            int mem_overlap = lo < b[j].offset + asz[j] && b[j].offset < hi;
            if (live_together && mem_overlap)
                TEST_FAIL_("buffers %zu and %zu overlap in time and memory", j, i);
        }
    }
    ASSERT_U64_EQ(peak, top);
}

/*
 * Brute-force lower bound: the live sum is highest at some start tick,
 * so evaluating it at every start is enough.
 */
static size_t brute_lower_bound(const cgr__buf *b, size_t n, size_t align)
{
    size_t asz[MAX_BUFS];
    size_t best = 0;

    ASSERT(n <= MAX_BUFS);
    for (size_t i = 0; i < n; i++)
        asz[i] = align_up(b[i].size, align);
    for (size_t i = 0; i < n; i++) {
        uint32_t tick = b[i].start;
        size_t sum = 0;
        for (size_t j = 0; j < n; j++)
            if (b[j].start <= tick && tick < b[j].end)
                sum += asz[j];
        if (sum > best)
            best = sum;
    }
    return best;
}

/* ---- trace --------------------------------------------------------------- */

static void test_trace_basics(void)
{
    cgr__trace t;
    size_t id = 99;

    cgr__trace_init(&t);
    ASSERT_PTR_EQ(t.bufs, NULL);
    ASSERT_EQ(t.n, 0);
    ASSERT_EQ(t.cap, 0);
    ASSERT_EQ(t.clock, 0);

    /* alloc a, alloc b, free a, alloc c; c and b stay open. */
    ASSERT_EQ(cgr__trace_alloc(&t, 100, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 0);
    ASSERT_EQ(cgr__trace_alloc(&t, 200, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 1);
    ASSERT_EQ(cgr__trace_free(&t, 0), CGR_STATUS_OK);
    ASSERT_EQ(cgr__trace_alloc(&t, 300, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 2);
    ASSERT_EQ(t.n, 3);
    ASSERT_EQ(t.clock, 4);
    ASSERT_EQ(t.bufs[0].size, 100);
    ASSERT_EQ(t.bufs[0].start, 0);
    ASSERT_EQ(t.bufs[0].end, 2);
    ASSERT_EQ(t.bufs[1].start, 1);
    ASSERT_U64_EQ(t.bufs[1].end, UINT32_MAX);
    ASSERT_EQ(t.bufs[2].start, 3);
    ASSERT_U64_EQ(t.bufs[2].end, UINT32_MAX);

    /* Close ends every open buffer at the current clock. */
    cgr__trace_close(&t);
    ASSERT_EQ(t.bufs[0].end, 2);
    ASSERT_EQ(t.bufs[1].end, 4);
    ASSERT_EQ(t.bufs[2].end, 4);
    ASSERT_EQ(t.clock, 4);
    /* Closed buffers count as freed: freeing one again is an error. */
    ASSERT_EQ(cgr__trace_free(&t, 1), CGR_STATUS_INVALID_ARGUMENT);

    /* Reset forgets the requests but keeps the memory. */
    cgr__buf *mem = t.bufs;
    size_t cap = t.cap;
    cgr__trace_reset(&t);
    ASSERT_EQ(t.n, 0);
    ASSERT_EQ(t.clock, 0);
    ASSERT_PTR_EQ(t.bufs, mem);
    ASSERT_EQ(t.cap, cap);
    ASSERT_EQ(cgr__trace_alloc(&t, 7, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 0);
    ASSERT_EQ(t.bufs[0].start, 0);
    /* An id from before a reset names nothing, even where its old record is still open. */
    cgr__trace_reset(&t);
    ASSERT_EQ(cgr__trace_free(&t, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__trace_alloc(&t, 7, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 0);

    /* Growth beyond the first table keeps earlier records intact. */
    for (size_t i = 1; i < 1000; i++) {
        ASSERT_EQ(cgr__trace_alloc(&t, i, &id), CGR_STATUS_OK);
        ASSERT_EQ(id, i);
    }
    ASSERT_EQ(t.n, 1000);
    ASSERT(t.cap >= 1000);
    for (size_t i = 1; i < 1000; i++) {
        ASSERT_EQ(t.bufs[i].size, i);
        ASSERT_EQ(t.bufs[i].start, i);
    }

    cgr__trace_destroy(&t);
    ASSERT_PTR_EQ(t.bufs, NULL);
    ASSERT_EQ(t.n, 0);
    ASSERT_EQ(t.cap, 0);
    ASSERT_EQ(t.clock, 0);
    /* Destroying twice is harmless. */
    cgr__trace_destroy(&t);
}

/* Snapshot of a trace, to prove that a failed call changed nothing. */
typedef struct snapshot {
    cgr__trace t;
    cgr__buf bufs[8];
} snapshot;

static void take(snapshot *s, const cgr__trace *t)
{
    memset(s, 0, sizeof(*s));
    s->t = *t;
    ASSERT(t->n <= 8);
    if (t->n > 0)
        memcpy(s->bufs, t->bufs, t->n * sizeof(cgr__buf));
}

static void same(const snapshot *s, const cgr__trace *t)
{
    ASSERT_EQ(memcmp(&s->t, t, sizeof(*t)), 0);
    if (t->n > 0)
        ASSERT_EQ(memcmp(s->bufs, t->bufs, t->n * sizeof(cgr__buf)), 0);
}

static void test_trace_errors(void)
{
    cgr__trace t;
    snapshot s;
    size_t id = 12345;

    memset(&t, 0, sizeof(t));
    cgr__trace_init(&t);
    ASSERT_EQ(cgr__trace_alloc(&t, 64, &id), CGR_STATUS_OK);
    ASSERT_EQ(cgr__trace_alloc(&t, 64, &id), CGR_STATUS_OK);
    ASSERT_EQ(cgr__trace_free(&t, 0), CGR_STATUS_OK);

    take(&s, &t);
    id = 12345;
    ASSERT_EQ(cgr__trace_alloc(&t, 0, &id), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(id, 12345);
    same(&s, &t);
    /* NULL pointers are preconditions, asserted: cgr's callers always pass them. */
    ASSERT_DIES(cgr__trace_alloc(&t, 1, NULL));
    ASSERT_DIES(cgr__trace_alloc(NULL, 1, &id));
    ASSERT_EQ(cgr__trace_free(&t, 0), CGR_STATUS_INVALID_ARGUMENT); /* double free */
    same(&s, &t);
    ASSERT_EQ(cgr__trace_free(&t, 2), CGR_STATUS_INVALID_ARGUMENT); /* == n */
    same(&s, &t);
    ASSERT_EQ(cgr__trace_free(&t, SIZE_MAX), CGR_STATUS_INVALID_ARGUMENT);
    same(&s, &t);
    ASSERT_DIES(cgr__trace_free(NULL, 0));

    /*
     * A size near SIZE_MAX is a legal request for the trace (it records, it
     * does not allocate); the planner is the one that rejects it.
     */
    ASSERT_EQ(cgr__trace_alloc(&t, SIZE_MAX, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 2);
    cgr__trace_close(&t);
    take(&s, &t);
    ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, NULL, NULL), CGR_STATUS_INVALID_ARGUMENT);
    same(&s, &t);

    /* The other entry points assert their trace too. */
    ASSERT_DIES(cgr__trace_init(NULL));
    ASSERT_DIES(cgr__trace_reset(NULL));
    ASSERT_DIES(cgr__trace_close(NULL));
    ASSERT_DIES(cgr__trace_destroy(NULL));

    /*
     * The clock is full one tick before UINT32_MAX, which marks an open
     * interval: the last accepted alloc must still be closable to a
     * non-empty interval whose end is not the marker.
     */
    cgr__trace_reset(&t);
    t.clock = UINT32_MAX - 2;
    ASSERT_EQ(cgr__trace_alloc(&t, 10, &id), CGR_STATUS_OK);
    ASSERT_EQ(id, 0);
    ASSERT_EQ(t.clock, UINT32_MAX - 1);
    take(&s, &t);
    ASSERT_EQ(cgr__trace_alloc(&t, 10, &id), CGR_STATUS_INVALID_ARGUMENT);
    same(&s, &t);
    ASSERT_EQ(cgr__trace_free(&t, 0), CGR_STATUS_INVALID_ARGUMENT);
    same(&s, &t);
    cgr__trace_close(&t);
    ASSERT_U64_EQ(t.bufs[0].start, UINT32_MAX - 2);
    ASSERT_U64_EQ(t.bufs[0].end, UINT32_MAX - 1);
    ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, NULL, NULL), CGR_STATUS_OK);

    /*
     * A trace edited so that a buffer starts at the current clock still
     * closes to a non-empty interval.
     */
    cgr__trace_reset(&t);
    ASSERT_EQ(cgr__trace_alloc(&t, 10, &id), CGR_STATUS_OK);
    ASSERT_EQ(cgr__trace_alloc(&t, 10, &id), CGR_STATUS_OK);
    t.bufs[1].start = 5; /* beyond clock == 2 */
    t.bufs[0].start = 2; /* == clock */
    cgr__trace_close(&t);
    ASSERT_EQ(t.bufs[0].end, 3);
    ASSERT_EQ(t.bufs[1].end, 6);

    cgr__trace_destroy(&t);
}

/* ---- plan: hand-written cases --------------------------------------------- */

static void test_plan_small(void)
{
    size_t peak = 77, lb = 77;

    /* Empty. */
    ASSERT_EQ(cgr__plan(NULL, 0, ALIGN, &peak, &lb), CGR_STATUS_OK);
    ASSERT_EQ(peak, 0);
    ASSERT_EQ(lb, 0);
    ASSERT_EQ(plan_check(NULL, 0, ALIGN, NULL, NULL), 0);
    {
        cgr__trace t;
        cgr__trace_init(&t);
        cgr__trace_close(&t);
        peak = lb = 77;
        ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(peak, 0);
        ASSERT_EQ(lb, 0);
        cgr__trace_destroy(&t);
    }

    /* One buffer: footprint rounded up to the alignment. */
    {
        cgr__buf b[1] = {mk(100, 0, 1)};
        b[0].offset = 999;
        ASSERT_EQ(cgr__plan(b, 1, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[0].offset, 0);
        ASSERT_EQ(peak, 256);
        ASSERT_EQ(lb, 256);
        /* Either output may be NULL. */
        ASSERT_EQ(cgr__plan(b, 1, ALIGN, NULL, NULL), CGR_STATUS_OK);
    }

    /* Two buffers disjoint in time share offset 0 (built through a trace). */
    {
        cgr__trace t;
        size_t a, b;
        cgr__trace_init(&t);
        ASSERT_EQ(cgr__trace_alloc(&t, 1000, &a), CGR_STATUS_OK);
        ASSERT_EQ(cgr__trace_free(&t, a), CGR_STATUS_OK);
        ASSERT_EQ(cgr__trace_alloc(&t, 3000, &b), CGR_STATUS_OK);
        ASSERT_EQ(cgr__trace_free(&t, b), CGR_STATUS_OK);
        cgr__trace_close(&t);
        ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(t.bufs[a].offset, 0);
        ASSERT_EQ(t.bufs[b].offset, 0);
        ASSERT_EQ(peak, 3072);
        ASSERT_EQ(lb, 3072);
        ASSERT_EQ(plan_check(t.bufs, t.n, ALIGN, NULL, NULL), 0);
        cgr__trace_destroy(&t);
    }

    /*
     * Free at tick e and alloc at tick e cannot happen through a trace, but
     * [0,2) and [2,4) still do not overlap: intervals are half-open.
     */
    {
        cgr__buf b[2] = {mk(512, 0, 2), mk(512, 2, 4)};
        ASSERT_EQ(cgr__plan(b, 2, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[0].offset, 0);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(peak, 512);
        ASSERT_EQ(lb, 512);
    }

    /* Two overlapping buffers: larger first at 0, the other right above. */
    {
        cgr__trace t;
        size_t a, b;
        cgr__trace_init(&t);
        ASSERT_EQ(cgr__trace_alloc(&t, 300, &a), CGR_STATUS_OK);
        ASSERT_EQ(cgr__trace_alloc(&t, 1000, &b), CGR_STATUS_OK);
        ASSERT_EQ(cgr__trace_free(&t, a), CGR_STATUS_OK);
        cgr__trace_close(&t); /* b stays live until the end */
        ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(t.bufs[b].offset, 0);
        ASSERT_EQ(t.bufs[a].offset, 1024);
        ASSERT_EQ(peak, 1024 + 512);
        ASSERT_EQ(lb, 1024 + 512);
        ASSERT_EQ(plan_check(t.bufs, t.n, ALIGN, NULL, NULL), 0);
        cgr__trace_destroy(&t);
    }

    /* Other alignments: every offset is a multiple, footprints are rounded. */
    {
        cgr__buf b[3] = {mk(1, 0, 3), mk(4097, 0, 3), mk(10, 1, 2)};
        ASSERT_EQ(cgr__plan(b, 3, 4096, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(b[0].offset, 8192);
        ASSERT_EQ(b[2].offset, 12288);
        ASSERT_EQ(peak, 16384);
        ASSERT_EQ(lb, 16384);
        ASSERT_EQ(cgr__plan(b, 3, 1, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(b[2].offset, 4097);
        ASSERT_EQ(b[0].offset, 4107);
        ASSERT_EQ(peak, 4108);
        ASSERT_EQ(lb, 4108);
    }

    /*
     * The first gap that fits wins, including one between placed buffers.
     * Order by size: A(2048) B(1024, start 0) C(1024, start 5) D(512,
     * start 2) E(512, start 3). A@0; B@2048; C@2048 (B is dead by then);
     * D overlaps A, B and C, so it goes to 3072; E overlaps only A and D,
     * so it drops into the gap at 2048 that B and C leave during [3,5).
     */
    {
        cgr__buf b[5] = {mk(512, 3, 5), mk(512, 2, 6), mk(1024, 5, 10), mk(1024, 0, 3),
                         mk(2048, 0, 10)};
        ASSERT_EQ(cgr__plan(b, 5, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[4].offset, 0);
        ASSERT_EQ(b[3].offset, 2048);
        ASSERT_EQ(b[2].offset, 2048);
        ASSERT_EQ(b[1].offset, 3072);
        ASSERT_EQ(b[0].offset, 2048);
        ASSERT_EQ(peak, 3584);
        /* Ticks 2 and 5 have A + B|C + D live = 3584. */
        ASSERT_EQ(lb, 3584);
        check_plan_independently(b, 5, ALIGN, peak);
    }

    /*
     * An exact fit: C is as large as the gap that A leaves below B once A
     * is dead, and must take it rather than go above B.
     */
    {
        cgr__buf b[3] = {mk(1024, 0, 4), mk(1024, 2, 10), mk(1024, 6, 10)};
        ASSERT_EQ(cgr__plan(b, 3, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[0].offset, 0);
        ASSERT_EQ(b[1].offset, 1024);
        ASSERT_EQ(b[2].offset, 0);
        ASSERT_EQ(peak, 2048);
        ASSERT_EQ(lb, 2048);
    }

    /*
     * Greedy-by-size is not optimal: here it needs 15 units where 14 are
     * live at tick 1. Order: 6@0; the 5 on [0,2) also @0 (not live with
     * the 6); the 5 on [0,3) above both @6; the 4 above that @11.
     */
    {
        const size_t u = ALIGN;
        cgr__buf b[4] = {mk(4 * u, 1, 2), mk(6 * u, 2, 3), mk(5 * u, 0, 2), mk(5 * u, 0, 3)};
        ASSERT_EQ(cgr__plan(b, 4, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(b[2].offset, 0);
        ASSERT_EQ(b[3].offset, 6 * u);
        ASSERT_EQ(b[0].offset, 11 * u);
        ASSERT_EQ(peak, 15 * u);
        ASSERT_EQ(lb, 14 * u);
    }

    /* Ties: equal footprints go by earlier start, then by lower index. */
    {
        cgr__buf b[3] = {mk(256, 1, 4), mk(200, 0, 4), mk(256, 1, 4)};
        ASSERT_EQ(cgr__plan(b, 3, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(b[0].offset, 256);
        ASSERT_EQ(b[2].offset, 512);
        ASSERT_EQ(peak, 768);
    }

    /* The largest footprint that can be aligned at all is still planned. */
    {
        cgr__buf b[1] = {mk(SIZE_MAX - (ALIGN - 1), 0, 1)};
        ASSERT_EQ(cgr__plan(b, 1, ALIGN, &peak, &lb), CGR_STATUS_OK);
        ASSERT_EQ(b[0].offset, 0);
        ASSERT_U64_EQ(peak, SIZE_MAX - (ALIGN - 1));
        ASSERT_U64_EQ(lb, SIZE_MAX - (ALIGN - 1));
    }
}

/* A failed plan must leave offsets and outputs exactly as they were. */
static void expect_plan_rejected(cgr__buf *b, size_t n, size_t align)
{
    cgr__buf before[4];
    size_t peak = 4242, lb = 4343;

    ASSERT(n <= 4);
    for (size_t i = 0; i < n; i++)
        b[i].offset = 1000 + i;
    memcpy(before, b, n * sizeof(*b));
    ASSERT_EQ(cgr__plan(b, n, align, &peak, &lb), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(memcmp(before, b, n * sizeof(*b)), 0);
    ASSERT_EQ(peak, 4242);
    ASSERT_EQ(lb, 4343);
}

static void test_plan_errors(void)
{
    {
        cgr__buf b[2] = {mk(10, 0, 2), mk(10, 1, 3)};
        expect_plan_rejected(b, 2, 0);
        expect_plan_rejected(b, 2, 3);
        expect_plan_rejected(b, 2, 384);
        expect_plan_rejected(b, 2, ((size_t)1 << 40) + 1);
    }
    {
        cgr__buf b[2] = {mk(10, 0, 2), mk(10, 1, UINT32_MAX)}; /* open */
        expect_plan_rejected(b, 2, ALIGN);
    }
    {
        cgr__buf b[2] = {mk(10, 0, 2), mk(10, 3, 3)}; /* empty */
        expect_plan_rejected(b, 2, ALIGN);
    }
    {
        /* Empty while another is live, where no sum of live bytes would go below zero. */
        cgr__buf b[2] = {mk(10, 0, 9), mk(10, 5, 5)};
        expect_plan_rejected(b, 2, ALIGN);
    }
    {
        cgr__buf b[2] = {mk(10, 0, 2), mk(10, 4, 3)}; /* reversed */
        expect_plan_rejected(b, 2, ALIGN);
    }
    {
        cgr__buf b[2] = {mk(10, 0, 2), mk(SIZE_MAX, 0, 3)};
        expect_plan_rejected(b, 2, ALIGN);
    }
    {
        /* size + align - 1 wraps by exactly one. */
        cgr__buf b[1] = {mk(SIZE_MAX - (ALIGN - 2), 0, 1)};
        expect_plan_rejected(b, 1, ALIGN);
    }
    {
        /* Each fits alone, but two live together cannot both fit below SIZE_MAX. */
        cgr__buf b[3] = {mk(100, 0, 9), mk(SIZE_MAX / 2 + 1, 0, 3), mk(SIZE_MAX / 2 + 1, 1, 4)};
        expect_plan_rejected(b, 3, ALIGN);
        /* The same two sizes disjoint in time are fine. */
        b[2].start = 3;
        ASSERT_EQ(cgr__plan(b, 3, ALIGN, NULL, NULL), CGR_STATUS_OK);
        ASSERT_EQ(b[1].offset, 0);
        ASSERT_EQ(b[2].offset, 0);
    }
    {
        /*
         * The same shape as the non-optimal case in test_plan_small(),
         * scaled so that the live bytes (14 units) still fit in size_t but
         * the greedy placement (15 units) does not: the placement itself
         * must notice, since the lower bound alone would not.
         */
        const size_t u = (SIZE_MAX / 14) & ~(size_t)(ALIGN - 1);
        cgr__buf b[4] = {mk(4 * u, 1, 2), mk(6 * u, 2, 3), mk(5 * u, 0, 2), mk(5 * u, 0, 3)};
        expect_plan_rejected(b, 4, ALIGN);
    }
    {
        size_t peak = 5;
        ASSERT_DIES(cgr__plan(NULL, 3, ALIGN, &peak, NULL));
        ASSERT_EQ(peak, 5);
    }
}

/* ---- plan_check must not be vacuous ---------------------------------------- */

static void test_check_detects(void)
{
    size_t a = 0, b = 0;

    /* Live together and overlapping bytes. */
    {
        cgr__buf x[3] = {mk(100, 0, 10), mk(100, 5, 6), mk(100, 2, 8)};
        x[0].offset = 0;
        x[1].offset = 512;
        x[2].offset = 256; /* [256,356) vs x[0] [0,100): fine */
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 0);
        x[2].offset = 512; /* now collides with x[1] at tick 5 */
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 1);
        ASSERT_EQ(a, 1);
        ASSERT_EQ(b, 2);
        /* Only overlapping in memory, never live together: fine. */
        x[1].start = 8;
        x[1].end = 9;
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 0);
        /* The first pair in index order is the one reported. */
        x[2].offset = 0;
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 1);
        ASSERT_EQ(a, 0);
        ASSERT_EQ(b, 2);
        /* Touching byte ranges do not overlap. */
        x[0].size = 256;
        x[2].offset = 256;
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 0);
        /* One byte more and they do. */
        x[0].size = 257;
        ASSERT_EQ(plan_check(x, 3, ALIGN, &a, &b), 1);
        ASSERT_EQ(a, 0);
        ASSERT_EQ(b, 2);
    }
    /* Misaligned offset: both indices name the buffer. */
    {
        cgr__buf x[2] = {mk(100, 0, 10), mk(100, 20, 30)};
        x[1].offset = 128;
        a = b = 0;
        ASSERT_EQ(plan_check(x, 2, ALIGN, &a, &b), 1);
        ASSERT_EQ(a, 1);
        ASSERT_EQ(b, 1);
        ASSERT_EQ(plan_check(x, 2, 128, &a, &b), 0);
        /* A check that cannot run must not pass. */
        ASSERT_EQ(plan_check(x, 2, 0, &a, &b), 1);
        ASSERT_EQ(plan_check(x, 2, 96, NULL, NULL), 1);
        ASSERT_EQ(plan_check(NULL, 2, ALIGN, NULL, NULL), 1);
        /* Bytes that would run past SIZE_MAX are bad on their own. */
        x[1].offset = 256;
        x[1].size = SIZE_MAX - 100;
        ASSERT_EQ(plan_check(x, 2, ALIGN, &a, &b), 1);
        ASSERT_EQ(a, 1);
        ASSERT_EQ(b, 1);
    }
    /*
     * Break a real plan: take a planned random trace, find a pair that is
     * live together, move one onto the other, and the check must name it.
     */
    {
        enum { N = 64 };
        cgr__buf x[N];
        size_t found = 0;
        for (size_t i = 0; i < N; i++)
            x[i] = mk(rng_range(1, 100000), (uint32_t)i, (uint32_t)(i + 1 + rng_range(0, 20)));
        ASSERT_EQ(cgr__plan(x, N, ALIGN, NULL, NULL), CGR_STATUS_OK);
        ASSERT_EQ(plan_check(x, N, ALIGN, &a, &b), 0);
        for (size_t i = 0; i < N && !found; i++) {
            for (size_t j = i + 1; j < N && !found; j++) {
                if (x[i].start < x[j].end && x[j].start < x[i].end) {
                    size_t saved = x[j].offset;
                    x[j].offset = x[i].offset;
                    ASSERT_EQ(plan_check(x, N, ALIGN, &a, &b), 1);
                    ASSERT(a < b);
                    ASSERT(x[a].start < x[b].end && x[b].start < x[a].end);
                    ASSERT(x[a].offset < x[b].offset + x[b].size &&
                           x[b].offset < x[a].offset + x[a].size);
                    x[j].offset = saved;
                    ASSERT_EQ(plan_check(x, N, ALIGN, &a, &b), 0);
                    found++;
                }
            }
        }
        ASSERT_EQ(found, 1);
    }
}

/* ---- randomized ----------------------------------------------------------- */

enum { RANDOM_TRACES = 5000, MAX_REQ = 200 };

static size_t random_size(void)
{
    switch (rng_range(0, 9)) {
    case 0: case 1: case 2: case 3:
        return rng_range(1, 300);                 /* tiny */
    case 4: case 5: case 6: case 7:
        return rng_range(301, 4 * MiB);           /* medium */
    default:
        return rng_range(4 * MiB, 64 * MiB);      /* large */
    }
}

static void test_random(void)
{
    cgr__trace t;
    size_t live[MAX_REQ];
    cgr__buf copy[MAX_REQ];
    double sum_ratio = 0.0, worst = 0.0;

    cgr__trace_init(&t);
    for (int iter = 0; iter < RANDOM_TRACES; iter++) {
        size_t want = rng_range(1, MAX_REQ);
        size_t n_live = 0;
        /* Per trace, how eagerly it frees and how many leaks it keeps. */
        uint64_t free_pct = rng_range(20, 80);
        uint64_t leak_pct = rng_range(0, 30);

        cgr__trace_reset(&t);
        while (t.n < want || n_live > 0) {
            int do_alloc = t.n < want && (n_live == 0 || rng_range(1, 100) > free_pct);
            if (do_alloc) {
                size_t id;
                ASSERT_EQ(cgr__trace_alloc(&t, random_size(), &id), CGR_STATUS_OK);
                live[n_live++] = id;
            } else {
                size_t k = rng_range(0, n_live - 1);
                size_t id = live[k];
                live[k] = live[--n_live];
                /* Some buffers are never freed and live until close. */
                if (rng_range(1, 100) > leak_pct)
                    ASSERT_EQ(cgr__trace_free(&t, id), CGR_STATUS_OK);
            }
        }
        cgr__trace_close(&t);
        ASSERT_EQ(t.n, want);

        size_t peak = 0, lb = 0, largest = 0;
        ASSERT_EQ(cgr__plan(t.bufs, t.n, ALIGN, &peak, &lb), CGR_STATUS_OK);
        size_t a = 0, b = 0;
        if (plan_check(t.bufs, t.n, ALIGN, &a, &b) != 0)
            TEST_FAIL_("trace %d: plan_check found %zu/%zu", iter, a, b);
        check_plan_independently(t.bufs, t.n, ALIGN, peak);
        /* The brute-force bound is quadratic; every fourth trace suffices. */
        if (iter % 4 == 0)
            ASSERT_U64_EQ(lb, brute_lower_bound(t.bufs, t.n, ALIGN));
        for (size_t i = 0; i < t.n; i++)
            if (align_up(t.bufs[i].size, ALIGN) > largest)
                largest = align_up(t.bufs[i].size, ALIGN);
        ASSERT(peak >= lb);
        ASSERT(peak >= largest);
        ASSERT(lb > 0);

        /*
         * Planning the same trace again gives the same plan. Every eighth
         * trace is plenty for that and keeps the sanitizer build fast.
         */
        if (iter % 8 == 0) {
            size_t peak2 = 0, lb2 = 0;
            memcpy(copy, t.bufs, t.n * sizeof(cgr__buf));
            for (size_t i = 0; i < t.n; i++)
                copy[i].offset = SIZE_MAX;
            ASSERT_EQ(cgr__plan(copy, t.n, ALIGN, &peak2, &lb2), CGR_STATUS_OK);
            ASSERT_EQ(memcmp(copy, t.bufs, t.n * sizeof(cgr__buf)), 0);
            ASSERT_U64_EQ(peak2, peak);
            ASSERT_U64_EQ(lb2, lb);
        }

        double ratio = (double)peak / (double)lb;
        sum_ratio += ratio;
        if (ratio > worst)
            worst = ratio;
    }
    cgr__trace_destroy(&t);

    double mean = sum_ratio / RANDOM_TRACES;
    printf("planner: %d traces, peak/lower_bound mean %.3f worst %.3f\n", RANDOM_TRACES, mean,
           worst);
    /*
     * The planner aims at a mean of at most 1.25. With this seed and
     * generator the measured mean is 1.008 and the worst trace 1.326, so
     * the bounds sit a little above those numbers: a change that makes the
     * planner noticeably worse fails here instead of passing unnoticed.
     * The run is deterministic, so the margin is for deliberate planner
     * changes, not for noise.
     */
    if (!(mean <= 1.03))
        TEST_FAIL_("mean peak/lower_bound %.4f exceeds 1.03", mean);
    if (!(worst <= 1.5))
        TEST_FAIL_("worst peak/lower_bound %.4f exceeds 1.5", worst);
}

int main(void)
{
    test_trace_basics();
    test_trace_errors();
    test_plan_small();
    test_plan_errors();
    test_check_detects();
    test_random();
    return 0;
}
