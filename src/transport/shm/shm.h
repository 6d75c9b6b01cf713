/*
 * shm transport internals: one host, no RDMA (docs/design.md §4.1).
 *
 * The blade's region is a memfd that every client maps; READ and WRITE are
 * word-wise copies in increasing address order, CAS and FAA are CPU atomics
 * on the mapping.  Like a NIC, the transport executes WRs asynchronously:
 * post() validates nothing but room and queues the chain as a doorbell on
 * the QP's CQ; poll() prefetches the targets of every queued WR in one
 * burst, then executes the doorbells in FIFO order and produces
 * completions.  Executing at poll time lets the cache misses of many posted
 * WRs overlap (memory-level parallelism), which is what an RNIC pipeline
 * gives real RDMA.  Order per QP is the SQ order.
 *
 * Locks: none unless the QP/CQ was created SMART_TP_SHARED; then post holds
 * the QP lock and, inside it, the CQ lock (order QP -> CQ); poll holds only
 * the CQ lock.  The SQ head is advanced only by the executor (CQ lock), the
 * tail only by posters (QP lock).
 *
 * The optional RNIC model (shm_model.c, docs/nic-model.md) hangs off
 * d->model, copied into every CQ and QP at creation; NULL means off, and
 * then post and poll test it once and run exactly the unmodelled code.
 * With it, post also takes the QP's doorbell spinlock (order QP ->
 * doorbell -> CQ) and stamps each WR with its modelled completion time;
 * poll executes a WR only once that time has come.
 *
 * Two-sided operations (transport.h rule 8) live in shm_recv.c: a QP with
 * receives owns a shared segment its peer process maps; a SEND runs at
 * the sender's poll like any WR and the receiver's poll completes the
 * receive (cq->rqs lists the CQ's receive queues).
 *
 * The optional adversarial mode (shm_adv.c, docs/transport.md) hangs off
 * d->adv the same way, with one state per CQ in cq->adv; NULL means off,
 * and then poll tests it once and runs exactly the plain code.  With it,
 * poll copies words in a random order with pauses, may execute a READ
 * again after later WRs, and holds completions back for a few polls,
 * delivering those of different QPs in any order (never out of order
 * within one QP).  It and the model exclude each other.
 */
#ifndef SMART_TRANSPORT_SHM_H
#define SMART_TRANSPORT_SHM_H

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smart/util.h"
#include "transport/transport.h"
#include "util/clock.h"
#include "util/compiler.h"
#include "util/mutant.h"
#include "util/sim.h"
#include "util/sockio.h"
#include "util/spinlock.h"

/* MRs per domain: messaging's slabs and landing, and a staging region
 * per connection (up to 4096 of them, rpc.h), beside a blade's few */
#define SHM_MAX_MR	8192
#define SHM_MAX_INLINE	64
#define SHM_MAX_SEND_WR 65536
#define SHM_MAX_CQE	(1u << 20)

/* Two-sided (rule 8, shm_recv.c): a receive queue's entries and the
 * longest message; its shared segment stays below SHM_RSEG_MAX bytes. */
#define SHM_MAX_RECV_WR 4096
#define SHM_MAX_MSG	(1u << 20)
#define SHM_RSEG_MAX	(UINT64_C(1) << 30)
/* How long a SEND waits for a receive before it fails SMART_TP_WC_RNR
 * (receiver not ready), as verbs' RNR retries would. */
#define SHM_RNR_NS	(UINT64_C(500) * 1000 * 1000)

#define SHM_REGION_MAGIC 0x524d4853u /* "SHMR" */
#define SHM_PEER_MAGIC	 0x504d4853u /* "SHMP" */
#define SHM_QP_MAGIC	 0x514d4853u /* "SHMQ" */
#define SHM_ACC_MAGIC	 0x414d4853u /* "SHMA" */
#define SHM_BLOB_VERSION 2	     /* 2: device memory in the region blob */
/* Emulated device memory (rule 7): as much as mlx5 NICs commonly offer
 * (Sherman's kLockChipMemSize, 256 KiB), in the region's memfd after the
 * region; its key is the region's with bit 31 set, which no MR key has. */
#define SHM_DM_MAX	 (UINT64_C(256) << 10)
#define SHM_DM_KEY_BIT	 0x80000000u

struct shm_mr {
	struct smart_tp_mr pub;
	size_t map_len; /* bytes mapped (rounded to the page size) */
	size_t page;	/* the page size backing it */
	int slot;
};

struct shm_model;
struct shm_adv;
struct shm_adv_cq;

struct smart_tp_domain {
	const struct smart__log *log;
	struct shm_model *model; /* RNIC model, NULL = off */
	struct shm_adv *adv;	 /* adversarial mode, NULL = off */
	pthread_mutex_t lock;	 /* registration only, never the data path */
	struct shm_mr *_Atomic mrs[SHM_MAX_MR];
	uint32_t gen; /* key generation, under lock */
	/* its QPs, under lock (qp_create, qp_destroy): mr_free empties each
	 * one's cache of its last local MR (shm_local_ok_qp) */
	struct smart_tp_qp *qps;
	uint32_t next_id;
	/* failed remotes still attached: every poll reads this once (its
	 * own line: qp_create and mr_alloc write gen and next_id) and looks
	 * at each doorbell's remote only when it is non-zero (rare) */
	_Atomic uint32_t failures smart_aligned_cl;
	_Atomic uint64_t rnr_waits; /* SENDs that waited for a receive */
	/* this process is registered for membarrier's global expedited
	 * barrier: a receiver about to sleep can order the senders' stores
	 * itself, so they need no fence per message (shm_recv.c) */
	int membarrier;
};

struct smart_tp_remote {
	_Atomic int failed;	   /* remote_fail(): execute nothing more */
	struct smart_tp_domain *d; /* counts it in d->failures */
	uint8_t *map;		   /* this process's mapping of the region */
	uint64_t size;
	uint64_t map_len;
	uint64_t base; /* the blade's address of byte 0 */
	uint32_t rkey;
	int hugepages;
	int read_only; /* its owner sealed it against writes (a
				 * peer's rendezvous staging): mapped
				 * PROT_READ, only READs go */
	uint8_t *dm;   /* device memory: mapped after the region
				 * (map_len counts both); dm_len 0 when the
				 * region has none */
	uint64_t dm_len;
	uint32_t dm_rkey;
};

