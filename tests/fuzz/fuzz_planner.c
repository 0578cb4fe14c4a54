/*
 * libFuzzer target: the scratch trace and the greedy-by-size planner
 * (allocator/planner.c).
 *
 * Most inputs are a program of trace calls: alloc(size) with sizes from
 * one byte to SIZE_MAX, free(index) with valid, repeated and out-of-range
 * indices, and reset. A shadow copy of the trace, kept by this file, gives
 * the status each call must return, and after each one the trace must
 * equal the shadow exactly: a refused call changes nothing. Other inputs
 * write sizes and intervals straight into the trace (run_edits), to reach
 * what calls cannot produce. The trace is then closed and planned, with
 * align 256 or another (also invalid) alignment, and the plan is checked
 * against an O(n^2) oracle: live buffers disjoint, offsets aligned, peak
 * and lower bound recomputed, plan_check in agreement. A refused plan
 * must leave the trace untouched and be justified by its input. Any
 * violation aborts; ASan and UBSan catch the rest.
 *
 * Input layout: one header byte (see LLVMFuzzerTestOneInput), then calls
 * of one opcode byte and its operands, or edits, until the input ends.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "plan_check.h"
#include "planner.h"

/* Bounds the O(n^2) oracle; inputs longer than this add nothing new. */
#define MAX_OPS 512

/* Alignments cgr__plan is asked for: CGR__ALIGN (256) most of the time,
 * other powers of two, and values it must refuse. */
static const size_t aligns[] = {
    256, 256, 256, 256, 1, 2, 8, 4096, (size_t)1 << 21, (size_t)1 << 63, 0, 3, 255, 257,
    SIZE_MAX,
};
#define N_ALIGNS (sizeof aligns / sizeof aligns[0])

/* Sizes near the rounding and overflow edges (for align 256 and others). */
static const size_t edge_sizes[] = {
    0,
    1,
    255,
    256,
    257,
    SIZE_MAX,
    SIZE_MAX - 1,
    SIZE_MAX - 254,
    SIZE_MAX - 255,
    SIZE_MAX - 256,
    SIZE_MAX / 2,
    SIZE_MAX / 2 + 1,
    SIZE_MAX / 3,
    SIZE_MAX / 4,
    (size_t)1 << 40,
    (size_t)1 << 62,
};
#define N_EDGE_SIZES (sizeof edge_sizes / sizeof edge_sizes[0])

/*
 * Status names from cgr.h's own list: the planner target links planner.c
 * alone, without error.c and the CUDA libraries behind it.
 */
static const char *status_name(cgr_status st)
{
    switch (st) {
#define STATUS_CASE(name, value, text)                                                     \
    case CGR_STATUS_##name:                                                                \
        return "CGR_STATUS_" #name;
        CGR_STATUS_MAP(STATUS_CASE)
#undef STATUS_CASE
    default:
        return "CGR_STATUS_UNKNOWN";
    }
}

/* The planner's open-interval marker (planner.h: end is UINT32_MAX until freed). */
#define OPEN UINT32_MAX

static size_t decode_size(fuzz_input *in)
{
    uint8_t b = fuzz_u8(in);
    switch (b >> 6) {
    case 0:
        return (size_t)(b & 63) * 64 + fuzz_u8(in); /* 0..4287: sub-alignment sizes */
    case 1:
        return (size_t)fuzz_u16(in) << (b & 31); /* up to about 2^46 */
    case 2:
        return (size_t)fuzz_u64(in);
    default:
        return edge_sizes[(b & 63) % N_EDGE_SIZES];
    }
}

/* The trace as it must be: what every operation so far says it should hold. */
typedef struct shadow {
    cgr__buf bufs[MAX_OPS];
    size_t n;
    uint32_t clock;
} shadow;

