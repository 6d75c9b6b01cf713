/*
 * The virtual-time engine and the sim transport (util/sim.h,
 * src/transport/sim, docs/sim.md).
 *
 *  - order: fibers run in virtual-time order; each one's clock never goes
 *    back; the engine switches only when another fiber is earlier.
 *  - clock_hook: inside a fiber the library's clocks read virtual time
 *    (smart_now_ns, smart_cycles at the virtual 2.4 GHz); outside, real.
 *  - hook_cost: what the hook costs a real thread's clock read (printed).
 *  - ctx: a whole ctx in virtual time: its keeper and N workers as fibers
 *    of one engine, contending with CAS on one counter of a blade's real
 *    memory (conflicts are real: lost updates would show), a lease
 *    renewed by the keeper fiber over many lease periods of virtual time.
 *  - deterministic: the ctx run twice with one seed prints byte-identical
 *    reports; another seed changes the interleaving.
 *  - invariants: WRs posted = completed (nothing outstanding at the end),
 *    no op completes before one RTT, doorbell holds never overlap (their
 *    spin time is counted: the path was taken).
 *  - responder_time: a WR runs on blade memory at its responder time
 *    (rtt/2 before its completion), not when its poster polls.
 *  - shm_equiv: the sim transport and the shm RNIC model (one device
 *    function) at 1-2 threads agree within 10% (medians; the fastest of
 *    up to three shm runs, the real clock only adding time) where the model
 *    dominates: device-bound, WQE-cache misses, round-trip-bound.
 *  - real_thread_aborts: a ctx on the sim transport used from a real
 *    thread (the hazard: real time injected into the model) aborts.
 * SMART_SIM_THREADS (default 8) sets the ctx cases' simulated threads.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "runtime/core.h"
#include "transport/shm/shm.h"
#include "util/sim.h"

/* ---- order --------------------------------------------------------- */

struct order_log {
	uint64_t vt[64];
	int who[64];
	int n;
};

struct order_arg {
	struct order_log *log;
	int id;
	uint64_t step;
};

static void order_fiber(void *arg)
{
	struct order_arg *a = arg;
	int i;

	for (i = 0; i < 8; i++) {
		smart__sim_charge(a->step);
		smart__sim_sync();
		a->log->vt[a->log->n] = smart__sim_now();
		a->log->who[a->log->n++] = a->id;
	}
}

static void test_order(void)
{
	struct smart__sim_cfg cfg = { .seed = 1 };
	struct order_log log = { .n = 0 };
	struct order_arg a[3] = { { &log, 0, 30 },
				  { &log, 1, 70 },
				  { &log, 2, 110 } };
	struct smart__sim *s;
	int i;

	CHECK_OK(smart__sim_create(&cfg, &s));
	for (i = 0; i < 3; i++)
		CHECK_OK(smart__sim_spawn(s, order_fiber, &a[i], 0));
	CHECK_OK(smart__sim_run(s));
	CHECK_EQ(log.n, 24);
	for (i = 1; i < log.n; i++)
		CHECK_LE(log.vt[i - 1], log.vt[i]);
	CHECK_EQ(log.who[0], 0);
	CHECK_EQ(smart__sim_end_ns(s), 8 * 110);
	/* fiber 0 ran its 8 steps (240 ns) before fiber 2 passed 110 */
	CHECK_LT(smart__sim_switches(s), 24);
	smart__sim_destroy(s);
}

/* ---- clock_hook ---------------------------------------------------- */

static void hook_fiber(void *arg)
{
	int *ok = arg;
	struct smart__clock c;

	smart__sim_charge(1000);
	CHECK_U64_EQ(smart_now_ns(), smart__sim_now());
	CHECK_U64_EQ(smart_cycles(), smart__sim_now() * 12 / 5);
	CHECK_OK(smart__clock_init(&c));
	CHECK_EQ(c.use_tsc, 1);
	smart__sim_charge(5000);
	CHECK_U64_EQ(smart__clock_ns(&c), 6000 + 1000000);
	*ok = 1;
}

static void test_clock_hook(void)
{
	struct smart__sim_cfg cfg = { .seed = 1 };
	struct smart__sim *s;
	uint64_t t0 = smart_now_ns();
	int ok = 0;

	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, hook_fiber, &ok, 1000000));
	CHECK_OK(smart__sim_run(s));
	CHECK_EQ(ok, 1);
	CHECK(smart__sim_self() == NULL);
	CHECK_GE(smart_now_ns(), t0); /* real again, not 1 ms */
	CHECK_GT(smart_now_ns(), 1000000000ull);
	smart__sim_destroy(s);
}

/* What the hook adds to a real clock read: printed, not asserted (the
 * machine is shared); the argument is in docs/sim.md. */
static void test_hook_cost(void)
{
	enum { N = 2000000 };
	volatile uint64_t sink = 0;
	double t0, t1, t2;
	int i;

	t0 = test_now_ms();
	for (i = 0; i < N; i++)
		sink += smart__rdtsc();
	t1 = test_now_ms();
#if SMART_HAVE_TSC
	for (i = 0; i < N; i++)
		sink += __rdtsc();
#endif
	t2 = test_now_ms();
	printf("smart__rdtsc with the hook: %.2f ns, bare rdtsc: %.2f ns\n",
	       (t1 - t0) * 1e6 / N, (t2 - t1) * 1e6 / N);
	(void)sink;
}

/* ---- a ctx in virtual time ------------------------------------------ */

