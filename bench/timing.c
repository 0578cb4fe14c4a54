/*
 * Clocks, measurement loop, statistics, watchdog.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"
#include "util.h"

double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* CPU time of the calling thread in microseconds. */
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

void stats_sort(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
}

double stats_percentile(const double *sorted, int n, double p)
{
    double pos = p * (double)(n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    double f = pos - (double)lo;
    return sorted[lo] * (1.0 - f) + sorted[hi] * f;
}

void stats_compute(double *v, int n, bench_stats *out)
{
    if (n <= 0) {
        out->median = out->p10 = out->p90 = out->mean = out->min = out->max = NAN;
        return;
    }
    stats_sort(v, n);
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += v[i];
    out->median = stats_percentile(v, n, 0.5);
    out->p10 = stats_percentile(v, n, 0.1);
    out->p90 = stats_percentile(v, n, 0.9);
    out->mean = sum / n;
    out->min = v[0];
    out->max = v[n - 1];
}

void mode_result_init(mode_result *r, const char *name)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    stats_compute(NULL, 0, &r->wall);
    stats_compute(NULL, 0, &r->cpu);
}

void mode_result_fail(mode_result *r)
{
    r->failed = 1;
    if (!r->error[0])
        snprintf(r->error, sizeof r->error, "%s",
                 bench_last_error()[0] ? bench_last_error() : "unknown error");
}

void mode_result_not_run(mode_result *r, int skipped)
{
    if (!skipped) {
        mode_result_fail(r);
        return;
    }
    r->skipped = 1;
    snprintf(r->error, sizeof r->error, "skipped: the device failed in an earlier mode");
}

/* One step; wall/cpu receive its times when timed is set. */
static int one_step(const step_ops *ops, void *self, long k, double *wall, double *cpu)
{
    if (ops->prepare)
        TRY(ops->prepare(self, k));
    /*
     * The thread CPU clock is a system call, so it is read before the wall
     * clock starts: the submission is still inside [c0, c1], and wall time
     * does not carry the cost of reading c0.
     */
    double c0 = thread_cpu_us();
    double t0 = now_us();
    int rc = ops->submit(self, k);
    if (rc != 0)
        return rc;
    double c1 = thread_cpu_us();
    /* A wait may find a wrong value too (W-ddp's loss): CHECK_WRONG passes through. */
    if ((rc = ops->wait(self, k)) != 0)
        return rc;
    double t1 = now_us();
    *wall = t1 - t0;
    *cpu = c1 - c0;
    return ops->check ? ops->check(self, k) : 0;
}

/* Steps first .. first+n-1; their times go to wall[0..n) and cpu[0..n) when given. */
static int run_steps(const step_ops *ops, void *self, long first, int n, double *wall,
                     double *cpu, mode_result *r)
{
    double w = 0.0, c = 0.0;
    for (int i = 0; i < n; i++) {
        int rc = one_step(ops, self, first + i, wall ? &wall[i] : &w, cpu ? &cpu[i] : &c);
        if (rc == CHECK_WRONG)
            r->wrong = 1;
        if (rc != 0)
            return -1;
        if (ops->check)
            r->verified++;
    }
    return 0;
}

int measure(const step_ops *ops, void *self, int warmup, int steps, mode_result *r)
{
    bench_mode m = {r, *ops, self, NULL, NULL, NULL, NULL};
    return measure_rounds(&m, 1, warmup, steps, 1) == 0 ? 0 : -1;
}

/* A mode that failed: marked, and the device checked. -2 when the device is lost. */
static int drop_mode(bench_mode *m)
{
    mode_result_fail(m->r);
    return bench_device_recover() == 0 ? -1 : -2;
}

