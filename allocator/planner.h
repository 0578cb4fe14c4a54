/*
 * Scratch trace and liveness planner (pure C, no CUDA).
 *
 * During the first warm-up run every cgr_ctx_alloc/cgr_ctx_free of a step
 * is recorded as an event on a logical clock. A buffer is live over the
 * half-open interval [start, end) of that clock; a buffer never freed lives
 * until the end of the step. The planner then gives every buffer an arena
 * offset such that two buffers whose intervals overlap never overlap in
 * memory. Capture replays the same requests and hands out base + offset,
 * which the graph bakes in: that is why the plan, and the arena's base
 * address, must never change while a graph that uses them lives.
 */
#ifndef CGR_PLANNER_H
#define CGR_PLANNER_H

#include <stddef.h>
#include <stdint.h>

#include "cgr/cgr.h"

/** One scratch request of a step. */
typedef struct cgr__buf {
    size_t size;     /**< bytes requested (not rounded) */
    uint32_t start;  /**< clock at the alloc */
    uint32_t end;    /**< clock at the free; UINT32_MAX until freed or closed */
    size_t offset;   /**< arena offset chosen by cgr__plan() */
    void *ptr;       /**< the recording run's own pointer (NULL until its recorder sets it) */
} cgr__buf;

/** The ordered requests of one run of a step. */
typedef struct cgr__trace {
    cgr__buf *bufs;
    size_t n;
    size_t cap;
    uint32_t clock;  /**< events so far (allocs plus frees) */
} cgr__trace;

/* Every trace function takes a trace that is not NULL (asserted). */

/** Empty trace; owns no memory yet. */
void cgr__trace_init(cgr__trace *t);
/** Frees the trace's memory and re-initializes it. */
void cgr__trace_destroy(cgr__trace *t);
/** Forgets all requests but keeps the memory. */
void cgr__trace_reset(cgr__trace *t);
/**
 * Records an alloc of `size` bytes (size >= 1); *id receives its index.
 * CGR_STATUS_OUT_OF_MEMORY if the table cannot grow (nothing changes),
 * CGR_STATUS_INVALID_ARGUMENT for size 0 or a full 32-bit clock.
 */
cgr_status cgr__trace_alloc(cgr__trace *t, size_t size, size_t *id);
/**
 * Records the free of buffer `id`. CGR_STATUS_INVALID_ARGUMENT when id is
 * out of range or already freed (nothing changes).
 */
cgr_status cgr__trace_free(cgr__trace *t, size_t id);
/** Ends the run: buffers still live get end = clock (+1 if clock == start). */
void cgr__trace_close(cgr__trace *t);

/**
 * Greedy-by-size placement (as in TFLite's arena planner): buffers in
 * decreasing size order, each at the lowest `align`-aligned offset that
 * does not overlap any already placed buffer with an overlapping live
 * interval. align is a power of two. Writes bufs[i].offset; bufs may be
 * NULL only when n is 0 (asserted).
 * *peak: end of the highest placed buffer (aligned size);
 * *lower_bound: largest sum of aligned sizes live at one clock tick, which
 * no placement can beat. Either output pointer may be NULL.
 * CGR_STATUS_OUT_OF_MEMORY if its temporary table cannot be allocated,
 * CGR_STATUS_INVALID_ARGUMENT on a bad align, an open interval or a size
 * that overflows when aligned.
 */
cgr_status cgr__plan(cgr__buf *bufs, size_t n, size_t align, size_t *peak, size_t *lower_bound);

#endif
