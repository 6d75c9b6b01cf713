/*
 * Remote allocation without the blade's CPU, and root entries.
 *
 * Chunks (1 << chunk_shift bytes) are claimed by CAS on the superblock
 * cursor: read it, CAS cursor -> cursor + k, and on failure retry from the
 * value the CAS returned (one round trip per retry).  Blocks below half a
 * chunk come from per-worker, per-blade, per-class bump regions, each a
 * chunk of its own so that every block is aligned to its class size;
 * larger requests take whole chunk runs.  Freed blocks go on the freeing
 * worker's lists for its next allocation of the same class (or run
 * length).  State lives in the worker: no locks, and none needed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "wire/superblock.h"

#define RA_MIN_SHIFT 4
#define RA_CLASSES   64

struct ra_list {
	uint64_t *v;
	uint32_t n, cap;
};

struct smart__ralloc {
	uint64_t cur[RA_CLASSES], end[RA_CLASSES];
	uint8_t refilling[RA_CLASSES];	/* a task is claiming a chunk */
	struct ra_list free[RA_CLASSES];	/* small blocks by class */
	struct ra_list big_off, big_k;		/* chunk runs: offset, length */
};

static int ra_push(struct ra_list *l, uint64_t v)
{
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 64;
		uint64_t *nv = realloc(l->v, cap * sizeof(*nv));

		if (!nv)
			return SMART_ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = v;
	return 0;
}

void smart__ralloc_destroy(struct smart_worker *w)
{
	int i, c;

	for (i = 0; i <= SMART_BLADE_ID_MAX; i++) {
		struct smart__ralloc *ra = w->ralloc[i];

		if (!ra)
			continue;
		for (c = 0; c < RA_CLASSES; c++)
			free(ra->free[c].v);
		free(ra->big_off.v);
		free(ra->big_k.v);
		free(ra);
		w->ralloc[i] = NULL;
	}
}

static struct smart__ralloc *ra_get(struct smart_worker *w, uint16_t blade)
{
	if (!w->ralloc[blade])
		w->ralloc[blade] = calloc(1, sizeof(struct smart__ralloc));
	return w->ralloc[blade];
}

/* Claim k consecutive chunks; *off receives the byte offset of the first. */
static int claim_chunks(struct smart_worker *w, struct smart__blade *b,
			uint64_t k, uint64_t *off)
{
	smart_gaddr_t cursor = smart_gaddr(b->id, SMART_SB_OFF_CURSOR);
	uint64_t cur, old;
	int rc = smart_read_sync(w, cursor, 8, &cur);

	while (!rc) {
		if (cur < 1 || cur > b->nchunks || k > b->nchunks - cur)
			return SMART_ENOSPC;
		rc = smart_cas_sync(w, cursor, cur, cur + k, &old);
		if (rc)
			break;
		if (old == cur) {
			*off = cur << b->chunk_shift;
			SMART_STAT_ADD(w, SMART_STAT_CHUNKS_CLAIMED, k);
			return 0;
		}
		SMART_STAT_INC(w, SMART_STAT_RETRIES);
		cur = old;
	}
	return rc;
}

static int class_of(size_t size)
{
	int c = RA_MIN_SHIFT;

	while (((size_t)1 << c) < size)
		c++;
	return c;
}

static int alloc_small(struct smart_worker *w, struct smart__blade *b,
		       struct smart__ralloc *ra, int c, uint64_t *off)
{
	uint64_t bsize = UINT64_C(1) << c;
	int rc;

	/* Claiming a chunk syncs, so other tasks of this worker run
	 * meanwhile: they wait for the refill instead of each claiming a
	 * chunk of their own and overwriting the class's region. */
	while (ra->refilling[c] && smart_worker_in_task(w))
		smart_task_yield(w);
	if (ra->free[c].n) {
		*off = ra->free[c].v[--ra->free[c].n];
		return 0;
	}
	if (ra->cur[c] + bsize > ra->end[c] || !ra->end[c]) {
		uint64_t start;

		ra->refilling[c] = 1;
		rc = claim_chunks(w, b, 1, &start);
		ra->refilling[c] = 0;
		if (rc)
			return rc;
		ra->cur[c] = start;
		ra->end[c] = start + (UINT64_C(1) << b->chunk_shift);
	}
	*off = ra->cur[c];
	ra->cur[c] += bsize;
	return 0;
}

static int alloc_big(struct smart_worker *w, struct smart__blade *b,
		     struct smart__ralloc *ra, uint64_t k, uint64_t *off)
{
	uint32_t i;

	for (i = 0; i < ra->big_k.n; i++) {
		if (ra->big_k.v[i] != k)
			continue;
		*off = ra->big_off.v[i];
		ra->big_k.v[i] = ra->big_k.v[--ra->big_k.n];
		ra->big_off.v[i] = ra->big_off.v[--ra->big_off.n];
		return 0;
	}
	return claim_chunks(w, b, k, off);
}

int smart_alloc(smart_worker_t *w, uint16_t blade, size_t size,
		smart_gaddr_t *out)
{
	struct smart__blade *b;
	struct smart__ralloc *ra;
	uint64_t off, chunk;
	int rc;

	if (!w || !out || !size)
		return SMART_EINVAL;
	b = smart__blade_get(w->ctx, blade);
	if (!b)
		return SMART_ENOENT;
	if (size > b->size)
		return SMART_ENOSPC;
	ra = ra_get(w, blade);
	if (!ra)
		return SMART_ENOMEM;
	chunk = UINT64_C(1) << b->chunk_shift;
	if (size <= chunk / 2)
		rc = alloc_small(w, b, ra, class_of(size), &off);
	else
		rc = alloc_big(w, b, ra, (size + chunk - 1) / chunk, &off);
	if (rc)
		return rc;
	SMART_STAT_INC(w, SMART_STAT_ALLOCS);
	*out = smart_gaddr(blade, off);
	return 0;
}

int smart_free(smart_worker_t *w, smart_gaddr_t addr, size_t size)
{
	uint64_t off = smart_gaddr_off(addr), chunk, k;
	struct smart__blade *b;
	struct smart__ralloc *ra;
	int rc, c;

	if (!w || !size || addr == SMART_GADDR_NULL)
		return SMART_EINVAL;
	b = smart__blade_get(w->ctx, smart_gaddr_blade(addr));
	if (!b)
		return SMART_ENOENT;
	chunk = UINT64_C(1) << b->chunk_shift;
	if (off < chunk || off >= b->size || size > b->size - off)
		return SMART_EINVAL;
	ra = ra_get(w, b->id);
	if (!ra)
		return SMART_ENOMEM;
	if (size <= chunk / 2) {
		c = class_of(size);
		if (off & ((UINT64_C(1) << c) - 1))
			return SMART_EINVAL;
		rc = ra_push(&ra->free[c], off);
	} else {
		k = (size + chunk - 1) / chunk;
		if (off & (chunk - 1))
			return SMART_EINVAL;
		rc = ra_push(&ra->big_k, k);
		if (!rc && (rc = ra_push(&ra->big_off, off)))
			ra->big_k.n--;
	}
	if (!rc)
		SMART_STAT_INC(w, SMART_STAT_FREES);
	return rc;
}

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
