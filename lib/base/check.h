/*
 * Error recording and the check macros (one family, NCCL style).
 *
 * Every failure goes through cgr__fail(), which formats the thread-local
 * last-error message "what failed: why" and returns the status,
 * so a check is one line at the call site and the caller just propagates.
 * None of these exits, aborts or prints.
 */
#ifndef CGR_CHECK_H
#define CGR_CHECK_H

#include "cgr/cgr.h"

#if defined(__GNUC__)
#define CGR__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CGR__PRINTF(f, a)
#endif

/** Records a failure in the thread's last-error message and returns s. */
cgr_status cgr__fail(cgr_status s, const char *fmt, ...) CGR__PRINTF(2, 3);
/*
 * Records a failed CUDA call (expr is its text) and maps the error to a
 * status. Messages are for users and carry no source position (error.c).
 */
cgr_status cgr__cuda_fail(int err, const char *expr);
/** Empties the thread's last-error message. */
void cgr__clear_error(void);
/** Appends to the thread's last-error message ("; " separated). */
void cgr__error_append(const char *fmt, ...) CGR__PRINTF(1, 2);
/* Makes the message lead with "fn: " (a public function's name) unless it already does. */
void cgr__error_lead(const char *fn);
/**
 * Records a bug in cgr itself (see CGR_BUG) and returns CGR_STATUS_INTERNAL.
 * Where assertions are compiled in (NDEBUG not defined) it prints the
 * message to stderr and aborts instead, as a failed assert() would.
 */
cgr_status cgr__bug(const char *file, int line, const char *fmt, ...) CGR__PRINTF(3, 4);

/*
 * A recorded failure's status, as the macros below return it. For clang's
 * static analyzer (tests/analyze.sh), which does not look into error.c from
 * another file, it also says that a failure is never CGR_STATUS_OK, so that
 * a caller's failure path is not taken for a success; compilers see (s).
 */
#ifdef __clang_analyzer__
static inline cgr_status cgr__analyzer_failed(cgr_status s)
{
    return s == CGR_STATUS_OK ? CGR_STATUS_INTERNAL : s;
}
#define CGR__FAILED(s) cgr__analyzer_failed(s)
#else
#define CGR__FAILED(s) (s)
#endif

/* Messages are for users, so a failure carries no source position; only cgr's bugs say where. */
#define CGR_FAIL(status, ...) CGR__FAILED(cgr__fail((status), __VA_ARGS__))

/*
 * A condition that cgr's own code guarantees turned out false: a bug in cgr,
 * not a mistake of the caller, so no caller-blaming status fits. Builds with
 * assertions (meson's b_ndebug=false, which CI's sanitizer build uses) stop
 * right there, so the test that reached the bug fails where it happened;
 * release builds return CGR_STATUS_INTERNAL with the message instead of
 * going on with inconsistent state. Use it only where the condition cannot
 * be reached through the public API, whatever the caller does.
 */
#define CGR_BUG(...) CGR__FAILED(cgr__bug(__FILE__, __LINE__, __VA_ARGS__))

/*
 * Every CUDA, cuBLAS, cuDNN, NCCL, CUPTI and driver call is checked with the
 * macros below or by hand, except a release (a destroy or a free) of what
 * cgr made, on teardown or on a path already failing, which is written
 * (void)call(...): it fails only for a handle that is not one, cgr's own
 * bug, or in a context that an earlier error broke, which the run's launch
 * or wait, or the destroy call's synchronize, reports; nothing could act on
 * its status. The unit test status_checked finds a status dropped
 * without the (void).
 */
#define CGR_CUDA_TRY(expr)                                                                 \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            return CGR__FAILED(cgr__cuda_fail((int)e_, #expr));                            \
    } while (0)

#define CGR_CUDA_TRY_GOTO(expr, st, label)                                                 \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            (st) = CGR__FAILED(cgr__cuda_fail((int)e_, #expr));                            \
            goto label;                                                                    \
        }                                                                                  \
    } while (0)

/* Propagates a cgr_status. */
#define CGR_TRY(expr)                                                                      \
    do {                                                                                   \
        cgr_status s_ = (expr);                                                            \
        if (s_ != CGR_STATUS_OK)                                                           \
            return s_;                                                                     \
    } while (0)

#define CGR_TRY_GOTO(expr, st, label)                                                      \
    do {                                                                                   \
        (st) = (expr);                                                                     \
        if ((st) != CGR_STATUS_OK)                                                         \
            goto label;                                                                    \
    } while (0)

#endif
