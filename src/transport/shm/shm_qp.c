/*
 * shm transport: completion queues, queue pairs, post and poll.
 *
 * post() copies a chain into the QP's send queue and queues one doorbell
 * record on the CQ; a chain of SENDs and WRITE_IMMs on a QP with nothing
 * queued runs at once instead (a message leaves at post, not at the
 * sender's next poll; what it could not run is queued).  poll() prefetches the targets of the queued WRs in one
 * burst, then executes the doorbells in FIFO order, so WRs of one QP run
 * in posting order (rule 3), and turns signalled or failed WRs into
 * completions (rules 2 and 5).  A failed WR moves the QP to the error
 * state; everything behind it flushes.
 *
 * Copies go word by word with relaxed atomic loads and stores on the
 * remote side, a long run of words as one `rep movsq` on x86-64 (shm.h):
 * the guarantee of rule 4 (an aligned 8-byte word never tears), no
 * more.  The
 * adversarial mode (shm_adv.c) drops the order too and pauses mid-copy, so
 * that applications tested on it do not come to rely on more than RDMA
 * gives.
 *
 * Fast path: no system call, no allocation, no lock unless SMART_TP_SHARED.
 *
 * With the RNIC model (shm_model.c) post rings the QP's modelled doorbell,
 * which stamps each WR with a completion time, and poll executes a WR only
 * once that time has come: its memory effect happens then, never earlier,
 * and never before an earlier WR of its QP.  In the sim transport a
 * one-sided WR runs earlier, at its responder time, as an event of the
 * engine (shm_model.c, smart__shm_resp_exec); the poll then completes it
 * with the status it kept.  With the adversarial mode,
 * poll runs WRs through the adversary and hands completions to it; post
 * is unchanged.  With neither, post tests one pointer (qp->model) and poll
 * one flag (cq->special), and each runs the plain code.
 */
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/mutant.h"

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
	cq->evfd = -1;
	smart_spin_init(&cq->lock);
	if ((d->adv && smart__shm_adv_cq_init(cq, n)) ||
	    ((flags & SMART_TP_CQ_EVENTS) &&
	     (cq->evfd = epoll_create1(EPOLL_CLOEXEC)) < 0)) {
		smart__shm_cq_destroy(cq);
		return SMART_ENOMEM;
	}
	cq->special = cq->model || cq->adv;
	*out = cq;
	return 0;
}

int smart__shm_cq_event_fd(const struct smart_tp_cq *cq)
{
	return cq->evfd;
}

/* Take the wake-ups signalled so far: at most SHM_WAKE_DRAIN datagrams
 * of at most as many sockets, so that a peer sending without end cannot
 * hold us here (what is left keeps the set readable: a spurious wake). */
#define SHM_WAKE_DRAIN 64

static void shm_wakes_drain(struct smart_tp_cq *cq)
{
	struct epoll_event ev[SHM_WAKE_DRAIN];
	int n = epoll_wait(cq->evfd, ev, SHM_WAKE_DRAIN, 0);
	char b;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < SHM_WAKE_DRAIN &&
				recv(ev[i].data.fd, &b, 1, MSG_DONTWAIT) >= 0;
		     k++)
			;
}

/* Rule 9.  Drain the wake sockets, then mark every receive segment of the
 * CQ armed (seq_cst: against the sender's delivery, then its look at
 * armed, one of the two sees the other; the caller's next poll is the
 * other half).  Not sleepable while doorbells wait (only our polls run
 * them: WRs not executed yet, SENDs waiting for a receive), completions
 * wait in the ring, the adversary holds some, or the senders' barrier
 * failed. */
int smart__shm_cq_arm(struct smart_tp_cq *cq)
{
	int busy;

	if (cq->evfd < 0)
		return SMART_EINVAL;
	shm_wakes_drain(cq);
	shm_lock(cq->flags, &cq->lock);
	busy = cq->db_head != cq->db_tail || cq->wc_head != cq->wc_tail ||
	       (cq->adv && cq->adv->nheld) ||
	       (cq->special && atomic_load(&cq->dead));
	for (uint32_t i = 0; !busy && i < cq->nrq; i++)
		smart__shm_rq_arm(cq->rqs[i]);
	shm_unlock(cq->flags, &cq->lock);
	atomic_thread_fence(memory_order_seq_cst);
	/* the senders' half of the barrier (shm_recv.c peer_wake); a
	 * barrier that failed (ENOMEM: the kernel allocates for it) ordered
	 * no sender's store, so a sleep could miss a delivery: poll instead */
	if (!busy && cq->nrq && cq->d->membarrier &&
	    syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0))
		busy = !SMART_M_SHM_ARM_IGNORES_BARRIER;
	return busy ? SMART_EAGAIN : 0;
}

/* The RNIC model gives a QP that asks a doorbell of its own (a register
 * per QP, docs/nic-model.md); the CQ holds none itself. */
int smart__shm_cq_own_doorbell(const struct smart_tp_cq *cq)
{
	return (cq->flags & SMART_TP_OWN_DOORBELL) && cq->model;
}

void smart__shm_cq_destroy(struct smart_tp_cq *cq)
{
	if (!cq)
		return;
	smart__shm_adv_cq_fini(cq);
	if (cq->evfd >= 0)
		close(cq->evfd);
	free(cq->rqs);
	free(cq->wc);
	free(cq->db);
	free(cq);
}

/* A receive queue for qp, and its place in the CQ's list of queues that
 * poll looks at (rule 8). */
