/* cgr-bench's profiler (prof.h) on libcgr's collector (profiler.h).
 *
 * The collector gives the last window's records, sorted by start with the
 * kernel names resolved, and its start, end and losses (cgr__prof_window),
 * which prof keeps until the next prof_begin. The per-step figures, the
 * top-kernels table and the trace of several windows are computed here
 * from those, with the sums of prof_report.h that the library's profile
 * window uses as well.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, fseeko */

#include "prof.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* prof's own codes must not read as one of the collector's, which pass through. */
#define PROF_NOT_COLLECTORS_(c)                                                            \
    ((int)(c) != (int)CGR__PROF_OK && (int)(c) != (int)CGR__PROF_ECUPTI &&                 \
     (int)(c) != (int)CGR__PROF_ENOMEM && (int)(c) != (int)CGR__PROF_ESTATE &&             \
     (int)(c) != (int)CGR__PROF_EBUSY && (int)(c) != (int)CGR__PROF_ENOLIB)
_Static_assert(PROF_NOT_COLLECTORS_(PROF_WTRUNC) && PROF_NOT_COLLECTORS_(PROF_EINVAL) &&
                   PROF_NOT_COLLECTORS_(PROF_EIO),
               "prof's return codes collide with the collector's");

struct prof {
    cgr__prof *c;          /* the collector */
    char err[256];         /* the last error's message (prof_errmsg) */
    cgr__prof_window last; /* the last finished window, while have_last */
    int have_last;         /* from a prof_end that succeeded to the next prof_begin
                              that does (the collector then reuses the store) */

    /* trace: the windows added so far, as JSON events */
    prof_trace_buf trace;
    uint64_t torigin;      /* the first window added starts the timeline; 0 before */
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

const char *prof_errmsg(const prof *p)
{
    return p ? p->err : "prof is NULL";
}

/* ------------------------------------------------------------------ */
/* create / destroy                                                    */

int prof_create(prof **out, char *err, size_t errlen)
{
    assert(out);
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

int prof_begin(prof *p)
{
    p->err[0] = '\0';
    const int rc = cgr__prof_begin(p->c);
    if (rc != CGR__PROF_OK)
        return set_err(p, rc, "%s", cgr__prof_errmsg(p->c)); /* the collector's */
    p->have_last = 0; /* the collector's store now fills with the new window's records */
    return PROF_OK;
}

int prof_end(prof *p, int steps, prof_window *out)
{
    p->err[0] = '\0';
    if (steps < 1)
        return set_err(p, PROF_EINVAL, "prof_end: steps must be >= 1 (got %d)", steps);
    const int rc = cgr__prof_end(p->c, &p->last);
    if (rc != CGR__PROF_OK)
        return set_err(p, rc, "%s", cgr__prof_errmsg(p->c)); /* the collector's */
    p->have_last = 1;
    const cgr__prof_window *cw = &p->last;

    /* The records are sorted by start, as the union needs. */
    cgr__prof_tally t = {0};
    for (size_t i = 0; i < cw->n; i++)
        cgr__prof_tally_add(&t, &cw->recs[i]);
    if (out)
        *out = (prof_window){
            .busy_us = (double)t.busy / 1e3 / steps,
            .busy_union_us = (double)cgr__prof_tally_union(&t) / 1e3 / steps,
            .kernel_us = (double)t.ns[CGR__PROF_KERNEL] / 1e3 / steps,
            .kernels_per_step = (double)t.count[CGR__PROF_KERNEL] / steps,
            .memcpys_per_step = (double)t.count[CGR__PROF_MEMCPY] / steps,
            .kernels = t.count[CGR__PROF_KERNEL],
            .memcpys = t.count[CGR__PROF_MEMCPY],
            .memsets = t.count[CGR__PROF_MEMSET],
            .records = cw->n,
            .recs = cw->recs,
            .dropped = cw->dropped,
        };
    return PROF_OK;
}

/* ------------------------------------------------------------------ */
/* top kernels                                                         */

int prof_top_kernels(prof *p, prof_kernel_stat *out, int max, int *n)
{
    assert(n && max >= 0 && (max == 0 || out));
    *n = 0;
    if (!p->have_last)
        return set_err(p, PROF_ESTATE, "prof_top_kernels: no finished window");
    const cgr__prof_window *w = &p->last;
    const int k = cgr__prof_rank_kernels(w->recs, w->n, NULL, w->names, w->n_names, out, max);
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
    p->err[0] = '\0';
    if (!p->have_last)
        return set_err(p, PROF_ESTATE, "prof_trace_add: no finished window");
    const cgr__prof_window *w = &p->last;
    if (!p->torigin)
        p->torigin = w->start; /* CUPTI's clock is never 0 at a window's start */

    const int rc = prof_trace_buf_add(&p->trace, pid, label, w->recs, w->n, NULL, w->names,
                                      w->n_names, p->torigin);
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
    assert(path && path[0]); /* cgr-bench's --trace needs a file name */
    FILE *f = fopen(path, "w");
    if (!f)
        return set_err(p, PROF_EIO, "prof_trace_write: cannot open %s for writing", path);
    int bad = prof_trace_buf_write(&p->trace, f) != 0;
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

int prof_trace_buf_write(prof_trace_buf *t, FILE *f)
{
    int bad = fputs(cgr__prof_trace_head, f) < 0;
    if (!bad && t->out.f) {
        /* The flush sets t->buf and t->size (open_memstream took their addresses). */
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
