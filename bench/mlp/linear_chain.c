/*
 * mlp-linear-chain: GPU time of W-mlp's small-batch Linear forward where it
 * matters, inside a chain of dependent launches.
 *
 * Five layers (4 x 1024 -> 1024 with ReLU, then 1024 -> 1000), each reading
 * the previous layer's output, are captured into one graph and replayed
 * back to back: 50 replays of warm-up, then 7 rounds of 300 replays timed
 * with events; the median round gives microseconds per chain. For each
 * batch 1..8 it runs three ways: plain launches, PDL, and PDL with
 * w_early (weights loaded before the wait; see mlp_kernels.h), and checks
 * that all three give the same bits.
 *
 *     build-gpu/bench/mlp-linear-chain
 *
 * Exits 0 when every run matched, 1 on a mismatch or a CUDA error, 77
 * without a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "../tool_check.h"
#include "mlp_kernels.h"

#define LAYERS 5
#define WIDTH 1024
#define ROUNDS 7
#define PER_ROUND 300

#define CK(x) TOOL_CK("mlp-linear-chain", x)

static const int outs[LAYERS] = {1024, 1024, 1024, 1024, 1000};

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Deterministic values in [-scale, scale), never all zero. */
static void fill(float *v, size_t n, float scale, unsigned long long seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        v[i] = ((float)((seed >> 40) % 2001) / 1000.0f - 1.0f) * scale;
    }
}

/* Enqueues the five layers: act[0] is the input, the layers alternate between act[1] and act[2]. */
static void chain(float *W, float *bias, float *act, int B, cudaStream_t s, int pdl, int early)
{
    for (int l = 0; l < LAYERS; l++) {
        const float *x = act + (size_t)(l == 0 ? 0 : 1 + (l - 1) % 2) * 8 * WIDTH;
        float *y = act + (size_t)(1 + l % 2) * 8 * WIDTH;
        CK(mlp_linear_fwd(y, W + (size_t)l * WIDTH * WIDTH, bias + (size_t)l * WIDTH, x, B,
                          outs[l], WIDTH, l < LAYERS - 1, NULL, s, pdl, early));
    }
}

/* Where the last layer wrote. */
static float *out_of(float *act)
{
    return act + (size_t)(1 + (LAYERS - 1) % 2) * 8 * WIDTH;
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no usable GPU\n");
        return 77;
    }
    const size_t nw = (size_t)LAYERS * WIDTH * WIDTH;
    float *hw = malloc(nw * sizeof *hw), *ref = malloc(8 * 1000 * sizeof *ref);
    float *got = malloc(8 * 1000 * sizeof *got);
    if (!hw || !ref || !got) {
        fprintf(stderr, "mlp-linear-chain: out of host memory\n");
        return 1;
    }
    float *W, *bias, *act;
    CK(cudaMalloc((void **)&W, nw * sizeof(float)));
    CK(cudaMalloc((void **)&bias, (size_t)LAYERS * WIDTH * sizeof(float)));
    CK(cudaMalloc((void **)&act, (size_t)3 * 8 * WIDTH * sizeof(float)));
    fill(hw, nw, 0.06f, 1);
    CK(cudaMemcpy(W, hw, nw * sizeof(float), cudaMemcpyHostToDevice));
    fill(hw, (size_t)LAYERS * WIDTH, 0.5f, 2);
    CK(cudaMemcpy(bias, hw, (size_t)LAYERS * WIDTH * sizeof(float), cudaMemcpyHostToDevice));
    fill(hw, (size_t)8 * WIDTH, 1.0f, 3);
    CK(cudaMemcpy(act, hw, (size_t)8 * WIDTH * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t s;
    cudaEvent_t e0, e1;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    static const int modes[3][2] = {{0, 0}, {1, 0}, {1, 1}}; /* pdl, w_early */
    int bad = 0;
    printf("five-layer chain in one graph, us per chain (median of %d x %d replays)\n", ROUNDS,
           PER_ROUND);
    printf("%3s %10s %10s %14s  bits\n", "B", "plain", "pdl", "pdl+w_early");
    for (int B = 1; B <= MLP_SMALL_B_MAX; B++) {
        const size_t bytes = (size_t)B * 1000 * sizeof(float);
        double us[3];
        int same = 1;
        for (int m = 0; m < 3; m++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
            chain(W, bias, act, B, s, modes[m][0], modes[m][1]);
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            /* NaN bytes: a result that was never written fails the comparison. */
            CK(cudaMemsetAsync(act + 8 * WIDTH, 0xff, (size_t)2 * 8 * WIDTH * sizeof(float), s));
            CK(cudaGraphLaunch(ge, s));
            CK(cudaStreamSynchronize(s));
            CK(cudaMemcpy(m == 0 ? ref : got, out_of(act), bytes, cudaMemcpyDeviceToHost));
            if (m > 0 && memcmp(ref, got, bytes) != 0)
                same = 0;
            for (int i = 0; i < 50; i++)
                CK(cudaGraphLaunch(ge, s));
            float t[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                CK(cudaEventRecord(e0, s));
                for (int i = 0; i < PER_ROUND; i++)
                    CK(cudaGraphLaunch(ge, s));
                CK(cudaEventRecord(e1, s));
                CK(cudaEventSynchronize(e1));
                float ms;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t[r] = ms * 1000.0f / PER_ROUND;
            }
            qsort(t, ROUNDS, sizeof t[0], cmp_float);
            us[m] = t[ROUNDS / 2];
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
        }
        for (size_t i = 0; i < (size_t)B * 1000; i++)
            if (isnan(ref[i]))
                same = 0; /* the chain did not write its output */
        bad |= !same;
        printf("%3d %10.2f %10.2f %14.2f  %s\n", B, us[0], us[1], us[2], same ? "same" : "DIFFER");
    }
    CK(cudaFree(W));
    CK(cudaFree(bias));
    CK(cudaFree(act));
    free(hw);
    free(ref);
    free(got);
    return bad;
}
