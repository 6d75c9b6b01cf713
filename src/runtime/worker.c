/*
 * Workers and QP groups.
 *
 * A worker polls its group's CQ and dispatches completions to batches.  It
 * finds the QP to a blade in its own cache first (no lock); on a miss, or
 * when the cached QP broke, it goes to the group under the group mutex
 * (slow path): creates the QP, exchanges blobs with the blade through the
 * bootstrap session and connects it.  A broken QP is retired, not freed,
 * until every WR posted on it has completed (with a flush error), so no
 * completion ever points at freed memory.
 *
 * A worker also runs the pollers of the layers above (runtime/service.h)
 * after its own CQ, and answers their questions about it (the accessors
 * at the end) so that they need not see its struct.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/bootstrap.h"
#include "runtime/core.h"
#include "util/mutant.h"

/* status of a transport completion as a SMART_E* code */
static int smart__wc_status(int st)
{
	switch (st) {
	case SMART_TP_WC_OK:
		return 0;
	case SMART_TP_WC_REM_ACCESS:
		return SMART_EREMOTE;
	case SMART_TP_WC_LOC_PROT:
		return SMART_EINVAL;
	case SMART_TP_WC_BAD_WR:
		return SMART_EINVAL;
	case SMART_TP_WC_FLUSH:
		return SMART_EQP;
	case SMART_TP_WC_RETRY_EXC:
		return SMART_ETIMEDOUT;
	default:
		return SMART_ECONN;
	}
}

/* A failed CQ, kept until its group goes (its QPs may still be retired). */
struct smart__dead_cq {
	struct smart_tp_cq *cq;
	struct smart__dead_cq *next;
};

/* per-thread-db: the group's CQ owns a doorbell (a thread domain on
 * verbs) that its QPs share.  A CQ that asked and got none (the device
 * ran out) is said in the mode the ctx reports.  ctx->lock held. */
static void group_doorbell_check(struct smart_ctx *ctx, struct smart__group *g)
{
	if (!(g->cq_flags & SMART_TP_OWN_DOORBELL) ||
	    ctx->tp->cq_own_doorbell(g->cq))
		return;
	ctx->db_fallbacks++;
	snprintf(ctx->qp_mode_effective, sizeof(ctx->qp_mode_effective),
		 "per-thread-db:partial");
	smart__warn(&ctx->log,
		    "per-thread-db: a worker got no doorbell of "
		    "its own (%d so far): its QPs use the shared ones",
		    ctx->db_fallbacks);
}

static int group_create(struct smart_ctx *ctx, int index, int shared,
			struct smart__group **out)
{
	struct smart__group *g = calloc(1, sizeof(*g));
	struct smart_tp_cq *cq;
	int rc;

	if (!g)
		return SMART_ENOMEM;
	g->cq_flags = (shared ? SMART_TP_SHARED : 0) |
		      (ctx->o.qp_mode == SMART_QPM_PER_THREAD_DB &&
				       ctx->caps.thread_domains &&
				       !SMART_M_THRD_DB_SHARED ?
			       SMART_TP_OWN_DOORBELL :
			       0);
	rc = ctx->tp->cq_create(ctx->dom, (uint32_t)ctx->o.cq_depth,
				g->cq_flags, &cq);
	if (rc) {
		free(g);
		return rc;
	}
	g->cq = cq;
	g->ctx = ctx;
	g->index = index;
	g->shared = shared;
	pthread_mutex_init(&g->lock, NULL);
	group_doorbell_check(ctx, g);
	*out = g;
	return 0;
}

/* Group for the worker with this index: private in the per-thread modes,
 * group index/K in mux:K, the single group in shared.  ctx->lock held. */
static int smart__group_get(struct smart_ctx *ctx, int worker_index,
			    struct smart__group **out)
{
	int mode = ctx->o.qp_mode, index = -1, rc;
	struct smart__group *g;

