/*
 * shm transport: the optional RNIC model (docs/design.md §4.3,
 * docs/nic-model.md).
 *
 * It makes the shm transport behave like a NIC so that Smart's techniques
 * have something to act on on machines without one: a network round trip
 * on every WR, a device that executes at most `mops` M WRs/s for the whole
 * domain, doorbell registers that are real spinlocks held for a modelled
 * MMIO time, and a WQE cache whose misses cost extra device time while
 * more WRs are outstanding than it holds.  It is a model: its numbers are
 * never to be compared with hardware.
 *
 * Invariants:
 *  - The model exists only when the domain was opened with a spec; then
 *    d->model is set before any CQ or QP exists and never changes.
 *  - Device time is one clock per domain (dev_busy, ticks): a post
 *    reserves the next slots for its chain with one CAS, so WRs of one
 *    domain occupy the device one after another, whatever their QP.
 *  - A WR's completion time is max(ring time + rtt, end of its slot); it
 *    is written before the WR is queued on the CQ and read only by the
 *    executor (poll) under the CQ's ordering, so per-QP order holds.
 *  - outstanding counts WRs posted and not yet executed (or forgotten by
 *    a destroyed QP), over all QPs of the domain.
 *  - Doorbell mapping (under d->lock): the first min(4, doorbells - 1)
 *    registers are dedicated, one QP each, first come; the others are
 *    shared round robin; an SMART_TP_OWN_DOORBELL QP gets a new register
 *    of its own beyond the context's set (an mlx5 thread domain).
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"
#include "util/log.h"
#include "util/mutant.h"
#include "util/sim.h"

#define SHM_DB_DEDICATED 4 /* mlx5: low-latency registers per context */

static const struct shm_model_params shm_model_defaults = {
	.rtt_ns = 2000,
	.mops = 4.0,
	.doorbells = 16,
	.db_hold_ns = 1000,
	.wqe_cache = 32,
	.miss_ns = 1000,
	.handoff_ns = 90,
	.atomic_ns = 0,
	.pcie_wr_bytes = 0,
	.pcie_miss_bytes = 87,
	.pcie_gbs = 10,
};

/* The sim transport's defaults (spec word "sim"; docs/sim.md §2): the
 * testbed's rate and RTT, mlx5's 16 registers, the hold and hand-off of
 * the design's Fig 3a fit, and the WQE cache fitted by
 * bench/sim-calibrate.sh on the artifact's technique-off Fig 4a (frozen:
 * change them only with a new calibration run and its fit errors). */
static const struct shm_model_params shm_model_sim_defaults = {
	.rtt_ns = 2000,
	.mops = 110,
	.doorbells = 16,
	.db_hold_ns = 170,
	.wqe_cache = 1024,
	.miss_ns = 3,
	.handoff_ns = 90,
	.atomic_ns = 0,
	.pcie_wr_bytes = 0,
	.pcie_miss_bytes = 87,
	.pcie_gbs = 10,
};

/* The keys of a spec, their field and their range. */
#define SHM_KEY(n, dbl, lo, hi)                                                \
	{                                                                      \
#n, offsetof(struct shm_model_params, n), dbl, lo, hi          \
	}

static const struct shm_spec_key shm_model_keys[] = {
	SHM_KEY(rtt_ns, 0, 0, 1e9),
	SHM_KEY(mops, 1, 0.001, 1000),
	SHM_KEY(doorbells, 0, 1, 1024),
	SHM_KEY(db_hold_ns, 0, 0, 1e6),
	SHM_KEY(wqe_cache, 0, 0, 1 << 24),
	SHM_KEY(miss_ns, 0, 0, 1e6),
	SHM_KEY(handoff_ns, 0, 0, 1e6),
	SHM_KEY(atomic_ns, 0, 0, 1e6),
	SHM_KEY(pcie_wr_bytes, 0, 0, 4096),
	SHM_KEY(pcie_miss_bytes, 0, 0, 4096),
	SHM_KEY(pcie_gbs, 1, 0.01, 1000),
};

