/*
 * Shape manager: what one step does on each run when its dims change
 * (pure C, no CUDA).
 *
 * It composes the four building blocks of replay/ for one step: bucket.h
 * rounds each dynamic dim up, signature.h names the bucketed shape,
 * cache.h holds the captured shapes' executables (opaque payloads here),
 * churn.h stops capturing when shapes never settle. The runtime asks it,
 * once per run, what to do (cgr__shapes_decide()), does it, and reports
 * back how a capture went. The manager allocates at init only; every other
 * call is allocation-free and takes O(n_dims) time plus a hash chain walk
 * and two scans of fixed 16-entry tables.
 *
 * One run, one action:
 *
 *   REPLAY   the shape is cached: launch its executable (decision.payload).
 *   WARMUP   the shape is new or not warm yet: run the step eagerly. Each
 *            shape gets warmup_runs such runs of its own, counted in a
 *            small table of warm-up records (CGR__SHAPES_MAX_PENDING, the
 *            least recently seen is recycled when full, and that shape
 *            then starts over). decision.pending names the record, so the
 *            runtime can keep per-shape warm-up state (the scratch trace)
 *            beside it; warmup_run 1 means "fresh record: reset it".
 *   CAPTURE  warm-up is done: capture now, then call exactly one of
 *            cgr__shapes_capture_done(), _capture_failed() or
 *            _capture_cancel() before the next decide(). decision.payload
 *            is an executable offered for cudaGraphExecUpdate (see
 *            "Update in place"), or NULL: instantiate.
 *   EAGER    run eagerly, for a reason: the churn guard is tripped and the
 *            shape is not cached; the shape's capture failed before; or its
 *            graph was larger than the cache's byte budget. decision.text
 *            holds the kept message.
 *
 * Update in place. A capture is offered one executable to update instead
 * of instantiating: the spare when the manager holds one (keep_spare: the
 * first executable an insert evicts is kept back instead of freed, outside
 * the byte budget), otherwise the least recently used cache entry when the
 * cache is full by count (the insert would evict it anyway). The runtime
 * tries cudaGraphExecUpdate on it:
 *  - success: capture_done(updated = 1, payload = the offered payload).
 *    The offered entry leaves the cache (counted as an eviction, its
 *    payload not handed back: it now holds the new shape).
 *  - failure: cgr__shapes_update_failed(reason, text) counts the
 *    cudaGraphExecUpdateResult and hands the offered executable back at
 *    once for freeing (taken out of the cache or the spare; CUDA says a
 *    failed update is "not performed", but nothing is gained by trusting
 *    an executable that was just refused). Then instantiate and
 *    capture_done(updated = 0).
 *  - not tried: capture_done(updated = 0); the offer stays where it was.
 *
 * Payload ownership. A payload given to capture_done() belongs to the
 * manager until it comes back through an outcome's freed list, an
 * update_failed() victim or cgr__shapes_drain(); each payload comes back
 * exactly once (an updated payload continues as the new shape's).
 *
 * Churn guard. Every decide() is one step of churn.h's guard. A "new
 * shape" is a cache miss that is neither known to run eagerly for good nor
 * already in a warm-up record: a shape warming up over several runs counts
 * once. While the guard is tripped, shapes that miss the cache run EAGER
 * (no warm-up, no capture); cached shapes keep replaying, since a replay
 * costs less than an eager run and the guard exists to stop captures.
 * When it trips, the manager writes one warning naming the dims that
 * changed between the new shapes that tripped it (cgr__shapes_warning());
 * the tripping decision has churn_tripped set so the runtime logs it once.
 *
 * Not thread-safe: the runtime calls it under its lock. Failed calls
 * change nothing, counters included.
 */
#ifndef CGR_SHAPES_H
#define CGR_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "cache.h"
#include "cgr/cgr.h"
#include "churn.h"
#include "signature.h"

/** Warm-up records: shapes seen but not captured yet (LRU-recycled). */
#define CGR__SHAPES_MAX_PENDING 16u
/** Shapes that run eagerly for good: capture failed or too large (LRU-recycled). */
#define CGR__SHAPES_MAX_NOGRAPH 16u
/** Kept messages (capture errors, update errors) including the NUL; longer ones end in "...". */
#define CGR__SHAPES_TEXT_MAX 256u
/** The churn warning including the NUL. */
#define CGR__SHAPES_WARNING_MAX 512u
/** Longest tensor name kept for messages (as for cgr_tensor_desc names). */
#define CGR__SHAPES_NAME_MAX 63u
/** Update failures are counted per cudaGraphExecUpdateResult 0..14; 15 counts the others. */
#define CGR__SHAPES_UPDATE_REASONS 16u
/** Defaults written by cgr__shapes_config_init(). */
#define CGR__SHAPES_DEFAULT_WARMUP 2u
#define CGR__SHAPES_DEFAULT_ENTRIES 16u
#define CGR__SHAPES_DEFAULT_CHURN_K 8u
#define CGR__SHAPES_DEFAULT_CHURN_W 64u
#define CGR__SHAPES_DEFAULT_CHURN_S 32u

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
    CGR__SHAPES_REASON_TOO_LARGE = 3,      /**< its graph exceeded the cache's byte budget */
    CGR__SHAPES_REASONS = 4
} cgr__shapes_reason;

