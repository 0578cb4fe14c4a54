/*
 * A reader of DWARF line tables, just enough to turn a code address into
 * file:line (srcline.h says what it leaves out and why it exists).
 *
 * Each compilation unit's line table is a header (directories, files) and
 * a program for a small state machine whose rows map addresses to lines:
 * a row covers the addresses from its own up to the next row's. The file
 * belongs to the running process but is still untrusted input (it may be
 * truncated, or not what was loaded), so every read is bounds-checked.
 */
#define _GNU_SOURCE /* dladdr1 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "srcline.h"

/* The DWARF constants used (DWARF 5, sections 7.5.6 and 7.22). */
enum {
    DW_FORM_data2 = 0x05, DW_FORM_data4 = 0x06, DW_FORM_data8 = 0x07, DW_FORM_string = 0x08,
    DW_FORM_block = 0x09, DW_FORM_data1 = 0x0b, DW_FORM_strp = 0x0e, DW_FORM_udata = 0x0f,
    DW_FORM_data16 = 0x1e, DW_FORM_line_strp = 0x1f,
    DW_LNCT_path = 1, DW_LNCT_directory_index = 2,
};

/* A bounded reader: reading past the end sets bad and yields 0 or NULL,
 * so the parser checks bad once per table instead of after every field. */
typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static int rd_has(rd *r, uint64_t n)
{
    r->bad = r->bad || (uint64_t)(r->end - r->p) < n;
    return !r->bad;
}

/* n (at most 8) bytes, little-endian. */
static uint64_t rd_uint(rd *r, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n && rd_has(r, n - i); i++)
        v |= (uint64_t)*r->p++ << (8 * i);
    return v;
}

static void rd_skip(rd *r, uint64_t n)
{
    if (rd_has(r, n))
        r->p += n;
}

/* LEB128; bits past the 64th are dropped, as no value this reader uses needs them. */
static uint64_t rd_leb(rd *r, int is_signed)
{
    uint64_t v = 0;
    for (unsigned shift = 0; rd_has(r, 1); shift += 7) {
        uint8_t b = *r->p++;
        v |= shift < 64 ? (uint64_t)(b & 0x7f) << shift : 0;
        if (!(b & 0x80)) /* the last byte; its bit 6 is a signed value's sign */
            return is_signed && shift < 57 && (b & 0x40) ? v | ~(uint64_t)0 << (shift + 7) : v;
    }
    return 0;
}

static const char *rd_str(rd *r)
{
    const uint8_t *nul = r->bad ? NULL : memchr(r->p, 0, (size_t)(r->end - r->p));
    const char *s = nul ? (const char *)r->p : NULL;
    r->bad = !nul;
    r->p = nul ? nul + 1 : r->p;
    return s;
}

/* The string at off in a string section; NULL when it does not end inside. */
static const char *str_at(const uint8_t *sec, size_t size, uint64_t off)
{
    if (!sec || off >= size || !memchr(sec + off, 0, size - (size_t)off))
        return NULL;
    return (const char *)sec + off;
}

enum { MAX_FIELDS = 16 }; /* per DWARF 5 entry; producers use 1 to 4 */

/* How an entry of the directory or file table is laid out: (content type,
 * form) pairs. DWARF 5 says so in the header; earlier versions have one
 * layout, which the same code then reads. */
typedef struct layout {
    unsigned n;
    uint64_t f[MAX_FIELDS][2];
} layout;

static const layout old_dir = {1, {{DW_LNCT_path, DW_FORM_string}}};
static const layout old_file = {4, {{DW_LNCT_path, DW_FORM_string},
                                    {DW_LNCT_directory_index, DW_FORM_udata},
                                    {3, DW_FORM_udata}, {4, DW_FORM_udata}}}; /* time, size */

/* One unit's header, with readers placed at its tables and its program. */
typedef struct unit {
    const cgr__dwarf_lines *d;
    unsigned version, offset_size, min_inst, max_ops, line_range, opcode_base;
    int line_base;
    const uint8_t *std_lengths; /* operand counts of the standard opcodes */
    rd dirs, files, prog;
    uint64_t n_dirs, n_files;
    layout dir_fmt, file_fmt;
} unit;

