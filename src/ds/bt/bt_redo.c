/*
 * Smart-BT redo records: what a lock holder that died inside its WRITE
 * left half written is finished by whoever takes its lock over
 * (docs/bt.md §4).
 *
 * Why a log: a node's CRC tells a reader that a node is torn, not what it
 * held, and a holder killed while its WRITE lands leaves the node torn for
 * good.  So every write under a lock is first written whole, with where
 * it goes, to a redo record on the node's blade, on the same QP: RC order
 * lands the record before any byte of the node, so a node is torn only if
 * its record is complete.
 *
 * How a taker finds it: each tree object claims, on each blade, a slot of
 * the blade's redo directory naming an area of BT_RECS records.  A writer
 * takes a free record, then stamps each lock word it writes under with
 * (lease id, directory slot, record, sequence), writes the record, and
 * only then the node.  Whoever takes over a dead holder's word reads the
 * directory slot and record its stamp names (before the CAS: an area is
 * adopted only when no word holds a stamp of its records, so it is not
 * reused under a taker that has yet to CAS), and redoes each patch of
 * a record whose stamp is still in the patch's word: nobody wrote the node
 * since, so rewriting the logged bytes finishes exactly that write.  A
 * merge logs its three nodes in one record written to each blade
 * concerned, all landed before any node is touched, so the three are
 * redone together or not at all.
 *
 * Invariants: a record, once its writer's word is stamped with it, is
 * rewritten only by the same tree object after that write completed (the
 * record is given back after the unlock's sync); a stamp's sequence
 * number changes with every logged write; a directory slot names at most
 * one live object's id.
 */
#include <stdlib.h>

#include "ds/bt/bt_internal.h"


static size_t patch_bytes(unsigned len)
{
	return sizeof(struct bt_patch_rec) + ((len + 7u) & ~7u);
}

static size_t area_len(const smart_bt_t *t)
{
	return (size_t)BT_RECS * t->rec_size;
}

static smart_gaddr_t dir_entry(const smart_bt_t *t, unsigned b, unsigned s)
{
	return smart_gaddr(t->blades[b], t->dir_off[b] + 8 * (uint64_t)s);
}

static smart_gaddr_t rec_addr(const smart_bt_t *t, unsigned b, uint64_t area,
			      unsigned idx)
{
	return smart_gaddr(t->blades[b], area + (uint64_t)idx * t->rec_size);
}

/* ---- writing ------------------------------------------------------------ */

/* A free record; yields while all are in use.  rec_busy is the one word
 * the object's writers share for this (its own cache line). */
static unsigned rec_take(smart_bt_t *t, smart_worker_t *w)
{
	uint32_t v, bit;

	for (;;) {
		v = atomic_load(&t->rec_busy);
		if (v == (uint32_t)((UINT64_C(1) << BT_RECS) - 1)) {
			atomic_fetch_add_explicit(&t->rec_waits, 1,
						  memory_order_relaxed);
			smart_task_yield(w);	/* all writing: one ends soon */
			continue;
		}
		bit = (uint32_t)__builtin_ctz(~v);
		if (atomic_compare_exchange_weak(&t->rec_busy, &v,
						 v | 1u << bit))
			return bit;
	}
}

static void rec_put(smart_bt_t *t, unsigned rec)
{
	atomic_fetch_and(&t->rec_busy, ~(1u << rec));
}

/* Post patch p's bytes [from, to). */
static int post_part(smart_worker_t *w, const struct bt_patch *p,
		     unsigned from, unsigned to)
{
	if (from >= to)
		return 0;
	return smart_write(w, smart_gaddr_add(p->node, p->off + from),
			   (const uint8_t *)p->src + from, to - from);
}

/* The patches, in order, waiting between two on different blades (the
 * callers' orders: a split's new node before the node naming it, a
 * merge's leaf before its neighbour forwards to it).  With a test's hook,
 * the first patch lands half, then the hook runs ("bt.write.torn", or
 * "bt.merge.torn" in a merge: a test kills the process there), then the
 * rest. */
