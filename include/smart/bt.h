/** @file
 * Smart-BT: a B-link tree on one-sided ops (Sherman's design, docs/bt.md).
 *
 * Keys are byte strings of 1..key_max bytes ordered by memcmp (shorter
 * first on a common prefix); values are 0..val_max bytes.  Both maxima are
 * fixed when the tree is created and stored in it.  8-byte integer keys
 * go through the *_u64 calls, stored big-endian so that their byte order
 * is their numeric order.  A tree is named by a root entry of its home
 * blade, like a hash table (smart/ht.h), and can be opened by any number
 * of processes.
 *
 * Hook points (smart/hook.h, for tests): "bt.write.locked", a write holding
 * its leaf's lock, before it writes anything back; a non-zero return
 * fails the write there (the lock is released).  "bt.write.torn" (in a
 * merge "bt.merge.torn"), inside any write under a lock, once its redo
 * record and the first half of its first node's bytes have landed (the
 * rest follows; the return value is ignored): a test kills the writer
 * there to leave a half-written node.  "bt.scan.next", a scan between
 * two leaves, before it reads the next one; a non-zero return ends the
 * scan there with that code.  "bt.log.landed", in a write spanning
 * blades (a merge), each time one blade's stamps and copy of the record
 * have landed, before the next blade's are posted (with a hook set they
 * go one blade at a time; the return value is ignored).
 * "bt.log.stamped", in any logged write, once its stamps on a blade
 * landed and before its record there is posted (return value ignored).
 * "bt.split.published", a leaf split written and its leaf unlocked,
 * before its separator goes into the parent (return value ignored).
 * With any hook set, writes take a round trip more for each seam.
 *
 * Counters: the tree object's own (smart_bt_stats: the protocol's events,
 * splits, retries, hand-overs, shared by its workers), and on
 * every op the ctx's per-worker SMART_STAT_CACHE_HITS/MISSES (the index
 * cache, per internal node looked up) and SMART_STAT_SPEC_HITS/MISSES
 * (searches answered by one entry's READ, and the others: nothing cached
 * for the key, or what was cached did not check): smart/stats.h.
 *
 * Contract (libuv-style):
 *   - a smart_bt_t may be used by every worker of the ctx it was opened
 *     with, from any number of their tasks at once; each call takes the
 *     worker of the calling thread;
 *   - 0 or a negative SMART_E* code: SMART_EINVAL for bad arguments (NULL,
 *     a worker of another ctx, a key of 0 or more than key_max bytes, a
 *     value over val_max),
 *     SMART_ENOENT for an absent key (search, update, delete), SMART_EEXIST
 *     for a present one (insert), SMART_ERANGE when a search's or scan's
 *     buffer is too small (a search copies nothing then, a scan returns the
 *     entries that fit), SMART_ENOSPC when a
 *     blade is full, transport errors as they come;
 *   - an error means no change, except a transport error after the write
 *     was posted, which leaves the key with its old or its new value.
 */
#ifndef SMART_BT_H
#define SMART_BT_H

#include <stddef.h>
#include <stdint.h>

#include "smart/ctx.h"
#include "smart/gaddr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SMART_BT_KEY_MAX    255
#define SMART_BT_VALUE_MAX  4096
#define SMART_BT_BLADES_MAX 16
#define SMART_BT_NODE_MAX   65536 /**< node_size: 512..this, a power of 2 */

typedef struct smart_bt smart_bt_t;

enum {
	SMART_BT_LOCKS_AUTO = 0,
	SMART_BT_LOCKS_HOST = 1,
	SMART_BT_LOCKS_DEVICE = 2,
};

struct smart_bt_config {
	uint32_t struct_size; /**< sizeof, set by the init function:
				 * docs/api.md, "Extensible structs" */
	/* Blades holding nodes, spread at random (NULL: the home blade). */
	const uint16_t *blades;
	unsigned nblades; /**< 1..SMART_BT_BLADES_MAX */
	unsigned key_max; /**< 1..SMART_BT_KEY_MAX; default 16 */
	unsigned val_max; /**< 0..SMART_BT_VALUE_MAX; default 16 */
	/* Bytes per node: a power of two, 512..65536, with room for at
	 * least 4 leaf entries and 4 internal entries; default 1024. */
	unsigned node_size;
	/* Lock words in each blade's global lock table: a power of two, or
	 * 0 (default): when the tables may go to device memory and every
	 * blade has at least 32 KiB of it (DEVICE: any), as many as the
	 * smallest holds (Sherman's 32768 in 256 KiB; a table that then
	 * finds no room left keeps that count in host memory), else 65536
	 * (512 KiB per blade). */
	unsigned locks;
	/* Where the lock tables go (HOCL's global level): AUTO (default)
	 * the blade's device memory (NIC memory, smart/alloc.h) where it
	 * has room for the table, else its region; HOST the region always;
	 * DEVICE device memory on every blade, or create fails
	 * (SMART_ENOTSUP: a blade has none; SMART_ENOSPC: no room;
	 * SMART_EINVAL: a table larger than SMART_DM_MAX). */
	int lock_memory;
	/* This process's caches, not the tree's (read by create and
	 * open): bytes of internal-node copies, the index
	 * cache (default 16 MiB; 0: none), and slots of the speculative
	 * lookup cache, key -> leaf entry, 16 bytes each (default 65536;
	 * 0: none; used only with the SpecLookup technique on).  Both are
	 * rounded down to powers of two. */
	size_t cache_bytes;
	unsigned spec_entries;
	/* HOCL's local lock table (default 1): this process's tasks queue
	 * for a node lock locally and hand it over; 0: every task CASes the
	 * remote lock word itself (Sherman without HOCL, for comparison). */
	int hocl;
};

