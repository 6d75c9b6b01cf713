/*
 * Bootstrap client (docs/protocol.md): TCP handshake with a blade, region
 * fd fetch over the blade's abstract unix socket, and QP setup requests.
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

#include "core/bootstrap.h"
#include "smart/status.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/sockio.h"
#include "wire/proto.h"

struct smart__boot {
	int fd;
	_Atomic int broken;	/* read by the keeper (smart__boot_fd) while
				 * QP-connect threads may set it */
	int timeout_ms;
	const struct smart__log *lg;
	uint32_t next_req;
	int need_fd;
	uint8_t token[SMART_PROTO_TOKEN_LEN];
	char sock[SMART_PROTO_SOCK_MAX + 1];
	size_t sock_len;
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
		smart__err(b->lg, "blade speaks protocol version %u, we speak "
			   "%d: %s", e.version, SMART_PROTO_VERSION, e.msg);
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

static int send_hello(struct smart__boot *b, const char *transport,
		      const void *secret, size_t secret_len, int64_t deadline)
{
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION,
				       .secret = secret,
				       .secret_len = secret_len };
	size_t n;
	int rc;

	strcpy(h.transport, transport);
	rc = smart__proto_enc_hello(&h, b->buf, sizeof(b->buf), &n);
	if (!rc)
		rc = smart__sock_send_all(b->fd, b->buf, n, NULL, 0, deadline);
	explicit_bzero(b->buf, sizeof(b->buf));
	return rc;
}

static int take_welcome(struct smart__boot *b, const struct smart_proto_hdr *h,
			struct smart__boot_welcome *out)
{
	struct smart_proto_welcome w;

	if (smart__proto_dec_welcome(b->buf + SMART_PROTO_HDR_LEN, h->len, &w))
		return SMART_EPROTO;
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
	memcpy(b->token, w.token, sizeof(b->token));
	memcpy(b->sock, w.sock, w.sock_len + 1);
	b->sock_len = w.sock_len;
	explicit_bzero(&w, sizeof(w));
	return 0;
}

static int handshake(struct smart__boot *b, const char *transport,
		     const void *secret, size_t secret_len,
		     struct smart__boot_welcome *welcome)
{
	int64_t deadline = smart__now_ms() + b->timeout_ms;
	struct smart_proto_hdr h;
	int rc, src;

	/* A blade that refuses at once may reset our HELLO: read anyway, its
	 * ERROR explains why. */
	src = send_hello(b, transport, secret, secret_len, deadline);
	rc = read_frame(b, deadline, &h);
	if (rc)
		return src ? src : rc;
	if (h.type == SMART_PROTO_ERROR)
		return blade_error(b, &h);
	if (h.type != SMART_PROTO_WELCOME) {
		b->broken = 1;
		return SMART_EPROTO;
	}
	return take_welcome(b, &h, welcome);
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
	    secret_len > SMART_PROTO_SECRET_MAX || (secret_len && !secret) ||
	    timeout_ms <= 0 || !out || !welcome)
		return SMART_EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return SMART_ENOMEM;
	b->lg = lg;
	b->timeout_ms = timeout_ms;
	rc = tcp_connect(hostport, smart__now_ms() + timeout_ms, &b->fd);
	if (rc) {
		smart__warn(lg, "cannot reach blade %s: %s", hostport,
			    smart_strerror(rc));
		free(b);
		return rc;
	}
	rc = handshake(b, transport, secret, secret_len, welcome);
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

/* Receive the status byte and, when it is 0, exactly one descriptor. */
static int recv_fd(int fd, int64_t deadline, int *fd_out)
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
	if (rc) {
		if (got >= 0)
			close(got);
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
	rc = smart__sock_send_all(fd, b->token, sizeof(b->token), NULL, 0,
				  deadline);
	if (!rc)
		rc = recv_fd(fd, deadline, fd_out);
	close(fd);
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

/* Wait for the QP_ACCEPT answering req; an ERROR ends the session. */
static int await_accept(struct smart__boot *b, uint32_t req, int64_t deadline,
			struct smart_proto_qp_accept *a)
{
	struct smart_proto_hdr h;
	int rc = read_frame(b, deadline, &h);

	if (rc)
		return rc;
	if (h.type == SMART_PROTO_ERROR)
		return blade_error(b, &h);
	if (h.type != SMART_PROTO_QP_ACCEPT ||
	    smart__proto_dec_qp_accept(b->buf + SMART_PROTO_HDR_LEN, h.len,
				       a) || a->req_id != req) {
		b->broken = 1;
		return SMART_EPROTO;
	}
	return 0;
}

int smart__boot_qp_connect(struct smart__boot *b, const void *blob,
			   size_t len, void *peer_blob, size_t *peer_len,
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
	c.req_id = ++b->next_req;
	memcpy(c.blob, blob, len);
	c.blob_len = len;
	rc = smart__proto_enc_qp_connect(&c, f, sizeof(f), &n);
	if (rc)
		return rc;
	deadline = smart__now_ms() + b->timeout_ms;
	rc = send_frame(b, f, n, deadline);
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
	uint8_t f[SMART_PROTO_HDR_LEN + 4];
	size_t n;

	if (!b)
		return SMART_EINVAL;
	if (smart__proto_enc_qp_close(responder_id, f, sizeof(f), &n))
		return SMART_EINVAL;
	return send_frame(b, f, n, smart__now_ms() + b->timeout_ms);
}

static void boot_end(struct smart__boot *b, int bye)
{
	uint8_t f[SMART_PROTO_HDR_LEN];
	size_t n;

	if (!b)
		return;
	/* Best effort and never blocking: the blade also cleans up on EOF. */
	if (bye && !b->broken && !smart__proto_enc_bye(f, sizeof(f), &n) &&
	    send(b->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		smart__dbg(b->lg, "bye: not sent");
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
