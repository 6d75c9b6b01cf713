/*
 * Messaging (include/smart/rpc.h) between processes: echo calls, errors
 * that say what happened, one-way messages to a slow server (every one
 * delivered once and in order, the window stalling the sender and no
 * receiver-not-ready ever), nested calls, the shared secret, and hostile
 * peers (garbage handshakes, a malformed message on a live connection).
 *
 * The servers are child processes (test_spawn) on the transport of
 * SMART_TEST_TRANSPORT (shm by default); each writes its listen address to
 * a pipe and serves until asked to exit.
 */
#include <fcntl.h>
#include <poll.h>
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

#define SECRET "rpc-test-secret-4711"
#define OP_ECHO 1
#define OP_SINK 2	/* one-way: payload starts with a u64 sequence */
#define OP_COUNTS 3	/* reply: struct counts */
#define OP_NESTED 4	/* call OP_ECHO on the server's upstream, reply */
#define OP_EXIT 9
#define FLOOD 20000

struct counts {
	uint64_t sunk, out_of_order, rnr, proto_errors, acks_sent,
		accepted, backlogged;
};

struct server {
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_rpc_conn_t *up;	/* nested calls go there */
	int slow_ns;
	uint64_t next_seq, sunk, ooo;
	int stop;
};

static char secret_path[64];

static smart_ctx_t *ctx_new(const char *secret_file)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_file,
					     "buf_pool", "4M", NULL });
}

