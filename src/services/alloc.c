/*
 * Remote allocation without the blade's CPU (docs/layout.md).
 *
 * Chunks (1 << chunk_shift bytes) are claimed by CAS on the superblock
 * cursor.  Blocks below half a chunk come in power-of-two classes (16 B
 * and up, aligned to their size) from a cache per worker, blade and class:
 * freed blocks (up to RA_CACHE), then a bump region.  When both are empty
 * the worker refills, in this order, from the blade-wide free list of the
 * class (a batch of up to 63 blocks any client gave back, freelist.c), a
 * free run of chunks, a fresh chunk, and last a block of a bigger class
 * split up.  A full cache gives a batch back to the blade.  Larger
 * requests are runs of whole chunks, taken from and given back to the
 * blade-wide run lists.  So memory any client frees is there for every
 * client, and SMART_ENOSPC means that none of these has anything left
 * (freed blocks are not merged back into chunks).
 *
 * A destroyed worker gives everything back: its cached blocks, and what
 * is left of its bump regions cut into aligned blocks (smart__ralloc_
 * destroy).  A killed process cannot; what its workers held is lost: at
 * most one bump region and RA_CACHE blocks per class in use, per worker.
 *
 * Tasks of one worker interleave at syncs: a refill is done by one task
 * per class at a time (the others wait), and blocks leave the cache before
 * any sync that gives them away.
 */
#include <stdlib.h>
#include <string.h>

#include "services/alloc_int.h"
#include "services/svc.h"
#include "util/mutant.h"
#include "wire/superblock.h"

static struct smart__ralloc *ra_get(struct smart_worker *w,
				    struct smart__blade *b)
{
	struct smart__ralloc *ra = w->ralloc[b->id];

	if (!ra) {
		ra = calloc(1, sizeof(*ra));
		if (!ra)
			return NULL;
		ra->b = b;
		/* the class that carries small classes' batches is needed
		 * by the first spill of any: made now, not on an op's path */
		ra->cls[RA_NODE_SHIFT] = calloc(1, sizeof(struct ra_class));
		if (!ra->cls[RA_NODE_SHIFT]) {
			free(ra);
			return NULL;
		}
		/* the keeper reads w->ralloc[] under ctx->lock (the cached
		 * bytes it reports): publish and withdraw under it */
		pthread_mutex_lock(&w->ctx->lock);
		w->ralloc[b->id] = ra;
		pthread_mutex_unlock(&w->ctx->lock);
	}
	return ra;
}

static struct ra_class *ra_cls(struct smart__ralloc *ra, int c)
{
	if (!ra->cls[c])
		ra->cls[c] = calloc(1, sizeof(struct ra_class));
	return ra->cls[c];
}

/* Claim k consecutive fresh chunks; *off = 0 when the blade has none. */
static int claim_chunks(struct smart_worker *w, struct smart__blade *b,
			uint64_t k, uint64_t *off)
{
	smart_gaddr_t cursor = smart_gaddr(b->id, SMART_SB_OFF_CURSOR);
	uint64_t cur, old;
	int rc = smart_read_sync(w, cursor, 8, &cur);

	*off = 0;
	while (!rc) {
		if (cur < b->first_chunk || cur > b->nchunks ||
		    k > b->nchunks - cur)
			return 0;
		rc = smart_cas_sync(w, cursor, cur, cur + k, &old);
		if (rc)
			break;
		if (old == cur) {
			*off = cur << b->chunk_shift;
			SMART_STAT_ADD(w, SMART_STAT_CHUNKS_CLAIMED, k);
			return 0;
		}
		cur = old;
	}
	return rc;
}

/* A run of k chunks: one given back first, else fresh. */
static int take_run(struct smart_worker *w, struct smart__blade *b, uint64_t k,
		    void *buf, uint64_t *off)
{
	int rc = smart__fl_pop_run(w, b, k, buf, off);

	if (!rc && !*off)
		rc = claim_chunks(w, b, k, off);
	return rc;
}

/* Cache a block where there is room; a full cache never takes one more
 * (callers make room first: a block dropped here is lost, counted). */
