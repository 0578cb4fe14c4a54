/*
 * libFuzzer target: option and step-description validation (lib/validate.c).
 *
 * The input decodes into a cgr_options and a cgr_step_desc with 0 to
 * CGR_MAX_TENSORS + 2 tensor descriptions per list: names taken from the
 * input (NULL, empty, longer than the limit, duplicated), arbitrary dtype,
 * rank and dims (negative, zero, huge), list pointers NULL where the input
 * says so and counts that may be out of range. Each is checked by the
 * library and, independently, by a model of the documented rules below;
 * every disagreement, every status other than OK or INVALID_ARGUMENT and
 * every failure without a last-error message aborts. ASan and UBSan catch
 * out-of-bounds reads (each name and list is its own heap block, sized
 * exactly) and undefined arithmetic. The options and the description each
 * sit at the start of a heap block of CGR_MAX_STRUCT_SIZE bytes, so that a
 * fuzzed struct_size up to that limit reads the bytes a newer caller's
 * fields would occupy, and nothing past them.
 *
 * Input layout, in order (a short input reads as zeros past its end):
 *   options:   u16 mask of fields to override, then each overridden field
 *              (bit 9: one byte past the struct, where a newer field would be)
 *   step desc: mode bytes for struct_size, fn, name, a byte past the struct
 *   lists:     for inputs then outputs: count byte, flags byte, optional
 *              raw n, then each tensor (name, dtype, rank, dims)
 */
#include <stdint.h>
#include <string.h>

#include "cgr/cgr.h"
#include "fuzz_input.h"
#include "lib.h"

/* The validation of cgr_runtime_create and cgr_step_create, without the copy they keep. */
static cgr_status validate_options(const cgr_options *opt)
{
    cgr_options loaded;
    return cgr__options_load(opt, &loaded);
}

static cgr_status validate_step_desc(const cgr_step_desc *desc)
{
    cgr_step_desc loaded;
    return cgr__step_desc_load(desc, &loaded);
}

/* Limits the library documents or states in its messages (validate.c). */
#define NAME_MAX_LEN 63
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)
#define TIB ((size_t)1 << 40)

/* Tensors per list: up to two past the limit, to reach the count check. */
#define MAX_DECODED (CGR_MAX_TENSORS + 2)
/* Every string the decoder allocates for one input. */
#define MAX_STRINGS (2 * MAX_DECODED + 1)

static cgr_status dummy_step(cgr_ctx *ctx, void *user)
{
    (void)ctx;
    (void)user;
    return CGR_STATUS_OK;
}

static void dummy_log(cgr_log_level level, const char *message, void *user)
{
    (void)level;
    (void)message;
    (void)user;
}

/* ---- the model: the rules written out again, independently ------------- */

/* Element sizes by dtype, from the dtype names (f32, f16, bf16, f64, i32, i64, u8). */
static const size_t model_elem[] = {4, 2, 2, 8, 4, 8, 1};
#define MODEL_NDTYPES (sizeof model_elem / sizeof model_elem[0])

/*
 * The struct_size rule of cgr.h ("Versioned structs"): at least the first
 * version's fields (up to and including `last`, which ends at last_end),
 * at most CGR_MAX_STRUCT_SIZE, and zero bytes past the library's struct.
 */
static int model_struct_size(const void *s, size_t lib_size, size_t last_end)
{
    size_t n;
    memcpy(&n, s, sizeof n);
    if (n < last_end || n > CGR_MAX_STRUCT_SIZE)
        return 0;
    for (size_t i = lib_size; i < n; i++)
        if (((const unsigned char *)s)[i] != 0)
            return 0;
    return 1;
}

