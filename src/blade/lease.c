/*
 * The blade's part in client leases (docs/leases.md): handing out lease
 * ids at the handshake and ending a lease when its session ends.  Renewal,
 * expiry and fencing by peers are one-sided and need no blade CPU; this is
 * only the control plane, which makes a crashed client's fencing immediate
 * (its socket closes) instead of waiting for its lease to run out.
 *
 * Invariants: ids are handed out round robin over 1..65535, skipping every
 * id whose holder died or was fenced (dead_ids): a lock word, tentative
 * slot or announcement of a dead holder may name it for as long as nobody
 * touches that word, and the id handed to a newcomer would make it name a
 * live client (the holder "alive" for ever: its lock never taken over).
 * Only an id released by a BYE from its own unfenced word comes back: such
 * a client closed its structures and holds nothing.  A slot is reused only
 * when it is free (0) or fenced; every slot at or past the table's
 * slots_used is 0.  The blade changes a lease word only with atomic CAS on
 * its own mapping.  On shm these are the same atomics as the clients'; on
 * verbs a CPU CAS is not atomic with a NIC CAS, so a fence raced by a
 * renewal can be lost - then the lease, no longer renewed, expires and
 * peers fence it: slower, never unsafe.
 */
#include <stdatomic.h>

#include "blade/blade_int.h"
#include "smart/status.h"
#include "util/log.h"
#include "util/mutant.h"
#include "wire/services.h"

#define LEASE_IDS 65535u /* 1..65535; 0 is "no holder" */

static struct smart_lease_table *lease_table(struct smart_blade *b)
{
	return (void *)((uint8_t *)b->mr->addr + SMART_LEASE_OFF);
}

static _Atomic uint64_t *lease_slot(struct smart_blade *b, uint16_t id)
{
	return (_Atomic uint64_t *)&lease_table(b)
		->slot[smart_lease_slot_of(id)]
		.word;
}

static int id_dead(const struct smart_blade *b, uint16_t id)
{
	return !SMART_M_BLADE_LEASE_ID_RECYCLE &&
	       (b->dead_ids[id / 64] >> (id % 64) & 1);
}

/* Never hand id out again: something may still name its dead holder. */
static void id_bury(struct smart_blade *b, uint16_t id)
{
	if (b->dead_ids[id / 64] >> (id % 64) & 1)
		return;
	b->dead_ids[id / 64] |= UINT64_C(1) << (id % 64);
	atomic_fetch_add(&b->n_dead_ids, 1);
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

/* The next id round robin that is not buried, or 0 when every one is. */
static uint16_t id_next(struct smart_blade *b)
{
	for (unsigned n = 0; n < LEASE_IDS; n++) {
		uint16_t cand = b->next_lease++;

		if (!cand)
			cand = b->next_lease++;
		if (!id_dead(b, cand))
			return cand;
	}
	return 0;
}

int smart__blade_lease_assign(struct smart_blade *b, uint16_t *id)
{
	unsigned tries;

	/* 1024 ids of distinct slots cover every slot once (buried ids are
	 * skipped without a look at their slot) */
	for (tries = 0; tries < SMART_LEASE_SLOTS; tries++) {
		uint16_t cand = id_next(b);
		_Atomic uint64_t *w;
		uint64_t cur;

		if (!cand) {
			smart__err(&b->log, "every lease id is live or names a "
					    "dead client: restart the blade");
			return SMART_EBUSY;
		}
		w = lease_slot(b, cand);
		cur = atomic_load(w);
		if (cur && !(cur & SMART_LEASE_FENCED))
			continue; /* a live client holds the slot */
		lease_slots_used(b, cand);
		if (!atomic_compare_exchange_strong(w, &cur,
						    smart_lease_word(cand, 1)))
			continue;
		((uint64_t *)w)[1] = 0; /* the slot's "cached" word */
		*id = cand;
		return 0;
	}
	return SMART_EBUSY;
}

/* Release (bye) or fence the lease; 1 when it was released from its own
 * unfenced word, the one case in which its id may come back. */
static int lease_close(struct smart_blade *b, uint16_t id, int bye)
{
	_Atomic uint64_t *w = lease_slot(b, id);
	uint64_t cur = atomic_load(w);

	/* the owner may be renewing meanwhile: retry a bounded number of
	 * times; a fence that cannot land is done by the lease's expiry */
	for (int i = 0; i < 64; i++) {
		if (smart_lease_word_id(cur) != id ||
		    (cur & SMART_LEASE_FENCED))
			return 0; /* fenced by a peer, or not ours any more */
		if (atomic_compare_exchange_strong(
			    w, &cur, bye ? 0 : cur | SMART_LEASE_FENCED))
			return bye;
	}
	return 0;
}

void smart__blade_lease_end(struct smart_blade *b, uint16_t id, int bye)
{
	if (!id || !b->mr)
		return;
	if (SMART_M_BLADE_NO_EOF_FENCE && !bye)
		return;
	if (!lease_close(b, id, bye))
		id_bury(b, id);
}
