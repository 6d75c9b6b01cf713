/*
 * Smart-BT's two local caches (docs/bt.md §6): the index cache of internal
 * nodes, and the speculative-lookup cache of key -> leaf entry address.
 *
 * Index cache: a direct-mapped table of node copies under a byte budget,
 * indexed by the node's address, each slot a seqlock (odd while a copy
 * goes in).  Every worker of the ctx uses it at once; a copy is taken and
 * checked against the sequence, so a reader never uses a half-written
 * copy; the words move with relaxed atomics, not memcpy, so that this is
 * not a data race.  A cached node may be stale (it split since): the
 * B-link rule makes a stale parent cost a move-right, never a wrong
 * answer, and the caller then drops the parent (smart__bt_cache_drop).
 *
 * Speculative cache: a direct-mapped table of two words per slot, a key's
 * 64-bit hash and the address of the leaf entry that held it.  The two
 * words are written apart, so a reader may pair one key's hash with
 * another's address: harmless, because what is read there is trusted
 * only when its crc checks and its key is the very key looked up.
 *
 * Invariants: both tables are sized at open and never change; slot
 * contents are hints, correctness never depends on them.
 */
#include <stdlib.h>

#include "ds/bt/bt_internal.h"

struct bt_cslot {
	_Atomic uint64_t seq;  /* odd: a copy is going in */
	_Atomic uint64_t addr; /* the node's address, 0: empty */
	_Atomic uint64_t w[];  /* node_size / 8 words */
};

struct bt_spec {
	_Atomic uint64_t tag, addr;
};

static unsigned pow2_floor(uint64_t x)
{
	unsigned b = 0;

	while (b < 31 && (UINT64_C(2) << b) <= x)
		b++;
	return b;
}

int smart__bt_cache_init(smart_bt_t *t, size_t cache_bytes,
			 unsigned spec_entries)
{
	size_t slot = sizeof(struct bt_cslot) + t->node_size;

	t->cslot = slot;
	if (cache_bytes >= 2 * slot) {
		t->cmask = (UINT64_C(1) << pow2_floor(cache_bytes / slot)) - 1;
		t->cache = calloc(t->cmask + 1, slot);
		if (!t->cache)
			return SMART_ENOMEM;
	}
	if (spec_entries) {
		t->smask = (UINT64_C(1) << pow2_floor(spec_entries)) - 1;
		t->spec = calloc(t->smask + 1, sizeof(*t->spec));
		if (!t->spec) {
			free(t->cache);
			t->cache = NULL;
			return SMART_ENOMEM;
		}
	}
	return 0;
}

void smart__bt_cache_fini(smart_bt_t *t)
{
	free(t->cache);
	free(t->spec);
}

static struct bt_cslot *cslot(const smart_bt_t *t, smart_gaddr_t a)
{
	return (struct bt_cslot *)(t->cache +
				   (bt_mix(a) & t->cmask) * t->cslot);
}

int smart__bt_cache_get(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			struct bt_node *n)
{
	struct bt_cslot *s;
	uint64_t *d = (uint64_t *)n, seq;
	unsigned i, words = t->node_size / 8;

	if (!t->cache)
		return 0;
	s = cslot(t, a);
	seq = atomic_load_explicit(&s->seq, memory_order_acquire);
	if ((seq & 1) ||
	    atomic_load_explicit(&s->addr, memory_order_relaxed) != a)
		goto miss;
	for (i = 0; i < words; i++)
		d[i] = atomic_load_explicit(&s->w[i], memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->seq, memory_order_relaxed) != seq)
		goto miss;
	smart_stat_add(w, SMART_STAT_CACHE_HITS, 1);
	return 1;
miss:
	smart_stat_add(w, SMART_STAT_CACHE_MISSES, 1);
	return 0;
}

/* Take the slot of a (odd sequence) unless another writer has it. */
static struct bt_cslot *slot_take(smart_bt_t *t, smart_gaddr_t a, uint64_t *seq)
{
	struct bt_cslot *s = cslot(t, a);

	*seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
	if ((*seq & 1) ||
	    !atomic_compare_exchange_strong_explicit(&s->seq, seq, *seq + 1,
						     memory_order_acquire,
						     memory_order_relaxed))
		return NULL;
	atomic_thread_fence(memory_order_release);
	return s;
}

void smart__bt_cache_put(smart_bt_t *t, smart_gaddr_t a,
			 const struct bt_node *n)
{
	const uint64_t *src = (const uint64_t *)n;
	struct bt_cslot *s;
	uint64_t seq;
	unsigned i, words = t->node_size / 8;

	/* leaves are not cached: they change with every write */
	if (!t->cache || !n->h.level || !(s = slot_take(t, a, &seq)))
		return;
	atomic_store_explicit(&s->addr, a, memory_order_relaxed);
	for (i = 0; i < words; i++)
		atomic_store_explicit(&s->w[i], src[i], memory_order_relaxed);
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

void smart__bt_cache_drop(smart_bt_t *t, smart_gaddr_t a)
{
	struct bt_cslot *s;
	uint64_t seq;

	if (!t->cache || !a ||
	    atomic_load_explicit(&cslot(t, a)->addr, memory_order_relaxed) !=
		    a ||
	    !(s = slot_take(t, a, &seq)))
		return;
	if (atomic_load_explicit(&s->addr, memory_order_relaxed) == a)
		atomic_store_explicit(&s->addr, 0, memory_order_relaxed);
	atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
	atomic_fetch_add_explicit(&t->cache_drops, 1, memory_order_relaxed);
}

uint64_t smart__bt_key_hash(const void *key, size_t klen)
{
	return smart_hash64(key, klen, UINT64_C(0x5bd1e995)) | 1;
}

smart_gaddr_t smart__bt_spec_get(smart_bt_t *t, uint64_t h)
{
	struct bt_spec *s;

	if (!t->spec)
		return 0;
	s = &t->spec[h & t->smask];
	if (atomic_load_explicit(&s->tag, memory_order_relaxed) != h)
		return 0;
	return atomic_load_explicit(&s->addr, memory_order_relaxed);
}

void smart__bt_spec_put(smart_bt_t *t, uint64_t h, smart_gaddr_t entry)
{
	struct bt_spec *s;

	if (!t->spec)
		return;
	s = &t->spec[h & t->smask];
	atomic_store_explicit(&s->tag, entry ? h : 0, memory_order_relaxed);
	atomic_store_explicit(&s->addr, entry, memory_order_relaxed);
}

/* ---- leaf entries ------------------------------------------------------- */

static uint32_t ent_crc(const smart_bt_t *t, const struct bt_leaf_ent *e)
{
	uint32_t c = smart_crc32c(t->salt, e, 4);

	return smart_crc32c(c, e->kv, t->leaf_ent - 8);
}

void smart__bt_ent_seal(const smart_bt_t *t, struct bt_leaf_ent *e)
{
	e->crc = e->klen ? ent_crc(t, e) : 0;
}

int smart__bt_ent_ok(const smart_bt_t *t, const struct bt_leaf_ent *e)
{
	if (SMART_M_BT_NO_ENT_CRC)
		return 1;
	return e->klen && e->klen <= t->key_max && e->vlen <= t->val_max &&
	       e->crc == ent_crc(t, e);
}
