/** @file
 * Client leases: how a client tells a dead holder from a slow one
 * (docs/design.md §5.3; docs/leases.md has the protocol, the timing argument
 * and the window in which a paused client can still write).
 *
 * Every ctx holds a lease on each blade it joins: a word in the blade's
 * lease table naming its 16-bit client id, renewed without the
 * application's help by a small thread of the ctx (the keeper) every
 * lease_ms / 8.  lease_ms is the blade's (smart_blade_config.lease_ms,
 * smartd --lease-ms; struct smart_blade_info reports it).  A lock word,
 * tentative slot or announcement that names its holder's client id can be
 * checked with smart_lease_alive(): a holder whose lease stood still for
 * lease_ms, by this ctx's own clock, is fenced by the keepers of the other
 * clients, and so is one whose control session dropped without a BYE (the
 * blade fences it at once).  A fenced client's ops fail with
 * SMART_EFENCED: it must stop, since others may already be undoing its
 * work.  A client also fences itself when it could not renew for
 * lease_ms / 2.
 *
 * Thread safety: smart_lease_id() and smart_ctx_fenced() from any thread;
 * the functions taking a worker from its owner thread, inside a task or
 * from the main context (they may issue a READ and sync).
 */
#ifndef SMART_LEASE_H
#define SMART_LEASE_H

#include <stdint.h>
#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** This ctx's client id on a connected blade (1..65535).  SMART_ENOENT for
 * a blade the ctx has not joined.  Thread: any. */
int smart_lease_id(const smart_ctx_t *ctx, uint16_t blade, uint16_t *id);

/** Is the client with this id alive on the blade?  1 alive, 0 dead (fenced,
 * or gone: its lease was released or given to another client), or a
 * negative SMART_E* code.  Answers from the keeper's latest look at the
 * lease table (at most lease_ms / 8 old) and reads the lease word itself
 * only for an id it has not seen yet.  A holder stays "alive" until it is
 * fenced: for at most lease_ms plus one renewal period after it stopped.
 * Thread: w's. */
int smart_lease_alive(smart_worker_t *w, uint16_t blade, uint16_t id);

/** The same, from the lease word read now (one round trip): for a decision
 * that cannot wait for the keeper's next look, e.g. whether a holder that
 * just lost a race is still there to clean up after itself.  Errors as
 * for smart_lease_alive, and the READ's.  Thread: w's. */
int smart_lease_alive_now(smart_worker_t *w, uint16_t blade, uint16_t id);

/** Fence the client with this id now, whatever its lease says (an
 * operator's or a recovery tool's decision; the keepers do it by
 * themselves for clients that stopped renewing).  0 when it is fenced or
 * gone, SMART_EINVAL for this ctx's own id, SMART_ERETRY if its word kept
 * changing.  Thread: w's. */
int smart_lease_fence(smart_worker_t *w, uint16_t blade, uint16_t id);

/** Something this ctx leaves in blade memory names its lease ids after it
 * is gone (locks a structure could not release: a stuck transaction
 * freed, docs/dtx.md §5): smart_ctx_destroy then ends its sessions
 * without a BYE, so that each blade fences the lease and never hands the
 * id out again (docs/leases.md), and peers resolve what names it as a
 * dead client's.  Without it a BYE gives the id back, and once a
 * newcomer holds it those locks name a live client for ever.
 * SMART_EINVAL for NULL.  Thread: any. */
int smart_ctx_taint(smart_ctx_t *ctx);

/** Fence this ctx now, as its keeper does when its lease runs out: its ops
 * fail with SMART_EFENCED from here on and its leases are renewed no
 * more, so the peers' keepers fence them within lease_ms plus a renewal
 * period (not sooner: what it has in flight lands before, the margin of
 * docs/leases.md) and resolve what it left as a dead client's.  For a
 * structure holding in blade memory what it can neither finish nor
 * release (Smart-BT: a write it could not finish, docs/bt.md §4): a live
 * holder that never lets go would be waited for as long as the process
 * lives.  Such a caller taints the ctx too (smart_ctx_taint), so that no
 * newcomer gets its ids.  Destroy the ctx then.  SMART_EINVAL for NULL.
 * Thread: any. */
int smart_ctx_fence(smart_ctx_t *ctx);

/** delta +1: a structure leaves something in blade memory that names this
 * ctx's ids and that it will settle itself while it is used (Smart-DTX:
 * an object's unlocks posted and not yet seen landed); -1: settled.
 * While holds are taken, smart_ctx_destroy ends the sessions without a
 * BYE, as after smart_ctx_taint, so that an object never freed cannot
 * leave a lock naming an id a newcomer gets.  SMART_EINVAL for NULL or
 * another delta.  Thread: any. */
int smart_ctx_hold(smart_ctx_t *ctx, int delta);

/** 1 when this ctx has been fenced (by a peer, by the blade, or by itself
 * after its lease ran out); its ops fail with SMART_EFENCED.  Thread: any. */
int smart_ctx_fenced(const smart_ctx_t *ctx);

#ifdef __cplusplus
}
#endif
#endif