struct ctx_run {
	const char *addr;
	uint16_t blade;
	int nthreads, ops;
	const char *qp_mode;
	smart_ctx_t *ctx;
	smart_gaddr_t ctr;
	int done;
	uint64_t cas_fail, min_lat_ns, ops_done;
	char report[1024];
	int exact;	      /* jitter 0, idle skips of `skip` ns at most */
	uint64_t skip, skips; /* and the skips the run took */
};

static void ctx_worker(void *arg)
{
	struct ctx_run *r = arg;
	smart_worker_t *w;
	uint64_t *buf, old, prev, t0;
	int i;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	for (i = 0; i < r->ops; i++) {
		do {
			t0 = smart_now_ns();
			CHECK_OK(smart_read_sync(w, r->ctr, 8, buf));
			if (smart_now_ns() - t0 < r->min_lat_ns)
				r->min_lat_ns = smart_now_ns() - t0;
			old = *buf;
			CHECK_OK(
				smart_cas_sync(w, r->ctr, old, old + 1, &prev));
			r->cas_fail += prev != old;
		} while (prev != old);
		r->ops_done++;
	}
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

/* The paper-scale NIC of docs/sim.md (SMART_SIM_NIC overrides it). */
#define SIM_NIC                                                                \
	"rtt_ns=2000,mops=110,doorbells=16,db_hold_ns=170,"                    \
	"handoff_ns=90,wqe_cache=1024,miss_ns=9"

/* SMART_SIM_IDLE_SKIP=ns runs the transport cases with idle skips of at
 * most ns (docs/sim.md §1.1): their checks must hold with it too. */
static uint64_t sim_idle_skip(void)
{
	return (uint64_t)test_env_int("SMART_SIM_IDLE_SKIP", 0, 100000000, 0);
}

static smart_ctx_t *sim_ctx_nic(const char *addr, uint16_t blade,
				const char *qp_mode, const char *nic)
{
	const char *kv[] = { "transport", "sim",
			     "qp_mode",	  qp_mode,
			     "nic_model", nic && *nic ? nic : SIM_NIC,
			     NULL };
	smart_opts_t *o = fixture_opts(kv);
	smart_ctx_t *c;
	uint16_t id;

	CHECK_OK(smart_ctx_create(o, &c));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_set_secret(c, FIXTURE_SECRET,
				      sizeof(FIXTURE_SECRET) - 1));
	CHECK_OK(smart_ctx_connect(c, addr, &id));
	CHECK_EQ(id, blade);
	return c;
}

static smart_ctx_t *sim_ctx(const char *addr, uint16_t blade,
			    const char *qp_mode)
{
	return sim_ctx_nic(addr, blade, qp_mode, getenv("SMART_SIM_NIC"));
}

/* The simulated main thread: opens the ctx, starts the workers, waits
 * for them (virtually), checks the counter and reports. */
static void ctx_main(void *arg)
{
	struct ctx_run *r = arg;
	smart_worker_t *w;
	uint64_t *buf, t0 = smart__sim_now();
	smart_stats_t st;
	int i;

	r->ctx = sim_ctx(r->addr, r->blade, r->qp_mode);
	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_alloc(w, r->blade, 8, &r->ctr));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	*buf = 0;
	CHECK_OK(smart_write_sync(w, r->ctr, buf, 8));
	for (i = 0; i < r->nthreads; i++)
		CHECK_OK(smart__sim_spawn(smart__sim_self(), ctx_worker, r, 0));
	while (r->done < r->nthreads)
		smart__sim_sleep_until(smart__sim_now() + 10000);
	CHECK_OK(smart_read_sync(w, r->ctr, 8, buf));
	CHECK_U64_EQ(*buf, (uint64_t)r->nthreads * (uint64_t)r->ops);
	CHECK_OK(smart_stats_snapshot_sized(r->ctx, &st, sizeof(st)));
	snprintf(r->report, sizeof(r->report),
		 "threads %d ops %" PRIu64 " cas_fail %" PRIu64
		 " virtual_ns %" PRIu64 " min_read_ns %" PRIu64
		 " counter %" PRIu64 "\n",
		 r->nthreads, r->ops_done, r->cas_fail, smart__sim_now() - t0,
		 r->min_lat_ns, *buf);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

/* Run the ctx case under seed; the report into r. */
static void ctx_run(struct ctx_run *r, uint64_t seed, const char *addr,
		    uint16_t blade)
{
	struct smart__sim_cfg cfg = { .seed = seed,
				      .sync_ns = 100,
				      .jitter_ns = r->exact ? 0 : 50,
				      .idle_skip_ns = r->exact ?
							      r->skip :
							      sim_idle_skip() };
	struct smart__sim *s;
	double t0 = test_now_ms();

	r->addr = addr;
	r->blade = blade;
	r->nthreads = test_env_int("SMART_SIM_THREADS", 1, 512, 8);
	r->ops = 200;
	r->qp_mode = r->qp_mode ? r->qp_mode : "per-thread";
	r->min_lat_ns = UINT64_MAX;
	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, ctx_main, r, 1000000));
	CHECK_OK(smart__sim_run(s));
	printf("seed %" PRIu64 ": %s  (%" PRIu64 " switches, %.0f simulated "
	       "ops per real second)\n",
	       seed, r->report, smart__sim_switches(s),
	       (double)r->ops_done * 1000.0 / (test_now_ms() - t0 + 1e-3));
	r->skips = smart__sim_skips(s, NULL);
	smart__sim_destroy(s);
}

static smart_blade_t *sim_blade(uint16_t id)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;

	fixture_blade_config(&cfg, 16 << 20, id);
	cfg.transport = "sim";
	CHECK_OK(smart_blade_create(&cfg, &b));
	return b;
}

