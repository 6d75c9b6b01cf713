/*
 * Smart-HT subtable split: RACE-style extendible hashing on one-sided ops
 * (protocol, safety argument and recovery in docs/ht.md §5 and §7).
 *
 * Splitting subtable S (local depth ld, canonical index s) into S and its
 * sibling N (canonical index n = s + 2^ld), both at depth ld + 1:
 *   1. lock: CAS the canonical entry s from the cached unlocked value to
 *      the same value naming our lease id as holder;
 *   2. record sib[s] = (BUILD, ld, N): a dead splitter can be undone;
 *   3. freeze every slot of S (CAS v -> v | FROZEN): from here on only the
 *      lock holder changes S's slots, so S's content is fixed;
 *   4. build N: the committed entries whose hash bit ld is set, at the
 *      same positions, unfrozen; write all of N;
 *   5. record sib[s] = (PUBLISH, ld, N): from here a dead splitter's split
 *      is finished, not undone;
 *   6. publish: CAS the canonical entry s to (S, ld + 1) (still ours),
 *      then in one batch CAS n from (S, ld) to (N, ld + 1) locked by us,
 *      and every other alias from (S, ld) to (S or N, ld + 1); raise the
 *      global depth;
 *   7. write S's bucket headers (depth ld + 1), then CAS every frozen slot
 *      of S to its final value (moved, tentative or empty: 0; else the
 *      value unfrozen);
 *   8. sib[s] = 0, unlock n, unlock s.
 * Invariants: s is locked from 1 to 8 and n from 6 to 8 (so nobody splits
 * N while aliases that lead to it are still being written); a frozen slot
 * is changed by the lock holder only; from 3 on every committed entry is
 * in S (frozen) or in N; alias writes are CASes from the value they had
 * before the split, so a late one never overwrites a deeper entry.  A
 * failure before 5 unfreezes S (tentative slots become 0: their inserts
 * already gave them up) and leaves the table as it was.  Every step from
 * 6 on is idempotent: whoever takes over the lock redoes them.
 */
#include <stdlib.h>
#include <string.h>

#include "ds/ht/ht_internal.h"

#define SPLIT_BLK_BUF	 (64u << 10)
#define SPLIT_PEND	 (SPLIT_BLK_BUF / HT_KV_UNIT)
#define SPLIT_FREEZE_MAX 4096
#define SPLIT_RETRY	 4 /* attempts at the steps after publish */
/* Splits one table object runs at once: each holds a registered buffer of
 * about 3.5 x split_chunk, and many tasks may find their subtables full
 * together; the others wait (retry) rather than exhaust the pool. */
#define SPLIT_CONCURRENT 4

_Static_assert(SPLIT_BLK_BUF >= HT_KV_UNIT * HT_KV_UNITS_MAX, "blk buf");

struct split_pend {
	uint32_t slot; /* index in the chunk: bucket * 7 + j */
	uint32_t off;  /* in blk */
};

struct split {
	smart_ht_t *t;
	smart_worker_t *w;
	struct ht_shard *sh;
	struct ht_hook hook;
	unsigned ld, s;
	uint64_t ent;  /* canonical entry s before, unlocked */
	uint64_t lock; /* our holder bits */
	smart_gaddr_t old, sib;
	uint64_t size, chunk;
	uint8_t *moved;		       /* per bucket of S: bit j moved */
	struct ht_bucket *sbuf, *nbuf; /* chunk images of S and N */
	uint64_t *olds;		       /* CAS results; also scratch */
	uint8_t *blk;		       /* KV blocks being classified */
	struct split_pend *pend;
	unsigned npend;
	size_t blk_used;
	int recovering; /* a dead holder's split: what moved
					 * is learnt from the blocks */
};

/* Sync what was queued before an error so nothing is left in flight. */
static int drain(smart_worker_t *w, int rc)
{
	int rc2 = smart_sync(w);

	return rc ? rc : rc2;
}

static int hook(struct split *sp, const char *point)
{
	return smart__ht_hook(&sp->hook, sp->w, point);
}

static smart_gaddr_t slot_gaddr(const struct split *sp, uint64_t coff, size_t b,
				unsigned j)
{
	return smart_gaddr_add(sp->old, coff + b * HT_BUCKET + 8 + 8 * j);
}

