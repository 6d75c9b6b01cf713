/*
 * The registered local buffer pool: one MR per ctx (huge pages when
 * available), carved into power-of-two blocks of at least 64 bytes.
 *
 * Buffers are allocated at setup time (tasks take theirs when their slot is
 * created), never per op, so a mutex is fine here.  Free lists are kept per
 * class; a block's class is recorded in a byte per 64-byte granule so that
 * smart_buf_free() needs no size and can reject pointers it never gave out.
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

#define POOL_MIN_SHIFT 6
#define POOL_NO_BLOCK  0xff

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

int smart_buf_alloc(smart_worker_t *w, size_t size, void **out)
{
	struct smart_ctx *ctx;
	void *p;
	int c;

	if (!w || !out || !size || size > w->ctx->pool->len)
		return SMART_EINVAL;
	ctx = w->ctx;
	c = size_class(size);
	if (c >= (int)SMART_ARRAY_SIZE(ctx->pool_free))
		return SMART_ENOMEM;
	pthread_mutex_lock(&ctx->pool_lock);
	p = pool_take(ctx, c);
	if (p)
		ctx->pool_class[((uint8_t *)p - (uint8_t *)ctx->pool->addr) >>
				POOL_MIN_SHIFT] = (uint8_t)c;
	pthread_mutex_unlock(&ctx->pool_lock);
	if (!p)
		return SMART_ENOMEM;
	*out = p;
	return 0;
}

void smart_buf_free(smart_worker_t *w, void *buf)
{
	struct smart_ctx *ctx;
	size_t off;
	uint8_t c;

	if (!w || !buf || !smart__pool_owns(w->ctx, buf, 1))
		return;
	ctx = w->ctx;
	off = (size_t)((uint8_t *)buf - (uint8_t *)ctx->pool->addr);
	if (off & ((1u << POOL_MIN_SHIFT) - 1))
		return;
	pthread_mutex_lock(&ctx->pool_lock);
	c = ctx->pool_class[off >> POOL_MIN_SHIFT];
	if (c != POOL_NO_BLOCK) {
		ctx->pool_class[off >> POOL_MIN_SHIFT] = POOL_NO_BLOCK;
		memcpy(buf, &ctx->pool_free[c], sizeof(void *));
		ctx->pool_free[c] = buf;
	}
	pthread_mutex_unlock(&ctx->pool_lock);
}
