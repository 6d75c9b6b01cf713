/*
 * Smart-DTX's unlocks not waited for (src/ds/dtx/dtx_unlock.c, docs/dtx.md
 * §3), where test_dtx's unlock_lost cases need more records than its small
 * worlds hold.
 *
 * Cases:
 *   full   an object remembers a lost commit's 40 unlocks (its worker
 *          alive, so another cannot release them), then commits on another
 *          worker a transaction locking 40 more records and writing
 *          nothing: 80 do not fit beside each other, so that commit
 *          releases its locks the waited way (unlocks_waited) and
 *          keeps the 40 remembered; back on its own worker the object
 *          releases all 40 again, and every record reads.
 *   edge   the room check at its edge: 40 lost unlocks remembered, then a
 *          commit of 24 locks writing nothing on another worker fits
 *          exactly (64: not waited, the round trips of one with nothing
 *          lost); the next, of 25 locks, sees those 24 landed and does
 *          not fit beside the 40 (waited); home again all 40 are
 *          released and every record reads.
 *   mixed  the remembered set holding the lost unlocks of three workers:
 *          wa's (then destroyed), wc's (alive) and wb's (where the object
 *          runs next).  On wb, wa's and wb's are released again, wc's are
 *          kept (a writing commit answers SMART_EBUSY, readers of those
 *          records abort); on wc the rest are released; every record reads
 *          and the sum is what was written.
 *   foreign  an object used with a worker of another ctx (whose indexes
 *          are another numbering): refused with SMART_EINVAL.  Before, a
 *          lost unlock posted on ctx2's live worker 1 was released by a CAS
 *          on ctx1's worker 0 because ctx1's worker 1 was destroyed: the
 *          poster's unlock could still land over a later holder's lock.
 *   inflight  an unlock held in flight on its worker wa (the RNIC model's
 *          20-ms round trip: shm runs a WR at a poll of its worker once it
 *          is due, and wa is not polled again): on wb a writing commit
 *          answers SMART_EBUSY with no CAS; wa destroyed (which drains
 *          it), wb sees both unlocks landed, still no CAS, and the sum is
 *          exact.  Should wa's own poll in the commit run the unlock (a
 *          20-ms stall before it), the attempt is repeated, up to 5.
 *
 * Deterministic: one thread, shm, the hook "dtx.unlock.lost" losing one
 * commit's unlocks (as a failed QP flushes them); no timing but inflight's
 * model round trip, whose only effect on a stall is another attempt.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/dtx.h"
#include "smart/smart.h"

#define BLADE_SIZE (64u << 20)
#define T_ID	   7u
#define NLOCK	   40 /* per transaction: 2 x NLOCK > ITEMS_MAX */

_Static_assert(2 * NLOCK > SMART_DTX_ITEMS_MAX && NLOCK <= SMART_DTX_ITEMS_MAX,
	       "two transactions' locks must not fit beside each other");

static const uint16_t blades[2] = { 1, 2 };

/* Loses the unlocks of one commit while *arg is set. */
static int lose_fn(smart_worker_t *w, const char *point, void *arg)
{
	int *lose = arg;

	(void)w;
	if (strcmp(point, "dtx.unlock.lost") || !*lose)
		return 0;
	*lose = 0;
	return SMART_EQP;
}

/* Lock keys [from, from + NLOCK) for update; write the first when asked. */
static int lock_all(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t from,
		    int write)
{
	int64_t old[NLOCK], v = 1;
	int i;

	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < NLOCK; i++)
		CHECK_EQ(smart_dtx_read_for_update(x, T_ID, from + (uint64_t)i,
						   &old[i], 8),
			 i);
	CHECK_OK(smart_dtx_exec(x, w));
	if (write)
		CHECK_OK(smart_dtx_write(x, 0, &v, 8));
	return smart_dtx_commit(x, w);
}

