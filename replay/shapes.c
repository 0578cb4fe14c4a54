/*
 * Shape table (see shapes.h and docs/shapes.md).
 *
 * Everything lives in one array of entries; a free entry has state FREE.
 * Each state is bounded (GRAPH by max_entries and max_bytes, WARMING and
 * EAGER by their own maxima), and the array holds the sum of the bounds,
 * so a new shape always finds an entry: a free one, or the least recently
 * used WARMING one when MAX_WARMING are warming. A capture in flight pins
 * the table (capturing = 1) until the runtime reports back, so nothing can
 * move the entry being captured or the graph offered for update between
 * the CAPTURE decision and its report.
 *
 * The churn guard sees every decision, so its counters are the table's
 * runs (the LRU clock) and new shapes; they are not counted again here.
 *
 * Churn warning. For each new shape we keep a mask of the dims whose
 * bucketed value differs from the previous new shape's (a ring of
 * CGR__CHURN_MAX_K masks). The guard trips on the K-th of K new shapes
 * within its window, so the K - 1 latest masks are exactly the changes
 * between those K shapes; the warning names every dim set in them, with
 * how many of those changes it took part in.
 */
#include "shapes.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(CGR_MAX_DYN_DIMS <= 8, "a change mask is one byte");

/* A bounded text buffer; a cut text ends in "...". */
typedef struct text_out {
    char *buf;
    size_t cap;
    size_t len; /* at most cap - 1 */
} text_out;

/*
 * Appends; a part that does not fit whole cuts the text. A full buffer is
 * not a reason to return early: text that filled it exactly is complete
 * only if no part follows, and the next part is what marks it cut.
 */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(text_out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= o->cap - o->len) {
        o->len = o->cap - 1;
        memcpy(o->buf + o->cap - 4, "...", 3);
    } else {
        o->len += (size_t)n;
    }
}

/* Copies src (NULL: ""), cutting it to cap - 1 characters that end in "..." when too long. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    text_out o = {dst, cap, 0};
    dst[0] = '\0';
    put(&o, "%s", src ? src : "");
}

/* ---- init ------------------------------------------------------------------------- */

#ifndef NDEBUG
/* What the API edge (lib/validate.c) has already made sure of. */
static int config_ok(const cgr__shapes_config *cfg)
{
    if (cfg->n_dims > CGR_MAX_DYN_DIMS || (cfg->dims == NULL && cfg->n_dims > 0) ||
        (cfg->step_name && strlen(cfg->step_name) > CGR_MAX_NAME) ||
        cfg->warmup_runs < 1 || cfg->warmup_runs > CGR_MAX_WARMUP ||
        (cfg->keep_spare != 0 && cfg->keep_spare != 1) || cfg->max_entries == 0 ||
        cfg->max_entries > CGR__SHAPES_MAX_ENTRIES)
        return 0;
    for (uint32_t i = 0; i < cfg->n_dims; i++) {
        if (!cgr__bucket_valid(&cfg->dims[i].policy) ||
            (cfg->dims[i].name && strlen(cfg->dims[i].name) > CGR_MAX_NAME))
            return 0;
    }
    return 1;
}
#endif

cgr_status cgr__shapes_init(cgr__shapes *m, const cgr__shapes_config *cfg)
{
    assert(m != NULL && cfg != NULL && config_ok(cfg));
    cgr__churn churn;
    cgr__churn_init(&churn, cfg->churn_k, cfg->churn_window, cfg->churn_stable);

    uint32_t capacity = cfg->max_entries + CGR__SHAPES_MAX_WARMING + CGR__SHAPES_MAX_EAGER;
    cgr__shape *entries = calloc(capacity, sizeof *entries);
    /* An insert evicts at most every graph; a refused one evicts none. */
    cgr__shapes_freed *freed = calloc(cfg->max_entries, sizeof *freed);
    if (entries == NULL || freed == NULL) {
        free(entries);
        free(freed);
        return CGR_STATUS_OUT_OF_MEMORY;
    }
    memset(m, 0, sizeof *m);
    copy_text(m->step_name, sizeof m->step_name, cfg->step_name ? cfg->step_name : "step");
    for (uint32_t i = 0; i < cfg->n_dims; i++) {
        copy_text(m->dim_name[i], sizeof m->dim_name[i], cfg->dims[i].name);
        m->policy[i] = cfg->dims[i].policy;
    }
    m->n_dims = cfg->n_dims;
    m->warmup_runs = cfg->warmup_runs;
    m->max_entries = cfg->max_entries;
    m->max_bytes = cfg->max_bytes;
    m->keep_spare = cfg->keep_spare;
    m->entries = entries;
    m->capacity = capacity;
    m->last = CGR__SHAPES_NONE;
    m->freed = freed;
    m->churn = churn;
    return CGR_STATUS_OK;
}

