/*
 * graph-launch-cost: host time inside cudaGraphLaunch for a graph shaped
 * like a small W-serve bucket (8 kernel nodes, PDL edges between them
 * where the GPU has PDL and CGR_PDL is not 0, the last kernel publishing a
 * flag in mapped host memory the way cgr's output copy does), with and without a trailing external event-record node (cgr
 * puts one in every graph so that a wait can block and see failures), and
 * with three ways of waiting before the next launch: stream synchronize,
 * spinning on the flag, and the flag plus 30 us of idle host.
 *
 * It is raw CUDA, no cgr: the floor that cgr_step_launch sits on.
 *
 *     build-gpu/bench/graph-launch-cost
 *
 * Prints p10/p50/p90 per variant over 30 rounds of 90 timed launches (two
 * executables used in turn, like cgr's two staging slots). Exits 1 on a
 * CUDA error, 77 without a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>

#include "tool_check.h"

#define CK(x) TOOL_CK("graph-launch-cost", x)

#define ROUNDS 30
#define PER_ROUND 100
#define SKIP 10 /* launches of each round left out (the first after a synchronize) */

static __global__ void work_kernel(float *p, int i)
{
    /* sm_90 and newer; main() launches without PDL edges on older GPUs. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    if (threadIdx.x == 0)
        p[blockIdx.x] += (float)i;
}

static __global__ void flag_kernel(volatile unsigned long long *flag, unsigned long long *runs)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        const unsigned long long v = *runs + 1;
        *runs = v;
        __threadfence_system();
        *flag = v;
    }
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static cudaGraphExec_t make_exec(cudaStream_t s, float *p, unsigned long long *flag,
                                 unsigned long long *runs, cudaEvent_t ev, int pdl)
{
    cudaGraph_t g;
    cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 7; i++) {
        cudaLaunchConfig_t c = {};
        cudaLaunchAttribute a = {};
        c.gridDim = dim3(128);
        c.blockDim = dim3(128);
        c.stream = s;
        a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        a.val.programmaticStreamSerializationAllowed = 1;
        if (i > 0 && pdl) {
            c.attrs = &a;
            c.numAttrs = 1;
        }
        CK(cudaLaunchKernelEx(&c, work_kernel, p, i));
    }
    flag_kernel<<<1, 32, 0, s>>>(flag, runs);
    CK(cudaGetLastError());
    if (ev)
        CK(cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    CK(cudaGraphUpload(ex, s));
    CK(cudaGraphDestroy(g));
    return ex;
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no usable GPU\n");
        return 77;
    }
    float *p;
    unsigned long long *runs, *host_flag, *dev_flag;
    cudaStream_t s;
    CK(cudaMalloc((void **)&p, 128 * sizeof(float)));
    CK(cudaMemset(p, 0, 128 * sizeof(float)));
    CK(cudaMalloc((void **)&runs, sizeof *runs));
    CK(cudaMemset(runs, 0, sizeof *runs));
    CK(cudaHostAlloc((void **)&host_flag, 64, cudaHostAllocMapped));
    *host_flag = 0;
    CK(cudaHostGetDevicePointer((void **)&dev_flag, host_flag, 0));
    CK(cudaStreamCreate(&s));
    const int pdl = tool_pdl_allowed("graph-launch-cost", (const void *)work_kernel);

    cudaGraphExec_t ex[2][2];
    for (int v = 0; v < 2; v++)
        for (int slot = 0; slot < 2; slot++) {
            cudaEvent_t ev = NULL;
            if (v)
                CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
            ex[v][slot] = make_exec(s, p, dev_flag, runs, ev, pdl);
        }
    CK(cudaStreamSynchronize(s));

    static const char *vname[2] = {"no event node", "event node"};
    static const char *wname[3] = {"synchronize", "spin on flag", "flag + 30 us idle"};
    const size_t per = (size_t)ROUNDS * (PER_ROUND - SKIP);
    double *t = (double *)malloc(2 * 3 * per * sizeof(double));
    size_t cnt[2][3] = {{0}};
    if (!t) {
        fprintf(stderr, "graph-launch-cost: out of host memory\n");
        return 1;
    }
    unsigned long long want = 0;
    for (int round = 0; round < ROUNDS; round++)
        for (int v = 0; v < 2; v++)
            for (int w = 0; w < 3; w++) {
                CK(cudaStreamSynchronize(s));
                for (int i = 0; i < PER_ROUND; i++) {
                    const double a = now_us();
                    CK(cudaGraphLaunch(ex[v][i & 1], s));
                    const double b = now_us();
                    want++;
                    if (w == 0)
                        CK(cudaStreamSynchronize(s));
                    else
                        while (__atomic_load_n(host_flag, __ATOMIC_ACQUIRE) < want) {
                        }
                    if (w == 2) {
                        const double c = now_us();
                        while (now_us() - c < 30.0) {
                        }
                    }
                    if (i >= SKIP)
                        t[(v * 3 + w) * per + cnt[v][w]++] = b - a;
                }
            }
    CK(cudaStreamSynchronize(s));
    printf("cudaGraphLaunch host time, 8 kernel nodes, %s (us)\n",
           pdl ? "PDL edges" : "plain edges (no PDL for this GPU and build, or CGR_PDL=0)");
    for (int v = 0; v < 2; v++)
        for (int w = 0; w < 3; w++) {
            double *x = t + (v * 3 + w) * per;
            const size_t m = cnt[v][w];
            qsort(x, m, sizeof *x, cmp_double);
            printf("  %-14s %-18s p10 %5.2f  p50 %5.2f  p90 %5.2f\n", vname[v], wname[w],
                   x[m / 10], x[m / 2], x[m * 9 / 10]);
        }
    free(t);
    for (int v = 0; v < 2; v++)
        for (int slot = 0; slot < 2; slot++)
            CK(cudaGraphExecDestroy(ex[v][slot]));
    CK(cudaFreeHost(host_flag));
    CK(cudaFree(runs));
    CK(cudaFree(p));
    CK(cudaStreamDestroy(s));
    return 0;
}
