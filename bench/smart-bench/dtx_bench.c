/*
 * The driver of smart-bench's transaction benchmarks (smallbank, tatp) on
 * Smart-DTX: the checks of the flags, the blades (without --connect, one
 * embedded blade per copy of a table: replicas + 1), the database
 * (created on the first blade under --name and loaded, or --open'ed), the
 * load (every thread's coroutines insert load units in batches, one
 * transaction per batch), the measured window (threads x coroutines, each
 * coroutine one transaction object and one transaction in flight), the
 * checks and the report (table, JSON, CSV).  The workloads (dtx_bench.h)
 * are tables, records and transactions only.
 *
 * Metering: a transaction is timed from its first attempt to its commit
 * (retries and backoff included); the library's cost of every attempt
 * (smart_dtx_last_cost) is summed per type over committed attempts, and
 * over all attempts next to the task's own round-trip and byte counts
 * (smart_task_round_trips, smart_task_bytes), which must agree with it.
 *
 * Invariants: the load is checked before the window (every record there
 * and right, the backups equal to the primaries, no lock held; SmallBank:
 * the money loaded); --check checks the same at the end, and that the
 * money moved by exactly the deltas of the committed transactions (it
 * assumes this process is the database's only writer).  A database this
 * run created is dropped at the end unless --keep, or the run failed (it
 * stays for a look on --connect'ed blades).  The extra embedded blades
 * outlive the ctx that joined them: destroy closes the environment
 * itself, before them (kit_env_close is idempotent).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtx_bench.h"

/* A record's bytes besides its value (lock, key, version, meta:
 * docs/dtx.md §2), and its log entry's (address, stamp, table, slot). */
#define REC_HEAD  32
#define LOG_ENTRY 32

static int say(const char *what, int rc)
{
	if (rc)
		fprintf(stderr, BENCH_TOOL ": %s: %s\n", what,
			smart_strerror(rc));
	return rc;
}

/* ---- create and check ---- */

void *dtx_bench_create(struct bench_run *r, const struct dtx_workload *wl)
{
	struct dtx_bench *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->run = r;
	b->wl = wl;
	b->coros = 8;
	b->replicas = -1;
	b->batch = 8;
	sb_cfg_init(&b->sb);
	tp_cfg_init(&b->tp);
	return b;
}

void dtx_bench_check(void *m, struct bench_run *r)
{
	struct dtx_bench *b = m;
	int nc = r->com.connect.n;

	if (!b->name)
		b->name = b->wl->name;
	if (b->recover)
		b->open = 1;
	if (!smart_root_name_ok(b->name))
		kit_bad(BENCH_TOOL, "name", b->name, "want 1..%d bytes",
			SMART_ROOT_NAME_MAX);
	if (b->open && !nc)
		kit_bad(BENCH_TOOL, b->recover ? "recover" : "open", NULL,
			"needs --connect (embedded blades start empty)");
	if (nc && b->replicas >= nc)
		kit_bad(BENCH_TOOL, "replicas", NULL,
			"%d backups need %d "
			"blades or more; --connect gives %d",
			b->replicas, b->replicas + 1, nc);
	if (!nc && b->replicas < 0)
		b->replicas = 1; /* the library's default for 2 blades */
	if (b->sb.hot > b->sb.accounts)
		kit_bad(BENCH_TOOL, "hot", NULL,
			"%" PRIu64 " hot accounts of "
			"%" PRIu64,
			b->sb.hot, b->sb.accounts);
	if ((uint64_t)r->com.threads * (uint64_t)b->coros > 65536)
		kit_bad(BENCH_TOOL, "coros", NULL,
			"threads x coros over "
			"65536 (a transaction object, and a log slot, each)");
}

/* ---- sizing and blades ---- */

static uint64_t rec_bytes(uint32_t value_size)
{
	return REC_HEAD + (value_size + 7u) / 8u * 8u;
}

static uint64_t table_bytes(const struct smart_dtx_table *t)
{
	return (uint64_t)t->buckets * SMART_DTX_BUCKET_SLOTS *
	       rec_bytes(t->value_size);
}

/* The most one of n embedded blades holds (docs/dtx.md §2): table id's
 * primary on blade id % n, its backups on the next ones
 * (smart_dtx_table.primary -1), and a log area on every blade (the
 * library's default of 16 writes a log); twice that, and 64 MiB for the
 * blade's own areas: a lazy blade costs only what is touched. */
static uint64_t blade_need(const struct dtx_bench *b, int n)
{
	uint64_t per[DTX_EMBED_MAX] = { 0 }, max = 0, rec_max = 0, logs;
	int i, k;

	for (i = 0; i < b->wl->ntables; i++)
		if (rec_bytes(b->tab[i].value_size) > rec_max)
			rec_max = rec_bytes(b->tab[i].value_size);
	logs = (uint64_t)b->log_slots *
	       (32 + DTX_BATCH_MAX * (LOG_ENTRY + rec_max));

	for (i = 0; i < b->wl->ntables; i++)
		for (k = 0; k <= b->replicas; k++)
			per[(b->tab[i].id + (uint32_t)k) % (uint32_t)n] +=
				table_bytes(&b->tab[i]);
	for (i = 0; i < n; i++)
		max = per[i] > max ? per[i] : max;
	return 2 * (max + logs) + (UINT64_C(64) << 20);
}

/* Log slots: one per transaction object, twice this run's, so that a
 * second client (--open) finds room; the library's default at least. */
static unsigned log_slots(const struct dtx_bench *b)
{
	uint64_t n = 2 * (uint64_t)b->run->com.threads * (uint64_t)b->coros;

	return n < 256 ? 256 : (unsigned)n;
}

/* The address cache (key -> slot, 8 bytes an entry, direct mapped):
 * twice the records loaded, a power of two, the library's 2^20 at
 * least, so that a record's hint is rarely another's. */
static unsigned cache_entries(const struct dtx_bench *b)
{
	uint64_t want = 0, n = 1u << 20;
	int i;

	for (i = 0; i < b->wl->ntables; i++)
		want += 2 * b->records[i];
	while (n < want && n < (1u << 28))
		n <<= 1;
	return (unsigned)n;
}

