/*
 * test_dtx: helpers shared by the subjects (dtx_test.h): the world,
 * recording a transaction's items for the graph, statistics, SmallBank's
 * accounts, tables, load and one transaction of each shape.
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
void cfg_two(struct smart_dtx_config *c,
	     const struct smart_dtx_table *t, unsigned nt)
{
	smart_dtx_config_init(c);
	c->blades = two_blades;
	c->nblades = 2;
	c->replicas = 1;
	c->tables = t;
	c->ntables = nt;
}

/* Record the items of x's committed transaction in h. */
void record(struct dsg *h, const smart_dtx_txn_t *x, int nitems,
	    uint64_t tag)
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
	       " misses, %" PRIu64 " torn reads retried\n", what, s->commits,
	       s->aborts, s->lock_conflicts, s->validate_fails,
	       s->insert_conflicts, s->cache_hits, s->cache_misses,
	       s->crc_retries);
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

const char *const sb_name[SB_TYPES] = {
	"Amalgamate", "Balance", "DepositChecking", "SendPayment",
	"TransactSaving", "WriteCheck" };

uint64_t acct_word(uint64_t key, int64_t bal, unsigned i)
{
	return (uint64_t)bal ^ (key * 0x9e3779b97f4a7c15ull + i * 0x51ull);
}

void acct_make(struct acct *a, uint64_t key, int64_t bal)
{
	unsigned i;

	a->w[0] = bal;
	for (i = 1; i < ACCT_WORDS; i++)
		a->w[i] = (int64_t)acct_word(key, bal, i);
}

/* The balance of a value read for key; fails on a torn or foreign one. */
int64_t acct_bal(const struct acct *a, uint64_t key, size_t len)
{
	unsigned i;

	CHECK_MSG(len == sizeof(*a), "account %" PRIu64 ": length %zu", key,
		  len);
	for (i = 1; i < ACCT_WORDS; i++)
		CHECK_MSG((uint64_t)a->w[i] == acct_word(key, a->w[0], i),
			  "account %" PRIu64 ": word %u of balance %" PRId64
			  " is %#" PRIx64 ", not %#" PRIx64 " (a torn read)",
			  key, i, a->w[0], (uint64_t)a->w[i],
			  acct_word(key, a->w[0], i));
	return a->w[0];
}

/* Exec, and the balance of each item after it (statuses must be 0). */
int sb_exec(smart_dtx_txn_t *x, smart_worker_t *w, const int *it,
	    const uint64_t *keys, struct acct *v, int64_t *bal, int n)
{
	size_t len;
	int rc = smart_dtx_exec(x, w), i;

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		CHECK_OK(smart_dtx_status(x, it[i], &len));
		bal[i] = acct_bal(&v[i], keys[i], len);
	}
	return 0;
}

int sb_write(smart_dtx_txn_t *x, int item, uint64_t key, int64_t bal)
{
	struct acct v;

	acct_make(&v, key, bal);
	return smart_dtx_write(x, item, &v, sizeof(v));
}

void sb_gap(smart_worker_t *w, const struct sb_args *p)
{
	uint64_t c0 = atomic_load_explicit(p->commits, memory_order_relaxed);
	unsigned i;

	for (i = 0; i < 256 && atomic_load_explicit(p->commits,
			memory_order_relaxed) - c0 < p->split; i++)
		smart_task_yield(w);
}

/* One attempt of transaction p: 0 committed (*delta: the money it added,
 * *nitems its items), SMART_EABORT, or SB_USER_ABORT. */
