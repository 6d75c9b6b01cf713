/*
 * Smart-HT internals shared by ht.c (create/open/directory cache),
 * ht_admin.c (named tables, drop), ht_ops.c (the RACE protocol),
 * ht_split.c (splits) and ht_recover.c (taking over a dead splitter's
 * lock).  Uses only the public API, like an application.
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
#include "ds/ht/ht_mutant.h"

struct ht_shard {
	uint16_t blade;
	uint16_t lease; /* our lease id on that blade */
	smart_gaddr_t dir;
	int reclaim;		/* free replaced blocks (core epochs) */
	_Atomic uint64_t depth; /* cached global depth */
	_Atomic uint64_t ent[HT_DIR_ENTRIES];
};

struct smart_ht {
	smart_ctx_t *ctx; /* whose workers may use it */
	uint16_t home;
	unsigned root;
	uint64_t maddr; /* the descriptor */
	unsigned nshards;
	unsigned buckets;
	unsigned split_groups; /* bucket groups per split chunk */
	uint64_t seed[2];
	char name[HT_NAME_MAX + 1];
	uint64_t spec_mask;
	_Atomic uint64_t *spec; /* NULL: no speculative cache */
	/* counters of what went through this object (smart_ht_stats) */
	_Atomic uint64_t splits, recovered, tent_cleared, leaked;
	_Atomic uint64_t header_retries, verify_retries, frozen_hits;
	_Atomic int splitting; /* splits running through this object */
	struct ht_shard shard[SMART_HT_SHARDS_MAX];
};

/* Interleaving hooks (smart/hook.h, docs/ht.md §8): read once per
 * operation or split, called at each named point. */
struct ht_hook {
	smart_hook_fn fn;
	void *arg;
};

static inline void smart__ht_hook_load(struct ht_hook *h, smart_worker_t *w)
{
	h->fn = smart_ctx_hook(smart_worker_ctx(w), &h->arg);
}

static inline int smart__ht_hook(const struct ht_hook *h, smart_worker_t *w,
				 const char *point)
{
	return __builtin_expect(h->fn != NULL, 0) ? h->fn(w, point, h->arg) : 0;
}

/* Building a table (ht.c): scratch buffers, and what was allocated. */
#define HT_BUILD_BUF (60u << 10) /* a multiple of HT_GROUP */
/* the config's alignment, for smart__ds_config_take */
#define HT_CFG_ALIGN _Alignof(struct smart_ht_config)
struct ht_build {
	size_t mark; /* scratch, released by the caller */
	void *fill;  /* HT_BUILD_BUF bytes */
	struct ht_dir *dir;
	struct ht_meta *meta;
	smart_gaddr_t maddr; /* the descriptor */
};

int smart__ht_config_ok(const struct smart_ht_config *c);
/* 1 when w is a worker of the ctx t was opened with: another ctx's
 * worker has other QPs, leases and caches, so a call with it would
 * act under the wrong lease (names our locks with another id). */
int smart__ht_own(const smart_ht_t *t, const smart_worker_t *w);
int smart__ht_build_begin(smart_worker_t *w, struct ht_build *b);
/* Everything but the root entry: shards, then the descriptor (named
 * `name`, NULL for none) with fresh random seeds. */
int smart__ht_build(smart_worker_t *w, uint16_t home,
		    const struct smart_ht_config *c, const char *name,
		    struct ht_build *b);
void smart__ht_build_free(smart_worker_t *w, const struct smart_ht_config *c,
			  struct ht_build *b);
/* ht_admin.c: free one shard of a table nobody uses any more: every
 * block its slots name, its subtables (and a dead splitter's sibling), its
 * directory.  dir and buf are scratch (a directory, HT_BUILD_BUF). */
int smart__ht_shard_free(smart_worker_t *w, uint16_t blade,
			 smart_gaddr_t dir_addr, uint64_t sub_size,
			 struct ht_dir *dir, void *buf);
