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
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	struct smart__task *t = smart__worker_task(w);

	if (t)
		smart__task_wait(w, t);
	else
		smart__worker_wait_poll(w);
}

/* One step of a channel producer's wait for credits, the main context's:
 * an empty poll yields the CPU at once, not after the worker's spin.  The
 * credits come back only after the consumer took slots (all of them in
 * flight, each up to a slot of bytes): on a CPU it shares with the
 * producer, every spin before the yield is a hand-off the consumer waits
 * for (smart-bench chan, 32 KiB at load 8: 2.0 GB/s with the 20 us spin,
 * 8-10 with none); on a core of its own a yield with nothing else
 * runnable returns at once. */
static void rpc_block_chan(struct smart_rpc *rpc)
{
	struct smart_worker *w = rpc->w;
	struct smart__task *t = smart__worker_task(w);

	if (t)
		smart__task_wait(w, t);
	else if (!smart__worker_poll(w))
		sched_yield();
}

/* One step of a wait that nothing wakes (staging room, a socket): a task
 * yields, the main context polls the worker once (and pauses when that
 * found nothing). */
/* One step of a wait nothing wakes (a task yields, the main
 * context polls) */
static void smart__rpc_step(struct smart_rpc *rpc)
{
	struct smart_worker *w = rpc->w;

	if (smart__worker_task(w))
		smart_task_yield(w);
	else if (!smart__worker_poll(w))
		smart__idle_pause();
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

/* The next WR of the chain with its wr_id, for rndv.c's READs. */
struct smart_tp_wr *smart__rpc_wr(struct smart_rpc_conn *c, int kind,
				  uint64_t v)
{
	struct smart_tp_wr *wr = chain_add(c);

	if (wr) {
		wr->wr_id = wr_id(c, kind, v);
		mark_dirty(c);
	}
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

/* A message of 0 bytes: ACK and CLOSE as SENDs, the keepalive's PING and
 * PONG as zero-byte WRITEs with immediate (X-RDMA's probe; no region is
 * needed for 0 bytes, transport.h rule 8). */
static void send_bare(struct smart_rpc_conn *c, int kind)
{
	struct smart_tp_wr *wr = chain_add(c);
	int probe = kind == SMART_MSG_K_PING || kind == SMART_MSG_K_PONG;

	if (!wr)
		return;
	wr->wr_id = wr_id(c, RPC_WR_BARE, (uint64_t)kind);
	wr->opcode = probe ? SMART_TP_WRITE_IMM : SMART_TP_SEND;
	wr->lkey = c->lkey;
	wr->local = c->sbuf;
	wr->flags = SMART_TP_IMM | SMART_TP_SIGNALED;
	wr->imm = take_imm(c, kind);
	c->bare_out++;
	if (kind == SMART_MSG_K_ACK)
		c->st.acks_sent++;
	mark_dirty(c);
}

/* We end a connection whose peer broke the protocol or stopped taking
 * its messages: a CLOSE first, best effort and not waited for (we may be
 * in a poll), so that the peer learns now instead of at its keepalive
 * bound, and lets go of what it holds for us (its staging, requests). */
static void conn_cut(struct smart_rpc_conn *c, int err, const char *why)
{
	if (c->state == RPC_C_LIVE && !SMART_M_RPC_CUT_SILENT &&
	    !c->rpc->tp->qp_in_error(c->qp)) {
		send_bare(c, SMART_MSG_K_CLOSE);
		conn_post(c);
		c->st.cut_closes++;
	}
	conn_fail(c, err, why);
}

void smart__rpc_fail(struct smart_rpc_conn *c, int err, const char *why)
{
	conn_cut(c, err, why);
}

/* Has the caller's deadline (TSC) passed? */
static int past(uint64_t deadline)
{
	return smart__rdtsc() > deadline;
}

/* Wait for window room (tasks in FIFO order; the main context polls)
 * until deadline (TSC; a waiting task is woken by the tick that finds it
 * past, waiters_expire).  SMART_ECONN when the connection failed
 * meanwhile, SMART_ETIMEDOUT when the peer gave no room in time (a peer
 * that never acks holds nobody longer than the caller asked). */
static int wait_room(struct smart_rpc_conn *c, uint64_t deadline)
{
	struct smart_rpc *rpc = c->rpc;
	struct smart_worker *w = rpc->w;
	struct rpc_waiter me = { smart__worker_task(w), NULL, deadline }, **pp;
	int rc = 0;

	if (may_send(c))
		return 0;
	c->st.window_stalls++;
	for (pp = &c->waiters; *pp; pp = &(*pp)->next)
		;
	*pp = &me;
	rpc->waiting++;
	for (;;) {
		if (c->state != RPC_C_LIVE) {
			rc = SMART_ECONN;
			break;
		}
		if (c->waiters == &me && has_room(c) && !c->bl_head)
			break;
		if (past(deadline) && !SMART_M_RPC_NO_ROOM_DEADLINE) {
			rc = SMART_ETIMEDOUT;
			break;
		}
		/* our messages may be waiting on the chain for the signal
		 * that frees their slots */
		conn_post(c);
		if (c->chan)
			rpc_block_chan(rpc);
		else
			rpc_block(rpc);
	}
	rpc->waiting--;
	for (pp = &c->waiters; *pp != &me; pp = &(*pp)->next)
		;
	*pp = me.next;
	if (c->waiters)
		wake(rpc, c->waiters->task);
	return rc;
}

/* ---- channels (chan.c) ------------------------------------------------ */

/* A credit and a free local slot for a channel's producer: waits like a
 * send (the endpoint's timeout), except where nothing may wait (a
 * handler, the poll): SMART_EAGAIN. */
int smart__rpc_chan_room(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;

	if (c->state != RPC_C_LIVE)
		return SMART_ECONN;
	if (may_send(c) || SMART_M_RPC_CHAN_NO_CREDIT)
		return 0;
	if (rpc->in_handler || rpc->in_poll) {
		c->st.window_stalls++;
		return SMART_EAGAIN;
	}
	return wait_room(c, smart__rdtsc() + rpc->timeout_cycles);
}

/* Post a channel's WRITE (w: opcode, local, len, lkey, remote, rkey) as
 * data message tx_seq: signalled as data SENDs are, its immediate (IMM)
 * naming the slot and carrying our ack. */
void smart__rpc_chan_post(struct smart_rpc_conn *c, struct smart_tp_wr *w,
			  uint32_t slot)
{
	struct smart_tp_wr *wr = chain_add(c);
	uint64_t seq = c->tx_seq;

	if (!wr)
		return;
	*wr = *w;
	c->tx_seq++;
	wr->wr_id = wr_id(c, RPC_WR_DATA, seq);
	if ((seq & c->sig_mask) == c->sig_mask)
		wr->flags |= SMART_TP_SIGNALED;
	if (wr->opcode == SMART_TP_WRITE_IMM) {
		wr->flags |= SMART_TP_IMM;
		wr->imm = take_imm(c, SMART_MSG_K_CHAN) |
			  slot << SMART_MSG_CHAN_SLOT_SHIFT;
	}
	c->st.chan_slots_sent++;
	if (!c->rpc->in_poll)
		conn_post(c);
	else
		mark_dirty(c);
}

/* 1 when a producer's reserve finds a credit without waiting. */
int smart__rpc_chan_room_now(const struct smart_rpc_conn *c)
{
	return c->state == RPC_C_LIVE && may_send(c);
}

static uint32_t ack_every(const struct smart_rpc_conn *c);

/* The consumer released a slot: its credit goes back (the ack), at once
 * when a bare ACK is due (outside the poll: a producer waiting for it
 * should not wait for our next poll too), else with the poll's flush. */
void smart__rpc_chan_release(struct smart_rpc_conn *c)
{
	if (c->state != RPC_C_LIVE)
		return;
	c->rx_consumed++;
	if (!c->rpc->in_poll && (uint16_t)((uint16_t)c->rx_consumed -
					   c->rx_acked_sent) >= ack_every(c)) {
		send_bare(c, SMART_MSG_K_ACK);
		conn_post(c);
		smart__worker_hand_off(c->rpc->w);
	} else {
		mark_dirty(c);
	}
}

/* A channel's window: its slots (at most the endpoint's window, which
 * sized the connection's receives and send queue). */
void smart__rpc_set_window(struct smart_rpc_conn *c, uint32_t window)
{
	c->window = window;
	c->sig_mask = window >= 8 ? window / 4 - 1 : 0;
}

/* Every tick: wake the tasks waiting for room on c whose deadline passed
 * (nothing else would: no ack comes from a peer that gives no room). */
static void waiters_expire(struct smart_rpc_conn *c, uint64_t now)
{
	for (struct rpc_waiter *x = c->waiters; x; x = x->next)
		if (now > x->deadline)
			wake(c->rpc, x->task);
}

/* Queue a reply behind the window (handlers cannot wait). */
static void backlog_add(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
			const void *data)
{
	struct rpc_out *o;

	if (c->bl_bytes + h->len + sizeof(*o) > c->rpc->cfg.backlog_max) {
		conn_cut(c, SMART_ECONN,
			 "the peer does not consume its "
			 "replies (backlog full)");
		return;
	}
	o = malloc(sizeof(*o) + h->len);
	if (!o) {
		conn_cut(c, SMART_ENOMEM, "no memory for a reply");
		return;
	}
	o->next = NULL;
	o->h = *h;
	if (h->len) /* a reply without data has none (NULL) */
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

/* How len payload bytes go on c: 0 eagerly, 1 by rendezvous, or
 * SMART_EINVAL when longer than either side takes. */
static int msg_mode(const struct smart_rpc_conn *c, uint32_t len)
{
	if (len <= c->rpc->cfg.eager_max &&
	    (c->state != RPC_C_LIVE || SMART_MSG_HDR_LEN + len <= c->peer_max))
		return 0;
	if (len <= c->rpc->cfg.rndv_max && len <= c->peer_rndv)
		return 1;
	return SMART_EINVAL;
}

/* Stage a rendezvous payload, waiting for staging room (a task yields,
 * the main context polls) until the caller's deadline (TSC). */
static int stage_wait(struct smart_rpc_conn *c, const void *data, uint32_t len,
		      struct smart_msg_rndv *d, uint64_t deadline)
{
	struct smart_rpc *rpc = c->rpc;
	int rc;

	rpc->waiting++;
	while ((rc = smart__rndv_stage(c, data, len, d)) == SMART_EAGAIN) {
		if (c->state != RPC_C_LIVE) {
			rc = SMART_ECONN;
			break;
		}
		if (past(deadline)) {
			rc = SMART_ETIMEDOUT;
			break;
		}
		smart__rpc_step(rpc);
	}
	rpc->waiting--;
	return rc;
}

/* Make room for a message of len bytes on c before deadline (TSC): its
 * payload staged when it goes by rendezvous (*h then says so, *desc is
 * its payload and *rid names what was staged), window room.  Nothing
 * held on error. */
static int send_prepare(struct smart_rpc_conn *c, int mode, const void *data,
			uint32_t len, struct smart_msg_hdr *h, uint8_t *desc,
			uint32_t *rid, uint64_t deadline)
{
	struct smart_msg_rndv d = { 0 };
	int rc = mode ? stage_wait(c, data, len, &d, deadline) : 0;

	if (rc || !mode) /* nothing staged on error */
		return rc ? rc : wait_room(c, deadline);
	rc = wait_room(c, deadline);
	if (rc || c->state != RPC_C_LIVE) {
		smart__rndv_unstage(c, d.rid);
		return rc ? rc : SMART_ECONN;
	}
	*rid = d.rid;
	smart__msg_put_rndv(desc, &d);
	h->flags = SMART_MSG_F_RNDV;
	h->len = SMART_MSG_RNDV_LEN;
	return 0;
}

static void trace_call(const struct rpc_call *k, const struct smart_msg_hdr *h,
		       uint64_t t0, int rndv, uint32_t len, int status)
{
	struct smart_rpc *rpc = k->conn->rpc;
	uint64_t now = smart__rdtsc();
	struct smart_rpc_trace t = {
		.id = k->id,
		.op = h->op,
		.side = SMART_RPC_TRACE_CALL,
		.rndv = (uint8_t)rndv,
		.status = status,
		.len = len,
		.start_ns = smart_now_ns() - smart__rpc_ns(rpc, now - t0),
		.queue_ns = smart__rpc_ns(rpc, k->t_sent - t0),
		.rtt_ns = smart__rpc_ns(rpc, now - k->t_sent)
	};

	smart__rpc_trace_add(rpc, &t);
}

int smart_rpc_call(smart_rpc_conn_t *c, uint16_t op, const void *req,
		   uint32_t len, void *resp, uint32_t cap, uint32_t *resp_len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_REQ,
				   .op = op,
				   .len = len };
	uint8_t desc[SMART_MSG_RNDV_LEN];
	struct smart_rpc *rpc;
	struct rpc_call *k;
	uint32_t rid = 0;
	uint64_t t0, deadline;
	int rc, mode, traced;

	if (!c || (len && !req) || (cap && !resp))
		return SMART_EINVAL;
	rpc = c->rpc;
	mode = msg_mode(c, len);
	if (mode < 0 || rpc->in_handler || c->freeing)
		return SMART_EINVAL;
	traced = !--rpc->trace_left;
	if (traced)
		rpc->trace_left = rpc->cfg.trace_every;
	t0 = smart__rdtsc();
	deadline = t0 + rpc->timeout_cycles;
	conn_enter(c);
	rc = send_prepare(c, mode, req, len, &h, desc, &rid, deadline);
	k = rc ? NULL : call_get(rpc);
	if (!k) {
		if (!rc && mode)
			smart__rndv_unstage(c, rid);
		if (rc == SMART_ETIMEDOUT)
			c->st.call_timeouts++;
		conn_leave(c);
		return rc ? rc : SMART_EBUSY;
	}
	k->task = smart__worker_task(rpc->w);
	k->conn = c;
	k->resp = resp;
	k->cap = cap;
	k->len = 0;
	k->deadline = deadline;
	h.call = k->id;
	c->st.calls++;
	if (traced) {
		h.flags |= SMART_MSG_F_TRACE;
		k->t_sent = smart__rdtsc();
	}
	send_data(c, &h, mode ? desc : req, 1);
	rpc_wait_flag(rpc, &k->done);
	rc = k->status;
	if (traced)
		trace_call(k, &h, t0, mode, len, rc);
	if (resp_len && (rc == 0 || rc == SMART_ERANGE || k->len))
		*resp_len = k->len;
	call_put(rpc, k);
	conn_leave(c);
	return rc;
}

int smart_rpc_send(smart_rpc_conn_t *c, uint16_t op, const void *data,
		   uint32_t len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_ONEWAY,
				   .op = op,
				   .len = len };
	uint8_t desc[SMART_MSG_RNDV_LEN];
	uint32_t rid;
	int rc, mode;

	if (!c || (len && !data) || c->freeing)
		return SMART_EINVAL;
	mode = msg_mode(c, len);
	if (mode < 0)
		return mode;
	if (c->rpc->in_poll && (!may_send(c) || mode))
		return SMART_EAGAIN; /* a handler cannot wait */
	conn_enter(c);
	rc = send_prepare(c, mode, data, len, &h, desc, &rid,
			  smart__rdtsc() + c->rpc->timeout_cycles);
	if (!rc)
		send_data(c, &h, mode ? desc : data, 0);
	conn_leave(c);
	return rc;
}

/* ---- requests ---------------------------------------------------------- */

static void req_unlink(struct smart_rpc_req *q)
{
	struct smart_rpc_conn *c = q->conn;

	if (c)
		c->nreqs--;
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

/* A message from the poll (a reply, a DONE): sent, or queued behind the
 * window when there is no room (handlers cannot wait). */
void smart__rpc_queue(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
		      const void *data)
{
	if (may_send(c))
		send_data(c, h, data, 1);
	else if (c->state == RPC_C_LIVE)
		backlog_add(c, h, data);
}

static void reply_on(struct smart_rpc_conn *c, uint32_t call, uint16_t op,
		     int status, const void *data, uint32_t len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_RESP,
				   .op = op,
				   .call = call,
				   .status = status,
				   .len = len };

	smart__rpc_queue(c, &h, data);
}

/* A reply by rendezvous: staged at once (a reply never waits), or, when
 * the staging region is full, SMART_EBUSY for both sides. */
static int reply_rndv(struct smart_rpc_conn *c, const struct smart_rpc_req *q,
		      int status, const void *data, uint32_t len)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_RESP,
				   .op = q->op,
				   .call = q->call,
				   .status = status,
				   .flags = SMART_MSG_F_RNDV,
				   .len = SMART_MSG_RNDV_LEN };
	uint8_t desc[SMART_MSG_RNDV_LEN];
	struct smart_msg_rndv d;

	if (smart__rndv_stage(c, data, len, &d)) {
		reply_on(c, q->call, q->op, SMART_EBUSY, NULL, 0);
		return SMART_EBUSY;
	}
	smart__msg_put_rndv(desc, &d);
	smart__rpc_queue(c, &h, desc);
	return 0;
}

