/*
 * cgr_launch_kernel: bad configurations are refused without launching, and
 * a chain of kernels launched with programmatic dependent launch gives
 * exact results eagerly and graphed (each kernel reads its predecessor's
 * output, so a missing dependency would show as wrong values).
 *
 * Whether the launches really were programmatic is read from a captured
 * graph: its edge between two such kernels must be programmatic exactly when
 * the device has PDL (compute capability 9.0+) and CGR_PDL is not "0", and
 * a plain edge otherwise. gpu-check runs the suite both ways on a Hopper GPU.
 */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "kernels.h"

enum { LEN = 3000, CHAIN = 20 };

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *x, *y, *a, *b;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_TRY(cgr_ctx_alloc(ctx, LEN * sizeof(float), (void **)&a));
    STEP_TRY(cgr_ctx_alloc(ctx, LEN * sizeof(float), (void **)&b));
    /* x -> a -> b -> a ... -> y, each y = 2 x + 1 (values stay finite: x in [-1,1)). */
    STEP_CUDA(tk_affine_pdl(a, x, LEN, st));
    for (int k = 1; k < CHAIN - 1; k++)
        STEP_CUDA(k % 2 ? tk_affine_pdl(b, a, LEN, st) : tk_affine_pdl(a, b, LEN, st));
    /* The loop's last kernel (k = CHAIN - 2) wrote b when k is odd, a when even. */
    STEP_CUDA(tk_affine_pdl(y, (CHAIN - 2) % 2 ? b : a, LEN, st));
    return CGR_STATUS_OK;
}

/*
 * What cgr_launch_cfg.pdl promises in cgr.h, worked out here on its own: a
 * device of compute capability 9.0+, running code of the kernel compiled
 * for compute_90 or newer (machine code, or PTX compiled at load time), and
 * CGR_PDL not "0". *arch: the kernel's virtual architecture, for the message.
 */
static int pdl_expected(int *arch)
{
    int dev = 0, major = 0;
    CUDA_OK(cudaGetDevice(&dev));
    CUDA_OK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    struct cudaFuncAttributes fa;
    CUDA_OK(cudaFuncGetAttributes(&fa, tk_affine_pdl_kernel()));
    *arch = fa.ptxVersion;
    const char *v = getenv("CGR_PDL");
    return major >= 9 && fa.ptxVersion >= 90 && !(v && strcmp(v, "0") == 0);
}

/*
 * Captures two dependent PDL launches on a stream of its own and returns
 * how many of the graph's edges are programmatic; -1 when this CUDA cannot
 * report edge data (before 12.3).
 */
static int programmatic_edges(void)
{
#if CUDART_VERSION >= 12030
    float *a, *b;
    cudaStream_t st;
    CUDA_OK(cudaMalloc((void **)&a, LEN * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&b, LEN * sizeof(float)));
    CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    CUDA_OK(tk_affine_pdl(b, a, LEN, st));
    CUDA_OK(tk_affine_pdl(a, b, LEN, st));
    cudaGraph_t g;
    CUDA_OK(cudaStreamEndCapture(st, &g));
    cudaGraphNode_t from[4], to[4];
    cudaGraphEdgeData data[4];
    size_t n = 4;
    /* CUDA 13 folded cudaGraphGetEdges_v2 (edge data) into cudaGraphGetEdges. */
#if CUDART_VERSION >= 13000
    CUDA_OK(cudaGraphGetEdges(g, from, to, data, &n));
#else
    CUDA_OK(cudaGraphGetEdges_v2(g, from, to, data, &n));
#endif
    ASSERT_EQ(n, (size_t)1);
    int prog = 0;
    for (size_t i = 0; i < n; i++)
        prog += data[i].type == cudaGraphDependencyTypeProgrammatic ||
                data[i].from_port != cudaGraphKernelNodePortDefault;
    CUDA_OK(cudaGraphDestroy(g));
    CUDA_OK(cudaStreamDestroy(st));
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(b));
    return prog;
#else
    return -1;
#endif
}

int main(void)
{
    require_gpu();
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));
    cgr_stream st;
    ASSERT_OK(cgr_runtime_stream(rt, &st));
    void *args[1] = {NULL};
    cgr_launch_cfg bad = {{0, 1, 1}, {256, 1, 1}, 0, 1};
    ASSERT_STATUS(cgr_launch_kernel(st, tk_affine_pdl_kernel(), &bad, args),
                  CGR_STATUS_INVALID_ARGUMENT);
    cgr_launch_cfg big = {{1, 1, 1}, {1024, 2, 1}, 0, 0};
    ASSERT_STATUS(cgr_launch_kernel(st, tk_affine_pdl_kernel(), &big, args),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_launch_kernel(st, NULL, &big, args), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS(cgr_launch_kernel(st, tk_affine_pdl_kernel(), NULL, args),
                  CGR_STATUS_INVALID_ARGUMENT);
    CUDA_OK(cudaStreamSynchronize(st));

    cgr_step *s = make_xy(rt, "pdl_chain", LEN, step_fn, NULL);
    rng r = {555};
    static float x[LEN];
    for (int run = 0; run < 30; run++) {
        rng_fill(&r, x, LEN);
        const void *ins[1] = {x};
        uint64_t t;
        ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(s, t));
        check_affine(x, test_output(s, t, 0, NULL), LEN, CHAIN, "run %d", run);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.replays, 28);
    int arch = 0;
    const int want = pdl_expected(&arch), prog = programmatic_edges();
    if (prog >= 0 && prog != want)
        TEST_FAIL_("a captured PDL launch made %d programmatic edge(s); expected %d (PDL %s)",
                   prog, want, want ? "on" : "off");
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS: %d-kernel PDL chain exact in eager and graph runs; PDL %s (kernel code from "
           "compute_%d)%s\n",
           CHAIN, want ? "on" : "off", arch,
           prog < 0 ? ", edge types not checked (CUDA < 12.3)" : ", as the captured edge shows");
    return 0;
}
