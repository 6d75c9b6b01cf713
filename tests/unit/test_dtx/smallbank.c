/*
 * test_dtx, SmallBank concurrently (stress): 2 threads x 8 tasks, every
 * committed transaction recorded; the graph acyclic, money conserved,
 * every value whole; on plain and adversarial shm.
 */
#include "dtx_test.h"

#define SB_ACCOUNTS	64

#define SB_HOT		16	/* half the accounts drawn come from these */

#define SB_INIT		10000

#define SB_SEED		0x5b0001ull

static uint64_t sb_account(smart_rng_t *r)
{
	if (smart_rng_below(r, 2))
		return 1 + smart_rng_below(r, SB_HOT);
	return 1 + smart_rng_below(r, SB_ACCOUNTS);
}

static void sb_draw(smart_rng_t *r, enum sb_role role, struct sb_args *p)
{
	unsigned pct = (unsigned)smart_rng_below(r, 100);

	if (role != SB_MIX) {
		p->type = role == SB_READER ? SB_BALANCE :
			  pct < 50 ? SB_DEPOSIT : SB_TRANSACT;
		p->a = 1 + smart_rng_below(r, 2);
		p->b = 0;
		p->amt = 1 + (int64_t)smart_rng_below(r, 100);
		p->split = 0;
		return;
	}

	/* FORD's mix: 15 15 15 25 15 15 */
	p->type = pct < 15 ? SB_AMALGAMATE : pct < 30 ? SB_BALANCE :
		  pct < 45 ? SB_DEPOSIT : pct < 70 ? SB_SEND :
		  pct < 85 ? SB_TRANSACT : SB_WRITECHECK;
	p->a = sb_account(r);
	do
		p->b = sb_account(r);
	while (p->b == p->a);
	p->amt = 1 + (int64_t)smart_rng_below(r, 100);
	p->split = smart_rng_below(r, 2) ? 1 + (unsigned)smart_rng_below(r, 8)
					 : 0;
}

static void sb_task_fn(smart_worker_t *w, void *arg)
{
	struct sb_task *a = arg;
	smart_dtx_txn_t *x;
	struct sb_args p;
	int64_t delta;
	unsigned tries;
	int rc, n;

	CHECK_OK(smart_dtx_txn_new(a->d, w, &x));
	while (a->commits < a->cfg->commits) {
		sb_draw(&a->r, a->cfg->role, &p);
		p.commits = &a->run->commits;
		for (tries = 0;; tries++) {
			CHECK_MSG(tries < SB_RETRIES, "task %u: %u aborts in "
				  "a row of %s (accounts %" PRIu64 ", %" PRIu64
				  ")", a->id, tries, sb_name[p.type], p.a, p.b);
			rc = sb_run(x, w, &p, &delta, &n);
			if (rc != SMART_EABORT)
				break;
			a->conflicts++;
			backoff(w, &a->backoff, tries);
		}
		if (tries > a->max_retries)
			a->max_retries = tries;
		if (rc == SB_USER_ABORT) {
			a->user_aborts++;
			continue;
		}
		CHECK_MSG(rc == 0, "task %u: %s: %s", a->id, sb_name[p.type],
			  smart_status_name(rc));
		record(&a->h, x, n, (uint64_t)a->id << 48 |
		       (uint64_t)p.type << 40 | a->commits);
		a->delta += delta;
		a->commits++;
		a->by_type[p.type]++;
		atomic_fetch_add_explicit(&a->run->commits, 1,
					  memory_order_relaxed);
	}
	CHECK_OK(smart_dtx_txn_free(x, w));
}

static void *sb_thread(void *arg)
{
	struct sb_task *t = arg;	/* this thread's tasks */
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
	int64_t total;
	unsigned n;
	uint32_t table;
};

