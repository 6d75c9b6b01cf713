/*
 * smart-ping: probe a memory blade with one-sided ops, like ping/rping,
 * or (--rpc) a peer's messaging endpoint with RPC calls, like X-RDMA's
 * XR-Ping.
 *
 * Each probe is one op and one sync from the main context, or one call of
 * SMART_RPC_OP_PING (which every endpoint answers with the request's
 * bytes); its round-trip time is printed, then min/avg/max/mdev and
 * percentiles.  With --verify every probe also checks data end to end: in
 * a block it allocated on the blade, WRITE a pattern then READ it back
 * (read/write), or FAA a private counter and check the old value (faa),
 * or CAS it forward (cas); with --rpc, the answer against the request (a
 * pattern of its own per probe).  Exit 0 when every probe succeeded (and
 * verified), 1 otherwise, 2 on bad usage.  Public API and the kit (flags,
 * the ctx joined to the blade, or the library options alone for --rpc).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"
#include "smart/rpc.h"

#define TOOL "smart-ping"

struct ping_cfg {
	struct kit_common com; /* transport, secret file, the target */
	int count;
	double interval;
	int size;
	int op; /* index in ops: read, write, cas, faa */
	int verify;
	int quiet;
	int rpc; /* a peer endpoint, not a blade */
};

static const char *const ops[] = { "read", "write", "cas", "faa", NULL };

#define P struct ping_cfg
static const struct kit_flag ping_flags[] = {
	KIT_INT("count", P, count, 1, 100000000, "N", "probes [10]"),
	KIT_TIME("interval", P, interval, 0, 3600, "S",
		 "time between probes, e.g. 0.2 or 50ms [0.2]"),
	KIT_INT("size", P, size, 1, 4096, "B",
		"bytes per read/write probe, 1..4096 [8]"),
	KIT_CHOICE("op", P, op, ops, "read|write|cas|faa", "the probe [read]"),
	KIT_FLAG("verify", P, verify, "check data end to end on every probe"),
	KIT_FLAG("rpc", P, rpc,
		 "HOST:PORT is a peer's messaging endpoint "
		 "(smart_rpc_listen):\nprobe it with RPC calls (--size "
		 "bytes each way), not a blade"),
	KIT_LIBOPT("transport", P, com.transport, "transport", "shm|verbs",
		   "transport [shm, or SMART_TRANSPORT]"),
	KIT_LIBOPT("secret-file", P, com.secret_file, "secret_file", "FILE",
		   "the blade's secret [SMART_SECRET_FILE]"),
	KIT_FLAG("quiet", P, quiet, "only the summary"),
	KIT_END,
};
#undef P

static void parse(int argc, char **argv, struct ping_cfg *c)
{
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " [flags] HOST:PORT",
		.about = "  Probe a memory blade with one-sided ops, one op and "
			 "one sync each.\n",
		.group = { { ping_flags, c, NULL } },
		.nargs = 1,
		.args = "HOST:PORT",
	};
	int pos = kit_parse(&cli, argc, argv);

	kit_addr_check(TOOL, NULL, argv[pos], 1);
	c->com.connect.v[c->com.connect.n++] = argv[pos];
	if (c->rpc && c->op)
		kit_bad(TOOL, "op", ops[c->op],
			"is a blade's probe (--rpc "
			"probes with calls)");
	if (c->op >= 2)
		c->size = 8;
}

struct ping {
	const struct ping_cfg *c;
	smart_ctx_t *ctx; /* --rpc: our own (no blade) */
	smart_rpc_t *rpc;
	smart_rpc_conn_t *conn;
	smart_worker_t *w;
	smart_gaddr_t block;
	uint8_t *buf, *back;
	uint64_t counter; /* expected value of the faa/cas word */
};

