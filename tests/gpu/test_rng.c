/*
 * Graph-safe RNG: a step drawing Philox numbers through cgr_ctx_philox gets
 * new numbers on every replay without a new capture, replay k equals eager
 * run k for the same seed, and the draws equal a host computation of the
 * same counters (so the offset really advances by the reserved count). An
 * armable step's call is refused.
 */
#include <string.h>

#include "cgr/cgr_philox.h"
#include "common.h"
#include "kernels.h"

enum { LEN = 4096, RUNS = 20, SEED = 20261129 };

/* Two reservations per run, to exercise the sub-offset. */
static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *y;
    const cgr_philox_state *ps;
    uint64_t sub_a, sub_b;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_philox(ctx, LEN / 8, &ps, &sub_a));
    STEP_TRY(cgr_ctx_philox(ctx, LEN / 8, &ps, &sub_b));
    STEP_CUDA(tk_uniform(y, ps, sub_a, LEN / 2, st));
    STEP_CUDA(tk_uniform(y + LEN / 2, ps, sub_b, LEN / 2, st));
    return CGR_STATUS_OK;
}

static void make(cgr_runtime **rt, cgr_step **s, int warmup)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.warmup_runs = warmup;
    ASSERT_OK(cgr_runtime_create(rt, &o));
    cgr_tensor_desc out = tensor1("y", CGR_DTYPE_F32, LEN);
    *s = make_step(*rt, "rng", NULL, 0, &out, 1, step_fn, NULL);
    ASSERT_OK(cgr_step_set_seed(*s, SEED));
}

int main(void)
{
    require_gpu();
    cgr_runtime *rg, *re;
    cgr_step *sg, *se;
    make(&rg, &sg, 2);
    make(&re, &se, CGR_MAX_WARMUP);
    static float prev[LEN], host[LEN];
    for (int k = 0; k < RUNS; k++) {
        uint64_t tg, te;
        ASSERT_OK(cgr_step_run(sg, NULL, NULL, &tg));
        ASSERT_OK(cgr_step_run(se, NULL, NULL, &te));
        ASSERT_OK(cgr_step_wait(sg, tg));
        ASSERT_OK(cgr_step_wait(se, te));
        const float *yg, *ye;
        yg = test_output(sg, tg, 0, NULL);
        ye = test_output(se, te, 0, NULL);
        if (memcmp(yg, ye, sizeof host) != 0)
            TEST_FAIL_("run %d: graphed and eager draws differ", k);
        /* Host model: run k starts at offset k * (LEN / 4) counters. */
        uint64_t base = (uint64_t)k * (LEN / 4);
        for (int i = 0; i < LEN; i++) {
            uint64_t sub = i < LEN / 2 ? 0 : LEN / 8;
            int j = i < LEN / 2 ? i : i - LEN / 2;
            cgr_philox4 r = cgr_philox4x32(SEED, base + sub + (uint64_t)(j / 4), 0);
            host[i] = cgr_philox_uniform(r.v[j % 4]);
        }
        if (memcmp(yg, host, sizeof host) != 0)
            TEST_FAIL_("run %d: draws differ from the host Philox model", k);
        double mean = 0;
        for (int i = 0; i < LEN; i++)
            mean += yg[i];
        mean /= LEN;
        ASSERT(mean > 0.45 && mean < 0.55);
        if (k > 0 && memcmp(yg, prev, sizeof prev) == 0)
            TEST_FAIL_("run %d drew the same numbers as run %d", k, k - 1);
        memcpy(prev, yg, sizeof prev);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(sg, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.replays, RUNS - 2);
    ASSERT_U64_EQ(ss.captures, 1);
    /* Re-seeding restarts the stream: run 0's numbers come back. */
    ASSERT_OK(cgr_step_set_seed(sg, SEED));
    uint64_t t;
    ASSERT_OK(cgr_step_run(sg, NULL, NULL, &t));
    ASSERT_OK(cgr_step_wait(sg, t));
    const float *y;
    y = test_output(sg, t, 0, NULL);
    cgr_philox4 r0 = cgr_philox4x32(SEED, 0, 0);
    ASSERT(y[0] == cgr_philox_uniform(r0.v[0]));
    /* An armable step cannot draw: an armed run let through would advance the offset. */
    cgr_tensor_desc out = tensor1("y", CGR_DTYPE_F32, LEN);
    cgr_step_desc d;
    ASSERT_OK(cgr_step_desc_init(&d));
    d.name = "rng_armable";
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = step_fn;
    d.armable = 1;
    cgr_step *sa = NULL;
    ASSERT_OK(cgr_step_create(rg, &d, &sa));
    ASSERT_STATUS(cgr_step_run(sa, NULL, NULL, &t), CGR_STATUS_STEP_FAILED);
    ASSERT(strstr(cgr_last_error(), "armable") != NULL);
    ASSERT_OK(cgr_runtime_destroy(&rg));
    ASSERT_OK(cgr_runtime_destroy(&re));
    printf("PASS: %d runs, replay k == eager k == host Philox, new draws every replay\n", RUNS);
    return 0;
}
