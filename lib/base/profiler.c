/* cgr__prof: the CUPTI activity-trace collector of the profile window
 * (replay/profile.c) and of cgr-bench. See profiler.h.
 *
 * Data flow:
 *   CUPTI worker thread --buf_completed()--> p->store and p->links (guarded
 *   by g_lock, filled only while a window is open, the store only with
 *   records that start at or after the window's start) --cgr__prof_end()-->
 *   the same arrays, which the callback no longer touches once the window
 *   is closed, filtered to the window in place, sorted by start, names
 *   resolved --> cgr__prof_window, until the next cgr__prof_begin.
 *   With CGR__PROF_RANGES, cgr's phases (any thread, cgr__prof_phase) and
 *   CUPTI's marker records add range ends to p->marks (g_mark_lock), which
 *   cgr__prof_end joins into ranges in place (cgr__prof_window.ranges).
 *
 * Locking: g_lock guards g_prof and the "shared" part of struct cgr__prof. It is
 * never held while calling api->cuptiActivityFlushAll(), because the flush may run
 * buf_completed() on the calling thread, which takes g_lock.
 */
#define _DEFAULT_SOURCE /* syscall */
#include "profiler.h"

#include <assert.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "dynload.h"
#include "hash.h"

int cgr__prof_phases_on; /* written under g_mark_lock, read by trace.c unlocked */

#if CGR_HAVE_CUPTI

/*
 * Record structs of the CUPTI cgr is built with: CUPTI fills records of
 * its newest layouts for the kinds enabled below. A newer layout only
 * appends fields, so these read right in the records of any CUPTI of the
 * same major version (the one cgr loads): CUDA 12.9's CUPTI, say, writes
 * Memcpy6, whose front is Memcpy5.
 */
#if CUPTI_API_VERSION >= 130000
typedef CUpti_ActivityKernel10 cupti_kernel_rec;
typedef CUpti_ActivityMemcpy6 cupti_memcpy_rec;
#else
typedef CUpti_ActivityKernel9 cupti_kernel_rec;
typedef CUpti_ActivityMemcpy5 cupti_memcpy_rec;
#endif
typedef CUpti_ActivityMemset4 cupti_memset_rec;
typedef CUpti_ActivityMarker2 cupti_marker_rec;

/* CUPTI's functions, loaded by cgr__prof_create (libcgr does not link CUPTI). */
static const cgr__cupti_api *api;

/* libstdc++'s demangler, used only if something else already loaded
 * libstdc++ into the process; we link no demangler ourselves. A weak
 * reference is NULL when the symbol is absent. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
                            int *status)
    __attribute__((weak, visibility("default")));

#define BUF_SIZE ((size_t)8 << 20) /* bytes per CUPTI buffer */
#define BUF_ALIGN 8                /* CUPTI wants 8-byte aligned buffers */
#define POOL_MAX 16                /* buffers kept for reuse (128 MiB) */
#define POOL_PREFILL 4             /* pre-faulted at cgr__prof_create (32 MiB) */
#define NAME_CACHE 4096            /* direct-mapped name-pointer cache */
#define UNKNOWN_NAME_ID 0u         /* names[0] is "<unknown>" */


/* One kernel / memcpy / memset, as kept by cgr__prof (prof_report.h). */
typedef cgr__prof_rec rec;
_Static_assert(sizeof(rec) <= 80, "rec grew: update CGR__PROF_MAX_RECORDS' note");

/* A name and its id: CUPTI's pointer in the cache, an interned copy in the hash table. */
struct name_slot {
    const char *name;
    uint32_t id;
};

struct cgr__prof {
    char err[256];

    /* ---- shared with the CUPTI callback: guarded by g_lock while a
     *      window is open; the API thread's alone once it is closed ---- */
    rec *store;               /* closed: the last window's records */
    size_t store_n, store_cap;
    int collecting;           /* store records only inside a window */
    uint64_t store_dropped;   /* cap / OOM / bad buffers; CUPTI's own at the end */
    uint64_t t0;              /* window start, ns: earlier records are
                                 dropped by the callback (written under
                                 g_lock by cgr__prof_begin only) */
    cgr__prof_link *links;    /* EXTERNAL_CORRELATION records of the window */
    size_t links_n, links_cap;

    /* ---- host ranges' ends: guarded by g_mark_lock; joined at end ---- */
    cgr__prof_range *marks;   /* CGR__PROF_MAX_MARKS of them, or NULL */
    size_t marks_n;
    uint64_t marks_dropped;

    /* ---- API thread only ---- */
    unsigned flags;           /* CGR__PROF_CORRELATE, CGR__PROF_RANGES */

