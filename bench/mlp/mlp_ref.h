/*
 * W-mlp reference in double precision, on the CPU, for the tests: the
 * kernels' building blocks and a whole training step (forward, loss,
 * backward, AdamW) starting from the same float parameters as the GPU.
 * Layouts are the GPU's (mlp.h, mlp_kernels.h). Slow and simple on purpose.
 */
#ifndef BENCH_MLP_REF_H
#define BENCH_MLP_REF_H

#include <stddef.h>

#include "mlp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- building blocks ------------------------------------------------------- */

/**
 * Softmax cross-entropy over logits [B][C]: dlogits = (softmax - onehot)/B,
 * row_loss[b] = -log softmax[b][label]; returns the mean. A label outside
 * [0, C) gives that row a NaN loss and a zero dlogits row (the kernel's
 * contract), so the mean is NaN.
 */
double mlp_ref_softmax_xent(const double *logits, const int *labels, int B, int C,
                            double *dlogits, double *row_loss);

/**
 * dx[b][i] = sum_o dy[b][o] W[o][i], zeroed where mask (if not NULL,
 * [B][in]) is 0. dx_abs (if not NULL) receives sum_o |dy[b][o] W[o][i]|,
 * the scale of dx's rounding error.
 */
void mlp_ref_gemv_bwd(double *dx, double *dx_abs, const double *dy, const double *W,
                      const unsigned char *mask, int B, int out, int in);

/**
 * dW[o][i] = sum_b dy[b][o] x[b][i] and db[o] = sum_b dy[b][o]; the _abs
 * arrays (each may be NULL, as may db) receive the sums of |terms|.
 */
void mlp_ref_outer(double *dW, double *dW_abs, double *db, double *db_abs, const double *dy,
                   const double *x, int B, int out, int in);

/**
 * AdamW, PyTorch semantics (decoupled weight decay), step number t >= 1:
 * p -= lr*wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 * p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps).
 */
void mlp_ref_adamw(double *p, const double *g, double *m, double *v, size_t n, long t, double lr,
                   double b1, double b2, double eps, double wd);

/* ---- the whole step ----------------------------------------------------------- */

typedef struct mlp_ref {
    mlp_cfg cfg;
    mlp_layout L;
    double *p, *g, *m, *v;      /**< flat, L.n_floats each (the GPU's layout) */
    long t;                     /**< steps taken */
    double *x;                  /**< [B][in_dim] */
    double *act[MLP_MAX_LAYERS];            /**< layer outputs, as on the GPU */
    unsigned char *mask[MLP_MAX_LAYERS];    /**< ReLU masks of the hidden layers */
    double *d0, *d1;            /**< gradient ping-pong buffers */
    double *row_loss;           /**< [B] */
} mlp_ref;

/** Copies params (layout.n_floats floats) into a fresh reference; -1 when out of memory. */
int mlp_ref_init(mlp_ref *r, const mlp_cfg *cfg, const float *params);
void mlp_ref_free(mlp_ref *r);

/**
 * Replaces the optimizer state with the GPU's (floats; m and v may be NULL
 * for zeros) and the step count with t, so that the next mlp_ref_step()
 * starts from exactly the state the GPU's next step starts from.
 */
void mlp_ref_set_state(mlp_ref *r, const float *params, const float *m, const float *v, long t);

/**
 * One training step on x [B][in_dim] and labels [B]; returns the mean loss
 * (computed before the update, as on the GPU).
 *
 * ReLU decisions on pre-activations within rounding noise of zero: when
 * hint is not NULL, hint[l] is the GPU's output of hidden layer l
 * ([B][hidden], after its ReLU) for this same step, and wherever the
 * reference's pre-activation satisfies |z| < tau the reference takes the
 * GPU's decision (hint > 0) instead of its own. fp32 cannot tell the sign
 * of such a z, and one flipped unit would otherwise move a whole row of
 * AdamW updates by up to lr. *n_hinted (if not NULL) receives how many
 * of the decisions taken from the hint differ from the reference's own.
 */
double mlp_ref_step(mlp_ref *r, const float *x, const int *labels, const float *const *hint,
                    double tau, long *n_hinted);

#ifdef __cplusplus
}
#endif

#endif
