/*
 * Zero-copy staging kernel: moves a list of small tensors between mapped
 * pinned host memory and device buffers inside the step's graph.
 *
 * Napkin math: the bound is PCIe latency, not bandwidth. 4 KiB in is 256
 * 16-byte loads; issued at once they take one PCIe round trip (about 1-2
 * us on an H200 host) instead of 256 serialized ones. So every chunk's
 * load is in flight at once: a thread loads up to STAGE_UNROLL 16-byte
 * chunks before it stores any, and the grid covers all chunks of all
 * tensors in one wave where it can. Writes to host memory are posted and
 * cost less than reads.
 *
 * Why blocks of 1024 threads with 4 chunks each, 64 KiB a block: an armed
 * run's blocks other than block 0 learn of go through a relay (below),
 * which puts a device-memory round trip on their copy's path; with 64 KiB
 * a block every W-serve bucket up to 8 rows copies in one block, with no
 * relay (docs/benchmarks.md, "Armed runs: the gate and the input kernel").
 */
#include <stdint.h>

#include "stage.h"

#define STAGE_THREADS 1024
#define STAGE_UNROLL 4
#define STAGE_MAX_BLOCKS 1024

static __host__ __device__ size_t chunks_of(size_t bytes)
{
    return (bytes + 15) / 16;
}

