/*
 * Starting data-parallel ranks and sharing NCCL's unique id among them
 * (docs/multigpu.md, "Launching").
 *
 * One host: ddp_launch_local() forks one process per GPU before this
 * process has made any CUDA call (CUDA does not survive a fork), rank 0
 * makes the unique id and writes it into one pipe per peer.
 *
 * Several hosts, torchrun style: each process is started with RANK,
 * WORLD_SIZE and LOCAL_RANK in its environment (LOCAL_RANK picks the GPU)
 * and gets the id by one of, in this order:
 * - CGR_NCCL_ID: the id as 2*NCCL_UNIQUE_ID_BYTES hex digits, made by a
 *   process that stays alive while the ranks start (it hosts NCCL's
 *   bootstrap root);
 * - CGR_NCCL_ID_FILE: a path on a file system every host sees; rank 0
 *   makes the id and writes it there atomically (a temporary file, then
 *   rename), the others poll for it with a timeout, and rank 0 removes it
 *   once the communicator exists (use a new path per job: a stale file
 *   from an earlier job would be read as this one's);
 * - NCCL_COMM_ID=host:port (NCCL's own variable): every rank derives the
 *   same id locally and rank 0 listens at that address.
 */
#ifndef BENCH_DDP_BOOT_H
#define BENCH_DDP_BOOT_H

#include <stddef.h>

#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One rank's place in the job. */
typedef struct ddp_rank_info {
    int rank, world;
    int local_rank;        /**< the GPU this rank uses */
    const char *id_file;   /**< CGR_NCCL_ID_FILE in use (rank 0 removes it), or NULL */
} ddp_rank_info;

/**
 * A rank's body: it runs in the rank's own process, which has made no CUDA
 * call yet, with the communicator's unique id. Its return value is the
 * process's exit status.
 */
typedef int (*ddp_rank_fn)(const ddp_rank_info *who, const ncclUniqueId *id, void *user);

/**
 * CUDA devices visible to this host, counted in a forked child so that
 * this process still makes no CUDA call. Returns the count (0 without a
 * usable driver or GPU), or -1 when the probe itself failed.
 */
int ddp_probe_gpus(void);

/**
 * Forks nproc ranks (rank = local_rank = i) that run fn, and waits for
 * them. When one fails, or timeout_s (0: none) passes, the others are
 * killed, so nothing is left hanging. Returns 0 when every rank exited
 * with 0, otherwise the first failing rank's exit status (or 128 + its
 * signal); -1 when the ranks could not be started.
 */
int ddp_launch_local(int nproc, unsigned timeout_s, ddp_rank_fn fn, void *user);

/**
 * RANK, WORLD_SIZE and LOCAL_RANK (default: RANK) from the environment.
 * Returns 1 when RANK and WORLD_SIZE are set and valid, 0 when RANK is not
 * set, -1 (with a message on stderr) when they are invalid.
 */
int ddp_rank_from_env(ddp_rank_info *who);

/**
 * Runs fn as the rank the environment describes, after getting the id as
 * the file comment says (waiting up to timeout_s for CGR_NCCL_ID_FILE).
 * Returns fn's result, or 1 when the id could not be had.
 */
int ddp_run_from_env(const ddp_rank_info *who, unsigned timeout_s, ddp_rank_fn fn, void *user);

/** Rank 0 of an id-file launch: removes the file once the communicator exists. */
void ddp_id_done(const ddp_rank_info *who);

#ifdef __cplusplus
}
#endif

#endif
