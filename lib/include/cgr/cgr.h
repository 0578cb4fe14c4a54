/**
 * @file
 * cgr: a CUDA-graph replay runtime.
 *
 * A step function enqueues one step of GPU work on the stream cgr gives it.
 * cgr runs it eagerly a few times (warm-up), records the step's scratch
 * requests, plans them into a static arena, captures the step into a CUDA
 * graph with the input and output staging inside it, and from then on runs
 * each step with a single cudaGraphLaunch.
 *
 * This header needs only a C11 compiler: CUDA types appear through the
 * struct tags that the CUDA headers themselves use, so a cgr_stream is a
 * cudaStream_t, and the handles returned by cgr_ctx_cublas() and
 * cgr_ctx_cudnn() are a cublasHandle_t and a cudnnHandle_t.
 *
 * Threads: runtimes share no state but the process's one CUPTI client
 * (one profile window at a time; docs/threading.md), so each thread may
 * own one. A runtime
 * may also be shared: a per-runtime lock serializes the calls that touch
 * it, and a call that conflicts with another thread's use of the same step
 * returns CGR_STATUS_BUSY (try again) or, for a slot another thread
 * acquired, CGR_STATUS_WRONG_STATE, instead of corrupting it.
 * docs/threading.md has the rules.
 *
 * Errors: every call that can fail returns a cgr_status, and
 * cgr_last_error() gives the detail. A call given bad input (a NULL
 * pointer it needs, a value out of range, a pointer that is not a handle of
 * the kind it takes) returns CGR_STATUS_INVALID_ARGUMENT or
 * CGR_STATUS_INVALID_HANDLE, launches nothing and changes nothing;
 * docs/errors.md has the table of bad inputs that are tested. Each
 * function's comment names its other statuses.
 */
#ifndef CGR_H
#define CGR_H

#include <stddef.h>
#include <stdint.h>

#include "cgr/cgr_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Marks the functions libcgr exports. Empty in a program's view of the
 * headers; the library's own build gives them default visibility, since it
 * hides every other symbol.
 */
#if defined(CGR_BUILDING_LIBRARY) && defined(__GNUC__)
#define CGR_API __attribute__((visibility("default")))
#else
#define CGR_API
#endif

/** Same type as cudaStream_t. */
typedef struct CUstream_st *cgr_stream;
/** Same type as cublasHandle_t. */
typedef struct cublasContext *cgr_cublas_handle;
/** Same type as cudnnHandle_t. */
typedef struct cudnnContext *cgr_cudnn_handle;

/**
 * Status codes. One list generates the enum, cgr_status_name() and
 * cgr_status_string(), so the three can never disagree. New statuses are
 * only added at the end: a value keeps its meaning across versions.
 * CGR_STATUS_INTERNAL reports a bug in cgr itself, never a misuse.
 * Each entry is X(name, value, text); a program may expand the list with
 * its own X to build a table of every status.
 */
#define CGR_STATUS_MAP(X)                                                                  \
    X(OK, 0, "success")                                                                    \
    X(INVALID_ARGUMENT, 1, "an argument is NULL, out of range or inconsistent")            \
    X(INVALID_HANDLE, 2, "the pointer is not a cgr handle of the kind the call takes")     \
    X(OUT_OF_MEMORY, 3, "device or pinned host memory could not be allocated")             \
    X(NO_DEVICE, 4, "no usable CUDA device (missing driver or no GPU)")                    \
    X(CUDA_ERROR, 5, "a CUDA runtime or driver call failed")                               \
    X(CUBLAS_ERROR, 6, "a cuBLAS call failed")                                             \
    X(CUDNN_ERROR, 7, "a cuDNN call failed")                                               \
    X(NOT_SUPPORTED, 8, "the feature is not available in this build or on this device")   \
    X(CAPTURE_FAILED, 9, "the step could not be captured into a CUDA graph")               \
    X(TRACE_MISMATCH, 10, "the step's scratch requests differ from its warm-up")           \
    X(ARENA_LIMIT, 11, "the scratch plan needs more than the arena limit allows")          \
    X(BUSY, 12, "every staging slot holds an unwaited result, or another thread uses the step") \
    X(STEP_FAILED, 13, "the user's step function returned an error")                       \
    X(WRONG_STATE, 14, "the call is not allowed in the current state")                    \
    X(INTERNAL, 15, "an internal error in cgr (a bug in cgr itself; please report it)")    \
    X(TIMEOUT, 16, "an operation did not complete in the time allowed")                    \
    X(COMM_ERROR, 17, "an NCCL or inter-process communication call failed")

/** Result of every call that can fail. */
typedef enum cgr_status {
#define CGR__STATUS_ENUM(name, value, text) CGR_STATUS_##name = value,
    CGR_STATUS_MAP(CGR__STATUS_ENUM)
#undef CGR__STATUS_ENUM
        CGR_STATUS_COUNT_ /**< one past the last status; not a status itself */
} cgr_status;

/** "CGR_STATUS_OK" and so on; "CGR_STATUS_UNKNOWN" for values outside the list. */
CGR_API const char *cgr_status_name(cgr_status s);
/** One-line description of a status; never NULL. */
CGR_API const char *cgr_status_string(cgr_status s);
/**
 * Detail of the last failure on the calling thread, led by the public
 * function that failed: the step, the failing call and the CUDA/cuBLAS/
 * cuDNN error text (for CGR_STATUS_INTERNAL also the place in cgr's
 * source). Empty string when the thread
 * has seen no failure. Valid until the thread's next cgr call.
 */
CGR_API const char *cgr_last_error(void);

/**
 * Version of the cgr library actually loaded, such as "0.1.0" (the meson
 * project version it was built from). It can differ from the header's
 * CGR_VERSION_STRING when a program runs with another libcgr than the one
 * it was compiled against. Never NULL; a static string.
 */
CGR_API const char *cgr_version(void);

/** Element types of step inputs and outputs. */
typedef enum cgr_dtype {
    CGR_DTYPE_F32 = 0, /**< 32-bit IEEE float (4 bytes) */
    CGR_DTYPE_F16,     /**< 16-bit IEEE half float (2 bytes) */
    CGR_DTYPE_BF16,    /**< bfloat16 (2 bytes) */
    CGR_DTYPE_F64,     /**< 64-bit IEEE double (8 bytes) */
    CGR_DTYPE_I32,     /**< int32_t */
    CGR_DTYPE_I64,     /**< int64_t */
    CGR_DTYPE_U8,      /**< uint8_t */
    CGR_DTYPE_COUNT_   /**< number of dtypes; not a dtype itself */
} cgr_dtype;

/** Bytes per element of a dtype; 0 for an invalid dtype. */
CGR_API size_t cgr_dtype_size(cgr_dtype t);
/** "f32" and so on; "invalid" outside the enum. */
CGR_API const char *cgr_dtype_name(cgr_dtype t);

/** Log levels; the default is CGR_LOG_OFF (the library prints nothing). */
typedef enum cgr_log_level {
    CGR_LOG_OFF = 0, /**< prints nothing */
    CGR_LOG_ERROR,   /**< errors, such as a capture the NCCL ranks could not agree on */
    CGR_LOG_WARN,    /**< also warnings: a shape that runs eagerly, the churn guard, an
                          armed run past its timeout */
    CGR_LOG_INFO,    /**< also each runtime created, graph captured or written, and
                          communicator attached */
    CGR_LOG_DEBUG    /**< also each step's buffers and scratch plan */
} cgr_log_level;

