/*
 * Connection setup served as it arrives (docs/rpc.md §2 "When
 * handshakes are served"): a listening endpoint answers a handshake's
 * frames between its 1-ms ticks, and a flood of dialers costs each poll
 * a bounded amount of handshake work.
 *
 * A tick-free window: an endpoint's first poll is a tick, and the next
 * one comes RPC_TICK_NS (1 ms) of its clock after that poll began, so
 * whatever a fresh listener answers within 0.9 ms of the start of its
 * first poll (by this thread's clock, observed after the answer) it
 * answered between ticks.  Each round takes a fresh listener; a round
 * whose window passed before anything was answered (this process stopped
 * meanwhile) proves nothing and another is made.
 *
 *  - between_ticks: a raw dialer sends a HELLO; it must be answered
 *    within the window.  Old code answered handshakes only at ticks:
 *    none of its rounds ever did.
 *  - flood_bounded: 8 raw dialers connect and send their HELLOs at once;
 *    a poll between ticks answers at most PEER_HS_BATCH (4) of them, the
 *    others at the next looks (mutant RPC_HS_UNBOUNDED: all 8 at once).
 *  - ahead_bounded: a listener without a QP cache makes its side of a
 *    connection at the poll after it answers a HELLO (rpc.c
 *    smart__rpc_ahead_make), but 8 HELLOs (no AUTH: they need no
 *    secret) make it one, not 8 (mutant RPC_AHEAD_UNBOUNDED), and it
 *    goes at a tick once no handshake is left.
 *  - passed_fd_stall (shm): a dialer without the secret passes, with its
 *    HELLO, a TCP socket whose unsent bytes its peer never takes and
 *    whose SO_LINGER is 3 s, drops its own copy and stops.  The listener
 *    holds the last reference: a plain close() of it waits for the
 *    linger time inside the endpoint's poll (old code: one poll held
 *    ~3000 ms, the data path and every other handshake with it).  Every
 *    descriptor a peer passed is now closed with its linger turned off
 *    (mutant RPC_FD_LINGER_KEPT).
 *  - evicted_fd_stall (shm): the same socket, sent after the HELLO was
 *    answered and left unread when a newcomer evicts the slot (max_pending
 *    1; the next poll is a tick, which accepts before it reads): old
 *    code closed the handshake socket with the descriptor queued in it,
 *    and the kernel dropped it in the listener's thread (one poll held
 *    ~3 s); now a slot's socket is shut for reading and drained before
 *    it is closed (mutant RPC_CLOSE_UNREAD).
 *
 * Everything runs in this one thread: the raw dialers are sockets, the
 * listener is polled only by smart_rpc_progress here, so what it answered
 * between two polls is exact.  Waits are bounded by wall-clock deadlines
 * (5 s), never used as synchronisation.
 */
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "harness/blade_fixture.h"
#include "harness/raw_peer.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "wire/auth.h"
#include "wire/proto.h"

#define SECRET	  "connect-test-secret-0123456789"
#define ROUNDS	  50
#define FLOOD	  8
#define HS_BATCH  4   /* peer.c PEER_HS_BATCH */
#define WINDOW_MS 0.9 /* of the 1-ms tick (RPC_TICK_NS) */

struct lst {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	char addr[64];
	double window_end; /* test_now_ms(): no tick before this */
};

