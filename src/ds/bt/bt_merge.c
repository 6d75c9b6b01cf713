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
 *
 * Retire: exactly once, by whoever claims R (smart__bt_dead_retire: a CAS
 * of R's first word from the merge's image to the next version's) once
 * all of the merge landed and no word holds a stamp of it — its merger,
 * a redo taker, an adopter of a dead merger's area, a drop.
 */
#include <sys/random.h>

#include "ds/bt/bt_internal.h"

/* Index of P's entry naming ra, if the child before it is la; else -1. */
static int entry_after(const smart_bt_t *t, struct bt_node *p, smart_gaddr_t la,
		       smart_gaddr_t ra)
{
	unsigned j;

	if (p->h.level != 1)
		return -1;
	for (j = 0; j < p->h.count; j++)
		if (bt_inner(t, p, j)->child == ra)
			return SMART_M_BT_NO_PARENT_CHECK ||
					       (j ? bt_inner(t, p, j - 1)->child :
						    p->h.leftmost) == la ?
				       (int)j :
				       -1;
	return -1;
}

/* Is r the live leaf right of n (at la), starting at n's high fence? */
static int right_of(const smart_bt_t *t, struct bt_node *n, struct bt_node *r,
		    smart_gaddr_t la)
{
	if (SMART_M_BT_NO_RIGHT_CHECK)
		return !r->h.level; /* only what the copy needs */
	return !r->h.level && !(r->h.flags & (BT_F_DEAD | BT_F_LOW_INF)) &&
	       r->h.sibling != la &&
	       !bt_keycmp(bt_low(t, r), r->h.low_len, bt_high(t, n),
			  n->h.high_len);
}

/* R's image as this merge kills it is made unique: 64 random bits in
 * its first entry's key bytes (the entry stays free, klen 0, crc 0), so
 * that a record of an earlier merge whose R had the same block, fences,
 * neighbour and version is never taken for this one (dead_finish). */
static void dead_tag(const smart_bt_t *t, struct bt_node *r)
{
	uint64_t tag;

	if (getrandom(&tag, sizeof(tag), 0) != (ssize_t)sizeof(tag))
		tag = bt_mix(smart_now_ns() ^ (uint64_t)(uintptr_t)r);
	memcpy(bt_leaf(t, r, 0)->kv, &tag, sizeof(tag));
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
	dead_tag(t, r);
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

static void merge_seam(smart_worker_t *w)
{
	void *arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &arg);

	if (hook)
		(void)hook(w, "bt.merge.unlocked", arg);
}

/* ---- retiring the dead leaf, exactly once ------------------------------- */

int smart__bt_dead_retire(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t ra,
			  const struct bt_node *img, int now)
{
	size_t mark = smart_scratch_mark(w);
	struct bt_node *c;
	uint64_t want, next, got;
	int rc = smart_scratch_alloc(w, t->node_size, (void **)&c);

	if (rc)
		return rc;
	memcpy(c, img, t->node_size);
	smart__bt_seal(t, c); /* the next version: claimed, still dead */
	memcpy(&want, img, 8);
	memcpy(&next, c, 8);
	smart_scratch_release(w, mark);
	if (SMART_M_BT_NO_DEAD_CLAIM)
		got = want; /* R stays as the merge left it */
	else
		rc = smart_cas_sync(w, ra, want, next, &got);
	if (rc || got != want)
		return rc; /* another finisher's, or not this image */
	/* not freed at once (but by a drop): a walker inside its epoch
	 * section may hold R's address */
	if (now || SMART_M_BT_NO_EPOCH_GRACE)
		rc = smart_free(w, ra, t->node_size);
	else
		rc = smart_epoch_retire(w, t->home, ra, t->node_size);
	return rc ? rc : 1;
}

/* Read node a into buf, whole (crc and sanity), in at most `tries` READs;
 * no heal (an adopter has no area yet to redo through): 0 or an error. */
static int read_whole(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		      struct bt_node *buf, unsigned tries)
{
	int rc = SMART_ERETRY;

	while (tries-- && (rc == SMART_ERETRY || rc == SMART_EAGAIN)) {
		rc = smart_read_sync(w, a, t->node_size, buf);
		if (!rc)
			rc = smart__bt_check(t, buf);
	}
	return rc;
}

/* Does node n (whole) name `a` as a child or its right sibling? */
static int names(const smart_bt_t *t, struct bt_node *n, smart_gaddr_t a)
{
	unsigned j;

	if (n->h.sibling == a || (n->h.level && n->h.leftmost == a))
		return 1;
	for (j = 0; n->h.level && j < n->h.count; j++)
		if (bt_inner(t, n, j)->child == a)
			return 1;
	return 0;
}

/* Is p (a record's patches) a merge: L, R killed whole, P? */
static int merge_shaped(const smart_bt_t *t, const struct bt_patch *p,
			unsigned n)
{
	const struct bt_node *r = p[1].src;

	return n == BT_PATCHES_MAX && !p[1].off && p[1].len == t->node_size &&
	       !r->h.level && (r->h.flags & BT_F_DEAD) &&
	       r->h.leftmost == p[0].node;
}

int smart__bt_dead_finish(smart_bt_t *t, smart_worker_t *w,
			  const struct bt_patch *p, unsigned n, int now)
{
	size_t mark = smart_scratch_mark(w);
	struct bt_node *img, *nd;
	int rc;

	if (!merge_shaped(t, p, n))
		return 0;
	rc = smart_scratch_alloc(w, t->node_size, (void **)&img);
	if (!rc)
		rc = smart_scratch_alloc(w, t->node_size, (void **)&nd);
	if (rc)
		return rc;
	memcpy(img, p[1].src, t->node_size); /* a peer's: checked */
	rc = smart__bt_check(t, img) ? 0 : 1;
	/* R as the merge killed it (every byte: its tag names this merge),
	 * and neither P nor L naming it any more: all three landed */
	if (rc == 1)
		rc = !read_whole(t, w, p[1].node, nd, BT_STALE_TRIES) &&
		     !memcmp(nd, img, t->node_size);
	if (rc == 1 && !SMART_M_BT_DEAD_NO_NAMES)
		rc = !read_whole(t, w, p[2].node, nd, BT_STALE_TRIES) &&
		     !names(t, nd, p[1].node);
	if (rc == 1 && !SMART_M_BT_DEAD_NO_NAMES)
		rc = !read_whole(t, w, p[0].node, nd, BT_STALE_TRIES) &&
		     !names(t, nd, p[1].node);
	if (rc == 1)
		rc = smart__bt_dead_retire(t, w, p[1].node, img, now);
	smart_scratch_release(w, mark);
	return rc;
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
		rc = 0; /* leave L empty: inserts reuse it */
	if (!rc && j >= 0) {
		rc = merge_post(t, w, la, n, ra, r, pa, p, (unsigned)j, &lg);
	} else if (!rc) {
		smart__bt_seal(t, n); /* just the delete */
		rc = smart__bt_post_entry(t, w, la, n, i, &lg);
	}
	rc = smart__bt_untry(t, w, ra, hr, rc);
	rc = smart__bt_untry(t, w, pa, hp, rc);
	rc = smart__bt_write_end(t, w, &lg, smart__bt_unlock(t, w, la, rc));
	if (!rc && j >= 0) {
		smart__bt_cache_put(t, pa, p);
		atomic_fetch_add_explicit(&t->merges, 1, memory_order_relaxed);
		/* a test's seam: the merge landed, R not retired yet (a
		 * merger killed here: the next adopter of our area, or the
		 * drop, retires it from our record) */
		merge_seam(w);
		/* the delete is done whatever the retire says: a failure
		 * leaks R (counted by the core).  All three landed (the
		 * unlock waited): no check needed, only the claim */
		(void)smart__bt_dead_retire(t, w, ra, r, 0);
	} else if (!rc) {
		atomic_fetch_add_explicit(&t->merge_skips, 1,
					  memory_order_relaxed);
	}
	smart_scratch_release(w, mark);
	return rc;
}
