/*
 * Conflict avoidance (Smart §4.3; DESIGN.md §5.3): truncated exponential
 * backoff with jitter for retry loops, an adaptive cap on the backoff, and
 * a throttle on how many coroutines of a worker run guarded operations at
 * once.  See include/smart/backoff.h for the contract.
 *
 * Everything is per worker (no sharing, no atomics).  A backing-off task
 * yields until its deadline passes, so the worker's other tasks and the
 * completions keep going.  Admission is a FIFO of parked tasks; an ending
 * operation hands its slot to the head of the queue.
 */
#include "core/core.h"

#define BO_C0		SMART_BACKOFF_C0
#define BO_LIMIT	SMART_BACKOFF_LIMIT
#define BO_HIGH		0.5
#define BO_LOW		0.1

static int conflict_avoid(const struct smart_worker *w)
{
	return w->ctx->o.techniques & SMART_TECH_CONFLICT_AVOID;
}

void smart__backoff_init(struct smart_worker *w)
{
	struct smart__backoff *bo = &w->bo;

	bo->cmax = BO_C0;
	bo->nmax = w->ctx->o.max_tasks;
	smart_rng_seed(&bo->rng, 0x5eed0000u + (uint64_t)w->index);
}

/* One window's verdict: adapt C_max from the retry rate; at a bound,
 * n_max.  Pure, for the tests. */
void smart__backoff_window(struct smart__backoff *bo, int max_tasks,
			   uint64_t retries, uint64_t done)
{
	double p;

	if (!retries && !done)
		return;
	p = (double)retries / (double)(retries + done);
	if (p > BO_HIGH) {
		if (bo->cmax < BO_LIMIT)
			bo->cmax *= 2;
		else if (bo->nmax > 1)
			bo->nmax /= 2;
	} else if (p < BO_LOW) {
		if (bo->cmax > BO_C0)
			bo->cmax /= 2;
		else if (bo->nmax < max_tasks)
			bo->nmax = smart_min(bo->nmax * 2, max_tasks);
	}
}

static void bo_adapt(struct smart_worker *w, uint64_t now)
{
	struct smart__backoff *bo = &w->bo;
	double cpn = w->ctx->clock.use_tsc ? w->ctx->clock.cycles_per_ns : 1;

	bo->win_end = now + (uint64_t)((double)w->ctx->o.backoff_window_ns *
				       cpn);
	smart__backoff_window(bo, w->ctx->o.max_tasks, bo->win_retries,
			      bo->win_done);
	bo->win_retries = bo->win_done = 0;
}

static void bo_tick(struct smart_worker *w)
{
	uint64_t now = smart__rdtsc();

	if (now >= w->bo.win_end)
		bo_adapt(w, now);
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
		smart__task_park(w, t);	/* the slot is handed to us */
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
	cap = k >= 10 ? BO_LIMIT : (uint64_t)BO_C0 << k;
	cap = smart_min(cap, bo->cmax);
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
		bo->wait_head = next->next;	/* FIFO */
		if (!bo->wait_head)
			bo->wait_tail = NULL;
		bo->active++;
		smart__task_unpark(w, next);
	}
}

int smart_ctx_technique(const smart_ctx_t *ctx, enum smart_technique t)
{
	return ctx && (ctx->o.techniques & (int)t) ? 1 : 0;
}

const char *smart_ctx_techniques(const smart_ctx_t *ctx)
{
	return ctx ? ctx->tech_names : "";
}
