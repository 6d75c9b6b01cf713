/*
 * The benchmark kit: what smart-perf, smart-bench and the other benchmarks
 * share beyond the tools' library (tools/lib/tool.h: flags, the common
 * flags, the environment, output), so that each benchmark is only its own
 * workload (docs/design.md §9).
 *
 *   runner   the threads of a run and their phases, the measured window
 *            with the library's stats as a delta over it, latency
 *            quantiles, progress lines
 *   report   the perftest-like table's pieces, and a record of named
 *            fields printed as one JSON object or appended as a CSV line
 *
 * Invariants: the kit uses only the public API (include/smart) and the
 * tools' library, which its include path enforces (CMakeLists.txt); it has
 * no mutable globals: all state is in the caller's structs, and it ends
 * no process.
 *
 * Thread safety: the runner's calls as documented there; all else from
 * the main thread.
 */
#ifndef SMART_KIT_H
#define SMART_KIT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "smart/smart.h"
#include "tool.h"

/* ------------------------------------------------------------------ */
/* The runner: threads, phases, the measured window                    */

enum kit_phase {
	KIT_PREP, /* threads set up (and preload); main waits for ready */
	KIT_RUN,  /* the measured window */
	KIT_STOP, /* leave: the window is over, or the run failed */
};

struct kit_sim_thread;

struct kit_runner {
	atomic_int phase;
	atomic_int ready; /* threads done with KIT_PREP */
	int n;
	pthread_t *th;
	/* under --sim (smart_sim_active()): simulated threads instead */
	struct kit_sim_thread *sim;
	atomic_int sim_done; /* simulated threads that returned */
	atomic_int failed;   /* the run's first fatal error, 0 (kit_fatal) */
	uint64_t failed_ns;  /* when it came (smart_now_ns) */
};

/*
 * Start n threads, thread i running fn(arr + i * elem), in phase
 * KIT_PREP.  If one cannot be started, the others are told KIT_STOP and
 * joined, and SMART_ESYS (or SMART_ENOMEM) is returned.
 */
int kit_runner_start(struct kit_runner *r, int n, void *(*fn)(void *),
		     void *arr, size_t elem);

/* A thread: its setup is done (call it also when the setup failed). */
void kit_runner_ready(struct kit_runner *r);

/* A thread: wait until the phase is at least ph; returns the phase. */
int kit_runner_await(struct kit_runner *r, int ph);

/* Anyone: move every thread to phase ph; a later phase already set
 * stays (the phase only moves forward within a run). */
void kit_runner_set(struct kit_runner *r, int ph);

/* A thread that does a run's ops: its instructions start to count (under
 * valgrind's callgrind, bench/op-cost.sh) when it starts them, and are
 * dumped as the part "ops" when it has done its last one (the ops it
 * reports are the same ones).  Nothing outside valgrind. */
void kit_count_begin(void);
void kit_count_end(void);

/*
 * Errors after which a run cannot go on: the blade (or peer) is gone, a
 * queue pair broke, this client was fenced, a peer stopped answering.
 * Every further op would fail at once, and counting those would turn a
 * dead blade into a high rate (issue 29): the run stops at the first.
 */
static inline int kit_fatal(int rc)
{
	return rc == SMART_ECONN || rc == SMART_EQP || rc == SMART_EFENCED ||
	       rc == SMART_ETIMEDOUT;
}

/* Anyone: the run failed with rc (only the first is kept, with its time):
 * every thread is moved to KIT_STOP.  kit_runner_failed: that rc, or 0. */
void kit_runner_fail(struct kit_runner *r, int rc);
static inline int kit_runner_failed(struct kit_runner *r)
{
	return atomic_load(&r->failed);
}

/* The hot loop's test: cheap, relaxed. */
static inline int kit_runner_stopping(struct kit_runner *r)
{
	return atomic_load_explicit(&r->phase, memory_order_relaxed) >=
	       KIT_STOP;
}

