/*
 * The guides quote the examples: a ```c block right after a line
 *
 *     <!-- excerpt: examples/serve.c -->
 *
 * must stand in that file word for word, as whole lines. This test fails
 * when an example changes and the guide quoting it does not, or the other
 * way round.
 *
 * Usage: test_doc_excerpts SOURCE_ROOT GUIDE.md... (paths of the examples
 * are relative to SOURCE_ROOT). Exit 0: every excerpt found; 1: one is not
 * (its guide, line and first line are printed), a marker has no block
 * after it, or a guide has no excerpt at all; 2: I/O error. It first checks
 * itself on planted text, so it cannot pass by finding nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MARK "<!-- excerpt: "
#define FENCE "```c\n"

/* 1 when `block` (whole lines, each ending in '\n') stands in src as whole lines. */
static int has_lines(const char *src, const char *block)
{
    const size_t n = strlen(block);
    for (const char *p = strstr(src, block); p; p = strstr(p + 1, block))
        if ((p == src || p[-1] == '\n') && n > 0 && block[n - 1] == '\n')
            return 1;
    return 0;
}

/* What one guide's excerpts came to. */
typedef struct tally {
    int found, missing, broken;
} tally;

/*
 * Checks every excerpt of guide text md (named `name` in messages) against
 * the file it names, read through read(root, path). Adds to *t.
 */
static void check_guide(const char *md, const char *name, const char *root,
                        char *(*read)(const char *root, const char *path), tally *t)
{
    for (const char *p = strstr(md, MARK); p; p = strstr(p + 1, MARK)) {
        if (p != md && p[-1] != '\n')
            continue; /* not at the start of a line */
        int line = 1;
        for (const char *q = md; q < p; q++)
            line += *q == '\n';
        const char *path = p + strlen(MARK);
        const size_t plen = strcspn(path, " \n");
        const char *eol = strchr(path, '\n');
        if (!eol || strncmp(path + plen, " -->\n", 5) != 0 || strncmp(eol + 1, FENCE, 5) != 0) {
            fprintf(stderr, "%s:%d: an excerpt marker must read \"%sPATH -->\" and be followed "
                            "by a ```c line\n", name, line, MARK);
            t->broken++;
            continue;
        }
        const char *body = eol + 1 + strlen(FENCE), *end = body;
        while (*end && strncmp(end, "```\n", 4) != 0) {
            const char *nl = strchr(end, '\n');
            end = nl ? nl + 1 : end + strlen(end);
        }
        if (!*end || end == body) {
            fprintf(stderr, "%s:%d: the excerpt's block is empty or not closed\n", name, line);
            t->broken++;
            continue;
        }
        char file[256], *block = malloc((size_t)(end - body) + 1);
        snprintf(file, sizeof file, "%.*s", (int)plen, path);
        char *src = read(root, file);
        if (!block || !src) {
            fprintf(stderr, "%s:%d: cannot read %s\n", name, line, file);
            t->broken++;
        } else {
            memcpy(block, body, (size_t)(end - body));
            block[end - body] = '\0';
            if (has_lines(src, block)) {
                t->found++;
            } else {
                fprintf(stderr, "%s:%d: this excerpt is not in %s word for word; it begins\n"
                                "  %.*s\n", name, line, file, (int)strcspn(block, "\n"), block);
                t->missing++;
            }
        }
        free(block);
        free(src);
    }
}

static char *read_under(const char *root, const char *path)
{
    char full[4096];
    if (snprintf(full, sizeof full, "%s/%s", root, path) >= (int)sizeof full)
        return NULL;
    return test_read_file(full);
}

/* The planted file of the self-check, named "ex.c". */
static char *read_planted(const char *root, const char *path)
{
    (void)root;
    if (strcmp(path, "ex.c") != 0)
        return NULL;
    const char *src = "int a;\n    int b;\nint c;\n";
    char *copy = malloc(strlen(src) + 1);
    if (copy)
        strcpy(copy, src);
    return copy;
}

static int planted(const char *md, int found, int missing, int broken)
{
    tally t = {0, 0, 0};
    check_guide(md, "planted.md", "", read_planted, &t);
    return t.found == found && t.missing == missing && t.broken == broken;
}

static int self_check(void)
{
    /* The check's own messages go to stderr; they are expected here. */
    return planted("x\n" MARK "ex.c -->\n" FENCE "    int b;\nint c;\n```\n", 1, 0, 0) &&
           planted(MARK "ex.c -->\n" FENCE "int b;\n```\n", 0, 1, 0) &&   /* not whole lines */
           planted(MARK "ex.c -->\n" FENCE "int c;\nint d;\n```\n", 0, 1, 0) &&
           planted(MARK "ex.c -->\n\n" FENCE "int a;\n```\n", 0, 0, 1) && /* no block after */
           planted(MARK "other.c -->\n" FENCE "int a;\n```\n", 0, 0, 1) &&
           planted(MARK "ex.c -->\n" FENCE "int a;\n", 0, 0, 1);           /* not closed */
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_doc_excerpts SOURCE_ROOT GUIDE.md...\n");
        return 2;
    }
    if (!test_self_check("test_doc_excerpts", self_check))
        return 1;
    int rc = 0;
    for (int i = 2; i < argc; i++) {
        char *md = test_read_file(argv[i]);
        if (!md) {
            fprintf(stderr, "test_doc_excerpts: cannot read %s\n", argv[i]);
            return 2;
        }
        tally t = {0, 0, 0};
        check_guide(md, argv[i], argv[1], read_under, &t);
        free(md);
        if (t.missing || t.broken || t.found == 0) {
            fprintf(stderr, "test_doc_excerpts: FAIL: %s: %d excerpts found, %d not in their "
                            "file, %d broken\n", argv[i], t.found, t.missing, t.broken);
            rc = 1;
        } else {
            printf("test_doc_excerpts: %s: %d excerpts, each word for word in its file\n",
                   argv[i], t.found);
        }
    }
    return rc;
}
