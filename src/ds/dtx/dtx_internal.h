/*
 * Smart-DTX internals shared by its files: the local database object, the
 * transaction object and its items, and the calls between dtx.c (the
 * database), dtx_rec.c (records and buckets), dtx_exec.c (execution),
 * dtx_commit.c (validation, log, commit, abort) and dtx_recover.c.
 *
 * Invariants: a smart_dtx is read-only after open except for its atomics
 * (counters, the address cache), so every worker of the ctx may use it at
 * once.  A transaction object is used by one task at a time; it holds its
 * log slot from txn_new to txn_free, and a lock only between an exec that
 * took it and the commit or abort that lets it go.
 */
#ifndef SMART_DS_DTX_INTERNAL_H
#define SMART_DS_DTX_INTERNAL_H

#include <stdatomic.h>
#include <string.h>

#include "ds/dtx/dtx_layout.h"
#include "ds/dtx/dtx_mutant.h"
#include "smart/dtx.h"
#include "smart/hook.h"
#include "smart/smart.h"

#define DTX_ROUNDS_MAX 256u   /* exec rounds before giving up */
#define DTX_SLOTS_MAX  65535u /* log slots: 16 bits of a lock stamp */

struct dtx_table {
	uint32_t id, value_size, buckets, rec_size;
	unsigned ncopies;
	smart_gaddr_t copy[1 + SMART_DTX_REPLICAS_MAX];
};

struct smart_dtx {
	smart_ctx_t *ctx; /* opened in: tainted by a stuck txn freed */
	uint16_t home;
	unsigned root_idx;
	smart_gaddr_t meta;
	uint32_t salt;
	unsigned nblades, ntables, log_slots, log_size, max_writes;
	unsigned rec_max; /* the largest rec_size */
	uint16_t blades[SMART_DTX_BLADES_MAX];
	uint16_t lease[SMART_DTX_BLADES_MAX]; /* our id on each */
	uint64_t log_off[SMART_DTX_BLADES_MAX];
	smart_gaddr_t owner; /* the owner table */
	struct dtx_table *by_id[SMART_DTX_TABLES_MAX];
	struct dtx_table tables[SMART_DTX_TABLES_MAX];
	/* the address cache: (tag << 32 | slot + 1) words; NULL: none */
	_Atomic uint64_t *cache;
	uint64_t cmask;
	_Atomic int txns; /* transaction objects open */
	_Atomic uint64_t rng;
	_Atomic uint64_t commits, aborts, lock_conflicts, validate_fails,
		insert_conflicts, cache_hits, cache_misses, crc_retries,
		recoveries, rolled_back, rolled_forward, locks_recovered,
		slots_adopted, adopt_deferred, logs_settled, unlocks_checked,
		unlocks_redone, unlocks_waited;
};

enum dtx_kind { DTX_RO = 0, DTX_RW = 1, DTX_INS = 2 };

/* Where an item is in exec. */
enum dtx_step {
	DTX_S_QUEUED = 0, /* not looked at */
	DTX_S_SEARCH,	  /* read its buckets */
	DTX_S_SLOT,	  /* read (RO) or lock + read (RW, INS) its slot */
	DTX_S_DONE,	  /* an insert's intent rides the validation */
};

struct dtx_item {
	const struct dtx_table *t;
	uint64_t key;
	enum dtx_kind kind;
	enum dtx_step step;
	int status;    /* 0, SMART_ENOENT, SMART_EEXIST, SMART_ENOSPC */
	void *buf;     /* the caller's */
	uint32_t slot; /* record index, when known */
	uint32_t bucket[2];
	int locked, intent, written, deleted;
	int stuck; /* a failure left its lock held: 1, to be
				 * released; 2, its old bytes to put back
				 * first (smart_dtx_abort finishes it) */
	uint64_t read_ver, write_ver;
	size_t len;   /* value length read, then to write */
	uint8_t *old; /* the record as read: [0, rec_size) */
	uint8_t *val; /* the value to write */
	void *io;     /* this round's registered buffer */
	uint64_t cas_old;
	uint64_t intent_img[3]; /* key, version, meta of the intent */
};

struct smart_dtx_txn {
	smart_dtx_t *d;
	unsigned slot; /* log slot */
	uint32_t seq;  /* this transaction's number */
	int open, n, nwrites;
	int logged; /* this transaction's log was posted */
	int stuck;  /* items stuck: no next transaction before
				 * they are released (their log must stay) */
	unsigned rounds_left;
	uint64_t rt0, bytes0;
	int started; /* rt0/bytes0 taken */
	unsigned ops;
	uint64_t wbytes; /* WRITE payload bytes queued (cost) */
	struct smart_dtx_cost cost;
	/* committed transactions' unlocks, posted and not yet seen landed
	 * (dtx_unlock.c): lock words, our stamps, their READ-backs, and
	 * the index of the worker whose QPs carry each (never reused) */
	int nunl;
	int unl_nofold; /* a round carrying their READ-backs failed:
				 * checked alone from then on */
	int unl_hold;	/* the ctx's hold taken while nunl > 0 */
	smart_gaddr_t unl_lw[SMART_DTX_ITEMS_MAX];
	uint64_t unl_stamp[SMART_DTX_ITEMS_MAX];
	uint64_t unl_rb[SMART_DTX_ITEMS_MAX];
	int unl_wi[SMART_DTX_ITEMS_MAX];
	struct dtx_item item[SMART_DTX_ITEMS_MAX];
	uint8_t *old_arena, *val_arena; /* items x rec_max, x value max */
};