int smart_rpc_req_check(const smart_rpc_req_t *q)
{
	if (!q || !q->open)
		return SMART_EINVAL;
	return (q->conn && q->conn->state == RPC_C_LIVE) ||
			       SMART_M_RPC_REQ_ALWAYS_LIVE ?
		       0 :
		       SMART_ECONN;
}

int smart_rpc_reply(smart_rpc_req_t *q, int status, const void *data,
		    uint32_t len)
{
	struct smart_rpc_conn *c;
	struct smart_rpc *rpc;
	int rc = 0, mode;

	if (!q || (len && !data))
		return SMART_EINVAL;
	if (!q->open)
		return SMART_EINVAL; /* never handed out, or replied */
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
	mode = msg_mode(c, len);
	if (mode < 0) {
		status = SMART_ERANGE;
		len = 0;
		rc = SMART_EINVAL;
		mode = 0;
	}
	req_unlink(q);
	if (c->state != RPC_C_LIVE)
		rc = SMART_ECONN;
	else if (mode)
		rc = reply_rndv(c, q, status, data, len);
	else
		reply_on(c, q->call, q->op, status, data, len);
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

/* Run a traced request's handler: how long the request waited since the
 * poll that found it (or since its descriptor came, for a rendezvous) and
 * how long the handler ran. */
static void trace_handler(struct smart_rpc_conn *c,
			  const struct smart_msg_hdr *h,
			  const struct rpc_handler *hd, struct smart_rpc_req *q,
			  const void *payload)
{
	struct smart_rpc *rpc = c->rpc;
	uint64_t found = h->flags & SMART_MSG_F_RNDV ?
				 c->rin.t_start :
				 smart__worker_now(rpc->w);
	uint64_t t0 = smart__rdtsc(), t1;
	struct smart_rpc_trace t = { .id = h->call,
				     .op = h->op,
				     .side = SMART_RPC_TRACE_HANDLER,
				     .rndv = !!(h->flags & SMART_MSG_F_RNDV),
				     .len = h->len };

	hd->fn(q, payload, h->len, hd->arg);
	t1 = smart__rdtsc();
	t.start_ns = smart_now_ns() - smart__rpc_ns(rpc, t1 - found);
	t.queue_ns = smart__rpc_ns(rpc, t0 > found ? t0 - found : 0);
	t.handler_ns = smart__rpc_ns(rpc, t1 - t0);
	smart__rpc_trace_add(rpc, &t);
}

static void on_request(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
		       const void *payload)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_handler *hd = &rpc->handlers[h->op];
	struct smart_rpc_req *q = NULL;

	if (h->type == SMART_MSG_REQ) {
		if (!hd->fn) {
			reply_on(c, h->call, h->op, SMART_ENOENT, NULL, 0);
			return;
		}
		/* a peer past its quota is answered as when all are taken:
		 * it cannot take the others' requests */
		q = c->nreqs < rpc->req_quota || SMART_M_RPC_NO_REQ_QUOTA ?
			    rpc->free_reqs :
			    NULL;
		if (!q) {
			reply_on(c, h->call, h->op, SMART_EBUSY, NULL, 0);
			return;
		}
		c->nreqs++;
		rpc->free_reqs = q->next;
		q->open = 1;
		q->rpc = rpc;
		q->conn = c;
		q->call = h->call;
		q->op = h->op;
		q->prev = NULL;
		q->next = c->reqs;
		if (q->next)
			q->next->prev = q;
		c->reqs = q;
	} else if (!hd->fn) {
		return; /* a one-way message nobody serves */
	}
	rpc->in_handler++;
	if (smart_unlikely(h->flags & SMART_MSG_F_TRACE))
		trace_handler(c, h, hd, q, payload);
	else
		hd->fn(q, payload, h->len, hd->arg);
	rpc->in_handler--;
}