/* The trace and its shadow hold the same requests, field by field. */
static void check_same(const cgr__trace *t, const shadow *s, const char *after)
{
    FUZZ_CHECK(t->n == s->n && t->clock == s->clock,
               "after %s: trace has n %zu clock %u, expected n %zu clock %u", after, t->n,
               t->clock, s->n, s->clock);
    FUZZ_CHECK(t->n <= t->cap, "after %s: n %zu > cap %zu", after, t->n, t->cap);
    FUZZ_CHECK(t->n == 0 || t->bufs != NULL, "after %s: n %zu with no table", after, t->n);
    for (size_t i = 0; i < s->n; i++) {
        const cgr__buf *a = &t->bufs[i], *b = &s->bufs[i];
        FUZZ_CHECK(a->size == b->size && a->start == b->start && a->end == b->end,
                   "after %s: buf %zu is size %zu [%u, %u), expected size %zu [%u, %u)", after,
                   i, a->size, a->start, a->end, b->size, b->start, b->end);
    }
}

/* Aligned footprint, or 0 when it would not fit in a size_t. */
static int footprint(size_t size, size_t align, size_t *out)
{
    size_t x;
    if (__builtin_add_overflow(size, align - 1, &x))
        return 0;
    *out = x / align * align;
    return 1;
}

/* Footprint of a planned buffer, which must fit (the plan placed it). */
static size_t fp_of(const cgr__buf *b, size_t align)
{
    size_t f = 0;
    FUZZ_CHECK(footprint(b->size, align, &f), "size %zu was planned but cannot be aligned",
               b->size);
    return f;
}

static int live_together(const cgr__buf *x, const cgr__buf *y)
{
    return x->start < y->end && y->start < x->end;
}

/* Byte ranges [ox, ox + sx) and [oy, oy + sy) share a byte (no wrap: checked). */
static int ranges_overlap(size_t ox, size_t sx, size_t oy, size_t sy)
{
    return sx > 0 && sy > 0 && ox < oy + sy && oy < ox + sx;
}

/*
 * Checks one successful plan against an independent oracle: every offset
 * aligned and in range, buffers live at the same time disjoint both in
 * requested bytes and in aligned footprints, the peak equal to the highest
 * footprint end, and the lower bound equal to the largest sum of
 * footprints live at one tick (the maximum is reached at some start).
 * Then the planner's own checker must agree, and must catch a broken plan.
 */
static void check_plan(cgr__buf *bufs, size_t n, size_t align, size_t peak, size_t lb)
{
    size_t top = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        size_t fi = fp_of(&bufs[i], align);
        FUZZ_CHECK(bufs[i].offset % align == 0, "buf %zu: offset %zu not aligned to %zu", i,
                   bufs[i].offset, align);
        FUZZ_CHECK(bufs[i].offset <= SIZE_MAX - fi, "buf %zu: offset %zu + %zu wraps", i,
                   bufs[i].offset, fi);
        if (bufs[i].offset + fi > top)
            top = bufs[i].offset + fi;
    }
    for (size_t i = 0; i < n; i++) {
        size_t live = 0;
        for (size_t j = 0; j < n; j++) {
            if (!(bufs[j].start <= bufs[i].start && bufs[i].start < bufs[j].end))
                continue;
            /* Live footprints are disjoint below the peak, so the sum fits. */
            FUZZ_CHECK(!__builtin_add_overflow(live, fp_of(&bufs[j], align), &live),
                       "live bytes at tick %u overflow, yet the plan fits", bufs[i].start);
        }
        if (live > best)
            best = live;
    }
    FUZZ_CHECK(peak == top, "peak %zu, highest footprint end %zu", peak, top);
    FUZZ_CHECK(lb == best, "lower bound %zu, recomputed %zu", lb, best);
    FUZZ_CHECK(peak >= lb, "peak %zu below lower bound %zu", peak, lb);

    size_t pair_a = SIZE_MAX, pair_b = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (!live_together(&bufs[i], &bufs[j]))
                continue;
            size_t fi = fp_of(&bufs[i], align), fj = fp_of(&bufs[j], align);
            FUZZ_CHECK(!ranges_overlap(bufs[i].offset, fi, bufs[j].offset, fj),
                       "bufs %zu [%zu +%zu) and %zu [%zu +%zu) are live together and overlap",
                       i, bufs[i].offset, fi, j, bufs[j].offset, fj);
            if (pair_a == SIZE_MAX && bufs[i].size > 0 && bufs[j].size > 0) {
                pair_a = i;
                pair_b = j;
            }
        }
    }

    size_t a = 0, b = 0;
    FUZZ_CHECK(plan_check(bufs, n, align, &a, &b) == 0,
               "plan_check rejects a plan the oracle accepts (pair %zu, %zu)", a, b);

    /* Stacking two live, non-empty buffers on one offset must be caught. */
    if (pair_a != SIZE_MAX) {
        size_t saved = bufs[pair_b].offset;
        bufs[pair_b].offset = bufs[pair_a].offset;
        FUZZ_CHECK(plan_check(bufs, n, align, &a, &b) == 1,
                   "plan_check misses bufs %zu and %zu at one offset", pair_a, pair_b);
        bufs[pair_b].offset = saved;
    }
}