/* CAS every unfrozen slot of the chunk to frozen until all are. */
static int freeze_chunk(struct split *sp, uint64_t coff, size_t clen)
{
	size_t nb = clen / HT_BUCKET, b;
	unsigned j, round, n;
	int rc;

	rc = smart_read_sync(sp->w, smart_gaddr_add(sp->old, coff), clen,
			     sp->sbuf);
	if (SMART_M_HT_NO_FREEZE)
		return rc;
	for (round = 0; !rc; round++) {
		n = 0;
		for (b = 0; b < nb && !rc; b++)
			for (j = 0; j < HT_SLOTS && !rc; j++) {
				uint64_t x = sp->sbuf[b].slot[j];

				if (x & HT_SLOT_FROZEN)
					continue;
				rc = smart_cas(sp->w,
					       slot_gaddr(sp, coff, b, j), x,
					       x | HT_SLOT_FROZEN,
					       &sp->olds[b * HT_SLOTS + j]);
				n++;
			}
		if (rc)
			return drain(sp->w, rc);
		if (!n)
			return 0;
		if (round == SPLIT_FREEZE_MAX)
			return SMART_ERETRY;
		rc = smart_sync(sp->w);
		for (b = 0; b < nb && !rc; b++)
			for (j = 0; j < HT_SLOTS; j++) {
				uint64_t *x = &sp->sbuf[b].slot[j];
				uint64_t o = sp->olds[b * HT_SLOTS + j];

				if (*x & HT_SLOT_FROZEN)
					continue;
				/* won: now frozen; lost: try the new value */
				*x = o == *x ? o | HT_SLOT_FROZEN : o;
			}
	}
	return rc;
}

/* Classify the blocks read so far: an entry moves when hash bit ld is
 * set.  Blocks of frozen slots cannot change or be freed, so a bad one
 * is corruption, not a race. */
static int blk_flush(struct split *sp, size_t bbase, int build)
{
	unsigned i;
	int rc = smart_sync(sp->w);

	for (i = 0; i < sp->npend && !rc; i++) {
		const struct split_pend *p = &sp->pend[i];
		size_t b = p->slot / HT_SLOTS;
		unsigned j = p->slot % HT_SLOTS;
		uint64_t x = sp->sbuf[b].slot[j];
		const struct ht_kv *kv = (const void *)(sp->blk + p->off);
		uint64_t h1;

		if (!smart__ht_kv_valid(kv, HT_SLOT_UNITS(x) * HT_KV_UNIT)) {
			rc = SMART_EPROTO;
			break;
		}
		h1 = smart_hash64(kv + 1, kv->key_len, sp->t->seed[0]);
		if (!((h1 >> sp->ld) & 1))
			continue;
		sp->moved[bbase + b] |= (uint8_t)(1u << j);
		if (build)
			sp->nbuf[b].slot[j] = x & ~HT_SLOT_FROZEN;
	}
	sp->npend = 0;
	sp->blk_used = 0;
	return rc;
}

/* Which committed slots of the (frozen, read into sbuf) chunk move to N;
 * with build, N's image of the chunk too. */
static int classify_chunk(struct split *sp, uint64_t coff, size_t clen,
			  int build)
{
	size_t nb = clen / HT_BUCKET, b, bbase = coff / HT_BUCKET;
	unsigned j;
	int rc = 0;

	if (build) {
		memset(sp->nbuf, 0, clen);
		for (b = 0; b < nb; b++) {
			sp->nbuf[b].local_depth = sp->ld + 1;
			sp->nbuf[b].suffix = sp->s | (1u << sp->ld);
		}
	}
	for (b = 0; b < nb && !rc; b++)
		for (j = 0; j < HT_SLOTS && !rc; j++) {
			uint64_t x = sp->sbuf[b].slot[j];
			size_t len = HT_SLOT_UNITS(x) * HT_KV_UNIT;

			if ((x & HT_SLOT_TENT) || !len)
				continue;
			/* a recoverer finds chunks the dead splitter settled:
			 * their slots are live again (their blocks may be
			 * replaced and freed), and nothing is left to move */
			if (!build && !(x & HT_SLOT_FROZEN))
				continue;
			if (sp->blk_used + len > SPLIT_BLK_BUF)
				rc = blk_flush(sp, bbase, build);
			if (rc)
				break;
			rc = smart_read(sp->w,
					smart_gaddr(sp->sh->blade,
						    HT_SLOT_PTR(x)),
					len, sp->blk + sp->blk_used);
			sp->pend[sp->npend++] = (struct split_pend){
				.slot = (uint32_t)(b * HT_SLOTS + j),
				.off = (uint32_t)sp->blk_used
			};
			sp->blk_used += len;
		}
	if (rc)
		return drain(sp->w, rc);
	return blk_flush(sp, bbase, build);
}

