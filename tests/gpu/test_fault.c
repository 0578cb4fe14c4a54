/*
 * Fault injection: the error paths behind out-of-memory, failed captures and
 * library errors, provoked through the sites of lib/base/fault.h. This test links
 * libcgr_fault.a, the library built with -DCGR_FAULT_INJECTION; the shipped
 * libcgr has no hook.
 *
 * For every site, a clean cycle first counts the calls the step under test
 * makes there; then, for every N up to that count, one cycle arms "fail the
 * Nth call" and checks:
 * - the create or run that hits it returns the site's status, with a message
 *   that names the call and the CUDA/cuBLAS/cuDNN error; at the sites of a
 *   capture, and of the arena's growth (after the run that traced the step
 *   executed), no run fails (absorbed): the run executes eagerly with correct
 *   outputs, and the step's capture_error holds that message;
 * - nothing half-made is left: the runtime's pinned and persistent bytes,
 *   cgr's process-wide pinned count, no capture left open, no CUDA error left;
 * - another step of the same runtime still runs with bitwise-correct outputs;
 * - the faulted step (created again if its creation failed) then runs with
 *   bitwise-correct outputs, into graph mode (eager after a failed capture);
 * - after destroy, device free memory is back to where the cycle started.
 * The first cycle of each kind loads modules (cuBLAS, cuDNN kernels) that stay
 * in the context for good, so it is not measured (as in test_memory).
 */
#include <string.h>

#include <cublas_v2.h>
#ifndef TEST_HAVE_CUDNN
#define TEST_HAVE_CUDNN 0 /* tests/meson.build sets it when cgr is built with cuDNN */
#endif
#if TEST_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "common.h"
#include "fault_control.h"
#include "kernels.h"

/* The faulted step moves 4 MiB per tensor and plans 4 MiB of scratch or more. */
enum { N_BIG = 1 << 20, N_OTHER = 4096, RUNS = 6 };

typedef enum kind { K_PLAIN, K_AFFINE, K_CUBLAS, K_CUDNN, K_COUNT } kind;
static const char *const kind_names[] = {"plain", "affine", "cublas", "cudnn"};

typedef struct step_user {
    kind k;
    size_t n;
#if TEST_HAVE_CUDNN
    cudnnTensorDescriptor_t desc; /* made in the first run that gets the handle */
#endif
} step_user;

/*
 * plain:  y = 2x + 1, no scratch (the bystander step: it leaves the arena
 *         empty, so the faulted step's plan always grows it);
 * affine: t = 2x + 1 in scratch, y = 2t + 1;
 * cublas, cudnn: the same with t *= 2 by cublasSscal / cudnnScaleTensor.
 * Every operation is exact or one rounding that CPU and GPU do alike.
 */
static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    step_user *u = user;
    cgr_stream st;
    float *x, *y, *t;
    STEP_TRY(cgr_ctx_stream(ctx, &st));
    cublasHandle_t bh = NULL;
    if (u->k == K_CUBLAS)
        STEP_TRY(cgr_ctx_cublas(ctx, &bh));
#if TEST_HAVE_CUDNN
    cudnnHandle_t dh = NULL;
    if (u->k == K_CUDNN) {
        STEP_TRY(cgr_ctx_cudnn(ctx, &dh));
        if (!u->desc) {
            if (cgr_ctx_is_capturing(ctx))
                return CGR_STATUS_WRONG_STATE;
            if (cudnnCreateTensorDescriptor(&u->desc) != CUDNN_STATUS_SUCCESS ||
                cudnnSetTensor4dDescriptor(u->desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1,
                                           (int)(u->n / 256), 256) != CUDNN_STATUS_SUCCESS)
                return CGR_STATUS_CUDNN_ERROR;
        }
    }
#endif
    STEP_TRY(cgr_ctx_input(ctx, 0, (void **)&x));
    STEP_TRY(cgr_ctx_output(ctx, 0, (void **)&y));
    if (u->k == K_PLAIN) {
        STEP_CUDA(tk_affine(y, x, u->n, st));
        return CGR_STATUS_OK;
    }
    STEP_TRY(cgr_ctx_alloc(ctx, u->n * sizeof(float), (void **)&t));
    STEP_CUDA(tk_affine(t, x, u->n, st));
    const float two = 2.0f;
    if (u->k == K_CUBLAS && cublasSscal(bh, (int)u->n, &two, t, 1) != CUBLAS_STATUS_SUCCESS)
        return CGR_STATUS_CUBLAS_ERROR;