/** Receives log lines (no trailing newline). */
typedef void (*cgr_log_fn)(cgr_log_level level, const char *message, void *user);

/**
 * @name Limits
 * They keep the per-step tables fixed-size, so the replay path never
 * allocates.
 * @{
 */
#define CGR_MAX_RANK 8     /**< most dims of a tensor (cgr_tensor_desc.rank) */
#define CGR_MAX_TENSORS 16 /**< most inputs, and most outputs, of a step */
#define CGR_MAX_SLOTS 16   /**< most staging slots per step (cgr_options.staging_slots) */
#define CGR_MAX_WARMUP 100 /**< most warm-up runs (cgr_options.warmup_runs) */
#define CGR_MAX_NAME 63    /**< most characters of a step's, tensor's or dynamic dim's name */
/** @} */

/**
 * @name Versioned structs
 * cgr_options, cgr_step_desc and cgr_nccl_options begin
 * with struct_size, which their init function sets to the size this header
 * declares, and later versions of cgr only add fields at their end. The
 * library reads struct_size bytes of the caller's struct:
 *  - a smaller struct (a program built against an older header) is read up
 *    to struct_size, and the fields past it take their defaults;
 *  - a larger one (a newer header than the library) is accepted when every
 *    byte past the fields this library knows is zero, which is what the
 *    init function leaves there; a non-zero byte asks for something this
 *    library cannot do, and the call is refused with
 *    CGR_STATUS_INVALID_ARGUMENT rather than ignoring it;
 *  - a struct_size below the first version's fields, or above
 *    CGR_MAX_STRUCT_SIZE, is refused: the struct was not initialized.
 *
 * The structs cgr fills in (cgr_step_stats, cgr_runtime_stats,
 * cgr_shape_info) grow the same way. Their calls are inline wrappers that
 * pass the sizeof this header declares to a `_size` function, so the
 * library knows how large the caller's struct is: it writes the fields
 * both know, zeros those of a newer header that it does not know, and
 * never writes past that size. A size below the first version's fields,
 * or above CGR_MAX_STRUCT_SIZE, is refused with nothing written.
 * @{
 */
#define CGR_MAX_STRUCT_SIZE 16384 /**< largest size of a versioned struct accepted */
/** @} */

/**
 * The profile window (cgr_options.profile; docs/wrapping.md, "Is my step
 * launch-bound?"). Once a step replays a checked graph for its shape and
 * `skip` more runs of it have passed, its next 2 x `runs` runs of that
 * shape alternate eager and graph (eager first), measured with CUPTI,
 * which cgr loads then (the environment variable CGR_CUPTI_LIBRARY names
 * another file) and detaches when the window closes. The eager runs
 * compute what the graph would; cgr_step_run_action() reads them as
 * CGR_RUN_EAGER. Armed runs (CGR_ACQUIRE_ARM) are not part of a window.
 * The results go to cgr_step_stats.profile and to the files
 * PATH.STEP.txt, PATH.STEP.json and PATH.STEP.trace.json (PATH the prefix
 * below, STEP the step's name). One step is profiled at a time in a
 * process; another step's window waits until it is done.
 */
typedef struct cgr_profile_options {
    int runs;         /**< runs of each mode in the window, 1..1000000; 0 (default): no
                           profile. Set by the environment variable CGR_PROFILE (for
                           example CGR_PROFILE=200 or CGR_PROFILE=200,skip=50,path=/tmp/p)
                           when the options leave it 0 */
    int skip;         /**< graph runs to let pass before the window opens,
                           0..1000000000; default 10 */
    const char *path; /**< file prefix of the reports; NULL (default): "cgr_profile" in the
                           working directory. The runtime keeps its own copy */
} cgr_profile_options;

/**
 * Runtime options. Always start from cgr_options_init(): it writes the
 * defaults and struct_size (see "Versioned structs" above).
 * cgr_runtime_create() copies the options, and the dump_dir, frozen_allow
 * and profile.path strings with them, so the caller may reuse or free both once it returns.
 *
 * The guides explain the groups of fields: docs/shapes.md the shape cache
 * and the churn guard (shape_cache_entries to churn_stable),
 * docs/staging.md ("Armed runs") arm_timeout_us, docs/wrapping.md the
 * frozen-value check (frozen_check, frozen_allow, frozen_recheck).
 */
typedef struct cgr_options {
    size_t struct_size;        /**< set by cgr_options_init() */
    int device;                /**< CUDA device ordinal; default 0 */
    int staging_slots;         /**< pinned input/output slots per step, 2..CGR_MAX_SLOTS;
                                    default 2 */
    int warmup_runs;           /**< eager runs before capture, 1..CGR_MAX_WARMUP; default 2 */
    cgr_log_level log_level;   /**< default CGR_LOG_OFF; the environment variable CGR_LOG
                                    (off, error, warn, info or debug), when set to one of
                                    those, overrides it */
    size_t arena_limit;        /**< bytes of scratch arena allowed, 1 MiB..1 TiB; default
                                    16 GiB */
    int capture;               /**< 1 (default): capture after warm-up; 0: run every step
                                    eagerly (a baseline, or to rule graphs out when
                                    debugging) */
    const char *dump_dir;      /**< when set (or, when NULL, the environment variable
                                    CGR_DUMP_DIR at cgr_runtime_create), each captured graph
                                    is written there as a Graphviz DOT file,
                                    DIR/cgr-STEP-N.dot for the step's N-th capture (from
                                    1; STEP is the step's name, each character other than
                                    a letter, a digit, '-', '_' and '.' written as '_');
                                    the runtime keeps its own copy of the string */
    cgr_log_fn log_fn;         /**< NULL: log lines go to stderr, when the level asks */
    void *log_user;            /**< passed to log_fn */
    /*
     * Shape changes (steps with dynamic dims; docs/shapes.md). Each step
     * keeps its own graph cache; warmup_runs above applies to every new
     * shape.
     */
    int shape_cache_entries;   /**< graphs cached per step, 1..4096; default 16 */
    size_t shape_cache_bytes;  /**< byte budget of a step's cached graphs (their estimated
                                    size, see cgr_shape_info.bytes); 0 (default): none */
    int churn_shapes;          /**< churn guard: this many new shapes (K) ... 0: guard off;
                                    0..64; default 8 */
    int churn_window;          /**< ... within this many runs (W >= K) make uncached shapes
                                    run eagerly; default 64 */
    int churn_stable;          /**< runs without a new shape (S >= 1) before capturing
                                    again; default 32 */
    unsigned arm_timeout_us;   /**< an armed run (CGR_ACQUIRE_ARM) that is not launched within
                                    this long gives its stream back: it runs on whatever the
                                    slot holds, and its launch runs the graph again;
                                    1..60000000; default 100000 (0.1 s) */
    /*
     * The frozen-value check (docs/wrapping.md). A graph replays the host
     * values it was captured with: a kernel argument, memset value or copy
     * address that the step changes from run to run would be frozen.
     * With the check on, the run after each shape's first capture is
     * captured as well and compared with it node by node; the same graph
     * replays from then on (no second instantiation), a different one
     * never does: that run executes from its own second capture, the
     * shape's later runs eagerly (CGR_EAGER_FROZEN_VALUE), and
     * capture_error names the kernel, the parameter and both values.
     * Nothing is added to a replay.
     */
    int frozen_check;          /**< 1 (default): on; 0: off, every capture is trusted */
    const char *frozen_allow;  /**< comma-separated strings; a kernel whose (mangled) name
                                    contains one of them may differ between the two
                                    captures (its first capture is replayed). NULL
                                    (default): none. NCCL's kernels are always allowed.
                                    The runtime keeps its own copy */
    int diagnose;              /**< 1: when a capture fails, run it once more while watching
                                    every CUDA call (CUPTI), and name in the message the
                                    first call that failed, its error and its caller (with
                                    the call's file:line when the caller was built with
                                    -g). The step function is called once more for that
                                    run. Also set by the environment variable
                                    CGR_DIAGNOSE=1. 0 (default): the message gives the
                                    error and its likely causes */
    /* Tuning: see cgr_options::advanced below. */
    struct cgr_advanced_options {
        size_t zero_copy_max_bytes; /**< tensors up to this size cross PCIe by zero-copy
                                         kernels, larger ones by memcpy nodes; default 16 MiB,
                                         at most 1 GiB */
        unsigned wait_spin_us;      /**< cgr_step_wait spins up to this long on a graph run's
                                         completion flag, then blocks on the step's graph
                                         event (polls, with a later run in flight); 0 skips
                                         the spin (less CPU, a few us later); default 200,
                                         at most 1000000 */
        int shape_spare;            /**< 1: keep one evicted executable as a spare for
                                         update in place (outside the byte budget);
                                         default 0 */
    } advanced;
    cgr_profile_options profile; /**< the profile window (cgr_profile_options); off by
                                      default. Not for steps that use an NCCL
                                      communicator (docs/wrapping.md) */
    unsigned frozen_recheck;   /**< the frozen-value check again, later: after every this
                                    many replays of a checked graph, its shape's next run is
                                    captured once more and compared with the graph it
                                    replays, as at the check after its capture, and a
                                    difference stops its replays the same way. It catches a
                                    value that was the same at a shape's first two runs and
                                    changed later (a learning rate that decays in steps, a
                                    flag switched between phases); the replays before that
                                    recheck used the old value. Each cached graph then keeps
                                    its template in host memory. No effect with
                                    frozen_check = 0. 0 (default): no recheck;
                                    at most 1000000000. Also set by the environment
                                    variable CGR_FROZEN_RECHECK=N when the options leave
                                    it 0 (docs/wrapping.md, "Values that change later") */
} cgr_options;

