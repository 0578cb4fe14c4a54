/*
 * The reporter's sections of the suites with figures of their own (W-serve,
 * newshape, soak, W-ddp): their tables, their lines of the closing summary
 * and their part of the JSON file, from the results each suite filled in
 * (bench.h). The shared parts are report.c's.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "limits_file.h"
#include "report.h"

/* A row of a per-bucket table, labelled with the bucket; "-" when ok is 0 (not measured). */
static void bucket_row(const report_table *t, int64_t bucket, const double *v, int ok)
{
    char label[32];
    snprintf(label, sizeof label, "%lld", (long long)bucket);
    if (ok)
        report_row(t, label, v);
    else
        report_row_text(t, label, "-");
}

/* ---- W-serve ------------------------------------------------------------------------ */

const char *const serve_mode_names[SERVE_MODES] = {"graph", "eager", "plain"};

static double pipe_req_per_s(const serve_pipe_result *p)
{
    return (double)p->n / (p->wall_us * 1e-6);
}

static double pipe_rows_per_s(const serve_pipe_result *p)
{
    return (double)p->rows / (p->wall_us * 1e-6);
}

/* The summary's figures (printed and in the JSON's summary[]); returns how many. */
static int serve_figs(const serve_result *r, report_fig *f)
{
    int n = 0;
    /*
     * Throughput is summarised with requests in flight, as a serving loop with
     * a queue runs them; the closed loop's ratio (1 / latency) is printed too.
     */
    snprintf(f[n].name, sizeof f[n].name, "throughput in flight, batch <= 8: graph/eager");
    f[n++].value =
        pipe_req_per_s(&r->pipe[SERVE_GRAPH][1]) / pipe_req_per_s(&r->pipe[SERVE_EAGER][1]);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        /*
         * Against the union of kernel intervals: with PDL, kernels overlap and
         * the summed busy time counts the overlap twice, which puts the ratio
         * below 1 (0.8 measured on the H200). Without PDL the two agree.
         */
        const serve_bucket *k = &r->bk[b];
        snprintf(f[n].name, sizeof f[n].name, "bucket %2lld: p50 / GPU busy-u",
                 (long long)r->buckets[b]);
        f[n].value = k->prof_ok ? k->lat[SERVE_GRAPH].p50 / k->busy_union_us : NAN;
        n++;
    }
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const serve_lat *l = &r->bk[b].lat[SERVE_GRAPH];
        snprintf(f[n].name, sizeof f[n].name, "bucket %2lld: p99 / p50 (steady)",
                 (long long)r->buckets[b]);
        f[n++].value = l->n > 0 ? l->p99 / l->p50 : NAN;
    }
    snprintf(f[n].name, sizeof f[n].name, "captures");
    f[n++].value = (double)r->graph.captures;
    for (int i = 0; i < n; i++)
        f[i].measured = isfinite(f[i].value);
    return n;
}
enum { SERVE_FIGS = 2 + 2 * SERVE_N_BUCKETS };

static const report_col lat_cols[] = {
    {"n", 6, 0, 0},
    {"graph p50", 9, 1, REPORT_GAP}, {"p99", 9, 1, 0},
    {"eager p50", 9, 1, REPORT_GAP}, {"p99", 9, 1, 0},
    {"graph r/s", 9, 0, REPORT_GAP}, {"eager r/s", 9, 0, 0},
    {"graph rows/s", 11, 0, REPORT_GAP}, {"eager rows/s", 11, 0, 0},
    {"speed", 6, 2, REPORT_GAP},
};
static const report_table lat_table = {"  ", -22, "requests", lat_cols, 10};

static void lat_row(const char *what, const serve_lat *g, const serve_lat *e)
{
    const double v[] = {(double)g->n,    g->p50,        g->p99,        e->p50,
                        e->p99,          g->req_per_s,  e->req_per_s,  g->rows_per_s,
                        e->rows_per_s,   g->req_per_s / e->req_per_s};
    report_row(&lat_table, what, v);
}

static const report_col pipe_cols[] = {
    {"n", 6, 0, 0},
    {"graph r/s", 9, 0, REPORT_GAP}, {"eager r/s", 9, 0, 0},
    {"graph rows/s", 11, 0, REPORT_GAP}, {"eager rows/s", 11, 0, 0},
    {"speed", 6, 2, REPORT_GAP},
};
static const report_table pipe_table = {"  ", -22, "requests", pipe_cols, 6};

static const report_col armed_cols[] = {
    {"armed p50", 9, 1, REPORT_GAP}, {"p99", 9, 1, 0}, {"launch", 7, 2, 0}, {"write", 6, 2, 0},
    {"plain p50", 9, 1, REPORT_GAP}, {"p99", 9, 1, 0}, {"launch", 7, 2, 0}, {"write", 6, 2, 0},
    {"armed/plain", 11, 3, REPORT_GAP},
};
static const report_table armed_table = {"  ", 6, "bucket", armed_cols, 9};

static const report_col busy_cols[] = {
    {"busy", 9, 1, REPORT_GAP},       {"busy-u", 9, 1, 0},
    {"kernels", 8, 1, REPORT_GAP},    {"memcpys", 8, 1, 0},
    {"graph p50", 9, 1, REPORT_GAP},
    {"p50/busy", 10, 3, REPORT_GAP},  {"p50/busy-u", 10, 3, 0}, {"plain/busy-u", 11, 3, 0},
};
static const report_table busy_table = {"  ", 6, "bucket", busy_cols, 8};

