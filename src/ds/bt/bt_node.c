/*
 * Smart-BT nodes: reading one whole and checked, sealing and writing it
 * (docs/bt.md §3).
 *
 * Why a CRC: the transport promises only that aligned 8-byte words are
 * atomic (docs/design.md §4, rule 4), in no order among a READ's words, so a
 * node read while its writer's WRITE lands can mix two versions in any
 * pattern.  Sherman's front/rear versions miss such mixes; a CRC-32C over
 * the whole node, written with it, catches any mix except with
 * probability 2^-32, whatever the order the words moved in.
 */
#include "ds/bt/bt_internal.h"

/* Seeded with the tree's salt: a block a stale cache names may now hold
 * a node of another tree (or of an earlier tree at this descriptor's
 * address), whole and sane; it must not check as ours. */
static uint32_t node_crc(const smart_bt_t *t, const struct bt_node *n)
{
	return smart_crc32c(SMART_M_BT_NO_TREE_SALT ? 0 : t->salt,
			    (const uint8_t *)n + 4, t->node_size - 4);
}

int smart__bt_fence_cmp(const smart_bt_t *t, struct bt_node *n, const void *key,
			size_t klen)
{
	if (SMART_M_BT_NO_MOVE_RIGHT)
		return 0;
	if (!(n->h.flags & BT_F_LOW_INF) &&
	    bt_keycmp(key, klen, bt_low(t, n), n->h.low_len) < 0)
		return -1;
	if (!(n->h.flags & BT_F_HIGH_INF) &&
	    bt_keycmp(key, klen, bt_high(t, n), n->h.high_len) >= 0)
		return 1;
	return 0;
}

/* A node whose crc checks can still be garbage if a buggy client wrote
 * it: refuse what no writer of ours makes (SMART_EPROTO, at once: it is
 * whole, not torn), so that no length read here can make a copy run past
 * an entry or the node. */
static int node_sane(const smart_bt_t *t, struct bt_node *n)
{
	unsigned i;

	if (n->h.low_len > t->key_max || n->h.high_len > t->key_max ||
	    n->h.level > BT_LEVEL_MAX || (n->h.flags & ~7u) ||
	    ((n->h.flags & BT_F_DEAD) && (n->h.level || !n->h.leftmost)))
		return 0;
	/* a right sibling exactly when the high fence is bounded, and
	 * fences that enclose something: the chains only go rightwards */
	if (!(n->h.flags & BT_F_HIGH_INF) != !!n->h.sibling ||
	    (!(n->h.flags & (BT_F_LOW_INF | BT_F_HIGH_INF)) &&
	     bt_keycmp(bt_low(t, n), n->h.low_len, bt_high(t, n),
		       n->h.high_len) >= 0))
		return 0;
	if (n->h.level) {
		if (n->h.count > t->inner_cap)
			return 0;
		for (i = 0; i < n->h.count; i++)
			if (bt_inner(t, n, i)->klen > t->key_max)
				return 0;
		return 1;
	}
	if (n->h.count || (n->h.leftmost && !(n->h.flags & BT_F_DEAD)))
		return 0; /* fields of internal nodes */
	for (i = 0; i < t->leaf_cap; i++) {
		const struct bt_leaf_ent *e = bt_leaf(t, n, i);

		if (e->klen > t->key_max || e->vlen > t->val_max)
			return 0;
	}
	return 1;
}

int smart__bt_check(smart_bt_t *t, struct bt_node *buf)
{
	if (SMART_M_BT_NO_CRC_CHECK || buf->h.crc == node_crc(t, buf))
		return SMART_M_BT_NO_SANITY || node_sane(t, buf) ? 0 :
								   SMART_EPROTO;
	return SMART_EAGAIN;
}

int smart__bt_read(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		   struct bt_node *buf)
{
	return smart__bt_read_n(t, w, a, buf, BT_READ_TRIES);
}

int smart__bt_read_n(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		     struct bt_node *buf, unsigned tries)
{
	unsigned i;
	int rc;

	for (i = 0; i < tries; i++) {
		rc = smart_read_sync(w, a, t->node_size, buf);
		if (!rc)
			rc = smart__bt_check(t, buf);
		if (rc != SMART_EAGAIN)
			return rc;
		/* torn by a writer (or being written): read again; now and
		 * then see whether that writer died inside its WRITE */
		atomic_fetch_add_explicit(&t->crc_retries, 1,
					  memory_order_relaxed);
		if (i % BT_HEAL_EVERY == BT_HEAL_EVERY - 1 &&
		    (rc = smart__bt_heal(t, w, a)))
			return rc;
		smart_task_yield(w);
	}
	return SMART_ERETRY;
}

void smart__bt_seal(smart_bt_t *t, struct bt_node *n)
{
	n->h.version++;
	n->h.crc = node_crc(t, n);
}

int smart__bt_post_locked(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			  struct bt_node *n, struct bt_wlog *lg)
{
	struct bt_patch p = { a, 0, t->node_size, n };

	return smart__bt_write_logged(t, w, &p, 1, lg);
}

int smart__bt_post_entry(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			 struct bt_node *n, unsigned i, struct bt_wlog *lg)
{
	unsigned off = t->ent_off + i * t->leaf_ent;
	/* the first word (crc, version) after the entry: a reader that sees
	 * one without the other fails the crc and reads again */
	struct bt_patch p[2] = {
		{ a, off, t->leaf_ent, (uint8_t *)n + off },
		{ a, 0, 8, n },
	};

	return smart__bt_write_logged(t, w, p, 2, lg);
}

int smart__bt_node_alloc(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t *a)
{
	uint64_t r = atomic_fetch_add_explicit(&t->rng,
					       UINT64_C(0x9e3779b97f4a7c15),
					       memory_order_relaxed);
	uint16_t blade;

	/* spread nodes over the tree's blades (a splitmix step) */
	r ^= r >> 31;
	r *= UINT64_C(0xbf58476d1ce4e5b9);
	r ^= r >> 29;
	blade = t->blades[r % t->nblades];
	return smart_alloc(w, blade, t->node_size, a);
}

unsigned smart__bt_leaf_used(const smart_bt_t *t, struct bt_node *n,
			     uint8_t *copy, struct bt_leaf_ent **ents)
{
	unsigned i, k = 0;

	memcpy(copy, bt_leaf(t, n, 0), (size_t)t->leaf_cap * t->leaf_ent);
	for (i = 0; i < t->leaf_cap; i++) {
		struct bt_leaf_ent *e =
			(struct bt_leaf_ent *)(copy + (size_t)i * t->leaf_ent);

		if (e->klen)
			ents[k++] = e;
	}
	return k;
}

void smart__bt_sort_leaf(struct bt_leaf_ent **p, unsigned n)
{
	unsigned i, j;

	/* insertion sort: at most a node's entries, no comparator context,
	 * no allocation */
	for (i = 1; i < n; i++) {
		struct bt_leaf_ent *x = p[i];

		for (j = i; j > 0 && bt_keycmp(p[j - 1]->kv, p[j - 1]->klen,
					       x->kv, x->klen) > 0;
		     j--)
			p[j] = p[j - 1];
		p[j] = x;
	}
}
