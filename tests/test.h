/*
 * Minimal test assertions in the style of libuv's ASSERT_EQ: a failure
 * prints the expression, both values and file:line, then exits 1. Tests are
 * separate processes under meson, so exiting is the right way to fail one.
 * Exit code 77 means "skipped" to meson.
 */
#ifndef CGR_TEST_H
#define CGR_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_SKIP 77

/* The whole file, NUL-terminated, for the caller to free; NULL on error. */
static inline char *test_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/*
 * A lint's check of itself on planted text, so that it cannot pass by
 * finding nothing; the messages the planted faults draw on stderr are
 * announced as expected. 1 when check() passed; 0 after a FAIL line.
 */
static inline int test_self_check(const char *name, int (*check)(void))
{
    fprintf(stderr, "%s: self-check (the messages below are expected)\n", name);
    if (!check()) {
        fprintf(stderr, "%s: FAIL: the self-check on planted text\n", name);
        return 0;
    }
    fprintf(stderr, "%s: self-check passed\n", name);
    return 1;
}

#define TEST_FAIL_(fmt, ...)                                                               \
    do {                                                                                   \
        fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__);               \
        exit(1);                                                                           \
    } while (0)

#define ASSERT(expr)                                                                       \
    do {                                                                                   \
        if (!(expr))                                                                       \
            TEST_FAIL_("assertion failed: %s", #expr);                                     \
    } while (0)

#define ASSERT_INT_OP_(a, op, b)                                                           \
    do {                                                                                   \
        long long a_ = (long long)(a), b_ = (long long)(b);                                \
        if (!(a_ op b_))                                                                   \
            TEST_FAIL_("%s %s %s failed: %lld vs %lld", #a, #op, #b, a_, b_);              \
    } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT_OP_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP_(a, >=, b)

#define ASSERT_U64_EQ(a, b)                                                                \
    do {                                                                                   \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                   \
        if (a_ != b_)                                                                      \
            TEST_FAIL_("%s == %s failed: %" PRIu64 " vs %" PRIu64, #a, #b, a_, b_);        \
    } while (0)

#define ASSERT_PTR_EQ(a, b)                                                                \
    do {                                                                                   \
        const void *a_ = (const void *)(a), *b_ = (const void *)(b);                       \
        if (a_ != b_)                                                                      \
            TEST_FAIL_("%s == %s failed: %p vs %p", #a, #b, a_, b_);                       \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                                \
    do {                                                                                   \
        const char *a_ = (a), *b_ = (b);                                                   \
        if (strcmp(a_, b_) != 0)                                                           \
            TEST_FAIL_("%s == %s failed: \"%s\" vs \"%s\"", #a, #b, a_, b_);               \
    } while (0)

/* A cgr status check that also prints the library's last-error message. */
#define ASSERT_STATUS(call, want)                                                          \
    do {                                                                                   \
        cgr_status s_ = (call);                                                            \
        if (s_ != (want))                                                                  \
            TEST_FAIL_("%s returned %s, expected %s (last error: %s)", #call,              \
                       cgr_status_name(s_), cgr_status_name(want), cgr_last_error());      \
    } while (0)

#define ASSERT_OK(call) ASSERT_STATUS(call, CGR_STATUS_OK)

#endif