struct smart_tp_responder {
	uint32_t id;
};

/*
 * A receive queue's shared segment (a memfd both ends map; rule 8), layout
 * version 3: a header, `posted` and `closed` on lines of their own, then
 * one cell per receive.  A cell is its receive's descriptor and the
 * message's bytes together, so that the receiver learns of a message, its
 * length and (up to 48 bytes) its data from one cache line: the receiver
 * writes short_by when it posts the receive (then releases `posted`); the
 * sender fills len, imm and the bytes, then releases `seq`, the message's
 * number plus one with its flags in the top byte; the receiver polls the
 * oldest posted cell's `seq` in place.  `closed` is set by the receiver
 * when its QP enters error: a sender reads it before each message (a line
 * nobody writes while traffic flows, so it stays in the sender's cache).
 * The sender keeps its own count of messages delivered and reads `posted`
 * only once it has used every receive it last saw (credits cached).
 * Either end may be a hostile process: each keeps the sizes of its own
 * blob and checks every value it reads from the segment before it uses it.
 */
#define SHM_RS_SEQ_MASK	  0x00ffffffu /* in seq: message number + 1 */
#define SHM_RS_FLAG_SHIFT 24	      /* in seq: the flags below */
#define SHM_RS_TOO_LONG	  0x1u
#define SHM_RS_WRITE                                                           \
	0x2u		/* a WRITE_IMM's: len is the
					 * WRITE's, no bytes in the cell */
#define SHM_RS_IMM 0x4u /* imm is valid */

struct shm_cell {
	_Atomic uint32_t seq; /* sender, last: number + 1 | flags << 24 */
	uint32_t short_by;    /* receiver: max_msg minus the buffer's
				 * length (0 for a full-length receive, so
				 * that a fresh cell needs no write) */
	uint32_t len;	      /* sender: the message's length */
	uint32_t imm;
	/* the message's bytes follow, up to max_msg */
};

#define SHM_SEG_SENDER_FENCES                                                  \
	0x1u /* in flags: the receiver cannot
					 * order its senders (membarrier):
					 * they fence before they look at
					 * armed */

struct shm_rseg {
	uint32_t magic, nslots, max_msg, flags;
	/* the receiver, about to sleep on its CQ's event descriptor, sets
	 * it; the sender that delivers next clears it and signals (rule 9) */
	_Atomic uint32_t armed;
	_Atomic uint32_t posted smart_aligned_cl; /* receiver */
	_Atomic uint32_t closed smart_aligned_cl; /* receiver */
	uint8_t cells[] smart_aligned_cl;	  /* [nslots] of shm_cell_len */
};

/* One cell's bytes: its header and max_msg, whole cache lines. */
static inline size_t shm_cell_len(uint32_t max_msg)
{
	return ((size_t)max_msg + sizeof(struct shm_cell) + SMART_CACHELINE -
		1) &
	       ~(size_t)(SMART_CACHELINE - 1);
}

/* The receive side of a QP: its segment and its receives. */
struct shm_rq {
	struct shm_rseg *seg;
	size_t cell_len; /* cell i at seg->cells + i * cell_len */
	size_t seg_len;
	int fd;
	uint32_t nslots, max_msg;
	struct smart_tp_recv *ents; /* [nslots] */
	uint32_t *told;		    /* [nslots]: each cell's short_by as we
				 * last wrote it (0: a fresh cell's) */
	uint32_t posted, taken;	    /* receives posted, completed */
	uint32_t close_at;	    /* delivered when closed, with closed */
	int closed;
	int handed; /* its descriptor went out (qp_fds) */
	/* rule 9, on a CQ with events: a datagram socket pair per queue,
	 * wake_rx in the CQ's epoll set, wake_tx for the peer's sender
	 * (each peer its own: none can take another's wake-ups, and send
	 * and recv never block whatever a peer does to its end); -1 */
	int wake_rx, wake_tx;
};

/* The send side of a QP with a peer: the peer's receive queue. */
struct shm_peer {
	struct shm_rseg *seg;
	size_t cell_len;
	size_t seg_len;
	uint32_t nslots, max_msg;
	uint32_t sent;	    /* messages delivered into its cells */
	uint32_t posted;    /* its `posted` when last read */
	uint64_t rnr_since; /* when the head SEND first met no receive */
	int wake_fd;	    /* the peer's wake socket (its queue's
				 * wake_tx), or -1 */
	int fence;	    /* fence before looking at armed */
};

/* The length of a cell's receive as its receiver told it (a receiver
 * telling more than max_msg short tells 0). */
static inline uint32_t shm_cell_cap(const struct shm_cell *c, uint32_t max_msg)
{
	uint32_t s = __atomic_load_n(&c->short_by, __ATOMIC_RELAXED);

	return s <= max_msg ? max_msg - s : 0;
}

/* Cell k of a segment. */
static inline struct shm_cell *shm_cell_at(struct shm_rseg *seg,
					   size_t cell_len, uint32_t k)
{
	return (struct shm_cell *)(seg->cells + (size_t)k * cell_len);
}

/* shm_exec's answer for a SEND that found no receive yet: the doorbell
 * waits (no completion status). */
#define SHM_ST_RNR_WAIT (-1)

/* Sim only (one OS thread, docs/sim.md): a lock as a simulated resource,
 * free from free_at (ticks); ends[] the last holds' ends, newest at
 * ends[(nend - 1) % 32], to count the holders still queued at a time. */
struct shm_sim_res {
	uint64_t free_at, spin_ticks;
	uint64_t ends[32];
	uint32_t nend;
};