/* Build and write N's image of the (frozen) chunk. */
static int move_chunk(struct split *sp, uint64_t coff, size_t clen)
{
	int rc = classify_chunk(sp, coff, clen, 1);

	if (!rc)
		rc = smart_write_sync(sp->w, smart_gaddr_add(sp->sib, coff),
				      sp->nbuf, clen);
	return rc;
}

/* A settled chunk's tentative slots were dropped: their inserts start
 * over and retire or re-place their blocks, unless the holder is dead;
 * then the block is retired here.  The headers were read in settle. */
static void settle_dead_tents(struct split *sp, size_t nb)
{
	size_t b;
	unsigned j;

	for (b = 0; b < nb; b++)
		for (j = 0; j < HT_SLOTS; j++) {
			uint64_t x = sp->sbuf[b].slot[j];
			const struct ht_kv *kv =
				(const void *)(sp->blk +
					       (b * HT_SLOTS + j) *
						       sizeof(struct ht_kv));

			if (!(x & HT_SLOT_FROZEN) || !(x & HT_SLOT_TENT) ||
			    !HT_SLOT_UNITS(x) || kv->owner == sp->sh->lease ||
			    SMART_M_HT_NO_TENT_RECOVERY ||
			    smart_lease_alive_now(sp->w, sp->sh->blade,
						  kv->owner) != 0)
				continue;
			smart__ht_retire(sp->w, sp->sh, x);
			atomic_fetch_add(&sp->t->tent_cleared, 1);
		}
}

/* CAS every frozen slot of the chunk to its final value.  Nobody but the
 * lock holder changes a frozen slot, so these CASes cannot fail (one that
 * finds the slot settled already was done by a holder before us).  A
 * tentative slot becomes 0 on abort too: its insert saw it frozen and gave
 * it up (it retires or re-places its block itself; a dead holder's is
 * retired here). */
static int settle_chunk(struct split *sp, uint64_t coff, size_t clen, int abort)
{
	size_t nb = clen / HT_BUCKET, b, bbase = coff / HT_BUCKET;
	unsigned j, tents = 0;
	int rc;

	rc = smart_read_sync(sp->w, smart_gaddr_add(sp->old, coff), clen,
			     sp->sbuf);
	/* the headers of tentative blocks: whose are they? */
	for (b = 0; b < nb && !rc; b++)
		for (j = 0; j < HT_SLOTS && !rc; j++) {
			uint64_t x = sp->sbuf[b].slot[j];

			if (!(x & HT_SLOT_FROZEN) || !(x & HT_SLOT_TENT) ||
			    !HT_SLOT_UNITS(x))
				continue;
			rc = smart_read(sp->w,
					smart_gaddr(sp->sh->blade,
						    HT_SLOT_PTR(x)),
					sizeof(struct ht_kv),
					sp->blk + (b * HT_SLOTS + j) *
							  sizeof(struct ht_kv));
			tents++;
		}
	for (b = 0; b < nb && !rc; b++)
		for (j = 0; j < HT_SLOTS && !rc; j++) {
			uint64_t x = sp->sbuf[b].slot[j], nv;

			if (!(x & HT_SLOT_FROZEN))
				continue;
			nv = x & ~HT_SLOT_FROZEN;
			if ((x & HT_SLOT_TENT) &&
			    !(abort && SMART_M_HT_ABORT_KEEPS_TENT))
				nv = 0;
			if (!abort && (sp->moved[bbase + b] >> j & 1))
				nv = 0;
			rc = smart_cas(sp->w, slot_gaddr(sp, coff, b, j), x, nv,
				       NULL);
		}
	rc = drain(sp->w, rc);
	if (!rc && tents && !(abort && SMART_M_HT_ABORT_KEEPS_TENT))
		settle_dead_tents(sp, nb);
	return rc;
}

