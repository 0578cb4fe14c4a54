/*
 * The loader of cuDNN and NCCL (lib/base/dynload.c) without a GPU: where it
 * looks, in which order, and what it says when it finds nothing. The
 * search runs on stand-in libraries (libm, files that do not exist, a file
 * that is no library); the cuDNN and NCCL entry points are checked with
 * their environment variables pointing at a missing file, from several
 * threads at once, since they load once per process.
 */
#define _GNU_SOURCE /* dladdr, to find libm's file */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgr/cgr.h"
#include "dynload.h"
#include "test.h"

#define ASSERT_HAS(text, part)                                                             \
    do {                                                                                   \
        if (!strstr((text), (part)))                                                       \
            TEST_FAIL_("\"%s\" does not contain \"%s\"", (text), (part));                  \
    } while (0)
#define ASSERT_LACKS(text, part)                                                           \
    do {                                                                                   \
        if (strstr((text), (part)))                                                        \
            TEST_FAIL_("\"%s\" contains \"%s\"", (text), (part));                          \
    } while (0)

#define MISSING_SONAME "libcgr-test-missing.so.7"
#define MISSING_DIR "/nonexistent-cgr-test-dir"
#define ENV "CGR_TEST_DYNLOAD_LIBRARY"

static const char *const libm_symbols[] = {"cos", "sin"};

static cgr__dl_spec spec_of(const char *soname, const char *fallback_dir)
{
    return (cgr__dl_spec){
        .what = "TestLib",
        .soname = soname,
        .env = ENV,
        .fallback_dir = fallback_dir,
        .install_hint = "Install TestLib",
        .symbols = libm_symbols,
        .n_symbols = 2,
    };
}

static void *sentinel[2] = {(void *)&sentinel, (void *)&sentinel};

static void reset(void **syms)
{
    memcpy(syms, sentinel, sizeof sentinel);
}

static void untouched(void **syms)
{
    ASSERT(memcmp(syms, sentinel, sizeof sentinel) == 0);
}

/* Nothing found: every file tried is named, with the ways to fix it. */
static void test_missing(void)
{
    char msg[900];
    void *syms[2];
    reset(syms);
    ASSERT_EQ(unsetenv(ENV), 0);
    cgr__dl_spec spec = spec_of(MISSING_SONAME, MISSING_DIR);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    untouched(syms);
    ASSERT_HAS(msg, "TestLib could not be loaded");
    ASSERT_HAS(msg, "tried " MISSING_SONAME " (");
    ASSERT_HAS(msg, "; " MISSING_DIR "/" MISSING_SONAME " (");
    ASSERT_HAS(msg, "Install TestLib");
    ASSERT_HAS(msg, "LD_LIBRARY_PATH");
    ASSERT_HAS(msg, ENV);
    /* dlerror's "file: " prefix is dropped; the message has named the file already. */
    ASSERT_LACKS(msg, "(" MISSING_SONAME ":");

    /* Without a build-time directory only the soname is tried. */
    spec = spec_of(MISSING_SONAME, "");
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    ASSERT_HAS(msg, "tried " MISSING_SONAME " (");
    ASSERT_LACKS(msg, "; /");
    untouched(syms);
}

/* The environment variable names the only file tried, even when the soname would load. */
static void test_env_wins(void)
{
    char msg[900];
    void *syms[2];
    reset(syms);
    ASSERT_EQ(setenv(ENV, MISSING_DIR "/libforced.so", 1), 0);
    cgr__dl_spec spec = spec_of("libm.so.6", MISSING_DIR);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    untouched(syms);
    ASSERT_HAS(msg, "TestLib could not be loaded from " ENV "=" MISSING_DIR "/libforced.so (");
    ASSERT_HAS(msg, "unset it");
    ASSERT_LACKS(msg, "tried");

    /* ... and a loadable one is used instead of a soname that is missing. */
    ASSERT_EQ(setenv(ENV, "libm.so.6", 1), 0);
    spec = spec_of(MISSING_SONAME, MISSING_DIR);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), 0);
    ASSERT_STR_EQ(msg, "");
    double (*c)(double);
    memcpy(&c, &syms[0], sizeof c);
    ASSERT(c(0.0) == 1.0);

    /* An empty variable counts as unset. */
    ASSERT_EQ(setenv(ENV, "", 1), 0);
    spec = spec_of(MISSING_SONAME, "");
    reset(syms);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    ASSERT_HAS(msg, "tried " MISSING_SONAME);
    untouched(syms);
    ASSERT_EQ(unsetenv(ENV), 0);
}

