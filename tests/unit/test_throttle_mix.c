/*
 * WorkReqThrot's invariants under every kind of sync at once: tasks and
 * the main context mix an op and its sync in one call (op_sync_fast), a
 * chain of one WR (task_sync1), chains of up to four (the general sync),
 * posts before a sync, CAS and FAA, refused ops and a blade whose failure
 * word is set for a few ops.  After every op and at every poll (a poller
 * of the worker) two things hold: the WRs in flight never exceed the cap
 * (but for a chain longer than it, which goes when every credit is back),
 * and the credits taken cover them (none created); after every run every
 * credit is back (none lost).  Fixed caps 1, 2, 3 and 8, and the tuner's
 * moving cap (the RNIC model gives shm a NIC to tune for).  Deterministic:
 * the rounds are drawn from fixed seeds; shm runs them in a fixed order.
 * Found nothing when written (a hostile review of the one-WR ways'
 * credits); kept so that mutant THROT_FAST_NO_FLOOR has a second catcher
 * and task_sync1's credits are checked too.
 */
#include <stdlib.h>
#include <string.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "runtime/core.h"

#define MIX_CHAIN_MAX 4 /* the longest chain a round queues */
#define MIX_TASKS_MAX 12

/* One run's bounds and what its checks saw. */
struct mix {
	struct smart_ctx *ctx;
	uint16_t blade;
	uint64_t size;
	uint64_t base;	/* the first byte past the blade's own area */
	int cap;	/* the fixed cap, 0 under the tuner */
	uint64_t *pool; /* 8 words per task, the main context's last */
	int over_cap;	/* checks that found more in flight than the cap */
	int uncovered;	/* ... more in flight than the credits taken */
	int errors;	/* ops that failed where none should */
};

struct mix_arg {
	struct mix *m;
	uint64_t seed;
	int rounds, idx;
};

/* The WRs of busy batches: what the worker has in flight. */
static int mix_in_flight(const smart_worker_t *w)
{
	int sum = 0;

	for (int i = -1; i < w->ntask_slots; i++) {
		const struct smart__task *t = i < 0 ? &w->main_task :
						      w->all_tasks[i];

		for (int j = 0; t && j < SMART_TASK_BATCHES; j++)
			if (__atomic_load_n(&t->batches[j].busy,
					    __ATOMIC_ACQUIRE) == 1)
				sum += (int)t->batches[j].n;
	}
	return sum;
}

static void mix_check(smart_worker_t *w, struct mix *m)
{
	int n = mix_in_flight(w), c = atomic_load(&w->credit);

	if (m->cap && n > m->cap && n > MIX_CHAIN_MAX)
		m->over_cap++;
	if (w->cap_seen && n > w->cap_seen - c)
		m->uncovered++;
}

static int mix_poller(struct smart_worker *w, void *p)
{
	mix_check(w, p);
	return 0;
}

static uint64_t mix_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A chain of 1..4 READs and its sync (the general sync, or task_sync1
 * for one WR). */
static int mix_chain(smart_worker_t *w, smart_gaddr_t g, uint64_t *buf, int n)
{
	for (int i = 0; i < n; i++)
		if (smart_read(w, g, 8, buf + i))
			return SMART_EPROTO;
	return smart_sync(w);
}

/* A blade whose failure word is set for two ops: both fail at once. */
static int mix_failed_blade(smart_worker_t *w, struct mix *m, smart_gaddr_t g,
			    uint64_t *buf)
{
	struct smart__blade *b = smart__blade_get(m->ctx, m->blade);
	int ok;

	atomic_store(&b->fail, SMART_ECONN);
	ok = smart_read_sync(w, g, 8, buf) == SMART_ECONN &&
	     smart_cas_sync(w, smart_gaddr(m->blade, m->base + 520), 0, 0,
			    buf) == SMART_ECONN;
	atomic_store(&b->fail, 0);
	if (smart_worker_in_task(w))
		smart_task_yield(w);
	return ok ? 0 : SMART_EPROTO;
}

static void mix_round(smart_worker_t *w, struct mix *m, uint64_t *s,
		      uint64_t *buf)
{
	smart_gaddr_t g = smart_gaddr(m->blade,
				      m->base + 8 * (mix_rng(s) % 64));
	int rc = 0;

	switch (mix_rng(s) % 10) {
	case 0:
	case 1:
		rc = smart_read_sync(w, g, 8, buf);
		break;
	case 2:
		rc = mix_chain(w, g, buf,
			       1 + (int)(mix_rng(s) % MIX_CHAIN_MAX));
		break;
	case 3:
		rc = smart_faa_sync(w, smart_gaddr(m->blade, m->base + 512), 1,
				    buf);
		break;
	case 4:
		rc = smart_cas_sync(w, smart_gaddr(m->blade, m->base + 520), 0,
				    0, buf);
		break;
	case 5: /* past the blade's end: refused before any credit moves */
		rc = smart_read_sync(w, smart_gaddr(m->blade, m->size), 8,
				     buf) == SMART_EREMOTE ?
			     0 :
			     SMART_EPROTO;
		break;
	case 6: /* a post, then an op and its sync behind it */
		rc = smart_read(w, g, 8, buf) || smart_post(w) ?
			     SMART_EPROTO :
			     smart_read_sync(w, g, 8, buf + 1);
		break;
	case 7:
		rc = smart_write_sync(w, g, buf, 8);
		break;
	case 8:
		rc = mix_chain(w, g, buf, 1);
		break;
	default:
		rc = mix_failed_blade(w, m, g, buf);
	}
	if (rc)
		m->errors++;
	mix_check(w, m);
}