static int shm_qp_add_rq(struct smart_tp_qp *qp,
			 const struct smart_tp_qp_attr *attr)
{
	struct smart_tp_cq *cq = qp->cq;
	struct smart_tp_qp **rqs;
	int rc = smart__shm_rq_create(qp, attr);

	if (rc)
		return rc;
	shm_lock(cq->flags, &cq->lock);
	if (cq->nrq == cq->rq_cap) {
		rqs = realloc(cq->rqs, (cq->rq_cap * 2 + 4) * sizeof(*rqs));
		if (!rqs) {
			shm_unlock(cq->flags, &cq->lock);
			smart__shm_rq_destroy(qp);
			return SMART_ENOMEM;
		}
		cq->rqs = rqs;
		cq->rq_cap = cq->rq_cap * 2 + 4;
	}
	cq->rqs[cq->nrq++] = qp;
	shm_unlock(cq->flags, &cq->lock);
	return 0;
}

static void shm_qp_drop_rq(struct smart_tp_qp *qp)
{
	struct smart_tp_cq *cq = qp->cq;
	uint32_t i;

	if (!qp->rq)
		return;
	shm_lock(cq->flags, &cq->lock);
	for (i = 0; i < cq->nrq; i++)
		if (cq->rqs[i] == qp) {
			cq->rqs[i] = cq->rqs[--cq->nrq];
			break;
		}
	shm_unlock(cq->flags, &cq->lock);
	smart__shm_rq_destroy(qp);
}

/* The FIFO, its doorbells kept in order, in an array of size entries. */
static int shm_db_grow(struct smart_tp_cq *cq, uint32_t size)
{
	uint32_t count = cq->db_tail - cq->db_head;
	struct shm_db *db = calloc(size, sizeof(*db));

	if (!db)
		return SMART_ENOMEM;
	for (uint32_t i = 0; i < count; i++)
		db[i] = cq->db[(cq->db_head + i) & cq->db_mask];
	free(cq->db);
	cq->db = db;
	cq->db_head = 0;
	cq->db_tail = count;
	cq->db_mask = size - 1;
	return 0;
}

/* A QP of n send queue entries joins cq: the doorbell FIFO grows first,
 * so that it holds more doorbells than all its QPs can have queued at
 * once (each doorbell holds at least one WR of its QP's send queue, and a
 * destroyed QP's leave with it, shm_cq_forget_qp), one spare for a
 * requeue; or the QP is refused, as verbs refuses a QP its CQ cannot
 * grow for.  A post then never meets a full FIFO, however long a peer
 * keeps our SENDs waiting for a receive (rule 8, up to SHM_RNR_NS): a
 * full FIFO would refuse every other QP's post meanwhile. */
static int shm_cq_commit(struct smart_tp_cq *cq, uint32_t n)
{
	uint64_t need;
	int rc = 0;

	shm_lock(cq->flags, &cq->lock);
	need = (uint64_t)cq->committed + n + 1;
	if (need > (uint64_t)cq->db_mask + 1 && !SMART_M_SHM_DB_FIXED)
		rc = need > SHM_MAX_CQE ?
			     SMART_ENOMEM :
			     shm_db_grow(cq,
					 (uint32_t)smart_roundup_pow2(need));
	if (!rc)
		cq->committed += n;
	shm_unlock(cq->flags, &cq->lock);
	return rc;
}

static void shm_cq_uncommit(struct smart_tp_cq *cq, uint32_t n)
{
	shm_lock(cq->flags, &cq->lock);
	cq->committed -= n;
	shm_unlock(cq->flags, &cq->lock);
}

int smart__shm_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			 const struct smart_tp_qp_attr *attr,
			 struct smart_tp_qp **out)
{
	struct smart_tp_qp *qp;
	uint32_t n;
	int rc;

	if (!cq || !attr || !attr->max_send_wr ||
	    attr->max_send_wr > SHM_MAX_SEND_WR)
		return SMART_EINVAL;
	n = (uint32_t)smart_roundup_pow2(attr->max_send_wr);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return SMART_ENOMEM;
	qp->sq = calloc(n, sizeof(*qp->sq));
	if (!qp->sq || shm_cq_commit(cq, n)) {
		free(qp->sq);
		free(qp);
		return SMART_ENOMEM;
	}
	qp->d = d;
	qp->cq = cq;
	qp->flags = attr->flags;
	qp->sq_mask = n - 1;
	qp->state = SHM_QP_RESET;
	smart_spin_init(&qp->lock);
	if (attr->max_recv_wr && (rc = shm_qp_add_rq(qp, attr))) {
		shm_cq_uncommit(cq, n);
		free(qp->sq);
		free(qp);
		return rc;
	}
	if (smart__shm_model_qp_attach(qp)) {
		shm_qp_drop_rq(qp);
		shm_cq_uncommit(cq, n);
		free(qp->sq);
		free(qp);
		return SMART_ENOMEM;
	}
	pthread_mutex_lock(&d->lock);
	qp->id = d->next_id++;
	qp->d_next = d->qps; /* mr_free empties its cached MR */
	if (d->qps)
		d->qps->d_prev = qp;
	d->qps = qp;
	pthread_mutex_unlock(&d->lock);
	*out = qp;
	return 0;
}

int smart__shm_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len)
{
	uint32_t v[2] = { SHM_QP_MAGIC, qp->id };

	if (qp->rq)
		return smart__shm_peer_blob(qp, blob, len);
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

	if (!r || !peer_blob || len != sizeof(v) || qp->state != SHM_QP_RESET ||
	    qp->rq)
		return SMART_EINVAL; /* a QP with receives has a peer */
	memcpy(v, peer_blob, sizeof(v));
	if (v[0] != SHM_ACC_MAGIC)
		return SMART_EPROTO;
	qp->r = r;
	qp->rw = shm_region_rw(r);
	qp->state = SHM_QP_RTS;
	qp->plain = qp->rw && !qp->model && !(qp->flags & SMART_TP_SHARED) &&
		    !(qp->cq->flags & SMART_TP_SHARED) && !qp->cq->special;
	return 0;
}