/* Read keys [from, from + NLOCK) in one transaction. */
static int read_all(smart_dtx_txn_t *y, smart_worker_t *w, uint64_t from)
{
	int64_t v[NLOCK];
	int i;

	CHECK_OK(smart_dtx_begin(y));
	for (i = 0; i < NLOCK; i++)
		CHECK_EQ(smart_dtx_read(y, T_ID, from + (uint64_t)i, &v[i], 8),
			 i);
	return smart_dtx_commit(y, w);
}

/* Lock keys [from, from + n) for update; when asked, write each key's
 * value v (else write nothing). */
static int lock_n(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t from, int n,
		  int64_t v, int write)
{
	int64_t old[SMART_DTX_ITEMS_MAX];
	int i, rc;

	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < n; i++)
		CHECK_EQ(smart_dtx_read_for_update(x, T_ID, from + (uint64_t)i,
						   &old[i], 8),
			 i);
	rc = smart_dtx_exec(x, w);
	if (rc)
		return rc;
	for (i = 0; write && i < n; i++)
		CHECK_OK(smart_dtx_write(x, i, &v, 8));
	return smart_dtx_commit(x, w);
}

/* Read keys [from, from + n) in one transaction; their sum in *sum. */
static int read_n(smart_dtx_txn_t *y, smart_worker_t *w, uint64_t from, int n,
		  int64_t *sum)
{
	int64_t v[SMART_DTX_ITEMS_MAX];
	int i, rc;

	CHECK_OK(smart_dtx_begin(y));
	for (i = 0; i < n; i++)
		CHECK_EQ(smart_dtx_read(y, T_ID, from + (uint64_t)i, &v[i], 8),
			 i);
	rc = smart_dtx_commit(y, w);
	for (*sum = 0, i = 0; !rc && i < n; i++)
		*sum += v[i];
	return rc;
}

static void load(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t n)
{
	int64_t v = 5;
	uint64_t k;

	for (k = 0; k < n; k++) {
		CHECK_OK(smart_dtx_begin(x));
		CHECK_GE(smart_dtx_insert(x, T_ID, k, &v, 8), 0);
		CHECK_OK(smart_dtx_commit(x, w));
	}
}

static void test_full(void)
{
	struct smart_dtx_table t = {
		.id = T_ID, .value_size = 8, .buckets = 64, .primary = -1
	};
	struct smart_dtx_config c;
	struct smart_dtx_stats st0, st;
	struct smart_dtx_cost cost, cost0;
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w1, *w2;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	int lose = 1, r_other, r_home;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w1));
	CHECK_OK(smart_worker_create(f.ctx, &w2));
	smart_dtx_config_init(&c);
	c.blades = blades;
	c.nblades = 2;
	c.replicas = 1;
	c.tables = &t;
	c.ntables = 1;
	CHECK_OK(smart_dtx_create(w1, 1, "unlock_full", &c, &d));
	CHECK_OK(smart_dtx_txn_new(d, w1, &x));
	CHECK_OK(smart_dtx_txn_new(d, w2, &y));
	load(x, w1, 2 * NLOCK);
	/* the same commit with nothing remembered: its unlocks not waited */
	CHECK_OK(lock_all(x, w2, NLOCK, 0));
	CHECK_OK(smart_dtx_last_cost(x, &cost0));
	CHECK_OK(lock_all(x, w1, NLOCK, 1)); /* home: w1, all landed */
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));

	CHECK_OK(smart_ctx_set_hook(f.ctx, lose_fn, &lose));
	CHECK_OK(lock_all(x, w1, 0, 1)); /* its 40 unlocks lost */
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	r_other = lock_all(x, w2, NLOCK, 0); /* 40 more, nothing written */
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	CHECK_EQ(read_all(y, w2, 0), SMART_EABORT); /* still lost */
	r_home = lock_all(x, w1, NLOCK, 1);	    /* home: all 40 released */
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	printf("full: 40 unlocks lost, then a commit of 40 locks writing "
	       "nothing on another worker: %s, released waited %" PRIu64
	       ", %u round trips (%u with nothing lost); home again: %s, "
	       "unlocks released again %" PRIu64 "\n",
	       smart_status_name(r_other),
	       st.unlocks_waited - st0.unlocks_waited, cost.round_trips,
	       cost0.round_trips, smart_status_name(r_home),
	       st.unlocks_redone - st0.unlocks_redone);
	CHECK_OK(r_other);
	CHECK_EQ(st.unlocks_waited - st0.unlocks_waited, 1);
	CHECK_OK(r_home);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, NLOCK);
	CHECK_OK(read_all(y, w2, 0));
	CHECK_OK(read_all(y, w2, NLOCK));
	CHECK_OK(smart_dtx_txn_free(y, w2));
	CHECK_OK(smart_dtx_txn_free(x, w1));
	CHECK_OK(smart_dtx_close(d, w1));
	CHECK_OK(smart_worker_destroy(w2));
	CHECK_OK(smart_worker_destroy(w1));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

