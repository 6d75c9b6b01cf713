/*
 * The core's epoch-based reclamation (include/smart/epoch.h,
 * docs/epochs.md), through the public API:
 *  - grace: a block retired while a reader of another ctx is inside is not
 *    freed before the reader leaves, and is freed after (grace_sync_op:
 *    the reader's op after entering is smart_read_sync on a warm QP);
 *  - busy: a worker whose tasks are always inside (overlapping) still lets
 *    reclamation progress;
 *  - no_round_trip: entering and leaving add no sync to an operation;
 *  - words: a destroyed worker gives its announcement word back;
 *  - dead_reader: a reader process killed inside its section stops
 *    nobody: its word is taken back once its lease is fenced;
 *  - bounded: beyond the bound, retired blocks go to the keeper, which
 *    frees them when the reader leaves;
 *  - errors: bad arguments.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"

static uint64_t stat_of(smart_ctx_t *ctx, enum smart_stat id)
{
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot(ctx, &st));
	return st.c[id];
}

static smart_ctx_t *ctx2(struct fixture *f)
{
	return fixture_ctx_at(smart_blade_address(f->blade), f->id);
}

/* Retire n fresh 64-byte blocks, then scan until nothing is left or the
 * time is up; returns what the drain said. */
static int retire_and_drain(smart_worker_t *w, uint16_t blade, int n,
			    int timeout_ms)
{
	smart_gaddr_t g;

	for (int i = 0; i < n; i++) {
		CHECK_OK(smart_alloc(w, blade, 64, &g));
		CHECK_OK(smart_epoch_retire(w, blade, g, 64));
	}
	return smart_epoch_drain(w, blade, timeout_ms);
}

static void test_grace(void)
{
	struct fixture f;
	smart_ctx_t *c;
	smart_worker_t *w, *r;
	uint64_t v;

	fixture_start(&f, 8 << 20, 2, NULL);
	c = ctx2(&f);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(c, &r));
	/* the reader enters (its announcement goes out with a read) */
	CHECK_OK(smart_epoch_enter(r, f.id));
	CHECK_OK(smart_read_sync(r, smart_gaddr(f.id, 0), 8, &v));
	CHECK_EQ(retire_and_drain(w, f.id, 10, 200), SMART_ETIMEDOUT);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 0);
	CHECK_GT(stat_of(f.ctx, SMART_STAT_EPOCH_SCANS), 1);
	smart_epoch_exit(r);
	CHECK_OK(smart_epoch_drain(w, f.id, 2000));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 10);
	CHECK_EQ(stat_of(c, SMART_STAT_EPOCH_ANNOUNCES), 2);
	CHECK_OK(smart_worker_destroy(r));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	fixture_stop(&f);
}

/* The same when the reader's op after entering is an op and its sync in
 * one call from the registered pool, on a warm QP: the call's own way
 * (ops.c op_sync_fast) leaves a sync with an announcement to prepend to
 * the general one (mutant OPS_SYNC_OP_NO_OFF posts the READ alone, and
 * the block is freed under the reader). */
static void test_grace_sync_op(void)
{
	struct fixture f;
	smart_ctx_t *c;
	smart_worker_t *w, *r;
	uint64_t *v;

	fixture_start(&f, 8 << 20, 2, NULL);
	c = ctx2(&f);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(c, &r));
	CHECK_OK(smart_buf_alloc(r, 8, (void **)&v));
	/* the QP opened, the sample's sync taken: the next is the call's */
	CHECK_OK(smart_read_sync(r, smart_gaddr(f.id, 0), 8, v));
	CHECK_OK(smart_read_sync(r, smart_gaddr(f.id, 0), 8, v));
	CHECK_OK(smart_epoch_enter(r, f.id));
	CHECK_OK(smart_read_sync(r, smart_gaddr(f.id, 0), 8, v));
	CHECK_EQ(stat_of(c, SMART_STAT_EPOCH_ANNOUNCES), 1);
	CHECK_EQ(retire_and_drain(w, f.id, 10, 200), SMART_ETIMEDOUT);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 0);
	smart_epoch_exit(r);
	CHECK_OK(smart_epoch_drain(w, f.id, 2000));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 10);
	smart_buf_free(r, v);
	CHECK_OK(smart_worker_destroy(r));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	fixture_stop(&f);
}

/* A task that returns inside a section (a caller bug) is taken out of it
 * when it ends: reclamation goes on for everybody. */
static void enter_and_return(smart_worker_t *w, void *p)
{
	uint64_t v;

	CHECK_OK(smart_epoch_enter(w, *(uint16_t *)p));
	CHECK_OK(smart_read_sync(w, smart_gaddr(*(uint16_t *)p, 0), 8, &v));
}

