/*
 * Smart-DTX after its coordinators die (docs/dtx.md §5, docs/design.md §10.3):
 * a client process runs transfers between two tables whose primaries are on
 * two blades (each with a backup on the other) and _exit()s at a named
 * step of a commit; then another client must read every account (its
 * reads meet the dead one's locks and resolve them), the money must add
 * up, every backup must equal its primary and no lock may be left.
 *
 * Asserted besides: the path each step exists for was taken
 * (smart_dtx_stats: a lock released alone when no log was written, a
 * transaction rolled back when it died half written, rolled forward when
 * every copy was written, also when its unlocks were posted and had not
 * landed: "dtx.commit.unlocking"), and smart_dtx_recover() resolves a dead
 * coordinator's transaction and frees its log slot with no transaction
 * run at all, and that a memory blade gone fails the transactions on it
 * with an error while those elsewhere go on.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blade/blade_int.h" /* the lease round robin, set by hand */
#include "harness/lease_blade.h"
#include "harness/smartd_proc.h"
#include "harness/test.h"
#include "smart/dtx.h"
#include "smart/smart.h"

#define LEASE_MS                                                               \
	2000 /* long: a recoverer parked in a hook must not
			 * starve into a self-fence on a loaded machine */
#define ACCOUNTS  32
#define START_BAL 1000
#define DB	  "bank"

static char secret_path[] = "/tmp/smart-dtxrec-secret-XXXXXX";

struct step {
	const char *point;
	int hit;
	int expect;   /* what the survivor must have done */
#define EXP_RELEASE 0 /* no log: locks released alone */
#define EXP_BACK    1
#define EXP_FORWARD 2
};

static const struct step steps[] = {
	{ "dtx.exec.done", 3, EXP_RELEASE },
	{ "dtx.commit.torn", 3, EXP_BACK },
	{ "dtx.commit.written", 3, EXP_FORWARD },
	/* inside a WRITE: the second record's backup holds its new key and
	 * version over the old rest (crc wrong), every other copy new */
	{ "dtx.commit.inside", 3, EXP_BACK },
	/* validated, the log landed, no record written yet */
	{ "dtx.commit.validated", 3, EXP_BACK },
	/* committed, every copy written, the unlocks posted and not landed
	 * (shm runs them at the next poll, which never comes) */
	{ "dtx.commit.unlocking", 3, EXP_FORWARD },
};

static const struct smart_dtx_table tables[2] = {
	{ 0, 8, 8, 0 }, /* savings: primary blade 0 */
	{ 1, 8, 8, 1 }, /* checking: primary blade 1 */
};

/* ---- the client that dies ------------------------------------------------ */

/* What the dying client runs: transfer i moves 10 + i. */
enum plan {
	PLAN_BANK = 0,	     /* savings[i % 32] -> checking[i * 7 % 32] */
	PLAN_LOCAL = 1,	     /* i even: checking[i] -> savings[i]; odd:
			 * checking[i] -> checking[i + 1] (one table) */
	PLAN_THREE = 3,	     /* savings[i] -> checking[i], checking[i + 1],
			 * 10 + i each: three records written */
	PLAN_UNDO_FAILS = 2, /* savings[0] -> checking[0]: its commit
				 * fails after the first record, then its
				 * undo (fail_hook); it dies right after */
	PLAN_UNDO_HALF = 4,  /* savings[0] -> checking[0]: its commit
				 * fails inside the second record's WRITE,
				 * the undo of the first (half_hook); it
				 * dies right after */
	PLAN_UNDO_ABORT = 5, /* savings[0] -> checking[0], checking[1]:
				 * its commit fails inside the second
				 * record's WRITE, the undo of the third
				 * (half_hook), then smart_dtx_abort's
				 * retry of it; it dies right after */
};

/* Fails a commit after its first record's write ("dtx.commit.torn") and
 * the undo of every record, as transport errors would. */
struct fail_hook {
	int undos;
};

static int fail_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct fail_hook *h = arg;

	(void)w;
	if (!strcmp(point, "dtx.commit.torn"))
		return SMART_ECONN;
	if (!strcmp(point, "dtx.undo.record")) {
		h->undos++;
		return SMART_ECONN;
	}
	return 0;
}

/* Fails a commit inside its second record's WRITE ("dtx.commit.inside":
 * the first record, and a third, new on every copy) and the undos
 * numbered fail..last (from 1): the others put their records back. */
struct half_hook {
	int undos, fail, last;
};

static int half_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct half_hook *h = arg;

	(void)w;
	if (!strcmp(point, "dtx.commit.inside"))
		return SMART_ECONN;
	if (!strcmp(point, "dtx.undo.record") && ++h->undos >= h->fail &&
	    h->undos <= h->last)
		return SMART_ECONN;
	return 0;
}

struct child_hook {
	const char *point;
	int hit, hits;
};

static int child_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct child_hook *h = arg;

	(void)w;
	if (!strcmp(point, h->point) && ++h->hits == h->hit)
		_exit(0);
	return 0;
}

/* One transfer of `amt` from table ta's record a to table tb's record b:
 * 0 or an error. */
