/*
 * Shared by the unit tests of the profile's reports (test_prof_report.c)
 * and of cgr-bench's trace in memory (bench/prof/test_prof_trace.c):
 * hand-made records and windows, and checks of the JSON they write.
 * Needs test.h and prof_report.h first.
 */
#ifndef CGR_TEST_PROF_RECORDS_H
#define CGR_TEST_PROF_RECORDS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline cgr__prof_rec rec(int kind, uint64_t start, uint64_t end, uint32_t corr,
                                uint32_t name)
{
    cgr__prof_rec r;
    memset(&r, 0, sizeof r);
    r.kind = (uint8_t)kind;
    r.start = start;
    r.end = end;
    r.correlation = corr;
    r.name_id = name;
    r.stream = 7;
    return r;
}

/* The kernel names that make_window's records refer to, by name id. */
static const char *const names[3] = {"<unknown>", "small_kernel(float*)", "big_kernel"};

/*
 * ABAB over 4 runs, times in ns. Eager runs: 1 us launch call, one 100 ns
 * kernel in it: the GPU is idle 90% of the run -> launch-bound. Graph
 * runs: 100 ns launch, two overlapping kernels [+100, +300) and [+200,
 * +400) plus a 100 ns memset.
 */
static inline void make_window(cgr__prof_run *runs, cgr__prof_rec *r, size_t *n, int32_t *of)
{
    size_t k = 0;
    for (int j = 0; j < 4; j++) {
        uint64_t b = 10000u * (uint64_t)j;
        int eager = (j & 1) == 0;
        runs[j].begin = b;
        runs[j].end = b + (eager ? 1000 : 100);
        runs[j].cpu_ns = eager ? 900 : 80;
        runs[j].mode = eager ? CGR__PROF_EAGER : CGR__PROF_GRAPH;
        if (eager) {
            of[k] = j;
            r[k++] = rec(CGR__PROF_KERNEL, b + 500, b + 600, 0, 1);
        } else {
            of[k] = j;
            r[k++] = rec(CGR__PROF_KERNEL, b + 100, b + 300, 0, 2);
            of[k] = j;
            r[k++] = rec(CGR__PROF_KERNEL, b + 200, b + 400, 0, 1);
            of[k] = j;
            r[k++] = rec(CGR__PROF_MEMSET, b + 400, b + 500, 0, 0);
        }
    }
    *n = k;
}

/* Brackets and strings of a JSON text balance (a cheap validity check). */
static inline int json_balanced(const char *t)
{
    int depth = 0, in_str = 0;
    for (; *t; t++) {
        if (in_str) {
            if (*t == '\\' && t[1])
                t++;
            else if (*t == '"')
                in_str = 0;
            continue;
        }
        if (*t == '"')
            in_str = 1;
        else if (*t == '{' || *t == '[')
            depth++;
        else if (*t == '}' || *t == ']')
            if (--depth < 0)
                return 0;
    }
    return depth == 0 && !in_str;
}

static inline char *written(FILE *f)
{
    long len = ftell(f);
    ASSERT(len > 0);
    rewind(f);
    char *buf = calloc(1, (size_t)len + 1);
    ASSERT(buf != NULL);
    ASSERT_EQ(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return buf;
}

/*
 * (text) = what writer(f, ...) writes to a fresh temporary file f, which
 * must succeed (return 0); the caller frees the text.
 */
#define WRITE_TEXT(text, writer, ...)                                                      \
    do {                                                                                   \
        FILE *f_ = tmpfile();                                                              \
        ASSERT(f_ != NULL);                                                                \
        ASSERT_EQ(writer(f_, __VA_ARGS__), 0);                                             \
        (text) = written(f_);                                                              \
    } while (0)

static inline size_t count(const char *t, const char *sub)
{
    size_t k = 0;
    for (const char *c = t; (c = strstr(c, sub)); c++)
        k++;
    return k;
}

#endif
