/*
 * Driver API entry points, fetched through the runtime: libcgr links
 * cudart only, never libcuda, so the driver calls it needs (virtual memory
 * for the arena, graph node inspection) come from the loaded driver.
 */
#ifndef CGR_DRIVER_H
#define CGR_DRIVER_H

#include "check.h"

/*
 * *out = the driver's `name` in the form of CUDA version `version` (e.g.
 * 12040 for 12.4). CGR_STATUS_NOT_SUPPORTED, with a message naming the
 * entry point and `why` (what cgr needs it for), when the driver has none.
 */
cgr_status cgr__driver_entry(const char *name, int version, const char *why, void **out);

#endif