/**
 * @var cgr_options::advanced
 * Tuning that the defaults settle for most steps (docs/staging.md and
 * docs/shapes.md say why); cgr_options_init() writes them.
 * Change it to try an alternative on your own workload, not to make a step
 * work.
 *
 * @struct cgr_options::cgr_advanced_options
 * The type of cgr_options.advanced: tuning that the defaults settle for
 * most steps.
 */

/**
 * Writes the default options into the caller's struct of struct_size bytes
 * and sets opt->struct_size to it; never writes past struct_size. Called
 * through cgr_options_init(), which passes the size this header declares.
 * CGR_STATUS_INVALID_ARGUMENT for NULL or a size outside the range of
 * "Versioned structs".
 */
CGR_API cgr_status cgr_options_init_size(cgr_options *opt, size_t struct_size);
/** Writes the default options. Fails only on NULL. */
static inline cgr_status cgr_options_init(cgr_options *opt)
{
    return cgr_options_init_size(opt, sizeof(cgr_options));
}

/**
 * @name Handles
 * cgr_runtime, cgr_step and cgr_ctx pointers begin with a magic
 * word, and a call given a pointer whose word is not the one its kind
 * carries returns CGR_STATUS_INVALID_HANDLE: a cheap check that catches a
 * foreign or garbage pointer, or a runtime passed as a step. It is a
 * debugging aid, not a guarantee. Using a handle after it was destroyed
 * (cgr_runtime_destroy() also destroys the runtime's steps) is undefined
 * behaviour, as using memory after free() is: the memory may already hold
 * something else. A cgr_ctx is only valid inside the step function it was
 * passed to.
 * @{
 */

/** A runtime: one device, one stream, one scratch arena, library handles. */
typedef struct cgr_runtime cgr_runtime;
/** A step registered with a runtime. */
typedef struct cgr_step cgr_step;
/** Context handed to the step function while it runs. */
typedef struct cgr_ctx cgr_ctx;
/** @} */

/**
 * Creates a runtime on opt->device (opt may be NULL for the defaults).
 * Returns CGR_STATUS_NO_DEVICE when no GPU or driver can be used.
 */
CGR_API cgr_status cgr_runtime_create(cgr_runtime **out, const cgr_options *opt);
/**
 * Waits for the runtime's stream, destroys every step still registered and
 * releases all device and pinned memory. Accepts NULL and *rt == NULL;
 * sets *rt to NULL. The runtime and its steps must not be used afterwards
 * (undefined behaviour; see "Handles" above). CGR_STATUS_BUSY (and nothing
 * freed) while another thread waits on one of its steps or holds an
 * acquired slot; no other thread may start a call on the runtime once this
 * is called.
 */
CGR_API cgr_status cgr_runtime_destroy(cgr_runtime **rt);
/** The runtime's stream (a cudaStream_t). */
CGR_API cgr_status cgr_runtime_stream(const cgr_runtime *rt, cgr_stream *out);

/** Shape and type of one step input or output. */
typedef struct cgr_tensor_desc {
    const char *name;               /**< non-empty, at most CGR_MAX_NAME characters;
                                         unique within the step */
    cgr_dtype dtype;                /**< element type */
    int rank;                       /**< 0..CGR_MAX_RANK (0 is a scalar) */
    int64_t dims[CGR_MAX_RANK];     /**< each >= 1 */
} cgr_tensor_desc;

/** Most dynamic dims a step may declare. */
#define CGR_MAX_DYN_DIMS 8
/** Most sizes in a bucket list. */
#define CGR_MAX_BUCKETS 64

/**
 * A dynamic dim of a step, for example the batch size of a serving step.
 * Each run gives its true value; cgr rounds it up to a bucket, pads the
 * inputs to the bucket, and keeps one graph per combination of buckets.
 */
typedef struct cgr_dyn_dim {
    const char *name;        /**< for messages ("batch"); non-empty, at most CGR_MAX_NAME
                                  characters, unique in the step */
    const int64_t *buckets;  /**< strictly increasing sizes, the first >= 1 (copied);
                                  NULL: the powers of two below max, then max */
    int n_buckets;           /**< 1..CGR_MAX_BUCKETS with a list; 0 without */
    int64_t max;             /**< the largest size; with a list it must equal the last one */
} cgr_dyn_dim;

/**
 * Where a dynamic dim appears: axis `axis` of inputs[tensor] (output 0) or
 * outputs[tensor] (output 1). The tensor's declared dims[axis] must equal
 * the dim's max: tensors are declared at their largest shape, which sizes
 * their device buffers and staging slots once for all buckets.
 */
typedef struct cgr_dim_use {
    int dim;     /**< index into cgr_step_desc.dyn_dims */
    int output;  /**< 0: an input, 1: an output */
    int tensor;  /**< index into inputs or outputs */
    int axis;    /**< 0..rank-1; each (output, tensor, axis) at most once */
} cgr_dim_use;