struct shm_wqe {
	struct smart_tp_wr wr;
	uint64_t due;  /* model: completion time in model ticks */
	uint64_t resp; /* sim: time it executes at the responder, ticks */
	int st;	       /* sim: its status, once executed there */
	uint8_t inl[SHM_MAX_INLINE];
};

struct shm_db {
	struct smart_tp_qp *qp;
	uint32_t n;
	uint32_t run1s; /* no SEND or WRITE_IMM and its QP's region there
			 * and writable (qp->rw): the one-sided run's
			 * (shm_run_one_sided, shm_qp.c) */
};

struct smart_tp_cq {
	struct smart_tp_domain *d;
	struct shm_model *model; /* d->model */
	int special;		 /* model or adversary on: poll's one test */
	uint32_t flags;
	smart_spinlock_t lock;
	struct smart_tp_wc *wc; /* completion ring */
	uint32_t wc_mask, wc_head, wc_tail;
	struct shm_db *db; /* doorbell FIFO awaiting execution */
	uint32_t db_mask, db_head, db_tail;
	/* the QP whose one-sided record is the FIFO's newest (while the
	 * FIFO is not empty): its next one-sided chain grows that record
	 * (shm_db_ring); NULL when the newest is none's: every other way a
	 * record is appended or the FIFO reordered (a two-sided record, the
	 * model's, a requeue, a destroyed QP's records taken out) clears it */
	struct smart_tp_qp *db_grow;
	uint32_t committed;	  /* its QPs' send queue entries, under lock:
				 * the FIFO holds more (shm_cq_commit) */
	uint32_t touch_gen;	  /* poll pass number, for shm_touch */
	struct shm_adv_cq *adv;	  /* adversarial mode's state, NULL = off */
	_Atomic int dead;	  /* the adversary failed it (cq_fail): poll
				 * returns this for ever, post refuses */
	uint64_t pass;		  /* poll number, from 1 (64 bits: never back to
			* 0, no QP's stall): RNR stalls of this pass */
	struct smart_tp_qp **rqs; /* its QPs with a receive queue */
	uint32_t nrq, rq_cap;	  /* under lock (create, destroy) */
	uint32_t rq_next;	  /* the queue poll looks at first: the one
				 * after the queue that filled the last
				 * batch (no peer's flood starves others) */
	int evfd;		  /* SMART_TP_CQ_EVENTS: an epoll set of its
				 * queues' wake_rx (rule 9); else -1 */
};

/* DOOMED: the remote failed; the next WR completes with an error, then
 * the QP is in ERR and flushes everything behind it. */
enum { SHM_QP_RESET, SHM_QP_RTS, SHM_QP_DOOMED, SHM_QP_ERR };

struct smart_tp_qp {
	struct smart_tp_domain *d;
	struct shm_model *model; /* d->model */
	struct shm_doorbell *db; /* model: this QP's doorbell */
	struct smart_tp_cq *cq;
	struct smart_tp_remote *r;
	uint32_t flags;
	smart_spinlock_t lock;
	int state;
	/* connected to a region there and writable (rw), one-sided, not
	 * shared, no model, no adversarial CQ: post1 takes it (set at
	 * qp_connect) */
	int plain;
	/* its region is there and writable (shm_region_rw, set when
	 * connected): its one-sided records run the one-sided way, which
	 * reads the region once and tests no read-only seal */
	int rw;
	uint32_t id;
	struct shm_wqe *sq;
	uint32_t sq_mask;
	_Atomic uint32_t sq_head; /* next WR to execute */
	uint32_t sq_tail;	  /* next free entry */
	uint32_t touch_gen;	  /* last poll pass that prefetched for it */
	/* the plain one-sided run's cache of the last local MR a WR of this
	 * QP named (shm_local_ok_qp): its lkey, address and length; mrc_len
	 * 0 is empty.  mr_free empties it (d->qps lists the QPs), so a freed
	 * MR's key is looked up, and refused, as before the cache */
	uint32_t mrc_lkey;
	uintptr_t mrc_base;
	_Atomic uint64_t mrc_len;
	struct smart_tp_qp *d_prev, *d_next; /* in d->qps, under d->lock */
	struct shm_rq *rq;	     /* receive queue, NULL: one-sided QP */
	struct shm_peer *peer;	     /* peer's receive queue, once connected */
	uint64_t stall_pass;	     /* cq->pass of its last RNR stall */
	struct shm_sim_res sim_lock; /* sim only: a shared QP's lock */
	/* sim only, responder-time execution (shm_model.c): WRs from
	 * sq_head to sq_exec have run at the responder, their status in
	 * their wqe; rpos is the QP's place in the model's heap (-1: out),
	 * rid its tie break, last_resp its latest responder time */
	uint32_t sq_exec;
	int rpos;
	uint64_t rid, rkey, last_resp; /* rkey: its heap key */
};

/* Zeroed memory on cache lines of its own (len rounded up to whole lines):
 * for what one thread writes and others poll. */
static inline void *shm_zalloc_cl(size_t len)
{
	size_t n = (len + SMART_CACHELINE - 1) & ~(size_t)(SMART_CACHELINE - 1);
	void *p = aligned_alloc(SMART_CACHELINE, n);

	if (p)
		memset(p, 0, n);
	return p;
}

/* A QP's region there and writable (qp->rw): not a peer QP without one,
 * not a sealed one (PROT_READ: only READs go, shm_wr_check). */
static inline int shm_region_rw(const struct smart_tp_remote *r)
{
	return r && (!r->read_only || SMART_M_SHM_ONE_SIDED_ANY_REGION);
}

/* Take and release a QP or CQ lock: only objects shared by threads have
 * one that is really taken. */
static inline void shm_lock(uint32_t flags, smart_spinlock_t *l)
{
	smart_spin_lock_if(flags & SMART_TP_SHARED, l);
}

static inline void shm_unlock(uint32_t flags, smart_spinlock_t *l)
{
	smart_spin_unlock_if(flags & SMART_TP_SHARED, l);
}