static void test_ctx(void)
{
	smart_blade_t *b = sim_blade(1);
	struct ctx_run r = { 0 };

	ctx_run(&r, 7, smart_blade_address(b), 1);
	CHECK_EQ(r.ops_done, (uint64_t)r.nthreads * 200);
	/* one READ is at least one round trip (rtt_ns=2000) */
	CHECK_GE(r.min_lat_ns, 2000);
	if (r.nthreads > 1)
		CHECK_GT(r.cas_fail, 0); /* the conflicts are real */
	smart_blade_destroy(b);
}

static void test_deterministic(void)
{
	smart_blade_t *b = sim_blade(1);
	struct ctx_run r1 = { 0 }, r2 = { 0 }, r3 = { 0 };

	ctx_run(&r1, 42, smart_blade_address(b), 1);
	ctx_run(&r2, 42, smart_blade_address(b), 1);
	ctx_run(&r3, 43, smart_blade_address(b), 1);
	CHECK_STR_EQ(r1.report, r2.report);
	CHECK(strcmp(r1.report, r3.report) != 0);
	smart_blade_destroy(b);
}

/* ---- lease: the keeper fiber renews in virtual time ----------------- */

struct lease_run {
	const char *addr;
	int ok;
};

static void lease_main(void *arg)
{
	struct lease_run *r = arg;
	smart_ctx_t *c = sim_ctx(r->addr, 2, "per-thread");
	smart_worker_t *w;
	smart_gaddr_t g;

	CHECK_OK(smart_worker_create(c, &w));
	/* 20 lease periods (lease_ms=50) of virtual time, nothing but the
	 * keeper fiber running: a keeper that did not renew in virtual
	 * time would leave the ctx fenced (its own lease check) */
	smart__sim_sleep_until(smart__sim_now() + UINT64_C(1000000000));
	CHECK_EQ(smart_ctx_fenced(c), 0);
	CHECK_OK(smart_alloc(w, 2, 64, &g));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	r->ok = 1;
}

static void test_lease(void)
{
	struct smart_blade_config cfg;
	struct smart__sim_cfg scfg = { .seed = 3,
				       .sync_ns = 100,
				       .idle_skip_ns = sim_idle_skip() };
	struct lease_run r = { 0 };
	struct smart__sim *s;
	smart_blade_t *b;

	fixture_blade_config(&cfg, 16 << 20, 2);
	cfg.transport = "sim";
	cfg.lease_ms = 50;
	CHECK_OK(smart_blade_create(&cfg, &b));
	r.addr = smart_blade_address(b);
	CHECK_OK(smart__sim_create(&scfg, &s));
	CHECK_OK(smart__sim_spawn(s, lease_main, &r, 1000000));
	CHECK_OK(smart__sim_run(s));
	CHECK_EQ(r.ok, 1);
	CHECK_GE(smart__sim_end_ns(s), UINT64_C(1000000000));
	smart__sim_destroy(s);
	smart_blade_destroy(b);
}

/* ---- fig3: READ throughput by QP mode and thread count -------------- */

/* The paper's micro-benchmark (Fig 3): every READ rung with its own
 * doorbell, a sync every 8; for `run_ns` of virtual time per point. */
struct fig3_run {
	const char *addr;
	const char *mode;
	const char *nic; /* NULL: SIM_NIC or SMART_SIM_NIC */
	int nthreads, done;
	uint64_t run_ns, end, ops;
	smart_ctx_t *ctx;
	smart_gaddr_t base;
	uint64_t posted, completed, outstanding, rings, contended;
	double spin_share, real_ms;
	/* Little's law: WRs in flight (posted, their sync not returned),
	 * sampled by the main fiber, against rate x latency */
	int inflight;
	uint64_t lat_sum, l_sum, l_samples;
};

/* The overlap of [a, b) with [lo, hi). */
static uint64_t clip(uint64_t a, uint64_t b, uint64_t lo, uint64_t hi)
{
	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	return b > a ? b - a : 0;
}

static void fig3_worker(void *arg)
{
	struct fig3_run *r = arg;
	smart_worker_t *w;
	void *buf;
	int i;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 64, &buf));
	while (smart_now_ns() < r->end) {
		uint64_t t0 = smart_now_ns(), tp[8], lat = 0;

		for (i = 0; i < 8; i++) {
			CHECK_OK(smart_read(w, r->base + 64 * (uint64_t)i, 8,
					    buf));
			CHECK_OK(smart_post(w));
			tp[i] = smart_now_ns();
			/* shared state outside the transport is touched at a
			 * sync point: others up to this time have run */
			smart__sim_sleep_until(tp[i]);
			r->inflight++;
		}
		CHECK_OK(smart_sync(w));
		smart__sim_sleep_until(smart_now_ns());
		r->inflight -= 8;
		/* each WR's time in flight, clipped to the window */
		for (i = 0; i < 8; i++)
			lat += clip(tp[i], smart_now_ns(), r->end - r->run_ns,
				    r->end);
		r->lat_sum += lat;
		/* batches wholly inside the window (after the warm-up) */
		if (t0 >= r->end - r->run_ns && smart_now_ns() <= r->end)
			r->ops += 8;
	}
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

/* Spin share: the time posters spent waiting on doorbells over the
 * time they were running (threads x duration); and the model's count
 * of WRs not executed. */