/* The database of these cases over blades 1 and 2 (one backup). */
static void db_up(smart_worker_t *w, const char *name, smart_dtx_t **d)
{
	static const struct smart_dtx_table t = {
		.id = T_ID, .value_size = 8, .buckets = 64, .primary = -1
	};
	struct smart_dtx_config c;

	smart_dtx_config_init(&c);
	c.blades = blades;
	c.nblades = 2;
	c.replicas = 1;
	c.tables = &t;
	c.ntables = 1;
	CHECK_OK(smart_dtx_create(w, 1, name, &c, d));
}

#define EDGE_HELD (SMART_DTX_ITEMS_MAX - NLOCK) /* 24: fills it exactly */

static void test_edge(void)
{
	struct smart_dtx_stats st0, st1, st;
	struct smart_dtx_cost cost0, cost_fit;
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w1, *w2;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	int64_t sum;
	int lose = 1, r_fit, r_over, r_home;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w1));
	CHECK_OK(smart_worker_create(f.ctx, &w2));
	db_up(w1, "unlock_edge", &d);
	CHECK_OK(smart_dtx_txn_new(d, w1, &x));
	CHECK_OK(smart_dtx_txn_new(d, w2, &y));
	load(x, w1, 2 * NLOCK);
	CHECK_OK(lock_n(x, w2, NLOCK, EDGE_HELD, 0, 0)); /* nothing lost */
	CHECK_OK(smart_dtx_last_cost(x, &cost0));
	CHECK_OK(lock_n(x, w1, NLOCK, EDGE_HELD, 0, 0)); /* home: w1 */
	CHECK_OK(smart_dtx_abort(x, w1));		 /* seen landed */

	CHECK_OK(smart_ctx_set_hook(f.ctx, lose_fn, &lose));
	CHECK_OK(lock_all(x, w1, 0, 1)); /* 40 unlocks lost */
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r_fit = lock_n(x, w2, NLOCK, EDGE_HELD, 0, 0); /* 40 + 24 = 64 */
	CHECK_OK(smart_dtx_last_cost(x, &cost_fit));
	CHECK_OK(smart_dtx_stats(d, NULL, &st1));
	r_over = lock_n(x, w2, NLOCK, EDGE_HELD + 1, 0, 0); /* 65 */
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	/* the 25's first round saw the 24 landed: 40 + 25 do not fit */
	printf("edge: 40 lost unlocks remembered; 24 locks beside them (64): "
	       "%s, waited %" PRIu64 ", %u round trips (%u with nothing "
	       "lost); 25 (40 + 25 = 65, the 24 seen landed): %s, waited %" PRIu64
	       "\n",
	       smart_status_name(r_fit),
	       st1.unlocks_waited - st0.unlocks_waited, cost_fit.round_trips,
	       cost0.round_trips, smart_status_name(r_over),
	       st.unlocks_waited - st1.unlocks_waited);
	CHECK_EQ(st.unlocks_checked - st1.unlocks_checked, EDGE_HELD);
	CHECK_OK(r_fit);
	CHECK_EQ(st1.unlocks_waited - st0.unlocks_waited, 0);
	CHECK_EQ(cost_fit.round_trips, cost0.round_trips);
	CHECK_OK(r_over);
	CHECK_EQ(st.unlocks_waited - st1.unlocks_waited, 1);
	CHECK_EQ(read_n(y, w2, 0, NLOCK, &sum), SMART_EABORT);
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r_home = smart_dtx_abort(x, w1); /* home: the 40 released */
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	printf("edge: home again: %s, released again %" PRIu64 "\n",
	       smart_status_name(r_home),
	       st.unlocks_redone - st0.unlocks_redone);
	CHECK_OK(r_home);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, NLOCK);
	CHECK_OK(read_n(y, w2, 0, NLOCK, &sum));
	CHECK_EQ(sum, 5 * (NLOCK - 1) + 1);
	CHECK_OK(read_n(y, w2, NLOCK, NLOCK, &sum));
	CHECK_OK(smart_dtx_txn_free(y, w2));
	CHECK_OK(smart_dtx_txn_free(x, w1));
	CHECK_OK(smart_dtx_close(d, w1));
	CHECK_OK(smart_worker_destroy(w2));
	CHECK_OK(smart_worker_destroy(w1));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

