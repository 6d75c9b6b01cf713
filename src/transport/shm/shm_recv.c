/*
 * shm transport, two-sided (transport.h rule 8): receive queues, SEND and
 * WRITE_IMM, between two processes of one host.
 *
 * A QP with a receive queue owns a shared segment (struct shm_rseg, a
 * memfd): a header, then one cell per receive, its descriptor and its
 * bytes on the same lines (shm.h).  post_recv writes the buffer's length
 * into the next cell and releases `posted`; the peer's sender, executing a
 * SEND (at post when its QP has nothing queued, else at its poll), copies
 * the message into the oldest cell it has not filled and releases the
 * cell's `seq`; the receiver's poll reads the oldest posted cell's `seq`
 * in place - one cache miss per small message - copies the bytes into the
 * posted buffer and completes the receive.  Two copies, no system call, no
 * lock and no read-modify-write between the processes: every word has one
 * writer.  The sender reads `posted` only when the receives it last saw
 * are used up, and `closed` (a line written once) before each message.
 * A receiver whose QP enters error sets `closed` and completes the
 * messages whose cells were released by then; a SEND racing with that
 * close may complete OK on the sender while its receive flushes (as a
 * message lost with a failing peer: the layer above counts on acks, never
 * on a SEND's completion, for delivery).
 *
 * Events (rule 9): a receiver about to sleep sets `armed` in each of its
 * segments (cq_arm); the sender that delivers next into one clears it
 * and sends a byte on the queue's wake socket (one end of a datagram
 * pair, passed with the segment's descriptor at connect time; the other
 * end is in the receiver CQ's epoll set).  Busy receivers leave it clear, so that
 * senders make no system call while traffic flows.
 *
 * Receiver not ready: a SEND with no receive posted leaves its doorbell
 * waiting (SHM_ST_RNR_WAIT) and is tried again at later polls, for
 * SHM_RNR_NS at most, then fails SMART_TP_WC_RNR.
 *
 * Invariants: the segment is writable by the peer, so every value read
 * from it (posted, a cell's short_by, seq, len and flags) is checked
 * against this side's own copy of the sizes before it is used; indexes are
 * counters modulo nslots, never values from the segment.
 */
#include <stdatomic.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport/shm/shm.h"
#include "util/clock.h"
#include "util/mutant.h"

_Static_assert(sizeof(struct shm_cell) == 16, "shm_cell: 16 bytes");
_Static_assert(offsetof(struct shm_rseg, armed) == 16,
	       "shm_rseg: armed after the sizes");
_Static_assert(offsetof(struct shm_rseg, posted) == SMART_CACHELINE,
	       "shm_rseg: posted on its own line");
_Static_assert(offsetof(struct shm_rseg, closed) == 2 * SMART_CACHELINE,
	       "shm_rseg: closed on its own line");
_Static_assert(offsetof(struct shm_rseg, cells) == 3 * SMART_CACHELINE,
	       "shm_rseg: cells after the counters");
_Static_assert(SHM_MAX_RECV_WR < SHM_RS_SEQ_MASK,
	       "shm_cell: a cell's last number never looks like its next");
_Static_assert(SHM_MAX_MSG + sizeof(struct shm_cell) <= UINT32_MAX,
	       "shm_cell: a cell's length fits 32 bits");

#define SHM_PEER_BLOB_LEN 16 /* magic, version, nslots, max_msg */
/* A receive segment can neither shrink nor grow (and F_SEAL_SEAL keeps it
 * so); a peer's must be sealed at least that way. */
#define SHM_RSEG_SEALS	  (F_SEAL_SHRINK | F_SEAL_GROW)
#define SHM_PEER_VERSION  3 /* 2: armed, the wake descriptor; 3: cells */

/* The whole segment. */
static size_t rseg_len(uint32_t nslots, uint32_t max_msg)
{
	return offsetof(struct shm_rseg, cells) +
	       (size_t)nslots * shm_cell_len(max_msg);
}

