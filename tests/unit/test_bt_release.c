/*
 * Smart-BT: a lock whose release is lost (docs/bt.md §4, "A lost
 * release"), driven by the tree's seams (smart/hook.h) as transport
 * errors on a broken QP would: a release lost once is tried again and
 * the word freed, the ctx kept (release_retry); a release lost for good
 * fences the ctx after half a lease, so that another client takes the
 * word over while the holder's process lives on (release_lost); a
 * release that landed but reported an error frees, when tried again, no
 * lock a merge of ours took meanwhile (release_doubt); a writer finishing
 * its own failed write whose release is lost once finds its words still
 * stamped on the next try and frees them (finish_release), and one fenced
 * inside its finishing leaves its words naming the record for a taker
 * (finish_fenced).  A lock CAS that took its word but reported an error
 * frees it (lock_landed); a reader healing a dead writer's leaf whose
 * release is refused fences its ctx, so that another client takes the
 * word over (heal_release).  And what a
 * ctx fencing itself does to its other structures: a Smart-HT insert in
 * flight stops with SMART_EFENCED and leaves nothing another client
 * cannot clear (fence_other).
 *
 * The fixture helpers are copied from test_bt.c (a file of its own, so
 * that test_bt's cases can move about without these).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/bt.h"
#include "smart/ht.h"
#include "smart/lease.h"
#include "ds/bt/bt_internal.h" /* lock words, seams, counters */

#define BLADE_SIZE (128u << 20)

struct world {
	struct fixture f;
	smart_worker_t *w;
	smart_bt_t *t;
};

static void world_start(struct world *wd)
{
	struct smart_bt_config c;

	fixture_start(&wd->f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(wd->f.ctx, &wd->w));
	smart_bt_config_init(&c);
	c.node_size = 512;
	c.key_max = 12;
	c.val_max = 12;
	c.locks = 4096;
	CHECK_OK(smart_bt_create(wd->w, 1, 3, &c, &wd->t));
}

static void world_stop(struct world *wd)
{
	smart_bt_close(wd->t, wd->w);
	CHECK_OK(smart_worker_destroy(wd->w));
	fixture_stop(&wd->f);
}

/* Keys k00000000 .. k00000009: one leaf, the root. */
static void fill10(struct world *wd)
{
	char k[16];
	unsigned i;

	for (i = 0; i < 10; i++) {
		snprintf(k, sizeof(k), "k%08u", i);
		CHECK_OK(smart_bt_insert(wd->t, wd->w, k, strlen(k), "v", 1));
	}
	CHECK_OK(smart_bt_search(wd->t, wd->w, "k00000001", 9, k, sizeof(k),
				 &(size_t){ 0 }));
}

/* The root leaf's lock word (its address in *lw) as it is now. */
static uint64_t leaf_word(struct world *wd, smart_gaddr_t *lw)
{
	uint64_t base, v;

	CHECK_OK(smart__bt_lock_word(wd->t, atomic_load(&wd->t->root), lw,
				     &base));
	CHECK_OK(smart_read_sync(wd->w, *lw, 8, &v));
	return v;
}

/* A second client of the fixture's blade (another ctx of this process):
 * its ctx, a worker and the tree. */
static smart_ctx_t *client_open(struct world *wd, smart_worker_t **w,
				smart_bt_t **t)
{
	smart_ctx_t *c = fixture_ctx_at(smart_blade_address(wd->f.blade), 1);

	CHECK_OK(smart_worker_create(c, w));
	CHECK_OK(smart_bt_open(*w, 1, 3, NULL, t));
	return c;
}

/* With the root leaf's word free, an update of k00000006 through t on w
 * (bounded by an alarm); -1, not tried, while the word is taken: the
 * update would wait for ever. */
static int update_if_free(smart_bt_t *t, smart_worker_t *w, uint64_t word)
{
	int rc;

	if (word)
		return -1;
	alarm(30);
	rc = smart_bt_update(t, w, "k00000006", 9, "new-6", 5);
	alarm(0);
	return rc;
}