/* A fresh listener, polled once (its first tick). */
static void lst_open(struct lst *l)
{
	memset(l, 0, sizeof(*l));
	l->ctx = fixture_ctx((const char *[]){ "buf_pool", "4M", NULL });
	CHECK_OK(smart_ctx_set_secret(l->ctx, SECRET, strlen(SECRET)));
	CHECK_OK(smart_worker_create(l->ctx, &l->w));
	/* no QP cache: its first fill (registering the endpoint's first
	 * slab MR) would take the first tick's millisecond */
	CHECK_OK(smart_rpc_create(l->w,
				  &(struct smart_rpc_config){
					  SMART_RPC_CONFIG_INIT,
					  .qp_cache = UINT32_MAX },
				  &l->rpc));
	CHECK_OK(smart_rpc_listen(l->rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(l->rpc, l->addr, sizeof(l->addr)));
	l->window_end = test_now_ms() + WINDOW_MS;
	smart_rpc_progress(l->rpc);
}

static void lst_close(struct lst *l)
{
	CHECK_OK(smart_rpc_destroy(l->rpc));
	CHECK_OK(smart_worker_destroy(l->w));
	smart_ctx_destroy(l->ctx);
}

/* A raw dialer's socket to the listener: its abstract unix name on shm,
 * its TCP address on verbs; reads bounded (raw_timeout). */
static int dial_raw(const struct lst *l)
{
	const char *port = strrchr(l->addr, ':');
	const char *t = getenv("SMART_TEST_TRANSPORT");
	struct sockaddr_storage ss;
	char name[32];
	uint32_t len;
	int fd;

	CHECK(port);
	if (!t || !strcmp(t, "shm")) {
		snprintf(name, sizeof(name), "smart-rpc:%s", port + 1);
		return raw_unix_connect(name, strlen(name));
	}
	CHECK_OK(smart__proto_parse_addr(l->addr, &ss, sizeof(ss), &len));
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK_GE(fd, 0);
	CHECK_EQ(connect(fd, (struct sockaddr *)&ss, len), 0);
	raw_timeout(fd);
	return fd;
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* The listener's CHALLENGE, read whole; its proof must be good. */
static void take_challenge(int fd, struct smart__auth *a, const uint8_t *hello,
			   size_t hlen)
{
	struct smart_proto_challenge c;

	CHECK(raw_challenge(fd, a, hello, hlen, &c));
}

static struct smart__auth auth_new(void)
{
	return (struct smart__auth){
		(const uint8_t *)SECRET, strlen(SECRET), { 0 }, { 0 }
	};
}

/* One HELLO to a fresh listener: 1 when answered in its tick-free
 * window. */
static int hello_round(void)
{
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	struct smart__auth a = auth_new();
	double end = test_now_ms() + 5000;
	struct lst l;
	size_t hlen;
	int fd, in_window;

	lst_open(&l);
	fd = dial_raw(&l);
	hlen = raw_hello(fd, &a, hello);
	while (!readable(fd) && test_now_ms() < end)
		smart_rpc_progress(l.rpc);
	in_window = test_now_ms() < l.window_end;
	take_challenge(fd, &a, hello, hlen);
	close(fd);
	lst_close(&l);
	return in_window;
}

static void test_between_ticks(void)
{
	int between = 0, rounds = 0;

	while (rounds < ROUNDS && between < 5) {
		between += hello_round();
		rounds++;
	}
	printf("  %d of %d HELLOs answered between the listener's ticks\n",
	       between, rounds);
	CHECK_GT(between, 0);
}

struct flood {
	int fd[FLOOD], done[FLOOD];
	struct smart__auth a[FLOOD];
	uint8_t hello[FLOOD][SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t hlen[FLOOD];
};

/* The challenges that came since the last look; how many. */
static int flood_take(struct flood *f)
{
	int n = 0;

	for (int i = 0; i < FLOOD; i++) {
		if (f->done[i] || !readable(f->fd[i]))
			continue;
		take_challenge(f->fd[i], &f->a[i], f->hello[i], f->hlen[i]);
		f->done[i] = 1;
		n++;
	}
	return n;
}

/* FLOOD dialers' HELLOs queued before a fresh listener polls, then polls
 * until every one is answered; the most answered by one poll inside the
 * tick-free window into *most (0: none answered in it). */
static void flood_round(int *most)
{
	struct flood f = { 0 };
	double end = test_now_ms() + 5000;
	int left = FLOOD, n;
	struct lst l;

	lst_open(&l);
	for (int i = 0; i < FLOOD; i++) {
		f.a[i] = auth_new();
		f.fd[i] = dial_raw(&l);
		f.hlen[i] = raw_hello(f.fd[i], &f.a[i], f.hello[i]);
	}
	*most = 0;
	while (left && test_now_ms() < end) {
		smart_rpc_progress(l.rpc);
		n = flood_take(&f);
		left -= n;
		if (test_now_ms() < l.window_end && n > *most)
			*most = n;
	}
	CHECK_EQ(left, 0);
	for (int i = 0; i < FLOOD; i++)
		close(f.fd[i]);
	lst_close(&l);
}

static void test_flood_bounded(void)
{
	int most = 0, worst = 0, rounds = 0, fast = 0;

	while (rounds < ROUNDS && fast < 5) {
		flood_round(&most);
		rounds++;
		fast += most > 0;
		if (most > worst)
			worst = most;
	}
	printf("  %d rounds of %d HELLOs: at most %d answered by one poll "
	       "between ticks (%d rounds answered some between ticks)\n",
	       rounds, FLOOD, worst, fast);
	CHECK_GT(fast, 0);
	CHECK_LE(worst, HS_BATCH);
}

/* The listener's spares made ahead of a PEER_CONNECT. */
static uint32_t aheads(const struct smart_rpc *rpc)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++)
		n += rpc->conns[i] && rpc->conns[i]->spare &&
		     rpc->conns[i]->ahead;
	return n;
}

/* Polls until every HELLO is answered and nothing more is due to be
 * made, then until the dialers' slots are gone (their EOF) and a tick
 * trimmed what was made; bounded by 5 s. */
static void test_ahead_bounded(void)
{
	struct flood f = { 0 };
	double end = test_now_ms() + 5000;
	uint32_t made;
	int left = FLOOD;
	struct lst l;

	lst_open(&l);
	for (int i = 0; i < FLOOD; i++) {
		f.a[i] = auth_new();
		f.fd[i] = dial_raw(&l);
		f.hlen[i] = raw_hello(f.fd[i], &f.a[i], f.hello[i]);
	}
	while ((left || l.rpc->ahead_due) && test_now_ms() < end) {
		smart_rpc_progress(l.rpc);
		left -= flood_take(&f);
	}
	CHECK_EQ(left, 0);
	made = aheads(l.rpc);
	for (int i = 0; i < FLOOD; i++)
		close(f.fd[i]);
	while ((l.rpc->npend || l.rpc->nspare) && test_now_ms() < end)
		smart_rpc_progress(l.rpc);
	printf("  %d HELLOs answered: %u connections made ahead, %u left "
	       "once their slots closed\n",
	       FLOOD, made, l.rpc->nspare);
	CHECK_EQ(made, 1);
	CHECK_EQ(l.rpc->nspare, 0);
	lst_close(&l);
}

#define LINGER_S 3

static void test_passed_fd_stall(void)
{
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION,
				       .transport = "shm" };
	const char *t = getenv("SMART_TEST_TRANSPORT");
	uint8_t f[SMART_PROTO_FRAME_MAX];
	double end, t0, dt, worst = 0;
	int fd, stuck, peer, eof = 0, shut = 0;
	size_t n, got = 0;
	struct lst l;
	long r;

	if (t && strcmp(t, "shm")) {
		printf("  SKIP: descriptors pass only on shm\n");
		return;
	}
	lst_open(&l);
	stuck = raw_stuck_tcp(&peer, LINGER_S);
	fd = dial_raw(&l);
	CHECK_OK(smart__auth_nonce(h.nonce));
	CHECK_OK(smart__proto_enc_hello(&h, f, sizeof(f), &n));
	raw_send_fd(fd, f, n, stuck);
	close(stuck); /* the listener holds the last reference */
	end = test_now_ms() + 10000.0 * LINGER_S;
	/* its CHALLENGE, then this dialer stops (EOF), then until the
	 * listener closed the slot */
	while (!eof && test_now_ms() < end) {
		if (got && !shut)
			shut = !shutdown(fd, SHUT_WR);
		t0 = test_now_ms();
		smart_rpc_progress(l.rpc);
		dt = test_now_ms() - t0;
		worst = dt > worst ? dt : worst;
		while ((r = recv(fd, f, sizeof(f), MSG_DONTWAIT)) > 0)
			got += (size_t)r;
		eof = r == 0;
	}
	printf("  a passed TCP socket with a %d-s linger, dropped by the "
	       "listener: its longest poll %.1f ms (%zu bytes answered)\n",
	       LINGER_S, worst, got);
	CHECK(eof);
	CHECK_GT(got, 0); /* the HELLO was served: the path was taken */
	CHECK_LT(worst, 500.0 * LINGER_S);
	close(fd);
	close(peer);
	lst_close(&l);
}

