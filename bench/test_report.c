/*
 * The reporter without a GPU (suite `unit`): made-up results of every
 * suite go through report(), which must write JSON with the keys
 * docs/bench-json.md lists, and turn a failed check or an unfinished suite
 * into a failed run. Every report's text and JSON must also be exactly
 * bench/testdata/report.txt and report.json, so that no figure, label or
 * row changes unnoticed. First, the limits file the checks read
 * (bench/limits.txt).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cgr/cgr.h"
#include "limits_file.h"

static int failures;

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* A mode that ran: wall around `us`, host CPU a tenth of it, never 0. */
static void fake_mode(mode_result *r, const char *name, double us)
{
    mode_result_init(r, name);
    double w[5] = {us, us * 1.01, us * 0.99, us * 1.2, us * 0.9};
    double c[5] = {us / 10, us / 9, us / 11, us / 8, us / 12};
    stats_compute(w, 5, &r->wall);
    stats_compute(c, 5, &r->cpu);
    r->ran = 1;
    r->warmup = 20;
    r->steps = 200;
}

static void fake_stats(bench_stats *s, double us)
{
    double v[3] = {us * 0.9, us, us * 1.1};
    stats_compute(v, 3, s);
}

/*
 * Every report's text and JSON, as written, in the order made; compared at
 * the end with bench/testdata/report.txt and report.json (see main).
 */
typedef struct record {
    char *b;
    size_t n;
} record;
static record seen_text, seen_json;

/* Appends the line "==== title" and then text, with cgr's version as "<version>". */
static void keep(record *r, const char *title, const char *text)
{
    const size_t vlen = strlen(CGR_VERSION_STRING);
    size_t need = r->n + strlen(title) + 6 + strlen(text) * 2 + 1;
    char *b = realloc(r->b, need);
    if (!b) {
        fprintf(stderr, "FAIL: out of memory\n");
        exit(1);
    }
    r->b = b;
    r->n += (size_t)sprintf(r->b + r->n, "==== %s\n", title);
    for (const char *t = text; *t;) {
        if (!strncmp(t, CGR_VERSION_STRING, vlen)) {
            r->n += (size_t)sprintf(r->b + r->n, "<version>");
            t += vlen;
        } else {
            r->b[r->n++] = *t++;
        }
    }
    r->b[r->n] = '\0';
}

/* The whole of f from its start, NUL-terminated, into buf of n bytes. */
static void read_all(FILE *f, char *buf, size_t n)
{
    rewind(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
}

/*
 * Runs report() on res with its text going to a file; the JSON file's text
 * into buf (NUL-terminated). Both are kept for the comparison. 0 when it
 * wrote.
 */
static int run_report(const bench_results *res, char *buf, size_t n)
{
    char path[] = "/tmp/cgr-test-report-XXXXXX";
    FILE *f = fdopen(mkstemp(path), "r");
    FILE *text = tmpfile();
    int saved = dup(STDOUT_FILENO);
    if (!f || !text || saved < 0)
        return -1;
    fflush(stdout);
    if (dup2(fileno(text), STDOUT_FILENO) < 0)
        return -1;
    int rc = report(res, path);
    fflush(stdout);
    if (dup2(saved, STDOUT_FILENO) < 0 || close(saved) != 0)
        return -1;
    read_all(text, buf, n);
    fclose(text);
    keep(&seen_text, res->suite_name, buf);
    buf[0] = '\0';
    if (rc == 0)
        read_all(f, buf, n);
    keep(&seen_json, res->suite_name, buf);
    fclose(f);
    remove(path);
    return rc;
}

/*
 * got against the file name in bench/testdata; with CGR_UPDATE_REPORT_FILES
 * set, the file is written from got instead (after a deliberate change to
 * the report).
 */
static void compare_file(const char *name, const record *got)
{
    char path[4096], *want = NULL;
    snprintf(path, sizeof path, "%s/%s", TEST_DATA_DIR, name);
    if (getenv("CGR_UPDATE_REPORT_FILES")) {
        FILE *f = fopen(path, "w");
        EXPECT(f && fwrite(got->b, 1, got->n, f) == got->n && fclose(f) == 0);
        printf("wrote %s\n", path);
        return;
    }
    FILE *f = fopen(path, "r");
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
        (want = calloc(1, (size_t)len + 1)) != NULL)
        read_all(f, want, (size_t)len + 1);
    if (f)
        fclose(f);
    if (!want) {
        fprintf(stderr, "FAIL: cannot read %s\n", path);
        failures++;
        return;
    }
    if (strcmp(want, got->b) != 0) {
        size_t i = 0, line = 1;
        for (; want[i] && want[i] == got->b[i]; i++)
            line += want[i] == '\n';
        fprintf(stderr, "FAIL: the reports differ from %s at line %zu:\n  got:  %.120s\n"
                "  want: %.120s\n(if the change is meant, rerun with CGR_UPDATE_REPORT_FILES=1)\n",
                path, line, got->b + i, want + i);
        failures++;
    }
    free(want);
}

