/*
 * One-sided ops: queueing on per-task chains, posting, completion, sync.
 *
 * The fast path (smart_read & co. -> op_queue -> chain; smart_sync -> post
 * -> wait -> deliver; smart_read_sync & co. with nothing queued -> post ->
 * wait -> deliver, op_sync_fast) does no allocation and no system call and
 * takes no lock in the per-thread modes: chains, batches and bounce slots
 * were all allocated with the task slot.  Validation happens before anything is
 * queued, so a rejected op leaves no trace.
 *
 * Results that cannot land in place (caller memory outside the registered
 * pool, CAS/FAA old values) go through bounce slots and are delivered when
 * the sync that covers them completes; running out of slots or records
 * forces such a sync early, which callers cannot observe except as a
 * yield.  Errors of an implicit sync are kept for the next explicit one.
 */
#include <string.h>

#include "runtime/core.h"
#include "util/mutant.h"

static inline int cnt_sub(_Atomic int *c, int v, int shared)
{
	int n;

	if (shared)
		return atomic_fetch_sub_explicit(c, v, memory_order_acq_rel) -
		       v;
	n = atomic_load_explicit(c, memory_order_relaxed) - v;
	atomic_store_explicit(c, n, memory_order_relaxed);
	return n;
}

/* Add to a counter of any atomic integer type: a task's batches in
 * flight, a QP's WRs posted and not completed. */
#define cnt_add(c, v, shared)                                                  \
	do {                                                                   \
		if (shared)                                                    \
			atomic_fetch_add_explicit((c), (v),                    \
						  memory_order_relaxed);       \
		else                                                           \
			atomic_store_explicit(                                 \
				(c),                                           \
				atomic_load_explicit((c),                      \
						     memory_order_relaxed) +   \
					(v),                                   \
				memory_order_relaxed);                         \
	} while (0)

static inline void set_error(struct smart__task *t, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&t->first_error, &zero, err);
}

