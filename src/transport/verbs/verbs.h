/*
 * verbs transport internals: real RDMA through rdma-core's libibverbs
 * (mlx5 and other RoCE/IB NICs, Soft-RoCE), docs/design.md §4.2.
 *
 * One device context and one PD per domain; RC QPs taken RESET -> INIT ->
 * RTR -> RTS with the peer's data from the bootstrap (no rdma_cm).  Each QP
 * keeps a shadow ring of its posted WRs: the wr_id given to the NIC is
 * (qp << 16 | slot), so a completion names its QP and slot, the caller's
 * wr_id is restored from the ring, and, since RC completes in order, the
 * slot tells exactly how much of the send queue is free again.  That makes
 * post() refuse a chain that does not fit (nothing posted, SMART_EAGAIN)
 * instead of letting ibv_post_send post a prefix.
 *
 * The ring holds a power of two of slots but a post is held to the send
 * queue the device really gave (cap.max_send_wr returned by
 * ibv_create_qp_ex, which may be more than asked, never less): a chain that
 * does not fit is refused whole before the doorbell.
 *
 * CQs hold what can flush into them: every QP on a CQ may fail and flush
 * its whole send queue, signalled or not, so a CQ is grown (ibv_resize_cq)
 * to the sum of its QPs' send queues before a QP joins it, or the QP is
 * refused.  A CQ that fails anyway (poll < 0, an IBV_EVENT_CQ_ERR) or a
 * device that dies (IBV_EVENT_DEVICE_FATAL) makes poll return SMART_ECONN
 * from then on and post refuse, so the core fails its waiting tasks instead
 * of spinning on a CQ that will never deliver (verbs_event.c reads the
 * async events; no thread of its own: pollers drain them now and then).
 *
 * Threading: libibverbs serialises QPs and CQs itself, except a CQ made
 * single-threaded (a private one, SMART_TP_SHARED not set); our shadow
 * ring is guarded by a spinlock when the QP is SMART_TP_SHARED.  A shared
 * CQ's pollers take turns (poll_lock), each from the device's poll to the
 * last wr_id it restored from a ring: else a later completion taken by
 * another could retire a ring past a slot whose wr_id is not yet read,
 * and a post reuse it.  So one poller at a time retires a QP's slots (a
 * private CQ's thread, or a shared CQ's poller in its turn) and the
 * ring's head is stored, not swapped (ring_retire); a slot behind head
 * still moves it by nothing (which is why a send queue stays below 2^15
 * WRs: smart__verbs_slot_ahead).
 *
 * Doorbells (per-thread-db): a CQ created with SMART_TP_OWN_DOORBELL owns a
 * thread domain and a parent domain, and is created inside it; QPs asking
 * for their own doorbell on that CQ are created in the same parent domain,
 * so one worker's QPs share one doorbell register of their own (mlx5: one
 * UAR per thread domain), none shared with another worker.  When the
 * device gives no more thread domains the CQ falls back to the shared
 * doorbells, says so in the log, and cq_own_doorbell() tells the core.
 */
#ifndef SMART_TRANSPORT_VERBS_H
#define SMART_TRANSPORT_VERBS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/compiler.h"
#include "util/spinlock.h"

#define VERBS_REGION_MAGIC	  0x52425256u /* "VRBR" */
#define VERBS_QP_MAGIC		  0x51425256u /* "VRBQ" */
/* Each blob has a version of its own.  Region blob: 1 first, 2 device
 * memory.  QP blob: 1 first (with the region's 2), 3 the fabric (link
 * layer, GID type, LID in network order, read/atomic depths, atomics),
 * 4 the longest message its receive queue takes (0: none; rule 8).
 * A peer of another version is refused (SMART_EPROTO): both ends of a
 * connection run the same blob format. */
#define VERBS_REGION_BLOB_VERSION 2
#define VERBS_QP_BLOB_VERSION	  4
#define VERBS_REGION_BLOB_LEN	  40
#define VERBS_QP_BLOB_LEN	  44
/* A completion names its ring slot in 16 bits of the wr_id; the slot lies
 * within one send queue of head on either side (behind it when another
 * poller of a shared CQ already retired past it), so a queue must stay
 * below half of 2^16 for the two sides to be told apart. */
#define VERBS_MAX_SEND_WR	  16384
#define VERBS_MAX_CHAIN		  64
/* Two-sided (rule 8): receives a queue holds, the longest message (the
 * blob carries it in 24 bits), and the wr_id bit that marks a receive's
 * completion (a user-space QP pointer << 16 never reaches it). */
