/*
 * A thread that keeps making CUDA calls of its own (tk_affine on its own
 * stream, then a synchronize, round after round) while a test does
 * something to the process as a whole, such as detaching CUPTI.
 */
#ifndef CGR_TEST_GPU_NEIGHBOUR_H
#define CGR_TEST_GPU_NEIGHBOUR_H

#include <pthread.h>

#include <cuda_runtime_api.h>

typedef struct neighbour {
    float *x, *y;
    cudaStream_t s;
    pthread_t thread;
    int stop;          /* atomic: set by neighbour_stop */
    long rounds;       /* rounds of launch + synchronize that succeeded */
    cudaError_t error; /* the first failure, or cudaSuccess */
} neighbour;

/* Starts the thread on fresh random inputs. */
void neighbour_start(neighbour *n);
/*
 * Stops and joins it and frees what it used; fails the test when one of
 * its calls failed or it never completed a round. Returns its rounds.
 */
long neighbour_stop(neighbour *n);

#endif
