/*
 * Window state: an open-addressing table of (window start, key) ->
 * aggregate, and the aggregates themselves (docs/stream.md §2).
 *
 * Invariants: at most half the slots are used, so a probe ends at an empty
 * slot; the table never holds more than its max entries (SMART_ENOSPC) and
 * grows by doubling; an aggregate merge is commutative and associative
 * (count and sum mod 2^64 add, min and max compare), so the merged bits do
 * not depend on the order deltas arrive in.
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
	t->e = NULL;
	t->cap = t->n = 0;
}

void smart__stream_table_clear(struct stream_table *t)
{
	for (uint32_t i = 0; i < t->cap && t->n; i++)
		if (t->e[i].wstart != EMPTY) {
			t->e[i].wstart = EMPTY;
			t->n--;
		}
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

/* Emitted entries leave the table: it is rebuilt from the survivors (a
 * linear-probing table cannot simply blank a slot). */
int smart__stream_table_fire(struct stream_table *t, uint64_t wm, uint64_t size,
			     uint32_t agg, struct smart_stream_result **out,
			     size_t *n, size_t *cap, uint64_t *fired)
{
	struct stream_table keep;
	int rc = 0;

	if (alloc_slots(&keep, t->cap))
		return SMART_ENOMEM;
	keep.max = t->max;
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