static void fig3_model(struct fig3_run *r)
{
	struct shm_model *m = r->ctx->dom->model;
	uint64_t spin = 0;
	uint32_t i;

	for (i = 0; i < m->ndb; i++)
		spin += m->dbs[i].sim.spin_ticks;
	r->spin_share = (double)spin * SMART_SIM_CYCLES_PER_NS_DEN /
			SMART_SIM_CYCLES_PER_NS_NUM /
			((double)r->nthreads * (double)r->run_ns);
	r->outstanding = atomic_load(&m->outstanding);
}

static void fig3_main(void *arg)
{
	struct fig3_run *r = arg;
	smart_worker_t *w;
	smart_stats_t st;
	int i;

	r->ctx = r->nic ? sim_ctx_nic(r->addr, 1, r->mode, r->nic) :
			  sim_ctx(r->addr, 1, r->mode);
	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_alloc(w, 1, 4096, &r->base));
	/* all workers start together (a warm-up of 100 us) */
	r->end = smart_now_ns() + 100000 + r->run_ns;
	r->real_ms = test_now_ms(); /* the real clock: clock_gettime */
	for (i = 0; i < r->nthreads; i++)
		CHECK_OK(
			smart__sim_spawn(smart__sim_self(), fig3_worker, r, 0));
	while (r->done < r->nthreads) {
		uint64_t now = smart__sim_now();

		if (now >= r->end - r->run_ns && now < r->end) {
			r->l_sum += (uint64_t)r->inflight;
			r->l_samples++;
		}
		smart__sim_sleep_until(now + 250);
	}
	r->real_ms = test_now_ms() - r->real_ms;
	CHECK_OK(smart_stats_snapshot_sized(r->ctx, &st, sizeof(st)));
	r->posted = st.c[SMART_STAT_WRS_POSTED];
	r->completed = st.c[SMART_STAT_WRS_DONE];
	r->rings = st.db_rings;
	r->contended = st.db_contended;
	fig3_model(r);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

static void fig3_point(struct fig3_run *r, const char *addr)
{
	struct smart__sim_cfg cfg = { .seed = 11,
				      .sync_ns = 100,
				      .jitter_ns = 50,
				      .idle_skip_ns = sim_idle_skip() };
	struct smart__sim *s;
	double l, lw;

	r->addr = addr;
	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, fig3_main, r, 1000000));
	CHECK_OK(smart__sim_run(s));
	smart__sim_destroy(s);
	printf("%-13s %3d threads: %7.2f Mops (simulated), doorbell spin "
	       "share %4.1f%%, contended rings %5.1f%%; %.2f M simulated "
	       "ops per real s\n",
	       r->mode, r->nthreads, (double)r->ops * 1e3 / (double)r->run_ns,
	       100 * r->spin_share,
	       100.0 * (double)r->contended / (double)(r->rings ? r->rings : 1),
	       (double)r->ops / r->real_ms / 1e3);
	/* the invariants: every WR posted completed, none left in the
	 * device; Little's law over the window (its integral form, edges
	 * clipped): the in-flight WRs sampled every 250 ns by the main
	 * fiber equal the WRs' own times in flight / the window, within 3%:
	 * what one fiber observes matches the others' clocks */
	lw = (double)r->lat_sum / (double)r->run_ns;
	l = (double)r->l_sum / (double)(r->l_samples ? r->l_samples : 1);
	printf("  Little: sampled in flight %.2f, rate x latency %.2f\n", l,
	       lw);
	CHECK_MSG(l > 0.97 * lw && l < 1.03 * lw,
		  "Little's law: %.3f vs "
		  "%.3f",
		  l, lw);
	CHECK_U64_EQ(r->posted, r->completed);
	CHECK_U64_EQ(r->outstanding, 0);
	CHECK_GT(r->ops, 0);
}

/* SMART_SIM_FIG3="8,32,96" for the paper's points; 2 and 16 by default
 * (seconds). */
static void test_fig3(void)
{
	const char *modes[] = { "per-thread", "per-thread-db" };
	const char *list = getenv("SMART_SIM_FIG3");
	char buf[128], *tok, *save = NULL;
	smart_blade_t *b = sim_blade(1);
	double mops[2];
	size_t m;

	snprintf(buf, sizeof(buf), "%s", list && *list ? list : "2,16");
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (m = 0; m < 2; m++) {
			struct fig3_run r = { .mode = modes[m],
					      .nthreads = atoi(tok),
					      .run_ns = 1000000 };

			fig3_point(&r, smart_blade_address(b));
			mops[m] = (double)r.ops;
			if (r.nthreads >= 16 && m == 0)
				CHECK_GT(r.contended, 0);
		}
		printf("  per-thread-db / per-thread at %s threads: %.2fx\n",
		       tok, mops[1] / mops[0]);
	}
	smart_blade_destroy(b);
}

/* ---- pcie: the inbound byte budget caps the WR rate ----------------- */

/* 32 per-thread-db threads (43 Mops unbounded) with 93 B per WR over a
 * 1 GB/s link: at most 1e9 / 93 = 10.75 M WRs/s, and saturated. */
static void test_pcie(void)
{
	smart_blade_t *b = sim_blade(1);
	struct fig3_run r = { .mode = "per-thread-db",
			      .nthreads = 32,
			      .run_ns = 1000000,
			      .nic = SIM_NIC ",pcie_wr_bytes=93,pcie_gbs=1" };
	double mops;

	fig3_point(&r, smart_blade_address(b));
	mops = (double)r.ops * 1e3 / (double)r.run_ns;
	CHECK_MSG(mops <= 10.76 && mops > 9.5, "%.2f Mops", mops);
	smart_blade_destroy(b);
}

/* ---- atomics: same-address atomics serialised at the responder ------ */