/* --rpc: one call of the library's echo op, its answer checked. */
static int probe_rpc(struct ping *p, long seq)
{
	const struct ping_cfg *c = p->c;
	uint32_t n = 0;
	int rc;

	for (int i = 0; i < c->size; i++)
		p->buf[i] = (uint8_t)(seq * 31 + i);
	rc = smart_rpc_call(p->conn, SMART_RPC_OP_PING, p->buf,
			    (uint32_t)c->size, p->back, (uint32_t)c->size, &n);
	if (rc)
		return rc;
	return c->verify && (n != (uint32_t)c->size ||
			     memcmp(p->buf, p->back, (size_t)c->size));
}

/* One probe; returns 0, a SMART_E* code, or 1 for a verify mismatch. */
static int probe(struct ping *p, long seq)
{
	const struct ping_cfg *c = p->c;
	uint64_t old = 0;
	int rc = 0, i;

	if (c->rpc)
		return probe_rpc(p, seq);
	switch (c->op) {
	case 0:
		if (c->verify)
			rc = smart_write_sync(p->w, p->block, p->buf, c->size);
		if (!rc)
			rc = smart_read_sync(p->w, p->block, c->size, p->back);
		return rc ? rc :
			    c->verify && memcmp(p->buf, p->back, c->size) != 0;
	case 1:
		for (i = 0; i < (int)c->size; i++)
			p->buf[i] = (uint8_t)(seq * 31 + i);
		rc = smart_write_sync(p->w, p->block, p->buf, c->size);
		if (rc || !c->verify)
			return rc;
		rc = smart_read_sync(p->w, p->block, c->size, p->back);
		return rc ? rc : memcmp(p->buf, p->back, c->size) != 0;
	case 2:
		rc = smart_cas_sync(p->w, p->block, p->counter, p->counter + 1,
				    &old);
		break;
	default:
		rc = smart_faa_sync(p->w, p->block, 1, &old);
	}
	if (rc)
		return rc;
	if (c->verify && old != p->counter)
		return 1;
	p->counter = old + 1;
	return 0;
}

/* --rpc: a ctx of the library options (no blade; its messages through
 * the kit's log handler, as a blade run's), an endpoint, the
 * connection to the peer, the two probe buffers; the step that failed
 * said. */
static int ping_setup_rpc(struct ping *p, struct kit_env *e)
{
	static const char *const kv[] = { "buf_pool=4M", NULL };
	smart_opts_t *o = NULL;
	const char *step = "options";
	int rc = kit_env_opts(e, &p->c->com, kv, &o);

	if (!rc) {
		step = "ctx";
		rc = smart_ctx_create(o, &p->ctx);
	}
	smart_opts_destroy(o);
	if (!rc) {
		step = "worker";
		rc = smart_worker_create(p->ctx, &p->w);
	}
	if (!rc) {
		step = "endpoint";
		rc = smart_rpc_create(p->w, NULL, &p->rpc);
	}
	if (!rc) {
		step = p->c->com.connect.v[0];
		rc = smart_rpc_connect(p->rpc, step, &p->conn);
		if (rc) { /* held: main may say what answered instead */
			snprintf(e->connect_line, sizeof(e->connect_line),
				 TOOL ": %s: %s\n", step, smart_strerror(rc));
			return rc;
		}
	}
	if (!rc) {
		step = "buffers";
		p->buf = malloc(4096);
		p->back = malloc(4096);
		rc = p->buf && p->back ? 0 : SMART_ENOMEM;
	}
	if (rc)
		fprintf(stderr, TOOL ": %s: %s\n", step, smart_strerror(rc));
	return rc;
}

static void ping_close_rpc(struct ping *p)
{
	smart_rpc_close(p->conn);
	smart_rpc_destroy(p->rpc);
	smart_worker_destroy(p->w);
	smart_ctx_destroy(p->ctx);
	free(p->buf);
	free(p->back);
}

