/*
 * test_dtx, anomalies forced by hooks: two inserts of one key in two free
 * slots (Dekker: one commits), write skew through one validation READ
 * copied top down by the adversarial shm (one of two commits).
 */
#include "dtx_test.h"

/* ==== dekker: two inserts of one key in two free slots ===================== */

/* Inserter A runs on worker wa, B on wb.  The hook, on A's worker only:
 * after A's exec round that locked its free slot (its intent not yet
 * written: it rides A's validation round), B's whole exec runs (B finds
 * A's slot locked, with no key, and takes the next free one); after A's
 * validation passed (its intent written, B's not yet, so A saw none),
 * B's commit runs: B's validation sees A's locked slot with the key, A's
 * record not written yet.  Dekker's half (each validation reads after
 * its own intent landed, so the later one sees the other's) is all that
 * keeps the key unique. */
struct dk_hook {
	smart_worker_t *wa, *wb;
	smart_dtx_txn_t *y;
	int rounds, b_exec, b_commit;
};

static int dk_hook_fn(smart_worker_t *w, const char *point, void *arg)
{
	struct dk_hook *h = arg;

	if (w != h->wa)
		return 0;
	if (!strcmp(point, "dtx.exec.round") && ++h->rounds == 2) {
		h->b_exec = smart_dtx_exec(h->y, h->wb);
		CHECK_OK(h->b_exec);
		CHECK_OK(smart_dtx_status(h->y, 0, NULL));
	} else if (!strcmp(point, "dtx.commit.validated")) {
		h->b_commit = smart_dtx_commit(h->y, h->wb);
	}
	return 0;
}

static int dk_count_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	(void)val;
	(void)len;
	*(int *)arg += key == 77;
	return 0;
}

void test_dekker(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 4, .primary = -1
	};
	struct dk_hook h = { 0 };
	struct smart_dtx_config c;
	struct smart_dtx_stats st;
	struct world wd;
	smart_dtx_txn_t *x;
	uint64_t v = 1, bad = 1;
	int rc, n = 0;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "dekker", &c, &wd.d));
	CHECK_OK(smart_worker_create(wd.f.ctx, &h.wb));
	h.wa = wd.w;
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, h.wb, &h.y));
	CHECK_OK(smart_dtx_begin(x));
	CHECK_OK(smart_dtx_begin(h.y));
	CHECK_GE(smart_dtx_insert(x, T_SMALL, 77, &v, 8), 0);
	CHECK_GE(smart_dtx_insert(h.y, T_SMALL, 77, &v, 8), 0);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, dk_hook_fn, &h));
	rc = smart_dtx_commit(x, wd.w);
	if (!h.b_commit && h.rounds >= 2 && rc) /* B's commit not run yet */
		h.b_commit = smart_dtx_commit(h.y, h.wb);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, T_SMALL, dk_count_fn, &n));
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("dekker: A %s, B %s, key 77 present %d times, %llu insert "
	       "conflicts\n",
	       smart_status_name(rc), smart_status_name(h.b_commit), n,
	       (unsigned long long)st.insert_conflicts);
	CHECK_GE(h.rounds, 2);
	CHECK_EQ(n, 1);
	CHECK((rc == 0) != (h.b_commit == 0));
	CHECK_GT(st.insert_conflicts, 0);
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad));
	CHECK_OK(smart_dtx_txn_free(h.y, h.wb));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_worker_destroy(h.wb));
	world_stop(&wd);
}

/* ==== skew: a validation READ torn between a commit and its unlock ======== */

/* Accounts X (1) and Y (2) hold 50 each; a withdrawal of 100 may go while
 * X + Y >= 100.  T1 reads X and withdraws from Y, T2 reads Y and withdraws
 * from X: serially one of them commits.  The interleaving: T2 reads Y;
 * T1 reads X, locks Y, validates X (free, unchanged) and stops at
 * "dtx.commit.validated" (thread A); T2 locks X and commits (main thread).
 * Its validation READ of Y is copied from the top down (read_down=100)
 * and the transport's unit hook, after Y's version word and before its
 * lock word, lets T1 write Y and unlock it.  One 24-byte READ then saw
 * the version before T1's commit and the lock after it: both commit, X + Y
 * = -100 and the graph has a cycle T1 -rw-> T2 -rw-> T1.  The lock READ,
 * fenced before the version's, sees T1's lock: T2 aborts. */
enum { SK_START, SK_VALIDATED, SK_GO, SK_DONE };

struct skew {
	smart_worker_t *w1;
	smart_dtx_txn_t *t1;
	pthread_t main;
	_Atomic int stage, armed;
	int fired, rc1, y1;
	int64_t bal[2];
};

static void skew_wait(struct skew *s, int stage)
{
	double t0 = test_now_ms();

	while (atomic_load(&s->stage) < stage) {
		CHECK_LT(test_now_ms() - t0, 30000); /* a deadline */
		sched_yield();
	}
}

static int skew_hook_fn(smart_worker_t *w, const char *point, void *arg)
{
	struct skew *s = arg;

	if (w == s->w1 && !strcmp(point, "dtx.commit.validated")) {
		atomic_store(&s->stage, SK_VALIDATED);
		skew_wait(s, SK_GO);
	}
	return 0;
}

