/*
 * `smart-bench rpc`: the messaging layer (include/smart/rpc.h, docs/rpc.md)
 * by message size: echo calls (round trips, --outstanding K in flight per
 * thread) or one-way sends (--oneway) from --clients processes of
 * --threads threads, each thread with its own worker, endpoint and
 * connection.  This file is the module: its flags and their checks
 * (with the library options in force), the setup (the shared mapping,
 * the server) and the report; rpc_load.c runs the processes.
 *
 * Without --connect the server is started in a second process, as
 * smart-perf starts an embedded blade, with a random secret unless a
 * secret file is in force; --serve is that server alone, for --connect
 * from elsewhere, serving until SIGINT or SIGTERM and printing its
 * counters.
 *
 * Invariants: the JSON keys and the CSV columns are the documented
 * interface (README, docs/rpc.md): new ones go at the end; mrps counts
 * answered calls (echo) or messages sent and then confirmed handled
 * (--oneway) per second of the window, gbps their payload bits (echo:
 * the requests'; the answers carry as much again).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rpc_bench.h"

#define R struct rpc_bench
static const struct kit_flag rpc_flags[] = {
	KIT_SIZE("size", R, size, 0, RPC_BENCH_SIZE_MAX, "B",
		 "payload bytes of a message, K/M suffixes; over\n"
		 "4096 by rendezvous [32]"),
	KIT_FLAG("oneway", R, oneway,
		 "one-way messages as fast as the window lets out,\n"
		 "no answers (mrps: messages per second)"),
	KIT_INT("clients", R, clients, 1, 256, "N", "client processes [1]"),
	KIT_INT("outstanding", R, outstanding, 1, 1024, "K",
		"calls in flight per thread: K tasks, each calling\n"
		"in a loop (--oneway: K tasks sending) [1]"),
	KIT_FLAG("serve", R, serve,
		 "be the server only: print its address, "
		 "serve until\nSIGINT/SIGTERM, then its counters"),
	KIT_STR("listen", R, listen, "HOST:PORT",
		"with --serve: where [127.0.0.1:0]"),
	KIT_INT("timeout", R, timeout_ms, 1, 3600000, "MS",
		"a call's timeout (cfg.timeout_ms; a 64-MiB echo on a\n"
		"slow link needs more) [5000]"),
	KIT_INT("gap", R, gap_us, 0, 1000000, "US",
		"echo: each task waits US microseconds after each\n"
		"answer (an idle server between calls: what --event\n"
		"costs when it sleeps); --connects: between connects,\n"
		"polling (the QP caches refill) [0]"),
	KIT_INT("connects", R, connects, 1, 10000000, "N",
		"connection setup: each thread N times connects,\n"
		"makes one echo call of --size bytes and closes,\n"
		"from its main context (p50/p99: the three;\n"
		"connect_p50_us/p99_us: the connect alone)"),
	KIT_INT("qp-cache", R, qp_cache, 0, 64, "K",
		"both sides' QP cache (cfg.qp_cache): connections\n"
		"kept ready; 0 none [the library's, 2]"),
	KIT_FLAG("event", R, event,
		 "the server in event mode: it sleeps on "
		 "its descriptor\nwhen idle (smart_rpc_event_arm) instead of "
		 "polling"),
	KIT_END,
};
#undef R

static const struct kit_col rpc_csv[] = {
	{ "mode", "mode", NULL },
	{ "size", "size", NULL },
	{ "clients", "clients", NULL },
	{ "threads", "threads", NULL },
	{ "outstanding", "outstanding", NULL },
	{ "msgs", "msgs", NULL },
	{ "mrps", "mrps", NULL },
	{ "gbps", "gbps", NULL },
	{ "p50_us", "p50_us", NULL },
	{ "p99_us", "p99_us", NULL },
	{ "p999_us", "p999_us", NULL },
	{ "errors", "errors", NULL },
	{ "transport", "transport", NULL },
	{ NULL, NULL, NULL },
};

static void *rpc_create(struct bench_run *r)
{
	struct rpc_bench *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->run = r;
	b->size = RPC_BENCH_SIZE_UNSET; /* 32 */
	b->qp_cache = -1;
	return b;
}

