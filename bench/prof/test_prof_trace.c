/*
 * cgr-bench's trace in memory (bench/prof/prof.c, prof_trace_buf) on
 * hand-made records: windows added one by one, the caps, and an empty
 * trace. No GPU.
 */
#include "prof.h"
#include "test.h"

static cgr__prof_rec rec(int kind, uint64_t start, uint64_t end, uint32_t corr, uint32_t name)
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

/*
 * ABAB over 4 runs, times in ns, as the unit test of prof_report.c makes
 * them. Eager runs: 1 us launch call, one 100 ns kernel in it. Graph
 * runs: 100 ns launch, two overlapping kernels [+100, +300) and [+200,
 * +400) plus a 100 ns memset. All on one stream.
 */
static void make_window(cgr__prof_run *runs, cgr__prof_rec *r, size_t *n, int32_t *of)
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

static const char *const names[3] = {"<unknown>", "small_kernel(float*)", "big_kernel"};

/* Brackets and strings of a JSON text balance (a cheap validity check). */
static int json_balanced(const char *t)
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

static char *written(FILE *f)
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

static size_t count(const char *t, const char *sub)
{
    size_t k = 0;
    for (const char *c = t; (c = strstr(c, sub)); c++)
        k++;
    return k;
}

/* Windows built in memory, written out at the end. */
static void test_trace_buf(void)
{
    cgr__prof_run runs[4];
    cgr__prof_rec r[8];
    int32_t of[8];
    size_t n = 0;
    make_window(runs, r, &n, of);

    prof_trace_buf t;
    memset(&t, 0, sizeof t);
    ASSERT_EQ(prof_trace_buf_add(&t, 1, "first \"window\"", r, n, NULL, names, 3, runs[0].begin),
              0);
    ASSERT_EQ(prof_trace_buf_add(&t, 2, "second", r, n, of, names, 3, runs[0].begin), 0);
    FILE *f = tmpfile();
    ASSERT(f != NULL);
    ASSERT_EQ(prof_trace_buf_write(&t, f), 0);
    char *s = written(f);
    ASSERT(json_balanced(s));
    ASSERT(strncmp(s, "{\"traceEvents\":[\n{\"name\":\"process_name\"", 39) == 0);
    ASSERT(strstr(s, "\"args\":{\"name\":\"first \\\"window\\\"\"}}") != NULL);
    ASSERT(strstr(s, "\"sort_index\":2}") != NULL);
    ASSERT(strstr(s, "\"ts\":10.100") != NULL);
    const char *tail = "}\n],\"displayTimeUnit\":\"ns\"}\n";
    ASSERT(strcmp(s + strlen(s) - strlen(tail), tail) == 0);
    ASSERT_EQ(count(s, "\"ph\":\"X\""), 2 * n);
    ASSERT_EQ(count(s, "\"run\":"), n); /* only the second window has runs */
    ASSERT_EQ(count(s, "\"cat\":\"kernel\""), count(s, "\"grid\":["));
    free(s);
    ASSERT_U64_EQ(t.out.left_out, 0);
    prof_trace_buf_free(&t);

    /* Caps: a window's records past them are left out, its metadata is not. */
    memset(&t, 0, sizeof t);
    t.out.max_events = 5; /* process name and sort index, one stream, 2 records */
    ASSERT_EQ(prof_trace_buf_add(&t, 1, "capped", r, n, NULL, names, 3, 0), 1);
    ASSERT_U64_EQ(t.out.left_out, n - 2);
    ASSERT_EQ(prof_trace_buf_add(&t, 2, "after", r, n, NULL, names, 3, 0), 1);
    ASSERT_U64_EQ(t.out.left_out, 2 * n - 2);
    f = tmpfile();
    ASSERT(f != NULL);
    ASSERT_EQ(prof_trace_buf_write(&t, f), 0);
    s = written(f);
    ASSERT(json_balanced(s));
    ASSERT_EQ(count(s, "\"ph\":\"X\""), 2);
    ASSERT(strstr(s, "\"after\"") != NULL);
    free(s);
    prof_trace_buf_free(&t);
    t.out.max_bytes = 1; /* the first record already passes it */
    ASSERT_EQ(prof_trace_buf_add(&t, 1, "bytes", r, n, NULL, names, 3, 0), 1);
    ASSERT_U64_EQ(t.out.left_out, n);
    prof_trace_buf_free(&t);

    /* Nothing added: still a valid, empty trace. */
    f = tmpfile();
    ASSERT(f != NULL);
    ASSERT_EQ(prof_trace_buf_write(&t, f), 0);
    s = written(f);
    ASSERT_STR_EQ(s, "{\"traceEvents\":[\n\n],\"displayTimeUnit\":\"ns\"}\n");
    free(s);
}

int main(void)
{
    test_trace_buf();
    printf("prof_trace: ok\n");
    return 0;
}