#define VERBS_MAX_RECV_WR	  4096
#define VERBS_MAX_MSG		  (1u << 20)
#define VERBS_RECV_BIT		  (UINT64_C(1) << 63)
/* Receiver not ready: an RNR NAK asks the sender to wait 20.48 ms (the
 * IB encoding 22), and a SEND is tried 1 + 6 times: it fails
 * IBV_WC_RNR_RETRY_EXC_ERR after ~143 ms without a receive. */
#define VERBS_RNR_TIMER		  22
#define VERBS_RNR_RETRY		  6
#define VERBS_POLL_MAX		  64
#define VERBS_MAX_RD_ATOM	  16

_Static_assert(VERBS_MAX_SEND_WR < 0x8000, "ring slots: 16-bit distances");

struct smart_tp_domain {
	const struct smart__log *log;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev;
	uint8_t port;
	int gid_index; /* -1: no GRH (InfiniBand, LID routed) */
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	int link_eth;
	int ib_timeout, ib_retry;
	uint32_t max_inline;
	int thread_domains;
	uint64_t max_dm;	/* ibv_query_device_ex's max_dm_size */
	struct ibv_cq *resp_cq; /* responder QPs' CQ, never polled */
	char name[64];
	/* async events (verbs_event.c) */
	smart_spinlock_t ev_lock; /* one drainer at a time (trylock) */
	_Atomic int fatal;	  /* IBV_EVENT_DEVICE_FATAL seen */
	_Atomic int td_warned;	  /* a CQ asked a doorbell, got none */
	uint32_t max_send_wr;	  /* largest send queue a QP really gets */
	/* fabric and atomics (verbs_dev.c, verbs_selftest.c) */
	int gid_type;	    /* VERBS_GID_* of gid_index, NONE without */
	uint8_t tclass, sl; /* GRH traffic class, service level */
	uint8_t resp_depth; /* min(max_qp_rd_atom, VERBS_MAX_RD_ATOM) */
	uint8_t init_depth; /* min(max_qp_init_rd_atom, ditto) */
	int atomics;	    /* 1: CAS/FAA allowed (caps.atomics) */
	_Atomic int peer_atomics_said; /* logged: a peer takes none */
};

struct verbs_mr {
	struct smart_tp_mr pub;
	struct ibv_mr *mr;
	size_t map_len;
	struct ibv_dm *dm;    /* device memory (dm_attach), or NULL */
	struct ibv_mr *dm_mr; /* its zero-based registration */
};

struct smart_tp_remote {
	uint64_t base;
	uint64_t size;
	uint32_t rkey;
	uint32_t dm_rkey;
	uint64_t dm_len;
};

/* QP blob values of the link layer and of the GID type (the wire's own
 * numbers, not libibverbs' enums, which could change). */
enum { VERBS_LINK_IB = 1, VERBS_LINK_ETH = 2 };
enum { VERBS_GID_NONE = 0, VERBS_GID_IB, VERBS_GID_ROCE_V1, VERBS_GID_ROCE_V2 };
enum { VERBS_QPF_ATOMICS = 1 << 0 }; /* this end takes CAS/FAA */

/* The connection data of one QP end (both directions use it). */
struct verbs_qp_info {
	uint32_t qpn, psn;
	uint16_t lid; /* host order here; network order on the wire */
	uint8_t mtu;  /* enum ibv_mtu */
	uint8_t has_gid;
	uint8_t gid[16];
	uint8_t link;	  /* VERBS_LINK_* */
	uint8_t gid_type; /* VERBS_GID_*; NONE exactly when !has_gid */
	/* read/atomic depths: how many READs and atomics this end takes as a
	 * responder at once (max_dest_rd_atomic it can set), and how many it
	 * can have outstanding as an initiator (max_rd_atomic); each end
	 * takes the minimum of its own and the peer's */
	uint8_t resp_depth, init_depth;
	uint8_t flags;	  /* VERBS_QPF_* */
	uint32_t max_msg; /* its receive queue's longest message, 0:
				 * none (a one-sided QP) */
};

struct smart_tp_responder {
	struct ibv_qp *qp;
};

struct verbs_slot {
	uint64_t wr_id;
};

