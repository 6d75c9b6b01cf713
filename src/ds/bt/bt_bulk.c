/*
 * Smart-BT bulk load: an empty tree filled bottom-up from sorted input
 * (docs/bt.md §5).
 *
 * Leaves are filled left to right to a fill factor and written as they
 * fill (each one's right sibling is allocated first, so that it can point
 * there); the low fence of every node is kept, with its address, in a
 * local list per level, from which the level above is built the same way,
 * up to a top level that one node can name (inner_cap + 1 children).
 * Nothing is visible until the end: the root, a leaf (a few entries there
 * are merged in), is held locked throughout, and is then rewritten in one
 * WRITE as the parent of the top level's nodes (or, when everything fits
 * one leaf, as that leaf): no root with a single child, no level more than
 * the input needs.  The root stays the root (the descriptor does not change):
 * a reader holding its address descends into the new nodes; a writer
 * that waited for its lock finds it is no leaf any more and descends
 * again (write_op); a split of a top node puts its separator into the
 * root like any split.
 *
 * Invariants: an error before the root's WRITE leaves the tree as it was
 * (every node built is freed); the input must be strictly ascending,
 * with keys of 1..key_max and values of 0..val_max bytes (SMART_EINVAL
 * otherwise, before anything is published); the tree must be one leaf
 * (SMART_EEXIST otherwise), whose entries are merged with the input (a
 * key in both: SMART_EEXIST).
 */
#include <stdlib.h>

#include "ds/bt/bt_internal.h"

/* The nodes of one level: each one's low fence and address. */
struct lvl {
	uint8_t *fence; /* n x (2 + key_max): length, then bytes */
	smart_gaddr_t *addr;
	size_t n, room;
};

static int lvl_add(const smart_bt_t *t, struct lvl *L, smart_gaddr_t a)
{
	if (L->n == L->room) {
		size_t room = L->room ? 2 * L->room : 64;
		uint8_t *f = realloc(L->fence, room * (2 + t->key_max));
		smart_gaddr_t *ad;

		if (!f)
			return SMART_ENOMEM;
		L->fence = f;
		ad = realloc(L->addr, room * sizeof(*ad));
		if (!ad)
			return SMART_ENOMEM;
		L->addr = ad;
		L->room = room;
	}
	L->addr[L->n++] = a;
	return 0;
}

/* A new node at the end of L's list (freed again when the list cannot
 * grow). */
static int lvl_new(smart_bt_t *t, smart_worker_t *w, struct lvl *L,
		   smart_gaddr_t *a)
{
	int rc = smart__bt_node_alloc(t, w, a);

	if (!rc && (rc = lvl_add(t, L, *a)))
		(void)smart_free(w, *a, t->node_size);
	return rc;
}

static uint8_t *lvl_fence(const smart_bt_t *t, const struct lvl *L, size_t i,
			  size_t *len)
{
	uint8_t *p = L->fence + i * (2 + t->key_max);

	*len = (size_t)p[0] | (size_t)p[1] << 8;
	return p + 2;
}

static void lvl_set_fence(const smart_bt_t *t, struct lvl *L, size_t i,
			  const void *k, size_t len)
{
	uint8_t *p = L->fence + i * (2 + t->key_max);

	p[0] = (uint8_t)len;
	p[1] = (uint8_t)(len >> 8);
	memcpy(p + 2, k, len);
}

static void lvl_free_nodes(smart_bt_t *t, smart_worker_t *w, struct lvl *L)
{
	size_t i;

	for (i = 0; i < L->n; i++)
		(void)smart_free(w, L->addr[i], t->node_size);
	L->n = 0;
}

/* Node i of level L, with its fences from the list (the first has no
 * low, the last no high) and its sibling, sealed and written. */
static int node_finish(smart_bt_t *t, smart_worker_t *w, struct lvl *L,
		       size_t i, int last, smart_gaddr_t sibling,
		       struct bt_node *n)
{
	size_t len;
	uint8_t *f;

	n->h.flags = 0;
	if (i == 0) {
		n->h.flags |= BT_F_LOW_INF;
	} else {
		f = lvl_fence(t, L, i, &len);
		memcpy(bt_low(t, n), f, len);
		n->h.low_len = (uint16_t)len;
	}
	if (last) {
		n->h.flags |= BT_F_HIGH_INF;
	} else {
		f = lvl_fence(t, L, i + 1, &len);
		memcpy(bt_high(t, n), f, len);
		n->h.high_len = (uint16_t)len;
	}
	n->h.sibling = sibling;
	smart__bt_seal(t, n);
	return smart_write_sync(w, L->addr[i], n, t->node_size);
}

