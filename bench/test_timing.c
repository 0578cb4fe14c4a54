/*
 * measure_rounds without a GPU (suite `unit`): made-up modes that log which
 * of them ran each step. Every mode warms up first; then each round runs
 * every mode once, its share of the steps in a row; the order changes from
 * round to round, so no mode always follows the same other one; and the
 * orders are the same on every call (W-ddp's ranks depend on that). Also
 * the statistics every figure of cgr-bench is made of, the rounds' bounds,
 * and the count of checked steps.
 */
#include <math.h>
#include <string.h>

#include "test.h"
#include "timing.h"

enum { MODES = 5, WARMUP = 3, STEPS = 60, ROUNDS = 12, PER_ROUND = STEPS / ROUNDS };

static int step_log[MODES * (WARMUP + STEPS)];
static int n_log;

static int submit(void *self, long k)
{
    (void)k;
    step_log[n_log++] = *(const int *)self;
    return 0;
}

static int wait_step(void *self, long k)
{
    (void)self;
    (void)k;
    return 0;
}

/* One call of measure_rounds over MODES made-up modes; its step log goes to log_out. */
static void run(int *log_out)
{
    static const step_ops ops = {NULL, submit, wait_step, NULL, NULL};
    static int ids[MODES];
    mode_result r[MODES];
    double round_wall[MODES][ROUNDS];
    bench_mode m[MODES];
    for (int i = 0; i < MODES; i++) {
        ids[i] = i;
        memset(&r[i], 0, sizeof r[i]);
        m[i] = (bench_mode){&r[i], ops, &ids[i], NULL, NULL, NULL, round_wall[i]};
    }
    n_log = 0;
    ASSERT_EQ(measure_rounds(m, MODES, WARMUP, STEPS, ROUNDS), 0);
    ASSERT_EQ(n_log, MODES * (WARMUP + STEPS));
    for (int i = 0; i < MODES; i++) {
        ASSERT_EQ(r[i].ran, 1);
        ASSERT_EQ(r[i].steps, STEPS);
        ASSERT_EQ(r[i].warmup, WARMUP);
        for (int k = 0; k < ROUNDS; k++)
            ASSERT(round_wall[i][k] == round_wall[i][k]); /* every round measured: no NaN */
    }
    memcpy(log_out, step_log, sizeof step_log);
}

#define NEAR(a, b) (fabs((a) - (double)(b)) < 1e-12 * (1.0 + fabs((double)(b))))

/* Percentiles by linear interpolation between order statistics, and the rest of a summary. */
static void test_stats(void)
{
    double v[5] = {5, 1, 4, 2, 3};
    bench_stats s;
    stats_compute(v, 5, &s);
    for (int i = 0; i < 5; i++)
        ASSERT(v[i] == i + 1); /* sorted in place */
    ASSERT(NEAR(s.median, 3) && NEAR(s.p10, 1.4) && NEAR(s.p90, 4.6));
    ASSERT(s.mean == 3 && s.min == 1 && s.max == 5);
    ASSERT(stats_percentile(v, 5, 0.0) == 1 && stats_percentile(v, 5, 1.0) == 5);
    ASSERT(NEAR(stats_percentile(v, 5, 0.75), 4));
    double two[2] = {20, -10};
    stats_compute(two, 2, &s);
    ASSERT(NEAR(s.median, 5) && NEAR(s.p10, -7) && NEAR(s.p90, 17) && s.min == -10 &&
           s.max == 20);
    double one[1] = {7.5};
    stats_compute(one, 1, &s);
    ASSERT(s.median == 7.5 && s.p10 == 7.5 && s.p90 == 7.5 && s.min == 7.5 && s.max == 7.5);
    double ties[4] = {2, 1, 2, 1};
    stats_compute(ties, 4, &s);
    ASSERT(NEAR(s.median, 1.5) && s.min == 1 && s.max == 2);
    stats_compute(NULL, 0, &s);
    ASSERT(isnan(s.median) && isnan(s.p10) && isnan(s.p90) && isnan(s.mean) && isnan(s.min) &&
           isnan(s.max));
}

static int check_ok(void *self, long k)
{
    (void)self;
    (void)k;
    return 0;
}

/*
 * Fewer than one round is one round, more rounds than steps one step a
 * round; and a mode with a check counts every step it checked, warm-up too.
 */
