/*
 * Host writes into pinned staging memory that the GPU reads next
 * (host_write.c): src's bytes, or zeros when src is NULL. It ends with
 * every byte visible to the device: a store the host makes afterwards (an
 * armed run's go, a launch) cannot overtake them.
 */
#ifndef CGR_REPLAY_HOST_WRITE_H
#define CGR_REPLAY_HOST_WRITE_H

#include <stddef.h>

void cgr__host_write(void *dst, const void *src, size_t bytes);

#endif
