/*
 * The messaging data path (include/smart/rpc.h, docs/rpc.md): connections
 * over two-sided QPs, eager messages with the seq-ack window, calls,
 * handlers and replies.  The endpoint object is endpoint.c's, handshakes
 * peer.c's, registered memory slab.c's.
 *
 * Data path: a message is written into its send slot (header + payload,
 * one copy) and queued on the connection's WR chain; chains are posted
 * at the end of each poll (one doorbell for everything a poll produced)
 * or at once for a call.  Receives are reposted in one post_recv per
 * connection per poll.  No system call, lock or allocation on this path,
 * except a reply that meets a full window (it is copied to the backlog).
 *
 * Invariants: msg_int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "msg/msg_int.h"
#include "util/log.h"
#include "util/mutant.h"
#include "util/sockio.h"

/* ---- waiting ----------------------------------------------------------- */

/* One step of a wait: a task yields until woken, the main context polls
 * once.  Callers count themselves in rpc->waiting around their loop. */
static void rpc_block(struct smart_rpc *rpc)
{
	struct smart_worker *w = rpc->w;

	if (w->cur)
		smart__task_wait(w, w->cur);
	else
		smart__worker_poll(w);
}

/* Wait until *flag is set. */
static void rpc_wait_flag(struct smart_rpc *rpc, const int *flag)
{
	rpc->waiting++;
	while (!*(volatile const int *)flag)
		rpc_block(rpc);
	rpc->waiting--;
}

static void wake(struct smart_rpc *rpc, struct smart__task *t)
{
	if (t)
		smart__task_wake(rpc->w, t);
}

/* ---- sending ----------------------------------------------------------- */

static void mark_dirty(struct smart_rpc_conn *c)
{
	if (!c->dirty) {
		c->dirty = 1;
		c->next_dirty = c->rpc->dirty;
		c->rpc->dirty = c;
	}
}

static void conn_fail(struct smart_rpc_conn *c, int err, const char *why);
static void free_dead(struct smart_rpc *rpc);

static void conn_post(struct smart_rpc_conn *c)
{
	int rc;

	if (!c->nchain || c->state != RPC_C_LIVE)
		return;
	rc = c->rpc->tp->post(c->qp, c->chain, c->nchain);
	c->nchain = 0;
	if (rc)
		conn_fail(c, SMART_ECONN, smart_strerror(rc));
}

static uint64_t wr_id(const struct smart_rpc_conn *c, int kind, uint64_t v)
{
	return (uint64_t)c->index | (uint64_t)c->gen << 16 |
	       (uint64_t)kind << 32 | (v & RPC_SEQ_MASK) << 34;
}

/* The next WR of the chain, zeroed; NULL when posting the full chain
 * failed the connection (its slab is gone: nothing may be written). */
static struct smart_tp_wr *chain_add(struct smart_rpc_conn *c)
{
	struct smart_tp_wr *wr;

	if (c->nchain == RPC_CHAIN)
		conn_post(c);
	if (c->state != RPC_C_LIVE)
		return NULL;
	wr = &c->chain[c->nchain++];
	memset(wr, 0, sizeof(*wr));
	return wr;
}

/* The ack this side owes the peer goes with every message. */
static uint32_t take_imm(struct smart_rpc_conn *c, int kind)
{
	c->rx_acked_sent = (uint16_t)c->rx_consumed;
	return smart__msg_imm(kind, c->rx_acked_sent);
}

static int has_room(const struct smart_rpc_conn *c)
{
	return (c->tx_seq - c->tx_acked < c->swin || SMART_M_RPC_NO_WINDOW) &&
	       c->tx_seq - c->tx_done < c->window;
}

/* A message may go now: nothing queued or waiting before it, and room. */
static int may_send(const struct smart_rpc_conn *c)
{
	return c->state == RPC_C_LIVE && !c->bl_head && !c->waiters &&
	       has_room(c);
}

