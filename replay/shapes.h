/*
 * Shape table: what one step does on each run when its dims change (pure
 * C, no CUDA). docs/shapes.md describes the states, their bounds, the
 * actions, update in place, the churn guard and payload ownership.
 *
 * The protocol: decide() once per run; after a CAPTURE exactly one of
 * capture_done(), capture_failed() or capture_cancel() before the next
 * decide(). Not thread-safe: the runtime calls it under its lock. Every
 * call but init allocates nothing. Arguments are the runtime's own, checked
 * at the API edge, so breaking the protocol or passing what the edge
 * refuses is a bug, caught by assertions.
 */
#ifndef CGR_SHAPES_H
#define CGR_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "cgr/cgr.h"
#include "churn.h"

/** Entries warming up at once, and entries that run eagerly for good. */
#define CGR__SHAPES_MAX_WARMING 16u
#define CGR__SHAPES_MAX_EAGER 16u
/** The largest max_entries. */
#define CGR__SHAPES_MAX_ENTRIES 4096u
/** Kept messages (capture errors, update errors) including the NUL; longer ones end in "...". */
#define CGR__SHAPES_TEXT_MAX 256u
/** The churn warning including the NUL. */
#define CGR__SHAPES_WARNING_MAX 512u
/** Update failures are counted per cudaGraphExecUpdateResult 0..14; 15 counts the others. */
#define CGR__SHAPES_UPDATE_REASONS 16u
/** No entry. */
#define CGR__SHAPES_NONE UINT32_MAX

typedef enum cgr__shapes_action {
    CGR__SHAPES_REPLAY = 1,
    CGR__SHAPES_WARMUP = 2,
    CGR__SHAPES_CAPTURE = 3,
    CGR__SHAPES_EAGER = 4
} cgr__shapes_action;

typedef enum cgr__shape_state {
    CGR__SHAPE_FREE = 0,
    CGR__SHAPE_WARMING,
    CGR__SHAPE_GRAPH,
    CGR__SHAPE_EAGER
} cgr__shape_state;

/** One dynamic dim, as the step declares it. */
typedef struct cgr__shapes_dim_desc {
    const char *name;           /**< for messages; NULL prints "d<i>"; <= CGR_MAX_NAME chars */
    cgr__bucket_policy policy;  /**< from cgr__bucket_init_list() or _pow2() */
} cgr__shapes_dim_desc;

/** Settings of one table: the step's options and dynamic dims, validated at the API edge. */
typedef struct cgr__shapes_config {
    const char *step_name;              /**< for messages; NULL: "step"; <= CGR_MAX_NAME chars */
    const cgr__shapes_dim_desc *dims;   /**< n_dims entries; may be NULL when n_dims is 0 */
    uint32_t n_dims;                    /**< 0..CGR_MAX_DYN_DIMS */
    uint32_t warmup_runs;               /**< eager runs per new shape, 1..CGR_MAX_WARMUP */
    uint32_t max_entries;               /**< graphs cached at most, 1..CGR__SHAPES_MAX_ENTRIES */
    size_t max_bytes;                   /**< their byte budget; 0: none */
    uint32_t churn_k;                   /**< K new shapes ... (0: guard off) */
    uint64_t churn_window;              /**< ... within W runs trip the guard */
    uint64_t churn_stable;              /**< S runs without a new shape recover */
    int keep_spare;                     /**< 0 or 1: keep one evicted executable for updates */
} cgr__shapes_config;

