/*
 * verbs transport: CQs, RC QPs and their state machine, responder QPs on
 * the blade, post and poll (see verbs.h for the shadow ring).
 *
 * Post builds an ibv_send_wr list in the QP's preallocated arrays (no
 * allocation, one ibv_post_send = one doorbell), with one SGE per WR
 * pointing into the caller's registered buffer, or inline data for short
 * WRITEs.  Only the caller's signalled WRs ask the NIC for a completion;
 * failed and flushed WRs complete anyway, as verbs does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"
#include "util/mutant.h"

/* Give the CQ a thread domain of its own and a parent domain over it:
 * the CQ is created inside it, and so are the QPs that ask for their own
 * doorbell (mlx5 maps each thread domain to a UAR of its own).  When the
 * device has no more (UARs run out) the CQ uses the shared doorbells;
 * that is said once per domain and counted. */
static void cq_own_td(struct smart_tp_cq *cq)
{
	struct smart_tp_domain *d = cq->d;
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pa = { 0 };

	cq->td = d->thread_domains ? ibv_alloc_td(d->ctx, &ta) : NULL;
	if (cq->td) {
		pa.pd = d->pd;
		pa.td = cq->td;
		cq->ppd = ibv_alloc_parent_domain(d->ctx, &pa);
		if (!cq->ppd) {
			ibv_dealloc_td(cq->td);
			cq->td = NULL;
		}
	}
	if (!cq->ppd && d->thread_domains && !atomic_exchange(&d->td_warned, 1))
		smart__warn(d->log,
			    "%s: no thread domain left (%m): this "
			    "worker's QPs share the device's doorbells "
			    "(mlx5: raise MLX5_TOTAL_UUARS, docs/transport.md)",
			    d->name);
}

/* The CQ itself: extended (polled with start/next_poll, lock-free when
 * private), or the plain kind on a provider without it. */
static int cq_alloc(struct smart_tp_cq *cq, uint32_t depth)
{
	struct smart_tp_domain *d = cq->d;
	struct ibv_cq_init_attr_ex a = {
		.cqe = depth,
		.cq_context = cq,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS |
			     (cq->ppd ? IBV_CQ_INIT_ATTR_MASK_PD : 0),
		.flags = (cq->flags & SMART_TP_SHARED) ?
				 0 :
				 IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
		.parent_domain = cq->ppd,
		.channel = cq->ch,
	};

	cq->cqx = ibv_create_cq_ex(d->ctx, &a);
	if (!cq->cqx && a.flags && !cq->ppd) {
		/* a provider that cannot elide the lock still gives a CQ */
		a.flags = 0;
		a.comp_mask &= ~(uint32_t)IBV_CQ_INIT_ATTR_MASK_FLAGS;
		cq->cqx = ibv_create_cq_ex(d->ctx, &a);
	}
	if (cq->cqx)
		cq->cq = ibv_cq_ex_to_cq(cq->cqx);
	else if (!cq->ppd && (errno == EOPNOTSUPP || errno == ENOSYS))
		cq->cq = ibv_create_cq(d->ctx, (int)depth, cq, cq->ch, 0);
	if (!cq->cq) {
		smart__err(d->log, "%s: cannot create a CQ of %u: %m", d->name,
			   depth);
		return SMART_ENOMEM;
	}
	cq->size = (uint32_t)cq->cq->cqe;
	return 0;
}

int smart__verbs_cq_create(struct smart_tp_domain *d, uint32_t depth,
			   uint32_t flags, struct smart_tp_cq **out)
{
	struct smart_tp_cq *cq;
	int rc;

	if (!depth || depth > (uint32_t)d->dev.max_cqe)
		return SMART_EINVAL;
	if (atomic_load(&d->fatal))
		return SMART_ECONN;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return SMART_ENOMEM;
	cq->d = d;
	cq->flags = flags;
	smart_spin_init(&cq->lock);
	smart_spin_init(&cq->poll_lock);
	if (flags & SMART_TP_OWN_DOORBELL)
		cq_own_td(cq);
	if (flags & SMART_TP_CQ_EVENTS) {
		cq->ch = ibv_create_comp_channel(d->ctx);
		/* non-blocking: cq_arm drains it without waiting */
		if (!cq->ch || fcntl(cq->ch->fd, F_SETFL,
				     fcntl(cq->ch->fd, F_GETFL) | O_NONBLOCK)) {
			smart__err(d->log,
				   "%s: cannot create a completion "
				   "channel: %m",
				   d->name);
			smart__verbs_cq_destroy(cq);
			return SMART_ENOMEM;
		}
	}
	rc = cq_alloc(cq, depth);
	if (rc) {
		smart__verbs_cq_destroy(cq);
		return rc;
	}
	*out = cq;
	return 0;
}

static void qp_release(struct smart_tp_qp *q);

void smart__verbs_cq_destroy(struct smart_tp_cq *cq)
{
	if (!cq)
		return;
	while (cq->graves) {
		struct smart_tp_qp *q = cq->graves;

		cq->graves = q->grave_next;
		qp_release(q);
	}
	if (cq->cq)
		ibv_destroy_cq(cq->cq);
	if (cq->ch)
		ibv_destroy_comp_channel(cq->ch); /* after its CQ */
	if (cq->ppd)
		ibv_dealloc_pd(cq->ppd);
	if (cq->td)
		ibv_dealloc_td(cq->td);
	free(cq);
}

int smart__verbs_cq_own_doorbell(const struct smart_tp_cq *cq)
{
	return cq->ppd != NULL;
}

/* Rule 9: the completion channel's descriptor. */
int smart__verbs_cq_event_fd(const struct smart_tp_cq *cq)
{
	return cq->ch ? cq->ch->fd : -1;
}

/* Acknowledge the events read so far (every one must be before the CQ
 * is destroyed), then ask for the next completion's.  Never busy: the
 * NIC runs the WRs, a completion signals whenever it comes. */
int smart__verbs_cq_arm(struct smart_tp_cq *cq)
{
	struct ibv_cq *ev;
	void *ctx;

	if (!cq->ch)
		return SMART_EINVAL;
	while (!ibv_get_cq_event(cq->ch, &ev, &ctx))
		ibv_ack_cq_events(ev, 1);
	if (ibv_req_notify_cq(cq->cq, 0)) {
		smart__err(cq->d->log, "%s: cannot arm a CQ: %m", cq->d->name);
		return SMART_ECONN;
	}
	return 0;
}

