/*
 * A hostile review of the recovery of a stream of several executors
 * (docs/stream.md §11), on test_stream_cuts.c's harness
 * (harness/stream_cuts.h): every executor index killed at every hook,
 * partitions of very different lengths (one empty), epochs of one
 * record, two deaths in one run, the rollback itself killed and two
 * rollbacks racing, an executor of the old run stopped and resumed into
 * the new one, a death inside a final cut, a corrupt slot whose out_n
 * points past the log, deaths in recovery hooks of every index, and a
 * new run started while an old survivor still owns its part.
 */
#include "harness/stream_cuts.h"

static void set_world_env(const char *lens, int epoch)
{
	char e[16];

	if (lens)
		setenv("STREAM_CUTS_LENS", lens, 1);
	else
		unsetenv("STREAM_CUTS_LENS");
	snprintf(e, sizeof(e), "%d", epoch);
	setenv("STREAM_CUTS_EPOCH", e, 1);
}

/* own epoch ends of executor i, and the cuts every executor writes */
static int own_of(uint32_t i)
{
	return (int)(part_len(i) / epoch_of()) + 1;
}

static int cuts_of(uint32_t E)
{
	int m = 0;

	for (uint32_t i = 0; i < E; i++)
		m = own_of(i) > m ? own_of(i) : m;
	return m;
}

/* Victim v killed at every hook at each hit of hits (skipping hooks it
 * never reaches that often); the rollback; a new run; the output. */
static int sweep(struct world *wd, uint32_t v, const int *hits, size_t nh)
{
	int runs = 0;

	for (size_t p = 0; p < 4; p++)
		for (size_t h = 0; h < nh; h++) {
			struct plan pl = { { points[p], NULL },
					   { hits[h], 0 },
					   { M_KILL, M_NONE } };
			char what[128];
			uint64_t line;

			if (hits[h] < 1 || hits[h] > cuts_of(wd->E) ||
			    (p == 0 && hits[h] > own_of(v)))
				continue;
			snprintf(what, sizeof(what),
				 "E %u lens %s epoch %u, executor %u at %s #%d",
				 wd->E,
				 getenv("STREAM_CUTS_LENS") ?
					 getenv("STREAM_CUTS_LENS") :
					 "-",
				 epoch_of(), v, points[p], hits[h]);
			/* killed after writing the final cut: the others may
			 * end (every part holds it); else they must fail */
			if (p == 3 && hits[h] == cuts_of(wd->E))
				setenv("STREAM_CUTS_LOOSE", "1", 1);
			else
				unsetenv("STREAM_CUTS_LOOSE");
			area_zero(wd);
			run_death(wd, v, &pl, what);
			unsetenv("STREAM_CUTS_LOOSE");
			line = rollback(wd);
			run_clean(wd);
			check_output(wd, what);
			runs++;
			printf("%s: line %" PRIu64 ", output = reference\n",
			       what, line);
			fflush(stdout);
		}
	return runs;
}

/* E 3, the default partitions: executors 0 and 1 killed (the suite
 * kills only the last one). */
static void test_every_index(void)
{
	struct world wd;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	for (uint32_t v = 0; v < 2; v++) {
		const int hits[] = { 1, own_of(v), CUTS };

		sweep(&wd, v, hits, 3);
	}
	world_close(&wd);
}

/* E 3 with partitions of very different lengths, one empty. */
static void test_uneven(void)
{
	struct world wd;

	set_world_env("1500,0,300", EPOCH);
	world_open(&wd, 3, K_MAX);
	for (uint32_t v = 0; v < 3; v++) {
		const int hits[] = { own_of(v), cuts_of(3) };

		sweep(&wd, v, hits, 2);
	}
	world_close(&wd);
}

/* Epochs of one record. */
static void test_epoch1(void)
{
	struct world wd;

	set_world_env("80,30", 1);
	world_open(&wd, 2, K_MAX);
	for (uint32_t v = 0; v < 2; v++) {
		const int hits[] = { 31, 81 };

		sweep(&wd, v, hits, 2);
	}
	world_close(&wd);
}

