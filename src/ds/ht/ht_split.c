/*
 * Smart-HT subtable split: RACE-style extendible hashing on one-sided ops
 * (protocol and safety argument in docs/ht.md §5).
 *
 * Splitting subtable S (local depth ld, suffix s) into S and its sibling
 * N (suffix s | 2^ld), both at depth ld + 1:
 *   1. lock: CAS the canonical directory entry s (the alias below 2^ld)
 *      from the cached unlocked value to the same value with the lock set;
 *   2. freeze every slot of S (CAS v -> v | FROZEN): from here on only the
 *      splitter changes S's slots, so S's content is fixed;
 *   3. build N: the committed entries whose hash bit ld is set, at the
 *      same positions, unfrozen; write all of N;
 *   4. publish: the canonical entry first (depth ld + 1, still locked),
 *      then the aliases (bit ld set: N); raise the global depth;
 *   5. write S's bucket headers (depth ld + 1), then CAS every frozen slot
 *      of S to its final value (moved, tentative or empty: 0; else the
 *      value unfrozen);
 *   6. unlock the canonical entry.
 * Invariants: the lock is held from 1 to 6; a frozen slot is changed by
 * its splitter only; from 2 on every committed entry is in S (frozen) or
 * in N.  A failure before 4 unfreezes S and leaves the table as it was.
 */
#include <stdlib.h>
#include <string.h>

#include "ds/ht/ht_internal.h"

#define SPLIT_GROUPS	320u			/* groups per chunk */
#define SPLIT_CHUNK	(SPLIT_GROUPS * HT_GROUP)
#define SPLIT_BUCKETS	(SPLIT_CHUNK / HT_BUCKET)
#define SPLIT_SLOTS	(SPLIT_BUCKETS * HT_SLOTS)
#define SPLIT_BLK_BUF	(64u << 10)
#define SPLIT_PEND	(SPLIT_BLK_BUF / HT_KV_UNIT)
#define SPLIT_FREEZE_MAX 4096

_Static_assert(SPLIT_BLK_BUF >= HT_KV_UNIT * HT_KV_UNITS_MAX, "blk buf");

struct split_pend {
	uint32_t slot;			/* index in the chunk: bucket * 7 + j */
	uint32_t off;			/* in blk */
};

struct split {
	smart_ht_t *t;
	smart_worker_t *w;
	struct ht_shard *sh;
	unsigned ld, s;
	uint64_t ent;			/* canonical entry, unlocked */
	smart_gaddr_t old, sib;
	uint64_t size;
	uint8_t *moved;			/* per bucket of S: bit j moved */
	struct ht_bucket *sbuf, *nbuf;	/* chunk images of S and N */
	uint64_t *olds;			/* CAS results; also scratch */
	uint8_t *blk;			/* KV blocks being classified */
	struct split_pend *pend;
	unsigned npend;
	int published;			/* N may be reachable: keep it */
	size_t blk_used;
};

/* Sync what was queued before an error so nothing is left in flight. */
static int drain(smart_worker_t *w, int rc)
{
	int rc2 = smart_sync(w);

	return rc ? rc : rc2;
}

static smart_gaddr_t slot_gaddr(const struct split *sp, uint64_t coff,
				size_t b, unsigned j)
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
static int blk_flush(struct split *sp, size_t bbase)
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
		sp->nbuf[b].slot[j] = x & ~HT_SLOT_FROZEN;
	}
	sp->npend = 0;
	sp->blk_used = 0;
	return rc;
}

