/*
 * shm transport: the adversarial mode (docs/design.md §10.2, docs/transport.md
 * "Adversarial mode").
 *
 * The plain shm transport is kinder than RDMA: it copies without
 * stopping, executes every WR exactly once in
 * posting order and completes at once.  Data structures tested on it see a
 * torn read once in a million ops.  This mode is as hostile as the
 * contract (src/transport/transport.h, rules 3-5) allows, so that they see
 * one often:
 *  1. READ and WRITE copy their payload one unit at a time (an aligned
 *     8-byte word, or the unaligned bytes at either end) in a random order,
 *     and pause before random units (a spin, or sched_yield()), so that
 *     another thread's WR lands in the middle of a multi-word access.
 *  2. A READ may be executed again later in the same poll, after WRs
 *     posted behind it on its QP (IB re-executes a READ whose response was
 *     lost), so its buffer may show their effects; never past a WR that
 *     carries SMART_TP_FENCE.  Atomics are never executed again.
 *  3. Completions are held back for a few polls and those of different
 *     QPs are delivered in a random order.
 *  4. On request (cq_fail=N, off by default) a CQ fails for ever once it
 *     has delivered N completions, as a NIC's CQ does when it overruns or
 *     its device dies: what it held is lost, poll returns SMART_ECONN and
 *     post refuses its QPs, so that the core's recovery can be tested.
 *  5. On request (read_down=P, off by default) a READ copies its units
 *     from the highest address down, and a test's unit hook
 *     (smart__shm_adv_set_unit_hook) runs between its units: a test can
 *     then land a whole commit between two words of one READ on purpose,
 *     not by timing luck (docs/dtx.md §3, the validation READs).
 *
 * Invariants:
 *  - Every aligned 8-byte word is still loaded or stored with one atomic
 *    access (rule 4); a unit is copied by the plain copier, so the
 *    unaligned ends are handled exactly as there.
 *  - The completions of one QP (a lane, named by the QP's id, which is
 *    never reused in a domain) are delivered in execution order: an error
 *    completion and the flushes behind it stay in order, and the last
 *    completion of a chain still means the whole chain is done.  A QP's
 *    held completions outlive the QP (nothing refers to it but its id),
 *    so destroying a QP loses none that its WRs produced.
 *  - A READ is redone only before the poll that executed it returns:
 *    before any completion that could cover it is seen, and so before its
 *    buffer is the caller's again.  Every pending redo runs before a
 *    fenced WR executes, so a fenced WR never overtakes one.
 *  - Room: executed WRs wait in the held array, never beyond the CQ's
 *    depth; poll stops executing when it is full, as the plain poll does
 *    when its ring is.
 *  - Every decision comes from the CQ's own generator, seeded from the
 *    spec's seed and the CQ's creation number in the domain, so a run
 *    with the same seed and the same interleaving makes the same choices;
 *    the pauses' lengths never feed a decision.
 *  - The counters are domain-wide relaxed atomics: this mode is for tests,
 *    and the plain path never touches them.
 */
#include <inttypes.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"
#include "util/clock.h"
#include "util/log.h"

#define SHM_ADV_LANES 64 /* QPs whose completions one poll sorts */
#define SHM_ADV_PAUSES_MAX                                                     \
	16 /* pauses in one copy: a 64 KiB READ must
				 * not take milliseconds */
#define SHM_ADV_EARLY_PCT                                                      \
	25 /* chance, before each WR, that pending
				 * redos run there rather than later: a
				 * redo may then land between later WRs, not
				 * only after all of them */

/* The domain's adversary: parameters and counters. */
struct shm_adv {
	struct shm_adv_params p;
	_Atomic uint32_t cqs; /* CQs created: their stream numbers */
	_Atomic uint64_t pauses, yields, scrambled, reexecs, late, reordered;
	_Atomic uint64_t cq_failures, descended, unit_hooks;
	/* a test's hook between a READ's units: arg stored before fn */
	_Atomic(smart__shm_adv_unit_fn) unit_fn;
	void *_Atomic unit_arg;
};

