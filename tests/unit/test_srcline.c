/*
 * The line-table reader (lib/base/srcline.c): this file's own lines (meson
 * compiles it with -g), addresses it must not resolve, hand-made DWARF 3
 * and 5 tables whose answers are known, and every truncation and many
 * corruptions of those tables, of this program's real table and of its
 * ELF file, none of which may crash or give a malformed answer.
 */
#define _GNU_SOURCE /* dladdr1, RTLD_NOLOAD */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "srcline.h"
#include "test.h"

#define NOINLINE __attribute__((noinline))

/* Both on one line, so the function's first row has this line whatever the compiler. */
enum { TARGET_LINE = __LINE__ }; static NOINLINE int target(int x) { return 3 * x + 1; }

static NOINLINE void *return_address(void)
{
    return __builtin_return_address(0);
}

/* "...test_srcline.c:<line>"; fails the test otherwise. */
static void expect_here(const char *got, int line)
{
    const char *colon = strrchr(got, ':');
    static const char tail[] = "test_srcline.c";
    if (!colon || (size_t)(colon - got) < sizeof tail - 1 ||
        memcmp(colon - (sizeof tail - 1), tail, sizeof tail - 1) != 0)
        TEST_FAIL_("\"%s\" does not name %s", got, tail);
    if (strtol(colon + 1, NULL, 10) != line)
        TEST_FAIL_("\"%s\": expected line %d", got, line);
}

static void test_own_lines(void)
{
    char out[512];
    ASSERT_EQ(cgr__srcline((const void *)(uintptr_t)target, out, sizeof out), 1);
    expect_here(out, TARGET_LINE);
    ASSERT_EQ(target(1), 4);

    /* A return address points past its call: one byte back is the call's line. */
    void *(*volatile get)(void) = return_address;
    void *ra = get(); const int call_line = __LINE__;
    ASSERT_EQ(cgr__srcline((const char *)ra - 1, out, sizeof out), 1);
    expect_here(out, call_line);
    printf("call site: %s\n", out);

    /* Cut to fit, still terminated. */
    char small[5];
    ASSERT_EQ(cgr__srcline((const char *)ra - 1, small, sizeof small), 1);
    ASSERT_EQ(strlen(small), 4);
    small[0] = 'z';
    ASSERT_EQ(cgr__srcline((const char *)ra - 1, small, 0), 0);
    ASSERT_EQ(cgr__srcline_file("/proc/self/exe", 0, small, 0), 0);
    ASSERT_EQ(small[0], 'z'); /* no room: not even the terminator is written */
}

static void expect_none(const void *addr)
{
    char out[64] = "untouched";
    ASSERT_EQ(cgr__srcline(addr, out, sizeof out), 0);
    ASSERT_STR_EQ(out, "");
}

typedef struct image {
    uint8_t *b;
    size_t n;
} image;

static image read_image(const char *path)
{
    FILE *f = fopen(path, "rb");
    ASSERT(f);
    image im = {NULL, 0};
    size_t cap = 0;
    for (;;) {
        if (im.n == cap) {
            cap = cap ? 2 * cap : 1 << 20;
            im.b = realloc(im.b, cap);
            ASSERT(im.b);
        }
        size_t k = fread(im.b + im.n, 1, cap - im.n, f);
        im.n += k;
        if (k == 0)
            break;
    }
    ASSERT(!ferror(f));
    ASSERT_EQ(fclose(f), 0);
    return im;
}

/* The 64-bit ELF file's section header of that name, found without srcline.c. */
static Elf64_Shdr *section(const image *im, const char *name)
{
    Elf64_Ehdr *eh = (Elf64_Ehdr *)im->b;
    ASSERT(im->n >= sizeof *eh && eh->e_ident[EI_CLASS] == ELFCLASS64);
    ASSERT(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= im->n);
    Elf64_Shdr *sh = (Elf64_Shdr *)(im->b + eh->e_shoff);
    const char *names = (const char *)im->b + sh[eh->e_shstrndx].sh_offset;
    for (int i = 0; i < eh->e_shnum; i++)
        if (strcmp(names + sh[i].sh_name, name) == 0)
            return &sh[i];
    return NULL;
}

static int data_word = 7;

