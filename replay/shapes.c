/*
 * Shape manager (see shapes.h).
 *
 * State per run: the latest signature (cur) and true dims; two small
 * tables scanned linearly (16 entries each, hash compared first): warm-up
 * records for shapes seen but not captured, and shapes that run eagerly
 * for good; the cache and the churn guard. A capture in flight pins the
 * manager (capturing = 1) until the runtime reports back, so nothing can
 * move the cache entry offered for update, or the warm-up record, between
 * the CAPTURE decision and its report.
 *
 * Churn warning. For each new shape we keep a bit mask of the dims whose
 * bucketed value differs from the previous new shape's (a ring of
 * CGR__CHURN_MAX_K masks). The guard trips on the K-th of K new shapes
 * within its window, so the K - 1 latest masks are exactly the changes
 * between those K shapes; the warning names every dim set in them, with
 * how many of those changes it took part in.
 */
#include "shapes.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MASK_WORDS ((CGR__SIG_MAX_DIMS + 63) / 64)

static int shapes_ok(const cgr__shapes *m)
{
    return m != NULL && m->pending != NULL && m->nograph != NULL && m->freed != NULL &&
           m->cache.entries != NULL;
}

/* A bounded text buffer; a cut text ends in "...". */
typedef struct text_out {
    char *buf;
    size_t cap;
    size_t len;
} text_out;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(text_out *o, const char *fmt, ...)
{
    if (o->len + 1 >= o->cap)
        return;
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

/* Copies src, cutting it to cap - 1 characters that end in "..." when too long. */
static void copy_text(char *dst, size_t cap, const char *src)
{
    text_out o = {dst, cap, 0};
    dst[0] = '\0';
    put(&o, "%s", src);
}

/* ---- init ------------------------------------------------------------------------- */

void cgr__shapes_config_init(cgr__shapes_config *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->warmup_runs = CGR__SHAPES_DEFAULT_WARMUP;
    cfg->max_entries = CGR__SHAPES_DEFAULT_ENTRIES;
    cfg->churn_k = CGR__SHAPES_DEFAULT_CHURN_K;
    cfg->churn_window = CGR__SHAPES_DEFAULT_CHURN_W;
    cfg->churn_stable = CGR__SHAPES_DEFAULT_CHURN_S;
}

static int dims_ok(const cgr__shapes_dim_desc *d, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        int64_t smallest;
        if (d[i].tensor < 0 || d[i].tensor >= CGR_MAX_TENSORS || d[i].axis < 0 ||
            d[i].axis >= CGR_MAX_RANK)
            return 0;
        if (cgr__bucket_at(&d[i].policy, 0, &smallest) != CGR_STATUS_OK)
            return 0;
        if (d[i].name != NULL && strlen(d[i].name) > CGR__SHAPES_NAME_MAX)
            return 0;
        for (uint32_t j = 0; j < i; j++)
            if (d[j].tensor == d[i].tensor && d[j].axis == d[i].axis)
                return 0;
    }
    return 1;
}