/* Embedded blade `id` (1..): as the kit's first (bench/kit/env.c), with
 * its secret, on the ctx's transport; joined like it. */
static int blade_add(struct dtx_bench *b, struct bench_run *r, uint16_t id)
{
	struct kit_env *e = &r->env;
	struct smart_blade_config bc;
	smart_blade_t *bl;
	int rc;

	smart_blade_config_init(&bc);
	bc.size = r->com.blade_size;
	bc.listen = "127.0.0.1:0";
	bc.id = id;
	bc.secret = e->secret;
	bc.secret_len = sizeof(e->secret);
	bc.transport = smart_ctx_transport(e->ctx);
	bc.device = r->com.device;
	rc = say("embedded blade", smart_blade_create(&bc, &bl));
	if (rc)
		return rc;
	b->extra[b->nextra++] = bl;
	rc = smart_ctx_connect(e->ctx, smart_blade_address(bl),
			       &e->blade[e->nblades]);
	if (!rc)
		rc = smart_ctx_blade_info(e->ctx, e->blade[e->nblades],
					  &e->info[e->nblades]);
	if (!rc)
		e->nblades++;
	return say("joining an embedded blade", rc);
}

static int blades_add(struct dtx_bench *b, struct bench_run *r)
{
	int i, rc = 0;

	for (i = 1; !r->com.connect.n && !rc && i <= b->replicas; i++)
		rc = blade_add(b, r, (uint16_t)i);
	return rc;
}

/* ---- the database ---- */

static int db_create(struct dtx_bench *b)
{
	struct kit_env *e = &b->run->env;
	struct smart_dtx_config cfg;
	int rc;

	smart_dtx_config_init(&cfg);
	cfg.blades = e->blade;
	cfg.nblades = (unsigned)e->nblades;
	cfg.replicas = b->replicas;
	cfg.tables = b->tab;
	cfg.ntables = (unsigned)b->wl->ntables;
	cfg.log_slots = b->log_slots;
	cfg.cache_entries = cache_entries(b);
	rc = smart_dtx_create(b->main_worker, e->blade[0], b->name, &cfg,
			      &b->d);
	if (rc == SMART_EEXIST)
		fprintf(stderr,
			BENCH_TOOL ": database %s exists: use it "
				   "with --open, or take another --name\n",
			b->name);
	else
		say("creating the database", rc);
	b->created = !rc;
	return rc;
}

static int db_open(struct dtx_bench *b)
{
	struct smart_dtx_config cfg;
	int rc;

	smart_dtx_config_init(&cfg);
	cfg.cache_entries = cache_entries(b);
	rc = smart_dtx_open(b->main_worker, b->run->env.blade[0], b->name, &cfg,
			    &b->d);

	if (rc == SMART_ENOENT)
		fprintf(stderr, BENCH_TOOL ": --open: no database %s on %s\n",
			b->name, b->run->com.connect.v[0]);
	else
		say("opening the database", rc);
	return rc;
}

/* The backups the library gave table 0: what the report says. */
static void replicas_learn(struct dtx_bench *b)
{
	uint16_t primary, backups[SMART_DTX_REPLICAS_MAX];
	unsigned n = 0;
	uint32_t vs;

	if (!smart_dtx_table_info(b->d, 0, &vs, &primary, backups, &n)) {
		if (b->created && b->replicas >= 0 &&
		    n != (unsigned)b->replicas)
			fprintf(stderr,
				BENCH_TOOL ": asked for %d backups, "
					   "the database has %u\n",
				b->replicas, n);
		b->replicas = (int)n;
	}
}

int dtx_bench_setup(void *m, struct bench_run *r)
{
	struct dtx_bench *b = m;
	char kv[32];
	const char *const kvs[] = { kv, NULL };
	int rc;

	b->wl->size(b, b->tab, b->records);
	b->log_slots = log_slots(b);
	if (!r->com.connect.n && !r->com.blade_size)
		r->com.blade_size = blade_need(b, b->replicas + 1);
	/* every coroutine is a task: room for twice --coros over 32 (the
	 * library's default is 64) */
	snprintf(kv, sizeof(kv), "max_tasks=%d",
		 b->coros * 2 > 1024 ? 1024 : b->coros * 2);
	rc = kit_env_open(&r->env, &r->com, b->coros > 32 ? kvs : NULL);
	if (!rc)
		rc = blades_add(b, r);
	if (!rc)
		rc = say("worker",
			 smart_worker_create(r->env.ctx, &b->main_worker));
	if (!rc)
		rc = b->open ? db_open(b) : db_create(b);
	if (!rc)
		replicas_learn(b);
	b->t = rc ? NULL : calloc((size_t)r->com.threads, sizeof(*b->t));
	if (!rc && !b->t)
		rc = say("setup", SMART_ENOMEM);
	return rc;
}

void dtx_bench_destroy(void *m)
{
	struct dtx_bench *b = m;
	int i;

	smart_dtx_close(b->d, NULL);
	smart_worker_destroy(b->main_worker);
	kit_env_close(&b->run->env); /* the ctx, before its blades go */
	for (i = 0; i < b->nextra; i++)
		smart_blade_destroy(b->extra[i]);
	free(b->t);
	free(b);
}

/* ---- the load ---- */

static void count_err(struct dtx_thread *th, int rc)
{
	if (!th->errors++)
		th->first_err = rc;
}

/* One batch of inserts as one transaction; an insert that finds its key
 * (or no room) fails the load. */
static int load_try(struct dtx_task *t)
{
	int item[DTX_BATCH_MAX], i, rc = wl_begin(&t->wt);
	const struct wl_rec *p;

	for (i = 0; !rc && i < t->npend; i++) {
		p = &t->pend[i];
		item[i] = smart_dtx_insert(t->wt.x, p->table, p->key, p->val,
					   p->len);
		if (item[i] < 0 && !t->wt.qerr)
			t->wt.qerr = item[i];
	}
	if (!rc)
		rc = wl_commit(&t->wt);
	for (i = 0; !rc && i < t->npend; i++)
		rc = smart_dtx_status(t->wt.x, item[i], NULL);
	return rc;
}

