/*
 * measure_rounds without a GPU (suite `unit`): made-up modes that log which
 * of them ran each step. Every mode warms up first; then each round runs
 * every mode once, its share of the steps in a row; the order changes from
 * round to round, so no mode always follows the same other one; and the
 * orders are the same on every call (W-ddp's ranks depend on that).
 */
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
    timed_mode m[MODES];
    for (int i = 0; i < MODES; i++) {
        ids[i] = i;
        memset(&r[i], 0, sizeof r[i]);
        m[i] = (timed_mode){&ops, &ids[i], &r[i], round_wall[i]};
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

int main(void)
{
    static int a[MODES * (WARMUP + STEPS)], b[MODES * (WARMUP + STEPS)];
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
