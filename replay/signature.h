/*
 * Shape signatures (pure C, no CUDA).
 *
 * A signature names one captured shape of one step: the step's id plus the
 * values of its dynamic dims after bucketing, in a fixed order (tensor by
 * tensor, axis by axis, as the step declared them). Two runs with the same
 * signature can replay the same graph. The graph cache (cache.h) is keyed
 * by it, and log messages print it with cgr__sig_format().
 *
 * A signature carries its own 64-bit hash, computed by cgr__sig_init().
 * Always build signatures with cgr__sig_init(): it also zeroes the unused
 * dims, so two equal signatures are equal byte for byte. Equality compares
 * the stored hashes first (a fast reject) and then every field, so two
 * different signatures whose hashes collide are still told apart.
 */
#ifndef CGR_SIGNATURE_H
#define CGR_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#include "cgr/cgr.h"

/** At most this many dynamic dims per step: every axis of every tensor. */
#define CGR__SIG_MAX_DIMS (CGR_MAX_TENSORS * CGR_MAX_RANK)

typedef struct cgr__sig {
    uint64_t step;                     /**< the step's id */
    uint64_t hash;                     /**< cgr__sig_hash() of the fields below */
    uint32_t n_dims;                   /**< dynamic dims in use, 0..CGR__SIG_MAX_DIMS */
    uint32_t reserved_;                /**< zero */
    int64_t dims[CGR__SIG_MAX_DIMS];   /**< bucketed values; zero past n_dims */
} cgr__sig;

/** How the formatter names dim i: "x.0" for {"x", 0}, "x" for {"x", -1}. */
typedef struct cgr__sig_dim_name {
    const char *tensor;  /**< NULL prints "d<i>" */
    int axis;            /**< printed after a dot; negative: the tensor name alone */
} cgr__sig_dim_name;

/**
 * Fills *s: step, n_dims bucketed dim values (dims may be NULL when n_dims
 * is 0), zeroes for the unused dims, and the hash.
 * CGR_STATUS_INVALID_ARGUMENT when s is NULL, n_dims > CGR__SIG_MAX_DIMS or
 * dims is NULL with n_dims > 0; *s is left unchanged then.
 */
cgr_status cgr__sig_init(cgr__sig *s, uint64_t step, uint32_t n_dims, const int64_t *dims);

/**
 * The 64-bit hash of step, n_dims and dims[0..n_dims), computed afresh (the
 * stored s->hash is not read). Dims past n_dims do not take part.
 * Deterministic across runs and machines. 0 for NULL or an n_dims out of range.
 */
uint64_t cgr__sig_hash(const cgr__sig *s);

/**
 * 1 when a and b name the same shape: same stored hash, step, n_dims and
 * dims[0..n_dims); 0 otherwise (also when either is NULL).
 */
int cgr__sig_equal(const cgr__sig *a, const cgr__sig *b);

/**
 * Writes "step 3 [x.0=16, x.1=1024]" into buf, for log messages. names
 * holds s->n_dims entries, or is NULL to print every dim as "d<i>".
 * *len_out (may be NULL) receives the length of the whole text without the
 * terminating NUL, whatever cap is, as snprintf does. When the text does
 * not fit (len >= cap), buf receives as much of it as fits and, when cap is
 * at least 4, its last three characters are replaced by "..." to show the
 * cut. buf is always NUL-terminated when cap > 0; buf may be NULL when cap
 * is 0 (to measure). CGR_STATUS_INVALID_ARGUMENT when s is NULL, its n_dims
 * is out of range, or buf is NULL with cap > 0; nothing is written then.
 */
cgr_status cgr__sig_format(const cgr__sig *s, const cgr__sig_dim_name *names, char *buf,
                           size_t cap, size_t *len_out);

#endif
