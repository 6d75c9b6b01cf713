/** @file
 * Smart-DTX: serializable transactions over tables on memory blades, with
 * FORD's one-sided protocol (docs/dtx.md): records locked and read in one
 * doorbell, an undo log on every blade a transaction writes, validation by
 * re-reading versions, commit to the primary and its backups before the
 * locks go.  Beyond FORD, the undo log is read: a transaction whose
 * coordinator died (its lease fenced, smart/lease.h) is rolled back, or
 * rolled forward when its commit had reached every copy, by whichever
 * client finds one of its locks.
 *
 * A database (smart_dtx_t) is a set of tables named by a root entry of its
 * home blade; each table has a fixed value size, a number of buckets of
 * SMART_DTX_BUCKET_SLOTS records, a primary blade and 0..2 backups on
 * other blades.  Keys are 8-byte integers.  Any number of processes may
 * open a database.
 *
 * Transactions: a smart_dtx_txn_t belongs to one task at a time and runs
 * one transaction at a time; make one per task (it holds a log slot of
 * the database, smart_dtx_config.log_slots of them in all).
 *
 *   smart_dtx_begin(x);
 *   a = smart_dtx_read(x, T, k1, buf1, cap);             // read-only
 *   b = smart_dtx_read_for_update(x, T, k2, buf2, cap);  // will write
 *   rc = smart_dtx_exec(x, w);        // one round trip, addresses cached
 *   if (rc == 0 && smart_dtx_status(x, b, &len) == 0)
 *           smart_dtx_write(x, b, newval, len);
 *   rc = rc ? rc : smart_dtx_commit(x, w);
 *   if (rc == SMART_EABORT) ... begin again (after a backoff)
 *
 * Items (read, read_for_update, insert) are queued and run by the next
 * smart_dtx_exec() or smart_dtx_commit(), all of one exec in one doorbell
 * per blade; their results (smart_dtx_status, the value in the caller's
 * buffer) are valid after it.  A read-for-update locks its record; a write
 * or delete applies to an item read for update; an insert locks a free
 * slot.  Nothing is visible to others before commit returns 0.
 *
 * Errors (0 or a negative SMART_E* code): SMART_EINVAL for bad arguments
 * (an unknown table, a value larger than the table's, a write to an item
 * read only, an item index out of range, a call in the wrong state);
 * SMART_ERANGE for more than SMART_DTX_ITEMS_MAX items, or more than
 * config max_writes of them written.  SMART_EABORT from exec or commit: a conflict (a record locked
 * by a live transaction, a version changed, an insert of a key being
 * inserted by another); the transaction is over, its locks released and
 * nothing of it visible: begin again.  Transport errors (SMART_EREMOTE,
 * SMART_ETIMEDOUT, SMART_EQP, a blade gone) end the transaction the same
 * way where they can; an error during commit's writes leaves the outcome
 * to recovery (rolled back or forward as a whole).  Where an error leaves
 * locks held over records the transaction wrote (an undo or an unlock
 * that failed), the object keeps them and its log: smart_dtx_begin says
 * SMART_EBUSY until smart_dtx_abort (which retries) has let them go; if
 * the client dies first, recovery does it.  SMART_EFENCED: this
 * client was declared dead; stop.
 *
 * Thread safety: a smart_dtx_t may be used by every worker of its ctx at
 * once; a smart_dtx_txn_t by one task at a time, with that task's worker.
 * A worker of another ctx is refused (SMART_EINVAL, nothing done) by
 * txn_new, txn_free, exec, commit, abort and recover: the object names the
 * workers that posted its unlocks by their index in its own ctx, and its
 * lock stamps by that ctx's lease ids.
 */
#ifndef SMART_DTX_H
#define SMART_DTX_H

#include <stddef.h>
#include <stdint.h>

#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SMART_DTX_TABLES_MAX   16
#define SMART_DTX_BLADES_MAX   16
#define SMART_DTX_VALUE_MAX    4096 /**< bytes of a table's values */
#define SMART_DTX_REPLICAS_MAX 2    /**< backups per table */
#define SMART_DTX_ITEMS_MAX    64   /**< items per transaction */
#define SMART_DTX_BUCKET_SLOTS 8    /**< records per bucket */

typedef struct smart_dtx smart_dtx_t;
typedef struct smart_dtx_txn smart_dtx_txn_t;

