/*
 * The messaging endpoint as an object (include/smart/rpc.h): its settings,
 * creation and teardown, handlers, dialing and counters, and its tick (the
 * poller its worker runs).  The data path is rpc.c's, handshakes peer.c's,
 * registered memory slab.c's.
 *
 * Invariant: an endpoint is on its worker's poller list from create to
 * destroy, and destroy is refused while anything waits on it.
 */
#include <stdlib.h>
#include <string.h>

#include "msg/msg_int.h"
#include "util/mutant.h"
#include "util/config.h"

void smart_rpc_config_init(struct smart_rpc_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
}

/* The caller's settings (docs/api.md, "Extensible structs") with the
 * defaults for zero fields, checked. */
static int cfg_fill(const struct smart_rpc_config *in,
		    struct smart_rpc_config *o)
{
	smart_rpc_config_init(o);
	if (in && smart__config_take(o, sizeof(*o),
				     _Alignof(struct smart_rpc_config), in))
		return SMART_EINVAL;
	if (!o->window)
		o->window = 64;
	if (!o->eager_max)
		o->eager_max = 4096;
	if (!o->max_conns)
		o->max_conns = 64;
	if (!o->timeout_ms)
		o->timeout_ms = 5000;
	if (!o->max_pending)
		o->max_pending = 16;
	if (!o->backlog_max)
		o->backlog_max = 4u << 20;
	if (!o->keepalive_ms)
		o->keepalive_ms = 1000;
	if (!o->keepalive_misses)
		o->keepalive_misses = 5;
	if (!o->rndv_max)
		o->rndv_max = 64u << 20;
	if (!o->trace_every)
		o->trace_every = 1024;
	if (!o->qp_cache)
		o->qp_cache = 2;
	else if (o->qp_cache == UINT32_MAX)
		o->qp_cache = 0;
	else if (o->qp_cache > 64)
		return SMART_EINVAL;
	if (!o->slow_poll_us)
		o->slow_poll_us = 1000;
	if (!o->busy_us)
		o->busy_us = 50;
	if (o->window < 2 || o->window > SMART_PROTO_PEER_WINDOW_MAX ||
	    o->eager_max < SMART_PROTO_PEER_MSG_MIN - SMART_MSG_HDR_LEN ||
	    o->eager_max > SMART_PROTO_PEER_MSG_MAX - SMART_MSG_HDR_LEN ||
	    o->max_conns > 4096 || o->max_pending > 1024 ||
	    o->timeout_ms > 3600000 || o->keepalive_ms > 3600000 ||
	    o->keepalive_misses < 2 || o->keepalive_misses > 100 ||
	    o->rndv_max > SMART_PROTO_PEER_RNDV_MAX || o->busy_us > 1000000)
		return SMART_EINVAL;
	o->window = (uint32_t)smart_roundup_pow2(o->window);
	/* whole pages, and never shorter than an eager message */
	if (o->rndv_max < o->eager_max + SMART_MSG_HDR_LEN)
		o->rndv_max = o->eager_max + SMART_MSG_HDR_LEN;
	o->rndv_max = (o->rndv_max + RPC_FRAG - 1) / RPC_FRAG * RPC_FRAG;
	return 0;
}

static void rpc_free(struct smart_rpc *rpc)
{
	smart__rndv_close(rpc);
	free(rpc->handlers);
	free(rpc->conns);
	free(rpc->gens);
	free(rpc->calls);
	free(rpc->reqs);
	free(rpc->pend);
	free(rpc);
}

/* SMART_RPC_OP_PING: the library's own echo. */
static void ping_echo(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)a;
	smart_rpc_reply(q, 0, d, n);
}

/* ---- the tick ----------------------------------------------------------- */

/* The endpoint was not polled for longer than slow_poll_us (X-RDMA's
 * slow-poll detection): its messages waited that long. */
static void slow_poll(struct smart_rpc *rpc, uint64_t now)
{
	uint64_t gap;

	if (!rpc->last_poll || now < rpc->last_poll)
		return;
	gap = smart__rpc_ns(rpc, now - rpc->last_poll);
	rpc->past.slow_polls++;
	if (gap > rpc->past.poll_gap_max_ns)
		rpc->past.poll_gap_max_ns = gap;
}

