/*
 * A query as data: its checks, reading a record's fields, the per-source
 * acceptance rule (filter, implausible, late) and window assignment
 * (docs/stream.md §2).
 *
 * Invariants: every field lies inside the record (checked at create), so
 * any bit pattern is a record; an accepted event time is below
 * SMART_STREAM_TS_LIMIT, so window ends never overflow; a source's
 * watermark is max(accepted time) - lateness and only grows, and a record
 * below it is late: every later accepted record is at or above it.  A
 * session bucket entry a peer ships is checked whole (session_ok) before
 * it is merged.
 */
#include <string.h>

#include "stream/stream_int.h"

static int field_ok(const struct smart_stream_field *f, uint32_t rec,
		    int required)
{
	if (!f->size)
		return !required;
	if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
		return 0;
	return f->off <= rec && f->size <= rec - f->off;
}

static int window_ok(const struct smart_stream_query *q)
{
	if (!q->size || q->size > (1ULL << 40))
		return 0;
	if (q->window == SMART_STREAM_TUMBLING)
		return 1;
	if (q->window == SMART_STREAM_SESSION) /* gap >= 2: see entry_ok */
		return q->size >= 2 && !q->slide;
	if (q->window != SMART_STREAM_SLIDING || !q->slide ||
	    q->size % q->slide)
		return 0;
	return q->size / q->slide <= 1024;
}

int smart__stream_query_check(const struct smart_stream_query *q)
{
	uint32_t r = q->record_bytes;
	int fields = !q->extract;

	if (q->struct_size < sizeof(*q) || !r || r > 65536)
		return SMART_EINVAL;
	if (!field_ok(&q->filter, r, 0) || !field_ok(&q->key, r, fields) ||
	    !field_ok(&q->time, r, fields) || !field_ok(&q->value, r, 0))
		return SMART_EINVAL;
	if (q->agg > SMART_STREAM_JOIN || !window_ok(q) ||
	    q->lateness >= SMART_STREAM_TS_LIMIT)
		return SMART_EINVAL;
	/* a JOIN emits its pairs per window: sessions have no rows yet */
	if (q->agg == SMART_STREAM_JOIN && q->window == SMART_STREAM_SESSION)
		return SMART_EINVAL;
	return 0;
}

static uint64_t field_get(const uint8_t *rec,
			  const struct smart_stream_field *f)
{
	uint64_t v = 0;

	for (uint32_t i = f->size; i-- > 0;)
		v = v << 8 | rec[f->off + i];
	return v;
}

static int extract(struct smart_stream *s, const uint8_t *rec, uint64_t *key,
		   uint64_t *ts, uint64_t *v)
{
	const struct smart_stream_query *q = &s->q;

	if (q->filter.size && field_get(rec, &q->filter) != q->filter_eq)
		return 0;
	if (q->extract)
		return q->extract(rec, q->record_bytes, key, ts, v,
				  q->extract_arg) == 1;
	*key = field_get(rec, &q->key);
	*ts = field_get(rec, &q->time);
	*v = field_get(rec, &q->value);
	return 1;
}

uint64_t smart__stream_wm(const struct smart_stream *s)
{
	if (!s->seen)
		return 0;
	return s->maxts > s->q.lateness ? s->maxts - s->q.lateness : 0;
}

static int implausible(const struct smart_stream *s, uint64_t ts)
{
	if (ts >= SMART_STREAM_TS_LIMIT)
		return 1;
	return s->q.horizon && s->seen && ts > s->maxts &&
	       ts - s->maxts > s->q.horizon;
}

int smart__stream_accept(struct smart_stream *s, const uint8_t *rec,
			 uint64_t *key, uint64_t *ts, uint64_t *v)
{
	if (!extract(s, rec, key, ts, v)) {
		s->st.filtered++;
		return 0;
	}
	if (implausible(s, *ts)) {
		s->st.implausible++;
		return 0;
	}
	if (!SMART_M_STREAM_LATE_KEEP && s->seen && *ts < smart__stream_wm(s)) {
		s->st.late++;
		return 0;
	}
	if (!s->seen || *ts > s->maxts)
		s->maxts = *ts;
	s->seen = 1;
	return 1;
}

