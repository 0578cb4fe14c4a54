/*
 * One cgr library as replay_cpu loads it: dlopen'd with RTLD_LOCAL so that
 * two builds of libcgr (two commits) live in one process, each called
 * through the header it was built with (side.c is compiled once per
 * build). A side owns one runtime and one step per chain length, each a
 * chain of kernels without inputs or outputs on a state buffer of its own.
 */
#ifndef REPLAY_CPU_SIDE_H
#define REPLAY_CPU_SIDE_H

#include <stdint.h>

#define SIDE_MAX_STEPS 8

typedef struct side side;

typedef struct side_ops {
    /* Opens lib, creates a runtime and one step per n[i]; 0 or -1 (text in err). */
    int (*open)(side **out, const char *lib, const int *n, int n_steps, char *err, int err_len);
    /* Submits one run of step i; only this call is timed. */
    int (*submit)(side *s, int i);
    /* Waits for the last run of step i; *replayed: whether cgr replayed it. */
    int (*wait)(side *s, int i, int *replayed);
    /* The state buffer of step i (device memory). */
    float *(*state)(side *s, int i);
    void (*close)(side *s);
} side_ops;

extern const side_ops side_old, side_new;

/* kernel.cu: n kernels on `stream`, each x = fma(x, a, b) on REPLAY_CPU_ELEMS floats. */
#define REPLAY_CPU_ELEMS 256
int replay_cpu_chain(void *stream, float *x, int n);

#endif