/* One directory or file entry: its path and directory index. */
static void read_entry(rd *r, const unit *u, const layout *fmt, const char **path, uint64_t *dir)
{
    const cgr__dwarf_lines *d = u->d;
    const unsigned osz = u->offset_size;
    *path = NULL;
    *dir = 0;
    for (unsigned i = 0; i < fmt->n; i++) {
        const char *s = NULL;
        uint64_t v = 0;
        switch (fmt->f[i][1]) {
        case DW_FORM_string: s = rd_str(r); break;
        case DW_FORM_line_strp: s = str_at(d->line_str, d->line_str_size, rd_uint(r, osz)); break;
        case DW_FORM_strp: s = str_at(d->str, d->str_size, rd_uint(r, osz)); break;
        case DW_FORM_udata: v = rd_leb(r, 0); break;
        case DW_FORM_data1: v = rd_uint(r, 1); break;
        case DW_FORM_data2: v = rd_uint(r, 2); break;
        case DW_FORM_data4: v = rd_uint(r, 4); break;
        case DW_FORM_data8: v = rd_uint(r, 8); break;
        case DW_FORM_data16: rd_skip(r, 16); break; /* an MD5 */
        case DW_FORM_block: rd_skip(r, rd_leb(r, 0)); break;
        default: r->bad = 1; /* a form of unknown size: the rest cannot be found */
        }
        *path = fmt->f[i][0] == DW_LNCT_path ? s : *path;
        *dir = fmt->f[i][0] == DW_LNCT_directory_index ? v : *dir;
    }
}

/*
 * A table at h: *at is placed at its first entry, *n is its length, h
 * moves past it. DWARF 5 gives the layout and the count; before, a table
 * ends with an empty name. 0 when the layout is unusable. Every form
 * read_entry knows takes a byte or more, so with one field or more a
 * count of entries cannot outrun the data.
 */
static int read_table(rd *h, unit *u, layout *fmt, const layout *old, rd *at, uint64_t *n)
{
    const char *path;
    uint64_t dir;
    *n = 0;
    if (u->version < 5) {
        *fmt = *old;
        for (*at = *h; rd_has(h, 1) && *h->p; ++*n)
            read_entry(h, u, fmt, &path, &dir);
        rd_skip(h, 1);
        return !h->bad;
    }
    fmt->n = (unsigned)rd_uint(h, 1);
    if (fmt->n > MAX_FIELDS)
        return 0;
    for (unsigned i = 0; i < fmt->n; i++) {
        fmt->f[i][0] = rd_leb(h, 0);
        fmt->f[i][1] = rd_leb(h, 0);
    }
    *n = rd_leb(h, 0);
    *at = *h;
    if (*n && !fmt->n)
        return 0;
    for (uint64_t i = 0; i < *n && !h->bad; i++)
        read_entry(h, u, fmt, &path, &dir);
    return !h->bad;
}

/* The unit at r; r moves past it whenever its length is readable (r->bad
 * otherwise). 0 when this unit cannot be used, so that the next can be. */
static int read_unit(rd *r, const cgr__dwarf_lines *d, unit *u)
{
    memset(u, 0, sizeof *u);
    u->d = d;
    u->offset_size = 4;
    uint64_t len = rd_uint(r, 4);
    if (len == 0xffffffffu) /* 64-bit DWARF */
        u->offset_size = 8, len = rd_uint(r, 8);
    if (!rd_has(r, len))
        return 0;
    rd h = {r->p, r->p + len, 0};
    r->p += len;
    u->version = (unsigned)rd_uint(&h, 2);
    if (u->version < 2 || u->version > 5)
        return 0;
    if (u->version >= 5)
        rd_skip(&h, 2); /* address and segment selector sizes: set_address says its own */
    uint64_t header_len = rd_uint(&h, u->offset_size);
    if (!rd_has(&h, header_len))
        return 0;
    u->prog = (rd){h.p + header_len, h.end, 0};
    h.end = h.p + header_len;
    u->min_inst = (unsigned)rd_uint(&h, 1);
    u->max_ops = u->version >= 4 ? (unsigned)rd_uint(&h, 1) : 1;
    rd_skip(&h, 1); /* default_is_stmt: any row will do */
    u->line_base = (int)rd_uint(&h, 1);
    u->line_base -= u->line_base > 127 ? 256 : 0;
    u->line_range = (unsigned)rd_uint(&h, 1);
    u->opcode_base = (unsigned)rd_uint(&h, 1);
    u->std_lengths = h.p;
    rd_skip(&h, u->opcode_base - (u->opcode_base > 0));
    return !h.bad && u->line_range && u->max_ops && u->opcode_base &&
           read_table(&h, u, &u->dir_fmt, &old_dir, &u->dirs, &u->n_dirs) &&
           read_table(&h, u, &u->file_fmt, &old_file, &u->files, &u->n_files);
}