static int transfer(smart_dtx_txn_t *x, smart_worker_t *w, uint32_t ta,
		    uint64_t a, uint32_t tb, uint64_t b, int64_t amt)
{
	int64_t s, c;
	int i, j, rc;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, ta, a, &s, sizeof(s));
	j = smart_dtx_read_for_update(x, tb, b, &c, sizeof(c));
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

static smart_ctx_t *ctx_both(const char *a0, const char *a1, const char *secret,
			     uint16_t *b0, uint16_t *b1)
{
	smart_ctx_t *ctx = lb_ctx_open(a0, secret, b0);

	CHECK_OK(smart_ctx_connect(ctx, a1, b1));
	return ctx;
}

/* savings[a] -> checking[b] and checking[b + 1], amt each. */
static int transfer3(smart_dtx_txn_t *x, smart_worker_t *w, uint64_t a,
		     uint64_t b, int64_t amt)
{
	int64_t v[3];
	int it[3], k, rc;

	CHECK_OK(smart_dtx_begin(x));
	it[0] = smart_dtx_read_for_update(x, 0, a, &v[0], 8);
	it[1] = smart_dtx_read_for_update(x, 1, b, &v[1], 8);
	it[2] = smart_dtx_read_for_update(x, 1, b + 1, &v[2], 8);
	rc = smart_dtx_exec(x, w);
	if (rc)
		return rc;
	v[0] -= 2 * amt;
	v[1] += amt;
	v[2] += amt;
	for (k = 0; k < 3; k++)
		CHECK_OK(smart_dtx_write(x, it[k], &v[k], 8));
	return smart_dtx_commit(x, w);
}

/* Send this ctx's lease ids on both blades down pipe end wr. */
static void send_ids(smart_ctx_t *ctx, uint16_t b0, uint16_t b1, int wr)
{
	uint16_t id;
	int ids[2];

	CHECK_OK(smart_lease_id(ctx, b0, &id));
	ids[0] = id;
	CHECK_OK(smart_lease_id(ctx, b1, &id));
	ids[1] = id;
	CHECK_EQ(write(wr, ids, sizeof(ids)), (ssize_t)sizeof(ids));
}

/* args: both blades' addresses, the index of its step, the pipe, the
 * secret file, the plan, the hit of the step's point to die at. */
static void child_main(char **args)
{
	struct child_hook h = { steps[atoi(args[2])].point, atoi(args[6]), 0 };
	int wr = atoi(args[3]), plan = atoi(args[5]), i;
	uint16_t b0, b1;
	smart_ctx_t *ctx = ctx_both(args[0], args[1], args[4], &b0, &b1);
	smart_worker_t *w;
	smart_dtx_t *d;
	smart_dtx_txn_t *x;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_dtx_open(w, b0, DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	send_ids(ctx, b0, b1, wr);
	if (plan == PLAN_UNDO_FAILS) {
		struct fail_hook fh = { 0 };

		CHECK_OK(smart_ctx_set_hook(ctx, fail_hook, &fh));
		_exit(transfer(x, w, 0, 0, 1, 0, 10) == SMART_ECONN &&
				      fh.undos ?
			      0 :
			      2);
	}
	if (plan == PLAN_UNDO_HALF) { /* the first undo fails */
		struct half_hook fh = { 0, 1, 1 };

		CHECK_OK(smart_ctx_set_hook(ctx, half_hook, &fh));
		_exit(transfer(x, w, 0, 0, 1, 0, 10) == SMART_ECONN &&
				      fh.undos == 2 ?
			      0 :
			      2);
	}
	if (plan == PLAN_UNDO_ABORT) { /* the third, and its retry */
		struct half_hook fh = { 0, 3, 4 };

		CHECK_OK(smart_ctx_set_hook(ctx, half_hook, &fh));
		i = transfer3(x, w, 0, 0, 10) == SMART_ECONN &&
		    smart_dtx_abort(x, w) == SMART_ECONN;
		_exit(i && fh.undos == 4 ? 0 : 2);
	}
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	for (i = 0; i < 30; i++) {
		uint64_t a = (uint64_t)i % ACCOUNTS;
		int rc;

		if (plan == PLAN_BANK)
			rc = transfer(x, w, 0, a, 1,
				      (uint64_t)(i * 7) % ACCOUNTS, 10 + i);
		else if (plan == PLAN_THREE)
			rc = transfer3(x, w, a, a, 10 + i);
		else if (i % 2 == 0)
			rc = transfer(x, w, 1, a, 0, a, 10 + i);
		else
			rc = transfer(x, w, 1, a, 1, a + 1, 10 + i);
		if (rc)
			_exit(2);
	}
	_exit(3);
}

/* A recoverer that stops once it has taken a dead transaction's lock
 * over ("dtx.recover.taken"): it says so with a byte down its pipe, then
 * waits for its other pipe to close and dies there, half way through its
 * rollback. */
struct rec_hook {
	int wr, rd;
	int stop, taken; /* stop at the stop-th take-over */
};

static int rec_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct rec_hook *h = arg;
	char c = 1;

	(void)w;
	if (strcmp(point, "dtx.recover.taken") || ++h->taken < h->stop)
		return 0;
	CHECK_EQ(write(h->wr, &c, 1), 1);
	while (read(h->rd, &c, 1) > 0)
		;
	_exit(0);
}