/*
 * Plans the trace and checks the outcome. An open or empty interval, or a
 * bad align, must be refused with INVALID_ARGUMENT. Otherwise that status
 * is allowed only for a size that cannot be aligned or a total of
 * footprints past SIZE_MAX: below that, greedy placement always fits, as
 * each offset is at most the sum of the footprints placed before it.
 */
static void plan_and_check(cgr__trace *t, size_t align)
{
    size_t n = t->n;
    int pow2 = align != 0 && (align & (align - 1)) == 0;
    int intervals_ok = 1;
    for (size_t i = 0; i < n; i++)
        if (t->bufs[i].end == OPEN || t->bufs[i].end <= t->bufs[i].start)
            intervals_ok = 0;
    int fits = pow2 && intervals_ok;
    size_t total = 0;
    for (size_t i = 0; fits && i < n; i++) {
        size_t f;
        fits = footprint(t->bufs[i].size, align, &f) && !__builtin_add_overflow(total, f, &total);
    }

    /* A copy before planning, to prove a refusal changed nothing. */
    cgr__buf *before = malloc(n > 0 ? n * sizeof *before : 1);
    if (before == NULL)
        abort();
    if (n > 0)
        memcpy(before, t->bufs, n * sizeof *before);

    size_t peak = 12345, lb = 67890;
    cgr_status st = cgr__plan(t->bufs, n, align, &peak, &lb);
    FUZZ_CHECK(st == CGR_STATUS_OK || st == CGR_STATUS_INVALID_ARGUMENT ||
                   st == CGR_STATUS_OUT_OF_MEMORY,
               "cgr__plan returned %s", status_name(st));
    if (!pow2) {
        FUZZ_CHECK(st == CGR_STATUS_INVALID_ARGUMENT, "align %zu accepted", align);
        /* A check that cannot be carried out must not pass either. */
        size_t a = 0, b = 0;
        FUZZ_CHECK(plan_check(t->bufs, n, align, &a, &b) == 1 && a == SIZE_MAX &&
                       b == SIZE_MAX,
                   "plan_check with align %zu: pair %zu, %zu", align, a, b);
    }
    if (!intervals_ok)
        FUZZ_CHECK(st == CGR_STATUS_INVALID_ARGUMENT, "open or empty interval accepted");
    if (fits)
        FUZZ_CHECK(st == CGR_STATUS_OK, "cgr__plan returned %s for %zu buffers of %zu bytes "
                   "in all (align %zu)", status_name(st), n, total, align);

    if (st != CGR_STATUS_OK) {
        FUZZ_CHECK(n == 0 || memcmp(before, t->bufs, n * sizeof *before) == 0,
                   "cgr__plan returned %s but changed the trace", status_name(st));
        FUZZ_CHECK(peak == 12345 && lb == 67890, "cgr__plan returned %s but wrote its outputs",
                   status_name(st));
        free(before);
        return;
    }
    /* Planning writes offsets and nothing else. */
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(t->bufs[i].size == before[i].size && t->bufs[i].start == before[i].start &&
                       t->bufs[i].end == before[i].end,
                   "cgr__plan changed buf %zu beyond its offset", i);
    check_plan(t->bufs, n, align, peak, lb);

    /* The plan is a function of the trace: planning again gives the same. */
    size_t peak2 = 0, lb2 = 0;
    cgr_status st2 = cgr__plan(before, n, align, &peak2, &lb2);
    FUZZ_CHECK(st2 == CGR_STATUS_OK && peak2 == peak && lb2 == lb,
               "second plan: %s, peak %zu vs %zu", status_name(st2), peak2, peak);
    for (size_t i = 0; i < n; i++)
        FUZZ_CHECK(before[i].offset == t->bufs[i].offset, "second plan moved buf %zu", i);
    free(before);
}