/* Fails the release of a lock taken with nothing written under it
 * ("bt.unlock.failed": an update of a key the leaf lacks), and, with
 * *(int *)arg set, every retry of it too ("bt.release.retry"). */
static int lost_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *forever = arg;

	(void)w;
	if (!strcmp(point, "bt.unlock.failed") ||
	    (*forever && !strcmp(point, "bt.release.retry")))
		return SMART_ECONN;
	return 0;
}

/* A client (a second ctx of this process) updates k00000005a, absent
 * from the leaf: the lock is taken, nothing is written, and the release
 * is refused once.  Before, nothing tried it again: the leaf's word kept
 * the client's stamp, no record under it, for as long as the client
 * lives (release_lost shows another client waiting for it).  Now the
 * release is tried again at once, the word is free, the ctx is not
 * fenced, and the fixture's client updates that leaf (mutant
 * BT_RELEASE_ONCE: the ctx fenced on the first refusal). */
static void test_release_retry(void)
{
	struct world wd;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	smart_gaddr_t lw;
	uint64_t word;
	int forever = 0, rc, ru;

	world_start(&wd);
	fill10(&wd);
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_ctx_set_hook(c, lost_hook, &forever));
	rc = smart_bt_update(t, w, "k00000005a", 10, "x", 1);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	word = leaf_word(&wd, &lw);
	ru = update_if_free(wd.t, wd.w, word);
	printf("release_retry: the update %s, its release refused once: "
	       "%llu retries, ctx fenced %d, leaf word %#llx; another "
	       "client's update %s\n",
	       smart_status_name(rc),
	       (unsigned long long)atomic_load(&t->release_retries),
	       smart_ctx_fenced(c), (unsigned long long)word,
	       word ? "not tried (it would wait for ever)" :
		      smart_status_name(ru));
	CHECK_EQ(rc, SMART_ENOENT);
	CHECK(atomic_load(&t->release_retries) > 0); /* the path */
	CHECK_EQ(word, 0);
	CHECK(!smart_ctx_fenced(c));
	CHECK_OK(ru);
	CHECK_OK(smart_bt_update(t, w, "k00000007", 9, "new-7", 5));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	world_stop(&wd);
}

/* Another client, in a process of its own: its update of k00000006 and
 * search of k00000005 (results, and locks taken over, on the pipe);
 * alarm(20) bounds it. */
static void child_victim(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	struct smart_bt_stats st;
	smart_worker_t *w;
	smart_bt_t *t;
	int out = atoi(args[1]), r[3];
	char v[16];
	size_t n = 0;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	alarm(20); /* a bound on the defect, not a synchronisation */
	r[0] = smart_bt_update(t, w, "k00000006", 9, "new-6", 5);
	r[2] = smart_bt_search(t, w, "k00000005", 9, v, sizeof(v), &n);
	alarm(0);
	if (!r[2]) /* 1: the value a torn write meant */
		r[2] = n == 6 && !memcmp(v, "torn-5", 6);
	CHECK_OK(smart_bt_stats(t, NULL, &st));
	r[1] = (int)st.lock_takeovers;
	CHECK_EQ(write(out, r, sizeof(r)), (ssize_t)sizeof(r));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
}

/* As release_retry, but the release and every retry are refused.
 * Before, the update returned at once, the word kept the live client's
 * stamp, and another client's update of that leaf waited for it (still
 * waiting when its 20-s alarm killed it).  Now the holder tries for half
 * a lease, then taints and fences its ctx; its process lives on (the ctx
 * not destroyed) while the other client, once the lease is fenced, takes
 * the word over (nothing logged: nothing to redo) and updates (mutant
 * BT_RELEASE_NO_FENCE). */
