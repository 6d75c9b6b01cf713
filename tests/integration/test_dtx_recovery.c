/*
 * Smart-DTX after its coordinators die (docs/dtx.md §5, DESIGN.md §9): a
 * client process runs transfers between two tables whose primaries are on
 * two blades (each with a backup on the other) and _exit()s at a named
 * step of a commit; then another client must read every account (its
 * reads meet the dead one's locks and resolve them), the money must add
 * up, every backup must equal its primary and no lock may be left.
 *
 * Asserted besides: the path each step exists for was taken
 * (smart_dtx_stats: a lock released alone when no log was written, a
 * transaction rolled back when it died half written, rolled forward when
 * every copy was written), and smart_dtx_recover() resolves a dead
 * coordinator's transaction and frees its log slot with no transaction
 * run at all, and that a memory blade gone fails the transactions on it
 * with an error while those elsewhere go on.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/lease_blade.h"
#include "harness/smartd_proc.h"
#include "harness/test.h"
#include "smart/dtx.h"
#include "smart/smart.h"

#define LEASE_MS	400
#define ACCOUNTS	32
#define START_BAL	1000
#define DB		"bank"

static char secret_path[] = "/tmp/smart-dtxrec-secret-XXXXXX";

struct step {
	const char *point;
	int hit;
	int expect;	/* what the survivor must have done */
#define EXP_RELEASE	0	/* no log: locks released alone */
#define EXP_BACK	1
#define EXP_FORWARD	2
};

static const struct step steps[] = {
	{ "dtx.exec.done", 3, EXP_RELEASE },
	{ "dtx.commit.torn", 3, EXP_BACK },
	{ "dtx.commit.written", 3, EXP_FORWARD },
};

static const struct smart_dtx_table tables[2] = {
	{ 0, 8, 8, 0 },		/* savings: primary blade 0 */
	{ 1, 8, 8, 1 },		/* checking: primary blade 1 */
};

/* ---- the client that dies ------------------------------------------------ */

struct child_hook {
	const struct step *st;
	int hits;
};

static int child_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct child_hook *h = arg;

	(void)w;
	if (!strcmp(point, h->st->point) && ++h->hits == h->st->hit)
		_exit(0);
	return 0;
}

/* One transfer of `amt` from savings[a] to checking[b]: 0 or an error. */
static int transfer(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t a,
		    uint64_t b, int64_t amt)
{
	int64_t s, c;
	int i, j, rc;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, 0, a, &s, sizeof(s));
	j = smart_dtx_read_for_update(x, 1, b, &c, sizeof(c));
	CHECK_GE(i, 0);
	CHECK_GE(j, 0);
	rc = smart_dtx_exec(x, w);
	if (rc)
		return rc;
	s -= amt;
	c += amt;
	CHECK_OK(smart_dtx_write(x, i, &s, sizeof(s)));
	CHECK_OK(smart_dtx_write(x, j, &c, sizeof(c)));
	return smart_dtx_commit(x, w);
}

static smart_ctx_t *ctx_both(const char *a0, const char *a1,
			     const char *secret, uint16_t *b0, uint16_t *b1)
{
	smart_ctx_t *ctx = lb_ctx_open(a0, secret, b0);

	CHECK_OK(smart_ctx_connect(ctx, a1, b1));
	return ctx;
}

/* args: both blades' addresses, the index of its step, the pipe, the
 * secret file. */