/* Put one data message into the next send slot and on the chain. */
static void send_data(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
		      const void *data, int urgent)
{
	struct smart_tp_wr *wr = chain_add(c);
	uint64_t seq = c->tx_seq;
	uint8_t *slot = c->sbuf + (seq & (c->window - 1)) * c->msg_len;

	if (!wr)
		return;
	c->tx_seq++;
	smart__msg_put_hdr(slot, h);
	if (h->len)
		memcpy(slot + SMART_MSG_HDR_LEN, data, h->len);
	wr->wr_id = wr_id(c, RPC_WR_DATA, seq);
	wr->opcode = SMART_TP_SEND;
	wr->local = slot;
	wr->len = SMART_MSG_HDR_LEN + h->len;
	wr->lkey = c->lkey;
	wr->flags = SMART_TP_IMM;
	/* signalled every sig_mask + 1 messages (the slots behind it are
	 * free when it completes), and whenever someone waits on it */
	if (urgent || (seq & c->sig_mask) == c->sig_mask)
		wr->flags |= SMART_TP_SIGNALED;
	wr->imm = take_imm(c, SMART_MSG_K_DATA);
	c->st.msgs_sent++;
	c->st.bytes_sent += h->len;
	if (urgent && !c->rpc->in_poll)
		conn_post(c);
	else
		mark_dirty(c);
}

static void send_bare(struct smart_rpc_conn *c, int kind)
{
	struct smart_tp_wr *wr = chain_add(c);

	if (!wr)
		return;
	wr->wr_id = wr_id(c, RPC_WR_BARE, 0);
	wr->opcode = SMART_TP_SEND;
	wr->lkey = c->lkey;
	wr->local = c->sbuf;
	wr->flags = SMART_TP_IMM | SMART_TP_SIGNALED;
	wr->imm = take_imm(c, kind);
	c->bare_out++;
	if (kind == SMART_MSG_K_ACK)
		c->st.acks_sent++;
	mark_dirty(c);
}

/* Wait for window room (tasks in FIFO order; the main context polls).
 * SMART_ECONN when the connection failed meanwhile. */
static int wait_room(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct smart_worker *w = rpc->w;
	struct rpc_waiter me = { w->cur, NULL }, **pp;

	if (may_send(c))
		return 0;
	c->st.window_stalls++;
	for (pp = &c->waiters; *pp; pp = &(*pp)->next)
		;
	*pp = &me;
	rpc->waiting++;
	for (;;) {
		if (c->state != RPC_C_LIVE)
			break;
		if (c->waiters == &me && has_room(c) && !c->bl_head)
			break;
		/* our messages may be waiting on the chain for the signal
		 * that frees their slots */
		conn_post(c);
		rpc_block(rpc);
	}
	rpc->waiting--;
	for (pp = &c->waiters; *pp != &me; pp = &(*pp)->next)
		;
	*pp = me.next;
	if (c->waiters)
		wake(rpc, c->waiters->task);
	return c->state == RPC_C_LIVE ? 0 : SMART_ECONN;
}

/* Queue a reply behind the window (handlers cannot wait). */
static void backlog_add(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
			const void *data)
{
	struct rpc_out *o;

	if (c->bl_bytes + h->len + sizeof(*o) > c->rpc->cfg.backlog_max) {
		conn_fail(c, SMART_ECONN, "the peer does not consume its "
			  "replies (backlog full)");
		return;
	}
	o = malloc(sizeof(*o) + h->len);
	if (!o) {
		conn_fail(c, SMART_ENOMEM, "no memory for a reply");
		return;
	}
	o->next = NULL;
	o->h = *h;
	memcpy(o->data, data, h->len);
	if (c->bl_tail)
		c->bl_tail->next = o;
	else
		c->bl_head = o;
	c->bl_tail = o;
	c->bl_bytes += sizeof(*o) + h->len;
	c->st.backlogged++;
}

static void backlog_drain(struct smart_rpc_conn *c)
{
	struct rpc_out *o;

	while ((o = c->bl_head) && c->state == RPC_C_LIVE && has_room(c)) {
		c->bl_head = o->next;
		if (!c->bl_head)
			c->bl_tail = NULL;
		c->bl_bytes -= sizeof(*o) + o->h.len;
		send_data(c, &o->h, o->data, 0);
		free(o);
	}
}

/* ---- users of a dialed connection -------------------------------------- */