static int load_flush(struct dtx_task *t)
{
	struct dtx_bench *b = t->b;
	int rc;

	if (!t->npend)
		return 0;
	smart_backoff_begin(t->w);
	while ((rc = load_try(t)) == SMART_EABORT &&
	       !kit_runner_stopping(&b->runner))
		smart_backoff_retry(t->w);
	smart_backoff_end(t->w);
	if (!rc) {
		t->th->loaded += (uint64_t)t->npend;
		atomic_fetch_add_explicit(&b->load.done, (uint64_t)t->npend,
					  memory_order_relaxed);
	}
	t->npend = 0;
	return rc;
}

static void load_task(smart_worker_t *w, void *arg)
{
	struct dtx_task *t = arg;
	struct dtx_bench *b = t->b;
	uint64_t u, units = b->wl->units(b);
	int i, n, rc = 0;

	(void)w;
	while (!rc && !kit_runner_stopping(&b->runner) &&
	       (u = atomic_fetch_add(&b->load_next, 1)) < units) {
		n = b->wl->unit(b, u, t->unit, &t->th->load_money);
		for (i = 0; !rc && i < n; i++) {
			t->pend[t->npend++] = t->unit[i];
			if (t->npend == b->batch)
				rc = load_flush(t);
		}
	}
	if (!rc)
		rc = load_flush(t);
	if (rc)
		count_err(t->th, rc);
}

/* ---- the transactions ---- */

/* One attempt and its cost: the library's (smart_dtx_last_cost), and the
 * task's own counts across it. */
static int attempt_metered(struct dtx_task *t, int type,
			   const struct wl_params *p, struct wl_outcome *o)
{
	struct dtx_thread *th = t->th;
	struct dtx_tstats *s = &th->ty[type];
	uint64_t rt0 = smart_task_round_trips(t->w, NULL);
	uint64_t by0 = smart_task_bytes(t->w);
	struct smart_dtx_cost c;
	int rc;

	memset(o, 0, sizeof(*o));
	rc = t->b->wl->attempt(t, type, p, o);
	th->vfail += t->wt.vfail; /* the workload's bad values */
	t->wt.vfail = 0;
	th->task_rt += smart_task_round_trips(t->w, NULL) - rt0;
	th->task_bytes += smart_task_bytes(t->w) - by0;
	if (smart_dtx_last_cost(t->wt.x, &c))
		memset(&c, 0, sizeof(c));
	s->attempts++;
	th->all_rt += c.round_trips;
	th->all_ops += c.ops;
	th->all_bytes += c.bytes;
	if (rc == SMART_EABORT)
		s->aborts++;
	if (rc)
		return rc;
	s->commits++;
	s->rt += c.round_trips;
	s->ops += c.ops;
	s->bytes += c.bytes;
	s->wbytes += c.write_bytes;
	s->failed += (uint64_t)o->failed;
	s->full += (uint64_t)o->full;
	return 0;
}

/* One transaction: its attempts inside one backoff guard (Smart's
 * conflict avoidance: each abort is a retry of the guarded operation),
 * until one commits, an error, or the window ends. */
static int txn_one(struct dtx_task *t, int type, const struct wl_params *p)
{
	struct dtx_thread *th = t->th;
	struct wl_outcome o;
	uint64_t t0 = smart_cycles(), dt;
	int rc;

	smart_backoff_begin(t->w);
	while ((rc = attempt_metered(t, type, p, &o)) == SMART_EABORT &&
	       !kit_runner_stopping(&t->b->runner))
		smart_backoff_retry(t->w);
	smart_backoff_end(t->w);
	if (rc)
		return rc;
	dt = smart_cycles() - t0;
	smart_hist_add(&th->hist, dt);
	if (dt > th->max_cycles)
		th->max_cycles = dt;
	th->delta += o.delta;
	return 0;
}

/* An abort left standing is the window's end; any other error stops the
 * coroutine (and fails the run). */
static void run_task(smart_worker_t *w, void *arg)
{
	struct dtx_task *t = arg;
	struct dtx_bench *b = t->b;
	struct wl_params p;
	uint64_t n;
	int type, rc;

	(void)w;
	for (n = 0;
	     !kit_runner_stopping(&b->runner) && (!b->txns || n < b->txns);
	     n++) {
		type = wl_type_pick(b->wl->types, b->wl->ntypes, &t->rng);
		b->wl->gen(t, type, &p);
		rc = txn_one(t, type, &p);
		if (rc && rc != SMART_EABORT) {
			count_err(t->th, rc);
			/* a dead blade fails every transaction: the run
			 * stops for every thread, main's window too */
			if (kit_fatal(rc) && !SMART_M_TOOL_NO_FATAL_STOP)
				kit_runner_fail(&b->runner, rc);
			break;
		}
	}
}

/* A run stopped by a fatal error (kit_fatal) reports no result, and says
 * so with how many transactions had committed (kit_runner_stopped). */
static int dtx_stopped(struct dtx_bench *b, int rc)
{
	uint64_t ok = 0;

	for (int i = 0; i < b->run->com.threads; i++)
		ok += b->t[i].hist.count;
	kit_runner_stopped(&b->runner, &b->win, b->run->com.seconds,
			   &b->run->env, BENCH_TOOL, b->wl->name, rc, ok,
			   "transactions had committed");
	return rc;
}

/* ---- threads ---- */

static int spawn_all(struct dtx_bench *b, smart_worker_t *w,
		     struct dtx_task *tasks, smart_task_fn fn)
{
	int i, rc = 0;

	for (i = 0; !rc && i < b->coros; i++)
		rc = smart_task_spawn(w, fn, &tasks[i]);
	return rc ? rc : smart_worker_run(w);
}

/* Each coroutine's transaction object (a log slot of the database). */
static int tasks_init(struct dtx_thread *th, smart_worker_t *w,
		      struct dtx_task *tasks)
{
	struct dtx_bench *b = th->b;
	int i, rc = 0;

	for (i = 0; !rc && i < b->coros; i++) {
		tasks[i].th = th;
		tasks[i].b = b;
		tasks[i].w = w;
		tasks[i].wt.w = w;
		tasks[i].idx = i;
		smart_rng_seed(&tasks[i].rng,
			       kit_task_seed(b->run->com.seed, th->idx, i));
		rc = smart_dtx_txn_new(b->d, w, &tasks[i].wt.x);
	}
	return rc;
}

