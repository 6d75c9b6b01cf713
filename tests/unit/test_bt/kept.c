/*
 * test_bt, records kept for their takers when a write's finishing failed
 * (closing, reopening) and HOCL's hand-over limit.
 */
#include "bt_test.h"

/* ---- a write whose finishing failed, its object closed ---- */

/* Fails a logged write's post half way ("bt.write.torn": half the entry
 * landed), the release behind it ("bt.unlock.failed") and its finishing
 * ("bt.write.finish"), as transport errors on a broken QP would. */
static int kept_hook(smart_worker_t *w, const char *point, void *arg)
{
	(void)w;
	(void)arg;
	if (!strcmp(point, "bt.write.torn") ||
	    !strcmp(point, "bt.unlock.failed") ||
	    !strcmp(point, "bt.write.finish"))
		return SMART_ECONN;
	return 0;
}

/* Until blade 1 fenced client id and our keeper saw it. */
static void kept_wait_dead(struct world *wd, uint16_t id)
{
	int i, alive = 1;

	for (i = 0; alive && i < 4000; i++) {
		alive = smart_lease_alive_now(wd->w, 1, id);
		CHECK_GE(alive, 0);
		if (!alive)
			alive = smart_lease_alive(wd->w, 1, id);
		CHECK_GE(alive, 0);
		if (alive)
			sleep_ms(1);
	}
	CHECK_MSG(!alive, "the blade did not fence the closed client");
}

/* A client's update of k00000005 fails inside its write, and so does its
 * finishing: the leaf's word keeps its stamp, the node half written, the
 * record kept for the word's taker.  The client closes the tree and
 * destroys its ctx; a newcomer then gets the next lease id (the round
 * robin set back to the closed client's by hand).  Before, close freed
 * the object's directory slot (a taker found no record there: the leaf
 * torn for good) and the BYE gave the client's id to the newcomer (a
 * taker waited on a "live" holder): the search failed SMART_ERETRY.  Now
 * the slot stays claimed, the ctx is tainted (its id buried), and the
 * next reader redoes the update. */
void test_close_kept(void)
{
	struct smart_bt_stats st;
	struct world wd;
	smart_ctx_t *c, *nc;
	smart_worker_t *w;
	smart_bt_t *t;
	uint16_t id, nid;
	uint64_t e;
	unsigned slot;
	char v[16];
	size_t n = 0;
	int rc;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 20);
	c = fixture_ctx_at(smart_blade_address(wd.f.blade), 1);
	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, kept_hook, NULL));
	CHECK_EQ(smart_bt_update(t, w, "k00000005", 9, "torn-5", 6),
		 SMART_ECONN);
	CHECK(atomic_load(&t->rec_busy) != 0); /* the path: kept */
	slot = t->dslot[0];
	CHECK_OK(smart_lease_id(c, 1, &id));
	CHECK_OK(smart_bt_close(t, w));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	kept_wait_dead(&wd, id);
	__atomic_store_n(&wd.f.blade->next_lease, id, __ATOMIC_SEQ_CST);
	nc = fixture_ctx_at(smart_blade_address(wd.f.blade), 1);
	CHECK_OK(smart_lease_id(nc, 1, &nid));
	CHECK_OK(smart_read_sync(wd.w,
				 smart_gaddr(1, wd.t->dir_off[0] +
							8 * (uint64_t)slot),
				 8, &e));
	alarm(30);
	rc = smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v), &n);
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	printf("a write whose finishing failed, its object closed: its "
	       "directory slot names id %u (the closer's %u), the newcomer "
	       "got id %u; search %s \"%.*s\", %llu redone\n",
	       BT_DIR_ID(e), id, nid, smart_status_name(rc), rc ? 0 : (int)n, v,
	       (unsigned long long)st.repairs);
	CHECK_OK(rc);
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	CHECK_EQ(BT_DIR_ID(e), id);
	CHECK(nid != id);
	CHECK_EQ(st.repairs, 1);
	CHECK_OK(smart_ctx_destroy(nc));
	world_stop(&wd);
}

/* As close_kept, but the client's ctx lives on and opens the tree again
 * (mode "closed": the kept record's object closed first; "open": still
 * open).  Before, the leaf's word kept the object's stamp, naming the
 * live ctx's own lease id, which remote_acquire takes for "another task
 * of ours": the child's update of k00000006 retried for ever (killed by
 * its alarm after 5 s, both modes), and every search of k00000005, the
 * child's and another client's, failed SMART_ERETRY (no taker redoes a
 * live client's record).  Now the writer that cannot finish its write
 * fences its ctx: the child's open and update fail SMART_EFENCED at once,
 * and, while the child still lives, another client's keeper fences its
 * lease and that client's search redoes the update.  The child reports
 * on a pipe and waits for "go" before it ends; alarm(5) bounds it. */
