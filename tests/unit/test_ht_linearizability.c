/*
 * Linearizability of Smart-HT under concurrency, checked per key with
 * tests/harness/linearizability.h.
 *
 * Cases: the checker on hand-made histories (it must reject the broken
 * ones and accept linearizable ones with overlapping ops); real runs of
 * workers x LZ_TASKS tasks doing random ops on a small hot key set, plus
 * inserts of fresh cold keys that make small subtables split over and
 * over during the run, every op stamped with smart_now_ns()
 * (CLOCK_MONOTONIC, one clock for every process) before its call and
 * after its return; and the same workload through a deliberately broken
 * client (stale searches, or updates that report success without
 * writing), which the checker must catch.  The real runs
 * (docs/design.md §10.5):
 *   linearizable  one 16-bucket subtable, plain shm, 2 threads;
 *   adversarial   the shm transport's adversarial mode (torn multi-word
 *                 accesses, READs re-run after later WRs, late and
 *                 reordered completions), 8-bucket subtables split in four
 *                 192-byte chunks;
 *   many_splits   16 shards of 2-bucket subtables: thousands of splits;
 *   processes     3 client processes on one table (histories in a
 *                 shared mapping), plain and adversarial.
 * Each asserts that the paths its guards exist for were taken (splits,
 * frozen hits, canonical-entry verify retries, blocks freed), not only
 * that the history is linearizable.  Ops that give up with SMART_ERETRY
 * are left out: the API promises they changed nothing, and an effect of
 * one would show up as a value or a transition nobody recorded.
 *
 * Seeds (of the tasks' ops, of the table's hashes, of the adversary) are
 * fixed and printed; thread interleavings are not, so the real runs
 * assert only what holds in every interleaving (a correct table is
 * linearizable), and the broken runs break so often that a clean pass is
 * practically impossible.
 */
/* the heavy workloads: ctest label stress (tests/harness/test.h) */
#define TEST_STRESS_CASES                                                      \
	"linearizable", "adversarial", "many_splits", "processes", "sim_96"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/linearizability.h"
#include "harness/smartd_proc.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"
#include "util/sim.h"

#define BLADE_SIZE     (64u << 20)
#define LZ_THREADS     2
#define LZ_THREADS_MAX 2
#define LZ_TASKS       8
#define LZ_PROCS_MAX   3
#define LZ_TASKS_MAX   (LZ_PROCS_MAX * LZ_TASKS)
#define LZ_HOT	       12
#define LZ_OPS	       2500 /* per task: 16 x 2500 = 40000 ops */
#define LZ_OPS_MAX     5000
#define LZ_ROUNDS      2 /* of the correct run, per option set */
#define LZ_BROKEN_OPS  250
#define LZ_SEED	       0x5eed0001ull
#define COLD_BASE      1000000u

static char secret_path[] = "/tmp/smart-lz-secret-XXXXXX";

/* ---- the checker on hand-made histories --------------------------------- */

#define EV(c, r, k, o, a, x, v)                                                \
	{                                                                      \
		.call = (c), .ret = (r), .key = (k), .arg = (a), .val = (v),   \
		.op = LIN_##o, .res = LIN_R_##x                                \
	}

static int verdict(const struct lin_event *ev, size_t n)
{
	struct lin_report rep;

	return lin_check(ev, n, &rep, NULL);
}

#define EXPECT(v, ...)                                                         \
	do {                                                                   \
		const struct lin_event h_[] = { __VA_ARGS__ };                 \
		CHECK_EQ(verdict(h_, sizeof(h_) / sizeof(h_[0])), v);          \
	} while (0)

static void test_checker_rejects(void)
{
	/* a search returns a value overwritten before it started */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, UPSERT, 1, OK, 0),
	       EV(2, 3, 1, UPSERT, 2, OK, 0), EV(4, 5, 1, SEARCH, 0, OK, 1));
	/* two successful inserts without a delete between, sequential... */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, INSERT, 1, OK, 0),
	       EV(2, 3, 1, INSERT, 2, OK, 0));
	/* ...and concurrent */
	EXPECT(LIN_VIOLATION, EV(0, 5, 1, INSERT, 1, OK, 0),
	       EV(1, 6, 1, INSERT, 2, OK, 0));
	/* a delete that succeeds on an absent key */
	EXPECT(LIN_VIOLATION, EV(0, 1, 7, DELETE, 0, OK, 0));
	EXPECT(LIN_VIOLATION, EV(0, 1, 7, INSERT, 1, OK, 0),
	       EV(2, 3, 7, DELETE, 0, OK, 0), EV(4, 5, 7, DELETE, 0, OK, 0));
	/* update succeeds on an absent key; insert fails on one */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, UPDATE, 1, OK, 0));
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, INSERT, 1, EEXIST, 0));
	/* a value nobody wrote */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, UPSERT, 1, OK, 0),
	       EV(0, 2, 1, SEARCH, 0, OK, 9));
	/* legal in some sequential order, but not in real-time order */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, INSERT, 1, OK, 0),
	       EV(10, 11, 1, SEARCH, 0, ENOENT, 0));
	/* new-then-old inversion while the write is pending */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, UPSERT, 1, OK, 0),
	       EV(2, 10, 1, UPSERT, 2, OK, 0), EV(3, 4, 1, SEARCH, 0, OK, 2),
	       EV(5, 6, 1, SEARCH, 0, OK, 1));
	/* either write may win the first segment, but not both: the second
	 * segment starts from one state */
	EXPECT(LIN_VIOLATION, EV(0, 10, 1, UPSERT, 1, OK, 0),
	       EV(1, 9, 1, UPSERT, 2, OK, 0), EV(20, 21, 1, SEARCH, 0, OK, 1),
	       EV(22, 23, 1, SEARCH, 0, OK, 2));
	/* the bad key among good ones is found */
	EXPECT(LIN_VIOLATION, EV(0, 1, 1, INSERT, 1, OK, 0),
	       EV(0, 1, 2, INSERT, 2, OK, 0), EV(2, 3, 2, SEARCH, 0, OK, 2),
	       EV(2, 3, 1, SEARCH, 0, ENOENT, 0));
}

