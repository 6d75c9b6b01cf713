/*
 * The transaction benchmarks of smart-bench (SmallBank, TATP) on
 * Smart-DTX: what the common driver (dtx_bench.c: flags, blades, the
 * database, the load, threads x coroutines, the window, --check, the
 * report) and the workloads share: smallbank.c and tatp.c are the flags
 * and glue around the shared workloads (bench/workloads/: tables,
 * records, transactions, what a record must look like), which test_dtx
 * runs too.
 *
 * A workload is a struct dtx_workload: its transaction types and mix, its
 * tables, the records of one load unit (an account, a subscriber), one
 * attempt of a transaction, and the check of one record.  The driver
 * retries an aborted attempt with the same inputs (struct wl_params)
 * inside one smart_backoff guard, so a transaction's latency and cost
 * include its retries.
 *
 * Invariants: every value read is checked (bench/workloads/workload.h:
 * its length, the magic derived from its table and key, the workload's
 * rule); a mismatch is a validation failure that fails the run.  A transaction the benchmark's rules refuse
 * (not enough money, a missing special facility, an existing call
 * forwarding) commits without writes: every finished transaction is a
 * commit, and its "failed" outcome is counted apart.  Money is integer
 * cents, so SmallBank's sums are exact.  No mutable globals: the run is in
 * struct dtx_bench; a thread's counters are written by its own coroutines
 * only (never in parallel) and read by main after the join.
 */
#ifndef SMART_BENCH_DTX_H
#define SMART_BENCH_DTX_H

#include <stdatomic.h>
#include <stdint.h>

#include "bench.h"
#include "smallbank.h"
#include "smart/dtx.h"
#include "tatp.h"

#define DTX_TYPES_MAX  8  /* transaction types of a workload */
#define DTX_TABLES_MAX 5  /* tables of a workload */
#define DTX_BATCH_MAX  16 /* inserts per load transaction, at most */
#define DTX_EMBED_MAX  3  /* embedded blades: replicas + 1 */

/* What a scan of every table found (the check). */
struct dtx_census {
	uint64_t records[DTX_TABLES_MAX];
	uint64_t bad;	    /* records whose magic, length or key is wrong */
	uint32_t bad_table; /* the first of them */
	uint64_t bad_key;
	int64_t money; /* SmallBank: every balance, cents */
	int rc;	       /* a scan's error, or 0 */
};

struct dtx_bench;
struct dtx_task;

struct dtx_workload {
	const char *name;  /* "smallbank": JSON's bench, default --name */
	const char *title; /* "SmallBank" */
	int ntypes;
	const struct wl_type *types;
	int ntables;
	const char *const *tables; /* names, by table id */
	int money;		   /* 1: the check sums money (SmallBank) */
	/* tables the transactions never insert into nor delete from: the
	 * end's check wants as many records there as at the start (a torn
	 * record, which a scan skips, shows so) */
	unsigned fixed; /* bit i: table i */
	/* The tables (ids 0..ntables-1, buckets sized) and the records the
	 * load inserts into each. */
	void (*size)(struct dtx_bench *b, struct smart_dtx_table *t,
		     uint64_t *records);
	/* Load units (accounts, subscribers) and unit u's records (at most
	 * WL_UNIT_RECS; their money added to *money); returns how many. */
	uint64_t (*units)(const struct dtx_bench *b);
	int (*unit)(const struct dtx_bench *b, uint64_t u, struct wl_rec *out,
		    int64_t *money);
	/* A database opened, not loaded: the run's sizes from its records
	 * (a census of every table). */
	void (*adopt)(struct dtx_bench *b, const struct dtx_census *c);
	/* Before the window: what the transactions' inputs need. */
	int (*prepare)(struct dtx_bench *b);
	void (*gen)(struct dtx_task *t, int type, struct wl_params *p);
	/* One attempt: 0 committed (o filled), SMART_EABORT, or an error
	 * (the transaction then aborted by the driver's helpers). */
	int (*attempt)(struct dtx_task *t, int type, const struct wl_params *p,
		       struct wl_outcome *o);
	/* The check of one record: 1 right, 0 wrong; money added. */
	int (*verify)(const struct dtx_bench *b, uint32_t table, uint64_t key,
		      const void *val, size_t len, int64_t *money);
	/* One line on the data ("100000 accounts, ...") and its fields. */
	void (*describe)(const struct dtx_bench *b, char *buf, size_t n);
	void (*record)(const struct dtx_bench *b, struct kit_rec *rec);
};

/* Counters of one transaction type in one thread. */
struct dtx_tstats {
	uint64_t attempts, commits, aborts, failed, full;
	uint64_t rt, ops, bytes; /* over committed attempts */
	uint64_t wbytes;	 /* of bytes, WRITEs' (write_bytes) */
};

