/*
 * Memory blade internals: the blade object, the per-client session state
 * machine (session.c) and the control thread (ctl.c).
 *
 * Invariants:
 *  - After smart_blade_create() returns, only the control thread touches
 *    sessions, fd requests and sockets; other threads read the immutable
 *    fields (id, region, address) and the atomic counters.
 *  - A session's buffers are bounded: in[] holds at most one largest legal
 *    frame, out[] at most BLADE_OUT_CAP bytes; a frame is processed only
 *    when out[] has room for the largest reply, so replies never overflow.
 *  - A session is authenticated (SESS_READY) only after the client proved
 *    the secret (AUTH) over our fresh nonce; the secret itself never
 *    crosses the socket (wire/auth.h).
 *  - A session's fd-passing token is live only in SESS_READY and is cleared
 *    after its first use; it dies with the session.
 *  - Responders belong to exactly one session and are destroyed with it.
 *  - The blade's descriptors are bounded whatever peers do: a session holds
 *    an fd until it is evicted or reaped, and is counted in exactly one of
 *    nauth (welcomed) or nunauth (not yet), which stay <= max_clients and
 *    <= max_unauth after every accept; pending fd requests holding an fd
 *    stay <= BLADE_MAX_FDREQ.  A newcomer evicts the oldest unauthenticated
 *    session or fd request instead of being refused, so idle peers without
 *    the secret can never lock a real client out.
 */
#ifndef SMART_BLADE_INT_H
#define SMART_BLADE_INT_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "smart/blade.h"
#include "transport/transport.h"
#include "util/log.h"
#include "wire/auth.h"
#include "wire/proto.h"

_Static_assert(SMART_TP_BLOB_MAX == SMART_PROTO_BLOB_MAX,
	       "the wire carries whole transport blobs");

#define BLADE_IN_CAP	     SMART_PROTO_FRAME_MAX
#define BLADE_OUT_CAP	     16384
#define BLADE_REPLY_MAX	     (SMART_PROTO_HDR_LEN + SMART_PROTO_WELCOME_MAX)
#define BLADE_MAX_RESPONDERS 4096
#define BLADE_MAX_FDREQ	     64	   /* pending fd requests holding an fd */
#define BLADE_ACCEPT_BATCH   64	   /* accepts per listener per poll round */
#define BLADE_LINGER_MS	     1000  /* bound on flushing a final ERROR */
#define BLADE_DISCARD_MAX    65536 /* bytes drained while closing */

enum blade_sess_state {
	SESS_HELLO,   /* connected, HELLO expected before the deadline */
	SESS_AUTH,    /* CHALLENGE sent, the client's AUTH expected (or
			 * its ERROR: it refused our proof) */
	SESS_READY,   /* authenticated: QP_CONNECT/QP_CLOSE/BYE served */
	SESS_CLOSING, /* final ERROR queued: flush, drain, then close */
	SESS_DEAD,    /* to be freed by the control thread */
};

struct blade_session {
	int fd;		 /* -1 for a socketless (fuzz) session */
	char peer[64];	 /* "host:port" of the peer, for the log */
	int state;	 /* enum blade_sess_state */
	int wr_shut;	 /* SHUT_WR done while closing */
	int authed;	 /* welcomed: counted in nauth, not nunauth */
	int no_room;	 /* set before each process(): max_clients hit */
	int fixed_nonce; /* socketless (fuzz) session: a zero nonce, so
				 * that a corpus can hold a valid AUTH */
	struct smart__auth auth; /* key: the blade's secret */
	char transport[SMART_PROTO_TRANSPORT_MAX + 1]; /* the HELLO's */
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t hello_len; /* the HELLO's payload: both proofs cover it */
	uint64_t seq_in, seq_out; /* frames after the AUTH, resp. the
					 * WELCOME, each tagged with its own */
	uint64_t deadline;	  /* ms: auth or close deadline; 0 = none */
	uint64_t stall; /* ms: output pending without progress since */
	size_t discarded;
	uint8_t fetch[SMART_PROTO_FETCH_LEN]; /* the fd request expected:
						 * the client's proof over
						 * the WELCOME's token */
	int token_live;
	uint16_t lease_id; /* the client's lease, 0 = none yet */
	int said_bye;	   /* left cleanly: release, do not fence */
	struct smart_tp_responder **resp; /* indexed by responder id */
	uint32_t resp_cap, nresp;
	size_t in_len, out_off, out_len;
	uint8_t in[BLADE_IN_CAP];
	uint8_t out[BLADE_OUT_CAP];
};