    /* interned kernel names: by id for display, by CUPTI's text in htab */
    char **disp;
    size_t names_n, names_cap;
    struct name_slot *htab;   /* open addressing; name NULL: empty */
    size_t hcap;              /* power of two */
    struct name_slot cache[NAME_CACHE];
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cgr__prof *g_prof; /* guarded by g_lock */
/*
 * A capture diagnosis watching the API (capture/watch.c), guarded by
 * g_lock. It ends with cuptiFinalize(), which would cut a profiler's
 * collection short, so the two never overlap.
 */
static int g_watching;
/*
 * The marks have a lock of their own, so that cgr's phases never wait for
 * the callback's walk of a buffer (g_lock). Order: g_lock, then g_mark_lock.
 */
static pthread_mutex_t g_mark_lock = PTHREAD_MUTEX_INITIALIZER;
static cgr__prof *g_marking; /* guarded by g_mark_lock: the window cgr's phases go to */

/*
 * The activity kinds enabled, by the flag that asks for them (0: always).
 * External correlation records are made only for API calls that CUPTI
 * records, so CGR__PROF_CORRELATE takes the runtime and driver API kinds
 * too (kernels launched through either are then tagged).
 */
static const struct {
    CUpti_ActivityKind kind;
    unsigned flag;
} k_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 0},
    {CUPTI_ACTIVITY_KIND_MEMCPY, 0},
    {CUPTI_ACTIVITY_KIND_MEMSET, 0},
    {CUPTI_ACTIVITY_KIND_RUNTIME, CGR__PROF_CORRELATE},
    {CUPTI_ACTIVITY_KIND_DRIVER, CGR__PROF_CORRELATE},
    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CGR__PROF_CORRELATE},
};
#define N_KINDS (sizeof k_kinds / sizeof k_kinds[0])
#define KIND_ON(i, flags) (!k_kinds[i].flag || ((flags) & k_kinds[i].flag))

/* ------------------------------------------------------------------ */
/* errors                                                              */

/* Writes the message to dst, when the caller gave one, and returns rc. */
static int fail(char *dst, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *dst, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (dst && len && vsnprintf(dst, len, fmt, ap) < 0)
        dst[0] = '\0';
    va_end(ap);
    return rc;
}

/* Records p's message and returns rc. */
#define set_err(p, rc, ...) fail((p)->err, sizeof (p)->err, (rc), __VA_ARGS__)

static const char *cupti_hint(CUptiResult r)
{
    switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_OPERATION:
        return " (is another profiler attached, e.g. nsys, ncu or a "
               "CUDA_INJECTION64_PATH tool?)";
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE:
        return " (is the driver older than this CUPTI / CUDA toolkit?)";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return " (profiling is restricted on this machine)";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
#if CUPTI_API_VERSION >= 26 /* CUDA 12.8 */
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
#endif
        return " (tracing is not supported on this device / setup)";
    default:
        return "";
    }
}

/* Records a CUPTI failure and returns CGR__PROF_ECUPTI. */
static int cupti_fail(char *dst, size_t len, const char *what, CUptiResult r)
{
    const char *s = NULL;
    if (!api || api->cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s)
        s = "unknown CUPTI error";
    return fail(dst, len, CGR__PROF_ECUPTI, "%s failed: %s (%d)%s", what, s, (int)r,
                cupti_hint(r));
}

const char *cgr__prof_errmsg(const cgr__prof *p)
{
    return p ? p->err : "cgr__prof is NULL";
}

/* ------------------------------------------------------------------ */
/* CUPTI buffer callbacks (may run on CUPTI's worker thread)           */

/*
 * The array a of *cap elements of size bytes, reallocated to twice as many
 * (first when empty), at most CGR__PROF_MAX_RECORDS; *cap is updated. NULL,
 * with a and *cap unchanged, when it is at the cap or out of memory.
 */
static void *grow(void *a, size_t *cap, size_t size, size_t first)
{
    size_t ncap = *cap ? *cap * 2 : first;
    if (ncap > CGR__PROF_MAX_RECORDS)
        ncap = CGR__PROF_MAX_RECORDS;
    void *n = ncap > *cap ? realloc(a, ncap * size) : NULL;
    if (n)
        *cap = ncap;
    return n;
}

static void store_push(cgr__prof *p, const rec *r)
{
    if (p->store_n == p->store_cap) {
        rec *n = grow(p->store, &p->store_cap, sizeof *n, 65536);
        if (!n) {
            p->store_dropped++;
            return;
        }
        p->store = n;
    }
    p->store[p->store_n++] = *r;
}

/* The window's links, bounded like the store. A link lost to memory leaves
 * its records outside the runs (by time when no link was kept at all), so it
 * is counted with the records lost: the report says the figures miss work. */
static void link_push(cgr__prof *p, uint32_t correlation, uint64_t id)
{
    if (p->links_n == p->links_cap) {
        cgr__prof_link *n = grow(p->links, &p->links_cap, sizeof *n, 4096);
        if (!n) {
            p->store_dropped++;
            return;
        }
        p->links = n;
    }
    p->links[p->links_n].correlation = correlation;
    p->links[p->links_n].run = id > UINT32_MAX ? UINT32_MAX : (uint32_t)id;
    p->links_n++;
}