static void cache_put(struct smart__ralloc *ra, struct ra_class *k, int c,
		      uint64_t off)
{
	if (smart_unlikely(k->n == RA_CACHE)) {
		ra->dropped++;
		return;
	}
	k->v[k->n++] = off;
	ra_cached_add(ra, (int64_t)1 << c);
}

static int cls_spill(struct smart_worker *w, struct smart__ralloc *ra, int c,
		     void *buf);

/* Cache a block, giving a batch back first while the cache is full: a
 * spill syncs, and other tasks of the worker may fill the cache again
 * meanwhile (once, the block then went one past the array: ASan in
 * test_ht_linearizability), so room is looked at again after each. */
static int cache_add(struct smart_worker *w, struct smart__ralloc *ra, int c,
		     uint64_t off, void *buf)
{
	struct ra_class *k = ra_cls(ra, c);
	int rc;

	if (!k)
		return SMART_ENOMEM;
	while (k->n == RA_CACHE) {
		rc = cls_spill(w, ra, c, buf);
		if (SMART_M_ALLOC_SPILL_ONCE)
			break;
		if (rc && k->n == RA_CACHE) {
			ra->dropped++;
			return rc;
		}
	}
	cache_put(ra, k, c, off);
	return 0;
}

/* Put the blocks of a popped batch (at buf) and its node into the
 * caches.  The batch is copied out first: a spill reuses buf. */
static int batch_take(struct smart_worker *w, struct smart__ralloc *ra, int c,
		      const struct smart_free_node *n, uint64_t node, void *buf)
{
	uint64_t off[SMART_FREE_BATCH];
	uint32_t i, cnt = n->count;
	int nc = n->node_class, rc = 0;

	memcpy(off, n->off, (size_t)cnt * sizeof(*off));
	for (i = 0; i < cnt && !rc; i++)
		rc = cache_add(w, ra, c, off[i], buf);
	for (; i < cnt; i++)
		ra->dropped++;
	return cache_add(w, ra, nc, node, buf) ? SMART_ENOMEM : rc;
}

/* One block of class c2 > c from a cache or the blade's list of c2. */
static int bigger_block(struct smart_worker *w, struct smart__ralloc *ra,
			int c2, void *buf, uint64_t *off)
{
	struct ra_class *k = ra_cls(ra, c2);
	uint64_t node;
	int rc, empty;

	*off = 0;
	if (!k || k->refilling)
		return 0;
	if (!k->n) {
		rc = smart__fl_pop_batch(w, ra->b, c2, buf, &node, &empty);
		if (rc || empty)
			return rc;
		rc = batch_take(w, ra, c2, buf, node, buf);
		if (rc)
			return rc;
	}
	if (k->n) {
		*off = k->v[--k->n];
		ra_cached_add(ra, -((int64_t)1 << c2));
	}
	return 0;
}

/* Refill class c: the blade's batches, then a chunk (given back or
 * fresh) as a bump region, then a bigger block cut up as one. */
static int cls_refill(struct smart_worker *w, struct smart__ralloc *ra, int c,
		      void *buf)
{
	struct smart__blade *b = ra->b;
	struct ra_class *k = ra->cls[c];
	uint64_t off, node;
	int rc, empty, c2;

	rc = smart__fl_pop_batch(w, b, c, buf, &node, &empty);
	if (rc || !empty)
		return rc ? rc : batch_take(w, ra, c, buf, node, buf);
	rc = take_run(w, b, 1, buf, &off);
	if (rc)
		return rc;
	c2 = (int)b->chunk_shift;
	for (c2 = off ? c2 : c + 1; !off && c2 < (int)b->chunk_shift; c2++) {
		rc = bigger_block(w, ra, c2, buf, &off);
		if (rc)
			return rc;
		if (off)
			break;
	}
	if (!off)
		return SMART_ENOSPC;
	k->cur = off;
	k->end = off + (UINT64_C(1) << c2);
	ra_cached_add(ra, (int64_t)1 << c2);
	return 0;
}

/* A free block of 512 bytes or more to carry a batch of a small class:
 * from a cache, else allocated. */