static void on_response(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
			const void *payload)
{
	struct rpc_call *k = call_find(c->rpc, h->call);

	if (!k || k->conn != c)
		return; /* late: the call timed out */
	k->len = h->len;
	if (h->len > k->cap) {
		call_finish(k, SMART_ERANGE);
		return;
	}
	if (h->len)
		memcpy(k->resp, payload, h->len);
	call_finish(k, h->status);
}

/* A message's payload is here (eager, or READ by rendezvous): handled. */
void smart__rpc_deliver(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
			const void *data, uint32_t len)
{
	struct smart_msg_hdr x = *h;

	x.len = len;
	if (x.type == SMART_MSG_RESP)
		on_response(c, &x, data);
	else
		on_request(c, &x, data);
}

/* A descriptor: READ for it, unless its response has no call waiting for
 * it any more or is longer than the call takes (DONE at once: nothing is
 * READ, and the call gets SMART_ERANGE with the length), or its request
 * or one-way message has no handler (DONE at once, a call answered
 * SMART_ENOENT as an eager one is: a peer cannot make us READ for an op
 * nobody serves). */
static void rndv_begin(struct smart_rpc_conn *c, const struct smart_msg *m)
{
	struct rpc_call *k;

	if (m->h.type != SMART_MSG_RESP && !c->rpc->handlers[m->h.op].fn &&
	    !SMART_M_RPC_RNDV_READS_UNSERVED) {
		smart__rndv_send_done(c, m->rndv.rid);
		if (m->h.type == SMART_MSG_REQ)
			reply_on(c, m->h.call, m->h.op, SMART_ENOENT, NULL, 0);
		return;
	}
	if (m->h.type == SMART_MSG_RESP) {
		k = call_find(c->rpc, m->h.call);
		if (k && k->conn != c)
			k = NULL;
		if (!k || m->rndv.len > k->cap) {
			if (k) {
				k->len = m->rndv.len;
				call_finish(k, SMART_ERANGE);
			}
			smart__rndv_send_done(c, m->rndv.rid);
			return;
		}
	}
	smart__rndv_start(c, m);
}

