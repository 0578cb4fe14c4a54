/*
 * Unit tests of the shape table (replay/shapes.h), the decision core of
 * shape changes: scripted sequences for W-serve traffic (10,000 requests,
 * buckets {1,...,64}), bucket boundaries, per-shape warm-up, LRU eviction
 * with the update-in-place offer, the spare, the byte budget, uncapturable
 * shapes, the churn guard with its warning and hysteresis, and bad input
 * (which must change nothing). Then what the one table of entries must
 * guarantee: the latest entry tried first without ever answering for
 * another shape, the three kinds of entries kept to their own bounds,
 * least recently used first across both budgets, recycled warm-up entries
 * starting over, 0 and CGR_MAX_DYN_DIMS dims, the freed list at its
 * largest and byte totals that never wrap. Last, random traffic with
 * random capture outcomes against a model that owns every payload: each
 * one handed to the table must come back exactly once, and a replay must
 * only ever get the live payload of its own shape.
 */
#define _POSIX_C_SOURCE 200809L /* fork, waitpid in death.h */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "death.h"
#include "shapes.h"
#include "test.h"

#define TEST_RNG_SEED 0xD1B54A32D192ED03ull
#include "xorshift.h"

/*
 * Every calloc of the table goes through here (the test links with
 * --wrap=calloc): calloc_fails_in = k makes the k-th call from now fail.
 */
void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
static int calloc_fails_in;

void *__wrap_calloc(size_t n, size_t size)
{
    if (calloc_fails_in > 0 && --calloc_fails_in == 0)
        return NULL;
    return __real_calloc(n, size);
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

/* The churn guard: K new shapes within W runs trip it, S runs without one recover it. */
static void set_churn(cgr__shapes_config *c, uint32_t k, uint64_t window, uint64_t stable)
{
    c->churn_k = k;
    c->churn_window = window;
    c->churn_stable = stable;
}

/* The runtime's defaults (cgr_options_init): no dims, 2 warm-up runs, 16 graphs, K/W/S 8/64/32. */
static void config_init(cgr__shapes_config *c)
{
    memset(c, 0, sizeof *c);
    c->warmup_runs = 2;
    c->max_entries = 16;
    set_churn(c, 8, 64, 32);
}

static cgr__shapes_dim_desc dim(const char *name, cgr__bucket_policy p)
{
    cgr__shapes_dim_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.policy = p;
    return d;
}

/* A config with one dim (pow2 up to max), the given warm-up and cache, churn guard off. */
static cgr__shapes_config one_dim(cgr__shapes_dim_desc *d, int64_t max, uint32_t warmup,
                                  uint32_t entries, size_t bytes)
{
    *d = dim("x", pow2_policy(max));
    cgr__shapes_config c;
    config_init(&c);
    c.step_name = "step3";
    c.dims = d;
    c.n_dims = 1;
    c.warmup_runs = warmup;
    c.max_entries = entries;
    c.max_bytes = bytes;
    c.churn_k = 0;
    return c;
}

/*
 * The counters the runtime keeps of a table's decisions and reports
 * (cgr_step_stats counts its runs), kept here per table by the wrappers
 * below; stats() adds what the table itself holds or implies.
 */
typedef struct tally {
    const cgr__shapes *m;
    uint64_t hits, warmup_runs, capture_attempts, captures, capture_cancels, updates, too_large;
    uint64_t refused_failures; /* refuse() for CAPTURE_FAILED: a failure, not an attempt */
    uint64_t eager_by_reason[CGR_EAGER_REASONS];
    uint32_t peak_entries;
    size_t peak_bytes;
} tally;

static tally tallies[4];

enum { TALLIES = sizeof tallies / sizeof tallies[0] };

static tally *tally_of(const cgr__shapes *m)
{
    for (size_t i = 0; i < TALLIES; i++)
        if (tallies[i].m == m)
            return &tallies[i];
    TEST_FAIL_("a table without a tally (more than %d in use at once?)", (int)TALLIES);
    return NULL;
}

/*
 * A new table takes the oldest tally: tables live on the stack of each
 * case, so the ones before it are gone, and one whose tally was taken
 * while still in use fails in tally_of instead of counting into another's.
 */
static void mgr(cgr__shapes *m, const cgr__shapes_config *c)
{
    static size_t next;
    memset(m, 0xEE, sizeof *m);
    ASSERT_EQ(cgr__shapes_init(m, c), CGR_STATUS_OK);
    tally *t = NULL;
    for (size_t i = 0; i < TALLIES && !t; i++)
        if (tallies[i].m == m)
            t = &tallies[i];
    if (!t)
        t = &tallies[next++ % TALLIES];
    memset(t, 0, sizeof *t);
    t->m = m;
}

/*
 * Every decision of every test is first foretold by cgr__shapes_peek,
 * which must say exactly its action, its entry (none for a new shape) and
 * for a replay its graph, and change nothing in the table.
 */
static void t_decide(cgr__shapes *m, const int64_t *true_dims, cgr__shapes_decision *out)
{
    const cgr__shapes before = m ? *m : (cgr__shapes){0};
    cgr__shape *entries = m ? malloc(m->capacity * sizeof *entries) : NULL;
    ASSERT(!m || entries != NULL);
    if (m)
        memcpy(entries, m->entries, m->capacity * sizeof *entries);
    uint32_t at = 0;
    const cgr__shapes_action a = cgr__shapes_peek(m, true_dims, &at);
    if (memcmp(&before, m, sizeof before) != 0 ||
        memcmp(entries, m->entries, m->capacity * sizeof *entries) != 0)
        TEST_FAIL_("%s", "cgr__shapes_peek changed the table");
    void *graph = a == CGR__SHAPES_REPLAY ? m->entries[at].payload : NULL;
    free(entries);
    cgr__shapes_decide(m, true_dims, out);
    if (a != out->action || at != (out->fresh ? CGR__SHAPES_NONE : out->entry) ||
        (a == CGR__SHAPES_REPLAY && graph != out->payload))
        TEST_FAIL_("cgr__shapes_peek said action %d, entry %u; the decision was action %d, "
                   "entry %u%s",
                   (int)a, at, (int)out->action, out->entry, out->fresh ? " (new)" : "");
    tally *t = tally_of(m);
    switch (out->action) {
    case CGR__SHAPES_REPLAY: t->hits++; break;
    case CGR__SHAPES_WARMUP: t->warmup_runs++; break;
    case CGR__SHAPES_CAPTURE: t->capture_attempts++; break;
    case CGR__SHAPES_EAGER: t->eager_by_reason[out->reason]++; break;
    }
}

/* The graph cgr__shapes_peek says decide() would replay for true_dims, else NULL. */
static void *peek_graph(const cgr__shapes *m, const int64_t *true_dims)
{
    uint32_t at = 0;
    return cgr__shapes_peek(m, true_dims, &at) == CGR__SHAPES_REPLAY ? m->entries[at].payload
                                                                      : NULL;
}

/* What a test reports after a capture (cgr__shapes_capture_done's arguments). */
typedef struct result {
    void *payload;
    size_t bytes;
    int updated;
} result;

static void t_capture_done(cgr__shapes *m, const result *r, cgr__shapes_outcome *out)
{
    cgr__shapes_capture_done(m, r->payload, r->bytes, r->updated, out);
    tally *t = tally_of(m);
    t->captures++;
    t->updates += (uint64_t)r->updated;
    t->too_large += (uint64_t)!out->cached;
    if (m->n_graphs > t->peak_entries)
        t->peak_entries = m->n_graphs;
    if (m->bytes > t->peak_bytes)
        t->peak_bytes = m->bytes;
}

static void t_capture_cancel(cgr__shapes *m)
{
    cgr__shapes_capture_cancel(m);
    tally_of(m)->capture_cancels++;
}

static void t_refuse(cgr__shapes *m, uint32_t entry, cgr_eager_reason reason, const char *text,
                     cgr__shapes_freed *out)
{
    cgr__shapes_refuse(m, entry, reason, text, out);
    tally_of(m)->refused_failures += reason == CGR_EAGER_CAPTURE_FAILED;
}

static cgr__shapes_decision decide1(cgr__shapes *m, int64_t x)
{
    cgr__shapes_decision d;
    t_decide(m, &x, &d);
    return d;
}

static void expect(const cgr__shapes_decision *d, cgr__shapes_action a)
{
    if (d->action != a)
        TEST_FAIL_("action %d (reason %d), expected %d", (int)d->action, (int)d->reason, (int)a);
}

static cgr__shapes_outcome done(cgr__shapes *m, uintptr_t payload, size_t bytes, int updated)
{
    result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(payload);
    r.bytes = bytes;
    r.updated = updated;
    cgr__shapes_outcome o;
    t_capture_done(m, &r, &o);
    return o;
}

/* Shape x, new, through its one warm-up run (warmup_runs = 1) and its capture into payload. */
static void cache_shape(cgr__shapes *m, int64_t x, uintptr_t payload, size_t bytes)
{
    cgr__shapes_decision out = decide1(m, x);
    expect(&out, CGR__SHAPES_WARMUP);
    out = decide1(m, x);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(m, payload, bytes, 0);
}

/* Every counter of a table: the tally's, the table's own and what its entries say. */
typedef struct tstats {
    uint64_t runs, hits, misses, new_shapes, warmup_runs, capture_attempts, captures;
    uint64_t capture_failures, capture_cancels, refused_failures, updates, update_failures;
    uint64_t update_failures_by_reason[CGR__SHAPES_UPDATE_REASONS];
    uint64_t evictions, too_large, eager_runs, eager_by_reason[CGR_EAGER_REASONS];
    uint64_t churn_activations, churn_recoveries;
    uint32_t entries, peak_entries, spare, warming, eager;
    size_t bytes, peak_bytes, spare_bytes;
} tstats;

static tstats stats(const cgr__shapes *m)
{
    const tally *t = tally_of(m);
    tstats s;
    memset(&s, 0, sizeof s);
    s.runs = m->churn.counters.steps;
    s.hits = t->hits;
    s.misses = s.runs - s.hits;
    s.new_shapes = m->churn.counters.new_shapes;
    s.warmup_runs = t->warmup_runs;
    s.capture_attempts = t->capture_attempts;
    s.captures = t->captures;
    s.capture_failures = m->stats.capture_failures;
    s.capture_cancels = t->capture_cancels;
    s.refused_failures = t->refused_failures;
    s.updates = t->updates;
    memcpy(s.update_failures_by_reason, m->stats.update_failures_by_reason,
           sizeof s.update_failures_by_reason);
    for (uint32_t r = 0; r < CGR__SHAPES_UPDATE_REASONS; r++)
        s.update_failures += s.update_failures_by_reason[r];
    s.evictions = m->stats.evictions;
    s.too_large = t->too_large;
    memcpy(s.eager_by_reason, t->eager_by_reason, sizeof s.eager_by_reason);
    for (uint32_t r = 0; r < CGR_EAGER_REASONS; r++)
        s.eager_runs += s.eager_by_reason[r];
    s.churn_activations = m->churn.counters.activations;
    s.churn_recoveries = m->churn.counters.recoveries;
    s.entries = m->n_graphs;
    s.peak_entries = t->peak_entries;
    s.bytes = m->bytes;
    s.peak_bytes = t->peak_bytes;
    s.spare = (uint32_t)(m->spare.payload != NULL);
    s.spare_bytes = m->spare.bytes;
    for (uint32_t i = 0; i < m->capacity; i++) {
        s.warming += m->entries[i].state == CGR__SHAPE_WARMING;
        s.eager += m->entries[i].state == CGR__SHAPE_EAGER;
    }
    return s;
}

/* Where a CAPTURE decision's offer comes from, told while the table is pinned. */
enum { FROM_NONE, FROM_SPARE, FROM_LRU };

static int source_of(const cgr__shapes *m, const cgr__shapes_decision *d)
{
    if (d->payload == NULL)
        return FROM_NONE;
    return d->payload == m->spare.payload ? FROM_SPARE : FROM_LRU;
}

/* Entry i < m->capacity, or NULL when it is free. */
static const cgr__shape *entry_at(const cgr__shapes *m, uint32_t i)
{
    ASSERT_LT(i, m->capacity);
    return m->entries[i].state == CGR__SHAPE_FREE ? NULL : &m->entries[i];
}

/* The entry a decision names; it must be in use. */
static const cgr__shape *entry_of(const cgr__shapes *m, const cgr__shapes_decision *d)
{
    ASSERT_LT(d->entry, (m)->capacity);
    const cgr__shape *e = entry_at(m, d->entry);
    ASSERT(e != NULL);
    return e;
}

/* The entry holding bucketed shape x of a one-dim table, or NULL. */
static const cgr__shape *find1(const cgr__shapes *m, int64_t x)
{
    const cgr__shape *found = NULL;
    for (uint32_t i = 0; i < (m)->capacity; i++) {
        const cgr__shape *e = entry_at(m, i);
        if (e != NULL && e->dims[0] == x) {
            ASSERT(found == NULL); /* one entry per shape */
            found = e;
        }
    }
    return found;
}

/* The identities every state must satisfy (no capture in flight). */
static void check_identities(const cgr__shapes *m)
{
    tstats s = stats(m);
    ASSERT_U64_EQ(s.runs, s.hits + s.misses);
    ASSERT_U64_EQ(s.misses, s.warmup_runs + s.capture_attempts + s.eager_runs);
    if (!m->capturing)
        ASSERT_U64_EQ(s.capture_attempts + s.refused_failures,
                      s.captures + s.capture_failures + s.capture_cancels);
    uint64_t by = 0;
    for (uint32_t r = 0; r < CGR_EAGER_REASONS; r++)
        by += s.eager_by_reason[r];
    ASSERT_U64_EQ(by, s.eager_runs);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_NONE], 0);
    uint64_t uf = 0;
    for (uint32_t r = 0; r < CGR__SHAPES_UPDATE_REASONS; r++)
        uf += s.update_failures_by_reason[r];
    ASSERT_U64_EQ(uf, s.update_failures);
    ASSERT_LE(s.updates, s.captures);
    ASSERT_LE(s.entries, m->max_entries);
    ASSERT_LE(s.peak_entries, m->max_entries);
    ASSERT_LE(s.entries, s.peak_entries);
    ASSERT_LE(s.bytes, s.peak_bytes);
    if (m->max_bytes > 0) {
        ASSERT_LE(s.bytes, m->max_bytes);
        ASSERT_LE(s.peak_bytes, m->max_bytes);
    }
    ASSERT_LE(s.warming, CGR__SHAPES_MAX_WARMING);
    ASSERT_LE(s.eager, CGR__SHAPES_MAX_EAGER);

    /* The entries agree with the counters, and no shape has two entries. */
    uint32_t cap = (m)->capacity;
    ASSERT_EQ(cap, m->max_entries + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER);
    uint32_t graphs = 0, warming = 0, eager = 0;
    uint64_t replays = 0, eager_runs = 0;
    size_t bytes = 0;
    for (uint32_t i = 0; i < cap; i++) {
        const cgr__shape *e = entry_at(m, i);
        if (e == NULL)
            continue;
        ASSERT_LE(e->last_use, s.runs);
        ASSERT_GT(e->last_use, 0);
        for (uint32_t d = m->n_dims; d < CGR_MAX_DYN_DIMS; d++)
            ASSERT_EQ(e->dims[d], 0);
        for (uint32_t j = 0; j < i; j++) {
            const cgr__shape *o = entry_at(m, j);
            if (o != NULL) {
                ASSERT(memcmp(o->dims, e->dims, sizeof e->dims) != 0);
                /* One decision per run: two entries never share their latest run. */
                ASSERT(o->last_use != e->last_use);
            }
        }
        switch (e->state) {
        case CGR__SHAPE_WARMING:
            warming++;
            ASSERT_LE(e->warmups, m->warmup_runs);
            break;
        case CGR__SHAPE_GRAPH:
            graphs++;
            ASSERT(e->payload != NULL);
            bytes += e->bytes;
            replays += e->replays;
            break;
        case CGR__SHAPE_EAGER:
            eager++;
            ASSERT(e->reason == CGR_EAGER_CAPTURE_FAILED ||
                   e->reason == CGR_EAGER_TOO_LARGE ||
                   e->reason == CGR_EAGER_FROZEN_VALUE);
            eager_runs += e->eager_runs;
            break;
        default:
            TEST_FAIL_("entry %u in state %u", i, (unsigned)e->state);
        }
    }
    ASSERT_EQ(graphs, s.entries);
    ASSERT_EQ(warming, s.warming);
    ASSERT_EQ(eager, s.eager);
    ASSERT_EQ(bytes, s.bytes);
    ASSERT_LE(replays, s.hits);
    ASSERT_LE(eager_runs, s.eager_by_reason[CGR_EAGER_CAPTURE_FAILED] +
                              s.eager_by_reason[CGR_EAGER_TOO_LARGE] +
                              s.eager_by_reason[CGR_EAGER_FROZEN_VALUE]);
}

