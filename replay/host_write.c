/*
 * Writing inputs into pinned slots with streaming (non-temporal) stores.
 *
 * Why: a line the CPU has just written sits modified in that core's
 * cache, and the GPU's PCIe read of it has to fetch it from there. With an
 * armed run (capture/gate.c) the GPU reads the inputs right after go, so it pays
 * that in full; a launch at submission hid it behind its own latency.
 * Written with streaming stores, the inputs reached the GPU about as fast
 * as data the CPU had not touched, for little more CPU time than memcpy
 * (docs/benchmarks.md, "Writing inputs: streaming stores"). Streaming
 * stores go to memory through write-combining buffers and leave no
 * modified line behind.
 *
 * Streaming stores are weakly ordered, so the write ends with sfence:
 * after it every byte is visible, and a later ordinary store (go, the
 * launch's doorbell) is ordered after them. Whole 64-byte lines are
 * streamed; the ragged head and tail use ordinary stores, as does
 * everything on other architectures and below STREAM_MIN bytes, where a
 * line or two makes no difference.
 */
#include <stdint.h>
#include <string.h>

#include "host_write.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define HAVE_STREAM 1
#else
#define HAVE_STREAM 0
#endif

#define STREAM_MIN 256

/* Ordinary stores of src's bytes, or of zeros when src is NULL. */
static void put(unsigned char *d, const unsigned char *s, size_t n)
{
    if (s)
        memcpy(d, s, n);
    else
        memset(d, 0, n);
}

void cgr__host_write(void *dst, const void *src, size_t bytes)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
#if HAVE_STREAM
    if (bytes >= STREAM_MIN) {
        /* The head up to a 64-byte boundary: under 64 bytes, so fewer than `bytes`. */
        size_t at = (size_t)(-(uintptr_t)d & 63u);
        put(d, s, at);
        for (; bytes - at >= 64; at += 64)
            for (int k = 0; k < 64; k += 16)
                _mm_stream_si128((__m128i *)(d + at + k),
                                 s ? _mm_loadu_si128((const __m128i *)(s + at + k))
                                   : _mm_setzero_si128());
        put(d + at, s ? s + at : NULL, bytes - at);
        _mm_sfence();
        return;
    }
#endif
    put(d, s, bytes);
}
