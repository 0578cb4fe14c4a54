/*
 * The documents name only what exists. In README.md and the .md files of docs/:
 *
 * - a public name used as a call or a struct (`cgr_NAME(` or `cgr_NAME.`)
 *   must be declared in the public headers (lib/include/cgr/);
 * - an internal name (`cgr__NAME`, the path of one replay, the layers)
 *   must stand in the sources (library, tests, bench).
 *
 * And everywhere (those documents and the sources, examples and scripts), a
 * section named after a document (`docs/NAME.md`, "Title" or `docs/NAME.md`
 * ("Title")) must be a heading of that document, or the start of one up to a
 * word's end ("Armed runs" for "Armed runs: launching before ...").
 *
 * And a path into the repository (one of its top-level folders, a slash,
 * and a file with a source's, script's or document's suffix:
 * `capture/stage.cu`, docs/shapes.md) must be a file of the tree.
 *
 * In the library's, cgr-bench's and the examples' sources, a file named
 * without its folder (`stage.cu`, shapes.md) must be a file of the tree
 * too, unless it is an example of a message's file:line (`x.c:42`).
 *
 * So a document that still speaks of a call, a stats struct, an internal
 * function, a section or a file that was renamed or removed fails here. A header file's name
 * (`cgr_nccl.h`) is not a struct. CHANGELOG.md is not checked: it names
 * what was removed on purpose.
 *
 * Usage: test_doc_names SOURCE_ROOT; it reads SOURCE_ROOT/README.md, every
 * .md file of SOURCE_ROOT/docs and the sources below SOURCE_ROOT. Exit 0:
 * every name found; 1: one is not (its file, line and name are printed); 2:
 * I/O error.
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
#include <sys/stat.h>

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

/* Adds the len bytes at w as one name, unless it is there; 0 on out of memory. */
static int add_name(names *s, const char *w, size_t len)
{
    if (has(s, w, len))
        return 1;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return 0;
        s->v = v;
        s->cap = cap;
    }
    char *c = malloc(len + 1);
    if (!c)
        return 0;
    memcpy(c, w, len);
    c[len] = '\0';
    s->v[s->n++] = c;
    return 1;
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
        if (!add_name(s, p, len))
            return 0;
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

static int check_sections(const char *text, const char *name, const names *headings);
static int check_paths(const char *text, const char *name);
static int check_bare(const char *text, const char *name);

/*
 * nftw has no user pointer: the set being filled, whether a file failed,
 * and while the sources are read, the documents' headings and the count of
 * sections they lack.
 */
static names *g_fill;
static int g_io_error;
static const names *g_headings;
static int g_missing;
/* The source root, below which check_paths looks the paths up. */
static const char *g_root;
/* The names of the tree's files, without their folders, for check_bare. */
static names g_files;

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int collect(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    (void)f;
    if (type != FTW_F)
        return 0;
    const int code = ends_with(path, ".c") || ends_with(path, ".h") || ends_with(path, ".cu") ||
                     ends_with(path, ".in");
    const int script = ends_with(path, ".sh") || ends_with(path, ".py") ||
                       ends_with(path, "meson.build") || ends_with(path, ".txt");
    const char *base = strrchr(path, '/');
    /* Not this file: its planted names must not count as found. */
    if ((!code && !(script && g_headings)) || (base && strcmp(base + 1, "test_doc_names.c") == 0))
        return 0;
    char *text = test_read_file(path);
    if (!text || (code && !add_idents(g_fill, text)))
        g_io_error = 1;
    if (text && g_headings)
        g_missing += check_sections(text, path, g_headings) + check_paths(text, path);
    /* Tests plant names of files that do not exist on purpose. */
    const char *rel = path + strlen(g_root);
    if (text && g_headings && strncmp(rel, "/tests/", 7) != 0)
        g_missing += check_bare(text, path);
    free(text);
    return 0;
}

static int add_file(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    if (type == FTW_F && !add_name(&g_files, path + f->base, strlen(path + f->base)))
        g_io_error = 1;
    return 0;
}

/*
 * The name of every file below root/dir[i], and of root's own files (not
 * of its other folders: build trees are among them); 0 on an I/O error.
 */
static int list_files(const char *root, const char *const *dir, int n)
{
    g_io_error = 0;
    char path[4096];
    for (int i = 0; i < n; i++)
        if (snprintf(path, sizeof path, "%s/%s", root, dir[i]) >= (int)sizeof path ||
            nftw(path, add_file, 16, FTW_PHYS) != 0)
            return 0;
    DIR *d = opendir(root);
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", root, e->d_name) < (int)sizeof path &&
            stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            !add_name(&g_files, e->d_name, strlen(e->d_name)))
            g_io_error = 1;
    }
    closedir(d);
    return !g_io_error;
}