static void child_main(char **args)
{
	struct child_hook h = { &steps[atoi(args[2])], 0 };
	int wr = atoi(args[3]), i, ids[2];
	uint16_t b0, b1, id;
	smart_ctx_t *ctx = ctx_both(args[0], args[1], args[4], &b0, &b1);
	smart_worker_t *w;
	smart_dtx_t *d;
	smart_dtx_txn_t *x;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_dtx_open(w, b0, DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	CHECK_OK(smart_lease_id(ctx, b0, &id));
	ids[0] = id;
	CHECK_OK(smart_lease_id(ctx, b1, &id));
	ids[1] = id;
	CHECK_EQ(write(wr, ids, sizeof(ids)), (ssize_t)sizeof(ids));
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	for (i = 0; i < 100; i++)
		if (transfer(x, w, (uint64_t)i % ACCOUNTS,
			     (uint64_t)(i * 7) % ACCOUNTS, 10 + i))
			_exit(2);
	_exit(3);
}

/* ---- the survivor ------------------------------------------------------------ */

struct world {
	smart_blade_t *b[2];
	uint16_t id[2];
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_dtx_t *d;
};

static void world_open(struct world *wd)
{
	struct smart_dtx_config c;
	smart_dtx_txn_t *x;
	uint64_t k;
	int t;

	wd->b[0] = lb_blade_start_id(64 << 20, LEASE_MS, 0);
	wd->b[1] = lb_blade_start_id(64 << 20, LEASE_MS, 1);
	wd->ctx = ctx_both(smart_blade_address(wd->b[0]),
			   smart_blade_address(wd->b[1]), secret_path, &wd->id[0],
			   &wd->id[1]);
	CHECK_OK(smart_worker_create(wd->ctx, &wd->w));
	smart_dtx_config_init(&c);
	c.blades = wd->id;
	c.nblades = 2;
	c.replicas = 1;
	c.tables = tables;
	c.ntables = 2;
	c.log_slots = 16;
	c.max_writes = ACCOUNTS;
	CHECK_OK(smart_dtx_create(wd->w, wd->id[0], DB, &c, &wd->d));
	CHECK_OK(smart_dtx_txn_new(wd->d, wd->w, &x));
	for (t = 0; t < 2; t++) {
		CHECK_OK(smart_dtx_begin(x));
		for (k = 0; k < ACCOUNTS; k++)
			CHECK_GE(smart_dtx_insert(x, (uint32_t)t, k,
				 &(int64_t){ START_BAL }, 8), 0);
		CHECK_OK(smart_dtx_commit(x, wd->w));
	}
	CHECK_OK(smart_dtx_txn_free(x, wd->w));
}

static void world_close(struct world *wd)
{
	CHECK_OK(smart_dtx_drop(wd->d, wd->w));
	CHECK_OK(smart_worker_destroy(wd->w));
	CHECK_OK(smart_ctx_destroy(wd->ctx));
	CHECK_OK(smart_blade_destroy(wd->b[0]));
	CHECK_OK(smart_blade_destroy(wd->b[1]));
}

/* Start the client that dies at st; wait until both blades see it dead. */
static void run_child(struct world *wd, int si)
{
	char s[12], fd[12];
	int p[2], ids[2], st, b, i;
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	snprintf(s, sizeof(s), "%d", si);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	pid = test_spawn("dies", (const char *[]){
		smart_blade_address(wd->b[0]), smart_blade_address(wd->b[1]),
		s, fd, secret_path, NULL });
	CHECK_GE(pid, 0);
	guard.pids[0] = pid;
	close(p[1]);
	CHECK_EQ(read(p[0], ids, sizeof(ids)), (ssize_t)sizeof(ids));
	close(p[0]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	guard.pids[0] = 0;
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "child at %s: status %d (3: the point was never reached)",
		  steps[si].point, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	/* the blades fence it once they see its sessions close */
	for (b = 0; b < 2; b++) {
		for (i = 0; i < 2000; i++) {
			int alive = smart_lease_alive_now(wd->w, wd->id[b],
							  (uint16_t)ids[b]);

			CHECK_GE(alive, 0);
			if (!alive)
				break;
			sleep_ms(1);
		}
		CHECK_MSG(i < 2000, "blade %d did not fence the dead child", b);
	}
}

/* Read every account in one transaction (retrying on conflicts, which
 * the dead client's locks must not cause forever): the sum of both
 * tables. */
static int64_t audit(struct world *wd)
{
	smart_dtx_txn_t *x;
	int64_t v[2][ACCOUNTS], sum = 0;
	int t, k, tries, rc = SMART_EABORT;

	CHECK_OK(smart_dtx_txn_new(wd->d, wd->w, &x));
	for (tries = 0; rc == SMART_EABORT && tries < 1000; tries++) {
		CHECK_OK(smart_dtx_begin(x));
		for (t = 0; t < 2; t++)
			for (k = 0; k < ACCOUNTS; k++)
				CHECK_GE(smart_dtx_read(x, (uint32_t)t,
					 (uint64_t)k, &v[t][k], 8), 0);
		rc = smart_dtx_commit(x, wd->w);
	}
	CHECK_OK(rc);
	CHECK_OK(smart_dtx_txn_free(x, wd->w));
	for (t = 0; t < 2; t++)
		for (k = 0; k < ACCOUNTS; k++)
			sum += v[t][k];
	return sum;
}

static void check_clean(struct world *wd)
{
	uint64_t bad = 1;

	CHECK_OK(smart_dtx_check(wd->d, wd->w, &bad));
	CHECK_EQ(bad, 0);
}

static void test_deaths(void)
{
	unsigned si;

	for (si = 0; si < sizeof(steps) / sizeof(steps[0]); si++) {
		struct smart_dtx_stats st;
		struct world wd;
		uint64_t t0;

		world_open(&wd);
		run_child(&wd, (int)si);
		t0 = test_now_ms();
		CHECK_EQ(audit(&wd), 2 * ACCOUNTS * START_BAL);
		printf("%s: the survivor's audit done %llu ms after the "
		       "death was seen\n", steps[si].point,
		       (unsigned long long)(test_now_ms() - t0));
		check_clean(&wd);
		CHECK_OK(smart_dtx_stats(wd.d, &st));
		CHECK_GT(st.recoveries, 0);
		CHECK_GT(st.locks_recovered, 0);
		if (steps[si].expect == EXP_BACK)
			CHECK_GT(st.rolled_back, 0);
		if (steps[si].expect == EXP_FORWARD)
			CHECK_GT(st.rolled_forward, 0);
		world_close(&wd);
	}
}

/* An operator's recovery: no transaction needed. */
static void test_operator(void)
{
	struct smart_dtx_stats st;
	struct world wd;
	uint64_t found = 0;

	world_open(&wd);
	run_child(&wd, 1);	/* dies half written */
	CHECK_OK(smart_dtx_recover(wd.d, wd.w, SMART_DTX_ALL_BLADES, &found));
	CHECK_GT(found, 0);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, &st));
	CHECK_GT(st.rolled_back, 0);
	CHECK_GT(st.slots_adopted, 0);	/* its log slot freed */
	CHECK_EQ(audit(&wd), 2 * ACCOUNTS * START_BAL);
	world_close(&wd);
}

