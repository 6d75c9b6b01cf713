/*
 * The stream layer's internals (docs/stream.md).
 *
 * Invariants:
 *  - A table holds at most max_entries entries (window start, key) and at
 *    most half its slots are used (linear probing always ends); growth
 *    doubles it, past max_entries is SMART_ENOSPC.
 *  - An aggregate is (count, sum mod 2^64, min, max): merging two is
 *    commutative and associative, so any merge order gives the same bits.
 *  - A source's watermark never goes backwards, and every record it
 *    accepts later has an event time >= it (the late rule); a window
 *    [wstart, wend) is emitted only when the minimum over ALL sources'
 *    watermarks is >= wend, so nothing that could still come belongs to it.
 *  - A delta from source s carries epoch e only after s's epoch e - 1 was
 *    complete (its LAST message); each message is checked whole (length,
 *    count, keys led here, window starts, watermark order) before any of
 *    it is merged.
 */
#ifndef SMART_STREAM_INT_H
#define SMART_STREAM_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "smart/chan.h"
#include "smart/stream.h"
#include "smart/util.h"
#include "stream/stream_mutant.h"

/* Input records between two polls of the endpoint inside push. */
#define STREAM_POLL_EVERY 1024

struct stream_agg {
	uint64_t count, sum, min, max;
};

struct stream_entry {
	uint64_t wstart, key; /* wstart UINT64_MAX: an empty slot */
	struct stream_agg a;
};

/* JOIN: every right-side record is also kept as a row, a stream_entry
 * with count 0 (which no bucket has) and sum its id (the value, != 0),
 * min = max = 0; rows are a plain array (a multiset), at most max of
 * them (SMART_ENOSPC), fired with their bucket, which gives L. */
struct stream_table {
	struct stream_entry *e;
	uint32_t cap, n, max;
	struct stream_entry *row;
	uint32_t rows, row_cap;
};

/* A delta message in a channel slot: header, then n entries of
 * struct stream_entry (48 bytes each, the same layout both ends). */
enum {
	STREAM_MAGIC = 0x53747231,
	STREAM_F_LAST = 1,
	STREAM_F_FINAL = 2,
	STREAM_F_RECORDS = 4
};
struct stream_msg {
	uint32_t magic;
	uint16_t src;
	uint16_t flags;
	uint64_t epoch;
	uint64_t wm; /* the source's watermark at the swap (LAST only) */
	uint32_t n;
	uint32_t pad;
};
_Static_assert(sizeof(struct stream_msg) == 32, "delta header layout");
_Static_assert(sizeof(struct stream_entry) == 48, "delta entry layout");
/* A JOIN row in a delta: count (the mark, 0) at 16, the id (sum) at 24. */
_Static_assert(offsetof(struct stream_entry, a.count) == 16, "row mark");
_Static_assert(offsetof(struct stream_entry, a.sum) == 24, "row id");

/* UPPAR ships projected records: (key, ts, value). */
struct stream_rec {
	uint64_t key, ts, value;
};
_Static_assert(sizeof(struct stream_rec) == 24, "record entry layout");

struct smart_stream_hub {
	pthread_mutex_t mu;
	uint32_t executors, finished;
	uint64_t wm[SMART_STREAM_MAX_EXECUTORS];
	struct stream_table t;
	struct smart_stream_result *out; /* emitted, not yet taken */
	size_t out_n, out_cap, out_head;
};

struct stream_peer {
	smart_chan_t *tx; /* to this leader */
	smart_chan_t *rx; /* from this source */
	uint64_t epoch;	  /* last complete epoch received */
	uint64_t wm;	  /* its watermark at that epoch's swap */
	uint64_t stamp;	  /* that swap's time (the producer's word) */
	int final;
	int closed;   /* its channel closed after its final epoch */
	uint8_t *buf; /* outgoing entries of the current epoch */
	size_t buf_n, buf_cap;
};

struct smart_stream {
	struct smart_stream_config cfg;
	struct smart_stream_query q;
	smart_worker_t *w;
	int failed, finished;
	uint64_t in_epoch; /* records of the current epoch */
	uint64_t epoch;	   /* epochs ended */
	uint64_t maxts;
	int seen;
	struct stream_table part; /* this epoch's updates (every key) */
	struct stream_table lead; /* merged state of the keys led here */
	struct stream_peer peer[SMART_STREAM_MAX_EXECUTORS];
	uint32_t accepted;
	struct smart_stream_result *out;
	size_t out_n, out_cap, out_head;
	struct smart_stream_stats st;
	smart_hist_t lag;	/* trigger lag, ns (one host's clock) */
	int sending;		/* pump: the sender task still runs */
	struct stream_ckpt *ck; /* recovery on: ckpt.c */
};

/* table.c */
int smart__stream_table_init(struct stream_table *t, uint32_t max);
void smart__stream_table_free(struct stream_table *t);
void smart__stream_table_clear(struct stream_table *t);
int smart__stream_table_merge(struct stream_table *t, uint64_t wstart,
			      uint64_t key, const struct stream_agg *a);
