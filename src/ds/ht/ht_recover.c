/*
 * Smart-HT: taking over the split lock of a dead client (docs/ht.md §7).
 *
 * A locked canonical entry names its holder's lease id.  A client that
 * needs the subtable and finds the holder dead (smart_lease_alive: fenced,
 * or gone without a goodbye) takes the lock over with one CAS (of several
 * recoverers exactly one wins; a fenced holder can no longer write, so it
 * cannot interfere) and then looks at the split record of that index:
 *   - BUILD: nothing was published: the split is undone (S unfrozen, N
 *     freed);
 *   - PUBLISH: N is complete: the split is finished (publish, headers,
 *     settle, unlock), every step being idempotent;
 *   - none: no split of this index is in flight.  The entry may be the
 *     child N of a split being published by the same dead holder (N's
 *     entry stays locked until every alias is written): then that split,
 *     found through the parent's record, is finished; otherwise the holder
 *     died between its last steps and the entry is simply unlocked.
 * The sweep (smart_ht_sweep) does the same for every locked entry of the
 * table, and clears the tentative slots of dead clients; it asks the
 * blade's lease words, not the keeper's view (which sees a death up to a
 * renewal period late), so that it recovers every death before the call.
 *
 * Invariants: only the lock holder changes a record or a frozen slot;
 * nothing here runs unless the holder is dead.
 */
#include <string.h>

#include "ds/ht/ht_internal.h"

#define SWEEP_BUF (60u << 10) /* a multiple of HT_GROUP */

/* CAS entry i from `from` to `to`: 0 when it now holds `to`. */
static int take(smart_worker_t *w, struct ht_shard *sh, unsigned i,
		uint64_t from, uint64_t to)
{
	uint64_t got;
	int rc = smart_cas_sync(w, smart__ht_ent_addr(sh, i), from, to, &got);

	return rc ? rc : got == from ? 0 : SMART_EAGAIN;
}

static int read_word(smart_worker_t *w, smart_gaddr_t a, uint64_t *v)
{
	return smart_read_sync(w, a, sizeof(*v), v);
}

/* Entry c (ours now, was `ent` of dead) has no record: the child of a
 * published split of the same holder, or a lock left after the end. */
static int recover_child(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
			 unsigned c, uint64_t ent, uint16_t dead)
{
	unsigned d = HT_ENT_DEPTH(ent), p;
	uint64_t mine = HT_ENT_UNLOCKED(ent) | HT_ENT_LOCK(sh->lease);
	uint64_t rec, pent;
	int rc;

	if (d >= 1 && (c >> (d - 1) & 1)) {
		p = c - (1u << (d - 1));
		rc = read_word(w, smart__ht_sib_addr(sh, p), &rec);
		if (!rc && HT_SIB_PHASE(rec) == HT_SIB_PUBLISH &&
		    HT_SIB_DEPTH(rec) == d - 1 &&
		    HT_SIB_OFF(rec) == HT_ENT_OFF(ent))
			rc = read_word(w, smart__ht_ent_addr(sh, p), &pent);
		else if (!rc)
			goto unlock;
		if (rc)
			return rc;
		/* the parent's split: finish it (it takes this entry over
		 * from us too); if somebody else holds the parent already,
		 * they will, so give this one back to the dead holder */
		if (HT_ENT_HOLDER(pent) != dead) {
			(void)take(w, sh, c, mine, ent);
			return SMART_EAGAIN;
		}
		rc = take(w, sh, p, pent,
			  HT_ENT_UNLOCKED(pent) | HT_ENT_LOCK(sh->lease));
		if (!rc)
			rc = smart__ht_split_resume(t, w, sh, p, pent, rec);
		return rc;
	}
unlock:
	return take(w, sh, c, mine, HT_ENT_UNLOCKED(ent));
}

int smart__ht_recover(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		      unsigned canon, uint64_t ent, int now)
{
	uint16_t holder = HT_ENT_HOLDER(ent);
	uint64_t rec;
	int rc;

	if (!holder || SMART_M_HT_NO_SPLIT_RECOVERY)
		return SMART_EAGAIN;
	if (!smart__ht_ent_ok(ent) || canon >= HT_DIR_ENTRIES)
		return SMART_EPROTO; /* read fresh by the caller: check */
	/* our own id: another task or worker of this process is splitting */
	if (holder == sh->lease)
		return SMART_EAGAIN;
	rc = now ? smart_lease_alive_now(w, sh->blade, holder) :
		   smart_lease_alive(w, sh->blade, holder);
	if (rc)
		return rc < 0 ? rc : SMART_EAGAIN; /* alive: wait */
	rc = take(w, sh, canon, ent,
		  HT_ENT_UNLOCKED(ent) | HT_ENT_LOCK(sh->lease));
	if (rc)
		return rc; /* somebody else took it over */
	rc = read_word(w, smart__ht_sib_addr(sh, canon), &rec);
	if (!rc && rec)
		rc = smart__ht_split_resume(t, w, sh, canon, ent, rec);
	else if (!rc)
		rc = recover_child(t, w, sh, canon, ent, holder);
	if (!rc)
		atomic_fetch_add_explicit(&t->recovered, 1,
					  memory_order_relaxed);
	return rc;
}

