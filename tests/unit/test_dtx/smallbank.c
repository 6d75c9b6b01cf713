/*
 * test_dtx, SmallBank concurrently (stress): smart-bench's workload
 * (bench/workloads/smallbank.h, FORD's mix and amounts) on 64 accounts
 * of 256-byte values, 2 threads x 8 tasks, every committed transaction
 * recorded; the graph acyclic, money conserved, every value whole; on
 * plain and adversarial shm.
 */
#include "dtx_test.h"

#define SB_ACCOUNTS 64

#define SB_INIT 10000

#define SB_SEED 0x5b0001ull

/* A transaction of role: FORD's mix over every account (a quarter of
 * them hot, sb_test_cfg), half of its Balances split; or a deposit into
 * one of the two hottest accounts; or a Balance of one of them. */
static int sb_draw(const struct sb_cfg *c, smart_rng_t *r, enum sb_role role,
		   struct wl_params *p)
{
	unsigned pct = (unsigned)smart_rng_below(r, 100);
	int type;

	if (role != SB_MIX) {
		type = role == SB_READER ? SB_BALANCE :
		       pct < 50		 ? SB_DEPOSIT :
					   SB_SAVING;
		memset(p, 0, sizeof(*p));
		p->v[SB_A] = smart_rng_below(r, 2);
		return type;
	}
	type = wl_type_pick(sb_types, SB_NTYPES, r);
	sb_gen(c, r, type, p);
	p->v[SB_SPLIT] = smart_rng_below(r, 2) ? 1 + smart_rng_below(r, 8) : 0;
	return type;
}

/* A split Balance's window: the task yields until others committed
 * `split` transactions, or for 256 yields (the window in which a missing
 * validation lets in a snapshot torn by an Amalgamate). */
static void sb_gap(struct wl_txn *t, unsigned split)
{
	const _Atomic uint64_t *commits = t->gap_arg;
	uint64_t c0 = atomic_load_explicit(commits, memory_order_relaxed);
	unsigned i;

	for (i = 0;
	     i < 256 &&
	     atomic_load_explicit(commits, memory_order_relaxed) - c0 < split;
	     i++)
		smart_task_yield(t->w);
}

static void sb_task_fn(smart_worker_t *w, void *arg)
{
	struct sb_task *a = arg;
	const struct sb_cfg *c = &a->run->cfg;
	struct wl_txn *t = &a->t;
	struct wl_outcome o;
	struct wl_params p;
	unsigned tries;
	int rc, type;

	CHECK_OK(smart_dtx_txn_new(a->d, w, &t->x));
	t->w = w;
	t->gap = sb_gap;
	t->gap_arg = &a->run->commits;
	while (a->commits < a->cfg->commits) {
		type = sb_draw(c, &a->r, a->cfg->role, &p);
		for (tries = 0;; tries++) {
			CHECK_MSG(tries < SB_RETRIES,
				  "task %u: %u aborts in "
				  "a row of %s (accounts %" PRIu64 ", %" PRIu64
				  ")",
				  a->id, tries, sb_types[type].label, p.v[SB_A],
				  p.v[SB_B]);
			rc = sb_once(t, c, type, &p, &o);
			if (rc != SMART_EABORT)
				break;
			a->conflicts++;
			backoff(w, &a->backoff, tries);
		}
		if (tries > a->max_retries)
			a->max_retries = tries;
		CHECK_MSG(rc == 0, "task %u: %s: %s", a->id,
			  sb_types[type].label, smart_status_name(rc));
		record(&a->h, t->x, t->nitems,
		       (uint64_t)a->id << 48 | (uint64_t)type << 40 |
			       a->commits);
		a->delta += o.delta;
		a->failed += (uint64_t)o.failed;
		a->commits++;
		a->by_type[type]++;
		atomic_fetch_add_explicit(&a->run->commits, 1,
					  memory_order_relaxed);
	}
	CHECK_OK(smart_dtx_txn_free(t->x, w));
}

