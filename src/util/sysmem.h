/*
 * System memory queries (slow path).
 */
#ifndef SMART_UTIL_SYSMEM_H
#define SMART_UTIL_SYSMEM_H

#include <stdint.h>

/* Bytes the system can still allocate (MemAvailable); UINT64_MAX when it
 * cannot tell. */
uint64_t smart__mem_available(void);

#endif
