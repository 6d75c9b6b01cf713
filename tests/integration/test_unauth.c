/*
 * Peers without the secret cannot exhaust a blade (an in-process blade,
 * shm, 127.0.0.1:0): 1000 idle TCP connections plus 1000 idle connections
 * to the fd-passing unix socket (its name found in /proc/net/unix, as an
 * attacker would) leave the blade's descriptors bounded, and a client with
 * the secret is still served in under 1 s; the auth deadline drops a
 * silent peer in about that time, on both sockets, and spares an
 * authenticated client; a full table evicts its oldest entry first.
 *
 * The deadlines are set long where the case is about the caps, so that
 * only eviction, never a timeout, can let the client in.  Waits on the
 * blade's counters are bounded (5 s); the flood's timing is asserted with
 * a wide margin and printed.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "blade/blade_int.h"
#include "runtime/bootstrap.h"
#include "harness/raw_peer.h"
#include "harness/sched.h"
#include "harness/test.h"
#include "smart/smart.h"

#define SECRET	"unauth-test-secret-0123456789"
#define IDLE	1000
#define LONG_MS 30000

static smart_blade_t *blade_with(int max_unauth, int auth_ms, int stall_ms)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;

	smart_blade_config_init(&cfg);
	cfg.size = 4 << 20;
	cfg.listen = "127.0.0.1:0";
	cfg.hugepages = 0;
	cfg.secret = SECRET;
	cfg.secret_len = strlen(SECRET);
	cfg.transport = "shm";
	if (max_unauth)
		cfg.max_unauth = max_unauth;
	cfg.auth_timeout_ms = auth_ms;
	cfg.handshake_timeout_ms = stall_ms;
	CHECK_OK(smart_blade_create(&cfg, &b));
	return b;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the DIR's own fd */
}

/* Room for the idle peers, the blade's own fds and the client's. */
static void raise_nofile(rlim_t want)
{
	struct rlimit rl;

	CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur >= want)
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want)
		test_skip("RLIMIT_NOFILE's hard limit is too low");
	rl.rlim_cur = want;
	CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* n idle TCP peers; paced so that the listen backlog never overflows
 * (a dropped SYN would cost the peer a 1 s retransmit, not the blade). */
static void idle_tcp(smart_blade_t *b, int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		fds[i] = raw_connect(b);
		if ((i + 1) % BLADE_ACCEPT_BATCH == 0)
			WAIT_STAT(b, accepted, i + 1 - BLADE_ACCEPT_BATCH);
	}
	WAIT_STAT(b, accepted, n);
}

static void idle_unix(const char *name, size_t len, int *fds, int n)
{
	for (int i = 0; i < n; i++)
		fds[i] = raw_unix_connect(name, len);
}

static void close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Let the blade take in every idle peer (at most 5 s) before a client
 * comes, so the client meets full tables; checked after the client. */
static void settle(smart_blade_t *b, uint64_t evicted)
{
	struct smart_blade_stats st;

	for (int i = 0; i < 500; i++) {
		smart_blade_stats(b, &st);
		if (st.evicted >= evicted)
			return;
		sleep_ms(10);
	}
}

/* A real client through the public API: the ms smart_ctx_connect (the
 * handshake and the fd fetch) took into *connect_ms, and the ms with
 * smart_ctx_create as well into *total_ms. */
static void serve_client(smart_blade_t *b, smart_ctx_t **ctx,
			 double *connect_ms, double *total_ms)
{
	struct smart_blade_info info;
	smart_opts_t *o;
	uint16_t id;
	double t0 = test_now_ms(), t1;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "transport", "shm"));
	CHECK_OK(smart_opts_set(o, "buf_pool", "4M"));
	CHECK_OK(smart_ctx_create(o, ctx));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_set_secret(*ctx, SECRET, strlen(SECRET)));
	t1 = test_now_ms();
	CHECK_OK(smart_ctx_connect(*ctx, smart_blade_address(b), &id));
	*connect_ms = test_now_ms() - t1;
	*total_ms = test_now_ms() - t0;
	CHECK_OK(smart_ctx_blade_info(*ctx, id, &info));
}

