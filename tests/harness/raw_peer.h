/*
 * Test helpers that play a bootstrap peer by hand, without the client
 * library: TCP connects to an in-process blade, frame reads, the expected
 * ERROR-then-EOF ending, connects to the blade's abstract unix socket (and
 * its name, found as anyone on the host finds it), and bounded waits on
 * the blade's counters.  Header only; every read is
 * bounded (SO_RCVTIMEO 5 s), so a blade that never answers fails the test
 * instead of hanging it.
 */
#ifndef SMART_TEST_RAW_PEER_H
#define SMART_TEST_RAW_PEER_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/blade.h"
#include "wire/auth.h"
#include "wire/proto.h"

/* Wait (at most 5 s) until the counter selected by field reaches want. */
#define WAIT_STAT(b, field, want)                                              \
	do {                                                                   \
		struct smart_blade_stats st_;                                  \
		for (int i_ = 0; i_ < 500; i_++) {                             \
			smart_blade_stats((b), &st_);                          \
			if (st_.field >= (uint64_t)(want))                     \
				break;                                         \
			sleep_ms(10);                                          \
		}                                                              \
		smart_blade_stats((b), &st_);                                  \
		CHECK_GE(st_.field, (want));                                   \
	} while (0)

static inline void raw_timeout(int fd)
{
	struct timeval tv = { 5, 0 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* A TCP socket whose close() with SO_LINGER linger_s waits: its bytes
 * fill the peer's window (*peer holds the other end, never reading) and
 * its own send buffer, so that its FIN cannot leave.  Passed to a process
 * that then holds its last reference, it stalls that process's close(2)
 * for linger_s unless the linger is turned off first. */
static inline int raw_stuck_tcp(int *peer, int linger_s)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct linger lg = { 1, linger_s };
	socklen_t al = sizeof(a);
	int small = 4096, l, c;
	char buf[16384] = { 0 };

	l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(l, 0);
	CHECK_EQ(bind(l, (struct sockaddr *)&a, al), 0);
	CHECK_EQ(listen(l, 1), 0);
	CHECK_EQ(getsockname(l, (struct sockaddr *)&a, &al), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(c, 0);
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	CHECK_EQ(connect(c, (struct sockaddr *)&a, al), 0);
	*peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	CHECK_GE(*peer, 0);
	close(l);
	setsockopt(*peer, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	CHECK_EQ(fcntl(c, F_SETFL, O_NONBLOCK), 0);
	while (send(c, buf, sizeof(buf), MSG_NOSIGNAL) > 0)
		;
	CHECK_EQ(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
	return c;
}

/* frame[0..n) with one descriptor (SCM_RIGHTS). */
static inline void raw_send_fd(int fd, const void *frame, size_t n, int pass)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)frame, n };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pass, sizeof(pass));
	CHECK_EQ(sendmsg(fd, &mh, MSG_NOSIGNAL), (ssize_t)n);
}

/* A TCP socket with SO_LINGER 3 s; *keep a second descriptor of it, so
 * the test can still read its options after the transport closed its
 * own (a peer passing such a socket with unsent bytes makes a plain
 * close(2) of the last reference wait those 3 s). */
static inline int lingering_tcp(int *keep)
{
	struct linger lg = { 1, 3 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK_GE(fd, 0);
	CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	*keep = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	CHECK_GE(*keep, 0);
	return fd;
}

/* 1 when the socket's linger is still on; closes keep. */
static inline int still_lingers(int keep)
{
	struct linger lg = { 0, 0 };
	socklen_t l = sizeof(lg);

	CHECK_OK(getsockopt(keep, SOL_SOCKET, SO_LINGER, &lg, &l));
	close(keep);
	return lg.l_onoff != 0;
}

/* A blocking TCP connection to the blade, reads bounded by 5 s. */
static inline int raw_connect(const smart_blade_t *b)
{
	struct sockaddr_storage ss;
	uint32_t len;
	int fd;

	CHECK_OK(smart__proto_parse_addr(smart_blade_address(b), &ss,
					 sizeof(ss), &len));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(fd, 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&ss, len), 0);
	raw_timeout(fd);
	return fd;
}

/* A blocking connection to the abstract unix socket name[0..len). */
static inline int raw_unix_connect(const char *name, size_t len)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK_GE(fd, 0);
	CHECK_LT(len, sizeof(un.sun_path));
	memcpy(un.sun_path + 1, name, len);
	CHECK_EQ(connect(fd, (struct sockaddr *)&un,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     1 + len)),
		 0);
	raw_timeout(fd);
	return fd;
}