void report_serve(const bench_results *res)
{
    const serve_result *r = res->serve;
    if (!r)
        return;
    if (!r->ran) {
        printf("\nW-serve did not finish: %s\n", r->error);
        return;
    }
    const cgr_step_stats *g = &r->graph;
    char what[32];
    printf("\nW-serve: %d requests, batch uniform in 1..64 (seed %#llx), buckets "
           "{1,2,4,8,16,32,64}, fresh inputs per request; closed loop; latency = launch + wait "
           "+ output, in us; PDL %s\n",
           r->requests, (unsigned long long)r->batch_seed, r->pdl ? "on" : "off (--no-pdl)");
    printf("  first pass over the buckets: requests 0..%d (left out of the steady figures)\n",
           r->steady_from - 1);
    report_head(&lat_table);
    lat_row("all", &r->all[SERVE_GRAPH], &r->all[SERVE_EAGER]);
    lat_row("steady", &r->steady[SERVE_GRAPH], &r->steady[SERVE_EAGER]);
    lat_row("steady, batch <= 8", &r->small[SERVE_GRAPH], &r->small[SERVE_EAGER]);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        snprintf(what, sizeof what, "steady, bucket %lld", (long long)r->buckets[b]);
        lat_row(what, &r->bk[b].lat[SERVE_GRAPH], &r->bk[b].lat[SERVE_EAGER]);
    }

    printf("\n  requests in flight (up to %d; inputs copied from a pool of rows; throughput = "
           "requests / wall, copies and output reads included; median of %d passes)\n",
           r->pipe_depth, r->pipe_reps);
    report_head(&pipe_table);
    for (int k = 0; k < 2; k++) {
        const serve_pipe_result *pg = &r->pipe[SERVE_GRAPH][k], *pe = &r->pipe[SERVE_EAGER][k];
        const double v[] = {(double)pg->n,       pipe_req_per_s(pg), pipe_req_per_s(pe),
                            pipe_rows_per_s(pg), pipe_rows_per_s(pe),
                            pipe_req_per_s(pg) / pipe_req_per_s(pe)};
        report_row(&pipe_table, k ? "steady, batch <= 8" : "steady", v);
    }
    printf("  closed loop (one at a time), batch <= 8: graph / eager");
    report_num(0, 2, r->small[SERVE_GRAPH].req_per_s / r->small[SERVE_EAGER].req_per_s);
    const serve_pipe_result *pp = &r->pipe[SERVE_PLAIN][1], *pe = &r->pipe[SERVE_EAGER][1];
    printf("\n  plain (graphs launched at submission), batch <= 8, in flight:");
    report_num(0, 0, pipe_req_per_s(pp));
    printf(" r/s,");
    report_num(0, 2, pipe_req_per_s(pp) / pipe_req_per_s(pe));
    printf(" x eager\n");

    printf("\n  armed (CGR_ACQUIRE_ARM before the inputs are written) against plain (graph "
           "launched at submission), same requests, steady;\n  write = the input write before "
           "the clock starts (cgr_step_write_input)\n");
    report_head(&armed_table);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const serve_bucket *f = &r->bk[b];
        const serve_lat *a = &f->lat[SERVE_GRAPH], *q = &f->lat[SERVE_PLAIN];
        const double v[] = {a->p50, a->p99, f->launch_p50[SERVE_GRAPH], f->write_p50[SERVE_GRAPH],
                            q->p50, q->p99, f->launch_p50[SERVE_PLAIN], f->write_p50[SERVE_PLAIN],
                            a->p50 / q->p50};
        bucket_row(&armed_table, r->buckets[b], v, 1);
    }

    printf("\n  per bucket graph, profiled pass (%d replays each, plain runtime: no gate): GPU "
           "busy per replay\n  (graph p50: armed requests; plain: the same, launched at "
           "submission)\n",
           r->prof_steps);
    report_head(&busy_table);
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const serve_bucket *f = &r->bk[b];
        const double p50 = f->lat[SERVE_GRAPH].p50;
        const double v[] = {f->busy_us, f->busy_union_us, f->kernels, f->memcpys, p50,
                            p50 / f->busy_us, p50 / f->busy_union_us,
                            f->lat[SERVE_PLAIN].p50 / f->busy_union_us};
        bucket_row(&busy_table, r->buckets[b], v, f->prof_ok);
    }
    if (r->prof_note[0])
        printf("  %s\n", r->prof_note);
    printf("\n  graph runtime: %llu captures (%llu by update in place), %llu evictions, %llu "
           "eager runs; arena %.3f MiB (largest scratch plan %.3f MiB); capture %.0f us + "
           "instantiate %.0f us in all\n",
           (unsigned long long)g->captures, (unsigned long long)g->updates,
           (unsigned long long)g->evictions, (unsigned long long)g->eager_runs,
           (double)g->arena_bytes / 1048576.0, (double)g->scratch_peak / 1048576.0,
           g->capture_us, g->instantiate_us);
    printf("  eager runtime: arena %.3f MiB\n", (double)r->eager_arena_bytes / 1048576.0);
    printf("  loop wall time (input generation and checks included): graph %.2f s, eager "
           "%.2f s\n",
           r->graph_wall_s, r->eager_wall_s);
}

void report_serve_summary(const bench_results *res)
{
    const serve_result *r = res->serve;
    if (!r || !r->ran)
        return;
    report_fig f[SERVE_FIGS];
    const int n = serve_figs(r, f);
    printf("W-serve figures (not judged; - : not measured):\n");
    for (int i = 0; i < n; i++)
        report_line(f[i].name, &f[i].value, 1, 3, REPORT_DASH);
}

