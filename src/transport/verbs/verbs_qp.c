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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/log.h"

int smart__verbs_cq_create(struct smart_tp_domain *d, uint32_t depth,
			   uint32_t flags, struct smart_tp_cq **out)
{
	struct smart_tp_cq *cq;

	if (!depth || depth > (uint32_t)d->dev.max_cqe)
		return SMART_EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return SMART_ENOMEM;
	cq->d = d;
	cq->cq = ibv_create_cq(d->ctx, (int)depth, NULL, NULL, 0);
	if (!cq->cq) {
		smart__err(d->log, "ibv_create_cq(%u): %m", depth);
		free(cq);
		return SMART_ENOMEM;
	}
	*out = cq;
	return 0;
}

void smart__verbs_cq_destroy(struct smart_tp_cq *cq)
{
	if (!cq)
		return;
	ibv_destroy_cq(cq->cq);
	free(cq);
}

static int wc_status(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS: return SMART_TP_WC_OK;
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_INV_REQ_ERR: return SMART_TP_WC_REM_ACCESS;
	/* rxe reports a bad lkey as a local QP operation error, mlx5 as a
	 * local protection error: both are the caller's local buffer */
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_LEN_ERR: return SMART_TP_WC_LOC_PROT;
	case IBV_WC_WR_FLUSH_ERR: return SMART_TP_WC_FLUSH;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR: return SMART_TP_WC_RETRY_EXC;
	case IBV_WC_REM_OP_ERR: return SMART_TP_WC_BAD_WR;
	default: return SMART_TP_WC_FATAL;
	}
}

static uint8_t wc_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RDMA_READ: return SMART_TP_READ;
	case IBV_WC_RDMA_WRITE: return SMART_TP_WRITE;
	case IBV_WC_COMP_SWAP: return SMART_TP_CAS;
	case IBV_WC_FETCH_ADD: return SMART_TP_FAA;
	default: return 0;
	}
}

/* Completion of slot `slot`: everything before it on the QP is done. */
static void ring_retire(struct smart_tp_qp *qp, uint32_t slot)
{
	uint32_t next = slot + 1, head = atomic_load(&qp->head);

	/* slots are 16-bit positions of a 32-bit counter: rebuild it */
	next = (head & ~(uint32_t)0xffff) | (next & 0xffff);
	if ((int32_t)(next - head) < 0)
		next += 0x10000;
	while ((int32_t)(next - head) > 0 &&
	       !atomic_compare_exchange_weak(&qp->head, &head, next))
		;
}

int smart__verbs_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	struct ibv_wc iw[VERBS_POLL_MAX];
	int n, i;

	if (max > VERBS_POLL_MAX)
		max = VERBS_POLL_MAX;
	n = ibv_poll_cq(cq->cq, max, iw);
	if (n < 0)
		return SMART_ESYS;
	for (i = 0; i < n; i++) {
		struct smart_tp_qp *qp =
			(struct smart_tp_qp *)(uintptr_t)(iw[i].wr_id >> 16);
		uint32_t slot = (uint32_t)(iw[i].wr_id & 0xffff);

		wc[i].wr_id = qp->ring[slot & qp->mask].wr_id;
		wc[i].status = wc_status(iw[i].status);
		wc[i].opcode = iw[i].status == IBV_WC_SUCCESS ?
			       wc_opcode(iw[i].opcode) : 0;
		if (iw[i].status != IBV_WC_SUCCESS)
			atomic_store(&qp->error, 1);
		ring_retire(qp, slot);
	}
	return n;
}

static int qp_to_init(struct smart_tp_domain *d, struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = d->port,
		.qp_access_flags = IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ? SMART_ESYS : 0;
}

static int rd_atomic(const struct smart_tp_domain *d)
{
	return smart_min(d->dev.max_qp_rd_atom, VERBS_MAX_RD_ATOM);
}

static int qp_to_rtr(struct smart_tp_domain *d, struct ibv_qp *qp,
		     const struct verbs_qp_info *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = (enum ibv_mtu)smart_min((int)d->mtu, peer->mtu),
		.dest_qp_num = peer->qpn,
		.rq_psn = peer->psn,
		.max_dest_rd_atomic = (uint8_t)smart_min(rd_atomic(d),
						d->dev.max_qp_init_rd_atom),
		.min_rnr_timer = 12,
		.ah_attr = { .dlid = peer->lid, .port_num = d->port },
	};

	if (peer->has_gid && d->gid_index >= 0) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)d->gid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER) ? SMART_ESYS : 0;
}

int smart__verbs_qp_rts(struct smart_tp_domain *d, struct ibv_qp *qp,
			uint32_t my_psn, const struct verbs_qp_info *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = (uint8_t)d->ib_timeout,
		.retry_cnt = (uint8_t)d->ib_retry,
		.rnr_retry = 7,
		.sq_psn = my_psn,
		.max_rd_atomic = (uint8_t)rd_atomic(d),
	};
	int rc = qp_to_rtr(d, qp, peer);

	if (rc) {
		smart__err(d->log, "qp 0x%x to RTR: %m", qp->qp_num);
		return rc;
	}
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
		smart__err(d->log, "qp 0x%x to RTS: %m", qp->qp_num);
		return SMART_ESYS;
	}
	return 0;
}

