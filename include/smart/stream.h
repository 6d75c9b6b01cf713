/** @file
 * Windowed stream aggregation in event time (Slash's model, docs/stream.md).
 *
 * A query is data: fixed-size records, an optional equality filter, the
 * key, event-time and value fields (little-endian unsigned integers of 1,
 * 2, 4 or 8 bytes) or an extract callback, one aggregate (COUNT, SUM,
 * MIN, MAX, AVG, or JOIN: a windowed equi-join of two sides) over
 * tumbling, sliding or session windows of event
 * time, and an allowed lateness.  E executors each read their own partition of the
 * input (smart_stream_push) and keep partial state for every key; the
 * engine chosen at run time merges it:
 *   SMART_STREAM_LOCAL  threads of one process merge their partial state
 *                       into one table at each epoch end (late merging);
 *   SMART_STREAM_SLASH  each executor ships, per epoch, one delta per
 *                       leader over one-sided channels (smart/chan.h); the
 *                       leader of a key (smart_stream_key_owner) merges
 *                       them and fires its windows;
 *   SMART_STREAM_UPPAR  records are re-partitioned by key over the same
 *                       channels (Slash's RDMA UpPar baseline).
 * A window [wstart, wend) fires when every source's watermark (its largest
 * accepted event time minus the lateness) reached wend: no result uses a
 * record a source accepted later, and the emitted multiset of (window,
 * key, value, count) equals a sequential run over the same partitions
 * (docs/stream.md §3).  Results are exact integers: SUM is modulo 2^64,
 * AVG the floor of SUM / COUNT.
 *
 * Per source, a record is dropped by the filter, or as implausible (event
 * time >= SMART_STREAM_TS_LIMIT, or beyond the watermark by more than
 * horizon when horizon is set), or as late (event time below the source's
 * watermark); each counted.  Any bit pattern is a record.
 *
 * Thread safety: an executor belongs to its worker's thread; a hub is
 * shared by the LOCAL executors of one process.  Errors: 0 or a negative
 * SMART_E*; an error has no side effect unless said.
 */
#ifndef SMART_STREAM_H
#define SMART_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include "smart/gaddr.h"
#include "smart/rpc.h"
#include "smart/smart.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_stream smart_stream_t;
typedef struct smart_stream_hub smart_stream_hub_t;

enum {
	SMART_STREAM_COUNT = 0,
	SMART_STREAM_SUM = 1,
	SMART_STREAM_MIN = 2,
	SMART_STREAM_MAX = 3,
	SMART_STREAM_AVG = 4,
	/* JOIN: an equi-join of two sides on the key within a tumbling or
	 * sliding window: a record whose value is 0 is of the left side,
	 * else of the right, the value its id; each right record of a
	 * (window, key) with L > 0 left records emits one pair: value its
	 * id, count L (how many times the pair is in the join). */
	SMART_STREAM_JOIN = 5
};
/* SESSION: per key, records less than `size` (the gap) apart in event
 * time form one session [first, last + gap) (docs/stream.md §2). */
enum {
	SMART_STREAM_TUMBLING = 0,
	SMART_STREAM_SLIDING = 1,
	SMART_STREAM_SESSION = 2
};
enum { SMART_STREAM_LOCAL = 0, SMART_STREAM_SLASH = 1, SMART_STREAM_UPPAR = 2 };

/** Event times at or above this are implausible (dropped, counted). */
#define SMART_STREAM_TS_LIMIT	   (1ULL << 62)
#define SMART_STREAM_MAX_EXECUTORS 64

/** A field of a record: size 0 (absent), 1, 2, 4 or 8 bytes at off. */
struct smart_stream_field {
	uint32_t off;
	uint32_t size;
};

/** The extract callback, when set, replaces the key, time and value
 * fields (the filter still applies first): 1 keeps the record with
 * *key, *ts, *value; 0 drops it (counted as filtered). */
typedef int (*smart_stream_extract_fn)(const void *rec, uint32_t len,
				       uint64_t *key, uint64_t *ts,
				       uint64_t *value, void *arg);

struct smart_stream_query {
	uint32_t struct_size;  /**< sizeof, set by the init function */
	uint32_t record_bytes; /**< 1..65536 */
	struct smart_stream_field filter; /**< kept when == filter_eq; size 0:
					   * every record */
	uint64_t filter_eq;
	struct smart_stream_field key, time, value; /**< key and time required
						     * without extract; value
						     * size 0 reads 0 */
	uint32_t agg;	   /**< SMART_STREAM_COUNT .. _JOIN */
	uint32_t window;   /**< SMART_STREAM_TUMBLING, _SLIDING, _SESSION */
	uint64_t size;	   /**< window length, 1..2^40; SESSION: the gap,
			  * 2..2^40 */
	uint64_t slide;	   /**< SLIDING: divides size, at most
					   * 1024 windows per record */
	uint64_t lateness; /**< allowed disorder, < 2^62 */
	uint64_t horizon;  /**< 0: off */
	smart_stream_extract_fn extract; /**< NULL: the fields */
	void *extract_arg;
};

