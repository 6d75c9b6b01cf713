/*
 * Smart-BT point operations and splits: the B-link protocol on one-sided
 * ops (docs/bt.md §3, §5).
 *
 * Readers take no lock: they read a node whole (checked by its CRC) and
 * move right while their key is at or above its high fence, so a split
 * that published the new right sibling but not yet the parent's entry
 * for it costs them one more READ, never a wrong answer.  Writers lock
 * the leaf, read it again under the lock (that copy is the truth), move
 * right under locks if it split meanwhile, and write back one entry (or,
 * to split, the new sibling and then the node) with the unlock behind it
 * in one chain.  A split unlocks the child before it locks the parent, so
 * an operation holds one lock at a time.  A walk that moved right from
 * the node (a leaf, or an internal node) a parent it read fresh named
 * found that parent without the separator (its splitter may have died
 * before putting it in): after its operation, it puts it in (sep_fix),
 * once.
 *
 * Invariants: a key lives in exactly one leaf, the one whose fences
 * cover it; entries move only rightwards (into a new sibling); the root
 * pointer changes only by CAS from the old root to a new root whose
 * leftmost child is the old root.
 */
#include <stdlib.h>

#include "ds/bt/bt_internal.h"

enum bt_kind { BT_INSERT, BT_UPDATE, BT_UPSERT, BT_DELETE };

/* The child of internal node n that covers key. */
static smart_gaddr_t child_of(const smart_bt_t *t, struct bt_node *n,
			      const void *key, size_t klen)
{
	smart_gaddr_t c = n->h.leftmost;
	unsigned i;

	for (i = 0; i < n->h.count; i++) {
		struct bt_inner_ent *e = bt_inner(t, n, i);

		if (bt_keycmp(key, klen, e->key, e->klen) < 0)
			break;
		c = e->child;
	}
	return c;
}

int smart__bt_root_fresh(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t *a)
{
	uint64_t r;
	int rc = smart_read_sync(
		w, smart_gaddr_add(t->meta, offsetof(struct bt_meta, root)), 8,
		&r);

	if (!rc && !r)
		rc = SMART_EPROTO;
	if (!rc) {
		atomic_store(&t->root, r);
		*a = r;
	}
	return rc;
}

/* The node at a, expected at level `hint` (-1: unknown): an internal
 * node from the index cache when it is there, else from its blade (and
 * then cached if internal), read up to `tries` times while torn.  *hit
 * says which. */
static int node_get(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a, int hint,
		    unsigned tries, struct bt_node *n, int *hit)
{
	int rc;

	*hit = hint && smart__bt_cache_get(t, w, a, n);
	if (*hit)
		return 0;
	rc = smart__bt_read_n(t, w, a, n, tries);
	if (!rc && n->h.level)
		smart__bt_cache_put(t, a, n);
	return rc;
}

/* From the root down to the node of `level` covering key: its address in
 * *out and its content in n; path[l] gets the node passed at each level
 * above (0 where the walk started below it).  unread: a writer, who will
 * read the node again under its lock, wants only its address: taken from
 * the parent, the node itself is not read (n holds the parent then).
 * Internal nodes come from the index cache when they are there; a cached
 * parent that sent us to a node not covering the key is stale (it split
 * since, or the node it names was merged away and freed): dropped, so
 * that the next walk reads it fresh, and an address it gave that never
 * reads whole is given up after BT_STALE_TRIES for a walk from the root.
 * A dead leaf sends us to the leaf that took its range.  *wk (when not
 * NULL) gets in fl BT_D_FRESH when path[1] was read from its blade, not
 * the cache, and BT_D_RIGHT when the walk moved right at the leaf level:
 * both, and the parent lacks the separator of the leaf we reached; and in
 * miss the first internal node reached the same way (inner_miss). */
#define BT_D_FRESH 1u
#define BT_D_RIGHT 2u

/* A separator: node `right` of `level`, starting at key. */
struct sep {
	uint8_t key[SMART_BT_KEY_MAX];
	size_t klen;
	smart_gaddr_t right;
	unsigned level;
};

/* What a walk saw: the BT_D_* flags of its leaf level, and the first
 * internal node it reached moving right from the one a parent read fresh
 * named (that parent lacks its separator; miss.right 0: none). */
struct walk {
	unsigned fl;
	struct sep miss;
};

/* Internal node n (at a) covers the walk's key: if the walk moved right
 * to it from the node its parent, read fresh, named (moved_fresh), that
 * parent lacks n's separator: kept in *m (the first such) for sep_fix. */
static void inner_miss(const smart_bt_t *t, struct bt_node *n, smart_gaddr_t a,
		       int moved_fresh, struct sep *m)
{
	if (SMART_M_BT_NO_INNER_SEP_FIX || !moved_fresh || m->right ||
	    (n->h.flags & (BT_F_LOW_INF | BT_F_DEAD)))
		return;
	m->klen = n->h.low_len;
	memcpy(m->key, bt_low(t, n), m->klen);
	m->right = a;
	m->level = n->h.level;
}