static void test_release_lost(void)
{
	struct world wd;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	smart_gaddr_t lw;
	uint64_t word, t0, ms;
	char a1[12];
	int forever = 1, rc, fenced, p[2], r[3] = { -1, 0, 0 }, status, got;
	pid_t pid;

	world_start(&wd);
	fill10(&wd);
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_ctx_set_hook(c, lost_hook, &forever));
	t0 = test_now_ms();
	rc = smart_bt_update(t, w, "k00000005a", 10, "x", 1);
	ms = test_now_ms() - t0;
	fenced = smart_ctx_fenced(c);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	word = leaf_word(&wd, &lw);
	CHECK_EQ(pipe(p), 0);
	snprintf(a1, sizeof(a1), "%d", p[1]);
	pid = test_spawn("victim",
			 (const char *[]){ smart_blade_address(wd.f.blade), a1,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	got = read(p[0], r, sizeof(r)) == (ssize_t)sizeof(r);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	close(p[0]);
	printf("release_lost: the update %s after %llu ms, %llu retries, "
	       "ctx fenced %d, leaf word %#llx; the holder alive, another "
	       "client's update %s (%d locks taken over)\n",
	       smart_status_name(rc), (unsigned long long)ms,
	       (unsigned long long)atomic_load(&t->release_retries), fenced,
	       (unsigned long long)word,
	       got ? smart_status_name(r[0]) :
	       WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ?
		     "still waiting after 20 s (killed by its alarm)" :
		     "died",
	       r[1]);
	CHECK_EQ(rc, SMART_ENOENT);
	CHECK(atomic_load(&t->release_retries) > 1); /* the path */
	CHECK(fenced);
	CHECK(got);
	CHECK_OK(r[0]);
	CHECK_EQ(r[1], 1);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	CHECK_EQ(smart_bt_update(t, w, "k00000007", 9, "x", 1), SMART_EFENCED);
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	world_stop(&wd);
}

/* At "bt.release.landed" (the release landed, its completion an error),
 * once: a trylock of ours (a merge's, here called by hand) takes the
 * word, then the release reports SMART_ECONN. */
struct doubt {
	smart_bt_t *t;
	smart_gaddr_t a;
	int fired, how, rc;
};

static int doubt_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct doubt *d = arg;

	if (strcmp(point, "bt.release.landed") || d->fired)
		return 0;
	d->fired = 1;
	d->rc = smart__bt_trylock(d->t, w, NULL, 0, d->a, &d->how);
	return SMART_ECONN;
}

/* The release of an update lands but reports an error, and a merge of
 * ours trylocks the word before the retry: the retry (a CAS from the
 * lock's stamp) must leave the trylock's word alone (mutant
 * BT_TRY_SAME_STAMP: a trylock takes words with the lock's stamp, and
 * the retry frees the merge's lock under it). */
static void test_release_doubt(void)
{
	struct doubt d = { 0 };
	struct world wd;
	smart_gaddr_t lw;
	uint64_t word;
	int rc;

	world_start(&wd);
	fill10(&wd);
	d.t = wd.t;
	d.a = atomic_load(&wd.t->root);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, doubt_hook, &d));
	rc = smart_bt_update(wd.t, wd.w, "k00000005", 9, "new-5", 5);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	word = leaf_word(&wd, &lw);
	printf("release_doubt: the update %s, the trylock %s (held %d), "
	       "%llu retries; leaf word %#llx after the retry\n",
	       smart_status_name(rc), smart_status_name(d.rc),
	       d.how == BT_TRY_HELD,
	       (unsigned long long)atomic_load(&wd.t->release_retries),
	       (unsigned long long)word);
	CHECK(d.fired); /* the path */
	CHECK_OK(d.rc);
	CHECK_EQ(d.how, BT_TRY_HELD);
	CHECK(atomic_load(&wd.t->release_retries) > 0);
	CHECK(word != 0); /* the trylock's, still held */
	CHECK(!smart_ctx_fenced(wd.f.ctx));
	CHECK_OK(smart__bt_untry(wd.t, wd.w, d.a, d.how, 0));
	CHECK_OK(smart_sync(wd.w));
	CHECK_EQ(leaf_word(&wd, &lw), 0);
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k00000006", 9, "new-6", 5));
	world_stop(&wd);
}