/** Frozen (docs/api.md §4: an array element of the config): never grows. */
struct smart_dtx_table {
	uint32_t id;	     /**< 0..SMART_DTX_TABLES_MAX-1, unique */
	uint32_t value_size; /**< 1..SMART_DTX_VALUE_MAX bytes */
	/* buckets of SMART_DTX_BUCKET_SLOTS records; a key may sit in
	 * either of two (two-choice hashing), so about 4 per bucket
	 * inserts without a miss in practice.  1..2^26. */
	uint32_t buckets;
	/* index into the config's blades of the primary; -1 (default):
	 * id % nblades (FORD); backups on the next ones round the list */
	int primary;
};

struct smart_dtx_config {
	uint32_t struct_size;	/**< sizeof, set by the init function:
				 * docs/api.md, "Extensible structs" */
	const uint16_t *blades; /**< blades holding tables (NULL: the home) */
	unsigned nblades;	/**< 1..SMART_DTX_BLADES_MAX */
	/* backups per table, 0..SMART_DTX_REPLICAS_MAX and fewer than
	 * nblades; -1 (default): 1 when there are 2 blades or more */
	int replicas;
	const struct smart_dtx_table *tables;
	unsigned ntables; /**< 1..SMART_DTX_TABLES_MAX */
	/* transaction objects that can exist at once, over every client
	 * (each holds one log slot); default 256 */
	unsigned log_slots;
	/* records one transaction may write (its undo log's capacity);
	 * 1..SMART_DTX_ITEMS_MAX, default 16 */
	unsigned max_writes;
	/* This process's address cache (key -> slot), 8 bytes an entry, a
	 * power of two; read by create and open; default 2^20; 0: none. */
	unsigned cache_entries;
};

/** Counters of one database object (this process's), paths taken. */
struct smart_dtx_stats {
	uint64_t commits, aborts;  /**< transactions */
	uint64_t lock_conflicts;   /**< aborts: a record locked by a live one */
	uint64_t validate_fails;   /**< aborts: a version or lock changed */
	uint64_t insert_conflicts; /**< aborts: the key being inserted */
	uint64_t cache_hits, cache_misses; /**< address cache, per item */
	uint64_t crc_retries;		   /**< records read torn, read again */
	/* recovery (docs/dtx.md §5): transactions of dead coordinators
	 * found and resolved by this process, how, and locks released */
	uint64_t recoveries, rolled_back, rolled_forward, locks_recovered;
	uint64_t slots_adopted; /**< log slots taken from dead clients */
	/* adoptions of a dead client's log slot put off: a live recoverer
	 * still held a lock its log lists */
	uint64_t adopt_deferred;
	/* logs read by recoveries whose transaction no lock names any more
	 * (done, or an older one of its slot): nothing decided */
	uint64_t logs_settled;
	/* a committed transaction's unlocks (posted, not waited for,
	 * docs/dtx.md §3): those seen landed by a READ-back, and those found
	 * lost (their QP failed, or their worker was destroyed) and released
	 * again; commits whose unlocks did not fit beside earlier ones not
	 * yet seen landed, released the waited way */
	uint64_t unlocks_checked, unlocks_redone, unlocks_waited;
};

/** Defaults: home blade only, no tables (the caller sets them);
 * cfg->struct_size set (docs/api.md §4).  Cannot fail: void. */
void smart_dtx_config_init(struct smart_dtx_config *cfg);

/** Create the database `name` (smart/alloc.h's named root entries) on
 * blade `home`: every table's copies allocated and zeroed, the log areas,
 * the descriptor.  SMART_EEXIST when the name is taken; SMART_ENOSPC when
 * a blade is full.  open: SMART_ENOENT when there is none.  cfg of open
 * may be NULL (only cache_entries is read).  Thread: w's. */
int smart_dtx_create(smart_worker_t *w, uint16_t home, const char *name,
		     const struct smart_dtx_config *cfg, smart_dtx_t **out);
int smart_dtx_open(smart_worker_t *w, uint16_t home, const char *name,
		   const struct smart_dtx_config *cfg, smart_dtx_t **out);

/** The value size of a table (SMART_EINVAL: no such table), and where it
 * lives: its primary's blade and its backups' (up to
 * SMART_DTX_REPLICAS_MAX; *nbackups their number).  Thread: any. */
