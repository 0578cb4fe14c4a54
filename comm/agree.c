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
 * is launched, the ranks exchange a small record each (verdict.h: what
 * is agreed on, the rank, its capture status, the step's name hashed, its
 * runs so far, the agreements before) with an all-gather on cgr's private
 * communicator. Every rank sees all records, so every rank reaches the
 * same verdict from the same data (verdict.c):
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
#include "hash.h"
#include "verdict.h"

#if CGR_HAVE_NCCL

/*
 * One agreement: every rank contributes mine[CGR__AGREE_WORDS]; on success
 * the [world][CGR__AGREE_WORDS] records, in rank order, follow this rank's
 * own in c->host (valid until the next exchange). Bounded by
 * c->timeout_ms; on failure priv is aborted.
 */
static cgr_status exchange(struct cgr__comm *c, const int64_t *mine)
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

/*
 * The options that decide at which runs a step captures, checks or evicts:
 * ranks that differ in one of them would capture a collective at different
 * runs (warmup_runs and capture have record words of their own, each
 * named in its own message).
 */
static int64_t capture_policy(const cgr_options *o)
{
    const uint64_t v[] = {(uint64_t)o->frozen_check,   (uint64_t)o->shape_cache_entries,
                          (uint64_t)o->shape_cache_bytes, (uint64_t)o->churn_shapes,
                          (uint64_t)o->churn_window,   (uint64_t)o->churn_stable,
                          (uint64_t)o->advanced.shape_spare, (uint64_t)o->frozen_recheck};
    return (int64_t)(cgr__fnv1a(v, sizeof v) >> 1);
}

cgr_status cgr__comm_agree_attach(cgr_runtime *rt, struct cgr__comm *c)
{
    int64_t mine[CGR__AGREE_WORDS] = {0};
    mine[CGR__REC_KIND] = CGR__RECORD_ATTACH;
    mine[CGR__REC_RANK] = c->rank;
    mine[CGR__REC_STATUS] = CGR_STATUS_OK;
    mine[CGR__REC_WARMUP_RUNS] = rt->opt.warmup_runs;
    mine[CGR__REC_CAPTURE_AT] = rt->opt.capture;
    mine[CGR__REC_POLICY] = capture_policy(&rt->opt);
    CGR_TRY(exchange(c, mine));
    const int64_t *all = c->host + CGR__AGREE_WORDS;
    cgr__verdict v;
    cgr__verdict_attach(all, c->world, mine, &v);
    if (v.kind == CGR__VERDICT_AGREED)
        return CGR_STATUS_OK;
    const int64_t *w = cgr__record_of(all, v.rank);
    switch (v.kind) {
    case CGR__VERDICT_NOT_ATTACHING:
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_runtime_attach_nccl: rank %d is not attaching (it sent record "
                        "kind %lld); every rank must attach before any of them captures",
                        v.rank, (long long)w[CGR__REC_KIND]);
    case CGR__VERDICT_RUN_OPTIONS:
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_runtime_attach_nccl: rank %d has warmup_runs %lld and capture "
                        "%lld, rank %d has %lld and %lld; all ranks must capture at the same "
                        "run, so these options must match",
                        v.rank, (long long)w[CGR__REC_WARMUP_RUNS],
                        (long long)w[CGR__REC_CAPTURE_AT], c->rank,
                        (long long)mine[CGR__REC_WARMUP_RUNS],
                        (long long)mine[CGR__REC_CAPTURE_AT]);
    case CGR__VERDICT_POLICY:
        return CGR_FAIL(CGR_STATUS_WRONG_STATE,
                        "cgr_runtime_attach_nccl: rank %d and rank %d differ in frozen_check, "
                        "frozen_recheck, shape_cache_entries, shape_cache_bytes, "
                        "churn_shapes, churn_window, churn_stable or advanced.shape_spare; "
                        "these decide at which runs a step captures, so they must match on "
                        "all ranks",
                        v.rank, c->rank);
    default:
        return CGR_BUG("attach agreement: verdict %d", (int)v.kind);
    }
}

cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local,
                                   cgr__capture_facts *f)
{
    struct cgr__comm *c = rt->comm;
    if (!cgr__step_has_peers(s))
        return local;
    /* This rank's own reason, kept before any call below replaces the message. */
    char local_msg[512] = "";
    if (local != CGR_STATUS_OK)
        snprintf(local_msg, sizeof local_msg, "%s", cgr_last_error());

    int64_t mine[CGR__AGREE_WORDS] = {0};
    mine[CGR__REC_KIND] = CGR__RECORD_CAPTURE;
    mine[CGR__REC_RANK] = c->rank;
    mine[CGR__REC_STATUS] = local;
    mine[CGR__REC_STEP] = (int64_t)cgr__fnv1a(s->name, strlen(s->name));
    mine[CGR__REC_RUN] = (int64_t)f->run;
    mine[CGR__REC_SEQ] = (int64_t)c->agreements;
    mine[CGR__REC_SHAPE] = (int64_t)(f->shape >> 1);
    mine[CGR__REC_BYTES] = (int64_t)(f->bytes > INT64_MAX ? INT64_MAX : f->bytes);
    int prev = 0;
    cgr_status st = cgr__device_enter(rt, &prev);
    if (st == CGR_STATUS_OK) {
        st = exchange(c, mine);
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

    const int64_t *all = c->host + CGR__AGREE_WORDS;
    cgr__verdict v;
    cgr__verdict_capture(all, c->world, &v);
    if (v.kind == CGR__VERDICT_AGREED) {
        f->bytes = (size_t)cgr__verdict_bytes(all, c->world);
        return CGR_STATUS_OK;
    }
    const int64_t *w = cgr__record_of(all, v.rank);
    if (v.kind == CGR__VERDICT_OUT_OF_STEP)
        st = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                      "step '%s' (rank %d of %d): the ranks did not capture the same thing: rank "
                      "%d captured step hash %016llx, shape hash %016llx at run %lld (agreement "
                      "%lld), rank 0 step hash %016llx, shape hash %016llx at run %lld "
                      "(agreement %lld); all ranks must run the same steps with the same dims "
                      "in the same order with the same options, so no rank launches this graph",
                      s->name, c->rank, c->world, v.rank, (unsigned long long)w[CGR__REC_STEP],
                      (unsigned long long)w[CGR__REC_SHAPE], (long long)w[CGR__REC_RUN],
                      (long long)w[CGR__REC_SEQ], (unsigned long long)all[CGR__REC_STEP],
                      (unsigned long long)all[CGR__REC_SHAPE], (long long)all[CGR__REC_RUN],
                      (long long)all[CGR__REC_SEQ]);
    else
        st = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                      "step '%s' (rank %d of %d): capture failed on rank%s %s (%s%s); no rank "
                      "launches the graph, since its collectives would wait forever for %s",
                      s->name, c->rank, c->world, v.n_failed > 1 ? "s" : "", v.failed,
                      cgr_status_name((cgr_status)w[CGR__REC_STATUS]),
                      v.n_failed > 1 ? " first" : "", v.n_failed > 1 ? "those ranks" : "that rank");
    if (local_msg[0])
        cgr__error_append("this rank's failure: %s: %s", cgr_status_name(local), local_msg);
    cgr__log(rt, CGR_LOG_WARN, "%s", cgr_last_error());
    return st;
}

#else /* !CGR_HAVE_NCCL */

cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local,
                                   cgr__capture_facts *f)
{
    (void)rt;
    (void)s;
    (void)f;
    return local;
}

#endif
