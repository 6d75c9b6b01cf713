/*
 * The transport interface: one function table shaped like verbs.
 *
 * Everything above this layer sees reliable-connection RDMA semantics,
 * whatever the wire (docs/design.md §4, docs/transport.md):
 *  1. Objects: a domain (device + protection domain), memory regions with
 *     keys, completion queues, queue pairs bound to one CQ, and opaque
 *     connection blobs exchanged through the bootstrap.
 *  2. post() takes a chain of WRs for one QP and rings one doorbell; only
 *     WRs flagged SMART_TP_SIGNALED produce a completion when they succeed.
 *  3. WRs on one QP execute at the responder in posting order, with the
 *     InfiniBand exception that a READ may be executed again after WRs
 *     posted behind it (its response was lost), so its buffer may show
 *     their effects; a WR carrying SMART_TP_FENCE waits for every earlier
 *     READ and atomic to complete.  Atomics are never executed twice.
 *     Completions of one QP come in posting order; those of different QPs
 *     sharing a CQ come in any order.
 *  4. 8-byte-aligned CAS and FAA are atomic with respect to each other,
 *     and take and return values in host byte order; a domain whose
 *     caps.atomics is 0 has none (post refuses a chain holding one with
 *     SMART_ENOTSUP, nothing posted).  READ/WRITE are atomic only per
 *     aligned 8-byte word and promise no order among their words.
 *  5. A WR that fails (bounds, key, dead peer, timeout) always completes,
 *     signalled or not, with an error status; the QP enters the error state
 *     and every later WR on it completes with SMART_TP_WC_FLUSH, signalled
 *     or not, without effect.  A failed WR has no remote effect, except an
 *     atomic whose local result buffer is bad: as in verbs, it may have
 *     executed at the responder before its result could not be stored.
 *     The status names the cause, except that on a lossy link a remote
 *     error whose NAK was lost ends in SMART_TP_WC_RETRY_EXC (the
 *     responder's QP is in error and answers nothing more).  On a slow
 *     link a NIC may also: flush a WR posted before the failing one that
 *     still waited for its ACK (its effect unknown), and then (rxe) flush
 *     the failing WR itself, its cause lost; and have run WRs posted
 *     behind a READ or atomic whose local buffer is bad, since that
 *     fails only when the response comes back.  The core never posts a
 *     bad local buffer (the API refuses one).
 *     Nothing aborts the process.  A QP in error is destroyed and
 *     replaced, never revived.
 *  6. No blade CPU work on the data path.
 *  7. Device memory (NIC on-chip memory, ibv_alloc_dm): a served region
 *     may carry a second, small range of it (dm_attach), with a key of its
 *     own and addresses from 0 (verbs' IBV_ACCESS_ZERO_BASED); a WR with
 *     that key addresses it, with the same rules 3-5 as the region.
 *  8. Two-sided (messaging, docs/design.md §8): a QP created with max_recv_wr
 *     > 0 has a receive queue and is connected to another such QP, its
 *     peer (qp_connect_peer: each side takes the other's blob).  A SEND
 *     (or a WRITE_IMM, after its WRITE) consumes the peer's oldest posted
 *     receive, in QP order with the sender's other WRs; the receive
 *     completes (always, signalled or not) with SMART_TP_RECV, recv_op
 *     saying what consumed it (SMART_TP_SEND or SMART_TP_WRITE_IMM), its
 *     len and, with SMART_TP_IMM, the immediate word.  A SEND's len is
 *     the bytes landed in the buffer, never more than the receive's
 *     length; a WRITE_IMM's is the WRITE's length, at most
 *     SMART_TP_WRITE_MAX, and none of it is in the buffer (whatever the
 *     buffer holds is older than this receive: a user never parses it).
 *     On shm both are the peer's word (its process fills the slot), so
 *     a user accepts a WRITE_IMM only where its protocol sends one, with
 *     the length it expects.  A WRITE_IMM of 0 bytes
 *     touches no memory: it needs no region of the peer's and its remote
 *     address and rkey are not looked at (InfiniBand C9-88); it is the
 *     keepalive probe of messaging.  A message longer than that
 *     receive's buffer fails: the receive with SMART_TP_WC_LOC_PROT, the
 *     SEND with SMART_TP_WC_REM_ACCESS or, where the NIC says it so (rxe),
 *     SMART_TP_WC_BAD_WR; both QPs into error.  post refuses (SMART_EINVAL, nothing posted) a SEND
 *     longer than the peer's max_msg, and a SEND or WRITE_IMM on a QP
 *     without a peer.  A SEND that finds no
 *     receive posted is retried for a bounded time (receiver not ready;
 *     docs/transport.md gives each transport's bound), then completes
 *     with SMART_TP_WC_RNR and its QP enters error.  Receives of a QP in
 *     error complete with SMART_TP_WC_FLUSH.
 *  9. Events (messaging's event mode): a CQ created with
 *     SMART_TP_CQ_EVENTS has a descriptor (cq_event_fd) a thread can
 *     sleep on in poll(2) or epoll.  cq_arm consumes the events it
 *     signalled so far and asks for the next: once armed, the descriptor
 *     becomes readable when a completion may be ready (verbs: any; shm:
 *     a receive its peer delivered, since the CQ's own WRs run only at
 *     its own polls).  SMART_EAGAIN: the CQ cannot be left unpolled (shm:
 *     WRs of its QPs wait to run, or completions to be taken).  A
 *     completion that came between the caller's last poll and the arm
 *     may not signal: after a 0 the caller polls once more and sleeps
 *     only if that poll found nothing.  Signals may be spurious.
 *
 * Threading: a QP or CQ created without SMART_TP_SHARED is used by one
 * thread at a time and takes no lock; with SMART_TP_SHARED the transport
 * serialises post/poll internally (that is the cost the shared and mux:K
 * modes measure).  Domains and MRs are thread safe.
 *
 * Errors: functions return 0 or a negative SMART_E* code, outputs last, and
 * an error leaves no side effect.
 */
