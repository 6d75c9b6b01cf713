/*
 * Exactly-once recovery of a stream of several executors (docs/stream.md
 * §11, "Several executors"): E executor processes (SLASH, NB7 with
 * disorder, partitions of different lengths so that executors go on as
 * leaders after their own input ended) checkpoint aligned cuts into their
 * parts of one blade area.  One of them is killed with SIGKILL at a hook;
 * the survivors fail with SMART_ECONN naming it; the test process rolls
 * the area back to the newest cut every part holds; a new run of E
 * processes attaches (the dead part taken over through its lease),
 * replays from the cut and finishes.  The committed logs of all parts
 * together must equal the sequential reference exactly.  Also: a part
 * ahead of the cut is refused by attach until the rollback ran, a
 * recoverer killed inside its recovery, and a leader that may not take a
 * source's next epoch before its own cut is written.
 */
#include "harness/stream_cuts.h"

/* The victim (the last executor: the shortest input, so it writes its
 * last cuts as a leader only) killed at each epoch-end hook at its first,
 * a middle and its last own epoch, and at the checkpoint hooks also in
 * a cut it writes after its input ended; then the rollback and a new run. */
static void kills_of(struct world *wd, uint32_t v, int *runs)
{
	int own = (int)((part_len(v) + EPOCH) / EPOCH);
	const int hits[] = { 1, 25, own, CUTS - 3 };

	for (size_t p = 0; p < 4; p++)
		for (size_t h = 0; h < 4; h++) {
			struct plan pl = { { points[p], NULL },
					   { hits[h], 0 },
					   { M_KILL, M_NONE } };
			char what[96];
			uint64_t line;

			if (p == 0 && hits[h] > own)
				continue; /* no own epoch end there */
			snprintf(what, sizeof(what),
				 "E %u, executor %u at %s #%d", wd->E, v,
				 points[p], hits[h]);
			area_zero(wd);
			run_death(wd, v, &pl, what);
			line = rollback(wd);
			run_clean(wd);
			check_output(wd, what);
			(*runs)++;
			printf("%s: killed; survivors SMART_ECONN naming it; "
			       "rolled back to cut %2" PRIu64
			       "; new run: output = reference\n",
			       what, line);
		}
}

static void test_kills(void)
{
	for (uint32_t E = 2; E <= MAXE; E++) {
		struct world wd;
		int runs = 0;

		world_open(&wd, E, K_MAX);
		kills_of(&wd, E - 1, &runs);
		printf("E %u: %d runs with a death, every output equal to the "
		       "reference (%zu results, %" PRIu64 " late); %" PRIu64
		       " survivors failed naming the dead executor at most %" PRIu64
		       " ms after its death (keepalive bound %d ms)\n",
		       E, runs, wd.ref.n, wd.ref.late, wd.detects,
		       wd.detect_max, KA_MS * KA_MISSES);
		CHECK_LE(wd.detect_max, KA_MS * KA_MISSES + SLACK_MS);
		CHECK_EQ(runs, 15);
		world_close(&wd);
	}
}

/* A world of E executors with the query kind, its last executor killed
 * at an epoch end (#20), in a torn slot (#30) and after cut 44 (written
 * after its input ended). */
static void three_deaths(uint32_t E, int kind, const char *label)
{
	static const struct {
		const char *point;
		int hit;
	} at[] = { { "stream.epoch.fired", 20 },
		   { "stream.ckpt.torn", 30 },
		   { "stream.ckpt.written", CUTS - 3 } };
	struct world wd;

	world_open(&wd, E, kind);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		struct plan pl = { { at[i].point, NULL },
				   { at[i].hit, 0 },
				   { M_KILL, M_NONE } };
		uint64_t line;

		area_zero(&wd);
		run_death(&wd, E - 1, &pl, at[i].point);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, at[i].point);
		printf("%s, E %u, executor %u killed at %s #%d: rolled back to "
		       "cut %" PRIu64 ", output = reference (%zu results)\n",
		       label, E, E - 1, at[i].point, at[i].hit, line, wd.ref.n);
	}
	CHECK_EQ(wd.runs, 3);
	world_close(&wd);
}

/* Sliding windows over Pareto keys and session windows over Zipf keys,
 * E 3. */
static void test_queries(void)
{
	three_deaths(3, K_SLIDING, "sliding SUM, Pareto keys");
	three_deaths(3, K_SESSION, "sessions, Zipf keys");
}

/* NB8's join (its rows in the checkpoints), one executor and two. */
static void test_join(void)
{
	three_deaths(1, K_JOIN, "NB8 join");
	three_deaths(2, K_JOIN, "NB8 join");
}

/* Executor 0 (the longest input: its epochs end last) killed inside its
 * own final cut, E 3: the others wrote theirs, and must not report the
 * end (SMART_ENOENT) while part 0 is short of it: they fail with
 * SMART_ECONN, and the rollback and a new run give the reference. */