static __device__ unsigned long long load_acquire_sys(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ unsigned long long global_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ unsigned load_acquire_gpu(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/*
 * The gate of an armed run. Only block 0 polls the slot's go word in
 * pinned host memory, with acquire semantics, so that the inputs the host
 * wrote before its release store of go are what every thread reads after
 * the barrier; it then passes go on through a relay word in device memory
 * that the other blocks poll. Why one poller: the host side answers reads
 * of one line one at a time, so with every block polling, the last block
 * saw go one PCIe round trip per block late; with the relay the blocks see
 * it within a device-memory round trip of each other (docs/benchmarks.md,
 * "Armed runs: the gate and the input kernel"). Even occasional reads of go
 * by the other blocks keep that queue long, so they never read it. A block 0 that is not
 * resident cannot hang them: every block has its own timeout.
 *
 * The timeout is a handshake with the host (capture/gate.c), in the shape of
 * Dekker's: a block that waited too long stores expired, fences at system
 * scope, then reads go once more; the host stores go, fences, then reads
 * expired. At least one side sees the other's store. If the host sees
 * expired == 0, no block took its inputs before go. Otherwise the host
 * cannot tell and runs the graph again behind this one, which is
 * harmless: the later run's outputs and flag are the ones it waits for.
 *
 * The relay is reset by the last block through the gate, after block 0
 * set it (block 0 sets it before it counts itself in), so the next run on
 * the slot starts from zero; kernel boundaries order that reset before it.
 */
static __device__ void gate_wait(unsigned long long *g, unsigned *relay,
                                 unsigned long long timeout_ns)
{
    if (threadIdx.x == 0) {
        const unsigned long long start = global_ns();
        for (;;) {
            if (blockIdx.x == 0 ? load_acquire_sys(&g[0]) != 0 : load_acquire_gpu(relay) != 0)
                break;
            if (global_ns() - start > timeout_ns) {
                *(volatile unsigned long long *)&g[1] = 1;
                __threadfence_system();
                (void)load_acquire_sys(&g[0]);
                break;
            }
        }
        if (gridDim.x > 1) {
            if (blockIdx.x == 0) {
                /* Release: the fence orders what go made visible before the relay. */
                __threadfence();
                *(volatile unsigned *)relay = 1;
                /* And the relay before this block's arrival, so no reset precedes it. */
                __threadfence();
            }
            if (atomicAdd(relay + 1, 1u) == gridDim.x - 1) {
                __threadfence();
                *(volatile unsigned *)relay = 0;
                relay[1] = 0;
            }
        }
    }
    __syncthreads();
}

__global__ void __launch_bounds__(STAGE_THREADS) cgr__stage_kernel(cgr__copy_list l)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* With programmatic dependent launch the kernel may start before the
     * step's last kernel is done: wait for its writes before reading. */
    cudaGridDependencySynchronize();
    /* Let a PDL successor be scheduled now: it still waits (its own
     * cudaGridDependencySynchronize) for this grid to finish and its writes
     * to land, but its launch latency hides behind this copy. */
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    /* Before sm_90 there is no programmatic launch (griddepcontrol needs
     * sm_90): every launch waits for the previous grid, so nothing is needed. */
    /*
     * The run's slot (stage.h). The previous run's last staging kernel or
     * the host's reset wrote it, and both are ordered before this grid by
     * the stream; nothing writes it while this run reads it, since only
     * this run's own last staging kernel does, after every block of every
     * earlier kernel of the run has read it.
     */
    const unsigned slot = *(volatile const unsigned char *)l.slot_word;
    const size_t slot_off = (size_t)slot * l.slot_stride;
    /* After the trigger: a PDL successor loads what it may (weights) while this waits. */
    if (l.gate)
        gate_wait((unsigned long long *)((unsigned char *)l.gate + slot_off),
                  l.gate_relay + 2 * slot, l.gate_timeout_ns);
    if (blockIdx.x == 0 && (int)threadIdx.x < l.n_dims) {
        const long long v = ((const long long *)((const unsigned char *)l.dims_src +
                                                 slot_off))[threadIdx.x];
        const long long hi = l.dims_max[threadIdx.x];
        l.dims_dst[threadIdx.x] = v < 1 ? 1 : v > hi ? hi : v;
    }
    /* The run count, read now so that its latency hides behind the copy. Only
     * the previous run's last block wrote it, and that run has ended. */
    unsigned long long runs = 0;
    if (l.flag && threadIdx.x == 0)
        runs = l.seq[slot];
    size_t total = 0;
    for (int t = 0; t < l.n; t++)
        total += chunks_of(l.bytes[t]);
    const size_t per_block = (size_t)blockDim.x * STAGE_UNROLL;
    const size_t stride = (size_t)gridDim.x * per_block;
    for (size_t base = (size_t)blockIdx.x * per_block + threadIdx.x; base < total;
         base += stride) {
        /* Chunks base, base + blockDim.x, ...: each warp's accesses stay contiguous. */
        uint4 v[STAGE_UNROLL];
        unsigned char *dst[STAGE_UNROLL];
        for (int u = 0; u < STAGE_UNROLL; u++)
            dst[u] = NULL;
        for (int u = 0; u < STAGE_UNROLL; u++) {
            const size_t c = base + (size_t)u * blockDim.x;
            if (c >= total)
                break;
            /* Find the tensor holding chunk c; at most CGR_MAX_TENSORS steps. */
            int t = 0;
            size_t first = 0;
            while (c >= first + chunks_of(l.bytes[t])) {
                first += chunks_of(l.bytes[t]);
                t++;
            }
            const size_t off = (c - first) * 16;
            const unsigned char *src =
                (const unsigned char *)l.src[t] + off + (l.to_host ? 0 : slot_off);
            unsigned char *d = (unsigned char *)l.dst[t] + off + (l.to_host ? slot_off : 0);
            const size_t left = l.bytes[t] - off;
            if (left >= 16) {
                v[u] = *(const uint4 *)src;
                dst[u] = d;
            } else {
                /* A tensor's ragged tail: rare, bytewise. */
                for (size_t i = 0; i < left; i++)
                    d[i] = src[i];
            }
        }
        for (int u = 0; u < STAGE_UNROLL; u++)
            if (dst[u])
                *(uint4 *)dst[u] = v[u];
    }
    if (!l.flag)
        return;
    /*
     * Publish completion: the host must see every block's stores before it
     * sees the flag. The barrier orders the block's stores before thread
     * 0's system-scope fence, which is cumulative, so one fence per block
     * makes all of them visible to the host (the pattern of cooperative
     * groups' grid sync, at system scope). With one block that fence is
     * all it takes. With more, the last block to count itself in (an
     * acquire fence after the counter) has seen every other block's fence,
     * and only it writes the flag and the next run's slot; every block read
     * the slot before it counted itself in.
     *
     * A system fence in every thread, then the counter and a second
     * system fence, made W-serve's output copy slower at one block and at
     * eight (docs/benchmarks.md, "Staging: the completion flag").
     */
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    __threadfence_system();
    if (gridDim.x > 1) {
        if (atomicAdd(l.arrive + slot, 1u) != gridDim.x - 1)
            return;
        __threadfence();
        l.arrive[slot] = 0; /* for the next run; kernel boundaries order it */
    }
    l.seq[slot] = runs + 1;
    *(volatile unsigned long long *)((unsigned char *)l.flag + slot_off) = runs + 1;
    *(volatile unsigned char *)l.slot_word = (unsigned char)(slot + 1 == l.n_slots ? 0 : slot + 1);
}

/* Enough blocks to cover every chunk in one wave, within STAGE_MAX_BLOCKS. */
static unsigned stage_blocks(const cgr__copy_list *l)
{
    size_t total = 0;
    for (int t = 0; t < l->n; t++)
        total += chunks_of(l->bytes[t]);
    const size_t per_block = (size_t)STAGE_THREADS * STAGE_UNROLL;
    size_t blocks = (total + per_block - 1) / per_block;
    if (blocks == 0)
        blocks = 1;
    return blocks > STAGE_MAX_BLOCKS ? STAGE_MAX_BLOCKS : (unsigned)blocks;
}

extern "C" cudaError_t cgr__stage_copy(const cgr__copy_list *l, cudaStream_t stream)
{
    /*
     * Fields instead of dim3(...), and the C launch call instead of the C++
     * template: unoptimized (-Dbuildtype=debug), dim3's constructor and the
     * template's std::forward would be weak global symbols of libcgr.a outside
     * cgr's namespace, which a static link could meet (the unit test `exports`).
     */
    cudaLaunchConfig_t c = {};
    c.gridDim.x = stage_blocks(l);
    c.gridDim.y = c.gridDim.z = 1;
    c.blockDim.x = STAGE_THREADS;
    c.blockDim.y = c.blockDim.z = 1;
    c.stream = stream;
    cgr__copy_list arg = *l;
    void *args[] = {&arg};
    return cudaLaunchKernelExC(&c, (const void *)cgr__stage_kernel, args);
}