static void test_flood(void)
{
	static int tcp[IDLE], ux[IDLE];
	struct smart_blade_config dflt;
	struct smart_blade_stats st;
	smart_blade_t *b;
	smart_ctx_t *ctx;
	char name[SMART_PROTO_SOCK_MAX + 1];
	size_t len;
	int base, held;
	double ms, total, quiet, quiet_total, late;
	uint64_t w0;

	raise_nofile(3 * IDLE + 1024);
	smart_blade_config_init(&dflt);
	b = blade_with(0, LONG_MS, LONG_MS);
	len = raw_blade_unix_name(name, sizeof(name));
	serve_client(b, &ctx, &quiet, &quiet_total);
	CHECK_OK(smart_ctx_destroy(ctx));
	for (int i = 0;
	     i < 500 && (smart_blade_stats(b, &st), st.active_sessions); i++)
		sleep_ms(10);
	base = count_fds();
	idle_tcp(b, tcp, IDLE);
	idle_unix(name, len, ux, IDLE);
	settle(b, (IDLE - dflt.max_unauth) + (IDLE - BLADE_MAX_FDREQ));
	held = count_fds() - base - 2 * IDLE;
	smart_blade_stats(b, &st);

	w0 = sched_wait_all_ns(getpid());
	serve_client(b, &ctx, &ms, &total);
	late = sched_waited_ms(w0);
	printf("%d idle TCP + %d idle unix connections: the blade holds %d "
	       "fds for them (%llu sessions, %llu fd requests, %llu evicted); "
	       "a client with the secret is served in %.1f ms (connect), "
	       "%.1f ms with smart_ctx_create; with no idle peers %.1f ms, "
	       "%.1f ms\n",
	       IDLE, IDLE, held, (unsigned long long)st.pending_sessions,
	       (unsigned long long)st.pending_fd_requests,
	       (unsigned long long)st.evicted, ms, total, quiet, quiet_total);
	/* plus what this process's threads (the blade's, ours) waited for a
	 * CPU meanwhile: the flood's cost is what is bounded, not the load */
	CHECK_MSG(total < 1000 + late,
		  "served in %.1f ms, want < 1000 + %.1f waited", total, late);
	CHECK_LE(held, dflt.max_unauth + BLADE_MAX_FDREQ);
	CHECK_EQ(st.pending_sessions, dflt.max_unauth);
	CHECK_EQ(st.pending_fd_requests, BLADE_MAX_FDREQ);
	CHECK_EQ(st.evicted,
		 (IDLE - dflt.max_unauth) + (IDLE - BLADE_MAX_FDREQ));
	CHECK(raw_still_open(tcp[IDLE - 1]));
	CHECK(raw_still_open(ux[IDLE - 1]));
	CHECK_OK(smart_ctx_destroy(ctx));
	close_all(tcp, IDLE);
	close_all(ux, IDLE);
	smart_blade_destroy(b);
}

/* Time until the blade ends a peer that sends nothing, from before its
 * connect (t0: a look that comes late only adds): the TCP one reads
 * ERROR(ETIMEDOUT) then EOF, the unix one just EOF. */
static double silent_lifetime(double t0, int fd, int tcp)
{
	char c;

	if (tcp)
		expect_error(fd, SMART_ETIMEDOUT);
	else
		CHECK_EQ(recv(fd, &c, 1, 0), 0);
	close(fd);
	return test_now_ms() - t0;
}

