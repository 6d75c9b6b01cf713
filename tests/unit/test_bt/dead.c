/*
 * test_bt, writers killed or stopped at a step: a lock holder killed, torn
 * writes healed, splitters killed between their writes, a separator put
 * twice, an older record behind a stamp, a scan reading ahead.
 */
#include "bt_test.h"

/* The dead holder's process (test_spawn): args are the blade's address
 * and the pipe to say "holding" on.  It stops inside a write, holding
 * the leaf's lock, until it is killed. */
static int hold_hook(smart_worker_t *w, const char *point, void *arg)
{
	(void)w;
	if (!strcmp(point, "bt.write.locked")) {
		CHECK_EQ(write(*(int *)arg, "x", 1), 1);
		for (;;)
			pause();
	}
	return 0;
}

void child_holder(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	smart_worker_t *w;
	smart_bt_t *t;
	int fd = atoi(args[1]);

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, hold_hook, &fd));
	CHECK_OK(smart_bt_update(t, w, "k", 1, "dead", 4));
	TEST_FAIL("the hook did not stop the update");
}

void test_dead_holder(void)
{
	struct world wd;

	world_start(&wd, NULL, 512, 12, 12);
	dead_holder_on(&wd);
	world_stop(&wd);
}

/* A writer killed inside its WRITE (docs/bt.md §4): the child stops at
 * the n-th "bt.write.torn" point (or the first "bt.merge.torn"), where its
 * redo record and half of the node have landed, and says how many ops it
 * finished (4 bytes) down the pipe; it is killed there. */
struct torn_arg {
	int fd;
	int at; /* torn writes to pass before stopping; -1: merges,
			 * -2: inside a redo, its words taken, no node
			 * written (or, before bt.redo.taken was there,
			 * the stamps of its write landed, not its record);
			 * -3: a merge landed and unlocked, R not retired */
	int seen;
	int done; /* ops finished, for the parent */
};

static int torn_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct torn_arg *a = arg;

	(void)w;
	if ((a->at == -1 && !strcmp(point, "bt.merge.torn")) ||
	    (a->at == -3 && !strcmp(point, "bt.merge.unlocked")) ||
	    (a->at == -2 && (!strcmp(point, "bt.redo.taken") ||
			     !strcmp(point, "bt.log.stamped"))) ||
	    (a->at >= 0 && !strcmp(point, "bt.write.torn") &&
	     ++a->seen == a->at)) {
		CHECK_EQ(write(a->fd, &a->done, sizeof(a->done)),
			 (ssize_t)sizeof(a->done));
		for (;;)
			pause();
	}
	return 0;
}

/* args: blade address, pipe, scenario (update, split, merge), n. */
void child_torn(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	struct torn_arg a = { atoi(args[1]), atoi(args[3]), 0, 0 };
	char k[16];
	smart_worker_t *w;
	smart_bt_t *t;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, torn_hook, &a));
	if (!strcmp(args[2], "update")) {
		CHECK_OK(smart_bt_update(t, w, "k00000005", 9, "torn-5", 6));
	} else if (!strcmp(args[2], "update2")) {
		/* takes the first one's lock over: dies inside the redo */
		CHECK_OK(smart_bt_update(t, w, "k00000005", 9, "never", 5));
	} else if (!strcmp(args[2], "update3")) {
		/* takes the first one's lock over: dies inside the redo,
		 * its stamps landed, its record not */
		CHECK_OK(smart_bt_update(t, w, "k00000005", 9, "never", 5));
	} else if (!strcmp(args[2], "split")) {
		for (;; a.done++) {
			key_of(k, (unsigned)a.done);
			CHECK_OK(smart_bt_insert(t, w, k, strlen(k), "v", 1));
		}
	} else {
		a.at = strcmp(args[2], "merge_unlocked") ? -1 : -3;
		for (;; a.done++) {
			key_of(k, (unsigned)a.done);
			CHECK_OK(smart_bt_delete(t, w, k, strlen(k)));
		}
	}
	TEST_FAIL("the hook did not stop the child");
}

