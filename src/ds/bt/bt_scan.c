/*
 * Smart-BT range scans (docs/bt.md §5).
 *
 * A scan reads the leaf covering `from`, then each right sibling in turn,
 * taking from each leaf the keys in [cursor, leaf's high fence) sorted,
 * where the cursor is the high fence of the leaf before.  Why that is
 * correct while inserts split leaves: a leaf's fences always cover the
 * keys it holds, and a split only moves keys from a leaf into a new
 * right sibling placed between it and its old sibling.  If a leaf split
 * before we read it, we read its new sibling next; if after, the keys
 * that moved were still in our copy (below the high fence we read), and
 * the next leaf we read, the old sibling, starts at that fence.  So every
 * key present throughout the scan is seen in the one leaf that covered it
 * when read, each once, in order; a key never present is never seen.
 * A merge (bt_merge.c) moves keys only leftwards into the leaf we just
 * left, all of them from its right neighbour: if that neighbour is dead
 * when we get there, the leaf that took it in has its keys, and we take
 * those from the cursor on; if that leaf split since, the keys from the
 * cursor on are in the leaves right of it, reached by its siblings.
 * With the first leaf's parent in the index cache, the parent's next
 * leaves are read at once (ahead_read) and each copy taken only when the
 * chain names it next and it starts at the cursor (ahead_take).
 */
#include "ds/bt/bt_internal.h"

/* The leaf after one whose high fence is cur: its right sibling (at a),
 * or, when that was merged away, the leaf that took it in (a chain of
 * them: the absorber may have died too), and from there rightwards while
 * the leaf ends at or before cur: the absorber may have split since, its
 * keys from cur on moved into new right siblings (a merge then a split,
 * both legal while we stood between two leaves).  A leaf's low fence
 * never moves (a split keeps the left half's, a merge the absorber's),
 * so the leaf reached starts at or before cur; it must go past it:
 * anything else is not a tree. */
static int next_leaf(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		     struct bt_node *nd, const uint8_t *cur, size_t cur_len)
{
	unsigned hops = 0;
	int rc = smart__bt_read(t, w, a, nd);

	while (!rc && ++hops < BT_HOPS_MAX) {
		if (nd->h.flags & BT_F_DEAD) {
			a = nd->h.leftmost;
		} else if (!SMART_M_BT_NO_SCAN_RIGHT && !nd->h.level &&
			   !(nd->h.flags & BT_F_HIGH_INF) && nd->h.sibling &&
			   bt_keycmp(bt_high(t, nd), nd->h.high_len, cur,
				     cur_len) <= 0) {
			/* split after the merge */
			atomic_fetch_add_explicit(&t->move_rights, 1,
						  memory_order_relaxed);
			a = nd->h.sibling;
		} else {
			break;
		}
		rc = smart__bt_read(t, w, a, nd);
	}
	if (!rc &&
	    ((nd->h.flags & BT_F_DEAD) || nd->h.level ||
	     (!(nd->h.flags & BT_F_LOW_INF) &&
	      bt_keycmp(bt_low(t, nd), nd->h.low_len, cur, cur_len) > 0) ||
	     (!(nd->h.flags & BT_F_HIGH_INF) &&
	      bt_keycmp(bt_high(t, nd), nd->h.high_len, cur, cur_len) <= 0)))
		rc = SMART_EPROTO;
	return rc;
}

/* Leaves read ahead, all at once: the children after the leaf at `a` of
 * its parent (the index cache's copy; a cache gives only addresses, each
 * copy is checked before use), up to the first one starting at or past
 * `to`, and no more than `left` entries need at half-full leaves (more are
 * read ahead from the next parent when they are not enough).
 * BT_SCAN_AHEAD of them at most, and no more than 256 KiB. */
#define BT_SCAN_AHEAD 32u
struct ahead {
	struct bt_node *p; /* the parent's copy */
	uint8_t *nodes;	   /* room for `room` nodes */
	smart_gaddr_t a[BT_SCAN_AHEAD];
	unsigned room, k, next;
	int live; /* the last parent looked for was cached */
};