#define MIX 8 /* locks per worker */

static void test_mixed(void)
{
	struct smart_dtx_stats st0, st1, st;
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w1, *wa, *wb, *wc;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	int64_t sum, total = 0;
	int lose, r_b, r_c, ab_a, ab_b, ab_c, k;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w1));
	CHECK_OK(smart_worker_create(f.ctx, &wa));
	CHECK_OK(smart_worker_create(f.ctx, &wb));
	CHECK_OK(smart_worker_create(f.ctx, &wc));
	db_up(w1, "unlock_mixed", &d);
	CHECK_OK(smart_dtx_txn_new(d, w1, &x));
	CHECK_OK(smart_dtx_txn_new(d, w1, &y));
	load(x, w1, 5 * MIX);

	/* wa: a writing commit (4 each), wc and wb: locks, nothing written */
	CHECK_OK(smart_ctx_set_hook(f.ctx, lose_fn, &lose));
	lose = 1;
	CHECK_OK(lock_n(x, wa, 0, MIX, 4, 1));
	lose = 1;
	CHECK_OK(lock_n(x, wc, MIX, MIX, 0, 0));
	lose = 1;
	CHECK_OK(lock_n(x, wb, 2 * MIX, MIX, 0, 0));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_OK(smart_worker_destroy(wa)); /* its thread ended */

	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r_b = lock_n(x, wb, 3 * MIX, MIX, 6, 1); /* wc's in the way */
	CHECK_OK(smart_dtx_stats(d, NULL, &st1));
	ab_a = read_n(y, w1, 0, MIX, &sum) == SMART_EABORT;
	ab_c = read_n(y, w1, MIX, MIX, &sum) == SMART_EABORT;
	ab_b = read_n(y, w1, 2 * MIX, MIX, &sum) == SMART_EABORT;
	r_c = lock_n(x, wc, 4 * MIX, MIX, 7, 1); /* wc: all released */
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	printf("mixed: lost unlocks of wa (destroyed), wc (alive), wb; on wb: "
	       "write %s, released again %" PRIu64 ", reads aborted wa %d wc "
	       "%d wb %d; on wc: write %s, released again %" PRIu64 "\n",
	       smart_status_name(r_b), st1.unlocks_redone - st0.unlocks_redone,
	       ab_a, ab_c, ab_b, smart_status_name(r_c),
	       st.unlocks_redone - st1.unlocks_redone);
	CHECK_EQ(r_b, SMART_EBUSY);
	CHECK_EQ(st1.unlocks_redone - st0.unlocks_redone, 2 * MIX);
	CHECK_EQ(ab_a, 0);
	CHECK_EQ(ab_c, 1);
	CHECK_EQ(ab_b, 0);
	CHECK_OK(r_c);
	CHECK_EQ(st.unlocks_redone - st1.unlocks_redone, MIX);
	for (k = 0; k < 5; k++) {
		CHECK_OK(read_n(y, w1, (uint64_t)k * MIX, MIX, &sum));
		total += sum;
	}
	/* 5 per key loaded; wa wrote 4, wb's write aborted, wc wrote 7 */
	CHECK_EQ(total, MIX * (4 + 5 + 5 + 5 + 7));
	CHECK_OK(smart_dtx_txn_free(y, w1));
	CHECK_OK(smart_dtx_txn_free(x, wc));
	CHECK_OK(smart_dtx_close(d, w1));
	CHECK_OK(smart_worker_destroy(wb));
	CHECK_OK(smart_worker_destroy(wc));
	CHECK_OK(smart_worker_destroy(w1));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

