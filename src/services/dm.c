/*
 * Device memory allocation (smart/alloc.h): runs of SMART_DM_UNIT bytes of
 * a blade's NIC memory, without the blade's CPU.
 *
 * One 8-byte word in the blade's own area (SMART_DM_MAP_OFF) has a bit per
 * unit, set while the unit is allocated.  Allocation READs it, picks the
 * lowest run of free units and CASes the bits on; freeing CASes them off.
 * Either retries only when another client's CAS changed the word, which
 * means that client made progress: lock-free.  Units past the blade's
 * device memory (its length comes with the region, smart_tp remote_dm)
 * count as taken, so the blade need not format the word: a fresh region
 * is zero.
 *
 * Invariants: a run handed out lies inside the blade's device memory and
 * overlaps no other live run; a free of a run not wholly allocated changes
 * nothing (a double free would hand the run out twice).
 */
#include "runtime/core.h"
#include "smart/alloc.h"
#include "util/mutant.h"
#include "wire/superblock.h"

/* The allocation word's bits no allocation may use: past the device
 * memory's last whole unit. */
static uint64_t dm_absent(const struct smart__blade *b)
{
	uint64_t units = b->dm_len / SMART_DM_UNIT;

	return units >= 64 ? 0 : ~((UINT64_C(1) << units) - 1);
}

/* The bits of n units (1..64) from unit 0. */
static uint64_t dm_run(unsigned n)
{
	return n >= 64 ? UINT64_MAX : (UINT64_C(1) << n) - 1;
}

/* The lowest run of n free units in map, as a mask; 0 if none. */
static uint64_t dm_fit(uint64_t map, unsigned n)
{
	uint64_t run = dm_run(n);
	unsigned i;

	for (i = 0; i + n <= 64; i++)
		if (!(map & (run << i)))
			return run << i;
	return 0;
}

static unsigned dm_units(size_t size)
{
	return (unsigned)((size + SMART_DM_UNIT - 1) / SMART_DM_UNIT);
}

/* The blade of a device memory request, or an error. */
static int dm_blade(smart_worker_t *w, uint16_t id, struct smart__blade **out)
{
	struct smart__blade *b;

	if (!w)
		return SMART_EINVAL;
	b = smart__blade_get(w->ctx, id);
	if (!b)
		return SMART_ENOENT;
	if (!b->dm_len)
		return SMART_ENOTSUP;
	*out = b;
	return 0;
}

int smart_dm_alloc(smart_worker_t *w, uint16_t blade, size_t size,
		   smart_gaddr_t *out)
{
	smart_gaddr_t word = smart_gaddr(blade, SMART_DM_MAP_OFF);
	struct smart__blade *b;
	uint64_t map, old, run;
	int rc;

	if (!out)
		return SMART_EINVAL;
	rc = dm_blade(w, blade, &b); /* no device memory: ENOTSUP first */
	if (!rc && (!size || size > SMART_DM_MAX))
		rc = SMART_EINVAL;
	if (!rc)
		rc = smart_read_sync(w, word, 8, &map);
	while (!rc) {
		run = dm_fit(map | dm_absent(b), dm_units(size));
		if (!run)
			return SMART_ENOSPC;
		rc = smart_cas_sync(w, word, map, map | run, &old);
		if (!rc && old == map) {
			*out = smart_gaddr(blade,
					   SMART_GADDR_DM |
						   (uint64_t)__builtin_ctzll(
							   run) *
							   SMART_DM_UNIT);
			return 0;
		}
		map = old;
	}
	return rc;
}

int smart_dm_free(smart_worker_t *w, smart_gaddr_t addr, size_t size)
{
	uint64_t off = smart_gaddr_off(addr) & ~SMART_GADDR_DM;
	smart_gaddr_t word = smart_gaddr(smart_gaddr_blade(addr),
					 SMART_DM_MAP_OFF);
	struct smart__blade *b;
	uint64_t map, old, run;
	unsigned n = dm_units(size);
	int rc;

	if (!smart_gaddr_is_dm(addr) || !size || size > SMART_DM_MAX ||
	    off % SMART_DM_UNIT || off / SMART_DM_UNIT + n > 64)
		return SMART_EINVAL;
	rc = dm_blade(w, smart_gaddr_blade(addr), &b);
	if (rc)
		return rc == SMART_ENOTSUP ? SMART_EINVAL : rc;
	run = dm_run(n) << (off / SMART_DM_UNIT);
	if (run & dm_absent(b))
		return SMART_EINVAL;
	rc = smart_read_sync(w, word, 8, &map);
	while (!rc) {
		if ((map & run) != run && !SMART_M_DM_NO_FREE_CHECK)
			return SMART_EINVAL; /* not (all) allocated */
		rc = smart_cas_sync(w, word, map, map & ~run, &old);
		if (!rc && old == map)
			return 0;
		map = old;
	}
	return rc;
}