/* A memory blade gone: transactions on its table fail with an error (not
 * SMART_EABORT, not a hang); those on the other blade's table go on. */
static void test_dead_blade(void)
{
	static const struct smart_dtx_table split[2] = {
		{ 0, 8, 8, 0 }, { 1, 8, 8, 1 },
	};
	struct smart_dtx_config c;
	struct world wd;
	smart_dtx_txn_t *x;
	smart_dtx_t *d;
	uint64_t t0;
	int64_t v;
	int rc = 0, i, n;

	world_open(&wd);
	smart_dtx_config_init(&c);
	c.blades = wd.id;
	c.nblades = 2;
	c.replicas = 0;
	c.tables = split;
	c.ntables = 2;
	CHECK_OK(smart_dtx_create(wd.w, wd.id[0], "split", &c, &d));
	CHECK_OK(smart_dtx_txn_new(d, wd.w, &x));
	for (i = 0; i < 2; i++) {
		CHECK_OK(smart_dtx_begin(x));
		CHECK_GE(smart_dtx_insert(x, (uint32_t)i, 7, &(int64_t){ 5 }, 8),
			 0);
		CHECK_OK(smart_dtx_commit(x, wd.w));
	}
	CHECK_OK(smart_blade_destroy(wd.b[1]));
	wd.b[1] = NULL;
	t0 = test_now_ms();
	for (n = 0; n < 100000; n++) {	/* until the ctx sees it gone */
		CHECK_OK(smart_dtx_begin(x));
		CHECK_GE(smart_dtx_read_for_update(x, 1, 7, &v, 8), 0);
		rc = smart_dtx_commit(x, wd.w);
		if (rc && rc != SMART_EABORT)
			break;
	}
	printf("dead blade: a transaction on it failed with %s after %llu "
	       "ms (%d tries)\n", smart_status_name(rc),
	       (unsigned long long)(test_now_ms() - t0), n);
	CHECK_NE(rc, 0);
	CHECK_NE(rc, SMART_EABORT);
	/* the other blade's table goes on */
	for (i = 0; i < 100; i++) {
		int it;

		CHECK_OK(smart_dtx_begin(x));
		it = smart_dtx_read_for_update(x, 0, 7, &v, 8);
		CHECK_OK(smart_dtx_exec(x, wd.w));
		v++;
		CHECK_OK(smart_dtx_write(x, it, &v, 8));
		CHECK_OK(smart_dtx_commit(x, wd.w));
	}
	CHECK_EQ(v, 105);
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	CHECK_OK(smart_dtx_close(d));	/* its memory on blade 0 stays */
	CHECK_OK(smart_dtx_close(wd.d));
	CHECK_OK(smart_worker_destroy(wd.w));
	CHECK_OK(smart_ctx_destroy(wd.ctx));
	CHECK_OK(smart_blade_destroy(wd.b[0]));
}

int main(int argc, char **argv)
{
	test_children(argc, argv, (struct test_child[]){
		{ "dies", child_main },
		{ 0 } });
	guard_init(300);
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv, (struct test_case[]){
		{ "deaths", test_deaths },
		{ "operator", test_operator },
		{ "dead_blade", test_dead_blade },
		{ 0 } });
}
