/*
 * Unit tests of the shape manager (replay/shapes.h), the decision core of
 * shape changes: scripted sequences for W-serve traffic (10,000 requests,
 * buckets {1,...,64}), bucket boundaries, per-shape warm-up, LRU eviction
 * with the update-in-place offer, the spare, the byte budget, uncapturable
 * shapes, the churn guard with its warning and hysteresis, and bad input
 * (which must change nothing). Then random traffic with random capture
 * outcomes against a model that owns every payload: each one handed to the
 * manager must come back exactly once, and a replay must only ever get the
 * live payload of its own shape.
 */
#include <math.h> /* NAN */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shapes.h"
#include "test.h"

#define TEST_RNG_SEED 0xD1B54A32D192ED03ull
#include "xorshift.h"

static int near(double a, double b)
{
    return a - b < 1e-9 && b - a < 1e-9;
}

static void *pl(uintptr_t id)
{
    return (void *)id;
}

static cgr__bucket_policy list_policy(const int64_t *sizes, uint32_t n)
{
    cgr__bucket_policy p;
    ASSERT_EQ(cgr__bucket_init_list(&p, sizes, n), CGR_STATUS_OK);
    return p;
}

static cgr__bucket_policy pow2_policy(int64_t max)
{
    cgr__bucket_policy p;
    ASSERT_EQ(cgr__bucket_init_pow2(&p, max), CGR_STATUS_OK);
    return p;
}

static cgr__shapes_dim_desc dim(const char *name, int tensor, int axis, cgr__bucket_policy p)
{
    cgr__shapes_dim_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.tensor = tensor;
    d.axis = axis;
    d.policy = p;
    return d;
}

/* A config with one dim (pow2 up to max), the given warm-up and cache, churn guard off. */
static cgr__shapes_config one_dim(cgr__shapes_dim_desc *d, int64_t max, uint32_t warmup,
                                  uint32_t entries, size_t bytes)
{
    *d = dim("x", 0, 0, pow2_policy(max));
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    c.step = 3;
    c.dims = d;
    c.n_dims = 1;
    c.warmup_runs = warmup;
    c.max_entries = entries;
    c.max_bytes = bytes;
    c.churn_k = 0;
    return c;
}

static void mgr(cgr__shapes *m, const cgr__shapes_config *c)
{
    memset(m, 0xEE, sizeof *m);
    ASSERT_EQ(cgr__shapes_init(m, c), CGR_STATUS_OK);
}

static cgr__shapes_decision decide1(cgr__shapes *m, int64_t x)
{
    cgr__shapes_decision d;
    ASSERT_EQ(cgr__shapes_decide(m, &x, &d), CGR_STATUS_OK);
    ASSERT_EQ(d.true_dims[0], x);
    return d;
}

static void expect(const cgr__shapes_decision *d, cgr__shapes_action a)
{
    if (d->action != a)
        TEST_FAIL_("action %s (reason %s), expected %s", cgr__shapes_action_name(d->action),
                   cgr__shapes_reason_name(d->reason), cgr__shapes_action_name(a));
}

static cgr__shapes_outcome done(cgr__shapes *m, uintptr_t payload, size_t bytes, int updated)
{
    cgr__shapes_capture_result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(payload);
    r.bytes = bytes;
    r.updated = updated;
    r.capture_us = 100.0;
    if (updated)
        r.update_us = 10.0;
    else
        r.instantiate_us = 400.0;
    cgr__shapes_outcome o;
    ASSERT_EQ(cgr__shapes_capture_done(m, &r, &o), CGR_STATUS_OK);
    return o;
}

static cgr__shapes_stats stats(const cgr__shapes *m)
{
    cgr__shapes_stats s;
    ASSERT_EQ(cgr__shapes_get_stats(m, &s), CGR_STATUS_OK);
    return s;
}

/* The identities every state must satisfy (no capture in flight). */
static void check_identities(const cgr__shapes *m)
{
    cgr__shapes_stats s = stats(m);
    ASSERT_U64_EQ(s.runs, s.hits + s.misses);
    ASSERT_U64_EQ(s.misses, s.warmup_runs + s.capture_attempts + s.eager_runs);
    if (!m->capturing)
        ASSERT_U64_EQ(s.capture_attempts, s.captures + s.capture_failures + s.capture_cancels);
    uint64_t by = 0;
    for (uint32_t r = 0; r < CGR__SHAPES_REASONS; r++)
        by += s.eager_by_reason[r];
    ASSERT_U64_EQ(by, s.eager_runs);
    ASSERT_U64_EQ(s.eager_by_reason[CGR__SHAPES_REASON_NONE], 0);
    uint64_t uf = 0;
    for (uint32_t r = 0; r < CGR__SHAPES_UPDATE_REASONS; r++)
        uf += s.update_failures_by_reason[r];
    ASSERT_U64_EQ(uf, s.update_failures);
    ASSERT_LE(s.updates, s.captures);
    ASSERT_LE(s.entries, m->cache.max_entries);
    if (m->cache.max_bytes > 0)
        ASSERT_LE(s.bytes, m->cache.max_bytes);
    /* The cache's own counters agree with the manager's. */
    ASSERT_U64_EQ(m->cache.counters.hits, s.hits);
    ASSERT_U64_EQ(m->cache.counters.misses, s.misses);
    uint64_t replays = 0;
    const cgr__cache *c = cgr__shapes_cache(m);
    for (uint32_t i = cgr__cache_first(c); i != CGR__CACHE_NONE; i = cgr__cache_next(c, i))
        replays += cgr__cache_entry_at(c, i)->hits;
    ASSERT_LE(replays, s.hits);
}

/* ---- byte-for-byte snapshots: failed calls change nothing --------------------------- */

typedef struct snap {
    cgr__shapes m;
    cgr__shapes_pending pending[CGR__SHAPES_MAX_PENDING];
    cgr__shapes_nograph nograph[CGR__SHAPES_MAX_NOGRAPH];
    cgr__cache_entry *entries;
    int64_t true_dims[CGR__SIG_MAX_DIMS];
    int64_t last_new[CGR__SIG_MAX_DIMS];
    cgr__shapes_stats stats;
} snap;

static snap *snap_take(const cgr__shapes *m)
{
    snap *s = calloc(1, sizeof *s);
    ASSERT(s != NULL);
    s->m = *m;
    memcpy(s->pending, m->pending, sizeof s->pending);
    memcpy(s->nograph, m->nograph, sizeof s->nograph);
    s->entries = malloc(m->cache.max_entries * sizeof *s->entries);
    ASSERT(s->entries != NULL);
    memcpy(s->entries, m->cache.entries, m->cache.max_entries * sizeof *s->entries);
    memcpy(s->true_dims, m->true_dims, m->n_dims * sizeof m->true_dims[0]);
    memcpy(s->last_new, m->last_new, m->n_dims * sizeof m->last_new[0]);
    s->stats = stats(m);
    return s;
}

static void snap_check(snap *s, const cgr__shapes *m)
{
    cgr__shapes_stats now = stats(m);
    ASSERT_EQ(memcmp(&s->stats, &now, sizeof now), 0);
    ASSERT_EQ(memcmp(&s->m, m, sizeof *m), 0);
    ASSERT_EQ(memcmp(s->pending, m->pending, sizeof s->pending), 0);
    ASSERT_EQ(memcmp(s->nograph, m->nograph, sizeof s->nograph), 0);
    ASSERT_EQ(memcmp(s->entries, m->cache.entries, m->cache.max_entries * sizeof *s->entries), 0);
    ASSERT_EQ(memcmp(s->true_dims, m->true_dims, m->n_dims * sizeof m->true_dims[0]), 0);
    ASSERT_EQ(memcmp(s->last_new, m->last_new, m->n_dims * sizeof m->last_new[0]), 0);
    free(s->entries);
    free(s);
}