static void test_bounds(void)
{
    static const step_ops ops = {NULL, submit, wait_step, check_ok, NULL};
    static int ids[2] = {0, 1};
    mode_result r[2];
    double round_wall[2][STEPS];
    bench_mode m[2];
    for (int i = 0; i < 2; i++) {
        memset(&r[i], 0, sizeof r[i]);
        m[i] = (bench_mode){&r[i], ops, &ids[i], NULL, NULL, NULL, round_wall[i]};
    }
    n_log = 0;
    ASSERT_EQ(measure_rounds(m, 2, 1, 6, 0), 0);
    for (int i = 0; i < 2 + 12; i++) /* warm-ups, then all six steps of each in a row */
        ASSERT_EQ(step_log[i], step_log[i < 2 ? i : 2 + (i - 2) / 6 * 6]);
    ASSERT(step_log[2] != step_log[8]);
    ASSERT(!isnan(round_wall[0][0]));
    ASSERT_EQ(r[0].verified, 1 + 6);
    n_log = 0;
    ASSERT_EQ(measure_rounds(m, 2, 0, 3, 50), 0);
    ASSERT_EQ(n_log, 6);
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            ASSERT(!isnan(round_wall[i][k])); /* three rounds of one step each */
    for (int k = 0; k < 3; k++)
        ASSERT(step_log[2 * k] != step_log[2 * k + 1]);
    mode_result one;
    memset(&one, 0, sizeof one);
    ASSERT_EQ(measure(&ops, &ids[1], 2, 5, &one), 0);
    ASSERT(one.ran && one.steps == 5 && one.warmup == 2 && one.verified == 7);
    ASSERT(one.wall.min <= one.wall.median && one.wall.median <= one.wall.max);
}

/* The step (from 0) at which a made-up mode fails, and how. */
static long fail_at;
static int fail_rc;

static int wait_fails(void *self, long k)
{
    (void)self;
    return k == fail_at ? fail_rc : 0;
}

/*
 * A mode fails at the step whose wait or check says so, and it is marked
 * wrong only for CHECK_WRONG, from either (W-ddp's wait reads its loss).
 */
static void test_wrong(void)
{
    static const step_ops in_wait = {NULL, submit, wait_fails, NULL, NULL};
    static const step_ops in_check = {NULL, submit, wait_step, wait_fails, NULL};
    static const step_ops *const where[2] = {&in_wait, &in_check};
    int id = 0;
    for (int w = 0; w < 2; w++) {
        for (int wrong = 0; wrong < 2; wrong++) {
            fail_at = 4;
            fail_rc = wrong ? CHECK_WRONG : -1;
            mode_result r;
            memset(&r, 0, sizeof r);
            ASSERT_EQ(measure(where[w], &id, 2, 6, &r), -1);
            ASSERT_EQ(r.failed, 1);
            ASSERT_EQ(r.wrong, wrong);
        }
    }
}

int main(void)
{
    static int a[MODES * (WARMUP + STEPS)], b[MODES * (WARMUP + STEPS)];
    test_stats();
    test_bounds();
    test_wrong();
    run(a);
    run(b);
    ASSERT_EQ(memcmp(a, b, sizeof a), 0);

    /* Warm-up: each mode's steps in a row, in mode order. */
    for (int i = 0; i < MODES * WARMUP; i++)
        ASSERT_EQ(a[i], i / WARMUP);

    /* The rounds: each mode once, PER_ROUND steps in a row; and the predecessors. */
    int after[MODES][MODES];
    memset(after, 0, sizeof after);
    const int *t = a + MODES * WARMUP;
    for (int k = 0; k < ROUNDS; k++) {
        int seen[MODES] = {0};
        const int *round = t + k * MODES * PER_ROUND;
        for (int j = 0; j < MODES; j++) {
            int mode = round[j * PER_ROUND];
            ASSERT(mode >= 0 && mode < MODES);
            seen[mode]++;
            for (int s = 1; s < PER_ROUND; s++)
                ASSERT_EQ(round[j * PER_ROUND + s], mode);
            if (j > 0)
                after[mode][round[(j - 1) * PER_ROUND]]++;
        }
        for (int i = 0; i < MODES; i++)
            ASSERT_EQ(seen[i], 1);
    }
    /*
     * Every mode follows at least two different ones over the rounds. When
     * only the first mode of a round rotated, each mode had one predecessor.
     */
    int varied = 0;
    for (int i = 0; i < MODES; i++) {
        int preds = 0;
        for (int p = 0; p < MODES; p++)
            preds += after[i][p] > 0;
        varied += preds >= 2;
    }
    ASSERT_EQ(varied, MODES);
    printf("measure_rounds: %d rounds of %d modes checked\n", ROUNDS, MODES);
    return 0;
}
