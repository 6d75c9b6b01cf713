/*
 * verbs transport internals: real RDMA through rdma-core's libibverbs
 * (mlx5 and other RoCE/IB NICs, Soft-RoCE), DESIGN.md §3 "verbs".
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
 * Threading: libibverbs serialises QPs and CQs itself; our shadow ring is
 * guarded by a spinlock when the QP is SMART_TP_SHARED.  The ring's head is
 * advanced by pollers with an atomic max, since two pollers of a shared CQ
 * may see two completions of one QP in either order.
 */
#ifndef SMART_TRANSPORT_VERBS_H
#define SMART_TRANSPORT_VERBS_H

#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "transport/transport.h"
#include "util/compiler.h"
#include "util/spinlock.h"

#define VERBS_REGION_MAGIC 0x52425256u	/* "VRBR" */
#define VERBS_QP_MAGIC	   0x51425256u	/* "VRBQ" */
#define VERBS_BLOB_VERSION 2	/* 2: device memory in the region blob */
#define VERBS_MAX_SEND_WR  65536	/* slot index fits 16 bits */
#define VERBS_MAX_CHAIN	   64
#define VERBS_POLL_MAX	   64
#define VERBS_MAX_RD_ATOM  16

struct smart_tp_domain {
	const struct smart__log *log;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev;
	uint8_t port;
	int gid_index;		/* -1: no GRH (InfiniBand, LID routed) */
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu mtu;
	int link_eth;
	int ib_timeout, ib_retry;
	uint32_t max_inline;
	int thread_domains;
	uint64_t max_dm;	/* ibv_query_device_ex's max_dm_size */
	struct ibv_cq *resp_cq;	/* responder QPs' CQ, never polled */
	char name[64];
};

struct verbs_mr {
	struct smart_tp_mr pub;
	struct ibv_mr *mr;
	size_t map_len;
	struct ibv_dm *dm;	/* device memory (dm_attach), or NULL */
	struct ibv_mr *dm_mr;	/* its zero-based registration */
};

struct smart_tp_remote {
	uint64_t base;
	uint64_t size;
	uint32_t rkey;
	uint32_t dm_rkey;
	uint64_t dm_len;
};

/* The connection data of one QP end (both directions use it). */
struct verbs_qp_info {
	uint32_t qpn, psn;
	uint16_t lid;
	uint8_t mtu;		/* enum ibv_mtu */
	uint8_t has_gid;
	uint8_t gid[16];
};

struct smart_tp_responder {
	struct ibv_qp *qp;
};

struct verbs_slot {
	uint64_t wr_id;
};

struct smart_tp_cq {
	struct smart_tp_domain *d;
	struct ibv_cq *cq;
};

struct smart_tp_qp {
	struct smart_tp_domain *d;
	struct smart_tp_cq *cq;
	struct ibv_qp *qp;
	struct ibv_td *td;
	struct ibv_pd *ppd;	/* parent domain when it owns a doorbell */
	uint32_t flags;
	uint32_t psn;
	uint32_t max_inline;
	smart_spinlock_t lock;
	struct verbs_slot *ring;
	uint32_t mask;
	uint32_t tail;			/* next slot to post */
	_Atomic uint32_t head;		/* next slot not yet completed */
	_Atomic int error;
	struct ibv_send_wr wr[VERBS_MAX_CHAIN];
	struct ibv_sge sge[VERBS_MAX_CHAIN];
};

/* verbs_dev.c */
int smart__verbs_domain_open(const struct smart_tp_cfg *cfg,
			     struct smart_tp_domain **out);
void smart__verbs_domain_close(struct smart_tp_domain *d);
void smart__verbs_query_caps(struct smart_tp_domain *d,
			     struct smart_tp_caps *out);
int smart__verbs_mr_alloc(struct smart_tp_domain *d, size_t len,
			  int hugepages, int shareable,
			  struct smart_tp_mr **out);
void smart__verbs_mr_free(struct smart_tp_domain *d, struct smart_tp_mr *mr);
int smart__verbs_dm_attach(struct smart_tp_domain *d, struct smart_tp_mr *mr,
			   size_t len);
int smart__verbs_region_blob(struct smart_tp_domain *d,
			     struct smart_tp_mr *mr, void *blob, size_t *len);
int smart__verbs_remote_attach(struct smart_tp_domain *d, const void *blob,
			       size_t len, int fd,
			       struct smart_tp_remote **out);
void smart__verbs_remote_detach(struct smart_tp_remote *r);
void smart__verbs_remote_fail(struct smart_tp_remote *r);
uint64_t smart__verbs_remote_base(const struct smart_tp_remote *r);
uint32_t smart__verbs_remote_rkey(const struct smart_tp_remote *r);
uint64_t smart__verbs_remote_dm(const struct smart_tp_remote *r,
				uint32_t *rkey);
size_t smart__verbs_info_pack(const struct verbs_qp_info *in, void *blob);
int smart__verbs_info_unpack(const void *blob, size_t len,
			     struct verbs_qp_info *out);

/* verbs_qp.c */
int smart__verbs_cq_create(struct smart_tp_domain *d, uint32_t depth,
			   uint32_t flags, struct smart_tp_cq **out);
void smart__verbs_cq_destroy(struct smart_tp_cq *cq);
int smart__verbs_poll(struct smart_tp_cq *cq, struct smart_tp_wc *wc,
		      int max);
int smart__verbs_qp_create(struct smart_tp_domain *d, struct smart_tp_cq *cq,
			   const struct smart_tp_qp_attr *attr,
			   struct smart_tp_qp **out);
int smart__verbs_qp_blob(struct smart_tp_qp *qp, void *blob, size_t *len);
int smart__verbs_qp_connect(struct smart_tp_qp *qp, struct smart_tp_remote *r,
			    const void *peer_blob, size_t len);
void smart__verbs_qp_destroy(struct smart_tp_qp *qp);
int smart__verbs_post(struct smart_tp_qp *qp, const struct smart_tp_wr *wrs,
		      int n);
int smart__verbs_qp_in_error(const struct smart_tp_qp *qp);
int smart__verbs_accept(struct smart_tp_domain *d, struct smart_tp_mr *region,
			const void *client_blob, size_t client_len,
			void *blob_out, size_t *blob_len,
			struct smart_tp_responder **out);
void smart__verbs_responder_destroy(struct smart_tp_responder *r);
/* Move a fresh QP to RTS against the peer's info. */
int smart__verbs_qp_rts(struct smart_tp_domain *d, struct ibv_qp *qp,
			uint32_t my_psn, const struct verbs_qp_info *peer);

#endif