/* Two deaths in one run (E 3): executors 0 and 2 in the same cut. */
static void test_two_deaths(void)
{
	static const struct {
		const char *a, *b;
		int ha, hb;
	} at[] = { { "stream.ckpt.logged", "stream.ckpt.torn", 20, 20 },
		   { "stream.ckpt.written", "stream.epoch.fired", 20, 21 },
		   { "stream.ckpt.torn", "stream.ckpt.written", 46, 44 } };
	struct world wd;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		struct plan pa = { { at[i].a, NULL },
				   { at[i].ha, 0 },
				   { M_KILL, M_NONE } };
		struct plan pb = { { at[i].b, NULL },
				   { at[i].hb, 0 },
				   { M_KILL, M_NONE } };
		const struct plan *plans[MAXE] = { &pa, NULL, &pb };
		struct kid k[MAXE];
		uint64_t line;

		area_zero(&wd);
		run_start(&wd, k, plans);
		run_wait(&wd, k);
		printf("two deaths %s #%d / %s #%d: exits %d %d %d\n", at[i].a,
		       at[i].ha, at[i].b, at[i].hb, k[0].st, k[1].st, k[2].st);
		CHECK(k[1].st == XC_CONN);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, "two deaths");
		printf("  line %" PRIu64 ", output = reference\n", line);
	}
	world_close(&wd);
}

/* The rollback as a process: killed after owning part 0 (at its
 * second take's hook); then a rollback must still work. */
static void child_rollback(char **a)
{
	struct child_hook h = { { { a[3], atoi(a[4]), 0, atoi(a[5]) },
				  { "-", 0, 0, M_NONE } },
				atoi(a[6]),
				-1 };
	struct smart_stream_ckpt_config cc;
	smart_worker_t *w;
	uint16_t blade;
	uint64_t line = 0;
	smart_ctx_t *ctx = lb_ctx_open(a[0], a[7], &blade);
	int rc;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	ck_of(&cc, strtoull(a[1], NULL, 0), (uint32_t)atoi(a[2]), 0);
	rc = smart_stream_ckpt_rollback(w, &cc, &line);
	_exit(rc ? 10 : 0);
}

static void child_rollback2(char **a)
{
	struct child_hook h = { { { a[3], atoi(a[4]), 0, atoi(a[5]) },
				  { "-", 0, 0, M_NONE } },
				atoi(a[6]),
				atoi(a[8]) };
	struct smart_stream_ckpt_config cc;
	smart_worker_t *w;
	uint16_t blade;
	uint64_t line = 0;
	smart_ctx_t *ctx = lb_ctx_open(a[0], a[7], &blade);
	int rc;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	ck_of(&cc, strtoull(a[1], NULL, 0), (uint32_t)atoi(a[2]), 0);
	cc.wait_ms = 500;
	rc = smart_stream_ckpt_rollback(w, &cc, &line);
	if (rc)
		fprintf(stderr, "late rollback: rc %d\n", rc);
	_exit(rc ? 10 : 0);
}

static void test_rollback_killed(void)
{
	struct plan pl = { { "stream.ckpt.logged", NULL },
			   { 20, 0 },
			   { M_KILL, M_NONE } };
	struct world wd;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	for (int hit = 1; hit <= 3; hit++) {
		char base[24], e[12], hs[12], md[12], up[12];
		int p[2], st;
		pid_t pid;
		uint64_t line;

		area_zero(&wd);
		run_death(&wd, 1, &pl, "rollback killed");
		CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
		CHECK_EQ(fcntl(p[1], F_SETFD, 0), 0);
		snprintf(base, sizeof(base), "0x%" PRIx64, (uint64_t)wd.base);
		snprintf(e, sizeof(e), "%u", wd.E);
		snprintf(hs, sizeof(hs), "%d", hit);
		snprintf(md, sizeof(md), "%d", M_KILL);
		snprintf(up, sizeof(up), "%d", p[1]);
		pid = test_spawn("rollback",
				 (const char *[]){ smart_blade_address(wd.b),
						   base, e,
						   "stream.recover.seen", hs,
						   md, up, secret_path, NULL });
		CHECK_GE(pid, 0);
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		close(p[0]);
		close(p[1]);
		CHECK_MSG(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			  "the rollback process: status %#x", st);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, "rollback killed");
		printf("rollback process killed at its take #%d: a second "
		       "rollback: line %" PRIu64 ", output = reference\n",
		       hit, line);
	}
	world_close(&wd);
}

