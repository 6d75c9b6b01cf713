/*
 * smart-rpc-bench: the messaging layer's echo latency and one-way message
 * rate between two processes (include/smart/rpc.h), for the side-by-side
 * comparison with UCX's ucx_perftest (ucp_am_lat, ucp_am_bw) of
 * docs/rpc.md.  The interim driver until `smart-bench rpc` exists (issue
 * notes): one client thread, one connection, one call outstanding (echo)
 * or as many one-way messages as the window lets out (--oneway).
 *
 * With no --connect it starts its server itself, in a second process (the
 * same binary with --serve, stopped with SIGTERM after the run), as
 * smart-perf starts an embedded blade; --serve alone serves until SIGINT
 * or SIGTERM, any number of clients one after another.
 * Flags are the benchmark kit's (bench/kit): --help, ranges and the one
 * error path.  Output: one line of text, or JSON with --json.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"
#include "smart/rpc.h"
#include "smart/smart.h"

#define OP_ECHO 1
#define OP_SINK 2
#define OP_DONE 3

#define TOOL "smart-rpc-bench"

struct opt {
	struct kit_common com;	/* transport, secret file, seconds, json */
	int size;
	int oneway, serve;
	const char *connect, *listen;
};

#define O struct opt
static const struct kit_flag rb_flags[] = {
	KIT_INT("size", O, size, 0, 4096, "B", "payload bytes [32]"),
	KIT_FLAG("oneway", O, oneway,
		 "one-way messages as fast as the window lets out"),
	KIT_STR("connect", O, connect, "HOST:PORT",
		"a server started elsewhere with --serve"),
	KIT_FLAG("serve", O, serve, "be the server; print the address"),
	KIT_STR("listen", O, listen, "HOST:PORT",
		"with --serve: where [127.0.0.1:0]"),
	KIT_TIME("seconds", O, com.seconds, 1e-3, 3600, "S",
		 "measured time [3]"),
	KIT_FLAG("json", O, com.json, "one JSON object instead of the line"),
	KIT_LIBOPT("transport", O, com.transport, "transport", "shm|verbs",
		   "transport [shm, or SMART_TRANSPORT]"),
	KIT_LIBOPT("secret-file", O, com.secret_file, "secret_file", "FILE",
		   "the shared secret [SMART_SECRET_FILE]"),
	KIT_LIBKV("opt", O, com.opts, "KEY=VALUE",
		  "any library option (repeatable)"),
	KIT_END,
};
#undef O

static void parse(int argc, char **argv, struct opt *o)
{
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " [flags]",
		.about = "  Echo round trips (one call outstanding) or one-way "
			 "messages over one\n  connection; without --connect "
			 "the server runs in a second process.\n",
		.group = { { rb_flags, o, NULL } },
	};

	memset(o, 0, sizeof(*o));
	kit_common_init(&o->com, TOOL);
	o->size = 32;
	o->listen = "127.0.0.1:0";
	kit_parse(&cli, argc, argv);
	if (o->serve && o->connect)
		kit_bad(TOOL, "serve", NULL, "--serve and --connect exclude "
			"each other");
}

static int ctx_open(const struct opt *o, smart_ctx_t **ctx,
		    smart_worker_t **w, smart_rpc_t **rpc)
{
	smart_opts_t *so;
	int rc = kit_opts_build(&o->com, (const char *const[]){
		"buf_pool=4M", NULL }, &so);

	if (rc)
		return rc;
	rc = smart_ctx_create(so, ctx);
	smart_opts_destroy(so);
	if (!rc)
		rc = smart_worker_create(*ctx, w);
	if (!rc)
		rc = smart_rpc_create(*w, NULL, rpc);
	return rc;
}

static void h_echo(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	smart_rpc_reply(q, 0, d, n);
}

static void h_sink(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	++*(uint64_t *)a;
}

/* A client's end: how many one-way messages arrived since the last. */
static void h_done(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	uint64_t *sunk = a;

	smart_rpc_reply(q, 0, sunk, sizeof(*sunk));
	*sunk = 0;
}

/* SIGINT or SIGTERM pending (they are blocked: kit_signals_block). */
static int stop_asked(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	return sigtimedwait(&set, NULL, &zero) > 0;
}

/* Serve until SIGINT or SIGTERM; prints the address on stdout first (one
 * line), for whoever started us, and the endpoint's counters on stderr at
 * the end (connections of clients killed without a word are still live:
 * there is no keepalive yet, docs/rpc.md §6). */
