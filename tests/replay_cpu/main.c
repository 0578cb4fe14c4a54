/*
 * replay_cpu: host CPU of one replay submit, two builds of cgr against each
 * other and against a raw CUDA graph, in one process.
 *
 * Two cgr-bench binaries time the host their own way and differ from one
 * process to the next by more than the change being measured, so here one
 * program loads both libraries (side.c) and times every mode the same way:
 * thread CPU time of the submit alone (cgr_step_run, or cudaGraphLaunch
 * for the raw graph), then a wait outside the clock, for a chain of N
 * one-block kernels without inputs or outputs. Each N has its warm-up
 * runs, then rounds of `steps` runs a mode, the modes' order changing
 * every round (the six orders in turn), so a drift of the host moves all
 * modes alike. Printed per N: each mode's median over all timed runs, and
 * the paired ratio: the median over rounds of that round's new / old
 * median. Every timed cgr run must be a replay, and at the end each
 * mode's state must equal the raw graph's bit for bit (every mode ran the
 * same number of steps), or the program fails.
 *
 *   replay_cpu --old LIB --new LIB [--first old|new] [--rounds R] [--steps S] [--warmup W]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "side.h"

enum { RAW, OLD, NEW, MODES };
static const char *const mode_name[MODES] = {"raw", "old", "new"};
static const int chain_n[] = {10, 100, 1000};
#define N_CHAINS (int)(sizeof chain_n / sizeof chain_n[0])

static double thread_cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n), which it sorts. */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CK(call)                                                                            \
    do {                                                                                    \
        cudaError_t e_ = (call);                                                            \
        if (e_ != cudaSuccess) {                                                            \
            fprintf(stderr, "replay_cpu: %s: %s\n", #call, cudaGetErrorString(e_));          \
            return -1;                                                                      \
        }                                                                                   \
    } while (0)

/* The raw CUDA graph of each chain, on a stream of its own. */
typedef struct raw_graphs {
    cudaStream_t s;
    float *x[N_CHAINS];
    cudaGraphExec_t exec[N_CHAINS];
} raw_graphs;

static int raw_open(raw_graphs *r)
{
    float x0[REPLAY_CPU_ELEMS];
    for (int k = 0; k < REPLAY_CPU_ELEMS; k++)
        x0[k] = 1.0f + (float)k / 64.0f; /* as side.c starts every state */
    CK(cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking));
    for (int i = 0; i < N_CHAINS; i++) {
        cudaGraph_t g;
        CK(cudaMalloc((void **)&r->x[i], sizeof x0));
        CK(cudaMemcpy(r->x[i], x0, sizeof x0, cudaMemcpyHostToDevice));
        CK(cudaStreamBeginCapture(r->s, cudaStreamCaptureModeThreadLocal));
        int body = replay_cpu_chain(r->s, r->x[i], chain_n[i]);
        CK(cudaStreamEndCapture(r->s, &g));
        if (body != 0) {
            fprintf(stderr, "replay_cpu: capturing the raw chain failed\n");
            return -1;
        }
        CK(cudaGraphInstantiate(&r->exec[i], g, 0));
        CK(cudaGraphDestroy(g));
        CK(cudaGraphUpload(r->exec[i], r->s));
    }
    return 0;
}

typedef struct prog {
    raw_graphs raw;
    const side_ops *ops[MODES];
    side *side[MODES];
} prog;

/* One run of mode m on chain i; its submit's host CPU in *us. */
static int one_run(prog *p, int m, int i, double *us)
{
    int replayed = 1;
    double t0 = thread_cpu_us();
    if (m == RAW) {
        cudaError_t e = cudaGraphLaunch(p->raw.exec[i], p->raw.s);
        *us = thread_cpu_us() - t0;
        CK(e);
        CK(cudaStreamSynchronize(p->raw.s));
        return 0;
    }
    int rc = p->ops[m]->submit(p->side[m], i);
    *us = thread_cpu_us() - t0;
    if (rc != 0 || p->ops[m]->wait(p->side[m], i, &replayed) != 0)
        return -1;
    return replayed ? 0 : 1;
}

