/*
 * W-cnn: a small fp32 convolutional network, inference only.
 *
 *   x[B][3][64][64] (NCHW)
 *     -> conv3x3 3->64, pad 1, + bias, ReLU
 *     -> 6 x (conv3x3 64->64, pad 1, + bias, ReLU)
 *     -> global average pool over 64x64            -> [B][64]
 *     -> Linear 64->10 + bias                      -> logits [B][10]
 *
 * The convolutions are cuDNN (legacy API, CUDNN_FMA_MATH, so no TF32); the
 * pooling and the Linear layer are two small kernels (cnn_kernels.cu).
 *
 * The model object owns its host parameters and its cuDNN descriptors, but
 * no device memory. The caller provides:
 * - persistent device parameters: cnn_param_floats() floats, 256-byte
 *   aligned, filled from cnn_host_params() (cnn_set_device_params());
 * - per forward pass: the input x [B][3][64][64], the output logits [B][10],
 *   one scratch buffer of cnn_scratch_bytes() (activation ping-pong buffers
 *   and the pooled features; 256-byte aligned) and one cuDNN workspace of
 *   cnn_workspace_bytes() (may be 0: then pass NULL).
 *
 * Algorithms are chosen by cnn_prepare(), with heuristics only
 * (cudnnGetConvolutionForwardAlgorithm_v7: no device memory, no
 * synchronization), so it may be called from an eager run of a cgr step.
 * It must not be called while the stream is being captured.
 * cnn_forward_enqueue() only enqueues work: no synchronization, no
 * allocation, no host reads of device data. It can be captured.
 *
 * Typical cgr step (model m, built for the step's B):
 *
 *     cudnnHandle_t h;  cgr_stream s;  void *x, *y, *scratch, *ws = NULL;
 *     cgr_ctx_cudnn(ctx, &h);  cgr_ctx_stream(ctx, &s);
 *     if (!cgr_ctx_is_capturing(ctx) && cnn_prepare(m, h) != 0) return ...;
 *     cgr_ctx_input(ctx, 0, &x);  cgr_ctx_output(ctx, 0, &y);
 *     cgr_ctx_alloc(ctx, cnn_scratch_bytes(m), &scratch);
 *     if (cnn_workspace_bytes(m)) cgr_ctx_alloc(ctx, cnn_workspace_bytes(m), &ws);
 *     if (cnn_forward_enqueue(m, h, s, x, y, scratch, ws) != 0) return ...;
 *
 * cnn_prepare() chooses once; later calls return at once (whatever the
 * handle, as long as the current device is the same), so the step makes the
 * same scratch requests on every run, and one model may serve the cuDNN
 * handles of several cgr runtimes on one device.
 *
 * Fusion. Where the chosen algorithm is IMPLICIT_PRECOMP_GEMM, a layer runs
 * as one cudnnConvolutionBiasActivationForward call (convolution, bias and
 * ReLU in one kernel). Otherwise it runs as cudnnConvolutionForward +
 * cudnnAddTensor + cudnnActivationForward. If cuDNN refuses the fused call
 * (any status but an execution failure: NOT_SUPPORTED above all; it then
 * launches nothing), that layer falls back to the three calls for good, and
 * if cudnnConvolutionForward refuses the chosen algorithm with NOT_SUPPORTED,
 * the layer falls back to IMPLICIT_GEMM (no workspace). cnn_describe() names
 * the first such fallback. The decisions are recorded inside the
 * model (so cnn_forward_enqueue() writes to it even though it takes a const
 * pointer; do not run forward passes of one model from two threads at once).
 * Run one eager forward pass before capturing, as cgr's warm-up does, so the
 * captured graph holds the settled path.
 *
 * Determinism: only algorithms that cuDNN reports as deterministic are
 * used, and the custom kernels sum in a fixed order, so two forward passes
 * on the same input give bitwise the same logits.
 *
 * Every function that can fail returns 0 on success and a negative
 * cnn_error code on failure, with a message for the calling thread in
 * cnn_last_error().
 *
 * This header needs only a C11 compiler: the CUDA and cuDNN handle types
 * appear through their struct tags (as in cgr.h), so a cnn_stream is a
 * cudaStream_t and a cnn_cudnn_handle is a cudnnHandle_t.
 */