/* Fails an update's write half way and the release behind it, then the
 * release of its finishing the first time ("bt.finish.release"). */
static int finish_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *releases = arg;

	(void)w;
	if (!strcmp(point, "bt.finish.release"))
		return (*releases)++ ? 0 : SMART_ECONN;
	if (!strcmp(point, "bt.write.torn") ||
	    !strcmp(point, "bt.unlock.failed"))
		return SMART_ECONN;
	return 0;
}

/* A writer finishing its own failed write rewrote the node, but the
 * release of the word was refused: the next try must find the word still
 * stamped with its record, rewrite and release it.  Mutant
 * BT_FINISH_TO_BASE (the finishing takes the word from the record's
 * stamp to the lock's, as before): the next try found no stamp of its
 * record, took the write as finished, and the word kept the lock's stamp,
 * nothing logged under it, for as long as the ctx lives. */
static void test_finish_release(void)
{
	struct world wd;
	smart_gaddr_t lw;
	smart_bt_t *t2;
	uint64_t word;
	char v[16];
	size_t n = 0;
	int releases = 0, rc, ru;

	world_start(&wd);
	fill10(&wd);
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &t2));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, finish_hook, &releases));
	rc = smart_bt_update(wd.t, wd.w, "k00000005", 9, "torn-5", 6);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	word = leaf_word(&wd, &lw);
	ru = update_if_free(t2, wd.w, word);
	printf("finish_release: the update %s, its finishing's release "
	       "refused once (%d tries), ctx fenced %d, records in use %u, "
	       "leaf word %#llx; another object's update %s\n",
	       smart_status_name(rc), releases, smart_ctx_fenced(wd.f.ctx),
	       (unsigned)atomic_load(&wd.t->rec_busy), (unsigned long long)word,
	       word ? "not tried (it would wait for ever)" :
		      smart_status_name(ru));
	CHECK_EQ(rc, SMART_ECONN);
	CHECK_EQ(releases, 2); /* the path: the release tried again */
	CHECK_EQ(word, 0);
	CHECK(!smart_ctx_fenced(wd.f.ctx));
	CHECK_EQ(atomic_load(&wd.t->rec_busy), 0);
	CHECK_OK(ru);
	CHECK_OK(smart_bt_search(t2, wd.w, "k00000005", 9, v, sizeof(v), &n));
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	smart_bt_close(t2, wd.w);
	world_stop(&wd);
}

/* Until blade 1 fenced client id and our keeper saw it. */
static void wait_dead(struct world *wd, uint16_t id)
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
	CHECK_MSG(!alive, "the blade did not fence the client");
}

/* Fails an update's write half way and the release behind it; at
 * "bt.finish.taken" (the finishing checked its words, the node not yet
 * rewritten) the ctx is fenced, as its keeper fences it when its lease
 * runs out at that moment. */
static int taken_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *fenced = arg;

	if (!strcmp(point, "bt.finish.taken") && !*fenced) {
		*fenced = 1;
		CHECK_OK(smart_ctx_fence(smart_worker_ctx(w)));
		return 0;
	}
	if (!strcmp(point, "bt.write.torn") ||
	    !strcmp(point, "bt.unlock.failed"))
		return SMART_ECONN;
	return 0;
}

/* A client's write fails half way (the leaf torn), its release too, and
 * its ctx is fenced while it finishes the write, between the check of its
 * words and the rewrite: the finishing fails, the record is kept.  The
 * words must still name it, so that another client, once the lease is
 * fenced, redoes the write.  Mutant BT_FINISH_TO_BASE (the finishing
 * first moved the words to the lock's stamp): the words named nothing to
 * redo over a torn leaf, and every search of the key failed
 * SMART_ERETRY for good. */