/** Where the executable offered for update in place comes from. */
typedef enum cgr__shapes_source {
    CGR__SHAPES_FROM_NONE = 0,  /**< nothing offered: instantiate */
    CGR__SHAPES_FROM_SPARE = 1, /**< the spare */
    CGR__SHAPES_FROM_LRU = 2    /**< the least recently used cache entry */
} cgr__shapes_source;

/** One dynamic dim, as the step declares it. */
typedef struct cgr__shapes_dim_desc {
    const char *name;           /**< tensor name for messages; NULL prints "d<i>";
                                     at most CGR__SHAPES_NAME_MAX characters */
    int tensor;                 /**< the tensor's index, 0..CGR_MAX_TENSORS-1 */
    int axis;                   /**< 0..CGR_MAX_RANK-1; (tensor, axis) pairs are unique */
    cgr__bucket_policy policy;  /**< from cgr__bucket_init_list() or _pow2() */
} cgr__shapes_dim_desc;

/** Settings of one manager. Start from cgr__shapes_config_init(). */
typedef struct cgr__shapes_config {
    uint64_t step;                      /**< the step's id (goes into every signature) */
    const cgr__shapes_dim_desc *dims;   /**< n_dims entries; may be NULL when n_dims is 0 */
    uint32_t n_dims;                    /**< 0..CGR__SIG_MAX_DIMS */
    uint32_t warmup_runs;               /**< eager runs per new shape, 1..CGR_MAX_WARMUP */
    uint32_t max_entries;               /**< cache count budget, 1..CGR__CACHE_MAX_ENTRIES */
    size_t max_bytes;                   /**< cache byte budget; 0: none */
    uint32_t churn_k;                   /**< K new shapes ... (0: guard off) */
    uint64_t churn_window;              /**< ... within W runs trip the guard */
    uint64_t churn_stable;              /**< S runs without a new shape recover */
    int keep_spare;                     /**< 0 or 1: keep one evicted executable for updates */
} cgr__shapes_config;

/** A shape that runs eagerly for good, and why. */
typedef struct cgr__shapes_nograph {
    cgr__sig sig;
    cgr__shapes_reason reason;       /**< CAPTURE_FAILED or TOO_LARGE */
    uint32_t live;
    uint64_t runs;                   /**< EAGER decisions for it since it was recorded */
    uint64_t last_use;               /**< manager run number of the latest */
    char text[CGR__SHAPES_TEXT_MAX]; /**< the capture error, or the sizes */
} cgr__shapes_nograph;

/** A shape seen but not captured yet. */
typedef struct cgr__shapes_pending {
    cgr__sig sig;
    uint32_t live;
    uint32_t warmups;   /**< warm-up runs done, 0..warmup_runs */
    uint64_t last_use;  /**< manager run number of the latest decision for it */
} cgr__shapes_pending;

/** Everything the manager counts; from cgr__shapes_get_stats(). */
typedef struct cgr__shapes_stats {
    uint64_t runs;              /**< successful decide() calls = hits + misses */
    uint64_t hits;              /**< REPLAY decisions (cache hits) */
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
    uint64_t evictions;         /**< cache entries pushed out by inserts, plus entries
                                     taken by an update or a failed one */
    uint64_t too_large;         /**< captures refused by the byte budget */
    uint64_t eager_runs;
    uint64_t eager_by_reason[CGR__SHAPES_REASONS]; /**< [0] stays 0 */
    uint64_t churn_activations;
    uint64_t churn_recoveries;
    double capture_us;          /**< stream capture time, summed over captures */
    double instantiate_us;      /**< instantiate (+ upload), over captures not updated */
    double update_us;           /**< cudaGraphExecUpdate (+ upload), over updates */
    uint32_t entries;           /**< shapes cached now */
    uint32_t peak_entries;
    size_t bytes;               /**< their bytes now */
    size_t peak_bytes;
    uint32_t spare;             /**< 1 while a spare is held */
    size_t spare_bytes;
    uint32_t pending;           /**< live warm-up records */
    uint32_t nograph;           /**< live records of shapes that run eagerly for good */
} cgr__shapes_stats;

