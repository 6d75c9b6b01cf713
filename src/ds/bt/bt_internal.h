/*
 * Smart-BT internals shared by its files: the local tree object, node
 * geometry, the node access and lock calls (bt_node.c, bt_lock.c).
 *
 * Invariants: a smart_bt is read-only after open except for its atomics
 * (cached root, counters, the local lock table), so every worker of the
 * ctx may use it at once.  An operation waits for at most one node lock
 * at a time (a split unlocks the child before it locks the parent; a
 * merge, holding a leaf, only tries its neighbour's and parent's:
 * smart__bt_trylock), so lock-table collisions cannot deadlock.
 */
#ifndef SMART_DS_BT_INTERNAL_H
#define SMART_DS_BT_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include "ds/bt/bt_layout.h"
#include "ds/bt/bt_mutant.h"
#include "smart/smart.h"

#define BT_LLOCKS	4096u	/* local lock table slots (a power of 2) */
#define BT_HANDOVER_MAX 8u	/* hand-overs in a row (Sherman's HOCL) */
#define BT_READ_TRIES	100000u /* torn reads before giving up */
#define BT_STALE_TRIES                                                         \
	64u		  /* ... at an address a cache gave: it
				 * may be freed memory by now */
#define BT_HEIGHT_MAX 32u /* entries of a descent's path */
/* The highest level a node may have: a split at it still finds its
 * parent's and grandparent's slots inside a path (level + 2). */
#define BT_LEVEL_MAX  (BT_HEIGHT_MAX - 3u)
#define BT_HOPS_MAX   1000000u /* nodes one walk may visit */

/* One slot of the local lock table (HOCL, docs/bt.md §4): tasks of this
 * process wanting a lock word that hashes here queue FIFO by ticket; the
 * one served takes the remote lock (or finds it handed over). */
struct bt_llock {
	_Atomic uint32_t next, serving;
	_Atomic uint64_t held; /* remote lock word (gaddr) this process
				 * still holds through the slot, 0: none */
	uint32_t handovers;    /* in a row; touched by the served only */
};

struct smart_bt {
	smart_ctx_t *ctx; /* whose workers may use it */
	uint16_t home;
	unsigned root_idx;
	smart_gaddr_t meta;
	unsigned node_size, key_max, val_max, locks, nblades;
	uint16_t blades[SMART_BT_BLADES_MAX];
	uint64_t lock_off[SMART_BT_BLADES_MAX]; /* bt_meta's */
	uint64_t dir_off[SMART_BT_BLADES_MAX];
	uint16_t lease[SMART_BT_BLADES_MAX]; /* our lease id on each */
	/* bt_redo.c: our redo directory slot and area on each blade (area
	 * offset 0: none claimed), the records in use, write sequence */
	uint16_t dslot[SMART_BT_BLADES_MAX];
	uint64_t area[SMART_BT_BLADES_MAX];
	unsigned rec_size;	   /* bytes per record, 64-aligned */
	uint32_t rec_seq[BT_RECS]; /* record i's last write; touched
					 * only by the record's holder */
	/* bit i: record i in use; the one word every logged write of the
	 * object's workers changes, on a line of its own */
	_Alignas(64) _Atomic uint32_t rec_busy;
	char rec_busy_line[60];
	/* geometry */
	unsigned fence_len;	      /* bytes of both fences, 8-aligned */
	unsigned ent_off;	      /* first entry */
	unsigned leaf_ent, inner_ent; /* entry sizes */
	unsigned leaf_cap, inner_cap; /* entries per node */
	uint32_t salt;		      /* seeds entry crcs: this tree's */
	int hocl;		      /* the local lock table is used */
	/* bt_cache.c: the index cache (cslot-byte slots) and the
	 * speculative one; NULL when off */
	uint8_t *cache;
	size_t cslot;
	uint64_t cmask, smask;
	struct bt_spec *spec;
	_Atomic uint64_t root; /* cached root node */
	_Atomic uint64_t rng;  /* for picking blades */
	_Atomic uint64_t leaf_splits, inner_splits, root_splits, crc_retries,
		move_rights, lock_retries, handovers;
	_Atomic uint64_t cache_drops, lock_takeovers, merges, merge_skips;
	_Atomic uint64_t repairs, rec_waits, uncommitted, sep_fixes;
	_Atomic uint64_t scan_ahead;
	_Atomic uint64_t release_retries; /* lost releases tried again */
	_Atomic unsigned height;
	struct bt_llock ll[BT_LLOCKS];
};

