/*
 * Bootstrap client (docs/protocol.md): TCP handshake with a blade, region
 * fd fetch over the blade's abstract unix socket, and QP setup requests.
 *
 * The secret never crosses the socket: the blade proves it first (its
 * CHALLENGE, over our fresh nonce and HELLO), and only then do we prove it
 * (AUTH) and believe what the blade sends (its WELCOME, tagged): a party
 * without the secret, a fake blade included, learns nothing it can replay
 * and is refused before we map or connect to anything it names.  Every
 * frame after the handshake, either way, is tagged with its type and
 * sequence number: a party rewriting the TCP stream can change nothing.
 *
 * Every wait is a poll() bounded by an absolute deadline computed from the
 * session timeout, so a silent or slow blade costs at most timeout_ms per
 * call.  Any I/O or protocol failure marks the session broken: the stream
 * may be desynchronised, so it is never read again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/bootstrap.h"
#include "smart/status.h"
#include "util/compiler.h"
#include "smart/secret.h"
#include "util/log.h"
#include "util/mutant.h"
#include "util/sockio.h"
#include "wire/auth.h"
#include "wire/proto.h"

struct smart__boot {
	int fd;
	_Atomic int broken; /* read by the keeper (smart__boot_fd) while
				 * QP-connect threads may set it */
	int timeout_ms;
	const struct smart__log *lg;
	uint32_t next_req;
	int need_fd;
	uint8_t fetch[SMART_PROTO_FETCH_LEN]; /* our fd request: our proof
						 * over the WELCOME's token */
	char sock[SMART_PROTO_SOCK_MAX + 1];
	size_t sock_len;
	struct smart__auth a;	  /* the session's: key (a copy, in key[]) and
				 * both nonces */
	uint64_t seq_out, seq_in; /* tagged frames sent, received */
	uint8_t key[SMART_SECRET_MAX];
	uint8_t buf[SMART_PROTO_FRAME_MAX];
};

/* Read one frame into b->buf; the payload starts at b->buf + 12. */
static int read_frame(struct smart__boot *b, int64_t deadline,
		      struct smart_proto_hdr *h)
{
	int rc = smart__sock_recv_exact(b->fd, b->buf, SMART_PROTO_HDR_LEN,
					NULL, 0, deadline);

	if (!rc)
		rc = smart__proto_hdr_check(b->buf, SMART_PROTO_HDR_LEN, h);
	if (!rc)
		rc = smart__sock_recv_exact(b->fd, b->buf + SMART_PROTO_HDR_LEN,
					    h->len, NULL, 0, deadline);
	if (rc == SMART_EAGAIN)
		rc = SMART_EPROTO;
	if (rc)
		b->broken = 1;
	return rc;
}

/* An ERROR frame: log the blade's reason and return its status. */
static int blade_error(struct smart__boot *b, const struct smart_proto_hdr *h)
{
	struct smart_proto_error e;

	b->broken = 1;
	if (smart__proto_dec_error(b->buf + SMART_PROTO_HDR_LEN, h->len, &e))
		return SMART_EPROTO;
	if (e.status == SMART_EVERSION)
		smart__err(b->lg,
			   "blade speaks protocol version %u, we speak "
			   "%d (%s): upgrade the %s side",
			   e.version, SMART_PROTO_VERSION, e.msg,
			   e.version < SMART_PROTO_VERSION ? "blade" :
							     "client");
	else
		smart__warn(b->lg, "blade refused: %s (%s)", e.msg,
			    smart_status_name(e.status));
	return e.status;
}

static int tcp_connect(const char *hostport, int64_t deadline, int *fd_out)
{
	struct sockaddr_storage ss;
	uint32_t len;

	if (smart__proto_parse_addr(hostport, &ss, sizeof(ss), &len))
		return SMART_EINVAL;
	return smart__sock_connect(&ss, len, deadline, fd_out);
}

/* HELLO with our fresh nonce; its payload is kept in hello[] (both
 * proofs cover it). */
static int send_hello(struct smart__boot *b, const char *transport,
		      struct smart__auth *a, uint8_t *hello, size_t *hlen,
		      int64_t deadline)
{
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION };
	size_t n;
	int rc;

	strcpy(h.transport, transport);
	rc = smart__auth_nonce(a->nd);
	memcpy(h.nonce, a->nd, sizeof(h.nonce));
	if (!rc)
		rc = smart__proto_enc_hello(&h, b->buf, sizeof(b->buf), &n);
	if (rc)
		return rc;
	*hlen = n - SMART_PROTO_HDR_LEN;
	memcpy(hello, b->buf + SMART_PROTO_HDR_LEN, *hlen);
	return smart__sock_send_all(b->fd, b->buf, n, NULL, 0, deadline);
}

