/*
 * W-cnn float64 CPU reference of the whole forward pass (pure C, no CUDA).
 * Every operation is carried out in double from the fp32 parameters and
 * inputs, so the GPU result differs from it only by the GPU's fp32 rounding.
 */
#ifndef BENCH_CNN_REF_H
#define BENCH_CNN_REF_H

#include "cnn.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * logits[B][CNN_CLASSES] = the W-cnn forward pass of x[B][3][64][64] with the
 * parameters in the flat layout of cnn_layout_init(). Returns 0, or -1 when
 * B < 1, a pointer is NULL or the host runs out of memory (it works one
 * sample at a time in about 4 MiB of doubles).
 * Cost: about 0.9 G multiply-adds per sample (well under a second).
 */
int cnn_ref_forward(int B, const float *params, const float *x, double *logits);

#ifdef __cplusplus
}
#endif

#endif