static void *sb_thread(void *arg)
{
	struct sb_task *t = arg; /* this thread's tasks */
	smart_worker_t *w;
	unsigned i;

	CHECK_OK(smart_worker_create(t[0].run->ctx, &w));
	for (i = 0; i < t[0].cfg->tasks; i++)
		CHECK_OK(smart_task_spawn(w, sb_task_fn, &t[i]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

struct sb_sum {
	const struct sb_cfg *c;
	int64_t total;
	unsigned n;
	uint32_t table;
};

static int sb_sum_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct sb_sum *s = arg;
	int64_t cents = 0;

	CHECK_MSG(key < SB_ACCOUNTS, "table %u: key %" PRIu64, s->table, key);
	CHECK_MSG(sb_value_ok(s->c, s->table, key, val, len, &cents),
		  "table %u: account %" PRIu64 ": a torn or foreign value "
		  "(%zu bytes)",
		  s->table, key, len);
	s->total += cents;
	s->n++;
	return 0;
}

/* The last version each slot was written at, from h: slot -> version. */
static uint64_t last_written(const struct dsg *h, uint64_t slot)
{
	uint64_t best = 0;
	size_t i;

	for (i = 0; i < h->nitem; i++)
		if (h->item[i].slot == slot && h->item[i].wv > best)
			best = h->item[i].wv;
	return best;
}

static void stats_add(struct smart_dtx_stats *s, const smart_dtx_t *d)
{
	struct smart_dtx_stats o;

	CHECK_OK(smart_dtx_stats(d, NULL, &o));
	s->commits += o.commits;
	s->aborts += o.aborts;
	s->lock_conflicts += o.lock_conflicts;
	s->validate_fails += o.validate_fails;
	s->insert_conflicts += o.insert_conflicts;
	s->cache_hits += o.cache_hits;
	s->cache_misses += o.cache_misses;
	s->crc_retries += o.crc_retries;
}

/* The run: threads (up to SB_THREADS_MAX) with the roles of cfg. */
static void smallbank(const char *adv, const struct sb_thread_cfg *cfg,
		      unsigned threads)
{
	struct smart_dtx_table t[SB_NTABLES];
	uint64_t records[SB_NTABLES];
	struct smart_dtx_config c;
	struct smart_dtx_stats st = { 0 };
	smart_dtx_t *cacheless;
	struct dsg_report rep;
	struct sb_hook hook = { 0, 0 };
	struct sb_run *run = calloc(1, sizeof(*run));
	pthread_t tid[SB_THREADS_MAX];
	struct world wd;
	struct dsg all;
	struct sb_sum sum;
	smart_dtx_txn_t *x;
	int64_t delta = 0;
	uint64_t by_type[SB_NTYPES] = { 0 }, failed = 0, total = 0, bad;
	uint64_t want = 0;
	unsigned i, j, max_retries = 0;
	double t0 = test_now_ms();

	CHECK(run && threads <= SB_THREADS_MAX);
	world_start(&wd, adv);
	sb_test_cfg(&run->cfg, SB_ACCOUNTS, SB_INIT);
	sb_tables(&run->cfg, t, records);
	t[SB_SAVINGS].buckets = t[SB_CHECKING].buckets = 64;
	cfg_two(&c, t, 2); /* no ledger */
	CHECK_OK(smart_dtx_create(wd.w, 1, "sb", &c, &wd.d));
	c.cache_entries = 0;
	CHECK_OK(smart_dtx_open(wd.w, 1, "sb", &c, &cacheless));
	dsg_init(&all);
	sb_load(wd.d, wd.w, &run->cfg, &all);
	run->ctx = wd.f.ctx;
	for (i = 0; i < threads; i++)
		for (j = 0; j < cfg[i].tasks; j++) {
			struct sb_task *a = &run->task[i][j];

			CHECK(cfg[i].tasks <= SB_TASKS_MAX);
			a->run = run;
			a->cfg = &cfg[i];
			a->d = cfg[i].role == SB_READER ? cacheless : wd.d;
			a->id = i * SB_TASKS_MAX + j;
			smart_rng_seed(&a->r, SB_SEED + a->id);
			smart_rng_seed(&a->backoff, ~(SB_SEED + a->id));
			dsg_init(&a->h);
		}
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, sb_hook_fn, &hook));
	for (i = 0; i < threads; i++)
		CHECK(!pthread_create(&tid[i], NULL, sb_thread, run->task[i]));
	for (i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	for (i = 0; i < threads; i++)
		for (j = 0; j < cfg[i].tasks; j++) {
			struct sb_task *a = &run->task[i][j];
			unsigned k;

			want += cfg[i].commits;
			dsg_append(&all, &a->h);
			dsg_free(&a->h);
			delta += a->delta;
			failed += a->failed;
			total += a->commits;
			for (k = 0; k < SB_NTYPES; k++)
				by_type[k] += a->by_type[k];
			if (a->max_retries > max_retries)
				max_retries = a->max_retries;
		}
	stats_add(&st, wd.d);
	stats_add(&st, cacheless);
	CHECK_OK(smart_dtx_close(cacheless, NULL));
	printf("smallbank%s%s: %" PRIu64 " transactions committed in %.0f "
	       "ms (",
	       adv ? " adversarial " : "", adv ? adv : "", total,
	       test_now_ms() - t0);
	for (i = 0; i < SB_NTYPES; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", sb_types[i].label,
		       by_type[i]);
	printf("), %" PRIu64 " failed (committed without writes), at most "
	       "%u retries of one, hook called %lu times\n",
	       failed, max_retries, atomic_load(&hook.calls));
	print_stats("smallbank", &st);

	CHECK_EQ(total, want);
	/* serializable: no lost update, no cycle */
	CHECK_EQ(dsg_check(&all, DSG_COMPLETE, &rep, stdout), DSG_OK);
	printf("dsg: %zu transactions, %zu items, %zu ww %zu wr %zu rw edges, "
	       "%.1f ms\n",
	       rep.txns, rep.items, rep.edges[DSG_WW], rep.edges[DSG_WR],
	       rep.edges[DSG_RW], rep.ms);
	CHECK_EQ(rep.txns, total + SB_ACCOUNTS);
	/* money: what the load put in plus what committed transactions
	 * added, exactly; every value whole */
	sum = (struct sb_sum){ &run->cfg, 0, 0, SB_SAVINGS };
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, SB_SAVINGS, sb_sum_fn, &sum));
	CHECK_EQ(sum.n, SB_ACCOUNTS);
	sum.table = SB_CHECKING;
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, SB_CHECKING, sb_sum_fn, &sum));
	CHECK_EQ(sum.n, 2 * SB_ACCOUNTS);
	CHECK_MSG(sum.total == 2 * SB_ACCOUNTS * (int64_t)SB_INIT + delta,
		  "money: %" PRId64 " in the tables, %" PRId64 " expected "
		  "(%" PRId64 " added by committed transactions)",
		  sum.total, 2 * SB_ACCOUNTS * (int64_t)SB_INIT + delta, delta);
	/* every account ends at the version its last commit wrote */
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	for (i = 0; i < SB_ACCOUNTS; i++) {
		uint8_t v[2][SB_VALUE];
		uint64_t slot, rv, wv;
		int64_t cents;
		size_t len;
		int k;

		CHECK_OK(smart_dtx_begin(x));
		CHECK_EQ(smart_dtx_read(x, SB_SAVINGS, i, v[0], SB_VALUE), 0);
		CHECK_EQ(smart_dtx_read(x, SB_CHECKING, i, v[1], SB_VALUE), 1);
		CHECK_OK(smart_dtx_commit(x, wd.w));
		for (k = 0; k < 2; k++) {
			CHECK_OK(smart_dtx_status(x, k, &len));
			CHECK_MSG(sb_value_ok(&run->cfg, (uint32_t)k, i, v[k],
					      len, &cents),
				  "account %u (%s): "
				  "a torn or foreign value",
				  i, k ? "checking" : "savings");
			CHECK_OK(
				smart_dtx_item_versions(x, k, &slot, &rv, &wv));
			CHECK_MSG(rv == last_written(&all, slot),
				  "account %u (%s): version %" PRIu64 ", the "
				  "last committed wrote %" PRIu64,
				  i, k ? "checking" : "savings", rv,
				  last_written(&all, slot));
		}
	}
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad));
	CHECK_EQ(bad, 0);
	/* the paths the run exists for were taken */
	CHECK_GE(st.commits, total + SB_ACCOUNTS);
	CHECK_GT(st.aborts, 0);
	CHECK_GT(st.lock_conflicts, 0);
	CHECK_GT(st.validate_fails, 0);
	if (adv)
		CHECK_GT(st.crc_retries, 0);
	dsg_free(&all);
	free(run);
	world_stop(&wd);
}

void test_smallbank(void)
{
	static const struct sb_thread_cfg cfg[] = {
		{ SB_MIX, 8, 700 }, { SB_MIX, 8, 700 }
	}; /* 11200 */

	smallbank(NULL, cfg, 2);
}

void test_adversarial(void)
{
	static const struct sb_thread_cfg cfg[] = { { SB_MIX, 8, 200 },
						    { SB_MIX, 8,
						      200 }, /* 3200 */
						    { SB_WRITER, 1, 1000 },
						    { SB_READER, 1, 300 } };

	smallbank("seed=5,pause_pct=30", cfg, 4);
}