/* A QP of room send WRs joins the CQ: grow the CQ first so that all its
 * QPs' queues can flush into it at once (a CQ overrun is an error that
 * ends every QP on it), or refuse the QP. */
static int cq_commit(struct smart_tp_cq *cq, uint32_t room)
{
	struct smart_tp_domain *d = cq->d;
	uint64_t need;
	int rc = 0;

	smart_spin_lock(&cq->lock);
	need = (uint64_t)cq->committed + room;
	if (need > cq->size) {
		if (need > (uint64_t)d->dev.max_cqe ||
		    ibv_resize_cq(cq->cq, (int)need)) {
			smart__err(
				d->log,
				"%s: a CQ cannot grow to %llu entries "
				"for another QP of %u WRs (max_cqe %d): fewer "
				"blades per worker or a smaller qp_depth",
				d->name, (unsigned long long)need, room,
				d->dev.max_cqe);
			rc = SMART_ENOMEM;
		} else {
			cq->size = (uint32_t)cq->cq->cqe;
		}
	}
	if (!rc)
		cq->committed = (uint32_t)need;
	smart_spin_unlock(&cq->lock);
	return rc;
}

static void cq_uncommit(struct smart_tp_cq *cq, uint32_t room)
{
	smart_spin_lock(&cq->lock);
	cq->committed -= room;
	smart_spin_unlock(&cq->lock);
}

int smart__verbs_cq_fail(struct smart_tp_cq *cq, const char *why)
{
	if (!atomic_exchange(&cq->dead, SMART_ECONN))
		smart__err(cq->d->log,
			   "%s: a CQ failed (%s): its operations "
			   "fail, its QPs are replaced",
			   cq->d->name, why);
	return SMART_ECONN;
}

static int wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return SMART_TP_WC_OK;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
		return SMART_TP_WC_REM_ACCESS;
	/* rxe reports a bad lkey as a local QP operation error, mlx5 as a
	 * local protection error: both are the caller's local buffer */
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_LEN_ERR:
		return SMART_TP_WC_LOC_PROT;
	case IBV_WC_WR_FLUSH_ERR:
		return SMART_TP_WC_FLUSH;
	case IBV_WC_RETRY_EXC_ERR:
		return SMART_TP_WC_RETRY_EXC;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return SMART_TP_WC_RNR;
	case IBV_WC_REM_OP_ERR:
		return SMART_TP_WC_BAD_WR;
	default:
		return SMART_TP_WC_FATAL;
	}
}

static uint8_t wc_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RDMA_READ:
		return SMART_TP_READ;
	case IBV_WC_RDMA_WRITE:
		return SMART_TP_WRITE;
	case IBV_WC_COMP_SWAP:
		return SMART_TP_CAS;
	case IBV_WC_FETCH_ADD:
		return SMART_TP_FAA;
	case IBV_WC_SEND:
		return SMART_TP_SEND;
	default:
		return 0;
	}
}

/* How far the completion of ring slot `slot` (its low 16 bits) moves a
 * QP's head: by the distance past head, or 0 when the slot is behind
 * head - a shared CQ's other poller took a later completion first and
 * already retired it.  Read as a new lap instead, a late slot would move
 * head ~65536 on and the queue would look full for ever. */
uint32_t smart__verbs_slot_ahead(uint32_t head, uint32_t slot)
{
	uint32_t d = (slot + 1 - head) & 0xffff;

	return d < 0x8000 || SMART_M_VERBS_LATE_SLOT_LAPS ? d : 0;
}

/* Completion of slot `slot`: everything before it on the QP is done.
 * One poller at a time retires a QP's slots (a private CQ's thread, or a
 * shared CQ's poller in its turn, poll_shared), so head is stored, not
 * swapped; posters read it (acquire) for the room. */
static void ring_retire(struct smart_tp_qp *qp, uint32_t slot)
{
	uint32_t head = atomic_load_explicit(&qp->head, memory_order_relaxed);
	uint32_t d = smart__verbs_slot_ahead(head, slot);

	if (d)
		atomic_store_explicit(&qp->head, head + d,
				      memory_order_release);
}

/* A failed completion's status; its QP is in error from now on. */
static __attribute__((noinline, cold)) void wc_failed(struct smart_tp_wc *out,
						      struct smart_tp_qp *qp,
						      enum ibv_wc_status st)
{
	out->status = wc_status(st);
	out->opcode = 0; /* defined only for a success */
	atomic_store(&qp->error, 1);
}

/* One completion: restore the caller's wr_id from the QP's ring.  Inline
 * in the poll's loop (a call per CQE: 12 instructions a READ on rxe). */
static inline __attribute__((always_inline)) void
wc_take(struct smart_tp_wc *out, uint64_t wr_id, enum ibv_wc_status st,
	enum ibv_wc_opcode op)
{
	struct smart_tp_qp *qp = (struct smart_tp_qp *)(uintptr_t)(wr_id >> 16);
	uint32_t slot = (uint32_t)(wr_id & 0xffff);

	out->wr_id = qp->ring[slot & qp->mask].wr_id;
	if (smart_likely(st == IBV_WC_SUCCESS)) {
		out->status = SMART_TP_WC_OK;
		out->opcode = wc_opcode(op);
	} else {
		wc_failed(out, qp, st);
	}
	ring_retire(qp, slot);
}

/* What consumed a receive (rule 8): a SEND (IBV_WC_RECV) or a WRITE_IMM
 * (IBV_WC_RECV_RDMA_WITH_IMM, whose byte_len is the WRITE's length and
 * left the buffer alone); 0 for anything else a NIC might say. */
static uint8_t recv_op_of(enum ibv_wc_opcode op, uint32_t len)
{
	if (op == IBV_WC_RECV)
		return SMART_TP_SEND;
	if (op == IBV_WC_RECV_RDMA_WITH_IMM && len <= SMART_TP_WRITE_MAX)
		return SMART_TP_WRITE_IMM;
	return 0;
}

/* A receive's completion (rule 8): its wr_id from the receive ring,
 * what consumed it, length and immediate from the NIC (the immediate in
 * network order).  The opcode is defined only for a success; one that is
 * neither a SEND's nor a WRITE_IMM's fails the receive. */