static void test_foreign(void)
{
	struct smart_dtx_stats st0, st;
	struct fixture f;
	smart_blade_t *b2;
	smart_ctx_t *c2;
	smart_worker_t *w0, *w1, *v0, *v1;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	int64_t sum;
	uint16_t id;
	int lose = 1, r_post, r_other;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	c2 = fixture_ctx_at(smart_blade_address(f.blade), 1);
	CHECK_OK(smart_ctx_connect(c2, smart_blade_address(b2), &id));
	CHECK_EQ(id, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w0)); /* ctx1's 0 */
	CHECK_OK(smart_worker_create(f.ctx, &w1)); /* ctx1's 1 */
	CHECK_OK(smart_worker_create(c2, &v0));	   /* ctx2's 0 */
	CHECK_OK(smart_worker_create(c2, &v1));	   /* ctx2's 1 */
	CHECK_EQ(smart_worker_index(v1), smart_worker_index(w1));
	db_up(w0, "unlock_foreign", &d);
	CHECK_OK(smart_dtx_txn_new(d, w0, &x));
	CHECK_OK(smart_dtx_txn_new(d, w0, &y));
	load(x, w0, 2 * MIX);
	CHECK_OK(smart_worker_destroy(w1)); /* ctx1's 1 is gone */

	/* x on ctx2's live worker 1; the hook of its ctx loses the unlocks */
	CHECK_OK(smart_ctx_set_hook(c2, lose_fn, &lose));
	r_post = lock_n(x, v1, 0, MIX, 4, 1);
	CHECK_OK(smart_ctx_set_hook(c2, NULL, NULL));
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r_other = lock_n(x, w0, MIX, MIX, 6, 1);
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	printf("foreign: a commit on a worker of another ctx: %s; then on "
	       "ctx1's worker 0: %s, unlocks of ctx2's live worker 1 released "
	       "again %" PRIu64 "\n",
	       smart_status_name(r_post), smart_status_name(r_other),
	       st.unlocks_redone - st0.unlocks_redone);
	CHECK_EQ(r_post, SMART_EINVAL);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, 0);
	CHECK_EQ(smart_dtx_txn_new(d, v0, &y), SMART_EINVAL);
	CHECK_EQ(smart_dtx_abort(x, v0), SMART_EINVAL);
	CHECK_EQ(smart_dtx_txn_free(x, v0), SMART_EINVAL);
	CHECK_OK(r_other);
	CHECK_OK(read_n(y, w0, 0, 2 * MIX, &sum));
	CHECK_EQ(sum, MIX * 5 + MIX * 6);
	CHECK_OK(smart_dtx_txn_free(y, w0));
	CHECK_OK(smart_dtx_txn_free(x, w0));
	CHECK_OK(smart_dtx_close(d, w0));
	CHECK_OK(smart_worker_destroy(v1));
	CHECK_OK(smart_worker_destroy(v0));
	CHECK_OK(smart_worker_destroy(w0));
	CHECK_OK(smart_ctx_destroy(c2));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

#define IF_TRIES 5 /* attempts at holding an unlock in flight */

