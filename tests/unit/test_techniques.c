/*
 * Unit tests of Smart's techniques in the core: the tuner's state machine
 * on synthetic throughput sequences, the conflict-avoidance window rules,
 * fixed credits bounding the WRs in flight, FIFO admission, and the
 * switches.  Counts and states only, no timing.
 */
#include <string.h>

#include "runtime/core.h"
#include "harness/blade_fixture.h"
#include "harness/test.h"

static const int caps[] = { 4, 6, 8, 10, 12, SMART_TUNER_UNLIMITED };

/* Feed one update phase with the given rates; return the chosen cap. */
static int run_update(struct smart__tuner *t, const double *rates)
{
	int i;

	memset(t, 0, sizeof(*t));
	t->phase = TUNER_UPDATE;
	atomic_store(&t->cap, caps[0]);
	for (i = 0; i < 6; i++) {
		CHECK_EQ(t->phase, TUNER_UPDATE);
		CHECK_EQ(atomic_load(&t->cap), caps[i]);
		smart__tuner_advance(t, rates[i], 60);
	}
	CHECK_EQ(t->phase, TUNER_STABLE);
	return atomic_load(&t->cap);
}

static void test_tuner(void)
{
	static const double peak8[] = { 5, 7, 10, 9, 8, 6 };
	static const double inf_close[] = { 5, 7, 10.4, 9, 8, 10 };
	static const double inf_best[] = { 5, 7, 8, 9, 8, 12 };
	struct smart__tuner t;
	int i;

	CHECK_EQ(run_update(&t, peak8), 8);
	/* within 5% of unlimited: keep unlimited */
	CHECK_EQ(run_update(&t, inf_close), SMART_TUNER_UNLIMITED);
	CHECK_EQ(run_update(&t, inf_best), SMART_TUNER_UNLIMITED);
	/* stable for 60 epochs, then a new update phase from the first cap */
	run_update(&t, peak8);
	for (i = 0; i < 59; i++) {
		smart__tuner_advance(&t, 1, 60);
		CHECK_EQ(t.phase, TUNER_STABLE);
		CHECK_EQ(atomic_load(&t.cap), 8);
	}
	smart__tuner_advance(&t, 1, 60);
	CHECK_EQ(t.phase, TUNER_UPDATE);
	CHECK_EQ(atomic_load(&t.cap), 4);
}

/* Feed n windows of a steady retry rate r (retries per 1000 ops). */
static void windows(struct smart__backoff *bo, int n, uint64_t r)
{
	while (n--)
		smart__backoff_window(bo, 64, r, 1000);
}

static void test_backoff_window(void)
{
	struct smart__backoff bo = { .level = -1, .nmax = 64, .p_avg = -1 };

	/* no conflicts: no backoff */
	windows(&bo, 20, 0);
	CHECK_EQ(bo.level, -1);
	CHECK_EQ(bo.nmax, 64);
	/* moderate: nothing calls for a backoff */
	windows(&bo, 50, 400);
	CHECK_EQ(bo.level, -1);
	/* heavy (4 retries per op): a step up, kept only if it helps; the
	 * rate stays: the step is undone and the next probe waits */
	windows(&bo, 20, 4000);
	CHECK_EQ(bo.level, -1);
	CHECK_GT(bo.holds, 1);
	/* a step that helps is kept: answer each step up with half the rate;
	 * levels rise until the rate is below BO_HIGH (0.5), then hold */
	for (int i = 0; i < 400; i++)
		windows(&bo, 1, 4000 >> (bo.level + 1));
	CHECK_GE(bo.level, 1);
	CHECK_LE(bo.level, 3);
	/* contention falls: the backoff comes down, a level a window once
	 * the smoothed rate is below BO_LOW */
	windows(&bo, 20, 0);
	CHECK_EQ(bo.level, 0);
	/* and n_max, once halved, doubles back */
	bo.nmax = 4;
	windows(&bo, 5, 0);
	CHECK_EQ(bo.nmax, 64);
	/* in between, a step down that does not raise the rate is kept */
	bo.level = 2;
	bo.hold = bo.holds = 0;
	windows(&bo, 40, 300);
	CHECK_EQ(bo.level, -1);
	/* an empty window changes nothing */
	smart__backoff_window(&bo, 64, 0, 0);
	CHECK_EQ(bo.level, -1);
}

struct credit_arg {
	uint16_t blade;
	int id;
};

