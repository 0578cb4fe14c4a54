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
/* Adds a step's run counters to the runtime's (cgr_runtime_stats says which). */
void cgr__runtime_stats_add(cgr_runtime_stats *to, const cgr_step_stats *s);
/*
 * Validation of what callers describe (validate.c); pure C, unit-tested.
 * The caller's options (the struct_size rule, then every field's range) into *out.
 */
cgr_status cgr__options_load(const cgr_options *opt, cgr_options *out);
/* The caller's step description (the struct_size rule, then every rule) into *out. */
cgr_status cgr__step_desc_load(const cgr_step_desc *desc, cgr_step_desc *out);
/*
 * Makes o own its strings: dump_dir, or CGR_DUMP_DIR when dump_dir is
 * NULL, is replaced by a heap copy (NULL when neither names a directory),
 * and so are frozen_allow and profile.path (or CGR_PROFILE's path), so
 * the caller may free or reuse its own strings once the runtime exists.
 * CGR_DIAGNOSE, CGR_FROZEN_RECHECK and CGR_PROFILE are read here too. On
 * failure the three strings are NULL, so cgr__options_free_strings() is
 * always safe.
 */
cgr_status cgr__options_own_strings(cgr_options *o);
/*
 * CGR_PROFILE's text ("RUNS[,skip=N][,path=PREFIX]") into out's runs and
 * skip; *path points into text at the prefix, or is NULL.
 */
cgr_status cgr__profile_parse(const char *text, cgr_profile_options *out, const char **path);
/* Frees what cgr__options_own_strings() allocated. */
void cgr__options_free_strings(cgr_options *o);

cgr_status cgr__tensor_bytes(const cgr_tensor_desc *t, size_t *bytes);
/* Bucket policy of dyn_dims[j] (validated); and one padding element in a dtype. */
cgr_status cgr__dyn_policy(const cgr_dyn_dim *dd, int j, cgr__bucket_policy *p);
cgr_status cgr__pad_bytes(cgr_dtype t, double v, unsigned char out[8], int *nonzero);

#endif
