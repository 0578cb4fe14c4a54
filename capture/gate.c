/*
 * Armed runs: a step's graph launched before its inputs are written.
 *
 * A replayed run's latency is its launch (the host's cudaGraphLaunch and
 * the GPU front end, a few microseconds before the first kernel starts)
 * plus the graph's GPU time. A caller that knows a run's dims before it
 * has the inputs (a server that has formed a batch and is about to copy it
 * in) can acquire its slot with
 * CGR_ACQUIRE_ARM: the graph is launched at once (replay/run.c) and its
 * input kernel (capture/stage.cu) waits at the slot's gate, polling pinned
 * memory. cgr_step_launch() then opens the gate with one store, so the
 * launch latency overlaps the writing of the inputs instead of following
 * it.
 *
 * The gate is two words in each pinned slot at CGR__SLOT_GATE_OFFSET: go
 * (the host's) and expired (the kernel's, after arm_timeout_us). Graphs
 * of an armable step always carry the gate; an ordinary launch opens it
 * before cudaGraphLaunch, which costs that run one PCIe read on the GPU.
 *
 * Dropping an armed run (the slot was released, a launch failed, the step
 * is destroyed, cgr synchronizes the stream, a new shape's first warm-up
 * starts) means opening its gate
 * and letting it run on whatever the slot holds: its outputs land in the
 * slot before any later run's, in stream order, and the completion flag
 * counts it (it was counted when it was launched), so nothing that waits
 * can mistake it for a later run.
 */
#include "capture.h"

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

void cgr__arm_drop_all(cgr_runtime *rt)
{
    for (cgr_step *s = rt->steps; s; s = s->next)
        cgr__arm_drop(s);
}

cudaError_t cgr__sync_stream(cgr_runtime *rt)
{
    /* An armed run of any step would hold the stream until its timeout. */
    cgr__arm_drop_all(rt);
    return cudaStreamSynchronize(rt->stream);
}