/* ---- byte-for-byte snapshots: failed calls change nothing --------------------------- */

typedef struct snap {
    cgr__shapes m;
    cgr__shape *entries;
    cgr__shapes_freed *freed;
    tstats stats;
} snap;

static snap *snap_take(const cgr__shapes *m)
{
    snap *s = calloc(1, sizeof *s);
    ASSERT(s != NULL);
    s->m = *m;
    s->entries = malloc(m->capacity * sizeof *s->entries);
    s->freed = malloc(m->max_entries * sizeof *s->freed);
    ASSERT(s->entries != NULL && s->freed != NULL);
    memcpy(s->entries, m->entries, m->capacity * sizeof *s->entries);
    memcpy(s->freed, m->freed, m->max_entries * sizeof *s->freed);
    s->stats = stats(m);
    return s;
}

static void snap_check(snap *s, const cgr__shapes *m)
{
    tstats now = stats(m);
    ASSERT_EQ(memcmp(&s->stats, &now, sizeof now), 0);
    ASSERT_EQ(memcmp(&s->m, m, sizeof *m), 0);
    ASSERT_EQ(memcmp(s->entries, m->entries, m->capacity * sizeof *s->entries), 0);
    ASSERT_EQ(memcmp(s->freed, m->freed, m->max_entries * sizeof *s->freed), 0);
    free(s->entries);
    free(s->freed);
    free(s);
}

/* ---- init --------------------------------------------------------------------------------- */

static void test_init(void)
{
    /* The documented defaults. */
    cgr__shapes_config c;
    memset(&c, 0x5A, sizeof c);
    config_init(&c);
    ASSERT(c.step_name == NULL);
    ASSERT(c.dims == NULL);
    ASSERT_EQ(c.n_dims, 0);
    ASSERT_EQ(c.warmup_runs, 2);
    ASSERT_EQ(c.max_entries, 16);
    ASSERT_EQ(c.max_bytes, 0);
    ASSERT_EQ(c.churn_k, 8);
    ASSERT_U64_EQ(c.churn_window, 64);
    ASSERT_U64_EQ(c.churn_stable, 32);
    ASSERT_EQ(c.keep_spare, 0);

    cgr__shapes m, before;
    memset(&m, 0x5A, sizeof m);
    memcpy(&before, &m, sizeof m);
    cgr__shapes_dim_desc d[3];
    d[0] = dim("x", pow2_policy(64));
    d[1] = dim(NULL, pow2_policy(8));
    d[2] = dim("y", pow2_policy(8));
    cgr__shapes_config good;
    config_init(&good);
    good.step_name = "decode";
    good.dims = d;
    good.n_dims = 3;

    ASSERT_DIES(cgr__shapes_init(NULL, &good));
    ASSERT_DIES(cgr__shapes_init(&m, NULL));
    ASSERT_EQ(memcmp(&m, &before, sizeof m), 0);
    char too_long[CGR_MAX_NAME + 2];
    memset(too_long, 'n', CGR_MAX_NAME + 1);
    too_long[CGR_MAX_NAME + 1] = '\0';
#define BAD(field_change)                                                                  \
    do {                                                                                   \
        cgr__shapes_dim_desc dd[3];                                                        \
        memcpy(dd, d, sizeof dd);                                                          \
        c = good;                                                                          \
        c.dims = dd;                                                                       \
        field_change;                                                                      \
        ASSERT_DIES(cgr__shapes_init(&m, &c));                  \
        ASSERT_EQ(memcmp(&m, &before, sizeof m), 0);                                       \
    } while (0)
    BAD(c.dims = NULL);
    BAD(c.n_dims = CGR_MAX_DYN_DIMS + 1);
    BAD(c.n_dims = UINT32_MAX);
    BAD(c.warmup_runs = 0);
    BAD(c.warmup_runs = CGR_MAX_WARMUP + 1);
    BAD(c.max_entries = 0);
    BAD(c.max_entries = CGR__SHAPES_MAX_ENTRIES + 1);
    BAD(c.keep_spare = 2);
    BAD(c.keep_spare = -1);
    BAD(c.churn_k = CGR__CHURN_MAX_K + 1);
    BAD((c.churn_k = 5, c.churn_window = 4));
    BAD((c.churn_k = 5, c.churn_stable = 0));
    BAD(memset(&dd[0].policy, 0, sizeof dd[0].policy));
    BAD(memset(&dd[2].policy, 0, sizeof dd[2].policy)); /* the last dim is checked too */
    BAD(dd[0].name = "a_tensor_name_that_is_much_longer_than_sixty_three_characters_in_all");
    BAD(dd[2].name = too_long);
    BAD(c.step_name = too_long);
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
    ASSERT_STR_EQ(m.step_name, "decode");
    ASSERT_STR_EQ(m.dim_name[0], "x");
    ASSERT_STR_EQ(m.dim_name[1], ""); /* unnamed: printed "d1" */
    ASSERT_STR_EQ(m.dim_name[2], "y");
    ASSERT_STR_EQ((&m)->warning, "");
    ASSERT_STR_EQ((&m)->update_error, "");
    /* Room for every kind of entry at its bound; all free at the start. */
    ASSERT_EQ((&m)->capacity, 1 + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER);
    for (uint32_t i = 0; i < (&m)->capacity; i++)
        ASSERT(entry_at(&m, i) == NULL);
    check_identities(&m);
    cgr__shapes_destroy(&m);
    cgr__shapes_destroy(&m); /* twice is safe */
    ASSERT_EQ((&m)->capacity, 0);

    /* The largest table, and every dim a step can declare. */
    cgr__shapes_dim_desc all[CGR_MAX_DYN_DIMS];
    for (uint32_t i = 0; i < CGR_MAX_DYN_DIMS; i++)
        all[i] = dim(NULL, pow2_policy(4));
    c = good;
    c.dims = all;
    c.n_dims = CGR_MAX_DYN_DIMS;
    c.max_entries = CGR__SHAPES_MAX_ENTRIES;
    mgr(&m, &c);
    ASSERT_EQ((&m)->capacity,
              CGR__SHAPES_MAX_ENTRIES + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER);
    cgr__shapes_destroy(&m);

    /* A step without dynamic dims: one shape, captured after warm-up, then replayed. */
    config_init(&c);
    c.warmup_runs = 1;
    mgr(&m, &c);
    ASSERT_STR_EQ(m.step_name, "step"); /* NULL: the default name */
    cgr__shapes_decision out;
    t_decide(&m, NULL, &out);
    expect(&out, CGR__SHAPES_WARMUP);
    t_decide(&m, NULL, &out);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 1, 10, 0);
    for (int i = 0; i < 10; i++) {
        t_decide(&m, NULL, &out);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(1));
    }
    check_identities(&m);
    cgr__shapes_freed e;
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
    ASSERT_PTR_EQ(e.payload, pl(1));
    cgr__shapes_destroy(&m);

    /* Names of exactly the longest length are kept whole, and copied. */
    char name[CGR_MAX_NAME + 1];
    memset(name, 'n', CGR_MAX_NAME);
    name[CGR_MAX_NAME] = '\0';
    d[0].name = name;
    c = good;
    c.step_name = name;
    mgr(&m, &c);
    ASSERT_STR_EQ(m.dim_name[0], name);
    ASSERT_STR_EQ(m.step_name, name);
    name[0] = 'X'; /* the caller's buffer may change or go after init */
    ASSERT_EQ(m.dim_name[0][0], 'n');
    ASSERT_EQ(m.step_name[0], 'n');
    d[0].name = "x";
    cgr__shapes_destroy(&m);
}

/* ---- W-serve --------------------------------------------------------------------------------- */

/*
 * W-serve's traffic (bench/serve/): 10,000 requests with batch sizes uniform in
 * 1..64 from a fixed seed, buckets {1,2,4,8,16,32,64}, one warm-up run per
 * shape, the default churn guard (K = 8: seven buckets never trip it).
 */
static void test_wserve(void)
{
    static const int64_t buckets[7] = {1, 2, 4, 8, 16, 32, 64};
    cgr__shapes_dim_desc d = dim("x", list_policy(buckets, 7));
    cgr__shapes_config c;
    config_init(&c);
    c.step_name = "serve";
    c.dims = &d;
    c.n_dims = 1;
    c.warmup_runs = 1;
    cgr__shapes m;
    mgr(&m, &c);

    int state[7] = {0};      /* 0 unseen, 1 warmed up, 2 cached */
    uint32_t entry[7];       /* each bucket keeps its entry from first sight to replay */
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
        const cgr__shape *e = entry_of(&m, &out);
        ASSERT_PTR_EQ(out.dims, e->dims); /* the entry's key is what the run pads to */
        ASSERT_EQ(e->dims[0], buckets[b]);
        per_bucket[b]++;
        if (state[b] == 0) {
            expect(&out, CGR__SHAPES_WARMUP);
            ASSERT_EQ(out.warmup_run, 1);
            ASSERT_EQ(out.fresh, 1);
            entry[b] = out.entry;
            state[b] = 1;
        } else if (state[b] == 1) {
            ASSERT_EQ(out.entry, entry[b]);
            ASSERT_EQ(out.fresh, 0);
            expect(&out, CGR__SHAPES_CAPTURE);
            ASSERT(out.payload == NULL); /* never full: nothing to update */
            ASSERT_EQ(source_of(&m, &out), FROM_NONE);
            cgr__shapes_outcome o = done(&m, 100 + (uintptr_t)b, 4096 * (size_t)buckets[b], 0);
            ASSERT_EQ(o.cached, 1);
            ASSERT_EQ(o.n_freed, 0);
            state[b] = 2;
            captures++;
            last_capture = i;
        } else {
            expect(&out, CGR__SHAPES_REPLAY);
            ASSERT_PTR_EQ(out.payload, pl(100 + (uintptr_t)b));
            ASSERT_EQ(out.entry, entry[b]);
            ASSERT_EQ(out.fresh, 0);
            ASSERT_EQ(e->state, CGR__SHAPE_GRAPH);
            ASSERT_U64_EQ(e->last_use, (uint64_t)i + 1); /* the table's run count */
        }
        ASSERT_EQ(out.churn_tripped, 0);
    }
    tstats s = stats(&m);
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
    ASSERT_EQ(s.peak_entries, 7);
    ASSERT_EQ(s.warming, 0);
    ASSERT_EQ(s.eager, 0);
    /* Per shape: every request of a bucket after its warm-up and capture replayed. */
    int seen = 0;
    for (uint32_t i = 0; i < (&m)->capacity; i++) {
        const cgr__shape *e = entry_at(&m, i);
        if (e == NULL)
            continue;
        ASSERT_EQ(e->state, CGR__SHAPE_GRAPH);
        int b = (int)((uintptr_t)e->payload - 100);
        ASSERT(b >= 0 && b < 7);
        ASSERT_EQ(i, entry[b]);
        ASSERT_EQ(e->dims[0], buckets[b]);
        ASSERT_U64_EQ(e->replays, per_bucket[b] - 2);
        ASSERT_EQ(e->bytes, 4096 * (size_t)buckets[b]);
        ASSERT_GT(e->last_use, 0);
        seen++;
    }
    ASSERT_EQ(seen, 7);
    check_identities(&m);
    printf("W-serve: 7 captures, the last at request %d; %llu replays of 10000\n", last_capture,
           (unsigned long long)s.hits);
    /* Drain hands the graphs back least recently used first, and counts no eviction. */
    uint64_t prev = 0;
    for (int i = 0; i < 7; i++) {
        uint64_t want_use = UINT64_MAX;
        uintptr_t want = 0;
        for (uint32_t k = 0; k < (&m)->capacity; k++) {
            const cgr__shape *e = entry_at(&m, k);
            if (e != NULL && e->last_use < want_use) {
                want_use = e->last_use;
                want = (uintptr_t)e->payload;
            }
        }
        ASSERT_GT(want_use, prev);
        prev = want_use;
        cgr__shapes_freed e;
        ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
        ASSERT_PTR_EQ(e.payload, pl(want));
    }
    cgr__shapes_freed e;
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_WRONG_STATE);
    ASSERT_U64_EQ(stats(&m).evictions, 0);
    ASSERT_EQ(stats(&m).entries, 0);
    ASSERT_EQ(stats(&m).bytes, 0);
    cgr__shapes_destroy(&m);
}

/* ---- buckets -------------------------------------------------------------------------------- */

/* Every true value of two dims, at and around every boundary, and the values refused. */
static void test_boundaries(void)
{
    static const int64_t sizes[3] = {3, 10, 100};
    cgr__shapes_dim_desc d[2] = {dim("x", list_policy(sizes, 3)), dim("y", pow2_policy(100))};
    cgr__shapes_config c;
    config_init(&c);
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
            t_decide(&m, dims, &out);
            ASSERT_EQ(out.dims[0], want_x);
            ASSERT_EQ(out.dims[1], want_y);
            if (out.action == CGR__SHAPES_REPLAY)
                break;
            if (out.action == CGR__SHAPES_CAPTURE)
                done(&m, next++, 1, 0);
        }
    }
    /* Distinct (x, y) bucket pairs among v = 1..100: {3}x{1,2,4}, {10}x{4,8,16},
     * {100}x{16,32,64,100}. */
    ASSERT_U64_EQ(stats(&m).captures, 10);
    ASSERT_EQ(next, 11);

    static const int64_t bad[][2] = {{0, 1},     {-1, 1},      {101, 1},      {1, 0},
                                     {1, 101},   {INT64_MAX, 1}, {1, INT64_MIN}, {101, 101}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snap *s = snap_take(&m);
        cgr__shapes_decision out;
        memset(&out, 0x77, sizeof out);
        ASSERT_DIES(t_decide(&m, bad[i], &out));
        snap_check(s, &m);
    }
    cgr__shapes_destroy(&m);
}

