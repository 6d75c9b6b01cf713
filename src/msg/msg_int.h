/*
 * Messaging internals (include/smart/rpc.h, docs/rpc.md): the endpoint,
 * its connections, calls and open requests.
 *
 * Ownership: everything here belongs to the endpoint's worker thread; no
 * locks.  The endpoint polls its own CQ from the worker's poll (a core
 * poller), so every wait of the worker makes messaging progress too.
 *
 * Invariants of a live connection c (the seq-ack window, wire/msg.h):
 *  - c->tx_seq - c->tx_acked <= c->swin: never more data messages out
 *    than the peer keeps receives for (swin = min(ours, the peer's
 *    window)), so a SEND always finds a receive;
 *  - c->tx_seq - c->tx_done <= c->window: send slot (seq % window) is
 *    reused only once the SEND that used it completed locally;
 *  - the peer may have at most window data messages and RPC_EXTRA bare
 *    messages (ACK, CLOSE) unconsumed toward us, and we keep window +
 *    RPC_EXTRA receives posted (reposted as soon as one is consumed);
 *  - a bare ACK goes out only when rx_consumed - the last ack sent reaches
 *    window / 2, so at most two are unconsumed at the peer at any time.
 * A connection in RPC_C_FAILED has no QP and no slab any more; its struct
 * and its index live on until its owner closes it (dialed) or until the
 * end of the poll that failed it (accepted: code up the stack of that poll
 * may still hold it).
 */
#ifndef SMART_MSG_INT_H
#define SMART_MSG_INT_H

#include <stdint.h>

#include "core/core.h"
#include "smart/rpc.h"
#include "transport/transport.h"
#include "wire/msg.h"
#include "wire/proto.h"

