/*
 * What a run that does not replay does: the shape table (shapes.h)
 * decides, replay/run.c launches replays and hands the rest here.
 *
 *   WARMUP   eager run of a new shape (the first traces its scratch)
 *   CAPTURE  capture the shape; update an offered executable in place or
 *            instantiate; cache it; launch it
 *   EAGER    eager run (churn guard, failed capture, too large, frozen value)
 *   REPLAY of a graph not checked yet: the frozen-value check (below)
 *
 * A step without dynamic dims has one shape and goes through the same
 * path: warm-up runs, one capture, replays. Everything runs under rt->lock
 * (replay/run.c), so a capture on the runtime's stream never meets another
 * thread's launch. Also here: moving a run's tensors between their true
 * shape and the bucket's (padding inputs, packing outputs).
 */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "replay.h"
#include "shape_io.h"

/* The dims of tensor t at the run's true or bucket values. */
static void tensor_dims(const cgr__tensor *t, const int64_t *vals, int64_t *out)
{
    for (int a = 0; a < t->desc.rank; a++)
        out[a] = t->dyn[a] >= 0 ? vals[t->dyn[a]] : t->desc.dims[a];
}

size_t cgr__tensor_bytes_at(const cgr__tensor *t, const int64_t *vals)
{
    if (!t->n_dyn_axes)
        return t->bytes;
    int64_t d[CGR_MAX_RANK];
    tensor_dims(t, vals, d);
    return cgr__shape_bytes(t->desc.rank, d, cgr_dtype_size(t->desc.dtype));
}

/*
 * Every tensor's shape for this run (what the step sees) from the bucket,
 * and the slot's packed inputs spread to it, with the true dims stored.
 */
void cgr__stage_shape(cgr_step *s, uint32_t slot, const int64_t *bucket, const int64_t *true_dims)
{
    unsigned char *host = cgr__slot_host(s, slot);
    memcpy(s->cur_bucket, bucket, (size_t)s->n_dyn * sizeof *bucket);
    memcpy(host + CGR__SLOT_DIMS_OFFSET, true_dims, (size_t)s->n_dyn * sizeof *true_dims);
    for (int side = 0; side < 2; side++) {
        int n = side ? s->n_out : s->n_in;
        for (int i = 0; i < n; i++) {
            cgr__tensor *t = side ? &s->out[i] : &s->in[i];
            if (!t->n_dyn_axes)
                continue;
            tensor_dims(t, bucket, t->cur.dims);
            t->cur_bytes = cgr__tensor_bytes_at(t, bucket);
            if (side)
                continue;
            int64_t td[CGR_MAX_RANK];
            tensor_dims(t, true_dims, td);
            cgr__shape_pad(host + t->slot_offset, t->desc.rank, td, t->cur.dims,
                           cgr_dtype_size(t->desc.dtype), t->pad_nonzero ? t->pad : NULL);
        }
    }
}

/*
 * The shape runs eagerly from now on, for `why`, which becomes capture_error
 * ("<the public call>: why", cut to fit): the capture in flight failed (or
 * capture is off) when `entry` is CGR__SHAPES_NONE, else the graph cached in
 * `entry` is wrong for later runs (CUDA frees it once a launch still running
 * it is done).
 */
static void shape_eager(cgr_step *s, uint32_t entry, cgr_eager_reason reason, const char *why)
{
    cgr_step_stats *ss = &s->stats;
    char *out = ss->capture_error;
    const size_t cap = sizeof ss->capture_error;
    int n = snprintf(out, cap, "%s: %s", s->api_fn ? s->api_fn : "cgr", why);
    if (n < 0)
        out[0] = '\0';
    if (entry == CGR__SHAPES_NONE) {
        cgr__shapes_capture_failed(s->shapes, out);
    } else {
        cgr__shapes_freed victim;
        cgr__shapes_refuse(s->shapes, entry, reason, out, &victim);
        cgr__graph_free(victim.payload);
    }
    ss->mode = CGR_MODE_EAGER;
    cgr__log(s->rt, CGR_LOG_WARN, "step '%s' runs this shape eagerly: %s", s->name, out);
}

