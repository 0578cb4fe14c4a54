/* cgr-bench's profiler (prof.h) on libcgr's collector (profiler.h).
 *
 * The collector keeps the last window's records, sorted by start with the
 * kernel names resolved (cgr__prof_records), and its start, end and losses
 * (cgr__prof_window). The per-step figures, the top-kernels table and the
 * trace of several windows are computed here from those, with the sums of
 * prof_report.h that the library's profile window uses as well.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, fseeko */

#include "prof.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* prof's own codes must not read as one of the collector's, which pass through. */
#define PROF_NOT_COLLECTORS_(c)                                                            \
    ((int)(c) != (int)CGR__PROF_OK && (int)(c) != (int)CGR__PROF_EINVAL &&                 \
     (int)(c) != (int)CGR__PROF_ECUPTI && (int)(c) != (int)CGR__PROF_ENOMEM &&             \
     (int)(c) != (int)CGR__PROF_ESTATE && (int)(c) != (int)CGR__PROF_EBUSY &&              \
     (int)(c) != (int)CGR__PROF_ENOLIB)
_Static_assert(PROF_NOT_COLLECTORS_(PROF_WTRUNC) && PROF_NOT_COLLECTORS_(PROF_EIO),
               "prof's return codes collide with the collector's");

struct prof {
    cgr__prof *c;          /* the collector */
    char err[256];         /* the last error's message (prof_errmsg) */
    char label[64];        /* the open window's label */
    char last_label[64];   /* the last finished window's label */
    uint64_t last_start;   /* the last finished window's start, ns (CUPTI clock) */

    /* trace: the windows added so far, as JSON events */
    prof_trace_buf trace;
    int torigin_set;
    uint64_t torigin;      /* the first window added starts the timeline */
};

/* Records p's message and returns rc. */
static int set_err(prof *p, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_err(prof *p, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(p->err, sizeof p->err, fmt, ap) < 0)
        p->err[0] = '\0';
    va_end(ap);
    return rc;
}

/* A failure of the collector: its code, and its message as p's. */
static int collector_err(prof *p, int rc)
{
    snprintf(p->err, sizeof p->err, "%s", cgr__prof_errmsg(p->c));
    return rc;
}

const char *prof_errmsg(const prof *p)
{
    return p ? p->err : "prof is NULL";
}

/* The last finished window's records, as the collector keeps them. */
typedef struct window_recs {
    const cgr__prof_rec *recs;
    size_t n;
    const char *const *names;
    size_t n_names;
} window_recs;

/* The last window's records into *w; without a finished window, fn's message. */
static int last_window(prof *p, const char *fn, window_recs *w)
{
    const int rc = cgr__prof_records(p->c, &w->recs, &w->n, &w->names, &w->n_names);
    if (rc != CGR__PROF_OK)
        return set_err(p, rc, "%s: no finished window", fn);
    return PROF_OK;
}

/* ------------------------------------------------------------------ */
/* create / destroy                                                    */

int prof_create(prof **out, char *err, size_t errlen)
{
    if (!out)
        return cgr__prof_create(NULL, 0, err, errlen); /* the collector's refusal and message */
    *out = NULL;
    prof *p = calloc(1, sizeof *p);
    if (!p) {
        if (err && errlen)
            snprintf(err, errlen, "prof_create: out of memory");
        return PROF_ENOMEM;
    }
    const int rc = cgr__prof_create(&p->c, 0, err, errlen);
    if (rc != CGR__PROF_OK) {
        free(p);
        return rc;
    }
    p->trace.out.max_events = PROF_TRACE_MAX_EVENTS;
    p->trace.out.max_bytes = PROF_TRACE_MAX_BYTES;
    *out = p;
    return PROF_OK;
}

void prof_destroy(prof **pp)
{
    if (!pp || !*pp)
        return;
    prof *p = *pp;
    *pp = NULL;
    cgr__prof_destroy(&p->c);
    prof_trace_buf_free(&p->trace);
    free(p);
}

/* ------------------------------------------------------------------ */
/* windows                                                             */