/* A server takes no client flags; clients, outstanding and size are
 * still unset (0, 0, RPC_BENCH_SIZE_UNSET) here unless given. */
static void check_serve(struct rpc_bench *b, const struct bench_run *r)
{
	if (r->com.connect.n)
		kit_bad(BENCH_TOOL, "serve", NULL,
			"--serve and --connect "
			"exclude each other");
	if (b->oneway || b->clients || b->outstanding || r->com.threads != 1 ||
	    b->size != RPC_BENCH_SIZE_UNSET || b->timeout_ms || b->gap_us ||
	    b->connects)
		kit_bad(BENCH_TOOL, "serve", NULL,
			"a server takes no --oneway, "
			"--clients, --threads, --outstanding, --timeout, --gap, "
			"--connects or --size (its clients do; it takes every "
			"size)");
	if (r->com.csv)
		kit_bad(BENCH_TOOL, "csv", r->com.csv,
			"a server has no result "
			"row (--json prints its counters)");
	if (!b->listen)
		b->listen = "127.0.0.1:0";
	b->size = 0;
	b->outstanding = 1;
}

/* The options in force, however given (flag, --opt, SMART_*): the
 * transport, whether a secret file is (else a spawned server and its
 * clients share a random secret; a --connect'ed server's comes from a
 * file), and room for the tasks. */
static void opts_learn(struct rpc_bench *b, const struct bench_run *r)
{
	char file[4096] = "", tasks[16] = "";
	smart_opts_t *o;
	int rc = rpc_bench_opts(b, &o);

	if (!rc) {
		rc = smart_opts_get(o, "transport", b->transport,
				    sizeof(b->transport));
		if (!rc)
			rc = smart_opts_get(o, "secret_file", file,
					    sizeof(file));
		if (!rc)
			rc = smart_opts_get(o, "max_tasks", tasks,
					    sizeof(tasks));
		smart_opts_destroy(o);
	}
	if (rc)
		kit_bad(BENCH_TOOL, NULL, NULL, "library options: %s",
			smart_strerror(rc));
	if (atoi(tasks) < b->outstanding)
		kit_bad(BENCH_TOOL, "outstanding", NULL,
			"%d tasks, but the "
			"library option max_tasks is %s",
			b->outstanding, tasks);
	b->own_secret = !b->serve && !r->com.connect.n && !file[0];
}

static void rpc_check(void *m, struct bench_run *r)
{
	struct rpc_bench *b = m;

	if (r->com.blade_size)
		kit_bad(BENCH_TOOL, "blade-size", NULL, "rpc has no blade");
	if (b->serve) {
		check_serve(b, r);
		opts_learn(b, r);
		return;
	}
	if (b->listen)
		kit_bad(BENCH_TOOL, "listen", b->listen,
			"is for --serve (a "
			"client's server listens on loopback, any port)");
	if (!b->timeout_ms)
		b->timeout_ms = 5000;
	if (b->gap_us && b->oneway)
		kit_bad(BENCH_TOOL, "gap", NULL, "is for echo calls");
	if (b->connects && (b->oneway || b->outstanding))
		kit_bad(BENCH_TOOL, "connects", NULL,
			"takes no --oneway or "
			"--outstanding (one dial at a time per thread)");
	if (b->event && r->com.connect.n)
		kit_bad(BENCH_TOOL, "event", NULL,
			"is the server's (start "
			"it with --serve --event)");
	if (!b->clients)
		b->clients = 1;
	if (!b->outstanding)
		b->outstanding = 1;
	if (b->size == RPC_BENCH_SIZE_UNSET)
		b->size = 32;
	if (b->clients * r->com.threads > RPC_BENCH_CONNS_MAX)
		kit_bad(BENCH_TOOL, "threads", NULL,
			"%d clients x %d threads: "
			"more than %d connections",
			b->clients, r->com.threads, RPC_BENCH_CONNS_MAX);
	opts_learn(b, r);
}