struct bt_wlog; /* bt_redo.c */

/* A node in local memory, as read. */
struct bt_node {
	struct bt_node_hdr h;
	/* node_size - 32 more bytes follow */
};

static inline uint8_t *bt_low(const smart_bt_t *t, struct bt_node *n)
{
	(void)t;
	return (uint8_t *)n + sizeof(struct bt_node_hdr);
}

static inline uint8_t *bt_high(const smart_bt_t *t, struct bt_node *n)
{
	return bt_low(t, n) + t->key_max;
}

static inline struct bt_leaf_ent *bt_leaf(const smart_bt_t *t,
					  struct bt_node *n, unsigned i)
{
	return (struct bt_leaf_ent *)((uint8_t *)n + t->ent_off +
				      (size_t)i * t->leaf_ent);
}

static inline struct bt_inner_ent *bt_inner(const smart_bt_t *t,
					    struct bt_node *n, unsigned i)
{
	return (struct bt_inner_ent *)((uint8_t *)n + t->ent_off +
				       (size_t)i * t->inner_ent);
}

/* A 64-bit finaliser (murmur3's) for hashing addresses: lock words, local
 * lock slots, index cache slots. */
static inline uint64_t bt_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x;
}

/* memcmp order, a proper prefix first. */
static inline int bt_keycmp(const void *a, size_t al, const void *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);

	return c ? c : (al > bl) - (al < bl);
}

/* Is key inside the node's fences?  -1: below low, 1: at or above high. */
/* 1 when w is a worker of the ctx t was opened with: another ctx's
 * worker has other QPs and leases, so its locks would name another id
 * than t->lease[] and its redo records another area. */
int smart__bt_own(const smart_bt_t *t, const smart_worker_t *w);
int smart__bt_fence_cmp(const smart_bt_t *t, struct bt_node *n, const void *key,
			size_t klen);

/* bt_node.c: read the node at a (node_size bytes into buf, registered)
 * until its crc checks; SMART_ERETRY after BT_READ_TRIES torn reads,
 * SMART_EPROTO for a whole node no writer of ours makes. */
int smart__bt_read(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		   struct bt_node *buf);
int smart__bt_read_n(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		     struct bt_node *buf, unsigned tries);
/* Seal n (version + 1, crc) for writing. */
void smart__bt_seal(smart_bt_t *t, struct bt_node *n);
/* Post a logged WRITE (smart__bt_write_logged) of the whole node n (sealed)
 * at a, locked; of leaf entry i and then the node's first word. */
int smart__bt_post_locked(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			  struct bt_node *n, struct bt_wlog *lg);
int smart__bt_post_entry(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			 struct bt_node *n, unsigned i, struct bt_wlog *lg);
/* Copy leaf n's entries into copy (room for leaf_cap of them) and point
 * ents[] at the used ones, in slot order; returns how many. */
unsigned smart__bt_leaf_used(const smart_bt_t *t, struct bt_node *n,
			     uint8_t *copy, struct bt_leaf_ent **ents);
/* Sort leaf entries by key (splits, scans). */
void smart__bt_sort_leaf(struct bt_leaf_ent **p, unsigned n);
/* Allocate a node on a blade of the tree (picked at random). */
int smart__bt_node_alloc(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t *a);

/* bt_ops.c: an empty node of `level` (no fences set); the leaf covering
 * key, read into n, its address in *out; the root the descriptor names
 * now; a leaf entry written (sealed). */
int smart__bt_root_fresh(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t *a);
/* Enter the tree's epoch domain (its home blade's) for an operation:
 * nodes it reads are not freed under it (smart_epoch_exit after). */
int smart__bt_enter(smart_bt_t *t, smart_worker_t *w);
/* bt_merge.c: leaf n (at la, locked, entry i just cleared in n, not yet
 * written) is empty: take in its right neighbour's entries and range, and
 * have their parent (at pa, as the descent saw it) forget the neighbour,
 * if all can be done at once; else just write the delete.  r: scratch for
 * a node.  Unlocks la. */
int smart__bt_merge(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t la,
		    struct bt_node *n, struct bt_node *r, smart_gaddr_t pa,
		    unsigned i);