/* args: both blades' addresses, the table and key to read, the pipe ends
 * (to the test, from the test), the secret file, the take-over to stop
 * at. */
static void recoverer_main(char **args)
{
	struct rec_hook h = { atoi(args[4]), atoi(args[5]), atoi(args[7]), 0 };
	uint16_t b0, b1;
	smart_ctx_t *ctx = ctx_both(args[0], args[1], args[6], &b0, &b1);
	smart_worker_t *w;
	smart_dtx_t *d;
	smart_dtx_txn_t *x;
	int64_t v;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_dtx_open(w, b0, DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	send_ids(ctx, b0, b1, h.wr);
	CHECK_OK(smart_ctx_set_hook(ctx, rec_hook, &h));
	CHECK_OK(smart_dtx_begin(x));
	CHECK_GE(smart_dtx_read(x, (uint32_t)atoi(args[2]),
				(uint64_t)atoi(args[3]), &v, sizeof(v)),
		 0);
	(void)smart_dtx_commit(x, w);
	_exit(3); /* it met no lock to take over */
}

/* ---- the survivor ------------------------------------------------------------ */

struct world {
	smart_blade_t *b[2];
	uint16_t id[2];
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_dtx_t *d;
};

/* replicas 1: each table has a backup on the other blade; 0: each table
 * on its own blade only. */
static void world_open(struct world *wd, int replicas)
{
	struct smart_dtx_config c;
	smart_dtx_txn_t *x;
	uint64_t k;
	int t;

	wd->b[0] = lb_blade_start_id(64 << 20, LEASE_MS, 0);
	wd->b[1] = lb_blade_start_id(64 << 20, LEASE_MS, 1);
	wd->ctx = ctx_both(smart_blade_address(wd->b[0]),
			   smart_blade_address(wd->b[1]), secret_path,
			   &wd->id[0], &wd->id[1]);
	CHECK_OK(smart_worker_create(wd->ctx, &wd->w));
	smart_dtx_config_init(&c);
	c.blades = wd->id;
	c.nblades = 2;
	c.replicas = replicas;
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
						  &(int64_t){ START_BAL }, 8),
				 0);
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

/* Wait until both blades have fenced the client of these ids, and our
 * keeper has seen it (smart_lease_alive, which recoveries ask). */
static void wait_dead(struct world *wd, const int ids[2])
{
	int b, i;

	for (b = 0; b < 2; b++) {
		for (i = 0; i < 4000; i++) {
			int alive = smart_lease_alive_now(wd->w, wd->id[b],
							  (uint16_t)ids[b]);

			CHECK_GE(alive, 0);
			if (!alive)
				alive = smart_lease_alive(wd->w, wd->id[b],
							  (uint16_t)ids[b]);
			CHECK_GE(alive, 0);
			if (!alive)
				break;
			sleep_ms(1);
		}
		CHECK_MSG(i < 4000, "blade %d did not fence the dead child", b);
	}
}

