/*
 * `smart-bench rpc`'s processes (rpc_bench.h): the server and its
 * handlers, the client processes, their threads and tasks, and the
 * measured window the coordinator holds open for all of them.
 *
 * A client thread connects, says it is ready at the gate, waits for the
 * window and runs --outstanding tasks: each loops smart_rpc_call (echo)
 * or smart_rpc_send (--oneway) until the gate says stop (one echo call in
 * flight: the loop runs in the thread's main context, no task).  Only what ends
 * inside the window counts: a call answered after it, or failing after
 * it, is not the run's.  After the window a --oneway thread makes one
 * call, answered only once the server has handled every message of the
 * connection before it (a connection's messages are handled in order),
 * so what was counted was taken, not merely queued.
 *
 * Invariants: the coordinator is single-threaded and has no ctx when it
 * forks; children leave with _exit (the coordinator's stdio and atexit
 * are not theirs); a child that dies before the gate opens fails the run
 * instead of leaving the coordinator waiting; stop signals are blocked in
 * every process (kit_signals_block), so only the server and the
 * coordinator take them, the server in a process group of its own so
 * that a terminal's ^C ends the window, not the server under it.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rpc_bench.h"

#define SERVE_CHECK 4096 /* progress calls between signal checks */

void rpc_bench_cfg(const struct rpc_bench *b, int server,
		   struct smart_rpc_config *cfg)
{
	smart_rpc_config_init(cfg);
	if (b->qp_cache >= 0)
		cfg->qp_cache = b->qp_cache ? (uint32_t)b->qp_cache :
					      UINT32_MAX;
	cfg->window = RPC_BENCH_WINDOW;
	cfg->eager_max = RPC_BENCH_EAGER;
	cfg->rndv_max = RPC_BENCH_SIZE_MAX;
	/* the clients of a run dial at once; killed ones stay connected
	 * until the keepalive gives them up (docs/rpc.md §7) */
	cfg->max_conns = server ? RPC_BENCH_CONNS_MAX : 0;
	cfg->max_pending = server ? 256 : 0;
}

int rpc_bench_opts(const struct rpc_bench *b, smart_opts_t **out)
{
	char kv[32];
	/* every outstanding call is a task: room beyond the default 64 */
	const char *const kvs[] = { "buf_pool=4M",
				    b->outstanding > 64 ? kv : NULL, NULL };

	snprintf(kv, sizeof(kv), "max_tasks=%d", b->outstanding);
	return kit_opts_build(&b->run->com, kvs, out);
}

int rpc_bench_ctx(const struct rpc_bench *b, smart_ctx_t **ctx)
{
	smart_opts_t *so;
	int rc = rpc_bench_opts(b, &so);

	if (rc)
		return rc;
	rc = smart_ctx_create(so, ctx);
	smart_opts_destroy(so);
	if (!rc && b->own_secret)
		rc = smart_ctx_set_secret(*ctx, b->secret, sizeof(b->secret));
	if (rc && *ctx) {
		smart_ctx_destroy(*ctx);
		*ctx = NULL;
	}
	return rc;
}

/* ---- the server ---- */

static void h_sink(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)q, (void)d, (void)n, (void)a;
}

static void h_done(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d, (void)n, (void)a;
	smart_rpc_reply(q, 0, NULL, 0);
}

/* SIGINT or SIGTERM pending (they are blocked: kit_signals_block);
 * kit_signal_wait cannot look without waiting. */
static int stop_asked(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	return sigtimedwait(&set, NULL, &zero) > 0;
}

static void serve_say(const struct rpc_bench *b)
{
	const struct smart_rpc_stats *st = &b->srv;

	fprintf(stderr,
		BENCH_TOOL
		" rpc server: %d live connections; "
		"accepted %" PRIu64 ", failed %" PRIu64
		", refused handshakes %" PRIu64 "; messages in %" PRIu64
		", out %" PRIu64 "; rnr %" PRIu64 ", rnr waits %" PRIu64
		", malformed %" PRIu64 "; %s mode, %" PRIu64 " sleeps\n",
		b->srv_conns, st->conns_accepted, st->conns_failed,
		st->handshakes_refused, st->msgs_recv, st->msgs_sent, st->rnr,
		st->rnr_waits, st->proto_errors, b->event ? "event" : "poll",
		st->event_sleeps);
}

