/*
 * The blade's control thread: one poll() loop over the wake-up eventfd, the
 * TCP listener, the unix (fd-passing) listener, every client session and
 * every pending fd request.
 *
 * Invariants:
 *  - Every socket is non-blocking and every send uses MSG_DONTWAIT, so no
 *    client can stall the loop; a peer that proves no secret (TCP: HELLO,
 *    AUTH) or presents no fd request (unix) within auth_timeout_ms is
 *    dropped, an authenticated client whose replies stay unread for
 *    hs_timeout_ms too.
 *  - A new connection is never refused for lack of room: it evicts the
 *    oldest unauthenticated session (or pending fd request) instead, so
 *    idle peers without the secret cannot lock real clients out, and the
 *    blade's fds stay bounded (blade_int.h).
 *  - Slot 0..2 of the pollfd array are the eventfd and the two listeners;
 *    sessions and fd requests follow in array order.  Sessions and fd
 *    requests are only removed (compacted) at the end of an iteration, so
 *    indices stay valid while events are dispatched; an evicted one stays
 *    until then with its fd closed (-1) and its state SESS_DEAD.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "blade/blade_int.h"
#include "smart/status.h"
#include "util/mutant.h"
#include "util/sockio.h"

#define ACCEPT_PAUSE_MS 100

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int sess_events(const struct blade_session *s)
{
	int ev = 0;

	if (s->out_len)
		ev |= POLLOUT;
	if (s->state == SESS_CLOSING)
		return s->out_len ? ev : POLLIN;
	/* Back-pressure: read only when a whole reply still fits. */
	if (s->in_len < BLADE_IN_CAP &&
	    BLADE_OUT_CAP - s->out_len >= BLADE_REPLY_MAX)
		ev |= POLLIN;
	return ev;
}

static int build(struct smart_blade *b, uint64_t now)
{
	struct pollfd *p = b->pfd;
	int n = 3;

	p[0] = (struct pollfd){ .fd = b->wakefd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = now >= b->accept_pause ? b->lfd : -1,
				.events = POLLIN };
	p[2] = (struct pollfd){ .fd = now >= b->accept_pause ? b->ufd : -1,
				.events = POLLIN };
	for (int i = 0; i < b->nsess; i++, n++)
		p[n] = (struct pollfd){ .fd = b->sess[i]->fd,
					.events = (short)sess_events(
						b->sess[i]) };
	for (int i = 0; i < b->nfdreq; i++, n++)
		p[n] = (struct pollfd){ .fd = b->fdreq[i].fd,
					.events = POLLIN };
	return n;
}

/* Closing: half-close once the ERROR is out, so the client sees EOF at
 * once, while unread input is still drained (a close with unread input
 * would reset the connection and could destroy the ERROR in flight). */
static void half_close(struct blade_session *s)
{
	if (s->state == SESS_CLOSING && !s->out_len && !s->wr_shut) {
		shutdown(s->fd, SHUT_WR);
		s->wr_shut = 1;
	}
}

/* Write what is pending; on a hard error the session dies. */
static void flush(struct smart_blade *b, struct blade_session *s, uint64_t now)
{
	size_t before = s->out_len;
	ssize_t w;

	while (s->out_off < s->out_len) {
		w = send(s->fd, s->out + s->out_off, s->out_len - s->out_off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			s->state = SESS_DEAD;
			return;
		}
		s->out_off += (size_t)w;
	}
	memmove(s->out, s->out + s->out_off, s->out_len - s->out_off);
	s->out_len -= s->out_off;
	s->out_off = 0;
	if (!s->out_len)
		s->stall = 0;
	else if (!s->stall || s->out_len < before)
		s->stall = now;
	half_close(s);
}

static void drain(struct smart_blade *b, struct blade_session *s)
{
	uint8_t junk[4096];
	ssize_t r;

	if (s->out_len)
		return;
	half_close(s);
	r = recv(s->fd, junk, sizeof(junk), MSG_DONTWAIT);
	if (r > 0)
		s->discarded += (size_t)r;
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR) ||
	    s->discarded > BLADE_DISCARD_MAX)
		s->state = SESS_DEAD;
}