/* DEFECT 1.  Executor 0 (the longest input) killed in its final cut,
 * after it shipped its final epoch: the others need only part 0's cut
 * 46 to write the final cut 47, so they write it and end with
 * SMART_ENOENT (success) while part 0 holds no final cut: every survivor
 * reports a clean end, the committed output is incomplete, and nothing
 * names the dead executor (docs/stream.md §11: "A death fails the
 * survivors (SMART_ECONN)").  Expected: the survivors SMART_ECONN (or at
 * least: a survivor that ended OK implies every part holds the final
 * cut).  Fails on fa7bf66. */
static void test_final_cut_death(void)
{
	static const char *const at[] = { "stream.epoch.fired",
					  "stream.ckpt.logged",
					  "stream.ckpt.torn" };
	struct world wd;

	set_world_env(NULL, EPOCH);
	unsetenv("STREAM_CUTS_LOOSE");
	world_open(&wd, 3, K_MAX);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		struct plan pl = { { at[i], NULL },
				   { CUTS, 0 },
				   { M_KILL, M_NONE } };
		const struct plan *plans[MAXE] = { &pl, NULL, NULL };
		struct kid k[MAXE];
		uint64_t line;

		area_zero(&wd);
		run_start(&wd, k, plans);
		run_wait(&wd, k);
		CHECK_EQ(k[0].st, -SIGKILL);
		for (uint32_t j = 0; j < wd.E; j++) {
			struct smart_stream_ckpt_config cc;
			uint64_t total;
			size_t got;
			int final;

			ck_of(&cc, wd.base, wd.E, j);
			CHECK_OK(smart_stream_ckpt_output(wd.w, &cc, NULL, 0,
							  &got, &total,
							  &final));
			printf("executor 0 killed at %s #%d: executor %u exit %d, "
			       "part %u final %d (%" PRIu64 " results)\n",
			       at[i], CUTS, j, k[j].st, j, final, total);
		}
		for (uint32_t j = 1; j < wd.E; j++)
			CHECK_MSG(
				k[j].st == XC_CONN,
				"executor 0 killed at %s #%d (its final cut): "
				"survivor %u ended with exit %d (0: "
				"SMART_ENOENT, a clean end) though part 0 holds "
				"no final cut",
				at[i], CUTS, j, k[j].st);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, "final cut death");
		printf("  rolled back to %" PRIu64 ", output = reference\n",
		       line);
	}
	world_close(&wd);
}

/* An executor of the old run stopped (SIGSTOP) while held in its
 * ckpt.torn hook (half of cut 20's slot written); the survivors give it
 * up and fail; the rollback waits for its lease (fenced); a new run
 * starts and is held in the middle (executor 0 at its 5th cut); the old
 * executor is resumed and released: its next WRITEs must fail
 * (SMART_EFENCED) and the new run's output must be the reference's. */
static void test_stopped_old(void)
{
	struct plan pv = { { "stream.ckpt.torn", NULL },
			   { 20, 0 },
			   { M_BLOCK, M_NONE } };
	struct plan p0 = { { "stream.ckpt.written", NULL },
			   { 5, 0 },
			   { M_BLOCK, M_NONE } };
	const struct plan *old[MAXE] = { NULL, NULL, &pv };
	const struct plan *neu[MAXE] = { &p0, NULL, NULL };
	struct world wd;
	struct kid k[MAXE], n[MAXE];
	uint64_t line;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	area_zero(&wd);
	run_start(&wd, k, old);
	CHECK(kid_report(&k[2]) && kid_report(&k[2])); /* attached; held */
	CHECK_EQ(k[2].r[1].what, 2);
	kid_wait(&k[0]);
	kid_wait(&k[1]);
	printf("survivors: exits %d %d\n", k[0].st, k[1].st);
	CHECK_EQ(k[0].st, XC_CONN);
	CHECK_EQ(k[1].st, XC_CONN);
	CHECK_EQ(kill(k[2].pid, SIGSTOP), 0);
	line = rollback(&wd); /* waits for its lease */
	printf("rolled back to %" PRIu64 " with executor 2 stopped\n", line);
	run_start(&wd, n, neu);
	CHECK(kid_report(&n[0]) && kid_report(&n[0])); /* held at cut 5 */
	CHECK_EQ(n[0].r[1].what, 2);
	CHECK_EQ(kill(k[2].pid, SIGCONT), 0);
	kid_wait(&k[2]); /* released */
	printf("old executor 2 resumed: exit %d, rc %d\n", k[2].st,
	       k[2].nr ? k[2].r[k[2].nr - 1].rc : 0);
	CHECK_MSG(k[2].st == XC_RUN && k[2].r[k[2].nr - 1].rc == SMART_EFENCED,
		  "the resumed old executor: exit %d", k[2].st);
	run_wait(&wd, n);
	for (uint32_t i = 0; i < wd.E; i++)
		CHECK_MSG(n[i].st == XC_OK, "new run: executor %u exit %d", i,
			  n[i].st);
	check_output(&wd, "stopped old executor");
	printf("new run: output = reference\n");
	world_close(&wd);
}

