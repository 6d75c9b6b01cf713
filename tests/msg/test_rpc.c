/*
 * Messaging (include/smart/rpc.h) between processes: echo calls, errors
 * that say what happened, one-way messages to a slow server (every one
 * delivered once and in order, the window stalling the sender and no
 * receiver-not-ready ever), nested calls, keepalive (a stopped and a
 * killed peer given up, an idle one kept), the shared secret, and hostile
 * peers (garbage handshakes, a malformed message on a live connection,
 * rendezvous descriptors outside the sender's region or with a wrong
 * CRC), and rendezvous messages up to 64 MiB, in order with eager ones.
 *
 * The servers are child processes (test_spawn) on the transport of
 * SMART_TEST_TRANSPORT (shm by default); each writes its listen address to
 * a pipe and serves until asked to exit.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "util/sockio.h"

#define SECRET	    "rpc-test-secret-4711"
#define OP_ECHO	    1
#define OP_SINK	    2 /* one-way: payload starts with a u64 sequence */
#define OP_COUNTS   3 /* reply: struct counts */
#define OP_NESTED   4 /* call OP_ECHO on the server's upstream, reply */
#define OP_POKE	    5 /* one-way: send OP_CUT one-way to the upstream */
#define OP_CUT	    6 /* one-way, served by a client (test_dial_polls) */
#define OP_EXIT	    9
#define FLOOD	    20000
/* The keepalive where it is tested: a bound of 2 s (a loaded CI machine,
 * VMs beside, may leave a process unscheduled long); everywhere else
 * 2 s x 10, far above any stall, so that no test but those sees it. */
#define KA_MS	    200
#define KA_MISSES   10
#define KA_QUIET_MS 2000

struct counts {
	uint64_t sunk, out_of_order, rnr, proto_errors, acks_sent, accepted,
		backlogged, rndv_recv, rndv_held, traced, event_sleeps,
		event_wakes;
};

struct server {
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_rpc_conn_t *up; /* nested calls go there */
	int slow_ns;
	uint64_t next_seq, sunk, ooo;
	uint64_t wakes; /* event mode: sleeps ended by the descriptor */
	int stop;
};

static char secret_path[64];

static int on_shm(void);

static smart_ctx_t *ctx_new(const char *secret_file)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_file,
					     "buf_pool", "4M", NULL });
}

/* ---- the server child -------------------------------------------------- */

static void h_echo(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	smart_rpc_reply(q, 0, d, n);
}

static void spin_ns(int ns)
{
	uint64_t end = smart_now_ns() + (uint64_t)ns;

	while (smart_now_ns() < end)
		;
}

static void h_sink(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct server *s = a;
	uint64_t seq;

	if (n < 8)
		return;
	memcpy(&seq, d, 8);
	s->ooo += seq != s->next_seq;
	s->next_seq = seq + 1;
	s->sunk++;
	if (s->slow_ns)
		spin_ns(s->slow_ns);
}

static void h_counts(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct server *s = a;
	struct smart_rpc_stats st;
	struct counts c = { 0 };

	smart_rpc_stats(s->rpc, &st);
	c.sunk = s->sunk;
	c.out_of_order = s->ooo;
	c.rnr = st.rnr;
	c.proto_errors = st.proto_errors;
	c.acks_sent = st.acks_sent;
	c.accepted = st.conns_accepted;
	c.backlogged = st.backlogged;
	c.rndv_recv = st.rndv_recv;
	c.rndv_held = st.rndv_held;
	c.traced = st.traced;
	c.event_sleeps = st.event_sleeps;
	c.event_wakes = s->wakes;
	smart_rpc_reply(q, 0, &c, sizeof(c));
}

struct nested {
	struct server *s;
	smart_rpc_req_t *q;
	uint8_t buf[64];
	uint32_t len;
};

static void nested_task(smart_worker_t *w, void *arg)
{
	struct nested *x = arg;
	uint8_t out[64];
	uint32_t n = 0;
	int rc = smart_rpc_call(x->s->up, OP_ECHO, x->buf, x->len, out,
				sizeof(out), &n);

	smart_rpc_reply(x->q, rc, out, rc ? 0 : n);
	free(x);
}

static void h_nested(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct server *s = a;
	struct nested *x = calloc(1, sizeof(*x));

	/* a handler must not wait: the nested call runs in a task */
	if (!x || n > sizeof(x->buf) || !s->up ||
	    smart_task_spawn(s->w, nested_task, x)) {
		free(x);
		smart_rpc_reply(q, SMART_EBUSY, NULL, 0);
		return;
	}
	x->s = s;
	x->q = q;
	x->len = n;
	memcpy(x->buf, d, n);
}

static void h_poke(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct server *s = a;

	if (s->up)
		CHECK_OK(smart_rpc_send(s->up, OP_CUT, NULL, 0));
}

static void h_exit(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	((struct server *)a)->stop = 1;
	smart_rpc_reply(q, 0, NULL, 0);
}

static void serve_task(smart_worker_t *w, void *arg)
{
	struct server *s = arg;

	while (!s->stop)
		smart_task_yield(w);
}

/* Event mode (docs/rpc.md §12): poll while there is work, else sleep
 * on the endpoint's descriptor, with no timeout of our own: only the
 * endpoint's events (messages, its timer) end a sleep. */