void test_torn_holder(void)
{
	struct smart_bt_stats st;
	struct world wd, dry;
	char k[16];
	unsigned i, m;
	int done;

	/* an entry half written: the next reader finds the node torn, sees
	 * its holder dead, takes the lock over and finishes the write */
	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	torn_run(&wd, "update", 1);
	torn_k5(&wd, 1);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.lock_takeovers, 1);
	torn_expect(&wd, 0, 10);
	world_stop(&wd);

	/* ... and the writer that took that lock over dies inside its redo:
	 * it redid through a record of its own, so the next taker finishes
	 * the first writer's update (the second one's never began) */
	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	torn_run(&wd, "update", 1);
	torn_run(&wd, "update2", 1);
	torn_k5(&wd, 1);
	torn_expect(&wd, 0, 10);
	world_stop(&wd);

	/* ... and the taker dies inside its redo once the word is its own,
	 * before any node byte: the next taker redoes the first writer's
	 * update from a record of the dead taker's, which landed first (and
	 * again when the taker's taker dies the same way)
	 * (before: the taker stamped the word, its record never landed,
	 * and the node stayed torn for good: SMART_ERETRY) */
	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	torn_run(&wd, "update", 1);
	torn_run(&wd, "update3", -2);
	torn_run(&wd, "update3", -2); /* its own taker dies the same */
	torn_k5(&wd, 1);
	torn_expect(&wd, 0, 10);
	world_stop(&wd);

	/* a split's left half half written (its new right node is whole):
	 * the insert that split is redone, and the tree grows on from it */
	world_start(&dry, NULL, 512, 12, 12);
	for (m = 0;; m++) {
		key_of(k, m);
		CHECK_OK(smart_bt_insert(dry.t, dry.w, k, strlen(k), "v", 1));
		CHECK_OK(smart_bt_stats(dry.t, NULL, &st));
		if (st.leaf_splits)
			break;
	}
	world_stop(&dry);
	world_start(&wd, NULL, 512, 12, 12);
	done = torn_run(&wd, "split", (int)m + 1);
	CHECK_EQ(done, (int)m);
	alarm(20);
	torn_expect(&wd, 0, m + 1);
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.repairs, 1);
	fill(&wd, m + 1, 200);
	torn_expect(&wd, 0, 200);
	world_stop(&wd);

	/* a merge's leaf half written, its neighbour and parent untouched:
	 * all three are redone at once (one record), no half merge left */
	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 200);
	done = torn_run(&wd, "merge", -1);
	CHECK_GT(done, 0);
	alarm(20);
	torn_expect(&wd, (unsigned)done + 1, 200);
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.repairs, 1);
	for (i = 0; i <= (unsigned)done; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), "w", 1));
	}
	torn_expect(&wd, 0, 200);
	printf("torn writes of killed holders redone: an entry (also when "
	       "its redoer died inside the redo), a split's left half, a "
	       "merge (after %d deletes)\n",
	       done);
	world_stop(&wd);
}

/* A splitter killed between its leaf's write and the parent's (the hook
 * "bt.split.published"): the parent lacks the new leaf's separator, and
 * nobody else would put it there.  Before, every search under that
 * parent moved right and dropped the parent from the index cache, for
 * good; now the first walk that moves right from a parent it read fresh
 * puts the separator in (defect 8). */
static int split_hook(smart_worker_t *w, const char *point, void *arg)
{
	(void)w;
	if (!strcmp(point, "bt.split.published")) {
		CHECK_EQ(write(*(int *)arg, "x", 1), 1);
		for (;;)
			pause();
	}
	return 0;
}

void child_splitter(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	smart_worker_t *w;
	smart_bt_t *t;
	int fd = atoi(args[1]);
	char k[16];
	unsigned i;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, split_hook, &fd));
	/* the first leaf holds k0..k6: 7 more fill it, the 8th splits it */
	for (i = 0; i < 7; i++) {
		snprintf(k, sizeof(k), "k0000000%ux", i);
		CHECK_OK(smart_bt_insert(t, w, k, strlen(k), "s", 1));
	}
	CHECK_OK(smart_bt_insert(t, w, "k00000006y", 10, "s", 1));
	TEST_FAIL("the split did not stop at its seam");
}

