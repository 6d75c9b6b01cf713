/*
 * Exactly-once recovery of a stream executor (docs/stream.md §11): an
 * executor process (SLASH, one executor, NB7 with disorder, a checkpoint
 * at every one of its 47 epoch ends) is killed with SIGKILL at each of
 * its hooks, at the first, a middle and the last epoch; a taker process
 * attaches to its blade area through the lease, resumes the input where
 * the last complete checkpoint left it and finishes.  The committed
 * output log must then equal the sequential reference exactly (every
 * window once, nothing missing) and the taker's late count the
 * reference's.  Also: a recoverer killed inside its recovery and in its
 * own checkpoints (a third process takes over from it), a stopped owner
 * (a taker that does not wait is refused; one that waits takes over once
 * the lease fenced it; the owner resumed then fails with SMART_EFENCED
 * and lands nothing), two recoverers racing, and a corrupt slot ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/lease_blade.h"
#include "harness/smartd_proc.h"
#include "harness/stream_proc.h"
#include "harness/stream_ref.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/stream.h"

#define LEASE_MS                                                               \
	1000 /* a live owner held in a hook keeps it on a loaded machine */
#define SLACK_MS  1500 /* scheduling on a loaded machine */
#define RECORDS	  3000
#define EPOCH	  64 /* 46 full epochs and the final one: 47 ends */
#define EPOCHS	  47
#define CHUNK	  37
#define CK_ENTRY  4096
#define CK_RESULT 16384

static char secret_path[] = "/tmp/smart-strec-secret-XXXXXX";

enum { M_NONE, M_KILL, M_BLOCK };
/* child exit codes */
enum {
	XC_OK = 0,
	XC_NOT_HIT = 3,
	XC_FENCED = 4,
	XC_BUSY = 5,
	XC_ATTACH = 6,
	XC_PUSH = 7
};

/* A child's report, written after attach and again at the end. */
struct report {
	int32_t rc, pad;
	uint64_t resume, attach_ms, late, records, results;
};

/* NB7's MAX per tumbling window, or (sliding) SUM per window of 200
 * every 50: each record in four buckets. */
static void query_of(struct smart_stream_query *q, int sliding)
{
	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_NB7, q));
	q->lateness = 25;
	q->size = 200;
	if (sliding) {
		q->window = SMART_STREAM_SLIDING;
		q->slide = 50;
		q->agg = SMART_STREAM_SUM;
	}
}

static uint8_t *input(void)
{
	struct smart_stream_gen g = { .workload = SMART_STREAM_GEN_NB7,
				      .parts = 1,
				      .seed = 79,
				      .keys = 100,
				      .disorder = 60 };
	struct smart_stream_query q;
	uint8_t *in;

	query_of(&q, 0);
	in = malloc((size_t)RECORDS * q.record_bytes);
	CHECK(in != NULL);
	CHECK_OK(smart_stream_gen_fill(&g, 0, RECORDS, in));
	return in;
}

static void ck_of(struct smart_stream_ckpt_config *c, smart_gaddr_t base,
		  uint32_t wait_ms)
{
	smart_stream_ckpt_config_init(c);
	c->max_entries = CK_ENTRY;
	c->max_results = CK_RESULT;
	c->base = base;
	c->wait_ms = wait_ms;
}

/* ---- the executor process ------------------------------------------------ */

struct child_hook {
	const char *point;
	int hit, hits, mode;
	int report, hold; /* M_BLOCK: says so, waits for hold's EOF */
};

static int child_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct child_hook *h = arg;

	(void)w;
	if (h->mode == M_NONE || strcmp(point, h->point) || ++h->hits != h->hit)
		return 0;
	if (h->mode == M_KILL)
		raise(SIGKILL);
	else {
		struct report r = { .rc = 1 };
		char c;

		CHECK_EQ(write(h->report, &r, sizeof(r)), (ssize_t)sizeof(r));
		while (read(h->hold, &c, 1) > 0)
			;
	}
	return 0; /* released: goes on (fenced by then) */
}

static void send_report(int fd, const struct report *r)
{
	CHECK_EQ(write(fd, r, sizeof(*r)), (ssize_t)sizeof(*r));
}

static int run_stream(smart_stream_t *s, const uint8_t *in, uint64_t from,
		      uint32_t rb)
{
	int rc = 0;

	for (uint64_t i = from; i < RECORDS && !rc; i += CHUNK)
		rc = smart_stream_push(s, in + i * rb,
				       RECORDS - i < CHUNK ? RECORDS - i :
							     CHUNK);
	return rc ? rc : smart_stream_finish(s);
}

