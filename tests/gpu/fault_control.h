/*
 * The test side of fault injection (lib/base/fault.h has the sites): arming
 * a site and reading its counts, defined in fault.c beside this header and
 * linked only into the injecting variant of the library.
 */
#ifndef CGR_TEST_FAULT_CONTROL_H
#define CGR_TEST_FAULT_CONTROL_H

#include "fault.h"

/**
 * Arms `site`: its `nth` call from now on fails (1 = the next call), once;
 * later calls succeed again. nth = 0 disarms the site. Resets the site's
 * call and fired counts.
 */
void cgr__fault_arm(cgr__fault_site site, uint64_t nth);
/** Disarms every site and resets every call and fired count. */
void cgr__fault_clear(void);
/** Calls seen at `site` since it was last armed or cleared. */
uint64_t cgr__fault_calls(cgr__fault_site site);
/** Faults injected at `site` since it was last armed or cleared (0 or 1). */
uint64_t cgr__fault_fired(cgr__fault_site site);
/** The site's short name ("device_alloc", ...), or "?" when out of range. */
const char *cgr__fault_site_name(cgr__fault_site site);
/**
 * Pinned staging memory that cgr holds right now in this process, counted
 * at cudaHostAlloc and cudaFreeHost themselves (not from any runtime's
 * stats), so that a leak on an error path shows even if the stats agree.
 */
void cgr__fault_pinned_live(size_t *bytes, size_t *blocks);

#endif