int smart_dtx_table_info(const smart_dtx_t *d, uint32_t table,
			 uint32_t *value_size, uint16_t *primary,
			 uint16_t *backups, unsigned *nbackups);

/** Free the local object (NULL: no-op).  Transaction objects must be freed
 * first (SMART_EBUSY, nothing done).  w (or NULL) as for every
 * structure's close (docs/api.md); a database object holds nothing
 * remote of its own.  Thread: any, once no other uses d. */
int smart_dtx_close(smart_dtx_t *d, smart_worker_t *w);

/** Destroy the remote database (no client may use it): the name released,
 * then its memory freed (past errors: what failed to free stays
 * allocated, docs/api.md §2); closes d.  SMART_EINVAL for NULL d or w,
 * SMART_EBUSY while transaction objects exist, SMART_EPROTO for a
 * descriptor that is not a database's, the transport's errors (before the
 * release: nothing done).  Thread: w's. */
int smart_dtx_drop(smart_dtx_t *d, smart_worker_t *w);

/** Fill *out with the database object's counters (no remote read: w may
 * be NULL; the _sized form takes the caller's sizeof, docs/api.md §4).  SMART_EINVAL for NULL d or out.  Thread: any. */
int smart_dtx_stats_sized(const smart_dtx_t *d, smart_worker_t *w,
			  struct smart_dtx_stats *out, size_t size);
static inline int smart_dtx_stats(const smart_dtx_t *d, smart_worker_t *w,
				  struct smart_dtx_stats *out)
{
	return smart_dtx_stats_sized(d, w, out, sizeof(*out));
}

/** A transaction object: claims a free log slot (or adopts one a dead
 * client held, recovering what it left).  SMART_EBUSY when every slot is
 * held by a live client.  Thread: w's. */
int smart_dtx_txn_new(smart_dtx_t *d, smart_worker_t *w, smart_dtx_txn_t **out);
/** Give the log slot back (a transaction still open is aborted first, the
 * last commit's unlocks seen landed); NULL: no-op.  With w NULL, or when
 * locks a failure left cannot be let go (the error is returned), the slot
 * stays claimed until this ctx's lease ends, then it is adopted.  That
 * error is the abort's (SMART_EBUSY, the transport's); the object is
 * freed whatever it is.  Thread: w's, the task that used x. */
int smart_dtx_txn_free(smart_dtx_txn_t *x, smart_worker_t *w);

/** Start a transaction (an open one is aborted first, without network:
 * SMART_EINVAL if it holds locks; call smart_dtx_abort).  SMART_EBUSY:
 * a failed commit left locks held (see Errors); call smart_dtx_abort.
 * Thread: the task that uses x. */
int smart_dtx_begin(smart_dtx_txn_t *x);

/** Queue an item; returns its index (>= 0: a count-like return,
 * docs/api.md §2) or an error: SMART_EINVAL for an unknown table, a cap
 * under the table's value size (buf may be NULL with cap 0 when the value
 * is not wanted), no transaction begun, a key of the table already
 * queued in this transaction (one item per record); SMART_ERANGE past
 * SMART_DTX_ITEMS_MAX items.  No network: the item runs at the next exec
 * or commit.  Thread: the task that uses x. */
int smart_dtx_read(smart_dtx_txn_t *x, uint32_t table, uint64_t key, void *buf,
		   size_t cap);
int smart_dtx_read_for_update(smart_dtx_txn_t *x, uint32_t table, uint64_t key,
			      void *buf, size_t cap);
/** Insert (key, val): SMART_EEXIST from smart_dtx_status after exec when
 * the key is present; SMART_ENOSPC when its buckets are full.
 * Thread: the task that uses x. */
int smart_dtx_insert(smart_dtx_txn_t *x, uint32_t table, uint64_t key,
		     const void *val, size_t len);

/** Run the queued items.  0: each has its status; SMART_EABORT or an
 * error: the transaction is over.  Thread: w's. */
int smart_dtx_exec(smart_dtx_txn_t *x, smart_worker_t *w);

/** An executed item: 0 found (*len its value's length, may be NULL),
 * SMART_ENOENT absent, SMART_EEXIST an insert of a present key,
 * SMART_ENOSPC an insert into full buckets; SMART_EINVAL not executed.
 * Thread: the task that uses x. */