cgr_status cgr__shapes_init(cgr__shapes *m, const cgr__shapes_config *cfg)
{
    if (m == NULL || cfg == NULL || cfg->n_dims > CGR__SIG_MAX_DIMS ||
        (cfg->dims == NULL && cfg->n_dims > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (cfg->warmup_runs < 1 || cfg->warmup_runs > CGR_MAX_WARMUP ||
        (cfg->keep_spare != 0 && cfg->keep_spare != 1))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (cfg->max_entries == 0 || cfg->max_entries > CGR__CACHE_MAX_ENTRIES)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!dims_ok(cfg->dims, cfg->n_dims))
        return CGR_STATUS_INVALID_ARGUMENT;
    cgr__churn churn;
    if (cgr__churn_init(&churn, cfg->churn_k, cfg->churn_window, cfg->churn_stable) !=
        CGR_STATUS_OK)
        return CGR_STATUS_INVALID_ARGUMENT;

    /* At least one element each, so that no table is a malloc(0). */
    size_t nd = cfg->n_dims > 0 ? cfg->n_dims : 1;
    cgr__cache cache;
    memset(&cache, 0, sizeof cache);
    cgr__shapes_dim *dims = calloc(nd, sizeof *dims);
    cgr__sig_dim_name *names = calloc(nd, sizeof *names);
    int64_t *true_dims = calloc(nd, sizeof *true_dims);
    int64_t *last_new = calloc(nd, sizeof *last_new);
    cgr__shapes_pending *pending = calloc(CGR__SHAPES_MAX_PENDING, sizeof *pending);
    cgr__shapes_nograph *nograph = calloc(CGR__SHAPES_MAX_NOGRAPH, sizeof *nograph);
    cgr__cache_evicted *freed = calloc(cfg->max_entries, sizeof *freed);
    if (dims == NULL || names == NULL || true_dims == NULL || last_new == NULL ||
        pending == NULL || nograph == NULL || freed == NULL)
        goto fail;
    if (cgr__cache_init(&cache, cfg->max_entries, cfg->max_bytes) != CGR_STATUS_OK)
        goto fail;

    memset(m, 0, sizeof *m);
    m->step = cfg->step;
    m->n_dims = cfg->n_dims;
    m->warmup_runs = cfg->warmup_runs;
    m->keep_spare = cfg->keep_spare;
    for (uint32_t i = 0; i < cfg->n_dims; i++) {
        dims[i].desc = cfg->dims[i];
        dims[i].desc.name = NULL;
        if (cfg->dims[i].name != NULL) {
            copy_text(dims[i].name, sizeof dims[i].name, cfg->dims[i].name);
            dims[i].desc.name = dims[i].name;
        }
        names[i].tensor = dims[i].desc.name;
        names[i].axis = dims[i].desc.axis;
    }
    m->dims = dims;
    m->names = names;
    m->true_dims = true_dims;
    m->last_new = last_new;
    m->pending = pending;
    m->nograph = nograph;
    m->freed = freed;
    m->cache = cache;
    m->churn = churn;
    m->cap_pending = CGR__CACHE_NONE;
    m->offer_index = CGR__CACHE_NONE;
    (void)cgr__sig_init(&m->cur, m->step, 0, NULL);
    return CGR_STATUS_OK;

fail:
    free(freed);
    free(nograph);
    free(pending);
    free(last_new);
    free(true_dims);
    free(names);
    free(dims);
    return CGR_STATUS_OUT_OF_MEMORY;
}

void cgr__shapes_destroy(cgr__shapes *m)
{
    if (m == NULL)
        return;
    cgr__cache_destroy(&m->cache);
    free(m->freed);
    free(m->nograph);
    free(m->pending);
    free(m->last_new);
    free(m->true_dims);
    free(m->names);
    free(m->dims);
    memset(m, 0, sizeof *m);
}

/* ---- the two small tables ------------------------------------------------------------ */

static uint32_t pending_find(const cgr__shapes *m, const cgr__sig *sig)
{
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_PENDING; i++)
        if (m->pending[i].live && cgr__sig_equal(&m->pending[i].sig, sig))
            return i;
    return CGR__CACHE_NONE;
}

/* A free record, else the least recently used one (its shape starts over). */
static uint32_t pending_add(cgr__shapes *m, const cgr__sig *sig)
{
    uint32_t v = 0;
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_PENDING; i++) {
        if (!m->pending[i].live) {
            v = i;
            break;
        }
        if (m->pending[i].last_use < m->pending[v].last_use)
            v = i;
    }
    cgr__shapes_pending *p = &m->pending[v];
    p->sig = *sig;
    p->live = 1;
    p->warmups = 0;
    p->last_use = m->runs;
    return v;
}

static uint32_t nograph_find(const cgr__shapes *m, const cgr__sig *sig)
{
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_NOGRAPH; i++)
        if (m->nograph[i].live && cgr__sig_equal(&m->nograph[i].sig, sig))
            return i;
    return CGR__CACHE_NONE;
}

/* Records cur as running eagerly for good; recycles the least recently used record when full. */
static void nograph_add(cgr__shapes *m, cgr__shapes_reason reason, const char *text)
{
    uint32_t v = 0;
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_NOGRAPH; i++) {
        if (!m->nograph[i].live) {
            v = i;
            break;
        }
        if (m->nograph[i].last_use < m->nograph[v].last_use)
            v = i;
    }
    cgr__shapes_nograph *e = &m->nograph[v];
    e->sig = m->cur;
    e->reason = reason;
    e->live = 1;
    e->runs = 0;
    e->last_use = m->runs;
    copy_text(e->text, sizeof e->text, text);
}

/* ---- churn ------------------------------------------------------------------------------ */