/* shm_mem.c: look up a local MR by key, NULL when the key is stale. */
static inline struct shm_mr *shm_mr_lookup(struct smart_tp_domain *d,
					   uint32_t lkey)
{
	uint32_t slot = (lkey & 0xffff) - 1;

	if (smart_unlikely(slot >= SHM_MAX_MR))
		return NULL;
	struct shm_mr *mr = atomic_load_explicit(&d->mrs[slot],
						 memory_order_acquire);
	return mr && mr->pub.lkey == lkey ? mr : NULL;
}

/*
 * The data path shared by the plain executor (shm_qp.c) and the adversary
 * (shm_adv.c): bounds and key checks, copies that honour rule 4 and the
 * atomics.  Header-inline so that the plain poll compiles as before.
 */

/* Pointer into the mapping for [remote, remote+len) under rkey (the
 * region's, or its device memory's: addresses from 0), or NULL. */
static inline uint8_t *shm_remote_ptr(const struct smart_tp_remote *r,
				      uint32_t rkey, uint64_t remote,
				      uint64_t len)
{
	if (smart_likely(rkey == r->rkey)) {
		uint64_t off = remote - r->base, size = r->size;

		/* below base the offset wraps past any size: attach refuses
		 * a region whose base + size wraps (shm_blob_check) */
		if (smart_unlikely(off >= size || len > size - off))
			return NULL;
		return r->map + off;
	}
	if (smart_unlikely(!r->dm_len || rkey != r->dm_rkey ||
			   remote >= r->dm_len || len > r->dm_len - remote))
		return NULL;
	return r->dm + remote;
}

/* A WR's completion, written where the caller put it. */
static inline void shm_wc_fill(struct smart_tp_wc *wc,
			       const struct smart_tp_wr *wr, int status)
{
	wc->wr_id = wr->wr_id;
	wc->status = status;
	wc->opcode = wr->opcode;
}

/* [p, p + len) inside mr (a zero-length buffer at its very end too). */
static inline int shm_mr_holds(const struct shm_mr *mr, const void *p,
			       uint32_t len)
{
	uintptr_t a = (uintptr_t)p, base = (uintptr_t)mr->pub.addr;

	return a >= base && a - base <= mr->pub.len &&
	       len <= mr->pub.len - (a - base);
}

/* Is [p, p+len) inside the local MR named by lkey? */
static inline int shm_local_ok(struct smart_tp_domain *d, uint32_t lkey,
			       const void *p, uint32_t len)
{
	struct shm_mr *mr = shm_mr_lookup(d, lkey);

	return smart_likely(mr != NULL) && shm_mr_holds(mr, p, len);
}

/* shm_local_ok through qp's cache of its last local MR, whose miss looks
 * the key up and fills the cache.
 * The cache holds an MR only until mr_free frees it (it empties every
 * cache of its domain's QPs, smart__shm_mr_free), so a WR naming a freed
 * MR misses and is refused, as the lookup always refused it.  mr_free
 * and a poll of the MR's WRs are ordered by their caller, as they were
 * without the cache (an MR freed while a WR copies into it is gone). */
static inline __attribute__((always_inline)) int
shm_local_fill(struct smart_tp_qp *qp, uint32_t lkey, const void *p,
	       uint32_t len)
{
	struct shm_mr *mr = shm_mr_lookup(qp->d, lkey);

	if (smart_unlikely(!mr))
		return 0;
	qp->mrc_lkey = lkey;
	qp->mrc_base = (uintptr_t)mr->pub.addr;
	atomic_store_explicit(&qp->mrc_len, mr->pub.len, memory_order_relaxed);
	return shm_mr_holds(mr, p, len);
}

/* The hit: the same key, [p, p+len) inside the cached MR, p before its
 * end (one unsigned compare: below its start wraps to a huge offset; an
 * empty cache's length 0 passes nothing; a zero-length buffer at the
 * MR's very end goes the miss's way, which accepts it as shm_local_ok). */
static inline __attribute__((always_inline)) int
shm_local_ok_qp(struct smart_tp_qp *qp, uint32_t lkey, const void *p,
		uint32_t len)
{
	uintptr_t off = (uintptr_t)p - qp->mrc_base;
	uint64_t mlen = atomic_load_explicit(&qp->mrc_len,
					     memory_order_relaxed);

	if (smart_likely(lkey == qp->mrc_lkey && off < mlen &&
			 len <= mlen - off))
		return 1;
	return shm_local_fill(qp, lkey, p, len);
}

/* A WRITE or SEND whose data was copied into the WQE at post time. */
static inline int shm_wr_inline(const struct smart_tp_wr *wr)
{
	return (wr->flags & SMART_TP_INLINE) &&
	       (wr->opcode == SMART_TP_WRITE || wr->opcode == SMART_TP_SEND);
}

/* 1 when fd carries every seal of need.  A file that cannot carry seals
 * (a regular file of a disk filesystem: F_GET_SEALS fails) has none:
 * -1 has every bit set, so the failure must be looked at first. */
static inline int shm_sealed(int fd, int need)
{
	int s = fcntl(fd, F_GET_SEALS);

	return s >= 0 && (s & need) == need;
}

/* Close a descriptor a peer passed (a segment, a wake socket, a region):
 * it may be a TCP socket with SO_LINGER set and unsent bytes, whose plain
 * close(2) would wait the linger time the peer chose, in our thread. */
static inline void shm_peer_fd_drop(int fd)
{
	if (SMART_M_SHM_PEER_FD_LINGER_KEPT) {
		if (fd >= 0)
			close(fd);
		return;
	}
	smart__sock_fd_drop(fd);
}

/* Check a WR's remote range, key and local buffer: SMART_TP_WC_OK with
 * *rp the remote bytes, or the error status of the completion.  Always
 * inlined: GCC made a function of it, a call per WR executed.  fast (a
 * constant): the plain one-sided run's, rw its qp->r, there and writable
 * (qp->rw): the QP's region read once a run, no read-only test, and the
 * local MR through the QP's cache (shm_local_ok_qp). */
