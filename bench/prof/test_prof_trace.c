/*
 * cgr-bench's trace in memory (bench/prof/prof.c, prof_trace_buf) on
 * hand-made records: windows added one by one, the caps, and an empty
 * trace. No GPU.
 */
#include "prof.h"
#include "test.h"
#include "prof_records.h"

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