/* Take qp's doorbells out of the FIFO (they never execute), the others
 * kept in order, and its send queue's entries out of the CQ's count: no
 * doorbell refers to it, and the FIFO holds only live QPs' doorbells
 * (shm_cq_commit's bound). */
static void shm_cq_forget_qp(struct smart_tp_cq *cq, struct smart_tp_qp *qp)
{
	uint32_t i, j, lost = 0;

	shm_lock(cq->flags, &cq->lock);
	for (i = j = cq->db_head; i != cq->db_tail; i++) {
		struct shm_db e = cq->db[i & cq->db_mask];

		if (e.qp == qp)
			lost += e.n;
		else
			cq->db[j++ & cq->db_mask] = e;
	}
	cq->db_tail = j;
	/* the newest record may be another now, or qp's gone: none grows
	 * (a QP made later at qp's address would grow another's record) */
	if (!SMART_M_SHM_DB_GROW_KEPT)
		cq->db_grow = NULL;
	cq->committed -= qp->sq_mask + 1;
	shm_unlock(cq->flags, &cq->lock);
	/* The model's device forgets them too (they never execute). */
	if (cq->model && lost)
		shm_model_retire(cq->model, lost);
}

void smart__shm_qp_destroy(struct smart_tp_qp *qp)
{
	if (!qp)
		return;
	pthread_mutex_lock(&qp->d->lock);
	if (qp->d_prev)
		qp->d_prev->d_next = qp->d_next;
	else
		qp->d->qps = qp->d_next;
	if (qp->d_next)
		qp->d_next->d_prev = qp->d_prev;
	pthread_mutex_unlock(&qp->d->lock);
	shm_cq_forget_qp(qp->cq, qp);
	smart__shm_model_qp_detach(qp);
	shm_qp_drop_rq(qp); /* its receive queue and peer mapping */
	free(qp->sq);
	free(qp);
}

int smart__shm_qp_in_error(const struct smart_tp_qp *qp)
{
	return qp->state == SHM_QP_ERR || qp->state == SHM_QP_DOOMED ||
	       (qp->r && atomic_load(&qp->r->failed));
}

/* A chain of SENDs and WRITE_IMMs only: messaging's, which gains from
 * going at once (a READ's chain gains more from its poll's prefetch). */
static int shm_two_sided(const struct smart_tp_wr *wrs, int n)
{
	for (int i = 0; i < n; i++)
		if (wrs[i].opcode != SMART_TP_SEND &&
		    wrs[i].opcode != SMART_TP_WRITE_IMM)
			return 0;
	return 1;
}

/* Run a chain of SENDs and WRITE_IMMs posted on a QP with nothing queued
 * (rule 3 holds: nothing of its QP is before them) from the caller's WRs,
 * not copied to the send queue first: a message leaves at post, not at
 * the sender's next poll.  Returns how many ran; the rest is queued as
 * any chain (a SEND met no receive, the CQ's ring had no room for a
 * completion, or one failed: its QP is in error, those behind it flush
 * at the next poll, as verbs flushes them). */
static int shm_send_now(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
			int n)
{
	struct smart_tp_cq *cq = qp->cq;
	int i;

	for (i = 0; i < n && qp->state == SHM_QP_RTS &&
		    cq->wc_tail - cq->wc_head <= cq->wc_mask;
	     i++) {
		const struct smart_tp_wr *wr = &wrs[i];
		int st = smart__shm_exec_send_wr(qp, wr, wr->local);
		struct smart_tp_wc *wc;

		if (st == SHM_ST_RNR_WAIT)
			break;
		if (st != SMART_TP_WC_OK)
			qp->state = SHM_QP_ERR;
		else if (!(wr->flags & SMART_TP_SIGNALED))
			continue;
		wc = &cq->wc[cq->wc_tail++ & cq->wc_mask];
		shm_wc_fill(wc, wr, st);
	}
	return i;
}

/* Copy n WRs (and inline bytes) into the send queue behind its tail
 * (inline: a call cost as much as the copy of one WR). */
static inline __attribute__((always_inline)) void
shm_sq_fill(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs, int n)
{
	for (int i = 0; i < n; i++) {
		const struct smart_tp_wr *wr = &wrs[i];
		struct shm_wqe *e =
			&qp->sq[(qp->sq_tail + (uint32_t)i) & qp->sq_mask];

		e->wr = *wr;
		if (shm_wr_inline(wr))
			memcpy(e->inl, wr->local, wr->len);
	}
}

/* Queue a doorbell record for n WRs of qp behind the CQ's FIFO; cq->lock
 * held.  When the chain is one-sided and the newest record is a one-sided
 * one of qp's, their WRs are contiguous in qp's send queue and would run
 * back to back in the FIFO: the record grows instead (a poll then walks
 * one record for the chains of many tasks on one QP, as a NIC fetches
 * WQEs behind one doorbell).  A record is run from its QP's sq_head, so
 * one grown while partly run keeps the order of rule 3.  Messaging's
 * SENDs keep a record per post: one waiting for a receive (rule 8) is
 * requeued alone. */
static inline __attribute__((always_inline)) int
shm_db_grows(const struct smart_tp_cq *cq, const struct smart_tp_qp *qp)
{
	/* cq->db_grow: the QP of the newest record when that is a one-sided
	 * one (a record in the FIFO holds at least one WR: a poll that runs
	 * one whole takes it out) */
	return cq->db_tail != cq->db_head && cq->db_grow == qp;
}