#if TEST_HAVE_CUDNN
    if (u->k == K_CUDNN && cudnnScaleTensor(dh, u->desc, t, &two) != CUDNN_STATUS_SUCCESS)
        return CGR_STATUS_CUDNN_ERROR;
#endif
    STEP_CUDA(tk_affine(y, t, u->n, st));
    return CGR_STATUS_OK;
}

static float expected(kind k, float x)
{
    float v = 2.0f * x + 1.0f;
    if (k == K_PLAIN)
        return v;
    if (k == K_CUBLAS || k == K_CUDNN)
        v = 2.0f * v;
    return 2.0f * v + 1.0f;
}

static rng g_rng = {2024};
static float g_x[N_BIG];

/* One run on fresh random input; on success the outputs are checked bit for bit. */
static cgr_status run_checked(cgr_step *s, const step_user *u)
{
    rng_fill(&g_rng, g_x, u->n);
    const void *ins[1] = {g_x};
    uint64_t t;
    cgr_status st = cgr_step_run(s, NULL, ins, &t);
    if (st != CGR_STATUS_OK)
        return st;
    ASSERT_OK(cgr_step_wait(s, t));
    const float *y;
    size_t bytes = 0;
    y = test_output(s, t, 0, &bytes);
    ASSERT_U64_EQ(bytes, u->n * sizeof(float));
    for (size_t i = 0; i < u->n; i++) {
        float want = expected(u->k, g_x[i]);
        if (memcmp(&y[i], &want, sizeof want) != 0)
            TEST_FAIL_("%s step: y[%zu] = %a, expected %a (x = %a)", kind_names[u->k], i,
                       (double)y[i], (double)want, (double)g_x[i]);
    }
    return CGR_STATUS_OK;
}

static cgr_step *create_step(cgr_runtime *rt, const char *name, step_user *u, cgr_status *st)
{
    cgr_tensor_desc in = tensor1("x", CGR_DTYPE_F32, (int64_t)u->n);
    cgr_tensor_desc out = tensor1("y", CGR_DTYPE_F32, (int64_t)u->n);
    cgr_step_desc d;
    ASSERT_OK(cgr_step_desc_init(&d));
    d.name = name;
    d.inputs = &in;
    d.n_inputs = 1;
    d.outputs = &out;
    d.n_outputs = 1;
    d.fn = step_fn;
    d.user = u;
    static char sentinel;
    cgr_step *s = (cgr_step *)(void *)&sentinel; /* must come back NULL on failure */
    *st = cgr_step_create(rt, &d, &s);
    if (*st != CGR_STATUS_OK)
        ASSERT_PTR_EQ(s, NULL);
    return s;
}

/* What a site must report. Each message entry is "a|b": one of them must appear. */
typedef struct site_spec {
    cgr__fault_site site;
    kind k; /* the faulted step */
    cgr_status want;
    const char *msg[2];
    /*
     * 1: the run goes eagerly, the message is in capture_error: a failed
     * capture, or an arena that cannot grow for the plan of a run that has
     * executed; 2: either that or a failed call, as the site is in both
     * (cudaMalloc at step creation, cuMemCreate when the arena grows).
     */
    int absorbed;
} site_spec;