static int descend(smart_bt_t *t, smart_worker_t *w, const void *key,
		   size_t klen, unsigned level, int unread, struct bt_node *n,
		   smart_gaddr_t *out, smart_gaddr_t *path, struct walk *wk)
{
	smart_gaddr_t a = atomic_load(&t->root), stale = 0;
	unsigned steps = 0, restarts = 0, fl = 0;
	int rc, c, hit, hint = -1, fresh = 0, moved = 0;

	memset(path, 0, BT_HEIGHT_MAX * sizeof(*path));
	if (wk)
		wk->miss.right = 0;
	rc = node_get(t, w, a, hint, BT_READ_TRIES, n, &hit);
	for (;;) {
		if (++steps > BT_HOPS_MAX)
			return SMART_EPROTO; /* a cycle: not a tree */
		if (rc && !(rc == SMART_ERETRY && stale))
			return rc;
		c = rc ? -1 :
		    !SMART_M_BT_NO_FORWARD && (n->h.flags & BT_F_DEAD) ?
			 2 :
			 smart__bt_fence_cmp(t, n, key, klen);
		if (c && stale) {
			smart__bt_cache_drop(t, stale);
			stale = 0;
		}
		if (c == 2) {
			/* merged into its left neighbour, which covers
			 * everything it did */
			a = n->h.leftmost;
			hint = 0;
		} else if (c > 0 && n->h.sibling) {
			atomic_fetch_add_explicit(&t->move_rights, 1,
						  memory_order_relaxed);
			moved = 1;
			if (!n->h.level)
				fl |= BT_D_RIGHT;
			a = n->h.sibling;
			hint = n->h.level;
		} else if (c != 0 || n->h.level < level) {
			/* started too low or off the key's path (a stale
			 * root or cache), or the level asked for has no root
			 * above it yet (its splitter is installing one):
			 * from the root the descriptor names now */
			if (++restarts > 100000)
				return SMART_EPROTO;
			if (restarts > 1)
				smart_task_yield(w);
			if (hit)
				smart__bt_cache_drop(t, a);
			rc = smart__bt_root_fresh(t, w, &a);
			if (rc)
				return rc;
			hint = -1;
			fl = 0;
			fresh = moved = 0;
			if (wk)
				wk->miss.right = 0;
			memset(path, 0, BT_HEIGHT_MAX * sizeof(*path));
		} else if (n->h.level == level) {
			*out = a;
			if (wk)
				wk->fl = fl;
			return 0;
		} else {
			path[n->h.level] = a;
			if (n->h.level == 1)
				fl = hit ? 0 : BT_D_FRESH;
			if (wk)
				inner_miss(t, n, a, fresh && moved, &wk->miss);
			fresh = !hit; /* of the node naming the next */
			moved = 0;
			if ((unsigned)n->h.level + 1 > atomic_load(&t->height))
				atomic_store(&t->height, n->h.level + 1u);
			stale = hit ? a : 0;
			hint = n->h.level - 1;
			a = child_of(t, n, key, klen);
			if (unread && n->h.level == level + 1) {
				*out = a;
				if (wk)
					wk->fl = fl;
				return 0;
			}
		}
		rc = node_get(t, w, a, hint,
			      stale ? BT_STALE_TRIES : BT_READ_TRIES, n, &hit);
	}
}

/* Lock the node of `level` covering key, starting at a, with its content
 * in n: moves right (unlock, lock the sibling) while it split away, and
 * from a dead leaf to the one that took its range.  SMART_EAGAIN (nothing
 * locked): a is not on the key's path, or not of that level (an address
 * from a stale cache, maybe freed memory by now; a root a bulk load made
 * a parent): descend again. */
static int lock_covering(smart_bt_t *t, smart_worker_t *w, const void *key,
			 size_t klen, unsigned level, smart_gaddr_t *a,
			 struct bt_node *n)
{
	unsigned hops;
	int rc, c, done;

	for (hops = 0; hops < BT_HOPS_MAX; hops++) {
		/* the lock's CAS and the node's READ in one chain */
		rc = smart__bt_lock_read(t, w, *a, n, &done);
		if (rc)
			return rc;
		/* under the lock nobody writes it (what a dead holder half
		 * wrote was redone when we took its lock over): a node that
		 * never reads whole is not one */
		rc = done ? smart__bt_check(t, n) : SMART_EAGAIN;
		if (rc == SMART_EAGAIN)
			rc = smart__bt_read_n(t, w, *a, n, BT_STALE_TRIES);
		if (rc == SMART_ERETRY)
			return smart__bt_unlock(t, w, *a, SMART_EAGAIN);
		if (rc)
			return smart__bt_unlock(t, w, *a, rc);
		c = (n->h.flags & BT_F_DEAD) ?
			    2 :
			    smart__bt_fence_cmp(t, n, key, klen);
		if (c == 0 &&
		    (SMART_M_BT_NO_LEVEL_CHECK || n->h.level == level))
			return 0;
		if (c == 0 || c < 0 || (c == 1 && !n->h.sibling))
			return smart__bt_unlock(t, w, *a, SMART_EAGAIN);
		rc = smart__bt_unlock(t, w, *a, 0);
		*a = c == 2 ? n->h.leftmost : n->h.sibling;
		atomic_fetch_add_explicit(&t->move_rights, 1,
					  memory_order_relaxed);
		if (rc)
			return rc;
	}
	return SMART_EPROTO; /* a chain that never ends: not a tree */
}

