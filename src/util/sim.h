/*
 * The virtual-time engine (docs/sim.md): simulated threads as fibers on
 * ONE OS thread, run in the order of their virtual clocks, so that the
 * library's unchanged code (workers, their tasks, the keeper's round) runs
 * at the paper's scale (96 threads) on one core, deterministically.
 *
 * How time moves: a simulated thread's clock advances only when it is
 * charged (smart__sim_charge: CPU work, a doorbell hold) or sleeps
 * (smart__sim_sleep_until).  A sync point (smart__sim_sync) hands the OS
 * thread to the engine unless this thread is still the earliest, so
 * every sync point sees all events of the other threads up to its own
 * time (a conservative discrete-event simulation).  The transport calls
 * sync points on post and poll; that is enough because simulated threads
 * interact only through the transport and through memory they read after
 * a completion.
 *
 * The clock hook: while a fiber runs, the util clock (clock.h,
 * smart__sim_vt) points at its virtual clock, so smart__rdtsc() and
 * smart__mono_ns() read virtual time (rdtsc at a fixed virtual 2.4 GHz,
 * SMART_SIM_CYCLES_PER_NS).  Outside a fiber (the engine itself, any real
 * thread) the hook is NULL and the clocks are the real ones.
 *
 * Invariants:
 *  - One engine per OS thread, run by the thread that created it; its
 *    fibers never migrate; nothing here is shared with other threads.
 *  - Order: the runnable fiber with the least (vt, id) runs next; vt of a
 *    fiber never decreases; ties are broken by id, ids are spawn order.
 *  - All randomness (smart__sim_rand, jitter) comes from the engine's one
 *    seeded stream, drawn in the deterministic run order: a seed gives
 *    the same run, byte for byte.
 *  - smart__sim_require() aborts on a thread that is not a simulated one:
 *    a real thread posting would inject real time into the model.
 *  - Between two sync points a fiber may run ahead of others in virtual
 *    time: state shared outside the transport must be touched at a sync
 *    point (smart__sim_sleep_until(smart__sim_now()) charges nothing).
 */
#ifndef SMART_UTIL_SIM_H
#define SMART_UTIL_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "util/clock.h"

struct smart__sim;
struct smart__sim_thread;

struct smart__sim_cfg {
	uint64_t seed;	      /* the run's one random stream */
	uint64_t sync_ns;     /* CPU charged per sync point */
	uint64_t jitter_ns;   /* + uniform [0, jitter_ns) per sync point */
	size_t stack;	      /* bytes per fiber stack; 0 = 256 KiB */
	uint32_t max_threads; /* 0 = 1024 */
	uint64_t idle_skip_ns; /* longest idle skip (docs/sim.md §1.1), 0 = off */
	/* the CPU cost table (docs/sim.md §1.3): a poll's base instead of
	 * sync_ns (0: sync_ns), and the cost per completion a poll reaps */
	uint64_t poll_ns, wc_ns;
};

typedef void (*smart__sim_fn)(void *arg);

/* Create an engine for the calling OS thread.  0, SMART_EINVAL,
 * SMART_ENOMEM. */
int smart__sim_create(const struct smart__sim_cfg *cfg,
		      struct smart__sim **out);
/* Free an engine whose run returned (or that never ran). */
void smart__sim_destroy(struct smart__sim *s);
/* A new simulated thread running fn(arg), at virtual time `at` (ns), or
 * at the caller's time when called from a fiber and at is 0.  0,
 * SMART_EINVAL, SMART_ENOMEM, SMART_EAGAIN (max_threads). */
int smart__sim_spawn(struct smart__sim *s, smart__sim_fn fn, void *arg,
		     uint64_t at);
/* Run until every simulated thread has returned.  0, or SMART_EINVAL
 * when called from a fiber or another OS thread's engine. */
int smart__sim_run(struct smart__sim *s);
/* The virtual time the run ended at (the latest fiber's end). */
uint64_t smart__sim_end_ns(const struct smart__sim *s);
/* Fiber switches done by the run so far. */
uint64_t smart__sim_switches(const struct smart__sim *s);
/* Idle skips taken by the run so far; *polls (if not NULL) the empty
 * polls they stood for. */
uint64_t smart__sim_skips(const struct smart__sim *s, uint64_t *polls);

/* --- from inside a simulated thread --------------------------------- */

/* The engine of the calling fiber; NULL on a real thread. */
struct smart__sim *smart__sim_self(void);
/* Abort (with `what` on stderr) unless called from a simulated thread. */
void smart__sim_require(const char *what);
/* This fiber's virtual time, ns. */
uint64_t smart__sim_now(void);
/* Advance this fiber's clock by ns of work, without a switch. */
void smart__sim_charge(uint64_t ns);
/* A sync point: charge sync_ns (+ jitter), then let every thread that is
 * earlier run first. */
void smart__sim_sync(void);
/* A poll's sync point: as smart__sim_sync with the poll's base cost. */
void smart__sim_sync_poll(void);
/* Charge the CPU of n completions a poll reaped (wc_ns each). */
void smart__sim_reaped(int n);
/* Sleep: the clock moves to max(now, t), then a sync point. */
void smart__sim_sleep_until(uint64_t t);
/* The run's seeded stream (xorshift64*), drawn in run order. */
uint64_t smart__sim_rand(void);
/* Idle skipping (docs/sim.md §1.1).  A poll that found the queue `key`
 * empty calls smart__sim_idle_again(key): 1 when this fiber's previous
 * sync point was an empty poll of the same key too (the fiber is in a
 * loop of polls that posts nothing); it notes this one either way. */
int smart__sim_idle_again(const void *key);
/* Then, when nothing can arrive on it before virtual time `until`
 * (UINT64_MAX: unknown), the clock moves in one step to the first sync
 * point the loop would reach at or after `until` (at most idle_skip_ns
 * ahead; 0 = off), charging each elided poll's sync_ns + jitter as the
 * polls would have, and the fiber waits its turn as at a sync point.
 * Returns the sync points charged (0: no skip).  After a skip the caller
 * polls again, once, without a new sync point (the last charge was that
 * poll's). */
uint64_t smart__sim_idle_skip(uint64_t until);

/* --- event sources (the sim transport's responder) ------------------ */

/* A source of timed events that are nobody's fiber (a responder NIC
 * executing WRs on blade memory).  At every sync point and sleep, once
 * the fiber is the earliest, the engine runs every source's events due
 * at or before the fiber's time, earliest first across sources (ties: the
 * source added first): an event is never run late for a reader, and
 * never before all fibers have passed its time.  A source must only add
 * events later than the adding fiber's time. */
struct smart__sim_source {
	/* virtual time (ns) of the earliest pending event, UINT64_MAX: none */
	uint64_t (*next_ns)(struct smart__sim_source *src);
	/* run that event (it may add others) */
	void (*step)(struct smart__sim_source *src);
	struct smart__sim *s;		/* set while added */
	struct smart__sim_source *link; /* the engine's list */
};

/* Add src to the calling fiber's engine (aborts on a real thread). */
void smart__sim_source_add(struct smart__sim_source *src);
/* Remove src (from any thread; a no-op once its engine is destroyed,
 * which detaches the sources left). */
void smart__sim_source_del(struct smart__sim_source *src);

#endif