/* Appends a range's end to p's window (g_mark_lock held); past the cap it is counted. */
static void mark_push(cgr__prof *p, uint64_t ts, uint32_t tid, uint32_t id, int what, int user,
                      const char *name)
{
    if (!p->marks || p->marks_n == CGR__PROF_MAX_MARKS) {
        p->marks_dropped++;
        return;
    }
    cgr__prof_range *m = &p->marks[p->marks_n];
    *m = (cgr__prof_range){.start = ts, .tid = tid, .id = id, .seq = (uint32_t)p->marks_n++,
                           .what = (uint8_t)what, .user = (uint8_t)user};
    if (name)
        snprintf(m->name, sizeof m->name, "%s", name);
}

void cgr__prof_phase(const char *name)
{
    static _Thread_local uint32_t tid; /* the OS thread id, as CUPTI's marker records give it */
    uint64_t ts;
    if (!tid)
        tid = (uint32_t)syscall(SYS_gettid);
    (void)pthread_mutex_lock(&g_mark_lock);
    /* Under the lock: a window that closes meanwhile stops this before it detaches CUPTI. */
    if (g_marking && api->cuptiGetTimestamp(&ts) == CUPTI_SUCCESS)
        mark_push(g_marking, ts, tid, 0, name ? CGR__PROF_RANGE_START : CGR__PROF_RANGE_END, 0,
                  name);
    else if (g_marking)
        g_marking->marks_dropped++;
    (void)pthread_mutex_unlock(&g_mark_lock);
}

/* Starts (on: with no marks) or stops taking cgr's phases into p's window. */
static void phases(cgr__prof *p, int on)
{
    (void)pthread_mutex_lock(&g_mark_lock);
    if (on) {
        p->marks_n = 0;
        p->marks_dropped = 0;
    }
    g_marking = on ? p : NULL; /* one cgr__prof at a time: none other can be marking */
    __atomic_store_n(&cgr__prof_phases_on, on, __ATOMIC_RELAXED);
    (void)pthread_mutex_unlock(&g_mark_lock);
}

static uint16_t clamp_u16(int32_t v)
{
    return v < 0 ? 0 : v > 65535 ? 65535 : (uint16_t)v;
}

static void take_record(cgr__prof *p, const CUpti_Activity *a)
{
    rec r;
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const cupti_kernel_rec *k = (const cupti_kernel_rec *)(const void *)a;
        int64_t smem = (int64_t)k->staticSharedMemory + (int64_t)k->dynamicSharedMemory;
        r = (rec){.kind = CGR__PROF_KERNEL, .start = k->start, .end = k->end,
                  .cupti_name = k->name, .stream = k->streamId,
                  .grid = {k->gridX, k->gridY, k->gridZ},
                  .block = {clamp_u16(k->blockX), clamp_u16(k->blockY), clamp_u16(k->blockZ)},
                  .regs = k->registersPerThread,
                  .smem = smem < 0 ? 0 : smem > UINT32_MAX ? UINT32_MAX : (uint32_t)smem,
                  .graph_id = k->graphId, .correlation = k->correlationId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const cupti_memcpy_rec *m = (const cupti_memcpy_rec *)(const void *)a;
        r = (rec){.kind = CGR__PROF_MEMCPY, .start = m->start, .end = m->end,
                  .bytes = m->bytes, .stream = m->streamId, .copy_kind = m->copyKind,
                  .graph_id = m->graphId, .correlation = m->correlationId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const cupti_memset_rec *m = (const cupti_memset_rec *)(const void *)a;
        r = (rec){.kind = CGR__PROF_MEMSET, .start = m->start, .end = m->end,
                  .bytes = m->bytes, .stream = m->streamId, .graph_id = m->graphId,
                  .correlation = m->correlationId};
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x =
            (const CUpti_ActivityExternalCorrelation *)(const void *)a;
        if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            link_push(p, x->correlationId, x->externalId);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const cupti_marker_rec *m = (const cupti_marker_rec *)(const void *)a;
        const unsigned f = (unsigned)m->flags;
        const int what = f & CUPTI_ACTIVITY_FLAG_MARKER_START           ? CGR__PROF_RANGE_START
                         : f & CUPTI_ACTIVITY_FLAG_MARKER_END           ? CGR__PROF_RANGE_END
                         : f & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS ? CGR__PROF_RANGE_MARK
                                                                        : 0;
        /* Not sync markers; not cgr's own ranges, which cgr__prof_phase has first-hand. */
        if (!what || m->timestamp < p->t0 ||
            (m->domain && strcmp(m->domain, CGR__PROF_NVTX_DOMAIN) == 0))
            return;
        (void)pthread_mutex_lock(&g_mark_lock);
        mark_push(p, m->timestamp,
                  m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0,
                  m->id, what, 1, m->name);
        (void)pthread_mutex_unlock(&g_mark_lock);
        return;
    }
    default:
        return; /* a kind someone else enabled: not ours */
    }
    /* Work that started before the window is not the window's, nor is a
     * record CUPTI could not time (start 0). */
    if (r.start < p->t0)
        return;
    store_push(p, &r);
}