static void json_lat(json_writer *w, const char *key, const serve_lat *l)
{
    json_begin_object(w, key);
    json_int(w, "requests", l->n);
    json_int(w, "rows", l->rows);
    json_number(w, "p50_us", l->p50);
    json_number(w, "p99_us", l->p99);
    json_number(w, "mean_us", l->mean);
    json_number(w, "requests_per_s", l->req_per_s);
    json_number(w, "rows_per_s", l->rows_per_s);
    json_end_object(w);
}

static void json_lat_modes(json_writer *w, const char *key, const serve_lat *l)
{
    json_begin_object(w, key);
    for (int m = 0; m < SERVE_MODES; m++)
        json_lat(w, serve_mode_names[m], &l[m]);
    json_end_object(w);
}

void report_serve_json(json_writer *w, const bench_results *res)
{
    const serve_result *r = res->serve;
    if (!r)
        return;
    if (!r->ran) {
        json_string(w, "error", r->error);
        json_bool(w, "pass", 0);
        return;
    }
    json_int(w, "requests", r->requests);
    json_bool(w, "quick", r->quick);
    json_bool(w, "pdl", r->pdl);
    json_int(w, "batch_seed", (long long)r->batch_seed);
    json_begin_array(w, "buckets");
    for (int b = 0; b < SERVE_N_BUCKETS; b++)
        json_int(w, NULL, r->buckets[b]);
    json_end_array(w);
    json_int(w, "steady_from", r->steady_from);
    json_lat_modes(w, "all", r->all);
    json_lat_modes(w, "steady", r->steady);
    json_lat_modes(w, "steady_batch_le8", r->small);
    json_begin_object(w, "in_flight");
    json_int(w, "depth", r->pipe_depth);
    for (int k = 0; k < 2; k++) {
        json_begin_object(w, k ? "steady_batch_le8" : "steady");
        for (int m = 0; m < SERVE_MODES; m++) {
            json_begin_object(w, serve_mode_names[m]);
            json_int(w, "requests", r->pipe[m][k].n);
            json_number(w, "req_per_s", pipe_req_per_s(&r->pipe[m][k]));
            json_number(w, "rows_per_s", pipe_rows_per_s(&r->pipe[m][k]));
            json_end_object(w);
        }
        json_end_object(w);
    }
    json_end_object(w);
    json_begin_array(w, "per_bucket");
    for (int b = 0; b < SERVE_N_BUCKETS; b++) {
        const serve_bucket *f = &r->bk[b];
        json_begin_object(w, NULL);
        json_int(w, "bucket", r->buckets[b]);
        json_lat_modes(w, "steady", f->lat);
        report_json_values(w, "launch_call_p50_us", serve_mode_names, f->launch_p50, SERVE_MODES);
        report_json_values(w, "input_write_p50_us", serve_mode_names, f->write_p50, SERVE_MODES);
        if (f->prof_ok) {
            json_number(w, "busy_us", f->busy_us);
            json_number(w, "busy_union_us", f->busy_union_us);
            json_number(w, "kernels_per_replay", f->kernels);
            json_number(w, "memcpys_per_replay", f->memcpys);
            json_number(w, "p50_over_busy", f->lat[SERVE_GRAPH].p50 / f->busy_us);
            json_number(w, "p50_over_busy_union", f->lat[SERVE_GRAPH].p50 / f->busy_union_us);
            json_number(w, "plain_p50_over_busy_union",
                        f->lat[SERVE_PLAIN].p50 / f->busy_union_us);
        } else {
            json_number(w, "busy_us", NAN);
        }
        json_end_object(w);
    }
    json_end_array(w);
    const cgr_step_stats *g = &r->graph;
    json_begin_object(w, "graph_shape_stats");
    json_int(w, "runs", (long long)g->runs);
    json_int(w, "hits", (long long)(g->replays - g->captures));
    json_int(w, "misses", (long long)(g->runs - (g->replays - g->captures)));
    json_int(w, "warmup_runs", (long long)g->warmup_runs);
    json_int(w, "captures", (long long)g->captures);
    json_int(w, "updates", (long long)g->updates);
    json_int(w, "update_failures", (long long)g->update_failures);
    json_int(w, "evictions", (long long)g->evictions);
    json_int(w, "eager_runs", (long long)g->eager_runs);
    json_number(w, "capture_us", g->capture_us);
    json_number(w, "instantiate_us", g->instantiate_us);
    json_number(w, "update_us", g->update_us);
    json_int(w, "arena_bytes", (long long)g->arena_bytes);
    json_int(w, "scratch_peak", (long long)g->scratch_peak);
    json_end_object(w);
    json_int(w, "graph_arena_reserved", (long long)r->graph_arena_reserved);
    json_int(w, "graph_arena_planned", (long long)r->graph_arena_planned);
    json_int(w, "eager_arena_bytes", (long long)r->eager_arena_bytes);
    json_number(w, "graph_wall_s", r->graph_wall_s);
    json_number(w, "eager_wall_s", r->eager_wall_s);
    json_int(w, "samples_checked", r->samples_checked);
    json_int(w, "sample_mismatches", r->sample_mismatches);
    json_int(w, "host_checks", r->host_checks);
    json_int(w, "host_mismatches", r->host_mismatches);
    json_number(w, "host_worst_rel", r->host_worst_rel);
    json_int(w, "in_flight_hashes_checked", r->pipe_hashes_checked);
    json_int(w, "in_flight_hash_mismatches", r->pipe_hash_mismatches);
    report_fig f[SERVE_FIGS];
    report_json_figs(w, "summary", f, serve_figs(r, f));
    json_bool(w, "pass", r->pass);
}

