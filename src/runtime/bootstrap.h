/*
 * Bootstrap client: the compute side of the blade handshake
 * (docs/protocol.md).  A boot session is one TCP connection to a blade,
 * kept open after the handshake to set up and tear down queue pairs; when
 * it closes, the blade destroys every responder created through it.
 *
 * Invariants: every socket operation is bounded by the session's timeout;
 * a session that saw a protocol or I/O error is marked broken and every
 * later call fails with SMART_ECONN.
 *
 * Thread safety: a boot session is not thread safe.  Its owner serialises
 * every call on it (the ctx holds a per-blade mutex around each call).
 */
#ifndef SMART_CORE_BOOTSTRAP_H
#define SMART_CORE_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"
#include "wire/proto.h"

_Static_assert(SMART_TP_BLOB_MAX == SMART_PROTO_BLOB_MAX,
	       "the wire carries whole transport blobs");

struct smart__log;
struct smart__boot;

/* What the blade told us in its WELCOME. */
struct smart__boot_welcome {
	uint16_t blade_id;
	uint8_t chunk_shift;
	uint64_t size;			 /* region bytes */
	uint16_t lease_id;		 /* our client id on the blade */
	uint32_t lease_ms;		 /* the blade's lease duration */
	uint8_t blob[SMART_TP_BLOB_MAX]; /* region blob for remote_attach */
	size_t blob_len;
	int need_fd; /* call smart__boot_fetch_fd() before remote_attach */
};

/*
 * Connect to hostport ("host:port", see smart__proto_parse_addr), say HELLO
 * with the transport name, and prove the secret (secret_len 0..4096,
 * secret may be NULL when 0; it never crosses the socket) once the blade
 * proved it, all within timeout_ms.  Returns 0 with *out and *welcome
 * filled, or the blade's refusal (SMART_EACCES, SMART_EVERSION,
 * SMART_ENOTSUP, SMART_EBUSY, ...), SMART_EACCES also when the blade did
 * not prove the secret (a wrong secret, or not a blade of ours), or
 * SMART_EPROTO (malformed answer), SMART_ETIMEDOUT, SMART_ECONN (refused,
 * reset, closed), SMART_EINVAL (bad arguments or address).  lg may be NULL
 * and must outlive the session.
 */
int smart__boot_open(const char *hostport, const char *transport,
		     const void *secret, size_t secret_len, int timeout_ms,
		     const struct smart__log *lg, struct smart__boot **out,
		     struct smart__boot_welcome *welcome);

/*
 * Fetch the region's file descriptor: connect to the blade's abstract unix
 * socket named in the WELCOME, present our proof over its one-time token
 * (never the token: whoever relayed the TCP session saw it) and receive the
 * fd by SCM_RIGHTS.  The token is single use: a second call fails with
 * SMART_EACCES.  SMART_EINVAL when the WELCOME offered no fd.  The caller
 * owns *fd_out (close-on-exec set).
 */
int smart__boot_fetch_fd(struct smart__boot *b, int *fd_out);

/*
 * Ask the blade to accept a QP described by blob (1..SMART_TP_BLOB_MAX
 * bytes).  *peer_len is the capacity of peer_blob on input and the length
 * of the responder's blob on output.  *responder_id names the responder
 * for smart__boot_qp_close().  Returns the blade's status for the accept
 * (the session stays usable), or SMART_ETIMEDOUT / SMART_ECONN /
 * SMART_EPROTO when the session broke, or SMART_ERANGE when peer_blob is
 * too small.
 */
int smart__boot_qp_connect(struct smart__boot *b, const void *blob, size_t len,
			   void *peer_blob, size_t *peer_len,
			   uint32_t *responder_id);

/* Tell the blade to destroy a responder.  No reply is awaited. */
int smart__boot_qp_close(struct smart__boot *b, uint32_t responder_id);

/* The session's socket, for a liveness watch: poll it for POLLRDHUP only
 * (never read it: replies belong to the calls above).  -1 when broken. */
int smart__boot_fd(const struct smart__boot *b);

/* Say BYE (best effort) and free the session.  NULL is allowed. */
void smart__boot_close(struct smart__boot *b);

/* The same without the BYE: the blade then fences the lease and never
 * hands its id out again (something may still name it). */
void smart__boot_drop(struct smart__boot *b);

#endif
