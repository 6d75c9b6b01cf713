/*
 * Smart-HT interleavings forced with hooks (include/smart/hook.h,
 * docs/design.md §10.1): each case stops a task at a named point of the
 * protocol, lets others run, fails a step, and checks the outcome that the
 * guard under test exists for.  Tasks of one worker run one at a time and
 * switch only where they wait, so every case is deterministic; each one is
 * what a mutant of tests/mutants/mutants.txt must fail.
 *
 * Cases:
 *   uncertain_update  a CAS that executed but whose sync "failed" (hook):
 *                     the update is seen done, its block never freed;
 *   frozen_after_cas  the same with the slot frozen by a split meanwhile:
 *                     still seen done (not a leak);
 *   abort_tent        an insert whose tentative slot a split froze, and
 *                     the split undone: the insert still succeeds;
 *   child_locked      a split stopped between its canonical entry and its
 *                     aliases while others fill and split the sibling:
 *                     every key stays readable and writable;
 *   verify            a reader with a stale directory finds a key frozen
 *                     in the old subtable after it was updated in the new
 *                     one: it must not return the old value;
 *   freeze            updates while a split copies the subtable: none is
 *                     lost;
 *   epoch             a reader between a slot and its block while the
 *                     block is replaced and reclamation runs: it never
 *                     reads a freed block;
 *   dup_insert        two inserts of one key, each stopped after placing
 *                     its tentative slot: exactly one succeeds;
 *   header_check      a client with a stale directory inserts after splits:
 *                     the keys land where others look for them;
 *   spec_stale        a speculated slot another client replaced: the new
 *                     value is returned.
 */
#include <stdio.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/ht.h"
#include "ds/ht/ht_internal.h" /* child_locked looks at the directory */

#define BLADE_SIZE (64u << 20)
#define RULES	   4

/* A one-shot action at a point: pause there until released, or fail
 * there with rc. */
enum { ACT_PAUSE = 1, ACT_FAIL };

struct rule {
	const char *point;
	int action, rc;
	int armed;  /* 1: acts at the next hit */
	int paused; /* a task waits at the point */
	int release;
	int fired;
};

struct ctl {
	struct rule r[RULES];
};

static int hook(smart_worker_t *w, const char *point, void *arg)
{
	struct ctl *c = arg;
	int i;

	for (i = 0; i < RULES; i++) {
		struct rule *r = &c->r[i];

		if (!r->armed || !r->point || strcmp(r->point, point))
			continue;
		r->armed = 0;
		r->fired++;
		if (r->action == ACT_FAIL)
			return r->rc;
		r->paused = 1;
		while (!r->release)
			smart_task_yield(w);
		r->paused = 0;
	}
	return 0;
}

static struct rule *rule_arm(struct ctl *c, int i, const char *point,
			     int action, int rc)
{
	c->r[i] = (struct rule){ point, action, rc, 1, 0, 0, 0 };
	return &c->r[i];
}

static void wait_for(smart_worker_t *w, const int *flag)
{
	while (!*flag)
		smart_task_yield(w);
}

static void yield_n(smart_worker_t *w, int n)
{
	while (n--)
		smart_task_yield(w);
}

static smart_ht_t *table(smart_worker_t *w, unsigned depth, unsigned buckets)
{
	struct smart_ht_config c;
	smart_ht_t *t;

	smart_ht_config_init(&c);
	c.depth = depth;
	c.buckets = buckets;
	c.spec_cache = 0;
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &t));
	return t;
}

static smart_ht_t *reopen(smart_worker_t *w)
{
	smart_ht_t *t;

	CHECK_OK(smart_ht_open(w, 1, 0, NULL, &t));
	return t;
}

static void expect_value(smart_ht_t *t, smart_worker_t *w, const char *k,
			 const char *v)
{
	char buf[64];
	size_t n;

	CHECK_OK(smart_ht_search(t, w, k, strlen(k), buf, sizeof(buf), &n));
	CHECK_EQ(n, strlen(v));
	CHECK_MSG(!memcmp(buf, v, n), "key %s: value '%.*s', expected '%s'", k,
		  (int)n, buf, v);
}