static void tasks_free(struct dtx_bench *b, smart_worker_t *w,
		       struct dtx_task *tasks)
{
	int i;

	for (i = 0; tasks && i < b->coros; i++)
		if (tasks[i].wt.x)
			(void)smart_dtx_txn_free(tasks[i].wt.x, w);
	free(tasks);
}

static void *thread_main(void *arg)
{
	struct dtx_thread *th = arg;
	struct dtx_bench *b = th->b;
	struct dtx_task *tasks = calloc((size_t)b->coros, sizeof(*tasks));
	smart_worker_t *w = NULL;
	int rc = tasks ? 0 : SMART_ENOMEM;

	if (!rc)
		rc = smart_worker_create(b->run->env.ctx, &w);
	if (!rc)
		rc = tasks_init(th, w, tasks);
	if (!rc && b->created)
		rc = spawn_all(b, w, tasks, load_task);
	th->rc = rc; /* before ready: main reads it then */
	kit_runner_ready(&b->runner);
	if (kit_runner_await(&b->runner, KIT_RUN) == KIT_RUN && !rc)
		rc = spawn_all(b, w, tasks, run_task);
	atomic_fetch_sub(&b->running, 1);
	tasks_free(b, w, tasks);
	smart_worker_destroy(w);
	th->rc = rc;
	return NULL;
}

/* ---- checks ---- */

struct census_arg {
	const struct dtx_bench *b;
	struct dtx_census *c;
	uint32_t table;
};

static int census_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct census_arg *a = arg;

	a->c->records[a->table]++;
	if (!a->b->wl->verify(a->b, a->table, key, val, len, &a->c->money) &&
	    !a->c->bad++) {
		a->c->bad_table = a->table;
		a->c->bad_key = key;
	}
	return 0;
}

/* Every table's records, each verified (and SmallBank's money). */
static void census(struct dtx_bench *b, struct dtx_census *c)
{
	struct census_arg a = { b, c, 0 };

	memset(c, 0, sizeof(*c));
	for (a.table = 0; !c->rc && a.table < (uint32_t)b->wl->ntables;
	     a.table++)
		c->rc = smart_dtx_scan(b->d, b->main_worker, a.table, census_fn,
				       &a);
}

/* What a census and smart_dtx_check found wrong, on stderr; 0 if
 * nothing. */
static int census_say(const struct dtx_bench *b, const char *when,
		      const struct dtx_census *c, int crc, uint64_t cbad)
{
	if (c->rc)
		return say(when, c->rc);
	if (c->bad)
		fprintf(stderr,
			BENCH_TOOL ": %s: %" PRIu64 " records wrong, "
				   "the first %s key %" PRIu64 "\n",
			when, c->bad, b->wl->tables[c->bad_table], c->bad_key);
	if (crc)
		fprintf(stderr,
			BENCH_TOOL
			": %s: smart_dtx_check: %s (%" PRIu64
			" records: a backup unlike its primary, a lock "
			"held or a CRC wrong)\n",
			when, smart_strerror(crc), cbad);
	return c->bad ? SMART_EPROTO : crc;
}

static int64_t sum_load_money(const struct dtx_bench *b)
{
	int64_t m = 0;
	int i;

	for (i = 0; i < b->run->com.threads; i++)
		m += b->t[i].load_money;
	return m;
}

/* After the load: every table holds the records loaded, each right, the
 * money is what was loaded; the copies agree and no lock is held. */
static int check_load(struct dtx_bench *b)
{
	int i, crc, rc;

	census(b, &b->base);
	crc = smart_dtx_check(b->d, b->main_worker, &b->base_bad);
	rc = census_say(b, "load check", &b->base, crc, b->base_bad);
	b->load_money = sum_load_money(b);
	for (i = 0; !rc && i < b->wl->ntables; i++)
		if (b->base.records[i] != b->records[i]) {
			fprintf(stderr,
				BENCH_TOOL ": load check: %s has %" PRIu64
					   " records, %" PRIu64 " loaded\n",
				b->wl->tables[i], b->base.records[i],
				b->records[i]);
			rc = SMART_EPROTO;
		}
	if (!rc && b->wl->money && b->base.money != b->load_money) {
		fprintf(stderr,
			BENCH_TOOL ": load check: money %" PRId64
				   " cents, %" PRId64 " loaded\n",
			b->base.money, b->load_money);
		rc = SMART_EPROTO;
	}
	return b->base_rc = rc;
}

/* An opened database: what dead clients left resolved first, then the
 * census the end's check starts from, and the run's sizes from it. */
static int check_open(struct dtx_bench *b)
{
	int crc = 0,
	    rc = smart_dtx_recover(b->d, b->main_worker, SMART_DTX_ALL_BLADES,
				   &b->recovered);

	b->recovered_ok = !rc;
	if (rc)
		say("smart_dtx_recover", rc);
	census(b, &b->base);
	if (b->check)
		crc = smart_dtx_check(b->d, b->main_worker, &b->base_bad);
	rc = census_say(b, "open check", &b->base, crc, b->base_bad);
	memcpy(b->records, b->base.records, sizeof(b->records));
	if (!rc)
		b->wl->adopt(b, &b->base);
	return b->base_rc = rc;
}

/* --check at the end: every record right, the copies agree, no lock
 * held, as many records as at the start in the tables no transaction
 * inserts into or deletes from; SmallBank: the money moved by the
 * committed deltas exactly. */
static void check_end(struct dtx_bench *b)
{
	int64_t want = b->base.money + b->res.delta;
	int i, crc, rc;

	census(b, &b->end);
	crc = smart_dtx_check(b->d, b->main_worker, &b->end_bad);
	rc = census_say(b, "check", &b->end, crc, b->end_bad);
	if (!b->end.rc && b->wl->money && b->end.money != want) {
		fprintf(stderr,
			BENCH_TOOL ": check: money %" PRId64 " cents, "
				   "want %" PRId64 " (%" PRId64
				   " at the start %+" PRId64 " committed)\n",
			b->end.money, want, b->base.money, b->res.delta);
		rc = SMART_EPROTO;
	}
	for (i = 0; !b->end.rc && i < b->wl->ntables; i++)
		if ((b->wl->fixed >> i & 1) &&
		    b->end.records[i] != b->base.records[i]) {
			fprintf(stderr,
				BENCH_TOOL ": check: %s has %" PRIu64
					   " whole records, %" PRIu64
					   " at the start\n",
				b->wl->tables[i], b->end.records[i],
				b->base.records[i]);
			rc = SMART_EPROTO;
		}
	b->end_rc = rc;
	b->end_done = 1;
}

