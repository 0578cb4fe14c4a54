#include "trace.h"

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

void cgr__range_push(const char *name)
{
    nvtxRangePushA(name);
}

void cgr__range_pop(void)
{
    nvtxRangePop();
}
