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
 * Invariants: a local slot's `held` is written only by the task being
 * served; a remote word holds the lease id of the process holding it;
 * the release is posted behind the caller's write-back on the same QP
 * (both on the node's blade), so RC order lands the node before the
 * unlock: one round trip for both (command combining).
 */
#include "ds/bt/bt_internal.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 33;
	return x;
}

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
			  8 * (mix(smart_gaddr_off(a)) & (t->locks - 1)));
	*id = t->lease[b];
	return 0;
}

static struct bt_llock *llock_of(smart_bt_t *t, smart_gaddr_t lw)
{
	return &t->ll[mix(lw) & (BT_LLOCKS - 1)];
}

/* Take the remote word: CAS 0 -> id, or from a dead holder. */
static int remote_acquire(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			  uint16_t id)
{
	uint64_t cur = 0, got;
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
		return remote_acquire(t, w, lw, id);
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
		rc = remote_acquire(t, w, lw, id);
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
		if (!rc)
			atomic_store(&l->held, 0);
	}
	atomic_fetch_add(&l->serving, 1);
	return err ? err : rc;
}

int smart__bt_lock2(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t held,
		    smart_gaddr_t a, int *how)
{
	smart_gaddr_t lw, hw;
	uint16_t id, hid;
	int rc = lock_word(t, a, &lw, &id);

	if (!rc)
		rc = lock_word(t, held, &hw, &hid);
	if (rc)
		return rc;
	*how = lw == hw ? BT_LOCK2_SAME : BT_LOCK2_QUEUED;
	if (*how == BT_LOCK2_SAME || SMART_M_BT_NO_LOCK)
		return 0;
	if (t->hocl && llock_of(t, lw) == llock_of(t, hw)) {
		/* its slot is the one we are served in: no task of ours can
		 * hold a's word now, so take it remotely, beside the slot */
		*how = BT_LOCK2_DIRECT;
		return remote_acquire(t, w, lw, id);
	}
	return smart__bt_lock(t, w, a);
}

int smart__bt_unlock2(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		      int how, int err)
{
	static const uint64_t zero;
	smart_gaddr_t lw;
	uint16_t id;
	int rc, rc2;

	if (how == BT_LOCK2_QUEUED)
		return smart__bt_unlock(t, w, a, err);
	if (how == BT_LOCK2_SAME || SMART_M_BT_NO_LOCK)
		return err ? err : smart_sync(w);
	rc = lock_word(t, a, &lw, &id);
	if (!rc)
		rc = smart_write(w, lw, &zero, 8);
	rc2 = smart_sync(w);
	rc = rc ? rc : rc2;
	return err ? err : rc;
}