/* ---- init --------------------------------------------------------------------------------- */

static void test_init(void)
{
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    ASSERT_EQ(c.warmup_runs, CGR__SHAPES_DEFAULT_WARMUP);
    ASSERT_EQ(c.max_entries, CGR__SHAPES_DEFAULT_ENTRIES);
    ASSERT_EQ(c.max_bytes, 0);
    ASSERT_EQ(c.churn_k, CGR__SHAPES_DEFAULT_CHURN_K);
    ASSERT_EQ(c.n_dims, 0);
    cgr__shapes_config_init(NULL);

    cgr__shapes m, before;
    memset(&m, 0x5A, sizeof m);
    memcpy(&before, &m, sizeof m);
    cgr__shapes_dim_desc d[3];
    d[0] = dim("x", 0, 0, pow2_policy(64));
    d[1] = dim(NULL, 1, 2, pow2_policy(8));
    d[2] = dim("y", 2, 0, pow2_policy(8));
    cgr__shapes_config good;
    cgr__shapes_config_init(&good);
    good.dims = d;
    good.n_dims = 3;

    ASSERT_EQ(cgr__shapes_init(NULL, &good), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_init(&m, NULL), CGR_STATUS_INVALID_ARGUMENT);
#define BAD(field_change)                                                                  \
    do {                                                                                   \
        cgr__shapes_dim_desc dd[3];                                                        \
        memcpy(dd, d, sizeof dd);                                                          \
        c = good;                                                                          \
        c.dims = dd;                                                                       \
        field_change;                                                                      \
        ASSERT_EQ(cgr__shapes_init(&m, &c), CGR_STATUS_INVALID_ARGUMENT);                  \
        ASSERT_EQ(memcmp(&m, &before, sizeof m), 0);                                       \
    } while (0)
    BAD(c.dims = NULL);
    BAD(c.n_dims = CGR__SIG_MAX_DIMS + 1);
    BAD(c.warmup_runs = 0);
    BAD(c.warmup_runs = CGR_MAX_WARMUP + 1);
    BAD(c.max_entries = 0);
    BAD(c.max_entries = CGR__CACHE_MAX_ENTRIES + 1);
    BAD(c.keep_spare = 2);
    BAD(c.keep_spare = -1);
    BAD(c.churn_k = CGR__CHURN_MAX_K + 1);
    BAD((c.churn_k = 5, c.churn_window = 4));
    BAD((c.churn_k = 5, c.churn_stable = 0));
    BAD(dd[1].tensor = -1);
    BAD(dd[1].tensor = CGR_MAX_TENSORS);
    BAD(dd[1].axis = -1);
    BAD(dd[1].axis = CGR_MAX_RANK);
    BAD((dd[2].tensor = 0, dd[2].axis = 0)); /* the same (tensor, axis) as dims[0] */
    BAD(memset(&dd[0].policy, 0, sizeof dd[0].policy));
    BAD(dd[0].name = "a_tensor_name_that_is_much_longer_than_sixty_three_characters_in_all");
#undef BAD

    /* The limits themselves are fine, and so are no dims at all. */
    c = good;
    c.warmup_runs = CGR_MAX_WARMUP;
    c.max_entries = 1;
    c.churn_k = CGR__CHURN_MAX_K;
    c.churn_window = CGR__CHURN_MAX_K;
    c.keep_spare = 1;
    mgr(&m, &c);
    ASSERT_EQ(m.n_dims, 3);
    ASSERT_STR_EQ(m.dims[0].desc.name, "x");
    ASSERT(m.dims[1].desc.name == NULL);
    ASSERT_STR_EQ(cgr__shapes_warning(&m), "");
    ASSERT_STR_EQ(cgr__shapes_update_error(&m), "");
    cgr__shapes_destroy(&m);
    cgr__shapes_destroy(&m); /* twice is safe */
    cgr__shapes_destroy(NULL);

    /* A step without dynamic dims: one shape, captured after warm-up, then replayed. */
    cgr__shapes_config_init(&c);
    c.warmup_runs = 1;
    mgr(&m, &c);
    cgr__shapes_decision out;
    ASSERT_EQ(cgr__shapes_decide(&m, NULL, &out), CGR_STATUS_OK);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(cgr__shapes_decide(&m, NULL, &out), CGR_STATUS_OK);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 1, 10, 0);
    for (int i = 0; i < 10; i++) {
        ASSERT_EQ(cgr__shapes_decide(&m, NULL, &out), CGR_STATUS_OK);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(1));
    }
    check_identities(&m);
    cgr__cache_evicted e;
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
    ASSERT_PTR_EQ(e.payload, pl(1));
    cgr__shapes_destroy(&m);

    /* A name of exactly the longest length is kept whole. */
    char name[CGR__SHAPES_NAME_MAX + 1];
    memset(name, 'n', CGR__SHAPES_NAME_MAX);
    name[CGR__SHAPES_NAME_MAX] = '\0';
    d[0].name = name;
    mgr(&m, &good);
    ASSERT_STR_EQ(m.dims[0].desc.name, name);
    ASSERT(m.dims[0].desc.name != name); /* copied */
    cgr__shapes_destroy(&m);

    /* Names and reasons print. */
    ASSERT_STR_EQ(cgr__shapes_action_name(CGR__SHAPES_REPLAY), "replay");
    ASSERT_STR_EQ(cgr__shapes_action_name(CGR__SHAPES_EAGER), "eager");
    ASSERT_STR_EQ(cgr__shapes_action_name((cgr__shapes_action)99), "invalid");
    ASSERT_STR_EQ(cgr__shapes_reason_name(CGR__SHAPES_REASON_CHURN), "churn guard");
    ASSERT_STR_EQ(cgr__shapes_reason_name(CGR__SHAPES_REASONS), "invalid");
}

/* ---- W-serve --------------------------------------------------------------------------------- */

/*
 * DESIGN.md's W-serve traffic: 10,000 requests with batch sizes uniform in
 * 1..64 from a fixed seed, buckets {1,2,4,8,16,32,64}, one warm-up run per
 * shape, the default churn guard (K = 8: seven buckets never trip it).
 */