/* A call or a send may wait, and another task may close the connection
 * meanwhile: the struct stays until the last of them leaves. */
static void conn_enter(struct smart_rpc_conn *c)
{
	c->users++;
}

static void conn_leave(struct smart_rpc_conn *c)
{
	if (--c->users == 0 && c->freeing)
		smart__rpc_conn_free(c);
}

/* ---- calls ------------------------------------------------------------- */

static struct rpc_call *call_get(struct smart_rpc *rpc)
{
	struct rpc_call *k = rpc->free_calls;
	uint32_t slot;

	if (!k)
		return NULL;
	rpc->free_calls = k->next;
	slot = (uint32_t)(k - rpc->calls);
	if (++rpc->call_gen == (1u << 20))
		rpc->call_gen = 1;
	k->id = rpc->call_gen << 12 | slot;
	k->done = 0;
	k->status = 0;
	k->prev = NULL;
	k->next = rpc->live_calls;
	if (k->next)
		k->next->prev = k;
	rpc->live_calls = k;
	return k;
}

static void call_put(struct smart_rpc *rpc, struct rpc_call *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		rpc->live_calls = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->id = 0;
	k->conn = NULL;
	k->next = rpc->free_calls;
	rpc->free_calls = k;
}

static void call_finish(struct rpc_call *k, int status)
{
	if (k->done)
		return;
	if (status)
		k->conn->st.call_errors++;
	k->status = status;
	k->done = 1;
	wake(k->conn->rpc, k->task);
}

static struct rpc_call *call_find(struct smart_rpc *rpc, uint32_t id)
{
	struct rpc_call *k = &rpc->calls[id & (RPC_CALLS - 1)];

	return id && k->id == id && !k->done ? k : NULL;
}

int smart_rpc_call(smart_rpc_conn_t *c, uint16_t op, const void *req,
		   uint32_t len, void *resp, uint32_t cap, uint32_t *resp_len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_REQ, .op = op, .len = len };
	struct smart_rpc *rpc;
	struct rpc_call *k;
	int rc;

	if (!c || (len && !req) || (cap && !resp))
		return SMART_EINVAL;
	rpc = c->rpc;
	if (len > rpc->cfg.eager_max || rpc->in_handler || c->freeing ||
	    (c->state == RPC_C_LIVE &&
	     SMART_MSG_HDR_LEN + len > c->peer_max))
		return SMART_EINVAL;
	conn_enter(c);
	rc = wait_room(c);
	k = rc ? NULL : call_get(rpc);
	if (!k) {
		conn_leave(c);
		return rc ? rc : SMART_EBUSY;
	}
	k->task = rpc->w->cur;
	k->conn = c;
	k->resp = resp;
	k->cap = cap;
	k->len = 0;
	k->deadline = smart__rdtsc() + (uint64_t)rpc->cfg.timeout_ms * 1000000 *
				  rpc->ctx->clock.cycles_per_ns;
	h.call = k->id;
	c->st.calls++;
	send_data(c, &h, req, 1);
	rpc_wait_flag(rpc, &k->done);
	rc = k->status;
	if (resp_len && (rc == 0 || rc == SMART_ERANGE || k->len))
		*resp_len = k->len;
	call_put(rpc, k);
	conn_leave(c);
	return rc;
}

int smart_rpc_send(smart_rpc_conn_t *c, uint16_t op, const void *data,
		   uint32_t len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_ONEWAY, .op = op,
				   .len = len };
	int rc;

	if (!c || (len && !data) || len > c->rpc->cfg.eager_max ||
	    c->freeing || (c->state == RPC_C_LIVE &&
			   SMART_MSG_HDR_LEN + len > c->peer_max))
		return SMART_EINVAL;
	if (c->rpc->in_poll && !may_send(c))
		return SMART_EAGAIN;	/* a handler cannot wait */
	conn_enter(c);
	rc = wait_room(c);
	if (!rc)
		send_data(c, &h, data, 0);
	conn_leave(c);
	return rc;
}

/* ---- requests ---------------------------------------------------------- */

static void req_unlink(struct smart_rpc_req *q)
{
	struct smart_rpc_conn *c = q->conn;

	if (q->prev)
		q->prev->next = q->next;
	else if (c)
		c->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
}

