/*
 * smart-perf's load: T threads, each with its own worker and D tasks
 * (coroutines); each task keeps one op in flight: pick a random aligned
 * offset, queue the op, sync.  --raw runs the same random-offset workload
 * with plain loads, stores and CPU atomics on the blade's mapping, D
 * accesses per round and no framework: the physical limit of the shm
 * transport.
 *
 * Invariants: the threads go through the kit's phases (prepare, run,
 * stop); a task only reads the run's state and writes its own thread's
 * counters, whose tasks never run in parallel.  Latency is sampled on one
 * op in KIT_LAT_SAMPLE; the raw runs record one entry per round of depth
 * accesses.
 */
#include <stdlib.h>
#include <string.h>

#include "perf.h"

struct perf_task {
	struct perf_thread *pt;
	smart_rng_t rng;
	void *buf;
};

static uint64_t perf_offset(struct perf *p, smart_rng_t *r)
{
	return p->lo + smart_rng_below(r, p->slots) * p->stride;
}

/* One op at off; sync: with its sync in one call (smart_read_sync & co.,
 * as an application waiting for one op writes it). */
static int perf_issue(struct perf *p, smart_worker_t *w, struct perf_task *t,
		      uint64_t off, int sync)
{
	smart_gaddr_t ga = smart_gaddr(p->env.blade[0], off);

	switch (p->cfg->op) {
	case OP_READ:
		return sync ? smart_read_sync(w, ga, p->size, t->buf) :
			      smart_read(w, ga, p->size, t->buf);
	case OP_WRITE:
		return sync ? smart_write_sync(w, ga, t->buf, p->size) :
			      smart_write(w, ga, t->buf, p->size);
	case OP_CAS:
		return sync ? smart_cas_sync(w, ga, 0, off, t->buf) :
			      smart_cas(w, ga, 0, off, t->buf);
	default:
		return sync ? smart_faa_sync(w, ga, 1, t->buf) :
			      smart_faa(w, ga, 1, t->buf);
	}
}

/* One cas-incr op: read a Zipf-chosen counter, then CAS it to old + 1
 * until that succeeds, inside a conflict-avoidance guard. */
static int perf_cas_incr(struct perf *p, smart_worker_t *w, struct perf_task *t)
{
	uint64_t k = smart_zipf_next(&p->zipf, &t->rng);
	smart_gaddr_t ga = smart_gaddr(p->env.blade[0], p->lo + k * 8);
	uint64_t *v = t->buf, old;
	int rc;

	smart_backoff_begin(w);
	rc = smart_read_sync(w, ga, 8, v);
	while (!rc) {
		old = *v;
		rc = smart_cas_sync(w, ga, old, old + 1, v);
		if (rc || *v == old)
			break;
		smart_backoff_retry(w);
	}
	smart_backoff_end(w);
	return rc;
}

/* Queue --batch ops at random offsets and sync them together (a batch of
 * one by the op's one call with its sync). */
static int perf_batch(struct perf *p, smart_worker_t *w, struct perf_task *t)
{
	int i, rc = 0;

	if (p->cfg->batch == 1)
		return perf_issue(p, w, t, perf_offset(p, &t->rng), 1);
	for (i = 0; i < p->cfg->batch && !rc; i++)
		rc = perf_issue(p, w, t, perf_offset(p, &t->rng), 0);
	return rc ? rc : smart_sync(w);
}

/* --dynamic: threads at or above the active count sit idle. */
static void perf_idle_if_inactive(struct perf *p, struct perf_thread *pt)
{
	while (pt->idx >=
		       atomic_load_explicit(&p->active, memory_order_relaxed) &&
	       !kit_runner_stopping(&p->run))
		kit_sleep(0.0002);
}

static void perf_task_fn(smart_worker_t *w, void *arg)
{
	struct perf_task *t = arg;
	struct perf_thread *pt = t->pt;
	struct perf *p = pt->p;
	uint64_t t0 = 0, n = 0;
	int rc;

	while (!kit_runner_stopping(&p->run)) {
		if (__builtin_expect(p->cfg->dynamic_ms != 0, 0))
			perf_idle_if_inactive(p, pt);
		/* --lat: every op timed (kit_lat_begin samples 1 in 8) */
		t0 = p->cfg->lat ? smart_cycles() : kit_lat_begin(n);
		rc = p->cfg->op == OP_CAS_INCR ? perf_cas_incr(p, w, t) :
						 perf_batch(p, w, t);
		if (rc) {
			/* the failed op is no op of the rate; the run stops
			 * for every thread (a dead blade fails every op) */
			pt->err = rc;
			if (!SMART_M_TOOL_NO_FATAL_STOP)
				kit_runner_fail(&p->run, rc);
			break;
		}
		if (p->cfg->lat)
			smart_hist_add(&pt->hist, smart_cycles() - t0), n++;
		else
			kit_lat_end(&pt->hist, n++, t0);
	}
	pt->ops += n *
		   (uint64_t)(p->cfg->op == OP_CAS_INCR ? 1 : p->cfg->batch);
}

