/*
 * The blade's part in client leases (docs/leases.md): handing out lease
 * ids at the handshake and ending a lease when its session ends.  Renewal,
 * expiry and fencing by peers are one-sided and need no blade CPU; this is
 * only the control plane, which makes a crashed client's fencing immediate
 * (its socket closes) instead of waiting for its lease to run out.
 *
 * Invariants: ids are handed out round robin over 1..65535, so an id
 * returns only after 65535 handshakes; a slot is reused only when it is
 * free (0) or fenced; every slot at or past the table's slots_used is 0.
 * The blade changes a lease word only with atomic CAS on its own mapping.
 * On shm these are the same atomics as the clients'; on verbs a CPU CAS
 * is not atomic with a NIC CAS, so a fence raced by a renewal can be lost
 * - then the lease, no longer renewed, expires and peers fence it:
 * slower, never unsafe.
 */
#include <stdatomic.h>

#include "blade/blade_int.h"
#include "smart/status.h"
#include "util/mutant.h"
#include "wire/services.h"

static struct smart_lease_table *lease_table(struct smart_blade *b)
{
	return (void *)((uint8_t *)b->mr->addr + SMART_LEASE_OFF);
}

static _Atomic uint64_t *lease_slot(struct smart_blade *b, uint16_t id)
{
	return (_Atomic uint64_t *)&lease_table(b)->slot[
		smart_lease_slot_of(id)].word;
}

/* Raise the table's used prefix over slot, before its word is written:
 * a reader that missed the word in this read sees it in its next one. */
static void lease_slots_used(struct smart_blade *b, uint16_t id)
{
	uint64_t *used = &lease_table(b)->slots_used;
	uint64_t want = smart_lease_slot_of(id) + 1;

	if (__atomic_load_n(used, __ATOMIC_RELAXED) < want)
		__atomic_store_n(used, want, __ATOMIC_RELEASE);
}

int smart__blade_lease_assign(struct smart_blade *b, uint16_t *id)
{
	unsigned tries;

	/* 1024 consecutive ids cover every slot once */
	for (tries = 0; tries < SMART_LEASE_SLOTS; tries++) {
		uint16_t cand = b->next_lease++;
		_Atomic uint64_t *w;
		uint64_t cur;

		if (!cand)
			cand = b->next_lease++;
		w = lease_slot(b, cand);
		cur = atomic_load(w);
		if (cur && !(cur & SMART_LEASE_FENCED))
			continue;	/* a live client holds the slot */
		lease_slots_used(b, cand);
		if (!atomic_compare_exchange_strong(w, &cur,
						    smart_lease_word(cand, 1)))
			continue;
		((uint64_t *)w)[1] = 0;	/* the slot's "cached" word */
		*id = cand;
		return 0;
	}
	return SMART_EBUSY;
}

void smart__blade_lease_end(struct smart_blade *b, uint16_t id, int bye)
{
	_Atomic uint64_t *w;
	uint64_t cur;
	int i;

	if (!id || !b->mr || (SMART_M_BLADE_NO_EOF_FENCE && !bye))
		return;
	w = lease_slot(b, id);
	cur = atomic_load(w);
	/* the owner may be renewing meanwhile: retry a bounded number of
	 * times; a fence that cannot land is done by the lease's expiry */
	for (i = 0; i < 64; i++) {
		if (smart_lease_word_id(cur) != id || (cur & SMART_LEASE_FENCED))
			return;	/* fenced by a peer, or not ours any more */
		if (atomic_compare_exchange_strong(w, &cur, bye ? 0 :
						   cur | SMART_LEASE_FENCED))
			return;
	}
}