/* ---- newshape ------------------------------------------------------------------------ */

static const report_col stat_cols[] = {
    {"median", 9, 1, 0}, {"p10", 9, 1, 0}, {"p90", 9, 1, 0}, {"min", 9, 1, 0}, {"max", 9, 1, 0},
};

/* A new shape's cost: its capture, making its graph (make), and both (total, the header). */
static void stat_table(const char *make, const char *total, const bench_stats *const s[3])
{
    const report_table t = {"  ", -22, total, stat_cols, 5};
    const char *const label[3] = {"capture", make, total};
    report_head(&t);
    for (int i = 0; i < 3; i++) {
        const double v[] = {s[i]->median, s[i]->p10, s[i]->p90, s[i]->min, s[i]->max};
        report_row(&t, label[i], v);
    }
}

static const report_col frozen_cols[] = {
    {"bucket", 6, 0, 0},
    {"on", 8, 1, REPORT_GAP},  {"off", 8, 1, 0},       {"added", 8, 1, 0},
    {"check run", 9, 1, REPORT_GAP}, {"replay", 8, 1, 0},
    {"capture", 8, 1, REPORT_GAP},   {"added/cap", 9, 2, 0},
};
static const report_table frozen_table = {"  ", -11, "path", frozen_cols, 8};

static const report_col freplay_cols[] = {
    {"bucket", 6, 0, 0},
    {"wall on", 8, 2, REPORT_GAP}, {"wall off", 8, 2, 0}, {"on-off", 7, 2, REPORT_SIGNED},
    {"host on", 8, 2, REPORT_GAP}, {"host off", 8, 2, 0}, {"on-off", 7, 2, REPORT_SIGNED},
};
static const report_table freplay_table = {"  ", -11, "path", freplay_cols, 7};

/* What the check adds once per shape, over the capture of that shape. */
static double added_over_capture(const newshape_frozen *f)
{
    return f->added.median / f->capture.median;
}

static void report_frozen(const newshape_result *S)
{
    int any = 0;
    for (int i = 0; i < NEWSHAPE_PAIRS; i++)
        any |= S->pair[i].ran_frozen;
    if (!any)
        return;
    printf("frozen-value check (cgr_options.frozen_check) on against off, 16-graph cache, %d "
           "repetitions, on and off taking turns\n  once per new shape: wall us of its first %d "
           "runs (%d warm-ups, the capture, then the check run (on) or a replay (off), then a "
           "replay);\n  added = on - off per repetition, median; check run = the run after the "
           "capture, on; replay = that run, off;\n  capture = the shape's last_capture_us; "
           "medians\n",
           S->reps, S->frozen_runs, S->warmup_runs);
    report_head(&frozen_table);
    for (int i = 0; i < NEWSHAPE_PAIRS; i++)
        for (int k = 0; k < 2 && S->pair[i].ran_frozen; k++) {
            const newshape_bucket *b = &S->pair[i].b[k];
            const newshape_frozen *f = &b->frozen;
            const double v[] = {(double)b->bucket,      f->first_on.median, f->first_off.median,
                                f->added.median,        f->check_run.median,
                                f->same_run_off.median, f->capture.median,
                                added_over_capture(f)};
            report_row(&frozen_table, S->pair[i].path, v);
        }
    printf("  replays, check on against off, interleaved in rounds: wall and host CPU per "
           "replay, us, medians\n");
    report_head(&freplay_table);
    for (int i = 0; i < NEWSHAPE_PAIRS; i++)
        for (int k = 0; k < 2 && S->pair[i].ran_frozen; k++) {
            const newshape_bucket *b = &S->pair[i].b[k];
            const mode_result *on = &b->frozen.replay[0], *off = &b->frozen.replay[1];
            const double v[] = {(double)b->bucket, on->wall.median, off->wall.median,
                                on->wall.median - off->wall.median, on->cpu.median,
                                off->cpu.median, on->cpu.median - off->cpu.median};
            /* The figures, or what kept the check-on mode (else the check-off one) from them. */
            report_mode_row(&freplay_table, S->pair[i].path, report_usable(on) ? off : on, v);
        }
}

/* The raw CUDA graph of the same shapes (newshape_bench.c), and cgr's total over its. */
static void raw_line(const bench_stats *capture, const bench_stats *make,
                     const bench_stats *total, double cgr_total)
{
    printf("  raw CUDA graph, interleaved with cgr: capture %.1f + %.1f = %.1f; cgr / raw "
           "%.2f (medians)\n",
           capture->median, make->median, total->median, cgr_total / total->median);
}

