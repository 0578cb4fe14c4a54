/*
 * The limits cgr-bench checks its figures against, read from a data file
 * so that a limit changes without a rebuild and every limit says why it is
 * what it is.
 *
 * Format: one limit a line, `name value # why`; blank lines and lines
 * starting with '#' are ignored. value is a number (strtod). A name may
 * appear once.
 */
#ifndef BENCH_LIMITS_FILE_H
#define BENCH_LIMITS_FILE_H

#include <stddef.h>

/*
 * Loads the limits from path, or, when path is NULL, from limits.txt beside
 * the cgr-bench executable (the build tree) or ../share/cgr/limits.txt
 * from it (an installed tree). 0, or -1 with a message in err.
 */
int limits_load(const char *path, char *err, size_t n);
/* The limit called name, or NaN when the file has none of that name. */
double limit_get(const char *name);
/* The file the limits came from ("" before limits_load succeeded). */
const char *limits_file(void);

#endif