void smart__batch_complete(struct smart_worker *w, struct smart__batch *b,
			   int shared)
{
	struct smart__task *t = b->task;

	/* In a shared group a batch a failed CQ left behind is failed by
	 * its owner (worker.c) while another worker may be handling its
	 * last real completion: whoever takes busy from 1 completes it. */
	if (shared &&
	    !__atomic_compare_exchange_n(&b->busy, &(uint32_t){ 1 }, 2, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	SMART_STAT_ADD(w, SMART_STAT_WRS_DONE, b->n);
	if (smart_unlikely(t->w->throttle))
		smart__credit_add(t->w, (int)b->n);
	__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
	/* In a shared group another worker may complete our batch: only the
	 * owner touches its run queue, it finds such tasks by scanning. */
	if (cnt_sub(&t->inflight, 1, shared) == 0 && t->w == w)
		smart__task_wake(w, t);
}

static __attribute__((noinline)) struct smart__batch *
batch_alloc(struct smart_worker *w, struct smart__task *t, struct smart__qp *qp)
{
	int i;

	for (;;) {
		for (i = 0; i < SMART_TASK_BATCHES; i++) {
			struct smart__batch *b = &t->batches[i];

			if (!__atomic_load_n(&b->busy, __ATOMIC_ACQUIRE)) {
				b->busy = 1;
				b->task = t;
				return b;
			}
		}
		/* all in flight: let them land, qp kept meanwhile (another
		 * task may retire it, and group_reap free it) */
		t->pinned = qp;
		smart__task_wait(w, t);
		t->pinned = NULL;
	}
}

/* Make progress while a send queue is full. */
static void wait_room(struct smart_worker *w, struct smart__task *t)
{
	SMART_STAT_INC(w, SMART_STAT_QP_FULL);
	if (t == &w->main_task)
		smart__worker_poll(w);
	else
		smart_task_yield(w);
}

/* Post a chain whole, waiting for room in turn.  Without the turns, room
 * freed by a poll went to whichever task ran next, and with many tasks
 * per QP some never found enough of it (test_flush_storm, FILL=81408).
 * Nobody waits: post at once; else take a ticket and post when it is
 * this ticket's turn and the chain fits, then pass the turn on.  Posting
 * fails for good (a broken QP, a dead remote) only with an error other
 * than SMART_EAGAIN, which passes the turn on too. */
static __attribute__((noinline)) int
post_wait_turn(struct smart_worker *w, struct smart__task *t,
	       struct smart__qp *qp, struct smart_tp_wr *wr, int n)
{
	uint32_t me;
	int rc;

	me = atomic_fetch_add(&qp->room_next, 1);
	for (;;) {
		if (SMART_M_OPS_NO_ROOM_TURN ||
		    atomic_load(&qp->room_turn) == me) {
			rc = w->tp->post(qp->tqp, wr, n);
			if (rc != SMART_EAGAIN)
				break;
		}
		wait_room(w, t);
	}
	atomic_fetch_add(&qp->room_turn, 1);
	return rc;
}

static inline __attribute__((always_inline)) int
post_in_turn(struct smart_worker *w, struct smart__task *t,
	     struct smart__qp *qp, struct smart_tp_wr *wr, int n)
{
	int rc;

	if (atomic_load_explicit(&qp->room_next, memory_order_relaxed) ==
	    atomic_load_explicit(&qp->room_turn, memory_order_relaxed)) {
		rc = w->tp->post(qp->tqp, wr, n);
		if (smart_likely(rc != SMART_EAGAIN))
			return rc;
	}
	return post_wait_turn(w, t, qp, wr, n);
}

/* A chain of one WR (the common sync) posted by the transport's post1
 * (docs/design.md §9.2): one call, none of post's tests for a chain of
 * any kind.  Taken only in a private group (w->post1) and when nobody
 * waits for room (a waiter's turn is never passed); nothing yields
 * between the turn's test and the post.  1 when it posted; 0 (a waiter,
 * a full queue, a QP or WR of post's general way) when the caller must
 * post in turn. */
static inline __attribute__((always_inline)) int
post1_turn_done(smart__post1_fn post1, struct smart__qp *qp,
		const struct smart_tp_wr *wr)
{
	return (SMART_M_OPS_SLOT_NO_TURN ||
		atomic_load_explicit(&qp->room_next, memory_order_relaxed) ==
			atomic_load_explicit(&qp->room_turn,
					     memory_order_relaxed)) &&
	       smart_likely(post1(qp->tqp, wr) == 0);
}

/* post1_turn_done by the worker's post1, which is NULL where there is
 * none (verbs, a shared group): 0 then. */
static inline __attribute__((always_inline)) int
post1_done(struct smart_worker *w, struct smart__qp *qp,
	   const struct smart_tp_wr *wr)
{
	return smart_likely(w->post1 != NULL) &&
	       post1_turn_done(w->post1, qp, wr);
}

/* The transport refused batch b's chain to blade: none of it is in
 * flight.  Out of line: the posting path keeps its registers. */
static __attribute__((noinline, cold)) void post_failed(struct smart_worker *w,
							struct smart__task *t,
							struct smart__batch *b,
							uint16_t blade, int rc)
{
	struct smart__qp *qp = b->qp;
	int n = (int)b->n;

	set_error(t, rc);
	/* an announcement prepended to these WRs did not go out */
	w->ctx->svc->qp_new(w, blade);
	__atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
	if (w->throttle)
		smart__credit_add(w, n);
	/* a QP in error, or one on a failed CQ (which a poll then finds and
	 * replaces): the next op gets a new one */
	if (rc == SMART_EQP) {
		atomic_store(&qp->broken, 1);
		smart__worker_poll(w);
	}
}

/* The general post of chain c's n WRs (c->n is 0 already, the WRs still
 * there, marked for batch b, whose QP is set), in turn. */
static inline __attribute__((always_inline)) void
post_turn_at(struct smart_worker *w, struct smart__task *t,
	     struct smart__chain *c, struct smart__batch *b, int n)
{
	int rc;

	/* b->qp is set and b busy before the post: a QP retired while this
	 * task waits for room is not freed under it (worker.c group_reap) */
	t->posting = b; /* not in flight yet: no poll may fail it */
	rc = post_in_turn(w, t, b->qp, c->wr, n);
	t->posting = NULL;
	if (smart_unlikely(rc)) {
		post_failed(w, t, b, c->blade, rc);
		return;
	}
	cnt_add(&t->inflight, 1, w->group->shared);
	SMART_STAT_ADD(w, SMART_STAT_WRS_POSTED, (uint64_t)n);
	SMART_STAT_INC(w, SMART_STAT_DOORBELLS);
}

/* post_turn_at for a chain of one WR that post1 did not take (the
 * one-WR sync's, out of line). */
static __attribute__((noinline)) void post_turn(struct smart_worker *w,
						struct smart__task *t,
						struct smart__chain *c,
						struct smart__batch *b, int n)
{
	post_turn_at(w, t, c, b, n);
}

/* Batch b takes n WRs to qp, last the last of them: it is signaled, its
 * wr_id marked (worker.c; the others are marked by the caller). */
static inline __attribute__((always_inline)) void
batch_seal_wr(struct smart__batch *b, struct smart_tp_wr *last,
	      struct smart__qp *qp, int n)
{
	last->wr_id = (uint64_t)(uintptr_t)b | 1;
	last->flags |= SMART_TP_SIGNALED;
	b->qp = qp;
	b->n = (uint32_t)n;
}

/* batch_seal_wr of chain c's n WRs. */
static inline __attribute__((always_inline)) void
batch_seal(struct smart__batch *b, struct smart__chain *c, struct smart__qp *qp,
	   int n)
{
	batch_seal_wr(b, &c->wr[n - 1], qp, n);
}

/* Post chain c of t.  Always inlined into task_post (the sync's post, a
 * call and its frame were a seventh of the post's cost); post_chain is
 * the out-of-line copy for the rarer callers. */
static inline __attribute__((always_inline)) void
post_chain_at(struct smart_worker *w, struct smart__task *t,
	      struct smart__chain *c)
{
	struct smart__batch *b;
	struct smart__qp *qp;
	int i, n, rc;

	rc = smart__worker_qp(w, c->blade, &qp);
	/* a fenced ctx posts nothing more, not even what it queued before
	 * the fence (on verbs the NIC would run it at once) */
	if (smart_unlikely(atomic_load_explicit(&w->ctx->fenced,
						memory_order_relaxed)))
		rc = SMART_EFENCED;
	if (smart_unlikely(rc)) {
		c->n = 0;
		set_error(t, rc);
		return;
	}
	/* a reclamation announcement rides in front (the chain-prelude) */
	if (smart_unlikely(w->ebr_dirty))
		w->ctx->svc->chain_prelude(w, c);
	n = c->n;
	c->n = 0;
	if (!n)
		return;
	smart__credit_take(w, t, n, qp);
	/* the task's first batch when it is free (a task that syncs each
	 * chain finds it so: the common case), else the search */
	b = &t->batches[0];
	if (smart_likely(!__atomic_load_n(&b->busy, __ATOMIC_ACQUIRE)))
		b->busy = 1; /* b->task is t since the slot's creation */
	else
		b = batch_alloc(w, t, qp);
	/* only the last WR is signaled, its wr_id marked (worker.c); a
	 * chain of one WR, the common sync, skips the loop */
	for (i = 0; i < n - 1; i++) {
		c->wr[i].wr_id = (uint64_t)(uintptr_t)b;
		c->wr[i].flags &= (uint8_t)~SMART_TP_SIGNALED;
	}
	batch_seal(b, c, qp, n);
	/* One WR through post1 (a private group: w->post1 is set only
	 * there): nothing yields or polls from here to the post, so no
	 * retirement reaps the QP and no poll sees the batch in between;
	 * the task's count moves after the post by a plain add (no other
	 * worker touches it), no posting mark is needed (worker_fail_stale runs
	 * in a poll), and the chain counts in SMART_STAT_WRS_POSTED and
	 * SMART_STAT_DOORBELLS by one counter (w->posts1, stats.c). */
	if (n == 1 && post1_done(w, qp, c->wr)) {
		smart_own_add_is_zero(&t->inflight, 1);
		smart_counter_add(&w->posts1, 1);
		return;
	}
	post_turn_at(w, t, c, b, n);
}

static __attribute__((noinline)) void post_chain(struct smart_worker *w,
						 struct smart__task *t,
						 struct smart__chain *c)
{
	post_chain_at(w, t, c);
}

/* The sync's post: the first chain inline (a sync to one blade, the
 * common case, pays no loop), the others through post_chain. */
static inline __attribute__((always_inline)) void
task_post(struct smart_worker *w, struct smart__task *t)
{
	int i;

	/* nothing a post does opens or closes a chain of t */
	if (smart_likely(t->nchains == 1)) {
		if (t->chains[0].n)
			post_chain_at(w, t, &t->chains[0]);
		return;
	}
	for (i = 0; i < t->nchains; i++)
		if (t->chains[i].n)
			post_chain(w, t, &t->chains[i]);
}

/* Hand results to the caller and count failed CASes. */
/* A CAS whose old value (where the transport put it) is not the one it
 * expected failed: SMART_STAT_CAS_FAILS (deliver, from a record; op_sync_fast
 * after its wait, with none, whether or not the sync failed, as deliver
 * runs either way). */
static inline void cas_fail_count(struct smart_worker *w, const void *got,
				  uint64_t expect)
{
	uint64_t old;

	memcpy(&old, got, 8);
	if (old != expect)
		SMART_STAT_INC(w, SMART_STAT_CAS_FAILS);
}

static __attribute__((noinline)) void deliver(struct smart_worker *w,
					      struct smart__task *t)
{
	int i;

	for (i = 0; i < t->nrec; i++) {
		struct smart__bounce *r = &t->rec[i];

		if (r->dst && r->dst != r->src)
			memcpy(r->dst, r->src, r->len);
		if (r->is_cas)
			cas_fail_count(w, r->src, r->expect);
	}
	t->nrec = 0;
	t->nslot = 0;
}

/* A sampled sync's latency: the latency histogram, and the round-trip
 * estimate of its blade, an EWMA (1/8) that ConflictAvoid takes as its
 * backoff unit (backoff.c). */
static void sync_sampled(struct smart_worker *w, int blade, uint64_t dt)
{
	uint32_t *rtt;

	if (w->ctx->o.latency_stats)
		smart_hist_add(w->hist, dt);
	/* a sample that took a QP's connect (every task's first sync is
	 * sampled, and a fresh worker's first connects) would start the
	 * estimate at ~100 round trips, which the 1/8 average takes
	 * hundreds of syncs to forget (test_core:rtt_first_sample) */
	if (smart_unlikely(w->rtt_skip)) {
		w->rtt_skip = 0;
		return;
	}
	if (blade < 0 || dt > UINT32_MAX)
		return;
	/* a sample far above the estimate is a descheduled thread or a
	 * queue, not the round trip: clip it */
	rtt = &w->rtt[blade];
	if (*rtt && dt > 2 * (uint64_t)*rtt)
		dt = 2 * (uint64_t)*rtt;
	*rtt = *rtt ? (uint32_t)(((uint64_t)*rtt * 7 + dt) / 8) : (uint32_t)dt;
}

/* Is t's next sync the sampled one (one in SMART_LAT_SAMPLE of each
 * task's, picked by its count of syncs)? */
static inline __attribute__((always_inline)) int
sync_sample_turn(const struct smart__task *t)
{
	return !(t->syncs & (SMART_LAT_SAMPLE - 1));
}

/* A sync's own way (task_sync1, op_sync_fast) gives way to the general
 * sync when it has an announcement to prepend or, under WorkReqThrot, no
 * credit it may take now (smart__credit_take1); else 0, its credit taken
 * when throttled.  One test of the union sync1_off in the common case. */
static inline __attribute__((always_inline)) int
sync1_give_way(struct smart_worker *w)
{
	return smart_unlikely(w->sync1_off) &&
	       (w->ebr_dirty || !smart__credit_take1(w));
}

/* smart__task_wait's common case, inline in the sync: a task (not the
 * main context) whose batches are in flight while another task is ready,
 * and the scheduler would run that one next without polling
 * (smart__task_switch_direct), switches straight to it, and back here
 * once woken (task_polls_in_place would not poll: a task is ready).
 * Every other wait is smart__task_wait's. */
static inline __attribute__((always_inline)) void
sync_wait(struct smart_worker *w, struct smart__task *t)
{
	if (w->ready_head && smart_likely(t != &w->main_task) &&
	    smart__task_switch_direct(w)) {
		t->state = SMART_TASK_WAITING;
		smart__task_switch_to(w, t, smart__ready_pop(w));
		if (smart_unlikely(t->state == SMART_TASK_WAITING))
			smart__task_wait_out(w, t);
		return;
	}
	smart__task_wait(w, t);
}

static inline __attribute__((always_inline)) int
task_sync_end(struct smart_worker *w, struct smart__task *t, int sampled,
	      uint64_t t0, int blade);

/* A sync is done: counted in t, and its answer, the first error of its
 * ops (taken: the next sync starts clean), SMART_EFENCED whatever the
 * transport said once the ctx is fenced, else 0. */
static inline __attribute__((always_inline)) int
sync_done(struct smart_worker *w, struct smart__task *t)
{
	int rc = atomic_load_explicit(&t->first_error, memory_order_relaxed);

	t->syncs++;
	if (smart_unlikely(rc)) {
		t->sync_errors++;
		atomic_store(&t->first_error, 0);
		/* whatever the transport said, the reason is the fence */
		if (atomic_load(&w->ctx->fenced))
			rc = SMART_EFENCED;
	}
	return rc;
}

/* The sync; sampled: its latency measured (sync_sampled).  Always
 * inlined, with sampled a constant: the common sync carries none of the
 * sample's tests. */
static inline __attribute__((always_inline)) int
task_sync_at(struct smart_worker *w, struct smart__task *t, int sampled)
{
	uint64_t t0 = 0;
	int blade = -1;

	if (sampled) {
		t0 = smart__rdtsc();
		/* a sampled sync to one blade measures that blade's round
		 * trip */
		if (t->nchains == 1)
			blade = t->chains[0].blade;
	}
	task_post(w, t);
	return task_sync_end(w, t, sampled, t0, blade);
}

/* A sync's wait and end once its chains are posted (task_sync_at, the
 * one-WR sync, task_sync1, and op_sync_fast when post1 refused its WR;
 * op_sync_fast's common way has its own, knowing what this tests). */
static inline __attribute__((always_inline)) int
task_sync_end(struct smart_worker *w, struct smart__task *t, int sampled,
	      uint64_t t0, int blade)
{
	/* a sync that waits counts in SMART_STAT_ROUND_TRIPS and
	 * SMART_STAT_SYNCS by one counter (w->syncs_waited, stats.c) */
	if (atomic_load_explicit(&t->inflight, memory_order_acquire)) {
		t->round_trips++;
		sync_wait(w, t);
		smart_counter_add(&w->syncs_waited, 1);
	} else {
		SMART_STAT_INC(w, SMART_STAT_SYNCS);
	}
	t->nchains = 0;
	if (t->nrec)
		deliver(w, t);
	if (sampled)
		sync_sampled(w, blade, smart__rdtsc() - t0);
	return sync_done(w, t);
}

static __attribute__((noinline)) int task_sync_sampled(struct smart_worker *w,
						       struct smart__task *t)
{
	return task_sync_at(w, t, 1);
}

/* Every unsampled sync but the one-WR sync's common case. */
static __attribute__((noinline)) int task_sync_general(struct smart_worker *w,
						       struct smart__task *t)
{
	return task_sync_at(w, t, 0);
}

/* The common sync, reached from smart_sync by a jump: one chain of one
 * WR, its QP in the worker's cache, and none of post_chain_at's other
 * ways (the fence, an announcement to prepend, credits, a busy first
 * batch): tested before anything changes, each sends the sync to
 * task_sync_general whole, which tests them again as before.  Then the
 * WR is marked and posted as post_chain_at posts a chain of one WR:
 * post1 when the group is private and nobody waits for room
 * (post1_done), else in turn (post_turn, out of line).  Its own function:
 * with the general post (and its loop over chains) out of its way, only
 * w and t live across its calls, so it saves three registers where the
 * general sync saves six. */
static __attribute__((noinline)) int task_sync1(struct smart_worker *w,
						struct smart__task *t)
{
	struct smart__chain *c = &t->chains[0];
	struct smart__batch *b = &t->batches[0];
	struct smart__qp *qp = smart__worker_qp_cached(w, c->blade);

	if (smart_unlikely(!qp ||
			   (!SMART_M_OPS_SYNC1_NO_FENCE &&
			    atomic_load_explicit(&w->ctx->fenced,
						 memory_order_relaxed)) ||
			   (!SMART_M_OPS_SYNC1_NO_BUSY &&
			    __atomic_load_n(&b->busy, __ATOMIC_ACQUIRE)) ||
			   sync1_give_way(w)))
		return task_sync_general(w, t);
	c->n = 0;
	b->busy = 1; /* b->task is t since the slot's creation */
	batch_seal(b, c, qp, 1);
	/* as post_chain_at's one-WR way (its comment says why) */
	if (smart_likely(post1_done(w, qp, c->wr))) {
		smart_own_add_is_zero(&t->inflight, 1);
		smart_counter_add(&w->posts1, 1);
	} else {
		post_turn(w, t, c, b, 1);
	}
	return task_sync_end(w, t, 0, 0, -1);
}

/* Always inlined into smart_sync (rec_take's early sync calls that): one
 * sync in SMART_LAT_SAMPLE of each task is sampled, out of line. */
static inline __attribute__((always_inline)) int
task_sync(struct smart_worker *w, struct smart__task *t)
{
	if (smart_unlikely(sync_sample_turn(t)))
		return task_sync_sampled(w, t);
	/* the chain's length first: a longer chain leaves at one test;
	 * and only with a post1 (shm's, a private group): without one
	 * (verbs), task_sync1's out-of-line post_turn cost more than the
	 * general sync's inline post (READ 8 B 1 x 8 on rxe 923.1 -> 947.0
	 * instructions per op, docs/design.md §9.6) */
	if (smart_likely(t->chains[0].n == 1 && t->nchains == 1 && w->post1))
		return task_sync1(w, t);
	return task_sync_general(w, t);
}

int smart_fence(smart_worker_t *w)
{
	if (smart_unlikely(!w))
		return SMART_EINVAL;
	smart__cur_task(w)->fence_next = 1;
	return 0;
}

int smart_post(smart_worker_t *w)
{
	if (smart_unlikely(!w))
		return SMART_EINVAL;
	task_post(w, smart__cur_task(w));
	return 0;
}

int smart_poll(smart_worker_t *w)
{
	if (smart_unlikely(!w))
		return SMART_EINVAL;
	return smart__worker_poll(w);
}

int smart_sync(smart_worker_t *w)
{
	if (smart_unlikely(!w))
		return SMART_EINVAL;
	return task_sync(w, smart__cur_task(w));
}

/* The open chain of t for blade; posts to make room when needed. */
static __attribute__((noinline)) struct smart__chain *
chain_for_slow(struct smart_worker *w, struct smart__task *t, uint16_t blade)
{
	struct smart__chain *c;
	int i;

	for (i = 0; i < t->nchains; i++) {
		c = &t->chains[i];
		if (c->blade != blade)
			continue;
		if (smart_unlikely(c->n == w->ctx->o.chain_max))
			post_chain(w, t, c);
		return c;
	}
	if (smart_unlikely(t->nchains == SMART_TASK_CHAINS)) {
		task_post(w, t);
		t->nchains = 0;
	}
	c = &t->chains[t->nchains++];
	c->blade = blade;
	c->n = 0;
	return c;
}

/* chain_for_slow's common cases inline in op_queue: a task's first op
 * opens its first chain, and the next ones of a sync to the same blade
 * find it open with room. */
static inline __attribute__((always_inline)) struct smart__chain *
chain_for(struct smart_worker *w, struct smart__task *t, uint16_t blade)
{
	struct smart__chain *c = &t->chains[0];

	if (!t->nchains) {
		t->nchains = 1;
		c->blade = blade;
		c->n = 0;
		return c;
	}
	if (t->nchains == 1 && c->blade == blade && c->n < w->ctx->o.chain_max)
		return c;
	return chain_for_slow(w, t, blade);
}

void smart__post_blade(struct smart_worker *w, struct smart__task *t,
		       uint16_t blade)
{
	struct smart__chain *c = chain_for(w, t, blade);

	post_chain(w, t, c);
}

/* A record (and, when slot, a bounce slot) for a result; syncs early when
 * they run out.  Returns the slot memory or NULL when !slot. */
static void *rec_take(struct smart_worker *w, struct smart__task *t, int slot,
		      struct smart__bounce **rec)
{
	if (smart_unlikely(t->nrec == SMART_TASK_BOUNCES ||
			   (slot && t->nslot == SMART_TASK_BOUNCES))) {
		int rc = smart_sync(w);

		if (rc)
			set_error(t, rc);
	}
	*rec = &t->rec[t->nrec++];
	if (!slot)
		return NULL;
	SMART_STAT_INC(w, SMART_STAT_BOUNCES);
	return t->bounce_mem + (size_t)SMART_BOUNCE_MAX * t->nslot++;
}

struct op {
	uint8_t opcode;
	void *buf; /* caller's local memory */
	smart_gaddr_t ga;
	uint32_t len;
	uint64_t a1, a2; /* compare/add, swap */
};

/* Where a WR of the op goes: the responder's address and key. */
struct op_target {
	uint64_t remote;
	uint32_t rkey;
};

/* op's WR, to `remote` under `rkey` with the local bytes at `local`,
 * and the op's bytes counted in t.  Field by field: a compound literal
 * was built on the stack and copied; wr_id is the batch's (batch_seal).
 * Only an atomic's operands are written (a READ's or WRITE's union is
 * never read; the opcode is a constant where this is inlined), and never
 * _pad, which nothing reads. */
static inline __attribute__((always_inline)) void
wr_put(struct smart__task *t, struct smart_tp_wr *wr, const struct op *op,
       uint64_t remote, uint32_t rkey, void *local, uint32_t lkey,
       uint8_t flags)
{
	wr->remote = remote;
	wr->local = local;
	wr->len = op->len;
	wr->lkey = lkey;
	wr->rkey = rkey;
	wr->opcode = op->opcode;
	wr->flags = flags;
	if (smart_tp_atomic(op->opcode)) {
		wr->compare_add = op->a1;
		wr->swap = op->a2;
	}
	t->bytes += op->len; /* smart_task_bytes: 8 for an atomic */
}

/* Append op's WR to chain c of t (wr_put). */
static inline __attribute__((always_inline)) void
chain_put(struct smart__task *t, struct smart__chain *c, const struct op *op,
	  uint64_t remote, uint32_t rkey, void *local, uint32_t lkey,
	  uint8_t flags)
{
	wr_put(t, &c->wr[c->n++], op, remote, rkey, local, lkey, flags);
}

/* Always inlined: out of line it cost 11 instructions per op. */
static inline __attribute__((always_inline)) int
op_check(struct smart_worker *w, const struct op *op, struct smart__blade **bo,
	 struct op_target *to)
{
	struct smart__blade *b = smart__blade_get(w->ctx,
						  smart_gaddr_blade(op->ga));
	uint64_t off = smart_gaddr_off(op->ga);

	*bo = b;
	if (smart_unlikely(!b))
		return SMART_ENOENT;
	if (smart_unlikely(
		    atomic_load_explicit(&b->fail, memory_order_relaxed)))
		return atomic_load(&b->fail);
	*to = (struct op_target){ b->base + off, b->rkey };
	if (smart_unlikely(off >= b->size || op->len > b->size - off)) {
		/* device memory: SMART_GADDR_DM and an offset from 0 */
		off &= ~SMART_GADDR_DM;
		if (!smart_gaddr_is_dm(op->ga) || off >= b->dm_len ||
		    op->len > b->dm_len - off)
			return SMART_EREMOTE;
		*to = (struct op_target){ off, b->dm_rkey };
	}
	if (smart_tp_atomic(op->opcode)) {
		/* an atomic needs the transport's atomics (caps.atomics) */
		if (!w->ctx->caps.atomics)
			return SMART_ENOTSUP;
		if (off & 7)
			return SMART_EINVAL;
	}
	return 0;
}

/* Where the transport reads or writes the op's local bytes: in place
 * (registered pool, or inline for a small WRITE) or a bounce slot.
 * in_pool says whether op->buf lies in the registered pool. */
static inline __attribute__((always_inline)) void *
op_local(struct smart_worker *w, struct smart__task *t, const struct op *op,
	 int in_pool, uint8_t *flags)
{
	int atomic = smart_tp_atomic(op->opcode);
	struct smart__bounce *r;
	void *slot;

	if (op->opcode == SMART_TP_WRITE &&
	    op->len <= w->ctx->caps.max_inline) {
		*flags = SMART_TP_INLINE;
		return op->buf;
	}
	if (in_pool && (!atomic || !((uintptr_t)op->buf & 7))) {
		if (atomic) {
			rec_take(w, t, 0, &r);
			*r = (struct smart__bounce){ NULL, op->buf, 8,
						     op->opcode == SMART_TP_CAS,
						     op->a1 };
		}
		return op->buf;
	}
	slot = rec_take(w, t, 1, &r);
	*r = (struct smart__bounce){ op->opcode == SMART_TP_WRITE ? NULL :
								    op->buf,
				     slot, op->len, op->opcode == SMART_TP_CAS,
				     op->a1 };
	if (op->opcode == SMART_TP_WRITE)
		memcpy(slot, op->buf, op->len);
	return slot;
}

/* Always inlined into each public op: the op's fields are then constants
 * or the caller's registers, not a struct in memory read back (a call
 * and the struct cost ~25 instructions per op). */
static inline __attribute__((always_inline)) int
op_queue(struct smart_worker *w, const struct op *op)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__blade *b;
	struct smart__chain *c;
	struct op_target to = { 0, 0 }; /* op_check sets it when it passes */
	uint8_t flags = 0;
	void *local;
	int in_pool, rc = op_check(w, op, &b, &to);

	if (smart_unlikely(rc))
		return rc;
	in_pool = op->buf && smart__pool_owns(w->ctx, op->buf, op->len);
	if (smart_unlikely(op->len > SMART_BOUNCE_MAX && !in_pool &&
			   !(op->opcode == SMART_TP_WRITE &&
			     op->len <= w->ctx->caps.max_inline)))
		return SMART_EINVAL;
	/* Records first: taking one may sync early, which resets chains. */
	local = op_local(w, t, op, in_pool, &flags);
	if (smart_unlikely(t->fence_next)) {
		flags |= SMART_TP_FENCE;
		t->fence_next = 0;
	}
	c = chain_for(w, t, b->id);
	chain_put(t, c, op, to.remote, to.rkey, local, w->ctx->pool->lkey,
		  flags);
	return 0;
}

/* Rejections are rare: recompute the code out of line (op_queue is
 * deterministic up to the point where it fails, and has no side effect
 * before it).  The op goes by value: its address taken, the callers kept
 * it in memory and read it back on the fast path. */
static __attribute__((noinline)) int op_queue_error(struct smart_worker *w,
						    struct op op)
{
	struct smart__blade *b;
	struct op_target to;
	int rc = op_check(w, &op, &b, &to);

	return rc ? rc : SMART_EINVAL;
}

/* The op's stats, once it is queued. */
static inline __attribute__((always_inline)) void
op_stats(struct smart_worker *w, uint8_t opcode, uint32_t len)
{
	switch (opcode) {
	case SMART_TP_READ:
		SMART_STAT_INC(w, SMART_STAT_READS);
		SMART_STAT_ADD(w, SMART_STAT_BYTES_READ, len);
		break;
	case SMART_TP_WRITE:
		SMART_STAT_INC(w, SMART_STAT_WRITES);
		SMART_STAT_ADD(w, SMART_STAT_BYTES_WRITTEN, len);
		break;
	case SMART_TP_CAS:
		SMART_STAT_INC(w, SMART_STAT_CASES);
		break;
	default:
		SMART_STAT_INC(w, SMART_STAT_FAAS);
	}
}

/* What op_fast and op_sync_fast find of an op that passes their checks:
 * its blade (whose key is read when the WR is written: read here, it
 * cost batch 8 an instruction per op) and the blade's id, where its WR
 * goes, the pool's key, its flags. */
struct op_fast_at {
	const struct smart__blade *b;
	uint64_t remote;
	uint32_t lkey;
	uint16_t id;
	uint8_t flags;
};

/* op_fast's checks, no side effect: the blade's word and the bounds
 * checked as op_check checks them, the local bytes in the registered pool
 * (an atomic's aligned, a record free) or an inline WRITE's.  1 when the
 * op passes (*at filled), 0 when op_queue must judge it. */
static inline __attribute__((always_inline)) int
op_fast_check(struct smart_ctx *ctx, struct smart__task *t, const struct op *op,
	      struct op_fast_at *at)
{
	struct smart__blade *b = smart__blade_get(ctx,
						  smart_gaddr_blade(op->ga));
	uint64_t off = smart_gaddr_off(op->ga);

	/* the pool's key read before the caller's stores (which the
	 * compiler cannot tell from it) */
	at->lkey = ctx->pool->lkey;
	if (smart_unlikely(!b) ||
	    (!SMART_M_OPS_FAST_NO_FAIL &&
	     smart_unlikely(
		     atomic_load_explicit(&b->fail, memory_order_relaxed))) ||
	    (!SMART_M_OPS_FAST_NO_BOUNDS &&
	     smart_unlikely(off >= b->size || op->len > b->size - off)))
		return 0;
	at->flags = 0;
	if (op->opcode == SMART_TP_WRITE && op->len <= ctx->caps.max_inline)
		at->flags = SMART_TP_INLINE;
	else if (!smart__pool_owns(ctx, op->buf, op->len))
		return 0;
	if (smart_tp_atomic(op->opcode) &&
	    (smart_unlikely(!ctx->caps.atomics) || (off & 7) ||
	     ((uintptr_t)op->buf & 7) ||
	     smart_unlikely(t->nrec == SMART_TASK_BOUNCES)))
		return 0;
	at->b = b;
	at->id = b->id;
	at->remote = b->base + off;
	return 1;
}

/* The fence asked for by smart_fence, put on the op's WR (op_fast and
 * op_sync_fast). */
static inline __attribute__((always_inline)) void
op_fast_fence(struct smart__task *t, uint8_t *flags)
{
	if (smart_unlikely(t->fence_next)) {
		*flags |= SMART_TP_FENCE;
		t->fence_next = 0;
	}
}

/* An atomic's record for deliver, which counts a CAS that found another
 * value (SMART_STAT_CAS_FAILS); its result is already where the caller
 * wants it (op_fast_check: the pool, aligned), so nothing is copied. */
static inline __attribute__((always_inline)) void
op_rec_take(struct smart__task *t, uint8_t opcode, void *buf, uint64_t expect)
{
	t->rec[t->nrec++] = (struct smart__bounce){ NULL, buf, 8,
						    opcode == SMART_TP_CAS,
						    expect };
}

/* What op_fast does to t once the op passed: an atomic's record taken,
 * the fence put on the WR. */
static inline __attribute__((always_inline)) void
op_fast_take(struct smart__task *t, const struct op *op, uint8_t *flags)
{
	if (smart_tp_atomic(op->opcode))
		op_rec_take(t, op->opcode, op->buf, op->a1);
	op_fast_fence(t, flags);
}

/* op_queue's common case, with no call: op_fast_check's checks, the
 * task's first chain open to the blade with room (or none open yet).  1
 * when the op is queued, 0 when it leaves everything as it was: op_queue
 * then runs from the start (op_slow), and every error and rarer case is
 * its.  With no call on this way, a public op needs no frame of saved
 * registers (16 instructions of the op's pushes and pops). */
static inline __attribute__((always_inline)) int op_fast(struct smart_worker *w,
							 const struct op *op)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart_ctx *ctx = w->ctx;
	struct smart__chain *c = &t->chains[0];
	struct op_fast_at at;

	if (!op_fast_check(ctx, t, op, &at))
		return 0;
	if (t->nchains) {
		if (smart_unlikely(t->nchains != 1 || c->blade != at.id ||
				   c->n >= ctx->o.chain_max))
			return 0;
	} else {
		t->nchains = 1;
		c->blade = at.id;
		c->n = 0;
	}
	op_fast_take(t, op, &at.flags);
	chain_put(t, c, op, at.remote, at.b->rkey, op->buf, at.lkey, at.flags);
	return 1;
}