struct atom_run {
	const char *addr;
	int nthreads, done, spread;
	uint64_t end, ops;
	smart_ctx_t *ctx;
	smart_gaddr_t base;
};

static void atom_worker(void *arg)
{
	struct atom_run *r = arg;
	smart_worker_t *w;
	uint64_t old, off = 0;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	while (smart_now_ns() < r->end) {
		if (r->spread) /* words far apart: distinct units, mostly */
			off = 64 * (uint64_t)(r->ops % 64);
		CHECK_OK(smart_faa_sync(w, r->base + off, 1, &old));
		if (smart_now_ns() <= r->end)
			r->ops++;
	}
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

static void atom_main(void *arg)
{
	struct atom_run *r = arg;
	smart_worker_t *w;
	int i;

	r->ctx = sim_ctx_nic(r->addr, 1, "per-thread-db",
			     SIM_NIC ",atomic_ns=1000");
	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_alloc(w, 1, 4096, &r->base));
	r->end = smart_now_ns() + 1000000;
	for (i = 0; i < r->nthreads; i++)
		CHECK_OK(
			smart__sim_spawn(smart__sim_self(), atom_worker, r, 0));
	while (r->done < r->nthreads)
		smart__sim_sleep_until(smart__sim_now() + 10000);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

/* 16 threads of FAA for 1 ms with atomic_ns=1000: on one word at most
 * 1 M/s (the unit's rate), saturated (> 0.9 M/s); spread over 64 words
 * well above it. */
static void test_atomics(void)
{
	struct smart__sim_cfg cfg = { .seed = 5,
				      .sync_ns = 100,
				      .jitter_ns = 50,
				      .idle_skip_ns = sim_idle_skip() };
	smart_blade_t *b = sim_blade(1);
	struct atom_run one = { .nthreads = 16 },
			spread = { .nthreads = 16, .spread = 1 };
	struct atom_run *runs[2] = { &one, &spread };
	struct smart__sim *s;
	int i;

	for (i = 0; i < 2; i++) {
		runs[i]->addr = smart_blade_address(b);
		CHECK_OK(smart__sim_create(&cfg, &s));
		CHECK_OK(smart__sim_spawn(s, atom_main, runs[i], 1000000));
		CHECK_OK(smart__sim_run(s));
		smart__sim_destroy(s);
	}
	printf("FAA in 1 ms: one word %" PRIu64 ", 64 words %" PRIu64 "\n",
	       one.ops, spread.ops);
	CHECK_LE(one.ops, 1001);
	CHECK_GT(one.ops, 900);
	CHECK_GT(spread.ops, 3 * one.ops);
	smart_blade_destroy(b);
}

/* ---- idle_skip: a loop of empty polls skips to the next completion --- */

/* One thread reads a word 40 times (smart_read_sync: the main context
 * polls until the READ lands, one RTT, 20 empty polls of sync_ns = 100).
 * With idle skipping each wait is a few engine steps; the virtual
 * latencies must be the same to the ns as without (jitter 0: the elided
 * polls' charges are exact), and the skip must have been taken.  A
 * single empty poll must not skip: a poll followed by ready work (here a
 * second post) runs that work at once, not a round trip later. */
#define IDLE_READS 40

struct idle_run {
	const char *addr;
	uint64_t lat[IDLE_READS];
	uint64_t after_one_poll; /* ns from a post to after one empty poll */
};

static void idle_main(void *arg)
{
	struct idle_run *r = arg;
	smart_ctx_t *c = sim_ctx(r->addr, 1, "per-thread");
	smart_worker_t *w;
	smart_gaddr_t g;
	uint64_t *buf, t;
	int i;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_alloc(w, 1, 8, &g));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	for (i = 0; i < IDLE_READS; i++) {
		t = smart__sim_now();
		CHECK_OK(smart_read_sync(w, g, 8, buf));
		r->lat[i] = smart__sim_now() - t;
	}
	CHECK_OK(smart_read(w, g, 8, buf));
	CHECK_OK(smart_post(w));
	t = smart__sim_now();
	CHECK(smart_poll(w) >= 0); /* empty: the READ takes an RTT */
	r->after_one_poll = smart__sim_now() - t;
	CHECK_OK(smart_read(w, g, 8, buf + 1)); /* the ready work */
	CHECK_OK(smart_sync(w));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
}

/* The run with idle skips of at most skip_ns; the skips taken. */
static uint64_t idle_run_cfg(struct idle_run *r, struct smart__sim_cfg cfg,
			     uint64_t *polls, double *real_ms)
{
	uint64_t skip_ns = cfg.idle_skip_ns;
	struct smart__sim *s;
	double t0 = test_now_ms();
	uint64_t n;

	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, idle_main, r, 1000000));
	CHECK_OK(smart__sim_run(s));
	*real_ms = test_now_ms() - t0;
	n = smart__sim_skips(s, polls);
	printf("idle_skip_ns %-8" PRIu64 " skips %-5" PRIu64
	       " sync points charged by them %-6" PRIu64 " switches %-6" PRIu64
	       " first read %" PRIu64 " ns, one empty poll %" PRIu64 " ns\n",
	       skip_ns, n, *polls, smart__sim_switches(s), r->lat[0],
	       r->after_one_poll);
	smart__sim_destroy(s);
	return n;
}

static uint64_t idle_run(struct idle_run *r, uint64_t skip_ns, uint64_t *polls,
			 double *real_ms)
{
	struct smart__sim_cfg cfg = { .seed = 9,
				      .sync_ns = 100,
				      .idle_skip_ns = skip_ns };

	return idle_run_cfg(r, cfg, polls, real_ms);
}