/* Reap child pid; it must have exited with 0. */
static void reap(pid_t pid, const char *what)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	guard_del(pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "child at %s: status %d (3: the point was never reached)",
		  what, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* Start the client that runs `plan` and dies at the hit-th pass of step
 * si's point; wait until both blades see it dead. */
static void run_child_at(struct world *wd, int si, int plan, int hit)
{
	char s[12], fd[12], pl[12], h[12];
	int p[2], ids[2];
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	snprintf(s, sizeof(s), "%d", si);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	snprintf(pl, sizeof(pl), "%d", plan);
	snprintf(h, sizeof(h), "%d", hit);
	pid = test_spawn("dies",
			 (const char *[]){ smart_blade_address(wd->b[0]),
					   smart_blade_address(wd->b[1]), s, fd,
					   secret_path, pl, h, NULL });
	CHECK_GE(pid, 0);
	guard_add(pid);
	close(p[1]);
	CHECK_EQ(read(p[0], ids, sizeof(ids)), (ssize_t)sizeof(ids));
	close(p[0]);
	reap(pid, steps[si].point);
	/* the blades fence it once they see its sessions close */
	wait_dead(wd, ids);
}

static void run_child(struct world *wd, int si)
{
	run_child_at(wd, si, PLAN_BANK, steps[si].hit);
}

/* A recoverer child stopped half way through a rollback. */
struct rec_child {
	pid_t pid;
	int ids[2];
	int go; /* our end of its waiting pipe: closing it kills it */
};

/* Start a recoverer reading (table, key), which must meet a dead
 * transaction's lock there; return once it holds the lock taken over. */
static void recoverer_start(struct world *wd, struct rec_child *r,
			    uint32_t table, uint64_t key, int stop)
{
	char t[12], k[12], wr[12], rd[12], st[12];
	int up[2], down[2];
	char c;

	/* our ends must not stay open in the child (it would never see
	 * `down` close) */
	CHECK_EQ(pipe2(up, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(down, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(up[1], F_SETFD, 0), 0);
	CHECK_EQ(fcntl(down[0], F_SETFD, 0), 0);
	snprintf(t, sizeof(t), "%u", table);
	snprintf(k, sizeof(k), "%llu", (unsigned long long)key);
	snprintf(wr, sizeof(wr), "%d", up[1]);
	snprintf(rd, sizeof(rd), "%d", down[0]);
	snprintf(st, sizeof(st), "%d", stop);
	r->pid = test_spawn("recoverer",
			    (const char *[]){ smart_blade_address(wd->b[0]),
					      smart_blade_address(wd->b[1]), t,
					      k, wr, rd, secret_path, st,
					      NULL });
	CHECK_GE(r->pid, 0);
	guard_add(r->pid);
	close(up[1]);
	close(down[0]);
	r->go = down[1];
	CHECK_EQ(read(up[0], r->ids, sizeof(r->ids)), (ssize_t)sizeof(r->ids));
	CHECK_MSG(read(up[0], &c, 1) == 1,
		  "the recoverer ended without taking a lock over");
	close(up[0]);
}

/* Let the stopped recoverer die where it stands. */
static void recoverer_kill(struct world *wd, struct rec_child *r)
{
	close(r->go);
	reap(r->pid, "dtx.recover.taken");
	wait_dead(wd, r->ids);
}

/* Open transaction objects until no log slot is left (SMART_EBUSY) or
 * one was adopted from a dead client: that one is returned in *adopted
 * (NULL: none), all of them in xs. */
static int fill_slots(struct world *wd, smart_dtx_txn_t **xs, int max,
		      smart_dtx_txn_t **adopted)
{
	struct smart_dtx_stats st0, st;
	int n, rc = 0;

	*adopted = NULL;
	for (n = 0; n < max; n++) {
		CHECK_OK(smart_dtx_stats(wd->d, NULL, &st0));
		rc = smart_dtx_txn_new(wd->d, wd->w, &xs[n]);
		if (rc)
			break;
		CHECK_OK(smart_dtx_stats(wd->d, NULL, &st));
		if (st.slots_adopted > st0.slots_adopted) {
			*adopted = xs[n++];
			break;
		}
	}
	CHECK_MSG(!rc || rc == SMART_EBUSY, "txn_new: %s",
		  smart_status_name(rc));
	return n;
}

static void free_all(struct world *wd, smart_dtx_txn_t **xs, int n)
{
	while (n--)
		CHECK_OK(smart_dtx_txn_free(xs[n], wd->w));
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
							(uint64_t)k, &v[t][k],
							8),
					 0);
		rc = smart_dtx_commit(x, wd->w);
	}
	CHECK_MSG(!rc, "audit: %s after %d tries (a lock left for ever)",
		  smart_status_name(rc), tries);
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

		world_open(&wd, 1);
		run_child(&wd, (int)si);
		t0 = test_now_ms();
		CHECK_EQ(audit(&wd), 2 * ACCOUNTS * START_BAL);
		printf("%s: the survivor's audit done %llu ms after the "
		       "death was seen\n",
		       steps[si].point,
		       (unsigned long long)(test_now_ms() - t0));
		check_clean(&wd);
		CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
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

	world_open(&wd, 1);
	run_child(&wd, 1); /* dies half written */
	CHECK_OK(smart_dtx_recover(wd.d, wd.w, SMART_DTX_ALL_BLADES, &found));
	CHECK_GT(found, 0);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.rolled_back, 0);
	CHECK_GT(st.slots_adopted, 0); /* its log slot freed */
	CHECK_EQ(audit(&wd), 2 * ACCOUNTS * START_BAL);
	world_close(&wd);
}

/* A defect a review found (2): a recoverer dies half way through a rollback,
 * after an adopter of the dead coordinator's log slot skipped the record
 * the recoverer held.  The coordinator dies in its third transfer
 * (savings[2] -> checking[14], 12), savings[2] written; recoverer R takes
 * savings[2] over and stops; every other log slot is taken, so the next
 * transaction object adopts the dead one's slot, and (if it got it)
 * commits a transfer there, which overwrites the slot's log; R dies.
 * The next reader of savings[2] must still roll it back: the slot may be
 * adopted only once every record its log lists is resolved. */
static void test_recoverer_dies(void)
{
	smart_dtx_txn_t *xs[16], *y;
	struct smart_dtx_stats st;
	struct rec_child r;
	struct world wd;
	int n, rc_new;
	int64_t sum;

	world_open(&wd, 1);
	run_child_at(&wd, 1, PLAN_BANK, 3); /* dtx.commit.torn */
	recoverer_start(&wd, &r, 0, 2, 1);
	n = fill_slots(&wd, xs, 16, &y);
	rc_new = y ? 0 : SMART_EBUSY;
	if (y) /* the slot's log is overwritten */
		CHECK_OK(transfer(y, wd.w, 0, 5, 1, 5, 1));
	printf("recoverer_dies: the dead coordinator's slot %s while the "
	       "recoverer held savings[2]\n",
	       y ? "ADOPTED" : "kept");
	free_all(&wd, xs, n);
	recoverer_kill(&wd, &r);
	sum = audit(&wd);
	printf("recoverer_dies: audit %lld (expected %d)\n", (long long)sum,
	       2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_EQ(rc_new, SMART_EBUSY);
	CHECK_GT(st.adopt_deferred, 0);
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);
}