/* Everything op_fast leaves: op_queue from the start, its error, the
 * stats.  Scalars, not the struct, and at most six (a READ's or WRITE's
 * length, an atomic's operands), so that the public ops reach it by a
 * jump: an argument on the stack (a struct by value, a seventh scalar)
 * makes the call a real one, and the caller a frame. */
static __attribute__((noinline)) int op_slow(struct smart_worker *w,
					     uint8_t opcode, void *buf,
					     smart_gaddr_t ga, uint32_t len,
					     uint64_t a1, uint64_t a2)
{
	struct op op = { opcode, buf, ga, len, a1, a2 };

	if (smart_unlikely(op_queue(w, &op)))
		return op_queue_error(w, op);
	op_stats(w, opcode, len);
	return 0;
}

static __attribute__((noinline)) int op_slow_rw(struct smart_worker *w,
						uint8_t opcode, void *buf,
						smart_gaddr_t ga, uint32_t len)
{
	return op_slow(w, opcode, buf, ga, len, 0, 0);
}

static __attribute__((noinline)) int op_slow_atomic(struct smart_worker *w,
						    uint8_t opcode, void *buf,
						    smart_gaddr_t ga,
						    uint64_t a1, uint64_t a2)
{
	return op_slow(w, opcode, buf, ga, 8, a1, a2);
}