static const site_spec specs[] = {
    {CGR__FAULT_DEVICE_ALLOC, K_CUBLAS, CGR_STATUS_OUT_OF_MEMORY,
     {"cudaMalloc|cuMemCreate", "cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY"}, 2},
    {CGR__FAULT_ARENA_CREATE, K_AFFINE, CGR_STATUS_OUT_OF_MEMORY,
     {"cuMemCreate", "CUDA_ERROR_OUT_OF_MEMORY"}, 1},
    {CGR__FAULT_ARENA_MAP, K_AFFINE, CGR_STATUS_OUT_OF_MEMORY,
     {"cuMemMap", "CUDA_ERROR_OUT_OF_MEMORY"}, 1},
    {CGR__FAULT_PINNED_ALLOC, K_AFFINE, CGR_STATUS_OUT_OF_MEMORY,
     {"cudaHostAlloc", "cudaErrorMemoryAllocation"}, 0},
    {CGR__FAULT_CAPTURE_INVALIDATE, K_CUBLAS, CGR_STATUS_CAPTURE_FAILED,
     {"capture of step 'faulted'", "cudaErrorStreamCapture"}, 1},
    {CGR__FAULT_INSTANTIATE, K_AFFINE, CGR_STATUS_CAPTURE_FAILED,
     {"capture of step 'faulted'", "cudaGraphInstantiate failed with cudaErrorInvalidValue"}, 1},
    {CGR__FAULT_CUBLAS, K_CUBLAS, CGR_STATUS_CUBLAS_ERROR,
     {"cublasCreate|cublasSetStream|cublasSetWorkspace", "CUBLAS_STATUS_"}, 0},
    {CGR__FAULT_CUDNN, K_CUDNN, CGR_STATUS_CUDNN_ERROR,
     {"cudnnCreate|cudnnSetStream", "CUDNN_STATUS_"}, 0},
};

static int contains_any(const char *msg, const char *alts)
{
    for (const char *p = alts; *p;) {
        size_t n = strcspn(p, "|");
        char word[96];
        if (n < sizeof word) {
            memcpy(word, p, n);
            word[n] = '\0';
            if (strstr(msg, word))
                return 1;
        }
        p += n;
        if (*p == '|')
            p++;
    }
    return 0;
}

/* From the clean, measured cycle of each kind. */
typedef struct control {
    uint64_t calls[CGR__FAULT_COUNT_]; /* calls per site while the faulted step lives */
    uint64_t persistent;               /* persistent bytes the faulted step holds */
    uint64_t pinned;                   /* pinned bytes the faulted step holds */
} control;
static control controls[K_COUNT];

static void check_pinned_live(uint64_t want_bytes, uint64_t want_blocks)
{
    size_t bytes, blocks;
    cgr__fault_pinned_live(&bytes, &blocks);
    ASSERT_U64_EQ(bytes, want_bytes);
    ASSERT_U64_EQ(blocks, want_blocks);
}

static void check_stream_clean(cgr_runtime *rt)
{
    cgr_stream st;
    ASSERT_OK(cgr_runtime_stream(rt, &st));
    enum cudaStreamCaptureStatus cs;
    CUDA_OK(cudaStreamIsCapturing(st, &cs));
    ASSERT_EQ(cs, cudaStreamCaptureStatusNone);
    CUDA_OK(cudaGetLastError());
}

/*
 * One cycle: runtime, bystander step, the faulted step's life, destroy.
 * spec NULL: a clean cycle of kind k (measure: record its control).
 */
