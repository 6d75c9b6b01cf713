/*
 * shm transport: completion queues, queue pairs, post and poll.
 *
 * post() copies a chain into the QP's send queue and queues one doorbell
 * record on the CQ.  poll() prefetches the targets of the queued WRs in one
 * burst, then executes the doorbells in FIFO order, so WRs of one QP run
 * in posting order (rule 3), and turns signalled or failed WRs into
 * completions (rules 2 and 5).  A failed WR moves the QP to the error
 * state; everything behind it flushes.
 *
 * Copies go word by word in increasing address order with relaxed atomic
 * loads and stores on the remote side: exactly the guarantee of rule 4 (an
 * aligned 8-byte word never tears) and no more, so applications tested here
 * do not come to rely on a stronger one than RDMA gives.
 *
 * Fast path: no system call, no allocation, no lock unless SMART_TP_SHARED.
 *
 * With the RNIC model (shm_model.c) post rings the QP's modelled doorbell,
 * which stamps each WR with a completion time, and poll executes a WR only
 * once that time has come: its memory effect happens then, never earlier,
 * and never before an earlier WR of its QP.  Without the model each of
 * post and poll tests one pointer and runs the unmodelled code.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "transport/shm/shm.h"

int smart__shm_cq_create(struct smart_tp_domain *d, uint32_t depth,
			 uint32_t flags, struct smart_tp_cq **out)
{
	struct smart_tp_cq *cq;
	uint32_t n;

	if (depth < 1 || depth > SHM_MAX_CQE)
		return SMART_EINVAL;
	n = (uint32_t)smart_roundup_pow2(depth);
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return SMART_ENOMEM;
	cq->wc = calloc(n, sizeof(*cq->wc));
	cq->db = calloc(n, sizeof(*cq->db));
	if (!cq->wc || !cq->db) {
		free(cq->wc);
		free(cq->db);
		free(cq);
		return SMART_ENOMEM;
	}
	cq->d = d;
	cq->model = d->model;
	cq->flags = flags;
	cq->wc_mask = n - 1;
	cq->db_mask = n - 1;
	smart_spin_init(&cq->lock);
	*out = cq;
	return 0;
}

void smart__shm_cq_destroy(struct smart_tp_cq *cq)
{
	if (!cq)
		return;
	free(cq->wc);
	free(cq->db);
	free(cq);
}

int smart__shm_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			 const struct smart_tp_qp_attr *attr,
			 struct smart_tp_qp **out)
{
	struct smart_tp_qp *qp;
	uint32_t n;

	if (!cq || !attr || !attr->max_send_wr ||
	    attr->max_send_wr > SHM_MAX_SEND_WR)
		return SMART_EINVAL;
	n = (uint32_t)smart_roundup_pow2(attr->max_send_wr);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return SMART_ENOMEM;
	qp->sq = calloc(n, sizeof(*qp->sq));
	if (!qp->sq) {
		free(qp);
		return SMART_ENOMEM;
	}
	qp->d = d;
	qp->cq = cq;
	qp->flags = attr->flags;
	qp->sq_mask = n - 1;
	qp->state = SHM_QP_RESET;
	smart_spin_init(&qp->lock);
	if (smart__shm_model_qp_attach(qp)) {
		free(qp->sq);
		free(qp);
		return SMART_ENOMEM;
	}
	pthread_mutex_lock(&d->lock);
	qp->id = d->next_id++;
	pthread_mutex_unlock(&d->lock);
	*out = qp;
	return 0;
}

int smart__shm_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len)
{
	uint32_t v[2] = { SHM_QP_MAGIC, qp->id };

	if (*len < sizeof(v))
		return SMART_EINVAL;
	memcpy(blob, v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

int smart__shm_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			  const void *peer_blob, size_t len)
{
	uint32_t v[2];

	if (!r || !peer_blob || len != sizeof(v) || qp->state != SHM_QP_RESET)
		return SMART_EINVAL;
	memcpy(v, peer_blob, sizeof(v));
	if (v[0] != SHM_ACC_MAGIC)
		return SMART_EPROTO;
	qp->r = r;
	qp->state = SHM_QP_RTS;
	return 0;
}

/* Execute every doorbell still queued for qp so that none refers to it. */
static void shm_cq_forget_qp(struct smart_tp_cq *cq, struct smart_tp_qp *qp)
{
	uint32_t i, lost = 0;

	shm_lock(cq->flags, &cq->lock);
	for (i = cq->db_head; i != cq->db_tail; i++) {
		if (cq->db[i & cq->db_mask].qp == qp) {
			lost += cq->db[i & cq->db_mask].n;
			cq->db[i & cq->db_mask].n = 0;
		}
	}
	shm_unlock(cq->flags, &cq->lock);
	/* The model's device forgets them too (they never execute). */
	if (cq->model && lost)
		shm_model_retire(cq->model, lost);
}