static void test_wserve(void)
{
    static const int64_t buckets[7] = {1, 2, 4, 8, 16, 32, 64};
    cgr__shapes_dim_desc d = dim("x", 0, 0, list_policy(buckets, 7));
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    c.step = 11;
    c.dims = &d;
    c.n_dims = 1;
    c.warmup_runs = 1;
    cgr__shapes m;
    mgr(&m, &c);

    int state[7] = {0};      /* 0 unseen, 1 warmed up, 2 cached */
    uint64_t per_bucket[7] = {0};
    int last_capture = -1, captures = 0;
    for (int i = 0; i < 10000; i++) {
        int64_t batch = 1 + (int64_t)(rng_next() % 64);
        int b = 0;
        while (buckets[b] < batch)
            b++;
        cgr__shapes_decision out = decide1(&m, batch);
        /* The smallest bucket that holds the batch, and the true size beside it. */
        ASSERT_EQ(out.dims[0], buckets[b]);
        ASSERT(b == 0 || buckets[b - 1] < batch);
        ASSERT_EQ(out.sig->dims[0], buckets[b]);
        per_bucket[b]++;
        if (state[b] == 0) {
            expect(&out, CGR__SHAPES_WARMUP);
            ASSERT_EQ(out.warmup_run, 1);
            ASSERT_EQ(out.new_shape, 1);
            state[b] = 1;
        } else if (state[b] == 1) {
            expect(&out, CGR__SHAPES_CAPTURE);
            ASSERT(out.payload == NULL); /* never full: nothing to update */
            ASSERT_EQ(out.source, CGR__SHAPES_FROM_NONE);
            cgr__shapes_outcome o = done(&m, 100 + (uintptr_t)b, 4096 * (size_t)buckets[b], 0);
            ASSERT_EQ(o.cached, 1);
            ASSERT_EQ(o.n_freed, 0);
            state[b] = 2;
            captures++;
            last_capture = i;
        } else {
            expect(&out, CGR__SHAPES_REPLAY);
            ASSERT_PTR_EQ(out.payload, pl(100 + (uintptr_t)b));
            ASSERT_EQ(out.new_shape, 0);
        }
        ASSERT_EQ(out.churn_tripped, 0);
    }
    cgr__shapes_stats s = stats(&m);
    ASSERT_EQ(captures, 7);
    ASSERT_U64_EQ(s.captures, 7);
    ASSERT_U64_EQ(s.capture_attempts, 7);
    ASSERT_U64_EQ(s.warmup_runs, 7);
    ASSERT_U64_EQ(s.new_shapes, 7);
    ASSERT_U64_EQ(s.misses, 14);
    ASSERT_U64_EQ(s.hits, 10000 - 14);
    ASSERT_U64_EQ(s.eager_runs, 0);
    ASSERT_U64_EQ(s.evictions, 0);
    ASSERT_U64_EQ(s.updates, 0);
    ASSERT_U64_EQ(s.churn_activations, 0);
    ASSERT_EQ(s.entries, 7);
    ASSERT_EQ(s.pending, 0);
    ASSERT(near(s.capture_us, 700.0));
    ASSERT(near(s.instantiate_us, 2800.0));
    /* Per signature: every request of a bucket after its warm-up and capture replayed. */
    const cgr__cache *cc = cgr__shapes_cache(&m);
    int seen = 0;
    for (uint32_t i = cgr__cache_first(cc); i != CGR__CACHE_NONE; i = cgr__cache_next(cc, i)) {
        const cgr__cache_entry *e = cgr__cache_entry_at(cc, i);
        int b = (int)((uintptr_t)e->payload - 100);
        ASSERT(b >= 0 && b < 7);
        ASSERT_EQ(e->sig.dims[0], buckets[b]);
        ASSERT_U64_EQ(e->hits, per_bucket[b] - 2);
        ASSERT_GT(e->last_use, 0);
        seen++;
    }
    ASSERT_EQ(seen, 7);
    check_identities(&m);
    printf("W-serve: 7 captures, the last at request %d; %llu replays of 10000\n", last_capture,
           (unsigned long long)s.hits);
    for (int i = 0; i < 7; i++) {
        cgr__cache_evicted e;
        ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
    }
    cgr__cache_evicted e;
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_WRONG_STATE);
    cgr__shapes_destroy(&m);
}

/* ---- buckets -------------------------------------------------------------------------------- */

/* Every true value of two dims, at and around every boundary, and the values refused. */
static void test_boundaries(void)
{
    static const int64_t sizes[3] = {3, 10, 100};
    cgr__shapes_dim_desc d[2] = {dim("x", 0, 0, list_policy(sizes, 3)),
                                 dim("y", 0, 1, pow2_policy(100))};
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1;
    c.max_entries = 64;
    c.churn_k = 0;
    cgr__shapes m;
    mgr(&m, &c);
    uintptr_t next = 1;
    for (int64_t v = 1; v <= 100; v++) {
        int64_t want_x = v <= 3 ? 3 : v <= 10 ? 10 : 100;
        int64_t want_y = 1;
        while (want_y < v)
            want_y *= 2;
        if (want_y > 100)
            want_y = 100; /* 65..100 pad to the max, never past it */
        int64_t dims[2] = {v, v};
        cgr__shapes_decision out;
        for (;;) {
            ASSERT_EQ(cgr__shapes_decide(&m, dims, &out), CGR_STATUS_OK);
            ASSERT_EQ(out.dims[0], want_x);
            ASSERT_EQ(out.dims[1], want_y);
            ASSERT_EQ(out.true_dims[0], v);
            ASSERT_EQ(out.true_dims[1], v);
            if (out.action == CGR__SHAPES_REPLAY)
                break;
            if (out.action == CGR__SHAPES_CAPTURE)
                done(&m, next++, 1, 0);
        }
    }
    /* Distinct (x, y) bucket pairs among v = 1..100: {3}x{1,2,4}, {10}x{4,8,16}, {100}x{16,32,64,100}. */
    ASSERT_U64_EQ(stats(&m).captures, 10);
    ASSERT_EQ(next, 11);

    static const int64_t bad[][2] = {{0, 1},     {-1, 1},      {101, 1},      {1, 0},
                                     {1, 101},   {INT64_MAX, 1}, {1, INT64_MIN}, {101, 101}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snap *s = snap_take(&m);
        cgr__shapes_decision out;
        memset(&out, 0x77, sizeof out);
        ASSERT_EQ(cgr__shapes_decide(&m, bad[i], &out), CGR_STATUS_INVALID_ARGUMENT);
        snap_check(s, &m);
    }
    cgr__shapes_destroy(&m);
}

/* ---- warm-up ---------------------------------------------------------------------------------- */

static void test_warmup(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, INT64_C(1) << 20, 3, 64, 0);
    cgr__shapes m;
    mgr(&m, &c);

    /* Interleaved shapes each count their own warm-ups: A = 1, B = 2, C = 4 (true 3). */
    struct {
        int64_t x;
        cgr__shapes_action a;
        uint32_t run;
    } script[] = {
        {1, CGR__SHAPES_WARMUP, 1}, {2, CGR__SHAPES_WARMUP, 1}, {1, CGR__SHAPES_WARMUP, 2},
        {3, CGR__SHAPES_WARMUP, 1}, {4, CGR__SHAPES_WARMUP, 2}, {2, CGR__SHAPES_WARMUP, 2},
        {1, CGR__SHAPES_WARMUP, 3}, {1, CGR__SHAPES_CAPTURE, 0}, {1, CGR__SHAPES_REPLAY, 0},
        {2, CGR__SHAPES_WARMUP, 3}, {3, CGR__SHAPES_WARMUP, 3}, {2, CGR__SHAPES_CAPTURE, 0},
        {4, CGR__SHAPES_CAPTURE, 0}, {3, CGR__SHAPES_REPLAY, 0},
    };
    uint32_t record[5] = {0};
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        cgr__shapes_decision out = decide1(&m, script[i].x);
        expect(&out, script[i].a);
        int64_t b = out.dims[0];
        ASSERT(b == 1 || b == 2 || b == 4);
        if (script[i].a == CGR__SHAPES_WARMUP) {
            ASSERT_EQ(out.warmup_run, script[i].run);
            ASSERT_EQ(out.new_shape, script[i].run == 1);
            ASSERT_LT(out.pending, CGR__SHAPES_MAX_PENDING);
            if (script[i].run == 1)
                record[b] = out.pending;
            ASSERT_EQ(out.pending, record[b]); /* stable from first warm-up to capture */
        } else if (script[i].a == CGR__SHAPES_CAPTURE) {
            ASSERT_EQ(out.pending, record[b]);
            ASSERT_EQ(out.warmup_run, 0);
            done(&m, (uintptr_t)b, 1, 0);
        } else {
            ASSERT_PTR_EQ(out.payload, pl((uintptr_t)b));
            ASSERT_EQ(out.pending, CGR__CACHE_NONE);
        }
    }
    cgr__shapes_stats s = stats(&m);
    ASSERT_U64_EQ(s.warmup_runs, 9);
    ASSERT_U64_EQ(s.captures, 3);
    ASSERT_U64_EQ(s.new_shapes, 3);
    ASSERT_EQ(s.pending, 0);

    /*
     * 17 shapes warming at once: the 17th recycles the record of the least
     * recently seen one (shape 1 << 4), which then starts over as new; the
     * others keep their count.
     */
    for (int k = 4; k < 4 + (int)CGR__SHAPES_MAX_PENDING; k++) {
        cgr__shapes_decision out = decide1(&m, INT64_C(1) << k);
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.warmup_run, 1);
    }
    ASSERT_EQ(stats(&m).pending, CGR__SHAPES_MAX_PENDING);
    /* A second warm-up of 1 << 4 makes 1 << 5 the least recently seen. */
    cgr__shapes_decision out = decide1(&m, INT64_C(1) << 4);
    ASSERT_EQ(out.warmup_run, 2);
    out = decide1(&m, INT64_C(1) << 20);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(stats(&m).pending, CGR__SHAPES_MAX_PENDING);
    out = decide1(&m, INT64_C(1) << 4);
    ASSERT_EQ(out.warmup_run, 3);
    ASSERT_EQ(out.new_shape, 0);
    out = decide1(&m, INT64_C(1) << 6);
    ASSERT_EQ(out.warmup_run, 2);
    out = decide1(&m, INT64_C(1) << 5); /* forgotten: new again */
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.new_shape, 1);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* ---- LRU eviction and update in place ------------------------------------------------------- */