struct smart_tp_cq {
	struct smart_tp_domain *d;
	struct ibv_cq *cq;     /* ibv_cq_ex_to_cq(cqx) when extended */
	struct ibv_cq_ex *cqx; /* extended CQ (single-threaded when private),
				 * polled with start/next_poll when in a
				 * thread domain; NULL: a provider without
				 * it (ibv_create_cq, ibv_poll_cq) */
	struct ibv_td *td;     /* SMART_TP_OWN_DOORBELL: the CQ's thread */
	struct ibv_pd *ppd;    /* domain and parent domain, or NULL */
	struct ibv_comp_channel *ch; /* SMART_TP_CQ_EVENTS, or NULL */
	uint32_t flags;
	_Atomic int dead;	/* 0, or the error poll returns for ever */
	_Atomic uint32_t polls; /* async events are read every 65536 */
	smart_spinlock_t lock;	/* size, committed and graves */
	uint32_t size;		/* entries the CQ holds */
	uint32_t committed;	/* sum of its QPs' send queues */
	/* QPs destroyed while CQEs of theirs may still sit in the CQ (rxe
	 * flushes a QP's receives and WRs into it as the QP goes, and no
	 * provider but mlx5 cleans them out): their structs stay, marked
	 * dead, and a poll drops their CQEs.  Freed once a poll that began
	 * after they died found the CQ empty (private CQ), or with the CQ
	 * (SMART_TP_SHARED: another poller may hold one of their CQEs). */
	struct smart_tp_qp *graves;
	/* SMART_TP_SHARED: pollers take turns, each from its poll of the
	 * device's CQ to its last wr_id restored (poll_shared says why);
	 * poll_waits counts the polls that found another's turn */
	smart_spinlock_t poll_lock;
	_Atomic uint64_t poll_waits;
	/* tests only (test_verbs_blob): called in a shared CQ's turn, after
	 * the device's poll returned CQEs and before their wr_ids are read */
	void (*take_hook)(struct smart_tp_cq *cq, void *arg);
	void *take_arg;
};

struct smart_tp_qp {
	struct smart_tp_domain *d;
	struct smart_tp_cq *cq;
	struct ibv_qp *qp;
	struct ibv_td *td;
	struct ibv_pd *ppd; /* parent domain when it owns a doorbell */
	uint32_t flags;
	uint32_t psn;
	uint32_t max_inline;
	smart_spinlock_t lock;
	struct verbs_slot *ring;
	uint32_t mask;
	uint32_t room;	       /* the send queue: cap.max_send_wr */
	uint32_t tail;	       /* next slot to post */
	_Atomic uint32_t head; /* next slot not yet completed */
	_Atomic int error;
	/* the receive queue (rule 8), rroom 0: none; its ring names each
	 * receive's wr_id by slot, receives complete in posting order */
	struct verbs_slot *rring;
	uint32_t rmask, rroom;
	uint32_t rposted;		/* receives posted (under the lock
					 * when SMART_TP_SHARED) */
	_Atomic uint32_t rtaken;	/* receives completed */
	uint32_t max_msg;		/* ours, in our blob */
	uint32_t peer_max_msg;		/* the peer's: a SEND's limit */
	_Atomic int dead;		/* destroyed: its CQEs are dropped */
	struct smart_tp_qp *grave_next; /* cq->graves */
	struct ibv_send_wr wr[VERBS_MAX_CHAIN];
	struct ibv_sge sge[VERBS_MAX_CHAIN];
};

/* verbs_dev.c */
int smart__verbs_domain_open(const struct smart_tp_cfg *cfg,
			     struct smart_tp_domain **out);
void smart__verbs_domain_close(struct smart_tp_domain *d);
void smart__verbs_query_caps(struct smart_tp_domain *d,
			     struct smart_tp_caps *out);
int smart__verbs_mr_alloc(struct smart_tp_domain *d, size_t len, int hugepages,
			  int shareable, struct smart_tp_mr **out);
void smart__verbs_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *mr);
int smart__verbs_dm_attach(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   size_t len);
int smart__verbs_region_blob(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			     void *blob, size_t *len);
int smart__verbs_remote_span(const void *blob, size_t len, uint64_t *span);
int smart__verbs_remote_attach(struct smart_tp_domain *d, const void *blob,
			       size_t len, int fd,
			       struct smart_tp_remote **out);
void smart__verbs_remote_detach(struct smart_tp_remote *r);
void smart__verbs_remote_fail(struct smart_tp_remote *r);
uint64_t smart__verbs_remote_base(const struct smart_tp_remote *r);
uint32_t smart__verbs_remote_rkey(const struct smart_tp_remote *r);
uint64_t smart__verbs_remote_dm(const struct smart_tp_remote *r,
				uint32_t *rkey);
/* The QP blob (VERBS_QP_BLOB_LEN bytes).  unpack checks every field and
 * refuses anything else with SMART_EPROTO, *why (when why is not NULL)
 * saying what was wrong. */
size_t smart__verbs_info_pack(const struct verbs_qp_info *in, void *blob);
int smart__verbs_info_unpack(const void *blob, size_t len,
			     struct verbs_qp_info *out, const char **why);