void child_kept_reopen(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	int out = atoi(args[1]), in = atoi(args[2]), r[5];
	int open = !strcmp(args[3], "open");
	smart_bt_t *t, *t2 = NULL;
	smart_worker_t *w;
	uint16_t id;
	char go;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_lease_id(c, 1, &id));
	CHECK_OK(smart_ctx_set_hook(c, kept_hook, NULL));
	alarm(5); /* a bound on the defect, not a synchronisation */
	r[0] = id;
	r[1] = smart_bt_update(t, w, "k00000005", 9, "torn-5", 6);
	CHECK(atomic_load(&t->rec_busy) != 0); /* the path: kept */
	r[2] = smart_ctx_fenced(c);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	if (!open)
		CHECK_OK(smart_bt_close(t, w));
	r[3] = smart_bt_open(w, 1, 3, NULL, &t2); /* reopened, same ctx */
	r[4] = r[3] && !open ? r[3] :
			       smart_bt_update(r[3] ? t : t2, w, "k00000006", 9,
					       "new-6", 5);
	alarm(0);
	CHECK_EQ(write(out, r, sizeof(r)), (ssize_t)sizeof(r));
	CHECK_EQ(read(in, &go, 1), 1);
	if (!r[3])
		smart_bt_close(t2, w);
	if (open)
		smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
}

static void kept_reopen_on(const char *mode)
{
	struct smart_bt_stats st;
	struct world wd;
	char a1[12], a2[12], v[16];
	int up[2], down[2], r[5], status, hung, rs = -1, ru = -1;
	size_t n = 0;
	pid_t pid;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 20);
	CHECK_EQ(pipe(up), 0);
	CHECK_EQ(pipe(down), 0);
	snprintf(a1, sizeof(a1), "%d", up[1]);
	snprintf(a2, sizeof(a2), "%d", down[0]);
	pid = test_spawn("kept_reopen",
			 (const char *[]){ smart_blade_address(wd.f.blade), a1,
					   a2, mode, NULL });
	CHECK_GE(pid, 0);
	close(up[1]);
	close(down[0]);
	hung = read(up[0], r, sizeof(r)) != (ssize_t)sizeof(r);
	if (!hung) { /* the child lives on, fenced: its lease runs out */
		kept_wait_dead(&wd, (uint16_t)r[0]);
		alarm(30);
		rs = smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v),
				     &n);
		ru = smart_bt_update(wd.t, wd.w, "k00000006", 9, "new-6", 5);
		alarm(0);
		CHECK_EQ(write(down[1], "g", 1), 1);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	close(up[0]);
	close(down[1]);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	if (hung)
		printf("close_kept_reopen (%s): the child %s\n", mode,
		       WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ?
			       "still waited after 5 s (killed by its alarm)" :
			       "died");
	else
		printf("close_kept_reopen (%s): the write %s, ctx fenced %d; "
		       "its reopen %s, its update %s; after its lease, "
		       "another client's search %s \"%.*s\" (%llu redone), "
		       "update %s\n",
		       mode, smart_status_name(r[1]), r[2],
		       smart_status_name(r[3]), smart_status_name(r[4]),
		       smart_status_name(rs), rs ? 0 : (int)n, v,
		       (unsigned long long)st.repairs, smart_status_name(ru));
	CHECK(!hung);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK_EQ(r[1], SMART_ECONN);
	CHECK(r[2]);
	CHECK_EQ(r[3], SMART_EFENCED);
	CHECK_EQ(r[4], SMART_EFENCED);
	CHECK_OK(rs);
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	CHECK_EQ(st.repairs, 1);
	CHECK_OK(ru);
	world_stop(&wd);
}

void test_close_kept_reopen(void)
{
	kept_reopen_on("closed");
	kept_reopen_on("open");
}

/* Fails "bt.write.finish" the first time only (kept_hook the rest): a
 * QP broken once, replaced at the next post. */
static int kept_once_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *finishes = arg;

	if (!strcmp(point, "bt.write.finish"))
		return (*finishes)++ ? 0 : SMART_ECONN;
	return kept_hook(w, point, arg);
}