static void test_finish_fenced(void)
{
	struct smart_bt_stats st;
	struct world wd;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	uint16_t id;
	char v[16];
	size_t n = 0;
	int fenced = 0, rc, rs;

	world_start(&wd);
	fill10(&wd);
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_lease_id(c, 1, &id));
	CHECK_OK(smart_ctx_set_hook(c, taken_hook, &fenced));
	rc = smart_bt_update(t, w, "k00000005", 9, "torn-5", 6);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	wait_dead(&wd, id);
	rs = smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v), &n);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	printf("finish_fenced: the update %s, fenced inside its finishing "
	       "%d, records kept %u; after its lease, another client's "
	       "search %s \"%.*s\" (%llu redone)\n",
	       smart_status_name(rc), fenced,
	       (unsigned)atomic_load(&t->rec_busy), smart_status_name(rs),
	       rs ? 0 : (int)n, v, (unsigned long long)st.repairs);
	CHECK(fenced); /* the path */
	CHECK_EQ(rc, SMART_ECONN);
	CHECK(atomic_load(&t->rec_busy) != 0);
	CHECK_OK(rs);
	CHECK(n == 6 && !memcmp(v, "torn-5", 6));
	CHECK_EQ(st.repairs, 1);
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k00000006", 9, "new-6", 5));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	world_stop(&wd);
}

/* Fails "bt.lock.landed" once: a lock CAS took the word, its completion
 * an error. */
static int landed_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *fired = arg;

	(void)w;
	if (strcmp(point, "bt.lock.landed") || *fired)
		return 0;
	*fired = 1;
	return SMART_ECONN;
}

/* A client's lock CAS takes the leaf's word but reports an error (a QP
 * broken after executing it): the op fails, and the word must not stay
 * taken by the live client.  Mutant BT_LOCK_LOST_KEPT (as before: the
 * error returned, the word left as the CAS made it): the word kept the
 * client's stamp, and every other writer of the leaf would wait for as
 * long as the client lives. */
static void test_lock_landed(void)
{
	struct world wd;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	smart_gaddr_t lw;
	uint64_t word;
	int fired = 0, rc, ru;

	world_start(&wd);
	fill10(&wd);
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_ctx_set_hook(c, landed_hook, &fired));
	rc = smart_bt_update(t, w, "k00000005", 9, "new-5", 5);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	word = leaf_word(&wd, &lw);
	ru = update_if_free(wd.t, wd.w, word);
	printf("lock_landed: the update %s, its CAS landed with an error: "
	       "%llu retries, ctx fenced %d, leaf word %#llx; another "
	       "client's update %s\n",
	       smart_status_name(rc),
	       (unsigned long long)atomic_load(&t->release_retries),
	       smart_ctx_fenced(c), (unsigned long long)word,
	       word ? "not tried (it would wait for ever)" :
		      smart_status_name(ru));
	CHECK(fired); /* the path */
	CHECK(rc != 0);
	CHECK(atomic_load(&t->release_retries) > 0);
	CHECK_EQ(word, 0);
	CHECK(!smart_ctx_fenced(c));
	CHECK_OK(ru);
	CHECK_OK(smart_bt_update(t, w, "k00000007", 9, "new-7", 5));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	world_stop(&wd);
}

/* At "bt.write.torn" (half the entry landed), once: the writer's ctx is
 * fenced, so that the rest and its finishing are refused and the record
 * is kept for a taker. */
static int torn_fence_hook(smart_worker_t *w, const char *point, void *arg)
{
	(void)arg;
	if (!strcmp(point, "bt.write.torn")) {
		CHECK_OK(smart_ctx_taint(smart_worker_ctx(w)));
		CHECK_OK(smart_ctx_fence(smart_worker_ctx(w)));
	}
	return 0;
}

/* Fails every "bt.heal.release" (a reader's release of the word it took
 * over from a dead writer to redo its write). */