static void mix_task(smart_worker_t *w, void *p)
{
	struct mix_arg *a = p;
	uint64_t s = a->seed;

	for (int i = 0; i < a->rounds; i++)
		mix_round(w, a->m, &s, a->m->pool + 8 * a->idx);
}

/* Three runs of `tasks` tasks of `rounds` rounds each, the main context's
 * 40 rounds before each; the checks after every op, and at every poll
 * with `poller`. */
static void mix_run(const char **kv, int cap, int tasks, int rounds, int poller)
{
	struct mix_arg a[MIX_TASKS_MAX];
	struct fixture f;
	struct mix m;
	smart_worker_t *w;
	smart_stats_t st;
	struct smart_blade_info info;
	uint64_t s = 12345;

	fixture_start(&f, 4 << 20, 0, kv);
	memset(&m, 0, sizeof(m));
	m.ctx = f.ctx;
	m.blade = f.id;
	m.size = 4 << 20;
	/* the ops' words lie past the blade's own area: at 4096 (the
	 * lease table) a WRITE of a stale word took this client's lease
	 * away now and then, and every op failed fenced */
	CHECK_OK(smart_ctx_blade_info(f.ctx, f.id, &info));
	m.base = info.reserved;
	CHECK_LE(m.base + 1024, m.size);
	m.cap = cap;
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK(w->throttle);
	CHECK_OK(smart_buf_alloc(w, 8 * 8 * (MIX_TASKS_MAX + 1),
				 (void **)&m.pool));
	if (poller)
		CHECK_OK(smart__worker_poller_add(w, mix_poller, &m));
	for (int r = 0; r < 3; r++) {
		for (int i = 0; i < 40; i++)
			mix_round(w, &m, &s, m.pool + 8 * MIX_TASKS_MAX);
		for (int i = 0; i < tasks; i++) {
			a[i] = (struct mix_arg){ &m,
						 1000 + 77 * (uint64_t)i +
							 (uint64_t)r,
						 rounds, i };
			CHECK_OK(smart_task_spawn(w, mix_task, &a[i]));
		}
		CHECK_OK(smart_worker_run(w));
		CHECK_EQ(atomic_load(&w->credit), w->cap_seen);
	}
	if (poller)
		smart__worker_poller_del(w, mix_poller, &m);
	CHECK_EQ(m.over_cap, 0);
	CHECK_EQ(m.uncovered, 0);
	CHECK_EQ(m.errors, 0);
	CHECK_GT(w->sync_ops + w->sync_ops_turned + w->posts1, 0);
	CHECK_OK(smart_stats_snapshot(f.ctx, &st));
	if (cap) /* tasks parked for credits (the tuner's cap may be wide) */
		CHECK_GT(st.c[SMART_STAT_CREDIT_PARKS], 0);
	else /* the tuner ran (its epochs pass by the clock) */
		CHECK_GT(st.c[SMART_STAT_TUNER_EPOCHS], 0);
	smart_buf_free(w, m.pool);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_fixed_caps(void)
{
	static const char *kv1[] = { "credit", "1", NULL };
	static const char *kv2[] = { "credit", "2", NULL };
	static const char *kv3[] = { "credit", "3", NULL };
	static const char *kv8[] = { "credit", "8", NULL };

	for (int poller = 0; poller < 2; poller++) {
		mix_run(kv1, 1, 6, 300, poller);
		mix_run(kv2, 2, 6, 300, poller);
		mix_run(kv3, 3, 8, 300, poller);
		mix_run(kv8, 8, 3, 600, poller);
		mix_run(kv8, 8, 12, 300, poller);
	}
}

/* The tuner's cap moves every 100 us; the credits follow it. */
static void test_tuner(void)
{
	static const char *kv[] = {
		"nic_model", "default",	      "tune_interval",
		"100us",     "stable_epochs", "2",
		NULL
	};

	for (int poller = 0; poller < 2; poller++)
		mix_run(kv, 0, 8, 2000, poller);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "fixed_caps", test_fixed_caps },
				 { "tuner", test_tuner },
				 { 0 } });
}
