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
 * since, so rewriting the logged bytes finishes exactly that write.  The
 * taker copies the record into one of its own first and takes the words
 * (dead stamp -> its stamp) only once that copy landed, so that every
 * word names a complete record at every moment, and a taker dying inside
 * its redo is finished by the next.
 *
 * A write spanning blades (a merge) is one record written to each blade
 * concerned.  Blades are QPs with no order between them, so "the record
 * lands before the node" holds per blade only, and a writer dying between
 * two blades' parts leaves stamps and a record on one of them alone: a
 * commit point makes it all or nothing.  Every copy and stamp is waited
 * for, then the first patch's stamp goes into the commit word of the copy
 * on the first patch's blade (the decision copy, named by every copy),
 * then the nodes, the first behind the commit on its QP, the others after
 * a wait.  A taker redoes such a record only when the decision copy holds
 * the commit, and then every patch whose word still holds its stamp; no
 * node was touched before the commit.
 *
 * Invariants: no node byte of a record spanning blades is posted before
 * its commit landed; a record, once its writer's word is stamped with it, is
 * rewritten only by the same tree object after that write completed (the
 * record is given back after the unlock's sync); a record is kept after
 * a failed write (nobody but a taker will finish it) only by a fenced
 * ctx, so that a taker comes (settle); a stamp's sequence
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
			smart_task_yield(w); /* all writing: one ends soon */
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
static int post_part(smart_worker_t *w, const struct bt_patch *p, unsigned from,
		     unsigned to)
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
 * rest; a negative return fails the write there, as a transport error
 * would (the rest never posted). */
static int post_patches(smart_worker_t *w, const struct bt_patch *p, unsigned n)
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
			rc = hook(w,
				  n == BT_PATCHES_MAX ? "bt.merge.torn" :
							"bt.write.torn",
				  arg);
		rc = rc < 0 ? rc : 0; /* a test failing the post there */
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

/* Lay the record out in buf: header (decision copy at, commit 0), then
 * each patch and its bytes. */
static void rec_build(const struct bt_patch *p, unsigned n, const uint64_t *lw,
		      const uint64_t *stamp, smart_gaddr_t at, uint8_t *buf,
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
	r->at = at;
	r->commit = 0;
	r->crc = smart_crc32c(0, buf + 4, len - 4);
}

/* Blade b's part of logged write rec: the stamps of the words on it
 * (each once), then the record, on one QP: the record lands after them. */
static int log_blade(smart_bt_t *t, smart_worker_t *w, const struct bt_patch *p,
		     unsigned n, const uint64_t *lw, const uint64_t *stamp,
		     unsigned b, unsigned rec, const uint8_t *buf, size_t len)
{
	void *arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &arg);
	unsigned i, j;
	int rc = 0;

	for (i = 0; !rc && i < n; i++) {
		if (smart_gaddr_blade(p[i].node) != t->blades[b])
			continue;
		for (j = 0; j < i && lw[j] != lw[i]; j++)
			;
		if (j == i)
			rc = smart_write(w, lw[i], &stamp[i], 8);
	}
	/* a test's seam: the stamps landed, the record not yet posted
	 * ("bt.log.stamped"; return value ignored) */
	if (!rc && hook && !(rc = smart_sync(w)))
		(void)hook(w, "bt.log.stamped", arg);
	return rc ? rc :
		    smart_write(w, rec_addr(t, b, t->area[b], rec), buf, len);
}

/* A test's seam in a write spanning blades: what was posted to one blade
 * has landed, the next blade's part is not posted yet ("bt.log.landed":
 * a test kills the writer there; the return value is ignored). */
static int log_seam(smart_worker_t *w, smart_hook_fn hook, void *arg)
{
	int rc = smart_sync(w);

	if (!rc)
		(void)hook(w, "bt.log.landed", arg);
	return rc;
}