static inline __attribute__((always_inline)) int
shm_wr_check_at(struct smart_tp_qp *qp, const struct smart_tp_wr *wr,
		uint8_t **rp, int fast, const struct smart_tp_remote *rw)
{
	if (fast) {
		/* shm_remote_ptr's region case without its NULL answer to
		 * test again (device memory's key goes its way) */
		if (smart_likely(wr->rkey == rw->rkey)) {
			uint64_t off = wr->remote - rw->base, size = rw->size;

			if (smart_unlikely(off >= size || wr->len > size - off))
				return SMART_TP_WC_REM_ACCESS;
			*rp = rw->map + off;
		} else {
			*rp = shm_remote_ptr(rw, wr->rkey, wr->remote, wr->len);
			if (smart_unlikely(!*rp))
				return SMART_TP_WC_REM_ACCESS;
		}
		if (!shm_wr_inline(wr) &&
		    smart_unlikely(
			    !shm_local_ok_qp(qp, wr->lkey, wr->local, wr->len)))
			return SMART_TP_WC_LOC_PROT;
		return SMART_TP_WC_OK;
	}
	/* a peer QP may have no region of its peer's */
	*rp = smart_likely(qp->r) ?
		      shm_remote_ptr(qp->r, wr->rkey, wr->remote, wr->len) :
		      NULL;
	if (smart_unlikely(!*rp))
		return SMART_TP_WC_REM_ACCESS;
	/* the mapping of a sealed region is PROT_READ: a store would fault */
	if (smart_unlikely(qp->r->read_only) && wr->opcode != SMART_TP_READ &&
	    !SMART_M_SHM_RO_WRITES)
		return SMART_TP_WC_REM_ACCESS;
	/* inline bytes are the WQE's own (post refused longer ones) */
	if (!shm_wr_inline(wr) &&
	    smart_unlikely(!shm_local_ok(qp->d, wr->lkey, wr->local, wr->len)))
		return SMART_TP_WC_LOC_PROT;
	return SMART_TP_WC_OK;
}

/* shm_wr_check_at with the local MR looked up by its key: every caller
 * but the plain one-sided run (whose poll keeps the QP's cache valid). */
static inline __attribute__((always_inline)) int
shm_wr_check(struct smart_tp_qp *qp, const struct smart_tp_wr *wr, uint8_t **rp)
{
	return shm_wr_check_at(qp, wr, rp, 0, NULL);
}

/* Below this many aligned words a copy goes word by word: `rep movsq`
 * costs a start-up of some tens of cycles, more than a short copy. */
#define SHM_BULK_WORDS 64

/* One aligned word from src to dst, the remote side's access atomic. */
static inline __attribute__((always_inline)) void
shm_word_move(uint8_t *dst, const uint8_t *src, int remote_src)
{
	uint64_t w;

	if (remote_src) {
		w = __atomic_load_n((const uint64_t *)src, __ATOMIC_RELAXED);
		memcpy(dst, &w, 8);
	} else {
		memcpy(&w, src, 8);
		__atomic_store_n((uint64_t *)dst, w, __ATOMIC_RELAXED);
	}
}

/* Copy n aligned 8-byte words from src to dst (one side is remote), each
 * word one atomic load and store.  On x86-64 a long run is one `rep
 * movsq`: Intel's SDM (vol. 3A, "Fast-String Operation and Out-of-Order
 * Stores") guarantees the atomicity of a string operation's loads and
 * stores for its native data elements (here quadwords, 8-byte aligned on
 * the remote side, so each inside one cache line), not their order; rule 4
 * asks for exactly that.  A later store (the completion, a receive's
 * sequence) is ordered after all of the string's stores (x86-TSO), so the
 * completion still covers the data.  A vectorised loop or glibc's memcpy
 * would not do: stores wider than 8 bytes may be split into accesses the
 * SDM does not bound, and memcpy may use `rep movsb`, atomic per byte. */
static inline void shm_copy_words(uint8_t *dst, const uint8_t *src, uint32_t n,
				  int remote_src)
{
#if defined(__x86_64__)
	if (n >= SHM_BULK_WORDS) {
		size_t c = n;

		__asm__ volatile("rep movsq"
				 : "+D"(dst), "+S"(src), "+c"(c)
				 :
				 : "memory");
		return;
	}
#endif
	/* four words a turn: the loop's own three instructions a word were
	 * half a short copy's cost (Smart-HT's READs of a bucket, ~13
	 * words: 236 instructions a search) */
	for (; n >= 4; n -= 4, src += 32, dst += 32) {
		shm_word_move(dst, src, remote_src);
		shm_word_move(dst + 8, src + 8, remote_src);
		shm_word_move(dst + 16, src + 16, remote_src);
		shm_word_move(dst + 24, src + 24, remote_src);
	}
	for (; n; n--, src += 8, dst += 8)
		shm_word_move(dst, src, remote_src);
}

/* Remote <- local or local <- remote in increasing address order of the
 * unaligned head, the aligned words (shm_copy_words) and the unaligned
 * tail; remote words are accessed atomically when aligned (rule 4).
 * The adversary calls them on one word or one unaligned end at a time. */
static inline void shm_copy_from_remote(uint8_t *dst, const uint8_t *src,
					uint32_t len)
{
	while (len && ((uintptr_t)src & 7)) {
		*dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
		len--;
	}
	shm_copy_words(dst, src, len / 8, 1);
	dst += len & ~7u;
	src += len & ~7u;
	len &= 7;
	while (len--)
		*dst++ = __atomic_load_n(src++, __ATOMIC_RELAXED);
}

static inline void shm_copy_to_remote(uint8_t *dst, const uint8_t *src,
				      uint32_t len)
{
	while (len && ((uintptr_t)dst & 7)) {
		__atomic_store_n(dst++, *src++, __ATOMIC_RELAXED);
		len--;
	}
	shm_copy_words(dst, src, len / 8, 0);
	dst += len & ~7u;
	src += len & ~7u;
	len &= 7;
	while (len--)
		__atomic_store_n(dst++, *src++, __ATOMIC_RELAXED);
}

/* CAS or FAA on the remote word rp, the old value to wr->local; any other
 * opcode (READ and WRITE are the callers') is a bad WR. */