/* A defect a review found (5): an adopter resolving an older log of the slot
 * must not decide over the newest transaction's decision.  Each table on
 * its own blade, no backups.  The coordinator's transfer 0 (checking[0]
 * -> savings[0]) logs on both blades, its decision word on blade 1 (its
 * entry 0's); transfer 1 (checking[1] -> checking[2], 11) logs on blade 1
 * only, so blade 0 keeps transfer 0's log; it dies with checking[1]
 * written.  Recoverer R decides back, takes checking[1] over and stops.
 * Two adoptions of the slot follow: each resolves blade 0's old log
 * first, then the transaction's own.  Had the first overwritten the
 * decision, the second would find checking[2] rolled back and checking[1]
 * new under R's lock, and decide forward: half rolled back, half
 * forward. */
static void test_stale_decision(void)
{
	smart_dtx_txn_t *xs[16], *y, *z = NULL;
	struct smart_dtx_stats st;
	struct rec_child r;
	struct world wd;
	int n, rc;
	int64_t sum;

	world_open(&wd, 0);
	run_child_at(&wd, 1, PLAN_LOCAL, 2); /* dtx.commit.torn */
	recoverer_start(&wd, &r, 1, 1, 1);
	n = fill_slots(&wd, xs, 15, &y); /* one adoption tried */
	CHECK(!y);
	rc = smart_dtx_txn_new(wd.d, wd.w, &z); /* a second one */
	printf("stale_decision: a second adoption: %s\n",
	       smart_status_name(rc));
	if (!rc) /* the slot's log is overwritten */
		CHECK_OK(transfer(z, wd.w, 0, 5, 1, 5, 1));
	if (!rc)
		CHECK_OK(smart_dtx_txn_free(z, wd.w));
	free_all(&wd, xs, n);
	recoverer_kill(&wd, &r);
	sum = audit(&wd);
	printf("stale_decision: audit %lld (expected %d)\n", (long long)sum,
	       2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_EQ(rc, SMART_EBUSY);
	CHECK_GE(st.adopt_deferred, 2);
	CHECK_GT(st.logs_settled, 0);
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);
}

/* Two recoverers of one transaction must agree.  The coordinator dies
 * inside the WRITE of its second record (transfer3 of 10: savings[0]
 * written, checking[0]'s backup torn, checking[1] written).  Recoverer R
 * decides back, rolls savings[0] and checking[0] back and stops holding
 * checking[1], still new.  An operator's recovery runs meanwhile: it sees
 * two records released and one new, yet must follow R's decision and
 * leave checking[1] to R; R dies; the next reader rolls checking[1] back
 * too.  A recoverer deciding afresh would roll it forward: half back,
 * half forward (or, its lock being R's, never released). */
static void test_two_recoverers(void)
{
	struct smart_dtx_stats st;
	struct rec_child r;
	struct world wd;
	uint64_t found = 0;
	int64_t sum;

	world_open(&wd, 1);
	run_child_at(&wd, 3, PLAN_THREE, 1); /* dtx.commit.inside */
	recoverer_start(&wd, &r, 0, 0, 3);
	CHECK_OK(smart_dtx_recover(wd.d, wd.w, SMART_DTX_ALL_BLADES, &found));
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("two_recoverers: the operator's pass beside R: %llu locks "
	       "released, %llu adoptions put off, %llu forward\n",
	       (unsigned long long)found, (unsigned long long)st.adopt_deferred,
	       (unsigned long long)st.rolled_forward);
	recoverer_kill(&wd, &r);
	sum = audit(&wd);
	printf("two_recoverers: audit %lld (expected %d)\n", (long long)sum,
	       2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.adopt_deferred, 0);
	CHECK_EQ(st.rolled_forward, 0);
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);
}

/* A defect a review found (6): a commit whose writes fail half way puts back
 * what it wrote; an undo that fails too must keep the locks of the
 * records it could not put back (a transaction object holding them
 * starts nothing until smart_dtx_abort finished the undo), never release
 * them over the aborted transaction's bytes.  fail_hook fails the commit
 * after its first record (savings[3] -= 50, both copies) and then the
 * undo of every record.  Then the same with the coordinator dying right
 * after: recovery rolls it back from the log its slot kept. */

