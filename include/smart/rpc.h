/** @file
 * Messaging: peer endpoints and RPC over two-sided RDMA (X-RDMA's model,
 * docs/rpc.md).
 *
 * An endpoint (smart_rpc_t) belongs to one worker and so to one thread.  It
 * can listen for peers (loopback by default, the same HELLO and shared
 * secret as a blade) and connect to peers; every connection is a two-sided
 * QP on the endpoint's own completion queue, with registered buffers from
 * the endpoint's pool of large MRs.  Messages of up to eager_max payload
 * bytes go eagerly by SEND into a receive the peer keeps posted; longer
 * ones, up to rndv_max, by rendezvous: the payload is copied into the
 * sender's staging region, and the receiver READs it (64-KiB fragments)
 * and checks its CRC-32C before handing it over.  Either way a message is
 * handled in the order it was sent.
 *
 * Flow control (the seq-ack window): each side keeps `window` receives
 * posted for the other's data messages and tells the other, in the
 * immediate word of every message it sends (or in a bare ACK when it has
 * nothing to send), how many it has consumed.  A sender never has more than
 * `window` unacknowledged data messages out, so a SEND always finds a
 * receive: receiver-not-ready never happens, however slow the handler.
 * A sender out of window waits (a task yields; the main context polls);
 * replies from handlers, which cannot wait, queue behind the window up to a
 * byte cap per connection (a peer that stops consuming past it is cut
 * off).
 *
 * Keepalive (X-RDMA's): a connection silent for keepalive_ms is probed
 * with a zero-byte WRITE carrying immediate data (PING), which the peer's
 * poll answers (PONG).  A peer silent for keepalive_ms x keepalive_misses
 * is dead: its calls fail with SMART_ECONN and everything the connection
 * held is released, within that bound plus one 1-ms tick of the worker's
 * polling.  So an endpoint must be progressed (a handler must return)
 * well within keepalive_ms x keepalive_misses, or its peers give it up;
 * a stopped process (SIGSTOP) is given up like a dead one.
 *
 * Handlers run to completion on the endpoint's worker, inside its polling
 * (X-RDMA's thread model); they must not wait.  A handler replies with
 * smart_rpc_reply() before it returns or later (a task it spawned may make
 * nested calls first, then reply): a request not replied to when its
 * handler returns stays open until smart_rpc_reply().
 *
 * Thread safety: every function must be called on the endpoint's worker
 * thread.  Errors: 0 or a negative SMART_E* code; an error has no side
 * effect unless the function says otherwise.
 */
#ifndef SMART_RPC_H
#define SMART_RPC_H

#include <stddef.h>
#include <stdint.h>
#include "smart/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct smart_rpc smart_rpc_t;
typedef struct smart_rpc_conn smart_rpc_conn_t;
typedef struct smart_rpc_req smart_rpc_req_t;

/** Endpoint settings: smart_rpc_config_init() first (it sets struct_size,
 * docs/api.md), then change what differs; a zero field takes its
 * default. */
