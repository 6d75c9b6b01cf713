/*
 * Smart-DTX: a committed transaction's unlocks, posted and not waited for
 * (docs/dtx.md §3, "The unlocks are not waited for").
 *
 * A commit whose every copy has landed posts a WRITE of 0 to each lock and
 * returns: 3 waited round trips, not 4.  The object remembers each lock
 * word and the stamp it held until it has seen the unlock land; the next
 * transaction of the object checks with a READ of each word riding its
 * first exec round (no round trip more), or an explicit check runs before
 * its undo log is posted, at smart_dtx_abort and at smart_dtx_txn_free.
 *
 * Invariants:
 * - An unlock is posted only after every copy of every record the
 *   transaction wrote has landed (a lock still held over such a record is
 *   recovery's evidence of a finished commit: forward).
 * - The object posts its next undo log only once every unlock of its last
 *   commit is seen landed (nunl == 0), so a slot's log is still overwritten
 *   only once no lock names its transaction (docs/dtx.md §5).
 * - A READ-back on the worker that posted the unlock runs on the same QP
 *   behind it (rule 3): it shows 0 or a later holder's stamp once the
 *   unlock ran; our stamp means the unlock failed (its QP went to error
 *   and was replaced, the WRITE flushed, never to land), and only then is
 *   the lock released again, by a CAS from the stamp.  On another worker's
 *   QPs the unlock may still land later: the check waits for it (bounded)
 *   and never releases, lest a late WRITE of 0 free a later holder's lock.
 */
#include "ds/dtx/dtx_internal.h"

/* The source of unlock WRITEs (static: it outlives them). */
static const uint64_t unl_zero;

/* Called with nothing remembered (smart__dtx_unlock_reap first): what it
 * posts is remembered, also when a later op cannot be posted (the caller
 * then releases the rest the waited way, and a READ-back later finds
 * those landed). */
int smart__dtx_unlock_post(smart_dtx_txn_t *x, smart_worker_t *w)
{
	/* a test loses them, as a QP failing under them flushes them */
	int i, rc = 0, lost = smart__dtx_hook(w, "dtx.unlock.lost") != 0;

	x->nunl = 0;
	x->unl_nofold = 0;
	x->unl_w = w;
	for (i = 0; i < x->n && !rc; i++) {
		struct dtx_item *it = &x->item[i];
		smart_gaddr_t lw = smart__dtx_rec_addr(it->t, 0, it->slot);
		uint64_t stamp = DTX_LOCK(smart__dtx_lease(x->d,
				smart_gaddr_blade(lw)), x->slot, x->seq);

		if (!it->locked)
			continue;
		rc = lost ? 0 : it->locked == 1 ?
			smart__dtx_write(x, w, lw, &unl_zero, 8) :
			smart_cas(w, lw, stamp, 0, NULL);
		if (rc)
			break;
		x->ops++;
		x->unl_lw[x->nunl] = lw;
		x->unl_stamp[x->nunl++] = stamp;
		it->locked = 0;
	}
	return rc ? rc : smart_post(w);
}

int smart__dtx_unlock_check_post(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0;

	for (i = 0; i < x->nunl && !rc; i++)
		rc = smart_read(w, x->unl_lw[i], 8, &x->unl_rb[i]);
	return rc;
}

/* Forget entry i (its unlock is done). */
static void unl_drop(smart_dtx_txn_t *x, int i)
{
	x->nunl--;
	x->unl_lw[i] = x->unl_lw[x->nunl];
	x->unl_stamp[i] = x->unl_stamp[x->nunl];
	x->unl_rb[i] = x->unl_rb[x->nunl];
}

int smart__dtx_unlock_settle(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0;

	for (i = x->nunl - 1; i >= 0 && !rc; i--) {
		if (x->unl_rb[i] != x->unl_stamp[i]) {
			smart__dtx_count(&x->d->unlocks_checked);
			unl_drop(x, i);		/* landed */
		} else if (w == x->unl_w && !SMART_M_DTX_UNLOCK_UNCHECKED) {
			/* flushed, never to land: ours to release */
			rc = smart_cas_sync(w, x->unl_lw[i], x->unl_stamp[i],
					    0, NULL);
			if (!rc) {
				smart__dtx_count(&x->d->unlocks_redone);
				unl_drop(x, i);
			}
		}
	}
	return rc ? rc : x->nunl ? SMART_EBUSY : 0;
}

/* The check failed: each lock word alone.  One whose blade is gone
 * (SMART_ECONN) is forgotten: nothing of ours lands there any more, and
 * the blade (if it lives on) fenced us when our session ended, so its
 * lock goes to recovery, which rolls a finished commit forward. */
static int check_each(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0;

	for (i = x->nunl - 1; i >= 0 && !rc; i--) {
		rc = smart_read_sync(w, x->unl_lw[i], 8, &x->unl_rb[i]);
		if (rc == SMART_ECONN && !SMART_M_DTX_UNLOCK_KEEP_DEAD) {
			unl_drop(x, i);
			rc = 0;
		} else if (rc) {
			break;
		}
	}
	return rc;
}

/* Tries of the explicit check while another worker's unlock is in flight
 * (each a round trip, the others' polls in between). */
#define DTX_UNLOCK_TRIES 64

int smart__dtx_unlock_reap(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int tries, rc = 0;

	for (tries = 0; x->nunl && tries < DTX_UNLOCK_TRIES; tries++) {
		if (tries)
			smart_task_yield(w);
		rc = smart__dtx_unlock_check_post(x, w);
		rc = rc ? rc : smart_sync(w);
		if (rc)
			rc = check_each(x, w);
		rc = rc ? rc : smart__dtx_unlock_settle(x, w);
		if (rc != SMART_EBUSY)
			break;
	}
	return x->nunl && !rc ? SMART_EBUSY : rc;
}
