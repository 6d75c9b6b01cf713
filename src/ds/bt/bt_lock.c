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
 * served; a remote word holds a stamp naming the process holding it
 * (its lease id; bt_redo.c adds where it logs its writes);
 * the release is posted behind the caller's write-back on the same QP
 * (both on the node's blade), so RC order lands the node before the
 * unlock: one round trip for both (command combining); a release or a
 * lock CAS whose completion is an error leaves no word taken by a live
 * client: it is settled (release_lost), the word freed or the ctx
 * fenced; a trylock or a heal holds its word with a stamp no slot's task
 * takes (try_stamp).
 */
#include "ds/bt/bt_internal.h"

int smart__bt_blade_index(const smart_bt_t *t, uint16_t blade)
{
	unsigned i;

	for (i = 0; i < t->nblades; i++)
		if (t->blades[i] == blade)
			return (int)i;
	return -1;
}

int smart__bt_lock_word(const smart_bt_t *t, smart_gaddr_t a, smart_gaddr_t *lw,
			uint64_t *base)
{
	uint16_t blade = smart_gaddr_blade(a);
	int b = smart__bt_blade_index(t, blade);

	if (b < 0)
		return SMART_EPROTO; /* a pointer off the tree's blades */
	*lw = smart_gaddr(blade,
			  t->lock_off[b] + 8 * (bt_mix(smart_gaddr_off(a)) &
						(t->locks - 1)));
	*base = BT_W_MAKE(t->lease[b], t->dslot[b], BT_REC_NONE, 0);
	return 0;
}

static struct bt_llock *llock_of(smart_bt_t *t, smart_gaddr_t lw)
{
	return &t->ll[bt_mix(lw) & (BT_LLOCKS - 1)];
}

/* Take over word lw from its dead holder (value `dead`): what it logged is
 * read first (an area is adopted only once none of its records still
 * stamps a word, so not before our CAS), then redone, the word taken only
 * once our own record of the redo landed (a taker dying between its CAS
 * and its record would leave a word naming nothing to redo over a torn
 * node).  1: taken, 0: the word changed meanwhile. */
static int take_over(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
		     uint64_t dead, uint64_t mine)
{
	size_t mark = smart_scratch_mark(w);
	uint64_t got = 0;
	void *snap;
	int have = 0, rc = smart_scratch_alloc(w, t->rec_size, &snap);

	if (!rc && !SMART_M_BT_NO_REPAIR)
		rc = smart__bt_redo_snap(t, w, lw, dead, snap, &have);
	if (!rc && have) /* the CAS inside, behind our record */
		rc = smart__bt_redo(t, w, lw, dead, mine, snap);
	else if (!rc)
		rc = smart_cas_sync(w, lw, dead, mine, &got),
		rc = rc ? rc : got == dead;
	if (rc == 1)
		atomic_fetch_add_explicit(&t->lock_takeovers, 1,
					  memory_order_relaxed);
	smart_scratch_release(w, mark);
	return rc;
}

/* Take the remote word: CAS 0 -> our stamp, or from a dead holder; after
 * `tries` failed CASes (0: no limit) SMART_EBUSY.  With rd (a node to read
 * under the lock, at rd->a into rd->buf): its READ rides behind the first
 * CAS in one chain (the word lives on the node's blade: one QP, executed
 * in order), and rd->done says whether that CAS took the word, so that
 * the READ saw the node under our lock. */
struct bt_lock_rd {
	smart_gaddr_t a;
	void *buf;
	size_t len;
	int done;
};

/* Is the holder that word got names alive: 1 (or our own id: another
 * task of this ctx, which lets go: a write of ours that could not be
 * finished, or a release that could not land, fences the ctx: bt_redo.c
 * settle, release_lost), 0 dead, or an error.  A word that names nobody
 * (id 0: a forgery or a stray write) is SMART_EPROTO: no holder will ever
 * let it go, and waiting for one would be for ever. */
static int holder_alive(smart_worker_t *w, smart_gaddr_t lw, uint64_t got,
			uint64_t mine)
{
	if (BT_W_ID(got) == BT_W_ID(mine))
		return 1;
	if (!BT_W_ID(got) && !SMART_M_BT_WAIT_NOBODY)
		return SMART_EPROTO;
	return smart_lease_alive(w, smart_gaddr_blade(lw), BT_W_ID(got));
}

static void release_lost(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			 uint64_t mine, int alone);
static uint64_t try_stamp(uint64_t id);

static int remote_acquire(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			  uint64_t mine, unsigned tries, struct bt_lock_rd *rd)
{
	uint64_t got;
	unsigned n = 0;
	int rc;

	for (;;) {
		if (rd) { /* the first CAS only: a taken word's waiter
				 * reads the node once it has it */
			rc = smart_cas(w, lw, 0, mine, &got);
			if (!rc)
				rc = smart_read(w, rd->a, rd->len, rd->buf);
			rc = rc ? rc : smart_sync(w);
			rd->done = !rc && got == 0;
			rd = NULL;
		} else {
			rc = smart_cas_sync(w, lw, 0, mine, &got);
		}
		/* (a test's seam: the CAS took the word, its completion an
		 * error, as when a QP breaks after executing it) */
		if (!rc && got == 0)
			rc = bt_seam(w, "bt.lock.landed");
		if (rc || got == 0)
			return rc;
		atomic_fetch_add_explicit(&t->lock_retries, 1,
					  memory_order_relaxed);
		rc = holder_alive(w, lw, got, mine);
		if (rc < 0)
			return rc;
		if (!SMART_M_BT_NO_TAKEOVER && !rc) {
			/* its holder is dead (fenced: it can write no more):
			 * take it over, redoing what it half wrote */
			rc = take_over(t, w, lw, got, mine);
			if (rc)
				return rc < 0 ? rc : 0;
			continue; /* it changed: CAS from 0 again */
		}
		if (tries && ++n == tries)
			return SMART_EBUSY;
		smart_task_yield(w);
	}
}

int smart__bt_heal(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a)
{
	static const uint64_t zero;
	smart_gaddr_t lw;
	uint64_t mine, got;
	int rc = smart__bt_lock_word(t, a, &lw, &mine);

	if (!rc)
		rc = smart_read_sync(w, lw, 8, &got);
	if (rc || !got || BT_W_ID(got) == BT_W_ID(mine) ||
	    SMART_M_BT_NO_TAKEOVER ||
	    smart_lease_alive_now(w, smart_gaddr_blade(lw), BT_W_ID(got)))
		return rc; /* free, ours, or a live writer's: it ends */
	/* outside the local slots: a stamp a slot's task never frees */
	mine = try_stamp(mine);
	rc = take_over(t, w, lw, got, mine);
	if (rc == 1) {
		rc = bt_seam(w, "bt.heal.release");
		rc = rc ? rc : smart_write_sync(w, lw, &zero, 8);
		if (rc && !SMART_M_BT_LOCK_LOST_KEPT)
			release_lost(t, w, lw, mine, 0);
	}
	return rc;
}

int smart__bt_lock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a)
{
	return smart__bt_lock_read(t, w, a, NULL, NULL);
}

