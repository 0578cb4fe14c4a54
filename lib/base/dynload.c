/*
 * Loading cuDNN and NCCL on first use (dynload.h has the search order).
 */
#include <assert.h>
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

/*
 * RTLD_NOW: a library whose own dependencies are missing fails here, where
 * the message can say so, not at its first call. RTLD_LOCAL: its symbols
 * stay out of the global scope, since cgr reaches them through dlsym only.
 */
static void *open_one(const char *file, char *msg, size_t size, int *tried)
{
    void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (h)
        return h;
    /* dlerror()'s text without the leading "file: ", which the message already names. */
    const char *e = dlerror();
    size_t n = strlen(file);
    if (!e)
        e = "unknown dlerror";
    else if (!strncmp(e, file, n) && e[n] == ':' && e[n + 1] == ' ')
        e += n + 2;
    add(msg, size, "%s%s (%s)", (*tried)++ ? "; " : "", file, e);
    return NULL;
}

int cgr__dl_load(const cgr__dl_spec *spec, void *syms, char *msg, size_t msg_size)
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
                /* Not the directory itself: it would fill the message. */
                add(msg, msg_size, "; not the build-time directory (its path, %zu bytes, is "
                    "too long)", strlen(spec->fallback_dir));
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
    void *found[CGR__DL_MAX_SYMBOLS];
    assert(spec->n_symbols <= CGR__DL_MAX_SYMBOLS);
    for (size_t i = 0; i < spec->n_symbols; i++) {
        (void)dlerror(); /* a NULL symbol is only an error when dlerror says so */
        found[i] = dlsym(h, spec->symbols[i]);
        const char *e = dlerror();
        if (e || !found[i]) {
            snprintf(msg, msg_size, "%s: %s has no %s (%s): not the %s cgr was built for. %s",
                     spec->what, used, spec->symbols[i], e ? e : "NULL address", spec->soname,
                     spec->install_hint);
            /* Gives the unusable library back; msg already says why. */
            if (dlclose(h) != 0) {
                e = dlerror();
                add(msg, msg_size, "; dlclose failed: %s", e ? e : "unknown dlerror");
            }
            return -1;
        }
    }
    memcpy(syms, found, spec->n_symbols * sizeof found[0]);
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
        if (cgr__dl_load(&l->spec, l->api, l->why, sizeof l->why) == 0)
            __atomic_store_n(&l->ready, 1, __ATOMIC_RELEASE);
    }
    (void)pthread_mutex_unlock(&load_lock);
    if (__atomic_load_n(&l->ready, __ATOMIC_ACQUIRE))
        return CGR_STATUS_OK;
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: %s", fn, l->why);
}

/*
 * One library's table, symbol names and loader, from its function list in
 * dynload.h: cgr__LIB() and cgr__LIB_load() for lib LIB.
 */
#define CGR__DL_LIBRARY(lib, functions, what_, soname_, env_, dir_, hint_)                  \
    functions(CGR__DL_CHECK)                                                               \
    static const char *const lib##_symbols[] = {functions(CGR__DL_NAME)};                  \
    enum { lib##_n_symbols = sizeof lib##_symbols / sizeof lib##_symbols[0] };             \
    static cgr__##lib##_api lib##_api;                                                     \
    _Static_assert(sizeof lib##_api == lib##_n_symbols * sizeof(void *) &&                 \
                       lib##_n_symbols <= CGR__DL_MAX_SYMBOLS,                             \
                   "one function pointer per symbol, at most CGR__DL_MAX_SYMBOLS");        \
    static library lib##_lib = {                                                           \
        .spec = {.what = what_, .soname = soname_, .env = env_, .fallback_dir = dir_,      \
                 .install_hint = hint_, .symbols = lib##_symbols,                          \
                 .n_symbols = lib##_n_symbols},                                            \
        .api = &lib##_api,                                                                 \
    };                                                                                     \
    const cgr__##lib##_api *cgr__##lib(void)                                               \
    {                                                                                      \
        return __atomic_load_n(&lib##_lib.ready, __ATOMIC_ACQUIRE) ? &lib##_api : NULL;    \
    }                                                                                      \
    cgr_status cgr__##lib##_load(const char *fn)                                           \
    {                                                                                      \
        return load(&lib##_lib, fn);                                                       \
    }

#endif

/* ---- cuDNN ------------------------------------------------------------------ */

#if CGR_HAVE_CUDNN

CGR__DL_LIBRARY(cudnn, CGR__CUDNN_FUNCTIONS, "cuDNN", "libcudnn.so." CGR__STR(CUDNN_MAJOR),
                "CGR_CUDNN_LIBRARY", CGR_CUDNN_LIBDIR,
                "Install cuDNN " CGR__STR(CUDNN_MAJOR) " (a system package, or pip install "
                "nvidia-cudnn-cu13)")

#else

cgr_status cgr__cudnn_load(const char *fn)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: cgr was built without cuDNN", fn);
}

#endif

/* ---- NCCL ------------------------------------------------------------------- */

#if CGR_HAVE_NCCL

CGR__DL_LIBRARY(nccl, CGR__NCCL_FUNCTIONS, "NCCL", "libnccl.so." CGR__STR(NCCL_MAJOR),
                "CGR_NCCL_LIBRARY", CGR_NCCL_LIBDIR,
                "Install NCCL 2.18 or newer (a system package, or pip install "
                "nvidia-nccl-cu13)")

#else

cgr_status cgr__nccl_load(const char *fn)
{
    return CGR_FAIL(CGR_STATUS_NOT_SUPPORTED, "%s: cgr was built without NCCL", fn);
}

#endif

/* ---- CUPTI ------------------------------------------------------------------- */

#if CGR_HAVE_CUPTI

CGR__DL_LIBRARY(cupti, CGR__CUPTI_FUNCTIONS, "CUPTI", CGR_CUPTI_SONAME, "CGR_CUPTI_LIBRARY",
                CGR_CUPTI_LIBDIR,
                "CUPTI comes with the CUDA toolkit (lib64 or extras/CUPTI/lib64)")

#endif
