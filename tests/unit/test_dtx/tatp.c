/*
 * test_dtx, a TATP-like run (stress) with inserts and deletes of call
 * forwardings: the graph, every key present iff its inserts outnumber its
 * deletes, magic values whole, the check.
 */
#include "dtx_test.h"

/* ==== TATP-like: subscribers, and call forwardings inserted and deleted === */

enum { SUB = 0, CF = 1 };

#define TP_SUBS		32

#define TP_TYPES	4

#define TP_STARTS	3

#define TP_KEYS		(TP_SUBS * 16)	/* cf keys: s * 16 + type * 4 + start */

#define TP_THREADS	2

#define TP_TASKS	8

#define TP_COMMITS	500

#define TP_SEED		0x7a7b0001ull

#define SUB_MAGIC	0x5ab5c12be7a7d00dull

#define CF_MAGIC	0xcf0f0a2d5eedull

struct sub_val {
	uint64_t magic, s_id, vlr, nvlr;
	uint8_t bits[32];
};

struct cf_val {
	uint64_t magic, key, number, nnumber;
};

static void sub_make(struct sub_val *v, uint64_t s, uint64_t vlr)
{
	memset(v, 0, sizeof(*v));
	v->magic = SUB_MAGIC;
	v->s_id = s;
	v->vlr = vlr;
	v->nvlr = ~vlr;
	memset(v->bits, (int)(s & 0xff), sizeof(v->bits));
}

static void sub_ok(const struct sub_val *v, uint64_t s, size_t len)
{
	CHECK_EQ(len, sizeof(*v));
	CHECK_MSG(v->magic == SUB_MAGIC && v->s_id == s && v->nvlr == ~v->vlr &&
		  v->bits[0] == (uint8_t)s && v->bits[31] == (uint8_t)s,
		  "subscriber %" PRIu64 ": a bad value (magic %#" PRIx64
		  ", id %" PRIu64 ")", s, v->magic, v->s_id);
}

static void cf_make(struct cf_val *v, uint64_t key, uint64_t number)
{
	v->magic = CF_MAGIC;
	v->key = key;
	v->number = number;
	v->nnumber = ~number;
}

static void cf_ok(const struct cf_val *v, uint64_t key, size_t len)
{
	CHECK_EQ(len, sizeof(*v));
	CHECK_MSG(v->magic == CF_MAGIC && v->key == key &&
		  v->nnumber == ~v->number, "call forwarding %" PRIu64
		  ": a bad value (magic %#" PRIx64 ", key %" PRIu64 ")", key,
		  v->magic, v->key);
}

enum tp_type { TP_GET_SUB, TP_GET_DEST, TP_UPDATE_LOC, TP_INSERT_CF,
	       TP_DELETE_CF, TP_NTYPES };

static const char *const tp_name[TP_NTYPES] = {
	"GetSubscriberData", "GetNewDestination", "UpdateLocation",
	"InsertCallForwarding", "DeleteCallForwarding" };

struct tp_task {
	struct tp_run *run;
	unsigned id;
	smart_rng_t r, backoff;
	struct dsg h;
	int count[TP_KEYS];	/* committed inserts - deletes, per key */
	uint64_t commits, conflicts, user_aborts, by_type[TP_NTYPES];
};

struct tp_run {
	smart_ctx_t *ctx;
	smart_dtx_t *d;
	struct tp_task task[TP_THREADS][TP_TASKS];
};

/* One attempt: 0 committed, SMART_EABORT, or 1: a user abort (the key
 * present for an insert, absent for a delete). */