/**
 * A step function. It enqueues one step of GPU work on cgr_ctx_stream(ctx)
 * and nothing else: no host synchronization, no cudaMalloc/cudaFree (use
 * cgr_ctx_alloc), no reading device data on the host (make it an output).
 * Anything but CGR_STATUS_OK makes the run fail with CGR_STATUS_STEP_FAILED,
 * except after a cgr_ctx_* call failed on cgr's side (scratch, the cuBLAS or
 * cuDNN handle, the RNG state): then the run fails with that call's status
 * (e.g. CGR_STATUS_OUT_OF_MEMORY, CGR_STATUS_CUBLAS_ERROR) and message.
 * A function that returns CGR_STATUS_OK while one of its CUDA calls failed
 * (cudaGetLastError() reports it after the call) fails an eager or warm-up
 * run with CGR_STATUS_CUDA_ERROR: that run's outputs are not valid.
 * It must make the same scratch requests, in the same order, on every call
 * (for a step with dynamic dims: on every call with the same buckets).
 *
 * It is called by warm-up, eager and capturing runs, and by the runs the
 * frozen-value check captures again (the one after a shape's capture, and
 * one every cgr_options.frozen_recheck replays when that is set), never by
 * a replay: host code in it does not run at every step.
 *
 * It may be called twice for one run: when the capture of a run fails
 * (an illegal call in the step, or a graph CUDA cannot instantiate), that
 * run is not lost; cgr calls the function again, eagerly, on the same
 * inputs (cgr_ctx_is_capturing() tells the calls apart), and the reason is
 * kept in cgr_step_stats.capture_error.
 */
typedef cgr_status (*cgr_step_fn)(cgr_ctx *ctx, void *user);

/**
 * Description of a step. Start from cgr_step_desc_init() (struct_size
 * follows "Versioned structs" above). cgr_step_create() copies what it
 * keeps: names, shapes, bucket lists, padding values.
 */
typedef struct cgr_step_desc {
    size_t struct_size;             /**< set by cgr_step_desc_init() */
    const char *name;               /**< for messages, at most CGR_MAX_NAME characters;
                                         NULL or "" means "step" */
    const cgr_tensor_desc *inputs;  /**< n_inputs entries */
    int n_inputs;                   /**< 0..CGR_MAX_TENSORS */
    const cgr_tensor_desc *outputs; /**< n_outputs entries */
    int n_outputs;                  /**< 0..CGR_MAX_TENSORS */
    cgr_step_fn fn;                 /**< required */
    void *user;                     /**< passed to fn */
    /* Dynamic dims (optional; docs/shapes.md). Without them the step has one shape. */
    const cgr_dyn_dim *dyn_dims;    /**< n_dyn_dims entries (copied) */
    int n_dyn_dims;                 /**< 0..CGR_MAX_DYN_DIMS */
    const cgr_dim_use *dim_uses;    /**< n_dim_uses entries; every dim used at least once */
    int n_dim_uses;                 /**< 0..CGR_MAX_TENSORS * CGR_MAX_RANK */
    /**
     * Value the padding of input i is filled with, converted to its dtype:
     * a floating type takes the nearest value (ties to even), an integer
     * type the value itself, which must be a whole number in its range
     * (else CGR_STATUS_INVALID_ARGUMENT). NULL (default): zeros. Only read
     * when the step has dynamic dims.
     */
    const double *input_pad;
    /**
     * 1: the step's graphs begin with a gate, so CGR_ACQUIRE_ARM can launch
     * a run before its inputs are written (docs/staging.md, "Armed runs").
     * A run launched the ordinary way then waits one PCIe read on the GPU
     * at that gate. Default 0. An armed run that is released,
     * or not launched within arm_timeout_us, still runs its step once on
     * whatever the slot holds: an armable step must compute only from its
     * inputs, with no state it updates in place (persistent buffers), and
     * cgr_ctx_philox() refuses it.
     */
    int armable;
} cgr_step_desc;

/**
 * Writes an empty description into the caller's struct of struct_size bytes,
 * as cgr_options_init_size() does for options. Called through
 * cgr_step_desc_init().
 */
CGR_API cgr_status cgr_step_desc_init_size(cgr_step_desc *desc, size_t struct_size);
/** Writes an empty description with struct_size set. Fails only on NULL. */
static inline cgr_status cgr_step_desc_init(cgr_step_desc *desc)
{
    return cgr_step_desc_init_size(desc, sizeof(cgr_step_desc));
}

/**
 * Registers a step: allocates its static device input/output buffers, its
 * pinned staging slots and their events. Runs nothing. The description and
 * the strings and arrays it points to are copied (the user pointer is
 * kept as given).
 */
CGR_API cgr_status cgr_step_create(cgr_runtime *rt, const cgr_step_desc *desc, cgr_step **out);
/**
 * Waits for the step's work, then frees its graphs, buffers and slots.
 * Accepts NULL and *step == NULL; sets *step to NULL. The step must not be
 * used afterwards (undefined behaviour; see "Handles" above).
 * CGR_STATUS_BUSY (and nothing freed) while another thread waits on the
 * step or holds its acquired slot.
 */
CGR_API cgr_status cgr_step_destroy(cgr_step **step);

/**
 * @name Submitting runs
 * A run goes through one staging slot of pinned host
 * memory: acquire the slot (with the run's dims), write the inputs into it,
 * launch. cgr_step_run() does all three from host pointers. Each launched
 * run has a ticket; wait for it, then read its outputs.
 *
 * For a step with dynamic dims, dims[j] is the true value of dyn_dims[j]
 * for the run (1..its max), and each input is written packed at the true
 * shape (row-major, the dynamic axes at their true sizes). cgr pads each
 * input up to the bucket in the staging slot and makes the true dims
 * readable through cgr_ctx_dim(). A bucket seen before replays its graph;
 * a new one warms up, then captures (or updates a cached executable in
 * place), unless the churn guard or a failed capture makes it run eagerly:
 * cgr_step_run_action() says which happened. For a step without dynamic
 * dims, dims may be NULL (it is not read).
 *
 * The first warmup_runs runs of a shape run eagerly; the next one captures
 * the graph and launches it; with cgr_options.frozen_check (the default)
 * the run after it is captured once more and compared; later runs are one
 * cudaGraphLaunch each (but for a recheck every cgr_options.frozen_recheck
 * replays, when set). A run whose capture fails executes eagerly instead
 * and succeeds (see cgr_step_fn).
 * @{
 */

/** A pinned staging slot handed to the caller. */
typedef struct cgr_slot {
    uint64_t ticket;                      /**< the run this slot will belong to */
    void *inputs[CGR_MAX_TENSORS];        /**< pinned host memory, one per input */
    /**
     * Pinned host memory, one per output, where the run leaves its outputs.
     * Once cgr_step_wait() returned CGR_STATUS_OK for this ticket or a later
     * one, outputs[i] holds output i packed at the run's true shape
     * (cgr_step_output()'s size), readable in place, without a copy, until
     * the slot is acquired again, staging_slots acquires later. Only the
     * thread that drives the step knows when that is: on a step that
     * several threads run, read with cgr_step_output() instead.
     */
    const void *outputs[CGR_MAX_TENSORS];
    int armed;                            /**< CGR_ACQUIRE_ARM: 1 when the run's graph is
                                               already launched and waits for the launch */
} cgr_slot;