/* ---- warm-up ----------------------------------------------------------------------------- */

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
        const cgr__shape *e = entry_of(&m, &out);
        ASSERT_EQ(out.fresh, script[i].a == CGR__SHAPES_WARMUP && script[i].run == 1);
        if (script[i].a == CGR__SHAPES_WARMUP) {
            ASSERT_EQ(out.warmup_run, script[i].run);
            ASSERT_EQ(out.fresh, script[i].run == 1);
            if (script[i].run == 1)
                record[b] = out.entry;
            ASSERT_EQ(out.entry, record[b]); /* stable from first warm-up to capture */
            ASSERT_EQ(e->state, CGR__SHAPE_WARMING);
            ASSERT_EQ(e->warmups, script[i].run);
        } else if (script[i].a == CGR__SHAPES_CAPTURE) {
            ASSERT_EQ(out.entry, record[b]);
            ASSERT_EQ(out.warmup_run, 0);
            done(&m, (uintptr_t)b, 1, 0);
            ASSERT_EQ(e->state, CGR__SHAPE_GRAPH); /* the same entry now holds the graph */
        } else {
            ASSERT_PTR_EQ(out.payload, pl((uintptr_t)b));
            ASSERT_EQ(out.entry, record[b]); /* and keeps it while the graph lives */
            ASSERT_EQ(out.warmup_run, 0);
        }
    }
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.warmup_runs, 9);
    ASSERT_U64_EQ(s.captures, 3);
    ASSERT_U64_EQ(s.new_shapes, 3);
    ASSERT_EQ(s.warming, 0);

    /*
     * 17 shapes warming at once: the 17th takes the entry of the least
     * recently seen one (shape 1 << 5 once 1 << 4 has run again), which then
     * starts over as new; the others keep their count.
     */
    uint32_t at[21];
    for (int k = 4; k < 4 + (int)CGR__SHAPES_MAX_WARMING; k++) {
        cgr__shapes_decision out = decide1(&m, INT64_C(1) << k);
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.warmup_run, 1);
        ASSERT_EQ(out.fresh, 1);
        at[k] = out.entry;
    }
    ASSERT_EQ(stats(&m).warming, CGR__SHAPES_MAX_WARMING);
    /* A second warm-up of 1 << 4 makes 1 << 5 the least recently seen. */
    cgr__shapes_decision out = decide1(&m, INT64_C(1) << 4);
    ASSERT_EQ(out.warmup_run, 2);
    ASSERT_EQ(out.entry, at[4]);
    out = decide1(&m, INT64_C(1) << 20);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.fresh, 1);
    ASSERT_EQ(out.entry, at[5]); /* recycled in place: the runtime must reset its state */
    ASSERT_EQ(entry_of(&m, &out)->dims[0], INT64_C(1) << 20);
    ASSERT_EQ(entry_of(&m, &out)->warmups, 1);
    ASSERT(find1(&m, INT64_C(1) << 5) == NULL);
    ASSERT_EQ(stats(&m).warming, CGR__SHAPES_MAX_WARMING);
    out = decide1(&m, INT64_C(1) << 4);
    ASSERT_EQ(out.warmup_run, 3);
    ASSERT_EQ(out.fresh, 0);
    out = decide1(&m, INT64_C(1) << 6);
    ASSERT_EQ(out.warmup_run, 2);
    out = decide1(&m, INT64_C(1) << 5); /* forgotten: new again */
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.fresh, 1);
    /* It took the entry of 1 << 7, now the least recently seen; the graphs stayed. */
    ASSERT_EQ(out.entry, at[7]);
    ASSERT(find1(&m, INT64_C(1) << 7) == NULL);
    ASSERT_EQ(stats(&m).entries, 3);
    ASSERT_PTR_EQ(decide1(&m, 2).payload, pl(2));
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
        ASSERT_EQ(source_of(&m, &out), FROM_NONE);
        ASSERT(out.payload == NULL);
        o = done(&m, (uintptr_t)x, 100, 0);
        ASSERT_EQ(o.n_freed, 0);
    }
    expect((out = decide1(&m, 1), &out), CGR__SHAPES_REPLAY); /* s2 is now the LRU */

    /* s3 = 4: the full cache offers s2's executable; the update succeeds. */
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_WARMUP);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(source_of(&m, &out), FROM_LRU);
    ASSERT_PTR_EQ(out.payload, pl(2));
    uint32_t s3_entry = out.entry;
    o = done(&m, 2, 120, 1);
    ASSERT_EQ(o.cached, 1);
    ASSERT_EQ(o.n_freed, 0); /* reused, not freed */
    ASSERT(find1(&m, 2) == NULL); /* s2 left the table with its executable */
    ASSERT_EQ(find1(&m, 4)->state, CGR__SHAPE_GRAPH);
    ASSERT_PTR_EQ(find1(&m, 4)->payload, pl(2));
    ASSERT_EQ(find1(&m, 4)->bytes, 120);
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.evictions, 1);
    ASSERT_EQ(s.entries, 2);
    ASSERT_EQ(s.bytes, 220);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(out.payload, pl(2)); /* the updated executable now serves s3 */
    ASSERT_EQ(out.entry, s3_entry);
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_WARMUP); /* s2 left the cache: a new shape again */
    ASSERT_EQ(out.fresh, 1);

    /* s2 again: the LRU is s1; not updated (instantiated), so s1 is evicted and freed. */
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(source_of(&m, &out), FROM_LRU);
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
    cgr__shapes_freed victim;
    cgr__shapes_update_failed(&m, 2, "cudaGraphExecUpdate: topology changed (node 7)",
                                        &victim);
    ASSERT_PTR_EQ(victim.payload, pl(2));
    ASSERT_EQ(victim.bytes, 120);
    /* Only one verdict per offer, and no update from a refused executable. */
    ASSERT_DIES(cgr__shapes_update_failed(&m, 2, "again", &victim));
    result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(2);
    r.updated = 1;
    ASSERT_DIES(t_capture_done(&m, &r, &o));
    o = done(&m, 13, 100, 0);
    ASSERT_EQ(o.n_freed, 0); /* the victim already left: room for the new one */
    s = stats(&m);
    ASSERT_U64_EQ(s.update_failures, 1);
    ASSERT_U64_EQ(s.update_failures_by_reason[2], 1);
    ASSERT_U64_EQ(s.evictions, 3);
    ASSERT_U64_EQ(s.updates, 1);
    ASSERT_U64_EQ(s.captures, 5);
    ASSERT_EQ(s.entries, 2);
    ASSERT_STR_EQ((&m)->update_error, "cudaGraphExecUpdate: topology changed (node 7)");
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
    ASSERT_DIES(t_capture_done(&m, &r, &o));
    t_capture_cancel(&m);
    ASSERT_DIES(t_capture_cancel(&m));
    out = decide1(&m, 16);
    expect(&out, CGR__SHAPES_CAPTURE); /* no new warm-up */
    ASSERT_PTR_EQ(out.payload, offered);
    /* Update failures are counted by reason; odd reasons share the last slot. */
    cgr__shapes_update_failed(&m, 99, NULL, &victim);
    ASSERT_PTR_EQ(victim.payload, offered);
    ASSERT_STR_EQ((&m)->update_error, "");
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
    ASSERT_EQ(source_of(&m2, &out), FROM_NONE);
    ASSERT_DIES(cgr__shapes_update_failed(&m2, 2, "x", &victim));
    memset(&r, 0, sizeof r);
    r.payload = pl(5);
    r.updated = 1;
    ASSERT_DIES(t_capture_done(&m2, &r, &o));
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
    ASSERT_EQ(source_of(&m, &out), FROM_NONE); /* not full by count */
    o = done(&m, 2, 600, 0);                      /* the byte budget evicts s1 ... */
    ASSERT_EQ(o.n_freed, 0);                      /* ... kept as the spare */
    tstats s = stats(&m);
    ASSERT_EQ(s.spare, 1);
    ASSERT_EQ(s.spare_bytes, 600);
    ASSERT_U64_EQ(s.evictions, 1);

    /* s3 updates the spare. */
    decide1(&m, 4);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(source_of(&m, &out), FROM_SPARE);
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
    ASSERT_EQ(source_of(&m, &out), FROM_NONE);
    o = done(&m, 4, 500, 0);
    ASSERT_EQ(o.n_freed, 0);
    ASSERT_EQ(stats(&m).spare_bytes, 600);
    decide1(&m, 16);
    out = decide1(&m, 16);
    ASSERT_EQ(source_of(&m, &out), FROM_SPARE);
    ASSERT_PTR_EQ(out.payload, pl(2));
    o = done(&m, 5, 100, 0); /* instantiated: fits without evicting */
    ASSERT_EQ(o.n_freed, 0);
    ASSERT_EQ(stats(&m).spare, 1);

    /* s6: the spare fails to update and comes back for freeing. */
    decide1(&m, 32);
    out = decide1(&m, 32);
    ASSERT_EQ(source_of(&m, &out), FROM_SPARE);
    cgr__shapes_freed victim;
    cgr__shapes_update_failed(&m, 3, "node type changed", &victim);
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
    size_t want_bytes[] = {500, 100, 350, 300};
    for (size_t i = 0; i < 4; i++) {
        cgr__shapes_freed e;
        ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_OK);
        ASSERT_PTR_EQ(e.payload, pl(want[i]));
        ASSERT_EQ(e.bytes, want_bytes[i]);
    }
    ASSERT_U64_EQ(stats(&m).evictions, 3); /* tearing down is not evicting */
    cgr__shapes_freed e;
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

    cache_shape(&m, 1, 1, 400);

    /* s2's graph alone is over the budget: refused, freed, eager from now on. */
    decide1(&m, 2);
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_EQ(source_of(&m, &out), FROM_LRU); /* max_entries 1: s1 is offered */
    uint32_t s2_entry = out.entry;
    o = done(&m, 2, 5000, 0);
    ASSERT_EQ(o.cached, 0);
    /* Its entry now says why it runs eagerly; s1's graph is not in freed. */
    const cgr__shape *e2 = entry_at(&m, s2_entry);
    ASSERT(e2 != NULL);
    ASSERT_EQ(e2->state, CGR__SHAPE_EAGER);
    ASSERT_EQ(e2->reason, CGR_EAGER_TOO_LARGE);
    ASSERT(e2->payload == NULL);
    ASSERT_EQ(o.n_freed, 1);
    ASSERT_PTR_EQ(o.freed[0].payload, pl(2));
    ASSERT_EQ(o.freed[0].bytes, 5000);
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.too_large, 1);
    ASSERT_U64_EQ(s.captures, 1 + 1);
    ASSERT_EQ(s.entries, 1); /* s1 untouched */
    ASSERT_EQ(s.bytes, 400);
    ASSERT_U64_EQ(s.evictions, 0);
    ASSERT_EQ(s.eager, 1);
    ASSERT_EQ(s.warming, 0);
    for (int i = 0; i < 5; i++) {
        out = decide1(&m, 2);
        expect(&out, CGR__SHAPES_EAGER);
        ASSERT_EQ(out.reason, CGR_EAGER_TOO_LARGE);
        ASSERT(strstr(entry_of(&m, &out)->text, "5000 bytes") != NULL);
        ASSERT(strstr(entry_of(&m, &out)->text, "1000 bytes") != NULL);
        ASSERT_EQ(out.entry, s2_entry);
        ASSERT_EQ(out.dims[0], 2);
        out = decide1(&m, 1);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(1));
    }
    s = stats(&m);
    ASSERT_U64_EQ(s.eager_runs, 5);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_TOO_LARGE], 5);
    uint32_t found = 0;
    for (uint32_t i = 0; i < (&m)->capacity; i++) {
        const cgr__shape *e = entry_at(&m, i);
        if (e == NULL || e->state != CGR__SHAPE_EAGER)
            continue;
        found++;
        ASSERT_EQ(i, s2_entry);
        ASSERT_EQ(e->reason, CGR_EAGER_TOO_LARGE);
        ASSERT_EQ(e->dims[0], 2);
        ASSERT_U64_EQ(e->eager_runs, 5);
        ASSERT(strstr(e->text, "5000 bytes") != NULL);
    }
    ASSERT_EQ(found, 1);

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
    ASSERT_EQ(out.reason, CGR_EAGER_TOO_LARGE);

    /* Exactly the budget fits. */
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_CAPTURE);
    o = done(&m, 7, 1000, 0);
    ASSERT_EQ(o.cached, 1);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/*
 * An offer updated in place whose capture the peer ranks refused: it leaves
 * the table (an eviction, its old shape is gone) without counting as an
 * update failure, and the shape's capture then fails.
 */
static void test_offer_withdrawn(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 1, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_freed victim;

    cache_shape(&m, 1, 1, 100);
    decide1(&m, 2);
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_PTR_EQ(out.payload, pl(1));
    tstats before = stats(&m);
    cgr__shapes_offer_withdrawn(&m, &victim);
    ASSERT_PTR_EQ(victim.payload, pl(1));
    ASSERT_EQ(victim.bytes, 100);
    ASSERT_DIES(cgr__shapes_offer_withdrawn(&m, &victim));
    ASSERT_DIES(cgr__shapes_update_failed(&m, 2, "x", &victim));
    cgr__shapes_capture_failed(&m, "a peer rank could not capture this shape");
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.update_failures, before.update_failures);
    ASSERT_U64_EQ(s.evictions, before.evictions + 1);
    ASSERT_U64_EQ(s.capture_failures, before.capture_failures + 1);
    ASSERT_EQ(s.entries, 0);
    ASSERT_EQ(s.bytes, 0);
    ASSERT_STR_EQ((&m)->update_error, "");
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.reason, CGR_EAGER_CAPTURE_FAILED);
    expect((out = decide1(&m, 1), &out), CGR__SHAPES_WARMUP); /* shape 1 lost its graph */
    ASSERT_DIES(cgr__shapes_offer_withdrawn(&m, &victim)); /* no capture in flight */
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* A cached graph found wrong (the frozen-value check): its shape runs eagerly for good. */
static void test_refuse(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 4, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_freed f;

    cache_shape(&m, 1, 1, 400);
    cache_shape(&m, 2, 2, 300);
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_REPLAY);
    uint32_t e1 = out.entry;

    /* Refused only for a graph, with a known reason, between decisions. */
    ASSERT_DIES(cgr__shapes_refuse(&m, e1, CGR_EAGER_CHURN, "x", &f));
    ASSERT_DIES(cgr__shapes_refuse(&m, (&m)->capacity, CGR_EAGER_FROZEN_VALUE, "x", &f));
    ASSERT_DIES(cgr__shapes_refuse(&m, e1, CGR_EAGER_FROZEN_VALUE, "x", NULL));
    decide1(&m, 3); /* warming */
    out = decide1(&m, 3);
    expect(&out, CGR__SHAPES_CAPTURE);
    ASSERT_DIES(cgr__shapes_refuse(&m, e1, CGR_EAGER_FROZEN_VALUE, "x", &f));
    t_capture_cancel(&m);
    tstats before = stats(&m);

    t_refuse(&m, e1, CGR_EAGER_FROZEN_VALUE, "kernel k froze t", &f);
    ASSERT_PTR_EQ(f.payload, pl(1));
    ASSERT_EQ(f.bytes, 400);
    tstats s = stats(&m);
    ASSERT_EQ(s.entries, 1);
    ASSERT_EQ(s.bytes, 300);
    ASSERT_U64_EQ(s.evictions, before.evictions); /* leaving for being wrong is not for room */
    ASSERT_U64_EQ(s.capture_failures, before.capture_failures); /* a frozen value is not one */
    ASSERT_EQ(s.eager, before.eager + 1);
    /* The same entry, the same key: an eager shape now, and not a graph a second time. */
    ASSERT_DIES(cgr__shapes_refuse(&m, e1, CGR_EAGER_FROZEN_VALUE, "x", &f));
    for (int i = 0; i < 3; i++) {
        out = decide1(&m, 1);
        expect(&out, CGR__SHAPES_EAGER);
        ASSERT_EQ(out.reason, CGR_EAGER_FROZEN_VALUE);
        ASSERT_EQ(out.entry, e1);
        ASSERT_STR_EQ(entry_of(&m, &out)->text, "kernel k froze t");
        out = decide1(&m, 2);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(2));
    }
    s = stats(&m);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_FROZEN_VALUE], 3);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* Shape x, cached, then refused for a frozen value. */
