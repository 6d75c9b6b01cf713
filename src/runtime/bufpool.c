/*
 * The registered local buffer pool: one MR per ctx (huge pages when
 * available), carved into power-of-two blocks of at least 64 bytes.
 *
 * Blocks come and go through a small cache per worker and class (no lock:
 * the worker's thread only); the ctx-wide free lists and bump pointer
 * behind it are under pool_lock, which is taken only to refill or spill a
 * cache by a few blocks at a time, when a class is first used, or for
 * blocks too big to cache.  So a program that frees what it allocates
 * takes no lock shared between workers once warm (test_noalloc counts
 * SMART_STAT_POOL_LOCKS).  Each 64-byte granule has a byte: the class of
 * the block given out there, POOL_CACHED | class for a block sitting in a
 * worker's cache, POOL_NO_BLOCK otherwise; so smart_buf_free() needs no
 * size and ignores a pointer it never gave out, or gets a second time.
 * Only the owner of a block (the caller holding it, or the worker caching
 * it) ever writes its byte.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core.h"

#define POOL_MIN_SHIFT 6
#define POOL_NO_BLOCK  0xff
#define POOL_CACHED    0x80
#define POOL_MOVE      (SMART_BUF_CACHE / 2) /* blocks per refill/spill */

int smart__pool_create(struct smart_ctx *ctx)
{
	size_t granules = ctx->o.buf_pool >> POOL_MIN_SHIFT;
	int rc;

	rc = ctx->tp->mr_alloc(ctx->dom, ctx->o.buf_pool, ctx->o.hugepages, 0,
			       &ctx->pool);
	if (rc)
		return rc;
	ctx->pool_class = malloc(granules);
	if (!ctx->pool_class) {
		ctx->tp->mr_free(ctx->dom, ctx->pool);
		ctx->pool = NULL;
		return SMART_ENOMEM;
	}
	memset(ctx->pool_class, POOL_NO_BLOCK, granules);
	return 0;
}

void smart__pool_destroy(struct smart_ctx *ctx)
{
	if (ctx->pool)
		ctx->tp->mr_free(ctx->dom, ctx->pool);
	ctx->pool = NULL;
	free(ctx->pool_class);
	ctx->pool_class = NULL;
}

static int size_class(size_t size)
{
	int c = POOL_MIN_SHIFT;

	while (((size_t)1 << c) < size)
		c++;
	return c;
}

static uint8_t *granule(struct smart_ctx *ctx, const void *p)
{
	return &ctx->pool_class[((const uint8_t *)p -
				 (const uint8_t *)ctx->pool->addr) >>
				POOL_MIN_SHIFT];
}

/* Pop a free block of class c, or bump-allocate one.  pool_lock held. */
static void *pool_take(struct smart_ctx *ctx, int c)
{
	uint64_t bsize = UINT64_C(1) << c, off;
	void *p = ctx->pool_free[c];

	if (p) {
		memcpy(&ctx->pool_free[c], p, sizeof(void *));
		return p;
	}
	off = (ctx->pool_bump + bsize - 1) & ~(bsize - 1);
	if (off > ctx->pool->len || bsize > ctx->pool->len - off)
		return NULL;
	ctx->pool_bump = off + bsize;
	return (uint8_t *)ctx->pool->addr + off;
}

/* pool_lock held. */
static void pool_give(struct smart_ctx *ctx, void *p, int c)
{
	memcpy(p, &ctx->pool_free[c], sizeof(void *));
	ctx->pool_free[c] = p;
}

static void pool_lock(struct smart_worker *w)
{
	pthread_mutex_lock(&w->ctx->pool_lock);
	SMART_STAT_INC(w, SMART_STAT_POOL_LOCKS);
}

/* Fill the worker's cache of class c with up to POOL_MOVE blocks. */
static void cache_refill(struct smart_worker *w, int c)
{
	struct smart_ctx *ctx = w->ctx;
	struct smart__bufcache *bc = &w->bufcache[c];
	void *p;

	pool_lock(w);
	while (bc->n < POOL_MOVE && (p = pool_take(ctx, c))) {
		*granule(ctx, p) = (uint8_t)(POOL_CACHED | c);
		bc->v[bc->n++] = p;
	}
	pthread_mutex_unlock(&ctx->pool_lock);
}

/* Hand the last `n` cached blocks of class c back to the ctx. */
static void cache_spill(struct smart_worker *w, int c, unsigned n)
{
	struct smart__bufcache *bc = &w->bufcache[c];

	pool_lock(w);
	while (n-- && bc->n) {
		void *p = bc->v[--bc->n];

		*granule(w->ctx, p) = POOL_NO_BLOCK;
		pool_give(w->ctx, p, c);
	}
	pthread_mutex_unlock(&w->ctx->pool_lock);
}

void smart__bufcache_flush(struct smart_worker *w)
{
	int c;

	for (c = 0; c < SMART_BUF_CLASSES; c++)
		if (w->bufcache[c].n)
			cache_spill(w, c, w->bufcache[c].n);
}

int smart_buf_alloc(smart_worker_t *w, size_t size, void **out)
{
	struct smart_ctx *ctx;
	struct smart__bufcache *bc;
	void *p;
	int c;

	if (!w || !out || !size || size > w->ctx->pool->len)
		return SMART_EINVAL;
	ctx = w->ctx;
	c = size_class(size);
	if (c >= (int)SMART_ARRAY_SIZE(ctx->pool_free))
		return SMART_ENOMEM;
	if (c < SMART_BUF_CLASSES) {
		bc = &w->bufcache[c];
		if (!bc->n)
			cache_refill(w, c);
		if (!bc->n)
			return SMART_ENOMEM;
		p = bc->v[--bc->n];
		*granule(ctx, p) = (uint8_t)c;
		*out = p;
		return 0;
	}
	pool_lock(w);
	p = pool_take(ctx, c);
	if (p)
		*granule(ctx, p) = (uint8_t)c;
	pthread_mutex_unlock(&ctx->pool_lock);
	if (!p)
		return SMART_ENOMEM;
	*out = p;
	return 0;
}

void smart_buf_free(smart_worker_t *w, void *buf)
{
	struct smart_ctx *ctx;
	struct smart__bufcache *bc;
	size_t off;
	uint8_t c;

	if (!w || !buf || !smart__pool_owns(w->ctx, buf, 1))
		return;
	ctx = w->ctx;
	off = (size_t)((uint8_t *)buf - (uint8_t *)ctx->pool->addr);
	if (off & ((1u << POOL_MIN_SHIFT) - 1))
		return;
	/* The caller owns the block it frees, so the byte is stable for a
	 * pointer the pool gave out; a stray pointer reads some other
	 * block's byte (cached or not a block: ignored) and the locked path
	 * below checks again for big classes. */
	c = __atomic_load_n(granule(ctx, buf), __ATOMIC_RELAXED);
	if (c < SMART_BUF_CLASSES) {
		bc = &w->bufcache[c];
		if (bc->n == SMART_BUF_CACHE)
			cache_spill(w, c, POOL_MOVE);
		*granule(ctx, buf) = (uint8_t)(POOL_CACHED | c);
		bc->v[bc->n++] = buf;
		return;
	}
	if (c & POOL_CACHED)
		return;
	pool_lock(w);
	c = *granule(ctx, buf);
	if (!(c & POOL_CACHED)) {
		*granule(ctx, buf) = POOL_NO_BLOCK;
		pool_give(ctx, buf, c);
	}
	pthread_mutex_unlock(&ctx->pool_lock);
}
