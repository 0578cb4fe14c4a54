/*
 * Shape table: what one step does on each run when its dims change (pure
 * C, no CUDA).
 *
 * A step's shapes are the bucketed values of its dynamic dims (bucket.h
 * rounds each dim up). The table holds one entry per shape it knows, in
 * one array scanned linearly, the key (the bucketed dims) compared with
 * memcmp; the entry of the latest run is tried first, so a step that
 * keeps one shape pays one compare. Each entry is in one state:
 *
 *   WARMING  seen, not captured yet: it gets warmup_runs eager runs, then
 *            a capture. At most CGR__SHAPES_MAX_WARMING entries warm up at
 *            once; a new shape then takes the least recently used one's
 *            place, and that shape starts over.
 *   GRAPH    captured: its graph (an opaque payload here) is replayed.
 *            Bounded by max_entries and by max_bytes (the payloads'
 *            estimated bytes); the least recently used goes first.
 *   EAGER    runs eagerly for good, with a reason and its text: the
 *            capture failed, the graph alone exceeded max_bytes, or the
 *            runtime found its graph wrong for later runs (refuse()). At
 *            most CGR__SHAPES_MAX_EAGER; the least recently used is
 *            forgotten first (that shape is then new again).
 *
 * The runtime asks once per run (cgr__shapes_decide()) and gets one action:
 *
 *   REPLAY   launch decision.payload.
 *   WARMUP   run the step eagerly (decision.warmup_run of warmup_runs).
 *   CAPTURE  capture now, then report exactly one of
 *            cgr__shapes_capture_done(), _capture_failed() or
 *            _capture_cancel() before the next decide(). decision.payload
 *            is an executable offered for update in place, or NULL.
 *   EAGER    run eagerly, for decision.reason: the churn guard is tripped
 *            and the shape is not cached, or the entry is EAGER.
 *
 * decision.entry names the shape's entry for every action, so the runtime
 * keeps per-shape state (the scratch plan) in an array beside the table;
 * decision.fresh says the entry was just (re)made for this shape: reset it.
 *
 * Update in place. A capture is offered one executable to update instead
 * of instantiating: the spare when the table holds one (keep_spare: the
 * first executable an insert evicts is kept back, outside the byte
 * budget), otherwise the least recently used graph when max_entries are
 * cached (the insert would evict it anyway). The runtime tries
 * cudaGraphExecUpdate on it:
 *  - success: capture_done(updated = 1, payload = the offered payload).
 *    The offered shape leaves the table (an eviction; its payload now
 *    serves the new shape).
 *  - failure: cgr__shapes_update_failed(reason, text) counts the
 *    cudaGraphExecUpdateResult and hands the offered payload back at once
 *    for freeing (the offered shape leaves, or the spare is gone). Then
 *    instantiate and capture_done(updated = 0).
 *  - not tried: capture_done(updated = 0); the offer stays where it was.
 *
 * Payloads. A payload given to capture_done() belongs to the table until
 * it comes back through an outcome's freed list, an update_failed()
 * victim or cgr__shapes_drain(); each comes back exactly once.
 *
 * Churn guard. Every decide() is one step of churn.h's guard. A "new
 * shape" is a run whose shape has no entry: a shape warming up over
 * several runs counts once. While the guard is tripped, shapes without a
 * graph run EAGER (no warm-up, no capture); cached shapes keep replaying,
 * since the guard exists to stop captures. When it trips, the table writes
 * one warning naming the step and the dims that changed between the new
 * shapes that tripped it (cgr__shapes_warning()); that decision has
 * churn_tripped set so the runtime logs it once.
 *
 * Not thread-safe: the runtime calls it under its lock. Every call but
 * init allocates nothing. Failed calls change nothing, counters included.
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
/** Longest step or dim name kept for messages (as for cgr_step_desc names). */
#define CGR__SHAPES_NAME_MAX 63u
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

typedef enum cgr__shapes_reason {
    CGR__SHAPES_REASON_NONE = 0,
    CGR__SHAPES_REASON_CHURN = 1,          /**< churn guard tripped, shape not cached */
    CGR__SHAPES_REASON_CAPTURE_FAILED = 2, /**< this shape's capture failed earlier */
    CGR__SHAPES_REASON_TOO_LARGE = 3,      /**< its graph exceeded the byte budget */
    CGR__SHAPES_REASON_FROZEN = 4,         /**< its graph froze a value that changes per run */
    CGR__SHAPES_REASONS = 5
} cgr__shapes_reason;

/** Where the executable offered for update in place comes from. */
typedef enum cgr__shapes_source {
    CGR__SHAPES_FROM_NONE = 0,  /**< nothing offered: instantiate */
    CGR__SHAPES_FROM_SPARE = 1, /**< the spare */
    CGR__SHAPES_FROM_LRU = 2    /**< the least recently used graph */
} cgr__shapes_source;