static void test_lru_update(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 2, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;

    /* s1 = 1, s2 = 2 fill the cache; nothing is offered while there is room. */
    for (int64_t x = 1; x <= 2; x++) {
        expect((out = decide1(&m, x), &out), CGR__SHAPES_WARMUP);
        out = decide1(&m, x);
        expect(&out, CGR__SHAPES_CAPTURE);
        ASSERT_EQ(out.source, CGR__SHAPES_FROM_NONE);
        ASSERT(out.payload == NULL);
        o = done(&m, (uintptr_t)x, 100, 0);
        ASSERT_EQ(o.n_freed, 0);
    }
    expect((out = decide1(&m, 1), &out), CGR__SHAPES_REPLAY); /* s2 is now the LRU */

    /* s3 = 4: the full cache offers s2's executable; the update succeeds. */
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_WARMUP);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_LRU);
    ASSERT_PTR_EQ(out.payload, pl(2));
    o = done(&m, 2, 120, 1);
    ASSERT_EQ(o.cached, 1);
    ASSERT_EQ(o.n_freed, 0); /* reused, not freed */
    cgr__shapes_stats s = stats(&m);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.evictions, 1);
    ASSERT_EQ(s.entries, 2);
    ASSERT_EQ(s.bytes, 220);
    ASSERT(near(s.update_us, 10.0));
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(out.payload, pl(2)); /* the updated executable now serves s3 */
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_WARMUP); /* s2 left the cache: a new shape again */
    ASSERT_EQ(out.new_shape, 1);

    /* s2 again: the LRU is s1; not updated (instantiated), so s1 is evicted and freed. */
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_LRU);
    ASSERT_PTR_EQ(out.payload, pl(1));
    o = done(&m, 12, 100, 0);
    ASSERT_EQ(o.n_freed, 1);
    ASSERT_PTR_EQ(o.freed[0].payload, pl(1));
    ASSERT_EQ(o.freed[0].bytes, 100);
    s = stats(&m);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.evictions, 2);

    /* s4 = 8: the offer (s3, payload 2) fails to update; it is handed back at once. */
    expect((out = decide1(&m, 8), &out), CGR__SHAPES_WARMUP);
    out = decide1(&m, 8);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_PTR_EQ(out.payload, pl(2));
    cgr__cache_evicted victim;
    ASSERT_EQ(cgr__shapes_update_failed(&m, 2, "cudaGraphExecUpdate: topology changed (node 7)",
                                        &victim),
              CGR_STATUS_OK);
    ASSERT_PTR_EQ(victim.payload, pl(2));
    ASSERT_EQ(victim.bytes, 120);
    /* Only one verdict per offer, and no update from a refused executable. */
    ASSERT_EQ(cgr__shapes_update_failed(&m, 2, "again", &victim), CGR_STATUS_WRONG_STATE);
    cgr__shapes_capture_result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(2);
    r.updated = 1;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    o = done(&m, 13, 100, 0);
    ASSERT_EQ(o.n_freed, 0); /* the victim already left: room for the new one */
    s = stats(&m);
    ASSERT_U64_EQ(s.update_failures, 1);
    ASSERT_U64_EQ(s.update_failures_by_reason[2], 1);
    ASSERT_U64_EQ(s.evictions, 3);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.captures, 5);
    ASSERT_EQ(s.entries, 2);
    ASSERT_STR_EQ(cgr__shapes_update_error(&m), "cudaGraphExecUpdate: topology changed (node 7)");
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_WARMUP); /* s3 went with its executable */

    /* s5 = 16: a wrong payload for an update is refused; a cancel keeps the shape warm. */
    expect((out = decide1(&m, 16), &out), CGR__SHAPES_WARMUP);
    out = decide1(&m, 16);
    expect(&out, CGR__SHAPES_CAPTURE);
    void *offered = out.payload;
    ASSERT_PTR_EQ(offered, pl(12)); /* s2 (12) is older than s4 (13) */
    memset(&r, 0, sizeof r);
    r.payload = pl(99);
    r.updated = 1;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_capture_cancel(&m), CGR_STATUS_OK);
    ASSERT_EQ(cgr__shapes_capture_cancel(&m), CGR_STATUS_WRONG_STATE);
    out = decide1(&m, 16);
    expect(&out, CGR__SHAPES_CAPTURE); /* no new warm-up */
    ASSERT_PTR_EQ(out.payload, offered);
    /* Update failures are counted by reason; odd reasons share the last slot. */
    ASSERT_EQ(cgr__shapes_update_failed(&m, 99, NULL, &victim), CGR_STATUS_OK);
    ASSERT_PTR_EQ(victim.payload, offered);
    ASSERT_STR_EQ(cgr__shapes_update_error(&m), "");
    o = done(&m, 14, 100, 0);
    s = stats(&m);
    ASSERT_U64_EQ(s.capture_cancels, 1);
    ASSERT_U64_EQ(s.update_failures, 2);
    ASSERT_U64_EQ(s.update_failures_by_reason[CGR__SHAPES_UPDATE_REASONS - 1], 1);
    ASSERT_U64_EQ(s.capture_attempts, 7);

    /* With nothing offered, an update cannot be reported. */
    cgr__shapes_config c2 = one_dim(&d, 1024, 1, 8, 0);
    cgr__shapes m2;
    mgr(&m2, &c2);
    decide1(&m2, 1);
    out = decide1(&m2, 1);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_NONE);
    ASSERT_EQ(cgr__shapes_update_failed(&m2, 2, "x", &victim), CGR_STATUS_WRONG_STATE);
    memset(&r, 0, sizeof r);
    r.payload = pl(5);
    r.updated = 1;
    ASSERT_EQ(cgr__shapes_capture_done(&m2, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    done(&m2, 5, 1, 0);
    check_identities(&m2);
    cgr__shapes_destroy(&m2);

    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* keep_spare: the first executable an insert evicts is kept for the next update. */
static void test_spare(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 8, 1000);
    c.keep_spare = 1;
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;

    decide1(&m, 1);
    expect((out = decide1(&m, 1), &out), CGR__SHAPES_CAPTURE);
    done(&m, 1, 600, 0);
    decide1(&m, 2);
    expect((out = decide1(&m, 2), &out), CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_NONE); /* not full by count */
    o = done(&m, 2, 600, 0);                      /* the byte budget evicts s1 ... */
    ASSERT_EQ(o.n_freed, 0);                      /* ... kept as the spare */
    cgr__shapes_stats s = stats(&m);
    ASSERT_EQ(s.spare, 1);
    ASSERT_EQ(s.spare_bytes, 600);
    ASSERT_U64_EQ(s.evictions, 1);

    /* s3 updates the spare. */
    decide1(&m, 4);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_SPARE);
    ASSERT_PTR_EQ(out.payload, pl(1));
    o = done(&m, 1, 300, 1);
    ASSERT_EQ(o.n_freed, 0);
    s = stats(&m);
    ASSERT_EQ(s.spare, 0);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.evictions, 1); /* the spare was not in the cache */
    ASSERT_EQ(s.bytes, 900);
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(out.payload, pl(1));

    /* s4 (500 bytes) evicts s2: the spare again. An offer not tried stays the spare. */
    decide1(&m, 8);
    out = decide1(&m, 8);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_NONE);
    o = done(&m, 4, 500, 0);
    ASSERT_EQ(o.n_freed, 0);
    ASSERT_EQ(stats(&m).spare_bytes, 600);
    decide1(&m, 16);
    out = decide1(&m, 16);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_SPARE);
    ASSERT_PTR_EQ(out.payload, pl(2));
    o = done(&m, 5, 100, 0); /* instantiated: fits without evicting */
    ASSERT_EQ(o.n_freed, 0);
    ASSERT_EQ(stats(&m).spare, 1);

    /* s6: the spare fails to update and comes back for freeing. */
    decide1(&m, 32);
    out = decide1(&m, 32);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_SPARE);
    cgr__cache_evicted victim;
    ASSERT_EQ(cgr__shapes_update_failed(&m, 3, "node type changed", &victim), CGR_STATUS_OK);
    ASSERT_PTR_EQ(victim.payload, pl(2));
    ASSERT_EQ(stats(&m).spare, 0);
    o = done(&m, 6, 350, 0); /* 300 + 500 + 100 + 350: evicts s3 (1), the new spare */
    ASSERT_EQ(o.n_freed, 0);
    s = stats(&m);
    ASSERT_EQ(s.spare, 1);
    ASSERT_EQ(s.spare_bytes, 300);
    ASSERT_U64_EQ(s.evictions, 3);
    ASSERT_U64_EQ(s.update_failures, 1);

    /* Drain gives back the cache, least recently used first, then the spare. */
    uintptr_t want[] = {4, 5, 6, 1};
    for (size_t i = 0; i < 4; i++) {
        cgr__cache_evicted e;
        ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
        ASSERT_PTR_EQ(e.payload, pl(want[i]));
    }
    cgr__cache_evicted e;
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_WRONG_STATE);
    s = stats(&m);
    ASSERT_EQ(s.entries, 0);
    ASSERT_EQ(s.spare, 0);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* ---- shapes that run eagerly for good ------------------------------------------------------ */