static void test_auth_deadline(void)
{
	enum { AUTH = 400 };
	smart_blade_t *b = blade_with(0, AUTH, LONG_MS);
	struct smart__boot *s;
	struct smart__boot_welcome w;
	uint8_t peer[SMART_TP_BLOB_MAX];
	size_t pl = sizeof(peer);
	char name[SMART_PROTO_SOCK_MAX + 1];
	size_t len = raw_blade_unix_name(name, sizeof(name));
	double tcp_ms, unix_ms, tcp_late, unix_late;
	uint64_t w0 = sched_wait_all_ns(getpid());
	uint32_t id;

	/* the deadline runs from the blade's accept, after the connect: not
	 * before AUTH from before it; not much after, plus what this
	 * process's threads (the blade's) waited for a CPU meanwhile */
	tcp_ms = silent_lifetime(test_now_ms(), raw_connect(b), 1);
	tcp_late = sched_waited_ms(w0);
	w0 = sched_wait_all_ns(getpid());
	unix_ms = silent_lifetime(test_now_ms(), raw_unix_connect(name, len),
				  0);
	unix_late = sched_waited_ms(w0);
	printf("auth deadline %d ms: a silent TCP peer is dropped after "
	       "%.0f ms, a silent unix peer after %.0f ms (threads waited "
	       "%.0f, %.0f ms for a CPU)\n",
	       AUTH, tcp_ms, unix_ms, tcp_late, unix_late);
	CHECK_MSG(tcp_ms > AUTH - 50 && tcp_ms < AUTH + 600 + tcp_late,
		  "tcp %.0f ms", tcp_ms);
	CHECK_MSG(unix_ms > AUTH - 50 && unix_ms < AUTH + 600 + unix_late,
		  "unix %.0f ms", unix_ms);

	/* An authenticated client idle past the deadline keeps its session:
	 * a bad blob is answered (EPROTO), not a dead connection (ECONN). */
	CHECK_OK(smart__boot_open(smart_blade_address(b), "shm", SECRET,
				  strlen(SECRET), 3000, NULL, &s, &w));
	sleep_ms(2 * AUTH);
	CHECK_EQ(smart__boot_qp_connect(s, "garbage!", 8, peer, &pl, &id),
		 SMART_EPROTO);
	smart__boot_close(s);
	smart_blade_destroy(b);
}

/* Descriptors passed to the blade's fd socket by a peer without the
 * secret: with a request's first byte (read, the descriptor with it), and
 * queued in a unix socket passed so, or left unread when the peer goes
 * silent and its deadline ends it.  Each is closed with its SO_LINGER off
 * (a lingering TCP socket's close would hold the blade's control thread
 * for its linger): clock-free, the option read back through a second
 * descriptor.  Old code: the request's recv(2) had no room for
 * descriptors, so the kernel dropped them in the control thread. */
static void test_passed_fd(void)
{
	enum { AUTH = 200 };
	smart_blade_t *b = blade_with(0, AUTH, LONG_MS);
	char name[SMART_PROTO_SOCK_MAX + 1], c;
	size_t len = raw_blade_unix_name(name, sizeof(name));
	int keep[3], u[3], n = 0, sv[2];

	for (int i = 0; i < 3; i++) {
		int t = lingering_tcp(&keep[i]);

		u[i] = raw_unix_connect(name, len);
		if (i == 1) { /* the socket in a unix socket */
			CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC,
					    0, sv));
			raw_send_fd(sv[1], "x", 1, t);
			close(t);
			close(sv[1]);
			t = sv[0];
		}
		if (i < 2)
			raw_send_fd(u[i], "x", 1, t);
		else /* a byte first, the descriptor on a second message */
			raw_send(u[i], "y", 1), raw_send_fd(u[i], "x", 1, t);
		close(t);
	}
	for (int i = 0; i < 3; i++) { /* ended by the deadline: EOF */
		CHECK_EQ(recv(u[i], &c, 1, 0), 0);
		close(u[i]);
	}
	for (int i = 0; i < 3; i++)
		n += still_lingers(keep[i]);
	printf("3 lingering sockets passed to the fd socket: %d closed with "
	       "linger on\n",
	       n);
	CHECK_EQ(n, 0);
	smart_blade_destroy(b);
}