/*
 * "dir/name:line" for `file` (the file register) into out; 0 when the
 * tables do not have it. Before DWARF 5, files and directories count from
 * 1, with directory 0 the compilation directory; in DWARF 5 both count
 * from 0, and entry 0 of the directories is the compilation directory.
 * That directory is left out: it is the build's, long, and rarely what
 * tells one file from another.
 */
static int file_name(const unit *u, uint64_t file, uint64_t line, char *out, size_t cap)
{
    const uint64_t base = u->version < 5;
    const char *name = NULL, *dir = NULL;
    uint64_t di = 0, unused;
    rd r = u->files, dr = u->dirs;
    if (file < base || file - base >= u->n_files)
        return 0;
    for (uint64_t k = 0; k <= file - base && !r.bad; k++)
        read_entry(&r, u, &u->file_fmt, &name, &di);
    if (di && di - base >= u->n_dirs)
        return 0;
    for (uint64_t k = 0; di && k <= di - base && !dr.bad; k++)
        read_entry(&dr, u, &u->dir_fmt, &dir, &unused);
    if (r.bad || dr.bad || !name || !name[0] || (di && !dir))
        return 0;
    int n = di && dir[0] && name[0] != '/' ? snprintf(out, cap, "%s/%s:%" PRIu64, dir, name, line)
                                 : snprintf(out, cap, "%s:%" PRIu64, name, line);
    return n > 0;
}

/* The row found so far: the one with the latest start among those that
 * cover pc. Code the linker dropped keeps its rows, moved to address 0,
 * where they may cover a small pc too; the real row starts later. */
typedef struct hit {
    int found;
    uint64_t start, file, line;
    unit u;
} hit;

static void run_program(const unit *u, uint64_t pc, hit *best)
{
    rd r = u->prog;
    uint64_t addr = 0, op_index = 0, file = 1, line = 1;
    uint64_t row_addr = 0, row_file = 0, row_line = 0;
    int in_sequence = 0; /* a row of this sequence was emitted */
    while (!r.bad && r.p < r.end) {
        unsigned op = (unsigned)rd_uint(&r, 1);
        uint64_t adv = 0;
        int emit = 0, end = 0;
        if (op >= u->opcode_base) { /* special: advance both, emit a row */
            unsigned adj = op - u->opcode_base;
            adv = adj / u->line_range;
            line += (uint64_t)(int64_t)(u->line_base + (int)(adj % u->line_range));
            emit = 1;
        } else if (op == 0) { /* extended: a length, then its own opcode */
            uint64_t len = rd_leb(&r, 0);
            if (!len || !rd_has(&r, len))
                break;
            rd e = {r.p, r.p + len, 0};
            r.p += len;
            unsigned sub = (unsigned)rd_uint(&e, 1);
            emit = end = sub == 1; /* end_sequence */
            if (sub == 2 && len - 1 <= 8) /* set_address */
                addr = rd_uint(&e, (unsigned)(len - 1)), op_index = 0;
            /* define_file, set_discriminator, vendors': nothing a lookup needs */
        } else {
            switch (op) {
            case 1: emit = 1; break;                                     /* copy */
            case 2: adv = rd_leb(&r, 0); break;                          /* advance_pc */
            case 3: line += rd_leb(&r, 1); break;                        /* advance_line */
            case 4: file = rd_leb(&r, 0); break;                         /* set_file */
            case 8: adv = (255 - u->opcode_base) / u->line_range; break; /* const_add_pc */
            case 9: addr += rd_uint(&r, 2), op_index = 0; break;         /* fixed_advance_pc */
            default: /* column, flags, isa, later opcodes: skip their operands */
                for (unsigned i = 0; i < u->std_lengths[op - 1] && !r.bad; i++)
                    (void)rd_leb(&r, 0);
            }
        }
        /* Unsigned arithmetic wraps: a hostile advance makes a wrong address, not UB. */
        addr += u->min_inst * ((op_index + adv) / u->max_ops);
        op_index = (op_index + adv) % u->max_ops;
        if (!emit || r.bad)
            continue;
        if (in_sequence && row_addr <= pc && pc < addr && (!best->found || row_addr > best->start))
            *best = (hit){1, row_addr, row_file, row_line, *u};
        in_sequence = !end;
        row_addr = addr, row_file = file, row_line = line;
        if (end) /* the registers start again */
            addr = op_index = 0, file = line = 1;
    }
}

