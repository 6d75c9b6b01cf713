/*
 * A flush storm at the deepest send queue the transport allows: a client
 * with qp_depth at its maximum keeps the send queues to 4 blades full with
 * long unsynced runs of READs and WRITEs (OPS per task, then a sync) from
 * 2 worker threads, and one blade is destroyed (smart_blade_destroy)
 * under it.  What must hold:
 *
 *  - every task working on the dead blade gets an error from its sync
 *    (SMART_ECONN, SMART_EQP or SMART_ETIMEDOUT: how many of each is
 *    printed), each within the bound below, measured from the destroy
 *    call; no task hangs;
 *  - every task on the 3 other blades keeps succeeding, each with rounds
 *    that started after the destroy;
 *  - afterwards the same ctx works with the 3 live blades (a new worker
 *    writes, reads back, adds) and refuses the dead one with SMART_ECONN,
 *    and it was never fenced.
 * Counters show the paths were taken: posts found a send queue full
 * (SMART_STAT_QP_FULL > 0) before the destroy, every task completed a
 * round before it, and errors and successes after it are both > 0.
 *
 * The bound (docs/leases.md), a protocol bound and not a speed target:
 *   lease_ms (the blade's, default 2000): the blade's death is seen at
 *     once by the keeper's watch on its control session; lease_ms is the
 *     slack for a keeper or worker kept off the CPU (a keeper that cannot
 *     run for lease_ms / 2 fences its own ctx: an error too, but not this
 *     test's);
 *   + on verbs, the life of a WR to a dead peer, 4.096 us x 2^ib_timeout
 *     x (ib_retry + 1) (docs/leases.md; 470 ms for 14 and 6), taken 4
 *     times: the InfiniBand spec lets a NIC's transport timer run up to 4
 *     times its nominal value.  The WRs behind the failed one are flushed
 *     at once;
 *   + twice the slowest round a task took before the destroy: a task on
 *     the dead blade also waits for its turn on its worker, which runs its
 *     other tasks' rounds and hands out every flushed WR's completion
 *     meanwhile (65536 a worker on shm).
 * Measured: shm, bound about 2.1 s, last error after 50-160 ms (ASan
 * with two CPU hogs beside it: 1.5 s of 3.4 s); verbs in the VM (rxe,
 * qp_depth 8191), bound 6.8-10.8 s, last error after 1.4-2.9 s.
 *
 * ib_retry is 6, not the default 7: Soft-RoCE never counts a retry count
 * of 7 down (rxe_comp.c: 7 means "retry for ever", which the InfiniBand
 * spec gives only the RNR retry count), so with 7 a WR to a dead blade on
 * rxe waits for ever and so would this test.
 *
 * qp_depth: the option's maximum (the largest value smart_opts_set takes:
 * 65536), halved while the transport refuses it (at ctx creation, or a
 * worker's QPs to the 4 blades: the device's max_qp_wr, or a CQ that must
 * hold every WR of its 4 QPs), then bisected up to the last refused depth.
 * Each worker runs, per blade, enough tasks of OPS ops to offer the whole
 * queue plus one task's round more (chain_max 64), so that posts find it
 * full.  Manual runs: SMART_STORM_DEPTH=N starts the search at N,
 * SMART_STORM_FILL=N offers N WRs per QP (plus a round), SMART_STORM_HANG_MS
 * the hang guard (default 180 s).  SMART_STORM_FILL=81408 (160 tasks a
 * blade) once showed tasks waiting for send-queue room for ever on shm,
 * when the core handed freed room to whichever task ran first; room now
 * goes to waiters in turn (ops.c), and that run passes (test_core
 * room_turns is the test of it).
 *
 * Transport: SMART_TEST_TRANSPORT (shm in `make test`; verbs in the VM,
 * tests/verbs/in-vm.sh).  Deterministic: seeded RNGs, waits on counters
 * (never a sleep to order events); clock reads only measure the bound.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"

#define NBLADES 4
#define THREADS 2
#define DEAD                                                                   \
	2 /* index of the blade destroyed (not the
				 * fixture's own, which fixture_stop frees) */
