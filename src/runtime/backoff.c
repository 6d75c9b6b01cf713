/*
 * Conflict avoidance (Smart §4.3; docs/design.md §6.3): truncated exponential
 * backoff with jitter for retry loops, an adaptive cap on the backoff, and
 * a throttle on how many coroutines of a worker run guarded operations at
 * once.  See include/smart/backoff.h for the contract.
 *
 * The unit of the backoff is the round trip the worker measures on its
 * own syncs to the blade the retrying task last synced with (ops.c keeps
 * an EWMA per blade), not a fixed number of cycles: what a retry costs on
 * plain shm (a few hundred ns) and on a NIC (microseconds) differ by an
 * order of magnitude, and a unit too big for the transport only makes
 * tasks wait.  Until a round trip was measured the unit is 4096 cycles.
 *
 * Everything is per worker (no sharing, no atomics).  Time is the TSC as
 * the worker's last poll read it (w->now): polls come every few
 * microseconds, far below a backoff window, and cost no clock read here.
 * A backing-off task sleeps off the run queue until its deadline, so the
 * worker's other tasks and the completions keep going.  Admission is a
 * FIFO of parked tasks; an ending operation hands its slot to the head.
 */
#include "runtime/core.h"
#include "util/mutant.h"

#define BO_C0	     SMART_BACKOFF_C0
#define BO_SHIFT_MAX SMART_BACKOFF_SHIFT_MAX
#define BO_HIGH	     0.5
#define BO_LOW	     0.1
#define BO_EPS	     0.01 /* a step down may cost this much rate */
#define BO_LEVEL_OFF (-1) /* no backoff */
#define BO_LEVEL_MAX SMART_BACKOFF_SHIFT_MAX
#define BO_HOLD_MAX  256  /* windows a failed probe holds off */
#define BO_ALPHA     0.25 /* weight of a window in the smoothed rate */
#define BO_PROBE     4	  /* windows before a step is judged */

static int conflict_avoid(const struct smart_worker *w)
{
	return w->ctx->o.techniques & SMART_TECH_CONFLICT_AVOID;
}

void smart__backoff_init(struct smart_worker *w)
{
	struct smart__backoff *bo = &w->bo;

	/* level 1 (backoff alone): the cap fixed at C_limit */
	bo->level = w->ctx->o.conflict_level > 1 ? BO_LEVEL_OFF : BO_LEVEL_MAX;
	bo->nmax = w->ctx->o.max_tasks;
	bo->no_coro_throt = w->ctx->o.conflict_level < 3;
	bo->p_avg = -1;
	bo->p_probe = -1;
	smart_rng_seed(&bo->rng, 0x5eed0000u + (uint64_t)w->index);
}

/* A step down probed between the thresholds is judged BO_PROBE windows
 * later, on the smoothed rate: it is kept if the rate did not rise by
 * more than BO_EPS; otherwise it is undone and the next probe waits a
 * doubling number of windows (up to BO_HOLD_MAX).  Every window of a
 * probation, the judged one included, takes no other step, except a step
 * up: a rate above BO_HIGH ends the probation (the step is undone). */
static void bo_judge(struct smart__backoff *bo)
{
	if (++bo->probe_age < BO_PROBE && bo->p_avg <= BO_HIGH)
		return;
	bo->probe_dir = 0;
	if (bo->p_avg <= bo->p_probe + BO_EPS) {
		bo->holds = 0;
		return;
	}
	bo->level++;
	bo->holds = bo->holds ? smart_min(bo->holds * 2, BO_HOLD_MAX) : 1;
	bo->hold = bo->holds;
}

/* Above BO_HIGH, the paper's rule (§4.3), taken at once: C_max doubles
 * up to C_limit, and only once it is there n_max halves, down to 1
 * (coroutine throttling, when the level of ConflictAvoid has it).  A cut
 * halves what the worker can run (max_tasks: its tasks, see bo_limit),
 * not the slot bound it started from: a halving that still admits every
 * task throttles nothing and only delays the cuts that do. */
static int bo_up(struct smart__backoff *bo, int max_tasks)
{
	if (bo->level < BO_LEVEL_MAX) {
		bo->level++;
		return 0;
	}
	if (bo->no_coro_throt || SMART_M_BO_NO_CORO_THROT)
		return 0;
	if (smart_min(bo->nmax, max_tasks) <= 1)
		return 0;
	bo->nmax = smart_min(bo->nmax, max_tasks) / 2;
	return -1;
}