static int post_patches(smart_worker_t *w, const struct bt_patch *p,
			unsigned n)
{
	void *arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &arg);
	unsigned i, half = 0;
	int rc = 0;

	if (hook) {
		half = (p[0].len / 2) & ~7u;
		rc = post_part(w, &p[0], 0, half);
		if (!rc)
			rc = smart_sync(w);
		if (!rc)
			(void)hook(w, n == BT_PATCHES_MAX ? "bt.merge.torn" :
				   "bt.write.torn", arg);
	}
	for (i = 0; !rc && i < n; i++) {
		if (i && smart_gaddr_blade(p[i].node) !=
			 smart_gaddr_blade(p[i - 1].node))
			rc = smart_sync(w);
		if (!rc)
			rc = post_part(w, &p[i], i ? 0 : half, p[i].len);
	}
	return rc;
}

/* Lay the record out in buf: header, then each patch and its bytes. */
static void rec_build(const struct bt_patch *p, unsigned n,
		      const uint64_t *lw, const uint64_t *stamp, uint8_t *buf,
		      size_t len)
{
	struct bt_rec *r = (struct bt_rec *)buf;
	size_t off = sizeof(*r);
	unsigned i;

	for (i = 0; i < n; i++) {
		struct bt_patch_rec *pr = (struct bt_patch_rec *)(buf + off);
		size_t pad = patch_bytes(p[i].len) - sizeof(*pr) - p[i].len;

		pr->node = p[i].node;
		pr->word = lw[i];
		pr->stamp = stamp[i];
		pr->off = p[i].off;
		pr->len = p[i].len;
		memcpy(pr + 1, p[i].src, p[i].len);
		memset((uint8_t *)(pr + 1) + p[i].len, 0, pad);
		off += patch_bytes(p[i].len);
	}
	r->len = (uint32_t)len;
	r->npatch = n;
	r->rsvd = 0;
	r->crc = smart_crc32c(0, buf + 4, len - 4);
}

int smart__bt_write_logged(smart_bt_t *t, smart_worker_t *w,
			   const struct bt_patch *p, unsigned n,
			   struct bt_wlog *lg)
{
	uint64_t lw[BT_PATCHES_MAX], *stamp;
	size_t len = sizeof(struct bt_rec);
	unsigned i, j, blades = 0;
	uint8_t *buf;
	int rc, b;

	lg->rec = BT_REC_NONE;
	lg->buf = NULL;
	if (SMART_M_BT_NO_LOCK)
		return post_patches(w, p, n);
	if (!n || n > BT_PATCHES_MAX)
		return SMART_EINVAL;
	for (i = 0; i < n; i++)
		len += patch_bytes(p[i].len);
	if (len > t->rec_size)
		return SMART_EINVAL;
	/* the caller's scratch mark frees it, after write_end */
	rc = smart_scratch_alloc(w, len + 8 * BT_PATCHES_MAX, (void **)&buf);
	if (rc)
		return rc;
	stamp = (uint64_t *)(buf + ((len + 7) & ~(size_t)7));
	lg->rec = rec_take(t, w);
	/* the record's own sequence: only its holder touches it */
	t->rec_seq[lg->rec]++;
	for (i = 0; !rc && i < n; i++) {
		rc = smart__bt_lock_word(t, p[i].node, &lw[i], &stamp[i]);
		stamp[i] = BT_W_MAKE(BT_W_ID(stamp[i]), BT_W_SLOT(stamp[i]),
				     lg->rec, t->rec_seq[lg->rec]);
	}
	if (rc)
		return rc;
	rec_build(p, n, lw, stamp, buf, len);
	lg->buf = buf;
	/* stamps, then the record on each blade concerned (once each) */
	for (i = 0; !rc && i < n; i++) {
		for (j = 0; j < i && lw[j] != lw[i]; j++)
			;
		if (j == i)
			rc = smart_write(w, lw[i], &stamp[i], 8);
	}
	if (!rc && SMART_M_BT_LOG_AFTER)
		rc = post_patches(w, p, n);
	for (i = 0; !rc && i < n; i++) {
		for (j = 0; j < i && smart_gaddr_blade(p[j].node) !=
				     smart_gaddr_blade(p[i].node); j++)
			;
		if (j < i)
			continue;
		b = smart__bt_blade_index(t, smart_gaddr_blade(p[i].node));
		blades++;
		rc = smart_write(w, rec_addr(t, (unsigned)b, t->area[b],
					     lg->rec), buf, len);
	}
	/* several blades, several QPs: every record lands before any node
	 * is touched, so that a merge is redone whole or not at all */
	if (!rc && blades > 1)
		rc = smart_sync(w);
	return rc || SMART_M_BT_LOG_AFTER ? rc : post_patches(w, p, n);
}

