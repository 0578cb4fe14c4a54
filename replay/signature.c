/*
 * Shape signatures (see signature.h).
 *
 * The hash feeds each 64-bit word through the splitmix64 finalizer: every
 * round is a bijection of the running state for a fixed word and of the
 * word for a fixed state, so two signatures with the same n_dims that differ
 * in exactly one word (the step or one dim) never collide, and the finalizer's
 * avalanche spreads every bit over the whole result. n_dims is hashed
 * before the dims, so [16] and [16, 0] differ.
 */
#include "signature.h"

#include <string.h>

#define SIG_SEED 0x6A09E667F3BCC908ull /* first 64 bits of frac(sqrt(2)) */
#define SIG_GOLDEN 0x9E3779B97F4A7C15ull

static uint64_t fmix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return x;
}

static uint64_t absorb(uint64_t h, uint64_t word)
{
    return fmix64((h ^ word) + SIG_GOLDEN);
}

static uint64_t hash_fields(uint64_t step, uint32_t n_dims, const int64_t *dims)
{
    uint64_t h = SIG_SEED;
    h = absorb(h, step);
    h = absorb(h, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        h = absorb(h, (uint64_t)dims[i]);
    return h;
}

cgr_status cgr__sig_init(cgr__sig *s, uint64_t step, uint32_t n_dims, const int64_t *dims)
{
    if (s == NULL || n_dims > CGR__SIG_MAX_DIMS || (dims == NULL && n_dims > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    /* Built aside first: dims may alias s->dims. */
    cgr__sig t;
    memset(&t, 0, sizeof t);
    t.step = step;
    t.n_dims = n_dims;
    if (n_dims > 0)
        memcpy(t.dims, dims, (size_t)n_dims * sizeof dims[0]);
    t.hash = hash_fields(step, n_dims, t.dims);
    *s = t;
    return CGR_STATUS_OK;
}

uint64_t cgr__sig_hash(const cgr__sig *s)
{
    if (s == NULL || s->n_dims > CGR__SIG_MAX_DIMS)
        return 0;
    return hash_fields(s->step, s->n_dims, s->dims);
}

int cgr__sig_equal(const cgr__sig *a, const cgr__sig *b)
{
    if (a == NULL || b == NULL)
        return 0;
    if (a->hash != b->hash || a->step != b->step || a->n_dims != b->n_dims)
        return 0;
    if (a->n_dims > CGR__SIG_MAX_DIMS)
        return 0;
    for (uint32_t i = 0; i < a->n_dims; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

/* ---- formatting ------------------------------------------------------------ */

/*
 * Appends to a bounded buffer, counting the full length like snprintf:
 * `len` keeps growing past `cap` so the caller learns the size needed.
 */
typedef struct sig_out {
    char *buf;
    size_t cap;
    size_t len;
} sig_out;

static void put_char(sig_out *o, char c)
{
    if (o->len + 1 < o->cap)
        o->buf[o->len] = c;
    o->len++;
}

static void put_str(sig_out *o, const char *str)
{
    while (*str != '\0')
        put_char(o, *str++);
}

static void put_u64(sig_out *o, uint64_t v)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v != 0);
    while (n > 0)
        put_char(o, digits[--n]);
}

static void put_i64(sig_out *o, int64_t v)
{
    if (v < 0) {
        put_char(o, '-');
        /* -(v + 1) + 1 stays in range for INT64_MIN. */
        put_u64(o, (uint64_t)(-(v + 1)) + 1u);
    } else {
        put_u64(o, (uint64_t)v);
    }
}

cgr_status cgr__sig_format(const cgr__sig *s, const cgr__sig_dim_name *names, char *buf,
                           size_t cap, size_t *len_out)
{
    if (s == NULL || s->n_dims > CGR__SIG_MAX_DIMS || (buf == NULL && cap > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    sig_out o = {buf, cap, 0};
    put_str(&o, "step ");
    put_u64(&o, s->step);
    put_str(&o, " [");
    for (uint32_t i = 0; i < s->n_dims; i++) {
        if (i > 0)
            put_str(&o, ", ");
        const cgr__sig_dim_name *nm = names != NULL ? &names[i] : NULL;
        if (nm == NULL || nm->tensor == NULL) {
            put_char(&o, 'd');
            put_u64(&o, i);
        } else {
            put_str(&o, nm->tensor);
            if (nm->axis >= 0) {
                put_char(&o, '.');
                put_u64(&o, (uint64_t)nm->axis);
            }
        }
        put_char(&o, '=');
        put_i64(&o, s->dims[i]);
    }
    put_char(&o, ']');

    if (cap > 0) {
        if (o.len < cap) {
            buf[o.len] = '\0';
        } else {
            buf[cap - 1] = '\0';
            if (cap >= 4)
                memcpy(buf + cap - 4, "...", 3);
        }
    }
    if (len_out != NULL)
        *len_out = o.len;
    return CGR_STATUS_OK;
}
