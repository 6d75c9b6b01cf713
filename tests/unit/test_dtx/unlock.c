/*
 * test_dtx, a commit's unlocks lost (as a failed QP flushes them): the
 * record stays locked, the object posts no log elsewhere, its own worker
 * releases it; the lock once that worker is gone; the round trips a
 * locking commit pays after a lost unlock.
 */
#include "dtx_test.h"

/* ==== unlock_lost: a commit's unlocks lost, as a failed QP flushes them === */

/* The hook loses the unlocks of one commit (its "dtx.unlock.lost" answers
 * non-zero): they are remembered but never posted, as when their QP fails
 * and flushes them.  Record 1 stays locked by x, a live client: y's read
 * aborts.  x on another worker cannot tell a lost unlock from one in
 * flight there, so a writing transaction must not post its log: EBUSY.
 * Back on its worker, the READ-back riding the next exec round finds our
 * stamp on the QP that would have carried the unlock, so it will never
 * land: x releases it again, and y reads record 1. */
static int ul_hook_fn(smart_worker_t *w, const char *point, void *arg)
{
	int *lose = arg;

	(void)w;
	if (strcmp(point, "dtx.unlock.lost") || !*lose)
		return 0;
	*lose = 0;
	return SMART_EQP;
}

static int ul_write(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t key,
		    int64_t v)
{
	int64_t old;
	int i;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_SMALL, key, &old, 8);
	CHECK_GE(i, 0);
	CHECK_OK(smart_dtx_exec(x, w));
	CHECK_OK(smart_dtx_write(x, i, &v, 8));
	return smart_dtx_commit(x, w);
}

static int ul_read(smart_dtx_txn_t *y, smart_worker_t *w, int64_t *v)
{
	CHECK_OK(smart_dtx_begin(y));
	CHECK_EQ(smart_dtx_read(y, T_SMALL, 1, v, 8), 0);
	return smart_dtx_commit(y, w);
}

void test_unlock_lost(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 4, .primary = -1
	};
	struct smart_dtx_config c;
	struct smart_dtx_stats st0, st;
	struct world wd;
	smart_worker_t *w2;
	smart_dtx_txn_t *x, *y;
	int64_t v = 5;
	int lose = 1, r_lost, c_other, r_after;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "unlock_lost", &c, &wd.d));
	CHECK_OK(smart_worker_create(wd.f.ctx, &w2));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, w2, &y));
	api_put_new(&wd, x, T_SMALL, 1, &v, 8);
	api_put_new(&wd, x, T_SMALL, 2, &v, 8);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));

	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, ul_hook_fn, &lose));
	CHECK_OK(ul_write(x, wd.w, 1, 6)); /* unlocks lost */
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	r_lost = ul_read(y, w2, &v);
	c_other = ul_write(x, w2, 2, 7);   /* x on w2 */
	CHECK_OK(ul_write(x, wd.w, 2, 8)); /* x home again */
	r_after = ul_read(y, w2, &v);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("unlock_lost: y's read with the unlock lost: %s; x's write on "
	       "another worker: %s; on its own: unlocks released again %" PRIu64
	       ", checked %" PRIu64 "; y's read then: %s, %" PRId64 "\n",
	       smart_status_name(r_lost), smart_status_name(c_other),
	       st.unlocks_redone - st0.unlocks_redone,
	       st.unlocks_checked - st0.unlocks_checked,
	       smart_status_name(r_after), v);
	CHECK_EQ(r_lost, SMART_EABORT);
	CHECK_EQ(c_other, SMART_EBUSY);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, 1);
	CHECK_OK(r_after);
	CHECK_EQ(v, 6);
	CHECK_OK(smart_dtx_txn_free(y, w2));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_worker_destroy(w2));
	world_stop(&wd);
}

/* ==== unlock_lost_gone: a lost unlock whose worker is destroyed ========= */

/* x's unlocks are lost on worker wa (as its QP failing flushes them), then
 * wa is destroyed (its thread ended; smart_worker_destroy drains it).
 * Nothing of a destroyed worker lands any more, so the READ-back riding
 * x's next exec round on w2 finds the stamp and w2 releases it by a CAS
 * (dtx_unlock.c): x writes on w2, y reads record 1.  Before the fix only
 * wa could release it: 10 of 10 writes SMART_EBUSY, 10 of 10 reads
 * SMART_EABORT, txn_free SMART_EBUSY (the ctx tainted), the lock held
 * while the ctx lived (mutant DTX_UNLOCK_GONE_KEPT). */