static inline int shm_exec_atomic(const struct smart_tp_wr *wr, uint8_t *rp)
{
	uint64_t old;

	if (!smart_tp_atomic(wr->opcode) || wr->len != 8 || ((uintptr_t)rp & 7))
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

/* Table entries implemented in shm_mem.c and shm_qp.c. */
int smart__shm_domain_open(const struct smart_tp_cfg *cfg,
			   struct smart_tp_domain **out);
void smart__shm_domain_close(struct smart_tp_domain *d);
void smart__shm_query_caps(struct smart_tp_domain *d,
			   struct smart_tp_caps *out);
int smart__shm_mr_alloc(struct smart_tp_domain *d, size_t len, int hugepages,
			int shareable, struct smart_tp_mr **out);
void smart__shm_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *mr);
int smart__shm_dm_attach(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			 size_t len);
int smart__shm_region_blob(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   void *blob, size_t *len);
int smart__shm_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
		      const void *client_blob, size_t client_len,
		      void *blob_out, size_t *blob_len,
		      struct smart_tp_responder **out);
void smart__shm_responder_destroy(struct smart_tp_responder *r);
int smart__shm_remote_span(const void *blob, size_t len, uint64_t *span);
int smart__shm_remote_attach(struct smart_tp_domain *d, const void *blob,
			     size_t len, int fd, struct smart_tp_remote **out);
void smart__shm_remote_detach(struct smart_tp_remote *r);
void smart__shm_remote_fail(struct smart_tp_remote *r);
uint64_t smart__shm_remote_base(const struct smart_tp_remote *r);
uint32_t smart__shm_remote_rkey(const struct smart_tp_remote *r);
uint64_t smart__shm_remote_dm(const struct smart_tp_remote *r, uint32_t *rkey);

int smart__shm_cq_event_fd(const struct smart_tp_cq *cq);
int smart__shm_cq_arm(struct smart_tp_cq *cq);
int smart__shm_cq_create(struct smart_tp_domain *d, uint32_t depth,
			 uint32_t flags, struct smart_tp_cq **out);
void smart__shm_cq_destroy(struct smart_tp_cq *cq);
int smart__shm_cq_own_doorbell(const struct smart_tp_cq *cq);
int smart__shm_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max);
int smart__shm_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			 const struct smart_tp_qp_attr *attr,
			 struct smart_tp_qp **out);
int smart__shm_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len);
int smart__shm_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			  const void *peer_blob, size_t len);
void smart__shm_qp_destroy(struct smart_tp_qp *qp);
int smart__shm_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n);
int smart__shm_post1(struct smart_tp_qp *qp, const struct smart_tp_wr *wr);
int smart__shm_qp_in_error(const struct smart_tp_qp *qp);

/* shm_recv.c: two-sided (rule 8). */
int smart__shm_rq_create(struct smart_tp_qp *qp,
			 const struct smart_tp_qp_attr *attr);
/* The receive queue and, once connected, the peer's mapping (a peer is
 * only ever connected to a QP with receives). */
void smart__shm_rq_destroy(struct smart_tp_qp *qp);
int smart__shm_qp_fds(const struct smart_tp_qp *qp, int fds[SMART_TP_PEER_FDS]);
int smart__shm_peer_blob(const struct smart_tp_qp *qp, void *blob, size_t *len);
int smart__shm_qp_connect_peer(struct smart_tp_qp *qp,
			       struct smart_tp_remote *r, const void *peer_blob,
			       size_t len, const int *fds, int nfds);
int smart__shm_post_recv(struct smart_tp_qp *qp, const struct smart_tp_recv *rs,
			 int n);
/* Mark qp's receive segment armed (cq_arm; the CQ's lock held). */
void smart__shm_rq_arm(struct smart_tp_qp *qp);
/* Post's check of a chain's SENDs against the peer (SMART_EINVAL). */
int smart__shm_send_check(const struct smart_tp_qp *qp,
			  const struct smart_tp_wr *wr);
/* Execute a SEND or WRITE_IMM: a completion status, or SHM_ST_RNR_WAIT. */
int smart__shm_exec_send(struct smart_tp_qp *qp, struct shm_wqe *e);
int smart__shm_exec_send_wr(struct smart_tp_qp *qp,
			    const struct smart_tp_wr *wr, const void *data);
/* Poll's receive half: completions of the CQ's receive queues into
 * wc[0..max); returns how many. */
int smart__shm_poll_recv(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			 int max);
void smart__shm_domain_stats(struct smart_tp_domain *d,
			     struct smart_tp_stats *out);

/*
 * The RNIC model (shm_model.c).  Parameters as the spec gives them; the
 * model converts them to ticks of its clock once, at domain open.
 */
struct shm_model_params {
	uint64_t rtt_ns;	/* network round trip added to every WR */
	double mops;		/* device rate, M WRs/s, whole domain */
	uint64_t doorbells;	/* the context's doorbell registers */
	uint64_t db_hold_ns;	/* MMIO time a post holds its doorbell */
	uint64_t wqe_cache;	/* WQE cache entries */
	uint64_t miss_ns;	/* extra device time of a WR that misses */
	uint64_t handoff_ns;	/* sim only: doorbell hand-off per spinner */
	uint64_t atomic_ns;	/* sim only: responder time of one atomic on
				 * an address (same-address serialised) */
	uint64_t pcie_wr_bytes; /* sim only: PCIe inbound bytes per WR, 0 off */
	uint64_t pcie_miss_bytes; /* sim only: more per WQE-cache miss */
	double pcie_gbs;	  /* sim only: PCIe inbound budget, GB/s */
};

/* A doorbell register: a real spinlock held for the modelled MMIO time.
 * Its counters change only under the lock (relaxed load + store, no
 * read-modify-write) and are read by domain_stats from any thread. */
struct shm_doorbell {
	smart_spinlock_t lock;
	int index;
	_Atomic uint64_t rings, contended, misses;
	struct shm_doorbell *next; /* own doorbells, under d->lock */
	struct shm_sim_res sim;	   /* sim only: the register */
} smart_aligned_cl;

