/*
 * W-chain: N launches of a tiny elementwise kernel
 * on 4096 floats. The launcher, the host model of its output and the raw
 * CUDA graph of it, shared by the chain and staging suites.
 */
#ifndef BENCH_CHAIN_H
#define BENCH_CHAIN_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CHAIN_ELEMS 4096
#define CHAIN_BLOCKS 16
#define CHAIN_THREADS 256
/* |a| < 1 with fixed point a*1+b = 1 keeps x bounded however long it runs. */
#define CHAIN_A 0.999f
#define CHAIN_B 0.001f

/* One kernel of the chain (chain_kernels.cu); returns the launch error. */
cudaError_t chain_kernel_launch(float *x, const float *in, size_t n_in, float *out, int pdl,
                                cudaStream_t s);

/* One step of the chain: what every mode runs. */
typedef struct chain_args {
    float *x;          /* CHAIN_ELEMS floats of persistent state */
    int n_kernels;     /* N >= 1 */
    const float *in;   /* read by the first kernel; NULL for none */
    size_t n_in;       /* floats in `in` */
    float *out;        /* the last kernel writes x[0] here; NULL for none */
    int pdl;           /* launch with programmatic dependent launch */
} chain_args;

/* Enqueues the N kernels of one step on `s`. */
cudaError_t chain_enqueue(const chain_args *a, cudaStream_t s);

/*
 * Host model of x[0] after one step that started from x0 (in0: in[0] of
 * the step's input; pass has_in = 0 for a step without input). Bit-exact
 * with the GPU, see chain_kernels.cu.
 */
float chain_model(float x0, int has_in, float in0, int n_kernels);

/* Deterministic, non-zero initial state of x (host copy). */
void chain_init_state(float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif
