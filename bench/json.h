/*
 * A tiny streaming JSON writer: nested objects and arrays, commas and
 * indentation handled for the caller. Non-finite numbers are written as
 * null (JSON has no NaN). `key` is the member name inside an object and
 * must be NULL inside an array.
 */
#ifndef BENCH_JSON_H
#define BENCH_JSON_H

#include <stdio.h>

#define JSON_MAX_DEPTH 32

typedef struct json_writer {
    FILE *f;
    int depth;
    int count[JSON_MAX_DEPTH]; /* members written so far at each level */
    int error;                 /* nesting misuse */
} json_writer;

void json_init(json_writer *w, FILE *f);
void json_begin_object(json_writer *w, const char *key);
void json_end_object(json_writer *w);
void json_begin_array(json_writer *w, const char *key);
void json_end_array(json_writer *w);
void json_number(json_writer *w, const char *key, double v);
void json_int(json_writer *w, const char *key, long long v);
void json_bool(json_writer *w, const char *key, int v);
void json_string(json_writer *w, const char *key, const char *s);
/* 0 when everything was written and nesting is closed; -1 otherwise. */
int json_finish(json_writer *w);

#endif