void smart__bt_node_init(smart_bt_t *t, struct bt_node *n, unsigned level)
{
	memset(n, 0, t->node_size);
	n->h.level = (uint8_t)level;
}

static void set_fence(uint8_t *dst, uint16_t *len, const void *k, size_t klen)
{
	memcpy(dst, k, klen);
	*len = (uint16_t)klen;
}

/* ---- leaves ------------------------------------------------------------- */

static int leaf_find(const smart_bt_t *t, struct bt_node *n, const void *key,
		     size_t klen, int *free_slot)
{
	unsigned i;

	*free_slot = -1;
	for (i = 0; i < t->leaf_cap; i++) {
		struct bt_leaf_ent *e = bt_leaf(t, n, i);

		if (!e->klen) {
			if (*free_slot < 0)
				*free_slot = (int)i;
		} else if (e->klen == klen && !memcmp(e->kv, key, klen)) {
			return (int)i;
		}
	}
	return -1;
}

void smart__bt_leaf_put(const smart_bt_t *t, struct bt_leaf_ent *e,
			const void *key, size_t klen, const void *val,
			size_t vlen)
{
	memset(e, 0, t->leaf_ent);
	e->klen = (uint16_t)klen;
	e->vlen = (uint16_t)vlen;
	memcpy(e->kv, key, klen);
	if (vlen)
		memcpy(e->kv + t->key_max, val, vlen);
	smart__bt_ent_seal(t, e);
}

/* ---- splits ------------------------------------------------------------- */

/* Write N (new right sibling) and then X (the left half, unlocking it):
 * N must be in memory before X points at it. */
static int publish_split(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t xa,
			 struct bt_node *x, smart_gaddr_t na,
			 struct bt_node *nn)
{
	struct bt_wlog lg = { BT_REC_NONE, NULL };
	int rc;

	smart__bt_seal(t, nn);
	rc = smart_write(w, na, nn, t->node_size);
	/* another blade is another QP: no order between the two WRITEs */
	if (!rc && smart_gaddr_blade(na) != smart_gaddr_blade(xa))
		rc = smart_sync(w);
	smart__bt_seal(t, x);
	if (!rc)
		rc = smart__bt_post_locked(t, w, xa, x, &lg);
	rc = smart__bt_write_end(t, w, &lg, smart__bt_unlock(t, w, xa, rc));
	if (!rc) {
		/* what we wrote is the truth now: keep the index cache's
		 * copies of internal nodes fresh */
		smart__bt_cache_put(t, na, nn);
		smart__bt_cache_put(t, xa, x);
	}
	return rc;
}

/* Split the locked, full leaf x (at xa) adding (key, val); on return x is
 * unlocked and *s names the separator and the new right node. */
static int leaf_split(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t xa,
		      struct bt_node *x, struct bt_node *nn, uint8_t *tmp,
		      const void *key, size_t klen, const void *val,
		      size_t vlen, struct sep *s)
{
	/* tmp: our entry, x's entries kept aside, pointers to sort */
	struct bt_leaf_ent *mine = (struct bt_leaf_ent *)tmp;
	uint8_t *copy = tmp + t->leaf_ent;
	struct bt_leaf_ent **ents =
		(struct bt_leaf_ent **)(copy +
					(size_t)t->leaf_cap * t->leaf_ent);
	smart_gaddr_t na;
	unsigned i, n, mid;
	int rc;

	rc = smart__bt_node_alloc(t, w, &na);
	if (rc)
		return smart__bt_unlock(t, w, xa, rc);
	n = smart__bt_leaf_used(t, x, copy, ents);
	smart__bt_leaf_put(t, mine, key, klen, val, vlen);
	ents[n++] = mine;
	smart__bt_sort_leaf(ents, n);
	mid = n / 2;
	s->klen = ents[mid]->klen;
	memcpy(s->key, ents[mid]->kv, s->klen);
	s->right = na;
	/* the right half: [sep, x's high) */
	smart__bt_node_init(t, nn, 0);
	nn->h.flags = x->h.flags & BT_F_HIGH_INF;
	set_fence(bt_low(t, nn), &nn->h.low_len, s->key, s->klen);
	set_fence(bt_high(t, nn), &nn->h.high_len, bt_high(t, x),
		  x->h.high_len);
	nn->h.sibling = x->h.sibling;
	for (i = mid; i < n; i++)
		memcpy(bt_leaf(t, nn, i - mid), ents[i], t->leaf_ent);
	/* the left half keeps x's place: [x's low, sep) */
	memset((uint8_t *)x + t->ent_off, 0, (size_t)t->leaf_cap * t->leaf_ent);
	for (i = 0; i < mid; i++)
		memcpy(bt_leaf(t, x, i), ents[i], t->leaf_ent);
	x->h.flags &= (uint8_t)~BT_F_HIGH_INF;
	set_fence(bt_high(t, x), &x->h.high_len, s->key, s->klen);
	x->h.sibling = na;
	atomic_fetch_add_explicit(&t->leaf_splits, 1, memory_order_relaxed);
	return publish_split(t, w, xa, x, na, nn);
}

