/*
 * The transaction workloads (SmallBank: smallbank.h, TATP: tatp.h) that
 * smart-bench runs for figures and test_dtx runs for the serializability
 * graph: one copy of their tables, value layouts, load, transaction
 * draws and transactions.  A static library on include/smart alone (like
 * all of bench/); the tests link it, src/ never does.
 *
 * What a caller drives: one struct wl_txn per transaction object, an
 * attempt at a time.  An attempt queues its items through wl_q (each
 * item's table, key and operation kept in t->item[], so that a test can
 * record them for the graph checker), runs them (wl_exec, wl_commit) and
 * fills a struct wl_outcome: 0 committed, SMART_EABORT, or an error (the
 * transaction then aborted here, its locks released).
 *
 * Invariants: every value read is checked (its length, the magic derived
 * from its table and key, and the workload's own rule); a wrong one, or a
 * missing record that must exist, is counted in t->vfail with the first
 * one's table and key, never trusted.  A transaction the benchmark's rules
 * refuse (not enough money, a missing special facility, an existing call
 * forwarding) commits without writes: its outcome is "failed", and every
 * finished transaction is a commit.  No mutable globals: all state is in
 * the caller's structs.
 */
#ifndef SMART_WORKLOAD_H
#define SMART_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "smart/dtx.h"
#include "smart/status.h"
#include "smart/util.h"

#define WL_VAL_MAX   256 /* bytes of a value, at most (SmallBank's test) */
#define WL_ITEMS     8	 /* items of one transaction, at most */
#define WL_UNIT_RECS 32	 /* records of one load unit, at most */

/* A transaction type: its names and its share of the mix (a workload's
 * shares sum to 100). */
struct wl_type {
	const char *name;  /* JSON keys rt_<name>, abort_<name>, ... */
	const char *label; /* the table's: "SendPayment" */
	int pct;
};

/* One record to load. */
struct wl_rec {
	uint32_t table, len;
	uint64_t key;
	uint8_t val[WL_VAL_MAX];
};

/* The inputs of one transaction, drawn once and kept over its retries. */
struct wl_params {
	uint64_t v[6];
};

/* What a committed attempt did: the money it added (SmallBank), and
 * whether it ended as the benchmark's "unsuccessful" outcome, committed
 * with no write. */
struct wl_outcome {
	int64_t delta;
	int failed;
	int full; /* an insert found its buckets full (SMART_ENOSPC) */
};

/* What an item of the transaction does; a read for update that the
 * attempt wrote or deleted becomes WL_WRITE or WL_DELETE. */
enum wl_op { WL_READ, WL_RFU, WL_INSERT, WL_WRITE, WL_DELETE };

struct wl_item {
	uint32_t table;
	enum wl_op op;
	uint64_t key;
};

struct wl_txn;

/* Called by SmallBank's Balance between its two reads when the params ask
 * for a split (the window a missing validation would leave open). */
typedef void (*wl_gap_fn)(struct wl_txn *t, unsigned split);

struct wl_txn {
	smart_dtx_txn_t *x;
	smart_worker_t *w;
	int qerr;   /* a queueing call's error */
	int nitems; /* items queued: indices 0..nitems-1 */
	struct wl_item item[WL_ITEMS];
	uint64_t vfail;	    /* values wrong or missing: never reset */
	uint32_t bad_table; /* the first of them */
	uint64_t bad_key;
	wl_gap_fn gap; /* NULL: splits ignored */
	void *gap_arg;
	uint64_t ledger_key; /* SmallBank --ledger: this txn's row */
	int ledger_in;	     /* ... inserted */
	uint8_t buf[WL_ITEMS][WL_VAL_MAX]; /* the items' values read */
	/* what they write or insert: apart from buf, which the library
	 * fills, and kept until the commit (it may read them then) */
	uint8_t wbuf[WL_ITEMS][WL_VAL_MAX];
};

/* A record's magic: its table's constant mixed with its key, so a value
 * read under another key (a misplaced or torn record) is caught too. */
static inline uint32_t wl_magic(uint32_t table_magic, uint64_t key)
{
	return table_magic ^
	       (uint32_t)smart_hash64(&key, sizeof(key), 0x6d616763);
}

/* The type of a draw r of 0..99 under the mix of types[0..n-1]. */
int wl_type_pick(const struct wl_type *types, int n, smart_rng_t *r);

/* Begin an attempt (clears the queueing error and the items). */
int wl_begin(struct wl_txn *t);

/* Queue call `item` (its returned index or error) of op on table/key:
 * an error is kept and returned by the next wl_exec/wl_commit instead of
 * running. */
int wl_q(struct wl_txn *t, int item, enum wl_op op, uint32_t table,
	 uint64_t key);

/* Queue a read (upd 0) or a read for update of table/key into slot's
 * buffer. */
int wl_read(struct wl_txn *t, int upd, uint32_t table, uint64_t key, int slot);

/* A new value for an item read for update (copied to slot's write
 * buffer, kept until the commit). */
void wl_write(struct wl_txn *t, int item, int slot, const void *val,
	      size_t len);
void wl_delete(struct wl_txn *t, int item);

/* Run the queued items / commit.  On an error other than SMART_EABORT
 * the transaction is aborted here (its locks released). */
int wl_exec(struct wl_txn *t);
int wl_commit(struct wl_txn *t);

/* An executed item: 1 found with len bytes (its value in the buffer it
 * was read into), 0 absent, -1 wrong (another status or length: counted
 * by wl_bad). */
int wl_found(struct wl_txn *t, int item, size_t len);

/* A wrong or missing value of table/key seen by a workload. */
void wl_bad(struct wl_txn *t, uint32_t table, uint64_t key);

#endif