static int heal_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *heals = arg;

	(void)w;
	if (strcmp(point, "bt.heal.release"))
		return 0;
	(*heals)++;
	return SMART_ECONN;
}

/* A writer dies (is fenced) inside its write, the leaf torn; a reader (the
 * fixture's client) heals it — takes the word over, redoes the write —
 * but its release of the word is refused for good.  Before (mutant
 * BT_LOCK_LOST_KEPT), the word kept the live reader's stamp and another
 * client's update waited for it (still waiting when its 20-s alarm
 * killed it).  Now the reader, outside the local slots, cannot tell its
 * word from another task's: it fences its ctx at once, and the other
 * client, once that lease is fenced, takes the word over, updates, and
 * finds the redone value. */
static void test_heal_release(void)
{
	struct world wd;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	uint16_t id;
	char a1[12], v[16];
	size_t n = 0;
	int heals = 0, rc, rs, p[2], r[3] = { -1, 0, 0 }, status, got;
	pid_t pid;

	world_start(&wd);
	fill10(&wd);
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_lease_id(c, 1, &id));
	CHECK_OK(smart_ctx_set_hook(c, torn_fence_hook, NULL));
	rc = smart_bt_update(t, w, "k00000005", 9, "torn-5", 6);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	CHECK(atomic_load(&t->rec_busy) != 0); /* kept for a taker */
	wait_dead(&wd, id);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, heal_hook, &heals));
	rs = smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v), &n);
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_EQ(pipe(p), 0);
	snprintf(a1, sizeof(a1), "%d", p[1]);
	pid = test_spawn("victim",
			 (const char *[]){ smart_blade_address(wd.f.blade), a1,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	got = read(p[0], r, sizeof(r)) == (ssize_t)sizeof(r);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	close(p[0]);
	printf("heal_release: the writer's update %s; the reader's heal "
	       "released nothing (%d refused), its search %s, its ctx fenced "
	       "%d; the reader alive, another client's update %s (%d locks "
	       "taken over), its search found the redone value %d\n",
	       smart_status_name(rc), heals, smart_status_name(rs),
	       smart_ctx_fenced(wd.f.ctx),
	       got ? smart_status_name(r[0]) :
	       WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ?
		     "still waiting after 20 s (killed by its alarm)" :
		     "died",
	       r[1], r[2]);
	CHECK(heals > 0); /* the path */
	CHECK(rs != 0);
	CHECK(smart_ctx_fenced(wd.f.ctx));
	CHECK(got);
	CHECK_OK(r[0]);
	CHECK_EQ(r[1], 1);
	CHECK_EQ(r[2], 1);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status));
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	world_stop(&wd);
}

/* At "ht.insert.placed" (a tentative slot of Smart-HT placed), once: the
 * ctx fences itself, as a tree of the ctx giving up a write or a release
 * on another worker would at that moment. */
static int fence_hook(smart_worker_t *w, const char *point, void *arg)
{
	int *fired = arg;

	if (strcmp(point, "ht.insert.placed") || *fired)
		return 0;
	*fired = 1;
	CHECK_OK(smart_ctx_taint(smart_worker_ctx(w)));
	CHECK_OK(smart_ctx_fence(smart_worker_ctx(w)));
	return 0;
}

static void *fence_thread(void *c)
{
	return (void *)(intptr_t)smart_ctx_fence(c);
}

/* A ctx fenced by itself (what the tree does, above) in the middle of a
 * Smart-HT insert of the same ctx, then twice more at once from two
 * threads: every op of the ctx, the insert's rest included, fails
 * SMART_EFENCED; once its lease is fenced, another client finds no trace
 * of the half insert (its tentative slot cleared as a dead client's),
 * inserts that key, and updates the tree. */