void test_dead_splitter(void)
{
	struct smart_bt_config c;
	struct smart_bt_stats st0, st;
	struct world wd;
	smart_bt_t *x;
	char fd[12], k[16], v[16];
	int p[2], status;
	unsigned i;
	size_t n;
	pid_t pid;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100); /* leaves of 7 keys under one root */
	smart_bt_config_init(&c);
	c.spec_entries = 0; /* every search walks: index cache only */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &x));
	key_of(k, 0);
	CHECK_OK(smart_bt_search(x, wd.w, k, strlen(k), v, sizeof(v), &n));
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	pid = test_spawn("splitter",
			 (const char *[]){ smart_blade_address(wd.f.blade), fd,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], fd, 1), 1);
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	/* the split's right half: k3x..k6, without a separator above */
	CHECK_OK(smart_bt_stats(x, NULL, &st0));
	for (i = 0; i < 100; i++) {
		CHECK_OK(smart_bt_search(x, wd.w, "k00000005", 9, v, sizeof(v),
					 &n));
		CHECK(n == 1 && v[0] == 'v');
	}
	CHECK_OK(smart_bt_stats(x, NULL, &st));
	printf("100 searches under a parent whose separator a killed "
	       "splitter never put in: %llu moves right, %llu cache drops, "
	       "%llu separators put in\n",
	       (unsigned long long)(st.move_rights - st0.move_rights),
	       (unsigned long long)(st.cache_drops - st0.cache_drops),
	       (unsigned long long)(st.sep_fixes - st0.sep_fixes));
	CHECK_EQ(st.sep_fixes - st0.sep_fixes, 1);
	CHECK_LE(st.move_rights - st0.move_rights, 2);
	CHECK_LE(st.cache_drops - st0.cache_drops, 1);
	for (i = 0; i < 100; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	for (i = 0; i < 7; i++) { /* the split's insert went in too */
		snprintf(k, sizeof(k), "k0000000%ux", i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k00000006y", 10, v, sizeof(v),
				 &n));
	smart_bt_close(x, wd.w);
	world_stop(&wd);
}

/* A splitter killed one level up: its insert split a leaf, whose
 * separator split the leaf's parent P (not the root), and it is killed
 * there ("bt.split.inner.published"): P's new right sibling P' has no
 * entry in the root.  Before, walks to P''s keys moved right at P's
 * level and dropped the root's cached copy as stale, every other walk,
 * for good; now the first walk that moves right from the node a root
 * read fresh named puts the separator in. */
struct inner_stop {
	int fd;
	unsigned key; /* the insert in flight */
};

static int inner_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct inner_stop *a = arg;

	(void)w;
	if (!strcmp(point, "bt.split.inner.published")) {
		CHECK_EQ(write(a->fd, &a->key, sizeof(a->key)),
			 (ssize_t)sizeof(a->key));
		for (;;)
			pause();
	}
	return 0;
}

/* args: blade address, pipe, the first key to insert. */
void child_inner_splitter(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	struct inner_stop a = { atoi(args[1]), (unsigned)atoi(args[2]) };
	smart_worker_t *w;
	smart_bt_t *t;
	char k[16];

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, inner_hook, &a));
	for (; a.key < 5000; a.key++) {
		key_of(k, a.key);
		CHECK_OK(smart_bt_insert(t, w, k, strlen(k), "v", 1));
	}
	TEST_FAIL("no internal node split");
}