/* Each public op's way out of its fast path takes the op's own arguments
 * in the op's order: the jump to it moves none of them (they stay where
 * they came), so the fast path has a register more to work in. */
static __attribute__((noinline)) int
read_slow(struct smart_worker *w, smart_gaddr_t src, size_t len, void *dst)
{
	/* smart_read's NULL test, here: op_fast refuses a NULL dst (no
	 * pool lies at address 0, so NULL is never the pool's) */
	if (smart_unlikely(!dst))
		return SMART_EINVAL;
	return op_slow_rw(w, SMART_TP_READ, dst, src, (uint32_t)len);
}

static __attribute__((noinline)) int write_slow(struct smart_worker *w,
						smart_gaddr_t dst,
						const void *src, size_t len)
{
	return op_slow_rw(w, SMART_TP_WRITE, (void *)src, dst, (uint32_t)len);
}

static __attribute__((noinline)) int cas_slow(struct smart_worker *w,
					      smart_gaddr_t addr,
					      uint64_t expect, uint64_t desired,
					      uint64_t *old)
{
	return op_slow_atomic(w, SMART_TP_CAS, old, addr, expect, desired);
}

static __attribute__((noinline)) int faa_slow(struct smart_worker *w,
					      smart_gaddr_t addr, uint64_t add,
					      uint64_t *old)
{
	return op_slow_atomic(w, SMART_TP_FAA, old, addr, add, 0);
}

