/* cgr_nccl.h compiles on its own in C, without nccl.h or the CUDA headers. */
#include "cgr/cgr_nccl.h"

int main(void)
{
    cgr_nccl_options o = {sizeof o, CGR_NCCL_DEFAULT_TIMEOUT_MS};
    cgr_nccl_comm comm = 0;
    (void)comm;
    return o.timeout_ms <= CGR_NCCL_MAX_TIMEOUT_MS ? 0 : 1;
}