static __attribute__((noinline)) void
wc_take_recv(struct smart_tp_wc *out, uint64_t wr_id, enum ibv_wc_status st,
	     enum ibv_wc_opcode op, uint32_t len, unsigned flags,
	     uint32_t imm_be)
{
	struct smart_tp_qp *qp =
		(struct smart_tp_qp *)(uintptr_t)((wr_id & ~VERBS_RECV_BIT) >>
						  16);
	uint32_t slot = (uint32_t)(wr_id & 0xffff);

	out->wr_id = qp->rring[slot & qp->rmask].wr_id;
	out->status = wc_status(st);
	out->opcode = SMART_TP_RECV;
	out->recv_op = st == IBV_WC_SUCCESS ? recv_op_of(op, len) : 0;
	if (st == IBV_WC_SUCCESS && !out->recv_op) {
		out->status = SMART_TP_WC_FATAL;
		st = IBV_WC_GENERAL_ERR;
	}
	out->len = st == IBV_WC_SUCCESS ? len : 0;
	out->flags = st == IBV_WC_SUCCESS && (flags & IBV_WC_WITH_IMM) ?
			     SMART_TP_IMM :
			     0;
	out->imm = out->flags ? ntohl(imm_be) : 0;
	if (st != IBV_WC_SUCCESS)
		atomic_store(&qp->error, 1);
	atomic_fetch_add(&qp->rtaken, 1); /* in order per queue */
}

/* The QP a CQE's wr_id names (send and receive alike). */
static struct smart_tp_qp *wc_qp(uint64_t wr_id)
{
	return (struct smart_tp_qp *)(uintptr_t)((wr_id & ~VERBS_RECV_BIT) >>
						 16);
}

/* The graves a poll of a private CQ starts with (its own thread put them
 * there); none for a shared CQ, whose graves go with it. */
static inline struct smart_tp_qp *cq_graves(const struct smart_tp_cq *cq)
{
	return cq->flags & SMART_TP_SHARED ? NULL : cq->graves;
}

/* The CQ was found empty by a poll that began when graves was its list:
 * those QPs (and the older ones behind them) have no CQE left. */
static __attribute__((noinline, cold)) void
graves_free(struct smart_tp_cq *cq, struct smart_tp_qp *graves)
{
	struct smart_tp_qp **pp, *q;

	smart_spin_lock(&cq->lock);
	for (pp = &cq->graves; *pp && *pp != graves; pp = &(*pp)->grave_next)
		;
	q = *pp;
	*pp = NULL;
	smart_spin_unlock(&cq->lock);
	while (q) {
		struct smart_tp_qp *next = q->grave_next;

		qp_release(q);
		q = next;
	}
}

/* A shared CQ's turn has come to its CQEs: a test may stop it here. */
static inline void take_hook(struct smart_tp_cq *cq, int shared)
{
	if (shared && smart_unlikely(cq->take_hook != NULL))
		cq->take_hook(cq, cq->take_arg);
}

/* shared: a constant at each call (poll_shared's, smart__verbs_poll's),
 * so a private CQ's poll has no hook to test */
static inline __attribute__((always_inline)) int
poll_ex(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max, int shared)
{
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *x = cq->cqx;
	struct smart_tp_qp *graves = cq_graves(cq);
	int n = 0, drained = 0, rc = ibv_start_poll(x, &pa);

	if (rc == ENOENT) {
		drained = 1;
		goto out;
	}
	if (rc)
		return smart__verbs_cq_fail(cq, "ibv_start_poll");
	take_hook(cq, shared);
	for (;;) {
		/* the opcode is defined only for successful completions */
		if (smart_unlikely(atomic_load_explicit(&wc_qp(x->wr_id)->dead,
							memory_order_relaxed)))
			; /* of a QP destroyed: dropped */
		else if (smart_unlikely(x->wr_id & VERBS_RECV_BIT))
			wc_take_recv(&wc[n++], x->wr_id, x->status,
				     x->status == IBV_WC_SUCCESS ?
					     ibv_wc_read_opcode(x) :
					     IBV_WC_RECV,
				     ibv_wc_read_byte_len(x),
				     ibv_wc_read_wc_flags(x),
				     ibv_wc_read_imm_data(x));
		else
			wc_take(&wc[n++], x->wr_id, x->status,
				x->status == IBV_WC_SUCCESS ?
					ibv_wc_read_opcode(x) :
					IBV_WC_SEND);
		if (n == max)
			break;
		rc = ibv_next_poll(x);
		if (rc) {
			/* what was taken is delivered; the failure shows at
			 * the next poll */
			if (rc != ENOENT)
				smart__verbs_cq_fail(cq, "ibv_next_poll");
			drained = rc == ENOENT;
			break;
		}
	}
	ibv_end_poll(x);
out:
	if (smart_unlikely(graves != NULL) && drained)
		graves_free(cq, graves);
	return n;
}

static inline __attribute__((always_inline)) int
poll_plain(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max, int shared)
{
	struct ibv_wc iw[VERBS_POLL_MAX];
	struct smart_tp_qp *graves = cq_graves(cq);
	int n = ibv_poll_cq(cq->cq, max, iw), i, k = 0;

	if (n < 0)
		return smart__verbs_cq_fail(cq, "ibv_poll_cq");
	if (n > 0)
		take_hook(cq, shared);
	for (i = 0; i < n; i++) {
		if (smart_unlikely(
			    atomic_load_explicit(&wc_qp(iw[i].wr_id)->dead,
						 memory_order_relaxed)))
			continue; /* of a QP destroyed: dropped */
		if (smart_unlikely(iw[i].wr_id & VERBS_RECV_BIT))
			wc_take_recv(&wc[k++], iw[i].wr_id, iw[i].status,
				     iw[i].opcode, iw[i].byte_len,
				     iw[i].wc_flags, iw[i].imm_data);
		else
			wc_take(&wc[k++], iw[i].wr_id, iw[i].status,
				iw[i].opcode);
	}
	if (smart_unlikely(graves != NULL) && n < max)
		graves_free(cq, graves);
	return k;
}

/* Now and then (and whenever something failed) read the device's async
 * events: a dead device or an overrun CQ delivers nothing at all, so no
 * completion would ever tell. */
static __attribute__((noinline, cold)) int poll_events(struct smart_tp_cq *cq)
{
	smart__verbs_events_drain(cq->d);
	if (atomic_load(&cq->d->fatal))
		smart__verbs_cq_fail(cq, "the device failed");
	return atomic_load(&cq->dead);
}

