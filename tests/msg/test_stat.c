/*
 * The endpoints' control socket and smart-stat (docs/rpc.md §8): what the
 * built smart-stat prints with --pid --json matches smart_rpc_conn_stats
 * on both sides of a connection (every counter, by name); the table's
 * rows; the listing of every endpoint of this user; the clear errors; the
 * names (two endpoints of one process get two); hostile clients (a flood
 * of connects that never read, one of another uid when we are root) leave
 * the endpoint serving, and its own counters show the paths were taken;
 * a connection that took a spare of the QP cache is as old as its use;
 * a fake endpoint (a child bound to "smart-stat:<its pid>:0") answering
 * hostile documents: smart-stat refuses each with an error that names the
 * problem, or prints only safe bytes, and its --json is always valid JSON.
 *
 * Not tested: an answer that outgrows the socket's buffer while its
 * client does not read (the STAT_SEND_MS deadline, "stat_truncated"):
 * that needs hundreds of connections, as a unix socket buffers ~200 KiB.
 *
 * The server is a child process (test_spawn) on the transport of
 * SMART_TEST_TRANSPORT (shm by default), with a keepalive long enough
 * that no PING changes a counter while the test compares them.
 */
#include <ctype.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "util/sockio.h"

#define SECRET	 "stat-test-secret-0815"
#define OP_ECHO	 1
#define OP_STATS 2 /* reply: smart_rpc_conn_stats of the caller's conn */
#define OP_NAME	 3 /* reply: the server's control socket name */
#define OP_EXIT	 9
#define CALLS	 10
#define FLOOD	 40
#define KA_MS	 600000 /* no PING while counters are compared */
#define OUT_MAX	 (1 << 20)

extern char **environ;

static char secret_path[64];

struct server {
	smart_rpc_t *rpc;
	int stop;
};

static smart_ctx_t *ctx_new(const char *secret_file)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_file,
					     "buf_pool", "4M", NULL });
}

/* ---- the server child ----------------------------------------------------- */

static void h_echo(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	smart_rpc_reply(q, 0, d, n);
}

/* The caller's connection as the server counts it, this request
 * included (its answer not yet). */
static void h_stats(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct smart_rpc_stats st;

	CHECK_OK(smart_rpc_conn_stats(q->conn, &st));
	smart_rpc_reply(q, 0, &st, sizeof(st));
}

static void h_name(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	char name[64];

	CHECK_OK(smart_rpc_stat_name(((struct server *)a)->rpc, name,
				     sizeof(name)));
	smart_rpc_reply(q, 0, name, (uint32_t)strlen(name) + 1);
}

static void h_exit(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	((struct server *)a)->stop = 1;
	smart_rpc_reply(q, 0, NULL, 0);
}

/* args: the secret file, a pipe's fd for the listen address, and
 * "event" for event mode (sleeping on the endpoint's descriptor with no
 * timeout of its own: with KA_MS, only a message, a connection or a
 * smart-stat query ends a sleep) */