static void req_put(struct smart_rpc *rpc, struct smart_rpc_req *q)
{
	q->open = 0;
	q->conn = NULL;
	q->prev = NULL;
	q->next = rpc->free_reqs;
	rpc->free_reqs = q;
}

static void reply_on(struct smart_rpc_conn *c, uint32_t call, uint16_t op,
		     int status, const void *data, uint32_t len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_RESP, .op = op,
				   .call = call, .status = status, .len = len };

	if (may_send(c))
		send_data(c, &h, data, 1);
	else if (c->state == RPC_C_LIVE)
		backlog_add(c, &h, data);
}

int smart_rpc_reply(smart_rpc_req_t *q, int status, const void *data,
		    uint32_t len)
{
	struct smart_rpc_conn *c;
	struct smart_rpc *rpc;
	int rc = 0;

	if (!q || (len && !data))
		return SMART_EINVAL;
	if (!q->open)
		return SMART_EINVAL;	/* never handed out, or replied */
	c = q->conn;
	if (!c) {
		/* its connection went: the request slot comes back */
		req_put(q->rpc, q);
		return SMART_ECONN;
	}
	rpc = c->rpc;
	if (status > 0 || status <= SMART_E_LAST) {
		status = SMART_EINVAL;
		len = 0;
	}
	if (len > rpc->cfg.eager_max ||
	    SMART_MSG_HDR_LEN + len > c->peer_max) {
		status = SMART_ERANGE;
		len = 0;
		rc = SMART_EINVAL;
	}
	req_unlink(q);
	if (c->state == RPC_C_LIVE)
		reply_on(c, q->call, q->op, status, data, len);
	else
		rc = SMART_ECONN;
	req_put(rpc, q);
	return rc;
}

/* ---- receiving --------------------------------------------------------- */

static void fill_recv(struct smart_rpc_conn *c, uint32_t slot)
{
	struct smart_tp_recv *r = &c->repost[c->nrepost++];

	r->wr_id = wr_id(c, RPC_WR_RECV, slot);
	r->local = c->rbuf + (size_t)slot * c->msg_len;
	r->len = c->msg_len;
	r->lkey = c->lkey;
}

static void repost(struct smart_rpc_conn *c, uint32_t slot)
{
	fill_recv(c, slot);
	mark_dirty(c);
}

static void on_request(struct smart_rpc_conn *c, const struct smart_msg *m)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_handler *hd = &rpc->handlers[m->h.op];
	struct smart_rpc_req *q = NULL;

	if (m->h.type == SMART_MSG_REQ) {
		if (!hd->fn) {
			reply_on(c, m->h.call, m->h.op, SMART_ENOENT, NULL, 0);
			return;
		}
		q = rpc->free_reqs;
		if (!q) {
			reply_on(c, m->h.call, m->h.op, SMART_EBUSY, NULL, 0);
			return;
		}
		rpc->free_reqs = q->next;
		q->open = 1;
		q->rpc = rpc;
		q->conn = c;
		q->call = m->h.call;
		q->op = m->h.op;
		q->prev = NULL;
		q->next = c->reqs;
		if (q->next)
			q->next->prev = q;
		c->reqs = q;
	} else if (!hd->fn) {
		return;		/* a one-way message nobody serves */
	}
	rpc->in_handler++;
	hd->fn(q, m->payload, m->h.len, hd->arg);
	rpc->in_handler--;
}

static void on_response(struct smart_rpc_conn *c, const struct smart_msg *m)
{
	struct rpc_call *k = call_find(c->rpc, m->h.call);

	if (!k || k->conn != c)
		return;		/* late: the call timed out */
	k->len = m->h.len;
	if (m->h.len > k->cap) {
		call_finish(k, SMART_ERANGE);
		return;
	}
	if (m->h.len)
		memcpy(k->resp, m->payload, m->h.len);
	call_finish(k, m->h.status);
}

/* The peer's cumulative ack, 16 bits on the wire, extended; an ack of more
 * than was sent is a protocol error. */
