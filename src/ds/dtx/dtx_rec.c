/*
 * Smart-DTX records and buckets (docs/dtx.md §2): where a record lives,
 * its crc, what a READ of one shows, and this process's address cache.
 *
 * Invariants: a record is judged only from bytes read in one READ; the
 * crc covers every byte of the record but the lock word (an update's
 * commit leaves the key, unchanged, and writes the rest), so a record
 * that checks is one some commit (or recovery) wrote whole.  The
 * cache is a hint: whatever it says is checked against the record read
 * (its key), and a wrong hint costs one round trip, never a wrong answer.
 */
#include "ds/dtx/dtx_internal.h"

smart_gaddr_t smart__dtx_rec_addr(const struct dtx_table *t, unsigned copy,
				  uint32_t slot)
{
	return smart_gaddr_add(t->copy[copy], (uint64_t)slot * t->rec_size);
}

uint32_t smart__dtx_rec_crc(const smart_dtx_t *d, const struct dtx_table *t,
			    const uint8_t *rec)
{
	uint32_t c = smart_crc32c(d->salt ^ t->id, rec + 8, 16);

	c = smart_crc32c(c, rec + 28, 4); /* meta without its crc */
	return smart_crc32c(c, rec + sizeof(struct dtx_rec),
			    t->rec_size - sizeof(struct dtx_rec));
}

void smart__dtx_rec_seal(const smart_dtx_t *d, const struct dtx_table *t,
			 uint8_t *rec, uint64_t key, uint64_t version,
			 const void *val, size_t len, int valid)
{
	struct dtx_rec h;
	uint8_t *v = rec + sizeof(h);
	size_t cap = t->rec_size - sizeof(h);

	memcpy(&h, rec, sizeof(h));
	h.key = key;
	h.version = version;
	h.meta = DTX_META(0, len, valid);
	memcpy(rec, &h, sizeof(h));
	if (val && val != v)
		memmove(v, val, len);
	memset(v + len, 0, cap - len);
	h.meta = DTX_META(smart__dtx_rec_crc(d, t, rec), len, valid);
	memcpy(rec + offsetof(struct dtx_rec, meta), &h.meta, 8);
}

enum dtx_look smart__dtx_rec_look(smart_dtx_t *d, const struct dtx_table *t,
				  const uint8_t *rec, uint64_t key)
{
	struct dtx_rec h;

	memcpy(&h, rec, sizeof(h));
	if (!h.version)
		return DTX_L_EMPTY; /* never written */
	if (!SMART_M_DTX_NO_CRC &&
	    (DTX_META_CRC(h.meta) != smart__dtx_rec_crc(d, t, rec) ||
	     DTX_META_LEN(h.meta) > t->value_size))
		return h.lock ? DTX_L_BUSY : DTX_L_TORN;
	if (!DTX_META_VALID(h.meta))
		return DTX_L_EMPTY; /* deleted */
	return h.key == key ? DTX_L_KEY : DTX_L_OTHER;
}

void smart__dtx_buckets(const smart_dtx_t *d, const struct dtx_table *t,
			uint64_t key, uint32_t b[2])
{
	uint64_t h = smart_hash64(&key, sizeof(key), d->salt ^ t->id);

	b[0] = (uint32_t)(h % t->buckets);
	b[1] = (uint32_t)((h >> 32) % t->buckets);
	if (b[1] == b[0] && t->buckets > 1)
		b[1] = (b[0] + 1) % t->buckets;
}

/* The cache word's index and tag for (table, key). */
static uint64_t cache_hash(const smart_dtx_t *d, const struct dtx_table *t,
			   uint64_t key)
{
	return smart_hash64(&key, sizeof(key), 0xcac4e ^ t->id ^ d->salt);
}

int smart__dtx_cache_get(smart_dtx_t *d, const struct dtx_table *t,
			 uint64_t key, uint32_t *slot)
{
	uint64_t h, v;

	if (!d->cache)
		return 0;
	h = cache_hash(d, t, key);
	v = atomic_load_explicit(&d->cache[h & d->cmask], memory_order_relaxed);
	if (!v || (uint32_t)(v >> 32) != (uint32_t)(h >> 32))
		return 0;
	*slot = (uint32_t)v - 1;
	return *slot < t->buckets * SMART_DTX_BUCKET_SLOTS;
}

void smart__dtx_cache_put(smart_dtx_t *d, const struct dtx_table *t,
			  uint64_t key, uint32_t slot)
{
	uint64_t h;

	if (!d->cache)
		return;
	h = cache_hash(d, t, key);
	atomic_store_explicit(&d->cache[h & d->cmask],
			      (h >> 32) << 32 | (uint64_t)(slot + 1),
			      memory_order_relaxed);
}
