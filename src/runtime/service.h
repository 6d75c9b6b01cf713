/*
 * The runtime's one interface to the layers above it (docs/design.md §2):
 * what a service (src/services: allocator, leases and keeper, epochs) or
 * the messaging layer (src/msg) may ask of the runtime, and what the
 * runtime asks of the services.
 *
 * Contract:
 *  - The runtime calls no function of a layer above it by name (the layer
 *    check, tests/build/layer-check.sh, fails the build's tests if it
 *    does).  Where it needs a service it calls a hook of the table the
 *    ctx was created with (struct smart__svc); the services layer fills
 *    that table and passes it to smart__ctx_create (services/svc.c holds
 *    the public smart_ctx_create).  Every hook is set; each runs on the
 *    thread and under the locks its comment names, and may call back into
 *    the runtime only as that comment allows.
 *  - Pollers: a layer above registers a function every poll of the worker
 *    runs after the worker's own CQ, on the worker's thread (the
 *    messaging endpoint's tick).
 *  - The fenced flag: smart__ctx_fence sets it once for good; every op of
 *    the ctx then fails with SMART_EFENCED (ops.c checks it before each
 *    post) and the svc's fenced hook is told once.
 *  - This header names no field of the runtime's structs: a layer that
 *    includes it alone (msg) reads the ctx and the worker through the
 *    accessors below, so the runtime's layout stays the runtime's.
 */
#ifndef SMART_RUNTIME_SERVICE_H
#define SMART_RUNTIME_SERVICE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "smart/ctx.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/sim.h"

/* Completions a poll takes from a CQ at once (the worker's, an
 * endpoint's). */
#define SMART_POLL_BATCH 32

struct smart__blade;
struct smart__chain;
struct smart__task;

/* What the runtime asks of the services (one table per ctx, static and
 * never changed).  All hooks are required. */
struct smart__svc {
	/* The ctx is up (options, transport, pool): start what serves it
	 * (the keeper thread).  Creating thread; an error undoes the ctx. */
	int (*ctx_start)(struct smart_ctx *ctx);
	/* The ctx goes: stop it, before the blades are freed.  No worker
	 * is live.  Destroying thread. */
	void (*ctx_stop)(struct smart_ctx *ctx);
	/* A blade's handshake succeeded (b's lease id and lease_ms are
	 * set, b->joined is the lease clock before the HELLO): set up what
	 * the services keep per blade.  Connecting thread, b not published
	 * yet; an error frees b. */
	int (*blade_join)(struct smart_ctx *ctx, struct smart__blade *b);
	/* b is published in the ctx's table (connecting thread, no lock). */
	void (*blade_joined)(struct smart_ctx *ctx, struct smart__blade *b);
	/* b is being freed (blade_join may have failed or not run). */
	void (*blade_free)(struct smart__blade *b);
	/* The ctx was just fenced (smart__ctx_fence, any thread, once). */
	void (*fenced)(struct smart_ctx *ctx);
	/* w is being destroyed: give back what the services hold for it,
	 * with remote ops from w's main context (owner thread; no task of
	 * w is live, its QPs still work). */
	void (*worker_destroy)(struct smart_worker *w);
	/* What went out on w's QP to blade may be lost (a new or repaired
	 * QP, a failed post): state announced through it is announced
	 * again (owner thread). */
	void (*qp_new)(struct smart_worker *w, uint16_t blade);
	/* The chain-prelude: w->ebr_dirty is set and c is about to be
	 * posted; the hook may put up to 2 WRs in front of c's (owner
	 * thread; a chain has room for chain_max + 2, task.c). */
	void (*chain_prelude)(struct smart_worker *w, struct smart__chain *c);
	/* A task returned still inside an epoch section (owner thread, the
	 * task's own context): leave it. */
	void (*task_left_epoch)(struct smart_worker *w);
	/* Add the services' counters to a stats snapshot (any thread,
	 * ctx->lock held: the hook must not take it). */
	void (*stats)(struct smart_ctx *ctx, uint64_t *c);
};

/* ctx.c: a ctx whose services are svc (the public smart_ctx_create is the
 * services layer's, which passes its table). */
int smart__ctx_create(const smart_opts_t *opts, const struct smart__svc *svc,
		      smart_ctx_t **out);

/* ctx.c: fence the ctx (any thread): every op fails with SMART_EFENCED,
 * queued WRs never execute (shm), the blades are told to fail; the first
 * call logs why and calls the fenced hook. */
void smart__ctx_fence(struct smart_ctx *ctx, const char *why);

/* Pollers (worker.c).  A poller is run by every smart__worker_poll after
 * the worker's own CQ, on the worker's thread; it returns the events it
 * handled (> 0: the worker is not idle).  Add or remove one on the owner
 * thread: SMART_EBUSY when all slots are taken; removing one not added
 * does nothing.  A worker with a poller cannot be destroyed. */
int smart__worker_poll(struct smart_worker *w);
int smart__worker_wait_poll(struct smart_worker *w);
void smart__worker_hand_off(struct smart_worker *w);
/* 1 when only an event of a layer above can give w work. */
int smart__worker_idle(const struct smart_worker *w, uint64_t *wake_at);
int smart__worker_poller_add(struct smart_worker *w,
			     int (*fn)(struct smart_worker *, void *),
			     void *arg);
void smart__worker_poller_del(struct smart_worker *w,
			      int (*fn)(struct smart_worker *, void *),
			      void *arg);
/* 1 when a poller with this function is registered (any arg). */
int smart__worker_poller_has(const struct smart_worker *w,
			     int (*fn)(struct smart_worker *, void *));

/* Tasks (task.c): the calling task waits until woken; wake one. */
void smart__task_wait(struct smart_worker *w, struct smart__task *t);
void smart__task_wake(struct smart_worker *w, struct smart__task *t);

/* Accessors for layers that do not see the runtime's structs (ctx.c,
 * worker.c).  The ctx's: fixed from creation on (the secret: under
 * smart__ctx_lock, it may be replaced). */
struct smart__log *smart__ctx_log(struct smart_ctx *ctx);
const struct smart__clock *smart__ctx_clock(const struct smart_ctx *ctx);
const struct smart_tp_ops *smart__ctx_tp(const struct smart_ctx *ctx);
struct smart_tp_domain *smart__ctx_domain(const struct smart_ctx *ctx);
const struct smart_tp_caps *smart__ctx_caps(const struct smart_ctx *ctx);
void smart__ctx_lock(struct smart_ctx *ctx);
void smart__ctx_unlock(struct smart_ctx *ctx);
const char *smart__ctx_secret(const struct smart_ctx *ctx, size_t *len);
/* The worker's: owner thread.  now is the TSC as its last poll read it;
 * task is the running task (NULL in the main context); internal: the
 * library's own (the keeper's) worker. */
struct smart_ctx *smart__worker_ctx(const struct smart_worker *w);
uint64_t smart__worker_now(const struct smart_worker *w);
struct smart__task *smart__worker_task(const struct smart_worker *w);
int smart__worker_internal(const struct smart_worker *w);
int smart__worker_npollers(const struct smart_worker *w);

/* The keeper's worker waits without holding a CPU: it may run at a real-
 * time priority, and a dead verbs peer takes a whole retry budget to
 * answer (keeper.c). */
static inline void smart__idle_pause(void)
{
	struct timespec ts = { 0, 20000 };

	/* simulated (docs/sim.md): 20 us of virtual time, others run */
	if (smart__sim_self()) {
		smart__sim_sleep_until(smart__sim_now() + 20000);
		return;
	}
	nanosleep(&ts, NULL);
}

#endif
