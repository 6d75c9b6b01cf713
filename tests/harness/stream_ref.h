/*
 * The sequential reference of the stream layer (docs/stream.md §3): one
 * thread reads each partition in order with the same per-source rules
 * (filter, implausible, late below max - lateness), lists every
 * (window start, key, value) an accepted record contributes, sorts the
 * list and reduces it; for session windows it sorts the (time, key,
 * value) of the accepted records by key and time and cuts sessions where
 * two records of a key are the gap or more apart.  JOIN (windows only):
 * in each (window, key) group, L records of value 0 (the left side); each
 * other record (a right one, its value its id) gives one pair (window,
 * key, id, count L) when L > 0.  No code shared with src/stream beyond
 * the public header (the generator makes the input).
 */
#ifndef SMART_TEST_STREAM_REF_H
#define SMART_TEST_STREAM_REF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "smart/stream.h"

struct ref_item {
	uint64_t ws, key, v;
};

struct ref_out {
	struct smart_stream_result *r;
	size_t n;
	uint64_t late, implausible, filtered;
};

static inline uint64_t ref_get(const uint8_t *rec,
			       const struct smart_stream_field *f)
{
	uint64_t v = 0;

	for (uint32_t i = 0; i < f->size; i++)
		v |= (uint64_t)rec[f->off + i] << (8 * i);
	return v;
}

static inline int ref_item_cmp(const void *a, const void *b)
{
	const struct ref_item *x = a, *y = b;

	if (x->ws != y->ws)
		return x->ws < y->ws ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return 0;
}

static inline int ref_res_cmp(const void *a, const void *b)
{
	const struct smart_stream_result *x = a, *y = b;
	const uint64_t *p = &x->wstart, *q = &y->wstart;

	for (int i = 0; i < 5; i++)
		if (p[i] != q[i])
			return p[i] < q[i] ? -1 : 1;
	return 0;
}

static inline void ref_session_item(uint64_t key, uint64_t ts, uint64_t v,
				    struct ref_item **it, size_t *n,
				    size_t *cap)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		*it = realloc(*it, *cap * sizeof(**it));
	}
	(*it)[(*n)++] = (struct ref_item){ ts, key, v };
}

/* The windows of ts: every multiple w of the step with w <= ts < w + size. */
static inline void ref_windows(const struct smart_stream_query *q, uint64_t key,
			       uint64_t ts, uint64_t v, struct ref_item **it,
			       size_t *n, size_t *cap)
{
	uint64_t step = q->window == SMART_STREAM_SLIDING ? q->slide : q->size;

	for (uint64_t w = 0; w <= ts / step; w++) {
		uint64_t ws = (ts / step - w) * step;

		if (ws + q->size <= ts)
			break;
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 1024;
			*it = realloc(*it, *cap * sizeof(**it));
		}
		(*it)[(*n)++] = (struct ref_item){ ws, key, v };
	}
}

static inline int ref_key_ts_cmp(const void *a, const void *b)
{
	const struct ref_item *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->ws != y->ws)
		return x->ws < y->ws ? -1 : 1;
	return 0;
}

static inline uint64_t ref_value(const struct smart_stream_query *q,
				 uint64_t count, uint64_t sum, uint64_t mn,
				 uint64_t mx)
{
	return q->agg == SMART_STREAM_COUNT ? count :
	       q->agg == SMART_STREAM_SUM   ? sum :
	       q->agg == SMART_STREAM_MIN   ? mn :
	       q->agg == SMART_STREAM_MAX   ? mx :
					      sum / count;
}

/* Sessions (it[].ws is the record's time): sorted by key and time, a
 * record less than the gap after the previous one of its key extends its
 * session, else starts one; a session is [first, last + gap). */