/* One attempt of inflight at keys [4k, 4k + 4): 1 when wa's unlocks were
 * still in flight when x ran on wb (the path the case exists for). */
static int inflight_once(struct fixture *f, smart_dtx_t *d, smart_dtx_txn_t *x,
			 smart_worker_t *wb, int k)
{
	struct smart_dtx_stats st0, st1, st;
	smart_worker_t *wa;
	uint64_t base = 4u * (uint64_t)k;
	int r1, r2;

	CHECK_OK(smart_worker_create(f->ctx, &wa));
	CHECK_OK(lock_n(x, wa, base, 2, 4, 1)); /* its unlocks: in flight */
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r1 = lock_n(x, wb, base + 2, 2, 6, 1);
	CHECK_OK(smart_dtx_stats(d, NULL, &st1));
	CHECK_EQ(st1.unlocks_redone - st0.unlocks_redone, 0); /* no CAS */
	CHECK_OK(smart_worker_destroy(wa));		      /* drains them */
	r2 = r1 ? lock_n(x, wb, base + 2, 2, 6, 1) : 0;
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	printf("inflight: on wb with wa's unlocks %s: %s (seen landed %" PRIu64
	       ", released again %" PRIu64 "); wa destroyed, on wb: %s (seen "
	       "landed %" PRIu64 ", released again %" PRIu64 ")\n",
	       r1 ? "in flight" : "landed early", smart_status_name(r1),
	       st1.unlocks_checked - st0.unlocks_checked,
	       st1.unlocks_redone - st0.unlocks_redone, smart_status_name(r2),
	       st.unlocks_checked - st1.unlocks_checked,
	       st.unlocks_redone - st1.unlocks_redone);
	CHECK_OK(r2);
	CHECK_EQ(st.unlocks_redone - st1.unlocks_redone, 0);
	CHECK_OK(smart_dtx_abort(x, wb)); /* wb's own: seen landed */
	if (!r1)
		return 0;
	CHECK_EQ(r1, SMART_EBUSY);
	CHECK_EQ(st1.unlocks_checked - st0.unlocks_checked, 0);
	CHECK_EQ(st.unlocks_checked - st1.unlocks_checked, 2);
	return 1;
}

static void test_inflight(void)
{
	static const char *const kv[] = { "nic_model", "rtt_ns=20000000",
					  NULL };
	struct fixture f;
	smart_blade_t *b2;
	smart_worker_t *w1, *wb;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	int64_t sum;
	int k, taken = 0;

	fixture_start(&f, BLADE_SIZE, 1, kv);
	b2 = fixture_add_blade(&f, BLADE_SIZE, 2);
	CHECK_OK(smart_worker_create(f.ctx, &w1));
	CHECK_OK(smart_worker_create(f.ctx, &wb));
	db_up(w1, "unlock_inflight", &d);
	CHECK_OK(smart_dtx_txn_new(d, w1, &x));
	CHECK_OK(smart_dtx_txn_new(d, w1, &y));
	load(x, w1, 4 * IF_TRIES);
	CHECK_OK(smart_dtx_abort(x, w1));
	for (k = 0; k < IF_TRIES && !taken; k++)
		taken = inflight_once(&f, d, x, wb, k);
	CHECK_OK(read_n(y, w1, 0, 4 * k, &sum));
	printf("inflight: the path taken in %d attempt(s); sum %lld "
	       "(expected %d)\n",
	       k, (long long)sum, 20 * k);
	CHECK(taken);
	CHECK_EQ(sum, 20 * k);
	CHECK_OK(smart_dtx_txn_free(y, w1));
	CHECK_OK(smart_dtx_txn_free(x, wb));
	CHECK_OK(smart_dtx_close(d, w1));
	CHECK_OK(smart_worker_destroy(wb));
	CHECK_OK(smart_worker_destroy(w1));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){ { "full", test_full },
					       { "edge", test_edge },
					       { "mixed", test_mixed },
					       { "foreign", test_foreign },
					       { "inflight", test_inflight },
					       { 0 } });
}
