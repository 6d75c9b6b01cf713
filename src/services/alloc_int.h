/*
 * The remote allocator's internals, shared by alloc.c (the per-worker
 * caches and the public API) and freelist.c (the blade-wide free lists).
 * docs/layout.md has the remote side, src/wire/services.h the layouts.
 *
 * Ownership: a struct smart__ralloc belongs to one worker and one blade
 * and is touched only by that worker's thread (its tasks interleave only
 * at syncs); `cached` is also read by the keeper thread, relaxed.
 */
#ifndef SMART_CORE_ALLOC_INT_H
#define SMART_CORE_ALLOC_INT_H

#include "runtime/core.h"
#include "wire/services.h"

#define RA_MIN_SHIFT  4 /* smallest class: 16 bytes */
#define RA_NODE_SHIFT SMART_FREE_NODE_SHIFT
#define RA_CACHE      (2 * SMART_FREE_BATCH + 2) /* blocks per class */

/* One size class of one worker on one blade. */
struct ra_class {
	uint64_t cur, end;    /* bump region [cur, end) */
	uint32_t n;	      /* blocks in v[] */
	uint8_t refilling;    /* a task is fetching blocks for the class */
	uint64_t v[RA_CACHE]; /* free block offsets */
};

struct smart__ralloc {
	struct smart__blade *b;
	struct ra_class *cls[SMART_FREE_CLASSES]; /* created on use */
	_Atomic uint64_t cached; /* bytes in v[] and bump regions */
	uint64_t dropped;	 /* blocks lost for want of a node */
};

static inline void ra_cached_add(struct smart__ralloc *ra, int64_t d)
{
	atomic_store_explicit(&ra->cached,
			      atomic_load_explicit(&ra->cached,
						   memory_order_relaxed) +
				      (uint64_t)d,
			      memory_order_relaxed);
}

/* freelist.c: the blade-wide lists.  All may sync; all return 0 or a
 * negative SMART_E* code.  `buf` is 512 bytes of registered memory. */

/* Push a batch: node (512-byte aligned block of class node_class) gets
 * the count offsets of blocks of class c written into it. */
int smart__fl_push_batch(struct smart_worker *w, struct smart__blade *b, int c,
			 uint64_t node, int node_class, const uint64_t *off,
			 uint32_t count, void *buf);
/* Pop a batch of class c into *node (512 bytes at buf); *empty when the
 * list was empty. */
int smart__fl_pop_batch(struct smart_worker *w, struct smart__blade *b, int c,
			void *buf, uint64_t *node_off, int *empty);
/* Push a run of k chunks at off; pop a run of at least k chunks (the
 * rest goes back): *off = 0 when there is none. */
int smart__fl_push_run(struct smart_worker *w, struct smart__blade *b,
		       uint64_t off, uint64_t k, void *buf);
int smart__fl_pop_run(struct smart_worker *w, struct smart__blade *b,
		      uint64_t k, void *buf, uint64_t *off);

static inline int ra_log2_floor(uint64_t v)
{
	return 63 - __builtin_clzll(v);
}

static inline int ra_log2_ceil(uint64_t v)
{
	return v <= 1 ? 0 : 64 - __builtin_clzll(v - 1);
}

#endif
