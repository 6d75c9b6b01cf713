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
	int reclaim;			/* free replaced blocks (core epochs) */
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
	_Atomic uint64_t splits;	/* splits done through this object */
	_Atomic uint64_t retired;	/* KV blocks retired through it */
	struct ht_shard shard[SMART_HT_SHARDS_MAX];
};

/* Re-read shard sh's directory into the cache. */
int smart__ht_dir_refresh(smart_ht_t *t, smart_worker_t *w,
			  struct ht_shard *sh);

/* Split the subtable that directory entry `ent` (as cached, for index
 * sub) names.  0 when split (the cache is refreshed), SMART_EAGAIN when
 * somebody else holds or changed the entry, SMART_ENOSPC at the maximum
 * depth or when the blade is full. */
int smart__ht_split(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		    unsigned sub, uint64_t ent);


static inline uint64_t smart__ht_sub_size(const smart_ht_t *t)
{
	return (uint64_t)(t->buckets / 2) * HT_GROUP;
}

static inline smart_gaddr_t smart__ht_ent_addr(const struct ht_shard *sh,
					       unsigned i)
{
	return smart_gaddr_add(sh->dir, offsetof(struct ht_dir, ent) +
				       8 * (uint64_t)i);
}

static inline uint32_t smart__ht_kv_crc(const struct ht_kv *kv)
{
	return smart_crc32c(0, (const uint8_t *)kv + 4,
			    sizeof(*kv) - 4 + kv->key_len + kv->val_len);
}

/* A block read back is usable when its CRC matches and it fits. */
static inline int smart__ht_kv_valid(const struct ht_kv *kv, size_t size)
{
	if (kv->key_len > SMART_HT_KEY_MAX ||
	    sizeof(*kv) + kv->key_len + (uint64_t)kv->val_len > size)
		return 0;
	return smart__ht_kv_crc(kv) == kv->crc;
}

#endif
