/*
 * Client leases, the client side (lease.c; docs/leases.md).  Internal to
 * the core: the keeper thread drives them, workers only read what it
 * publishes, and the public API is include/smart/lease.h.
 */
#ifndef SMART_CORE_LEASE_H
#define SMART_CORE_LEASE_H

#include <stdint.h>

#include "runtime/core.h"
#include "wire/services.h"

/* What this ctx knows about the lease table of one blade.  The keeper
 * owns everything but the atomics, which workers read. */
struct smart__lease {
	/* the lease words as last seen; also stored by smart_lease_fence()
	 * (only ever towards FENCED, by CAS) */
	_Atomic uint64_t view[SMART_LEASE_SLOTS];
	_Atomic uint64_t until;		  /* lease clock: our lease ends */
	uint64_t seen[SMART_LEASE_SLOTS]; /* when view[i] last changed */
	uint64_t ctr;			  /* our counter, as last written */
	uint64_t next;			  /* next renewal (lease clock) */
	uint64_t lease_ticks, period_ticks;
	uint64_t cached_reported;
	unsigned used;			 /* slots_used, as last read */
	unsigned cursor;		 /* the next read starts at this slot */
	struct smart_lease_table *table; /* keeper's registered copy */
};

/* A new blade's lease state, valid from `joined` (lease clock, taken
 * before the HELLO): the blade wrote counter 1 during the handshake. */
int smart__lease_new(struct smart_ctx *ctx, struct smart__blade *b,
		     uint32_t lease_ms);
void smart__lease_free(struct smart__blade *b);

/* Keeper: renew what is due, scan, fence the stale; returns the ms until
 * the next round is due (-1: nothing to do).  Keeper thread only. */
int64_t smart__lease_round(struct smart_ctx *ctx, struct smart_worker *w);
/* Keeper: release what it holds (registered buffers) before it stops. */
void smart__lease_fini(struct smart_ctx *ctx, struct smart_worker *w);
/* ctx->lease_until = the earliest deadline over the live blades. */
void smart__lease_recompute(struct smart_ctx *ctx);

/* Has our own lease run out (self-fencing)? */
static inline int smart__lease_expired(const struct smart_ctx *ctx)
{
	return smart__lease_now(&ctx->clock) >
	       atomic_load_explicit(&ctx->lease_until, memory_order_relaxed);
}

/* keeper.c */
int smart__keeper_start(struct smart_ctx *ctx);
void smart__keeper_stop(struct smart_ctx *ctx);
void smart__keeper_kick(struct smart_ctx *ctx);
void smart__keeper_stats(struct smart_ctx *ctx, uint64_t *c);

#endif