static void local_info(struct smart_tp_domain *d, struct ibv_qp *qp,
		       uint32_t psn, struct verbs_qp_info *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = qp->qp_num;
	out->psn = psn;
	out->lid = d->lid;
	out->mtu = (uint8_t)d->mtu;
	out->has_gid = d->gid_index >= 0;
	if (out->has_gid)
		memcpy(out->gid, d->gid.raw, 16);
}

static uint32_t new_psn(const struct ibv_qp *qp)
{
	uint64_t x = (uint64_t)(uintptr_t)qp ^ ((uint64_t)qp->qp_num << 20);

	x ^= x >> 33;
	x *= UINT64_C(0xff51afd7ed558ccd);
	x ^= x >> 29;
	return (uint32_t)x & 0xffffff;
}

/* Give the QP a doorbell of its own: a thread domain in a parent domain
 * (mlx5 maps each thread domain to a dedicated UAR). */
static struct ibv_pd *own_doorbell_pd(struct smart_tp_qp *q)
{
	struct smart_tp_domain *d = q->d;
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pa = { 0 };

	q->td = ibv_alloc_td(d->ctx, &ta);
	if (!q->td)
		return d->pd;
	pa.pd = d->pd;
	pa.td = q->td;
	q->ppd = ibv_alloc_parent_domain(d->ctx, &pa);
	if (!q->ppd) {
		ibv_dealloc_td(q->td);
		q->td = NULL;
		return d->pd;
	}
	return q->ppd;
}

static int qp_alloc(struct smart_tp_qp *q, uint32_t n)
{
	struct smart_tp_domain *d = q->d;
	struct ibv_qp_init_attr ia = {
		.send_cq = q->cq->cq, .recv_cq = q->cq->cq,
		.qp_type = IBV_QPT_RC, .sq_sig_all = 0,
		.cap = { .max_send_wr = n, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = d->max_inline },
	};
	struct ibv_pd *pd = (q->flags & SMART_TP_OWN_DOORBELL) ?
			    own_doorbell_pd(q) : d->pd;

	q->qp = ibv_create_qp(pd, &ia);
	if (!q->qp) {
		smart__err(d->log, "ibv_create_qp(%u WRs): %m", n);
		return SMART_ENOMEM;
	}
	/* the domain's caps are the limit WRs are held to, whatever more
	 * this QP happened to get */
	q->max_inline = smart_min(ia.cap.max_inline_data, d->max_inline);
	q->psn = new_psn(q->qp);
	return qp_to_init(d, q->qp);
}

static void qp_free(struct smart_tp_qp *q)
{
	if (q->qp)
		ibv_destroy_qp(q->qp);
	if (q->ppd)
		ibv_dealloc_pd(q->ppd);
	if (q->td)
		ibv_dealloc_td(q->td);
	free(q->ring);
	free(q);
}

int smart__verbs_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			   const struct smart_tp_qp_attr *attr,
			   struct smart_tp_qp **out)
{
	struct smart_tp_qp *q;
	uint32_t n;
	int rc;

	if (!cq || !attr || !attr->max_send_wr ||
	    attr->max_send_wr > VERBS_MAX_SEND_WR ||
	    attr->max_send_wr > (uint32_t)d->dev.max_qp_wr)
		return SMART_EINVAL;
	n = (uint32_t)smart_roundup_pow2(attr->max_send_wr);
	q = calloc(1, sizeof(*q));
	if (!q)
		return SMART_ENOMEM;
	q->d = d;
	q->cq = cq;
	q->flags = attr->flags;
	q->mask = n - 1;
	smart_spin_init(&q->lock);
	q->ring = calloc(n, sizeof(*q->ring));
	rc = q->ring ? qp_alloc(q, attr->max_send_wr) : SMART_ENOMEM;
	if (rc) {
		qp_free(q);
		return rc;
	}
	/* the NIC may round up; never count on more than was asked for */
	q->mask = n - 1;
	*out = q;
	return 0;
}

int smart__verbs_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len)
{
	struct verbs_qp_info me;

	if (*len < 36)
		return SMART_EINVAL;
	local_info(qp->d, qp->qp, qp->psn, &me);
	*len = smart__verbs_info_pack(&me, blob);
	return 0;
}

int smart__verbs_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			    const void *peer_blob, size_t len)
{
	struct verbs_qp_info peer;
	int rc = smart__verbs_info_unpack(peer_blob, len, &peer);

	if (rc || !r)
		return rc ? rc : SMART_EINVAL;
	return smart__verbs_qp_rts(qp->d, qp->qp, qp->psn, &peer);
}

