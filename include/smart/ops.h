/** @file
 * One-sided operations: READ, WRITE, CAS and FAA on blade memory.
 *
 * Ops are queued on the calling task's work-request chain for the target
 * blade (one chain per blade, at most chain_max WRs; a full chain is posted
 * implicitly).  smart_post() rings the doorbell for the task's chains;
 * smart_sync() posts and then yields until every op the task queued has
 * completed, and returns the first error among them.  Results (READ data,
 * CAS/FAA old values) are valid only after a successful smart_sync().
 * From a worker's main context smart_sync() busy-polls instead of yielding.
 *
 * Ordering: ops of one task to one blade start executing at the blade in
 * queueing order, as WRs of one RC queue pair do, with the fabric's
 * exception (docs/design.md §4, rule 3): a READ whose response was lost is
 * executed again after the ops queued behind it, so a READ followed by a
 * WRITE of the same bytes may return the written data.  Ops to different
 * blades, or of different tasks, are unordered.
 * Atomicity: CAS and FAA on 8-byte-aligned words are atomic with respect to
 * each other; READ/WRITE are atomic only per aligned 8-byte word, and the
 * words of one READ or WRITE move in no promised order.
 *
 * Buffers: local buffers from smart_buf_alloc() are used in place.  Other
 * memory works for up to SMART_BOUNCE_MAX bytes per op (copied through an
 * internal registered slot); larger unregistered buffers get SMART_EINVAL.
 * A WRITE's source must stay unchanged until its sync.
 *
 * Errors: an op rejected at queueing time (SMART_EINVAL for NULL, zero or
 * oversize length, misaligned atomic; SMART_ENOENT for an unknown blade;
 * SMART_EREMOTE for an address outside the blade; SMART_ENOTSUP for a CAS
 * or FAA where the transport has no working atomics, e.g. a verbs device
 * without them or one that failed the byte-order self-test at ctx
 * creation) is not queued.  Errors
 * found by the transport (bounds, keys, a dead peer: SMART_EREMOTE,
 * SMART_EQP, SMART_ETIMEDOUT) come back from smart_sync(); the worker then
 * reconnects that blade on its next op.
 *
 * No heap allocation and no system call happen on this path (the shm
 * transport's; verbs rings its doorbell with an MMIO write).
 *
 * Thread safety: owner thread of the worker only.
 */
#ifndef SMART_OPS_H
#define SMART_OPS_H

#include <stdint.h>
#include <stddef.h>
#include "smart/ctx.h"
#include "smart/gaddr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SMART_BOUNCE_MAX 64

/** Every op names the remote address first; outputs (READ data, CAS/FAA
 * old values) come last.  Queueing errors (the header's comment: an op
 * refused is not queued): SMART_EINVAL, SMART_ENOENT, SMART_EREMOTE,
 * SMART_ENOTSUP (atomics); the transport's, and SMART_EFENCED, come from
 * smart_sync().  Thread: w's, from a task or its main context. */
int smart_read(smart_worker_t *w, smart_gaddr_t src, size_t len, void *dst);
int smart_write(smart_worker_t *w, smart_gaddr_t dst, const void *src,
		size_t len);
/** Compare-and-swap: if *addr == expect then *addr = desired; *old receives
 * the previous value (may be NULL).  addr must be 8-byte aligned.
 * Thread: w's. */
int smart_cas(smart_worker_t *w, smart_gaddr_t addr, uint64_t expect,
	      uint64_t desired, uint64_t *old);
/** Fetch-and-add: *addr += add; *old receives the previous value (or NULL).
 * Thread: w's. */
int smart_faa(smart_worker_t *w, smart_gaddr_t addr, uint64_t add,
	      uint64_t *old);

/** Fence: the next op this task queues does not start at its blade before
 * the task's earlier READs and atomics there have completed, and is not
 * overtaken by their re-execution (the transport contract lets a READ be
 * re-executed after later WRs, as InfiniBand does; verbs IBV_SEND_FENCE).
 * A READ that must see the blade after earlier READs of the same chain
 * (a validation re-read) needs it; ops on one QP are otherwise executed in
 * posting order.  SMART_EINVAL for NULL w.  Thread: w's. */
int smart_fence(smart_worker_t *w);

/** Post the task's queued chains (one doorbell per chain).  SMART_EINVAL
 * for NULL w; a post's failure shows at smart_sync().  Thread: w's. */
int smart_post(smart_worker_t *w);
/** Poll the worker's completion queues once, never waiting, and wake the
 * tasks whose ops completed; the number of completions handled.  What a
 * task posted and does not wait for (smart_post) makes progress there:
 * a NIC executes it on its own, shm executes WRs only when polled.  A
 * count (docs/api.md §2), or SMART_EINVAL for NULL w.  Thread: w's. */
int smart_poll(smart_worker_t *w);
/** Post and wait for all of the task's ops; the first error or 0
 * (SMART_EREMOTE, SMART_EQP, SMART_ETIMEDOUT, SMART_ECONN, SMART_EFENCED:
 * the header's comment).  Thread: w's. */
int smart_sync(smart_worker_t *w);

/** One op and its sync in one call: the queueing errors, then
 * smart_sync()'s, as smart_read() & co. then smart_sync() would answer.
 * With nothing queued before it, a buffer from the registered pool and a
 * private worker, the op is posted without being queued (the cheapest
 * way to wait for one op, docs/design.md §9.8).  Thread: w's. */
int smart_read_sync(smart_worker_t *w, smart_gaddr_t src, size_t len,
		    void *dst);
int smart_write_sync(smart_worker_t *w, smart_gaddr_t dst, const void *src,
		     size_t len);
int smart_cas_sync(smart_worker_t *w, smart_gaddr_t addr, uint64_t expect,
		   uint64_t desired, uint64_t *old);
int smart_faa_sync(smart_worker_t *w, smart_gaddr_t addr, uint64_t add,
		   uint64_t *old);

/** Registered local buffers, 64-byte aligned.  SMART_ENOMEM when the pool
 * (option buf_pool) is exhausted.  Blocks up to 64 KiB come from a cache
 * of the worker's, so a worker that frees what it allocates takes no lock
 * once warm.  Free with any worker of the ctx; a pointer the pool did not
 * give out, or gives out no more, is ignored.  Thread: w's. */
int smart_buf_alloc(smart_worker_t *w, size_t size, void **out);
void smart_buf_free(smart_worker_t *w, void *buf);

/** Per-task registered scratch: a stack of registered memory belonging to
 * the calling task (or to the worker's main context), for the buffers of
 * one operation.  smart_scratch_alloc() returns size bytes, 64-byte
 * aligned, usable in place by ops; they stay valid until
 * smart_scratch_release() is given a mark taken before them.  Marks nest:
 *
 *   size_t m = smart_scratch_mark(w);
 *   smart_scratch_alloc(w, 4096, &buf);  ...  smart_scratch_release(w, m);
 *
 * Memory comes from the registered pool the first time a task needs it
 * and is kept for the task's life: after that no lock, no allocation.
 * SMART_EINVAL for 0 or more than 2 GiB, SMART_ENOMEM when the pool is out
 * or the task already holds 8 segments.  Thread: w's. */
size_t smart_scratch_mark(smart_worker_t *w);
int smart_scratch_alloc(smart_worker_t *w, size_t size, void **out);
void smart_scratch_release(smart_worker_t *w, size_t mark);

#ifdef __cplusplus
}
#endif
#endif