/* The queue's wake socket pair, its receiving end in the CQ's set. */
static int rq_wake_open(struct smart_tp_cq *cq, struct shm_rq *rq)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		return SMART_ENOMEM;
	rq->wake_rx = sv[0];
	rq->wake_tx = sv[1];
	ev.data.fd = sv[0];
	return epoll_ctl(cq->evfd, EPOLL_CTL_ADD, sv[0], &ev) ? SMART_ENOMEM :
								0;
}

int smart__shm_rq_create(struct smart_tp_qp *qp,
			 const struct smart_tp_qp_attr *attr)
{
	uint32_t n = attr->max_recv_wr, max = attr->max_msg;
	struct shm_rq *rq;
	size_t len;
	void *p;

	if (n > SHM_MAX_RECV_WR || !max || max > SHM_MAX_MSG)
		return SMART_EINVAL;
	n = (uint32_t)smart_roundup_pow2(n);
	len = rseg_len(n, max);
	if (len > SHM_RSEG_MAX)
		return SMART_EINVAL;
	rq = calloc(1, sizeof(*rq));
	if (!rq)
		return SMART_ENOMEM;
	rq->ents = calloc(n, sizeof(*rq->ents));
	rq->told = calloc(n, sizeof(*rq->told));
	/* sealed at its size: the peer maps it, and a segment that could
	 * shrink under a mapping would fault (SIGBUS) at its next access */
	rq->fd = memfd_create("smart-rq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!rq->ents || !rq->told || rq->fd < 0 ||
	    ftruncate(rq->fd, (off_t)len) ||
	    fcntl(rq->fd, F_ADD_SEALS, SHM_RSEG_SEALS | F_SEAL_SEAL) ||
	    (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, rq->fd,
		      0)) == MAP_FAILED) {
		if (rq->fd >= 0)
			close(rq->fd);
		free(rq->ents);
		free(rq->told);
		free(rq);
		return SMART_ENOMEM;
	}
	rq->seg = p;
	rq->seg_len = len;
	rq->cell_len = shm_cell_len(max);
	rq->nslots = n;
	rq->max_msg = max;
	rq->seg->magic = SHM_PEER_MAGIC;
	rq->seg->nslots = n;
	rq->seg->max_msg = max;
	rq->seg->flags = qp->d->membarrier ? 0 : SHM_SEG_SENDER_FENCES;
	qp->rq = rq;
	rq->wake_rx = rq->wake_tx = -1;
	if (qp->cq->evfd >= 0 && rq_wake_open(qp->cq, rq)) {
		smart__shm_rq_destroy(qp);
		return SMART_ENOMEM;
	}
	return 0;
}

void smart__shm_rq_destroy(struct smart_tp_qp *qp)
{
	if (qp->rq) {
		munmap(qp->rq->seg, qp->rq->seg_len);
		close(qp->rq->fd);
		if (qp->rq->wake_rx >= 0) /* leaves the CQ's set */
			close(qp->rq->wake_rx);
		if (qp->rq->wake_tx >= 0)
			close(qp->rq->wake_tx);
		free(qp->rq->ents);
		free(qp->rq->told);
		free(qp->rq);
		qp->rq = NULL;
	}
	if (qp->peer) {
		munmap(qp->peer->seg, qp->peer->seg_len);
		shm_peer_fd_drop(qp->peer->wake_fd);
		free(qp->peer);
		qp->peer = NULL;
	}
}

/* The receive segment, then the wake socket (rule 9) when the CQ has
 * events. */
int smart__shm_qp_fds(const struct smart_tp_qp *qp, int fds[SMART_TP_PEER_FDS])
{
	if (!qp->rq)
		return 0;
	qp->rq->handed = 1; /* a peer may write it from now on */
	fds[0] = qp->rq->fd;
	fds[1] = qp->rq->wake_tx;
	return fds[1] >= 0 ? 2 : 1;
}

/* Is the socket's peer unnamed: the other end of a socketpair, as the
 * receiver's own queue makes (rq_wake_open)?  A socket connected to a
 * bound one reports that one's name; and one reconnected elsewhere never
 * gets an unnamed peer again (no address reaches a pair's end), so once
 * this fails it fails for good. */
static int wake_peer_unnamed(int fd)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);

	return !getpeername(fd, (struct sockaddr *)&a, &len) &&
	       len <= offsetof(struct sockaddr_un, sun_path);
}

