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
 * Streaming stores are weakly ordered, so both functions end with sfence:
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

#if HAVE_STREAM
/* Bytes before dst reaches a 64-byte boundary, at most n. */
static size_t head_of(const void *dst, size_t n)
{
    size_t h = (size_t)(-(uintptr_t)dst & 63u);
    return h < n ? h : n;
}
#endif

void cgr__host_write(void *dst, const void *src, size_t bytes)
{
#if HAVE_STREAM
    if (bytes >= STREAM_MIN) {
        unsigned char *d = dst;
        const unsigned char *s = src;
        const size_t h = head_of(d, bytes);
        memcpy(d, s, h);
        d += h, s += h, bytes -= h;
        for (; bytes >= 64; d += 64, s += 64, bytes -= 64)
            for (int k = 0; k < 64; k += 16)
                _mm_stream_si128((__m128i *)(d + k),
                                 _mm_loadu_si128((const __m128i *)(s + k)));
        memcpy(d, s, bytes);
        _mm_sfence();
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

void cgr__host_zero(void *dst, size_t bytes)
{
#if HAVE_STREAM
    if (bytes >= STREAM_MIN) {
        unsigned char *d = dst;
        const size_t h = head_of(d, bytes);
        memset(d, 0, h);
        d += h, bytes -= h;
        const __m128i z = _mm_setzero_si128();
        for (; bytes >= 64; d += 64, bytes -= 64)
            for (int k = 0; k < 64; k += 16)
                _mm_stream_si128((__m128i *)(d + k), z);
        memset(d, 0, bytes);
        _mm_sfence();
        return;
    }
#endif
    memset(dst, 0, bytes);
}