/*
 * Every cgr_ identifier of the source files below root/dir[i], and with
 * headings, their sections checked; 0 on an I/O error.
 */
static int fill(names *s, const char *root, const char *const *dir, int n, const names *headings)
{
    g_fill = s;
    g_io_error = 0;
    g_headings = headings;
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

/* ---- sections named after a document ---------------------------------------------------- */

static int line_of(const char *text, const char *p)
{
    int line = 1;
    for (const char *c = text; c < p; c++)
        line += *c == '\n';
    return line;
}

/*
 * Adds the headings of md, the document `base`, as "base\tTitle"; a
 * numbered one ("8. Title") also without its number. Fenced code has none.
 */
static int add_headings(names *h, const char *base, const char *md)
{
    int fenced = 0;
    for (const char *l = md; *l;) {
        const char *end = strchr(l, '\n');
        if (!end)
            end = l + strlen(l);
        if (strncmp(l, "```", 3) == 0) {
            fenced = !fenced;
        } else if (!fenced && *l == '#') {
            const char *t = l;
            while (*t == '#')
                t++;
            while (*t == ' ')
                t++;
            const char *e = end;
            while (e > t && isspace((unsigned char)e[-1]))
                e--;
            const char *u = t;
            while (isdigit((unsigned char)*u))
                u++;
            const char *starts[2] = {t, u > t && u[0] == '.' && u[1] == ' ' ? u + 2 : NULL};
            for (int k = 0; k < 2 && starts[k]; k++) {
                char key[512];
                int n = snprintf(key, sizeof key, "%s\t%.*s", base, (int)(e - starts[k]),
                                 starts[k]);
                if (n > 0 && n < (int)sizeof key && !add_name(h, key, (size_t)n))
                    return 0;
            }
        }
        l = *end ? end + 1 : end;
    }
    return 1;
}

/* 1 when document base has a heading that is title, or starts with it up to a word's end. */
static int has_section(const names *h, const char *base, const char *title)
{
    const size_t bl = strlen(base), tl = strlen(title);
    for (size_t i = 0; i < h->n; i++) {
        const char *k = h->v[i];
        if (strncmp(k, base, bl) != 0 || k[bl] != '\t' || strncmp(k + bl + 1, title, tl) != 0)
            continue;
        const unsigned char next = (unsigned char)k[bl + 1 + tl];
        if (!is_ident(next) && next != '-')
            return 1;
    }
    return 0;
}

/*
 * At p, "docs/NAME.md" followed by `, "Title"` or ` ("Title"` (a backtick
 * after the name allowed): NAME.md into base and the title into title,
 * its line breaks joined by one space (with a comment's leading `*`, `//`
 * or `#`). 0 when no quoted title follows.
 */
static int section_ref(const char *p, char *base, size_t base_cap, char *title, size_t cap)
{
    const char *b = p + 5, *q = b;
    while (islower((unsigned char)*q) || isdigit((unsigned char)*q) || *q == '-' || *q == '_')
        q++;
    if (q == b || strncmp(q, ".md", 3) != 0)
        return 0;
    snprintf(base, base_cap, "%.*s.md", (int)(q - b), b);
    q += 3;
    if (*q == '`')
        q++;
    if (strncmp(q, ", \"", 3) != 0 && strncmp(q, " (\"", 3) != 0)
        return 0;
    q += 3;
    size_t n = 0;
    for (; *q && *q != '"'; q++) {
        char c = *q;
        if (c == '\n') {
            while (q[1] == ' ' || q[1] == '\t')
                q++;
            if (q[1] == '*' && q[2] != '/')
                q++;
            else if (q[1] == '/' && q[2] == '/')
                q += 2;
            else if (q[1] == '#')
                q++;
            while (q[1] == ' ' || q[1] == '\t')
                q++;
            c = ' ';
        }
        if (n + 1 >= cap)
            return 0;
        title[n++] = c;
    }
    title[n] = '\0';
    return *q == '"' && n > 0;
}

/* Sections of text (called `name` in messages) that their document lacks; each is printed. */
static int check_sections(const char *text, const char *name, const names *headings)
{
    int missing = 0;
    for (const char *p = text; (p = strstr(p, "docs/")) != NULL; p += 5) {
        char base[256], title[512];
        if (!section_ref(p, base, sizeof base, title, sizeof title) ||
            has_section(headings, base, title))
            continue;
        fprintf(stderr, "%s:%d: docs/%s has no section \"%s\"\n", name, line_of(text, p), base,
                title);
        missing++;
    }
    return missing;
}

/* ---- paths into the repository ---------------------------------------------------------- */

static int path_char(int c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '.' || c == '/';
}

/* The len bytes at p end the way a file the repository keeps does. */
static int kept_file(const char *p, size_t len)
{
    static const char *const ext[] = {".c", ".h", ".cu", ".md", ".sh",
                                      ".py", ".txt", ".in", "meson.build"};
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        const size_t k = strlen(ext[i]);
        if (len > k && memcmp(p + len - k, ext[i], k) == 0)
            return 1;
    }
    return 0;
}

