/*
 * Loading cuDNN and NCCL on first use (dynload.h has the search order).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dynload.h"

#define CGR__STR_(x) #x
#define CGR__STR(x) CGR__STR_(x)

/* Room for the dlerror() texts of every file tried, and the advice. */
#define WHY_SIZE 900

/* Appends to msg (always terminated, silently cut at its end). */
static void add(char *msg, size_t size, const char *fmt, ...) CGR__PRINTF(3, 4);
static void add(char *msg, size_t size, const char *fmt, ...)
{
    size_t n = strlen(msg);
    if (n + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, size - n, fmt, ap);
    va_end(ap);
}

/* dlerror()'s text without the leading "file: ", which the message already names. */
static const char *reason(const char *file)
{
    const char *e = dlerror();
    if (!e)
        return "unknown dlerror";
    size_t n = strlen(file);
    if (!strncmp(e, file, n) && e[n] == ':' && e[n + 1] == ' ')
        return e + n + 2;
    return e;
}

/*
 * RTLD_NOW: a library whose own dependencies are missing fails here, where
 * the message can say so, not at its first call. RTLD_LOCAL: its symbols
 * stay out of the global scope, since cgr reaches them through dlsym only.
 */
static void *open_one(const char *file, char *msg, size_t size, int *tried)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        add(msg, size, "%s%s (%s)", (*tried)++ ? "; " : "", file, reason(file));
    return h;
}

/* Gives back a library that turned out unusable; msg already says why. */
static void close_unusable(void *h, char *msg, size_t size)
{
    if (dlclose(h) != 0) {
        const char *e = dlerror();
        add(msg, size, "; dlclose failed: %s", e ? e : "unknown dlerror");
    }
}

int cgr__dl_load(const cgr__dl_spec *spec, void **syms, char *msg, size_t msg_size)
{
    if (msg_size == 0)
        return -1;
    msg[0] = '\0';
    const char *forced = spec->env ? getenv(spec->env) : NULL;
    const char *used = NULL;
    void *h = NULL;
    int tried = 0;
    char fallback[4096];
    if (forced && forced[0]) {
        add(msg, msg_size, "%s could not be loaded from %s=", spec->what, spec->env);
        h = open_one(forced, msg, msg_size, &tried);
        if (!h) {
            add(msg, msg_size, "; set %s to the full path of %s, or unset it to let the "
                "dynamic loader find %s",
                spec->env, spec->soname, spec->soname);
            return -1;
        }
        used = forced;
    } else {
        add(msg, msg_size, "%s could not be loaded: tried ", spec->what);
        h = open_one(spec->soname, msg, msg_size, &tried);
        used = spec->soname;
        if (!h && spec->fallback_dir && spec->fallback_dir[0]) {
            int n = snprintf(fallback, sizeof fallback, "%s/%s", spec->fallback_dir,
                             spec->soname);
            if (n > 0 && (size_t)n < sizeof fallback) {
                h = open_one(fallback, msg, msg_size, &tried);
                used = fallback;
            } else {
                add(msg, msg_size, "; not %s/%s (path too long)", spec->fallback_dir,
                    spec->soname);
            }
        }
        if (!h) {
            add(msg, msg_size, ". %s, and add the directory that holds %s to "
                "LD_LIBRARY_PATH (or set %s to its full path)",
                spec->install_hint, spec->soname, spec->env);
            return -1;
        }
    }
    /* All symbols or none: a library that lacks one is not the one cgr was built for. */
    void *found[64];
    if (spec->n_symbols > sizeof found / sizeof found[0]) {
        snprintf(msg, msg_size, "%s: %zu symbols asked for, at most %zu supported", spec->what,
                 spec->n_symbols, sizeof found / sizeof found[0]);
        close_unusable(h, msg, msg_size);
        return -1;
    }
    for (size_t i = 0; i < spec->n_symbols; i++) {
        (void)dlerror(); /* a NULL symbol is only an error when dlerror says so */
        found[i] = dlsym(h, spec->symbols[i]);
        const char *e = dlerror();
        if (e || !found[i]) {
            snprintf(msg, msg_size, "%s: %s has no %s (%s): not the %s cgr was built for. %s",
                     spec->what, used, spec->symbols[i], e ? e : "NULL address", spec->soname,
                     spec->install_hint);
            close_unusable(h, msg, msg_size);
            return -1;
        }
    }
    memcpy(syms, found, spec->n_symbols * sizeof *syms);
    msg[0] = '\0';
    return 0;
}

