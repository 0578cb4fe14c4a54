// Gate probe: how a copy kernel launched ahead of its inputs should wait for
// the host's "go" (the armed runs of capture/gate.c, capture/stage.cu).
// Each row copies `bytes` from pinned host memory after the host sets a go
// word, 41 times, and reports the median spread of the blocks' go-seen
// times (globaltimer), the copy after the last block saw go, and host time
// from go to cudaStreamSynchronize's return:
//   fresh            no gate: the kernel is launched at go (the baseline)
//   all poll host    every block polls go in pinned memory
//   relay            block 0 polls go, the others a device word it sets
//   relay, volatile  the same with relaxed polling and one acquire fence
//   gate kernel+PDL  a one-block gate kernel; the copy kernel, launched with
//                    programmatic dependent launch, waits in hardware
// Build and run on the GPU machine (not part of the meson build; mode 4 needs
// sm_90 or newer, and is skipped elsewhere or with CGR_PDL=0):
//   nvcc -arch=sm_90 -O2 -o /tmp/gate_probe bench/probes/gate_probe.cu && /tmp/gate_probe
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
static __device__ unsigned long long gns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
static __device__ unsigned long long ldacq_sys(const unsigned long long *p) { unsigned long long v; asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
static __device__ unsigned ldacq_gpu(const unsigned *p) { unsigned v; asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory"); return v; }
// mode 0: fresh (no gate); 1: every block polls host; 2: block 0 polls host, relay; 3: relay, polling with ld.volatile then one acquire fence; 4: no wait in kernel (PDL copy behind a gate kernel)
__global__ void copyk(const uint4 *src, uint4 *dst, size_t n, unsigned long long *go, unsigned *relay, unsigned long long *times, int mode)
{
    __shared__ unsigned long long t0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 // griddepcontrol: sm_90+; main() skips mode 4 before
    if (mode == 4) cudaGridDependencySynchronize();
#endif
    if (threadIdx.x == 0) {
        if (mode == 1) { while (ldacq_sys(go) == 0) {} }
        if (mode == 2 || mode == 3) {
            if (blockIdx.x == 0) { if (mode == 2) while (ldacq_sys(go) == 0) {} else { while (*(volatile unsigned long long *)go == 0) {} asm volatile("fence.acq_rel.sys;" ::: "memory"); } __threadfence(); *(volatile unsigned *)relay = 1; __threadfence(); }
            else while (ldacq_gpu(relay) == 0) {}
            if (atomicAdd(relay + 1, 1u) == gridDim.x - 1) { __threadfence(); *(volatile unsigned *)relay = 0; relay[1] = 0; }
        }
        t0 = gns();
    }
    __syncthreads();
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i];
    __syncthreads();
    if (threadIdx.x == 0) { times[2 * blockIdx.x] = t0; times[2 * blockIdx.x + 1] = gns(); }
}
__global__ void gatek(unsigned long long *go, unsigned long long *t)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    while (ldacq_sys(go) == 0) {}
    *t = gns();
}
static double now_us() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
int main()
{
    size_t maxb = 256 * 1024;
    unsigned char *h; CK(cudaHostAlloc((void **)&h, maxb + 4096, cudaHostAllocMapped));
    unsigned long long *go = (unsigned long long *)(h + maxb);
    void *d; CK(cudaMalloc(&d, maxb));
    unsigned *relay; CK(cudaMalloc((void **)&relay, 64)); CK(cudaMemset(relay, 0, 64));
    unsigned long long *times; CK(cudaMallocHost((void **)&times, 2 * 1024 * 8 + 64));
    unsigned char *hd; CK(cudaHostGetDevicePointer((void **)&hd, h, 0));
    unsigned long long *god = (unsigned long long *)(hd + maxb);
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (size_t i = 0; i < maxb; i++) h[i] = (unsigned char)(i * 7 + 1);
    size_t sizes[3] = {4096, 32768, 262144};
    const char *names[5] = {"fresh", "all poll host", "relay", "relay, volatile", "gate kernel+PDL"};
    // PDL by cgr's rule (cgr.h, cgr_launch_cfg.pdl): compute capability 9.0+, code from compute_90+, CGR_PDL not "0".
    int dev = 0, major = 0; CK(cudaGetDevice(&dev)); CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, copyk));
    const char *pdl_env = getenv("CGR_PDL");
    const bool pdl = major >= 9 && fa.ptxVersion >= 90 && !(pdl_env && strcmp(pdl_env, "0") == 0);
    for (int si = 0; si < 3; si++) for (int mode = 0; mode < 5; mode++) {
        if (mode == 4 && !pdl) { printf("%7zu B  %-16s  skipped: no PDL (compute capability < 9.0, code before compute_90, or CGR_PDL=0)\n", sizes[si], names[mode]); continue; }
        size_t n = sizes[si] / 16; int blocks = (int)((n + 255) / 256);
        double spread[41], tail[41], lat[41];
        for (int r = 0; r < 41; r++) {
            *go = 0;
            double ta = now_us(); while (now_us() - ta < 100) {}
            cudaLaunchConfig_t c = {}; c.gridDim = blocks; c.blockDim = 256; c.stream = s;
            cudaLaunchAttribute at = {}; at.id = cudaLaunchAttributeProgrammaticStreamSerialization; at.val.programmaticStreamSerializationAllowed = 1;
            if (mode == 4) { gatek<<<1, 32, 0, s>>>(god, times + 2048); c.attrs = &at; c.numAttrs = 1; }
            if (mode != 0) CK(cudaLaunchKernelEx(&c, copyk, (const uint4 *)hd, (uint4 *)d, n, god, relay, times, mode));
            double tw = now_us(); while (now_us() - tw < 30) {}
            double t0 = now_us();
            if (mode != 0) __atomic_store_n(go, 1ull, __ATOMIC_RELEASE);
            else CK(cudaLaunchKernelEx(&c, copyk, (const uint4 *)hd, (uint4 *)d, n, god, relay, times, 0));
            CK(cudaStreamSynchronize(s));
            lat[r] = now_us() - t0;
            unsigned long long a = ~0ull, b = 0, e = 0;
            for (int x = 0; x < blocks; x++) { a = std::min(a, times[2*x]); b = std::max(b, times[2*x]); e = std::max(e, times[2*x+1]); }
            spread[r] = (b - a) / 1e3; tail[r] = (e - b) / 1e3;
        }
        std::sort(spread, spread + 41); std::sort(tail, tail + 41); std::sort(lat, lat + 41);
        printf("%7zu B %3d blocks %-16s  go-seen spread p50 %7.2f  copy after last %7.2f  go->sync p50 %7.2f us\n", sizes[si], blocks, names[mode], spread[20], tail[20], lat[20]);
    }
    return 0;
}
