/*
 * The sim transport (docs/sim.md): the shm transport with its RNIC model
 * run in virtual time, for the sim engine (util/sim.h).  Memory, regions,
 * QPs and the execution of WRs are shm's (blade memory is a real memfd,
 * so CAS conflicts are real); the model's device math is the one shared
 * function of shm_model.c; what differs is time:
 *  - every post, post_recv and poll is a sync point of the engine (the
 *    CPU cost of the call is charged, earlier threads run first), so the
 *    model sees the posts of all simulated threads in virtual-time order;
 *  - doorbell registers, and the locks of QPs shared by threads (held
 *    across the whole post, as mlx5 holds qp->sq.lock), are simulated
 *    resources with a hand-off cost growing with the spinners
 *    (shm_model.c, shm_sim_acquire);
 *  - one-sided WRs execute on blade memory at their responder time (rtt/2
 *    before completion), as events of the engine, not at the poll
 *    (shm_model.c: the responder);
 *  - a data-path call from a thread that is not simulated aborts: a real
 *    thread would post at real time into a virtual-time device.
 *
 * A domain opened on a simulated thread is an initiator: it gets the model
 * with the calibrated defaults (spec word "sim", docs/sim.md §2), which the
 * config's keys, if any, override ("default" alone means them too).  One opened on a real
 * thread is a responder (an embedded blade's control thread): plain shm,
 * as a blade's own NIC plays no part in one-sided ops.
 *
 * Invariants: the same as shm's (shm.h); and all simulated users of one
 * domain run on the engine's one OS thread, so the shm locks they take
 * are never contended and no sync point is ever inside one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"
#include "util/mutant.h"
#include "util/sim.h"

/* A data-path call is a sync point, and only a simulated thread may make
 * one (the mutant lets a real one through, unsynchronised). */
static void sim_sync_point(const char *what)
{
	if (!SMART_M_SHM_SIM_ANY_THREAD)
		smart__sim_require(what);
	if (smart__sim_self())
		smart__sim_sync();
}

/* The model spec of an initiator: "sim" followed by the config's keys
 * (a local option, not a peer's bytes); NULL when out of memory. */
static char *sim_spec(const char *user)
{
	size_t n;
	char *spec;

	if (!user || !strcmp(user, "default"))
		user = "";
	n = strlen(user) + sizeof("sim,");
	spec = malloc(n);
	if (spec)
		snprintf(spec, n, "sim%s%s", *user ? "," : "", user);
	return spec;
}

static int sim_domain_open(const struct smart_tp_cfg *cfg,
			   struct smart_tp_domain **out)
{
	struct smart_tp_cfg c = *cfg;
	int initiator = smart__sim_self() != NULL;
	char *spec = NULL;
	int rc;

	c.nic_model = NULL;
	if (initiator) {
		spec = sim_spec(cfg->nic_model);
		if (!spec)
			return SMART_ENOMEM;
		c.nic_model = spec;
	}
	rc = smart__shm_domain_open(&c, out);
	free(spec);
	if (!rc && initiator)
		smart__shm_model_sim(*out);
	return rc;
}

/* Ticks of the model's clock to the engine's ns, rounded up: the first
 * virtual time at which a poll reads the tick. */
static uint64_t sim_ticks_ns(const struct shm_model *m, uint64_t ticks)
{
	if (!m->use_tsc)
		return ticks;
	return (ticks * SMART_SIM_CYCLES_PER_NS_DEN +
		SMART_SIM_CYCLES_PER_NS_NUM - 1) /
	       SMART_SIM_CYCLES_PER_NS_NUM;
}

/* The earliest virtual time at which anything can complete on cq, found
 * empty by a poll; UINT64_MAX when it cannot tell.  Only the owner's own
 * one-sided WRs may be waited for: a queue that receives, a CQ shared by
 * threads (either gets what other threads post, at times not yet known),
 * a failed remote, an adversary or a plain shm CQ make it unknown.  Poll
 * runs doorbells in FIFO order and stops at the first WR not due
 * (shm_run_db_at), so the head WR's due time is the next completion. */
static uint64_t sim_next_due(const struct smart_tp_cq *cq)
{
	const struct shm_db *db;
	const struct smart_tp_qp *qp;
	uint32_t h;

	if (!cq->model || !cq->model->sim || cq->adv || cq->nrq ||
	    (cq->flags & SMART_TP_SHARED) || cq->wc_head != cq->wc_tail ||
	    cq->db_head == cq->db_tail ||
	    atomic_load_explicit(&cq->d->failures, memory_order_acquire))
		return UINT64_MAX;
	db = &cq->db[cq->db_head & cq->db_mask];
	qp = db->qp;
	if (!db->n || qp->state != SHM_QP_RTS)
		return UINT64_MAX;
	h = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	return sim_ticks_ns(cq->model, qp->sq[h & qp->sq_mask].due);
}

/* A poll's sync point charges the cost table's poll base, and each
 * completion it reaps wc_ns (docs/sim.md §1.3).  An empty poll in a loop
 * of them skips to the next completion in one step (docs/sim.md §1.1,
 * smart__sim_idle_skip), then polls once more; a first empty poll never
 * skips: other work (a ready task's post) may follow it. */
static int sim_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	int n;

	if (!SMART_M_SHM_SIM_ANY_THREAD)
		smart__sim_require("sim transport: poll");
	if (!smart__sim_self())
		return smart__shm_poll(cq, wc, max);
	smart__sim_sync_poll();
	n = smart__shm_poll(cq, wc, max);
	if (!n &&
	    (smart__sim_idle_again(cq) || SMART_M_SHM_SIM_IDLE_ANY_POLL) &&
	    smart__sim_idle_skip(sim_next_due(cq)))
		n = smart__shm_poll(cq, wc, max);
	smart__sim_reaped(n); /* the cost table's per-completion term */
	return n;
}

static int sim_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n)
{
	int rc;

	sim_sync_point("sim transport: post");
	smart__shm_sim_qp_lock(qp);
	rc = smart__shm_post(qp, wrs, n);
	smart__shm_sim_qp_unlock(qp);
	return rc;
}

static int sim_post_recv(struct smart_tp_qp *qp, const struct smart_tp_recv *rs,
			 int n)
{
	sim_sync_point("sim transport: post_recv");
	return smart__shm_post_recv(qp, rs, n);
}

const struct smart_tp_ops smart__tp_sim_ops = { .name = "sim",
						.domain_open = sim_domain_open,
						.poll = sim_poll,
						.post = sim_post,
						.post_recv = sim_post_recv,
						SMART__SHM_OPS_SHARED };
