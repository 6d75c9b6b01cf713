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
 * Invariants: only the lock holder changes a record or a frozen slot;
 * nothing here runs unless the holder is dead.
 */
#include "ds/ht/ht_internal.h"

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
static int recover_child(smart_ht_t *t, smart_worker_t *w,
			 struct ht_shard *sh, unsigned c, uint64_t ent,
			 uint16_t dead)
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
		/* the parent's split: same holder; finish it (it unlocks
		 * this entry too) */
		if (HT_ENT_HOLDER(pent) != dead)
			return SMART_EAGAIN;
		rc = take(w, sh, p, pent, HT_ENT_UNLOCKED(pent) |
					   HT_ENT_LOCK(sh->lease));
		if (!rc)
			rc = smart__ht_split_resume(t, w, sh, p, pent, rec,
						    dead);
		return rc;
	}
unlock:
	return take(w, sh, c, mine, HT_ENT_UNLOCKED(ent));
}

int smart__ht_recover(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh,
		      unsigned canon, uint64_t ent)
{
	uint16_t holder = HT_ENT_HOLDER(ent);
	uint64_t rec;
	int rc;

	if (!holder || SMART_M_HT_NO_SPLIT_RECOVERY)
		return SMART_EAGAIN;
	/* our own id: another task or worker of this process is splitting */
	if (holder == sh->lease)
		return SMART_EAGAIN;
	rc = smart_lease_alive(w, sh->blade, holder);
	if (rc)
		return rc < 0 ? rc : SMART_EAGAIN;	/* alive: wait */
	rc = take(w, sh, canon, ent, HT_ENT_UNLOCKED(ent) |
				     HT_ENT_LOCK(sh->lease));
	if (rc)
		return rc;	/* somebody else took it over */
	rc = read_word(w, smart__ht_sib_addr(sh, canon), &rec);
	if (!rc && rec)
		rc = smart__ht_split_resume(t, w, sh, canon, ent, rec, holder);
	else if (!rc)
		rc = recover_child(t, w, sh, canon, ent, holder);
	if (!rc)
		atomic_fetch_add_explicit(&t->recovered, 1,
					  memory_order_relaxed);
	return rc;
}