/* ---- the run ---- */

static int load_errors(const struct dtx_bench *b)
{
	const struct dtx_thread *th;
	int i, rc;

	for (i = 0; i < b->run->com.threads; i++) {
		th = &b->t[i];
		if (!th->rc && !th->errors)
			continue;
		rc = th->rc ? th->rc : th->first_err;
		fprintf(stderr,
			BENCH_TOOL ": %s failed: %s (%" PRIu64 " errors)\n",
			b->created ? "the load" : "the setup",
			smart_strerror(rc), th->errors);
		return rc;
	}
	return 0;
}

static uint64_t records_total(const struct dtx_bench *b)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < b->wl->ntables; i++)
		n += b->records[i];
	return n;
}

/* The threads prepared (and loaded); the load's errors counted apart:
 * the window starts from zero. */
static int before_window(struct dtx_bench *b)
{
	int i, sig, rc;

	sig = kit_runner_wait_ready(&b->runner, b->created ? &b->load : NULL);
	rc = load_errors(b);
	if (!rc && sig) {
		fprintf(stderr,
			BENCH_TOOL ": stopped by signal %d before the "
				   "run\n",
			sig);
		rc = SMART_EAGAIN;
	}
	if (!rc)
		rc = b->created ? check_load(b) : check_open(b);
	if (!rc)
		rc = say("preparing the transactions", b->wl->prepare(b));
	for (i = 0; !rc && i < b->run->com.threads; i++)
		b->t[i].errors = 0, b->t[i].first_err = 0;
	return rc;
}

/* --txns: the window lasts until every coroutine has done its share (a
 * stop signal cuts it short). */
static int txns_wait(struct dtx_bench *b)
{
	int sig = 0;

	while (atomic_load(&b->running) > 0)
		if (!sig && (sig = kit_signal_wait(0.01)))
			kit_runner_set(&b->runner, KIT_STOP);
	return sig;
}

static void result_sum(struct dtx_bench *b)
{
	struct dtx_result *s = &b->res;
	const struct dtx_thread *th;
	struct dtx_tstats *a;
	int i, k;

	for (i = 0; i < b->run->com.threads; i++) {
		th = &b->t[i];
		for (k = 0; k < b->wl->ntypes; k++) {
			a = &s->ty[k];
			a->attempts += th->ty[k].attempts;
			a->commits += th->ty[k].commits;
			a->aborts += th->ty[k].aborts;
			a->failed += th->ty[k].failed;
			a->full += th->ty[k].full;
			a->rt += th->ty[k].rt;
			a->ops += th->ty[k].ops;
			a->bytes += th->ty[k].bytes;
			a->wbytes += th->ty[k].wbytes;
		}
		s->all_rt += th->all_rt;
		s->all_ops += th->all_ops;
		s->all_bytes += th->all_bytes;
		s->task_rt += th->task_rt;
		s->task_bytes += th->task_bytes;
		s->errors += th->errors;
		s->vfail += th->vfail;
		s->delta += th->delta;
		if (!s->first_err)
			s->first_err = th->rc ? th->rc : th->first_err;
	}
}

static void result_fill(struct dtx_bench *b)
{
	struct dtx_result *s = &b->res;
	struct dtx_tstats *a = &s->all;
	smart_hist_t h;
	uint64_t max = 0;
	int i, k;

	result_sum(b);
	smart_hist_init(&h);
	for (i = 0; i < b->run->com.threads; i++) {
		smart_hist_merge(&h, &b->t[i].hist);
		max = b->t[i].max_cycles > max ? b->t[i].max_cycles : max;
	}
	for (k = 0; k < b->wl->ntypes; k++) {
		a->attempts += s->ty[k].attempts;
		a->commits += s->ty[k].commits;
		a->aborts += s->ty[k].aborts;
		a->failed += s->ty[k].failed;
		a->full += s->ty[k].full;
		a->rt += s->ty[k].rt;
		a->ops += s->ty[k].ops;
		a->bytes += s->ty[k].bytes;
		a->wbytes += s->ty[k].wbytes;
	}
	s->committed_tps = b->win.secs > 0 ? (double)a->commits / b->win.secs :
					     0;
	s->attempted_tps = b->win.secs > 0 ? (double)a->attempts / b->win.secs :
					     0;
	s->abort_rate = a->attempts ? (double)a->aborts / (double)a->attempts :
				      0;
	kit_lat_from_cycles(&h, &s->lat);
	s->max_us = (double)max * 1e6 / smart_cycles_per_sec();
}

static int run_failed(const struct dtx_bench *b)
{
	const struct dtx_result *s = &b->res;

	return s->errors || s->vfail || s->first_err || b->base_rc ||
	       (b->end_done && b->end_rc);
}

/* A database this run created goes at the end, unless kept or the run
 * failed (then it stays for a look). */
static void drop_maybe(struct dtx_bench *b)
{
	if (!b->created || b->keep)
		return;
	if (run_failed(b)) {
		fprintf(stderr,
			BENCH_TOOL ": the run failed: database %s "
				   "not dropped\n",
			b->name);
		return;
	}
	if (!say("dropping the database",
		 smart_dtx_drop(b->d, b->main_worker))) {
		b->d = NULL;
		b->dropped = 1;
	}
}