void cgr__shapes_destroy(cgr__shapes *m)
{
    free(m->entries);
    free(m->freed);
    memset(m, 0, sizeof *m);
}

/* ---- the table ------------------------------------------------------------------------ */

static int key_equal(const cgr__shapes *m, const cgr__shape *e, const int64_t *dims)
{
    return memcmp(e->dims, dims, (size_t)m->n_dims * sizeof dims[0]) == 0;
}

/* The entry of `dims`, or CGR__SHAPES_NONE; the latest decision's entry is tried first. */
static uint32_t find(const cgr__shapes *m, const int64_t *dims)
{
    if (m->last != CGR__SHAPES_NONE && key_equal(m, &m->entries[m->last], dims))
        return m->last;
    for (uint32_t i = 0; i < m->capacity; i++)
        if (m->entries[i].state != CGR__SHAPE_FREE && key_equal(m, &m->entries[i], dims))
            return i;
    return CGR__SHAPES_NONE;
}

/* The least recently used entry in `state`, and how many there are. */
static uint32_t oldest(const cgr__shapes *m, cgr__shape_state state, uint32_t *count)
{
    uint32_t v = CGR__SHAPES_NONE, n = 0;
    for (uint32_t i = 0; i < m->capacity; i++) {
        const cgr__shape *e = &m->entries[i];
        if (e->state != state)
            continue;
        n++;
        if (v == CGR__SHAPES_NONE || e->last_use < m->entries[v].last_use)
            v = i;
    }
    if (count)
        *count = n;
    return v;
}

static void clear(cgr__shapes *m, uint32_t i)
{
    memset(&m->entries[i], 0, sizeof m->entries[i]);
    if (m->last == i)
        m->last = CGR__SHAPES_NONE;
}

/* Takes graph i's payload out of the budgets into *out; the entry keeps its key. */
static void uncharge(cgr__shapes *m, uint32_t i, cgr__shapes_freed *out)
{
    cgr__shape *e = &m->entries[i];
    out->payload = e->payload;
    out->bytes = e->bytes;
    m->n_graphs--;
    m->bytes -= e->bytes;
    e->payload = NULL;
    e->bytes = 0;
    e->replays = 0;
}

/* Graph i leaves the table (pushed out, or taken by an update): an eviction. */
static void evict(cgr__shapes *m, uint32_t i, cgr__shapes_freed *out)
{
    uncharge(m, i, out);
    m->stats.evictions++;
    clear(m, i);
}

static void take_spare(cgr__shapes *m, cgr__shapes_freed *out)
{
    *out = m->spare;
    memset(&m->spare, 0, sizeof m->spare);
}

/*
 * The executable offered to the capture leaves the table: the spare, or
 * else the LRU graph (evicted). The table is pinned since the offer, so
 * both are still what decide() offered.
 */
static void take_offer(cgr__shapes *m, cgr__shapes_freed *out)
{
    assert(m != NULL && out != NULL && m->capturing && m->offered);
    if (m->spare.payload)
        take_spare(m, out);
    else
        evict(m, oldest(m, CGR__SHAPE_GRAPH, NULL), out);
    m->offered = 0;
}

/* A new WARMING entry for dims: a free one, else the least recently used warming one. */
static uint32_t add_warming(cgr__shapes *m, const int64_t *dims)
{
    uint32_t n = 0, v = oldest(m, CGR__SHAPE_WARMING, &n);
    if (n < CGR__SHAPES_MAX_WARMING)
        for (v = 0; m->entries[v].state != CGR__SHAPE_FREE; v++)
            ;
    clear(m, v);
    cgr__shape *e = &m->entries[v];
    memcpy(e->dims, dims, (size_t)m->n_dims * sizeof dims[0]);
    e->state = CGR__SHAPE_WARMING;
    return v;
}