int smart__bt_write_logged(smart_bt_t *t, smart_worker_t *w,
			   const struct bt_patch *p, unsigned n,
			   struct bt_wlog *lg)
{
	uint64_t lw[BT_PATCHES_MAX], *stamp;
	size_t len = sizeof(struct bt_rec);
	smart_gaddr_t at = 0;
	unsigned i, blades = 0, multi = 0;
	smart_hook_fn hook;
	void *hook_arg;
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
	for (i = 1; i < n; i++)
		multi |= smart_gaddr_blade(p[i].node) !=
			 smart_gaddr_blade(p[0].node);
	hook = multi ? smart_ctx_hook(smart_worker_ctx(w), &hook_arg) : NULL;
	if (multi) {
		b = smart__bt_blade_index(t, smart_gaddr_blade(p[0].node));
		at = rec_addr(t, (unsigned)b, t->area[b], lg->rec);
	}
	rec_build(p, n, lw, stamp, at, buf, len);
	lg->buf = buf;
	if (SMART_M_BT_LOG_AFTER)
		rc = post_patches(w, p, n);
	/* stamps, then the record, on each blade concerned, blade by blade
	 * in the tree's order */
	for (b = 0; !rc && b < (int)t->nblades; b++) {
		for (i = 0;
		     i < n && smart_gaddr_blade(p[i].node) != t->blades[b]; i++)
			;
		if (i == n)
			continue;
		rc = log_blade(t, w, p, n, lw, stamp, (unsigned)b, lg->rec, buf,
			       len);
		blades++;
		if (!rc && hook && multi)
			rc = log_seam(w, hook, hook_arg);
	}
	/* several blades, several QPs, no order among them: every copy and
	 * every stamp lands, then the commit, then the nodes (the first on
	 * the commit's QP, the others after a wait: post_patches), so that
	 * a taker on any blade decides alike, from the decision copy, to
	 * redo all of it or none (none was posted) */
	if (!rc && blades > 1)
		rc = smart_sync(w);
	if (!rc && at)
		rc = smart_write(w,
				 smart_gaddr_add(at, offsetof(struct bt_rec,
							      commit)),
				 &stamp[0], 8);
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
 * it from our record (rewriting the bytes we meant) and release them.
 * The words keep the record's stamp until their release (the CAS only
 * looks), so that a finishing that fails anywhere, its release included,
 * leaves what the next try (settle) or a taker finds whole: the words
 * still stamped, the record they name. */
static int finish_own(smart_bt_t *t, smart_worker_t *w, const uint8_t *buf)
{
	static const uint64_t zero;
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX], base, got;
	unsigned i, j, n = rec_patches(buf, p, word, stamp), held = 0;
	int rc = bt_seam(w, "bt.write.finish"), rc2;

	for (i = 0; !rc && i < n; i++) {
		for (j = 0; j < i && word[j] != word[i]; j++)
			;
		if (j < i) {
			held |= (held >> j & 1u) << i;
			continue;
		}
		rc = smart__bt_lock_word(t, p[i].node, &word[i], &base);
		if (!SMART_M_BT_FINISH_TO_BASE)
			base = stamp[i];
		if (!rc)
			rc = smart_cas_sync(w, word[i], stamp[i], base, &got);
		if (!rc && got == stamp[i])
			held |= 1u << i; /* else released: it landed */
	}
	/* (a test's seam: the words checked, the node not yet rewritten;
	 * its hook may fence the ctx there, as its keeper would) */
	rc = rc ? rc : bt_seam(w, "bt.finish.taken");
	for (i = 0; !rc && i < n; i++)
		if (held >> i & 1u)
			rc = post_part(w, &p[i], 0, p[i].len);
	/* (a test's seam: the releases refused, as on a broken QP) */
	rc = rc ? rc : bt_seam(w, "bt.finish.release");
	for (i = 0; !rc && i < n; i++)
		if (held >> i & 1u)
			rc = smart_write(w, word[i], &zero, 8);
	rc2 = smart_sync(w);
	return rc ? rc : rc2;
}

