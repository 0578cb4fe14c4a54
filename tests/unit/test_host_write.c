/*
 * Streaming writes into pinned staging memory (replay/host_write.h): every
 * length around the streaming threshold and the 64-byte line, at every
 * destination alignment within a line and several source alignments. The
 * bytes written must equal the source (or zero) and the bytes around them
 * must stay as they were: the ragged head and tail use ordinary stores,
 * the lines between streaming ones, and a slip at either seam shows here.
 */
#include <stdint.h>
#include <string.h>

#include "host_write.h"
#include "test.h"

enum { GUARD = 80, MAXN = 4200 };

static unsigned char src[MAXN + 64], buf[MAXN + 2 * GUARD + 64];

static void check(size_t at, size_t n, const unsigned char *want, const char *what, size_t so)
{
    for (size_t i = 0; i < at; i++)
        if (buf[i] != (unsigned char)(0xa5 ^ i))
            TEST_FAIL_("%s n=%zu at=%zu so=%zu: byte %zu before the range changed", what, n, at,
                       so, i);
    for (size_t i = 0; i < n; i++)
        if (buf[at + i] != (want ? want[i] : 0))
            TEST_FAIL_("%s n=%zu at=%zu so=%zu: byte %zu is %u, want %u", what, n, at, so, i,
                       buf[at + i], want ? want[i] : 0u);
    for (size_t i = at + n; i < sizeof buf; i++)
        if (buf[i] != (unsigned char)(0xa5 ^ i))
            TEST_FAIL_("%s n=%zu at=%zu so=%zu: byte %zu after the range changed", what, n, at,
                       so, i - at - n);
}

static void reset(void)
{
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(0xa5 ^ i);
}

int main(void)
{
    for (size_t i = 0; i < sizeof src; i++)
        src[i] = (unsigned char)(i * 131u + 7u) | 1u; /* never zero: a skipped byte shows */
    static const size_t lens[] = {0,   1,   15,  16,  63,  64,   65,   127,  128,
                                  255, 256, 257, 319, 320, 321,  1000, 4095, 4096, MAXN};
    /* buf's base alignment is unknown; offsets 0..63 from a 64-byte boundary cover every case. */
    const size_t base = (size_t)(-(uintptr_t)(buf + GUARD) & 63u) + GUARD;
    long cases = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (size_t a = 0; a < 64; a++)
            for (size_t so = 0; so < 24; so += 7) {
                const size_t n = lens[l], at = base + a;
                reset();
                cgr__host_write(buf + at, src + so, n);
                check(at, n, src + so, "write", so);
                reset();
                cgr__host_write(buf + at, NULL, n);
                check(at, n, NULL, "zero", so);
                cases++;
            }
    printf("PASS (%ld cases)\n", cases);
    return 0;
}
