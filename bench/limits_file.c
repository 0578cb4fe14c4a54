/*
 * The limits file (limits_file.h).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "limits_file.h"

#define MAX_LIMITS 64

static struct {
    char name[48];
    double value;
} g_limits[MAX_LIMITS];
static int g_n;
static char g_file[4096];

/* The directory of the running executable into dir, or -1. */
static int exe_dir(char *dir, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    if (len <= 0)
        return -1;
    dir[len] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

static int parse_line(char *line, int lineno, const char *path, char *err, size_t n)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return 0;
    char *name = p;
    while (*p && !isspace((unsigned char)*p))
        p++;
    if (*p)
        *p++ = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(p, &end);
    while (end && isspace((unsigned char)*end))
        end++;
    if (end == p || errno || !end || *end || !isfinite(v) ||
        strlen(name) >= sizeof g_limits[0].name) {
        snprintf(err, n, "%s:%d: expected 'name value # why'", path, lineno);
        return -1;
    }
    if (!isnan(limit_get(name))) {
        snprintf(err, n, "%s:%d: limit '%s' given twice", path, lineno, name);
        return -1;
    }
    if (g_n == MAX_LIMITS) {
        snprintf(err, n, "%s:%d: more than %d limits", path, lineno, MAX_LIMITS);
        return -1;
    }
    snprintf(g_limits[g_n].name, sizeof g_limits[g_n].name, "%s", name);
    g_limits[g_n++].value = v;
    return 0;
}

int limits_load(const char *path, char *err, size_t n)
{
    char found[sizeof g_file];
    const int searched = !path;
    g_n = 0;
    g_file[0] = '\0';
    if (!path) {
        char dir[sizeof g_file - 64];
        if (exe_dir(dir, sizeof dir) != 0) {
            snprintf(err, n, "cannot find the limits file: no executable path (give --limits)");
            return -1;
        }
        snprintf(found, sizeof found, "%s/limits.txt", dir);
        if (access(found, R_OK) != 0)
            snprintf(found, sizeof found, "%s/../share/cgr/limits.txt", dir);
        path = found;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        /* A build of the cgr-bench target alone has not copied the file beside it. */
        snprintf(err, n, "cannot read the limits file %s: %s%s", path, strerror(errno),
                 searched ? " (nor limits.txt beside cgr-bench: build the whole tree, which "
                            "copies it there, or give --limits FILE)"
                          : "");
        return -1;
    }
    char line[512];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, n, "%s:%d: line too long", path, lineno);
            rc = -1;
        } else {
            rc = parse_line(line, lineno, path, err, n);
        }
    }
    fclose(f);
    if (rc == 0)
        snprintf(g_file, sizeof g_file, "%s", path);
    else
        g_n = 0;
    return rc;
}

double limit_get(const char *name)
{
    for (int i = 0; i < g_n; i++)
        if (!strcmp(g_limits[i].name, name))
            return g_limits[i].value;
    return NAN;
}

const char *limits_file(void)
{
    return g_file;
}