/* A shared CQ's pollers take turns, each from the device's poll to its
 * last wr_id restored from a ring: a CQE's wr_id is read from its QP's
 * ring only after the poll returned it, and meanwhile another poller
 * that took a later completion of the same QP would retire the ring past
 * that slot, a post could reuse the slot, and the completion would be
 * reported under the new WR's wr_id (the old one's never; the
 * conformance case shared_objects saw it once under load).  In turns,
 * completions are also taken in the CQ's order, so head only moves on.
 * Receives are taken in turn too (rtaken counts them in order).  A
 * provider locks a shared CQ inside its poll anyway (not mlx5's CQ in a
 * thread domain, SMART_TP_OWN_DOORBELL, whose pollers the turns now
 * serialise as well): one more lock around it costs little, and only
 * the shared modes pay it (a private CQ's poll: two instructions). */
static __attribute__((noinline)) int
poll_shared(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	int n;

	if (!SMART_M_VERBS_SHARED_POLL_UNLOCKED &&
	    !smart_spin_trylock(&cq->poll_lock)) {
		atomic_fetch_add_explicit(&cq->poll_waits, 1,
					  memory_order_relaxed);
		smart_spin_lock(&cq->poll_lock);
	}
	n = cq->ppd ? poll_ex(cq, wc, max, 1) : poll_plain(cq, wc, max, 1);
	if (!SMART_M_VERBS_SHARED_POLL_UNLOCKED)
		smart_spin_unlock(&cq->poll_lock);
	return n;
}

int smart__verbs_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	uint32_t p = atomic_load_explicit(&cq->polls, memory_order_relaxed) + 1;
	int dead = atomic_load_explicit(&cq->dead, memory_order_relaxed);

	if (smart_unlikely(dead))
		return dead;
	/* a plain store: racing pollers of a shared CQ may lose a count,
	 * which only moves the next event check */
	atomic_store_explicit(&cq->polls, p, memory_order_relaxed);
	if (smart_unlikely(!(p & 0xffff)) && (dead = poll_events(cq)))
		return dead;
	if (max > VERBS_POLL_MAX)
		max = VERBS_POLL_MAX;
	/* the extended poll only where the CQ lives in a thread domain
	 * (mlx5's lock-free path); rxe (rdma-core 44) handed back wr_id 0
	 * from ibv_next_poll in our runs, so the others keep ibv_poll_cq,
	 * which takes no lock either on a single-threaded CQ */
	if (smart_unlikely(cq->flags & SMART_TP_SHARED))
		return poll_shared(cq, wc, max);
	return cq->ppd ? poll_ex(cq, wc, max, 0) : poll_plain(cq, wc, max, 0);
}

/* A device without (working) atomics grants no remote atomic rights: a
 * peer's CAS then fails at the NIC instead of doing the wrong thing. */
int smart__verbs_qp_init(struct smart_tp_domain *d, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = d->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE |
				   (d->atomics ? IBV_ACCESS_REMOTE_ATOMIC : 0),
	};

	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS) ?
		       SMART_ESYS :
		       0;
}

/* The read/atomic depths stay even without atomics: RDMA READs use the
 * same resources (max_rd_atomic counts READs and atomics alike), so a
 * depth of 0 would stop READs too. */
static int qp_to_rtr(struct smart_tp_domain *d, struct ibv_qp *qp,
		     const struct verbs_qp_info *peer, uint8_t dest_depth)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)smart_min((int)d->mtu, peer->mtu),
		.dest_qp_num = peer->qpn,
		.rq_psn = peer->psn,
		.max_dest_rd_atomic = dest_depth,
		/* what our RNR NAK asks a peer's SEND to wait (rule 8);
		 * one-sided QPs never send one */
		.min_rnr_timer = peer->max_msg ? VERBS_RNR_TIMER : 12,
		.ah_attr = { .dlid = peer->lid,
			     .sl = d->sl,
			     .port_num = d->port },
	};

	if (peer->has_gid && d->gid_index >= 0) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.grh.traffic_class = d->tclass;
	}
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER) ?
		       SMART_ESYS :
		       0;
}

int smart__verbs_qp_rts(struct smart_tp_domain *d, struct ibv_qp *qp,
			uint32_t my_psn, const struct verbs_qp_info *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = (uint8_t)d->ib_timeout,
		.retry_cnt = (uint8_t)d->ib_retry,
		/* a SEND to a peer waits a bounded time for a receive (rule
		 * 8); a one-sided QP meets no RNR NAK */
		.rnr_retry = peer->max_msg ? VERBS_RNR_RETRY : 7,
		.sq_psn = my_psn,
	};
	uint8_t dest;
	int rc;

	smart__verbs_rd_depths(d, peer, &a.max_rd_atomic, &dest);
	rc = qp_to_rtr(d, qp, peer, dest);
	if (rc) {
		smart__err(d->log, "qp 0x%x to RTR: %m", qp->qp_num);
		return rc;
	}
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC)) {
		smart__err(d->log, "qp 0x%x to RTS: %m", qp->qp_num);
		return SMART_ESYS;
	}
	return 0;
}

void smart__verbs_local_info(const struct smart_tp_domain *d,
			     const struct ibv_qp *qp, uint32_t psn,
			     struct verbs_qp_info *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = qp->qp_num;
	out->psn = psn;
	out->lid = d->lid;
	out->mtu = (uint8_t)d->mtu;
	out->has_gid = d->gid_index >= 0;
	if (out->has_gid)
		memcpy(out->gid, d->gid.raw, 16);
	out->link = d->link_eth ? VERBS_LINK_ETH : VERBS_LINK_IB;
	out->gid_type = (uint8_t)d->gid_type;
	out->resp_depth = d->resp_depth;
	out->init_depth = d->init_depth;
	out->flags = d->atomics ? VERBS_QPF_ATOMICS : 0;
}

static uint32_t new_psn(const struct ibv_qp *qp)
{
	uint64_t x = (uint64_t)(uintptr_t)qp ^ ((uint64_t)qp->qp_num << 20);

	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 29;
	return (uint32_t)x & 0xffffff;
}

/* Only the send operations we post, so that the provider sizes WQEs for
 * them (mlx5's legacy ibv_create_qp reserves room for memory-window
 * binds in every WQE, and gives fewer WQEs than asked for the memory);
 * the two-sided ones only on a QP with a receive queue (rule 8). */