static void test_checker_accepts(void)
{
	struct lin_report rep;
	const struct lin_event none[1] = { EV(0, 0, 0, SEARCH, 0, ENOENT, 0) };

	CHECK_EQ(lin_check(none, 0, &rep, NULL), LIN_OK);
	/* searches overlapping an insert see it absent, then present */
	EXPECT(LIN_OK, EV(0, 10, 1, INSERT, 1, OK, 0),
	       EV(1, 2, 1, SEARCH, 0, ENOENT, 0),
	       EV(3, 4, 1, SEARCH, 0, OK, 1));
	/* concurrent inserts: one wins (the later-invoked one may) */
	EXPECT(LIN_OK, EV(0, 10, 1, INSERT, 1, EEXIST, 0),
	       EV(1, 11, 1, INSERT, 2, OK, 0), EV(12, 13, 1, SEARCH, 0, OK, 2));
	/* a delete and an upsert overlapping in either order */
	EXPECT(LIN_OK, EV(0, 1, 1, UPSERT, 1, OK, 0),
	       EV(2, 10, 1, DELETE, 0, OK, 0), EV(3, 9, 1, UPSERT, 2, OK, 0),
	       EV(11, 12, 1, SEARCH, 0, ENOENT, 0));
	EXPECT(LIN_OK, EV(0, 1, 1, UPSERT, 1, OK, 0),
	       EV(2, 10, 1, DELETE, 0, OK, 0), EV(3, 9, 1, UPSERT, 2, OK, 0),
	       EV(11, 12, 1, SEARCH, 0, OK, 2));
	/* update/delete that fail because of an overlapping delete */
	EXPECT(LIN_OK, EV(0, 1, 1, INSERT, 1, OK, 0),
	       EV(2, 8, 1, DELETE, 0, OK, 0), EV(3, 9, 1, UPDATE, 2, ENOENT, 0),
	       EV(4, 7, 1, DELETE, 0, ENOENT, 0),
	       EV(5, 6, 1, SEARCH, 0, OK, 1));
	/* the first segment may end in either state: both continuations */
	EXPECT(LIN_OK, EV(0, 10, 1, UPSERT, 1, OK, 0),
	       EV(1, 9, 1, UPSERT, 2, OK, 0), EV(20, 21, 1, SEARCH, 0, OK, 1),
	       EV(22, 23, 1, SEARCH, 0, OK, 1));
	EXPECT(LIN_OK, EV(0, 10, 1, UPSERT, 1, OK, 0),
	       EV(1, 9, 1, UPSERT, 2, OK, 0), EV(20, 21, 1, SEARCH, 0, OK, 2));
	/* equal stamps count as concurrent */
	EXPECT(LIN_OK, EV(0, 5, 1, SEARCH, 0, ENOENT, 0),
	       EV(5, 6, 1, INSERT, 1, OK, 0), EV(0, 5, 1, SEARCH, 0, OK, 1));
}

/* A long chain of ops, each overlapping its neighbours, in one segment:
 * memoization keeps the search small and exact. */
static void test_checker_wide(void)
{
	static struct lin_event h[400];
	struct lin_report rep;
	unsigned i;

	for (i = 0; i < 400; i++) {
		/* even: upsert(i + 1); odd: search reading the upsert before */
		struct lin_event e = EV(10 * i, 10 * i + 45, 3, UPSERT, i + 1,
					OK, 0);

		if (i % 2)
			e = (struct lin_event)EV(10 * i, 10 * i + 45, 3, SEARCH,
						 0, OK, i);
		h[i] = e;
	}
	CHECK_EQ(lin_check(h, 400, &rep, NULL), LIN_OK);
	CHECK_EQ(rep.segments, 1);
	printf("wide: %zu states\n", rep.total_states);
	h[399].val = 2; /* overwritten long before */
	CHECK_EQ(lin_check(h, 400, &rep, NULL), LIN_VIOLATION);
	printf("wide violation: %zu states\n", rep.total_states);
	h[399].val = 397; /* the read may precede upsert(399) */
	CHECK_EQ(lin_check(h, 400, &rep, NULL), LIN_OK);
}

/* Wide open concurrency and no linearization: the search gives up at its
 * budget with LIN_UNKNOWN instead of running for ages (or guessing). */