/* The database's counters over the window: the end's minus s0. */
static void dstats_delta(struct dtx_bench *b, const struct smart_dtx_stats *s0)
{
	struct smart_dtx_stats *d = &b->dstats;

	if (smart_dtx_stats(b->d, NULL, d)) {
		memset(d, 0, sizeof(*d));
		return;
	}
	d->commits -= s0->commits;
	d->aborts -= s0->aborts;
	d->lock_conflicts -= s0->lock_conflicts;
	d->validate_fails -= s0->validate_fails;
	d->insert_conflicts -= s0->insert_conflicts;
	d->cache_hits -= s0->cache_hits;
	d->cache_misses -= s0->cache_misses;
	d->crc_retries -= s0->crc_retries;
	d->recoveries -= s0->recoveries;
	d->rolled_back -= s0->rolled_back;
	d->rolled_forward -= s0->rolled_forward;
	d->locks_recovered -= s0->locks_recovered;
	d->slots_adopted -= s0->slots_adopted;
}

static int window(struct dtx_bench *b, smart_ctx_t *ctx)
{
	kit_window_open(&b->win, ctx);
	kit_runner_set(&b->runner, KIT_RUN);
	return b->txns ? txns_wait(b) :
			 kit_window_sleep(&b->win, ctx, &b->runner,
					  b->run->com.seconds);
}

int dtx_bench_run(void *m, struct bench_run *r)
{
	struct dtx_bench *b = m;
	smart_ctx_t *ctx = r->env.ctx;
	struct smart_dtx_stats s0;
	int i, rc;

	for (i = 0; i < r->com.threads; i++) {
		b->t[i].b = b;
		b->t[i].idx = i;
		smart_hist_init(&b->t[i].hist);
	}
	atomic_store(&b->running, r->com.threads);
	kit_progress_start(&b->load, "load", "records", records_total(b));
	rc = kit_runner_start(&b->runner, r->com.threads, thread_main, b->t,
			      sizeof(*b->t));
	if (rc)
		return say("starting the threads", rc);
	rc = before_window(b);
	/* --recover: no window, and the counters of the whole run (its
	 * recoveries) */
	memset(&s0, 0, sizeof(s0));
	if (!b->recover)
		(void)smart_dtx_stats(b->d, NULL, &s0);
	if (!rc && !b->recover)
		b->res.stop_sig = window(b, ctx);
	kit_runner_set(&b->runner, KIT_STOP);
	if (b->win.t0)
		kit_window_end(&b->win);
	kit_runner_join(&b->runner);
	if (rc)
		return rc;
	rc = kit_runner_failed(&b->runner);
	if (rc)
		return dtx_stopped(b, rc);
	if (b->res.stop_sig)
		fprintf(stderr,
			BENCH_TOOL ": the window ended by signal %d "
				   "after %.2f s\n",
			b->res.stop_sig, b->win.secs);
	if (b->win.t0)
		kit_window_close(&b->win, ctx);
	result_fill(b);
	dstats_delta(b, &s0);
	if (b->check)
		check_end(b);
	drop_maybe(b);
	return 0;
}

/* ---- report ---- */

static double per(uint64_t n, uint64_t d)
{
	return d ? (double)n / (double)d : 0;
}

static void print_header(const struct dtx_bench *b, const struct bench_run *r)
{
	char note[128], data[160];

	snprintf(note, sizeof(note), ", database %s (%s)", b->name,
		 b->created ? "created and loaded" : "opened");
	b->wl->describe(b, data, sizeof(data));
	kit_rule();
	printf("                %s on Smart-DTX (smart-bench %s)\n",
	       b->wl->title, SMART_VERSION_STRING);
	kit_head_env(&r->com, &r->env, note);
	kit_head("Tables", "%d, %d backup%s each", b->wl->ntables, b->replicas,
		 b->replicas == 1 ? "" : "s");
	kit_head("Data", "%s", data);
	kit_head("Threads x coros",
		 "%d x %d (one transaction in flight per "
		 "coroutine)",
		 r->com.threads, b->coros);
	if (b->created)
		snprintf(data, sizeof(data),
			 "after a %.2f s load of %" PRIu64
			 " records, %d per transaction",
			 b->load.secs, records_total(b), b->batch);
	else
		snprintf(data, sizeof(data),
			 "after opening (%" PRIu64 " locks "
			 "of dead clients recovered)",
			 b->recovered);
	if (b->recover)
		kit_head("Duration", "none (--recover) %s", data);
	else if (b->txns)
		kit_head("Duration",
			 "%.2f s (%" PRIu64 " transactions per "
			 "coroutine) %s",
			 b->win.secs, b->txns, data);
	else
		kit_head("Duration", "%.1f s %s", b->win.secs, data);
	kit_rule();
}

static void print_summary(const struct dtx_bench *b)
{
	const struct dtx_result *s = &b->res;
	const struct dtx_tstats *a = &s->all;

	printf(" %-10s %-12s %-12s %-10s %-8s %-8s %-8s %-7s %-8s %-9s %s\n",
	       "#commits", "commit/s", "attempt/s", "abort-rate", "p50[us]",
	       "p99[us]", "p999[us]", "rt/txn", "ops/txn", "bytes/txn",
	       "errors");
	printf(" %-10" PRIu64 " %-12.0f %-12.0f %-10.4f %-8.2f %-8.2f %-8.2f "
	       "%-7.3f %-8.2f %-9.1f %" PRIu64 "\n",
	       a->commits, s->committed_tps, s->attempted_tps, s->abort_rate,
	       s->lat.p50_us, s->lat.p99_us, s->lat.p999_us,
	       per(a->rt, a->commits), per(a->ops, a->commits),
	       per(a->bytes, a->commits), s->errors);
	kit_rule();
}

/* Per type: its share of the commits, abort rate and cost. */
static void print_types(const struct dtx_bench *b)
{
	const struct dtx_result *s = &b->res;
	const struct dtx_tstats *t;
	int k;

	printf(" %-22s %-7s %-10s %-10s %-7s %-8s %-9s %-10s %s\n", "type",
	       "mix", "commits", "abort-rate", "rt/txn", "ops/txn", "bytes/txn",
	       "wbytes/txn", "failed");
	for (k = 0; k < b->wl->ntypes; k++) {
		t = &s->ty[k];
		printf(" %-22s %5.1f%%  %-10" PRIu64 " %-10.4f %-7.3f %-8.2f "
		       "%-9.1f %-10.1f %" PRIu64 "\n",
		       b->wl->types[k].label,
		       100 * per(t->commits, s->all.commits), t->commits,
		       per(t->aborts, t->attempts), per(t->rt, t->commits),
		       per(t->ops, t->commits), per(t->bytes, t->commits),
		       per(t->wbytes, t->commits), t->failed);
	}
	kit_rule();
}