static int serve_open(struct rpc_bench *b, smart_worker_t *w, smart_rpc_t **rpc,
		      char *addr, size_t len)
{
	struct smart_rpc_config cfg;
	int rc;

	rpc_bench_cfg(b, 1, &cfg);
	rc = smart_rpc_create(w, &cfg, rpc);
	if (!rc)
		rc = smart_rpc_listen(*rpc, b->listen);
	if (!rc)
		rc = smart_rpc_listen_addr(*rpc, addr, len);
	if (!rc)
		rc = smart_rpc_register(*rpc, RPC_BENCH_OP_SINK, h_sink, NULL);
	if (!rc)
		rc = smart_rpc_register(*rpc, RPC_BENCH_OP_DONE, h_done, NULL);
	return rc;
}

/* Event mode: poll while there is work, sleep on the endpoint's
 * descriptor when idle.  The stop signals are blocked (kit_signals_block),
 * so none interrupts the sleep: a signalfd of them, beside the endpoint's
 * descriptor, ends it (stop_asked then takes the signal). */
static int serve_events(smart_rpc_t *rpc)
{
	struct pollfd pf[2] = { { .events = POLLIN }, { .events = POLLIN } };
	sigset_t set;
	int rc = smart_rpc_event_fd(rpc, &pf[0].fd);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pf[1].fd = rc ? -1 : signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (!rc && pf[1].fd < 0)
		rc = SMART_ESYS;
	if (rc) {
		fprintf(stderr, BENCH_TOOL " rpc server: event mode: %s\n",
			smart_strerror(rc));
		return rc;
	}
	while (!stop_asked()) {
		smart_rpc_progress(rpc);
		if (!smart_rpc_event_arm(rpc))
			poll(pf, 2, -1);
	}
	close(pf[1].fd);
	return 0;
}

int rpc_bench_serve(struct rpc_bench *b, FILE *out)
{
	smart_ctx_t *ctx = NULL;
	smart_worker_t *w = NULL;
	smart_rpc_t *rpc = NULL;
	char addr[64];
	const char *step = "ctx";
	int rc = rpc_bench_ctx(b, &ctx);

	if (!rc) {
		step = "worker";
		rc = smart_worker_create(ctx, &w);
	}
	if (!rc) {
		step = b->listen;
		rc = serve_open(b, w, &rpc, addr, sizeof(addr));
	}
	if (rc) {
		fprintf(stderr, BENCH_TOOL " rpc server: %s: %s\n", step,
			smart_strerror(rc));
	} else {
		fprintf(out, "%s\n", addr);
		fflush(out);
		if (b->event)
			rc = serve_events(rpc);
		else
			for (uint64_t i = 1; (i % SERVE_CHECK) || !stop_asked();
			     i++)
				smart_rpc_progress(rpc);
		smart_rpc_stats(rpc, &b->srv);
		b->srv_conns = smart_rpc_conns(rpc);
		serve_say(b);
	}
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return rc;
}

/* A child dies with the coordinator; 0 when it is already gone. */
static int child_tie(pid_t parent, int sig)
{
	prctl(PR_SET_PDEATHSIG, sig);
	return getppid() == parent;
}

static void server_child(struct rpc_bench *b, pid_t parent, int fd)
{
	FILE *out = fdopen(fd, "w");

	setpgid(0, 0);
	if (!out || !child_tie(parent, SIGTERM))
		_exit(1);
	b->listen = "127.0.0.1:0"; /* this process's copy */
	_exit(rpc_bench_serve(b, out) ? 1 : 0);
}