static inline __attribute__((always_inline)) void
shm_db_ring(struct smart_tp_cq *cq, struct smart_tp_qp *qp, uint32_t n,
	    int one_sided)
{
	if (one_sided && shm_db_grows(cq, qp)) {
		cq->db[(cq->db_tail - 1) & cq->db_mask].n += n;
		return;
	}
	cq->db[cq->db_tail++ & cq->db_mask] = (struct shm_db){
		qp, n, (uint32_t)(one_sided && qp->rw)
	};
	cq->db_grow = one_sided ? qp : NULL;
}

/* A chain with a SEND or WRITE_IMM, or any chain under the RNIC model:
 * each WR checked before anything is copied, and messaging's chain may run
 * at once (shm_send_now). */
static __attribute__((noinline)) int
shm_post_general(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs, int n,
		 uint32_t head)
{
	struct smart_tp_cq *cq = qp->cq;
	int i, one_sided = 1;

	for (i = 0; i < n; i++) { /* the whole chain or nothing */
		if (smart_unlikely(
			    shm_wr_inline(&wrs[i]) &&
			    (wrs[i].len > SHM_MAX_INLINE || !wrs[i].local)))
			return SMART_EINVAL;
		if (smart_likely(wrs[i].opcode < SMART_TP_SEND))
			continue;
		one_sided = 0;
		if (smart__shm_send_check(qp, &wrs[i]))
			return SMART_EINVAL;
	}
	if (smart_unlikely(qp->model)) {
		shm_sq_fill(qp, wrs, n);
		return smart__shm_model_ring(qp, (uint32_t)n);
	}
	shm_lock(cq->flags, &cq->lock);
	if (smart_unlikely(cq->db_tail - cq->db_head > cq->db_mask)) {
		shm_unlock(cq->flags, &cq->lock);
		return SMART_EAGAIN; /* before anything ran */
	}
	if (!one_sided && qp->sq_tail == head && !cq->special &&
	    !atomic_load_explicit(&qp->d->failures, memory_order_relaxed) &&
	    shm_two_sided(wrs, n)) {
		int ran = shm_send_now(qp, wrs, n);

		wrs += ran;
		n -= ran;
	}
	if (n) {
		shm_sq_fill(qp, wrs, n);
		qp->sq_tail += (uint32_t)n;
		shm_db_ring(cq, qp, (uint32_t)n, one_sided);
	}
	shm_unlock(cq->flags, &cq->lock);
	return 0;
}

/* An inline WRITE's data, copied into its entry at post (the caller's
 * buffer may change once post returns); 0 or SMART_EINVAL. */
static inline __attribute__((always_inline)) int
shm_wqe_inline(struct shm_wqe *e, const struct smart_tp_wr *wr)
{
	if (smart_unlikely(wr->flags & SMART_TP_INLINE) &&
	    wr->opcode == SMART_TP_WRITE) {
		if (wr->len > SHM_MAX_INLINE || !wr->local)
			return SMART_EINVAL;
		/* a word by one copy: the general one's loops cost an 8-B
		 * WRITE's post1 15 instructions */
		if (smart_likely(wr->len == 8))
			memcpy(e->inl, wr->local, 8);
		else
			memcpy(e->inl, wr->local, wr->len);
	}
	return 0;
}

/* The tail moved over n written entries and their doorbell record, under
 * the CQ's lock; SMART_EAGAIN before anything when the doorbell FIFO is
 * full. */
static inline __attribute__((always_inline)) int
shm_sq_publish(struct smart_tp_qp *qp, uint32_t n)
{
	struct smart_tp_cq *cq = qp->cq;

	shm_lock(cq->flags, &cq->lock);
	if (shm_db_grows(cq, qp)) { /* shm_db_ring's growth, no new record */
		cq->db[(cq->db_tail - 1) & cq->db_mask].n += n;
	} else {
		if (smart_unlikely(cq->db_tail - cq->db_head > cq->db_mask)) {
			shm_unlock(cq->flags, &cq->lock);
			return SMART_EAGAIN; /* before anything ran */
		}
		cq->db[cq->db_tail++ & cq->db_mask] = (struct shm_db){
			qp, n, (uint32_t)qp->rw
		};
		cq->db_grow = qp;
	}
	qp->sq_tail += n;
	shm_unlock(cq->flags, &cq->lock);
	return 0;
}

/* The one-sided chain (READ, WRITE, CAS, FAA): each WR is copied to the
 * send queue behind its tail as it is checked, in one pass; the tail
 * moves only once the whole chain passed, so a refused chain leaves
 * nothing (the entries it wrote are free ones).  A SEND or WRITE_IMM, or
 * the model, goes the general way. */
static int shm_post_locked(struct smart_tp_qp *qp,
			   const struct smart_tp_wr *wrs, int n)
{
	uint32_t head = atomic_load_explicit(&qp->sq_head,
					     memory_order_acquire);
	uint32_t tail = qp->sq_tail;

	if (smart_unlikely(tail - head + (uint32_t)n > qp->sq_mask + 1))
		return SMART_EAGAIN;
	if (smart_unlikely(qp->model))
		return shm_post_general(qp, wrs, n, head);
	for (int i = 0; i < n; i++) {
		const struct smart_tp_wr *wr = &wrs[i];
		struct shm_wqe *e = &qp->sq[(tail + (uint32_t)i) & qp->sq_mask];

		if (smart_unlikely(wr->opcode >= SMART_TP_SEND))
			return shm_post_general(qp, wrs, n, head);
		e->wr = *wr;
		if (shm_wqe_inline(e, wr))
			return SMART_EINVAL;
	}
	return shm_sq_publish(qp, (uint32_t)n);
}

int smart__shm_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n)
{
	int rc;

	if (smart_unlikely(n <= 0 || !wrs))
		return SMART_EINVAL;
	if (smart_unlikely(qp->state == SHM_QP_RESET))
		return SMART_EINVAL;
	if (smart_unlikely(qp->cq->special) && atomic_load(&qp->cq->dead))
		return SMART_EQP; /* it would never complete */
	shm_lock(qp->flags, &qp->lock);
	rc = shm_post_locked(qp, wrs, n);
	shm_unlock(qp->flags, &qp->lock);
	return rc;
}

