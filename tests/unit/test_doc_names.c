/*
 * The documents name only what exists. In README.md and the .md files of docs/:
 *
 * - a public name used as a call or a struct (`cgr_NAME(` or `cgr_NAME.`)
 *   must be declared in the public headers (lib/include/cgr/);
 * - an internal name (`cgr__NAME`, the path of one replay, the layers)
 *   must stand in the sources (library, tests, bench).
 *
 * So a document that still speaks of a call, a stats struct or an internal
 * function that was renamed or removed fails here. A header file's name
 * (`cgr_nccl.h`) is not a struct. CHANGELOG.md is not checked: it names
 * what was removed on purpose.
 *
 * Usage: test_doc_names SOURCE_ROOT; it reads SOURCE_ROOT/README.md and
 * every .md file of SOURCE_ROOT/docs. Exit 0: every name found; 1: one is not
 * (its document, line and name are printed); 2: I/O error.
 * It first checks itself on planted text, so it cannot pass by finding
 * nothing.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ctype.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* ---- the names the sources hold --------------------------------------------------------- */

typedef struct names {
    char **v;
    size_t n, cap;
} names;

static int is_ident(int c)
{
    return isalnum(c) || c == '_';
}

static int has(const names *s, const char *w, size_t len)
{
    for (size_t i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && memcmp(s->v[i], w, len) == 0)
            return 1;
    return 0;
}

/* Adds every identifier of text that begins with "cgr_"; 0 on out of memory. */
static int add_idents(names *s, const char *text)
{
    for (const char *p = text; (p = strstr(p, "cgr_")) != NULL;) {
        if (p != text && is_ident((unsigned char)p[-1])) {
            p += 4;
            continue;
        }
        size_t len = 0;
        while (is_ident((unsigned char)p[len]))
            len++;
        if (!has(s, p, len)) {
            if (s->n == s->cap) {
                size_t cap = s->cap ? 2 * s->cap : 1024;
                char **v = realloc(s->v, cap * sizeof *v);
                if (!v)
                    return 0;
                s->v = v;
                s->cap = cap;
            }
            char *w = malloc(len + 1);
            if (!w)
                return 0;
            memcpy(w, p, len);
            w[len] = '\0';
            s->v[s->n++] = w;
        }
        p += len;
    }
    return 1;
}

static void names_free(names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* nftw has no user pointer: the set being filled, and whether a file failed. */
static names *g_fill;
static int g_io_error;

static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)f;
    if (type != FTW_F)
        return 0;
    const char *dot = strrchr(path, '.'), *base = strrchr(path, '/');
    if (!dot || (strcmp(dot, ".c") && strcmp(dot, ".h") && strcmp(dot, ".cu") &&
                 strcmp(dot, ".in")))
        return 0;
    /* Not this file: its planted names must not count as found. */
    if (base && strcmp(base + 1, "test_doc_names.c") == 0)
        return 0;
    char *text = test_read_file(path);
    if (!text || !add_idents(g_fill, text))
        g_io_error = 1;
    free(text);
    return 0;
}

/* Every cgr_ identifier of the source files below root/dir[i]; 0 on an I/O error. */
static int fill(names *s, const char *root, const char *const *dir, int n)
{
    g_fill = s;
    g_io_error = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", root, dir[i]) >= (int)sizeof path ||
            nftw(path, collect, 16, FTW_PHYS) != 0) {
            fprintf(stderr, "test_doc_names: cannot read %s/%s\n", root, dir[i]);
            return 0;
        }
    }
    return !g_io_error;
}

/* ---- one document ----------------------------------------------------------------------- */

/* What follows a '.' after a name and makes it a file's name, not a struct's member. */
static int file_suffix(const char *p)
{
    static const char *const ext[] = {"h", "c", "cu", "pc", "md", "so", "a", "txt", "json"};
    size_t len = 0;
    while (is_ident((unsigned char)p[len]))
        len++;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
        if (strlen(ext[i]) == len && memcmp(ext[i], p, len) == 0)
            return 1;
    return 0;
}

