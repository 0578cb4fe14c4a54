/*
 * The verdicts of the capture agreement (verdict.h). agree.c turns them
 * into statuses and messages.
 */
#include "verdict.h"

#include <stdio.h>

#include "cgr/cgr.h"

static void verdict_at(cgr__verdict *v, cgr__verdict_kind kind, int rank)
{
    v->kind = kind;
    v->rank = rank;
    v->n_failed = 0;
    v->failed[0] = '\0';
}

void cgr__verdict_attach(const int64_t *all, int world, const int64_t *mine, cgr__verdict *v)
{
    verdict_at(v, CGR__VERDICT_AGREED, -1);
    /* The first record that differs decides. */
    for (int r = 0; r < world && v->kind == CGR__VERDICT_AGREED; r++) {
        const int64_t *w = cgr__record_of(all, r);
        if (w[CGR__REC_KIND] != CGR__RECORD_ATTACH || w[CGR__REC_RANK] != r)
            verdict_at(v, CGR__VERDICT_NOT_ATTACHING, r);
        else if (w[CGR__REC_WARMUP_RUNS] != mine[CGR__REC_WARMUP_RUNS] ||
                 w[CGR__REC_CAPTURE_AT] != mine[CGR__REC_CAPTURE_AT])
            verdict_at(v, CGR__VERDICT_RUN_OPTIONS, r);
        else if (w[CGR__REC_POLICY] != mine[CGR__REC_POLICY])
            verdict_at(v, CGR__VERDICT_POLICY, r);
    }
}

/* Whether rank r's record says it captured what rank 0 did, at the same point. */
static int in_step(const int64_t *all, int r)
{
    const int64_t *w = cgr__record_of(all, r);
    return w[CGR__REC_KIND] == CGR__RECORD_CAPTURE && w[CGR__REC_RANK] == r &&
           w[CGR__REC_STEP] == all[CGR__REC_STEP] && w[CGR__REC_RUN] == all[CGR__REC_RUN] &&
           w[CGR__REC_SEQ] == all[CGR__REC_SEQ] && w[CGR__REC_SHAPE] == all[CGR__REC_SHAPE];
}

int64_t cgr__verdict_bytes(const int64_t *all, int world)
{
    int64_t most = 0;
    for (int r = 0; r < world; r++)
        if (cgr__record_of(all, r)[CGR__REC_BYTES] > most)
            most = cgr__record_of(all, r)[CGR__REC_BYTES];
    return most;
}

void cgr__verdict_capture(const int64_t *all, int world, cgr__verdict *v)
{
    verdict_at(v, CGR__VERDICT_AGREED, -1);
    for (int r = 0; r < world; r++)
        if (!in_step(all, r)) {
            verdict_at(v, CGR__VERDICT_OUT_OF_STEP, r);
            return;
        }
    const size_t cap = sizeof v->failed;
    size_t n = 0;
    int cut = 0;
    for (int r = 0; r < world; r++) {
        if (cgr__record_of(all, r)[CGR__REC_STATUS] == CGR_STATUS_OK)
            continue;
        if (v->n_failed++ == 0) {
            v->kind = CGR__VERDICT_FAILED;
            v->rank = r;
        }
        /* A rank takes at most 13 characters (", -2147483648"), the ellipsis 5. */
        if (n + 19 < cap)
            n += (size_t)snprintf(v->failed + n, cap - n, "%s%d", v->n_failed > 1 ? ", " : "", r);
        else if (!cut) {
            cut = 1;
            n += (size_t)snprintf(v->failed + n, cap - n, ", ...");
        }
    }
}