static void test_undo_fails(void)
{
	struct smart_dtx_stats st;
	struct fail_hook h = { 0 };
	smart_dtx_txn_t *x, *y;
	struct world wd;
	int64_t v = 0, sum;
	int rc;

	world_open(&wd, 1);
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &y));
	CHECK_OK(smart_ctx_set_hook(wd.ctx, fail_hook, &h));
	rc = transfer(x, wd.w, 0, 3, 1, 3, 50);
	CHECK_OK(smart_ctx_set_hook(wd.ctx, NULL, NULL));
	CHECK_EQ(rc, SMART_ECONN);
	CHECK_GT(h.undos, 0);
	/* savings[3]: locked by its live holder, or (released over the
	 * aborted transfer's bytes) 950 */
	CHECK_OK(smart_dtx_begin(y));
	CHECK_GE(smart_dtx_read(y, 0, 3, &v, sizeof(v)), 0);
	rc = smart_dtx_commit(y, wd.w);
	printf("undo_fails: savings[3] read after the failed transfer: %s, "
	       "%lld\n",
	       smart_status_name(rc), rc ? 0ll : (long long)v);
	if (!rc) /* the locks are gone: what does the bank hold? */
		printf("undo_fails: audit %lld (expected %d)\n",
		       (long long)audit(&wd), 2 * ACCOUNTS * START_BAL);
	CHECK_EQ(rc, SMART_EABORT);
	CHECK_EQ(smart_dtx_begin(x), SMART_EBUSY); /* undo unfinished */
	CHECK_OK(smart_dtx_abort(x, wd.w));	   /* finishes it */
	CHECK_OK(smart_dtx_begin(x));
	CHECK_OK(smart_dtx_abort(x, wd.w));
	CHECK_OK(smart_dtx_txn_free(y, wd.w));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	sum = audit(&wd);
	printf("undo_fails: audit %lld (expected %d)\n", (long long)sum,
	       2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	world_close(&wd);

	world_open(&wd, 1);
	run_child_at(&wd, 0, PLAN_UNDO_FAILS, 1);
	sum = audit(&wd);
	printf("undo_fails: the coordinator dead after it: audit %lld\n",
	       (long long)sum);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);
}

/* A commit that fails inside its second record's WRITE, whose undo then
 * fails on the first record (new on every copy) and succeeds on the
 * second: its coordinator dies while stuck (then the same with three
 * records and a smart_dtx_abort that fails too).  Recovery must roll the
 * transfer back.  Were the put-back record released (as it was), the
 * recoverer would see one record released and the other new on every
 * copy, the evidence of a commit that reached every replica, and roll
 * the debit forward alone. */
static void test_undo_half(void)
{
	struct smart_dtx_stats st;
	struct world wd;
	int64_t sum;

	world_open(&wd, 1);
	run_child_at(&wd, 0, PLAN_UNDO_HALF, 1);
	sum = audit(&wd);
	printf("undo_half: the coordinator dead while stuck: audit %lld "
	       "(expected %d)\n",
	       (long long)sum, 2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);

	/* three records: the third's undo fails (new on every copy), the
	 * first two are put back; smart_dtx_abort fails on the third again,
	 * and the coordinator dies.  Had the abort released the two put
	 * back before the third was, the third would be rolled forward */
	world_open(&wd, 1);
	run_child_at(&wd, 0, PLAN_UNDO_ABORT, 1);
	sum = audit(&wd);
	printf("undo_half: the coordinator dead after a failed abort: audit "
	       "%lld (expected %d)\n",
	       (long long)sum, 2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.rolled_back, 0);
	world_close(&wd);
}

/* A client whose transaction is stuck (its undo failed, and again when
 * the transaction is freed) destroys its ctx: were its sessions to end
 * with a BYE, the blades would give its lease ids to the next newcomers
 * (the round robin set back to them by hand: 65535 handshakes take too
 * long), and its locks would then name a live client: every reader of
 * those records aborts for ever.  Its ids must be buried instead, its
 * transaction rolled back by the next reader. */
static void test_stuck_bye(void)
{
	struct fail_hook h = { 0 };
	struct world wd;
	smart_ctx_t *c, *n;
	smart_worker_t *w;
	smart_dtx_t *d;
	smart_dtx_txn_t *x;
	uint16_t bl[2], id[2], nid[2];
	int64_t sum;
	int b;

	world_open(&wd, 1);
	c = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_dtx_open(w, bl[0], DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, w, &x));
	CHECK_OK(smart_ctx_set_hook(c, fail_hook, &h));
	CHECK_EQ(transfer(x, w, 0, 3, 1, 3, 50), SMART_ECONN);
	CHECK_EQ(smart_dtx_txn_free(x, w), SMART_ECONN); /* still stuck */
	CHECK_OK(smart_dtx_close(d, NULL));
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(c, bl[b], &id[b]));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	/* the ctx is gone: once the blades saw it go, its ids are dead */
	wait_dead(&wd, (int[]){ id[0], id[1] });
	for (b = 0; b < 2; b++) /* no handshake in flight */
		__atomic_store_n(&wd.b[b]->next_lease, id[b], __ATOMIC_SEQ_CST);
	n = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(n, bl[b], &nid[b]));
	printf("stuck_bye: the stuck client's ids %u, %u; the newcomer's %u, "
	       "%u\n",
	       id[0], id[1], nid[0], nid[1]);
	CHECK(nid[0] != id[0] && nid[1] != id[1]);
	sum = audit(&wd);
	printf("stuck_bye: audit %lld (expected %d)\n", (long long)sum,
	       2 * ACCOUNTS * START_BAL);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	CHECK_OK(smart_ctx_destroy(n));
	world_close(&wd);
}

/* Loses the unlocks of the next *arg commits. */
static int lose_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *n = arg;

	(void)w;
	if (strcmp(point, "dtx.unlock.lost") || !*n)
		return 0;
	(*n)--;
	return SMART_EQP;
}

/* A transfer's unlocks lost on worker wa (alive), then on wb a commit that
 * locks account 5 and writes nothing, its unlock lost too, then the object
 * freed on wb and the ctx destroyed.  The free releases wb's lost unlock
 * and cannot tell wa's from one in flight: SMART_EBUSY, the ctx tainted,
 * its ids buried (the round robin set back to them by hand, as in
 * stuck_bye); the next reader rolls the finished transfer forward. */
