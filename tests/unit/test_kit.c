/*
 * The benchmark kit's runner (bench/kit/run.c): its phase only moves
 * forward within a run.  A thread whose setup failed (a blade that died
 * before its first op) sets KIT_STOP and reports ready; main then sets
 * KIT_RUN.  When that undid the stop, main slept through the whole
 * window, as nobody was left to stop it: smart-perf ran 60 s against a
 * dead blade (test_dead_blade failed in CI on a loaded machine).
 */
#include <stdatomic.h>

#include "harness/test.h"
#include "kit.h"

struct prep {
	struct kit_runner *r;
	int fail_rc; /* 0: kit_runner_set(KIT_STOP), else kit_runner_fail */
	int seen;    /* the phase kit_runner_await returned */
};

/* A thread whose setup fails: it stops the run, reports ready, then
 * waits for the window as perf_thread_framework does. */
static void *prep_fails(void *arg)
{
	struct prep *p = arg;

	if (p->fail_rc)
		kit_runner_fail(p->r, p->fail_rc);
	else
		kit_runner_set(p->r, KIT_STOP);
	kit_runner_ready(p->r);
	p->seen = kit_runner_await(p->r, KIT_RUN);
	return NULL;
}

/* Main's side of a run whose only thread failed its setup. */
static void run_failed_prep(int fail_rc)
{
	struct kit_runner r = { 0 };
	struct prep p = { &r, fail_rc, -1 };

	CHECK_EQ(kit_runner_start(&r, 1, prep_fails, &p, sizeof(p)), 0);
	kit_runner_wait_ready(&r, NULL);
	kit_runner_set(&r, KIT_RUN);
	CHECK(kit_runner_stopping(&r)); /* the old runner: KIT_RUN */
	kit_runner_join(&r);
	CHECK_EQ(p.seen, KIT_STOP);
	CHECK_EQ(kit_runner_failed(&r), fail_rc);
}

static void test_stop_in_prep_holds(void)
{
	run_failed_prep(0);
}

static void test_fail_in_prep_holds(void)
{
	run_failed_prep(SMART_ECONN);
}

/* The window of a stopped run ends at once (it polls the phase), not
 * after its seconds (8 here; a bound of half of that leaves a loaded
 * machine room). */
static void test_window_after_failed_prep(void)
{
	struct kit_runner r = { 0 };
	struct prep p = { &r, SMART_ECONN, -1 };
	struct kit_window w;
	uint64_t t0;

	CHECK_EQ(kit_runner_start(&r, 1, prep_fails, &p, sizeof(p)), 0);
	kit_runner_wait_ready(&r, NULL);
	memset(&w, 0, sizeof(w));
	w.t0 = smart_now_ns();
	kit_runner_set(&r, KIT_RUN);
	t0 = smart_now_ns();
	CHECK_EQ(kit_window_sleep(&w, NULL, &r, 8), 0);
	CHECK(smart_now_ns() - t0 < UINT64_C(4000000000));
	kit_runner_join(&r);
}

/* A thread whose setup went well: ready, then the window. */
static void *prep_ok(void *arg)
{
	struct prep *p = arg;

	kit_runner_ready(p->r);
	p->seen = kit_runner_await(p->r, KIT_RUN);
	return NULL;
}

/* A runner started again for another run (smart-perf --vs-raw) begins
 * at KIT_PREP although the run before stopped: the store of
 * kit_runner_start is the one way back. */
static void test_restart_resets(void)
{
	struct kit_runner r = { 0 };
	struct prep p = { &r, 0, -1 };

	CHECK_EQ(kit_runner_start(&r, 1, prep_fails, &p, sizeof(p)), 0);
	kit_runner_wait_ready(&r, NULL);
	kit_runner_join(&r);
	CHECK(kit_runner_stopping(&r));
	CHECK_EQ(kit_runner_start(&r, 1, prep_ok, &p, sizeof(p)), 0);
	kit_runner_wait_ready(&r, NULL);
	CHECK(!kit_runner_stopping(&r));
	kit_runner_set(&r, KIT_RUN);
	kit_runner_set(&r, KIT_STOP);
	kit_runner_join(&r);
	CHECK(p.seen >= KIT_RUN);
	CHECK_EQ(kit_runner_failed(&r), 0);
}

int main(int argc, char **argv)
{
	return test_main(
		argc, argv,
		(struct test_case[]){
			{ "stop_in_prep_holds", test_stop_in_prep_holds },
			{ "fail_in_prep_holds", test_fail_in_prep_holds },
			{ "window_after_failed_prep",
			  test_window_after_failed_prep },
			{ "restart_resets", test_restart_resets },
			{ 0 } });
}
