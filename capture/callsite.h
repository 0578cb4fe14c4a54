/*
 * Naming the call that broke a capture.
 *
 * While a step is being captured, cgr asks CUPTI to report every CUDA
 * runtime call of the capturing thread that returns an error, and keeps the
 * first one: that is the call the user must change ("cudaMalloc returned
 * cudaErrorStreamCaptureUnsupported"). The callback is enabled only around
 * captures, so replay and the user's own code pay nothing. When CUPTI is
 * missing or another tool already subscribed (a profiler, compute-sanitizer),
 * the watch reports nothing and the diagnosis falls back to the error code.
 */
#ifndef CGR_CALLSITE_H
#define CGR_CALLSITE_H

#include <stddef.h>

/** Starts recording failing runtime calls of this thread. */
void cgr__watch_begin(void);
/**
 * Stops recording. Returns the first failing call's cudaError_t (0 if none
 * was seen) and copies its name (without a _vNNNN suffix) into name.
 */
int cgr__watch_end(char *name, size_t n);

#endif