#define BLADE_BYTES	(8u << 20)
#define AREA_BYTES	(64u << 10) /* per blade: what the ops touch */
#define OPS		512	    /* ops a task queues before its sync */
#define CHAIN		"64"	    /* chain_max: the option's maximum */
#define MAX_TASKS	1024	    /* max_tasks: the option's maximum */
#define SEED		0x5707u
#define HANG_MS_DEFAULT 180000 /* a guard against a hang, not a bound */

struct storm;

struct task {
	struct storm *s;
	int blade; /* index 0..NBLADES-1 */
	smart_rng_t rng;
	void *buf;		   /* 64 registered bytes */
	_Atomic uint64_t offered;  /* ops queued */
	_Atomic uint64_t ok;	   /* rounds synced without error */
	_Atomic uint64_t ok_after; /* of which started after the destroy */
	_Atomic int err;	   /* first error (then the task ends) */
	_Atomic uint64_t done;	   /* 1 once the task returned */
	_Atomic int at;		   /* for the hang report: ops queued this
				 * round, -1 while in its sync */
	double err_ms;		   /* when, from the destroy call */
	_Atomic double round_ms;   /* its slowest round before the destroy */
};

struct storm {
	smart_ctx_t *ctx;
	uint16_t id[NBLADES];
	smart_gaddr_t area[NBLADES];
	int per_blade;		/* tasks per blade per worker */
	struct task *tasks;	/* THREADS x NBLADES x per_blade */
	_Atomic int destroying; /* 1 from just before the destroy call */
	_Atomic int destroyed;	/* 1 once smart_blade_destroy returned */
	_Atomic int stop;
	_Atomic double t_destroy; /* test_now_ms() at the destroy call */
};

/* One op at a random 8-byte-aligned place of the blade's area: a READ
 * or a WRITE of 8 or 64 bytes from/into the task's registered buffer. */
static int queue_one(smart_worker_t *w, struct task *t)
{
	uint64_t r = smart_rng_next(&t->rng);
	size_t len = (r & 2) ? 64 : 8;
	uint64_t off = ((r >> 8) % ((AREA_BYTES - len) / 8)) * 8;
	smart_gaddr_t ga = smart_gaddr_add(t->s->area[t->blade], off);

	return (r & 1) ? smart_read(w, ga, len, t->buf) :
			 smart_write(w, ga, t->buf, len);
}

static void storm_task(smart_worker_t *w, void *arg)
{
	struct task *t = arg;
	struct storm *s = t->s;

	while (!atomic_load(&s->stop)) {
		int after = atomic_load(&s->destroyed), rc = 0, rs, i;
		double t0 = test_now_ms();

		for (i = 0; i < OPS && !rc; i++) {
			atomic_store(&t->at, i);
			rc = queue_one(w, t); /* posts every chain_max */
		}
		atomic_fetch_add(&t->offered, (uint64_t)i);
		atomic_store(&t->at, -1);
		rs = smart_sync(w); /* also after a refused op: the
					 * queued ones must complete */
		if (!rc)
			rc = rs;
		if (!rc) {
			atomic_fetch_add(&t->ok, 1);
			if (after)
				atomic_fetch_add(&t->ok_after, 1);
			else if (!atomic_load(&s->destroying) &&
				 test_now_ms() - t0 > atomic_load(&t->round_ms))
				atomic_store(&t->round_ms, test_now_ms() - t0);
			continue;
		}
		t->err_ms = test_now_ms() - atomic_load(&s->t_destroy);
		atomic_store(&t->err, rc);
		break;
	}
	atomic_store(&t->done, 1);
}

struct thread_arg {
	struct storm *s;
	int index;
};