#ifndef SMART_TRANSPORT_H
#define SMART_TRANSPORT_H

#include <stdint.h>
#include <stddef.h>
#include "smart/status.h"

struct smart__log;

#define SMART_TP_BLOB_MAX 256

struct smart_tp_domain;
struct smart_tp_cq;
struct smart_tp_qp;
struct smart_tp_remote;
struct smart_tp_responder;

/* A registered memory region.  Transports embed it first in their own MR
 * struct (container_of style). */
struct smart_tp_mr {
	void *addr;
	size_t len;
	uint32_t lkey, rkey;
	int fd;		 /* shm: memfd backing the region; else -1 */
	int hugepages;	 /* 1 when backed by huge pages */
	uint64_t dm_len; /* device memory attached (rule 7); 0: none */
	uint32_t dm_rkey;
};

enum smart_tp_opcode {
	SMART_TP_READ = 1,
	SMART_TP_WRITE,
	SMART_TP_CAS,
	SMART_TP_FAA,
	SMART_TP_SEND,	    /* two-sided (rule 8): local -> a receive */
	SMART_TP_WRITE_IMM, /* WRITE, then a receive of 0 bytes + imm */
	SMART_TP_RECV,	    /* in completions only: a receive filled */
};

enum {
	SMART_TP_SIGNALED = 1 << 0,
	SMART_TP_INLINE = 1 << 1, /* WRITE: local data copied at post
					 * time (it need not be registered);
					 * longer than caps.max_inline: post
					 * refuses the chain, SMART_EINVAL */
	SMART_TP_FENCE = 1 << 2,  /* wait for earlier READs/atomics */
	SMART_TP_IMM = 1 << 3,	  /* SEND: carries wr.imm (WRITE_IMM
					 * always does); in a completion:
					 * imm is valid */
};

/* A work request.  remote is an address in the responder's space, i.e. the
 * region base from the responder's blob plus an offset.  For CAS and FAA
 * len is 8 and the old value is written to local. */
