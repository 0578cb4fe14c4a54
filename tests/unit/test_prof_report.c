/*
 * The profile's arithmetic (lib/base/prof_report.c) on hand-made records:
 * the union of intervals, attribution by correlation and by time (with
 * runs in flight together), the per-mode figures, the verdict, the top
 * kernels, the host ranges (cgr's phases, the user's NVTX) and the three
 * writers, which print '.' decimals under a program's comma-decimal locale
 * too (where one is installed). No GPU.
 */
#define _POSIX_C_SOURCE 200809L /* newlocale, uselocale */
#include <locale.h>
#include <math.h>

#include "prof_report.h"
#include "test.h"
#include "prof_records.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9 * (1.0 + fabs(b)))

static uint64_t union_ns(const cgr__prof_rec *r, size_t n)
{
    cgr__prof_tally t = {0};
    for (size_t i = 0; i < n; i++)
        cgr__prof_tally_add(&t, &r[i]);
    return cgr__prof_tally_union(&t);
}

/* make_window's runs and records, and the run of each record. */
typedef struct window {
    cgr__prof_run runs[4];
    cgr__prof_rec r[8];
    int32_t of[8];
    size_t n;
} window;

/* Fills *w by make_window and summarizes it into *s, `dropped` records lost. */
static void summarize_window(window *w, uint64_t dropped, cgr__prof_summary *s)
{
    make_window(w->runs, w->r, &w->n, w->of);
    ASSERT_EQ(cgr__prof_summarize(w->r, w->n, w->of, w->runs, 4, names, 3, dropped, s), 0);
}

static void test_union(void)
{
    cgr__prof_rec r[5] = {rec(1, 0, 10, 0, 0), rec(1, 5, 8, 0, 0), rec(1, 8, 15, 0, 0),
                          rec(1, 20, 30, 0, 0), rec(1, 30, 31, 0, 0)};
    /* [0,15) and [20,31): 15 + 11. */
    ASSERT_U64_EQ(union_ns(r, 5), 26);
    ASSERT_U64_EQ(union_ns(r, 1), 10);
    ASSERT_U64_EQ(union_ns(r, 0), 0);
}

/*
 * Two runs in flight together: run 1's launch call begins before run 0's
 * GPU work. By time, run 0's late kernel would go to run 1; by
 * correlation each lands where it belongs.
 */
static void test_attribute(void)
{
    cgr__prof_run runs[2] = {{.begin = 0, .end = 10, .mode = CGR__PROF_EAGER},
                             {.begin = 20, .end = 25, .mode = CGR__PROF_GRAPH}};
    cgr__prof_rec r[4] = {rec(1, 5, 15, 100, 0), rec(1, 30, 40, 101, 0), rec(1, 40, 50, 200, 0),
                          rec(1, 60, 70, 999, 0)};
    cgr__prof_link links[3] = {{.correlation = 200, .run = 1},
                               {.correlation = 101, .run = 0},
                               {.correlation = 100, .run = 0}};
    int32_t of[4];
    uint64_t by_time = 9;
    cgr__prof_attribute(r, 4, links, 3, runs, 2, of, &by_time);
    ASSERT_EQ(of[0], 0);
    ASSERT_EQ(of[1], 0); /* after run 1 began: time alone would say 1 */
    ASSERT_EQ(of[2], 1);
    ASSERT_EQ(of[3], -1); /* a call outside the runs */
    ASSERT_U64_EQ(by_time, 0);
    /* Without any link: by time. */
    cgr__prof_rec early = rec(1, 0, 1, 5, 0);
    cgr__prof_rec t[3] = {r[0], r[1], early};
    t[2].start = 0;
    cgr__prof_attribute(t, 3, NULL, 0, runs, 2, of, &by_time);
    ASSERT_EQ(of[0], 0);
    ASSERT_EQ(of[1], 1);
    ASSERT_EQ(of[2], 0); /* begins with run 0's launch call */
    ASSERT_U64_EQ(by_time, 3);
    cgr__prof_rec before = rec(1, 0, 1, 5, 0);
    cgr__prof_run late = {.begin = 10, .end = 11, .mode = 0};
    cgr__prof_attribute(&before, 1, NULL, 0, &late, 1, of, &by_time);
    ASSERT_EQ(of[0], -1);
    ASSERT_U64_EQ(by_time, 0);
}