struct smart_stream_config {
	uint32_t struct_size; /**< sizeof, set by the init function */
	uint32_t engine;    /**< SMART_STREAM_LOCAL (default), _SLASH, _UPPAR */
	uint32_t executors; /**< E: 1..SMART_STREAM_MAX_EXECUTORS */
	uint32_t index;	    /**< this executor: 0..E-1 */
	uint32_t epoch_records;	  /**< input records per epoch: 0 is 65536 */
	uint32_t max_entries;	  /**< state entries (window, key) per table:
				 * 0 is 1 << 20; more gives SMART_ENOSPC */
	uint32_t slots;		  /**< channels: as smart_chan_config (0: 8) */
	uint32_t slot_bytes;	  /**< 0: 32 KiB */
	smart_rpc_t *rpc;	  /**< SLASH, UPPAR: this executor's endpoint,
				 * listening at peers[index] */
	const char *const *peers; /**< SLASH, UPPAR: E host:port */
	smart_stream_hub_t *hub;  /**< LOCAL: shared by the E executors */
	struct smart_stream_query query;
	uint32_t chan_mode; /**< SLASH, UPPAR: the channels' mode,
			     * SMART_CHAN_IMM (default) or _FOOTER
			     * (smart/chan.h); others: SMART_EINVAL */
};

struct smart_stream_result {
	uint64_t wstart, wend, key, value, count;
};

struct smart_stream_stats {
	uint64_t records;	/**< pushed */
	uint64_t filtered;	/**< dropped by the filter or extract */
	uint64_t late;		/**< dropped below the watermark */
	uint64_t implausible;	/**< dropped: time beyond the limits */
	uint64_t epochs;	/**< ended here */
	uint64_t delta_entries; /**< shipped to other leaders (SLASH) or
				 * records shipped (UPPAR) */
	uint64_t chan_slots;	/**< slots committed */
	uint64_t chan_bytes;	/**< their bytes */
	uint64_t results;	/**< emitted by this executor */
	uint64_t early_results; /**< emitted while some source was still
				 * running (a finite watermark) */
	uint64_t proto_errors;	/**< peers cut for a bad message */
	/** trigger lag: from the epoch end (swap) that completed a window
	 * to its emission, median and 99th percentile (ns) */
	uint64_t lag_p50_ns, lag_p99_ns;
	/** executors found gone (bit i: executor i): the connection to or
	 * from it failed before its last epoch (killed, or silent past the
	 * endpoint's keepalive bound, e.g. stopped); the call that found it
	 * returned SMART_ECONN */
	uint64_t gone;
	/** slots this executor took from its peers' channels that came in
	 * FOOTER mode (polled footer and CRC, smart/chan.h): the mode the
	 * channels actually ran, counted by the channel layer */
	uint64_t chan_footer_slots;
	/** recovery on (smart_stream_ckpt_attach): checkpoints written
	 * (E > 1: cuts), and the bytes they wrote to the area (slots,
	 * results logged, done words) */
	uint64_t ckpts, ckpt_bytes;
};

/** Every field zero (its default) and struct_size set.  Cannot fail. */
void smart_stream_query_init(struct smart_stream_query *q);
void smart_stream_config_init(struct smart_stream_config *cfg);

/** The executor leading key among E (the owner of its windows). */
uint32_t smart_stream_key_owner(uint64_t key, uint32_t executors);

/** A hub for E LOCAL executors of one process.  SMART_EINVAL for E out of
 * range, SMART_ENOMEM.  Thread: any. */
int smart_stream_hub_create(uint32_t executors, uint32_t max_entries,
			    smart_stream_hub_t **out);
/** Free it (after its executors closed).  NULL: no-op.  Thread: any. */
int smart_stream_hub_destroy(smart_stream_hub_t *h);

/** An executor on w.  SLASH and UPPAR open a channel to every other
 * executor and wait (up to the endpoint's timeout) for theirs: all E must
 * be created at about the same time.  SMART_EINVAL for a bad query or
 * config, SMART_ENOMEM, the errors of smart_chan_open, SMART_ETIMEDOUT.
 * Thread: w's, from its main context (not a task). */
int smart_stream_create(smart_worker_t *w,
			const struct smart_stream_config *cfg,
			smart_stream_t **out);

