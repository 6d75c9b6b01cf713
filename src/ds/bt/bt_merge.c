/*
 * Smart-BT: a delete that empties a leaf frees a node (docs/bt.md §5).
 *
 * The emptied leaf L takes in its right neighbour R: L gets R's entries,
 * high fence and sibling; R becomes dead (no entries, `leftmost` naming
 * L); their parent P forgets R (the entry naming R goes, so R's range is
 * routed to the entry before it, L's); then nothing of the tree names R,
 * and it is retired through the home blade's epochs.  Why the leaf that
 * stays is L: R's whole range moves into L, which the delete holds locked
 * already, and L's left neighbour, which may hang under another parent,
 * is never touched.
 *
 * Locks: L's (held), then R's and P's, each only tried: a few CASes of
 * the remote word, never a queue, so the merge waits on nothing while it
 * holds L (lock words and local slots are hashed: no order among them
 * could make waiting safe).  A busy R or P, an R that is not L's live
 * right neighbour, a P in which R's entry does not follow L (R is P's
 * leftmost child: L hangs under the parent before; or P split away from
 * what the descent saw) leave L empty in the tree, where inserts reuse
 * it (`merge_skips`).  So a dead leaf is always one no parent names, and
 * nothing ever forwards to a node that may be freed.
 *
 * Order: L is written first (whole: R's keys are then in both, the same
 * values, no writer can change either), then R dead, then P, then the
 * releases (each behind its node's write on that node's QP): whoever
 * reaches R, through P as it was, L's old sibling pointer or a cache, is
 * sent to L, which covers all R covered.  The three are one redo record
 * (bt_redo.c), so a merger dying among them leaves no half merge.
 */
#include "ds/bt/bt_internal.h"

/* Index of P's entry naming ra, if the child before it is la; else -1. */
static int entry_after(const smart_bt_t *t, struct bt_node *p,
		       smart_gaddr_t la, smart_gaddr_t ra)
{
	unsigned j;

	if (p->h.level != 1)
		return -1;
	for (j = 0; j < p->h.count; j++)
		if (bt_inner(t, p, j)->child == ra)
			return SMART_M_BT_NO_PARENT_CHECK ||
			       (j ? bt_inner(t, p, j - 1)->child :
				    p->h.leftmost) == la ? (int)j : -1;
	return -1;
}

/* Is r the live leaf right of n (at la), starting at n's high fence? */
static int right_of(const smart_bt_t *t, struct bt_node *n,
		    struct bt_node *r, smart_gaddr_t la)
{
	if (SMART_M_BT_NO_RIGHT_CHECK)
		return !r->h.level;	/* only what the copy needs */
	return !r->h.level && !(r->h.flags & (BT_F_DEAD | BT_F_LOW_INF)) &&
	       r->h.sibling != la &&
	       !bt_keycmp(bt_low(t, r), r->h.low_len, bt_high(t, n),
			  n->h.high_len);
}

/* L takes in R (both in memory), R becomes a forward to L, P forgets R
 * (entry j): one logged write of the three, in that order (bt_redo.c:
 * a holder dying inside it leaves all three redone or none touched). */
static int merge_post(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t la,
		      struct bt_node *n, smart_gaddr_t ra, struct bt_node *r,
		      smart_gaddr_t pa, struct bt_node *p, unsigned j,
		      struct bt_wlog *lg)
{
	struct bt_patch pt[3] = {
		{ la, 0, t->node_size, n },
		{ ra, 0, t->node_size, r },
		{ pa, 0, t->node_size, p },
	};

	memcpy(bt_leaf(t, n, 0), bt_leaf(t, r, 0),
	       (size_t)t->leaf_cap * t->leaf_ent);
	memcpy(bt_high(t, n), bt_high(t, r), r->h.high_len);
	n->h.high_len = r->h.high_len;
	n->h.flags = (uint8_t)((n->h.flags & BT_F_LOW_INF) |
			       (r->h.flags & BT_F_HIGH_INF));
	n->h.sibling = r->h.sibling;
	smart__bt_seal(t, n);
	memset(bt_leaf(t, r, 0), 0, (size_t)t->leaf_cap * t->leaf_ent);
	r->h.flags |= BT_F_DEAD;
	r->h.leftmost = la;
	smart__bt_seal(t, r);
	memmove(bt_inner(t, p, j), bt_inner(t, p, j + 1),
		(size_t)(p->h.count - j - 1) * t->inner_ent);
	memset(bt_inner(t, p, p->h.count - 1u), 0, t->inner_ent);
	p->h.count--;
	smart__bt_seal(t, p);
	/* L before R (another blade is another QP: write_logged waits
	 * between them): L must be there before R forwards */
	return smart__bt_write_logged(t, w, pt, 3, lg);
}

int smart__bt_merge(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t la,
		    struct bt_node *n, struct bt_node *r, smart_gaddr_t pa,
		    unsigned i)
{
	smart_gaddr_t ra = n->h.sibling, held[2] = { la, ra };
	size_t mark = smart_scratch_mark(w);
	struct bt_node *p;
	struct bt_wlog lg = { BT_REC_NONE, NULL };
	int rc, hr = BT_TRY_NONE, hp = BT_TRY_NONE, j = -1;

	rc = smart_scratch_alloc(w, t->node_size, (void **)&p);
	if (!rc && ra != la && pa)
		rc = smart__bt_trylock(t, w, held, 1, ra, &hr);
	if (!rc && hr != BT_TRY_NONE)
		rc = smart__bt_read_n(t, w, ra, r, BT_STALE_TRIES);
	if (!rc && hr != BT_TRY_NONE && right_of(t, n, r, la))
		rc = smart__bt_trylock(t, w, held, 2, pa, &hp);
	if (!rc && hp != BT_TRY_NONE &&
	    !(rc = smart__bt_read_n(t, w, pa, p, BT_STALE_TRIES)))
		j = entry_after(t, p, la, ra);
	if (rc == SMART_EBUSY || rc == SMART_ERETRY)
		rc = 0;		/* leave L empty: inserts reuse it */
	if (!rc && j >= 0) {
		rc = merge_post(t, w, la, n, ra, r, pa, p, (unsigned)j,
				&lg);
	} else if (!rc) {
		smart__bt_seal(t, n);	/* just the delete */
		rc = smart__bt_post_entry(t, w, la, n, i, &lg);
	}
	rc = smart__bt_untry(t, w, ra, hr, rc);
	rc = smart__bt_untry(t, w, pa, hp, rc);
	rc = smart__bt_write_end(t, w, &lg, smart__bt_unlock(t, w, la, rc));
	if (!rc && j >= 0) {
		smart__bt_cache_put(t, pa, p);
		atomic_fetch_add_explicit(&t->merges, 1, memory_order_relaxed);
		/* the delete is done whatever the retire says: a failure
		 * leaks R (counted by the core).  Not freed at once: a
		 * walker inside its epoch section may hold R's address */
		if (SMART_M_BT_NO_EPOCH_GRACE)
			(void)smart_free(w, ra, t->node_size);
		else
			(void)smart_epoch_retire(w, t->home, ra,
						 t->node_size);
	} else if (!rc) {
		atomic_fetch_add_explicit(&t->merge_skips, 1,
					  memory_order_relaxed);
	}
	smart_scratch_release(w, mark);
	return rc;
}