/* ---- the sweep ---------------------------------------------------------- */

/* Tentative slots of dead clients in one chunk (read into buf) of the
 * subtable at off: read their blocks' headers, clear the dead ones'. */
static int sweep_chunk(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		       uint64_t off, size_t len, struct ht_bucket *buf,
		       struct ht_kv *hdr)
{
	size_t nb = len / HT_BUCKET, b, n = 0, i;
	unsigned j;
	int rc, rc2;

	rc = smart_read_sync(w, smart_gaddr(sh->blade, off), len, buf);
	for (b = 0; !rc && b < nb; b++)
		for (j = 0; !rc && j < HT_SLOTS; j++) {
			uint64_t v = buf[b].slot[j];

			if (!(v & HT_SLOT_TENT) || (v & HT_SLOT_FROZEN) ||
			    !HT_SLOT_UNITS(v))
				continue;
			rc = smart_read(w,
					smart_gaddr(sh->blade, HT_SLOT_PTR(v)),
					sizeof(*hdr), &hdr[b * HT_SLOTS + j]);
			n++;
		}
	rc2 = n ? smart_sync(w) : 0;
	rc = rc ? rc : rc2;
	for (i = 0; !rc && i < nb * HT_SLOTS; i++) {
		uint64_t v = buf[i / HT_SLOTS].slot[i % HT_SLOTS], old;
		uint16_t owner = hdr[i].owner;

		if (!(v & HT_SLOT_TENT) || (v & HT_SLOT_FROZEN) ||
		    !HT_SLOT_UNITS(v) || owner == sh->lease ||
		    smart_lease_alive_now(w, sh->blade, owner) != 0)
			continue;
		rc = smart_cas_sync(
			w,
			smart_gaddr(sh->blade,
				    off + (i / HT_SLOTS) * HT_BUCKET + 8 +
					    8 * (i % HT_SLOTS)),
			v, 0, &old);
		if (rc || old != v)
			continue;
		smart__ht_retire(w, sh, v);
		atomic_fetch_add(&t->tent_cleared, 1);
	}
	return rc;
}

static int sweep_shard(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		       void *scratch)
{
	uint64_t ssz = smart__ht_sub_size(t), seen[HT_DIR_ENTRIES], off;
	struct ht_bucket *buf = scratch;
	struct ht_kv *hdr = (struct ht_kv *)((char *)scratch + SWEEP_BUF);
	unsigned i, k, nseen = 0;
	int rc = 0, entered = 0;

	/* inside the epoch from the start: recovery reads blocks too */
	if (sh->reclaim) {
		rc = smart_epoch_enter(w, sh->blade);
		entered = !rc;
	}
	if (!rc)
		rc = smart__ht_dir_refresh(t, w, sh);
	for (i = 0; !rc && i < HT_DIR_ENTRIES; i++) {
		uint64_t e = atomic_load(&sh->ent[i]);

		if (HT_ENT_LOCKED(e)) {
			rc = smart__ht_recover(t, w, sh, i, e, 1);
			if (rc == SMART_EAGAIN)
				rc = 0; /* alive, or moved on */
		}
	}
	if (!rc)
		rc = smart__ht_dir_refresh(t, w, sh);
	for (i = 0; !rc && i < HT_DIR_ENTRIES; i++) {
		off = HT_ENT_OFF(atomic_load(&sh->ent[i]));
		for (k = 0; k < nseen && seen[k] != off; k++)
			;
		if (k < nseen)
			continue;
		seen[nseen++] = off;
		for (uint64_t p = 0; !rc && p < ssz; p += SWEEP_BUF)
			rc = sweep_chunk(t, w, sh, off + p,
					 ssz - p < SWEEP_BUF ?
						 (size_t)(ssz - p) :
						 SWEEP_BUF,
					 buf, hdr);
	}
	if (entered)
		smart_epoch_exit(w);
	return rc;
}

int smart_ht_sweep(smart_ht_t *t, smart_worker_t *w)
{
	size_t mark;
	void *scratch;
	unsigned i;
	int rc;

	if (!t || !smart__ht_own(t, w))
		return SMART_EINVAL;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w,
				 SWEEP_BUF + SWEEP_BUF / HT_BUCKET * HT_SLOTS *
						     sizeof(struct ht_kv),
				 &scratch);
	for (i = 0; !rc && i < t->nshards; i++)
		rc = sweep_shard(t, w, &t->shard[i], scratch);
	smart_scratch_release(w, mark);
	return rc;
}
