/*
 * How much memory the system can still give: MemAvailable from
 * /proc/meminfo.  Regions are populated at creation (no page faults on the
 * data path), so asking for more than this would not fail cleanly: the
 * kernel's OOM killer would end the process.  Slow path only.
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