void smart__stream_agg_one(struct stream_agg *a, uint64_t v);
uint64_t smart__stream_agg_value(const struct stream_agg *a, uint32_t agg);
/* JOIN: keep a right record (id != 0) of (wstart, key) as a row;
 * SMART_ENOSPC past max rows, SMART_ENOMEM. */
int smart__stream_table_row(struct stream_table *t, uint64_t wstart,
			    uint64_t key, uint64_t id);
/* Merge src's buckets and rows into t (its rows appended). */
int smart__stream_table_merge_all(struct stream_table *t,
				  const struct stream_table *src);
/* Move every entry whose window (SESSION: whose session, a run of
 * buckets) ended by wm into out (grown); 0 or SMART_ENOMEM. */
int smart__stream_table_fire(struct stream_table *t, uint64_t wm,
			     const struct smart_stream_query *q,
			     struct smart_stream_result **out, size_t *n,
			     size_t *cap, uint64_t *fired);

/* query.c */
int smart__stream_query_check(const struct smart_stream_query *q);
/* 1 accepted (*key, *ts, *v set), 0 dropped (counted in st). */
int smart__stream_accept(struct smart_stream *s, const uint8_t *rec,
			 uint64_t *key, uint64_t *ts, uint64_t *v);
uint64_t smart__stream_wm(const struct smart_stream *s);
/* Add (ts, v) of key into t for each window containing ts. */
int smart__stream_assign(const struct smart_stream_query *q,
			 struct stream_table *t, uint64_t key, uint64_t ts,
			 uint64_t v);
/* An entry a peer shipped (SLASH): its window start on the query's grid,
 * below 2^62; a session bucket's times inside the bucket. */
int smart__stream_entry_ok(const struct smart_stream_query *q,
			   const struct stream_entry *e);
/* 1 when e is a JOIN row (count 0); its checks are in entry_ok. */
int smart__stream_is_row(const struct smart_stream_query *q,
			 const struct stream_entry *e);
/* SESSION: MIN and MAX keep a second entry per bucket (the values). */
int smart__stream_session_extra(const struct smart_stream_query *q);

/* link.c: channels among the executors */
int smart__stream_link_open(struct smart_stream *s);
void smart__stream_link_close(struct smart_stream *s);
/* Ship every peer's buffer of this epoch, LAST with wm; runs the pump
 * (a sender and a receiver task) until shipped. */
int smart__stream_link_ship(struct smart_stream *s, uint64_t wm, int final,
			    uint64_t stamp);
/* Take and merge what landed; 0 or an error (executor failed). */
int smart__stream_link_drain(struct smart_stream *s);
/* link.c: the slots taken from this executor's FOOTER channels so far */
uint64_t smart__stream_link_footer_slots(const struct smart_stream *s);
int smart__stream_peer_add(struct stream_peer *p, const void *e, size_t len);
/* rc; SMART_ECONN from peer i's connection also names it (stats.gone). */
int smart__stream_gone(struct smart_stream *s, uint32_t i, int rc);

/* exec.c: fire what the minimum watermark of all sources allows; stamp:
 * the swap time of the epoch that allowed it (for the trigger lag) */
int smart__stream_fire(struct smart_stream *s, uint64_t stamp);
void smart__stream_lag(struct smart_stream *s, uint64_t stamp, uint64_t fired);

/* hub.c: LOCAL */
int smart__stream_hub_epoch(struct smart_stream *s, uint64_t wm, int final,
			    uint64_t stamp);
int smart__stream_hub_poll(struct smart_stream *s,
			   struct smart_stream_result *out, size_t max,
			   size_t *n);

/* ckpt.c: exactly-once recovery (docs/stream.md §11) */
/* Fired results of this epoch, kept until the checkpoint commits them. */
int smart__stream_ckpt_note(struct smart_stream *s,
			    const struct smart_stream_result *r, size_t n);
/* At an epoch end, after firing: log the results, write the checkpoint. */
int smart__stream_ckpt_epoch(struct smart_stream *s, int final);
void smart__stream_ckpt_close(struct smart_stream *s);
/* E > 1: write the cuts the sources' epochs now allow (after this
 * executor's own input ended); 0 or an error. */
int smart__stream_ckpt_poll(struct smart_stream *s);
/* The newest source epoch a leader may take now (UINT64_MAX: any): with
 * aligned cuts, nothing past the cut being built. */
uint64_t smart__stream_ckpt_limit(const struct smart_stream *s);
/* 1 unless E > 1 and some part (this one or another) does not hold the
 * final cut yet: 0; or an error (a part's executor died short of it). */
int smart__stream_ckpt_done(struct smart_stream *s);
/* 1 when restored with this executor's input already finished. */
int smart__stream_ckpt_src_final(const struct smart_stream *s);

#endif
