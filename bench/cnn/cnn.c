/*
 * W-cnn: parameters, cuDNN descriptors, algorithm choice and the enqueued
 * forward pass (cnn.h).
 *
 * Layer by layer (B = batch):
 *   conv0   x [B,3,64,64]   -> act[0] [B,64,64,64]
 *   conv l  act[(l-1)%2]    -> act[l%2]            (l = 1..6; conv6 -> act[0])
 *   gap     act[0]          -> pooled [B,64]
 *   linear  pooled          -> logits [B,10]
 * act[0], act[1] and pooled are carved, in that order and 256-byte aligned,
 * from the caller's one scratch buffer.
 *
 * Algorithm choice starts from cuDNN's heuristics
 * (cudnnGetConvolutionForwardAlgorithm_v7). By default every usable entry
 * of that list is then timed, fused (conv + bias + ReLU in one call) and
 * unfused, and the fastest kept: the heuristics rank plain convolutions, and
 * their first answer is not the fastest layer at every batch size. Timing
 * needs device buffers and synchronizes, which a cgr step may do in a
 * warm-up run but never while captured. Layer 0 (3->64) and layers 1..6
 * (64->64) are the two shapes, so two choices.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "cnn.h"
#include "cnn_kernels.h"

/* ---- errors ------------------------------------------------------------------ */

static _Thread_local char last_error[1024];

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *cnn_last_error(void)
{
    return last_error;
}

static int cuda_fail(cudaError_t e, const char *what, const char *file, int line)
{
    return fail(CNN_ERR_CUDA, "%s:%d: %s: %s (%s)", file, line, what, cudaGetErrorName(e),
                cudaGetErrorString(e));
}

static int dnn_fail(cudnnStatus_t s, const char *what, const char *file, int line)
{
    char detail[256];
    detail[0] = '\0';
    cudnnGetLastErrorString(detail, sizeof detail);
    return fail(CNN_ERR_CUDNN, "%s:%d: %s: %s (%d)%s%s", file, line, what, cudnnGetErrorString(s),
                (int)s, detail[0] ? ": " : "", detail);
}

#define CNN_CUDA(expr)                                                                     \
    do {                                                                                   \
        cudaError_t e_ = (expr);                                                           \
        if (e_ != cudaSuccess)                                                             \
            return cuda_fail(e_, #expr, __FILE__, __LINE__);                               \
    } while (0)

#define CNN_DNN(expr)                                                                      \
    do {                                                                                   \
        cudnnStatus_t s_ = (expr);                                                         \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                    \
            return dnn_fail(s_, #expr, __FILE__, __LINE__);                                \
    } while (0)

#define CNN_TRY(expr)                                                                      \
    do {                                                                                   \
        int r_ = (expr);                                                                   \
        if (r_ != 0)                                                                       \
            return r_;                                                                     \
    } while (0)

/* ---- the model ------------------------------------------------------------- */

/* What a forward pass may change: per-layer algorithm and fusion after cuDNN
 * refuses a call (see cnn.h, Fusion). Kept apart so the forward pass can take
 * a const model. */
typedef struct cnn_dyn {
    cudnnConvolutionFwdAlgo_t algo[CNN_N_CONV];
    int fused[CNN_N_CONV];
    int fallbacks; /* how many times a layer was downgraded */
    char why[192]; /* the first downgrade's reason */
} cnn_dyn;

/* The largest cuDNN workspace an algorithm may ask for; algorithms that need more are skipped. */
#define CNN_WS_LIMIT ((size_t)256 << 20)

struct cnn {
    int B;
    cnn_layout lay;
    float *host;      /* lay.n_floats */
    float *dev;       /* caller's device copy */
    cnn_algo_policy policy;

    int descs;        /* descriptors created */
    cudnnTensorDescriptor_t x_desc;    /* [B,3,64,64] */
    cudnnTensorDescriptor_t act_desc;  /* [B,64,64,64] */
    cudnnTensorDescriptor_t bias_desc; /* [1,64,1,1] */
    cudnnFilterDescriptor_t w_desc[2]; /* [64,3,3,3], [64,64,3,3] */
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnActivationDescriptor_t relu_desc;

    int prepared;
    int device;       /* device the choice was made for */
    size_t ws_bytes;  /* max over layers (and over the IMPLICIT_GEMM fallback: 0) */
    cnn_dyn *dyn;
};

/* xorshift64* seeded through splitmix64. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Uniform in (-1, 1) with an odd numerator over 2^24: never exactly 0. */
static float rng_sym(uint64_t *s)
{
    const int64_t k = (int64_t)(rng_next(s) >> 40); /* 0 .. 2^24 - 1 */
    return (float)(2 * k + 1 - (1LL << 24)) / (float)(1LL << 24);
}

static void fill_uniform(uint64_t *s, float *dst, size_t n, double bound)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)(rng_sym(s) * bound);
}