/* post(qp, wr, 1) of one one-sided WR on a plain QP (transport.h): the
 * entry behind the tail written and checked as shm_post_locked does, the
 * tail moved and the doorbell record written or grown as shm_sq_publish
 * does, without post's entry tests for a chain of any kind, the chain's
 * loop, or the locks (a plain QP and its CQ are not shared).  A QP or a
 * WR that takes post's general way is refused whole: SMART_ENOTSUP. */
int smart__shm_post1(struct smart_tp_qp *qp, const struct smart_tp_wr *wr)
{
	struct smart_tp_cq *cq = qp->cq;
	uint32_t tail = qp->sq_tail;
	struct shm_wqe *e;

	if (smart_unlikely(!SMART_M_SHM_POST1_ANY_QP && !qp->plain) ||
	    smart_unlikely(wr->opcode >= SMART_TP_SEND))
		return SMART_ENOTSUP;
	if (!SMART_M_SHM_POST1_NO_ROOM &&
	    smart_unlikely(tail - atomic_load_explicit(&qp->sq_head,
						       memory_order_acquire) >
			   qp->sq_mask))
		return SMART_EAGAIN; /* full: post waits for room in turn */
	e = &qp->sq[tail & qp->sq_mask];
	e->wr = *wr;
	if (shm_wqe_inline(e, wr))
		return SMART_EINVAL;
	if (shm_db_grows(cq, qp)) { /* shm_db_ring's growth, no new record */
		cq->db[(cq->db_tail - 1) & cq->db_mask].n++;
	} else {
		if (smart_unlikely(cq->db_tail - cq->db_head > cq->db_mask))
			return SMART_EAGAIN; /* the entry stays free */
		cq->db[cq->db_tail++ & cq->db_mask] = (struct shm_db){
			qp, 1, 1
		}; /* plain: qp->rw */
		cq->db_grow = qp;
	}
	qp->sq_tail = tail + 1;
	return 0;
}

/* Execute one WR; returns a completion status.  Inline in the plain
 * poll's loop (out of line it cost a fifth of the WR's execution). */
static inline __attribute__((always_inline)) int
shm_exec_1s(struct smart_tp_qp *qp, struct shm_wqe *e, int fast,
	    const struct smart_tp_remote *rw);

static inline __attribute__((always_inline)) int
shm_exec(struct smart_tp_qp *qp, struct shm_wqe *e)
{
	if (smart_unlikely(e->wr.opcode >= SMART_TP_SEND))
		return smart__shm_exec_send(qp, e);
	return shm_exec_1s(qp, e, 0, NULL);
}

/* shm_exec of a one-sided WR (READ, WRITE, CAS, FAA; another opcode is
 * refused by shm_exec_atomic): the checks of its remote range, key and
 * local MR (shm_wr_check_at: fast, the plain one-sided run's, rw its
 * region), then the access. */
static inline __attribute__((always_inline)) int
shm_exec_1s(struct smart_tp_qp *qp, struct shm_wqe *e, int fast,
	    const struct smart_tp_remote *rw)
{
	const struct smart_tp_wr *wr = &e->wr;
	const uint8_t *src;
	uint8_t *rp;
	int st;

	st = shm_wr_check_at(qp, wr, &rp, fast, rw);
	if (smart_unlikely(st != SMART_TP_WC_OK))
		return st;
	switch (wr->opcode) {
	case SMART_TP_READ:
		if (smart_likely(wr->len == 8 && !((uintptr_t)rp & 7))) {
			shm_word_move(wr->local, rp, 1);
			return SMART_TP_WC_OK;
		}
		shm_copy_from_remote(wr->local, rp, wr->len);
		return SMART_TP_WC_OK;
	case SMART_TP_WRITE:
		src = shm_wr_inline(wr) ? e->inl : wr->local;
		/* an aligned word, as shm_copy_to_remote stores it, without
		 * its loops: they cost an 8-B WRITE 25 instructions */
		if (smart_likely(wr->len == 8 && !((uintptr_t)rp & 7))) {
			shm_word_move(rp, src, 0);
			return SMART_TP_WC_OK;
		}
		shm_copy_to_remote(rp, src, wr->len);
		return SMART_TP_WC_OK;
	default: /* CAS, FAA or a bad opcode */
		return shm_exec_atomic(wr, rp);
	}
}

/* Where completions go during one poll: straight into the caller's array
 * while it has room and nothing older waits in the ring, else the ring. */
struct shm_out {
	struct smart_tp_wc *wc;
	int n, max;
	uint32_t failures; /* d->failures when the poll began */
};

static inline void shm_complete(struct smart_tp_cq *cq, struct shm_out *o,
				const struct smart_tp_wr *wr, int status)
{
	struct smart_tp_wc *wc;

	if (smart_likely(o->n < o->max && cq->wc_head == cq->wc_tail))
		wc = &o->wc[o->n++];
	else
		wc = &cq->wc[cq->wc_tail++ & cq->wc_mask];
	shm_wc_fill(wc, wr, status);
}

/* Sim: did the WR at index `at` of qp already run at the responder? */
static inline int shm_resp_done(const struct smart_tp_qp *qp, uint32_t at)
{
	return qp->model->sim && (int32_t)(qp->sq_exec - at) > 0;
}

/* Sim (docs/sim.md §1.2): the WR at sq_exec may run at the responder
 * when the executor would run it as plain one-sided work: the QP ready,
 * its remote not failed.  Anything else (two-sided work waiting for a
 * receive, errors, flushes) is left to the poll, in order. */
