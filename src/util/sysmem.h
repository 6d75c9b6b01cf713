/*
 * System memory queries (off the data path).
 */
#ifndef SMART_UTIL_SYSMEM_H
#define SMART_UTIL_SYSMEM_H

#include <stdint.h>

/* Bytes the system can still allocate (MemAvailable); UINT64_MAX when it
 * cannot tell. */
uint64_t smart__mem_available(void);

/* Whether len more bytes fit (len <= MemAvailable): answered by one
 * sysinfo(2) (~0.5 us) when free memory alone leaves a wide margin, else
 * by smart__mem_available (~15-25 us: the kernel formats all of
 * /proc/meminfo), so that a connection's regions do not pay that. */
int smart__mem_enough(uint64_t len);

#endif