int cnn_create(cnn **out, int B, uint64_t seed)
{
    if (out == NULL)
        return fail(CNN_ERR_ARG, "cnn_create: out is NULL");
    *out = NULL;
    if (B < 1 || B > CNN_MAX_BATCH)
        return fail(CNN_ERR_ARG, "cnn_create: B = %d is outside 1..%d", B, CNN_MAX_BATCH);
    cnn *m = calloc(1, sizeof *m);
    if (m == NULL)
        return fail(CNN_ERR_NOMEM, "cnn_create: out of host memory");
    m->dyn = calloc(1, sizeof *m->dyn);
    m->B = B;
    m->policy = CNN_ALGO_MEASURED;
    m->device = -1;
    cnn_layout_init(&m->lay);
    m->host = calloc(m->lay.n_floats, sizeof(float));
    if (m->dyn == NULL || m->host == NULL) {
        free(m->dyn);
        free(m->host);
        free(m);
        return fail(CNN_ERR_NOMEM, "cnn_create: out of host memory");
    }
    /* splitmix64 of the seed, so that nearby seeds give unrelated streams
     * and seed 0 still works (xorshift needs a nonzero state). */
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    uint64_t s = z ? z : 0x853C49E6748FEA9BULL;
    for (int l = 0; l < CNN_N_CONV; l++) {
        const size_t fan_in = (size_t)cnn_conv_cin(l) * 9u;
        fill_uniform(&s, m->host + m->lay.conv_w[l], (size_t)CNN_CH * fan_in,
                     sqrt(6.0 / (double)fan_in));
        fill_uniform(&s, m->host + m->lay.conv_b[l], CNN_CH, 1.0 / sqrt((double)fan_in));
    }
    fill_uniform(&s, m->host + m->lay.fc_w, (size_t)CNN_CLASSES * CNN_CH, sqrt(6.0 / CNN_CH));
    fill_uniform(&s, m->host + m->lay.fc_b, CNN_CLASSES, 1.0 / sqrt((double)CNN_CH));
    *out = m;
    return 0;
}

static void destroy_descs(cnn *m)
{
    if (!m->descs)
        return;
    (void)cudnnDestroyTensorDescriptor(m->x_desc);
    (void)cudnnDestroyTensorDescriptor(m->act_desc);
    (void)cudnnDestroyTensorDescriptor(m->bias_desc);
    (void)cudnnDestroyFilterDescriptor(m->w_desc[0]);
    (void)cudnnDestroyFilterDescriptor(m->w_desc[1]);
    (void)cudnnDestroyConvolutionDescriptor(m->conv_desc);
    (void)cudnnDestroyActivationDescriptor(m->relu_desc);
    m->descs = 0;
}

void cnn_destroy(cnn **pm)
{
    if (pm == NULL || *pm == NULL)
        return;
    cnn *m = *pm;
    destroy_descs(m);
    free(m->host);
    free(m->dyn);
    free(m);
    *pm = NULL;
}

int cnn_batch(const cnn *m)
{
    return m ? m->B : 0;
}

size_t cnn_param_floats(const cnn *m)
{
    return m ? m->lay.n_floats : 0;
}

void cnn_host_params(const cnn *m, float *dst)
{
    if (m && dst)
        memcpy(dst, m->host, m->lay.n_floats * sizeof(float));
}

