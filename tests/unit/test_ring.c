/*
 * Unit tests of the staging-slot ring.
 *
 * Fixed sequences pin down each rule of ring.h; a long randomized run then
 * drives the ring against a model that tracks every ticket on its own
 * (waited or not, slot reused or not) instead of the ring's counters, and
 * checks that every failed call leaves the ring byte-for-byte unchanged.
 */
#define _POSIX_C_SOURCE 200809L /* fork, for the asserted preconditions */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "death.h"
#include "ring.h"
#include "test.h"

/* xorshift64*: a fixed seed makes every failure reproducible. */
#define TEST_RNG_SEED 0xD1B54A32D192ED03ull
#include "xorshift.h"

static uint64_t rng_range(uint64_t lo, uint64_t hi)
{
    return lo + rng_next() % (hi - lo + 1);
}

/*
 * Runs `call`, which must fail with `want`, and checks that the ring did
 * not change. The ring is zeroed before init everywhere, so its padding
 * bytes are stable and memcmp is meaningful.
 */
#define EXPECT_FAIL_UNCHANGED(r, call, want)                                               \
    do {                                                                                   \
        cgr__ring before_;                                                                 \
        memcpy(&before_, (r), sizeof(before_));                                            \
        ASSERT_EQ((call), (want));                                                         \
        ASSERT_EQ(memcmp(&before_, (r), sizeof(before_)), 0);                              \
    } while (0)

static void ring_new(cgr__ring *r, uint32_t n)
{
    memset(r, 0, sizeof(*r));
    cgr__ring_init(r, n);
}

/* Acquire and commit one run; returns its ticket. */
static uint64_t launch(cgr__ring *r)
{
    uint64_t t = UINT64_MAX;
    uint32_t s = UINT32_MAX;
    ASSERT_EQ(cgr__ring_acquire(r, &t, &s), CGR_STATUS_OK);
    ASSERT_EQ(s, (uint32_t)(t % r->slots));
    cgr__ring_commit(r, t);
    return t;
}

static void test_init(void)
{
    cgr__ring r;

    /* Zero slots and NULL are cgr's own mistakes (staging_slots is validated): asserted. */
    memset(&r, 0xAB, sizeof(r));
    ASSERT_DIES(cgr__ring_init(&r, 0));
    ASSERT_DIES(cgr__ring_init(NULL, 2));

    cgr__ring_init(&r, 3);
    ASSERT_EQ(r.slots, 3);
    ASSERT_U64_EQ(r.launched, 0);
    ASSERT_U64_EQ(r.waited, 0);
    ASSERT_EQ(r.acquired, 0);
    ASSERT_EQ(cgr__ring_slot(&r, 7), 1);

    /* One slot is legal: every run must be waited before the next. */
    ring_new(&r, 1);
    ASSERT_U64_EQ(launch(&r), 0);
    uint64_t t;
    uint32_t s;
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_BUSY);
    cgr__ring_mark_waited(&r, 0);
    ASSERT_U64_EQ(launch(&r), 1);
}