static pid_t rollback_child(struct world *wd, const char *point, int hit,
			    int mode, int *up, int *hold)
{
	char base[24], e[12], hs[12], md[12], u[12], h[12];
	int p[2], q[2];
	pid_t pid;

	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(q, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(p[1], F_SETFD, 0), 0);
	CHECK_EQ(fcntl(q[0], F_SETFD, 0), 0);
	snprintf(base, sizeof(base), "0x%" PRIx64, (uint64_t)wd->base);
	snprintf(e, sizeof(e), "%u", wd->E);
	snprintf(hs, sizeof(hs), "%d", hit);
	snprintf(md, sizeof(md), "%d", mode);
	snprintf(u, sizeof(u), "%d", p[1]);
	snprintf(h, sizeof(h), "%d", q[0]);
	pid = test_spawn("rollback2",
			 (const char *[]){ smart_blade_address(wd->b), base, e,
					   point, hs, md, u, secret_path, h,
					   NULL });
	CHECK_GE(pid, 0);
	close(p[1]);
	close(q[0]);
	*up = p[0];
	*hold = q[1];
	return pid;
}

/* A rollback process held after it saw part 0 free (its CAS not issued):
 * another rollback runs, a new run starts and is held mid-way, then the
 * held rollback goes on: it must change nothing (its CAS fails, the new
 * run's executor holds the part: SMART_EBUSY), and the new run's output
 * is the reference's. */
static void test_rollback_race(void)
{
	struct plan pl = { { "stream.ckpt.logged", NULL },
			   { 20, 0 },
			   { M_KILL, M_NONE } };
	struct plan p0 = { { "stream.ckpt.written", NULL },
			   { 5, 0 },
			   { M_BLOCK, M_NONE } };
	const struct plan *neu[MAXE] = { &p0, NULL, NULL };
	struct world wd;
	struct kid n[MAXE];
	struct report r;
	int up, hold, st;
	pid_t pid;
	uint64_t line;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	area_zero(&wd);
	run_death(&wd, 1, &pl, "rollback race");
	pid = rollback_child(&wd, "stream.recover.seen", 1, M_BLOCK, &up,
			     &hold);
	CHECK_EQ(read(up, &r, sizeof(r)), (ssize_t)sizeof(r)); /* held */
	fprintf(stderr, "rollback child held\n");
	line = rollback(&wd);
	fprintf(stderr, "rolled back to %" PRIu64 "\n", line);
	run_start(&wd, n, neu);
	CHECK(kid_report(&n[0]) && kid_report(&n[0])); /* held at cut 5 */
	fprintf(stderr, "new run held\n");
	close(hold);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	close(up);
	fprintf(stderr, "late rollback ended %#x\n", st);
	printf("rollback held at recover.seen, released while the new run "
	       "runs: status %#x (exit %d)\n",
	       st, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 10,
		  "the late rollback: status %#x", st);
	for (uint32_t i = 0; i < wd.E; i++) {
		kid_wait(&n[i]);
		fprintf(stderr, "new run: executor %u exit %d\n", i, n[i].st);
	}
	for (uint32_t i = 0; i < wd.E; i++)
		CHECK_MSG(n[i].st == XC_OK, "new run: executor %u exit %d", i,
			  n[i].st);
	check_output(&wd, "rollback race");
	printf("line %" PRIu64 ", new run: output = reference\n", line);
	world_close(&wd);
}