static void cycle(kind k, const site_spec *spec, uint64_t nth, int measure)
{
    size_t free0 = 0, free1 = 0, total = 0;
    check_pinned_live(0, 0);
    CUDA_OK(cudaMemGetInfo(&free0, &total));

    cgr_runtime *rt = NULL;
    ASSERT_OK(cgr_runtime_create(&rt, NULL));
    step_user ou = {.k = K_PLAIN, .n = N_OTHER};
    cgr_status st;
    cgr_step *other = create_step(rt, "other", &ou, &st);
    ASSERT_OK(st);
    for (int i = 0; i < RUNS; i++)
        ASSERT_OK(run_checked(other, &ou));
    cgr_runtime_stats rs0, rs;
    ASSERT_OK(cgr_runtime_get_stats(rt, &rs0));
    ASSERT_U64_EQ(rs0.steps, 1);

    /* Arm (or just count) from here: the calls are the faulted step's alone. */
    cgr__fault_clear();
    if (spec)
        cgr__fault_arm(spec->site, nth);
    step_user fu = {.k = k, .n = N_BIG};
    cgr_step *fs = create_step(rt, "faulted", &fu, &st);
    int ok_runs = 0, failed = st != CGR_STATUS_OK, absorbed = 0;
    char where[32] = "cgr_step_create";
    if (!failed && !spec) {
        cgr_runtime_stats r;
        ASSERT_OK(cgr_runtime_get_stats(rt, &r));
        controls[k].persistent = r.persistent_bytes - rs0.persistent_bytes;
        controls[k].pinned = r.pinned_bytes - rs0.pinned_bytes;
    }
    while (!failed && ok_runs < RUNS) {
        st = run_checked(fs, &fu);
        if (st != CGR_STATUS_OK) {
            failed = 1;
            snprintf(where, sizeof where, "run %d", ok_runs + 1);
        } else {
            ok_runs++;
        }
    }

    if (!spec) {
        if (failed)
            TEST_FAIL_("clean %s cycle failed at %s: %s: %s", kind_names[k], where,
                       cgr_status_name(st), cgr_last_error());
        for (int i = 0; i < CGR__FAULT_COUNT_; i++) {
            controls[k].calls[i] = cgr__fault_calls((cgr__fault_site)i);
            ASSERT_U64_EQ(cgr__fault_fired((cgr__fault_site)i), 0);
        }
    } else {
        /* Read the message before any other cgr call can replace it. */
        char msg[1024];
        strncpy(msg, cgr_last_error(), sizeof msg - 1);
        msg[sizeof msg - 1] = '\0';
        absorbed = spec->absorbed && !failed;
        if (absorbed) {
            /* Every run succeeded with checked outputs; the failure is in the stats. */
            cgr_step_stats as;
            ASSERT_OK(cgr_step_get_stats(fs, &as));
            ASSERT_U64_EQ(as.capture_failures, 1);
            ASSERT_U64_EQ(as.eager_by_reason[CGR_EAGER_CAPTURE_FAILED], as.eager_runs);
            ASSERT_GE(as.eager_runs, 1);
            snprintf(msg, sizeof msg, "%s", as.capture_error);
            st = spec->want;
        }
        printf("%-18s %llu/%llu: %s%s%s: %s\n", cgr__fault_site_name(spec->site),
               (unsigned long long)nth, (unsigned long long)controls[k].calls[spec->site],
               failed ? cgr_status_name(st) : absorbed ? "a run went eagerly" : "no failure",
               failed ? " at " : "", failed ? where : "", msg);
        if (!failed && !spec->absorbed)
            TEST_FAIL_("%s: call %llu was armed but nothing failed (fired %llu)",
                       cgr__fault_site_name(spec->site), (unsigned long long)nth,
                       (unsigned long long)cgr__fault_fired(spec->site));
        if (failed && spec->absorbed == 1)
            TEST_FAIL_("%s: call %llu failed run %s (%s): it must run eagerly",
                       cgr__fault_site_name(spec->site), (unsigned long long)nth, where,
                       cgr_status_name(st));
        ASSERT_U64_EQ(cgr__fault_fired(spec->site), 1);
        if (st != spec->want)
            TEST_FAIL_("%s %llu: got %s, expected %s", cgr__fault_site_name(spec->site),
                       (unsigned long long)nth, cgr_status_name(st),
                       cgr_status_name(spec->want));
        for (int i = 0; i < 2; i++)
            if (spec->msg[i] && !contains_any(msg, spec->msg[i]))
                TEST_FAIL_("message lacks \"%s\": %s", spec->msg[i], msg);

        /* Nothing half-made is left, and the runtime is out of capture. */
        check_stream_clean(rt);
        ASSERT_OK(cgr_runtime_get_stats(rt, &rs));
        ASSERT_U64_EQ(rs.steps, fs ? 2 : 1);
        uint64_t held_persistent = fs ? controls[k].persistent : 0;
        uint64_t held_pinned = fs ? controls[k].pinned : 0;
        ASSERT_U64_EQ(rs.persistent_bytes, rs0.persistent_bytes + held_persistent);
        ASSERT_U64_EQ(rs.pinned_bytes, rs0.pinned_bytes + held_pinned);
        check_pinned_live(rs.pinned_bytes, fs ? 2 : 1);
        if (fs) {
            cgr_step_stats ss;
            ASSERT_OK(cgr_step_get_stats(fs, &ss));
            ASSERT_U64_EQ(ss.runs, (uint64_t)ok_runs); /* the failed run used no ticket */
        }

        /* The bystander is unaffected. */
        for (int i = 0; i < 3; i++)
            ASSERT_OK(run_checked(other, &ou));

        /* The faulted step recovers: later runs succeed and reach their final mode. */
        if (!fs) {
            fs = create_step(rt, "faulted", &fu, &st);
            ASSERT_OK(st);
        }
        for (int i = 0; i < RUNS; i++)
            ASSERT_OK(run_checked(fs, &fu));
    }

    cgr_step_stats ss;
    ASSERT_OK(cgr_step_get_stats(fs, &ss));
    if (absorbed) {
        ASSERT_EQ(ss.mode, CGR_MODE_EAGER);
        ASSERT_U64_EQ(ss.capture_failures, 1);
        ASSERT(contains_any(ss.capture_error, spec->msg[1]));
        /* 1 when the fault hit the frozen-value check's capture, after a first replay. */
        ASSERT_LE(ss.replays, 1);
    } else {
        ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
        ASSERT_U64_EQ(ss.capture_failures, 0);
        ASSERT_GE(ss.replays, 1);
    }
    check_stream_clean(rt);
    check_pinned_live(rs0.pinned_bytes + controls[k].pinned, 2);

    ASSERT_OK(cgr_step_destroy(&fs));
    ASSERT_OK(cgr_runtime_get_stats(rt, &rs));
    ASSERT_U64_EQ(rs.steps, 1);
    ASSERT_U64_EQ(rs.persistent_bytes, rs0.persistent_bytes);
    ASSERT_U64_EQ(rs.pinned_bytes, rs0.pinned_bytes);
    check_pinned_live(rs0.pinned_bytes, 1);
    ASSERT_OK(run_checked(other, &ou));
    ASSERT_OK(cgr_step_get_stats(other, &ss));
    ASSERT_EQ(ss.mode, CGR_MODE_GRAPH);
    ASSERT_OK(cgr_runtime_destroy(&rt));
#if TEST_HAVE_CUDNN
    if (fu.desc)
        (void)cudnnDestroyTensorDescriptor(fu.desc);
#endif
    cgr__fault_clear();
    check_pinned_live(0, 0);

    CUDA_OK(cudaMemGetInfo(&free1, &total));
    /* The sanitizers keep device memory of their own: initcheck for every
     * allocation it tracks, memcheck in 2 MiB steps at a fixed point of the
     * run's history (moving the cycles moves the step to whichever cycle sits
     * there). The exact check runs in plain runs, which the gpu suite makes. */
    if (measure && !under_sanitizer(NULL)) {
        long long diff = (long long)free0 - (long long)free1;
        if (diff > 0)
            TEST_FAIL_("%s %llu (%s step): %lld bytes of device memory leaked "
                       "(free before %zu, after %zu)%s",
                       spec ? cgr__fault_site_name(spec->site) : "clean cycle",
                       (unsigned long long)nth, kind_names[k], diff, free0, free1,
                       spec ? "" : "; no fault was armed, so this is not an error path");
    }
}