struct smart_rpc_config {
	uint32_t struct_size;  /**< sizeof, set by the init function:
				 * docs/api.md, "Extensible structs" */
	uint32_t window;       /**< receives per connection for data: 64
				 * (2..4096, rounded up to a power of 2) */
	uint32_t eager_max;    /**< largest payload: 4096 (48..1 MiB - 16) */
	uint32_t max_conns;    /**< connections at once: 64 (1..4096) */
	uint32_t timeout_ms;   /**< calls and connects: 5000 */
	uint32_t max_pending;  /**< handshakes in progress (unauthenticated
				 * ones are evicted oldest first): 16 */
	uint32_t backlog_max;  /**< reply bytes queued per connection behind
				 * its window before it is cut off: 4 MiB */
	uint32_t keepalive_ms; /**< silence after which a connection is
				 * probed: 1000 (1..3600000) */
	uint32_t keepalive_misses; /**< a peer silent for keepalive_ms x this
				 * is dead: 5 (2..100) */
	uint32_t trace_every;	   /**< trace one call in this many (both ends,
				 * smart_rpc_traces): 1024; UINT32_MAX: none */
	uint32_t slow_poll_us;	   /**< a gap between two polls of the endpoint
				 * longer than this is a slow poll (counted;
				 * messages wait meanwhile): 1000 */
	uint32_t qp_cache;     /**< connections kept ready (QP created and its
				 * receives posted: X-RDMA's QP cache) for the
				 * next connect or accept, made one at a time
				 * when the endpoint is idle and at each 1-ms
				 * tick: 2 (UINT32_MAX: none; at most 64) */
	uint32_t rndv_max;     /**< the longest message, sent by rendezvous
				 * when longer than eager_max: 64 MiB (up to
				 * 1 GiB; rounded up to 64 KiB).  The endpoint
				 * registers two regions this large (staging,
				 * which peers READ, and landing) */
	uint32_t busy_us;      /**< event mode: how long after the last
				 * message the endpoint stays in polling mode
				 * (smart_rpc_event_arm refuses): 50 (up to
				 * 1000000) */
	uint32_t allow_uid[4]; /**< shm: uids besides our effective uid and
				 * root that may be the other end of a
				 * connection, either way (SO_PEERCRED); 0:
				 * an unused entry */
};

/** A config in a designated initializer: { SMART_RPC_CONFIG_INIT,
 * .window = 8 }, the same as smart_rpc_config_init() then the fields. */
#define SMART_RPC_CONFIG_INIT .struct_size = sizeof(struct smart_rpc_config)

/** Every field zero (its default) and struct_size set.  Cannot fail: void. */
void smart_rpc_config_init(struct smart_rpc_config *cfg);

/** Create an endpoint on w (cfg NULL: defaults).  SMART_EINVAL for a field
 * out of range, SMART_ENOTSUP when the transport has no two-sided
 * operations, SMART_EBUSY when w already has an endpoint.  Thread: w's. */
int smart_rpc_create(smart_worker_t *w, const struct smart_rpc_config *cfg,
		     smart_rpc_t **out);

/** Close every connection (their open calls fail with SMART_ECONN), stop
 * listening and free the endpoint.  NULL: no-op returning 0.
 * SMART_EBUSY, nothing done, while a task waits in a call on it.
 * Thread: the endpoint's. */
int smart_rpc_destroy(smart_rpc_t *rpc);

/**
 * A handler: data/len is the request's payload, valid until the handler
 * returns.  req is valid until smart_rpc_reply(req, ...) (for a one-way
 * message req is NULL: nothing to reply).
 */
typedef void (*smart_rpc_handler_fn)(smart_rpc_req_t *req, const void *data,
				     uint32_t len, void *arg);

/** Every endpoint answers this op itself, with the request's bytes
 * (smart-ping --rpc: a round trip through the RPC path of any peer). */
#define SMART_RPC_OP_PING 0xffff

/** Serve op with fn (replacing any handler of op; fn NULL: none).  A
 * request for an op without a handler is answered with SMART_ENOENT.
 * SMART_EINVAL for SMART_RPC_OP_PING, which is the library's.
 * Thread: the endpoint's. */
int smart_rpc_register(smart_rpc_t *rpc, uint16_t op, smart_rpc_handler_fn fn,
		       void *arg);

/** Listen for peers at "host:port" (port 0: any free one; host as for
 * smart_connect, "127.0.0.1" unless told otherwise).  Peers must present
 * the ctx's shared secret.  Handshakes are served by
 * smart_rpc_progress().  SMART_EEXIST when already listening.
 * Thread: the endpoint's. */
int smart_rpc_listen(smart_rpc_t *rpc, const char *hostport);

/** The address listened at, "host:port" with the real port, into buf.
 * SMART_EINVAL for NULL arguments or len 0, SMART_ENOENT when not
 * listening, SMART_ERANGE when buf is too short.  Thread: the endpoint's. */
int smart_rpc_listen_addr(const smart_rpc_t *rpc, char *buf, size_t len);

