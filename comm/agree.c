/*
 * The capture agreement (docs/multigpu.md).
 *
 * NCCL's rule for graphs: whether a collective is captured is a collective
 * property. Every rank must capture it, and every rank must then launch
 * the graph that holds it; a graph launched on some ranks only waits
 * forever inside its collective. cgr captures each rank's step on its own,
 * and a capture can fail on one rank only (an illegal call in a branch
 * that one rank takes, an out-of-memory error on one GPU). So after every
 * capture of a step that uses the communicator, and before any graph of it
 * is launched, the ranks exchange a small record each:
 *
 *   word 0  what is agreed on (CGR__AGREE_CAPTURE; CGR__AGREE_ATTACH at attach time)
 *   word 1  the rank
 *   word 2  the local capture status (cgr_status)
 *   word 3  the step's name, hashed (attach: warm-up runs)
 *   word 4  the step's runs so far (attach: cgr_options.capture)
 *   word 5  the agreements this rank made before (a sequence number)
 *   6, 7    zero
 *
 * with an all-gather on cgr's private communicator. Every rank sees all
 * records, so every rank reaches the same verdict from the same data:
 * launch if all ranks captured the same step at the same run; otherwise
 * CGR_STATUS_CAPTURE_FAILED everywhere, naming the ranks that failed, and
 * the step runs eagerly on every rank, whose collectives then pair up as
 * uncaptured operations on all ranks alike.
 *
 * The exchange is bounded (wait.c). When it cannot finish, this rank
 * cannot know what its peers decided, so it fails with CGR_STATUS_TIMEOUT
 * (the deadline passed) or CGR_STATUS_COMM_ERROR (NCCL reported an error),
 * not with CAPTURE_FAILED: running the step eagerly next, while a peer
 * replays its graph, would hang. It also aborts the private communicator,
 * so every later capture fails at once, with CGR_STATUS_COMM_ERROR.
 */
#include <stdio.h>
#include <string.h>

#include "comm.h"

#if CGR_HAVE_NCCL

/*
 * One agreement: every rank contributes mine[CGR__AGREE_WORDS]; on success
 * *all points at the [world][CGR__AGREE_WORDS] records, in rank order
 * (valid until the next exchange). Bounded by c->timeout_ms; on failure
 * priv is aborted.
 */
static cgr_status exchange(struct cgr__comm *c, const int64_t *mine, const int64_t **all)
{
    if (!c->priv)
        return CGR_FAIL(CGR_STATUS_COMM_ERROR,
                        "NCCL: cgr's agreement communicator was aborted earlier (%s); no graph "
                        "that needs the peers' agreement can be launched on this runtime",
                        c->broken_why);
    const size_t rec = CGR__AGREE_WORDS * sizeof(int64_t);
    double deadline = cgr__comm_deadline(c->timeout_ms);
    cgr_status st = CGR_STATUS_OK;
    memcpy(c->host, mine, rec);
    CGR_CUDA_TRY_GOTO(cudaMemcpyAsync(c->dev, c->host, rec, cudaMemcpyHostToDevice, c->stream),
                      st, fail);
    CGR_NCCL_TRY_GOTO(cgr__nccl()->ncclAllGather(c->dev, c->dev + CGR__AGREE_WORDS,
                                                 CGR__AGREE_WORDS, ncclInt64, c->priv, c->stream),
                      st, fail);
    /*
     * Non-blocking: the all-gather may still be on its way into the stream
     * (ncclInProgress). Nothing else may be issued until it is there.
     */
    CGR_TRY_GOTO(cgr__comm_wait(c->priv, NULL, deadline, c->timeout_ms, "ncclAllGather (enqueue)"),
                 st, fail);
    CGR_CUDA_TRY_GOTO(cudaMemcpyAsync(c->host + CGR__AGREE_WORDS, c->dev + CGR__AGREE_WORDS,
                                      (size_t)c->world * rec, cudaMemcpyDeviceToHost, c->stream),
                      st, fail);
    CGR_CUDA_TRY_GOTO(cudaEventRecord(c->done, c->stream), st, fail);
    CGR_TRY_GOTO(cgr__comm_wait(c->priv, c->done, deadline, c->timeout_ms,
                                "the agreement's ncclAllGather"),
                 st, fail);
    *all = c->host + CGR__AGREE_WORDS;
    return CGR_STATUS_OK;
fail:
    /*
     * This rank cannot know what its peers saw, so priv is aborted
     * (ncclCommAbort is local, it never waits for peers) and later
     * agreements fail at once. The reason is kept without touching the
     * last-error message.
     */
    snprintf(c->broken_why, sizeof c->broken_why, "%s", cgr_last_error());
    (void)cgr__nccl()->ncclCommAbort(c->priv);
    c->priv = NULL;
    return st;
}