/** cgr_step_acquire() flag: launch the run ahead (steps created with desc.armable = 1). */
#define CGR_ACQUIRE_ARM 1u

/**
 * Reserves the next staging slot for a run at `dims` and returns pointers
 * into its pinned memory. Write the inputs there (or with
 * cgr_step_write_input()), then call cgr_step_launch() from the same
 * thread, or cgr_step_release() to give the slot back. Only one slot may
 * be acquired at a time: CGR_STATUS_WRONG_STATE when this thread already
 * holds it, CGR_STATUS_BUSY when another thread does, or when all staging
 * slots hold results that were not waited for yet.
 * CGR_STATUS_INVALID_ARGUMENT (nothing acquired) for bad dims or flags.
 *
 * With CGR_ACQUIRE_ARM, when the run's shape replays a cached graph, the
 * graph is launched now and its first kernel waits on the GPU, polling the
 * slot, until cgr_step_launch() says go: the launch call is then a store
 * to pinned memory, and the launch latency overlaps the time the caller
 * spends writing the inputs (docs/staging.md, "Armed runs").
 * slot->armed says whether that happened; otherwise (a new shape warming
 * up or capturing, an eager shape) the slot is a plain acquired slot.
 * While a run is armed it holds the runtime's stream: other work on that
 * stream (other steps, the caller's own) queues behind it until the
 * launch, cgr_step_release(), or arm_timeout_us. Acquire, write the inputs
 * and launch without pausing in between.
 */
CGR_API cgr_status cgr_step_acquire(cgr_step *step, const int64_t *dims, unsigned flags,
                                    cgr_slot *slot);
/**
 * Copies `bytes` from src into input `index` of the acquired slot, at byte
 * `offset`, the way the GPU reads fastest: with streaming stores that
 * leave no modified line in the CPU's caches (x86-64; a plain copy
 * elsewhere). Writing the inputs this way instead of with memcpy into
 * slot->inputs[index] shortens an armed run, whose GPU reads them right
 * away (docs/staging.md, "Writing inputs"). Call it any number of times (a
 * row at a time, say) between acquire and launch, from the thread that
 * holds the slot; every byte is visible to the GPU when it returns.
 * CGR_STATUS_INVALID_ARGUMENT for a bad index, NULL src, or offset + bytes
 * past the input's size at its largest shape; CGR_STATUS_WRONG_STATE as
 * cgr_step_launch() for a slot that is not held. Nothing is written then.
 */
CGR_API cgr_status cgr_step_write_input(cgr_step *step, const cgr_slot *slot, int index,
                                        size_t offset, const void *src, size_t bytes);
/**
 * Runs the step on the slot from cgr_step_acquire(), at the dims given
 * there. CGR_STATUS_WRONG_STATE when no slot is acquired or another
 * thread acquired it, CGR_STATUS_INVALID_ARGUMENT when slot is not the
 * acquired run's: nothing is launched, and the acquired slot stays held
 * by its thread. Any other failure uses no ticket and gives the slot back,
 * and launched nothing, except where cgr cannot take work back: when the
 * step function fails in an eager run or a warm-up (it returns an error,
 * or a CUDA call it made fails), the input copies and the work it
 * enqueued before failing may still execute. A failed capture is not a
 * failed run: the run executes eagerly (cgr_step_stats.capture_error).
 * A slot given back may hold the inputs spread to the bucket's shape:
 * after acquiring again, write the inputs again.
 */
CGR_API cgr_status cgr_step_launch(cgr_step *step, const cgr_slot *slot);
/**
 * Gives back a slot from cgr_step_acquire() without running the step on
 * it. An armed run is let through: it runs on whatever the slot holds,
 * nobody reads its outputs, and it counts in cgr_step_stats.arm_released.
 * CGR_STATUS_WRONG_STATE when no slot is acquired or another thread holds
 * it; CGR_STATUS_INVALID_ARGUMENT when `slot` is not the acquired one.
 */
CGR_API cgr_status cgr_step_release(cgr_step *step, const cgr_slot *slot);
/**
 * Runs one step asynchronously at `dims`, with inputs copied from host
 * memory (inputs[i] points at the bytes of input i, packed at the run's
 * shape): acquire, write and launch in one call. On success *ticket (may
 * be NULL) identifies the run for cgr_step_wait(). Errors, and what a
 * failed run leaves launched, as cgr_step_acquire() and cgr_step_launch().
 */
CGR_API cgr_status cgr_step_run(cgr_step *step, const int64_t *dims, const void *const *inputs,
                                uint64_t *ticket);

/** cgr_step_wait() ticket: the step's latest launched run. */
#define CGR_TICKET_LAST UINT64_MAX

/**
 * Blocks until run `ticket` (and every earlier run of the step) has
 * finished; CGR_TICKET_LAST waits for every launched run (none launched:
 * returns at once). CGR_STATUS_INVALID_ARGUMENT for a ticket not launched
 * yet. Its outputs can then be read with cgr_step_output()
 * until the run staging_slots tickets later is launched, or in place
 * through cgr_slot.outputs.
 */
CGR_API cgr_status cgr_step_wait(cgr_step *step, uint64_t ticket);
/**
 * Copies output `index` of waited run `ticket` into dst and sets *bytes
 * (may be NULL) to its size; for a step with dynamic dims the output is
 * packed at the run's true shape and that is its size. dst NULL with
 * capacity 0 only sets *bytes. The copy is made under the runtime's lock,
 * so even when several threads run the same step, no later run can
 * overwrite the slot while it is read: on CGR_STATUS_OK every byte is this
 * run's. CGR_STATUS_INVALID_ARGUMENT when capacity is smaller than the
 * output, or when the run's slot was already reused by a later run (the
 * result is gone: launched, or acquired with CGR_ACQUIRE_ARM, which
 * launches at once, even if that slot is then released);
 * CGR_STATUS_WRONG_STATE when the run was not waited for.
 * To read an output in place, without a copy, use cgr_slot.outputs when
 * one thread drives the step, or have the step leave the result in device
 * memory of your own.
 */
CGR_API cgr_status cgr_step_output(cgr_step *step, uint64_t ticket, int index, void *dst,
                                   size_t capacity, size_t *bytes);
/** @} */

/**
 * How the step runs, as its latest replay, capture or failed capture left
 * it: warm-ups of a new shape keep a mode that is not WARMUP, and eager runs
 * by the churn guard or in a profile window change none. What one run did
 * is cgr_step_run_action()'s.
 */
typedef enum cgr_step_mode {
    CGR_MODE_WARMUP = 0, /**< no graph captured yet: eager warm-ups */
    CGR_MODE_GRAPH,      /**< the latest such run captured or replayed a graph */
    CGR_MODE_EAGER       /**< the latest such run's shape was not captured, or failed the
                              frozen-value check, and runs eagerly (see capture_error) */
} cgr_step_mode;

