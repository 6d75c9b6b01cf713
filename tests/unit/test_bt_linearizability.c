/*
 * Smart-BT point operations checked for linearizability while leaves and
 * internal nodes split (tests/harness/linearizability.h, docs/design.md §10.5).
 *
 * Two threads, each with its own tree object (so each has its own index
 * and speculative caches, made stale by the other's writes), six tasks
 * each: every task mixes inserts, updates, upserts, deletes and searches
 * on a few hot keys (the recorded history) with inserts of fresh cold
 * keys, which split the small nodes (512 bytes, 14 entries a leaf) over
 * and over beside the hot keys; the cold keys sort after the hot ones, so
 * that the hot keys' leaf has a right neighbour to take in whenever its
 * deletes empty it (merges, nodes freed through the epochs).  Every op is stamped before and after;
 * values are unique 8-byte words.  The run is repeated on the
 * adversarial shm transport (pauses and torn reads).  Besides the
 * verdict, the paths the protocol exists for must have been taken:
 * splits, hand-overs, speculative hits and misses, and (adversarial) torn
 * reads caught.
 *
 * Seeds are fixed: a failure reproduces with the same seed.
 */
/* the heavy workloads: ctest label stress (tests/harness/test.h) */
#define TEST_STRESS_CASES "plain", "adversarial", "churn", "churn_adversarial"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/linearizability.h"
#include "harness/test.h"
#include "smart/bt.h"
#include "smart/smart.h"

#define L_THREADS 2
#define L_TASKS	  6
#define L_OPS	  1500
#define L_HOT	  12   /* recorded keys */
#define L_CHURN	  2000 /* ... in the churn cases */
/* events a task records: its ops, and in the churn cases its share of
 * the final deletes */
#define L_EV	  (L_OPS + L_CHURN / (L_THREADS * L_TASKS) + 1)
#define L_SEED	  0x5eedb7u

struct l_task {
	smart_bt_t *t;
	int thread, task;
	unsigned keys; /* recorded keys: hot ones, or a churn */
	int cold;      /* interleave cold inserts */
	struct lin_event ev[L_EV];
	size_t n;
	unsigned ncold; /* cold keys this task inserted */
};

struct l_thread {
	struct fixture *f;
	smart_bt_t *t;
	struct l_task task[L_TASKS];
};

static size_t hot_key(char *k, uint64_t i)
{
	return (size_t)snprintf(k, 16, "h%04u", (unsigned)i);
}

static int l_res(int rc)
{
	return rc == 0		  ? LIN_R_OK :
	       rc == SMART_ENOENT ? LIN_R_ENOENT :
	       rc == SMART_EEXIST ? LIN_R_EEXIST :
				    -1;
}

/* One recorded op on a hot key; 0, or the error that keeps it out. */
static int l_call(struct l_task *a, smart_worker_t *w, struct lin_event *e)
{
	char k[16];
	size_t kl = hot_key(k, e->key), n = 0;
	uint64_t v = 0;
	int rc;

	switch (e->op) {
	case LIN_INSERT:
		rc = smart_bt_insert(a->t, w, k, kl, &e->arg, 8);
		break;
	case LIN_UPDATE:
		rc = smart_bt_update(a->t, w, k, kl, &e->arg, 8);
		break;
	case LIN_UPSERT:
		rc = smart_bt_upsert(a->t, w, k, kl, &e->arg, 8);
		break;
	case LIN_DELETE:
		rc = smart_bt_delete(a->t, w, k, kl);
		break;
	default:
		rc = smart_bt_search(a->t, w, k, kl, &v, 8, &n);
		CHECK_MSG(rc || n == 8, "search %s: %zu bytes", k, n);
		e->val = v;
		break;
	}
	return rc;
}

/* Run event e (key, op, arg set) and record it, unless it gave up. */
static void l_record(struct l_task *a, smart_worker_t *w, struct lin_event *e)
{
	int rc, res;

	e->call = smart_now_ns();
	rc = l_call(a, w, e);
	e->ret = smart_now_ns();
	if (rc == SMART_ERETRY)
		return; /* gave up, no effect: not recorded */
	res = l_res(rc);
	CHECK_MSG(res >= 0, "%s: %s", lin_op_name(e->op),
		  smart_status_name(rc));
	e->res = (uint8_t)res;
	a->n++;
}