static size_t chunk_len(const struct split *sp, uint64_t off)
{
	return sp->size - off < sp->chunk ? (size_t)(sp->size - off) :
					    (size_t)sp->chunk;
}

/* Write S's bucket headers: clients with the old depth now mismatch. */
static int write_headers(struct split *sp, uint64_t coff, size_t clen)
{
	uint64_t *hdr = &sp->olds[0];
	size_t b;
	int rc = 0;

	*hdr = (uint64_t)(sp->ld + 1) | (uint64_t)sp->s << 32;
	for (b = 0; b < clen / HT_BUCKET && !rc; b++)
		rc = smart_write(sp->w,
				 smart_gaddr_add(sp->old, coff + b * HT_BUCKET),
				 hdr, sizeof(*hdr));
	return drain(sp->w, rc);
}

static int raise_global_depth(struct split *sp)
{
	smart_gaddr_t a = sp->sh->dir;
	uint64_t *cur = &sp->olds[3], want = sp->ld + 1;
	int rc, i;

	rc = smart_read_sync(sp->w, a, sizeof(*cur), cur);
	for (i = 0; !rc && i < SPLIT_FREEZE_MAX; i++) {
		uint64_t v = *cur;

		if (v >= want)
			return 0;
		rc = smart_cas_sync(sp->w, a, v, want, cur);
		if (!rc && *cur == v)
			return 0;
	}
	return rc;
}

/* CAS entry i from one of the expected values to `to`; *got receives what
 * it held.  0 when it now holds `to`. */
static int ent_cas(struct split *sp, unsigned i, uint64_t expect, uint64_t to,
		   uint64_t *got)
{
	int rc = smart_cas_sync(sp->w, smart__ht_ent_addr(sp->sh, i), expect,
				to, got);

	if (rc)
		return rc;
	return *got == expect || *got == to ? 0 : SMART_EAGAIN;
}

static int sib_write(struct split *sp, uint64_t rec)
{
	sp->olds[1] = rec;
	return smart_write_sync(sp->w, smart__ht_sib_addr(sp->sh, sp->s),
				&sp->olds[1], 8);
}

/* Step 6.  The canonical entry first, so that a reader holding the old
 * entry sees it change before any client can reach N; N's canonical entry
 * locked, so that N is not split before every alias leading to it is
 * written; the aliases by CAS from their value before the split, so that
 * a late one (a dead splitter's, redone) never overwrites a deeper entry.
 * N's entry already published and locked by someone else is taken over
 * whoever holds it: with S locked and its record in PUBLISH, the split is
 * ours, and N was never unlocked since (finish clears the record first);
 * its holder is a dead splitter, or a recoverer that found N first and
 * cannot finish without S. */
static int publish(struct split *sp)
{
	uint64_t step = UINT64_C(1) << sp->ld, i, *e = sp->olds + 8;
	uint64_t s_new = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->old));
	uint64_t n_new = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->sib));
	unsigned n = sp->s + (unsigned)step;
	int rc;

	rc = ent_cas(sp, sp->s, sp->ent | sp->lock, s_new | sp->lock, &e[0]);
	if (rc)
		return rc; /* not ours any more: somebody took over */
	if (SMART_M_HT_CHILD_UNLOCKED)
		rc = ent_cas(sp, n, sp->ent, n_new, &e[1]);
	else
		rc = ent_cas(sp, n, sp->ent, n_new | sp->lock, &e[1]);
	if (rc == SMART_EAGAIN && HT_ENT_UNLOCKED(e[1]) == n_new &&
	    HT_ENT_LOCKED(e[1]))
		rc = ent_cas(sp, n, e[1], n_new | sp->lock, &e[1]);
	if (!rc)
		rc = hook(sp, "ht.split.canonical");
	if (rc)
		return rc;
	for (i = n + step; i < HT_DIR_ENTRIES; i += step) {
		rc = smart_cas(sp->w, smart__ht_ent_addr(sp->sh, (unsigned)i),
			       sp->ent, (i & step) ? n_new : s_new, NULL);
		if (rc)
			break;
	}
	rc = drain(sp->w, rc);
	if (!rc)
		rc = hook(sp, "ht.split.published");
	return rc ? rc : raise_global_depth(sp);
}