/* What the peers' agreement compares for this run (comm/comm.h), with this rank's graph's cost. */
static cgr__capture_facts facts_of(const cgr_step *s, const cgr__shapes_decision *d,
                                   size_t bytes)
{
    return (cgr__capture_facts){s->shapes->churn.counters.steps,
                                cgr__fnv1a(d->dims, (size_t)s->n_dyn * sizeof d->dims[0]),
                                bytes};
}

static cgr_status capture_run(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                              uint8_t *action, uint8_t *reason)
{
    cgr_runtime *rt = s->rt;
    cgr_step_stats *ss = &s->stats;
    cgr__shape_plan *plan = &s->plans[d->entry];
    if (!rt->opt.capture) {
        shape_eager(s, CGR__SHAPES_NONE, CGR_EAGER_CAPTURE_FAILED,
                    "capture disabled (cgr_options.capture = 0)");
        *action = CGR_RUN_EAGER;
        *reason = CGR_EAGER_CAPTURE_FAILED;
        return cgr__run_eager(s, slot, plan);
    }
    /* submit (run.c) refused this run while a thread waits, unless it records nothing. */
    assert(s->waiters == 0 || !plan->planned);
    if (!plan->planned && !plan->unbacked[0] && !cgr__step_has_peers(s)) {
        /*
         * Its warm-ups failed before they planned the scratch: warm up again
         * first. Not with peers: they capture at this run, and one rank
         * running the step eagerly meanwhile would leave their agreement
         * and its own collectives waiting on each other. There cgr__capture
         * fails it, through the agreement, and every rank runs it eagerly.
         */
        cgr__shapes_capture_cancel(s->shapes);
        *action = CGR_RUN_WARMUP;
        return cgr__run_eager(s, slot, plan);
    }
    cgr__capture_out co;
    cgr_status local = cgr__capture(s, plan, d->payload, &co);
    cgr__capture_facts facts = facts_of(s, d, local == CGR_STATUS_OK ? co.graph->bytes : 0);
    cgr_status st = cgr__comm_after_capture(rt, s, local, &facts);
    /*
     * An offer that failed to update is never replayed again: it leaves the
     * table now, and co frees it after this run is launched, so that
     * destroying it does not delay the run (cgr__capture_retire, on every
     * path below).
     */
    if (co.refused) {
        cgr__shapes_freed taken;
        cgr__shapes_update_failed(s->shapes, co.update_result, co.update_text, &taken);
        assert(taken.payload == co.refused);
    }
    if (st != CGR_STATUS_OK) {
        if (local == CGR_STATUS_OK) {
            /* Made here but refused by a peer: undo it, an updated offer included. */
            if (co.updated) {
                cgr__shapes_freed withdrawn;
                cgr__shapes_offer_withdrawn(s->shapes, &withdrawn);
                cgr__graph_free(withdrawn.payload);
            } else {
                cgr__graph_free(co.graph);
            }
        }
        if (st != CGR_STATUS_CAPTURE_FAILED) {
            cgr__capture_retire(&co);
            cgr__shapes_capture_cancel(s->shapes);
            return st;
        }
        /*
         * Nothing of this run has executed: a capture records work without
         * running it. So the run goes eagerly now, on the inputs already in
         * its slot, and the caller's ticket completes as any other; the
         * failure is in the stats and the log. Every rank agreed on the
         * failure (comm), so all of them run this shape eagerly alike.
         */
        shape_eager(s, CGR__SHAPES_NONE, CGR_EAGER_CAPTURE_FAILED, cgr_last_error());
        *action = CGR_RUN_EAGER;
        *reason = CGR_EAGER_CAPTURE_FAILED;
        st = cgr__run_eager(s, slot, plan);
        cgr__capture_retire(&co);
        return st;
    }
    cgr__graph *g = co.graph;
    /* Charged alike on every rank: the largest rank's cost (its own without peers). */
    g->bytes = facts.bytes;
    cgr__shapes_outcome oc;
    cgr__shapes_capture_done(s->shapes, g, g->bytes, co.updated, &oc);
    /*
     * Launch first: a graph refused as too large is in the freed list and
     * goes below, after its one run (CUDA frees a running executable once it
     * is done). Its counts are copied before that. This first launch also
     * uploads the new executable, so it counts as part of making it.
     */
    const double t0 = cgr__now_us();
    cgr_status ls = cgr__launch_graph(s, g, slot, 0);
    co.make_us += cgr__now_us() - t0;
    cgr__capture_retire(&co);
    const cgr__graph made = *g;
    for (uint32_t i = 0; i < oc.n_freed; i++)
        cgr__graph_free(oc.freed[i].payload);
    if (!oc.cached)
        cgr__log(rt, CGR_LOG_WARN, "step '%s': this shape's graph (%zu bytes) exceeds "
                 "shape_cache_bytes; it runs eagerly from now on", s->name, made.bytes);
    CGR_TRY(ls);
    /* Timed with the captures they belong to: a run whose launch failed is in neither. */
    ss->capture_us += co.capture_us;
    if (co.updated)
        ss->update_us += co.make_us;
    else
        ss->instantiate_us += co.make_us;
    cgr__log(rt, CGR_LOG_INFO,
             "step '%s' captured: %llu nodes, executable %s, capture %.1f us + %.1f us",
             s->name, (unsigned long long)made.nodes,
             co.updated ? "updated in place" : "instantiated", co.capture_us, co.make_us);
    *action = co.updated ? CGR_RUN_UPDATE : CGR_RUN_CAPTURE;
    ss->mode = CGR_MODE_GRAPH;
    ss->capture_error[0] = '\0';
    ss->last_capture_us = co.capture_us;
    ss->last_make_us = co.make_us;
    ss->graph_nodes = made.nodes;
    ss->graph_kernel_nodes = made.kernel_nodes;
    ss->graph_memcpy_nodes = made.memcpy_nodes;
    ss->zero_copy_tensors = made.zero_copy_tensors;
    ss->memcpy_tensors = made.memcpy_tensors;
    return CGR_STATUS_OK;
}