static void l_task_fn(smart_worker_t *w, void *p)
{
	struct l_task *a = p;
	smart_rng_t r;
	char k[16];
	unsigned i, x;

	smart_rng_seed(&r, L_SEED + (uint64_t)a->thread * 100 + a->task);
	for (i = 0; i < L_OPS; i++) {
		if (a->cold && smart_rng_below(&r, 3) == 0) {
			/* a cold key: splits beside the hot ones */
			snprintf(k, sizeof(k), "i%d%d-%05u", a->thread, a->task,
				 a->ncold++);
			CHECK_OK(smart_bt_insert(a->t, w, k, strlen(k), k, 8));
		}
		struct lin_event *e = &a->ev[a->n];

		memset(e, 0, sizeof(*e));
		x = (unsigned)smart_rng_below(&r, 10);
		if (a->cold) {
			e->key = smart_rng_below(&r, a->keys);
			e->op = x < 2 ? LIN_INSERT :
				x < 4 ? LIN_UPDATE :
				x < 5 ? LIN_UPSERT :
				x < 7 ? LIN_DELETE :
					LIN_SEARCH;
		} else {
			/* a window of 64 keys sweeping the key space: its
			 * front half mostly inserted, its back half mostly
			 * deleted, so leaves fill and split ahead of it and
			 * empty behind it, however the tasks interleave */
			uint64_t c = (uint64_t)i * (a->keys - 64) / L_OPS;

			e->key = c + smart_rng_below(&r, 64);
			if (e->key < c + 32)
				e->op = x < 6 ? LIN_DELETE :
					x < 8 ? LIN_SEARCH :
						LIN_UPDATE;
			else
				e->op = x < 4 ? LIN_INSERT :
					x < 6 ? LIN_UPSERT :
					x < 8 ? LIN_SEARCH :
						LIN_UPDATE;
		}
		e->arg = (uint64_t)(a->thread + 1) << 48 |
			 (uint64_t)(a->task + 1) << 32 | (i + 1);
		l_record(a, w, e);
	}
	if (a->cold)
		return;
	/* the churn ends by deleting every key (each task its stripe,
	 * beside the others still sweeping): every leaf but the last
	 * empties and takes its neighbour in */
	for (i = (unsigned)(a->thread * L_TASKS + a->task); i < a->keys;
	     i += L_THREADS * L_TASKS) {
		struct lin_event *e = &a->ev[a->n];

		memset(e, 0, sizeof(*e));
		e->key = i;
		e->op = LIN_DELETE;
		l_record(a, w, e);
	}
}

