/*
 * Churn guard with hysteresis (pure C, no CUDA; docs/shapes.md, "Churn
 * guard"). Capturing costs far more than one eager run, so a step whose
 * shapes keep changing is better run eagerly: K new shapes within W steps
 * trip the guard (eager mode), S steps in a row without one recover it
 * (graph mode), and the history of new shapes is forgotten at each switch.
 * What counts as a new shape is the caller's choice. One step is one
 * cgr__churn_observe() call, O(1), allocating nothing.
 */
#ifndef CGR_CHURN_H
#define CGR_CHURN_H

#include <stdint.h>

#include "cgr/cgr.h"

/** Largest K accepted (the ring of recent new shapes is this long). */
#define CGR__CHURN_MAX_K 64u

/** Cumulative counters. */
typedef struct cgr__churn_counters {
    uint64_t steps;        /**< observe calls; also the number of the next step */
    uint64_t new_shapes;   /**< steps reported as new shapes */
    uint64_t activations;  /**< times the guard tripped */
    uint64_t recoveries;   /**< times it went back to graph mode */
} cgr__churn_counters;

typedef struct cgr__churn {
    uint32_t k;                          /**< new shapes that trip it; 0: never trips */
    uint32_t head;                       /**< next ring slot to write */
    uint32_t filled;                     /**< ring entries in use, 0..k */
    int eager;                           /**< 1 while tripped */
    uint64_t window;                     /**< W, in steps */
    uint64_t stable_needed;              /**< S, in steps */
    uint64_t stable;                     /**< consecutive steps with no new shape, while eager */
    uint64_t recent[CGR__CHURN_MAX_K];   /**< step numbers of the latest new shapes (ring) */
    cgr__churn_counters counters;
} cgr__churn;

/**
 * A guard in graph mode: k new shapes within `window` steps trip it, and
 * `stable_steps` consecutive steps without one bring it back. k = 0 turns
 * the guard off (it never trips; window and stable_steps are ignored).
 * The options were validated at the API edge, so these are asserted: g
 * is not NULL, k <= CGR__CHURN_MAX_K, and with k > 0, window >= k (k new
 * shapes, one per step at most, could not fit a shorter one) and
 * stable_steps >= 1.
 */
void cgr__churn_init(cgr__churn *g, uint32_t k, uint64_t window, uint64_t stable_steps);

/**
 * Observes one step: is_new_shape is nonzero when the step's shape was
 * new. Returns 1 when this step must run eagerly. The step that trips the
 * guard (it is eager) adds one to counters.activations, the step that
 * recovers it (it is not) one to counters.recoveries. g may not be NULL
 * (asserted).
 */
int cgr__churn_observe(cgr__churn *g, int is_new_shape);

#endif