static void freeze_shape(cgr__shapes *m, int64_t x)
{
    cgr__shapes_freed f;
    cache_shape(m, x, (uintptr_t)x, 100);
    cgr__shapes_decision out = decide1(m, x);
    expect(&out, CGR__SHAPES_REPLAY);
    t_refuse(m, out.entry, CGR_EAGER_FROZEN_VALUE, "froze", &f);
}

/* Shape x, new, whose capture fails. */
static void fail_shape(cgr__shapes *m, int64_t x)
{
    decide1(m, x);
    cgr__shapes_decision out = decide1(m, x);
    expect(&out, CGR__SHAPES_CAPTURE);
    cgr__shapes_capture_failed(m, "no");
}

/*
 * When the eager records are full, a frozen value's is forgotten last: a
 * shape forgotten is captured and checked again, and a value that held
 * still across the two runs checked would then be replayed.
 */
static void test_forget_frozen_last(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, INT64_C(1) << 30, 1, 32, 0);
    cgr__shapes m;
    mgr(&m, &c);
    const int64_t first = 1, failed = 2;
    freeze_shape(&m, first); /* the least recently used of all */
    fail_shape(&m, failed);
    for (int k = 2; k < (int)CGR__SHAPES_MAX_EAGER; k++)
        freeze_shape(&m, INT64_C(1) << k);
    ASSERT_EQ(stats(&m).eager, CGR__SHAPES_MAX_EAGER);
    /* A 17th: the failed capture's record goes, though the first frozen one is older. */
    freeze_shape(&m, INT64_C(1) << 20);
    ASSERT_EQ(stats(&m).eager, CGR__SHAPES_MAX_EAGER);
    ASSERT(find1(&m, failed) == NULL);
    cgr__shapes_decision out = decide1(&m, first);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.reason, CGR_EAGER_FROZEN_VALUE);
    /* All frozen now: the least recently used of them goes (shape 4; 1 just ran). */
    freeze_shape(&m, INT64_C(1) << 21);
    ASSERT_EQ(stats(&m).eager, CGR__SHAPES_MAX_EAGER);
    ASSERT(find1(&m, 4) == NULL);
    ASSERT(find1(&m, first) != NULL);
    out = decide1(&m, failed); /* forgotten: new again */
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.fresh, 1);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/*
 * Only a cached graph is refused. A shape still warming up, such as one
 * whose scratch the arena cannot back, fails at its capture instead
 * (test_uncapturable), so that ranks sharing a communicator agree on it.
 */
static void test_refuse_warming(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 1024, 1, 4, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_freed f = {pl(9), 9};

    cache_shape(&m, 1, 1, 400);
    out = decide1(&m, 2);
    expect(&out, CGR__SHAPES_WARMUP);
    uint32_t e2 = out.entry;
    ASSERT_DIES(cgr__shapes_refuse(&m, e2, CGR_EAGER_FROZEN_VALUE, "x", &f));
    ASSERT_DIES(cgr__shapes_refuse(&m, e2, CGR_EAGER_CAPTURE_FAILED, "x", &f));
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

    ASSERT_DIES(cgr__shapes_capture_failed(&m, "x"));
    cache_shape(&m, 1, 1, 10);

    const char *why = "cudaMalloc inside the step during capture: use cgr_ctx_alloc";
    decide1(&m, 2);
    expect((out = decide1(&m, 2), &out), CGR__SHAPES_CAPTURE);
    cgr__shapes_capture_failed(&m, why);
    for (int i = 0; i < 3; i++) {
        out = decide1(&m, 2);
        expect(&out, CGR__SHAPES_EAGER);
        ASSERT_EQ(out.reason, CGR_EAGER_CAPTURE_FAILED);
        ASSERT_STR_EQ(entry_of(&m, &out)->text, why);
        ASSERT_EQ(out.fresh, 0);
        out = decide1(&m, 1);
        expect(&out, CGR__SHAPES_REPLAY); /* other shapes keep replaying */
    }
    /* Other new shapes still capture. */
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_WARMUP);
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_CAPTURE);
    done(&m, 4, 10, 0);
    expect((out = decide1(&m, 4), &out), CGR__SHAPES_REPLAY);
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.capture_failures, 1);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_CAPTURE_FAILED], 3);
    ASSERT_EQ(s.eager, 1);
    ASSERT_EQ(s.warming, 0);
    ASSERT_EQ(find1(&m, 2)->state, CGR__SHAPE_EAGER);
    ASSERT_EQ(find1(&m, 2)->reason, CGR_EAGER_CAPTURE_FAILED);
    ASSERT_STR_EQ(find1(&m, 2)->text, why);
    ASSERT_U64_EQ(find1(&m, 2)->eager_runs, 3);

    /* A long reason is kept bounded and marked as cut. */
    char longer[1000];
    memset(longer, 'e', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    decide1(&m, 8);
    decide1(&m, 8);
    cgr__shapes_capture_failed(&m, longer);
    out = decide1(&m, 8);
    const char *kept = entry_of(&m, &out)->text;
    ASSERT_EQ(strlen(kept), CGR__SHAPES_TEXT_MAX - 1);
    ASSERT_EQ(strncmp(kept, longer, CGR__SHAPES_TEXT_MAX - 4), 0);
    ASSERT_STR_EQ(kept + CGR__SHAPES_TEXT_MAX - 4, "...");
    /* NULL is an empty reason. */
    decide1(&m, 16);
    decide1(&m, 16);
    cgr__shapes_capture_failed(&m, NULL);
    out = decide1(&m, 16);
    ASSERT_STR_EQ(entry_of(&m, &out)->text, "");

    /*
     * The table is bounded: once 16 shapes are recorded, the next failure
     * recycles the least recently used record. Shape 2 was recorded first
     * but runs (eagerly) again just before, so shape 8's record goes.
     */
    for (int k = 5; k < 5 + (int)CGR__SHAPES_MAX_EAGER - 3; k++) {
        decide1(&m, INT64_C(1) << k);
        expect((out = decide1(&m, INT64_C(1) << k), &out), CGR__SHAPES_CAPTURE);
        cgr__shapes_capture_failed(&m, "no");
    }
    ASSERT_EQ(stats(&m).eager, CGR__SHAPES_MAX_EAGER);
    ASSERT_EQ(decide1(&m, 2).reason, CGR_EAGER_CAPTURE_FAILED);
    decide1(&m, INT64_C(1) << 29);
    decide1(&m, INT64_C(1) << 29);
    cgr__shapes_capture_failed(&m, "no");
    ASSERT_EQ(stats(&m).eager, CGR__SHAPES_MAX_EAGER);
    ASSERT(find1(&m, 8) == NULL);
    ASSERT_EQ(stats(&m).entries, 2); /* the graphs are not touched */
    out = decide1(&m, 8); /* forgotten: it warms up and captures again */
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.fresh, 1);
    out = decide1(&m, 2); /* still known */
    ASSERT_EQ(out.reason, CGR_EAGER_CAPTURE_FAILED);
    out = decide1(&m, 16);
    ASSERT_EQ(out.reason, CGR_EAGER_CAPTURE_FAILED);
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* ---- churn guard ---------------------------------------------------------------------------- */

static void test_churn(void)
{
    static const int64_t ys[2] = {8, 16};
    cgr__shapes_dim_desc d[2] = {dim("x", pow2_policy(1 << 20)), dim("y", list_policy(ys, 2))};
    cgr__shapes_config c;
    config_init(&c);
    c.step_name = "decode";
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1;
    set_churn(&c, 3, 10, 4);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
#define D(x, y)                                                                            \
    do {                                                                                   \
        dims[0] = (x);                                                                     \
        dims[1] = (y);                                                                     \
        t_decide(&m, dims, &out);                      \
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
    ASSERT_EQ(out.reason, CGR_EAGER_CHURN);
    ASSERT_EQ(out.churn_tripped, 1);
    /* The guard saw it, so it has an entry (warming, no warm-up done). */
    ASSERT_EQ(out.fresh, 1);
    ASSERT_EQ(entry_of(&m, &out)->state, CGR__SHAPE_WARMING);
    ASSERT_EQ(entry_of(&m, &out)->warmups, 0);
    ASSERT_EQ(out.dims[0], 4);
    ASSERT_EQ(out.dims[1], 8);
    const char *w = (&m)->warning;
    fputs("churn warning: ", stdout);
    puts(w);
    /* Named by the step's and the dims' declared names; y stayed in bucket 8. */
    ASSERT_STR_EQ(w, "step 'decode': 3 new shapes within 10 runs; dims that keep changing: "
                     "x (2 of 2 changes); shapes not cached run eagerly until 4 runs in a row "
                     "bring no new one");
    char first[CGR__SHAPES_WARNING_MAX];
    strcpy(first, w);

    /* Tripped: cached shapes replay, others run eagerly; no second warning. */
    D(1, 8);
    expect(&out, CGR__SHAPES_REPLAY);
    D(8, 8);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.fresh, 1);
    ASSERT_EQ(out.churn_tripped, 0);
    D(2, 8); /* seen before: not new */
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.fresh, 0);
    ASSERT_STR_EQ((&m)->warning, first);
    /* S = 4 runs with no new shape recover, on the 4th. */
    D(1, 8);
    D(1, 8);
    ASSERT_U64_EQ(m.churn.counters.recoveries, 0);
    D(1, 8);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_U64_EQ(m.churn.counters.recoveries, 1);
    /* (2, 8) did its warm-up before the trip: it captures now. */
    D(2, 8);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 2, 1, 0);
    /* (4, 8) was seen while tripped, with no warm-up: it warms up now. */
    D(3, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.fresh, 0);
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.churn_activations, 1);
    ASSERT_U64_EQ(s.churn_recoveries, 1);
    ASSERT_U64_EQ(s.eager_by_reason[CGR_EAGER_CHURN], 3);
    ASSERT_U64_EQ(s.new_shapes, 4);
    ASSERT_EQ(s.warming, 2); /* (4, 8) and (8, 8) */
    ASSERT_EQ(s.eager, 0);   /* churn-eager shapes get no verdict */

    /* Hysteresis: history was forgotten; trips again only after 3 fresh new shapes. */
    D(16, 16);
    expect(&out, CGR__SHAPES_WARMUP);
    D(32, 8);
    expect(&out, CGR__SHAPES_WARMUP);
    D(64, 16);
    expect(&out, CGR__SHAPES_EAGER);
    ASSERT_EQ(out.churn_tripped, 1);
    w = (&m)->warning;
    ASSERT(strcmp(w, first) != 0);
    ASSERT(strstr(w, "changing: x (2 of 2 changes), y (2 of 2 changes);") != NULL);
    ASSERT(strstr(w, ".0") == NULL); /* dims carry no ".axis" suffix */
    ASSERT_U64_EQ(stats(&m).churn_activations, 2);
    check_identities(&m);
#undef D
    cgr__shapes_destroy(&m);

    /* K = 1 and an unnamed dim: the warning names "d0", from the one change. */
    cgr__shapes_dim_desc d1 = dim(NULL, pow2_policy(64));
    config_init(&c);
    c.dims = &d1;
    c.n_dims = 1;
    set_churn(&c, 1, 1, 1);
    mgr(&m, &c);
    out = decide1(&m, 1);
    ASSERT_EQ(out.churn_tripped, 1); /* no previous shape: nothing changed yet */
    ASSERT_STR_EQ((&m)->warning,
                  "step 'step': 1 new shapes within 1 runs; dims that keep changing: none "
                  "identified; shapes not cached run eagerly until 1 runs in a row bring no "
                  "new one");
    out = decide1(&m, 1);
    ASSERT_U64_EQ(m.churn.counters.recoveries, 1);
    expect(&out, CGR__SHAPES_WARMUP);
    out = decide1(&m, 2);
    ASSERT_EQ(out.churn_tripped, 1);
    ASSERT(strstr((&m)->warning, "changing: d0 (1 of 1 changes);") != NULL);
    check_identities(&m);
    cgr__shapes_destroy(&m);

    /* Every dim with the longest name, and the longest step name: bounded, marked as cut. */
    cgr__shapes_dim_desc many[CGR_MAX_DYN_DIMS];
    char names[CGR_MAX_DYN_DIMS][CGR_MAX_NAME + 1];
    for (int i = 0; i < (int)CGR_MAX_DYN_DIMS; i++) {
        memset(names[i], 'a' + i, CGR_MAX_NAME);
        names[i][CGR_MAX_NAME] = '\0';
        many[i] = dim(names[i], pow2_policy(64));
    }
    config_init(&c);
    c.step_name = names[7];
    c.dims = many;
    c.n_dims = CGR_MAX_DYN_DIMS;
    c.churn_k = 2;
    c.churn_window = 2;
    mgr(&m, &c);
    int64_t v[CGR_MAX_DYN_DIMS];
    for (int i = 0; i < (int)CGR_MAX_DYN_DIMS; i++)
        v[i] = 1;
    t_decide(&m, v, &out);
    for (int i = 0; i < (int)CGR_MAX_DYN_DIMS; i++)
        v[i] = 2;
    t_decide(&m, v, &out);
    ASSERT_EQ(out.churn_tripped, 1);
    w = (&m)->warning;
    ASSERT_EQ(strlen(w), CGR__SHAPES_WARNING_MAX - 1);
    ASSERT_STR_EQ(w + CGR__SHAPES_WARNING_MAX - 4, "...");
    char want[CGR__SHAPES_WARNING_MAX];
    snprintf(want, sizeof want, "step '%s': 2 new shapes", names[7]);
    ASSERT_EQ(strncmp(w, want, strlen(want)), 0);
    snprintf(want, sizeof want, "changing: %s (1 of 1 changes), %s (1 of 1 changes)", names[0],
             names[1]);
    ASSERT(strstr(w, want) != NULL);
    cgr__shapes_destroy(&m);

    /* Only the last dim changes, and the warning names it alone. */
    cgr__shapes_dim_desc wide[CGR_MAX_DYN_DIMS];
    int64_t v2[CGR_MAX_DYN_DIMS];
    for (int i = 0; i < (int)CGR_MAX_DYN_DIMS; i++) {
        wide[i] = dim(NULL, pow2_policy(64));
        v2[i] = 1;
    }
    c.step_name = NULL;
    c.dims = wide;
    mgr(&m, &c);
    t_decide(&m, v2, &out);
    v2[CGR_MAX_DYN_DIMS - 1] = 3;
    t_decide(&m, v2, &out);
    ASSERT_EQ(out.churn_tripped, 1);
    ASSERT_EQ(out.dims[CGR_MAX_DYN_DIMS - 1], 4);
    w = (&m)->warning;
    ASSERT(strstr(w, "changing: d7 (1 of 1 changes);") != NULL);
    cgr__shapes_destroy(&m);
}

/* ---- bad input changes nothing ------------------------------------------------------------ */