/* Can this domain connect to the peer (same link layer and kind of GID)?
 * 0, or SMART_EPROTO with *why. */
int smart__verbs_peer_check(const struct smart_tp_domain *d,
			    const struct verbs_qp_info *peer, const char **why);
/* The read/atomic depths of a QP of d against peer: max_rd_atomic (as
 * initiator) and max_dest_rd_atomic (as responder). */
void smart__verbs_rd_depths(const struct smart_tp_domain *d,
			    const struct verbs_qp_info *peer, uint8_t *init,
			    uint8_t *dest);

/* verbs_selftest.c */
/* CAS and FAA through a loopback QP pair on the device: 0 when the old
 * values and the memory are right in host order, else SMART_ENOTSUP (or
 * the error that kept the test from running) with what went wrong in
 * why (len bytes). */
int smart__verbs_atomics_selftest(struct smart_tp_domain *d, char *why,
				  size_t len);

/* verbs_qp.c */
int smart__verbs_cq_create(struct smart_tp_domain *d, uint32_t depth,
			   uint32_t flags, struct smart_tp_cq **out);
void smart__verbs_cq_destroy(struct smart_tp_cq *cq);
int smart__verbs_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max);
int smart__verbs_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			   const struct smart_tp_qp_attr *attr,
			   struct smart_tp_qp **out);
int smart__verbs_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len);
int smart__verbs_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			    const void *peer_blob, size_t len);
void smart__verbs_qp_destroy(struct smart_tp_qp *qp);
uint32_t smart__verbs_slot_ahead(uint32_t head, uint32_t slot);
int smart__verbs_qp_fds(const struct smart_tp_qp *qp,
			int fds[SMART_TP_PEER_FDS]);
int smart__verbs_cq_event_fd(const struct smart_tp_cq *cq);
int smart__verbs_cq_arm(struct smart_tp_cq *cq);
int smart__verbs_qp_connect_peer(struct smart_tp_qp *qp,
				 struct smart_tp_remote *r,
				 const void *peer_blob, size_t len,
				 const int *fds, int nfds);
int smart__verbs_post_recv(struct smart_tp_qp *qp,
			   const struct smart_tp_recv *rs, int n);
int smart__verbs_post1(struct smart_tp_qp *qp, const struct smart_tp_wr *wr);
int smart__verbs_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		      int n);
int smart__verbs_qp_in_error(const struct smart_tp_qp *qp);
int smart__verbs_cq_own_doorbell(const struct smart_tp_cq *cq);
/* What QPs really get (throwaway QPs at domain open): d->max_inline and
 * d->max_send_wr. */
int smart__verbs_probe_queues(struct smart_tp_domain *d);
/* An RC QP of n send WRs and inl inline bytes on cq (both directions) in
 * pd, created with only the send operations we post; ia->cap says what
 * the device gave.  Every QP of the transport is made here. */
struct ibv_qp *smart__verbs_qp_make(struct smart_tp_domain *d,
				    struct ibv_cq *cq, struct ibv_pd *pd,
				    uint32_t n, uint32_t nrecv, uint32_t inl,
				    void *context,
				    struct ibv_qp_init_attr_ex *ia);
/* Nothing more will come out of cq (a failed poll, IBV_EVENT_CQ_ERR, a
 * dead device): poll fails and post refuses from now on; said once.
 * Returns SMART_ECONN. */
int smart__verbs_cq_fail(struct smart_tp_cq *cq, const char *why);
int smart__verbs_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
			const void *client_blob, size_t client_len,
			void *blob_out, size_t *blob_len,
			struct smart_tp_responder **out);
void smart__verbs_responder_destroy(struct smart_tp_responder *r);
/* verbs_event.c */
/* Put the async event fd in non-blocking mode (domain open). */
int smart__verbs_events_init(struct smart_tp_domain *d);
/* Read and handle every pending async event; never blocks, one caller at
 * a time (others return at once). */
void smart__verbs_events_drain(struct smart_tp_domain *d);

/* Move a fresh QP to RTS against the peer's info (already checked to
 * suit this end: smart__verbs_peer_check). */
int smart__verbs_qp_rts(struct smart_tp_domain *d, struct ibv_qp *qp,
			uint32_t my_psn, const struct verbs_qp_info *peer);
/* Take a fresh QP to INIT with the access rights the domain grants. */
int smart__verbs_qp_init(struct smart_tp_domain *d, struct ibv_qp *qp);
/* This end's connection data for qp. */
void smart__verbs_local_info(const struct smart_tp_domain *d,
			     const struct ibv_qp *qp, uint32_t psn,
			     struct verbs_qp_info *out);

#endif