/* op_sync_fast's post when post1 refused the WR (a full queue, a WR of
 * post's general way): the WR goes into t's first chain, which
 * post_turn posts in turn as task_sync1 does, the chain left open with
 * nothing in it as task_sync1 leaves it (what a poll's handler queues
 * while this waits for room goes where it went then).  Out of line and
 * cold. */
static __attribute__((noinline, cold)) void
op_sync_post_turn(struct smart_worker *w, struct smart__task *t,
		  const struct smart_tp_wr *wr)
{
	struct smart__chain *c = &t->chains[0];
	struct smart__batch *b = &t->batches[0]; /* sealed for the WR */

	w->sync_ops_turned++;
	/* the general sync's end delivers records: an atomic takes its own
	 * here (op_sync_fast counts a failed CAS itself, with none) */
	if (smart_tp_atomic(wr->opcode) && !SMART_M_OPS_SYNC_OP_TURNED_NO_REC)
		op_rec_take(t, wr->opcode, wr->local, wr->compare_add);
	t->nchains = 1; /* c->blade: op_sync_fast set it to the op's */
	c->n = 0;
	c->wr[0] = *wr;
	post_turn(w, t, c, b, 1);
}

/* op_sync_fast's sample (one sync in SMART_LAT_SAMPLE): its start and
 * blade are kept in the task, not in locals that would live across the
 * wait in every sync's frame (a local cost each op 4.6 instructions). */