static void test_checker_budget(void)
{
	static struct lin_event h[41];
	struct lin_report rep;
	uint64_t t0 = smart_now_ns();
	unsigned i;

	for (i = 0; i < 40; i++)
		h[i] = (struct lin_event)EV(0, 100, 5, UPSERT, i + 1, OK, 0);
	h[40] = (struct lin_event)EV(0, 100, 5, SEARCH, 0, OK, 99);
	CHECK_EQ(lin_check_budget(h, 41, 100000, &rep, NULL), LIN_UNKNOWN);
	CHECK_EQ(rep.total_states, 100000);
	printf("budget: gave up after %zu states, %.0f ms\n", rep.total_states,
	       (smart_now_ns() - t0) / 1e6);
}

/* ---- real concurrent runs ----------------------------------------------- */

enum lz_mode { LZ_CORRECT, LZ_STALE_SEARCH, LZ_LOST_UPDATE };

/* One run: where it runs and what it does. */
struct lz_cfg {
	enum lz_mode mode;
	const char *opts; /* the ctxs' techniques */
	const char *adv;  /* their shm_adversarial (NULL: plain shm) */
	unsigned procs;	  /* 0: the workers run in this process; else
				 * this many client processes */
	unsigned threads; /* per process, each with LZ_TASKS tasks */
	unsigned shards;  /* all on the one blade */
	unsigned buckets, split_chunk;
	unsigned cold; /* of every 40 ops, inserts of fresh keys */
	unsigned hot;  /* keys the rest spread over (0: LZ_HOT) */
	unsigned nops; /* per task */
	uint64_t seed; /* task i: seed + i */
};

/* Per-run results of the paths the runs exist for, summed over every
 * client process (smart_ht_stats of each table object). */
struct lz_paths {
	uint64_t splits, verify_retries, frozen_hits, header_retries, freed;
	unsigned subtables; /* the most any client saw at its end */
};

static void lz_paths_add(struct lz_paths *sum, const struct lz_paths *p)
{
	sum->splits += p->splits;
	sum->verify_retries += p->verify_retries;
	sum->frozen_hits += p->frozen_hits;
	sum->header_retries += p->header_retries;
	sum->freed += p->freed;
	if (p->subtables > sum->subtables)
		sum->subtables = p->subtables;
}

/* Histories live in a shared mapping (a memfd), so that client processes
 * hand them (and their table's counters) to the parent that checks them;
 * the parent leaves them the run's cfg there, with its strings. */
struct lz_shared {
	struct lz_cfg cfg;
	char opts[96], adv[64];
	size_t n[LZ_TASKS_MAX];
	struct lz_paths paths[LZ_PROCS_MAX];
	struct lin_event ev[LZ_TASKS_MAX][LZ_OPS_MAX];
	struct lin_event all[LZ_TASKS_MAX * LZ_OPS_MAX];
};

struct lz_task {
	smart_ht_t *t;
	const struct lz_cfg *cfg;
	struct lz_shared *sh;
	unsigned id;	      /* unique over every process */
	struct lin_event *ev; /* its history (NULL: sh->ev[id]) and its */
	size_t *n;	      /* length (NULL: sh->n[id]) */
	smart_rng_t r;
	uint32_t seq, cold;
	uint64_t seen[LZ_HOT]; /* broken client's cache (0: absent) */
};

struct lz_thread {
	smart_ctx_t *ctx;
	struct lz_task task[LZ_TASKS];
};

static int lz_res(int rc)
{
	CHECK_MSG(rc == 0 || rc == SMART_ENOENT || rc == SMART_EEXIST,
		  "unexpected %s", smart_status_name(rc));
	return rc == 0		  ? LIN_R_OK :
	       rc == SMART_ENOENT ? LIN_R_ENOENT :
				    LIN_R_EEXIST;
}

/* The broken client: with probability 1/4 a search answers from its cache
 * or an update claims success without touching the table. */
static int lz_broken(struct lz_task *a, struct lin_event *e, int *rc)
{
	if (a->cfg->mode == LZ_CORRECT || e->key >= LZ_HOT ||
	    smart_rng_below(&a->r, 4))
		return 0;
	if (a->cfg->mode == LZ_STALE_SEARCH && e->op == LIN_SEARCH) {
		e->val = a->seen[e->key];
		*rc = e->val ? 0 : SMART_ENOENT;
		return 1;
	}
	if (a->cfg->mode == LZ_LOST_UPDATE && e->op == LIN_UPDATE) {
		*rc = 0;
		return 1;
	}
	return 0;
}

static int lz_call(struct lz_task *a, smart_worker_t *w, struct lin_event *e)
{
	uint32_t k = (uint32_t)e->key;
	size_t n = 0;
	int rc;

	if (lz_broken(a, e, &rc))
		return rc;
	switch (e->op) {
	case LIN_INSERT:
		return smart_ht_insert(a->t, w, &k, sizeof(k), &e->arg, 8);
	case LIN_UPDATE:
		return smart_ht_update(a->t, w, &k, sizeof(k), &e->arg, 8);
	case LIN_UPSERT:
		return smart_ht_upsert(a->t, w, &k, sizeof(k), &e->arg, 8);
	case LIN_DELETE:
		return smart_ht_delete(a->t, w, &k, sizeof(k));
	}
	rc = smart_ht_search(a->t, w, &k, sizeof(k), &e->val, 8, &n);
	if (!rc)
		CHECK_EQ(n, 8);
	return rc;
}

