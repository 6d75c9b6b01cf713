/*
 * How much memory the system can still give: MemAvailable from
 * /proc/meminfo.  Shareable regions (blades) are populated lazily, as
 * their pages are first touched (src/transport/shm/shm_mem.c), so asking
 * for more than this would not fail at creation but later, by the
 * kernel's OOM killer: callers check first.  Off the data path; the
 * check smart__mem_enough is cheap when the answer is clear.
 */
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>

#include "util/sysmem.h"

uint64_t smart__mem_available(void)
{
	unsigned long long kb = 0;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return UINT64_MAX; /* unknown: do not refuse */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb ? (uint64_t)kb << 10 : UINT64_MAX;
}

/*
 * MemAvailable is never below MemFree less the kernel's reserves: it is
 * the free pages minus totalreserve_pages, plus the reclaimable share of
 * the page cache and of slab, neither negative (si_mem_available,
 * mm/show_mem.c).  The reserves (zone watermarks and lowmem reserves) are
 * a small share of RAM, so free memory of at least 2 x len plus RAM / 16
 * answers yes at once; nearer the edge the exact figure decides.
 */
int smart__mem_enough(uint64_t len)
{
	struct sysinfo si;
	uint64_t unit, free_b;

	if (!sysinfo(&si)) {
		unit = si.mem_unit ? si.mem_unit : 1;
		free_b = (uint64_t)si.freeram * unit;
		if (len <= free_b / 2 &&
		    free_b - 2 * len >= (uint64_t)si.totalram * unit / 16)
			return 1;
	}
	return len <= smart__mem_available();
}