static void test_summarize(void)
{
    window w;
    cgr__prof_summary s;
    summarize_window(&w, 2, &s);
    const cgr__prof_mode *e = &s.mode[CGR__PROF_EAGER], *g = &s.mode[CGR__PROF_GRAPH];
    ASSERT_U64_EQ(e->runs, 2);
    ASSERT_U64_EQ(g->runs, 2);
    /* Eager: ready at the launch call, done at its end (after the kernel). */
    ASSERT(NEAR(e->wall_us, 1.0));
    ASSERT(NEAR(e->cpu_us, 0.9));
    ASSERT(NEAR(e->busy_us, 0.1));
    ASSERT(NEAR(e->busy_union_us, 0.1));
    ASSERT(NEAR(e->kernels, 1.0));
    ASSERT(NEAR(e->idle_share, 0.9));
    /* Graph: ready at b, last work ends at b + 500. */
    ASSERT(NEAR(g->wall_us, 0.5));
    ASSERT(NEAR(g->busy_us, 0.5));       /* 200 + 200 + 100 */
    ASSERT(NEAR(g->busy_union_us, 0.4)); /* [100, 500) */
    ASSERT(NEAR(g->kernels, 2.0));
    ASSERT(NEAR(g->memsets, 1.0));
    ASSERT(NEAR(g->idle_share, 0.2));
    ASSERT_EQ(s.verdict, CGR__PROF_LAUNCH_BOUND);
    ASSERT(NEAR(s.speedup, 2.0));
    ASSERT_U64_EQ(s.records, w.n);
    ASSERT_U64_EQ(s.dropped, 2);
    /* Top: big_kernel 400 ns (2 calls), small_kernel 2x100 + 2x200 = 600 ns (4 calls). */
    ASSERT_EQ(s.n_top, 2);
    ASSERT_STR_EQ(s.top[0].name, "small_kernel(float*)");
    ASSERT_U64_EQ(s.top[0].calls, 4);
    ASSERT(NEAR(s.top[0].total_us, 0.6));
    ASSERT(NEAR(s.top[0].mean_us, 0.15));
    ASSERT(NEAR(s.top[0].share, 0.6));
    ASSERT_STR_EQ(s.top[1].name, "big_kernel");
    ASSERT(NEAR(s.top[1].share, 0.4));

    /* Pipelined: a run whose launch call began before the run before ended on the GPU waits. */
    cgr__prof_run p[2] = {{.begin = 0, .end = 10, .mode = 0}, {.begin = 20, .end = 30, .mode = 0}};
    cgr__prof_rec pr[2] = {rec(1, 10, 1000, 0, 1), rec(1, 1000, 2000, 0, 1)};
    int32_t pof[2] = {0, 1};
    ASSERT_EQ(cgr__prof_summarize(pr, 2, pof, p, 2, names, 3, 0, &s), 0);
    /* Run 0: 0 .. 1000; run 1: ready at 1000, not 20: 1000 .. 2000. */
    ASSERT(NEAR(s.mode[0].wall_us, 1.0));
    ASSERT(NEAR(s.mode[0].idle_share, 1.0 - 1990.0 / 2000.0));
    ASSERT_EQ(s.verdict, CGR__PROF_GPU_BOUND);
    ASSERT(s.speedup == 0.0); /* no graph run */

    /* Nothing measured: no verdict. */
    ASSERT_EQ(cgr__prof_summarize(NULL, 0, NULL, NULL, 0, names, 3, 0, &s), 0);
    ASSERT_EQ(s.verdict, CGR__PROF_UNKNOWN);
    ASSERT_STR_EQ(cgr__prof_verdict_name(CGR__PROF_LAUNCH_BOUND), "launch-bound");
    ASSERT_STR_EQ(cgr__prof_verdict_name(CGR__PROF_GPU_BOUND), "gpu-bound");
    ASSERT_STR_EQ(cgr__prof_verdict_name(7), "unknown");
}

