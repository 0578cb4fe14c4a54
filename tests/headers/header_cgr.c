/* cgr.h compiles on its own, with no CUDA header before it. */
#include "cgr/cgr.h"

int main(void)
{
    cgr_options o;
    (void)o;
    return CGR_STATUS_OK == 0 && sizeof(cgr_step_desc) > 0 ? 0 : 1;
}