/* Polls of l until fd reads EOF (at most 30 s); the longest poll, and
 * the bytes fd got into *got. */
static double poll_to_eof(struct lst *l, int fd, size_t *got)
{
	double end = test_now_ms() + 30000, t0, dt, worst = 0;
	uint8_t b[256];
	long r = -1;

	while (r && test_now_ms() < end) {
		t0 = test_now_ms();
		smart_rpc_progress(l->rpc);
		dt = test_now_ms() - t0;
		worst = dt > worst ? dt : worst;
		while ((r = recv(fd, b, sizeof(b), MSG_DONTWAIT)) > 0)
			*got += (size_t)r;
	}
	CHECK_EQ(r, 0);
	return worst;
}

static void test_evicted_fd_stall(void)
{
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	const char *t = getenv("SMART_TEST_TRANSPORT");
	struct smart__auth a = auth_new(), b = auth_new();
	double end = test_now_ms() + 5000, worst, tick;
	int fd, fd2, stuck, peer;
	size_t got = 0;
	struct lst l;

	if (t && strcmp(t, "shm")) {
		printf("  SKIP: descriptors pass only on shm\n");
		return;
	}
	lst_open(&l);
	l.rpc->cfg.max_pending = 1; /* before any slot is taken */
	fd = dial_raw(&l);
	raw_hello(fd, &a, hello);
	while (!readable(fd) && test_now_ms() < end)
		smart_rpc_progress(l.rpc);
	CHECK(readable(fd)); /* its CHALLENGE: the slot is this one's */
	stuck = raw_stuck_tcp(&peer, LINGER_S);
	raw_send_fd(fd, "x", 1, stuck);
	close(stuck);
	fd2 = dial_raw(&l);
	raw_hello(fd2, &b, hello);
	/* no poll for a tick's time: the next is a tick, accepting fd2
	 * (evicting fd's slot) before reading any slot */
	tick = test_now_ms() + 2 * WINDOW_MS;
	while (test_now_ms() < tick)
		;
	worst = poll_to_eof(&l, fd, &got);
	printf("  a 3-s lingering socket queued in an evicted slot: the "
	       "listener's longest poll %.1f ms (%zu bytes answered)\n",
	       worst, got);
	CHECK_GT(got, 0);
	CHECK_GE(l.rpc->past.handshakes_refused, 1); /* evicted */
	CHECK_LT(worst, 500.0 * LINGER_S);
	close(fd);
	close(fd2);
	close(peer);
	lst_close(&l);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "between_ticks", test_between_ticks },
				 { "flood_bounded", test_flood_bounded },
				 { "ahead_bounded", test_ahead_bounded },
				 { "passed_fd_stall", test_passed_fd_stall },
				 { "evicted_fd_stall", test_evicted_fd_stall },
				 { NULL, NULL },
			 });
}
