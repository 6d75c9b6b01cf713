/*
 * YCSB inside smart-bench: the state of a run and what its files share.
 * ycsb.c is the module (flags, checks, sizing, setup, report), ycsb_run.c
 * the keys, values, operations and threads, ycsb_share.c what processes
 * sharing one named table agree on, and one adapter per data structure
 * (ycsb_ht.c) maps YCSB's operations onto it.
 *
 * Keys: key i of the preloaded space [0, keys) is "user" + i zero-padded,
 * key_size bytes in all.  New keys (inserts) are "u" + the client id +
 * "-" + j zero-padded, j counting this process's inserts: the '-' keeps
 * them apart from the preloaded keys and the client id (one per process,
 * claimed in a shared table, ycsb_share.c) from every other process's.
 * A value is value_size - 4 random bytes followed by the CRC-32C of the
 * key and those bytes, so every read checks that it got a whole value
 * written for that very key; a mismatch is a validation failure (there
 * must be none).
 *
 * Invariants: no mutable globals (the run lives in struct ycsb); a
 * thread's counters are written by its own coroutines only, which never
 * run in parallel, and read by main after the join.
 */
#ifndef SMART_BENCH_YCSB_H
#define SMART_BENCH_YCSB_H

#include <stdatomic.h>
#include <stdint.h>

#include "bench.h"

#define YCSB_ACK_WINDOW (1u << 16) /* D: inserts in flight, max */

enum ycsb_op {
	OP_READ,
	OP_UPDATE,
	OP_INSERT,
	OP_RMW,
	OP_SCAN,
	OP_DELETE,
	OP__N
};

#define YCSB_CHURN_OWN 64  /* churn: own keys a task keeps present */
#define YCSB_SCAN_MAX  100 /* E: scans of 1..100 entries (YCSB's default) */

/* One entry a scan returned (pointing into the task's scan buffer). */
struct ycsb_kv {
	const void *key, *val;
	size_t klen, vlen;
};

/* A workload: percentages of each op, and the read key chooser. */
struct ycsb_workload {
	const char *title;
	int pct[OP__N];
	int latest; /* D: reads favour recent inserts */
	int sweep;  /* one pass: read, then update, every key once */
	int churn;  /* deletes take the task's own oldest insert */
};

struct ycsb;

/*
 * A data structure under YCSB.  Operations follow the structure's rules
 * (no ops of the caller's own queued); search returns SMART_ENOENT for a
 * missing key, insert SMART_EEXIST for a present one.
 */
struct ycsb_ds {
	const char *name;
	const char *title; /* "Smart-HT" */
	/* Bytes of blade memory per key: its share of the index at the
	 * structure's load factor, and its KV block. */
	uint64_t (*bytes_per_key)(const struct ycsb *y);
	/* Bytes a write (update or insert) allocates on the blade. */
	uint64_t (*bytes_per_write)(const struct ycsb *y);
	/* Create the structure for y->capacity keys over the run's blades;
	 * *h is what the other calls take.  Says on stderr why it failed. */
	int (*create)(struct ycsb *y, smart_worker_t *w, void **h);
	void (*close)(void *h);
	/* A note for the table's Blades line, e.g. ", table at root 16". */
	void (*note)(void *h, char *buf, size_t len);
	int (*search)(void *h, smart_worker_t *w, const char *key, size_t klen,
		      void *val, size_t cap, size_t *len);
	int (*insert)(void *h, smart_worker_t *w, const char *key, size_t klen,
		      const void *val, size_t vlen);
	int (*update)(void *h, smart_worker_t *w, const char *key, size_t klen,
		      const void *val, size_t vlen);
	/* SMART_ENOENT for a missing key. */
	int (*del)(void *h, smart_worker_t *w, const char *key, size_t klen);
	/* At most max entries from key on, ascending, into kv[] with their
	 * bytes in buf (cap); *n says how many (NULL when no range scans:
	 * no workload e). */
	int (*scan)(void *h, smart_worker_t *w, const char *key, size_t klen,
		    unsigned max, struct ycsb_kv *kv, void *buf, size_t cap,
		    unsigned *n);
	/* The preload in one call (NULL: key by key with insert): the
	 * entries next() gives, ascending, into the empty structure. */
	int (*bulk)(void *h, smart_worker_t *w,
		    int (*next)(void *arg, const void **key, size_t *klen,
				const void **val, size_t *vlen),
		    void *arg, uint64_t *loaded);
	/* The structure's own figures at the end of a run: fields added to
	 * rec and one line of the table ("" for none). */
	void (*report)(void *h, smart_worker_t *w, struct kit_rec *rec,
		       char *line, size_t len);
	/* Destroy the remote structure and close h: 0, or the error (h is
	 * still open then). */
	int (*drop)(void *h, smart_worker_t *w);
};

extern const struct ycsb_ds ycsb_ht, ycsb_bt;

/* How an adapter finds or makes its structure (ycsb_place); arg is the
 * adapter's (its config and where the handle goes). */
struct ycsb_place_ops {
	const char *what;    /* "table", "tree" */
	unsigned root_first; /* unnamed: root entries tried from */
	int (*open_named)(void *arg, smart_worker_t *w, uint16_t home,
			  const char *name);
	int (*create_named)(void *arg, smart_worker_t *w, uint16_t home,
			    const char *name);
	int (*create_at)(void *arg, smart_worker_t *w, uint16_t home,
			 unsigned root);
};