int smart__bt_lock_read(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
			struct bt_node *buf, int *done)
{
	struct bt_lock_rd r = { a, buf, t->node_size, 0 },
			  *rd = buf ? &r : NULL;
	struct bt_llock *l;
	smart_gaddr_t lw;
	uint64_t held, id;
	uint32_t ticket;
	int rc = smart__bt_lock_word(t, a, &lw, &id);

	if (done)
		*done = 0;
	if (rc || SMART_M_BT_NO_LOCK)
		return rc;
	if (!t->hocl) {
		rc = remote_acquire(t, w, lw, id, 0, rd);
		if (rc && !SMART_M_BT_LOCK_LOST_KEPT)
			release_lost(t, w, lw, id, 0); /* its CAS may have
							 * landed */
		if (done)
			*done = !rc && r.done;
		return rc;
	}
	l = llock_of(t, lw);
	ticket = atomic_fetch_add(&l->next, 1);
	while (atomic_load(&l->serving) != ticket)
		smart_task_yield(w);
	held = atomic_load(&l->held);
	if (held == lw) {
		atomic_fetch_add_explicit(&t->handovers, 1,
					  memory_order_relaxed);
		return 0; /* handed over: already ours */
	}
	l->handovers = 0;
	if (held) {
		/* kept for a waiter of another word hashed here: let it go */
		uint64_t zero = 0;

		rc = smart_write_sync(w, held, &zero, 8);
		/* even on an error: a word we are not sure we hold is never
		 * taken as handed over */
		atomic_store(&l->held, 0);
	}
	if (!rc) {
		rc = remote_acquire(t, w, lw, id, 0, rd);
		/* an error after our CAS may have taken the word: freed
		 * while the slot is still ours, as a lost release */
		if (rc && !SMART_M_BT_LOCK_LOST_KEPT)
			release_lost(t, w, lw, id, 1);
	}
	if (!rc)
		atomic_store(&l->held, lw);
	else
		atomic_fetch_add(&l->serving, 1);
	if (done)
		*done = !rc && r.done;
	return rc;
}