static void print_dtx(const struct dtx_bench *b)
{
	const struct smart_dtx_stats *d = &b->dstats;

	printf(" dtx (%s): %" PRIu64 " commits, %" PRIu64 " aborts (%" PRIu64
	       " locked, %" PRIu64 " validation, %" PRIu64 " insert), "
	       "address cache %.1f%% hits, %" PRIu64
	       " torn reads re-read, %" PRIu64 " recoveries\n",
	       b->recover ? "this run" : "window", d->commits, d->aborts,
	       d->lock_conflicts, d->validate_fails, d->insert_conflicts,
	       100 * per(d->cache_hits, d->cache_hits + d->cache_misses),
	       d->crc_retries, d->recoveries);
	if (!b->created)
		printf(" open: smart_dtx_recover %s, %" PRIu64 " locks of dead "
		       "clients released\n",
		       b->recovered_ok ? "done" : "FAILED", b->recovered);
}

static const char *check_word(const struct dtx_bench *b)
{
	if (b->base_rc || (b->end_done && b->end_rc))
		return "fail";
	return b->end_done ? "pass" : "off";
}

static void print_check(const struct dtx_bench *b)
{
	const char *w = check_word(b);

	if (!strcmp(w, "off"))
		printf(" check: not asked (--check); the %s passed",
		       b->created ? "load's" : "opened database's census");
	else
		printf(" check: %s", !strcmp(w, "pass") ? "passed" : "FAILED");
	if (b->end_done)
		printf(": %" PRIu64 " records wrong, smart_dtx_check %" PRIu64
		       " bad",
		       b->end.bad, b->end_bad);
	if (b->end_done && b->wl->money)
		printf("; money %" PRId64 " cents = %" PRId64 " at the start "
		       "%+" PRId64 " committed",
		       b->end.money, b->base.money, b->res.delta);
	printf("%s\n", b->created ? (b->dropped ? "; database dropped" :
						  "; database kept") :
				    "");
}

static void print_table(const struct dtx_bench *b, const struct bench_run *r)
{
	const struct dtx_result *s = &b->res;

	print_header(b, r);
	if (b->recover) { /* no window: what recovery and checks did */
		print_dtx(b);
		print_check(b);
		return;
	}
	print_summary(b);
	print_types(b);
	printf(" per attempt (%" PRIu64 ", committed or aborted): rt %.3f, "
	       "ops %.2f, bytes %.1f; as the tasks counted them: rt %.3f, "
	       "bytes %.1f\n",
	       s->all.attempts, per(s->all_rt, s->all.attempts),
	       per(s->all_ops, s->all.attempts),
	       per(s->all_bytes, s->all.attempts),
	       per(s->task_rt, s->all.attempts),
	       per(s->task_bytes, s->all.attempts));
	printf(" slowest committed transaction %.0f us; validation failures %" PRIu64
	       "\n",
	       s->max_us, s->vfail);
	print_dtx(b);
	kit_library_line(&b->win.st);
	print_check(b);
	if (s->errors || s->first_err)
		printf(" errors: %" PRIu64 ", the first %s (%s)\n", s->errors,
		       smart_status_name(s->first_err),
		       smart_strerror(s->first_err));
}

static void record_run(const struct dtx_bench *b, const struct bench_run *r,
		       struct kit_rec *rec)
{
	smart_ctx_t *ctx = r->env.ctx;

	kit_rec_str(rec, "bench", b->wl->name);
	kit_rec_str(rec, "database", b->name);
	kit_rec_num(rec, "threads", "%d", r->com.threads);
	kit_rec_num(rec, "coros", "%d", b->coros);
	kit_rec_num(rec, "replicas", "%d", b->replicas);
	kit_rec_num(rec, "blades", "%d", r->env.nblades);
	kit_rec_str(rec, "techniques", smart_ctx_techniques(ctx));
	kit_rec_str(rec, "transport", smart_ctx_transport(ctx));
	kit_rec_str(rec, "qp_mode_effective", smart_ctx_qp_mode(ctx));
	kit_rec_str(rec, "nic_model", r->env.nic_model);
	b->wl->record(b, rec);
	kit_rec_num(rec, "seconds", "%.3f", b->win.secs);
	kit_rec_num(rec, "txns_per_coro", "%" PRIu64, b->txns);
	kit_rec_num(rec, "load_secs", "%.3f", b->created ? b->load.secs : 0);
	kit_rec_num(rec, "records", "%" PRIu64, records_total(b));
}

static void record_result(const struct dtx_bench *b, struct kit_rec *rec)
{
	const struct dtx_result *s = &b->res;
	const struct dtx_tstats *a = &s->all;
	uint64_t n = a->attempts;

	kit_rec_num(rec, "committed", "%" PRIu64, a->commits);
	kit_rec_num(rec, "attempted", "%" PRIu64, n);
	kit_rec_num(rec, "committed_tps", "%.1f", s->committed_tps);
	kit_rec_num(rec, "attempted_tps", "%.1f", s->attempted_tps);
	kit_rec_num(rec, "abort_rate", "%.5f", s->abort_rate);
	kit_rec_lat(rec, &s->lat);
	kit_rec_num(rec, "max_us", "%.1f", s->max_us);
	kit_rec_num(rec, "rt_per_txn", "%.4f", per(a->rt, a->commits));
	kit_rec_num(rec, "ops_per_txn", "%.4f", per(a->ops, a->commits));
	kit_rec_num(rec, "bytes_per_txn", "%.1f", per(a->bytes, a->commits));
	kit_rec_num(rec, "wbytes_per_txn", "%.1f", per(a->wbytes, a->commits));
	kit_rec_num(rec, "rt_per_attempt", "%.4f", per(s->all_rt, n));
	kit_rec_num(rec, "ops_per_attempt", "%.4f", per(s->all_ops, n));
	kit_rec_num(rec, "bytes_per_attempt", "%.1f", per(s->all_bytes, n));
	kit_rec_num(rec, "task_rt_per_attempt", "%.4f", per(s->task_rt, n));
	kit_rec_num(rec, "task_bytes_per_attempt", "%.1f",
		    per(s->task_bytes, n));
	kit_rec_num(rec, "failed", "%" PRIu64, a->failed);
	kit_rec_num(rec, "insert_full", "%" PRIu64, a->full);
	kit_rec_num(rec, "errors", "%" PRIu64, s->errors);
	kit_rec_str(rec, "first_error",
		    s->first_err ? smart_status_name(s->first_err) : "");
	kit_rec_num(rec, "validation_failures", "%" PRIu64, s->vfail);
}

