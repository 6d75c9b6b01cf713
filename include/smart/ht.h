/** @file
 * Smart-HT: a RACE-style extendible hash table in blade memory, operated
 * with one-sided ops only (docs/ht.md has the layouts and the protocol).
 *
 * Keys are byte strings of 1..SMART_HT_KEY_MAX bytes, values byte strings
 * of 0..SMART_HT_VALUE_MAX bytes.  A table is named by a root entry of its
 * home blade; its keys are sharded by hash over one or more blades.
 *
 * Handles: smart_ht_create() / smart_ht_open() return a table object that
 * every worker of the process shares; each operation takes the calling
 * worker.  The object is read-mostly: it holds the table's geometry
 * (immutable), the cached directory and the speculative-lookup cache (both
 * updated with atomic word stores).  Close it after every worker has
 * stopped using it.
 *
 * Semantics: insert fails with SMART_EEXIST when the key is present (of
 * concurrent inserts of one key exactly one succeeds), update and delete
 * with SMART_ENOENT when it is absent, upsert does either.  Each operation
 * is linearizable.  Errors: SMART_EINVAL for NULL or oversize arguments,
 * SMART_ENOENT from open for a root entry that names no table,
 * SMART_ENOSPC when the key's candidate buckets or the blade are full,
 * SMART_ERETRY when an operation gave up after too many conflicts, and the
 * transport's errors.  An error leaves the table unchanged.
 *
 * Thread safety: a table object may be used by any number of workers
 * (threads) of the ctx it was opened with at once, each passing its own
 * worker (a worker of another ctx: SMART_EINVAL, nothing done, from
 * every call that takes one); smart_ht_close() must
 * not run concurrently with anything else on the object.  Operations
 * follow the rules of smart_alloc(): no ops of the caller's own may be
 * queued and unsynced when one is called.
 */
#ifndef SMART_HT_H
#define SMART_HT_H

#include <stdint.h>
#include <stddef.h>
#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SMART_HT_KEY_MAX    255
#define SMART_HT_VALUE_MAX  8192
#define SMART_HT_SHARDS_MAX 16
#define SMART_HT_DEPTH_MAX  8

typedef struct smart_ht smart_ht_t;

struct smart_ht_config {
	uint32_t struct_size; /**< sizeof, set by the init function:
				 * docs/api.md, "Extensible structs" */
	/* Blades holding the shards (NULL: the home blade alone). */
	const uint16_t *blades;
	unsigned nblades; /**< 1..SMART_HT_SHARDS_MAX */
	/* 2^depth subtables per shard (0..SMART_HT_DEPTH_MAX). */
	unsigned depth;
	/* Main buckets per subtable: even, 2..2^20. */
	unsigned buckets;
	/* Entries of the process-local speculative-lookup cache: a power of
	 * two, or 0 for none (used only with the SpecLookup switch on). */
	unsigned spec_cache;
	/* Non-zero: free replaced and deleted KV blocks through the core's
	 * epoch-based reclamation (smart/epoch.h; each shard's blade is the
	 * domain of its blocks), safe against concurrent readers of any
	 * process.  Zero: they are leaked, as in Smart-HT.  [1] */
	unsigned reclaim;
	/* The hash seeds: 0 draws them at random (the default: nobody can
	 * pick keys that collide in a table they did not see created);
	 * another value derives them from it, for runs that must repeat. */
	uint64_t seed;
	/* Process-local: bytes of a subtable a split works on at a time
	 * (rounded down to 192-byte bucket groups; its registered buffer is
	 * about 3.5 times that).  0: 60 KiB. */
	unsigned split_chunk;
};

/** What a table looks like now (directory re-read for the counts). */
struct smart_ht_stats {
	unsigned global_depth; /**< largest over the shards */
	unsigned subtables;    /**< distinct subtables, all shards */
	uint64_t splits;       /**< splits done through this table object */
	uint64_t retired;      /**< blocks this ctx retired (all structures:
				 * a ctx-wide count, SMART_STAT_EPOCH_RETIRED) */
	uint64_t freed;	       /**< blocks this ctx freed after their grace
				 * period (all structures: a ctx-wide count,
				 * SMART_STAT_EPOCH_FREED) */
	uint64_t recovered;    /**< splits of dead clients this object
				 * finished or undid */
	uint64_t tent_cleared; /**< dead clients' tentative slots cleared */
	uint64_t leaked;       /**< blocks left unfreed because a transport
				 * error hid whether they were published */
	/* paths taken (tests assert them): bucket headers that disagreed
	 * with the cached directory, misses or frozen hits that the
	 * canonical entry sent back to retry, hits on frozen slots */
	uint64_t header_retries, verify_retries, frozen_hits;
};

/** Fill *out (the directory re-read through w, so one round trip per
 * shard; the size *out has in the caller's header is passed along:
 * docs/api.md §4).  SMART_EINVAL for NULL arguments (w included: the counts need
 * the remote directory), the transport's errors.  Thread: w's. */
int smart_ht_stats_sized(smart_ht_t *t, smart_worker_t *w,
			 struct smart_ht_stats *out, size_t size);