static int shared_map(struct rpc_bench *b, const struct bench_run *r)
{
	int n = b->clients * r->com.threads;
	void *p;

	b->sh_len = sizeof(*b->sh) + (size_t)n * sizeof(b->sh->t[0]);
	p = mmap(NULL, b->sh_len, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		b->sh_len = 0;
		return SMART_ENOMEM;
	}
	b->sh = p;
	atomic_init(&b->sh->gate.phase, KIT_PREP);
	atomic_init(&b->sh->gate.ready, 0);
	for (int i = 0; i < n; i++) {
		b->sh->t[i].b = b;
		b->sh->t[i].client = i / r->com.threads;
		b->sh->t[i].idx = i % r->com.threads;
		smart_hist_init(&b->sh->t[i].hist);
	}
	b->kids = calloc((size_t)b->clients, sizeof(*b->kids));
	return b->kids ? 0 : SMART_ENOMEM;
}

static int rpc_setup(void *m, struct bench_run *r)
{
	struct rpc_bench *b = m;
	int rc = b->own_secret ?
			 smart_secret_generate(b->secret, sizeof(b->secret)) :
			 0;

	if (!rc && !b->serve)
		rc = shared_map(b, r);
	if (rc) {
		fprintf(stderr, BENCH_TOOL " rpc: setup: %s\n",
			smart_strerror(rc));
		return rc;
	}
	if (!b->serve && !r->com.connect.n)
		rc = rpc_bench_spawn_server(b);
	return rc;
}

static int rpc_run(void *m, struct bench_run *r)
{
	struct rpc_bench *b = m;
	int rc;

	(void)r;
	if (b->serve)
		return rpc_bench_serve(b, stdout);
	rc = rpc_bench_clients(b);
	rpc_bench_stop_server(b, rc != 0);
	return rc;
}

static void rpc_destroy(void *m)
{
	struct rpc_bench *b = m;

	rpc_bench_stop_server(b, 1);
	if (b->sh)
		munmap(b->sh, b->sh_len);
	free(b->kids);
	free(b);
}

/* ---- report ---- */

static const char *mode(const struct rpc_bench *b)
{
	return b->serve	   ? "serve" :
	       b->connects ? "connect" :
	       b->oneway   ? "oneway" :
			     "echo";
}

static void print_header(const struct rpc_bench *b, const struct bench_run *r)
{
	const struct kit_strs *c = &r->com.connect;

	kit_rule();
	printf("                    RPC %s (smart-bench %s)\n",
	       b->connects ? "connection setup" :
	       b->oneway   ? "one-way messages" :
			     "echo calls",
	       SMART_VERSION_STRING);
	kit_head("Transport", "%s", b->transport);
	if (c->n)
		kit_head("Server", "connected, %s%s", c->v[0],
			 c->n > 1 ? " and more (threads spread over them)" :
				    "");
	else
		kit_head("Server", "spawned, %s (one thread)", b->addr);
	kit_head("Clients", "%d process%s x %d thread%s x %d %s%s%s",
		 b->clients, b->clients > 1 ? "es" : "", r->com.threads,
		 r->com.threads > 1 ? "s" : "", b->outstanding,
		 b->oneway ? "sending task" : "call",
		 b->outstanding > 1 ? "s" : "", b->oneway ? "" : " in flight");
	kit_head("Message", "%" PRIu64 " B payload, %s %d B; window %d",
		 b->size,
		 b->size > RPC_BENCH_EAGER ? "by rendezvous, over" :
					     "eager, up to",
		 RPC_BENCH_EAGER, RPC_BENCH_WINDOW);
	kit_head("Duration", "%.2f s", b->res.secs);
	kit_rule();
}