/* Our release of lw (a WRITE of 0 behind the caller's write-back)
 * reported an error: it may have landed or not, and a lock whose release
 * is lost with nothing logged under it names us, alive, for good — every
 * writer of that node, ours included, would wait for as long as we live.
 * So it is tried again, as a CAS from the stamp we took the word with,
 * for half a lease (a broken QP is replaced at the next post); a word no
 * longer holding that stamp was released (or holds our logged write's
 * stamp, which smart__bt_write_end finishes or keeps).  The CAS frees
 * nobody else's lock: with the local table, only the task its slot
 * serves holds lw with `mine` (a trylock takes words with another stamp,
 * try_stamp), and that slot is ours until we return (`alone`).  Without
 * the local table any task of the object takes words with `mine`, and a
 * heal takes its word outside the slots: the word is only looked at, and
 * one still holding `mine` is taken as still ours.  Also for a lock CAS
 * whose completion is an error: it may have taken the word.  Then,
 * as for a write we cannot finish (bt_redo.c settle), the ctx is tainted
 * and fenced: peers take the word over from a dead client, lease_ms
 * later. */
static void release_lost(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t lw,
			 uint64_t mine, int alone)
{
	smart_ctx_t *ctx = smart_worker_ctx(w);
	uint64_t got = 0, until = smart_now_ns() +
				  smart__bt_settle_ns(w, smart_gaddr_blade(lw));
	int rc;

	while (!SMART_M_BT_RELEASE_ONCE && !smart_ctx_fenced(ctx)) {
		atomic_fetch_add_explicit(&t->release_retries, 1,
					  memory_order_relaxed);
		rc = bt_seam(w, "bt.release.retry");
		/* without the local table, only a look: is it `mine` still */
		rc = rc ? rc :
			  smart_cas_sync(w, lw, mine, alone ? 0 : mine, &got);
		if (!rc && (alone || got != mine))
			return; /* released now, or it had landed */
		if (!rc || smart_now_ns() >= until)
			break;
		smart_task_yield(w);
	}
	if (SMART_M_BT_RELEASE_NO_FENCE)
		return;
	(void)smart_ctx_taint(ctx); /* our ids are never a newcomer's */
	(void)smart_ctx_fence(ctx);
}

