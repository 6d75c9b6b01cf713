/*
 * Blocking-with-a-deadline socket I/O for control paths (sockio.h).
 *
 * Invariant: a descriptor received with data is either handed to the
 * caller or closed before the function returns; none leaks, whatever the
 * peer sends (extra descriptors, several messages' worth).
 */
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "smart/status.h"
#include "util/clock.h"
#include "util/mutant.h"
#include "util/sockio.h"

static int smart__sock_wait(int fd, short events, int64_t deadline);

int64_t smart__now_ms(void)
{
	return (int64_t)smart__mono_ms();
}

static int64_t now_ns(void)
{
	return (int64_t)smart__mono_ns();
}

/* With idle: look at the socket, then idle->fn, until the socket is ready
 * or the deadline passes.  An answer expected within microseconds (a
 * handshake's) is looked for again at once during the first
 * SMART_SOCK_SPIN_NS of the wait (a nap, or sched_yield under load, costs
 * tens of microseconds to milliseconds: measured); after that, a look
 * after which idle->fn found nothing waits on the socket itself for up
 * to SMART_SOCK_NAP_NS (ppoll), woken at once by its input. */
static int sock_wait_w(int fd, short events, int64_t deadline,
		       const struct smart__sock_idle *idle)
{
	const struct timespec zero = { 0, 0 }, nap = { 0, SMART_SOCK_NAP_NS };
	struct pollfd p = { .fd = fd, .events = events };
	int64_t spin = now_ns() + SMART_SOCK_SPIN_NS;
	int rc, busy = 1;

	if (!idle)
		return smart__sock_wait(fd, events, deadline);
	for (;;) {
		rc = ppoll(&p, 1, busy ? &zero : &nap, NULL);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return SMART_ECONN;
		if (smart__now_ms() >= deadline)
			return SMART_ETIMEDOUT;
		busy = idle->fn(idle->arg);
		if (!busy && now_ns() < spin)
			busy = 1;
	}
}

/* Wait for events (POLLIN, POLLOUT) on fd until the deadline. */
static int smart__sock_wait(int fd, short events, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t left;
	int rc;

	for (;;) {
		left = deadline - smart__now_ms();
		if (left <= 0)
			return SMART_ETIMEDOUT;
		rc = poll(&p, 1, (int)(left > 60000 ? 60000 : left));
		if (rc > 0)
			return 0; /* errors surface in the next call */
		if (rc < 0 && errno != EINTR)
			return SMART_ECONN;
	}
}

long smart__sock_send_some(int fd, const void *p, size_t len, const int *fds,
			   int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SMART_SOCK_FDS)];
		struct cmsghdr align;
	} c;
	struct iovec iov = { (void *)(uintptr_t)p, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (nfds <= 0)
		return send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (nfds > SMART_SOCK_FDS) {
		errno = EINVAL;
		return -1;
	}
	memset(&c, 0, sizeof(c));
	mh.msg_control = c.buf;
	mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	return sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int smart__sock_send_all(int fd, const void *buf, size_t len, const int *fds,
			 int nfds, int64_t deadline)
{
	return smart__sock_send_all_w(fd, buf, len, fds, nfds, deadline, NULL);
}

int smart__sock_send_all_w(int fd, const void *buf, size_t len, const int *fds,
			   int nfds, int64_t deadline,
			   const struct smart__sock_idle *idle)
{
	const uint8_t *p = buf;
	ssize_t w;
	int rc;

	while (len) {
		w = smart__sock_send_some(fd, p, len, fds, nfds);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			nfds = 0; /* they went with the first byte */
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return SMART_ECONN;
		rc = sock_wait_w(fd, POLLOUT, deadline, idle);
		if (rc)
			return rc;
	}
	return 0;
}

void smart__sock_unlinger(int fd)
{
	struct linger off = { 0, 0 };

	/* ENOTSOCK and the like: nothing to turn off */
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, sizeof(off));
}