int cnn_set_device_params(cnn *m, float *dev_params)
{
    if (m == NULL || dev_params == NULL)
        return fail(CNN_ERR_ARG, "cnn_set_device_params: NULL argument");
    if ((uintptr_t)dev_params % CNN_BUFFER_ALIGN != 0)
        return fail(CNN_ERR_ARG, "cnn_set_device_params: %p is not %d-byte aligned",
                    (void *)dev_params, CNN_BUFFER_ALIGN);
    m->dev = dev_params;
    return 0;
}

int cnn_set_algo_policy(cnn *m, cnn_algo_policy policy)
{
    if (m == NULL || (int)policy < 0 || policy >= CNN_ALGO_POLICY_COUNT_)
        return fail(CNN_ERR_ARG, "cnn_set_algo_policy: bad model or policy %d", (int)policy);
    m->policy = policy;
    m->prepared = 0;
    return 0;
}

/* ---- descriptors and algorithms ---------------------------------------------- */

static const char *algo_name(cudnnConvolutionFwdAlgo_t a)
{
    static const char *const names[] = {
        "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM",     "DIRECT",
        "FFT",           "FFT_TILING",            "WINOGRAD", "WINOGRAD_NONFUSED",
    };
    const int i = (int)a;
    return i >= 0 && i < (int)(sizeof names / sizeof names[0]) ? names[i] : "UNKNOWN";
}

/* Creates every descriptor; on failure destroys those already created. */
static int create_all(cnn *m)
{
    int made = 0;
    cudnnStatus_t s = cudnnCreateTensorDescriptor(&m->x_desc);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateTensorDescriptor(&m->act_desc);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateTensorDescriptor(&m->bias_desc);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateFilterDescriptor(&m->w_desc[0]);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateFilterDescriptor(&m->w_desc[1]);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateConvolutionDescriptor(&m->conv_desc);
    if (s == CUDNN_STATUS_SUCCESS && ++made)
        s = cudnnCreateActivationDescriptor(&m->relu_desc);
    if (s == CUDNN_STATUS_SUCCESS) {
        m->descs = 1;
        return 0;
    }
    /* `made` descriptors were created, in the order above. */
    if (made > 0)
        (void)cudnnDestroyTensorDescriptor(m->x_desc);
    if (made > 1)
        (void)cudnnDestroyTensorDescriptor(m->act_desc);
    if (made > 2)
        (void)cudnnDestroyTensorDescriptor(m->bias_desc);
    if (made > 3)
        (void)cudnnDestroyFilterDescriptor(m->w_desc[0]);
    if (made > 4)
        (void)cudnnDestroyFilterDescriptor(m->w_desc[1]);
    if (made > 5)
        (void)cudnnDestroyConvolutionDescriptor(m->conv_desc);
    return dnn_fail(s, "cudnnCreate*Descriptor", __FILE__, __LINE__);
}