void report_newshape(const bench_results *res)
{
    const newshape_result *S = res->newshape;
    if (!S)
        return;
    printf("\nnewshape: W-mlp training step (PDL) with a dynamic batch: the cost of a new shape, "
           "%d eager warm-up runs per shape excluded; %d repetitions per figure; us\n",
           S->warmup_runs, S->reps);
    for (int i = 0; i < NEWSHAPE_PAIRS; i++) {
        const newshape_pair *p = &S->pair[i];
        for (int k = 0; k < 2 && p->ran_instantiate; k++) {
            const newshape_bucket *b = &p->b[k];
            printf("%s path, bucket %lld (true batch %lld..%lld): %llu graph nodes (%llu "
                   "kernels)",
                   p->path, (long long)b->bucket, (long long)b->lo, (long long)b->bucket,
                   (unsigned long long)b->nodes, (unsigned long long)b->kernel_nodes);
            if (p->ran_step)
                printf(", replayed step %.1f us (p10 %.1f, p90 %.1f)", b->step.median,
                       b->step.p10, b->step.p90);
            printf("\n");
            stat_table("instantiate + launch", "capture + instantiate",
                       (const bench_stats *const[]){&b->capture, &b->instantiate, &b->total});
            raw_line(&b->raw_capture, &b->raw_instantiate, &b->raw_total, b->total.median);
            if (b->nodes)
                printf("  instantiate per node %.2f us; cold (first on the runtime): capture "
                       "%.1f + instantiate %.1f\n",
                       b->instantiate.median / (double)b->nodes, b->cold_capture_us,
                       b->cold_make_us);
        }
        if (!p->ran_update)
            continue;
        printf("%s path, update in place alternating buckets %lld and %lld (one-graph "
               "cache): %d of %d captures updated, %d update(s) failed%s%s\n",
               p->path, (long long)p->b[0].bucket, (long long)p->b[1].bucket, p->updates,
               p->attempts, p->failures, p->failures ? "; last reason: " : "",
               p->failures ? p->last_update_error : "");
        for (int r = 0; r < 16 && p->failures; r++)
            if (p->by_reason[r])
                printf("  failures with cudaGraphExecUpdateResult %d%s: %llu\n", r,
                       r == 15 ? " (or above)" : "", (unsigned long long)p->by_reason[r]);
        if (p->updates) {
            stat_table("update + launch", "capture + update",
                       (const bench_stats *const[]){&p->ucapture, &p->update, &p->utotal});
            if (p->raw_updates)
                raw_line(&p->raw_ucapture, &p->raw_update, &p->raw_utotal, p->utotal.median);
            else
                printf("  raw CUDA graph: no update in place took\n");
            const uint64_t nodes = p->b[1].nodes ? p->b[1].nodes : p->b[0].nodes;
            if (nodes)
                printf("  update per node %.2f us (about %llu nodes)\n",
                       p->update.median / (double)nodes, (unsigned long long)nodes);
        }
    }
    report_frozen(S);
}

/* cgr's median of n, and the raw CUDA graph's of the same shapes (NaN: none measured). */
static void summary_line(const char *what, const char *where, double median, int n, double raw)
{
    char label[160];
    snprintf(label, sizeof label, "%s: %s", what, where);
    if (n <= 0) {
        printf("%-46s no sample\n", label);
        return;
    }
    printf("%-46s %8.1f us (median of %d)", label, median, n);
    if (isfinite(raw))
        printf(", raw CUDA graph %.1f us, cgr / raw %.2f", raw, median / raw);
    printf("\n");
}

void report_newshape_summary(const bench_results *res)
{
    const newshape_result *S = res->newshape;
    if (!S)
        return;
    char where[96];
    for (int i = 0; i < NEWSHAPE_PAIRS; i++) {
        const newshape_pair *p = &S->pair[i];
        for (int k = 0; k < 2 && p->ran_instantiate; k++) {
            snprintf(where, sizeof where, "%s, bucket %lld", p->path, (long long)p->b[k].bucket);
            summary_line("capture + instantiate", where, p->b[k].total.median, S->reps,
                         p->b[k].raw_total.median);
        }
        if (p->ran_update) {
            snprintf(where, sizeof where, "%s, buckets %lld <-> %lld", p->path,
                     (long long)p->b[0].bucket, (long long)p->b[1].bucket);
            summary_line("capture + update", where, p->utotal.median, p->updates,
                         p->raw_utotal.median);
        }
    }
    for (int i = 0; i < NEWSHAPE_PAIRS; i++)
        for (int k = 0; k < 2 && S->pair[i].ran_frozen; k++) {
            const newshape_bucket *b = &S->pair[i].b[k];
            const mode_result *on = &b->frozen.replay[0], *off = &b->frozen.replay[1];
            snprintf(where, sizeof where, "frozen-value check, %s, bucket %lld", S->pair[i].path,
                     (long long)b->bucket);
            printf("%-46s once per shape", where);
            report_diff(6, 1, b->frozen.added.median);
            printf(" us (its capture");
            report_num(5, 1, b->frozen.capture.median);
            printf(" us); per replay: wall");
            report_diff(5, 2, report_wall(on) - report_wall(off));
            printf(", host");
            report_diff(5, 2, report_cpu(on) - report_cpu(off));
            printf(" us\n");
        }
}

static void json_stats(json_writer *w, const char *key, const bench_stats *s)
{
    /* Statistics over the repetitions (NaN, written as null, when none ran). */
    report_json_stats(w, key, s, 1);
}