static __attribute__((noinline, cold)) void
op_sync_sample_start(struct smart__task *t)
{
	t->sample_t0 = smart__rdtsc();
}

/* The sample's end, once its wait is over: the blade is chain 0's, which
 * op_sync_fast set to the op's before the post. */
static __attribute__((noinline, cold)) void
op_sync_sampled(struct smart_worker *w, struct smart__task *t)
{
	if (!SMART_M_OPS_SYNC_OP_NO_SAMPLE)
		sync_sampled(w, t->chains[0].blade,
			     smart__rdtsc() - t->sample_t0);
}

/* op_sync_fast leaves the op to the general sync after taking its credit
 * (WorkReqThrot): the credit goes back, untouched by anyone meanwhile
 * (the general sync then takes it its own way).  0 for the caller. */
static inline int op_sync_refused(struct smart_worker *w)
{
	if (smart_unlikely(w->throttle) && !SMART_M_OPS_SYNC_OP_CREDIT_KEPT)
		smart__credit_add(w, 1);
	return 0;
}

/* op_sync_fast's end when post1 refused its WR (op_sync_post_turn):
 * the general sync's. */
static __attribute__((noinline, cold)) void
op_sync_turned_end(struct smart_worker *w, struct smart__task *t, int *rc)
{
	int sampled = sync_sample_turn(t);

	*rc = task_sync_end(w, t, 0, 0, -1);
	if (sampled)
		op_sync_sampled(w, t);
}