/* n keys prefix00..: inserted with value val (NULL: the key itself), or
 * expected to hold it (the same). */
static void keys_insert(smart_ht_t *t, smart_worker_t *w, const char *prefix,
			int n, const char *val)
{
	char k[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%s%02d", prefix, i);
		CHECK_OK(smart_ht_insert(t, w, k, strlen(k), val ? val : k,
					 strlen(val ? val : k)));
	}
}

static void keys_expect(smart_ht_t *t, smart_worker_t *w, const char *prefix,
			int n, const char *val)
{
	char k[16];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(k, sizeof(k), "%s%02d", prefix, i);
		expect_value(t, w, k, val ? val : k);
	}
}

static struct smart_ht_stats stats(smart_ht_t *t, smart_worker_t *w)
{
	struct smart_ht_stats st;

	CHECK_OK(smart_ht_stats(t, w, &st));
	return st;
}

/* ---- uncertain_update ------------------------------------------------ */

static void test_uncertain_update(void)
{
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t;
	char k[32];
	int i;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 2, 64);
	CHECK_OK(smart_ht_insert(t, w, "K", 1, "old", 3));
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	/* the CAS executes, then its sync "fails" */
	rule_arm(&c, 0, "ht.update.cas", ACT_FAIL, SMART_ECONN);
	CHECK_OK(smart_ht_update(t, w, "K", 1, "new", 3));
	CHECK_EQ(c.r[0].fired, 1);
	CHECK_EQ(stats(t, w).leaked, 0);
	/* churn: had the block been freed, it would be reused now */
	for (i = 0; i < 3000; i++) {
		snprintf(k, sizeof(k), "churn-%d", i % 100);
		CHECK_OK(smart_ht_upsert(t, w, k, strlen(k), "xyz", 3));
	}
	CHECK_OK(smart_epoch_drain(w, 1, 1000));
	expect_value(t, w, "K", "new");
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- abort_tent ---------------------------------------------------------- */

struct abort_run {
	smart_ht_t *t;
	struct ctl *c;
	int a_rc, a_done, b_done, b_fail, b_ok, b_n;
	int b_rc[60];
};

static void abort_a(smart_worker_t *w, void *p)
{
	struct abort_run *r = p;

	r->a_rc = smart_ht_insert(r->t, w, "A-key", 5, "A", 1);
	r->a_done = 1;
}

static void abort_b(smart_worker_t *w, void *p)
{
	struct abort_run *r = p;
	char k[16];
	int i, rc;

	wait_for(w, &r->c->r[0].paused); /* A placed its slot */
	for (i = 0; i < 60 && !r->b_fail; i++) {
		snprintf(k, sizeof(k), "b%03d", i);
		rc = smart_ht_insert(r->t, w, k, strlen(k), k, strlen(k));
		if (rc == SMART_ECONN)
			r->b_fail++; /* the split we failed */
		else
			CHECK_OK(rc);
		r->b_ok += !rc;
		r->b_rc[i] = rc;
		r->b_n = i + 1;
	}
	/* room again, so that A's next try needs no split (a split would
	 * clear whatever the undone one left) */
	for (i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "b%03d", i);
		CHECK_OK(smart_ht_delete(r->t, w, k, strlen(k)));
		r->b_rc[i] = SMART_ENOENT;
	}
	r->b_done = 1;
}

static void abort_ctl(smart_worker_t *w, void *p)
{
	struct abort_run *r = p;

	wait_for(w, &r->c->r[1].paused); /* B's split froze S */
	r->c->r[0].release = 1;		 /* A sees its slot frozen */
	yield_n(w, 200);
	rule_arm(r->c, 2, "ht.split.built", ACT_FAIL, SMART_ECONN);
	r->c->r[1].release = 1; /* the split fails: undone */
}