static void credit_task(smart_worker_t *w, void *p)
{
	struct credit_arg *a = p;
	int i;

	/* more WRs per sync than the cap: posting must wait for credits */
	for (i = 0; i < 50; i++) {
		CHECK_OK(smart_faa(w, smart_gaddr(a->blade, 1 << 20), 1, NULL));
		CHECK_OK(smart_faa(w, smart_gaddr(a->blade, 1 << 20), 1, NULL));
		CHECK_OK(smart_post(w));
		CHECK_OK(smart_faa(w, smart_gaddr(a->blade, 1 << 20), 1, NULL));
		CHECK_OK(smart_sync(w));
	}
}

static void test_fixed_credit(void)
{
	static const char *const kv[] = { "credit", "2", "chain_max", "2",
					  NULL };
	struct credit_arg args[8];
	struct fixture f;
	smart_worker_t *w;
	smart_stats_t st;
	uint64_t v = 0;
	int i;

	fixture_start(&f, 4 << 20, 0, kv);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_write_sync(w, smart_gaddr(0, 1 << 20), &v, 8));
	for (i = 0; i < 8; i++) {
		args[i] = (struct credit_arg){ 0, i };
		CHECK_OK(smart_task_spawn(w, credit_task, &args[i]));
	}
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_read_sync(w, smart_gaddr(0, 1 << 20), 8, &v));
	CHECK_U64_EQ(v, 8 * 50 * 3);
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	CHECK_EQ(st.credit_cap, 2);
	CHECK_STR_EQ(st.throttle_phase, "fixed");
	CHECK_GT(st.c[SMART_STAT_CREDIT_WAITS], 0);
	CHECK_EQ(atomic_load(&w->credit), 2); /* all returned */
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

struct adm_arg {
	int *inside, *max_inside, *order, *n;
	int id;
};

static void adm_task(smart_worker_t *w, void *p)
{
	struct adm_arg *a = p;

	smart_backoff_begin(w);
	a->order[(*a->n)++] = a->id;
	(*a->inside)++;
	if (*a->inside > *a->max_inside)
		*a->max_inside = *a->inside;
	smart_task_yield(w); /* others would run inside now */
	smart_task_yield(w);
	(*a->inside)--;
	smart_backoff_end(w);
}

static void test_admission_fifo(void)
{
	struct adm_arg args[6];
	int inside = 0, max_inside = 0, order[6], n = 0, i;
	struct fixture f;
	smart_worker_t *w;

	fixture_start(&f, 4 << 20, 0, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	w->bo.nmax = 2; /* as if adapted down, and kept there */
	w->bo.win_end = UINT64_MAX;
	for (i = 0; i < 6; i++) {
		args[i] = (struct adm_arg){ &inside, &max_inside, order, &n,
					    i };
		CHECK_OK(smart_task_spawn(w, adm_task, &args[i]));
	}
	CHECK_OK(smart_worker_run(w));
	CHECK_EQ(max_inside, 2);
	CHECK_EQ(n, 6);
	for (i = 0; i < 6; i++)
		CHECK_EQ(order[i], i);
	CHECK_EQ(w->bo.active, 0);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_switches(void)
{
	static const char *const none[] = { "techniques", "None", NULL };
	static const char *const two[] = { "techniques",
					   "WorkReqThrot,SpecLookup",
					   "nic_model", "default", NULL };
	static const char *const nonic[] = { "techniques", "WorkReqThrot",
					     NULL };
	struct fixture f;
	smart_stats_t st;

	fixture_start(&f, 4 << 20, 0, none);
	CHECK_STR_EQ(smart_ctx_techniques(f.ctx), "None");
	CHECK_STR_EQ(smart_ctx_qp_mode(f.ctx), "per-thread");
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	CHECK_EQ(st.credit_cap, -1);
	CHECK_STR_EQ(st.throttle_phase, "off");
	fixture_stop(&f);

	fixture_start(&f, 4 << 20, 0, two);
	CHECK(smart_ctx_technique(f.ctx, SMART_TECH_WORK_REQ_THROT));
	CHECK(smart_ctx_technique(f.ctx, SMART_TECH_SPEC_LOOKUP));
	CHECK(!smart_ctx_technique(f.ctx, SMART_TECH_CONFLICT_AVOID));
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	CHECK_EQ(st.credit_cap, 4); /* the tuner starts at 4 */
	CHECK_STR_EQ(st.throttle_phase, "update");
	CHECK_STR_EQ(smart_ctx_qp_mode(f.ctx), "per-thread");
	fixture_stop(&f);

	/* plain shm: no NIC, no tuning */
	fixture_start(&f, 4 << 20, 0, nonic);
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	CHECK_EQ(st.credit_cap, -1);
	CHECK_STR_EQ(st.throttle_phase, "no-nic");
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "tuner", test_tuner },
		{ "backoff_window", test_backoff_window },
		{ "fixed_credit", test_fixed_credit },
		{ "admission_fifo", test_admission_fifo },
		{ "switches", test_switches },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