#define CGR__DL_NAME(ret, name, args) #name,
/* Each table member must have the header's type, so a changed prototype fails the build. */
#define CGR__DL_CHECK(ret, name, args)                                                     \
    _Static_assert(_Generic(&name, ret(*) args: 1, default: 0),                            \
                   #name " in dynload.h does not match the header's declaration");

#if CGR_HAVE_CUDNN || CGR_HAVE_NCCL || CGR_HAVE_CUPTI

/*
 * One library, loaded by the first call that needs it and its outcome kept
 * for every later call. api is its table: one function pointer per symbol,
 * filled from dlsym's void pointers with memcpy (POSIX guarantees that a
 * void pointer can hold a function pointer; memcpy makes the conversion
 * without the cast that ISO C leaves undefined).
 */
typedef struct library {
    cgr__dl_spec spec;
    void *api;
    int tried;
    int ready; /* written once, before readers see it (release / acquire) */
    char why[WHY_SIZE];
} library;

/* Loads are rare and dlopen serializes them anyway: one lock serves every library. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static cgr_status load(library *l, const char *fn)
{
    (void)pthread_mutex_lock(&load_lock);
    if (!l->tried) {
        l->tried = 1;
        void *syms[64];
        if (cgr__dl_load(&l->spec, syms, l->why, sizeof l->why) == 0) {
            memcpy(l->api, syms, l->spec.n_symbols * sizeof *syms);
            __atomic_store_n(&l->ready, 1, __ATOMIC_RELEASE);
        }
    }
    (void)pthread_mutex_unlock(&load_lock);
    if (__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE))
        return CGR_STATUS_OK;
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: %s", fn, l->why);
}

#define CGR__DL_SYMBOLS(list) (sizeof(list) / sizeof((list)[0]))
#define CGR__DL_TABLE_FITS(api, list)                                                      \
    _Static_assert(sizeof(api) == CGR__DL_SYMBOLS(list) * sizeof(void *),                  \
                   "one function pointer per symbol")

#endif

/* ---- cuDNN ------------------------------------------------------------------ */

#if CGR_HAVE_CUDNN

CGR__CUDNN_FUNCTIONS(CGR__DL_CHECK)

static const char *const cudnn_symbols[] = {CGR__CUDNN_FUNCTIONS(CGR__DL_NAME)};
static cgr__cudnn_api cudnn_api;
CGR__DL_TABLE_FITS(cudnn_api, cudnn_symbols);
static library cudnn_lib = {
    .spec = {
        .what = "cuDNN",
        .soname = "libcudnn.so." CGR__STR(CUDNN_MAJOR),
        .env = "CGR_CUDNN_LIBRARY",
        .fallback_dir = CGR_CUDNN_LIBDIR,
        .install_hint = "Install cuDNN " CGR__STR(CUDNN_MAJOR) " (a system package, or pip "
                        "install nvidia-cudnn-cu13)",
        .symbols = cudnn_symbols,
        .n_symbols = CGR__DL_SYMBOLS(cudnn_symbols),
    },
    .api = &cudnn_api,
};

const cgr__cudnn_api *cgr__cudnn(void)
{
    return __atomic_load_n(&cudnn_lib.ready, __ATOMIC_ACQUIRE) ? &cudnn_api : NULL;
}

cgr_status cgr__cudnn_load(const char *fn)
{
    return load(&cudnn_lib, fn);
}

#else

cgr_status cgr__cudnn_load(const char *fn)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: cgr was built without cuDNN", fn);
}

#endif

/* ---- NCCL ------------------------------------------------------------------- */

#if CGR_HAVE_NCCL

CGR__NCCL_FUNCTIONS(CGR__DL_CHECK)

static const char *const nccl_symbols[] = {CGR__NCCL_FUNCTIONS(CGR__DL_NAME)};
static cgr__nccl_api nccl_api;
CGR__DL_TABLE_FITS(nccl_api, nccl_symbols);
static library nccl_lib = {
    .spec = {
        .what = "NCCL",
        .soname = "libnccl.so." CGR__STR(NCCL_MAJOR),
        .env = "CGR_NCCL_LIBRARY",
        .fallback_dir = CGR_NCCL_LIBDIR,
        .install_hint = "Install NCCL 2.18 or newer (a system package, or pip install "
                        "nvidia-nccl-cu13)",
        .symbols = nccl_symbols,
        .n_symbols = CGR__DL_SYMBOLS(nccl_symbols),
    },
    .api = &nccl_api,
};

const cgr__nccl_api *cgr__nccl(void)
{
    return __atomic_load_n(&nccl_lib.ready, __ATOMIC_ACQUIRE) ? &nccl_api : NULL;
}

cgr_status cgr__nccl_load(const char *fn)
{
    return load(&nccl_lib, fn);
}

#else

cgr_status cgr__nccl_load(const char *fn)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: cgr was built without NCCL", fn);
}

#endif

/* ---- CUPTI ------------------------------------------------------------------- */

#if CGR_HAVE_CUPTI

CGR__CUPTI_FUNCTIONS(CGR__DL_CHECK)

static const char *const cupti_symbols[] = {CGR__CUPTI_FUNCTIONS(CGR__DL_NAME)};
static cgr__cupti_api cupti_api;
CGR__DL_TABLE_FITS(cupti_api, cupti_symbols);
static library cupti_lib = {
    .spec = {
        .what = "CUPTI",
        .soname = CGR_CUPTI_SONAME,
        .env = "CGR_CUPTI_LIBRARY",
        .fallback_dir = CGR_CUPTI_LIBDIR,
        .install_hint = "CUPTI comes with the CUDA toolkit (lib64 or extras/CUPTI/lib64)",
        .symbols = cupti_symbols,
        .n_symbols = CGR__DL_SYMBOLS(cupti_symbols),
    },
    .api = &cupti_api,
};

const cgr__cupti_api *cgr__cupti(void)
{
    return __atomic_load_n(&cupti_lib.ready, __ATOMIC_ACQUIRE) ? &cupti_api : NULL;
}

cgr_status cgr__cupti_load(const char *fn)
{
    return load(&cupti_lib, fn);
}

#else

cgr_status cgr__cupti_load(const char *fn)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: cgr was built without CUPTI", fn);
}

#endif