static const char *const shm_model_words[] = { "default", "sim", NULL };

static const struct shm_spec shm_model_spec = {
	"nic_model",
	shm_model_keys,
	SMART_ARRAY_SIZE(shm_model_keys),
	shm_model_words,
};

int smart__shm_model_parse(const char *spec, struct shm_model_params *out,
			   const struct smart__log *log)
{
	struct shm_model_params p = shm_model_defaults;
	int rc;

	if (!out || (!SMART_M_SHM_MODEL_NULL_SPEC && !spec))
		return SMART_EINVAL;
	/* "sim" first selects the sim transport's base; keys then override */
	if (!strncmp(spec, "sim", 3) && (!spec[3] || spec[3] == ','))
		p = shm_model_sim_defaults;
	rc = smart__shm_spec_parse(&shm_model_spec, spec, &p, log);
	if (!rc)
		*out = p;
	return rc;
}

static uint64_t shm_ticks(const struct shm_model *m, double ns)
{
	double t = ns * (m->use_tsc ? m->clock.cycles_per_ns : 1.0);

	return (uint64_t)llround(t);
}

/* Clock, parameters in ticks and the context's doorbells. */
static int shm_model_init(struct shm_model *m, const struct smart__log *log)
{
	uint32_t i;
	int rc = smart__clock_init(&m->clock);

	if (rc) {
		smart__err(log, "nic_model: no clock: %s", smart_strerror(rc));
		return rc;
	}
	m->use_tsc = m->clock.use_tsc;
	m->rtt = shm_ticks(m, (double)m->p.rtt_ns);
	m->hold = shm_ticks(m, (double)m->p.db_hold_ns);
	m->miss = shm_ticks(m, (double)m->p.miss_ns);
	m->handoff = shm_ticks(m, (double)m->p.handoff_ns);
	m->atomic = shm_ticks(m, (double)m->p.atomic_ns);
	m->wr = smart_max(shm_ticks(m, 1000.0 / m->p.mops), (uint64_t)1);
	m->ndb = (uint32_t)m->p.doorbells;
	m->nded = smart_min(SHM_DB_DEDICATED, m->ndb - 1);
	m->next_own = (int)m->ndb;
	m->dbs = shm_zalloc_cl(sizeof(*m->dbs) * m->ndb);
	if (!m->dbs)
		return SMART_ENOMEM;
	for (i = 0; i < m->ndb; i++) {
		smart_spin_init(&m->dbs[i].lock);
		m->dbs[i].index = (int)i;
	}
	atomic_init(&m->dev_busy, 0);
	atomic_init(&m->outstanding, 0);
	return 0;
}

int smart__shm_model_open(struct smart_tp_domain *d, const char *spec)
{
	struct shm_model *m;
	int rc;

	if (!spec || !spec[0])
		return 0;
	m = shm_zalloc_cl(sizeof(*m));
	if (!m)
		return SMART_ENOMEM;
	rc = smart__shm_model_parse(spec, &m->p, d->log);
	if (!rc)
		rc = shm_model_init(m, d->log);
	if (rc) {
		free(m->dbs);
		free(m);
		return rc;
	}
	smart__info(d->log,
		    "RNIC model on (a model: never compare its "
		    "numbers with hardware): rtt_ns=%" PRIu64 " mops=%g "
		    "doorbells=%u (%u dedicated) db_hold_ns=%" PRIu64
		    " wqe_cache=%" PRIu64 " miss_ns=%" PRIu64 ", clock %s",
		    m->p.rtt_ns, m->p.mops, m->ndb, m->nded, m->p.db_hold_ns,
		    m->p.wqe_cache, m->p.miss_ns,
		    m->use_tsc ? "TSC" : "CLOCK_MONOTONIC");
	d->model = m;
	return 0;
}

