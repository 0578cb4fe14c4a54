/*
 * The public headers as plain C++, compiled by the host C++ compiler (g++
 * or clang++) rather than nvcc: most programs that use cgr are C++ and
 * include it in files nvcc never sees. Their types and constants must
 * follow C++'s stricter rules, cgr_philox.h's functions must be host
 * functions there, and the calls must link against libcgr's C symbols.
 */
#include <cstdio>
#include <cstring>

#include "cgr/cgr.h"
#include "cgr/cgr_nccl.h"
#include "cgr/cgr_philox.h"
#include "cgr/cgr_version.h"

int main()
{
    cgr_status st = CGR_STATUS_OK;
    cgr_dtype dt = CGR_DTYPE_F32;
    cgr_options opt;
    if (cgr_options_init(&opt) != CGR_STATUS_OK || opt.struct_size != sizeof opt) {
        std::fprintf(stderr, "cgr_options_init: %s\n", cgr_last_error());
        return 1;
    }
    cgr_philox4 r = cgr_philox4x32(1, 2, 3);
    const char *name = cgr_status_name(st);
    if (!name || std::strcmp(name, "CGR_STATUS_OK") != 0 ||
        std::strcmp(cgr_version(), CGR_VERSION_STRING) != 0 || cgr_dtype_size(dt) != 4 ||
        !(cgr_philox_uniform(r.v[0]) < 1.0f)) {
        std::fprintf(stderr, "a header's value is not what C gives\n");
        return 1;
    }
    return 0;
}