/* Draw the next op: cfg->cold in 40 insert a fresh cold key (so the
 * table grows while the hot keys are hammered), the rest spread over the
 * hot keys. */
static void lz_draw(struct lz_task *a, struct lin_event *e)
{
	unsigned p = (unsigned)smart_rng_below(&a->r, 40);

	memset(e, 0, sizeof(*e));
	e->arg = (uint64_t)(a->id + 1) << 32 | ++a->seq;
	if (p < a->cfg->cold) {
		e->key = COLD_BASE + a->id * LZ_OPS_MAX + a->cold++;
		e->op = LIN_INSERT;
		return;
	}
	p = (unsigned)smart_rng_below(&a->r, 35);
	e->key = smart_rng_below(&a->r, a->cfg->hot ? a->cfg->hot : LZ_HOT);
	e->op = p < 7  ? LIN_INSERT :
		p < 14 ? LIN_UPDATE :
		p < 19 ? LIN_UPSERT :
		p < 26 ? LIN_DELETE :
			 LIN_SEARCH;
}

static void lz_task_fn(smart_worker_t *w, void *p)
{
	struct lz_task *a = p;
	struct lin_event *e, *ev = a->ev ? a->ev : a->sh->ev[a->id];
	size_t n = 0;
	unsigned i;
	int rc;

	smart_rng_seed(&a->r, a->cfg->seed + a->id);
	for (i = 0; i < a->cfg->nops; i++) {
		e = &ev[n];
		lz_draw(a, e);
		e->call = smart_now_ns(); /* CLOCK_MONOTONIC: one clock
						 * for every process */
		rc = lz_call(a, w, e);
		e->ret = smart_now_ns();
		if (rc == SMART_ERETRY) {
			/* gave up (legal under heavy contention): promised
			 * to leave the table unchanged, so it is left out
			 * of the history, and an effect would show there */
			continue;
		}
		e->res = (uint8_t)lz_res(rc);
		n++;
		if (e->key >= LZ_HOT || rc)
			continue;
		/* what this client last knew of the key, for stale reads */
		a->seen[e->key] = e->op == LIN_DELETE ? 0 :
				  e->op == LIN_SEARCH ? e->val :
							e->arg;
	}
	*(a->n ? a->n : &a->sh->n[a->id]) = n;
}

static void *lz_thread_fn(void *p)
{
	struct lz_thread *th = p;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->ctx, &w));
	for (i = 0; i < LZ_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, lz_task_fn, &th->task[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

/* One process's share of the run: cfg->threads workers of LZ_TASKS tasks
 * each on table t through ctx, task ids from proc * threads * LZ_TASKS;
 * its table object's counters go to sh->paths[proc]. */
static void lz_process(smart_ctx_t *ctx, smart_ht_t *t,
		       const struct lz_cfg *cfg, struct lz_shared *sh,
		       unsigned proc)
{
	static struct lz_thread th[LZ_THREADS_MAX];
	pthread_t tid[LZ_THREADS_MAX];
	struct smart_ht_stats st;
	smart_worker_t *w;
	unsigned i, j;

	for (i = 0; i < cfg->threads; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].ctx = ctx;
		for (j = 0; j < LZ_TASKS; j++) {
			struct lz_task *a = &th[i].task[j];

			a->t = t;
			a->cfg = cfg;
			a->sh = sh;
			a->id = (proc * cfg->threads + i) * LZ_TASKS + j;
		}
		CHECK(!pthread_create(&tid[i], NULL, lz_thread_fn, &th[i]));
	}
	for (i = 0; i < cfg->threads; i++)
		pthread_join(tid[i], NULL);
	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ht_stats(t, w, &st));
	CHECK_OK(smart_worker_destroy(w));
	sh->paths[proc] = (struct lz_paths){
		.splits = st.splits,
		.verify_retries = st.verify_retries,
		.frozen_hits = st.frozen_hits,
		.header_retries = st.header_retries,
		.freed = st.freed,
		.subtables = st.subtables,
	};
}

static smart_ctx_t *lz_ctx_open(const struct lz_cfg *cfg, const char *addr)
{
	const char *tp = getenv("SMART_TEST_TRANSPORT");
	smart_opts_t *o;
	smart_ctx_t *ctx;
	uint16_t id;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "secret_file", secret_path));
	CHECK_OK(smart_opts_set(o, "buf_pool", "8M"));
	CHECK_OK(smart_opts_set(o, "log_level", "error"));
	CHECK_OK(smart_opts_set(o, "techniques", cfg->opts));
	if (tp)
		CHECK_OK(smart_opts_set(o, "transport", tp));
	/* the mode belongs to shm (verbs refuses it): elsewhere the same
	 * runs go on the real transport */
	if (cfg->adv && (!tp || !strcmp(tp, "shm")))
		CHECK_OK(smart_opts_set(o, "shm_adversarial", cfg->adv));
	CHECK_OK(smart_ctx_create(o, &ctx));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_connect(ctx, addr, &id));
	CHECK_EQ(id, 1);
	return ctx;
}

static struct lz_shared *lz_shared_map(int fd)
{
	struct lz_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, 0);

	CHECK(sh != MAP_FAILED);
	return sh;
}

/* A client process: its own ctx, the table opened by its root entry.
 * args: the blade's address, the secret file, the shared mapping's fd
 * and the process's number. */