int sb_run(smart_dtx_txn_t *x, smart_worker_t *w,
	   const struct sb_args *p, int64_t *delta, int *nitems)
{
	struct acct v[3];
	int64_t bal[3], total;
	uint64_t keys[3];
	int it[3], rc, n = 0;

	*delta = 0;
	CHECK_OK(smart_dtx_begin(x));
	switch (p->type) {
	case SB_BALANCE:
		keys[0] = keys[1] = p->a;
		it[0] = smart_dtx_read(x, SAV, p->a, &v[0], sizeof(v[0]));
		if (p->split) {
			CHECK_EQ(it[0], 0);
			rc = sb_exec(x, w, it, keys, v, bal, 1);
			if (rc)
				return rc;
			sb_gap(w, p);
		}
		it[1] = smart_dtx_read(x, CHK, p->a, &v[1], sizeof(v[1]));
		CHECK(it[0] == 0 && it[1] == 1);
		rc = smart_dtx_commit(x, w);
		/* a value found is whole, whether its transaction commits
		 * or not (a torn one would fail validation but for luck) */
		for (n = 0; n < 2; n++) {
			size_t len;

			if (smart_dtx_status(x, it[n], &len) == 0)
				acct_bal(&v[n], p->a, len);
			else
				CHECK(rc);
		}
		if (rc)
			return rc;
		*nitems = 2;
		return 0;
	case SB_DEPOSIT:
	case SB_TRANSACT:
		keys[0] = p->a;
		it[0] = smart_dtx_read_for_update(x, p->type == SB_DEPOSIT ?
						  CHK : SAV, p->a, &v[0],
						  sizeof(v[0]));
		n = 1;
		rc = sb_exec(x, w, it, keys, v, bal, n);
		if (rc)
			return rc;
		CHECK_OK(sb_write(x, it[0], p->a, bal[0] + p->amt));
		*delta = p->amt;
		break;
	case SB_AMALGAMATE:
		keys[0] = keys[1] = p->a;
		keys[2] = p->b;
		it[0] = smart_dtx_read_for_update(x, SAV, p->a, &v[0],
						  sizeof(v[0]));
		it[1] = smart_dtx_read_for_update(x, CHK, p->a, &v[1],
						  sizeof(v[1]));
		it[2] = smart_dtx_read_for_update(x, CHK, p->b, &v[2],
						  sizeof(v[2]));
		n = 3;
		rc = sb_exec(x, w, it, keys, v, bal, n);
		if (rc)
			return rc;
		total = bal[0] + bal[1];
		CHECK_OK(sb_write(x, it[0], p->a, 0));
		CHECK_OK(sb_write(x, it[1], p->a, 0));
		CHECK_OK(sb_write(x, it[2], p->b, bal[2] + total));
		break;
	case SB_WRITECHECK:
		keys[0] = keys[1] = p->a;
		it[0] = smart_dtx_read(x, SAV, p->a, &v[0], sizeof(v[0]));
		it[1] = smart_dtx_read_for_update(x, CHK, p->a, &v[1],
						  sizeof(v[1]));
		n = 2;
		rc = sb_exec(x, w, it, keys, v, bal, n);
		if (rc)
			return rc;
		*delta = bal[0] + bal[1] < p->amt ? -(p->amt + 1) : -p->amt;
		CHECK_OK(sb_write(x, it[1], p->a, bal[1] + *delta));
		break;
	case SB_SEND:
		keys[0] = p->a;
		keys[1] = p->b;
		it[0] = smart_dtx_read_for_update(x, CHK, p->a, &v[0],
						  sizeof(v[0]));
		it[1] = smart_dtx_read_for_update(x, CHK, p->b, &v[1],
						  sizeof(v[1]));
		n = 2;
		rc = sb_exec(x, w, it, keys, v, bal, n);
		if (rc)
			return rc;
		if (bal[0] < p->amt) {
			CHECK_OK(smart_dtx_abort(x, w));
			return SB_USER_ABORT;
		}
		CHECK_OK(sb_write(x, it[0], p->a, bal[0] - p->amt));
		CHECK_OK(sb_write(x, it[1], p->b, bal[1] + p->amt));
		break;
	default:
		TEST_FAIL("type %d", p->type);
	}
	rc = smart_dtx_commit(x, w);
	if (rc) {
		*delta = 0;
		return rc;
	}
	*nitems = n;
	return 0;
}

/* The accounts 1..n, each with `bal` in savings and in checking, one
 * transaction each, recorded in h (may be NULL). */
void sb_load(smart_dtx_t *d, smart_worker_t *w, unsigned n,
	     int64_t bal, struct dsg *h)
{
	smart_dtx_txn_t *x;
	struct acct v;
	uint64_t k;

	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	for (k = 1; k <= n; k++) {
		acct_make(&v, k, bal);
		CHECK_OK(smart_dtx_begin(x));
		CHECK_EQ(smart_dtx_insert(x, SAV, k, &v, sizeof(v)), 0);
		CHECK_EQ(smart_dtx_insert(x, CHK, k, &v, sizeof(v)), 1);
		CHECK_OK(smart_dtx_exec(x, w));
		CHECK_OK(smart_dtx_status(x, 0, NULL));
		CHECK_OK(smart_dtx_status(x, 1, NULL));
		CHECK_OK(smart_dtx_commit(x, w));
		if (h)
			record(h, x, 2, UINT64_C(0xffff) << 48 | k);
	}
	CHECK_OK(smart_dtx_txn_free(x, w));
}

void sb_tables(struct smart_dtx_table t[2], unsigned buckets)
{
	t[0] = (struct smart_dtx_table){ .id = SAV,
		.value_size = sizeof(struct acct), .buckets = buckets,
		.primary = -1 };
	t[1] = t[0];
	t[1].id = CHK;
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