/* One data message, in order: handled, its receive given back. */
static void on_data(struct smart_rpc_conn *c, const struct smart_msg *m,
		    uint32_t slot)
{
	c->st.msgs_recv++;
	if (m->h.type == SMART_MSG_DONE)
		smart__rndv_done(c, m->h.call);
	else if (m->h.flags & SMART_MSG_F_RNDV)
		rndv_begin(c, m);
	else
		smart__rpc_deliver(c, &m->h, m->payload, m->h.len);
	if (c->state != RPC_C_LIVE)
		return;
	c->st.bytes_recv += m->h.flags & SMART_MSG_F_RNDV ? m->rndv.len :
							    m->h.len;
	c->rx_consumed++;
	repost(c, slot);
}

/* Data messages behind a rendezvous wait, their receives kept. */
static void held_add(struct smart_rpc_conn *c, const struct smart_msg *m,
		     uint32_t slot)
{
	struct rpc_held *x = &c->held[(c->held_head + c->held_n) % c->nrecv];

	x->m = *m;
	x->slot = slot;
	c->held_n++;
	c->st.rndv_held++;
}

void smart__rpc_held_drain(struct smart_rpc_conn *c)
{
	while (c->held_n && c->rin.state == RPC_RIN_NONE &&
	       c->state == RPC_C_LIVE) {
		struct rpc_held x = c->held[c->held_head];

		c->held_head = (c->held_head + 1) % c->nrecv;
		c->held_n--;
		on_data(c, &x.m, x.slot);
	}
}