/* The patches of a record (in snap), each as a bt_patch pointing into
 * it; *stamps their stamps. */
static unsigned rec_patches(const uint8_t *snap, struct bt_patch *p,
			    uint64_t *word, uint64_t *stamp)
{
	const struct bt_rec *r = (const struct bt_rec *)snap;
	size_t off = sizeof(*r);
	unsigned i;

	for (i = 0; i < r->npatch; i++) {
		const struct bt_patch_rec *pr = (const void *)(snap + off);

		p[i] = (struct bt_patch){ pr->node, pr->off, pr->len, pr + 1 };
		word[i] = pr->word;
		stamp[i] = pr->stamp;
		off += patch_bytes(pr->len);
	}
	return r->npatch;
}

/* Our logged write failed after it began, and we are not fenced: the
 * words still stamped with it are ours, and no peer will redo it; finish
 * it from our record (rewriting the bytes we meant) and release them. */
static int finish_own(smart_bt_t *t, smart_worker_t *w, const uint8_t *buf)
{
	static const uint64_t zero;
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX], base, got;
	unsigned i, j, n = rec_patches(buf, p, word, stamp), held = 0;
	int rc = 0, rc2;

	for (i = 0; !rc && i < n; i++) {
		for (j = 0; j < i && word[j] != word[i]; j++)
			;
		if (j < i) {
			held |= (held >> j & 1u) << i;
			continue;
		}
		rc = smart__bt_lock_word(t, p[i].node, &word[i], &base);
		if (!rc)
			rc = smart_cas_sync(w, word[i], stamp[i], base, &got);
		if (!rc && got == stamp[i])
			held |= 1u << i;	/* else released: it landed */
	}
	for (i = 0; !rc && i < n; i++)
		if (held >> i & 1u)
			rc = post_part(w, &p[i], 0, p[i].len);
	for (i = 0; i < n; i++)
		if (held >> i & 1u)
			rc2 = smart_write(w, word[i], &zero, 8),
			rc = rc ? rc : rc2;
	rc2 = smart_sync(w);
	return rc ? rc : rc2;
}

int smart__bt_write_end(smart_bt_t *t, smart_worker_t *w,
			const struct bt_wlog *lg, int rc)
{
	if (lg->rec >= BT_RECS)
		return rc;
	/* failed after it began: finish it ourselves; if we cannot (we are
	 * fenced, or it fails again), keep the record for the peers who
	 * take our words over */
	if (rc && lg->buf && (smart_ctx_fenced(smart_worker_ctx(w)) ||
			      finish_own(t, w, lg->buf)))
		return rc;
	rec_put(t, lg->rec);
	return rc;
}

/* ---- redoing ------------------------------------------------------------ */

/* Is record idx in snap well formed for this tree (a peer's bytes), each
 * patch naming its node's lock word and a stamp of that record? */