static void *storm_thread(void *p)
{
	struct thread_arg *a = p;
	struct storm *s = a->s;
	int n = NBLADES * s->per_blade, i;
	struct task *mine = s->tasks + (size_t)a->index * n;
	smart_worker_t *w;

	CHECK_OK(smart_worker_create(s->ctx, &w));
	for (i = 0; i < n; i++) {
		CHECK_OK(smart_buf_alloc(w, 64, &mine[i].buf));
		memset(mine[i].buf, 0x5a, 64);
		CHECK_OK(smart_task_spawn(w, storm_task, &mine[i]));
	}
	CHECK_OK(smart_worker_run(w));
	for (i = 0; i < n; i++)
		smart_buf_free(w, mine[i].buf);
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

/* The largest value smart_opts_set takes for qp_depth. */
static int qp_depth_option_max(void)
{
	smart_opts_t *o;
	char v[16];
	int d;

	CHECK_OK(smart_opts_create_defaults(&o));
	for (d = 1 << 24; d >= 16; d /= 2) {
		snprintf(v, sizeof(v), "%d", d);
		if (!smart_opts_set(o, "qp_depth", v))
			break;
	}
	smart_opts_destroy(o);
	CHECK_GE(d, 16);
	return d;
}

static int opt_int(const smart_opts_t *o, const char *key)
{
	char v[32];

	CHECK_OK(smart_opts_get(o, key, v, sizeof(v)));
	return atoi(v);
}

/* A client with qp_depth `depth` joined to every blade, or NULL when the
 * transport refuses that depth at ctx creation; *ib_ms gets the nominal
 * life of a WR to a dead peer on verbs (0 on shm). */
static smart_ctx_t *client_open(smart_blade_t *const *b, int depth,
				int max_tasks, double *ib_ms)
{
	char d[16], mt[16];
	const char *const kv[] = { "qp_depth", d, "chain_max", CHAIN,
				   "max_tasks", mt,
				   /* one QP per worker and blade, and no
				    * WorkReqThrot (it would keep the
				    * queues short) */
				   "qp_mode", "per-thread", "techniques",
				   "None",
				   /* the largest retry count that ends on
				    * every device: Soft-RoCE never counts
				    * 7 down (rxe_comp.c), a WR to a dead
				    * peer would wait for ever */
				   "ib_retry", "6", NULL };
	smart_opts_t *o;
	smart_ctx_t *ctx;
	uint16_t got;

	snprintf(d, sizeof(d), "%d", depth);
	snprintf(mt, sizeof(mt), "%d", max_tasks);
	o = fixture_opts(kv);
	*ib_ms = 0;
	if (smart_ctx_create(o, &ctx)) { /* e.g. deeper than the device */
		smart_opts_destroy(o);
		return NULL;
	}
	if (!strcmp(smart_ctx_transport(ctx), "verbs"))
		*ib_ms = 4.096e-3 * (double)(1u << opt_int(o, "ib_timeout")) *
			 (opt_int(o, "ib_retry") + 1);
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_set_secret(ctx, FIXTURE_SECRET,
				      sizeof(FIXTURE_SECRET) - 1));
	for (int i = 0; i < NBLADES; i++) {
		CHECK_OK(smart_ctx_connect(ctx, smart_blade_address(b[i]),
					   &got));
		CHECK_EQ(got, smart_blade_id(b[i]));
	}
	return ctx;
}

/* Does a client with qp_depth `depth` get a QP to every blade from a
 * worker (all 4 on its one CQ, as in the storm)?  0, or the refusal:
 * SMART_EINVAL / SMART_ENOMEM (a send queue or CQ the device cannot
 * make).  Anything else fails the test. */