static smart_gaddr_t child_at(const smart_bt_t *t, struct bt_node *p,
			      unsigned i)
{
	return i ? bt_inner(t, p, i - 1)->child : p->h.leftmost;
}

static int ahead_read(smart_bt_t *t, smart_worker_t *w, struct ahead *ah,
		      smart_gaddr_t pa, smart_gaddr_t a, const void *to,
		      size_t to_len, size_t left)
{
	size_t per = t->leaf_cap / 2 ? t->leaf_cap / 2 : 1;
	size_t want = left / per + 1;
	unsigned i, j;
	int rc = 0;

	ah->k = ah->next = 0;
	ah->live = pa && ah->room && smart__bt_cache_get(t, w, pa, ah->p) &&
		   ah->p->h.level == 1;
	if (!ah->live)
		return 0;
	for (i = 0; i <= ah->p->h.count && child_at(t, ah->p, i) != a; i++)
		;
	for (j = i + 1;
	     !rc && j <= ah->p->h.count && ah->k < ah->room && ah->k < want;
	     j++) {
		const struct bt_inner_ent *e = bt_inner(t, ah->p, j - 1);

		if (to && bt_keycmp(e->key, e->klen, to, to_len) >= 0)
			break;
		ah->a[ah->k] = e->child;
		rc = smart_read(w, e->child, t->node_size,
				ah->nodes + (size_t)ah->k++ * t->node_size);
	}
	return rc || !ah->k ? rc : smart_sync(w);
}

/* The next leaf of the chain (the sibling at a, the cursor cur) from the
 * leaves read ahead, into nd: 1 when taken.  A copy read ahead is used
 * only when it is the leaf the chain names next, whole, live, and starts
 * exactly at the cursor: then it is a copy of that leaf taken during the
 * scan, holding every key present throughout in [cur, its high fence)
 * (keys leave a leaf only rightwards, by splits, whose new leaves the
 * chain then names; or all at once by a merge into the leaf before, which
 * then names another sibling).  Anything else (the parent lacks a
 * separator, the leaf split or merged since the parent was cached) reads
 * on from the chain, one leaf at a time. */
static int ahead_take(smart_bt_t *t, struct ahead *ah, smart_gaddr_t a,
		      struct bt_node *nd, const uint8_t *cur, size_t cur_len)
{
	struct bt_node *c;

	if (ah->next >= ah->k)
		return 0;
	if (!SMART_M_BT_NO_AHEAD_CHECK && ah->a[ah->next] != a)
		return 0; /* off the chain: the next one may still be */
	c = (struct bt_node *)(ah->nodes + (size_t)ah->next++ * t->node_size);
	if (!SMART_M_BT_NO_AHEAD_CHECK &&
	    (smart__bt_check(t, c) || c->h.level ||
	     (c->h.flags & (BT_F_DEAD | BT_F_LOW_INF)) ||
	     bt_keycmp(bt_low(t, c), c->h.low_len, cur, cur_len)))
		return 0;
	memcpy(nd, c, t->node_size);
	atomic_fetch_add_explicit(&t->scan_ahead, 1, memory_order_relaxed);
	return 1;
}