/* The peer's cumulative ack, 16 bits on the wire, extended; an ack of more
 * than was sent is a protocol error. */
static int take_ack(struct smart_rpc_conn *c, uint16_t ack)
{
	uint64_t d = (uint16_t)(ack - (uint16_t)c->tx_acked);

	if (d > c->tx_seq - c->tx_acked)
		return SMART_EPROTO;
	c->tx_acked += d;
	if (d) {
		c->ack_wait = 0; /* progress: the bound starts again */
		if (c->waiters)
			wake(c->rpc, c->waiters->task);
	}
	return 0;
}

/* The bytes of a receive's slot the parse may read, or -1 when what
 * consumed the receive is not what the protocol sends for that kind
 * (wire/msg.h): DATA, ACK and CLOSE come by SEND, whose bytes are the
 * slot's first len (transport.h rule 8: never more than the receive's
 * length; checked again, the slot is msg_len long); PING and PONG by a
 * WRITE_IMM of 0 bytes (send_bare), which put nothing in the slot.  So
 * the parse reads only bytes this very message wrote: whatever an
 * earlier message, or the connection that had this slab before, left in
 * the slot is never read (docs/rpc.md §4). */
static int64_t recv_bytes(const struct smart_rpc_conn *c,
			  const struct smart_tp_wc *wc)
{
	uint32_t kind = wc->imm >> 16 & 0xf;
	int probe = kind == SMART_MSG_K_PING || kind == SMART_MSG_K_PONG;

	if (SMART_M_RPC_TRUSTS_RECV_KIND)
		return wc->len;
	if (wc->recv_op == SMART_TP_SEND)
		return wc->len <= c->msg_len && !probe ? (int64_t)wc->len : -1;
	if (wc->recv_op == SMART_TP_WRITE_IMM)
		return !wc->len && probe ? 0 : -1;
	return -1;
}

/* A peer broke a channel's protocol (or sent a channel's word on an
 * ordinary connection): cut, counted; the channel's next says so. */
static void chan_cut(struct smart_rpc_conn *c, const char *why)
{
	c->st.proto_errors++;
	if (c->chan) {
		c->chan->err = SMART_EPROTO;
		c->chan->st.proto_errors++;
	}
	conn_cut(c, SMART_EPROTO, why);
}

/* A channel's WRITE_IMM (chan.c checks it); its receive carries no
 * bytes, so it goes back at once; the slot is acked only on release. */
static void on_chan(struct smart_rpc_conn *c, const struct smart_tp_wc *wc,
		    uint32_t slot)
{
	if (smart__chan_landed(c, wc) || take_ack(c, (uint16_t)wc->imm)) {
		chan_cut(c, "a channel slot out of protocol");
		return;
	}
	repost(c, slot);
}

static void on_recv(struct smart_rpc_conn *c, const struct smart_tp_wc *wc,
		    uint32_t slot)
{
	const uint8_t *buf = c->rbuf + (size_t)slot * c->msg_len;
	int64_t got;
	struct smart_msg m;

	if ((wc->imm >> 16 & 0xf) == SMART_MSG_K_CHAN &&
	    (wc->flags & SMART_TP_IMM)) {
		on_chan(c, wc, slot);
		return;
	}
	got = recv_bytes(c, wc);
	if (got < 0 ||
	    smart__msg_parse(buf, (uint32_t)got, !!(wc->flags & SMART_TP_IMM),
			     wc->imm, &m) ||
	    take_ack(c, m.ack)) {
		c->st.proto_errors++;
		conn_cut(c, SMART_EPROTO, "malformed message");
		return;
	}
	if (m.kind == SMART_MSG_K_DATA && c->chan &&
	    !SMART_M_RPC_CHAN_TAKES_DATA) {
		/* a channel carries slots and bare messages only: a data
		 * message would count as a released slot (rx_consumed) */
		chan_cut(c, "a data message on a channel");
		return;
	}
	switch (m.kind) {
	case SMART_MSG_K_CLOSE:
		conn_fail(c, SMART_ECONN, NULL);
		return;
	case SMART_MSG_K_PING:
		send_bare(c, SMART_MSG_K_PONG);
		break;
	case SMART_MSG_K_PONG:
		if (c->ping_out) {
			c->ping_out = 0;
			c->rtt_ns = smart__rpc_ns(c->rpc,
						  c->last_rx - c->ping_at);
		}
		break;
	}
	if (m.kind != SMART_MSG_K_DATA)
		repost(c, slot);
	else if (c->rin.state != RPC_RIN_NONE || c->held_n)
		held_add(c, &m, slot);
	else
		on_data(c, &m, slot);
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
	return c && c->gen == (uint16_t)(id >> 16) && c->state == RPC_C_LIVE ?
		       c :
		       NULL;
}

/* Why a WR failed, for the log (transport.h's statuses). */
static const char *wc_why(int status)
{
	static const char *const why[] = {
		[SMART_TP_WC_REM_ACCESS] = "transport error: remote access",
		[SMART_TP_WC_LOC_PROT] = "transport error: local protection",
		[SMART_TP_WC_BAD_WR] = "transport error: bad WR",
		[SMART_TP_WC_RETRY_EXC] = "transport error: retries exhausted",
		[SMART_TP_WC_FATAL] = "transport error: fatal",
		[SMART_TP_WC_RNR] = "transport error: receiver not ready",
	};

	return status > 0 && status < (int)(sizeof(why) / sizeof(why[0])) &&
			       why[status] ?
		       why[status] :
		       "transport error";
}