int smart__shm_resp_ready(const struct smart_tp_qp *qp)
{
	const struct shm_wqe *e = &qp->sq[qp->sq_exec & qp->sq_mask];

	return qp->sq_exec != qp->sq_tail && qp->state == SHM_QP_RTS &&
	       e->wr.opcode < SMART_TP_SEND &&
	       !(qp->r &&
		 atomic_load_explicit(&qp->r->failed, memory_order_acquire));
}

/* Sim: run the WR at sq_exec on the blade's memory now (its responder
 * time), keep its status for the poll that completes it.  A failure puts
 * the QP in ERR at once, as the poll would; what follows then flushes. */
void smart__shm_resp_exec(struct smart_tp_qp *qp)
{
	struct shm_wqe *e = &qp->sq[qp->sq_exec & qp->sq_mask];

	e->st = shm_exec(qp, e);
	if (e->st != SMART_TP_WC_OK)
		qp->state = SHM_QP_ERR;
	qp->sq_exec++;
}

/* How shm_run_db_at runs WRs: plain, under the RNIC model, or the
 * adversary's way. */
enum { SHM_RUN_PLAIN, SHM_RUN_MODEL, SHM_RUN_ADV };

/* What a doorbell record's run does before its WRs: 1 when the record
 * is empty (emptied by a destroyed QP: qp may be gone), 2 when an
 * earlier record of its QP waits for a receive (order is kept), else -1
 * after dooming a QP whose remote failed (a dead blade, a fenced client:
 * its first WR fails as a lost peer would, everything behind it flushes
 * unexecuted). */
static inline __attribute__((always_inline)) int
shm_db_enter(struct smart_tp_cq *cq, struct shm_db *db, struct shm_out *o)
{
	struct smart_tp_qp *qp = db->qp;

	if (!db->n)
		return 1;
	if (smart_unlikely(qp->stall_pass == cq->pass))
		return 2;
	if (smart_unlikely(o->failures) && qp->r &&
	    atomic_load_explicit(&qp->r->failed, memory_order_acquire) &&
	    qp->state == SHM_QP_RTS)
		qp->state = SHM_QP_DOOMED;
	return -1;
}

/* Run the doorbell's WRs while there is room for each one's possible
 * completion and, when modelled, while the next WR's completion time has
 * come (*ran counts what ran).  Returns 0 when it had to stop early, 2
 * when its QP waits for a receive of its peer (a SEND met none: rule 8)
 * and the doorbell must go behind the others (shm_requeue).
 * Always inlined with a constant `mode`, so the plain poll carries none of
 * the model's or the adversary's tests. */
static inline __attribute__((always_inline)) int
shm_run_db_at(struct smart_tp_cq *cq, struct shm_db *db, struct shm_out *o,
	      int mode, uint64_t now, uint32_t *ran)
{
	struct smart_tp_qp *qp = db->qp;
	uint32_t head, first, left;
	int rc = shm_db_enter(cq, db, o);

	if (rc >= 0)
		return rc;
	head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	first = head;
	/* the count in a register, stored back once (nothing the loop
	 * calls looks at the FIFO) */
	left = db->n;
	for (; left; left--, head++) {
		struct shm_wqe *e = &qp->sq[head & qp->sq_mask];
		int st = SMART_TP_WC_FLUSH;

		if (mode == SHM_RUN_ADV ?
			    shm_adv_full(cq) :
			    cq->wc_tail - cq->wc_head > cq->wc_mask)
			break;
		if (mode == SHM_RUN_MODEL && e->due > now)
			break;
		if (mode == SHM_RUN_MODEL && shm_resp_done(qp, head)) {
			st = e->st; /* ran at the responder (sim) */
		} else if (smart_likely(qp->state == SHM_QP_RTS)) {
			st = mode == SHM_RUN_ADV ?
				     smart__shm_adv_exec(cq, qp, e) :
				     shm_exec(qp, e);
			if (smart_unlikely(st == SHM_ST_RNR_WAIT)) {
				qp->stall_pass = cq->pass;
				break;
			}
			if (smart_unlikely(st != SMART_TP_WC_OK))
				qp->state = SHM_QP_ERR;
		} else if (qp->state == SHM_QP_DOOMED) {
			st = SMART_TP_WC_FATAL;
			qp->state = SHM_QP_ERR;
		}
		if (st != SMART_TP_WC_OK || (e->wr.flags & SMART_TP_SIGNALED)) {
			if (mode == SHM_RUN_ADV)
				smart__shm_adv_complete(cq, qp, &e->wr, st);
			else
				shm_complete(cq, o, &e->wr, st);
		}
	}
	db->n = left;
	atomic_store_explicit(&qp->sq_head, head, memory_order_release);
	if (mode == SHM_RUN_MODEL) {
		*ran += head - first;
		if (qp->model->sim && (int32_t)(qp->sq_exec - head) < 0)
			qp->sq_exec = head; /* the poll ran these itself */
	}
	if (smart_unlikely(left && qp->stall_pass == cq->pass))
		return 2;
	return left == 0;
}

/* shm_run_db_at, plain, for a record of shm_db.run1s (its WRs are READs,
 * WRITEs, CASes and FAAs, so none waits for a receive and none is a SEND;
 * its QP's region is there and writable, qp->rw): the same steps per WR
 * - room for its possible completion, the QP's state, shm_wr_check's
 * checks of the remote range, key and local MR and the access
 * (shm_exec_1s), the completion of a signalled or failed WR - without
 * the SEND's test and the receive wait, the caller's output count in a
 * register, the QP's region read once; the room and the state tested
 * once for the whole record when it fits (the common case). */