/*
 * The EAGER entry (other than skip) to forget for a new one once they are
 * full, else CGR__SHAPES_NONE: the least recently used whose reason is not
 * a frozen value, else the least recently used. A shape forgotten comes
 * back as new; one whose capture failed then fails again, but one that
 * froze a value is captured and checked again, and a value that holds
 * still across those two runs (one that changes per epoch, say) would pass
 * the check and be replayed. So those are kept longest.
 */
static uint32_t eager_to_forget(const cgr__shapes *m, uint32_t skip)
{
    uint32_t n = 0, any = CGR__SHAPES_NONE, thawed = CGR__SHAPES_NONE;
    for (uint32_t i = 0; i < m->capacity; i++) {
        const cgr__shape *e = &m->entries[i];
        if (e->state != CGR__SHAPE_EAGER || i == skip)
            continue;
        n++;
        if (any == CGR__SHAPES_NONE || e->last_use < m->entries[any].last_use)
            any = i;
        if (e->reason != CGR_EAGER_FROZEN_VALUE &&
            (thawed == CGR__SHAPES_NONE || e->last_use < m->entries[thawed].last_use))
            thawed = i;
    }
    if (n < CGR__SHAPES_MAX_EAGER)
        return CGR__SHAPES_NONE;
    return thawed != CGR__SHAPES_NONE ? thawed : any;
}

/* Entry i runs eagerly for good, in place of a forgotten EAGER entry when they are full. */
static void make_eager(cgr__shapes *m, uint32_t i, cgr_eager_reason reason, const char *text)
{
    const uint32_t v = eager_to_forget(m, i);
    if (v != CGR__SHAPES_NONE)
        clear(m, v);
    cgr__shape *e = &m->entries[i];
    e->state = CGR__SHAPE_EAGER;
    e->reason = (uint8_t)reason;
    e->eager_runs = 0;
    copy_text(e->text, sizeof e->text, text);
}

/* ---- churn ------------------------------------------------------------------------------ */

/* Notes which dims of the n-th new shape differ from the previous new shape. */
static void record_new_shape(cgr__shapes *m, const int64_t *dims, uint64_t n)
{
    uint8_t mask = 0;
    for (uint32_t i = 0; i < m->n_dims; i++) {
        if (n > 1 && dims[i] != m->last_new[i])
            mask |= (uint8_t)(1u << i);
        m->last_new[i] = dims[i];
    }
    m->change_mask[(n - 1) % CGR__CHURN_MAX_K] = mask;
}

/* The one warning of a trip, written on the run that trips the guard. */
static void write_warning(cgr__shapes *m)
{
    uint32_t k = m->churn.k;
    uint64_t n = m->churn.counters.new_shapes;
    /*
     * K new shapes hold K - 1 changes; with K = 1, the change that tripped
     * it, which the very first shape has none of (its mask is empty).
     */
    uint64_t changes = k > 1 ? k - 1 : 1;
    uint32_t count[CGR_MAX_DYN_DIMS] = {0};
    for (uint64_t c = 0; c < changes; c++) {
        uint8_t mask = m->change_mask[(n - 1 - c) % CGR__CHURN_MAX_K];
        for (uint32_t i = 0; i < m->n_dims; i++)
            count[i] += mask >> i & 1u;
    }
    text_out o = {m->warning, sizeof m->warning, 0};
    m->warning[0] = '\0';
    put(&o, "step '%s': %u new shapes within %llu runs; dims that keep changing: ",
        m->step_name, k, (unsigned long long)m->churn.window);
    int named = 0;
    for (uint32_t i = 0; i < m->n_dims; i++) {
        if (count[i] == 0)
            continue;
        if (named++)
            put(&o, ", ");
        if (m->dim_name[i][0])
            put(&o, "%s", m->dim_name[i]);
        else
            put(&o, "d%u", i);
        put(&o, " (%u of %llu changes)", count[i], (unsigned long long)changes);
    }
    if (!named)
        put(&o, "none identified");
    put(&o, "; shapes not cached run eagerly until %llu runs in a row bring no new one",
        (unsigned long long)m->churn.stable_needed);
}

/* ---- decide ------------------------------------------------------------------------------ */

/* The bucketed dims of true_dims; the caller checked them against each dim's largest bucket. */
static void bucket(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed)
{
    assert(true_dims != NULL || m->n_dims == 0);
    for (uint32_t i = 0; i < m->n_dims; i++)
        bucketed[i] = cgr__bucket_choose(&m->policy[i], true_dims[i]);
}

