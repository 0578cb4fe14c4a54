/*
 * W-mlp reference in double precision (mlp_ref.h). The loops put the
 * contiguous index innermost so the compiler can vectorize them; the
 * summation order does not matter at double precision for these tests.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlp_ref.h"

double mlp_ref_softmax_xent(const double *logits, const int *labels, int B, int C,
                            double *dlogits, double *row_loss)
{
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const double *x = logits + (size_t)b * C;
        double *d = dlogits + (size_t)b * C;
        const int label = labels[b];
        if (label < 0 || label >= C) {
            row_loss[b] = NAN;
            for (int c = 0; c < C; c++)
                d[c] = 0.0;
            total += NAN;
            continue;
        }
        double mx = x[0];
        for (int c = 1; c < C; c++)
            mx = x[c] > mx ? x[c] : mx;
        double sum = 0.0;
        for (int c = 0; c < C; c++)
            sum += exp(x[c] - mx);
        for (int c = 0; c < C; c++)
            d[c] = (exp(x[c] - mx) / sum - (c == label ? 1.0 : 0.0)) / B;
        row_loss[b] = log(sum) - (x[label] - mx);
        total += row_loss[b];
    }
    return total / B;
}

void mlp_ref_gemv_bwd(double *dx, double *dx_abs, const double *dy, const double *W,
                      const unsigned char *mask, int B, int out, int in)
{
    for (int b = 0; b < B; b++) {
        double *row = dx + (size_t)b * in;
        double *arow = dx_abs ? dx_abs + (size_t)b * in : NULL;
        memset(row, 0, (size_t)in * sizeof *row);
        if (arow)
            memset(arow, 0, (size_t)in * sizeof *arow);
        for (int o = 0; o < out; o++) {
            const double d = dy[(size_t)b * out + o];
            const double *w = W + (size_t)o * in;
            for (int i = 0; i < in; i++)
                row[i] += d * w[i];
            if (arow)
                for (int i = 0; i < in; i++)
                    arow[i] += fabs(d * w[i]);
        }
        if (mask)
            for (int i = 0; i < in; i++)
                if (!mask[(size_t)b * in + i])
                    row[i] = 0.0;
    }
}

void mlp_ref_outer(double *dW, double *dW_abs, double *db, double *db_abs, const double *dy,
                   const double *x, int B, int out, int in)
{
    for (int o = 0; o < out; o++) {
        double *row = dW + (size_t)o * in;
        double *arow = dW_abs ? dW_abs + (size_t)o * in : NULL;
        memset(row, 0, (size_t)in * sizeof *row);
        if (arow)
            memset(arow, 0, (size_t)in * sizeof *arow);
        double s = 0.0, sa = 0.0;
        for (int b = 0; b < B; b++) {
            const double d = dy[(size_t)b * out + o];
            const double *xr = x + (size_t)b * in;
            for (int i = 0; i < in; i++)
                row[i] += d * xr[i];
            if (arow)
                for (int i = 0; i < in; i++)
                    arow[i] += fabs(d * xr[i]);
            s += d;
            sa += fabs(d);
        }
        if (db)
            db[o] = s;
        if (db_abs)
            db_abs[o] = sa;
    }
}

void mlp_ref_adamw(double *p, const double *g, double *m, double *v, size_t n, long t, double lr,
                   double b1, double b2, double eps, double wd)
{
    const double bc1 = 1.0 - pow(b1, (double)t);
    const double bc2 = 1.0 - pow(b2, (double)t);
    for (size_t i = 0; i < n; i++) {
        m[i] = b1 * m[i] + (1.0 - b1) * g[i];
        v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
        p[i] -= lr * wd * p[i];
        p[i] -= lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + eps);
    }
}

void mlp_ref_free(mlp_ref *r)
{
    if (!r)
        return;
    free(r->p);
    free(r->g);
    free(r->m);
    free(r->v);
    free(r->x);
    for (int l = 0; l < MLP_MAX_LAYERS; l++) {
        free(r->act[l]);
        free(r->mask[l]);
    }
    free(r->d0);
    free(r->d1);
    free(r->row_loss);
    memset(r, 0, sizeof *r);
}

int mlp_ref_init(mlp_ref *r, const mlp_cfg *cfg, const float *params)
{
    memset(r, 0, sizeof *r);
    if (mlp_layout_init(&r->L, cfg) != 0)
        return -1;
    r->cfg = *cfg;
    const size_t n = r->L.n_floats, B = (size_t)cfg->batch;
    size_t maxf = 0;
    r->p = calloc(n, sizeof(double));
    r->g = calloc(n, sizeof(double));
    r->m = calloc(n, sizeof(double));
    r->v = calloc(n, sizeof(double));
    r->x = calloc(B * (size_t)cfg->in_dim, sizeof(double));
    int ok = r->p && r->g && r->m && r->v && r->x;
    for (int l = 0; l < r->L.n_layers; l++) {
        const size_t out = (size_t)r->L.out[l];
        maxf = out > maxf ? out : maxf;
        if (l > 0 && (size_t)r->L.in[l] > maxf)
            maxf = (size_t)r->L.in[l];
        r->act[l] = calloc(B * out, sizeof(double));
        r->mask[l] = calloc(B * out, 1);
        ok = ok && r->act[l] && r->mask[l];
    }
    r->d0 = calloc(B * maxf, sizeof(double));
    r->d1 = calloc(B * maxf, sizeof(double));
    r->row_loss = calloc(B, sizeof(double));
    if (!ok || !r->d0 || !r->d1 || !r->row_loss) {
        mlp_ref_free(r);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        r->p[i] = (double)params[i];
    return 0;
}

void mlp_ref_set_state(mlp_ref *r, const float *params, const float *m, const float *v, long t)
{
    for (size_t i = 0; i < r->L.n_floats; i++) {
        r->p[i] = (double)params[i];
        r->m[i] = m ? (double)m[i] : 0.0;
        r->v[i] = v ? (double)v[i] : 0.0;
    }
    r->t = t;
}

double mlp_ref_step(mlp_ref *r, const float *x, const int *labels, const float *const *hint,
                    double tau, long *n_hinted)
{
    const mlp_layout *L = &r->L;
    const int B = r->cfg.batch, last = L->n_layers - 1;
    long hinted = 0;

    for (size_t i = 0; i < (size_t)B * (size_t)r->cfg.in_dim; i++)
        r->x[i] = (double)x[i];

    /* Forward. */
    for (int l = 0; l <= last; l++) {
        const int in = L->in[l], out = L->out[l];
        const double *a = l == 0 ? r->x : r->act[l - 1];
        const double *W = r->p + L->w_off[l], *bias = r->p + L->b_off[l];
        for (int b = 0; b < B; b++) {
            const double *ar = a + (size_t)b * in;
            for (int o = 0; o < out; o++) {
                const double *w = W + (size_t)o * in;
                double z = 0.0;
                for (int i = 0; i < in; i++)
                    z += w[i] * ar[i];
                z += bias[o];
                const size_t k = (size_t)b * out + o;
                if (l == last) {
                    r->act[l][k] = z;
                    continue;
                }
                int on = z > 0.0;
                if (hint && fabs(z) < tau) {
                    const int gpu_on = hint[l][k] > 0.f;
                    hinted += gpu_on != on;
                    on = gpu_on;
                }
                r->mask[l][k] = (unsigned char)on;
                r->act[l][k] = on ? z : 0.0;
            }
        }
    }
    if (n_hinted)
        *n_hinted = hinted;

    const double loss =
        mlp_ref_softmax_xent(r->act[last], labels, B, L->out[last], r->d0, r->row_loss);

    /* Backward. */
    double *dy = r->d0, *dx = r->d1;
    for (int l = last; l >= 0; l--) {
        const int in = L->in[l], out = L->out[l];
        const double *a = l == 0 ? r->x : r->act[l - 1];
        mlp_ref_outer(r->g + L->w_off[l], NULL, r->g + L->b_off[l], NULL, dy, a, B, out, in);
        if (l > 0) {
            mlp_ref_gemv_bwd(dx, NULL, dy, r->p + L->w_off[l], r->mask[l - 1], B, out, in);
            double *t = dy;
            dy = dx;
            dx = t;
        }
    }
    r->t++;
    mlp_ref_adamw(r->p, r->g, r->m, r->v, L->n_floats, r->t, (double)r->cfg.lr,
                  (double)r->cfg.beta1, (double)r->cfg.beta2, (double)r->cfg.eps,
                  (double)r->cfg.weight_decay);
    return loss;
}
