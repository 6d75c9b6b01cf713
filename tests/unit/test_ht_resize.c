/*
 * Unit tests of Smart-HT resizing (subtable splits) and KV block
 * reclamation through the public API and an embedded shm blade:
 * - grow: one tiny subtable grows by many splits under a seeded mix of
 *   inserts, updates, deletes and searches, checked against a local
 *   reference map after every phase (also through a second handle whose
 *   cached directory is stale);
 * - full: a table at the maximum depth reports SMART_ENOSPC and stays
 *   consistent;
 * - big: splits of subtables larger than one split chunk;
 * - concurrent: threads x tasks insert distinct keys and search keys whose
 *   insert completed before the search started while splits happen;
 * - mixed: threads x tasks run every kind of op on task-private keys
 *   (exact local maps) while splits happen;
 * - reclaim: a long update loop on few keys reuses blade memory, and
 *   concurrent updates and searches stay correct.
 * Everything is deterministic: concurrent checks are invariants that hold
 * in every interleaving.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"

#define BLADE_SIZE (64u << 20)

static smart_ht_t *make_table(smart_worker_t *w, unsigned root, unsigned depth,
			      unsigned buckets)
{
	struct smart_ht_config c;
	smart_ht_t *t;

	smart_ht_config_init(&c);
	c.depth = depth;
	c.buckets = buckets;
	CHECK_OK(smart_ht_create(w, 1, root, &c, &t));
	return t;
}

/* A value names its key and a version; check ties them together. */
struct val {
	uint32_t key, ver, check, pad;
};

static struct val mkval(uint32_t key, uint32_t ver)
{
	return (struct val){ key, ver, key * 2654435761u ^ ver, 0 };
}

static void check_val(const struct val *v, size_t n, uint32_t key)
{
	CHECK_EQ(n, sizeof(*v));
	CHECK_EQ(v->key, key);
	CHECK_EQ(v->check, key * 2654435761u ^ v->ver);
}

/* ---- grow -------------------------------------------------------------- */

#define GROW_KEYS   3000
#define GROW_PHASES 6

/* ref[k]: 0 absent, else the version present */
static void grow_check_all(smart_ht_t *t, smart_worker_t *w,
			   const uint32_t *ref)
{
	struct val v;
	uint32_t k;
	size_t n;
	int rc;

	for (k = 0; k < GROW_KEYS; k++) {
		rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v), &n);
		if (!ref[k]) {
			CHECK_EQ(rc, SMART_ENOENT);
			continue;
		}
		CHECK_OK(rc);
		check_val(&v, n, k);
		CHECK_EQ(v.ver, ref[k]);
	}
}

static void grow_phase(smart_ht_t *t, smart_worker_t *w, smart_rng_t *r,
		       uint32_t *ref, unsigned phase)
{
	uint32_t lim = GROW_KEYS / GROW_PHASES * (phase + 1), k;
	struct val v;
	int i;

	/* insert this phase's keys, then churn on all keys so far */
	for (k = lim - GROW_KEYS / GROW_PHASES; k < lim; k++) {
		v = mkval(k, 1);
		CHECK_OK(smart_ht_insert(t, w, &k, sizeof(k), &v, sizeof(v)));
		ref[k] = 1;
	}
	for (i = 0; i < 400; i++) {
		unsigned op = (unsigned)smart_rng_below(r, 3);

		k = (uint32_t)smart_rng_below(r, lim);
		v = mkval(k, ref[k] + 1);
		if (op == 0) {
			CHECK_EQ(smart_ht_update(t, w, &k, sizeof(k), &v,
						 sizeof(v)),
				 ref[k] ? 0 : SMART_ENOENT);
			ref[k] = ref[k] ? ref[k] + 1 : 0;
		} else if (op == 1) {
			CHECK_EQ(smart_ht_delete(t, w, &k, sizeof(k)),
				 ref[k] ? 0 : SMART_ENOENT);
			ref[k] = 0;
		} else {
			CHECK_OK(smart_ht_upsert(t, w, &k, sizeof(k), &v,
						 sizeof(v)));
			ref[k] = v.ver;
		}
	}
}

