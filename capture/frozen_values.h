/*
 * The frozen-value check's test of one value, by the rule freeze.c's
 * header states: are a value of the graph captured first (a) and the same
 * value of the graph captured at a later run (b) the same value? Plain C,
 * no CUDA object, so the unit suite checks it alone.
 */
#ifndef CGR_FROZEN_VALUES_H
#define CGR_FROZEN_VALUES_H

#include <stddef.h>
#include <stdint.h>

/* The memory of one memory-allocation node. */
typedef struct cgr__alloc_range {
    uintptr_t base;
    size_t bytes;
} cgr__alloc_range;

/* A thread's stack: [lo, hi); empty (lo == hi) when it could not be found. */
typedef struct cgr__stack_range {
    uintptr_t lo, hi;
} cgr__stack_range;

/* What one capture put in its graph that is its own. */
typedef struct cgr__capture_space {
    const cgr__alloc_range *alloc; /* its memory-allocation nodes, in node order */
    size_t n_alloc;
    cgr__stack_range stack; /* the stack of the thread that captured it */
} cgr__capture_space;

/* The two captures compared. */
typedef struct cgr__frozen_spaces {
    cgr__capture_space a, b;
} cgr__frozen_spaces;

/* Address v of graph b in graph a's terms: moved into a's k-th allocation
 * when it lies in b's k-th; else v. */
uintptr_t cgr__frozen_in_a(const cgr__frozen_spaces *s, uintptr_t v);

/*
 * Whether n bytes of a value, va in graph a and vb in graph b, are the
 * same value. Where they differ, a value of whole 8-byte words is compared
 * word by word: a word is the same when equal, when b's is in b's k-th
 * allocation and a's at the same offset of a's k-th, or when each lies in
 * its capturing thread's stack. Any other size must match byte for byte.
 */
int cgr__frozen_same_bytes(const cgr__frozen_spaces *s, const unsigned char *va,
                           const unsigned char *vb, size_t n);

/*
 * The calling thread's stack, as the C library reports it
 * (pthread_getattr_np), found once per thread: a stack never moves. Empty
 * when the C library cannot tell, so that no word passes as a stack address.
 * Only its top 64 MiB (cgr__stack_top). Under AddressSanitizer's
 * use-after-return mode, locals live on a fake stack elsewhere: their
 * addresses are values, and a step that passes one runs eagerly.
 */
cgr__stack_range cgr__thread_stack(void);

/* The stack [lo, hi) as the check counts it: at most its top 64 MiB; empty when hi <= lo. */
cgr__stack_range cgr__stack_top(uintptr_t lo, uintptr_t hi);

/* n bytes of a value for a message: as an integer (and a float or double) when 4 or 8
 * bytes, else the first 16 bytes in hex. */
void cgr__frozen_show(char *out, size_t cap, const unsigned char *v, size_t n);

#endif
