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
 *    messages (ACK, PING, PONG, CLOSE) unconsumed toward us, and we keep
 *    window + RPC_EXTRA receives posted (reposted as soon as one is
 *    consumed).  Bare messages a side can have unconsumed at the other:
 *    two ACKs (one goes out only when rx_consumed - the last ack sent
 *    reaches window / 2, which takes window / 2 new data messages, which
 *    the peer can send only after consuming an earlier ack), one PING (the
 *    next goes only after its PONG came back, and the PONG is sent when
 *    the PING is consumed), one PONG (the peer's PINGs likewise), one
 *    CLOSE: five, RPC_EXTRA keeps one spare;
 *  - send queue: window data SENDs (signalled or not, until the signalled
 *    one behind them completes) and those five bare ones, within
 *    window + RPC_SQ_SLACK;
 *  - c->last_rx is when anything last arrived; silent for ka_cycles, the
 *    connection is PINGed (c->ping_out until the PONG); silent for
 *    keepalive_misses x ka_cycles, it fails (the keepalive).  Every
 *    message, a PONG too, carries the sender's ack: a peer that acks none
 *    of our data messages out for that bound (c->ack_wait) fails as well,
 *    however many PONGs it sends (the progress keepalive);
 *  - every wait of a caller (window room, staging room, the answer)
 *    ends at the deadline the call took when it began.
 * A connection in RPC_C_FAILED has no QP and no slab any more; its struct
 * and its index live on until its owner closes it (dialed; closed from a
 * handler, until the end of that poll) or until the end of the poll that
 * failed it (accepted): code up the stack of that poll may still hold it.
 */
#ifndef SMART_MSG_INT_H
#define SMART_MSG_INT_H

#include <stdint.h>

#include "runtime/service.h"
#include "util/compiler.h"
#include "smart/smart.h"
#include "smart/rpc.h"
#include "smart/chan.h"
#include "transport/transport.h"
#include "wire/auth.h"
#include "wire/msg.h"
#include "wire/proto.h"
#include "util/sockio.h"

#define RPC_EXTRA    6	  /* receives for bare messages (above) */
#define RPC_SQ_SLACK 16	  /* send-queue entries beyond the window */
#define RPC_CHAIN    16	  /* WRs posted per doorbell at most */
#define RPC_CALLS    4096 /* calls in flight per endpoint */
#define RPC_REQS     4096 /* requests open (not replied) per endpoint */
#define RPC_OPS	     65536
#define RPC_SLAB_MR                                                            \
	(4u << 20) /* registered in MRs this large
					 * (X-RDMA's 4 MiB) */
#define RPC_FRAG                                                               \
	(64u << 10)  /* rendezvous READ fragment and the
					 * page of the rendezvous regions */
#define RPC_RD_MAX 8 /* READ fragments in flight per connection */
#define RPC_CONN_STAGES                                                        \
	256 /* rendezvous messages staged per
					 * connection at once (a quota) */
#define RPC_TICK_NS                                                            \
	1000000 /* timeouts, and handshakes in full: every
				 * 1 ms */
#define RPC_HS_NS                                                              \
	5000		      /* between ticks: the handshake sockets
				 * that are ready (peer.c) and the QP cache,
				 * looked at after a poll that found nothing,
				 * no message having come for this long, at
				 * most this often (one system call: while
				 * messages flow, only the ticks look) */
#define RPC_TRACES	  256 /* trace records kept per endpoint */
#define RPC_CLOSE_WAIT_MS 100 /* a CLOSE's completion, at most */

enum { RPC_C_LIVE, RPC_C_FAILED };

/* wr_id: conn index:16 | gen:16 | kind:2 | value:30 */
enum { RPC_WR_RECV, RPC_WR_DATA, RPC_WR_BARE, RPC_WR_READ };
#define RPC_SEQ_MASK ((UINT64_C(1) << 30) - 1)

struct rpc_slab {
	struct smart_tp_mr *mr;
	uint8_t *base;
	struct rpc_slab *next; /* free list */
};

/* One registered MR and the block of its slab structs. */
struct rpc_mr {
	struct smart_tp_mr *mr;
	struct rpc_slab *slabs;
};

/* A rendezvous region (rndv.c): one MR cut into RPC_FRAG pages. */
struct rpc_pages {
	struct smart_tp_mr *mr;
	uint8_t *used; /* per page */
	uint32_t n;    /* pages */
	uint32_t free; /* pages not used */
};

/* A message staged for a peer to READ (sender side), until its DONE;
 * in its connection's table (rid: gen << 16 | slot). */
struct rpc_stage {
	struct smart_rpc_conn *conn; /* NULL: free */
	uint32_t page, npages;
	uint16_t gen;
};

/* The inbound rendezvous of a connection: one at a time, the data
 * messages behind it held (in order) until it is delivered. */
enum { RPC_RIN_NONE, RPC_RIN_WAIT_MEM, RPC_RIN_READING };

struct rpc_rin {
	int state;
	struct smart_msg_hdr h;	 /* the RTS's type, op, call */
	struct smart_msg_rndv d; /* where and what to READ */
	uint32_t page, npages;	 /* landing, in our private region */
	uint32_t nfrag, posted, done;
	uint64_t t_start; /* TSC: when its descriptor came */
};

/* A data message received while a rendezvous was in progress. */
struct rpc_held {
	struct smart_msg m;
	uint32_t slot;
};

/* A reply queued behind a full window. */
struct rpc_out {
	struct rpc_out *next;
	struct smart_msg_hdr h;
	uint8_t data[];
};

/* A task (or the main context: task NULL) waiting for window room, up
 * to its caller's deadline. */
struct rpc_waiter {
	struct smart__task *task;
	struct rpc_waiter *next;
	uint64_t deadline; /* TSC */
};

struct smart_rpc_req {
	struct smart_rpc_conn *conn; /* NULL once the connection closed */
	int open;		     /* handed to a handler, not replied */
	struct smart_rpc *rpc;
	uint32_t call;
	uint16_t op;
	struct smart_rpc_req *prev, *next; /* conn's list, or free list */
};

struct rpc_call {
	struct smart__task *task; /* NULL: the main context waits */
	struct smart_rpc_conn *conn;
	void *resp;
	uint32_t cap, len;
	uint32_t id; /* gen << 12 | slot; 0 when free */
	int status, done;
	uint64_t deadline;	      /* TSC: from when the call began, so that
				 * its waits for room count too */
	uint64_t t_sent;	      /* TSC when sent, for a traced call */
	struct rpc_call *prev, *next; /* in-flight list, or free list */
};

struct smart_rpc_conn {
	struct smart_rpc *rpc;
	uint32_t index;
	uint16_t gen;
	int state;
	int accepted; /* the peer dialed us: freed when it fails */
	int spare;    /* made ahead for the QP cache, not in use */
	int ahead;    /* the spare was made as a HELLO was answered
				 * (rpc.c smart__rpc_ahead_make) */
	int users;    /* calls and sends inside on it (they may
				 * wait; the struct outlives them) */
	int freeing;  /* closed while users > 0 (the last frees)
				 * or from a handler (the poll's end) */
	int dirty;    /* on the endpoint's flush list */
	struct smart_rpc_conn *next_dirty;
	struct smart_rpc_conn *next_dead; /* failed, accepted: freed at
						 * the end of the poll */
	struct smart_tp_qp *qp;
	struct rpc_slab *slab;
	uint8_t *rbuf, *sbuf; /* receive slots, send slots */
	uint32_t lkey;
	uint32_t window;   /* receives we keep for data; send slots */
	uint32_t swin;	   /* data messages we may have out */
	uint32_t nrecv;	   /* window + RPC_EXTRA */
	uint32_t msg_len;  /* slot size: header + eager_max */
	uint32_t peer_max; /* the longest message the peer takes */
	uint32_t sig_mask; /* data SENDs signalled every sig_mask + 1 */
	uint64_t tx_seq, tx_acked, tx_done;
	uint64_t rx_consumed;
	uint16_t rx_acked_sent;
	int bare_out;	   /* bare SENDs not completed */
	uint64_t last_rx;  /* TSC: when anything last arrived */
	uint64_t ack_wait; /* TSC: since when the peer has acked none of
				 * our data messages out (0: none out, or the
				 * next tick starts counting) */
	uint64_t born;	   /* TSC: when it went live (0: not yet) */
	uint64_t ping_at;  /* TSC: when the PING out was sent */
	int ping_out;	   /* a PING waits for its PONG */
	uint64_t rtt_ns;   /* the last PING's round trip */
	struct smart_tp_wr chain[RPC_CHAIN];
	int nchain;
	struct smart_tp_recv *repost; /* nrecv entries */
	uint32_t nrepost;
	struct rpc_out *bl_head, *bl_tail;
	size_t bl_bytes;
	struct rpc_waiter *waiters;
	struct smart_rpc_req *reqs; /* open requests of the peer */
	uint32_t nreqs;		    /* how many: at most rpc->req_quota */
	struct smart_rpc_stats st;
	char peer[64];
	/* rendezvous (rndv.c) */
	struct rpc_pages stage_pg; /* our staging for this peer only */
	struct rpc_stage *stages;  /* RPC_CONN_STAGES records */
	uint16_t stage_gen;
	struct smart_tp_remote *remote; /* the peer's staging region */
	uint32_t peer_rndv; /* its length, the longest message it takes;
				 * 0: the peer has no rendezvous */
	struct rpc_rin rin;
	struct rpc_held *held; /* nrecv entries, a ring */
	uint32_t held_head, held_n;
	/* channel (chan.c): NULL on an ordinary connection; the channel
	 * learns the connection's end by its conn going NULL */
	struct smart_chan *chan;
};

/* A channel (chan.c, include/smart/chan.h): its connection carries only
 * bare messages besides the slots, window = slots.
 * Invariants:
 *  - producer: slot seq % slots of the local ring is written only while
 *    reserved, i.e. after its last WRITE completed locally (tx_done)
 *    and the consumer released it (tx_acked: window = slots credits);
 *  - consumer: taken - released <= slots; a slot is acked (rx_consumed)
 *    only when released, so the producer never writes a slot the
 *    application still reads; landed (IMM) counts WRITE_IMMs checked on
 *    arrival, each in order (slot = landed % slots), lens[] their
 *    lengths; err, once set, is returned by every later next. */
struct smart_chan {
	struct smart_rpc *rpc;
	struct smart_rpc_conn *conn; /* NULL once freed */
	int producer;
	uint32_t slots, bytes, mode, tag;
	uint64_t torn_cycles;	/* FOOTER: the re-poll bound */
	struct smart_tp_mr *mr; /* producer: local slots; consumer:
					 * the ring */
	uint64_t seq;		/* producer: committed; consumer: taken */
	uint64_t released;	/* consumer */
	uint64_t landed;	/* consumer, IMM */
	uint32_t *lens;		/* consumer, IMM: slots entries */
	int reserved;		/* producer: a slot reserved */
	int err;		/* consumer: SMART_EPROTO once cut */
	uint64_t torn_since;	/* FOOTER: TSC of the first torn poll of
				 * the slot expected (0: none) */
	struct smart_chan_stats st;
};

/* What a channel's handshake says (the CONNECT's asks, the ACCEPT's
 * repeat; wire/proto.h). */
struct rpc_chan_hs {
	uint32_t slots, bytes, mode, tag;
};

/* A handshake a listener serves (peer.c). */
struct rpc_pend {
	int fd;
	int challenged; /* our CHALLENGE sent: its AUTH expected */
	int authed;	/* its AUTH good: its PEER_CONNECT expected */
	int refused;	/* ERROR sent: its input drained until the
				 * dialer closes (closing on unread input
				 * would reset the socket before the dialer
				 * read why) */
	int fd_got[SMART_SOCK_FDS]; /* descriptors the dialer passed (as
					 * smart__rpc_conn_fds), or -1 */
	int64_t deadline;	    /* ms */
	struct smart__auth auth;    /* the nonces; the key is the
					 * ctx's secret, taken for each
					 * proof (peer.c key_take) */
	char transport[SMART_PROTO_TRANSPORT_MAX + 1]; /* the HELLO's */
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t hello_len; /* the HELLO's payload: both proofs cover it */
	size_t in_len;
	uint8_t in[SMART_PROTO_FRAME_MAX];
};

/* A dial in progress (on its stack): a HELLO bearing its nonce that
 * reaches our own listener is our dial reflected back to us. */
struct rpc_dialing {
	uint8_t nd[SMART_AUTH_NONCE_LEN];
	struct rpc_dialing *next;
};

struct rpc_handler {
	smart_rpc_handler_fn fn;
	void *arg;
};

struct smart_rpc {
	struct smart_worker *w;
	struct smart_ctx *ctx;
	const struct smart_tp_ops *tp;
	/* the ctx's, fixed from creation on (runtime/service.h) */
	struct smart_tp_domain *dom;
	struct smart__log *log;
	struct smart_rpc_config cfg;
	struct smart_tp_cq *cq;
	int passes_fds; /* shm: QP descriptors go with the blobs */
	uint32_t msg_len;
	int in_poll;	/* inside the poller: sends are batched */
	int in_handler; /* a handler runs: calls are refused */
	int waiting;	/* tasks waiting in calls or for room */
	uint64_t tick_cycles, next_tick;
	uint64_t ka_cycles;	      /* keepalive_ms in TSC cycles */
	uint64_t timeout_cycles;      /* timeout_ms in TSC cycles */
	struct rpc_handler *handlers; /* RPC_OPS entries */
	/* connections */
	struct smart_rpc_conn **conns; /* max_conns entries */
	uint16_t *gens;		       /* per index, survives reuse */
	struct smart_rpc_conn *dirty;
	struct smart_rpc_conn *dead;
	/* registered memory */
	size_t slab_len;
	struct rpc_mr *mrs;
	uint32_t nmrs;
	struct rpc_slab *free_slabs;
	/* calls and requests */
	struct rpc_call *calls; /* RPC_CALLS */
	struct rpc_call *free_calls, *live_calls;
	uint32_t call_gen;
	struct smart_rpc_req *reqs; /* RPC_REQS */
	struct smart_rpc_req *free_reqs;
	uint32_t req_quota; /* open requests a connection may have:
				 * max(window, RPC_REQS / max_conns), so
				 * with max_conns x window <= RPC_REQS
				 * (the defaults: 64 x 64) every one can
				 * have its quota whatever the others do */
	/* listener (peer.c) */
	int lfd, pfd;		     /* listening socket; TCP port holder */
	int hfd;		     /* epoll set of the listening and handshake
				 * sockets: which are ready, in one call */
	uint32_t npend;		     /* handshake slots in use */
	uint64_t hs_cycles, hs_next; /* RPC_HS_NS; TSC of the next look
					 * (UINT64_MAX: nothing to look at) */
	char laddr[64];
	struct rpc_pend *pend;	     /* max_pending */
	struct rpc_dialing *dialing; /* dials in progress: their nonces */
	uint32_t next_peer_id;
	uint32_t nspare;    /* connections in the QP cache */
	uint32_t ahead_due; /* to make at the next poll (rpc.c
				    * smart__rpc_ahead_make): 0 or 1 */
	/* counters of connections gone, and of the endpoint */
	struct smart_rpc_stats past;
	/* tracing (trace.c) */
	uint32_t trace_left; /* calls until the next traced one (every
				 * trace_every-th is; a countdown, not a
				 * division per call) */
	uint64_t last_poll, slow_cycles;	   /* TSC */
	struct smart_rpc_trace traces[RPC_TRACES]; /* a ring */
	uint32_t ntraces;
	/* rendezvous (rndv.c): landing private, staging per connection */
	struct rpc_pages land_pg;
	struct smart_tp_mr *stage_spare; /* RPC_RNDV_STAGE_REUSED only */
	int land_waiters;		 /* connections in RPC_RIN_WAIT_MEM */
	/* control socket for smart-stat (stat.c) */
	int sfd;
	struct rpc_stat *ctl; /* its clients, names, stamps (stat.c) */
	/* event mode (event.c): the epoll set and its timer, -1 until
	 * smart_rpc_event_fd; the last poll that found work, and how long
	 * after it arming is refused (polling while traffic flows) */
	int efd, tfd;
	uint64_t last_busy, busy_cycles; /* TSC */
	/* channels (chan.c): the accept function, NULL: refused */
	smart_chan_accept_fn chan_fn;
	void *chan_arg;
	uint32_t footer_chans; /* FOOTER channels we consume: their slots
				 * make no completion, so no event (event.c
				 * refuses to arm while there is one) */
};

/* endpoint.c: the endpoint's tick, its worker's poller */
int smart__rpc_poll(struct smart_worker *w, void *arg);
/* rpc.c: what the tick runs (a batch of the CQ, the reposts and acks a
 * poll left owed, the calls past their deadline, the keepalive, the
 * connections freed after their last completion), and closing every
 * connection (destroy) */
int smart__rpc_poll_cq(struct smart_rpc *rpc, uint64_t now);
void smart__rpc_flush_dirty(struct smart_rpc *rpc);
void smart__rpc_expire_calls(struct smart_rpc *rpc, uint64_t now);
void smart__rpc_keepalive(struct smart_rpc *rpc, uint64_t now, int drained);
void smart__rpc_free_dead(struct smart_rpc *rpc);
void smart__rpc_conns_close(struct smart_rpc *rpc);
int smart__rpc_conn_new(struct smart_rpc *rpc, int accepted,
			struct smart_rpc_conn **out);
void smart__rpc_cache_fill(struct smart_rpc *rpc);
void smart__rpc_ahead_make(struct smart_rpc *rpc);
void smart__rpc_cache_trim(struct smart_rpc *rpc);
int smart__rpc_conn_blob(struct smart_rpc_conn *c, void *blob, size_t *len);
/* The descriptors of a PEER frame (shm): the staging region's memfd,
 * then the QP's (its receive segment, its wake socket); -1 where none.
 * conn_up owns them afterwards, even on error, and sets them to -1. */
int smart__rpc_conn_up(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer,
		       int fds[SMART_SOCK_FDS]);
void smart__rpc_conn_free(struct smart_rpc_conn *c);
void smart__rpc_conn_fds(const struct smart_rpc_conn *c,
			 int fds[SMART_SOCK_FDS]);
/* Close a descriptor a peer passed, its SO_LINGER turned off first (a
 * lingering TCP socket's close(2) would wait in our thread). */
void smart__rpc_fd_drop(int fd);
void smart__rpc_fds_close(int fds[SMART_SOCK_FDS]);

/* No descriptor in any slot (-1, never 0: that is stdin). */
static inline void smart__rpc_fds_none(int fds[SMART_SOCK_FDS])
{
	for (int i = 0; i < SMART_SOCK_FDS; i++)
		fds[i] = -1;
}

/* trace.c */
void smart__rpc_stats_add(struct smart_rpc_stats *to,
			  const struct smart_rpc_stats *s);

/* slab.c */
int smart__rpc_slab_get(struct smart_rpc *rpc, struct rpc_slab **out);
void smart__rpc_slab_put(struct smart_rpc *rpc, struct rpc_slab *s);
void smart__rpc_slabs_free(struct smart_rpc *rpc);

/* rpc.c, for rndv.c */
void smart__rpc_fail(struct smart_rpc_conn *c, int err, const char *why);
struct smart_tp_wr *smart__rpc_wr(struct smart_rpc_conn *c, int kind,
				  uint64_t v);
void smart__rpc_queue(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
		      const void *data);
void smart__rpc_deliver(struct smart_rpc_conn *c, const struct smart_msg_hdr *h,
			const void *data, uint32_t len);
void smart__rpc_held_drain(struct smart_rpc_conn *c);

/* rndv.c: rendezvous messages (docs/rpc.md) */
int smart__rndv_open(struct smart_rpc *rpc);
void smart__rndv_close(struct smart_rpc *rpc);
int smart__rndv_conn_open(struct smart_rpc_conn *c);
int smart__rndv_blob(struct smart_rpc_conn *c, void *blob, size_t *len);
int smart__rndv_fd(const struct smart_rpc_conn *c);
int smart__rndv_stage(struct smart_rpc_conn *c, const void *data, uint32_t len,
		      struct smart_msg_rndv *d);
void smart__rndv_unstage(struct smart_rpc_conn *c, uint32_t rid);
int smart__rndv_connect(struct smart_rpc_conn *c,
			const struct smart_proto_peer *peer, int fd);
void smart__rndv_start(struct smart_rpc_conn *c, const struct smart_msg *m);
void smart__rndv_done(struct smart_rpc_conn *c, uint32_t rid);
void smart__rndv_send_done(struct smart_rpc_conn *c, uint32_t rid);
void smart__rndv_read_done(struct smart_rpc_conn *c);
void smart__rndv_conn_drop(struct smart_rpc_conn *c);

/* trace.c */
void smart__rpc_trace_add(struct smart_rpc *rpc,
			  const struct smart_rpc_trace *t);
uint64_t smart__rpc_ns(const struct smart_rpc *rpc, uint64_t cycles);
uint64_t smart__rpc_cycles(const struct smart_rpc *rpc, double ns);

/* stat.c: the control socket smart-stat reads (opened at create, served
 * every tick, closed at destroy) */
int smart__rpc_stat_open(struct smart_rpc *rpc);
void smart__rpc_stat_service(struct smart_rpc *rpc, int at_once);
int smart__rpc_stat_clients(const struct smart_rpc *rpc);
void smart__rpc_stat_close(struct smart_rpc *rpc);

/* event.c: descriptors join the event set as they come (listening,
 * a handshake accepted) */
int smart__rpc_event_add(struct smart_rpc *rpc, int fd);
void smart__rpc_event_close(struct smart_rpc *rpc);

/* peer.c: the handshakes, in full every tick (listen_service), and
 * between ticks those ready and the QP cache (hs_poll, bounded: a flood
 * of dialers cannot hold the poll) */
void smart__rpc_listen_service(struct smart_rpc *rpc);
void smart__rpc_hs_poll(struct smart_rpc *rpc);
void smart__rpc_listen_close(struct smart_rpc *rpc);
int smart__rpc_dial(struct smart_rpc *rpc, const char *hostport,
		    struct smart_chan *ch, struct smart_rpc_conn **out);

/* chan.c: the channel's side of the handshake and of the data path */
int smart__chan_accept_prep(struct smart_rpc_conn *c,
			    const struct smart_proto_peer *in);
void smart__chan_accepted(struct smart_rpc_conn *c);
void smart__chan_fill(const struct smart_rpc_conn *c,
		      struct smart_proto_peer *m);
int smart__chan_fd(const struct smart_rpc_conn *c);
int smart__chan_attach(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer, int fd);
int smart__chan_landed(struct smart_rpc_conn *c, const struct smart_tp_wc *wc);
void smart__chan_free(struct smart_chan *ch);
/* rpc.c, for chan.c */
int smart__rpc_chan_room(struct smart_rpc_conn *c);
void smart__rpc_chan_post(struct smart_rpc_conn *c, struct smart_tp_wr *w,
			  uint32_t slot);
void smart__rpc_chan_release(struct smart_rpc_conn *c);
int smart__rpc_chan_room_now(const struct smart_rpc_conn *c);
void smart__rpc_chan_conn_close(struct smart_rpc_conn *c);
void smart__rpc_set_window(struct smart_rpc_conn *c, uint32_t window);
#endif