#define RPC_EXTRA	4	/* receives for bare messages (ACK, CLOSE) */
#define RPC_CHAIN	16	/* WRs posted per doorbell at most */
#define RPC_CALLS	4096	/* calls in flight per endpoint */
#define RPC_REQS	4096	/* requests open (not replied) per endpoint */
#define RPC_OPS		65536
#define RPC_SLAB_MR	(4u << 20)	/* registered in MRs this large
					 * (X-RDMA's 4 MiB) */
#define RPC_TICK_NS	1000000	/* handshakes and timeouts: every 1 ms */
#define RPC_CLOSE_WAIT_MS 100	/* a CLOSE's completion, at most */

enum { RPC_C_LIVE, RPC_C_FAILED };

/* wr_id: conn index:16 | gen:16 | kind:2 | value:30 */
enum { RPC_WR_RECV, RPC_WR_DATA, RPC_WR_BARE };
#define RPC_SEQ_MASK	((UINT64_C(1) << 30) - 1)

struct rpc_slab {
	struct smart_tp_mr *mr;
	uint8_t *base;
	struct rpc_slab *next;	/* free list */
};

/* One registered MR and the block of its slab structs. */
struct rpc_mr {
	struct smart_tp_mr *mr;
	struct rpc_slab *slabs;
};

/* A reply queued behind a full window. */
struct rpc_out {
	struct rpc_out *next;
	struct smart_msg_hdr h;
	uint8_t data[];
};

/* A task (or the main context: task NULL) waiting for window room. */
struct rpc_waiter {
	struct smart__task *task;
	struct rpc_waiter *next;
};

struct smart_rpc_req {
	struct smart_rpc_conn *conn;	/* NULL once the connection closed */
	int open;			/* handed to a handler, not replied */
	struct smart_rpc *rpc;
	uint32_t call;
	uint16_t op;
	struct smart_rpc_req *prev, *next;	/* conn's list, or free list */
};

struct rpc_call {
	struct smart__task *task;	/* NULL: the main context waits */
	struct smart_rpc_conn *conn;
	void *resp;
	uint32_t cap, len;
	uint32_t id;		/* gen << 12 | slot; 0 when free */
	int status, done;
	uint64_t deadline;	/* TSC */
	struct rpc_call *prev, *next;	/* in-flight list, or free list */
};

struct smart_rpc_conn {
	struct smart_rpc *rpc;
	uint32_t index;
	uint16_t gen;
	int state;
	int accepted;		/* the peer dialed us: freed when it fails */
	int users;		/* calls and sends inside on it (they may
				 * wait; the struct outlives them) */
	int freeing;		/* closed while users > 0: the last frees */
	int dirty;		/* on the endpoint's flush list */
	struct smart_rpc_conn *next_dirty;
	struct smart_rpc_conn *next_dead;	/* failed, accepted: freed at
						 * the end of the poll */
	struct smart_tp_qp *qp;
	struct rpc_slab *slab;
	uint8_t *rbuf, *sbuf;	/* receive slots, send slots */
	uint32_t lkey;
	uint32_t window;	/* receives we keep for data; send slots */
	uint32_t swin;		/* data messages we may have out */
	uint32_t nrecv;		/* window + RPC_EXTRA */
	uint32_t msg_len;	/* slot size: header + eager_max */
	uint32_t peer_max;	/* the longest message the peer takes */
	uint32_t sig_mask;	/* data SENDs signalled every sig_mask + 1 */
	uint64_t tx_seq, tx_acked, tx_done;
	uint64_t rx_consumed;
	uint16_t rx_acked_sent;
	int bare_out;		/* ACK/CLOSE SENDs not completed */
	struct smart_tp_wr chain[RPC_CHAIN];
	int nchain;
	struct smart_tp_recv *repost;	/* nrecv entries */
	uint32_t nrepost;
	struct rpc_out *bl_head, *bl_tail;
	size_t bl_bytes;
	struct rpc_waiter *waiters;
	struct smart_rpc_req *reqs;	/* open requests of the peer */
	struct smart_rpc_stats st;
	char peer[64];
};

/* A handshake a listener serves (peer.c). */
struct rpc_pend {
	int fd;
	int authed;
	int fd_got;		/* a descriptor the dialer passed, or -1 */
	int64_t deadline;	/* ms */
	size_t in_len;
	uint8_t in[SMART_PROTO_FRAME_MAX];
};

struct rpc_handler {
	smart_rpc_handler_fn fn;
	void *arg;
};

struct smart_rpc {
	struct smart_worker *w;
	struct smart_ctx *ctx;
	const struct smart_tp_ops *tp;
	struct smart_rpc_cfg cfg;
	struct smart_tp_cq *cq;
	int passes_fds;		/* shm: QP descriptors go with the blobs */
	uint32_t msg_len;
	int in_poll;		/* inside the poller: sends are batched */
	int in_handler;		/* a handler runs: calls are refused */
	int waiting;		/* tasks waiting in calls or for room */
	uint64_t tick_cycles, next_tick;
	struct rpc_handler *handlers;	/* RPC_OPS entries */
	/* connections */
	struct smart_rpc_conn **conns;	/* max_conns entries */
	uint16_t *gens;			/* per index, survives reuse */
	struct smart_rpc_conn *dirty;
	struct smart_rpc_conn *dead;
	/* registered memory */
	size_t slab_len;
	struct rpc_mr *mrs;
	uint32_t nmrs;
	struct rpc_slab *free_slabs;
	/* calls and requests */
	struct rpc_call *calls;		/* RPC_CALLS */
	struct rpc_call *free_calls, *live_calls;
	uint32_t call_gen;
	struct smart_rpc_req *reqs;	/* RPC_REQS */
	struct smart_rpc_req *free_reqs;
	/* listener (peer.c) */
	int lfd, pfd;		/* listening socket; TCP port holder */
	char laddr[64];
	struct rpc_pend *pend;	/* max_pending */
	uint32_t npend;
	uint32_t next_peer_id;
	/* counters of connections gone, and of the endpoint */
	struct smart_rpc_stats past;
};

/* rpc.c: the poller, and closing every connection (destroy) */
int smart__rpc_poll(struct smart_worker *w, void *arg);
void smart__rpc_conns_close(struct smart_rpc *rpc);
int smart__rpc_conn_new(struct smart_rpc *rpc, int accepted,
			struct smart_rpc_conn **out);
int smart__rpc_conn_blob(struct smart_rpc_conn *c, void *blob, size_t *len);
int smart__rpc_conn_up(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer, int fd);
void smart__rpc_conn_free(struct smart_rpc_conn *c);
int smart__rpc_qp_fd(const struct smart_rpc_conn *c);

/* endpoint.c */
void smart__rpc_stats_add(struct smart_rpc_stats *to,
			  const struct smart_rpc_stats *s);

/* slab.c */
int smart__rpc_slab_get(struct smart_rpc *rpc, struct rpc_slab **out);
void smart__rpc_slab_put(struct smart_rpc *rpc, struct rpc_slab *s);
void smart__rpc_slabs_free(struct smart_rpc *rpc);

/* peer.c */
void smart__rpc_listen_service(struct smart_rpc *rpc);
void smart__rpc_listen_close(struct smart_rpc *rpc);
int smart__rpc_dial(struct smart_rpc *rpc, const char *hostport,
		    struct smart_rpc_conn **out);

#endif
