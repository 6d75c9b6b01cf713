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
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "core/bootstrap.h"
#include "smart/status.h"
#include "util/compiler.h"
#include "util/log.h"
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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for events on fd until the deadline: 0, SMART_ETIMEDOUT, ECONN. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int rc;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return SMART_ETIMEDOUT;
		rc = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (rc > 0)
			return 0;	/* errors surface in the next call */
		if (rc < 0 && errno != EINTR)
			return SMART_ECONN;
	}
}

static int send_all(int fd, const void *buf, size_t len, int64_t deadline)
{
	const uint8_t *p = buf;
	ssize_t w;
	int rc;

	while (len) {
		w = send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return SMART_ECONN;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

static int recv_exact(int fd, void *buf, size_t len, int64_t deadline)
{
	uint8_t *p = buf;
	ssize_t r;
	int rc;

	while (len) {
		r = recv(fd, p, len, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return SMART_ECONN;
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

/* Read one frame into b->buf; the payload starts at b->buf + 12. */
static int read_frame(struct smart__boot *b, int64_t deadline,
		      struct smart_proto_hdr *h)
{
	int rc = recv_exact(b->fd, b->buf, SMART_PROTO_HDR_LEN, deadline);

	if (!rc)
		rc = smart__proto_hdr_check(b->buf, SMART_PROTO_HDR_LEN, h);
	if (!rc)
		rc = recv_exact(b->fd, b->buf + SMART_PROTO_HDR_LEN, h->len,
				deadline);
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
	socklen_t el = sizeof(int);
	int fd, err = 0, one = 1, rc;

	if (smart__proto_parse_addr(hostport, &ss, sizeof(ss), &len))
		return SMART_EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return SMART_ESYS;
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		close(fd);
		return SMART_ECONN;
	}
	rc = wait_fd(fd, POLLOUT, deadline);
	if (!rc && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err))
		rc = SMART_ECONN;
	if (rc) {
		close(fd);
		return rc;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd_out = fd;
	return 0;
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
		rc = send_all(b->fd, b->buf, n, deadline);
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
	int64_t deadline = now_ms() + b->timeout_ms;
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
	rc = tcp_connect(hostport, now_ms() + timeout_ms, &b->fd);
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
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	memcpy(un.sun_path + 1, b->sock, b->sock_len);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  b->sock_len);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return SMART_ESYS;
	/* Unix stream connects complete at once or fail (EAGAIN: backlog
	 * full); nothing to wait for. */
	if (connect(fd, (struct sockaddr *)&un, len)) {
		close(fd);
		return SMART_ECONN;
	}
	(void)deadline;
	*fd_out = fd;
	return 0;
}

/* Receive the status byte and, when it is 0, exactly one descriptor. */
static int recv_fd(int fd, int64_t deadline, int *fd_out)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} c;
	uint8_t st;
	struct iovec iov = { &st, 1 };
	struct msghdr mh;
	struct cmsghdr *cm;
	int got = -1, rc;
	ssize_t r;

	for (;;) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (r >= 0 || (errno != EAGAIN && errno != EINTR))
			break;
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc)
			return rc;
	}
	if (r <= 0)
		return SMART_ECONN;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t nfd;
		int fds[4];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfd > SMART_ARRAY_SIZE(fds))
			nfd = SMART_ARRAY_SIZE(fds);
		memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
		/* Keep the first descriptor; a well-behaved blade sends one. */
		for (size_t i = 0; i < nfd; i++) {
			if (got < 0)
				got = fds[i];
			else
				close(fds[i]);
		}
	}
	rc = st == 0 ? 0 : -(int)st;
	if (rc && !smart__proto_status_ok(rc))
		rc = SMART_EPROTO;
	if (!rc && (got < 0 || (mh.msg_flags & MSG_CTRUNC)))
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
	deadline = now_ms() + b->timeout_ms;
	rc = unix_connect(b, deadline, &fd);
	if (rc)
		return rc;
	rc = send_all(fd, b->token, sizeof(b->token), deadline);
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
	rc = send_all(b->fd, f, n, deadline);
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
	deadline = now_ms() + b->timeout_ms;
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
	return send_frame(b, f, n, now_ms() + b->timeout_ms);
}

void smart__boot_close(struct smart__boot *b)
{
	uint8_t f[SMART_PROTO_HDR_LEN];
	size_t n;

	if (!b)
		return;
	/* Best effort and never blocking: the blade also cleans up on EOF. */
	if (!b->broken && !smart__proto_enc_bye(f, sizeof(f), &n) &&
	    send(b->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		smart__dbg(b->lg, "bye: not sent");
	close(b->fd);
	explicit_bzero(b, sizeof(*b));
	free(b);
}

int smart__boot_fd(const struct smart__boot *b)
{
	return b && !b->broken ? b->fd : -1;
}