/* A file that is there but no shared library is reported with the loader's reason. */
static void test_not_a_library(void)
{
    char path[] = "/tmp/cgr-test-dynload-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    ASSERT_EQ(write(fd, "not an ELF file\n", 16), 16);
    ASSERT_EQ(close(fd), 0);
    ASSERT_EQ(setenv(ENV, path, 1), 0);
    char msg[900];
    void *syms[2];
    reset(syms);
    cgr__dl_spec spec = spec_of("libm.so.6", "");
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    untouched(syms);
    ASSERT_HAS(msg, path);
    ASSERT_EQ(unlink(path), 0);
    ASSERT_EQ(unsetenv(ENV), 0);
}

/* A library without one of the symbols is refused as a whole. */
static void test_missing_symbol(void)
{
    static const char *const symbols[] = {"cos", "cgr_test_no_such_symbol"};
    cgr__dl_spec spec = spec_of("libm.so.6", "");
    spec.symbols = symbols;
    char msg[900];
    void *syms[2];
    reset(syms);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    untouched(syms);
    ASSERT_HAS(msg, "TestLib: libm.so.6 has no cgr_test_no_such_symbol");
    ASSERT_HAS(msg, "not the libm.so.6 cgr was built for");
    ASSERT_LACKS(msg, "dlclose"); /* giving the library back worked */
}

/* A build-time directory too long for a path is named as such, and nothing is opened. */
static void test_fallback_too_long(void)
{
    static char dir[5000];
    memset(dir, 'd', sizeof dir - 1);
    dir[0] = '/';
    char msg[900];
    void *syms[2];
    reset(syms);
    cgr__dl_spec spec = spec_of(MISSING_SONAME, dir);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    untouched(syms);
    ASSERT_HAS(msg, "not the build-time directory (its path, 4999 bytes, is too long)");
    ASSERT_HAS(msg, "Install TestLib"); /* the advice still fits */
    ASSERT_LACKS(msg, "dddd"); /* not tried, cut or whole */

    /* At the edge: a path of 4095 bytes is tried, one of 4096 is not (the loader's
     * buffer holds 4096 with the terminating zero). */
    static char big[8192];
    for (size_t path_len = 4095; path_len <= 4096; path_len++) {
        size_t dir_len = path_len - 1 - strlen(MISSING_SONAME);
        memset(dir, 'd', dir_len);
        dir[dir_len] = '\0';
        spec = spec_of(MISSING_SONAME, dir);
        ASSERT_EQ(cgr__dl_load(&spec, syms, big, sizeof big), -1);
        if (path_len == 4095)
            ASSERT_HAS(big, "dddd/" MISSING_SONAME " (");
        else
            ASSERT_HAS(big, "(its path, 4071 bytes, is too long)");
    }
}

/* The soname found by the dynamic loader; else the build-time directory. */
static void test_found(void)
{
    char msg[900];
    void *syms[2];
    cgr__dl_spec spec = spec_of("libm.so.6", MISSING_DIR);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), 0);
    ASSERT_STR_EQ(msg, "");
    double (*s)(double);
    memcpy(&s, &syms[1], sizeof s);
    ASSERT(s(0.0) == 0.0);

    /* A directory holding the soname (a link to libm here) is the last resort. */
    Dl_info info;
    ASSERT(dladdr(syms[0], &info) != 0 && info.dli_fname && info.dli_fname[0] == '/');
    char dir[] = "/tmp/cgr-test-dynload-dir-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char link[128];
    snprintf(link, sizeof link, "%s/libcgr-test-fallback.so.1", dir);
    ASSERT_EQ(symlink(info.dli_fname, link), 0);
    spec = spec_of("libcgr-test-fallback.so.1", dir);
    reset(syms);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), 0);
    ASSERT(syms[0] != sentinel[0] && syms[1] != sentinel[1]);
    ASSERT_EQ(unlink(link), 0);
    ASSERT_EQ(rmdir(dir), 0);
}