static uint64_t send_ops(const struct smart_tp_domain *d, int two_sided)
{
	uint64_t ops = IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE;

	if (d->dev.atomic_cap != IBV_ATOMIC_NONE)
		ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	if (two_sided)
		ops |= IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	return ops;
}

/* An RC QP of n send WRs and nrecv receives (0: one-sided, the one
 * receive the verbs API wants) on cq (both directions), in pd, asking for
 * inl bytes inline; ia->cap says what the device gave.  A provider
 * without send_ops_flags gets the request without them. */
struct ibv_qp *smart__verbs_qp_make(struct smart_tp_domain *d,
				    struct ibv_cq *cq, struct ibv_pd *pd,
				    uint32_t n, uint32_t nrecv, uint32_t inl,
				    void *context,
				    struct ibv_qp_init_attr_ex *ia)
{
	struct ibv_qp *qp;

	*ia = (struct ibv_qp_init_attr_ex){
		.qp_context = context,
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = { .max_send_wr = n,
			 .max_recv_wr = nrecv ? nrecv : 1,
			 .max_send_sge = 1,
			 .max_recv_sge = 1,
			 .max_inline_data = inl },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = send_ops(d, nrecv > 0),
	};
	qp = ibv_create_qp_ex(d->ctx, ia);
	if (!qp && (errno == EOPNOTSUPP || errno == EINVAL)) {
		ia->comp_mask = IBV_QP_INIT_ATTR_PD;
		ia->cap.max_send_wr = n;
		ia->cap.max_inline_data = inl;
		qp = ibv_create_qp_ex(d->ctx, ia);
	}
	return qp;
}

/* A throwaway QP of n WRs and inl bytes inline: what the device gives
 * (0 WRs: refused). */
static struct ibv_qp_cap qp_try(struct smart_tp_domain *d, struct ibv_cq *cq,
				uint32_t n, uint32_t inl)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp = smart__verbs_qp_make(d, cq, d->pd, n, 0, inl, NULL,
						 &ia);

	if (!qp)
		return (struct ibv_qp_cap){ 0 };
	ibv_destroy_qp(qp);
	return ia.cap;
}

/* Inline data is not in ibv_device_attr: the most a QP is given of what
 * we would use (what it gave, not what was asked). */
static uint32_t probe_inline(struct smart_tp_domain *d, struct ibv_cq *cq)
{
	static const uint32_t tries[] = { 64, 32, 16, 0 };
	struct ibv_qp_cap c;
	size_t i;

	for (i = 0; i < SMART_ARRAY_SIZE(tries); i++) {
		c = qp_try(d, cq, 4, tries[i]);
		if (c.max_send_wr)
			return c.max_inline_data;
	}
	return 0;
}

/* The largest send queue a QP really gets: max_qp_wr is what the device
 * says, not always what ibv_create_qp accepts (mlx5 counts WQE basic
 * blocks: ~6553 where max_qp_wr says 32768); and a QP must fit a CQ,
 * which holds every WR it can flush.  The top first (the usual case: one
 * try), else a binary search: at most ~17 throwaway QPs. */
static uint32_t probe_max_wr(struct smart_tp_domain *d, struct ibv_cq *cq)
{
	uint32_t top = (uint32_t)smart_min(smart_min(d->dev.max_qp_wr,
						     d->dev.max_cqe),
					   VERBS_MAX_SEND_WR);
	uint32_t lo = 0, hi = top, mid;

	if (qp_try(d, cq, top, d->max_inline).max_send_wr)
		lo = top;
	else
		hi = top - 1;
	while (lo < hi) { /* the largest that fits, in [lo, hi] */
		mid = lo + (hi - lo + 1) / 2;
		if (qp_try(d, cq, mid, d->max_inline).max_send_wr)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (lo < top)
		smart__warn(d->log,
			    "%s: a QP takes at most %u send WRs "
			    "(max_qp_wr says %d)",
			    d->name, lo, d->dev.max_qp_wr);
	else if (lo < (uint32_t)d->dev.max_qp_wr)
		smart__info(d->log,
			    "%s: send queues of up to %u WRs (max_cqe "
			    "%d, max_qp_wr %d)",
			    d->name, lo, d->dev.max_cqe, d->dev.max_qp_wr);
	return lo;
}

int smart__verbs_probe_queues(struct smart_tp_domain *d)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 1, NULL, NULL, 0);

	if (!cq)
		return SMART_ENOMEM;
	d->max_inline = probe_inline(d, cq);
	d->max_send_wr = probe_max_wr(d, cq);
	ibv_destroy_cq(cq);
	return d->max_send_wr ? 0 : SMART_ENOMEM;
}

static int qp_alloc(struct smart_tp_qp *q, uint32_t n, uint32_t nrecv)
{
	struct smart_tp_domain *d = q->d;
	struct ibv_qp_init_attr_ex ia;
	struct ibv_pd *pd = (q->flags & SMART_TP_OWN_DOORBELL) && q->cq->ppd ?
				    q->cq->ppd :
				    d->pd;
	int rc;

	q->qp = smart__verbs_qp_make(d, q->cq->cq, pd, n, nrecv, d->max_inline,
				     q, &ia);
	if (!q->qp) {
		smart__err(d->log, "ibv_create_qp_ex(%u WRs): %m", n);
		return SMART_ENOMEM;
	}
	/* held to what the device gave (it may give more than asked), and
	 * to what a 16-bit ring slot can name */
	q->room = smart_min(ia.cap.max_send_wr, VERBS_MAX_SEND_WR);
	/* the domain's caps are the limit WRs are held to, whatever more
	 * this QP happened to get */
	q->max_inline = smart_min(ia.cap.max_inline_data, d->max_inline);
	/* receives flush into the CQ too: they count like send WRs */
	q->rroom = nrecv ? smart_min(ia.cap.max_recv_wr, VERBS_MAX_RECV_WR) : 0;
	q->psn = new_psn(q->qp);
	rc = cq_commit(q->cq, q->room + q->rroom);
	if (rc) {
		ibv_destroy_qp(q->qp);
		q->qp = NULL;
		return rc;
	}
	rc = smart__verbs_qp_init(d, q->qp);
	if (rc) {
		ibv_destroy_qp(q->qp);
		q->qp = NULL;
		cq_uncommit(q->cq, q->room + q->rroom);
	}
	return rc;
}

