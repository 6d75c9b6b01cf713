/*
 * The keeper: one small thread per ctx that keeps the ctx's leases alive
 * and watches its blades (docs/leases.md, docs/design.md §5.3).
 *
 * Why a thread and not the workers' poll loops: a lease must be renewed
 * whatever the application does.  A task that computes for longer than a
 * lease, or a worker whose thread sleeps in the application, would stop a
 * poll-loop renewal and get its whole process fenced by mistake; a thread
 * of its own renews on time as long as the process is scheduled at all
 * (FaRM makes the same choice).  It costs one CAS and one READ of the
 * lease table per blade every lease_ms / 8.
 *
 * The thread owns an internal worker (never listed in the ctx, never in
 * the stats) for its one-sided ops, and sleeps in poll() on an eventfd
 * (new blade, stop) and on the blades' control sessions for POLLRDHUP: a
 * blade whose session closes is dead, and from then on ops to it fail
 * with SMART_ECONN (shm has no other way to notice; verbs also times out).
 *
 * Simulated (docs/sim.md): a ctx created on a simulated thread gets its
 * keeper as a simulated thread of the same engine instead (a real thread
 * posting would inject real time into the model): the same round, its
 * sleeps virtual, the sessions polled without waiting at each wake-up.
 *
 * Invariants: only the keeper thread touches struct smart__lease and its
 * worker; workers read only the atomics it publishes (ctx->lease_until,
 * ctx->fenced, b->fail, the lease view words).
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "runtime/bootstrap.h"
#include "runtime/core.h"
#include "services/lease.h"
#include "services/svc.h"
#include "util/mutant.h"
#include "util/thread.h"

#define KEEPER_ORPHAN_MS 5    /* retry period while orphans are left */
#define KEEPER_DRAIN_MS	 2000 /* at most this long at ctx destroy */

struct smart__keeper {
	struct smart_ctx *ctx;
	pthread_t thread;
	int wakefd;
	_Atomic int stop;
	struct smart_worker *w; /* keeper thread only */
	/* start-up handshake with smart_ctx_create */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready; /* 1 started, < 0 failed */
	int sim;   /* a simulated thread (sim.h) */
	int done;  /* sim: the fiber has finished */
};

static void keeper_wake(struct smart__keeper *k)
{
	uint64_t one = 1;

	if (write(k->wakefd, &one, sizeof(one)) != sizeof(one))
		smart__dbg(&k->ctx->log, "keeper: wake-up not written");
}

/* The keeper's reclamation counters, for smart_stats_snapshot() (its
 * other ops stay out of the stats: they are not the application's). */
void smart__keeper_stats(struct smart_ctx *ctx, uint64_t *c)
{
	static const int ids[] = { SMART_STAT_EPOCH_FREED,
				   SMART_STAT_EPOCH_SCANS,
				   SMART_STAT_EPOCH_TAKEN_BACK,
				   SMART_STAT_EPOCH_LEAKED };
	struct smart_worker *w = ctx->keeper ? ctx->keeper->w : NULL;
	size_t i;

	for (i = 0; w && i < SMART_ARRAY_SIZE(ids); i++)
		c[ids[i]] += __atomic_load_n(&w->stats[ids[i]],
					     __ATOMIC_RELAXED);
}

void smart__keeper_kick(struct smart_ctx *ctx)
{
	if (ctx->keeper)
		keeper_wake(ctx->keeper);
}

/* The blade's control session closed: it is gone.  Ops to it fail from
 * now on, and WRs queued for it are never executed (shm). */
static void smart__blade_dead(struct smart_ctx *ctx, struct smart__blade *b,
			      const char *why)
{
	int zero = 0;

	if (!atomic_compare_exchange_strong(&b->fail, &zero, SMART_ECONN))
		return;
	smart__warn(&ctx->log,
		    "blade %u is gone (%s): its ops fail with "
		    "SMART_ECONN from now on",
		    b->id, why);
	ctx->tp->remote_fail(b->remote);
	smart__lease_recompute(ctx);
}

/* Poll the wake-up fd and every live blade's session until the earliest
 * deadline (ms, -1 = none). */
static void keeper_sleep(struct smart__keeper *k, int timeout_ms)
{
	struct smart_ctx *ctx = k->ctx;
	struct pollfd p[SMART_BLADE_ID_MAX + 2];
	struct smart__blade *who[SMART_BLADE_ID_MAX + 2];
	int n = 1, i, nb = atomic_load(&ctx->nblade_list);
	uint64_t junk;

	p[0] = (struct pollfd){ .fd = k->wakefd, .events = POLLIN };
	for (i = 0; i < nb; i++) {
		struct smart__blade *b = smart__blade_get(ctx,
							  ctx->blade_list[i]);
		int fd = b ? smart__boot_fd(b->boot) : -1;

		if (!b || atomic_load(&b->fail) || fd < 0)
			continue;
		who[n] = b;
		p[n++] = (struct pollfd){ .fd = fd, .events = POLLRDHUP };
	}
	if (k->sim) {
		/* virtual wait (1 ms steps without a deadline, to see stop),
		 * then the sessions' state without waiting */
		smart__sim_sleep_until(
			smart__sim_now() +
			UINT64_C(1000000) *
				(uint64_t)(timeout_ms < 0 ? 1 : timeout_ms));
		timeout_ms = 0;
	}
	if (poll(p, (nfds_t)n, timeout_ms) <= 0)
		return;
	if (p[0].revents && read(k->wakefd, &junk, sizeof(junk)) < 0 &&
	    errno != EAGAIN)
		smart__dbg(&ctx->log, "keeper: eventfd read failed");
	for (i = 1; i < n; i++)
		if (p[i].revents & (POLLRDHUP | POLLHUP | POLLERR))
			smart__blade_dead(ctx, who[i],
					  "its control session closed");
}