static void lz_child(char **args)
{
	struct lz_shared *sh = lz_shared_map(atoi(args[2]));
	struct lz_cfg cfg = sh->cfg;
	smart_worker_t *w;
	smart_ctx_t *ctx;
	smart_ht_t *t;

	/* the parent's secret file: main() made none in this process */
	snprintf(secret_path, sizeof(secret_path), "%s", args[1]);
	cfg.opts = sh->opts;
	cfg.adv = sh->adv[0] ? sh->adv : NULL;
	ctx = lz_ctx_open(&cfg, args[0]);
	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ht_open(w, 1, 0, NULL, &t));
	CHECK_OK(smart_worker_destroy(w));
	lz_process(ctx, t, &cfg, sh, (unsigned)atoi(args[3]));
	smart_ht_close(t, NULL);
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* Start cfg->procs client processes on sh (mapped from shfd). */
static void lz_spawn(const struct lz_cfg *cfg, struct lz_shared *sh, int shfd,
		     const char *addr)
{
	const char *adv = cfg->adv ? cfg->adv : "";
	char fd[12], proc[12];

	sh->cfg = *cfg;
	CHECK_LT(strlen(cfg->opts), sizeof(sh->opts));
	strcpy(sh->opts, cfg->opts);
	CHECK_LT(strlen(adv), sizeof(sh->adv));
	strcpy(sh->adv, adv);
	snprintf(fd, sizeof(fd), "%d", shfd);
	for (unsigned i = 0; i < cfg->procs; i++) {
		snprintf(proc, sizeof(proc), "%u", i);
		guard.pids[i] = test_spawn("client",
					   (const char *[]){ addr, secret_path,
							     fd, proc, NULL });
		CHECK_GT(guard.pids[i], 0);
	}
}

/* Run the clients, wait for them, and gather the tasks' histories into
 * sh->all; returns the number of events. */
static size_t lz_clients(smart_ctx_t *ctx, smart_ht_t *t,
			 const struct lz_cfg *cfg, struct lz_shared *sh,
			 int shfd, const char *addr)
{
	unsigned procs = cfg->procs ? cfg->procs : 1, ntasks, i;
	size_t n = 0;
	int st;

	ntasks = procs * cfg->threads * LZ_TASKS;
	CHECK_LE(ntasks, LZ_TASKS_MAX);
	if (!cfg->procs) {
		lz_process(ctx, t, cfg, sh, 0);
	} else {
		lz_spawn(cfg, sh, shfd, addr);
		for (i = 0; i < procs; i++) {
			CHECK_EQ(waitpid((pid_t)guard.pids[i], &st, 0),
				 (pid_t)guard.pids[i]);
			guard.pids[i] = 0;
			CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				  "client process %u: status %#x", i, st);
		}
	}
	for (i = 0; i < ntasks; i++) {
		memcpy(sh->all + n, sh->ev[i], sh->n[i] * sizeof(sh->all[0]));
		n += sh->n[i];
	}
	if (n < (size_t)ntasks * cfg->nops)
		printf("  %zu ops gave up with SMART_ERETRY\n",
		       (size_t)ntasks * cfg->nops - n);
	/* a few give-ups are fine; a history made of them is not */
	CHECK_GE(n, (size_t)ntasks * cfg->nops * 99 / 100);
	return n;
}

/* Run cfg's workload on a fresh table and check it; returns the verdict,
 * with what the run did in *paths. */
static int lz_run(const struct lz_cfg *cfg, struct lin_report *rep,
		  struct lz_paths *paths)
{
	static const uint16_t one_blade[SMART_HT_SHARDS_MAX] = {
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
	};
	struct smart_ht_config c;
	struct lz_shared *sh;
	struct fixture f;
	smart_worker_t *w;
	smart_ctx_t *ctx;
	smart_ht_t *t;
	uint64_t t0;
	unsigned i;
	size_t n;
	int v, fd;