static const struct shm_adv_params shm_adv_defaults = {
	.seed = 1,
	.pause_pct = 20,
	.pause_ns = 1000,
	.yield_pct = 1, /* a yield lets a thread sharing the core
				 * in mid-copy, but on a loaded machine it
				 * can give away a whole time slice (ms) */
	.reexec_pct = 50,
	.hold_pct = 50,
	.hold_polls = 4,
};

#define SHM_ADV_KEY(n, lo, hi)                                                 \
	{                                                                      \
#n, offsetof(struct shm_adv_params, n), 0, lo, hi              \
	}

static const struct shm_spec_key shm_adv_keys[] = {
	SHM_ADV_KEY(seed, 0, 18446744073709551615.0),
	SHM_ADV_KEY(pause_pct, 0, 100),
	SHM_ADV_KEY(pause_ns, 0, 1e6),
	SHM_ADV_KEY(yield_pct, 0, 100),
	SHM_ADV_KEY(reexec_pct, 0, 100),
	SHM_ADV_KEY(hold_pct, 0, 100),
	SHM_ADV_KEY(hold_polls, 1, 1000),
	SHM_ADV_KEY(cq_fail, 0, 1e12),
	SHM_ADV_KEY(read_down, 0, 100),
};

static const char *const shm_adv_words[] = { "on", "default", NULL };

static const struct shm_spec shm_adv_spec = {
	"shm_adversarial",
	shm_adv_keys,
	SMART_ARRAY_SIZE(shm_adv_keys),
	shm_adv_words,
};