/* A lease is only as good as the thread that renews it: on a loaded
 * machine (busy-polling workers on every core) a normal-priority keeper
 * can wait a second for a CPU and get its process fenced.  A real-time
 * priority lets it preempt them for its few microseconds per period; it
 * never spins (its waits sleep), so it cannot starve anybody.  Without
 * the privilege it runs as it is, and says so. */
static void keeper_priority(struct smart_ctx *ctx)
{
	struct sched_param sp = { .sched_priority = 1 };
	int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

	if (rc)
		smart__info(&ctx->log,
			    "keeper thread at normal priority (%s):"
			    " a starved process may fence itself "
			    "(docs/leases.md)",
			    strerror(rc));
}

/* At ctx destroy: free what can be freed of the orphans, for a bounded
 * time (a reader of another client may stay inside); the rest is lost
 * and counted (smart_ctx_destroy warns). */
static void keeper_drain(struct smart__keeper *k)
{
	uint64_t end = smart_now_ns() + KEEPER_DRAIN_MS * UINT64_C(1000000);

	while (!atomic_load(&k->ctx->fenced) &&
	       smart__ebr_orphans(k->ctx, k->w) && smart_now_ns() < end)
		smart__idle_pause();
}

static void *keeper_main(void *arg)
{
	struct smart__keeper *k = arg;
	struct smart_ctx *ctx = k->ctx;
	int rc;

	/* named for top -H and gdb, and so that a test can find it */
	if (!k->sim) {
		pthread_setname_np(pthread_self(), "smart-keeper");
		keeper_priority(ctx);
	}
	rc = smart__worker_create(ctx, 1, &k->w);

	pthread_mutex_lock(&k->lock);
	k->ready = rc ? rc : 1;
	pthread_cond_signal(&k->cond);
	pthread_mutex_unlock(&k->lock);
	if (rc)
		return NULL;
	while (!atomic_load(&k->stop)) {
		int64_t next_ms = smart__lease_round(ctx, k->w);

		/* retired blocks the workers handed over: try again soon
		 * while some are left (readers may still be inside) */
		if (!atomic_load(&ctx->fenced) &&
		    smart__ebr_orphans(ctx, k->w) &&
		    (next_ms < 0 || next_ms > KEEPER_ORPHAN_MS))
			next_ms = KEEPER_ORPHAN_MS;
		keeper_sleep(k, next_ms < 0 ? -1 : (int)next_ms);
	}
	keeper_drain(k);
	smart__lease_fini(ctx, k->w);
	smart_worker_destroy(k->w);
	k->done = 1;
	return NULL;
}

static void keeper_fiber(void *arg)
{
	keeper_main(arg);
}

/* Start the keeper as a simulated thread and wait (virtually) for it. */
static int keeper_start_sim(struct smart__keeper *k)
{
	int rc;

	k->sim = 1;
	rc = smart__sim_spawn(smart__sim_self(), keeper_fiber, k, 0);
	while (!rc && !k->ready)
		smart__idle_pause();
	return rc ? rc : k->ready < 0 ? k->ready : 0;
}

/* The keeper thread started and ready, or an error. */
static int keeper_start_thread(struct smart__keeper *k)
{
	int rc = smart__thread_start(&k->thread, keeper_main, k);

	if (rc) {
		smart__err(&k->ctx->log, "keeper thread: %s", strerror(rc));
		return SMART_ESYS;
	}
	pthread_mutex_lock(&k->lock);
	while (!k->ready)
		pthread_cond_wait(&k->cond, &k->lock);
	rc = k->ready < 0 ? k->ready : 0;
	pthread_mutex_unlock(&k->lock);
	if (rc)
		pthread_join(k->thread, NULL);
	return rc;
}

/* Wait for the keeper to end: join the thread, or let the fiber run. */
static void keeper_join(struct smart__keeper *k)
{
	if (!k->sim) {
		pthread_join(k->thread, NULL);
		return;
	}
	while (!k->done)
		smart__idle_pause();
}

int smart__keeper_start(struct smart_ctx *ctx)
{
	struct smart__keeper *k = calloc(1, sizeof(*k));
	int rc;

	if (!k)
		return SMART_ENOMEM;
	k->ctx = ctx;
	k->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (k->wakefd < 0) {
		free(k);
		return SMART_ESYS;
	}
	pthread_mutex_init(&k->lock, NULL);
	pthread_cond_init(&k->cond, NULL);
	rc = smart__sim_self() && !SMART_M_KEEPER_SIM_THREAD ?
		     keeper_start_sim(k) :
		     keeper_start_thread(k);
	if (rc)
		goto err;
	ctx->keeper = k;
	return 0;
err:
	close(k->wakefd);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
	return rc;
}

void smart__keeper_stop(struct smart_ctx *ctx)
{
	struct smart__keeper *k = ctx->keeper;

	if (!k)
		return;
	atomic_store(&k->stop, 1);
	keeper_wake(k);
	keeper_join(k);
	close(k->wakefd);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
	ctx->keeper = NULL;
}