void smart__shm_model_close(struct smart_tp_domain *d)
{
	struct shm_model *m = d->model;

	if (!m)
		return;
	smart__sim_source_del(&m->resp_src);
	free(m->rheap);
	while (m->own) {
		struct shm_doorbell *db = m->own;

		m->own = db->next;
		free(db);
	}
	free(m->dbs);
	free(m);
	d->model = NULL;
}

/* Pick a register of the context's set (mlx5: low-latency ones first,
 * then round robin over the shared medium-latency ones).  d->lock held. */
static struct shm_doorbell *shm_db_pick(struct shm_model *m)
{
	uint32_t i;

	for (i = 0; i < m->nded; i++) {
		if (!(m->ded_used & (1u << i))) {
			m->ded_used |= 1u << i;
			return &m->dbs[i];
		}
	}
	i = m->nded + m->next_shared++ % (m->ndb - m->nded);
	return &m->dbs[i];
}

/* ---- the sim responder (docs/sim.md §1.2) ---------------------------
 * WRs execute on blade memory at their responder time, rtt/2 before their
 * completion, in the order of those times across all QPs (per QP in
 * posting order: a QP's responder times never decrease), as events of
 * the engine (util/sim.h) between the fibers' sync points.  The heap holds
 * each QP whose next WR (sq_exec) may run there, keyed by that WR's time;
 * it has room for every QP attached (rcap), so pushes never fail. */

static int shm_resp_before(const struct smart_tp_qp *a,
			   const struct smart_tp_qp *b)
{
	return a->rkey < b->rkey || (a->rkey == b->rkey && a->rid < b->rid);
}

static void shm_resp_set(struct shm_model *m, uint32_t i,
			 struct smart_tp_qp *qp)
{
	m->rheap[i] = qp;
	qp->rpos = (int)i;
}

static void shm_resp_up(struct shm_model *m, uint32_t i)
{
	struct smart_tp_qp *qp = m->rheap[i];

	while (i && shm_resp_before(qp, m->rheap[(i - 1) / 2])) {
		shm_resp_set(m, i, m->rheap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	shm_resp_set(m, i, qp);
}

static void shm_resp_down(struct shm_model *m, uint32_t i)
{
	struct smart_tp_qp *qp = m->rheap[i];
	uint32_t c;

	while ((c = 2 * i + 1) < m->nrheap) {
		if (c + 1 < m->nrheap &&
		    shm_resp_before(m->rheap[c + 1], m->rheap[c]))
			c++;
		if (!shm_resp_before(m->rheap[c], qp))
			break;
		shm_resp_set(m, i, m->rheap[c]);
		i = c;
	}
	shm_resp_set(m, i, qp);
}

static void shm_resp_push(struct shm_model *m, struct smart_tp_qp *qp)
{
	qp->rkey = qp->sq[qp->sq_exec & qp->sq_mask].resp;
	m->rheap[m->nrheap++] = qp;
	shm_resp_up(m, m->nrheap - 1);
}

static void shm_resp_remove(struct shm_model *m, struct smart_tp_qp *qp)
{
	uint32_t i = (uint32_t)qp->rpos;

	qp->rpos = -1;
	if (i == --m->nrheap)
		return;
	shm_resp_set(m, i, m->rheap[m->nrheap]);
	shm_resp_down(m, i);
	shm_resp_up(m, (uint32_t)m->rheap[i]->rpos);
}

/* Room in the heap for one more QP (a QP is in it at most once). */
static int shm_resp_grow(struct shm_model *m)
{
	struct smart_tp_qp **h;
	uint32_t cap = m->rcap + 1;

	if (cap > m->rsize) {
		h = realloc(m->rheap, sizeof(*h) * (size_t)(cap * 2));
		if (!h)
			return SMART_ENOMEM;
		m->rheap = h;
		m->rsize = cap * 2;
	}
	m->rcap = cap;
	return 0;
}

/* Ticks of the model's clock to the engine's ns, rounded up: an event at
 * tick T runs once a fiber's clock reads T or later. */
static uint64_t shm_resp_ns(const struct shm_model *m, uint64_t ticks)
{
	if (!m->use_tsc)
		return ticks;
	return (ticks * SMART_SIM_CYCLES_PER_NS_DEN +
		SMART_SIM_CYCLES_PER_NS_NUM - 1) /
	       SMART_SIM_CYCLES_PER_NS_NUM;
}

static uint64_t shm_resp_next(struct smart__sim_source *src)
{
	struct shm_model *m = (struct shm_model *)((char *)src -
						   offsetof(struct shm_model,
							    resp_src));

	return m->nrheap ? shm_resp_ns(m, m->rheap[0]->rkey) : UINT64_MAX;
}

/* Bring sq_exec up to the poll's sq_head (it may have run WRs itself). */
static void shm_resp_bump(struct smart_tp_qp *qp)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head,
					     memory_order_relaxed);

	if ((int32_t)(qp->sq_exec - head) < 0)
		qp->sq_exec = head;
}

