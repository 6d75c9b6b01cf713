/*
 * Window state: an open-addressing table of (window start, key) ->
 * aggregate, and the aggregates themselves (docs/stream.md §2).
 *
 * Invariants: at most half the slots are used, so a probe ends at an empty
 * slot; the table never holds more than its max entries (SMART_ENOSPC) and
 * grows by doubling; an aggregate merge is commutative and associative
 * (count and sum mod 2^64 add, min and max compare), so the merged bits do
 * not depend on the order deltas arrive in.  SESSION: a session is a
 * maximal run of gap-long buckets each joined to the next (below), so
 * merging buckets in any order gives the same sessions; one fires only
 * when the watermark reached its last record + the gap.
 */
#include <stdlib.h>
#include <string.h>

#include "stream/stream_int.h"

#define EMPTY UINT64_MAX

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

uint32_t smart_stream_key_owner(uint64_t key, uint32_t executors)
{
	return executors ? (uint32_t)(mix(key ^ 0x5157) % executors) : 0;
}

static int alloc_slots(struct stream_table *t, uint32_t cap)
{
	struct stream_entry *e = malloc((size_t)cap * sizeof(*e));

	if (!e)
		return SMART_ENOMEM;
	for (uint32_t i = 0; i < cap; i++)
		e[i].wstart = EMPTY;
	t->e = e;
	t->cap = cap;
	t->n = 0;
	return 0;
}

int smart__stream_table_init(struct stream_table *t, uint32_t max)
{
	t->max = max;
	return alloc_slots(t, 64);
}

void smart__stream_table_free(struct stream_table *t)
{
	free(t->e);
	free(t->row);
	t->e = t->row = NULL;
	t->cap = t->n = t->rows = t->row_cap = 0;
}

void smart__stream_table_clear(struct stream_table *t)
{
	for (uint32_t i = 0; i < t->cap && t->n; i++)
		if (t->e[i].wstart != EMPTY) {
			t->e[i].wstart = EMPTY;
			t->n--;
		}
	t->rows = 0;
}

static struct stream_entry *slot(struct stream_table *t, uint64_t ws,
				 uint64_t key)
{
	uint32_t m = t->cap - 1, i = (uint32_t)mix(ws * 31 + key) & m;

	while (t->e[i].wstart != EMPTY &&
	       (t->e[i].wstart != ws || t->e[i].key != key))
		i = (i + 1) & m;
	return &t->e[i];
}

static void agg_merge(struct stream_agg *d, const struct stream_agg *a)
{
	d->count += a->count;
	d->sum += a->sum;
	if (a->min < d->min)
		d->min = a->min;
	if (a->max > d->max)
		d->max = a->max;
}

static int grow(struct stream_table *t)
{
	struct stream_table old = *t;

	if (alloc_slots(t, old.cap * 2)) {
		*t = old;
		return SMART_ENOMEM;
	}
	for (uint32_t i = 0; i < old.cap; i++)
		if (old.e[i].wstart != EMPTY) {
			*slot(t, old.e[i].wstart, old.e[i].key) = old.e[i];
			t->n++;
		}
	free(old.e);
	return 0;
}

int smart__stream_table_merge(struct stream_table *t, uint64_t wstart,
			      uint64_t key, const struct stream_agg *a)
{
	struct stream_entry *e = slot(t, wstart, key);

	if (e->wstart == EMPTY) {
		if (t->n >= t->max)
			return SMART_ENOSPC;
		if ((t->n + 1) * 2 > t->cap) {
			int rc = grow(t);

			if (rc)
				return rc;
			e = slot(t, wstart, key);
		}
		e->wstart = wstart;
		e->key = key;
		e->a = *a;
		t->n++;
		return 0;
	}
	agg_merge(&e->a, a);
	return 0;
}

/* JOIN: the rows are bounded like the buckets (a record is a bucket
 * update and at most one row per window), never an unbounded array. */
int smart__stream_table_row(struct stream_table *t, uint64_t wstart,
			    uint64_t key, uint64_t id)
{
	if (t->rows >= t->max && !SMART_M_STREAM_JOIN_ROWS_UNBOUNDED)
		return SMART_ENOSPC;
	if (t->rows == t->row_cap) {
		uint32_t c = t->row_cap ? t->row_cap * 2 : 256;
		void *p = realloc(t->row, (size_t)c * sizeof(*t->row));

		if (!p)
			return SMART_ENOMEM;
		t->row = p;
		t->row_cap = c;
	}
	t->row[t->rows++] = (struct stream_entry){ wstart,
						   key,
						   { 0, id, 0, 0 } };
	return 0;
}

