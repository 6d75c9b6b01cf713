/** @file
 * Conflict avoidance for retry loops (Smart §4.3; docs/design.md §6.3).
 *
 * Wrap every operation that may retry (a CAS that can fail, a read that
 * can see a torn or locked version) in a guard:
 *
 *   smart_backoff_begin(w);            // may wait: coroutine throttle
 *   while (!try_once(w))
 *           smart_backoff_retry(w);    // counts, backs off (yielding)
 *   smart_backoff_end(w);
 *
 * With the ConflictAvoid switch on (option techniques, env
 * SMART_TECHNIQUES), a retry waits random(0, min(C_max, U * 2^k)) TSC
 * cycles while the task sleeps off the run queue, k being the retry number
 * of this operation and U the unit: the round trip the worker measures on
 * its own syncs to the blade the task last synced with (4096 cycles until
 * measured).  C_max = U * 2^level, level 0..10, or no backoff at all; it
 * starts with none.  Every window (option backoff_window, 1 ms) the
 * worker smooths the retry rate p = retries / (retries + completed
 * operations) and, with the paper's thresholds: above p_high = 0.5 the
 * level rises one step, and once at 10 (C_limit) each window halves n_max,
 * the coroutines admitted into guards at once (1..the worker's live tasks:
 * coroutine throttling; a cut halves the smaller of n_max and the live
 * tasks); below p_low = 0.1 the level falls a step a window down to 0
 * (C_0), there n_max doubles back up to the live tasks, then the level
 * falls to no backoff (the paper's order: n_max moves only at a bound of
 * C_max).  In between nothing moves,
 * except that now and then (n_max not throttled) a step down is probed:
 * kept only if, four windows later, it did not raise the rate; a failed
 * probe holds the next one off for a doubling number of windows, up to
 * 256.  So between the thresholds the backoff comes off where sleeping
 * only makes a retry's value staler (plain shm).  The option
 * conflict_level picks the parts (the paper's Fig 14 series): 1 backoff
 * with the cap fixed at C_limit, 2 + the adapted cap, 3 (default) + the
 * coroutine throttling.  Admission is FIFO; n_max bounds the guarded
 * operations trying at once: a task gives its slot up while it sleeps
 * in a backoff and queues for one again when it wakes (a sleeper holding
 * its slot stalled the worker's other tasks behind one hot key).  So a
 * retry may wait for a slot while the others run.  That is safe for what
 * a task holds across smart_backoff_retry as long as whoever waits for
 * it waits in guarded retries too: every retry that sleeps gives its slot
 * up, and the backoff comes off only once n_max is back up to the
 * worker's tasks (tasks spawned later find n_max below them with no
 * backoff until a window above p_high brings it back: a stall of a few
 * windows, not a deadlock).  Smart-HT is such a
 * case: a split's lock is taken and let go inside one attempt, and an
 * insert that holds a tentative slot across its retries is waited for
 * only by other inserts' retries.  A lock that a task outside a guard
 * spins on must not be held across a retry.  With the switch off the
 * guard only counts retries.
 *
 * Retries per operation (mean and histogram) appear in the stats.
 * Thread safety: owner thread of the worker only.  Guards do not nest.
 */
#ifndef SMART_BACKOFF_H
#define SMART_BACKOFF_H

#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Thread: w's. */
void smart_backoff_begin(smart_worker_t *w);
/** Thread: w's. */
void smart_backoff_retry(smart_worker_t *w);
/** Thread: w's. */
void smart_backoff_end(smart_worker_t *w);

/** The techniques (option techniques, env SMART_TECHNIQUES: a comma-separated
 * list of these names; anything else, e.g. None, turns all off). */
enum smart_technique {
	SMART_TECH_THRD_AWARE_ALLOC = 1 << 0, /**< "ThrdAwareAlloc" */
	SMART_TECH_WORK_REQ_THROT = 1 << 1,   /**< "WorkReqThrot" */
	SMART_TECH_CONFLICT_AVOID = 1 << 2,   /**< "ConflictAvoid" */
	SMART_TECH_SPEC_LOOKUP = 1 << 3,      /**< "SpecLookup" */
};

/** 1 when the technique is on in this ctx.  Thread: any. */
int smart_ctx_technique(const smart_ctx_t *ctx, enum smart_technique t);

/** The switches in force as text, e.g. "ThrdAwareAlloc,WorkReqThrot" or
 * "None".  Thread: any. */
const char *smart_ctx_techniques(const smart_ctx_t *ctx);

#ifdef __cplusplus
}
#endif
#endif