/* Into the heap when its next WR may run at the responder. */
static void shm_resp_queue(struct shm_model *m, struct smart_tp_qp *qp)
{
	shm_resp_bump(qp);
	if (smart__shm_resp_ready(qp))
		shm_resp_push(m, qp);
}

/* The earliest event: run the WR at the top QP's sq_exec.  Its key is
 * that WR's time unless a poll ran the WR first, which the engine's order
 * rules out (every poll is a sync point, and a WR completes after its
 * responder time); were it stale, the QP would only be requeued. */
static void shm_resp_step(struct smart__sim_source *src)
{
	struct shm_model *m = (struct shm_model *)((char *)src -
						   offsetof(struct shm_model,
							    resp_src));
	struct smart_tp_qp *qp = m->rheap[0];

	shm_resp_remove(m, qp);
	shm_resp_bump(qp);
	if (smart__shm_resp_ready(qp) &&
	    qp->sq[qp->sq_exec & qp->sq_mask].resp <= shm_model_now(m)) {
		smart__shm_resp_exec(qp);
		m->resp_execs++;
	}
	shm_resp_queue(m, qp);
}

/* Ring: each new WR's responder time, rtt/2 before its completion and
 * never before the QP's previous one (its completion moves back as much);
 * the QP joins the heap if it was out. */
static void shm_resp_stamp(struct shm_model *m, struct smart_tp_qp *qp,
			   uint32_t n)
{
	uint64_t half = m->rtt / 2;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct shm_wqe *e = &qp->sq[(qp->sq_tail + i) & qp->sq_mask];

		e->resp = smart_max(e->due - half, qp->last_resp);
		e->due = smart_max(e->due, e->resp + half);
		qp->last_resp = e->resp;
	}
}

int smart__shm_model_qp_attach(struct smart_tp_qp *qp)
{
	struct smart_tp_domain *d = qp->d;
	struct shm_model *m = d->model;
	struct shm_doorbell *own = NULL;

	if (!m)
		return 0;
	if (qp->flags & SMART_TP_OWN_DOORBELL) {
		own = shm_zalloc_cl(sizeof(*own));
		if (!own)
			return SMART_ENOMEM;
		smart_spin_init(&own->lock);
	}
	qp->rpos = -1;
	if (m->sim && shm_resp_grow(m)) {
		free(own);
		return SMART_ENOMEM;
	}
	qp->rid = m->next_rid++;
	pthread_mutex_lock(&d->lock);
	if (own) {
		own->index = m->next_own++;
		own->next = m->own;
		m->own = own;
		qp->db = own;
	} else {
		qp->db = shm_db_pick(m);
	}
	pthread_mutex_unlock(&d->lock);
	qp->model = m;
	return 0;
}