/* Main: wait until every thread is ready; with p, print its progress
 * (p->done counted by the threads) once a second.  A stop signal (see
 * kit_signals_block) moves the threads to KIT_STOP (they should leave
 * their setup early) and is returned once they are ready; else 0. */
struct kit_progress;
int kit_runner_wait_ready(struct kit_runner *r, struct kit_progress *p);

/* Main: join every thread and free the runner. */
void kit_runner_join(struct kit_runner *r);

/* The measured window: the wall time and the library's stats as a delta
 * over it (counters, retry histogram, doorbells and WQE misses; the
 * retries per guarded op recomputed; the rest is the state at the end). */
struct kit_window {
	uint64_t t0, t1;
	double secs;
	smart_stats_t s0, st;
};

/* Open: the stats snapshot, then the start time.  End: the end time, when
 * the threads are told to stop.  Close: the stats delta, after the threads
 * are joined, so that it has every op (a worker's counters are folded into
 * the ctx when it is destroyed). */
void kit_window_open(struct kit_window *w, smart_ctx_t *ctx);
void kit_window_end(struct kit_window *w);
void kit_window_close(struct kit_window *w, smart_ctx_t *ctx);

/* A run stopped by a fatal error (kit_runner_fail) reports no result:
 * its rate would mix a healthy part and a dead one.  One line on stderr,
 * "TOOL[: bench]: stopped S s into the SECS s window: why (the library's
 * cause); N <done>; no result reported", where S counts from w's start
 * (0 when no window opened or the failure came before it) and done says
 * what the N were ("ops had succeeded"). */
void kit_runner_stopped(const struct kit_runner *r, const struct kit_window *w,
			double secs, struct kit_env *env, const char *tool,
			const char *bench, int rc, uint64_t n,
			const char *done);

/* Sleep secs inside an open window; a window of 10 s or more prints a
 * progress line on stderr every 5 s (WRs completed, from the stats).
 * Returns early with the signal's number when a stop signal arrives (see
 * kit_signals_block); returns 0 early, within KIT_STOP_POLL_S, when the
 * runner r is stopped (a fatal error: kit_runner_fail); else 0 after
 * secs. */
#define KIT_STOP_POLL_S 0.01
int kit_window_sleep(struct kit_window *w, smart_ctx_t *ctx,
		     struct kit_runner *r, double secs);

/*
 * Stop signals: a tool that wants SIGINT and SIGTERM to end its measured
 * window early (and still report) calls kit_signals_block() in main
 * before any thread exists (the library's threads too), so that every
 * thread inherits the mask and the signals wait, pending, for the
 * sleeps below.  Without that call the signals act as usual (the process
 * dies) and these calls only sleep.  No handler and no global: the
 * signal is taken with sigtimedwait.
 */
void kit_signals_block(void);

/* Sleep up to secs; the stop signal taken meanwhile, or 0. */
int kit_signal_wait(double secs);

/* Sampled latency: op number n of a task is timed when n is a multiple of
 * KIT_LAT_SAMPLE.  A clock read and a histogram update cost a noticeable
 * share of an 8-byte shm op, and sampling by op index does not bias the
 * distribution.  t0 = kit_lat_begin(n); the op; kit_lat_end(h, n, t0). */
#define KIT_LAT_SAMPLE 8

static inline uint64_t kit_lat_begin(uint64_t n)
{
	return n & (KIT_LAT_SAMPLE - 1) ? 0 : smart_cycles();
}

static inline void kit_lat_end(smart_hist_t *h, uint64_t n, uint64_t t0)
{
	if (!(n & (KIT_LAT_SAMPLE - 1)))
		smart_hist_add(h, smart_cycles() - t0);
}

/* Latency, in microseconds, of a histogram of TSC cycles: its quantiles,
 * mean, min and max (the histogram's; a caller that timed every op may
 * put its exact min, avg and max instead).  A quantile is a bucket's
 * midpoint, within 1.6% of the true value (smart_hist_t): three
 * significant digits are all it has (kit_fmt_sig). */
