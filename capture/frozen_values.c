/* The frozen-value check's test of one value (frozen_values.h). */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "frozen_values.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

uintptr_t cgr__frozen_in_a(const cgr__frozen_spaces *s, uintptr_t v)
{
    for (size_t k = 0; k < s->b.n_alloc && k < s->a.n_alloc; k++) {
        const cgr__alloc_range *r = &s->b.alloc[k];
        if (v >= r->base && v - r->base < r->bytes)
            return s->a.alloc[k].base + (v - r->base);
    }
    return v;
}

/*
 * The thread's own stack, not a distance from a local variable: a thread
 * other than the main one has its stack in an ordinary mapping, and host
 * buffers the program allocated (pinned ones included) may lie right next
 * to it, where a pointer that changes from run to run must not pass.
 */
static int on_stack(cgr__stack_range r, uint64_t v)
{
    return v >= r.lo && v < r.hi;
}

/*
 * At most this much below the top of a stack counts. The C library sizes
 * the main thread's stack by its limit, and with `ulimit -s unlimited` that
 * reaches down to the heap: every buffer the program allocates would pass
 * for the stack. Counting less only refuses more (a graph whose host-mode
 * alpha lay deeper runs eagerly); a step's frames lie near the top.
 */
#define CGR__STACK_MAX ((uintptr_t)64 << 20)

cgr__stack_range cgr__stack_top(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return (cgr__stack_range){0, 0};
    return (cgr__stack_range){hi - lo > CGR__STACK_MAX ? hi - CGR__STACK_MAX : lo, hi};
}

cgr__stack_range cgr__thread_stack(void)
{
    static _Thread_local cgr__stack_range mine;
    static _Thread_local int known;
    if (known)
        return mine;
    pthread_attr_t attr;
    void *base = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        if (pthread_attr_getstack(&attr, &base, &size) == 0 && base)
            mine = cgr__stack_top((uintptr_t)base, (uintptr_t)base + size);
        (void)pthread_attr_destroy(&attr);
    }
    known = 1;
    return mine;
}

int cgr__frozen_same_bytes(const cgr__frozen_spaces *s, const unsigned char *va,
                           const unsigned char *vb, size_t n)
{
    if (memcmp(va, vb, n) == 0)
        return 1;
    if (n % sizeof(uint64_t) != 0)
        return 0;
    for (size_t o = 0; o < n; o += sizeof(uint64_t)) {
        uint64_t wa, wb;
        memcpy(&wa, va + o, sizeof wa);
        memcpy(&wb, vb + o, sizeof wb);
        if (wa != wb && wa != (uint64_t)cgr__frozen_in_a(s, (uintptr_t)wb) &&
            !(on_stack(s->a.stack, wa) && on_stack(s->b.stack, wb)))
            return 0;
    }
    return 1;
}

void cgr__frozen_show(char *out, size_t cap, const unsigned char *v, size_t n)
{
    if (n == 4) {
        int32_t i;
        float f;
        memcpy(&i, v, 4);
        memcpy(&f, v, 4);
        snprintf(out, cap, "%d (0x%08x, as float %g)", i, (unsigned)i, (double)f);
    } else if (n == 8) {
        int64_t i;
        double d;
        memcpy(&i, v, 8);
        memcpy(&d, v, 8);
        snprintf(out, cap, "%lld (0x%016llx, as double %g)", (long long)i, (unsigned long long)i,
                 d);
    } else {
        size_t o = (size_t)snprintf(out, cap, "0x");
        for (size_t k = 0; k < n && k < 16 && o + 3 < cap; k++)
            o += (size_t)snprintf(out + o, cap - o, "%02x", v[k]);
        if (n > 16 && o + 4 < cap)
            snprintf(out + o, cap - o, "...");
    }
}