static void test_grow(void)
{
	static uint32_t ref[GROW_KEYS];
	struct smart_ht_stats st, st0;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t, *t2;
	smart_rng_t r;
	unsigned p;

	memset(ref, 0, sizeof(ref));
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 0, 0, 4); /* one subtable of 6 buckets */
	CHECK_OK(smart_ht_open(w, 1, 0, NULL, &t2)); /* its cache goes stale */
	CHECK_OK(smart_ht_stats(t, w, &st0));
	CHECK_EQ(st0.subtables, 1);
	CHECK_EQ(st0.global_depth, 0);
	smart_rng_seed(&r, 7);
	for (p = 0; p < GROW_PHASES; p++) {
		grow_phase(t, w, &r, ref, p);
		grow_check_all(t, w, ref);
		grow_check_all(t2, w, ref);
	}
	CHECK_OK(smart_ht_stats(t, w, &st));
	printf("grow: %u subtables, global depth %u, %llu splits\n",
	       st.subtables, st.global_depth, (unsigned long long)st.splits);
	CHECK_GT(st.splits, 50);
	CHECK_EQ(st.subtables, 1 + st.splits);
	CHECK_GE(st.global_depth, 6);
	smart_ht_close(t2, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- full: maximum depth ------------------------------------------------ */

static void test_full(void)
{
	static uint8_t in[20000];
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	struct val v;
	uint32_t k, nin = 0;
	size_t n;
	int rc = 0;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 0, SMART_HT_DEPTH_MAX, 2); /* 256 x 3 buckets */
	for (k = 0; k < 20000; k++) {
		v = mkval(k, 1);
		rc = smart_ht_insert(t, w, &k, sizeof(k), &v, sizeof(v));
		CHECK(rc == 0 || rc == SMART_ENOSPC);
		in[k] = !rc;
		nin += !rc;
	}
	/* 256 subtables x 21 slots */
	CHECK_LE(nin, 256 * 21);
	CHECK_GT(nin, 256 * 10);
	for (k = 0; k < 20000; k++) {
		rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v), &n);
		CHECK_EQ(rc, in[k] ? 0 : SMART_ENOENT);
		if (!rc)
			check_val(&v, n, k);
	}
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- big: subtables larger than a split chunk ------------------------ */

#define BIG_KEYS 40000

static void test_big(void)
{
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	struct val v;
	uint32_t k;
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 0, 0, 1024); /* 96 KiB subtables: 2 chunks */
	for (k = 0; k < BIG_KEYS; k++) {
		v = mkval(k, 1);
		CHECK_OK(smart_ht_insert(t, w, &k, sizeof(k), &v, sizeof(v)));
	}
	for (k = 0; k < BIG_KEYS + 100; k++) {
		int rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v),
					 &n);

		CHECK_EQ(rc, k < BIG_KEYS ? 0 : SMART_ENOENT);
		if (!rc)
			check_val(&v, n, k);
	}
	CHECK_OK(smart_ht_stats(t, w, &st));
	printf("big: %u subtables, %llu splits\n", st.subtables,
	       (unsigned long long)st.splits);
	CHECK_GE(st.splits, 3);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- concurrent inserts and searches while splitting ---------------- */

#define CC_THREADS 2
#define CC_TASKS   8
#define CC_N	   (CC_THREADS * CC_TASKS)
#define CC_KEYS	   400 /* per task */

struct cc_shared {
	smart_ht_t *t;
	_Atomic uint32_t done[CC_N]; /* keys whose insert returned */
};

struct cc_task {
	struct cc_shared *sh;
	smart_ht_t *t; /* mixed: the handle to use */
	unsigned id;
	uint64_t searches;
};

struct cc_thread {
	smart_ctx_t *ctx;
	struct cc_task task[CC_TASKS];
	uint64_t splits; /* mixed: through an own handle */
};

static uint32_t cc_key(unsigned task, uint32_t i)
{
	return task * 100000u + i;
}

/* Search a key of a random task among those inserted before now. */
static void cc_search_done(struct cc_task *a, smart_worker_t *w, smart_rng_t *r)
{
	unsigned o = (unsigned)smart_rng_below(r, CC_N);
	uint32_t d = atomic_load_explicit(&a->sh->done[o],
					  memory_order_acquire),
		 k;
	struct val v;
	size_t n;

	if (!d)
		return;
	k = cc_key(o, (uint32_t)smart_rng_below(r, d));
	CHECK_OK(
		smart_ht_search(a->sh->t, w, &k, sizeof(k), &v, sizeof(v), &n));
	check_val(&v, n, k);
	a->searches++;
}

