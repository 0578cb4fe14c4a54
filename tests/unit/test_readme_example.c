/*
 * README's example is a real program: the ```c block under "## Example"
 * must be examples/train_step.c word for word, which the gpu suite builds,
 * runs and checks. This test fails when one is edited without the other.
 *
 * Usage: test_readme_example README.md examples/train_step.c (meson passes
 * both). Exit 0: equal; 1: they differ (the first differing line of each is
 * printed) or README has no such block; 2: I/O error. It first checks its
 * block extraction on planted text, so it cannot pass by extracting nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/*
 * The body of the first ```c block after the line "## Example", each line
 * with its newline, as a new string; NULL when there is none. The block
 * ends at the first line that is exactly ```.
 */
static char *example_block(const char *md)
{
    const char *p = strstr(md, "\n## Example\n");
    if (!p)
        return NULL;
    p = strstr(p, "\n```c\n");
    if (!p)
        return NULL;
    p += strlen("\n```c\n");
    const char *end = p;
    while (*end && strncmp(end, "```\n", 4) != 0 && strcmp(end, "```") != 0) {
        const char *nl = strchr(end, '\n');
        if (!nl)
            return NULL; /* no closing fence */
        end = nl + 1;
    }
    if (!*end)
        return NULL;
    size_t n = (size_t)(end - p);
    char *out = malloc(n + 1);
    if (out) {
        memcpy(out, p, n);
        out[n] = '\0';
    }
    return out;
}

/* Prints where a and b first differ, by line; 0 when they are equal. */
static int compare(const char *a, const char *b, const char *what_a, const char *what_b)
{
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++, b++;
    }
    if (*a == *b)
        return 0;
    const int na = (int)strcspn(la, "\n"), nb = (int)strcspn(lb, "\n");
    fprintf(stderr, "test_readme_example: %s and %s differ at line %d of the program:\n"
                    "  %s: %.*s%s\n  %s: %.*s%s\n",
            what_a, what_b, line, what_a, na, la, *la ? "" : "(end)", what_b, nb, lb,
            *lb ? "" : "(end)");
    return 1;
}

/* 1 when md's example block is `want` (NULL: md has none). */
static int block_is(const char *md, const char *want)
{
    char *got = example_block(md);
    const int same = want ? got && strcmp(got, want) == 0 : got == NULL;
    free(got);
    return same;
}

static int self_check(void)
{
    return block_is("# t\n\n## Example\n\ntext\n\n```c\nint x;\n```\n\n```c\nint y;\n```\n",
                    "int x;\n") &&
           block_is("# t\n## Example\n```c\nint x;\n", NULL) &&             /* no closing fence */
           block_is("# t\n## Examples\n```c\nint x;\n```\n", NULL);        /* another heading */
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_readme_example README.md EXAMPLE.c\n");
        return 2;
    }
    if (!self_check()) {
        fprintf(stderr, "test_readme_example: FAIL: the block extraction's self-check\n");
        return 1;
    }
    char *md = test_read_file(argv[1]), *src = test_read_file(argv[2]);
    if (!md || !src) {
        fprintf(stderr, "test_readme_example: cannot read %s\n", md ? argv[2] : argv[1]);
        free(md);
        free(src);
        return 2;
    }
    char *block = example_block(md);
    int rc = 0;
    if (!block) {
        fprintf(stderr, "test_readme_example: %s has no ```c block under \"## Example\"\n",
                argv[1]);
        rc = 1;
    } else if (compare(block, src, "README.md", argv[2]) != 0) {
        fprintf(stderr, "test_readme_example: FAIL: README's example must be %s verbatim\n",
                argv[2]);
        rc = 1;
    } else {
        printf("test_readme_example: README's example is %s (%zu bytes)\n", argv[2],
               strlen(src));
    }
    free(block);
    free(md);
    free(src);
    return rc;
}
