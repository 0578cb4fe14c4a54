// Fresh-input probe: what an armed run's input copy pays after go (the
// gate of capture/stage.cu, capture/gate.c), and what would shorten it.
// One block of 1024 threads waits at a gate, then copies `bytes` from
// pinned host memory in 64 KiB (4 chunks a thread, as the staging kernel)
// and writes a done word to pinned memory. The host times its write (and
// flush) and go -> done, with CLOCK_MONOTONIC, medians of 201 rounds:
//   dirty      the host wrote the inputs just before go (lines in its cache)
//   flushed    the same, then clflushopt on every line and sfence (timed)
//   clean      the inputs were not written this round
//   paused     dirty, then 3 us before go (as a plain launch would take)
//   streamed   written with non-temporal stores (movntdq) and sfence
//   wc         written with memcpy into write-combined pinned memory
//              (cudaHostAllocWriteCombined), then sfence
//   demoted    dirty, then cldemote on every line (a hint: move it from the
//              core's caches to the shared L3; a no-op on older CPUs)
//   2 pollers  dirty, two threads of different warps poll go on two lines,
//              started 500 ns apart; the first to see it opens
//              the gate for the block (shared-memory flag, copy warps spin)
// Build and run on the GPU machine (not part of the meson build):
//   nvcc -arch=sm_90 -O2 -o /tmp/fresh_probe \
//        bench/probes/fresh_probe.cu && /tmp/fresh_probe
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <cuda_runtime.h>
#include <immintrin.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
static __device__ unsigned long long ldacq_sys(const unsigned long long *p) { unsigned long long v; asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
static __device__ unsigned long long gns() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
// go: two words on separate 128-byte lines (go[0], go[16]); pollers: 1 or 2
__global__ void __launch_bounds__(1024) copyk(const uint4 *src, uint4 *dst, size_t n, unsigned long long *go, unsigned long long *done, int pollers, unsigned long long seq)
{
    __shared__ volatile int open;
    if (threadIdx.x == 0) open = 0;
    __syncthreads();
    const int lane0 = (threadIdx.x & 31) == 0, w = threadIdx.x >> 5;
    if (lane0 && w < pollers) {
        if (w > 0) { unsigned long long t = gns(); while (gns() - t < 500 * (unsigned long long)w) {} }
        while (!open) { if (ldacq_sys(go + 16 * w) == seq) { __threadfence_block(); open = 1; } }
    } else {
        while (!open) {}
        __threadfence_block();
    }
    uint4 v[4]; uint4 *d[4];
    for (int u = 0; u < 4; u++) { size_t c = threadIdx.x + (size_t)u * 1024; d[u] = 0; if (c < n) { v[u] = src[c]; d[u] = dst + c; } }
    for (int u = 0; u < 4; u++) if (d[u]) *d[u] = v[u];
    __syncthreads();
    if (threadIdx.x == 0) { __threadfence_system(); *(volatile unsigned long long *)done = seq; }
}
static double now_us() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static void stream_copy(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i += 16)
        _mm_stream_si128((__m128i *)((char *)dst + i), _mm_loadu_si128((const __m128i *)((const char *)src + i)));
    _mm_sfence();
}
__attribute__((target("cldemote"))) static void demote(const void *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64) _cldemote((char *)p + i);
}
__attribute__((target("clflushopt"))) static void flush(const void *p, size_t n)
{
    for (size_t i = 0; i < n; i += 64) _mm_clflushopt((char *)p + i);
    _mm_sfence();
}
int main()
{
    const size_t maxb = 64 * 1024;
    unsigned char *h, *hd; CK(cudaHostAlloc((void **)&h, maxb + 8192, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&hd, h, 0));
    unsigned long long *go = (unsigned long long *)(h + maxb), *done = go + 64;
    unsigned long long *god = (unsigned long long *)(hd + maxb), *doned = god + 64;
    unsigned char *src = (unsigned char *)malloc(maxb);
    for (size_t i = 0; i < maxb; i++) src[i] = (unsigned char)(i * 7 + 1);
    memcpy(h, src, maxb);
    unsigned char *wc, *wcd; CK(cudaHostAlloc((void **)&wc, maxb, cudaHostAllocMapped | cudaHostAllocWriteCombined));
    CK(cudaHostGetDevicePointer((void **)&wcd, wc, 0));
    void *d; CK(cudaMalloc(&d, maxb));
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    size_t sizes[5] = {0, 4096, 16384, 32768, 65536};
    const char *names[8] = {"dirty", "flushed", "clean", "2 pollers", "paused", "streamed", "wc", "demoted"};
    unsigned long long seq = 0;
    for (int si = 0; si < 5; si++) {
        printf("%6zu B:", sizes[si]);
        for (int mode = 0; mode < 8; mode++) {
            double lat[201], pre[201];
            for (int r = 0; r < 201; r++) {
                seq++;
                cudaLaunchConfig_t c = {}; c.gridDim = dim3(1); c.blockDim = dim3(1024); c.stream = s;
                CK(cudaLaunchKernelEx(&c, copyk, (const uint4 *)(mode == 6 ? wcd : hd), (uint4 *)d, sizes[si] / 16, god, doned, mode == 3 ? 2 : 1, seq));
                double tw = now_us(); while (now_us() - tw < 40) {}
                src[0] = (unsigned char)seq;
                double t0 = now_us();
                if (mode == 6) { memcpy(wc, src, sizes[si]); _mm_sfence(); }
                else if (mode == 5) stream_copy(h, src, sizes[si]);
                else if (mode != 2) memcpy(h, src, sizes[si]);
                if (mode == 1) flush(h, sizes[si]);
                if (mode == 7) demote(h, sizes[si]);
                if (mode == 4) { double tp = now_us(); while (now_us() - tp < 3) {} }
                double t1 = now_us();
                __atomic_store_n(go, seq, __ATOMIC_RELEASE);
                __atomic_store_n(go + 16, seq, __ATOMIC_RELEASE);
                while (__atomic_load_n((volatile unsigned long long *)done, __ATOMIC_ACQUIRE) != seq) {}
                lat[r] = now_us() - t1;
                pre[r] = t1 - t0;
                CK(cudaStreamSynchronize(s));
            }
            std::sort(lat, lat + 201); std::sort(pre, pre + 201);
            printf("  %s %5.2f+%5.2f", names[mode], pre[100], lat[100]);
        }
        printf("  us (write+flush, go -> done; p50)\n");
    }
    return 0;
}