/** One known shape. */
typedef struct cgr__shape {
    int64_t dims[CGR_MAX_DYN_DIMS];  /**< bucketed; the key (n_dims of them, the rest 0) */
    uint8_t state;                   /**< cgr__shape_state */
    uint8_t reason;                  /**< EAGER: cgr_eager_reason */
    uint16_t warmups;                /**< WARMING: warm-up runs done */
    uint64_t last_use;               /**< the table's run count at its latest decision */
    uint64_t replays;                /**< GRAPH: REPLAY decisions */
    uint64_t eager_runs;             /**< EAGER: EAGER decisions since its verdict */
    void *payload;                   /**< GRAPH: its executable */
    size_t bytes;                    /**< GRAPH: charged to the byte budget */
    char text[CGR__SHAPES_TEXT_MAX]; /**< EAGER: the capture error, or the sizes */
} cgr__shape;

/** A payload handed back for the caller to free. */
typedef struct cgr__shapes_freed {
    void *payload;
    size_t bytes;
} cgr__shapes_freed;

/**
 * What only the table sees. The runs and what each did are counted by its
 * caller (cgr_step_stats), the runs and new shapes by the churn guard, and
 * the graphs and their bytes are n_graphs and bytes.
 */
typedef struct cgr__shapes_stats {
    uint64_t capture_failures;  /**< capture_failed(), and refuse() for CAPTURE_FAILED */
    uint64_t update_failures_by_reason[CGR__SHAPES_UPDATE_REASONS];
    uint64_t evictions;         /**< graphs pushed out by inserts, or taken by an update
                                     or a failed one */
} cgr__shapes_stats;

/** What decide() says for one run. Pointers into the table stay valid until the next call. */
typedef struct cgr__shapes_decision {
    cgr__shapes_action action;
    cgr_eager_reason reason;    /**< EAGER: why (the entry's text, or the warning, says
                                     more); NONE otherwise */
    void *payload;              /**< REPLAY: the graph. CAPTURE: the executable offered
                                     for update in place (the spare, else the least
                                     recently used graph of a full table), NULL to
                                     instantiate */
    uint32_t entry;             /**< the shape's entry, 0..capacity - 1 */
    int fresh;                  /**< 1: the entry was just made for this shape, which the
                                     churn guard counted as a new shape */
    uint32_t warmup_run;        /**< WARMUP: 1..warmup_runs */
    int churn_tripped;          /**< 1 on the run that tripped the guard: log the warning */
    const int64_t *dims;        /**< bucketed dims, n_dims of them (pad inputs to these) */
} cgr__shapes_decision;

/** What capture_done() did. Pointers stay valid until the next call. */
typedef struct cgr__shapes_outcome {
    int cached;                      /**< 1: cached; 0: refused (too large), payload in freed */
    const cgr__shapes_freed *freed;  /**< n_freed payloads for the caller to free */
    uint32_t n_freed;
} cgr__shapes_outcome;

/**
 * The table. Callers read its fields (the entries, the counts, warning,
 * update_error); only the calls below write.
 */
typedef struct cgr__shapes {
    char step_name[CGR_MAX_NAME + 1];
    char dim_name[CGR_MAX_DYN_DIMS][CGR_MAX_NAME + 1]; /**< "" prints "d<i>" */
    cgr__bucket_policy policy[CGR_MAX_DYN_DIMS];
    uint32_t n_dims;
    uint32_t warmup_runs;
    uint32_t max_entries;
    size_t max_bytes;
    int keep_spare;
    cgr__shape *entries;        /**< capacity of them (allocated) */
    uint32_t capacity;          /**< max_entries + MAX_WARMING + MAX_EAGER */
    uint32_t last;              /**< entry of the latest decision, or CGR__SHAPES_NONE */
    uint32_t n_graphs;
    size_t bytes;
    cgr__shapes_freed *freed;   /**< max_entries: capture_done()'s freed list */
    cgr__churn churn;           /**< its counters are the table's runs and new shapes */
    /* Which dims changed from the previous new shape, per new shape (a ring), for the warning. */
    uint8_t change_mask[CGR__CHURN_MAX_K];
    int64_t last_new[CGR_MAX_DYN_DIMS];
    /* The capture in flight (of entry `last`), between a CAPTURE decision and its report. */
    int capturing;
    int offered;                /**< 1 while the executable offered to it is in the table */
    cgr__shapes_freed spare;    /**< payload NULL: none */
    cgr__shapes_stats stats;
    char warning[CGR__SHAPES_WARNING_MAX];
    char update_error[CGR__SHAPES_TEXT_MAX];
} cgr__shapes;