/* The ranking's order where total time, calls and names disagree; what it leaves out; the cut. */
static void test_rank(void)
{
    static const char *const k_names[6] = {"a", "b", "c", "d", "memcpy", NULL};
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    const char *nm[6] = {k_names[0], k_names[1], k_names[2], k_names[3], k_names[4], long_name};
    /* a: 3 x 10 ns, b: 1 x 50, c: 2 x 15, d: 3 x 10; one more b in no run, a copy, e long. */
    cgr__prof_rec r[12] = {rec(1, 0, 10, 0, 0),   rec(1, 10, 20, 0, 0),  rec(1, 20, 30, 0, 0),
                           rec(1, 30, 80, 0, 1),  rec(1, 80, 95, 0, 2),  rec(1, 95, 110, 0, 2),
                           rec(1, 110, 120, 0, 3), rec(1, 120, 130, 0, 3), rec(1, 130, 140, 0, 3),
                           rec(1, 140, 940, 0, 1), rec(2, 0, 900, 0, 4), rec(1, 0, 1, 0, 5)};
    int32_t of[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0};
    cgr__prof_kernel top[6];
    ASSERT_EQ(cgr__prof_rank_kernels(r, 12, of, nm, 6, top, 6), 5);
    /* b by time; a before d by name (same time and calls); c last (fewer calls). */
    static const char *const order[4] = {"b", "a", "d", "c"};
    for (int i = 0; i < 4; i++)
        ASSERT_STR_EQ(top[i].name, order[i]);
    ASSERT_U64_EQ(top[0].calls, 1);
    ASSERT(NEAR(top[0].total_us, 0.05));
    ASSERT(NEAR(top[0].share, 50.0 / 141.0));
    ASSERT_U64_EQ(top[3].calls, 2);
    ASSERT(NEAR(top[3].mean_us, 0.015));
    /* The long name is cut to the row's size and says so. */
    ASSERT_EQ(strlen(top[4].name), sizeof top[4].name - 1);
    ASSERT(strcmp(top[4].name + sizeof top[4].name - 4, "...") == 0);
    /* Without run_of every kernel counts: b's second record makes it 850 ns. */
    ASSERT_EQ(cgr__prof_rank_kernels(r, 12, NULL, nm, 6, top, 2), 2);
    ASSERT_STR_EQ(top[0].name, "b");
    ASSERT_U64_EQ(top[0].calls, 2);
    ASSERT_STR_EQ(top[1].name, "a");
    ASSERT_EQ(cgr__prof_rank_kernels(r, 12, of, nm, 6, top, 0), 0);
}

static void test_writers(void)
{
    window w;
    cgr__prof_summary s;
    summarize_window(&w, 0, &s);

    char *t;
    WRITE_TEXT(t, cgr__prof_write_text, "tiny", &s);
    ASSERT(strstr(t, "step 'tiny'") != NULL);
    ASSERT(strstr(t, "verdict: launch-bound") != NULL);
    ASSERT(strstr(t, "idle 90.0%") != NULL);
    ASSERT(strstr(t, "2.00x") != NULL);
    ASSERT(strstr(t, "small_kernel(float*)") != NULL);
    free(t);

    WRITE_TEXT(t, cgr__prof_write_json, "ti\"ny", &s);
    ASSERT(json_balanced(t));
    ASSERT(strstr(t, "\"step\":\"ti\\\"ny\"") != NULL);
    ASSERT(strstr(t, "\"verdict\":\"launch-bound\"") != NULL);
    ASSERT(strstr(t, "\"eager\":{\"runs\":2,") != NULL);
    ASSERT(strstr(t, "\"idle_share\":0.9}") != NULL);
    free(t);

    WRITE_TEXT(t, cgr__prof_write_trace, "tiny", w.r, w.n, w.of, w.runs, 4, names, 3, NULL, 0);
    ASSERT(json_balanced(t));
    ASSERT(strncmp(t, "{\"traceEvents\":[", 16) == 0);
    ASSERT(strstr(t, "\"run 0 (eager)\"") != NULL);
    ASSERT(strstr(t, "\"run 3 (graph)\"") != NULL);
    ASSERT(strstr(t, "\"cat\":\"memset\"") != NULL);
    /* Run 1 begins 10 us after run 0 (the origin); its first kernel 0.1 us later. */
    ASSERT(strstr(t, "\"ts\":10.100") != NULL);
    size_t slices = 0;
    for (const char *c = t; (c = strstr(c, "\"ph\":\"X\"")); c++)
        slices++;
    ASSERT_EQ(slices, 4 + w.n);
    free(t);

    /* Each kind of record under its own name and with its own arguments. */
    cgr__prof_rec k[4] = {rec(1, 0, 10, 0, 2), rec(1, 10, 20, 0, 9), rec(2, 20, 30, 0, 0),
                          rec(2, 30, 40, 0, 0)};
    k[0].grid[0] = 3;
    k[0].block[0] = 128;
    k[2].copy_kind = 1; /* HtoD */
    k[2].bytes = 4096;
    k[3].copy_kind = 200; /* a kind this cgr does not know */
    WRITE_TEXT(t, cgr__prof_write_trace, "kinds", k, 4, NULL, NULL, 0, names, 3, NULL, 0);
    ASSERT(json_balanced(t));
    ASSERT(strstr(t, "{\"name\":\"big_kernel\",\"cat\":\"kernel\"") != NULL);
    ASSERT(strstr(t, "\"grid\":[3,0,0],\"block\":[128,0,0]") != NULL);
    ASSERT(strstr(t, "{\"name\":\"<unknown>\",\"cat\":\"kernel\"") != NULL);
    ASSERT(strstr(t, "{\"name\":\"memcpy HtoD\",\"cat\":\"memcpy\"") != NULL);
    ASSERT(strstr(t, "\"bytes\":4096,") != NULL);
    ASSERT(strstr(t, "{\"name\":\"memcpy\",\"cat\":\"memcpy\"") != NULL);
    free(t);
}

