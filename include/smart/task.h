/** @file
 * Tasks: coroutines on a worker.
 *
 * A task runs on a guard-paged stack and is switched with Boost.Context's
 * fcontext.  Tasks of one worker never run in parallel; a task gives the CPU
 * away only in smart_task_yield(), smart_sync() (and the *_sync forms) and
 * the allocator, so code between those points needs no locking against the
 * worker's other tasks.  Stack overflow hits the guard page (SIGSEGV) rather
 * than corrupting a neighbour.
 *
 * Thread safety: owner thread of the worker only.
 */
#ifndef SMART_TASK_H
#define SMART_TASK_H

#include <stdint.h>
#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*smart_task_fn)(smart_worker_t *w, void *arg);

/** Queue a new task running fn(w, arg); it starts at the next
 * smart_worker_run().  SMART_EAGAIN when the worker already has max_tasks
 * live tasks, SMART_ENOMEM when no stack can be mapped.  Thread: w's. */
int smart_task_spawn(smart_worker_t *w, smart_task_fn fn, void *arg);

/** Let the worker's other tasks run (and poll completions).  From the
 * worker's main context (not inside a task) it only polls completions.
 * Thread: w's. */
void smart_task_yield(smart_worker_t *w);

/** Run the worker's tasks until every one has returned.  Returns 0, or
 * SMART_EINVAL when called from inside a task.  Thread: w's. */
int smart_worker_run(smart_worker_t *w);

/** Number of live (spawned, not yet returned) tasks.  Thread: the worker's. */
int smart_worker_tasks(const smart_worker_t *w);

/** 1 when the caller runs inside a task of w, 0 in the main context.
 * Thread: the worker's. */
int smart_worker_in_task(const smart_worker_t *w);

/** Round trips the calling task (or the main context) has waited for since
 * it started: syncs that found WRs in flight once posted, whatever their
 * number.  The count a data-structure operation costs is the difference
 * across it (the worker-wide SMART_STAT_ROUND_TRIPS mixes its tasks).
 * *alloc (when not NULL) receives how many of them were waited for inside
 * smart_alloc() and smart_free(): the allocator's refills and spills,
 * amortised over many blocks.  Thread: the worker's. */
uint64_t smart_task_round_trips(const smart_worker_t *w, uint64_t *alloc);

/** Payload bytes the calling task (or the main context) has posted since it
 * started: READ and WRITE lengths, 8 per CAS or FAA (the worker-wide
 * SMART_STAT_BYTES_* mix its tasks; the difference across an operation is
 * what it moved).  Thread: the worker's. */
uint64_t smart_task_bytes(const smart_worker_t *w);

#ifdef __cplusplus
}
#endif
#endif