static void test_abort_tent(void)
{
	struct abort_run r = { 0 };
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	char k[16];
	int i;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	r.t = table(w, 0, 2);
	r.c = &c;
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.insert.placed", ACT_PAUSE, 0);
	rule_arm(&c, 1, "ht.split.frozen", ACT_PAUSE, 0);
	CHECK_OK(smart_task_spawn(w, abort_a, &r));
	CHECK_OK(smart_task_spawn(w, abort_b, &r));
	CHECK_OK(smart_task_spawn(w, abort_ctl, &r));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	printf("abort_tent: A %s, B %d inserted, %d failed split(s)\n",
	       smart_status_name(r.a_rc), r.b_ok, r.b_fail);
	CHECK_OK(r.a_rc);
	CHECK_EQ(r.b_fail, 1);
	CHECK_EQ(c.r[2].fired, 1);
	expect_value(r.t, w, "A-key", "A");
	for (i = 0; i < r.b_n; i++) {
		snprintf(k, sizeof(k), "b%03d", i);
		if (!r.b_rc[i])
			expect_value(r.t, w, k, k);
	}
	smart_ht_close(r.t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- child_locked -------------------------------------------------------- */

#define CL_TASKS 56
#define CL_KEYS	 24

struct cl_run {
	smart_ht_t *t;
	struct ctl *c;
	int task;
	int errors;
};

static void cl_first(smart_worker_t *w, void *p)
{
	/* fills the one subtable until it splits (and stops in publish) */
	keys_insert(((struct cl_run *)p)->t, w, "first", 40, NULL);
}

static void cl_inserter(smart_worker_t *w, void *p)
{
	struct cl_run *r = p;
	char k[16];
	int i, rc;

	wait_for(w, &r->c->r[0].paused);
	for (i = 0; i < CL_KEYS; i++) {
		snprintf(k, sizeof(k), "t%02d-%02d", r->task, i);
		rc = smart_ht_insert(r->t, w, k, strlen(k), k, strlen(k));
		if (rc) {
			printf("insert %s: %s\n", k, smart_status_name(rc));
			r->errors++;
		}
	}
}

/* ---- frozen_after_cas ------------------------------------------------- */

/* Toggle HT_SLOT_FROZEN on every used slot of the table's only subtable
 * (depth 0, 2 buckets: one group), as a split starting there would. */
static void freeze_all(smart_ht_t *t, smart_worker_t *w, int on)
{
	struct ht_dir *d;
	struct ht_bucket *g;
	smart_gaddr_t sub;
	uint64_t old;
	int b, j;

	CHECK_OK(smart_buf_alloc(w, sizeof(*d), (void **)&d));
	CHECK_OK(smart_buf_alloc(w, HT_GROUP, (void **)&g));
	CHECK_OK(smart_read_sync(w, t->shard[0].dir, sizeof(*d), d));
	sub = smart_gaddr(t->shard[0].blade, HT_ENT_OFF(d->ent[0]));
	CHECK_OK(smart_read_sync(w, sub, HT_GROUP, g));
	for (b = 0; b < 3; b++)
		for (j = 0; j < HT_SLOTS; j++) {
			uint64_t v = g[b].slot[j];

			if (!(v & ~(uint64_t)HT_SLOT_FROZEN))
				continue;
			CHECK_OK(smart_cas_sync(
				w,
				smart_gaddr_add(sub, (uint64_t)b * HT_BUCKET +
							     8 + 8 * j),
				v,
				on ? v | HT_SLOT_FROZEN :
				     v & ~(uint64_t)HT_SLOT_FROZEN,
				&old));
			CHECK_EQ(old, v);
		}
	smart_buf_free(w, g);
	smart_buf_free(w, d);
}

static int freeze_hook(smart_worker_t *w, const char *point, void *arg)
{
	smart_ht_t *t = arg;

	if (strcmp(point, "ht.update.cas"))
		return 0;
	freeze_all(t, w, 1); /* a split froze the slot after our CAS */
	return SMART_ECONN;  /* and the CAS's sync "failed" */
}

/* An update whose CAS executed, then its slot was frozen by a split,
 * then its sync "failed": the re-read sees the new value frozen, which
 * says the CAS happened (the block is the table's: not leaked). */
static void test_frozen_after_cas(void)
{
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	CHECK_OK(smart_ht_insert(t, w, "K", 1, "old", 3));
	CHECK_OK(smart_ctx_set_hook(f.ctx, freeze_hook, t));
	CHECK_OK(smart_ht_update(t, w, "K", 1, "new", 3));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(stats(t, w).leaked, 0);
	freeze_all(t, w, 0);
	expect_value(t, w, "K", "new");
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* The directory's entries that name a lock holder. */
static int locked_entries(smart_ht_t *t, smart_worker_t *w)
{
	struct ht_dir *d;
	int i, n = 0;

	CHECK_OK(smart_buf_alloc(w, sizeof(*d), (void **)&d));
	CHECK_OK(smart_read_sync(w, t->shard[0].dir, sizeof(*d), d));
	for (i = 0; i < (int)HT_DIR_ENTRIES; i++)
		n += HT_ENT_LOCKED(d->ent[i]);
	smart_buf_free(w, d);
	return n;
}

/* ---- split_error ------------------------------------------------------ */

/* A split whose step fails while its holder lives (a transport error right
 * after the PUBLISH record): nobody takes a live client's lock over, so
 * the splitter settles it itself, from the record - the subtable is not
 * left locked, and inserts go on. */
static void test_split_error(void)
{
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.split.publishing", ACT_FAIL, SMART_ECONN);
	keys_insert(t, w, "e", 60, NULL);
	CHECK_EQ(c.r[0].fired, 1);
	CHECK_EQ(locked_entries(t, w), 0);
	CHECK_GT(stats(t, w).splits, 1);
	keys_expect(t, w, "e", 60, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void cl_ctl(smart_worker_t *w, void *p)
{
	struct cl_run *r = p;

	wait_for(w, &r->c->r[0].paused);
	/* between the canonical entries and the aliases: both S's and N's
	 * are held, so nobody splits N before its aliases exist */
	r->errors += locked_entries(r->t, w) != 2;
	yield_n(w, 3000); /* the sibling fills, and wants to split */
	r->c->r[0].release = 1;
}

static void test_child_locked(void)
{
	static struct cl_run run[CL_TASKS + 2];
	const char *kv[] = { "max_tasks", "64", NULL };
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t, *fresh;
	char k[16];
	int i, j, errors = 0;

	fixture_start(&f, BLADE_SIZE, 1, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.split.canonical", ACT_PAUSE, 0);
	for (i = 0; i < CL_TASKS + 2; i++) {
		run[i] = (struct cl_run){ t, &c, i, 0 };
		CHECK_OK(smart_task_spawn(w,
					  i == 0 ? cl_first :
					  i == 1 ? cl_ctl :
						   cl_inserter,
					  &run[i]));
	}
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(c.r[0].fired, 1);
	for (i = 0; i < CL_TASKS + 2; i++)
		errors += run[i].errors;
	CHECK_EQ(errors, 0);
	/* everything readable and writable through a fresh directory */
	fresh = reopen(w);
	for (i = 2; i < CL_TASKS + 2; i++)
		for (j = 0; j < CL_KEYS; j++) {
			snprintf(k, sizeof(k), "t%02d-%02d", i, j);
			expect_value(fresh, w, k, k);
			CHECK_OK(smart_ht_update(fresh, w, k, strlen(k), k,
						 strlen(k)));
		}
	printf("child_locked: %u subtables, %llu splits\n",
	       stats(fresh, w).subtables,
	       (unsigned long long)stats(t, w).splits);
	smart_ht_close(fresh, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- verify --------------------------------------------------------------- */

#define VF_KEYS 12

struct vf_run {
	smart_ht_t *t; /* the writers' (fresh) object */
	struct ctl *c;
	int key;
	int done;
};

static void vf_split(smart_worker_t *w, void *p)
{
	keys_insert(((struct vf_run *)p)->t, w, "fill", 30, NULL);
}

static void vf_writer(smart_worker_t *w, void *p)
{
	struct vf_run *r = p;
	smart_ht_t *t;
	char k[16];

	wait_for(w, &r->c->r[0].paused); /* published, not settled */
	t = reopen(w);			 /* sees the new directory */
	snprintf(k, sizeof(k), "v%02d", r->key);
	CHECK_OK(smart_ht_update(t, w, k, strlen(k), "new", 3));
	r->done = 1;
	smart_ht_close(t, NULL);
}

struct vf_reader {
	smart_ht_t *stale;
	struct ctl *c;
	struct vf_run *wr;
	int checked;
};

/* 1 when a writer is done: its key moved (a writer of a key that stays
 * waits for the split to settle, which the reader releases) */
static int vf_any_done(const struct vf_run *wr)
{
	int i;

	for (i = 0; i < VF_KEYS; i++)
		if (wr[i].done)
			return 1;
	return 0;
}

static void vf_read(smart_worker_t *w, void *p)
{
	struct vf_reader *r = p;
	char k[16];
	int i;

	wait_for(w, &r->c->r[0].paused);
	/* one moved key's writer done at least, however long its ops take
	 * (shm's adversarial mode holds completions back: 500 yields were
	 * not always enough), then time for the others */
	double end = test_now_ms() + 60000;

	while (!vf_any_done(r->wr)) {
		if (test_now_ms() > end)
			TEST_FAIL("no writer of a moved key finished");
		smart_task_yield(w);
	}
	yield_n(w, 500); /* writers of moved keys are done by now */
	for (i = 0; i < VF_KEYS; i++) {
		if (!r->wr[i].done)
			continue; /* stays in S, frozen: writer waits */
		snprintf(k, sizeof(k), "v%02d", i);
		expect_value(r->stale, w, k, "new");
		r->checked++;
	}
	r->c->r[0].release = 1;
}

static void test_verify(void)
{
	struct vf_run wr[VF_KEYS], sp;
	struct vf_reader rd;
	struct smart_ht_stats st;
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t, *stale;
	int i;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	keys_insert(t, w, "v", VF_KEYS, "old");
	stale = reopen(w); /* its directory: before any split */
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.split.published", ACT_PAUSE, 0);
	sp = (struct vf_run){ t, &c, 0, 0 };
	CHECK_OK(smart_task_spawn(w, vf_split, &sp));
	for (i = 0; i < VF_KEYS; i++) {
		wr[i] = (struct vf_run){ t, &c, i, 0 };
		CHECK_OK(smart_task_spawn(w, vf_writer, &wr[i]));
	}
	rd = (struct vf_reader){ stale, &c, wr, 0 };
	CHECK_OK(smart_task_spawn(w, vf_read, &rd));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	st = stats(stale, w);
	printf("verify: %d moved keys read through a stale directory, %llu "
	       "frozen hits, %llu verify retries\n",
	       rd.checked, (unsigned long long)st.frozen_hits,
	       (unsigned long long)st.verify_retries);
	CHECK_GT(rd.checked, 0);
	CHECK_GT(st.frozen_hits, 0);
	CHECK_GT(st.verify_retries, 0);
	keys_expect(stale, w, "v", VF_KEYS, "new");
	smart_ht_close(stale, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- freeze ----------------------------------------------------------------- */

/* Updates while a split copies the subtable: none may be lost. */
struct fz_run {
	smart_ht_t *t;
	struct ctl *c;
	int key;
};

static void fz_split(smart_worker_t *w, void *p)
{
	keys_insert(((struct fz_run *)p)->t, w, "fill", 30, NULL);
}

static void fz_writer(smart_worker_t *w, void *p)
{
	struct fz_run *r = p;
	char k[16];

	wait_for(w, &r->c->r[0].paused); /* N built, not published */
	snprintf(k, sizeof(k), "z%02d", r->key);
	CHECK_OK(smart_ht_update(r->t, w, k, strlen(k), "new", 3));
}

static void fz_ctl(smart_worker_t *w, void *p)
{
	struct ctl *c = p;

	wait_for(w, &c->r[0].paused);
	yield_n(w, 300); /* every writer has tried */
	c->r[0].release = 1;
}

static void test_freeze(void)
{
	struct fz_run wr[VF_KEYS], sp;
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t, *fresh;
	int i;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	keys_insert(t, w, "z", VF_KEYS, "old");
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.split.built", ACT_PAUSE, 0);
	sp = (struct fz_run){ t, &c, 0 };
	CHECK_OK(smart_task_spawn(w, fz_split, &sp));
	for (i = 0; i < VF_KEYS; i++) {
		wr[i] = (struct fz_run){ t, &c, i };
		CHECK_OK(smart_task_spawn(w, fz_writer, &wr[i]));
	}
	CHECK_OK(smart_task_spawn(w, fz_ctl, &c));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK_EQ(c.r[0].fired, 1);
	fresh = reopen(w);
	keys_expect(fresh, w, "z", VF_KEYS, "new");
	smart_ht_close(fresh, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- epoch ------------------------------------------------------------------- */

/* A reader that has read a slot and not yet its block, while the block is
 * replaced, retired, reclaimed and its memory reused for another key: the
 * reader's announcement keeps the block from being freed meanwhile. */
struct ep_run {
	smart_ht_t *t;
	struct ctl *c;
	int rc;
	char v[16];
	size_t n;
};

static void ep_reader(smart_worker_t *w, void *p)
{
	struct ep_run *r = p;

	r->rc = smart_ht_search(r->t, w, "E", 1, r->v, sizeof(r->v), &r->n);
}

static void ep_writer(smart_worker_t *w, void *p)
{
	struct ep_run *r = p;
	char k[16];
	int i;

	wait_for(w, &r->c->r[0].paused); /* the reader has the slot */
	CHECK_OK(smart_ht_update(r->t, w, "E", 1, "two", 3));
	/* reclaim what was retired (the old block: unless a reader still
	 * may hold it), and allocate blocks of its size for other keys */
	for (i = 0; i < 300; i++) {
		snprintf(k, sizeof(k), "e%03d", i % 50);
		CHECK_OK(smart_ht_upsert(r->t, w, k, strlen(k), "xyz", 3));
	}
	(void)smart_epoch_drain(w, 1, 50);
	for (i = 0; i < 300; i++) {
		snprintf(k, sizeof(k), "f%03d", i);
		CHECK_OK(smart_ht_insert(r->t, w, k, strlen(k), "abc", 3));
	}
	r->c->r[0].release = 1;
}

static void test_epoch(void)
{
	struct ep_run r = { 0 };
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 2, 256);
	CHECK_OK(smart_ht_insert(t, w, "E", 1, "one", 3));
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.search.read", ACT_PAUSE, 0);
	r.t = t;
	r.c = &c;
	CHECK_OK(smart_task_spawn(w, ep_reader, &r));
	CHECK_OK(smart_task_spawn(w, ep_writer, &r));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	/* the old value, read before the update landed, or the new one:
	 * anything else is a block that was freed under the reader */
	CHECK_MSG(r.rc == 0 && r.n == 3 &&
			  (!memcmp(r.v, "one", 3) || !memcmp(r.v, "two", 3)),
		  "reader: %s, %zu bytes '%.*s'", smart_status_name(r.rc), r.n,
		  (int)(r.n < 16 ? r.n : 16), r.v);
	/* the reader gone, reclamation frees what waited for it */
	CHECK_OK(smart_epoch_drain(w, 1, 1000));
	CHECK_GT(stats(t, w).freed, 0);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- dup_insert ------------------------------------------------------------ */

struct dup_run {
	smart_ht_t *t;
	struct ctl *c;
	const char *val;
	int rc;
};

static void dup_ins(smart_worker_t *w, void *p)
{
	struct dup_run *r = p;

	r->rc = smart_ht_insert(r->t, w, "dup", 3, r->val, 1);
}

static void dup_ctl(smart_worker_t *w, void *p)
{
	struct ctl *c = p;

	/* both placed their tentative slots: let them resolve */
	wait_for(w, &c->r[0].paused);
	wait_for(w, &c->r[1].paused);
	c->r[0].release = c->r[1].release = 1;
}

static void test_dup_insert(void)
{
	struct dup_run a, b;
	struct fixture f;
	struct ctl c = { 0 };
	smart_worker_t *w;
	smart_ht_t *t;
	char v[4];
	size_t n;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 64);
	CHECK_OK(smart_ctx_set_hook(f.ctx, hook, &c));
	rule_arm(&c, 0, "ht.insert.placed", ACT_PAUSE, 0);
	rule_arm(&c, 1, "ht.insert.placed", ACT_PAUSE, 0);
	a = (struct dup_run){ t, &c, "a", 1 };
	b = (struct dup_run){ t, &c, "b", 1 };
	CHECK_OK(smart_task_spawn(w, dup_ins, &a));
	CHECK_OK(smart_task_spawn(w, dup_ins, &b));
	CHECK_OK(smart_task_spawn(w, dup_ctl, &c));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	printf("dup_insert: %s and %s\n", smart_status_name(a.rc),
	       smart_status_name(b.rc));
	CHECK((a.rc == 0 && b.rc == SMART_EEXIST) ||
	      (b.rc == 0 && a.rc == SMART_EEXIST));
	CHECK_OK(smart_ht_search(t, w, "dup", 3, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == (a.rc == 0 ? 'a' : 'b'));
	/* deleted once, it is gone: no second committed copy */
	CHECK_OK(smart_ht_delete(t, w, "dup", 3));
	CHECK_EQ(smart_ht_search(t, w, "dup", 3, v, sizeof(v), &n),
		 SMART_ENOENT);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- header_check ------------------------------------------------------------ */

static void test_header_check(void)
{
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t, *stale;
	char k[16];
	int i;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	t = table(w, 0, 2);
	stale = reopen(w);
	keys_insert(t, w, "f", 60, NULL);
	CHECK_GT(stats(t, w).splits, 1);
	for (i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "s%02d", i);
		CHECK_OK(smart_ht_insert(stale, w, k, strlen(k), k, strlen(k)));
	}
	CHECK_GT(stats(stale, w).header_retries, 0);
	for (i = 0; i < 40; i++) {
		snprintf(k, sizeof(k), "s%02d", i);
		expect_value(t, w, k, k);
	}
	smart_ht_close(stale, NULL);
	smart_ht_close(t, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- spec_stale ------------------------------------------------------------- */

static void test_spec_stale(void)
{
	struct smart_ht_config c;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *a, *b;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&c);
	CHECK_OK(smart_ht_create(w, 1, 0, &c, &a));
	b = reopen(w); /* another client's object: its own cache */
	CHECK_OK(smart_ht_insert(a, w, "K", 1, "old", 3));
	expect_value(a, w, "K", "old"); /* a speculates K's slot */
	CHECK_OK(smart_ht_update(b, w, "K", 1, "new", 3));
	expect_value(a, w, "K", "new");
	smart_ht_close(b, NULL);
	smart_ht_close(a, NULL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "uncertain_update", test_uncertain_update },
				 { "frozen_after_cas", test_frozen_after_cas },
				 { "split_error", test_split_error },
				 { "abort_tent", test_abort_tent },
				 { "child_locked", test_child_locked },
				 { "verify", test_verify },
				 { "freeze", test_freeze },
				 { "epoch", test_epoch },
				 { "dup_insert", test_dup_insert },
				 { "header_check", test_header_check },
				 { "spec_stale", test_spec_stale },
				 { 0 } });
}