static int tp_run_one(smart_dtx_txn_t *x, smart_worker_t *w,
		      enum tp_type type, uint64_t s, uint64_t key,
		      uint64_t number, int *nitems)
{
	struct sub_val sv;
	struct cf_val cv;
	size_t len;
	int is, ic = -1, rc, st;

	CHECK_OK(smart_dtx_begin(x));
	if (type == TP_UPDATE_LOC)
		is = smart_dtx_read_for_update(x, SUB, s, &sv, sizeof(sv));
	else
		is = smart_dtx_read(x, SUB, s, &sv, sizeof(sv));
	CHECK_EQ(is, 0);
	if (type == TP_GET_DEST)
		ic = smart_dtx_read(x, CF, key, &cv, sizeof(cv));
	else if (type == TP_DELETE_CF)
		ic = smart_dtx_read_for_update(x, CF, key, &cv, sizeof(cv));
	else if (type == TP_INSERT_CF) {
		cf_make(&cv, key, number);
		ic = smart_dtx_insert(x, CF, key, &cv, sizeof(cv));
	}
	*nitems = ic < 0 ? 1 : 2;
	rc = smart_dtx_exec(x, w);
	if (rc)
		return rc;
	CHECK_OK(smart_dtx_status(x, is, &len));
	sub_ok(&sv, s, len);
	if (ic >= 0) {
		st = smart_dtx_status(x, ic, &len);
		if (type == TP_INSERT_CF) {
			CHECK_MSG(st == 0 || st == SMART_EEXIST, "insert: %s",
				  smart_status_name(st));
		} else {
			CHECK_MSG(st == 0 || st == SMART_ENOENT, "%s: %s",
				  tp_name[type], smart_status_name(st));
			if (!st)
				cf_ok(&cv, key, len);
		}
		if (st && type != TP_GET_DEST) {
			CHECK_OK(smart_dtx_abort(x, w));
			return 1;
		}
	}
	if (type == TP_UPDATE_LOC) {
		sub_make(&sv, s, number);
		CHECK_OK(smart_dtx_write(x, is, &sv, sizeof(sv)));
	} else if (type == TP_DELETE_CF) {
		CHECK_OK(smart_dtx_delete(x, ic));
	}
	return smart_dtx_commit(x, w);
}

static void tp_task_fn(smart_worker_t *w, void *arg)
{
	struct tp_task *a = arg;
	smart_dtx_txn_t *x;
	unsigned tries, pct;
	enum tp_type type;
	uint64_t s, key, number;
	int rc, n;

	CHECK_OK(smart_dtx_txn_new(a->run->d, w, &x));
	while (a->commits < TP_COMMITS) {
		pct = (unsigned)smart_rng_below(&a->r, 100);
		type = pct < 30 ? TP_GET_SUB : pct < 45 ? TP_GET_DEST :
		       pct < 60 ? TP_UPDATE_LOC : pct < 80 ? TP_INSERT_CF :
							     TP_DELETE_CF;
		s = 1 + smart_rng_below(&a->r, TP_SUBS);
		key = (s - 1) * 16 + smart_rng_below(&a->r, TP_TYPES) * 4 +
		      smart_rng_below(&a->r, TP_STARTS);
		number = smart_rng_next(&a->r);
		for (tries = 0;; tries++) {
			CHECK_MSG(tries < SB_RETRIES, "task %u: %u aborts in "
				  "a row of %s (subscriber %" PRIu64 ", call "
				  "forwarding %" PRIu64 ")", a->id, tries,
				  tp_name[type], s, key);
			rc = tp_run_one(x, w, type, s, key, number, &n);
			if (rc != SMART_EABORT)
				break;
			a->conflicts++;
			backoff(w, &a->backoff, tries);
		}
		if (rc == 1) {
			a->user_aborts++;
			continue;
		}
		CHECK_MSG(rc == 0, "task %u: %s: %s", a->id, tp_name[type],
			  smart_status_name(rc));
		record(&a->h, x, n, (uint64_t)a->id << 48 |
		       (uint64_t)type << 40 | a->commits);
		if (type == TP_INSERT_CF)
			a->count[key]++;
		else if (type == TP_DELETE_CF)
			a->count[key]--;
		a->commits++;
		a->by_type[type]++;
	}
	CHECK_OK(smart_dtx_txn_free(x, w));
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
	int expect[TP_KEYS];	/* 1: must be present */
	unsigned char seen[TP_KEYS];
	unsigned n;
};

static int tp_cf_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct tp_scan *s = arg;
	struct cf_val v;

	CHECK_MSG(key < TP_KEYS, "call forwarding key %" PRIu64, key);
	CHECK_EQ(len, sizeof(v));
	memcpy(&v, val, sizeof(v));
	cf_ok(&v, key, len);
	CHECK_MSG(!s->seen[key], "call forwarding %" PRIu64 " twice", key);
	CHECK_MSG(s->expect[key] == 1, "call forwarding %" PRIu64 " present,"
		  " its inserts - deletes %d", key, s->expect[key]);
	s->seen[key] = 1;
	s->n++;
	return 0;
}