static inline void ref_sessions(const struct smart_stream_query *q,
				struct ref_item *it, size_t ni,
				struct ref_out *o)
{
	qsort(it, ni, sizeof(*it), ref_key_ts_cmp);
	for (size_t i = 0; i < ni;) {
		struct smart_stream_result r = { it[i].ws, 0, it[i].key, 0, 0 };
		uint64_t sum = 0, mn = UINT64_MAX, mx = 0, last = it[i].ws;

		for (;
		     i < ni && it[i].key == r.key && it[i].ws - last < q->size;
		     i++) {
			last = it[i].ws;
			r.count++;
			sum += it[i].v;
			mn = it[i].v < mn ? it[i].v : mn;
			mx = it[i].v > mx ? it[i].v : mx;
		}
		r.wend = last + q->size;
		r.value = ref_value(q, r.count, sum, mn, mx);
		o->r[o->n++] = r;
	}
}

/* recs[p] holds n[p] records of partition p. */
static inline void ref_run(const struct smart_stream_query *q, uint32_t parts,
			   const uint8_t *const *recs, const size_t *n,
			   struct ref_out *o)
{
	struct ref_item *it = NULL;
	size_t ni = 0, cap = 0;

	memset(o, 0, sizeof(*o));
	for (uint32_t p = 0; p < parts; p++) {
		uint64_t maxts = 0;
		int seen = 0;

		for (size_t i = 0; i < n[p]; i++) {
			const uint8_t *r = recs[p] + i * q->record_bytes;
			uint64_t key, ts, v,
				wm = maxts > q->lateness ? maxts - q->lateness :
							   0;

			if (q->filter.size &&
			    ref_get(r, &q->filter) != q->filter_eq) {
				o->filtered++;
				continue;
			}
			if (q->extract) {
				if (q->extract(r, q->record_bytes, &key, &ts,
					       &v, q->extract_arg) != 1) {
					o->filtered++;
					continue;
				}
			} else {
				key = ref_get(r, &q->key);
				ts = ref_get(r, &q->time);
				v = ref_get(r, &q->value);
			}
			if (ts >= SMART_STREAM_TS_LIMIT ||
			    (q->horizon && seen && ts > maxts &&
			     ts - maxts > q->horizon)) {
				o->implausible++;
				continue;
			}
			if (seen && ts < wm) {
				o->late++;
				continue;
			}
			seen = 1;
			maxts = ts > maxts ? ts : maxts;
			if (q->window == SMART_STREAM_SESSION)
				ref_session_item(key, ts, v, &it, &ni, &cap);
			else
				ref_windows(q, key, ts, v, &it, &ni, &cap);
		}
	}
	o->r = malloc((ni ? ni : 1) * sizeof(*o->r));
	if (q->window == SMART_STREAM_SESSION) {
		ref_sessions(q, it, ni, o);
		ni = 0; /* nothing left for the windows' reduction below */
	}
	qsort(it, ni, sizeof(*it), ref_item_cmp);
	for (size_t i = 0; i < ni;) {
		struct smart_stream_result r = { it[i].ws, it[i].ws + q->size,
						 it[i].key, 0, 0 };
		uint64_t sum = 0, mn = UINT64_MAX, mx = 0, left = 0;
		size_t first = i;

		for (; i < ni && it[i].ws == r.wstart && it[i].key == r.key;
		     i++) {
			r.count++;
			sum += it[i].v;
			mn = it[i].v < mn ? it[i].v : mn;
			mx = it[i].v > mx ? it[i].v : mx;
			left += !it[i].v;
		}
		if (q->agg != SMART_STREAM_JOIN) {
			r.value = ref_value(q, r.count, sum, mn, mx);
			o->r[o->n++] = r;
			continue;
		}
		for (size_t j = first; j < i && left; j++)
			if (it[j].v) /* a right record: one pair */
				o->r[o->n++] = (struct smart_stream_result){
					r.wstart, r.wend, r.key, it[j].v, left
				};
	}
	free(it);
	qsort(o->r, o->n, sizeof(*o->r), ref_res_cmp);
}

#endif