static void on_wc(struct smart_rpc *rpc, const struct smart_tp_wc *wc)
{
	struct smart_rpc_conn *c = conn_of(rpc, wc->wr_id);
	int kind = (int)(wc->wr_id >> 32 & 3);
	uint64_t v = wc->wr_id >> 34;

	if (!c)
		return; /* of a connection gone */
	if (wc->status != SMART_TP_WC_OK) {
		/* a PING that failed (verbs: the RC retries ran out, the
		 * peer's QP is gone) is the keepalive's verdict too, and may
		 * come before the silence bound (docs/rpc.md §7) */
		int ping = kind == RPC_WR_BARE && v == SMART_MSG_K_PING &&
			   wc->status != SMART_TP_WC_FLUSH;

		if (wc->status == SMART_TP_WC_RNR)
			c->st.rnr++;
		if (ping)
			c->st.ka_failures++;
		conn_fail(
			c, SMART_ECONN,
			wc->status == SMART_TP_WC_FLUSH ? NULL :
			ping ? "keepalive: the PING failed (the peer "
			       "is gone)" :
			kind == RPC_WR_READ ?
			       "rendezvous READ failed (the peer's region refused "
			       "it, or the peer is gone)" :
			       wc_why(wc->status));
		return;
	}
	if (kind == RPC_WR_RECV && v < c->nrecv) {
		c->last_rx = smart__worker_now(rpc->w);
		on_recv(c, wc, (uint32_t)v);
	} else if (kind == RPC_WR_READ) {
		smart__rndv_read_done(c);
	} else if (kind != RPC_WR_RECV) {
		on_send_done(c, kind, v);
	}
}

/* Consumed messages a bare ACK waits for: window / 2 (two ACKs at most
 * unconsumed at the peer, msg_int.h); a channel's a quarter of its slots,
 * at least 1, so that its producer (a few slots, each large) gets credits
 * back before it runs dry.  At most four ACKs a window can be unconsumed
 * at the producer (each follows slots / 4 releases of slots it sent),
 * with a PING, a PONG and a CLOSE seven bare messages: its receives are
 * its endpoint's window + RPC_EXTRA (made before the channel set the
 * window to slots, at most that window), and a channel takes no data
 * message, so they all find one. */
static uint32_t ack_every(const struct smart_rpc_conn *c)
{
	if (!c->chan)
		return c->window / 2;
	return c->window >= 4 ? c->window / 4 : 1;
}

/* After a poll: reposts, acks owed, backlogs, chains. */
void smart__rpc_flush_dirty(struct smart_rpc *rpc)
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
		    ack_every(c))
			send_bare(c, SMART_MSG_K_ACK);
		conn_post(c);
		c->dirty = 0; /* what the above marked is done */
	}
}

int smart_rpc_flush(smart_rpc_t *rpc)
{
	if (!rpc)
		return SMART_EINVAL;
	smart__rpc_flush_dirty(rpc);
	return 0;
}

void smart__rpc_expire_calls(struct smart_rpc *rpc, uint64_t now)
{
	for (struct rpc_call *k = rpc->live_calls; k; k = k->next)
		if (!k->done && now > k->deadline) {
			k->conn->st.call_timeouts++;
			call_finish(k, SMART_ETIMEDOUT);
		}
}

/* The progress keepalive: how long the peer has acked none of our data
 * messages out (0 while none is out; the count starts at the first tick
 * that finds one, so the data path pays nothing for it). */
static uint64_t ack_stall(struct smart_rpc_conn *c, uint64_t now)
{
	if (c->tx_seq == c->tx_acked) {
		c->ack_wait = 0;
		return 0;
	}
	if (!c->ack_wait || now < c->ack_wait)
		c->ack_wait = now;
	return now - c->ack_wait;
}

/* The keepalive, every tick: PING a connection silent for ka_cycles (one
 * PING out at a time), give up a peer silent for keepalive_misses times
 * that, or one that acked none of our data messages for as long (PONGs
 * carry acks: a live peer that consumes nothing is no better than a dead
 * one, it holds our window and our callers).  Verdicts only once the CQ
 * is drained (tick_drain): after a long stop of this process, what the
 * peers sent meanwhile is read before anyone is judged. */
void smart__rpc_keepalive(struct smart_rpc *rpc, uint64_t now, int drained)
{
	uint64_t dead = rpc->ka_cycles * rpc->cfg.keepalive_misses;

	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];
		uint64_t quiet, stall;

		if (!c || c->state != RPC_C_LIVE || now < c->last_rx)
			continue;
		if (c->waiters)
			waiters_expire(c, now);
		quiet = now - c->last_rx;
		stall = ack_stall(c, now);
		if (quiet >= dead && drained && !SMART_M_RPC_NO_KEEPALIVE) {
			c->st.ka_failures++;
			conn_fail(c, SMART_ECONN,
				  "keepalive: the peer is "
				  "silent (dead or stopped)");
		} else if (stall >= dead && drained &&
			   !SMART_M_RPC_NO_PROGRESS_KEEPALIVE) {
			c->st.ka_failures++;
			conn_cut(c, SMART_ECONN,
				 "keepalive: the peer acks "
				 "none of our messages (stalled or hostile)");
		} else if (quiet >= rpc->ka_cycles && !c->ping_out) {
			c->ping_out = 1;
			c->ping_at = now;
			c->st.ka_probes++;
			send_bare(c, SMART_MSG_K_PING);
		}
	}
}

/* A batch of the endpoint's CQ, each completion handled; returns what
 * the transport's poll did (the endpoint's tick, endpoint.c).  A batch
 * found makes the endpoint busy at now, before its completions run. */
int smart__rpc_poll_cq(struct smart_rpc *rpc, uint64_t now)
{
	struct smart_tp_wc wc[SMART_POLL_BATCH];
	int n = rpc->tp->poll(rpc->cq, wc, SMART_POLL_BATCH);

	if (n > 0)
		rpc->last_busy = now;
	for (int i = 0; i < n; i++)
		on_wc(rpc, &wc[i]);
	return n;
}

int smart_rpc_progress(smart_rpc_t *rpc)
{
	if (!rpc)
		return SMART_EINVAL;
	return smart__worker_wait_poll(rpc->w);
}

/* ---- connections ------------------------------------------------------- */

