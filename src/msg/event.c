/*
 * Event mode of an endpoint (include/smart/rpc.h, docs/rpc.md §12): one
 * descriptor a program puts in its own epoll set, readable when the
 * endpoint has work, so that an idle server sleeps instead of polling;
 * while traffic flows the endpoint is polled and the descriptor is not
 * used (X-RDMA's switch between polling and events).
 *
 * The descriptor is an epoll set of the endpoint's own: its CQ's event
 * descriptor (transport rule 9), a timerfd for the next thing due (a
 * keepalive probe or verdict, a call's timeout, a sleeping task), the
 * listening socket and the control socket.
 *
 * Invariants: arming happens outside the endpoint's poll (never from a
 * handler); a 0 from smart_rpc_event_arm means that, after the arm, a
 * full poll found nothing and nothing is due before the timer, so that a
 * caller that sleeps until the descriptor is readable misses no work.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "msg/msg_int.h"
#include "util/mutant.h"

static int ev_add(int efd, int fd)
{
	struct epoll_event e = { .events = EPOLLIN, .data.fd = fd };

	if (fd < 0 || !epoll_ctl(efd, EPOLL_CTL_ADD, fd, &e) || errno == EEXIST)
		return 0;
	return SMART_ENOMEM;
}

/* A socket joins the set when it comes: the listening one (listen after
 * the descriptor was asked for), a handshake's (it leaves when closed). */
int smart__rpc_event_add(struct smart_rpc *rpc, int fd)
{
	return rpc->efd < 0 ? 0 : ev_add(rpc->efd, fd);
}

void smart__rpc_event_close(struct smart_rpc *rpc)
{
	if (rpc->tfd >= 0)
		close(rpc->tfd);
	if (rpc->efd >= 0)
		close(rpc->efd);
	rpc->tfd = rpc->efd = -1;
}

int smart_rpc_event_fd(smart_rpc_t *rpc, int *fd)
{
	int rc;

	if (!rpc || !fd)
		return SMART_EINVAL;
	if (rpc->efd >= 0) {
		*fd = rpc->efd;
		return 0;
	}
	if (!rpc->tp->cq_event_fd || rpc->tp->cq_event_fd(rpc->cq) < 0)
		return SMART_ENOTSUP;
	rpc->efd = epoll_create1(EPOLL_CLOEXEC);
	rpc->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	rc = rpc->efd < 0 || rpc->tfd < 0 ? SMART_ENOMEM : 0;
	if (!rc)
		rc = ev_add(rpc->efd, rpc->tp->cq_event_fd(rpc->cq));
	if (!rc)
		rc = ev_add(rpc->efd, rpc->tfd);
	if (!rc)
		rc = ev_add(rpc->efd, rpc->lfd);
	if (!rc)
		rc = ev_add(rpc->efd, rpc->sfd);
	for (uint32_t i = 0; !rc && i < rpc->cfg.max_pending; i++)
		rc = ev_add(rpc->efd, rpc->pend[i].fd);
	if (rc) {
		smart__rpc_event_close(rpc);
		return rc;
	}
	*fd = rpc->efd;
	return 0;
}

static void due_min(uint64_t *due, uint64_t at)
{
	if (at && (!*due || at < *due))
		*due = at;
}

/* The TSC at which the endpoint must be polled next without any message
 * coming: 0 for never (nothing due). */
static uint64_t next_due(struct smart_rpc *rpc, uint64_t now, int64_t now_ms)
{
	uint64_t due = 0, dead = rpc->ka_cycles * rpc->cfg.keepalive_misses;
	uint64_t wake;

	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		const struct smart_rpc_conn *c = rpc->conns[i];

		if (c && c->state == RPC_C_LIVE)
			due_min(&due,
				c->last_rx +
					(c->ping_out ? dead : rpc->ka_cycles));
	}
	for (const struct rpc_call *k = rpc->live_calls; k; k = k->next)
		if (!k->done)
			due_min(&due, k->deadline + 1);
	smart__worker_idle(rpc->w, &wake);
	due_min(&due, wake);
	/* a handshake's deadline (its socket is in the set) */
	for (uint32_t i = 0; i < rpc->cfg.max_pending; i++) {
		const struct rpc_pend *p = &rpc->pend[i];
		int64_t left;

		if (p->fd < 0)
			continue;
		left = p->deadline - now_ms + 1;
		due_min(&due,
			now + (left > 0 ? smart__rpc_cycles(rpc, left * 1e6) :
					  1));
	}
	/* smart-stat answers being written, the QP cache filling (one per
	 * tick), a connection due ahead of a PEER_CONNECT or one made ahead
	 * past the cache (freed at a tick with no handshake left, rpc.c
	 * smart__rpc_cache_trim): served by ticks */
	if (smart__rpc_stat_clients(rpc) || rpc->nspare != rpc->cfg.qp_cache ||
	    rpc->ahead_due)
		due_min(&due, now + rpc->tick_cycles);
	return due;
}

static int timer_set(struct smart_rpc *rpc, uint64_t ns)
{
	struct itimerspec it = { 0 };

	it.it_value.tv_sec = (time_t)(ns / 1000000000u);
	it.it_value.tv_nsec = (long)(ns % 1000000000u);
	return timerfd_settime(rpc->tfd, 0, &it, NULL) ? SMART_ENOMEM : 0;
}

int smart_rpc_event_arm(smart_rpc_t *rpc)
{
	uint64_t now, due, wake, v;
	int rc;

	if (!rpc || rpc->in_poll)
		return SMART_EINVAL;
	if (rpc->efd < 0)
		return SMART_ENOENT; /* no smart_rpc_event_fd yet */
	/* a FOOTER channel's slots land without a completion: nothing
	 * would wake us for them (docs/rpc.md §17) */
	if (rpc->footer_chans && !SMART_M_RPC_CHAN_FOOTER_SLEEPS)
		return SMART_EAGAIN;
	now = smart__rdtsc();
	/* traffic flows: stay in polling mode */
	if (now - rpc->last_busy < rpc->busy_cycles)
		return SMART_EAGAIN;
	while (read(rpc->tfd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	/* what made the sockets readable is taken now, not at the next
	 * tick (the descriptor would stay readable until then) */
	smart__rpc_listen_service(rpc);
	smart__rpc_stat_service(rpc, 1);
	if (rpc->dirty || rpc->dead || !smart__worker_idle(rpc->w, &wake))
		return SMART_EAGAIN;
	rc = rpc->tp->cq_arm(rpc->cq);
	if (rc)
		return rc;
	/* what came between the last poll and the arm signals nothing:
	 * one more poll sees it (rule 9) */
	if (smart__worker_poll(rpc->w) > 0 || rpc->dirty || rpc->dead)
		return SMART_EAGAIN;
	now = smart__rdtsc();
	due = next_due(rpc, now, smart__now_ms());
	if (due && due <= now)
		return SMART_EAGAIN;
	rc = timer_set(rpc, due ? smart__rpc_ns(rpc, due - now) + 1 : 0);
	if (rc)
		return rc;
	rpc->past.event_sleeps++;
	rpc->last_poll = 0; /* the sleep is no slow poll */
	return 0;
}