/* The executable offered to the capture: the spare, else a full cache's LRU graph. */
static void *offer(const cgr__shapes *m)
{
    if (m->spare.payload)
        return m->spare.payload;
    if (m->n_graphs < m->max_entries)
        return NULL;
    /* The insert would evict this graph anyway: offer its executable. */
    return m->entries[oldest(m, CGR__SHAPE_GRAPH, NULL)].payload;
}

/*
 * What a run of entry e does, eager_now being the churn guard's answer for
 * it: the one place the action is chosen, for decide() and peek().
 */
static cgr__shapes_action action_of(const cgr__shapes *m, const cgr__shape *e, int eager_now)
{
    /* Cached shapes replay even while the guard is tripped: it stops captures only. */
    if (e->state == CGR__SHAPE_GRAPH)
        return CGR__SHAPES_REPLAY;
    /* A warming entry stays (warm-ups not advanced) while the guard is tripped. */
    if (e->state == CGR__SHAPE_EAGER || eager_now)
        return CGR__SHAPES_EAGER;
    return e->warmups < m->warmup_runs ? CGR__SHAPES_WARMUP : CGR__SHAPES_CAPTURE;
}

void cgr__shapes_decide(cgr__shapes *m, const int64_t *true_dims, cgr__shapes_decision *out)
{
    int64_t dims[CGR_MAX_DYN_DIMS] = {0};
    assert(m != NULL && out != NULL && !m->capturing);
    bucket(m, true_dims, dims);
    memset(out, 0, sizeof *out);

    uint32_t i = find(m, dims);
    cgr__shape *e = i != CGR__SHAPES_NONE ? &m->entries[i] : NULL;
    const uint64_t trips = m->churn.counters.activations;
    out->fresh = e == NULL;
    const int eager_now = cgr__churn_observe(&m->churn, out->fresh);
    out->churn_tripped = m->churn.counters.activations != trips;
    if (e == NULL) {
        record_new_shape(m, dims, m->churn.counters.new_shapes);
        i = add_warming(m, dims);
        e = &m->entries[i];
    }
    /* The LRU clock: this run's number. */
    e->last_use = m->churn.counters.steps;
    m->last = i;
    out->entry = i;
    out->dims = e->dims;
    if (out->churn_tripped)
        write_warning(m);

    out->action = action_of(m, e, eager_now);
    switch (out->action) {
    case CGR__SHAPES_REPLAY:
        e->replays++;
        out->payload = e->payload;
        break;
    case CGR__SHAPES_EAGER:
        if (e->state == CGR__SHAPE_EAGER) {
            e->eager_runs++;
            out->reason = (cgr_eager_reason)e->reason;
        } else {
            out->reason = CGR_EAGER_CHURN;
        }
        break;
    case CGR__SHAPES_WARMUP:
        out->warmup_run = ++e->warmups;
        break;
    case CGR__SHAPES_CAPTURE:
        m->capturing = 1;
        out->payload = offer(m);
        m->offered = out->payload != NULL;
        break;
    }
}

cgr__shapes_action cgr__shapes_peek(const cgr__shapes *m, const int64_t *true_dims,
                                    uint32_t *entry)
{
    static const cgr__shape new_shape; /* what decide() makes of a shape it does not know */
    int64_t b[CGR_MAX_DYN_DIMS];
    assert(m != NULL && entry != NULL && !m->capturing);
    bucket(m, true_dims, b);
    *entry = find(m, b);
    const cgr__shape *e = *entry != CGR__SHAPES_NONE ? &m->entries[*entry] : &new_shape;
    /* A graph replays whatever the guard says: arming one need not copy the guard. */
    if (e->state == CGR__SHAPE_GRAPH)
        return CGR__SHAPES_REPLAY;
    /* The guard's answer for this run, asked of a copy, which it may change. */
    cgr__churn g = m->churn;
    return action_of(m, e, cgr__churn_observe(&g, *entry == CGR__SHAPES_NONE));
}

/* ---- reports ------------------------------------------------------------------------------ */

static void end_capture(cgr__shapes *m)
{
    m->capturing = 0;
    m->offered = 0;
}

/* The byte budget; none is SIZE_MAX, so that the total can never wrap. */
static size_t budget(const cgr__shapes *m)
{
    return m->max_bytes ? m->max_bytes : SIZE_MAX;
}