/* Full table (max_unauth 4): each newcomer evicts the oldest, which is
 * told EBUSY; the others are untouched; a real client still gets in. */
static void test_evict_order_tcp(void)
{
	smart_blade_t *b = blade_with(4, LONG_MS, LONG_MS);
	struct smart__boot *s;
	struct smart__boot_welcome w;
	struct smart_blade_stats st;
	int c[6];

	for (int i = 0; i < 4; i++)
		c[i] = raw_connect(b);
	WAIT_STAT(b, pending_sessions, 4);
	for (int k = 4; k < 6; k++) {
		c[k] = raw_connect(b);
		WAIT_STAT(b, evicted, k - 3);
		expect_error(c[k - 4], SMART_EBUSY);
		for (int i = k - 3; i <= k; i++)
			CHECK_MSG(raw_still_open(c[i]),
				  "peer %d of 0..%d "
				  "was dropped",
				  i, k);
	}
	CHECK_OK(smart__boot_open(smart_blade_address(b), "shm", SECRET,
				  strlen(SECRET), 3000, NULL, &s, &w));
	expect_error(c[2], SMART_EBUSY);
	for (int i = 3; i < 6; i++)
		CHECK(raw_still_open(c[i]));
	WAIT_STAT(b, active_sessions, 1);
	smart_blade_stats(b, &st);
	CHECK_EQ(st.pending_sessions, 3);
	CHECK_EQ(st.evicted, 3);
	smart__boot_close(s);
	close_all(c, 6);
	smart_blade_destroy(b);
}

/* The unix socket's table (BLADE_MAX_FDREQ): the oldest pending request
 * is answered EBUSY and closed; a real fetch goes through. */
static void test_evict_order_unix(void)
{
	smart_blade_t *b = blade_with(0, LONG_MS, LONG_MS);
	static int u[BLADE_MAX_FDREQ + 2];
	struct smart__boot *s;
	struct smart__boot_welcome w;
	char name[SMART_PROTO_SOCK_MAX + 1];
	size_t len = raw_blade_unix_name(name, sizeof(name));
	uint8_t status;
	int fd = -1;

	idle_unix(name, len, u, BLADE_MAX_FDREQ);
	WAIT_STAT(b, pending_fd_requests, BLADE_MAX_FDREQ);
	u[BLADE_MAX_FDREQ] = raw_unix_connect(name, len);
	WAIT_STAT(b, evicted, 1);
	CHECK_EQ(recv(u[0], &status, 1, 0), 1);
	CHECK_EQ(status, (uint8_t)-SMART_EBUSY);
	CHECK_EQ(recv(u[0], &status, 1, 0), 0);
	for (int i = 1; i <= BLADE_MAX_FDREQ; i++)
		CHECK_MSG(raw_still_open(u[i]), "request %d was dropped", i);
	CHECK_OK(smart__boot_open(smart_blade_address(b), "shm", SECRET,
				  strlen(SECRET), 3000, NULL, &s, &w));
	CHECK_OK(smart__boot_fetch_fd(s, &fd));
	CHECK_GE(fd, 0);
	close(fd);
	CHECK_EQ(recv(u[1], &status, 1, 0), 1);
	CHECK_EQ(status, (uint8_t)-SMART_EBUSY);
	CHECK(raw_still_open(u[2]));
	smart__boot_close(s);
	close_all(u, BLADE_MAX_FDREQ + 1);
	smart_blade_destroy(b);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "flood", test_flood },
				 { "auth_deadline", test_auth_deadline },
				 { "evict_order_tcp", test_evict_order_tcp },
				 { "evict_order_unix", test_evict_order_unix },
				 { "passed_fd", test_passed_fd },
				 { NULL, NULL } });
}