static int node_block(struct smart_worker *w, struct smart__ralloc *ra,
		      uint64_t *node, int *node_class);

/* Give a batch of class c's cached blocks back to the blade.  The blocks
 * leave the cache before the sync, and come back if it fails. */
/* Interleaving hook (smart/hook.h) "alloc.spill.pushing": a batch has
 * left the cache and its push's syncs come next, where other tasks of the
 * worker run and may fill the cache again (test_alloc spill_refill). */
static void spill_hook(struct smart_worker *w)
{
	void *arg;
	smart_hook_fn fn = smart_ctx_hook(w->ctx, &arg);

	if (smart_unlikely(fn != NULL))
		(void)fn(w, "alloc.spill.pushing", arg); /* no failing */
}

static int cls_spill(struct smart_worker *w, struct smart__ralloc *ra, int c,
		     void *buf)
{
	struct ra_class *k = ra->cls[c];
	uint64_t batch[SMART_FREE_BATCH + 1], node;
	uint32_t i, cnt = 0;
	int rc, nc = c;

	if (c >= RA_NODE_SHIFT) {
		node = k->v[--k->n]; /* a block of the batch */
	} else {
		rc = node_block(w, ra, &node, &nc);
		if (rc)
			return rc;
	}
	while (k->n && cnt < SMART_FREE_BATCH)
		batch[cnt++] = k->v[--k->n];
	spill_hook(w);
	rc = smart__fl_push_batch(w, ra->b, c, node, nc, batch, cnt, buf);
	if (rc) {
		/* back where they were, while there is room: other tasks of
		 * this worker may have cached blocks during the sync */
		if (c >= RA_NODE_SHIFT)
			batch[cnt++] = node;
		for (i = cnt; i-- > 0;) {
			if (k->n < RA_CACHE) {
				k->v[k->n++] = batch[i];
			} else {
				ra->dropped++;
				ra_cached_add(ra, -((int64_t)1 << c));
			}
		}
		if (c < RA_NODE_SHIFT) { /* a node of its own */
			cache_put(ra, ra->cls[nc], nc, node);
		}
		return rc;
	}
	ra_cached_add(ra, -(((int64_t)cnt << c) +
			    (c >= RA_NODE_SHIFT ? (int64_t)1 << c : 0)));
	return 0;
}

static int alloc_small(struct smart_worker *w, struct smart__ralloc *ra, int c,
		       uint64_t *off);

static int node_block(struct smart_worker *w, struct smart__ralloc *ra,
		      uint64_t *node, int *node_class)
{
	int c;

	for (c = RA_NODE_SHIFT; c < (int)ra->b->chunk_shift; c++) {
		struct ra_class *k = ra->cls[c];

		if (k && k->n) {
			*node = k->v[--k->n];
			*node_class = c;
			ra_cached_add(ra, -((int64_t)1 << c));
			return 0;
		}
	}
	*node_class = RA_NODE_SHIFT;
	return alloc_small(w, ra, RA_NODE_SHIFT, node);
}

static int alloc_small(struct smart_worker *w, struct smart__ralloc *ra, int c,
		       uint64_t *off)
{
	struct ra_class *k = ra_cls(ra, c);
	uint64_t bsize = UINT64_C(1) << c;
	size_t mark;
	void *buf;
	int rc;

	if (!k)
		return SMART_ENOMEM;
	for (;;) {
		if (k->n) {
			*off = k->v[--k->n];
			break;
		}
		if (k->end && k->cur + bsize <= k->end) {
			*off = k->cur;
			k->cur += bsize;
			break;
		}
		/* one refill per class: the other tasks wait for it */
		if (k->refilling) {
			smart_task_yield(w);
			continue;
		}
		mark = smart_scratch_mark(w);
		rc = smart_scratch_alloc(w, sizeof(struct smart_free_node),
					 &buf);
		if (!rc) {
			k->refilling = 1;
			rc = cls_refill(w, ra, c, buf);
			k->refilling = 0;
		}
		smart_scratch_release(w, mark);
		if (rc)
			return rc;
	}
	ra_cached_add(ra, -(int64_t)bsize);
	return 0;
}

