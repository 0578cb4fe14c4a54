/*
 * libcgr links neither cuDNN nor NCCL, and this program does not either.
 * With CGR_CUDNN_LIBRARY and CGR_NCCL_LIBRARY naming files that do not
 * exist, the calls that need the libraries fail with
 * CGR_STATUS_NOT_SUPPORTED and name the file they tried, every time, and
 * the runtime goes on working: a step that uses neither captures and
 * replays with exact results. Neither library is ever loaded.
 * cgr_ctx_nccl refuses a NULL out as INVALID_ARGUMENT in either build.
 */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "cgr/cgr_nccl.h"
#include "common.h"
#include "kernels.h"

enum { LEN = 1000, RUNS = 10 };

#define MISSING_CUDNN "/nonexistent-cgr-test/libcudnn.so.9"
#define MISSING_NCCL "/nonexistent-cgr-test/libnccl.so.2"

static cgr_status dnn_step(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_cudnn_handle h;
    return cgr_ctx_cudnn(ctx, &h);
}

/* Keeps what cgr_ctx_nccl answers for out = NULL; enqueues nothing. */
static cgr_status nccl_null_step(cgr_ctx *ctx, void *user)
{
    *(cgr_status *)user = cgr_ctx_nccl(ctx, NULL);
    return CGR_STATUS_OK;
}

static void assert_mentions(const char *part)
{
    if (!strstr(cgr_last_error(), part))
        TEST_FAIL_("the message \"%s\" does not mention \"%s\"", cgr_last_error(), part);
}

int main(void)
{
    /* Before anything of cgr runs: the libraries are loaded once per process. */
    ASSERT_EQ(setenv("CGR_CUDNN_LIBRARY", MISSING_CUDNN, 1), 0);
    ASSERT_EQ(setenv("CGR_NCCL_LIBRARY", MISSING_NCCL, 1), 0);
    require_gpu();
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));

    cgr_step *dnn = make_xy(rt, "needs_cudnn", LEN, dnn_step, NULL);
    static float x[LEN];
    rng r = {4242};
    rng_fill(&r, x, LEN);
    const void *ins[1] = {x};
    for (int attempt = 0; attempt < 2; attempt++) {
        uint64_t t;
        ASSERT_STATUS(cgr_step_run(dnn, NULL, ins, &t), CGR_STATUS_NOT_SUPPORTED);
        assert_mentions(CGR_HAVE_CUDNN ? "CGR_CUDNN_LIBRARY=" MISSING_CUDNN
                                       : "cgr was built without cuDNN");
    }

    /* The load fails before comm is looked at, so a stand-in pointer is safe here. */
    int stand_in = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        ASSERT_STATUS(cgr_runtime_attach_nccl(rt, (cgr_nccl_comm)(void *)&stand_in, NULL),
                      CGR_STATUS_NOT_SUPPORTED);
        assert_mentions(cgr_has_nccl() ? "CGR_NCCL_LIBRARY=" MISSING_NCCL
                                       : "cgr was built without NCCL");
    }

    /* Arguments are checked alike with and without NCCL built in. */
    cgr_status got = CGR_STATUS_OK;
    cgr_step *nn = make_xy(rt, "nccl_null", LEN, nccl_null_step, &got);
    uint64_t tn;
    ASSERT_OK(cgr_step_run(nn, NULL, ins, &tn));
    ASSERT_OK(cgr_step_wait(nn, tn));
    ASSERT_STATUS(got, CGR_STATUS_INVALID_ARGUMENT);

    cgr_step *s = make_xy(rt, "affine", LEN, affine_step, NULL);
    for (int run = 0; run < RUNS; run++) {
        rng_fill(&r, x, LEN);
        uint64_t t;
        ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(s, t));
        const float *y;
        y = test_output(s, t, 0, NULL);
        check_affine(x, y, LEN, 1, "run %d", run);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);

    ASSERT(dlopen("libcudnn.so.9", RTLD_NOW | RTLD_NOLOAD) == NULL);
    ASSERT(dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD) == NULL);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS: without loadable cuDNN and NCCL, their calls return CGR_STATUS_NOT_SUPPORTED "
           "and a plain step replays\n");
    return 0;
}