/** Connect to a peer listening at "host:port", waiting up to timeout_ms.
 * The endpoint goes on meanwhile: from a task the dial yields (other
 * tasks run, the worker and so the endpoint are polled); from the main
 * context it polls the worker (handlers run).  SMART_EACCES: secret
 * refused, SMART_EBUSY: the peer has no room, SMART_ECONN: unreachable,
 * SMART_ETIMEDOUT: no answer in time; SMART_EINVAL from a handler.
 * Thread: the endpoint's. */
int smart_rpc_connect(smart_rpc_t *rpc, const char *hostport,
		      smart_rpc_conn_t **out);

/** Close a connection: its open calls fail with SMART_ECONN, requests of
 * it not replied to are dropped.  NULL, or one closed already: no-op
 * returning 0.  SMART_EINVAL, nothing done, for an accepted connection
 * (the endpoint's: it goes when its peer closes or with the endpoint).
 * Thread: the endpoint's. */
int smart_rpc_close(smart_rpc_conn_t *c);

/**
 * Call op on the peer with len bytes of request and wait for the answer:
 * up to cap bytes of it land in resp, *resp_len gets its length.  Returns
 * the handler's status (0 or what it passed to smart_rpc_reply),
 * SMART_ERANGE when the answer was longer than cap (nothing copied,
 * *resp_len the length), SMART_ETIMEDOUT after timeout_ms (counted from
 * the call's start: its waits for window and staging room too), SMART_ECONN
 * when the connection failed or closed (SMART_EPROTO: the peer broke the
 * protocol), SMART_EINVAL for a len longer than either side takes (its
 * rndv_max, or its eager_max if it has no rendezvous) or a call from
 * inside a handler (spawn a task to make nested calls), SMART_EBUSY when
 * the staging region stayed full for timeout_ms, or when the peer has no
 * request free for it (4096 per endpoint, and per connection at most
 * max(its window, 4096 / its max_conns) left open by its handlers at
 * once).  From a task it yields;
 * from the main context it polls.
 * Thread: the endpoint's.
 */
int smart_rpc_call(smart_rpc_conn_t *c, uint16_t op, const void *req,
		   uint32_t len, void *resp, uint32_t cap, uint32_t *resp_len);

/** Send a one-way message (no answer).  Returns once it is queued on the
 * connection (a long one: once copied into the staging region); waits
 * only while the window or the staging region is full, up to timeout_ms
 * (SMART_ETIMEDOUT; SMART_EAGAIN from a handler, which cannot wait).  Messages of one connection are
 * handled in the order they were sent.  Thread: the endpoint's. */
int smart_rpc_send(smart_rpc_conn_t *c, uint16_t op, const void *data,
		   uint32_t len);

/** Is the connection of a request still there?  0 if it is (a reply will
 * go), SMART_ECONN if it closed (a reply only gives the request back),
 * SMART_EINVAL for a request not open.  A request stays taken until it is
 * answered, its connection gone or not, and the endpoint has RPC_REQS
 * (4096) of them: an application that holds requests (a long poll, a
 * lock, a watch) checks those it holds whenever it runs and answers the
 * ones whose connection went, or peers that leave requests open and
 * reconnect take them all (docs/rpc.md §15).  Thread: the endpoint's. */
int smart_rpc_req_check(const smart_rpc_req_t *req);

/** Answer a request with status (0 or a negative SMART_E*) and len bytes.
 * req is gone afterwards, whatever the result.  SMART_ECONN when its
 * connection closed meanwhile (the answer is dropped), SMART_EINVAL for
 * a len longer than either side takes (the caller gets SMART_ERANGE
 * instead), SMART_EBUSY when a long answer finds the staging region full
 * (a reply never waits; the caller gets SMART_EBUSY too).
 * Thread: the endpoint's. */
int smart_rpc_reply(smart_rpc_req_t *req, int status, const void *data,
		    uint32_t len);