/* report() on res writes its JSON with every one of keys (NULL-terminated), and res passes. */
static void expect_report(const bench_results *res, char *json, size_t n, const char *const *keys)
{
    EXPECT(run_report(res, json, n) == 0);
    EXPECT(!results_failed(res));
    for (int i = 0; keys[i]; i++) {
        char quoted[96];
        snprintf(quoted, sizeof quoted, "\"%s\":", keys[i]);
        if (!strstr(json, quoted)) {
            fprintf(stderr, "FAIL: no key %s in the JSON of %s\n", keys[i], res->suite_name);
            failures++;
        }
    }
}

static void base(bench_results *res, const char *suite)
{
    memset(res, 0, sizeof *res);
    snprintf(res->device_name, sizeof res->device_name, "Test GPU");
    res->cc_major = 9;
    res->cfg.steps = 200;
    res->cfg.warmup = 20;
    res->cfg.rounds = 20;
    res->suite_name = suite;
}

static void test_default(char *json, size_t n)
{
    static bench_results res;
    base(&res, "default");
    fake_mode(&res.timer, "timer_overhead", 0.1);
    res.chain_ran = 1;
    res.n_chain = 1;
    chain_result *c = &res.chain[0];
    c->n_kernels = 100;
    c->rounds = 20;
    for (int m = 0; m < CHAIN_MODES; m++) {
        fake_mode(&c->mode[m], "chain_mode", 100.0 + m);
        for (int k = 0; k < c->rounds; k++)
            c->round_wall[m][k] = 100.0 + m + 0.01 * k;
    }
    res.n_work = 1;
    snprintf(res.work[0].name, sizeof res.work[0].name, "W-mlp");
    res.work[0].B = 1;
    fake_mode(&res.work[0].mode[WORK_EAGER].m, "eager", 300);
    fake_mode(&res.work[0].mode[WORK_GRAPH].m, "graph", 100);
    static const char *const keys[] = {"schema_version", "device", "config", "clock_overhead",
                                       "chain", "spread", "io_cost_us", "cgr_zero_copy",
                                       "cgr_zero_copy_fast_path", "cgr_zero_copy_event_wait",
                                       "graph_memcpy_async", "results", "checks", "ok", NULL};
    /* Top kernels under --profile; checks against limits, one that failed but only warns. */
    res.cfg.profile = 1;
    res.work[0].n_top = 1;
    snprintf(res.work[0].top[0], sizeof res.work[0].top[0], "%-78s %6d %9.1f %6.1f%%",
             "gemm_kernel", 3, 42.0, 61.5);
    res.work[0].outputs_equal = 1;
    res.n_checks = 2;
    res.checks[0] = (check_result){"canary_host_growth_us", "host CPU growth of the raw graph",
                                   0.4, 5, 1, 1, 0};
    res.checks[1] = (check_result){"warn_limit", "a figure that only warns", 9, 3, 1, 0, 1};
    expect_report(&res, json, n, keys);
    /* A failed check of a message or a count fails a run that is otherwise good. */
    said_check *s = &res.said[res.n_said++];
    s->name = "profile_window";
    s->what = "a check";
    EXPECT(results_failed(&res));
    s->ok = 1;
    EXPECT(!results_failed(&res));
    res.n_said--;
    /* A mode that failed, and one skipped after it, fail the run. */
    mode_result_fail(&c->mode[CHAIN_CGR]);
    snprintf(c->mode[CHAIN_CGR].error, sizeof c->mode[CHAIN_CGR].error, "launch failed");
    mode_result_init(&c->mode[CHAIN_CGR_PDL], "chain_mode");
    mode_result_not_run(&c->mode[CHAIN_CGR_PDL], 1);
    mode_result_fail(&res.work[0].mode[WORK_GRAPH].m);
    EXPECT(run_report(&res, json, n) == 0);
    EXPECT(results_failed(&res));
}