/* Build and write N's image of the (frozen) chunk. */
static int move_chunk(struct split *sp, uint64_t coff, size_t clen)
{
	size_t nb = clen / HT_BUCKET, b, bbase = coff / HT_BUCKET;
	unsigned j;
	int rc = 0;

	memset(sp->nbuf, 0, clen);
	for (b = 0; b < nb; b++) {
		sp->nbuf[b].local_depth = sp->ld + 1;
		sp->nbuf[b].suffix = sp->s | (1u << sp->ld);
	}
	for (b = 0; b < nb && !rc; b++)
		for (j = 0; j < HT_SLOTS && !rc; j++) {
			uint64_t x = sp->sbuf[b].slot[j];
			size_t len = HT_SLOT_UNITS(x) * HT_KV_UNIT;

			if ((x & HT_SLOT_TENT) || !len)
				continue;
			if (sp->blk_used + len > SPLIT_BLK_BUF)
				rc = blk_flush(sp, bbase);
			if (rc)
				break;
			rc = smart_read(sp->w, smart_gaddr(sp->sh->blade,
						    HT_SLOT_PTR(x)),
					len, sp->blk + sp->blk_used);
			sp->pend[sp->npend++] = (struct split_pend){
				.slot = (uint32_t)(b * HT_SLOTS + j),
				.off = (uint32_t)sp->blk_used };
			sp->blk_used += len;
		}
	if (rc)
		return drain(sp->w, rc);
	rc = blk_flush(sp, bbase);
	if (!rc)
		rc = smart_write_sync(sp->w, smart_gaddr_add(sp->sib, coff),
				      sp->nbuf, clen);
	return rc;
}

/* CAS every frozen slot of the chunk to its final value.  Nobody else
 * changes a frozen slot, so these CASes cannot fail. */
static int settle_chunk(struct split *sp, uint64_t coff, size_t clen,
			int abort)
{
	size_t nb = clen / HT_BUCKET, b, bbase = coff / HT_BUCKET;
	unsigned j;
	int rc;

	rc = smart_read_sync(sp->w, smart_gaddr_add(sp->old, coff), clen,
			     sp->sbuf);
	for (b = 0; b < nb && !rc; b++)
		for (j = 0; j < HT_SLOTS && !rc; j++) {
			uint64_t x = sp->sbuf[b].slot[j], nv;

			if (!(x & HT_SLOT_FROZEN))
				continue;
			nv = x & ~HT_SLOT_FROZEN;
			/* a dropped tentative insert restarts (§5) */
			if (!abort && ((sp->moved[bbase + b] >> j & 1) ||
				       (x & HT_SLOT_TENT)))
				nv = 0;
			rc = smart_cas(sp->w, slot_gaddr(sp, coff, b, j), x, nv,
				       NULL);
		}
	return drain(sp->w, rc);
}

static size_t chunk_len(const struct split *sp, uint64_t off)
{
	return sp->size - off < SPLIT_CHUNK ? (size_t)(sp->size - off) :
					      SPLIT_CHUNK;
}

/* Write S's bucket headers: clients with the old depth now mismatch. */
static int write_headers(struct split *sp, uint64_t coff, size_t clen)
{
	uint64_t *hdr = &sp->olds[0];
	size_t b;
	int rc = 0;

	*hdr = (uint64_t)(sp->ld + 1) | (uint64_t)sp->s << 32;
	for (b = 0; b < clen / HT_BUCKET && !rc; b++)
		rc = smart_write(sp->w, smart_gaddr_add(sp->old,
							coff + b * HT_BUCKET),
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

		if ((v & ~HT_DIR_LOCK) >= want)
			return 0;
		rc = smart_cas_sync(sp->w, a, v, (v & HT_DIR_LOCK) | want, cur);
		if (!rc && *cur == v)
			return 0;
	}
	return rc;
}

/* Canonical entry first, so that a reader holding the old entry sees it
 * change before any client can reach N and update an entry there. */
static int publish(struct split *sp)
{
	uint64_t *e = sp->olds, step = UINT64_C(1) << sp->ld, i;
	int rc;

	e[0] = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->old)) | HT_ENT_LOCK;
	e[1] = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->old));
	e[2] = HT_ENT(sp->ld + 1, smart_gaddr_off(sp->sib));
	rc = smart_write_sync(sp->w, smart__ht_ent_addr(sp->sh, sp->s), &e[0],
			      8);
	for (i = sp->s + step; i < HT_DIR_ENTRIES && !rc; i += step)
		rc = smart_write(sp->w, smart__ht_ent_addr(sp->sh, (unsigned)i),
				 (i & step) ? &e[2] : &e[1], 8);
	rc = drain(sp->w, rc);
	return rc ? rc : raise_global_depth(sp);
}

static int unlock(struct split *sp, uint64_t ent)
{
	sp->olds[0] = ent;
	return smart_write_sync(sp->w, smart__ht_ent_addr(sp->sh, sp->s),
				&sp->olds[0], 8);
}