	/* an internal worker (index -1) always has a group of its own */
	if (worker_index >= 0 && mode == SMART_QPM_SHARED)
		index = 0;
	else if (worker_index >= 0 && mode == SMART_QPM_MUX)
		index = worker_index / ctx->o.qp_mux;
	for (g = ctx->groups; index >= 0 && g; g = g->next)
		if (g->index == index)
			break;
	if (index < 0 || !g) {
		rc = group_create(ctx, index, index >= 0, &g);
		if (rc)
			return rc;
		g->next = ctx->groups;
		ctx->groups = g;
	}
	g->refs++;
	*out = g;
	return 0;
}

static void qp_free(struct smart_ctx *ctx, struct smart__qp *qp)
{
	struct smart__blade *b = smart__blade_get(ctx, qp->blade);

	if (b && b->boot) {
		pthread_mutex_lock(&b->boot_lock);
		smart__boot_qp_close(b->boot, qp->responder);
		pthread_mutex_unlock(&b->boot_lock);
	}
	ctx->tp->qp_destroy(qp->tqp);
	free(qp);
}

/* ctx->lock held; the last worker of the group is gone. */
static void smart__group_put(struct smart__group *g)
{
	struct smart_ctx *ctx = g->ctx;
	struct smart__group **pp;
	int i;

	if (--g->refs)
		return;
	for (pp = &ctx->groups; *pp != g; pp = &(*pp)->next)
		;
	*pp = g->next;
	for (i = 0; i <= SMART_BLADE_ID_MAX; i++)
		if (g->qps[i])
			qp_free(ctx, g->qps[i]);
	while (g->retired) {
		struct smart__qp *qp = g->retired;

		g->retired = qp->retired_next;
		qp_free(ctx, qp);
	}
	ctx->tp->cq_destroy(g->cq);
	while (g->dead_cqs) {
		struct smart__dead_cq *d = g->dead_cqs;

		g->dead_cqs = d->next;
		ctx->tp->cq_destroy(d->cq);
		free(d);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static int qp_open(struct smart_worker *w, struct smart__blade *b,
		   struct smart__qp **out)
{
	struct smart_ctx *ctx = w->ctx;
	struct smart_tp_cq *cq = atomic_load(&w->group->cq);
	struct smart_tp_qp_attr attr = {
		.max_send_wr = (uint32_t)ctx->o.qp_depth,
		.flags = w->group->cq_flags,
	};
	uint8_t mine[SMART_TP_BLOB_MAX], peer[SMART_TP_BLOB_MAX];
	size_t mlen = sizeof(mine), plen = sizeof(peer);
	struct smart__qp *qp = calloc(1, sizeof(*qp));
	int rc;

	if (!qp)
		return SMART_ENOMEM;
	qp->blade = b->id;
	qp->cq = cq;
	rc = ctx->tp->qp_create(ctx->dom, cq, &attr, &qp->tqp);
	if (rc) {
		free(qp);
		return rc;
	}
	rc = ctx->tp->qp_blob(qp->tqp, mine, &mlen);
	if (!rc) {
		pthread_mutex_lock(&b->boot_lock);
		rc = smart__boot_qp_connect(b->boot, mine, mlen, peer, &plen,
					    &qp->responder);
		pthread_mutex_unlock(&b->boot_lock);
	}
	if (!rc)
		rc = ctx->tp->qp_connect(qp->tqp, b->remote, peer, plen);
	if (rc) {
		ctx->tp->qp_destroy(qp->tqp);
		free(qp);
		smart__err(&ctx->log, "qp to blade %u: %s", b->id,
			   smart_strerror(rc));
		return rc;
	}
	*out = qp;
	return 0;
}

/* Has a batch of w's tasks (the main context's included) WRs on qp in
 * flight, or being posted, or does a task wait to post to qp (t->pinned:
 * for a free batch or credits, ops.c)?  A batch is busy and names its QP
 * from before its post until its last completion, and a QP's completions
 * arrive in order, so none names qp once this says no.  A scan of the task slots on
 * the slow path instead of a count of WRs in flight kept per post and
 * completion (9 instructions of every one-WR op). */
static int qp_in_flight(const struct smart_worker *w,
			const struct smart__qp *qp)
{
	for (int i = -1; i < w->ntask_slots; i++) {
		const struct smart__task *t = i < 0 ? &w->main_task :
						      w->all_tasks[i];

		if (!SMART_M_WORKER_REAP_PINNED && t->pinned == qp)
			return 1;
		for (int j = 0; j < SMART_TASK_BATCHES; j++)
			if (!SMART_M_WORKER_REAP_IN_FLIGHT &&
			    __atomic_load_n(&t->batches[j].busy,
					    __ATOMIC_ACQUIRE) &&
			    t->batches[j].qp == qp)
				return 1;
	}
	return 0;
}

/* Free retired QPs whose WRs have all completed; w is the group's only
 * worker.  Group lock held.  In a shared group another worker may still
 * hold a retired QP in its cache and be about to post to it, so those are
 * kept until the group goes (a QP per transport error, a bounded cost). */
static void group_reap(struct smart_worker *w, struct smart__group *g)
{
	struct smart__qp **pp = &g->retired;

	if (g->shared)
		return;
	while (*pp) {
		struct smart__qp *qp = *pp;

		if (qp_in_flight(w, qp)) {
			pp = &qp->retired_next;
			continue;
		}
		*pp = qp->retired_next;
		/* a failed CQ retired every QP with the cache still naming
		 * them (group_cq_replace): the next op to that blade opens a
		 * new one, and announces again (as worker_qp_slow does) */
		if (!SMART_M_WORKER_REAP_KEEPS_CACHE &&
		    w->qp[qp->blade] == qp) {
			w->qp[qp->blade] = NULL;
			w->ctx->svc->qp_new(w, qp->blade);
		}
		qp_free(g->ctx, qp);
	}
}

/* Slow path of smart__worker_qp: create or replace the group's QP. */
static int worker_qp_slow(struct smart_worker *w, struct smart__blade *b,
			  struct smart__qp **out)
{
	struct smart__group *g = w->group;
	struct smart__qp *qp;
	int rc = 0, retired = 0;

	pthread_mutex_lock(&g->lock);
	group_reap(w, g);
	qp = g->qps[b->id];
	if (qp &&
	    (atomic_load(&qp->broken) || w->ctx->tp->qp_in_error(qp->tqp))) {
		retired = 1;
		qp->retired_next = g->retired;
		g->retired = qp;
		atomic_store(&g->qps[b->id], NULL);
		qp = NULL;
		SMART_STAT_INC(w, SMART_STAT_RECONNECTS);
	}
	if (!qp) {
		rc = qp_open(w, b, &qp);
		if (!rc)
			atomic_store(&g->qps[b->id], qp);
		w->rtt_skip = !SMART_M_RTT_CONNECT_SAMPLED;
	}
	pthread_mutex_unlock(&g->lock);
	/* what the QP this worker last used carried may be lost with it
	 * (retired here, or by another worker of a shared group, which left
	 * a healthy new one here): announce again */
	if (!rc && (retired || (w->qp[b->id] && w->qp[b->id] != qp)))
		w->ctx->svc->qp_new(w, b->id);
	/* Never leave a retired (soon freed) QP in the cache. */
	w->qp[b->id] = rc ? NULL : qp;
	if (!rc)
		*out = qp;
	return rc;
}

int smart__worker_qp_slow(struct smart_worker *w, uint16_t blade,
			  struct smart__qp **out)
{
	struct smart__blade *b = smart__blade_get(w->ctx, blade);

	if (!b)
		return SMART_ENOENT;
	return worker_qp_slow(w, b, out);
}

/* Retire every QP of the group (they were all on the failed CQ: their
 * WRs will never complete) and put a new CQ in its place; the failed one
 * is freed with the group, after its QPs.  Group lock held.  When no CQ
 * can be made (a dead device) the next failed poll tries again. */
static void group_cq_replace(struct smart_worker *w, struct smart_tp_cq *dead)
{
	struct smart__group *g = w->group;
	struct smart_ctx *ctx = w->ctx;
	struct smart__dead_cq *d = calloc(1, sizeof(*d));
	struct smart_tp_cq *cq;
	int i;

	if (!d || ctx->tp->cq_create(ctx->dom, (uint32_t)ctx->o.cq_depth,
				     g->cq_flags, &cq)) {
		free(d);
		return;
	}
	for (i = 0; i <= SMART_BLADE_ID_MAX; i++) {
		struct smart__qp *qp = atomic_load(&g->qps[i]);

		if (!qp)
			continue;
		atomic_store(&qp->broken, 1);
		qp->retired_next = g->retired;
		g->retired = qp;
		atomic_store(&g->qps[i], NULL);
	}
	d->cq = dead;
	d->next = g->dead_cqs;
	g->dead_cqs = d;
	atomic_store(&g->cq, cq);
	atomic_fetch_add(&g->cq_gen, 1);
	SMART_STAT_INC(w, SMART_STAT_CQ_FAILURES);
	smart__warn(&ctx->log, "a completion queue failed: its operations "
			       "fail, its QPs are replaced");
}

/* Fail what this worker's tasks have in flight on a failed CQ (dead, or
 * any the group has replaced): nothing will ever complete it, and a task
 * waiting for it would wait for ever.  A batch still being posted is not
 * in flight: its post fails on its own. */
static void worker_fail_stale(struct smart_worker *w, struct smart_tp_cq *dead,
			      int err)
{
	struct smart_tp_cq *cur = atomic_load(&w->group->cq);
	int i, j;

	for (i = -1; i < w->ntask_slots; i++) {
		struct smart__task *t = i < 0 ? &w->main_task : w->all_tasks[i];

		for (j = 0; t && j < SMART_TASK_BATCHES; j++) {
			struct smart__batch *b = &t->batches[j];
			int zero = 0;

			if (__atomic_load_n(&b->busy, __ATOMIC_ACQUIRE) != 1 ||
			    b == t->posting ||
			    (b->qp->cq != dead && b->qp->cq == cur))
				continue;
			atomic_compare_exchange_strong(&t->first_error, &zero,
						       err);
			atomic_store(&b->qp->broken, 1);
			SMART_STAT_INC(w, SMART_STAT_ERRORS);
			smart__batch_complete(w, b, w->group->shared);
		}
	}
}

/* The poll of the group's CQ failed (an overrun, a dead device): the
 * transport will deliver nothing more from it.  Surface it as errors to
 * every task waiting on it, and go on with a new CQ and new QPs. */
static __attribute__((noinline, cold)) void
worker_cq_failed(struct smart_worker *w, struct smart_tp_cq *dead, int err)
{
	struct smart__group *g = w->group;

	pthread_mutex_lock(&g->lock);
	if (atomic_load(&g->cq) == dead)
		group_cq_replace(w, dead);
	pthread_mutex_unlock(&g->lock);
	w->cq_gen = atomic_load(&g->cq_gen);
	if (!SMART_M_WORKER_NO_CQ_FAIL)
		worker_fail_stale(w, dead, err);
}

/* Nothing of the worker's own moves unless it polls: no task ready or
 * waiting for admission, no op of any task queued or in flight (on shm
 * they run only at our polls; on verbs their completions would not wake
 * a sleeper of a layer above).  *wake_at: the earliest sleeper's
 * deadline (TSC), 0 when none sleeps. */
int smart__worker_idle(const struct smart_worker *w, uint64_t *wake_at)
{
	const struct smart__task *t = &w->main_task;

	*wake_at = w->sleepers ? w->next_wake : 0;
	if (w->ready_head || w->bo.wait_head || t->nchains ||
	    atomic_load(&t->inflight))
		return 0;
	for (int i = 0; i < w->ntask_slots; i++) {
		t = w->all_tasks[i];
		if (t->state != SMART_TASK_FREE &&
		    (t->nchains || atomic_load(&t->inflight)))
			return 0;
	}
	return 1;
}

int smart__worker_poller_add(struct smart_worker *w,
			     int (*fn)(struct smart_worker *, void *),
			     void *arg)
{
	if (w->npollers == SMART_WORKER_POLLERS)
		return SMART_EBUSY;
	w->pollers[w->npollers++] = (struct smart__poller){ fn, arg };
	return 0;
}

void smart__worker_poller_del(struct smart_worker *w,
			      int (*fn)(struct smart_worker *, void *),
			      void *arg)
{
	for (int i = 0; i < w->npollers; i++)
		if (w->pollers[i].fn == fn && w->pollers[i].arg == arg) {
			w->pollers[i] = w->pollers[--w->npollers];
			return;
		}
}

static __attribute__((noinline)) int run_pollers(struct smart_worker *w)
{
	int n = 0;

	for (int i = 0; i < w->npollers; i++)
		n += w->pollers[i].fn(w, w->pollers[i].arg);
	return n;
}

/* A completion's batch; a failed WR's error is its task's first, and
 * its QP is broken. */
static inline __attribute__((always_inline)) struct smart__batch *
wc_batch(struct smart_worker *w, const struct smart_tp_wc *wc)
{
	struct smart__batch *b = (struct smart__batch *)(uintptr_t)(wc->wr_id &
								    ~1ull);

	if (smart_unlikely(wc->status != SMART_TP_WC_OK)) {
		int err = smart__wc_status(wc->status), zero = 0;

		SMART_STAT_INC(w, SMART_STAT_ERRORS);
		atomic_compare_exchange_strong(&b->task->first_error, &zero,
					       err);
		atomic_store(&b->qp->broken, 1);
	}
	return b;
}

int smart__worker_poll(struct smart_worker *w)
{
	struct smart_tp_cq *cq;
	struct smart_tp_wc wc[SMART_POLL_BATCH];
	int n, i, shared = w->shared, extra = 0;
	uint64_t done = 0; /* WRs of a private group's batches completed */

	/* One clock read per poll serves the lease check here and, through
	 * w->now, the tuner, the backoff windows and the sleepers.  It costs
	 * about 3.5% of an 8-byte READ's rate on shm (measured against one
	 * read every 8 polls), and buys the bound of docs/leases.md: a
	 * resumed process executes at most the poll the pause interrupted. */
	w->now = smart__rdtsc();
	/* Self-fencing: past our lease nothing queued may execute any more
	 * (shm executes WRs right here, in poll), whatever the keeper
	 * thread has had time to notice (docs/leases.md).  Once fenced (the
	 * stopping is done before the flag is set) polls skip it: no atomic
	 * on the blades' shared words per poll. */
	if (smart_unlikely(smart__lease_expired_at(w->ctx, w->now)) &&
	    !atomic_load_explicit(&w->ctx->fenced, memory_order_relaxed) &&
	    !SMART_M_LEASE_NO_SELF_FENCE)
		smart__ctx_fence(w->ctx, "the lease ran out (process stopped "
					 "or starved for lease_ms / 2?)");
	if (smart_unlikely(w->throttle) && !(w->stats[SMART_STAT_POLLS] & 63))
		smart__tuner_step(w);
	/* another worker of a shared group replaced a failed CQ: what this
	 * one's tasks had on it fails too */
	if (smart_unlikely(shared) &&
	    smart_unlikely(w->cq_gen !=
			   atomic_load_explicit(&w->group->cq_gen,
						memory_order_relaxed))) {
		w->cq_gen = atomic_load(&w->group->cq_gen);
		worker_fail_stale(w, NULL, SMART_ECONN);
	}
	cq = atomic_load_explicit(&w->group->cq, memory_order_acquire);
	n = w->tp->poll(cq, wc, SMART_POLL_BATCH);
	SMART_STAT_INC(w, SMART_STAT_POLLS);
	if (smart_unlikely(n < 0)) {
		worker_cq_failed(w, cq, n);
		return 0;
	}
	/* Layers above (messaging) poll their own CQs here, so that every
	 * wait of the worker makes their progress too. */
	if (smart_unlikely(w->npollers))
		extra = run_pollers(w);
	if (n + extra)
		w->busy_at = w->now;
	if (!n)
		return extra;
	SMART_STAT_ADD(w, SMART_STAT_COMPLETIONS, (uint64_t)n);
	/* a private group's loop and a shared group's, the test made once */
	if (smart_likely(!shared)) {
		for (i = 0; i < n; i++) {
			struct smart__batch *b = wc_batch(w, &wc[i]);

			if (wc[i].wr_id & 1)
				smart__batch_complete_own(w, b, &done);
		}
	} else {
		for (i = 0; i < n; i++) {
			struct smart__batch *b = wc_batch(w, &wc[i]);

			if (wc[i].wr_id & 1)
				smart__batch_complete(w, b, shared);
		}
	}
	if (done) {
		SMART_STAT_ADD(w, SMART_STAT_WRS_DONE, done);
		if (smart_unlikely(w->throttle))
			smart__credit_add(w, (int)done);
	}
	return n + extra;
}

/* A poll made by a wait (a task-less scheduler, the main context, an
 * endpoint's progress loop): once nothing has been found for o.spin, each
 * poll that finds nothing also yields the CPU.  While messages flow a
 * wait never yields (the peer answers within the spin); on a CPU with
 * more runnable threads than cores, the one this wait needs - its peer's
 * process, a keeper - gets to run instead of waiting for our time slice
 * to end (a ping-pong otherwise costs two slices, milliseconds). */
int smart__worker_wait_poll(struct smart_worker *w)
{
	int n = smart__worker_poll(w);

	if (!n && w->now - w->busy_at > w->spin_cycles) {
		SMART_STAT_INC(w, SMART_STAT_YIELDS);
		sched_yield();
	}
	return n;
}

/* The caller just handed its peer what the peer waits for (a channel's
 * credits): the next wait poll that finds nothing yields at once, so that
 * a peer sharing this CPU runs now rather than after our spin. */
void smart__worker_hand_off(struct smart_worker *w)
{
	w->busy_at = w->now - w->spin_cycles - 1; /* modulo 2^64 */
}

int smart_worker_create(smart_ctx_t *ctx, smart_worker_t **out)
{
	if (!ctx || !out)
		return SMART_EINVAL;
	return smart__worker_create(ctx, 0, out);
}

int smart__worker_create(struct smart_ctx *ctx, int internal,
			 struct smart_worker **out)
{
	struct smart_worker *w;
	int rc;

	w = calloc(1, sizeof(*w));
	if (!w)
		return SMART_ENOMEM;
	w->hist = calloc(1, sizeof(*w->hist));
	w->all_tasks = calloc((size_t)ctx->o.max_tasks, sizeof(*w->all_tasks));
	if (!w->hist || !w->all_tasks) {
		rc = SMART_ENOMEM;
		goto err;
	}
	smart_hist_init(w->hist);
	w->ctx = ctx;
	w->tp = ctx->tp;
	w->spin_cycles = (uint64_t)((double)ctx->o.spin_ns *
				    (ctx->clock.use_tsc ?
					     ctx->clock.cycles_per_ns :
					     1.0));
	w->busy_at = smart__rdtsc();
	w->main_task.w = w;
	w->main_task.state = SMART_TASK_RUNNING;
	w->run = &w->main_task;
	w->internal = internal;
	/* the keeper's few ops must never wait for the application's WRs */
	w->throttle = !internal && ctx->tuner.phase >= TUNER_FIXED;
	w->cap_seen = 0; /* credits follow the cap at the first post */
	rc = smart__task_init_slot(w, &w->main_task);
	if (rc)
		goto err;
	pthread_mutex_lock(&ctx->lock);
	w->index = internal ? -1 : ctx->next_worker++;
	smart__backoff_init(w);
	rc = smart__group_get(ctx, w->index, &w->group);
	if (!rc) {
		w->shared = w->group->shared;
		w->direct_off = w->shared;
		w->max_tasks = ctx->o.max_tasks;
	}
	if (!rc && !w->shared)
		w->post1 = ctx->tp->post1;
	if (!rc && !internal) {
		w->next = ctx->workers;
		ctx->workers = w;
		ctx->live_workers++;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		smart__task_fini_slot(w, &w->main_task);
		goto err;
	}
	*out = w;
	return 0;
err:
	free(w->hist);
	free(w->all_tasks);
	free(w);
	return rc;
}

/* Fold the worker's counters into the ctx.  ctx->lock held. */
static void worker_retire_stats(struct smart_worker *w)
{
	struct smart_ctx *ctx = w->ctx;
	int i;

	for (i = 0; i < SMART_STAT__COUNT; i++)
		ctx->retired_stats[i] += w->stats[i];
	smart__stats_add_folded(w, ctx->retired_stats);
	for (i = 0; i < SMART_RETRY_HIST; i++)
		ctx->retired_retry_hist[i] += w->retry_hist[i];
	smart_hist_merge(ctx->retired_hist, w->hist);
}

int smart_worker_destroy(smart_worker_t *w)
{
	struct smart_ctx *ctx;
	struct smart_worker **pp;

	if (!w)
		return 0;
	/* a layer's poller (a messaging endpoint) still uses the worker */
	if (w->live || w->cur || w->npollers)
		return SMART_EBUSY;
	/* Drain what the main context left in flight before the CQ goes. */
	while (atomic_load(&w->main_task.inflight))
		smart__worker_poll(w);
	ctx = w->ctx;
	/* give the blades back what this worker holds (remote ops, from the
	 * main context), then the registered buffers */
	ctx->svc->worker_destroy(w);
	smart__tasks_destroy(w);
	smart__task_fini_slot(w, &w->main_task);
	smart__bufcache_flush(w);
	pthread_mutex_lock(&ctx->lock);
	if (!w->internal) {
		for (pp = &ctx->workers; *pp != w; pp = &(*pp)->next)
			;
		*pp = w->next;
		worker_retire_stats(w);
		ctx->live_workers--;
	}
	smart__group_put(w->group);
	pthread_mutex_unlock(&ctx->lock);
	free(w->hist);
	free(w->all_tasks);
	free(w);
	return 0;
}

smart_ctx_t *smart_worker_ctx(const smart_worker_t *w)
{
	return w ? w->ctx : NULL;
}

int smart_worker_index(const smart_worker_t *w)
{
	return w ? w->index : -1;
}

int smart_ctx_worker_gone(smart_ctx_t *ctx, int index)
{
	struct smart_worker *w;
	int gone;

	if (!ctx || index < 0)
		return 0;
	/* an index is handed out and its worker listed under one lock, and
	 * unlisted only after destroy drained it */
	pthread_mutex_lock(&ctx->lock);
	gone = index < ctx->next_worker;
	for (w = ctx->workers; gone && w; w = w->next)
		gone = w->index != index;
	pthread_mutex_unlock(&ctx->lock);
	return gone;
}

/* The accessors of runtime/service.h. */
struct smart_ctx *smart__worker_ctx(const struct smart_worker *w)
{
	return w->ctx;
}

uint64_t smart__worker_now(const struct smart_worker *w)
{
	return w->now;
}

struct smart__task *smart__worker_task(const struct smart_worker *w)
{
	return w->cur;
}

int smart__worker_internal(const struct smart_worker *w)
{
	return w->internal;
}

int smart__worker_npollers(const struct smart_worker *w)
{
	return w->npollers;
}

int smart__worker_poller_has(const struct smart_worker *w,
			     int (*fn)(struct smart_worker *, void *))
{
	for (int i = 0; i < w->npollers; i++)
		if (w->pollers[i].fn == fn)
			return 1;
	return 0;
}
