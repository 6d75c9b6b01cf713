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
 *   and never releases, lest a late WRITE of 0 free a later holder's lock
 *   -- unless that worker is destroyed (smart_ctx_worker_gone, asked before
 *   the CAS): its destruction drained it, so nothing of it lands any more,
 *   and a CAS from our stamp (which nobody else ever writes) frees only a
 *   lock our lost unlock left.  Each unlock remembers its worker's index,
 *   which the ctx never reuses.
 * - Unlocks are remembered beside those not yet seen landed (each with its
 *   worker), up to SMART_DTX_ITEMS_MAX; a commit whose unlocks do not fit
 *   releases the waited way (dtx_commit.c).  So a commit that wrote nothing
 *   never waits for an older commit's unlocks: it posts no log.
 * - While any unlock is remembered the object holds its ctx
 *   (smart_ctx_hold): a ctx destroyed meanwhile, the object never freed,
 *   ends without a BYE, so the ids a lost unlock's lock names are buried
 *   and recovery resolves it, never a newcomer's ids.
 */
#include "ds/dtx/dtx_internal.h"

/* The source of unlock WRITEs (static: it outlives them). */
static const uint64_t unl_zero;

/* The locks x holds. */
static int held(const smart_dtx_txn_t *x)
{
	int i, n = 0;

	for (i = 0; i < x->n; i++)
		n += x->item[i].locked != 0;
	return n;
}

void smart__dtx_unlock_hold(smart_dtx_txn_t *x, int want)
{
	if (SMART_M_DTX_UNLOCK_NO_HOLD || want == x->unl_hold)
		return;
	(void)smart_ctx_hold(x->d->ctx, want ? 1 : -1);
	x->unl_hold = want;
}

/* What it posts is remembered after what is, also when a later op cannot
 * be posted (the caller then releases the rest the waited way, and a
 * READ-back later finds those landed). */
int smart__dtx_unlock_post(smart_dtx_txn_t *x, smart_worker_t *w)
{
	/* a test loses them, as a QP failing under them flushes them */
	int i, rc = 0, lost;

	if (x->nunl + held(x) > SMART_DTX_ITEMS_MAX &&
	    !SMART_M_DTX_UNLOCK_OVERFLOW) {
		smart__dtx_count(&x->d->unlocks_waited);
		return SMART_EBUSY; /* no room: nothing posted */
	}
	lost = smart__dtx_hook(w, "dtx.unlock.lost") != 0;
	if (!x->nunl)
		x->unl_nofold = 0;
	for (i = 0; i < x->n && !rc; i++) {
		struct dtx_item *it = &x->item[i];
		smart_gaddr_t lw = smart__dtx_rec_addr(it->t, 0, it->slot);
		uint64_t stamp =
			DTX_LOCK(smart__dtx_lease(x->d, smart_gaddr_blade(lw)),
				 x->slot, x->seq);

		if (!it->locked)
			continue;
		rc = lost ? 0 :
		     it->locked == 1 ?
			    smart__dtx_write(x, w, lw, &unl_zero, 8) :
			    smart_cas(w, lw, stamp, 0, NULL);
		if (rc)
			break;
		x->ops++;
		x->unl_lw[x->nunl] = lw;
		x->unl_stamp[x->nunl] = stamp;
		x->unl_wi[x->nunl++] = smart_worker_index(w);
		it->locked = 0;
	}
	smart__dtx_unlock_hold(x, x->nunl > 0);
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
	x->unl_wi[i] = x->unl_wi[x->nunl];
	smart__dtx_unlock_hold(x, x->nunl > 0);
}

/* Entry i's READ-back, taken on w, shows our stamp: whether its unlock can
 * no longer land, so that a CAS from the stamp may release it. */
static int unl_lost(smart_dtx_txn_t *x, int i, smart_worker_t *w)
{
	int wi = x->unl_wi[i];

	if (wi < 0) /* an internal worker: no identity */
		return 0;
	if (wi == smart_worker_index(w)) /* flushed: our READ ran behind it */
		return !SMART_M_DTX_UNLOCK_UNCHECKED;
	if (SMART_M_DTX_UNLOCK_ANY_WORKER)
		return 1;
	/* its worker destroyed: drained, nothing of it lands any more */
	return !SMART_M_DTX_UNLOCK_GONE_KEPT &&
	       smart_ctx_worker_gone(x->d->ctx, wi);
}

int smart__dtx_unlock_settle(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0;

	for (i = x->nunl - 1; i >= 0 && !rc; i--) {
		if (x->unl_rb[i] != x->unl_stamp[i]) {
			smart__dtx_count(&x->d->unlocks_checked);
			unl_drop(x, i); /* landed */
		} else if (unl_lost(x, i, w)) {
			/* never to land: ours to release */
			rc = smart_cas_sync(w, x->unl_lw[i], x->unl_stamp[i], 0,
					    NULL);
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