/* The text report's units and its lines for what was not measured; records of no run;
 * a name with control characters in the trace. */
static void test_writer_edges(void)
{
    cgr__prof_summary s;
    memset(&s, 0, sizeof s);
    s.verdict = CGR__PROF_UNKNOWN;
    s.mode[CGR__PROF_EAGER].runs = 1;
    s.mode[CGR__PROF_EAGER].wall_us = 2500.0;
    s.mode[CGR__PROF_GRAPH].runs = 1;
    s.mode[CGR__PROF_GRAPH].wall_us = 3.5e6;
    s.mode[CGR__PROF_GRAPH].cpu_us = 999.994;
    s.mode[CGR__PROF_EAGER].cpu_us = 1000.0; /* the units change at 1 ms and 1 s exactly */
    s.mode[CGR__PROF_EAGER].busy_us = 1e6;
    s.outside = 4;
    char *t;
    WRITE_TEXT(t, cgr__prof_write_text, "edges", &s);
    static const char *const parts[] = {
        "verdict: unknown (no eager run was measured)",
        "   2.500 ms ", "   3.500 s ", "  999.99 us ", "   1.000 ms ", "   1.000 s ",
        "4 outside the runs",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strstr(t, parts[i]))
            TEST_FAIL_("the text report lacks \"%s\":\n%s", parts[i], t);
    ASSERT(strstr(t, "graph vs eager") == NULL); /* no speedup to give */
    free(t);

    /* A record of no run is counted apart, in neither mode. */
    cgr__prof_run run = {.begin = 0, .end = 10, .mode = CGR__PROF_GRAPH};
    cgr__prof_rec r[2] = {rec(1, 2, 6, 0, 1), rec(1, 50, 60, 0, 1)};
    int32_t of[2] = {0, -1};
    ASSERT_EQ(cgr__prof_summarize(r, 2, of, &run, 1, names, 3, 0, &s), 0);
    ASSERT_U64_EQ(s.records, 1);
    ASSERT_U64_EQ(s.outside, 1);
    ASSERT(NEAR(s.mode[CGR__PROF_GRAPH].busy_us, 0.004));

    /* Launch-bound means idle above half an eager run's wall time, not at half. */
    cgr__prof_run eager = {.begin = 0, .end = 1000, .mode = CGR__PROF_EAGER};
    for (uint64_t end = 499; end <= 500; end++) {
        cgr__prof_rec half = rec(1, 0, end, 0, 1);
        int32_t in_run = 0;
        ASSERT_EQ(cgr__prof_summarize(&half, 1, &in_run, &eager, 1, names, 3, 0, &s), 0);
        ASSERT_EQ(s.verdict, end == 500 ? CGR__PROF_GPU_BOUND : CGR__PROF_LAUNCH_BOUND);
    }

    /* Control characters in a name are escaped, so the trace stays JSON. */
    static const char *const odd[2] = {"<unknown>", "k\x01\t\"q\"\x7f\x80\xff"};
    cgr__prof_rec k = rec(1, 0, 10, 0, 1);
    WRITE_TEXT(t, cgr__prof_write_trace, "odd", &k, 1, NULL, NULL, 0, odd, 2, NULL, 0);
    ASSERT(json_balanced(t));
    /* Bytes from 0x80 up become '?', so the file is ASCII whatever the names' encoding. */
    ASSERT(strstr(t, "\"name\":\"k\\u0001\\u0009\\\"q\\\"\x7f??\"") != NULL);
    free(t);
}

/* One end of a host range, as the collector records it; seq in the order given. */
static cgr__prof_range end_(int what, int user, uint32_t tid, uint32_t id, uint64_t ts,
                            const char *name)
{
    static uint32_t seq;
    cgr__prof_range r;
    memset(&r, 0, sizeof r);
    r.what = (uint8_t)what;
    r.user = (uint8_t)user;
    r.tid = tid;
    r.id = id;
    r.start = ts;
    r.seq = seq++;
    if (name)
        snprintf(r.name, sizeof r.name, "%s", name);
    return r;
}