/* Each mode's state on chain i equals the raw graph's, bit for bit. */
static int same_states(prog *p, int i)
{
    float want[REPLAY_CPU_ELEMS], got[REPLAY_CPU_ELEMS];
    CK(cudaMemcpy(want, p->raw.x[i], sizeof want, cudaMemcpyDeviceToHost));
    for (int m = OLD; m < MODES; m++) {
        CK(cudaMemcpy(got, p->ops[m]->state(p->side[m], i), sizeof got,
                      cudaMemcpyDeviceToHost));
        if (memcmp(want, got, sizeof want) != 0) {
            fprintf(stderr, "replay_cpu: N = %d: the %s library's state differs from the raw "
                    "graph's (x[0] %.9g against %.9g): it skipped or repeated a step\n",
                    chain_n[i], mode_name[m], (double)got[0], (double)want[0]);
            return -1;
        }
    }
    return isfinite(want[0]) ? 0 : -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: replay_cpu --old LIB --new LIB [--first old|new] [--rounds R] "
                    "[--steps S] [--warmup W]\n");
    return 64;
}

int main(int argc, char **argv)
{
    const char *lib[MODES] = {NULL, NULL, NULL};
    int first = OLD, rounds = 40, steps = 200, warmup = 50;
    for (int a = 1; a < argc; a += 2) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!v)
            return usage();
        if (!strcmp(argv[a], "--old"))
            lib[OLD] = v;
        else if (!strcmp(argv[a], "--new"))
            lib[NEW] = v;
        else if (!strcmp(argv[a], "--first") && (!strcmp(v, "old") || !strcmp(v, "new")))
            first = !strcmp(v, "old") ? OLD : NEW;
        else if (!strcmp(argv[a], "--rounds"))
            rounds = atoi(v);
        else if (!strcmp(argv[a], "--steps"))
            steps = atoi(v);
        else if (!strcmp(argv[a], "--warmup"))
            warmup = atoi(v);
        else
            return usage();
    }
    if (!lib[OLD] || !lib[NEW] || rounds < 6 || steps < 1 || warmup < 10)
        return usage();

    prog p;
    memset(&p, 0, sizeof p);
    p.ops[OLD] = &side_old;
    p.ops[NEW] = &side_new;
    if (raw_open(&p.raw) != 0)
        return 1;
    /* Which library is loaded first moves where each lands in memory. */
    const int order[2] = {first, first == OLD ? NEW : OLD};
    for (int k = 0; k < 2; k++) {
        char err[512];
        int m = order[k];
        if (p.ops[m]->open(&p.side[m], lib[m], chain_n, N_CHAINS, err, sizeof err) != 0) {
            fprintf(stderr, "replay_cpu: the %s library: %s\n", mode_name[m], err);
            return 1;
        }
    }

    static const int perm[6][MODES] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1},
                                       {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    double *all[MODES], *round_us = malloc((size_t)steps * sizeof *round_us);
    double *ratio = malloc((size_t)rounds * sizeof *ratio);
    for (int m = 0; m < MODES; m++)
        all[m] = malloc((size_t)rounds * (size_t)steps * sizeof *all[m]);
    int status = 0;
    printf("first=%s rounds=%d steps=%d warmup=%d\n", mode_name[first], rounds, steps, warmup);
    for (int i = 0; i < N_CHAINS && status == 0; i++) {
        double us, rmed[MODES];
        for (int m = 0; m < MODES && status == 0; m++)
            for (int w = 0; w < warmup; w++)
                if (one_run(&p, m, i, &us) < 0) {
                    status = 1;
                    break;
                }
        for (int r = 0; r < rounds && status == 0; r++) {
            for (int k = 0; k < MODES && status == 0; k++) {
                int m = perm[r % 6][k];
                for (int j = 0; j < steps; j++) {
                    int rc = one_run(&p, m, i, &us);
                    if (rc != 0) {
                        if (rc > 0)
                            fprintf(stderr, "replay_cpu: N = %d: a timed run of the %s library "
                                    "was not a replay\n", chain_n[i], mode_name[m]);
                        status = 1;
                        break;
                    }
                    all[m][r * steps + j] = us;
                    round_us[j] = us;
                }
                if (status == 0)
                    rmed[m] = median(round_us, steps);
            }
            if (status == 0)
                ratio[r] = rmed[NEW] / rmed[OLD];
        }
        if (status != 0 || same_states(&p, i) != 0) {
            status = 1;
            break;
        }
        double med[MODES];
        for (int m = 0; m < MODES; m++)
            med[m] = median(all[m], rounds * steps);
        printf("n=%d raw=%.3f old=%.3f new=%.3f new/old=%.3f paired=%.3f\n", chain_n[i],
               med[RAW], med[OLD], med[NEW], med[NEW] / med[OLD], median(ratio, rounds));
        fflush(stdout);
    }
    for (int m = OLD; m < MODES; m++)
        p.ops[m]->close(p.side[m]);
    for (int m = 0; m < MODES; m++)
        free(all[m]);
    free(round_us);
    free(ratio);
    return status;
}
