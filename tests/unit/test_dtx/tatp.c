/*
 * test_dtx, TATP (stress): smart-bench's workload (bench/workloads/tatp.h,
 * FORD's tables and transactions) on 32 subscribers with a mix heavy in
 * inserts and deletes of call forwardings: the graph, every key present
 * iff its inserts outnumber its deletes, every value whole (its magic
 * over its bytes), the check.
 */
#include "dtx_test.h"

#define TP_SUBS 32

#define TP_KEYS (TP_SUBS * 12) /* cf keys: (s * 4 + type - 1) * 3 + start / 8 */

#define TP_THREADS 2

#define TP_TASKS 8

#define TP_COMMITS 500

#define TP_SEED 0x7a7b0001ull

/* The mix here: call forwardings inserted and deleted often (FORD's 2%
 * each would hardly meet in 8000 transactions on 32 subscribers). */
static const struct wl_type tp_mix[TP_NTYPES] = {
	[TP_GET_SUB] = { NULL, NULL, 25 },  [TP_GET_ACCESS] = { NULL, NULL, 5 },
	[TP_GET_DEST] = { NULL, NULL, 15 }, [TP_UPD_SUB] = { NULL, NULL, 5 },
	[TP_UPD_LOC] = { NULL, NULL, 10 },  [TP_INS_CF] = { NULL, NULL, 20 },
	[TP_DEL_CF] = { NULL, NULL, 20 },
};

struct tp_task {
	struct tp_run *run;
	unsigned id;
	smart_rng_t r, backoff;
	struct wl_txn t;
	struct dsg h;
	int count[TP_KEYS]; /* committed inserts - deletes, per key */
	uint64_t commits, conflicts, failed, by_type[TP_NTYPES];
	uint64_t inserted, deleted;
};

struct tp_run {
	smart_ctx_t *ctx;
	smart_dtx_t *d;
	struct tp_cfg cfg;
	struct tp_task task[TP_THREADS][TP_TASKS];
};

/* A committed transaction's call forwardings inserted or deleted. */
static void tp_count(struct tp_task *a, const struct wl_outcome *o)
{
	const struct wl_item *it;
	int i;

	for (i = 0; !o->failed && i < a->t.nitems; i++) {
		it = &a->t.item[i];
		if (it->table != TP_CF ||
		    (it->op != WL_INSERT && it->op != WL_DELETE))
			continue;
		CHECK_MSG(it->key < TP_KEYS, "call forwarding %" PRIu64,
			  it->key);
		a->count[it->key] += it->op == WL_INSERT ? 1 : -1;
		a->inserted += it->op == WL_INSERT;
		a->deleted += it->op == WL_DELETE;
	}
}

/* One transaction, retried until it commits; its values checked whole. */
static void tp_one(struct tp_task *a, smart_worker_t *w, int type,
		   const struct wl_params *p, struct wl_outcome *o)
{
	unsigned tries;
	int rc;

	for (tries = 0;; tries++) {
		CHECK_MSG(tries < SB_RETRIES,
			  "task %u: %u aborts in a row of "
			  "%s (subscriber %" PRIu64 ")",
			  a->id, tries, tp_types[type].label, p->v[0]);
		memset(o, 0, sizeof(*o));
		rc = tp_attempt(&a->t, type, p, o);
		wl_whole(&a->t, tp_types[type].label);
		if (rc != SMART_EABORT)
			break;
		a->conflicts++;
		backoff(w, &a->backoff, tries);
	}
	CHECK_MSG(rc == 0, "task %u: %s: %s", a->id, tp_types[type].label,
		  smart_status_name(rc));
	CHECK_MSG(!o->full, "task %u: call forwarding buckets full", a->id);
}

static void tp_task_fn(smart_worker_t *w, void *arg)
{
	struct tp_task *a = arg;
	struct wl_outcome o;
	struct wl_params p;
	int type;

	CHECK_OK(smart_dtx_txn_new(a->run->d, w, &a->t.x));
	a->t.w = w;
	while (a->commits < TP_COMMITS) {
		type = wl_type_pick(tp_mix, TP_NTYPES, &a->r);
		tp_gen(&a->run->cfg, &a->r, type, &p);
		tp_one(a, w, type, &p, &o);
		record(&a->h, a->t.x, a->t.nitems,
		       (uint64_t)a->id << 48 | (uint64_t)type << 40 |
			       a->commits);
		tp_count(a, &o);
		a->failed += (uint64_t)o.failed;
		a->commits++;
		a->by_type[type]++;
	}
	CHECK_OK(smart_dtx_txn_free(a->t.x, w));
}

