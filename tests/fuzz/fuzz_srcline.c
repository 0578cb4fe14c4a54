/*
 * libFuzzer target: the DWARF line-table reader (lib/base/srcline.c),
 * through cgr__srcline_find, the lookup on sections in memory that
 * cgr__srcline runs on what it reads from an ELF file.
 *
 * Input layout: the address to look up (8 bytes, little-endian), the
 * output buffer's size less one (1 byte), the lengths of .debug_line_str
 * and .debug_str (2 bytes each), those two sections' bytes, and then
 * .debug_line up to the end of the input. Each section and the output
 * buffer is a heap block of exactly its size, so ASan reports a read or
 * write past any of them. Checks:
 *
 * - the result is 0 or 1, and the same when the lookup is repeated;
 * - the output is terminated inside the buffer, and "" on 0;
 * - on 1, an answer that was not cut to fit is "file:line", with a
 *   non-empty file and a decimal line other than 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "srcline.h"

/* A heap copy of up to n input bytes, *got of them (NULL for none), so
 * that ASan bounds it exactly. */
static uint8_t *take(fuzz_input *in, size_t n, size_t *got)
{
    size_t left = in->pos < in->size ? in->size - in->pos : 0;
    n = n < left ? n : left;
    *got = n;
    if (n == 0)
        return NULL;
    uint8_t *p = malloc(n);
    FUZZ_CHECK(p != NULL, "out of memory for %zu bytes", n);
    memcpy(p, in->data + in->pos, n);
    in->pos += n;
    return p;
}

static void check_answer(const char *out, size_t cap, int r)
{
    FUZZ_CHECK(r == 0 || r == 1, "result %d", r);
    const char *nul = memchr(out, 0, cap);
    FUZZ_CHECK(nul != NULL, "output not terminated within %zu bytes", cap);
    FUZZ_CHECK(r == 1 || out[0] == '\0', "not found, but the output is \"%s\"", out);
    if (r == 0 || (size_t)(nul - out) + 1 >= cap)
        return; /* none, or cut to fit */
    const char *colon = strrchr(out, ':');
    FUZZ_CHECK(colon && colon > out && colon[1], "\"%s\" is not file:line", out);
    for (const char *c = colon + 1; *c; c++)
        FUZZ_CHECK(*c >= '0' && *c <= '9', "\"%s\": the line is not a number", out);
    FUZZ_CHECK(strcmp(colon + 1, "0") != 0, "\"%s\": line 0 means no line", out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    const uint64_t pc = fuzz_u64(&in);
    const size_t cap = (size_t)fuzz_u8(&in) + 1;
    const size_t want_line_str = fuzz_u16(&in), want_str = fuzz_u16(&in);
    cgr__dwarf_lines d;
    uint8_t *line_str = take(&in, want_line_str, &d.line_str_size);
    uint8_t *str = take(&in, want_str, &d.str_size);
    uint8_t *line = take(&in, SIZE_MAX, &d.line_size);
    d.line = line;
    d.line_str = line_str;
    d.str = str;
    char *out = malloc(cap), *again = malloc(cap);
    FUZZ_CHECK(out && again, "out of memory for %zu bytes", cap);
    int r = cgr__srcline_find(&d, pc, out, cap);
    check_answer(out, cap, r);
    int r2 = cgr__srcline_find(&d, pc, again, cap);
    FUZZ_CHECK(r2 == r && strcmp(out, again) == 0, "the same lookup gave %d \"%s\", then %d \"%s\"",
               r, out, r2, again);
    free(out);
    free(again);
    free(line);
    free(str);
    free(line_str);
    return 0;
}
