#include "neighbour.h"

#include <string.h>

#include "common.h"
#include "kernels.h"

enum { NEIGHBOUR_LEN = 4096 };

static void *neighbour_main(void *arg)
{
    neighbour *n = arg;
    while (!__atomic_load_n(&n->stop, __ATOMIC_ACQUIRE)) {
        cudaError_t e = tk_affine(n->y, n->x, NEIGHBOUR_LEN, n->s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(n->s);
        if (e != cudaSuccess) {
            n->error = e;
            break;
        }
        n->rounds++;
    }
    return NULL;
}

void neighbour_start(neighbour *n)
{
    static float x[NEIGHBOUR_LEN];
    rng r = {77};
    memset(n, 0, sizeof *n);
    rng_fill(&r, x, NEIGHBOUR_LEN);
    CUDA_OK(cudaMalloc((void **)&n->x, sizeof x));
    CUDA_OK(cudaMalloc((void **)&n->y, sizeof x));
    CUDA_OK(cudaMemcpy(n->x, x, sizeof x, cudaMemcpyHostToDevice));
    CUDA_OK(cudaStreamCreateWithFlags(&n->s, cudaStreamNonBlocking));
    ASSERT(pthread_create(&n->thread, NULL, neighbour_main, n) == 0);
}

long neighbour_stop(neighbour *n)
{
    __atomic_store_n(&n->stop, 1, __ATOMIC_RELEASE);
    ASSERT(pthread_join(n->thread, NULL) == 0);
    if (n->error != cudaSuccess)
        TEST_FAIL_("the neighbour thread's CUDA call failed after %ld rounds: %s", n->rounds,
                   cudaGetErrorString(n->error));
    ASSERT(n->rounds > 0);
    /* Its last output is 2 x + 1 of its input: the kernels ran, not just returned. */
    static float x[NEIGHBOUR_LEN], y[NEIGHBOUR_LEN];
    CUDA_OK(cudaMemcpy(x, n->x, sizeof x, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(y, n->y, sizeof y, cudaMemcpyDeviceToHost));
    check_affine(x, y, NEIGHBOUR_LEN, 1, "the neighbour's last output");
    CUDA_OK(cudaStreamDestroy(n->s));
    CUDA_OK(cudaFree(n->x));
    CUDA_OK(cudaFree(n->y));
    return n->rounds;
}