static void test_final_cut(void)
{
	static const char *const at[] = { "stream.epoch.fired",
					  "stream.ckpt.logged",
					  "stream.ckpt.torn" };
	struct world wd;

	world_open(&wd, 3, K_MAX);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		int hit = i ? CUTS : (int)((part_len(0) + EPOCH) / EPOCH);
		struct plan pl = { { at[i], NULL },
				   { hit, 0 },
				   { M_KILL, M_NONE } };
		uint64_t line;

		area_zero(&wd);
		run_death(&wd, 0, &pl, at[i]);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, at[i]);
		printf("executor 0 killed at %s #%d (its final cut): the "
		       "others failed with SMART_ECONN, not the end; rolled "
		       "back to cut %" PRIu64 ", output = reference\n",
		       at[i], hit, line);
		CHECK_EQ(line, CUTS - 1);
	}
	world_close(&wd);
}

/* The run after a death killed too, inside its recovery (at attach's
 * hooks) and in a cut it replays: a third run finishes. */
static void test_recoverer(void)
{
	static const struct {
		const char *point;
		int hit;
	} rec[] = { { "stream.recover.owned", 1 },
		    { "stream.recover.restored", 1 },
		    { "stream.ckpt.torn", 12 } };
	struct world wd;

	world_open(&wd, 2, K_MAX);
	for (size_t i = 0; i < sizeof(rec) / sizeof(*rec); i++) {
		struct plan first = { { "stream.ckpt.written", NULL },
				      { 10, 0 },
				      { M_KILL, M_NONE } };
		struct plan second = { { rec[i].point, NULL },
				       { rec[i].hit, 0 },
				       { M_KILL, M_NONE } };
		uint64_t l1, l2;

		area_zero(&wd);
		run_death(&wd, 1, &first, "first death");
		l1 = rollback(&wd);
		run_death(&wd, 0, &second, rec[i].point);
		l2 = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, rec[i].point);
		printf("executor 1 killed at stream.ckpt.written #10 (cut %" PRIu64
		       "), then executor 0 of the recovering run at %s #%d "
		       "(cut %" PRIu64 "): a third run: output = reference\n",
		       l1, rec[i].point, rec[i].hit, l2);
		CHECK_GE(l2, l1);
	}
	world_close(&wd);
}

/* kill -9 at a random moment, not at a hook: each round a world of 2 or
 * 3 executors and one of the four queries; executor r of it killed by
 * the test process after a seeded delay within its run (the run may have
 * ended by then: the output is checked all the same); rollback, a new
 * run, the output must be the reference.  Rounds: SMART_CRASH_ROUNDS
 * (3), seed SMART_CRASH_SEED (1); the delay is what varies, never what
 * is asserted.  bench/stream-crash.sh runs it for minutes. */
static void test_random(void)
{
	const char *rs = getenv("SMART_CRASH_ROUNDS"),
		   *ss = getenv("SMART_CRASH_SEED");
	int rounds = rs ? atoi(rs) : 3, deaths = 0;
	smart_rng_t rng;

	smart_rng_seed(&rng, ss ? strtoull(ss, NULL, 0) : 1);
	CHECK_EQ(setenv("STREAM_CUTS_SCALE", "20", 1), 0); /* ~0.5 s runs */
	for (int round = 0; round < rounds; round++) {
		uint32_t E = 2 + (uint32_t)smart_rng_below(&rng, 2);
		int kind = (int)smart_rng_below(&rng, 4);
		uint32_t v = (uint32_t)smart_rng_below(&rng, E);
		/* within the run (from every executor attached): about 50 ms
		 * at E 2, 300 ms at E 3 here */
		uint64_t ms = smart_rng_below(&rng, E == 2 ? 50 : 300),
			 line = 0, t0, run_ms;
		struct world wd;
		struct kid k[MAXE];
		int died;

		world_open(&wd, E, kind);
		area_zero(&wd);
		t0 = lb_now_ms();
		run_start(&wd, k, NULL);
		for (uint32_t i = 0; i < E; i++) /* every one attached */
			CHECK(kid_report(&k[i]) && k[i].r[0].what == 0);
		usleep((useconds_t)ms * 1000); /* the moment, not a sync */
		kill(k[v].pid, SIGKILL);
		run_wait(&wd, k);
		run_ms = lb_now_ms() - t0;
		died = k[v].st == -SIGKILL;
		for (uint32_t i = 0; i < E; i++)
			CHECK_MSG(k[i].st == XC_OK || k[i].st == XC_CONN ||
					  (i == v && died),
				  "round %d: executor %u exit %d", round, i,
				  k[i].st);
		if (died) {
			line = rollback(&wd);
			run_clean(&wd);
			deaths++;
		}
		check_output(&wd, "random");
		printf("round %d: E %u, query %d, executor %u killed %" PRIu64
		       " ms in (run %" PRIu64 " ms): %s; output = reference\n",
		       round, E, kind, v, ms, run_ms,
		       died ? "died, rolled back and rerun" : "had ended");
		(void)line;
		world_close(&wd);
	}
	CHECK_EQ(unsetenv("STREAM_CUTS_SCALE"), 0);
	printf("%d rounds, %d with a death, every output = reference\n", rounds,
	       deaths);
}