int smart_bt_scan(smart_bt_t *t, smart_worker_t *w, const void *from,
		  size_t from_len, const void *to, size_t to_len,
		  struct smart_bt_entry *out, size_t max, void *buf, size_t cap,
		  size_t *n)
{
	uint8_t cur[SMART_BT_KEY_MAX], *b = buf;
	struct bt_leaf_ent **ents;
	struct bt_node *nd;
	struct ahead ah;
	smart_gaddr_t a, pa;
	size_t mark, used = 0, cur_len = from_len, got = 0;
	smart_hook_fn hook;
	void *hook_arg;
	unsigned i, k;
	int rc;

	if (!t || !smart__bt_own(t, w) || !from || !from_len ||
	    from_len > t->key_max || !n ||
	    (to && (!to_len || to_len > t->key_max)) || (max && !out) ||
	    (!buf && cap))
		return SMART_EINVAL;
	*n = 0;
	if (!max || (to && bt_keycmp(from, from_len, to, to_len) >= 0))
		return 0;
	memcpy(cur, from, from_len);
	/* a test's point between two leaves ("bt.scan.next") */
	hook = smart_ctx_hook(smart_worker_ctx(w), &hook_arg);
	mark = smart_scratch_mark(w);
	ah.room = t->cache ? (256u << 10) / t->node_size : 0;
	ah.room = ah.room < BT_SCAN_AHEAD ? ah.room : BT_SCAN_AHEAD;
	rc = smart_scratch_alloc(w,
				 (size_t)(ah.room + 2) * t->node_size +
					 (size_t)t->leaf_cap * 8,
				 (void **)&nd);
	if (!rc)
		rc = smart__bt_enter(t, w);
	if (rc)
		goto out;
	ah.p = (struct bt_node *)((uint8_t *)nd + t->node_size);
	ah.nodes = (uint8_t *)nd + 2 * (size_t)t->node_size;
	ents = (struct bt_leaf_ent **)(ah.nodes +
				       (size_t)ah.room * t->node_size);
	rc = smart__bt_descend(t, w, from, from_len, nd, &a, &pa);
	if (!rc)
		rc = ahead_read(t, w, &ah, pa, a, to, to_len, max);
	while (!rc) {
		/* this leaf's keys in [cur, to), in order */
		for (i = 0, k = 0; i < t->leaf_cap; i++) {
			struct bt_leaf_ent *e = bt_leaf(t, nd, i);

			if (!e->klen ||
			    bt_keycmp(e->kv, e->klen, cur, cur_len) < 0 ||
			    (to && bt_keycmp(e->kv, e->klen, to, to_len) >= 0))
				continue;
			ents[k++] = e;
		}
		smart__bt_sort_leaf(ents, k);
		for (i = 0; i < k && got < max; i++) {
			size_t need = (size_t)ents[i]->klen + ents[i]->vlen;

			if (used + need > cap) {
				rc = SMART_ERANGE; /* buf is full */
				break;
			}
			memcpy(b + used, ents[i]->kv, ents[i]->klen);
			memcpy(b + used + ents[i]->klen,
			       ents[i]->kv + t->key_max, ents[i]->vlen);
			out[got].key = b + used;
			out[got].val = b + used + ents[i]->klen;
			out[got].key_len = ents[i]->klen;
			out[got].val_len = ents[i]->vlen;
			used += need;
			got++;
		}
		if (rc || got == max || (nd->h.flags & BT_F_HIGH_INF) ||
		    !nd->h.sibling ||
		    (to && bt_keycmp(bt_high(t, nd), nd->h.high_len, to,
				     to_len) >= 0))
			break;
		/* next leaf: from this one's high fence */
		cur_len = nd->h.high_len;
		memcpy(cur, bt_high(t, nd), cur_len);
		a = nd->h.sibling;
		if (hook && (rc = hook(w, "bt.scan.next", hook_arg)))
			break;
		if (ahead_take(t, &ah, a, nd, cur, cur_len))
			continue;
		if (ah.live && ah.next >= ah.k) {
			/* past what was read ahead: the next parent's leaves,
			 * from the leaf covering the cursor */
			rc = smart__bt_descend(t, w, cur, cur_len, nd, &a, &pa);
			if (!rc)
				rc = ahead_read(t, w, &ah, pa, a, to, to_len,
						max - got);
		} else {
			rc = next_leaf(t, w, a, nd, cur, cur_len);
		}
	}
	smart_epoch_exit(w);
out:
	smart_scratch_release(w, mark);
	*n = got;
	return rc;
}
