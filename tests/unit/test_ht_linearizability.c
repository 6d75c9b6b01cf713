/*
 * Linearizability of Smart-HT under concurrency, checked per key with
 * tests/harness/linearizability.h.
 *
 * Cases: the checker on hand-made histories (it must reject the broken
 * ones and accept linearizable ones with overlapping ops); real runs of
 * LZ_THREADS workers x LZ_TASKS tasks doing random ops on a small hot key
 * set, plus inserts of fresh cold keys that make a one-subtable table
 * split many times during the run (asserted through smart_ht_stats()),
 * every op stamped with smart_now_ns() before its call and after its
 * return; and the same workload through a deliberately broken client
 * (stale searches, or updates that report success without writing), which
 * the checker must catch.  Ops that give up with SMART_ERETRY are left
 * out: the API promises they changed nothing, and an effect of one would
 * show up as a value or a transition nobody recorded.
 *
 * Seeds are fixed and printed; interleavings are not, so the real runs
 * assert only what holds in every interleaving (a correct table is
 * linearizable), and the broken runs break so often that a clean pass is
 * practically impossible.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/linearizability.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"

#define BLADE_SIZE	(64u << 20)
#define LZ_THREADS	2
#define LZ_TASKS	8
#define LZ_HOT		12
#define LZ_OPS		2500	/* per task: 16 x 2500 = 40000 ops */
#define LZ_ROUNDS	2	/* of the correct run, per option set */
#define LZ_BROKEN_OPS	250
#define LZ_SEED		0x5eed0001ull
#define COLD_BASE	1000000u

/* ---- the checker on hand-made histories --------------------------------- */

#define EV(c, r, k, o, a, x, v)                                              \
	{ .call = (c), .ret = (r), .key = (k), .arg = (a), .val = (v),        \
	  .op = LIN_##o, .res = LIN_R_##x }

static int verdict(const struct lin_event *ev, size_t n)
{
	struct lin_report rep;

	return lin_check(ev, n, &rep, NULL);
}

#define EXPECT(v, ...)                                                       \
	do {                                                                 \
		const struct lin_event h_[] = { __VA_ARGS__ };               \
		CHECK_EQ(verdict(h_, sizeof(h_) / sizeof(h_[0])), v);        \
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
			e = (struct lin_event)EV(10 * i, 10 * i + 45, 3,
						 SEARCH, 0, OK, i);
		h[i] = e;
	}
	CHECK_EQ(lin_check(h, 400, &rep, NULL), LIN_OK);
	CHECK_EQ(rep.segments, 1);
	printf("wide: %zu states\n", rep.total_states);
	h[399].val = 2;		/* overwritten long before */
	CHECK_EQ(lin_check(h, 400, &rep, NULL), LIN_VIOLATION);
	printf("wide violation: %zu states\n", rep.total_states);
	h[399].val = 397;	/* the read may precede upsert(399) */
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
	printf("budget: gave up after %zu states, %.0f ms\n",
	       rep.total_states, (smart_now_ns() - t0) / 1e6);
}

/* ---- real concurrent runs ----------------------------------------------- */

enum lz_mode { LZ_CORRECT, LZ_STALE_SEARCH, LZ_LOST_UPDATE };

struct lz_task {
	smart_ht_t *t;
	unsigned id, nops;
	enum lz_mode mode;
	uint64_t seed;
	smart_rng_t r;
	uint32_t seq, cold;
	unsigned retries;	/* ops that ended in SMART_ERETRY */
	uint64_t seen[LZ_HOT];	/* broken client's cache (0: absent) */
	struct lin_event *ev;
	size_t n;
};

struct lz_thread {
	smart_ctx_t *ctx;
	struct lz_task task[LZ_TASKS];
};

static int lz_res(int rc)
{
	CHECK_MSG(rc == 0 || rc == SMART_ENOENT || rc == SMART_EEXIST,
		  "unexpected %s", smart_status_name(rc));
	return rc == 0 ? LIN_R_OK : rc == SMART_ENOENT ? LIN_R_ENOENT :
							 LIN_R_EEXIST;
}

