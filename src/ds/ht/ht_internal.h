/*
 * Smart-HT internals shared by ht.c (create/open/directory) and ht_ops.c
 * (the RACE protocol).  Uses only the public API, like an application.
 *
 * The table object is shared by the workers of a process: everything in
 * it is immutable after open except the directory cache and the
 * speculative-lookup cache, which are arrays of atomic words written with
 * relaxed stores (a stale word is always detected by the bucket headers
 * or the slot comparison, never trusted).
 */
#ifndef SMART_DS_HT_INTERNAL_H
#define SMART_DS_HT_INTERNAL_H

#include <stdatomic.h>

#include "smart/smart.h"
#include "smart/ht.h"
#include "ds/ht/ht_layout.h"

struct ht_shard {
	uint16_t blade;
	smart_gaddr_t dir;
	_Atomic uint64_t depth;		/* cached global depth */
	_Atomic uint64_t ent[HT_DIR_ENTRIES];
};

struct smart_ht {
	uint16_t home;
	unsigned root;
	unsigned nshards;
	unsigned buckets;
	uint64_t seed[2];
	uint64_t spec_mask;
	_Atomic uint64_t *spec;		/* NULL: no speculative cache */
	struct ht_shard shard[SMART_HT_SHARDS_MAX];
};

/* Re-read shard sh's directory into the cache. */
int smart__ht_dir_refresh(smart_ht_t *t, smart_worker_t *w,
			  struct ht_shard *sh);

#endif
