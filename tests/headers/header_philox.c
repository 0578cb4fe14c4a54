/* cgr_philox.h compiles on its own in C. */
#include "cgr/cgr_philox.h"

int main(void)
{
    cgr_philox4 r = cgr_philox4x32(1, 2, 3);
    return cgr_philox_uniform(r.v[0]) < 1.0f ? 0 : 1;
}
