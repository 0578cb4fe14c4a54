/*
 * The step of an existing program, as it was before cgr: a function that
 * enqueues its kernels on the stream it is given (legacy.cu). Nothing in it
 * knows about cgr, and wrap_step.c calls it unchanged.
 */
#ifndef EXAMPLE_LEGACY_H
#define EXAMPLE_LEGACY_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * For x[rows][cols]: t = tanh(x * scale) elementwise (scale[cols]), then
 * y[r] = sum over c of t[r][c]^2 / (1 + |t[r][c]|), summed in order of c.
 * t is a caller-provided temporary of rows * cols floats.
 */
cudaError_t legacy_features(const float *x, const float *scale, float *t, float *y, int rows,
                            int cols, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
