/*
 * The source file and line of a code address in this process, from the
 * DWARF line table of the object it lies in, for messages that name a
 * caller (the capture diagnosis, capture/watch.c).
 *
 * libcgr links nothing beyond the C library and CUDA, and never starts a
 * process (so no addr2line): this is a reader of its own for the one
 * table it needs, .debug_line (DWARF 2 to 5), which an object built with
 * -g carries. What it does not read, and so reports as not found: debug
 * information in a separate file (.gnu_debuglink, /usr/lib/debug),
 * compressed sections (gcc -gz; inflating them needs zlib) and anything
 * but little-endian ELF of the process's own class. It reads the object's
 * file on every call and keeps nothing, because it serves rare messages;
 * a file replaced on disk after it was loaded gives wrong lines or none.
 */
#ifndef CGR_SRCLINE_H
#define CGR_SRCLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * "file:line" of the code at addr into out (cap bytes, cut to fit). The
 * file is named as the line table records it: with its directory, unless
 * that is the compilation directory. 1 when found; 0 otherwise, with out
 * "": addr lies in no loaded object, the object's file cannot be read, or
 * its line table (if any) does not cover addr. For a return address, pass
 * the address minus 1 to get the line of the call.
 */
int cgr__srcline(const void *addr, char *out, size_t cap);

/* The same for pc, an address of the ELF file at path as linked (addr - l_addr). */
int cgr__srcline_file(const char *path, uint64_t pc, char *out, size_t cap);

/* The sections the lookup reads, in memory; a missing one is NULL with size 0. */
typedef struct cgr__dwarf_lines {
    const uint8_t *line, *line_str, *str; /* .debug_line, .debug_line_str, .debug_str */
    size_t line_size, line_str_size, str_size;
} cgr__dwarf_lines;

/* The lookup on sections already read (what the tests and the fuzz target drive). */
int cgr__srcline_find(const cgr__dwarf_lines *d, uint64_t pc, char *out, size_t cap);

#endif