/* The len bytes at p begin with one of the repository's top-level folders and a slash. */
static int in_top_dir(const char *p, size_t len)
{
    static const char *const top[] = {"lib",   "capture", "replay",   "allocator", "comm",
                                      "bench", "tests",   "examples", "docs"};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) {
        const size_t k = strlen(top[i]);
        if (len > k + 1 && memcmp(p, top[i], k) == 0 && p[k] == '/')
            return 1;
    }
    return 0;
}

/* Whether p, in text, starts a word that is not the tail of a path or of a $variable's. */
static int word_start(const char *text, const char *p)
{
    return p == text || !(path_char((unsigned char)p[-1]) || p[-1] == '$');
}

/*
 * Paths into the repository that text (called `name` in messages) names
 * and g_root lacks; each is printed. A path inside another one
 * (build/bench/x.c, $base/bench/main.c) is not one, and a sentence's
 * full stop is not part of it.
 */
static int check_paths(const char *text, const char *name)
{
    int missing = 0;
    for (const char *p = text; *p; p++) {
        if (!path_char((unsigned char)*p) || !word_start(text, p))
            continue;
        size_t len = 0;
        while (path_char((unsigned char)p[len]))
            len++;
        const char *end = p + len;
        while (len && p[len - 1] == '.')
            len--;
        char path[4096];
        struct stat st;
        if (in_top_dir(p, len) && kept_file(p, len) &&
            snprintf(path, sizeof path, "%s/%.*s", g_root, (int)len, p) < (int)sizeof path &&
            stat(path, &st) != 0) {
            fprintf(stderr, "%s:%d: %.*s is not in the repository\n", name, line_of(text, p),
                    (int)len, p);
            missing++;
        }
        p = end - 1;
    }
    return missing;
}

/*
 * Files that text (called `name` in messages) names without a folder, as
 * NAME.c, NAME.cu or NAME.md, and g_files lacks; each is printed. A
 * header's name may be a system's, so headers are not checked; nor is a
 * name followed by :LINE, which shows what a message looks like.
 */
static int check_bare(const char *text, const char *name)
{
    static const char *const ext[] = {".cu", ".c", ".md"};
    int missing = 0;
    for (const char *p = text; *p; p++) {
        if (!is_ident((unsigned char)*p) || !word_start(text, p))
            continue;
        size_t len = 0;
        while (is_ident((unsigned char)p[len]) || p[len] == '-')
            len++;
        const char *q = p + len;
        p = q - 1;
        for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
            const size_t k = strlen(ext[i]);
            if (strncmp(q, ext[i], k) != 0 || is_ident((unsigned char)q[k]) || q[k] == '/' ||
                (q[k] == ':' && isdigit((unsigned char)q[k + 1])))
                continue;
            if (!has(&g_files, p - len + 1, len + k)) {
                fprintf(stderr, "%s:%d: %.*s is not a file of the tree\n", name,
                        line_of(text, p - len + 1), (int)(len + k), p - len + 1);
                missing++;
            }
            p = q + k - 1;
            break;
        }
    }
    return missing;
}