int smart_dtx_status(const smart_dtx_txn_t *x, int item, size_t *len);

/** New value of an item read for update and found (len up to the table's
 * value size), or delete it.  SMART_EINVAL for an item not read for
 * update, not found, out of range, or a value too long or NULL with a
 * length; SMART_ERANGE past config max_writes written items.  No network.
 * Thread: the task that uses x. */
int smart_dtx_write(smart_dtx_txn_t *x, int item, const void *val, size_t len);
int smart_dtx_delete(smart_dtx_txn_t *x, int item);

/** The versions an item saw and wrote (0 when none: absent, not
 * written): what a serializability checker needs (docs/dtx.md §6).
 * *slot names the record's place (blade, table, slot index) uniquely.
 * Outputs may be NULL.  SMART_EINVAL for an item out of range.  Thread:
 * the task that uses x. */
int smart_dtx_item_versions(const smart_dtx_txn_t *x, int item, uint64_t *slot,
			    uint64_t *read_ver, uint64_t *write_ver);

/** Exec what is queued, validate, log, commit.  0: committed;
 * SMART_EABORT: aborted (nothing of it visible).  A commit returns with
 * its unlocks posted, not waited for (docs/dtx.md §3); the object's next
 * exec sees them landed on the way.  SMART_EBUSY (aborted): a writing
 * transaction on another worker than the last commit's, whose unlocks it
 * cannot see landed yet; run it on that worker.  Thread: w's. */
int smart_dtx_commit(smart_dtx_txn_t *x, smart_worker_t *w);
/** Release its locks; nothing of it is visible.  After a commit: wait
 * until its unlocks are seen landed (SMART_EBUSY: posted on another
 * worker and not landed yet).  Thread: w's. */
int smart_dtx_abort(smart_dtx_txn_t *x, smart_worker_t *w);

/** Round trips of the last transaction (exec + commit or abort), and the
 * RDMA ops and bytes it issued: the protocol's cost, clock-free. */
struct smart_dtx_cost {
	unsigned round_trips, ops;
	uint64_t bytes;
	/* of bytes, those of WRITEs: intents, undo logs, records, unlocks
	 * (docs/dtx.md §3, "Bytes written") */
	uint64_t write_bytes;
};
/** SMART_EINVAL for NULL arguments.  Thread: the transaction's task. */
int smart_dtx_last_cost_sized(const smart_dtx_txn_t *x,
			      struct smart_dtx_cost *out, size_t size);
static inline int smart_dtx_last_cost(const smart_dtx_txn_t *x,
				      struct smart_dtx_cost *out)
{
	return smart_dtx_last_cost_sized(x, out, sizeof(*out));
}

/** Operators: resolve every transaction of a dead client whose lock or log
 * slot lies on blade `blade` (all blades of the database: blade
 * SMART_DTX_ALL_BLADES): records' locks scanned, dead clients' log slots
 * recovered and freed.  *found (may be NULL) gets the number of locks
 * released.  Live clients' locks are left alone.  SMART_EINVAL for NULL
 * d or w or a blade not the database's, SMART_ENOMEM, the transport's
 * errors (what was resolved before one stays resolved).  Thread: w's. */
#define SMART_DTX_ALL_BLADES 0xffffu
int smart_dtx_recover(smart_dtx_t *d, smart_worker_t *w, uint16_t blade,
		      uint64_t *found);

/** Checks for tools and tests (no client may write meanwhile): every
 * record's backups equal its primary, no lock held, no CRC wrong.  0, or
 * SMART_EPROTO with *bad (may be NULL) the number of records that fail;
 * SMART_EINVAL for NULL d or w, the transport's errors.  Thread: w's. */
int smart_dtx_check(smart_dtx_t *d, smart_worker_t *w, uint64_t *bad);

/** Visit every valid record of a table (its primary copy), in slot order:
 * fn(arg, key, value, len); a non-zero return stops the scan with it.
 * For checks and tools; not a transaction.  SMART_EINVAL for NULL
 * arguments or an unknown table, fn's code, the transport's errors.
 * Thread: w's. */
typedef int (*smart_dtx_scan_fn)(void *arg, uint64_t key, const void *val,
				 size_t len);
int smart_dtx_scan(smart_dtx_t *d, smart_worker_t *w, uint32_t table,
		   smart_dtx_scan_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif
