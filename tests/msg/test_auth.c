/*
 * Handshake authentication attacked (docs/protocol.md "Authentication",
 * docs/rpc.md §2): the secret never crosses a socket, for the blade
 * bootstrap and for messaging peers alike.
 *
 *  - squatter: a process binds a peer's abstract name "smart-rpc:<port>"
 *    first.  The dialer must refuse it (SMART_EACCES) having sent it
 *    nothing but a HELLO (no secret byte, no proof, no QP, no
 *    descriptor); what it got, replayed to the genuine listener, is
 *    refused.
 *  - squatter_fd: a squatter's CHALLENGE comes with a TCP socket whose
 *    SO_LINGER is 3 s and whose FIN cannot leave (its last reference
 *    then the dialer's).  The dial must end by its deadline (1 s): old
 *    code read the CHALLENGE with a plain recv, the kernel dropped the
 *    descriptor in the dialer's thread and its close waited ~3 s for the
 *    linger; now a descriptor with a CHALLENGE is refused (SMART_EPROTO)
 *    and closed with its linger off (mutant RPC_FD_LINGER_KEPT).
 *  - fake_blade: the same against a fake TCP blade and smart_ctx_connect;
 *    the transcript replayed to a real blade is refused.
 *  - reflection: a dialer without the secret sends the listener's own
 *    proof back as its AUTH (peer and blade): refused.  relay: our dial
 *    relayed back to our own listener: refused.
 *  - splice: a relay forwarding every byte but passing its own copies of
 *    the dialer's descriptors: the listener must refuse them (the PEER
 *    frames' tags cover their descriptors).
 *  - wrong_secret: refused both ways (the dialer refuses the listener's
 *    proof and tells it; a dialer that proves with another key is
 *    refused), peer and blade.
 *  - old_version: a version-2 HELLO gets ERROR(EVERSION) saying so (peer
 *    and blade); a dialer answered by an old listener fails with
 *    SMART_EVERSION.
 *  - dial_sends (not about the secret; the fakes are here): a dial sends
 *    its AUTH and PEER_CONNECT in one send (the descriptors come with the
 *    AUTH's bytes) and yields the CPU while it waits for the listener
 *    (mutant RPC_DIAL_SPINS: no yield).
 *  - accept_tag: a listener with the secret whose PEER_ACCEPT is not
 *    tagged with the session's proof (a man in the middle's change): the
 *    dialer refuses it before looking at what it names.
 *  - session_tag: after a blade's WELCOME, every frame either way is tagged
 *    with its type and sequence number: a QP_CONNECT with a wrong tag, or
 *    a good one replayed, is refused by the blade; a QP_ACCEPT with a
 *    wrong tag (from a fake blade that knows the secret: a man in the
 *    middle's change) is refused by the client.
 *  - other_uid (shm, as root): a peer of another uid (65534) is refused
 *    both ways, and accepted once cfg.allow_uid names it.
 *  - rotation: the secret rotated between a dialer's HELLO and its AUTH:
 *    the listener checks the AUTH with the secret as it is now, never
 *    with the rotated one's freed memory (an AUTH proven with what took
 *    that memory was accepted).
 *  - close_race (not about the secret; the listener thread is here): a
 *    dialer's CLOSE waits unread in the listener's queue when the
 *    listener's endpoint is destroyed; the destroy says its own CLOSE,
 *    finds the dialer's while it polls, and must free that connection
 *    once (it used to be freed twice: SIGSEGV or a double free).
 *
 * The genuine listener runs in a thread of its own (an endpoint belongs to
 * one thread); the fakes are raw sockets in threads.  Every read is bounded
 * (SO_RCVTIMEO 5 s), and every fake ends on its peer's EOF or at a frame
 * it was not meant to get, never on a timer.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/raw_peer.h"
#include "harness/sched.h"
#include "harness/test.h"
#include "runtime/bootstrap.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "util/compiler.h"
#include "util/sockio.h"
#include "wire/auth.h"
#include "wire/proto.h"

#define SECRET	"auth-test-secret-0123456789"
#define WRONG	"auth-test-wrong-secret-98765"
#define GOT_MAX 65536

static int on_shm(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	return !t || !strcmp(t, "shm");
}

/* ---- a genuine listening endpoint, in its own thread ------------------- */

struct listener {
	pthread_t th;
	struct smart_rpc_config cfg;
	char addr[64];
	_Atomic int ready, stop, want, pause, paused;
	struct smart_rpc_stats st;
};

static void *listener_main(void *arg)
{
	struct listener *l = arg;
	smart_ctx_t *ctx = fixture_ctx(
		(const char *[]){ "buf_pool", "4M", NULL });
	smart_worker_t *w;
	smart_rpc_t *rpc;

	CHECK_OK(smart_ctx_set_secret(ctx, SECRET, strlen(SECRET)));
	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &l->cfg, &rpc));
	CHECK_OK(smart_rpc_listen(rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(rpc, l->addr, sizeof(l->addr)));
	atomic_store(&l->ready, 1);
	while (!atomic_load(&l->stop)) {
		if (atomic_load(&l->pause)) { /* not a poll till stopped */
			atomic_store(&l->paused, 1);
			sched_yield();
			continue;
		}
		smart_rpc_progress(rpc);
		if (atomic_load(&l->want)) {
			smart_rpc_stats(rpc, &l->st);
			atomic_store(&l->want, 0);
		}
		sched_yield();
	}
	CHECK_OK(smart_rpc_destroy(rpc));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	return NULL;
}

static void listener_start(struct listener *l, const struct smart_rpc_config *c)
{
	memset(l, 0, sizeof(*l));
	smart_rpc_config_init(&l->cfg);
	if (c)
		l->cfg = *c;
	CHECK_OK(pthread_create(&l->th, NULL, listener_main, l));
	for (int i = 0; i < 5000 && !atomic_load(&l->ready); i++)
		sleep_ms(1);
	CHECK(atomic_load(&l->ready));
}

/* The listener's counters as of now (it copies them between polls). */
static struct smart_rpc_stats listener_stats(struct listener *l)
{
	atomic_store(&l->want, 1);
	for (int i = 0; i < 5000 && atomic_load(&l->want); i++)
		sleep_ms(1);
	CHECK(!atomic_load(&l->want));
	return l->st;
}

static void listener_stop(struct listener *l)
{
	atomic_store(&l->stop, 1);
	CHECK_OK(pthread_join(l->th, NULL));
}

static uint16_t port_of(const char *addr)
{
	return (uint16_t)atoi(strrchr(addr, ':') + 1);
}

/* A raw connection to an endpoint's listener as a dialer makes it. */
static int raw_peer_connect(const char *addr)
{
	char name[32];

	snprintf(name, sizeof(name), "smart-rpc:%u", port_of(addr));
	return raw_unix_connect(name, strlen(name));
}

/* ---- the dialing side, in the main thread ------------------------------ */

struct ep {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
};

static void ep_open(struct ep *e, const char *secret,
		    const struct smart_rpc_config *cfg)
{
	e->ctx = fixture_ctx((const char *[]){ "buf_pool", "4M", NULL });
	CHECK_OK(smart_ctx_set_secret(e->ctx, secret, strlen(secret)));
	CHECK_OK(smart_worker_create(e->ctx, &e->w));
	CHECK_OK(smart_rpc_create(e->w, cfg, &e->rpc));
}

static void ep_close(struct ep *e)
{
	CHECK_OK(smart_rpc_destroy(e->rpc));
	CHECK_OK(smart_worker_destroy(e->w));
	CHECK_OK(smart_ctx_destroy(e->ctx));
}

/* An unused port number: the TCP port is held while the test runs, so
 * no genuine endpoint of this host takes it meanwhile. */
static int free_port(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK_GE(fd, 0);
	CHECK_OK(bind(fd, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(getsockname(fd, (struct sockaddr *)&a, &len));
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- fakes: a squatter, a fake blade, a relay -------------------------- */

enum fake_mode {
	FAKE_NO_SECRET, /* answers a HELLO with a made-up CHALLENGE */
	FAKE_OLD,	/* an old listener: ERROR(EVERSION), version 2 */
	FAKE_BAD_TAG,	/* knows the secret; its PEER_ACCEPT's tag is wrong */
	FAKE_RELAY,	/* forwards both ways to fwd_fd */
	FAKE_SPLICE,	/* FAKE_RELAY passing descriptors, the dialer's
			 * replaced by copies of its own */
	FAKE_MUTE,	/* knows the secret, reads frame by frame and
			 * answers only the HELLO */
	FAKE_LINGER,	/* FAKE_NO_SECRET, its CHALLENGE with a lingering
			 * TCP socket (raw_stuck_tcp) */
};

struct fake {
	int lfd, fwd_fd, mode;
	pthread_t th;
	/* what the dialer sent it */
	uint8_t got[GOT_MAX];
	size_t n;
	int nfds;	       /* descriptors received (FAKE_SPLICE:
				 * replaced) */
	int kept[8], nkept;    /* FAKE_SPLICE: its ends of the wake
				 * sockets it passed */
	int splice_back;       /* FAKE_SPLICE: replace the listener's
				 * descriptors, not the dialer's */
	int types[32], ntypes; /* frame types received, in order */
	int auth_fds;	       /* FAKE_MUTE: descriptors that came with the
				* AUTH frame's own bytes */
	smart_ctx_t *watch;    /* FAKE_MUTE: the dialer's, whose yields it
				* waits for (smart_stats_*: any thread) */
	/* FAKE_BAD_TAG: the session */
	struct smart__auth a;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t hlen;
};

static void fake_send_frame(int fd, const uint8_t *f, size_t n)
{
	(void)!send(fd, f, n, MSG_NOSIGNAL);
}

static void fake_challenge(struct fake *k, int fd, const uint8_t *pl,
			   size_t len)
{
	struct smart_proto_challenge c;
	struct smart_proto_hello h;
	uint8_t f[128];
	size_t n;

	CHECK_OK(smart__auth_nonce(c.nonce));
	CHECK_OK(smart__auth_nonce(c.proof)); /* random: no secret */
	if (k->mode == FAKE_BAD_TAG || k->mode == FAKE_MUTE) {
		CHECK_OK(smart__proto_dec_hello(pl, len, &h));
		k->a = (struct smart__auth){
			(const uint8_t *)SECRET, strlen(SECRET), { 0 }, { 0 }
		};
		memcpy(k->a.nd, h.nonce, sizeof(k->a.nd));
		memcpy(k->a.nl, c.nonce, sizeof(k->a.nl));
		memcpy(k->hello, pl, len);
		k->hlen = len;
		smart__auth_tag(&k->a, SMART_AUTH_L_CHALLENGE, pl, len,
				c.proof);
	}
	CHECK_OK(smart__proto_enc_challenge(&c, f, sizeof(f), &n));
	if (k->mode == FAKE_LINGER) {
		int stuck = raw_stuck_tcp(&k->kept[k->nkept++], 3);

		raw_send_fd(fd, f, n, stuck);
		close(stuck); /* the dialer holds the last reference */
		k->nfds = -1; /* sent one */
		return;
	}
	fake_send_frame(fd, f, n);
}

/* An old listener's ERROR: the frame of version 2 (same layout). */
static void fake_old(int fd)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	size_t n;

	CHECK_OK(smart__proto_enc_error(SMART_EVERSION,
					"protocol version "
					"not supported",
					f, sizeof(f), &n));
	f[SMART_PROTO_HDR_LEN + 4] = 2;
	f[SMART_PROTO_HDR_LEN + 5] = 0;
	fake_send_frame(fd, f, n);
	shutdown(fd, SHUT_WR);
}

/* A PEER_ACCEPT as plausible as can be, but tagged with a wrong key. */
static void fake_accept(struct fake *k, int fd)
{
	struct smart_proto_peer m = {
		.id = 1, .window = 64, .max_msg = 4160, .blob_len = 8
	};
	struct smart__auth wrong = k->a;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX];
	size_t n;

	wrong.key = (const uint8_t *)WRONG;
	wrong.key_len = strlen(WRONG);
	CHECK_OK(smart__proto_enc_peer(SMART_PROTO_PEER_ACCEPT, &m, f,
				       sizeof(f), &n));
	smart__auth_seal(&wrong, SMART_AUTH_L_PEER, f, n);
	fake_send_frame(fd, f, n);
}

/* Answer one frame; 0 when the fake has heard enough (it then closes). */
static int fake_answer(struct fake *k, int fd, const struct smart_proto_hdr *h,
		       const uint8_t *pl)
{
	if (k->ntypes < (int)SMART_ARRAY_SIZE(k->types))
		k->types[k->ntypes++] = h->type;
	if (h->type == SMART_PROTO_HELLO && k->mode == FAKE_OLD) {
		fake_old(fd);
		return 1;
	}
	if (h->type == SMART_PROTO_HELLO) {
		fake_challenge(k, fd, pl, h->len);
		return 1;
	}
	if (h->type == SMART_PROTO_ERROR)
		return 1; /* the dialer's refusal: its EOF follows */
	if (k->mode == FAKE_BAD_TAG && h->type == SMART_PROTO_AUTH)
		return 1;
	if (k->mode == FAKE_BAD_TAG && h->type == SMART_PROTO_PEER_CONNECT) {
		fake_accept(k, fd);
		return 1;
	}
	return 0; /* anything else was given to a fake: a leak */
}

/* The descriptors a received message carried, closed; how many. */
static int fake_drop_fds(struct msghdr *mh)
{
	int n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		for (size_t i = 0;
		     c->cmsg_type == SCM_RIGHTS &&
		     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		     i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int),
			       sizeof(int));
			close(got);
			n++;
		}
	return n;
}

/* Exactly len bytes into p, *nfds counting the descriptors that came
 * with them; 0 at EOF or error. */
static int fake_read(int fd, uint8_t *p, size_t len, int *nfds)
{
	for (size_t got = 0; got < len;) {
		char cbuf[CMSG_SPACE(8 * sizeof(int))];
		struct iovec iov = { p + got, len - got };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);

		if (r <= 0)
			return 0;
		*nfds += fake_drop_fds(&mh);
		got += (size_t)r;
	}
	return 1;
}

static uint64_t yields_of(smart_ctx_t *ctx)
{
	smart_stats_t s;

	CHECK_OK(smart_stats_snapshot(ctx, &s));
	return s.c[SMART_STAT_YIELDS];
}

/* After the PEER_CONNECT: hang up once the dialer yielded the CPU since
 * y0 (it waits for the PEER_ACCEPT meanwhile), or after 5 s (a dial
 * that never yields: the test fails). */
static void fake_hold(struct fake *k, uint64_t y0)
{
	double end = test_now_ms() + 5000;

	while (yields_of(k->watch) == y0 && test_now_ms() < end)
		sched_yield();
}

/* FAKE_MUTE: frame by frame, noting which frame's bytes brought the
 * descriptors; the HELLO is answered, a PEER_CONNECT held unanswered
 * (fake_hold), then the fake hangs up. */
static void fake_frames(struct fake *k, int fd)
{
	uint64_t y0 = yields_of(k->watch);
	struct smart_proto_hdr h;

	raw_timeout(fd);
	while (k->n + SMART_PROTO_HDR_LEN <= GOT_MAX) {
		uint8_t *f = k->got + k->n;
		int nfds = 0;

		if (!fake_read(fd, f, SMART_PROTO_HDR_LEN, &nfds) ||
		    smart__proto_hdr_check(f, SMART_PROTO_HDR_LEN, &h) ||
		    k->n + SMART_PROTO_HDR_LEN + h.len > GOT_MAX ||
		    !fake_read(fd, f + SMART_PROTO_HDR_LEN, h.len, &nfds))
			return;
		k->n += SMART_PROTO_HDR_LEN + h.len;
		k->nfds += nfds;
		if (h.type == SMART_PROTO_AUTH)
			k->auth_fds = nfds;
		if (k->ntypes < (int)SMART_ARRAY_SIZE(k->types))
			k->types[k->ntypes++] = h.type;
		if (h.type == SMART_PROTO_HELLO)
			fake_challenge(k, fd, f + SMART_PROTO_HDR_LEN, h.len);
		if (h.type == SMART_PROTO_PEER_CONNECT) {
			fake_hold(k, y0);
			return;
		}
	}
}

/* Read what arrives, count its descriptors, answer each whole frame. */
static void fake_serve(struct fake *k, int fd)
{
	size_t done = 0;
	struct smart_proto_hdr h;

	raw_timeout(fd);
	for (;;) {
		char cbuf[CMSG_SPACE(8 * sizeof(int))];
		struct iovec iov = { k->got + k->n, GOT_MAX - k->n };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = cbuf,
				     .msg_controllen = sizeof(cbuf) };
		ssize_t r = k->n < GOT_MAX ?
				    recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) :
				    0;

		if (r <= 0)
			return;
		k->nfds += fake_drop_fds(&mh);
		k->n += (size_t)r;
		while (!smart__proto_hdr_check(k->got + done, k->n - done,
					       &h) &&
		       k->n - done >= SMART_PROTO_HDR_LEN + h.len) {
			if (!fake_answer(k, fd, &h,
					 k->got + done + SMART_PROTO_HDR_LEN))
				return;
			done += SMART_PROTO_HDR_LEN + h.len;
		}
	}
}

/* Copy both ways between a and b until either ends; what a sends is
 * recorded as the dialer's. */
static void fake_relay(struct fake *k, int a, int b)
{
	struct pollfd p[2] = { { .fd = a, .events = POLLIN },
			       { .fd = b, .events = POLLIN } };
	struct smart_proto_hdr h;
	uint8_t buf[4096];
	size_t done = 0;

	while (poll(p, 2, 5000) > 0) {
		int from = p[0].revents ? 0 : 1;
		ssize_t r = recv(p[from].fd, buf, sizeof(buf), 0);

		if (r <= 0 ||
		    send(p[!from].fd, buf, (size_t)r, MSG_NOSIGNAL) != r)
			return;
		if (from || k->n + (size_t)r > GOT_MAX)
			continue;
		memcpy(k->got + k->n, buf, (size_t)r);
		k->n += (size_t)r;
		while (!smart__proto_hdr_check(k->got + done, k->n - done,
					       &h) &&
		       k->n - done >= SMART_PROTO_HDR_LEN + h.len) {
			k->types[k->ntypes++ % 32] = h.type;
			done += SMART_PROTO_HDR_LEN + h.len;
		}
	}
}

/* A copy of descriptor fd of the relay's own: a memfd of the same size,
 * content and seals, or a socket pair of the same type (its other end
 * kept in k). */
static int splice_copy(struct fake *k, int fd)
{
	static uint8_t buf[65536];
	struct stat st;
	int c, sp[2], type = 0, seals;
	socklen_t len = sizeof(type);
	ssize_t r;

	CHECK_OK(fstat(fd, &st));
	if (S_ISSOCK(st.st_mode)) {
		CHECK_OK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len));
		CHECK_OK(socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sp));
		CHECK_LT(k->nkept, (int)SMART_ARRAY_SIZE(k->kept));
		k->kept[k->nkept++] = sp[1];
		return sp[0];
	}
	c = memfd_create("splice", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK_GE(c, 0);
	CHECK_OK(ftruncate(c, st.st_size));
	for (off_t o = 0; o < st.st_size; o += r) {
		r = pread(fd, buf, sizeof(buf), o);
		CHECK_GT(r, 0);
		CHECK_EQ(pwrite(c, buf, (size_t)r, o), r);
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals > 0)
		CHECK_OK(fcntl(c, F_ADD_SEALS, seals));
	return c;
}

/* One read from `from` forwarded to `to` with its descriptors: as they
 * came, or (dialer to listener) replaced by copies of the relay's. */
static ssize_t splice_hop(struct fake *k, int from, int to, int replace)
{
	static uint8_t buf[4096];
	char cbuf[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t r = recvmsg(from, &mh, MSG_CMSG_CLOEXEC);
	struct cmsghdr *c = r > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	int n = 0, fds[8];

	if (r <= 0)
		return r;
	if (c && c->cmsg_type == SCM_RIGHTS) {
		n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		memcpy(fds, CMSG_DATA(c), (size_t)n * sizeof(int));
		for (int i = 0; replace && i < n; i++) {
			int mine = splice_copy(k, fds[i]);

			close(fds[i]);
			fds[i] = mine;
			k->nfds++;
		}
	}
	iov.iov_len = (size_t)r;
	r = smart__sock_send_some(to, buf, (size_t)r, n ? fds : NULL, n);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return r;
}

/* FAKE_SPLICE: relay both ways until either end closes. */
static void fake_splice(struct fake *k, int a, int b)
{
	struct pollfd p[2] = { { .fd = a, .events = POLLIN },
			       { .fd = b, .events = POLLIN } };

	while (poll(p, 2, 5000) > 0) {
		int from = p[0].revents ? 0 : 1;

		if (splice_hop(k, p[from].fd, p[!from].fd,
			       from == k->splice_back) <= 0)
			return;
	}
}

static void *fake_main(void *arg)
{
	struct fake *k = arg;
	int fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);

	CHECK_GE(fd, 0);
	if (k->mode == FAKE_RELAY)
		fake_relay(k, fd, k->fwd_fd);
	else if (k->mode == FAKE_SPLICE)
		fake_splice(k, fd, k->fwd_fd);
	else if (k->mode == FAKE_MUTE)
		fake_frames(k, fd);
	else
		fake_serve(k, fd);
	close(fd);
	return NULL;
}

/* A fake listening at the abstract name of port (a squatter). */
static struct fake *squat_watching(uint16_t port, int mode, smart_ctx_t *watch)
{
	struct fake *k = calloc(1, sizeof(*k));
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	int n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1,
			 "smart-rpc:%u", port);

	CHECK(k != NULL);
	k->mode = mode;
	k->watch = watch;
	k->fwd_fd = -1;
	k->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(k->lfd, 0);
	CHECK_OK(bind(k->lfd, (struct sockaddr *)&un,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				  (size_t)n)));
	CHECK_OK(listen(k->lfd, 4));
	CHECK_OK(pthread_create(&k->th, NULL, fake_main, k));
	return k;
}

static struct fake *squat(uint16_t port, int mode)
{
	return squat_watching(port, mode, NULL);
}