/* Tell a blade that failed its proof why we go (best effort: it may be
 * the genuine blade with another secret, whose operator wants to know),
 * and wait until it hangs up, at most until the deadline, so that by the
 * time we fail the blade has counted the refusal. */
static void refuse_blade(struct smart__boot *b, int64_t deadline)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	size_t n;

	smart__warn(b->lg,
		    "the blade did not prove our secret: a wrong "
		    "secret on one side, or not the blade we meant; nothing "
		    "sent");
	if (!smart__proto_enc_error(SMART_EACCES, "blade proof refused", f,
				    sizeof(f), &n) &&
	    send(b->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		smart__dbg(b->lg, "refusal not sent");
	else if (shutdown(b->fd, SHUT_WR) == 0)
		(void)smart__sock_recv_exact(b->fd, f, 1, NULL, 0, deadline);
	b->broken = 1;
}

/* The CHALLENGE: the blade's proof checked before ours goes out. */
static int answer_challenge(struct smart__boot *b,
			    const struct smart_proto_hdr *h,
			    struct smart__auth *a, const uint8_t *hello,
			    size_t hlen, int64_t deadline)
{
	struct smart_proto_challenge c;
	uint8_t proof[SMART_PROTO_TAG_LEN];
	size_t n;

	if (smart__proto_dec_challenge(b->buf + SMART_PROTO_HDR_LEN, h->len,
				       &c)) {
		b->broken = 1;
		return SMART_EPROTO;
	}
	memcpy(a->nl, c.nonce, sizeof(a->nl));
	if (!SMART_M_CLIENT_NO_BLADE_PROOF &&
	    !smart__auth_check(a, SMART_AUTH_L_CHALLENGE, hello, hlen,
			       c.proof)) {
		refuse_blade(b, deadline);
		return SMART_EACCES;
	}
	smart__auth_tag(a, SMART_AUTH_D_AUTH, hello, hlen, proof);
	if (smart__proto_enc_auth(proof, b->buf, sizeof(b->buf), &n))
		return SMART_EPROTO;
	return smart__sock_send_all(b->fd, b->buf, n, NULL, 0, deadline);
}

static int take_welcome(struct smart__boot *b, const struct smart_proto_hdr *h,
			const struct smart__auth *a,
			struct smart__boot_welcome *out)
{
	struct smart_proto_welcome w;

	if (smart__proto_dec_welcome(b->buf + SMART_PROTO_HDR_LEN, h->len, &w))
		return SMART_EPROTO;
	if (!smart__auth_open(a, SMART_AUTH_L_WELCOME,
			      b->buf + SMART_PROTO_HDR_LEN, h->len)) {
		smart__warn(b->lg, "the blade's welcome is not tagged with "
				   "this session's proof: altered on the way");
		return SMART_EACCES;
	}
	if (w.status)
		return w.status;
	memset(out, 0, sizeof(*out));
	out->blade_id = w.blade_id;
	out->chunk_shift = w.chunk_shift;
	out->size = w.region_size;
	out->lease_id = w.lease_id;
	out->lease_ms = w.lease_ms;
	memcpy(out->blob, w.blob, w.blob_len);
	out->blob_len = w.blob_len;
	out->need_fd = !!(w.flags & SMART_PROTO_WF_FETCH_FD);
	b->need_fd = out->need_fd;
	smart__auth_tag(a, SMART_AUTH_D_FETCH, w.token, sizeof(w.token),
			b->fetch);
	memcpy(b->sock, w.sock, w.sock_len + 1);
	b->sock_len = w.sock_len;
	explicit_bzero(&w, sizeof(w));
	return 0;
}

/* One frame of the blade's: ERROR ends it, anything but want is EPROTO. */
static int read_reply(struct smart__boot *b, uint16_t want, int64_t deadline,
		      struct smart_proto_hdr *h)
{
	int rc = read_frame(b, deadline, h);

	if (rc)
		return rc;
	if (h->type == SMART_PROTO_ERROR)
		return blade_error(b, h);
	if (h->type != want) {
		b->broken = 1;
		return SMART_EPROTO;
	}
	return 0;
}

static int handshake(struct smart__boot *b, const char *transport,
		     struct smart__boot_welcome *welcome)
{
	int64_t deadline = smart__now_ms() + b->timeout_ms;
	struct smart__auth *a = &b->a;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	struct smart_proto_hdr h;
	size_t hlen = 0;
	int rc, src;

	/* A blade that refuses at once may reset our HELLO: read anyway, its
	 * ERROR explains why. */
	src = send_hello(b, transport, a, hello, &hlen, deadline);
	rc = read_reply(b, SMART_PROTO_CHALLENGE, deadline, &h);
	if (rc)
		rc = src ? src : rc;
	if (!rc)
		rc = answer_challenge(b, &h, a, hello, hlen, deadline);
	if (!rc)
		rc = read_reply(b, SMART_PROTO_WELCOME, deadline, &h);
	if (!rc)
		rc = take_welcome(b, &h, a, welcome);
	return rc;
}

int smart__boot_open(const char *hostport, const char *transport,
		     const void *secret, size_t secret_len, int timeout_ms,
		     const struct smart__log *lg, struct smart__boot **out,
		     struct smart__boot_welcome *welcome)
{
	struct smart__boot *b;
	size_t tl = transport ? strlen(transport) : 0;
	int rc;

	if (!hostport || tl == 0 || tl > SMART_PROTO_TRANSPORT_MAX ||
	    secret_len > SMART_SECRET_MAX || (secret_len && !secret) ||
	    timeout_ms <= 0 || !out || !welcome)
		return SMART_EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return SMART_ENOMEM;
	b->lg = lg;
	b->timeout_ms = timeout_ms;
	if (secret_len)
		memcpy(b->key, secret, secret_len);
	b->a.key = b->key;
	b->a.key_len = secret_len;
	rc = tcp_connect(hostport, smart__now_ms() + timeout_ms, &b->fd);
	if (rc) {
		smart__warn(lg, "cannot reach blade %s: %s", hostport,
			    smart_strerror(rc));
		explicit_bzero(b, sizeof(*b));
		free(b);
		return rc;
	}
	rc = handshake(b, transport, welcome);
	if (rc) {
		if (rc == SMART_ETIMEDOUT || rc == SMART_ECONN ||
		    rc == SMART_EPROTO)
			smart__warn(lg, "handshake with blade %s: %s", hostport,
				    smart_strerror(rc));
		close(b->fd);
		explicit_bzero(b, sizeof(*b));
		free(b);
		return rc;
	}
	*out = b;
	return 0;
}

static int unix_connect(const struct smart__boot *b, int64_t deadline,
			int *fd_out)
{
	struct sockaddr_un un;

	return smart__sock_connect(&un, smart__sock_abstract(b->sock, &un),
				   deadline, fd_out);
}

/* The blade's proof over the descriptor it passed (its tag follows the
 * status byte): whoever holds the socket's name once the blade is gone
 * can pass one too, and we would map it as the region. */
static int fd_proven(struct smart__boot *b, int fd, int got, int64_t deadline)
{
	uint8_t tag[SMART_PROTO_TAG_LEN];
	int rc = smart__sock_recv_exact(fd, tag, sizeof(tag), NULL, 0,
					deadline);

	if (rc)
		return rc == SMART_EAGAIN ? SMART_EPROTO : rc;
	if (!SMART_M_CLIENT_NO_FD_PROOF &&
	    !smart__auth_fd_check(&b->a, SMART_AUTH_L_FETCH, got, tag))
		rc = SMART_EACCES;
	if (rc)
		smart__warn(b->lg,
			    "the region fd is not the blade's (no proof "
			    "of it): the fd socket's name is held by another "
			    "process");
	return rc;
}

/* Receive the status byte and, when it is 0, exactly one descriptor and
 * the blade's proof over it. */
static int recv_fd(struct smart__boot *b, int fd, int64_t deadline, int *fd_out)
{
	uint8_t st;
	int got = -1, rc;

	rc = smart__sock_recv_exact(fd, &st, 1, &got, 1, deadline);
	if (!rc) {
		rc = st == 0 ? 0 : -(int)st;
		if (rc && !smart__proto_status_ok(rc))
			rc = SMART_EPROTO;
	}
	if (!rc && got < 0)
		rc = SMART_EPROTO;
	if (!rc)
		rc = fd_proven(b, fd, got, deadline);
	if (rc) {
		smart__sock_fd_drop(got); /* whoever answered chose it */
		return rc;
	}
	*fd_out = got;
	return 0;
}

int smart__boot_fetch_fd(struct smart__boot *b, int *fd_out)
{
	int64_t deadline;
	int fd, rc;

	if (!b || !fd_out || !b->need_fd)
		return SMART_EINVAL;
	deadline = smart__now_ms() + b->timeout_ms;
	rc = unix_connect(b, deadline, &fd);
	if (rc)
		return rc;
	rc = smart__sock_send_all(fd, b->fetch, sizeof(b->fetch), NULL, 0,
				  deadline);
	if (!rc)
		rc = recv_fd(b, fd, deadline, fd_out);
	/* anything more the answerer queued goes before the close: the
	 * kernel would drop its descriptors in our thread */
	smart__sock_fd_drop(fd);
	if (rc)
		smart__warn(b->lg, "cannot fetch the region fd: %s",
			    smart_strerror(rc));
	return rc;
}

static int send_frame(struct smart__boot *b, const uint8_t *f, size_t n,
		      int64_t deadline)
{
	int rc;

	if (b->broken)
		return SMART_ECONN;
	rc = smart__sock_send_all(b->fd, f, n, NULL, 0, deadline);
	if (rc)
		b->broken = 1;
	return rc;
}

/* Tag a frame of ours (after the handshake) and send it. */
static int send_tagged(struct smart__boot *b, uint8_t *f, size_t n,
		       int64_t deadline)
{
	if (b->broken)
		return SMART_ECONN;
	smart__auth_seal_seq(&b->a, SMART_AUTH_D_SESSION, b->seq_out++, f, n);
	return send_frame(b, f, n, deadline);
}

/* Wait for the QP_ACCEPT answering req, its tag the blade's for the next
 * sequence number; an ERROR ends the session. */
static int await_accept(struct smart__boot *b, uint32_t req, int64_t deadline,
			struct smart_proto_qp_accept *a)
{
	const uint8_t *pl = b->buf + SMART_PROTO_HDR_LEN;
	struct smart_proto_hdr h;
	int rc = read_frame(b, deadline, &h);

	if (rc)
		return rc;
	if (h.type == SMART_PROTO_ERROR)
		return blade_error(b, &h);
	if (h.type == SMART_PROTO_QP_ACCEPT && !SMART_M_CLIENT_NO_SESSION_TAG &&
	    !smart__auth_open_seq(&b->a, SMART_AUTH_L_SESSION, b->seq_in,
				  h.type, pl, h.len)) {
		smart__warn(b->lg, "a qp_accept not tagged with this session's "
				   "proof: the stream was altered");
		b->broken = 1;
		return SMART_EACCES;
	}
	b->seq_in++;
	if (h.type != SMART_PROTO_QP_ACCEPT ||
	    smart__proto_dec_qp_accept(pl, h.len, a) || a->req_id != req) {
		b->broken = 1;
		return SMART_EPROTO;
	}
	return 0;
}

int smart__boot_qp_connect(struct smart__boot *b, const void *blob, size_t len,
			   void *peer_blob, size_t *peer_len,
			   uint32_t *responder_id)
{
	struct smart_proto_qp_connect c;
	struct smart_proto_qp_accept a;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_QPC_MAX];
	int64_t deadline;
	size_t n;
	int rc;

	if (!b || !blob || len == 0 || len > SMART_TP_BLOB_MAX || !peer_blob ||
	    !peer_len || !responder_id)
		return SMART_EINVAL;
	memset(&c, 0, sizeof(c));
	c.req_id = ++b->next_req;
	memcpy(c.blob, blob, len);
	c.blob_len = len;
	rc = smart__proto_enc_qp_connect(&c, f, sizeof(f), &n);
	if (rc)
		return rc;
	deadline = smart__now_ms() + b->timeout_ms;
	rc = send_tagged(b, f, n, deadline);
	if (!rc)
		rc = await_accept(b, c.req_id, deadline, &a);
	if (rc)
		return rc;
	if (a.status)
		return a.status;
	if (a.blob_len > *peer_len) {
		smart__boot_qp_close(b, a.responder_id);
		return SMART_ERANGE;
	}
	memcpy(peer_blob, a.blob, a.blob_len);
	*peer_len = a.blob_len;
	*responder_id = a.responder_id;
	return 0;
}