static void serve_events(struct server *s)
{
	struct pollfd pf = { .events = POLLIN };

	CHECK_OK(smart_rpc_event_fd(s->rpc, &pf.fd));
	while (!s->stop) {
		smart_rpc_progress(s->rpc);
		if (smart_rpc_event_arm(s->rpc))
			continue;
		CHECK_EQ(poll(&pf, 1, -1), 1);
		s->wakes++;
	}
}

/* args: secret file, pipe fd, slow ns, upstream address or "-",
 * keepalive ms (0: KA_QUIET_MS), with KA_MISSES, and "event" for event
 * mode (else a task polls) */
static void child_server(char **args)
{
	struct server s = { 0 };
	smart_ctx_t *ctx = ctx_new(args[0]);
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = (uint32_t)atoi(args[4]),
					.keepalive_misses = KA_MISSES };
	char addr[64];
	int fd = atoi(args[1]);

	if (!cfg.keepalive_ms)
		cfg.keepalive_ms = KA_QUIET_MS;
	s.slow_ns = atoi(args[2]);
	CHECK_OK(smart_worker_create(ctx, &s.w));
	CHECK_OK(smart_rpc_create(s.w, &cfg, &s.rpc));
	CHECK_OK(smart_rpc_register(s.rpc, OP_ECHO, h_echo, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_SINK, h_sink, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_COUNTS, h_counts, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_NESTED, h_nested, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_POKE, h_poke, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_EXIT, h_exit, &s));
	if (strcmp(args[3], "-"))
		CHECK_OK(smart_rpc_connect(s.rpc, args[3], &s.up));
	CHECK_OK(smart_rpc_listen(s.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(s.rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
	close(fd);
	if (args[5] && !strcmp(args[5], "event")) {
		serve_events(&s);
	} else {
		CHECK_OK(smart_task_spawn(s.w, serve_task, &s));
		CHECK_OK(smart_worker_run(s.w));
	}
	smart_rpc_close(s.up);
	CHECK_OK(smart_rpc_destroy(s.rpc));
	CHECK_OK(smart_worker_destroy(s.w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* Start a server child (keepalive ka_ms, 0: the default) and read its
 * address; when its upstream is an endpoint of ours (us), that endpoint is
 * progressed meanwhile, so that it can accept the child's connection. */
static pid_t server_start_mode(int slow_ns, const char *up, int ka_ms,
			       smart_rpc_t *us, const char *mode, char *addr)
{
	char fdtxt[16], slow[16], ka[16];
	int p[2];
	pid_t pid;
	ssize_t n;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	snprintf(slow, sizeof(slow), "%d", slow_ns);
	snprintf(ka, sizeof(ka), "%d", ka_ms);
	pid = test_spawn("server",
			 (const char *[]){ secret_path, fdtxt, slow,
					   up ? up : "-", ka, mode, NULL });
	close(p[1]);
	if (us) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };

		while (poll(&pf, 1, 0) == 0)
			smart_rpc_progress(us);
	}
	n = read(p[0], addr, 63);
	close(p[0]);
	CHECK_MSG(n > 0, "the server did not start");
	addr[n] = 0;
	return pid;
}

static pid_t server_start_ka(int slow_ns, const char *up, int ka_ms,
			     smart_rpc_t *us, char *addr)
{
	return server_start_mode(slow_ns, up, ka_ms, us, NULL, addr);
}

static pid_t server_start(int slow_ns, const char *up, char *addr)
{
	return server_start_ka(slow_ns, up, 0, NULL, addr);
}

/* ---- the client side ----------------------------------------------------- */

struct client {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
};

static void client_open_cfg(struct client *c, const char *secret_file,
			    const struct smart_rpc_config *cfg)
{
	struct smart_rpc_config x =
		cfg ? *cfg : (struct smart_rpc_config){ SMART_RPC_CONFIG_INIT };

	if (!x.keepalive_ms) {
		x.keepalive_ms = KA_QUIET_MS;
		x.keepalive_misses = KA_MISSES;
	}
	c->ctx = ctx_new(secret_file);
	CHECK_OK(smart_worker_create(c->ctx, &c->w));
	CHECK_OK(smart_rpc_create(c->w, &x, &c->rpc));
}

static void client_open(struct client *c, const char *secret_file)
{
	client_open_cfg(c, secret_file, NULL);
}

static void client_close(struct client *c)
{
	CHECK_OK(smart_rpc_destroy(c->rpc));
	CHECK_OK(smart_worker_destroy(c->w));
	CHECK_OK(smart_ctx_destroy(c->ctx));
}

static void server_stop(smart_rpc_conn_t *k, pid_t pid)
{
	int st;

	CHECK_OK(smart_rpc_call(k, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "server exit status %d", st);
}

static struct counts counts_of(smart_rpc_conn_t *k)
{
	struct counts c;
	uint32_t n = 0;

	CHECK_OK(smart_rpc_call(k, OP_COUNTS, NULL, 0, &c, sizeof(c), &n));
	CHECK_EQ(n, sizeof(c));
	return c;
}

static void test_echo(void)
{
	static uint8_t out[8192], back[8192];
	struct smart_rpc_stats st;
	struct client c;
	smart_rpc_conn_t *k;
	char addr[64];
	pid_t pid = server_start(0, NULL, addr);
	uint32_t n;

	client_open(&c, secret_path);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	for (uint32_t i = 0; i < 2000; i++) {
		uint32_t len = (i * 37) % 4097;

		for (uint32_t j = 0; j < len; j++)
			out[j] = (uint8_t)(i + j * 7);
		n = UINT32_MAX;
		CHECK_OK(smart_rpc_call(k, OP_ECHO, out, len, back,
					sizeof(back), &n));
		CHECK_EQ(n, len);
		CHECK(!memcmp(out, back, len));
	}
	/* one message each way per call, nothing more on the wire */
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.msgs_sent, 2000);
	CHECK_U64_EQ(st.msgs_recv, 2000);
	CHECK_U64_EQ(st.acks_sent, 0);
	/* the QP cache: empty at the first connect (no tick yet), filled by
	 * the ticks of the calls' polls, taken by the next connect */
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_U64_EQ(st.qp_cache_hits, 0);
	smart_rpc_close(k);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 8, back, 8, &n));
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_U64_EQ(st.qp_cache_hits, 1);
	/* errors that say what happened (a length past the rendezvous
	 * limit is refused before the payload is looked at) */
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, (64u << 20) + 1, back,
				sizeof(back), &n),
		 SMART_EINVAL);
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, 100, back, 10, &n),
		 SMART_ERANGE);
	CHECK_EQ(n, 100);
	CHECK_EQ(smart_rpc_call(k, 77, out, 1, back, 10, &n), SMART_ENOENT);
	/* the library's own echo, which the server did not register */
	memset(back, 0, 64);
	CHECK_OK(smart_rpc_call(k, SMART_RPC_OP_PING, out, 64, back, 64, &n));
	CHECK_EQ(n, 64);
	CHECK(!memcmp(back, out, 64));
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 8, back, 8, &n));
	smart_rpc_close(k);
	client_close(&c);

	/* a client whose eager messages may be longer than the server
	 * takes: those go by rendezvous instead; past the server's
	 * rendezvous limit they are refused at the call (the connection
	 * lives on), never sent */
	client_open_cfg(&c, secret_path,
			&(struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
						    .eager_max = 8192,
						    .rndv_max = 128u << 20 });
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 6000, back, sizeof(back), &n));
	CHECK_EQ(n, 6000);
	CHECK(!memcmp(out, back, 6000));
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.rndv_sent, 1);
	CHECK_EQ(smart_rpc_send(k, OP_SINK, out, (64u << 20) + 1),
		 SMART_EINVAL);
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 4000, back, sizeof(back), &n));
	CHECK_EQ(n, 4000);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
}