/* The slot head of docs/stream.md §11 (ckpt.c struct ck_head). */
struct hx_head {
	uint32_t magic, crc;
	uint64_t seq, owner, qsum, epoch, records, maxts, out_n;
	uint64_t filtered, late, implausible, results;
	uint32_t n, seen, final, peers;
	uint64_t spare[2];
};

/* DEFECT 2.  A slot whose CRC holds but whose out_n is past the part's
 * log (max_results): smart_stream_ckpt_output reports it as the total
 * and reads that many results, i.e. past the part's log into the next
 * part, or for the last part past the area.  slot_read bounds n
 * (entries) but not out_n.  Expected: the slot is not a complete one
 * (like n > max_entries), or at least total <= max_results. */
static void test_corrupt_out_n(void)
{
	struct smart_stream_ckpt_config cc;
	struct smart_stream_result *out;
	struct hx_head h;
	struct world wd;
	uint64_t total, slot0;
	size_t got;
	int final, rc;
	void *buf;

	set_world_env("64,64", EPOCH);
	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	ck_of(&cc, wd.base, 2, 1);
	/* slot 0 of part 1: after part 0 and part 1's 64-byte owner block */
	slot0 = wd.bytes / 2 + 64;
	memset(&h, 0, sizeof(h));
	h.magic = 0x53436b31;
	h.seq = 1;
	h.epoch = 1;
	h.out_n = CK_RESULT + 1000;
	h.final = 1;
	h.peers = 2;
	CHECK_OK(smart_buf_alloc(wd.w, 4096, &buf));
	memset(buf, 0, 4096);
	memcpy(buf, &h, sizeof(h));
	h.crc = smart_crc32c(smart_crc32c(0, &h, sizeof(h)),
			     (uint8_t *)buf + sizeof(h), 2 * 24);
	memcpy(buf, &h, sizeof(h));
	CHECK_OK(smart_write_sync(wd.w, smart_gaddr_add(wd.base, slot0), buf,
				  sizeof(h) + 2 * 24));
	smart_buf_free(wd.w, buf);
	out = calloc(CK_RESULT + 1000, sizeof(*out));
	rc = smart_stream_ckpt_output(wd.w, &cc, out, CK_RESULT + 1000, &got,
				      &total, &final);
	printf("part 1, a slot claiming out_n %d (max_results %d): rc %d, "
	       "total %" PRIu64 ", read %zu\n",
	       CK_RESULT + 1000, CK_RESULT, rc, total, got);
	CHECK_MSG(rc || (total <= CK_RESULT && got <= CK_RESULT),
		  "the output read %zu results of a %d-result log (past the "
		  "area's end)",
		  got, CK_RESULT);
	free(out);
	world_close(&wd);
}

/* Deaths inside attach (recover.seen/owned/restored) of every executor
 * index: in the first run (a fresh area), and in a run recovering from
 * a death of another executor at its ckpt.written #10; then a rollback
 * and a clean run. */
static void test_recover_hooks(void)
{
	static const char *const rp[] = { "stream.recover.seen",
					  "stream.recover.owned",
					  "stream.recover.restored" };
	struct world wd;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 3, K_MAX);
	for (uint32_t v = 0; v < 3; v += 2) /* the first and the last */
		for (size_t p = 0; p < 3; p++)
			for (int second = 0; second < 2; second++) {
				struct plan first = { { "stream.ckpt.written",
							NULL },
						      { 10, 0 },
						      { M_KILL, M_NONE } };
				struct plan pl = { { rp[p], NULL },
						   { 1, 0 },
						   { M_KILL, M_NONE } };
				char what[96];
				uint64_t l1 = 0, l2;

				snprintf(what, sizeof(what),
					 "%s run: executor %u at %s",
					 second ? "second" : "first", v, rp[p]);
				area_zero(&wd);
				if (second) {
					run_death(&wd, (v + 1) % 3, &first,
						  "first death");
					l1 = rollback(&wd);
				}
				run_death(&wd, v, &pl, what);
				l2 = rollback(&wd);
				run_clean(&wd);
				check_output(&wd, what);
				printf("%s: lines %" PRIu64 " %" PRIu64
				       ", output = reference\n",
				       what, l1, l2);
				fflush(stdout);
			}
	world_close(&wd);
}