	/* no FD_CLOEXEC: client processes map it by its number */
	fd = memfd_create("lz-shared", 0);
	CHECK_GE(fd, 0);
	CHECK_EQ(ftruncate(fd, sizeof(*sh)), 0);
	sh = lz_shared_map(fd);
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	/* this process's clients (and the table's creator) are cfg's */
	ctx = lz_ctx_open(cfg, smart_blade_address(f.blade));
	CHECK_OK(smart_worker_create(ctx, &w));
	/* small subtables: the cold inserts make them split over and over
	 * while the hot keys are hammered */
	smart_ht_config_init(&c);
	c.depth = 0;
	c.buckets = cfg->buckets;
	c.split_chunk = cfg->split_chunk;
	c.seed = cfg->seed; /* the same layout run after run */
	c.blades = one_blade;
	c.nblades = cfg->shards;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	printf("mode %d, opts %s%s%s: %u x %u x %d tasks x %u ops (%u/40 "
	       "cold), %d hot keys, %u shard(s) of %u buckets, chunk %u, "
	       "seeds %#llx + task id\n",
	       (int)cfg->mode, cfg->opts, cfg->adv ? ", adversarial " : "",
	       cfg->adv ? cfg->adv : "", cfg->procs ? cfg->procs : 1,
	       cfg->threads, LZ_TASKS, cfg->nops, cfg->cold, LZ_HOT,
	       cfg->shards, cfg->buckets, cfg->split_chunk,
	       (unsigned long long)cfg->seed);
	t0 = smart_now_ns();
	n = lz_clients(ctx, t, cfg, sh, fd, smart_blade_address(f.blade));
	memset(paths, 0, sizeof(*paths));
	for (i = 0; i < (cfg->procs ? cfg->procs : 1); i++)
		lz_paths_add(paths, &sh->paths[i]);
	printf("  ran %zu ops in %.1f ms: %llu splits, %u subtables; verify "
	       "retries %llu, frozen hits %llu, header retries %llu, blocks "
	       "freed %llu\n",
	       n, (smart_now_ns() - t0) / 1e6,
	       (unsigned long long)paths->splits, paths->subtables,
	       (unsigned long long)paths->verify_retries,
	       (unsigned long long)paths->frozen_hits,
	       (unsigned long long)paths->header_retries,
	       (unsigned long long)paths->freed);
	t0 = smart_now_ns();
	v = lin_check(sh->all, n, rep, cfg->mode == LZ_CORRECT ? stderr : NULL);
	printf("  verdict %d (key %llu) in %.1f ms: %zu keys, %zu segments "
	       "(longest %zu ops), %zu states (max %zu per segment)\n",
	       v, (unsigned long long)rep->key, (smart_now_ns() - t0) / 1e6,
	       rep->keys, rep->segments, rep->max_segment, rep->total_states,
	       rep->max_states);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	fixture_stop(&f);
	CHECK_EQ(munmap(sh, sizeof(*sh)), 0);
	close(fd);
	return v;
}

static const struct lz_cfg lz_base = {
	.mode = LZ_CORRECT,
	.opts = "None",
	.threads = LZ_THREADS,
	.shards = 1,
	.buckets = 16,
	.cold = 5,
	.nops = LZ_OPS,
	.seed = LZ_SEED,
};

#define LZ_ALL_ON "ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,SpecLookup"

/* A correct table, run after run, is linearizable; asserted besides: the
 * history spans splits and real contention on the hot keys. */
static void lz_expect_ok(const struct lz_cfg *cfg, struct lz_paths *sum)
{
	struct lin_report rep;
	struct lz_paths p;

	CHECK_EQ(lz_run(cfg, &rep, &p), LIN_OK);
	CHECK_GT(p.splits, 0);
	CHECK_GE(rep.keys, LZ_HOT);
	CHECK_GT(rep.max_segment, 2);
	lz_paths_add(sum, &p);
}

/* One 16-bucket subtable splitting under the hot keys, plain shm. */
static void test_linearizable(void)
{
	struct lz_paths sum = { 0 };
	struct lz_cfg c = lz_base;
	unsigned i;

	/* LZ_ROUNDS rounds per option set, each with its own seeds */
	for (i = 0; i < 2 * LZ_ROUNDS; i++) {
		c.opts = i % 2 ? LZ_ALL_ON : "None";
		c.seed = LZ_SEED + 100 * i;
		lz_expect_ok(&c, &sum);
	}
}

/* The hostile transport (torn multi-word READs and WRITEs, READs that
 * see later WRs, late completions) and multi-chunk splits: 8-bucket
 * subtables split 192 bytes at a time, in four chunks.  The runs must
 * have taken the paths the protocol's guards are for. */
static void test_adversarial(void)
{
	struct lz_paths sum = { 0 };
	struct lz_cfg c = lz_base;
	unsigned i;

	c.buckets = 8;
	c.split_chunk = 192;
	c.cold = 8;
	for (i = 0; i < 2 * LZ_ROUNDS; i++) {
		char adv[48];

		snprintf(adv, sizeof(adv), "seed=%u,pause_pct=30", i + 1);
		c.adv = adv;
		c.opts = i % 2 ? LZ_ALL_ON : "None";
		c.seed = LZ_SEED + 200 + 100 * i;
		lz_expect_ok(&c, &sum);
	}
	CHECK_GT(sum.frozen_hits, 0);
	CHECK_GT(sum.verify_retries, 0);
	CHECK_GT(sum.freed, 0);
}

/* Thousands of splits: 16 shards of 2-bucket subtables, a third of the
 * ops inserting fresh keys, in two runs of 80 000 ops.  (Half the ops
 * fresh inserts fill some subtable at the maximum depth: SMART_ENOSPC;
 * the hash seeds are fixed so that the layout, and so the margin, is the
 * same run after run.) */
static void test_many_splits(void)
{
	struct lz_paths sum = { 0 };
	struct lz_cfg c = lz_base;
	unsigned i;

	c.shards = SMART_HT_SHARDS_MAX;
	c.buckets = 2;
	c.cold = 13;
	c.nops = LZ_OPS_MAX;
	for (i = 0; i < 2; i++) {
		c.opts = i % 2 ? LZ_ALL_ON : "None";
		c.adv = i % 2 ? "seed=77" : "seed=78,hold_pct=80";
		c.seed = LZ_SEED + 1000 + 100 * i;
		lz_expect_ok(&c, &sum);
	}
	printf("  %llu splits in all\n", (unsigned long long)sum.splits);
	CHECK_GE(sum.splits, 3000);
	CHECK_GT(sum.frozen_hits, 0);
	CHECK_GT(sum.verify_retries, 0);
	CHECK_GT(sum.freed, 0);
}