/* What a QP holds besides its verbs QP: its share of the CQ, its rings. */
static void qp_release(struct smart_tp_qp *q)
{
	if (q->qp || atomic_load(&q->dead))
		cq_uncommit(q->cq, q->room + q->rroom);
	free(q->ring);
	free(q->rring);
	free(q);
}

static void qp_free(struct smart_tp_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	qp_release(q);
}

/* The shadow rings: a power of two of slots for the send queue (held to
 * room) and, with receives, for the receive queue. */
static int qp_rings(struct smart_tp_qp *q)
{
	uint32_t n = (uint32_t)smart_roundup_pow2(q->room);

	q->mask = n - 1;
	q->ring = calloc(n, sizeof(*q->ring));
	if (!q->ring)
		return SMART_ENOMEM;
	if (!q->rroom)
		return 0;
	n = (uint32_t)smart_roundup_pow2(q->rroom);
	q->rmask = n - 1;
	q->rring = calloc(n, sizeof(*q->rring));
	return q->rring ? 0 : SMART_ENOMEM;
}

int smart__verbs_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			   const struct smart_tp_qp_attr *attr,
			   struct smart_tp_qp **out)
{
	struct smart_tp_qp *q;
	int rc;

	if (!cq || !attr || !attr->max_send_wr ||
	    attr->max_send_wr > d->max_send_wr ||
	    attr->max_recv_wr > VERBS_MAX_RECV_WR ||
	    attr->max_recv_wr > (uint32_t)d->dev.max_qp_wr ||
	    (attr->max_recv_wr &&
	     (!attr->max_msg || attr->max_msg > VERBS_MAX_MSG)))
		return SMART_EINVAL;
	if (atomic_load(&cq->dead))
		return SMART_ECONN;
	q = calloc(1, sizeof(*q));
	if (!q)
		return SMART_ENOMEM;
	q->d = d;
	q->cq = cq;
	q->flags = attr->flags;
	q->max_msg = attr->max_recv_wr ? attr->max_msg : 0;
	smart_spin_init(&q->lock);
	rc = qp_alloc(q, attr->max_send_wr, attr->max_recv_wr);
	if (!rc)
		rc = qp_rings(q);
	if (rc) {
		qp_free(q);
		return rc;
	}
	*out = q;
	return 0;
}

int smart__verbs_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len)
{
	struct verbs_qp_info me;

	if (*len < VERBS_QP_BLOB_LEN)
		return SMART_EINVAL;
	smart__verbs_local_info(qp->d, qp->qp, qp->psn, &me);
	me.max_msg = qp->max_msg;
	*len = smart__verbs_info_pack(&me, blob);
	return 0;
}

/* The peer's blob, if it is one and suits this end (the same link layer
 * and RoCE version), or SMART_EPROTO said in the log: before any QP of
 * ours is taken towards it. */
static int peer_unpack(struct smart_tp_domain *d, const void *blob, size_t len,
		       struct verbs_qp_info *out)
{
	const char *why = NULL;
	int rc = smart__verbs_info_unpack(blob, len, out, &why);

	if (!rc)
		rc = smart__verbs_peer_check(d, out, &why);
	if (rc)
		smart__err(d->log, "%s: the peer's QP data is refused: %s",
			   d->name, why ? why : smart_strerror(rc));
	return rc;
}

int smart__verbs_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			    const void *peer_blob, size_t len)
{
	struct smart_tp_domain *d = qp->d;
	struct verbs_qp_info peer;
	int rc = peer_unpack(d, peer_blob, len, &peer);

	if (rc || !r || qp->rroom || peer.max_msg)
		return rc ? rc : SMART_EINVAL; /* receives: a peer's QP */
	rc = smart__verbs_qp_rts(d, qp->qp, qp->psn, &peer);
	/* The blade's device grants no atomics: its NIC will fail our CAS
	 * and FAA (remote access error).  Said once per domain. */
	if (!rc && d->atomics && !(peer.flags & VERBS_QPF_ATOMICS) &&
	    !atomic_exchange(&d->peer_atomics_said, 1))
		smart__warn(d->log,
			    "%s: a blade's device takes no atomics "
			    "(none, or its byte-order self-test failed): CAS "
			    "and FAA to it will fail",
			    d->name);
	return rc;
}

/* A QP that never posted anything has no CQE anywhere: freed now.  Any
 * other may have some in its CQ still (rxe: the flushes of its receives
 * and WRs, even ones generated as ibv_destroy_qp runs), which a later
 * poll would read through a freed struct - or, the memory reused, hand
 * to the QP that took its place (seen: a messaging connection failed by
 * the flushed receives of the one before it).  It goes to the CQ's
 * graves: its CQEs are dropped, and it is freed once they are gone. */
void smart__verbs_qp_destroy(struct smart_tp_qp *qp)
{
	struct smart_tp_cq *cq;

	if (!qp)
		return;
	if (!qp->qp || (!qp->tail && !qp->rposted)) {
		qp_free(qp);
		return;
	}
	cq = qp->cq;
	ibv_destroy_qp(qp->qp);
	qp->qp = NULL;
	atomic_store(&qp->dead, 1);
	smart_spin_lock(&cq->lock);
	qp->grave_next = cq->graves;
	cq->graves = qp;
	smart_spin_unlock(&cq->lock);
}

int smart__verbs_qp_in_error(const struct smart_tp_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (atomic_load(&((struct smart_tp_qp *)qp)->error))
		return 1;
	if (ibv_query_qp(qp->qp, &a, IBV_QP_STATE, &ia))
		return 1;
	return a.qp_state == IBV_QPS_ERR || a.qp_state == IBV_QPS_SQE;
}

static enum ibv_wr_opcode wr_opcode(const struct smart_tp_wr *w)
{
	switch (w->opcode) {
	case SMART_TP_READ:
		return IBV_WR_RDMA_READ;
	case SMART_TP_WRITE:
		return IBV_WR_RDMA_WRITE;
	case SMART_TP_CAS:
		return IBV_WR_ATOMIC_CMP_AND_SWP;
	case SMART_TP_FAA:
		return IBV_WR_ATOMIC_FETCH_AND_ADD;
	case SMART_TP_SEND:
		return w->flags & SMART_TP_IMM ? IBV_WR_SEND_WITH_IMM :
						 IBV_WR_SEND;
	default:
		return IBV_WR_RDMA_WRITE_WITH_IMM;
	}
}

