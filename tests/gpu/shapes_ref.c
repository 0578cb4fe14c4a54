/* The dynamic-shape tests' true-size reference (shapes_ref.h). */
#include "shapes_ref.h"

#include "common.h"
#include "shapes_kernels.h"

void shapes_ref_init(shapes_ref *r, const float *W, const float *b, int max_rows, int K, int M)
{
    r->K = K;
    r->M = M;
    CUDA_OK(cudaStreamCreateWithFlags(&r->st, cudaStreamNonBlocking));
    CUDA_OK(cudaMalloc((void **)&r->W, sizeof(float) * K * M));
    CUDA_OK(cudaMalloc((void **)&r->b, sizeof(float) * M));
    CUDA_OK(cudaMalloc((void **)&r->x, sizeof(float) * max_rows * K));
    CUDA_OK(cudaMalloc((void **)&r->h, sizeof(float) * max_rows * M));
    CUDA_OK(cudaMalloc((void **)&r->y, sizeof(float) * max_rows * M));
    CUDA_OK(cudaMalloc((void **)&r->t, sizeof(int64_t)));
    CUDA_OK(cudaMemcpy(r->W, W, sizeof(float) * K * M, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(r->b, b, sizeof(float) * M, cudaMemcpyHostToDevice));
}

void shapes_ref_free(shapes_ref *r)
{
    CUDA_OK(cudaFree(r->W));
    CUDA_OK(cudaFree(r->b));
    CUDA_OK(cudaFree(r->x));
    CUDA_OK(cudaFree(r->h));
    CUDA_OK(cudaFree(r->y));
    CUDA_OK(cudaFree(r->t));
    CUDA_OK(cudaStreamDestroy(r->st));
}

void shapes_ref_run(shapes_ref *r, const float *x, int B, float *y)
{
    const int K = r->K, M = r->M;
    int64_t t = B;
    CUDA_OK(cudaMemcpyAsync(r->x, x, sizeof(float) * B * K, cudaMemcpyHostToDevice, r->st));
    CUDA_OK(cudaMemcpyAsync(r->t, &t, sizeof t, cudaMemcpyHostToDevice, r->st));
    CUDA_OK(shk_linear(r->h, r->x, r->W, r->b, B, K, M, r->st));
    CUDA_OK(shk_center(r->y, r->h, B, M, r->t, r->st));
    CUDA_OK(cudaMemcpyAsync(y, r->y, sizeof(float) * B * M, cudaMemcpyDeviceToHost, r->st));
    CUDA_OK(cudaStreamSynchronize(r->st));
}
