/*
 * test_dtx: helpers shared by the subjects (dtx_test.h): the world,
 * recording a transaction's items for the graph, statistics, loading and
 * running the shared workloads (bench/workloads/) with their values
 * checked whole.
 */
#include "dtx_test.h"

const uint16_t two_blades[2] = { 1, 2 };

void world_start(struct world *wd, const char *adv)
{
	const char *kv[] = { "shm_adversarial", adv, NULL };

	memset(wd, 0, sizeof(*wd));
	fixture_start(&wd->f, BLADE_SIZE, 1, adv ? kv : NULL);
	wd->b2 = fixture_add_blade(&wd->f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
}

void world_stop(struct world *wd)
{
	if (wd->d)
		CHECK_OK(smart_dtx_close(wd->d, NULL));
	CHECK_OK(smart_worker_destroy(wd->w));
	fixture_stop(&wd->f);
	smart_blade_destroy(wd->b2);
}

/* A config over both blades with one backup. */
void cfg_two(struct smart_dtx_config *c, const struct smart_dtx_table *t,
	     unsigned nt)
{
	smart_dtx_config_init(c);
	c->blades = two_blades;
	c->nblades = 2;
	c->replicas = 1;
	c->tables = t;
	c->ntables = nt;
}

/* Record the items of x's committed transaction in h. */
void record(struct dsg *h, const smart_dtx_txn_t *x, int nitems, uint64_t tag)
{
	uint64_t slot, rv, wv;
	int i;

	dsg_begin(h, tag);
	for (i = 0; i < nitems; i++) {
		CHECK_OK(smart_dtx_item_versions(x, i, &slot, &rv, &wv));
		dsg_item(h, slot, rv, wv);
	}
}

void print_stats(const char *what, const struct smart_dtx_stats *s)
{
	printf("%s: %" PRIu64 " commits, %" PRIu64 " aborts (%" PRIu64
	       " lock conflicts, %" PRIu64 " failed validations, %" PRIu64
	       " insert conflicts), cache %" PRIu64 " hits %" PRIu64
	       " misses, %" PRIu64 " torn reads retried\n",
	       what, s->commits, s->aborts, s->lock_conflicts,
	       s->validate_fails, s->insert_conflicts, s->cache_hits,
	       s->cache_misses, s->crc_retries);
}

void api_put_new(struct world *wd, smart_dtx_txn_t *x, uint32_t table,
		 uint64_t key, const void *val, size_t len)
{
	int i;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_insert(x, table, key, val, len);
	CHECK_GE(i, 0);
	CHECK_OK(smart_dtx_exec(x, wd->w));
	CHECK_OK(smart_dtx_status(x, i, NULL));
	CHECK_OK(smart_dtx_commit(x, wd->w));
}

/* FORD's SmallBank over `accounts` accounts with `bal` in every balance,
 * 256-byte values, a quarter of the accounts hot with half the picks. */
void sb_test_cfg(struct sb_cfg *c, unsigned accounts, int64_t bal)
{
	sb_cfg_init(c);
	c->accounts = accounts;
	c->hot = accounts / 4;
	c->hot_pct = 50;
	c->value_size = SB_VALUE;
	c->bal_min = c->bal_max = bal;
	c->seed = 0x5b;
	CHECK_OK(sb_prepare(c));
}

/* The n records r inserted by one transaction of x, recorded in h (may
 * be NULL) as tag. */
void load_unit(smart_dtx_txn_t *x, smart_worker_t *w, const struct wl_rec *r,
	       int n, struct dsg *h, uint64_t tag)
{
	int i;

	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < n; i++)
		CHECK_EQ(smart_dtx_insert(x, r[i].table, r[i].key, r[i].val,
					  r[i].len),
			 i);
	CHECK_OK(smart_dtx_commit(x, w));
	for (i = 0; i < n; i++)
		CHECK_OK(smart_dtx_status(x, i, NULL));
	if (h)
		record(h, x, n, tag);
}

/* The accounts 0..accounts-1, one transaction each, recorded in h (may
 * be NULL); the money is what c says. */
void sb_load(smart_dtx_t *d, smart_worker_t *w, const struct sb_cfg *c,
	     struct dsg *h)
{
	struct wl_rec r[2];
	smart_dtx_txn_t *x;
	int64_t money = 0;
	uint64_t k;

	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	for (k = 0; k < c->accounts; k++)
		load_unit(x, w, r, sb_unit(c, k, r, &money), h,
			  UINT64_C(0xffff) << 48 | k);
	CHECK_OK(smart_dtx_txn_free(x, w));
	CHECK_EQ(money, 2 * (int64_t)c->accounts * c->bal_min);
}

/* Every value t's attempts read was whole and every record that must
 * exist was there. */
void wl_whole(const struct wl_txn *t, const char *what)
{
	CHECK_MSG(!t->vfail,
		  "%s: %" PRIu64 " values wrong or missing, the "
		  "first table %u key %" PRIu64 " (a torn or foreign read)",
		  what, t->vfail, t->bad_table, t->bad_key);
}

/* One attempt of a SmallBank transaction, its values checked whole. */
int sb_once(struct wl_txn *t, const struct sb_cfg *c, int type,
	    const struct wl_params *p, struct wl_outcome *o)
{
	int rc;

	memset(o, 0, sizeof(*o));
	rc = sb_attempt(t, c, type, p, o);
	wl_whole(t, sb_types[type].label);
	return rc;
}

int sb_hook_fn(smart_worker_t *w, const char *point, void *arg)
{
	struct sb_hook *h = arg;
	unsigned k;

	if (strcmp(point, "dtx.exec.done"))
		return 0;
	atomic_fetch_add_explicit(&h->calls, 1, memory_order_relaxed);
	k = atomic_fetch_add_explicit(&h->n, 1, memory_order_relaxed) % 4;
	while (k--)
		smart_task_yield(w);
	return 0;
}

/* After an abort: yield 1..2^(tries+1) times (at most 256), at random.  The
 * holder of the lock in the way may be a task of this worker, and on shm
 * a sync need not yield, so a retry at once could starve it; and tasks of
 * one worker run in a fixed order, so equal waits could repeat one
 * interleaving forever. */
void backoff(smart_worker_t *w, smart_rng_t *r, unsigned tries)
{
	uint64_t n = 1 + smart_rng_below(r, tries < 7 ? 2u << tries : 256);

	while (n--)
		smart_task_yield(w);
}