static inline __attribute__((always_inline)) int
shm_run_one_sided(struct smart_tp_cq *cq, struct shm_db *db, struct shm_out *o)
{
	struct smart_tp_qp *qp = db->qp;
	const struct smart_tp_remote *r;
	struct smart_tp_wc *out = o->wc;
	int on = o->n, omax = o->max;
	uint32_t head, left;
	int rc = shm_db_enter(cq, db, o);

	if (rc >= 0)
		return rc;
	/* completions go to the caller's array while it has room and
	 * nothing older waits in the ring (shm_complete); this loop is the
	 * ring's only writer meanwhile (a one-sided WR completes nothing
	 * else), so the ring is looked at once: not empty, the array is
	 * closed.  While the array has room the ring stays empty and a
	 * completion needs none of its room. */
	if (cq->wc_head != cq->wc_tail)
		omax = on;
	/* the QP's region read once, there and writable (qp->rw) */
	r = qp->r;
	head = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
	left = db->n;
	/* the common run first: a ready QP and room in the caller's array
	 * for a completion of each of the record's WRs, so no room and no
	 * state test per WR; the first failure moves the QP to ERR and
	 * leaves the WRs behind it to the general loop below, which flushes
	 * them.  (A record longer than the array's room, as batches of 8
	 * with 8 tasks make, runs the general way whole: running its first
	 * part here cost READ 8 B 1 x 1 four instructions an op.) */
	if (smart_likely(qp->state == SHM_QP_RTS &&
			 (SMART_M_SHM_FAST_RUN_NO_ROOM ||
			  left <= (uint32_t)(omax - on)))) {
		uint32_t k;

		for (k = left, left = 0; k; k--, head++) {
			struct shm_wqe *e = &qp->sq[head & qp->sq_mask];
			int st = shm_exec_1s(qp, e, 1, r);

			if (smart_likely(st == SMART_TP_WC_OK)) {
				if (e->wr.flags & SMART_TP_SIGNALED)
					shm_wc_fill(&out[on++], &e->wr, st);
				continue;
			}
			qp->state = SHM_QP_ERR;
			shm_wc_fill(&out[on++], &e->wr, st);
			if (!SMART_M_SHM_FAST_RUN_NO_STOP) {
				left = k - 1;
				head++;
				break;
			}
		}
	}
	for (; left; left--, head++) {
		struct shm_wqe *e = &qp->sq[head & qp->sq_mask];
		int st = SMART_TP_WC_FLUSH;

		if (on >= omax && !SMART_M_SHM_ONE_SIDED_NO_RING_ROOM &&
		    cq->wc_tail - cq->wc_head > cq->wc_mask)
			break;
		if (smart_likely(qp->state == SHM_QP_RTS)) {
			st = shm_exec_1s(qp, e, 1, r);
			if (smart_unlikely(st != SMART_TP_WC_OK))
				qp->state = SHM_QP_ERR;
		} else if (qp->state == SHM_QP_DOOMED) {
			st = SMART_TP_WC_FATAL;
			qp->state = SHM_QP_ERR;
		}
		if (st != SMART_TP_WC_OK || (e->wr.flags & SMART_TP_SIGNALED)) {
			struct smart_tp_wc *wc;

			if (smart_likely(on < omax))
				wc = &out[on++];
			else
				wc = &cq->wc[cq->wc_tail++ & cq->wc_mask];
			shm_wc_fill(wc, &e->wr, st);
		}
	}
	o->n = on;
	db->n = left;
	atomic_store_explicit(&qp->sq_head, head, memory_order_release);
	return left == 0;
}

/* The head doorbell goes to the back of the FIFO (its QP waits for a
 * receive, rule 8); 0 when the FIFO is full, and then it stays. */
static int shm_requeue(struct smart_tp_cq *cq)
{
	if (cq->db_tail - cq->db_head > cq->db_mask)
		return 0;
	cq->db[cq->db_tail++ & cq->db_mask] = cq->db[cq->db_head & cq->db_mask];
	if (!SMART_M_SHM_DB_GROW_REQUEUE)
		cq->db_grow = NULL; /* the newest is the requeued one */
	return 1;
}

/* After shm_run_db_at: 1 when the head doorbell is done with for this
 * poll (ran, or went to the back), 0 when the poll must stop. */
static int shm_db_next(struct smart_tp_cq *cq, int rc)
{
	return rc == 2 ? shm_requeue(cq) : rc;
}

static int shm_run_db(struct smart_tp_cq *cq, struct shm_db *db,
		      struct shm_out *o)
{
	if (!SMART_M_SHM_ONE_SIDED_RUN_ANY && !db->run1s)
		return shm_run_db_at(cq, db, o, SHM_RUN_PLAIN, 0, NULL);
	return shm_run_one_sided(cq, db, o);
}

/* Prefetch the targets of up to SHM_TOUCH_MAX queued WRs in one tight loop
 * before executing any: the misses then overlap, as the reads of a NIC's
 * pipeline do.  (Prefetching at post time instead, spread out between
 * task switches, measured slower: the loads must be issued together.) */
#define SHM_TOUCH_MAX 32