static void test_idle_skip(void)
{
	smart_blade_t *b = sim_blade(1);
	struct idle_run off = { .addr = smart_blade_address(b) };
	struct idle_run on = off;
	uint64_t polls[2];
	double ms[2];
	int i;

	CHECK_U64_EQ(idle_run(&off, 0, &polls[0], &ms[0]), 0);
	CHECK_GT(idle_run(&on, 1000000, &polls[1], &ms[1]), 0);
	CHECK_GT(polls[1], 10 * IDLE_READS); /* ~20 polls per READ elided */
	for (i = 0; i < IDLE_READS; i++)
		CHECK_U64_EQ(on.lat[i], off.lat[i]);
	CHECK_GE(on.lat[0], 2000); /* one RTT */
	/* one empty poll costs one sync point, not a round trip */
	CHECK_U64_EQ(on.after_one_poll, off.after_one_poll);
	CHECK_LT(on.after_one_poll, 1000);
	smart_blade_destroy(b);
}

/* The cost table (docs/sim.md §1.3): a poll's sync point costs poll_ns,
 * a post's sync_ns, each completion reaped wc_ns more; idle skips charge
 * the elided polls at poll_ns (the same latencies with skips). */
static void test_cost_table(void)
{
	smart_blade_t *b = sim_blade(1);
	struct idle_run r0 = { .addr = smart_blade_address(b) };
	struct idle_run r1 = r0, r2 = r0;
	struct smart__sim_cfg cfg = { .seed = 9,
				      .sync_ns = 100,
				      .poll_ns = 300 };
	uint64_t polls;
	double ms;
	int i;

	idle_run_cfg(&r0, cfg, &polls, &ms);
	cfg.wc_ns = 40;
	idle_run_cfg(&r1, cfg, &polls, &ms);
	cfg.idle_skip_ns = 1000000;
	CHECK_GT(idle_run_cfg(&r2, cfg, &polls, &ms), 0);
	CHECK_U64_EQ(r0.after_one_poll, 300); /* one empty poll: poll_ns */
	for (i = 0; i < IDLE_READS; i++) {
		/* one completion reaped per READ: 40 ns more */
		CHECK_U64_EQ(r1.lat[i], r0.lat[i] + 40);
		CHECK_U64_EQ(r2.lat[i], r1.lat[i]);
	}
	smart_blade_destroy(b);
}

/* The ctx case's 8 threads (CAS conflicts, the keeper) with jitter 0:
 * the same report, to the ns, with idle skips as without; the skips
 * spare most of the fiber switches. */
static void test_idle_skip_exact(void)
{
	smart_blade_t *b = sim_blade(1);
	struct ctx_run off = { .exact = 1 },
		       on = { .exact = 1, .skip = 1000000 };

	ctx_run(&off, 7, smart_blade_address(b), 1);
	ctx_run(&on, 7, smart_blade_address(b), 1);
	CHECK_U64_EQ(off.skips, 0);
	CHECK_GT(on.skips, 0);
	CHECK_STR_EQ(on.report, off.report);
	smart_blade_destroy(b);
}

/* ---- responder_time: WRs run at the responder, not at the poll ------- */

/* A writer posts WRITE 7 at T and does not poll for 50 us; a READ of the
 * word that reaches the blade before the WRITE does (posted at T - 1.5
 * us) sees 0, one posted at T + 10 us sees 7.  On a NIC the WRITE lands
 * rtt/2 after it leaves, whoever polls; executed at the writer's poll
 * (shm's rule) the late READ saw 0, and a CAS window was as wide as the
 * slowest poller made it. */
struct resp_run {
	const char *addr;
	smart_ctx_t *ctx;
	smart_gaddr_t word;
	uint64_t t, seen_early, seen_late, done;
};

static void resp_writer(void *arg)
{
	struct resp_run *r = arg;
	smart_worker_t *w;
	uint64_t *buf;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	smart__sim_sleep_until(r->t);
	*buf = 7;
	CHECK_OK(smart_write(w, r->word, buf, 8));
	CHECK_OK(smart_post(w));
	smart__sim_sleep_until(r->t + 50000); /* no poll meanwhile */
	CHECK_OK(smart_sync(w));
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

static void resp_reader(void *arg)
{
	struct resp_run *r = arg;
	uint64_t *seen = r->done ? &r->seen_late : &r->seen_early;
	uint64_t at = r->done ? r->t + 10000 : r->t - 1500;
	smart_worker_t *w;
	uint64_t *buf;

	r->done++;
	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	smart__sim_sleep_until(at);
	CHECK_OK(smart_read_sync(w, r->word, 8, buf));
	*seen = *buf;
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

static void resp_main(void *arg)
{
	struct resp_run *r = arg;
	smart_worker_t *w;
	uint64_t *buf;

	r->ctx = sim_ctx(r->addr, 1, "per-thread");
	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_alloc(w, 1, 8, &r->word));
	CHECK_OK(smart_buf_alloc(w, 64, (void **)&buf));
	*buf = 0;
	CHECK_OK(smart_write_sync(w, r->word, buf, 8));
	r->t = smart__sim_now() + 100000;
	r->done = 0;
	CHECK_OK(smart__sim_spawn(smart__sim_self(), resp_reader, r, 0));
	while (r->done < 2) /* the early reader first: it picks its slot */
		smart__sim_sleep_until(smart__sim_now() + 1000);
	CHECK_OK(smart__sim_spawn(smart__sim_self(), resp_reader, r, 0));
	CHECK_OK(smart__sim_spawn(smart__sim_self(), resp_writer, r, 0));
	while (r->done < 5)
		smart__sim_sleep_until(smart__sim_now() + 10000);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

static void test_responder_time(void)
{
	struct smart__sim_cfg cfg = { .seed = 3,
				      .sync_ns = 100,
				      .idle_skip_ns = sim_idle_skip() };
	smart_blade_t *b = sim_blade(1);
	struct resp_run r = { .addr = smart_blade_address(b) };
	struct smart__sim *s;

	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, resp_main, &r, 1000000));
	CHECK_OK(smart__sim_run(s));
	smart__sim_destroy(s);
	printf("READ before the WRITE's arrival saw %" PRIu64
	       ", 10 us after its post saw %" PRIu64
	       " (the writer polled 50 us after)\n",
	       r.seen_early, r.seen_late);
	CHECK_U64_EQ(r.seen_early, 0);
	CHECK_U64_EQ(r.seen_late, 7);
	smart_blade_destroy(b);
}

