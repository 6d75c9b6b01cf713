/*
 * Root entries: 256 named 8-byte words in every blade's superblock, the
 * naming service of the data structures (a hash table's descriptor, a
 * tree's root pointer).  Plain one-sided READ/WRITE/CAS of those words.
 *
 * Structures by name: a name hashes to an entry of 64..255 and probes
 * onwards (linear probing).  A probe stops at an entry never used (0); a
 * released one holds SMART_ROOT_TOMB, which probes walk past and
 * publishes never reuse, so two publishers of one name always race for
 * the same first free entry and exactly one wins (the loser reads the
 * winner's name there and reports SMART_EEXIST, or probes on past an
 * entry another name took).  The names live in the structures'
 * descriptors; the structure's name_fn reads one.
 */
#include <string.h>

#include "runtime/core.h"
#include "wire/superblock.h"

#define NAME_SEED  UINT64_C(0x6e616d6573656564) /* "nameseed" */
#define NAMED_SPAN (SMART_ROOT_ENTRIES - SMART_ROOT_NAMED_FIRST)

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
					SMART_ROOT_TOMB :
					0,
				&old);

	return rc ? rc : old == expect ? 0 : SMART_ENOENT;
}

int smart_root_name_ok(const char *name)
{
	size_t n;

	if (!name)
		return 0;
	n = strnlen(name, SMART_ROOT_NAME_MAX + 1);
	return n >= 1 && n <= SMART_ROOT_NAME_MAX;
}

static unsigned name_home(const char *name)
{
	return SMART_ROOT_NAMED_FIRST +
	       (unsigned)(smart_hash64(name, strlen(name), NAME_SEED) %
			  NAMED_SPAN);
}

/* The k-th entry of the chain from home (a name's home: hashed once) */
static unsigned chain_idx(unsigned home, unsigned k)
{
	return SMART_ROOT_NAMED_FIRST +
	       (home - SMART_ROOT_NAMED_FIRST + k) % NAMED_SPAN;
}

/* Probe name's chain (from its home) from its k-th entry: *found_k = the
 * chain position of the entry holding the name (-1: none) with its value
 * in *entry; *free_k = that of the first never-used entry (-1: all
 * taken). */
static int probe(smart_worker_t *w, uint16_t blade, const char *name,
		 unsigned home, smart_root_name_fn fn, void *arg, unsigned k,
		 int *found_k, int *free_k, uint64_t *entry)
{
	char got[SMART_ROOT_NAME_MAX + 1];
	uint64_t e;
	int rc;

	*found_k = *free_k = -1;
	for (; k < NAMED_SPAN; k++) {
		rc = smart_root_get(w, blade, chain_idx(home, k), &e);
		if (rc)
			return rc;
		if (!e) {
			*free_k = (int)k;
			return 0;
		}
		if (e == SMART_ROOT_TOMB)
			continue;
		memset(got, 0, sizeof(got));
		rc = fn(w, blade, e, got, arg);
		if (rc == SMART_ENOENT)
			continue; /* another kind of structure */
		if (rc)
			return rc;
		if (!strncmp(got, name, sizeof(got))) {
			*found_k = (int)k;
			*entry = e;
			return 0;
		}
	}
	return 0;
}

int smart_root_find(smart_worker_t *w, uint16_t blade, const char *name,
		    smart_root_name_fn fn, void *arg, unsigned *idx,
		    uint64_t *entry)
{
	int found_k, free_k, rc;
	unsigned home;

	if (!w || !fn || !idx || !entry || !smart_root_name_ok(name))
		return SMART_EINVAL;
	home = name_home(name);
	rc = probe(w, blade, name, home, fn, arg, 0, &found_k, &free_k, entry);
	if (!rc && found_k < 0)
		rc = SMART_ENOENT;
	if (!rc)
		*idx = chain_idx(home, (unsigned)found_k);
	return rc;
}

int smart_root_publish(smart_worker_t *w, uint16_t blade, const char *name,
		       smart_root_name_fn fn, void *arg, uint64_t entry,
		       unsigned *idx)
{
	int found_k, free_k, rc;
	unsigned tries, home, i;
	uint64_t e, old;

	if (!w || !fn || !idx || !entry || entry == SMART_ROOT_TOMB ||
	    !smart_root_name_ok(name))
		return SMART_EINVAL;
	home = name_home(name);
	rc = probe(w, blade, name, home, fn, arg, 0, &found_k, &free_k, &e);
	/* each lost race moves the probe on by an entry at least, unless a
	 * peer puts 0 back: bounded either way */
	for (tries = 0; tries < NAMED_SPAN; tries++) {
		if (!rc && found_k >= 0)
			rc = SMART_EEXIST;
		if (!rc && free_k < 0)
			rc = SMART_ENOSPC;
		if (rc)
			return rc;
		i = chain_idx(home, (unsigned)free_k);
		rc = smart_root_cas(w, blade, i, 0, entry, &old);
		if (!rc && !old) {
			*idx = i;
			return 0;
		}
		/* somebody took the entry: if for our name, they won */
		if (!rc)
			rc = probe(w, blade, name, home, fn, arg,
				   (unsigned)free_k, &found_k, &free_k, &e);
	}
	return SMART_ENOSPC;
}