/* The keepalive judges only a drained CQ (keepalive): after a long stop
 * of this process what the peers sent meanwhile is read first.  A tick
 * whose poll found a full batch (a busy endpoint, or a peer flooding it
 * to keep every verdict off) polls on, without reposting, until the CQ is
 * empty.  Bounded: without reposts no peer completes more receives than
 * were posted (shm refuses a count past them), and sends and READs
 * complete only for what we posted; 1 when it emptied the CQ. */
static int tick_drain(struct smart_rpc *rpc, uint64_t now)
{
	uint64_t polls = (uint64_t)rpc->cfg.max_conns *
				 (2 * rpc->cfg.window + RPC_EXTRA +
				  RPC_SQ_SLACK + RPC_RD_MAX) /
				 SMART_POLL_BATCH +
			 2;
	int n;

	do {
		n = smart__rpc_poll_cq(rpc, now);
	} while (n == SMART_POLL_BATCH && --polls);
	return n >= 0 && n < SMART_POLL_BATCH;
}

int smart__rpc_poll(struct smart_worker *w, void *arg)
{
	struct smart_rpc *rpc = arg;
	uint64_t now = smart__worker_now(w);
	int n;

	if (rpc->in_poll)
		return 0; /* a handler's wait polls the worker */
	rpc->in_poll = 1;
	if (smart_unlikely(now - rpc->last_poll > rpc->slow_cycles))
		slow_poll(rpc, now);
	rpc->last_poll = now;
	if (rpc->dirty)
		smart__rpc_flush_dirty(rpc);
	n = smart__rpc_poll_cq(rpc, now);
	if (rpc->dirty)
		smart__rpc_flush_dirty(rpc);
	if (smart_unlikely(now >= rpc->next_tick)) {
		rpc->next_tick = now + rpc->tick_cycles;
		if (rpc->live_calls)
			smart__rpc_expire_calls(rpc, now);
		smart__rpc_keepalive(rpc, now,
				     n < SMART_POLL_BATCH ||
					     (!SMART_M_RPC_TICK_NO_DRAIN &&
					      tick_drain(rpc, now)));
		smart__rpc_ahead_make(rpc);
		smart__rpc_cache_fill(rpc);
		smart__rpc_cache_trim(rpc);
		if (rpc->dirty)
			smart__rpc_flush_dirty(rpc);
		smart__rpc_listen_service(rpc);
		smart__rpc_stat_service(rpc, 0);
	} else if (!n && now >= rpc->hs_next &&
		   now - rpc->last_busy >= rpc->hs_cycles) {
		smart__rpc_hs_poll(rpc); /* handshakes as they come */
	}
	if (rpc->dead)
		smart__rpc_free_dead(rpc);
	rpc->in_poll = 0;
	return n > 0 ? n : 0;
}