int measure_rounds(bench_mode *m, int n, int warmup, int steps, int rounds)
{
    if (rounds < 1)
        rounds = 1;
    if (rounds > steps)
        rounds = steps;
    double *wall = malloc(sizeof(double) * (size_t)steps * (size_t)n);
    double *cpu = malloc(sizeof(double) * (size_t)steps * (size_t)n);
    double *tmp = malloc(sizeof(double) * (size_t)steps);
    int *live = calloc((size_t)n, sizeof(int));
    int *order = malloc(sizeof(int) * (size_t)n);
    int rc = 0;
    if (!wall || !cpu || !tmp || !live || !order) {
        bench_error("out of host memory for %d samples of %d modes", steps, n);
        for (int i = 0; i < n; i++)
            mode_result_fail(m[i].r);
        rc = -1;
        goto done;
    }
    for (int i = 0; i < n; i++) {
        m[i].r->warmup = warmup;
        m[i].r->steps = steps;
        for (int k = 0; m[i].round_wall && k < rounds; k++)
            m[i].round_wall[k] = NAN;
    }
    /* Warm-up of every mode, then its after-warm-up check. */
    for (int i = 0; i < n && rc > -2; i++) {
        bench_clear_error();
        if (run_steps(&m[i].ops, m[i].self, 0, warmup, NULL, NULL, m[i].r) != 0 ||
            (m[i].ops.after_warmup && m[i].ops.after_warmup(m[i].self) != 0))
            rc = drop_mode(&m[i]);
        else
            live[i] = 1;
    }
    /* A fixed seed: every run, and every rank of W-ddp (whose collectives must match),
     * takes the modes in the same orders. */
    bench_rng rng;
    rng_seed(&rng, 0x6f72646572ULL);
    for (int k = 0; k < rounds && rc > -2; k++) {
        int first = (int)((long long)steps * k / rounds);
        int count = (int)((long long)steps * (k + 1) / rounds) - first;
        /* This round's order: a shuffle of the modes (timing.h says why). */
        for (int j = 0; j < n; j++)
            order[j] = j;
        for (int j = n - 1; j > 0; j--) {
            int t = (int)rng_below(&rng, (uint32_t)j + 1), x = order[j];
            order[j] = order[t];
            order[t] = x;
        }
        for (int j = 0; j < n && rc > -2; j++) {
            int i = order[j];
            if (!live[i])
                continue;
            double *w = wall + (size_t)i * (size_t)steps + (size_t)first;
            double *c = cpu + (size_t)i * (size_t)steps + (size_t)first;
            bench_clear_error();
            if (run_steps(&m[i].ops, m[i].self, warmup + first, count, w, c, m[i].r) != 0) {
                live[i] = 0;
                rc = drop_mode(&m[i]);
                continue;
            }
            if (m[i].round_wall) {
                memcpy(tmp, w, sizeof(double) * (size_t)count);
                stats_sort(tmp, count);
                m[i].round_wall[k] = stats_percentile(tmp, count, 0.5);
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (live[i] && rc > -2) {
            stats_compute(wall + (size_t)i * (size_t)steps, steps, &m[i].r->wall);
            stats_compute(cpu + (size_t)i * (size_t)steps, steps, &m[i].r->cpu);
            m[i].r->ran = 1;
        } else if (!m[i].r->failed) {
            mode_result_fail(m[i].r);
        }
    }
done:
    free(wall);
    free(cpu);
    free(tmp);
    free(live);
    free(order);
    return rc;
}

/* ---- watchdog ---------------------------------------------------------- */

/*
 * The watchdog's message, formatted when it is armed: the signal handler
 * may only make async-signal-safe calls (write() and _exit()).
 */
static char watchdog_msg[512];
static volatile size_t watchdog_len;

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, watchdog_msg, watchdog_len);
    (void)w;
    _exit(1);
}

void watchdog_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
}

void watchdog_arm(const char *what, unsigned seconds)
{
    alarm(0);
    snprintf(watchdog_msg, sizeof watchdog_msg,
             "\ncgr-bench: error: watchdog: '%.300s' did not finish within %u s; the GPU or "
             "driver stopped responding. Giving up (exit 1).\n",
             what, seconds);
    watchdog_len = strlen(watchdog_msg);
    alarm(seconds);
}

void watchdog_disarm(void)
{
    alarm(0);
}