struct smart_tp_wr {
	uint64_t wr_id;
	uint64_t remote;
	void *local;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t opcode;
	uint8_t flags;
	uint16_t _pad;
	union {
		struct {
			uint64_t compare_add; /* CAS: compare value;
						 * FAA: addend */
			uint64_t swap;	      /* CAS: new value */
		};
		uint32_t imm; /* SEND with SMART_TP_IMM, WRITE_IMM */
	};
};

/* CAS or FAA: the opcodes of rule 4 (8 bytes, aligned, caps.atomics). */
static inline int smart_tp_atomic(uint8_t opcode)
{
	return opcode == SMART_TP_CAS || opcode == SMART_TP_FAA;
}

/* A receive (rule 8): a buffer of len bytes in the MR of lkey. */
struct smart_tp_recv {
	uint64_t wr_id;
	void *local;
	uint32_t len;
	uint32_t lkey;
};

enum smart_tp_wc_status {
	SMART_TP_WC_OK = 0,
	SMART_TP_WC_REM_ACCESS, /* remote bounds or key */
	SMART_TP_WC_LOC_PROT,	/* local buffer not registered / bad lkey */
	SMART_TP_WC_BAD_WR,	/* malformed WR (opcode, alignment, length) */
	SMART_TP_WC_FLUSH,	/* QP was already in error */
	SMART_TP_WC_RETRY_EXC,	/* peer unreachable, retries exhausted */
	SMART_TP_WC_FATAL,	/* anything else */
	SMART_TP_WC_RNR,	/* SEND: no receive posted in time (rule 8) */
};

struct smart_tp_wc {
	uint64_t wr_id;
	int status;
	uint8_t opcode;
	uint8_t flags;	 /* SMART_TP_IMM: imm is valid */
	uint8_t recv_op; /* SMART_TP_RECV that succeeded: what consumed
				 * the receive, SMART_TP_SEND or
				 * SMART_TP_WRITE_IMM (rule 8); else 0 */
	uint32_t len;	 /* SMART_TP_RECV: SEND, the bytes received;
				 * WRITE_IMM, the WRITE's length (rule 8) */
	uint32_t imm;
};

/* The longest WRITE a WRITE_IMM's receive may report (InfiniBand's
 * largest message, 2^31 bytes); a longer claim fails the receive. */
#define SMART_TP_WRITE_MAX (UINT32_C(1) << 31)

enum {
	SMART_TP_SHARED = 1 << 0,	/* object used by several threads */
	SMART_TP_OWN_DOORBELL = 1 << 1, /* CQ: owns a doorbell (thread
					 * domain), if caps allow; QP: uses
					 * its CQ's, or one of its own where
					 * the CQ has none (shm model) */
	SMART_TP_CQ_EVENTS = 1 << 2,	/* CQ: has an event descriptor
					 * (rule 9) */
};

/* mr_alloc's shareable: a region one peer may READ and nothing more. */
#define SMART_TP_MR_PEER_READ 2

/* Descriptors a two-sided QP's peer may need (qp_fds). */
#define SMART_TP_PEER_FDS 2

/* The kind of GID (and so of fabric) a verbs domain uses: auto picks RoCE
 * v2 on an Ethernet link and LID routing on InfiniBand. */
enum {
	SMART_TP_GID_AUTO = 0,
	SMART_TP_GID_ROCE_V2,
	SMART_TP_GID_ROCE_V1,
	SMART_TP_GID_IB,
};

struct smart_tp_cfg {
	const char *device; /* verbs device; NULL or "" = auto */
	int port;	    /* 0 = first active */
	int gid_index;	    /* -1 = auto */
	int mtu;	    /* bytes (256..4096); 0 = the port's active MTU */
	int ib_timeout;	    /* verbs ACK timeout exponent, 4.096us x 2^t;
				 * 0 = 14 (67 ms) */
	int ib_retry;	    /* verbs transport retries, 1..7; 0 = 7 */
	/* verbs fabric settings; zeroes are the defaults */
	int traffic_class;     /* GRH traffic class, 0..255 (RoCE v2: DSCP
				 * in its top 6 bits, ECN in the low 2) */
	int service_level;     /* IB service level / RoCE priority, 0..15 */
	int gid_type;	       /* SMART_TP_GID_*; 0 = auto */
	const char *nic_model; /* shm: RNIC model spec, NULL/"" = off */
	const char *shm_adversarial; /* shm: adversarial mode spec,
					 * NULL/""/"off" = off */
	const struct smart__log *log;
};