static void shm_stats_add(struct smart_tp_stats *s,
			  const struct shm_doorbell *db)
{
	s->db_rings += atomic_load_explicit(&db->rings, memory_order_relaxed);
	s->db_contended += atomic_load_explicit(&db->contended,
						memory_order_relaxed);
	s->wqe_misses += atomic_load_explicit(&db->misses,
					      memory_order_relaxed);
}

void smart__shm_model_qp_detach(struct smart_tp_qp *qp)
{
	struct smart_tp_domain *d = qp->d;
	struct shm_model *m = qp->model;
	struct shm_doorbell *db = qp->db, **pp;

	if (!m || !db)
		return;
	if (qp->rpos >= 0) /* its WRs never execute: out of the responder */
		shm_resp_remove(m, qp);
	if (m->sim)
		m->rcap--;
	pthread_mutex_lock(&d->lock);
	if (db->index >= (int)m->ndb) {
		for (pp = &m->own; *pp && *pp != db; pp = &(*pp)->next)
			;
		if (*pp)
			*pp = db->next;
		shm_stats_add(&m->retired, db);
		free(db);
	} else if ((uint32_t)db->index < m->nded) {
		m->ded_used &= ~(1u << db->index);
	}
	pthread_mutex_unlock(&d->lock);
	qp->db = NULL;
}

void smart__shm_domain_stats(struct smart_tp_domain *d,
			     struct smart_tp_stats *out)
{
	struct shm_model *m = d->model;
	struct smart_tp_stats s = { 0 };
	const struct shm_doorbell *db;
	uint32_t i;

	/* Unmodelled, nothing is counted here: the fast path stays free of
	 * shared counters (the core counts its own doorbells per worker). */
	if (m) {
		pthread_mutex_lock(&d->lock);
		s = m->retired;
		for (i = 0; i < m->ndb; i++)
			shm_stats_add(&s, &m->dbs[i]);
		for (db = m->own; db; db = db->next)
			shm_stats_add(&s, db);
		pthread_mutex_unlock(&d->lock);
	}
	s.rnr_waits = atomic_load_explicit(&d->rnr_waits, memory_order_relaxed);
	*out = s;
}

const struct shm_model_params *
smart__shm_model_params(const struct smart_tp_domain *d)
{
	return d && d->model ? &d->model->p : NULL;
}

int smart__shm_qp_doorbell(const struct smart_tp_qp *qp)
{
	return qp && qp->db ? qp->db->index : -1;
}

/* ------------------------------------------------------------------ */
/* The data path                                                       */

/* Hold the doorbell for the MMIO time; returns the ring time. */
static inline uint64_t shm_db_hold(const struct shm_model *m)
{
	uint64_t t0 = shm_model_now(m), t = t0;

	while (t - t0 < m->hold) {
		smart_cpu_relax();
		t = shm_model_now(m);
	}
	return t;
}

static inline void shm_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c,
			      atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Reserve device time for the n WRs at the SQ tail, rung at `now`, and
 * stamp each with its completion time; returns how many missed the WQE
 * cache.  WR i of the chain sees o + i + 1 WRs outstanding (o before the
 * chain) and misses when that exceeds the cache. */
static uint32_t shm_device_reserve(struct shm_model *m, struct smart_tp_qp *qp,
				   uint32_t n, uint64_t now)
{
	uint64_t o = atomic_fetch_add_explicit(&m->outstanding, n,
					       memory_order_relaxed);
	uint64_t cache = m->p.wqe_cache;
	uint32_t hits = cache > o ? (uint32_t)smart_min(cache - o, n) : 0;
	uint64_t cost = n * m->wr + (uint64_t)(n - hits) * m->miss;
	uint64_t busy = atomic_load_explicit(&m->dev_busy,
					     memory_order_relaxed);
	uint64_t start, t, arrive = now + m->rtt;
	uint32_t i;

	do {
		start = busy > now ? busy : now;
	} while (!atomic_compare_exchange_weak_explicit(&m->dev_busy, &busy,
							start + cost,
							memory_order_relaxed,
							memory_order_relaxed));
	for (i = 0, t = start; i < n; i++) {
		struct shm_wqe *e = &qp->sq[(qp->sq_tail + i) & qp->sq_mask];

		t += m->wr + (i >= hits ? m->miss : 0);
		e->due = t > arrive ? t : arrive;
	}
	return n - hits;
}