/* args: blade address, secret, area base, point, hit, mode, wait_ms,
 * report fd, hold fd, sliding.  Attaches, reports, pushes from the resume index, finishes,
 * reports again; dies at the hook when told. */
static void child_exec(char **a)
{
	struct child_hook h = { a[3],	    atoi(a[4]), 0,
				atoi(a[5]), atoi(a[7]), atoi(a[8]) };
	struct smart_stream_config c;
	struct smart_stream_ckpt_config cc;
	struct smart_stream_stats st;
	struct report r = { 0 };
	smart_worker_t *w;
	smart_stream_t *s;
	uint16_t blade;
	smart_ctx_t *ctx = lb_ctx_open(a[0], a[1], &blade);
	uint8_t *in = input();
	uint64_t t0;
	int fd = atoi(a[7]), rc;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	smart_stream_config_init(&c);
	c.engine = SMART_STREAM_SLASH;
	c.executors = 1;
	c.epoch_records = EPOCH;
	query_of(&c.query, atoi(a[9]));
	CHECK_OK(smart_stream_create(w, &c, &s));
	ck_of(&cc, strtoull(a[2], NULL, 0), (uint32_t)atoi(a[6]));
	t0 = lb_now_ms();
	rc = smart_stream_ckpt_attach(s, &cc, &r.resume);
	r.rc = rc;
	r.attach_ms = lb_now_ms() - t0;
	send_report(fd, &r);
	if (rc)
		_exit(rc == SMART_EBUSY ? XC_BUSY : XC_ATTACH);
	rc = run_stream(s, in, r.resume, c.query.record_bytes);
	if (rc)
		_exit(rc == SMART_EFENCED ? XC_FENCED : XC_PUSH);
	CHECK_OK(smart_stream_stats(s, w, &st));
	r.late = st.late;
	r.records = st.records;
	r.results = st.results;
	send_report(fd, &r);
	CHECK_OK(smart_stream_close(s, w));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	free(in);
	_exit(h.mode != M_NONE && h.hits < h.hit ? XC_NOT_HIT : XC_OK);
}

/* ---- the test ------------------------------------------------------------ */

struct world {
	smart_blade_t *b;
	uint16_t blade;
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_gaddr_t base;
	uint64_t bytes;
	struct ref_out ref;
	int runs, sliding;
};

struct kid {
	pid_t pid;
	int fd, hold; /* reports; the write end of its hold pipe */
	struct report r[3];
	int nr;
};

static void kid_start(struct world *wd, struct kid *k, const char *point,
		      int hit, int mode, uint32_t wait_ms)
{
	char base[24], h[12], m[12], wm[12], fd[12], hd[12], sl[4];
	int p[2], q[2];

	memset(k, 0, sizeof(*k));
	/* our ends (p[0], q[1]) stay out of every child; its own go in */
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(q, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(p[1], F_SETFD, 0), 0);
	CHECK_EQ(fcntl(q[0], F_SETFD, 0), 0);
	snprintf(hd, sizeof(hd), "%d", q[0]);
	snprintf(sl, sizeof(sl), "%d", wd->sliding);
	snprintf(base, sizeof(base), "0x%" PRIx64, (uint64_t)wd->base);
	snprintf(h, sizeof(h), "%d", hit);
	snprintf(m, sizeof(m), "%d", mode);
	snprintf(wm, sizeof(wm), "%u", wait_ms);
	snprintf(fd, sizeof(fd), "%d", p[1]);
	k->pid = test_spawn("exec",
			    (const char *[]){ smart_blade_address(wd->b),
					      secret_path, base, point, h, m,
					      wm, fd, hd, sl, NULL });
	CHECK_GE(k->pid, 0);
	guard_add(k->pid);
	close(p[1]);
	close(q[0]);
	k->fd = p[0];
	k->hold = q[1];
}

/* Its reports, until it closed the pipe (ended or died). */
static void kid_reports(struct kid *k)
{
	while (k->nr < 3 && read(k->fd, &k->r[k->nr], sizeof(k->r[0])) ==
				    (ssize_t)sizeof(k->r[0]))
		k->nr++;
	close(k->fd);
}