void smart__shm_qp_destroy(struct smart_tp_qp *qp)
{
	if (!qp)
		return;
	shm_cq_forget_qp(qp->cq, qp);
	smart__shm_model_qp_detach(qp);
	free(qp->sq);
	free(qp);
}

int smart__shm_qp_in_error(const struct smart_tp_qp *qp)
{
	return qp->state == SHM_QP_ERR || qp->state == SHM_QP_DOOMED ||
	       (qp->r && atomic_load(&qp->r->failed));
}

/* Pointer into the mapping for [remote, remote+len), or NULL. */
static inline uint8_t *shm_remote_ptr(const struct smart_tp_remote *r,
				      uint64_t remote, uint64_t len)
{
	uint64_t off = remote - r->base;

	if (smart_unlikely(remote < r->base || off >= r->size ||
			   len > r->size - off))
		return NULL;
	return r->map + off;
}

static int shm_post_locked(struct smart_tp_qp *qp,
			   const struct smart_tp_wr *wrs, int n)
{
	struct smart_tp_cq *cq = qp->cq;
	uint32_t head = atomic_load_explicit(&qp->sq_head,
					     memory_order_acquire);
	int i;

	if (smart_unlikely(qp->sq_tail - head + (uint32_t)n > qp->sq_mask + 1))
		return SMART_EAGAIN;
	for (i = 0; i < n; i++) {
		const struct smart_tp_wr *wr = &wrs[i];
		struct shm_wqe *e = &qp->sq[(qp->sq_tail + i) & qp->sq_mask];

		e->wr = *wr;
		if ((wr->flags & SMART_TP_INLINE) &&
		    wr->opcode == SMART_TP_WRITE && wr->len <= SHM_MAX_INLINE &&
		    wr->local)
			memcpy(e->inl, wr->local, wr->len);
	}
	if (smart_unlikely(qp->model))
		return smart__shm_model_ring(qp, (uint32_t)n);
	shm_lock(cq->flags, &cq->lock);
	if (smart_unlikely(cq->db_tail - cq->db_head > cq->db_mask)) {
		shm_unlock(cq->flags, &cq->lock);
		return SMART_EAGAIN;
	}
	cq->db[cq->db_tail & cq->db_mask] = (struct shm_db){ qp, (uint32_t)n };
	cq->db_tail++;
	qp->sq_tail += (uint32_t)n;
	shm_unlock(cq->flags, &cq->lock);
	return 0;
}

int smart__shm_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n)
{
	int rc;

	if (smart_unlikely(n <= 0 || !wrs))
		return SMART_EINVAL;
	if (smart_unlikely(qp->state == SHM_QP_RESET))
		return SMART_EINVAL;
	shm_lock(qp->flags, &qp->lock);
	rc = shm_post_locked(qp, wrs, n);
	shm_unlock(qp->flags, &qp->lock);
	return rc;
}

/* Remote <- local or local <- remote, word-wise in increasing address
 * order; remote words are accessed atomically when aligned (rule 4). */
static void shm_copy_from_remote(uint8_t *dst, const uint8_t *src,
				 uint32_t len)
{
	while (len && ((uintptr_t)src & 7)) {
		*dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
		len--;
	}
	for (; len >= 8; len -= 8, src += 8, dst += 8) {
		uint64_t w = __atomic_load_n((const uint64_t *)src,
					     __ATOMIC_RELAXED);
		memcpy(dst, &w, 8);
	}
	while (len--)
		*dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
}

static void shm_copy_to_remote(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	while (len && ((uintptr_t)dst & 7)) {
		__atomic_store_n(dst++, *src++, __ATOMIC_RELAXED);
		len--;
	}
	for (; len >= 8; len -= 8, src += 8, dst += 8) {
		uint64_t w;

		memcpy(&w, src, 8);
		__atomic_store_n((uint64_t *)dst, w, __ATOMIC_RELAXED);
	}
	while (len--)
		__atomic_store_n(dst++, *src++, __ATOMIC_RELAXED);
}