static void test_bad_input(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 64, 2, 2, 0);
    set_churn(&c, 4, 100, 10);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;
    cgr__shapes_freed e;

    /* Some state of every kind: cached, warming, known eager, churn history. */
    for (int i = 0; i < 3; i++)
        decide1(&m, 1);
    done(&m, 1, 5, 0);
    decide1(&m, 2);
    decide1(&m, 2);
    decide1(&m, 2);
    cgr__shapes_capture_failed(&m, "nope");
    decide1(&m, 4);
    decide1(&m, 1);

    static const int64_t bad[] = {0, -1, 65, 1000, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snap *s = snap_take(&m);
        ASSERT_DIES(t_decide(&m, &bad[i], &out));
        snap_check(s, &m);
    }
    snap *s = snap_take(&m);
    int64_t one = 1;
    ASSERT_DIES(t_decide(&m, NULL, &out));
    ASSERT_DIES(t_decide(&m, &one, NULL));
    ASSERT_DIES(t_decide(NULL, &one, &out));
    /* Reports with no capture in flight. */
    result r;
    memset(&r, 0, sizeof r);
    r.payload = pl(3);
    ASSERT_DIES(t_capture_done(&m, &r, &o));
    ASSERT_DIES(cgr__shapes_capture_failed(&m, "x"));
    ASSERT_DIES(t_capture_cancel(&m));
    ASSERT_DIES(cgr__shapes_update_failed(&m, 1, "x", &e));
    ASSERT_DIES(t_capture_done(NULL, &r, &o));
    ASSERT_DIES(cgr__shapes_capture_failed(NULL, "x"));
    ASSERT_DIES(t_capture_cancel(NULL));
    ASSERT_DIES(cgr__shapes_update_failed(NULL, 1, "x", &e));
    ASSERT_DIES(cgr__shapes_drain(NULL, &e));
    ASSERT_DIES(cgr__shapes_drain(&m, NULL));
    snap_check(s, &m);

    /* A capture in flight pins the manager: decide and drain wait for the report. */
    decide1(&m, 4);
    out = decide1(&m, 4);
    expect(&out, CGR__SHAPES_CAPTURE);
    s = snap_take(&m);
    ASSERT_DIES(t_decide(&m, &one, &out));
    ASSERT_DIES(cgr__shapes_drain(&m, &e));
    ASSERT_DIES(t_capture_done(&m, &r, NULL));
    ASSERT_DIES(cgr__shapes_update_failed(&m, 1, "x", NULL));
    r.payload = NULL;
    ASSERT_DIES(t_capture_done(&m, &r, &o));
    r.payload = pl(3);
    r.updated = 2;
    ASSERT_DIES(t_capture_done(&m, &r, &o));
    r.updated = 0;
    snap_check(s, &m);
    t_capture_done(&m, &r, &o);
    check_identities(&m);

    /* A destroyed (zeroed) table, as a step whose init failed tears it down: holds nothing. */
    while (cgr__shapes_drain(&m, &e) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
    ASSERT_EQ(m.capacity, 0);
    ASSERT_EQ(cgr__shapes_drain(&m, &e), CGR_STATUS_WRONG_STATE);
}

/* ---- the table: one array of entries --------------------------------------------------- */

static int64_t X(int k)
{
    return INT64_C(1) << k;
}

/* Warms shape x up and captures it, instantiated (an offer is not tried). */
static cgr__shapes_outcome cache1(cgr__shapes *m, int64_t x, uintptr_t payload, size_t bytes)
{
    for (uint32_t i = 0; i <= m->warmup_runs; i++) {
        cgr__shapes_decision out = decide1(m, x);
        if (out.action == CGR__SHAPES_CAPTURE)
            return done(m, payload, bytes, 0);
        expect(&out, CGR__SHAPES_WARMUP);
    }
    TEST_FAIL_("shape %lld never captured", (long long)x);
}

/* The graphs' payloads from the most to the least recently used, as a 0-terminated list. */
static void expect_order(const cgr__shapes *m, const uintptr_t *want)
{
    uint64_t below = UINT64_MAX;
    size_t n = 0, bytes = 0;
    for (;;) {
        const cgr__shape *next = NULL;
        for (uint32_t i = 0; i < (m)->capacity; i++) {
            const cgr__shape *e = entry_at(m, i);
            if (e != NULL && e->state == CGR__SHAPE_GRAPH && e->last_use < below &&
                (next == NULL || e->last_use > next->last_use))
                next = e;
        }
        if (next == NULL)
            break;
        if (want[n] == 0)
            TEST_FAIL_("graph %lu cached beyond the %zu expected",
                       (unsigned long)(uintptr_t)next->payload, n);
        ASSERT_EQ((uintptr_t)next->payload, want[n]);
        bytes += next->bytes;
        below = next->last_use;
        n++;
    }
    ASSERT_EQ(want[n], 0);
    tstats s = stats(m);
    ASSERT_EQ(s.entries, n);
    ASSERT_EQ(s.bytes, bytes);
}

/* The outcome's freed payloads, in order, as a 0-terminated list. */
static void expect_freed(const cgr__shapes_outcome *o, const uintptr_t *want)
{
    uint32_t n = 0;
    while (want[n] != 0)
        n++;
    ASSERT_EQ(o->n_freed, n);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ((uintptr_t)o->freed[i].payload, want[i]);
}

/*
 * The latest decision's entry is tried first: a step that keeps one shape
 * pays one compare. That shortcut must never answer for another shape,
 * whatever the order of the runs, and must not outlive its entry.
 */
static void test_last_first(void)
{
    static const int64_t ys[3] = {1, 2, 3};
    cgr__shapes_dim_desc d[2] = {dim("x", pow2_policy(64)), dim("y", list_policy(ys, 3))};
    cgr__shapes_config c;
    config_init(&c);
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1;
    c.max_entries = 8;
    c.churn_k = 0;
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;

    /* Three shapes that differ in one dim at a time: (1, 1), (1, 2), (2, 1). */
    static const int64_t shape[3][2] = {{1, 1}, {1, 2}, {2, 1}};
    uint32_t at[3];
    for (int k = 0; k < 3; k++) {
        t_decide(&m, shape[k], &out);
        expect(&out, CGR__SHAPES_WARMUP);
        t_decide(&m, shape[k], &out);
        expect(&out, CGR__SHAPES_CAPTURE);
        at[k] = out.entry;
        done(&m, 1 + (uintptr_t)k, 10, 0);
    }
    ASSERT(at[0] != at[1] && at[1] != at[2] && at[0] != at[2]);

    /* Alternating, cycling, repeating and random orders all hit their own payload. */
    static const int order[] = {0, 1, 0, 1, 0, 1, 2, 0, 1, 2, 0, 0, 0, 1, 1, 2, 2, 1, 0, 2};
    int runs = 0;
    for (int rep = 0; rep < 50; rep++) {
        for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
            int k = rep < 25 ? order[i] : (int)(rng_next() % 3);
            t_decide(&m, shape[k], &out);
            expect(&out, CGR__SHAPES_REPLAY);
            ASSERT_PTR_EQ(out.payload, pl(1 + (uintptr_t)k));
            ASSERT_EQ(out.entry, at[k]);
            ASSERT_EQ(out.dims[0], shape[k][0]);
            ASSERT_EQ(out.dims[1], shape[k][1]);
            ASSERT_EQ(m.last, at[k]);
            /* peek takes the same path and must agree, for every shape. */
            for (int j = 0; j < 3; j++)
                ASSERT_PTR_EQ(peek_graph(&m, shape[j]), pl(1 + (uintptr_t)j));
            runs++;
        }
    }
    /* A shape beside the latest one is new, even right after it. */
    int64_t near_last[2] = {2, 2};
    t_decide(&m, shape[2], &out);
    t_decide(&m, near_last, &out);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.fresh, 1);
    ASSERT(out.entry != at[0] && out.entry != at[1] && out.entry != at[2]);
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.hits, (uint64_t)runs + 1);
    for (int k = 0; k < 3; k++)
        ASSERT_GT(entry_at(&m, at[k])->replays, 0);
    check_identities(&m);

    /*
     * The latest entry goes away (drained) and its place is taken by
     * another shape: the shape it held must not be found there.
     */
    t_decide(&m, shape[1], &out);
    ASSERT_EQ(m.last, at[1]);
    cgr__shapes_freed f;
    for (int k = 0; k < 3; k++)
        ASSERT_EQ(cgr__shapes_drain(&m, &f), CGR_STATUS_OK);
    ASSERT_PTR_EQ(f.payload, pl(2)); /* the latest one went last */
    ASSERT(peek_graph(&m, shape[1]) == NULL);
    int64_t other[2] = {4, 3};
    t_decide(&m, other, &out);
    ASSERT_EQ(out.fresh, 1);
    t_decide(&m, other, &out);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 9, 10, 0);
    for (int k = 0; k < 3; k++) {
        t_decide(&m, shape[k], &out);
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.fresh, 1);
        t_decide(&m, other, &out);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(9));
    }
    check_identities(&m);
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
}

/* What the runtime knows of one shape in test_kinds. */
typedef struct known {
    int64_t x;
    int state;                 /* a cgr__shape_state; FREE: forgotten */
    uintptr_t payload;         /* GRAPH */
    cgr_eager_reason reason; /* EAGER */
    uint32_t warmups;          /* WARMING */
} known;

/* Decides every shape the table should know once, and checks each decision. */
static void check_known(cgr__shapes *m, known *k, int n)
{
    for (int i = 0; i < n; i++) {
        if (k[i].state == CGR__SHAPE_FREE) {
            ASSERT(find1(m, k[i].x) == NULL);
            continue;
        }
        cgr__shapes_decision out = decide1(m, k[i].x);
        ASSERT_EQ(out.fresh, 0);
        const cgr__shape *e = entry_of(m, &out);
        ASSERT_EQ(e->dims[0], k[i].x);
        ASSERT_EQ(e->state, k[i].state);
        switch (k[i].state) {
        case CGR__SHAPE_GRAPH:
            expect(&out, CGR__SHAPES_REPLAY);
            ASSERT_PTR_EQ(out.payload, pl(k[i].payload));
            break;
        case CGR__SHAPE_EAGER:
            expect(&out, CGR__SHAPES_EAGER);
            ASSERT_EQ(out.reason, k[i].reason);
            break;
        default:
            expect(&out, CGR__SHAPES_WARMUP);
            ASSERT_EQ(out.warmup_run, ++k[i].warmups);
            break;
        }
    }
}

static void expect_counts(const cgr__shapes *m, uint32_t graphs, uint32_t warming, uint32_t eager)
{
    tstats s = stats(m);
    ASSERT_EQ(s.entries, graphs);
    ASSERT_EQ(s.warming, warming);
    ASSERT_EQ(s.eager, eager);
    check_identities(m);
}

/*
 * Graphs, warm-ups and eager shapes share one array but each kind keeps
 * its own bound: with every kind full, a new shape of one kind only ever
 * pushes out the least recently used entry of its own kind.
 */
static void test_kinds(void)
{
    enum { GRAPHS = 4, WARMUP = 8 };
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, X(50), WARMUP, GRAPHS, 1000);
    cgr__shapes m;
    mgr(&m, &c);
    known k[64];
    int n = 0;

    for (int i = 0; i < GRAPHS; i++, n++) {
        k[n] = (known){X(n), CGR__SHAPE_GRAPH, 1 + (uintptr_t)n, CGR_EAGER_NONE, 0};
        cgr__shapes_outcome o = cache1(&m, k[n].x, k[n].payload, 100);
        ASSERT_EQ(o.n_freed, 0);
    }
    /* Eager for good, half for a failed capture, half for a graph over the budget. */
    for (int i = 0; i < (int)CGR__SHAPES_MAX_EAGER; i++, n++) {
        k[n] = (known){X(n), CGR__SHAPE_EAGER, 0, CGR_EAGER_CAPTURE_FAILED, 0};
        cgr__shapes_decision out;
        for (int w = 0; w < WARMUP; w++) {
            out = decide1(&m, k[n].x);
            expect(&out, CGR__SHAPES_WARMUP);
        }
        out = decide1(&m, k[n].x);
        expect(&out, CGR__SHAPES_CAPTURE);
        ASSERT_EQ(source_of(&m, &out), FROM_LRU); /* full by count */
        if (i % 2 == 0) {
            cgr__shapes_capture_failed(&m, "cannot capture");
        } else {
            k[n].reason = CGR_EAGER_TOO_LARGE;
            cgr__shapes_outcome o = done(&m, 100 + (uintptr_t)n, 5000, 0);
            expect_freed(&o, (const uintptr_t[]){100 + (uintptr_t)n, 0});
        }
    }
    /* Warming up, one warm-up each. */
    for (int i = 0; i < (int)CGR__SHAPES_MAX_WARMING; i++, n++) {
        k[n] = (known){X(n), CGR__SHAPE_WARMING, 0, CGR_EAGER_NONE, 1};
        cgr__shapes_decision out = decide1(&m, k[n].x);
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.fresh, 1);
    }
    /* Every kind at its bound fills the table exactly. */
    expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING, CGR__SHAPES_MAX_EAGER);
    for (uint32_t i = 0; i < (&m)->capacity; i++)
        ASSERT(entry_at(&m, i) != NULL);
    ASSERT_U64_EQ(stats(&m).evictions, 0);
    check_known(&m, k, n);
    expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING, CGR__SHAPES_MAX_EAGER);

    /*
     * A 17th shape warming up takes the place of the least recently seen
     * warming one (the first of them, since check_known went in order):
     * no graph and no eager shape goes.
     */
    int first_warming = GRAPHS + (int)CGR__SHAPES_MAX_EAGER;
    const cgr__shape *lru_w = find1(&m, k[first_warming].x);
    uint32_t lru_w_entry = (uint32_t)(lru_w - m.entries);
    k[n] = (known){X(n), CGR__SHAPE_WARMING, 0, CGR_EAGER_NONE, 1};
    cgr__shapes_decision out = decide1(&m, k[n++].x);
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.fresh, 1);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.entry, lru_w_entry);
    k[first_warming].state = CGR__SHAPE_FREE;
    expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING, CGR__SHAPES_MAX_EAGER);
    check_known(&m, k, n);

    /*
     * A new graph (it too needs a warming entry first, and takes the next
     * least recently seen one's) pushes out the least recently used graph,
     * the first one, and nothing else.
     */
    k[first_warming + 1].state = CGR__SHAPE_FREE;
    k[n] = (known){X(n), CGR__SHAPE_GRAPH, 50, CGR_EAGER_NONE, 0};
    cgr__shapes_outcome o = cache1(&m, k[n++].x, 50, 100);
    expect_freed(&o, (const uintptr_t[]){1, 0});
    k[0].state = CGR__SHAPE_FREE;
    expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING - 1, CGR__SHAPES_MAX_EAGER);
    ASSERT_U64_EQ(stats(&m).evictions, 1);
    check_known(&m, k, n);

    /*
     * A 17th eager shape (a failed capture) forgets the least recently
     * used eager one; then one over the byte budget forgets the next. The
     * graphs and the warm-ups stay.
     */
    for (int i = 0; i < 2; i++) {
        k[n] = (known){X(n), CGR__SHAPE_EAGER, 0,
                       i == 0 ? CGR_EAGER_CAPTURE_FAILED : CGR_EAGER_TOO_LARGE,
                       0};
        for (int w = 0; w < WARMUP; w++) {
            out = decide1(&m, k[n].x);
            expect(&out, CGR__SHAPES_WARMUP);
        }
        expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING, CGR__SHAPES_MAX_EAGER);
        out = decide1(&m, k[n].x);
        expect(&out, CGR__SHAPES_CAPTURE);
        if (i == 0) {
            cgr__shapes_capture_failed(&m, "no");
        } else {
            o = done(&m, 60, 1001, 0);
            expect_freed(&o, (const uintptr_t[]){60, 0});
        }
        k[GRAPHS + i].state = CGR__SHAPE_FREE; /* the first eager shapes, in check order */
        n++;
        expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING - 1, CGR__SHAPES_MAX_EAGER);
        check_known(&m, k, n);
    }
    ASSERT_U64_EQ(stats(&m).evictions, 1);
    expect_counts(&m, GRAPHS, CGR__SHAPES_MAX_WARMING - 1, CGR__SHAPES_MAX_EAGER);

    cgr__shapes_freed f;
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
}

/*
 * Eviction is least recently used first, over the count budget, the byte
 * budget and both, with replays changing the order (the scenarios of the
 * former graph cache's own tests, through the table).
 */