int smart__bt_unlock(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a, int err)
{
	static const uint64_t zero;
	struct bt_llock *l;
	smart_gaddr_t lw;
	uint64_t id;
	uint32_t waiting;
	int rc = smart__bt_lock_word(t, a, &lw, &id);

	if (SMART_M_BT_NO_LOCK)
		return err ? err : smart_sync(w);
	if (rc)
		return err ? err : rc;
	if (!t->hocl) {
		int rc2;

		rc = err ? bt_seam(w, "bt.unlock.failed") : 0;
		rc = rc ? rc : smart_write(w, lw, &zero, 8);
		rc2 = smart_sync(w);
		rc = rc ? rc : rc2;
		if (rc)
			release_lost(t, w, lw, id, 0);
		return err ? err : rc;
	}
	l = llock_of(t, lw);
	waiting = atomic_load(&l->next) - atomic_load(&l->serving) - 1;
	if (!err && waiting &&
	    (SMART_M_BT_NO_HANDOVER_LIMIT || l->handovers < BT_HANDOVER_MAX) &&
	    !(rc = smart_sync(w))) { /* the write-back, lock kept */
		l->handovers++;
	} else {
		/* after any error the lock is not handed over: a write that
		 * failed may not have landed (the writer finishes it,
		 * smart__bt_write_end, on a word nobody else holds) */
		/* (a test's seam: after an error, the release's post fails
		 * too, as on a broken QP) */
		int rc2 = err ? bt_seam(w, "bt.unlock.failed") : 0;

		rc2 = rc2 ? rc2 : smart_write(w, lw, &zero, 8);
		rc2 = rc2 ? rc2 : smart_sync(w); /* the caller's, too */
		/* (a test's seam: the release landed, its completion an
		 * error, as when a QP breaks after executing it) */
		rc2 = rc2 ? rc2 : bt_seam(w, "bt.release.landed");
		if (rc2) /* the slot still ours: nobody of ours takes lw */
			release_lost(t, w, lw, id, 1);
		rc = rc ? rc : rc2;
		/* even on an error: whether the release landed is unknown,
		 * and a word we are not sure we hold is never handed over */
		atomic_store(&l->held, 0);
	}
	atomic_fetch_add(&l->serving, 1);
	return err ? err : rc;
}

/* The stamp a trylock takes a word with: the lock's (same lease id and
 * directory slot, nothing logged) but for its sequence, so that the task
 * a local slot serves, retrying a release that may have landed
 * (release_lost), never frees a word a merge of ours took meanwhile. */
static uint64_t try_stamp(uint64_t id)
{
	if (SMART_M_BT_TRY_SAME_STAMP)
		return id;
	return BT_W_MAKE(BT_W_ID(id), BT_W_SLOT(id), BT_REC_NONE, 1);
}

int smart__bt_trylock(smart_bt_t *t, smart_worker_t *w,
		      const smart_gaddr_t *held, unsigned nheld,
		      smart_gaddr_t a, int *how)
{
	smart_gaddr_t lw, hw;
	uint64_t id, hid;
	unsigned k;
	int rc = smart__bt_lock_word(t, a, &lw, &id);

	*how = BT_TRY_NONE;
	for (k = 0; !rc && k < nheld; k++) {
		rc = smart__bt_lock_word(t, held[k], &hw, &hid);
		if (!rc && hw == lw) {
			*how = BT_TRY_SAME;
			return 0;
		}
	}
	if (rc || SMART_M_BT_NO_LOCK)
		return rc;
	/* beside the local slots: a task of ours holding the word through
	 * one makes the CAS fail like anybody else; our own stamp tells
	 * ours from a slot's (release_lost) */
	rc = remote_acquire(t, w, lw, try_stamp(id), BT_TRY_CASES, NULL);
	if (!rc)
		*how = BT_TRY_HELD;
	return rc;
}

int smart__bt_untry(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a, int how,
		    int err)
{
	static const uint64_t zero;
	smart_gaddr_t lw;
	uint64_t id;
	int rc = 0;

	if (how == BT_TRY_HELD && !SMART_M_BT_NO_LOCK) {
		rc = smart__bt_lock_word(t, a, &lw, &id);
		if (!rc)
			rc = smart_write(w, lw, &zero, 8);
	}
	return err ? err : rc;
}
