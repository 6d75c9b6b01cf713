/*
 * A test-and-test-and-set spinlock for the few places where threads really
 * share an object (QPs and CQs in the shared and mux:K modes, a doorbell in
 * the RNIC model).  Never used on a per-thread fast path.  Header only.
 */
#ifndef SMART_UTIL_SPINLOCK_H
#define SMART_UTIL_SPINLOCK_H

#include <stdatomic.h>
#include "util/compiler.h"

typedef struct smart_spinlock {
	atomic_int v;
} smart_spinlock_t;

static inline void smart_spin_init(smart_spinlock_t *l)
{
	atomic_init(&l->v, 0);
}

/* Returns 1 when the lock was free at once, 0 when the caller had to wait:
 * the RNIC model counts contended doorbell acquisitions with it. */
static inline int smart_spin_lock(smart_spinlock_t *l)
{
	int waited = 0;

	for (;;) {
		if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
			return !waited;
		waited = 1;
		while (atomic_load_explicit(&l->v, memory_order_relaxed))
			smart_cpu_relax();
	}
}

/* 1 when taken, 0 when another holds it (the caller does something else:
 * verbs' async event drain needs one reader, not every poller). */
static inline int smart_spin_trylock(smart_spinlock_t *l)
{
	return !atomic_load_explicit(&l->v, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->v, 1, memory_order_acquire);
}

static inline void smart_spin_unlock(smart_spinlock_t *l)
{
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

/* Lock and unlock only when `shared` (an object created SMART_TP_SHARED):
 * a private QP or CQ takes no lock at all. */
static inline void smart_spin_lock_if(int shared, smart_spinlock_t *l)
{
	if (shared)
		smart_spin_lock(l);
}

static inline void smart_spin_unlock_if(int shared, smart_spinlock_t *l)
{
	if (shared)
		smart_spin_unlock(l);
}

#endif