/** Poll the endpoint once: completions, messages (handlers run here),
 * handshakes, timeouts.  Returns the events handled.  Every wait of the
 * worker (smart_task_yield, smart_worker_run, smart_sync) polls it too.
 * Once the worker has found nothing for the ctx's `spin` option (20 µs),
 * a progress (or wait) that finds nothing also yields the CPU
 * (sched_yield), so that an oversubscribed machine runs the peer.  A
 * count (docs/api.md §2), or SMART_EINVAL for NULL.  Thread: the
 * endpoint's. */
int smart_rpc_progress(smart_rpc_t *rpc);

/** Send what is queued on the endpoint's connections now (one-way sends
 * are batched until the next progress).  0, or SMART_EINVAL for NULL.
 * Thread: the endpoint's. */
int smart_rpc_flush(smart_rpc_t *rpc);

/** Counters of a connection (or, through smart_rpc_stats, of the endpoint:
 * live and past connections summed). */
struct smart_rpc_stats {
	uint64_t msgs_sent, msgs_recv;	 /**< data messages */
	uint64_t bytes_sent, bytes_recv; /**< their payload bytes */
	uint64_t acks_sent;		 /**< bare ACKs */
	uint64_t calls, call_errors, call_timeouts;
	uint64_t window_stalls; /**< sends that found the window full */
	uint64_t backlogged;	/**< replies queued behind the window */
	uint64_t rnr;		/**< receiver-not-ready errors (0 by design) */
	uint64_t rnr_waits;	/**< smart_rpc_stats only: SENDs of this
				 * process (its transport domain, messaging
				 * or not) that met no receive posted and
				 * waited for one (0 by design) */
	uint64_t proto_errors;	/**< malformed messages: connection cut */
	uint64_t ka_probes;	/**< keepalive PINGs sent (after silence) */
	uint64_t ka_failures;	/**< peers given up by the keepalive: silent,
				 * or acking none of our messages, for
				 * keepalive_ms x keepalive_misses */
	uint64_t rndv_sent;	/**< messages staged for a peer to READ */
	uint64_t rndv_recv;	/**< messages READ from a peer and checked */
	uint64_t rndv_held;	/**< data messages that arrived behind a
				 * rendezvous and waited for it (in order) */
	uint64_t traced;	/**< calls and handlers traced */
	uint64_t slow_polls;	/**< endpoint only: polls that came more than
				 * slow_poll_us after the one before */
	uint64_t poll_gap_max_ns; /**< endpoint only: the longest such gap */
	uint64_t qp_cache_hits;	  /**< connections that took a ready QP */
	uint64_t conns_accepted, conns_dialed, conns_failed;
	uint64_t handshakes_refused;
	uint64_t event_sleeps;	  /**< endpoint only: arms that let the
				 * caller sleep (smart_rpc_event_arm) */
	uint64_t cut_closes;	  /**< connections we cut (a protocol error, a
				 * peer not consuming or acking) whose peer
				 * was sent a CLOSE */
	uint64_t chan_slots_sent; /**< channel slots committed */
	uint64_t chan_slots_recv; /**< channel slots taken (next) */
	uint64_t chan_torn;	  /**< FOOTER polls of a slot still landing */
};

/** SMART_EINVAL for NULL arguments.  The _sized forms take the caller's
 * sizeof (docs/api.md §4).  Thread: the endpoint's. */
int smart_rpc_conn_stats_sized(const smart_rpc_conn_t *c,
			       struct smart_rpc_stats *out, size_t size);
int smart_rpc_stats_sized(const smart_rpc_t *rpc, struct smart_rpc_stats *out,
			  size_t size);
static inline int smart_rpc_conn_stats(const smart_rpc_conn_t *c,
				       struct smart_rpc_stats *out)
{
	return smart_rpc_conn_stats_sized(c, out, sizeof(*out));
}
static inline int smart_rpc_stats(const smart_rpc_t *rpc,
				  struct smart_rpc_stats *out)
{
	return smart_rpc_stats_sized(rpc, out, sizeof(*out));
}

/**
 * Tracing: one call in cfg.trace_every is traced at both ends (the
 * request carries a flag; its handler is traced where it runs).  A
 * caller's record: the time it waited for room (window, staging) and the
 * round trip from sending to the answer; a handler's: the time the request
 * waited (behind messages of the same poll, or its rendezvous READ) and
 * the handler's run.  The same id names a call at both ends.
 */