/* A client sending as fast as it can to a server that takes 2 us a
 * message: every message arrives once and in order, the window stalled
 * the sender (the path taken), and no receiver-not-ready happened. */
static void test_slow_server(void)
{
	struct smart_rpc_stats st;
	struct client c;
	struct counts got;
	smart_rpc_conn_t *k;
	uint8_t msg[64] = { 0 };
	char addr[64];
	pid_t pid = server_start(2000, NULL, addr);

	client_open(&c, secret_path);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	for (uint64_t i = 0; i < FLOOD; i++) {
		memcpy(msg, &i, 8);
		CHECK_OK(smart_rpc_send(k, OP_SINK, msg,
					(uint32_t)(8 + i % 57)));
	}
	got = counts_of(k); /* ordered behind every one-way message */
	CHECK_U64_EQ(got.sunk, FLOOD);
	CHECK_U64_EQ(got.out_of_order, 0);
	CHECK_U64_EQ(got.rnr, 0);
	CHECK_GT(got.acks_sent, 0);
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.rnr, 0);
	CHECK_GT(st.window_stalls, 0);
	/* not one SEND of ours met a missing receive, not even one that
	 * the transport's retry hid */
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_U64_EQ(st.rnr_waits, 0);
	CHECK_U64_EQ(st.msgs_sent, FLOOD + 1);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
}

/* Keepalive: an idle connection lives (PINGs answered); a server stopped
 * with SIGSTOP fails the call waiting on it with SMART_ECONN (not the
 * call's 5-s timeout); a peer killed with SIGKILL is given up and its
 * connection freed.  The bound is KA_MS x KA_MISSES (+ a 1-ms tick); the
 * times taken are printed, not asserted (the machine may be slow). */

static uint64_t ms_since(uint64_t t0)
{
	return (smart_now_ns() - t0) / 1000000;
}

/* c listens; a server dials it, is connected, then killed (SIGKILL) and
 * reaped; returns smart_now_ns() at that moment. */