static int model_options(const cgr_options *given)
{
    size_t last_end = offsetof(cgr_options, arm_timeout_us) + sizeof given->arm_timeout_us;
    if (!model_struct_size(given, sizeof *given, last_end))
        return 0;
    /* What the library reads: the caller's first struct_size bytes over the defaults. */
    cgr_options d, *o = &d;
    if (cgr_options_init(&d) != CGR_STATUS_OK)
        return 0;
    size_t n;
    memcpy(&n, given, sizeof n);
    memcpy(&d, given, n < sizeof d ? n : sizeof d);
    return o->device >= 0 && o->staging_slots >= 2 &&
           o->staging_slots <= CGR_MAX_SLOTS && o->warmup_runs >= 1 &&
           o->warmup_runs <= CGR_MAX_WARMUP && (unsigned)o->log_level <= CGR_LOG_DEBUG &&
           o->arena_limit >= MIB && o->arena_limit <= TIB &&
           o->advanced.zero_copy_max_bytes <= GIB && (o->capture == 0 || o->capture == 1) &&
           o->advanced.wait_spin_us <= 1000000u &&
           (o->frozen_check == 0 || o->frozen_check == 1) &&
           (o->diagnose == 0 || o->diagnose == 1) &&
           (o->advanced.shape_spare == 0 || o->advanced.shape_spare == 1);
}

/*
 * 1 when the tensor is valid, with its byte size in *bytes: the element
 * size times every dim, each product checked with __builtin_mul_overflow
 * rather than by the division test the library uses. The library also
 * keeps a factor of 4 of headroom for later rounding.
 */
static int model_tensor(const cgr_tensor_desc *t, size_t *bytes)
{
    if (t->name == NULL || t->name[0] == '\0' || strlen(t->name) > NAME_MAX_LEN)
        return 0;
    if ((unsigned)t->dtype >= MODEL_NDTYPES)
        return 0;
    if (t->rank < 0 || t->rank > CGR_MAX_RANK)
        return 0;
    size_t n = model_elem[t->dtype];
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] < 1)
            return 0;
        if ((uint64_t)t->dims[i] > SIZE_MAX)
            return 0;
        if (__builtin_mul_overflow(n, (size_t)t->dims[i], &n))
            return 0;
    }
    if (n > SIZE_MAX / 4)
        return 0;
    *bytes = n;
    return 1;
}

static int model_list(const cgr_tensor_desc *list, int n)
{
    if (n < 0 || n > CGR_MAX_TENSORS)
        return 0;
    if (n > 0 && list == NULL)
        return 0;
    for (int i = 0; i < n; i++) {
        size_t bytes;
        if (!model_tensor(&list[i], &bytes))
            return 0;
    }
    return 1;
}

static const cgr_tensor_desc *model_nth(const cgr_step_desc *d, int i)
{
    return i < d->n_inputs ? &d->inputs[i] : &d->outputs[i - d->n_inputs];
}

/*
 * 1 when a staging slot fits: 256 bytes of head, then every tensor rounded
 * up to 256 bytes, CGR_MAX_SLOTS such slots within a size_t (the sums
 * checked with __builtin_add_overflow; the tensors already passed).
 */
static int model_slot(const cgr_step_desc *d)
{
    size_t total = 256;
    for (int i = 0; i < d->n_inputs + d->n_outputs; i++) {
        size_t bytes = 0, rounded;
        (void)model_tensor(model_nth(d, i), &bytes);
        if (__builtin_add_overflow(bytes, (size_t)255, &rounded))
            return 0;
        rounded &= ~(size_t)255;
        if (__builtin_add_overflow(total, rounded, &total))
            return 0;
    }
    return total <= SIZE_MAX / CGR_MAX_SLOTS;
}

static int model_desc(const cgr_step_desc *d)
{
    size_t last_end = offsetof(cgr_step_desc, armable) + sizeof d->armable;
    if (!model_struct_size(d, sizeof *d, last_end) || d->fn == NULL)
        return 0;
    if (d->name != NULL && strlen(d->name) > NAME_MAX_LEN)
        return 0;
    if (!model_list(d->inputs, d->n_inputs) || !model_list(d->outputs, d->n_outputs))
        return 0;
    if (!model_slot(d))
        return 0;
    /* Names are unique across inputs and outputs together. */
    int n = d->n_inputs + d->n_outputs;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(model_nth(d, i)->name, model_nth(d, j)->name) == 0)
                return 0;
    return 1;
}

/* ---- decoding ------------------------------------------------------------ */

typedef struct decoded {
    cgr_options *opt;          /* each at the start of a CGR_MAX_STRUCT_SIZE heap block */
    cgr_step_desc *desc;
    cgr_tensor_desc *lists[2]; /* heap blocks of exactly counts[k] entries */
    int counts[2];
    char *strings[MAX_STRINGS]; /* every name, freed at the end */
    int n_strings;
} decoded;

