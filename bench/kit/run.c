/*
 * The runner: the threads of a run and the phases they go through
 * (KIT_PREP, KIT_RUN, KIT_STOP), the measured window with the library's
 * stats as a delta over it, latency quantiles and progress lines.
 *
 * Invariants: the phase only moves forward; a thread that failed its
 * setup still reports ready, so the main thread never waits for ever;
 * every started thread is joined, also when starting another failed.
 * Under --sim (smart/sim.h) the threads are simulated ones and every wait
 * here sleeps virtual time instead of real time.
 * The window's stats are the library's, read by snapshot at its two ends:
 * what other work of the process does in between is counted too.  Under
 * valgrind's callgrind (bench/op-cost.sh's instructions per op) only the
 * threads that do the ops are counted, each over its own ops
 * (kit_count_begin/end): a count of the whole process would add the
 * work of threads that run by the clock (the lease keeper, the main
 * thread's wait), a share per op that grows as a loaded machine lets
 * fewer ops into a window of the same seconds.  Outside valgrind the
 * two requests are a few instructions each, once per thread and run.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_ZERO_STATS
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(what)
#endif

/* With callgrind's --separate-threads=yes both requests act on the
 * calling thread alone (without it, on every thread: one thread's run
 * still counts as before). */
void kit_count_begin(void)
{
	CALLGRIND_ZERO_STATS;
}

void kit_count_end(void)
{
	CALLGRIND_DUMP_STATS_AT("ops");
}

#define NS_PER_S 1000000000ull

static void stop_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

void kit_signals_block(void)
{
	sigset_t set;

	stop_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}

/* Only a thread that has both signals blocked may take them with
 * sigtimedwait: an unblocked one would never see them pending. */
int kit_signal_wait(double secs)
{
	sigset_t set, cur;
	uint64_t end = smart_now_ns() + (uint64_t)(secs * 1e9), now;
	struct timespec ts;
	int sig;

	stop_set(&set);
	if (smart_sim_active() || pthread_sigmask(SIG_BLOCK, NULL, &cur) ||
	    !sigismember(&cur, SIGINT) || !sigismember(&cur, SIGTERM)) {
		kit_sleep(secs);
		return 0;
	}
	while ((now = smart_now_ns()) < end) {
		ts.tv_sec = (time_t)((end - now) / NS_PER_S);
		ts.tv_nsec = (long)((end - now) % NS_PER_S);
		sig = sigtimedwait(&set, NULL, &ts);
		if (sig > 0)
			return sig;
	}
	return 0;
}

struct kit_sim_thread {
	struct kit_runner *r;
	void *(*fn)(void *);
	void *arg;
};

static void kit_sim_entry(void *arg)
{
	struct kit_sim_thread *t = arg;

	t->fn(t->arg);
	atomic_fetch_add(&t->r->sim_done, 1);
}

/* The threads as simulated threads (they start when this one sleeps). */
static int kit_runner_start_sim(struct kit_runner *r, int n,
				void *(*fn)(void *), void *arr, size_t elem)
{
	int i, rc;

	atomic_store(&r->sim_done, 0);
	r->sim = calloc((size_t)n, sizeof(*r->sim));
	if (!r->sim)
		return SMART_ENOMEM;
	for (i = 0; i < n; i++) {
		r->sim[i] = (struct kit_sim_thread){
			r, fn, (char *)arr + (size_t)i * elem
		};
		rc = smart_sim_spawn(kit_sim_entry, &r->sim[i]);
		if (rc) {
			kit_runner_set(r, KIT_STOP);
			kit_runner_join(r);
			return rc;
		}
		r->n++;
	}
	return 0;
}

int kit_runner_start(struct kit_runner *r, int n, void *(*fn)(void *),
		     void *arr, size_t elem)
{
	int i;

	/* a runner may be started again for another run (smart-perf
	 * --vs-raw), so these are stores, not initialisations */
	atomic_store(&r->phase, KIT_PREP);
	atomic_store(&r->ready, 0);
	atomic_store(&r->failed, 0);
	r->failed_ns = 0;
	r->n = 0;
	if (smart_sim_active())
		return kit_runner_start_sim(r, n, fn, arr, elem);
	r->th = calloc((size_t)n, sizeof(*r->th));
	if (!r->th)
		return SMART_ENOMEM;
	for (i = 0; i < n; i++) {
		if (pthread_create(&r->th[i], NULL, fn,
				   (char *)arr + (size_t)i * elem)) {
			kit_runner_set(r, KIT_STOP);
			kit_runner_join(r);
			return SMART_ESYS;
		}
		r->n++;
	}
	return 0;
}