static uint64_t dialer_killed(struct client *c)
{
	char us[64], addr[64];
	int status;
	pid_t pid;

	CHECK_OK(smart_rpc_listen(c->rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(c->rpc, us, sizeof(us)));
	pid = server_start_ka(0, us, KA_MS, c->rpc, addr);
	while (smart_rpc_conns(c->rpc) < 1)
		smart_rpc_progress(c->rpc);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return smart_now_ns();
}

static void test_keepalive(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = KA_MS,
					.keepalive_misses = KA_MISSES };
	struct smart_rpc_stats st;
	struct client c;
	smart_rpc_conn_t *k;
	char addr[64];
	uint64_t t0, ms;
	uint8_t b[8] = { 1 };
	uint32_t n;
	pid_t pid;
	int status;

	client_open_cfg(&c, secret_path, &cfg);
	pid = server_start_ka(0, NULL, KA_MS, NULL, addr);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	/* idle for 2 bounds: probed, answered, alive */
	t0 = smart_now_ns();
	while (ms_since(t0) < 2 * KA_MS * KA_MISSES)
		smart_rpc_progress(c.rpc);
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_GT(st.ka_probes, 0);
	CHECK_U64_EQ(st.ka_failures, 0);
	CHECK_OK(smart_rpc_call(k, OP_ECHO, b, 8, b, 8, &n));
	/* stopped: the call fails once the keepalive gives the server up */
	CHECK_EQ(kill(pid, SIGSTOP), 0);
	t0 = smart_now_ns();
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, b, 8, b, 8, &n), SMART_ECONN);
	ms = ms_since(t0);
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.ka_failures, 1);
	CHECK_U64_EQ(st.call_timeouts, 0);
	CHECK_EQ(smart_rpc_conns(c.rpc), 0);
	printf("   stopped server: call failed after %" PRIu64 " ms (bound "
	       "%d ms)\n",
	       ms, KA_MS * KA_MISSES);
	smart_rpc_close(k);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);

	/* killed: a peer that dialed us is given up, its connection freed */
	t0 = dialer_killed(&c);
	while (smart_rpc_conns(c.rpc) > 0 && ms_since(t0) < 10000)
		smart_rpc_progress(c.rpc);
	ms = ms_since(t0);
	CHECK_EQ(smart_rpc_conns(c.rpc), 0);
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_U64_EQ(st.ka_failures, 2);
	CHECK_U64_EQ(st.conns_accepted, 1);
	printf("   killed peer: given up after %" PRIu64 " ms\n", ms);
	client_close(&c);
}

/* Event mode (docs/rpc.md §12).  A server that sleeps on its descriptor
 * between calls answers each within a call timeout (1 s) far below its
 * keepalive period (2 s, its only timer): so only the sender's wake-up
 * can have ended its sleeps (mutant SHM_NO_WAKE).  Then we sleep as the
 * listener: a killed peer is given up by the timer alone, and its
 * connection freed. */
#define EV_CALLS 20

static void test_event_mode(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.timeout_ms = 1000 };
	struct smart_rpc_stats st;
	struct client c;
	struct counts n;
	smart_rpc_conn_t *k;
	char addr[64];
	uint64_t b[8], t0;
	struct pollfd pf = { .events = POLLIN };
	uint32_t len;
	pid_t pid;
	int sleeps = 0;

	client_open_cfg(&c, secret_path, &cfg);
	pid = server_start_mode(0, NULL, 0, NULL, "event", addr);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	for (int i = 0; i < EV_CALLS; i++) {
		/* 5 ms apart: the server is idle (busy_us 50) and sleeps */
		t0 = smart_now_ns();
		while (smart_now_ns() - t0 < 5000000)
			smart_rpc_progress(c.rpc);
		b[0] = (uint64_t)i;
		CHECK_OK(smart_rpc_call(k, OP_ECHO, b, 8, b, 8, &len));
		CHECK_U64_EQ(b[0], (uint64_t)i);
	}
	n = counts_of(k);
	printf("   server: %" PRIu64 " sleeps, %" PRIu64 " woken by its "
	       "descriptor, %d calls answered\n",
	       n.event_sleeps, n.event_wakes, EV_CALLS);
	CHECK_GT(n.event_sleeps, 0);
	CHECK_GT(n.event_wakes, 0);
	server_stop(k, pid);

	/* the listener sleeps; a peer of it killed: the timer wakes it */
	cfg = (struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
					 .keepalive_ms = KA_MS,
					 .keepalive_misses = KA_MISSES };
	client_close(&c);
	client_open_cfg(&c, secret_path, &cfg);
	CHECK_OK(smart_rpc_event_fd(c.rpc, &pf.fd));
	t0 = dialer_killed(&c);
	for (;;) {
		smart_rpc_progress(c.rpc);
		if (!smart_rpc_conns(c.rpc) || ms_since(t0) > 10000)
			break;
		if (smart_rpc_event_arm(c.rpc) == 0) {
			CHECK_EQ(poll(&pf, 1, 10000), 1);
			sleeps++;
		}
	}
	CHECK_EQ(smart_rpc_conns(c.rpc), 0);
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_U64_EQ(st.ka_failures, 1);
	CHECK_GT(sleeps, 0);
	CHECK_U64_EQ(st.event_sleeps, (uint64_t)sleeps);
	printf("   sleeping listener: killed peer given up after %" PRIu64
	       " ms, %d sleeps\n",
	       ms_since(t0), sleeps);
	/* arming inside a handler or before event_fd: refused */
	client_close(&c);
	client_open(&c, secret_path);
	CHECK_EQ(smart_rpc_event_arm(c.rpc), SMART_ENOENT);
	CHECK_EQ(smart_rpc_event_fd(c.rpc, NULL), SMART_EINVAL);
	CHECK_EQ(smart_rpc_event_arm(NULL), SMART_EINVAL);
	client_close(&c);
}

/* A listener that never answers: a TCP port held and listening and, on
 * shm, its unix socket "smart-rpc:<port>" listening; nothing is accepted,
 * so a dial to it connects, sends its hello and waits.  fds[2] to close;
 * its address into addr. */