/** What decide() says for one run. Pointers stay valid until the next call. */
typedef struct cgr__shapes_decision {
    cgr__shapes_action action;
    cgr__shapes_reason reason;  /**< EAGER: why; NONE otherwise */
    const char *text;           /**< EAGER: the kept message or the churn warning; "" otherwise */
    void *payload;              /**< REPLAY: the cached payload. CAPTURE: the executable
                                     offered for update in place, NULL to instantiate */
    cgr__shapes_source source;  /**< CAPTURE: where payload comes from */
    uint32_t cache_index;       /**< REPLAY: the cache entry; CGR__CACHE_NONE otherwise */
    uint32_t pending;           /**< WARMUP, CAPTURE: the shape's warm-up record,
                                     0..CGR__SHAPES_MAX_PENDING-1; CGR__CACHE_NONE otherwise */
    uint32_t warmup_run;        /**< WARMUP: 1..warmup_runs (1: reset per-shape state) */
    int new_shape;              /**< 1 when the churn guard saw this shape as new */
    int churn_tripped;          /**< 1 on the run that tripped the guard: log the warning */
    int churn_recovered;        /**< 1 on the run the guard recovered on */
    const cgr__sig *sig;        /**< the signature; sig->dims are the bucketed dims */
    const int64_t *dims;        /**< bucketed dims, n_dims of them (pad inputs to these) */
    const int64_t *true_dims;   /**< the true dims as given (for the device copy) */
} cgr__shapes_decision;

/** What the runtime reports after a successful capture. */
typedef struct cgr__shapes_capture_result {
    void *payload;          /**< the shape's executable(s); not NULL. When updated:
                                 the payload that was offered */
    size_t bytes;           /**< what it costs against the byte budget */
    int updated;            /**< 1: updated in place from the offer; 0: instantiated */
    double capture_us;      /**< stream capture, >= 0 */
    double instantiate_us;  /**< when not updated, >= 0 */
    double update_us;       /**< when updated, >= 0 */
} cgr__shapes_capture_result;

/** What capture_done() did. Pointers stay valid until the next call. */
typedef struct cgr__shapes_outcome {
    int cached;                       /**< 1: inserted; 0: refused (too large), payload freed */
    uint32_t cache_index;             /**< the new entry, or CGR__CACHE_NONE */
    const cgr__cache_evicted *freed;  /**< n_freed payloads for the caller to free */
    uint32_t n_freed;
} cgr__shapes_outcome;

/** A declared dim, its name copied into the manager. */
typedef struct cgr__shapes_dim {
    cgr__shapes_dim_desc desc;               /**< desc.name points at name below, or NULL */
    char name[CGR__SHAPES_NAME_MAX + 1];
} cgr__shapes_dim;

/** The manager. Read it through the calls below; do not write. */
typedef struct cgr__shapes {
    uint64_t step;
    uint32_t n_dims;
    uint32_t warmup_runs;
    int keep_spare;
    uint64_t runs;                        /**< decide() calls so far (the LRU clock of the tables) */
    cgr__shapes_dim *dims;                /**< n_dims (allocated) */
    cgr__sig_dim_name *names;             /**< n_dims, for cgr__sig_format() */
    int64_t *true_dims;                   /**< n_dims: the latest decide()'s */
    int64_t *last_new;                    /**< n_dims: bucketed dims of the latest new shape */
    cgr__shapes_pending *pending;         /**< CGR__SHAPES_MAX_PENDING */
    cgr__shapes_nograph *nograph;         /**< CGR__SHAPES_MAX_NOGRAPH */
    cgr__cache_evicted *freed;            /**< max_entries: capture_done()'s freed list */
    cgr__sig cur;                         /**< the latest decide()'s signature */
    cgr__cache cache;
    cgr__churn churn;
    /* Which dims differ from the previous new shape, per new shape (a ring). */
    uint64_t change_mask[CGR__CHURN_MAX_K][(CGR__SIG_MAX_DIMS + 63) / 64];
    uint64_t new_count;                   /**< new shapes so far (ring position) */
    /* The capture in flight, between a CAPTURE decision and its report. */
    int capturing;
    uint32_t cap_pending;
    cgr__shapes_source offer;
    void *offer_payload;
    uint32_t offer_index;                 /**< LRU offer: its cache index */
    int offer_failed;
    int has_spare;
    cgr__cache_evicted spare;             /**< the spare, as the insert that evicted it gave it */
    cgr__shapes_stats stats;              /**< own counters; cache-derived fields filled on read */
    char warning[CGR__SHAPES_WARNING_MAX];
    char update_error[CGR__SHAPES_TEXT_MAX];
} cgr__shapes;