enum { S = CGR__PROF_RANGE_START, E = CGR__PROF_RANGE_END, M = CGR__PROF_RANGE_MARK };

/*
 * cgr's phases on threads 10, 11 and 12 (pushed and popped, paired in the
 * order made) and the user's NVTX on thread 10 (paired by id, given out of
 * order): nesting, a range that crosses another, an instant, ends without
 * a start, starts without an end. Then the trace of them.
 */
static void test_ranges(void)
{
    cgr__prof_range r[] = {
        end_(S, 0, 10, 0, 100, "cgr eager run"), end_(E, 1, 10, 7, 150, NULL),
        end_(S, 0, 10, 0, 110, "cgr capture"),   end_(E, 0, 11, 0, 50, NULL), /* begun before */
        end_(E, 0, 10, 0, 120, NULL),            end_(S, 0, 11, 0, 130, "cgr replay"),
        end_(E, 0, 11, 0, 140, NULL),            end_(E, 0, 10, 0, 200, NULL),
        end_(S, 0, 10, 0, 300, "cgr replay"), /* still open */
        end_(S, 1, 10, 8, 140, "crossing"),      end_(S, 1, 10, 7, 105, "attention"),
        end_(E, 1, 10, 8, 260, NULL),            end_(M, 1, 10, 9, 180, "tick"),
        end_(S, 1, 10, 10, 100, "outer"),        end_(E, 1, 10, 10, 300, NULL),
        end_(S, 1, 10, 11, 290, "unended"),      end_(E, 1, 10, 12, 295, NULL),
        /* Two that begin at once: the outer one still comes first. */
        end_(S, 0, 12, 0, 400, "cgr outer"),     end_(S, 0, 12, 0, 400, "cgr inner"),
        end_(E, 0, 12, 0, 410, NULL),            end_(E, 0, 12, 0, 420, NULL),
    };
    size_t n = 0;
    uint64_t open = 0;
    ASSERT_EQ(cgr__prof_pair_ranges(r, sizeof r / sizeof r[0], &n, &open), 0);
    ASSERT_U64_EQ(open, 2);
    ASSERT_EQ(n, 9);
    static const struct {
        const char *name;
        uint8_t user;
        uint32_t tid;
        uint64_t start, end;
        int depth;
    } want[] = {
        {"cgr eager run", 0, 10, 100, 200, 0}, {"cgr capture", 0, 10, 110, 120, 1},
        {"cgr replay", 0, 11, 130, 140, 0},    {"cgr outer", 0, 12, 400, 420, 0},
        {"cgr inner", 0, 12, 400, 410, 1},     {"outer", 1, 10, 100, 300, 0},
        {"attention", 1, 10, 105, 150, 1},     {"crossing", 1, 10, 140, 260, -1},
        {"tick", 1, 10, 180, 180, 1},
    };
    for (size_t i = 0; i < n; i++) {
        if (strcmp(r[i].name, want[i].name) != 0 || r[i].user != want[i].user ||
            r[i].tid != want[i].tid || r[i].start != want[i].start || r[i].end != want[i].end ||
            r[i].depth != want[i].depth)
            TEST_FAIL_("range %zu: %s user %d tid %u [%llu, %llu) depth %d, expected %s user %d "
                       "tid %u [%llu, %llu) depth %d",
                       i, r[i].name, r[i].user, (unsigned)r[i].tid, (unsigned long long)r[i].start,
                       (unsigned long long)r[i].end, r[i].depth, want[i].name, want[i].user,
                       (unsigned)want[i].tid, (unsigned long long)want[i].start,
                       (unsigned long long)want[i].end, want[i].depth);
    }
    ASSERT_EQ(r[8].what, CGR__PROF_RANGE_MARK);
    ASSERT_EQ(r[0].what, CGR__PROF_RANGE_WHOLE);
    ASSERT_EQ(cgr__prof_pair_ranges(NULL, 0, &n, &open), 0);
    ASSERT_EQ(n, 0);

    window w;
    cgr__prof_summary s;
    summarize_window(&w, 0, &s);
    char *t;
    WRITE_TEXT(t, cgr__prof_write_trace, "tiny", w.r, w.n, w.of, w.runs, 4, names, 3, r, 9);
    ASSERT(json_balanced(t));
    /* A track per thread of cgr's phases (tid 2, 3, 4), then the user's on thread 10 (5). */
    ASSERT(strstr(t, "\"tid\":2,\"args\":{\"name\":\"cgr phases, thread 10\"}") != NULL);
    ASSERT(strstr(t, "\"tid\":4,\"args\":{\"name\":\"cgr phases, thread 12\"}") != NULL);
    ASSERT(strstr(t, "\"tid\":5,\"args\":{\"name\":\"NVTX, thread 10\"}") != NULL);
    ASSERT(strstr(t, "{\"name\":\"cgr eager run\",\"cat\":\"cgr phase\",\"pid\":1,\"tid\":2,"
                     "\"ts\":0.100,\"ph\":\"X\",\"dur\":0.100}") != NULL);
    ASSERT(strstr(t, "{\"name\":\"attention\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":5,"
                     "\"ts\":0.105,\"ph\":\"X\",\"dur\":0.045}") != NULL);
    /* The crossing range is an async slice; the instant a thread-scoped instant. */
    ASSERT(strstr(t, "{\"name\":\"crossing\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":5,"
                     "\"ts\":0.140,\"ph\":\"b\",\"id\":7}") != NULL);
    ASSERT(strstr(t, "{\"name\":\"crossing\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":5,"
                     "\"ts\":0.260,\"ph\":\"e\",\"id\":7}") != NULL);
    ASSERT(strstr(t, "{\"name\":\"tick\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":5,"
                     "\"ts\":0.180,\"ph\":\"i\",\"s\":\"t\"}") != NULL);
    /* The runs, the GPU records and the 7 ranges that nest. */
    ASSERT_EQ(count(t, "\"ph\":\"X\""), 4 + w.n + 7);
    ASSERT_EQ(count(t, "\"cat\":\"cgr phase\""), 5);
    free(t);

    s.ranges = 9;
    s.ranges_open = 2;
    s.ranges_dropped = 3;
    WRITE_TEXT(t, cgr__prof_write_json, "tiny", &s);
    ASSERT(json_balanced(t));
    ASSERT(strstr(t, "\"ranges\":9,\"ranges_open\":2,\"ranges_dropped\":3}") != NULL);
    free(t);
}