static int probe(smart_blade_t *const *b, const uint16_t *id, int depth)
{
	smart_ctx_t *ctx;
	smart_worker_t *w;
	double ib_ms;
	uint64_t v;
	int rc = 0;

	ctx = client_open(b, depth, 1, &ib_ms);
	if (!ctx)
		return SMART_EINVAL;
	CHECK_OK(smart_worker_create(ctx, &w));
	for (int i = 0; i < NBLADES && !rc; i++)
		rc = smart_read_sync(w, smart_gaddr(id[i], 0), 8, &v);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	CHECK_MSG(!rc || rc == SMART_EINVAL || rc == SMART_ENOMEM,
		  "qp_depth %d: %s", depth, smart_status_name(rc));
	return rc;
}

/* The deepest send queue: the option's maximum, halved while the
 * transport refuses it, then bisected up to the last depth refused. */
static int deepest(smart_blade_t *const *b, const uint16_t *id)
{
	int hi = qp_depth_option_max(), lo, rc;
	const char *env = getenv("SMART_STORM_DEPTH");

	if (env) { /* a manual run: start from this depth */
		CHECK_MSG(atoi(env) >= 16 && atoi(env) <= hi,
			  "SMART_STORM_"
			  "DEPTH %s: want 16..%d",
			  env, hi);
		hi = atoi(env);
	}

	for (lo = hi; (rc = probe(b, id, lo)) != 0; lo /= 2) {
		printf("qp_depth %d refused (%s)\n", lo, smart_status_name(rc));
		hi = lo;
		CHECK_GE(lo / 2, 16);
	}
	while (hi - lo > 1) {
		int mid = lo + (hi - lo) / 2;

		if (probe(b, id, mid))
			hi = mid;
		else
			lo = mid;
	}
	return lo;
}

static uint64_t sum(const struct storm *s, size_t field_off, int blade,
		    int want_blade)
{
	uint64_t n = 0;
	size_t all = (size_t)THREADS * NBLADES * s->per_blade;

	for (size_t i = 0; i < all; i++) {
		const struct task *t = &s->tasks[i];

		if (want_blade && t->blade != blade)
			continue;
		n += atomic_load((const _Atomic uint64_t *)((const char *)t +
							    field_off));
	}
	return n;
}

#define SUM(s, f)      sum(s, offsetof(struct task, f), 0, 0)
#define SUM_B(s, f, b) sum(s, offsetof(struct task, f), b, 1)

/* Where the tasks are: printed when a wait runs out. */
static void dump(struct storm *s)
{
	smart_stats_t st;

	for (int b = 0; b < NBLADES; b++)
		fprintf(stderr,
			"blade %u: %llu ops offered, %llu rounds ok "
			"(%llu after the destroy), %llu tasks ended\n",
			s->id[b], (unsigned long long)SUM_B(s, offered, b),
			(unsigned long long)SUM_B(s, ok, b),
			(unsigned long long)SUM_B(s, ok_after, b),
			(unsigned long long)SUM_B(s, done, b));
	{
		size_t all = (size_t)THREADS * NBLADES * s->per_blade, i;
		int none = 0, part = 0;

		for (i = 0; i < all; i++) {
			struct task *t = &s->tasks[i];
			uint64_t o = atomic_load(&t->offered);
			int stuck = atomic_load(&s->destroyed) &&
				    !atomic_load(&t->done) &&
				    (t->blade == DEAD ||
				     !atomic_load(&t->ok_after));

			none += o == 0;
			part += o > 0 && o < OPS;
			if ((o < OPS || stuck) && none + part + stuck < 8)
				fprintf(stderr,
					"task %zu (worker %zu, blade "
					"%u): %llu ops offered, now %s %d\n",
					i, i / (NBLADES * s->per_blade),
					s->id[t->blade], (unsigned long long)o,
					atomic_load(&t->at) < 0 ? "in its "
								  "sync" :
								  "queueing op",
					atomic_load(&t->at));
		}
		fprintf(stderr,
			"tasks that offered nothing: %d, part of a "
			"round: %d\n",
			none, part);
	}
	if (smart_stats_snapshot(s->ctx, &st))
		return;
	fprintf(stderr,
		"WRs posted %llu, done %llu; completions %llu, "
		"errors %llu, posts on a full queue %llu, polls %llu\n",
		(unsigned long long)st.c[SMART_STAT_WRS_POSTED],
		(unsigned long long)st.c[SMART_STAT_WRS_DONE],
		(unsigned long long)st.c[SMART_STAT_COMPLETIONS],
		(unsigned long long)st.c[SMART_STAT_ERRORS],
		(unsigned long long)st.c[SMART_STAT_QP_FULL],
		(unsigned long long)st.c[SMART_STAT_POLLS]);
}