/* 64-bit FNV-1a of n bytes: the same on every rank for the same input. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/*
 * The options that decide at which runs a step captures, checks or evicts:
 * ranks that differ in one of them would capture a collective at different
 * runs (words 3 and 4 are warmup_runs and capture, each named in its own
 * message).
 */
static int64_t capture_policy(const cgr_options *o)
{
    const uint64_t v[] = {(uint64_t)o->frozen_check,   (uint64_t)o->shape_cache_entries,
                          (uint64_t)o->shape_cache_bytes, (uint64_t)o->churn_shapes,
                          (uint64_t)o->churn_window,   (uint64_t)o->churn_stable,
                          (uint64_t)o->advanced.shape_spare, (uint64_t)o->frozen_recheck};
    return (int64_t)(fnv1a(v, sizeof v) >> 1);
}

cgr_status cgr__comm_agree_attach(cgr_runtime *rt, struct cgr__comm *c)
{
    int64_t mine[CGR__AGREE_WORDS] = {CGR__AGREE_ATTACH,         c->rank,
                                      CGR_STATUS_OK,             rt->opt.warmup_runs,
                                      rt->opt.capture,           capture_policy(&rt->opt),
                                      0,                         0};
    const int64_t *all = NULL;
    CGR_TRY(exchange(c, mine, &all));
    for (int r = 0; r < c->world; r++) {
        const int64_t *w = all + (size_t)r * CGR__AGREE_WORDS;
        if (w[0] != CGR__AGREE_ATTACH || w[1] != r)
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_runtime_attach_nccl: rank %d is not attaching (it sent record "
                            "kind %lld); every rank must attach before any of them captures",
                            r, (long long)w[0]);
        if (w[3] != mine[3] || w[4] != mine[4])
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_runtime_attach_nccl: rank %d has warmup_runs %lld and capture "
                            "%lld, rank %d has %lld and %lld; all ranks must capture at the same "
                            "run, so these options must match",
                            r, (long long)w[3], (long long)w[4], c->rank, (long long)mine[3],
                            (long long)mine[4]);
        if (w[5] != mine[5])
            return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                            "cgr_runtime_attach_nccl: rank %d and rank %d differ in frozen_check, "
                            "frozen_recheck, shape_cache_entries, shape_cache_bytes, "
                            "churn_shapes, churn_window, churn_stable or advanced.shape_spare; "
                            "these decide at which runs a step captures, so they must match on "
                            "all ranks",
                            r, c->rank);
    }
    return CGR_STATUS_OK;
}

/* Appends " r" for each rank whose record says its capture failed. */
static void failed_ranks(const struct cgr__comm *c, const int64_t *all, char *out, size_t cap,
                         int *n_failed, int64_t *first_status)
{
    size_t n = 0;
    int cut = 0;
    out[0] = '\0';
    *n_failed = 0;
    for (int r = 0; r < c->world; r++) {
        const int64_t *w = all + (size_t)r * CGR__AGREE_WORDS;
        if (w[2] == CGR_STATUS_OK)
            continue;
        if (*n_failed == 0)
            *first_status = w[2];
        ++*n_failed;
        if (n + 16 < cap) {
            n += (size_t)snprintf(out + n, cap - n, "%s%d", *n_failed > 1 ? ", " : "", r);
        } else if (!cut) {
            cut = 1; /* cap > 16 leaves room for the ellipsis */
            n += (size_t)snprintf(out + n, cap - n, ", ...");
        }
    }
}