/* rt_<type>, abort_<type>, ops_<type>, bytes_<type>, n_<type> (commits),
 * wbytes_<type> (of bytes, WRITEs'); the keys live in b: a record keeps
 * pointers. */
static void record_types(struct dtx_bench *b, struct kit_rec *rec)
{
	static const char *const pre[] = { "rt",    "abort", "ops",
					   "bytes", "n",     "wbytes" };
	const struct dtx_tstats *t;
	int k, j;

	for (k = 0; k < b->wl->ntypes; k++)
		for (j = 0; j < 6; j++)
			snprintf(b->keys[k][j], sizeof(b->keys[k][j]), "%s_%s",
				 pre[j], b->wl->types[k].name);
	for (k = 0; k < b->wl->ntypes; k++) {
		t = &b->res.ty[k];
		kit_rec_num(rec, b->keys[k][0], "%.4f", per(t->rt, t->commits));
		kit_rec_num(rec, b->keys[k][1], "%.5f",
			    per(t->aborts, t->attempts));
		kit_rec_num(rec, b->keys[k][2], "%.4f",
			    per(t->ops, t->commits));
		kit_rec_num(rec, b->keys[k][3], "%.1f",
			    per(t->bytes, t->commits));
		kit_rec_num(rec, b->keys[k][4], "%" PRIu64, t->commits);
		kit_rec_num(rec, b->keys[k][5], "%.1f",
			    per(t->wbytes, t->commits));
	}
}

static void record_check(const struct dtx_bench *b, struct kit_rec *rec)
{
	kit_rec_library(rec, &b->win.st);
	kit_rec_num(rec, "retries_per_guarded_op", "%.4f",
		    b->win.st.retries_per_op);
	kit_rec_num(rec, "dtx_lock_conflicts", "%" PRIu64,
		    b->dstats.lock_conflicts);
	kit_rec_num(rec, "dtx_validate_fails", "%" PRIu64,
		    b->dstats.validate_fails);
	/* dead clients' transactions this run resolved, and how */
	kit_rec_num(rec, "dtx_recoveries", "%" PRIu64, b->dstats.recoveries);
	kit_rec_num(rec, "dtx_rolled_back", "%" PRIu64, b->dstats.rolled_back);
	kit_rec_num(rec, "dtx_rolled_forward", "%" PRIu64,
		    b->dstats.rolled_forward);
	kit_rec_num(rec, "dtx_locks_recovered", "%" PRIu64,
		    b->dstats.locks_recovered);
	kit_rec_str(rec, "check", check_word(b));
	kit_rec_num(rec, "bad_records", "%" PRIu64,
		    b->end_done ? b->end.bad + b->end_bad :
				  b->base.bad + b->base_bad);
	if (b->wl->money) {
		kit_rec_num(rec, "money_start", "%" PRId64, b->base.money);
		kit_rec_num(rec, "money_end", "%" PRId64,
			    b->end_done ? b->end.money : 0);
		kit_rec_num(rec, "money_delta", "%" PRId64, b->res.delta);
	}
	kit_rec_num(rec, "dropped", "%s", b->dropped ? "true" : "false");
	kit_rec_num(rec, "recovered_locks", "%" PRIu64, b->recovered);
	kit_rec_num(rec, "cache_hit_rate", "%.4f",
		    per(b->dstats.cache_hits,
			b->dstats.cache_hits + b->dstats.cache_misses));
	kit_rec_num(rec, "stop_signal", "%d", b->res.stop_sig);
}

/* What makes the run a failure, said on stderr (the checks said theirs). */
static int verdict(const struct dtx_bench *b)
{
	const struct dtx_result *s = &b->res;

	if (s->errors || s->vfail || s->first_err) {
		fprintf(stderr,
			BENCH_TOOL ": the run failed: %" PRIu64
				   " errors%s%s, %" PRIu64
				   " validation failures\n",
			s->errors, s->first_err ? ", the first " : "",
			s->first_err ? smart_strerror(s->first_err) : "",
			s->vfail);
		return s->first_err ? s->first_err : SMART_EPROTO;
	}
	if (b->base_rc || (b->end_done && b->end_rc)) {
		fprintf(stderr, BENCH_TOOL ": the check failed\n");
		return SMART_EPROTO;
	}
	return 0;
}

int dtx_bench_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct dtx_bench *b = m;

	if (!r->com.json)
		print_table(b, r);
	record_run(b, r, rec);
	record_result(b, rec);
	record_types(b, rec);
	record_check(b, rec);
	return verdict(b);
}

const struct kit_col dtx_bench_csv[] = {
	{ "bench", "bench", NULL },
	{ "techniques", "techniques", NULL },
	{ "threads", "threads", NULL },
	{ "coros", "coros", NULL },
	{ "replicas", "replicas", NULL },
	{ "records", "records", NULL },
	{ "committed_tps", "committed_tps", NULL },
	{ "attempted_tps", "attempted_tps", NULL },
	{ "abort_rate", "abort_rate", NULL },
	{ "p50_us", "p50_us", NULL },
	{ "p99_us", "p99_us", NULL },
	{ "p999_us", "p999_us", NULL },
	{ "rt_per_txn", "rt_per_txn", NULL },
	{ "ops_per_txn", "ops_per_txn", NULL },
	{ "bytes_per_txn", "bytes_per_txn", NULL },
	{ "wbytes_per_txn", "wbytes_per_txn", NULL },
	{ "errors", "errors", NULL },
	{ "validation_failures", "validation_failures", NULL },
	{ "check", "check", NULL },
	{ "transport", "transport", NULL },
	{ "nic_model", "nic_model", "off" },
	{ NULL, NULL, NULL },
};