enum { SMART_RPC_TRACE_CALL = 1, SMART_RPC_TRACE_HANDLER = 2 };

struct smart_rpc_trace {
	uint32_t id; /**< the call's id, the same at both ends */
	uint16_t op;
	uint8_t side;	     /**< SMART_RPC_TRACE_* */
	uint8_t rndv;	     /**< 1: its request went by rendezvous */
	int32_t status;	     /**< caller: the call's result */
	uint32_t len;	     /**< request payload bytes */
	uint64_t start_ns;   /**< smart_now_ns() when the call began, or the
				 * request was found */
	uint64_t queue_ns;   /**< waiting before it went (caller) or before
				 * its handler ran (handler) */
	uint64_t rtt_ns;     /**< caller: sent to answered */
	uint64_t handler_ns; /**< handler: its run */
};

/** The newest traces of the endpoint (up to 256 kept), oldest first, into
 * out (up to max records of the caller's sizeof: docs/api.md §4); returns
 * how many (a count: docs/api.md §2), or SMART_EINVAL for NULL rpc or out
 * or a negative max.  Thread: the endpoint's. */
int smart_rpc_traces_sized(const smart_rpc_t *rpc, struct smart_rpc_trace *out,
			   int max, size_t size);
static inline int smart_rpc_traces(const smart_rpc_t *rpc,
				   struct smart_rpc_trace *out, int max)
{
	return smart_rpc_traces_sized(rpc, out, max, sizeof(*out));
}

/**
 * Event mode (X-RDMA's): an idle endpoint need not be polled.  The
 * descriptor of smart_rpc_event_fd (the endpoint's own; do not close it)
 * goes into the program's epoll set or poll(2); it becomes readable when
 * the endpoint has work: a message or completion, a connection or a
 * smart-stat query, or something due (a keepalive probe, a call's
 * timeout, a sleeping task of the worker).  The loop:
 *
 *	for (;;) {
 *		smart_rpc_progress(rpc);
 *		if (smart_rpc_event_arm(rpc) == 0)
 *			epoll_wait(...);	// or poll() on the fd
 *	}
 *
 * smart_rpc_event_arm returns 0 when the caller may sleep until the
 * descriptor is readable (nothing is lost meanwhile), SMART_EAGAIN when it
 * must poll instead: a message came within cfg.busy_us (traffic flows:
 * polling is cheaper than a wake-up), or the worker has work of its own
 * (a task ready, an op in flight), or it consumes a FOOTER channel
 * (include/smart/chan.h: its slots land without any event).  While traffic flows the descriptor is
 * not used and senders make no system call; a sleeping endpoint on shm
 * costs its next sender one send(2) of a byte (docs/rpc.md §12).
 * Wake-ups may be spurious.  SMART_ENOTSUP: the transport has no events;
 * SMART_ENOENT: arm before event_fd; SMART_EINVAL: from a handler.
 * Thread: the endpoint's.
 */
int smart_rpc_event_fd(smart_rpc_t *rpc, int *fd);
int smart_rpc_event_arm(smart_rpc_t *rpc);

/** Live connections of the endpoint.  Thread: the endpoint's. */
int smart_rpc_conns(const smart_rpc_t *rpc);

/** The endpoint's control socket, which smart-stat reads (docs/rpc.md):
 * its abstract unix name "smart-stat:<pid>:<n>" into buf.  SMART_ENOENT
 * when the endpoint has none (it could not be opened), SMART_ERANGE when
 * buf is too short.  Thread: the endpoint's. */
int smart_rpc_stat_name(const smart_rpc_t *rpc, char *buf, size_t len);

/** The name of counter i of struct smart_rpc_stats (its uint64_t fields in
 * order, e.g. 0 "msgs_sent"), as the control socket's answer names them;
 * NULL past the last.  Thread: any. */
const char *smart_rpc_stats_field(unsigned i);

#ifdef __cplusplus
}
#endif
#endif
