/*
 * Staging overlap: the host writes run k+1's inputs into the next pinned
 * slot while run k is still on the GPU, and every run sees its own inputs.
 *
 * Run 0 is held on the GPU by a gate kernel spinning on a mapped host flag,
 * so while the host fills and launches runs 1..N-1 the GPU is provably
 * still busy with run 0. With every slot taken, one more acquire must say
 * BUSY instead of overwriting a result nobody has read. Then the gate
 * opens and each run's outputs are checked against its own inputs. One
 * input is small (zero-copy kernel) and one large (memcpy node), so both
 * staging paths are covered.
 *
 * A second step allocates stream-ordered memory inside the step
 * (cudaMallocAsync/cudaFreeAsync), so its graph holds memory-allocation
 * nodes. CUDA instantiates such a graph only once; the step's one
 * executable serves every slot, and each run is checked against its own
 * inputs.
 *
 * Outputs are read both ways, copied by cgr_step_output() and in place
 * through cgr_slot.outputs, including for a step with two dynamic dims
 * whose outputs are packed from the bucket layout to the true shape.
 */
#include <string.h>

#include "common.h"
#include "kernels.h"

enum { SMALL = 1024, LARGE = 1 << 19, SLOTS = 4, ROUNDS = 5 };

typedef struct gate_state {
    volatile int *gate_host;
    int *gate_dev;
    int *timed_out_host;
    int *timed_out_dev;
} gate_state;

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    gate_state *g = user;
    cgr_stream st;
    float *xs, *xl, *ys, *yl;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&xs));
    STEP_TRY(cgr_ctx_input(ctx, 1, (void **)&xl));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&ys));
    STEP_TRY(cgr_ctx_output(ctx, 1, (void **)&yl));
    STEP_CUDA(tk_gate(g->gate_dev, g->timed_out_dev, st));
    STEP_CUDA(tk_affine(ys, xs, SMALL, st));
    STEP_CUDA(tk_affine(yl, xl, LARGE, st));
    return CGR_STATUS_OK;
}

/* ys, yl: run t's outputs, copied by cgr_step_output() or read in place in its slot. */
static void check_run(uint64_t t, const float *ys, const float *yl, const float *xs,
                      const float *xl)
{
    check_affine(xs, ys, SMALL, 1, "run %llu, small output", (unsigned long long)t);
    check_affine(xl, yl, LARGE, 1, "run %llu, large output", (unsigned long long)t);
}

static cgr_status memnode_fn(cgr_ctx *ctx, void *user)
{
    (void)user;
    cgr_stream st;
    float *x, *y, *tmp = NULL;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    STEP_CUDA(cudaMallocAsync((void **)&tmp, SMALL * sizeof(float), st));
    STEP_CUDA(tk_affine(tmp, x, SMALL, st));
    STEP_CUDA(tk_affine(y, tmp, SMALL, st));
    STEP_CUDA(cudaFreeAsync(tmp, st));
    return CGR_STATUS_OK;
}

/* y = 2 (2 x + 1) + 1 through memory the graph allocates and frees itself. */
static void part_memory_nodes(void)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = SLOTS;
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    cgr_step *s = make_xy(rt, "memory nodes", SMALL, memnode_fn, NULL);
    rng r = {11};
    static float x[SLOTS][SMALL];
    for (int round = 0; round < 1 + ROUNDS; round++) {
        uint64_t tickets[SLOTS];
        for (int k = 0; k < SLOTS; k++) {
            rng_fill(&r, x[k], SMALL);
            const void *ins[1] = {x[k]};
            ASSERT_OK(cgr_step_run(s, NULL, ins, &tickets[k]));
        }
        for (int k = 0; k < SLOTS; k++) {
            const float *y;
            ASSERT_OK(cgr_step_wait(s, tickets[k]));
            y = test_output(s, tickets[k], 0, NULL);
            check_affine(x[k], y, SMALL, 2, "memory nodes: run %llu",
                         (unsigned long long)tickets[k]);
        }
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.captures, 1);
    ASSERT_U64_EQ(ss.replays, (uint64_t)(1 + ROUNDS) * SLOTS - 2); /* all but the 2 warm-ups */
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS: a graph with memory-allocation nodes replayed on all %d slots\n", SLOTS);
}

enum { VB = 8, VS = 64, VSLOTS = 3 };

/* y must be 2 x + 1 at the true shape b x n, packed (row stride n). */
static void check_packed(const char *how, uint64_t t, const float *y, const float *x, int b,
                         int n)
{
    for (int row = 0; row < b; row++)
        check_affine(x + row * n, y + row * n, (size_t)n, 1, "run %llu at %d x %d, %s, row %d",
                     (unsigned long long)t, b, n, how, row);
}

/*
 * In-place outputs of a step with two dynamic dims: the slot's output is
 * produced at the bucket layout and packed to the true shape when the run
 * is waited for, for warm-ups, the capture and replays alike, and each
 * run's slot keeps its output until the slot is acquired again.
 */