int cgr__srcline_find(const cgr__dwarf_lines *d, uint64_t pc, char *out, size_t cap)
{
    if (!out || !cap)
        return 0;
    out[0] = '\0';
    if (!d || !d->line)
        return 0;
    hit best;
    memset(&best, 0, sizeof best);
    rd r = {d->line, d->line + d->line_size, 0};
    while (!r.bad && r.p < r.end) {
        unit u;
        if (read_unit(&r, d, &u))
            run_program(&u, pc, &best);
    }
    /* Line 0 is code that no source line produced. */
    if (best.found && best.line && file_name(&best.u, best.file, best.line, out, cap))
        return 1;
    out[0] = '\0';
    return 0;
}

/* All n bytes at off; 0 on success. */
static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t k = pread(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k, n -= (size_t)k, off += (uint64_t)k;
    }
    return 0;
}

/* A section's bytes, for the caller to free; NULL when it cannot be used.
 * SHF_COMPRESSED (gcc -gz) counts as absent, since inflating needs zlib,
 * and SHT_NOBITS means the bytes went to a separate debug file. A message
 * is not worth reading a line table of gigabytes into memory. */
#define MAX_SECTION ((uint64_t)1 << 30)
static uint8_t *read_section(int fd, uint64_t file_size, const ElfW(Shdr) *sh)
{
    if (sh->sh_type == SHT_NOBITS || (sh->sh_flags & SHF_COMPRESSED) || sh->sh_size == 0 ||
        sh->sh_size > MAX_SECTION || sh->sh_offset > file_size ||
        sh->sh_size > file_size - sh->sh_offset)
        return NULL;
    uint8_t *buf = malloc(sh->sh_size);
    if (buf && read_at(fd, buf, sh->sh_size, sh->sh_offset) == 0)
        return buf;
    free(buf);
    return NULL;
}

int cgr__srcline_file(const char *path, uint64_t pc, char *out, size_t cap)
{
    if (!out || !cap)
        return 0;
    out[0] = '\0';
    /* The reader decodes little-endian data in the process's own ELF class. */
    const int little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
    const unsigned char elf_class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
    int fd = path && little ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return 0;
    static const char *const want[3] = {".debug_line", ".debug_line_str", ".debug_str"};
    uint8_t *sec[3] = {NULL, NULL, NULL}, *names = NULL;
    size_t size[3] = {0, 0, 0};
    ElfW(Shdr) *sh = NULL;
    ElfW(Ehdr) eh;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read_at(fd, &eh, sizeof eh, 0) != 0 ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != elf_class ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof *sh ||
        eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum) /* also SHN_XINDEX: not followed */
        goto done;
    const uint64_t file_size = (uint64_t)st.st_size;
    sh = malloc(eh.e_shnum * sizeof *sh);
    if (!sh || read_at(fd, sh, eh.e_shnum * sizeof *sh, eh.e_shoff) != 0)
        goto done;
    const ElfW(Shdr) *names_sh = &sh[eh.e_shstrndx];
    if (!(names = read_section(fd, file_size, names_sh)))
        goto done;
    for (size_t i = 0; i < eh.e_shnum; i++) {
        const char *name = str_at(names, names_sh->sh_size, sh[i].sh_name);
        for (int k = 0; name && k < 3; k++)
            if (!sec[k] && strcmp(name, want[k]) == 0 &&
                (sec[k] = read_section(fd, file_size, &sh[i])))
                size[k] = sh[i].sh_size;
    }
    const cgr__dwarf_lines d = {sec[0], sec[1], sec[2], size[0], size[1], size[2]};
    found = sec[0] && cgr__srcline_find(&d, pc, out, cap);
done:
    for (int k = 0; k < 3; k++)
        free(sec[k]);
    free(names);
    free(sh);
    (void)close(fd); /* read-only: nothing to lose */
    return found;
}

int cgr__srcline(const void *addr, char *out, size_t cap)
{
    if (!out || !cap)
        return 0;
    out[0] = '\0';
    /* The object whose mapping holds addr, and its load bias (l_addr). */
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_name)
        return 0;
    /* The main program's name is "": its file is /proc/self/exe. */
    const char *path = lm->l_name[0] ? lm->l_name : "/proc/self/exe";
    return cgr__srcline_file(path, (uint64_t)((uintptr_t)addr - lm->l_addr), out, cap);
}