/* A two-sided WR (rule 8): only on a QP with a peer, a SEND no longer than
 * the peer's longest message. */
static int send_check(const struct smart_tp_qp *q, const struct smart_tp_wr *w)
{
	if (!q->peer_max_msg) /* set only by qp_connect_peer */
		return SMART_EINVAL;
	return w->opcode == SMART_TP_SEND && w->len > q->peer_max_msg ?
		       SMART_EINVAL :
		       0;
}

/* Fill the i-th ibv_send_wr of the post and its SGE from ours, and name
 * its ring slot (tail + i): every field the device reads for the WR's
 * opcode, none of the others (the unions' other members, imm_data but
 * for an IMM, which verbs leaves unread), so that post1 fills its one WR
 * without clearing it.  An error leaves the ring alone. */
static inline __attribute__((always_inline)) int
fill_wr(struct smart_tp_qp *q, int i, const struct smart_tp_wr *w)
{
	struct ibv_send_wr *iw = &q->wr[i];
	struct ibv_sge *sg = &q->sge[i];
	uint32_t slot = q->tail + (uint32_t)i;

	if (w->opcode < SMART_TP_READ || w->opcode > SMART_TP_WRITE_IMM)
		return SMART_EINVAL;
	if (smart_unlikely(w->opcode >= SMART_TP_SEND) && send_check(q, w))
		return SMART_EINVAL;
	/* Refuse a malformed atomic before anything is posted: providers
	 * reject it inside ibv_post_send, after the WRs before it went out.
	 * Likewise an atomic where the domain has none (caps.atomics): the
	 * QP has no rights for it, or the device gets its bytes wrong. */
	if (smart_tp_atomic(w->opcode)) {
		if (smart_unlikely(!q->d->atomics))
			return SMART_ENOTSUP;
		if (w->len != 8 || (w->remote & 7))
			return SMART_EINVAL;
	}
	sg->addr = (uint64_t)(uintptr_t)w->local;
	sg->length = w->len;
	sg->lkey = w->lkey;
	iw->wr_id = ((uint64_t)(uintptr_t)q << 16) | (slot & 0xffff);
	if (!SMART_M_VERBS_POST1_STALE_NEXT)
		iw->next = NULL; /* a chain's post linked wr[0] to wr[1] */
	iw->sg_list = sg;
	iw->num_sge = 1;
	iw->opcode = wr_opcode(w);
	iw->send_flags = ((w->flags & SMART_TP_SIGNALED) ? IBV_SEND_SIGNALED :
							   0) |
			 ((w->flags & SMART_TP_FENCE) ? IBV_SEND_FENCE : 0);
	/* never dropped silently: the bytes may be in memory no MR covers,
	 * and the NIC would fail the WR with a protection error */
	if ((w->flags & SMART_TP_INLINE) &&
	    (w->opcode == SMART_TP_WRITE || w->opcode == SMART_TP_SEND)) {
		if (w->len > q->max_inline)
			return SMART_EINVAL;
		iw->send_flags |= IBV_SEND_INLINE;
	}
	if (smart_tp_atomic(w->opcode)) {
		iw->wr.atomic.remote_addr = w->remote;
		iw->wr.atomic.rkey = w->rkey;
		iw->wr.atomic.compare_add = w->compare_add;
		iw->wr.atomic.swap = w->swap;
	} else if (w->opcode != SMART_TP_SEND) {
		iw->wr.rdma.remote_addr = w->remote;
		iw->wr.rdma.rkey = w->rkey;
	}
	if (iw->opcode == IBV_WR_SEND_WITH_IMM ||
	    iw->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		iw->imm_data = htonl(w->imm);
	q->ring[slot & q->mask].wr_id = w->wr_id;
	return 0;
}

/* The i-th ibv_send_wr of a chain: cleared, filled, linked behind the
 * one before it. */
static int build_wr(struct smart_tp_qp *q, int i, const struct smart_tp_wr *w)
{
	int rc;

	memset(&q->wr[i], 0, sizeof(q->wr[i]));
	rc = fill_wr(q, i, w);
	if (!rc && i)
		q->wr[i - 1].next = &q->wr[i];
	return rc;
}

/* The room for n WRs, or why there is none. */
static inline __attribute__((always_inline)) int
post_room(struct smart_tp_qp *q, int n)
{
	uint32_t head = atomic_load_explicit(&q->head, memory_order_acquire);

	/* a failed CQ delivers nothing: what went out now would never end */
	if (smart_unlikely(
		    atomic_load_explicit(&q->cq->dead, memory_order_relaxed)))
		return SMART_EQP;
	if (q->tail - head + (uint32_t)n > q->room)
		return SMART_EAGAIN;
	return 0;
}

/* Ring the doorbell for the n WRs built in q->wr (their ring slots
 * named). */
static inline __attribute__((always_inline)) int
post_send(struct smart_tp_qp *q, int n)
{
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(q->qp, q->wr, &bad);

	if (smart_unlikely(rc)) {
		/* Room was checked: a refusal here is a broken QP or a
		 * malformed WR.  What precedes bad was posted. */
		smart__err(q->d->log, "ibv_post_send: %s", strerror(rc));
		if (bad && bad != q->wr)
			q->tail += (uint32_t)(bad - q->wr);
		atomic_store(&q->error, 1);
		return SMART_EQP;
	}
	q->tail += (uint32_t)n;
	return 0;
}

static int post_locked(struct smart_tp_qp *q, const struct smart_tp_wr *wrs,
		       int n)
{
	int i, rc = post_room(q, n);

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rc = build_wr(q, i, &wrs[i]);
		if (rc)
			return rc;
	}
	return post_send(q, n);
}

int smart__verbs_post(struct smart_tp_qp *q, const struct smart_tp_wr *wrs,
		      int n)
{
	int rc;

	if (smart_unlikely(n <= 0 || n > VERBS_MAX_CHAIN || !wrs))
		return n > VERBS_MAX_CHAIN ? SMART_EAGAIN : SMART_EINVAL;
	smart_spin_lock_if(q->flags & SMART_TP_SHARED, &q->lock);
	rc = post_locked(q, wrs, n);
	smart_spin_unlock_if(q->flags & SMART_TP_SHARED, &q->lock);
	return rc;
}