static void json_frozen(json_writer *w, const newshape_result *S)
{
    json_begin_object(w, "frozen_check");
    json_int(w, "runs_per_shape", S->frozen_runs);
    json_int(w, "repetitions", S->reps);
    json_int(w, "frozen_checks_on", (long long)S->frozen_checks[0]);
    json_int(w, "new_graphs_on", (long long)S->new_graphs[0]);
    json_int(w, "frozen_checks_off", (long long)S->frozen_checks[1]);
    json_int(w, "new_graphs_off", (long long)S->new_graphs[1]);
    json_begin_array(w, "buckets");
    for (int i = 0; i < NEWSHAPE_PAIRS; i++)
        for (int k = 0; k < 2; k++) {
            const newshape_bucket *b = &S->pair[i].b[k];
            const newshape_frozen *f = &b->frozen;
            json_begin_object(w, NULL);
            json_string(w, "path", S->pair[i].path);
            json_int(w, "bucket", b->bucket);
            json_bool(w, "ran", S->pair[i].ran_frozen);
            json_stats(w, "first_runs_on_us", &f->first_on);
            json_stats(w, "first_runs_off_us", &f->first_off);
            json_stats(w, "added_once_us", &f->added);
            json_stats(w, "check_run_us", &f->check_run);
            json_stats(w, "same_run_off_us", &f->same_run_off);
            json_stats(w, "capture_us", &f->capture);
            json_number(w, "added_over_capture", added_over_capture(f));
            json_begin_object(w, "replay");
            report_json_mode(w, "check_on", &f->replay[0]);
            report_json_mode(w, "check_off", &f->replay[1]);
            json_number(w, "wall_on_minus_off_us",
                        report_wall(&f->replay[0]) - report_wall(&f->replay[1]));
            json_number(w, "host_cpu_on_minus_off_us",
                        report_cpu(&f->replay[0]) - report_cpu(&f->replay[1]));
            json_end_object(w);
            json_end_object(w);
        }
    json_end_array(w);
    json_end_object(w);
}

/* "raw_graph": the raw CUDA graph's figures and cgr's total over its (updates: -1 for none). */
static void json_raw(json_writer *w, const bench_stats *capture, const bench_stats *make,
                     const char *make_key, const bench_stats *total, const char *total_key,
                     double cgr_total, int updates)
{
    json_begin_object(w, "raw_graph");
    if (updates >= 0)
        json_int(w, "updates", updates);
    json_stats(w, "capture_us", capture);
    json_stats(w, make_key, make);
    json_stats(w, total_key, total);
    json_number(w, "cgr_over_raw", cgr_total / total->median);
    json_end_object(w);
}

void report_newshape_json(json_writer *w, const bench_results *res)
{
    const newshape_result *S = res->newshape;
    if (!S)
        return;
    json_string(w, "workload", "W-mlp training step, dynamic batch, pdl");
    json_int(w, "repetitions", S->reps);
    json_int(w, "warmup_runs_per_shape", S->warmup_runs);
    json_int(w, "timed_steps", S->steps);
    json_begin_array(w, "pairs");
    for (int i = 0; i < NEWSHAPE_PAIRS; i++) {
        const newshape_pair *p = &S->pair[i];
        json_begin_object(w, NULL);
        json_string(w, "path", p->path);
        json_begin_array(w, "buckets");
        for (int k = 0; k < 2; k++) {
            const newshape_bucket *b = &p->b[k];
            json_begin_object(w, NULL);
            json_int(w, "bucket", b->bucket);
            json_int(w, "true_batch_min", b->lo);
            json_bool(w, "ran", p->ran_instantiate);
            json_int(w, "graph_nodes", (long long)b->nodes);
            json_int(w, "graph_kernel_nodes", (long long)b->kernel_nodes);
            json_stats(w, "capture_us", &b->capture);
            json_stats(w, "instantiate_us", &b->instantiate);
            json_stats(w, "capture_instantiate_us", &b->total);
            json_raw(w, &b->raw_capture, &b->raw_instantiate, "instantiate_us", &b->raw_total,
                     "capture_instantiate_us", b->total.median, -1);
            json_number(w, "cold_capture_us", b->cold_capture_us);
            json_number(w, "cold_instantiate_us", b->cold_make_us);
            json_stats(w, "step_wall_us", &b->step);
            json_end_object(w);
        }
        json_end_array(w);
        json_begin_object(w, "update");
        json_bool(w, "ran", p->ran_update);
        json_int(w, "attempts", p->attempts);
        json_int(w, "updates", p->updates);
        json_int(w, "failures", p->failures);
        json_begin_array(w, "failures_by_reason");
        for (int r = 0; r < 16; r++)
            json_int(w, NULL, (long long)p->by_reason[r]);
        json_end_array(w);
        json_string(w, "last_update_error", p->last_update_error);
        json_stats(w, "capture_us", &p->ucapture);
        json_stats(w, "update_us", &p->update);
        json_stats(w, "capture_update_us", &p->utotal);
        json_raw(w, &p->raw_ucapture, &p->raw_update, "update_us", &p->raw_utotal,
                 "capture_update_us", p->utotal.median, p->raw_updates);
        json_end_object(w);
        json_end_object(w);
    }
    json_end_array(w);
    json_frozen(w, S);
    json_bool(w, "failed", S->failed);
}

/* ---- soak ------------------------------------------------------------------------------- */

static const char *const soak_limit_names[3] = {"soak_rss_growth_bytes", "soak_device_growth_bytes",
                                                "soak_pinned_growth_bytes"};

static const report_col sample_cols[] = {
    {"host RSS MiB", 14, 2, REPORT_GAP}, {"device used MiB", 16, 2, REPORT_GAP},
    {"pinned MiB", 11, 3, REPORT_GAP},
};
static const report_table sample_table = {"  ", 10, "step", sample_cols, 3};