int prof_begin(prof *p, const char *label)
{
    p->err[0] = '\0';
    const int rc = cgr__prof_begin(p->c);
    if (rc != CGR__PROF_OK)
        return collector_err(p, rc);
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    return PROF_OK;
}

int prof_end(prof *p, int steps, prof_window *out)
{
    cgr__prof_window cw;
    window_recs r;

    p->err[0] = '\0';
    if (steps < 1)
        return set_err(p, PROF_EINVAL, "prof_end: steps must be >= 1 (got %d)", steps);
    int rc = cgr__prof_end(p->c, &cw);
    if (rc == CGR__PROF_OK)
        rc = cgr__prof_records(p->c, &r.recs, &r.n, &r.names, &r.n_names);
    if (rc != CGR__PROF_OK)
        return collector_err(p, rc);

    /* Sums, counts and span; the records are sorted by start, as the union needs. */
    cgr__prof_tally t = {0};
    for (size_t i = 0; i < r.n; i++)
        cgr__prof_tally_add(&t, &r.recs[i]);

    prof_window w;
    memset(&w, 0, sizeof w);
    snprintf(w.label, sizeof w.label, "%s", p->label);
    w.steps = steps;
    w.kernel_us = (double)t.ns[CGR__PROF_KERNEL] / 1e3 / steps;
    w.memcpy_us = (double)t.ns[CGR__PROF_MEMCPY] / 1e3 / steps;
    w.memset_us = (double)t.ns[CGR__PROF_MEMSET] / 1e3 / steps;
    w.busy_us = (double)t.busy / 1e3 / steps;
    w.busy_union_us = (double)cgr__prof_tally_union(&t) / 1e3 / steps;
    w.kernels = t.count[CGR__PROF_KERNEL];
    w.memcpys = t.count[CGR__PROF_MEMCPY];
    w.memsets = t.count[CGR__PROF_MEMSET];
    w.kernels_per_step = (double)w.kernels / steps;
    w.memcpys_per_step = (double)w.memcpys / steps;
    w.memsets_per_step = (double)w.memsets / steps;
    w.span_us = r.n > 0 ? (double)(t.last - r.recs[0].start) / 1e3 / steps : 0.0;
    w.window_us = (double)(cw.end - cw.start) / 1e3;
    w.records = r.n;
    w.untimed = cw.untimed;
    w.dropped = cw.dropped;

    memcpy(p->last_label, w.label, sizeof p->last_label);
    p->last_start = cw.start;
    if (out)
        *out = w;
    return PROF_OK;
}

int prof_now(prof *p, uint64_t *ns)
{
    const int rc = cgr__prof_now(p->c, ns);
    return rc == CGR__PROF_OK ? PROF_OK : collector_err(p, rc);
}

int prof_intervals(prof *p, uint64_t *start, uint64_t *end, size_t max, size_t *n)
{
    window_recs r;
    if (!p || !n || (max && (!start || !end)))
        return PROF_EINVAL;
    const int rc = last_window(p, "prof_intervals", &r);
    if (rc != PROF_OK)
        return rc;
    size_t k = r.n < max ? r.n : max;
    for (size_t i = 0; i < k; i++) {
        start[i] = r.recs[i].start;
        end[i] = r.recs[i].end;
    }
    *n = k;
    return PROF_OK;
}

/* ------------------------------------------------------------------ */
/* top kernels                                                         */

int prof_top_kernels(prof *p, prof_kernel_stat *out, int max, int *n)
{
    window_recs r;
    if (n)
        *n = 0;
    if (!p || !n || max < 0 || (max > 0 && !out))
        return PROF_EINVAL;
    const int rc = last_window(p, "prof_top_kernels", &r);
    if (rc != PROF_OK)
        return rc;
    const int k = cgr__prof_rank_kernels(r.recs, r.n, NULL, r.names, r.n_names, out, max);
    if (k < 0)
        return set_err(p, PROF_ENOMEM, "prof_top_kernels: out of memory");
    *n = k;
    return PROF_OK;
}

/* ------------------------------------------------------------------ */
/* Chrome trace (its events written by prof_report.c, as the profile   */
/* window's are)                                                       */

