/*
 * The reference of the dynamic-shape tests (test_shapes, test_arm): the
 * step's kernels (shapes_kernels.cu) run at exactly the true batch on a
 * plain stream, outside cgr, so no bucket and no padding. Their per-row
 * arithmetic does not depend on the launch size, so a graphed run at the
 * bucket must match it bit for bit. Failures end the test (CUDA_OK).
 */
#ifndef CGR_TEST_SHAPES_REF_H
#define CGR_TEST_SHAPES_REF_H

#include <stdint.h>

#include <cuda_runtime_api.h>

typedef struct shapes_ref {
    cudaStream_t st;
    float *W, *b, *x, *h, *y;
    int64_t *t;
    int K, M;
} shapes_ref;

/* W [K][M] and b [M] are copied; inputs up to max_rows rows. */
void shapes_ref_init(shapes_ref *r, const float *W, const float *b, int max_rows, int K, int M);
void shapes_ref_free(shapes_ref *r);
/* y [B][M] = the centered linear layer of x [B][K] over exactly B rows. */
void shapes_ref_run(shapes_ref *r, const float *x, int B, float *y);

#endif