static int rec_ok(const smart_bt_t *t, const uint8_t *snap, unsigned idx)
{
	const struct bt_rec *r = (const struct bt_rec *)snap;
	const struct bt_patch_rec *first = (const void *)(r + 1);
	size_t off = sizeof(*r);
	unsigned i;

	if (r->len < off + sizeof(*first) || r->len > t->rec_size ||
	    !r->npatch || r->npatch > BT_PATCHES_MAX ||
	    r->crc != smart_crc32c(0, snap + 4, r->len - 4))
		return 0;
	for (i = 0; i < r->npatch; i++) {
		const struct bt_patch_rec *p = (const void *)(snap + off);
		smart_gaddr_t lw;
		uint64_t base;

		if (off + sizeof(*p) > r->len || !p->len ||
		    p->len > t->node_size || p->off > t->node_size - p->len ||
		    off + patch_bytes(p->len) > r->len ||
		    (!SMART_M_BT_NO_REC_CHECK &&
		     (!BT_W_ID(p->stamp) || BT_W_REC(p->stamp) != idx ||
		      BT_W_SEQ(p->stamp) != BT_W_SEQ(first->stamp))) ||
		    smart__bt_lock_word(t, p->node, &lw, &base) ||
		    lw != p->word)
			return 0;
		off += patch_bytes(p->len);
	}
	return 1;
}

/* Does the record name word lw with stamp `dead`? */
static int rec_names(const uint8_t *snap, smart_gaddr_t lw, uint64_t dead)
{
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX];
	unsigned i, n = rec_patches(snap, p, word, stamp);

	for (i = 0; i < n; i++)
		if (word[i] == lw && stamp[i] == dead)
			return 1;
	return 0;
}

/* Read record idx of the area dir slot s names on blade b, if the slot
 * still names client id: *have 1 when snap holds a well-formed one. */
static int snap_read(smart_bt_t *t, smart_worker_t *w, unsigned b,
		     unsigned s, uint16_t id, unsigned idx, uint8_t *snap,
		     int *have)
{
	uint64_t e;
	int rc;

	*have = 0;
	rc = smart_read_sync(w, dir_entry(t, b, s), 8, snap);
	if (rc)
		return rc;
	memcpy(&e, snap, 8);
	if (BT_DIR_ID(e) != id || !BT_DIR_AREA(e) || (BT_DIR_AREA(e) & 7))
		return 0;	/* adopted: nothing in it was current */
	rc = smart_read_sync(w, rec_addr(t, b, BT_DIR_AREA(e), idx),
			     t->rec_size, snap);
	if (rc == SMART_EREMOTE)
		return 0;	/* a bogus area: nothing we can redo */
	if (!rc)
		*have = rec_ok(t, snap, idx);
	return rc;
}

int smart__bt_redo_snap(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			uint64_t dead, void *snap, int *have)
{
	int b = smart__bt_blade_index(t, smart_gaddr_blade(lw));
	int rc;

	*have = 0;
	if (b < 0 || BT_W_REC(dead) >= BT_RECS)
		return 0;	/* nothing logged under it: nothing written */
	rc = snap_read(t, w, (unsigned)b, BT_W_SLOT(dead), BT_W_ID(dead),
		       BT_W_REC(dead), snap, have);
	if (!rc && *have && !rec_names(snap, lw, dead))
		*have = 0;	/* an older record: that write completed */
	return rc;
}

int smart__bt_redo(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
		   const void *snap)
{
	static const uint64_t zero;
	struct bt_patch p[BT_PATCHES_MAX], mine[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX], base, got;
	smart_gaddr_t taken[BT_PATCHES_MAX];
	unsigned i, k, n = rec_patches(snap, p, word, stamp), m = 0;
	unsigned ntaken = 0;
	struct bt_wlog lg;
	int rc = 0, rc2, ours;

	lg.rec = BT_REC_NONE;
	/* take over every word still stamped as the record says: nobody
	 * wrote those nodes since; the others were done, or redone */
	for (i = 0; !rc && i < n; i++) {
		ours = word[i] == lw;
		for (k = 0; k < ntaken && !ours; k++)
			ours = taken[k] == word[i];
		if (!ours) {
			rc = smart__bt_lock_word(t, p[i].node, &word[i],
						 &base);
			if (!rc)
				rc = smart_cas_sync(w, word[i], stamp[i], base,
						    &got);
			if (rc || got != stamp[i])
				continue;
			taken[ntaken++] = word[i];
		}
		mine[m++] = p[i];
	}
	/* redone through a record of ours: dying inside it leaves our
	 * record for the next taker, as any write under a lock */
	if (!rc && m)
		rc = smart__bt_write_logged(t, w, mine, m, &lg);
	/* each release behind its node's write, on its blade's QP */
	for (k = 0; !rc && k < ntaken; k++)
		rc = smart_write(w, taken[k], &zero, 8);
	rc2 = smart_sync(w);
	if (rc || rc2)
		return rc ? rc : rc2;	/* words and record stay: we are
					 * fenced, and our takers redo it */
	atomic_fetch_add_explicit(&t->repairs, 1, memory_order_relaxed);
	return smart__bt_write_end(t, w, &lg, 0);
}