/* ---- shm_equiv: the sim transport against the shm RNIC model --------- */

/* One device function (shm_device_reserve) serves both transports; what
 * differs is time (virtual vs real) and the CPU (charged vs spent).  In
 * a regime the model dominates, the two must agree: the same worker
 * code, run by simulated threads on `sim` and by real threads on `shm`
 * with the same spec, gives medians within EQ_TOL.  Medians, so that a
 * real thread preempted for some batches on this shared machine does not
 * move the result; the regimes leave the CPU a wide margin (a WR of
 * device time is 10 us, a round trip 10-100 us). */
#define EQ_TOL 0.10

struct eq_run {
	smart_ctx_t *ctx;
	smart_gaddr_t base;
	int batch, nbatch, done;
	uint64_t *dur; /* per thread x batch: post of the first to sync */
	uint64_t misses;
	pthread_t th[2];
	int nthreads, next;
};

static void eq_worker(void *arg)
{
	struct eq_run *r = arg;
	uint64_t *dur = r->dur + (size_t)r->nbatch * (size_t)r->next++;
	smart_worker_t *w;
	void *buf;
	int b, i;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 64, &buf));
	for (b = 0; b < r->nbatch; b++) {
		uint64_t t0 = smart_now_ns();

		for (i = 0; i < r->batch; i++) {
			CHECK_OK(smart_read(w, r->base + 64 * (uint64_t)i, 8,
					    buf));
			CHECK_OK(smart_post(w));
		}
		CHECK_OK(smart_sync(w));
		dur[b] = smart_now_ns() - t0;
	}
	CHECK_OK(smart_worker_destroy(w));
	r->done++;
}

static void *eq_thread(void *arg)
{
	eq_worker(arg);
	return NULL;
}

static smart_ctx_t *eq_ctx(const char *tp, const char *addr, const char *nic)
{
	/* spin while waiting: after `spin` an idle real waiter calls
	 * sched_yield(), and on a loaded machine is back a time slice later
	 * (1 ms: what a first version of this test measured under ctest) */
	const char *kv[] = { "transport",  tp,	   "qp_mode",	"per-thread-db",
			     "techniques", "None", "nic_model", nic,
			     "spin",	   "10s",  NULL };
	uint16_t id;

	return fixture_ctx_kv_at(addr, kv, &id);
}

static void eq_setup(struct eq_run *r)
{
	smart_worker_t *w;

	CHECK_OK(smart_worker_create(r->ctx, &w));
	CHECK_OK(smart_alloc(w, 1, 64 * 64, &r->base));
	CHECK_OK(smart_worker_destroy(w));
}

static void eq_finish(struct eq_run *r)
{
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot_sized(r->ctx, &st, sizeof(st)));
	r->misses = st.wqe_misses;
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

struct eq_sim_arg {
	struct eq_run *r;
	const char *addr, *nic;
};