/* A peer's wake descriptor must be a unix datagram socket: we only ever
 * send(MSG_DONTWAIT) one byte to it, which neither blocks nor writes
 * anywhere else, whatever the peer does to its open file (the flags of a
 * passed descriptor are shared: an eventfd's O_NONBLOCK could be taken
 * away by the peer and our write would block); and a unix one, or the
 * peer could connect a UDP socket anywhere and have us send a datagram
 * there at each wake-up (traffic in our name); and one whose peer is its
 * pair's other end, not a named socket (a unix one connected to journald's
 * /dev/log or a service's socket would carry our datagrams, with our
 * credentials, there). */
static int wake_fd_ok(int fd)
{
	socklen_t len = sizeof(int);
	struct stat st;
	int type = 0, domain = 0;

	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
	    type != SOCK_DGRAM)
		return 0;
	len = sizeof(int);
	return SMART_M_SHM_WAKE_ANY_DOMAIN ||
	       (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) &&
		domain == AF_UNIX &&
		(SMART_M_SHM_WAKE_ANY_PEER || wake_peer_unnamed(fd)));
}

/* The blob of a QP with a receive queue: what its peer needs to map the
 * segment whose descriptor goes with it. */
int smart__shm_peer_blob(const struct smart_tp_qp *qp, void *blob, size_t *len)
{
	uint32_t v[4] = { SHM_PEER_MAGIC, SHM_PEER_VERSION, qp->rq->nslots,
			  qp->rq->max_msg };

	if (*len < sizeof(v))
		return SMART_EINVAL;
	memcpy(blob, v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

int smart__shm_qp_connect_peer(struct smart_tp_qp *qp,
			       struct smart_tp_remote *r, const void *peer_blob,
			       size_t len, const int *fds, int nfds)
{
	int fd = nfds > 0 ? fds[0] : -1, wake = nfds > 1 ? fds[1] : -1;
	struct shm_peer *pe;
	struct stat st;
	uint32_t v[4];
	size_t need;
	void *p;
	int rc = SMART_EINVAL;

	for (int i = 2; i < nfds; i++)
		if (fds[i] >= 0)
			shm_peer_fd_drop(fds[i]); /* none is asked */
	if (!qp->rq || qp->state != SHM_QP_RESET || !peer_blob ||
	    len != SHM_PEER_BLOB_LEN || fd < 0)
		goto out;
	memcpy(v, peer_blob, sizeof(v));
	rc = SMART_EPROTO;
	if (v[0] != SHM_PEER_MAGIC || v[1] != SHM_PEER_VERSION || !v[2] ||
	    v[2] > SHM_MAX_RECV_WR || (v[2] & (v[2] - 1)) || !v[3] ||
	    v[3] > SHM_MAX_MSG)
		goto out;
	if (wake >= 0 && !SMART_M_SHM_WAKE_ANY_FD && !wake_fd_ok(wake))
		goto out;
	need = rseg_len(v[2], v[3]);
	/* no larger than a queue of ours can be (rq_create): 4096 slots
	 * of 1 MiB would map 4 GiB per connection */
	if (need > SHM_RSEG_MAX && !SMART_M_SHM_PEER_SEG_ANY_SIZE)
		goto out;
	if (fstat(fd, &st) || st.st_size < 0 || (uint64_t)st.st_size < need)
		goto out;
	/* a segment its owner could still shrink would fault our accesses */
	if (!SMART_M_SHM_PEER_NO_SEAL_CHECK && !shm_sealed(fd, SHM_RSEG_SEALS))
		goto out;
	p = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rc = SMART_ENOMEM;
	if (p == MAP_FAILED)
		goto out;
	/* the segment of that blob (a wrong descriptor is refused; what
	 * the peer writes later is checked where it is read) */
	if (((struct shm_rseg *)p)->magic != SHM_PEER_MAGIC ||
	    ((struct shm_rseg *)p)->nslots != v[2] ||
	    ((struct shm_rseg *)p)->max_msg != v[3]) {
		munmap(p, need);
		rc = SMART_EPROTO;
		goto out;
	}
	pe = calloc(1, sizeof(*pe));
	if (!pe) {
		munmap(p, need);
		goto out;
	}
	pe->seg = p;
	pe->seg_len = need;
	pe->cell_len = shm_cell_len(v[3]);
	pe->nslots = v[2];
	pe->max_msg = v[3];
	pe->wake_fd = wake;
	wake = -1; /* the peer's now */
	/* the receiver's barrier reaches us only if we registered too; a
	 * peer lying here misses its own wake-ups, nothing of ours */
	pe->fence = !qp->d->membarrier ||
		    (((struct shm_rseg *)p)->flags & SHM_SEG_SENDER_FENCES);
	qp->peer = pe;
	qp->r = r;
	qp->rw = shm_region_rw(r);
	qp->state = SHM_QP_RTS;
	rc = 0;
out:
	shm_peer_fd_drop(fd);
	shm_peer_fd_drop(wake);
	return rc;
}

/* Tell the sender a receive's length, as what it lacks of max_msg, and
 * only when that changed from what we last told it (our own copy: the
 * segment is not read either).  A receive reposted with the length it
 * had (messaging's always is) leaves the cell's line alone, so that it
 * stays where the sender will write the next message and the repost costs
 * no cache miss; and a full-length receive leaves a fresh cell untouched,
 * so that posting a queue's receives faults in none of its pages (a cell
 * spans a page at messaging's sizes: 70 page faults each side per
 * connection, ~0.5 ms, when each cell was written or read at post).  The
 * sender alone acts on it (its own SEND fails when too long); our
 * completion checks the length against the receive we keep, whatever the
 * cell says. */
static void cell_cap(struct shm_rq *rq, uint32_t k, uint32_t len)
{
	uint32_t s = rq->max_msg - (len < rq->max_msg ? len : rq->max_msg);

	if (rq->told[k] != s || SMART_M_SHM_POST_TOUCHES_CELL) {
		rq->told[k] = s;
		__atomic_store_n(
			&shm_cell_at(rq->seg, rq->cell_len, k)->short_by, s,
			__ATOMIC_RELAXED);
	}
}

int smart__shm_post_recv(struct smart_tp_qp *qp, const struct smart_tp_recv *rs,
			 int n)
{
	struct shm_rq *rq = qp->rq;
	int i, rc = 0;

	if (!rq)
		return SMART_ENOTSUP;
	if (n <= 0 || !rs)
		return SMART_EINVAL;
	/* under the CQ's ordering: its poll completes the receives */
	shm_lock(qp->cq->flags, &qp->cq->lock);
	if (rq->posted - rq->taken + (uint32_t)n > rq->nslots) {
		rc = SMART_EAGAIN;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (rs[i].len && !rs[i].local) {
			rc = SMART_EINVAL;
			goto out;
		}
	for (i = 0; i < n; i++) {
		uint32_t k = (rq->posted + (uint32_t)i) & (rq->nslots - 1);

		rq->ents[k] = rs[i];
		cell_cap(rq, k, rs[i].len);
	}
	rq->posted += (uint32_t)n;
	atomic_store_explicit(&rq->seg->posted, rq->posted,
			      memory_order_release);
out:
	shm_unlock(qp->cq->flags, &qp->cq->lock);
	return rc;
}

int smart__shm_send_check(const struct smart_tp_qp *qp,
			  const struct smart_tp_wr *wr)
{
	if (wr->opcode != SMART_TP_SEND && wr->opcode != SMART_TP_WRITE_IMM)
		return 0;
	/* only on a QP connected to a peer; a SEND no longer than the
	 * peer takes */
	if (!qp->peer)
		return SMART_EINVAL;
	return wr->opcode == SMART_TP_SEND && wr->len > qp->peer->max_msg ?
		       SMART_EINVAL :
		       0;
}

/* Claim the peer's next receive: its index, or SHM_ST_RNR_WAIT when none
 * is posted, or an error status (the peer closed its queue, or wrote a
 * count no receiver makes).  `posted` is read again only once the
 * receives last seen are used up: while the peer keeps ahead, a message
 * costs the sender no read of the peer's counter. */
static int peer_slot(struct shm_peer *pe, uint32_t *del)
{
	if (atomic_load_explicit(&pe->seg->closed, memory_order_relaxed))
		return SMART_TP_WC_RETRY_EXC; /* its QP is in error */
	if (pe->posted == pe->sent) {
		uint32_t posted = atomic_load_explicit(&pe->seg->posted,
						       memory_order_acquire);

		if (posted - pe->sent > pe->nslots)
			return SMART_TP_WC_FATAL; /* not a receiver's count */
		if (posted == pe->sent)
			return SHM_ST_RNR_WAIT;
		pe->posted = posted;
	}
	*del = pe->sent;
	return SMART_TP_WC_OK;
}

/* A receiver that armed its segment sleeps on its CQ's set (rule 9):
 * after the delivery, the first sender to find armed clears it and
 * signals on the queue's wake socket.  Either the receiver's poll after
 * its arm sees the delivery or we see armed: Dekker's pattern, a store
 * then a load on each side, which needs a full barrier on each side
 * between the two.  Ours costs nothing per message: a receiver that can
 * (membarrier(2), MEMBARRIER_CMD_GLOBAL_EXPEDITED, both processes
 * registered) makes the barrier on every registered process's running
 * threads itself when it arms, which is rare (it is about to sleep);
 * otherwise (pe->fence) we fence here.  The one system call of the data
 * path, and only towards a sleeping receiver (a getpeername before it,
 * below); a full socket means a wake-up is pending already. */
static void peer_wake(struct shm_peer *pe)
{
	if (pe->wake_fd < 0 || SMART_M_SHM_NO_WAKE)
		return;
	if (pe->fence)
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&pe->seg->armed, memory_order_relaxed) ||
	    !atomic_exchange_explicit(&pe->seg->armed, 0, memory_order_relaxed))
		return;
	/* the peer keeps a copy of the socket and may have connected it
	 * elsewhere since (wake_fd_ok): then its wake-ups end here, at
	 * most one sent between this look and a reconnect gone astray */
	if (!SMART_M_SHM_WAKE_NO_RECHECK && !wake_peer_unnamed(pe->wake_fd)) {
		shm_peer_fd_drop(pe->wake_fd);
		pe->wake_fd = -1;
		return;
	}
	(void)!send(pe->wake_fd, "", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Release cell k, filled with message d (its flags in the top byte of
 * seq), and wake a sleeping receiver. */
static void peer_deliver(struct shm_peer *pe, struct shm_cell *c, uint32_t d,
			 uint32_t flags)
{
	atomic_store_explicit(&c->seq,
			      ((d + 1) & SHM_RS_SEQ_MASK) |
				      flags << SHM_RS_FLAG_SHIFT,
			      memory_order_release);
	pe->sent = d + 1;
	peer_wake(pe);
}

void smart__shm_rq_arm(struct smart_tp_qp *qp)
{
	atomic_store_explicit(&qp->rq->seg->armed, 1, memory_order_relaxed);
}

/* The WRITE half of a WRITE_IMM (rule 3: before its receive).  Zero
 * bytes touch no memory, so they need no region (rule 8, verbs' C9-88). */
static int write_part(struct smart_tp_qp *qp, const struct smart_tp_wr *wr)
{
	uint8_t *rp;
	int st;

	if (!wr->len)
		return SMART_TP_WC_OK;
	st = shm_wr_check(qp, wr, &rp);

	if (st == SMART_TP_WC_OK)
		shm_copy_to_remote(rp, wr->local, wr->len);
	return st;
}

/* Has the head SEND waited for a receive longer than verbs would? */
static int rnr_expired(struct smart_tp_qp *qp)
{
	struct shm_peer *pe = qp->peer;
	uint64_t now = smart__mono_ns();

	if (!pe->rnr_since) {
		pe->rnr_since = now;
		atomic_fetch_add_explicit(&qp->d->rnr_waits, 1,
					  memory_order_relaxed);
		return 0;
	}
	return now - pe->rnr_since > SHM_RNR_NS;
}

int smart__shm_exec_send(struct smart_tp_qp *qp, struct shm_wqe *e)
{
	return smart__shm_exec_send_wr(qp, &e->wr,
				       shm_wr_inline(&e->wr) ? e->inl :
							       e->wr.local);
}

/* A SEND or WRITE_IMM whose bytes (a SEND's) are at data: the WR's local
 * buffer, or its inline copy. */
int smart__shm_exec_send_wr(struct smart_tp_qp *qp,
			    const struct smart_tp_wr *wr, const void *data)
{
	struct shm_peer *pe = qp->peer;
	int send = wr->opcode == SMART_TP_SEND, st;
	struct shm_cell *c;
	uint32_t d, cap, flags, len = send ? wr->len : 0;

	if (wr->opcode != SMART_TP_SEND && wr->opcode != SMART_TP_WRITE_IMM)
		return SMART_TP_WC_BAD_WR;
	if (!pe)
		return SMART_TP_WC_REM_ACCESS; /* a responder has no queue */
	if (len && !shm_wr_inline(wr) &&
	    !shm_local_ok(qp->d, wr->lkey, wr->local, len))
		return SMART_TP_WC_LOC_PROT;
	st = peer_slot(pe, &d);
	if (st == SHM_ST_RNR_WAIT)
		return rnr_expired(qp) ? SMART_TP_WC_RNR : SHM_ST_RNR_WAIT;
	pe->rnr_since = 0;
	if (st != SMART_TP_WC_OK)
		return st;
	if (wr->opcode == SMART_TP_WRITE_IMM &&
	    (st = write_part(qp, wr)) != SMART_TP_WC_OK)
		return st;
	c = shm_cell_at(pe->seg, pe->cell_len, d & (pe->nslots - 1));
	cap = shm_cell_cap(c, pe->max_msg);
	/* a WRITE_IMM's receive says the WRITE's length, as verbs does */
	c->len = send ? len : wr->len;
	c->imm = !send || (wr->flags & SMART_TP_IMM) ? wr->imm : 0;
	flags = (!send || (wr->flags & SMART_TP_IMM) ? SHM_RS_IMM : 0) |
		(send ? 0 : SHM_RS_WRITE);
	if (len > cap || len > pe->max_msg) {
		/* too long for the receive: both sides fail (verbs: a
		 * length error there, an invalid request here) */
		peer_deliver(pe, c, d, flags | SHM_RS_TOO_LONG);
		return SMART_TP_WC_REM_ACCESS;
	}
	if (len)
		memcpy(c + 1, data, len);
	peer_deliver(pe, c, d, flags);
	return SMART_TP_WC_OK;
}

/* One receive's completion from its cell, whose seq (with the flags) the
 * caller read; a cell no sender fills that way (a length beyond the
 * receive or max_msg) fails like a too-long message. */
static int recv_take(struct smart_tp_qp *qp, uint32_t k, uint32_t seq,
		     struct smart_tp_wc *wc)
{
	struct shm_rq *rq = qp->rq;
	const struct shm_cell *c = shm_cell_at(rq->seg, rq->cell_len, k);
	const struct smart_tp_recv *e = &rq->ents[k];
	uint32_t len = __atomic_load_n(&c->len, __ATOMIC_RELAXED);
	uint32_t flags = seq >> SHM_RS_FLAG_SHIFT;

	wc->wr_id = e->wr_id;
	wc->opcode = SMART_TP_RECV;
	wc->flags = flags & SHM_RS_IMM ? SMART_TP_IMM : 0;
	wc->imm = __atomic_load_n(&c->imm, __ATOMIC_RELAXED);
	wc->len = len;
	wc->recv_op = SMART_TP_SEND;
	if ((flags & SHM_RS_WRITE) && !SMART_M_SHM_RECV_NO_KIND) {
		/* the bytes went to the region, none to the buffer: the
		 * completion says so (rule 8), with a length no WRITE
		 * exceeds */
		wc->recv_op = SMART_TP_WRITE_IMM;
		if (len > SMART_TP_WRITE_MAX || (flags & SHM_RS_TOO_LONG)) {
			wc->len = 0;
			wc->recv_op = 0;
			return wc->status = SMART_TP_WC_LOC_PROT;
		}
		return wc->status = SMART_TP_WC_OK;
	}
	if ((flags & SHM_RS_TOO_LONG) ||
	    (!SMART_M_SHM_RECV_TRUSTS_LEN &&
	     (len > e->len || len > rq->max_msg))) {
		wc->len = 0;
		wc->recv_op = 0;
		return wc->status = SMART_TP_WC_LOC_PROT;
	}
	/* the buffer posted must lie in the MR of its key, as a NIC checks
	 * it when the message lands */
	if (len && !SMART_M_SHM_RECV_NO_LKEY_CHECK &&
	    !shm_local_ok(qp->d, e->lkey, e->local, len)) {
		wc->len = 0;
		wc->recv_op = 0;
		return wc->status = SMART_TP_WC_LOC_PROT;
	}
	if (len)
		memcpy(e->local, c + 1, len);
	return wc->status = SMART_TP_WC_OK;
}

/* Has the sender released the cell of receive number n?  Its seq then (0
 * when not). */
static uint32_t cell_ready(const struct shm_rq *rq, uint32_t n)
{
	uint32_t seq = atomic_load_explicit(
		&shm_cell_at(rq->seg, rq->cell_len, n & (rq->nslots - 1))->seq,
		memory_order_acquire);

	return (seq & SHM_RS_SEQ_MASK) == ((n + 1) & SHM_RS_SEQ_MASK) ? seq : 0;
}

/* A QP in error closes its queue: what was delivered by then completes,
 * the rest flushes. */
static void rq_close(struct shm_rq *rq)
{
	uint32_t n = rq->taken;

	atomic_store_explicit(&rq->seg->closed, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	while (n != rq->posted && cell_ready(rq, n))
		n++;
	rq->closed = 1;
	rq->close_at = n;
}

/* Only posted cells are looked at: a cell the sender filled beyond them
 * is never read (posted is ours, not the segment's word). */
static int qp_poll_recv(struct smart_tp_qp *qp, struct smart_tp_wc *wc, int max)
{
	struct shm_rq *rq = qp->rq;
	uint32_t seq;
	int n = 0;

	if (qp->state == SHM_QP_ERR && !rq->closed)
		rq_close(rq);
	while (n < max && rq->taken != rq->posted &&
	       (rq->closed ? (int32_t)(rq->close_at - rq->taken) > 0 :
			     (seq = cell_ready(rq, rq->taken)) != 0)) {
		if (rq->closed)
			seq = cell_ready(rq, rq->taken);
		if (recv_take(qp, rq->taken & (rq->nslots - 1), seq,
			      &wc[n++]) != SMART_TP_WC_OK &&
		    !rq->closed) {
			qp->state = SHM_QP_ERR; /* receives behind flush */
			rq_close(rq);
			rq->close_at = rq->taken + 1;
		}
		rq->taken++;
	}
	while (n < max && rq->closed && rq->taken != rq->posted) {
		const struct smart_tp_recv *e =
			&rq->ents[rq->taken++ & (rq->nslots - 1)];

		wc[n++] = (struct smart_tp_wc){ .wr_id = e->wr_id,
						.status = SMART_TP_WC_FLUSH,
						.opcode = SMART_TP_RECV };
	}
	return n;
}

/* The queues in turn from cq->rq_next: a batch that fills up leaves the
 * queues after the one that filled it for the next poll to begin with, so
 * that a peer keeping its cells full (every poll's worth) cannot keep the
 * others' messages waiting for ever; each queue gets a turn at least every
 * nrq polls. */
int smart__shm_poll_recv(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			 int max)
{
	uint32_t i = cq->rq_next < cq->nrq ? cq->rq_next : 0, seen;
	int n = 0;

	/* a queue whose segment no peer has been given can have nothing
	 * delivered (messaging keeps some ready, its QP cache): skipped,
	 * so that spares cost the poll nothing; one in error flushes */
	for (seen = 0; seen < cq->nrq && n < max; seen++) {
		struct smart_tp_qp *qp = cq->rqs[i];

		if (qp->rq->handed || qp->state == SHM_QP_ERR)
			n += qp_poll_recv(qp, wc + n, max - n);
		if (++i == cq->nrq)
			i = 0;
	}
	if (n == max && !SMART_M_SHM_RECV_UNFAIR)
		cq->rq_next = i;
	return n;
}