/* How many lines follow the first line of t that holds `after`, up to the next empty line. */
static size_t lines_after(const char *t, const char *after)
{
    const char *c = strstr(t, after);
    ASSERT(c != NULL);
    c = strchr(c, '\n');
    size_t k = 0;
    while (c && c[1] && c[1] != '\n') {
        k++;
        c = strchr(c + 1, '\n');
    }
    return k;
}

/*
 * The figures at their edges: a tag that names a run past the window's
 * last, kernel names one character either side of the row's size, runs
 * that took no time, and the reports of a profile with fewer top kernels
 * than there is room for.
 */
static void test_summary_edges(void)
{
    /* A tag of run n_runs or more is from outside the window. */
    cgr__prof_run runs[2] = {{.begin = 0, .end = 10, .mode = CGR__PROF_EAGER},
                             {.begin = 20, .end = 30, .mode = CGR__PROF_GRAPH}};
    cgr__prof_rec r[3] = {rec(1, 5, 6, 1, 1), rec(1, 25, 26, 2, 1), rec(1, 27, 28, 3, 1)};
    cgr__prof_link links[3] = {{.correlation = 1, .run = 0},
                               {.correlation = 2, .run = 1},
                               {.correlation = 3, .run = 2}};
    int32_t of[3];
    cgr__prof_attribute(r, 3, links, 3, runs, 2, of, NULL);
    ASSERT_EQ(of[0], 0);
    ASSERT_EQ(of[1], 1);
    ASSERT_EQ(of[2], -1);

    /* A name that just fits is whole; one character more is cut, within the row. */
    cgr__prof_kernel top[2];
    char fits[sizeof top[0].name], over[sizeof top[0].name + 1];
    memset(fits, 'f', sizeof fits - 1);
    fits[sizeof fits - 1] = '\0';
    memset(over, 'o', sizeof over - 1);
    over[sizeof over - 1] = '\0';
    const char *nm[2] = {fits, over};
    cgr__prof_rec k[2] = {rec(1, 0, 20, 0, 0), rec(1, 20, 30, 0, 1)};
    memset(top, 0x55, sizeof top);
    ASSERT_EQ(cgr__prof_rank_kernels(k, 2, NULL, nm, 2, top, 2), 2);
    ASSERT_STR_EQ(top[0].name, fits);
    ASSERT_EQ(strlen(top[1].name), sizeof top[1].name - 1);
    ASSERT_EQ(strncmp(top[1].name, over, sizeof top[1].name - 4), 0);
    ASSERT_STR_EQ(top[1].name + sizeof top[1].name - 4, "...");
    ASSERT_U64_EQ(top[1].calls, 1); /* the field after the name is the cut name's own */

    /* Runs with no wall time and no GPU work: idle 0 (not 0/0), no speedup to give. */
    cgr__prof_run still[2] = {{.begin = 5, .end = 5, .mode = CGR__PROF_EAGER},
                              {.begin = 5, .end = 5, .mode = CGR__PROF_GRAPH}};
    cgr__prof_summary s;
    ASSERT_EQ(cgr__prof_summarize(NULL, 0, NULL, still, 2, names, 3, 0, &s), 0);
    ASSERT_U64_EQ(s.mode[CGR__PROF_EAGER].runs, 1);
    ASSERT(s.mode[CGR__PROF_EAGER].idle_share == 0.0);
    ASSERT(s.mode[CGR__PROF_GRAPH].idle_share == 0.0);
    ASSERT_EQ(s.verdict, CGR__PROF_GPU_BOUND);
    ASSERT(s.speedup == 0.0);

    /* Two top kernels: two rows in the table and two objects in the JSON, no more. */
    window w;
    summarize_window(&w, 0, &s);
    ASSERT_EQ(s.n_top, 2);
    char *t;
    WRITE_TEXT(t, cgr__prof_write_text, "tiny", &s);
    ASSERT_EQ(lines_after(t, "------"), 2);
    free(t);
    WRITE_TEXT(t, cgr__prof_write_json, "tiny", &s);
    ASSERT_EQ(count(t, "{\"name\":"), 2);
    free(t);
}

