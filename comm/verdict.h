/*
 * The records of the capture agreement and the verdict each rank draws
 * from them (agree.c gathers them from every rank; docs/multigpu.md).
 *
 * Every rank sees every record, in rank order, so each reaches the same
 * verdict from the same data. Plain C: no NCCL, CUDA or runtime object, so
 * the unit suite checks the verdicts on records of any number of ranks,
 * which a machine with one GPU cannot produce otherwise.
 */
#ifndef CGR_VERDICT_H
#define CGR_VERDICT_H

#include <stdint.h>

/* What a record is about (its word CGR__REC_KIND). */
enum { CGR__RECORD_ATTACH = 1, CGR__RECORD_CAPTURE = 2 };

/* The words of one rank's record, int64 each. */
enum {
    CGR__REC_KIND,   /* CGR__RECORD_ATTACH or CGR__RECORD_CAPTURE */
    CGR__REC_RANK,   /* the sender's rank */
    CGR__REC_STATUS, /* its capture's status (a cgr_status); CGR_STATUS_OK at attach time */
    CGR__REC_STEP,   /* the step's name, hashed */
    CGR__REC_RUN,    /* the step's runs so far, as its shape table decided them (with runs
                        that failed after the decision, which moved the table all the same) */
    CGR__REC_SEQ,    /* the agreements the sender made before this one */
    CGR__REC_SHAPE,  /* the run's bucketed dims, hashed */
    CGR__REC_BYTES,  /* what the sender's graph costs against shape_cache_bytes; 0: none */
    CGR__AGREE_WORDS = 8,
    /* At attach time words 3 to 5 carry the options that must match instead; 6 and 7 are 0. */
    CGR__REC_WARMUP_RUNS = CGR__REC_STEP, /* cgr_options.warmup_runs */
    CGR__REC_CAPTURE_AT = CGR__REC_RUN,   /* cgr_options.capture */
    CGR__REC_POLICY = CGR__REC_SEQ,       /* a hash of the other options that time captures */
};

typedef enum cgr__verdict_kind {
    CGR__VERDICT_AGREED,       /* launch: every rank captured (attach: may capture) alike */
    CGR__VERDICT_NOT_ATTACHING, /* attach: rank `rank` sent another record */
    CGR__VERDICT_RUN_OPTIONS,  /* attach: rank `rank` has other warmup_runs or capture */
    CGR__VERDICT_POLICY,       /* attach: rank `rank` differs in the options hashed */
    CGR__VERDICT_OUT_OF_STEP,  /* capture: rank `rank` captured something else than rank 0 */
    CGR__VERDICT_FAILED,       /* capture: the ranks in `failed` could not capture */
} cgr__verdict_kind;

typedef struct cgr__verdict {
    cgr__verdict_kind kind;
    int rank;     /* the first rank the verdict names; -1 when AGREED */
    int n_failed; /* FAILED: how many ranks failed; `rank` is the first of them */
    /* FAILED: those ranks, "1, 3"; cut with ", ..." where they do not fit. */
    char failed[128];
} cgr__verdict;

/* Rank r's record among `all`, the [world][CGR__AGREE_WORDS] records in rank order. */
static inline const int64_t *cgr__record_of(const int64_t *all, int r)
{
    return all + (int64_t)r * CGR__AGREE_WORDS;
}

/*
 * Attach time: every rank must be attaching, and with the same options as
 * `mine`, this rank's record (rank order is checked, so a peer that
 * attaches while this one captures is found). Records are taken in rank
 * order and the first that differs decides.
 */
void cgr__verdict_attach(const int64_t *all, int world, const int64_t *mine, cgr__verdict *v);

/*
 * After a capture: every rank must have captured the same step and shape
 * at the same run and agreement as rank 0, with CGR_STATUS_OK. A rank out
 * of step decides before any failed capture. CGR__REC_BYTES may differ.
 */
void cgr__verdict_capture(const int64_t *all, int world, cgr__verdict *v);

/*
 * The largest of the ranks' CGR__REC_BYTES: what every rank charges the
 * graph against shape_cache_bytes, so that all of them evict and refuse
 * alike even where their graphs differ in size.
 */
int64_t cgr__verdict_bytes(const int64_t *all, int world);

#endif