static void test_not_found(void)
{
    /*
     * libc's own printf (under a sanitizer, the global printf is the
     * sanitizer's, whose library may have a line table). Distributions
     * ship libc without one in its file; where it has one, the case says
     * so and is left out.
     */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *p = libc ? dlsym(libc, "printf") : NULL;
    Dl_info info;
    ASSERT(p && dladdr(p, &info) && info.dli_fname);
    image im = read_image(info.dli_fname);
    if (sizeof(void *) == 8 && section(&im, ".debug_line"))
        printf("%s has a line table: its printf is not a case of none\n", info.dli_fname);
    else
        expect_none(p);
    free(im.b);
    ASSERT_EQ(dlclose(libc), 0);
    /* No object there; the heap; this program's data, which no row covers. */
    expect_none((const void *)16);
    expect_none((const void *)UINTPTR_MAX);
    void *heap = malloc(16);
    ASSERT(heap);
    expect_none(heap);
    free(heap);
    expect_none(&data_word);
    char out[16];
    ASSERT_EQ(cgr__srcline_file("/nonexistent/cgr-test/srcline", 0x1000, out, sizeof out), 0);
    ASSERT_EQ(cgr__srcline_file("/dev/null", 0x1000, out, sizeof out), 0);
    ASSERT_EQ(cgr__srcline_find(NULL, 0x1000, out, sizeof out), 0);
}

/* ---- hand-made tables ------------------------------------------------------ */

typedef struct buf {
    uint8_t b[1024];
    size_t n;
} buf;

static void put(buf *o, uint64_t v, int bytes)
{
    ASSERT(o->n + (size_t)bytes <= sizeof o->b);
    for (int i = 0; i < bytes; i++)
        o->b[o->n++] = (uint8_t)(v >> (8 * i));
}

static void put_leb(buf *o, uint64_t v)
{
    do
        put(o, (v & 0x7f) | (v > 0x7f ? 0x80 : 0), 1);
    while ((v >>= 7) != 0);
}

static void put_sleb(buf *o, int64_t v)
{
    for (;;) {
        uint8_t b = (uint8_t)(v & 0x7f);
        v = (v - (int64_t)b) / 128; /* exact, so it rounds down like a shift */
        if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
            put(o, b, 1);
            return;
        }
        put(o, b | 0x80, 1);
    }
}

static void put_str(buf *o, const char *s)
{
    do
        put(o, (uint8_t)*s, 1);
    while (*s++);
}