/* A write that fails, its release too, and its first finishing: the
 * writer tries again and finishes it, its ctx not fenced, the record
 * back; another object of the ctx then updates that leaf at once (mutant
 * BT_FINISH_ONCE: one try, the ctx fenced). */
void test_kept_retry(void)
{
	struct world wd;
	smart_bt_t *t2;
	char v[16];
	size_t n = 0;
	int finishes = 0, rc;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 20);
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &t2));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, kept_once_hook, &finishes));
	CHECK_EQ(smart_bt_update(wd.t, wd.w, "k00000005", 9, "torn-5", 6),
		 SMART_ECONN);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	alarm(30);
	rc = smart_bt_update(t2, wd.w, "k00000006", 9, "new-6", 5);
	alarm(0);
	printf("kept_retry: the write's finishing tried %d times, ctx fenced "
	       "%d, records in use %u; another object's update %s\n",
	       finishes, smart_ctx_fenced(wd.f.ctx),
	       (unsigned)atomic_load(&wd.t->rec_busy), smart_status_name(rc));
	CHECK_EQ(finishes, 2); /* the path: tried again */
	CHECK(!smart_ctx_fenced(wd.f.ctx));
	CHECK_EQ(atomic_load(&wd.t->rec_busy), 0);
	CHECK_OK(rc);
	CHECK_OK(smart_bt_search(t2, wd.w, "k00000005", 9, v, sizeof(v), &n));
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	smart_bt_close(t2, wd.w);
	world_stop(&wd);
}

/* HOCL's hand-over limit: a process whose tasks always wait for one lock
 * (A: its own tree object, so its own local lock table, like another
 * process) must still let the lock go every BT_HANDOVER_MAX hand-overs,
 * so that a writer elsewhere (B) gets it while A is still busy.  B's
 * updates count only while all of A's tasks run and after A's first 100
 * (before, A's queue may be empty and let the lock go anyway).  A runs
 * until B got the lock 3 times, or for H_CAP updates (what the mutant,
 * which never lets go, runs into).  A's tasks and B's run on one worker,
 * so their interleaving is the task scheduler's, not the machine's:
 * with B on a thread of its own, a B descheduled through all of A's
 * H_CAP updates (a loaded machine) failed the case about 1 run in 10. */
#define H_TASKS 6
#define H_CAP	60000

struct h_shared {
	int left;	   /* A's tasks still running */
	unsigned progress; /* A's updates done */
	unsigned done;	   /* B's updates done while A ran */
};

struct h_arg {
	smart_bt_t *t;
	struct h_shared *sh;
};

static void h_hammer(smart_worker_t *w, void *p)
{
	struct h_arg *a = p;

	while (a->sh->progress < H_CAP && a->sh->done < 3) {
		CHECK_OK(smart_bt_update(a->t, w, "hot", 3, "a", 1));
		a->sh->progress++;
	}
	a->sh->left--;
}

static void h_other(smart_worker_t *w, void *p)
{
	struct h_arg *a = p;
	struct h_shared *sh = a->sh;

	while (sh->left > 0) {
		int from = sh->progress >= 100 && sh->left == H_TASKS;

		CHECK_OK(smart_bt_update(a->t, w, "hot", 3, "b", 1));
		if (from && sh->left == H_TASKS)
			sh->done++;
	}
}

void test_handover_limit(void)
{
	struct h_arg arg[H_TASKS + 1];
	struct smart_bt_stats st;
	struct h_shared sh = { H_TASKS, 0, 0 };
	struct world wd;
	smart_worker_t *w;
	smart_bt_t *a, *b;
	int i;

	world_start(&wd, NULL, 512, 12, 12);
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "hot", 3, "0", 1));
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &a));
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &b));
	CHECK_OK(smart_worker_create(wd.f.ctx, &w));
	for (i = 0; i < H_TASKS; i++) {
		arg[i] = (struct h_arg){ a, &sh };
		CHECK_OK(smart_task_spawn(w, h_hammer, &arg[i]));
	}
	arg[H_TASKS] = (struct h_arg){ b, &sh };
	CHECK_OK(smart_task_spawn(w, h_other, &arg[H_TASKS]));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_bt_stats(a, NULL, &st));
	printf("A: %u updates of one key by %d tasks, %llu hand-overs; B got "
	       "the lock %u times meanwhile\n",
	       sh.progress, H_TASKS, (unsigned long long)st.handovers, sh.done);
	CHECK_GT(st.handovers, 0);
	CHECK_GE(sh.done, 3);
	smart_bt_close(a, wd.w);
	smart_bt_close(b, wd.w);
	world_stop(&wd);
}