int smart__stream_table_merge_all(struct stream_table *t,
				  const struct stream_table *src)
{
	int rc = 0;

	for (uint32_t i = 0; i < src->cap && !rc; i++) {
		const struct stream_entry *e = &src->e[i];

		if (e->wstart != EMPTY)
			rc = smart__stream_table_merge(t, e->wstart, e->key,
						       &e->a);
	}
	for (uint32_t i = 0; i < src->rows && !rc; i++)
		rc = smart__stream_table_row(t, src->row[i].wstart,
					     src->row[i].key,
					     src->row[i].a.sum);
	return rc;
}

void smart__stream_agg_one(struct stream_agg *a, uint64_t v)
{
	*a = (struct stream_agg){ 1, v, v, v };
}

uint64_t smart__stream_agg_value(const struct stream_agg *a, uint32_t agg)
{
	switch (agg) {
	case SMART_STREAM_SUM:
		return a->sum;
	case SMART_STREAM_MIN:
		return a->min;
	case SMART_STREAM_MAX:
		return a->max;
	case SMART_STREAM_AVG:
		return a->count ? a->sum / a->count : 0;
	default:
		return a->count;
	}
}

static int out_push(struct smart_stream_result **out, size_t *n, size_t *cap,
		    const struct smart_stream_result *r)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		void *p = realloc(*out, c * sizeof(**out));

		if (!p)
			return SMART_ENOMEM;
		*out = p;
		*cap = c;
	}
	(*out)[(*n)++] = *r;
	return 0;
}

/* JOIN: each row of a complete window (wend <= wm) emits its pair
 * (window, key, right id) with count L, the left records it joins (its
 * multiplicity in the join), when L > 0; it then leaves the array (the
 * last row moves into its place).  Runs before the buckets fire: L is
 * read from the row's bucket, complete since its window is. */
static int rows_fire(struct stream_table *t, uint64_t wm, uint64_t size,
		     struct smart_stream_result **out, size_t *n, size_t *cap,
		     uint64_t *fired)
{
	for (uint32_t i = 0; i < t->rows;) {
		const struct stream_entry *w = &t->row[i];
		const struct stream_entry *b = slot(t, w->wstart, w->key);
		uint64_t l = b->wstart == EMPTY ? 0 : b->a.count - b->a.sum;
		struct smart_stream_result r = { w->wstart, w->wstart + size,
						 w->key, w->a.sum, l };

		if (w->wstart + size > wm) {
			i++;
			continue;
		}
		if (l || SMART_M_STREAM_JOIN_NO_FILTER) {
			int rc = out_push(out, n, cap, &r);

			if (rc)
				return rc;
			++*fired;
		}
		t->row[i] = t->row[--t->rows];
	}
	return 0;
}

/* Emitted entries leave the table: it is rebuilt from the survivors (a
 * linear-probing table cannot simply blank a slot). */
static int window_fire(struct stream_table *t, uint64_t wm, uint64_t size,
		       uint32_t agg, struct smart_stream_result **out,
		       size_t *n, size_t *cap, uint64_t *fired)
{
	struct stream_table keep = *t; /* max and the JOIN rows carried */
	int rc = 0;

	if (alloc_slots(&keep, t->cap))
		return SMART_ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++) {
		struct stream_entry *e = &t->e[i];
		struct smart_stream_result r;

		if (e->wstart == EMPTY)
			continue;
		if (e->wstart + size > wm || rc) {
			*slot(&keep, e->wstart, e->key) = *e;
			keep.n++;
			continue;
		}
		if (agg == SMART_STREAM_JOIN)
			continue; /* its pairs were emitted by its rows */
		r = (struct smart_stream_result){
			e->wstart, e->wstart + size, e->key,
			smart__stream_agg_value(&e->a, agg), e->a.count
		};
		rc = out_push(out, n, cap, &r);
		if (rc) {
			*slot(&keep, e->wstart, e->key) = *e;
			keep.n++;
		} else {
			++*fired;
		}
	}
	free(t->e);
	*t = keep;
	return rc;
}

/* ---- sessions: runs of buckets (query.c assign_session) -------------
 * A bucket [b, b + gap) of a key holds (count, sum, first, last) at b.
 * Two records less than the gap apart are in one session; within a
 * bucket they all are, buckets b and b + gap are when the second's first
 * time is less than the gap after the first's last, and buckets further
 * apart never are (an empty bucket between is a gap of more than gap).
 * So a session is a maximal run of buckets, each joined to the next, and
 * merging buckets from any executors in any order gives the same runs. */

static struct stream_entry *find(struct stream_table *t, uint64_t ws,
				 uint64_t key)
{
	struct stream_entry *e = slot(t, ws, key);

	return e->wstart == EMPTY ? NULL : e;
}

/* The next bucket of e's session, or NULL (times checked at take: a
 * bucket's first is after the previous bucket's last). */