void smart__shm_model_sim(struct smart_tp_domain *d)
{
	struct shm_model *m = d->model;

	if (!m)
		return;
	m->sim = 1;
	m->next_rid = 0;
	m->resp_src.next_ns = shm_resp_next;
	m->resp_src.step = shm_resp_step;
	if (!SMART_M_SHM_SIM_RESP_OFF)
		smart__sim_source_add(&m->resp_src);
}

#define SHM_SIM_QUEUE 32
_Static_assert(SMART_ARRAY_SIZE(((struct shm_sim_res *)0)->ends) ==
		       SHM_SIM_QUEUE,
	       "the queue scan covers the whole ring");

/* Holders still holding or queued on r at `now`: the holds that end after
 * it (granted in order, so a scan from the newest stops at the first that
 * has ended; at most SHM_SIM_QUEUE are seen). */
static uint64_t shm_sim_queued(const struct shm_sim_res *r, uint64_t now)
{
	uint32_t k = 0;

	while (k < SHM_SIM_QUEUE && k < r->nend &&
	       r->ends[(r->nend - 1 - k) % SHM_SIM_QUEUE] > now)
		k++;
	return k;
}

static void shm_sim_charge(uint64_t ticks)
{
	smart__sim_charge((ticks * SMART_SIM_CYCLES_PER_NS_DEN +
			   SMART_SIM_CYCLES_PER_NS_NUM - 1) /
			  SMART_SIM_CYCLES_PER_NS_NUM);
}

/* Take r at `now`: one that finds it taken spins until it is free, plus
 * a hand-off of handoff x the holders queued at its arrival (the lock
 * word's cache line bounces between the spinners at each release: a
 * fixed hold cannot give Fig 3's decline).  The spin is the caller's CPU
 * time.  Returns the time it holds r from; *waited 1 if it spun. */
static uint64_t shm_sim_acquire(const struct shm_model *m,
				struct shm_sim_res *r, uint64_t now,
				int *waited)
{
	uint64_t t = now;

	*waited = r->free_at > now;
	if (*waited) {
		t = r->free_at + m->handoff * shm_sim_queued(r, now);
		r->spin_ticks += t - now;
		shm_sim_charge(t - now);
	}
	return t;
}

/* Holds never overlap: the next starts at or after this end. */
static void shm_sim_release(struct shm_sim_res *r, uint64_t end)
{
	r->free_at = end;
	r->ends[r->nend++ % SHM_SIM_QUEUE] = end;
}

/* Simulated (docs/sim.md): the register is a resource; a poster holds
 * it for the MMIO time (its CPU time too).  Returns the ring time. */
static uint64_t shm_db_sim_hold(const struct shm_model *m,
				struct shm_doorbell *db, int *waited)
{
	uint64_t t = shm_sim_acquire(m, &db->sim, shm_model_now(m), waited);

	shm_sim_release(&db->sim, t + m->hold);
	shm_sim_charge(m->hold);
	return t + m->hold;
}

void smart__shm_sim_qp_lock(struct smart_tp_qp *qp)
{
	int waited;

	if (qp->model && qp->model->sim && (qp->flags & SMART_TP_SHARED))
		(void)shm_sim_acquire(qp->model, &qp->sim_lock,
				      shm_model_now(qp->model), &waited);
}

void smart__shm_sim_qp_unlock(struct smart_tp_qp *qp)
{
	if (qp->model && qp->model->sim && (qp->flags & SMART_TP_SHARED))
		shm_sim_release(&qp->sim_lock, shm_model_now(qp->model));
}