static void test_task_left_inside(void)
{
	struct fixture f;
	smart_ctx_t *c;
	smart_worker_t *w, *r;

	fixture_start(&f, 8 << 20, 2, NULL);
	c = ctx2(&f);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(c, &r));
	CHECK_OK(smart_task_spawn(r, enter_and_return, &f.id));
	CHECK_OK(smart_worker_run(r));
	CHECK_OK(retire_and_drain(w, f.id, 10, 2000));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 10);
	CHECK_OK(smart_worker_destroy(r));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c));
	fixture_stop(&f);
}

/* ---- busy: 8 tasks, always some inside, retiring as they go ------------ */

struct busy {
	uint16_t blade;
	int ops;
};

static void busy_task(smart_worker_t *w, void *p)
{
	struct busy *b = p;
	smart_gaddr_t g;
	uint64_t v;

	for (int i = 0; i < b->ops; i++) {
		CHECK_OK(smart_epoch_enter(w, b->blade));
		CHECK_OK(smart_read_sync(w, smart_gaddr(b->blade, 0), 8, &v));
		CHECK_OK(smart_alloc(w, b->blade, 64, &g));
		CHECK_OK(smart_epoch_retire(w, b->blade, g, 64));
		/* yield inside: the tasks' sections overlap */
		smart_task_yield(w);
		smart_epoch_exit(w);
	}
}

static void test_busy(void)
{
	struct fixture f;
	smart_worker_t *w;
	struct busy b;
	uint64_t retired, freed;

	fixture_start(&f, 16 << 20, 2, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	b = (struct busy){ f.id, 2000 };
	for (int i = 0; i < 8; i++)
		CHECK_OK(smart_task_spawn(w, busy_task, &b));
	CHECK_OK(smart_worker_run(w));
	retired = stat_of(f.ctx, SMART_STAT_EPOCH_RETIRED);
	freed = stat_of(f.ctx, SMART_STAT_EPOCH_FREED);
	printf("busy: %llu retired, %llu freed while always inside\n",
	       (unsigned long long)retired, (unsigned long long)freed);
	CHECK_EQ(retired, 16000);
	/* freed during the run, not only at the end */
	CHECK_GT(freed, retired * 9 / 10);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_no_round_trip(void)
{
	struct fixture f;
	smart_worker_t *w;
	uint64_t v, s0, w0;

	fixture_start(&f, 8 << 20, 2, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_epoch_enter(w, f.id)); /* claims the word: once */
	smart_epoch_exit(w);
	s0 = stat_of(f.ctx, SMART_STAT_SYNCS);
	w0 = stat_of(f.ctx, SMART_STAT_DOORBELLS);
	for (int i = 0; i < 100; i++) {
		CHECK_OK(smart_epoch_enter(w, f.id));
		CHECK_OK(smart_read_sync(w, smart_gaddr(f.id, 0), 8, &v));
		smart_epoch_exit(w);
	}
	/* one sync per operation: the read's; the announcement rode in its
	 * batch, the idle write is one doorbell of its own */
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_SYNCS) - s0, 100);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_DOORBELLS) - w0, 200);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* The announcement words of the blade, as they are now. */
static int words_in_use(smart_worker_t *w, uint16_t blade)
{
	uint64_t *tab;
	size_t mark = smart_scratch_mark(w);
	int n = 0;

	CHECK_OK(smart_scratch_alloc(w, 8192, (void **)&tab));
	CHECK_OK(smart_read_sync(w, smart_gaddr(blade, 24 * 1024 + 64), 8192,
				 tab));
	for (int i = 0; i < 1024; i++)
		n += tab[i] != 0;
	smart_scratch_release(w, mark);
	return n;
}