/* post(qp, wr, 1) of one one-sided WR on a QP of one thread
 * (transport.h): post's chain tests and lock left out.  A shared QP, one
 * not connected (libibverbs keeps the state ibv_modify_qp set), or a SEND
 * or WRITE_IMM takes post's way: SMART_ENOTSUP, nothing posted.  Else
 * post_locked's answer (SMART_EQP on a failed CQ or a refusal by the
 * device, which post, called then, gives again). */
int smart__verbs_post1(struct smart_tp_qp *q, const struct smart_tp_wr *wr)
{
	int rc;

	if (smart_unlikely(wr->opcode >= SMART_TP_SEND) ||
	    smart_unlikely(!SMART_M_VERBS_POST1_ANY_QP &&
			   ((q->flags & SMART_TP_SHARED) ||
			    q->qp->state != IBV_QPS_RTS)))
		return SMART_ENOTSUP;
	rc = post_room(q, 1);
	if (rc)
		return rc;
	/* filled over what the last post left: fill_wr sets every field
	 * a one-sided WR has read (through the general chain code, which
	 * clears the 128-byte WR first, a READ's post cost 129
	 * instructions on rxe; 92 this way, docs/design.md §9.10;
	 * conformance post1 mixes the opcodes) */
	rc = fill_wr(q, 0, wr);
	return rc ? rc : post_send(q, 1);
}

int smart__verbs_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
			const void *client_blob, size_t client_len,
			void *blob_out, size_t *blob_len,
			struct smart_tp_responder **out)
{
	struct ibv_qp_init_attr_ex ia;
	struct verbs_qp_info peer, me;
	struct smart_tp_responder *r;
	uint32_t psn;
	int rc = peer_unpack(d, client_blob, client_len, &peer);

	if (rc || *blob_len < VERBS_QP_BLOB_LEN)
		return rc ? rc : SMART_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return SMART_ENOMEM;
	/* it never posts: one send WR, nothing inline */
	r->qp = smart__verbs_qp_make(d, d->resp_cq, d->pd, 1, 0, 0, NULL, &ia);
	rc = r->qp ? smart__verbs_qp_init(d, r->qp) : SMART_ENOMEM;
	if (!rc) {
		psn = new_psn(r->qp);
		rc = smart__verbs_qp_rts(d, r->qp, psn, &peer);
	}
	if (rc) {
		smart__verbs_responder_destroy(r);
		return rc;
	}
	smart__verbs_local_info(d, r->qp, psn, &me);
	*blob_len = smart__verbs_info_pack(&me, blob_out);
	*out = r;
	(void)region;
	return 0;
}

void smart__verbs_responder_destroy(struct smart_tp_responder *r)
{
	if (!r)
		return;
	if (r->qp)
		ibv_destroy_qp(r->qp);
	free(r);
}

/* Two-sided (rule 8).  No descriptor travels with a verbs QP's blob:
 * the NIC needs none, and its completion channel signals by itself. */
int smart__verbs_qp_fds(const struct smart_tp_qp *qp,
			int fds[SMART_TP_PEER_FDS])
{
	(void)qp, (void)fds;
	return 0;
}

int smart__verbs_qp_connect_peer(struct smart_tp_qp *qp,
				 struct smart_tp_remote *r,
				 const void *peer_blob, size_t len,
				 const int *fds, int nfds)
{
	struct smart_tp_domain *d = qp->d;
	struct verbs_qp_info peer;
	int rc;

	(void)r; /* one-sided WRs name the peer's region by its rkey */
	for (int i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]); /* ours, as the contract says */
	if (!qp->rroom)
		return SMART_EINVAL; /* no receive queue: qp_connect */
	rc = peer_unpack(d, peer_blob, len, &peer);
	if (rc)
		return rc;
	if (!peer.max_msg) {
		smart__err(d->log, "%s: the peer's QP has no receive queue",
			   d->name);
		return SMART_EPROTO;
	}
	rc = smart__verbs_qp_rts(d, qp->qp, qp->psn, &peer);
	if (!rc)
		qp->peer_max_msg = peer.max_msg;
	return rc;
}

/* Receives go into the receive ring in posting order, each named by its
 * slot with VERBS_RECV_BIT set; whole or not at all, like a post. */
static int post_recv_locked(struct smart_tp_qp *q,
			    const struct smart_tp_recv *rs, int n)
{
	struct ibv_recv_wr wr[16], *bad = NULL;
	struct ibv_sge sge[16];
	uint32_t taken = atomic_load_explicit(&q->rtaken, memory_order_acquire);
	int i, k, m, rc;

	if (q->rposted - taken + (uint32_t)n > q->rroom)
		return SMART_EAGAIN;
	for (i = 0; i < n; i++)
		if (rs[i].len && !rs[i].local)
			return SMART_EINVAL;
	for (k = 0; k < n; k += m) { /* 16 at a time */
		m = smart_min(n - k, 16);
		for (i = 0; i < m; i++) {
			uint32_t slot = q->rposted + (uint32_t)i;

			q->rring[slot & q->rmask].wr_id = rs[k + i].wr_id;
			sge[i] = (struct ibv_sge){
				.addr = (uintptr_t)rs[k + i].local,
				.length = rs[k + i].len,
				.lkey = rs[k + i].lkey
			};
			wr[i] = (struct ibv_recv_wr){
				.wr_id = VERBS_RECV_BIT |
					 ((uint64_t)(uintptr_t)q << 16) |
					 (slot & 0xffff),
				.sg_list = &sge[i],
				.num_sge = 1,
				.next = i + 1 < m ? &wr[i + 1] : NULL
			};
		}
		rc = ibv_post_recv(q->qp, wr, &bad);
		if (rc) {
			/* a broken QP: what precedes bad was posted */
			smart__err(q->d->log, "ibv_post_recv: %s",
				   strerror(rc));
			if (bad && bad != wr)
				q->rposted += (uint32_t)(bad - wr);
			atomic_store(&q->error, 1);
			return SMART_EQP;
		}
		q->rposted += (uint32_t)m;
	}
	return 0;
}

int smart__verbs_post_recv(struct smart_tp_qp *q,
			   const struct smart_tp_recv *rs, int n)
{
	int rc;

	if (!q->rroom)
		return SMART_ENOTSUP;
	if (n <= 0 || !rs)
		return SMART_EINVAL;
	smart_spin_lock_if(q->flags & SMART_TP_SHARED, &q->lock);
	rc = post_recv_locked(q, rs, n);
	smart_spin_unlock_if(q->flags & SMART_TP_SHARED, &q->lock);
	return rc;
}