void test_dead_inner_splitter(void)
{
	struct smart_bt_config c;
	struct smart_bt_stats st0, st;
	struct world wd;
	smart_bt_t *x;
	char fd[12], from[12], k[16], v[16];
	unsigned last, i;
	int p[2], status;
	size_t n;
	pid_t pid;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 300); /* root, parents, leaves */
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.height, 3);
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	snprintf(from, sizeof(from), "%d", 300);
	pid = test_spawn("inner_splitter",
			 (const char *[]){ smart_blade_address(wd.f.blade), fd,
					   from, NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], &last, sizeof(last)), (ssize_t)sizeof(last));
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	smart_bt_config_init(&c);
	c.spec_entries = 0; /* every search walks: index cache only */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &x));
	CHECK_OK(smart_bt_stats(x, NULL, &st0));
	key_of(k, last); /* in P', right of P's new high fence */
	for (i = 0; i < 100; i++) {
		CHECK_OK(smart_bt_search(x, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
		CHECK(n == 1 && v[0] == 'v');
	}
	CHECK_OK(smart_bt_stats(x, NULL, &st));
	printf("100 searches under a root whose separator for a parent a "
	       "killed splitter never put in: %llu moves right, %llu cache "
	       "drops, %llu separators put in\n",
	       (unsigned long long)(st.move_rights - st0.move_rights),
	       (unsigned long long)(st.cache_drops - st0.cache_drops),
	       (unsigned long long)(st.sep_fixes - st0.sep_fixes));
	CHECK_EQ(st.sep_fixes - st0.sep_fixes, 1);
	CHECK_LE(st.move_rights - st0.move_rights, 2);
	CHECK_LE(st.cache_drops - st0.cache_drops, 1);
	for (i = 0; i <= last; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	smart_bt_close(x, wd.w);
	world_stop(&wd);
}

/* The splitter is alive after all: stopped at "bt.split.published"
 * while another client's search finds the separator missing and puts it
 * in; then the splitter goes on and must not put it in twice (a second
 * entry naming the new leaf would outlive a merge that removes one). */
struct twice {
	smart_bt_t *x; /* the other client's object */
	smart_worker_t *w;
	int fired;
};

static int twice_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct twice *tw = arg;
	struct smart_bt_stats st;
	char v[16];
	size_t n;

	(void)w;
	if (strcmp(point, "bt.split.published") || tw->fired++)
		return 0;
	CHECK_OK(smart_bt_search(tw->x, tw->w, "k00000005", 9, v, sizeof(v),
				 &n));
	CHECK_OK(smart_bt_stats(tw->x, NULL, &st));
	CHECK_EQ(st.sep_fixes, 1);
	return 0;
}

void test_sep_twice(void)
{
	struct smart_bt_config c;
	struct twice tw = { NULL, NULL, 0 };
	struct world wd;
	smart_ctx_t *c2;
	uint64_t meta, root;
	uint8_t *p;
	uint16_t count;
	unsigned i, named = 0;
	char k[16];

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100);
	c2 = fixture_ctx_at(smart_blade_address(wd.f.blade), 1);
	CHECK_OK(smart_worker_create(c2, &tw.w));
	smart_bt_config_init(&c);
	c.spec_entries = 0;
	CHECK_OK(smart_bt_open(tw.w, 1, 3, &c, &tw.x));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, twice_hook, &tw));
	for (i = 0; i < 7; i++) {
		snprintf(k, sizeof(k), "k0000000%ux", i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), "s", 1));
	}
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "k00000006y", 10, "s", 1));
	CHECK_OK(smart_ctx_set_hook(wd.f.ctx, NULL, NULL));
	CHECK_EQ(tw.fired, 1);
	/* the root: entries from byte 56, 24 bytes each, key at +10 */
	CHECK_OK(smart_root_get(wd.w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd.w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd.w, 512, (void **)&p));
	CHECK_OK(smart_read_sync(wd.w, root, 512, p));
	memcpy(&count, p + 10, 2);
	for (i = 0; i < count; i++)
		named += !memcmp(p + 56 + 24 * i + 10, "k00000003x", 10);
	printf("a separator put in by a helper and by its splitter: %u "
	       "entries for it\n",
	       named);
	CHECK_EQ(named, 1);
	smart_buf_free(wd.w, p);
	smart_bt_close(tw.x, tw.w);
	CHECK_OK(smart_worker_destroy(tw.w));
	CHECK_OK(smart_ctx_destroy(c2));
	world_stop(&wd);
}

/* A writer killed between its stamp and its record (the hook
 * "bt.log.stamped"): the record its stamp names is an older one, of a
 * write of its that completed, since overwritten by another client.  A
 * taker must see that the record does not name the dead stamp and redo
 * nothing; redoing it would roll the node back (k5 to "a1"). */
struct older_arg {
	int out, in;
	int seen;
};

static int older_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct older_arg *a = arg;

	(void)w;
	if (!strcmp(point, "bt.log.stamped") && ++a->seen == 2) {
		CHECK_EQ(write(a->out, "2", 1), 1);
		for (;;)
			pause();
	}
	return 0;
}

void child_older(char **args)
{
	smart_ctx_t *c = fixture_ctx_at(args[0], 1);
	struct older_arg a = { atoi(args[1]), atoi(args[2]), 0 };
	smart_worker_t *w;
	smart_bt_t *t;
	char x;

	CHECK_OK(smart_worker_create(c, &w));
	CHECK_OK(smart_bt_open(w, 1, 3, NULL, &t));
	CHECK_OK(smart_ctx_set_hook(c, older_hook, &a));
	CHECK_OK(smart_bt_update(t, w, "k00000005", 9, "a1", 2));
	CHECK_EQ(write(a.out, "1", 1), 1);
	CHECK_EQ(read(a.in, &x, 1), 1);
	CHECK_OK(smart_bt_update(t, w, "k00000005", 9, "a2", 2));
	TEST_FAIL("the update did not stop at its seam");
}