static void mute_listener(int fds[2], char *addr, size_t len)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_storage bound;
	struct sockaddr_un un;
	char name[32];
	uint16_t port;

	CHECK_OK(smart__sock_listen(&in, sizeof(in), 4, &fds[0], &bound));
	port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
	snprintf(addr, len, "127.0.0.1:%u", port);
	fds[1] = -1;
	if (on_shm()) {
		snprintf(name, sizeof(name), "smart-rpc:%u", port);
		CHECK_OK(smart__sock_listen(&un,
					    smart__sock_abstract(name, &un), 4,
					    &fds[1], NULL));
	}
}

struct dial_arg {
	smart_rpc_t *rpc;
	smart_rpc_conn_t *k; /* to the server */
	const char *mute;
	int *mfd; /* the mute listener's sockets: closed to end a dial */
	int rc, dialing;
	int cut_in_dial; /* OP_CUT came while the dial waited */
	uint64_t calls_meanwhile;
};

/* Close the mute listener: a dial waiting on it fails at once (its
 * pending connection is reset), so it ends before its timeout only if
 * something ran while it waited. */
static void mute_close(int mfd[2])
{
	for (int i = 0; i < 2; i++)
		if (mfd[i] >= 0) {
			close(mfd[i]);
			mfd[i] = -1;
		}
}

/* The server's OP_CUT: handled only if the endpoint is polled. */
static void h_cut(smart_rpc_req_t *q, const void *d, uint32_t n, void *p)
{
	struct dial_arg *a = p;

	a->cut_in_dial = a->dialing;
	if (a->dialing)
		mute_close(a->mfd);
}

static void dial_task(smart_worker_t *w, void *p)
{
	struct dial_arg *a = p;
	smart_rpc_conn_t *k2 = NULL;

	(void)w;
	a->dialing = 1;
	a->rc = smart_rpc_connect(a->rpc, a->mute, &k2);
	a->dialing = 0;
}

/* Three calls answered while the other task dials, then the dial cut. */
static void echo_while_dialing(smart_worker_t *w, void *p)
{
	struct dial_arg *a = p;
	uint64_t b = 7;
	uint32_t n;

	(void)w;
	while (!a->dialing)
		smart_task_yield(w);
	while (a->dialing && a->calls_meanwhile < 3) {
		CHECK_OK(smart_rpc_call(a->k, OP_ECHO, &b, 8, &b, 8, &n));
		a->calls_meanwhile++;
	}
	if (a->dialing)
		mute_close(a->mfd);
}

/* A dial polls its endpoint while it waits, on events, not on time: to a
 * listener that never answers (nothing ends the dial but its timeout,
 * 60 s here, or the listener's close), from the main context the
 * server's one-way OP_CUT, sent when the dial has begun, is handled
 * during the dial and closes the listener (the dial fails, the
 * connection to the server lives); from a task, another task's three
 * calls are answered during the dial, and then it closes the listener.
 * A dial that blocks (mutant RPC_DIAL_BLOCKS) runs into its timeout
 * instead.  (Before, the test relied on the server's keepalive, 2 s,
 * firing within a 3-s dial that did not poll, and on neither process
 * being kept off the CPU for 2 s when it did.) */
static void test_dial_polls(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.timeout_ms = 60000 };
	struct dial_arg a = { 0 };
	struct smart_rpc_stats st;
	struct client c;
	smart_rpc_conn_t *k2 = NULL;
	char addr[64], mute[64], us[64];
	uint64_t t0, ms, b = 1;
	uint32_t n;
	int mfd[2], rc;
	pid_t pid;

	client_open_cfg(&c, secret_path, &cfg);
	CHECK_OK(smart_rpc_register(c.rpc, OP_CUT, h_cut, &a));
	CHECK_OK(smart_rpc_listen(c.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(c.rpc, us, sizeof(us)));
	pid = server_start_ka(0, us, 0, c.rpc, addr);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &a.k));
	mute_listener(mfd, mute, sizeof(mute));
	a.mfd = mfd;

	/* the main context: the poke is queued, not handled, until the
	 * endpoint is polled next, which only the dial does */
	CHECK_OK(smart_rpc_send(a.k, OP_POKE, NULL, 0));
	CHECK_OK(smart_rpc_flush(c.rpc));
	t0 = smart_now_ns();
	a.dialing = 1;
	rc = smart_rpc_connect(c.rpc, mute, &k2);
	a.dialing = 0;
	ms = ms_since(t0);
	printf("   main context: dial ended with %s after %" PRIu64
	       " ms, the server's OP_CUT %shandled during it\n",
	       smart_status_name(rc), ms, a.cut_in_dial ? "" : "NOT ");
	CHECK_EQ(a.cut_in_dial, 1);
	CHECK_NE(rc, SMART_ETIMEDOUT);
	CHECK_NE(rc, 0);
	CHECK_OK(smart_rpc_call(a.k, OP_ECHO, &b, 8, &b, 8, &n));
	CHECK_OK(smart_rpc_conn_stats(a.k, &st));
	CHECK_U64_EQ(st.ka_failures, 0);

	/* a task dials, another calls meanwhile */
	mute_listener(mfd, mute, sizeof(mute));
	a.rpc = c.rpc;
	a.mute = mute;
	CHECK_OK(smart_task_spawn(c.w, dial_task, &a));
	CHECK_OK(smart_task_spawn(c.w, echo_while_dialing, &a));
	CHECK_OK(smart_worker_run(c.w));
	printf("   task: %" PRIu64 " calls answered while another task "
	       "dialed; the dial ended with %s\n",
	       a.calls_meanwhile, smart_status_name(a.rc));
	CHECK_U64_EQ(a.calls_meanwhile, 3);
	CHECK_NE(a.rc, SMART_ETIMEDOUT);
	CHECK_NE(a.rc, 0);
	mute_close(mfd);
	server_stop(a.k, pid);
	smart_rpc_close(a.k);
	client_close(&c);
}