/* Simulated responder atomics (docs/sim.md): a CAS or FAA reaches the
 * responder rtt/2 before its completion time and occupies the atomic
 * unit of its address (64 units by address hash: same-address atomics
 * are serialised, as on a NIC) for `atomic` ticks; its completion moves
 * back by whatever it waited.  Per-QP order holds: the executor runs a
 * QP's WRs in order whatever their times. */
static void shm_atomics_reserve(struct shm_model *m, struct smart_tp_qp *qp,
				uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct shm_wqe *e = &qp->sq[(qp->sq_tail + i) & qp->sq_mask];
		uint64_t *unit, at;

		if (!smart_tp_atomic(e->wr.opcode))
			continue;
		unit = &m->atom_busy[(e->wr.remote >> 3) *
					     0x9E3779B97F4A7C15ull >>
				     58];
		at = e->due - m->rtt / 2;
		if (*unit > at)
			at = *unit;
		*unit = at + m->atomic;
		e->due = smart_max(e->due, *unit + m->rtt / 2);
	}
}

/* Simulated PCIe inbound budget (docs/sim.md): the device fetches each
 * WR's WQE over one link of pcie_gbs, pcie_wr_bytes per WR and
 * pcie_miss_bytes more for a WR that missed the WQE cache (the chain's
 * last `misses`, as shm_device_reserve counts them); a WR completes no
 * earlier than its fetch's end + rtt. */
static void shm_pcie_reserve(struct shm_model *m, struct smart_tp_qp *qp,
			     uint32_t n, uint32_t misses, uint64_t now)
{
	uint64_t t = smart_max(m->pcie_busy, now);
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct shm_wqe *e = &qp->sq[(qp->sq_tail + i) & qp->sq_mask];
		uint64_t bytes = m->p.pcie_wr_bytes +
				 (i >= n - misses ? m->p.pcie_miss_bytes : 0);

		t += shm_ticks(m, (double)bytes / m->p.pcie_gbs);
		e->due = smart_max(e->due, t + m->rtt);
	}
	m->pcie_busy = t;
}

int smart__shm_model_ring(struct smart_tp_qp *qp, uint32_t n)
{
	struct shm_model *m = qp->model;
	struct shm_doorbell *db = qp->db;
	struct smart_tp_cq *cq = qp->cq;
	uint32_t misses = 0;
	uint64_t now;
	int waited, rc = 0;

	if (m->sim) {
		now = shm_db_sim_hold(m, db, &waited);
		smart_spin_lock(&db->lock); /* never contended here */
	} else {
		waited = !smart_spin_lock(&db->lock);
		now = shm_db_hold(m);
	}
	shm_lock(cq->flags, &cq->lock);
	if (smart_unlikely(cq->db_tail - cq->db_head > cq->db_mask)) {
		rc = SMART_EAGAIN; /* nothing posted, nothing counted */
	} else {
		misses = shm_device_reserve(m, qp, n, now);
		if (m->sim && m->atomic)
			shm_atomics_reserve(m, qp, n);
		if (m->sim && m->p.pcie_wr_bytes)
			shm_pcie_reserve(m, qp, n, misses, now);
		if (m->sim)
			shm_resp_stamp(m, qp, n);
		cq->db[cq->db_tail & cq->db_mask] = (struct shm_db){ qp, n, 0 };
		cq->db_tail++;
		cq->db_grow = NULL; /* the newest record grows no more */
		qp->sq_tail += n;
		if (m->sim && qp->rpos < 0)
			shm_resp_queue(m, qp);
	}
	shm_unlock(cq->flags, &cq->lock);
	if (smart_likely(!rc)) {
		shm_count(&db->rings, 1);
		shm_count(&db->contended, (uint64_t)waited);
		shm_count(&db->misses, misses);
	}
	smart_spin_unlock(&db->lock);
	return rc;
}