static int serve(const struct opt *o)
{
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	struct smart_rpc_stats st;
	uint64_t sunk = 0;
	char addr[64];
	int rc;

	kit_signals_block();
	rc = ctx_open(o, &ctx, &w, &rpc);

	if (!rc)
		rc = smart_rpc_listen(rpc, o->listen);
	if (!rc)
		rc = smart_rpc_listen_addr(rpc, addr, sizeof(addr));
	if (rc) {
		fprintf(stderr, "smart-rpc-bench: serve: %s\n",
			smart_strerror(rc));
		return 1;
	}
	smart_rpc_register(rpc, OP_ECHO, h_echo, NULL);
	smart_rpc_register(rpc, OP_SINK, h_sink, &sunk);
	smart_rpc_register(rpc, OP_DONE, h_done, &sunk);
	printf("%s\n", addr);
	fflush(stdout);
	for (uint64_t i = 1; (i & 4095) || !stop_asked(); i++)
		smart_rpc_progress(rpc);
	smart_rpc_stats(rpc, &st);
	fprintf(stderr, TOOL " server: %d live connections; accepted %llu, "
		"failed %llu, refused handshakes %llu; messages in %llu, out "
		"%llu; rnr %llu, rnr waits %llu, malformed %llu\n",
		smart_rpc_conns(rpc), (unsigned long long)st.conns_accepted,
		(unsigned long long)st.conns_failed,
		(unsigned long long)st.handshakes_refused,
		(unsigned long long)st.msgs_recv,
		(unsigned long long)st.msgs_sent,
		(unsigned long long)st.rnr, (unsigned long long)st.rnr_waits,
		(unsigned long long)st.proto_errors);
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int run(const struct opt *o, const char *addr)
{
	static uint8_t buf[4096], back[4096];
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_rpc_conn_t *c;
	uint64_t n = 0, t0, end, *lat = NULL, cap = 1 << 22, sunk = 0;
	double secs, p50 = 0, p99 = 0;
	uint32_t got;
	int rc = ctx_open(o, &ctx, &w, &rpc);

	if (!rc)
		rc = smart_rpc_connect(rpc, addr, &c);
	if (rc) {
		fprintf(stderr, "smart-rpc-bench: %s: %s\n", addr,
			smart_strerror(rc));
		return 1;
	}
	if (!o->oneway && !(lat = malloc(cap * sizeof(*lat))))
		return 1;
	t0 = smart_now_ns();
	end = t0 + (uint64_t)(o->com.seconds * 1e9);
	while (!rc) {
		uint64_t s = smart_now_ns();

		if (s >= end)
			break;
		for (int k = 0; k < 64 && !rc; k++, n++) {
			if (o->oneway) {
				rc = smart_rpc_send(c, OP_SINK, buf,
						    (uint32_t)o->size);
				continue;
			}
			s = smart_now_ns();
			rc = smart_rpc_call(c, OP_ECHO, buf, (uint32_t)o->size, back,
					    sizeof(back), &got);
			if (n < cap)
				lat[n] = smart_now_ns() - s;
		}
	}
	/* the one-way rate counts only what the server took */
	if (!rc)
		rc = smart_rpc_call(c, OP_DONE, NULL, 0, &sunk, sizeof(sunk),
				    &got);
	secs = (double)(smart_now_ns() - t0) / 1e9;
	if (rc) {
		fprintf(stderr, "smart-rpc-bench: %s\n", smart_strerror(rc));
		return 1;
	}
	if (lat) {
		uint64_t m = n < cap ? n : cap;

		qsort(lat, m, sizeof(*lat), cmp_u64);
		p50 = lat[m / 2] / 1e3;
		p99 = lat[m * 99 / 100] / 1e3;
	}
	if (o->oneway)
		n = sunk;
	if (o->com.json)
		printf("{\"mode\":\"%s\",\"size\":%u,\"transport\":\"%s\","
		       "\"msgs\":%llu,\"seconds\":%.3f,\"mrps\":%.3f,"
		       "\"p50_us\":%.3f,\"p99_us\":%.3f}\n",
		       o->oneway ? "oneway" : "echo", o->size,
		       smart_ctx_transport(ctx), (unsigned long long)n, secs,
		       n / secs / 1e6, p50, p99);
	else
		printf("%-7s size %4u B  %10llu msgs  %.3f M msg/s  "
		       "rtt p50 %.3f us  p99 %.3f us\n",
		       o->oneway ? "oneway" : "echo", o->size,
		       (unsigned long long)n, n / secs / 1e6, p50, p99);
	free(lat);
	smart_rpc_close(c);
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return 0;
}

/* Start this binary with --serve and the flags the server must share
 * (transport, secret, library options); read its address line. */
static pid_t spawn_server(const struct opt *o, char *addr, size_t len)
{
	const char *argv[8 + 2 * KIT_STRS_MAX] = { TOOL, "--serve" };
	int p[2], n = 2;
	pid_t pid;
	FILE *f;

	if (o->com.transport) {
		argv[n++] = "--transport";
		argv[n++] = o->com.transport;
	}
	if (o->com.secret_file) {
		argv[n++] = "--secret-file";
		argv[n++] = o->com.secret_file;
	}
	for (int i = 0; i < o->com.opts.n; i++) {
		argv[n++] = "--opt";
		argv[n++] = o->com.opts.v[i];
	}
	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (pid < 0 || !f || !fgets(addr, (int)len, f)) {
		if (f)
			fclose(f);
		else
			close(p[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	addr[strcspn(addr, "\n")] = 0;
	fclose(f);
	return pid;
}

int main(int argc, char **argv)
{
	struct opt o;
	char addr[64];
	pid_t pid = -1;
	int rc;

	parse(argc, argv, &o);
	if (o.serve)
		return serve(&o);
	if (!o.connect) {
		pid = spawn_server(&o, addr, sizeof(addr));
		if (pid < 0) {
			fprintf(stderr, TOOL ": the server did not start\n");
			return 1;
		}
		o.connect = addr;
	}
	rc = run(&o, o.connect);
	if (pid > 0) {
		kill(pid, rc ? SIGKILL : SIGTERM);
		waitpid(pid, NULL, 0);
	}
	return rc;
}