static void test_lru_order(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, X(40), 1, 3, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    cgr__shapes_outcome o;

    /* Count: A, B, C fill it, most recent first. */
    expect_freed((o = cache1(&m, X(10), 0xA, 100), &o), (const uintptr_t[]){0});
    expect_freed((o = cache1(&m, X(11), 0xB, 200), &o), (const uintptr_t[]){0});
    expect_freed((o = cache1(&m, X(12), 0xC, 300), &o), (const uintptr_t[]){0});
    expect_order(&m, (const uintptr_t[]){0xC, 0xB, 0xA, 0});
    /* last_use is the run count of the latest decision: A's capture was run 2. */
    ASSERT_U64_EQ(find1(&m, X(10))->last_use, 2);
    ASSERT_U64_EQ(find1(&m, X(12))->last_use, 6);

    /* A replay moves A to the front; again changes nothing but its count. */
    expect((out = decide1(&m, X(10)), &out), CGR__SHAPES_REPLAY);
    expect_order(&m, (const uintptr_t[]){0xA, 0xC, 0xB, 0});
    ASSERT_U64_EQ(find1(&m, X(10))->last_use, 7);
    expect((out = decide1(&m, X(10)), &out), CGR__SHAPES_REPLAY);
    ASSERT_U64_EQ(find1(&m, X(10))->replays, 2);
    ASSERT_U64_EQ(find1(&m, X(10))->last_use, 8);
    expect_order(&m, (const uintptr_t[]){0xA, 0xC, 0xB, 0});
    /* Peeking and runs of other shapes do not count as use. */
    ASSERT_PTR_EQ(peek_graph(&m, &(int64_t){X(11)}), pl(0xB));
    expect((out = decide1(&m, X(30)), &out), CGR__SHAPES_WARMUP);
    expect_order(&m, (const uintptr_t[]){0xA, 0xC, 0xB, 0});

    /* Full: D's capture is offered B, the least recently used; not tried, B is evicted. */
    expect((out = decide1(&m, X(13)), &out), CGR__SHAPES_WARMUP);
    expect((out = decide1(&m, X(13)), &out), CGR__SHAPES_CAPTURE);
    ASSERT_EQ(source_of(&m, &out), FROM_LRU);
    ASSERT_PTR_EQ(out.payload, pl(0xB));
    o = done(&m, 0xD, 400, 0);
    expect_freed(&o, (const uintptr_t[]){0xB, 0});
    ASSERT_EQ(o.freed[0].bytes, 200);
    expect_order(&m, (const uintptr_t[]){0xD, 0xA, 0xC, 0});
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.evictions, 1);
    ASSERT_EQ(s.bytes, 800);
    ASSERT_EQ(s.peak_bytes, 800);
    ASSERT_EQ(s.peak_entries, 3);

    /* Replays decide what goes next: touch C, then E evicts A. */
    expect((out = decide1(&m, X(12)), &out), CGR__SHAPES_REPLAY);
    expect_order(&m, (const uintptr_t[]){0xC, 0xD, 0xA, 0});
    o = cache1(&m, X(14), 0xE, 1);
    expect_freed(&o, (const uintptr_t[]){0xA, 0});
    expect_order(&m, (const uintptr_t[]){0xE, 0xC, 0xD, 0});
    ASSERT_EQ(stats(&m).peak_bytes, 800);
    /* Drain goes least recently used first too. */
    uintptr_t drained[3] = {0xD, 0xC, 0xE};
    for (int i = 0; i < 3; i++) {
        cgr__shapes_freed f;
        ASSERT_EQ(cgr__shapes_drain(&m, &f), CGR_STATUS_OK);
        ASSERT_PTR_EQ(f.payload, pl(drained[i]));
    }
    check_identities(&m);
    cgr__shapes_destroy(&m);

    /* Bytes: 100 in all, 10 graphs by count (never the limit here). */
    c = one_dim(&d, X(40), 1, 10, 100);
    mgr(&m, &c);
    cache1(&m, X(1), 1, 40);
    cache1(&m, X(2), 2, 40);
    expect_freed((o = cache1(&m, X(3), 3, 20), &o), (const uintptr_t[]){0}); /* exactly 100 */
    expect_order(&m, (const uintptr_t[]){3, 2, 1, 0});
    expect_freed((o = cache1(&m, X(4), 4, 0), &o), (const uintptr_t[]){0}); /* 0 bytes fit */
    /* 30 more bytes: the oldest (40) goes, 90 remain. */
    expect_freed((o = cache1(&m, X(5), 5, 30), &o), (const uintptr_t[]){1, 0});
    ASSERT_EQ(stats(&m).bytes, 90);
    expect_order(&m, (const uintptr_t[]){5, 4, 3, 2, 0});
    /* 75 bytes: 2 (40), 3 (20), the 0-byte 4 and 5 (30, since 30 + 75 > 100) go, oldest first. */
    expect_freed((o = cache1(&m, X(6), 6, 75), &o), (const uintptr_t[]){2, 3, 4, 5, 0});
    expect_order(&m, (const uintptr_t[]){6, 0});
    expect_freed((o = cache1(&m, X(7), 7, 25), &o), (const uintptr_t[]){0});
    expect_order(&m, (const uintptr_t[]){7, 6, 0});
    /* Exactly the budget: empties the table of graphs but is accepted. */
    expect_freed((o = cache1(&m, X(8), 8, 100), &o), (const uintptr_t[]){6, 7, 0});
    expect_order(&m, (const uintptr_t[]){8, 0});
    /* Larger than the budget alone: refused, nothing evicted. */
    uint64_t ev = stats(&m).evictions;
    o = cache1(&m, X(9), 9, 101);
    ASSERT_EQ(o.cached, 0);
    expect_freed(&o, (const uintptr_t[]){9, 0});
    o = cache1(&m, X(10), 10, SIZE_MAX);
    ASSERT_EQ(o.cached, 0);
    expect_freed(&o, (const uintptr_t[]){10, 0});
    expect_order(&m, (const uintptr_t[]){8, 0});
    ASSERT_U64_EQ(stats(&m).evictions, ev);
    ASSERT_U64_EQ(stats(&m).too_large, 2);
    check_identities(&m);
    cgr__shapes_freed f;
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);

    /* Bytes after replays reorder: 1, 2, 3 of 30, then 1 and 2 replay; 50 more evicts 3, then 1. */
    mgr(&m, &c);
    cache1(&m, X(1), 1, 30);
    cache1(&m, X(2), 2, 30);
    cache1(&m, X(3), 3, 30);
    expect((out = decide1(&m, X(1)), &out), CGR__SHAPES_REPLAY);
    expect((out = decide1(&m, X(2)), &out), CGR__SHAPES_REPLAY);
    expect_order(&m, (const uintptr_t[]){2, 1, 3, 0});
    expect_freed((o = cache1(&m, X(4), 4, 50), &o), (const uintptr_t[]){3, 1, 0});
    expect_order(&m, (const uintptr_t[]){4, 2, 0});
    /* 2 replays: now 4 is the oldest, and 60 more bytes take it alone (30 + 60 fit). */
    expect((out = decide1(&m, X(2)), &out), CGR__SHAPES_REPLAY);
    expect_freed((o = cache1(&m, X(5), 5, 60), &o), (const uintptr_t[]){4, 0});
    expect_order(&m, (const uintptr_t[]){5, 2, 0});
    check_identities(&m);
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);

    /* Both budgets: the count limit bites with bytes to spare, and the other way round. */
    c = one_dim(&d, X(40), 1, 3, 1000);
    mgr(&m, &c);
    cache1(&m, X(1), 1, 10);
    cache1(&m, X(2), 2, 10);
    cache1(&m, X(3), 3, 10);
    expect_freed((o = cache1(&m, X(4), 4, 10), &o), (const uintptr_t[]){1, 0}); /* count */
    /* 990 more: the count limit takes 2, then 20 + 990 > 1000 takes 3 as well. */
    expect_freed((o = cache1(&m, X(5), 5, 990), &o), (const uintptr_t[]){2, 3, 0});
    expect_order(&m, (const uintptr_t[]){5, 4, 0});
    /* Bytes only: 1000 + 10 > 1000, the count is fine. */
    expect_freed((o = cache1(&m, X(6), 6, 10), &o), (const uintptr_t[]){4, 0});
    expect_order(&m, (const uintptr_t[]){6, 5, 0});
    /* A replay of the older one makes the newer one go first. */
    expect((out = decide1(&m, X(5)), &out), CGR__SHAPES_REPLAY);
    expect_freed((o = cache1(&m, X(7), 7, 10), &o), (const uintptr_t[]){6, 0});
    expect_order(&m, (const uintptr_t[]){7, 5, 0});
    ASSERT_U64_EQ(stats(&m).evictions, 5);
    check_identities(&m);
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
}

/* A decision with fresh = 1 names an entry made for this shape alone: nothing
 * else is left in it. */
static void expect_fresh(const cgr__shapes *m, const cgr__shapes_decision *out)
{
    ASSERT_EQ(out->fresh, 1);
    const cgr__shape *e = entry_of(m, out);
    ASSERT_EQ(e->state, CGR__SHAPE_WARMING);
    ASSERT_EQ(e->warmups, out->action == CGR__SHAPES_WARMUP ? 1 : 0);
    ASSERT_EQ(memcmp(e->dims, out->dims, m->n_dims * sizeof e->dims[0]), 0);
    ASSERT(e->payload == NULL);
    ASSERT_EQ(e->bytes, 0);
    ASSERT_U64_EQ(e->replays, 0);
    ASSERT_U64_EQ(e->eager_runs, 0);
    ASSERT_EQ(e->reason, CGR_EAGER_NONE);
    ASSERT_STR_EQ(e->text, "");
}

/*
 * A warming entry that is recycled starts over: fresh, and the new shape
 * does all its warm-ups; the shape that lost its place starts over too.
 * Entries left by graphs and by eager shapes come back as clean.
 */
static void test_recycle(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, X(62), 3, 4, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;

    /* 16 shapes with two of their three warm-ups done; X(0) is the least recently seen. */
    uint32_t at[16];
    for (int round = 1; round <= 2; round++)
        for (int k = 0; k < 16; k++) {
            out = decide1(&m, X(k));
            expect(&out, CGR__SHAPES_WARMUP);
            ASSERT_EQ(out.warmup_run, (uint32_t)round);
            if (round == 1) {
                expect_fresh(&m, &out);
                at[k] = out.entry;
            }
            ASSERT_EQ(out.entry, at[k]);
        }
    ASSERT_EQ(find1(&m, X(0))->warmups, 2);

    /* X(16) takes X(0)'s place and inherits none of its two warm-ups. */
    out = decide1(&m, X(16));
    expect(&out, CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 1);
    ASSERT_EQ(out.entry, at[0]);
    expect_fresh(&m, &out);
    ASSERT(find1(&m, X(0)) == NULL);
    expect((out = decide1(&m, X(16)), &out), CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 2);
    ASSERT_EQ(out.fresh, 0);
    expect((out = decide1(&m, X(16)), &out), CGR__SHAPES_WARMUP);
    ASSERT_EQ(out.warmup_run, 3);
    /* A cancel keeps it warm (no restart, not fresh); then it is captured in place. */
    expect((out = decide1(&m, X(16)), &out), CGR__SHAPES_CAPTURE);
    t_capture_cancel(&m);
    expect((out = decide1(&m, X(16)), &out), CGR__SHAPES_CAPTURE);
    ASSERT_EQ(out.fresh, 0);
    ASSERT_EQ(out.entry, at[0]);
    done(&m, 16, 10, 0);
    ASSERT_EQ(entry_at(&m, at[0])->state, CGR__SHAPE_GRAPH);
    ASSERT_U64_EQ(entry_at(&m, at[0])->replays, 0);

    /* X(0) is new again: a fresh entry and three warm-ups of its own. */
    for (uint32_t w = 1; w <= 3; w++) {
        out = decide1(&m, X(0));
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.warmup_run, w);
        if (w == 1)
            expect_fresh(&m, &out);
        else
            ASSERT_EQ(out.fresh, 0);
    }
    expect((out = decide1(&m, X(0)), &out), CGR__SHAPES_CAPTURE);
    done(&m, 1, 10, 0);
    /* The others kept their two warm-ups: one more each, then a capture. */
    for (int k = 1; k < 16; k++) {
        out = decide1(&m, X(k));
        ASSERT_EQ(out.warmup_run, 3);
        ASSERT_EQ(out.entry, at[k]);
    }
    check_identities(&m);

    /*
     * A graph that replayed, and an eager shape with runs and a message,
     * leave: whichever entries new shapes get next, they are clean.
     */
    for (int i = 0; i < 5; i++)
        expect((out = decide1(&m, X(16)), &out), CGR__SHAPES_REPLAY);
    cgr__shapes_freed f;
    ASSERT_EQ(cgr__shapes_drain(&m, &f), CGR_STATUS_OK); /* X(0), the older graph */
    ASSERT_PTR_EQ(f.payload, pl(1));
    ASSERT_EQ(cgr__shapes_drain(&m, &f), CGR_STATUS_OK);
    ASSERT_PTR_EQ(f.payload, pl(16));
    for (int k = 1; k < 16; k++) {
        expect((out = decide1(&m, X(k)), &out), CGR__SHAPES_CAPTURE);
        if (k == 1) {
            done(&m, 100, 10, 0); /* the graphs are gone: one warming entry fewer, too */
            continue;
        }
        cgr__shapes_capture_failed(&m, "a long and specific reason");
        for (int i = 0; i < 3; i++)
            expect((out = decide1(&m, X(k)), &out), CGR__SHAPES_EAGER);
    }
    expect_counts(&m, 1, 0, 14);
    for (int k = 17; k < 17 + 40; k++) {
        out = decide1(&m, X(k));
        expect_fresh(&m, &out);
        if (k % 2 == 0)
            continue; /* stays warming (and gets recycled) */
        expect((out = decide1(&m, X(k)), &out), CGR__SHAPES_WARMUP);
        expect((out = decide1(&m, X(k)), &out), CGR__SHAPES_WARMUP);
        expect((out = decide1(&m, X(k)), &out), CGR__SHAPES_CAPTURE);
        cgr__shapes_capture_failed(&m, "x"); /* forgets older ones */
        check_identities(&m);
    }
    expect_counts(&m, 1, CGR__SHAPES_MAX_WARMING, CGR__SHAPES_MAX_EAGER);
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
}

