/*
 * Staging-slot ring (see ring.h).
 *
 * The ring is pure bookkeeping over three counters; the step code owns the
 * pinned memory and the events. Invariants kept by every call:
 * waited <= launched, launched - waited <= slots, and while a slot is
 * acquired its ticket is `launched` (only commit moves launched).
 *
 * Its callers are cgr's own step code, which always passes a ring and out
 * pointers, a slot count validated at the API (2..CGR_MAX_SLOTS), and
 * commits and marks only runs it acquired or checked; those are asserted.
 * What the ring reports as a status is the state of the ring, which
 * follows from what the caller of the public API did.
 */
#include "ring.h"

#include <assert.h>
#include <stddef.h>

void cgr__ring_init(cgr__ring *r, uint32_t slots)
{
    assert(r != NULL && slots > 0);
    *r = (cgr__ring){.slots = slots};
}

cgr_status cgr__ring_acquire(cgr__ring *r, uint64_t *ticket, uint32_t *slot)
{
    assert(r != NULL && ticket != NULL && slot != NULL);
    if (r->acquired)
        return CGR_STATUS_WRONG_STATE;
    /*
     * Ticket UINT64_MAX could never be committed without the counter
     * wrapping, which would make old tickets look new again. Nobody runs
     * 2^64 steps, but the ring refuses rather than wrap.
     */
    if (r->launched == UINT64_MAX)
        return CGR_STATUS_WRONG_STATE;
    /*
     * Run launched - N still owns the slot until it is waited for; since
     * waited <= launched this is the same as "N runs are unwaited", and the
     * subtraction cannot wrap.
     */
    if (r->launched - r->waited >= r->slots)
        return CGR_STATUS_BUSY;
    r->acquired = 1;
    *ticket = r->launched;
    *slot = cgr__ring_slot(r, r->launched);
    return CGR_STATUS_OK;
}

void cgr__ring_commit(cgr__ring *r, uint64_t ticket)
{
    assert(r != NULL && r->acquired && ticket == r->launched);
    r->launched++;
    r->acquired = 0;
}

void cgr__ring_cancel(cgr__ring *r)
{
    assert(r != NULL);
    /* Nothing was launched, so the same ticket is handed out next time. */
    r->acquired = 0;
}

cgr_status cgr__ring_check_wait(const cgr__ring *r, uint64_t ticket)
{
    assert(r != NULL);
    if (ticket >= r->launched)
        return CGR_STATUS_INVALID_ARGUMENT;
    return CGR_STATUS_OK;
}

void cgr__ring_mark_waited(cgr__ring *r, uint64_t ticket)
{
    /* A run never launched cannot have finished: waited <= launched, which the BUSY test
     * relies on. Waiting an old ticket again must not move waited backwards. */
    assert(r != NULL && ticket < r->launched);
    if (ticket + 1 > r->waited)
        r->waited = ticket + 1;
}

cgr_status cgr__ring_check_output(const cgr__ring *r, uint64_t ticket)
{
    assert(r != NULL);
    if (ticket >= r->launched)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (ticket >= r->waited)
        return CGR_STATUS_WRONG_STATE;
    /*
     * launched <= ticket + N, written so that it cannot wrap: run
     * ticket + N, once launched, writes its outputs into the same slot.
     */
    if (r->launched - ticket > r->slots)
        return CGR_STATUS_INVALID_ARGUMENT;
    return CGR_STATUS_OK;
}
