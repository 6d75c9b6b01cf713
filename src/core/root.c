/*
 * Root entries: 256 named 8-byte words in every blade's superblock, the
 * naming service of the data structures (a hash table's descriptor, a
 * tree's root pointer).  Plain one-sided READ/WRITE/CAS of those words.
 */
#include "core/core.h"
#include "wire/superblock.h"

static int root_addr(smart_worker_t *w, uint16_t blade, unsigned idx,
		     smart_gaddr_t *ga)
{
	if (!w || idx >= SMART_ROOT_ENTRIES)
		return SMART_EINVAL;
	if (!smart__blade_get(w->ctx, blade))
		return SMART_ENOENT;
	*ga = smart_gaddr(blade, SMART_SB_OFF_ROOT(idx));
	return 0;
}

int smart_root_get(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t *out)
{
	smart_gaddr_t ga;
	int rc = root_addr(w, blade, idx, &ga);

	if (!rc && !out)
		rc = SMART_EINVAL;
	return rc ? rc : smart_read_sync(w, ga, 8, out);
}

int smart_root_set(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t val)
{
	smart_gaddr_t ga;
	int rc = root_addr(w, blade, idx, &ga);

	return rc ? rc : smart_write_sync(w, ga, &val, 8);
}

int smart_root_cas(smart_worker_t *w, uint16_t blade, unsigned idx,
		   uint64_t expect, uint64_t desired, uint64_t *old)
{
	smart_gaddr_t ga;
	int rc = root_addr(w, blade, idx, &ga);

	return rc ? rc : smart_cas_sync(w, ga, expect, desired, old);
}

int smart_root_release(smart_worker_t *w, uint16_t blade, unsigned idx,
		       uint64_t expect)
{
	uint64_t old = 0;
	int rc = smart_root_cas(w, blade, idx, expect,
				idx >= SMART_ROOT_NAMED_FIRST ?
				SMART_ROOT_TOMB : 0, &old);

	return rc ? rc : old == expect ? 0 : SMART_ENOENT;
}
