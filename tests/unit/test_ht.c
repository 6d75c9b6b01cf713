/*
 * Unit tests of Smart-HT through the public API and embedded shm blades:
 * semantics against a local reference map (seeded random ops), long keys
 * and values, bad arguments, tables that do not exist, several shards,
 * and concurrency (threads x tasks on a hot key set; racing inserts of one
 * key).  Outcomes are deterministic: concurrent results are checked with
 * invariants that hold in every interleaving.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"

#define BLADE_SIZE (64u << 20)

static smart_ht_t *make_table(smart_worker_t *w, uint16_t blade, unsigned root,
			      unsigned depth, unsigned buckets)
{
	struct smart_ht_config c;
	smart_ht_t *t;

	smart_ht_config_init(&c);
	c.depth = depth;
	c.buckets = buckets;
	CHECK_OK(smart_ht_create(w, blade, root, &c, &t));
	return t;
}

static void test_basic(void)
{
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t, *t2;
	char v[64];
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 1, 3, 1, 64);
	CHECK_EQ(smart_ht_shards(t), 1);
	CHECK_EQ(smart_ht_search(t, w, "k", 1, v, sizeof(v), &n), SMART_ENOENT);
	CHECK_OK(smart_ht_insert(t, w, "k", 1, "one", 3));
	CHECK_EQ(smart_ht_insert(t, w, "k", 1, "two", 3), SMART_EEXIST);
	CHECK_OK(smart_ht_search(t, w, "k", 1, v, sizeof(v), &n));
	CHECK_EQ(n, 3);
	CHECK(!memcmp(v, "one", 3));
	CHECK_OK(smart_ht_update(t, w, "k", 1, "three", 5));
	CHECK_EQ(smart_ht_update(t, w, "x", 1, "three", 5), SMART_ENOENT);
	CHECK_OK(smart_ht_search(t, w, "k", 1, v, sizeof(v), &n));
	CHECK_EQ(n, 5);
	CHECK(!memcmp(v, "three", 5));
	CHECK_EQ(smart_ht_search(t, w, "k", 1, v, 2, &n), SMART_ERANGE);
	CHECK_EQ(n, 5);
	CHECK_OK(smart_ht_upsert(t, w, "x", 1, "", 0)); /* empty value */
	CHECK_OK(smart_ht_search(t, w, "x", 1, NULL, 0, &n));
	CHECK_EQ(n, 0);
	CHECK_OK(smart_ht_upsert(t, w, "x", 1, "xx", 2));
	/* a second handle on the same table sees the same data */
	CHECK_OK(smart_ht_open(w, 1, 3, NULL, &t2));
	CHECK_OK(smart_ht_search(t2, w, "x", 1, v, sizeof(v), &n));
	CHECK_EQ(n, 2);
	CHECK_OK(smart_ht_delete(t2, w, "x", 1));
	CHECK_EQ(smart_ht_delete(t, w, "x", 1), SMART_ENOENT);
	CHECK_EQ(smart_ht_search(t, w, "x", 1, v, sizeof(v), &n), SMART_ENOENT);
	CHECK_OK(smart_ht_insert(t, w, "x", 1, "back", 4));
	smart_ht_close(t2, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

#define REF_KEYS 300
#define REF_OPS	 6000

struct ref {
	int present;
	size_t len;
	char val[200];
};

static size_t ref_key(unsigned i, char *k)
{
	/* unique prefix, then filler: lengths up to 40 bytes, so blocks
	 * span one or two 64-byte units */
	size_t len = 1 + (i * 7) % 40;
	int p = snprintf(k, 64, "k%u", i);

	if (len < (size_t)p)
		len = (size_t)p;
	memset(k + p, 'x', len - (size_t)p);
	return len;
}

static void ref_value(smart_rng_t *r, struct ref *out)
{
	size_t i;

	out->len = smart_rng_below(r, sizeof(out->val));
	for (i = 0; i < out->len; i++)
		out->val[i] = (char)smart_rng_next(r);
}

static void ref_step(smart_ht_t *t, smart_worker_t *w, smart_rng_t *r,
		     struct ref *ref)
{
	unsigned i = (unsigned)smart_rng_below(r, REF_KEYS);
	unsigned op = (unsigned)smart_rng_below(r, 5);
	struct ref *e = &ref[i], nv;
	char k[64], v[256];
	size_t kl = ref_key(i, k), n;
	int rc;

	ref_value(r, &nv);
	switch (op) {
	case 0:
		rc = smart_ht_insert(t, w, k, kl, nv.val, nv.len);
		CHECK_EQ(rc, e->present ? SMART_EEXIST : 0);
		if (!e->present)
			*e = nv, e->present = 1;
		break;
	case 1:
		rc = smart_ht_update(t, w, k, kl, nv.val, nv.len);
		CHECK_EQ(rc, e->present ? 0 : SMART_ENOENT);
		if (e->present)
			*e = nv, e->present = 1;
		break;
	case 2:
		CHECK_OK(smart_ht_upsert(t, w, k, kl, nv.val, nv.len));
		*e = nv, e->present = 1;
		break;
	case 3:
		rc = smart_ht_delete(t, w, k, kl);
		CHECK_EQ(rc, e->present ? 0 : SMART_ENOENT);
		e->present = 0;
		break;
	default:
		rc = smart_ht_search(t, w, k, kl, v, sizeof(v), &n);
		CHECK_EQ(rc, e->present ? 0 : SMART_ENOENT);
		if (e->present) {
			CHECK_EQ(n, e->len);
			CHECK(!memcmp(v, e->val, n));
		}
	}
}

static void run_reference(const char *opts, unsigned reclaim)
{
	struct smart_ht_config c;
	const char *kv[] = { "techniques", opts, NULL };
	static struct ref ref[REF_KEYS];
	struct fixture f;
	smart_worker_t *w;
	smart_rng_t r;
	smart_ht_t *t;
	int i;

	memset(ref, 0, sizeof(ref));
	fixture_start(&f, BLADE_SIZE, 1, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&c);
	c.depth = 2;
	c.buckets = 64; /* 4 x 64 buckets: crowded */
	c.reclaim = reclaim;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	smart_rng_seed(&r, 42);
	for (i = 0; i < REF_OPS; i++)
		ref_step(t, w, &r, ref);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_reference(void)
{
	run_reference("None", 0);
	run_reference("ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,SpecLookup",
		      0);
	/* with block reclamation: freed blocks get reused under the map */
	run_reference("ThrdAwareAlloc,WorkReqThrot,ConflictAvoid,SpecLookup",
		      1);
}

static void test_long(void)
{
	static char key[SMART_HT_KEY_MAX + 1], val[SMART_HT_VALUE_MAX + 1];
	static char out[SMART_HT_VALUE_MAX];
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	size_t n, i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (char)(i * 31 + 1);
	for (i = 0; i < sizeof(val); i++)
		val[i] = (char)(i * 17 + 3);
	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 1, 0, 0, 16);
	CHECK_OK(smart_ht_insert(t, w, key, SMART_HT_KEY_MAX, val, 4096));
	CHECK_OK(smart_ht_search(t, w, key, SMART_HT_KEY_MAX, out, sizeof(out),
				 &n));
	CHECK_EQ(n, 4096);
	CHECK(!memcmp(out, val, n));
	/* a key that differs in its last byte only is another key */
	key[SMART_HT_KEY_MAX - 1] ^= 1;
	CHECK_EQ(smart_ht_search(t, w, key, SMART_HT_KEY_MAX, out, sizeof(out),
				 &n),
		 SMART_ENOENT);
	CHECK_OK(smart_ht_insert(t, w, key, SMART_HT_KEY_MAX, val,
				 SMART_HT_VALUE_MAX));
	CHECK_OK(smart_ht_search(t, w, key, SMART_HT_KEY_MAX, out, sizeof(out),
				 &n));
	CHECK_EQ(n, SMART_HT_VALUE_MAX);
	CHECK(!memcmp(out, val, n));
	/* bad arguments: errors, no effect */
	CHECK_EQ(smart_ht_insert(t, w, key, SMART_HT_KEY_MAX + 1, val, 1),
		 SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(t, w, key, 1, val, SMART_HT_VALUE_MAX + 1),
		 SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(t, w, key, 0, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(t, w, NULL, 1, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(t, w, key, 1, NULL, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(NULL, w, key, 1, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_insert(t, NULL, key, 1, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_update(t, w, key, 300, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_upsert(t, w, NULL, 3, val, 1), SMART_EINVAL);
	CHECK_EQ(smart_ht_delete(t, w, key, 0), SMART_EINVAL);
	CHECK_EQ(smart_ht_search(t, w, key, 1, out, sizeof(out), NULL),
		 SMART_EINVAL);
	CHECK_EQ(smart_ht_search(t, w, key, 1, NULL, 5, &n), SMART_EINVAL);
	CHECK_EQ(smart_ht_search(t, w, key, 1, out, sizeof(out), &n),
		 SMART_ENOENT);
	smart_ht_close(t, NULL);
	smart_ht_close(NULL, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_not_found(void)
{
	struct smart_ht_config c;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t = NULL;
	uint16_t bad = 9;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_EQ(smart_ht_open(w, 1, 5, NULL, &t), SMART_ENOENT);
	CHECK_EQ(smart_ht_open(w, 1, SMART_ROOT_ENTRIES, NULL, &t),
		 SMART_EINVAL);
	CHECK_EQ(smart_ht_open(w, 1, 5, NULL, NULL), SMART_EINVAL);
	CHECK_EQ(smart_ht_open(w, 7, 5, NULL, &t), SMART_ENOENT); /* no blade */
	CHECK(t == NULL);
	/* a root entry holding something that is not a table */
	CHECK_OK(smart_root_set(w, 1, 6, smart_gaddr(1, 4096)));
	CHECK_EQ(smart_ht_open(w, 1, 6, NULL, &t), SMART_ENOENT);
	CHECK_OK(smart_root_set(w, 1, 6, smart_gaddr(1, 1ull << 40)));
	CHECK_EQ(smart_ht_open(w, 1, 6, NULL, &t), SMART_ENOENT);
	CHECK_EQ(smart_ht_create(w, 1, 6, NULL, &t), SMART_EEXIST);
	smart_ht_config_init(&c);
	c.buckets = 3;
	CHECK_EQ(smart_ht_create(w, 1, 7, &c, &t), SMART_EINVAL);
	smart_ht_config_init(&c);
	c.depth = SMART_HT_DEPTH_MAX + 1;
	CHECK_EQ(smart_ht_create(w, 1, 7, &c, &t), SMART_EINVAL);
	smart_ht_config_init(&c);
	c.blades = &bad;
	c.nblades = 1;
	CHECK(smart_ht_create(w, 1, 7, &c, &t) != 0); /* unknown blade */
	CHECK_EQ(smart_ht_open(w, 1, 7, NULL, &t), SMART_ENOENT);
	CHECK_OK(smart_ht_create(w, 1, 7, NULL, &t));
	smart_ht_close(t, NULL);
	CHECK_EQ(smart_ht_create(w, 1, 7, NULL, &t), SMART_EEXIST);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* Syncs (round trips) one search of a present key costs. */
static uint64_t search_syncs(const char *opts)
{
	const char *kv[] = { "techniques", opts, NULL };
	smart_stats_t a, b;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	char v[16];
	size_t n;

	struct smart_ht_config c;

	fixture_start(&f, BLADE_SIZE, 1, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	/* round trips of the lookup itself: no reclamation announcements */
	smart_ht_config_init(&c);
	c.depth = 0;
	c.buckets = 16;
	c.reclaim = 0;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	CHECK_OK(smart_ht_insert(t, w, "spec", 4, "value", 5));
	CHECK_OK(smart_ht_search(t, w, "spec", 4, v, sizeof(v), &n));
	CHECK_OK(smart_stats_snapshot(f.ctx, &a));
	CHECK_OK(smart_ht_search(t, w, "spec", 4, v, sizeof(v), &n));
	CHECK_OK(smart_stats_snapshot(f.ctx, &b));
	CHECK(n == 5 && !memcmp(v, "value", 5));
	/* a stale speculation (after an update) still reads right */
	CHECK_OK(smart_ht_update(t, w, "spec", 4, "other", 5));
	CHECK_OK(smart_ht_search(t, w, "spec", 4, v, sizeof(v), &n));
	CHECK(n == 5 && !memcmp(v, "other", 5));
	CHECK_OK(smart_ht_delete(t, w, "spec", 4));
	CHECK_EQ(smart_ht_search(t, w, "spec", 4, v, sizeof(v), &n),
		 SMART_ENOENT);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
	return b.c[SMART_STAT_SYNCS] - a.c[SMART_STAT_SYNCS];
}

/* Round trips per operation (docs/ht.md §4), in a task as applications
 * run them, reclamation on, SpecLookup off: averages over many keys, so
 * fingerprint collisions count too. */
#define RT_KEYS 2000
struct rt_run {
	smart_ht_t *t;
	double search, miss, insert, update, del;
	uint64_t alloc; /* the allocator's, all phases */
};

/* The protocol's round trips per op since r0 (the allocator's amortised
 * refills and spills counted apart, in r->alloc). */
static double rt_avg_(struct rt_run *r, smart_worker_t *w, uint64_t r0,
		      uint64_t a0, int n)
{
	uint64_t a, rt = smart_task_round_trips(w, &a);

	r->alloc += a - a0;
	return (double)(rt - r0 - (a - a0)) / n;
}
#define rt_avg(w, r0, n) rt_avg_(r, w, r0, a0, n)
#define RT_MARK()	 (r0 = smart_task_round_trips(w, &a0))

static void rt_task(smart_worker_t *w, void *arg)
{
	struct rt_run *r = arg;
	char k[16], v[32];
	uint64_t r0, a0;
	size_t n;
	int i;

	/* once per worker and blade: claiming an announcement word */
	CHECK_EQ(smart_ht_search(r->t, w, "warm", 4, v, sizeof(v), &n),
		 SMART_ENOENT);
	RT_MARK();
	for (i = 0; i < RT_KEYS; i++) {
		snprintf(k, sizeof(k), "rt%06d", i);
		CHECK_OK(smart_ht_insert(r->t, w, k, strlen(k), k, strlen(k)));
	}
	r->insert = rt_avg(w, r0, RT_KEYS);
	RT_MARK();
	for (i = 0; i < RT_KEYS; i++) {
		snprintf(k, sizeof(k), "rt%06d", i);
		CHECK_OK(smart_ht_search(r->t, w, k, strlen(k), v, sizeof(v),
					 &n));
		CHECK(n == strlen(k) && !memcmp(v, k, n));
	}
	r->search = rt_avg(w, r0, RT_KEYS);
	RT_MARK();
	for (i = 0; i < RT_KEYS; i++) {
		snprintf(k, sizeof(k), "no%06d", i);
		CHECK_EQ(smart_ht_search(r->t, w, k, strlen(k), v, sizeof(v),
					 &n),
			 SMART_ENOENT);
	}
	r->miss = rt_avg(w, r0, RT_KEYS);
	RT_MARK();
	for (i = 0; i < RT_KEYS; i++) {
		snprintf(k, sizeof(k), "rt%06d", i);
		CHECK_OK(smart_ht_update(r->t, w, k, strlen(k), "u", 1));
	}
	r->update = rt_avg(w, r0, RT_KEYS);
	RT_MARK();
	for (i = 0; i < RT_KEYS; i++) {
		snprintf(k, sizeof(k), "rt%06d", i);
		CHECK_OK(smart_ht_delete(r->t, w, k, strlen(k)));
	}
	r->del = rt_avg(w, r0, RT_KEYS);
}

static void test_round_trips(void)
{
	const char *kv[] = { "techniques",
			     "ThrdAwareAlloc,WorkReqThrot,"
			     "ConflictAvoid",
			     NULL };
	struct rt_run r = { 0 };
	struct fixture f;
	smart_worker_t *w;

	fixture_start(&f, BLADE_SIZE, 1, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	/* big enough not to split: splits are not the common case */
	r.t = make_table(w, 1, 0, 4, 1024);
	CHECK_OK(smart_task_spawn(w, rt_task, &r));
	CHECK_OK(smart_worker_run(w));
	printf("round trips per op: search %.3f, miss %.3f, insert %.3f, "
	       "update %.3f, delete %.3f (and the allocator's %llu over "
	       "%d ops)\n",
	       r.search, r.miss, r.insert, r.update, r.del,
	       (unsigned long long)r.alloc, 5 * RT_KEYS);
	/* exact: a fingerprint collision costs a miss its block read, and
	 * nothing else */
	CHECK(r.search == 2.0);
	CHECK(r.miss >= 1.0 && r.miss <= 1.01);
	CHECK(r.insert == 3.0);
	CHECK(r.update == 3.0);
	CHECK(r.del == 3.0);
	smart_ht_close(r.t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_spec(void)
{
	CHECK_EQ(search_syncs("None"), 2);
	CHECK_EQ(search_syncs("SpecLookup"), 1);
}

static void test_shards(void)
{
	const uint16_t blades[2] = { 1, 2 };
	struct smart_ht_config c;
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w;
	smart_ht_t *t, *t2;
	uint64_t before, after;
	unsigned i, v;
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&c);
	c.blades = blades;
	c.nblades = 2;
	c.buckets = 128;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	CHECK_EQ(smart_ht_shards(t), 2);
	CHECK_OK(smart_root_get(w, 2, 0, &before));
	for (i = 0; i < 1000; i++)
		CHECK_OK(smart_ht_insert(t, w, &i, sizeof(i), &i, sizeof(i)));
	CHECK_OK(smart_ht_open(w, 1, 0, NULL, &t2));
	CHECK_EQ(smart_ht_shards(t2), 2);
	for (i = 0; i < 1000; i++) {
		CHECK_OK(smart_ht_search(t2, w, &i, sizeof(i), &v, sizeof(v),
					 &n));
		CHECK_EQ(v, i);
	}
	CHECK_OK(smart_root_get(w, 2, 0, &after));
	CHECK_U64_EQ(before, after); /* only the home root is used */
	smart_ht_close(t2, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(f.ctx));
	smart_blade_destroy(b2);
	smart_blade_destroy(f.blade);
}

/* ---- concurrency -------------------------------------------------------- */

#define CC_THREADS 2
#define CC_TASKS   8
#define CC_KEYS	   12
#define CC_OPS	   1500
#define CC_WRITERS (CC_THREADS * CC_TASKS)
#define DUP_KEYS   200

/* A value names its writer and a per-writer sequence number. */
struct cc_val {
	uint32_t key, writer, seq, check;
};

struct cc_task {
	smart_ht_t *t;
	unsigned id;
	uint64_t ins_ok[CC_KEYS], del_ok[CC_KEYS];
	/* the writer's last successful mutation of each key: 0 none,
	 * seq of a write, or UINT32_MAX for a delete */
	uint32_t last[CC_KEYS];
	uint8_t won[DUP_KEYS];
};

struct cc_thread {
	smart_ctx_t *ctx;
	struct cc_task task[CC_TASKS];
	void (*fn)(smart_worker_t *, void *);
};

static void cc_check_val(const struct cc_val *v, size_t n, unsigned key)
{
	CHECK_EQ(n, sizeof(*v));
	CHECK_EQ(v->key, key);
	CHECK_LT(v->writer, CC_WRITERS);
	CHECK_EQ(v->check, v->key * 7 + v->writer * 13 + v->seq);
}

static void cc_task_fn(smart_worker_t *w, void *p)
{
	struct cc_task *a = p;
	smart_rng_t r;
	struct cc_val v, got;
	uint32_t seq = 0;
	unsigned i;
	size_t n;
	int rc;

	smart_rng_seed(&r, 1000 + a->id);
	for (i = 0; i < CC_OPS; i++) {
		unsigned k = (unsigned)smart_rng_below(&r, CC_KEYS);
		unsigned op = (unsigned)smart_rng_below(&r, 4);

		v = (struct cc_val){ k, a->id, ++seq, 0 };
		v.check = v.key * 7 + v.writer * 13 + v.seq;
		if (op == 0) {
			rc = smart_ht_insert(a->t, w, &k, sizeof(k), &v,
					     sizeof(v));
			CHECK(rc == 0 || rc == SMART_EEXIST);
			if (!rc)
				a->ins_ok[k]++, a->last[k] = seq;
		} else if (op == 1) {
			rc = smart_ht_update(a->t, w, &k, sizeof(k), &v,
					     sizeof(v));
			CHECK(rc == 0 || rc == SMART_ENOENT);
			if (!rc)
				a->last[k] = seq;
		} else if (op == 2) {
			rc = smart_ht_delete(a->t, w, &k, sizeof(k));
			CHECK(rc == 0 || rc == SMART_ENOENT);
			if (!rc)
				a->del_ok[k]++, a->last[k] = UINT32_MAX;
		} else {
			rc = smart_ht_search(a->t, w, &k, sizeof(k), &got,
					     sizeof(got), &n);
			CHECK(rc == 0 || rc == SMART_ENOENT);
			if (!rc)
				cc_check_val(&got, n, k);
		}
	}
}

static void *cc_thread_fn(void *p)
{
	struct cc_thread *th = p;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->ctx, &w));
	for (i = 0; i < CC_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, th->fn, &th->task[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void cc_run(smart_ctx_t *ctx, smart_ht_t *t, struct cc_thread *th,
		   void (*fn)(smart_worker_t *, void *))
{
	pthread_t tid[CC_THREADS];
	int i, j;

	for (i = 0; i < CC_THREADS; i++) {
		memset(&th[i], 0, sizeof(th[i]));
		th[i].ctx = ctx;
		th[i].fn = fn;
		for (j = 0; j < CC_TASKS; j++) {
			th[i].task[j].t = t;
			th[i].task[j].id = (unsigned)(i * CC_TASKS + j);
		}
		CHECK(!pthread_create(&tid[i], NULL, cc_thread_fn, &th[i]));
	}
	for (i = 0; i < CC_THREADS; i++)
		pthread_join(tid[i], NULL);
}

static void cc_check_key(smart_ht_t *t, smart_worker_t *w, struct cc_thread *th,
			 unsigned k)
{
	int64_t ins = 0, del = 0;
	struct cc_val v;
	int i, j, rc, some_del = 0;
	size_t n;

	for (i = 0; i < CC_THREADS; i++)
		for (j = 0; j < CC_TASKS; j++) {
			ins += (int64_t)th[i].task[j].ins_ok[k];
			del += (int64_t)th[i].task[j].del_ok[k];
			some_del |= th[i].task[j].last[k] == UINT32_MAX;
		}
	rc = smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v), &n);
	CHECK(rc == 0 || rc == SMART_ENOENT);
	/* successful inserts and deletes of a key alternate */
	CHECK_EQ(ins - del, rc == 0 ? 1 : 0);
	if (rc) {
		CHECK(some_del); /* someone's last word was a delete */
		return;
	}
	cc_check_val(&v, n, k);
	/* the survivor is its writer's last successful mutation */
	CHECK_EQ(th[v.writer / CC_TASKS].task[v.writer % CC_TASKS].last[k],
		 v.seq);
}

static void test_concurrent(void)
{
	static struct cc_thread th[CC_THREADS];
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	unsigned k;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 1, 0, 1, 16);
	cc_run(f.ctx, t, th, cc_task_fn);
	for (k = 0; k < CC_KEYS; k++)
		cc_check_key(t, w, th, k);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void dup_task_fn(smart_worker_t *w, void *p)
{
	struct cc_task *a = p;
	unsigned k;
	int rc;

	for (k = 0; k < DUP_KEYS; k++) {
		struct cc_val v = { k, a->id, 1, k * 7 + a->id * 13 + 1 };

		rc = smart_ht_insert(a->t, w, &k, sizeof(k), &v, sizeof(v));
		CHECK_MSG(rc == 0 || rc == SMART_EEXIST, "insert: %s",
			  smart_status_name(rc));
		if (!rc)
			a->won[k]++;
		/* let the others catch up with the same key */
		smart_task_yield(w);
	}
}

static void test_dup_insert(void)
{
	static struct cc_thread th[CC_THREADS];
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;
	struct cc_val v;
	unsigned k, wins, i, j, winner = 0;
	smart_stats_t st;
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = make_table(w, 1, 0, 1, 256);
	cc_run(f.ctx, t, th, dup_task_fn);
	/* the tasks of a worker interleave at every sync, so they do race
	 * for the same slots */
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	printf("dup_insert: %llu CAS failures, %llu retries\n",
	       (unsigned long long)st.c[SMART_STAT_CAS_FAILS],
	       (unsigned long long)st.c[SMART_STAT_RETRIES]);
	CHECK_GT(st.c[SMART_STAT_CAS_FAILS], 0);
	for (k = 0; k < DUP_KEYS; k++) {
		wins = 0;
		for (i = 0; i < CC_THREADS; i++)
			for (j = 0; j < CC_TASKS; j++) {
				unsigned cnt = th[i].task[j].won[k];

				wins += cnt;
				if (cnt)
					winner = th[i].task[j].id;
			}
		CHECK_EQ(wins, 1);
		CHECK_OK(smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v),
					 &n));
		CHECK_EQ(v.writer, winner);
		/* exactly one slot: after one delete the key is gone */
		CHECK_OK(smart_ht_delete(t, w, &k, sizeof(k)));
		CHECK_EQ(smart_ht_search(t, w, &k, sizeof(k), &v, sizeof(v),
					 &n),
			 SMART_ENOENT);
	}
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "basic", test_basic },
		{ "reference", test_reference },
		{ "long", test_long },
		{ "not_found", test_not_found },
		{ "shards", test_shards },
		{ "spec", test_spec },
		{ "round_trips", test_round_trips },
		{ "concurrent", test_concurrent },
		{ "dup_insert", test_dup_insert },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