/* The descriptor a root entry holds: SMART_ENOENT when it holds none. */
int smart__ht_meta_read(smart_worker_t *w, uint16_t blade, uint64_t maddr,
			struct ht_meta *m);
/* The table object for descriptor m found at root entry root (c: the
 * process-local knobs, NULL for the defaults). */
int smart__ht_table_open(smart_worker_t *w, uint16_t blade, unsigned root,
			 uint64_t maddr, const struct ht_meta *m,
			 const struct smart_ht_config *c, smart_ht_t **out);
/* Open the table whose descriptor root entry root_idx holds (maddr), with
 * cfg's process-local settings. */
int smart__ht_open_at(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		      uint64_t maddr, const struct smart_ht_config *cfg,
		      smart_ht_t **out);

/* Re-read shard sh's directory (header and entries) into the cache. */
int smart__ht_dir_refresh(smart_ht_t *t, smart_worker_t *w,
			  struct ht_shard *sh);

/* Split the subtable that directory entry `ent` (as cached, for index
 * sub) names.  0 when split (the cache is refreshed), SMART_EAGAIN when
 * somebody else holds or changed the entry (a dead holder's split is
 * finished or undone first), SMART_ENOSPC at the maximum depth or when
 * the blade is full. */
int smart__ht_split(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		    unsigned sub, uint64_t ent);

/* The canonical entry of index sub, read now, is locked: if its holder is
 * dead, take the lock over and finish or undo the split (ht_recover.c).
 * now: ask the blade whether the holder lives (one READ) rather than the
 * keeper's view, which lags a death by up to a renewal period (the sweep
 * must see every death that happened before it was called).  0 when
 * something was recovered, SMART_EAGAIN when the holder is alive or the
 * entry changed meanwhile (retry later), or an error. */
int smart__ht_recover(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		      unsigned canon, uint64_t ent, int now);

/* ht_split.c, for recovery: the split recorded as rec in sib[s], whose
 * canonical entry (ent, as read) we now hold locked.  BUILD: undone;
 * PUBLISH: finished. */
int smart__ht_split_resume(smart_ht_t *t, smart_worker_t *w,
			   struct ht_shard *sh, unsigned s, uint64_t ent,
			   uint64_t rec);

/* Retire the block a slot value names, once its unlink has completed: the
 * core frees it when no reader of any client can hold it (docs/epochs.md);
 * without reclamation it is leaked.  Counted by the core (per worker:
 * SMART_STAT_EPOCH_RETIRED), not here, so that no op writes a line every
 * worker shares. */
static inline void smart__ht_retire(smart_worker_t *w,
				    const struct ht_shard *sh, uint64_t slot)
{
	if (sh->reclaim)
		(void)smart_epoch_retire(w, sh->blade,
					 smart_gaddr(sh->blade,
						     HT_SLOT_PTR(slot)),
					 HT_SLOT_UNITS(slot) * HT_KV_UNIT);
}

/* Bytes of a subtable of `buckets` main buckets (groups of 3). */
static inline uint64_t smart__ht_sub_bytes(unsigned buckets)
{
	return (uint64_t)(buckets / 2) * HT_GROUP;
}

static inline uint64_t smart__ht_sub_size(const smart_ht_t *t)
{
	return smart__ht_sub_bytes(t->buckets);
}

static inline smart_gaddr_t smart__ht_ent_addr(const struct ht_shard *sh,
					       unsigned i)
{
	return smart_gaddr_add(sh->dir,
			       offsetof(struct ht_dir, ent) + 8 * (uint64_t)i);
}

static inline smart_gaddr_t smart__ht_sib_addr(const struct ht_shard *sh,
					       unsigned i)
{
	return smart_gaddr_add(sh->dir,
			       offsetof(struct ht_dir, sib) + 8 * (uint64_t)i);
}

/* The canonical index of the subtable that entry e names for index i. */
static inline unsigned smart__ht_canon(uint64_t e, unsigned i)
{
	return i & ((1u << HT_ENT_DEPTH(e)) - 1);
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
