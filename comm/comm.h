/*
 * Internal state of a runtime's NCCL attachment (cgr_nccl.h), shared by
 * comm.c (attach, detach, the context call), agree.c (the capture
 * agreement) and wait.c (bounded waits on peers).
 *
 * Why a private communicator. The agreement after a capture is an eager
 * collective, and the user's communicator also carries the collectives
 * captured into graphs and those of eager warm-up runs. NCCL allows
 * captured and uncaptured operations on one communicator, but each
 * operation's captured-or-not must be the same on every rank, and any
 * interleaving of ours with the user's own eager collectives would have
 * to match across ranks too. On a communicator of its own cgr's
 * operations can never pair with the user's. It is also non-blocking
 * (ncclConfig_t.blocking = 0), whatever the user's is, so every wait on
 * it is bounded and ends in ncclCommAbort of that communicator alone,
 * never of the user's.
 */
#ifndef CGR_COMM_H
#define CGR_COMM_H

#include "cgr_config.h"
#include "core.h"

/* What a capture's agreement compares across the ranks, and the cost it settles. */
typedef struct cgr__capture_facts {
    uint64_t run;   /* the step's shape-table decisions so far, this run's included */
    uint64_t shape; /* the run's bucketed dims, hashed */
    /* In: this rank's graph's cost against shape_cache_bytes (0: no graph to cache). Out,
     * once agreed: the largest of all ranks', which every rank charges alike. */
    size_t bytes;
} cgr__capture_facts;

/*
 * Called by replay/dispatch.c after every capture attempt of a step, with the
 * attempt's status (CGR_STATUS_OK when the graph was made). With an NCCL
 * communicator attached, every rank learns whether all ranks captured and
 * the result is the same on all of them, so that no rank launches a graph
 * whose collectives a peer will never join. Without one it returns local
 * and leaves f as it is.
 */
cgr_status cgr__comm_after_capture(cgr_runtime *rt, cgr_step *s, cgr_status local,
                                   cgr__capture_facts *f);
/* Releases rt's NCCL attachment, if any (the user's communicator is left alone);
 * called by cgr_runtime_destroy once the steps and their graphs are gone. */
void cgr__comm_release(cgr_runtime *rt);

#if CGR_HAVE_NCCL
/*
 * NCCL is loaded at attach time (lib/base/dynload.h), so every call goes
 * through cgr__nccl(), the table of its functions: cgr__nccl()->ncclCommSplit.
 */
#include "dynload.h"
#include "verdict.h" /* CGR__AGREE_WORDS, the size of a rank's record */

struct cgr__comm {
    ncclComm_t user;           /* the application's; never destroyed by cgr */
    /*
     * cgr's own, split off `user` at attach time. NCCL writes it from its
     * own thread when the user's communicator is non-blocking, so it lives
     * here, on the heap, and a split that times out leaves this struct
     * allocated (a small leak) rather than let NCCL write freed memory.
     * NULL once aborted after a failed agreement (agree.c): later
     * agreements then fail at once, saying broken_why.
     */
    ncclComm_t priv;
    int rank, world, device;
    unsigned timeout_ms;
    char broken_why[300];
    cudaStream_t stream;       /* priv's operations (never captured) */
    cudaEvent_t done;          /* end of the last exchange */
    int64_t *dev;              /* [WORDS] this rank's record, then [world][WORDS] gathered */
    int64_t *host;             /* pinned, the same layout */
    uint64_t agreements;       /* capture agreements so far (the same on every rank) */
};

/* Records a failed NCCL call (with NCCL's last-error text) and returns CGR_STATUS_COMM_ERROR. */
cgr_status cgr__nccl_fail(ncclResult_t r, const char *expr);

#define CGR_NCCL_TRY(expr)                                                                 \
    do {                                                                                   \
        ncclResult_t r_ = (expr);                                                          \
        if (r_ != ncclSuccess && r_ != ncclInProgress)                                     \
            return CGR__FAILED(cgr__nccl_fail(r_, #expr));                                 \
    } while (0)

#define CGR_NCCL_TRY_GOTO(expr, st, label)                                                 \
    do {                                                                                   \
        ncclResult_t r_ = (expr);                                                          \
        if (r_ != ncclSuccess && r_ != ncclInProgress) {                                   \
            (st) = CGR__FAILED(cgr__nccl_fail(r_, #expr));                                 \
            goto label;                                                                    \
        }                                                                                  \
    } while (0)

/* ---- wait.c ---- */
/* One poll interval: yields at first, sleeps 50 us once *spins passes a few thousand. */
void cgr__comm_pause(unsigned *spins);
/* Deadline timeout_ms from now, in cgr__now_us() time. */
double cgr__comm_deadline(unsigned timeout_ms);
/*
 * Waits, watching a non-blocking communicator for errors, until `done`
 * completes or, with done NULL, until the communicator leaves
 * ncclInProgress (an init, split, finalize or enqueue completed); fails on
 * an NCCL error or past the deadline. `what` names the operation in
 * messages.
 */
cgr_status cgr__comm_wait(ncclComm_t comm, cudaEvent_t done, double deadline,
                          unsigned timeout_ms, const char *what);

/* ---- agree.c ---- */
/* The attach-time agreement: the ranks' warm-up counts and capture settings must match. */
cgr_status cgr__comm_agree_attach(cgr_runtime *rt, struct cgr__comm *c);

#endif /* CGR_HAVE_NCCL */

#endif
