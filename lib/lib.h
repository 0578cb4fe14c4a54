/*
 * The top layer: creating and destroying runtimes and steps, and the
 * validation of what callers describe (pure C, unit-tested).
 */
#ifndef CGR_LIB_H
#define CGR_LIB_H

#include "bucket.h"
#include "core.h"

/* CGR_STATUS_BUSY, reported as from `fn`, when another thread holds s's
 * acquired slot or waits on s; else OK (lock held). */
cgr_status cgr__step_check_idle(const cgr_step *s, const char *fn);
/* Frees a step and unlinks it (rt->lock held, s not busy, its device current,
 * the stream synchronized). */
void cgr__step_free(cgr_step *s);
/* Validation shared by create calls; pure C, unit-tested. */
cgr_status cgr__validate_options(const cgr_options *opt);
cgr_status cgr__validate_step_desc(const cgr_step_desc *d);
cgr_status cgr__tensor_bytes(const cgr_tensor_desc *t, size_t *bytes);
/* Bucket policy of dyn_dims[j] (validated); and one padding element in a dtype. */
cgr_status cgr__dyn_policy(const cgr_dyn_dim *dd, int j, cgr__bucket_policy *p);
cgr_status cgr__pad_bytes(cgr_dtype t, double v, unsigned char out[8], int *nonzero);

#endif