/*
 * The run after a shape's capture: captured again and compared with the
 * first capture (capture/freeze.c) before that graph ever serves another
 * run, and so is every run that cgr_options.frozen_recheck makes a
 * recheck. The same: this run replays it, and so do later runs. Different:
 * this run's own capture is right for this run and is launched once; the
 * shape runs eagerly from then on. All ranks of a communicator agree, so
 * that none replays a graph whose peers run eagerly; when they refuse,
 * every rank runs this run eagerly, the one way open to a rank whose
 * capture failed, so that its collectives are uncaptured on all of them.
 */
static cgr_status run_check(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                            uint8_t *action, uint8_t *reason)
{
    cgr__graph *g = d->payload;
    cgr__shape_plan *plan = &s->plans[d->entry];
    assert(s->waiters == 0); /* as for a capture */
    cgr__check_out co;
    cgr_status local = cgr__capture_check(s, plan, g, &co);
    if (local == CGR_STATUS_OK && !co.same && g->rechecking)
        local = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                         "step '%s': its graph froze a value that has changed since, so it is "
                         "no longer replayed: %s. The %u replays since the previous check "
                         "(cgr_options.frozen_recheck) replayed the frozen value; pass a value "
                         "that changes through a step input or device memory",
                         s->name, co.text, s->rt->opt.frozen_recheck);
    else if (local == CGR_STATUS_OK && !co.same)
        local = CGR_FAIL(CGR_STATUS_CAPTURE_FAILED,
                         "step '%s': its graph froze a value that changes from run to run, so "
                         "it is not replayed: %s. A graph replays the values it was captured "
                         "with: pass a value that changes per run through a step input or "
                         "device memory (or name the kernel in cgr_options.frozen_allow)",
                         s->name, co.text);
    /* No cost to settle: the graph in the table was charged at its capture. */
    cgr__capture_facts facts = facts_of(s, d, 0);
    cgr_status st = cgr__comm_after_capture(s->rt, s, local, &facts);
    if (st != CGR_STATUS_OK && st != CGR_STATUS_CAPTURE_FAILED) {
        cgr__graph_free(co.own);
        return st;
    }
    /* Counted once the run goes on to its launch: one that failed above launched nothing. */
    s->stats.frozen_checks++;
    if (st == CGR_STATUS_OK) {
        /* Not before: a rank whose agreement failed checks again at its next run. */
        cgr__graph_checked(g, s->rt->opt.frozen_recheck);
        *action = CGR_RUN_REPLAY;
        return cgr__launch_graph(s, g, slot, 0);
    }
    /* Refused. This run executes by what is right for it, counted as what it did. */
    char why[512];
    snprintf(why, sizeof why, "%s", cgr_last_error());
    int recorded = co.differs || co.same;
    const int peers = cgr__step_has_peers(s);
    cgr_status ls;
    if (co.own && !peers) {
        /* Its own capture, launched once: CUDA frees it when the launch is done. */
        ls = cgr__launch_graph(s, co.own, slot, 0);
        *action = CGR_RUN_CAPTURE;
    } else {
        /*
         * This run's capture failed, or the ranks refused (a graph the same
         * here too: its peers run this run eagerly, so must this rank, as
         * its collectives must match theirs): nothing of it ran yet.
         */
        ls = cgr__run_eager(s, slot, plan);
        *action = CGR_RUN_EAGER;
        *reason = recorded ? CGR_EAGER_FROZEN_VALUE : CGR_EAGER_CAPTURE_FAILED;
    }
    cgr__graph_free(co.own);
    shape_eager(s, d->entry, recorded ? CGR_EAGER_FROZEN_VALUE : CGR_EAGER_CAPTURE_FAILED, why);
    return ls;
}