static int wstart_ok(const struct smart_stream_query *q, uint64_t ws)
{
	uint64_t step = q->window == SMART_STREAM_SLIDING ? q->slide : q->size;

	return ws < SMART_STREAM_TS_LIMIT && ws % step == 0;
}

/* A session bucket's entry as a peer ships it: on the gap's grid (the
 * values' extremes at +1, MIN and MAX only), at least one record, and
 * its first and last times inside its bucket in order; the fire's walk
 * relies on the last (docs/stream.md §4). */
static int session_ok(const struct smart_stream_query *q,
		      const struct stream_entry *e)
{
	uint64_t off = e->wstart % q->size, b = e->wstart - off;

	if (e->wstart >= SMART_STREAM_TS_LIMIT)
		return 0;
	if (SMART_M_STREAM_SESSION_NO_CHECK)
		return off < 2;
	if (!e->a.count || off > 1)
		return 0;
	if (off == 1)
		return smart__stream_session_extra(q);
	return e->a.min >= b && e->a.min <= e->a.max && e->a.max - b < q->size;
}

int smart__stream_is_row(const struct smart_stream_query *q,
			 const struct stream_entry *e)
{
	return q->agg == SMART_STREAM_JOIN && !e->a.count;
}

/* JOIN (docs/stream.md §4): a row carries a right record's id (!= 0,
 * min = max = 0); a bucket's right records (sum) are at most its records
 * (count), so L = count - sum cannot wrap. */
static int join_ok(const struct smart_stream_query *q,
		   const struct stream_entry *e)
{
	if (q->agg != SMART_STREAM_JOIN || SMART_M_STREAM_JOIN_ROW_NO_CHECK)
		return 1;
	if (!e->a.count)
		return e->a.sum && !e->a.min && !e->a.max;
	return e->a.sum <= e->a.count;
}

int smart__stream_entry_ok(const struct smart_stream_query *q,
			   const struct stream_entry *e)
{
	if (q->window == SMART_STREAM_SESSION)
		return session_ok(q, e);
	return join_ok(q, e) && wstart_ok(q, e->wstart);
}

int smart__stream_session_extra(const struct smart_stream_query *q)
{
	return q->agg == SMART_STREAM_MIN || q->agg == SMART_STREAM_MAX;
}

/* SESSION: the record's bucket [b, b + gap), b a multiple of the gap.
 * Records of one bucket are less than the gap apart, so one session; the
 * bucket's entry at b holds (count, sum of values, first time, last
 * time), all merged like any aggregate, and for MIN and MAX a second
 * entry at b + 1 the values' extremes.  Sessions are runs of buckets
 * (table.c). */
static int assign_session(const struct smart_stream_query *q,
			  struct stream_table *t, uint64_t key, uint64_t ts,
			  uint64_t v)
{
	uint64_t b = ts - ts % q->size;
	struct stream_agg a = { 1, v, ts, ts };
	int rc = smart__stream_table_merge(t, b, key, &a);

	if (rc || !smart__stream_session_extra(q))
		return rc;
	smart__stream_agg_one(&a, v);
	return smart__stream_table_merge(t, b + 1, key, &a);
}

int smart__stream_assign(const struct smart_stream_query *q,
			 struct stream_table *t, uint64_t key, uint64_t ts,
			 uint64_t v)
{
	uint64_t step = q->window == SMART_STREAM_SLIDING ? q->slide : q->size;
	uint64_t ws = ts - ts % step, id = q->agg == SMART_STREAM_JOIN ? v : 0;
	struct stream_agg a;

	if (q->window == SMART_STREAM_SESSION)
		return assign_session(q, t, key, ts, v);
	/* JOIN: sum counts the right side's records, each also a row */
	smart__stream_agg_one(&a, id ? 1 : v);
	for (;;) {
		int rc;

		if (ws + q->size <= ts)
			return 0;
		rc = smart__stream_table_merge(t, ws, key, &a);
		if (!rc && id)
			rc = smart__stream_table_row(t, ws, key, id);
		if (rc || ws < step)
			return rc;
		ws -= step;
	}
}