_Static_assert(SMART_SOCK_FDS == 1 + SMART_TP_PEER_FDS,
	       "a PEER frame: the staging region's descriptor and the QP's");

void smart__rpc_fd_drop(int fd)
{
	/* a peer's: its linger would hold our poll (sockio.h) */
	if (SMART_M_RPC_FD_LINGER_KEPT) {
		if (fd >= 0)
			close(fd);
		return;
	}
	smart__sock_fd_drop(fd);
}

void smart__rpc_fds_close(int fds[SMART_SOCK_FDS])
{
	for (int i = 0; i < SMART_SOCK_FDS; i++)
		smart__rpc_fd_drop(fds[i]);
	smart__rpc_fds_none(fds);
}

void smart__rpc_conn_fds(const struct smart_rpc_conn *c,
			 int fds[SMART_SOCK_FDS])
{
	smart__rpc_fds_none(fds);
	fds[0] = c->chan && !c->chan->producer ? smart__chan_fd(c) :
						 smart__rndv_fd(c);
	c->rpc->tp->qp_fds(c->qp, fds + 1);
}

/* A connection ready to be connected: its index, slab, QP and posted
 * receives (whose wr_ids name the index, so a cached one keeps it). */
static int conn_make(struct smart_rpc *rpc, int accepted,
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
	c->held = calloc(c->nrecv, sizeof(*c->held));
	rc = c->repost && c->held ? smart__rpc_slab_get(rpc, &c->slab) :
				    SMART_ENOMEM;
	if (!rc && rpc->passes_fds)
		rc = smart__rndv_conn_open(c); /* else at its handshake */
	if (rc)
		goto fail;
	c->rbuf = c->slab->base;
	c->sbuf = c->rbuf + (size_t)c->nrecv * c->msg_len;
	c->lkey = c->slab->mr->lkey;
	a.max_send_wr = c->window + RPC_SQ_SLACK;
	a.max_recv_wr = c->nrecv;
	a.max_msg = c->msg_len;
	rc = rpc->tp->qp_create(rpc->dom, rpc->cq, &a, &c->qp);
	if (rc)
		goto fail;
	for (uint32_t i = 0; i < c->nrecv; i++)
		fill_recv(c, i);
	rc = rpc->tp->post_recv(c->qp, c->repost, (int)c->nrecv);
	c->nrepost = 0;
	if (rc)
		goto fail;
	c->state = RPC_C_FAILED; /* until smart__rpc_conn_up */
	rpc->conns[idx] = c;
	*out = c;
	return 0;
fail:
	if (c->qp)
		rpc->tp->qp_destroy(c->qp);
	if (c->slab)
		smart__rpc_slab_put(rpc, c->slab);
	smart__rndv_conn_drop(c);
	free(c->repost);
	free(c->held);
	free(c);
	return rc;
}

/* A new connection: a ready one from the QP cache when there is one (the
 * QP and its receives are what takes time), else made now. */
int smart__rpc_conn_new(struct smart_rpc *rpc, int accepted,
			struct smart_rpc_conn **out)
{
	for (uint32_t i = 0; rpc->nspare && i < rpc->cfg.max_conns; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (c && c->spare) {
			rpc->past.qp_cache_hits += !c->ahead;
			c->spare = c->ahead = 0;
			c->accepted = accepted;
			rpc->nspare--;
			rpc->hs_next = 0; /* refill at the next idle poll */
			*out = c;
			return 0;
		}
	}
	return conn_make(rpc, accepted, out);
}

/* Keep the QP cache full, one connection per call (a tick, or a poll
 * that found nothing, peer.c hs_poll): the cost of making it is paid off
 * the connect path. */
void smart__rpc_cache_fill(struct smart_rpc *rpc)
{
	struct smart_rpc_conn *c;

	if (rpc->nspare >= rpc->cfg.qp_cache || conn_make(rpc, 0, &c))
		return;
	c->spare = 1;
	rpc->nspare++;
}

/* A listener's side of a connection, made at the poll after it answered a
 * HELLO (peer.c hello_in counts them due): the dialer checks our proof and
 * sends its PEER_CONNECT meanwhile, so that frame no longer waits for the
 * ~30 us of making it (shm: memfds, a socket pair, mappings) when the QP
 * cache is empty.  Not in the poll that answered: its CHALLENGE leaves
 * first.  A spare like the cache's, marked ahead (not a cache hit when
 * taken).  HELLOs need no secret: hello_in lets one be due only when no
 * spare is left, so an unauthenticated flood costs one making per
 * connection a peer with the secret takes, and never more than one held
 * beyond the cache (cache_trim). */
void smart__rpc_ahead_make(struct smart_rpc *rpc)
{
	struct smart_rpc_conn *c;

	for (; rpc->ahead_due; rpc->ahead_due--) {
		if (conn_make(rpc, 0, &c)) {
			rpc->ahead_due = 0; /* the PEER_CONNECT makes it */
			return;
		}
		c->spare = c->ahead = 1;
		rpc->nspare++;
	}
}

/* Spares past the cache's size (made ahead) go once no handshake is in
 * progress: qp_cache 0 holds nothing between handshakes. */
void smart__rpc_cache_trim(struct smart_rpc *rpc)
{
	for (uint32_t i = 0; rpc->nspare > rpc->cfg.qp_cache && !rpc->npend &&
			     i < rpc->cfg.max_conns;
	     i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (c && c->spare)
			smart__rpc_conn_free(c);
	}
}

int smart__rpc_conn_blob(struct smart_rpc_conn *c, void *blob, size_t *len)
{
	return c->rpc->tp->qp_blob(c->qp, blob, len);
}