#ifndef BENCH_CNN_H
#define BENCH_CNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Same type as cudaStream_t. */
typedef struct CUstream_st *cnn_stream;
/** Same type as cudnnHandle_t. */
typedef struct cudnnContext *cnn_cudnn_handle;

/* ---- architecture --------------------------------------------------------- */

#define CNN_IN_C 3     /**< input channels */
#define CNN_H 64       /**< input height (kept by every pad-1 3x3 convolution) */
#define CNN_W 64       /**< input width */
#define CNN_CH 64      /**< channels of every convolution's output */
#define CNN_N_CONV 7   /**< convolution layers: 3->64 then 6 x 64->64 */
#define CNN_CLASSES 10 /**< logits per sample */
#define CNN_MAX_BATCH 4096
/** Alignment of every tensor in the flat parameter buffer, in floats (256 bytes). */
#define CNN_PARAM_ALIGN_FLOATS 64
/** Alignment the scratch and parameter buffers must have, in bytes. */
#define CNN_BUFFER_ALIGN 256

/**
 * Where each tensor lives in the flat parameter buffer, in floats.
 * conv l: weight [CNN_CH][cin(l)][3][3] at conv_w[l], bias [CNN_CH] at
 * conv_b[l], with cin(0) = CNN_IN_C and cin(l > 0) = CNN_CH. Linear: weight
 * [CNN_CLASSES][CNN_CH] (row-major, out x in) at fc_w, bias [CNN_CLASSES]
 * at fc_b. Offsets are multiples of CNN_PARAM_ALIGN_FLOATS; the padding
 * between tensors is zero and never read.
 */
typedef struct cnn_layout {
    size_t conv_w[CNN_N_CONV];
    size_t conv_b[CNN_N_CONV];
    size_t fc_w;
    size_t fc_b;
    size_t n_floats; /**< total, padding included */
} cnn_layout;

/** Input channels of convolution layer l. */
static inline int cnn_conv_cin(int l)
{
    return l == 0 ? CNN_IN_C : CNN_CH;
}

static inline size_t cnn_align_floats_(size_t n)
{
    return (n + CNN_PARAM_ALIGN_FLOATS - 1) / CNN_PARAM_ALIGN_FLOATS * CNN_PARAM_ALIGN_FLOATS;
}

/** Writes the parameter layout (the same for every batch size). */
static inline void cnn_layout_init(cnn_layout *lay)
{
    size_t off = 0;
    for (int l = 0; l < CNN_N_CONV; l++) {
        lay->conv_w[l] = off;
        off = cnn_align_floats_(off + (size_t)CNN_CH * (size_t)cnn_conv_cin(l) * 9u);
        lay->conv_b[l] = off;
        off = cnn_align_floats_(off + CNN_CH);
    }
    lay->fc_w = off;
    off = cnn_align_floats_(off + (size_t)CNN_CLASSES * CNN_CH);
    lay->fc_b = off;
    off = cnn_align_floats_(off + CNN_CLASSES);
    lay->n_floats = off;
}

/* ---- errors ---------------------------------------------------------------- */

typedef enum cnn_error {
    CNN_OK = 0,
    CNN_ERR_ARG = -1,    /**< NULL, out of range or misaligned argument */
    CNN_ERR_STATE = -2,  /**< call not allowed now (e.g. forward before prepare) */
    CNN_ERR_NOMEM = -3,  /**< host allocation failed */
    CNN_ERR_CUDA = -4,   /**< a CUDA runtime call or kernel launch failed */
    CNN_ERR_CUDNN = -5   /**< a cuDNN call failed */
} cnn_error;

/**
 * Message of the calling thread's last failure: the failing call, the
 * CUDA/cuDNN error text and file:line. Empty when there was none.
 */
const char *cnn_last_error(void);

/* ---- model ------------------------------------------------------------------- */

typedef struct cnn cnn;

