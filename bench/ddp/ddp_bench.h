/* cgr-bench's ddp suite (ddp_bench.c). */
#ifndef BENCH_DDP_BENCH_H
#define BENCH_DDP_BENCH_H

struct bench_config;

/*
 * Runs W-ddp on nproc GPUs of this host (forking one process per GPU), or,
 * when RANK is set in the environment, as that one rank of a larger job
 * (boot.h). Call it before this process makes any CUDA call. Returns the
 * exit status: 0 pass, 1 a failure, 2 not enough usable GPUs or no NCCL.
 */
int ddp_suite(const struct bench_config *cfg, int nproc);

#endif