static void test_serve(char *json, size_t n)
{
    static bench_results res;
    static serve_result r;
    base(&res, "serve");
    memset(&r, 0, sizeof r);
    res.serve = &r;
    r.ran = r.pass = 1;
    r.requests = 2000;
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        r.buckets[b] = (int64_t)1 << b;
        for (int m = 0; m < SERVE_MODES; m++)
            r.bk[b].lat[m] = (serve_lat){10, 20, 100, 120, 101, 1010, 9900, 19800};
        r.bk[b].prof_ok = b % 2;
        r.bk[b].busy_us = r.bk[b].busy_union_us = 80;
    }
    for (int m = 0; m < SERVE_MODES; m++)
        r.pipe[m][0] = r.pipe[m][1] = (serve_pipe_result){100, 400, 100, 10000.0};
    r.samples_checked = r.host_checks = r.pipe_hashes_checked = 10;
    static const char *const keys[] = {"requests", "steady_batch_le8", "in_flight", "per_bucket",
                                       "graph", "eager", "plain", "launch_call_p50_us",
                                       "busy_union_us", "graph_shape_stats", "summary", "pass",
                                       NULL};
    expect_report(&res, json, n, keys);
    r.ran = 0;
    snprintf(r.error, sizeof r.error, "a call failed: \"x\\y\"\ttab");
    EXPECT(run_report(&res, json, n) == 0);
    EXPECT(results_failed(&res));
    EXPECT(strstr(json, "\"error\": \"a call failed: \\\"x\\\\y\\\"\\u0009tab\"") != NULL);
}