static void sess_read(struct smart_blade *b, struct blade_session *s)
{
	int was_authed = s->authed;
	ssize_t r = recv(s->fd, s->in + s->in_len, BLADE_IN_CAP - s->in_len,
			 MSG_DONTWAIT);

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		/* EOF or reset: the client is gone with its responders. */
		smart__dbg(&b->log, "session %s: closed by peer", s->peer);
		s->state = SESS_DEAD;
		return;
	}
	if (r > 0) {
		s->in_len += (size_t)r;
		s->no_room = b->nauth >= b->max_clients;
		smart__blade_sess_process(b, s);
		if (s->authed && !was_authed) {
			b->nunauth--;
			b->nauth++;
		}
	}
}

static void sess_io(struct smart_blade *b, struct blade_session *s, short rev,
		    uint64_t now)
{
	if (rev & POLLOUT)
		flush(b, s, now);
	if (s->state == SESS_DEAD || !(rev & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (s->state == SESS_CLOSING) {
		drain(b, s);
		return;
	}
	if (BLADE_OUT_CAP - s->out_len >= BLADE_REPLY_MAX &&
	    s->in_len < BLADE_IN_CAP)
		sess_read(b, s);
	else if (rev & (POLLHUP | POLLERR))
		s->state = SESS_DEAD;
	/* Replies usually fit in the socket buffer: send them now. */
	if (s->state != SESS_DEAD && s->out_len)
		flush(b, s, now);
}

/* Close a session's socket now, leaving the class it was counted in. */
static void sess_close_fd(struct smart_blade *b, struct blade_session *s)
{
	if (s->fd < 0)
		return;
	close(s->fd);
	s->fd = -1;
	if (s->authed)
		b->nauth--;
	else
		b->nunauth--;
}

/*
 * The unauthenticated table is full: the oldest entry goes, told why when
 * it is still waiting for a HELLO (a closing one has its ERROR queued
 * already).  Oldest first because a real client says HELLO at once: it can
 * only lose its place to max_unauth connections arriving after it.
 */
static void evict_session(struct smart_blade *b)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	struct blade_session *s;
	size_t n;

	for (int i = 0; i < b->nsess; i++) {
		s = b->sess[i];
		if (s->authed || s->fd < 0)
			continue;
		if ((s->state == SESS_HELLO || s->state == SESS_AUTH) &&
		    !smart__proto_enc_error(SMART_EBUSY,
					    "evicted: too many "
					    "connections without a hello",
					    f, sizeof(f), &n) &&
		    send(s->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			smart__dbg(&b->log, "evict: %s", strerror(errno));
		smart__dbg(&b->log, "session %s: evicted", s->peer);
		sess_close_fd(b, s);
		s->state = SESS_DEAD;
		count(&b->n_evicted);
		return;
	}
}

static int accept_one(struct smart_blade *b, int lfd, uint64_t now)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
	    errno == ENOMEM) {
		/* The listener stays readable: pause it instead of spinning. */
		smart__warn(&b->log, "accept: %s", strerror(errno));
		b->accept_pause = now + ACCEPT_PAUSE_MS;
	}
	return -1;
}

static void accept_tcp(struct smart_blade *b, uint64_t now)
{
	struct blade_session *s;
	int fd, one = 1;

	for (int i = 0; i < BLADE_ACCEPT_BATCH; i++) {
		fd = accept_one(b, b->lfd, now);
		if (fd < 0)
			return;
		count(&b->n_accepted);
		if (b->nunauth >= b->max_unauth && SMART_M_BOOT_NO_EVICT) {
			close(fd);
			continue;
		}
		if (b->nunauth >= b->max_unauth)
			evict_session(b);
		s = smart__blade_sess_new(b, fd);
		if (!s) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		b->sess[b->nsess++] = s;
		b->nunauth++;
	}
}

/* Answer with one status byte (negated SMART_E*); when good, the fd with
 * it and our proof over that fd behind it (tag), in one send: 33 bytes
 * fit any socket buffer. */
static void fd_reply(struct smart_blade *b, int fd, int status,
		     const uint8_t *tag)
{
	uint8_t r[1 + SMART_PROTO_TAG_LEN] = { (uint8_t)-status };

	if (!status)
		memcpy(r + 1, tag, SMART_PROTO_TAG_LEN);
	if (smart__sock_send_some(fd, r, status ? 1 : sizeof(r), &b->mr->fd,
				  status ? 0 : 1) < 0)
		smart__info(&b->log, "fd reply: %s", strerror(errno));
	explicit_bzero(r, sizeof(r));
}

static void fdreq_close(struct smart_blade *b, struct blade_fdreq *q)
{
	if (q->fd < 0)
		return;
	/* what it holds unread goes first (sockio.h) */
	if (SMART_M_BLADE_FDREQ_FDS_DROPPED)
		close(q->fd);
	else
		smart__sock_fd_drop(q->fd);
	q->fd = -1;
	explicit_bzero(q->got, sizeof(q->got));
	b->nfdlive--;
}

/* Full: the oldest pending request goes, for the reason sessions do. */
static void evict_fdreq(struct smart_blade *b)
{
	for (int i = 0; i < b->nfdreq; i++) {
		if (b->fdreq[i].fd < 0)
			continue;
		fd_reply(b, b->fdreq[i].fd, SMART_EBUSY, NULL);
		fdreq_close(b, &b->fdreq[i]);
		count(&b->n_evicted);
		return;
	}
}

static void accept_unix(struct smart_blade *b, uint64_t now)
{
	int fd;

	for (int i = 0; i < BLADE_ACCEPT_BATCH; i++) {
		fd = accept_one(b, b->ufd, now);
		if (fd < 0)
			return;
		if (b->nfdlive >= BLADE_MAX_FDREQ)
			evict_fdreq(b);
		b->fdreq[b->nfdreq++] = (struct blade_fdreq){
			.fd = fd,
			.deadline = now + (uint64_t)b->auth_timeout_ms,
		};
		b->nfdlive++;
	}
}

/* Returns 1 when the request is finished (its fd is then closed).  A
 * request carries no descriptor: one that comes is refused, taken with
 * room for all a message can carry and dropped with its linger off (a
 * recv(2) without room has the kernel drop it, in this thread). */
static int fdreq_io(struct smart_blade *b, struct blade_fdreq *q)
{
	uint8_t tag[SMART_PROTO_TAG_LEN];
	int fds[1] = { -1 }, extra = 0;
	long r;
	int rc;

	if (SMART_M_BLADE_FDREQ_FDS_DROPPED)
		r = recv(q->fd, q->got + q->n, sizeof(q->got) - q->n,
			 MSG_DONTWAIT);
	else
		r = smart__sock_recv_some(q->fd, q->got + q->n,
					  sizeof(q->got) - q->n, fds, 1,
					  &extra);
	if (fds[0] >= 0 || extra) {
		smart__sock_fd_drop(fds[0]);
		return 1;
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return 1;
	q->n += (size_t)r;
	if (q->n < sizeof(q->got))
		return 0;
	rc = smart__blade_token_take(b, q->got, tag);
	if (rc)
		smart__info(&b->log, "fd request with an unknown token");
	fd_reply(b, q->fd, rc, tag);
	return 1;
}

static void expire(struct smart_blade *b, uint64_t now)
{
	for (int i = 0; i < b->nsess; i++) {
		struct blade_session *s = b->sess[i];

		if ((s->state == SESS_HELLO || s->state == SESS_AUTH) &&
		    now >= s->deadline) {
			count(&b->n_timeouts);
			smart__info(&b->log,
				    "session %s: no hello within "
				    "the auth deadline",
				    s->peer);
			smart__blade_sess_refuse(b, s, SMART_ETIMEDOUT,
						 "no hello within the auth "
						 "deadline");
			flush(b, s, now);
		} else if (s->state == SESS_CLOSING && now >= s->deadline) {
			s->state = SESS_DEAD;
		} else if (s->state == SESS_READY && s->stall &&
			   now - s->stall >= (uint64_t)b->hs_timeout_ms) {
			count(&b->n_timeouts);
			smart__info(&b->log,
				    "session %s: replies unread, "
				    "dropped",
				    s->peer);
			s->state = SESS_DEAD;
		}
	}
	for (int i = 0; i < b->nfdreq; i++)
		if (now >= b->fdreq[i].deadline)
			fdreq_close(b, &b->fdreq[i]);
}

static void reap(struct smart_blade *b)
{
	int k = 0;

	for (int i = 0; i < b->nsess; i++) {
		if (b->sess[i]->state == SESS_DEAD) {
			sess_close_fd(b, b->sess[i]);
			smart__blade_sess_free(b, b->sess[i]);
		} else {
			b->sess[k++] = b->sess[i];
		}
	}
	b->nsess = k;
	k = 0;
	for (int i = 0; i < b->nfdreq; i++)
		if (b->fdreq[i].fd >= 0)
			b->fdreq[k++] = b->fdreq[i];
	b->nfdreq = k;
	atomic_store_explicit(&b->n_active, (uint64_t)b->nauth,
			      memory_order_relaxed);
	atomic_store_explicit(&b->n_pending, (uint64_t)b->nunauth,
			      memory_order_relaxed);
	atomic_store_explicit(&b->n_pending_fd, (uint64_t)b->nfdlive,
			      memory_order_relaxed);
}

/* Milliseconds until the nearest deadline, at most one second. */
static int next_timeout(const struct smart_blade *b, uint64_t now)
{
	uint64_t next = now + 1000, stall = (uint64_t)b->hs_timeout_ms;

	for (int i = 0; i < b->nsess; i++) {
		const struct blade_session *s = b->sess[i];

		if (s->deadline && s->deadline < next)
			next = s->deadline;
		if (s->stall && s->stall + stall < next)
			next = s->stall + stall;
	}
	for (int i = 0; i < b->nfdreq; i++)
		if (b->fdreq[i].fd >= 0 && b->fdreq[i].deadline < next)
			next = b->fdreq[i].deadline;
	if (b->accept_pause > now && b->accept_pause < next)
		next = b->accept_pause;
	return next > now ? (int)(next - now) : 0;
}

static void dispatch(struct smart_blade *b, int nsess, int nfdreq, uint64_t now)
{
	struct pollfd *p = b->pfd + 3;

	for (int i = 0; i < nsess; i++)
		if (p[i].revents)
			sess_io(b, b->sess[i], p[i].revents, now);
	p += nsess;
	for (int i = 0; i < nfdreq; i++)
		if (p[i].revents && fdreq_io(b, &b->fdreq[i]))
			fdreq_close(b, &b->fdreq[i]);
	if (b->pfd[1].revents)
		accept_tcp(b, now);
	if (b->pfd[2].revents)
		accept_unix(b, now);
}

void *smart__blade_ctl_main(void *arg)
{
	struct smart_blade *b = arg;
	uint64_t now = smart__blade_now_ms();
	int n, nsess, nfdreq;

	for (;;) {
		nsess = b->nsess;
		nfdreq = b->nfdreq;
		n = build(b, now);
		if (poll(b->pfd, (nfds_t)n, next_timeout(b, now)) < 0 &&
		    errno != EINTR) {
			smart__err(&b->log, "poll: %s", strerror(errno));
			break;
		}
		if (b->pfd[0].revents)
			break;
		now = smart__blade_now_ms();
		dispatch(b, nsess, nfdreq, now);
		expire(b, now);
		reap(b);
	}
	return NULL;
}