static void child_server(char **args)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = KA_MS };
	smart_ctx_t *ctx = ctx_new(args[0]);
	struct server s = { 0 };
	smart_worker_t *w;
	char addr[64];
	int fd = atoi(args[1]);

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &cfg, &s.rpc));
	CHECK_OK(smart_rpc_register(s.rpc, OP_ECHO, h_echo, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_STATS, h_stats, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_NAME, h_name, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_EXIT, h_exit, &s));
	CHECK_OK(smart_rpc_listen(s.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(s.rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
	close(fd);
	if (args[2] && !strcmp(args[2], "event")) {
		struct pollfd pf = { .events = POLLIN };

		CHECK_OK(smart_rpc_event_fd(s.rpc, &pf.fd));
		while (!s.stop) {
			smart_rpc_progress(s.rpc);
			if (!smart_rpc_event_arm(s.rpc))
				CHECK_EQ(poll(&pf, 1, -1), 1);
		}
	} else {
		while (!s.stop)
			smart_rpc_progress(s.rpc);
	}
	CHECK_OK(smart_rpc_destroy(s.rpc));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* Connect to a control socket; the descriptor (blocking) or -1. */
static int stat_connect(const char *name, int nonblock)
{
	struct sockaddr_un un;
	int fd = socket(AF_UNIX,
			SOCK_STREAM | SOCK_CLOEXEC |
				(nonblock ? SOCK_NONBLOCK : 0),
			0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&un,
			       smart__sock_abstract(name, &un))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* args: the control socket's name.  As uid/gid 65534 it must be told
 * "denied" and nothing else; exits 0 when it was. */
static void child_other_uid(char **args)
{
	static const char want[] = "smart-stat 1\ndenied\n";
	char buf[256];
	size_t len = 0;
	ssize_t r;
	int fd;

	CHECK_OK(setgroups(0, NULL));
	CHECK_OK(setgid(65534));
	CHECK_OK(setuid(65534));
	fd = stat_connect(args[0], 0);
	CHECK(fd >= 0);
	while ((r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = 0;
	CHECK_STR_EQ(buf, want);
	exit(0);
}

/* ---- a fake endpoint: hostile answers ------------------------------------ */

/* A document as an endpoint writes it (docs/rpc.md §8), but for one
 * thing: max_conns as given, conns connection lines with that peer, an
 * extra field on the endpoint line, a NUL and bytes after "end". */
struct fake {
	const char *name;
	const char *max_conns, *peer, *extra;
	int conns, nul;
	int status;	  /* smart-stat's */
	const char *err;  /* its error, NULL: none */
	const char *json; /* in its --json */
};

static const struct fake fakes[] = {
	{ "zero", "064", "10.0.0.1:7", "", 1, 0, 1,
	  "bad value of 'max_conns' (not a decimal number without leading "
	  "zeros)",
	  "\"error\":\"bad value of 'max_conns'" },
	{ "escape", "64", "a%1B]0;pwned%07b%9Bc", "", 1, 0, 0, NULL,
	  "\"peer\":\"a\\u001b]0;pwned\\u0007b\\u009bc\"" },
	{ "nul", "64", "10.0.0.1:7", "", 1, 1, 1, "a NUL byte in the answer",
	  "\"error\":\"a NUL byte in the answer\"" },
	{ "conns", "1", "10.0.0.1:7", "", 2, 0, 1,
	  "more connection lines than its max_conns (1)",
	  "\"error\":\"more connection lines than its max_conns (1)\"" },
	{ "key", "64", "10.0.0.1:7", " \x1b[2Jx=1", 1, 0, 1,
	  "unknown key '?[2Jx'", "\"error\":\"unknown key '\\u001b[2Jx'\"" },
	{ NULL, NULL, NULL, NULL, 0, 0, 0, NULL, NULL },
};

__attribute__((format(printf, 4, 5))) static void
doc_put(char *buf, size_t *len, size_t cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *len, cap - *len, fmt, ap);
	va_end(ap);
	CHECK(n >= 0 && (size_t)n < cap - *len);
	*len += (size_t)n;
}

static void doc_counters(char *buf, size_t *len, size_t cap)
{
	for (unsigned i = 0; smart_rpc_stats_field(i); i++)
		doc_put(buf, len, cap, " %s=%u", smart_rpc_stats_field(i), i);
}

/* The document of f for pid; its length (it may hold a NUL). */
static size_t fake_doc(const struct fake *f, long pid, char *buf, size_t cap)
{
	size_t len = 0;

	doc_put(buf, &len, cap,
		"smart-stat 1\nendpoint pid=%ld "
		"name=smart-stat:%ld:0 listen=- transport=fake live=%d "
		"max_conns=%s window=64 eager_max=4096 keepalive_ms=0 "
		"keepalive_misses=0 uptime_ms=1500 stat_answers=1 "
		"stat_denied=0 stat_evicted=0 stat_truncated=0%s",
		pid, pid, f->conns, f->max_conns, f->extra);
	doc_counters(buf, &len, cap);
	doc_put(buf, &len, cap, "\n");
	for (int i = 0; i < f->conns; i++) {
		doc_put(buf, &len, cap,
			"conn index=%d gen=1 state=live "
			"role=accepted peer=%s window=64 swin=64 inflight=0 "
			"backlog_bytes=0 rtt_ns=0 idle_ms=0 age_ms=2500",
			i, f->peer);
		doc_counters(buf, &len, cap);
		doc_put(buf, &len, cap, "\n");
	}
	doc_put(buf, &len, cap, "end conns=%d\n", f->conns);
	if (f->nul) {
		buf[len++] = 0; /* doc_put left room for its NUL */
		doc_put(buf, &len, cap, "conn index=9\n");
	}
	return len;
}

/* args: the fake's name, a pipe's fd to say it listens, one whose end
 * (EOF) stops it.  Every client gets the document, whatever it is. */
static void child_fake(char **args)
{
	const struct fake *f = fakes;
	char name[64], doc[16384];
	struct sockaddr_un un;
	size_t len;
	int lfd, ready = atoi(args[1]), stop = atoi(args[2]);

	while (strcmp(f->name, args[0]))
		f++;
	len = fake_doc(f, (long)getpid(), doc, sizeof(doc));
	snprintf(name, sizeof(name), "smart-stat:%ld:0", (long)getpid());
	CHECK_OK(smart__sock_listen(&un, smart__sock_abstract(name, &un), 8,
				    &lfd, NULL));
	CHECK_EQ(write(ready, "", 1), 1);
	close(ready);
	for (;;) {
		struct pollfd pf[2] = { { lfd, POLLIN, 0 },
					{ stop, POLLIN, 0 } };
		int fd;

		CHECK_GT(poll(pf, 2, -1), 0);
		if (pf[1].revents)
			break;
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		/* small: the socket's buffer takes it at once */
		CHECK_EQ(write(fd, doc, len), (ssize_t)len);
		close(fd);
	}
	close(lfd);
}

/* ---- the client side ----------------------------------------------------- */

struct client {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_rpc_conn_t *k;
};

static pid_t server_start_mode(const char *mode, char *addr)
{
	char fdtxt[16];
	int p[2];
	pid_t pid;
	ssize_t n;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	pid = test_spawn("server",
			 (const char *[]){ secret_path, fdtxt, mode, NULL });
	close(p[1]);
	n = read(p[0], addr, 63);
	close(p[0]);
	CHECK_MSG(n > 0, "the server did not start");
	addr[n] = 0;
	return pid;
}

static pid_t server_start(char *addr)
{
	return server_start_mode(NULL, addr);
}

static void client_open(struct client *c, const char *addr)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = KA_MS };

	c->ctx = ctx_new(secret_path);
	CHECK_OK(smart_worker_create(c->ctx, &c->w));
	CHECK_OK(smart_rpc_create(c->w, &cfg, &c->rpc));
	CHECK_OK(smart_rpc_connect(c->rpc, addr, &c->k));
}

static void client_close(struct client *c, pid_t server)
{
	int st;

	CHECK_OK(smart_rpc_call(c->k, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(server, &st, 0), server);
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server status %d",
		  st);
	smart_rpc_close(c->k);
	CHECK_OK(smart_rpc_destroy(c->rpc));
	CHECK_OK(smart_worker_destroy(c->w));
	CHECK_OK(smart_ctx_destroy(c->ctx));
}

static void calls(struct client *c, int n)
{
	uint8_t buf[100], back[100];
	uint32_t len;

	memset(buf, 7, sizeof(buf));
	for (int i = 0; i < n; i++) {
		CHECK_OK(smart_rpc_call(c->k, OP_ECHO, buf, sizeof(buf), back,
					sizeof(back), &len));
		CHECK_EQ(len, sizeof(buf));
	}
}

/*
 * Run the built smart-stat with args (NULL-ended), its stdout (and with
 * err_too its stderr) into out; returns its exit status.  With rpc, that
 * endpoint is progressed meanwhile (smart-stat asking this very process
 * must be answered).
 */
static int run_stat_to(const char *const *args, smart_rpc_t *rpc, char *out,
		       size_t cap, int err_too)
{
	const char *argv[8] = { SMART_BIN_DIR "/smart-stat" };
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	pid_t pid;
	int p[2], st, i;

	for (i = 0; args[i]; i++)
		argv[i + 1] = args[i];
	CHECK_OK(pipe2(p, O_CLOEXEC));
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	if (err_too)
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	CHECK_OK(posix_spawn(&pid, argv[0], &fa, NULL, (char **)argv, environ));
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t r;

		if (rpc)
			smart_rpc_progress(rpc);
		if (poll(&pf, 1, rpc ? 0 : 1000) <= 0)
			continue;
		r = read(p[0], out + len, cap - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	out[len] = 0;
	close(p[0]);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int run_stat(const char *const *args, smart_rpc_t *rpc, char *out,
		    size_t cap)
{
	return run_stat_to(args, rpc, out, cap, 0);
}

static int stat_pid(pid_t pid, int json, smart_rpc_t *rpc, char *out)
{
	char p[16];

	snprintf(p, sizeof(p), "%d", (int)pid);
	return run_stat((const char *[]){ "--pid", p, json ? "--json" : NULL,
					  NULL },
			rpc, out, OUT_MAX);
}

/* The number after "key": at or after from. */
static uint64_t json_u64(const char *from, const char *key)
{
	char pat[64];
	const char *s;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	s = strstr(from, pat);
	CHECK_MSG(s, "no %s in %s", key, from);
	return strtoull(s + strlen(pat), NULL, 10);
}

/* The one connection object of a --pid answer. */
static const char *json_conn(const char *out)
{
	const char *c = strstr(out, "\"conns\":[{");

	CHECK_MSG(c, "no connection in %s", out);
	CHECK_MSG(!strstr(c + 1, "\"conns\":"), "one endpoint wanted: %s", out);
	return c;
}

/* Every counter smart-stat printed equals st's, but for msgs_recv. */
static void check_counters(const char *conn, const struct smart_rpc_stats *st,
			   uint64_t recv_more)
{
	const uint64_t *v = (const uint64_t *)st;

	for (unsigned i = 0; smart_rpc_stats_field(i); i++) {
		const char *f = smart_rpc_stats_field(i);
		uint64_t want = v[i];

		if (!strcmp(f, "msgs_recv"))
			want -= recv_more;
		CHECK_MSG(json_u64(conn, f) == want,
			  "%s: smart-stat %" PRIu64 ", the endpoint %" PRIu64,
			  f, json_u64(conn, f), want);
	}
}

/* ---- cases ---------------------------------------------------------------- */

static void test_counts(void)
{
	static char out[OUT_MAX];
	struct smart_rpc_stats st;
	struct client c;
	char addr[64];
	pid_t server = server_start(addr);
	const char *conn;
	uint32_t len;

	client_open(&c, addr);
	calls(&c, CALLS);
	CHECK_EQ(smart_rpc_call(c.k, 77, NULL, 0, NULL, 0, NULL), SMART_ENOENT);

	/* our side: the dialed connection, exactly our counters */
	CHECK_MSG(!stat_pid(getpid(), 1, c.rpc, out), "smart-stat: %s", out);
	conn = json_conn(out);
	CHECK_OK(smart_rpc_conn_stats(c.k, &st));
	check_counters(conn, &st, 0);
	CHECK_U64_EQ(st.calls, CALLS + 1);
	CHECK_U64_EQ(st.call_errors, 1);
	CHECK_U64_EQ(st.msgs_sent, CALLS + 1);
	CHECK(strstr(conn, "\"role\":\"dialed\""));
	CHECK(strstr(conn, "\"state\":\"live\""));
	CHECK_U64_EQ(json_u64(out, "live"), 1);
	CHECK_U64_EQ(json_u64(out, "pid"), (uint64_t)getpid());

	/* the server's side, then its own count, which has one request more
	 * (the OP_STATS being handled) and nothing else */
	CHECK_MSG(!stat_pid(server, 1, NULL, out), "smart-stat: %s", out);
	conn = json_conn(out);
	CHECK_OK(smart_rpc_call(c.k, OP_STATS, NULL, 0, &st, sizeof(st), &len));
	CHECK_EQ(len, sizeof(st));
	check_counters(conn, &st, 1);
	CHECK_U64_EQ(st.msgs_recv, CALLS + 2);
	CHECK_U64_EQ(st.bytes_recv, CALLS * 100);
	CHECK(strstr(conn, "\"role\":\"accepted\""));
	CHECK(strstr(out, "\"listen\":\"127.0.0.1:"));
	CHECK_U64_EQ(json_u64(out, "conns_accepted"), 1);

	/* the table: the endpoint's row and the connection's */
	CHECK_EQ(stat_pid(server, 0, NULL, out), 0);
	CHECK_MSG(!strncmp(out, "ENDPOINT ", 9), "table: %s", out);
	CHECK_MSG(strstr(out, " listen ") && strstr(out, " accepted "),
		  "table: %s", out);
	client_close(&c, server);
}

/* A server asleep in event mode answers smart-stat: the control socket
 * is in its descriptor's set (it has no timer to wake it otherwise), and
 * its sleeps are counted. */
static void test_event_mode(void)
{
	static char out[OUT_MAX];
	struct client c;
	char addr[64];
	pid_t server = server_start_mode("event", addr);
	uint64_t t0;

	client_open(&c, addr);
	calls(&c, CALLS);
	for (int i = 0; i < 2; i++) {
		t0 = smart_now_ns(); /* idle: the server goes to sleep */
		while (smart_now_ns() - t0 < 20000000)
			smart_rpc_progress(c.rpc);
		CHECK_MSG(!stat_pid(server, 1, NULL, out), "smart-stat: %s",
			  out);
		CHECK_U64_EQ(json_u64(out, "live"), 1);
	}
	printf("   a sleeping server answered twice; its sleeps: %" PRIu64 "\n",
	       json_u64(out, "event_sleeps"));
	CHECK_GT(json_u64(out, "event_sleeps"), 0);
	calls(&c, CALLS);
	client_close(&c, server);
}

/* Every endpoint of this user: ours and a server's, without --pid.  The
 * status is not checked: endpoints of other processes of this user (tests
 * running beside this one) may be slow to answer. */
static void test_listing(void)
{
	static char out[OUT_MAX];
	char addr[64], name[64], pat[128];
	pid_t server = server_start(addr);
	struct client c;
	uint32_t len;

	client_open(&c, addr);
	run_stat((const char *[]){ "--json", NULL }, c.rpc, out, OUT_MAX);
	CHECK_OK(smart_rpc_stat_name(c.rpc, name, sizeof(name)));
	snprintf(pat, sizeof(pat),
		 "{\"pid\":%d,\"name\":\"%s\",\"listen\":", (int)getpid(),
		 name);
	CHECK_MSG(strstr(out, pat), "no %s in %s", pat, out);
	CHECK_OK(smart_rpc_call(c.k, OP_NAME, NULL, 0, name, sizeof(name),
				&len));
	snprintf(pat, sizeof(pat),
		 "{\"pid\":%d,\"name\":\"%s\",\"listen\":", (int)server, name);
	CHECK_MSG(strstr(out, pat), "no %s in %s", pat, out);
	client_close(&c, server);
}

/* Run argv[0] and wait for it; its exit status (its pid in *out). */
static int spawn_pid(const char *const *argv, pid_t *out)
{
	pid_t pid;
	int st;

	CHECK_OK(
		posix_spawn(&pid, argv[0], NULL, NULL, (char **)argv, environ));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	*out = pid;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int spawn_wait(const char *const *argv)
{
	pid_t pid;

	return spawn_pid(argv, &pid);
}

/* Errors that say what happened; names; the counters' names. */
static void test_errors(void)
{
	static char out[OUT_MAX];
	const char *bin = SMART_BIN_DIR "/smart-stat";
	char n0[64], n1[64], want[64];
	smart_ctx_t *ctx = ctx_new(secret_path);
	smart_worker_t *w0, *w1;
	smart_rpc_t *r0, *r1;
	pid_t gone;
	unsigned i;

	CHECK_EQ(spawn_wait((const char *[]){ bin, "--help", NULL }), 0);
	CHECK_EQ(spawn_wait((const char *[]){ bin, "--pid", "0", NULL }), 2);
	CHECK_EQ(spawn_wait((const char *[]){ bin, "--bogus", NULL }), 2);
	/* a process that has none, and one that is no more */
	CHECK_EQ(stat_pid(1, 0, NULL, out), 1);
	CHECK_EQ(spawn_pid((const char *[]){ "/bin/true", NULL }, &gone), 0);
	CHECK_EQ(stat_pid(gone, 1, NULL, out), 1);
	CHECK_STR_EQ(out, "{\"version\":1,\"endpoints\":[]}\n");

	/* two endpoints of one process: two names */
	CHECK_OK(smart_worker_create(ctx, &w0));
	CHECK_OK(smart_worker_create(ctx, &w1));
	CHECK_OK(smart_rpc_create(w0, NULL, &r0));
	CHECK_OK(smart_rpc_create(w1, NULL, &r1));
	CHECK_OK(smart_rpc_stat_name(r0, n0, sizeof(n0)));
	CHECK_OK(smart_rpc_stat_name(r1, n1, sizeof(n1)));
	snprintf(want, sizeof(want), "smart-stat:%d:", (int)getpid());
	CHECK(!strncmp(n0, want, strlen(want)));
	CHECK(!strncmp(n1, want, strlen(want)));
	CHECK(strcmp(n0, n1));
	CHECK_EQ(smart_rpc_stat_name(r0, n0, 4), SMART_ERANGE);
	CHECK_EQ(smart_rpc_stat_name(NULL, n0, sizeof(n0)), SMART_EINVAL);
	CHECK_OK(smart_rpc_destroy(r1));
	CHECK_OK(smart_rpc_destroy(r0));
	CHECK_OK(smart_worker_destroy(w1));
	CHECK_OK(smart_worker_destroy(w0));
	CHECK_OK(smart_ctx_destroy(ctx));

	/* every counter named, in order */
	for (i = 0; i < sizeof(struct smart_rpc_stats) / 8; i++)
		CHECK_MSG(smart_rpc_stats_field(i), "counter %u unnamed", i);
	CHECK(!smart_rpc_stats_field(i));
	CHECK_STR_EQ(smart_rpc_stats_field(0), "msgs_sent");
}

/* A flood of clients that connect and never read, and one of another
 * uid: the endpoint keeps serving, and its counters show both. */
static void test_hostile(void)
{
	static char out[OUT_MAX];
	int fds[FLOOD], nfd = 0, st;
	char addr[64], name[64];
	pid_t server = server_start(addr), other;
	struct client c;
	uint32_t len;

	client_open(&c, addr);
	CHECK_OK(smart_rpc_call(c.k, OP_NAME, NULL, 0, name, sizeof(name),
				&len));
	for (int i = 0; i < FLOOD; i++) {
		/* the backlog is bounded: some are refused (EAGAIN) */
		fds[nfd] = stat_connect(name, 1);
		nfd += fds[nfd] >= 0;
	}
	/* more than one look's accepts (STAT_ACCEPTS_PER_TICK, 4) */
	CHECK_GT(nfd, 4);
	calls(&c, 100); /* served meanwhile */
	/* the backlog may still be full: smart-stat waits it out */
	CHECK_MSG(!stat_pid(server, 1, NULL, out), "smart-stat: %s", out);
	/* the backlog is served in order: every flooder was answered
	 * before smart-stat, which counts itself */
	CHECK_GE(json_u64(out, "stat_answers"), (uint64_t)nfd + 1);
	CHECK_U64_EQ(json_u64(out, "stat_denied"), 0);
	CHECK_U64_EQ(json_u64(json_conn(out), "msgs_recv"), 101);
	for (int i = 0; i < nfd; i++)
		close(fds[i]);

	if (geteuid()) {
		printf("  (another uid: not tested, this needs root to become "
		       "uid 65534)\n");
	} else {
		other = test_spawn("other_uid", (const char *[]){ name, NULL });
		CHECK_EQ(waitpid(other, &st, 0), other);
		CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st),
			  "another uid was not denied (%d)", st);
		CHECK_MSG(!stat_pid(server, 1, NULL, out), "smart-stat: %s",
			  out);
		CHECK_U64_EQ(json_u64(out, "stat_denied"), 1);
	}
	calls(&c, 10);
	client_close(&c, server);
}

/* A connection's age counts from when it went live, not from when the QP
 * cache made it: the second client's connection takes a spare that the
 * server made (and that was seen, when the age was kept beside the
 * connections) around the first one's. */
static void test_age(void)
{
	static char out[OUT_MAX];
	uint64_t young = UINT64_MAX, old = 0;
	double t0, since;
	struct client c1, c2;
	char addr[64];
	pid_t server = server_start(addr);
	const char *s;

	client_open(&c1, addr);
	calls(&c1, 1);
	sleep_ms(1000);
	t0 = test_now_ms();
	client_open(&c2, addr);
	calls(&c2, 1);
	CHECK_MSG(!stat_pid(server, 1, NULL, out), "smart-stat: %s", out);
	since = test_now_ms() - t0;
	s = strstr(out, "\"conns\":[");
	for (; s && (s = strstr(s, "\"age_ms\":")); s++) {
		uint64_t age = json_u64(s, "age_ms");

		young = age < young ? age : young;
		old = age > old ? age : old;
	}
	printf("   ages %" PRIu64 " ms and %" PRIu64
	       " ms, QP cache hits %" PRIu64 "\n",
	       old, young, json_u64(out, "qp_cache_hits"));
	CHECK_GE(json_u64(out, "qp_cache_hits"), 2);
	CHECK_GE(old, 1000);
	/* no older than the time since it was opened: measured, for the
	 * tool's start under load may take longer than any guess */
	CHECK_LE(young, (uint64_t)since + 1);
	CHECK_LT(young, old);
	smart_rpc_close(c2.k);
	CHECK_OK(smart_rpc_destroy(c2.rpc));
	CHECK_OK(smart_worker_destroy(c2.w));
	CHECK_OK(smart_ctx_destroy(c2.ctx));
	client_close(&c1, server);
}

/* ---- a strict JSON checker (RFC 8259, ASCII only) ------------------------ */

static const char *js_ws(const char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	return s;
}

static const char *js_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	for (; *s != '"'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch >= 0x7f) /* a NUL (the end) too */
			return NULL;
		if (ch != '\\')
			continue;
		s++;
		if (*s == 'u') {
			for (int i = 1; i <= 4; i++)
				if (!isxdigit((unsigned char)s[i]))
					return NULL;
			s += 4;
		} else if (!*s || !strchr("\"\\/bfnrt", *s)) {
			return NULL;
		}
	}
	return s + 1;
}

static const char *js_digits(const char *s)
{
	if (!isdigit((unsigned char)*s))
		return NULL;
	while (isdigit((unsigned char)*s))
		s++;
	return s;
}

static const char *js_number(const char *s)
{
	if (*s == '-')
		s++;
	if (*s == '0')
		s++; /* and no digit may follow: the caller sees it */
	else if (!(s = js_digits(s)))
		return NULL;
	if (*s == '.' && !(s = js_digits(s + 1)))
		return NULL;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		s = js_digits(s);
	}
	return s;
}

static const char *js_value(const char *s, int depth)
{
	char close;

	s = js_ws(s);
	if (depth > 16)
		return NULL;
	if (*s == '"')
		return js_string(s);
	if (*s != '{' && *s != '[') {
		if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4))
			return s + 4;
		if (!strncmp(s, "false", 5))
			return s + 5;
		return js_number(s);
	}
	close = *s == '{' ? '}' : ']';
	s = js_ws(s + 1);
	if (*s == close)
		return s + 1;
	for (;;) {
		if (close == '}') {
			if (!(s = js_string(js_ws(s))))
				return NULL;
			s = js_ws(s);
			if (*s++ != ':')
				return NULL;
		}
		if (!(s = js_value(s, depth + 1)))
			return NULL;
		s = js_ws(s);
		if (*s == close)
			return s + 1;
		if (*s++ != ',')
			return NULL;
	}
}