void kit_runner_ready(struct kit_runner *r)
{
	atomic_fetch_add(&r->ready, 1);
}

/* A thread waits off the CPU: on a machine with fewer cores than threads
 * a spinning waiter would steal the time of the ones still preparing. */
int kit_runner_await(struct kit_runner *r, int ph)
{
	int now;

	while ((now = atomic_load(&r->phase)) < ph)
		if (smart_sim_sleep_ns(50000))
			usleep(50);
	return now;
}

/* Never backwards: a thread that failed its setup (or a stop signal
 * during it) sets KIT_STOP before it reports ready, and main's KIT_RUN
 * that follows must not undo it (main would then sleep through the whole
 * window with nobody left to stop it: test_kit:stop_in_prep_holds). */
void kit_runner_set(struct kit_runner *r, int ph)
{
	int now = atomic_load(&r->phase);

	if (SMART_M_TOOL_PHASE_BACKWARDS) {
		atomic_store(&r->phase, ph);
		return;
	}
	while (now < ph && !atomic_compare_exchange_weak(&r->phase, &now, ph))
		;
}

void kit_runner_fail(struct kit_runner *r, int rc)
{
	int none = 0;

	if (atomic_compare_exchange_strong(&r->failed, &none, rc))
		r->failed_ns = smart_now_ns();
	kit_runner_set(r, KIT_STOP);
}

void kit_runner_stopped(const struct kit_runner *r, const struct kit_window *w,
			double secs, struct kit_env *env, const char *tool,
			const char *bench, int rc, uint64_t n, const char *done)
{
	const char *cause = kit_env_cause(env);
	double at = w->t0 && r->failed_ns > w->t0 ?
			    (double)(r->failed_ns - w->t0) / 1e9 :
			    0;

	fprintf(stderr,
		"%s%s%s: stopped %.2f s into the %.1f s window: %s (%s%s%s); "
		"%" PRIu64 " %s; no result reported\n",
		tool, bench ? ": " : "", bench ? bench : "", at, secs,
		smart_strerror(rc), smart_status_name(rc),
		*cause ? "; the library: " : "", cause, n, done);
}

int kit_runner_wait_ready(struct kit_runner *r, struct kit_progress *p)
{
	int sig = 0, s;

	while (atomic_load(&r->ready) < r->n) {
		s = kit_signal_wait(0.01);
		if (s && !sig) {
			sig = s;
			kit_runner_set(r, KIT_STOP);
		}
		if (p)
			kit_progress_tick(p);
	}
	if (p)
		kit_progress_end(p);
	return sig;
}

void kit_runner_join(struct kit_runner *r)
{
	int i;

	if (r->sim) {
		while (atomic_load(&r->sim_done) < r->n)
			smart_sim_sleep_ns(10000);
		free(r->sim);
		r->sim = NULL;
		r->n = 0;
		return;
	}
	for (i = 0; i < r->n; i++)
		pthread_join(r->th[i], NULL);
	free(r->th);
	r->th = NULL;
	r->n = 0;
}

/* Counters are differences over the window; the rest (techniques, the
 * throttle's and backoff's state, sync latency) is the state at its end. */
static void stats_delta(const smart_stats_t *s0, smart_stats_t *d)
{
	int i;

	for (i = 0; i < SMART_STAT__COUNT; i++)
		d->c[i] -= s0->c[i];
	for (i = 0; i < 17; i++)
		d->retry_hist[i] -= s0->retry_hist[i];
	d->db_rings -= s0->db_rings;
	d->db_contended -= s0->db_contended;
	d->wqe_misses -= s0->wqe_misses;
	d->retries_per_op =
		d->c[SMART_STAT_GUARDED_OPS] ?
			(double)d->c[SMART_STAT_RETRIES] /
				(double)d->c[SMART_STAT_GUARDED_OPS] :
			0;
}