static struct stream_entry *next_in(struct stream_table *t,
				    const struct stream_entry *e, uint64_t gap)
{
	struct stream_entry *x;

	if (e->wstart + gap >= SMART_STREAM_TS_LIMIT)
		return NULL;
	x = find(t, e->wstart + gap, e->key);
	return x && x->a.min - e->a.max < gap ? x : NULL;
}

static int run_start(struct stream_table *t, const struct stream_entry *e,
		     uint64_t gap)
{
	struct stream_entry *p = e->wstart >= gap ?
					 find(t, e->wstart - gap, e->key) :
					 NULL;

	return !p || next_in(t, p, gap) != e;
}

/* The session starting at bucket e: its aggregate (the values' extremes
 * from the second entries, MIN and MAX), and its last bucket. */
static const struct stream_entry *
session_walk(struct stream_table *t, const struct smart_stream_query *q,
	     const struct stream_entry *e, struct stream_agg *a)
{
	const struct stream_entry *last = e;

	*a = (struct stream_agg){ 0, 0, UINT64_MAX, 0 };
	for (const struct stream_entry *x = e; x; x = next_in(t, x, q->size)) {
		const struct stream_entry *v = smart__stream_session_extra(q) ?
						       find(t, x->wstart + 1,
							    x->key) :
						       NULL;

		a->count += x->a.count;
		a->sum += x->a.sum;
		if (v)
			agg_merge(a, &(struct stream_agg){ 0, 0, v->a.min,
							   v->a.max });
		last = x;
	}
	return last;
}

/* Fired buckets are marked with count 0 (a bucket has at least one
 * record: query.c checks what peers ship) and dropped by the rebuild. */
static void session_mark(struct stream_table *t,
			 const struct smart_stream_query *q,
			 struct stream_entry *e)
{
	for (struct stream_entry *x = e; x; x = next_in(t, x, q->size)) {
		struct stream_entry *v = find(t, x->wstart + 1, x->key);

		x->a.count = 0;
		if (v && smart__stream_session_extra(q))
			v->a.count = 0;
	}
}

static int session_one(struct stream_table *t, uint64_t wm,
		       const struct smart_stream_query *q,
		       struct stream_entry *e, struct smart_stream_result **out,
		       size_t *n, size_t *cap, uint64_t *fired)
{
	struct stream_agg a;
	const struct stream_entry *last = session_walk(t, q, e, &a);
	uint64_t end = last->a.max + q->size;
	struct smart_stream_result r;
	int rc;

	if (SMART_M_STREAM_SESSION_FIRE_EARLY ? last->a.max >= wm : end > wm)
		return 0;
	r = (struct smart_stream_result){ e->a.min, end, e->key,
					  smart__stream_agg_value(&a, q->agg),
					  a.count };
	rc = out_push(out, n, cap, &r);
	if (!rc) {
		session_mark(t, q, e);
		++*fired;
	}
	return rc;
}

/* Kept: the unmarked buckets, and a second entry while its bucket is
 * alive or may still come (only a lying peer makes one without it). */
static int session_keep(struct stream_table *t, const struct stream_entry *e,
			uint64_t wm, uint64_t gap)
{
	const struct stream_entry *b;

	if (!e->a.count)
		return 0;
	if (e->wstart % gap == 0)
		return 1;
	b = find(t, e->wstart - 1, e->key);
	return b ? b->a.count != 0 : e->wstart - 1 + gap > wm;
}

static int session_fire(struct stream_table *t, uint64_t wm,
			const struct smart_stream_query *q,
			struct smart_stream_result **out, size_t *n,
			size_t *cap, uint64_t *fired)
{
	struct stream_table keep = *t; /* max (and rows, none) carried */
	int rc = 0;

	for (uint32_t i = 0; i < t->cap && !rc; i++) {
		struct stream_entry *e = &t->e[i];

		if (e->wstart != EMPTY && e->wstart % q->size == 0 &&
		    e->a.count && run_start(t, e, q->size))
			rc = session_one(t, wm, q, e, out, n, cap, fired);
	}
	if (alloc_slots(&keep, t->cap))
		return SMART_ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->e[i].wstart != EMPTY &&
		    session_keep(t, &t->e[i], wm, q->size)) {
			*slot(&keep, t->e[i].wstart, t->e[i].key) = t->e[i];
			keep.n++;
		}
	free(t->e);
	*t = keep;
	return rc;
}

int smart__stream_table_fire(struct stream_table *t, uint64_t wm,
			     const struct smart_stream_query *q,
			     struct smart_stream_result **out, size_t *n,
			     size_t *cap, uint64_t *fired)
{
	if (q->window == SMART_STREAM_SESSION)
		return session_fire(t, wm, q, out, n, cap, fired);
	if (q->agg == SMART_STREAM_JOIN) {
		int rc = rows_fire(t, wm, q->size, out, n, cap, fired);

		if (rc)
			return rc;
	}
	return window_fire(t, wm, q->size, q->agg, out, n, cap, fired);
}