/* Buffer pool. A flush hands CUPTI's current buffer back, so the first
 * record after it needs a new one, and CUPTI asks for it inside the launch
 * call. A fresh allocation each time (mmap + page faults) makes that launch
 * stall for milliseconds; buffers pre-faulted at cgr__prof_create and
 * recycled take most of the stall away (the rest is CUPTI's own, see
 * cgr__prof_begin; docs/benchmarks.md, "CUPTI attached slows every later
 * launch"). The pool has its own lock, never held while calling CUPTI. */
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static void *g_pool[POOL_MAX]; /* guarded by g_pool_lock */
static int g_pool_n;           /* guarded by g_pool_lock */
static int g_pool_on;          /* guarded by g_pool_lock: keep returns */

static void *pool_get(void)
{
    void *b = NULL;
    (void)pthread_mutex_lock(&g_pool_lock);
    if (g_pool_n > 0)
        b = g_pool[--g_pool_n];
    (void)pthread_mutex_unlock(&g_pool_lock);
    return b ? b : aligned_alloc(BUF_ALIGN, BUF_SIZE);
}

static void pool_put(void *b)
{
    if (!b)
        return;
    (void)pthread_mutex_lock(&g_pool_lock);
    if (g_pool_on && g_pool_n < POOL_MAX) {
        g_pool[g_pool_n++] = b;
        b = NULL;
    }
    (void)pthread_mutex_unlock(&g_pool_lock);
    free(b);
}

/* Turns the pool on and fills it with POOL_PREFILL pre-faulted buffers
 * (best effort: a failed allocation only means a slower first request). */
static void pool_start(void)
{
    (void)pthread_mutex_lock(&g_pool_lock);
    g_pool_on = 1;
    (void)pthread_mutex_unlock(&g_pool_lock);
    for (int i = 0; i < POOL_PREFILL; i++) {
        void *b = aligned_alloc(BUF_ALIGN, BUF_SIZE);
        if (!b)
            break;
        memset(b, 0, BUF_SIZE);
        pool_put(b);
    }
}

/* Turns the pool off and frees its buffers; buffers CUPTI returns later
 * are freed by pool_put. */
static void pool_stop(void)
{
    void *bufs[POOL_MAX];
    int i, n;
    (void)pthread_mutex_lock(&g_pool_lock);
    g_pool_on = 0;
    n = g_pool_n;
    for (i = 0; i < n; i++)
        bufs[i] = g_pool[i];
    g_pool_n = 0;
    (void)pthread_mutex_unlock(&g_pool_lock);
    for (i = 0; i < n; i++)
        free(bufs[i]);
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size,
                                   size_t *max_records)
{
    void *b = pool_get();
    *buffer = b;          /* NULL: CUPTI drops records and counts them */
    *size = b ? BUF_SIZE : 0;
    *max_records = 0;     /* as many as fit */
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream_id,
                                   uint8_t *buffer, size_t size,
                                   size_t valid)
{
    cgr__prof *p;

    /* CUPTI's own count of records it could not store is read at the window's end. */
    (void)pthread_mutex_lock(&g_lock);
    p = g_prof;
    if (p && p->collecting) {
        if (buffer && valid > 0) {
            CUpti_Activity *a = NULL;
            for (;;) {
                CUptiResult r = api->cuptiActivityGetNextRecord(buffer, valid, &a);
                if (r == CUPTI_ERROR_MAX_LIMIT_REACHED)
                    break;
                if (r != CUPTI_SUCCESS || !a) {
                    /* incomplete or invalid record: the rest of the buffer
                     * cannot be walked; count the loss (at least one). */
                    p->store_dropped++;
                    break;
                }
                take_record(p, a);
            }
        }
    }
    (void)pthread_mutex_unlock(&g_lock);
    pool_put(buffer);
}

/* ------------------------------------------------------------------ */
/* kernel names                                                        */

static size_t name_hash(const char *s)
{
    return (size_t)cgr__fnv1a(s, strlen(s));
}

/* Display name: demangled if the name is mangled C++ and a demangler is in
 * the process, else a copy of the raw name. */
static char *display_name(const char *raw)
{
    if (raw[0] == '_' && raw[1] == 'Z' && __cxa_demangle) {
        int status = -1;
        char *d = __cxa_demangle(raw, NULL, NULL, &status);
        if (d && status == 0)
            return d; /* malloc'd by the demangler */
        free(d);
    }
    return strdup(raw);
}