void report_soak(const bench_results *res)
{
    const soak_result *s = res->soak;
    if (!s)
        return;
    printf("\nsoak: %ld runs of one step with a dynamic batch, fresh inputs every step, the batch "
           "switched every %ld steps among %d, %d, %d, %d (buckets %lld, %lld, %lld, %lld; D = "
           "%d), %d graphs cached; every %ld-th output checked bitwise against eager\n",
           s->steps, s->phase_steps, s->batches[0], s->batches[1], s->batches[2], s->batches[3],
           (long long)s->buckets[0], (long long)s->buckets[1], (long long)s->buckets[2],
           (long long)s->buckets[3], s->dim, s->graphs_cached, s->check_every);
    if (s->n_samples)
        report_head(&sample_table);
    for (int i = 0; i < s->n_samples; i++) {
        const soak_sample *x = &s->samples[i];
        char step[24];
        snprintf(step, sizeof step, "%ld", x->step);
        const double v[] = {x->rss < 0 ? NAN : (double)x->rss / 1048576.0,
                            (double)x->device / 1048576.0, (double)x->pinned / 1048576.0};
        report_row(&sample_table, step, v);
    }
    if (!s->ran) {
        printf("  did not finish: %s\n", s->error);
        return;
    }
    const cgr_step_stats *h = &s->graph;
    printf("  %ld outputs checked (%ld in warm-up, also against the host), %ld mismatches\n",
           s->checks, s->warm_checks, s->mismatches);
    printf("  graph runtime: %llu replays, %llu captures (%llu updated in place, %llu updates "
           "failed), %llu evictions, %llu eager warm-up runs, %llu frozen-value checks, %llu "
           "eager runs\n",
           (unsigned long long)(h->replays - h->captures), (unsigned long long)h->captures,
           (unsigned long long)h->updates, (unsigned long long)h->update_failures,
           (unsigned long long)h->evictions, (unsigned long long)h->warmup_runs,
           (unsigned long long)h->frozen_checks, (unsigned long long)h->eager_runs);
}

void report_soak_summary(const bench_results *res)
{
    const soak_result *s = res->soak;
    if (!s || !s->ran)
        return;
    printf("%-46s host RSS %+.3f MiB, device %+.3f MiB, pinned %+.3f MiB\n",
           "soak: growth from after warm-up to the end", (double)s->growth[0] / 1048576.0,
           (double)s->growth[1] / 1048576.0, (double)s->growth[2] / 1048576.0);
    printf("%-46s %.1f s, %.2f us per step (launch, fill and wait pipelined; checks "
           "included)\n",
           "soak: duration", s->wall_s, s->steps ? s->wall_s * 1e6 / (double)s->steps : 0.0);
}

void report_soak_json(json_writer *w, const bench_results *res)
{
    const soak_result *s = res->soak;
    if (!s)
        return;
    json_int(w, "steps", s->steps);
    json_int(w, "phase_steps", s->phase_steps);
    json_begin_array(w, "batches");
    for (int i = 0; i < SOAK_SHAPES; i++)
        json_int(w, NULL, s->batches[i]);
    json_end_array(w);
    json_begin_array(w, "buckets");
    for (int i = 0; i < SOAK_SHAPES; i++)
        json_int(w, NULL, s->buckets[i]);
    json_end_array(w);
    json_int(w, "graphs_cached", s->graphs_cached);
    if (!s->ran)
        json_string(w, "error", s->error);
    json_number(w, "wall_s", s->wall_s);
    json_number(w, "us_per_step", s->steps ? s->wall_s * 1e6 / (double)s->steps : 0.0);
    json_int(w, "replays", (long long)(s->graph.replays - s->graph.captures));
    json_int(w, "updates_in_place", (long long)s->graph.updates);
    json_int(w, "evictions", (long long)s->graph.evictions);
    json_int(w, "frozen_checks", (long long)s->graph.frozen_checks);
    json_int(w, "eager_runs", (long long)s->graph.eager_runs);
    json_int(w, "captures", (long long)s->graph.captures);
    json_int(w, "update_failures", (long long)s->graph.update_failures);
    json_int(w, "warmup_runs", (long long)s->graph.warmup_runs);
    json_int(w, "outputs_checked", s->checks);
    json_int(w, "warmup_outputs_checked", s->warm_checks);
    json_int(w, "mismatches", s->mismatches);
    json_begin_array(w, "samples");
    for (int i = 0; i < s->n_samples; i++) {
        json_begin_object(w, NULL);
        json_int(w, "step", s->samples[i].step);
        json_int(w, "host_rss_bytes", s->samples[i].rss);
        json_int(w, "device_used_bytes", s->samples[i].device);
        json_int(w, "pinned_bytes", s->samples[i].pinned);
        json_end_object(w);
    }
    json_end_array(w);
    static const char *const keys[3] = {"host_rss", "device_used", "pinned"};
    json_begin_object(w, "growth_bytes");
    for (int i = 0; i < 3; i++)
        json_int(w, keys[i], s->growth[i]);
    json_end_object(w);
    json_begin_object(w, "growth_limit_bytes");
    for (int i = 0; i < 3; i++)
        json_number(w, keys[i], limit_get(soak_limit_names[i]));
    json_end_object(w);
    json_bool(w, "pass", s->pass);
}

/* ---- W-ddp ------------------------------------------------------------------------------ */

const char *const ddp_mode_names[DDP_MODES] = {"single_graph", "ddp_eager", "ddp_graph",
                                              "allreduce_alone"};

static const report_col ddp_cols[] = {
    {"single graph", 12, 1, 0}, {"DDP eager", 12, 1, 0},  {"DDP graph", 12, 1, 0},
    {"graph/1GPU", 10, 3, REPORT_TIMES}, {"efficiency", 10, 1, REPORT_PCT},
    {"eager/graph", 11, 2, REPORT_TIMES}, {"host (graph)", 12, 1, 0},
};
static const report_table ddp_table = {"  ", -5, "B/GPU", ddp_cols, 7};