static void shm_adv_count(_Atomic uint64_t *c, uint64_t n)
{
	if (n)
		atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

int smart__shm_adv_open(struct smart_tp_domain *d, const char *spec)
{
	struct shm_adv_params p = shm_adv_defaults;
	struct shm_adv *a;
	int rc;

	if (!spec || !spec[0] || !strcmp(spec, "off"))
		return 0;
	if (d->model) {
		smart__err(d->log,
			   "shm_adversarial: cannot be combined with "
			   "nic_model (the model times WRs, the adversary "
			   "reorders them); switch one off");
		return SMART_EINVAL;
	}
	rc = smart__shm_spec_parse(&shm_adv_spec, spec, &p, d->log);
	if (rc)
		return rc;
	a = calloc(1, sizeof(*a));
	if (!a)
		return SMART_ENOMEM;
	a->p = p;
	smart__info(d->log,
		    "shm adversarial mode on: seed=%" PRIu64
		    " pause_pct=%" PRIu64 " pause_ns=%" PRIu64
		    " yield_pct=%" PRIu64 " reexec_pct=%" PRIu64
		    " hold_pct=%" PRIu64 " hold_polls=%" PRIu64
		    " cq_fail=%" PRIu64 " read_down=%" PRIu64,
		    p.seed, p.pause_pct, p.pause_ns, p.yield_pct, p.reexec_pct,
		    p.hold_pct, p.hold_polls, p.cq_fail, p.read_down);
	d->adv = a;
	return 0;
}

void smart__shm_adv_close(struct smart_tp_domain *d)
{
	free(d->adv);
	d->adv = NULL;
}

int smart__shm_adv_cq_init(struct smart_tp_cq *cq, uint32_t depth)
{
	struct shm_adv *a = cq->d->adv;
	struct shm_adv_cq *c = calloc(1, sizeof(*c) + depth * sizeof(*c->held));
	uint32_t k;

	if (!c)
		return SMART_ENOMEM;
	c->a = a;
	c->cap = depth;
	k = atomic_fetch_add_explicit(&a->cqs, 1, memory_order_relaxed);
	smart_rng_seed(&c->rng,
		       a->p.seed ^ (uint64_t)(k + 1) *
					   UINT64_C(0x9e3779b97f4a7c15));
	cq->adv = c;
	return 0;
}

void smart__shm_adv_cq_fini(struct smart_tp_cq *cq)
{
	free(cq->adv);
	cq->adv = NULL;
}

/* ------------------------------------------------------------------ */
/* Copies: units in a random order, pauses                            */

static int shm_adv_chance(struct shm_adv_cq *c, uint64_t pct)
{
	return pct && smart_rng_below(&c->rng, 100) < pct;
}

static void shm_adv_pause(struct shm_adv_cq *c)
{
	struct shm_adv *a = c->a;
	uint64_t t0;

	if (shm_adv_chance(c, a->p.yield_pct)) {
		sched_yield();
		shm_adv_count(&a->yields, 1);
	} else {
		t0 = smart__mono_ns();
		while (smart__mono_ns() - t0 < a->p.pause_ns)
			smart_cpu_relax();
	}
	shm_adv_count(&a->pauses, 1);
}

static uint64_t shm_gcd(uint64_t x, uint64_t y)
{
	while (y) {
		uint64_t t = x % y;

		x = y;
		y = t;
	}
	return x;
}

/* The order of a copy's units: b, b + s, b + 2s, ... (mod units).  A
 * READ drawn for read_down goes from the top unit down (stride units - 1,
 * prime to units); any other copy of several units gets a random start
 * and a random stride prime to the count, a permutation that needs no
 * memory whatever the length. */
static void shm_adv_order(struct shm_adv_cq *c, uint32_t units, int read,
			  uint64_t *b, uint64_t *s)
{
	*b = 0;
	*s = 1;
	if (units < 2)
		return;
	if (read && shm_adv_chance(c, c->a->p.read_down)) {
		*b = *s = units - 1;
		shm_adv_count(&c->a->descended, 1);
		return;
	}
	*b = smart_rng_below(&c->rng, units);
	do
		*s = 1 + smart_rng_below(&c->rng, units - 1);
	while (shm_gcd(*s, units) != 1);
	if (*s != 1 || *b != 0)
		shm_adv_count(&c->a->scrambled, 1);
}

/* A test's hook, before unit k > 0 of a READ at the remote bytes r. */
static void shm_adv_unit_hook(struct shm_adv_cq *c, const uint8_t *r)
{
	smart__shm_adv_unit_fn fn = atomic_load_explicit(&c->a->unit_fn,
							 memory_order_acquire);

	if (!fn)
		return;
	shm_adv_count(&c->a->unit_hooks, 1);
	fn(atomic_load_explicit(&c->a->unit_arg, memory_order_relaxed), r);
}

/*
 * Copy len bytes between the remote bytes r and the local bytes l (to the
 * remote side when to_remote).  The units are the unaligned head, each
 * aligned word and the unaligned tail of the remote range, in
 * shm_adv_order's order.  A pause may come before any unit, a test's hook
 * before any unit of a READ but the first.
 */
static void shm_adv_copy(struct shm_adv_cq *c, uint8_t *r, uint8_t *l,
			 uint32_t len, int to_remote)
{
	uint32_t head = (uint32_t)(-(uintptr_t)r & 7), words, units, u, n;
	uint64_t s, b, k, off, pauses = 0;

	head = smart_min(head, len);
	words = (len - head) / 8;
	units = (head != 0) + words + ((len - head) % 8 != 0);
	shm_adv_order(c, units, !to_remote, &b, &s);
	for (k = 0; k < units; k++) {
		u = (uint32_t)((b + s * k) % units);
		if (head && u == 0) {
			off = 0;
			n = head;
		} else if (u - (head != 0) < words) {
			off = head + 8 * (uint64_t)(u - (head != 0));
			n = 8;
		} else {
			off = head + 8 * (uint64_t)words;
			n = len - (uint32_t)off;
		}
		if (pauses < SHM_ADV_PAUSES_MAX &&
		    shm_adv_chance(c, c->a->p.pause_pct)) {
			shm_adv_pause(c);
			pauses++;
		}
		if (k && !to_remote)
			shm_adv_unit_hook(c, r + off);
		if (to_remote)
			shm_copy_to_remote(r + off, l + off, n);
		else
			shm_copy_from_remote(l + off, r + off, n);
	}
}

/* ------------------------------------------------------------------ */
/* READs executed again                                               */

/* Run every pending redo, in a random order, and forget them.  A READ
 * whose remote failed since is left as it was: the blade is gone or this
 * client is fenced, and its first execution stands. */
static void shm_adv_redo_all(struct shm_adv_cq *c)
{
	uint64_t done = 0;

	while (c->nredo) {
		uint32_t i = (uint32_t)smart_rng_below(&c->rng, c->nredo);
		struct shm_redo x = c->redo[i];

		c->redo[i] = c->redo[--c->nredo];
		if (atomic_load_explicit(&x.qp->r->failed,
					 memory_order_acquire))
			continue;
		shm_adv_copy(c, x.rp, x.local, x.len, 0);
		done++;
	}
	shm_adv_count(&c->a->reexecs, done);
}

static void shm_adv_redo_add(struct shm_adv_cq *c, struct smart_tp_qp *qp,
			     uint8_t *rp, uint8_t *local, uint32_t len)
{
	if (c->nredo == SHM_ADV_REDO_MAX)
		shm_adv_redo_all(c);
	c->redo[c->nredo++] = (struct shm_redo){ qp, rp, local, len };
}

int smart__shm_adv_exec(struct smart_tp_cq *cq, struct smart_tp_qp *qp,
			struct shm_wqe *e)
{
	struct shm_adv_cq *c = cq->adv;
	const struct smart_tp_wr *wr = &e->wr;
	uint8_t *rp;
	int st;

	/* Before this WR: a fence waits for every earlier READ (its redo
	 * included); otherwise pending redos may run here, between WRs. */
	if (c->nredo && ((wr->flags & SMART_TP_FENCE) ||
			 shm_adv_chance(c, SHM_ADV_EARLY_PCT)))
		shm_adv_redo_all(c);
	if (wr->opcode >= SMART_TP_SEND) /* two-sided: plain copies */
		return smart__shm_exec_send(qp, e);
	st = shm_wr_check(qp, wr, &rp);
	if (st != SMART_TP_WC_OK)
		return st;
	switch (wr->opcode) {
	case SMART_TP_READ:
		shm_adv_copy(c, rp, wr->local, wr->len, 0);
		if (shm_adv_chance(c, c->a->p.reexec_pct))
			shm_adv_redo_add(c, qp, rp, wr->local, wr->len);
		return SMART_TP_WC_OK;
	case SMART_TP_WRITE:
		shm_adv_copy(c, rp, shm_wr_inline(wr) ? e->inl : wr->local,
			     wr->len, 1);
		return SMART_TP_WC_OK;
	default: /* CAS, FAA or a bad opcode */
		return shm_exec_atomic(wr, rp);
	}
}

/* ------------------------------------------------------------------ */
/* Completions held back and delivered out of order across QPs       */

void smart__shm_adv_complete(struct smart_tp_cq *cq,
			     const struct smart_tp_qp *qp,
			     const struct smart_tp_wr *wr, int status)
{
	struct shm_adv_cq *c = cq->adv;
	struct shm_held *h = &c->held[c->nheld++];

	h->wc = (struct smart_tp_wc){ .wr_id = wr->wr_id,
				      .status = status,
				      .opcode = wr->opcode };
	h->lane = qp->id;
	h->born = h->due = c->polls;
	if (shm_adv_chance(c, c->a->p.hold_pct))
		h->due += 1 + smart_rng_below(&c->rng, c->a->p.hold_polls);
}

/* The completions of one QP that may go in this poll, oldest first. */
struct shm_lane {
	uint32_t id;
	int32_t head, tail; /* indexes into held, -1 = none */
	int blocked;	    /* one of its completions is still held */
};

/* Sort the held completions into their lanes' lists.  A lane's list stops
 * at its first completion still held, which keeps everything behind it
 * (RC order).  Lanes beyond SHM_ADV_LANES wait for a later poll; the
 * oldest completion's lane is always among the first, so none starves. */
static uint32_t shm_adv_lanes(struct shm_adv_cq *c, struct shm_lane *l)
{
	uint32_t i, j, nl = 0;

	for (i = 0; i < c->nheld; i++) {
		struct shm_held *h = &c->held[i];

		h->next = -1;
		h->gone = 0;
		for (j = 0; j < nl && l[j].id != h->lane; j++)
			;
		if (j == nl) {
			if (nl == SHM_ADV_LANES)
				continue;
			l[nl++] = (struct shm_lane){ h->lane, -1, -1, 0 };
		}
		if (l[j].blocked)
			continue;
		if (h->due > c->polls) {
			l[j].blocked = 1;
			continue;
		}
		if (l[j].tail < 0)
			l[j].head = (int32_t)i;
		else
			c->held[l[j].tail].next = (int32_t)i;
		l[j].tail = (int32_t)i;
	}
	return nl;
}

/* Deliver up to max completions that may go, each time from a lane drawn
 * at random, then close the gaps they leave (keeping the age order). */
static int shm_adv_deliver(struct shm_adv_cq *c, struct smart_tp_wc *wc,
			   int max)
{
	struct shm_lane l[SHM_ADV_LANES];
	uint32_t ready[SHM_ADV_LANES], nl, nr = 0, i, k, lo = 0;
	uint64_t late = 0, reordered = 0;
	int n = 0;

	if (!c->nheld || max <= 0)
		return 0;
	nl = shm_adv_lanes(c, l);
	for (i = 0; i < nl; i++)
		if (l[i].head >= 0)
			ready[nr++] = i;
	while (n < max && nr) {
		uint32_t r = (uint32_t)smart_rng_below(&c->rng, nr);
		struct shm_lane *x = &l[ready[r]];
		struct shm_held *h = &c->held[x->head];

		wc[n++] = h->wc;
		h->gone = 1;
		late += h->born != c->polls;
		/* lo is the oldest not yet delivered: anything else
		 * overtakes it (it is of another lane, by construction) */
		reordered += (uint32_t)x->head != lo;
		while (lo < c->nheld && c->held[lo].gone)
			lo++;
		x->head = h->next;
		if (x->head < 0)
			ready[r] = ready[--nr];
	}
	for (i = 0, k = 0; i < c->nheld; i++)
		if (!c->held[i].gone)
			c->held[k++] = c->held[i];
	c->nheld = k;
	shm_adv_count(&c->a->late, late);
	shm_adv_count(&c->a->reordered, reordered);
	return n;
}

int smart__shm_adv_poll_end(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			    int max)
{
	struct shm_adv_cq *c = cq->adv;
	int n;

	shm_adv_redo_all(c);
	n = shm_adv_deliver(c, wc, max);
	c->polls++;
	c->delivered += (uint64_t)n;
	if (c->a->p.cq_fail && c->delivered >= c->a->p.cq_fail &&
	    !atomic_exchange(&cq->dead, SMART_ECONN))
		shm_adv_count(&c->a->cq_failures, 1);
	return n;
}

/* ------------------------------------------------------------------ */
/* For tests                                                          */

const struct shm_adv_params *
smart__shm_adv_params(const struct smart_tp_domain *d)
{
	return d && d->adv ? &d->adv->p : NULL;
}

int smart__shm_adv_stats(const struct smart_tp_domain *d,
			 struct shm_adv_stats *out)
{
	struct shm_adv *a = d ? d->adv : NULL;

	if (!a || !out)
		return SMART_ENOENT;
	*out = (struct shm_adv_stats){
		.pauses = atomic_load(&a->pauses),
		.yields = atomic_load(&a->yields),
		.scrambled = atomic_load(&a->scrambled),
		.reexecs = atomic_load(&a->reexecs),
		.late = atomic_load(&a->late),
		.reordered = atomic_load(&a->reordered),
		.cq_failures = atomic_load(&a->cq_failures),
		.descended = atomic_load(&a->descended),
		.unit_hooks = atomic_load(&a->unit_hooks),
	};
	return 0;
}

int smart__shm_adv_set_unit_hook(struct smart_tp_domain *d,
				 smart__shm_adv_unit_fn fn, void *arg)
{
	struct shm_adv *a = d ? d->adv : NULL;

	if (!a)
		return SMART_ENOENT;
	atomic_store_explicit(&a->unit_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&a->unit_fn, fn, memory_order_release);
	return 0;
}
