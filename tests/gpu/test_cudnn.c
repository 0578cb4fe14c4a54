/*
 * A step that calls cuDNN (3x3 convolution, FMA math, algorithm chosen
 * during warm-up, workspace from the arena) replays bitwise equal to the
 * same step run eagerly and matches a float64 CPU convolution.
 */
#include <math.h>
#include <string.h>

#include <cudnn.h>

#include "common.h"

enum { NB = 2, CI = 3, CO = 8, H = 16, W = 16, STEPS = 20 };

typedef struct conv {
    float *weight; /* persistent [CO, CI, 3, 3] */
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnConvolutionFwdAlgo_t algo;
    size_t ws_bytes;
    int ready;
} conv;

#define DNN(expr)                                                                          \
    do {                                                                                   \
        if ((expr) != CUDNN_STATUS_SUCCESS)                                                \
            return CGR_STATUS_CUDNN_ERROR;                                                 \
    } while (0)

/* Descriptors and the algorithm are chosen once, in the first (eager) run. */
static cgr_status setup(conv *c, cudnnHandle_t h)
{
    DNN(cudnnCreateTensorDescriptor(&c->x_desc));
    DNN(cudnnCreateTensorDescriptor(&c->y_desc));
    DNN(cudnnCreateFilterDescriptor(&c->w_desc));
    DNN(cudnnCreateConvolutionDescriptor(&c->conv_desc));
    DNN(cudnnSetTensor4dDescriptor(c->x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, NB, CI, H, W));
    DNN(cudnnSetTensor4dDescriptor(c->y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, NB, CO, H, W));
    DNN(cudnnSetFilter4dDescriptor(c->w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CO, CI, 3, 3));
    DNN(cudnnSetConvolution2dDescriptor(c->conv_desc, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT));
    DNN(cudnnSetConvolutionMathType(c->conv_desc, CUDNN_FMA_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0;
    DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, c->x_desc, c->w_desc, c->conv_desc, c->y_desc, 8,
                                               &got, perf));
    c->algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    for (int i = 0; i < got; i++) {
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].mathType == CUDNN_FMA_MATH) {
            c->algo = perf[i].algo;
            break;
        }
    }
    DNN(cudnnGetConvolutionForwardWorkspaceSize(h, c->x_desc, c->w_desc, c->conv_desc, c->y_desc,
                                                c->algo, &c->ws_bytes));
    c->ready = 1;
    return CGR_STATUS_OK;
}

static cgr_status conv_step(cgr_ctx *ctx, void *user)
{
    conv *c = user;
    cudnnHandle_t h;
    float *x, *y;
    STEP_TRY(cgr_ctx_cudnn(ctx, &h));
    if (!c->ready) {
        if (cgr_ctx_is_capturing(ctx))
            return CGR_STATUS_WRONG_STATE;
        STEP_TRY(setup(c, h));
    }
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    void *ws = NULL;
    if (c->ws_bytes)
        STEP_TRY(cgr_ctx_alloc(ctx, c->ws_bytes, &ws));
    const float one = 1.0f, zero = 0.0f;
    DNN(cudnnConvolutionForward(h, &one, c->x_desc, x, c->w_desc, c->weight, c->conv_desc, c->algo,
                                ws, c->ws_bytes, &zero, c->y_desc, y));
    return CGR_STATUS_OK;
}

static void reference(const float *x, const float *w, double *y)
{
    for (int n = 0; n < NB; n++)
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++) {
                    double acc = 0;
                    for (int ci = 0; ci < CI; ci++)
                        for (int di = -1; di <= 1; di++)
                            for (int dj = -1; dj <= 1; dj++) {
                                int ii = i + di, jj = j + dj;
                                if (ii < 0 || ii >= H || jj < 0 || jj >= W)
                                    continue;
                                acc += (double)x[((n * CI + ci) * H + ii) * W + jj] *
                                       w[((o * CI + ci) * 3 + di + 1) * 3 + dj + 1];
                            }
                    y[((n * CO + o) * H + i) * W + j] = acc;
                }
}

static void make(cgr_runtime **rt, cgr_step **s, conv *c, int warmup, const float *w)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.warmup_runs = warmup;
    ASSERT_OK(cgr_runtime_create(rt, &o));
    memset(c, 0, sizeof *c);
    ASSERT_OK(cgr_persistent_alloc(*rt, sizeof(float) * CO * CI * 9, (void **)&c->weight));
    CUDA_OK(cudaMemcpy(c->weight, w, sizeof(float) * CO * CI * 9, cudaMemcpyHostToDevice));
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, NB * CI, H * W);
    cgr_tensor_desc out = tensor2("y", CGR_DTYPE_F32, NB * CO, H * W);
    *s = make_step(*rt, "conv", &in, 1, &out, 1, conv_step, c);
}

int main(void)
{
    require_gpu();
    if (!CGR_HAVE_CUDNN) {
        printf("SKIP: cgr was built without cuDNN\n");
        return TEST_SKIP;
    }
    rng r = {2024};
    static float w[CO * CI * 9], x[NB * CI * H * W];
    static double yref[NB * CO * H * W];
    rng_fill(&r, w, CO * CI * 9);
    cgr_runtime *rg, *re;
    cgr_step *sg, *se;
    conv cg, ce;
    make(&rg, &sg, &cg, 2, w);
    make(&re, &se, &ce, CGR_MAX_WARMUP, w);
    for (int step = 0; step < STEPS; step++) {
        rng_fill(&r, x, NB * CI * H * W);
        const void *ins[1] = {x};
        uint64_t tg, te;
        ASSERT_OK(cgr_step_run(sg, NULL, ins, &tg));
        ASSERT_OK(cgr_step_run(se, NULL, ins, &te));
        ASSERT_OK(cgr_step_wait(sg, tg));
        ASSERT_OK(cgr_step_wait(se, te));
        const float *yg, *ye;
        size_t bytes;
        yg = test_output(sg, tg, 0, &bytes);
        ye = test_output(se, te, 0, NULL);
        if (memcmp(yg, ye, bytes) != 0)
            TEST_FAIL_("step %d: graphed and eager convolution differ", step);
        reference(x, w, yref);
        for (int i = 0; i < NB * CO * H * W; i++)
            if (fabs(yg[i] - yref[i]) > 1e-4 * fmax(1.0, fabs(yref[i])))
                TEST_FAIL_("step %d y[%d] = %.7g, reference %.7g", step, i, yg[i], yref[i]);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(sg, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.replays, STEPS - 2);
    printf("PASS: cuDNN conv (algo %d, workspace %zu bytes) graphed == eager over %d steps\n",
           (int)cg.algo, cg.ws_bytes, STEPS);
    ASSERT_OK(cgr_runtime_destroy(&rg));
    ASSERT_OK(cgr_runtime_destroy(&re));
    return 0;
}
