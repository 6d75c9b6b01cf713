/*
 * Client leases, the client side (docs/design.md §5.3, docs/leases.md).
 *
 * The blade hands each ctx a lease word at the handshake (id, counter 1).
 * The keeper thread (keeper.c) renews it every lease_ms / 8 with a CAS of
 * counter -> counter + 1, then reads the used part of the lease table and
 * scans it: a live word that has not changed for lease_ms by this ctx's
 * own clock belongs to a dead (or stopped) client, and is fenced by CAS
 * word -> word | FENCED.
 *
 * Why the timing is safe without synchronised clocks: a client takes its
 * lease as valid until lease_ms / 2 after it *issued* its last successful
 * renewal, and stops (self-fences) after that; an observer fences only a
 * word it has seen unchanged for lease_ms since the *completion* of the
 * read that first showed it.  The renewal executed before that read
 * completed, so the observer fences at least lease_ms after the renewal
 * was issued: lease_ms / 2 after the client stopped, a margin for clock
 * rate differences and WRs still in flight (docs/leases.md).
 *
 * Invariants: only the keeper thread writes struct smart__lease (except
 * the view words, which smart_lease_fence() may CAS towards FENCED);
 * ctx->lease_until is the minimum of the live blades' `until`; once
 * fenced a ctx stays fenced.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "services/lease.h"
#include "services/svc.h"
#include "util/mutant.h"

/* Slots one read of the lease table covers: with the 64-byte header,
 * 4 KiB (lease_read_scan says why). */
#define LEASE_SCAN_SLOTS                                                       \
	((4096 - offsetof(struct smart_lease_table, slot)) /                   \
	 sizeof(struct smart_lease_slot))

static uint64_t ticks_per_ms(const struct smart__clock *c)
{
	return c->use_tsc ? (uint64_t)(c->cycles_per_ns * 1e6) : 1000000;
}

int smart__lease_new(struct smart_ctx *ctx, struct smart__blade *b,
		     uint32_t lease_ms)
{
	struct smart__lease *l = calloc(1, sizeof(*l));
	uint64_t tpm = ticks_per_ms(&ctx->clock);

	if (!l)
		return SMART_ENOMEM;
	l->lease_ticks = (uint64_t)lease_ms * tpm;
	l->period_ticks = l->lease_ticks / 8;
	l->ctr = 1;
	l->used = 1;	     /* the first read learns slots_used */
	l->next = b->joined; /* renew at once: counter 1 is old news */
	atomic_store(&l->until, b->joined + l->lease_ticks / 2);
	b->lease = l;
	return 0;
}

void smart__lease_free(struct smart__blade *b)
{
	free(b->lease);
	b->lease = NULL;
}

void smart__lease_recompute(struct smart_ctx *ctx)
{
	int i, n = atomic_load(&ctx->nblade_list);
	uint64_t min = UINT64_MAX;

	if (atomic_load(&ctx->fenced))
		return; /* stays 0: expired for good */
	for (i = 0; i < n; i++) {
		struct smart__blade *b = smart__blade_get(ctx,
							  ctx->blade_list[i]);

		if (b && b->lease && !atomic_load(&b->fail)) {
			uint64_t u = atomic_load(&b->lease->until);

			min = u < min ? u : min;
		}
	}
	atomic_store(&ctx->lease_until, min);
}

static smart_gaddr_t lease_ga(const struct smart__blade *b, unsigned slot)
{
	return smart_gaddr(b->id, SMART_LEASE_SLOT_OFF(slot));
}

/* CAS the lease word of slot from v to v | FENCED.  1: this call fenced
 * it (counted); 0: the word held *now instead; or an error. */
static int fence_word(struct smart_worker *w, struct smart__blade *b,
		      unsigned slot, uint64_t v, uint64_t *now)
{
	int rc = smart_cas_sync(w, lease_ga(b, slot), v, v | SMART_LEASE_FENCED,
				now);

	if (rc)
		return rc;
	if (*now != v)
		return 0;
	atomic_fetch_add(&w->ctx->leases_fenced, 1);
	return 1;
}