void test_older_record(void)
{
	struct smart_bt_stats st;
	struct world wd;
	char o[12], i[12], v[16];
	int up[2], down[2], status;
	size_t n;
	pid_t pid;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 10);
	CHECK_EQ(pipe(up), 0);
	CHECK_EQ(pipe(down), 0);
	snprintf(o, sizeof(o), "%d", up[1]);
	snprintf(i, sizeof(i), "%d", down[0]);
	pid = test_spawn("older",
			 (const char *[]){ smart_blade_address(wd.f.blade), o,
					   i, NULL });
	CHECK_GE(pid, 0);
	CHECK_EQ(read(up[0], v, 1), 1); /* its "a1" is in */
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k00000005", 9, "p1", 2));
	CHECK_EQ(write(down[1], "g", 1), 1);
	CHECK_EQ(read(up[0], v, 1), 1); /* "a2": stamp only */
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	alarm(20);
	CHECK_OK(smart_bt_update(wd.t, wd.w, "k00000006", 9, "p6", 2));
	alarm(0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.lock_takeovers, 1); /* the path: the dead stamp */
	CHECK_EQ(st.repairs, 0);
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k00000005", 9, v, sizeof(v), &n));
	printf("a writer killed between its stamp and its record: k5 reads "
	       "%.*s after the takeover\n",
	       (int)n, v);
	CHECK(n == 2 && !memcmp(v, "p1", 2));
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k00000006", 9, v, sizeof(v), &n));
	CHECK(n == 2 && !memcmp(v, "p6", 2));
	world_stop(&wd);
}

/* A scan reads a parent's next leaves at once, from the cached parent,
 * but takes each only when the leaf chain names it next: here the parent
 * lacks the separator of a leaf its killed splitter made (k3x..k6 moved
 * there), so the chain goes X -> N -> R while the parent lists X, R.
 * Taking R after X would skip N's keys. */
void test_scan_ahead(void)
{
	static struct smart_bt_entry ent[200];
	static char buf[200 * 32];
	struct smart_bt_stats st;
	struct world wd;
	smart_bt_t *x;
	char fd[12], k[16], v[16];
	int p[2], status;
	unsigned i, j;
	size_t n;
	pid_t pid;

	world_start(&wd, NULL, 512, 12, 12);
	fill(&wd, 0, 100);
	CHECK_EQ(pipe(p), 0);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	pid = test_spawn("splitter",
			 (const char *[]){ smart_blade_address(wd.f.blade), fd,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], fd, 1), 1);
	close(p[0]);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &x));
	key_of(k, 0); /* caches the parent (no move right: no fix) */
	CHECK_OK(smart_bt_search(x, wd.w, k, strlen(k), v, sizeof(v), &n));
	CHECK_OK(smart_bt_scan(x, wd.w, "k", 1, NULL, 0, ent, 200, buf,
			       sizeof(buf), &n));
	CHECK_OK(smart_bt_stats(x, NULL, &st));
	printf("scan past a leaf its parent does not name: %zu entries, "
	       "%llu leaves taken from those read ahead\n",
	       n, (unsigned long long)st.scan_ahead);
	CHECK_EQ(n, 108); /* 100, k0x..k6x, k6y */
	for (i = 0, j = 0; i < n; i++) {
		if (ent[i].key_len == 9) {
			key_of(k, j++);
			CHECK_MSG(!memcmp(ent[i].key, k, 9),
				  "scan: %.9s "
				  "where %s belongs",
				  (const char *)ent[i].key, k);
		}
		CHECK(!i || bt_keycmp(ent[i - 1].key, ent[i - 1].key_len,
				      ent[i].key, ent[i].key_len) < 0);
	}
	CHECK_EQ(j, 100);
	CHECK_GT(st.scan_ahead, 0); /* the path: leaves read ahead */
	smart_bt_close(x, wd.w);
	world_stop(&wd);
}