/* One READ before the window: a worker connects its QP to the blade at
 * its first op (a control-session exchange, ~35 k instructions), setup
 * and not the op path.  Inside the window it weighed on the rate and on
 * bench/op-cost.sh's count per op, the more the fewer ops a loaded
 * machine let in (READ 1x8: +0.2 at 160 k ops, +0.9 at 40 k). */
static void perf_warm_task(smart_worker_t *w, void *arg)
{
	struct perf_task *t = arg;
	struct perf *p = t->pt->p;

	t->pt->err = smart_read_sync(w, smart_gaddr(p->env.blade[0], p->lo), 8,
				     t->buf);
}

static int perf_warm(struct perf_thread *pt, struct perf_task *t)
{
	int rc = smart_task_spawn(pt->w, perf_warm_task, t);

	rc = rc ? rc : smart_worker_run(pt->w);
	return rc ? rc : pt->err;
}

static int perf_tasks_spawn(struct perf_thread *pt, struct perf_task *tasks)
{
	const struct perf_cfg *c = pt->p->cfg;
	int i, rc = smart_worker_create(pt->p->env.ctx, &pt->w);

	for (i = 0; !rc && i < c->depth; i++) {
		tasks[i].pt = pt;
		smart_rng_seed(&tasks[i].rng,
			       kit_task_seed(c->com.seed, pt->idx, i));
		rc = smart_buf_alloc(pt->w, c->size < 8 ? 8 : c->size,
				     &tasks[i].buf);
		if (!rc)
			memset(tasks[i].buf, 0x11, c->size);
	}
	rc = rc ? rc : perf_warm(pt, &tasks[0]);
	for (i = 0; !rc && i < c->depth; i++)
		rc = smart_task_spawn(pt->w, perf_task_fn, &tasks[i]);
	return rc;
}

/* A thread that failed to set up stops the run for everyone, then still
 * runs its worker so that the tasks it did spawn return (they see the
 * stop at once) and the worker can be destroyed. */
static int perf_thread_framework(struct perf_thread *pt)
{
	struct perf *p = pt->p;
	struct perf_task *tasks = calloc((size_t)p->cfg->depth, sizeof(*tasks));
	int i, rc = tasks ? perf_tasks_spawn(pt, tasks) : SMART_ENOMEM;

	if (rc)
		kit_runner_set(&p->run, KIT_STOP);
	kit_runner_ready(&p->run);
	kit_runner_await(&p->run, KIT_RUN);
	if (pt->w) {
		int r;

		kit_count_begin();
		r = smart_worker_run(pt->w);
		kit_count_end();
		rc = rc ? rc : r;
	}
	for (i = 0; tasks && pt->w && i < p->cfg->depth; i++)
		if (tasks[i].buf)
			smart_buf_free(pt->w, tasks[i].buf);
	smart_worker_destroy(pt->w);
	pt->w = NULL;
	free(tasks);
	return rc;
}

static void raw_cas_incr(struct perf *p, smart_rng_t *r, uint64_t *acc)
{
	uint64_t k = smart_zipf_next(&p->zipf, r), e;
	uint64_t *ctr = (uint64_t *)(p->raw_base + p->lo + k * 8);

	e = __atomic_load_n(ctr, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(ctr, &e, e + 1, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST))
		;
	*acc += e;
}

