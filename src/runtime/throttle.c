/*
 * Adaptive work-request throttling (Smart §4.2, Algorithm 1; docs/design.md
 * §6.2).
 *
 * Each worker holds credits: the WRs it may still have in flight.  Posting
 * n WRs waits until n credits are there (the task yields, the main context
 * polls) and takes them; completions give them back.  The cap C_max comes
 * from the tuner, or is fixed by the option credit.
 *
 * Plain shm has no NIC to protect: there the tuner stays off (phase
 * "no-nic"); a fixed credit still applies.
 *
 * The tuner has no thread of its own: every worker's poll checks the TSC,
 * and the first to see the epoch end (Δ, option tune_interval, 8 ms) wins a
 * flag and runs one step.  Update phase: try C_max = 4, 6, 8, 10, 12 and
 * unlimited for one epoch each, measuring completed WRs per second of all
 * workers; keep unlimited unless the best cap beats it by more than 5%.
 * Stable phase: keep the choice for stable_epochs epochs (60), then tune
 * again.  A new cap reaches each worker as a delta added to its credits the
 * next time it posts.  Time is TSC cycles, calibrated, never a fixed GHz.
 */
#include <stdio.h>

#include "runtime/core.h"
#include "util/mutant.h"

#define TUNER_UNLIMITED SMART_TUNER_UNLIMITED
#define TUNER_KEEP_INF	1.05

static const int tuner_caps[] = { 4, 6, 8, 10, 12, TUNER_UNLIMITED };
#define TUNER_NCAPS ((int)SMART_ARRAY_SIZE(tuner_caps))

static uint64_t ns_to_cycles(const struct smart_ctx *ctx, uint64_t ns)
{
	double c = ctx->clock.use_tsc ? ctx->clock.cycles_per_ns : 1.0;

	return (uint64_t)((double)ns * c);
}

void smart__tuner_init(struct smart_ctx *ctx)
{
	struct smart__tuner *t = &ctx->tuner;

	if (!(ctx->o.techniques & SMART_TECH_WORK_REQ_THROT)) {
		t->phase = TUNER_OFF;
		atomic_store(&t->cap, -1);
		return;
	}
	if (ctx->o.credit) {
		t->phase = TUNER_FIXED;
		atomic_store(&t->cap, ctx->o.credit);
		return;
	}
	/* The tuner protects a NIC's queues and caches; plain shm has none,
	 * so tuning would only cost (a fixed credit still applies). */
	if (!ctx->caps.nic) {
		smart__info(&ctx->log,
			    "WorkReqThrot: %s has no NIC to "
			    "throttle for; the tuner stays off",
			    ctx->tp->name);
		t->phase = TUNER_NO_NIC;
		atomic_store(&t->cap, -1);
		return;
	}
	t->phase = TUNER_UPDATE;
	t->cand = 0;
	t->epoch_cycles = ns_to_cycles(ctx, ctx->o.tune_interval_ns);
	t->epoch_start = smart__rdtsc();
	atomic_store(&t->epoch_end, t->epoch_start + t->epoch_cycles);
	atomic_store(&t->cap, tuner_caps[0]);
}

static uint64_t acked_wrs(struct smart_ctx *ctx)
{
	const struct smart_worker *w;
	uint64_t sum = ctx->retired_stats[SMART_STAT_WRS_DONE];

	pthread_mutex_lock(&ctx->lock);
	for (w = ctx->workers; w; w = w->next)
		sum += __atomic_load_n(&w->stats[SMART_STAT_WRS_DONE],
				       __ATOMIC_RELAXED);
	pthread_mutex_unlock(&ctx->lock);
	return sum;
}

/* The update phase tried every candidate: choose. */
static int tuner_choose(const struct smart__tuner *t)
{
	int i, best = 0;

	for (i = 1; i < TUNER_NCAPS - 1; i++)
		if (t->tput[i] > t->tput[best])
			best = i;
	if (t->tput[best] > t->tput[TUNER_NCAPS - 1] * TUNER_KEEP_INF)
		return tuner_caps[best];
	return TUNER_UNLIMITED;
}

void smart__tuner_advance(struct smart__tuner *t, double rate, int stable)
{
	if (t->phase == TUNER_UPDATE) {
		t->tput[t->cand++] = rate;
		if (t->cand < TUNER_NCAPS) {
			atomic_store(&t->cap, tuner_caps[t->cand]);
			return;
		}
		atomic_store(&t->cap, tuner_choose(t));
		t->phase = TUNER_STABLE;
		t->stable_left = stable;
	} else if (--t->stable_left <= 0) {
		t->phase = TUNER_UPDATE;
		t->cand = 0;
		atomic_store(&t->cap, tuner_caps[0]);
	}
}