/* Sliding windows over Pareto keys and sessions over Zipf keys, E 3,
 * the middle executor killed (the suite kills the last one). */
static void test_middle_queries(void)
{
	static const int kinds[] = { K_SLIDING, K_SESSION };

	for (size_t q = 0; q < 2; q++) {
		struct world wd;
		const int hits[] = { 20, 44 };

		set_world_env(NULL, EPOCH);
		world_open(&wd, 3, kinds[q]);
		sweep(&wd, 1, hits, 2);
		world_close(&wd);
	}
}

/* A new run started while a survivor of the old run is still alive and
 * owns its part (held in its ckpt.written #20 hook, cut 20 written; the
 * victim died with cut 20 logged, part 1 at 19): a rollback with
 * wait_ms 0 is refused and changes nothing; the new run's executor 1
 * takes the dead part; the old survivor is released, fails and closes;
 * whatever the new run does then, the area must stay recoverable: a
 * rollback and a clean run give the reference. */
static void test_live_survivor(void)
{
	struct plan pv = { { "stream.ckpt.logged", NULL },
			   { 20, 0 },
			   { M_KILL, M_NONE } };
	struct plan ps = { { "stream.ckpt.written", NULL },
			   { 20, 0 },
			   { M_BLOCK, M_NONE } };
	const struct plan *old[MAXE] = { &ps, &pv };
	struct smart_stream_ckpt_config cc;
	struct world wd;
	struct kid k[MAXE], n[MAXE];
	uint64_t line = 0;
	int rc;

	set_world_env(NULL, EPOCH);
	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	run_start(&wd, k, old);
	CHECK(kid_report(&k[0]) && kid_report(&k[0])); /* held at cut 20 */
	kid_wait(&k[1]);
	CHECK_EQ(k[1].st, -SIGKILL);
	ck_of(&cc, wd.base, wd.E, 0);
	cc.wait_ms = 0;
	rc = smart_stream_ckpt_rollback(wd.w, &cc, &line);
	printf("rollback with the old survivor alive: rc %d\n", rc);
	CHECK_EQ(rc, SMART_EBUSY);
	run_start(&wd, n, NULL);
	CHECK(kid_report(&n[1])); /* new executor 1 attached */
	printf("new executor 1 attached: rc %d, resume %" PRIu64 "\n",
	       n[1].r[0].rc, n[1].r[0].resume);
	kid_wait(&k[0]); /* released: fails, closes */
	printf("old survivor: exit %d\n", k[0].st);
	run_wait(&wd, n);
	printf("new run: exits %d %d (attach rc %d %d)\n", n[0].st, n[1].st,
	       n[0].nr ? n[0].r[0].rc : 99, n[1].r[0].rc);
	line = rollback(&wd);
	run_clean(&wd);
	check_output(&wd, "live survivor");
	printf("rolled back to %" PRIu64 ", output = reference\n", line);
	world_close(&wd);
}

/* Every partition shorter than one epoch (one empty): a stream of one
 * cut, each executor killed at each hook of it. */
static void test_one_cut(void)
{
	struct world wd;

	set_world_env("20,0,7", EPOCH);
	world_open(&wd, 3, K_MAX);
	for (uint32_t v = 0; v < 3; v++) {
		const int hits[] = { 1 };

		sweep(&wd, v, hits, 1);
	}
	world_close(&wd);
}

int main(int argc, char **argv)
{
	test_children(argc, argv,
		      (struct test_child[]){ { "exec", child_exec },
					     { "rollback", child_rollback },
					     { "rollback2", child_rollback2 },
					     { 0 } });
	guard_init(900);
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "every_index", test_every_index },
				 { "uneven", test_uneven },
				 { "epoch1", test_epoch1 },
				 { "two_deaths", test_two_deaths },
				 { "rollback_killed", test_rollback_killed },
				 { "final_cut_death", test_final_cut_death },
				 { "stopped_old", test_stopped_old },
				 { "rollback_race", test_rollback_race },
				 { "corrupt_out_n", test_corrupt_out_n },
				 { "recover_hooks", test_recover_hooks },
				 { "middle_queries", test_middle_queries },
				 { "live_survivor", test_live_survivor },
				 { "one_cut", test_one_cut },
				 { 0 } });
}
