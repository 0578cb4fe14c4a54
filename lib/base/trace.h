/*
 * NVTX ranges around cgr's phases (warm-up, capture, instantiate, replay),
 * so that Nsight Systems timelines show what cgr was doing, in NVTX domain
 * "cgr". NVTX is header-only; with no tool attached a range costs a few
 * nanoseconds. While a profile window is open they also go to its trace
 * (profiler.h, cgr__prof_phase).
 */
#ifndef CGR_TRACE_H
#define CGR_TRACE_H

void cgr__range_push(const char *name);
void cgr__range_pop(void);

#endif
