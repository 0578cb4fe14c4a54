/*
 * Driver API entry points, fetched through the runtime: libcgr links
 * cudart only, never libcuda, so the driver calls it needs (virtual memory
 * for the arena, graph node inspection) come from the loaded driver.
 */
#ifndef CGR_DRIVER_H
#define CGR_DRIVER_H

#include "check.h"

/* One entry point of a set: its name and the pointer it is stored in. */
typedef struct cgr__driver_fn {
    const char *name;
    void **fn;
} cgr__driver_fn;

/*
 * Entry points a part of cgr needs, all of CUDA version `version`, for
 * `why`. They are process-wide state: threads that load them at the same
 * time must not fill them concurrently (a data race, even when they store
 * the same values), and their outcome is kept, since the entry points of
 * a driver do not come and go.
 */
typedef struct cgr__driver_set {
    const cgr__driver_fn *fns;
    size_t n;
    int version;
    const char *why;
    int tried;            /* the rest is written once, under the loader's lock */
    cgr_status status;
    char error[512];
} cgr__driver_set;

/* Loads the set on the first call in the process; every call returns that outcome. */
cgr_status cgr__driver_load(cgr__driver_set *set);

#endif