static void eq_sim_main(void *arg)
{
	struct eq_sim_arg *a = arg;
	struct eq_run *r = a->r;
	int i;

	r->ctx = eq_ctx("sim", a->addr, a->nic);
	eq_setup(r);
	for (i = 0; i < r->nthreads; i++)
		CHECK_OK(smart__sim_spawn(smart__sim_self(), eq_worker, r, 0));
	while (r->done < r->nthreads)
		smart__sim_sleep_until(smart__sim_now() + 10000);
	eq_finish(r);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* The median batch time of a run (all threads' batches). */
static double eq_median(struct eq_run *r)
{
	size_t n = (size_t)r->nbatch * (size_t)r->nthreads;

	qsort(r->dur, n, sizeof(*r->dur), cmp_u64);
	return (double)r->dur[n / 2];
}

/* The shm half of a regime: real threads, real clock; the median in us. */
static double eq_shm_once(const char *nic, struct eq_run *r)
{
	smart_blade_t *hb;
	struct smart_blade_config bc;
	int i;

	fixture_blade_config(&bc, 16 << 20, 1);
	bc.transport = "shm";
	CHECK_OK(smart_blade_create(&bc, &hb));
	r->ctx = eq_ctx("shm", smart_blade_address(hb), nic);
	eq_setup(r);
	for (i = 0; i < r->nthreads; i++)
		CHECK_EQ(pthread_create(&r->th[i], NULL, eq_thread, r), 0);
	for (i = 0; i < r->nthreads; i++)
		CHECK_EQ(pthread_join(r->th[i], NULL), 0);
	eq_finish(r);
	smart_blade_destroy(hb);
	return eq_median(r) / 1e3;
}

/* One regime on both transports; the two medians in us.  The sim half
 * is exact (virtual time).  The shm half runs on this machine's clock,
 * where a busy neighbour (CI's two cores run other tests beside this
 * one) can only add time: it is run up to EQ_TRIES times and the
 * fastest median kept, stopping at the first within EQ_TOL.  The check
 * stays two-sided: a model that is too fast fails every try, and one too
 * slow fails the fastest. */
#define EQ_TRIES 3
static void eq_point(const char *nic, int nthreads, int batch, int nbatch,
		     double *sim_us, double *shm_us, uint64_t misses[2])
{
	uint64_t dur[2][2 * 200];
	struct eq_run r = { .batch = batch,
			    .nbatch = nbatch,
			    .nthreads = nthreads,
			    .dur = dur[0] };
	struct smart__sim_cfg cfg = { .seed = 5,
				      .sync_ns = 250,
				      .jitter_ns = 125,
				      .idle_skip_ns = sim_idle_skip() };
	smart_blade_t *sb = sim_blade(1);
	struct eq_sim_arg a = { &r, smart_blade_address(sb), nic };
	struct smart__sim *s;
	double us;
	int t;

	CHECK(nthreads <= 2 && nbatch <= 200);
	CHECK_OK(smart__sim_create(&cfg, &s));
	CHECK_OK(smart__sim_spawn(s, eq_sim_main, &a, 1000000));
	CHECK_OK(smart__sim_run(s));
	smart__sim_destroy(s);
	smart_blade_destroy(sb);
	*sim_us = eq_median(&r) / 1e3;
	misses[0] = r.misses;

	*shm_us = 0;
	for (t = 0; t < EQ_TRIES; t++) {
		r = (struct eq_run){ .batch = batch,
				     .nbatch = nbatch,
				     .nthreads = nthreads,
				     .dur = dur[1] };
		us = eq_shm_once(nic, &r);
		if (t > 0)
			printf("  (shm try %d: %.1f us)\n", t + 1, us);
		if (t == 0 || us < *shm_us) {
			*shm_us = us;
			misses[1] = r.misses;
		}
		if (*shm_us < (1 + EQ_TOL) * *sim_us)
			break;
	}
}

static void eq_check(const char *what, double sim, double shm)
{
	printf("  %-44s sim %8.1f us  shm %8.1f us  (%+.1f%%)\n", what, sim,
	       shm, 100 * (shm - sim) / sim);
	CHECK_MSG(shm > (1 - EQ_TOL) * sim && shm < (1 + EQ_TOL) * sim,
		  "%s: sim %.1f vs shm %.1f us", what, sim, shm);
}

/* Device-bound at 1 thread (8 READs per batch, the most a task has in
 * flight, SMART_TASK_BATCHES; 10 us of device time each: ~90 us), with
 * a WQE cache of 4 (WRs 5-8 miss, 10 us more each: ~130 us);
 * round-trip-bound at 2 threads (one READ per batch, 100 us). */
static void test_shm_equiv(void)
{
	const char *dev = "rtt_ns=10000,mops=0.1,wqe_cache=1024,miss_ns=0";
	const char *miss = "rtt_ns=10000,mops=0.1,wqe_cache=4,miss_ns=10000";
	const char *rtt = "rtt_ns=100000,mops=110,wqe_cache=1024,miss_ns=0";
	double sim, shm;
	uint64_t m[2];

	eq_point(dev, 1, 8, 200, &sim, &shm, m);
	eq_check("1 thread, 8 per batch, device-bound", sim, shm);
	CHECK_U64_EQ(m[0], 0);
	eq_point(miss, 1, 8, 200, &sim, &shm, m);
	printf("  WQE-cache misses: sim %" PRIu64 ", shm %" PRIu64 "\n", m[0],
	       m[1]);
	eq_check("1 thread, 8 per batch, WQE cache 4", sim, shm);
	CHECK_GT(m[0], 0);
	CHECK_GT(m[1], 0);
	eq_point(rtt, 2, 1, 200, &sim, &shm, m);
	eq_check("2 threads, 1 per batch, round-trip-bound", sim, shm);
}

/* ---- real_thread_aborts --------------------------------------------- */

static void child_real_thread(char **args)
{
	smart_blade_t *b = sim_blade(1);
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_gaddr_t g;

	(void)args;
	c = sim_ctx(smart_blade_address(b), 1, "per-thread");
	CHECK_OK(smart_worker_create(c, &w));
	smart_alloc(w, 1, 8, &g); /* posts: must abort */
	exit(0);
}

static void test_real_thread_aborts(void)
{
	int st;
	pid_t pid = test_spawn("real_thread", NULL);

	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st));
	CHECK_EQ(WTERMSIG(st), SIGABRT);
}

int main(int argc, char **argv)
{
	return test_main_children(
		argc, argv,
		(struct test_case[]){
			{ "order", test_order },
			{ "clock_hook", test_clock_hook },
			{ "hook_cost", test_hook_cost },
			{ "ctx", test_ctx },
			{ "deterministic", test_deterministic },
			{ "lease", test_lease },
			{ "fig3", test_fig3 },
			{ "atomics", test_atomics },
			{ "pcie", test_pcie },
			{ "responder_time", test_responder_time },
			{ "idle_skip", test_idle_skip },
			{ "idle_skip_exact", test_idle_skip_exact },
			{ "cost_table", test_cost_table },
			{ "shm_equiv", test_shm_equiv },
			{ "real_thread_aborts", test_real_thread_aborts },
			{ 0 } },
		(struct test_child[]){ { "real_thread", child_real_thread },
				       { 0 } });
}