/* Is [p, p+len) inside the local MR named by lkey? */
static inline int shm_local_ok(struct smart_tp_domain *d, uint32_t lkey,
			       const void *p, uint32_t len)
{
	struct shm_mr *mr = shm_mr_lookup(d, lkey);
	uintptr_t a = (uintptr_t)p, base;

	if (smart_unlikely(!mr))
		return 0;
	base = (uintptr_t)mr->pub.addr;
	return a >= base && a - base <= mr->pub.len &&
	       len <= mr->pub.len - (a - base);
}

static int shm_exec_atomic(struct smart_tp_qp *qp, const struct smart_tp_wr *wr,
			   uint8_t *rp)
{
	uint64_t old;

	if (wr->len != 8 || ((uintptr_t)rp & 7))
		return SMART_TP_WC_BAD_WR;
	if (wr->opcode == SMART_TP_CAS) {
		old = wr->compare_add;
		__atomic_compare_exchange_n((uint64_t *)rp, &old, wr->swap, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		old = __atomic_fetch_add((uint64_t *)rp, wr->compare_add,
					 __ATOMIC_SEQ_CST);
	}
	memcpy(wr->local, &old, 8);
	return SMART_TP_WC_OK;
}

/* Execute one WR; returns a completion status. */
static int shm_exec(struct smart_tp_qp *qp, struct shm_wqe *e)
{
	const struct smart_tp_wr *wr = &e->wr;
	int inl = (wr->flags & SMART_TP_INLINE) && wr->opcode == SMART_TP_WRITE;
	uint8_t *rp;

	if (smart_unlikely(wr->rkey != qp->r->rkey))
		return SMART_TP_WC_REM_ACCESS;
	rp = shm_remote_ptr(qp->r, wr->remote, wr->len);
	if (smart_unlikely(!rp))
		return SMART_TP_WC_REM_ACCESS;
	if (inl) {
		if (smart_unlikely(wr->len > SHM_MAX_INLINE))
			return SMART_TP_WC_BAD_WR;
	} else if (smart_unlikely(!shm_local_ok(qp->d, wr->lkey, wr->local,
						 wr->len))) {
		return SMART_TP_WC_LOC_PROT;
	}
	switch (wr->opcode) {
	case SMART_TP_READ:
		if (smart_likely(wr->len == 8 && !((uintptr_t)rp & 7))) {
			uint64_t v = __atomic_load_n((uint64_t *)rp,
						     __ATOMIC_RELAXED);
			memcpy(wr->local, &v, 8);
			return SMART_TP_WC_OK;
		}
		shm_copy_from_remote(wr->local, rp, wr->len);
		return SMART_TP_WC_OK;
	case SMART_TP_WRITE:
		shm_copy_to_remote(rp, inl ? e->inl : wr->local, wr->len);
		return SMART_TP_WC_OK;
	case SMART_TP_CAS:
	case SMART_TP_FAA:
		return shm_exec_atomic(qp, wr, rp);
	default:
		return SMART_TP_WC_BAD_WR;
	}
}

/* Where completions go during one poll: straight into the caller's array
 * while it has room and nothing older waits in the ring, else the ring. */
struct shm_out {
	struct smart_tp_wc *wc;
	int n, max;
	uint32_t failures;	/* d->failures when the poll began */
};

static inline void shm_complete(struct smart_tp_cq *cq, struct shm_out *o,
				const struct smart_tp_wr *wr, int status)
{
	struct smart_tp_wc *wc;

	if (smart_likely(o->n < o->max && cq->wc_head == cq->wc_tail))
		wc = &o->wc[o->n++];
	else
		wc = &cq->wc[cq->wc_tail++ & cq->wc_mask];
	wc->wr_id = wr->wr_id;
	wc->status = status;
	wc->opcode = wr->opcode;
}

/* Run the doorbell's WRs while the ring has room for each one's possible
 * completion and, when modelled, while the next WR's completion time has
 * come (*ran counts what ran).  Returns 0 when it had to stop early.
 * Always inlined with a constant `modelled`, so the unmodelled poll
 * carries none of the model's tests. */
static inline __attribute__((always_inline)) int
shm_run_db_at(struct smart_tp_cq *cq, struct shm_db *db, struct shm_out *o,
	      int modelled, uint64_t now, uint32_t *ran)
{
	struct smart_tp_qp *qp = db->qp;
	uint32_t head, first;

	if (!db->n)	/* emptied by a destroyed QP: qp may be gone */
		return 1;
	/* a failed remote (dead blade, fenced client): the first WR fails
	 * as a lost peer would, everything behind it flushes unexecuted */
	if (smart_unlikely(o->failures) &&
	    atomic_load_explicit(&qp->r->failed, memory_order_acquire) &&
	    qp->state == SHM_QP_RTS)
		qp->state = SHM_QP_DOOMED;
	head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	first = head;
	for (; db->n; db->n--, head++) {
		struct shm_wqe *e = &qp->sq[head & qp->sq_mask];
		int st = SMART_TP_WC_FLUSH;

		if (cq->wc_tail - cq->wc_head > cq->wc_mask)
			break;
		if (modelled && e->due > now)
			break;
		if (smart_likely(qp->state == SHM_QP_RTS)) {
			st = shm_exec(qp, e);
			if (smart_unlikely(st != SMART_TP_WC_OK))
				qp->state = SHM_QP_ERR;
		} else if (qp->state == SHM_QP_DOOMED) {
			st = SMART_TP_WC_FATAL;
			qp->state = SHM_QP_ERR;
		}
		if (st != SMART_TP_WC_OK || (e->wr.flags & SMART_TP_SIGNALED))
			shm_complete(cq, o, &e->wr, st);
	}
	atomic_store_explicit(&qp->sq_head, head, memory_order_release);
	if (modelled)
		*ran += head - first;
	return db->n == 0;
}

static int shm_run_db(struct smart_tp_cq *cq, struct shm_db *db,
		      struct shm_out *o)
{
	return shm_run_db_at(cq, db, o, 0, 0, NULL);
}

/* Prefetch the targets of up to SHM_TOUCH_MAX queued WRs in one tight loop
 * before executing any: the misses then overlap, as the reads of a NIC's
 * pipeline do.  (Prefetching at post time instead, spread out between
 * task switches, measured slower: the loads must be issued together.) */
#define SHM_TOUCH_MAX 32

static void shm_touch(struct smart_tp_cq *cq)
{
	uint32_t i, h, budget = SHM_TOUCH_MAX;

	cq->touch_gen++;
	for (i = cq->db_head; i != cq->db_tail && budget; i++) {
		const struct shm_db *db = &cq->db[i & cq->db_mask];
		struct smart_tp_qp *qp = db->qp;

		if (!db->n || qp->touch_gen == cq->touch_gen || !qp->r)
			continue;
		qp->touch_gen = cq->touch_gen;
		h = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
		for (; h != qp->sq_tail && budget; h++, budget--) {
			const struct smart_tp_wr *wr =
				&qp->sq[h & qp->sq_mask].wr;
			const uint8_t *p = shm_remote_ptr(qp->r, wr->remote, 1);

			if (p)
				__builtin_prefetch(p, 0, 3);
		}
	}
}

/* Model: is the oldest queued WR due?  Prefetching is worth its loop only
 * when something will run now. */
static int shm_head_due(const struct smart_tp_cq *cq, uint64_t now)
{
	const struct shm_db *db = &cq->db[cq->db_head & cq->db_mask];
	const struct smart_tp_qp *qp = db->qp;
	uint32_t h;

	if (!db->n)
		return 1;
	h = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	return qp->sq[h & qp->sq_mask].due <= now;
}

/* The modelled half of poll: run, in FIFO order, the WRs whose completion
 * time has come, and let them leave the device. */
static void shm_poll_model(struct smart_tp_cq *cq, struct shm_out *o)
{
	uint64_t now = shm_model_now(cq->model);
	uint32_t ran = 0;

	if (o->n < o->max && cq->db_head != cq->db_tail &&
	    shm_head_due(cq, now))
		shm_touch(cq);
	while (o->n < o->max && cq->db_head != cq->db_tail) {
		if (!shm_run_db_at(cq, &cq->db[cq->db_head & cq->db_mask], o,
				   1, now, &ran))
			break;
		cq->db_head++;
	}
	if (ran)
		shm_model_retire(cq->model, ran);
}

int smart__shm_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	struct shm_out o = { wc, 0, max, atomic_load_explicit(
		&cq->d->failures, memory_order_acquire) };

	shm_lock(cq->flags, &cq->lock);
	while (o.n < max && cq->wc_head != cq->wc_tail)
		wc[o.n++] = cq->wc[cq->wc_head++ & cq->wc_mask];
	if (smart_unlikely(cq->model)) {
		shm_poll_model(cq, &o);
		shm_unlock(cq->flags, &cq->lock);
		return o.n;
	}
	if (o.n < max && cq->db_head != cq->db_tail)
		shm_touch(cq);
	while (o.n < max && cq->db_head != cq->db_tail) {
		if (!shm_run_db(cq, &cq->db[cq->db_head & cq->db_mask], &o))
			break;
		cq->db_head++;
	}
	shm_unlock(cq->flags, &cq->lock);
	return o.n;
}
