/*
 * Lint: the library's folders are layers, and a file includes headers of
 * its own layer or of layers below it, never above (docs/architecture.md).
 *
 * From the bottom:
 *
 *   0  lib/include/cgr   the public API (every layer may include it)
 *   1  lib/base          status and error messages, checks, fault
 *                        injection, NVTX ranges, the struct_size rule,
 *                        loading cuDNN and NCCL
 *   2  allocator         arena, persistent memory, scratch planner, slot ring
 *   3  lib/core          the runtime's objects and the calls every layer
 *                        makes on them (lock, handle checks, device, log)
 *   4  capture           eager runs, capture, staging, handles, RNG, gate
 *   5  comm              the NCCL attachment and the capture agreement
 *   6  replay            submitting runs, shapes, waits and outputs
 *   7  lib               creating and destroying runtimes and steps,
 *                        validation of what callers describe
 *
 * Usage: test_layers ROOT   (meson passes the source tree). Every .c, .h
 * and .cu below the folders above is read; each `#include "name"` is
 * resolved to the header of that name in the tree (header names are
 * unique, so one name is one file) and its layer compared with the
 * including file's.
 * Exit 0: clean; 1: a violation (each printed as file:line); 2: I/O error.
 * It first checks itself on planted text, so it cannot pass by matching
 * nothing, and fails when it finds too few files.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef struct layer {
    const char *dir; /* relative to ROOT; longest prefix wins */
    int rank;
    const char *what;
} layer;

static const layer layers[] = {
    {"lib/include/cgr", 0, "public API"},
    {"lib/base", 1, "base"},
    {"allocator", 2, "allocator"},
    {"lib/core", 3, "core objects"},
    {"capture", 4, "capture"},
    {"comm", 5, "comm"},
    {"replay", 6, "replay"},
    {"lib", 7, "lib (create, destroy, validate)"},
};
enum { N_LAYERS = sizeof layers / sizeof layers[0] };

/* Headers meson generates into the build tree, by the layer of their template. */
static const struct {
    const char *name;
    int rank;
} generated[] = {{"cgr_config.h", 1}, {"cgr/cgr_version.h", 0}};

#define MAX_FILES 512
typedef struct file {
    char rel[256];  /* path below ROOT */
    char name[128]; /* basename */
    int rank;
} file;

static file files[MAX_FILES];
static int n_files;
static size_t root_len;

/* The layer of a path below ROOT, or -1 when it is in none. */
static int rank_of(const char *rel)
{
    int best = -1;
    size_t best_len = 0;
    for (int i = 0; i < N_LAYERS; i++) {
        size_t n = strlen(layers[i].dir);
        if (strncmp(rel, layers[i].dir, n) == 0 && rel[n] == '/' && n > best_len) {
            best = layers[i].rank;
            best_len = n;
        }
    }
    return best;
}

static int is_source(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu"));
}

static int is_header(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && !strcmp(dot, ".h");
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    if (type != FTW_F || !is_source(path + ftw->base))
        return 0;
    const char *rel = path + root_len + 1;
    int rank = rank_of(rel);
    if (rank < 0)
        return 0;
    if (n_files == MAX_FILES || strlen(rel) >= sizeof files[0].rel ||
        strlen(path + ftw->base) >= sizeof files[0].name)
        return 1;
    file *f = &files[n_files++];
    strcpy(f->rel, rel);
    strcpy(f->name, path + ftw->base);
    f->rank = rank;
    return 0;
}

/* The layer of an included name: a public header, a generated one, or a file of the tree. */
static int include_rank(const char *inc, const char **where)
{
    for (size_t i = 0; i < sizeof generated / sizeof generated[0]; i++)
        if (!strcmp(inc, generated[i].name)) {
            *where = "(generated)";
            return generated[i].rank;
        }
    if (!strncmp(inc, "cgr/", 4)) {
        *where = "lib/include/cgr";
        return 0;
    }
    for (int i = 0; i < n_files; i++)
        if (is_header(files[i].name) && !strcmp(files[i].name, inc)) {
            *where = files[i].rel;
            return files[i].rank;
        }
    return -1;
}