/* Notes which dims of cur differ from the previous new shape. */
static void record_new_shape(cgr__shapes *m)
{
    uint64_t *mask = m->change_mask[m->new_count % CGR__CHURN_MAX_K];
    memset(mask, 0, MASK_WORDS * sizeof mask[0]);
    for (uint32_t i = 0; i < m->n_dims; i++) {
        if (m->new_count > 0 && m->cur.dims[i] != m->last_new[i])
            mask[i / 64] |= UINT64_C(1) << (i % 64);
        m->last_new[i] = m->cur.dims[i];
    }
    m->new_count++;
}

static void put_dim_name(text_out *o, const cgr__shapes *m, uint32_t i)
{
    const cgr__shapes_dim_desc *d = &m->dims[i].desc;
    if (d->name == NULL)
        put(o, "d%u", i);
    else
        put(o, "%s.%d", d->name, d->axis);
}

/* The one warning of a trip, written on the run that trips the guard. */
static void write_warning(cgr__shapes *m)
{
    uint32_t k = m->churn.k;
    /* K new shapes hold K - 1 changes; with K = 1, the change that tripped it. */
    uint64_t changes = k > 1 ? k - 1 : 1;
    if (changes > m->new_count - 1)
        changes = m->new_count - 1;
    uint32_t count[CGR__SIG_MAX_DIMS];
    memset(count, 0, sizeof count);
    for (uint64_t c = 0; c < changes; c++) {
        const uint64_t *mask = m->change_mask[(m->new_count - 1 - c) % CGR__CHURN_MAX_K];
        for (uint32_t i = 0; i < m->n_dims; i++)
            if (mask[i / 64] >> (i % 64) & 1)
                count[i]++;
    }
    text_out o = {m->warning, sizeof m->warning, 0};
    m->warning[0] = '\0';
    put(&o, "step %llu: %u new shapes within %llu runs; dims that keep changing: ",
        (unsigned long long)m->step, k, (unsigned long long)m->churn.window);
    int named = 0;
    for (uint32_t i = 0; i < m->n_dims; i++) {
        if (count[i] == 0)
            continue;
        if (named++)
            put(&o, ", ");
        put_dim_name(&o, m, i);
        put(&o, " (%u of %llu changes)", count[i], (unsigned long long)changes);
    }
    if (!named)
        put(&o, "none identified");
    put(&o, "; shapes not cached run eagerly until %llu runs in a row bring no new one",
        (unsigned long long)m->churn.stable_needed);
}

/* ---- decide ------------------------------------------------------------------------------ */

static void eager(cgr__shapes *m, cgr__shapes_decision *out, cgr__shapes_reason r,
                  const char *text)
{
    out->action = CGR__SHAPES_EAGER;
    out->reason = r;
    out->text = text;
    m->stats.eager_runs++;
    m->stats.eager_by_reason[r]++;
}

