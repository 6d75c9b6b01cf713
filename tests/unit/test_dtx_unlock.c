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
 *
 * Deterministic: one thread, shm, the hook "dtx.unlock.lost" losing one
 * commit's unlocks (as a failed QP flushes them); no timing.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/dtx.h"
#include "smart/smart.h"

#define BLADE_SIZE	(64u << 20)
#define T_ID		7u
#define NLOCK		40	/* per transaction: 2 x NLOCK > ITEMS_MAX */

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
						   &old[i], 8), i);
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
		CHECK_EQ(smart_dtx_read(y, T_ID, from + (uint64_t)i, &v[i],
					8), i);
	return smart_dtx_commit(y, w);
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
	struct smart_dtx_table t = { .id = T_ID, .value_size = 8,
				     .buckets = 64, .primary = -1 };
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
	CHECK_OK(lock_all(x, w1, NLOCK, 1));	/* home: w1, all landed */
	CHECK_OK(smart_dtx_stats(d, &st0));

	CHECK_OK(smart_ctx_set_hook(f.ctx, lose_fn, &lose));
	CHECK_OK(lock_all(x, w1, 0, 1));	/* its 40 unlocks lost */
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	r_other = lock_all(x, w2, NLOCK, 0);	/* 40 more, nothing written */
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	CHECK_EQ(read_all(y, w2, 0), SMART_EABORT);	/* still lost */
	r_home = lock_all(x, w1, NLOCK, 1);	/* home: all 40 released */
	CHECK_OK(smart_dtx_stats(d, &st));
	printf("full: 40 unlocks lost, then a commit of 40 locks writing "
	       "nothing on another worker: %s, released waited %" PRIu64
	       ", %u round trips (%u with nothing lost); home again: %s, "
	       "unlocks released again %" PRIu64 "\n",
	       smart_status_name(r_other),
	       st.unlocks_waited - st0.unlocks_waited, cost.round_trips,
	       cost0.round_trips,
	       smart_status_name(r_home),
	       st.unlocks_redone - st0.unlocks_redone);
	CHECK_OK(r_other);
	CHECK_EQ(st.unlocks_waited - st0.unlocks_waited, 1);
	CHECK_OK(r_home);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, NLOCK);
	CHECK_OK(read_all(y, w2, 0));
	CHECK_OK(read_all(y, w2, NLOCK));
	CHECK_OK(smart_dtx_txn_free(y, w2));
	CHECK_OK(smart_dtx_txn_free(x, w1));
	CHECK_OK(smart_dtx_close(d));
	CHECK_OK(smart_worker_destroy(w2));
	CHECK_OK(smart_worker_destroy(w1));
	fixture_stop(&f);
	smart_blade_destroy(b2);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv, (struct test_case[]){
		{ "full", test_full },
		{ 0 } });
}
