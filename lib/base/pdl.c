/*
 * The per-device PDL decision of pdl.h. One atomic byte per device keeps
 * it, so the launch path pays a cudaGetDevice and a load, not attribute
 * queries, and threads launching at once need no lock: a race between two
 * first launches only decides the same answer twice.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "pdl.h"

/* Devices past this many are decided on every launch instead of kept. */
#define PDL_DEVICES 64
enum { PDL_UNKNOWN = 0, PDL_ON, PDL_OFF };

static _Atomic unsigned char kept[PDL_DEVICES];

cudaError_t cgr__pdl_probe(int device, cgr__pdl *out)
{
    cgr__pdl p;
    memset(&p, 0, sizeof p);
    int prev = 0, switched = 0;
    cudaError_t e = cudaDeviceGetAttribute(&p.major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&p.minor, cudaDevAttrComputeCapabilityMinor, device);
    /* Function attributes are the current device's. */
    if (e == cudaSuccess)
        e = cudaGetDevice(&prev);
    if (e == cudaSuccess && prev != device) {
        e = cudaSetDevice(device);
        switched = e == cudaSuccess;
    }
    if (e == cudaSuccess) {
        struct cudaFuncAttributes a;
        memset(&a, 0, sizeof a);
        e = cudaFuncGetAttributes(&a, cgr__pdl_probe_kernel());
        p.code_arch = a.ptxVersion;
        if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidDeviceFunction) {
            /* No code for the device: launches of cgr's kernels will say so themselves. */
            (void)cudaGetLastError();
            p.code_arch = 0;
            e = cudaSuccess;
        }
    }
    if (switched)
        (void)cudaSetDevice(prev); /* as cgr__device_leave: nothing better to do on failure */
    if (e != cudaSuccess)
        return e;
    const char *v = getenv("CGR_PDL");
    p.forced_off = v && strcmp(v, "0") == 0;
    p.allowed = p.major >= 9 && p.code_arch >= 90 && !p.forced_off;
    if (device >= 0 && device < PDL_DEVICES)
        atomic_store_explicit(&kept[device], p.allowed ? PDL_ON : PDL_OFF, memory_order_relaxed);
    *out = p;
    return cudaSuccess;
}

cudaError_t cgr__pdl_here(int *allowed)
{
    int device = 0;
    cudaError_t e = cudaGetDevice(&device);
    if (e != cudaSuccess)
        return e;
    if (device >= 0 && device < PDL_DEVICES) {
        const unsigned char k = atomic_load_explicit(&kept[device], memory_order_relaxed);
        if (k != PDL_UNKNOWN) {
            *allowed = k == PDL_ON;
            return cudaSuccess;
        }
    }
    cgr__pdl p;
    e = cgr__pdl_probe(device, &p);
    if (e == cudaSuccess)
        *allowed = p.allowed;
    return e;
}

const char *cgr__pdl_why_off(const cgr__pdl *p)
{
    if (p->allowed)
        return "";
    if (p->forced_off)
        return "CGR_PDL=0";
    if (p->major < 9)
        return "the device is older than compute capability 9.0";
    return "this build has no sm_90 or newer code for the device (meson option gpu_arch)";
}