/* Rendezvous: echoes of every size from just past eager_max to the
 * 64-MiB limit, byte for byte; a response longer than asked for (ERANGE,
 * nothing READ); one-way messages eager and long interleaved, every one
 * handled once and in order (the eager ones held behind the long ones:
 * the path counted). */
static void test_rendezvous(void)
{
	static const uint32_t sizes[] = { 4097,	 65535,		 65536,
					  65537, (1u << 20) + 3, 64u << 20 };
	const uint32_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	uint8_t *out = malloc(64u << 20), *back = malloc(64u << 20);
	struct smart_rpc_stats st;
	uint64_t rng = 0x5eed;
	struct client c;
	struct counts got;
	smart_rpc_conn_t *k;
	char addr[64];
	pid_t pid = server_start(0, NULL, addr);
	uint32_t n, i;

	CHECK(out && back);
	/* a call's timeout bounds the transfer too: 64 MiB each way take
	 * 5-7 s on Soft-RoCE under TCG (tests/vm), past the 5-s default */
	client_open_cfg(&c, secret_path,
			&(struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
						    .timeout_ms = 60000 });
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	for (i = 0; i < nsizes; i++) {
		for (uint32_t j = 0; j < sizes[i]; j += 8) {
			rng = rng * 6364136223846793005ULL +
			      1442695040888963407ULL;
			memcpy(out + j, &rng,
			       sizes[i] - j < 8 ? sizes[i] - j : 8);
		}
		n = 0;
		CHECK_OK(smart_rpc_call(k, OP_ECHO, out, sizes[i], back,
					64u << 20, &n));
		CHECK_EQ(n, sizes[i]);
		CHECK_MSG(!memcmp(out, back, sizes[i]), "echo of %u bytes",
			  sizes[i]);
	}
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.rndv_sent, nsizes);
	CHECK_U64_EQ(st.rndv_recv, nsizes);
	/* too long for the caller: ERANGE with the length, nothing READ */
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, 100000, back, 10000, &n),
		 SMART_ERANGE);
	CHECK_EQ(n, 100000);
	CHECK_OK(smart_rpc_conn_stats(k, &st));
	CHECK_U64_EQ(st.rndv_recv, nsizes);
	/* in order, eager and long interleaved */
	for (uint64_t q = 0; q < 400; q++) {
		uint32_t len = q % 10 == 3 ? 200000 : 64;

		memcpy(out, &q, 8);
		CHECK_OK(smart_rpc_send(k, OP_SINK, out, len));
	}
	got = counts_of(k);
	CHECK_U64_EQ(got.sunk, 400);
	CHECK_U64_EQ(got.out_of_order, 0);
	CHECK_U64_EQ(got.rndv_recv, nsizes + 1 + 40); /* requests */
	CHECK_GT(got.rndv_held, 0);
	CHECK_U64_EQ(got.proto_errors, 0);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
	free(out);
	free(back);
}

/* Tracing: with trace_every 1 every call is traced at both ends (same
 * ids); a 5-ms pause without polling is a slow poll. */
static void test_trace(void)
{
	struct smart_rpc_trace t[64];
	struct smart_rpc_stats st;
	static uint8_t big[100000];
	struct client c;
	smart_rpc_conn_t *k;
	char addr[64];
	pid_t pid = server_start(0, NULL, addr);
	uint32_t n;
	int got;

	client_open_cfg(&c, secret_path,
			&(struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
						    .trace_every = 1 });
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	for (int i = 0; i < 10; i++)
		CHECK_OK(smart_rpc_call(k, OP_ECHO, big,
					i == 9 ? sizeof(big) : 8, big,
					sizeof(big), &n));
	got = smart_rpc_traces(c.rpc, t, 64);
	CHECK_EQ(got, 10);
	for (int i = 0; i < got; i++) {
		CHECK_EQ(t[i].side, SMART_RPC_TRACE_CALL);
		CHECK_EQ(t[i].op, OP_ECHO);
		CHECK_EQ(t[i].status, 0);
		CHECK_GT(t[i].rtt_ns, 0);
		CHECK(i == 0 || t[i].id != t[i - 1].id);
	}
	CHECK_EQ(t[9].rndv, 1);
	CHECK_EQ(t[9].len, sizeof(big));
	/* the server traced the handlers of the 10 flagged requests (the
	 * counting call's own record is added after its handler ran) */
	CHECK_U64_EQ(counts_of(k).traced, 10);
	/* a pause without polling */
	CHECK_GE(smart_rpc_progress(c.rpc), 0);
	usleep(5000);
	CHECK_GE(smart_rpc_progress(c.rpc), 0);
	CHECK_OK(smart_rpc_stats(c.rpc, &st));
	CHECK_GT(st.slow_polls, 0);
	CHECK_GE(st.poll_gap_max_ns, 5000000);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
}