static int take_ack(struct smart_rpc_conn *c, uint16_t ack)
{
	uint64_t d = (uint16_t)(ack - (uint16_t)c->tx_acked);

	if (d > c->tx_seq - c->tx_acked)
		return SMART_EPROTO;
	c->tx_acked += d;
	if (d && c->waiters)
		wake(c->rpc, c->waiters->task);
	return 0;
}

static void on_recv(struct smart_rpc_conn *c, const struct smart_tp_wc *wc,
		    uint32_t slot)
{
	const uint8_t *buf = c->rbuf + (size_t)slot * c->msg_len;
	struct smart_msg m;

	if (smart__msg_parse(buf, wc->len, !!(wc->flags & SMART_TP_IMM),
			     wc->imm, &m) || take_ack(c, m.ack)) {
		c->st.proto_errors++;
		conn_fail(c, SMART_EPROTO, "malformed message");
		return;
	}
	if (m.kind == SMART_MSG_K_CLOSE) {
		conn_fail(c, SMART_ECONN, NULL);
		return;
	}
	if (m.kind == SMART_MSG_K_DATA) {
		c->st.msgs_recv++;
		c->st.bytes_recv += m.h.len;
		if (m.h.type == SMART_MSG_RESP)
			on_response(c, &m);
		else
			on_request(c, &m);
		if (c->state != RPC_C_LIVE)
			return;
		c->rx_consumed++;
	}
	repost(c, slot);
}

static void on_send_done(struct smart_rpc_conn *c, int kind, uint64_t v)
{
	if (kind == RPC_WR_BARE) {
		c->bare_out--;
		return;
	}
	/* completions come in order: every data SEND up to seq v is done */
	c->tx_done += ((v + 1) - c->tx_done) & RPC_SEQ_MASK;
	if (c->waiters)
		wake(c->rpc, c->waiters->task);
}

static struct smart_rpc_conn *conn_of(struct smart_rpc *rpc, uint64_t id)
{
	uint32_t idx = (uint32_t)(id & 0xffff);
	struct smart_rpc_conn *c;

	if (idx >= rpc->cfg.max_conns)
		return NULL;
	c = rpc->conns[idx];
	return c && c->gen == (uint16_t)(id >> 16) &&
	       c->state == RPC_C_LIVE ? c : NULL;
}

static void on_wc(struct smart_rpc *rpc, const struct smart_tp_wc *wc)
{
	struct smart_rpc_conn *c = conn_of(rpc, wc->wr_id);
	int kind = (int)(wc->wr_id >> 32 & 3);
	uint64_t v = wc->wr_id >> 34;

	if (!c)
		return;		/* of a connection gone */
	if (wc->status != SMART_TP_WC_OK) {
		if (wc->status == SMART_TP_WC_RNR)
			c->st.rnr++;
		conn_fail(c, SMART_ECONN, wc->status == SMART_TP_WC_FLUSH ?
			  NULL : "transport error");
		return;
	}
	if (kind == RPC_WR_RECV && v < c->nrecv)
		on_recv(c, wc, (uint32_t)v);
	else if (kind != RPC_WR_RECV)
		on_send_done(c, kind, v);
}

/* After a poll: reposts, acks owed, backlogs, chains. */
static void flush_dirty(struct smart_rpc *rpc)
{
	struct smart_rpc_conn *c;

	while ((c = rpc->dirty)) {
		rpc->dirty = c->next_dirty;
		c->dirty = 0;
		if (c->state != RPC_C_LIVE)
			continue;
		if (c->nrepost) {
			int rc = rpc->tp->post_recv(c->qp, c->repost,
						    (int)c->nrepost);

			c->nrepost = 0;
			if (rc) {
				conn_fail(c, SMART_ECONN, "cannot repost");
				continue;
			}
		}
		backlog_drain(c);
		if ((uint16_t)((uint16_t)c->rx_consumed - c->rx_acked_sent) >=
		    c->window / 2 && c->bare_out < 2)
			send_bare(c, SMART_MSG_K_ACK);
		conn_post(c);
		c->dirty = 0;	/* what the above marked is done */
	}
}

void smart_rpc_flush(smart_rpc_t *rpc)
{
	if (rpc)
		flush_dirty(rpc);
}

