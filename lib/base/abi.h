/*
 * Versioned public structs: the struct_size rule of cgr_options,
 * cgr_step_desc and cgr_nccl_options, and the size rule of the structs cgr
 * fills in (cgr.h states both for callers).
 *
 * Later versions of every such struct only add fields at its end. When a
 * field is added, its offset must be at least the sizeof the struct had
 * before, so that no new field lies in the trailing padding of an older
 * caller's struct (that padding would be read or written as the field).
 *
 * The structs callers give start with `size_t struct_size`. A new field's
 * default is what the library's init writes; an older caller, whose
 * struct_size stops before the field, gets that default. The structs cgr
 * fills in carry no size: the public call's inline wrapper passes the
 * sizeof the caller's header declares, cgr writes the fields both know and
 * zeros those it does not.
 */
#ifndef CGR_ABI_H
#define CGR_ABI_H

#include <stddef.h>

#include "cgr/cgr.h"

/* Bytes up to the end of `field`: a struct's size without trailing padding. */
#define CGR__END_OF(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* What the first version of each struct held: a smaller size is refused. */
#define CGR__OPTIONS_MIN_SIZE CGR__END_OF(cgr_options, arm_timeout_us)
#define CGR__STEP_DESC_MIN_SIZE CGR__END_OF(cgr_step_desc, armable)
#define CGR__STEP_STATS_MIN_SIZE CGR__END_OF(cgr_step_stats, profile)
#define CGR__RUNTIME_STATS_MIN_SIZE CGR__END_OF(cgr_runtime_stats, pinned_bytes)
#define CGR__SHAPE_INFO_MIN_SIZE CGR__END_OF(cgr_shape_info, text)

/*
 * Reads a caller's input struct: src begins with its struct_size, which
 * must lie in min_size..CGR_MAX_STRUCT_SIZE; bytes past `size` (a newer
 * caller's fields) must be zero. Copies the first min(struct_size, size)
 * bytes of src over dst, which holds the defaults of a full struct, and
 * sets dst's struct_size to `size`. `type` names the struct in messages
 * ("cgr_options"); its init function is type followed by "_init".
 * CGR_STATUS_INVALID_ARGUMENT, with dst unchanged, when src is refused.
 */
cgr_status cgr__struct_in(void *dst, size_t size, const void *src, size_t min_size,
                          const char *type);
/*
 * An init function's work for a caller's struct of struct_size bytes:
 * checks the size as cgr__struct_in does, zeros all of it, copies the
 * first min(struct_size, size) bytes of `defaults` (a full struct) and
 * sets its struct_size to struct_size. Never writes past struct_size.
 */
cgr_status cgr__struct_init(void *dst, size_t struct_size, const void *defaults, size_t size,
                            size_t min_size, const char *type);
/*
 * Checks the size of a caller's output struct, `given` bytes (the sizeof
 * its header declares, passed by the public call's inline wrapper): it must
 * lie in min_size..CGR_MAX_STRUCT_SIZE. `fn` names the public call (its
 * inline wrapper, "cgr_step_get_stats") in the message.
 * CGR_STATUS_INVALID_ARGUMENT when refused; the caller then writes nothing.
 */
cgr_status cgr__struct_out_check(size_t given, size_t min_size, const char *fn);
/*
 * Fills a checked output struct of `given` bytes from src, the library's
 * full struct of `size` bytes: the first min(given, size) bytes are
 * copied, and the fields of a newer caller's struct that this library
 * does not know are zeroed. Never writes past `given`.
 */
void cgr__struct_out(void *dst, size_t given, const void *src, size_t size);

#endif