static int sb_sum_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct sb_sum *s = arg;
	struct acct v;

	CHECK_MSG(key >= 1 && key <= SB_ACCOUNTS, "table %u: key %" PRIu64,
		  s->table, key);
	CHECK_EQ(len, sizeof(v));
	memcpy(&v, val, sizeof(v));
	s->total += acct_bal(&v, key, len);
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
	struct smart_dtx_table t[2];
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
	uint64_t by_type[SB_TYPES] = { 0 }, user_aborts = 0, total = 0, bad;
	uint64_t want = 0;
	unsigned i, j, max_retries = 0;
	double t0 = test_now_ms();

	CHECK(run && threads <= SB_THREADS_MAX);
	world_start(&wd, adv);
	sb_tables(t, 64);
	cfg_two(&c, t, 2);
	CHECK_OK(smart_dtx_create(wd.w, 1, "sb", &c, &wd.d));
	c.cache_entries = 0;
	CHECK_OK(smart_dtx_open(wd.w, 1, "sb", &c, &cacheless));
	dsg_init(&all);
	sb_load(wd.d, wd.w, SB_ACCOUNTS, SB_INIT, &all);
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
		CHECK(!pthread_create(&tid[i], NULL, sb_thread,
				      run->task[i]));
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
			user_aborts += a->user_aborts;
			total += a->commits;
			for (k = 0; k < SB_TYPES; k++)
				by_type[k] += a->by_type[k];
			if (a->max_retries > max_retries)
				max_retries = a->max_retries;
		}
	stats_add(&st, wd.d);
	stats_add(&st, cacheless);
	CHECK_OK(smart_dtx_close(cacheless, NULL));
	printf("smallbank%s%s: %" PRIu64 " transactions committed in %.0f "
	       "ms (", adv ? " adversarial " : "", adv ? adv : "", total,
	       test_now_ms() - t0);
	for (i = 0; i < SB_TYPES; i++)
		printf("%s%s %" PRIu64, i ? ", " : "", sb_name[i], by_type[i]);
	printf("), %" PRIu64 " user aborts, at most %u retries of one, hook "
	       "called %lu times\n", user_aborts, max_retries,
	       atomic_load(&hook.calls));
	print_stats("smallbank", &st);

	CHECK_EQ(total, want);
	/* serializable: no lost update, no cycle */
	CHECK_EQ(dsg_check(&all, DSG_COMPLETE, &rep, stdout), DSG_OK);
	printf("dsg: %zu transactions, %zu items, %zu ww %zu wr %zu rw edges, "
	       "%.1f ms\n", rep.txns, rep.items, rep.edges[DSG_WW],
	       rep.edges[DSG_WR], rep.edges[DSG_RW], rep.ms);
	CHECK_EQ(rep.txns, total + SB_ACCOUNTS);
	/* money: what the load put in plus what committed transactions
	 * added, exactly; every value whole */
	sum = (struct sb_sum){ 0, 0, SAV };
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, SAV, sb_sum_fn, &sum));
	CHECK_EQ(sum.n, SB_ACCOUNTS);
	sum.table = CHK;
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, CHK, sb_sum_fn, &sum));
	CHECK_EQ(sum.n, 2 * SB_ACCOUNTS);
	CHECK_MSG(sum.total == 2 * SB_ACCOUNTS * (int64_t)SB_INIT + delta,
		  "money: %" PRId64 " in the tables, %" PRId64 " expected "
		  "(%" PRId64 " added by committed transactions)", sum.total,
		  2 * SB_ACCOUNTS * (int64_t)SB_INIT + delta, delta);
	/* every account ends at the version its last commit wrote */
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	for (i = 1; i <= SB_ACCOUNTS; i++) {
		struct acct v[2];
		uint64_t slot, rv, wv;
		size_t len;
		int k;

		CHECK_OK(smart_dtx_begin(x));
		CHECK_EQ(smart_dtx_read(x, SAV, i, &v[0], sizeof(v[0])), 0);
		CHECK_EQ(smart_dtx_read(x, CHK, i, &v[1], sizeof(v[1])), 1);
		CHECK_OK(smart_dtx_commit(x, wd.w));
		for (k = 0; k < 2; k++) {
			CHECK_OK(smart_dtx_status(x, k, &len));
			acct_bal(&v[k], i, len);
			CHECK_OK(smart_dtx_item_versions(x, k, &slot, &rv,
							 &wv));
			CHECK_MSG(rv == last_written(&all, slot),
				  "account %u (%s): version %" PRIu64 ", the "
				  "last committed wrote %" PRIu64, i,
				  k ? "checking" : "savings", rv,
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
		{ SB_MIX, 8, 700 }, { SB_MIX, 8, 700 } };	/* 11200 */

	smallbank(NULL, cfg, 2);
}

void test_adversarial(void)
{
	static const struct sb_thread_cfg cfg[] = {
		{ SB_MIX, 8, 200 }, { SB_MIX, 8, 200 },		/* 3200 */
		{ SB_WRITER, 1, 1000 }, { SB_READER, 1, 300 } };

	smallbank("seed=5,pause_pct=30", cfg, 4);
}
