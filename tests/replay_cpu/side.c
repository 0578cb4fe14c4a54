/*
 * One libcgr, loaded with dlopen and called through the header it was
 * built with. Compiled once per library: -DSIDE_NAME=side_old or side_new,
 * and -DSIDE_OLD_API=1 for a header from before cgr_step_run took dims
 * (replay_cpu.sh decides which by reading the header).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cgr/cgr.h"
#include "side.h"

#ifndef SIDE_NAME
#error "define SIDE_NAME (side_old or side_new)"
#endif
#ifndef SIDE_OLD_API
#define SIDE_OLD_API 0
#endif

typedef struct step_user {
    const side *s;
    float *x;
    int n;
    char name[32];
} step_user;

struct side {
    void *dl;
    const char *lib;
    cgr_runtime *rt;
    int n_steps;
    cgr_step *step[SIDE_MAX_STEPS];
    step_user user[SIDE_MAX_STEPS];
    uint64_t ticket[SIDE_MAX_STEPS];
    const char *(*last_error)(void);
    cgr_status (*runtime_create)(cgr_runtime **, const cgr_options *);
    cgr_status (*runtime_destroy)(cgr_runtime **);
    cgr_status (*step_create)(cgr_runtime *, const cgr_step_desc *, cgr_step **);
    cgr_status (*step_destroy)(cgr_step **);
    cgr_status (*ctx_stream)(const cgr_ctx *, cgr_stream *);
    cgr_status (*step_wait)(cgr_step *, uint64_t);
    cgr_status (*run_action)(const cgr_step *, uint64_t, cgr_run_action *);
#if SIDE_OLD_API
    cgr_status (*options_init)(cgr_options *);
    cgr_status (*desc_init)(cgr_step_desc *);
    cgr_status (*run)(cgr_step *, const void *const *, uint64_t *);
#else
    cgr_status (*options_init_size)(cgr_options *, size_t);
    cgr_status (*desc_init_size)(cgr_step_desc *, size_t);
    cgr_status (*run)(cgr_step *, const int64_t *, const void *const *, uint64_t *);
#endif
};

/* A failed call of s's library, with its last error. */
static int fail(const side *s, const char *what)
{
    fprintf(stderr, "replay_cpu: %s: %s failed: %s\n", s->lib, what,
            s->last_error ? s->last_error() : "(library not loaded)");
    return -1;
}

static cgr_status step_fn(cgr_ctx *ctx, void *user)
{
    const step_user *u = user;
    cgr_stream stream;
    cgr_status st = u->s->ctx_stream(ctx, &stream);
    if (st != CGR_STATUS_OK)
        return st;
    return replay_cpu_chain(stream, u->x, u->n) == 0 ? CGR_STATUS_OK : CGR_STATUS_CUDA_ERROR;
}

static void side_close(side *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n_steps; i++) {
        if (s->step[i])
            (void)s->step_destroy(&s->step[i]);
        (void)cudaFree(s->user[i].x);
    }
    if (s->rt)
        (void)s->runtime_destroy(&s->rt);
    /* Not dlclose'd: the process ends soon after, and unloading a library
     * that registered kernels with the CUDA runtime gains nothing. */
    free(s);
}

static int side_open(side **out, const char *lib, const int *n, int n_steps, char *err,
                     int err_len)
{
    side *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s || n_steps > SIDE_MAX_STEPS) {
        snprintf(err, (size_t)err_len, "%s: no memory or too many steps", lib);
        free(s);
        return -1;
    }
    s->lib = lib;
    s->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!s->dl) {
        snprintf(err, (size_t)err_len, "%s", dlerror());
        free(s);
        return -1;
    }