/* A peer's word v in slot i has not moved for a lease: fence it. */
static void lease_fence_stale(struct smart_ctx *ctx, struct smart_worker *w,
			      struct smart__blade *b, struct smart__lease *l,
			      unsigned i, uint64_t v, uint64_t now)
{
	uint64_t old = 0, prev = v;
	int rc;

	if (SMART_M_LEASE_NO_STALE_FENCE)
		return;
	rc = fence_word(w, b, i, v, &old);
	if (rc < 0)
		return; /* try again next round */
	if (rc) {
		smart__info(&ctx->log,
			    "blade %u: client %u stopped renewing "
			    "its lease; fenced",
			    b->id, smart_lease_word_id(v));
		old = v | SMART_LEASE_FENCED;
	}
	atomic_compare_exchange_strong(&l->view[i], &prev, old);
	l->seen[i] = now;
}

/* Publish what the table read says of slots [from, to); fence the words
 * that stood still for a whole lease.  now = when the read completed. */
static void lease_scan(struct smart_ctx *ctx, struct smart_worker *w,
		       struct smart__blade *b, struct smart__lease *l,
		       unsigned from, unsigned to, uint64_t now)
{
	unsigned i, mine = smart_lease_slot_of(b->lease_id);

	for (i = from; i < to && !atomic_load(&ctx->fenced); i++) {
		uint64_t v = l->table->slot[i].word;
		uint64_t prev = atomic_load_explicit(&l->view[i],
						     memory_order_relaxed);

		if (i == mine)
			continue;
		if (v != prev) {
			/* CAS: a concurrent smart_lease_fence() wins */
			atomic_compare_exchange_strong(&l->view[i], &prev, v);
			l->seen[i] = now;
			continue;
		}
		if (v && !(v & SMART_LEASE_FENCED) &&
		    now - l->seen[i] >= l->lease_ticks)
			lease_fence_stale(ctx, w, b, l, i, v, now);
	}
}

/* Bytes this ctx's workers hold for reuse on blade b (their caches). */
static uint64_t ctx_cached(struct smart_ctx *ctx, uint16_t blade)
{
	struct smart_worker *w;
	uint64_t sum = 0;

	pthread_mutex_lock(&ctx->lock);
	for (w = ctx->workers; w; w = w->next)
		sum += smart__ralloc_cached(w, blade);
	pthread_mutex_unlock(&ctx->lock);
	return sum;
}

/* Report it in our lease slot (smart_alloc_usage() of any client reads
 * it), after a renewal proved the slot is still ours. */
static void lease_report_cached(struct smart_ctx *ctx, struct smart_worker *w,
				struct smart__blade *b, struct smart__lease *l)
{
	uint64_t v = ctx_cached(ctx, b->id);

	if (v == l->cached_reported)
		return;
	if (!smart_write_sync(w,
			      smart_gaddr_add(lease_ga(b, smart_lease_slot_of(
								  b->lease_id)),
					      8),
			      &v, 8))
		l->cached_reported = v;
}

/* One renewal of our lease on b: the CAS alone, so that the lease is
 * extended by one round trip of 8 bytes whatever the table read costs (on
 * a lossy, reordering link rxe retries a multi-packet READ on its 67-ms
 * timer; a renewal that waited for it let clients fence themselves).
 * 0: renewed. */
static int lease_renew(struct smart_ctx *ctx, struct smart_worker *w,
		       struct smart__blade *b, struct smart__lease *l)
{
	unsigned slot = smart_lease_slot_of(b->lease_id);
	uint64_t expect = smart_lease_word(b->lease_id, l->ctr), old = 0;
	uint64_t t0 = smart__lease_now(&ctx->clock);
	int rc = smart_cas_sync(w, lease_ga(b, slot), expect,
				smart_lease_word(b->lease_id, l->ctr + 1),
				&old);

	if (rc) {
		/* a transport error: retry soon; self-fencing bounds how
		 * long this may go on */
		smart__warn(&ctx->log, "blade %u: lease renewal failed: %s",
			    b->id, smart_strerror(rc));
		l->next = smart__lease_now(&ctx->clock) + l->period_ticks / 4;
		return rc;
	}
	if (!SMART_M_LEASE_NO_CATCH_UP &&
	    old == smart_lease_word(b->lease_id, l->ctr + 1)) {
		/* our own CAS of a renewal whose sync failed did execute
		 * (only we move our counter): catch up and renew again at
		 * once, extending nothing - when it ran is not known */
		l->ctr++;
		l->next = smart__lease_now(&ctx->clock);
		return SMART_ERETRY;
	}
	if (old != expect) {
		smart__ctx_fence(
			ctx, smart_lease_word_id(old) == b->lease_id &&
					     (old & SMART_LEASE_FENCED) ?
				     "a peer or the blade fenced our lease" :
				     "our lease word was taken away");
		return SMART_EFENCED;
	}
	l->ctr++;
	atomic_store(&l->until, t0 + l->lease_ticks / 2);
	atomic_fetch_add(&ctx->lease_renewals, 1);
	l->next = t0 + l->period_ticks;
	return 0;
}