/* Copies n bytes into a heap block of exactly n + 1, so ASan sees over-reads. */
static char *keep_string(decoded *dc, const char *src, size_t n)
{
    char *s = malloc(n + 1);
    if (s == NULL)
        abort();
    memcpy(s, src, n);
    s[n] = '\0';
    dc->strings[dc->n_strings++] = s;
    return s;
}

/*
 * A name: NULL, empty, a copy of (or the very pointer to) an earlier name,
 * a long one around the 63-character limit, or up to 23 bytes of input,
 * which may hold a NUL and so end early.
 */
static const char *decode_name(fuzz_input *in, decoded *dc, const char *const *earlier,
                               int n_earlier)
{
    char buf[320];
    uint8_t mode = fuzz_u8(in);
    switch (mode % 8) {
    case 0:
        return NULL;
    case 1:
        return keep_string(dc, "", 0);
    case 2: {
        uint8_t pick = fuzz_u8(in);
        if (n_earlier == 0)
            return keep_string(dc, "x", 1);
        const char *e = earlier[pick % n_earlier];
        if (e == NULL || (pick & 0x80))
            return e;
        return keep_string(dc, e, strlen(e));
    }
    case 3: {
        size_t len = 56 + (size_t)fuzz_u8(in); /* 56..311: both sides of the limit */
        memset(buf, 'a' + mode % 26, len);
        return keep_string(dc, buf, len);
    }
    default: {
        size_t len = fuzz_u8(in) % 24;
        for (size_t i = 0; i < len; i++)
            buf[i] = (char)fuzz_u8(in);
        return keep_string(dc, buf, len);
    }
    }
}

/* Dims that sit on the edges of the overflow checks. */
static const int64_t edge_dims[] = {
    INT64_MAX,
    INT64_MIN,
    -1,
    0,
    (int64_t)1 << 31,
    (int64_t)1 << 32,
    ((int64_t)1 << 32) + 1,
    (int64_t)1 << 61,
    (int64_t)1 << 62,
    ((int64_t)1 << 62) - 1,
    (int64_t)(SIZE_MAX / 4),
    (int64_t)(SIZE_MAX / 4) + 1,
    (int64_t)(SIZE_MAX / 8),
    (int64_t)(SIZE_MAX / 16) + 1,
    65536,
    1000003,
};
#define N_EDGE_DIMS (sizeof edge_dims / sizeof edge_dims[0])

static int64_t decode_dim(fuzz_input *in)
{
    uint8_t b = fuzz_u8(in);
    switch (b >> 6) {
    case 0:
        return (int64_t)(b & 63) - 1; /* -1..62: the common small shapes */
    case 1:
        return 1;
    case 2:
        return fuzz_i64(in);
    default:
        return edge_dims[(b & 63) % N_EDGE_DIMS];
    }
}

static void decode_tensor(fuzz_input *in, decoded *dc, cgr_tensor_desc *t,
                          const char *const *earlier, int n_earlier)
{
    memset(t, 0, sizeof *t);
    t->name = decode_name(in, dc, earlier, n_earlier);
    /* One byte covers -1..8 around the valid range; 0xff takes a raw value. */
    uint8_t b = fuzz_u8(in);
    t->dtype = (cgr_dtype)(b == 0xff ? fuzz_i32(in) : (int)(b % 10) - 1);
    b = fuzz_u8(in);
    t->rank = b == 0xff ? fuzz_i32(in) : (int)(b % 12) - 1;
    int r = t->rank < 0 ? 0 : t->rank > CGR_MAX_RANK ? CGR_MAX_RANK : t->rank;
    for (int i = 0; i < r; i++)
        t->dims[i] = decode_dim(in);
    /* Dims past the rank stay 0, an invalid dim: reading them would be caught
     * as a disagreement with the model. */
}

/* A struct_size: mostly around the valid sizes, sometimes any value. */
static size_t decode_struct_size(fuzz_input *in, size_t lib_size)
{
    uint8_t b = fuzz_u8(in);
    if (b & 0x80)
        return (size_t)fuzz_u64(in);
    return lib_size - 16 + (size_t)(b & 0x3f); /* lib_size - 16 .. lib_size + 47 */
}