cgr_status cgr__run_miss(cgr_step *s, uint32_t slot, const cgr__shapes_decision *d,
                        uint8_t *action, uint8_t *reason)
{
    /* A new entry, or one recycled for another shape: its plan starts over. */
    cgr__shape_plan *plan = &s->plans[d->entry];
    if (d->fresh)
        cgr__plan_reset(plan);
    switch (d->action) {
    case CGR__SHAPES_WARMUP:
        /* A warm-up leaves the mode as it is (cgr_step_mode says why). */
        *action = CGR_RUN_WARMUP;
        return cgr__run_eager(s, slot, plan);
    case CGR__SHAPES_CAPTURE:
        return capture_run(s, slot, d, action, reason);
    case CGR__SHAPES_REPLAY:
        return run_check(s, slot, d, action, reason);
    case CGR__SHAPES_EAGER:
    default:
        if (d->churn_tripped)
            cgr__log(s->rt, CGR_LOG_WARN, "%s", s->shapes->warning);
        *action = CGR_RUN_EAGER;
        *reason = (uint8_t)d->reason;
        return cgr__run_eager(s, slot, plan);
    }
}

/*
 * Packs the outputs of the runs a wait just retired, from..to, to their
 * true shape while their slots still hold them, so that cgr_slot.outputs
 * can be read in place after the wait (at most staging_slots runs: no
 * more can be launched and not waited for). Each run is retired, and so
 * packed, by one wait only; rt->lock held.
 */
void cgr__outputs_compact(cgr_step *s, uint64_t from, uint64_t to)
{
    if (!s->n_dyn)
        return;
    for (uint64_t ticket = from; ticket <= to; ticket++) {
        if (ticket < s->readable_from ||
            cgr__ring_check_output(&s->ring, ticket) != CGR_STATUS_OK)
            continue;
        const uint32_t slot = cgr__ring_slot(&s->ring, ticket);
        const cgr__slot_run *sr = &s->slot_run[slot];
        unsigned char *host = cgr__slot_host(s, slot);
        for (int i = 0; i < s->n_out; i++) {
            const cgr__tensor *t = &s->out[i];
            if (!t->n_dyn_axes)
                continue;
            int64_t td[CGR_MAX_RANK], bd[CGR_MAX_RANK];
            tensor_dims(t, sr->true_dims, td);
            tensor_dims(t, sr->bucket, bd);
            cgr__shape_compact(host + t->slot_offset, t->desc.rank, td, bd,
                               cgr_dtype_size(t->desc.dtype));
        }
    }
}
