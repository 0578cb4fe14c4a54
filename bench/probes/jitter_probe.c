// Host jitter probe: how often the host takes the CPU away from a thread
// that spins, and what that alone does to the p99 of a short request.
// One thread reads CLOCK_MONOTONIC in a loop for 3 s and keeps every gap
// over 1 us (an interrupt, a VM exit, a preemption). Then, for windows of
// W us (about the W-serve latencies: 15 us at buckets 1-2, 20 at 8, 75 and
// 95 at 16-64), it cuts the 3 s into back-to-back windows and takes, per
// window, W plus the gaps that begin inside it: what a request of W us
// would take if the host were its only delay. Prints, per W, the share of
// windows hit by a gap of 2 us or more and p99 / p50 of the windows' time.
// No GPU involved. Build and run on the GPU machine:
//   cc -O2 -o /tmp/jitter_probe bench/probes/jitter_probe.c && /tmp/jitter_probe
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { MAX_GAPS = 1 << 20 };
static double gap_at[MAX_GAPS], gap_len[MAX_GAPS];

int main(void)
{
    const double run_us = 3e6;
    int n = 0;
    const double t0 = now_us();
    double prev = t0;
    for (;;) {
        const double t = now_us();
        if (t - prev > 1.0 && n < MAX_GAPS) {
            gap_at[n] = prev - t0;
            gap_len[n] = t - prev;
            n++;
        }
        prev = t;
        if (t - t0 > run_us)
            break;
    }
    double *lens = malloc((size_t)(n ? n : 1) * sizeof *lens);
    for (int i = 0; i < n; i++)
        lens[i] = gap_len[i];
    qsort(lens, (size_t)n, sizeof *lens, cmp);
    printf("%d gaps over 1 us in %.1f s (%.0f per s); gap p50 %.1f us, p99 %.1f us, max %.1f us\n",
           n, run_us / 1e6, n / (run_us / 1e6), n ? lens[n / 2] : 0.0,
           n ? lens[(int)(n * 0.99)] : 0.0, n ? lens[n - 1] : 0.0);
    const double ws[] = {15, 20, 25, 75, 95};
    for (size_t k = 0; k < sizeof ws / sizeof ws[0]; k++) {
        const double w = ws[k];
        const int nw = (int)(run_us / w);
        double *tot = calloc((size_t)nw, sizeof *tot);
        int hit = 0;
        for (int i = 0; i < n; i++) {
            int j = (int)(gap_at[i] / w);
            if (j < nw)
                tot[j] += gap_len[i];
        }
        for (int j = 0; j < nw; j++) {
            hit += tot[j] >= 2.0;
            tot[j] += w;
        }
        qsort(tot, (size_t)nw, sizeof *tot, cmp);
        printf("W = %3.0f us: %6.3f %% of %d windows hit by >= 2 us; p50 %.1f, p99 %.1f, "
               "p99/p50 %.3f\n",
               w, 100.0 * hit / nw, nw, tot[nw / 2], tot[(int)(nw * 0.99)],
               tot[(int)(nw * 0.99)] / tot[nw / 2]);
        free(tot);
    }
    free(lens);
    return 0;
}