/*
 * The trace at its edges: times at and before the origin, the last name
 * id and copy kind it knows and the first past them, one thread per
 * stream, and the caps on events and bytes at exactly their values.
 */
static void test_trace_edges(void)
{
    cgr__prof_run run = {.begin = 1000, .end = 1100, .mode = CGR__PROF_EAGER};
    cgr__prof_rec r[6] = {rec(1, 400, 500, 0, 2), rec(1, 1000, 1010, 0, 3),
                          rec(2, 1010, 1020, 0, 0), rec(2, 1020, 1030, 0, 0),
                          rec(3, 1030, 1040, 0, 0), rec(1, 1040, 1050, 0, 1)};
    r[1].stream = 3;
    r[2].copy_kind = 10;
    r[3].copy_kind = 11;
    r[4].stream = 9;
    r[5].stream = 3;
    char *t;
    WRITE_TEXT(t, cgr__prof_write_trace, "edges", r, 6, NULL, &run, 1, names, 3, NULL, 0);
    ASSERT(json_balanced(t));
    static const char *const parts[] = {
        /* The origin is the first run's launch call: at it 0, before it negative. */
        "{\"name\":\"run 0 (eager)\",\"cat\":\"cgr run\",\"pid\":1,\"tid\":1,\"ts\":0.000,"
        "\"ph\":\"X\",\"dur\":0.100,",
        "{\"name\":\"big_kernel\",\"cat\":\"kernel\",\"pid\":2,\"tid\":7,\"ts\":-0.600,"
        "\"ph\":\"X\",\"dur\":0.100,",
        "{\"name\":\"<unknown>\",\"cat\":\"kernel\",\"pid\":2,\"tid\":3,\"ts\":0.000,",
        "{\"name\":\"memcpy PtoP\",\"cat\":\"memcpy\"",
        "{\"name\":\"memcpy\",\"cat\":\"memcpy\",\"pid\":2,\"tid\":7,\"ts\":0.020,\"ph\":\"X\",",
        "{\"name\":\"memset\",\"cat\":\"memset\",\"pid\":2,\"tid\":9,",
        "\"tid\":3,\"args\":{\"name\":\"stream 3\"}",
        "\"tid\":7,\"args\":{\"name\":\"stream 7\"}",
        "\"tid\":9,\"args\":{\"name\":\"stream 9\"}",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strstr(t, parts[i]))
            TEST_FAIL_("the trace lacks %s:\n%s", parts[i], t);
    ASSERT_EQ(count(t, "\"thread_name\""), 3); /* streams 3, 7 and 9, each once */
    free(t);

    /*
     * The caps: the process's two metadata events and its three streams'
     * are always written; a cap of 7 events leaves room for two records,
     * and a cap of exactly the metadata's bytes for none.
     */
    cgr__prof_trace_out o = {.f = tmpfile(), .max_events = 7};
    ASSERT(o.f != NULL);
    ASSERT_EQ(cgr__prof_trace_gpu(&o, 2, "GPU", r, 6, NULL, names, 3, 0), 0);
    ASSERT_U64_EQ(o.events, 7);
    ASSERT_U64_EQ(o.left_out, 4);
    fclose(o.f);
    cgr__prof_trace_out meta = {.f = tmpfile(), .max_events = 5};
    ASSERT(meta.f != NULL);
    ASSERT_EQ(cgr__prof_trace_gpu(&meta, 2, "GPU", r, 6, NULL, names, 3, 0), 0);
    ASSERT_U64_EQ(meta.left_out, 6);
    fclose(meta.f);
    cgr__prof_trace_out b = {.f = tmpfile(), .max_bytes = meta.bytes};
    ASSERT(b.f != NULL);
    ASSERT_EQ(cgr__prof_trace_gpu(&b, 2, "GPU", r, 6, NULL, names, 3, 0), 0);
    ASSERT_U64_EQ(b.events, 5);
    ASSERT_U64_EQ(b.left_out, 6);
    ASSERT_U64_EQ(b.bytes, meta.bytes);
    fclose(b.f);
}