/* The input, checked, merged with what the tree held (its root leaf's
 * entries, sorted): one entry of lookahead from the input. */
struct feed {
	smart_bt_next_fn next;
	void *arg;
	const void *k, *v;
	size_t kl, vl;
	int have; /* 1: k, v hold the next input; -1: ended */
	uint8_t prev[SMART_BT_KEY_MAX];
	size_t prev_len;
	uint64_t count;		  /* input entries taken */
	struct bt_leaf_ent **old; /* the tree's, sorted */
	unsigned nold, oi;
};

static int feed_fill(const smart_bt_t *t, struct feed *fd)
{
	int rc;

	if (fd->have)
		return 0;
	rc = fd->next(fd->arg, &fd->k, &fd->kl, &fd->v, &fd->vl);
	if (rc < 0)
		return rc;
	if (!rc) {
		fd->have = -1;
		return 0;
	}
	if (!fd->k || !fd->kl || fd->kl > t->key_max || fd->vl > t->val_max ||
	    (fd->vl && !fd->v) ||
	    (fd->count &&
	     bt_keycmp(fd->prev, fd->prev_len, fd->k, fd->kl) >= 0))
		return SMART_EINVAL;
	memcpy(fd->prev, fd->k, fd->kl);
	fd->prev_len = fd->kl;
	fd->count++;
	fd->have = 1;
	return 0;
}

/* The next entry in key order: 1, 0 at the end, or an error
 * (SMART_EEXIST: the input has a key the tree held). */
static int feed_next(const smart_bt_t *t, struct feed *fd, const void **k,
		     size_t *kl, const void **v, size_t *vl)
{
	struct bt_leaf_ent *o = fd->oi < fd->nold ? fd->old[fd->oi] : NULL;
	int rc = feed_fill(t, fd), c;

	if (rc)
		return rc;
	if (!o && fd->have < 0)
		return 0;
	c = !o		 ? 1 :
	    fd->have < 0 ? -1 :
			   bt_keycmp(o->kv, o->klen, fd->k, fd->kl);
	if (!c)
		return SMART_EEXIST;
	if (c < 0) {
		*k = o->kv;
		*kl = o->klen;
		*v = o->kv + t->key_max;
		*vl = o->vlen;
		fd->oi++;
		return 1;
	}
	*k = fd->k;
	*kl = fd->kl;
	*v = fd->v;
	*vl = fd->vl;
	fd->have = 0;
	return 1;
}

/* The leaves: per entries each (the last may have fewer, or none when
 * the input is empty: one empty leaf then). */
static int build_leaves(smart_bt_t *t, smart_worker_t *w, struct feed *fd,
			unsigned per, struct lvl *L, struct bt_node *n)
{
	const void *k, *v;
	size_t kl, vl;
	unsigned used = 0;
	smart_gaddr_t na;
	int rc, more;

	rc = lvl_new(t, w, L, &na);
	if (rc)
		return rc;
	smart__bt_node_init(t, n, 0);
	while ((more = feed_next(t, fd, &k, &kl, &v, &vl)) == 1) {
		if (used == per) {
			/* full: the next leaf starts at this key */
			rc = lvl_new(t, w, L, &na);
			if (rc)
				return rc;
			lvl_set_fence(t, L, L->n - 1, k, kl);
			rc = node_finish(t, w, L, L->n - 2, 0, na, n);
			if (rc)
				return rc;
			smart__bt_node_init(t, n, 0);
			used = 0;
		}
		smart__bt_leaf_put(t, bt_leaf(t, n, used++), k, kl, v, vl);
	}
	if (more < 0)
		return more;
	return node_finish(t, w, L, L->n - 1, 1, 0, n);
}

/* The level above `below` (level `level`): per + 1 children a node. */
static int build_inner(smart_bt_t *t, smart_worker_t *w, struct lvl *below,
		       unsigned level, unsigned per, struct lvl *L,
		       struct bt_node *n)
{
	size_t i = 0, j, len;
	smart_gaddr_t a, na = 0;
	int rc;

	rc = lvl_new(t, w, L, &a);
	while (!rc && i < below->n) {
		smart__bt_node_init(t, n, level);
		n->h.leftmost = below->addr[i];
		for (j = i + 1; j < below->n && j <= i + per; j++) {
			struct bt_inner_ent *e = bt_inner(t, n, n->h.count++);
			uint8_t *f = lvl_fence(t, below, j, &len);

			e->child = below->addr[j];
			e->klen = (uint16_t)len;
			memcpy(e->key, f, len);
		}
		i = j;
		if (i < below->n) {
			rc = lvl_new(t, w, L, &na);
			if (!rc) {
				uint8_t *f = lvl_fence(t, below, i, &len);

				lvl_set_fence(t, L, L->n - 1, f, len);
			}
		}
		if (!rc)
			rc = node_finish(t, w, L, L->n - (i < below->n ? 2 : 1),
					 i >= below->n, i < below->n ? na : 0,
					 n);
	}
	return rc;
}