/* A part ahead of the others' cut is refused by attach until the
 * rollback made every part restart from one cut. */
static void test_unrolled(void)
{
	struct plan pl = { { "stream.ckpt.logged", NULL },
			   { 10, 0 },
			   { M_KILL, M_NONE } };
	struct world wd;
	struct kid k[2];
	uint64_t line;

	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	/* executor 1 dies with cut 10 logged, not written; executor 0 had
	 * every source's epoch 10 and part 1 held cut 9: it wrote cut 10 */
	run_death(&wd, 1, &pl, "unrolled");
	run_start(&wd, k, NULL);
	run_wait(&wd, k);
	CHECK_MSG(k[0].st == XC_ATTACH && k[0].r[0].rc == SMART_EINVAL,
		  "the part ahead attached: exit %d, rc %d", k[0].st,
		  k[0].r[0].rc);
	line = rollback(&wd);
	CHECK_EQ(line, 9);
	run_clean(&wd);
	check_output(&wd, "unrolled");
	printf("part 0 at cut 10, part 1 at cut 9: attach of part 0 refused "
	       "(SMART_EINVAL) before the rollback; rolled back to cut %" PRIu64
	       ", new run: output = reference\n",
	       line);
	world_close(&wd);
}

/* A leader may not take a source's epoch past the cut it builds.
 * Executor 1 is held after shipping its epoch N - 1, so executor 0 ends
 * its epoch N (shipped) with nothing of executor 1's epoch N, and is held
 * there (before it waits for its cut).  Executor 1, released, writes cut
 * N - 1, ships epoch N, writes cut N (executor 0's epoch N is in) and
 * ships epoch N + 1 (it says so at that epoch end's hook).  Executor 0,
 * released, finds epochs N and N + 1 in its channel and must leave N + 1
 * there until its cut N is written; it dies right after that cut: cut N
 * is the line of both parts, and the new run replays N + 1 once. */
static void test_take_ahead(void)
{
	enum { N = 12 };
	struct plan p0 = { { "stream.epoch.fired", "stream.ckpt.written" },
			   { N, N },
			   { M_BLOCK, M_KILL } };
	struct plan p1 = { { "stream.epoch.fired", "stream.epoch.fired" },
			   { N - 1, N + 1 },
			   { M_BLOCK, M_NOTE } };
	const struct plan *plans[2] = { &p0, &p1 };
	struct world wd;
	struct kid k[2];
	uint64_t line;

	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	run_start(&wd, k, plans);
	CHECK(kid_report(&k[1]) && kid_report(&k[1])); /* attached; held */
	CHECK_EQ(k[1].r[1].what, 2);
	CHECK(kid_report(&k[0]) && kid_report(&k[0])); /* attached; held */
	CHECK_EQ(k[0].r[1].what, 2);
	close(k[1].hold); /* executor 1 goes on */
	k[1].hold = -1;
	CHECK(kid_report(&k[1])); /* it shipped N + 1 */
	CHECK_EQ(k[1].r[2].what, 2);
	run_wait(&wd, k); /* executor 0 goes on, and dies */
	CHECK_MSG(k[0].st == -SIGKILL, "executor 0: exit %d", k[0].st);
	CHECK_MSG(k[1].st == XC_CONN, "executor 1: exit %d", k[1].st);
	line = rollback(&wd);
	CHECK_EQ(line, N);
	run_clean(&wd);
	check_output(&wd, "take ahead");
	printf("executor 1 shipped epochs %d and %d while executor 0 was held "
	       "before its cut %d; executor 0 killed after it: rolled back "
	       "to cut %" PRIu64 ", new run: output = reference\n",
	       N, N + 1, N, line);
	world_close(&wd);
}

int main(int argc, char **argv)
{
	const char *rounds = getenv("SMART_CRASH_ROUNDS");

	test_children(argc, argv,
		      (struct test_child[]){ { "exec", child_exec }, { 0 } });
	/* `random` for minutes (bench/stream-crash.sh): a few s a round */
	guard_init(300 + (rounds ? 5 * (unsigned)atoi(rounds) : 0));
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "kills", test_kills },
				 { "queries", test_queries },
				 { "join", test_join },
				 { "final_cut", test_final_cut },
				 { "recoverer", test_recoverer },
				 { "unrolled", test_unrolled },
				 { "take_ahead", test_take_ahead },
				 { "random", test_random },
				 { 0 } });
}