/* How deep and how many descriptors a drop takes out of unix sockets
 * passed to us: the kernel refuses to pass a unix socket nested deeper
 * than 4 (af_unix's MAX_RECURSION_LEVEL), and a sender's descriptors in
 * flight are bounded by its RLIMIT_NOFILE (1024 by default). */
#define SOCK_DROP_DEPTH	 5
#define SOCK_DROP_BUDGET 4096

static void sock_drop(int fd, int depth, int *budget);

static int sock_is_unix(int fd, int *type)
{
	socklen_t l = sizeof(int);
	int dom;

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) || dom != AF_UNIX)
		return 0;
	l = sizeof(int);
	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, type, &l);
}

/* Take what a unix socket holds, dropping each descriptor it carries.
 * Shut for reading first: its peer's sends then fail, so the queue only
 * shrinks.  A stream ends at its EOF (0); datagrams may be empty, so
 * those end when nothing is left (EAGAIN); a seqpacket socket's empty
 * messages and its EOF both read 0, so it ends at the budget (a hostile
 * peer's, never ours: wake sockets are datagrams, handshakes streams). */
static void sock_empty(int fd, int type, int depth, int *budget)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 253)];
		struct cmsghdr align;
	} c;
	char b[512];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t r;

	shutdown(fd, SHUT_RD);
	while (*budget > 0) {
		mh = (struct msghdr){ .msg_iov = &iov,
				      .msg_iovlen = 1,
				      .msg_control = c.buf,
				      .msg_controllen = sizeof(c.buf) };
		r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r == 0 && type == SOCK_STREAM))
			return;
		(*budget)--;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			if (cm->cmsg_level != SOL_SOCKET ||
			    cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < n; i++) {
				int d;

				memcpy(&d, CMSG_DATA(cm) + i * sizeof(int),
				       sizeof(d));
				(*budget)--;
				sock_drop(d, depth + 1, budget);
			}
		}
	}
}

/* The linger off; a unix socket emptied first, since what is queued in
 * it would be dropped by the kernel at our close, in our thread, each
 * descriptor's linger with it (a socket in a socket, to the depth the
 * kernel allows). */
static void sock_drop(int fd, int depth, int *budget)
{
	int type;

	smart__sock_unlinger(fd);
	if (!SMART_M_SOCK_DROP_NO_DRAIN && depth < SOCK_DROP_DEPTH &&
	    sock_is_unix(fd, &type))
		sock_empty(fd, type, depth, budget);
	close(fd);
}

void smart__sock_fd_drop(int fd)
{
	int budget = SOCK_DROP_BUDGET;

	if (fd >= 0)
		sock_drop(fd, 0, &budget);
}

/* Put d into the first free (-1) of the nfds slots; 0 when none is free
 * (d dropped). */
static int keep_fd(int *fds, int nfds, int d)
{
	for (int i = 0; i < nfds; i++)
		if (fds[i] < 0) {
			fds[i] = d;
			return 1;
		}
	smart__sock_fd_drop(d);
	return 0;
}

/* Take the descriptors of a received message's SCM_RIGHTS into the free
 * slots of fds[0..nfds), closing any that do not fit (*extra set, as for a
 * cut-off control message); returns how many came. */
static int smart__sock_take_fds(void *msghdr, int *fds, int nfds, int *extra)
{
	struct msghdr *mh = msghdr;
	struct cmsghdr *cm;
	int n = 0;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t nfd, i;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			int d;

			memcpy(&d, CMSG_DATA(cm) + i * sizeof(int), sizeof(d));
			if (!keep_fd(fds, nfds, d))
				*extra = 1;
			n++;
		}
	}
	if (mh->msg_flags & MSG_CTRUNC)
		*extra = 1;
	return n;
}