/* Patches a little-endian field written earlier as a placeholder. */
static void patch(buf *o, size_t at, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        o->b[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

/* set_address: the sequence's rows start at addr. */
static void set_address(buf *o, uint64_t addr)
{
    put(o, 0, 1);
    put_leb(o, 9);
    put(o, 2, 1);
    put(o, addr, 8);
}

static void end_sequence(buf *o)
{
    put(o, 0, 1);
    put_leb(o, 1);
    put(o, 1, 1);
}

/*
 * The header of a DWARF 2 or 3 unit up to its directory list: its length
 * and header length are placeholders at *start and *hl, patched once the
 * unit is written. Opcode base 10, line base -3, line range 12.
 */
static void pre5_header(buf *o, int version, int offset_size, unsigned min_inst, size_t *start,
                        size_t *hl)
{
    static const uint8_t lengths[9] = {0, 1, 1, 1, 1, 0, 0, 0, 1};
    if (offset_size == 8)
        put(o, 0xffffffff, 4); /* 64-bit DWARF */
    *start = o->n;
    put(o, 0, offset_size);
    put(o, (uint64_t)version, 2);
    *hl = o->n;
    put(o, 0, offset_size);
    put(o, min_inst, 1);
    put(o, 1, 1); /* default_is_stmt */
    put(o, (uint8_t)-3, 1);
    put(o, 12, 1);
    put(o, 10, 1);
    for (int i = 0; i < 9; i++)
        put(o, lengths[i], 1);
}

/* A file entry before DWARF 5: its name and directory index, no time or size. */
static void pre5_file(buf *o, const char *name, uint64_t dir)
{
    put_str(o, name);
    put_leb(o, dir);
    put_leb(o, 0);
    put_leb(o, 0);
}

static const char line_str[] = "/build\0src"; /* "src" at 7 */
static const char str[] = "main.c\0util.c"; /* "util.c" at 7 */

/*
 * Four units: one of a version the reader must skip; DWARF 5 with the
 * directories in .debug_line_str, the files in .debug_str and fields of
 * several forms; 64-bit DWARF 3 with a 4-byte instruction unit; DWARF 2
 * with indexes past its lists.
 */
static size_t make_tables(uint8_t *dst)
{
    buf o = {.n = 0};
    put(&o, 2, 4); /* version 9, nothing else */
    put(&o, 9, 2);

    size_t start = o.n;
    put(&o, 0, 4);
    put(&o, 5, 2);
    put(&o, 8, 1); /* address size */
    put(&o, 0, 1);
    size_t hl = o.n;
    put(&o, 0, 4);
    put(&o, 1, 1); /* min_inst */
    put(&o, 1, 1); /* max_ops */
    put(&o, 1, 1);
    put(&o, (uint8_t)-5, 1); /* line_base */
    put(&o, 14, 1);          /* line_range */
    put(&o, 13, 1);          /* opcode_base */
    static const uint8_t lengths5[12] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
    for (int i = 0; i < 12; i++)
        put(&o, lengths5[i], 1);
    put(&o, 1, 1); /* directories: path as line_strp */
    put_leb(&o, 1);
    put_leb(&o, 0x1f);
    put_leb(&o, 2);
    put(&o, 0, 4);
    put(&o, 7, 4);
    /* files: path strp, directory data1, size udata, MD5 data16, a vendor's block and
     * a vendor's data2 */
    static const uint64_t fmt[6][2] = {{1, 0x0e},      {2, 0x0b},      {4, 0x0f},
                                       {5, 0x1e},      {0x2001, 0x09}, {0x2002, 0x05}};
    put(&o, 6, 1);
    for (int i = 0; i < 6; i++) {
        put_leb(&o, fmt[i][0]);
        put_leb(&o, fmt[i][1]);
    }
    put_leb(&o, 2);
    for (int f = 0; f < 2; f++) {
        put(&o, f ? 7 : 0, 4);
        put(&o, (uint64_t)f, 1);
        put_leb(&o, 1000);
        for (int i = 0; i < 16; i++)
            put(&o, 0xa0, 1);
        put_leb(&o, 3);
        put(&o, 0xabcdef, 3);
        put(&o, 0x1234, 2);
    }
    patch(&o, hl, o.n - hl - 4, 4);
    set_address(&o, 0x1000);
    put(&o, 3, 1); /* advance_line to 10 (file is 1: util.c) */
    put_sleb(&o, 9);
    put(&o, 1, 1);  /* copy: row 0x1000 */
    put(&o, 76, 1); /* special: address +4, line +2 */
    put(&o, 4, 1);  /* set_file 0: main.c */
    put_leb(&o, 0);
    put(&o, 2, 1); /* advance_pc to 0x1014 */
    put_leb(&o, 0x10);
    put(&o, 3, 1); /* advance_line to 42 */
    put_sleb(&o, 30);
    put(&o, 5, 1); /* set_column, skipped by its operand count */
    put_leb(&o, 7);
    put(&o, 1, 1);
    put(&o, 2, 1); /* advance_pc to 0x101c */
    put_leb(&o, 8);
    end_sequence(&o);
    patch(&o, start, o.n - start - 4, 4);

    pre5_header(&o, 3, 8, 4, &start, &hl); /* 4-byte instructions */
    put_str(&o, "inc");
    put_str(&o, "");
    pre5_file(&o, "a.h", 1);
    pre5_file(&o, "/abs/b.c", 1); /* absolute: the directory is not prefixed */
    put_str(&o, "");
    patch(&o, hl, o.n - hl - 8, 8);
    set_address(&o, 0x2000);
    put(&o, 4, 1); /* set_file 2: /abs/b.c */
    put_leb(&o, 2);
    put(&o, 3, 1);
    put_sleb(&o, 99);
    put(&o, 1, 1);  /* row 0x2000, line 100 */
    put(&o, 38, 1); /* special: 2 instructions (8 bytes), line +1 */
    put(&o, 4, 1);  /* set_file 1: inc/a.h */
    put_leb(&o, 1);
    put(&o, 8, 1); /* const_add_pc: 20 instructions, to 0x2058 */
    put(&o, 9, 1); /* fixed_advance_pc 4, in bytes */
    put(&o, 4, 2);
    put(&o, 3, 1); /* advance_line -51 to 50 */
    put_sleb(&o, -51);
    put(&o, 1, 1);
    put(&o, 2, 1); /* to 0x2060 */
    put_leb(&o, 1);
    end_sequence(&o);
    patch(&o, start, o.n - start - 8, 8);

    /*
     * DWARF 2: no max_ops field. Files count from 1 and directories from 1
     * after the compilation directory; y.c names a directory past the list
     * and set_file 3 a file past it, and neither row may answer.
     */
    pre5_header(&o, 2, 4, 1, &start, &hl);
    put_str(&o, "d2");
    put_str(&o, "");
    pre5_file(&o, "x.c", 1);
    pre5_file(&o, "y.c", 2);
    put_str(&o, "");
    patch(&o, hl, o.n - hl - 4, 4);
    set_address(&o, 0x3000);
    put(&o, 3, 1); /* advance_line to 5 */
    put_sleb(&o, 4);
    put(&o, 1, 1); /* row 0x3000: d2/x.c:5 */
    put(&o, 2, 1);
    put_leb(&o, 4);
    put(&o, 4, 1); /* set_file 2: y.c, in a directory past the list */
    put_leb(&o, 2);
    put(&o, 1, 1); /* row 0x3004 */
    put(&o, 2, 1);
    put_leb(&o, 4);
    put(&o, 4, 1); /* set_file 3: past the files */
    put_leb(&o, 3);
    put(&o, 1, 1); /* row 0x3008 */
    put(&o, 2, 1); /* to 0x300c */
    put_leb(&o, 4);
    end_sequence(&o);
    patch(&o, start, o.n - start - 4, 4);
    memcpy(dst, o.b, o.n);
    return o.n;
}

static const struct {
    uint64_t pc;
    const char *want; /* NULL: not found */
} hand_cases[] = {
    {0xfff, NULL},
    {0x1000, "src/util.c:10"},
    {0x1003, "src/util.c:10"},
    {0x1004, "src/util.c:12"},
    {0x1013, "src/util.c:12"},
    {0x1014, "main.c:42"},
    {0x101b, "main.c:42"},
    {0x101c, NULL},
    {0x2000, "/abs/b.c:100"},
    {0x2007, "/abs/b.c:100"},
    {0x2008, "/abs/b.c:101"},
    {0x205b, "/abs/b.c:101"},
    {0x205c, "inc/a.h:50"},
    {0x205f, "inc/a.h:50"},
    {0x2060, NULL},
    {0x3000, "d2/x.c:5"},
    {0x3003, "d2/x.c:5"},
    {0x3004, NULL},
    {0x3008, NULL},
    {0x300c, NULL},
};
enum { N_HAND = sizeof hand_cases / sizeof hand_cases[0] };

/* Any answer but a crash: 0 or 1, with out terminated inside cap and "" on 0. */
static int lookup_sane(const cgr__dwarf_lines *d, uint64_t pc)
{
    char out[64];
    memset(out, 'x', sizeof out);
    int r = cgr__srcline_find(d, pc, out, sizeof out);
    ASSERT(r == 0 || r == 1);
    ASSERT(memchr(out, 0, sizeof out) != NULL);
    ASSERT(r == 1 || out[0] == '\0');
    return r;
}

/* Every byte of the first 512 (the first unit's header, where a lie
 * steers the most), then about 500 more, spread evenly: a big table is
 * sampled so that the test stays quick. */
static size_t next_pos(size_t i, size_t n)
{
    return i < 512 || n <= 2048 ? i + 1 : i + (n - 512) / 500 + 1;
}

/*
 * Prefixes of the line section, and its bytes set to a few values, each
 * variant in a buffer of its exact size. Returns how many variants still
 * found pcs[0], to show that the loop ran on something meaningful.
 */
static size_t mangle(const cgr__dwarf_lines *d, const uint64_t *pcs, int n_pcs)
{
    size_t hits = 0, n = d->line_size;
    uint8_t *copy = malloc(n ? n : 1);
    ASSERT(copy);
    for (size_t len = 0; len < n; len = next_pos(len, n)) { /* the whole is the caller's */
        uint8_t *cut = malloc(len ? len : 1);
        ASSERT(cut);
        memcpy(cut, d->line, len);
        cgr__dwarf_lines v = *d;
        v.line = cut;
        v.line_size = len;
        for (int k = 0; k < n_pcs; k++)
            (void)lookup_sane(&v, pcs[k]);
        free(cut);
    }
    for (size_t i = 0; i < n; i = next_pos(i, n)) {
        const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f, (uint8_t)(d->line[i] ^ 1)};
        for (size_t j = 0; j < sizeof vals; j++) {
            memcpy(copy, d->line, n);
            copy[i] = vals[j];
            cgr__dwarf_lines v = *d;
            v.line = copy;
            for (int k = 0; k < n_pcs; k++)
                hits += (size_t)(lookup_sane(&v, pcs[k]) && k == 0);
        }
    }
    /* The string sections cut short: names vanish, nothing breaks. */
    for (size_t cut = 0; cut < 16; cut++) {
        cgr__dwarf_lines v = *d;
        v.line_str_size = v.line_str_size < cut ? v.line_str_size : cut;
        v.str_size = v.str_size < cut ? v.str_size : cut;
        for (int k = 0; k < n_pcs; k++)
            (void)lookup_sane(&v, pcs[k]);
    }
    free(copy);
    return hits;
}

static void test_hand_tables(void)
{
    uint8_t table[1024];
    size_t n = make_tables(table);
    cgr__dwarf_lines d = {table, (const uint8_t *)line_str, (const uint8_t *)str, n,
                          sizeof line_str, sizeof str};
    uint64_t pcs[N_HAND];
    for (int i = 0; i < N_HAND; i++) {
        char out[64];
        int r = cgr__srcline_find(&d, hand_cases[i].pc, out, sizeof out);
        if (hand_cases[i].want) {
            if (r != 1 || strcmp(out, hand_cases[i].want) != 0)
                TEST_FAIL_("pc 0x%llx: got %d \"%s\", expected \"%s\"",
                           (unsigned long long)hand_cases[i].pc, r, out, hand_cases[i].want);
        } else if (r != 0 || out[0]) {
            TEST_FAIL_("pc 0x%llx: got %d \"%s\", expected none",
                       (unsigned long long)hand_cases[i].pc, r, out);
        }
        pcs[i] = hand_cases[i].pc;
    }
    /* No room for an answer: nothing is written, not even the terminator. */
    char untouched = 'z';
    ASSERT_EQ(cgr__srcline_find(&d, 0x1000, &untouched, 0), 0);
    ASSERT_EQ(untouched, 'z');
    pcs[0] = 0x1004; /* the first is the one mangle counts */
    size_t hits = mangle(&d, pcs, N_HAND);
    printf("hand-made tables: %zu bytes, %zu corrupted variants still answered\n", n, hits);
    ASSERT_GT(hits, 0);
}

/* ---- this program's own table and file -------------------------------------- */

static char tmp_path[] = "/tmp/cgr-test-srcline-XXXXXX";

/* Writes n bytes of b as the temporary file and looks pc up in it. */
static int lookup_file(const uint8_t *b, size_t n, uint64_t pc, char *out, size_t cap)
{
    FILE *f = fopen(tmp_path, "wb");
    ASSERT(f);
    ASSERT_EQ(fwrite(b, 1, n, f), n);
    ASSERT_EQ(fclose(f), 0);
    int r = cgr__srcline_file(tmp_path, pc, out, cap);
    ASSERT(r == 0 || r == 1);
    ASSERT(memchr(out, 0, cap) && (r == 1 || out[0] == '\0'));
    return r;
}

static void test_own_file(void)
{
    if (sizeof(void *) != 8) {
        printf("own file: not a 64-bit program, skipped\n");
        return;
    }
    void *(*volatile get)(void) = return_address;
    void *ra = get(); const int call_line = __LINE__;
    Dl_info info;
    struct link_map *lm = NULL;
    ASSERT(dladdr1(ra, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm);
    const uint64_t pc = (uint64_t)((uintptr_t)ra - 1 - lm->l_addr);

    image im = read_image("/proc/self/exe");
    const Elf64_Shdr *line = section(&im, ".debug_line");
    const Elf64_Shdr *lstr = section(&im, ".debug_line_str");
    const Elf64_Shdr *dstr = section(&im, ".debug_str");
    ASSERT(line && line->sh_offset + line->sh_size <= im.n);
    ASSERT(!(line->sh_flags & SHF_COMPRESSED));
    cgr__dwarf_lines d = {im.b + line->sh_offset, lstr ? im.b + lstr->sh_offset : NULL,
                          dstr ? im.b + dstr->sh_offset : NULL, line->sh_size,
                          lstr ? lstr->sh_size : 0, dstr ? dstr->sh_size : 0};
    char out[512];
    ASSERT_EQ(cgr__srcline_find(&d, pc, out, sizeof out), 1);
    expect_here(out, call_line);

    uint64_t pcs[2] = {pc, pc + 64};
    size_t hits = mangle(&d, pcs, 2);
    printf("own table: %zu bytes, %zu corrupted variants still answered\n", (size_t)line->sh_size,
           hits);
    ASSERT_GT(hits, 0);

    /* The file: whole, cut anywhere, with headers that lie. */
    int fd = mkstemp(tmp_path);
    ASSERT(fd >= 0);
    ASSERT_EQ(close(fd), 0);
    ASSERT_EQ(lookup_file(im.b, im.n, pc, out, sizeof out), 1);
    expect_here(out, call_line);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im.b;
    const size_t cuts[] = {0, 1, 4, 16, 63, 64, 65, (size_t)line->sh_offset,
                           (size_t)(line->sh_offset + line->sh_size / 2), (size_t)eh->e_shoff,
                           (size_t)eh->e_shoff + 100, im.n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        if (cuts[i] <= im.n)
            ASSERT_EQ(lookup_file(im.b, cuts[i], pc, out, sizeof out), 0);
    const size_t at_line = (size_t)((const uint8_t *)line - im.b);
    const struct {
        size_t at;
        int bytes;
        uint64_t value;
    } lies[] = {
        {offsetof(Elf64_Shdr, sh_size), 8, UINT64_MAX},
        {offsetof(Elf64_Shdr, sh_size), 8, im.n},
        {offsetof(Elf64_Shdr, sh_offset), 8, UINT64_MAX - 4},
        {offsetof(Elf64_Shdr, sh_offset), 8, im.n - 8},
        {offsetof(Elf64_Shdr, sh_flags), 8, SHF_COMPRESSED},
        {offsetof(Elf64_Shdr, sh_type), 4, SHT_NOBITS},
        {offsetof(Elf64_Shdr, sh_name), 4, UINT32_MAX},
    };
    uint8_t *copy = malloc(im.n);
    ASSERT(copy);
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        memcpy(copy, im.b, im.n);
        for (int k = 0; k < lies[i].bytes; k++)
            copy[at_line + lies[i].at + (size_t)k] = (uint8_t)(lies[i].value >> (8 * k));
        (void)lookup_file(copy, im.n, pc, out, sizeof out);
    }
    const size_t ehdr_fields[] = {offsetof(Elf64_Ehdr, e_shoff),
                                  offsetof(Elf64_Ehdr, e_shnum),
                                  offsetof(Elf64_Ehdr, e_shstrndx),
                                  offsetof(Elf64_Ehdr, e_shentsize),
                                  EI_CLASS,
                                  EI_DATA,
                                  0};
    for (size_t i = 0; i < sizeof ehdr_fields / sizeof ehdr_fields[0]; i++) {
        memcpy(copy, im.b, im.n);
        copy[ehdr_fields[i]] ^= 0x5a;
        copy[ehdr_fields[i] + 1] ^= 0xff;
        (void)lookup_file(copy, im.n, pc, out, sizeof out);
    }
    /* A string table index one past the last section header names no header. */
    memcpy(copy, im.b, im.n);
    Elf64_Ehdr *ce = (Elf64_Ehdr *)copy;
    ce->e_shstrndx = ce->e_shnum;
    ASSERT_EQ(lookup_file(copy, im.n, pc, out, sizeof out), 0);
    free(copy);
    /* The line table moved to the very end of the file is read there. */
    uint8_t *moved = malloc(im.n + line->sh_size);
    ASSERT(moved);
    memcpy(moved, im.b, im.n);
    memcpy(moved + im.n, im.b + line->sh_offset, line->sh_size);
    for (int k = 0; k < 8; k++)
        moved[at_line + offsetof(Elf64_Shdr, sh_offset) + (size_t)k] =
            (uint8_t)((uint64_t)im.n >> (8 * k));
    ASSERT_EQ(lookup_file(moved, im.n + line->sh_size, pc, out, sizeof out), 1);
    expect_here(out, call_line);
    free(moved);
    ASSERT_EQ(unlink(tmp_path), 0);
    free(im.b);
}

int main(void)
{
    test_own_lines();
    test_not_found();
    test_hand_tables();
    test_own_file();
    printf("PASS\n");
    return 0;
}