/** A table for cfg (copied, names included); CGR_STATUS_OUT_OF_MEMORY leaves *m unchanged. */
cgr_status cgr__shapes_init(cgr__shapes *m, const cgr__shapes_config *cfg);

/** Frees the entries and zeroes *m; payloads still held are not touched: drain them first. */
void cgr__shapes_destroy(cgr__shapes *m);

/**
 * What this run does, for the n_dims true values in declaration order
 * (NULL when n_dims is 0), each within its policy's buckets.
 */
void cgr__shapes_decide(cgr__shapes *m, const int64_t *true_dims, cgr__shapes_decision *out);

/**
 * The action decide() would answer for true_dims now, without deciding (no
 * counter or LRU order changes), and the shape's entry in *entry
 * (CGR__SHAPES_NONE for a shape not known yet). So that a run that must not
 * capture yet is refused before the table counts it, and a run is launched
 * ahead (capture/gate.c) only with the graph it will replay. Not while a
 * capture is in flight.
 */
cgr__shapes_action cgr__shapes_peek(const cgr__shapes *m, const int64_t *true_dims,
                                    uint32_t *entry);

/**
 * The capture of the latest CAPTURE succeeded: caches the payload, the
 * shape's executable (not NULL) costing `bytes` against the byte budget
 * (graphs evicted for room are in out->freed), or, when those bytes alone
 * exceed the budget, refuses it (the payload itself in out->freed; the
 * shape runs EAGER(TOO_LARGE)). updated = 1: the offered payload was
 * updated in place; 0: a new one was instantiated.
 */
void cgr__shapes_capture_done(cgr__shapes *m, void *payload, size_t bytes, int updated,
                              cgr__shapes_outcome *out);

/** The capture failed for the step's own reason (text kept, cut): EAGER(CAPTURE_FAILED). */
void cgr__shapes_capture_failed(cgr__shapes *m, const char *text);

/** The capture was abandoned (out of memory, a device error): its next decision is CAPTURE. */
void cgr__shapes_capture_cancel(cgr__shapes *m);

/**
 * Updating the offered executable failed: counts `reason` (a
 * cudaGraphExecUpdateResult; 15 and above or negative in the last place),
 * keeps text and hands the offer to *victim to free. Then instantiate and
 * capture_done(updated = 0).
 */
void cgr__shapes_update_failed(cgr__shapes *m, int reason, const char *text,
                                     cgr__shapes_freed *victim);

/**
 * The offered executable was updated in place, but the capture is not kept
 * (the peer ranks refused it): the offer leaves the table without counting
 * as an update failure, and goes to *victim to free. Then capture_failed.
 */
void cgr__shapes_offer_withdrawn(cgr__shapes *m, cgr__shapes_freed *victim);

/**
 * GRAPH entry `entry` must not replay again (it froze a value, or the
 * shape could not be captured again): it runs EAGER for reason (FROZEN or
 * CAPTURE_FAILED) with text, and its payload goes to *out. Not while a
 * capture is in flight; a shape not yet cached fails at its capture instead
 * (capture_failed). CAPTURE_FAILED counts as a capture failure.
 */
void cgr__shapes_refuse(cgr__shapes *m, uint32_t entry, cgr_eager_reason reason,
                              const char *text, cgr__shapes_freed *out);

/**
 * Hands back one payload still held (graphs, least recently used first,
 * then the spare), for tearing down; CGR_STATUS_WRONG_STATE once nothing
 * is held.
 */
cgr_status cgr__shapes_drain(cgr__shapes *m, cgr__shapes_freed *out);

#endif