/** What one run of a step did. */
typedef enum cgr_run_action {
    CGR_RUN_REPLAY = 0, /**< launched a cached graph */
    CGR_RUN_WARMUP,     /**< eager warm-up run of a new shape */
    CGR_RUN_CAPTURE,    /**< captured and instantiated a new graph, then launched it */
    CGR_RUN_UPDATE,     /**< captured, updated a cached executable in place, launched it */
    CGR_RUN_EAGER       /**< ran eagerly: capture disabled or failed, churn guard, too large,
                             a frozen value, or the eager half of a profile window */
} cgr_run_action;

/** "replay", "warmup", "capture", "update", "eager"; "invalid" otherwise. */
CGR_API const char *cgr_run_action_name(cgr_run_action a);

/**
 * What run `ticket` did. Valid until its staging slot is reused (the run
 * staging_slots tickets later); CGR_STATUS_INVALID_ARGUMENT after that or
 * for a ticket never launched.
 */
CGR_API cgr_status cgr_step_run_action(const cgr_step *step, uint64_t ticket,
                                       cgr_run_action *out);

/** Why a shape runs eagerly. */
typedef enum cgr_eager_reason {
    CGR_EAGER_NONE = 0,       /**< it does not (a cached or warming shape); counts the
                                   eager runs of a profile window (cgr_options.profile) */
    CGR_EAGER_CHURN,          /**< the churn guard is tripped and the shape is not cached */
    CGR_EAGER_CAPTURE_FAILED, /**< the shape's capture failed, capture is disabled, or its
                                   scratch plan does not fit the arena (arena_limit, device
                                   memory) */
    CGR_EAGER_TOO_LARGE,      /**< its graph alone exceeds shape_cache_bytes */
    CGR_EAGER_FROZEN_VALUE,   /**< its graph froze a host value that changed at the next
                                   run (cgr_options.frozen_check); capture_error says which */
    CGR_EAGER_REASONS         /**< number of reasons; sizes cgr_step_stats.eager_by_reason */
} cgr_eager_reason;

/** Where a step's profile window is (cgr_profile_result.state). */
typedef enum cgr_profile_state {
    CGR_PROFILE_NONE = 0,   /**< no profile asked for, or its window is not open yet */
    CGR_PROFILE_COLLECTING, /**< the window is open: runs alternate eager and graph */
    CGR_PROFILE_DONE,       /**< the window closed; the figures and files are written */
    CGR_PROFILE_FAILED      /**< it could not be taken (error says why); the runs went on */
} cgr_profile_state;

/** What the profile says of the step (cgr_profile_result.verdict). */
typedef enum cgr_profile_verdict {
    CGR_PROFILE_UNKNOWN = 0,  /**< no verdict (no finished profile) */
    CGR_PROFILE_LAUNCH_BOUND, /**< the GPU is idle more than half of an eager run's wall
                                   time: launching is the cost, a graph helps */
    CGR_PROFILE_GPU_BOUND     /**< the GPU is busy at least half of it: the kernels are the
                                   cost, a graph helps little */
} cgr_profile_verdict;

/** Per-run figures of one mode of a profile window, in microseconds. */
typedef struct cgr_profile_mode {
    uint64_t runs;        /**< runs of this mode measured */
    double wall_us;       /**< from when the run could start (its launch call began, or the
                               run before it ended on the GPU, whichever is later) to the end
                               of its last GPU work */
    double cpu_us;        /**< host CPU time of the calling thread in cgr's launch call */
    double busy_us;       /**< GPU time: the sum of its kernel, memcpy and memset durations */
    double busy_union_us; /**< the union of those intervals (overlapping work once) */
    double kernels;       /**< kernels per run (a graph run counts cgr's staging kernels) */
    double idle_share;    /**< 1 - busy_union_us / wall_us over the mode's runs: the share of
                               wall time the GPU is idle, 0..1 */
} cgr_profile_mode;

/** The result of a step's profile window (cgr_step_stats.profile). */
typedef struct cgr_profile_result {
    cgr_profile_state state;     /**< where the window is */
    cgr_profile_verdict verdict; /**< launch-bound or GPU-bound, from the eager runs */
    cgr_profile_mode eager;      /**< the eager runs of the window */
    cgr_profile_mode graph;      /**< the graph runs of the window */
    double speedup;              /**< eager.wall_us / graph.wall_us: how many times faster a
                                      graph run is; 0 when not known */
    char top_kernel[128];        /**< the kernel with the most GPU time (demangled where the
                                      process has a demangler); "" if none */
    double top_kernel_share;     /**< its share of all kernel time in the window, 0..1 */
    cgr_status status;           /**< with CGR_PROFILE_FAILED: why, as a status:
                                      CGR_STATUS_NOT_SUPPORTED when CUPTI could not be
                                      loaded, attached or read; CGR_STATUS_OUT_OF_MEMORY
                                      for a host allocation; CGR_STATUS_CUDA_ERROR when
                                      the window's closing synchronization failed;
                                      CGR_STATUS_INVALID_ARGUMENT when the report files
                                      could not be written (the figures above stand); a
                                      run of the window that failed gives its own status.
                                      CGR_STATUS_OK otherwise */
    char error[1024];            /**< with CGR_PROFILE_FAILED: why, leading with the public
                                      call and the step; "" otherwise */
} cgr_profile_result;

/**
 * Counters of one step, from cgr_step_get_stats(). Each run that launched
 * is counted once, by what it did:
 *
 *     runs = warmup_runs + replays + eager_runs
 *
 * A run that captures a graph launches it, so it counts as a replay too:
 * captures <= replays, updates <= captures, and replays - captures runs
 * replayed a graph that was already cached. eager_runs is the sum of
 * eager_by_reason. A run that failed is in none of them. The eager runs
 * of a profile window (cgr_options.profile) are eager runs of a cached
 * shape: eager_by_reason[CGR_EAGER_NONE] counts them.
 */