/* Between two units of a READ polled by the main thread (T2's validation
 * READ, the only one of its commit): T1's write and unlock. */
static void skew_unit_fn(void *arg, const uint8_t *remote)
{
	struct skew *s = arg;

	(void)remote;
	if (!pthread_equal(pthread_self(), s->main) ||
	    !atomic_exchange(&s->armed, 0))
		return;
	s->fired++;
	atomic_store(&s->stage, SK_GO);
	skew_wait(s, SK_DONE);
}

static void *skew_t1(void *arg)
{
	struct skew *s = arg;

	s->rc1 = smart_dtx_commit(s->t1, s->w1);
	if (!s->rc1) /* its unlock seen landed */
		CHECK_OK(smart_dtx_abort(s->t1, s->w1));
	atomic_store(&s->stage, SK_DONE);
	return NULL;
}

/* Begin a withdrawal of 100: read account `ro`, read `rw` for update. */
static void skew_exec(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t ro,
		      uint64_t rw, int64_t bal[2])
{
	CHECK_OK(smart_dtx_begin(x));
	CHECK_EQ(smart_dtx_read(x, T_SMALL, ro, &bal[0], 8), 0);
	CHECK_OK(smart_dtx_exec(x, w));
	CHECK_EQ(smart_dtx_read_for_update(x, T_SMALL, rw, &bal[1], 8), 1);
}

static int skew_sum(void *arg, uint64_t key, const void *val, size_t len)
{
	int64_t b;

	CHECK_EQ(len, 8);
	memcpy(&b, val, 8);
	*(int64_t *)arg += key == 1 || key == 2 ? b : 0;
	return 0;
}

void test_skew(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 4, .primary = -1
	};
	const char *tp = getenv("SMART_TEST_TRANSPORT");
	struct skew s = { .main = pthread_self() };
	struct smart_dtx_config c;
	struct shm_adv_stats as;
	struct dsg_report rep;
	struct world wd;
	smart_dtx_txn_t *x;
	int64_t b2[2], v = 50, sum = 0;
	pthread_t a;
	struct dsg h;
	int rc2, verdict;

	if (tp && strcmp(tp, "shm"))
		test_skip("the adversarial shm transport only");
	world_start(&wd, "seed=1,pause_pct=0,reexec_pct=0,read_down=100");
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "skew", &c, &wd.d));
	CHECK_OK(smart_worker_create(wd.f.ctx, &s.w1));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, s.w1, &s.t1));
	api_put_new(&wd, x, T_SMALL, 1, &v, 8);
	api_put_new(&wd, x, T_SMALL, 2, &v, 8);

	skew_exec(x, wd.w, 2, 1, b2);	      /* T2 reads Y */
	skew_exec(s.t1, s.w1, 1, 2, s.bal);   /* T1 reads X */
	CHECK_OK(smart_dtx_exec(s.t1, s.w1)); /* T1 locks Y */
	CHECK(s.bal[0] + s.bal[1] >= 100);
	CHECK_OK(smart_dtx_write(s.t1, 1, &(int64_t){ s.bal[1] - 100 }, 8));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, skew_hook_fn, &s));
	CHECK_OK(smart__shm_adv_set_unit_hook(wd.f.ctx->dom, skew_unit_fn, &s));
	CHECK_EQ(pthread_create(&a, NULL, skew_t1, &s), 0);
	skew_wait(&s, SK_VALIDATED);	   /* T1 validated X */
	CHECK_OK(smart_dtx_exec(x, wd.w)); /* T2 locks X */
	CHECK(b2[0] + b2[1] >= 100);
	CHECK_OK(smart_dtx_write(x, 1, &(int64_t){ b2[1] - 100 }, 8));
	atomic_store(&s.armed, 1);
	rc2 = smart_dtx_commit(x, wd.w);
	CHECK_EQ(pthread_join(a, NULL), 0);
	CHECK_OK(smart__shm_adv_set_unit_hook(wd.f.ctx->dom, NULL, NULL));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));

	dsg_init(&h);
	if (!s.rc1)
		record(&h, s.t1, 2, 1);
	if (!rc2)
		record(&h, x, 2, 2);
	verdict = dsg_check(&h, 0, &rep, stdout);
	CHECK_OK(smart_dtx_scan(wd.d, wd.w, T_SMALL, skew_sum, &sum));
	CHECK_OK(smart__shm_adv_stats(wd.f.ctx->dom, &as));
	printf("skew: T1 %s, T2 %s, X + Y = %" PRId64 " (100 before, two "
	       "withdrawals of 100 allowed while >= 100), graph %s; %" PRIu64
	       " READs copied top down, unit hook fired %d\n",
	       smart_status_name(s.rc1), smart_status_name(rc2), sum,
	       dsg_verdict_name(verdict), as.descended, s.fired);
	CHECK_EQ(s.fired, 1); /* the path taken */
	CHECK_GT(as.descended, 0);
	CHECK_OK(s.rc1);
	CHECK_EQ(rc2, SMART_EABORT);
	CHECK_EQ(verdict, DSG_OK);
	CHECK_EQ(sum, 0);
	dsg_free(&h);
	CHECK_OK(smart_dtx_txn_free(s.t1, s.w1));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_worker_destroy(s.w1));
	world_stop(&wd);
}