/* An op and its sync in one call (smart_read_sync & co.), when the task
 * has nothing queued and the sync would take task_sync1's way: the WR is
 * built once, in the caller's frame, and posted by post1 without passing
 * through a chain (docs/design.md §9.8).  Tested before anything
 * changes: no chain open (an op queued before must go first, in the
 * general sync), a post1 (a private group), no announcement or credits (sync1_off),
 * op_fast's checks, the QP cached, no fence.  The fence is read although
 * a fence fails every blade's word (op_fast_check reads it) before it
 * sets ctx->fenced, and a fenced ctx connects no blade while one that a
 * connect raced fails its own (ctx.c blade_fence_late): a second guard,
 * three instructions, for whatever may clear a word or miss a blade later
 * (test_core sync_op_fence_late_blade clears one).  Batch 0 is not tested: with no chain open
 * it is free, since every sync returns with its batches complete
 * (task_sync_end waits for t->inflight; a failed post or CQ frees its
 * batches) and smart_post leaves its chain open.  1 when it ran the op
 * and its sync (*rc the sync's answer), 0 when nothing changed: the
 * caller then queues the op and syncs.  The sample's turn (one sync in
 * SMART_LAT_SAMPLE) takes this way too, timed from the post to the end
 * of the wait as task_sync_at times it: sent to the general sync it cost
 * every op 10 instructions (READ 1 x 8). */
