/*
 * Staging-slot ring (pure C, no CUDA).
 *
 * A step owns N pinned slots. Run number `ticket` uses slot ticket % N: the
 * host writes its inputs there, the graph reads them and writes the outputs
 * back into the same slot. So run t + N may reuse slot t % N only once the
 * caller has waited for run t: before that the GPU may still be reading the
 * inputs, and the caller has not read the outputs. The ring refuses (BUSY)
 * instead of silently overwriting results nobody has read; waiting for run
 * t also retires every earlier run, since one stream runs them in order.
 */
#ifndef CGR_RING_H
#define CGR_RING_H

#include <stdint.h>

#include "cgr/cgr.h"

typedef struct cgr__ring {
    uint32_t slots;     /**< N >= 1 */
    uint64_t launched;  /**< runs committed so far; the next ticket */
    uint64_t waited;    /**< every ticket < waited has been waited for */
    int acquired;       /**< 1 while a slot is handed out and not committed */
} cgr__ring;

/*
 * Every function takes a valid ring and, where it has them, valid out
 * pointers (asserted, not reported).
 */

/** N >= 1 slots, nothing launched. */
void cgr__ring_init(cgr__ring *r, uint32_t slots);
/**
 * Hands out the next slot: *ticket = launched, *slot = ticket % N.
 * CGR_STATUS_WRONG_STATE when a slot is already acquired,
 * CGR_STATUS_BUSY when run ticket - N has not been waited for.
 * Nothing changes on failure.
 */
cgr_status cgr__ring_acquire(cgr__ring *r, uint64_t *ticket, uint32_t *slot);
/** Commits the acquired slot, whose ticket is `ticket`, as launched. */
void cgr__ring_commit(cgr__ring *r, uint64_t ticket);
/** Gives the acquired slot back unlaunched (no-op when none is acquired). */
void cgr__ring_cancel(cgr__ring *r);
/** CGR_STATUS_INVALID_ARGUMENT unless ticket < launched. */
cgr_status cgr__ring_check_wait(const cgr__ring *r, uint64_t ticket);
/** Records that run `ticket` < launched finished (and so every earlier one). */
void cgr__ring_mark_waited(cgr__ring *r, uint64_t ticket);
/**
 * Whether run ticket's outputs may be read: it was waited for and its slot
 * has not been reused (launched <= ticket + N). CGR_STATUS_WRONG_STATE when
 * not yet waited for, CGR_STATUS_INVALID_ARGUMENT when never launched or
 * already overwritten.
 */
cgr_status cgr__ring_check_output(const cgr__ring *r, uint64_t ticket);
/** Slot index of a ticket. */
static inline uint32_t cgr__ring_slot(const cgr__ring *r, uint64_t ticket)
{
    return (uint32_t)(ticket % r->slots);
}

#endif