int smart__rpc_conn_up(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer,
		       int fds[SMART_SOCK_FDS])
{
	int n = 0, rc = peer->chan && !c->accepted ?
				smart__chan_attach(c, peer, fds[0]) :
				smart__rndv_connect(c, peer, fds[0]);

	fds[0] = -1;
	if (rc) {
		smart__rpc_fds_close(fds);
		return rc;
	}
	while (n < SMART_TP_PEER_FDS && fds[1 + n] >= 0)
		n++;
	rc = c->rpc->tp->qp_connect_peer(c->qp, c->remote, peer->blob,
					 peer->blob_len, fds + 1, n);
	for (int i = 0; i < n; i++)
		fds[1 + i] = -1; /* the transport's */
	smart__rpc_fds_close(fds);
	if (rc)
		return rc;
	c->swin = peer->window < c->window ? peer->window : c->window;
	c->peer_max = peer->max_msg;
	/* its age counts from here, not from when it was made: a cached
	 * connection may wait long before it is used */
	c->born = c->last_rx = smart__rdtsc();
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
	smart__rndv_conn_drop(c); /* after the QP: no READ in flight */
	c->held_n = 0;
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
		smart__warn(rpc->log, "rpc: connection %u (%s) closed: %s",
			    c->index, c->peer, why);
	}
	for (struct rpc_call *k = rpc->live_calls; k; k = k->next)
		if (k->conn == c)
			call_finish(k, err == SMART_EPROTO ? SMART_EPROTO :
							     SMART_ECONN);
	for (struct smart_rpc_req *q = c->reqs; q; q = q->next)
		q->conn = NULL; /* their replies get SMART_ECONN */
	c->reqs = NULL;
	c->nreqs = 0;
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
	if (c->chan)
		c->chan->conn = NULL; /* the channel learns it is gone */
	if (c->spare)
		rpc->nspare--;
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
	free(c->held);
	free(c);
}

void smart__rpc_free_dead(struct smart_rpc *rpc)
{
	struct smart_rpc_conn *c;

	while ((c = rpc->dead)) {
		rpc->dead = c->next_dead;
		smart__rpc_conn_free(c);
	}
}

/* Tell the peer we go: a CLOSE, waited for (close_wait) so that it
 * leaves before the QP is destroyed. */
static void close_send(struct smart_rpc_conn *c)
{
	send_bare(c, SMART_MSG_K_CLOSE);
	conn_post(c);
}

/* Is a CLOSE (or another bare message) of c, or of any connection when
 * c is NULL, still out? */
static int close_pending(struct smart_rpc *rpc, struct smart_rpc_conn *c)
{
	if (c)
		return c->state == RPC_C_LIVE && c->bare_out;
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		c = rpc->conns[i];
		if (c && c->state == RPC_C_LIVE && c->bare_out)
			return 1;
	}
	return 0;
}

/* Wait RPC_CLOSE_WAIT_MS at most for the CLOSEs out (of c, or of every
 * connection when c is NULL): a peer that takes none (no receive posted,
 * stopped) holds us that long, no longer. */
static void close_wait(struct smart_rpc *rpc, struct smart_rpc_conn *c)
{
	int64_t until = smart__now_ms() + RPC_CLOSE_WAIT_MS;

	while (!rpc->in_poll && smart__now_ms() < until &&
	       close_pending(rpc, c))
		smart__worker_poll(rpc->w);
}

int smart_rpc_close(smart_rpc_conn_t *c)
{
	if (!c)
		return 0;
	if (c->accepted)
		return SMART_EINVAL; /* accepted: the endpoint's */
	if (c->freeing)
		return 0; /* closed already, its users still inside */
	if (c->state == RPC_C_LIVE) {
		close_send(c);
		close_wait(c->rpc, c); /* a dialed one: no poll frees it */
	}
	conn_fail(c, SMART_ECONN, NULL);
	if (c->users) {
		c->freeing = 1; /* the last of them frees it */
	} else if (c->rpc->in_poll && !SMART_M_RPC_CLOSE_FREES_IN_POLL) {
		/* from a handler, maybe of a message of c: the receive path
		 * that ran it reads c when it returns; freed at the end of
		 * the poll, as a failed accepted connection is */
		c->freeing = 1;
		c->next_dead = c->rpc->dead;
		c->rpc->dead = c;
	} else {
		smart__rpc_conn_free(c);
	}
	return 0;
}

/* The old way, one connection at a time (RPC_CLOSE_SERIAL): each
 * waited for in turn, and held across the polls of its wait. */
/* A channel's connection ends with its channel (chan.c): a dialed one
 * as smart_rpc_close ends it; an accepted one is sent a CLOSE and failed,
 * and freed at the end of a poll as every failed accepted one is. */
void smart__rpc_chan_conn_close(struct smart_rpc_conn *c)
{
	if (!c->accepted) {
		smart_rpc_close(c);
		return;
	}
	if (c->state == RPC_C_LIVE)
		close_send(c);
	conn_fail(c, SMART_ECONN, NULL);
}

static void close_serial(struct smart_rpc_conn *c)
{
	if (c->state == RPC_C_LIVE) {
		close_send(c);
		close_wait(c->rpc, c);
	}
	c->accepted = 0;
	conn_fail(c, SMART_ECONN, NULL);
	smart__rpc_conn_free(c);
}

/* Destroy: every connection told we go, then freed.  The CLOSEs all go
 * first and are waited for together (RPC_CLOSE_WAIT_MS in all, however
 * many peers take none).  The polls of that wait may fail connections (a
 * peer's CLOSE, a CLOSE that fails) and free the accepted ones at their
 * end (the dead list): no connection is held across them, the table is
 * read again after.  What failed outside a poll (a reply from the main
 * context meeting a full backlog) is on the dead list already and still
 * in the table: freed from the list first, so that it is freed once. */
void smart__rpc_conns_close(struct smart_rpc *rpc)
{
	if (!SMART_M_RPC_DESTROY_DEAD_TWICE)
		smart__rpc_free_dead(rpc);
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (c && SMART_M_RPC_CLOSE_SERIAL)
			close_serial(c);
		else if (c && c->state == RPC_C_LIVE)
			close_send(c);
	}
	close_wait(rpc, NULL);
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (!c)
			continue;
		c->accepted = 0; /* freed here, handle or not */
		conn_fail(c, SMART_ECONN, NULL);
		smart__rpc_conn_free(c);
	}
	smart__rpc_free_dead(rpc);
	for (uint32_t i = 0; i < RPC_REQS; i++)
		rpc->reqs[i].conn = NULL;
}