static void test_words(void)
{
	struct fixture f;
	smart_worker_t *w, *x;

	fixture_start(&f, 8 << 20, 2, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(f.ctx, &x));
	CHECK_EQ(words_in_use(w, f.id), 0);
	CHECK_OK(smart_epoch_enter(x, f.id));
	smart_epoch_exit(x);
	CHECK_EQ(words_in_use(w, f.id), 1);
	/* 300 workers come and go: the words come back each time */
	for (int i = 0; i < 300; i++) {
		smart_worker_t *y;

		CHECK_OK(smart_worker_create(f.ctx, &y));
		CHECK_OK(smart_epoch_enter(y, f.id));
		smart_epoch_exit(y);
		CHECK_OK(smart_worker_destroy(y));
	}
	CHECK_EQ(words_in_use(w, f.id), 1);
	CHECK_OK(smart_worker_destroy(x));
	CHECK_EQ(words_in_use(w, f.id), 0);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* A reader in another process, killed inside its section. */
/* The dead reader's process (test_spawn): args are the blade's address,
 * its id and the pipe to say "inside" on. */
static void child_reader(char **args)
{
	uint16_t blade = (uint16_t)atoi(args[1]);
	smart_ctx_t *cc = fixture_ctx_at(args[0], blade);
	smart_worker_t *r;
	uint64_t v;

	CHECK_OK(smart_worker_create(cc, &r));
	CHECK_OK(smart_epoch_enter(r, blade));
	CHECK_OK(smart_read_sync(r, smart_gaddr(blade, 0), 8, &v));
	CHECK_EQ(write(atoi(args[2]), "x", 1), 1);
	for (;;)
		pause(); /* inside, forever */
}

static void test_dead_reader(void)
{
	struct fixture f;
	smart_worker_t *w;
	char id[8], fd[12];
	int p[2], st;
	pid_t pid;
	char c;

	fixture_start(&f, 8 << 20, 2, NULL);
	CHECK_EQ(pipe(p), 0);
	snprintf(id, sizeof(id), "%u", f.id);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	pid = test_spawn("reader",
			 (const char *[]){ smart_blade_address(f.blade), id, fd,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	CHECK_EQ(read(p[0], &c, 1), 1);
	close(p[0]);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_EQ(retire_and_drain(w, f.id, 10, 100), SMART_ETIMEDOUT);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	/* the blade fences it at once; the next scans take its word back */
	CHECK_OK(smart_epoch_drain(w, f.id, 3000));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 10);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_TAKEN_BACK), 1);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_bounded(void)
{
	struct fixture f;
	smart_ctx_t *c;
	smart_worker_t *w, *r;
	uint64_t v, t0;

	fixture_start(&f, 16 << 20, 2, NULL);
	c = ctx2(&f);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(c, &r));
	CHECK_OK(smart_epoch_enter(r, f.id));
	CHECK_OK(smart_read_sync(r, smart_gaddr(f.id, 0), 8, &v));
	/* 3 x the bound: the worker keeps at most 4096 */
	CHECK_EQ(retire_and_drain(w, f.id, 3 * 4096, 1), SMART_ETIMEDOUT);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 0);
	/* destroyed with all of them held: they go to the keeper */
	CHECK_OK(smart_worker_destroy(w));
	smart_epoch_exit(r);
	t0 = smart_now_ns();
	while (stat_of(f.ctx, SMART_STAT_EPOCH_FREED) < 3 * 4096 &&
	       smart_now_ns() - t0 < 5000000000ull)
		usleep(10000);
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_EPOCH_FREED), 3 * 4096);
	CHECK_OK(smart_worker_destroy(r));
	CHECK_OK(smart_ctx_destroy(c));
	fixture_stop(&f);
}

static void test_errors(void)
{
	struct fixture f;
	smart_worker_t *w;

	fixture_start(&f, 8 << 20, 2, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_EQ(smart_epoch_enter(NULL, f.id), SMART_EINVAL);
	CHECK_EQ(smart_epoch_enter(w, 9), SMART_ENOENT);
	CHECK_EQ(smart_epoch_retire(w, f.id, SMART_GADDR_NULL, 64),
		 SMART_EINVAL);
	CHECK_EQ(smart_epoch_retire(w, 9, smart_gaddr(9, 1 << 20), 64),
		 SMART_ENOENT);
	CHECK_OK(smart_epoch_enter(w, f.id));
	CHECK_OK(smart_epoch_enter(w, f.id)); /* nests */
	CHECK_EQ(smart_epoch_drain(w, f.id, 10), SMART_EBUSY);
	smart_epoch_exit(w);
	smart_epoch_exit(w);
	smart_epoch_exit(w); /* not inside: no-op */
	CHECK_OK(smart_epoch_drain(w, f.id, 10));
	CHECK_EQ(smart_epoch_drain(w, 9, 10), SMART_ENOENT);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	return test_main_children(
		argc, argv,
		(struct test_case[]){
			{ "grace", test_grace },
			{ "grace_sync_op", test_grace_sync_op },
			{ "busy", test_busy },
			{ "task_left_inside", test_task_left_inside },
			{ "no_round_trip", test_no_round_trip },
			{ "words", test_words },
			{ "dead_reader", test_dead_reader },
			{ "bounded", test_bounded },
			{ "errors", test_errors },
			{ 0 } },
		(struct test_child[]){ { "reader", child_reader }, { 0 } });
}