static void inner_put(const smart_bt_t *t, struct bt_inner_ent *e,
		      const void *key, size_t klen, smart_gaddr_t child)
{
	memset(e, 0, t->inner_ent);
	e->child = child;
	e->klen = (uint16_t)klen;
	memcpy(e->key, key, klen);
}

/* Does internal node x name s->right, or hold s->key, already?  Then the
 * separator is in (a helper put it there, or the splitter, whichever
 * came first: bt_sep_fix), and must not go in twice. */
static int sep_in(const smart_bt_t *t, struct bt_node *x, const struct sep *s)
{
	unsigned i;

	if (x->h.leftmost == s->right)
		return 1;
	for (i = 0; i < x->h.count; i++) {
		struct bt_inner_ent *e = bt_inner(t, x, i);

		if (e->child == s->right ||
		    !bt_keycmp(e->key, e->klen, s->key, s->klen))
			return 1;
	}
	return 0;
}

/* Insert (s->key, s->right) into the locked internal node x at its sorted
 * place; if x is full, split it (the middle key moves up into *up). *split
 * says which happened.  x is unlocked on return.  1: it was there. */
static int inner_insert(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t xa,
			struct bt_node *x, struct bt_node *nn, uint8_t *tmp,
			const struct sep *s, struct sep *up, int *split)
{
	struct bt_inner_ent *e;
	smart_gaddr_t na;
	unsigned pos, n = x->h.count, mid;
	struct bt_wlog lg;
	uint8_t *all = tmp; /* n + 1 entries, sorted */
	int rc;

	*split = 0;
	if (!SMART_M_BT_NO_SEP_ONCE && sep_in(t, x, s)) {
		rc = smart__bt_unlock(t, w, xa, 0);
		return rc ? rc : 1;
	}
	for (pos = 0; pos < n; pos++) {
		e = bt_inner(t, x, pos);
		if (bt_keycmp(s->key, s->klen, e->key, e->klen) < 0)
			break;
	}
	*split = n + 1 > t->inner_cap;
	if (!*split) {
		uint8_t *base = (uint8_t *)bt_inner(t, x, pos);

		memmove(base + t->inner_ent, base,
			(size_t)(n - pos) * t->inner_ent);
		inner_put(t, (struct bt_inner_ent *)base, s->key, s->klen,
			  s->right);
		x->h.count++;
		smart__bt_seal(t, x);
		rc = smart__bt_post_locked(t, w, xa, x, &lg);
		rc = smart__bt_write_end(t, w, &lg,
					 smart__bt_unlock(t, w, xa, rc));
		if (!rc)
			smart__bt_cache_put(t, xa, x);
		return rc;
	}
	rc = smart__bt_node_alloc(t, w, &na);
	if (rc)
		return smart__bt_unlock(t, w, xa, rc);
	memcpy(all, bt_inner(t, x, 0), (size_t)pos * t->inner_ent);
	inner_put(t, (struct bt_inner_ent *)(all + (size_t)pos * t->inner_ent),
		  s->key, s->klen, s->right);
	memcpy(all + (size_t)(pos + 1) * t->inner_ent, bt_inner(t, x, pos),
	       (size_t)(n - pos) * t->inner_ent);
	n++;
	mid = n / 2;
	e = (struct bt_inner_ent *)(all + (size_t)mid * t->inner_ent);
	up->klen = e->klen;
	memcpy(up->key, e->key, e->klen);
	up->right = na;
	/* right: leftmost = the middle entry's child, entries after it */
	smart__bt_node_init(t, nn, x->h.level);
	nn->h.flags = x->h.flags & BT_F_HIGH_INF;
	set_fence(bt_low(t, nn), &nn->h.low_len, up->key, up->klen);
	set_fence(bt_high(t, nn), &nn->h.high_len, bt_high(t, x),
		  x->h.high_len);
	nn->h.sibling = x->h.sibling;
	nn->h.leftmost = e->child;
	nn->h.count = (uint16_t)(n - mid - 1);
	memcpy(bt_inner(t, nn, 0), all + (size_t)(mid + 1) * t->inner_ent,
	       (size_t)nn->h.count * t->inner_ent);
	/* left: the entries before it */
	memset(bt_inner(t, x, 0), 0, (size_t)t->inner_cap * t->inner_ent);
	memcpy(bt_inner(t, x, 0), all, (size_t)mid * t->inner_ent);
	x->h.count = (uint16_t)mid;
	x->h.flags &= (uint8_t)~BT_F_HIGH_INF;
	set_fence(bt_high(t, x), &x->h.high_len, up->key, up->klen);
	x->h.sibling = na;
	atomic_fetch_add_explicit(&t->inner_splits, 1, memory_order_relaxed);
	return publish_split(t, w, xa, x, na, nn);
}

/* Node xa (level `level`, was the root: both fences infinite) split into
 * xa and s->right: a new root above them, installed by CAS.  1 when
 * another root is there (the caller inserts into the parent instead). */