static int htab_grow(cgr__prof *p)
{
    size_t ncap = p->hcap ? p->hcap * 2 : 256;
    struct name_slot *t = calloc(ncap, sizeof *t);
    if (!t)
        return CGR__PROF_ENOMEM;
    for (size_t i = 0; i < p->hcap; i++) {
        if (!p->htab[i].name)
            continue;
        size_t j = name_hash(p->htab[i].name) & (ncap - 1);
        while (t[j].name)
            j = (j + 1) & (ncap - 1);
        t[j] = p->htab[i];
    }
    free(p->htab);
    p->htab = t;
    p->hcap = ncap;
    return CGR__PROF_OK;
}

/* Interns name (by content) and returns its id in *id. */
static int intern(cgr__prof *p, const char *name, uint32_t *id)
{
    if ((p->names_n + 1) * 2 > p->hcap && htab_grow(p) != CGR__PROF_OK)
        return CGR__PROF_ENOMEM;
    size_t j = name_hash(name) & (p->hcap - 1);
    for (; p->htab[j].name; j = (j + 1) & (p->hcap - 1)) {
        if (strcmp(p->htab[j].name, name) == 0) {
            *id = p->htab[j].id;
            return CGR__PROF_OK;
        }
    }
    if (p->names_n == p->names_cap) {
        char **n = grow(p->disp, &p->names_cap, sizeof *n, 64);
        if (!n)
            return CGR__PROF_ENOMEM;
        p->disp = n;
    }
    char *raw = strdup(name);
    char *disp = raw ? display_name(name) : NULL;
    if (!raw || !disp) {
        free(raw);
        free(disp);
        return CGR__PROF_ENOMEM;
    }
    p->htab[j] = (struct name_slot){.name = raw, .id = (uint32_t)p->names_n};
    p->disp[p->names_n] = disp;
    *id = (uint32_t)p->names_n++;
    return CGR__PROF_OK;
}

/* CUPTI shares one name string among all records of a kernel, so a cache
 * keyed by the pointer avoids hashing long (templated) names per record.
 * The cache is cleared every window, so a pointer reused after a module
 * unload cannot map to a stale name across windows. */
static int resolve_name(cgr__prof *p, const char *cname, uint32_t *id)
{
    struct name_slot *s;
    int rc;
    if (!cname || !cname[0]) {
        *id = UNKNOWN_NAME_ID;
        return CGR__PROF_OK;
    }
    s = &p->cache[((uintptr_t)cname >> 3) % NAME_CACHE];
    if (s->name == cname) {
        *id = s->id;
        return CGR__PROF_OK;
    }
    rc = intern(p, cname, id);
    if (rc != CGR__PROF_OK)
        return rc;
    *s = (struct name_slot){.name = cname, .id = *id};
    return CGR__PROF_OK;
}

/* ------------------------------------------------------------------ */
/* create / destroy                                                    */

static void free_all(cgr__prof *p)
{
    free(p->store);
    free(p->links);
    free(p->marks);
    for (size_t i = 0; i < p->hcap; i++)
        free((char *)p->htab[i].name);
    for (size_t i = 0; i < p->names_n; i++)
        free(p->disp[i]);
    free(p->disp);
    free(p->htab);
    free(p);
}

/*
 * The detach's state: 0 none, DETACH_PENDING while it waits for a runtime
 * API exit, DETACH_RUNNING while one thread runs cuptiFinalize,
 * DETACH_DONE after. A profiler and a watch never exist at once
 * (g_watching), and each keeps its claim until its detach has returned, so
 * one detach at a time uses it.
 */
enum { DETACH_PENDING = 1, DETACH_RUNNING, DETACH_DONE };
static int g_detach;

/*
 * Takes the pending detach (one thread does) and makes it. CUPTI's
 * functions come from the loader, not from `api`: a watch detaches in a
 * process where no profiler has set that.
 */
