/**
 * @file
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11): a counter-based generator, so any thread can draw number i of
 * a stream without state. Usable from C host code and from CUDA device
 * code, which lets tests compare a kernel's draws with the host's.
 *
 * With cgr_ctx_philox(), a step gets the seed and a base offset in device
 * memory; a kernel draws with counter (offset + sub + i), and cgr advances
 * the offset after every run, inside the graph, so each replay draws new
 * numbers and replay k equals eager run k.
 */
#ifndef CGR_PHILOX_H
#define CGR_PHILOX_H

#include <stdint.h>

/**
 * How the functions below are declared: host and device functions, always
 * inlined, in CUDA code; static inline in C. Undefined again at the end of
 * this header.
 */
#if defined(__CUDACC__)
#define CGR_HD __host__ __device__ __forceinline__
#else
#define CGR_HD static inline
#endif

/** Four 32-bit outputs of one Philox block. */
typedef struct cgr_philox4 {
    uint32_t v[4]; /**< the block's outputs, each 32 uniformly random bits */
} cgr_philox4;

/** The high 32 bits of the 64-bit product a * b (a step of a Philox round). */
CGR_HD uint32_t cgr_philox_mulhi(uint32_t a, uint32_t b)
{
    return (uint32_t)(((uint64_t)a * b) >> 32);
}

/** The 4 x 32-bit block for a 64-bit key and a 128-bit counter (ctr_lo, ctr_hi). */
CGR_HD cgr_philox4 cgr_philox4x32(uint64_t key, uint64_t ctr_lo, uint64_t ctr_hi)
{
    uint32_t c0 = (uint32_t)ctr_lo, c1 = (uint32_t)(ctr_lo >> 32);
    uint32_t c2 = (uint32_t)ctr_hi, c3 = (uint32_t)(ctr_hi >> 32);
    uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
    for (int r = 0; r < 10; r++) {
        uint32_t lo0 = 0xD2511F53u * c0, hi0 = cgr_philox_mulhi(0xD2511F53u, c0);
        uint32_t lo1 = 0xCD9E8D57u * c2, hi1 = cgr_philox_mulhi(0xCD9E8D57u, c2);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    cgr_philox4 out = {{c0, c1, c2, c3}};
    return out;
}

/** A uniform float in [0, 1) from 32 random bits (24 bits of mantissa). */
CGR_HD float cgr_philox_uniform(uint32_t bits)
{
    return (float)(bits >> 8) * (1.0f / 16777216.0f);
}

#undef CGR_HD
#endif