/* Counters a transport keeps for the whole domain. */
struct smart_tp_stats {
	uint64_t db_rings;     /* doorbells rung (posts) */
	uint64_t db_contended; /* doorbell acquisitions that waited */
	uint64_t wqe_misses;   /* WRs that missed the (modelled) WQE cache */
	uint64_t rnr_waits;    /* SENDs that met no receive and waited
				 * (rule 8); 0 where a NIC retries unseen */
};

/* What a domain can do (ibv_query_device, reduced to what we use). */
struct smart_tp_caps {
	uint32_t max_inline;  /* bytes a WRITE may carry inline */
	uint32_t max_send_wr; /* per QP */
	uint32_t max_cqe;     /* per CQ */
	uint32_t max_chain;   /* WRs per post */
	int thread_domains;   /* 1 when a QP can own its doorbell */
	int nic;	      /* 1 when WRs go through a NIC (or its model),
				 * whose queues work-request throttling
				 * protects; 0 for plain shm */
	uint64_t max_dm;      /* device memory bytes dm_attach may give */
	int dm_emulated;      /* 1 when that memory is host memory playing
				 * device memory (shm), for tests */
	int atomics;	      /* 1 when CAS and FAA work; 0: post refuses
				 * them with SMART_ENOTSUP (verbs: a device
				 * without atomics, or one that failed the
				 * byte-order self-test at domain open) */
	uint32_t max_recv_wr; /* per QP; 0: no two-sided ops (rule 8) */
	uint32_t max_msg;     /* the largest message a QP may take */
	int peer_fd;	      /* 1: a two-sided QP's peer needs its
				 * descriptor (qp_fd) with its blob, so the
				 * two must share a host and pass it over a
				 * unix socket (shm); 0: the blob is all */
};

struct smart_tp_qp_attr {
	uint32_t max_send_wr;
	uint32_t flags;	      /* SMART_TP_SHARED, SMART_TP_OWN_DOORBELL */
	uint32_t max_recv_wr; /* 0: one-sided only; else a receive queue
				 * (rule 8), at most caps.max_recv_wr */
	uint32_t max_msg;     /* with a receive queue: the longest message
				 * it takes, 1..caps.max_msg */
};

struct smart_tp_ops {
	const char *name;

	int (*domain_open)(const struct smart_tp_cfg *cfg,
			   struct smart_tp_domain **out);
	void (*domain_close)(struct smart_tp_domain *d);
	void (*query_caps)(struct smart_tp_domain *d,
			   struct smart_tp_caps *out);
	/* Domain-wide counters; a transport without them leaves zeros. */
	void (*domain_stats)(struct smart_tp_domain *d,
			     struct smart_tp_stats *out);

	/* Allocate and register len bytes, zeroed.  hugepages: -1 try, 0 no,
	 * 1 required (SMART_ENOMEM without them).  shareable: 1, the region
	 * will be served to other processes, open to remote READ, WRITE and
	 * atomics (shm backs it with a memfd); SMART_TP_MR_PEER_READ, it
	 * will be served to one peer that may only READ it (verbs: remote
	 * read access only; shm: a memfd of its own, sealed so that no
	 * process can map it writable or write it any more, the mapping
	 * returned excepted; no huge pages, no device memory). */
	int (*mr_alloc)(struct smart_tp_domain *d, size_t len, int hugepages,
			int shareable, struct smart_tp_mr **out);
	void (*mr_free)(struct smart_tp_domain *d, struct smart_tp_mr *mr);