void smart__verbs_qp_destroy(struct smart_tp_qp *qp)
{
	if (qp)
		qp_free(qp);
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

static enum ibv_wr_opcode wr_opcode(uint8_t op)
{
	switch (op) {
	case SMART_TP_READ: return IBV_WR_RDMA_READ;
	case SMART_TP_WRITE: return IBV_WR_RDMA_WRITE;
	case SMART_TP_CAS: return IBV_WR_ATOMIC_CMP_AND_SWP;
	default: return IBV_WR_ATOMIC_FETCH_AND_ADD;
	}
}

/* Fill the i-th ibv_send_wr of the chain from ours; slot is its ring slot. */
static int build_wr(struct smart_tp_qp *q, int i, const struct smart_tp_wr *w,
		    uint32_t slot)
{
	struct ibv_send_wr *iw = &q->wr[i];
	struct ibv_sge *sg = &q->sge[i];

	if (w->opcode < SMART_TP_READ || w->opcode > SMART_TP_FAA)
		return SMART_EINVAL;
	/* Refuse a malformed atomic before anything is posted: providers
	 * reject it inside ibv_post_send, after the WRs before it went out. */
	if (w->opcode >= SMART_TP_CAS && (w->len != 8 || (w->remote & 7)))
		return SMART_EINVAL;
	memset(iw, 0, sizeof(*iw));
	sg->addr = (uint64_t)(uintptr_t)w->local;
	sg->length = w->len;
	sg->lkey = w->lkey;
	iw->wr_id = ((uint64_t)(uintptr_t)q << 16) | (slot & 0xffff);
	iw->sg_list = sg;
	iw->num_sge = 1;
	iw->opcode = wr_opcode(w->opcode);
	iw->send_flags = ((w->flags & SMART_TP_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
			 ((w->flags & SMART_TP_FENCE) ? IBV_SEND_FENCE : 0);
	/* never dropped silently: the bytes may be in memory no MR covers,
	 * and the NIC would fail the WR with a protection error */
	if ((w->flags & SMART_TP_INLINE) && w->opcode == SMART_TP_WRITE) {
		if (w->len > q->max_inline)
			return SMART_EINVAL;
		iw->send_flags |= IBV_SEND_INLINE;
	}
	if (w->opcode >= SMART_TP_CAS) {
		iw->wr.atomic.remote_addr = w->remote;
		iw->wr.atomic.rkey = w->rkey;
		iw->wr.atomic.compare_add = w->compare_add;
		iw->wr.atomic.swap = w->swap;
	} else {
		iw->wr.rdma.remote_addr = w->remote;
		iw->wr.rdma.rkey = w->rkey;
	}
	iw->next = NULL;
	if (i)
		q->wr[i - 1].next = iw;
	return 0;
}

static int post_locked(struct smart_tp_qp *q, const struct smart_tp_wr *wrs,
		       int n)
{
	uint32_t head = atomic_load_explicit(&q->head, memory_order_acquire);
	struct ibv_send_wr *bad = NULL;
	int i, rc;

	if (q->tail - head + (uint32_t)n > q->mask + 1)
		return SMART_EAGAIN;
	for (i = 0; i < n; i++) {
		rc = build_wr(q, i, &wrs[i], q->tail + (uint32_t)i);
		if (rc)
			return rc;
		q->ring[(q->tail + (uint32_t)i) & q->mask].wr_id = wrs[i].wr_id;
	}
	rc = ibv_post_send(q->qp, q->wr, &bad);
	if (rc) {
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

int smart__verbs_post(struct smart_tp_qp *q, const struct smart_tp_wr *wrs,
		      int n)
{
	int rc;

	if (smart_unlikely(n <= 0 || n > VERBS_MAX_CHAIN || !wrs))
		return n > VERBS_MAX_CHAIN ? SMART_EAGAIN : SMART_EINVAL;
	if (q->flags & SMART_TP_SHARED)
		smart_spin_lock(&q->lock);
	rc = post_locked(q, wrs, n);
	if (q->flags & SMART_TP_SHARED)
		smart_spin_unlock(&q->lock);
	return rc;
}

int smart__verbs_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
			const void *client_blob, size_t client_len,
			void *blob_out, size_t *blob_len,
			struct smart_tp_responder **out)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = d->resp_cq, .recv_cq = d->resp_cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct verbs_qp_info peer, me;
	struct smart_tp_responder *r;
	uint32_t psn;
	int rc = smart__verbs_info_unpack(client_blob, client_len, &peer);

	if (rc || *blob_len < 36)
		return rc ? rc : SMART_EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return SMART_ENOMEM;
	r->qp = ibv_create_qp(d->pd, &ia);
	rc = r->qp ? qp_to_init(d, r->qp) : SMART_ENOMEM;
	if (!rc) {
		psn = new_psn(r->qp);
		rc = smart__verbs_qp_rts(d, r->qp, psn, &peer);
	}
	if (rc) {
		smart__verbs_responder_destroy(r);
		return rc;
	}
	local_info(d, r->qp, psn, &me);
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