static int tp_sub_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	unsigned *n = arg;
	struct sub_val v;

	CHECK_MSG(key >= 1 && key <= TP_SUBS, "subscriber %" PRIu64, key);
	memcpy(&v, val, sizeof(v));
	sub_ok(&v, key, len);
	(*n)++;
	return 0;
}

void test_tatp(void)
{
	struct smart_dtx_table t[2] = {
		{ .id = SUB, .value_size = sizeof(struct sub_val),
		  .buckets = 16, .primary = -1 },
		{ .id = CF, .value_size = sizeof(struct cf_val),
		  .buckets = 256, .primary = -1 },
	};
	struct tp_run *run = calloc(1, sizeof(*run));
	struct tp_scan *sc = calloc(1, sizeof(*sc));
	struct smart_dtx_config c;
	struct smart_dtx_stats st;
	struct dsg_report rep;
	struct sb_hook hook = { 0, 0 };
	pthread_t tid[TP_THREADS];
	struct world wd;
	struct dsg all;
	smart_dtx_txn_t *x;
	uint64_t by_type[TP_NTYPES] = { 0 }, total = 0, user_aborts = 0, bad;
	unsigned i, j, k, present = 0, subs = 0;
	double t0 = test_now_ms();

	CHECK(run && sc);
	world_start(&wd, NULL);
	cfg_two(&c, t, 2);
	CHECK_OK(smart_dtx_create(wd.w, 1, "tatp", &c, &wd.d));
	dsg_init(&all);
	/* the load: every subscriber, and the call forwardings of start 0 */
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	for (i = 1; i <= TP_SUBS; i++) {
		struct sub_val sv;
		struct cf_val cv;
		int n = 1;

		sub_make(&sv, i, i);
		CHECK_OK(smart_dtx_begin(x));
		CHECK_EQ(smart_dtx_insert(x, SUB, i, &sv, sizeof(sv)), 0);
		for (k = 0; k < TP_TYPES; k++) {
			uint64_t key = (i - 1) * 16 + k * 4;

			cf_make(&cv, key, key);
			CHECK_EQ(smart_dtx_insert(x, CF, key, &cv, sizeof(cv)),
				 n++);
			sc->expect[key] = 1;
		}
		CHECK_OK(smart_dtx_commit(x, wd.w));
		for (k = 0; k < (unsigned)n; k++)
			CHECK_OK(smart_dtx_status(x, (int)k, NULL));
		record(&all, x, n, UINT64_C(0xffff) << 48 | i);
	}
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
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
		CHECK(!pthread_create(&tid[i], NULL, tp_thread,
				      run->task[i]));
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
			user_aborts += a->user_aborts;
		}
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("tatp: %" PRIu64 " transactions committed in %.0f ms (",
	       total, test_now_ms() - t0);
	for (i = 0; i < TP_NTYPES; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", tp_name[i], by_type[i]);
	printf("), %" PRIu64 " user aborts\n", user_aborts);
	print_stats("tatp", &st);
	CHECK_EQ(dsg_check(&all, DSG_COMPLETE, &rep, stdout), DSG_OK);
	printf("dsg: %zu transactions, %zu items, %zu ww %zu wr %zu rw edges, "
	       "%.1f ms\n", rep.txns, rep.items, rep.edges[DSG_WW],
	       rep.edges[DSG_WR], rep.edges[DSG_RW], rep.ms);
	/* each key: committed inserts - deletes is 0 or 1, and it is
	 * present exactly when 1 */
	for (k = 0; k < TP_KEYS; k++) {
		CHECK_MSG(sc->expect[k] == 0 || sc->expect[k] == 1,
			  "call forwarding %u: inserts - deletes = %d", k,
			  sc->expect[k]);
		present += sc->expect[k] == 1;
	}
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, CF, tp_cf_fn, sc));
	CHECK_EQ(sc->n, present);
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, SUB, tp_sub_fn, &subs));
	CHECK_EQ(subs, TP_SUBS);
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad));
	CHECK_EQ(bad, 0);
	CHECK_GT(by_type[TP_INSERT_CF], 0);
	CHECK_GT(by_type[TP_DELETE_CF], 0);
	CHECK_GT(st.aborts, 0);
	dsg_free(&all);
	free(run);
	free(sc);
	world_stop(&wd);
}