/* The broken client: with probability 1/4 a search answers from its cache
 * or an update claims success without touching the table. */
static int lz_broken(struct lz_task *a, struct lin_event *e, int *rc)
{
	if (a->mode == LZ_CORRECT || e->key >= LZ_HOT ||
	    smart_rng_below(&a->r, 4))
		return 0;
	if (a->mode == LZ_STALE_SEARCH && e->op == LIN_SEARCH) {
		e->val = a->seen[e->key];
		*rc = e->val ? 0 : SMART_ENOENT;
		return 1;
	}
	if (a->mode == LZ_LOST_UPDATE && e->op == LIN_UPDATE) {
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

/* Draw the next op: 1 in 8 inserts a fresh cold key (so the table grows
 * while the hot keys are hammered), the rest spread over the hot keys. */
static void lz_draw(struct lz_task *a, struct lin_event *e)
{
	unsigned p = (unsigned)smart_rng_below(&a->r, 40);

	memset(e, 0, sizeof(*e));
	e->arg = (uint64_t)(a->id + 1) << 32 | ++a->seq;
	if (p < 5) {
		e->key = COLD_BASE + a->id * LZ_OPS + a->cold++;
		e->op = LIN_INSERT;
		return;
	}
	e->key = smart_rng_below(&a->r, LZ_HOT);
	e->op = p < 12 ? LIN_INSERT : p < 19 ? LIN_UPDATE : p < 24 ?
		LIN_UPSERT : p < 31 ? LIN_DELETE : LIN_SEARCH;
}

static void lz_task_fn(smart_worker_t *w, void *p)
{
	struct lz_task *a = p;
	struct lin_event *e;
	unsigned i;
	int rc;

	smart_rng_seed(&a->r, a->seed);
	for (i = 0, a->n = 0; i < a->nops; i++) {
		e = &a->ev[a->n];
		lz_draw(a, e);
		e->call = smart_now_ns();
		rc = lz_call(a, w, e);
		e->ret = smart_now_ns();
		if (rc == SMART_ERETRY) {
			/* gave up (legal under heavy contention): promised
			 * to leave the table unchanged, so it is left out
			 * of the history, and an effect would show there */
			a->retries++;
			continue;
		}
		e->res = (uint8_t)lz_res(rc);
		a->n++;
		if (e->key >= LZ_HOT || rc)
			continue;
		/* what this client last knew of the key, for stale reads */
		a->seen[e->key] = e->op == LIN_DELETE ? 0 :
				  e->op == LIN_SEARCH ? e->val : e->arg;
	}
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

/* Start the workers (each spawning its tasks), wait for them, and gather
 * the tasks' histories into all[]; returns the number of events. */
static size_t lz_workers(smart_ctx_t *ctx, smart_ht_t *t, enum lz_mode mode,
			 uint64_t seed, unsigned nops, struct lin_event *all)
{
	static struct lz_thread th[LZ_THREADS];
	static struct lin_event ev[LZ_THREADS * LZ_TASKS][LZ_OPS];
	pthread_t tid[LZ_THREADS];
	size_t n = 0;
	int i, j;

	for (i = 0; i < LZ_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].ctx = ctx;
		for (j = 0; j < LZ_TASKS; j++) {
			struct lz_task *a = &th[i].task[j];

			a->t = t;
			a->id = (unsigned)(i * LZ_TASKS + j);
			a->nops = nops;
			a->mode = mode;
			a->seed = seed + a->id;
			a->ev = ev[a->id];
		}
		CHECK(!pthread_create(&tid[i], NULL, lz_thread_fn, &th[i]));
	}
	for (i = 0; i < LZ_THREADS; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < LZ_THREADS; i++)
		for (j = 0; j < LZ_TASKS; j++) {
			memcpy(all + n, th[i].task[j].ev,
			       th[i].task[j].n * sizeof(all[0]));
			n += th[i].task[j].n;
		}
	if (n < (size_t)LZ_THREADS * LZ_TASKS * nops)
		printf("  %zu ops gave up with SMART_ERETRY\n",
		       (size_t)LZ_THREADS * LZ_TASKS * nops - n);
	return n;
}

/* Run the workload on a fresh table (ctx options `opts`, task seeds
 * seed + task id) and check it; returns the verdict, and the number of
 * subtable splits during the run in *splits. */
static int lz_run(enum lz_mode mode, const char *opts, uint64_t seed,
		  unsigned nops, struct lin_report *rep, uint64_t *splits)
{
	static struct lin_event all[LZ_THREADS * LZ_TASKS * LZ_OPS];
	const char *kv[] = { "techniques", opts, NULL };
	struct smart_ht_config c;
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	uint64_t t0;
	size_t n;
	int v;

	fixture_start(&f, BLADE_SIZE, 1, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	/* one small subtable: the cold inserts make it split over and over
	 * while the hot keys are hammered */
	smart_ht_config_init(&c);
	c.depth = 0;
	c.buckets = 16;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	printf("mode %d, opts %s: %d x %d tasks x %u ops, %d hot keys, "
	       "seeds %#llx + task id\n", (int)mode, opts, LZ_THREADS,
	       LZ_TASKS, nops, LZ_HOT, (unsigned long long)seed);
	t0 = smart_now_ns();
	n = lz_workers(f.ctx, t, mode, seed, nops, all);
	/* a few give-ups are fine; a history made of them is not */
	CHECK_GE(n, (size_t)LZ_THREADS * LZ_TASKS * nops * 99 / 100);
	CHECK_OK(smart_ht_stats(t, w, &st));
	*splits = st.splits;
	printf("  ran %zu ops in %.1f ms: %llu splits, %u subtables\n", n,
	       (smart_now_ns() - t0) / 1e6, (unsigned long long)st.splits,
	       st.subtables);
	t0 = smart_now_ns();
	v = lin_check(all, n, rep, mode == LZ_CORRECT ? stderr : NULL);
	printf("  verdict %d (key %llu) in %.1f ms: %zu keys, %zu segments "
	       "(longest %zu ops), %zu states (max %zu per segment)\n", v,
	       (unsigned long long)rep->key, (smart_now_ns() - t0) / 1e6,
	       rep->keys, rep->segments, rep->max_segment, rep->total_states,
	       rep->max_states);
	smart_ht_close(t);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
	return v;
}

static void test_linearizable(void)
{
	static const char *const opts[] = {
		"None", "ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,SpecLookup",
	};
	struct lin_report rep;
	uint64_t splits;
	unsigned i;

	/* LZ_ROUNDS rounds per option set, each with its own seeds */
	for (i = 0; i < 2 * LZ_ROUNDS; i++) {
		CHECK_EQ(lz_run(LZ_CORRECT, opts[i % 2], LZ_SEED + 100 * i,
				LZ_OPS, &rep, &splits), LIN_OK);
		/* the checked history spans subtable splits */
		CHECK_GT(splits, 0);
		CHECK_GE(rep.keys, LZ_HOT);
		/* the hot keys did see contention worth checking */
		CHECK_GT(rep.max_segment, 2);
	}
}

static void test_broken_client(void)
{
	struct lin_report rep;
	uint64_t splits;

	CHECK_EQ(lz_run(LZ_STALE_SEARCH, "None", LZ_SEED, LZ_BROKEN_OPS, &rep,
			&splits), LIN_VIOLATION);
	CHECK_LT(rep.key, LZ_HOT);
	CHECK_EQ(lz_run(LZ_LOST_UPDATE, "None", LZ_SEED, LZ_BROKEN_OPS, &rep,
			&splits), LIN_VIOLATION);
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
		{ "broken_client", test_broken_client },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