static void test_newshape(char *json, size_t n)
{
    static bench_results res;
    static newshape_result r;
    base(&res, "newshape");
    memset(&r, 0, sizeof r);
    res.newshape = &r;
    r.reps = 20;
    r.warmup_runs = 2;
    r.frozen_runs = 5;
    for (int i = 0; i < NEWSHAPE_PAIRS; i++) {
        newshape_pair *p = &r.pair[i];
        p->path = i ? "cuBLAS" : "small-batch";
        p->ran_instantiate = p->ran_update = p->ran_step = p->ran_frozen = 1;
        p->updates = p->attempts = 20;
        if (i == 1) { /* two updates failed, one for a reason past the table's last */
            p->attempts = 22;
            p->failures = 2;
            p->by_reason[2] = p->by_reason[15] = 1;
            snprintf(p->last_update_error, sizeof p->last_update_error, "topology changed");
        }
        fake_stats(&p->ucapture, 30);
        fake_stats(&p->update, 60);
        fake_stats(&p->utotal, 90);
        p->raw_updates = 20;
        fake_stats(&p->raw_ucapture, 20);
        fake_stats(&p->raw_update, 40);
        fake_stats(&p->raw_utotal, 60);
        for (int k = 0; k < 2; k++) {
            newshape_bucket *b = &p->b[k];
            b->bucket = 4 << (k + 2 * i);
            b->nodes = 21;
            fake_stats(&b->capture, 30);
            fake_stats(&b->instantiate, 150);
            fake_stats(&b->total, 180);
            fake_stats(&b->raw_capture, 20);
            fake_stats(&b->raw_instantiate, 100);
            fake_stats(&b->raw_total, 120);
            fake_stats(&b->step, 200);
            fake_stats(&b->frozen.first_on, 1200);
            fake_stats(&b->frozen.first_off, 1160);
            fake_stats(&b->frozen.added, 40);
            fake_stats(&b->frozen.check_run, 240);
            fake_stats(&b->frozen.same_run_off, 200);
            fake_stats(&b->frozen.capture, 35);
            fake_mode(&b->frozen.replay[0], "check_on", 200);
            fake_mode(&b->frozen.replay[1], "check_off", 200);
        }
    }
    static const char *const keys[] = {"pairs", "capture_instantiate_us", "capture_update_us",
                                       "frozen_check", "added_once_us", "check_run_us",
                                       "added_over_capture", "check_on", "wall_on_minus_off_us",
                                       "host_cpu_on_minus_off_us", "raw_graph", "cgr_over_raw",
                                       "failed", NULL};
    expect_report(&res, json, n, keys);
    /* cgr's total median over the raw graph's: 180 / 120 in each of the four buckets, 90 / 60
     * in each of the two updates. */
    int ratios = 0;
    for (const char *q = json; (q = strstr(q, "\"cgr_over_raw\": 1.5\n")); q++)
        ratios++;
    EXPECT(ratios == 2 * NEWSHAPE_PAIRS + NEWSHAPE_PAIRS);
}

static void test_soak_ddp(char *json, size_t n)
{
    static bench_results res;
    static soak_result s;
    base(&res, "soak");
    memset(&s, 0, sizeof s);
    res.soak = &s;
    s.ran = s.pass = 1;
    s.steps = 1000;
    s.n_samples = 2;
    s.samples[1].step = 1000;
    s.checks = 4;
    static const char *const soak_keys[] = {"samples", "growth_bytes", "growth_limit_bytes",
                                            "outputs_checked", "checks", "pass", NULL};
    expect_report(&res, json, n, soak_keys);

    static ddp_result d;
    base(&res, "ddp");
    memset(&d, 0, sizeof d);
    res.ddp = &d;
    d.world = 2;
    d.n = 1;
    d.b[0].B = 1;
    d.b[0].eager_equals_graph = 1;
    for (int m = 0; m < DDP_MODES; m++)
        fake_mode(&d.b[0].mode[m], "ddp", 300 + m);
    static const char *const ddp_keys[] = {"world",   "batch_per_gpu", "ddp_graph",
                                           "allreduce_alone", "wall_us",
                                           "weak_scaling_efficiency", NULL};
    expect_report(&res, json, n, ddp_keys);
    mode_result_fail(&d.b[0].mode[DDP_GRAPH]);
    EXPECT(results_failed(&res));
}

/* limits_load on a temporary file holding text: its status, the message in err. */
static int load_text(const char *text, char *err, size_t n)
{
    char path[] = "/tmp/cgr-test-limits-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        failures++;
        return -2;
    }
    int rc = limits_load(path, err, n);
    remove(path);
    return rc;
}