static void detach_now(void)
{
    int want = DETACH_PENDING;
    if (!__atomic_compare_exchange_n(&g_detach, &want, DETACH_RUNNING, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    (void)cgr__cupti()->cuptiFinalize();
    __atomic_store_n(&g_detach, DETACH_DONE, __ATOMIC_RELEASE);
}

/*
 * Only at a runtime call's exit: a driver call's exit may lie inside a
 * runtime call, whose own exit callback could then find CUPTI torn down.
 */
static void CUPTIAPI on_detach_call(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                    const void *data)
{
    const CUpti_CallbackData *cb = data;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cb->callbackSite == CUPTI_API_EXIT &&
        __atomic_load_n(&g_detach, __ATOMIC_ACQUIRE) == DETACH_PENDING)
        detach_now();
}

void cgr__cupti_detach(void)
{
    const cgr__cupti_api *cu = cgr__cupti(); /* loaded: whoever attached CUPTI loaded it */
    CUpti_SubscriberHandle sub = NULL;
    if (cu->cuptiSubscribe(&sub, on_detach_call, NULL) != CUPTI_SUCCESS ||
        cu->cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS) {
        /* Another subscriber holds CUPTI (docs/wrapping.md asks programs with
         * their own CUPTI to leave cgr's off): detach from here. */
        if (sub)
            (void)cu->cuptiUnsubscribe(sub);
        (void)cu->cuptiFinalize();
        return;
    }
    /* cuptiFinalize ends the subscription with everything else. */
    __atomic_store_n(&g_detach, DETACH_PENDING, __ATOMIC_RELEASE);
    int device = 0;
    (void)cudaGetDevice(&device); /* its exit detaches, unless another thread's came first */
    /* No callback came (none should fail to): detach from here all the same. */
    detach_now();
    /* Another thread's callback may still be inside cuptiFinalize. */
    while (__atomic_load_n(&g_detach, __ATOMIC_ACQUIRE) != DETACH_DONE)
        sched_yield();
    __atomic_store_n(&g_detach, 0, __ATOMIC_RELEASE);
}

/*
 * Hands back the buffers CUPTI holds and detaches CUPTI from the process:
 * a process that keeps CUPTI's activity tracing attached pays more host
 * time in every later launch (capture/watch.c has the figure).
 */
static void detach(unsigned flags)
{
    for (size_t i = 0; i < N_KINDS; i++)
        if (KIND_ON(i, flags))
            (void)api->cuptiActivityDisable(k_kinds[i].kind); /* best effort on teardown */
    if (flags & CGR__PROF_RANGES)
        (void)api->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MARKER);
    (void)api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cgr__cupti_detach();
}

int cgr__prof_watch_begin(void)
{
    (void)pthread_mutex_lock(&g_lock);
    const int ok = !g_prof && !g_watching;
    g_watching |= ok;
    (void)pthread_mutex_unlock(&g_lock);
    return ok;
}

void cgr__prof_watch_end(void)
{
    (void)pthread_mutex_lock(&g_lock);
    g_watching = 0;
    (void)pthread_mutex_unlock(&g_lock);
}

int cgr__prof_create(cgr__prof **out, unsigned flags, char *err, size_t errlen)
{
    uint32_t ver = 0;
    CUptiResult r;
    cgr__prof *p;
    uint32_t id;

    assert(out && !(flags & ~(unsigned)(CGR__PROF_CORRELATE | CGR__PROF_RANGES)));
    if (err && errlen)
        err[0] = '\0';
    *out = NULL;
    if (cgr__cupti_load("profiling") != CGR_STATUS_OK)
        return fail(err, errlen, CGR__PROF_ENOLIB, "%s", cgr_last_error());
    api = cgr__cupti();

    r = api->cuptiGetVersion(&ver);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(err, errlen, "cuptiGetVersion", r);
    /* The record structs above are those of the headers' CUPTI major
     * version; a libcupti of another major could lay records out
     * differently. */
    if (ver / 10000 != CUPTI_API_VERSION / 10000)
        return fail(err, errlen, CGR__PROF_ECUPTI,
                    "libcupti API version %u does not match the headers' "
                    "%u: build and run with the same CUDA toolkit major "
                    "version",
                    (unsigned)ver, (unsigned)CUPTI_API_VERSION);

    p = calloc(1, sizeof *p);
    if (!p)
        return fail(err, errlen, CGR__PROF_ENOMEM, "cgr__prof_create: out of memory");
    p->flags = flags;
    if (intern(p, "<unknown>", &id) != CGR__PROF_OK) {
        free_all(p);
        return fail(err, errlen, CGR__PROF_ENOMEM, "cgr__prof_create: out of memory");
    }
    assert(id == UNKNOWN_NAME_ID); /* the first name interned */

    (void)pthread_mutex_lock(&g_lock);
    if (g_prof || g_watching) {
        (void)pthread_mutex_unlock(&g_lock);
        free_all(p);
        return fail(err, errlen, CGR__PROF_EBUSY, "cgr__prof_create: %s",
                    g_prof ? "a profiler already exists in this process (CUPTI allows one "
                             "set of buffer callbacks)"
                           : "a capture diagnosis is watching the CUDA API");
    }
    g_prof = p; /* collecting == 0: callbacks ignore records for now */
    (void)pthread_mutex_unlock(&g_lock);
    pool_start();

    r = api->cuptiActivityRegisterCallbacks(buf_requested, buf_completed);
    if (r != CUPTI_SUCCESS) {
        cupti_fail(err, errlen, "cuptiActivityRegisterCallbacks", r);
        goto fail;
    }
    for (size_t i = 0; i < N_KINDS; i++) {
        r = KIND_ON(i, flags) ? api->cuptiActivityEnable(k_kinds[i].kind) : CUPTI_SUCCESS;
        if (r != CUPTI_SUCCESS) {
            char what[64];
            snprintf(what, sizeof what, "cuptiActivityEnable(kind %d)", (int)k_kinds[i].kind);
            cupti_fail(err, errlen, what, r);
            goto fail;
        }
    }
    if (flags & CGR__PROF_RANGES) {
        /* All at once, so the hot path never allocates; the pages are touched only as used.
         * Without them every end is counted as dropped. */
        p->marks = malloc(CGR__PROF_MAX_MARKS * sizeof *p->marks);
        /* Best effort, both: the user's ranges are an extra, and a marker
         * record with another kind of thread id only names its track apart
         * from cgr's phases of the same thread. */
        (void)api->cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
        (void)api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    }
    *out = p;
    return CGR__PROF_OK;

fail:
    detach(flags);
    /* The pool before the claim: once g_prof is NULL, another profiler may start its own. */
    pool_stop();
    (void)pthread_mutex_lock(&g_lock);
    g_prof = NULL;
    (void)pthread_mutex_unlock(&g_lock);
    free_all(p);
    return CGR__PROF_ECUPTI;
}