/* Several processes on one table: each its own ctx, directory cache and
 * epoch announcements, opening the table by its root entry; the
 * histories of all of them checked as one. */
static void test_processes(void)
{
	struct lz_paths sum = { 0 };
	struct lz_cfg c = lz_base;
	unsigned i;

	c.procs = LZ_PROCS_MAX;
	c.threads = 1;
	c.shards = 4;
	c.buckets = 8;
	c.split_chunk = 384;
	c.cold = 8;
	for (i = 0; i < 2; i++) {
		c.opts = i % 2 ? LZ_ALL_ON : "None";
		c.adv = i % 2 ? "seed=5" : NULL;
		c.seed = LZ_SEED + 2000 + 100 * i;
		lz_expect_ok(&c, &sum);
	}
	CHECK_GT(sum.verify_retries + sum.header_retries, 0);
	CHECK_GT(sum.frozen_hits, 0);
	CHECK_GT(sum.freed, 0);
}

/* ---- at the paper's scale, in virtual time ------------------------------ */

/* 96 threads x 8 tasks (the paper's Fig 14 scale) as fibers of the
 * simulator (docs/sim.md): the same tasks, the sim transport's NIC model
 * at its frozen parameters, every technique on, the history stamped in
 * virtual time (one clock for every fiber).  The hot keys are spread
 * wider than the real runs' 12 so that 768 tasks leave the checker
 * segments it can search; the contention is still real (retries). */
#define LZ_SIM_THREADS 96
#define LZ_SIM_OPS     40
#define LZ_SIM_HOT     256
#define LZ_SIM_TASKS   (LZ_SIM_THREADS * LZ_TASKS)

struct lz_sim {
	const char *addr;
	struct lz_cfg cfg;
	smart_ht_t *t;
	smart_ctx_t *ctx;
	struct lz_task task[LZ_SIM_TASKS];
	struct lin_event ev[LZ_SIM_TASKS][LZ_SIM_OPS];
	size_t n[LZ_SIM_TASKS];
	unsigned done;
	struct smart_ht_stats st;
	uint64_t retries, nmax_cuts, admission_waits;
};

struct lz_sim_thread {
	struct lz_sim *r;
	unsigned i;
};

static void lz_sim_worker(void *arg)
{
	struct lz_sim_thread *th = arg;
	smart_worker_t *w;

	CHECK_OK(smart_worker_create(th->r->ctx, &w));
	for (unsigned j = 0; j < LZ_TASKS; j++)
		CHECK_OK(smart_task_spawn(w, lz_task_fn,
					  &th->r->task[th->i * LZ_TASKS + j]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	th->r->done++;
}

static void lz_sim_main(void *arg)
{
	static struct lz_sim_thread th[LZ_SIM_THREADS];
	static const uint16_t one_blade[1] = { 1 };
	struct lz_sim *r = arg;
	struct smart_ht_config c;
	smart_worker_t *w;
	smart_stats_t st;
	smart_opts_t *o;
	uint16_t id;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "secret_file", secret_path));
	CHECK_OK(smart_opts_set(o, "log_level", "error"));
	CHECK_OK(smart_opts_set(o, "techniques", LZ_ALL_ON));
	CHECK_OK(smart_opts_set(o, "transport", "sim"));
	CHECK_OK(smart_opts_set(o, "nic_model", "default"));
	CHECK_OK(smart_opts_set(o, "qp_mode", "per-thread-db"));
	/* 40 ops a task end before ConflictAvoid's climb to C_limit at the
	 * 1-ms window (11 windows): n_max was never cut.  At 100 us the
	 * throttle engages and tasks park for admission */
	CHECK_OK(smart_opts_set(o, "backoff_window", "100us"));
	CHECK_OK(smart_ctx_create(o, &r->ctx));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_connect(r->ctx, r->addr, &id));
	CHECK_OK(smart_worker_create(r->ctx, &w));
	smart_ht_config_init(&c);
	c.depth = 0;
	c.buckets = r->cfg.buckets;
	c.seed = r->cfg.seed;
	c.blades = one_blade;
	c.nblades = 1;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &r->t));
	for (unsigned i = 0; i < LZ_SIM_TASKS; i++)
		r->task[i] = (struct lz_task){ .t = r->t,
					       .cfg = &r->cfg,
					       .id = i,
					       .ev = r->ev[i],
					       .n = &r->n[i] };
	for (unsigned i = 0; i < LZ_SIM_THREADS; i++) {
		th[i] = (struct lz_sim_thread){ r, i };
		CHECK_OK(smart__sim_spawn(smart__sim_self(), lz_sim_worker,
					  &th[i], 0));
	}
	while (r->done < LZ_SIM_THREADS)
		smart__sim_sleep_until(smart__sim_now() + 100000);
	CHECK_OK(smart_ht_stats(r->t, w, &r->st));
	CHECK_OK(smart_stats_snapshot(r->ctx, &st));
	r->retries = st.c[SMART_STAT_RETRIES];
	r->nmax_cuts = st.c[SMART_STAT_NMAX_CUTS];
	r->admission_waits = st.c[SMART_STAT_ADMISSION_WAITS];
	smart_ht_close(r->t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(r->ctx));
}

/* One run of mode at the paper's scale; the verdict, *rep and *r's
 * counters (r is the caller's, zeroed here). */