static void check_json(const char *out)
{
	const char *end = js_value(out, 0);

	CHECK_MSG(end && !*js_ws(end), "invalid JSON at %s in:\n%s",
		  end ? end : "?", out);
}

/* Nothing a terminal would act on: printable ASCII and newlines. */
static void check_safe(const char *out)
{
	for (const char *s = out; *s; s++)
		CHECK_MSG(*s == '\n' || (*s >= 0x20 && *s < 0x7f),
			  "byte 0x%02x at %zu in:\n%s", (unsigned char)*s,
			  (size_t)(s - out), out);
}

/* A fake endpoint answering each hostile document: smart-stat refuses
 * it with an error naming the problem (table: on stderr; --json: as
 * that endpoint's "error"), or prints it with its control bytes as '?'
 * (table) and \u escapes (--json); its output is safe and its JSON
 * valid either way. */
static void test_fake(void)
{
	static char out[OUT_MAX];
	char p[16], ready_fd[16], stop_fd[16], c;

	for (const struct fake *f = fakes; f->name; f++) {
		int ready[2], stop[2], st;
		pid_t pid;

		CHECK_OK(pipe2(ready, O_CLOEXEC));
		CHECK_OK(pipe2(stop, O_CLOEXEC));
		/* the child's ends go over; ours stay here */
		CHECK_OK(fcntl(ready[1], F_SETFD, 0));
		CHECK_OK(fcntl(stop[0], F_SETFD, 0));
		snprintf(ready_fd, sizeof(ready_fd), "%d", ready[1]);
		snprintf(stop_fd, sizeof(stop_fd), "%d", stop[0]);
		pid = test_spawn("fake", (const char *[]){ f->name, ready_fd,
							   stop_fd, NULL });
		CHECK(pid > 0);
		close(ready[1]);
		close(stop[0]);
		CHECK_MSG(read(ready[0], &c, 1) == 1, "fake %s did not start",
			  f->name);
		close(ready[0]);
		snprintf(p, sizeof(p), "%d", (int)pid);

		CHECK_EQ(run_stat_to((const char *[]){ "--pid", p, "--json",
						       NULL },
				     NULL, out, OUT_MAX, 0),
			 f->status);
		check_json(out);
		check_safe(out);
		CHECK_MSG(strstr(out, f->json), "%s: no %s in --json:\n%s",
			  f->name, f->json, out);

		CHECK_EQ(run_stat_to((const char *[]){ "--pid", p, NULL }, NULL,
				     out, OUT_MAX, 1),
			 f->status);
		check_safe(out);
		if (f->err)
			CHECK_MSG(strstr(out, f->err), "%s: no %s in:\n%s",
				  f->name, f->err, out);
		else
			CHECK_MSG(strstr(out, " a?]0;pwned?b?c "),
				  "%s: the peer not as '?'s:\n%s", f->name,
				  out);
		printf("   %-6s %s\n", f->name,
		       f->err ? f->err :
				"printed "
				"safe");

		close(stop[1]); /* the fake ends */
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK_MSG(WIFEXITED(st) && !WEXITSTATUS(st), "fake %s: %d",
			  f->name, st);
	}
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "server", child_server },
		{ "other_uid", child_other_uid },
		{ "fake", child_fake },
		{ NULL, NULL }
	};
	int rc;

	test_children(argc, argv, children);
	test_secret_file(secret_path, sizeof(secret_path),
			 "/tmp/smart-stat-XXXXXX", SECRET);
	rc = test_main(argc, argv,
		       (struct test_case[]){ { "counts", test_counts },
					     { "listing", test_listing },
					     { "event_mode", test_event_mode },
					     { "errors", test_errors },
					     { "hostile", test_hostile },
					     { "age", test_age },
					     { "fake", test_fake },
					     { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