/* DDP graph over the single-GPU graph at the same per-GPU batch: weak scaling's cost. */
static double ddp_ratio(const ddp_batch *b)
{
    return report_wall(&b->mode[DDP_GRAPH]) / report_wall(&b->mode[DDP_SINGLE]);
}

void report_ddp(const bench_results *res)
{
    const ddp_result *d = res->ddp;
    if (!d)
        return;
    printf("\nW-ddp: W-mlp data-parallel on %d GPU%s (%s), one process per GPU, gradients "
           "all-reduced (sum, then x 1/%d) inside the step; rank 0's figures, median wall us "
           "per step of %d after %d warm-up, the modes interleaved in %d rounds\n",
           d->world, d->world == 1 ? "" : "s", res->device_name, d->world, res->cfg.steps,
           res->cfg.warmup, res->cfg.rounds);
    report_head(&ddp_table);
    for (int i = 0; i < d->n; i++) {
        const ddp_batch *b = &d->b[i];
        const double ratio = ddp_ratio(b);
        const double v[] = {report_wall(&b->mode[DDP_SINGLE]), report_wall(&b->mode[DDP_EAGER]),
                            report_wall(&b->mode[DDP_GRAPH]),  ratio, 1.0 / ratio,
                            report_wall(&b->mode[DDP_EAGER]) / report_wall(&b->mode[DDP_GRAPH]),
                            report_cpu(&b->mode[DDP_GRAPH])};
        char label[16];
        snprintf(label, sizeof label, "%d", b->B);
        report_row(&ddp_table, label, v);
    }
    for (int i = 0; i < d->n; i++) {
        const ddp_batch *b = &d->b[i];
        const mode_result *ar = &b->mode[DDP_ALLREDUCE];
        if (report_usable(ar))
            printf("  B = %d: the gradient's all-reduce alone (one-node graph, %.1f MB): %.1f us "
                   "(p10 %.1f, p90 %.1f); DDP graph - single graph: %.1f us\n",
                   b->B, 4e-6 * (double)d->n_floats, ar->wall.median, ar->wall.p10, ar->wall.p90,
                   report_wall(&b->mode[DDP_GRAPH]) - report_wall(&b->mode[DDP_SINGLE]));
    }
}

void report_ddp_summary(const bench_results *res)
{
    const ddp_result *d = res->ddp;
    for (int i = 0; d && i < d->n; i++) {
        char label[64];
        snprintf(label, sizeof label, "W-ddp B=%d/GPU on %d GPU%s: weak-scaling efficiency",
                 d->b[i].B, d->world, d->world == 1 ? "" : "s");
        report_line(label, (const double[]){1.0 / ddp_ratio(&d->b[i])}, 1, 1, REPORT_PCT);
    }
}

void report_ddp_json(json_writer *w, const bench_results *res)
{
    const ddp_result *d = res->ddp;
    if (!d)
        return;
    json_int(w, "world", d->world);
    json_begin_array(w, "results");
    for (int i = 0; i < d->n; i++) {
        const ddp_batch *b = &d->b[i];
        json_begin_object(w, NULL);
        json_int(w, "batch_per_gpu", b->B);
        for (int m = 0; m < DDP_MODES; m++)
            report_json_mode(w, ddp_mode_names[m], &b->mode[m]);
        const double ratio = ddp_ratio(b);
        json_number(w, "graph_over_single", ratio);
        json_number(w, "weak_scaling_efficiency", 1.0 / ratio);
        json_number(w, "eager_over_graph",
                    report_wall(&b->mode[DDP_EAGER]) / report_wall(&b->mode[DDP_GRAPH]));
        json_int(w, "eager_equals_graph", b->eager_equals_graph);
        json_end_object(w);
    }
    json_end_array(w);
}

/* ---- the verdict's share ---------------------------------------------------------------- */

void report_suites_modes(const bench_results *res, report_visit fn, void *u)
{
    char g[64];
    for (int i = 0; res->ddp && i < res->ddp->n; i++) {
        snprintf(g, sizeof g, "W-ddp B=%d", res->ddp->b[i].B);
        for (int m = 0; m < DDP_MODES; m++)
            fn(g, &res->ddp->b[i].mode[m], u);
    }
    for (int i = 0; res->newshape && i < NEWSHAPE_PAIRS; i++)
        for (int k = 0; k < 2 && res->newshape->pair[i].ran_frozen; k++) {
            const newshape_bucket *b = &res->newshape->pair[i].b[k];
            snprintf(g, sizeof g, "newshape frozen check, bucket %lld", (long long)b->bucket);
            fn(g, &b->frozen.replay[0], u);
            fn(g, &b->frozen.replay[1], u);
        }
}

long report_suites_checked(const bench_results *res)
{
    long n = 0;
    if (res->serve)
        n += res->serve->samples_checked + res->serve->host_checks +
             res->serve->pipe_hashes_checked;
    if (res->soak)
        n += res->soak->checks;
    if (res->newshape)
        n += res->newshape->losses_checked;
    return n;
}

int report_suites_failed(const bench_results *res, char *first, size_t n)
{
    if (res->serve && !res->serve->ran)
        snprintf(first, n, "W-serve: %s", res->serve->error);
    else if (res->soak && !res->soak->ran)
        snprintf(first, n, "soak: %s", res->soak->error);
    else if (res->newshape && res->newshape->failed)
        snprintf(first, n, "newshape: a measurement failed (see the errors above)");
    else
        return 0;
    return 1;
}