/* Read the next piece of the used part of b's lease table and scan it.
 * The used part is the slots below slots_used, as the last read of the
 * header gave it: a slot handed out after that read is raised into
 * slots_used first, so the next one covers it (a newcomer is scanned a
 * round late; it cannot be stale yet).  A piece is at most
 * LEASE_SCAN_SLOTS slots, 4 KiB with the header: one packet at MTU
 * 4096, where the whole table is 16 KiB - a multi-packet READ is what a
 * reordering link makes slow (rxe retries it on its 67-ms timer), and
 * the next renewal waits for this read.  Up to that many clients every
 * round reads them all; past it, a round reads one piece in turn and a
 * stopped client is fenced up to a few periods later. */
static void lease_read_scan(struct smart_ctx *ctx, struct smart_worker *w,
			    struct smart__blade *b, struct smart__lease *l)
{
	unsigned from = l->cursor < l->used ? l->cursor : 0, n, used;
	size_t hdr = offsetof(struct smart_lease_table, slot);
	size_t off = from ? hdr + from * sizeof(l->table->slot[0]) : 0;
	int rc;

	n = l->used - from;
	n = n < LEASE_SCAN_SLOTS ? n : LEASE_SCAN_SLOTS;
	rc = smart_read_sync(w, smart_gaddr(b->id, SMART_LEASE_OFF + off),
			     (from ? 0 : hdr) + n * sizeof(l->table->slot[0]),
			     (uint8_t *)l->table + off);
	if (rc) {
		smart__dbg(&ctx->log, "blade %u: lease table read failed: %s",
			   b->id, smart_strerror(rc));
		return; /* the next round reads it again */
	}
	lease_scan(ctx, w, b, l, from, from + n, smart__lease_now(&ctx->clock));
	l->cursor = from + n;
	if (from)
		return;
	/* 0: a blade older than the word: all of it */
	used = (unsigned)l->table->slots_used;
	if (!used || used > SMART_LEASE_SLOTS)
		used = SMART_LEASE_SLOTS;
	if (!SMART_M_LEASE_SCAN_NO_GROW || used < l->used)
		l->used = used;
}

int64_t smart__lease_round(struct smart_ctx *ctx, struct smart_worker *w)
{
	int i, n = atomic_load(&ctx->nblade_list);
	uint64_t now, next = UINT64_MAX;

	for (i = 0; i < n && !atomic_load(&ctx->fenced); i++) {
		struct smart__blade *b = smart__blade_get(ctx,
							  ctx->blade_list[i]);
		struct smart__lease *l = b ? b->lease : NULL;

		if (!l || atomic_load(&b->fail))
			continue;
		if (!l->table &&
		    smart_buf_alloc(w, sizeof(*l->table), (void **)&l->table))
			continue; /* the pool is full: next round */
		if (smart__lease_now(&ctx->clock) >= l->next &&
		    !lease_renew(ctx, w, b, l)) {
			lease_report_cached(ctx, w, b, l);
			lease_read_scan(ctx, w, b, l);
		}
		next = l->next < next ? l->next : next;
	}
	smart__lease_recompute(ctx);
	/* a keeper that could not renew in time fences its own ctx */
	if (!atomic_load(&ctx->fenced) && smart__lease_expired(ctx))
		smart__ctx_fence(ctx, "the lease ran out before it could be "
				      "renewed (process stopped or starved?)");
	if (atomic_load(&ctx->fenced) || next == UINT64_MAX)
		return -1;
	now = smart__lease_now(&ctx->clock);
	return next <= now ?
		       0 :
		       (int64_t)((next - now) / ticks_per_ms(&ctx->clock)) + 1;
}

void smart__lease_fini(struct smart_ctx *ctx, struct smart_worker *w)
{
	int i, n = atomic_load(&ctx->nblade_list);

	for (i = 0; i < n; i++) {
		struct smart__blade *b = smart__blade_get(ctx,
							  ctx->blade_list[i]);

		if (b && b->lease && b->lease->table) {
			smart_buf_free(w, b->lease->table);
			b->lease->table = NULL;
		}
	}
}

