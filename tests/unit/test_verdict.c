/*
 * Unit tests of the capture agreement's verdicts (comm/verdict.h) on the
 * records of 1 to 64 ranks, which a machine needs that many GPUs to
 * produce through NCCL: ranks that agree; each word of each rank's record
 * changed in turn (the verdict names that rank, or rank 1 where rank 0
 * is the odd one, since rank 0 is the reference); failed captures, listed
 * in rank order and cut with an ellipsis that never overflows; a rank out
 * of step deciding before any failure; graphs whose costs differ by rank,
 * charged at the largest on every rank; at attach time, every rank
 * reaching agreement exactly when all ranks do, whichever rank judges.
 * Also the record hash's published FNV-1a test values.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cgr/cgr.h"
#include "hash.h"
#include "test.h"
#include "verdict.h"

#define TEST_RNG_SEED 0x94D049BB133111EBull
#include "xorshift.h"

enum { MAX_WORLD = 64 };

/* One row more than the largest world: rows past the world are poisoned (a failed capture of
 * another kind), so a verdict that reads past the world's records changes. */
static int64_t recs[MAX_WORLD + 1][CGR__AGREE_WORDS];

static void poison_from(int world)
{
    for (int r = world; r <= MAX_WORLD; r++)
        for (int k = 0; k < CGR__AGREE_WORDS; k++)
            recs[r][k] = k == CGR__REC_STATUS ? CGR_STATUS_CUDA_ERROR : -1;
}

static const int64_t *all(void)
{
    return &recs[0][0];
}

/* One rank's record: kind, rank, status, then words 3 to 5; the rest zero. */
static void record_fill(int64_t *rec, int64_t kind, int64_t rank, int64_t status, int64_t w3,
                        int64_t w4, int64_t w5)
{
    const int64_t r[CGR__AGREE_WORDS] = {kind, rank, status, w3, w4, w5, 0, 0};
    memcpy(rec, r, sizeof r);
}

/* Every rank captured step hash 0x5eed at run 3, agreement 7. */
static void captured(int world)
{
    for (int r = 0; r < world; r++)
        record_fill(recs[r], CGR__RECORD_CAPTURE, r, CGR_STATUS_OK, 0x5eed, 3, 7);
    poison_from(world);
}

/* Every rank attaching with warmup_runs 2, capture 3 and one policy hash. */
static void attaching(int world)
{
    for (int r = 0; r < world; r++)
        record_fill(recs[r], CGR__RECORD_ATTACH, r, CGR_STATUS_OK, 2, 3, 0x7011c7);
    poison_from(world);
}

static cgr__verdict capture_verdict(int world)
{
    cgr__verdict v;
    memset(&v, 0xEE, sizeof v);
    cgr__verdict_capture(all(), world, &v);
    return v;
}

static cgr__verdict attach_verdict(int world, int judge)
{
    cgr__verdict v;
    memset(&v, 0xEE, sizeof v);
    cgr__verdict_attach(all(), world, recs[judge], &v);
    return v;
}

static void test_hash(void)
{
    /* The FNV-1a 64 values its authors publish for these strings. */
    ASSERT_U64_EQ(cgr__fnv1a("", 0), 0xcbf29ce484222325ull);
    ASSERT_U64_EQ(cgr__fnv1a("a", 1), 0xaf63dc4c8601ec8cull);
    ASSERT_U64_EQ(cgr__fnv1a("foobar", 6), 0x85944171f73967e8ull);
}

static void test_agreed(void)
{
    for (int world = 1; world <= MAX_WORLD; world++) {
        captured(world);
        cgr__verdict v = capture_verdict(world);
        ASSERT_EQ(v.kind, CGR__VERDICT_AGREED);
        ASSERT_EQ(v.rank, -1);
        ASSERT_EQ(v.n_failed, 0);
        ASSERT_STR_EQ(v.failed, "");
        attaching(world);
        for (int judge = 0; judge < world; judge++)
            ASSERT_EQ(attach_verdict(world, judge).kind, CGR__VERDICT_AGREED);
    }
}