/* Steps 7 and 8. */
static int finish(struct split *sp, int classify)
{
	uint64_t off, *e = sp->olds + 8;
	uint64_t s_new = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->old));
	uint64_t n_new = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->sib));
	int rc = 0;

	for (off = 0; off < sp->size && !rc; off += sp->chunk) {
		rc = write_headers(sp, off, chunk_len(sp, off));
		if (!rc)
			rc = hook(sp, "ht.split.headers");
		/* a recoverer learns what moved from the blocks */
		if (!rc && classify) {
			rc = smart_read_sync(sp->w,
					     smart_gaddr_add(sp->old, off),
					     chunk_len(sp, off), sp->sbuf);
			if (!rc)
				rc = classify_chunk(sp, off, chunk_len(sp, off),
						    0);
		}
		if (!rc)
			rc = settle_chunk(sp, off, chunk_len(sp, off), 0);
		if (!rc)
			rc = hook(sp, "ht.split.settled");
	}
	if (!rc)
		rc = sib_write(sp, 0);
	if (!rc && !SMART_M_HT_CHILD_UNLOCKED)
		rc = ent_cas(sp, sp->s + (1u << sp->ld), n_new | sp->lock,
			     n_new, &e[1]);
	if (!rc)
		rc = hook(sp, "ht.split.unlocking");
	if (!rc)
		rc = ent_cas(sp, sp->s, s_new | sp->lock, s_new, &e[0]);
	return rc;
}

/* Undo a split that published nothing: unfreeze S, forget N, unlock. */
static int undo(struct split *sp, uint64_t frozen_end)
{
	uint64_t off, *e = sp->olds + 8;
	int rc = 0;

	for (off = 0; off < frozen_end && !rc; off += sp->chunk)
		rc = settle_chunk(sp, off, chunk_len(sp, off), 1);
	if (!rc)
		rc = sib_write(sp, 0);
	if (!rc)
		rc = ent_cas(sp, sp->s, sp->ent | sp->lock, sp->ent, &e[0]);
	return rc;
}

/* An error (rc) struck with our lock held.  Settle the split the way a
 * recoverer would, from what its record says - BUILD (or no record yet):
 * undo; PUBLISH: publish and finish, every step idempotent - trying again
 * up to SPLIT_RETRY times (a broken QP is replaced on the next op): a live
 * holder must not leave the subtable locked, since nobody takes a live
 * client's lock over.  Returns 0 when the split got done after all, the
 * first error when it was undone (or could not be settled: then the lock
 * and the record stay, for a recoverer once we are gone), SMART_EAGAIN
 * when the lock is not ours any more. */
static int split_settle(struct split *sp, int rc, int *keep_sib)
{
	uint64_t *w = sp->olds + 12; /* [0] the record, [1] the entry */
	int i, r = rc;

	for (i = 0; i < SPLIT_RETRY; i++) {
		r = smart_read_sync(sp->w, smart__ht_sib_addr(sp->sh, sp->s), 8,
				    &w[0]);
		if (!r)
			r = smart_read_sync(sp->w,
					    smart__ht_ent_addr(sp->sh, sp->s),
					    8, &w[1]);
		if (!r && HT_ENT_UNLOCKED(w[1]) != w[1] &&
		    (w[1] & ~HT_ENT_UNLOCKED(w[1])) != sp->lock)
			return SMART_EAGAIN; /* taken over: we were fenced */
		if (!r && HT_SIB_PHASE(w[0]) == HT_SIB_PUBLISH) {
			*keep_sib = 1;
			r = publish(sp);
			if (!r)
				r = finish(sp, sp->recovering);
			if (!r || r == SMART_EAGAIN)
				return r;
		} else if (!r) {
			r = undo(sp, sp->size);
			if (!r) {
				*keep_sib = 0;
				return rc;
			}
		}
	}
	*keep_sib = 1; /* N may be needed by a recoverer */
	return rc;
}

