/*
 * Fault injection state (lib/base/fault.h, fault_control.h). Compiled only
 * into the test variant of the library, never into the shipped libcgr.
 *
 * Each site has a countdown: arming sets it to N, every call at the site
 * takes one off, and the call that takes it from 1 to 0 fails. Counters are
 * atomics so that a step running on another thread cannot make a fault fire
 * twice or not at all; the tests themselves arm and check from one thread.
 */
#ifndef CGR_FAULT_INJECTION
#error "tests/gpu/fault.c belongs to the fault-injection test build only (-DCGR_FAULT_INJECTION)"
#endif

#include <stdatomic.h>

#include "fault_control.h"

static atomic_ullong left[CGR__FAULT_COUNT_];
static atomic_ullong calls[CGR__FAULT_COUNT_];
static atomic_ullong fired[CGR__FAULT_COUNT_];
/* Not reset by cgr__fault_clear: they follow memory, not the arming. */
static atomic_llong pinned_bytes, pinned_blocks;

static const char *const site_names[] = {
#define CGR__FAULT_NAME(id, name, what) name,
    CGR__FAULT_SITES(CGR__FAULT_NAME)
#undef CGR__FAULT_NAME
};

int cgr__fault_hit(cgr__fault_site site)
{
    if ((unsigned)site >= CGR__FAULT_COUNT_)
        return 0;
    atomic_fetch_add(&calls[site], 1);
    unsigned long long n = atomic_load(&left[site]);
    while (n > 0) {
        if (atomic_compare_exchange_weak(&left[site], &n, n - 1)) {
            if (n != 1)
                return 0;
            atomic_fetch_add(&fired[site], 1);
            return 1;
        }
    }
    return 0;
}

void cgr__fault_note_pinned(size_t bytes, int sign)
{
    atomic_fetch_add(&pinned_bytes, sign > 0 ? (long long)bytes : -(long long)bytes);
    atomic_fetch_add(&pinned_blocks, sign > 0 ? 1 : -1);
}

void cgr__fault_arm(cgr__fault_site site, uint64_t nth)
{
    if ((unsigned)site >= CGR__FAULT_COUNT_)
        return;
    atomic_store(&calls[site], 0);
    atomic_store(&fired[site], 0);
    atomic_store(&left[site], nth);
}

void cgr__fault_clear(void)
{
    for (int i = 0; i < CGR__FAULT_COUNT_; i++)
        cgr__fault_arm((cgr__fault_site)i, 0);
}

uint64_t cgr__fault_calls(cgr__fault_site site)
{
    return (unsigned)site < CGR__FAULT_COUNT_ ? atomic_load(&calls[site]) : 0;
}

uint64_t cgr__fault_fired(cgr__fault_site site)
{
    return (unsigned)site < CGR__FAULT_COUNT_ ? atomic_load(&fired[site]) : 0;
}

const char *cgr__fault_site_name(cgr__fault_site site)
{
    return (unsigned)site < CGR__FAULT_COUNT_ ? site_names[site] : "?";
}

void cgr__fault_pinned_live(size_t *bytes, size_t *blocks)
{
    long long b = atomic_load(&pinned_bytes), n = atomic_load(&pinned_blocks);
    /* A negative count (a free without its alloc) shows as huge, so it fails a test too. */
    *bytes = (size_t)b;
    *blocks = (size_t)n;
}