static int new_root(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t xa,
		    unsigned level, const struct sep *s, struct bt_node *r)
{
	smart_gaddr_t ra;
	uint64_t old;
	int rc;

	if (level + 1 > BT_LEVEL_MAX)
		return SMART_ENOSPC; /* 4^29 nodes: not reached */
	rc = smart__bt_node_alloc(t, w, &ra);
	if (rc)
		return rc;
	smart__bt_node_init(t, r, level + 1);
	r->h.flags = BT_F_LOW_INF | BT_F_HIGH_INF;
	r->h.leftmost = xa;
	r->h.count = 1;
	inner_put(t, bt_inner(t, r, 0), s->key, s->klen, s->right);
	smart__bt_seal(t, r);
	rc = smart_write_sync(w, ra, r, t->node_size);
	if (!rc)
		rc = smart_cas_sync(w,
				    smart_gaddr_add(t->meta,
						    offsetof(struct bt_meta,
							     root)),
				    xa, ra, &old);
	if (!rc && old != xa) {
		(void)smart_free(w, ra, t->node_size);
		return 1;
	}
	if (!rc) {
		smart__bt_cache_put(t, ra, r);
		atomic_store(&t->root, ra);
		atomic_store(&t->height, level + 2);
		atomic_fetch_add_explicit(&t->root_splits, 1,
					  memory_order_relaxed);
	}
	return rc;
}

/* Is the root the descriptor names of `level` (1, its address in *ra)?
 * Then nothing is above that level: its splitter died before installing
 * the new root (the node split, so it has a sibling), and the leftmost
 * node of the level is that root (a split keeps the left half in place).
 * 2: a level above exists. */
static int no_level_above(smart_bt_t *t, smart_worker_t *w, unsigned level,
			  smart_gaddr_t *ra, struct bt_node *n)
{
	int rc = smart__bt_root_fresh(t, w, ra);

	if (!rc)
		rc = smart__bt_read(t, w, *ra, n);
	if (rc)
		return rc;
	if (n->h.level > level)
		return 2;
	/* a root of our level that is whole (both fences unbounded) beside
	 * the node we split of that level: not a tree */
	return n->h.level < level || bt_is_root(n) ? SMART_EPROTO : 1;
}

/* A helper's check, holding the parent's lock: is s->right still a live
 * node of s->level starting at s->key?  A leaf may have been merged away
 * since the helper saw it, once its separator went in (a merge needs
 * it): it is not freed yet (our epoch section began before its retire).
 * (Internal nodes are never merged: the check costs nothing there.) */
static int right_alive(smart_bt_t *t, smart_worker_t *w, const struct sep *s,
		       struct bt_node *r)
{
	int rc = smart__bt_read_n(t, w, s->right, r, BT_STALE_TRIES);

	if (rc)
		return rc == SMART_ERETRY ? 0 : rc;
	return r->h.level == s->level &&
	       !(r->h.flags & (BT_F_DEAD | BT_F_LOW_INF)) &&
	       !bt_keycmp(bt_low(t, r), r->h.low_len, s->key, s->klen);
}

static void inner_seam(smart_worker_t *w)
{
	void *arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &arg);

	if (hook)
		(void)hook(w, "bt.split.inner.published", arg);
}

/* After node xa of `level` split (s): put the separator into the level
 * above, splitting upwards as far as needed.  help: we are not the
 * splitter but found its separator missing (bt_sep_fix): check s->right
 * under the parent's lock first.  1: the separator was there already. */
static int insert_up(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t xa,
		     unsigned level, int was_root, struct sep *s,
		     smart_gaddr_t *path, struct bt_node *n, struct bt_node *nn,
		     uint8_t *tmp, int help)
{
	struct sep up;
	smart_gaddr_t pa, want = 0; /* set when no_level_above returns 1 */
	unsigned again = 0;
	int rc, split;

	for (;;) {
		if (was_root) {
			rc = new_root(t, w, xa, level, s, n);
			if (rc <= 0)
				return rc;
		}
		pa = path[level + 1];
		if (!pa) {
			/* the walk started below this level: find it; if
			 * there is none (the root's splitter died before it
			 * installed the new root), install one ourselves */
			rc = no_level_above(t, w, level, &want, n);
			if (rc == 1)
				rc = new_root(t, w, want, level, s, n);
			if (rc <= 0)
				return rc;
			rc = descend(t, w, s->key, s->klen, level + 1, 1, n,
				     &pa, path, NULL);
			if (rc)
				return rc;
		}
		want = pa;
		rc = lock_covering(t, w, s->key, s->klen, level + 1, &pa, n);
		if (rc == SMART_EAGAIN && ++again < 1000) {
			/* a stale cache sent us off the path (its copy of
			 * pa, or of pa's parent): find it afresh */
			smart__bt_cache_drop(t, pa);
			smart__bt_cache_drop(t, path[level + 2]);
			path[level + 1] = 0;
			was_root = 0;
			continue;
		}
		if (rc)
			return rc == SMART_EAGAIN ? SMART_ERETRY : rc;
		if (pa != want)
			smart__bt_cache_drop(t, path[level + 2]);
		if (help && (rc = right_alive(t, w, s, nn)) <= 0) {
			rc = smart__bt_unlock(t, w, pa, rc);
			return rc ? rc : 1; /* gone: nothing to put */
		}
		help = 0;
		was_root = bt_is_root(n);
		rc = inner_insert(t, w, pa, n, nn, tmp, s, &up, &split);
		if (rc || !split)
			return rc;
		/* a test's seam: internal node pa split, its new right
		 * sibling not yet in the level above (a splitter killed
		 * here leaves that separator to the walkers: sep_fix) */
		if (!was_root)
			inner_seam(w);
		*s = up;
		xa = pa;
		level++;
	}
}