static void *tp_thread(void *arg)
{
	struct tp_task *t = arg;
	smart_worker_t *w;
	unsigned i;

	CHECK_OK(smart_worker_create(t[0].run->ctx, &w));
	for (i = 0; i < TP_TASKS; i++)
		CHECK_OK(smart_task_spawn(w, tp_task_fn, &t[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

struct tp_scan {
	int expect[TP_KEYS]; /* 1: must be present */
	unsigned char seen[TP_KEYS];
	unsigned n;
	uint32_t table;
};

static int tp_cf_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct tp_scan *s = arg;

	CHECK_MSG(key < TP_KEYS, "call forwarding key %" PRIu64, key);
	CHECK_MSG(tp_verify(TP_CF, key, val, len),
		  "call forwarding %" PRIu64 ": a bad value (%zu bytes)", key,
		  len);
	CHECK_MSG(!s->seen[key], "call forwarding %" PRIu64 " twice", key);
	CHECK_MSG(s->expect[key] == 1,
		  "call forwarding %" PRIu64 " present,"
		  " its inserts - deletes %d",
		  key, s->expect[key]);
	s->seen[key] = 1;
	s->n++;
	return 0;
}

/* The tables no transaction inserts into or deletes from: every record
 * whole, a subscriber's key one of the loaded. */
static int tp_rec_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct tp_scan *s = arg;

	CHECK_MSG(s->table != TP_SUB || key < TP_SUBS, "subscriber %" PRIu64,
		  key);
	CHECK_MSG(tp_verify(s->table, key, val, len),
		  "%s %" PRIu64 ": a bad "
		  "value (%zu bytes)",
		  tp_table_names[s->table], key, len);
	s->n++;
	return 0;
}

/* The load: every subscriber and what belongs to it, one transaction
 * each (up to 22 inserts, several into one bucket: test_insert_zero),
 * recorded in h; the call forwardings loaded expected present. */
static void tp_load(struct world *wd, const struct tp_cfg *c, struct dsg *h,
		    struct tp_scan *sc, uint64_t *records)
{
	struct wl_rec r[WL_UNIT_RECS];
	smart_dtx_txn_t *x;
	uint64_t u;
	int i, n;

	CHECK_OK(smart_dtx_txn_new(wd->d, wd->w, &x));
	for (u = 0; u < c->subscribers; u++) {
		n = tp_unit(c, u, r);
		load_unit(x, wd->w, r, n, h, UINT64_C(0xffff) << 48 | u);
		for (i = 0; i < n; i++) {
			records[r[i].table]++;
			if (r[i].table != TP_CF)
				continue;
			CHECK(r[i].key < TP_KEYS);
			sc->expect[r[i].key] = 1;
		}
	}
	CHECK_OK(smart_dtx_txn_free(x, wd->w));
}

/* Each key: committed inserts - deletes is 0 or 1, and it is present
 * exactly when 1; the other tables as loaded, every record whole. */
static void tp_final(struct world *wd, struct tp_scan *sc,
		     const uint64_t *records)
{
	unsigned k, present = 0;

	for (k = 0; k < TP_KEYS; k++) {
		CHECK_MSG(sc->expect[k] == 0 || sc->expect[k] == 1,
			  "call forwarding %u: inserts - deletes = %d", k,
			  sc->expect[k]);
		present += sc->expect[k] == 1;
	}
	sc->n = 0;
	CHECK_OK(smart_dtx_scan(wd->d, wd->w, TP_CF, tp_cf_fn, sc));
	CHECK_EQ(sc->n, present);
	for (sc->table = 0; sc->table < TP_CF; sc->table++) {
		sc->n = 0;
		CHECK_OK(
			smart_dtx_scan(wd->d, wd->w, sc->table, tp_rec_fn, sc));
		CHECK_EQ(sc->n, records[sc->table]);
	}
	CHECK_EQ(records[TP_SUB], TP_SUBS);
}

void test_tatp(void)
{
	struct smart_dtx_table t[TP_NTABLES];
	uint64_t sizes[TP_NTABLES], records[TP_NTABLES] = { 0 };
	struct tp_run *run = calloc(1, sizeof(*run));
	struct tp_scan *sc = calloc(1, sizeof(*sc));
	struct smart_dtx_config c;
	struct smart_dtx_stats st;
	struct dsg_report rep;
	struct sb_hook hook = { 0, 0 };
	pthread_t tid[TP_THREADS];
	struct world wd;
	struct dsg all;
	uint64_t by_type[TP_NTYPES] = { 0 }, total = 0, failed = 0, bad;
	uint64_t inserted = 0, deleted = 0;
	unsigned i, j, k;
	double t0 = test_now_ms();

	CHECK(run && sc);
	world_start(&wd, NULL);
	tp_cfg_init(&run->cfg);
	run->cfg.subscribers = TP_SUBS;
	run->cfg.seed = TP_SEED;
	CHECK_OK(tp_prepare(&run->cfg));
	tp_tables(&run->cfg, t, sizes);
	t[TP_CF].buckets = 256; /* room for every key, whatever runs */
	cfg_two(&c, t, TP_NTABLES);
	c.max_writes = WL_UNIT_RECS; /* a subscriber's load */
	CHECK_OK(smart_dtx_create(wd.w, 1, "tatp", &c, &wd.d));
	dsg_init(&all);
	tp_load(&wd, &run->cfg, &all, sc, records);
	run->ctx = wd.f.ctx;
	run->d = wd.d;
	for (i = 0; i < TP_THREADS; i++)
		for (j = 0; j < TP_TASKS; j++) {
			struct tp_task *a = &run->task[i][j];

			a->run = run;
			a->id = i * TP_TASKS + j;
			smart_rng_seed(&a->r, TP_SEED + a->id);
			smart_rng_seed(&a->backoff, ~(TP_SEED + a->id));
			dsg_init(&a->h);
		}
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, sb_hook_fn, &hook));
	for (i = 0; i < TP_THREADS; i++)
		CHECK(!pthread_create(&tid[i], NULL, tp_thread, run->task[i]));
	for (i = 0; i < TP_THREADS; i++)
		pthread_join(tid[i], NULL);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	for (i = 0; i < TP_THREADS; i++)
		for (j = 0; j < TP_TASKS; j++) {
			struct tp_task *a = &run->task[i][j];

			dsg_append(&all, &a->h);
			dsg_free(&a->h);
			for (k = 0; k < TP_KEYS; k++)
				sc->expect[k] += a->count[k];
			for (k = 0; k < TP_NTYPES; k++)
				by_type[k] += a->by_type[k];
			total += a->commits;
			failed += a->failed;
			inserted += a->inserted;
			deleted += a->deleted;
		}
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("tatp: %" PRIu64 " transactions committed in %.0f ms (", total,
	       test_now_ms() - t0);
	for (i = 0; i < TP_NTYPES; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", tp_types[i].label,
		       by_type[i]);
	printf("), %" PRIu64 " failed (committed without writes), %" PRIu64
	       " call forwardings inserted, %" PRIu64 " deleted\n",
	       failed, inserted, deleted);
	print_stats("tatp", &st);
	CHECK_EQ(dsg_check(&all, DSG_COMPLETE, &rep, stdout), DSG_OK);
	printf("dsg: %zu transactions, %zu items, %zu ww %zu wr %zu rw edges, "
	       "%.1f ms\n",
	       rep.txns, rep.items, rep.edges[DSG_WW], rep.edges[DSG_WR],
	       rep.edges[DSG_RW], rep.ms);
	tp_final(&wd, sc, records);
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad));
	CHECK_EQ(bad, 0);
	CHECK_GT(inserted, 0);
	CHECK_GT(deleted, 0);
	CHECK_GT(st.aborts, 0);
	dsg_free(&all);
	free(run);
	free(sc);
	world_stop(&wd);
}