/* The limits file: the shipped one, the format's freedoms, and each thing it refuses. */
static void test_limits(const char *shipped)
{
    char err[512], text[8192];
    EXPECT(limits_load(shipped, err, sizeof err) == 0);
    EXPECT(strcmp(limits_file(), shipped) == 0);
    const double canary = limit_get("canary_host_growth_us");
    /* Without a path: the copy beside the executable, as cgr-bench finds it in a build tree. */
    EXPECT(limits_load(NULL, err, sizeof err) == 0);
    const char *found = limits_file();
    EXPECT(strlen(found) > 11 && !strcmp(found + strlen(found) - 11, "/limits.txt"));
    EXPECT(limit_get("canary_host_growth_us") == canary);
    static const char *const used[] = {"canary_host_growth_us", "soak_rss_growth_bytes",
                                       "soak_device_growth_bytes", "soak_pinned_growth_bytes"};
    for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
        EXPECT(isfinite(limit_get(used[i])));
    EXPECT(isnan(limit_get("no_such_limit")));

    /* Comments, blank lines, spaces and tabs around a value; a last line with no newline. */
    EXPECT(load_text("# head\n\n  a 1.5 # why\nb\t-2e3   \nc 7#why\nd 4", err, sizeof err) == 0);
    EXPECT(limit_get("a") == 1.5 && limit_get("b") == -2000 && limit_get("c") == 7 &&
           limit_get("d") == 4);
    EXPECT(isnan(limit_get("e")));

    /* The longest name (47 characters) and the most limits (64) are kept; 48 is too long. */
    char longest[49];
    memset(longest, 'n', 48);
    longest[48] = '\0';
    size_t k = 0;
    for (int i = 0; i < 64; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, "%.*s%02d %d\n", i ? 1 : 45,
                              longest, i, i);
    EXPECT(load_text(text, err, sizeof err) == 0);
    longest[47] = '\0';
    longest[45] = longest[46] = '0';
    EXPECT(limit_get(longest) == 0);
    EXPECT(limit_get("n63") == 63);
    snprintf(text, sizeof text, "%.46s00 1\n", longest);
    EXPECT(load_text(text, err, sizeof err) == -1 && strstr(err, ":1: expected"));

    /* Each refusal names the line, and leaves no limit loaded. */
    static const struct {
        const char *text, *says;
    } bad[] = {
        {"a\n", ":1: expected 'name value # why'"},
        {"a 1x\n", ":1: expected"},
        {"a 1 2\n", ":1: expected"},
        {"# fine\na nan\n", ":2: expected"},
        {"a inf\n", ":1: expected"},
        {"a 1e999\n", ":1: expected"},
        {"a 1\nb 2\na 3\n", ":3: limit 'a' given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        EXPECT(load_text(bad[i].text, err, sizeof err) == -1);
        if (!strstr(err, bad[i].says)) {
            fprintf(stderr, "FAIL: limits \"%s\": message \"%s\" lacks \"%s\"\n", bad[i].text,
                    err, bad[i].says);
            failures++;
        }
        EXPECT(isnan(limit_get("a")) && limits_file()[0] == '\0');
    }
    k = 0;
    for (int i = 0; i < 65; i++)
        k += (size_t)snprintf(text + k, sizeof text - k, "l%d %d\n", i, i);
    EXPECT(load_text(text, err, sizeof err) == -1 && strstr(err, ":65: more than 64 limits"));
    memset(text, ' ', 600);
    memcpy(text + 600, "a 1\n", 5);
    EXPECT(load_text(text, err, sizeof err) == -1 && strstr(err, ":1: line too long"));
    EXPECT(limits_load("/nonexistent/cgr/limits.txt", err, sizeof err) == -1);
    EXPECT(strstr(err, "cannot read the limits file /nonexistent/cgr/limits.txt: ") != NULL);
}

int main(void)
{
    static char json[1 << 20];
    test_limits(TEST_LIMITS_FILE);
    /* The reports run with no limits loaded (the last load above failed): they name no file. */
    EXPECT(limits_file()[0] == '\0');
    test_default(json, sizeof json);
    test_serve(json, sizeof json);
    test_newshape(json, sizeof json);
    test_soak_ddp(json, sizeof json);
    compare_file("report.txt", &seen_text);
    compare_file("report.json", &seen_json);
    free(seen_text.b);
    free(seen_json.b);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
