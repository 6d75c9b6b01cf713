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

	bo->level = BO_LEVEL_OFF; /* until conflicts call for one */
	bo->nmax = w->ctx->o.max_tasks;
	bo->p_avg = -1;
	bo->p_probe = -1;
	smart_rng_seed(&bo->rng, 0x5eed0000u + (uint64_t)w->index);
}

/* A step on probation is judged BO_PROBE windows later, on the smoothed
 * rate: a step up is kept if the rate fell by more than BO_EPS, a step
 * down if it did not rise by more than BO_EPS; otherwise it is undone and
 * the next probe waits a doubling number of windows (up to BO_HOLD_MAX).
 * Every window of a probation, the judged one included, takes no other
 * step. */
static void bo_judge(struct smart__backoff *bo)
{
	int dir = bo->probe_dir, kept;

	if (++bo->probe_age < BO_PROBE)
		return;
	kept = dir > 0 ? bo->p_avg < bo->p_probe - BO_EPS :
			 bo->p_avg <= bo->p_probe + BO_EPS;
	bo->probe_dir = 0;
	if (kept) {
		bo->holds = 0;
		return;
	}
	if (bo->probe_nmax)
		bo->nmax *= 2;
	else
		bo->level -= dir;
	bo->holds = bo->holds ? smart_min(bo->holds * 2, BO_HOLD_MAX) : 1;
	bo->hold = bo->holds;
}

static void bo_probe(struct smart__backoff *bo, int dir)
{
	bo->probe_nmax = dir > 0 && bo->level == BO_LEVEL_MAX;
	if (bo->probe_nmax)
		bo->nmax /= 2;
	else
		bo->level += dir;
	bo->probe_dir = dir;
	bo->probe_age = 0;
	bo->p_probe = bo->p_avg;
}

/* One window's verdict (pure, for the tests).  The backoff cap is
 * unit << level, or no backoff at all at level -1; at the top level the
 * next step halves n_max, the coroutines admitted at once.
 *  - retry rate above BO_HIGH: probe a step up;
 *  - below BO_LOW: step down at once (n_max first back to max_tasks,
 *    doubling each window: throttling comes off when contention falls);
 *  - in between: now and then probe a step down, towards no backoff.
 * Steps are judged on what they did to the smoothed rate (bo_judge), not
 * on thresholds alone, for two reasons.  A window's burst is no trend, and
 * the window after one always looks better (regression to the mean).  And
 * backing off lowers the retry rate only where conflicts come from load on
 * a shared resource (a NIC, a blade); where they do not (plain shm, a CAS
 * costs a few hundred ns) a task that slept retries with a staler value
 * and the rate goes up: the probes then take the backoff down to none,
 * and ConflictAvoid costs nothing there. */
void smart__backoff_window(struct smart__backoff *bo, int max_tasks,
			   uint64_t retries, uint64_t done)
{
	double p;

	if (!retries && !done)
		return;
	p = (double)retries / (double)(retries + done);
	bo->p_avg = bo->p_avg < 0 ? p :
				    bo->p_avg * (1 - BO_ALPHA) + p * BO_ALPHA;
	p = bo->p_avg;
	if (bo->hold)
		bo->hold--;
	if (bo->probe_dir) {
		bo_judge(bo);
		return;
	}
	if (p < BO_LOW) {
		if (bo->nmax < max_tasks)
			bo->nmax = smart_min(bo->nmax * 2, max_tasks);
		else if (bo->level > 0)
			bo->level--;
	} else if (bo->hold) {
		return;
	} else if (p > BO_HIGH) {
		if (bo->level < BO_LEVEL_MAX || bo->nmax > 1)
			bo_probe(bo, 1);
	} else if (bo->level > BO_LEVEL_OFF) {
		bo_probe(bo, -1);
	}
}

/* The backoff unit for task t: the measured round trip of the blade of
 * its last sync's first chain (a sync leaves chains[0] as it was). */
static uint64_t bo_unit(const struct smart_worker *w,
			const struct smart__task *t)
{
	uint32_t rtt = w->rtt[t->chains[0].blade];

	return rtt ? rtt : BO_C0;
}

static void bo_adapt(struct smart_worker *w, uint64_t now)
{
	struct smart__backoff *bo = &w->bo;
	double cpn = w->ctx->clock.use_tsc ? w->ctx->clock.cycles_per_ns : 1;

	bo->win_end = now +
		      (uint64_t)((double)w->ctx->o.backoff_window_ns * cpn);
	smart__backoff_window(bo, w->ctx->o.max_tasks, bo->win_retries,
			      bo->win_done);
	bo->win_retries = bo->win_done = 0;
}

static void bo_tick(struct smart_worker *w)
{
	if (w->now >= w->bo.win_end)
		bo_adapt(w, w->now);
}

void smart_backoff_begin(smart_worker_t *w)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__backoff *bo = &w->bo;

	t->bo_retries = 0;
	if (!conflict_avoid(w) || t == &w->main_task)
		return;
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
	bo_sleep(w, t, start + wait);
	SMART_STAT_ADD(w, SMART_STAT_BACKOFF_CYCLES, smart__rdtsc() - start);
}

void smart_backoff_end(smart_worker_t *w)
{
	struct smart__task *t = smart__cur_task(w);
	struct smart__backoff *bo = &w->bo;
	struct smart__task *next;

	SMART_STAT_INC(w, SMART_STAT_GUARDED_OPS);
	w->retry_hist[smart_min(t->bo_retries, SMART_RETRY_HIST - 1)]++;
	bo->win_done++;
	if (!t->bo_admitted)
		return;
	t->bo_admitted = 0;
	bo_tick(w);
	bo->active--;
	while ((next = bo->wait_head) && bo->active < bo->nmax) {
		bo->wait_head = next->next; /* FIFO */
		if (!bo->wait_head)
			bo->wait_tail = NULL;
		bo->active++;
		smart__task_unpark(w, next);
	}
}