/* Creates the descriptors once and (re)writes their contents. */
static int create_descs(cnn *m)
{
    if (!m->descs)
        CNN_TRY(create_all(m));
    CNN_DNN(cudnnSetTensor4dDescriptor(m->x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, m->B,
                                       CNN_IN_C, CNN_H, CNN_W));
    CNN_DNN(cudnnSetTensor4dDescriptor(m->act_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, m->B,
                                       CNN_CH, CNN_H, CNN_W));
    CNN_DNN(cudnnSetTensor4dDescriptor(m->bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1,
                                       CNN_CH, 1, 1));
    CNN_DNN(cudnnSetFilter4dDescriptor(m->w_desc[0], CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CNN_CH,
                                       CNN_IN_C, 3, 3));
    CNN_DNN(cudnnSetFilter4dDescriptor(m->w_desc[1], CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CNN_CH,
                                       CNN_CH, 3, 3));
    CNN_DNN(cudnnSetConvolution2dDescriptor(m->conv_desc, 1, 1, 1, 1, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    /* FMA only: no TF32 tensor-core kernels (every workload is fp32, TF32 off). */
    CNN_DNN(cudnnSetConvolutionMathType(m->conv_desc, CUDNN_FMA_MATH));
    CNN_DNN(cudnnSetActivationDescriptor(m->relu_desc, CUDNN_ACTIVATION_RELU,
                                         CUDNN_NOT_PROPAGATE_NAN, 0.0));
    return 0;
}

/* The workspace algorithm a needs for layer shape cls, within the limit. */
static int ws_of(const cnn *m, cudnnHandle_t h, int cls, cudnnConvolutionFwdAlgo_t a, size_t *ws)
{
    CNN_DNN(cudnnGetConvolutionForwardWorkspaceSize(h, cls == 0 ? m->x_desc : m->act_desc,
                                                    m->w_desc[cls], m->conv_desc, m->act_desc, a,
                                                    ws));
    if (*ws > CNN_WS_LIMIT)
        return fail(CNN_ERR_STATE,
                    "conv%s: algorithm %s needs %zu workspace bytes, over the limit of %zu",
                    cls == 0 ? "0" : "1-6", algo_name(a), *ws, CNN_WS_LIMIT);
    return 0;
}

static int measure(cnn *m, cudnnHandle_t h, int cls, const cudnnConvolutionFwdAlgoPerf_t *perf,
                   int got, cudnnConvolutionFwdAlgo_t *algo, int *fused, size_t *ws);

/* Chooses the algorithm for one layer shape (cls 0: conv0, cls 1: conv1..6). */
static int choose(cnn *m, cudnnHandle_t h, int cls, cudnnConvolutionFwdAlgo_t *algo, int *fused,
                  size_t *ws)
{
    cudnnTensorDescriptor_t xd = cls == 0 ? m->x_desc : m->act_desc;
    cudnnFilterDescriptor_t wd = m->w_desc[cls];
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int got = 0;
    memset(perf, 0, sizeof perf);
    CNN_DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, m->conv_desc, m->act_desc,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
    if (m->policy == CNN_ALGO_MEASURED)
        return measure(m, h, cls, perf, got, algo, fused, ws);
    int first = -1, precomp = -1;
    for (int i = 0; i < got; i++) {
        const cudnnConvolutionFwdAlgoPerf_t *p = &perf[i];
        /* The descriptor's FMA math is what runs; entries labelled for
         * tensor-op math are skipped all the same. */
        const int fma = p->mathType == CUDNN_FMA_MATH || p->mathType == CUDNN_DEFAULT_MATH;
        const int usable = p->status == CUDNN_STATUS_SUCCESS && fma &&
                           p->determinism == CUDNN_DETERMINISTIC && p->memory <= CNN_WS_LIMIT;
        if (!usable)
            continue;
        if (first < 0)
            first = i;
        if (precomp < 0 && p->algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
            precomp = i;
    }
    int pick = precomp >= 0 ? precomp : first;
    /* IMPLICIT_GEMM needs no workspace and supports every shape: the choice
     * of last resort when the heuristics offer nothing usable. */
    *algo = pick >= 0 ? perf[pick].algo : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    /* The legacy API fuses bias and ReLU into the convolution kernel with
     * IMPLICIT_PRECOMP_GEMM; other algorithms would run them as extra
     * kernels inside the call anyway. */
    *fused = m->policy != CNN_ALGO_UNFUSED &&
             *algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    return ws_of(m, h, cls, *algo, ws);
}

/* Device buffers for timing one layer shape: input, output, workspace. */
typedef struct cnn_trial {
    float *x, *y;
    void *ws;
    size_t ws_bytes;
    cudaStream_t stream;
    cudaEvent_t t0, t1;
} cnn_trial;

/* One layer's call(s) as the forward pass makes them, on the trial's buffers. */
static cudnnStatus_t trial_call(const cnn *m, cudnnHandle_t h, int cls, cudnnConvolutionFwdAlgo_t a,
                                int fused, const cnn_trial *t)
{
    static const float one = 1.0f, zero = 0.0f;
    cudnnTensorDescriptor_t xd = cls == 0 ? m->x_desc : m->act_desc;
    const int l = cls == 0 ? 0 : 1;
    const float *w = m->dev + m->lay.conv_w[l], *b = m->dev + m->lay.conv_b[l];
    if (fused)
        return cudnnConvolutionBiasActivationForward(
            h, &one, xd, t->x, m->w_desc[cls], w, m->conv_desc, a, t->ws, t->ws_bytes, &zero,
            m->act_desc, t->y, m->bias_desc, b, m->relu_desc, m->act_desc, t->y);
    cudnnStatus_t s = cudnnConvolutionForward(h, &one, xd, t->x, m->w_desc[cls], w, m->conv_desc,
                                              a, t->ws, t->ws_bytes, &zero, m->act_desc, t->y);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnAddTensor(h, &one, m->bias_desc, b, &one, m->act_desc, t->y);
    if (s == CUDNN_STATUS_SUCCESS)
        s = cudnnActivationForward(h, m->relu_desc, &one, m->act_desc, t->y, &zero, m->act_desc,
                                   t->y);
    return s;
}

/* Microseconds per call of one variant, or *us = -1 when cuDNN refuses it
 * for this shape. One untimed call, then three times five calls queued
 * behind a hold kernel (cnn_kernels.h says why), keeping the fastest batch. */
static int trial_time(const cnn *m, cudnnHandle_t h, int cls, cudnnConvolutionFwdAlgo_t a,
                      int fused, const cnn_trial *t, float *us)
{
    enum { CALLS = 5, BATCHES = 3 };
    *us = -1.0f;
    cudnnStatus_t s = trial_call(m, h, cls, a, fused, t);
    if (s != CUDNN_STATUS_SUCCESS) {
        if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_EXECUTION_FAILED)
            return dnn_fail(s, "timing a convolution", __FILE__, __LINE__);
        return 0; /* refused before any launch: not a candidate */
    }
    float best = -1.0f;
    for (int r = 0; r < BATCHES; r++) {
        float ms = 0.0f;
        /* 2 ms covers the host's enqueueing of five calls with room to spare. */
        CNN_CUDA(cnn_hold_launch(2000000ull, t->stream));
        CNN_CUDA(cudaEventRecord(t->t0, t->stream));
        for (int c = 0; c < CALLS; c++)
            CNN_DNN(trial_call(m, h, cls, a, fused, t));
        CNN_CUDA(cudaEventRecord(t->t1, t->stream));
        CNN_CUDA(cudaEventSynchronize(t->t1));
        CNN_CUDA(cudaEventElapsedTime(&ms, t->t0, t->t1));
        if (best < 0.0f || ms < best)
            best = ms;
    }
    *us = best * 1000.0f / CALLS;
    return 0;
}

/* Times every usable algorithm of the heuristics' list for one layer shape,
 * fused and unfused, and keeps the fastest. */
static int measure(cnn *m, cudnnHandle_t h, int cls, const cudnnConvolutionFwdAlgoPerf_t *perf,
                   int got, cudnnConvolutionFwdAlgo_t *algo, int *fused, size_t *ws)
{
    cnn_trial t;
    memset(&t, 0, sizeof t);
    const size_t in_floats = (size_t)m->B * (cls == 0 ? CNN_IN_C : CNN_CH) * CNN_H * CNN_W;
    const size_t out_floats = (size_t)m->B * CNN_CH * CNN_H * CNN_W;
    for (int i = 0; i < got; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= CNN_WS_LIMIT &&
            perf[i].memory > t.ws_bytes)
            t.ws_bytes = perf[i].memory;
    float *host = malloc(in_floats * sizeof(float));
    int rc = host ? 0 : fail(CNN_ERR_NOMEM, "cnn_prepare: out of host memory");
    cudaError_t e = cudaSuccess;
    if (rc == 0) {
        uint64_t s = 0x243F6A8885A308D3ULL; /* never zero: random inputs, as timed runs get */
        fill_uniform(&s, host, in_floats, 1.0);
        cudnnStatus_t ds = cudnnGetStream(h, &t.stream);
        if (ds != CUDNN_STATUS_SUCCESS)
            rc = dnn_fail(ds, "cudnnGetStream", __FILE__, __LINE__);
    }
    if (rc == 0 && (e = cudaMalloc((void **)&t.x, in_floats * sizeof(float))) == cudaSuccess &&
        (e = cudaMalloc((void **)&t.y, out_floats * sizeof(float))) == cudaSuccess &&
        (t.ws_bytes == 0 || (e = cudaMalloc(&t.ws, t.ws_bytes)) == cudaSuccess) &&
        (e = cudaEventCreate(&t.t0)) == cudaSuccess && (e = cudaEventCreate(&t.t1)) == cudaSuccess)
        e = cudaMemcpyAsync(t.x, host, in_floats * sizeof(float), cudaMemcpyHostToDevice,
                            t.stream);
    if (rc == 0 && e != cudaSuccess)
        rc = cuda_fail(e, "cnn_prepare: buffers for timing", __FILE__, __LINE__);
    float best = -1.0f;
    for (int i = 0; rc == 0 && i < got; i++) {
        const cudnnConvolutionFwdAlgoPerf_t *p = &perf[i];
        const int fma = p->mathType == CUDNN_FMA_MATH || p->mathType == CUDNN_DEFAULT_MATH;
        if (p->status != CUDNN_STATUS_SUCCESS || !fma || p->determinism != CUDNN_DETERMINISTIC ||
            p->memory > CNN_WS_LIMIT)
            continue;
        for (int f = 0; rc == 0 && f < 2; f++) {
            float us = -1.0f;
            rc = trial_time(m, h, cls, p->algo, f, &t, &us);
            if (rc == 0 && us >= 0.0f && (best < 0.0f || us < best)) {
                best = us;
                *algo = p->algo;
                *fused = f;
            }
        }
    }
    if (rc == 0 && best < 0.0f) {
        *algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM; /* see choose() */
        *fused = 0;
    }
    if (rc == 0) {
        /* Nothing of the trial may linger into the first timed run. */
        e = cudaStreamSynchronize(t.stream);
        if (e != cudaSuccess)
            rc = cuda_fail(e, "cudaStreamSynchronize", __FILE__, __LINE__);
    }
    (void)cudaFree(t.x);
    (void)cudaFree(t.y);
    (void)cudaFree(t.ws);
    if (t.t0)
        (void)cudaEventDestroy(t.t0);
    if (t.t1)
        (void)cudaEventDestroy(t.t1);
    free(host);
    if (rc == 0)
        rc = ws_of(m, h, cls, *algo, ws);
    return rc;
}

int cnn_prepare(cnn *m, cnn_cudnn_handle handle)
{
    if (m == NULL || handle == NULL)
        return fail(CNN_ERR_ARG, "cnn_prepare: NULL argument");
    int dev = -1;
    CNN_CUDA(cudaGetDevice(&dev));
    if (m->prepared) {
        if (dev != m->device)
            return fail(CNN_ERR_STATE,
                        "cnn_prepare: model was prepared on device %d, current device is %d",
                        m->device, dev);
        return 0;
    }
    if (m->policy == CNN_ALGO_MEASURED && m->dev == NULL)
        return fail(CNN_ERR_STATE, "cnn_prepare: the measured policy times the model's own "
                                   "weights: call cnn_set_device_params() first");
    CNN_TRY(create_descs(m));
    cudnnConvolutionFwdAlgo_t algo[2];
    int fused[2];
    size_t ws[2];
    CNN_TRY(choose(m, handle, 0, &algo[0], &fused[0], &ws[0]));
    CNN_TRY(choose(m, handle, 1, &algo[1], &fused[1], &ws[1]));
    for (int l = 0; l < CNN_N_CONV; l++) {
        m->dyn->algo[l] = algo[l ? 1 : 0];
        m->dyn->fused[l] = fused[l ? 1 : 0];
    }
    m->dyn->fallbacks = 0;
    m->dyn->why[0] = '\0';
    m->ws_bytes = ws[0] > ws[1] ? ws[0] : ws[1];
    m->device = dev;
    m->prepared = 1;
    return 0;
}

size_t cnn_workspace_bytes(const cnn *m)
{
    return m && m->prepared ? m->ws_bytes : 0;
}

static size_t align_up(size_t n)
{
    return (n + CNN_BUFFER_ALIGN - 1) / CNN_BUFFER_ALIGN * CNN_BUFFER_ALIGN;
}

static size_t act_bytes(const cnn *m)
{
    return align_up((size_t)m->B * CNN_CH * CNN_H * CNN_W * sizeof(float));
}

size_t cnn_scratch_bytes(const cnn *m)
{
    if (m == NULL)
        return 0;
    return 2 * act_bytes(m) + align_up((size_t)m->B * CNN_CH * sizeof(float));
}

int cnn_fused_layers(const cnn *m)
{
    if (m == NULL || !m->prepared)
        return 0;
    int n = 0;
    for (int l = 0; l < CNN_N_CONV; l++)
        n += m->dyn->fused[l] != 0;
    return n;
}

const char *cnn_describe(const cnn *m)
{
    static _Thread_local char buf[768];
    static const char *const policy_names[] = {"auto", "unfused", "measured"};
    if (m == NULL)
        return "(null)";
    if (!m->prepared) {
        snprintf(buf, sizeof buf, "B=%d, not prepared", m->B);
        return buf;
    }
    size_t used = 0;
    used += (size_t)snprintf(buf, sizeof buf, "B=%d policy %s, workspace %zu B:", m->B,
                             policy_names[m->policy], m->ws_bytes);
    /* Group consecutive layers with the same choice. */
    for (int l = 0; l < CNN_N_CONV && used < sizeof buf;) {
        int e = l;
        while (e + 1 < CNN_N_CONV && m->dyn->algo[e + 1] == m->dyn->algo[l] &&
               m->dyn->fused[e + 1] == m->dyn->fused[l])
            e++;
        char range[48];
        if (e == l)
            snprintf(range, sizeof range, "conv%d", l);
        else
            snprintf(range, sizeof range, "conv%d-%d", l, e);
        used += (size_t)snprintf(buf + used, sizeof buf - used, " %s %s %s%s", range,
                                 algo_name(m->dyn->algo[l]),
                                 m->dyn->fused[l] ? "fused" : "unfused",
                                 e + 1 < CNN_N_CONV ? ";" : "");
        l = e + 1;
    }
    if (m->dyn->fallbacks && used < sizeof buf)
        snprintf(buf + used, sizeof buf - used, " (%d fallback%s; first: %s)",
                 m->dyn->fallbacks, m->dyn->fallbacks == 1 ? "" : "s", m->dyn->why);
    return buf;
}

/* ---- forward pass -------------------------------------------------------------- */

static int is_not_supported(cudnnStatus_t s)
{
    return CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED;
}

/* Records why layer l was downgraded (the first reason only). */
static void note_fallback(cnn_dyn *d, int l, const char *call, cudnnStatus_t s)
{
    if (d->fallbacks++ == 0)
        snprintf(d->why, sizeof d->why, "conv%d: %s returned %s", l, call,
                 cudnnGetErrorString(s));
}

/* One convolution layer: y = ReLU(conv(x, w) + b). */
static int conv_layer(const cnn *m, cudnnHandle_t h, int l, const float *x, float *y,
                      void *ws)
{
    static const float one = 1.0f, zero = 0.0f;
    cnn_dyn *d = m->dyn;
    cudnnTensorDescriptor_t xd = l == 0 ? m->x_desc : m->act_desc;
    cudnnFilterDescriptor_t wd = m->w_desc[l == 0 ? 0 : 1];
    const float *w = m->dev + m->lay.conv_w[l];
    const float *b = m->dev + m->lay.conv_b[l];
    if (d->fused[l]) {
        /* y = ReLU(1 * conv(x) + 0 * z + b), with z = y: alpha2 = 0, so z is
         * not used (y may hold anything, even NaN). */
        cudnnStatus_t s = cudnnConvolutionBiasActivationForward(
            h, &one, xd, x, wd, w, m->conv_desc, d->algo[l], ws, m->ws_bytes, &zero, m->act_desc,
            y, m->bias_desc, b, m->relu_desc, m->act_desc, y);
        if (s == CUDNN_STATUS_SUCCESS)
            return 0;
        /* An execution failure means a kernel failed: the stream is suspect.
         * Anything else (NOT_SUPPORTED above all, but also a parameter check
         * of the fused call that the plain calls do not make) is refused
         * before any launch: run this layer unfused from now on. */
        if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_EXECUTION_FAILED)
            return dnn_fail(s, "cudnnConvolutionBiasActivationForward", __FILE__, __LINE__);
        d->fused[l] = 0;
        note_fallback(d, l, "cudnnConvolutionBiasActivationForward", s);
    }
    cudnnStatus_t s = cudnnConvolutionForward(h, &one, xd, x, wd, w, m->conv_desc, d->algo[l], ws,
                                              m->ws_bytes, &zero, m->act_desc, y);
    if (s != CUDNN_STATUS_SUCCESS && is_not_supported(s) &&
        d->algo[l] != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM) {
        /* The heuristics offered an algorithm that this call refuses: fall
         * back to IMPLICIT_GEMM, which needs no workspace. */
        note_fallback(d, l, "cudnnConvolutionForward", s);
        d->algo[l] = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
        s = cudnnConvolutionForward(h, &one, xd, x, wd, w, m->conv_desc, d->algo[l], ws,
                                    m->ws_bytes, &zero, m->act_desc, y);
    }
    if (s != CUDNN_STATUS_SUCCESS)
        return dnn_fail(s, "cudnnConvolutionForward", __FILE__, __LINE__);
    /* y += b (broadcast over N, H, W), then ReLU in place. */
    CNN_DNN(cudnnAddTensor(h, &one, m->bias_desc, b, &one, m->act_desc, y));
    CNN_DNN(cudnnActivationForward(h, m->relu_desc, &one, m->act_desc, y, &zero, m->act_desc, y));
    return 0;
}

int cnn_forward_enqueue(const cnn *m, cnn_cudnn_handle handle, cnn_stream stream,
                        const float *x, float *logits, void *scratch, void *workspace)
{
    if (m == NULL || handle == NULL || x == NULL || logits == NULL || scratch == NULL)
        return fail(CNN_ERR_ARG, "cnn_forward_enqueue: NULL argument");
    if (!m->prepared)
        return fail(CNN_ERR_STATE, "cnn_forward_enqueue: call cnn_prepare() first");
    if (m->dev == NULL)
        return fail(CNN_ERR_STATE, "cnn_forward_enqueue: call cnn_set_device_params() first");
    if ((uintptr_t)scratch % CNN_BUFFER_ALIGN != 0)
        return fail(CNN_ERR_ARG, "cnn_forward_enqueue: scratch %p is not %d-byte aligned",
                    scratch, CNN_BUFFER_ALIGN);
    if (m->ws_bytes > 0 && workspace == NULL)
        return fail(CNN_ERR_ARG, "cnn_forward_enqueue: workspace of %zu bytes is NULL",
                    m->ws_bytes);
    cudaStream_t bound = NULL;
    CNN_DNN(cudnnGetStream(handle, &bound));
    if (bound != stream)
        return fail(CNN_ERR_ARG,
                    "cnn_forward_enqueue: the cuDNN handle is bound to stream %p, not to %p "
                    "(cudnnSetStream)",
                    (void *)bound, (void *)stream);

    char *base = scratch;
    float *act[2] = {(float *)base, (float *)(base + act_bytes(m))};
    float *pooled = (float *)(base + 2 * act_bytes(m));

    for (int l = 0; l < CNN_N_CONV; l++) {
        const float *in = l == 0 ? x : act[(l - 1) & 1];
        CNN_TRY(conv_layer(m, handle, l, in, act[l & 1], workspace));
    }
    const float *last = act[(CNN_N_CONV - 1) & 1];
    CNN_CUDA(cnn_gap_launch(last, pooled, m->B * CNN_CH, CNN_H * CNN_W, stream));
    CNN_CUDA(cnn_linear_launch(pooled, m->dev + m->lay.fc_w, m->dev + m->lay.fc_b, logits, m->B,
                               CNN_CH, CNN_CLASSES, stream));
    return 0;
}