/* Wait until cond(s) or HANG_MS; fail naming what did not happen. */
static void wait_for(struct storm *s, int (*cond)(struct storm *),
		     const char *what)
{
	const char *env = getenv("SMART_STORM_HANG_MS");
	int hang_ms = env ? atoi(env) : HANG_MS_DEFAULT;
	double t0 = test_now_ms();

	while (!cond(s)) {
		if (test_now_ms() - t0 >= hang_ms) {
			dump(s);
			sleep_ms(1000); /* a second look: what still moves */
			dump(s);
			TEST_FAIL("hang: %s not reached in %d ms", what,
				  hang_ms);
		}
		sleep_ms(5); /* polling a condition, not ordering */
	}
}

/* Every task completed a round: the queues were filled (more than they
 * hold was offered to each), every QP works, and the slowest round is
 * known. */
static int storm_running(struct storm *s)
{
	size_t all = (size_t)THREADS * NBLADES * s->per_blade;

	for (size_t i = 0; i < all; i++)
		if (!atomic_load(&s->tasks[i].ok))
			return 0;
	return 1;
}

/* Every task of the dead blade ended; every live task completed a round
 * that started after the destroy (or failed: checked after). */
static int storm_settled(struct storm *s)
{
	size_t all = (size_t)THREADS * NBLADES * s->per_blade;

	for (size_t i = 0; i < all; i++) {
		struct task *t = &s->tasks[i];

		if (t->blade == DEAD ? !atomic_load(&t->done) :
				       !atomic_load(&t->ok_after) &&
					       !atomic_load(&t->done))
			return 0;
	}
	return 1;
}

/* After the storm: a new worker of the same ctx writes and reads back
 * on each live blade; the dead one fails at once with SMART_ECONN. */
static void check_after(smart_ctx_t *ctx, const struct storm *s)
{
	smart_worker_t *w;
	uint8_t *buf, *back;
	uint64_t v;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_buf_alloc(w, 4096, (void **)&buf));
	CHECK_OK(smart_buf_alloc(w, 4096, (void **)&back));
	for (int b = 0; b < NBLADES; b++) {
		if (b == DEAD) {
			CHECK_EQ(smart_read_sync(w, s->area[b], 8, &v),
				 SMART_ECONN);
			continue;
		}
		for (int k = 0; k < 4096; k++)
			buf[k] = (uint8_t)(b * 37 + k * 11);
		CHECK_OK(smart_write_sync(w, s->area[b], buf, 4096));
		memset(back, 0, 4096);
		CHECK_OK(smart_read_sync(w, s->area[b], 4096, back));
		CHECK_MSG(!memcmp(buf, back, 4096),
			  "blade %u: data written "
			  "after the storm did not read back",
			  s->id[b]);
		CHECK_OK(smart_faa_sync(w, s->area[b], 1, &v));
	}
	smart_buf_free(w, buf);
	smart_buf_free(w, back);
	CHECK_OK(smart_worker_destroy(w));
}