uint64_t smart__bt_settle_ns(smart_worker_t *w, uint16_t blade)
{
	struct smart_blade_info bi;
	uint64_t ms = SMART_LEASE_MS_DEFAULT;

	if (!smart_ctx_blade_info(smart_worker_ctx(w), blade, &bi) &&
	    bi.lease_ms)
		ms = bi.lease_ms;
	return ms * 500000u;
}

/* Our write (record in buf, our stamps) failed after it began: finish it
 * ourselves, retried for half a lease (a broken QP is replaced at the
 * next post).  0: finished, the record may go back.  1: kept, for the
 * takers of the words it stamps — and they take them only from a dead
 * client, so we give our leases up (the ctx fenced and tainted) rather
 * than hold, alive, words nobody will ever release: every writer of
 * those nodes, ours included, would wait for as long as we live. */
static int settle(smart_bt_t *t, smart_worker_t *w, const uint8_t *buf)
{
	const struct bt_patch_rec *p0 = (const void *)(buf +
						       sizeof(struct bt_rec));
	smart_ctx_t *ctx = smart_worker_ctx(w);
	uint64_t until = smart_now_ns() +
			 smart__bt_settle_ns(w, smart_gaddr_blade(p0->node));

	while (!smart_ctx_fenced(ctx)) {
		if (!finish_own(t, w, buf))
			return 0;
		if (SMART_M_BT_FINISH_ONCE || smart_now_ns() >= until)
			break;
		smart_task_yield(w);
	}
	/* the record names our lease ids: our sessions must end without the
	 * BYE that gives them to a newcomer, for whom a taker of those words
	 * would wait as for a live holder */
	if (!SMART_M_BT_KEPT_NO_TAINT)
		(void)smart_ctx_taint(ctx);
	if (!SMART_M_BT_KEPT_NO_FENCE)
		(void)smart_ctx_fence(ctx);
	return 1;
}

int smart__bt_write_end(smart_bt_t *t, smart_worker_t *w,
			const struct bt_wlog *lg, int rc)
{
	if (lg->rec >= BT_RECS)
		return rc;
	/* failed after it began: finish it ourselves, or keep the record
	 * for the peers who take our words over once we are fenced */
	if (rc && lg->buf && settle(t, w, lg->buf))
		return rc;
	rec_put(t, lg->rec);
	return rc;
}

/* ---- redoing ------------------------------------------------------------ */

/* Is record idx in snap well formed for this tree (a peer's bytes), each
 * patch naming its node's lock word and a stamp of that record, its
 * decision copy (if it spans blades) on the first patch's blade?  The
 * commit word is taken out (into *commit) and zeroed, as the crc saw it. */
static int rec_ok(const smart_bt_t *t, uint8_t *snap, unsigned idx,
		  uint64_t *commit)
{
	struct bt_rec *r = (struct bt_rec *)snap;
	const struct bt_patch_rec *first = (const void *)(r + 1);
	size_t off = sizeof(*r);
	unsigned i, multi = 0;

	*commit = r->commit;
	r->commit = 0;
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
		multi |= smart_gaddr_blade(p->node) !=
			 smart_gaddr_blade(first->node);
		off += patch_bytes(p->len);
	}
	/* the decision copy: where the writer put it, aligned, on a blade
	 * of the tree (a bogus one reads as not committed) */
	return multi ? r->at && !(r->at & 7) &&
			       smart_gaddr_blade(r->at) ==
				       smart_gaddr_blade(first->node) :
		       !r->at;
}

/* Record snap (read at ra, well formed, its commit word as read there in
 * *commit) spans blades: was it committed (the decision copy's commit is
 * the first patch's stamp)?  Read before the taker's CAS, like the
 * record: an adopter reuses the area only after it took every word a
 * committed record still stamps, and nothing the dead writer posted
 * lands any more (it is fenced), so the answer never changes. */