/** Process n records (n x record_bytes bytes) of this executor's input;
 * ends an epoch every epoch_records records (ships its deltas, fires what
 * the watermarks allow).  SMART_ENOSPC when the state is full,
 * SMART_ECONN when a peer is gone (stats.gone names it: killed, or silent
 * past the keepalive bound), SMART_EPROTO when one broke the
 * protocol: the executor is then failed (every later call returns the
 * same) and the records of this call may be partly counted.
 * SMART_EINVAL after finish.  Thread: w's, main context. */
int smart_stream_push(smart_stream_t *s, const void *records, size_t n);

/** End of this executor's input: the last epoch with an infinite
 * watermark.  Errors as push.  Thread: w's, main context. */
int smart_stream_finish(smart_stream_t *s);

/** Receive and merge what peers sent, fire windows, and copy up to max
 * results into out (*n of them).  0 while more may come, SMART_ENOENT
 * once every source finished and every result was taken.  Errors as push.
 * Thread: w's, main context. */
int smart_stream_poll(smart_stream_t *s, struct smart_stream_result *out,
		      size_t max, size_t *n);

/** Close the executor (its channels) and free it.  NULL: no-op returning 0.
 * Thread: w's. */
int smart_stream_close(smart_stream_t *s, smart_worker_t *w);

/** The executor's counters.  SMART_EINVAL for NULL.  Thread: w's. */
int smart_stream_stats_sized(const smart_stream_t *s, smart_worker_t *w,
			     struct smart_stream_stats *out, size_t size);
static inline int smart_stream_stats(const smart_stream_t *s, smart_worker_t *w,
				     struct smart_stream_stats *out)
{
	return smart_stream_stats_sized(s, w, out, sizeof(*out));
}

/** Seeded generators: records of partition `part` (of parts), numbered
 * from `first`, written into out (n x the workload's record size); the
 * same arguments give the same bytes.  keys: distinct keys (1..2^40);
 * zipf_milli: 0 uniform, else Zipf theta x 1000 (1..999); pareto_milli:
 * 0 off, else the keys follow a bounded Pareto law of shape alpha =
 * pareto_milli / 1000 (1..100000: alpha 0.001..100): key k = floor(x) - 1
 * for x Pareto on [1, keys + 1), so P(key >= k) falls as (k + 1)^-alpha
 * (key 0 the hottest; docs/stream.md §5); at most one of zipf_milli and
 * pareto_milli is set; disorder: the
 * largest event-time shift backwards.  Record i of a partition has event
 * time i minus a seeded shift of 0..disorder (docs/stream.md §5).
 * SMART_EINVAL for an unknown workload or a field out of range.
 * Thread: any. */
enum {
	SMART_STREAM_GEN_YSB = 0,  /**< 78 B, filter event_type == 0, COUNT per
				   * campaign */
	SMART_STREAM_GEN_CM = 1,   /**< 64 B, AVG cpu per job */
	SMART_STREAM_GEN_NB7 = 2,  /**< 32 B bids, MAX price per auction */
	SMART_STREAM_GEN_RO = 3,   /**< 16 B, COUNT per key */
	SMART_STREAM_GEN_NB11 = 4, /**< 32 B bids, COUNT per bidder per
				   * session (gap 10000) */
	SMART_STREAM_GEN_NB8 = 5   /**< 32 B persons and auctions (value:
				   * 0 or the auction id), JOIN on the
				   * person per window (10000) */
};
struct smart_stream_gen {
	uint32_t workload;
	uint32_t parts, part;
	uint64_t seed, keys;
	uint32_t zipf_milli;
	uint64_t disorder;
	uint32_t pareto_milli; /**< 0: off; else Pareto shape x 1000 */
};
/** The workload's record size, and its query (window size in the
 * generator's time units); SMART_EINVAL for an unknown one. */
int smart_stream_gen_query(uint32_t workload, struct smart_stream_query *q);
int smart_stream_gen_fill(const struct smart_stream_gen *g, uint64_t first,
			  size_t n, void *out);

/* ---- Exactly-once recovery (docs/stream.md §11) ----------------------------
 * One executor's state is checkpointed at every epoch end into an area of
 * blade memory it owns through its lease; the windows it fires go to an
 * output log in the same area, committed by the checkpoint.  After the
 * owner dies (kill -9) or is fenced, another executor attaches to the
 * area: it restores the last complete checkpoint (state, watermark,
 * counters, the input position) and resumes the input there; the
 * committed log then holds every result of the partition exactly once.
 * With several executors (SLASH, executors E > 1) every executor owns
 * one part of the area and checkpoints are aligned: checkpoint c of an
 * executor holds its leader state after every source's epoch c (and
 * nothing later), so the checkpoints c of all parts are one consistent
 * cut.  After a death the whole stream restarts from a cut:
 * smart_stream_ckpt_rollback (once no executor of the old run is alive)
 * picks the newest cut every part holds, then a new executor attaches to
 * each part, the dead one's taken over through its lease. */