/* A WRITE of transaction x, its bytes counted in x's cost. */
static inline int smart__dtx_write(smart_dtx_txn_t *x, smart_worker_t *w,
				   smart_gaddr_t a, const void *src, size_t len)
{
	int rc = smart_write(w, a, src, len);

	if (!rc)
		x->wbytes += len;
	return rc;
}

/* ---- dtx.c ---- */
const struct dtx_table *smart__dtx_table(const smart_dtx_t *d, uint32_t table);
int smart__dtx_blade_index(const smart_dtx_t *d, uint16_t blade);
uint16_t smart__dtx_lease(const smart_dtx_t *d, uint16_t blade);
void smart__dtx_count(_Atomic uint64_t *c);
int smart__dtx_hook(smart_worker_t *w, const char *point);
/* Whether w is a worker of d's ctx.  The objects' bookkeeping names
 * workers by their index in that ctx (dtx_unlock.c) and their stamps by
 * its lease ids: a worker of another ctx is refused (SMART_EINVAL). */
int smart__dtx_own(const smart_dtx_t *d, const smart_worker_t *w);

/* ---- dtx_rec.c: records, buckets, the address cache ---- */
smart_gaddr_t smart__dtx_rec_addr(const struct dtx_table *t, unsigned copy,
				  uint32_t slot);
uint32_t smart__dtx_rec_crc(const smart_dtx_t *d, const struct dtx_table *t,
			    const uint8_t *rec);
void smart__dtx_rec_seal(const smart_dtx_t *d, const struct dtx_table *t,
			 uint8_t *rec, uint64_t key, uint64_t version,
			 const void *val, size_t len, int valid);
/* What a record read shows. */
enum dtx_look {
	DTX_L_EMPTY, /* never written, or deleted: no key here */
	DTX_L_KEY,   /* a valid record of that key (crc checked) */
	DTX_L_OTHER, /* a valid record of another key */
	DTX_L_TORN,  /* crc wrong with the word free: read again */
	DTX_L_BUSY,  /* crc wrong under a lock (being written) */
};
enum dtx_look smart__dtx_rec_look(smart_dtx_t *d, const struct dtx_table *t,
				  const uint8_t *rec, uint64_t key);
void smart__dtx_buckets(const smart_dtx_t *d, const struct dtx_table *t,
			uint64_t key, uint32_t b[2]);
int smart__dtx_cache_get(smart_dtx_t *d, const struct dtx_table *t,
			 uint64_t key, uint32_t *slot);
void smart__dtx_cache_put(smart_dtx_t *d, const struct dtx_table *t,
			  uint64_t key, uint32_t slot);

/* ---- dtx_exec.c ---- */
int smart__dtx_exec(smart_dtx_txn_t *x, smart_worker_t *w);

/* ---- dtx_commit.c ---- */
void smart__dtx_finish(smart_dtx_txn_t *x, smart_worker_t *w, int rc);
/* Finish what a failure left held (put back, release): 0 when nothing
 * is left, else the error and x stays stuck. */
int smart__dtx_unstick(smart_dtx_txn_t *x, smart_worker_t *w);

/* ---- dtx_unlock.c: a commit's unlocks, not waited for ---- */
/* Post a WRITE of 0 to every lock x holds (a CAS from our stamp where
 * unsure), remember them beside those still remembered, ring the
 * doorbells; no wait.  SMART_EBUSY, nothing posted, when they do not fit
 * beside those. */
int smart__dtx_unlock_post(smart_dtx_txn_t *x, smart_worker_t *w);
/* The ctx's hold (smart_ctx_hold) taken while unlocks are remembered and
 * given back when none is, or when x is freed (then after any taint). */
void smart__dtx_unlock_hold(smart_dtx_txn_t *x, int want);
/* Queue a READ of every remembered lock word (into x->unl_rb). */
int smart__dtx_unlock_check_post(smart_dtx_txn_t *x, smart_worker_t *w);
/* After the sync covering those READs: forget the unlocks that landed,
 * release again those lost on w or on a destroyed worker; SMART_EBUSY
 * while some other worker's unlock may still be in flight. */
int smart__dtx_unlock_settle(smart_dtx_txn_t *x, smart_worker_t *w);
/* Check until every remembered unlock is seen landed (bounded: else
 * SMART_EBUSY), or an error. */
int smart__dtx_unlock_reap(smart_dtx_txn_t *x, smart_worker_t *w);

/* ---- dtx_recover.c ---- */
/* Resolve the transaction that lock word `lock` on `blade` names (its
 * holder dead): roll it back or forward from its log, release its locks;
 * a lock its log does not list is released alone. */
int smart__dtx_recover_lock(smart_dtx_t *d, smart_worker_t *w, uint16_t blade,
			    smart_gaddr_t lockw, uint64_t lock);
/* Resolve whatever the log slot's copies hold (a dead owner's), then
 * claim it for `mine` (0: free it). */
int smart__dtx_slot_adopt(smart_dtx_t *d, smart_worker_t *w, unsigned slot,
			  uint64_t dead, uint64_t mine);

#endif