/* A fake blade at 127.0.0.1:*port, served by fn. */
static struct fake *fake_tcp_with(uint16_t *port, void *(*fn)(void *))
{
	struct fake *k = calloc(1, sizeof(*k));
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	CHECK(k != NULL);
	k->mode = FAKE_NO_SECRET;
	k->fwd_fd = -1;
	k->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(k->lfd, 0);
	CHECK_OK(bind(k->lfd, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(listen(k->lfd, 4));
	CHECK_OK(getsockname(k->lfd, (struct sockaddr *)&a, &len));
	*port = ntohs(a.sin_port);
	CHECK_OK(pthread_create(&k->th, NULL, fn, k));
	return k;
}

static struct fake *fake_tcp(uint16_t *port)
{
	return fake_tcp_with(port, fake_main);
}

/* Wait for the fake to finish; what it got stays readable until the
 * test frees it. */
static void fake_end(struct fake *k)
{
	CHECK_OK(pthread_join(k->th, NULL));
	close(k->lfd);
	if (k->fwd_fd >= 0)
		close(k->fwd_fd);
	while (k->nkept)
		close(k->kept[--k->nkept]);
	k->lfd = k->fwd_fd = -1;
}

/* The longest run of the secret's bytes found in what a fake got.  Runs
 * of 3 or fewer happen by chance (random nonces, "proof refused" holds
 * the secret's "re"); 4 or more would be a disclosure (a chance of about
 * 1e-6 per case in a few hundred random bytes). */
#define DISCLOSED 4
static size_t secret_bytes(const struct fake *k)
{
	size_t best = 0, sl = strlen(SECRET);

	for (size_t i = 0; i < k->n; i++)
		for (size_t j = 0; j < sl; j++) {
			size_t m = 0;

			while (i + m < k->n && j + m < sl &&
			       k->got[i + m] == (uint8_t)SECRET[j + m])
				m++;
			if (m > best)
				best = m;
		}
	return best;
}

static int got_type(const struct fake *k, int type)
{
	for (int i = 0; i < k->ntypes; i++)
		if (k->types[i] == type)
			return 1;
	return 0;
}

static void report(const char *who, const struct fake *k)
{
	printf("  %s got %zu bytes in %d frames (HELLO %d, AUTH %d, "
	       "PEER_CONNECT %d), %d descriptors, %zu secret bytes in a row\n",
	       who, k->n, k->ntypes, got_type(k, SMART_PROTO_HELLO),
	       got_type(k, SMART_PROTO_AUTH),
	       got_type(k, SMART_PROTO_PEER_CONNECT), k->nfds, secret_bytes(k));
}

/* Everything a dialer could have told a fake: a HELLO and its refusal. */
static void told_nothing(const struct fake *k)
{
	CHECK_LT(secret_bytes(k), DISCLOSED);
	CHECK_EQ(k->nfds, 0);
	CHECK(!got_type(k, SMART_PROTO_AUTH));
	CHECK(!got_type(k, SMART_PROTO_PEER_CONNECT));
	CHECK_EQ(k->types[0], SMART_PROTO_HELLO);
}

/* Send what a fake got to fd and read the answers to EOF: no frame but
 * CHALLENGE and ERROR may come (nothing is granted). */
static void replay(const struct fake *k, int fd, int granted)
{
	static uint8_t p[SMART_PROTO_MAX_PAYLOAD];
	int t, frames = 0;
	size_t n;

	raw_send(fd, k->got, k->n);
	while ((t = raw_frame(fd, p, sizeof(p), &n)) > 0) {
		frames++;
		CHECK_MSG(t != granted, "the replay was granted (frame %d)", t);
		CHECK(t == SMART_PROTO_CHALLENGE || t == SMART_PROTO_ERROR);
	}
	CHECK_GT(frames, 0);
	close(fd);
}

/* ---- cases -------------------------------------------------------------- */

static void test_squatter(void)
{
	struct listener l;
	struct ep d;
	struct fake *k;
	struct smart_rpc_stats st;
	smart_rpc_conn_t *c = NULL;
	char addr[32];
	uint16_t port;
	int hold;

	if (!on_shm()) {
		printf("  (not shm: abstract names are shm's)\n");
		return;
	}
	hold = free_port(&port);
	k = squat(port, FAKE_NO_SECRET);
	ep_open(&d, SECRET, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ(smart_rpc_connect(d.rpc, addr, &c), SMART_EACCES);
	fake_end(k);
	report("squatter", k);
	told_nothing(k);
	/* what it got buys nothing from the genuine listener */
	listener_start(&l, NULL);
	replay(k, raw_peer_connect(l.addr), SMART_PROTO_PEER_ACCEPT);
	st = listener_stats(&l);
	CHECK_U64_EQ(st.conns_accepted, 0);
	CHECK_GE(st.handshakes_refused, 1);
	/* and the dialer connects to the genuine one (closed after the
	 * listener is gone: see the note at listener_stop) */
	CHECK_OK(smart_rpc_connect(d.rpc, l.addr, &c));
	listener_stop(&l);
	smart_rpc_close(c);
	ep_close(&d);
	close(hold);
	free(k);
}

static smart_blade_t *blade_start(void)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;

	smart_blade_config_init(&cfg);
	cfg.size = 8u << 20;
	cfg.listen = "127.0.0.1:0";
	cfg.hugepages = 0;
	cfg.secret = SECRET;
	cfg.secret_len = strlen(SECRET);
	CHECK_OK(smart_blade_create(&cfg, &b));
	return b;
}

static void test_fake_blade(void)
{
	smart_ctx_t *ctx = fixture_ctx(
		(const char *[]){ "buf_pool", "4M", NULL });
	struct smart_blade_stats bs;
	smart_blade_t *b;
	struct fake *k;
	char addr[32];
	uint16_t port, id;

	k = fake_tcp(&port);
	CHECK_OK(smart_ctx_set_secret(ctx, SECRET, strlen(SECRET)));
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ(smart_ctx_connect(ctx, addr, &id), SMART_EACCES);
	fake_end(k);
	report("fake blade", k);
	told_nothing(k);
	b = blade_start();
	replay(k, raw_connect(b), SMART_PROTO_WELCOME);
	smart_blade_stats(b, &bs);
	CHECK_U64_EQ(bs.authenticated, 0);
	CHECK_OK(smart_ctx_connect(ctx, smart_blade_address(b), &id));
	CHECK_OK(smart_ctx_destroy(ctx));
	smart_blade_destroy(b);
	free(k);
}

/* A dialer without the secret sends the listener's proof back as its
 * own: refused with EACCES, by a peer and by a blade. */
static void reflect(int fd)
{
	struct smart__auth a = {
		(const uint8_t *)WRONG, strlen(WRONG), { 0 }, { 0 }
	};
	struct smart_proto_challenge c;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t hlen = raw_hello(fd, &a, hello);

	CHECK(!raw_challenge(fd, &a, hello, hlen, &c));
	raw_auth(fd, c.proof);
	expect_error(fd, SMART_EACCES);
	close(fd);
}

static void test_reflection(void)
{
	struct listener l;
	smart_blade_t *b = blade_start();
	struct smart_blade_stats bs;

	reflect(raw_connect(b));
	smart_blade_stats(b, &bs);
	CHECK_U64_EQ(bs.authenticated, 0);
	CHECK_U64_EQ(bs.refused, 1);
	smart_blade_destroy(b);
	if (!on_shm())
		return;
	listener_start(&l, NULL);
	reflect(raw_peer_connect(l.addr));
	CHECK_U64_EQ(listener_stats(&l).conns_accepted, 0);
	listener_stop(&l);
}

/* Our dial, relayed by a squatter to our own listener: refused, and the
 * relay saw no proof of ours. */
static void test_relay(void)
{
	struct ep e;
	struct fake *k;
	smart_rpc_conn_t *c = NULL;
	char own[64], addr[32];
	uint16_t port;
	int hold;

	if (!on_shm()) {
		printf("  (not shm: abstract names are shm's)\n");
		return;
	}
	ep_open(&e, SECRET, NULL);
	CHECK_OK(smart_rpc_listen(e.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(e.rpc, own, sizeof(own)));
	hold = free_port(&port);
	k = squat(port, FAKE_RELAY);
	k->fwd_fd = raw_peer_connect(own);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ(smart_rpc_connect(e.rpc, addr, &c), SMART_EACCES);
	fake_end(k); /* the dial's socket closed: the relay ended */
	report("relay", k);
	CHECK(!got_type(k, SMART_PROTO_AUTH));
	CHECK(!got_type(k, SMART_PROTO_PEER_CONNECT));
	ep_close(&e);
	close(hold);
	free(k);
}

/* Lines of our maps naming a memfd "splice" (the relay's copies). */
static int splice_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "/memfd:splice") != NULL;
	fclose(f);
	return n;
}

/*
 * A relay between a genuine dialer and a genuine listener (shm: it holds
 * the dialer's abstract name; its uid must be allowed, as root's is here)
 * forwards every byte, but passes copies of its own in place of the
 * descriptors (staging region, receive segment, wake socket) of the
 * dialer (back = 0) or of the listener (back = 1): the PEER frames' tags
 * must cover them, or the other side maps the relay's memory as its
 * peer's.  Refused: SMART_EACCES, nothing of the relay's mapped.
 */
static void splice_round(int back)
{
	struct listener l;
	struct ep e;
	struct fake *k;
	smart_rpc_conn_t *c = NULL;
	char addr[32];
	uint16_t port;
	int hold, rc, maps;

	listener_start(&l, NULL);
	ep_open(&e, SECRET, NULL);
	hold = free_port(&port);
	k = squat(port, FAKE_SPLICE);
	k->splice_back = back;
	k->fwd_fd = raw_peer_connect(l.addr);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	rc = smart_rpc_connect(e.rpc, addr, &c);
	maps = splice_maps();
	printf("  relay replaced %d descriptors of the %s: dial %s, %d "
	       "mappings of the relay's memory\n",
	       k->nfds, back ? "listener" : "dialer", smart_status_name(rc),
	       maps);
	if (!rc)
		smart_rpc_close(c);
	CHECK_EQ(k->nfds, SMART_SOCK_FDS);
	CHECK_EQ(rc, SMART_EACCES);
	if (!back)
		CHECK_U64_EQ(listener_stats(&l).conns_accepted, 0);
	CHECK_EQ(maps, 0);
	ep_close(&e);
	listener_stop(&l);
	fake_end(k);
	close(hold);
	free(k);
}

static void test_splice(void)
{
	if (!on_shm()) {
		printf("  (not shm: no descriptors pass)\n");
		return;
	}
	splice_round(0);
	splice_round(1);
}

/* A dialer proving with another key: refused. */
static void wrong_auth(int fd)
{
	struct smart__auth a = {
		(const uint8_t *)WRONG, strlen(WRONG), { 0 }, { 0 }
	};
	struct smart_proto_challenge c;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	uint8_t proof[SMART_PROTO_TAG_LEN];
	size_t hlen = raw_hello(fd, &a, hello);

	CHECK(!raw_challenge(fd, &a, hello, hlen, &c));
	smart__auth_tag(&a, SMART_AUTH_D_AUTH, hello, hlen, proof);
	raw_auth(fd, proof);
	expect_error(fd, SMART_EACCES);
	close(fd);
}

static void test_wrong_secret(void)
{
	smart_ctx_t *ctx = fixture_ctx(
		(const char *[]){ "buf_pool", "4M", NULL });
	smart_blade_t *b = blade_start();
	struct smart_blade_stats bs;
	struct smart_rpc_stats st;
	struct listener l;
	smart_rpc_conn_t *c = NULL;
	struct ep d;
	uint16_t id;

	/* blade: the client refuses its proof (and says so), and a client
	 * proving with another key is refused */
	CHECK_OK(smart_ctx_set_secret(ctx, WRONG, strlen(WRONG)));
	CHECK_EQ(smart_ctx_connect(ctx, smart_blade_address(b), &id),
		 SMART_EACCES);
	smart_blade_stats(b, &bs);
	CHECK_U64_EQ(bs.refused, 1);
	wrong_auth(raw_connect(b));
	smart_blade_stats(b, &bs);
	CHECK_U64_EQ(bs.refused, 2);
	CHECK_U64_EQ(bs.authenticated, 0);
	CHECK_OK(smart_ctx_destroy(ctx));
	smart_blade_destroy(b);
	if (!on_shm())
		return;
	listener_start(&l, NULL);
	ep_open(&d, WRONG, NULL);
	CHECK_EQ(smart_rpc_connect(d.rpc, l.addr, &c), SMART_EACCES);
	st = listener_stats(&l);
	CHECK_U64_EQ(st.handshakes_refused, 1);
	wrong_auth(raw_peer_connect(l.addr));
	st = listener_stats(&l);
	CHECK_U64_EQ(st.handshakes_refused, 2);
	CHECK_U64_EQ(st.conns_accepted, 0);
	ep_close(&d);
	listener_stop(&l);
}

/* A version-2 HELLO, which carried the secret: ERROR(EVERSION) naming our
 * version, and a reason that says what to do. */
static void old_hello(int fd)
{
	static uint8_t p[SMART_PROTO_MAX_PAYLOAD];
	uint8_t f[64] = { 'S', 'M', 'R', 'T', SMART_PROTO_HELLO, 0, 0, 0 };
	size_t tl = 3, sl = strlen(SECRET), plen = 8 + tl + sl, n;
	struct smart_proto_error e;
	char c;

	f[8] = (uint8_t)plen;
	f[12] = 2; /* version 2 */
	f[14] = (uint8_t)tl;
	f[16] = (uint8_t)sl;
	memcpy(f + 20, "shm", tl);
	memcpy(f + 20 + tl, SECRET, sl);
	raw_send(fd, f, 12 + plen);
	CHECK_EQ(raw_frame(fd, p, sizeof(p), &n), SMART_PROTO_ERROR);
	CHECK_OK(smart__proto_dec_error(p, n, &e));
	CHECK_EQ(e.status, SMART_EVERSION);
	CHECK_EQ(e.version, SMART_PROTO_VERSION);
	CHECK_MSG(strstr(e.msg, "too old"), "reason: %s", e.msg);
	printf("  old HELLO: \"%s\"\n", e.msg);
	CHECK_EQ(recv(fd, &c, 1, 0), 0);
	close(fd);
}

static void test_old_version(void)
{
	smart_blade_t *b = blade_start();
	struct listener l;
	struct fake *k;
	struct ep d;
	smart_rpc_conn_t *c = NULL;
	char addr[32];
	uint16_t port;
	int hold;

	old_hello(raw_connect(b));
	smart_blade_destroy(b);
	if (!on_shm())
		return;
	listener_start(&l, NULL);
	old_hello(raw_peer_connect(l.addr));
	listener_stop(&l);
	/* our HELLO to an old listener: its ERROR, said as such */
	hold = free_port(&port);
	k = squat(port, FAKE_OLD);
	ep_open(&d, SECRET, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ(smart_rpc_connect(d.rpc, addr, &c), SMART_EVERSION);
	fake_end(k);
	ep_close(&d);
	close(hold);
	free(k);
}

static void test_squatter_fd(void)
{
	struct fake *k;
	struct ep d;
	smart_rpc_conn_t *c = NULL;
	char addr[32];
	uint16_t port;
	double t0, ms, late;
	uint64_t w0;
	int hold, rc;

	if (!on_shm()) {
		printf("  (not shm: abstract names are shm's)\n");
		return;
	}
	hold = free_port(&port);
	k = squat(port, FAKE_LINGER);
	ep_open(&d, SECRET,
		&(struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
					    .timeout_ms = 1000 });
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	w0 = sched_wait_all_ns(getpid());
	t0 = test_now_ms();
	rc = smart_rpc_connect(d.rpc, addr, &c);
	ms = test_now_ms() - t0;
	late = sched_waited_ms(w0); /* ours and the fake's threads */
	fake_end(k);
	printf("  a CHALLENGE with a 3-s lingering socket: the dial (timeout "
	       "1000 ms) ended after %.0f ms (threads waited %.0f ms for a "
	       "CPU): %s\n",
	       ms, late, smart_status_name(rc));
	CHECK_EQ(k->nfds, -1); /* the descriptor was sent: the path taken */
	CHECK(rc != 0);
	CHECK(!got_type(k, SMART_PROTO_AUTH));
	CHECK_LT(ms, 1500.0 + late);
	ep_close(&d);
	close(hold);
	free(k);
}

static void test_accept_tag(void)
{
	struct fake *k;
	struct ep d;
	smart_rpc_conn_t *c = NULL;
	char addr[32];
	uint16_t port;
	int hold;

	if (!on_shm()) {
		printf("  (not shm: abstract names are shm's)\n");
		return;
	}
	hold = free_port(&port);
	k = squat(port, FAKE_BAD_TAG);
	ep_open(&d, SECRET, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_EQ(smart_rpc_connect(d.rpc, addr, &c), SMART_EACCES);
	fake_end(k);
	/* it proved the secret: it got our proof and our side */
	CHECK(got_type(k, SMART_PROTO_AUTH));
	CHECK(got_type(k, SMART_PROTO_PEER_CONNECT));
	ep_close(&d);
	close(hold);
	free(k);
}

/* A dial's sends and waits (docs/rpc.md §11): its proof and its side of
 * the connection go in one send (the descriptors come with the AUTH
 * frame's bytes), and its waits for the listener yield the CPU (to a
 * listener sharing it).  A fake with the secret holds the PEER_CONNECT
 * unanswered until the dialer's ctx counts a yield (5 s at most), then
 * hangs up: the dial fails either way, nothing timed. */
static void test_dial_sends(void)
{
	smart_rpc_conn_t *c = NULL;
	smart_stats_t s0, s1;
	uint16_t port;
	char addr[64];
	struct fake *k;
	struct ep d;
	int hold, rc;

	if (!on_shm()) {
		printf("  (not shm: abstract names are shm's)\n");
		return;
	}
	hold = free_port(&port);
	ep_open(&d, SECRET, NULL);
	k = squat_watching(port, FAKE_MUTE, d.ctx);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_OK(smart_stats_snapshot(d.ctx, &s0));
	rc = smart_rpc_connect(d.rpc, addr, &c);
	CHECK_OK(smart_stats_snapshot(d.ctx, &s1));
	fake_end(k);
	printf("  AUTH came with %d of %d descriptors; the dial yielded "
	       "%llu times waiting (then the fake hung up: %s)\n",
	       k->auth_fds, k->nfds,
	       (unsigned long long)(s1.c[SMART_STAT_YIELDS] -
				    s0.c[SMART_STAT_YIELDS]),
	       smart_status_name(rc));
	CHECK_NE(rc, 0);
	CHECK(got_type(k, SMART_PROTO_PEER_CONNECT));
	CHECK_EQ(k->auth_fds, 3);
	CHECK_GT(s1.c[SMART_STAT_YIELDS], s0.c[SMART_STAT_YIELDS]);
	ep_close(&d);
	close(hold);
	free(k);
}

/* Read one frame of type want from fd into p (cap bytes); its length. */
static size_t frame_of(int fd, int want, uint8_t *p, size_t cap)
{
	size_t n;

	CHECK_EQ(raw_frame(fd, p, cap, &n), want);
	return n;
}

/* A tagged QP_CONNECT (seq) on a raw authenticated blade session. */
static void raw_qp_connect(int fd, const struct smart__auth *a, uint64_t seq,
			   int good)
{
	struct smart_proto_qp_connect c = { .req_id = (uint32_t)seq + 1,
					    .blob = "qp-blob",
					    .blob_len = 8 };
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_QPC_MAX];
	size_t n;

	CHECK_OK(smart__proto_enc_qp_connect(&c, f, sizeof(f), &n));
	if (good)
		smart__auth_seal_seq(a, SMART_AUTH_D_SESSION, seq, f, n);
	raw_send(fd, f, n);
}

/* A fake blade that knows the secret: a good handshake and WELCOME, then
 * a QP_ACCEPT tagged with another key. */
static void *fake_blade_main(void *arg)
{
	struct fake *k = arg;
	struct smart_proto_welcome w = { .blade_id = 1,
					 .chunk_shift = 20,
					 .region_size = 8u << 20,
					 .lease_id = 1,
					 .lease_ms = 1000,
					 .blob = "region",
					 .blob_len = 7 };
	struct smart_proto_qp_accept qa = { .blob = "resp", .blob_len = 5 };
	struct smart_proto_qp_connect qc;
	struct smart__auth wrong;
	uint8_t p[SMART_PROTO_MAX_PAYLOAD], f[SMART_PROTO_FRAME_MAX];
	size_t n, len;
	int fd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC);

	CHECK_GE(fd, 0);
	raw_timeout(fd);
	k->mode = FAKE_BAD_TAG;
	n = frame_of(fd, SMART_PROTO_HELLO, p, sizeof(p));
	fake_challenge(k, fd, p, n);
	frame_of(fd, SMART_PROTO_AUTH, p, sizeof(p));
	CHECK_OK(smart__proto_enc_welcome(&w, f, sizeof(f), &len));
	smart__auth_seal(&k->a, SMART_AUTH_L_WELCOME, f, len);
	raw_send(fd, f, len);
	n = frame_of(fd, SMART_PROTO_QP_CONNECT, p, sizeof(p));
	CHECK_OK(smart__proto_dec_qp_connect(p, n, &qc));
	qa.req_id = qc.req_id;
	CHECK_OK(smart__proto_enc_qp_accept(&qa, f, sizeof(f), &len));
	wrong = k->a;
	wrong.key = (const uint8_t *)WRONG;
	wrong.key_len = strlen(WRONG);
	smart__auth_seal_seq(&wrong, SMART_AUTH_L_SESSION, 0, f, len);
	raw_send(fd, f, len);
	while (raw_frame(fd, p, sizeof(p), &n) > 0)
		; /* until the client hangs up */
	close(fd);
	return NULL;
}

static void test_session_tag(void)
{
	smart_blade_t *b = blade_start();
	struct smart_blade_stats bs;
	struct smart__boot_welcome bw;
	struct smart__boot *s;
	struct smart__auth a;
	uint8_t p[SMART_PROTO_MAX_PAYLOAD], peer[SMART_PROTO_BLOB_MAX];
	size_t pl = sizeof(peer);
	uint32_t id;
	struct fake *k;
	char addr[32];
	uint16_t port;
	int fd;

	/* the blade: a wrong tag, then a good frame replayed */
	fd = raw_connect(b);
	raw_authenticate(fd, SECRET, strlen(SECRET), &a);
	frame_of(fd, SMART_PROTO_WELCOME, p, sizeof(p));
	raw_qp_connect(fd, &a, 0, 0);
	expect_error(fd, SMART_EACCES);
	close(fd);
	fd = raw_connect(b);
	raw_authenticate(fd, SECRET, strlen(SECRET), &a);
	frame_of(fd, SMART_PROTO_WELCOME, p, sizeof(p));
	raw_qp_connect(fd, &a, 0, 1);
	frame_of(fd, SMART_PROTO_QP_ACCEPT, p, sizeof(p));
	raw_qp_connect(fd, &a, 0, 1);
	expect_error(fd, SMART_EACCES);
	close(fd);
	smart_blade_stats(b, &bs);
	CHECK_U64_EQ(bs.refused, 2);
	smart_blade_destroy(b);
	/* the client: a QP_ACCEPT not tagged by the blade of the session */
	k = fake_tcp_with(&port, fake_blade_main);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	CHECK_OK(smart__boot_open(addr, "shm", SECRET, strlen(SECRET), 3000,
				  NULL, &s, &bw));
	CHECK_EQ(smart__boot_qp_connect(s, "qp-blob", 8, peer, &pl, &id),
		 SMART_EACCES);
	smart__boot_close(s);
	fake_end(k);
	free(k);
}

/* ---- another uid (root only) ------------------------------------------- */

static void become_nobody(void)
{
	CHECK_OK(setgroups(0, NULL));
	CHECK_OK(setgid(65534));
	CHECK_OK(setuid(65534));
}

/* args: address.  As uid 65534, dial it: exit 0 iff refused EACCES. */
static void child_dialer(char **args)
{
	smart_rpc_conn_t *c = NULL;
	struct ep d;
	int rc;

	become_nobody();
	ep_open(&d, SECRET, NULL);
	rc = smart_rpc_connect(d.rpc, args[0], &c);
	printf("  uid 65534 dialing: %s\n", smart_status_name(rc));
	exit(rc == SMART_EACCES ? 0 : 1);
}

/* args: a pipe's write end.  As uid 65534, listen, write the address to
 * the pipe and serve until its reader closes it. */
static void child_listener(char **args)
{
	struct pollfd p = { .fd = atoi(args[0]), .events = POLLIN };
	struct ep e;
	char addr[64];

	become_nobody();
	ep_open(&e, SECRET, NULL);
	CHECK_OK(smart_rpc_listen(e.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(e.rpc, addr, sizeof(addr)));
	CHECK_EQ(write(p.fd, addr, strlen(addr) + 1),
		 (ssize_t)strlen(addr) + 1);
	while (poll(&p, 1, 0) == 0)
		smart_rpc_progress(e.rpc);
	exit(0);
}

static void test_other_uid(void)
{
	struct smart_rpc_config allow = { SMART_RPC_CONFIG_INIT,
					  .allow_uid = { 65534 } };
	smart_rpc_conn_t *c = NULL;
	struct listener l;
	struct ep d;
	char addr[64], fdtxt[16];
	int pfd[2], st;
	pid_t pid;

	if (!on_shm() || geteuid()) {
		printf("  (not tested: this needs shm, and root to become uid "
		       "65534)\n");
		return;
	}
	/* a dialer of another uid: refused by our listener */
	listener_start(&l, NULL);
	pid = test_spawn("dialer", (const char *[]){ l.addr, NULL });
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st), "uid 65534 not refused");
	CHECK_U64_EQ(listener_stats(&l).conns_accepted, 0);
	CHECK_GE(listener_stats(&l).handshakes_refused, 1);
	listener_stop(&l);
	/* a listener of another uid: refused by our dialer, unless allowed */
	/* only the write end goes to the child: it sees the read end close */
	CHECK_OK(pipe2(pfd, O_CLOEXEC));
	CHECK_OK(fcntl(pfd[1], F_SETFD, 0));
	snprintf(fdtxt, sizeof(fdtxt), "%d", pfd[1]);
	pid = test_spawn("listener", (const char *[]){ fdtxt, NULL });
	close(pfd[1]);
	CHECK_GT(read(pfd[0], addr, sizeof(addr)), 0);
	ep_open(&d, SECRET, NULL);
	CHECK_EQ(smart_rpc_connect(d.rpc, addr, &c), SMART_EACCES);
	ep_close(&d);
	ep_open(&d, SECRET, &allow);
	CHECK_OK(smart_rpc_connect(d.rpc, addr, &c));
	smart_rpc_close(c);
	ep_close(&d);
	close(pfd[0]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
}

/* Poll the endpoint (its listener) until fd has something to read. */
static void pump(smart_rpc_t *rpc, int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	for (int i = 0; i < 5000; i++) {
		smart_rpc_progress(rpc);
		if (poll(&pf, 1, 1) == 1)
			return;
	}
	CHECK_MSG(0, "the listener never answered");
}

/*
 * The secret rotated (smart_ctx_set_secret) between a dialer's HELLO and
 * its AUTH: the listener's handshake must not go on with the old secret's
 * memory, which the rotation wiped and freed.  Here that memory is taken
 * by the next allocation of its size and filled with bytes of ours (any
 * data could land there): an AUTH proven with those bytes, neither the old
 * secret nor the new one, must be refused.  A second AUTH behind it tells
 * which: refused at the first (EACCES) or authenticated (the second is
 * then unexpected, EPROTO).  The block's reuse is glibc's (the thread's
 * last freed block of a size is its next): under ASan the block is
 * quarantined and the stale read happens in libsodium, which ASan does not
 * see, so there this case cannot tell the old code from the new.
 */
static void test_rotation(void)
{
	char forged[sizeof(SECRET)];
	struct smart__auth a = {
		(const uint8_t *)SECRET, strlen(SECRET), { 0 }, { 0 }
	};
	struct smart_proto_challenge c;
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	uint8_t proof[SMART_PROTO_TAG_LEN], p[SMART_PROTO_MAX_PAYLOAD];
	struct smart_proto_error e;
	char own[64], *reuse;
	struct ep l;
	size_t hlen, n;
	int fd;

	if (!on_shm()) {
		printf("  (not shm: the raw dialer uses the abstract name)\n");
		return;
	}
	ep_open(&l, SECRET, NULL);
	CHECK_OK(smart_rpc_listen(l.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(l.rpc, own, sizeof(own)));
	fd = raw_peer_connect(own);
	hlen = raw_hello(fd, &a, hello);
	pump(l.rpc, fd);
	CHECK(raw_challenge(fd, &a, hello, hlen, &c));
	CHECK_OK(smart_ctx_set_secret(l.ctx, WRONG, strlen(WRONG)));
	reuse = malloc(sizeof(SECRET)); /* the old secret's block */
	CHECK(reuse != NULL);
	memset(forged, 'Z', sizeof(forged));
	memcpy(reuse, forged, sizeof(forged));
	a.key = (const uint8_t *)forged;
	smart__auth_tag(&a, SMART_AUTH_D_AUTH, hello, hlen, proof);
	raw_auth(fd, proof);
	raw_auth(fd, proof);
	pump(l.rpc, fd);
	CHECK_EQ(raw_frame(fd, p, sizeof(p), &n), SMART_PROTO_ERROR);
	CHECK_OK(smart__proto_dec_error(p, n, &e));
	printf("  AUTH proven with bytes that reused the rotated secret's "
	       "memory: %s (%s)\n",
	       e.status == SMART_EACCES ? "refused" : "accepted", e.msg);
	CHECK_EQ(e.status, SMART_EACCES);
	close(fd);
	free(reuse);
	ep_close(&l);
}

static void test_close_race(void)
{
	struct listener l;
	struct ep d;
	smart_rpc_conn_t *c;
	uint32_t got = 0;
	char buf[8];

	listener_start(&l, NULL);
	ep_open(&d, SECRET, NULL);
	CHECK_OK(smart_rpc_connect(d.rpc, l.addr, &c));
	CHECK_OK(smart_rpc_call(c, SMART_RPC_OP_PING, "ping", 4, buf,
				sizeof(buf), &got));
	CHECK_EQ(got, 4);
	atomic_store(&l.pause, 1); /* the listener polls no more */
	for (int i = 0; i < 5000 && !atomic_load(&l.paused); i++)
		sleep_ms(1);
	CHECK(atomic_load(&l.paused));
	smart_rpc_close(c); /* its CLOSE waits in the queue */
	listener_stop(&l);  /* the destroy meets it */
	ep_close(&d);
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "dialer", child_dialer },
		{ "listener", child_listener },
		{ NULL, NULL }
	};

	return test_main_children(argc, argv,
				  (struct test_case[]){
					  { "squatter", test_squatter },
					  { "squatter_fd", test_squatter_fd },
					  { "fake_blade", test_fake_blade },
					  { "reflection", test_reflection },
					  { "relay", test_relay },
					  { "splice", test_splice },
					  { "wrong_secret", test_wrong_secret },
					  { "old_version", test_old_version },
					  { "accept_tag", test_accept_tag },
					  { "dial_sends", test_dial_sends },
					  { "session_tag", test_session_tag },
					  { "other_uid", test_other_uid },
					  { "close_race", test_close_race },
					  { "rotation", test_rotation },
					  { NULL, NULL } },
				  children);
}