/* Pushes out least recently used graphs until one of `bytes` fits; they go to freed[*n]. */
static void make_room(cgr__shapes *m, size_t bytes, uint32_t *n)
{
    /* m->bytes <= budget always, and bytes <= budget here: no sum can wrap. */
    while (m->n_graphs > 0 &&
           (m->n_graphs >= m->max_entries || bytes > budget(m) - m->bytes)) {
        evict(m, oldest(m, CGR__SHAPE_GRAPH, NULL), &m->freed[(*n)++]);
        if (m->keep_spare && !m->spare.payload)
            m->spare = m->freed[--(*n)]; /* kept back for the next update */
    }
}

void cgr__shapes_capture_done(cgr__shapes *m, void *payload, size_t bytes, int updated,
                              cgr__shapes_outcome *out)
{
    assert(m != NULL && out != NULL && m->capturing && payload != NULL &&
           (updated == 0 || updated == 1));
    if (updated) {
        /* Its executable now serves the new shape: an LRU offer's old shape leaves. */
        cgr__shapes_freed gone;
        take_offer(m, &gone);
        assert(gone.payload == payload);
    }

    memset(out, 0, sizeof *out);
    uint32_t n = 0;
    cgr__shape *e = &m->entries[m->last];
    if (bytes > budget(m)) {
        char text[CGR__SHAPES_TEXT_MAX];
        snprintf(text, sizeof text,
                 "its graph needs %zu bytes, more than the graph cache's budget of %zu bytes",
                 bytes, m->max_bytes);
        make_eager(m, m->last, CGR_EAGER_TOO_LARGE, text);
        m->freed[n].payload = payload;
        m->freed[n++].bytes = bytes;
    } else {
        make_room(m, bytes, &n);
        e->state = CGR__SHAPE_GRAPH;
        e->payload = payload;
        e->bytes = bytes;
        e->replays = 0;
        m->n_graphs++;
        m->bytes += bytes;
        out->cached = 1;
    }
    out->freed = m->freed;
    out->n_freed = n;
    end_capture(m);
}

void cgr__shapes_capture_failed(cgr__shapes *m, const char *text)
{
    assert(m != NULL && m->capturing);
    make_eager(m, m->last, CGR_EAGER_CAPTURE_FAILED, text);
    m->stats.capture_failures++;
    end_capture(m);
}

void cgr__shapes_refuse(cgr__shapes *m, uint32_t entry, cgr_eager_reason reason,
                              const char *text, cgr__shapes_freed *out)
{
    assert(m != NULL && out != NULL && entry < m->capacity && !m->capturing &&
           (reason == CGR_EAGER_FROZEN_VALUE || reason == CGR_EAGER_CAPTURE_FAILED));
    assert(m->entries[entry].state == CGR__SHAPE_GRAPH);
    m->stats.capture_failures += reason == CGR_EAGER_CAPTURE_FAILED;
    /* Not an eviction: the graph leaves because it is wrong, not for room. */
    uncharge(m, entry, out);
    make_eager(m, entry, reason, text);
}

void cgr__shapes_capture_cancel(cgr__shapes *m)
{
    assert(m != NULL && m->capturing);
    end_capture(m);
}

void cgr__shapes_update_failed(cgr__shapes *m, int reason, const char *text,
                                     cgr__shapes_freed *victim)
{
    take_offer(m, victim);
    uint32_t at = reason >= 0 && reason < (int)CGR__SHAPES_UPDATE_REASONS - 1
                      ? (uint32_t)reason
                      : CGR__SHAPES_UPDATE_REASONS - 1;
    m->stats.update_failures_by_reason[at]++;
    copy_text(m->update_error, sizeof m->update_error, text);
}

void cgr__shapes_offer_withdrawn(cgr__shapes *m, cgr__shapes_freed *victim)
{
    take_offer(m, victim);
}

cgr_status cgr__shapes_drain(cgr__shapes *m, cgr__shapes_freed *out)
{
    assert(m != NULL && out != NULL && !m->capturing);
    uint32_t v = oldest(m, CGR__SHAPE_GRAPH, NULL);
    if (v != CGR__SHAPES_NONE) {
        /* Tearing down is not an eviction. */
        uncharge(m, v, out);
        clear(m, v);
        return CGR_STATUS_OK;
    }
    if (!m->spare.payload)
        return CGR_STATUS_WRONG_STATE;
    take_spare(m, out);
    return CGR_STATUS_OK;
}