/* A merge's dead leaf R (at ra; img its image, as the merge wrote it) is
 * retired by whoever turns R's first word from img's into the next
 * version's (one CAS: one winner of its merger, its redo takers, an
 * adopter of a dead merger's area, a drop), and only once no word of the
 * merge holds a stamp of it, so that nothing writes img again.  now:
 * freed at once (a drop), else through the epochs.  1: retired by us.
 * dead_finish does it for a record's patches p (after checking they are
 * a merge, R holds img and neither P nor L names R any more: all of it
 * landed); 0 when not. */
int smart__bt_dead_retire(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t ra,
			  const struct bt_node *img, int now);
struct bt_patch;
int smart__bt_dead_finish(smart_bt_t *t, smart_worker_t *w,
			  const struct bt_patch *p, unsigned n, int now);
void smart__bt_leaf_put(const smart_bt_t *t, struct bt_leaf_ent *e,
			const void *key, size_t klen, const void *val,
			size_t vlen);
void smart__bt_node_init(smart_bt_t *t, struct bt_node *n, unsigned level);
int smart__bt_descend(smart_bt_t *t, smart_worker_t *w, const void *key,
		      size_t klen, struct bt_node *n, smart_gaddr_t *out,
		      smart_gaddr_t *parent);

/* bt_cache.c: the caches (sizes rounded down to powers of two; 0: off);
 * get copies the cached node at a into n (1) or misses (0); put caches an
 * internal node; drop forgets a (a stale parent). */
int smart__bt_cache_init(smart_bt_t *t, size_t cache_bytes,
			 unsigned spec_entries);
void smart__bt_cache_fini(smart_bt_t *t);
int smart__bt_cache_get(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			struct bt_node *n);
void smart__bt_cache_put(smart_bt_t *t, smart_gaddr_t a,
			 const struct bt_node *n);
void smart__bt_cache_drop(smart_bt_t *t, smart_gaddr_t a);
/* A key's 64-bit hash (never 0); the leaf entry address cached for it (0:
 * none); cache one (entry 0: forget). */
uint64_t smart__bt_key_hash(const void *key, size_t klen);
smart_gaddr_t smart__bt_spec_get(smart_bt_t *t, uint64_t h);
void smart__bt_spec_put(smart_bt_t *t, uint64_t h, smart_gaddr_t entry);
/* Set a leaf entry's crc; does a lone entry check (crc, lengths)? */
void smart__bt_ent_seal(const smart_bt_t *t, struct bt_leaf_ent *e);
int smart__bt_ent_ok(const smart_bt_t *t, const struct bt_leaf_ent *e);

/* bt_redo.c: what a dead lock holder half wrote is redone (docs/bt.md
 * §4).  A write under locks goes through write_logged: it takes one of
 * this object's records (waiting while all are in use), stamps each lock
 * word it writes under, writes the record to each blade concerned (and,
 * when there are several, waits for them and then writes the commit to
 * the first patch's blade's copy), then posts the patches in order
 * (waiting between two on different blades).  The caller unlocks (which
 * waits for the patches), then calls write_end with the result: the
 * record goes back, or, after an error, the write is finished from it,
 * tried again for half a lease (the record kept if it cannot be: our ctx
 * is then fenced, by us if need be, and our takers redo it). */
struct bt_patch {
	smart_gaddr_t node;
	unsigned off, len;
	const void *src;
};
struct bt_wlog {
	unsigned rec;	    /* the record taken, BT_REC_NONE: none */
	const uint8_t *buf; /* as written (caller's scratch); NULL:
				 * nothing was posted */
};
int smart__bt_write_logged(smart_bt_t *t, smart_worker_t *w,
			   const struct bt_patch *p, unsigned n,
			   struct bt_wlog *lg);
int smart__bt_write_end(smart_bt_t *t, smart_worker_t *w,
			const struct bt_wlog *lg, int rc);
/* Lock word lw held by `dead` (a fenced holder): read what the holder
 * logged (into snap, rec_size bytes of scratch; 0: nothing to redo) before
 * taking the word over.  smart__bt_redo then takes it over (to `mine`)
 * and redoes the record: every patch whose word still holds its stamp,
 * those words taken through a copy of the record of ours that landed
 * first, released after; 1 taken, 0 the word changed. */