static int self_check(void)
{
    names pub = {0}, internal = {0}, h = {0};
    int ok = add_idents(&pub, "cgr_status cgr_step_run(cgr_step *s); typedef struct cgr_slot;") &&
             add_idents(&internal, "static void cgr__lock(void);") &&
             add_headings(&h, "staging.md",
                          "# Staging\n\n## Armed runs: launching\n```sh\n# not a heading\n```\n"
                          "## 3. Host values\n");
    ok = ok &&
         check_sections("`docs/staging.md`, \"Armed runs\"; docs/staging.md (\"Staging\")\n"
                        "/* docs/staging.md, \"Armed runs:\n * launching\" */ docs/staging.md is\n"
                        "docs/staging.md, \"Host values\", docs/staging.md, \"3. Host values\"\n",
                        "planted.md", &h) == 0 &&
         check_sections("docs/staging.md, \"Armed run\"\n", "planted.md", &h) == 1 &&
         check_sections("docs/staging.md, \"not a heading\"\n", "planted.md", &h) == 1 &&
         check_sections("x `docs/shapes.md` (\"Armed runs\")\n", "planted.md", &h) == 1;
    ok = ok &&
         check_paths("`capture/stage.cu`, docs/shapes.md. lib/x86_64-linux-gnu\n"
                     "tests/fuzz/corpus_* build/capture/gone.c $base/bench/gone.c capture/gone\n",
                     "planted.md") == 0 &&
         check_paths("see capture/gone.c.\n", "planted.md") == 1 &&
         check_paths("(docs/gone.md, `bench/meson.build`)\n", "planted.md") == 1;
    ok = ok && add_name(&g_files, "stage.cu", 8) && add_name(&g_files, "shapes.md", 9) &&
         check_bare("`stage.cu` and shapes.md. at gone.c:42, gone.h, x/gone.c, gone.cuh\n",
                    "planted.c") == 0 &&
         check_bare("as gone.c does\n", "planted.c") == 1 &&
         check_bare("(gone.cu, gone.md)\n", "planted.c") == 2;
    /* The check's own messages go to stderr; they are expected here. */
    ok = ok &&
         check_doc("`cgr_step_run()`, `cgr_slot.inputs`, cgr__lock, cgr/cgr_nccl.h, cgr_dep\n",
                   "planted.md", &pub, &internal) == 0 &&
         check_doc("cgr_step_run_dims(s)\n", "planted.md", &pub, &internal) == 1 &&
         check_doc("cgr_shape_stats.hits\n", "planted.md", &pub, &internal) == 1 &&
         check_doc("x\ncgr__cache_lookup\n", "planted.md", &pub, &internal) == 1;
    names_free(&pub);
    names_free(&internal);
    names_free(&h);
    return ok;
}

/* README.md, then the .md files of docs/ in name order; NULL-terminated, or
 * NULL on an I/O error. */
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
    g_root = argv[1];
    if (!test_self_check("test_doc_names", self_check))
        return 1;
    static const char *const public_dirs[] = {"lib/include/cgr"};
    static const char *const source_dirs[] = {"lib",   "capture", "replay", "allocator", "comm",
                                              "tests", "bench",   "examples"};
    const int n_source_dirs = (int)(sizeof source_dirs / sizeof source_dirs[0]);
    int n_docs = 0, missing = 0;
    char **docs = doc_paths(argv[1], &n_docs);
    if (!docs) {
        fprintf(stderr, "test_doc_names: cannot list %s/docs\n", argv[1]);
        return 2;
    }
    /* Every document's text first: the sources name their sections. */
    char **text = calloc((size_t)n_docs, sizeof *text);
    names pub = {0}, internal = {0}, headings = {0};
    for (int i = 0; text && i < n_docs; i++) {
        const char *base = strrchr(docs[i], '/') + 1;
        text[i] = test_read_file(docs[i]);
        if (!text[i]) {
            fprintf(stderr, "test_doc_names: cannot read %s\n", docs[i]);
            return 2;
        }
        if (i > 0 && !add_headings(&headings, base, text[i]))
            return 2;
    }
    names_free(&g_files); /* the self-check's */
    if (!text || !list_files(argv[1], source_dirs, n_source_dirs) ||
        !list_files(argv[1], (const char *const[]){"docs"}, 1) ||
        !fill(&pub, argv[1], public_dirs, 1, NULL) ||
        !fill(&internal, argv[1], source_dirs, n_source_dirs, &headings))
        return 2;
    missing += g_missing;
    for (int i = 0; i < n_docs; i++) {
        missing += check_doc(text[i], docs[i], &pub, &internal);
        missing += check_sections(text[i], docs[i], &headings) + check_paths(text[i], docs[i]);
        free(text[i]);
        free(docs[i]);
    }
    free(text);
    free(docs);
    names_free(&pub);
    names_free(&internal);
    names_free(&headings);
    names_free(&g_files);
    if (missing) {
        fprintf(stderr, "test_doc_names: FAIL: %d names, sections and paths above are not found\n",
                missing);
        return 1;
    }
    printf("test_doc_names: every name, section and path of %d documents and the sources is "
           "found\n",
           n_docs);
    return 0;
}