static inline __attribute__((always_inline)) int
op_sync_fast(struct smart_worker *w, const struct op *op, int *rc)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__batch *b = &t->batches[0];
	struct op_fast_at at;
	struct smart__qp *qp;
	struct smart_tp_wr wr;
	smart__post1_fn post1 = w->post1;

	if (smart_unlikely((!SMART_M_OPS_SYNC_OP_NO_CHAINS && t->nchains) ||
			   !post1 ||
			   (!SMART_M_OPS_SYNC_OP_NO_FENCE &&
			    atomic_load_explicit(&w->ctx->fenced,
						 memory_order_relaxed))))
		return 0;
	/* an announcement to prepend, or WorkReqThrot's credit, taken here
	 * (given back below if the op goes the general way after all: no
	 * poll or switch comes between, so nobody sees it gone) */
	if (!SMART_M_OPS_SYNC_OP_NO_OFF && sync1_give_way(w))
		return 0;
	if (!op_fast_check(w->ctx, t, op, &at))
		return op_sync_refused(w);
	/* ConflictAvoid's unit is the round trip of the blade the task
	 * last synced with, which it reads here (backoff.c bo_unit); set
	 * before the QP's lookup, whose failure sends the op to the general
	 * sync, which syncs with this blade all the same (stored there, it
	 * kept one more register across the post) */
	if (!SMART_M_OPS_SYNC_OP_NO_BLADE)
		t->chains[0].blade = at.id;
	qp = SMART_M_OPS_SYNC_OP_BROKEN_QP ?
		     w->qp[at.id] :
		     smart__worker_qp_private(w, at.id); /* post1: private */
	if (smart_unlikely(!qp))
		return op_sync_refused(w);
	op_fast_fence(t, &at.flags);
	wr_put(t, &wr, op, at.remote, at.b->rkey, op->buf, at.lkey, at.flags);
	op_stats(w, op->opcode, op->len);
	b->busy = 1; /* b->task is t since the slot's creation */
	batch_seal_wr(b, &wr, qp, 1);
	if (smart_unlikely(sync_sample_turn(t)))
		op_sync_sample_start(t);
	if (smart_unlikely(!post1_turn_done(post1, qp, &wr))) {
		op_sync_post_turn(w, t, &wr);
		op_sync_turned_end(w, t, rc);
		return 1;
	}
	/* task_sync_end, knowing what it tests: the batch is in flight
	 * (post1 took it), and no chain is open, so t->nchains is 0 and
	 * the task has no record to deliver (deliver empties them at every
	 * sync; a record is taken only with a chain, and this way takes
	 * none: a CAS's failure is counted below) */
	smart_own_add_is_zero(&t->inflight, 1);
	smart_counter_add(&w->sync_ops, 1); /* posts1's and syncs_waited's */
	t->round_trips++;
	sync_wait(w, t);
	/* deliver's count of a failed CAS, with no record: the result is in
	 * the caller's buffer (op_fast_check), and the record written at the
	 * op to be read back here cost a CAS about 50 instructions */
	if (op->opcode == SMART_TP_CAS && !SMART_M_OPS_SYNC_OP_CAS_UNCOUNTED)
		cas_fail_count(w, op->buf, op->a1);
	if (smart_unlikely(sync_sample_turn(t)))
		op_sync_sampled(w, t);
	*rc = sync_done(w, t);
	return 1;
}

int smart_read(smart_worker_t *w, smart_gaddr_t src, size_t len, void *dst)
{
	struct op op = { SMART_TP_READ, dst, src, (uint32_t)len, 0, 0 };

	/* a NULL dst: read_slow's (op_fast never takes it) */
	if (smart_unlikely(!w || !len || len > SMART_OP_MAX_LEN))
		return SMART_EINVAL;
	if (smart_unlikely(!op_fast(w, &op)))
		return read_slow(w, src, len, dst);
	op_stats(w, SMART_TP_READ, (uint32_t)len);
	return 0;
}

int smart_write(smart_worker_t *w, smart_gaddr_t dst, const void *src,
		size_t len)
{
	struct op op = { SMART_TP_WRITE, (void *)src, dst, (uint32_t)len, 0, 0 };

	if (smart_unlikely(!w || !src || !len || len > SMART_OP_MAX_LEN))
		return SMART_EINVAL;
	if (smart_unlikely(!op_fast(w, &op)))
		return write_slow(w, dst, src, len);
	op_stats(w, SMART_TP_WRITE, (uint32_t)len);
	return 0;
}

int smart_cas(smart_worker_t *w, smart_gaddr_t addr, uint64_t expect,
	      uint64_t desired, uint64_t *old)
{
	struct op op = { SMART_TP_CAS, old, addr, 8, expect, desired };

	if (smart_unlikely(!w))
		return SMART_EINVAL;
	if (smart_unlikely(!op_fast(w, &op)))
		return cas_slow(w, addr, expect, desired, old);
	op_stats(w, SMART_TP_CAS, 8);
	return 0;
}

int smart_faa(smart_worker_t *w, smart_gaddr_t addr, uint64_t add,
	      uint64_t *old)
{
	struct op op = { SMART_TP_FAA, old, addr, 8, add, 0 };

	if (smart_unlikely(!w))
		return SMART_EINVAL;
	if (smart_unlikely(!op_fast(w, &op)))
		return faa_slow(w, addr, add, old);
	op_stats(w, SMART_TP_FAA, 8);
	return 0;
}

int smart_read_sync(smart_worker_t *w, smart_gaddr_t src, size_t len, void *dst)
{
	struct op op = { SMART_TP_READ, dst, src, (uint32_t)len, 0, 0 };
	int rc;

	if (smart_likely(w && len && len <= SMART_OP_MAX_LEN) &&
	    op_sync_fast(w, &op, &rc))
		return rc;
	rc = smart_read(w, src, len, dst);
	return rc ? rc : smart_sync(w);
}

int smart_write_sync(smart_worker_t *w, smart_gaddr_t dst, const void *src,
		     size_t len)
{
	struct op op = { SMART_TP_WRITE, (void *)src, dst, (uint32_t)len, 0, 0 };
	int rc;

	if (smart_likely(w && src && len && len <= SMART_OP_MAX_LEN) &&
	    op_sync_fast(w, &op, &rc))
		return rc;
	rc = smart_write(w, dst, src, len);

	return rc ? rc : smart_sync(w);
}

int smart_cas_sync(smart_worker_t *w, smart_gaddr_t addr, uint64_t expect,
		   uint64_t desired, uint64_t *old)
{
	struct op op = { SMART_TP_CAS, old, addr, 8, expect, desired };
	int rc;

	if (smart_likely(w != NULL) && op_sync_fast(w, &op, &rc))
		return rc;
	rc = smart_cas(w, addr, expect, desired, old);

	return rc ? rc : smart_sync(w);
}

int smart_faa_sync(smart_worker_t *w, smart_gaddr_t addr, uint64_t add,
		   uint64_t *old)
{
	struct op op = { SMART_TP_FAA, old, addr, 8, add, 0 };
	int rc;

	if (smart_likely(w != NULL) && op_sync_fast(w, &op, &rc))
		return rc;
	rc = smart_faa(w, addr, add, old);

	return rc ? rc : smart_sync(w);
}