static inline void raw_send(int fd, const void *p, size_t n)
{
	CHECK_EQ(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read one frame; returns its type, or -1 on EOF/error. */
static inline int raw_frame(int fd, uint8_t *payload, size_t cap, size_t *plen)
{
	uint8_t h[SMART_PROTO_HDR_LEN];
	struct smart_proto_hdr hdr;

	if (recv(fd, h, sizeof(h), MSG_WAITALL) != (ssize_t)sizeof(h))
		return -1;
	CHECK_OK(smart__proto_hdr_check(h, sizeof(h), &hdr));
	CHECK_LE(hdr.len, cap);
	if (hdr.len &&
	    recv(fd, payload, hdr.len, MSG_WAITALL) != (ssize_t)hdr.len)
		return -1;
	*plen = hdr.len;
	return hdr.type;
}

/* Expect an ERROR with status, then EOF. */
static inline void expect_error(int fd, int status)
{
	static uint8_t p[SMART_PROTO_MAX_PAYLOAD];
	struct smart_proto_error e;
	size_t n;
	char c;

	CHECK_EQ(raw_frame(fd, p, sizeof(p), &n), SMART_PROTO_ERROR);
	CHECK_OK(smart__proto_dec_error(p, n, &e));
	CHECK_EQ(e.status, status);
	CHECK_EQ(e.version, SMART_PROTO_VERSION);
	CHECK_EQ(recv(fd, &c, 1, 0), 0);
}

/* Send a HELLO of ours with a fresh nonce (into a->nd); its payload into
 * hello[] (room for SMART_PROTO_HELLO_LEN(15)), its length returned. */
static inline size_t raw_hello(int fd, struct smart__auth *a, uint8_t *hello)
{
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION,
				       .transport = "shm" };
	uint8_t f[SMART_PROTO_FRAME_MAX];
	size_t n;

	CHECK_OK(smart__auth_nonce(a->nd));
	memcpy(h.nonce, a->nd, sizeof(h.nonce));
	CHECK_OK(smart__proto_enc_hello(&h, f, sizeof(f), &n));
	memcpy(hello, f + SMART_PROTO_HDR_LEN, n - SMART_PROTO_HDR_LEN);
	raw_send(fd, f, n);
	return n - SMART_PROTO_HDR_LEN;
}

/* Read the CHALLENGE into *c (a->nl set); 1 when its proof is good. */
static inline int raw_challenge(int fd, struct smart__auth *a,
				const uint8_t *hello, size_t hlen,
				struct smart_proto_challenge *c)
{
	uint8_t p[SMART_PROTO_MAX_PAYLOAD];
	size_t n;

	CHECK_EQ(raw_frame(fd, p, sizeof(p), &n), SMART_PROTO_CHALLENGE);
	CHECK_OK(smart__proto_dec_challenge(p, n, c));
	memcpy(a->nl, c->nonce, sizeof(a->nl));
	return smart__auth_check(a, SMART_AUTH_L_CHALLENGE, hello, hlen,
				 c->proof);
}

/* Send AUTH with this proof. */
static inline void raw_auth(int fd, const uint8_t *proof)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_AUTH_LEN];
	size_t n;

	CHECK_OK(smart__proto_enc_auth(proof, f, sizeof(f), &n));
	raw_send(fd, f, n);
}

/* The whole dialer's side of a handshake with the secret key[0..len):
 * HELLO, the listener's proof checked, AUTH; *a is the session's. */
static inline void raw_authenticate(int fd, const char *key, size_t len,
				    struct smart__auth *a)
{
	struct smart_proto_challenge c;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	uint8_t proof[SMART_PROTO_TAG_LEN];
	size_t hlen;

	*a = (struct smart__auth){ (const uint8_t *)key, len, { 0 }, { 0 } };
	hlen = raw_hello(fd, a, hello);
	CHECK(raw_challenge(fd, a, hello, hlen, &c));
	smart__auth_tag(a, SMART_AUTH_D_AUTH, hello, hlen, proof);
	raw_auth(fd, proof);
}

/* Nothing to read yet and not closed: the blade still holds this peer. */
static inline int raw_still_open(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/* The blade's abstract fd socket, as anyone on the host sees it: the
 * entry "@smart-blade-<pid>-..." of /proc/net/unix (abstract: no file, so
 * no permission guards it).  Its name into name (cap bytes, without the
 * '@'); returns its length. */
static inline size_t raw_blade_unix_name(char *name, size_t cap)
{
	char line[512], prefix[64];
	FILE *f = fopen("/proc/net/unix", "r");
	size_t n = 0;
	char *at;

	CHECK(f != NULL);
	snprintf(prefix, sizeof(prefix), "@smart-blade-%ld-", (long)getpid());
	while (!n && fgets(line, sizeof(line), f)) {
		at = strstr(line, prefix);
		if (!at)
			continue;
		n = strcspn(at + 1, "\n");
		CHECK_LT(n, cap);
		memcpy(name, at + 1, n);
		name[n] = '\0';
	}
	fclose(f);
	CHECK_MSG(n > 0, "no %s socket in /proc/net/unix", prefix);
	return n;
}

#endif
