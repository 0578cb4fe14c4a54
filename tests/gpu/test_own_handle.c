/*
 * A step that uses a cuBLAS handle of its own instead of cgr_ctx_cublas().
 *
 * Bound with cgr_ctx_bind_cublas() (cgr's stream, a workspace from the
 * arena), the step captures and replays bitwise equal to the same step run
 * eagerly, run after run, with fresh inputs. After the first runs, whose
 * scratch is given back, the handle still works outside any step.
 *
 * Set only to cgr's stream, with no workspace, cuBLAS allocates inside the
 * graph. Such a graph either replays correctly too (its memory-allocation
 * nodes are matched between the two captures of the frozen-value check) or
 * is refused with a message naming cublasSetWorkspace; every run's output
 * is correct either way.
 */
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include "common.h"

enum { M = 48, K = 64, N = 40, RUNS = 12 };

typedef struct own {
    cublasHandle_t h;
    int bind; /* cgr_ctx_bind_cublas; 0: only cublasSetStream */
} own;

static cgr_status gemm_step(cgr_ctx *ctx, void *user)
{
    own *o = user;
    cgr_stream st;
    float *a, *b, *c;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&a));
    STEP_TRY(cgr_ctx_input(ctx, 1, (void **)&b));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&c));
    if (o->bind)
        STEP_TRY(cgr_ctx_bind_cublas(ctx, (cgr_cublas_handle)o->h));
    else if (cublasSetStream(o->h, (cudaStream_t)st) != CUBLAS_STATUS_SUCCESS)
        return CGR_STATUS_CUBLAS_ERROR;
    const float one = 1.0f, zero = 0.0f;
    /* Row-major C = A B is column-major C^T = B^T A^T. */
    if (cublasSgemm(o->h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, N, a, K, &zero, c, N) !=
        CUBLAS_STATUS_SUCCESS)
        return CGR_STATUS_CUBLAS_ERROR;
    return CGR_STATUS_OK;
}

static cgr_runtime *runtime(int capture)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.capture = capture;
    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    return rt;
}

static cgr_step *gemm(cgr_runtime *rt, own *o, const char *name)
{
    cgr_tensor_desc in[2] = {tensor2("a", CGR_DTYPE_F32, M, K), tensor2("b", CGR_DTYPE_F32, K, N)};
    cgr_tensor_desc out = tensor2("c", CGR_DTYPE_F32, M, N);
    return make_step(rt, name, in, 2, &out, 1, gemm_step, o);
}

/*
 * The handle used outside any step after a step's first run, on cgr's
 * stream where that run left it: a long, thin product that cuBLAS tends
 * to split along K, through a workspace. The first run's scratch is
 * gone by then, so a workspace kept from it would be freed memory.
 */
static void use_outside(own *o)
{
    enum { TK = 1 << 18, TM = 16 };
    const size_t n = (size_t)TK * TM;
    float *ones = malloc(n * sizeof *ones), *a = NULL, *c = NULL;
    ASSERT(ones != NULL);
    for (size_t i = 0; i < n; i++)
        ones[i] = 1.0f;
    CUDA_OK(cudaMalloc((void **)&a, n * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&c, (size_t)TM * TM * sizeof(float)));
    CUDA_OK(cudaMemcpy(a, ones, n * sizeof(float), cudaMemcpyHostToDevice));
    const float one = 1.0f, zero = 0.0f;
    ASSERT(cublasSgemm(o->h, CUBLAS_OP_T, CUBLAS_OP_N, TM, TM, TK, &one, a, TK, a, TK, &zero, c,
                       TM) == CUBLAS_STATUS_SUCCESS);
    CUDA_OK(cudaDeviceSynchronize());
    float c0[TM * TM];
    CUDA_OK(cudaMemcpy(c0, c, sizeof c0, cudaMemcpyDeviceToHost));
    /* Sums of ones below 2^24: exact in float, in any order of summation. */
    for (int i = 0; i < TM * TM; i++)
        if (c0[i] != (float)TK)
            TEST_FAIL_("the handle outside the step: c[%d] = %.9g, expected %d", i,
                       (double)c0[i], (int)TK);
    CUDA_OK(cudaFree(a));
    CUDA_OK(cudaFree(c));
    free(ones);
}