static void expire_calls(struct smart_rpc *rpc, uint64_t now)
{
	for (struct rpc_call *k = rpc->live_calls; k; k = k->next)
		if (!k->done && now > k->deadline) {
			k->conn->st.call_timeouts++;
			call_finish(k, SMART_ETIMEDOUT);
		}
}

int smart__rpc_poll(struct smart_worker *w, void *arg)
{
	struct smart_rpc *rpc = arg;
	struct smart_tp_wc wc[SMART_POLL_BATCH];
	int n, i;

	if (rpc->in_poll)
		return 0;	/* a handler's wait polls the worker */
	rpc->in_poll = 1;
	if (rpc->dirty)
		flush_dirty(rpc);
	n = rpc->tp->poll(rpc->cq, wc, SMART_POLL_BATCH);
	for (i = 0; i < n; i++)
		on_wc(rpc, &wc[i]);
	if (rpc->dirty)
		flush_dirty(rpc);
	if (smart_unlikely(w->now >= rpc->next_tick)) {
		rpc->next_tick = w->now + rpc->tick_cycles;
		if (rpc->live_calls)
			expire_calls(rpc, w->now);
		smart__rpc_listen_service(rpc);
	}
	if (rpc->dead)
		free_dead(rpc);
	rpc->in_poll = 0;
	return n > 0 ? n : 0;
}

int smart_rpc_progress(smart_rpc_t *rpc)
{
	if (!rpc)
		return SMART_EINVAL;
	return smart__worker_poll(rpc->w);
}

/* ---- connections ------------------------------------------------------- */

int smart__rpc_qp_fd(const struct smart_rpc_conn *c)
{
	return c->rpc->tp->qp_fd(c->qp);
}

int smart__rpc_conn_new(struct smart_rpc *rpc, int accepted,
			struct smart_rpc_conn **out)
{
	struct smart_tp_qp_attr a = { 0 };
	struct smart_rpc_conn *c;
	uint32_t idx;
	int rc;

	for (idx = 0; idx < rpc->cfg.max_conns && rpc->conns[idx]; idx++)
		;
	if (idx == rpc->cfg.max_conns)
		return SMART_EBUSY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return SMART_ENOMEM;
	c->rpc = rpc;
	c->index = idx;
	c->gen = ++rpc->gens[idx];
	c->accepted = accepted;
	c->window = rpc->cfg.window;
	c->nrecv = c->window + RPC_EXTRA;
	c->msg_len = rpc->msg_len;
	c->sig_mask = c->window >= 8 ? c->window / 4 - 1 : 0;
	c->repost = calloc(c->nrecv, sizeof(*c->repost));
	rc = c->repost ? smart__rpc_slab_get(rpc, &c->slab) : SMART_ENOMEM;
	if (rc)
		goto fail;
	c->rbuf = c->slab->base;
	c->sbuf = c->rbuf + (size_t)c->nrecv * c->msg_len;
	c->lkey = c->slab->mr->lkey;
	a.max_send_wr = c->window + 16;
	a.max_recv_wr = c->nrecv;
	a.max_msg = c->msg_len;
	rc = rpc->tp->qp_create(rpc->ctx->dom, rpc->cq, &a, &c->qp);
	if (rc)
		goto fail;
	for (uint32_t i = 0; i < c->nrecv; i++)
		fill_recv(c, i);
	rc = rpc->tp->post_recv(c->qp, c->repost, (int)c->nrecv);
	c->nrepost = 0;
	if (rc)
		goto fail;
	c->state = RPC_C_FAILED;	/* until smart__rpc_conn_up */
	rpc->conns[idx] = c;
	*out = c;
	return 0;
fail:
	if (c->qp)
		rpc->tp->qp_destroy(c->qp);
	if (c->slab)
		smart__rpc_slab_put(rpc, c->slab);
	free(c->repost);
	free(c);
	return rc;
}

int smart__rpc_conn_blob(struct smart_rpc_conn *c, void *blob, size_t *len)
{
	return c->rpc->tp->qp_blob(c->qp, blob, len);
}