static void print_table(const struct rpc_bench *b, const struct bench_run *r)
{
	const struct rpc_bench_result *s = &b->res;

	print_header(b, r);
	printf(" %-8s %-12s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", "#bytes",
	       "#msgs", "Mrps", "Gb/s", "p50[us]", "p99[us]", "p999[us]",
	       "max[us]", "errors");
	printf(" %-8" PRIu64 " %-12" PRIu64
	       " %-9.3f %-9.3f %-9.2f %-9.2f %-9.2f "
	       "%-9.1f %" PRIu64 "\n",
	       b->size, s->msgs, s->mrps, s->gbps, s->lat.p50_us, s->lat.p99_us,
	       s->lat.p999_us, s->max_us, s->errors);
	kit_rule();
	if (b->connects) {
		printf(" latency: smart_rpc_connect + one call + smart_rpc_close;"
		       " the connect alone: p50 %.2f us, p99 %.2f us\n",
		       s->dial.p50_us, s->dial.p99_us);
		printf(" QP cache %d (both sides), hits at the clients %" PRIu64
		       "\n",
		       b->qp_cache < 0 ? 2 : b->qp_cache, s->cache_hits);
	} else {
		printf(" latency: %s\n",
		       b->oneway ?
			       "time in smart_rpc_send "
			       "(queueing; waiting while the window is full), one "
			       "send in 8" :
			       "round trip of every smart_rpc_call");
	}
	printf(" client connections: window stalls %" PRIu64 ", call timeouts "
	       "%" PRIu64 ", rnr %" PRIu64 ", sent by rendezvous %" PRIu64 "\n",
	       s->stalls, s->timeouts, s->rnr, s->rndv);
	if (s->first_err)
		printf(" errors: %" PRIu64 ", the first %s (%s)\n", s->errors,
		       smart_status_name(s->first_err),
		       smart_strerror(s->first_err));
}

static void record_run(const struct rpc_bench *b, const struct bench_run *r,
		       struct kit_rec *rec)
{
	const struct rpc_bench_result *s = &b->res;

	kit_rec_str(rec, "mode", mode(b));
	kit_rec_num(rec, "size", "%" PRIu64, b->size);
	kit_rec_num(rec, "clients", "%d", b->clients);
	kit_rec_num(rec, "threads", "%d", r->com.threads);
	kit_rec_num(rec, "outstanding", "%d", b->outstanding);
	kit_rec_num(rec, "gap_us", "%d", b->gap_us);
	kit_rec_str(rec, "transport", b->transport);
	kit_rec_str(rec, "server", r->com.connect.n ? "connected" : "spawned");
	kit_rec_str(rec, "server_mode",
		    r->com.connect.n ? "" :
		    b->event	     ? "event" :
				       "poll");
	kit_rec_num(rec, "msgs", "%" PRIu64, s->msgs);
	kit_rec_num(rec, "seconds", "%.3f", s->secs);
	kit_rec_num(rec, "mrps", "%.4f", s->mrps);
	kit_rec_num(rec, "gbps", "%.4f", s->gbps);
	kit_rec_lat(rec, &s->lat);
	kit_rec_num(rec, "max_us", "%.1f", s->max_us);
	kit_rec_num(rec, "errors", "%" PRIu64, s->errors);
	kit_rec_str(rec, "first_error",
		    s->first_err ? smart_status_name(s->first_err) : "");
	kit_rec_num(rec, "window_stalls", "%" PRIu64, s->stalls);
	kit_rec_num(rec, "call_timeouts", "%" PRIu64, s->timeouts);
	kit_rec_num(rec, "rnr", "%" PRIu64, s->rnr);
	kit_rec_num(rec, "stop_signal", "%d", s->stop_sig);
	kit_rec_num(rec, "rndv_sent", "%" PRIu64, s->rndv);
	kit_rec_num(rec, "connects", "%d", b->connects);
	kit_rec_num(rec, "qp_cache", "%d", b->qp_cache < 0 ? 2 : b->qp_cache);
	kit_rec_num(rec, "connect_p50_us", "%.4f", s->dial.p50_us);
	kit_rec_num(rec, "connect_p99_us", "%.4f", s->dial.p99_us);
	kit_rec_num(rec, "qp_cache_hits", "%" PRIu64, s->cache_hits);
}