/* The first rank whose record differs from rank 0's in what was captured, or -1. */
static int out_of_step(const struct cgr__comm *c, const int64_t *all)
{
    for (int r = 0; r < c->world; r++) {
        const int64_t *w = all + (size_t)r * CGR__AGREE_WORDS;
        if (w[0] != CGR__AGREE_CAPTURE || w[1] != r || w[3] != all[3] || w[4] != all[4] ||
            w[5] != all[5])
            return r;
    }
    return -1;
}

cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local)
{
    struct cgr__comm *c = rt->comm;
    if (!c || !s->uses_nccl)
        return local;
    /* This rank's own reason, kept before any call below replaces the message. */
    char local_msg[512] = "";
    if (local != CGR_STATUS_OK)
        snprintf(local_msg, sizeof local_msg, "%s", cgr_last_error());

    int64_t mine[CGR__AGREE_WORDS] = {CGR__AGREE_CAPTURE,
                                      c->rank,
                                      local,
                                      (int64_t)fnv1a(s->name, strlen(s->name)),
                                      (int64_t)s->stats.runs,
                                      (int64_t)c->agreements,
                                      0,
                                      0};
    const int64_t *all = NULL;
    int prev = 0;
    cgr_status st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = exchange(c, mine, &all);
        cgr__device_leave(prev);
    }
    if (st != CGR_STATUS_OK) {
        if (local_msg[0])
            cgr__error_append("this rank's own capture had failed too: %s: %s",
                              cgr_status_name(local), local_msg);
        cgr__log(rt, CGR_LOG_ERROR, "step '%s': no capture agreement with the peers: %s", s->name,
                 cgr_last_error());
        return st;
    }
    c->agreements++;

    int odd = out_of_step(c, all);
    if (odd >= 0) {
        const int64_t *w = all + (size_t)odd * CGR__AGREE_WORDS;
        st = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                      "step '%s' (rank %d of %d): the ranks did not capture the same thing: rank "
                      "%d captured step hash %016llx at run %lld (agreement %lld), rank 0 step "
                      "hash %016llx at run %lld (agreement %lld); all ranks must run the same "
                      "steps in the same order with the same options, so no rank launches this "
                      "graph",
                      s->name, c->rank, c->world, odd, (unsigned long long)w[3], (long long)w[4],
                      (long long)w[5], (unsigned long long)all[3], (long long)all[4],
                      (long long)all[5]);
    } else {
        char ranks[128];
        int n_failed = 0;
        int64_t first = CGR_STATUS_OK;
        failed_ranks(c, all, ranks, sizeof ranks, &n_failed, &first);
        if (n_failed == 0)
            return CGR_STATUS_OK;
        st = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                      "step '%s' (rank %d of %d): capture failed on rank%s %s (%s%s); no rank "
                      "launches the graph, since its collectives would wait forever for %s",
                      s->name, c->rank, c->world, n_failed > 1 ? "s" : "", ranks,
                      cgr_status_name((cgr_status)first), n_failed > 1 ? " first" : "",
                      n_failed > 1 ? "those ranks" : "that rank");
    }
    if (local_msg[0])
        cgr__error_append("this rank's failure: %s: %s", cgr_status_name(local), local_msg);
    cgr__log(rt, CGR_LOG_WARN, "%s", cgr_last_error());
    return st;
}

#else /* !CGR_HAVE_NCCL */

cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local)
{
    (void)rt;
    (void)s;
    return local;
}

#endif