	/* depth is the CQ's first size: every completion its QPs' send
	 * queues can produce at once (all of them flushing) must fit, so a
	 * transport grows the CQ as QPs join it, or refuses the QP
	 * (qp_create: SMART_ENOMEM); a CQ never overruns.  flags:
	 * SMART_TP_SHARED (polled by several threads), SMART_TP_OWN_DOORBELL
	 * (its QPs that ask for one get a doorbell of this CQ's own: one per
	 * worker, verbs' thread domain; cq_own_doorbell says whether they
	 * will). */
	int (*cq_create)(struct smart_tp_domain *d, uint32_t depth,
			 uint32_t flags, struct smart_tp_cq **out);
	void (*cq_destroy)(struct smart_tp_cq *cq);
	int (*cq_own_doorbell)(const struct smart_tp_cq *cq);
	/* Up to max completions into wc; returns how many (>= 0), or < 0
	 * when the CQ failed (an overrun, a dead device): it then fails
	 * every later poll too, delivers nothing more of what its QPs had
	 * posted, and post refuses its QPs (SMART_EQP).  Its user fails
	 * whatever waited on it and replaces the CQ and its QPs. */
	int (*poll)(struct smart_tp_cq *cq, struct smart_tp_wc *wc, int max);
	/* Rule 9: the CQ's event descriptor (-1: created without
	 * SMART_TP_CQ_EVENTS), and arming it (0, or SMART_EAGAIN: poll
	 * first; SMART_EINVAL without events). */
	int (*cq_event_fd)(const struct smart_tp_cq *cq);
	int (*cq_arm)(struct smart_tp_cq *cq);

	/* Responder side (blade): give a served region len bytes of device
	 * memory (rule 7), zeroed, open to remote READ/WRITE/atomics; its
	 * key lands in region->dm_rkey and region_blob describes it from
	 * then on.  Once per region, before any region_blob.  SMART_ENOTSUP
	 * where the device has none, SMART_ENOMEM when it cannot give len
	 * bytes (caps.max_dm is an upper bound, not a promise); no side
	 * effect on error. */
	int (*dm_attach)(struct smart_tp_domain *d, struct smart_tp_mr *region,
			 size_t len);
	/* Responder side (blade): describe a served region for clients. */
	int (*region_blob)(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   void *blob, size_t *len);
	/* Responder side: accept one client QP, described by its blob;
	 * produce the responder's blob for the client. */
	int (*accept)(struct smart_tp_domain *d, struct smart_tp_mr *region,
		      const void *client_blob, size_t client_len,
		      void *blob_out, size_t *blob_len,
		      struct smart_tp_responder **out);
	void (*responder_destroy)(struct smart_tp_responder *r);

	/* Initiator side: attach a served region from its blob; fd is the
	 * descriptor passed by the blade when region->fd >= 0, else -1.  The
	 * transport owns fd afterwards (even on error). */
	int (*remote_attach)(struct smart_tp_domain *d, const void *blob,
			     size_t len, int fd, struct smart_tp_remote **out);
	void (*remote_detach)(struct smart_tp_remote *r);
	/* The bytes remote_attach would expose of the region blob describes
	 * (its region and device memory, each rounded up to the region's
	 * pages: what shm maps), without attaching anything: 0, or
	 * SMART_EPROTO when the blob is malformed.  A user that bounds what
	 * a peer may make it map asks this first. */
	int (*remote_span)(const void *blob, size_t len, uint64_t *span);
	/* The peer behind r is known to be gone (its control session
	 * closed) or this side must stop using it (fenced): WRs to it that
	 * have not executed yet complete with an error and their QPs enter
	 * the error state, never executing them.  Thread safe, idempotent.
	 * Where a NIC executes WRs on its own (verbs) this can only stop
	 * what the transport still holds; the NIC's timeouts do the rest. */
	void (*remote_fail)(struct smart_tp_remote *r);
	/* Base address and rkey to put into WRs for this remote. */
	uint64_t (*remote_base)(const struct smart_tp_remote *r);
	uint32_t (*remote_rkey)(const struct smart_tp_remote *r);
	/* The remote's device memory: its length (0: none) and, in *rkey,
	 * the key addressing it from 0. */
	uint64_t (*remote_dm)(const struct smart_tp_remote *r, uint32_t *rkey);