struct dtx_thread {
	struct dtx_bench *b;
	int idx;
	struct dtx_tstats ty[DTX_TYPES_MAX];
	/* every attempt: the library's cost, and the task's own counts */
	uint64_t all_rt, all_ops, all_bytes, task_rt, task_bytes;
	uint64_t errors, vfail;
	int first_err;
	int64_t delta;	    /* money of the committed ones */
	int64_t load_money; /* what its load inserted */
	uint64_t loaded;    /* records its load inserted */
	uint64_t max_cycles;
	smart_hist_t hist; /* committed transactions, cycles */
	int rc;
};

struct dtx_task {
	struct dtx_thread *th;
	struct dtx_bench *b;
	smart_worker_t *w;
	struct wl_txn wt; /* the transaction object and its state */
	smart_rng_t rng;
	int idx;
	int npend;			   /* load: records waiting */
	struct wl_rec pend[DTX_BATCH_MAX]; /* load: the next batch */
	struct wl_rec unit[WL_UNIT_RECS];  /* load: one unit's */
};

/* The run's results, summed over the threads (dtx_bench.c). */
struct dtx_result {
	struct dtx_tstats ty[DTX_TYPES_MAX], all;
	uint64_t all_rt, all_ops, all_bytes, task_rt, task_bytes;
	uint64_t errors, vfail;
	int first_err;
	int64_t delta;
	double committed_tps, attempted_tps, abort_rate, max_us;
	struct kit_lat lat;
	int stop_sig;
};

struct dtx_bench {
	/* flags */
	int coros, replicas, batch;
	int open, keep, check, recover;
	const char *name;
	uint64_t txns;	  /* per task; 0: --seconds */
	struct sb_cfg sb; /* SmallBank's flags and draws */
	struct tp_cfg tp; /* TATP's */
	/* the run */
	const struct dtx_workload *wl;
	struct bench_run *run;
	smart_blade_t *extra[DTX_EMBED_MAX - 1]; /* embedded blades 1.. */
	int nextra;
	smart_worker_t *main_worker;
	smart_dtx_t *d;
	int created, dropped, recovered_ok;
	uint64_t recovered; /* --open: locks smart_dtx_recover freed */
	struct smart_dtx_table tab[DTX_TABLES_MAX];
	uint64_t records[DTX_TABLES_MAX]; /* the load's */
	unsigned log_slots;
	struct kit_runner runner;
	struct kit_progress load;
	_Atomic uint64_t load_next; /* next load unit */
	_Atomic int running;	    /* threads not done with the window */
	struct kit_window win;
	struct dtx_thread *t;
	struct dtx_census base, end; /* after load (or open); at the end */
	int64_t load_money;
	int base_rc, end_rc;	    /* the checks: 0 passed */
	uint64_t base_bad, end_bad; /* smart_dtx_check's counts */
	int end_done;
	struct smart_dtx_stats dstats;
	struct dtx_result res;
	/* JSON keys per type, kept here: a record keeps key pointers */
	char keys[DTX_TYPES_MAX][6][40];
};

/* The modules (smallbank.c, tatp.c) are built on these; main.c lists
 * the modules. */
extern const struct bench_module bench_smallbank, bench_tatp;
void *dtx_bench_create(struct bench_run *r, const struct dtx_workload *wl);
void dtx_bench_check(void *m, struct bench_run *r);
int dtx_bench_setup(void *m, struct bench_run *r);
int dtx_bench_run(void *m, struct bench_run *r);
int dtx_bench_report(void *m, struct bench_run *r, struct kit_rec *rec);
void dtx_bench_destroy(void *m);
extern const struct kit_col dtx_bench_csv[];

/* The flags every transaction benchmark takes, for a table whose base is
 * a struct dtx_bench. */
#define DTX_COMMON_FLAGS(T)                                                           \
	KIT_INT("coros", T, coros, 1, 1024, "C",                                      \
		"coroutines (transactions in flight) per thread [8]"),                \
		KIT_INT("replicas", T, replicas, 0, SMART_DTX_REPLICAS_MAX,           \
			"N",                                                          \
			"backups per table, 0..2; embedded: N + 1 blades in this "    \
			"process [1]"),                                               \
		KIT_STR("name", T, name, "NAME",                                      \
			"the database's name on the first blade [the benchmark's]"),  \
		KIT_FLAG("open", T, open,                                             \
			 "use the database NAME as it is (with "                      \
			 "--connect; no load): sizes from its records"),              \
		KIT_FLAG("recover", T, recover,                                       \
			 "--open, resolve what dead "                                 \
			 "clients left (smart_dtx_recover, every blade) and stop: "   \
			 "no window (with --check: then check)"),                     \
		KIT_FLAG("keep", T, keep,                                             \
			 "leave the database on the blades at "                       \
			 "exit [dropped when this run created it]"),                  \
		KIT_FLAG("check", T, check,                                           \
			 "at the end: every record right, the "                       \
			 "backups equal to the primaries, no lock held (SmallBank: "  \
			 "and the money adds up); exit 1 if not"),                    \
		KIT_U64("txns", T, txns, 1, 1e12, "N",                                \
			"exactly N transactions per coroutine instead of --seconds"), \
		KIT_INT("load-batch", T, batch, 1, DTX_BATCH_MAX, "N",                \
			"inserts per load transaction [8]")

#endif