/* Below BO_LOW, the paper's rule (§4.3: n_max "is updated only when
 * C_max has reached its lower or upper bound"): C_max halves down to C_0
 * first, and only there n_max comes back, doubling each window; then
 * C_max goes on to no backoff (this project's level below C_0). */
static int bo_down(struct smart__backoff *bo, int max_tasks)
{
	if (bo->nmax < max_tasks &&
	    (bo->level <= 0 || SMART_M_BO_NMAX_BEFORE_CAP)) {
		bo->nmax = smart_min(bo->nmax * 2, max_tasks);
		return 1;
	}
	if (bo->level > BO_LEVEL_OFF)
		bo->level--;
	return 0;
}

/* One window's verdict (pure, for the tests): -1 when it halved n_max,
 * 1 when it raised n_max, else 0.  The backoff cap is unit << level, or
 * no backoff at all at level -1.  On the smoothed retry rate p:
 *  - p above BO_HIGH (0.5): a step up (bo_up);
 *  - p below BO_LOW (0.1): a step down (bo_down);
 *  - in between: now and then probe a step down, towards no backoff,
 *    kept only if it did not raise the rate (bo_judge); not while n_max
 *    is throttled (it comes back below BO_LOW, at C_0).
 * The thresholds are the paper's and act without probation: judging a
 * step up on whether it lowered the rate (as this code once did) never
 * let the cap reach C_limit at 96 threads x 8 coroutines in the simulator
 * (a tail of hot-key operations keeps p near 1 whatever one step does),
 * so n_max never moved (docs/sim.md §8).  The probed step down is this
 * project's addition: backing off lowers the retry rate only where
 * conflicts come from load on a shared resource (a NIC, a blade); where
 * they do not (plain shm, a CAS costs a few hundred ns) a task that slept
 * retries with a staler value; between the thresholds the probes take
 * the backoff down to none there. */
int smart__backoff_window(struct smart__backoff *bo, int max_tasks,
			  uint64_t retries, uint64_t done)
{
	double p;

	if (!retries && !done)
		return 0;
	p = (double)retries / (double)(retries + done);
	bo->p_avg = bo->p_avg < 0 ? p :
				    bo->p_avg * (1 - BO_ALPHA) + p * BO_ALPHA;
	p = bo->p_avg;
	if (bo->hold)
		bo->hold--;
	if (bo->probe_dir)
		bo_judge(bo);
	if (bo->probe_dir)
		return 0;
	if (p > BO_HIGH)
		return bo_up(bo, max_tasks);
	if (p < BO_LOW)
		return bo_down(bo, max_tasks);
	if (!bo->hold && bo->level > BO_LEVEL_OFF && bo->nmax >= max_tasks) {
		bo->level--;
		bo->probe_dir = -1;
		bo->probe_age = 0;
		bo->p_probe = p;
	}
	return 0;
}

/* The backoff unit for task t: the measured round trip of the blade of
 * its last sync's first chain (a sync leaves chains[0] as it was). */
static uint64_t bo_unit(const struct smart_worker *w,
			const struct smart__task *t)
{
	uint32_t rtt = w->rtt[t->chains[0].blade];

	return rtt ? rtt : BO_C0;
}

/* What n_max is cut from and raised back to: the worker's live tasks
 * (at least 1), within max_tasks.  smart-bench's 8 coroutines run under
 * the library's 64 slots: from 64, three of six cuts admitted all 8
 * (docs/sim.md §8.2). */
static int bo_limit(const struct smart_worker *w)
{
	if (SMART_M_BO_NMAX_FROM_SLOTS)
		return w->ctx->o.max_tasks;
	return smart_max(1, smart_min(w->live, w->ctx->o.max_tasks));
}