/* Steps 2..8 with the lock held.  *keep_sib: N may be reachable (or a
 * recoverer will need it): do not free it. */
static int split_locked(struct split *sp, int *keep_sib)
{
	uint64_t off;
	int rc;

	rc = sib_write(sp,
		       HT_SIB(HT_SIB_BUILD, sp->ld, smart_gaddr_off(sp->sib)));
	if (!rc)
		rc = hook(sp, "ht.split.locked");
	for (off = 0; off < sp->size && !rc; off += sp->chunk) {
		rc = freeze_chunk(sp, off, chunk_len(sp, off));
		if (!rc)
			rc = hook(sp, "ht.split.frozen");
		if (!rc)
			rc = move_chunk(sp, off, chunk_len(sp, off));
		if (!rc)
			rc = hook(sp, "ht.split.built");
	}
	if (!rc)
		rc = sib_write(sp, HT_SIB(HT_SIB_PUBLISH, sp->ld,
					  smart_gaddr_off(sp->sib)));
	if (!rc)
		rc = hook(sp, "ht.split.publishing");
	if (!rc) {
		*keep_sib = 1;
		rc = publish(sp);
	}
	if (!rc)
		rc = finish(sp, 0);
	return rc && rc != SMART_EAGAIN ? split_settle(sp, rc, keep_sib) : rc;
}

/* One registered buffer per split (no heap allocation inside an insert):
 * S's and N's chunk images, the CAS results, the blocks being classified,
 * the pending reads, and which slots of S moved. */
static int split_bufs(struct split *sp)
{
	size_t slots = sp->chunk / HT_BUCKET * HT_SLOTS;
	/* blk holds the blocks being classified, or a chunk's tentative
	 * blocks' headers (settle_chunk) */
	size_t blk = slots * sizeof(struct ht_kv) > SPLIT_BLK_BUF ?
			     slots * sizeof(struct ht_kv) :
			     SPLIT_BLK_BUF;
	size_t pend = SPLIT_PEND * sizeof(*sp->pend);
	size_t n = 2 * sp->chunk + slots * 8 + blk + pend +
		   sp->size / HT_BUCKET;
	uint8_t *p;
	int rc;

	rc = smart_buf_alloc(sp->w, n, (void **)&p);
	if (rc)
		return rc;
	sp->sbuf = (struct ht_bucket *)p;
	sp->nbuf = (struct ht_bucket *)(p + sp->chunk);
	sp->olds = (uint64_t *)(p + 2 * sp->chunk);
	sp->blk = p + 2 * sp->chunk + slots * 8;
	sp->pend = (struct split_pend *)(sp->blk + blk);
	sp->moved = (uint8_t *)sp->pend + pend;
	memset(sp->moved, 0, sp->size / HT_BUCKET);
	return 0;
}

static void split_init(struct split *sp, smart_ht_t *t, smart_worker_t *w,
		       struct ht_shard *sh, unsigned s, unsigned ld,
		       uint64_t ent)
{
	memset(sp, 0, sizeof(*sp));
	sp->t = t;
	sp->w = w;
	sp->sh = sh;
	sp->ld = ld;
	sp->s = s;
	sp->ent = HT_ENT_UNLOCKED(ent);
	sp->lock = HT_ENT_LOCK(sh->lease);
	sp->old = smart_gaddr(sh->blade, HT_ENT_OFF(ent));
	sp->size = smart__ht_sub_size(t);
	sp->chunk = (uint64_t)t->split_groups * HT_GROUP;
	smart__ht_hook_load(&sp->hook, w);
}

static void split_fini(struct split *sp)
{
	if (sp->sbuf)
		smart_buf_free(sp->w, sp->sbuf);
}

/* Lock first, then allocate: of many tasks that find the subtable full at
 * once only the winner takes a sibling and the buffers (about 3.5 times
 * split_chunk of registered memory). */