static int child_reap(pid_t pid, int sig)
{
	int st = 0;

	if (sig)
		kill(pid, sig);
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int rpc_bench_spawn_server(struct rpc_bench *b)
{
	pid_t parent = getpid();
	int p[2];
	FILE *f;

	if (pipe(p)) {
		perror(BENCH_TOOL " rpc: pipe");
		return SMART_ESYS;
	}
	fflush(NULL);
	b->server = fork();
	if (b->server == 0) {
		close(p[0]);
		server_child(b, parent, p[1]);
	}
	close(p[1]);
	f = b->server > 0 ? fdopen(p[0], "r") : NULL;
	if (f && fgets(b->addr, sizeof(b->addr), f)) {
		b->addr[strcspn(b->addr, "\n")] = 0;
		fclose(f);
		return 0;
	}
	if (f)
		fclose(f);
	else
		close(p[0]);
	if (b->server > 0)
		child_reap(b->server, SIGKILL);
	b->server = 0;
	fprintf(stderr, BENCH_TOOL " rpc: the server did not start\n");
	return SMART_ESYS;
}

void rpc_bench_stop_server(struct rpc_bench *b, int failed)
{
	if (b->server > 0)
		child_reap(b->server, failed ? SIGKILL : SIGTERM);
	b->server = 0;
}

/* ---- a client thread ---- */

static struct kit_runner *gate(const struct rpc_bench_thread *th)
{
	return &th->b->sh->gate;
}

/* An error inside the window fails the run; one after it (the server
 * going away first) does not. */
static void task_fail(struct rpc_bench_thread *th, int rc)
{
	if (kit_runner_stopping(gate(th)))
		return;
	th->errors++;
	if (!th->rc)
		th->rc = rc;
	fprintf(stderr, BENCH_TOOL " rpc: client %d thread %d: %s\n",
		th->client, th->idx, smart_strerror(rc));
}

/* Before the window, each task's first message (connection, caches,
 * the server's first answers: a start-up that would count in the
 * window); the last task warmed says the thread is ready, then each
 * waits, polling, for the window.  0: go on. */
static int task_warm(smart_worker_t *w, struct rpc_bench_thread *th,
		     uint8_t *resp)
{
	uint32_t size = (uint32_t)th->b->size, got = 0;
	int rc = th->b->oneway ?
			 smart_rpc_send(th->conn, RPC_BENCH_OP_SINK, th->req,
					size) :
			 smart_rpc_call(th->conn, SMART_RPC_OP_PING, th->req,
					size, resp, size, &got);

	if (rc) { /* before the window: the run fails (th->rc) */
		if (!th->rc)
			th->rc = rc;
		fprintf(stderr,
			BENCH_TOOL " rpc: client %d thread %d: first "
				   "message: %s\n",
			th->client, th->idx, smart_strerror(rc));
	}
	if (++th->warm == th->b->outstanding)
		kit_runner_ready(gate(th));
	while (atomic_load_explicit(&gate(th)->phase, memory_order_relaxed) <
	       KIT_RUN)
		smart_task_yield(w);
	return rc || kit_runner_stopping(gate(th));
}

/* Each task has its own response buffer: answers are copied in as they
 * are found, before their task runs again. */
static void echo_task(smart_worker_t *w, void *arg)
{
	struct rpc_bench_thread *th = arg;
	uint32_t size = (uint32_t)th->b->size, got = 0;
	uint64_t gap = (uint64_t)(th->b->gap_us * 1e-6 *
				  smart_cycles_per_sec());
	uint8_t *resp = th->resp + (size_t)th->slots++ * (size + 1);
	uint64_t t0, dt;
	int rc;

	if (task_warm(w, th, resp))
		return;
	while (!kit_runner_stopping(gate(th))) {
		/* --gap: the server idles meanwhile (this task yields, so
		 * the endpoint is polled) */
		for (t0 = smart_cycles(); gap && smart_cycles() - t0 < gap;)
			smart_task_yield(w);
		t0 = smart_cycles();
		rc = smart_rpc_call(th->conn, SMART_RPC_OP_PING, th->req, size,
				    resp, size, &got);
		dt = smart_cycles() - t0;
		/* every answer byte for byte (after the clock: not timed) */
		if (rc || got != size || memcmp(resp, th->req, size)) {
			task_fail(th, rc ? rc : SMART_EPROTO);
			return;
		}
		if (kit_runner_stopping(gate(th)))
			return;
		th->msgs++;
		smart_hist_add(&th->hist, dt);
	}
}

/* Sends are timed one in KIT_LAT_SAMPLE: a clock read is a noticeable
 * share of a send that only queues. */
static void send_task(smart_worker_t *w, void *arg)
{
	struct rpc_bench_thread *th = arg;
	uint32_t size = (uint32_t)th->b->size;
	uint64_t n, t0;
	int rc;

	if (task_warm(w, th, NULL))
		return;
	for (n = 0; !kit_runner_stopping(gate(th)); n++) {
		t0 = kit_lat_begin(n);
		rc = smart_rpc_send(th->conn, RPC_BENCH_OP_SINK, th->req, size);
		if (rc) {
			task_fail(th, rc);
			return;
		}
		kit_lat_end(&th->hist, n, t0);
		th->msgs++;
	}
}

static const char *thread_addr(const struct rpc_bench_thread *th)
{
	const struct rpc_bench *b = th->b;
	const struct kit_strs *c = &b->run->com.connect;
	int i = th->client * b->run->com.threads + th->idx;

	return c->n ? c->v[i % c->n] : b->addr;
}

/* The request (read only), then one response buffer per task. */
static int bufs_new(struct rpc_bench_thread *th)
{
	size_t size = (size_t)th->b->size + 1;
	uint64_t x = 0x9e3779b97f4a7c15ull *
		     (uint64_t)(th->client * 1024 + th->idx + 1);

	th->req = malloc((1 + (size_t)th->b->outstanding) * size);
	if (!th->req)
		return SMART_ENOMEM;
	/* bytes of the thread's own (xorshift), so that an answer compared
	 * with its request shows a fragment misplaced or lost */
	for (size_t i = 0; i < size; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		th->req[i] = (uint8_t)x;
	}
	th->resp = th->req + size;
	return 0;
}

static int thread_open(struct rpc_bench_thread *th, smart_ctx_t *ctx,
		       smart_worker_t **w, smart_rpc_t **rpc)
{
	struct smart_rpc_config cfg;
	int rc;

	rpc_bench_cfg(th->b, 0, &cfg);
	cfg.timeout_ms = (uint32_t)th->b->timeout_ms;
	rc = smart_worker_create(ctx, w);
	if (!rc)
		rc = smart_rpc_create(*w, &cfg, rpc);
	if (!rc)
		rc = smart_rpc_connect(*rpc, thread_addr(th), &th->conn);
	if (rc)
		fprintf(stderr,
			BENCH_TOOL " rpc: client %d thread %d: connect "
				   "%s: %s\n",
			th->client, th->idx, thread_addr(th),
			smart_strerror(rc));
	return rc;
}

/* The tasks, warmed before the window (they say the thread is ready),
 * until it ends, then --oneway's call behind the messages.  A task that
 * cannot be spawned: the thread says it is ready itself. */
static int thread_run(struct rpc_bench_thread *th, smart_worker_t *w)
{
	smart_task_fn fn = th->b->oneway ? send_task : echo_task;
	uint32_t got;
	int rc = 0, run = 0;

	/* one call at a time: from the main context, as a program making
	 * one call after another does (smart_task_yield polls there) */
	if (!th->b->oneway && th->b->outstanding == 1) {
		echo_task(w, th);
		return th->rc;
	}
	for (int i = 0; !rc && i < th->b->outstanding; i++)
		rc = smart_task_spawn(w, fn, th);
	if (rc) {
		th->rc = rc;
		th->warm = th->b->outstanding; /* no task may say it */
		kit_runner_ready(gate(th));
	}
	run = smart_worker_run(w);
	if (!rc)
		rc = run;
	if (!rc && !th->rc && th->b->oneway)
		rc = smart_rpc_call(th->conn, RPC_BENCH_OP_DONE, NULL, 0,
				    th->resp, 0, &got);
	if (rc)
		fprintf(stderr, BENCH_TOOL " rpc: client %d thread %d: %s\n",
			th->client, th->idx, smart_strerror(rc));
	return rc;
}

/* --connects: N times connect, one echo call of --size bytes, close,
 * from the main context (as a program dials), each timed whole and its
 * connect alone; after the thread's first connection (thread_open: the
 * start-up) and once the window opened. */
static int connect_one(struct rpc_bench_thread *th, smart_rpc_t *rpc)
{
	uint32_t size = (uint32_t)th->b->size, got = 0;
	smart_rpc_conn_t *c = NULL;
	uint64_t t0 = smart_cycles(), t1;
	int rc = smart_rpc_connect(rpc, thread_addr(th), &c);

	t1 = smart_cycles();
	if (!rc)
		rc = smart_rpc_call(c, SMART_RPC_OP_PING, th->req, size,
				    th->resp, size, &got);
	smart_rpc_close(c);
	if (!rc && (got != size || memcmp(th->resp, th->req, size)))
		rc = SMART_EPROTO;
	if (!rc) {
		smart_hist_add(&th->hist, smart_cycles() - t0);
		smart_hist_add(&th->dial, t1 - t0);
		th->msgs++;
	}
	return rc;
}

static int connect_run(struct rpc_bench_thread *th, smart_rpc_t *rpc)
{
	uint64_t gap = (uint64_t)(th->b->gap_us * 1e-6 *
				  smart_cycles_per_sec());
	struct smart_rpc_stats st;
	int rc = 0;

	kit_runner_ready(gate(th));
	while (atomic_load_explicit(&gate(th)->phase, memory_order_relaxed) <
	       KIT_RUN)
		smart_rpc_progress(rpc);
	for (int i = 0;
	     !rc && i < th->b->connects && !kit_runner_stopping(gate(th));
	     i++) {
		/* --gap: both endpoints idle meanwhile (their QP caches
		 * refill); not timed */
		for (uint64_t t0 = smart_cycles();
		     gap && smart_cycles() - t0 < gap;)
			smart_rpc_progress(rpc);
		rc = connect_one(th, rpc);
	}
	if (rc)
		task_fail(th, rc);
	if (!smart_rpc_stats(rpc, &st))
		th->cache_hits = st.qp_cache_hits;
	atomic_fetch_add(&th->b->sh->done, 1);
	return 0;
}

static void *client_thread(void *arg)
{
	struct rpc_bench_thread *th = arg;
	smart_worker_t *w = NULL;
	smart_rpc_t *rpc = NULL;
	int rc = bufs_new(th);

	if (!rc)
		rc = thread_open(th, th->ctx, &w, &rpc);
	th->rc = rc;
	if (rc) {
		kit_runner_ready(gate(th));
	} else if (th->b->connects) {
		connect_run(th, rpc);
	} else {
		rc = thread_run(th, w);
		if (rc && !th->rc) {
			th->rc = rc;
			th->errors++;
		}
	}
	if (th->conn)
		smart_rpc_conn_stats(th->conn, &th->st);
	smart_rpc_close(th->conn);
	th->conn = NULL;
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	free(th->req);
	th->req = th->resp = NULL;
	return NULL;
}

/* ---- a client process ---- */

/* Its threads, each of them ready at the gate even when it could not
 * start (the coordinator counts on every one); exits 0 unless it could
 * not run at all: errors are in the threads' results. */
static void client_child(struct rpc_bench *b, int c, pid_t parent)
{
	int nt = b->run->com.threads, n, i;
	struct rpc_bench_thread *th = &b->sh->t[c * nt];
	pthread_t *tid = calloc((size_t)nt, sizeof(*tid));
	smart_ctx_t *ctx = NULL;
	int rc;

	if (!child_tie(parent, SIGKILL))
		_exit(1);
	rc = tid ? rpc_bench_ctx(b, &ctx) : SMART_ENOMEM;
	if (rc)
		fprintf(stderr, BENCH_TOOL " rpc: client %d: ctx: %s\n", c,
			smart_strerror(rc));
	for (n = 0; !rc && n < nt; n++) {
		th[n].ctx = ctx;
		if (pthread_create(&tid[n], NULL, client_thread, &th[n])) {
			fprintf(stderr,
				BENCH_TOOL " rpc: client %d: thread %d "
					   "did not start\n",
				c, n);
			rc = SMART_ESYS;
			break;
		}
	}
	for (i = n; i < nt; i++) {
		th[i].rc = rc;
		kit_runner_ready(&b->sh->gate);
	}
	for (i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	smart_ctx_destroy(ctx);
	_exit(0);
}

/* ---- the coordinator ---- */

/* After the window a client may still be in a call: it has the call's
 * timeout, and this much more, to leave. */
#define REAP_SLACK_S 10.0

static int kids_start(struct rpc_bench *b)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	for (int c = 0; c < b->clients; c++) {
		pid = fork();
		if (pid == 0)
			client_child(b, c, parent);
		if (pid < 0) {
			perror(BENCH_TOOL " rpc: fork");
			return SMART_ESYS;
		}
		b->kids[c] = pid;
	}
	return 0;
}

/* Every client thread at the gate: 0; a stop signal: its number; a child
 * (client or server) gone meanwhile: -1. */
static int kids_ready(struct rpc_bench *b)
{
	int n = b->clients * b->run->com.threads, sig;
	siginfo_t si;

	while (atomic_load(&b->sh->gate.ready) < n) {
		sig = kit_signal_wait(0.01);
		if (sig)
			return sig;
		memset(&si, 0, sizeof(si));
		if (!waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid) {
			fprintf(stderr,
				BENCH_TOOL " rpc: process %d ended "
					   "before the run\n",
				(int)si.si_pid);
			return -1;
		}
	}
	return 0;
}

static int threads_failed(const struct rpc_bench *b)
{
	for (int i = 0; i < b->clients * b->run->com.threads; i++)
		if (b->sh->t[i].rc)
			return b->sh->t[i].rc;
	return 0;
}

/* Reap every client; one that does not leave in time is killed.  A
 * client that did not exit 0 failed the run. */
static int kids_reap(struct rpc_bench *b)
{
	uint64_t end = smart_now_ns() +
		       (uint64_t)((b->timeout_ms / 1e3 + REAP_SLACK_S) * 1e9);
	int failed = 0, st;

	for (int c = 0; c < b->clients; c++) {
		while (b->kids[c] > 0) {
			if (waitpid(b->kids[c], &st, WNOHANG) == b->kids[c]) {
				failed |= !WIFEXITED(st) || WEXITSTATUS(st);
				b->kids[c] = 0;
			} else if (smart_now_ns() > end) {
				fprintf(stderr,
					BENCH_TOOL " rpc: client %d "
						   "did not leave: killed\n",
					c);
				kill(b->kids[c], SIGKILL);
				end = UINT64_MAX;
			} else {
				kit_sleep(0.005);
			}
		}
	}
	if (failed)
		fprintf(stderr, BENCH_TOOL " rpc: a client process failed\n");
	return failed ? SMART_ESYS : 0;
}

static void results_sum(struct rpc_bench *b)
{
	struct rpc_bench_result *s = &b->res;
	const struct rpc_bench_thread *th;
	double bits;
	smart_hist_t h, d;

	smart_hist_init(&h);
	smart_hist_init(&d);
	for (int i = 0; i < b->clients * b->run->com.threads; i++) {
		th = &b->sh->t[i];
		s->msgs += th->msgs;
		s->errors += th->errors;
		if (!s->first_err)
			s->first_err = th->rc;
		smart_hist_merge(&h, &th->hist);
		smart_hist_merge(&d, &th->dial);
		s->cache_hits += th->cache_hits;
		s->stalls += th->st.window_stalls;
		s->timeouts += th->st.call_timeouts;
		s->rnr += th->st.rnr;
		s->rndv += th->st.rndv_sent;
	}
	kit_lat_from_cycles(&h, &s->lat);
	kit_lat_from_cycles(&d, &s->dial);
	s->max_us = h.count ? (double)h.max * 1e6 / smart_cycles_per_sec() : 0;
	bits = (double)s->msgs * (double)b->size * 8;
	s->mrps = s->secs > 0 ? (double)s->msgs / s->secs / 1e6 : 0;
	s->gbps = s->secs > 0 ? bits / s->secs / 1e9 : 0;
}

/* --connects: the window lasts until every thread made its N (each
 * connect and call has its deadline) or a stop signal. */
static int connects_wait(struct rpc_bench *b)
{
	int n = b->clients * b->run->com.threads, sig = 0;

	while (!sig && atomic_load(&b->sh->done) < n)
		sig = kit_signal_wait(0.002);
	return sig;
}

/* The gate opens once every thread is connected; the window is the
 * coordinator's clock between opening and closing it. */
static int window(struct rpc_bench *b)
{
	struct kit_runner *g = &b->sh->gate;
	struct rpc_bench_result *s = &b->res;
	uint64_t t0;
	int sig = kids_ready(b), rc;

	rc = sig < 0 ? SMART_ESYS : threads_failed(b);
	if (!rc && sig > 0) {
		fprintf(stderr,
			BENCH_TOOL " rpc: stopped by signal %d before "
				   "the run\n",
			sig);
		rc = SMART_EAGAIN;
	}
	if (rc)
		return rc;
	t0 = smart_now_ns();
	kit_runner_set(g, KIT_RUN);
	s->stop_sig = b->connects ? connects_wait(b) :
				    kit_signal_wait(b->run->com.seconds);
	kit_runner_set(g, KIT_STOP);
	s->secs = (double)(smart_now_ns() - t0) / 1e9;
	if (s->stop_sig)
		fprintf(stderr,
			BENCH_TOOL " rpc: the window ended by signal %d "
				   "after %.2f s\n",
			s->stop_sig, s->secs);
	return 0;
}

int rpc_bench_clients(struct rpc_bench *b)
{
	int rc = kids_start(b);

	if (!rc)
		rc = window(b);
	kit_runner_set(&b->sh->gate, KIT_STOP);
	if (kids_reap(b) && !rc)
		rc = SMART_ESYS;
	if (!rc)
		results_sum(b);
	return rc;
}
