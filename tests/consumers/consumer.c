/*
 * A program built against an installed cgr the ways other projects build
 * (tests/consumers/run.sh: pkg-config, CMake, a meson subproject). It
 * includes CUDA's headers through the flags cgr's package gives and checks
 * that cgr's handle types are CUDA's, that the library it runs with is the
 * one its header describes, and that a runtime can be created: on a
 * machine without a usable GPU that fails with CGR_STATUS_NO_DEVICE, which
 * counts as a pass there.
 *
 * It calls no CUDA function itself, so linking it needs nothing but what
 * the package says libcgr needs.
 */
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cgr/cgr.h>
#include <cgr/cgr_nccl.h>

/* Compiles only while cgr's types are the CUDA types they stand for. */
static cudaStream_t as_stream(cgr_stream s)
{
    return s;
}

static cublasHandle_t as_cublas(cgr_cublas_handle h)
{
    return h;
}

int main(void)
{
    if (strcmp(cgr_version(), CGR_VERSION_STRING) != 0) {
        fprintf(stderr, "consumer: header says cgr %s, the library loaded is %s\n",
                CGR_VERSION_STRING, cgr_version());
        return 1;
    }
    if (as_stream(NULL) != NULL || as_cublas(NULL) != NULL)
        return 1;
    cgr_runtime *rt = NULL;
    cgr_status s = cgr_runtime_create(&rt, NULL);
    if (s == CGR_STATUS_NO_DEVICE) {
        printf("consumer: cgr %s (NCCL support %d): no usable CUDA device, as expected "
               "without a GPU (%s)\n",
               cgr_version(), cgr_has_nccl(), cgr_last_error());
        return 0;
    }
    if (s != CGR_STATUS_OK) {
        fprintf(stderr, "consumer: cgr_runtime_create: %s: %s\n", cgr_status_name(s),
                cgr_last_error());
        return 1;
    }
    s = cgr_runtime_destroy(&rt);
    if (s != CGR_STATUS_OK) {
        fprintf(stderr, "consumer: cgr_runtime_destroy: %s: %s\n", cgr_status_name(s),
                cgr_last_error());
        return 1;
    }
    printf("consumer: cgr %s (NCCL support %d): runtime created and destroyed\n", cgr_version(),
           cgr_has_nccl());
    return 0;
}