/* Each word that must match, changed on one rank at a time: that rank is named. */
static void test_out_of_step(void)
{
    static const int words[] = {CGR__REC_KIND, CGR__REC_RANK, CGR__REC_STEP, CGR__REC_RUN,
                                CGR__REC_SEQ,  CGR__REC_SHAPE};
    static const int worlds[] = {2, 3, 8, 64};
    for (size_t wi = 0; wi < sizeof worlds / sizeof worlds[0]; wi++) {
        int world = worlds[wi];
        for (int odd = 0; odd < world; odd++)
            for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
                captured(world);
                recs[odd][words[k]] += 1;
                /* A failure elsewhere must not hide it. */
                recs[world - 1 - odd][CGR__REC_STATUS] = CGR_STATUS_CAPTURE_FAILED;
                cgr__verdict v = capture_verdict(world);
                ASSERT_EQ(v.kind, CGR__VERDICT_OUT_OF_STEP);
                /* Rank 0 is the reference: when it alone differs in what it captured, rank 1
                 * is the first that differs from it. Its own kind and rank are checked. */
                int named = odd == 0 && words[k] != CGR__REC_KIND && words[k] != CGR__REC_RANK
                                ? 1
                                : odd;
                ASSERT_EQ(v.rank, named);
                ASSERT_EQ(v.n_failed, 0);
            }
    }
    /* A rank that sent an attach record while the others captured is out of step. */
    captured(4);
    recs[2][CGR__REC_KIND] = CGR__RECORD_ATTACH;
    ASSERT_EQ(capture_verdict(4).kind, CGR__VERDICT_OUT_OF_STEP);
    ASSERT_EQ(capture_verdict(4).rank, 2);
    /* The graphs' costs may differ: every rank charges the largest. */
    for (int world = 1; world <= MAX_WORLD; world++) {
        captured(world);
        ASSERT_EQ(cgr__verdict_bytes(all(), world), 0);
        for (int r = 0; r < world; r++)
            recs[r][CGR__REC_BYTES] = 4096 * (int64_t)((r + 3) % world + 1);
        ASSERT_EQ(capture_verdict(world).kind, CGR__VERDICT_AGREED);
        /* The poisoned rows past the world hold -1, never the largest. */
        recs[world][CGR__REC_BYTES] = INT64_MAX;
        ASSERT_EQ(cgr__verdict_bytes(all(), world), 4096 * (int64_t)world);
    }
}

static void test_failed(void)
{
    captured(8);
    recs[3][CGR__REC_STATUS] = CGR_STATUS_OUT_OF_MEMORY;
    cgr__verdict v = capture_verdict(8);
    ASSERT_EQ(v.kind, CGR__VERDICT_FAILED);
    ASSERT_EQ(v.rank, 3);
    ASSERT_EQ(v.n_failed, 1);
    ASSERT_STR_EQ(v.failed, "3");

    recs[6][CGR__REC_STATUS] = CGR_STATUS_CAPTURE_FAILED;
    recs[0][CGR__REC_STATUS] = CGR_STATUS_CUDA_ERROR;
    v = capture_verdict(8);
    ASSERT_EQ(v.kind, CGR__VERDICT_FAILED);
    ASSERT_EQ(v.rank, 0); /* the first in rank order, whose status the message gives */
    ASSERT_EQ(v.n_failed, 3);
    ASSERT_STR_EQ(v.failed, "0, 3, 6");

    /* All 64 failing: the list is cut, ends with the ellipsis and stays a prefix of the
     * whole list. */
    captured(MAX_WORLD);
    char whole[1024];
    size_t n = 0;
    for (int r = 0; r < MAX_WORLD; r++) {
        recs[r][CGR__REC_STATUS] = CGR_STATUS_CAPTURE_FAILED;
        n += (size_t)snprintf(whole + n, sizeof whole - n, "%s%d", r ? ", " : "", r);
    }
    v = capture_verdict(MAX_WORLD);
    ASSERT_EQ(v.kind, CGR__VERDICT_FAILED);
    ASSERT_EQ(v.n_failed, MAX_WORLD);
    size_t len = strlen(v.failed);
    ASSERT_LT(len, sizeof v.failed);
    ASSERT(len > 5 && strcmp(v.failed + len - 5, ", ...") == 0);
    ASSERT(strncmp(v.failed, whole, len - 5) == 0);
    ASSERT(whole[len - 5] == ','); /* cut between two ranks, not inside one */

    /* Random sets of failed ranks: the count and the uncut list are exact. */
    for (int round = 0; round < 2000; round++) {
        int world = 1 + (int)(rng_next() % 12);
        captured(world);
        char want[256] = "";
        size_t wn = 0;
        int count = 0, first = -1;
        for (int r = 0; r < world; r++) {
            if (rng_next() % 3)
                continue;
            recs[r][CGR__REC_STATUS] = CGR_STATUS_CAPTURE_FAILED;
            wn += (size_t)snprintf(want + wn, sizeof want - wn, "%s%d", count ? ", " : "", r);
            if (count++ == 0)
                first = r;
        }
        v = capture_verdict(world);
        ASSERT_EQ(v.kind, count ? CGR__VERDICT_FAILED : CGR__VERDICT_AGREED);
        ASSERT_EQ(v.rank, first);
        ASSERT_EQ(v.n_failed, count);
        ASSERT_STR_EQ(v.failed, want);
    }
}

