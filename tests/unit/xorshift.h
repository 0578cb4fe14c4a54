/*
 * The unit tests' random source: xorshift64*, one stream per test program,
 * seeded by TEST_RNG_SEED (define it before including this header) so that
 * a failure replays exactly.
 */
#ifndef CGR_TEST_XORSHIFT_H
#define CGR_TEST_XORSHIFT_H

#include <stdint.h>

#ifndef TEST_RNG_SEED
#define TEST_RNG_SEED 0x9E3779B97F4A7C15ull
#endif

static uint64_t rng_state = TEST_RNG_SEED;

static inline uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#endif