static void test_lost_free(void)
{
	struct smart_dtx_stats st0, st1, st;
	struct world wd;
	smart_ctx_t *c, *n;
	smart_worker_t *wa, *wb;
	smart_dtx_t *d;
	smart_dtx_txn_t *x, *y;
	uint16_t bl[2], id[2], nid[2];
	int64_t sum, s, v[2];
	int lose = 2, r_rfu, r_free, b;

	world_open(&wd, 1);
	c = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	CHECK_OK(smart_worker_create(c, &wa));
	CHECK_OK(smart_worker_create(c, &wb));
	CHECK_OK(smart_dtx_open(wa, bl[0], DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, wa, &x));
	CHECK_OK(smart_ctx_set_hook(c, lose_hook, &lose));
	CHECK_OK(transfer(x, wa, 0, 3, 1, 3, 50));
	CHECK_OK(smart_dtx_begin(x));
	CHECK_GE(smart_dtx_read_for_update(x, 0, 5, &s, sizeof(s)), 0);
	r_rfu = smart_dtx_commit(x, wb);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_OK(smart_dtx_stats(d, NULL, &st0));
	r_free = smart_dtx_txn_free(x, wb);
	CHECK_OK(smart_dtx_stats(d, NULL, &st1));
	CHECK_OK(smart_dtx_close(d, wa));
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(c, bl[b], &id[b]));
	CHECK_OK(smart_worker_destroy(wb));
	CHECK_OK(smart_worker_destroy(wa));
	CHECK_OK(smart_ctx_destroy(c));
	wait_dead(&wd, (int[]){ id[0], id[1] });
	for (b = 0; b < 2; b++) /* no handshake in flight */
		__atomic_store_n(&wd.b[b]->next_lease, id[b], __ATOMIC_SEQ_CST);
	n = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(n, bl[b], &nid[b]));
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));
	sum = audit(&wd);
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &y));
	CHECK_OK(smart_dtx_begin(y));
	CHECK_GE(smart_dtx_read(y, 0, 3, &v[0], 8), 0);
	CHECK_GE(smart_dtx_read(y, 1, 3, &v[1], 8), 0);
	CHECK_OK(smart_dtx_commit(y, wd.w));
	CHECK_OK(smart_dtx_txn_free(y, wd.w));
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("lost_free: the commit writing nothing: %s; txn_free: %s (wb's "
	       "released again %llu); ids %u, %u, the newcomer's %u, %u; "
	       "audit %lld (expected %d), accounts %lld, %lld, rolled forward "
	       "%llu, locks recovered %llu\n",
	       smart_status_name(r_rfu), smart_status_name(r_free),
	       (unsigned long long)(st1.unlocks_redone - st0.unlocks_redone),
	       id[0], id[1], nid[0], nid[1], (long long)sum,
	       2 * ACCOUNTS * START_BAL, (long long)v[0], (long long)v[1],
	       (unsigned long long)(st.rolled_forward - st0.rolled_forward),
	       (unsigned long long)(st.locks_recovered - st0.locks_recovered));
	CHECK_OK(r_rfu);
	CHECK_EQ(r_free, SMART_EBUSY);
	CHECK_EQ(st1.unlocks_redone - st0.unlocks_redone, 1);
	CHECK(nid[0] != id[0] && nid[1] != id[1]);
	CHECK_EQ(sum, 2 * ACCOUNTS * START_BAL);
	CHECK_EQ(v[0], START_BAL - 50);
	CHECK_EQ(v[1], START_BAL + 50);
	CHECK_GT(st.rolled_forward - st0.rolled_forward, 0);
	check_clean(&wd);
	CHECK_OK(smart_ctx_destroy(n));
	world_close(&wd);
}

/* Reads of table 0's account `acct` on the world's worker, up to `tries`:
 * how many aborted before one committed (tries when none did). */
static int aborted_reads(struct world *wd, uint64_t acct, int tries)
{
	smart_dtx_txn_t *x;
	int64_t v;
	int n, rc = SMART_EABORT;

	CHECK_OK(smart_dtx_txn_new(wd->d, wd->w, &x));
	for (n = 0; rc == SMART_EABORT && n < tries; n++) {
		CHECK_OK(smart_dtx_begin(x));
		CHECK_GE(smart_dtx_read(x, 0, acct, &v, 8), 0);
		rc = smart_dtx_commit(x, wd->w);
		if (!rc)
			break;
	}
	CHECK_OK(smart_dtx_txn_free(x, wd->w));
	return n;
}

/* A transfer's unlocks lost on worker wa, the object neither freed nor its
 * database closed, then wa and the ctx destroyed.  The object's unlocks not
 * seen landed hold the ctx (smart_ctx_hold), so its sessions end without
 * a BYE and its ids are buried: the round robin set back to them by hand
 * (as in stuck_bye) skips them, and the next reader rolls the transfer
 * forward.  Before, nothing tainted the ctx, the BYE gave the ids back,
 * the newcomer got them and the lock named a live client: 1000 of 1000
 * reads aborted (mutant DTX_UNLOCK_NO_HOLD). */