cgr_status cgr__shapes_bucket(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed)
{
    if (!shapes_ok(m) || !bucketed || (true_dims == NULL && m->n_dims > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < m->n_dims; i++)
        if (cgr__bucket_choose(&m->dims[i].desc.policy, true_dims[i], &bucketed[i]) !=
            CGR_STATUS_OK)
            return CGR_STATUS_INVALID_ARGUMENT;
    return CGR_STATUS_OK;
}

void *cgr__shapes_peek(const cgr__shapes *m, const int64_t *true_dims, int64_t *bucketed)
{
    if (!shapes_ok(m) || (true_dims == NULL && m->n_dims > 0) || m->capturing)
        return NULL;
    /* Without dynamic dims the signature never changes (see decide()). */
    const cgr__sig *sig = &m->cur;
    cgr__sig local;
    int64_t b[CGR__SIG_MAX_DIMS];
    if (m->n_dims > 0) {
        if (cgr__shapes_bucket(m, true_dims, b) != CGR_STATUS_OK)
            return NULL;
        (void)cgr__sig_init(&local, m->step, m->n_dims, b);
        sig = &local;
    }
    uint32_t ci = CGR__CACHE_NONE;
    (void)cgr__cache_find(&m->cache, sig, &ci);
    if (ci == CGR__CACHE_NONE)
        return NULL;
    if (bucketed && m->n_dims > 0)
        memcpy(bucketed, b, (size_t)m->n_dims * sizeof b[0]);
    return m->cache.entries[ci].payload;
}

cgr_status cgr__shapes_decide(cgr__shapes *m, const int64_t *true_dims, cgr__shapes_decision *out)
{
    if (!shapes_ok(m) || out == NULL || (true_dims == NULL && m->n_dims > 0))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (m->capturing)
        return CGR_STATUS_WRONG_STATE;
    int64_t bucketed[CGR__SIG_MAX_DIMS];
    if (cgr__shapes_bucket(m, true_dims, bucketed) != CGR_STATUS_OK)
        return CGR_STATUS_INVALID_ARGUMENT;

    /*
     * From here on nothing can fail. Without dynamic dims the signature is
     * the one init built and never changes: rebuilding it (a 1 KiB struct)
     * on every replay of a fixed-shape step would be wasted work.
     */
    if (m->n_dims > 0) {
        (void)cgr__sig_init(&m->cur, m->step, m->n_dims, bucketed);
        memcpy(m->true_dims, true_dims, (size_t)m->n_dims * sizeof true_dims[0]);
    }
    m->runs++;
    m->stats.runs++;
    memset(out, 0, sizeof *out);
    out->text = "";
    out->cache_index = CGR__CACHE_NONE;
    out->pending = CGR__CACHE_NONE;
    out->sig = &m->cur;
    out->dims = m->cur.dims;
    out->true_dims = m->true_dims;

    uint32_t ci;
    (void)cgr__cache_lookup(&m->cache, &m->cur, &ci);
    if (ci != CGR__CACHE_NONE) {
        (void)cgr__churn_observe(&m->churn, 0, NULL, NULL, &out->churn_recovered);
        out->action = CGR__SHAPES_REPLAY;
        out->payload = m->cache.entries[ci].payload;
        out->cache_index = ci;
        m->stats.hits++;
        return CGR_STATUS_OK;
    }
    m->stats.misses++;

    uint32_t ng = nograph_find(m, &m->cur);
    if (ng != CGR__CACHE_NONE) {
        cgr__shapes_nograph *e = &m->nograph[ng];
        e->runs++;
        e->last_use = m->runs;
        (void)cgr__churn_observe(&m->churn, 0, NULL, NULL, &out->churn_recovered);
        eager(m, out, e->reason, e->text);
        return CGR_STATUS_OK;
    }

    uint32_t p = pending_find(m, &m->cur);
    int is_new = p == CGR__CACHE_NONE;
    if (is_new) {
        record_new_shape(m);
        m->stats.new_shapes++;
        p = pending_add(m, &m->cur);
    } else {
        m->pending[p].last_use = m->runs;
    }
    out->new_shape = is_new;
    int eager_now = 0;
    (void)cgr__churn_observe(&m->churn, is_new, &eager_now, &out->churn_tripped,
                             &out->churn_recovered);
    if (out->churn_tripped)
        write_warning(m);
    if (eager_now) {
        /* The record stays (warm-ups not advanced): the guard saw this shape. */
        eager(m, out, CGR__SHAPES_REASON_CHURN, m->warning);
        return CGR_STATUS_OK;
    }

    cgr__shapes_pending *pp = &m->pending[p];
    out->pending = p;
    if (pp->warmups < m->warmup_runs) {
        pp->warmups++;
        out->action = CGR__SHAPES_WARMUP;
        out->warmup_run = pp->warmups;
        m->stats.warmup_runs++;
        return CGR_STATUS_OK;
    }

    out->action = CGR__SHAPES_CAPTURE;
    m->capturing = 1;
    m->cap_pending = p;
    m->offer = CGR__SHAPES_FROM_NONE;
    m->offer_payload = NULL;
    m->offer_index = CGR__CACHE_NONE;
    m->offer_failed = 0;
    if (m->has_spare) {
        m->offer = CGR__SHAPES_FROM_SPARE;
        m->offer_payload = m->spare.payload;
    } else if (m->cache.count == m->cache.max_entries) {
        /* The insert would evict this entry anyway: offer its executable. */
        m->offer = CGR__SHAPES_FROM_LRU;
        m->offer_index = cgr__cache_lru(&m->cache);
        m->offer_payload = m->cache.entries[m->offer_index].payload;
    }
    out->source = m->offer;
    out->payload = m->offer_payload;
    m->stats.capture_attempts++;
    return CGR_STATUS_OK;
}

/* ---- reports ------------------------------------------------------------------------------ */

/* Ends the capture in flight; the warm-up record goes when the shape has a verdict. */
static void end_capture(cgr__shapes *m, int drop_record)
{
    if (drop_record)
        memset(&m->pending[m->cap_pending], 0, sizeof m->pending[0]);
    m->capturing = 0;
    m->cap_pending = CGR__CACHE_NONE;
    m->offer = CGR__SHAPES_FROM_NONE;
    m->offer_payload = NULL;
    m->offer_index = CGR__CACHE_NONE;
    m->offer_failed = 0;
}

static int time_ok(double us)
{
    return us >= 0.0; /* false for NaN too */
}

cgr_status cgr__shapes_capture_done(cgr__shapes *m, const cgr__shapes_capture_result *r,
                                    cgr__shapes_outcome *out)
{
    if (!shapes_ok(m) || r == NULL || out == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!m->capturing)
        return CGR_STATUS_WRONG_STATE;
    if (r->payload == NULL || (r->updated != 0 && r->updated != 1) || !time_ok(r->capture_us) ||
        !time_ok(r->instantiate_us) || !time_ok(r->update_us))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (r->updated && (m->offer == CGR__SHAPES_FROM_NONE || m->offer_failed ||
                       r->payload != m->offer_payload))
        return CGR_STATUS_INVALID_ARGUMENT;

    /* From here on nothing can fail. */
    uint32_t n = 0;
    if (r->updated) {
        if (m->offer == CGR__SHAPES_FROM_SPARE) {
            m->has_spare = 0;
            memset(&m->spare, 0, sizeof m->spare);
        } else {
            /* Its executable now holds the new shape: the old shape leaves the cache. */
            (void)cgr__cache_remove(&m->cache, m->offer_index, NULL);
            m->stats.evictions++;
        }
        m->stats.updates++;
        m->stats.update_us += r->update_us;
    } else {
        m->stats.instantiate_us += r->instantiate_us;
    }
    m->stats.captures++;
    m->stats.capture_us += r->capture_us;

    memset(out, 0, sizeof *out);
    out->cache_index = CGR__CACHE_NONE;
    uint32_t need;
    if (cgr__cache_evictions_needed(&m->cache, r->bytes, &need) == CGR__CACHE_TOO_LARGE) {
        char text[CGR__SHAPES_TEXT_MAX];
        snprintf(text, sizeof text,
                 "its graph needs %zu bytes, more than the graph cache's budget of %zu bytes",
                 r->bytes, m->cache.max_bytes);
        nograph_add(m, CGR__SHAPES_REASON_TOO_LARGE, text);
        cgr__cache_evicted *f = &m->freed[n++];
        memset(f, 0, sizeof *f);
        f->payload = r->payload;
        f->bytes = r->bytes;
        f->step = m->cur.step;
        f->sig_hash = m->cur.hash;
        f->index = CGR__CACHE_NONE;
        m->stats.too_large++;
    } else {
        (void)cgr__cache_insert(&m->cache, &m->cur, r->bytes, r->payload, m->freed,
                                m->cache.max_entries, &n, &out->cache_index);
        out->cached = 1;
        if (m->keep_spare && !m->has_spare && n > 0) {
            /* Keep the first evicted executable back for the next update. */
            m->spare = m->freed[0];
            m->has_spare = 1;
            memmove(&m->freed[0], &m->freed[1], (size_t)(n - 1) * sizeof m->freed[0]);
            n--;
        }
    }
    out->freed = m->freed;
    out->n_freed = n;
    end_capture(m, 1);
    return CGR_STATUS_OK;
}

cgr_status cgr__shapes_capture_failed(cgr__shapes *m, const char *text)
{
    if (!shapes_ok(m))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!m->capturing)
        return CGR_STATUS_WRONG_STATE;
    nograph_add(m, CGR__SHAPES_REASON_CAPTURE_FAILED, text != NULL ? text : "");
    m->stats.capture_failures++;
    end_capture(m, 1);
    return CGR_STATUS_OK;
}