/*
 * cgr's phases where the order by start alone would mix threads, ranges
 * that touch end to start (siblings), and one that ends together with the
 * range holding it (still nested).
 */
static void test_range_edges(void)
{
    cgr__prof_range r[] = {
        end_(S, 0, 20, 0, 0, "a"),   end_(S, 0, 21, 0, 10, "c"),  end_(E, 0, 21, 0, 20, NULL),
        end_(S, 0, 20, 0, 30, "b"),  end_(E, 0, 20, 0, 40, NULL), end_(E, 0, 20, 0, 50, NULL),
        end_(S, 0, 22, 0, 100, "d"), end_(E, 0, 22, 0, 110, NULL), end_(S, 0, 22, 0, 110, "e"),
        end_(E, 0, 22, 0, 120, NULL), end_(S, 0, 23, 0, 200, "f"), end_(S, 0, 23, 0, 250, "g"),
        end_(E, 0, 23, 0, 300, NULL), end_(E, 0, 23, 0, 300, NULL),
    };
    size_t n = 0;
    uint64_t open = 9;
    ASSERT_EQ(cgr__prof_pair_ranges(r, sizeof r / sizeof r[0], &n, &open), 0);
    ASSERT_U64_EQ(open, 0);
    static const struct {
        const char *name;
        uint32_t tid;
        uint64_t start, end;
        int depth;
    } want[] = {
        {"a", 20, 0, 50, 0},    {"b", 20, 30, 40, 1},   {"c", 21, 10, 20, 0},
        {"d", 22, 100, 110, 0}, {"e", 22, 110, 120, 0}, {"f", 23, 200, 300, 0},
        {"g", 23, 250, 300, 1},
    };
    ASSERT_EQ(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].name, want[i].name) != 0 || r[i].tid != want[i].tid ||
            r[i].start != want[i].start || r[i].end != want[i].end || r[i].depth != want[i].depth)
            TEST_FAIL_("range %zu: %s tid %u [%llu, %llu) depth %d, expected %s tid %u "
                       "[%llu, %llu) depth %d",
                       i, r[i].name, (unsigned)r[i].tid, (unsigned long long)r[i].start,
                       (unsigned long long)r[i].end, r[i].depth, want[i].name,
                       (unsigned)want[i].tid, (unsigned long long)want[i].start,
                       (unsigned long long)want[i].end, want[i].depth);
}

/* Under a locale whose decimal point is a comma, the writers write what they do in "C". */
static void test_comma_locale(void)
{
    static const char *const names_tried[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                              "fr_FR.utf8", "ru_RU.UTF-8", "de_DE"};
    locale_t comma = (locale_t)0;
    for (size_t i = 0; i < sizeof names_tried / sizeof names_tried[0] && !comma; i++)
        comma = newlocale(LC_NUMERIC_MASK, names_tried[i], (locale_t)0);
    if (!comma) {
        printf("comma-decimal locale: none installed, not checked\n");
        return;
    }
    locale_t old = uselocale(comma);
    test_writers(); /* its "idle_share":0.9 and "ts":10.100, among the rest */
    (void)uselocale(old);
    freelocale(comma);
    printf("comma-decimal locale: the JSON and the trace keep '.'\n");
}

int main(void)
{
    test_comma_locale();
    test_union();
    test_attribute();
    test_summarize();
    test_rank();
    test_writers();
    test_writer_edges();
    test_ranges();
    test_summary_edges();
    test_trace_edges();
    test_range_edges();
    printf("prof_report: ok\n");
    return 0;
}