	int (*qp_create)(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			 const struct smart_tp_qp_attr *attr,
			 struct smart_tp_qp **out);
	/* The initiator's half of the connection data. */
	int (*qp_blob)(struct smart_tp_qp *qp, void *blob, size_t *len);
	/* Bring the QP to ready-to-send against the responder's blob. */
	int (*qp_connect)(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			  const void *peer_blob, size_t len);
	void (*qp_destroy)(struct smart_tp_qp *qp);
	/* Post n WRs as one chain (one doorbell).  SMART_EAGAIN, nothing
	 * posted, when the send queue lacks room for all n. */
	int (*post)(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		    int n);
	/* Optional (NULL: sim): post(qp, wr, 1) of one one-sided WR
	 * (READ, WRITE, CAS, FAA) on a QP polled by one thread, in one call
	 * without post's tests for a chain of any kind.  0, the WR posted
	 * as post would; SMART_EAGAIN (the send queue is full) or
	 * SMART_EINVAL (an inline WRITE post would refuse), nothing posted;
	 * SMART_ENOTSUP, nothing posted, when the QP or the WR takes post's
	 * general way (not connected, shared, the RNIC model, an
	 * adversarial CQ; a SEND or WRITE_IMM): post it then.  Any other
	 * error is post's own (verbs: SMART_EQP, a failed CQ or a refusal
	 * by the device), which post, called then, gives again. */
	int (*post1)(struct smart_tp_qp *qp, const struct smart_tp_wr *wr);
	/* 1 when the QP is in the error state. */
	int (*qp_in_error)(const struct smart_tp_qp *qp);

	/* Two-sided (rule 8), on QPs with a receive queue (post_recv:
	 * SMART_ENOTSUP on others).  The descriptors to pass with the QP's
	 * blob to its peer, in order, into fds; returns how many (0 on
	 * verbs; shm: the receive segment, then its wake socket
	 * when it has one).  The QP keeps them. */
	int (*qp_fds)(const struct smart_tp_qp *qp, int fds[SMART_TP_PEER_FDS]);
	/* Connect to the peer QP of peer_blob, given the nfds descriptors
	 * its qp_fds gave (the transport owns them afterwards, even on
	 * error).  r, when not NULL, is the peer's region for the
	 * one-sided WRs of this QP. */
	int (*qp_connect_peer)(struct smart_tp_qp *qp,
			       struct smart_tp_remote *r, const void *peer_blob,
			       size_t len, const int *fds, int nfds);
	/* Post n receives; SMART_EAGAIN, nothing posted, when the receive
	 * queue lacks room for all n.  Allowed before the QP is connected. */
	int (*post_recv)(struct smart_tp_qp *qp, const struct smart_tp_recv *rs,
			 int n);
};

/* "auto", "roce-v2", "roce-v1", "ib" -> SMART_TP_GID_*; -1 for anything
 * else (NULL is "auto").  And back: the name of a SMART_TP_GID_* value. */
int smart__tp_gid_type_parse(const char *name);
const char *smart__tp_gid_type_name(int type);

/* 0 when spec is a valid shm RNIC model (option nic_model, "" = off),
 * else SMART_EINVAL; says nothing (the caller says what was refused). */
int smart__tp_nic_model_check(const char *spec);

/* The transports built in; NULL when the name is unknown or not built. */
const struct smart_tp_ops *smart__tp_find(const char *name);
/* 1 when name is a transport of this source tree, built in or not. */
int smart__tp_known(const char *name);

extern const struct smart_tp_ops smart__tp_shm_ops;
/* shm in virtual time, for the sim engine (util/sim.h, docs/sim.md) */
extern const struct smart_tp_ops smart__tp_sim_ops;
#ifdef SMART_HAVE_VERBS
extern const struct smart_tp_ops smart__tp_verbs_ops;
#endif

#endif