static void test_too_large(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 1, 1000);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;

    decide1(&m, 1);
    decide1(&m, 1);
    done(&m, 1, 400, 0);

    /* s2's graph alone is over the budget: refused, freed, eager from now on. */
    decide1(&m, 2);
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.source, CGR__SHAPES_FROM_LRU); /* max_entries 1: s1 is offered */
    o = done(&m, 2, 5000, 0);
    ASSERT_EQ(o.cached, 0);
    ASSERT_EQ(o.cache_index, CGR__CACHE_NONE);
    ASSERT_EQ(o.n_freed, 1);
    ASSERT_PTR_EQ(o.freed[0].payload, pl(2));
    ASSERT_EQ(o.freed[0].bytes, 5000);
    cgr__shapes_stats s = stats(&m);
    ASSERT_U64_EQ(s.too_large, 1);
    ASSERT_U64_EQ(s.captures, 1 + 1);
    ASSERT_EQ(s.entries, 1); /* s1 untouched */
    ASSERT_EQ(s.nograph, 1);
    for (int i = 0; i < 5; i++) {
        out = decide1(&m, 2);
        expect(&out, CGR__SHAPES_EAGER);
        ASSERT_EQ(out.reason, CGR__SHAPES_REASON_TOO_LARGE);
        ASSERT(strstr(out.text, "5000 bytes") != NULL);
        ASSERT(strstr(out.text, "1000 bytes") != NULL);
        out = decide1(&m, 1);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(1));
    }
    s = stats(&m);
    ASSERT_U64_EQ(s.eager_runs, 5);
    ASSERT_U64_EQ(s.eager_by_reason[CGR__SHAPES_REASON_TOO_LARGE], 5);
    uint32_t found = 0;
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_NOGRAPH; i++) {
        const cgr__shapes_nograph *e = cgr__shapes_nograph_at(&m, i);
        if (e == NULL)
            continue;
        found++;
        ASSERT_EQ(e->reason, CGR__SHAPES_REASON_TOO_LARGE);
        ASSERT_EQ(e->sig.dims[0], 2);
        ASSERT_U64_EQ(e->runs, 5);
    }
    ASSERT_EQ(found, 1);
    ASSERT(cgr__shapes_nograph_at(&m, CGR__SHAPES_MAX_NOGRAPH) == NULL);

    /* Updated from the LRU into a graph that is too large: both go. */
    decide1(&m, 4);
    out = decide1(&m, 4);
    ASSERT_PTR_EQ(out.payload, pl(1));
    o = done(&m, 1, 1001, 1);
    ASSERT_EQ(o.cached, 0);
    ASSERT_EQ(o.n_freed, 1);
    ASSERT_PTR_EQ(o.freed[0].payload, pl(1));
    s = stats(&m);
    ASSERT_EQ(s.entries, 0);
    ASSERT_U64_EQ(s.evictions, 1);
    ASSERT_U64_EQ(s.too_large, 2);
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_WARMUP); /* s1 lost its executable to the update */
    out = decide1(&m, 4);
    ASSERT_EQ(out.reason, CGR__SHAPES_REASON_TOO_LARGE);

    /* Exactly the budget fits. */
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_CAPTURE);
    o = done(&m, 7, 1000, 0);
    ASSERT_EQ(o.cached, 1);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