int smart__boot_qp_close(struct smart__boot *b, uint32_t responder_id)
{
	static const uint8_t notag[SMART_PROTO_TAG_LEN];
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_QPCLOSE_LEN];
	size_t n;

	if (!b)
		return SMART_EINVAL;
	if (smart__proto_enc_qp_close(responder_id, notag, f, sizeof(f), &n))
		return SMART_EINVAL;
	return send_tagged(b, f, n, smart__now_ms() + b->timeout_ms);
}

static void boot_end(struct smart__boot *b, int bye)
{
	static const uint8_t notag[SMART_PROTO_TAG_LEN];
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_BYE_LEN];
	size_t n;

	if (!b)
		return;
	/* Best effort and never blocking: the blade also cleans up on EOF. */
	if (bye && !b->broken &&
	    !smart__proto_enc_bye(notag, f, sizeof(f), &n)) {
		smart__auth_seal_seq(&b->a, SMART_AUTH_D_SESSION, b->seq_out++,
				     f, n);
		if (send(b->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			smart__dbg(b->lg, "bye: not sent");
	}
	close(b->fd);
	explicit_bzero(b, sizeof(*b));
	free(b);
}

void smart__boot_close(struct smart__boot *b)
{
	boot_end(b, 1);
}

void smart__boot_drop(struct smart__boot *b)
{
	boot_end(b, 0);
}

int smart__boot_fd(const struct smart__boot *b)
{
	return b && !b->broken ? b->fd : -1;
}