/*
 * Mode 1, the API: a program of alloc, free and reset calls. The shadow
 * gives the status each must return, and the trace must equal the shadow
 * after every call: a refused call changes nothing.
 */
static void run_calls(fuzz_input *in, cgr__trace *t, shadow *s)
{
    for (int op = 0; op < MAX_OPS && !fuzz_empty(in); op++) {
        uint8_t code = fuzz_u8(in);
        size_t id = SIZE_MAX;
        cgr_status st;
        if (code % 8 < 4) { /* alloc: the common case */
            size_t sz = decode_size(in);
            st = cgr__trace_alloc(t, sz, &id);
            if (sz == 0)
                FUZZ_CHECK(st == CGR_STATUS_INVALID_ARGUMENT, "alloc(0) returned %s",
                           status_name(st));
            else if (s->clock < UINT32_MAX - 8)
                FUZZ_CHECK(st == CGR_STATUS_OK, "alloc(%zu) returned %s", sz, status_name(st));
            else /* a full clock may refuse: the exact tick is the library's choice */
                FUZZ_CHECK(st == CGR_STATUS_OK || st == CGR_STATUS_INVALID_ARGUMENT,
                           "alloc(%zu) at clock %u returned %s", sz, s->clock, status_name(st));
            if (st == CGR_STATUS_OK) {
                FUZZ_CHECK(id == s->n, "alloc gave id %zu, expected %zu", id, s->n);
                /* The tick and the end it will get stay below the open marker. */
                FUZZ_CHECK(s->clock < UINT32_MAX - 1, "alloc accepted at clock %u", s->clock);
                s->bufs[s->n] = (cgr__buf){.size = sz, .start = s->clock, .end = OPEN};
                s->n++;
                s->clock++;
            }
            check_same(t, s, "alloc");
        } else if (code % 8 < 7) { /* free: mostly an existing id, sometimes not */
            uint8_t b = fuzz_u8(in);
            id = b == 0xff ? (size_t)fuzz_u64(in) : b % (s->n + 1);
            st = cgr__trace_free(t, id);
            int valid = id < s->n && s->bufs[id].end == OPEN;
            if (!valid)
                FUZZ_CHECK(st == CGR_STATUS_INVALID_ARGUMENT, "free(%zu) of %zu returned %s", id,
                           s->n, status_name(st));
            else if (s->clock < UINT32_MAX - 8)
                FUZZ_CHECK(st == CGR_STATUS_OK, "free(%zu) returned %s", id, status_name(st));
            else
                FUZZ_CHECK(st == CGR_STATUS_OK || st == CGR_STATUS_INVALID_ARGUMENT,
                           "free(%zu) at clock %u returned %s", id, s->clock, status_name(st));
            if (st == CGR_STATUS_OK) {
                FUZZ_CHECK(s->clock < UINT32_MAX - 1, "free accepted at clock %u", s->clock);
                s->bufs[id].end = s->clock;
                s->clock++;
            }
            check_same(t, s, "free");
        } else if ((code & 0xf0) == 0xf0) { /* reset, rarely: keeps the table */
            cgr__trace_reset(t);
            s->n = 0;
            s->clock = 0;
            check_same(t, s, "reset");
        }
    }
}