static void test_fence_other(void)
{
	struct smart_ht_config hc;
	struct smart_ht_stats hs;
	struct world wd;
	smart_ht_t *h, *ch;
	smart_ctx_t *c;
	smart_worker_t *w;
	smart_bt_t *t;
	pthread_t th[2];
	void *tr[2];
	uint16_t id;
	char v[16];
	size_t n = 0;
	int fired = 0, ri, rb, rs, rf, rh;

	world_start(&wd);
	fill10(&wd);
	smart_ht_config_init(&hc);
	hc.spec_cache = 0;
	CHECK_OK(smart_ht_create(wd.w, 1, 0, &hc, &h));
	CHECK_OK(smart_ht_insert(h, wd.w, "a", 1, "1", 1));
	c = client_open(&wd, &w, &t);
	CHECK_OK(smart_lease_id(c, 1, &id));
	CHECK_OK(smart_ht_open(w, 1, 0, NULL, &ch));
	CHECK_OK(smart_ctx_set_hook(c, fence_hook, &fired));
	ri = smart_ht_insert(ch, w, "half", 4, "x", 1);
	CHECK_OK(smart_ctx_set_hook(c, NULL, NULL));
	CHECK_EQ(pthread_create(&th[0], NULL, fence_thread, c), 0);
	CHECK_EQ(pthread_create(&th[1], NULL, fence_thread, c), 0);
	CHECK_EQ(pthread_join(th[0], &tr[0]), 0);
	CHECK_EQ(pthread_join(th[1], &tr[1]), 0);
	rf = smart_ctx_fence(c);
	rb = smart_bt_update(t, w, "k00000001", 9, "x", 1);
	rs = smart_ht_search(ch, w, "a", 1, v, sizeof(v), &n);
	wait_dead(&wd, id);
	rh = smart_ht_search(h, wd.w, "half", 4, v, sizeof(v), &n);
	CHECK_OK(smart_ht_insert(h, wd.w, "half", 4, "y", 1));
	CHECK_OK(smart_ht_search(h, wd.w, "half", 4, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == 'y');
	CHECK_OK(smart_ht_stats(h, wd.w, &hs));
	printf("fence_other: fenced inside an HT insert: the insert %s, the "
	       "fence again from two threads %s/%s and once more %s, the "
	       "ctx's tree update %s, its HT search %s; after its lease, "
	       "another client's search of the half-inserted key %s (%llu "
	       "tentative slots cleared), its insert of it OK\n",
	       smart_status_name(ri), smart_status_name((int)(intptr_t)tr[0]),
	       smart_status_name((int)(intptr_t)tr[1]), smart_status_name(rf),
	       smart_status_name(rb), smart_status_name(rs),
	       smart_status_name(rh), (unsigned long long)hs.tent_cleared);
	CHECK(fired);
	CHECK_EQ(ri, SMART_EFENCED);
	CHECK_OK((int)(intptr_t)tr[0]);
	CHECK_OK((int)(intptr_t)tr[1]);
	CHECK_OK(rf);
	CHECK_EQ(rb, SMART_EFENCED);
	CHECK_EQ(rs, SMART_EFENCED);
	CHECK_EQ(rh, SMART_ENOENT);
	CHECK_OK(smart_ht_search(h, wd.w, "a", 1, v, sizeof(v), &n));
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k00000001", 9, "new-1", 5));
	smart_ht_close(ch, w);
	smart_bt_close(t, w);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	smart_ht_close(h, wd.w);
	world_stop(&wd);
}

int main(int argc, char **argv)
{
	return test_main_children(
		argc, argv,
		(struct test_case[]){ { "release_retry", test_release_retry },
				      { "release_lost", test_release_lost },
				      { "release_doubt", test_release_doubt },
				      { "finish_release", test_finish_release },
				      { "finish_fenced", test_finish_fenced },
				      { "lock_landed", test_lock_landed },
				      { "heal_release", test_heal_release },
				      { "fence_other", test_fence_other },
				      { 0 } },
		(struct test_child[]){ { "victim", child_victim }, { 0 } });
}