static void test_sequencing(void)
{
    cgr__ring r;
    uint64_t t = 0, t2 = 0;
    uint32_t s = 0, s2 = 0;

    ring_new(&r, 2);

    /* Cancel with nothing acquired changes nothing; a commit is a bug (asserted). */
    ASSERT_DIES(cgr__ring_commit(&r, 0));
    cgr__ring before;
    memcpy(&before, &r, sizeof(r));
    cgr__ring_cancel(&r);
    ASSERT_EQ(memcmp(&before, &r, sizeof(r)), 0);

    /* Acquire hands out ticket 0 in slot 0; a second acquire is refused. */
    ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
    ASSERT_U64_EQ(t, 0);
    ASSERT_EQ(s, 0);
    ASSERT_EQ(r.acquired, 1);
    t2 = 99;
    s2 = 99;
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t2, &s2), CGR_STATUS_WRONG_STATE);
    ASSERT_U64_EQ(t2, 99);
    ASSERT_EQ(s2, 99);

    /* An acquired but uncommitted slot is not a launched run. */
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_wait(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_INVALID_ARGUMENT);

    /* Commit with the wrong ticket: asserted. */
    ASSERT_DIES(cgr__ring_commit(&r, 1));
    ASSERT_DIES(cgr__ring_commit(&r, UINT64_MAX));

    /* Cancel gives the slot back; the same ticket comes out again. */
    cgr__ring_cancel(&r);
    ASSERT_EQ(r.acquired, 0);
    ASSERT_U64_EQ(r.launched, 0);
    ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
    ASSERT_U64_EQ(t, 0);
    ASSERT_EQ(s, 0);
    cgr__ring_commit(&r, 0);
    ASSERT_U64_EQ(r.launched, 1);
    ASSERT_EQ(r.acquired, 0);
    /* Committing twice is asserted: nothing is acquired any more. */
    ASSERT_DIES(cgr__ring_commit(&r, 0));

    ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
    ASSERT_U64_EQ(t, 1);
    ASSERT_EQ(s, 1);
    cgr__ring_commit(&r, 1);

    /* NULL pointers are preconditions, asserted (cgr's callers always pass them). */
    ASSERT_DIES(cgr__ring_acquire(&r, NULL, &s));
    ASSERT_DIES(cgr__ring_acquire(&r, &t, NULL));
    ASSERT_DIES(cgr__ring_acquire(NULL, &t, &s));
    ASSERT_DIES(cgr__ring_commit(NULL, 0));
    ASSERT_DIES(cgr__ring_check_wait(NULL, 0));
    ASSERT_DIES(cgr__ring_check_output(NULL, 0));
    ASSERT_DIES(cgr__ring_cancel(NULL));
    ASSERT_DIES(cgr__ring_mark_waited(NULL, 0));
}

/* BUSY exactly when N runs are unwaited, for a ring of n slots. */
static void test_busy(uint32_t n)
{
    cgr__ring r;
    uint64_t t;
    uint32_t s;

    ring_new(&r, n);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_U64_EQ(launch(&r), i);
    t = 12345;
    s = 54321;
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_BUSY);
    ASSERT_U64_EQ(t, 12345);
    ASSERT_EQ(s, 54321);

    /* Every launched run's outputs are unreadable until waited. */
    for (uint64_t i = 0; i < n; i++) {
        ASSERT_EQ(cgr__ring_check_wait(&r, i), CGR_STATUS_OK);
        EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, i), CGR_STATUS_WRONG_STATE);
    }
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_wait(&r, n), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, n), CGR_STATUS_INVALID_ARGUMENT);

    /* Waiting the oldest run frees exactly one slot. */
    cgr__ring_mark_waited(&r, 0);
    ASSERT_EQ(cgr__ring_check_output(&r, 0), CGR_STATUS_OK);
    ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
    ASSERT_U64_EQ(t, n);
    ASSERT_EQ(s, 0);
    /* Acquiring alone does not overwrite run 0's outputs; launching does. */
    ASSERT_EQ(cgr__ring_check_output(&r, 0), CGR_STATUS_OK);
    cgr__ring_commit(&r, t);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_BUSY);

    /* Waiting a later ticket retires every earlier one. */
    cgr__ring_mark_waited(&r, n - 1);
    ASSERT_U64_EQ(r.waited, n);
    for (uint64_t i = 1; i < n; i++)
        ASSERT_EQ(cgr__ring_check_output(&r, i), CGR_STATUS_OK);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, n), CGR_STATUS_WRONG_STATE);
    /* n - 1 slots are free now, then the ring is full again. */
    for (uint32_t i = 0; i + 1 < n; i++)
        ASSERT_U64_EQ(launch(&r), n + 1 + i);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_BUSY);
    for (uint64_t i = 1; i < n; i++)
        EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, i), CGR_STATUS_INVALID_ARGUMENT);

    /* Waiting an old ticket again never moves waited backwards. */
    uint64_t w = r.waited;
    cgr__ring_mark_waited(&r, 0);
    ASSERT_U64_EQ(r.waited, w);
    /* Marking a run that was never launched is asserted. */
    ASSERT_DIES(cgr__ring_mark_waited(&r, r.launched));
    ASSERT_DIES(cgr__ring_mark_waited(&r, UINT64_MAX));
    ASSERT_U64_EQ(r.waited, w);

    /* Waiting the newest run frees all n slots. */
    cgr__ring_mark_waited(&r, r.launched - 1);
    ASSERT_U64_EQ(r.waited, r.launched);
    for (uint32_t i = 0; i < n; i++)
        launch(&r);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_BUSY);
}

