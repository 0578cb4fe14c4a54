#include "trace.h"

#include <pthread.h>

#include "profiler.h"

/*
 * The NVTX v3 header casts dlsym's object pointer to a function pointer,
 * which ISO C (-Wpedantic) rejects; it is fine on every platform CUDA
 * supports, so the warning is silenced for this one include.
 */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <nvtx3/nvToolsExt.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/*
 * cgr's ranges are in an NVTX domain of their own: Nsight shows them apart
 * from the program's, and the profile window, which records them
 * first-hand, leaves CUPTI's copies of them out.
 */
static nvtxDomainHandle_t domain;
static pthread_once_t domain_once = PTHREAD_ONCE_INIT;

static void make_domain(void)
{
    domain = nvtxDomainCreateA(CGR__PROF_NVTX_DOMAIN);
}

void cgr__range_push(const char *name)
{
    const nvtxEventAttributes_t a = {.version = NVTX_VERSION,
                                     .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                                     .messageType = NVTX_MESSAGE_TYPE_ASCII,
                                     .message.ascii = name};
    (void)pthread_once(&domain_once, make_domain);
    (void)nvtxDomainRangePushEx(domain, &a);
    /* Outside a profile window: one load and a branch not taken. */
    if (__builtin_expect(__atomic_load_n(&cgr__prof_phases_on, __ATOMIC_RELAXED), 0))
        cgr__prof_phase(name);
}

void cgr__range_pop(void)
{
    if (__builtin_expect(__atomic_load_n(&cgr__prof_phases_on, __ATOMIC_RELAXED), 0))
        cgr__prof_phase(NULL);
    (void)pthread_once(&domain_once, make_domain);
    (void)nvtxDomainRangePop(domain);
}