/* One raw access of the op at a: what the NIC would do, by the CPU. */
static void raw_access(const struct perf_cfg *c, uint8_t *a, uint8_t *local,
		       uint64_t *acc)
{
	uint64_t e = 0;

	switch (c->op) {
	case OP_READ:
		if (c->size == 8)
			*acc += *(volatile uint64_t *)a;
		else
			memcpy(local, a, c->size), *acc += local[0];
		break;
	case OP_WRITE:
		if (c->size == 8)
			*(volatile uint64_t *)a = *acc;
		else
			memcpy(a, local, c->size);
		break;
	case OP_CAS:
		__atomic_compare_exchange_n((uint64_t *)a, &e, *acc, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		*acc += e;
		break;
	default:
		*acc += __atomic_fetch_add((uint64_t *)a, 1, __ATOMIC_SEQ_CST);
	}
}

/* One raw round: depth independent accesses, so the CPU overlaps their
 * misses the way in-flight RDMA ops overlap. */
static void raw_round(struct perf *p, smart_rng_t *r, uint8_t *local,
		      uint64_t *sink)
{
	const struct perf_cfg *c = p->cfg;
	uint64_t acc = 0;
	int i;

	for (i = 0; i < c->depth; i++) {
		if (c->op == OP_CAS_INCR)
			raw_cas_incr(p, r, &acc);
		else
			raw_access(c, p->raw_base + perf_offset(p, r), local,
				   &acc);
	}
	*sink += acc;
}

static int perf_thread_raw(struct perf_thread *pt)
{
	struct perf *p = pt->p;
	uint8_t *local = malloc(p->cfg->size + 64);
	uint64_t sink = 0, t0, t1;
	smart_rng_t r;

	kit_runner_ready(&p->run);
	if (!local)
		return SMART_ENOMEM;
	memset(local, 0x22, p->cfg->size + 64);
	smart_rng_seed(&r, kit_task_seed(p->cfg->com.seed, pt->idx, -1));
	kit_runner_await(&p->run, KIT_RUN);
	kit_count_begin();
	t0 = smart_cycles();
	while (!kit_runner_stopping(&p->run)) {
		raw_round(p, &r, local, &sink);
		t1 = smart_cycles();
		/* every op of a round took the round's time; one entry per
		 * round keeps the yardstick's own overhead minimal */
		smart_hist_add(&pt->hist, t1 - t0);
		t0 = t1;
		pt->ops += (uint64_t)p->cfg->depth;
	}
	kit_count_end();
	free(local);
	__asm__ __volatile__("" : : "r"(sink)); /* keep the loads alive */
	return 0;
}

static void *perf_thread_main(void *arg)
{
	struct perf_thread *pt = arg;
	int rc = pt->p->raw ? perf_thread_raw(pt) : perf_thread_framework(pt);

	if (rc && !pt->err)
		pt->err = rc;
	return NULL;
}

/* Table 1's dynamic phase: every interval, the number of active threads is
 * re-drawn uniformly from [max(1, 3T/8), T] (Smart: 36..95 of 96). */
static void perf_dynamic(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	int t = c->com.threads, lo = t * 3 / 8 > 1 ? t * 3 / 8 : 1;
	double left = c->com.seconds, step = c->dynamic_ms / 1000.0;
	smart_rng_t r;

	smart_rng_seed(&r, c->com.seed ^ 0xd1ce);
	while (left > 0 && !kit_runner_stopping(&p->run)) {
		atomic_store(&p->active,
			     lo + (int)smart_rng_below(&r,
						       (uint64_t)(t - lo + 1)));
		kit_sleep(left < step ? left : step);
		left -= step;
	}
}

static int perf_collect(struct perf *p, struct perf_result *res)
{
	const struct perf_cfg *c = p->cfg;
	smart_hist_t h;
	int i, err = 0;

	smart_hist_init(&h);
	for (i = 0; i < c->com.threads; i++) {
		res->ops += p->t[i].ops;
		smart_hist_merge(&h, &p->t[i].hist);
		if (p->t[i].err && !err)
			err = p->t[i].err;
	}
	res->mops = (double)res->ops / res->win.secs / 1e6;
	res->size = p->size;
	res->mb_per_s = res->mops * (double)p->size;
	res->mib_per_s = res->mb_per_s * 1e6 / (1024.0 * 1024.0);
	kit_lat_from_cycles(&h, &res->lat);
	return err;
}

int perf_run_once(struct perf *p, int raw, struct perf_result *res)
{
	const struct perf_cfg *c = p->cfg;
	smart_ctx_t *ctx = p->env.ctx;
	int i, rc;

	memset(res, 0, sizeof(*res));
	memset(p->t, 0, sizeof(*p->t) * (size_t)c->com.threads);
	for (i = 0; i < c->com.threads; i++) {
		p->t[i].p = p;
		p->t[i].idx = i;
		smart_hist_init(&p->t[i].hist);
	}
	p->raw = raw;
	atomic_store(&p->active, c->com.threads);
	rc = kit_runner_start(&p->run, c->com.threads, perf_thread_main, p->t,
			      sizeof(*p->t));
	if (rc)
		return rc;
	kit_runner_wait_ready(&p->run, NULL);
	kit_window_open(&res->win, ctx);
	kit_runner_set(&p->run, KIT_RUN);
	if (c->dynamic_ms)
		perf_dynamic(p);
	else
		kit_window_sleep(&res->win, ctx, &p->run, c->com.seconds);
	kit_runner_set(&p->run, KIT_STOP);
	kit_window_end(&res->win);
	kit_runner_join(&p->run);
	kit_window_close(&res->win, ctx);
	return perf_collect(p, res);
}
