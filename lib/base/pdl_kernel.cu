/*
 * A kernel that does nothing, compiled with the build's -gencode list like
 * every other kernel of cgr. Its attributes tell which of the fat binary's
 * images the device loaded (pdl.c): machine code for its architecture, or
 * PTX of some virtual architecture compiled at load time.
 */
#include "pdl.h"

static __global__ void pdl_probe_kernel(void)
{
}

extern "C" const void *cgr__pdl_probe_kernel(void)
{
    return (const void *)pdl_probe_kernel;
}
