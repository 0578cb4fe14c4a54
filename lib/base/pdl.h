/*
 * Whether a kernel asked to use programmatic dependent launch (PDL) gets
 * it. Three things must hold:
 *  - the device has PDL: compute capability 9.0 or newer;
 *  - the code the device runs has the dependency waits: cgr, its tests and
 *    its benchmarks compile griddepcontrol for sm_90 and newer only, so a
 *    build without sm_90+ code (say -Dgpu_arch=80, whose compute_80 PTX a
 *    Hopper GPU compiles at load time) has kernels that would race if they
 *    were launched early; the probe kernel's PTX version (pdl_kernel.cu)
 *    tells which code the device loaded;
 *  - CGR_PDL is not "0" in the environment: it turns PDL off on any device,
 *    so that one Hopper GPU can prove a program on both paths.
 * Otherwise the kernel is launched the plain way. The answer is kept per
 * device: cgr_runtime_create decides it for its device, and a launch on a
 * device no runtime was created on decides it there once.
 * cgr_launch_kernel asks here.
 */
#ifndef CGR_PDL_H
#define CGR_PDL_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What was decided for one device. */
typedef struct cgr__pdl {
    int allowed;      /* 1: launches that ask for PDL get it */
    int major, minor; /* the device's compute capability */
    int code_arch;    /* virtual architecture of the code the device runs (90: compute_90);
                         0 when this build has none for the device */
    int forced_off;   /* CGR_PDL=0 was set */
} cgr__pdl;

/* Reads device's compute capability, the code it loads and CGR_PDL now,
 * keeps the answer for cgr__pdl_here() and writes it to *out. */
cudaError_t cgr__pdl_probe(int device, cgr__pdl *out);

/* *allowed: whether a launch on the current device may use PDL (the kept
 * answer; decided now when none is kept). */
cudaError_t cgr__pdl_here(int *allowed);

/* Why PDL is off, for messages ("" when it is on). */
const char *cgr__pdl_why_off(const cgr__pdl *p);

/* An empty kernel compiled like the rest of cgr (pdl_kernel.cu). */
const void *cgr__pdl_probe_kernel(void);

#ifdef __cplusplus
}
#endif

#endif