static inline int smart_ht_stats(smart_ht_t *t, smart_worker_t *w,
				 struct smart_ht_stats *out)
{
	return smart_ht_stats_sized(t, w, out, sizeof(*out));
}

/** Defaults: home blade only, depth 2, 1024 buckets, 16384 cache entries,
 * reclamation on; cfg->struct_size set (docs/api.md §4).  Cannot fail: void. */
void smart_ht_config_init(struct smart_ht_config *cfg);

/** Create a table named by root entry root_idx of blade `blade` (cfg NULL:
 * defaults).  SMART_EEXIST when that root entry is already in use.
 * Thread: w's. */
int smart_ht_create(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		    const struct smart_ht_config *cfg, smart_ht_t **out);

/** Open the table named by root entry root_idx of blade `blade`.  Every
 * blade of the table must be connected to the worker's ctx.  SMART_EINVAL
 * for NULL arguments or root_idx >= SMART_ROOT_ENTRIES, SMART_ENOENT when
 * the entry names no table (or a blade is not joined), SMART_ENOMEM, the
 * transport's errors.  cfg (NULL: defaults) gives this process's own
 * settings, spec_cache and split_chunk; the table's are the creator's.  A
 * cfg that create would refuse is refused (SMART_EINVAL).  Thread: w's. */
int smart_ht_open(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		  const struct smart_ht_config *cfg, smart_ht_t **out);

/** Named tables: a table found by name among the root entries of blade
 * `blade` (64..255, probed from the name's hash; names are 1..47 bytes).
 * create fails with SMART_EEXIST when the name is taken (of concurrent
 * creators of one name exactly one succeeds), SMART_ENOSPC when no root
 * entry is left; open with SMART_ENOENT when there is no such table, and
 * takes cfg as smart_ht_open does.  Thread: w's. */
int smart_ht_create_named(smart_worker_t *w, uint16_t blade, const char *name,
			  const struct smart_ht_config *cfg, smart_ht_t **out);
int smart_ht_open_named(smart_worker_t *w, uint16_t blade, const char *name,
			const struct smart_ht_config *cfg, smart_ht_t **out);

/** The table's name ("" for a table made by root index).  Thread: any. */
const char *smart_ht_name(const smart_ht_t *t);

/** Destroy the remote table: its root entry is released
 * (smart_root_release: a named table's entry becomes a tombstone that
 * probes walk past; the name can be created again, in a later entry of
 * its probe range), then every KV block, subtable, directory and the
 * descriptor go back to the blades; then t is closed.  No other client
 * may use the table meanwhile or afterwards (their operations would fail
 * or read freed memory).  The exception to "an error has no side effect"
 * (docs/api.md §2): on an error after the root entry's release, t stays
 * open and whatever was not freed yet stays allocated.  SMART_EINVAL for
 * NULL t or w, SMART_ENOENT when the root entry no longer names the table
 * (another drop won), the transport's errors.  Thread: w's. */
int smart_ht_drop(smart_ht_t *t, smart_worker_t *w);

/** Recovery sweep: finish or undo every split a dead client left locked,
 * and clear every tentative slot a dead client left (their blocks are
 * retired).  Operations do this by themselves, lazily, for what they run
 * into; a sweep does it for the whole table (e.g. after crashes, before a
 * check).  A client counts as dead once the blade has fenced it (it
 * closed its session, or its lease ran out) before the call.  Counts go
 * to smart_ht_stats (recovered, tent_cleared).  Reads the whole table: as
 * costly as a scan.  SMART_EINVAL for NULL t or w, the transport's errors
 * (what was recovered before one stays recovered: each repair is whole).
 * Thread: w's. */
int smart_ht_sweep(smart_ht_t *t, smart_worker_t *w);

/** Free the local table object (the remote table stays).  NULL is a no-op;
 * returns 0.  w (a worker of the ctx on the calling thread, or NULL) is
 * taken for the convention of every structure's close (docs/api.md): a
 * hash table object holds nothing remote to give back.  Thread: any, once
 * no other uses t. */
int smart_ht_close(smart_ht_t *t, smart_worker_t *w);

/** Write one key (Semantics above): insert SMART_EEXIST when present,
 * update and delete SMART_ENOENT when absent, upsert either way;
 * SMART_EINVAL for NULL or oversize arguments, SMART_ENOSPC, SMART_ERETRY,
 * the transport's errors; the table unchanged on any error.  Thread: w's. */
int smart_ht_insert(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_ht_update(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_ht_upsert(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_ht_delete(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len);

/** Copy the key's value into val (capacity cap) and its length into
 * *val_len.  SMART_ENOENT when absent; SMART_ERANGE when cap is too small,
 * in which case only *val_len (the size needed) is written.  val may be
 * NULL when cap is 0.  Thread: w's. */
int smart_ht_search(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, void *val, size_t cap, size_t *val_len);

/** Number of shards of the table.  Thread: any. */
unsigned smart_ht_shards(const smart_ht_t *t);

#ifdef __cplusplus
}
#endif
#endif