/* ---- operations --------------------------------------------------------- */

static int args_ok(const smart_bt_t *t, const smart_worker_t *w,
		   const void *key, size_t klen, const void *val, size_t vlen)
{
	return t && smart__bt_own(t, w) && key && klen && klen <= t->key_max &&
	       vlen <= t->val_max && (val || !vlen);
}

/* Scratch for an operation: two nodes and the split's temporary room. */
static int op_bufs(smart_bt_t *t, smart_worker_t *w, struct bt_node **n,
		   struct bt_node **nn, uint8_t **tmp)
{
	uint8_t *p;
	/* room for a leaf split's (entries and pointers to them) and an
	 * inner split's (entries): the sum, simpler than the larger */
	size_t tmp_len = (size_t)(t->leaf_cap + 1) * (t->leaf_ent + 8) +
			 (size_t)(t->inner_cap + 1) * t->inner_ent;
	int rc = smart_scratch_alloc(w, 2 * (size_t)t->node_size + tmp_len,
				     (void **)&p);

	if (rc)
		return rc;
	*n = (struct bt_node *)p;
	*nn = (struct bt_node *)(p + t->node_size);
	*tmp = p + 2 * (size_t)t->node_size;
	return 0;
}

static int spec_on(const smart_bt_t *t, smart_worker_t *w)
{
	return t->spec &&
	       smart_ctx_technique(smart_worker_ctx(w), SMART_TECH_SPEC_LOOKUP);
}

static smart_gaddr_t ent_addr(const smart_bt_t *t, smart_gaddr_t leaf,
			      unsigned i)
{
	return smart_gaddr_add(leaf, t->ent_off + (uint64_t)i * t->leaf_ent);
}

/* Lock the leaf covering key (descending again while an address from a
 * stale cache leads nowhere, or the leaf stopped being one: EAGAIN); its
 * address in *a, its content in n, path and *how as descend's (with
 * BT_D_RIGHT when the leaf locked is not the one the parent named). */
static int lock_leaf(smart_bt_t *t, smart_worker_t *w, const void *key,
		     size_t klen, struct bt_node *n, smart_gaddr_t *a,
		     smart_gaddr_t *path, struct walk *how)
{
	smart_gaddr_t want;
	unsigned again;
	int rc;

	for (again = 0; again < 1000; again++) {
		rc = descend(t, w, key, klen, 0, 1, n, a, path, how);
		want = *a;
		if (!rc)
			rc = lock_covering(t, w, key, klen, 0, a, n);
		if (rc == SMART_EAGAIN) {
			smart__bt_cache_drop(t, path[1]);
			continue;
		}
		if (rc)
			return rc;
		if (*a != want) {
			smart__bt_cache_drop(t, path[1]); /* a stale parent */
			how->fl |= BT_D_RIGHT;
		}
		return 0;
	}
	return SMART_ERETRY;
}

/* Would deleting entry i leave leaf n empty, with a right neighbour to
 * take in (docs/bt.md §5)? */
static int empties(const smart_bt_t *t, struct bt_node *n, unsigned i)
{
	unsigned j;

	if ((n->h.flags & BT_F_HIGH_INF) || !n->h.sibling)
		return 0; /* the last leaf (or the root): nothing right */
	for (j = 0; j < t->leaf_cap; j++)
		if (j != i && bt_leaf(t, n, j)->klen)
			return 0;
	return 1;
}

static int write_locked(smart_bt_t *t, smart_worker_t *w, enum bt_kind kind,
			const void *key, size_t klen, const void *val,
			size_t vlen, struct bt_node *n, struct bt_node *nn,
			uint8_t *tmp, smart_gaddr_t a, smart_gaddr_t *path)
{
	struct sep s;
	struct bt_wlog lg;
	void *hook_arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &hook_arg);
	int rc, i, f, was_root;

	i = leaf_find(t, n, key, klen, &f);
	if ((kind == BT_INSERT && i >= 0) ||
	    ((kind == BT_UPDATE || kind == BT_DELETE) && i < 0))
		return smart__bt_unlock(t, w, a,
					i >= 0 ? SMART_EEXIST : SMART_ENOENT);
	if (i < 0 && f < 0) {
		/* full: split, then the separator goes up */
		was_root = bt_is_root(n);
		rc = leaf_split(t, w, a, n, nn, tmp, key, klen, val, vlen, &s);
		if (!rc && hook)
			(void)hook(w, "bt.split.published", hook_arg);
		rc = rc ? rc :
			  insert_up(t, w, a, 0, was_root, &s, path, n, nn, tmp,
				    0);
		return rc < 0 ? rc : 0;
	}
	if (i < 0)
		i = f;
	if (kind == BT_DELETE && empties(t, n, (unsigned)i)) {
		memset(bt_leaf(t, n, (unsigned)i), 0, t->leaf_ent);
		rc = smart__bt_merge(t, w, a, n, nn, path[1], (unsigned)i);
	} else {
		if (kind == BT_DELETE)
			memset(bt_leaf(t, n, (unsigned)i), 0, t->leaf_ent);
		else
			smart__bt_leaf_put(t, bt_leaf(t, n, (unsigned)i), key,
					   klen, val, vlen);
		smart__bt_seal(t, n);
		rc = smart__bt_post_entry(t, w, a, n, (unsigned)i, &lg);
		rc = smart__bt_write_end(t, w, &lg,
					 smart__bt_unlock(t, w, a, rc));
	}
	if (!rc && spec_on(t, w))
		smart__bt_spec_put(t, smart__bt_key_hash(key, klen),
				   kind == BT_DELETE ?
					   0 :
					   ent_addr(t, a, (unsigned)i));
	return rc;
}