void cgr__prof_destroy(cgr__prof **pp)
{
    cgr__prof *p;
    if (!pp || !*pp)
        return;
    p = *pp;
    *pp = NULL;
    phases(p, 0); /* before CUPTI is detached: cgr__prof_phase calls it */
    /* With collecting == 0 (or g_prof cleared below) the records still
     * in CUPTI's buffers are discarded. Best effort. */
    (void)pthread_mutex_lock(&g_lock);
    p->collecting = 0;
    (void)pthread_mutex_unlock(&g_lock);
    detach(p->flags);
    pool_stop(); /* before the claim is given up, as in cgr__prof_create */
    (void)pthread_mutex_lock(&g_lock);
    assert(g_prof == p); /* cgr__prof_create succeeded: p is the one profiler */
    g_prof = NULL;
    (void)pthread_mutex_unlock(&g_lock);
    free_all(p);
}

/* ------------------------------------------------------------------ */
/* windows                                                             */

int cgr__prof_begin(cgr__prof *p)
{
    CUptiResult r;
    size_t d = 0;
    uint64_t t0 = 0;

    p->err[0] = '\0';

    /* A second begin without end restarts the window. */
    (void)pthread_mutex_lock(&g_lock);
    p->collecting = 0;
    (void)pthread_mutex_unlock(&g_lock);
    phases(p, 0);

    /* No flush (profiler.h says why): the callback drops earlier records by
     * their start. Reading CUPTI's dropped count resets it for this window. */
    r = api->cuptiActivityGetNumDroppedRecords(NULL, 0, &d);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(p->err, sizeof p->err,
                          "cuptiActivityGetNumDroppedRecords", r);

    r = api->cuptiGetTimestamp(&t0);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(p->err, sizeof p->err, "cuptiGetTimestamp", r);

    (void)pthread_mutex_lock(&g_lock);
    p->t0 = t0;
    p->store_n = 0;
    p->store_dropped = 0;
    p->links_n = 0;
    p->collecting = 1;
    phases(p, (p->flags & CGR__PROF_RANGES) != 0); /* with the store, so no marker is lost */
    (void)pthread_mutex_unlock(&g_lock);
    return CGR__PROF_OK;
}

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