/* --serve: the endpoint's counters at the end (said on stderr too). */
static void record_serve(const struct rpc_bench *b, struct kit_rec *rec)
{
	const struct smart_rpc_stats *st = &b->srv;

	kit_rec_str(rec, "mode", mode(b));
	kit_rec_str(rec, "transport", b->transport);
	kit_rec_num(rec, "live_conns", "%d", b->srv_conns);
	kit_rec_num(rec, "conns_accepted", "%" PRIu64, st->conns_accepted);
	kit_rec_num(rec, "conns_failed", "%" PRIu64, st->conns_failed);
	kit_rec_num(rec, "handshakes_refused", "%" PRIu64,
		    st->handshakes_refused);
	kit_rec_num(rec, "msgs_in", "%" PRIu64, st->msgs_recv);
	kit_rec_num(rec, "msgs_out", "%" PRIu64, st->msgs_sent);
	kit_rec_num(rec, "rnr", "%" PRIu64, st->rnr);
	kit_rec_num(rec, "rnr_waits", "%" PRIu64, st->rnr_waits);
	kit_rec_num(rec, "malformed", "%" PRIu64, st->proto_errors);
	kit_rec_str(rec, "server_mode", b->event ? "event" : "poll");
	kit_rec_num(rec, "event_sleeps", "%" PRIu64, st->event_sleeps);
}

/* Errors in the window fail the run, its results printed all the same. */
static int rpc_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct rpc_bench *b = m;
	const struct rpc_bench_result *s = &b->res;

	if (b->serve) {
		record_serve(b, rec);
		return 0;
	}
	if (!r->com.json)
		print_table(b, r);
	record_run(b, r, rec);
	if (!s->errors && !s->first_err && !s->msgs) {
		fprintf(stderr, BENCH_TOOL
			" rpc: the run failed: no message "
			"completed in the window (a longer --seconds?)\n");
		return SMART_ETIMEDOUT;
	}
	if (!s->errors && !s->first_err)
		return 0;
	fprintf(stderr,
		BENCH_TOOL " rpc: the run failed: %" PRIu64 " errors, "
			   "the first %s\n",
		s->errors, smart_strerror(s->first_err));
	return s->first_err ? s->first_err : SMART_EPROTO;
}

const struct bench_module bench_rpc = {
	.name = "rpc",
	.summary = "messaging: echo calls or one-way sends by message size",
	.about = "  Echo calls (round trips) or one-way messages (--oneway) of "
		 "--size bytes from\n  --clients processes x --threads threads "
		 "(each its own worker, endpoint and\n  connection) x "
		 "--outstanding calls in flight.  Without --connect the server\n"
		 "  runs in a second process; --serve runs one alone for "
		 "--connect HOST:PORT\n  from elsewhere (several --connect: "
		 "threads spread over them).  mrps:\n  million calls (or "
		 "messages) per second; gbps: their payload bits.\n"
		 "  --connects N: connection setup instead (N x connect, one "
		 "call, close per\n  thread; --qp-cache K on both sides).\n"
		 "  Every answer is compared with its request byte for byte "
		 "(a difference is\n  an error).  "
		 "SIGINT/SIGTERM end the measured window early (the run "
		 "still\n  reports) or stop a server.\n",
	.flags = rpc_flags,
	.csv = rpc_csv,
	.create = rpc_create,
	.check = rpc_check,
	.setup = rpc_setup,
	.run = rpc_run,
	.report = rpc_report,
	.destroy = rpc_destroy,
};