/* ycsb.c: the run's structure on the first blade: --table's, opened when
 * it exists, else created (a creator that loses the race to another opens
 * the winner's; a join, --no-preload, only opens; y->joined says which),
 * or a new one at the first free root entry from ops->root_first (its
 * index in *root).  Says on stderr why it failed. */
int ycsb_place(struct ycsb *y, smart_worker_t *w,
	       const struct ycsb_place_ops *ops, void *arg, unsigned *root);

/* ycsb_bt.c: the node size a tree for the run's keys and values takes
 * (1 KiB, or the power of two holding 4 entries), 0 when none does. */
unsigned ycsb_bt_node_size(const struct ycsb *y);

struct ycsb_thread {
	struct ycsb *y;
	int idx;
	uint64_t ops[OP__N];
	/* round trips the tasks waited for inside each kind of op, and of
	 * those the allocator's (smart_task_round_trips) */
	uint64_t rt[OP__N], rt_alloc[OP__N];
	uint64_t bytes[OP__N]; /* payload they posted (smart_task_bytes) */
	uint64_t max_cycles;   /* the slowest op (every op is timed) */
	/* each kind's latency: exact min, max and sum (every op is timed),
	 * quantiles from a sample of one op in KIT_LAT_SAMPLE */
	uint64_t lat_min[OP__N], lat_max[OP__N], lat_sum[OP__N];
	smart_hist_t lat[OP__N];
	uint64_t errors, vfail;
	uint64_t scanned; /* E: entries the scans returned */
	int first_err;
	smart_hist_t hist; /* op latency in cycles (sampled) */
	int rc;
};

struct ycsb_result {
	uint64_t ops, n[OP__N], errors, vfail, scanned;
	int first_err;
	double mops, retries_per_op, rdma_ops_per_op, bytes_per_op;
	double rt_per_op, alloc_rt_per_op, rt[OP__N]; /* rt[k]: per op k */
	double bytes[OP__N];			      /* per op k */
	double max_us;
	uint64_t swept;		      /* sweep: keys done */
	uint64_t retired, freed;      /* blocks, whole run, after the drain */
	struct smart_alloc_usage mem; /* the blades', summed, at the end */
	int mem_ok;
	int stop_sig; /* the window ended by this signal */
	int drop_rc;  /* --drop: 0 or its error */
	struct kit_lat lat;
	struct kit_lat op_lat[OP__N]; /* each kind's (YCSB's per-op lines) */
	int failed;		      /* the run stopped: kit_fatal error */
	double failed_at;	      /* that many seconds into the window */
};

struct ycsb {
	/* flags */
	int wl, ds;
	uint64_t keys;
	int key_size, value_size;
	double zipf;
	int uniform;
	int coros;
	const char *table; /* --table: a named, shared table */
	int no_preload, drop;
	uint64_t insert_room; /* --insert-room (0: estimated) */
	int cache_mb;	      /* --cache-mb: bt's index cache */
	int hocl;	      /* --hocl: bt's local lock table */
	int lock_memory;      /* --lock-memory: SMART_BT_LOCKS_* */
	uint64_t ops_max;     /* --ops: the run's ops, 0: --seconds */
	double target;	      /* --target: ops/s of all threads, 0: no cap */
	/* the run */
	int joined;	     /* the table existed: opened, not made */
	int client;	     /* this process's id for new keys */
	int new_digits;	     /* digits of j in a new key (ycsb.h) */
	uint64_t new_max;    /* new keys that fit: 10^new_digits */
	char new_prefix[16]; /* "u" + client + "-" */
	int new_prefix_len;
	struct bench_run *run;
	const struct ycsb_workload *w;
	const struct ycsb_ds *dsi;
	void *h;		     /* the structure (dsi's handle) */
	smart_worker_t *main_worker; /* created it; kept for the run */
	uint64_t keys_asked;	     /* before scaling down to fit memory */
	uint64_t capacity;	     /* keys the structure is built for */
	uint64_t growth;	     /* keys it may have to hold by the end
					 * (D inserts): it must grow to this */
	smart_zipf_t zipf_gen;
	struct kit_runner runner;
	struct kit_progress load;  /* the preload, counted by the tasks */
	struct kit_progress sweep; /* the sweep's keys, likewise */
	_Atomic int running;	   /* threads not done with the run */
	struct kit_window win;
	struct ycsb_thread *t;
	_Atomic uint64_t load_next;  /* next key to preload */
	_Atomic uint64_t sweep_next; /* sweep: next key */
	_Atomic uint64_t ins_next;   /* D: next key to insert */
	_Atomic uint64_t op_next;    /* --ops: ops handed out */
	_Atomic uint64_t acked;	     /* D: [0, acked) all inserted */
	atomic_flag ack_lock;
	_Atomic uint64_t *ack_done; /* D: ring of finished inserts (k+1) */
	struct ycsb_result res;
};

/* ycsb.c: the workloads, indexed by y->wl, and their names. */
extern const struct ycsb_workload ycsb_workloads[];
extern const char *const ycsb_op_names[];

/* ycsb_run.c: the preload and the measured window; fills y->res. */
int ycsb_run(void *m, struct bench_run *r);

/* ycsb_run.c: where the blades' memory is now, into y->res. */
void ycsb_mem_fill(struct ycsb *y);

/* ycsb_share.c: a named table's record of its key space and the claim
 * of a client id, through the structure's own operations. */
int ycsb_share_publish(struct ycsb *y, smart_worker_t *w);
int ycsb_share_check(struct ycsb *y, smart_worker_t *w);
int ycsb_share_claim(struct ycsb *y, smart_worker_t *w);

#endif