/**
 * Defaults: no dims, warmup CGR__SHAPES_DEFAULT_WARMUP, max_entries
 * CGR__SHAPES_DEFAULT_ENTRIES, no byte budget, churn guard K/W/S =
 * CGR__SHAPES_DEFAULT_CHURN_{K,W,S}, no spare. Step 0. No-op for NULL.
 */
void cgr__shapes_config_init(cgr__shapes_config *cfg);

/**
 * A manager for cfg (copied, names included). CGR_STATUS_INVALID_ARGUMENT
 * when m or cfg is NULL, n_dims is above CGR__SIG_MAX_DIMS, dims is NULL
 * with n_dims > 0, a dim has a tensor or axis out of range, a (tensor,
 * axis) pair repeats, a policy is not initialized, a name is too long,
 * warmup_runs is outside 1..CGR_MAX_WARMUP, keep_spare is not 0 or 1, or
 * the cache or churn settings are refused by cgr__cache_init() /
 * cgr__churn_init(); CGR_STATUS_OUT_OF_MEMORY when the tables cannot be
 * allocated. *m is left unchanged on failure.
 */
cgr_status cgr__shapes_init(cgr__shapes *m, const cgr__shapes_config *cfg);

/**
 * Frees the tables and zeroes *m. Payloads still held (cache entries, the
 * spare) are not touched: drain them first. NULL and a zeroed manager are
 * no-ops; destroying twice is safe.
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
 * that run would not replay (the shape is not cached, or a capture is not
 * reported yet) or the arguments are bad. bucketed (optional, n_dims
 * values) gets the bucketed dims when the payload is not NULL. The
 * runtime uses it to launch a run ahead (replay/arm.c) and decides when
 * the run is launched for real.
 */
void *cgr__shapes_peek(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed);

/**
 * The bucketed dims of true_dims (n_dims values into bucketed), nothing
 * else: no signature, no lookup. CGR_STATUS_INVALID_ARGUMENT for bad
 * arguments or dims outside every bucket.
 */
cgr_status cgr__shapes_bucket(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed);

/**
 * The capture from the latest CAPTURE decision succeeded. Inserts the
 * payload (evicting least recently used entries, handed back in
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
 * in the last slot), text says more (kept, bounded; NULL is ""). *victim
 * receives the offered payload, taken out of the cache or the spare, for
 * the caller to free; then instantiate and call capture_done(updated = 0).
 * CGR_STATUS_WRONG_STATE when no capture is in flight, nothing was
 * offered or its failure was already reported; CGR_STATUS_INVALID_ARGUMENT
 * for NULLs.
 */
cgr_status cgr__shapes_update_failed(cgr__shapes *m, int reason, const char *text,
                                     cgr__cache_evicted *victim);

/**
 * Hands back one payload still held: cache entries, least recently used
 * first, then the spare. For tearing down; the manager stays usable.
 * CGR_STATUS_WRONG_STATE when nothing is held or a capture is in flight,
 * CGR_STATUS_INVALID_ARGUMENT for NULLs.
 */
cgr_status cgr__shapes_drain(cgr__shapes *m, cgr__cache_evicted *out);

/** All counters (cache-derived ones included). CGR_STATUS_INVALID_ARGUMENT for NULLs. */
cgr_status cgr__shapes_get_stats(const cgr__shapes *m, cgr__shapes_stats *out);

/**
 * The cache, for per-signature counters: iterate with cgr__cache_first()/
 * _next() and read each entry's hits (replays) and last_use (cache tick).
 * NULL for NULL.
 */
const cgr__cache *cgr__shapes_cache(const cgr__shapes *m);

/** Record i of the shapes that run eagerly for good, or NULL when not live. */
const cgr__shapes_nograph *cgr__shapes_nograph_at(const cgr__shapes *m, uint32_t i);

/** The latest churn warning, "" before the first trip (and for NULL). */
const char *cgr__shapes_warning(const cgr__shapes *m);

/** The latest update failure's text, "" before the first (and for NULL). */
const char *cgr__shapes_update_error(const cgr__shapes *m);

/** "replay", "warmup", "capture", "eager"; "invalid" otherwise. */
const char *cgr__shapes_action_name(cgr__shapes_action a);

/** "none", "churn guard", "capture failed", "too large"; "invalid" otherwise. */
const char *cgr__shapes_reason_name(cgr__shapes_reason r);

#endif