/* ---- areas -------------------------------------------------------------- */

/* Does a record dead client id left in the area of slot s on blade b
 * still stamp a word (a write of it perhaps half done)?  Then the area is
 * not adopted: the word's taker redoes that write, through a record of
 * its own, from this area, which must stay as it is till then.  We do
 * not redo it here: a redo is logged, and we have no area of our own yet
 * (t->area[b] 0 would put the record over the blade's superblock).  The
 * answer only goes from 1 to 0: a dead client stamps nothing new. */
static int slot_dirty(smart_bt_t *t, smart_worker_t *w, unsigned b,
		      unsigned s, uint16_t id, uint8_t *snap, int *dirty)
{
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX], v;
	unsigned idx, i, n;
	int rc = 0, have;

	*dirty = 0;
	for (idx = 0; !rc && !*dirty && idx < BT_RECS; idx++) {
		rc = snap_read(t, w, b, s, id, idx, snap, &have);
		n = !rc && have ? rec_patches(snap, p, word, stamp) : 0;
		for (i = 0; !rc && !*dirty && i < n; i++) {
			rc = smart_read_sync(w, word[i], 8, &v);
			*dirty = !rc && v == stamp[i];
		}
	}
	return rc;
}

/* Claim a slot of blade b's directory: a free one with an area, else one
 * of a dead client none of whose records is current (slot_dirty), else an
 * empty one with a new area.  Reusing before allocating matters: an
 * area a killed process allocated took its allocator's cache with it. */
static int claim(smart_bt_t *t, smart_worker_t *w, unsigned b, uint8_t *snap,
		 uint64_t *dir)
{
	uint16_t me = t->lease[b];
	unsigned pass, k, s;
	int rc, dirty = 0;

	rc = smart_read_sync(w, dir_entry(t, b, 0), 8 * BT_DIR_SLOTS, dir);
	for (pass = 0; !rc && pass < 3; pass++) {
		for (k = 0; !rc && k < BT_DIR_SLOTS; k++) {
			uint64_t e, got, area;
			smart_gaddr_t a;
			int fresh = 0;

			s = (me + k) % BT_DIR_SLOTS;
			e = dir[s];
			area = BT_DIR_AREA(e);
			if ((pass == 0 && (BT_DIR_ID(e) || !area)) ||
			    (pass == 2 && e) ||
			    (pass == 1 &&
			     (!BT_DIR_ID(e) || BT_DIR_ID(e) == me ||
			      smart_lease_alive(w, t->blades[b],
						BT_DIR_ID(e)) != 0)))
				continue;
			if (pass == 1 &&
			    (rc = slot_dirty(t, w, b, s, BT_DIR_ID(e), snap,
					     &dirty)))
				break;
			if (pass == 1 && dirty && !SMART_M_BT_ADOPT_DIRTY)
				continue;
			if (!area || (area & 7)) {
				rc = smart_alloc(w, t->blades[b],
						 area_len(t), &a);
				area = smart_gaddr_off(a);
				fresh = 1;
			}
			if (!rc)
				rc = smart_cas_sync(w, dir_entry(t, b, s), e,
						    BT_DIR_MAKE(me, area),
						    &got);
			if (!rc && got == e) {
				t->dslot[b] = (uint16_t)s;
				t->area[b] = area;
				return 0;
			}
			if (fresh)
				(void)smart_free(w, smart_gaddr(t->blades[b],
								area),
						 area_len(t));
		}
	}
	return rc ? rc : SMART_EBUSY;	/* 1024 live objects on the blade */
}