long smart__sock_recv_some(int fd, void *p, size_t len, int *fds, int nfds,
			   int *extra)
{
	/* room for all a message can carry (the kernel's SCM_MAX_FD, 253):
	 * what does not fit the kernel drops itself, and its last close
	 * (a lingering socket's) would then run in our thread unchecked */
	union {
		char buf[CMSG_SPACE(sizeof(int) * 253)];
		struct cmsghdr align;
	} c;
	struct iovec iov = { p, len };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = c.buf,
			     .msg_controllen = sizeof(c.buf) };
	ssize_t r;

	r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (r < 0)
		return r;
	smart__sock_take_fds(&mh, fds, nfds, extra);
	return r;
}

int smart__sock_recv_exact(int fd, void *buf, size_t len, int *fds, int nfds,
			   int64_t deadline)
{
	return smart__sock_recv_exact_w(fd, buf, len, fds, nfds, deadline,
					NULL);
}

int smart__sock_recv_exact_w(int fd, void *buf, size_t len, int *fds, int nfds,
			     int64_t deadline,
			     const struct smart__sock_idle *idle)
{
	uint8_t *p = buf;
	int extra = 0, rc;
	ssize_t r;

	while (len) {
		/* nfds 0 too: a descriptor that comes is ours to drop */
		r = smart__sock_recv_some(fd, p, len, fds, nfds, &extra);
		if (extra)
			return SMART_EPROTO;
		if (r > 0) {
			p += r;
			len -= (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			return SMART_ECONN;
		rc = sock_wait_w(fd, POLLIN, deadline, idle);
		if (rc)
			return rc;
	}
	return 0;
}

int smart__sock_connect(const void *addr, uint32_t addr_len, int64_t deadline,
			int *fd_out)
{
	return smart__sock_connect_w(addr, addr_len, deadline, NULL, fd_out);
}

int smart__sock_connect_w(const void *addr, uint32_t addr_len, int64_t deadline,
			  const struct smart__sock_idle *idle, int *fd_out)
{
	const struct sockaddr *sa = addr;
	socklen_t el = sizeof(int);
	int fd, err = 0, one = 1, rc;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return SMART_ESYS;
	/* a unix socket's connect completes at once: then nothing to wait
	 * for, nor an error to read */
	rc = connect(fd, sa, addr_len) ? errno : 0;
	if (rc == EINPROGRESS) {
		rc = sock_wait_w(fd, POLLOUT, deadline, idle);
		if (!rc &&
		    (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) || err))
			rc = SMART_ECONN;
	} else if (rc) {
		rc = SMART_ECONN;
	}
	if (rc) {
		close(fd);
		return rc;
	}
	if (sa->sa_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fd_out = fd;
	return 0;
}

int smart__sock_listen(const void *addr, uint32_t addr_len, int backlog,
		       int *fd_out, void *bound)
{
	const struct sockaddr *sa = addr;
	socklen_t bl = sizeof(struct sockaddr_storage);
	int fd, one = 1, err;

	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return SMART_ESYS;
	if ((sa->sa_family != AF_UNIX &&
	     setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) ||
	    bind(fd, sa, addr_len) || (backlog && listen(fd, backlog)) ||
	    (bound && getsockname(fd, bound, &bl))) {
		err = errno;
		close(fd);
		errno = err;
		return err == EADDRINUSE ? SMART_EEXIST : SMART_ESYS;
	}
	*fd_out = fd;
	return 0;
}

uint32_t smart__sock_abstract(const char *name, void *sun)
{
	struct sockaddr_un *un = sun;
	size_t n = strlen(name);

	if (n + 1 > sizeof(un->sun_path))
		return 0;
	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + 1, name, n);
	return (uint32_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

void smart__sock_addr_text(const void *ss, char *buf, size_t len)
{
	const struct sockaddr_storage *st = ss;
	char h[INET6_ADDRSTRLEN] = "?";

	if (st->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = ss;

		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(buf, len, "[%s]:%u", h, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = ss;

		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		snprintf(buf, len, "%s:%u", h, ntohs(a->sin_port));
	}
}