/** How cnn_prepare() chooses the convolution algorithms (CNN_ALGO_MEASURED by default). */
typedef enum cnn_algo_policy {
    /**
     * IMPLICIT_PRECOMP_GEMM with the fused conv+bias+ReLU call
     * whenever cuDNN's heuristics list it as usable (FMA math,
     * deterministic, workspace within the limit); otherwise the heuristics'
     * first usable algorithm, unfused.
     */
    CNN_ALGO_AUTO = 0,
    /** Like CNN_ALGO_AUTO, but always conv + add bias + ReLU as three calls. */
    CNN_ALGO_UNFUSED,
    /**
     * Every usable algorithm of the heuristics' list, fused and unfused, is
     * timed on the device (on the handle's stream, with the model's own
     * weights and random inputs), and the fastest is kept per layer shape.
     * Needs cnn_set_device_params() first; cnn_prepare() then allocates,
     * synchronizes the stream and frees, so call it outside capture.
     */
    CNN_ALGO_MEASURED,
    CNN_ALGO_POLICY_COUNT_
} cnn_algo_policy;

/**
 * Creates a model for batch size B (1..CNN_MAX_BATCH) with host parameters
 * drawn from `seed`: He-uniform weights U(-sqrt(6/fan_in), +sqrt(6/fan_in)),
 * biases U(-1/sqrt(fan_in), +1/sqrt(fan_in)); never exactly zero. The
 * parameters depend only on the seed, not on B. No GPU is touched.
 */
int cnn_create(cnn **out, int B, uint64_t seed);
/** Destroys the descriptors and the object. Accepts NULL and *m == NULL; sets *m to NULL. */
void cnn_destroy(cnn **m);

/** The batch size the model was created for. */
int cnn_batch(const cnn *m);
/** Floats in the flat parameter buffer (padding included). */
size_t cnn_param_floats(const cnn *m);
/** Copies the host parameters (cnn_param_floats() floats) to dst. */
void cnn_host_params(const cnn *m, float *dst);
/**
 * Tells the model where its parameters live on the device
 * (cnn_param_floats() floats, 256-byte aligned, already uploaded, and kept
 * alive by the caller while the model is used).
 */
int cnn_set_device_params(cnn *m, float *dev_params);

/** Selects the algorithm policy (default CNN_ALGO_MEASURED); the next cnn_prepare() applies it. */
int cnn_set_algo_policy(cnn *m, cnn_algo_policy policy);

/**
 * Creates the cuDNN descriptors and chooses the algorithms for the current
 * device: from the heuristics alone (no device memory, no synchronization)
 * or, with CNN_ALGO_MEASURED, by timing them. Once it
 * has succeeded, later calls return 0 at once until cnn_set_algo_policy()
 * is called; a later call on another current
 * device fails with CNN_ERR_STATE. Never call it while the handle's stream
 * is being captured.
 */
int cnn_prepare(cnn *m, cnn_cudnn_handle handle);
/** Workspace bytes the forward pass needs (valid after cnn_prepare(); may be 0). */
size_t cnn_workspace_bytes(const cnn *m);
/**
 * Scratch bytes the forward pass needs: two activation buffers of
 * B*64*64*64 floats plus the pooled features [B][64] (valid after
 * cnn_create()).
 */
size_t cnn_scratch_bytes(const cnn *m);
/**
 * One line describing the choice made by cnn_prepare(), e.g.
 * "conv0 IMPLICIT_PRECOMP_GEMM fused ws 0 B; conv1-6 ...". Reflects later
 * fused-to-unfused fallbacks too.
 */
const char *cnn_describe(const cnn *m);
/** Number of layers currently running the fused call (0..CNN_N_CONV). */
int cnn_fused_layers(const cnn *m);

/**
 * Enqueues one forward pass on `stream`: logits[B][10] from x[B][3][64][64].
 * `handle` must be the one passed to cnn_prepare() and bound to `stream`
 * (cudnnSetStream). x, logits: device memory; scratch: cnn_scratch_bytes(),
 * 256-byte aligned; workspace: cnn_workspace_bytes() (NULL when 0).
 * No synchronization and no allocation: capturable.
 */
int cnn_forward_enqueue(const cnn *m, cnn_cudnn_handle handle, cnn_stream stream,
                        const float *x, float *logits, void *scratch, void *workspace);

#ifdef __cplusplus
}
#endif

#endif
