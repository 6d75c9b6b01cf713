/*
 * Conflict avoidance for retry loops (Smart §4.3; DESIGN.md §5.3).
 *
 * Wrap every operation that may retry (a CAS that can fail, a read that
 * can see a torn or locked version) in a guard:
 *
 *   smart_backoff_begin(w);            // may wait: coroutine throttle
 *   while (!try_once(w))
 *           smart_backoff_retry(w);    // counts, backs off (yielding)
 *   smart_backoff_end(w);
 *
 * With the ConflictAvoid switch on (option techniques, env SMART_TECHNIQUES), a retry
 * waits random(0, min(C_max, C0 * 2^k)) TSC cycles while yielding, k being
 * the retry number of this operation, C0 = 4096 cycles (about one RDMA
 * round trip) and C_max adapted per worker between C0 and C0 * 2^10: every
 * window (option backoff_window, 1 ms) the retry rate p = retries /
 * (retries + completed operations) doubles C_max when p > 0.5 and halves it
 * when p < 0.1; only at a bound does the worker change how many of its
 * coroutines may be inside a guard at once (n_max, 1..max_tasks): fewer
 * when p is high at the top bound, more when p is low at the bottom one.
 * Admission is FIFO.  With the switch off the guard only counts retries.
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

void smart_backoff_begin(smart_worker_t *w);
void smart_backoff_retry(smart_worker_t *w);
void smart_backoff_end(smart_worker_t *w);

/* The techniques (option techniques, env SMART_TECHNIQUES: a comma-separated
 * list of these names; anything else, e.g. None, turns all off). */
enum smart_technique {
	SMART_TECH_THRD_AWARE_ALLOC = 1 << 0,	/* "ThrdAwareAlloc" */
	SMART_TECH_WORK_REQ_THROT = 1 << 1,	/* "WorkReqThrot" */
	SMART_TECH_CONFLICT_AVOID = 1 << 2,	/* "ConflictAvoid" */
	SMART_TECH_SPEC_LOOKUP = 1 << 3,	/* "SpecLookup" */
};

/* 1 when the technique is on in this ctx. */
int smart_ctx_technique(const smart_ctx_t *ctx, enum smart_technique t);

/* The switches in force as text, e.g. "ThrdAwareAlloc,WorkReqThrot" or
 * "None". */
const char *smart_ctx_techniques(const smart_ctx_t *ctx);

#ifdef __cplusplus
}
#endif
#endif