static int rec_committed(smart_bt_t *t, smart_worker_t *w, const uint8_t *snap,
			 smart_gaddr_t ra, uint64_t commit, int *yes)
{
	const struct bt_rec *r = (const struct bt_rec *)snap;
	const struct bt_patch_rec *first = (const void *)(r + 1);
	int rc = 0;

	*yes = 1;
	if (!r->at || SMART_M_BT_NO_COMMIT_CHECK)
		return 0; /* one blade: its QP orders everything */
	if (r->at != ra)
		rc = smart_read_sync(
			w,
			smart_gaddr_add(r->at, offsetof(struct bt_rec, commit)),
			8, &commit);
	if (rc == SMART_EREMOTE)
		rc = 0, commit = 0; /* a bogus address: not committed */
	*yes = !rc && commit == first->stamp;
	if (!rc && !*yes)
		atomic_fetch_add_explicit(&t->uncommitted, 1,
					  memory_order_relaxed);
	return rc;
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
static int snap_read(smart_bt_t *t, smart_worker_t *w, unsigned b, unsigned s,
		     uint16_t id, unsigned idx, uint8_t *snap, int *have)
{
	uint64_t e, commit;
	smart_gaddr_t ra;
	int rc;

	*have = 0;
	rc = smart_read_sync(w, dir_entry(t, b, s), 8, snap);
	if (rc)
		return rc;
	memcpy(&e, snap, 8);
	if (BT_DIR_ID(e) != id || !BT_DIR_AREA(e) || (BT_DIR_AREA(e) & 7))
		return 0; /* adopted: nothing in it was current */
	ra = rec_addr(t, b, BT_DIR_AREA(e), idx);
	rc = smart_read_sync(w, ra, t->rec_size, snap);
	if (rc == SMART_EREMOTE)
		return 0; /* a bogus area: nothing we can redo */
	if (!rc && rec_ok(t, snap, idx, &commit))
		rc = rec_committed(t, w, snap, ra, commit, have);
	return rc;
}

int smart__bt_redo_snap(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			uint64_t dead, void *snap, int *have)
{
	int b = smart__bt_blade_index(t, smart_gaddr_blade(lw));
	int rc;

	*have = 0;
	if (b < 0 || BT_W_REC(dead) >= BT_RECS)
		return 0; /* nothing logged under it: nothing written */
	rc = snap_read(t, w, (unsigned)b, BT_W_SLOT(dead), BT_W_ID(dead),
		       BT_W_REC(dead), snap, have);
	if (!rc && *have && !SMART_M_BT_NO_REC_NAMES &&
	    !rec_names(snap, lw, dead))
		*have = 0; /* an older record: that write completed (its
			 * holder died between the stamp and the record) */
	return rc;
}

/* Our copy of a dead holder's record (its patches p, their words, our
 * stamps ours[], our record rec) in buf, written to every blade it
 * concerns and waited for.  A copy spanning blades is born committed
 * (each copy carries the commit): the record it repeats was committed. */
static int redo_log(smart_bt_t *t, smart_worker_t *w, const struct bt_patch *p,
		    unsigned n, const uint64_t *word, const uint64_t *ours,
		    unsigned rec, uint8_t *buf, size_t len)
{
	int b0 = smart__bt_blade_index(t, smart_gaddr_blade(p[0].node));
	smart_gaddr_t at = 0;
	unsigned b, i;
	int rc = 0;

	for (i = 1; i < n; i++)
		if (smart_gaddr_blade(p[i].node) !=
		    smart_gaddr_blade(p[0].node))
			at = rec_addr(t, (unsigned)b0, t->area[b0], rec);
	rec_build(p, n, word, ours, at, buf, len);
	if (at)
		((struct bt_rec *)buf)->commit = ours[0];
	for (b = 0; !rc && b < t->nblades; b++) {
		for (i = 0;
		     i < n && smart_gaddr_blade(p[i].node) != t->blades[b]; i++)
			;
		if (i < n)
			rc = smart_write(w, rec_addr(t, b, t->area[b], rec),
					 buf, len);
	}
	return rc ? rc : smart_sync(w);
}

/* Take patch i's word from its dead stamp to ours[i] (a word an earlier
 * patch shares: as that one went).  *held gets bit i when taken. */
static int redo_take(smart_worker_t *w, const uint64_t *word,
		     const uint64_t *stamp, const uint64_t *ours, unsigned i,
		     unsigned *held)
{
	uint64_t got;
	unsigned j;
	int rc;

	for (j = 0; j < i && word[j] != word[i]; j++)
		;
	if (j < i) {
		*held |= (*held >> j & 1u) << i;
		return 0;
	}
	rc = smart_cas_sync(w, word[i], stamp[i], ours[i], &got);
	if (!rc && got == stamp[i])
		*held |= 1u << i;
	return rc;
}

/* The patches whose words we took (held), posted; each word then
 * released behind its node on its blade's QP, lw kept (as `mine`). */
static int redo_post(smart_worker_t *w, const struct bt_patch *p,
		     const uint64_t *word, unsigned n, unsigned held,
		     smart_gaddr_t lw, uint64_t mine)
{
	static const uint64_t zero;
	struct bt_patch m[BT_PATCHES_MAX];
	unsigned i, j, k = 0;
	int rc = 0;

	for (i = 0; i < n; i++)
		if (held >> i & 1u)
			m[k++] = p[i];
	if (k)
		rc = post_patches(w, m, k);
	for (i = 0; !rc && i < n; i++) {
		for (j = 0; j < i && word[j] != word[i]; j++)
			;
		if (j == i && (held >> i & 1u))
			rc = smart_write(w, word[i],
					 word[i] == lw ? &mine : &zero, 8);
	}
	return rc ? rc : smart_sync(w);
}

/* Our stamps for the patches of a redo through our record rec; the index
 * of the patch whose word is lw and stamp `dead` (n: none). */
static int redo_stamps(smart_bt_t *t, const struct bt_patch *p, unsigned n,
		       uint64_t *word, uint64_t *stamp, unsigned rec,
		       smart_gaddr_t lw, uint64_t dead, uint64_t *ours,
		       unsigned *first)
{
	uint64_t base;
	unsigned i;
	int rc = 0;

	for (i = 0; !rc && i < n; i++) {
		rc = smart__bt_lock_word(t, p[i].node, &word[i], &base);
		ours[i] = BT_W_MAKE(BT_W_ID(base), BT_W_SLOT(base), rec,
				    t->rec_seq[rec]);
	}
	/* the patch of lw under the dead stamp: an older record of the
	 * same index names lw under another (smart__bt_redo_snap refuses
	 * it; the mutant lets it through here too, taken from `dead`) */
	for (*first = 0; *first < n &&
			 (word[*first] != lw ||
			  (stamp[*first] != dead && !SMART_M_BT_NO_REC_NAMES));
	     (*first)++)
		;
	return rc;
}

/* Our redo through record rec (in buf, landed) failed after its first
 * CAS: whatever of its words we took is settled as any write of ours that
 * failed (settle), the record back once finished.  (The mutant that logs
 * after the CASes has no record yet here: it keeps all as before.) */
static int redo_fail(smart_bt_t *t, smart_worker_t *w, unsigned rec,
		     const uint8_t *buf, int rc)
{
	if (!SMART_M_BT_REDO_CAS_FIRST && !settle(t, w, buf))
		rec_put(t, rec);
	return rc;
}

int smart__bt_redo(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
		   uint64_t dead, uint64_t mine, const void *snap)
{
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX];
	uint64_t ours[BT_PATCHES_MAX];
	unsigned i, n = rec_patches(snap, p, word, stamp), held = 0, first;
	unsigned rec;
	size_t len = sizeof(struct bt_rec);
	void *hook_arg;
	smart_hook_fn hook = smart_ctx_hook(smart_worker_ctx(w), &hook_arg);
	uint8_t *buf;
	int rc;

	/* our copy's length from its patches, not the peer's len (which
	 * may run past them: those bytes would be our scratch's) */
	for (i = 0; i < n; i++)
		len += patch_bytes(p[i].len);
	if (SMART_M_BT_REDO_PEER_LEN)
		len = ((const struct bt_rec *)snap)->len;
	rc = smart_scratch_alloc(w, len, (void **)&buf);
	if (rc)
		return rc;
	rec = rec_take(t, w);
	t->rec_seq[rec]++;
	rc = redo_stamps(t, p, n, word, stamp, rec, lw, dead, ours, &first);
	/* our record lands whole before we take the first word: whoever
	 * takes a word over from us finds in it the stamp of a record that
	 * holds its patch (the dead holder's, or ours) and redoes that */
	if (!rc && first < n && !SMART_M_BT_REDO_CAS_FIRST)
		rc = redo_log(t, w, p, n, word, ours, rec, buf, len);
	if (rc || first == n) { /* nothing of ours stamps a word */
		rec_put(t, rec);
		if (rc)
			return rc;
		/* a record not naming lw under `dead`: nothing to redo */
		rc = smart_cas_sync(w, lw, dead, mine, &ours[0]);
		return rc ? rc : ours[0] == dead;
	}
	stamp[first] = dead; /* as it is but in the mutant */
	rc = redo_take(w, word, stamp, ours, first, &held);
	if (rc) /* our CAS may have landed */
		return redo_fail(t, w, rec, buf, rc);
	if (!held) {
		rec_put(t, rec); /* nothing of ours stamps a word */
		return 0;	 /* lw changed */
	}
	/* a test's seam: the first word is ours, the others not tried */
	if (hook)
		(void)hook(w, "bt.redo.first", hook_arg);
	for (i = 0; !rc && i < n; i++)
		if (i != first)
			rc = redo_take(w, word, stamp, ours, i, &held);
	/* a test's seam: the words are ours, no node byte posted */
	if (!rc && hook)
		(void)hook(w, "bt.redo.taken", hook_arg);
	if (!rc && SMART_M_BT_REDO_CAS_FIRST)
		rc = redo_log(t, w, p, n, word, ours, rec, buf, len);
	if (!rc)
		rc = redo_post(w, p, word, n, held, lw, mine);
	if (rc)
		return redo_fail(t, w, rec, buf, rc);
	atomic_fetch_add_explicit(&t->repairs, 1, memory_order_relaxed);
	rec_put(t, rec);
	/* a merge: its dead leaf is retired by whoever finds all of it
	 * landed first (its words released: nothing rewrites R) — us, or
	 * another taker of some of its words finishing after us; a
	 * failure leaks R (counted by the core) */
	if (!SMART_M_BT_NO_REDO_RETIRE)
		(void)smart__bt_dead_finish(t, w, p, n, 0);
	if (hook) /* a test's seam: our redo is done */
		(void)hook(w, "bt.redo.done", hook_arg);
	return 1;
}