/** Counters of one tree object (this process's view); paths taken. */
struct smart_bt_stats {
	unsigned height; /**< levels, as last seen */
	uint64_t leaf_splits, inner_splits, root_splits;
	uint64_t crc_retries;	 /**< node reads that saw a torn node */
	uint64_t move_rights;	 /**< B-link sibling chases */
	uint64_t lock_retries;	 /**< failed remote lock CASes */
	uint64_t handovers;	 /**< locks passed on without a CAS */
	uint64_t cache_drops;	 /**< stale internal nodes dropped */
	uint64_t lock_takeovers; /**< locks taken from dead holders */
	/* deletes that emptied a leaf: the leaf took its right neighbour
	 * in and the neighbour was retired through the epochs (merges), or
	 * that could not be done at once (merge_skips: the leaf stays,
	 * empty, for inserts to reuse) */
	uint64_t merges, merge_skips;
	/* writes a dead lock holder left (maybe half done) redone from its
	 * redo record by this process; writes that waited for a free record */
	uint64_t repairs, rec_waits;
	unsigned dm_lock_tables; /**< blades whose lock table is in
					 * device memory (of the tree's) */
	/* records of a dead holder not redone: a write spanning blades
	 * that died before its commit, so none of it was posted */
	uint64_t uncommitted;
	/* separators a walk found missing from a leaf's parent (its
	 * splitter died before putting it there, or was about to) and put
	 * in for it */
	uint64_t sep_fixes;
	/* leaves a scan took from those it read ahead, all at once, from a
	 * cached parent */
	uint64_t scan_ahead;
};

/** Defaults: home blade, 16-byte keys and values, 1 KiB nodes, the caches
 * above; cfg->struct_size set (docs/api.md §4).  Cannot fail: void. */
void smart_bt_config_init(struct smart_bt_config *cfg);

/** Create a tree named by root entry root_idx of blade `blade` (cfg NULL:
 * defaults).  SMART_EEXIST when that root entry is in use (or, in the
 * named range, holds a tombstone: smart/alloc.h).  Thread: w's. */
int smart_bt_create(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		    const struct smart_bt_config *cfg, smart_bt_t **out);

/** Open the tree of root entry root_idx (SMART_ENOENT: none there), with
 * default caches (cfg NULL), or with cfg's (only its cache fields are
 * read).  SMART_EINVAL for NULL w or out, root_idx >= SMART_ROOT_ENTRIES or
 * a cfg whose struct_size is refused (docs/api.md §4), the transport's
 * errors.  Thread: w's. */
int smart_bt_open(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		  const struct smart_bt_config *cfg, smart_bt_t **out);

/** Trees by name among the root entries of blade `blade` (64..255, probed
 * from the name's hash; names are 1..SMART_ROOT_NAME_MAX bytes: see
 * smart/alloc.h; a hash table may carry the same name as a tree).  create: SMART_EEXIST
 * when the name is taken (of concurrent creators exactly one succeeds),
 * SMART_ENOSPC when no root entry is left; open: SMART_ENOENT when there
 * is no such tree.  cfg (NULL: defaults) as for create and
 * smart_bt_open.  Drop leaves a tombstone; the name can be created
 * again.  Thread: w's. */
int smart_bt_create_named(smart_worker_t *w, uint16_t blade, const char *name,
			  const struct smart_bt_config *cfg, smart_bt_t **out);
int smart_bt_open_named(smart_worker_t *w, uint16_t blade, const char *name,
			const struct smart_bt_config *cfg, smart_bt_t **out);

/** The maxima the tree was created with.  Thread: any. */
unsigned smart_bt_key_max(const smart_bt_t *t);
unsigned smart_bt_val_max(const smart_bt_t *t);

/** Write one key (the Contract above): insert SMART_EEXIST when present,
 * update and delete SMART_ENOENT when absent, upsert either way;
 * SMART_EINVAL for bad arguments, SMART_ENOSPC, the transport's errors
 * (old or new value then).  Thread: w's. */