cgr_status cgr__shapes_capture_cancel(cgr__shapes *m)
{
    if (!shapes_ok(m))
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!m->capturing)
        return CGR_STATUS_WRONG_STATE;
    m->stats.capture_cancels++;
    end_capture(m, 0);
    return CGR_STATUS_OK;
}

cgr_status cgr__shapes_update_failed(cgr__shapes *m, int reason, const char *text,
                                     cgr__cache_evicted *victim)
{
    if (!shapes_ok(m) || victim == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (!m->capturing || m->offer == CGR__SHAPES_FROM_NONE || m->offer_failed)
        return CGR_STATUS_WRONG_STATE;
    if (m->offer == CGR__SHAPES_FROM_SPARE) {
        *victim = m->spare;
        m->has_spare = 0;
        memset(&m->spare, 0, sizeof m->spare);
    } else {
        (void)cgr__cache_remove(&m->cache, m->offer_index, victim);
        m->stats.evictions++;
    }
    m->offer_failed = 1;
    uint32_t slot = reason >= 0 && reason < (int)CGR__SHAPES_UPDATE_REASONS - 1
                        ? (uint32_t)reason
                        : CGR__SHAPES_UPDATE_REASONS - 1;
    m->stats.update_failures++;
    m->stats.update_failures_by_reason[slot]++;
    copy_text(m->update_error, sizeof m->update_error, text != NULL ? text : "");
    return CGR_STATUS_OK;
}

cgr_status cgr__shapes_drain(cgr__shapes *m, cgr__cache_evicted *out)
{
    if (!shapes_ok(m) || out == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    if (m->capturing)
        return CGR_STATUS_WRONG_STATE;
    if (cgr__cache_pop_lru(&m->cache, out) == CGR_STATUS_OK)
        return CGR_STATUS_OK;
    if (!m->has_spare)
        return CGR_STATUS_WRONG_STATE;
    *out = m->spare;
    m->has_spare = 0;
    memset(&m->spare, 0, sizeof m->spare);
    return CGR_STATUS_OK;
}

/* ---- reading ------------------------------------------------------------------------------- */

cgr_status cgr__shapes_get_stats(const cgr__shapes *m, cgr__shapes_stats *out)
{
    if (!shapes_ok(m) || out == NULL)
        return CGR_STATUS_INVALID_ARGUMENT;
    *out = m->stats;
    out->evictions += m->cache.counters.evictions;
    out->churn_activations = m->churn.counters.activations;
    out->churn_recoveries = m->churn.counters.recoveries;
    out->entries = m->cache.count;
    out->peak_entries = m->cache.counters.peak_entries;
    out->bytes = m->cache.bytes;
    out->peak_bytes = m->cache.counters.peak_bytes;
    out->spare = (uint32_t)m->has_spare;
    out->spare_bytes = m->has_spare ? m->spare.bytes : 0;
    out->pending = 0;
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_PENDING; i++)
        out->pending += m->pending[i].live;
    out->nograph = 0;
    for (uint32_t i = 0; i < CGR__SHAPES_MAX_NOGRAPH; i++)
        out->nograph += m->nograph[i].live;
    return CGR_STATUS_OK;
}

const cgr__cache *cgr__shapes_cache(const cgr__shapes *m)
{
    return m != NULL ? &m->cache : NULL;
}

const cgr__shapes_nograph *cgr__shapes_nograph_at(const cgr__shapes *m, uint32_t i)
{
    if (!shapes_ok(m) || i >= CGR__SHAPES_MAX_NOGRAPH || !m->nograph[i].live)
        return NULL;
    return &m->nograph[i];
}

const char *cgr__shapes_warning(const cgr__shapes *m)
{
    return m != NULL ? m->warning : "";
}

const char *cgr__shapes_update_error(const cgr__shapes *m)
{
    return m != NULL ? m->update_error : "";
}

const char *cgr__shapes_action_name(cgr__shapes_action a)
{
    switch (a) {
    case CGR__SHAPES_REPLAY: return "replay";
    case CGR__SHAPES_WARMUP: return "warmup";
    case CGR__SHAPES_CAPTURE: return "capture";
    case CGR__SHAPES_EAGER: return "eager";
    }
    return "invalid";
}

const char *cgr__shapes_reason_name(cgr__shapes_reason r)
{
    switch (r) {
    case CGR__SHAPES_REASON_NONE: return "none";
    case CGR__SHAPES_REASON_CHURN: return "churn guard";
    case CGR__SHAPES_REASON_CAPTURE_FAILED: return "capture failed";
    case CGR__SHAPES_REASON_TOO_LARGE: return "too large";
    case CGR__SHAPES_REASONS: break;
    }
    return "invalid";
}