static void bo_adapt(struct smart_worker *w, uint64_t now)
{
	struct smart__backoff *bo = &w->bo;
	double cpn = w->ctx->clock.use_tsc ? w->ctx->clock.cycles_per_ns : 1;
	int step = 0;

	bo->win_end = now +
		      (uint64_t)((double)w->ctx->o.backoff_window_ns * cpn);
	if (w->ctx->o.conflict_level > 1) /* 1: the cap stays C_limit */
		step = smart__backoff_window(bo, bo_limit(w), bo->win_retries,
					     bo->win_done);
	bo->win_retries = bo->win_done = 0;
	if (step)
		SMART_STAT_INC(w, step < 0 ? SMART_STAT_NMAX_CUTS :
					     SMART_STAT_NMAX_RAISES);
}

static void bo_tick(struct smart_worker *w)
{
	if (w->now >= w->bo.win_end)
		bo_adapt(w, w->now);
}

/* Take an admission slot for t: at once when one is free and nobody
 * queues, else FIFO behind the parked tasks (the slot is handed over). */
static void bo_admit(struct smart_worker *w, struct smart__task *t)
{
	struct smart__backoff *bo = &w->bo;

	if (bo->active >= bo->nmax || bo->wait_head) {
		SMART_STAT_INC(w, SMART_STAT_ADMISSION_WAITS);
		t->next = NULL;
		if (bo->wait_tail)
			bo->wait_tail->next = t;
		else
			bo->wait_head = t;
		bo->wait_tail = t;
		smart__task_park(w, t); /* the slot is handed to us */
	} else {
		bo->active++;
	}
	t->bo_admitted = 1;
}

/* Give t's slot back and hand free slots to the head of the FIFO. */
static void bo_release(struct smart_worker *w, struct smart__task *t)
{
	struct smart__backoff *bo = &w->bo;
	struct smart__task *next;

	t->bo_admitted = 0;
	bo->active--;
	while ((next = bo->wait_head) && bo->active < bo->nmax) {
		bo->wait_head = next->next; /* FIFO */
		if (!bo->wait_head)
			bo->wait_tail = NULL;
		bo->active++;
		smart__task_unpark(w, next);
	}
}

void smart_backoff_begin(smart_worker_t *w)
{
	struct smart__task *t = smart__cur_task(w);

	t->bo_retries = 0;
	if (!conflict_avoid(w) || t == &w->main_task)
		return;
	bo_admit(w, t);
}

/* Wait until deadline (TSC), letting the other tasks run: a task sleeps
 * off the run queue; the main context polls meanwhile. */
static void bo_sleep(struct smart_worker *w, struct smart__task *t,
		     uint64_t deadline)
{
	if (t != &w->main_task) {
		smart__task_sleep(w, t, deadline);
		return;
	}
	while (smart__rdtsc() < deadline)
		smart__worker_poll(w);
}

void smart_backoff_retry(smart_worker_t *w)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__backoff *bo = &w->bo;
	uint64_t cap, wait, start;
	int k = t->bo_retries++;

	SMART_STAT_INC(w, SMART_STAT_RETRIES);
	bo->win_retries++;
	if (!conflict_avoid(w))
		return;
	bo_tick(w);
	if (bo->level == BO_LEVEL_OFF)
		return;
	bo->unit = bo_unit(w, t);
	cap = bo->unit << smart_min(k, bo->level);
	wait = smart_rng_below(&bo->rng, cap);
	start = smart__rdtsc();
	if (t->bo_admitted && !SMART_M_BO_SLEEP_HOLDS_SLOT) {
		/* n_max bounds the guarded operations trying at once, not
		 * those waiting out a backoff: a sleeper holding its slot
		 * stalls every other task of its worker behind one hot key
		 * (docs/sim.md §8.3: at n_max 1, 96 threads, 18 % of the
		 * throughput and the median update 7 -> 59 us) */
		bo_release(w, t);
		bo_sleep(w, t, start + wait);
		bo_admit(w, t);
	} else {
		bo_sleep(w, t, start + wait);
	}
	SMART_STAT_ADD(w, SMART_STAT_BACKOFF_CYCLES, smart__rdtsc() - start);
}

void smart_backoff_end(smart_worker_t *w)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__backoff *bo = &w->bo;

	SMART_STAT_INC(w, SMART_STAT_GUARDED_OPS);
	w->retry_hist[smart_min(t->bo_retries, SMART_RETRY_HIST - 1)]++;
	bo->win_done++;
	if (!t->bo_admitted)
		return;
	bo_tick(w);
	bo_release(w, t);
}
