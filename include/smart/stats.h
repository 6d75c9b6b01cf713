/** @file
 * Statistics: per-worker counters merged on demand.
 *
 * Each worker writes its own counters without atomics or locks; a snapshot
 * reads every worker's counters (relaxed loads) and sums them, so a snapshot
 * taken while workers run is approximate but never torn per counter.
 * Counters of destroyed workers are folded into the ctx and kept.
 *
 * Thread safety: smart_stats_* may be called from any thread.
 */
#ifndef SMART_STATS_H
#define SMART_STATS_H

#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Counter ids; smart_stat_name() gives their names in text and JSON. */
enum smart_stat {
	SMART_STAT_READS,
	SMART_STAT_WRITES,
	SMART_STAT_CASES,
	SMART_STAT_FAAS,
	SMART_STAT_CAS_FAILS, /**< CAS whose old value != expect */
	SMART_STAT_BYTES_READ,
	SMART_STAT_BYTES_WRITTEN,
	SMART_STAT_WRS_POSTED,
	SMART_STAT_DOORBELLS,	/**< chains posted */
	SMART_STAT_COMPLETIONS, /**< completions polled */
	SMART_STAT_POLLS,	/**< CQ polls, empty or not */
	SMART_STAT_SYNCS,
	SMART_STAT_BOUNCES, /**< ops that went through a bounce slot */
	SMART_STAT_QP_FULL, /**< posts deferred because a send queue was full */
	SMART_STAT_CREDIT_WAITS,
	SMART_STAT_RETRIES,
	SMART_STAT_BACKOFF_CYCLES, /**< TSC cycles retries spent backing
				    * off, queueing for a slot after it
				    * included */
	SMART_STAT_ERRORS,	   /**< error completions */
	SMART_STAT_RECONNECTS,
	SMART_STAT_TASK_SWITCHES,
	SMART_STAT_TASKS_SPAWNED,
	SMART_STAT_CHUNKS_CLAIMED,
	SMART_STAT_ALLOCS,
	SMART_STAT_FREES,
	SMART_STAT_WRS_DONE,	/**< WRs completed (credits returned) */
	SMART_STAT_GUARDED_OPS, /**< operations ended by smart_backoff_end */
	SMART_STAT_ADMISSION_WAITS, /**< guard entries, and re-entries
				     * after a backoff, that had to queue */
	SMART_STAT_TUNER_EPOCHS,
	SMART_STAT_POOL_LOCKS,	    /**< registered-pool mutex acquisitions */
	SMART_STAT_EPOCH_ENTERS,    /**< smart_epoch_enter (outermost) */
	SMART_STAT_EPOCH_ANNOUNCES, /**< announcement words written */
	SMART_STAT_EPOCH_RETIRED,   /**< blocks retired */
	SMART_STAT_EPOCH_FREED,	    /**< of which freed by this ctx */
	SMART_STAT_EPOCH_SCANS,
	SMART_STAT_EPOCH_TAKEN_BACK, /**< dead clients' words cleared */
	SMART_STAT_EPOCH_LEAKED,     /**< blocks that could not be freed */
	SMART_STAT_ROUND_TRIPS,	     /**< syncs that waited for the network (had
				 * WRs in flight once posted) */
	SMART_STAT_ALLOC_ROUND_TRIPS, /**< of which in smart_alloc/free */
	/* data structures' local caches (smart_stat_add): lookups of an
	 * index cache answered locally or not, and speculative lookups
	 * answered by their one small READ or not */
	SMART_STAT_CACHE_HITS,
	SMART_STAT_CACHE_MISSES,
	SMART_STAT_SPEC_HITS,
	SMART_STAT_SPEC_MISSES,
	SMART_STAT_CQ_FAILURES, /**< completion queues that failed (overrun,
				 * dead device) and were replaced; their
				 * waiting operations failed */
	SMART_STAT_YIELDS,	/**< empty polls of a wait past the spin
				 * option that yielded the CPU */
	/* conflict avoidance (smart/backoff.h): windows that halved n_max
	 * (coroutine throttling engaged) and that raised it again */
	SMART_STAT_NMAX_CUTS,
	SMART_STAT_NMAX_RAISES,
	SMART_STAT_CREDIT_PARKS, /* tasks parked waiting for credits */
	SMART_STAT__COUNT
};

/** Room for the counters of later versions: c[] keeps its size when one is
 * added, so the fields after it stay where an older caller has them
 * (docs/api.md §4). */
#define SMART_STAT_MAX 96

typedef struct smart_stats {
	uint64_t c[SMART_STAT_MAX]; /**< SMART_STAT__COUNT used, the rest 0 */
	/* sync latency (post to last completion) in ns, from a sample of one
	 * sync in 16 (option latency_stats); sync_count counts the sample */
	uint64_t sync_count;
	double sync_p50_ns, sync_p99_ns, sync_p999_ns, sync_mean_ns;
	int workers;
	/* transport-wide (the RNIC model's doorbells and WQE cache) */
	uint64_t db_rings, db_contended, wqe_misses;
	/* techniques in force, e.g. "ThrdAwareAlloc,WorkReqThrot" or "None" */
	char techniques[64];
	/* work-request throttling: WRs in flight allowed per worker
	 * (-1 = unlimited) and the tuner's phase: "off", "no-nic" (plain
	 * shm: nothing to throttle for), "fixed", "update" or "stable" */
	int credit_cap;
	char throttle_phase[8];
	/* conflict avoidance: retries per guarded operation, its histogram
	 * (index i = i retries, the last bucket = 16 or more), and the
	 * backoff cap (cycles) and admitted coroutines of the first worker */
	double retries_per_op;
	uint64_t retry_hist[17];
	uint64_t backoff_cmax;
	int backoff_nmax;
	/* leases (smart/lease.h): renewals done, peers this ctx fenced, and
	 * 1 when this ctx itself is fenced */
	uint64_t lease_renewals, leases_fenced;
	int fenced;
} smart_stats_t;

/** Thread: any. */
const char *smart_stat_name(enum smart_stat id);

/** Add n to counter id of worker w (its owner thread only; no shared cache
 * line, no lock: what a data structure counts on its fast path).  Unknown
 * ids and NULL are ignored.  Thread: w's. */
void smart_stat_add(smart_worker_t *w, enum smart_stat id, uint64_t n);

/** Merge the counters of every worker of ctx (live and destroyed).
 * SMART_EINVAL for NULL arguments, SMART_ENOMEM.  The _sized forms take
 * the size of the caller's struct (docs/api.md §4).  Thread: any. */
int smart_stats_snapshot_sized(smart_ctx_t *ctx, smart_stats_t *out,
			       size_t size);
static inline int smart_stats_snapshot(smart_ctx_t *ctx, smart_stats_t *out)
{
	return smart_stats_snapshot_sized(ctx, out, sizeof(*out));
}

/** Print a snapshot as aligned text, or as one JSON object (no newline).
 * SMART_EINVAL for NULL arguments.  Thread: any (f's locking is stdio's). */
int smart_stats_print_sized(const smart_stats_t *s, size_t size, FILE *f);
int smart_stats_print_json_sized(const smart_stats_t *s, size_t size, FILE *f);
static inline int smart_stats_print(const smart_stats_t *s, FILE *f)
{
	return smart_stats_print_sized(s, sizeof(*s), f);
}
static inline int smart_stats_print_json(const smart_stats_t *s, FILE *f)
{
	return smart_stats_print_json_sized(s, sizeof(*s), f);
}

#ifdef __cplusplus
}
#endif
#endif
