/*
 * Smart-BT node locks: Sherman's hierarchical on-chip lock (HOCL) without
 * the on-chip part here (docs/bt.md §4).  Each blade has a global table of
 * 8-byte lock words (host memory: no device here offers NIC memory); each
 * process has a local table whose slots queue its tasks FIFO, so that
 * only the task being served touches the network, and a lock it releases
 * while others of this process wait is handed to the next one without a
 * remote release and CAS (at most BT_HANDOVER_MAX times in a row, so that
 * other processes get their turn).
 *
 * With the local table off (config hocl 0, for comparison) every task
 * CASes the remote word itself and releases it every time.
 *
 * A merge, holding a leaf, tries two more locks (smart__bt_trylock): a
 * few CASes of the remote word beside the local slots, never a queue.
 *
 * Invariants: a local slot's `held` is written only by the task being
 * served; a remote word holds the lease id of the process holding it;
 * the release is posted behind the caller's write-back on the same QP
 * (both on the node's blade), so RC order lands the node before the
 * unlock: one round trip for both (command combining).
 */
#include "ds/bt/bt_internal.h"

static int blade_index(const smart_bt_t *t, uint16_t blade)
{
	unsigned i;

	for (i = 0; i < t->nblades; i++)
		if (t->blades[i] == blade)
			return (int)i;
	return -1;
}

/* The remote lock word of node a, and our lease id on its blade. */
static int lock_word(const smart_bt_t *t, smart_gaddr_t a, smart_gaddr_t *lw,
		     uint16_t *id)
{
	uint16_t blade = smart_gaddr_blade(a);
	int b = blade_index(t, blade);

	if (b < 0)
		return SMART_EPROTO;	/* a pointer off the tree's blades */
	*lw = smart_gaddr(blade, t->lock_off[b] +
			  8 * (bt_mix(smart_gaddr_off(a)) & (t->locks - 1)));
	*id = t->lease[b];
	return 0;
}

static struct bt_llock *llock_of(smart_bt_t *t, smart_gaddr_t lw)
{
	return &t->ll[bt_mix(lw) & (BT_LLOCKS - 1)];
}

/* Take the remote word: CAS 0 -> id, or from a dead holder; after
 * `tries` failed CASes (0: no limit) SMART_EBUSY. */
static int remote_acquire(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			  uint16_t id, unsigned tries)
{
	uint64_t cur = 0, got;
	unsigned n = 0;
	int rc;

	for (;;) {
		rc = smart_cas_sync(w, lw, cur, id, &got);
		if (rc || got == cur)
			return rc;
		atomic_fetch_add_explicit(&t->lock_retries, 1,
					  memory_order_relaxed);
		if (!SMART_M_BT_NO_TAKEOVER && got && got != id &&
		    smart_lease_alive(w, smart_gaddr_blade(lw),
				      (uint16_t)got) == 0) {
			/* its holder is dead (fenced: it can write no more):
			 * take it over */
			cur = got;
			atomic_fetch_add_explicit(&t->lock_takeovers, 1,
						  memory_order_relaxed);
			continue;
		}
		if (tries && ++n == tries)
			return SMART_EBUSY;
		cur = 0;
		smart_task_yield(w);
	}
}

int smart__bt_lock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a)
{
	struct bt_llock *l;
	smart_gaddr_t lw;
	uint64_t held;
	uint32_t ticket;
	uint16_t id;
	int rc = lock_word(t, a, &lw, &id);

	if (rc || SMART_M_BT_NO_LOCK)
		return rc;
	if (!t->hocl)
		return remote_acquire(t, w, lw, id, 0);
	l = llock_of(t, lw);
	ticket = atomic_fetch_add(&l->next, 1);
	while (atomic_load(&l->serving) != ticket)
		smart_task_yield(w);
	held = atomic_load(&l->held);
	if (held == lw) {
		atomic_fetch_add_explicit(&t->handovers, 1,
					  memory_order_relaxed);
		return 0;	/* handed over: already ours */
	}
	l->handovers = 0;
	if (held) {
		/* kept for a waiter of another word hashed here: let it go */
		uint64_t zero = 0;

		rc = smart_write_sync(w, held, &zero, 8);
		if (!rc)
			atomic_store(&l->held, 0);
	}
	if (!rc)
		rc = remote_acquire(t, w, lw, id, 0);
	if (!rc)
		atomic_store(&l->held, lw);
	else
		atomic_fetch_add(&l->serving, 1);
	return rc;
}

int smart__bt_unlock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		     int err)
{
	static const uint64_t zero;
	struct bt_llock *l;
	smart_gaddr_t lw;
	uint16_t id;
	uint32_t waiting;
	int rc = lock_word(t, a, &lw, &id);

	if (SMART_M_BT_NO_LOCK)
		return err ? err : smart_sync(w);
	if (rc)
		return err ? err : rc;
	if (!t->hocl) {
		int rc2;

		rc = smart_write(w, lw, &zero, 8);
		rc2 = smart_sync(w);
		rc = rc ? rc : rc2;
		return err ? err : rc;
	}
	l = llock_of(t, lw);
	waiting = atomic_load(&l->next) - atomic_load(&l->serving) - 1;
	if (waiting && (SMART_M_BT_NO_HANDOVER_LIMIT ||
			l->handovers < BT_HANDOVER_MAX)) {
		l->handovers++;
		rc = smart_sync(w);	/* the write-back, lock kept */
	} else {
		int rc2;

		rc = smart_write(w, lw, &zero, 8);
		rc2 = smart_sync(w);	/* what the caller posted, too */
		rc = rc ? rc : rc2;
		/* even on an error: whether the release landed is unknown,
		 * and a word we are not sure we hold is never handed over */
		atomic_store(&l->held, 0);
	}
	atomic_fetch_add(&l->serving, 1);
	return err ? err : rc;
}

int smart__bt_trylock(smart_bt_t *t, smart_worker_t *w,
		      const smart_gaddr_t *held, unsigned nheld, smart_gaddr_t a,
		      int *how)
{
	smart_gaddr_t lw, hw;
	uint16_t id, hid;
	unsigned k;
	int rc = lock_word(t, a, &lw, &id);

	*how = BT_TRY_NONE;
	for (k = 0; !rc && k < nheld; k++) {
		rc = lock_word(t, held[k], &hw, &hid);
		if (!rc && hw == lw) {
			*how = BT_TRY_SAME;
			return 0;
		}
	}
	if (rc || SMART_M_BT_NO_LOCK)
		return rc;
	/* beside the local slots: a task of ours holding the word through
	 * one makes the CAS fail like anybody else */
	rc = remote_acquire(t, w, lw, id, BT_TRY_CASES);
	if (!rc)
		*how = BT_TRY_HELD;
	return rc;
}

int smart__bt_untry(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		    int how, int err)
{
	static const uint64_t zero;
	smart_gaddr_t lw;
	uint16_t id;
	int rc = 0;

	if (how == BT_TRY_HELD && !SMART_M_BT_NO_LOCK) {
		rc = lock_word(t, a, &lw, &id);
		if (!rc)
			rc = smart_write(w, lw, &zero, 8);
	}
	return err ? err : rc;
}