typedef struct cgr_step_stats {
    cgr_step_mode mode;           /**< how the step runs (cgr_step_mode says which runs
                                       set it) */
    uint64_t runs;                /**< runs launched */
    uint64_t warmup_runs;         /**< eager runs of a new shape before its capture */
    uint64_t replays;             /**< runs that launched a graph */
    uint64_t captures;            /**< of which made it first: captured, then instantiated
                                       or updated in place */
    uint64_t updates;             /**< of which updated a cached executable in place */
    uint64_t eager_runs;          /**< eager runs other than warm-ups */
    uint64_t eager_by_reason[CGR_EAGER_REASONS]; /**< eager_runs by why; [CGR_EAGER_NONE]:
                                                    a profile window's */
    uint64_t armed_runs;          /**< runs launched ahead (CGR_ACQUIRE_ARM), then launched */
    uint64_t arm_expired;         /**< of which waited past arm_timeout_us and ran again */
    uint64_t arm_released;        /**< armed runs let through without their launch:
                                       cgr_step_release, a failed launch, a warm-up that
                                       traces its scratch (or any run of a shape whose
                                       scratch the arena could not back), the close of a
                                       profile window, or destroy on the runtime */
    /* Shapes (docs/shapes.md). */
    uint64_t new_shapes;          /**< shapes the churn guard saw as new */
    uint64_t frozen_checks;       /**< runs captured again for the frozen-value check
                                       (cgr_options.frozen_check): one per new graph, and one
                                       per recheck (frozen_recheck); each is counted in runs
                                       as what it executed */
    uint64_t capture_failures;    /**< shapes whose capture failed, or whose scratch plan
                                       the arena could not hold; with capture = 0 each
                                       shape counts one when it would have been captured
                                       (its reason text says so) */
    uint64_t update_failures;     /**< updates in place that CUDA refused (then instantiated) */
    uint64_t update_failures_by_reason[16]; /**< by cudaGraphExecUpdateResult; [15]: others */
    uint64_t evictions;           /**< graphs pushed out of the cache, or taken by an update */
    uint64_t churn_activations;   /**< times the churn guard tripped */
    uint64_t churn_recoveries;    /**< times it recovered */
    uint32_t entries;             /**< graphs cached now */
    uint64_t bytes;               /**< their estimated bytes (4 KiB per node) */
    /* Time. */
    double capture_us;            /**< stream capture and the count of its nodes, summed */
    double instantiate_us;        /**< instantiate + first launch, summed over instantiated
                                       graphs */
    double update_us;             /**< update + first launch, summed over updated graphs */
    double last_capture_us;       /**< the same for the latest capture */
    double last_make_us;          /**< its instantiate or update + first launch */
    /* The latest captured graph. */
    uint64_t graph_nodes;         /**< nodes (staging included) */
    uint64_t graph_kernel_nodes;  /**< of which kernel nodes */
    uint64_t graph_memcpy_nodes;  /**< of which memcpy nodes */
    uint64_t zero_copy_tensors;   /**< inputs + outputs staged by zero-copy kernels */
    uint64_t memcpy_tensors;      /**< inputs + outputs staged by memcpy nodes */
    /* Memory. */
    uint64_t scratch_requests;    /**< cgr_ctx_alloc calls per run, of the latest planned shape */
    uint64_t scratch_peak;        /**< largest scratch plan among the step's shapes */
    uint64_t scratch_lower_bound; /**< peak live bytes of the latest planned trace */
    uint64_t pinned_bytes;        /**< the step's pinned staging */
    uint64_t arena_bytes;         /**< the runtime's arena, shared by all steps and shapes */
    char capture_error[512];      /**< why the latest capture failed; "" after a success */
    char last_update_error[256];  /**< why the latest update failed; "" if none */
    char churn_warning[512];      /**< the latest churn guard warning; "" if none */
    cgr_profile_result profile;   /**< the profile window (cgr_options.profile) */
} cgr_step_stats;

/**
 * Counters of one runtime: the run counters are the sums of its live and
 * destroyed steps', defined as in cgr_step_stats.
 */
typedef struct cgr_runtime_stats {
    uint64_t steps;             /**< live steps */
    uint64_t runs;              /**< runs launched */
    uint64_t warmup_runs;       /**< eager runs of a new shape before its capture */
    uint64_t replays;           /**< runs that launched a graph */
    uint64_t captures;          /**< of which captured first */
    uint64_t eager_runs;        /**< eager runs other than warm-ups */
    double capture_us;          /**< the steps' capture_us + instantiate_us + update_us */
    uint64_t arena_reserved;    /**< device bytes mapped for the arena */
    uint64_t arena_planned;     /**< largest step plan (all steps share the arena) */
    uint64_t arena_lower_bound; /**< the largest scratch_lower_bound of the steps (each
                                     that of its latest planned trace) */
    uint64_t persistent_bytes;  /**< step I/O buffers and cgr_persistent_alloc */
    uint64_t pinned_bytes;      /**< all pinned staging */
} cgr_runtime_stats;

/** One shape of a step, from cgr_step_shape_at(). */
typedef struct cgr_shape_info {
    int n_dims;                     /**< the step's dynamic dims */
    int64_t dims[CGR_MAX_DYN_DIMS]; /**< bucketed values */
    int cached;                     /**< 1: a cached graph; 0: a shape that runs eagerly */
    uint64_t replays;               /**< cached: runs its graph was chosen for so far, a
                                         frozen-value check, a profile window's eager
                                         runs and a failed launch included, its capture
                                         run not (cgr_step_stats counts what each run
                                         did) */
    uint64_t last_use;              /**< the shape table's count of decisions (one per
                                         run submitted, a failed one included, a run
                                         refused with CGR_STATUS_BUSY not) at its latest
                                         use: orders the shapes by recency */
    uint64_t bytes;                 /**< cached: estimated bytes of its executable (4 KiB
                                         per node: CUDA reports none) */
    uint64_t eager_runs;            /**< not cached: eager runs */
    cgr_eager_reason reason;        /**< not cached: why */
    char text[256];                 /**< not cached: the capture error or the sizes */
} cgr_shape_info;

/**
 * cgr_step_shape_at() for a struct of `size` bytes ("Versioned structs").
 * Call it through cgr_step_shape_at(), which passes the size.
 */
CGR_API cgr_status cgr_step_shape_at_size(const cgr_step *step, int index, cgr_shape_info *out,
                                          size_t size);
/**
 * Shape `index` of the step: cached graphs first, most recently used
 * first, then the shapes that run eagerly for good.
 * CGR_STATUS_INVALID_ARGUMENT when index is past the last one; out is
 * then left as it was.
 */
static inline cgr_status cgr_step_shape_at(const cgr_step *step, int index, cgr_shape_info *out)
{
    return cgr_step_shape_at_size(step, index, out, sizeof(cgr_shape_info));
}

/**
 * cgr_step_get_stats() for a struct of `size` bytes ("Versioned structs").
 * Call it through cgr_step_get_stats(), which passes the size.
 */
CGR_API cgr_status cgr_step_get_stats_size(const cgr_step *step, cgr_step_stats *out,
                                           size_t size);
/** The step's counters (cgr_step_stats), a consistent snapshot. */
static inline cgr_status cgr_step_get_stats(const cgr_step *step, cgr_step_stats *out)
{
    return cgr_step_get_stats_size(step, out, sizeof(cgr_step_stats));
}
/**
 * cgr_runtime_get_stats() for a struct of `size` bytes ("Versioned
 * structs"). Call it through cgr_runtime_get_stats(), which passes the size.
 */
CGR_API cgr_status cgr_runtime_get_stats_size(const cgr_runtime *rt, cgr_runtime_stats *out,
                                              size_t size);
/** The runtime's counters (cgr_runtime_stats), a consistent snapshot. */
static inline cgr_status cgr_runtime_get_stats(const cgr_runtime *rt, cgr_runtime_stats *out)
{
    return cgr_runtime_get_stats_size(rt, out, sizeof(cgr_runtime_stats));
}

/**
 * Persistent device memory (weights, optimizer state): 256-byte aligned,
 * never moved and never reused while the runtime lives. Not for use inside
 * a step function (CGR_STATUS_WRONG_STATE there).
 */
CGR_API cgr_status cgr_persistent_alloc(cgr_runtime *rt, size_t bytes, void **out);

/* ---- Inside a step function ------------------------------------------- */

/** The stream to enqueue all work on. */
CGR_API cgr_status cgr_ctx_stream(const cgr_ctx *ctx, cgr_stream *out);
/** Static device buffer of input `index` (the address never changes). */
CGR_API cgr_status cgr_ctx_input(const cgr_ctx *ctx, int index, void **out);
/** Static device buffer of output `index`. */
CGR_API cgr_status cgr_ctx_output(const cgr_ctx *ctx, int index, void **out);
/**
 * Shape of input `index` (output = 0) or output `index` (output = 1) in
 * this run: the bucket shape for a step with dynamic dims.
 */