/* A pending fd request on the unix socket: SMART_PROTO_FETCH_LEN bytes
 * expected (the client's proof over its WELCOME's token). */
struct blade_fdreq {
	int fd; /* -1 once finished, expired or evicted */
	uint64_t deadline;
	size_t n;
	uint8_t got[SMART_PROTO_FETCH_LEN];
};

struct smart_blade {
	struct smart__log log;
	const struct smart_tp_ops *ops;
	struct smart_tp_domain *dom;
	struct smart_tp_mr *mr;
	uint8_t blob[SMART_TP_BLOB_MAX];
	size_t blob_len;

	uint16_t id;
	uint8_t chunk_shift;
	uint64_t size;
	char transport[SMART_PROTO_TRANSPORT_MAX + 1];
	char device[64]; /* verbs device, "" = auto */
	int ib_port, gid_index;
	int traffic_class, service_level, gid_type; /* SMART_TP_GID_* */
	uint8_t *secret;			    /* NULL: none required */
	size_t secret_len;
	int max_clients;     /* authenticated sessions */
	int max_unauth;	     /* sessions not authenticated yet */
	int auth_timeout_ms; /* to prove the secret, or send an fd
				 * request */
	int hs_timeout_ms;   /* authenticated: replies unread this long */
	uint32_t lease_ms;
	int64_t dm_size;     /* device memory asked for: -1 auto */
	uint16_t next_lease; /* control thread: the next id to try */
	/* control thread: ids whose holder died or was fenced; never handed
	 * out again (lease.c: a lock word may still name them) */
	uint64_t dead_ids[65536 / 64];
	_Atomic uint64_t n_dead_ids;

	int lfd, ufd, wakefd;
	char addr[64];
	char uname[SMART_PROTO_SOCK_MAX + 1]; /* abstract, no leading NUL */
	size_t uname_len;

	pthread_t thread;
	int thread_started;

	/*
	 * Control thread only.  Arrays are in arrival order (compaction keeps
	 * it), so the first unauthenticated entry is the oldest.  Evicted
	 * entries stay, fd closed, until the end of the round: hence the
	 * BLADE_ACCEPT_BATCH of headroom.
	 */
	struct pollfd *pfd;    /* 3 + max_clients + max_unauth + MAX_FDREQ */
	uint64_t accept_pause; /* ms: listener paused (out of fds) */
	struct blade_session **sess; /* max_clients + max_unauth + BATCH */
	int nsess, nauth, nunauth;
	struct blade_fdreq fdreq[BLADE_MAX_FDREQ + BLADE_ACCEPT_BATCH];
	int nfdreq, nfdlive;

	_Atomic uint64_t n_accepted, n_authenticated, n_refused, n_malformed,
		n_timeouts, n_evicted, n_active, n_pending, n_pending_fd;
};

/* Monotonic milliseconds. */
uint64_t smart__blade_now_ms(void);

/* session.c */
struct blade_session *smart__blade_sess_new(struct smart_blade *b, int fd);
void smart__blade_sess_free(struct smart_blade *b, struct blade_session *s);
/* Parse and serve every complete frame in s->in; replies go to s->out. */
void smart__blade_sess_process(struct smart_blade *b, struct blade_session *s);
/* Queue ERROR(status, msg) and move to SESS_CLOSING. */
void smart__blade_sess_refuse(struct smart_blade *b, struct blade_session *s,
			      int status, const char *msg);
/* Constant-time match of an fd request (SMART_PROTO_FETCH_LEN bytes)
 * against the live sessions' expected ones; consumes the match and writes
 * the matched session's proof over the region's descriptor to tag. */
int smart__blade_token_take(struct smart_blade *b, const uint8_t *fetch,
			    uint8_t tag[SMART_PROTO_TAG_LEN]);

/*
 * Feed bytes to a fresh socketless session as if received from a client
 * (the fuzz target's entry): frames are parsed and served by the real state
 * machine, replies are passed to sink (may be NULL).  Thread safe with
 * respect to the control thread.  Returns the final session state.
 */
int smart__blade_session_feed(struct smart_blade *b, const uint8_t *data,
			      size_t len,
			      void (*sink)(const uint8_t *, size_t, void *),
			      void *arg);

/* ctl.c */
void *smart__blade_ctl_main(void *arg);

/* lease.c: hand a new client a lease (SMART_EBUSY when every slot is
 * live), and end it when its session ends: released after a BYE, fenced
 * otherwise (the client died or hung up without a word). */
int smart__blade_lease_assign(struct smart_blade *b, uint16_t *id);
void smart__blade_lease_end(struct smart_blade *b, uint16_t id, int bye);

#endif