/* No dims: one shape for good. CGR_MAX_DYN_DIMS dims: every one is part of the key. */
static void test_dims_extremes(void)
{
    cgr__shapes_config c;
    cgr__shapes m;
    cgr__shapes_decision out;
    cgr__shapes_freed f;
    int64_t ignored[CGR_MAX_DYN_DIMS] = {7, 7, 7, 7, 7, 7, 7, 7};

    /* n_dims = 0, three endings: a graph, a failed capture, a graph over the budget. */
    for (int ending = 0; ending < 3; ending++) {
        config_init(&c);
        c.max_entries = 1;
        c.max_bytes = 100;
        mgr(&m, &c);
        ASSERT_EQ((&m)->capacity, 1 + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER);
        ASSERT(peek_graph(&m, NULL) == NULL);
        t_decide(&m, NULL, &out);
        expect(&out, CGR__SHAPES_WARMUP);
        expect_fresh(&m, &out);
        uint32_t e0 = out.entry;
        /* A pointer where none is needed is not read. */
        t_decide(&m, ignored, &out);
        expect(&out, CGR__SHAPES_WARMUP);
        ASSERT_EQ(out.warmup_run, 2);
        ASSERT_EQ(out.fresh, 0);
        ASSERT_EQ(out.entry, e0);
        t_decide(&m, NULL, &out);
        expect(&out, CGR__SHAPES_CAPTURE);
        ASSERT_EQ(out.entry, e0);
        cgr__shapes_action then = CGR__SHAPES_REPLAY;
        if (ending == 0) {
            ASSERT_EQ(done(&m, 1, 100, 0).cached, 1);
        } else if (ending == 1) {
            cgr__shapes_capture_failed(&m, "no");
            then = CGR__SHAPES_EAGER;
        } else {
            ASSERT_EQ(done(&m, 1, 101, 0).cached, 0);
            then = CGR__SHAPES_EAGER;
        }
        for (int i = 0; i < 10; i++) {
            t_decide(&m, i % 2 ? ignored : NULL, &out);
            expect(&out, then);
            ASSERT_EQ(out.entry, e0);
            ASSERT_EQ(out.fresh, 0);
            if (then == CGR__SHAPES_REPLAY)
                ASSERT_PTR_EQ(out.payload, pl(1));
        }
        ASSERT_PTR_EQ(peek_graph(&m, NULL), ending == 0 ? pl(1) : NULL);
        tstats s = stats(&m);
        ASSERT_U64_EQ(s.new_shapes, 1);
        ASSERT_U64_EQ(s.runs, 13);
        ASSERT_EQ(s.entries + s.eager, 1);
        ASSERT_EQ(s.warming, 0);
        check_identities(&m);
        while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
            ;
        if (ending == 0) {
            /*
             * The drained graph was the latest decision's entry; with no
             * dims every key matches, so only a freed entry that is also
             * forgotten as the latest makes the next run a new shape.
             */
            t_decide(&m, NULL, &out);
            expect(&out, CGR__SHAPES_WARMUP);
            ASSERT_EQ(out.fresh, 1);
            expect_fresh(&m, &out);
            ASSERT_EQ(entry_of(&m, &out)->state, CGR__SHAPE_WARMING);
        }
        cgr__shapes_destroy(&m);
    }

    /* n_dims = CGR_MAX_DYN_DIMS: a change in any one dim alone is another shape. */
    enum { N = CGR_MAX_DYN_DIMS };
    static const char *const names[N] = {"b", "s", "h", "d", "k", "v", "e", "last"};
    cgr__shapes_dim_desc d[N];
    for (int i = 0; i < N; i++)
        d[i] = dim(names[i], pow2_policy(64));
    config_init(&c);
    c.dims = d;
    c.n_dims = N;
    c.warmup_runs = 1;
    c.churn_k = 0;
    mgr(&m, &c);
    int64_t base[N], v[N];
    for (int i = 0; i < N; i++)
        base[i] = 1;
    t_decide(&m, base, &out);
    t_decide(&m, base, &out);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 100, 1, 0);
    for (int i = 0; i < N; i++) {
        memcpy(v, base, sizeof v);
        v[i] = 2;
        t_decide(&m, v, &out);
        expect(&out, CGR__SHAPES_WARMUP);
        expect_fresh(&m, &out);
        for (int j = 0; j < N; j++)
            ASSERT_EQ(out.dims[j], j == i ? 2 : 1);
        ASSERT(peek_graph(&m, v) == NULL);
        t_decide(&m, base, &out);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(100));
    }
    /* The last dim alone tells these two graphs apart, in both directions. */
    memcpy(v, base, sizeof v);
    v[N - 1] = 2;
    t_decide(&m, v, &out);
    expect(&out, CGR__SHAPES_CAPTURE); /* its warm-up was done above */
    done(&m, 107, 1, 0);
    for (int i = 0; i < 20; i++) {
        int64_t *which = i % 3 ? v : base;
        t_decide(&m, which, &out);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(which == v ? 107 : 100));
        ASSERT_PTR_EQ(peek_graph(&m, which == v ? base : v),
                      pl(which == v ? 100 : 107));
    }
    /* The last dim's true values 3 and 4 share its bucket: one shape. */
    v[N - 1] = 3;
    t_decide(&m, v, &out);
    expect(&out, CGR__SHAPES_WARMUP);
    v[N - 1] = 4;
    t_decide(&m, v, &out);
    expect(&out, CGR__SHAPES_CAPTURE);
    done(&m, 108, 1, 0);
    v[N - 1] = 3;
    t_decide(&m, v, &out);
    ASSERT_PTR_EQ(out.payload, pl(108));
    ASSERT_EQ(out.dims[N - 1], 4);
    /* Every dim padded at once. */
    static const int64_t t[N] = {3, 5, 9, 17, 33, 63, 2, 1};
    static const int64_t want[N] = {4, 8, 16, 32, 64, 64, 2, 1};
    t_decide(&m, t, &out);
    for (int i = 0; i < N; i++) {
        ASSERT_EQ(out.dims[i], want[i]);
        ASSERT_EQ(entry_of(&m, &out)->dims[i], want[i]);
    }
    uint32_t at = 0;
    /* A bad value in the last dim alone is refused. */
    memcpy(v, base, sizeof v);
    v[N - 1] = 65;
    snap *sn = snap_take(&m);
    ASSERT_DIES(t_decide(&m, v, &out));
    ASSERT_DIES(cgr__shapes_peek(&m, v, &at));
    snap_check(sn, &m);
    check_identities(&m);
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        ;
    cgr__shapes_destroy(&m);
}

/* Four pow2 dims of 16 buckets each: 65,536 distinct shapes, shape i is i's digits. */
static void shape_of(uint32_t i, int64_t v[4])
{
    for (int j = 0; j < 4; j++)
        v[j] = X((int)(i >> (4 * j) & 15));
}

static cgr__shapes_outcome cache4(cgr__shapes *m, uint32_t i, uintptr_t payload, size_t bytes,
                                  int update)
{
    int64_t v[4];
    shape_of(i, v);
    cgr__shapes_decision out;
    t_decide(m, v, &out);
    expect(&out, CGR__SHAPES_WARMUP);
    t_decide(m, v, &out);
    expect(&out, CGR__SHAPES_CAPTURE);
    if (update) {
        ASSERT(out.payload != NULL);
        payload = (uintptr_t)out.payload;
    }
    return done(m, payload, bytes, update);
}

/*
 * The freed list at its largest: one insert of the whole byte budget
 * evicts every cached graph at once, least recently used first; a graph
 * over the budget comes back alone. Then the same with a spare kept and
 * with the least recently used graph updated in place.
 */
static void run_freed_max(uint32_t n, int variant)
{
    cgr__shapes_dim_desc d[4];
    for (int j = 0; j < 4; j++)
        d[j] = dim(NULL, pow2_policy(X(15)));
    cgr__shapes_config c;
    config_init(&c);
    c.dims = d;
    c.n_dims = 4;
    c.warmup_runs = 1;
    c.max_entries = n;
    c.max_bytes = (size_t)n * 10;
    c.churn_k = 0;
    c.keep_spare = variant == 1;
    cgr__shapes m;
    mgr(&m, &c);
    for (uint32_t i = 0; i < n; i++)
        ASSERT_EQ(cache4(&m, i, 1 + (uintptr_t)i, 10, 0).n_freed, 0);
    tstats s = stats(&m);
    ASSERT_EQ(s.entries, n);
    ASSERT_EQ(s.bytes, (size_t)n * 10);
    /* Replays in reverse: graph n - 1 (payload n) is now the least recently used. */
    for (uint32_t i = n; i-- > 0;) {
        int64_t v[4];
        cgr__shapes_decision out;
        shape_of(i, v);
        t_decide(&m, v, &out);
        expect(&out, CGR__SHAPES_REPLAY);
        ASSERT_PTR_EQ(out.payload, pl(1 + (uintptr_t)i));
    }
    cgr__shapes_outcome o = cache4(&m, n, 1000000, (size_t)n * 10, variant == 2);
    ASSERT_EQ(o.cached, 1);
    /* The spare keeps the first evicted back; an update takes it out itself. */
    uint32_t first = variant == 0 ? 0 : 1;
    ASSERT_EQ(o.n_freed, n - first);
    for (uint32_t j = 0; j < o.n_freed; j++) {
        ASSERT_PTR_EQ(o.freed[j].payload, pl(n - first - j));
        ASSERT_EQ(o.freed[j].bytes, 10);
    }
    s = stats(&m);
    ASSERT_EQ(s.entries, 1);
    ASSERT_EQ(s.bytes, (size_t)n * 10);
    ASSERT_U64_EQ(s.evictions, n);
    ASSERT_EQ(s.spare, variant == 1);
    if (variant == 1)
        ASSERT_PTR_EQ(m.spare.payload, pl(n));
    ASSERT_EQ(s.peak_entries, n);
    ASSERT_EQ(s.peak_bytes, (size_t)n * 10);
    int64_t v[4];
    shape_of(n, v);
    ASSERT_PTR_EQ(peek_graph(&m, v), variant == 2 ? pl(n) : pl(1000000));

    /* Over the budget: refused, alone in the list; the whole-budget graph stays. */
    o = cache4(&m, n + 1, 2000000, (size_t)n * 10 + 1, 0);
    ASSERT_EQ(o.cached, 0);
    ASSERT_EQ(o.n_freed, 1);
    ASSERT_PTR_EQ(o.freed[0].payload, pl(2000000));
    ASSERT_EQ(o.freed[0].bytes, (size_t)n * 10 + 1);
    ASSERT_EQ(stats(&m).entries, 1);
    check_identities(&m);
    cgr__shapes_freed f;
    uint32_t left = 0;
    while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
        left++;
    ASSERT_EQ(left, 1 + (variant == 1));
    cgr__shapes_destroy(&m);
}

static void test_freed_max(void)
{
    for (int variant = 0; variant < 3; variant++) {
        run_freed_max(1, variant);
        run_freed_max(5, variant);
        run_freed_max(CGR__SHAPES_MAX_ENTRIES, variant);
    }
}

/*
 * Byte totals near SIZE_MAX: the budget still holds, and the total held
 * never wraps (with no budget, as with one, the least recently used graph
 * goes rather than the total wrapping around).
 */
static void test_byte_totals(void)
{
    for (int budget = 1; budget >= 0; budget--) {
        cgr__shapes_dim_desc d;
        cgr__shapes_config c = one_dim(&d, X(40), 1, 4, budget ? SIZE_MAX : 0);
        cgr__shapes m;
        mgr(&m, &c);
        cgr__shapes_outcome o;
        expect_freed((o = cache1(&m, X(1), 1, SIZE_MAX - 10), &o), (const uintptr_t[]){0});
        expect_freed((o = cache1(&m, X(2), 2, 10), &o), (const uintptr_t[]){0});
        ASSERT_EQ(stats(&m).bytes, SIZE_MAX);
        /* One byte more does not fit: the oldest graph goes. */
        o = cache1(&m, X(3), 3, 1);
        ASSERT_EQ(o.cached, 1);
        ASSERT_EQ(o.n_freed, 1);
        ASSERT_PTR_EQ(o.freed[0].payload, pl(1));
        ASSERT_EQ(stats(&m).bytes, 11);
        expect_order(&m, (const uintptr_t[]){3, 2, 0});
        /* The largest graph of all fits on its own, after the others. */
        o = cache1(&m, X(4), 4, SIZE_MAX);
        ASSERT_EQ(o.cached, 1);
        expect_freed(&o, (const uintptr_t[]){2, 3, 0});
        ASSERT_EQ(stats(&m).bytes, SIZE_MAX);
        check_identities(&m);
        cgr__shapes_freed f;
        while (cgr__shapes_drain(&m, &f) == CGR_STATUS_OK)
            ;
        cgr__shapes_destroy(&m);
    }
}

/* ---- random traffic against a payload-owning model --------------------------------------- */

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

/* The graphs from the least to the most recently used: payloads and bytes; their number. */
static uint32_t graphs_by_age(const cgr__shapes *m, uintptr_t *pay, size_t *bytes)
{
    uint32_t n = 0;
    uint64_t above = 0;
    for (;;) {
        const cgr__shape *next = NULL;
        for (uint32_t i = 0; i < (m)->capacity; i++) {
            const cgr__shape *e = entry_at(m, i);
            if (e != NULL && e->state == CGR__SHAPE_GRAPH && e->last_use > above &&
                (next == NULL || e->last_use < next->last_use))
                next = e;
        }
        if (next == NULL)
            return n;
        pay[n] = (uintptr_t)next->payload;
        bytes[n++] = next->bytes;
        above = next->last_use;
    }
}

/* The least recently used entry in `state`, or CGR__SHAPES_NONE; how many there are. */
static uint32_t lru_in(const cgr__shapes *m, int state, uint32_t *count)
{
    uint32_t v = CGR__SHAPES_NONE, n = 0;
    for (uint32_t i = 0; i < (m)->capacity; i++) {
        const cgr__shape *e = entry_at(m, i);
        if (e == NULL || e->state != state)
            continue;
        n++;
        if (v == CGR__SHAPES_NONE || e->last_use < entry_at(m, v)->last_use)
            v = i;
    }
    *count = n;
    return v;
}

/* After a verdict that made the capturing entry eager: the least recently used eager one went. */
static void check_eager_verdict(const cgr__shapes *m, uint32_t entry, cgr_eager_reason reason,
                                uint32_t lru_eager, uint32_t eager_before)
{
    const cgr__shape *e = entry_at(m, entry);
    ASSERT(e != NULL);
    ASSERT_EQ(e->state, CGR__SHAPE_EAGER);
    ASSERT_EQ(e->reason, reason);
    ASSERT(e->payload == NULL);
    uint32_t n;
    (void)lru_in(m, CGR__SHAPE_EAGER, &n);
    if (eager_before == CGR__SHAPES_MAX_EAGER) {
        ASSERT(entry_at(m, lru_eager) == NULL);
        ASSERT_EQ(n, CGR__SHAPES_MAX_EAGER);
    } else {
        ASSERT_EQ(n, eager_before + 1);
    }
}

enum {
    RANDOM_MAX_ENTRIES = 12,
    RANDOM_CAPACITY = RANDOM_MAX_ENTRIES + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER
};