/* ---- public API (include/smart/lease.h) ---------------------------------- */

int smart_lease_id(const smart_ctx_t *ctx, uint16_t blade, uint16_t *id)
{
	struct smart__blade *b;

	if (!ctx || !id)
		return SMART_EINVAL;
	b = smart__blade_get((struct smart_ctx *)ctx, blade);
	if (!b)
		return SMART_ENOENT;
	*id = b->lease_id;
	return 0;
}

int smart_ctx_taint(smart_ctx_t *ctx)
{
	if (!ctx)
		return SMART_EINVAL;
	atomic_store(&((struct smart_ctx *)ctx)->tainted, 1);
	return 0;
}

int smart_ctx_fence(smart_ctx_t *ctx)
{
	if (!ctx)
		return SMART_EINVAL;
	if (!atomic_load(&((struct smart_ctx *)ctx)->fenced))
		smart__ctx_fence((struct smart_ctx *)ctx,
				 "by itself: it "
				 "holds what it can neither finish nor release");
	return 0;
}

int smart_ctx_hold(smart_ctx_t *ctx, int delta)
{
	if (!ctx || (delta != 1 && delta != -1))
		return SMART_EINVAL;
	atomic_fetch_add(&((struct smart_ctx *)ctx)->holds, delta);
	return 0;
}

int smart_ctx_fenced(const smart_ctx_t *ctx)
{
	return ctx && atomic_load(&((struct smart_ctx *)ctx)->fenced);
}

/* The lease word of id as the blade has it now. */
static int lease_word_now(smart_worker_t *w, struct smart__blade *b,
			  uint16_t id, uint64_t *v)
{
	return smart_read_sync(w, lease_ga(b, smart_lease_slot_of(id)), 8, v);
}

static int lease_args(smart_worker_t *w, uint16_t blade, uint16_t id,
		      struct smart__blade **bo)
{
	if (!w || !id)
		return SMART_EINVAL;
	*bo = smart__blade_get(w->ctx, blade);
	if (!*bo || !(*bo)->lease)
		return SMART_ENOENT;
	return 0;
}

/* alive / alive_now: from the keeper's view unless `now` (or the view
 * has not seen this id: a newer client, or one gone), else the word read
 * now. */
static int lease_alive(smart_worker_t *w, uint16_t blade, uint16_t id, int now)
{
	struct smart__blade *b;
	uint64_t v = 0;
	int rc = lease_args(w, blade, id, &b);

	if (rc)
		return rc;
	if (id == b->lease_id)
		return !atomic_load(&w->ctx->fenced);
	if (!now)
		v = atomic_load_explicit(
			&b->lease->view[smart_lease_slot_of(id)],
			memory_order_relaxed);
	if (now || smart_lease_word_id(v) != id) {
		rc = lease_word_now(w, b, id, &v);
		if (rc)
			return rc;
	}
	return smart_lease_word_id(v) == id && !(v & SMART_LEASE_FENCED);
}

int smart_lease_alive(smart_worker_t *w, uint16_t blade, uint16_t id)
{
	return lease_alive(w, blade, id, 0);
}

int smart_lease_alive_now(smart_worker_t *w, uint16_t blade, uint16_t id)
{
	return lease_alive(w, blade, id, 1);
}

int smart_lease_fence(smart_worker_t *w, uint16_t blade, uint16_t id)
{
	struct smart__blade *b;
	_Atomic uint64_t *view;
	uint64_t v, old = 0, prev;
	int rc = lease_args(w, blade, id, &b), i;

	if (rc)
		return rc;
	if (id == b->lease_id)
		return SMART_EINVAL; /* fence yourself: destroy the ctx */
	view = &b->lease->view[smart_lease_slot_of(id)];
	rc = lease_word_now(w, b, id, &v);
	for (i = 0; !rc && i < 64; i++) {
		if (smart_lease_word_id(v) != id || (v & SMART_LEASE_FENCED))
			break; /* gone or fenced already */
		rc = fence_word(w, b, smart_lease_slot_of(id), v, &old);
		if (rc > 0) {
			v |= SMART_LEASE_FENCED;
			rc = 0;
			break;
		}
		v = old; /* it renewed meanwhile: fence what is there */
	}
	if (rc)
		return rc;
	prev = atomic_load(view);
	if (smart_lease_word_id(v) == id)
		atomic_compare_exchange_strong(view, &prev, v);
	return i == 64 ? SMART_ERETRY : 0;
}