int smart_rpc_create(smart_worker_t *w, const struct smart_rpc_config *cfg,
		     smart_rpc_t **out)
{
	const struct smart_tp_caps *caps;
	struct smart_rpc *rpc;
	int rc;

	if (!w || !out || smart__worker_internal(w))
		return SMART_EINVAL;
	if (smart__worker_poller_has(w, smart__rpc_poll))
		return SMART_EBUSY;
	caps = smart__ctx_caps(smart__worker_ctx(w));
	if (!caps->max_recv_wr)
		return SMART_ENOTSUP;
	rpc = calloc(1, sizeof(*rpc));
	if (!rpc)
		return SMART_ENOMEM;
	rc = cfg_fill(cfg, &rpc->cfg);
	if (rc) {
		free(rpc);
		return rc;
	}
	rpc->w = w;
	rpc->ctx = smart__worker_ctx(w);
	rpc->tp = smart__ctx_tp(rpc->ctx);
	rpc->dom = smart__ctx_domain(rpc->ctx);
	rpc->log = smart__ctx_log(rpc->ctx);
	rpc->lfd = rpc->pfd = rpc->hfd = rpc->sfd = rpc->efd = rpc->tfd = -1;
	rpc->passes_fds = caps->peer_fd;
	rpc->msg_len = (SMART_MSG_HDR_LEN + rpc->cfg.eager_max + 63) & ~63u;
	if (rpc->msg_len > caps->max_msg ||
	    rpc->cfg.window + RPC_EXTRA > caps->max_recv_wr) {
		free(rpc);
		return SMART_EINVAL;
	}
	rpc->slab_len = ((size_t)(2 * rpc->cfg.window + RPC_EXTRA) *
				 rpc->msg_len +
			 4095) &
			~(size_t)4095;
	rpc->tick_cycles = smart__rpc_cycles(rpc, RPC_TICK_NS);
	rpc->hs_cycles = smart__rpc_cycles(rpc, RPC_HS_NS);
	rpc->ka_cycles = smart__rpc_cycles(rpc, rpc->cfg.keepalive_ms * 1e6);
	rpc->slow_cycles = smart__rpc_cycles(rpc, rpc->cfg.slow_poll_us * 1e3);
	rpc->busy_cycles = smart__rpc_cycles(rpc, rpc->cfg.busy_us * 1e3);
	rpc->timeout_cycles = smart__rpc_cycles(rpc, rpc->cfg.timeout_ms * 1e6);
	rpc->trace_left = rpc->cfg.trace_every;
	rpc->req_quota = RPC_REQS / rpc->cfg.max_conns > rpc->cfg.window ?
				 RPC_REQS / rpc->cfg.max_conns :
				 rpc->cfg.window;
	rpc->handlers = calloc(RPC_OPS, sizeof(*rpc->handlers));
	rpc->conns = calloc(rpc->cfg.max_conns, sizeof(*rpc->conns));
	rpc->gens = calloc(rpc->cfg.max_conns, sizeof(*rpc->gens));
	rpc->calls = calloc(RPC_CALLS, sizeof(*rpc->calls));
	rpc->reqs = calloc(RPC_REQS, sizeof(*rpc->reqs));
	rpc->pend = calloc(rpc->cfg.max_pending, sizeof(*rpc->pend));
	rc = SMART_ENOMEM;
	if (!rpc->handlers || !rpc->conns || !rpc->gens || !rpc->calls ||
	    !rpc->reqs || !rpc->pend)
		goto fail;
	for (uint32_t i = 0; i < rpc->cfg.max_pending; i++) {
		rpc->pend[i].fd = -1;
		smart__rpc_fds_none(rpc->pend[i].fd_got);
	}
	rpc->handlers[SMART_RPC_OP_PING].fn = ping_echo;
	for (int i = RPC_CALLS - 1; i >= 0; i--) {
		rpc->calls[i].next = rpc->free_calls;
		rpc->free_calls = &rpc->calls[i];
	}
	for (int i = RPC_REQS - 1; i >= 0; i--) {
		rpc->reqs[i].next = rpc->free_reqs;
		rpc->free_reqs = &rpc->reqs[i];
	}
	/* with an event descriptor: event mode (event.c) and, on shm, the
	 * peers' senders wake this endpoint through it */
	rc = rpc->tp->cq_create(rpc->dom, 1024, SMART_TP_CQ_EVENTS, &rpc->cq);
	if (rc)
		goto fail;
	rc = smart__rndv_open(rpc);
	if (!rc)
		rc = smart__rpc_stat_open(rpc);
	if (rc) {
		rpc->tp->cq_destroy(rpc->cq);
		goto fail;
	}
	rc = smart__worker_poller_add(w, smart__rpc_poll, rpc);
	if (rc) {
		smart__rpc_stat_close(rpc);
		rpc->tp->cq_destroy(rpc->cq);
		goto fail;
	}
	*out = rpc;
	return 0;
fail:
	rpc_free(rpc);
	return rc;
}

int smart_rpc_destroy(smart_rpc_t *rpc)
{
	if (!rpc)
		return 0;
	if (rpc->waiting || rpc->in_poll)
		return SMART_EBUSY;
	smart__rpc_event_close(rpc);
	smart__rpc_stat_close(rpc);
	smart__rpc_listen_close(rpc);
	smart__rpc_conns_close(rpc);
	smart__worker_poller_del(rpc->w, smart__rpc_poll, rpc);
	rpc->tp->cq_destroy(rpc->cq);
	smart__rpc_slabs_free(rpc);
	rpc_free(rpc);
	return 0;
}

int smart_rpc_register(smart_rpc_t *rpc, uint16_t op, smart_rpc_handler_fn fn,
		       void *arg)
{
	if (!rpc || op == SMART_RPC_OP_PING)
		return SMART_EINVAL;
	rpc->handlers[op].fn = fn;
	rpc->handlers[op].arg = arg;
	return 0;
}

int smart_rpc_connect(smart_rpc_t *rpc, const char *hostport,
		      smart_rpc_conn_t **out)
{
	if (!rpc || !hostport || !out || rpc->in_handler)
		return SMART_EINVAL;
	return smart__rpc_dial(rpc, hostport, NULL, out);
}