/* ---- areas -------------------------------------------------------------- */

/* Does a record dead client id left in the area of slot s on blade b
 * still stamp a word (a write of it perhaps half done)?  Then the area is
 * not adopted: the word's taker redoes that write, through a record of
 * its own, from this area, which must stay as it is till then.  We do
 * not redo it here: a redo is logged, and we have no area of our own yet
 * (t->area[b] 0 would put the record over the blade's superblock).  The
 * answer only goes from 1 to 0: a dead client stamps nothing new. */
static int slot_dirty(smart_bt_t *t, smart_worker_t *w, unsigned b, unsigned s,
		      uint16_t id, uint8_t *snap, int *dirty)
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

/* The merges logged in the area at `area` on blade b whose dead leaf
 * nobody retired (its merger killed between its unlock and its retire,
 * or a taker after its release): retired now (freed at once: now, by a
 * drop).  For adopters and drops; each is retired by whoever claims it
 * first (smart__bt_dead_retire), so a record read again, or a copy of it
 * in a taker's area, retires nothing twice.  A failure leaks. */
static int area_dead(smart_bt_t *t, smart_worker_t *w, unsigned b,
		     uint64_t area, uint8_t *snap, int now)
{
	struct bt_patch p[BT_PATCHES_MAX];
	uint64_t word[BT_PATCHES_MAX], stamp[BT_PATCHES_MAX], commit;
	unsigned idx, n;
	int rc = 0;

	for (idx = 0; rc >= 0 && idx < BT_RECS; idx++) {
		rc = smart_read_sync(w, rec_addr(t, b, area, idx), t->rec_size,
				     snap);
		if (rc == SMART_EREMOTE)
			return 0; /* a bogus area: nothing to retire */
		if (rc || !rec_ok(t, snap, idx, &commit))
			continue;
		n = rec_patches(snap, p, word, stamp);
		rc = smart__bt_dead_finish(t, w, p, n, now);
	}
	return rc < 0 ? rc : 0;
}