/* Wait for it to end (status: the exit code, or -signal). */
static int kid_wait(struct kid *k)
{
	int st;

	if (k->hold >= 0) /* released from its hook, if held there */
		close(k->hold);
	k->hold = -1;
	kid_reports(k);
	CHECK_EQ(waitpid(k->pid, &st, 0), k->pid);
	guard_del(k->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

static void area_zero(struct world *wd)
{
	sp_area_zero(wd->w, wd->base, wd->bytes);
}

/* The committed log equals the reference: each window once. */
static void check_output(struct world *wd, const char *what)
{
	struct smart_stream_ckpt_config cc;
	struct smart_stream_result *out = calloc(CK_RESULT, sizeof(*out));
	uint64_t total;
	size_t n;
	int final;

	ck_of(&cc, wd->base, 0);
	CHECK_OK(smart_stream_ckpt_output(wd->w, &cc, out, CK_RESULT, &n,
					  &total, &final));
	CHECK_MSG(final, "%s: the last epoch was not checkpointed", what);
	qsort(out, n, sizeof(*out), ref_res_cmp);
	CHECK_MSG(n == wd->ref.n, "%s: %zu results, reference %zu", what, n,
		  wd->ref.n);
	CHECK_MSG(!memcmp(out, wd->ref.r, n * sizeof(*out)),
		  "%s: results differ from the reference", what);
	free(out);
	wd->runs++;
}

/* A taker that runs to the end: returns the ms from `since` to its attach
 * report; checks its late count. */
static uint64_t take_over(struct world *wd, uint64_t since, uint64_t *resume)
{
	struct kid k;
	uint64_t ms;

	kid_start(wd, &k, "-", 0, M_NONE, 4 * LEASE_MS);
	CHECK_EQ(read(k.fd, &k.r[0], sizeof(k.r[0])), (ssize_t)sizeof(k.r[0]));
	ms = lb_now_ms() - since;
	k.nr = 1;
	CHECK_EQ(kid_wait(&k), XC_OK);
	CHECK_EQ(k.nr, 2);
	CHECK_EQ(k.r[1].records, RECORDS);
	CHECK_EQ(k.r[1].late, wd->ref.late);
	*resume = k.r[0].resume;
	return ms;
}

/* An executor killed at (point, hit): its death time (ms). */
static uint64_t kill_at(struct world *wd, const char *point, int hit)
{
	struct kid k;
	int st;

	kid_start(wd, &k, point, hit, M_KILL, 0);
	st = kid_wait(&k);
	CHECK_MSG(st == -SIGKILL, "executor at %s #%d: status %d", point, hit,
		  st);
	return lb_now_ms();
}

static void world_open(struct world *wd, int sliding)
{
	struct smart_stream_ckpt_config cc;
	struct smart_stream_query q;
	uint8_t *in = input();
	const uint8_t *ins[1] = { in };
	size_t n[1] = { RECORDS };

	memset(wd, 0, sizeof(*wd));
	wd->sliding = sliding;
	wd->b = lb_blade_start(64 << 20, LEASE_MS);
	wd->ctx = lb_ctx_open(smart_blade_address(wd->b), secret_path,
			      &wd->blade);
	CHECK_OK(smart_worker_create(wd->ctx, &wd->w));
	ck_of(&cc, 0, 0);
	CHECK_OK(smart_stream_ckpt_bytes(&cc, &wd->bytes));
	CHECK_OK(smart_alloc(wd->w, wd->blade, wd->bytes, &wd->base));
	query_of(&q, sliding);
	ref_run(&q, 1, ins, n, &wd->ref);
	CHECK(wd->ref.late > 100);
	free(in);
}

static void world_close(struct world *wd)
{
	free(wd->ref.r);
	CHECK_OK(smart_worker_destroy(wd->w));
	CHECK_OK(smart_ctx_destroy(wd->ctx));
	smart_blade_destroy(wd->b);
}

static const char *const points[] = { "stream.epoch.fired",
				      "stream.ckpt.logged", "stream.ckpt.torn",
				      "stream.ckpt.written" };
static const int hits[] = { 1, 9, 30, EPOCHS };

/* SIGKILL at each hook of the epoch end, at the first, two middle and
 * the last epoch; then a recoverer killed inside its recovery or in its
 * own checkpoints, and a third process finishing. */
static uint64_t kills_at_hooks(struct world *wd)
{
	uint64_t resume, ms, worst = 0;

	for (size_t p = 0; p < sizeof(points) / sizeof(*points); p++)
		for (size_t h = 0; h < sizeof(hits) / sizeof(*hits); h++) {
			area_zero(wd);
			ms = take_over(wd, kill_at(wd, points[p], hits[h]),
				       &resume);
			check_output(wd, points[p]);
			worst = ms > worst ? ms : worst;
			printf("killed at %-20s #%-2d: taker resumed at record "
			       "%4" PRIu64 ", owned %3" PRIu64
			       " ms after the death, output = reference\n",
			       points[p], hits[h], resume, ms);
		}
	return worst;
}

static uint64_t kills_of_recoverers(struct world *wd)
{
	static const struct {
		const char *point;
		int hit;
	} rec[] = { { "stream.recover.owned", 1 },
		    { "stream.recover.restored", 1 },
		    { "stream.ckpt.torn", 20 },
		    { "stream.ckpt.logged", 3 } };
	uint64_t resume, ms, worst = 0;

	for (size_t i = 0; i < sizeof(rec) / sizeof(*rec); i++) {
		area_zero(wd);
		(void)kill_at(wd, "stream.ckpt.written", 9);
		ms = take_over(wd, kill_at(wd, rec[i].point, rec[i].hit),
			       &resume);
		check_output(wd, rec[i].point);
		worst = ms > worst ? ms : worst;
		printf("recoverer killed at %-23s #%-2d: third process resumed "
		       "at %4" PRIu64 ", owned %3" PRIu64 " ms after, output = "
		       "reference\n",
		       rec[i].point, rec[i].hit, resume, ms);
	}
	return worst;
}

/* SIGKILL at each hook of the epoch end, at the first, two middle and
 * the last epoch; then a recoverer killed inside its recovery or in its
 * own checkpoints, and a third process finishing.  Tumbling MAX, then
 * sliding SUM. */
static void test_kills(void)
{
	for (int sliding = 0; sliding < 2; sliding++) {
		struct world wd;
		uint64_t a, b;

		world_open(&wd, sliding);
		a = kills_at_hooks(&wd);
		b = kills_of_recoverers(&wd);
		printf("%s: %d runs, every output equal to the reference (%zu "
		       "results, %" PRIu64 " late); death to taker owning at "
		       "most %" PRIu64 " ms (lease %d ms; a killed owner is "
		       "fenced by the blade at once, the rest is the taker's "
		       "start)\n",
		       sliding ? "sliding SUM" : "tumbling MAX", wd.runs,
		       wd.ref.n, wd.ref.late, a > b ? a : b, LEASE_MS);
		CHECK_EQ(wd.runs, 20);
		world_close(&wd);
	}
}

/* An owner that is alive but slow (held in its hook in the middle of
 * a checkpoint write) keeps its area: a taker that does not wait is
 * refused.  The owner then stopped (SIGSTOP): a taker that waits owns the
 * area once the lease fenced it (lease_ms plus a renewal period); the
 * owner, resumed after the taker finished, fails with SMART_EFENCED and
 * lands nothing. */
static void test_stopped(void)
{
	struct world wd;
	struct kid own, k;
	uint64_t t_stop, ms, resume;
	int st;

	world_open(&wd, 0);
	area_zero(&wd);
	kid_start(&wd, &own, "stream.ckpt.torn", 9, M_BLOCK, 0);
	CHECK_EQ(read(own.fd, &own.r[0], sizeof(own.r[0])),
		 (ssize_t)sizeof(own.r[0]));
	CHECK_EQ(read(own.fd, &own.r[1], sizeof(own.r[1])),
		 (ssize_t)sizeof(own.r[1]));
	CHECK_EQ(own.r[1].rc, 1); /* in its hook, alive */
	kid_start(&wd, &k, "-", 0, M_NONE, 0);
	st = kid_wait(&k);
	CHECK_MSG(st == XC_BUSY && k.r[0].rc == SMART_EBUSY,
		  "a taker took a live owner's area: exit %d, rc %d", st,
		  k.r[0].rc);
	CHECK_EQ(kill(own.pid, SIGSTOP), 0);
	CHECK_EQ(waitpid(own.pid, &st, WUNTRACED), own.pid);
	CHECK(WIFSTOPPED(st));
	t_stop = lb_now_ms();
	ms = take_over(&wd, t_stop, &resume);
	printf("live owner: a taker without wait refused (SMART_EBUSY); the "
	       "owner stopped: a waiting taker owned the area %" PRIu64
	       " ms after the stop (lease %d ms), resumed at %" PRIu64 "\n",
	       ms, LEASE_MS, resume);
	CHECK_GE(ms, LEASE_MS / 2);
	CHECK_LE(ms, LEASE_MS + LEASE_MS / 8 + SLACK_MS);
	CHECK_EQ(kill(own.pid, SIGCONT), 0);
	own.nr = 2;
	st = kid_wait(&own);
	CHECK_MSG(st == XC_FENCED, "the resumed owner: exit %d, not fenced",
		  st);
	check_output(&wd, "stopped");
	printf("the resumed owner failed with SMART_EFENCED; output = "
	       "reference\n");
	world_close(&wd);
}

/* Two recoverers racing for a dead owner's area: A has seen the dead
 * holder and is about to CAS the owner word (held in its hook) when B
 * takes the area; A's CAS then fails, it looks again, finds B alive and
 * is refused.  Then both started together, unheld: whichever order, the
 * output is exact. */
static void test_racing(void)
{
	struct world wd;
	int won = 0, busy = 0;

	world_open(&wd, 0);
	for (int round = 0; round < 4; round++) {
		struct kid a, b;
		int sa, sb;

		area_zero(&wd);
		(void)kill_at(&wd, points[round], 12);
		kid_start(&wd, &a, "stream.recover.seen", 1, M_BLOCK, 0);
		CHECK_EQ(read(a.fd, &a.r[0], sizeof(a.r[0])),
			 (ssize_t)sizeof(a.r[0]));
		kid_start(&wd, &b, "stream.recover.owned", 1, M_BLOCK, 0);
		CHECK_EQ(read(b.fd, &b.r[0], sizeof(b.r[0])),
			 (ssize_t)sizeof(b.r[0]));
		CHECK(a.r[0].rc == 1 && b.r[0].rc == 1); /* both in hooks */
		a.nr = b.nr = 1;
		close(a.hold);
		a.hold = -1;
		sa = kid_wait(&a);
		CHECK_MSG(sa == XC_BUSY && a.nr == 2 &&
				  a.r[1].rc == SMART_EBUSY,
			  "the racer that lost the CAS: exit %d", sa);
		CHECK_EQ(kid_wait(&b), XC_OK);
		check_output(&wd, "racing (held)");
		area_zero(&wd);
		(void)kill_at(&wd, points[round], 12);
		kid_start(&wd, &a, "-", 0, M_NONE, 0);
		kid_start(&wd, &b, "-", 0, M_NONE, 0);
		sa = kid_wait(&a);
		sb = kid_wait(&b);
		CHECK_MSG((sa == XC_OK || sa == XC_BUSY) &&
				  (sb == XC_OK || sb == XC_BUSY) &&
				  (sa == XC_OK || sb == XC_OK),
			  "racing recoverers: exits %d, %d", sa, sb);
		won += (sa == XC_OK) + (sb == XC_OK);
		busy += (sa == XC_BUSY) + (sb == XC_BUSY);
		check_output(&wd, "racing (free)");
	}
	printf("4 held races: the racer whose CAS lost was refused "
	       "(SMART_EBUSY), the winner finished; 4 free races: %d ran to "
	       "the end, %d refused; every output (%d) = reference\n",
	       won, busy, wd.runs);
	world_close(&wd);
}

/* A slot whose head claims more entries than a slot holds (and a newer
 * seq) is not a checkpoint: the executor starts from the other one. */
static void test_corrupt(void)
{
	struct world wd;
	uint64_t fake[16] = { 0x53436b31, 99, 0, 0, 0, 0, 0, 0,
			      0,	  0,  0, 0, 0, 0, 0, 0 };
	uint64_t resume;

	world_open(&wd, 0);
	area_zero(&wd);
	(void)kill_at(&wd, "stream.ckpt.written", 5);
	/* slot 0 (after the owner word's 64 bytes; it held checkpoint 4,
	 * slot 1 holds 5) */
	fake[12] = 0x80000000u; /* n */
	for (size_t i = 0; i < 16; i += 8)
		CHECK_OK(smart_write_sync(wd.w,
					  smart_gaddr_add(wd.base, 64 + i * 8),
					  fake + i, 64));
	take_over(&wd, lb_now_ms(), &resume);
	check_output(&wd, "corrupt");
	printf("a slot claiming 2^31 entries ignored: resumed at %" PRIu64
	       " from the other slot, output = reference\n",
	       resume);
	CHECK_EQ(resume, 5 * EPOCH);
	world_close(&wd);
}

int main(int argc, char **argv)
{
	test_children(argc, argv,
		      (struct test_child[]){ { "exec", child_exec }, { 0 } });
	guard_init(300);
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){ { "kills", test_kills },
					       { "stopped", test_stopped },
					       { "racing", test_racing },
					       { "corrupt", test_corrupt },
					       { 0 } });
}