void test_unlock_lost_gone(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 4, .primary = -1
	};
	struct smart_dtx_config c;
	struct smart_dtx_stats st0, st;
	struct world wd;
	smart_worker_t *wa, *w2;
	smart_dtx_txn_t *x, *y;
	int64_t v = 5;
	int lose = 1, i, busy = 0, aborted = 0, r_free, r_after;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "unlock_lost_gone", &c, &wd.d));
	CHECK_OK(smart_worker_create(wd.f.ctx, &wa));
	CHECK_OK(smart_worker_create(wd.f.ctx, &w2));
	CHECK_OK(smart_dtx_txn_new(wd.d, wa, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, w2, &y));
	api_put_new(&wd, x, T_SMALL, 1, &v, 8);
	api_put_new(&wd, x, T_SMALL, 2, &v, 8);
	CHECK_OK(ul_write(x, wa, 2, 5)); /* x's last worker: wa */

	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, ul_hook_fn, &lose));
	CHECK_OK(ul_write(x, wa, 1, 6)); /* unlocks lost */
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_OK(smart_worker_destroy(wa)); /* its thread ended */
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));
	for (i = 0; i < 10; i++) {
		int rc = ul_write(x, w2, 2, 7 + i);

		busy += rc == SMART_EBUSY;
		aborted += ul_read(y, w2, &v) == SMART_EABORT;
	}
	r_free = smart_dtx_txn_free(x, w2);
	r_after = ul_read(y, w2, &v);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("unlock_lost_gone: its worker destroyed, 10 tries on another: "
	       "%d writes SMART_EBUSY, %d reads of record 1 aborted, unlocks "
	       "released again %" PRIu64 "; txn_free: %s; a read after the "
	       "free: %s\n",
	       busy, aborted, st.unlocks_redone - st0.unlocks_redone,
	       smart_status_name(r_free), smart_status_name(r_after));
	CHECK_OK(smart_dtx_txn_free(y, w2));
	CHECK_OK(smart_worker_destroy(w2));
	world_stop(&wd);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, 1);
	CHECK_EQ(busy, 0);
	CHECK_EQ(aborted, 0);
	CHECK_OK(r_free);
	CHECK_OK(r_after);
}

/* ==== unlock_lost_rfu: a lock without a write, the last unlock lost ===== */

/* x's unlocks are lost on wd.w; x then runs on w2 a transaction that locks
 * record 2 (read_for_update) and writes nothing.  It posts no log, so it
 * need not wait for the lost unlock: its own unlock is remembered beside
 * it, each with its worker (dtx_unlock.c), and it costs the round trip it
 * costs with nothing lost.  Before the fix its unlock() ran the reap to
 * its 64 tries on a worker that cannot tell, then released the waited way:
 * 66 round trips (mutant DTX_UNLOCK_REAP_FIRST).  Home again, x still
 * releases the lost one. */
void test_unlock_lost_rfu(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 4, .primary = -1
	};
	struct smart_dtx_config c;
	struct smart_dtx_cost cost, cost0;
	struct smart_dtx_stats st0, st;
	struct world wd;
	smart_worker_t *w2;
	smart_dtx_txn_t *x;
	int64_t v = 5, old;
	int lose = 1, i;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "unlock_lost_rfu", &c, &wd.d));
	CHECK_OK(smart_worker_create(wd.f.ctx, &w2));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	api_put_new(&wd, x, T_SMALL, 1, &v, 8);
	api_put_new(&wd, x, T_SMALL, 2, &v, 8);
	/* the same transaction with nothing lost: its round trips */
	CHECK_OK(smart_dtx_begin(x));
	CHECK_GE(smart_dtx_read_for_update(x, T_SMALL, 2, &old, 8), 0);
	CHECK_OK(smart_dtx_exec(x, w2));
	CHECK_OK(smart_dtx_commit(x, w2));
	CHECK_OK(smart_dtx_last_cost(x, &cost0));
	CHECK_OK(ul_write(x, wd.w, 2, 5)); /* home: wd.w */
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));

	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, ul_hook_fn, &lose));
	CHECK_OK(ul_write(x, wd.w, 1, 6)); /* unlocks lost */
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_SMALL, 2, &old, 8);
	CHECK_GE(i, 0);
	CHECK_OK(smart_dtx_exec(x, w2));
	CHECK_OK(smart_dtx_commit(x, w2)); /* writes nothing */
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	printf("unlock_lost_rfu: a locking, non-writing commit on another "
	       "worker: %u round trips with the last unlock lost, %u without\n",
	       cost.round_trips, cost0.round_trips);
	CHECK_OK(ul_write(x, wd.w, 2, 8)); /* home again: released */
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_worker_destroy(w2));
	world_stop(&wd);
	CHECK_EQ(cost.round_trips, cost0.round_trips);
	CHECK_EQ(st.unlocks_redone - st0.unlocks_redone, 1);
}