#define LOAD(field, name)                                                                   \
    do {                                                                                    \
        *(void **)&s->field = dlsym(s->dl, name);                                           \
        if (!s->field) {                                                                    \
            snprintf(err, (size_t)err_len, "%s has no %s (built from another API?)", lib,   \
                     name);                                                                 \
            free(s);                                                                        \
            return -1;                                                                      \
        }                                                                                   \
    } while (0)
    LOAD(last_error, "cgr_last_error");
    LOAD(runtime_create, "cgr_runtime_create");
    LOAD(runtime_destroy, "cgr_runtime_destroy");
    LOAD(step_create, "cgr_step_create");
    LOAD(step_destroy, "cgr_step_destroy");
    LOAD(ctx_stream, "cgr_ctx_stream");
    LOAD(step_wait, "cgr_step_wait");
    LOAD(run_action, "cgr_step_run_action");
    LOAD(run, "cgr_step_run");
#if SIDE_OLD_API
    LOAD(options_init, "cgr_options_init");
    LOAD(desc_init, "cgr_step_desc_init");
#else
    LOAD(options_init_size, "cgr_options_init_size");
    LOAD(desc_init_size, "cgr_step_desc_init_size");
#endif
#undef LOAD
    snprintf(err, (size_t)err_len, "%s: see the message above", lib);
    cgr_options o;
#if SIDE_OLD_API
    cgr_status st = s->options_init(&o);
#else
    cgr_status st = s->options_init_size(&o, sizeof o);
#endif
    if (st != CGR_STATUS_OK || s->runtime_create(&s->rt, &o) != CGR_STATUS_OK) {
        fail(s, "creating the runtime");
        side_close(s);
        return -1;
    }
    for (int i = 0; i < n_steps; i++) {
        /* The same start values on every side and every chain length. */
        float x0[REPLAY_CPU_ELEMS];
        for (int k = 0; k < REPLAY_CPU_ELEMS; k++)
            x0[k] = 1.0f + (float)k / 64.0f;
        step_user *u = &s->user[i];
        u->s = s;
        u->n = n[i];
        s->n_steps = i + 1;
        if (cudaMalloc((void **)&u->x, sizeof x0) != cudaSuccess ||
            cudaMemcpy(u->x, x0, sizeof x0, cudaMemcpyHostToDevice) != cudaSuccess) {
            fprintf(stderr, "replay_cpu: %s: the state buffer: %s\n", lib,
                    cudaGetErrorString(cudaGetLastError()));
            side_close(s);
            return -1;
        }
        cgr_step_desc d;
#if SIDE_OLD_API
        st = s->desc_init(&d);
#else
        st = s->desc_init_size(&d, sizeof d);
#endif
        snprintf(u->name, sizeof u->name, "chain of %d", n[i]);
        d.name = u->name;
        d.fn = step_fn;
        d.user = u;
        if (st != CGR_STATUS_OK || s->step_create(s->rt, &d, &s->step[i]) != CGR_STATUS_OK) {
            fail(s, "creating a step");
            side_close(s);
            return -1;
        }
    }
    *out = s;
    return 0;
}

static int side_submit(side *s, int i)
{
#if SIDE_OLD_API
    cgr_status st = s->run(s->step[i], NULL, &s->ticket[i]);
#else
    cgr_status st = s->run(s->step[i], NULL, NULL, &s->ticket[i]);
#endif
    return st == CGR_STATUS_OK ? 0 : fail(s, "cgr_step_run");
}

static int side_wait(side *s, int i, int *replayed)
{
    cgr_run_action a;
    if (s->step_wait(s->step[i], s->ticket[i]) != CGR_STATUS_OK)
        return fail(s, "cgr_step_wait");
    if (s->run_action(s->step[i], s->ticket[i], &a) != CGR_STATUS_OK)
        return fail(s, "cgr_step_run_action");
    *replayed = a == CGR_RUN_REPLAY;
    return 0;
}

static float *side_state(side *s, int i)
{
    return s->user[i].x;
}

const side_ops SIDE_NAME = {side_open, side_submit, side_wait, side_state, side_close};