/* --rpc: the connection's counters, next to the round trips. */
static void conn_line(const struct ping *p)
{
	struct smart_rpc_stats st;

	if (smart_rpc_conn_stats(p->conn, &st))
		return;
	printf("connection: %" PRIu64 " messages sent, %" PRIu64 " received, "
	       "%" PRIu64 " window stalls, %" PRIu64
	       " keepalive probes, %" PRIu64 " rnr\n",
	       st.msgs_sent, st.msgs_recv, st.window_stalls, st.ka_probes,
	       st.rnr);
}

/* The ctx joined to the blade (the kit's environment, with a small
 * buffer pool: a probe needs two 4 KiB buffers), a block of the blade to
 * probe, and the counter word zeroed for cas/faa. */
static int ping_setup(struct ping *p, struct kit_env *e)
{
	static const char *const kv[] = { "buf_pool=4M", NULL };
	const struct ping_cfg *c = p->c;
	uint64_t zero = 0;
	int rc;

	if (c->rpc)
		return ping_setup_rpc(p, e);
	rc = kit_env_open(e, &c->com, kv);

	if (rc)
		return rc;
	rc = smart_worker_create(e->ctx, &p->w);
	if (!rc)
		rc = smart_buf_alloc(p->w, 4096, (void **)&p->buf);
	if (!rc)
		rc = smart_buf_alloc(p->w, 4096, (void **)&p->back);
	if (!rc)
		rc = smart_alloc(p->w, e->blade[0], 4096, &p->block);
	if (!rc && c->op >= 2)
		rc = smart_write_sync(p->w, p->block, &zero, 8);
	if (!rc)
		memset(p->buf, 0x5a, 4096);
	else
		fprintf(stderr, TOOL ": %s: %s\n", c->com.connect.v[0],
			smart_strerror(rc));
	return rc;
}

static void quiet(void *arg, int level, const char *prefix, const char *msg)
{
	(void)arg, (void)level, (void)prefix, (void)msg;
}

/* Does addr answer as the other kind of peer (a messaging endpoint when
 * rpc is 0, a blade when 1)?  A quiet ctx of the same options and secret
 * tries; 1 when it got in. */
static int answers_as(const struct ping_cfg *c, const char *addr, int rpc)
{
	static const char *const kv[] = { "buf_pool=4M", NULL };
	smart_opts_t *o = NULL;
	smart_ctx_t *ctx = NULL;
	smart_worker_t *w = NULL;
	smart_rpc_t *r = NULL;
	smart_rpc_conn_t *conn = NULL;
	uint16_t id;
	int rc = kit_opts_build(&c->com, kv, &o);

	if (!rc)
		rc = smart_log_set_handler(o, quiet, NULL);
	if (!rc)
		rc = smart_ctx_create(o, &ctx);
	smart_opts_destroy(o);
	if (!rc && !rpc) {
		rc = smart_ctx_connect(ctx, addr, &id);
		smart_ctx_destroy(ctx);
		return !rc;
	}
	if (!rc)
		rc = smart_worker_create(ctx, &w);
	if (!rc)
		rc = smart_rpc_create(w, NULL, &r);
	if (!rc)
		rc = smart_rpc_connect(r, addr, &conn);
	smart_rpc_close(conn);
	smart_rpc_destroy(r);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return !rc;
}

/* A peer that did not answer as asked: say what it is, when it is the
 * other kind (issue 29: a blade and an endpoint failed alike), in place
 * of the failed connect's line; 1 when said. */
static int say_found(const struct ping_cfg *c)
{
	const char *addr = c->com.connect.v[0];

	if (!answers_as(c, addr, !c->rpc))
		return 0;
	fprintf(stderr, TOOL ": %s is %s, not %s: probe it %s\n", addr,
		c->rpc ? "a blade (smartd)" :
			 "a messaging endpoint (smart_rpc_listen)",
		c->rpc ? "a messaging endpoint" : "a blade",
		c->rpc ? "without --rpc" : "with --rpc");
	return 1;
}