static void test_flush_storm(void)
{
	static struct storm s;
	struct fixture f;
	smart_blade_t *b[NBLADES];
	struct smart_blade_info info;
	struct thread_arg ta[THREADS];
	pthread_t th[THREADS];
	smart_stats_t st;
	double ib_ms = 0, bound, worst = 0, round_ms = 0;
	uint64_t errs[3] = { 0 }, ok_after = 0, fill;
	int depth, max_tasks;
	const char *env = getenv("SMART_STORM_FILL");
	size_t all;

	memset(&s, 0, sizeof(s));
	fixture_start(&f, BLADE_BYTES, 1, NULL);
	b[0] = f.blade;
	for (int i = 1; i < NBLADES; i++)
		b[i] = fixture_add_blade(&f, BLADE_BYTES, (uint16_t)(1 + i));
	for (int i = 0; i < NBLADES; i++)
		s.id[i] = smart_blade_id(b[i]);

	depth = deepest(b, s.id);

	fill = env ? strtoull(env, NULL, 0) : (uint64_t)depth;
	CHECK_MSG(fill >= OPS, "SMART_STORM_FILL %llu: want %d or more",
		  (unsigned long long)fill, OPS);
	/* one task's round more than the fill, so that posts find the
	 * queue full */
	s.per_blade = (int)((fill + OPS - 1) / OPS) + 1;
	max_tasks = NBLADES * s.per_blade;
	CHECK_MSG(max_tasks <= MAX_TASKS,
		  "%d tasks per worker is more than "
		  "max_tasks allows",
		  max_tasks);
	s.ctx = client_open(b, depth, max_tasks, &ib_ms);
	CHECK(s.ctx != NULL);
	CHECK_OK(smart_ctx_blade_info(s.ctx, s.id[DEAD], &info));
	printf("transport %s, qp_mode %s: qp_depth %d, %d WRs offered per QP "
	       "(%d tasks x %d ops per blade and worker), %d workers x %d "
	       "blades\n",
	       smart_ctx_transport(s.ctx), smart_ctx_qp_mode(s.ctx), depth,
	       s.per_blade * OPS, s.per_blade, OPS, THREADS, NBLADES);

	{ /* each blade's area, zeroed */
		smart_worker_t *w;
		void *zero;

		CHECK_OK(smart_worker_create(s.ctx, &w));
		CHECK_OK(smart_buf_alloc(w, AREA_BYTES, &zero));
		memset(zero, 0, AREA_BYTES);
		for (int i = 0; i < NBLADES; i++) {
			CHECK_OK(smart_alloc(w, s.id[i], AREA_BYTES,
					     &s.area[i]));
			CHECK_OK(smart_write_sync(w, s.area[i], zero,
						  AREA_BYTES));
		}
		smart_buf_free(w, zero);
		CHECK_OK(smart_worker_destroy(w));
	}

	all = (size_t)THREADS * NBLADES * s.per_blade;
	s.tasks = calloc(all, sizeof(*s.tasks));
	CHECK(s.tasks != NULL);
	for (size_t i = 0; i < all; i++) { /* on worker i / (4 x per_blade) */
		s.tasks[i].s = &s;
		s.tasks[i].blade = (int)(i % NBLADES);
		smart_rng_seed(&s.tasks[i].rng, SEED + i);
	}
	for (int i = 0; i < THREADS; i++) {
		ta[i] = (struct thread_arg){ &s, i };
		CHECK(!pthread_create(&th[i], NULL, storm_thread, &ta[i]));
	}
	wait_for(&s, storm_running, "every task completing a round");
	CHECK_OK(smart_stats_snapshot(s.ctx, &st));
	printf("before the destroy: %llu WRs posted, %llu posts found a send "
	       "queue full, %llu rounds done\n",
	       (unsigned long long)st.c[SMART_STAT_WRS_POSTED],
	       (unsigned long long)st.c[SMART_STAT_QP_FULL],
	       (unsigned long long)SUM(&s, ok));
	CHECK_GT(st.c[SMART_STAT_QP_FULL], 0);
	CHECK_EQ(st.c[SMART_STAT_ERRORS], 0);

	/* a task on the dead blade also waits for its turn on its worker,
	 * which meanwhile runs its other tasks' rounds: twice the slowest
	 * round seen so far bounds that wait */
	atomic_store(&s.destroying, 1);
	for (size_t i = 0; i < all; i++)
		if (atomic_load(&s.tasks[i].round_ms) > round_ms)
			round_ms = atomic_load(&s.tasks[i].round_ms);
	bound = info.lease_ms + 4 * ib_ms + 2 * round_ms;
	printf("bound: lease_ms %u + 4 x WR life %.0f ms + 2 x slowest round "
	       "%.0f ms = %.0f ms\n",
	       info.lease_ms, ib_ms, round_ms, bound);
	fflush(stdout);
	atomic_store(&s.t_destroy, test_now_ms());
	CHECK_OK(smart_blade_destroy(b[DEAD]));
	b[DEAD] = NULL;
	atomic_store(&s.destroyed, 1);
	printf("blade %u destroyed in %.0f ms\n", s.id[DEAD],
	       test_now_ms() - atomic_load(&s.t_destroy));
	wait_for(&s, storm_settled,
		 "every dead-blade task failing and "
		 "every live task completing a round after the destroy");
	atomic_store(&s.stop, 1);
	for (int i = 0; i < THREADS; i++)
		CHECK(!pthread_join(th[i], NULL));

	for (size_t i = 0; i < all; i++) {
		struct task *t = &s.tasks[i];
		int e = atomic_load(&t->err);

		if (t->blade != DEAD) {
			CHECK_MSG(!e, "task %zu on live blade %u failed: %s", i,
				  s.id[t->blade], smart_status_name(e));
			CHECK_GT(atomic_load(&t->ok_after), 0);
			ok_after += atomic_load(&t->ok_after);
			continue;
		}
		CHECK_MSG(e == SMART_ECONN || e == SMART_EQP ||
				  e == SMART_ETIMEDOUT,
			  "task %zu on the dead blade "
			  "ended with %s",
			  i, e ? smart_status_name(e) : "no error");
		errs[e == SMART_ECONN ? 0 : e == SMART_EQP ? 1 : 2]++;
		CHECK_MSG(t->err_ms <= bound,
			  "task %zu got its error %.0f ms "
			  "after the destroy, bound %.0f ms",
			  i, t->err_ms, bound);
		if (t->err_ms > worst)
			worst = t->err_ms;
	}
	CHECK_OK(smart_stats_snapshot(s.ctx, &st));
	printf("dead blade: %llu tasks failed (SMART_ECONN %llu, SMART_EQP "
	       "%llu, SMART_ETIMEDOUT %llu), the last %.0f ms after the "
	       "destroy (bound %.0f ms)\n",
	       (unsigned long long)(errs[0] + errs[1] + errs[2]),
	       (unsigned long long)errs[0], (unsigned long long)errs[1],
	       (unsigned long long)errs[2], worst, bound);
	printf("live blades: %llu rounds of %d ops after the destroy, all "
	       "succeeded; error completions %llu, reconnects %llu, "
	       "posts on a full queue %llu\n",
	       (unsigned long long)ok_after, OPS,
	       (unsigned long long)st.c[SMART_STAT_ERRORS],
	       (unsigned long long)st.c[SMART_STAT_RECONNECTS],
	       (unsigned long long)st.c[SMART_STAT_QP_FULL]);
	CHECK_GT(errs[0] + errs[1] + errs[2], 0);
	CHECK_EQ(errs[0] + errs[1] + errs[2], (uint64_t)THREADS * s.per_blade);
	CHECK_GT(ok_after, 0);
	CHECK_EQ(st.fenced, 0);

	check_after(s.ctx, &s);
	free(s.tasks);
	CHECK_OK(smart_ctx_destroy(s.ctx));
	fixture_stop(&f);
	for (int i = 1; i < NBLADES; i++)
		smart_blade_destroy(b[i]); /* NULL for the dead one */
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "flush_storm", test_flush_storm }, { 0 } });
}
