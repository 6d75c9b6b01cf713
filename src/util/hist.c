/*
 * Latency histogram: log2 buckets, each cut into SMART_HIST_SUB (32) linear
 * sub-buckets, over the whole uint64_t range.
 *
 * Layout: values 0..63 have one slot each (slot = value), so small values
 * are exact.  A value v >= 32 with top bit e (2^e <= v < 2^(e+1), e >= 5)
 * goes to slot (e - 4) * 32 + the 5 bits below the top bit; its slot is
 * 2^(e-5) wide, i.e. at most 1/32 = 3.125% of the values it holds, so a
 * quantile reported as the slot's midpoint is off by at most half that.
 * The highest slot used is 59 * 32 + 31 = 1919 < SMART_HIST_BUCKETS.
 *
 * Invariants: count is the sum of b[]; min/max are exact and meaningful
 * only when count > 0; sum saturates at UINT64_MAX instead of wrapping.
 * An all-zero struct is a valid empty histogram, as is smart_hist_init().
 */
#include <math.h>
#include <string.h>

#include "smart/util.h"

#define SUB_BITS 5 /* log2(SMART_HIST_SUB) */

_Static_assert(SMART_HIST_SUB == 1 << SUB_BITS, "SUB_BITS is stale");

static unsigned int hist_slot(uint64_t v)
{
	unsigned int e;

	if (v < SMART_HIST_SUB)
		return (unsigned int)v;
	e = 63 - (unsigned int)__builtin_clzll(v);
	return (e - SUB_BITS + 1) * SMART_HIST_SUB +
	       (unsigned int)((v >> (e - SUB_BITS)) & (SMART_HIST_SUB - 1));
}

/* Smallest and largest value that land in a slot. */
static void slot_range(unsigned int slot, uint64_t *lo, uint64_t *hi)
{
	unsigned int e, sub = slot % SMART_HIST_SUB;

	if (slot < 2 * SMART_HIST_SUB) {
		*lo = *hi = slot;
		return;
	}
	e = slot / SMART_HIST_SUB + SUB_BITS - 1;
	*lo = ((uint64_t)(SMART_HIST_SUB + sub)) << (e - SUB_BITS);
	*hi = *lo + ((UINT64_C(1) << (e - SUB_BITS)) - 1);
}

void smart_hist_init(smart_hist_t *h)
{
	memset(h, 0, sizeof(*h));
}

void smart_hist_add(smart_hist_t *h, uint64_t ns)
{
	if (h->count == 0 || ns < h->min)
		h->min = ns;
	if (h->count == 0 || ns > h->max)
		h->max = ns;
	h->count++;
	if (__builtin_add_overflow(h->sum, ns, &h->sum))
		h->sum = UINT64_MAX;
	h->b[hist_slot(ns)]++;
}

void smart_hist_merge(smart_hist_t *dst, const smart_hist_t *src)
{
	if (src->count == 0)
		return;
	if (dst->count == 0 || src->min < dst->min)
		dst->min = src->min;
	if (dst->count == 0 || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	if (__builtin_add_overflow(dst->sum, src->sum, &dst->sum))
		dst->sum = UINT64_MAX;
	for (unsigned int i = 0; i < SMART_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

double smart_hist_quantile(const smart_hist_t *h, double q)
{
	uint64_t rank, seen = 0, lo, hi;
	double r, mid;

	if (h->count == 0)
		return 0;
	/* The ends are known exactly; NaN counts as 0. */
	if (!(q > 0))
		return (double)h->min;
	if (q >= 1)
		return (double)h->max;
	/* The rank-th smallest value (1-based), rank = ceil(q * count),
	 * kept in [1, count] whatever the rounding. */
	r = ceil(q * (double)h->count);
	rank = r < (double)h->count ? (uint64_t)r : h->count;
	if (rank == 0)
		rank = 1;
	for (unsigned int i = 0; i < SMART_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen < rank)
			continue;
		slot_range(i, &lo, &hi);
		mid = (double)lo + (double)(hi - lo) / 2;
		if (mid < (double)h->min)
			return (double)h->min;
		if (mid > (double)h->max)
			return (double)h->max;
		return mid;
	}
	return (double)h->max; /* b[] and count disagree: not ours */
}

double smart_hist_mean(const smart_hist_t *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0;
}
