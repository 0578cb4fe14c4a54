/*
 * The public headers as C++ (nvcc compiles this file as CUDA C++): a C++ or
 * CUDA program includes them, uses their types the way C++'s stricter
 * rules allow, and links against libcgr's C symbols (extern "C"). The
 * kernel is compiled, never launched, so the test needs no GPU.
 */
#include <cstdio>
#include <cstring>

#include "cgr/cgr.h"
#include "cgr/cgr_nccl.h"
#include "cgr/cgr_philox.h"
#include "cgr/cgr_version.h"

/* cgr_philox.h's functions are device functions in CUDA code. */
__global__ void uniform_kernel(float *out, unsigned long long seed)
{
    cgr_philox4 r = cgr_philox4x32(seed, threadIdx.x, 0);
    out[threadIdx.x] = cgr_philox_uniform(r.v[0]);
}

int main()
{
    /* C++ does not turn integers into enums: the header's constants must be enumerators. */
    cgr_status st = CGR_STATUS_OK;
    cgr_dtype dt = CGR_DTYPE_F32;
    cgr_nccl_options no = {sizeof no, CGR_NCCL_DEFAULT_TIMEOUT_MS};
    cgr_philox4 host_r = cgr_philox4x32(1, 2, 3); /* and host functions in host code */

    /* These calls reach libcgr, so they prove the extern "C" linkage. */
    const char *name = cgr_status_name(st);
    const char *version = cgr_version();
    if (!name || std::strcmp(name, "CGR_STATUS_OK") != 0) {
        std::fprintf(stderr, "cgr_status_name(CGR_STATUS_OK) is '%s'\n", name ? name : "(null)");
        return 1;
    }
    if (!version || std::strcmp(version, CGR_VERSION_STRING) != 0) {
        std::fprintf(stderr, "cgr_version() is '%s', the header says '%s'\n",
                     version ? version : "(null)", CGR_VERSION_STRING);
        return 1;
    }
    if (cgr_dtype_size(dt) != 4 || no.timeout_ms > CGR_NCCL_MAX_TIMEOUT_MS ||
        !(cgr_philox_uniform(host_r.v[0]) < 1.0f)) {
        std::fprintf(stderr, "a header's value is not what C gives\n");
        return 1;
    }
    return 0;
}