static void test_uncapturable(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, INT64_C(1) << 30, 1, 16, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;

    ASSERT_EQ(cgr__shapes_capture_failed(&m, "x"), CGR_STATUS_WRONG_STATE);
    decide1(&m, 1);
    decide1(&m, 1);
    done(&m, 1, 10, 0);

    const char *why = "cudaMalloc inside the step during capture: use cgr_ctx_alloc";
    decide1(&m, 2);
    expect((out = decide1(&m, 2), &out), CGR__SHAPES_CAPTURE);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, why), CGR_STATUS_OK);
    for (int i = 0; i < 3; i++) {
        out = decide1(&m, 2);
        expect(&out, CGR__SHAPES_EAGER);
        ASSERT_EQ(out.reason, CGR__SHAPES_REASON_CAPTURE_FAILED);
        ASSERT_STR_EQ(out.text, why);
        ASSERT_EQ(out.new_shape, 0);
        out = decide1(&m, 1);
        expect(&out, CGR__SHAPES_REPLAY); /* other shapes keep replaying */
    }
    /* Other new shapes still capture. */
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_WARMUP);
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_CAPTURE);
    done(&m, 4, 10, 0);
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_REPLAY);
    cgr__shapes_stats s = stats(&m);
    ASSERT_U64_EQ(s.capture_failures, 1);
    ASSERT_U64_EQ(s.eager_by_reason[CGR__SHAPES_REASON_CAPTURE_FAILED], 3);
    ASSERT_EQ(s.nograph, 1);
    ASSERT_EQ(s.pending, 0);

    /* A long reason is kept bounded and marked as cut. */
    char longer[1000];
    memset(longer, 'e', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    decide1(&m, 8);
    decide1(&m, 8);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, longer), CGR_STATUS_OK);
    out = decide1(&m, 8);
    ASSERT_EQ(strlen(out.text), CGR__SHAPES_TEXT_MAX - 1);
    ASSERT_EQ(strncmp(out.text, longer, CGR__SHAPES_TEXT_MAX - 4), 0);
    ASSERT_STR_EQ(out.text + CGR__SHAPES_TEXT_MAX - 4, "...");
    /* NULL is an empty reason. */
    decide1(&m, 16);
    decide1(&m, 16);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, NULL), CGR_STATUS_OK);
    ASSERT_STR_EQ(decide1(&m, 16).text, "");

    /*
     * The table is bounded: once 16 shapes are recorded, the next failure
     * recycles the least recently used record. Shape 2 was recorded first
     * but runs (eagerly) again just before, so shape 8's record goes.
     */
    for (int k = 5; k < 5 + (int)CGR__SHAPES_MAX_NOGRAPH - 3; k++) {
        decide1(&m, INT64_C(1) << k);
        expect((out = decide1(&m, INT64_C(1) << k), &out), CGR__SHAPES_CAPTURE);
        ASSERT_EQ(cgr__shapes_capture_failed(&m, "no"), CGR_STATUS_OK);
    }
    ASSERT_EQ(stats(&m).nograph, CGR__SHAPES_MAX_NOGRAPH);
    ASSERT_EQ(decide1(&m, 2).reason, CGR__SHAPES_REASON_CAPTURE_FAILED);
    decide1(&m, INT64_C(1) << 29);
    decide1(&m, INT64_C(1) << 29);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, "no"), CGR_STATUS_OK);
    ASSERT_EQ(stats(&m).nograph, CGR__SHAPES_MAX_NOGRAPH);
    out = decide1(&m, 8); /* forgotten: it warms up and captures again */
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.new_shape, 1);
    out = decide1(&m, 2); /* still known */
    ASSERT_EQ(out.reason, CGR__SHAPES_REASON_CAPTURE_FAILED);
    out = decide1(&m, 16);
    ASSERT_EQ(out.reason, CGR__SHAPES_REASON_CAPTURE_FAILED);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* ---- churn guard ---------------------------------------------------------------------------- */

static void test_churn(void)
{
    static const int64_t ys[2] = {8, 16};
    cgr__shapes_dim_desc d[2] = {dim("x", 0, 0, pow2_policy(1 << 20)),
                                 dim("y", 1, 1, list_policy(ys, 2))};
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    c.step = 5;
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1;
    c.churn_k = 3;
    c.churn_window = 10;
    c.churn_stable = 4;
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
#define D(x, y)                                                                            \
    do {                                                                                   \
        dims[0] = (x);                                                                     \
        dims[1] = (y);                                                                     \
        ASSERT_EQ(cgr__shapes_decide(&m, dims, &out), CGR_STATUS_OK);                      \
    } while (0)
    int64_t dims[2];

    /* A = (1, 8) is cached; new shapes at runs 1 and 4 do not trip (K = 3). */
    D(1, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    D(1, 8);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 1, 1, 0);
    D(1, 7); /* same buckets: a replay */
    expect(&out, CGR__SHAPES_REPLAY);
    D(2, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.churn_tripped, 0);
    /* The third new shape within 10 runs trips the guard, on this very run. */
    D(3, 5);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.reason, CGR__SHAPES_REASON_CHURN);
    ASSERT_EQ(out.churn_tripped, 1);
    ASSERT_EQ(out.new_shape, 1);
    const char *w = cgr__shapes_warning(&m);
    ASSERT_STR_EQ(out.text, w);
    fputs("churn warning: ", stdout);
    puts(w);
    ASSERT(strstr(w, "step 5") != NULL);
    ASSERT(strstr(w, "x.0 (2 of 2 changes)") != NULL);
    ASSERT(strstr(w, "y.1") == NULL); /* y stayed in bucket 8 */
    char first[CGR__SHAPES_WARNING_MAX];
    strcpy(first, w);

    /* Tripped: cached shapes replay, others run eagerly; no second warning. */
    D(1, 8);
    expect(&out, CGR__SHAPES_REPLAY);
    D(8, 8);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.new_shape, 1);
    ASSERT_EQ(out.churn_tripped, 0);
    D(2, 8); /* seen before: not new */
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.new_shape, 0);
    ASSERT_STR_EQ(cgr__shapes_warning(&m), first);
    /* S = 4 runs with no new shape recover, on the 4th. */
    D(1, 8);
    D(1, 8);
    ASSERT_EQ(out.churn_recovered, 0);
    D(1, 8);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_EQ(out.churn_recovered, 1);
    /* (2, 8) did its warm-up before the trip: it captures now. */
    D(2, 8);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 2, 1, 0);
    /* (4, 8) was seen while tripped, with no warm-up: it warms up now. */
    D(3, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.new_shape, 0);
    cgr__shapes_stats s = stats(&m);
    ASSERT_U64_EQ(s.churn_activations, 1);
    ASSERT_U64_EQ(s.churn_recoveries, 1);
    ASSERT_U64_EQ(s.eager_by_reason[CGR__SHAPES_REASON_CHURN], 3);
    ASSERT_U64_EQ(s.new_shapes, 4);

    /* Hysteresis: history was forgotten; trips again only after 3 fresh new shapes. */
    D(16, 16);
    expect(&out, CGR__SHAPES_WARMUP);
    D(32, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    D(64, 16);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.churn_tripped, 1);
    w = cgr__shapes_warning(&m);
    ASSERT(strcmp(w, first) != 0);
    ASSERT(strstr(w, "x.0 (2 of 2 changes)") != NULL);
    ASSERT(strstr(w, "y.1 (2 of 2 changes)") != NULL);
    ASSERT_U64_EQ(stats(&m).churn_activations, 2);
    check_identities(&m);