static inline __attribute__((always_inline)) void
shm_touch(struct smart_tp_cq *cq)
{
	uint32_t i, h, k, k1, budget = SHM_TOUCH_MAX;

	cq->touch_gen++;
	for (i = cq->db_head; i != cq->db_tail && budget; i++) {
		const struct shm_db *db = &cq->db[i & cq->db_mask];
		struct smart_tp_qp *qp = db->qp;
		const struct shm_wqe *e;
		uintptr_t delta;

		if (!db->n || qp->touch_gen == cq->touch_gen || !qp->r)
			continue;
		qp->touch_gen = cq->touch_gen;
		h = atomic_load_explicit(&qp->sq_head, memory_order_relaxed);
		/* the QP's queued WRs within the budget, walked by a pointer
		 * in two runs, to the queue's end and from its start (no
		 * index arithmetic or wrap test per WR), the region's offset
		 * to the mapping read once */
		k = qp->sq_tail - h;
		if (k > budget)
			k = budget;
		budget -= k;
		e = &qp->sq[h & qp->sq_mask];
		k1 = qp->sq_mask + 1 - (h & qp->sq_mask);
		if (k1 > k)
			k1 = k;
		k -= k1;
		delta = (uintptr_t)qp->r->map - (uintptr_t)qp->r->base;
		/* no bounds or key check: a prefetch is a hint that never
		 * faults and reads nothing architecturally, and shm_exec
		 * checks the WR before its access (device memory's WRs,
		 * rare, prefetch a line of no use); the address is formed as
		 * an integer, since a pointer outside the mapping would be
		 * undefined behaviour */
		for (; k1; k1--, e++)
			__builtin_prefetch(
				(const void *)(delta + (uintptr_t)e->wr.remote),
				0, 3);
		for (e = qp->sq; k; k--, e++)
			__builtin_prefetch(
				(const void *)(delta + (uintptr_t)e->wr.remote),
				0, 3);
	}
}

/* Prefetching overlaps the misses of several WRs: a lone WR's prefetch
 * would be followed at once by its own load. */
static inline int shm_touch_worth(const struct smart_tp_cq *cq, uint32_t end)
{
	return end - cq->db_head > 1 ||
	       (cq->db_head != end && cq->db[cq->db_head & cq->db_mask].n > 1);
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
	uint32_t end = cq->db_tail;

	while (o->n < o->max && cq->db_head != end) {
		if (!shm_db_next(cq,
				 shm_run_db_at(
					 cq, &cq->db[cq->db_head & cq->db_mask],
					 o, SHM_RUN_MODEL, now, &ran)))
			break;
		cq->db_head++;
	}
	if (ran)
		shm_model_retire(cq->model, ran);
}

/* The adversary's poll: run every queued doorbell (completions go to the
 * adversary, which holds them), then let it redo READs and deliver.  Kept
 * out of line and cold so that the plain poll's code stays as it was. */
static __attribute__((noinline, cold)) void shm_poll_adv(struct smart_tp_cq *cq,
							 struct shm_out *o)
{
	uint32_t end = cq->db_tail;

	if (cq->db_head != end)
		shm_touch(cq);
	while (cq->db_head != end) {
		if (!shm_db_next(cq,
				 shm_run_db_at(
					 cq, &cq->db[cq->db_head & cq->db_mask],
					 o, SHM_RUN_ADV, 0, NULL)))
			break;
		cq->db_head++;
	}
	o->n += smart__shm_adv_poll_end(cq, o->wc + o->n, o->max - o->n);
}

static int shm_poll_full(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			 int max);

/* Nothing queued, nothing to receive: the empty poll of a CQ that serves
 * only one-sided WRs (a worker's, while it waits on another layer's)
 * reads five words and writes none, before any of the full poll's set-up. */
int smart__shm_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	if (cq->db_head == cq->db_tail && !cq->nrq &&
	    cq->wc_head == cq->wc_tail && !cq->special &&
	    !(cq->flags & SMART_TP_SHARED))
		return 0;
	return shm_poll_full(cq, wc, max);
}

/* The poll of a CQ under the RNIC model or the adversary: out of line
 * and cold, with its own output state, so that the plain poll's (whose
 * address no call takes) stays in registers. */
static __attribute__((noinline, cold)) int
shm_poll_special(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max)
{
	struct shm_out o = { wc, 0, max,
			     atomic_load_explicit(&cq->d->failures,
						  memory_order_acquire) };

	if (atomic_load(&cq->dead))
		return atomic_load(&cq->dead);
	shm_lock(cq->flags, &cq->lock);
	cq->pass++; /* from 1: 0 is no QP's stall */
	while (o.n < max && cq->wc_head != cq->wc_tail)
		wc[o.n++] = cq->wc[cq->wc_head++ & cq->wc_mask];
	if (cq->model)
		shm_poll_model(cq, &o);
	else
		shm_poll_adv(cq, &o);
	if (smart_unlikely(cq->nrq) && o.n < max)
		o.n += smart__shm_poll_recv(cq, wc + o.n, max - o.n);
	shm_unlock(cq->flags, &cq->lock);
	return o.n;
}

static int shm_poll_full(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			 int max)
{
	struct shm_out o = { wc, 0, max, 0 };
	uint32_t end;

	if (smart_unlikely(cq->special))
		return shm_poll_special(cq, wc, max);
	o.failures = atomic_load_explicit(&cq->d->failures,
					  memory_order_acquire);
	shm_lock(cq->flags, &cq->lock);
	cq->pass++; /* from 1: 0 is no QP's stall */
	/* the ring's completions first (it is empty in the common case:
	 * tested once, before the copy's loop is set up) */
	if (smart_unlikely(cq->wc_head != cq->wc_tail))
		while (o.n < max && cq->wc_head != cq->wc_tail)
			wc[o.n++] = cq->wc[cq->wc_head++ & cq->wc_mask];
	end = cq->db_tail; /* requeued doorbells wait for the next poll */
	if (o.n < max && shm_touch_worth(cq, end))
		shm_touch(cq);
	while (o.n < max && cq->db_head != end) {
		if (!shm_db_next(cq,
				 shm_run_db(cq,
					    &cq->db[cq->db_head & cq->db_mask],
					    &o)))
			break;
		cq->db_head++;
	}
	if (smart_unlikely(cq->nrq) && o.n < max)
		o.n += smart__shm_poll_recv(cq, wc + o.n, max - o.n);
	shm_unlock(cq->flags, &cq->lock);
	return o.n;
}