/* The model of one domain (one NIC).  Ticks are TSC cycles, or ns when
 * the clock has no invariant TSC. */
struct shm_model {
	struct shm_model_params p;
	struct smart__clock clock;
	int use_tsc;
	uint64_t rtt, hold, wr, miss; /* parameters in ticks */
	uint64_t handoff;	      /* ticks, sim only */
	uint64_t atomic;	      /* ticks, sim only */
	/* sim only: the responder's atomic units, by address hash: busy
	 * until (ticks) */
	uint64_t atom_busy[64];
	uint64_t pcie_busy; /* sim only: the PCIe inbound link, ticks */
	int sim; /* virtual time (transport/sim): resources simulated */
	/* sim only: the responder, a source of the engine whose events are
	 * the WRs' executions, from a min-heap of QPs keyed by (responder
	 * time of their next WR, rid) (docs/sim.md §1.2) */
	struct smart__sim_source resp_src;
	struct smart_tp_qp **rheap;
	uint32_t nrheap, rcap, rsize; /* in it, QPs attached, allocated */
	uint64_t next_rid, resp_execs;
	uint32_t ndb, nded; /* doorbells, of which dedicated */
	/* mapping state, under d->lock */
	uint32_t ded_used;	       /* bit i: dedicated doorbell i taken */
	uint32_t next_shared;	       /* round robin over the shared ones */
	int next_own;		       /* index of the next own doorbell */
	struct shm_doorbell *dbs;      /* [ndb] */
	struct shm_doorbell *own;      /* list of own doorbells */
	struct smart_tp_stats retired; /* of freed own doorbells */
	/* the device: written by every post, so on a line of their own */
	_Atomic uint64_t dev_busy smart_aligned_cl; /* busy until */
	_Atomic uint64_t outstanding; /* WRs posted, not executed */
};

static inline uint64_t shm_model_now(const struct shm_model *m)
{
	return m->use_tsc ? smart__rdtsc() : smart__mono_ns();
}

/* n executed (or forgotten) WRs leave the device. */
static inline void shm_model_retire(struct shm_model *m, uint32_t n)
{
	atomic_fetch_sub_explicit(&m->outstanding, n, memory_order_relaxed);
}

/* Parse a spec ("default" or key=value,...) over the defaults (over the
 * sim transport's calibrated ones when its first item is "sim"); 0 or
 * SMART_EINVAL with a log line naming the problem. */
int smart__shm_model_parse(const char *spec, struct shm_model_params *out,
			   const struct smart__log *log);
/* Domain open/close: d->model from the spec (spec NULL or "" = off). */
int smart__shm_model_open(struct smart_tp_domain *d, const char *spec);
void smart__shm_model_close(struct smart_tp_domain *d);
/* QP create/destroy: give the QP its doorbell, take it back. */
int smart__shm_model_qp_attach(struct smart_tp_qp *qp);
void smart__shm_model_qp_detach(struct smart_tp_qp *qp);
/* Ring the doorbell for the n WRs copied at the QP's SQ tail, stamp their
 * completion times and queue them on the CQ (the modelled half of post). */
/* Turn a model opened on a simulated thread into the sim transport's
 * (docs/sim.md): doorbells become simulated resources. */
void smart__shm_model_sim(struct smart_tp_domain *d);
/* Sim only: take and release a SMART_TP_SHARED QP's lock as a simulated
 * resource around a post (nothing for other QPs or without the model). */
void smart__shm_sim_qp_lock(struct smart_tp_qp *qp);
void smart__shm_sim_qp_unlock(struct smart_tp_qp *qp);
/* Sim only: may qp's WR at sq_exec run at the responder now (one-sided,
 * QP ready, remote alive)?  Run it (shm_qp.c: the executor's code). */
int smart__shm_resp_ready(const struct smart_tp_qp *qp);
void smart__shm_resp_exec(struct smart_tp_qp *qp);
int smart__shm_model_ring(struct smart_tp_qp *qp, uint32_t n);

/* For tests: the parameters in force (NULL when the model is off) and the
 * doorbell index of a QP (-1 without the model).  Indexes below
 * params->doorbells are the context's registers; a QP created with
 * SMART_TP_OWN_DOORBELL gets one of its own, numbered from there on. */
const struct shm_model_params *
smart__shm_model_params(const struct smart_tp_domain *d);
int smart__shm_qp_doorbell(const struct smart_tp_qp *qp);

/*
 * Option specs (shm_spec.c): "word" or key=value,... over a caller's
 * struct of defaults, every value range-checked, every refusal logged
 * with the option's name.
 */
struct shm_spec_key {
	const char *name;
	size_t off; /* of a uint64_t, or of a double */
	int is_double;
	double min, max;
};

struct shm_spec {
	const char *what; /* the option's name, first in messages */
	const struct shm_spec_key *keys;
	size_t nkeys;		  /* at most 32 */
	const char *const *words; /* NULL-ended words for "defaults" */
};

/* 0, or SMART_EINVAL with a log line; params may be half written then. */
int smart__shm_spec_parse(const struct shm_spec *s, const char *spec,
			  void *params, const struct smart__log *log);

/*
 * The adversarial mode (shm_adv.c, docs/transport.md "Adversarial mode").
 */
struct shm_adv_params {
	uint64_t seed;	     /* CQ k draws from a stream of seed and k */
	uint64_t pause_pct;  /* chance of a pause before a copied word */
	uint64_t pause_ns;   /* a spinning pause */
	uint64_t yield_pct;  /* share of pauses that sched_yield() */
	uint64_t reexec_pct; /* chance a READ is executed again later */
	uint64_t hold_pct;   /* chance a completion is held back */
	uint64_t hold_polls; /* for 1..hold_polls polls */
	uint64_t cq_fail;    /* a CQ fails for ever (an overrun or a dead
				 * device on a NIC) once it has delivered
				 * this many completions; 0: never */
	uint64_t read_down;  /* chance a READ copies its units from the
				 * highest address down (no random order) */
};

