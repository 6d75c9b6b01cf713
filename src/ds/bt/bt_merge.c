/*
 * Smart-BT: a delete that empties a leaf frees a node (docs/bt.md §5).
 *
 * The emptied leaf L takes in its right neighbour R: L gets R's entries,
 * high fence and sibling; R becomes dead (no entries, `leftmost` naming
 * L) and its parent's entry for it is removed, after which nothing of the
 * tree names R and it is retired through the home blade's epochs.  Why
 * the leaf that stays is L and the one that goes is R: R's whole range
 * moves into L, which we hold locked already, so only L's and R's locks
 * are needed (taken left to right), and L's left neighbour, which may
 * hang under another parent, is never touched.
 *
 * Order: L is written first (whole: R's keys are then in both, the same
 * values, no writer can change either), then R dead, then the locks go;
 * so a reader or writer that reaches R, through the old parent entry or
 * L's old sibling pointer or a cache, is sent to L, which covers all R
 * covered.  Then the parent, with one lock: the entry whose child is R
 * goes, and keys of R's range are routed to the entry before it, L's.
 *
 * Locks: L's, then R's (left to right, as every holder of two; R's local
 * slot, when it is L's, is bypassed: smart__bt_lock2).  An R that is not
 * L's live right neighbour any more leaves L empty in the tree, where
 * inserts reuse it (`merge_skips`).  When no entry of R's parent names R
 * (R is the parent's leftmost child: L hangs under the parent before, or
 * a split made it so), the parent's low end would have to move, which a
 * leaf merge does not do: R stays, dead, as a forward to L (`dead_kept`),
 * until drop frees it.
 */
#include "ds/bt/bt_internal.h"

/* Just the delete: entry i and the first word, and the unlock. */
static int write_delete(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t la,
			struct bt_node *n, unsigned i)
{
	smart__bt_seal(t, n);
	return smart__bt_unlock(t, w, la,
				smart__bt_post_entry(t, w, la, n, i));
}

/* Remove the entry naming child ra from the level-1 node covering key
 * (R's low fence); 0, SMART_ENOENT when no entry names it. */
static int parent_forget(smart_bt_t *t, smart_worker_t *w, const void *key,
			 size_t klen, smart_gaddr_t ra, struct bt_node *p)
{
	smart_gaddr_t pa;
	unsigned i, n;
	int rc = smart__bt_lock_level(t, w, key, klen, 1, p, &pa);

	if (rc)
		return rc;
	n = p->h.count;
	for (i = 0; i < n && bt_inner(t, p, i)->child != ra; i++)
		;
	if (i == n)
		return smart__bt_unlock(t, w, pa, SMART_ENOENT);
	memmove(bt_inner(t, p, i), bt_inner(t, p, i + 1),
		(size_t)(n - i - 1) * t->inner_ent);
	memset(bt_inner(t, p, n - 1), 0, t->inner_ent);
	p->h.count--;
	smart__bt_seal(t, p);
	rc = smart__bt_unlock(t, w, pa, smart__bt_post_node(t, w, pa, p));
	if (!rc)
		smart__bt_cache_put(t, pa, p);
	return rc;
}

int smart__bt_merge(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t la,
		    struct bt_node *n, struct bt_node *r, unsigned i)
{
	smart_gaddr_t ra = n->h.sibling;
	uint8_t sep[SMART_BT_KEY_MAX];
	size_t sep_len = n->h.high_len;
	int rc, how;

	rc = smart__bt_lock2(t, w, la, ra, &how);
	if (rc)
		return smart__bt_unlock(t, w, la, rc);
	memcpy(sep, bt_high(t, n), sep_len);
	rc = smart__bt_read(t, w, ra, r);
	if (rc || r->h.level || (r->h.flags & (BT_F_DEAD | BT_F_LOW_INF)) ||
	    bt_keycmp(bt_low(t, r), r->h.low_len, sep, sep_len)) {
		/* not the neighbour it should be: leave it */
		rc = smart__bt_unlock2(t, w, ra, how, rc);
		atomic_fetch_add_explicit(&t->merge_skips, 1,
					  memory_order_relaxed);
		return rc ? smart__bt_unlock(t, w, la, rc) :
			    write_delete(t, w, la, n, i);
	}
	/* L takes R's entries, high fence and sibling */
	memcpy(bt_leaf(t, n, 0), bt_leaf(t, r, 0),
	       (size_t)t->leaf_cap * t->leaf_ent);
	memcpy(bt_high(t, n), bt_high(t, r), r->h.high_len);
	n->h.high_len = r->h.high_len;
	n->h.flags = (uint8_t)((n->h.flags & BT_F_LOW_INF) |
			       (r->h.flags & BT_F_HIGH_INF));
	n->h.sibling = r->h.sibling;
	smart__bt_seal(t, n);
	rc = smart__bt_post_node(t, w, la, n);
	/* another blade is another QP: L must be there before R forwards */
	if (!rc && smart_gaddr_blade(la) != smart_gaddr_blade(ra))
		rc = smart_sync(w);
	/* R dead: no entries, a forward to L */
	memset(bt_leaf(t, r, 0), 0, (size_t)t->leaf_cap * t->leaf_ent);
	r->h.flags |= BT_F_DEAD;
	r->h.leftmost = la;
	smart__bt_seal(t, r);
	if (!rc)
		rc = smart__bt_post_node(t, w, ra, r);
	rc = smart__bt_unlock2(t, w, ra, how, rc);
	rc = smart__bt_unlock(t, w, la, rc);
	if (rc)
		return rc;
	atomic_fetch_add_explicit(&t->merges, 1, memory_order_relaxed);
	/* the parent forgets R; then nothing names it.  The delete is done
	 * whatever happens here: what fails leaves R a forward, counted */
	rc = parent_forget(t, w, sep, sep_len, ra, r);
	if (!rc)
		rc = smart_epoch_retire(w, t->home, ra, t->node_size);
	atomic_fetch_add_explicit(rc ? &t->dead_kept : &t->nodes_freed, 1,
				  memory_order_relaxed);
	return 0;
}