static void summary(const struct ping_cfg *c, const double *rtt, long ok,
		    long failed)
{
	double min = 1e300, max = 0, sum = 0, sq = 0, mean, mdev;
	smart_hist_t h;
	long i;

	smart_hist_init(&h);
	for (i = 0; i < ok; i++) {
		min = rtt[i] < min ? rtt[i] : min;
		max = rtt[i] > max ? rtt[i] : max;
		sum += rtt[i];
		sq += rtt[i] * rtt[i];
		smart_hist_add(&h, (uint64_t)(rtt[i] * 1000));
	}
	mean = ok ? sum / (double)ok : 0;
	mdev = ok ? sqrt(sq / (double)ok - mean * mean) : 0;
	printf("--- %s smart-ping (%s, %d B) ---\n", c->com.connect.v[0],
	       c->rpc ? "rpc" : ops[c->op], c->size);
	printf("%ld probes, %ld ok, %ld failed%s\n", ok + failed, ok, failed,
	       c->verify ? ", data verified" : "");
	if (ok)
		printf("rtt min/avg/max/mdev = %.2f/%.2f/%.2f/%.2f us, p50 "
		       "%.2f us, p99 %.2f us\n",
		       min, mean, max, mdev,
		       smart_hist_quantile(&h, 0.5) / 1000,
		       smart_hist_quantile(&h, 0.99) / 1000);
}

/* Where the blade's memory is (any client may ask): what an operator
 * wants to see next to the round trips. */
static void memory_line(struct ping *p, const struct kit_env *e)
{
	struct smart_alloc_usage u;

	kit_usage_print("memory", smart_alloc_usage(p->w, e->blade[0], &u), &u);
}

int main(int argc, char **argv)
{
	struct ping_cfg c = { .count = 10, .interval = 0.2, .size = 8 };
	struct ping p = { .c = &c, .block = SMART_GADDR_NULL };
	struct kit_env env = { 0 };
	double *rtt;
	long seq, ok = 0, failed = 0;
	int rc;

	kit_common_init(&c.com, TOOL);
	parse(argc, argv, &c);
	c.com.hold_connect = 1; /* say_found may say better */
	rtt = calloc((size_t)c.count, sizeof(*rtt));
	rc = rtt ? ping_setup(&p, &env) : SMART_ENOMEM;
	if (rc)
		kit_env_cause(&env); /* said: no summary of its messages */
	/* one line: what answered, else why the connect failed */
	if (!((rc == SMART_ECONN || rc == SMART_EPROTO ||
	       rc == SMART_EVERSION) &&
	      !SMART_M_TOOL_PING_BOTH_LINES && say_found(&c)))
		fputs(env.connect_line, stderr);
	for (seq = 0; !rc && seq < c.count; seq++) {
		uint64_t t0 = smart_now_ns();
		int r = probe(&p, seq);
		double us = (double)(smart_now_ns() - t0) / 1000;

		if (r == 0)
			rtt[ok++] = us;
		else
			failed++;
		if (!c.quiet)
			printf("seq=%ld op=%s size=%d rtt=%.2f us%s%s\n", seq,
			       c.rpc ? "rpc" : ops[c.op], c.size, us,
			       r == 0 ? "" :
			       r == 1 ? " VERIFY FAILED" :
					" ERROR ",
			       r < 0 ? smart_status_name(r) : "");
		if (seq + 1 < c.count && c.interval > 0)
			kit_sleep(c.interval);
	}
	if (!rc)
		summary(&c, rtt, ok, failed);
	if (!rc && c.rpc)
		conn_line(&p);
	else if (!rc)
		memory_line(&p, &env);
	if (c.rpc) {
		ping_close_rpc(&p);
		kit_env_close(&env); /* its log: said once, the tool's way */
	} else {
		/* a long-running blade must not keep a block per ping */
		if (p.w && p.block != SMART_GADDR_NULL)
			smart_free(p.w, p.block, 4096);
		smart_worker_destroy(p.w);
		kit_env_close(&env);
	}
	free(rtt);
	return rc ? 1 : failed ? 1 : 0;
}