/* Steps 2..6 with the lock held. */
static int split_locked(struct split *sp)
{
	uint64_t off, done;
	int rc = 0, rc2;

	for (off = 0; off < sp->size && !rc; off += SPLIT_CHUNK) {
		rc = freeze_chunk(sp, off, chunk_len(sp, off));
		if (!rc)
			rc = move_chunk(sp, off, chunk_len(sp, off));
	}
	if (rc) {
		/* nothing published: undo the freezing, best effort */
		done = off;
		for (off = 0; off < done; off += SPLIT_CHUNK)
			settle_chunk(sp, off, chunk_len(sp, off), 1);
		unlock(sp, sp->ent);
		return rc;
	}
	sp->published = 1;
	rc = publish(sp);
	for (off = 0; off < sp->size && !rc; off += SPLIT_CHUNK) {
		rc = write_headers(sp, off, chunk_len(sp, off));
		if (!rc)
			rc = settle_chunk(sp, off, chunk_len(sp, off), 0);
	}
	rc2 = unlock(sp, HT_ENT(sp->ld + 1, smart_gaddr_off(sp->old)));
	return rc ? rc : rc2;
}

static int split_bufs(struct split *sp)
{
	size_t n = 2 * SPLIT_CHUNK + SPLIT_SLOTS * 8 + SPLIT_BLK_BUF;
	uint8_t *p;
	int rc;

	sp->moved = calloc(sp->size / HT_BUCKET, 1);
	sp->pend = calloc(SPLIT_PEND, sizeof(*sp->pend));
	if (!sp->moved || !sp->pend)
		return SMART_ENOMEM;
	rc = smart_buf_alloc(sp->w, n, (void **)&p);
	if (rc)
		return rc;
	sp->sbuf = (struct ht_bucket *)p;
	sp->nbuf = (struct ht_bucket *)(p + SPLIT_CHUNK);
	sp->olds = (uint64_t *)(p + 2 * SPLIT_CHUNK);
	sp->blk = p + 2 * SPLIT_CHUNK + SPLIT_SLOTS * 8;
	return 0;
}

static int split_run(struct split *sp)
{
	uint64_t old;
	int rc;

	rc = smart_alloc(sp->w, sp->sh->blade, sp->size, &sp->sib);
	if (rc)
		return rc == SMART_ENOMEM ? SMART_ENOSPC : rc;
	rc = smart_cas_sync(sp->w, smart__ht_ent_addr(sp->sh, sp->s), sp->ent,
			    sp->ent | HT_ENT_LOCK, &old);
	if (!rc && old != sp->ent)
		rc = SMART_EAGAIN;	/* locked or already split */
	if (!rc) {
		rc = split_locked(sp);
		if (!rc || sp->published)
			return rc;
	}
	smart_free(sp->w, sp->sib, sp->size);
	return rc;
}

int smart__ht_split(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		    unsigned sub, uint64_t ent)
{
	struct split sp;
	int rc;

	if (HT_ENT_LOCKED(ent)) {
		/* being split: wait, with a fresh view for the retry */
		rc = smart__ht_dir_refresh(t, w, sh);
		return rc ? rc : SMART_EAGAIN;
	}
	if (HT_ENT_DEPTH(ent) >= SMART_HT_DEPTH_MAX)
		return SMART_ENOSPC;
	memset(&sp, 0, sizeof(sp));
	sp.t = t;
	sp.w = w;
	sp.sh = sh;
	sp.ld = HT_ENT_DEPTH(ent);
	sp.s = sub & ((1u << sp.ld) - 1);
	sp.ent = ent;
	sp.old = smart_gaddr(sh->blade, HT_ENT_OFF(ent));
	sp.size = smart__ht_sub_size(t);
	rc = split_bufs(&sp);
	if (!rc)
		rc = split_run(&sp);
	if (!rc)
		atomic_fetch_add_explicit(&t->splits, 1, memory_order_relaxed);
	if (sp.sbuf)
		smart_buf_free(w, sp.sbuf);
	free(sp.moved);
	free(sp.pend);
	if (rc == 0 || rc == SMART_EAGAIN) {
		int rc2 = smart__ht_dir_refresh(t, w, sh);

		if (rc2)
			rc = rc2;
	}
	return rc;
}