static void part_packed_views(void)
{
    static const int64_t bb[] = {2, 4, 8}, sb[] = {16, 32, 64};
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = VSLOTS;
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    cgr_tensor_desc in = tensor2("x", CGR_DTYPE_F32, VB, VS);
    cgr_tensor_desc out = tensor2("y", CGR_DTYPE_F32, VB, VS);
    cgr_dyn_dim dims[2] = {{.name = "batch", .buckets = bb, .n_buckets = 3, .max = VB},
                           {.name = "seq", .buckets = sb, .n_buckets = 3, .max = VS}};
    cgr_dim_use uses[4] = {{.dim = 0, .output = 0, .tensor = 0, .axis = 0},
                           {.dim = 1, .output = 0, .tensor = 0, .axis = 1},
                           {.dim = 0, .output = 1, .tensor = 0, .axis = 0},
                           {.dim = 1, .output = 1, .tensor = 0, .axis = 1}};
    cgr_step_desc d = step_desc("packed views", &in, 1, &out, 1, affine_step, NULL);
    d.dyn_dims = dims;
    d.n_dyn_dims = 2;
    d.dim_uses = uses;
    d.n_dim_uses = 4;
    cgr_step *s;
    ASSERT_OK(cgr_step_create(rt, &d, &s));

    rng r = {23};
    static float x[VSLOTS][VB * VS];
    int seen[CGR_RUN_EAGER + 1] = {0};
    int shape[VSLOTS][2];
    cgr_slot slots[VSLOTS];
    /* Two buckets, true dims below the bucket (rows move when packed), taking turns. */
    for (int round = 0; round < 8; round++) {
        for (int k = 0; k < VSLOTS; k++) {
            const int wide = (round / 4) & 1;
            const int b = wide ? 5 + k : 3, n = wide ? 33 + 7 * k : 17 + k;
            const int64_t dv[2] = {b, n};
            ASSERT_OK(cgr_step_acquire(s, dv, 0, &slots[k]));
            rng_fill(&r, x[k], (size_t)b * n);
            memcpy(slots[k].inputs[0], x[k], (size_t)b * n * sizeof(float));
            ASSERT_OK(cgr_step_launch(s, &slots[k]));
            shape[k][0] = b;
            shape[k][1] = n;
        }
        ASSERT_OK(cgr_step_wait(s, CGR_TICKET_LAST));
        for (int k = 0; k < VSLOTS; k++) {
            const uint64_t t = slots[k].ticket;
            cgr_run_action a;
            ASSERT_OK(cgr_step_run_action(s, t, &a));
            seen[a]++;
            size_t bytes = 0;
            const float *copy = test_output(s, t, 0, &bytes);
            ASSERT_EQ(bytes, (size_t)shape[k][0] * shape[k][1] * sizeof(float));
            check_packed("in place", t, slots[k].outputs[0], x[k], shape[k][0], shape[k][1]);
            check_packed("copied", t, copy, x[k], shape[k][0], shape[k][1]);
        }
    }
    ASSERT(seen[CGR_RUN_WARMUP] > 0);
    ASSERT(seen[CGR_RUN_CAPTURE] > 0);
    ASSERT(seen[CGR_RUN_REPLAY] > 0);
    ASSERT_EQ(seen[CGR_RUN_EAGER], 0);

    /* Reusing slot 0 leaves the outputs of the runs on slots 1 and 2 in place. */
    const int64_t dv[2] = {2, 9};
    cgr_slot again;
    ASSERT_OK(cgr_step_acquire(s, dv, 0, &again));
    ASSERT(again.outputs[0] == slots[0].outputs[0]);
    rng_fill(&r, x[0], 2 * 9);
    memcpy(again.inputs[0], x[0], 2 * 9 * sizeof(float));
    ASSERT_OK(cgr_step_launch(s, &again));
    ASSERT_OK(cgr_step_wait(s, again.ticket));
    check_packed("in place, slot reused", again.ticket, again.outputs[0], x[0], 2, 9);
    for (int k = 1; k < VSLOTS; k++)
        check_packed("in place, another slot reused", slots[k].ticket, slots[k].outputs[0], x[k],
                     shape[k][0], shape[k][1]);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    printf("PASS: outputs of %d x %d runs read in place, packed to their true shape\n", 8,
           VSLOTS);
}