static void test_nested(void)
{
	struct client c;
	smart_rpc_conn_t *k;
	char a1[64], a2[64];
	pid_t p1 = server_start(0, NULL, a1), p2 = server_start(0, a1, a2);
	uint8_t back[64];
	uint32_t n = 0;
	smart_rpc_conn_t *k1;

	client_open(&c, secret_path);
	CHECK_OK(smart_rpc_connect(c.rpc, a2, &k));
	for (int i = 0; i < 100; i++) {
		char msg[32];
		int len = snprintf(msg, sizeof(msg), "nested %d", i);

		CHECK_OK(smart_rpc_call(k, OP_NESTED, msg, (uint32_t)len, back,
					sizeof(back), &n));
		CHECK_EQ(n, (uint32_t)len);
		CHECK(!memcmp(back, msg, n));
	}
	server_stop(k, p2); /* it closes its upstream connection */
	smart_rpc_close(k);
	CHECK_OK(smart_rpc_connect(c.rpc, a1, &k1));
	CHECK_GE(counts_of(k1).accepted, 2);
	server_stop(k1, p1);
	smart_rpc_close(k1);
	client_close(&c);
}

/* Raw bytes at a listener: garbage, a truncated header, a huge declared
 * length.  Each is refused at once, or (the truncated header: a slow
 * peer) at the handshake deadline, the endpoint's timeout_ms (5 s), and
 * the process keeps serving. */
static int on_shm(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	return !t || !strcmp(t, "shm");
}

/* A raw stream socket to the listener of addr: on shm its abstract unix
 * socket "smart-rpc:<port>", elsewhere (verbs) the TCP address itself
 * (docs/rpc.md §2). */
static int raw_connect(const char *addr)
{
	struct sockaddr_storage ss;
	struct sockaddr_un un;
	const char *port = strrchr(addr, ':') + 1;
	char name[64];
	uint32_t len;
	int fd;

	if (on_shm()) {
		snprintf(name, sizeof(name), "smart-rpc:%s", port);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK(fd >= 0);
		CHECK_OK(connect(fd, (struct sockaddr *)&un,
				 smart__sock_abstract(name, &un)));
		return fd;
	}
	CHECK_OK(smart__proto_parse_addr(addr, &ss, sizeof(ss), &len));
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK_OK(connect(fd, (struct sockaddr *)&ss, len));
	return fd;
}

static void raw_attempt(const char *addr, const void *bytes, size_t n,
			int wait_ms)
{
	int fd, one = 1;
	char buf[512];
	int64_t end = smart__now_ms() + wait_ms;

	fd = raw_connect(addr);
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	CHECK_EQ(write(fd, bytes, n), (ssize_t)n);
	/* the listener answers with an ERROR and closes, or just closes */
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t r;

		CHECK_MSG(smart__now_ms() < end, "the listener never closed");
		if (poll(&p, 1, 100) <= 0)
			continue;
		r = read(fd, buf, sizeof(buf));
		if (r <= 0)
			break;
	}
	close(fd);
}

/* Post one DATA message on k's QP behind the library's back: header h
 * and either a rendezvous descriptor d or extra zero bytes. */
static void raw_send(smart_rpc_conn_t *k, const struct smart_msg_hdr *h,
		     const struct smart_msg_rndv *d, uint32_t extra)
{
	/* the last send slot: the calls that follow use the first ones,
	 * and on shm the SEND copies its bytes only at a later poll */
	uint8_t *b = k->sbuf + (size_t)(k->window - 1) * k->msg_len;
	struct smart_tp_wr wr = { 0 };
	struct smart_msg_hdr x = *h;

	if (d)
		x.len = SMART_MSG_RNDV_LEN;
	smart__msg_put_hdr(b, &x);
	if (d)
		smart__msg_put_rndv(b + SMART_MSG_HDR_LEN, d);
	else
		memset(b + SMART_MSG_HDR_LEN, 0, extra);
	wr.opcode = SMART_TP_SEND;
	wr.local = b;
	wr.len = SMART_MSG_HDR_LEN + (d ? SMART_MSG_RNDV_LEN : extra);
	wr.lkey = k->lkey;
	wr.flags = SMART_TP_IMM | SMART_TP_SIGNALED;
	wr.imm = smart__msg_imm(SMART_MSG_K_DATA, 0);
	wr.wr_id = UINT64_C(0xffff); /* no connection of ours */
	CHECK_OK(k->rpc->tp->post(k->qp, &wr, 1));
}

