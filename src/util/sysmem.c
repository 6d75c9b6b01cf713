/*
 * How much memory the system can still give: MemAvailable from
 * /proc/meminfo.  Shareable regions (blades) are populated lazily, as
 * their pages are first touched (src/transport/shm/shm_mem.c), so asking
 * for more than this would not fail at creation but later, by the
 * kernel's OOM killer: callers check first.  Slow path only.
 */
#include <stdio.h>
#include <string.h>

#include "util/sysmem.h"

uint64_t smart__mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return UINT64_MAX;	/* unknown: do not refuse */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb ? (uint64_t)kb << 10 : UINT64_MAX;
}