int main(void)
{
    require_gpu();
    part_memory_nodes();
    part_packed_views();
    gate_state g;
    CUDA_OK(cudaHostAlloc((void **)&g.gate_host, 2 * sizeof(int), cudaHostAllocMapped));
    g.timed_out_host = (int *)g.gate_host + 1;
    CUDA_OK(cudaHostGetDevicePointer((void **)&g.gate_dev, (void *)g.gate_host, 0));
    g.timed_out_dev = g.gate_dev + 1;
    g.gate_host[0] = 1;
    *g.timed_out_host = 0;

    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.staging_slots = SLOTS;
    o.advanced.zero_copy_max_bytes = (size_t)1 << 20; /* xl (2 MiB) crosses by memcpy nodes */
    cgr_runtime *rt;
    ASSERT_OK(cgr_runtime_create(&rt, &o));
    cgr_tensor_desc in[2] = {tensor1("xs", CGR_DTYPE_F32, SMALL),
                             tensor1("xl", CGR_DTYPE_F32, LARGE)};
    cgr_tensor_desc out[2] = {tensor1("ys", CGR_DTYPE_F32, SMALL),
                              tensor1("yl", CGR_DTYPE_F32, LARGE)};
    cgr_step *s = make_step(rt, "staging", in, 2, out, 2, step_fn, &g);

    rng r = {7};
    static float xs[SLOTS][SMALL], xl[SLOTS][LARGE];
    /* Three runs with the gate open: two warm-ups and the capture. */
    for (int i = 0; i < 3; i++) {
        rng_fill(&r, xs[0], SMALL);
        rng_fill(&r, xl[0], LARGE);
        const void *ins[2] = {xs[0], xl[0]};
        uint64_t t;
        ASSERT_OK(cgr_step_run(s, NULL, ins, &t));
        ASSERT_OK(cgr_step_wait(s, t));
        check_run(t, test_output(s, t, 0, NULL), test_output(s, t, 1, NULL), xs[0], xl[0]);
    }
    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_U64_EQ(ss.zero_copy_tensors, 2); /* xs, ys */
    ASSERT_U64_EQ(ss.memcpy_tensors, 2);    /* xl, yl: 2 MiB each */

    /*
     * initcheck runs kernels synchronously: a closed gate would hold the
     * launch itself until the gate kernel gives up. There the gate stays
     * open and only the host-side checks (BUSY, unreadable outputs) run.
     */
    const int gated = !under_sanitizer("initcheck");
    for (int round = 0; round < ROUNDS; round++) {
        g.gate_host[0] = gated ? 0 : 1;
        uint64_t tickets[SLOTS];
        cgr_slot slots[SLOTS];
        for (int k = 0; k < SLOTS; k++) {
            cgr_slot slot;
            ASSERT_OK(cgr_step_acquire(s, NULL, 0, &slot));
            slots[k] = slot;
            rng_fill(&r, xs[k], SMALL);
            rng_fill(&r, xl[k], LARGE);
            memcpy(slot.inputs[0], xs[k], sizeof xs[k]);
            memcpy(slot.inputs[1], xl[k], sizeof xl[k]);
            ASSERT_OK(cgr_step_launch(s, &slot));
            tickets[k] = slot.ticket;
        }
        /* Every slot is in flight: the next run must be refused, not overwrite one. */
        cgr_slot extra;
        ASSERT_STATUS(cgr_step_acquire(s, NULL, 0, &extra), CGR_STATUS_BUSY);
        const void *ins[2] = {xs[0], xl[0]};
        ASSERT_STATUS(cgr_step_run(s, NULL, ins, NULL), CGR_STATUS_BUSY);
        /* Outputs of an unwaited run are not readable yet. */
        size_t n = 0;
        ASSERT_STATUS(cgr_step_output(s, tickets[0], 0, NULL, 0, &n), CGR_STATUS_WRONG_STATE);
        /* The GPU was held by the gate the whole time the host wrote ahead. */
        cgr_stream st;
        ASSERT_OK(cgr_runtime_stream(rt, &st));
        if (gated)
            ASSERT_EQ(cudaStreamQuery(st), cudaErrorNotReady);
        g.gate_host[0] = 1;
        /*
         * Waiting for the last run retires them all. Each run's outputs
         * are then in its own slot, read in place, and the same as the
         * copies cgr_step_output() makes.
         */
        ASSERT_OK(cgr_step_wait(s, CGR_TICKET_LAST));
        for (int k = 0; k < SLOTS; k++) {
            check_run(tickets[k], slots[k].outputs[0], slots[k].outputs[1], xs[k], xl[k]);
            check_run(tickets[k], test_output(s, tickets[k], 0, NULL),
                      test_output(s, tickets[k], 1, NULL), xs[k], xl[k]);
        }
        ASSERT_EQ(*g.timed_out_host, 0);
    }
    ASSERT_OK(cgr_step_get_stats(s, &ss));
    ASSERT_U64_EQ(ss.replays, 1 + ROUNDS * SLOTS);
    ASSERT_OK(cgr_runtime_destroy(&rt));
    CUDA_OK(cudaFreeHost((void *)g.gate_host));
    printf("PASS: %d rounds of %d runs written ahead while the GPU was held\n", ROUNDS, SLOTS);
    return 0;
}