static int split_run(struct split *sp)
{
	uint64_t old; /* 8 bytes: the op layer bounces it */
	int rc, keep = 0;

	rc = smart_cas_sync(sp->w, smart__ht_ent_addr(sp->sh, sp->s), sp->ent,
			    sp->ent | sp->lock, &old);
	if (!rc && old != sp->ent)
		rc = SMART_EAGAIN; /* locked or already split */
	if (rc)
		return rc;
	rc = split_bufs(sp);
	if (!rc) {
		rc = smart_alloc(sp->w, sp->sh->blade, sp->size, &sp->sib);
		if (rc == SMART_ENOMEM)
			rc = SMART_ENOSPC;
		if (rc)
			sp->sib = SMART_GADDR_NULL;
	}
	if (rc) {
		/* nothing done yet: unlock (a failure here leaves the lock to
		 * a recoverer, once we are gone) */
		if (sp->olds)
			(void)undo(sp, 0);
		else
			(void)smart_cas_sync(sp->w,
					     smart__ht_ent_addr(sp->sh, sp->s),
					     sp->ent | sp->lock, sp->ent, &old);
		return rc;
	}
	rc = split_locked(sp, &keep);
	if (!keep)
		smart_free(sp->w, sp->sib, sp->size);
	return rc;
}

int smart__ht_split(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		    unsigned sub, uint64_t ent)
{
	struct split sp;
	int rc;

	if (HT_ENT_LOCKED(ent)) {
		/* being split: a dead holder's split is finished or undone
		 * first; a live one's waited for, with a fresh view */
		rc = smart__ht_recover(t, w, sh, smart__ht_canon(ent, sub), ent,
				       0);
		if (rc == 0 || rc == SMART_EAGAIN)
			rc = smart__ht_dir_refresh(t, w, sh);
		return rc ? rc : SMART_EAGAIN;
	}
	if (HT_ENT_DEPTH(ent) >= SMART_HT_DEPTH_MAX)
		return SMART_ENOSPC;
	if (atomic_fetch_add(&t->splitting, 1) >= SPLIT_CONCURRENT) {
		atomic_fetch_sub(&t->splitting, 1);
		return SMART_EAGAIN;
	}
	split_init(&sp, t, w, sh, smart__ht_canon(ent, sub), HT_ENT_DEPTH(ent),
		   ent);
	rc = split_run(&sp);
	atomic_fetch_sub(&t->splitting, 1);
	if (!rc)
		atomic_fetch_add_explicit(&t->splits, 1, memory_order_relaxed);
	split_fini(&sp);
	if (rc == 0 || rc == SMART_EAGAIN) {
		int rc2 = smart__ht_dir_refresh(t, w, sh);

		if (rc2)
			rc = rc2;
	}
	return rc;
}

int smart__ht_split_resume(smart_ht_t *t, smart_worker_t *w,
			   struct ht_shard *sh, unsigned s, uint64_t ent,
			   uint64_t rec)
{
	unsigned ld = HT_SIB_DEPTH(rec);
	struct split sp;
	int rc, keep = 1;

	if (!smart__ht_sib_ok(rec, s, ent))
		return SMART_EPROTO; /* not a record of ours */
	/* the entry as it was before the split: S at depth ld, unlocked;
	 * publish accepts the canonical entry at ld + 1 already */
	split_init(&sp, t, w, sh, s, ld, HT_ENT(ld, HT_ENT_OFF(ent)));
	sp.sib = smart_gaddr(sh->blade, HT_SIB_OFF(rec));
	sp.recovering = 1;
	rc = split_bufs(&sp);
	if (!rc && HT_SIB_PHASE(rec) == HT_SIB_BUILD) {
		/* nothing published: undo it all, N is nobody's */
		rc = undo(&sp, sp.size);
		keep = rc != 0;
	} else if (!rc) {
		keep = 1;
		rc = publish(&sp);
		if (!rc)
			rc = finish(&sp, 1);
	}
	/* the lock is ours now, and we live: settle, as the splitter would */
	if (rc && rc != SMART_EAGAIN && sp.olds)
		rc = split_settle(&sp, rc, &keep);
	if (!keep)
		smart_free(w, sp.sib, sp.size);
	split_fini(&sp);
	return rc;
}