static void cc_task_fn(smart_worker_t *w, void *p)
{
	struct cc_task *a = p;
	struct val v;
	smart_rng_t r;
	uint32_t i, k;

	smart_rng_seed(&r, 500 + a->id);
	for (i = 0; i < CC_KEYS; i++) {
		k = cc_key(a->id, i);
		v = mkval(k, 1);
		CHECK_OK(smart_ht_insert(a->sh->t, w, &k, sizeof(k), &v,
					 sizeof(v)));
		atomic_store_explicit(&a->sh->done[a->id], i + 1,
				      memory_order_release);
		cc_search_done(a, w, &r);
		cc_search_done(a, w, &r);
	}
}

static void *cc_thread_fn(void *p)
{
	struct cc_thread *th = p;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->ctx, &w));
	for (i = 0; i < CC_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, cc_task_fn, &th->task[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void cc_run(smart_ctx_t *ctx, struct cc_shared *sh, struct cc_thread *th,
		   void *(*fn)(void *))
{
	pthread_t tid[CC_THREADS];
	int i, j;

	for (i = 0; i < CC_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].ctx = ctx;
		for (j = 0; j < CC_TASKS; j++) {
			th[i].task[j].sh = sh;
			th[i].task[j].id = (unsigned)(i * CC_TASKS + j);
		}
		CHECK(!pthread_create(&tid[i], NULL, fn, &th[i]));
	}
	for (i = 0; i < CC_THREADS; i++)
		pthread_join(tid[i], NULL);
}

static void test_concurrent(void)
{
	static struct cc_thread th[CC_THREADS];
	static struct cc_shared sh;
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	uint64_t searches = 0;
	unsigned o, i;
	struct val v;
	uint32_t k;
	size_t n;

	memset(&sh, 0, sizeof(sh));
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	sh.t = make_table(w, 0, 0, 16);
	cc_run(f.ctx, &sh, th, cc_thread_fn);
	for (o = 0; o < CC_N; o++) {
		CHECK_EQ(atomic_load(&sh.done[o]), CC_KEYS);
		searches += th[o / CC_TASKS].task[o % CC_TASKS].searches;
		for (i = 0; i < CC_KEYS; i++) {
			k = cc_key(o, i);
			CHECK_OK(smart_ht_search(sh.t, w, &k, sizeof(k), &v,
						 sizeof(v), &n));
			check_val(&v, n, k);
		}
		k = cc_key(o, CC_KEYS);
		CHECK_EQ(smart_ht_search(sh.t, w, &k, sizeof(k), &v, sizeof(v),
					 &n),
			 SMART_ENOENT);
	}
	CHECK_OK(smart_ht_stats(sh.t, w, &st));
	printf("concurrent: %u subtables, %llu splits, %llu searches\n",
	       st.subtables, (unsigned long long)st.splits,
	       (unsigned long long)searches);
	CHECK_GT(st.splits, 20);
	CHECK_EQ(st.subtables, 1 + st.splits);
	CHECK_GT(searches, CC_N * CC_KEYS);
	smart_ht_close(sh.t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- mixed: every op kind on task-private keys while splitting ------- */

#define MX_KEYS 300 /* per task */
#define MX_OPS	1500

/* Each task owns its keys, so its local map is exact even though splits
 * triggered by all tasks move those keys around. */
static void mx_task_fn(smart_worker_t *w, void *p)
{
	struct cc_task *a = p;
	uint32_t ref[MX_KEYS] = { 0 }, i, j, k;
	smart_ht_t *t = a->t;
	struct val v;
	smart_rng_t r;
	size_t n;
	int rc;

	smart_rng_seed(&r, 900 + a->id);
	for (i = 0; i < MX_OPS; i++) {
		unsigned op = (unsigned)smart_rng_below(&r, 5);

		j = (uint32_t)smart_rng_below(&r, MX_KEYS);
		k = cc_key(a->id, j);
		v = mkval(k, ref[j] + 1);
		if (op < 2) {
			rc = smart_ht_insert(t, w, &k, sizeof(k), &v,
					     sizeof(v));
			CHECK_EQ(rc, ref[j] ? SMART_EEXIST : 0);
			ref[j] = ref[j] ? ref[j] : v.ver;
		} else if (op == 2) {
			rc = smart_ht_update(t, w, &k, sizeof(k), &v,
					     sizeof(v));
			CHECK_EQ(rc, ref[j] ? 0 : SMART_ENOENT);
			ref[j] = ref[j] ? v.ver : 0;
		} else if (op == 3) {
			rc = smart_ht_delete(t, w, &k, sizeof(k));
			CHECK_EQ(rc, ref[j] ? 0 : SMART_ENOENT);
			ref[j] = 0;
		} else {
			rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v),
					     &n);
			CHECK_EQ(rc, ref[j] ? 0 : SMART_ENOENT);
			if (!rc) {
				check_val(&v, n, k);
				CHECK_EQ(v.ver, ref[j]);
			}
		}
	}
	for (j = 0; j < MX_KEYS; j++) {
		k = cc_key(a->id, j);
		rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v), &n);
		CHECK_EQ(rc, ref[j] ? 0 : SMART_ENOENT);
		if (!rc)
			CHECK_EQ(v.ver, ref[j]);
	}
	a->searches = 1; /* finished */
}

