/*
 * Armed runs: a step's graph launched before its inputs are written.
 *
 * A replayed run's latency is its launch (the host's cudaGraphLaunch and
 * the GPU front end, about 3 us before the first kernel starts on the
 * H200 host, docs/benchmarks.md) plus the graph's GPU time. A caller that
 * knows a run's dims before it has the inputs (a server that has formed a
 * batch and is about to copy it in) can call cgr_step_arm(): the graph is
 * launched at once and its input kernel (capture/stage.cu) waits at the
 * slot's gate, polling pinned memory. cgr_step_launch() then opens the
 * gate with one store, so the launch latency overlaps the writing of the
 * inputs instead of following it.
 *
 * The gate is two words in each pinned slot at CGR__SLOT_GATE_OFFSET: go
 * (the host's) and expired (the kernel's, after arm_timeout_us). Graphs
 * of an armable step always carry the gate; an ordinary launch opens it
 * before cudaGraphLaunch, which costs that run one PCIe read on the GPU.
 *
 * Dropping an armed run (the dims moved to another bucket, the slot was
 * released, a launch failed, the step is destroyed) means opening its gate
 * and letting it run on whatever the slot holds: its outputs land in the
 * slot before any later run's, in stream order, and the completion flag
 * counts it (it was counted when it was launched), so nothing that waits
 * can mistake it for a later run.
 */
#include "internal.h"

static uint64_t *gate_of(const cgr_step *s, uint32_t slot)
{
    return (uint64_t *)(cgr__slot_host(s, slot) + CGR__SLOT_GATE_OFFSET);
}

void cgr__gate_set(cgr_step *s, uint32_t slot, int go)
{
    uint64_t *g = gate_of(s, slot);
    __atomic_store_n(&g[1], 0, __ATOMIC_RELAXED);
    /* Release: the inputs written before are what the kernel reads after go. */
    __atomic_store_n(&g[0], (uint64_t)go, __ATOMIC_RELEASE);
}

/*
 * Opens the gate of an armed run. Returns 1 when the kernel may have
 * passed it on its timeout instead (the handshake is described in
 * capture/stage.cu): then the run may have read the slot before the
 * inputs were complete.
 */
static int gate_go(cgr_step *s, uint32_t slot)
{
    uint64_t *g = gate_of(s, slot);
    __atomic_store_n(&g[0], 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_load_n(&g[1], __ATOMIC_ACQUIRE) != 0;
}

int cgr__arm_go(cgr_step *s, uint32_t slot)
{
    s->armed = NULL;
    s->stats.armed_runs++;
    if (!gate_go(s, slot))
        return 0;
    s->stats.arm_expired++;
    cgr__log(s->rt, CGR_LOG_WARN,
             "step '%s': an armed run waited past arm_timeout_us (%u us) and is run again",
             s->name, s->rt->opt.arm_timeout_us);
    return 1;
}

void cgr__arm_drop(cgr_step *s)
{
    if (!s->armed)
        return;
    (void)gate_go(s, cgr__ring_slot(&s->ring, s->ring.launched));
    s->armed = NULL;
    s->stats.arm_released++;
}

cudaError_t cgr__sync_stream(cgr_runtime *rt)
{
    /* An armed run of any step would hold the stream until its timeout. */
    for (cgr_step *s = rt->steps; s; s = s->next)
        cgr__arm_drop(s);
    return cudaStreamSynchronize(rt->stream);
}

CGR_API cgr_status cgr_step_arm(cgr_step *s, const int64_t *dims, cgr_slot *out)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_arm"));
    if (!out)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_arm: slot is NULL");
    if (!s->armable)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT,
                        "cgr_step_arm: step '%s' was not created with cgr_step_desc.armable = 1",
                        s->name);
    CGR_TRY(cgr__check_dims(s, dims, 1, "cgr_step_arm"));
    CGR_TRY(cgr__lock(s->rt, "cgr_step_arm"));
    uint64_t t = 0;
    uint32_t slot = 0;
    int armed = 0;
    cgr_status st = cgr__step_acquire(s, &t, &slot, "cgr_step_arm");
    if (st == CGR_STATUS_OK) {
        s->acquirer = pthread_self();
        /* Only a run that will replay is launched ahead; the rest wait for the launch. */
        cgr__graph *g = cgr__shapes_peek(&s->shapes, dims, s->armed_bucket);
        if (g && g->gated) {
            int prev = 0;
            st = cgr__device_enter(s->rt, &prev);
            if (st == CGR_STATUS_OK) {
                st = cgr__launch_graph(s, g, slot, 1);
                cgr__device_leave(prev);
            }
            if (st == CGR_STATUS_OK) {
                s->armed = g;
                armed = 1;
            } else {
                cgr__ring_cancel(&s->ring);
            }
        }
    }
    cgr__unlock(s->rt);
    CGR_TRY(st);
    cgr__slot_fill(s, t, armed, out);
    return CGR_STATUS_OK;
}

CGR_API cgr_status cgr_step_release(cgr_step *s, const cgr_slot *slot)
{
    CGR_TRY(cgr__check_step(s, "cgr_step_release"));
    if (!slot)
        return CGR_FAIL(CGR_STATUS_INVALID_ARGUMENT, "cgr_step_release: slot is NULL");
    CGR_TRY(cgr__lock(s->rt, "cgr_step_release"));
    cgr_status st = cgr__check_acquired(s, slot, "cgr_step_release");
    if (st == CGR_STATUS_OK) {
        cgr__arm_drop(s);
        cgr__ring_cancel(&s->ring);
    }
    cgr__unlock(s->rt);
    return st;
}
