/*
 * A graphed step (cuBLAS sgemm plus two custom kernels, with scratch) gives
 * bitwise the same outputs as the same step function run eagerly, over 50
 * steps of fresh random inputs, for both ways of staging (all zero-copy,
 * and memcpy nodes for the larger tensors), through both run APIs. The
 * outputs also match a float64 CPU reference, and scratch addresses are
 * the planned ones at capture and stay fixed across replays.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cublas_v2.h>

#include "common.h"
#include "kernels.h"

enum { M = 64, K = 96, N = 80, STEPS = 50 };

typedef struct model {
    float *bias; /* persistent, [N] */
    /* Scratch addresses seen by each call of the step function. */
    int calls;
    void *t1[8], *t3[8];
} model;

static cgr_status mlp_step(cgr_ctx *ctx, void *user)
{
    model *m = user;
    cgr_stream st;
    cublasHandle_t h;
    float *a, *b, *c, *rows;
    int64_t *ptr_out;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    STEP_TRY(cgr_ctx_cublas(ctx, &h));
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&a));
    STEP_TRY(cgr_ctx_input(ctx, 1, (void **)&b));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&c));
    STEP_TRY(cgr_ctx_output(ctx, 1, (void **)&rows));
    STEP_TRY(cgr_ctx_output(ctx, 2, (void **)&ptr_out));

    float *t1, *t3;
    STEP_TRY(cgr_ctx_alloc(ctx, sizeof(float) * M * N, (void **)&t1));
    /* Row-major C = A B is column-major C^T = B^T A^T. */
    const float one = 1.0f, zero = 0.0f;
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, b, N, a, K, &zero, t1, N) !=
        CUBLAS_STATUS_SUCCESS)
        return CGR_STATUS_CUBLAS_ERROR;
    STEP_CUDA(tk_bias_relu(c, t1, m->bias, M, N, st));
    STEP_TRY(cgr_ctx_free(ctx, t1));
    STEP_TRY(cgr_ctx_alloc(ctx, sizeof(float) * M * N, (void **)&t3));
    STEP_CUDA(tk_affine(t3, c, (size_t)M * N, st));
    STEP_CUDA(tk_row_sum(rows, t3, M, N, st));
    STEP_CUDA(tk_write_ptr(ptr_out, t3, st));
    if (m->calls < 8) {
        m->t1[m->calls] = t1;
        m->t3[m->calls] = t3;
    }
    m->calls++;
    return CGR_STATUS_OK;
}

static void reference(const float *a, const float *b, const float *bias, double *c, double *rows)
{
    for (int i = 0; i < M; i++) {
        rows[i] = 0;
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)a[i * K + k] * b[k * N + j];
            acc += bias[j];
            c[i * N + j] = acc > 0 ? acc : 0;
            rows[i] += 0.5 * (2.0 * c[i * N + j] + 1.0);
        }
    }
}

typedef struct setup {
    cgr_runtime *rt;
    cgr_step *step;
    model m;
} setup;

static char dump_dir[64];

static void make(setup *s, int capture, size_t zero_copy_max, const float *bias_host)
{
    cgr_options o;
    ASSERT_OK(cgr_options_init(&o));
    o.capture = capture;
    /* The runtime keeps its own copy of dump_dir: the DOT check below finds the
     * file where this buffer said, although the buffer is overwritten first. */
    char dir[sizeof dump_dir];
    memcpy(dir, dump_dir, sizeof dir);
    o.dump_dir = dir;
    o.advanced.zero_copy_max_bytes = zero_copy_max;
    ASSERT_OK(cgr_runtime_create(&s->rt, &o));
    memset(dir, 'x', sizeof dir - 1);
    dir[sizeof dir - 1] = '\0';
    memset(&s->m, 0, sizeof s->m);
    ASSERT_OK(cgr_persistent_alloc(s->rt, sizeof(float) * N, (void **)&s->m.bias));
    CUDA_OK(cudaMemcpy(s->m.bias, bias_host, sizeof(float) * N, cudaMemcpyHostToDevice));
    cgr_tensor_desc in[2] = {tensor2("a", CGR_DTYPE_F32, M, K), tensor2("b", CGR_DTYPE_F32, K, N)};
    cgr_tensor_desc out[3] = {tensor2("c", CGR_DTYPE_F32, M, N), tensor1("rows", CGR_DTYPE_F32, M),
                              tensor1("scratch_ptr", CGR_DTYPE_I64, 1)};
    s->step = make_step(s->rt, "mlp", in, 2, out, 3, mlp_step, &s->m);
}