void kit_window_open(struct kit_window *w, smart_ctx_t *ctx)
{
	memset(w, 0, sizeof(*w));
	smart_stats_snapshot(ctx, &w->s0);
	w->t0 = smart_now_ns();
}

void kit_window_end(struct kit_window *w)
{
	w->t1 = smart_now_ns();
	w->secs = (double)(w->t1 - w->t0) / 1e9;
}

void kit_window_close(struct kit_window *w, smart_ctx_t *ctx)
{
	if (!w->t1)
		kit_window_end(w);
	smart_stats_snapshot(ctx, &w->st);
	stats_delta(&w->s0, &w->st);
}

/* Sleep up to secs, in steps of KIT_STOP_POLL_S, until the runner stops:
 * the signal taken, or 0. */
static int window_wait(struct kit_runner *r, double secs)
{
	uint64_t end = smart_now_ns() + (uint64_t)(secs * 1e9), now;
	double step;
	int sig = 0;

	while (!sig && !kit_runner_stopping(r) &&
	       (now = smart_now_ns()) < end) {
		step = (double)(end - now) / 1e9;
		sig = kit_signal_wait(step < KIT_STOP_POLL_S ? step :
							       KIT_STOP_POLL_S);
	}
	return sig;
}

/* Long windows say how they go: WRs completed per second over the last
 * few seconds, as the library counts them (every benchmark has WRs). */
int kit_window_sleep(struct kit_window *w, smart_ctx_t *ctx,
		     struct kit_runner *r, double secs)
{
	uint64_t end = w->t0 + (uint64_t)(secs * 1e9), now, last, wrs;
	smart_stats_t s;
	int sig;

	if (secs < 10)
		return window_wait(r, secs);
	last = w->s0.c[SMART_STAT_WRS_DONE];
	while ((now = smart_now_ns()) + 5 * NS_PER_S < end) {
		sig = window_wait(r, 5);
		if (sig || kit_runner_stopping(r))
			return sig;
		smart_stats_snapshot(ctx, &s);
		wrs = s.c[SMART_STAT_WRS_DONE];
		fprintf(stderr, "run: %.0f/%.0f s, %.3f M WRs/s\n",
			(double)(smart_now_ns() - w->t0) / 1e9, secs,
			(double)(wrs - last) / 5e6);
		last = wrs;
	}
	now = smart_now_ns();
	return now < end ? window_wait(r, (double)(end - now) / 1e9) : 0;
}

void kit_lat_from_cycles(const smart_hist_t *h, struct kit_lat *out)
{
	double us = 1e6 / smart_cycles_per_sec();

	out->p50_us = smart_hist_quantile(h, 0.5) * us;
	out->p95_us = smart_hist_quantile(h, 0.95) * us;
	out->p99_us = smart_hist_quantile(h, 0.99) * us;
	out->p999_us = smart_hist_quantile(h, 0.999) * us;
	out->min_us = h->count ? (double)h->min * us : 0;
	out->max_us = h->count ? (double)h->max * us : 0;
	out->avg_us = smart_hist_mean(h) * us;
	out->n = h->count;
}

void kit_progress_start(struct kit_progress *p, const char *what,
			const char *unit, uint64_t total)
{
	p->what = what;
	p->unit = unit;
	p->total = total;
	atomic_init(&p->done, 0);
	p->t0 = p->tick = smart_now_ns();
	p->last = 0;
	p->secs = 0;
}

void kit_progress_tick(struct kit_progress *p)
{
	uint64_t now = smart_now_ns(), n;

	if (now - p->tick < NS_PER_S)
		return;
	n = atomic_load(&p->done);
	fprintf(stderr, "%s: %" PRIu64 "/%" PRIu64 " %s, %.0f %s/s\n", p->what,
		n, p->total, p->unit,
		(double)(n - p->last) * 1e9 / (double)(now - p->tick), p->unit);
	p->tick = now;
	p->last = n;
}

void kit_progress_end(struct kit_progress *p)
{
	uint64_t n = atomic_load(&p->done);

	p->secs = (double)(smart_now_ns() - p->t0) / 1e9;
	fprintf(stderr, "%s: %" PRIu64 " %s in %.2f s (%.0f %s/s)\n", p->what,
		n, p->unit, p->secs, (double)n / (p->secs > 0 ? p->secs : 1e-9),
		p->unit);
}