static int class_of(size_t size)
{
	int c = RA_MIN_SHIFT;

	while (((size_t)1 << c) < size)
		c++;
	return c;
}

/* Round trips the allocator waited for, charged to the task (they are
 * amortised: a refill or spill serves RA_CACHE / 2 blocks). */
static void rt_charge(struct smart_worker *w, uint64_t r0)
{
	struct smart__task *t = smart__cur_task(w);
	uint64_t d = t->round_trips - r0;

	t->alloc_round_trips += d;
	SMART_STAT_ADD(w, SMART_STAT_ALLOC_ROUND_TRIPS, d);
}

static int alloc_one(smart_worker_t *w, uint16_t blade, size_t size,
		     smart_gaddr_t *out)
{
	struct smart__blade *b;
	struct smart__ralloc *ra;
	uint64_t off, chunk;
	size_t mark;
	void *buf;
	int rc;

	if (!w || !out || !size)
		return SMART_EINVAL;
	b = smart__blade_get(w->ctx, blade);
	if (!b)
		return SMART_ENOENT;
	if (size > b->size)
		return SMART_ENOSPC;
	ra = ra_get(w, b);
	if (!ra)
		return SMART_ENOMEM;
	chunk = UINT64_C(1) << b->chunk_shift;
	if (size <= chunk / 2) {
		rc = alloc_small(w, ra, class_of(size), &off);
	} else {
		mark = smart_scratch_mark(w);
		rc = smart_scratch_alloc(w, sizeof(struct smart_free_node),
					 &buf);
		if (!rc)
			rc = take_run(w, b, (size + chunk - 1) / chunk, buf,
				      &off);
		smart_scratch_release(w, mark);
		if (!rc && !off)
			rc = SMART_ENOSPC;
	}
	if (rc)
		return rc;
	SMART_STAT_INC(w, SMART_STAT_ALLOCS);
	*out = smart_gaddr(blade, off);
	return 0;
}

static int free_one(smart_worker_t *w, smart_gaddr_t addr, size_t size)
{
	uint64_t off = smart_gaddr_off(addr), chunk;
	struct smart__blade *b;
	struct smart__ralloc *ra;
	struct ra_class *k;
	size_t mark;
	void *buf;
	int rc = 0, c;

	if (!w || !size || addr == SMART_GADDR_NULL)
		return SMART_EINVAL;
	b = smart__blade_get(w->ctx, smart_gaddr_blade(addr));
	if (!b)
		return SMART_ENOENT;
	chunk = UINT64_C(1) << b->chunk_shift;
	if (off < b->first_chunk * chunk || off >= b->size ||
	    size > b->size - off)
		return SMART_EINVAL;
	c = class_of(size);
	if (size <= chunk / 2 ? (off & ((UINT64_C(1) << c) - 1)) :
				(off & (chunk - 1)))
		return SMART_EINVAL;
	ra = ra_get(w, b);
	k = ra && size <= chunk / 2 ? ra_cls(ra, c) : NULL;
	if (!ra || (size <= chunk / 2 && !k))
		return SMART_ENOMEM;
	if (k && k->n < RA_CACHE) {
		cache_put(ra, k, c, off); /* the common case */
	} else {
		mark = smart_scratch_mark(w);
		rc = smart_scratch_alloc(w, sizeof(struct smart_free_node),
					 &buf);
		if (!rc)
			rc = k ? cache_add(w, ra, c, off, buf) :
				 smart__fl_push_run(w, b, off,
						    (size + chunk - 1) / chunk,
						    buf);
		else if (k)
			ra->dropped++;
		smart_scratch_release(w, mark);
	}
	if (!rc)
		SMART_STAT_INC(w, SMART_STAT_FREES);
	return rc;
}

int smart_alloc(smart_worker_t *w, uint16_t blade, size_t size,
		smart_gaddr_t *out)
{
	uint64_t r0;
	int rc;

	if (!w)
		return SMART_EINVAL;
	r0 = smart__cur_task(w)->round_trips;
	rc = alloc_one(w, blade, size, out);
	rt_charge(w, r0);
	return rc;
}