struct kit_lat {
	double p50_us, p99_us, p999_us;
	double min_us, avg_us, p95_us, max_us;
	uint64_t n; /* samples behind the quantiles */
};
void kit_lat_from_cycles(const smart_hist_t *h, struct kit_lat *out);

/* v with three significant digits and no exponent (0.0123, 1.23, 12.3,
 * 123, 1230): the precision a histogram bucket has.  Returns buf. */
const char *kit_fmt_sig(double v, char *buf, size_t len);

/* Progress of a long phase on stderr: "<what>: <done>/<total> <unit>,
 * <rate> <unit>/s" at most once a second, then "<what>: <done> <unit> in
 * <secs> s (<rate> <unit>/s)" at the end. */
struct kit_progress {
	const char *what, *unit;
	uint64_t total;
	_Atomic uint64_t done; /* counted by the workers */
	uint64_t t0, tick, last;
	double secs; /* set by kit_progress_end() */
};

void kit_progress_start(struct kit_progress *p, const char *what,
			const char *unit, uint64_t total);
void kit_progress_tick(struct kit_progress *p);
void kit_progress_end(struct kit_progress *p);

/* ------------------------------------------------------------------ */
/* Report                                                              */

/* The perftest-like table: the rule, and one " Label          : value"
 * line of the header. */
void kit_rule(void);
__attribute__((format(printf, 2, 3))) void kit_head(const char *label,
						    const char *fmt, ...);

/* The header lines every benchmark prints: transport and QP mode (with
 * the requested one), techniques, NIC model, blades (their number and
 * mean size; blades_note is appended to that line, may be NULL). */
void kit_head_env(const struct kit_common *c, const struct kit_env *e,
		  const char *blades_note);

/* The line with the library's state over a window: techniques, credit
 * cap and throttle phase, doorbells (contended), retries per guarded op. */
void kit_library_line(const smart_stats_t *st);

/* A result as named fields, in order: printed as one JSON object, or as
 * a CSV line (the columns a tool chooses). */
#define KIT_REC_MAX 192
struct kit_rec {
	int n;
	struct kit_field {
		const char *key;
		char val[80];
		int str;	 /* a string (quoted in JSON), else a number */
		const char *ref; /* a long string kept by the caller, or NULL */
	} f[KIT_REC_MAX];
};

void kit_rec_init(struct kit_rec *r);
void kit_rec_str(struct kit_rec *r, const char *key, const char *val);
__attribute__((format(printf, 3, 4))) void
kit_rec_num(struct kit_rec *r, const char *key, const char *fmt, ...);
/* The value of key, or NULL. */
const char *kit_rec_get(const struct kit_rec *r, const char *key);

/* Where a record came from, as its last fields: the tool and its
 * version, the commit it was built from, the seed, the command line
 * (every setting, as given) and a UTC timestamp (ISO 8601).  c must
 * outlive the record (the command is referred to, not copied). */
void kit_rec_provenance(struct kit_rec *r, const struct kit_common *c);

/* Fields every benchmark reports the same way: the latency quantiles,
 * and the library's throttling and doorbell state over the window. */
void kit_rec_lat(struct kit_rec *r, const struct kit_lat *l);
void kit_rec_library(struct kit_rec *r, const smart_stats_t *st);

/* One JSON object on one line. */
void kit_rec_json(const struct kit_rec *r, FILE *f);

/* A CSV column: its header, the record's key, the text for an empty
 * value (NULL: empty). */
struct kit_col {
	const char *name, *key, *empty;
};

/* Append one line of the columns (ending with a NULL name), then the
 * provenance columns (kit_rec_provenance's), to path,
 * after a header line when the file is new or empty.  A value never
 * needs quoting: commas in it (lists) become '+'.  Returns 0, or
 * SMART_ESYS after saying why on stderr. */
int kit_rec_csv(const struct kit_rec *r, const struct kit_col *cols,
		const char *path, const char *tool);

#endif