static void test_lost_unfreed(void)
{
	struct smart_dtx_stats st0, st;
	struct world wd;
	smart_ctx_t *c, *n;
	smart_worker_t *wa;
	smart_dtx_t *d;
	smart_dtx_txn_t *x;
	uint16_t bl[2], id[2], nid[2];
	int lose = 1, b, ab;

	world_open(&wd, 1);
	c = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	CHECK_OK(smart_worker_create(c, &wa));
	test_leak_begin(); /* d and x are never freed: the scenario */
	CHECK_OK(smart_dtx_open(wa, bl[0], DB, NULL, &d));
	CHECK_OK(smart_dtx_txn_new(d, wa, &x));
	test_leak_end();
	CHECK_OK(smart_ctx_set_hook(c, lose_hook, &lose));
	CHECK_OK(transfer(x, wa, 0, 3, 1, 3, 50)); /* unlocks lost */
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	CHECK_EQ(lose, 0);
	CHECK_EQ(smart_dtx_close(d, wa), SMART_EBUSY); /* x never freed */
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(c, bl[b], &id[b]));
	CHECK_OK(smart_worker_destroy(wa));
	CHECK_OK(smart_ctx_destroy(c));
	wait_dead(&wd, (int[]){ id[0], id[1] });
	for (b = 0; b < 2; b++) /* no handshake in flight */
		__atomic_store_n(&wd.b[b]->next_lease, id[b], __ATOMIC_SEQ_CST);
	n = ctx_both(smart_blade_address(wd.b[0]), smart_blade_address(wd.b[1]),
		     secret_path, &bl[0], &bl[1]);
	for (b = 0; b < 2; b++)
		CHECK_OK(smart_lease_id(n, bl[b], &nid[b]));
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));
	ab = aborted_reads(&wd, 3, 1000);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	printf("lost_unfreed: the ids %u, %u; the newcomer's %u, %u; reads of "
	       "the record whose unlock was lost: %d of 1000 aborted, rolled "
	       "forward %llu\n",
	       id[0], id[1], nid[0], nid[1], ab,
	       (unsigned long long)(st.rolled_forward - st0.rolled_forward));
	CHECK_OK(smart_ctx_destroy(n));
	CHECK(nid[0] != id[0] && nid[1] != id[1]);
	CHECK_EQ(ab, 0);
	CHECK_GT(st.rolled_forward - st0.rolled_forward, 0);
	CHECK_EQ(audit(&wd), 2 * ACCOUNTS * START_BAL);
	check_clean(&wd);
	world_close(&wd);
}

/* A memory blade gone: transactions on its table fail with an error (not
 * SMART_EABORT, not a hang); those on the other blade's table go on. */
static void test_dead_blade(void)
{
	static const struct smart_dtx_table split[2] = {
		{ 0, 8, 8, 0 },
		{ 1, 8, 8, 1 },
	};
	struct smart_dtx_config c;
	struct world wd;
	smart_dtx_txn_t *x;
	smart_dtx_t *d;
	uint64_t t0;
	int64_t v;
	int rc = 0, i, n;

	world_open(&wd, 1);
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
		CHECK_GE(smart_dtx_insert(x, (uint32_t)i, 7, &(int64_t){ 5 },
					  8),
			 0);
		CHECK_OK(smart_dtx_commit(x, wd.w));
	}
	CHECK_OK(smart_blade_destroy(wd.b[1]));
	wd.b[1] = NULL;
	t0 = test_now_ms();
	for (n = 0; n < 100000; n++) { /* until the ctx sees it gone */
		CHECK_OK(smart_dtx_begin(x));
		CHECK_GE(smart_dtx_read_for_update(x, 1, 7, &v, 8), 0);
		rc = smart_dtx_commit(x, wd.w);
		if (rc && rc != SMART_EABORT)
			break;
	}
	printf("dead blade: a transaction on it failed with %s after %llu "
	       "ms (%d tries)\n",
	       smart_status_name(rc), (unsigned long long)(test_now_ms() - t0),
	       n);
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
	CHECK_OK(smart_dtx_close(d, NULL)); /* its memory on blade 0 stays */
	CHECK_OK(smart_dtx_close(wd.d, NULL));
	CHECK_OK(smart_worker_destroy(wd.w));
	CHECK_OK(smart_ctx_destroy(wd.ctx));
	CHECK_OK(smart_blade_destroy(wd.b[0]));
}

int main(int argc, char **argv)
{
	test_children(argc, argv,
		      (struct test_child[]){ { "dies", child_main },
					     { "recoverer", recoverer_main },
					     { 0 } });
	guard_init(300);
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "deaths", test_deaths },
				 { "operator", test_operator },
				 { "recoverer_dies", test_recoverer_dies },
				 { "stale_decision", test_stale_decision },
				 { "undo_fails", test_undo_fails },
				 { "undo_half", test_undo_half },
				 { "stuck_bye", test_stuck_bye },
				 { "lost_free", test_lost_free },
				 { "lost_unfreed", test_lost_unfreed },
				 { "two_recoverers", test_two_recoverers },
				 { "dead_blade", test_dead_blade },
				 { 0 } });
}