static void *l_thread_fn(void *p)
{
	struct l_thread *th = p;
	smart_worker_t *w;
	int i;

	CHECK_OK(smart_worker_create(th->f->ctx, &w));
	for (i = 0; i < L_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, l_task_fn, &th->task[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void add_stats(struct smart_bt_stats *sum, smart_bt_t *t)
{
	struct smart_bt_stats s;

	CHECK_OK(smart_bt_stats(t, NULL, &s));
	sum->leaf_splits += s.leaf_splits;
	sum->inner_splits += s.inner_splits;
	sum->crc_retries += s.crc_retries;
	sum->handovers += s.handovers;
	sum->move_rights += s.move_rights;
	sum->merges += s.merges;
	sum->merge_skips += s.merge_skips;
}

/* keys recorded keys; cold: with the cold inserts. */
static void run(const char *adv, unsigned keys, int cold)
{
	static struct l_thread th[L_THREADS];
	const char *kv[] = { "shm_adversarial", adv, NULL };
	struct smart_bt_config c;
	struct smart_bt_stats sum;
	smart_stats_t cs;
	uint64_t spec_hits, spec_misses;
	struct lin_report rep;
	struct lin_event *all;
	pthread_t tid[L_THREADS];
	struct fixture f;
	smart_worker_t *w;
	smart_bt_t *t0;
	size_t n = 0;
	int i, j, v;

	fixture_start(&f, 64u << 20, 1, adv ? kv : NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_bt_config_init(&c);
	c.node_size = 512;
	c.key_max = 12;
	c.val_max = 8;
	c.locks = 1024;
	CHECK_OK(smart_bt_create(w, 1, 5, &c, &t0));
	memset(th, 0, sizeof(th));
	for (i = 0; i < L_THREADS; i++) {
		th[i].f = &f;
		CHECK_OK(smart_bt_open(w, 1, 5, NULL, &th[i].t));
		for (j = 0; j < L_TASKS; j++) {
			th[i].task[j].t = th[i].t;
			th[i].task[j].thread = i;
			th[i].task[j].task = j;
			th[i].task[j].keys = keys;
			th[i].task[j].cold = cold;
		}
		CHECK(!pthread_create(&tid[i], NULL, l_thread_fn, &th[i]));
	}
	for (i = 0; i < L_THREADS; i++)
		CHECK(!pthread_join(tid[i], NULL));
	all = calloc((size_t)L_THREADS * L_TASKS * L_EV, sizeof(*all));
	CHECK(all != NULL);
	memset(&sum, 0, sizeof(sum));
	for (i = 0; i < L_THREADS; i++) {
		for (j = 0; j < L_TASKS; j++) {
			memcpy(all + n, th[i].task[j].ev,
			       th[i].task[j].n * sizeof(*all));
			n += th[i].task[j].n;
		}
		add_stats(&sum, th[i].t);
	}
	CHECK_OK(smart_stats_snapshot(f.ctx, &cs));
	spec_hits = cs.c[SMART_STAT_SPEC_HITS];
	spec_misses = cs.c[SMART_STAT_SPEC_MISSES];
	v = lin_check(all, n, &rep, stderr);
	printf("%s: %zu recorded ops on %u keys%s: %llu "
	       "leaf and %llu inner splits, %llu hand-overs, speculative "
	       "%llu hits / %llu misses, %llu moves right, %llu torn reads, "
	       "%llu merges (%llu skipped); verdict %d (%zu segments, "
	       "longest %zu)\n",
	       adv ? "adversarial" : "plain", n, keys,
	       cold ? " beside cold inserts" : " (a sweeping window)",
	       (unsigned long long)sum.leaf_splits,
	       (unsigned long long)sum.inner_splits,
	       (unsigned long long)sum.handovers, (unsigned long long)spec_hits,
	       (unsigned long long)spec_misses,
	       (unsigned long long)sum.move_rights,
	       (unsigned long long)sum.crc_retries,
	       (unsigned long long)sum.merges,
	       (unsigned long long)sum.merge_skips, v, rep.segments,
	       rep.max_segment);
	CHECK_MSG(v == LIN_OK, "not linearizable (key %llu)",
		  (unsigned long long)rep.key);
	CHECK_GE(n, (size_t)L_THREADS * L_TASKS * L_OPS * 99 / 100);
	/* the paths this test exists for were taken */
	CHECK_GT(sum.leaf_splits, cold ? 100 : 10);
	if (cold)
		CHECK_GT(sum.inner_splits, 0);
	else
		CHECK_GT(sum.merges, 50);
	CHECK_GT(sum.handovers, 0);
	CHECK_GT(spec_hits, 0);
	CHECK_GT(spec_misses, 0);
	if (adv)
		CHECK_GT(sum.crc_retries, 0);
	free(all);
	for (i = 0; i < L_THREADS; i++)
		smart_bt_close(th[i].t, w);
	smart_bt_close(t0, w);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_plain(void)
{
	run(NULL, L_HOT, 1);
}

static void test_adversarial(void)
{
	run("seed=5,pause_pct=30", L_HOT, 1);
}

/* Churn: a window sweeping 2000 keys, inserting ahead and deleting behind,
 * so that leaves split ahead of it and empty behind it (taking their
 * neighbours in: nodes freed) with every task on the same keys, then every
 * key deleted, under the same checker. */
static void test_churn(void)
{
	run(NULL, L_CHURN, 0);
}

static void test_churn_adversarial(void)
{
	run("seed=6,pause_pct=30", L_CHURN, 0);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "plain", test_plain },
				 { "adversarial", test_adversarial },
				 { "churn", test_churn },
				 { "churn_adversarial",
				   test_churn_adversarial },
				 { 0 } });
}