int smart_bt_insert(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_bt_update(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_bt_upsert(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len);
int smart_bt_delete(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len);
/** Copy the value into buf (cap bytes) and its length into *val_len.
 * SMART_ENOENT when absent, SMART_ERANGE when cap is too small (nothing
 * copied, *val_len the length), SMART_EINVAL for bad arguments, the
 * transport's errors.  Thread: w's. */
int smart_bt_search(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, void *buf, size_t cap, size_t *val_len);

/** 8-byte integer keys (the tree's key_max must be at least 8, else
 * SMART_EINVAL); errors as for the byte-string calls.  Thread: w's. */
int smart_bt_insert_u64(smart_bt_t *t, smart_worker_t *w, uint64_t key,
			const void *val, size_t val_len);
int smart_bt_search_u64(smart_bt_t *t, smart_worker_t *w, uint64_t key,
			void *buf, size_t cap, size_t *val_len);

/** One entry of a scan's output: key and value point into the caller's
 * buffer.  Frozen (docs/api.md §4: an array element): never grows. */
struct smart_bt_entry {
	const void *key, *val;
	uint16_t key_len, val_len;
};

/** Range scan, ascending: the entries with from <= key < to (to NULL: no
 * upper bound), at most max of them, into out[] (max slots) with their
 * bytes in buf (cap bytes); *n is the number returned.  Fewer than max
 * entries and 0: the range is exhausted.  SMART_ERANGE when buf fills
 * first: the *n entries before are returned (scan on from the last).
 * Under concurrent writers a scan returns every key present throughout it
 * and none absent throughout it, in order, each once (docs/bt.md §5).
 * SMART_EINVAL for bad arguments, the transport's errors.  Thread: w's. */
int smart_bt_scan(smart_bt_t *t, smart_worker_t *w, const void *from,
		  size_t from_len, const void *to, size_t to_len,
		  struct smart_bt_entry *out, size_t max, void *buf, size_t cap,
		  size_t *n);

/** Bulk load: the next entry of a sorted input, 1 (key, value and their
 * lengths set; they need to stay valid only until the next call), 0 at
 * the end, or a negative SMART_E* code to stop the load with. */
typedef int (*smart_bt_next_fn)(void *arg, const void **key, size_t *klen,
				const void **val, size_t *vlen);

/** Fill a new tree from input in strictly ascending key order, leaves and
 * internal nodes filled to fill_pct percent (10..100; 100 packs them,
 * for a tree that will only be read), in a round trip per node instead
 * of several per key; *loaded (may be NULL) gets the number of input
 * entries.  The tree must still be one leaf (a few entries there are
 * merged in).  SMART_EEXIST when it has grown past one leaf, or for an
 * input key it holds; SMART_EINVAL for an input out of order or with a
 * key or value the tree cannot hold; then nothing changed.  Other
 * clients may use the tree meanwhile: readers see what it held, writers
 * wait, until the load is published at once.  Thread: w's. */
int smart_bt_bulk_load(smart_bt_t *t, smart_worker_t *w, smart_bt_next_fn next,
		       void *arg, unsigned fill_pct, uint64_t *loaded);

/** Fill *out with the tree object's counters (no remote read: w may be
 * NULL; the _sized form takes the caller's sizeof, docs/api.md §4).  SMART_EINVAL for NULL t or out.  Thread: any. */
int smart_bt_stats_sized(smart_bt_t *t, smart_worker_t *w,
			 struct smart_bt_stats *out, size_t size);
static inline int smart_bt_stats(smart_bt_t *t, smart_worker_t *w,
				 struct smart_bt_stats *out)
{
	return smart_bt_stats_sized(t, w, out, sizeof(*out));
}

/** Destroy the remote tree: the root entry released (smart_root_release),
 * every node and lock table freed; closes t.  No other client may use the
 * tree then.  SMART_EINVAL for NULL t or w, SMART_ENOENT when the root
 * entry no longer names the tree, SMART_EPROTO for a descriptor or node
 * chain that is not this tree's, the transport's errors.  The exception to
 * "an error has no side effect" (docs/api.md §2): an error after the root
 * entry's release leaves t open and what was not freed yet allocated.
 * Thread: w's. */
int smart_bt_drop(smart_bt_t *t, smart_worker_t *w);

/** Free the local tree object; NULL is a no-op; returns 0 (no SMART_E*
 * code: what cannot be given back stays claimed, as with w NULL).  w (a
 * worker of the ctx, on its thread) gives this object's redo area on each
 * blade back for the next object to reuse (docs/bt.md §4); with w NULL
 * the area stays claimed until this ctx's leases end, and is adopted after
 * that.  Thread: w's (any with w NULL), once no other uses t. */
int smart_bt_close(smart_bt_t *t, smart_worker_t *w);

#ifdef __cplusplus
}
#endif

#endif