/* RUNS runs of the graphed step and the eager one on the same fresh inputs. */
static cgr_step_stats compare(own *o, rng *r, const char *name)
{
    cgr_runtime *rg = runtime(1), *re = runtime(0);
    cgr_step *g = gemm(rg, o, name), *e = gemm(re, o, name);
    static float a[M * K], b[K * N], cg[M * N], ce[M * N];
    for (int k = 0; k < RUNS; k++) {
        rng_fill(r, a, M * K);
        rng_fill(r, b, K * N);
        const void *ins[2] = {a, b};
        uint64_t tg, te;
        ASSERT_OK(cgr_step_run(g, NULL, ins, &tg));
        ASSERT_OK(cgr_step_wait(g, tg));
        ASSERT_OK(cgr_step_output(g, tg, 0, cg, sizeof cg, NULL));
        ASSERT_OK(cgr_step_run(e, NULL, ins, &te));
        ASSERT_OK(cgr_step_wait(e, te));
        ASSERT_OK(cgr_step_output(e, te, 0, ce, sizeof ce, NULL));
        if (memcmp(cg, ce, sizeof cg) != 0)
            TEST_FAIL_("%s run %d: graphed and eager outputs differ", name, k);
        /* Not zeros, and not last run's: the product of this run's inputs. */
        double sum = 0;
        for (int j = 0; j < K; j++)
            sum += (double)a[j] * b[j * N];
        if (cg[0] == 0.0f || (double)cg[0] - sum > 1e-4 || sum - (double)cg[0] > 1e-4)
            TEST_FAIL_("%s run %d: c[0][0] = %.7g, the host says %.7g", name, k, (double)cg[0],
                       sum);
        if (k == 0 && o->bind)
            use_outside(o);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(g, &ss));
    ASSERT_OK(cgr_step_destroy(&g));
    ASSERT_OK(cgr_step_destroy(&e));
    ASSERT_OK(cgr_runtime_destroy(&rg));
    ASSERT_OK(cgr_runtime_destroy(&re));
    return ss;
}

int main(void)
{
    require_gpu();
    CUDA_OK(cudaSetDevice(0));
    rng r = {5};
    own o;
    ASSERT(cublasCreate(&o.h) == CUBLAS_STATUS_SUCCESS);

    o.bind = 1;
    cgr_step_stats ss = compare(&o, &r, "own_bound");
    if (ss.mode != CGR_MODE_GRAPH)
        TEST_FAIL_("own handle, bound: mode %d: %s", (int)ss.mode, ss.capture_error);
    ASSERT_U64_EQ(ss.replays, RUNS - 2);
    ASSERT_U64_EQ(ss.frozen_checks, 1);
    printf("own cuBLAS handle, bound: %llu replays bitwise equal to eager\n",
           (unsigned long long)ss.replays);

    o.bind = 0;
    ss = compare(&o, &r, "own_unbound");
    if (ss.mode == CGR_MODE_GRAPH) {
        ASSERT_U64_EQ(ss.replays, RUNS - 2);
        printf("own cuBLAS handle without a workspace: replayed (%llu nodes), bitwise equal\n",
               (unsigned long long)ss.graph_nodes);
    } else {
        printf("own cuBLAS handle without a workspace: %s\n", ss.capture_error);
        ASSERT(strstr(ss.capture_error, "cublasSetWorkspace") != NULL);
    }
    ASSERT(cublasDestroy(o.h) == CUBLAS_STATUS_SUCCESS);
    printf("PASS\n");
    return 0;
}