/* Names of doc text md (called `name` in messages) found nowhere; each is printed. */
static int check_doc(const char *md, const char *name, const names *pub, const names *internal)
{
    int missing = 0, line = 1;
    const char *counted = md;
    for (const char *p = md; (p = strstr(p, "cgr_")) != NULL;) {
        size_t len = 0;
        while (is_ident((unsigned char)p[len]))
            len++;
        if (p != md && is_ident((unsigned char)p[-1])) {
            p += len;
            continue;
        }
        const int inner = len > 5 && p[4] == '_';
        const char next = p[len];
        const int checked =
            inner || next == '(' || (next == '.' && is_ident((unsigned char)p[len + 1]) &&
                                     !file_suffix(p + len + 1));
        if (checked && !has(inner ? internal : pub, p, len)) {
            for (; counted < p; counted++)
                line += *counted == '\n';
            fprintf(stderr, "%s:%d: %.*s is not in the %s\n", name, line, (int)len, p,
                    inner ? "sources" : "public headers");
            missing++;
        }
        p += len;
    }
    return missing;
}

static int self_check(void)
{
    names pub = {0}, internal = {0};
    int ok = add_idents(&pub, "cgr_status cgr_step_run(cgr_step *s); typedef struct cgr_slot;") &&
             add_idents(&internal, "static void cgr__lock(void);");
    /* The check's own messages go to stderr; they are expected here. */
    ok = ok &&
         check_doc("`cgr_step_run()`, `cgr_slot.inputs`, cgr__lock, cgr/cgr_nccl.h, cgr_dep\n",
                   "planted.md", &pub, &internal) == 0 &&
         check_doc("cgr_step_run_dims(s)\n", "planted.md", &pub, &internal) == 1 &&
         check_doc("cgr_shape_stats.hits\n", "planted.md", &pub, &internal) == 1 &&
         check_doc("x\ncgr__cache_lookup\n", "planted.md", &pub, &internal) == 1;
    names_free(&pub);
    names_free(&internal);
    return ok;
}

/* README.md, then the .md files of docs/ in name order; NULL-terminated, or NULL on an I/O error. */
static char **doc_paths(const char *root, int *n)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/docs", root);
    struct dirent **list = NULL;
    int k = scandir(dir, &list, NULL, alphasort);
    if (k < 0)
        return NULL;
    char **v = calloc((size_t)k + 2, sizeof *v);
    *n = 0;
    if (v && (v[0] = malloc(strlen(root) + 16)) != NULL) {
        sprintf(v[0], "%s/README.md", root);
        *n = 1;
    }
    for (int i = 0; i < k; i++) {
        const char *f = list[i]->d_name;
        size_t len = strlen(f);
        if (v && *n && len > 3 && strcmp(f + len - 3, ".md") == 0 &&
            (v[*n] = malloc(strlen(dir) + len + 2)) != NULL) {
            sprintf(v[*n], "%s/%s", dir, f);
            ++*n;
        }
        free(list[i]);
    }
    free(list);
    return v && *n ? v : NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_doc_names SOURCE_ROOT\n");
        return 2;
    }
    if (!test_self_check("test_doc_names", self_check))
        return 1;
    static const char *const public_dirs[] = {"lib/include/cgr"};
    static const char *const source_dirs[] = {"lib", "capture", "replay", "allocator",
                                              "comm", "tests", "bench"};
    names pub = {0}, internal = {0};
    if (!fill(&pub, argv[1], public_dirs, 1) || !fill(&internal, argv[1], source_dirs, 7))
        return 2;
    int n_docs = 0, missing = 0;
    char **docs = doc_paths(argv[1], &n_docs);
    if (!docs) {
        fprintf(stderr, "test_doc_names: cannot list %s/docs\n", argv[1]);
        return 2;
    }
    for (int i = 0; i < n_docs; i++) {
        char *md = test_read_file(docs[i]);
        if (!md) {
            fprintf(stderr, "test_doc_names: cannot read %s\n", docs[i]);
            return 2;
        }
        missing += check_doc(md, docs[i], &pub, &internal);
        free(md);
        free(docs[i]);
    }
    free(docs);
    names_free(&pub);
    names_free(&internal);
    if (missing) {
        fprintf(stderr, "test_doc_names: FAIL: %d names above are not in the sources\n", missing);
        return 1;
    }
    printf("test_doc_names: every name of %d documents is in the sources\n", n_docs);
    return 0;
}