static void run_random(model *md, run_counts *rc)
{
    static const int64_t ys[3] = {1, 2, 3};
    cgr__shapes_dim_desc d[2] = {dim("x", pow2_policy(1 << 12)), dim("y", list_policy(ys, 3))};
    cgr__shapes_config c;
    config_init(&c);
    c.dims = d;
    c.n_dims = 2;
    c.warmup_runs = 1 + (uint32_t)(rng_next() % 3);
    c.max_entries = 1 + (uint32_t)(rng_next() % RANDOM_MAX_ENTRIES);
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
        /* What a new shape may take: a free entry, or the least recently seen warming one. */
        uint32_t warming_before;
        uint32_t lru_warming = lru_in(&m, CGR__SHAPE_WARMING, &warming_before);
        uint8_t was_free[RANDOM_CAPACITY];
        for (uint32_t k = 0; k < (&m)->capacity; k++)
            was_free[k] = entry_at(&m, k) == NULL;
        cgr__shapes_decision out;
        const uint64_t new_before = m.churn.counters.new_shapes;
        t_decide(&m, dims, &out);
        uint32_t key = key_of(&out);
        /* The churn guard counted a new shape exactly when an entry was made. */
        ASSERT_U64_EQ(m.churn.counters.new_shapes - new_before, (uint64_t)out.fresh);
        ASSERT_EQ(memcmp(entry_of(&m, &out)->dims, out.dims, 2 * sizeof out.dims[0]), 0);
        if (out.fresh) {
            expect_fresh(&m, &out);
            if (warming_before == CGR__SHAPES_MAX_WARMING)
                ASSERT_EQ(out.entry, lru_warming);
            else
                ASSERT(was_free[out.entry]);
        } else {
            ASSERT(!was_free[out.entry]);
        }
        if (out.action == CGR__SHAPES_REPLAY) {
            uintptr_t id = (uintptr_t)out.payload;
            ASSERT(id > 0 && id < md->next && md->live[id]);
            ASSERT_EQ(md->owner[id], key);
            rc->replays++;
        } else if (out.action == CGR__SHAPES_EAGER) {
            rc->churn += out.reason == CGR_EAGER_CHURN;
        } else if (out.action == CGR__SHAPES_CAPTURE) {
            if (out.payload != NULL) {
                uintptr_t id = (uintptr_t)out.payload;
                ASSERT(id < md->next && md->live[id]);
            }
            /* The offer: the spare, else the least recently used graph of a full table. */
            uintptr_t age[RANDOM_MAX_ENTRIES];
            size_t age_bytes[RANDOM_MAX_ENTRIES];
            uint32_t n_age = graphs_by_age(&m, age, age_bytes);
            if (m.spare.payload) {
                ASSERT_EQ(source_of(&m, &out), FROM_SPARE);
                ASSERT_PTR_EQ(out.payload, m.spare.payload);
            } else if (n_age == m.max_entries) {
                ASSERT_EQ(source_of(&m, &out), FROM_LRU);
                ASSERT_PTR_EQ(out.payload, pl(age[0]));
            } else {
                ASSERT_EQ(source_of(&m, &out), FROM_NONE);
                ASSERT(out.payload == NULL);
            }
            uint32_t eager_before;
            uint32_t lru_eager = lru_in(&m, CGR__SHAPE_EAGER, &eager_before);
            uint64_t roll = rng_next() % 100;
            if (roll < 8) {
                cgr__shapes_capture_failed(&m, "random failure");
                check_eager_verdict(&m, out.entry, CGR_EAGER_CAPTURE_FAILED, lru_eager,
                                    eager_before);
                ASSERT_STR_EQ(entry_at(&m, out.entry)->text, "random failure");
                rc->failures++;
                continue;
            }
            if (roll < 14) {
                t_capture_cancel(&m);
                rc->cancels++;
                continue;
            }
            int updated = 0;
            if (out.payload != NULL) {
                if (rng_next() % 3 == 0) {
                    cgr__shapes_freed v;
                    cgr__shapes_update_failed(&m, (int)(rng_next() % 9), "r", &v);
                    ASSERT_PTR_EQ(v.payload, out.payload);
                    give_back(md, v.payload);
                    rc->update_failures++;
                } else if (rng_next() % 2) {
                    updated = 1;
                }
            }
            result r;
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
            /*
             * What may go, oldest first: the graphs as they are now (after a
             * failed update took its victim), less the one an update takes.
             */
            n_age = graphs_by_age(&m, age, age_bytes);
            uint32_t from = 0;
            if (updated && source_of(&m, &out) == FROM_LRU) {
                ASSERT_EQ(age[0], (uintptr_t)out.payload);
                from = 1;
            }
            int spare_stays = m.spare.payload && !(updated && source_of(&m, &out) == FROM_SPARE);
            cgr__shapes_outcome o;
            t_capture_done(&m, &r, &o);
            rc->too_large += !o.cached;
            if (!o.cached) {
                ASSERT_EQ(o.n_freed, 1);
                ASSERT_PTR_EQ(o.freed[0].payload, r.payload);
                ASSERT_EQ(stats(&m).entries, n_age - from);
                check_eager_verdict(&m, out.entry, CGR_EAGER_TOO_LARGE, lru_eager,
                                    eager_before);
            } else {
                /* The evictions, in order: a new spare first (the first evicted), then freed. */
                uintptr_t ev[RANDOM_MAX_ENTRIES];
                uint32_t n_ev = 0;
                ASSERT_LE(o.n_freed + (!spare_stays && m.spare.payload ? 1u : 0u), n_age);
                if (!spare_stays && m.spare.payload)
                    ev[n_ev++] = (uintptr_t)m.spare.payload;
                for (uint32_t k = 0; k < o.n_freed; k++)
                    ev[n_ev++] = (uintptr_t)o.freed[k].payload;
                ASSERT_LE(from + n_ev, n_age);
                size_t rest = 0;
                for (uint32_t k = 0; k < n_ev; k++)
                    ASSERT_EQ(ev[k], age[from + k]); /* least recently used first */
                for (uint32_t k = from + n_ev; k < n_age; k++)
                    rest += age_bytes[k];
                /* Exactly as many as needed: the rest fits, one fewer would not have. */
                uint32_t left = n_age - from - n_ev;
                ASSERT_LT(left, m.max_entries);
                if (m.max_bytes > 0)
                    ASSERT_LE(rest + r.bytes, m.max_bytes);
                if (n_ev > 0)
                    ASSERT(left + 1 >= m.max_entries ||
                           (m.max_bytes > 0 &&
                            rest + age_bytes[from + n_ev - 1] + r.bytes > m.max_bytes));
                if (m.keep_spare && !spare_stays && n_ev > 0)
                    ASSERT(m.spare.payload != NULL);
                const cgr__shape *e = entry_at(&m, out.entry);
                ASSERT(e != NULL);
                ASSERT_EQ(e->state, CGR__SHAPE_GRAPH);
                ASSERT_PTR_EQ(e->payload, r.payload);
                ASSERT_EQ(e->bytes, r.bytes);
                ASSERT_U64_EQ(e->replays, 0);
                ASSERT_EQ(stats(&m).entries, left + 1);
            }
            for (uint32_t k = 0; k < o.n_freed; k++)
                give_back(md, o.freed[k].payload);
            rc->evicted += o.n_freed;
        }
        if (i % 97 == 0)
            check_identities(&m);
    }
    check_identities(&m);
    cgr__shapes_freed e;
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
 * peek (armed runs, runs refused while a thread waits): says what decide
 * would do, and on which entry, without changing anything, counters and
 * LRU order included; bad dims and an open capture stop at an assertion.
 */
static void test_peek(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 64, 1, 2, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    uint32_t at = 0;
    int64_t x;
    x = 3;
    ASSERT_EQ(cgr__shapes_peek(&m, &x, &at), CGR__SHAPES_WARMUP);
    ASSERT_EQ(at, CGR__SHAPES_NONE); /* a new shape */
    for (int64_t v = 1; v <= 2; v++) {
        expect((out = decide1(&m, v == 1 ? 1 : 3), &out), CGR__SHAPES_WARMUP);
        x = v == 1 ? 1 : 3;
        ASSERT_EQ(cgr__shapes_peek(&m, &x, &at), CGR__SHAPES_CAPTURE);
        ASSERT_EQ(at, out.entry);
        out = decide1(&m, v == 1 ? 1 : 3);
        expect(&out, CGR__SHAPES_CAPTURE);
        /* A capture is open: decide would refuse, and so does peek. */
        ASSERT_DIES(cgr__shapes_peek(&m, &x, &at));
        done(&m, (uintptr_t)(10 + v), 100, 0);
    }
    /* Cached: bucket 1 (payload 11) then bucket 4 (payload 12); 4 is the MRU. */
    tstats before = stats(&m);
    snap *sn = snap_take(&m);
    x = 1;
    ASSERT_EQ(cgr__shapes_peek(&m, &x, &at), CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(m.entries[at].payload, pl(11));
    ASSERT_EQ(m.entries[at].dims[0], 1);
    x = 4;
    ASSERT_EQ(cgr__shapes_peek(&m, &x, &at), CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(m.entries[at].payload, pl(12));
    ASSERT_EQ(m.entries[at].dims[0], 4);
    x = 3;
    ASSERT_PTR_EQ(peek_graph(&m, &x), pl(12));
    x = 5; /* bucket 8: not cached */
    ASSERT_EQ(cgr__shapes_peek(&m, &x, &at), CGR__SHAPES_WARMUP);
    ASSERT_EQ(at, CGR__SHAPES_NONE);
    const int64_t bad[3] = {0, -1, 65};
    for (int i = 0; i < 3; i++)
        ASSERT_DIES(cgr__shapes_peek(&m, &bad[i], &at));
    ASSERT_DIES(cgr__shapes_peek(&m, NULL, &at));
    ASSERT_DIES(cgr__shapes_peek(NULL, &x, &at));
    ASSERT_DIES(cgr__shapes_peek(&m, &x, NULL));
    tstats after = stats(&m);
    ASSERT_U64_EQ(after.runs, before.runs);
    ASSERT_U64_EQ(after.hits, before.hits);
    ASSERT_U64_EQ(after.misses, before.misses);
    ASSERT_U64_EQ(after.new_shapes, before.new_shapes);
    ASSERT_U64_EQ(after.warmup_runs, before.warmup_runs);
    snap_check(sn, &m); /* LRU order (last_use), the latest entry and all else included */
    /* And decide agrees with what peek said. */
    out = decide1(&m, 1);
    expect(&out, CGR__SHAPES_REPLAY);
    ASSERT_PTR_EQ(out.payload, pl(11));
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

/* Either allocation of a new table failing: OUT_OF_MEMORY, nothing kept (ASan checks leaks). */
static void test_init_out_of_memory(void)
{
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, 64, 1, 4, 0);
    cgr__shapes m;
    for (int k = 1; k <= 2; k++) {
        calloc_fails_in = k;
        ASSERT_EQ(cgr__shapes_init(&m, &c), CGR_STATUS_OUT_OF_MEMORY);
        ASSERT_EQ(calloc_fails_in, 0);
    }
    mgr(&m, &c);
    ASSERT_EQ(decide1(&m, 3).action, CGR__SHAPES_WARMUP);
    cgr__shapes_destroy(&m);
}

/*
 * The warning of a trip with every dim changed once (K = 2), built here
 * from its documented parts; names[0..n) are the dims' names.
 */
static void full_warning(char *out, size_t cap, const char *step, char names[][64], uint32_t n)
{
    size_t len = (size_t)snprintf(out, cap,
                                  "step '%s': 2 new shapes within 10 runs; dims that keep "
                                  "changing: ", step);
    for (uint32_t i = 0; i < n; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s%s (1 of 1 changes)", i ? ", " : "",
                                names[i]);
    snprintf(out + len, cap - len,
             "; shapes not cached run eagerly until 4 runs in a row bring no new one");
}

/*
 * Warnings whose end falls on every position around the buffer's end, and
 * on every place within and between the parts the warning is written in,
 * up to every dim changing with the longest names and step name: each is
 * the whole text when it fits, else exactly its first
 * CGR__SHAPES_WARNING_MAX - 4 characters and "...".
 */
static void test_churn_warning_cut(void)
{
    char names[CGR_MAX_DYN_DIMS][64];
    char step[CGR_MAX_NAME + 1];
    char full[2048], want[CGR__SHAPES_WARNING_MAX];
    int fits = 0, cut = 0;
    for (uint32_t n = 1; n <= CGR_MAX_DYN_DIMS; n++)
        for (size_t len = 1; len <= CGR_MAX_NAME; len += CGR_MAX_NAME - 1)
            for (size_t s_len = 1; s_len <= CGR_MAX_NAME; s_len++) {
                cgr__shapes_dim_desc d[CGR_MAX_DYN_DIMS];
                for (uint32_t i = 0; i < n; i++) {
                    memset(names[i], 'a' + (int)i, len);
                    names[i][len] = '\0';
                    d[i] = dim(names[i], pow2_policy(64));
                }
                memset(step, 's', s_len);
                step[s_len] = '\0';
                cgr__shapes_config c;
                config_init(&c);
                c.step_name = step;
                c.dims = d;
                c.n_dims = n;
                set_churn(&c, 2, 10, 4);
                cgr__shapes m;
                mgr(&m, &c);
                cgr__shapes_decision out;
                int64_t v[CGR_MAX_DYN_DIMS];
                for (int64_t x = 1; x <= 2; x++) {
                    for (uint32_t i = 0; i < n; i++)
                        v[i] = x;
                    t_decide(&m, v, &out);
                }
                ASSERT_EQ(out.churn_tripped, 1);
                full_warning(full, sizeof full, step, names, n);
                size_t keep = strlen(full);
                if (keep >= sizeof want) {
                    keep = sizeof want - 4;
                    memcpy(want + keep, "...", 4);
                    cut++;
                } else {
                    want[keep] = '\0';
                    fits++;
                }
                memcpy(want, full, keep);
                if (strcmp(m.warning, want) != 0)
                    TEST_FAIL_("%u dims of %zu characters, step name of %zu:\n got  %s\n want %s",
                               n, len, s_len, m.warning, want);
                cgr__shapes_destroy(&m);
            }
    /* Both kinds were met, and the cut ones at every offset of the parts (63 shifts). */
    ASSERT(fits > 0);
    ASSERT(cut >= (int)CGR_MAX_NAME);
}

/*
 * Update failures are counted by reason: each reason below the last slot
 * has its own, and the last slot takes itself, larger reasons and negative
 * ones.
 */
static void test_update_reasons(void)
{
    static const int reasons[] = {0,  1, (int)CGR__SHAPES_UPDATE_REASONS - 2,
                                  (int)CGR__SHAPES_UPDATE_REASONS - 1,
                                  (int)CGR__SHAPES_UPDATE_REASONS, -1, INT32_MAX, INT32_MIN};
    enum { N = sizeof reasons / sizeof reasons[0] };
    cgr__shapes_dim_desc d;
    cgr__shapes_config c = one_dim(&d, X(40), 1, 1, 0);
    cgr__shapes m;
    mgr(&m, &c);
    cgr__shapes_decision out;
    decide1(&m, X(0));
    expect((out = decide1(&m, X(0)), &out), CGR__SHAPES_CAPTURE);
    done(&m, 100, 1, 0);
    for (int k = 0; k < N; k++) {
        expect((out = decide1(&m, X(k + 1)), &out), CGR__SHAPES_WARMUP);
        expect((out = decide1(&m, X(k + 1)), &out), CGR__SHAPES_CAPTURE);
        ASSERT_EQ(source_of(&m, &out), FROM_LRU);
        ASSERT_PTR_EQ(out.payload, pl(100 + (uintptr_t)k));
        char text[32];
        snprintf(text, sizeof text, "reason %d", reasons[k]);
        cgr__shapes_freed victim;
        cgr__shapes_update_failed(&m, reasons[k], text, &victim);
        ASSERT_PTR_EQ(victim.payload, pl(100 + (uintptr_t)k));
        ASSERT_STR_EQ(m.update_error, text);
        done(&m, 101 + (uintptr_t)k, 1, 0);
    }
    tstats s = stats(&m);
    ASSERT_U64_EQ(s.update_failures, N);
    for (uint32_t r = 0; r < CGR__SHAPES_UPDATE_REASONS; r++) {
        uint64_t want = r == 0 || r == 1 || r == CGR__SHAPES_UPDATE_REASONS - 2;
        if (r == CGR__SHAPES_UPDATE_REASONS - 1)
            want = N - 3; /* R - 1, R, -1, INT32_MAX and INT32_MIN */
        if (s.update_failures_by_reason[r] != want)
            TEST_FAIL_("reason slot %u: %llu failures, expected %llu", r,
                       (unsigned long long)s.update_failures_by_reason[r],
                       (unsigned long long)want);
    }
    check_identities(&m);
    cgr__shapes_destroy(&m);
}

int main(void)
{
    test_init();
    test_init_out_of_memory();
    test_peek();
    test_wserve();
    test_boundaries();
    test_warmup();
    test_lru_update();
    test_spare();
    test_too_large();
    test_uncapturable();
    test_refuse();
    test_forget_frozen_last();
    test_offer_withdrawn();
    test_refuse_warming();
    test_churn();
    test_churn_warning_cut();
    test_update_reasons();
    test_bad_input();
    test_last_first();
    test_kinds();
    test_lru_order();
    test_recycle();
    test_dims_extremes();
    test_freed_max();
    test_random();
    test_byte_totals();
    printf("shapes: ok\n");
    return 0;
}