static void test_hostile(void)
{
	static const uint8_t garbage[] = "GET / HTTP/1.1\r\n\r\n";
	static const uint8_t trunc[] = { 'S', 'M', 'R', 'T', 1, 0 };
	static const uint8_t huge[] = { 'S', 'M', 'R',	'T',  1,    0,
					0,   0,	  0xff, 0xff, 0xff, 0x7f };
	char bad_secret[] = "/tmp/smart-rpc-bad-XXXXXX";
	struct client c, bad;
	smart_rpc_conn_t *k;
	struct counts got;
	char addr[64];
	pid_t pid;
	uint8_t back[16];
	uint32_t n;

	pid = server_start(0, NULL, addr);
	raw_attempt(addr, garbage, sizeof(garbage), 2000);
	raw_attempt(addr, huge, sizeof(huge), 2000);
	raw_attempt(addr, trunc, sizeof(trunc), 10000);
	/* the wrong secret */
	test_secret_file(bad_secret, sizeof(bad_secret), bad_secret,
			 "not-the-secret-at-all");
	client_open(&bad, bad_secret);
	CHECK_EQ(smart_rpc_connect(bad.rpc, addr, &k), SMART_EACCES);
	client_close(&bad);
	unlink(bad_secret);

	/* a malformed message on a live connection: declared length past
	 * what arrived.  The server cuts that connection only (we notice
	 * by our keepalive, set short here). */
	client_open_cfg(&c, secret_path,
			&(struct smart_rpc_config){
				SMART_RPC_CONFIG_INIT, .keepalive_ms = KA_MS,
				.keepalive_misses = KA_MISSES });
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	raw_send(k,
		 &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
					  .op = OP_ECHO,
					  .call = 1,
					  .len = 1u << 30 },
		 NULL, 8);
	/* our side learns when its next call fails (keepalive) */
	n = 0;
	CHECK_NE(smart_rpc_call(k, OP_ECHO, "x", 1, back, sizeof(back), &n), 0);
	smart_rpc_close(k);

	/* rendezvous descriptors: one pointing past the end of our staging
	 * region, one whose payload does not match its CRC.  The server
	 * cuts each connection, READs nothing outside, delivers nothing. */
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	raw_send(k,
		 &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
					  .op = OP_ECHO,
					  .call = 1,
					  .flags = SMART_MSG_F_RNDV },
		 &(struct smart_msg_rndv){
			 .off = (64u << 20) - 65536, .len = 131072, .rid = 1 },
		 0);
	CHECK_NE(smart_rpc_call(k, OP_ECHO, "x", 1, back, sizeof(back), &n), 0);
	smart_rpc_close(k);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	raw_send(k,
		 &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
					  .op = OP_ECHO,
					  .call = 1,
					  .flags = SMART_MSG_F_RNDV },
		 &(struct smart_msg_rndv){
			 .off = 0, .len = 65536, .crc = 1, .rid = 1 },
		 0);
	CHECK_NE(smart_rpc_call(k, OP_ECHO, "x", 1, back, sizeof(back), &n), 0);
	smart_rpc_close(k);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	got = counts_of(k);
	CHECK_U64_EQ(got.proto_errors, 3);
	CHECK_U64_EQ(got.rndv_recv, 0);
	CHECK_GE(got.accepted, 2);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
}

/* Bad arguments never crash. */
static void test_args(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT, .window = 8192 };
	struct client c;
	smart_rpc_t *r2;
	smart_rpc_conn_t *k;
	char buf[8];

	client_open(&c, secret_path);
	CHECK_EQ(smart_rpc_create(c.w, NULL, &r2), SMART_EBUSY);
	CHECK_EQ(smart_rpc_create(NULL, NULL, &r2), SMART_EINVAL);
	CHECK_EQ(smart_rpc_listen(c.rpc, "nowhere"), SMART_EINVAL);
	CHECK_EQ(smart_rpc_listen_addr(c.rpc, buf, sizeof(buf)), SMART_ENOENT);
	CHECK_EQ(smart_rpc_connect(c.rpc, "127.0.0.1:1", &k), SMART_ECONN);
	CHECK_EQ(smart_rpc_connect(c.rpc, "300.1.1.1:5", &k), SMART_EINVAL);
	CHECK_OK(smart_rpc_listen(c.rpc, "127.0.0.1:0"));
	CHECK_EQ(smart_rpc_listen(c.rpc, "127.0.0.1:0"), SMART_EEXIST);
	CHECK_EQ(smart_rpc_listen_addr(c.rpc, buf, 4), SMART_ERANGE);
	CHECK_EQ(smart_rpc_call(NULL, 1, NULL, 0, NULL, 0, NULL), SMART_EINVAL);
	CHECK_EQ(smart_rpc_reply(NULL, 0, NULL, 0), SMART_EINVAL);
	CHECK_EQ(smart_rpc_register(c.rpc, SMART_RPC_OP_PING, h_echo, NULL),
		 SMART_EINVAL); /* the library's */
	client_close(&c);
	c.ctx = ctx_new(secret_path);
	CHECK_OK(smart_worker_create(c.ctx, &c.w));
	CHECK_EQ(smart_rpc_create(c.w, &cfg, &c.rpc), SMART_EINVAL);
	CHECK_OK(smart_worker_destroy(c.w));
	CHECK_OK(smart_ctx_destroy(c.ctx));
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "server", child_server }, { NULL, NULL }
	};
	int rc;

	test_children(argc, argv, children);
	test_secret_file(secret_path, sizeof(secret_path),
			 "/tmp/smart-rpc-XXXXXX", SECRET);
	rc = test_main(argc, argv,
		       (struct test_case[]){
			       { "echo", test_echo },
			       { "slow_server", test_slow_server },
			       { "rendezvous", test_rendezvous },
			       { "nested", test_nested },
			       { "trace", test_trace },
			       { "keepalive", test_keepalive },
			       { "event_mode", test_event_mode },
			       { "dial_polls", test_dial_polls },
			       { "hostile", test_hostile },
			       { "args", test_args },
			       { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
