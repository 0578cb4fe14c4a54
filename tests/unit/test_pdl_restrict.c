/*
 * Lint: no `const T *__restrict__` (and no __ldg) in a CUDA file whose
 * kernels wait with cudaGridDependencySynchronize().
 *
 * const plus restrict promise the compiler that the memory does not change
 * while the kernel runs, so it may read it through the non-coherent path
 * and schedule those loads ahead of the grid-dependency wait, before the
 * previous kernel has written it. With such a kernel W-serve's outputs
 * come out wrong (bench/mlp/mlp_kernels.cu, docs/staging.md). This test
 * keeps the pattern out.
 *
 * Usage: test_pdl_restrict DIR...   (meson passes the source tree's
 * library, bench and test folders; every .cu below them is read, comments
 * and string literals blanked first, so prose may name the pattern).
 * Exit 0: clean; 1: a violation (each printed as file:line); 2: I/O error.
 * It first checks itself on planted text, so it cannot pass by matching
 * nothing, and fails when it finds no .cu file at all.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* A const pointer with __restrict__ (spaces anywhere), or an explicit __ldg. */
static const char *pattern = "const[[:space:]]+[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\\*[[:space:]]*"
                             "(__restrict__|__restrict)|__ldg[[:space:]]*\\(";

/* Files that mention the wait are the ones the rule covers. */
static int uses_pdl_wait(const char *text)
{
    return strstr(text, "cudaGridDependencySynchronize") != NULL ||
           strstr(text, "griddepcontrol.wait") != NULL;
}

/* Prints and counts the lines of `text` that match. */
static int scan(const regex_t *re, const char *name, const char *text, int quiet)
{
    int found = 0, line = 1;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char buf[1024];
        if (len >= sizeof buf)
            len = sizeof buf - 1;
        memcpy(buf, p, len);
        buf[len] = '\0';
        if (regexec(re, buf, 0, NULL, 0) == 0) {
            found++;
            if (!quiet)
                fprintf(stderr, "%s:%d: const __restrict__ pointer (or __ldg) in a file with "
                                "PDL waits: %s\n",
                        name, line, buf);
        }
        if (!end)
            break;
        p = end + 1;
        line++;
    }
    return found;
}

/*
 * Blanks comments and string/char literals in place (newlines kept, so
 * line numbers stay right).
 */
static void blank_comments(char *t)
{
    enum { CODE, LINE, BLOCK, STR, CHR } st = CODE;
    for (char *p = t; *p; p++) {
        switch (st) {
        case CODE:
            if (p[0] == '/' && p[1] == '/')
                st = LINE;
            else if (p[0] == '/' && p[1] == '*')
                st = BLOCK, *p++ = ' ';
            else if (*p == '"')
                st = STR;
            else if (*p == '\'')
                st = CHR;
            else
                continue;
            *p = ' ';
            break;
        case LINE:
            if (*p == '\n')
                st = CODE;
            else
                *p = ' ';
            break;
        case BLOCK:
            if (p[0] == '*' && p[1] == '/') {
                p[0] = p[1] = ' ';
                p++;
                st = CODE;
            } else if (*p != '\n') {
                *p = ' ';
            }
            break;
        case STR:
        case CHR:
            if (*p == '\\' && p[1]) {
                p[0] = ' ';
                if (p[1] != '\n')
                    p[1] = ' ';
                p++;
            } else if (*p == (st == STR ? '"' : '\'')) {
                *p = ' ';
                st = CODE;
            } else if (*p != '\n') {
                *p = ' ';
            }
            break;
        }
    }
}

static regex_t re;
static int bad, covered, files, io_error;

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    const char *base = path + ftw->base;
    size_t n = strlen(base);
    /* Build folders (build, build-gpu, ...) may hold generated copies. */
    if (type != FTW_F || n < 3 || strcmp(base + n - 3, ".cu") != 0 || strstr(path, "/build"))
        return 0;
    char *text = test_read_file(path);
    if (!text) {
        fprintf(stderr, "test_pdl_restrict: cannot read %s\n", path);
        io_error = 1;
        return 1;
    }
    files++;
    blank_comments(text);
    if (uses_pdl_wait(text)) {
        covered++;
        bad += scan(&re, path, text, 0);
    }
    free(text);
    return 0;
}

int main(int argc, char **argv)
{
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
        fprintf(stderr, "test_pdl_restrict: the pattern does not compile\n");
        return 2;
    }
    /* Self-check on planted text: a violation is found, a clean kernel and prose are not. */
    char planted[] = "__global__ void k(float *__restrict__ y,\n"
                     "                  const float *__restrict__ x)\n"
                     "{ cudaGridDependencySynchronize(); }\n";
    char clean[] = "/* never: const float *__restrict__ x */\n"
                   "__global__ void k(float *__restrict__ y, const float *x)\n"
                   "{ printf(\"const float *__restrict__\"); cudaGridDependencySynchronize(); }\n";
    blank_comments(planted);
    blank_comments(clean);
    if (!uses_pdl_wait(planted) || !uses_pdl_wait(clean) ||
        scan(&re, "planted", planted, 1) != 1 || scan(&re, "clean", clean, 1) != 0) {
        fprintf(stderr, "test_pdl_restrict: FAIL: the self-check did not match as expected\n");
        regfree(&re);
        return 1;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR...\n", argv[0]);
        regfree(&re);
        return 2;
    }
    for (int i = 1; i < argc && !io_error; i++)
        if (nftw(argv[i], visit, 16, FTW_PHYS) == -1) {
            fprintf(stderr, "test_pdl_restrict: cannot walk %s\n", argv[i]);
            io_error = 1;
        }
    regfree(&re);
    if (io_error)
        return 2;
    printf("test_pdl_restrict: %d .cu files, %d wait for a previous grid; %d violation(s)\n",
           files, covered, bad);
    if (files == 0 || covered == 0) {
        fprintf(stderr,
                "test_pdl_restrict: FAIL: no CUDA file with PDL waits found; wrong folders?\n");
        return 1;
    }
    return bad ? 1 : 0;
}