void smart__tuner_step(struct smart_worker *w)
{
	struct smart_ctx *ctx = w->ctx;
	struct smart__tuner *t = &ctx->tuner;
	uint64_t now = w->now, acks;
	int zero = 0;

	if (t->phase < TUNER_UPDATE || /* off or fixed: nothing to tune */
	    now < atomic_load_explicit(&t->epoch_end, memory_order_relaxed) ||
	    !atomic_compare_exchange_strong(&t->busy, &zero, 1))
		return;
	acks = acked_wrs(ctx);
	if (now > t->epoch_start)
		smart__tuner_advance(t,
				     (double)(acks - t->last_acks) /
					     (double)(now - t->epoch_start),
				     ctx->o.stable_epochs);
	t->last_acks = acks;
	t->epoch_start = now;
	t->epochs++;
	SMART_STAT_INC(w, SMART_STAT_TUNER_EPOCHS);
	atomic_store(&t->epoch_end, now + t->epoch_cycles);
	atomic_store(&t->busy, 0);
}

/* Bring the worker's credits in line with the cap in force. */
static void credit_sync(struct smart_worker *w)
{
	int cap = atomic_load_explicit(&w->ctx->tuner.cap,
				       memory_order_relaxed);

	if (cap != w->cap_seen) {
		smart__credit_add(w, cap - w->cap_seen);
		w->cap_seen = cap;
	}
}

/* May n credits be taken now?  A chain longer than the cap is let
 * through once all credits are back, or it could never be posted. */
static int credit_ready(struct smart_worker *w, int n)
{
	int c = atomic_load_explicit(&w->credit, memory_order_acquire);

	return SMART_M_THROT_CAP_IGNORED || c >= n || c >= w->cap_seen;
}

/* The first parked task to hand credits to (and its predecessor), NULL
 * for none: the head when its need is met.  The head's need blocks the
 * ones behind it, so a long chain is not overtaken for ever by short
 * ones (FIFO). */
static struct smart__task *credit_next(struct smart_worker *w,
				       struct smart__task **prev)
{
	struct smart__task *t = w->credit_head;

	*prev = NULL;
	while (t && !credit_ready(w, t->credit_need)) {
		if (!SMART_M_CREDIT_OVERTAKE)
			return NULL;
		*prev = t;
		t = t->next;
	}
	return t;
}

/* Hand credits to the parked tasks, in order, while the head's need is
 * met.  Run by the scheduler after each of its polls (task.c), where
 * completions return credits. */
void smart__credit_wake(struct smart_worker *w)
{
	struct smart__task *t, *prev;

	credit_sync(w);
	while ((t = credit_next(w, &prev))) {
		if (prev)
			prev->next = t->next;
		else
			w->credit_head = t->next;
		if (w->credit_tail == t)
			w->credit_tail = prev;
		smart__credit_add(w, -t->credit_need);
		smart__task_unpark(w, t);
	}
}

/* The main context cannot park (the scheduler does not run while it
 * waits): it polls until the credits are there. */
static void credit_poll(struct smart_worker *w, int n)
{
	while (!credit_ready(w, n)) {
		SMART_STAT_INC(w, SMART_STAT_CREDIT_WAITS);
		smart__worker_poll(w);
		credit_sync(w);
	}
	smart__credit_add(w, -n);
}

/* Wait for n credits and take them.  A task that must wait parks at the
 * back of the worker's FIFO (behind any earlier waiter, even if its own
 * need is met now) and is woken with its credits taken: no turn of a
 * yield loop per switch.  No wake-up is lost: the FIFO is only touched
 * by the owner thread, a task is queued before it parks, and every
 * scheduler poll, the only place credits come back to a parked task's
 * worker while it sleeps, runs smart__credit_wake. */
void smart__credit_wait(struct smart_worker *w, struct smart__task *t, int n)
{
	credit_sync(w);
	if (t == &w->main_task) {
		credit_poll(w, n);
		return;
	}
	if (!w->credit_head && credit_ready(w, n)) {
		smart__credit_add(w, -n);
		return;
	}
	SMART_STAT_INC(w, SMART_STAT_CREDIT_WAITS);
	SMART_STAT_INC(w, SMART_STAT_CREDIT_PARKS);
	t->credit_need = n;
	t->next = NULL;
	if (w->credit_tail)
		w->credit_tail->next = t;
	else
		w->credit_head = t;
	w->credit_tail = t;
	smart__task_park(w, t); /* the credits are handed to us */
}

/* For stats: the cap and phase in force. */
void smart__tuner_describe(const struct smart_ctx *ctx, int *cap, char *phase,
			   size_t len)
{
	static const char *const names[] = { "off", "no-nic", "fixed", "update",
					     "stable" };
	const struct smart__tuner *t = &ctx->tuner;
	int c = atomic_load(&((struct smart__tuner *)t)->cap);

	*cap = c >= TUNER_UNLIMITED || c < 0 ? -1 : c;
	snprintf(phase, len, "%s", names[t->phase % 5]);
}