CGR_API cgr_status cgr_ctx_desc(const cgr_ctx *ctx, int output, int index,
                                const cgr_tensor_desc **out);
/**
 * Scratch memory for this run, 256-byte aligned; bytes 1..1 TiB. During
 * capture and replay it is a fixed place in the arena, so the same request
 * gets the same address on every replay. A request that differs from the
 * one the shape's first run made at its place (size or order) returns
 * CGR_STATUS_TRACE_MISMATCH, and the run fails with it.
 */
CGR_API cgr_status cgr_ctx_alloc(cgr_ctx *ctx, size_t bytes, void **out);
/** Ends the lifetime of a scratch buffer (lets the planner reuse it). */
CGR_API cgr_status cgr_ctx_free(cgr_ctx *ctx, void *ptr);
/**
 * The runtime's cuBLAS handle, bound to the stream, with a workspace carved
 * from the arena (cgr calls cublasSetWorkspace after cublasSetStream). Call
 * it on every run: a first call during capture returns
 * CGR_STATUS_WRONG_STATE (creating the handle is not allowed there).
 */
CGR_API cgr_status cgr_ctx_cublas(cgr_ctx *ctx, cgr_cublas_handle *out);
/**
 * Binds a cuBLAS handle of your own to this run, as cgr_ctx_cublas() binds
 * cgr's: cublasSetStream to cgr_ctx_stream(), then cublasSetWorkspace with
 * scratch from the arena. Call it on every run, before the handle's first
 * call in the step. Without a workspace cuBLAS allocates inside the graph
 * (memory-allocation nodes), which CUDA does not allow in every graph.
 * cuBLASLt takes its workspace per call: give it cgr_ctx_alloc() memory.
 * The handle stays yours (cgr never destroys it), and it stays bound to
 * cgr's stream after the run, with the arena's workspace, or with cuBLAS's
 * own after a shape's first run (whose scratch is given back when it
 * ends). After cgr_runtime_destroy(), set its stream and workspace again
 * before using it.
 */
CGR_API cgr_status cgr_ctx_bind_cublas(cgr_ctx *ctx, cgr_cublas_handle handle);
/**
 * The runtime's cuDNN handle, bound to the stream. CGR_STATUS_NOT_SUPPORTED
 * when cgr was built without cuDNN, or when the first call cannot load
 * libcudnn (cgr does not link it; CGR_CUDNN_LIBRARY names the file to load,
 * and the message the files tried); the run then fails with that status.
 * Call it on every run: a first call during capture returns
 * CGR_STATUS_WRONG_STATE. Take convolution workspaces from cgr_ctx_alloc,
 * and choose algorithms while cgr_ctx_is_capturing() is 0.
 */
CGR_API cgr_status cgr_ctx_cudnn(cgr_ctx *ctx, cgr_cudnn_handle *out);
/** Philox parameters of a step, in device memory (see cgr_philox.h). */
typedef struct cgr_philox_state {
    uint64_t seed;   /**< the Philox key */
    uint64_t offset; /**< first counter of this run */
} cgr_philox_state;

/**
 * Graph-safe random numbers. Reserves `count` Philox counters for this run
 * and returns the step's state in device memory plus *sub, where this
 * reservation starts: a kernel draws with counter state->offset + *sub + i,
 * i < count, reading state on the device. After the step function returns,
 * cgr advances state->offset by the run's total inside the graph, so every
 * replay draws new numbers without a new capture, and replay k draws what
 * eager run k would. A step must reserve the same counts on every run of a
 * shape (the run fails with CGR_STATUS_TRACE_MISMATCH otherwise). The first
 * call must come in a warm-up run (it allocates the state;
 * CGR_STATUS_WRONG_STATE during capture). CGR_STATUS_INVALID_ARGUMENT on an
 * armable step.
 */
CGR_API cgr_status cgr_ctx_philox(cgr_ctx *ctx, uint64_t count, const cgr_philox_state **state,
                                  uint64_t *sub);
/**
 * Sets the step's Philox seed and resets its offset to 0 (stream-ordered:
 * it applies to the runs launched after this call). The default seed is 0.
 * CGR_STATUS_WRONG_STATE while an armed run of the step is acquired
 * (CGR_ACQUIRE_ARM launched its graph already): launch or release it first.
 */
CGR_API cgr_status cgr_step_set_seed(cgr_step *step, uint64_t seed);

/**
 * Dynamic dim `index` of this run. *bucket (may be NULL) is the size the
 * run is shaped for: use it for launch shapes, loops and scratch sizes, and
 * read tensors at their bucket shape (cgr_ctx_desc() gives it).
 * *true_value (may be NULL) is the run's true size, for eager decisions
 * only: a graph bakes in what the step did while captured, and replays
 * serve every size of the bucket. *dev (may be NULL) points at the true
 * value in device memory (an int64_t at a fixed address, written by the
 * graph's input staging on every run), for kernels that mask the padding.
 */
CGR_API cgr_status cgr_ctx_dim(const cgr_ctx *ctx, int index, int64_t *bucket,
                               int64_t *true_value, const int64_t **dev);

/** 1 while the step is being captured, 0 in eager runs. */
CGR_API int cgr_ctx_is_capturing(const cgr_ctx *ctx);

/* ---- Launching kernels you own ------------------------------------------ */

/** Launch shape for cgr_launch_kernel(). */
typedef struct cgr_launch_cfg {
    unsigned grid[3];    /**< each >= 1 */
    unsigned block[3];   /**< each >= 1, product <= 1024 */
    size_t shared_bytes; /**< dynamic shared memory */
    /**
     * 1: programmatic dependent launch (PDL) where the device has it. The
     * kernel may start while the previous kernel on the stream is still
     * finishing, so it must call cudaGridDependencySynchronize() before it
     * reads anything that kernel wrote; compile that call for sm_90 and
     * newer only (`#if __CUDA_ARCH__ >= 900`), the first architecture with
     * it. Inside a graph PDL shortens each kernel-to-kernel edge
     * (docs/benchmarks.md, "W-chain", has the figures).
     *
     * PDL is used only on devices of compute capability 9.0 and newer that
     * run code cgr compiled for sm_90 or newer (a build without it, such as
     * -Dgpu_arch=80 on a Hopper GPU, has no dependency waits in its
     * kernels), and not at all when the environment variable CGR_PDL is
     * "0" (to prove the plain path on a Hopper GPU). This is decided when a
     * runtime is created on the device, or at the first such launch on a
     * device without one. Otherwise the same kernel is launched the plain
     * way: it starts after the previous kernel has finished, its dependency
     * wait does nothing, and the results are the same, without the overlap;
     * no error either way. Build your kernels with sm_90+ code (machine
     * code or PTX) for the Hopper and newer GPUs you run them on, as cgr's
     * default architectures do: cgr checks its own code, not each kernel's
     * (that would cost a query per launch).
     */
    int pdl;
} cgr_launch_cfg;

/**
 * Launches `kernel` (a __global__ function pointer) with `args` (an array
 * of pointers to each argument, as for cudaLaunchKernel) on `stream`.
 * Works eagerly and inside a step being captured.
 */
CGR_API cgr_status cgr_launch_kernel(cgr_stream stream, const void *kernel,
                                     const cgr_launch_cfg *cfg, void **args);

#ifdef __cplusplus
}
#endif

#endif /* CGR_H */