/* The walk reached leaf n (at a) moving right from the leaf a parent read
 * fresh from its blade named (*how: BT_D_FRESH | BT_D_RIGHT): that
 * parent lacks n's separator.  Its splitter may be on its way to put it
 * there, or dead (killed between its leaf's write and the parent's):
 * then nobody would, and every walk under that parent would move right
 * and drop the parent from its cache, for good.  So keep it in s, to put
 * it in after the operation (bt_sep_fix): 1 when kept. */
static int sep_missing(const smart_bt_t *t, struct bt_node *n, smart_gaddr_t a,
		       const struct walk *how, struct sep *s)
{
	if (SMART_M_BT_NO_SEP_FIX ||
	    (how->fl & (BT_D_FRESH | BT_D_RIGHT)) !=
		    (BT_D_FRESH | BT_D_RIGHT) ||
	    n->h.level || (n->h.flags & (BT_F_LOW_INF | BT_F_DEAD))) {
		/* none at the leaf: one an internal level lacks, if any
		 * (its splitter killed the same way one level up) */
		*s = how->miss;
		return how->miss.right != 0;
	}
	s->klen = n->h.low_len;
	memcpy(s->key, bt_low(t, n), s->klen);
	s->right = a;
	s->level = 0;
	return 1;
}

/* Put a separator sep_missing kept into the level above, as its splitter
 * would have (idempotent: the splitter, alive after all, or another
 * helper may be first; and only while its leaf is live).  Holds no lock
 * when called, like the splitter after its leaf's unlock.  Best effort:
 * the operation is done whatever this says. */
static void sep_fix(smart_bt_t *t, smart_worker_t *w, struct sep *s,
		    smart_gaddr_t *path)
{
	size_t mark = smart_scratch_mark(w);
	struct bt_node *n, *nn;
	uint8_t *tmp;
	int rc = op_bufs(t, w, &n, &nn, &tmp);

	if (!rc)
		rc = insert_up(t, w, 0, s->level, 0, s, path, n, nn, tmp, 1);
	if (!rc)
		atomic_fetch_add_explicit(&t->sep_fixes, 1,
					  memory_order_relaxed);
	smart_scratch_release(w, mark);
}

static int write_op(smart_bt_t *t, smart_worker_t *w, enum bt_kind kind,
		    const void *key, size_t klen, const void *val, size_t vlen)
{
	smart_gaddr_t path[BT_HEIGHT_MAX], a = 0;
	struct bt_node *n, *nn;
	smart_hook_fn hook;
	void *hook_arg;
	struct sep s;
	struct walk how = { 0 };
	size_t mark;
	uint8_t *tmp;
	int rc, fix = 0;

	if (!args_ok(t, w, key, klen, val, vlen))
		return SMART_EINVAL;
	hook = smart_ctx_hook(smart_worker_ctx(w), &hook_arg);
	mark = smart_scratch_mark(w);
	rc = op_bufs(t, w, &n, &nn, &tmp);
	if (!rc)
		rc = smart__bt_enter(t, w);
	if (rc)
		goto out;
	rc = lock_leaf(t, w, key, klen, n, &a, path, &how);
	if (!rc)
		fix = sep_missing(t, n, a, &how, &s);
	if (!rc && hook && (rc = hook(w, "bt.write.locked", hook_arg)))
		rc = smart__bt_unlock(t, w, a, rc);
	else if (!rc)
		rc = write_locked(t, w, kind, key, klen, val, vlen, n, nn, tmp,
				  a, path);
	if (!rc && fix)
		sep_fix(t, w, &s, path);
	smart_epoch_exit(w);
out:
	smart_scratch_release(w, mark);
	return rc;
}

int smart_bt_insert(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, BT_INSERT, key, key_len, val, val_len);
}

int smart_bt_update(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, BT_UPDATE, key, key_len, val, val_len);
}

int smart_bt_upsert(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, BT_UPSERT, key, key_len, val, val_len);
}

int smart_bt_delete(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len)
{
	return write_op(t, w, BT_DELETE, key, key_len, NULL, 0);
}

/* Copy entry e's value out for a search. */
static int value_out(const smart_bt_t *t, const struct bt_leaf_ent *e,
		     void *buf, size_t cap, size_t *val_len)
{
	*val_len = e->vlen;
	if (e->vlen > cap)
		return SMART_ERANGE;
	if (e->vlen)
		memcpy(buf, e->kv + t->key_max, e->vlen);
	return 0;
}