/* Short message buffers are cut, always terminated (ASan checks the bounds). */
static void test_small_buffer(void)
{
    char msg[16];
    void *syms[2];
    cgr__dl_spec spec = spec_of(MISSING_SONAME, MISSING_DIR);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, sizeof msg), -1);
    ASSERT_EQ(strlen(msg), sizeof msg - 1);
    ASSERT_EQ(cgr__dl_load(&spec, syms, msg, 1), -1);
    ASSERT_STR_EQ(msg, "");
    ASSERT_EQ(cgr__dl_load(&spec, syms, NULL, 0), -1);

    /* Every size keeps the longest head of the whole message that fits. */
    char whole[900], cut[900];
    ASSERT_EQ(cgr__dl_load(&spec, syms, whole, sizeof whole), -1);
    size_t len = strlen(whole);
    ASSERT(len + 1 < sizeof whole);
    for (size_t size = 1; size <= len + 1; size++) {
        memset(cut, 'x', sizeof cut);
        ASSERT_EQ(cgr__dl_load(&spec, syms, cut, size), -1);
        if (strlen(cut) != size - 1 || strncmp(cut, whole, size - 1) != 0)
            TEST_FAIL_("a %zu-byte buffer holds \"%s\"", size, cut);
        ASSERT_EQ(cut[size], 'x');
    }
}

/* ---- the cuDNN and NCCL entry points -------------------------------------------- */

typedef struct result {
    cgr_status cudnn, nccl;
    char cudnn_msg[1024], nccl_msg[1024];
} result;

static void *load_both(void *arg)
{
    result *r = arg;
    r->cudnn = cgr__cudnn_load("test_fn");
    snprintf(r->cudnn_msg, sizeof r->cudnn_msg, "%s", cgr_last_error());
    r->nccl = cgr__nccl_load("test_fn");
    snprintf(r->nccl_msg, sizeof r->nccl_msg, "%s", cgr_last_error());
    return NULL;
}

static void check(const result *r)
{
    ASSERT_STATUS(r->cudnn, CGR_STATUS_NOT_SUPPORTED);
    ASSERT_STATUS(r->nccl, CGR_STATUS_NOT_SUPPORTED);
    ASSERT_HAS(r->cudnn_msg, "test_fn: ");
    ASSERT_HAS(r->nccl_msg, "test_fn: ");
#if CGR_HAVE_CUDNN
    ASSERT_HAS(r->cudnn_msg, "cuDNN could not be loaded from CGR_CUDNN_LIBRARY=" MISSING_DIR
                             "/libcudnn.so (");
    ASSERT_HAS(r->cudnn_msg, "libcudnn.so.");
    ASSERT(cgr__cudnn() == NULL);
#else
    ASSERT_HAS(r->cudnn_msg, "cgr was built without cuDNN");
#endif
#if CGR_HAVE_NCCL
    ASSERT_HAS(r->nccl_msg, "NCCL could not be loaded from CGR_NCCL_LIBRARY=" MISSING_DIR
                            "/libnccl.so (");
    ASSERT_HAS(r->nccl_msg, "libnccl.so.");
    ASSERT(cgr__nccl() == NULL);
#else
    ASSERT_HAS(r->nccl_msg, "cgr was built without NCCL");
#endif
}

static void test_entry_points(void)
{
    ASSERT_EQ(setenv("CGR_CUDNN_LIBRARY", MISSING_DIR "/libcudnn.so", 1), 0);
    ASSERT_EQ(setenv("CGR_NCCL_LIBRARY", MISSING_DIR "/libnccl.so", 1), 0);
    enum { N = 4 };
    pthread_t t[N];
    static result r[N + 1];
    for (int i = 0; i < N; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, load_both, &r[i]), 0);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(pthread_join(t[i], NULL), 0);
    for (int i = 0; i < N; i++)
        check(&r[i]);
    /* Once per process: a later call says the same, even with the variable gone. */
    ASSERT_EQ(unsetenv("CGR_CUDNN_LIBRARY"), 0);
    ASSERT_EQ(unsetenv("CGR_NCCL_LIBRARY"), 0);
    load_both(&r[N]);
    check(&r[N]);
    ASSERT_STR_EQ(r[N].cudnn_msg, r[0].cudnn_msg);
    ASSERT_STR_EQ(r[N].nccl_msg, r[0].nccl_msg);
}

int main(void)
{
    test_missing();
    test_env_wins();
    test_not_a_library();
    test_missing_symbol();
    test_found();
    test_fallback_too_long();
    test_small_buffer();
    test_entry_points();
    printf("PASS: loader messages and search order (cuDNN %s, NCCL %s in this build)\n",
           CGR_HAVE_CUDNN ? "on" : "off", CGR_HAVE_NCCL ? "on" : "off");
    return 0;
}