static const char *layer_name(int rank)
{
    for (int i = 0; i < N_LAYERS; i++)
        if (layers[i].rank == rank)
            return layers[i].what;
    return "?";
}

/* Checks the includes of `text` (a file of layer `rank`); returns the violations. */
static int scan(const char *name, int rank, const char *text, int quiet)
{
    int bad = 0, line = 1;
    for (const char *p = text; *p; line++) {
        const char *end = strchr(p, '\n');
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        char inc[128];
        if (sscanf(q, "#include \"%127[^\"]\"", inc) == 1) {
            const char *where = NULL;
            int r = include_rank(inc, &where);
            if (r < 0) {
                bad++;
                if (!quiet)
                    fprintf(stderr, "%s:%d: includes \"%s\", which is no header of the "
                                    "library's layers\n", name, line, inc);
            } else if (r > rank) {
                bad++;
                if (!quiet)
                    fprintf(stderr, "%s:%d: %s (layer %d) includes \"%s\" (%s, layer %d, %s): "
                                    "calls go down the layers only\n",
                            name, line, layer_name(rank), rank, inc, where, r, layer_name(r));
            }
        }
        if (!end)
            break;
        p = end + 1;
    }
    return bad;
}

/* The checker must catch planted violations and pass planted clean text. */
static int self_check(void)
{
    static const struct {
        int rank;
        const char *text;
        int want;
    } cases[] = {
        {2, "#include \"arena.h\"\n#include \"core.h\"\n", 1},      /* allocator -> core */
        {4, "#include \"core.h\"\n  #include \"replay.h\"\n", 1},  /* capture -> replay */
        {7, "#include \"replay.h\"\n#include \"cgr/cgr.h\"\n", 0}, /* lib -> anything */
        {1, "#include \"check.h\"\n#include \"cgr_config.h\"\n", 0},
        {6, "#include \"no_such_header.h\"\n", 1},
        {3, "/* #include \"replay.h\" in prose */\n#include <stdio.h>\n", 0},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = scan("(planted)", cases[i].rank, cases[i].text, 1);
        if (got != cases[i].want) {
            fprintf(stderr, "self-check %zu: %d violations found, %d planted\n", i, got,
                    cases[i].want);
            ok = 0;
        }
    }
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SOURCE_ROOT\n", argv[0]);
        return 2;
    }
    root_len = strlen(argv[1]);
    while (root_len > 1 && argv[1][root_len - 1] == '/')
        argv[1][--root_len] = '\0';
    const char *tops[] = {"lib", "allocator", "capture", "replay", "comm"};
    for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++) {
        char dir[4096];
        if (snprintf(dir, sizeof dir, "%s/%s", argv[1], tops[i]) >= (int)sizeof dir) {
            fprintf(stderr, "source root too long\n");
            return 2;
        }
        if (nftw(dir, collect, 16, FTW_PHYS) != 0) {
            fprintf(stderr, "cannot read %s (or more than %d files)\n", dir, MAX_FILES);
            return 2;
        }
    }
    for (int i = 0; i < n_files; i++)
        for (int j = i + 1; j < n_files; j++)
            if (is_header(files[i].name) && !strcmp(files[i].name, files[j].name)) {
                fprintf(stderr, "%s and %s share a name: an include of it is ambiguous\n",
                        files[i].rel, files[j].rel);
                return 1;
            }
    /* The real tree has some 60 library files; far fewer means the wrong root. */
    if (n_files < 40) {
        fprintf(stderr, "only %d library files below %s: wrong source root?\n", n_files,
                argv[1]);
        return 2;
    }
    if (!self_check())
        return 1;
    int bad = 0;
    for (int i = 0; i < n_files; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", argv[1], files[i].rel) >= (int)sizeof path) {
            fprintf(stderr, "path too long: %s\n", files[i].rel);
            return 2;
        }
        char *text = test_read_file(path);
        if (!text) {
            fprintf(stderr, "cannot read %s\n", path);
            return 2;
        }
        bad += scan(files[i].rel, files[i].rank, text, 0);
        free(text);
    }
    if (bad) {
        fprintf(stderr, "%d include(s) go against the layers\n", bad);
        return 1;
    }
    printf("PASS: %d files, every include goes down the layers\n", n_files);
    return 0;
}