#undef D
    cgr__shapes_destroy(&m);

    /* K = 1 and an unnamed dim: the warning names "d0", from the one change. */
    cgr__shapes_dim_desc d1 = dim(NULL, 0, 0, pow2_policy(64));
    cgr__shapes_config_init(&c);
    c.dims = &d1;
    c.n_dims = 1;
    c.churn_k = 1;
    c.churn_window = 1;
    c.churn_stable = 1;
    mgr(&m, &c);
    out = decide1(&m, 1);
    ASSERT_EQ(out.churn_tripped, 1); /* no previous shape: nothing changed yet */
    ASSERT(strstr(cgr__shapes_warning(&m), "none identified") != NULL);
    out = decide1(&m, 1);
    ASSERT_EQ(out.churn_recovered, 1);
    expect(&out, CGR__SHAPES_WARMUP);
    out = decide1(&m, 2);
    ASSERT_EQ(out.churn_tripped, 1);
    ASSERT(strstr(cgr__shapes_warning(&m), "d0 (1 of 1 changes)") != NULL);
    check_identities(&m);
    cgr__shapes_destroy(&m);

    /* Many dims: the warning stays bounded and says it was cut. */
    enum { N = 40 };
    cgr__shapes_dim_desc many[N];
    char names[N][CGR__SHAPES_NAME_MAX + 1];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "tensor_with_a_long_name_%02d", i);
        many[i] = dim(names[i], i % CGR_MAX_TENSORS, i / CGR_MAX_TENSORS, pow2_policy(64));
    }
    cgr__shapes_config_init(&c);
    c.dims = many;
    c.n_dims = N;
    c.churn_k = 2;
    c.churn_window = 2;
    mgr(&m, &c);
    int64_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = 1;
    ASSERT_EQ(cgr__shapes_decide(&m, v, &out), CGR_STATUS_OK);
    for (int i = 0; i < N; i++)
        v[i] = 2;
    ASSERT_EQ(cgr__shapes_decide(&m, v, &out), CGR_STATUS_OK);
    ASSERT_EQ(out.churn_tripped, 1);
    w = cgr__shapes_warning(&m);
    ASSERT_EQ(strlen(w), CGR__SHAPES_WARNING_MAX - 1);
    ASSERT_STR_EQ(w + CGR__SHAPES_WARNING_MAX - 4, "...");
    ASSERT(strstr(w, "tensor_with_a_long_name_00.0 (1 of 1 changes)") != NULL);
    cgr__shapes_destroy(&m);

    /* Past the first 64 dims: only d66 changes, and the warning names it alone. */
    enum { N2 = 70 };
    cgr__shapes_dim_desc wide[N2];
    int64_t v2[N2];
    for (int i = 0; i < N2; i++) {
        wide[i] = dim(NULL, i % CGR_MAX_TENSORS, i / CGR_MAX_TENSORS, pow2_policy(64));
        v2[i] = 1;
    }
    c.dims = wide;
    c.n_dims = N2;
    mgr(&m, &c);
    ASSERT_EQ(cgr__shapes_decide(&m, v2, &out), CGR_STATUS_OK);
    v2[66] = 3;
    ASSERT_EQ(cgr__shapes_decide(&m, v2, &out), CGR_STATUS_OK);
    ASSERT_EQ(out.churn_tripped, 1);
    ASSERT_EQ(out.dims[66], 4);
    w = cgr__shapes_warning(&m);
    ASSERT(strstr(w, "changing: d66 (1 of 1 changes);") != NULL);
    cgr__shapes_destroy(&m);
}

/* ---- bad input changes nothing ------------------------------------------------------------ */