/* Thread 0 shares the creator's handle; the others open their own, with
 * their own directory cache, as another process would. */
static void *mx_thread_fn(void *p)
{
	struct cc_thread *th = p;
	struct smart_ht_stats st;
	smart_ht_t *t = th->task[0].sh->t;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->ctx, &w));
	if (th->task[0].id)
		CHECK_OK(smart_ht_open(w, 1, 0, NULL, &t));
	for (i = 0; i < CC_TASKS; i++) {
		th->task[i].t = t;
		CHECK_OK(smart_task_spawn(w, mx_task_fn, &th->task[i]));
	}
	CHECK_OK(smart_worker_run(w));
	if (th->task[0].id) {
		CHECK_OK(smart_ht_stats(t, w, &st));
		th->splits = st.splits;
		smart_ht_close(t, NULL);
	}
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void test_mixed(void)
{
	static struct cc_thread th[CC_THREADS];
	static struct cc_shared sh;
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	unsigned o;

	memset(&sh, 0, sizeof(sh));
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	sh.t = make_table(w, 0, 0, 8);
	cc_run(f.ctx, &sh, th, mx_thread_fn);
	for (o = 0; o < CC_N; o++)
		CHECK_EQ(th[o / CC_TASKS].task[o % CC_TASKS].searches, 1);
	CHECK_OK(smart_ht_stats(sh.t, w, &st));
	for (o = 1; o < CC_THREADS; o++)
		st.splits += th[o].splits;
	printf("mixed: %u subtables, %llu splits (%llu via own handles)\n",
	       st.subtables, (unsigned long long)st.splits,
	       (unsigned long long)th[1].splits);
	CHECK_GT(st.splits, 10);
	CHECK_EQ(st.subtables, 1 + st.splits);
	smart_ht_close(sh.t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- reclamation ------------------------------------------------------ */

#define RC_KEYS	   8
#define RC_UPDATES 20000
#define RC_HOT(i)  (50000u + (i)) /* apart from cc_key()'s */

static smart_ht_t *make_reclaim_table(smart_worker_t *w, unsigned buckets)
{
	struct smart_ht_config c;
	smart_ht_t *t;

	smart_ht_config_init(&c);
	c.depth = 0;
	c.buckets = buckets;
	c.reclaim = 1;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	return t;
}

static void test_reclaim_reuse(void)
{
	smart_stats_t s0, s1;
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	struct val v;
	uint32_t k, i, ver[RC_KEYS] = { 0 };
	uint64_t allocs, frees;
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_reclaim_table(w, 64);
	for (k = 0; k < RC_KEYS; k++) {
		v = mkval(k, ++ver[k]);
		CHECK_OK(smart_ht_insert(t, w, &k, sizeof(k), &v, sizeof(v)));
	}
	CHECK_OK(smart_stats_snapshot(f.ctx, &s0));
	for (i = 0; i < RC_UPDATES; i++) {
		k = i % RC_KEYS;
		v = mkval(k, ++ver[k]);
		CHECK_OK(smart_ht_update(t, w, &k, sizeof(k), &v, sizeof(v)));
		if (i % 7 == 0) {
			k = (i * 5) % RC_KEYS;
			CHECK_OK(smart_ht_search(t, w, &k, sizeof(k), &v,
						 sizeof(v), &n));
			check_val(&v, n, k);
			CHECK_EQ(v.ver, ver[k]);
		}
	}
	CHECK_OK(smart_stats_snapshot(f.ctx, &s1));
	allocs = s1.c[SMART_STAT_ALLOCS] - s0.c[SMART_STAT_ALLOCS];
	frees = s1.c[SMART_STAT_FREES] - s0.c[SMART_STAT_FREES];
	CHECK_OK(smart_ht_stats(t, w, &st));
	printf("reclaim: %llu allocs, %llu frees, %llu retired, %llu freed, "
	       "%llu chunks claimed\n",
	       (unsigned long long)allocs, (unsigned long long)frees,
	       (unsigned long long)st.retired, (unsigned long long)st.freed,
	       (unsigned long long)(s1.c[SMART_STAT_CHUNKS_CLAIMED] -
				    s0.c[SMART_STAT_CHUNKS_CLAIMED]));
	CHECK_GE(allocs, RC_UPDATES);
	/* all but the last batch of retired blocks came back */
	CHECK_LE(allocs - frees, 200);
	CHECK_EQ(st.retired, RC_UPDATES);
	CHECK_GE(st.freed, RC_UPDATES - 200);
	/* 20000 blocks of 64 B would need 20 chunks of 64 KiB */
	CHECK_LE(s1.c[SMART_STAT_CHUNKS_CLAIMED] -
			 s0.c[SMART_STAT_CHUNKS_CLAIMED],
		 2);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* Hot keys, never deleted: every search must find a well-formed value of
 * its key even though the blocks it reads are freed and reused all the
 * time. */
static void hot_task_fn(smart_worker_t *w, void *p)
{
	struct cc_task *a = p;
	smart_ht_t *t = a->sh->t;
	struct val v;
	smart_rng_t r;
	uint32_t i, k;
	size_t n;

	smart_rng_seed(&r, 300 + a->id);
	for (i = 0; i < 1500; i++) {
		k = RC_HOT((uint32_t)smart_rng_below(&r, RC_KEYS));
		if (smart_rng_below(&r, 2)) {
			v = mkval(k, a->id << 16 | i);
			CHECK_OK(smart_ht_update(t, w, &k, sizeof(k), &v,
						 sizeof(v)));
		} else {
			CHECK_OK(smart_ht_search(t, w, &k, sizeof(k), &v,
						 sizeof(v), &n));
			check_val(&v, n, k);
		}
	}
	a->searches = 1;
}

static void *hot_thread_fn(void *p)
{
	struct cc_thread *th = p;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->ctx, &w));
	for (i = 0; i < CC_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, hot_task_fn, &th->task[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void test_reclaim_concurrent(void)
{
	static struct cc_thread th[CC_THREADS];
	static struct cc_shared sh;
	struct smart_ht_stats st;
	struct fixture f;
	smart_worker_t *w;
	struct val v;
	uint32_t k;
	unsigned o;

	memset(&sh, 0, sizeof(sh));
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	sh.t = make_reclaim_table(w, 8);
	for (k = RC_HOT(0); k < RC_HOT(RC_KEYS); k++) {
		v = mkval(k, 0);
		CHECK_OK(
			smart_ht_insert(sh.t, w, &k, sizeof(k), &v, sizeof(v)));
	}
	cc_run(f.ctx, &sh, th, hot_thread_fn);
	/* then task-private keys with every op kind, splits included */
	cc_run(f.ctx, &sh, th, mx_thread_fn);
	for (o = 0; o < CC_N; o++)
		CHECK_EQ(th[o / CC_TASKS].task[o % CC_TASKS].searches, 1);
	CHECK_OK(smart_ht_stats(sh.t, w, &st));
	for (o = 1; o < CC_THREADS; o++)
		st.splits += th[o].splits;
	printf("reclaim concurrent: %llu retired, %llu freed, %llu splits\n",
	       (unsigned long long)st.retired, (unsigned long long)st.freed,
	       (unsigned long long)st.splits);
	CHECK_GT(st.freed, 1000);
	CHECK_GT(st.splits, 10);
	smart_ht_close(sh.t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "grow", test_grow },
		{ "full", test_full },
		{ "big", test_big },
		{ "concurrent", test_concurrent },
		{ "mixed", test_mixed },
		{ "reclaim_reuse", test_reclaim_reuse },
		{ "reclaim_concurrent", test_reclaim_concurrent },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