int prof_trace_add(prof *p, const char *label, int pid)
{
    window_recs r;

    if (!p)
        return PROF_EINVAL;
    p->err[0] = '\0';
    int rc = last_window(p, "prof_trace_add", &r);
    if (rc != PROF_OK)
        return rc;
    if (!label || !label[0])
        label = p->last_label[0] ? p->last_label : "window";
    if (!p->torigin_set) {
        p->torigin = p->last_start;
        p->torigin_set = 1;
    }

    rc = prof_trace_buf_add(&p->trace, pid, label, r.recs, r.n, NULL, r.names, r.n_names,
                            p->torigin);
    if (rc < 0)
        return set_err(p, PROF_ENOMEM, "prof_trace_add: out of memory");
    if (rc > 0)
        return set_err(p, PROF_WTRUNC,
                       "prof_trace_add: trace cap reached (%u events or "
                       "%u MiB); %llu events left out in total",
                       (unsigned)PROF_TRACE_MAX_EVENTS, (unsigned)(PROF_TRACE_MAX_BYTES >> 20),
                       (unsigned long long)p->trace.out.left_out);
    return PROF_OK;
}

int prof_trace_write(prof *p, const char *path)
{
    FILE *f;
    int bad;

    if (!p || !path || !path[0])
        return PROF_EINVAL;
    f = fopen(path, "w");
    if (!f)
        return set_err(p, PROF_EIO, "prof_trace_write: cannot open %s for writing", path);
    bad = prof_trace_buf_write(&p->trace, f) != 0;
    if (fclose(f) != 0)
        bad = 1;
    if (bad)
        return set_err(p, PROF_EIO, "prof_trace_write: writing %s failed", path);
    return PROF_OK;
}

/* ------------------------------------------------------------------ */
/* the trace in memory                                                 */

int prof_trace_buf_add(prof_trace_buf *t, int pid, const char *name, const cgr__prof_rec *recs,
                       size_t n, const int32_t *run_of, const char *const *names,
                       size_t n_names, uint64_t origin)
{
    if (!t->out.f) {
        t->out.f = open_memstream(&t->buf, &t->size);
        if (!t->out.f)
            return -1;
    }
    const cgr__prof_trace_out saved = t->out;
    if (cgr__prof_trace_gpu(&t->out, pid, name, recs, n, run_of, names, n_names, origin) == 0)
        return t->out.left_out > saved.left_out;
    /*
     * Take back this call's events, so the trace holds whole windows: the
     * next write goes where they began, and only the bytes counted are
     * written out. A stream that cannot seek back would leave a broken
     * event in the middle of the trace, so then the trace goes.
     */
    clearerr(t->out.f);
    if (fseeko(t->out.f, (off_t)saved.bytes, SEEK_SET) == 0) {
        t->out = saved;
    } else {
        const uint64_t max_events = saved.max_events, max_bytes = saved.max_bytes;
        prof_trace_buf_free(t);
        t->out.max_events = max_events;
        t->out.max_bytes = max_bytes;
    }
    return -1;
}

int prof_trace_buf_write(const prof_trace_buf *t, FILE *f)
{
    int bad = fputs(cgr__prof_trace_head, f) < 0;
    if (!bad && t->out.f) {
        /*
         * A memory stream sets buf and size on a flush; that writes t
         * through the pointers open_memstream took, which is fine: the
         * bytes it holds do not change, and no prof_trace_buf is a const
         * object (prof's lives in calloc'd memory).
         */
        bad = fflush(t->out.f) != 0 || t->size < t->out.bytes ||
              fwrite(t->buf, 1, (size_t)t->out.bytes, f) != (size_t)t->out.bytes;
    }
    bad = bad || fputs(cgr__prof_trace_tail, f) < 0;
    return bad ? -1 : 0;
}

void prof_trace_buf_free(prof_trace_buf *t)
{
    /* A memory stream's fclose only hands over its buffer, freed below;
     * there is nothing to do if it reports a failure. */
    if (t->out.f)
        (void)fclose(t->out.f);
    free(t->buf);
    memset(t, 0, sizeof *t);
}
