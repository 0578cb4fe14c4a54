/*
 * Tiny JSON writer.
 */
#include <math.h>

#include "json.h"

void json_init(json_writer *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->count[0] = 0;
    w->error = 0;
}

static void indent(json_writer *w)
{
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

static void put_string(json_writer *w, const char *s)
{
    fputc('"', w->f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(w->f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(w->f, "\\u%04x", *p);
        else
            fputc(*p, w->f);
    }
    fputc('"', w->f);
}

/* Comma, newline and "key": before a value at the current level. */
static void member(json_writer *w, const char *key)
{
    if (w->depth > 0 && w->count[w->depth]++ > 0)
        fputc(',', w->f);
    if (w->depth > 0)
        indent(w);
    if (key) {
        put_string(w, key);
        fputs(": ", w->f);
    }
}

static void begin_container(json_writer *w, const char *key, char c)
{
    member(w, key);
    fputc(c, w->f);
    if (w->depth + 1 >= JSON_MAX_DEPTH) {
        w->error = 1;
        return;
    }
    w->count[++w->depth] = 0;
}

static void end_container(json_writer *w, char c)
{
    if (w->depth <= 0) {
        w->error = 1;
        return;
    }
    int had = w->count[w->depth];
    w->depth--;
    if (had)
        indent(w);
    fputc(c, w->f);
}

void json_begin_object(json_writer *w, const char *key)
{
    begin_container(w, key, '{');
}

void json_end_object(json_writer *w)
{
    end_container(w, '}');
}

void json_begin_array(json_writer *w, const char *key)
{
    begin_container(w, key, '[');
}

void json_end_array(json_writer *w)
{
    end_container(w, ']');
}

void json_number(json_writer *w, const char *key, double v)
{
    member(w, key);
    if (isfinite(v))
        fprintf(w->f, "%.10g", v);
    else
        fputs("null", w->f);
}

void json_int(json_writer *w, const char *key, long long v)
{
    member(w, key);
    fprintf(w->f, "%lld", v);
}

void json_bool(json_writer *w, const char *key, int v)
{
    member(w, key);
    fputs(v ? "true" : "false", w->f);
}

void json_string(json_writer *w, const char *key, const char *s)
{
    member(w, key);
    put_string(w, s ? s : "");
}

int json_finish(json_writer *w)
{
    fputc('\n', w->f);
    return (w->error || w->depth != 0 || ferror(w->f)) ? -1 : 0;
}