/* The root's new content, in n: the parent (level `level` + 1, both
 * fences unbounded) of the top level's nodes, or, when the input fills
 * only one leaf (its content still in n), that leaf itself, which is
 * then not needed apart. */
static void root_of(smart_bt_t *t, smart_worker_t *w, struct lvl *top,
		    unsigned level, struct bt_node *n)
{
	size_t i, len;

	if (!level && top->n == 1) {
		(void)smart_free(w, top->addr[0], t->node_size);
		top->n = 0;
		return; /* n: the leaf, both fences unbounded */
	}
	smart__bt_node_init(t, n, level + 1);
	n->h.flags = BT_F_LOW_INF | BT_F_HIGH_INF;
	n->h.leftmost = top->addr[0];
	for (i = 1; i < top->n; i++) {
		struct bt_inner_ent *e = bt_inner(t, n, n->h.count++);
		uint8_t *f = lvl_fence(t, top, i, &len);

		e->child = top->addr[i];
		e->klen = (uint16_t)len;
		memcpy(e->key, f, len);
	}
	smart__bt_seal(t, n);
}

/* What the one leaf holds, copied aside (n is rebuilt) and sorted. */
static int keep_old(const smart_bt_t *t, struct bt_node *n, struct feed *fd,
		    void **mem)
{
	size_t ents = (size_t)t->leaf_cap * t->leaf_ent;
	uint8_t *p = malloc(ents + (size_t)t->leaf_cap * sizeof(*fd->old));

	if (!p)
		return SMART_ENOMEM;
	*mem = p;
	fd->old = (struct bt_leaf_ent **)(p + ents);
	fd->nold = smart__bt_leaf_used(t, n, p, fd->old);
	smart__bt_sort_leaf(fd->old, fd->nold);
	return 0;
}

int smart_bt_bulk_load(smart_bt_t *t, smart_worker_t *w, smart_bt_next_fn next,
		       void *arg, unsigned fill_pct, uint64_t *loaded)
{
	struct lvl lv[BT_HEIGHT_MAX];
	struct feed fd = { .next = next, .arg = arg };
	struct bt_node *n;
	void *old = NULL;
	smart_gaddr_t root;
	unsigned level = 0, i, per;
	struct bt_wlog lg = { BT_REC_NONE, NULL };
	size_t mark;
	int rc;

	if (!t || !smart__bt_own(t, w) || !next || fill_pct < 10 ||
	    fill_pct > 100)
		return SMART_EINVAL;
	memset(lv, 0, sizeof(lv));
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, t->node_size, (void **)&n);
	if (rc)
		return rc;
	rc = smart__bt_root_fresh(t, w, &root);
	if (!rc)
		rc = smart__bt_lock(t, w, root);
	if (rc)
		goto out;
	rc = smart__bt_read(t, w, root, n);
	if (!rc && (n->h.level || !bt_is_root(n)))
		rc = SMART_EEXIST; /* more than one leaf */
	if (!rc)
		rc = keep_old(t, n, &fd, &old);
	per = t->leaf_cap * fill_pct / 100;
	if (!rc)
		rc = build_leaves(t, w, &fd, per ? per : 1, &lv[0], n);
	per = t->inner_cap * fill_pct / 100;
	while (!rc && lv[level].n > t->inner_cap + 1u) {
		if (level + 2 > BT_LEVEL_MAX) { /* the root's */
			rc = SMART_ENOSPC;
			break;
		}
		rc = build_inner(t, w, &lv[level], level + 1, per ? per : 1,
				 &lv[level + 1], n);
		level++;
	}
	if (!rc) {
		/* the root becomes the top level's parent: all at once */
		root_of(t, w, &lv[level], level, n);
		rc = smart__bt_post_locked(t, w, root, n, &lg);
	}
	if (rc)
		for (i = 0; i < BT_HEIGHT_MAX; i++)
			lvl_free_nodes(t, w, &lv[i]);
	rc = smart__bt_write_end(t, w, &lg, smart__bt_unlock(t, w, root, rc));
	if (!rc) {
		atomic_store(&t->height, n->h.level + 1u);
		if (loaded)
			*loaded = fd.count;
	}
out:
	for (i = 0; i < BT_HEIGHT_MAX; i++) {
		free(lv[i].fence);
		free(lv[i].addr);
	}
	free(old);
	smart_scratch_release(w, mark);
	return rc;
}
