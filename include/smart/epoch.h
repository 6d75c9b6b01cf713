/** @file
 * Epoch-based reclamation of remote blocks, shared by every data structure
 * (docs/design.md §5.4; docs/epochs.md has the argument and the costs).
 *
 * A block that other clients may still be reading (they found its address
 * in a slot, a node or a pointer before it was unlinked) cannot be freed
 * at once: it is retired, and freed once every task of every client that
 * could have seen it has left its critical section.  A critical section is
 * bracketed by smart_epoch_enter() and smart_epoch_exit() around every
 * read of memory the structure may retire.
 *
 * The domain is a blade's epoch table (the global epoch G and one
 * announcement word per worker).  A structure picks one blade, usually its
 * home, whose table protects all its blocks, wherever they live.  Entering
 * costs no round trip: the worker's announcement is written only when it
 * changes (a worker with no task inside starts announcing, or its oldest
 * task left while others wait for G to move), and rides in the first batch
 * any of its tasks posts to the domain blade.  So reads of the domain blade
 * queued after smart_epoch_enter() are always behind the announcement;
 * before reading protected memory on another blade, smart_sync() once.
 *
 * Every announcement names its worker's client (smart/lease.h): one left
 * by a client that died or was fenced is ignored and taken back, so a dead
 * client never stops reclamation.  Retired lists are bounded per worker;
 * beyond the bound, and when a worker is destroyed, what remains goes to
 * the ctx's keeper thread, which frees it when it is safe.
 *
 * Thread safety: owner thread of the worker; a task is in at most one
 * domain at a time (enter may nest in the same domain).
 */
#ifndef SMART_EPOCH_H
#define SMART_EPOCH_H

#include <stddef.h>
#include <stdint.h>
#include "smart/ctx.h"
#include "smart/gaddr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Enter the domain of blade for the calling task (or main context).
 * SMART_ENOENT for a blade not joined, SMART_EINVAL when the task is
 * already in another domain, SMART_ENOSPC when the blade's 1024
 * announcement words are all taken, or an op's error (the first enter of a
 * worker claims its word with a CAS).  Thread: w's. */
int smart_epoch_enter(smart_worker_t *w, uint16_t blade);

/** Leave the domain.  Call it after the section's last read completed
 * (after its smart_sync()).  May post (without waiting for it) the write
 * that tells the others the worker is idle, and may run a reclamation
 * scan (one round trip) when enough blocks were retired.  Thread: w's. */
void smart_epoch_exit(smart_worker_t *w);

/** Retire a block of `size` bytes (as allocated) that an op of the caller
 * unlinked, and which has completed: it is freed (smart_free) once no task
 * of any client that entered the domain before this call can hold it.
 * Callable inside or outside a section.  SMART_EINVAL for a bad address,
 * SMART_ENOENT for a domain not joined.  Thread: w's. */
int smart_epoch_retire(smart_worker_t *w, uint16_t blade, smart_gaddr_t addr,
		       size_t size);

/** Scan now and free what is safe; with timeout_ms > 0, keep scanning until
 * nothing this worker retired in the domain is left or the time is up
 * (SMART_ETIMEDOUT: somebody is still inside).  Not from inside a section
 * (SMART_EBUSY).  For shutdown paths and tests.  Thread: w's. */
int smart_epoch_drain(smart_worker_t *w, uint16_t blade, int timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