struct smart_stream_ckpt_config {
	uint32_t struct_size; /**< sizeof, set by the init function */
	uint32_t max_entries; /**< state entries a checkpoint holds:
			       * 1..2^24 (0: 4096); more is SMART_ENOSPC */
	uint32_t max_results; /**< the output log: 1..2^28 (0: 65536);
			       * more is SMART_ENOSPC */
	uint32_t wait_ms;     /**< attach: how long to wait for a live
			       * owner's lease to run out (0: not at all) */
	smart_gaddr_t base;   /**< the area, smart_stream_ckpt_bytes() long,
			       * 8-aligned, zero before its first use */
	uint32_t executors;   /**< E of the stream: one part each (0: 1);
			       * attach: must be the executor's */
	uint32_t index;	      /**< the part smart_stream_ckpt_output
			       * reads (attach takes the executor's) */
};

/** Defaults and struct_size.  Cannot fail. */
void smart_stream_ckpt_config_init(struct smart_stream_ckpt_config *c);

/** The bytes of the area c describes; SMART_EINVAL for a bad c.
 * Thread: any. */
int smart_stream_ckpt_bytes(const struct smart_stream_ckpt_config *c,
			    uint64_t *bytes);

/** Own the area (E > 1: the executor's part; taking it over from a dead
 * or fenced owner, waiting up to wait_ms for a live one to be fenced),
 * restore the newest complete checkpoint in it and give the index of the
 * first input record still to push (0 for a fresh area; E > 1: the
 * partition's length when its source had finished, and finish then ends
 * no epoch); E > 1: an epoch end then waits until every source's epoch
 * arrived and every part holds the previous cut (at most 60 s:
 * SMART_ETIMEDOUT), and the executor goes on checkpointing in poll after
 * its own input finished, so poll until SMART_ENOENT, which comes only
 * once every part holds the final cut (a part 60 s behind: poll's
 * SMART_ETIMEDOUT); from then on every epoch end writes a
 * checkpoint (push and finish then also fail with the ops' errors:
 * SMART_EFENCED once this ctx was fenced, when another executor may own
 * the area), and smart_stream_close gives the area back.  Call on a new
 * executor before any push.  SMART_EBUSY: a live owner holds it;
 * SMART_ENOTSUP: not SLASH; SMART_EINVAL (pushed
 * already, bad c, query or epoch differing from the checkpoint's);
 * SMART_ENOMEM (a registered buffer of one slot: the ctx's buf_pool must
 * hold it); SMART_ENOSPC (more entries than the executor's max_entries);
 * the ops' errors.  On error the executor is unchanged and the area given
 * back.  Thread: s's worker, main context. */
int smart_stream_ckpt_attach(smart_stream_t *s,
			     const struct smart_stream_ckpt_config *c,
			     uint64_t *resume);

/** Several executors: make every part of the area restart from one cut.
 * With no executor of the area's stream running (dead, fenced or closed:
 * each part's owner word is taken for the time of the call, waiting up to
 * wait_ms for a live owner's lease to run out), finds the newest cut
 * every part holds (*line; 0: none, the stream starts over), and in each
 * part that holds a newer one (at most one newer: checkpoints are
 * aligned) makes that one unreadable, so attach restores the cut.  Call
 * it before attaching a new run after any death (attach refuses a part
 * ahead of the others' cut: SMART_EINVAL).  Errors: SMART_EINVAL,
 * SMART_EBUSY (a live owner), SMART_EPROTO (the parts are not of one
 * aligned run), SMART_ENOMEM, the ops'; on error nothing was changed.
 * Thread: w's, main context. */
int smart_stream_ckpt_rollback(smart_worker_t *w,
			       const struct smart_stream_ckpt_config *c,
			       uint64_t *line);

/** Read the committed output log of part c->index of the area: up to max
 * results into out
 * (*n of them; *total: how many are committed), and *final 1 once the
 * partition's last epoch was checkpointed.  Read it when no owner
 * writes (after the final checkpoint): a slot being written is skipped,
 * so a concurrent view may lag.  Errors: SMART_EINVAL, SMART_ENOMEM, the
 * ops'.  Thread: w's, main context. */
int smart_stream_ckpt_output(smart_worker_t *w,
			     const struct smart_stream_ckpt_config *c,
			     struct smart_stream_result *out, size_t max,
			     size_t *n, uint64_t *total, int *final);

#ifdef __cplusplus
}
#endif
#endif