int smart__bt_redo_snap(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			uint64_t dead, void *snap, int *have);
int smart__bt_redo(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
		   uint64_t dead, uint64_t mine, const void *snap);
/* Claim a redo area on each blade at open (adopting a dead object's after
 * redoing what it left), give it back at close. */
int smart__bt_redo_claim(smart_bt_t *t, smart_worker_t *w);
void smart__bt_redo_release(smart_bt_t *t, smart_worker_t *w);
/* A new tree's spare areas, BT_AREAS_SPARE free slots per blade, so
 * that the next openers reuse rather than allocate. */
#define BT_AREAS_SPARE 3u
int smart__bt_redo_spares(smart_bt_t *t, smart_worker_t *w);
/* Retire (free at once: a drop) the dead leaves of the merges logged in
 * every area of blade b's directory that nobody retired. */
int smart__bt_redo_dead(smart_bt_t *t, smart_worker_t *w, unsigned b);
/* Free every area a blade's directory names (drop). */
int smart__bt_redo_drop(smart_bt_t *t, smart_worker_t *w, unsigned b);

/* bt_lock.c: node a's lock word and the stamp we hold it with before we
 * write (our id and directory slot on its blade, no record). */
int smart__bt_lock_word(const smart_bt_t *t, smart_gaddr_t a, smart_gaddr_t *lw,
			uint64_t *base);
int smart__bt_blade_index(const smart_bt_t *t, uint16_t blade);

/* bt_lock.c: lock the node at a (local queue, then the remote word);
 * unlock posts the release after whatever the caller posted (one chain:
 * command combining) and waits for all of it.  Unlock always releases;
 * it returns err (the caller's error so far) if non-zero, else its own. */
int smart__bt_lock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a);
/* The same, reading node a (node_size bytes into buf) in one chain with
 * the lock's CAS; *done: buf holds what that READ saw under our lock (not
 * on a hand-over, a retried CAS or a takeover: then read it). */
int smart__bt_lock_read(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			struct bt_node *buf, int *done);
/* Check a node read into buf (crc, sanity): 0, SMART_EPROTO for a whole
 * node no writer of ours makes, SMART_EAGAIN when torn. */
int smart__bt_check(smart_bt_t *t, struct bt_node *buf);
int smart__bt_unlock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		     int err);
/* Node a keeps reading torn: if a dead holder has its lock, take it over
 * (redoing its half-written write) and release it; never waits. */
int smart__bt_heal(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a);
#define BT_HEAL_EVERY 64u /* torn reads in a row between looks */
/* Holding the locks of nodes held[0..nheld), try node a's too without
 * waiting on anything: BT_TRY_CASES CASes of its remote word, a dead
 * holder's taken over; SMART_EBUSY when it stays taken.  *how: SAME when
 * a's word is one already held (nothing more to release), HELD when taken
 * (untry posts the release, behind whatever the caller posted to a's
 * blade; the caller's next unlock waits for it). */
enum { BT_TRY_NONE, BT_TRY_SAME, BT_TRY_HELD };
#define BT_TRY_CASES 32u
int smart__bt_trylock(smart_bt_t *t, smart_worker_t *w,
		      const smart_gaddr_t *held, unsigned nheld,
		      smart_gaddr_t a, int *how);
int smart__bt_untry(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a, int how,
		    int err);

/* How long a writer tries again to finish its own write or to release a
 * word whose release was lost: half a lease of the blade, the time after
 * which a ctx that cannot renew stops itself (docs/leases.md). */
uint64_t smart__bt_settle_ns(smart_worker_t *w, uint16_t blade);

/* A test's seam on an error path (smart/hook.h): the hook's negative
 * return at `point` fails that step as a transport error there would
 * (the post refused); 0 without a hook or when it returns 0. */
static inline int bt_seam(smart_worker_t *w, const char *point)
{
	void *arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &arg);
	int rc = hook ? hook(w, point, arg) : 0;

	return rc < 0 ? rc : 0;
}

/* Both fences unbounded: the only node of its level, so the root. */
static inline int bt_is_root(const struct bt_node *n)
{
	return (n->h.flags & (BT_F_LOW_INF | BT_F_HIGH_INF)) ==
	       (BT_F_LOW_INF | BT_F_HIGH_INF);
}

#endif