static void write_secret(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
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

/* args: secret file, pipe fd, slow ns, upstream address or "-" */
static void child_server(char **args)
{
	struct server s = { 0 };
	smart_ctx_t *ctx = ctx_new(args[0]);
	char addr[64];
	int fd = atoi(args[1]);

	s.slow_ns = atoi(args[2]);
	CHECK_OK(smart_worker_create(ctx, &s.w));
	CHECK_OK(smart_rpc_create(s.w, NULL, &s.rpc));
	CHECK_OK(smart_rpc_register(s.rpc, OP_ECHO, h_echo, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_SINK, h_sink, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_COUNTS, h_counts, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_NESTED, h_nested, &s));
	CHECK_OK(smart_rpc_register(s.rpc, OP_EXIT, h_exit, &s));
	if (strcmp(args[3], "-"))
		CHECK_OK(smart_rpc_connect(s.rpc, args[3], &s.up));
	CHECK_OK(smart_rpc_listen(s.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(s.rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
	close(fd);
	CHECK_OK(smart_task_spawn(s.w, serve_task, &s));
	CHECK_OK(smart_worker_run(s.w));
	smart_rpc_close(s.up);
	CHECK_OK(smart_rpc_destroy(s.rpc));
	CHECK_OK(smart_worker_destroy(s.w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static pid_t server_start(int slow_ns, const char *up, char *addr)
{
	char fdtxt[16], slow[16];
	int p[2];
	pid_t pid;
	ssize_t n;

	CHECK_OK(pipe(p));
	snprintf(fdtxt, sizeof(fdtxt), "%d", p[1]);
	snprintf(slow, sizeof(slow), "%d", slow_ns);
	pid = test_spawn("server", (const char *[]){ secret_path, fdtxt, slow,
						   up ? up : "-", NULL });
	close(p[1]);
	n = read(p[0], addr, 63);
	close(p[0]);
	CHECK_MSG(n > 0, "the server did not start");
	addr[n] = 0;
	return pid;
}

/* ---- the client side ----------------------------------------------------- */

struct client {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
};

static void client_open_cfg(struct client *c, const char *secret_file,
			    const struct smart_rpc_cfg *cfg)
{
	c->ctx = ctx_new(secret_file);
	CHECK_OK(smart_worker_create(c->ctx, &c->w));
	CHECK_OK(smart_rpc_create(c->w, cfg, &c->rpc));
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
	/* errors that say what happened */
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, 4097, back, sizeof(back), &n),
		 SMART_EINVAL);
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, 100, back, 10, &n),
		 SMART_ERANGE);
	CHECK_EQ(n, 100);
	CHECK_EQ(smart_rpc_call(k, 77, out, 1, back, 10, &n), SMART_ENOENT);
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 8, back, 8, &n));
	smart_rpc_close(k);
	client_close(&c);

	/* a client whose messages may be longer than the server takes:
	 * refused at the call (the connection lives on), never sent */
	client_open_cfg(&c, secret_path,
			&(struct smart_rpc_cfg){ .eager_max = 8192 });
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	CHECK_EQ(smart_rpc_call(k, OP_ECHO, out, 6000, back, sizeof(back),
				&n), SMART_EINVAL);
	CHECK_EQ(smart_rpc_send(k, OP_SINK, out, 6000), SMART_EINVAL);
	CHECK_OK(smart_rpc_call(k, OP_ECHO, out, 4000, back, sizeof(back),
				&n));
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
		CHECK_OK(smart_rpc_send(k, OP_SINK, msg, (uint32_t)(8 + i % 57)));
	}
	got = counts_of(k);	/* ordered behind every one-way message */
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
	server_stop(k, p2);	/* it closes its upstream connection */
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
static void raw_attempt(const char *addr, const void *bytes, size_t n,
			int wait_ms)
{
	int fd, one = 1;
	struct sockaddr_un un;
	const char *port = strrchr(addr, ':') + 1;
	char buf[512], name[64];
	int64_t end = smart__now_ms() + wait_ms;

	snprintf(name, sizeof(name), "smart-rpc:%s", port);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_OK(connect(fd, (struct sockaddr *)&un,
			 smart__sock_abstract(name, &un)));
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

static void test_hostile(void)
{
	static const uint8_t garbage[] = "GET / HTTP/1.1\r\n\r\n";
	static const uint8_t trunc[] = { 'S', 'M', 'R', 'T', 1, 0 };
	static const uint8_t huge[] = { 'S', 'M', 'R', 'T', 1, 0, 0, 0,
					0xff, 0xff, 0xff, 0x7f };
	char bad_secret[] = "/tmp/smart-rpc-bad-XXXXXX";
	struct smart_tp_wr wr = { 0 };
	struct client c, bad;
	smart_rpc_conn_t *k;
	struct counts got;
	char addr[64];
	pid_t pid;
	uint8_t back[16];
	uint32_t n;

	if (getenv("SMART_TEST_TRANSPORT") &&
	    strcmp(getenv("SMART_TEST_TRANSPORT"), "shm"))
		test_skip("raw handshakes are written for shm's unix socket");
	pid = server_start(0, NULL, addr);
	raw_attempt(addr, garbage, sizeof(garbage), 2000);
	raw_attempt(addr, huge, sizeof(huge), 2000);
	raw_attempt(addr, trunc, sizeof(trunc), 10000);
	/* the wrong secret */
	close(mkstemp(bad_secret));
	write_secret(bad_secret, "not-the-secret-at-all");
	client_open(&bad, bad_secret);
	CHECK_EQ(smart_rpc_connect(bad.rpc, addr, &k), SMART_EACCES);
	client_close(&bad);
	unlink(bad_secret);

	/* a malformed message on a live connection: declared length past
	 * what arrived.  The server cuts that connection only. */
	client_open(&c, secret_path);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	smart__msg_put_hdr(k->sbuf, &(struct smart_msg_hdr){
		.type = SMART_MSG_REQ, .op = OP_ECHO, .call = 1,
		.len = 1u << 30 });
	wr.opcode = SMART_TP_SEND;
	wr.local = k->sbuf;
	wr.len = SMART_MSG_HDR_LEN + 8;
	wr.lkey = k->lkey;
	wr.flags = SMART_TP_IMM | SMART_TP_SIGNALED;
	wr.imm = smart__msg_imm(SMART_MSG_K_DATA, 0);
	wr.wr_id = UINT64_C(0xffff);	/* no connection of ours */
	CHECK_OK(c.rpc->tp->post(k->qp, &wr, 1));
	/* our side learns when its next call fails or times out */
	n = 0;
	CHECK_NE(smart_rpc_call(k, OP_ECHO, "x", 1, back, sizeof(back), &n), 0);
	smart_rpc_close(k);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	got = counts_of(k);
	CHECK_U64_EQ(got.proto_errors, 1);
	CHECK_GE(got.accepted, 2);
	server_stop(k, pid);
	smart_rpc_close(k);
	client_close(&c);
}

/* Bad arguments never crash. */
static void test_args(void)
{
	struct smart_rpc_cfg cfg = { .window = 8192 };
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
		{ "server", child_server }, { NULL, NULL } };
	int fd, rc;

	test_children(argc, argv, children);
	snprintf(secret_path, sizeof(secret_path), "/tmp/smart-rpc-XXXXXX");
	fd = mkstemp(secret_path);
	CHECK(fd >= 0);
	close(fd);
	write_secret(secret_path, SECRET);
	rc = test_main(argc, argv, (struct test_case[]){
		{ "echo", test_echo },
		{ "slow_server", test_slow_server },
		{ "nested", test_nested },
		{ "hostile", test_hostile },
		{ "args", test_args },
		{ NULL, NULL } });
	unlink(secret_path);
	return rc;
}