/* Claim a slot of blade b's directory: a free one with an area, else one
 * of a dead client none of whose records is current (slot_dirty), else an
 * empty one with a new area.  Reusing before allocating matters: an
 * area a killed process allocated took its allocator's cache with it. */
static int claim(smart_bt_t *t, smart_worker_t *w, unsigned b, uint8_t *snap,
		 uint64_t *dir, int *adopted)
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
				rc = smart_alloc(w, t->blades[b], area_len(t),
						 &a);
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
				*adopted = pass == 1;
				return 0;
			}
			if (fresh)
				(void)smart_free(w,
						 smart_gaddr(t->blades[b],
							     area),
						 area_len(t));
		}
	}
	return rc ? rc : SMART_EBUSY; /* 1024 live objects on the blade */
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
				rc = SMART_EPROTO; /* a new tree's? */
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
	int rc, adopted[SMART_BT_BLADES_MAX] = { 0 };

	t->rec_size = (unsigned)((sizeof(struct bt_rec) +
				  BT_PATCHES_MAX * patch_bytes(t->node_size) +
				  63) &
				 ~63u);
	rc = smart_scratch_alloc(w, t->rec_size, (void **)&snap);
	if (!rc)
		rc = smart_scratch_alloc(w, 8 * BT_DIR_SLOTS, (void **)&dir);
	for (b = 0; !rc && b < t->nblades; b++)
		rc = claim(t, w, b, snap, dir, &adopted[b]);
	if (rc)
		smart__bt_redo_release(t, w);
	/* a dead object's area: the retires its merges still owe (a
	 * failure leaks those leaves, the open goes on) */
	for (b = 0; !rc && b < t->nblades; b++)
		if (adopted[b] && !SMART_M_BT_NO_ADOPT_RETIRE)
			(void)area_dead(t, w, b, t->area[b], snap, 0);
	smart_scratch_release(w, mark);
	return rc;
}

