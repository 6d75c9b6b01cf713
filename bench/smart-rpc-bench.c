/*
 * smart-rpc-bench: the messaging layer's echo latency and one-way message
 * rate between two processes (include/smart/rpc.h), for the side-by-side
 * comparison with UCX's ucx_perftest (ucp_am_lat, ucp_am_bw) of
 * docs/rpc.md.  The interim driver until `smart-bench rpc` exists (issue
 * notes): one client thread, one connection, one call outstanding (echo)
 * or as many one-way messages as the window lets out (--oneway).
 *
 * With no --connect it starts its server itself, in a second process (the
 * same binary with --serve), as smart-perf starts an embedded blade.
 * Output: one line of text, or JSON with --json.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smart/rpc.h"
#include "smart/smart.h"

#define OP_ECHO 1
#define OP_SINK 2
#define OP_DONE 3

struct opt {
	uint32_t size;
	double secs;
	int oneway, json, serve;
	const char *connect, *secret, *listen;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: smart-rpc-bench [--size B] [--seconds S] [--oneway] "
		"[--json]\n"
		"                       [--connect HOST:PORT | --serve "
		"[--listen HOST:PORT]] [--secret-file F]\n"
		"Echo round trips (one call outstanding) or, with --oneway, "
		"one-way messages\nas fast as the window allows, over one "
		"connection.  Without --connect the\nserver is started in a "
		"second process.  Defaults: --size 32 --seconds 3.\n");
}

static int parse(int argc, char **argv, struct opt *o)
{
	*o = (struct opt){ .size = 32, .secs = 3, .listen = "127.0.0.1:0" };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--oneway")) {
			o->oneway = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--serve")) {
			o->serve = 1;
		} else if (v && !strcmp(a, "--size")) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);

			if (*end || n > 4096 || *v == '-')
				return -1;
			o->size = (uint32_t)n;
			i++;
		} else if (v && !strcmp(a, "--seconds")) {
			o->secs = atof(v);
			if (!(o->secs > 0 && o->secs <= 3600))
				return -1;
			i++;
		} else if (v && !strcmp(a, "--connect")) {
			o->connect = v;
			i++;
		} else if (v && !strcmp(a, "--listen")) {
			o->listen = v;
			i++;
		} else if (v && !strcmp(a, "--secret-file")) {
			o->secret = v;
			i++;
		} else {
			return -1;
		}
	}
	return 0;
}

static int ctx_open(const struct opt *o, smart_ctx_t **ctx,
		    smart_worker_t **w, smart_rpc_t **rpc)
{
	smart_opts_t *so;
	int rc = smart_opts_create(&so);

	if (!rc && o->secret)
		rc = smart_opts_set(so, "secret_file", o->secret);
	if (!rc)
		rc = smart_opts_set(so, "buf_pool", "4M");
	if (!rc)
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

static void h_done(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	uint64_t *sunk = a;

	smart_rpc_reply(q, 0, sunk, sizeof(*sunk));
	sunk[1] = 1;
}

/* Serve until a client says it is done (OP_DONE); prints the address on
 * stdout first (one line), for whoever started us. */
static int serve(const struct opt *o)
{
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	uint64_t sunk[2] = { 0, 0 };
	char addr[64];
	int rc = ctx_open(o, &ctx, &w, &rpc);

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
	smart_rpc_register(rpc, OP_SINK, h_sink, sunk);
	smart_rpc_register(rpc, OP_DONE, h_done, sunk);
	printf("%s\n", addr);
	fflush(stdout);
	while (!sunk[1])
		smart_rpc_progress(rpc);
	/* let the last answer leave before the endpoint goes */
	for (int i = 0; i < 100000; i++)
		smart_rpc_progress(rpc);
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
	end = t0 + (uint64_t)(o->secs * 1e9);
	while (!rc) {
		uint64_t s = smart_now_ns();

		if (s >= end)
			break;
		for (int k = 0; k < 64 && !rc; k++, n++) {
			if (o->oneway) {
				rc = smart_rpc_send(c, OP_SINK, buf, o->size);
				continue;
			}
			s = smart_now_ns();
			rc = smart_rpc_call(c, OP_ECHO, buf, o->size, back,
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
	if (o->json)
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

/* Start `argv0 --serve` with our flags; read its address line. */
static pid_t spawn_server(const char *argv0, const struct opt *o,
			  char *addr, size_t len)
{
	int p[2];
	pid_t pid;
	FILE *f;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl("/proc/self/exe", argv0, "--serve", "--secret-file",
		      o->secret ? o->secret : "", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || !fgets(addr, (int)len, f)) {
		if (f)
			fclose(f);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
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

	if (parse(argc, argv, &o)) {
		usage(stderr);
		return 2;
	}
	if (o.secret && !*o.secret)
		o.secret = NULL;
	if (o.serve)
		return serve(&o);
	if (!o.connect) {
		pid = spawn_server(argv[0], &o, addr, sizeof(addr));
		if (pid < 0) {
			fprintf(stderr, "smart-rpc-bench: no server\n");
			return 1;
		}
		o.connect = addr;
	}
	rc = run(&o, o.connect);
	if (pid > 0) {
		if (rc)
			kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return rc;
}