/* What the adversary did, over the whole domain. */
struct shm_adv_stats {
	uint64_t pauses;      /* copies paused in the middle */
	uint64_t yields;      /* of which by sched_yield() */
	uint64_t scrambled;   /* copies of several units not in address
				 * order */
	uint64_t reexecs;     /* READs executed again after later WRs */
	uint64_t late;	      /* completions delivered a poll or more
				 * after their WR executed */
	uint64_t reordered;   /* completions delivered before an older one
				 * of another QP */
	uint64_t cq_failures; /* CQs failed by cq_fail */
	uint64_t descended;   /* READs copied from the top down (read_down) */
	uint64_t unit_hooks;  /* calls of the unit hook */
};

/* A completion the adversary holds. */
struct shm_held {
	struct smart_tp_wc wc;
	uint64_t born, due; /* poll numbers: executed, may go from */
	uint32_t lane;	    /* the QP's id: one RC order per lane */
	int32_t next;	    /* delivery scratch: next of its lane */
	uint8_t gone;	    /* delivery scratch: delivered */
};

/* A READ to execute again before the poll ends. */
struct shm_redo {
	struct smart_tp_qp *qp;
	uint8_t *rp, *local;
	uint32_t len;
};

#define SHM_ADV_REDO_MAX 32

/* The adversary's state of one CQ, used under the CQ's ordering (its
 * lock when shared), like the CQ itself. */
struct shm_adv_cq {
	struct shm_adv *a;
	smart_rng_t rng;    /* this CQ's stream */
	uint64_t polls;	    /* polls so far */
	uint64_t delivered; /* completions delivered so far */
	uint32_t nheld, cap;
	struct shm_redo redo[SHM_ADV_REDO_MAX];
	uint32_t nredo;
	struct shm_held held[]; /* [cap], oldest first */
};

/* Domain open/close: d->adv from the spec (NULL, "" or "off" = off);
 * SMART_EINVAL for a bad spec or with the RNIC model on. */
int smart__shm_adv_open(struct smart_tp_domain *d, const char *spec);
void smart__shm_adv_close(struct smart_tp_domain *d);
/* CQ create/destroy: the CQ's state, holding up to depth completions. */
int smart__shm_adv_cq_init(struct smart_tp_cq *cq, uint32_t depth);
void smart__shm_adv_cq_fini(struct smart_tp_cq *cq);
/* Execute one WR of qp (a QP in RTS) the adversary's way. */
int smart__shm_adv_exec(struct smart_tp_cq *cq, struct smart_tp_qp *qp,
			struct shm_wqe *e);
/* Hold the completion of wr; the caller checked there is room. */
void smart__shm_adv_complete(struct smart_tp_cq *cq,
			     const struct smart_tp_qp *qp,
			     const struct smart_tp_wr *wr, int status);
/* The end of a poll: READs marked for it run again, then up to max held
 * completions that may go are delivered into wc; returns how many. */
int smart__shm_adv_poll_end(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
			    int max);

static inline int shm_adv_full(const struct smart_tp_cq *cq)
{
	return cq->adv->nheld >= cq->adv->cap;
}

/* For tests: the parameters in force and the counters; NULL / SMART_ENOENT
 * when the mode is off. */
const struct shm_adv_params *
smart__shm_adv_params(const struct smart_tp_domain *d);
int smart__shm_adv_stats(const struct smart_tp_domain *d,
			 struct shm_adv_stats *out);

/* For tests: fn(arg, remote) runs on the polling thread before each unit
 * of a READ but its first, remote being the unit's first remote byte, so
 * that a test can land another client's WRs between the words of one READ
 * (with read_down=100: after its higher words were copied, before its
 * lower ones; contract rule 4 gives no order among them).  It may block
 * (with a deadline) until another thread's WRs, on other CQs, have run;
 * it must not touch this CQ.  fn NULL removes it.  Set it while no poll
 * runs the READs it is meant for.  SMART_ENOENT when the mode is off. */
typedef void (*smart__shm_adv_unit_fn)(void *arg, const uint8_t *remote);
int smart__shm_adv_set_unit_hook(struct smart_tp_domain *d,
				 smart__shm_adv_unit_fn fn, void *arg);

/* The entries the sim transport (transport/sim) shares with shm: the
 * same memory, queues and regions; only the clock-driven ones differ. */
#define SMART__SHM_OPS_SHARED                                                  \
	.domain_close = smart__shm_domain_close,                               \
	.query_caps = smart__shm_query_caps,                                   \
	.domain_stats = smart__shm_domain_stats,                               \
	.mr_alloc = smart__shm_mr_alloc, .mr_free = smart__shm_mr_free,        \
	.cq_create = smart__shm_cq_create,                                     \
	.cq_destroy = smart__shm_cq_destroy,                                   \
	.cq_own_doorbell = smart__shm_cq_own_doorbell,                         \
	.cq_event_fd = smart__shm_cq_event_fd, .cq_arm = smart__shm_cq_arm,    \
	.dm_attach = smart__shm_dm_attach,                                     \
	.region_blob = smart__shm_region_blob, .accept = smart__shm_accept,    \
	.responder_destroy = smart__shm_responder_destroy,                     \
	.remote_attach = smart__shm_remote_attach,                             \
	.remote_detach = smart__shm_remote_detach,                             \
	.remote_span = smart__shm_remote_span,                                 \
	.remote_fail = smart__shm_remote_fail,                                 \
	.remote_base = smart__shm_remote_base,                                 \
	.remote_rkey = smart__shm_remote_rkey,                                 \
	.remote_dm = smart__shm_remote_dm, .qp_create = smart__shm_qp_create,  \
	.qp_blob = smart__shm_qp_blob, .qp_connect = smart__shm_qp_connect,    \
	.qp_destroy = smart__shm_qp_destroy,                                   \
	.qp_in_error = smart__shm_qp_in_error, .qp_fds = smart__shm_qp_fds,    \
	.qp_connect_peer = smart__shm_qp_connect_peer,

#endif