void smart__bt_redo_release(smart_bt_t *t, smart_worker_t *w)
{
	unsigned b;
	uint64_t got;

	/* a record kept for our takers (a write we could not finish,
	 * settle) exists only in a fenced ctx, whose CAS below fails: the
	 * slot stays ours, so that the taker of a word it stamps finds it
	 * (a new claimer would write over it) */
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

int smart__bt_redo_dead(smart_bt_t *t, smart_worker_t *w, unsigned b)
{
	size_t mark = smart_scratch_mark(w);
	uint64_t *dir;
	uint8_t *snap;
	unsigned s;
	int rc = smart_scratch_alloc(w, 8 * BT_DIR_SLOTS, (void **)&dir);

	if (!rc)
		rc = smart_scratch_alloc(w, t->rec_size, (void **)&snap);
	if (!rc)
		rc = smart_read_sync(w, dir_entry(t, b, 0), 8 * BT_DIR_SLOTS,
				     dir);
	for (s = 0; !rc && s < BT_DIR_SLOTS; s++)
		if (area_once(dir, s))
			rc = area_dead(t, w, b, BT_DIR_AREA(dir[s]), snap, 1);
	smart_scratch_release(w, mark);
	return rc;
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
			rc = smart_free(w,
					smart_gaddr(t->blades[b],
						    BT_DIR_AREA(dir[s])),
					area_len(t));
			if (rc == SMART_EINVAL)
				rc = 0; /* a peer's word, not a block: the
					 * rest of the drop goes on */
		}
	if (!rc)
		t->area[b] = 0;
	smart_scratch_release(w, mark);
	return rc;
}