/* Speculative lookup: read only the entry cached for the key (one small
 * READ instead of a 1 KiB leaf) and trust it if it checks alone (its crc)
 * and holds the key.  Why that is the key's value now: an entry holds
 * a key only in the leaf that covers it (a split clears the slots it
 * moves in the same write that narrows the leaf), and a whole entry,
 * checked, was written at once by the key's writer.  1: answered; 0: go
 * the long way (the cached address is forgotten); < 0: an error. */
static int spec_search(smart_bt_t *t, smart_worker_t *w, uint64_t h,
		       const void *key, size_t klen, struct bt_leaf_ent *e,
		       void *buf, size_t cap, size_t *val_len)
{
	smart_gaddr_t ea = smart__bt_spec_get(t, h);
	int rc;

	if (!ea) {
		smart_stat_add(w, SMART_STAT_SPEC_MISSES, 1);
		return 0;
	}
	rc = smart_read_sync(w, ea, t->leaf_ent, e);
	if (rc)
		return rc;
	if (smart__bt_ent_ok(t, e) &&
	    (SMART_M_BT_NO_SPEC_KEY ||
	     (e->klen == klen && !memcmp(e->kv, key, klen)))) {
		smart_stat_add(w, SMART_STAT_SPEC_HITS, 1);
		rc = value_out(t, e, buf, cap, val_len);
		return rc ? rc : 1;
	}
	smart_stat_add(w, SMART_STAT_SPEC_MISSES, 1);
	smart__bt_spec_put(t, h, 0);
	return 0;
}

int smart_bt_search(smart_bt_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, void *buf, size_t cap, size_t *val_len)
{
	smart_gaddr_t path[BT_HEIGHT_MAX], a;
	struct bt_node *n;
	struct sep s;
	struct walk how = { 0 };
	uint64_t h = 0;
	size_t mark;
	int rc, i, f, fix = 0;

	if (!args_ok(t, w, key, key_len, NULL, 0) || !val_len || (!buf && cap))
		return SMART_EINVAL;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, t->node_size, (void **)&n);
	/* the speculative read first, outside the epoch section: it trusts
	 * the entry it reads only by the entry's own crc (seeded by the
	 * tree) and key, never an address read from a node, so it needs no
	 * protection from reuse (docs/bt.md §6), and a tree over several
	 * blades does not wait for the section's announcement for it */
	if (!rc && spec_on(t, w)) {
		h = smart__bt_key_hash(key, key_len);
		rc = spec_search(t, w, h, key, key_len, (struct bt_leaf_ent *)n,
				 buf, cap, val_len);
		if (rc == 1) {
			rc = 0;
			goto out;
		}
	}
	if (!rc)
		rc = smart__bt_enter(t, w);
	if (rc)
		goto out;
	rc = descend(t, w, key, key_len, 0, 0, n, &a, path, &how);
	if (!rc) {
		fix = sep_missing(t, n, a, &how, &s);
		i = leaf_find(t, n, key, key_len, &f);
		if (i < 0) {
			rc = SMART_ENOENT;
		} else if (!smart__bt_ent_ok(t, bt_leaf(t, n, (unsigned)i))) {
			/* the node checks but this entry does not: no
			 * writer of ours made it */
			rc = SMART_EPROTO;
		} else {
			rc = value_out(t, bt_leaf(t, n, (unsigned)i), buf, cap,
				       val_len);
			if (h)
				smart__bt_spec_put(t, h,
						   ent_addr(t, a, (unsigned)i));
		}
	}
	if (fix && (!rc || rc == SMART_ENOENT))
		sep_fix(t, w, &s, path);
	smart_epoch_exit(w);
out:
	smart_scratch_release(w, mark);
	return rc;
}

static void be64(uint8_t *k, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		k[i] = (uint8_t)v;
}

int smart_bt_insert_u64(smart_bt_t *t, smart_worker_t *w, uint64_t key,
			const void *val, size_t val_len)
{
	uint8_t k[8];

	be64(k, key);
	return smart_bt_insert(t, w, k, 8, val, val_len);
}

int smart_bt_search_u64(smart_bt_t *t, smart_worker_t *w, uint64_t key,
			void *buf, size_t cap, size_t *val_len)
{
	uint8_t k[8];

	be64(k, key);
	return smart_bt_search(t, w, k, 8, buf, cap, val_len);
}

int smart__bt_descend(smart_bt_t *t, smart_worker_t *w, const void *key,
		      size_t klen, struct bt_node *n, smart_gaddr_t *out,
		      smart_gaddr_t *parent)
{
	smart_gaddr_t path[BT_HEIGHT_MAX];
	int rc = descend(t, w, key, klen, 0, 0, n, out, path, NULL);

	*parent = path[1];
	return rc;
}

int smart__bt_enter(smart_bt_t *t, smart_worker_t *w)
{
	int rc = smart_epoch_enter(w, t->home);

	/* the announcement goes out in front of the first batch to the home
	 * blade: nodes on other blades are read only after it did */
	if (!rc && t->nblades > 1 && (rc = smart_sync(w)))
		smart_epoch_exit(w);
	return rc;
}