int smart__rpc_conn_up(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer, int fd)
{
	int rc = c->rpc->tp->qp_connect_peer(c->qp, NULL, peer->blob,
					     peer->blob_len, fd);

	if (rc)
		return rc;
	c->swin = peer->window < c->window ? peer->window : c->window;
	c->peer_max = peer->max_msg;
	c->state = RPC_C_LIVE;
	return 0;
}

/* Release what the connection holds on the transport and the endpoint;
 * the struct and its index stay (RPC_C_FAILED) for its owner. */
static void conn_release(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_out *o;

	if (c->qp) {
		rpc->tp->qp_destroy(c->qp);
		c->qp = NULL;
	}
	if (c->slab) {
		smart__rpc_slab_put(rpc, c->slab);
		c->slab = NULL;
	}
	while ((o = c->bl_head)) {
		c->bl_head = o->next;
		free(o);
	}
	c->bl_tail = NULL;
	c->bl_bytes = 0;
	c->nchain = 0;
	c->nrepost = 0;
}

static void conn_fail(struct smart_rpc_conn *c, int err, const char *why)
{
	struct smart_rpc *rpc = c->rpc;

	if (c->state != RPC_C_LIVE)
		return;
	c->state = RPC_C_FAILED;
	if (why) {
		rpc->past.conns_failed++;
		smart__warn(&rpc->ctx->log, "rpc: connection %u (%s) closed: %s",
			    c->index, c->peer, why);
	}
	for (struct rpc_call *k = rpc->live_calls; k; k = k->next)
		if (k->conn == c)
			call_finish(k, err == SMART_EPROTO ? SMART_EPROTO
							   : SMART_ECONN);
	for (struct smart_rpc_req *q = c->reqs; q; q = q->next)
		q->conn = NULL;	/* their replies get SMART_ECONN */
	c->reqs = NULL;
	for (struct rpc_waiter *x = c->waiters; x; x = x->next)
		wake(rpc, x->task);
	conn_release(c);
	if (c->accepted) {
		c->next_dead = rpc->dead;
		rpc->dead = c;
	}
}

void smart__rpc_conn_free(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct smart_rpc_conn **pp;

	conn_release(c);
	for (pp = &rpc->dirty; *pp; pp = &(*pp)->next_dirty)
		if (*pp == c) {
			*pp = c->next_dirty;
			break;
		}
	if (rpc->conns[c->index] == c) {
		rpc->conns[c->index] = NULL;
		smart__rpc_stats_add(&rpc->past, &c->st);
	}
	free(c->repost);
	free(c);
}

static void free_dead(struct smart_rpc *rpc)
{
	struct smart_rpc_conn *c;

	while ((c = rpc->dead)) {
		rpc->dead = c->next_dead;
		smart__rpc_conn_free(c);
	}
}

/* Tell the peer we go (a CLOSE, waited for a bounded time so that it
 * leaves before the QP is destroyed). */
static void conn_say_close(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	int64_t until = smart__now_ms() + RPC_CLOSE_WAIT_MS;

	send_bare(c, SMART_MSG_K_CLOSE);
	conn_post(c);
	while (c->state == RPC_C_LIVE && c->bare_out &&
	       smart__now_ms() < until && !rpc->in_poll)
		smart__worker_poll(rpc->w);
}

void smart_rpc_close(smart_rpc_conn_t *c)
{
	if (!c || c->accepted)
		return;		/* accepted ones are the endpoint's */
	if (c->freeing)
		return;		/* closed already, its users still inside */
	if (c->state == RPC_C_LIVE)
		conn_say_close(c);
	conn_fail(c, SMART_ECONN, NULL);
	if (c->users)
		c->freeing = 1;	/* the last of them frees it */
	else
		smart__rpc_conn_free(c);
}


void smart__rpc_conns_close(struct smart_rpc *rpc)
{
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (!c)
			continue;
		if (c->state == RPC_C_LIVE)
			conn_say_close(c);
		c->accepted = 0;	/* freed here, handle or not */
		conn_fail(c, SMART_ECONN, NULL);
		smart__rpc_conn_free(c);
	}
	free_dead(rpc);
	for (uint32_t i = 0; i < RPC_REQS; i++)
		rpc->reqs[i].conn = NULL;
}