/* Sets one byte past the library's struct (a field only a newer cgr knows). */
static void poke_past(fuzz_input *in, void *s, size_t lib_size)
{
    uint8_t at = fuzz_u8(in);
    ((unsigned char *)s)[lib_size + at % 64] = fuzz_u8(in);
}

static void *struct_block(void)
{
    void *p = calloc(1, CGR_MAX_STRUCT_SIZE);
    if (p == NULL)
        abort();
    return p;
}

static void decode_options(fuzz_input *in, cgr_options *o)
{
    cgr_options_init(o);
    uint16_t mask = fuzz_u16(in);
    if (mask & (1u << 0))
        o->struct_size = decode_struct_size(in, sizeof *o);
    if (mask & (1u << 1))
        o->device = fuzz_i32(in);
    if (mask & (1u << 2))
        o->staging_slots = (mask & (1u << 12)) ? fuzz_i32(in) : fuzz_s8(in);
    if (mask & (1u << 3))
        o->warmup_runs = (mask & (1u << 12)) ? fuzz_i32(in) : fuzz_s8(in);
    if (mask & (1u << 4))
        o->log_level = (cgr_log_level)fuzz_i32(in);
    if (mask & (1u << 5))
        o->arena_limit = (size_t)fuzz_u64(in);
    if (mask & (1u << 6))
        o->advanced.zero_copy_max_bytes = (size_t)fuzz_u64(in);
    if (mask & (1u << 7))
        o->capture = fuzz_i32(in);
    if (mask & (1u << 8))
        o->advanced.wait_spin_us = fuzz_u32(in);
    if (mask & (1u << 9))
        poke_past(in, o, sizeof *o);
    if (mask & (1u << 10))
        o->log_fn = dummy_log;
    if (mask & (1u << 11))
        o->log_user = o;
}

/*
 * One list: up to CGR_MAX_TENSORS + 2 entries in a heap block of exactly
 * that many, or a NULL pointer. n is the entry count, or a raw value; a raw
 * n inside 0..CGR_MAX_TENSORS is capped at the entries that exist, so the
 * only reads past the block are ones the library must never make.
 */
static void decode_list(fuzz_input *in, decoded *dc, int k, const char **names, int *n_names)
{
    int count = fuzz_u8(in) % (MAX_DECODED + 1);
    uint8_t flags = fuzz_u8(in);
    cgr_tensor_desc *list = NULL;
    if (!(flags & 1)) {
        list = malloc(count > 0 ? (size_t)count * sizeof *list : 1);
        if (list == NULL)
            abort();
    }
    int n = count;
    if (flags & 2) {
        n = fuzz_i32(in);
        if (list != NULL && n >= 0 && n <= CGR_MAX_TENSORS && n > count)
            n = count;
    }
    if (list != NULL) {
        for (int i = 0; i < count; i++) {
            decode_tensor(in, dc, &list[i], names, *n_names);
            names[(*n_names)++] = list[i].name;
        }
    }
    dc->lists[k] = list;
    dc->counts[k] = count;
    if (k == 0) {
        dc->desc->inputs = list;
        dc->desc->n_inputs = n;
    } else {
        dc->desc->outputs = list;
        dc->desc->n_outputs = n;
    }
}

static void decode_desc(fuzz_input *in, decoded *dc)
{
    cgr_step_desc *d = dc->desc;
    cgr_step_desc_init(d);
    uint8_t modes = fuzz_u8(in);
    if (modes & 1)
        d->struct_size = decode_struct_size(in, sizeof *d);
    d->fn = (modes & 2) ? NULL : dummy_step;
    d->user = dc;
    if (modes & 4) {
        const char *none = NULL;
        d->name = decode_name(in, dc, &none, 0);
    }
    if (modes & 8)
        poke_past(in, d, sizeof *d);
    const char *names[2 * MAX_DECODED];
    int n_names = 0;
    decode_list(in, dc, 0, names, &n_names);
    decode_list(in, dc, 1, names, &n_names);
}