typedef enum cgr__shape_state {
    CGR__SHAPE_FREE = 0,
    CGR__SHAPE_WARMING,
    CGR__SHAPE_GRAPH,
    CGR__SHAPE_EAGER
} cgr__shape_state;

/** One dynamic dim, as the step declares it. */
typedef struct cgr__shapes_dim_desc {
    const char *name;           /**< for messages; NULL prints "d<i>"; at most
                                     CGR__SHAPES_NAME_MAX characters */
    cgr__bucket_policy policy;  /**< from cgr__bucket_init_list() or _pow2() */
} cgr__shapes_dim_desc;

/** Settings of one table. Start from cgr__shapes_config_init(). */
typedef struct cgr__shapes_config {
    const char *step_name;              /**< for messages; NULL: "step"; at most
                                             CGR__SHAPES_NAME_MAX characters */
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
    uint8_t reason;                  /**< EAGER: cgr__shapes_reason */
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

/** Everything the table counts; from cgr__shapes_get_stats(). */
typedef struct cgr__shapes_stats {
    uint64_t runs;              /**< successful decide() calls = hits + misses */
    uint64_t hits;              /**< REPLAY decisions */
    uint64_t misses;            /**< all others = warmup_runs + capture_attempts + eager_runs */
    uint64_t new_shapes;        /**< what the churn guard saw as new */
    uint64_t warmup_runs;
    uint64_t capture_attempts;  /**< CAPTURE decisions; once closed, = captures +
                                     capture_failures + capture_cancels */
    uint64_t captures;          /**< capture_done() calls, cached or not */
    uint64_t capture_failures;
    uint64_t capture_cancels;
    uint64_t updates;           /**< captures finished by an update in place */
    uint64_t update_failures;
    uint64_t update_failures_by_reason[CGR__SHAPES_UPDATE_REASONS];
    uint64_t evictions;         /**< graphs pushed out by inserts, or taken by an update
                                     or a failed one */
    uint64_t too_large;         /**< captures refused by the byte budget */
    uint64_t eager_runs;
    uint64_t eager_by_reason[CGR__SHAPES_REASONS]; /**< [0] stays 0 */
    uint64_t churn_activations;
    uint64_t churn_recoveries;
    double capture_us;          /**< stream capture time, summed over captures */
    double instantiate_us;      /**< instantiate (+ upload), over captures not updated */
    double update_us;           /**< cudaGraphExecUpdate (+ upload), over updates */
    uint32_t entries;           /**< graphs cached now */
    uint32_t peak_entries;
    size_t bytes;               /**< their bytes now */
    size_t peak_bytes;
    uint32_t spare;             /**< 1 while a spare is held */
    size_t spare_bytes;
    uint32_t warming;           /**< WARMING entries */
    uint32_t eager;             /**< EAGER entries */
} cgr__shapes_stats;

/** What decide() says for one run. Pointers stay valid until the next call. */
typedef struct cgr__shapes_decision {
    cgr__shapes_action action;
    cgr__shapes_reason reason;  /**< EAGER: why; NONE otherwise */
    const char *text;           /**< EAGER: the kept message or the churn warning; "" otherwise */
    void *payload;              /**< REPLAY: the graph. CAPTURE: the executable offered
                                     for update in place, NULL to instantiate */
    cgr__shapes_source source;  /**< CAPTURE: where payload comes from */
    uint32_t entry;             /**< the shape's entry, 0..cgr__shapes_capacity() - 1 */
    int fresh;                  /**< 1: the entry was just made for this shape */
    uint32_t warmup_run;        /**< WARMUP: 1..warmup_runs */
    int new_shape;              /**< 1 when the churn guard saw this shape as new */
    int churn_tripped;          /**< 1 on the run that tripped the guard: log the warning */
    int churn_recovered;        /**< 1 on the run the guard recovered on */
    const int64_t *dims;        /**< bucketed dims, n_dims of them (pad inputs to these) */
    const int64_t *true_dims;   /**< the true dims as given (for the device copy) */
} cgr__shapes_decision;

/** What the runtime reports after a successful capture. */
typedef struct cgr__shapes_capture_result {
    void *payload;          /**< the shape's executable; not NULL. When updated: the
                                 payload that was offered */
    size_t bytes;           /**< what it costs against the byte budget */
    int updated;            /**< 1: updated in place from the offer; 0: instantiated */
    double capture_us;      /**< stream capture, >= 0 */
    double instantiate_us;  /**< when not updated, >= 0 */
    double update_us;       /**< when updated, >= 0 */
} cgr__shapes_capture_result;

/** What capture_done() did. Pointers stay valid until the next call. */
typedef struct cgr__shapes_outcome {
    int cached;                      /**< 1: cached; 0: refused (too large), payload in freed */
    const cgr__shapes_freed *freed;  /**< n_freed payloads for the caller to free */
    uint32_t n_freed;
} cgr__shapes_outcome;

/** The table. Read it through the calls below; do not write. */
typedef struct cgr__shapes {
    char step_name[CGR__SHAPES_NAME_MAX + 1];
    char dim_name[CGR_MAX_DYN_DIMS][CGR__SHAPES_NAME_MAX + 1]; /**< "" prints "d<i>" */
    cgr__bucket_policy policy[CGR_MAX_DYN_DIMS];
    uint32_t n_dims;
    uint32_t warmup_runs;
    uint32_t max_entries;
    size_t max_bytes;
    int keep_spare;
    cgr__shape *entries;        /**< capacity of them (allocated) */
    uint32_t capacity;          /**< max_entries + MAX_WARMING + MAX_EAGER */
    uint32_t last;              /**< entry of the latest decision, or CGR__SHAPES_NONE */
    uint64_t runs;              /**< decide() calls so far (the LRU clock) */
    uint32_t n_graphs;
    size_t bytes;
    int64_t true_dims[CGR_MAX_DYN_DIMS]; /**< the latest decide()'s */
    cgr__shapes_freed *freed;   /**< max_entries: capture_done()'s freed list */
    cgr__churn churn;
    /* Which dims changed from the previous new shape, per new shape (a ring), for the warning. */
    uint8_t change_mask[CGR__CHURN_MAX_K];
    int64_t last_new[CGR_MAX_DYN_DIMS];
    uint64_t new_count;
    /* The capture in flight, between a CAPTURE decision and its report. */
    int capturing;
    uint32_t cap_entry;
    cgr__shapes_source offer;
    void *offer_payload;
    uint32_t offer_entry;       /**< LRU offer: its entry */
    int offer_failed;
    int has_spare;
    cgr__shapes_freed spare;
    cgr__shapes_stats stats;    /**< counters; the table-derived ones are filled on read */
    char warning[CGR__SHAPES_WARNING_MAX];
    char update_error[CGR__SHAPES_TEXT_MAX];
} cgr__shapes;

/**
 * Defaults: no dims, 2 warm-up runs, 16 cached graphs, no byte budget,
 * churn guard K/W/S = 8/64/32, no spare. No-op for NULL.
 */
void cgr__shapes_config_init(cgr__shapes_config *cfg);

/**
 * A table for cfg (copied, names included). CGR_STATUS_INVALID_ARGUMENT
 * when m or cfg is NULL, n_dims is above CGR_MAX_DYN_DIMS, dims is NULL
 * with n_dims > 0, a policy is not initialized, a name is too long,
 * warmup_runs is outside 1..CGR_MAX_WARMUP, max_entries outside
 * 1..CGR__SHAPES_MAX_ENTRIES, keep_spare is not 0 or 1, or the churn
 * settings are refused by cgr__churn_init(); CGR_STATUS_OUT_OF_MEMORY when
 * the entries cannot be allocated. *m is left unchanged on failure.
 */
cgr_status cgr__shapes_init(cgr__shapes *m, const cgr__shapes_config *cfg);

/**
 * Frees the entries and zeroes *m. Payloads still held (graphs, the spare)
 * are not touched: drain them first. NULL and a zeroed table are no-ops;
 * destroying twice is safe.
 */
void cgr__shapes_destroy(cgr__shapes *m);

/**
 * Decides what this run does (see the top of this file). true_dims holds
 * the n_dims true values in declaration order (may be NULL when n_dims is
 * 0). Errors, all changing nothing:
 *  - CGR_STATUS_INVALID_ARGUMENT: m or out is NULL, m is not initialized,
 *    true_dims is NULL with n_dims > 0, or a dim is below 1 or above its
 *    largest bucket (cgr never pads past what the step declared);
 *  - CGR_STATUS_WRONG_STATE: a capture has not been reported yet.
 */
cgr_status cgr__shapes_decide(cgr__shapes *m, const int64_t *true_dims, cgr__shapes_decision *out);

/**
 * The payload that decide() would replay for true_dims now, without
 * deciding: nothing changes, LRU order and counters included. NULL when
 * that run would not replay (no graph for the shape, or a capture is not
 * reported yet) or the arguments are bad. bucketed (optional, n_dims
 * values) gets the bucketed dims when the payload is not NULL. The
 * runtime uses it to launch a run ahead (capture/gate.c).
 */
void *cgr__shapes_peek(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed);

/**
 * The bucketed dims of true_dims (n_dims values into bucketed), nothing
 * else. CGR_STATUS_INVALID_ARGUMENT for bad arguments or dims outside
 * every bucket.
 */
cgr_status cgr__shapes_bucket(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed);

/**
 * The capture from the latest CAPTURE decision succeeded. Caches the
 * payload (evicting least recently used graphs, handed back in
 * out->freed), or refuses it when its bytes alone exceed the byte budget:
 * then the payload itself is in out->freed and the shape runs EAGER
 * (TOO_LARGE) from now on. The runtime may launch the executable for the
 * current run before freeing it.
 * CGR_STATUS_WRONG_STATE when no capture is in flight;
 * CGR_STATUS_INVALID_ARGUMENT for NULLs, a NULL payload, a negative or NaN
 * time, or updated = 1 when nothing was offered, the update was reported
 * failed, or payload is not the offered one.
 */
cgr_status cgr__shapes_capture_done(cgr__shapes *m, const cgr__shapes_capture_result *r,
                                    cgr__shapes_outcome *out);

/**
 * The capture from the latest CAPTURE decision failed because the step
 * cannot be captured (text: the failing call and why; NULL is taken as
 * ""). The shape runs EAGER (CAPTURE_FAILED) from now on, with text kept
 * (cut to CGR__SHAPES_TEXT_MAX - 1 characters, ending in "..."); other
 * shapes are unaffected. CGR_STATUS_WRONG_STATE when no capture is in
 * flight, CGR_STATUS_INVALID_ARGUMENT when m is NULL.
 */
cgr_status cgr__shapes_capture_failed(cgr__shapes *m, const char *text);

/**
 * The capture from the latest CAPTURE decision was abandoned for a reason
 * that is not the shape's fault (out of memory, a device error): no
 * verdict. The shape stays warm, and its next decision is CAPTURE again.
 * CGR_STATUS_WRONG_STATE when no capture is in flight,
 * CGR_STATUS_INVALID_ARGUMENT when m is NULL.
 */
cgr_status cgr__shapes_capture_cancel(cgr__shapes *m);

/**
 * cudaGraphExecUpdate on the offered executable failed: `reason` is the
 * cudaGraphExecUpdateResult (counted per value, 15 and above or negative
 * in the last place), text says more (kept, bounded; NULL is ""). *victim
 * receives the offered payload for the caller to free; then instantiate
 * and call capture_done(updated = 0). CGR_STATUS_WRONG_STATE when no
 * capture is in flight, nothing was offered or its failure was already
 * reported; CGR_STATUS_INVALID_ARGUMENT for NULLs.
 */
cgr_status cgr__shapes_update_failed(cgr__shapes *m, int reason, const char *text,
                                     cgr__shapes_freed *victim);

/**
 * The graph of GRAPH entry `entry` must not be replayed again (the
 * runtime found that it froze a value that changes from run to run, or
 * could not capture the shape again): the entry runs EAGER for `reason`
 * (FROZEN or CAPTURE_FAILED) from now on with `text` (NULL is ""), and its
 * payload goes to *out for the caller to free. Allowed between decisions,
 * not while a capture is in flight. CGR_STATUS_WRONG_STATE when the entry
 * holds no graph or a capture is in flight, CGR_STATUS_INVALID_ARGUMENT
 * for NULLs or an entry out of range.
 */
cgr_status cgr__shapes_refuse(cgr__shapes *m, uint32_t entry, cgr__shapes_reason reason,
                              const char *text, cgr__shapes_freed *out);

/**
 * Hands back one payload still held: graphs, least recently used first,
 * then the spare. For tearing down; the table stays usable.
 * CGR_STATUS_WRONG_STATE when nothing is held or a capture is in flight,
 * CGR_STATUS_INVALID_ARGUMENT for NULLs.
 */
cgr_status cgr__shapes_drain(cgr__shapes *m, cgr__shapes_freed *out);

/** All counters. CGR_STATUS_INVALID_ARGUMENT for NULLs. */
cgr_status cgr__shapes_get_stats(const cgr__shapes *m, cgr__shapes_stats *out);

/** Entries in the table, in use or not (for iterating with cgr__shapes_entry()). */
uint32_t cgr__shapes_capacity(const cgr__shapes *m);

/** Entry i, or NULL when it is free or out of range. */
const cgr__shape *cgr__shapes_entry(const cgr__shapes *m, uint32_t i);

/** The latest churn warning, "" before the first trip (and for NULL). */
const char *cgr__shapes_warning(const cgr__shapes *m);

/** The latest update failure's text, "" before the first (and for NULL). */
const char *cgr__shapes_update_error(const cgr__shapes *m);

/** "replay", "warmup", "capture", "eager"; "invalid" otherwise. */
const char *cgr__shapes_action_name(cgr__shapes_action a);

/** "none", "churn guard", "capture failed", "too large"; "invalid" otherwise. */
const char *cgr__shapes_reason_name(cgr__shapes_reason r);

#endif