/*
 * Mode 2, an edited trace: sizes (0 included) and intervals written
 * straight into the table, as a caller that edits the trace would, so that
 * cgr__plan's own checks (open and empty intervals) and ticks shared by
 * an end and a start are reached, which calls alone never produce. Starts
 * stay within what cgr__trace_alloc can give (below UINT32_MAX - 1); the
 * clock may lie below them, so closing may have to use its fallback.
 */
static void run_edits(fuzz_input *in, cgr__trace *t, shadow *s)
{
    for (int op = 0; op < MAX_OPS && !fuzz_empty(in); op++) {
        size_t id;
        size_t sz = decode_size(in);
        uint8_t b = fuzz_u8(in);
        uint32_t start = b == 0xff ? fuzz_u32(in) : b;
        if (start > UINT32_MAX - 2)
            start = UINT32_MAX - 2;
        uint8_t e = fuzz_u8(in);
        uint32_t end;
        if (e == 0xff)
            end = OPEN;
        else if (e == 0xfe)
            end = fuzz_u32(in); /* anything, empty and reversed included */
        else
            end = (uint64_t)start + e < OPEN ? start + e : OPEN - 1;
        FUZZ_CHECK(cgr__trace_alloc(t, 1, &id) == CGR_STATUS_OK && id == s->n,
                   "alloc %d of an edited trace failed", op);
        t->bufs[id] = (cgr__buf){.size = sz, .start = start, .end = end};
        s->bufs[s->n++] = t->bufs[id];
    }
    /*
     * The clock, too, stays within what calls can give (at most
     * UINT32_MAX - 1): at UINT32_MAX, close would end open buffers on the
     * open marker itself (see docs/fuzzing.md, "Findings").
     */
    uint8_t c = fuzz_u8(in);
    t->clock = c == 0xff ? fuzz_u32(in) : c;
    if (t->clock > OPEN - 1)
        t->clock = OPEN - 1;
    s->clock = t->clock;
    check_same(t, s, "edits");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    static shadow s; /* large; static keeps it off the stack */
    cgr__trace t;

    /* A NULL trace or array is an asserted precondition (planner.h), not input: the
     * unit test checks those asserts; the fuzzer feeds the contents. */
    cgr__trace_init(&t);
    memset(&s, 0, sizeof s);

    /*
     * Header byte: bits 0-3 pick the alignment; bit 5 picks edits over
     * calls; with calls, bit 4 starts the clock a few ticks below its
     * limit, as after about 4 billion events, so the refusals of a full
     * clock are reached without recording them all; with edits, bit 6
     * skips closing, leaving open intervals for cgr__plan to refuse.
     */
    uint8_t header = fuzz_u8(&in);
    size_t align = aligns[(header & 15) % N_ALIGNS];
    int edits = header & 32;
    if (!edits && (header & 16)) {
        t.clock = UINT32_MAX - 1 - (fuzz_u8(&in) % 8);
        s.clock = t.clock;
    }
    if (edits)
        run_edits(&in, &t, &s);
    else
        run_calls(&in, &t, &s);

    if (!(edits && (header & 64))) {
        cgr__trace_close(&t);
        /* Open buffers end at the clock, and an interval is never left empty. */
        for (size_t i = 0; i < s.n; i++)
            if (s.bufs[i].end == OPEN)
                s.bufs[i].end = s.clock > s.bufs[i].start ? s.clock : s.bufs[i].start + 1;
        check_same(&t, &s, "close");
        /* Spelled out although the shadow implies it: close leaves nothing open,
         * and intervals made by calls are what cgr__plan accepts. */
        for (size_t i = 0; i < t.n; i++)
            FUZZ_CHECK(t.bufs[i].end != OPEN && (edits || t.bufs[i].end > t.bufs[i].start),
                       "closed buf %zu has interval [%u, %u)", i, t.bufs[i].start,
                       t.bufs[i].end);
    }

    plan_and_check(&t, align);

    cgr__trace_destroy(&t);
    FUZZ_CHECK(t.bufs == NULL && t.n == 0 && t.cap == 0 && t.clock == 0,
               "cgr__trace_destroy left n %zu cap %zu", t.n, t.cap);
    return 0;
}