int smart_free(smart_worker_t *w, smart_gaddr_t addr, size_t size)
{
	uint64_t r0;
	int rc;

	if (!w)
		return SMART_EINVAL;
	r0 = smart__cur_task(w)->round_trips;
	rc = free_one(w, addr, size);
	rt_charge(w, r0);
	return rc;
}

/* ---- giving everything back ------------------------------------------- */

/* Cut [cur, end) into aligned power-of-two blocks and cache or return
 * them: whole chunks as runs, the rest by class. */
static void give_region(struct smart_worker *w, struct smart__ralloc *ra,
			uint64_t cur, uint64_t end, void *buf)
{
	struct smart__blade *b = ra->b;

	while (cur < end) {
		int s = cur ? __builtin_ctzll(cur) : 63;

		while ((UINT64_C(1) << s) > end - cur)
			s--;
		if (s > (int)b->chunk_shift)
			s = (int)b->chunk_shift;
		if (s == (int)b->chunk_shift) {
			if (smart__fl_push_run(w, b, cur, 1, buf))
				ra->dropped++;
		} else if (s >= RA_MIN_SHIFT) {
			cache_add(w, ra, s, cur, buf);
		}
		cur += UINT64_C(1) << s;
	}
}

/* Bump regions and cached blocks back to the blade.  Giving a small
 * class back may need a node block, which may take a new bump region: go
 * round until nothing is held (twice is the most it takes). */
static void ra_give_back(struct smart_worker *w, struct smart__ralloc *ra,
			 void *buf)
{
	int c, round;

	for (round = 0; round < 4 && atomic_load(&ra->cached); round++) {
		for (c = 0; c < SMART_FREE_CLASSES; c++) {
			struct ra_class *k = ra->cls[c];

			if (k && k->end > k->cur) {
				uint64_t cur = k->cur, end = k->end;

				k->cur = k->end = 0;
				ra_cached_add(ra, -(int64_t)(end - cur));
				give_region(w, ra, cur, end, buf);
			}
		}
		/* small classes first: their nodes come from bigger ones */
		for (c = 0; c < SMART_FREE_CLASSES; c++) {
			struct ra_class *k = ra->cls[c];

			while (k && k->n && !cls_spill(w, ra, c, buf))
				;
			if (k && k->n) { /* the blade refused */
				ra->dropped += k->n;
				ra_cached_add(ra, -((int64_t)k->n << c));
				k->n = 0;
			}
		}
	}
}

void smart__ralloc_destroy(struct smart_worker *w)
{
	size_t mark = smart_scratch_mark(w);
	void *buf = NULL;
	int i, c;

	if (smart_scratch_alloc(w, sizeof(struct smart_free_node), &buf))
		buf = NULL;
	for (i = 0; i <= SMART_BLADE_ID_MAX; i++) {
		struct smart__ralloc *ra = w->ralloc[i];

		if (!ra)
			continue;
		if (buf && !atomic_load(&ra->b->fail) &&
		    !SMART_M_ALLOC_NO_GIVEBACK)
			ra_give_back(w, ra, buf);
		if (ra->dropped)
			smart__warn(&w->ctx->log,
				    "blade %u: %llu freed blocks "
				    "could not be given back",
				    i, (unsigned long long)ra->dropped);
		pthread_mutex_lock(&w->ctx->lock);
		w->ralloc[i] = NULL; /* before the keeper can read it freed */
		pthread_mutex_unlock(&w->ctx->lock);
		for (c = 0; c < SMART_FREE_CLASSES; c++)
			free(ra->cls[c]);
		free(ra);
	}
	smart_scratch_release(w, mark);
}

/* Called by the keeper with ctx->lock held: w->ralloc[] cannot be freed
 * under it (ra_get and smart__ralloc_destroy change it under the lock). */
uint64_t smart__ralloc_cached(struct smart_worker *w, uint16_t blade)
{
	struct smart__ralloc *ra = w->ralloc[blade];

	return ra ? atomic_load_explicit(&ra->cached, memory_order_relaxed) : 0;
}