static int lz_sim_run(struct lz_sim *r, enum lz_mode mode,
		      struct lin_report *rep)
{
	struct smart__sim_cfg scfg = { .seed = 1,
				       .sync_ns = 90,
				       .jitter_ns = 45 };
	struct smart_blade_config bc;
	struct lin_event *all;
	struct smart__sim *s;
	smart_blade_t *b;
	double t0 = test_now_ms();
	size_t n = 0;
	int v;

	memset(r, 0, sizeof(*r));
	r->cfg = lz_base;
	r->cfg.mode = mode;
	r->cfg.opts = LZ_ALL_ON;
	r->cfg.nops = LZ_SIM_OPS;
	r->cfg.hot = LZ_SIM_HOT;
	fixture_blade_config(&bc, BLADE_SIZE, 1);
	bc.transport = "sim";
	CHECK_OK(smart_blade_create(&bc, &b));
	r->addr = smart_blade_address(b);
	CHECK_OK(smart__sim_create(&scfg, &s));
	CHECK_OK(smart__sim_spawn(s, lz_sim_main, r, 1000000));
	CHECK_OK(smart__sim_run(s));
	printf("mode %d: %u threads x %d tasks x %u ops (%u/40 cold, %u hot "
	       "keys), every technique, sim seed 1: %.3f ms of virtual time, "
	       "%.0f ms real; %llu splits, %u subtables, %llu retries, %llu "
	       "n_max cuts, %llu admission waits, verify retries %llu\n",
	       (int)mode, LZ_SIM_THREADS, LZ_TASKS, r->cfg.nops, r->cfg.cold,
	       r->cfg.hot, smart__sim_end_ns(s) / 1e6, test_now_ms() - t0,
	       (unsigned long long)r->st.splits, r->st.subtables,
	       (unsigned long long)r->retries, (unsigned long long)r->nmax_cuts,
	       (unsigned long long)r->admission_waits,
	       (unsigned long long)r->st.verify_retries);
	smart__sim_destroy(s);
	smart_blade_destroy(b);
	all = malloc(sizeof(r->ev));
	CHECK(all != NULL);
	for (unsigned i = 0; i < LZ_SIM_TASKS; i++) {
		memcpy(all + n, r->ev[i], r->n[i] * sizeof(*all));
		n += r->n[i];
	}
	CHECK_GE(n, (size_t)LZ_SIM_TASKS * LZ_SIM_OPS * 99 / 100);
	v = lin_check(all, n, rep, mode == LZ_CORRECT ? stderr : NULL);
	printf("  %zu ops: verdict %d (key %llu), %zu keys, %zu segments "
	       "(longest %zu ops), %zu states\n",
	       n, v, (unsigned long long)rep->key, rep->keys, rep->segments,
	       rep->max_segment, rep->total_states);
	free(all);
	return v;
}

/* A correct table at 96 x 8 is linearizable, with splits, real
 * conflicts and overlapping ops on a key; the broken client at the same
 * scale is caught (the check can fail here). */
static void test_sim_96(void)
{
	struct lz_sim *r = calloc(1, sizeof(*r));
	struct lin_report rep;

	CHECK(r != NULL);
	CHECK_EQ(lz_sim_run(r, LZ_CORRECT, &rep), LIN_OK);
	CHECK_GT(r->st.splits, 0);    /* the table grew under the load */
	CHECK_GT(r->retries, 0);      /* conflicts were real */
	CHECK_GT(rep.max_segment, 2); /* and ops overlapped on a key */
	/* "every technique": ConflictAvoid's coroutine throttling too, so
	 * that the admission FIFO (a sleeper's slot given up and taken back,
	 * issue 30 C6) is in the history: n_max cut, tasks parked */
	CHECK_GT(r->nmax_cuts, 0);
	CHECK_GT(r->admission_waits, 0);
	CHECK_EQ(lz_sim_run(r, LZ_LOST_UPDATE, &rep), LIN_VIOLATION);
	CHECK_LT(rep.key, LZ_HOT);
	free(r);
}

static void test_broken_client(void)
{
	struct lz_cfg c = lz_base;
	struct lin_report rep;
	struct lz_paths p;

	c.nops = LZ_BROKEN_OPS;
	c.mode = LZ_STALE_SEARCH;
	CHECK_EQ(lz_run(&c, &rep, &p), LIN_VIOLATION);
	CHECK_LT(rep.key, LZ_HOT);
	c.mode = LZ_LOST_UPDATE;
	CHECK_EQ(lz_run(&c, &rep, &p), LIN_VIOLATION);
	CHECK_LT(rep.key, LZ_HOT);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "checker_rejects", test_checker_rejects },
		{ "checker_accepts", test_checker_accepts },
		{ "checker_wide", test_checker_wide },
		{ "checker_budget", test_checker_budget },
		{ "linearizable", test_linearizable },
		{ "adversarial", test_adversarial },
		{ "many_splits", test_many_splits },
		{ "processes", test_processes },
		{ "broken_client", test_broken_client },
		{ "sim_96", test_sim_96 },
		{ NULL, NULL },
	};
	static const struct test_child children[] = {
		{ "client", lz_child },
		{ NULL, NULL },
	};

	test_children(argc, argv, children);
	guard_init(900);
	secret_file(secret_path, FIXTURE_SECRET);
	return test_main(argc, argv, cases);
}