static void test_outputs(void)
{
    cgr__ring r;
    uint64_t t;
    uint32_t s;

    ring_new(&r, 2);
    /* Never launched. */
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_wait(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, UINT64_MAX), CGR_STATUS_INVALID_ARGUMENT);

    launch(&r); /* 0 */
    ASSERT_EQ(cgr__ring_check_wait(&r, 0), CGR_STATUS_OK);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_wait(&r, 1), CGR_STATUS_INVALID_ARGUMENT);
    /* Before wait. */
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_WRONG_STATE);
    cgr__ring_mark_waited(&r, 0);
    /* After wait; reading is repeatable. */
    ASSERT_EQ(cgr__ring_check_output(&r, 0), CGR_STATUS_OK);
    ASSERT_EQ(cgr__ring_check_output(&r, 0), CGR_STATUS_OK);

    launch(&r); /* 1: slot 1, run 0 still readable */
    ASSERT_EQ(cgr__ring_check_output(&r, 0), CGR_STATUS_OK);
    cgr__ring_mark_waited(&r, 1);
    launch(&r); /* 2: reuses slot 0 */
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__ring_check_output(&r, 1), CGR_STATUS_OK);
    /* Ticket 0 can still be "waited" (it finished long ago). */
    ASSERT_EQ(cgr__ring_check_wait(&r, 0), CGR_STATUS_OK);

    /* A cancelled acquire does not overwrite anything. */
    ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
    ASSERT_U64_EQ(t, 3);
    cgr__ring_cancel(&r);
    ASSERT_EQ(cgr__ring_check_output(&r, 1), CGR_STATUS_OK);

    /* The ticket counter refuses to wrap. */
    ring_new(&r, 2);
    r.launched = UINT64_MAX;
    r.waited = UINT64_MAX;
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__ring_check_output(&r, UINT64_MAX - 1), CGR_STATUS_OK);
    ASSERT_EQ(cgr__ring_check_output(&r, UINT64_MAX - 2), CGR_STATUS_OK);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, UINT64_MAX - 3),
                          CGR_STATUS_INVALID_ARGUMENT);
    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, 0), CGR_STATUS_INVALID_ARGUMENT);
}

/* ---- randomized against a model ------------------------------------------ */

enum { OPS = 100000, SEGMENTS = 20 };

/*
 * The model keeps one record per ticket: whether it was waited for (by
 * itself or by a later ticket) and whether a later launch reused its slot.
 * It never reads the ring's counters.
 */
typedef struct model {
    uint32_t n;
    uint64_t launched;
    int acquired;
    unsigned char *waited;      /* per ticket */
    unsigned char *overwritten; /* per ticket */
} model;

static cgr_status model_output(const model *m, uint64_t t)
{
    if (t >= m->launched)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!m->waited[t])
        return CGR_STATUS_WRONG_STATE;
    if (m->overwritten[t])
        return CGR_STATUS_INVALID_ARGUMENT;
    return CGR_STATUS_OK;
}

/* A random ticket near the interesting window, sometimes beyond it. */
static uint64_t pick_ticket(const model *m)
{
    uint64_t lo = m->launched > 2u * m->n + 2 ? m->launched - 2u * m->n - 2 : 0;
    uint64_t t = rng_range(lo, m->launched + 2);
    return t;
}