static void test_bad_input(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 64, 2, 2, 0);
    c.churn_k = 4;
    c.churn_window = 100;
    c.churn_stable = 10;
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;
    cgr__cache_evicted e;

    /* Some state of every kind: cached, warming, known eager, churn history. */
    for (int i = 0; i < 3; i++)
        decide1(&m, 1);
    done(&m, 1, 5, 0);
    decide1(&m, 2);
    decide1(&m, 2);
    decide1(&m, 2);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, "nope"), CGR_STATUS_OK);
    decide1(&m, 4);
    decide1(&m, 1);

    static const int64_t bad[] = {0, -1, 65, 1000, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snap *s = snap_take(&m);
        ASSERT_EQ(cgr__shapes_decide(&m, &bad[i], &out), CGR_STATUS_INVALID_ARGUMENT);
        snap_check(s, &m);
    }
    snap *s = snap_take(&m);
    int64_t one = 1;
    ASSERT_EQ(cgr__shapes_decide(&m, NULL, &out), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_decide(&m, &one, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_decide(NULL, &one, &out), CGR_STATUS_INVALID_ARGUMENT);
    /* Reports with no capture in flight. */
    cgr__shapes_capture_result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(3);
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_capture_failed(&m, "x"), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_capture_cancel(&m), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_update_failed(&m, 1, "x", &e), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_capture_done(NULL, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_capture_failed(NULL, "x"), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_capture_cancel(NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_update_failed(NULL, 1, "x", &e), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_drain(NULL, &e), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_drain(&m, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_get_stats(NULL, &(cgr__shapes_stats){0}), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_get_stats(&m, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT(cgr__shapes_cache(NULL) == NULL);
    ASSERT(cgr__shapes_nograph_at(NULL, 0) == NULL);
    ASSERT_STR_EQ(cgr__shapes_warning(NULL), "");
    ASSERT_STR_EQ(cgr__shapes_update_error(NULL), "");
    snap_check(s, &m);

    /* A capture in flight pins the manager: decide and drain wait for the report. */
    decide1(&m, 4);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    s = snap_take(&m);
    ASSERT_EQ(cgr__shapes_decide(&m, &one, &out), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_WRONG_STATE);
    ASSERT_EQ(cgr__shapes_capture_done(&m, NULL, &o), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, NULL), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_update_failed(&m, 1, "x", NULL), CGR_STATUS_INVALID_ARGUMENT);
    r.payload = NULL;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    r.payload = pl(3);
    r.capture_us = -1.0;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    r.capture_us = NAN;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    r.capture_us = 0.0;
    r.update_us = NAN;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    r.update_us = 0.0;
    r.updated = 2;
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_INVALID_ARGUMENT);
    r.updated = 0;
    snap_check(s, &m);
    ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_OK);
    check_identities(&m);

    /* A destroyed (zeroed) manager refuses everything. */
    cgr__shapes_destroy(&m);
    ASSERT_EQ(cgr__shapes_decide(&m, &one, &out), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_get_stats(&m, &(cgr__shapes_stats){0}), CGR_STATUS_INVALID_ARGUMENT);
}

/* ---- random traffic against a payload-owning model -------------------------------------------- */

#define MAX_PAYLOADS (1u << 20)

typedef struct model {
    uint8_t live[MAX_PAYLOADS];     /* held by the manager */
    uint32_t owner[MAX_PAYLOADS];   /* the shape key it serves */
    uintptr_t next;
} model;

static uint32_t key_of(const cgr__shapes_decision *d)
{
    return (uint32_t)(d->dims[0] * 8 + d->dims[1]);
}

static void give_back(model *md, void *payload)
{
    uintptr_t id = (uintptr_t)payload;
    ASSERT(id > 0 && id < md->next);
    if (!md->live[id])
        TEST_FAIL_("payload %lu handed back twice or never given", (unsigned long)id);
    md->live[id] = 0;
}

typedef struct run_counts {
    uint64_t replays, updates, update_failures, failures, cancels, too_large, churn, evicted;
} run_counts;

static void run_random(model *md, run_counts *rc)
{
    static const int64_t ys[3] = {1, 2, 3};
    cgr__shapes_dim_desc d[2] = {dim("x", 0, 0, pow2_policy(1 << 12)),
                                 dim("y", 1, 0, list_policy(ys, 3))};
    cgr__shapes_config c;
    cgr__shapes_config_init(&c);
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1 + (uint32_t)(rng_next() % 3);
    c.max_entries = 1 + (uint32_t)(rng_next() % 12);
    c.max_bytes = rng_next() % 2 ? 0 : 500 + rng_next() % 3000;
    c.churn_k = (uint32_t)(rng_next() % 6);
    c.churn_window = c.churn_k + rng_next() % 40;
    c.churn_stable = 1 + rng_next() % 30;
    c.keep_spare = (int)(rng_next() % 2);
    cgr__shapes m;
    mgr(&m, &c);
    uint64_t hot = 1 + rng_next() % 13; /* how many x buckets the traffic visits */
    for (int i = 0; i < 20000; i++) {
        if (i % 2000 == 0)
            hot = 1 + rng_next() % 13;
        int64_t dims[2] = {1 + (int64_t)(rng_next() % ((uint64_t)1 << (hot - 1))),
                           1 + (int64_t)(rng_next() % 3)};
        cgr__shapes_decision out;
        ASSERT_EQ(cgr__shapes_decide(&m, dims, &out), CGR_STATUS_OK);
        uint32_t key = key_of(&out);
        if (out.action == CGR__SHAPES_REPLAY) {
            uintptr_t id = (uintptr_t)out.payload;
            ASSERT(id > 0 && id < md->next && md->live[id]);
            ASSERT_EQ(md->owner[id], key);
            rc->replays++;
        } else if (out.action == CGR__SHAPES_EAGER) {
            rc->churn += out.reason == CGR__SHAPES_REASON_CHURN;
        } else if (out.action == CGR__SHAPES_CAPTURE) {
            if (out.payload != NULL) {
                uintptr_t id = (uintptr_t)out.payload;
                ASSERT(id < md->next && md->live[id]);
            }
            uint64_t roll = rng_next() % 100;
            if (roll < 8) {
                ASSERT_EQ(cgr__shapes_capture_failed(&m, "random failure"), CGR_STATUS_OK);
                rc->failures++;
                continue;
            }
            if (roll < 14) {
                ASSERT_EQ(cgr__shapes_capture_cancel(&m), CGR_STATUS_OK);
                rc->cancels++;
                continue;
            }
            int updated = 0;
            if (out.payload != NULL) {
                if (rng_next() % 3 == 0) {
                    cgr__cache_evicted v;
                    ASSERT_EQ(cgr__shapes_update_failed(&m, (int)(rng_next() % 9), "r", &v),
                              CGR_STATUS_OK);
                    ASSERT_PTR_EQ(v.payload, out.payload);
                    give_back(md, v.payload);
                    rc->update_failures++;
                } else if (rng_next() % 2) {
                    updated = 1;
                }
            }
            cgr__shapes_capture_result r;
            memset(&r, 0, sizeof r);
            r.updated = updated;
            if (updated) {
                r.payload = out.payload;
                rc->updates++;
            } else {
                ASSERT_LT(md->next, MAX_PAYLOADS);
                r.payload = pl(md->next);
                md->live[md->next++] = 1;
            }
            md->owner[(uintptr_t)r.payload] = key;
            r.bytes = rng_next() % 20 == 0 ? 4000 : 1 + rng_next() % 400;
            cgr__shapes_outcome o;
            ASSERT_EQ(cgr__shapes_capture_done(&m, &r, &o), CGR_STATUS_OK);
            rc->too_large += !o.cached;
            for (uint32_t k = 0; k < o.n_freed; k++)
                give_back(md, o.freed[k].payload);
            rc->evicted += o.n_freed;
        }
        if (i % 97 == 0)
            check_identities(&m);
    }
    check_identities(&m);
    cgr__cache_evicted e;
    while (cgr__shapes_drain(&m, &e) == CGR_STATUS_OK)
        give_back(md, e.payload);
    for (uintptr_t id = 1; id < md->next; id++)
        if (md->live[id])
            TEST_FAIL_("payload %lu never came back", (unsigned long)id);
    cgr__shapes_destroy(&m);
}

static void test_random(void)
{
    model *md = calloc(1, sizeof *md);
    ASSERT(md != NULL);
    md->next = 1;
    run_counts rc;
    memset(&rc, 0, sizeof rc);
    for (int run = 0; run < 40; run++)
        run_random(md, &rc);
    /* The runs reached every path. */
    ASSERT_GT(rc.replays, 10000);
    ASSERT_GT(rc.updates, 100);
    ASSERT_GT(rc.update_failures, 100);
    ASSERT_GT(rc.failures, 100);
    ASSERT_GT(rc.cancels, 100);
    ASSERT_GT(rc.too_large, 20);
    ASSERT_GT(rc.churn, 1000);
    ASSERT_GT(rc.evicted, 100);
    printf("random: %llu payloads, %llu replays, %llu updates, %llu update failures, "
           "%llu capture failures, %llu cancels, %llu too large, %llu churn-eager runs, "
           "%llu evicted\n",
           (unsigned long long)(md->next - 1), (unsigned long long)rc.replays,
           (unsigned long long)rc.updates, (unsigned long long)rc.update_failures,
           (unsigned long long)rc.failures, (unsigned long long)rc.cancels,
           (unsigned long long)rc.too_large, (unsigned long long)rc.churn,
           (unsigned long long)rc.evicted);
    free(md);
}

/*
 * peek (armed runs): says what decide would replay without changing
 * anything, counters and LRU order included; NULL for shapes that would
 * not replay, bad dims, and while a capture is open.
 */
static void test_peek(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 64, 1, 2, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    int64_t b = -1, x;
    x = 3;
    ASSERT(cgr__shapes_peek(&m, &x, &b) == NULL);
    ASSERT_EQ(b, -1); /* written only with a payload */
    for (int64_t v = 1; v <= 2; v++) {
        expect((out = decide1(&m, v == 1 ? 1 : 3), &out), CGR__SHAPES_WARMUP);
        out = decide1(&m, v == 1 ? 1 : 3);
        expect(&out, CGR__SHAPES_CAPTURE);
        x = v == 1 ? 1 : 3;
        /* A capture is open: decide would refuse, so peek has nothing. */
        ASSERT(cgr__shapes_peek(&m, &x, NULL) == NULL);
        done(&m, (uintptr_t)(10 + v), 100, 0);
    }
    /* Cached: bucket 1 (payload 11) then bucket 4 (payload 12); 4 is the MRU. */
    cgr__shapes_stats before = stats(&m);
    uint32_t lru = cgr__cache_lru(&m.cache);
    x = 1;
    ASSERT_PTR_EQ(cgr__shapes_peek(&m, &x, &b), pl(11));
    ASSERT_EQ(b, 1);
    x = 4;
    ASSERT_PTR_EQ(cgr__shapes_peek(&m, &x, &b), pl(12));
    ASSERT_EQ(b, 4);
    x = 3;
    ASSERT_PTR_EQ(cgr__shapes_peek(&m, &x, NULL), pl(12));
    x = 5; /* bucket 8: not cached */
    ASSERT(cgr__shapes_peek(&m, &x, &b) == NULL);
    ASSERT_EQ(b, 4);
    const int64_t bad[3] = {0, -1, 65};
    for (int i = 0; i < 3; i++)
        ASSERT(cgr__shapes_peek(&m, &bad[i], &b) == NULL);
    ASSERT(cgr__shapes_peek(&m, NULL, &b) == NULL);
    ASSERT(cgr__shapes_peek(NULL, &x, &b) == NULL);
    cgr__shapes_stats after = stats(&m);
    ASSERT_U64_EQ(after.runs, before.runs);
    ASSERT_U64_EQ(after.hits, before.hits);
    ASSERT_U64_EQ(after.misses, before.misses);
    ASSERT_U64_EQ(after.new_shapes, before.new_shapes);
    ASSERT_U64_EQ(after.warmup_runs, before.warmup_runs);
    ASSERT_EQ(cgr__cache_lru(&m.cache), lru);
    /* The bucket alone, as the armed launch compares it. */
    x = 3;
    ASSERT_EQ(cgr__shapes_bucket(&m, &x, &b), CGR_STATUS_OK);
    ASSERT_EQ(b, 4);
    ASSERT_EQ(cgr__shapes_bucket(&m, &bad[2], &b), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_bucket(&m, NULL, &b), CGR_STATUS_INVALID_ARGUMENT);
    ASSERT_EQ(cgr__shapes_bucket(&m, &x, NULL), CGR_STATUS_INVALID_ARGUMENT);
    /* And decide agrees with what peek said. */
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(out.payload, pl(11));
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

int main(void)
{
    test_init();
    test_peek();
    test_wserve();
    test_boundaries();
    test_warmup();
    test_lru_update();
    test_spare();
    test_too_large();
    test_uncapturable();
    test_churn();
    test_bad_input();
    test_random();
    printf("shapes: ok\n");
    return 0;
}
