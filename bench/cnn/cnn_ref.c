/*
 * W-cnn float64 CPU reference (cnn_ref.h).
 *
 * Each layer's input is copied into a zero-bordered [cin][66][66] buffer,
 * so the 3x3 convolution needs no bounds tests: for one output plane and
 * one input channel, each output row gets its nine products in one pass
 * over 64 contiguous elements, which the compiler vectorizes. A B=8
 * reference then takes a couple of seconds.
 */
#include <stdlib.h>
#include <string.h>

#include "cnn_ref.h"

enum { HW = CNN_H * CNN_W, PH = CNN_H + 2, PW = CNN_W + 2, PHW = PH * PW };

/* Copies planes [c][H][W] into the interior of zero-bordered planes [c][PH][PW]. */
static void pad_planes(const double *in, int c, double *pad)
{
    memset(pad, 0, sizeof(double) * (size_t)c * PHW);
    for (int ci = 0; ci < c; ci++)
        for (int y = 0; y < CNN_H; y++)
            memcpy(pad + (size_t)ci * PHW + (size_t)(y + 1) * PW + 1,
                   in + (size_t)ci * HW + (size_t)y * CNN_W, sizeof(double) * CNN_W);
}

/* out[co] = ReLU(b[co] + sum_ci sum_taps w[co][ci][ky][kx] * in[ci][y+ky-1][x+kx-1]),
 * zero padding of 1 on each side. pad: [cin][PH][PW] (zero border), out: [CNN_CH][H][W]. */
static void conv3x3_bias_relu(const double *pad, int cin, const float *w, const float *b,
                              double *out)
{
    for (int co = 0; co < CNN_CH; co++) {
        double *o = out + (size_t)co * HW;
        for (int i = 0; i < HW; i++)
            o[i] = (double)b[co];
        for (int ci = 0; ci < cin; ci++) {
            const double *p = pad + (size_t)ci * PHW;
            const float *wk = w + ((size_t)co * cin + ci) * 9;
            const double w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3], w4 = wk[4];
            const double w5 = wk[5], w6 = wk[6], w7 = wk[7], w8 = wk[8];
            for (int y = 0; y < CNN_H; y++) {
                double *orow = o + (size_t)y * CNN_W;
                const double *r0 = p + (size_t)y * PW, *r1 = r0 + PW, *r2 = r1 + PW;
                for (int x = 0; x < CNN_W; x++)
                    orow[x] += w0 * r0[x] + w1 * r0[x + 1] + w2 * r0[x + 2] + w3 * r1[x] +
                               w4 * r1[x + 1] + w5 * r1[x + 2] + w6 * r2[x] + w7 * r2[x + 1] +
                               w8 * r2[x + 2];
            }
        }
        for (int i = 0; i < HW; i++)
            o[i] = o[i] > 0.0 ? o[i] : 0.0;
    }
}

int cnn_ref_forward(int B, const float *params, const float *x, double *logits)
{
    if (B < 1 || params == NULL || x == NULL || logits == NULL)
        return -1;
    cnn_layout lay;
    cnn_layout_init(&lay);
    double *pad = malloc(sizeof(double) * CNN_CH * PHW);
    double *a = malloc(sizeof(double) * CNN_CH * HW);
    if (pad == NULL || a == NULL) {
        free(pad);
        free(a);
        return -1;
    }
    for (int n = 0; n < B; n++) {
        const float *xn = x + (size_t)n * CNN_IN_C * HW;
        for (int i = 0; i < CNN_IN_C * HW; i++)
            a[i] = (double)xn[i];
        pad_planes(a, CNN_IN_C, pad);
        conv3x3_bias_relu(pad, CNN_IN_C, params + lay.conv_w[0], params + lay.conv_b[0], a);
        for (int l = 1; l < CNN_N_CONV; l++) {
            pad_planes(a, CNN_CH, pad);
            conv3x3_bias_relu(pad, CNN_CH, params + lay.conv_w[l], params + lay.conv_b[l], a);
        }
        double pooled[CNN_CH];
        for (int c = 0; c < CNN_CH; c++) {
            double s = 0.0;
            for (int i = 0; i < HW; i++)
                s += a[(size_t)c * HW + i];
            pooled[c] = s / HW;
        }
        const float *fw = params + lay.fc_w, *fb = params + lay.fc_b;
        for (int o = 0; o < CNN_CLASSES; o++) {
            double s = (double)fb[o];
            for (int c = 0; c < CNN_CH; c++)
                s += (double)fw[o * CNN_CH + c] * pooled[c];
            logits[(size_t)n * CNN_CLASSES + o] = s;
        }
    }
    free(pad);
    free(a);
    return 0;
}