int cgr__prof_end(cgr__prof *p, cgr__prof_window *out)
{
    CUptiResult r;
    size_t d = 0, i, n;
    uint64_t t1 = 0, dropped;
    int rc = CGR__PROF_OK;

    p->err[0] = '\0';
    /* collecting is written by this thread only, so it can be read unlocked. */
    if (!p->collecting)
        return set_err(p, CGR__PROF_ESTATE,
                       "cgr__prof_end: no window open (call cgr__prof_begin first)");
    phases(p, 0);

    r = api->cuptiGetTimestamp(&t1);
    if (r != CUPTI_SUCCESS)
        rc = cupti_fail(p->err, sizeof p->err, "cuptiGetTimestamp", r);
    if (rc == CGR__PROF_OK) {
        r = api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        if (r != CUPTI_SUCCESS)
            rc = cupti_fail(p->err, sizeof p->err, "cuptiActivityFlushAll", r);
    }
    if (rc == CGR__PROF_OK) {
        r = api->cuptiActivityGetNumDroppedRecords(NULL, 0, &d);
        if (r != CUPTI_SUCCESS)
            rc = cupti_fail(p->err, sizeof p->err,
                            "cuptiActivityGetNumDroppedRecords", r);
    }

    /* Stop collecting: from here on the store and the links are this thread's alone. */
    (void)pthread_mutex_lock(&g_lock);
    p->collecting = 0;
    dropped = p->store_dropped + d;
    (void)pthread_mutex_unlock(&g_lock);

    if (rc != CGR__PROF_OK)
        return rc;

    /* Keep the timed records that start inside the window (the callback
     * dropped those that start before it). */
    n = 0;
    for (i = 0; i < p->store_n; i++) {
        const rec *x = &p->store[i];
        if (x->end >= x->start && x->start <= t1)
            p->store[n++] = *x;
    }
    p->store_n = n;
    if (n > 1)
        qsort(p->store, n, sizeof *p->store, cmp_rec);

    /* Names: resolve CUPTI's pointers now, while they are surely valid. */
    memset(p->cache, 0, sizeof p->cache);
    for (i = 0; i < n; i++) {
        rec *x = &p->store[i];
        if (x->kind != CGR__PROF_KERNEL)
            continue;
        if (resolve_name(p, x->cupti_name, &x->name_id) != CGR__PROF_OK)
            return set_err(p, CGR__PROF_ENOMEM,
                           "cgr__prof_end: out of memory interning kernel names");
        x->cupti_name = NULL; /* not used past this point */
    }

    *out = (cgr__prof_window){.start = p->t0, .dropped = dropped, .recs = p->store, .n = n,
                              .names = (const char *const *)p->disp, .n_names = p->names_n,
                              .links = p->links, .n_links = p->links_n, .ranges = p->marks};
    /* The host ranges, now that nothing adds to marks; out of memory only leaves them out. */
    if (cgr__prof_pair_ranges(p->marks, p->marks_n, &out->n_ranges, &out->ranges_open) != 0)
        p->marks_dropped += p->marks_n;
    out->ranges_dropped = p->marks_dropped;
    return CGR__PROF_OK;
}

int cgr__prof_now(cgr__prof *p, uint64_t *ns)
{
    CUptiResult r = api->cuptiGetTimestamp(ns);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(p->err, sizeof p->err, "cuptiGetTimestamp", r);
    return CGR__PROF_OK;
}

/* ------------------------------------------------------------------ */
/* memcpy kinds                                                        */

/* prof_report.c names memcpys by these values of CUpti_ActivityMemcpyKind. */
_Static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN == 0 && CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == 1 &&
                   CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == 2 && CUPTI_ACTIVITY_MEMCPY_KIND_HTOA == 3 &&
                   CUPTI_ACTIVITY_MEMCPY_KIND_ATOH == 4 && CUPTI_ACTIVITY_MEMCPY_KIND_ATOA == 5 &&
                   CUPTI_ACTIVITY_MEMCPY_KIND_ATOD == 6 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOA == 7 &&
                   CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == 8 && CUPTI_ACTIVITY_MEMCPY_KIND_HTOH == 9 &&
                   CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10,
               "CUPTI renumbered its memcpy kinds: update copy_names in prof_report.c");

/* ------------------------------------------------------------------ */
/* tags                                                                */

int cgr__prof_push(cgr__prof *p, uint64_t id)
{
    CUptiResult r =
        api->cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(p->err, sizeof p->err, "cuptiActivityPushExternalCorrelationId", r);
    return CGR__PROF_OK;
}

int cgr__prof_pop(cgr__prof *p)
{
    uint64_t last = 0;
    CUptiResult r =
        api->cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    if (r != CUPTI_SUCCESS)
        return cupti_fail(p->err, sizeof p->err, "cuptiActivityPopExternalCorrelationId", r);
    return CGR__PROF_OK;
}

#else /* !CGR_HAVE_CUPTI */

/*
 * Built without CUPTI's headers: every call says so, and nothing else
 * changes (the profile window reports the failure and the runs go on).
 */
int cgr__prof_create(cgr__prof **out, unsigned flags, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (err && errlen)
        snprintf(err, errlen, "cgr was built without CUPTI's headers (cupti.h), which "
                              "profiling needs; rebuild with the CUDA toolkit's CUPTI");
    return CGR__PROF_ENOLIB;
}

void cgr__prof_destroy(cgr__prof **p)
{
    if (p)
        *p = NULL;
}

int cgr__prof_begin(cgr__prof *p)
{
    return CGR__PROF_ENOLIB;
}

int cgr__prof_end(cgr__prof *p, cgr__prof_window *out)
{
    return CGR__PROF_ENOLIB;
}

int cgr__prof_now(cgr__prof *p, uint64_t *ns)
{
    return CGR__PROF_ENOLIB;
}

int cgr__prof_push(cgr__prof *p, uint64_t id)
{
    return CGR__PROF_ENOLIB;
}

int cgr__prof_pop(cgr__prof *p)
{
    return CGR__PROF_ENOLIB;
}

void cgr__prof_phase(const char *name)
{
}

const char *cgr__prof_errmsg(const cgr__prof *p)
{
    return "cgr was built without CUPTI";
}

#endif /* CGR_HAVE_CUPTI */