static void test_random(void)
{
    const size_t per = OPS / SEGMENTS;
    unsigned char *waited = calloc(per + 1, 1);
    unsigned char *overwritten = calloc(per + 1, 1);
    uint64_t counts[8] = {0};

    ASSERT(waited != NULL && overwritten != NULL);
    for (int seg = 0; seg < SEGMENTS; seg++) {
        cgr__ring r;
        model m;
        uint64_t acq_ticket = 0;
        uint64_t oldest_unwaited = 0;

        memset(waited, 0, per + 1);
        memset(overwritten, 0, per + 1);
        m.n = seg < 4 ? (uint32_t)seg + 1 : (uint32_t)rng_range(1, 9);
        m.launched = 0;
        m.acquired = 0;
        m.waited = waited;
        m.overwritten = overwritten;
        ring_new(&r, m.n);

        for (size_t op = 0; op < per; op++) {
            uint64_t t = 0;
            uint32_t s = 0;
            switch (rng_range(0, 6)) {
            case 0: /* acquire */
            case 1: {
                cgr_status want;
                if (m.acquired)
                    want = CGR_STATUS_WRONG_STATE;
                else if (m.launched >= m.n && !m.waited[m.launched - m.n])
                    want = CGR_STATUS_BUSY;
                else
                    want = CGR_STATUS_OK;
                if (want != CGR_STATUS_OK) {
                    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_acquire(&r, &t, &s), want);
                    counts[want == CGR_STATUS_BUSY ? 1 : 2]++;
                    break;
                }
                ASSERT_EQ(cgr__ring_acquire(&r, &t, &s), CGR_STATUS_OK);
                ASSERT_U64_EQ(t, m.launched);
                ASSERT_EQ(s, (uint32_t)(m.launched % m.n));
                m.acquired = 1;
                acq_ticket = t;
                counts[0]++;
                break;
            }
            case 2: { /* commit what is acquired (anything else is asserted) */
                if (m.acquired) {
                    cgr__ring_commit(&r, acq_ticket);
                    if (acq_ticket >= m.n)
                        m.overwritten[acq_ticket - m.n] = 1;
                    m.launched++;
                    m.acquired = 0;
                    counts[3]++;
                }
                break;
            }
            case 3: /* cancel, rarely */
                if (rng_range(0, 3) == 0) {
                    cgr__ring_cancel(&r);
                    m.acquired = 0;
                    counts[4]++;
                }
                break;
            case 4: { /* wait: check_wait, then mark_waited on success */
                uint64_t wt = pick_ticket(&m);
                if (wt >= m.launched) {
                    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_wait(&r, wt),
                                          CGR_STATUS_INVALID_ARGUMENT);
                    break;
                }
                ASSERT_EQ(cgr__ring_check_wait(&r, wt), CGR_STATUS_OK);
                cgr__ring_mark_waited(&r, wt);
                /* One stream runs them in order: everything up to wt is done. */
                for (; oldest_unwaited <= wt; oldest_unwaited++)
                    m.waited[oldest_unwaited] = 1;
                counts[5]++;
                break;
            }
            default: { /* read outputs */
                uint64_t ot = pick_ticket(&m);
                cgr_status want = model_output(&m, ot);
                if (want == CGR_STATUS_OK) {
                    ASSERT_EQ(cgr__ring_check_output(&r, ot), CGR_STATUS_OK);
                    counts[6]++;
                } else {
                    EXPECT_FAIL_UNCHANGED(&r, cgr__ring_check_output(&r, ot), want);
                    counts[7]++;
                }
                break;
            }
            }
            /* The counters the model can see agree after every step. */
            ASSERT_U64_EQ(r.launched, m.launched);
            ASSERT_EQ(r.acquired, m.acquired);
        }
        /* Sweep every ticket of the segment once at the end. */
        for (uint64_t t = 0; t <= m.launched; t++) {
            cgr_status want = model_output(&m, t);
            ASSERT_EQ(cgr__ring_check_output(&r, t), want);
        }
    }
    free(waited);
    free(overwritten);
    /* Every branch must have been exercised, or the run proves little. */
    for (int i = 0; i < 8; i++)
        ASSERT_GT(counts[i], 0);
    printf("ring: %d ops, %" PRIu64 " launches, %" PRIu64 " busy, %" PRIu64
           " outputs read, %" PRIu64 " refused\n",
           OPS, counts[3], counts[1], counts[6], counts[7]);
}

int main(void)
{
    test_init();
    test_sequencing();
    test_busy(2);
    test_busy(5);
    test_busy(1);
    test_outputs();
    test_random();
    return 0;
}