int main(void)
{
    require_gpu();
    CUDA_OK(cudaSetDevice(0));
    CUDA_OK(cudaFree(NULL)); /* create the context before measuring */
    int have_cudnn = CGR_HAVE_CUDNN && TEST_HAVE_CUDNN;
    kind last = have_cudnn ? K_CUDNN : K_CUBLAS;

    /* Load every kernel and library once, then count each site's calls. */
    for (int k = K_AFFINE; k <= (int)last; k++)
        cycle((kind)k, NULL, 0, 0);
    for (int k = K_AFFINE; k <= (int)last; k++) {
        cycle((kind)k, NULL, 0, 1);
        printf("clean %-6s cycle: calls per site:", kind_names[k]);
        for (int i = 0; i < CGR__FAULT_COUNT_; i++)
            printf(" %s %llu", cgr__fault_site_name((cgr__fault_site)i),
                   (unsigned long long)controls[k].calls[i]);
        printf("\n");
    }

    int cycles = 0;
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        const site_spec *sp = &specs[i];
        if (sp->k > last) {
            printf("%-18s skipped: cgr was built without cuDNN\n", cgr__fault_site_name(sp->site));
            continue;
        }
        uint64_t n = controls[sp->k].calls[sp->site];
        /* Every site must be reachable by its step, or the test proves nothing. */
        if (n == 0)
            TEST_FAIL_("site %s was never called by the %s step", cgr__fault_site_name(sp->site),
                       kind_names[sp->k]);
        for (uint64_t nth = 1; nth <= n; nth++, cycles++)
            cycle(sp->k, sp, nth, 1);
    }
    printf("PASS (%d faulted cycles)\n", cycles);
    return 0;
}