static void run_config(size_t zero_copy_max, uint64_t seed)
{
    rng r = {seed};
    float bias[N];
    rng_fill(&r, bias, N);
    setup g, e;
    make(&g, 1, zero_copy_max, bias);
    make(&e, 0, zero_copy_max, bias); /* every run eager */

    static float a[M * K], b[K * N];
    static double cref[M * N], rref[M];
    int64_t first_ptr = 0;
    for (int step = 0; step < STEPS; step++) {
        rng_fill(&r, a, M * K);
        rng_fill(&r, b, K * N);
        const void *ins[2] = {a, b};
        uint64_t tg, te;
        if (step % 2 == 0) {
            ASSERT_OK(cgr_step_run(g.step, NULL, ins, &tg));
        } else {
            /* The fast path: write straight into the pinned slot. */
            cgr_slot slot;
            ASSERT_OK(cgr_step_acquire(g.step, NULL, 0, &slot));
            memcpy(slot.inputs[0], a, sizeof a);
            memcpy(slot.inputs[1], b, sizeof b);
            ASSERT_OK(cgr_step_launch(g.step, &slot));
            tg = slot.ticket;
        }
        ASSERT_OK(cgr_step_run(e.step, NULL, ins, &te));
        ASSERT_U64_EQ(tg, (uint64_t)step);
        ASSERT_OK(cgr_step_wait(g.step, tg));
        ASSERT_OK(cgr_step_wait(e.step, te));
        for (int o = 0; o < 2; o++) {
            const void *pg, *pe;
            size_t bg, be;
            pg = test_output(g.step, tg, o, &bg);
            pe = test_output(e.step, te, o, &be);
            ASSERT_EQ(bg, be);
            if (memcmp(pg, pe, bg) != 0)
                TEST_FAIL_("step %d output %d: graph and eager differ (zero_copy_max %zu)", step,
                           o, zero_copy_max);
        }
        /* Against float64 on the CPU, so both cannot be wrong the same way. */
        if (step < 3 || step == STEPS - 1) {
            const float *c, *rows;
            c = test_output(g.step, tg, 0, NULL);
            rows = test_output(g.step, tg, 1, NULL);
            reference(a, b, bias, cref, rref);
            for (int i = 0; i < M * N; i++)
                if (fabs(c[i] - cref[i]) > 1e-4 * fmax(1.0, fabs(cref[i])))
                    TEST_FAIL_("step %d c[%d] = %.7g, reference %.7g", step, i, c[i], cref[i]);
            for (int i = 0; i < M; i++)
                if (fabs(rows[i] - rref[i]) > 1e-4 * fmax(1.0, fabs(rref[i])))
                    TEST_FAIL_("step %d rows[%d] = %.7g, reference %.7g", step, i, rows[i],
                               rref[i]);
        }
        /* The scratch address the graph baked in never changes. */
        const int64_t *p;
        p = test_output(g.step, tg, 2, NULL);
        if (step == 2)
            first_ptr = *p;
        if (step >= 2)
            ASSERT_EQ(*p, first_ptr);
    }

    cgr_step_stats sg, se;
    ASSERT_OK(cgr_step_get_stats(g.step, &sg));
    ASSERT_OK(cgr_step_get_stats(e.step, &se));
    if (sg.mode != CGR_MODE_GRAPH)
        TEST_FAIL_("the graphed step runs in mode %d: %s", (int)sg.mode, sg.capture_error);
    ASSERT_U64_EQ(sg.captures, 1);
    ASSERT_U64_EQ(sg.warmup_runs, 2);
    ASSERT_U64_EQ(sg.replays, STEPS - 2);
    ASSERT_U64_EQ(se.replays, 0);
    ASSERT_U64_EQ(se.captures, 0);
    ASSERT_U64_EQ(se.warmup_runs, 2);
    ASSERT_U64_EQ(se.eager_runs, STEPS - 2);
    ASSERT_EQ(se.mode, CGR_MODE_EAGER);
    ASSERT(strstr(se.capture_error, "capture disabled") != NULL);
    ASSERT_U64_EQ(sg.scratch_requests, 3); /* cuBLAS workspace, t1, t3 */
    ASSERT(sg.scratch_peak >= sg.scratch_lower_bound);
    if (zero_copy_max >= (1u << 20)) {
        ASSERT_U64_EQ(sg.zero_copy_tensors, 5);
        ASSERT_U64_EQ(sg.memcpy_tensors, 0);
        ASSERT_U64_EQ(sg.graph_memcpy_nodes, 0);
    } else {
        ASSERT_U64_EQ(sg.zero_copy_tensors, 2); /* rows, scratch_ptr */
        ASSERT_U64_EQ(sg.memcpy_tensors, 3);
        ASSERT_U64_EQ(sg.graph_memcpy_nodes, 3);
    }
    /* 2 staging kernels + 4 of ours + cuBLAS's (and whatever other nodes cuBLAS adds). */
    ASSERT_GE(sg.graph_kernel_nodes, 7);
    ASSERT_LE(sg.graph_kernel_nodes + sg.graph_memcpy_nodes, sg.graph_nodes);
    /* The graph was written as DOT where the options asked. */
    char dot[128];
    snprintf(dot, sizeof dot, "%s/cgr-mlp-1.dot", dump_dir);
    FILE *f = fopen(dot, "r");
    ASSERT(f != NULL);
    char head[16] = {0};
    ASSERT(fread(head, 1, 7, f) == 7);
    fclose(f);
    ASSERT(strncmp(head, "digraph", 7) == 0);
    remove(dot);

    /* Calls: warm-up 1 (trace), warm-up 2 (planned), capture, its frozen-value check.
     * Replays call nothing. */
    ASSERT_EQ(g.m.calls, 4);
    ASSERT_PTR_EQ(g.m.t1[1], g.m.t1[2]);
    ASSERT_PTR_EQ(g.m.t3[1], g.m.t3[2]);
    ASSERT_PTR_EQ(g.m.t3[2], g.m.t3[3]); /* the check's capture gets the same plan */
    ASSERT_EQ((int64_t)(intptr_t)g.m.t3[2], first_ptr);
    /* t1 is dead when t3 is born: the planner lets them share memory. */
    ASSERT_PTR_EQ(g.m.t1[2], g.m.t3[2]);
    cgr_runtime_stats rs;
    ASSERT_OK(cgr_runtime_get_stats(g.rt, &rs));
    ASSERT(rs.arena_reserved >= sg.scratch_peak);
    /*
     * The size rule of the structs cgr fills in, through the _size calls a
     * program built against another header makes: a newer header's larger
     * struct gets the same fields and zeros past them; a size below this
     * version's fields is refused with nothing written.
     */
    union {
        cgr_step_stats s;
        unsigned char b[sizeof(cgr_step_stats) + 64];
    } big;
    memset(&big, 0x5a, sizeof big);
    ASSERT_OK(cgr_step_get_stats_size(g.step, &big.s, sizeof big));
    /* Field by field: the padding after mode is not part of the value. */
    ASSERT_EQ(big.s.mode, sg.mode);
    ASSERT_U64_EQ(big.s.runs, sg.runs);
    ASSERT_U64_EQ(big.s.replays, sg.replays);
    ASSERT_U64_EQ(big.s.graph_nodes, sg.graph_nodes);
    ASSERT_U64_EQ(big.s.scratch_peak, sg.scratch_peak);
    ASSERT(big.s.capture_us == sg.capture_us);
    ASSERT(memcmp(big.s.churn_warning, sg.churn_warning, sizeof sg.churn_warning) == 0);
    ASSERT_EQ(big.s.profile.state, sg.profile.state);
    ASSERT(strcmp(big.s.profile.error, sg.profile.error) == 0);
    for (size_t i = sizeof sg; i < sizeof big; i++)
        ASSERT_EQ(big.b[i], 0);
    memset(&big, 0x5a, sizeof big);
    ASSERT_STATUS(cgr_step_get_stats_size(g.step, &big.s, sizeof sg - 8),
                  CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(strstr(cgr_last_error(), "cgr_step_get_stats_size: the output struct's size") != NULL);
    for (size_t i = 0; i < sizeof big; i++)
        ASSERT_EQ(big.b[i], 0x5a);
    cgr_runtime_stats rs2[2];
    memset(rs2, 0x5a, sizeof rs2);
    ASSERT_OK(cgr_runtime_get_stats_size(g.rt, &rs2[0], sizeof rs2));
    ASSERT(memcmp(&rs2[0], &rs, sizeof rs) == 0);
    ASSERT_STATUS(cgr_runtime_get_stats_size(g.rt, &rs2[0], 8), CGR_STATUS_INVALID_ARGUMENT);
    printf("zero_copy_max %zu: %d steps bitwise equal; graph nodes %llu, capture %.0f us, "
           "scratch peak %llu (lower bound %llu)\n",
           zero_copy_max, STEPS, (unsigned long long)sg.graph_nodes, sg.capture_us,
           (unsigned long long)sg.scratch_peak, (unsigned long long)sg.scratch_lower_bound);

    ASSERT_OK(cgr_runtime_destroy(&g.rt));
    ASSERT_OK(cgr_runtime_destroy(&e.rt));
    ASSERT(g.rt == NULL);
}

int main(void)
{
    require_gpu();
    snprintf(dump_dir, sizeof dump_dir, "/tmp/cgr-dot-XXXXXX");
    ASSERT(mkdtemp(dump_dir) != NULL);
    run_config((size_t)1 << 20, 0x1234567ULL);
    run_config((size_t)16 << 10, 0x89abcdefULL);
    rmdir(dump_dir);
    printf("PASS\n");
    return 0;
}
