/**
 * @file
 * cgr with NCCL: data-parallel steps whose collectives are captured into
 * the step's graph (docs/multigpu.md).
 *
 * One process per GPU, each with its own cgr runtime on its GPU and its
 * own rank of an NCCL communicator that the application creates (cgr does
 * not bootstrap communicators). cgr_runtime_attach_nccl() hands the
 * communicator to the runtime; a step function gets it back through
 * cgr_ctx_nccl() and enqueues its collectives on cgr_ctx_stream(), like any
 * other work. Warm-up runs execute them eagerly; the capture records them
 * into the graph; every replay then runs them inside the one launch.
 *
 * What cgr adds is agreement: NCCL requires that a collective be captured
 * on all ranks or on none, and that every rank launch the graph holding it.
 * A rank whose capture fails would otherwise leave its peers' graphs
 * waiting forever for it. So after each capture of a step that used the
 * communicator (the frozen-value check's captures included), all ranks
 * exchange their capture results over a private communicator that cgr
 * splits off at attach time, with a bounded wait: either every rank
 * launches its graph, or on every rank the capture counts as failed
 * (CGR_EAGER_CAPTURE_FAILED, capture_error naming the ranks that failed)
 * and that run and the later runs of its shape execute eagerly, so the run
 * still succeeds. When the exchange itself cannot complete, the
 * capturing run returns CGR_STATUS_TIMEOUT (a peer did not join in time)
 * or CGR_STATUS_COMM_ERROR (NCCL reported an error); cgr then aborts its
 * private communicator, and every later capture that needs the peers'
 * agreement fails at once with CGR_STATUS_COMM_ERROR.
 *
 * This header needs only a C11 compiler, like cgr.h: the communicator
 * appears through the struct tag NCCL itself uses, so a cgr_nccl_comm is
 * an ncclComm_t. When cgr was built without NCCL, cgr_has_nccl() returns 0,
 * the options calls work as always, and every other call here returns
 * CGR_STATUS_NOT_SUPPORTED with a message saying so (after the checks of
 * its arguments, which are the same in both builds). libcgr does not link
 * NCCL: cgr_runtime_attach_nccl loads libnccl on its first call in the
 * process (normally the copy the program has loaded already).
 */
#ifndef CGR_NCCL_H
#define CGR_NCCL_H

#include "cgr/cgr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Same type as ncclComm_t. */
typedef struct ncclComm *cgr_nccl_comm;

/** Default bound of cgr's own waits on peers (cgr_nccl_options.timeout_ms). */
#define CGR_NCCL_DEFAULT_TIMEOUT_MS 60000u
/** Largest accepted timeout: one day. */
#define CGR_NCCL_MAX_TIMEOUT_MS 86400000u

/**
 * Options of cgr_runtime_attach_nccl(). Start from cgr_nccl_options_init();
 * struct_size follows the rule of "Versioned structs" in cgr.h.
 */
typedef struct cgr_nccl_options {
    size_t struct_size;   /**< set by cgr_nccl_options_init() */
    /**
     * How long cgr waits for its peers, in milliseconds: for the private
     * communicator at attach time and for each capture agreement. When it
     * passes, cgr aborts its private communicator (ncclCommAbort) and
     * fails the call; the runtime's later captures then fail at once
     * instead of waiting again. 1..CGR_NCCL_MAX_TIMEOUT_MS; default
     * CGR_NCCL_DEFAULT_TIMEOUT_MS. The environment variable
     * CGR_NCCL_TIMEOUT_MS, when set, overrides it. Keep it well above the
     * time ranks may drift apart (a slow first warm-up, a checkpoint).
     */
    unsigned timeout_ms;
} cgr_nccl_options;

/**
 * Writes the default options into the caller's struct of struct_size bytes,
 * as cgr_options_init_size() does. Called through cgr_nccl_options_init().
 */