static void free_decoded(decoded *dc)
{
    for (int i = 0; i < dc->n_strings; i++)
        free(dc->strings[i]);
    free(dc->lists[0]);
    free(dc->lists[1]);
    free(dc->opt);
    free(dc->desc);
}

/* ---- the checks ---------------------------------------------------------- */

/* Only these two outcomes exist for pure validation; a failure must say why. */
static void check_status(cgr_status st, const char *what)
{
    FUZZ_CHECK(st == CGR_STATUS_OK || st == CGR_STATUS_INVALID_ARGUMENT, "%s returned %s", what,
               cgr_status_name(st));
    if (st != CGR_STATUS_OK)
        FUZZ_CHECK(cgr_last_error()[0] != '\0', "%s returned %s with an empty cgr_last_error()",
                   what, cgr_status_name(st));
}

static void check_tensor(const cgr_tensor_desc *t)
{
    size_t bytes = 0, want = 0;
    cgr__clear_error();
    cgr_status st = cgr__tensor_bytes(t, &bytes);
    check_status(st, "cgr__tensor_bytes");
    int valid = model_tensor(t, &want);
    FUZZ_CHECK((st == CGR_STATUS_OK) == valid,
               "cgr__tensor_bytes says %s, the model says %s (dtype %d rank %d): %s",
               cgr_status_name(st), valid ? "valid" : "invalid", (int)t->dtype, t->rank,
               cgr_last_error());
    if (st == CGR_STATUS_OK)
        FUZZ_CHECK(bytes == want, "cgr__tensor_bytes gave %zu bytes, the product is %zu", bytes,
                   want);
    /* The dtype helpers agree with the model's table too. */
    size_t es = cgr_dtype_size(t->dtype);
    FUZZ_CHECK(es == ((unsigned)t->dtype < MODEL_NDTYPES ? model_elem[t->dtype] : 0),
               "cgr_dtype_size(%d) is %zu", (int)t->dtype, es);
    FUZZ_CHECK(cgr_dtype_name(t->dtype) != NULL, "cgr_dtype_name(%d) is NULL", (int)t->dtype);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input in = {data, size, 0};
    decoded dc;
    memset(&dc, 0, sizeof dc);

    /* The init functions' only failure, once: decoding needs them to succeed. */
    static int inits_checked;
    if (!inits_checked) {
        inits_checked = 1;
        cgr__clear_error();
        cgr_status s0 = cgr_options_init(NULL);
        FUZZ_CHECK(s0 == CGR_STATUS_INVALID_ARGUMENT, "cgr_options_init(NULL) returned %s",
                   cgr_status_name(s0));
        check_status(s0, "cgr_options_init(NULL)");
        cgr__clear_error();
        s0 = cgr_step_desc_init(NULL);
        FUZZ_CHECK(s0 == CGR_STATUS_INVALID_ARGUMENT, "cgr_step_desc_init(NULL) returned %s",
                   cgr_status_name(s0));
        check_status(s0, "cgr_step_desc_init(NULL)");
    }

    dc.opt = struct_block();
    dc.desc = struct_block();
    decode_options(&in, dc.opt);
    decode_desc(&in, &dc);

    cgr__clear_error();
    cgr_status st = validate_options(dc.opt);
    check_status(st, "cgr__options_load");
    FUZZ_CHECK((st == CGR_STATUS_OK) == model_options(dc.opt),
               "cgr__options_load says %s, the model disagrees: %s", cgr_status_name(st),
               cgr_last_error());

    /* Every decoded tensor on its own, whatever n says about the list. */
    for (int k = 0; k < 2; k++)
        if (dc.lists[k] != NULL)
            for (int i = 0; i < dc.counts[k]; i++)
                check_tensor(&dc.lists[k][i]);

    cgr__clear_error();
    st = validate_step_desc(dc.desc);
    check_status(st, "cgr__step_desc_load");
    FUZZ_CHECK((st == CGR_STATUS_OK) == model_desc(dc.desc),
               "cgr__step_desc_load says %s, the model disagrees (n_inputs %d, n_outputs %d): "
               "%s",
               cgr_status_name(st), dc.desc->n_inputs, dc.desc->n_outputs, cgr_last_error());

    free_decoded(&dc);
    return 0;
}