int smart__bt_redo_spares(smart_bt_t *t, smart_worker_t *w)
{
	smart_gaddr_t a;
	unsigned b, k, s;
	uint64_t got;
	int rc = 0;

	for (b = 0; !rc && b < t->nblades; b++) {
		for (k = 1; !rc && k < BT_AREAS_SPARE + 1; k++) {
			s = (t->dslot[b] + k) % BT_DIR_SLOTS;
			rc = smart_alloc(w, t->blades[b], area_len(t), &a);
			if (!rc)
				rc = smart_cas_sync(w, dir_entry(t, b, s), 0,
						    smart_gaddr_off(a), &got);
			if (!rc && got)
				rc = SMART_EPROTO;	/* a new tree's? */
		}
	}
	return rc;
}

int smart__bt_redo_claim(smart_bt_t *t, smart_worker_t *w)
{
	size_t mark = smart_scratch_mark(w);
	uint8_t *snap;
	uint64_t *dir;
	unsigned b;
	int rc;

	t->rec_size = (unsigned)((sizeof(struct bt_rec) + BT_PATCHES_MAX *
				  patch_bytes(t->node_size) + 63) & ~63u);
	rc = smart_scratch_alloc(w, t->rec_size, (void **)&snap);
	if (!rc)
		rc = smart_scratch_alloc(w, 8 * BT_DIR_SLOTS, (void **)&dir);
	for (b = 0; !rc && b < t->nblades; b++)
		rc = claim(t, w, b, snap, dir);
	if (rc)
		smart__bt_redo_release(t, w);
	smart_scratch_release(w, mark);
	return rc;
}

void smart__bt_redo_release(smart_bt_t *t, smart_worker_t *w)
{
	unsigned b;
	uint64_t got;

	for (b = 0; w && b < t->nblades; b++) {
		if (!t->area[b])
			continue;
		/* free for the next object, area kept: all our writes are
		 * done, nothing in it needs redoing */
		(void)smart_cas_sync(w, dir_entry(t, b, t->dslot[b]),
				     BT_DIR_MAKE(t->lease[b], t->area[b]),
				     t->area[b], &got);
		t->area[b] = 0;
	}
}

/* Does dir slot s name an area that no slot before it names (a word a
 * peer could have set: aligned, and each area freed once)? */
static int area_once(const uint64_t *dir, unsigned s)
{
	uint64_t area = BT_DIR_AREA(dir[s]);
	unsigned k;

	if (!area || (area & 7))
		return 0;
	for (k = 0; k < s; k++)
		if (BT_DIR_AREA(dir[k]) == area)
			return 0;
	return 1;
}

int smart__bt_redo_drop(smart_bt_t *t, smart_worker_t *w, unsigned b)
{
	size_t mark = smart_scratch_mark(w);
	uint64_t *dir;
	unsigned s;
	int rc = smart_scratch_alloc(w, 8 * BT_DIR_SLOTS, (void **)&dir);

	if (!rc)
		rc = smart_read_sync(w, dir_entry(t, b, 0), 8 * BT_DIR_SLOTS,
				     dir);
	for (s = 0; !rc && s < BT_DIR_SLOTS; s++)
		if (area_once(dir, s)) {
			rc = smart_free(w, smart_gaddr(t->blades[b],
						       BT_DIR_AREA(dir[s])),
					area_len(t));
			if (rc == SMART_EINVAL)
				rc = 0;	/* a peer's word, not a block: the
					 * rest of the drop goes on */
		}
	if (!rc)
		t->area[b] = 0;
	smart_scratch_release(w, mark);
	return rc;
}