CGR_API cgr_status cgr_nccl_options_init_size(cgr_nccl_options *opt, size_t struct_size);
/** Writes the default options. Fails only on NULL. */
static inline cgr_status cgr_nccl_options_init(cgr_nccl_options *opt)
{
    return cgr_nccl_options_init_size(opt, sizeof(cgr_nccl_options));
}

/**
 * 1 when this build of cgr has NCCL support. Whether libnccl can be loaded
 * is known at the first cgr_runtime_attach_nccl.
 */
CGR_API int cgr_has_nccl(void);

/**
 * Attaches `comm` (an ncclComm_t of this process's rank) to rt. A
 * collective call: every rank of comm must make it, each on its own
 * runtime, since it splits a private communicator off comm (ncclCommSplit)
 * and checks on it that the ranks' options agree. With a blocking comm the
 * split waits for all ranks like any NCCL init; with a non-blocking one
 * (ncclConfig_t.blocking = 0) it is bounded by opt->timeout_ms.
 *
 * Refused, with nothing changed:
 * - CGR_STATUS_INVALID_ARGUMENT: comm is NULL, opt or CGR_NCCL_TIMEOUT_MS
 *   is out of range, or comm's device (ncclCommCuDevice) is not rt's
 *   device;
 * - CGR_STATUS_WRONG_STATE: rt already has a communicator, a step of rt
 *   has been captured already (its graph could hold collectives that were
 *   captured without the agreement), inside a step function, or the
 *   ranks differ in an option that decides at which runs a step captures
 *   (warmup_runs, capture, frozen_check, frozen_recheck,
 *   shape_cache_entries, shape_cache_bytes, churn_shapes, churn_window,
 *   churn_stable, advanced.shape_spare): every rank must capture at the
 *   same run;
 * - CGR_STATUS_NOT_SUPPORTED: built without NCCL, libnccl cannot be loaded
 *   (the message names the files tried; CGR_NCCL_LIBRARY names the file to
 *   load), or the NCCL library is older than 2.18.
 * A failed NCCL call returns CGR_STATUS_COMM_ERROR with NCCL's message;
 * a split or check that the peers do not complete within opt->timeout_ms
 * returns CGR_STATUS_TIMEOUT.
 *
 * The communicator stays the caller's: destroy the runtime (which destroys
 * its graphs) before the communicator, since NCCL waits in ncclCommDestroy
 * until every graph holding its collectives is gone.
 */
CGR_API cgr_status cgr_runtime_attach_nccl(cgr_runtime *rt, cgr_nccl_comm comm,
                                           const cgr_nccl_options *opt);

/**
 * Releases the private communicator and forgets comm (cgr_runtime_destroy
 * does this too). Graphs captured before stay valid and keep using comm.
 * CGR_STATUS_WRONG_STATE when nothing is attached.
 */
CGR_API cgr_status cgr_runtime_detach_nccl(cgr_runtime *rt);

/**
 * This process's rank and the communicator's size, as NCCL reports them;
 * either pointer may be NULL. CGR_STATUS_WRONG_STATE when nothing is
 * attached.
 */
CGR_API cgr_status cgr_runtime_nccl_rank(const cgr_runtime *rt, int *rank, int *world);

/**
 * Inside a step function: the attached communicator. Enqueue collectives
 * on cgr_ctx_stream(ctx) only, the same ones in the same order on every
 * rank and in every run. Calling this marks the step as one that uses the
 * communicator: its captures are then agreed on by all ranks (a step that
 * never calls it is captured without asking the peers, so steps that only
 * some ranks run stay possible). CGR_STATUS_WRONG_STATE when nothing is
 * attached; CGR_STATUS_INVALID_ARGUMENT in an armable step
 * (cgr_step_desc.armable), whose released or timed-out armed runs still
 * run once on one rank alone.
 */
CGR_API cgr_status cgr_ctx_nccl(cgr_ctx *ctx, cgr_nccl_comm *out);

#ifdef __cplusplus
}
#endif

#endif /* CGR_NCCL_H */