static void test_attach(void)
{
    attaching(3);
    recs[1][CGR__REC_KIND] = CGR__RECORD_CAPTURE;
    cgr__verdict v = attach_verdict(3, 0);
    ASSERT_EQ(v.kind, CGR__VERDICT_NOT_ATTACHING);
    ASSERT_EQ(v.rank, 1);

    attaching(3);
    recs[0][CGR__REC_RANK] = 2; /* records out of rank order */
    ASSERT_EQ(attach_verdict(3, 1).kind, CGR__VERDICT_NOT_ATTACHING);
    ASSERT_EQ(attach_verdict(3, 1).rank, 0);

    attaching(3);
    recs[2][CGR__REC_CAPTURE_AT] = 4;
    ASSERT_EQ(attach_verdict(3, 0).kind, CGR__VERDICT_RUN_OPTIONS);
    ASSERT_EQ(attach_verdict(3, 0).rank, 2);
    /* Rank 2 itself judges by its own options: the first other rank differs. */
    ASSERT_EQ(attach_verdict(3, 2).kind, CGR__VERDICT_RUN_OPTIONS);
    ASSERT_EQ(attach_verdict(3, 2).rank, 0);

    attaching(3);
    recs[1][CGR__REC_WARMUP_RUNS] = 0;
    ASSERT_EQ(attach_verdict(3, 0).kind, CGR__VERDICT_RUN_OPTIONS);

    attaching(3);
    recs[1][CGR__REC_POLICY] ^= 1;
    ASSERT_EQ(attach_verdict(3, 0).kind, CGR__VERDICT_POLICY);
    ASSERT_EQ(attach_verdict(3, 0).rank, 1);
    /* Records are taken in rank order; in one record, the run options before the policy. */
    recs[2][CGR__REC_WARMUP_RUNS] = 5;
    ASSERT_EQ(attach_verdict(3, 0).kind, CGR__VERDICT_POLICY);
    recs[1][CGR__REC_WARMUP_RUNS] = 5;
    ASSERT_EQ(attach_verdict(3, 0).kind, CGR__VERDICT_RUN_OPTIONS);

    /* Whichever rank judges, it agrees exactly when every record is alike. */
    static const int words[] = {CGR__REC_KIND, CGR__REC_RANK, CGR__REC_WARMUP_RUNS,
                                CGR__REC_CAPTURE_AT, CGR__REC_POLICY};
    for (int round = 0; round < 5000; round++) {
        int world = 1 + (int)(rng_next() % 8);
        attaching(world);
        for (int r = 0; r < world; r++)
            if (rng_next() % (2 * (unsigned)world) == 0)
                recs[r][words[rng_next() % 5]] += 1;
        int alike = 1;
        for (int r = 0; r < world; r++)
            for (int k = 0; k < 5; k++)
                alike &= recs[r][words[k]] == (words[k] == CGR__REC_KIND   ? CGR__RECORD_ATTACH
                                               : words[k] == CGR__REC_RANK ? r
                                                                           : recs[0][words[k]]);
        for (int judge = 0; judge < world; judge++) {
            cgr__verdict j = attach_verdict(world, judge);
            ASSERT_EQ(j.kind == CGR__VERDICT_AGREED, alike);
            ASSERT_EQ(j.rank >= 0, !alike);
        }
    }
}

int main(void)
{
    test_hash();
    test_agreed();
    test_out_of_step();
    test_failed();
    test_attach();
    printf("verdict: all tests passed\n");
    return 0;
}
