/*
 * Messaging endpoints against peers that attack how connections end and
 * what they hold (a hostile review of messaging's defences), on shm, each
 * attack played by hand on connections the library made, behind their
 * backs:
 *  - destroy_race: destroy tells every connection CLOSE and waits for it
 *    a moment, polling the endpoint.  A peer that closed its receive
 *    queue (its segment's `delivered` marked closed, as a QP in error
 *    does) makes that CLOSE fail at once, in that poll: the connection
 *    fails, and an accepted one used to be freed at the end of the poll
 *    while destroy still held it (read after free, then freed twice:
 *    the victim died of SIGABRT).  The victim must destroy cleanly.
 *  - destroy_dead: a connection failed outside a poll (a reply from the
 *    main context meets a full backlog: its peer acks nothing) waits on
 *    the dead list for the end of the next poll; destroy before it used
 *    to free it twice (from the connection table, then the list).
 *  - destroy_stalled: peers that post no receive (their segment's
 *    `posted` held at `delivered`) take no CLOSE; destroy waited
 *    RPC_CLOSE_WAIT_MS for each of them in turn (16 peers: 1.6 s, 4096
 *    of them: 7 min).  Now every CLOSE goes out first and all are waited
 *    for at once: destroy ends within that bound however many peers.
 *  - doorbells: peers that post no receive keep the victim's SENDs to
 *    them waiting (up to 500 ms each); 16 of them, 64 answers each, held
 *    1024 doorbells, all the shm CQ's FIFO held: every other
 *    connection's post failed and was cut.  An honest call must be
 *    answered (the FIFO grows with the QPs).
 *  - close_in_handler: a request whose handler closes that very
 *    connection; the receive path must not touch it when the handler
 *    returns.
 *  - churn: 1000 connections made and closed, every tenth with a
 *    rendezvous message in flight at its CLOSE: the victim's descriptors
 *    and resident memory are what they were (no staging, landing,
 *    segment or mapping kept per connection).
 *
 * The victim is a child process (test_spawn); it writes its listen
 * address, and after its destroy how long that took, to a pipe.  Its
 * freed memory is filled with junk (M_PERTURB), so that a read after free
 * fails the same way every run, not by luck of the heap.
 */
#include <dirent.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/rpc_fixture.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "harness/shm_forge.h"
#include "transport/shm/shm.h"

#define SECRET	"rpc-attack-test-secret"
#define OP_HOLD 1 /* left open until OP_RELEASE */
#define OP_HELD 2 /* reply: u32, the requests held */
#define OP_RELEASE                                                             \
	3	    /* one-way: the held ones answered from the main
			 * context, then destroy without another poll */
#define OP_INFO	  4 /* reply: struct info */
#define OP_SINK	  5 /* one-way, kept nowhere */
#define OP_ANSWER 6 /* the held ones answered from the main context */
#define OP_SWEEP                                                               \
	7 /* one-way: the held ones whose connection went
			 * are answered (smart_rpc_req_check) */
#define OP_EXIT 9
#define STALLED 16	     /* destroy_stalled's peers */
#define CYCLES	1000	     /* churn's connections */
#define BIG	(100u << 10) /* a rendezvous message */

/* Resident memory says nothing under AddressSanitizer: freed memory
 * waits in its quarantine. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_MEANINGFUL 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSS_MEANINGFUL 0
#endif
#endif
#ifndef RSS_MEANINGFUL
#define RSS_MEANINGFUL 1
#endif

static char secret_path[64];

static int on_shm(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	return !t || !strcmp(t, "shm");
}

static smart_ctx_t *ctx_new(void)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_path,
					     "buf_pool", "4M", "max_tasks",
					     "128", NULL });
}

static uint64_t ms_since(uint64_t t0)
{
	return (smart_now_ns() - t0) / 1000000;
}

/* ---- the victim -------------------------------------------------------- */

struct info {
	uint32_t conns, spares, held, fds;
	uint32_t db_queued, db_size; /* shm: the CQ's doorbell FIFO (queued:
					 * after the last OP_ANSWER) */
	uint64_t rss_kb;
};

struct victim {
	smart_rpc_t *rpc;
	smart_rpc_req_t *held[RPC_REQS];
	uint32_t nheld;
	uint32_t db_peak;	   /* doorbells queued after an OP_ANSWER */
	smart_rpc_req_t *answer_q; /* an OP_ANSWER waiting */
	int release, stop;
};

static uint32_t fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	uint32_t n = 0;

	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the directory's own */
}

static uint64_t rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	uint64_t kb = 0;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %" SCNu64, &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void v_hold(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct victim *v = a;

	(void)d, (void)n;
	CHECK_LT(v->nheld, RPC_REQS);
	v->held[v->nheld++] = q;
}

static void v_held(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d, (void)n;
	smart_rpc_reply(q, 0, &((struct victim *)a)->nheld, sizeof(uint32_t));
}

/* What an application holding requests does when it runs: the ones
 * whose connection went are answered, so that their slots come back. */
static void v_sweep(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct victim *v = a;
	uint32_t kept = 0;

	(void)q, (void)d, (void)n; /* one-way */
	for (uint32_t i = 0; i < v->nheld; i++)
		if (smart_rpc_req_check(v->held[i]) == SMART_ECONN)
			CHECK_EQ(smart_rpc_reply(v->held[i], 0, NULL, 0),
				 SMART_ECONN);
		else
			v->held[kept++] = v->held[i];
	v->nheld = kept;
}

static void v_release(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)q, (void)d, (void)n; /* one-way */
	((struct victim *)a)->release = 1;
}

/* Answered from the main context, after the held ones. */
static void v_answer(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d, (void)n;
	((struct victim *)a)->answer_q = q;
}

static void v_info(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct victim *v = a;
	struct info x = { .conns = (uint32_t)smart_rpc_conns(v->rpc),
			  .spares = v->rpc->nspare,
			  .db_queued = v->db_peak,
			  .db_size = v->rpc->cq->db_mask + 1,
			  .held = v->nheld,
			  .fds = fd_count(),
			  .rss_kb = rss_kb() };

	(void)d, (void)n;
	smart_rpc_reply(q, 0, &x, sizeof(x));
}

static void v_sink(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)q, (void)d, (void)n, (void)a;
}

static void v_exit(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d, (void)n;
	((struct victim *)a)->stop = 1;
	smart_rpc_reply(q, 0, NULL, 0);
}

/* args: pipe fd, "small" or "wide".  Small: a window of 2 (it acks
 * every message; its replies fill a peer's window after two) and a
 * backlog of one bare reply.  Wide: the default window (64). */
static void child_victim(char **args)
{
	int wide = !strcmp(args[1], "wide");
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.window = wide ? 0 : 2,
					.backlog_max = wide ? 0 : 40,
					.keepalive_ms = 2000,
					.keepalive_misses = 10 };
	struct victim v = { 0 };
	smart_ctx_t *ctx = ctx_new();
	smart_worker_t *w;
	char addr[64];
	int fd = atoi(args[0]);
	uint64_t t0, ms;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &cfg, &v.rpc));
	/* freed memory filled with junk: a connection read after it was
	 * freed has no state that looks live, nor a QP that looks gone
	 * (a read after free fails the same way each run) */
	mallopt(M_PERTURB, 0xa5);
	CHECK_OK(smart_rpc_register(v.rpc, OP_HOLD, v_hold, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_HELD, v_held, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_RELEASE, v_release, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_SWEEP, v_sweep, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_INFO, v_info, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_SINK, v_sink, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_ANSWER, v_answer, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_EXIT, v_exit, &v));
	CHECK_OK(smart_rpc_listen(v.rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(v.rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
	for (;;) {
		while (!v.stop && !v.release && !v.answer_q)
			smart_rpc_progress(v.rpc);
		if (!v.answer_q)
			break;
		/* replies from the main context: each posted at once */
		while (v.nheld)
			smart_rpc_reply(v.held[--v.nheld], 0, NULL, 0);
		v.db_peak = v.rpc->cq->db_tail - v.rpc->cq->db_head;
		smart_rpc_reply(v.answer_q, 0, NULL, 0);
		v.answer_q = NULL;
	}
	/* replies from the main context, then destroy with no poll between
	 * (what failed meanwhile is still on the dead list) */
	while (v.nheld)
		smart_rpc_reply(v.held[--v.nheld], 0, NULL, 0);
	t0 = smart_now_ns();
	CHECK_OK(smart_rpc_destroy(v.rpc));
	ms = ms_since(t0);
	CHECK_EQ(write(fd, &ms, sizeof(ms)), (ssize_t)sizeof(ms));
	close(fd);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* ---- the peers ----------------------------------------------------------- */

static void client_open(struct rpc_ep *c)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = 2000,
					.keepalive_misses = 10,
					.timeout_ms = 2000,
					.qp_cache = UINT32_MAX };

	rpc_ep_open(c, ctx_new(), &cfg);
}

/* Start the victim (mode: child_victim's): its pid, its address, its
 * pipe's read end. */
static pid_t victim_start_as(const char *mode, char *addr, int *rfd)
{
	return rpc_child_start("victim", mode, addr, rfd);
}

static pid_t victim_start(char *addr, int *rfd)
{
	return victim_start_as("small", addr, rfd);
}

/* The victim's end: how long its destroy took (UINT64_MAX when it died
 * before it told), and its exit status. */
static uint64_t victim_end(pid_t pid, int rfd, int *status)
{
	struct pollfd pf = { .fd = rfd, .events = POLLIN };
	uint64_t ms = UINT64_MAX;

	if (poll(&pf, 1, 30000) == 1 &&
	    read(rfd, &ms, sizeof(ms)) != (ssize_t)sizeof(ms))
		ms = UINT64_MAX;
	close(rfd);
	CHECK_EQ(waitpid(pid, status, 0), pid);
	return ms;
}

static void victim_says(smart_rpc_conn_t *h, struct info *x)
{
	uint32_t len = 0;

	CHECK_OK(smart_rpc_call(h, OP_INFO, NULL, 0, x, sizeof(*x), &len));
	CHECK_EQ(len, sizeof(*x));
}

/* The victim at rest: h its only connection, its QP cache full (2). */
static void victim_settled(smart_rpc_conn_t *h, struct info *x)
{
	uint64_t t0 = smart_now_ns();

	do
		victim_says(h, x);
	while ((x->conns > 1 || x->spares < 2) && ms_since(t0) < 10000);
	CHECK_EQ(x->conns, 1);
	CHECK_EQ(x->spares, 2);
}

/* The victim's sends to k's peer (us) find no receive: our segment
 * says no more receives are posted than it has filled (a peer's to
 * write; the victim's sender reads it once the receives it saw are used
 * up, at its first message when it has sent none). */
static void seg_stall(smart_rpc_conn_t *k)
{
	struct shm_rq *rq = k->qp->rq;

	atomic_store(&rq->seg->posted, forge_rq_next(rq));
}

/* Our receive queue closed, as a QP in error closes it: the victim's
 * next SEND to us fails at once. */
static void seg_close(smart_rpc_conn_t *k)
{
	atomic_store(&k->qp->rq->seg->closed, 1);
}

static void report(const char *what, uint64_t ms, int st)
{
	if (WIFSIGNALED(st))
		printf("   %s: the victim died of signal %d\n", what,
		       WTERMSIG(st));
	else
		printf("   %s: the victim's destroy took %" PRIu64 " ms, exit "
		       "%d\n",
		       what, ms, WEXITSTATUS(st));
}

/* The victim told to exit through hk (an honest connection): it must
 * exit 0. */
static void victim_exit(smart_rpc_conn_t *hk, pid_t pid, int rfd)
{
	int st;

	CHECK_OK(smart_rpc_call(hk, OP_EXIT, NULL, 0, NULL, 0, NULL));
	victim_end(pid, rfd, &st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---- destroy_race -------------------------------------------------------- */

static void test_destroy_race(void)
{
	struct rpc_ep a, h;
	smart_rpc_conn_t *k, *hk;
	char addr[64];
	uint64_t ms;
	int rfd, st;
	pid_t pid;

	if (!on_shm())
		test_skip("closing a peer's receive queue by hand needs shm");
	pid = victim_start(addr, &rfd);
	client_open(&a);
	client_open(&h);
	CHECK_OK(smart_rpc_connect(a.rpc, addr, &k));
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	seg_close(k); /* a is polled no more until the victim is gone */
	CHECK_OK(smart_rpc_call(hk, OP_EXIT, NULL, 0, NULL, 0, NULL));
	ms = victim_end(pid, rfd, &st);
	report("a CLOSE failing during destroy's wait", ms, st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_NE(ms, UINT64_MAX);
	smart_rpc_close(k);
	smart_rpc_close(hk);
	rpc_ep_close(&a);
	rpc_ep_close(&h);
}

/* ---- destroy_dead -------------------------------------------------------- */

struct hold {
	smart_rpc_conn_t *k, *k2;
	int done, released;
};

static void hold_task(smart_worker_t *w, void *p)
{
	struct hold *g = p;

	(void)w;
	(void)smart_rpc_call(g->k, OP_HOLD, NULL, 0, NULL, 0, NULL);
	g->done++;
}

/* Once the victim holds all four: k2 goes (so that the victim's destroy
 * has no CLOSE to wait for, and polls nothing first), and k tells the
 * victim to answer them from its main context and to destroy right
 * after, with no poll between. */
static void hold_watch(smart_worker_t *w, void *p)
{
	struct hold *g = p;
	uint64_t t0 = smart_now_ns();
	uint32_t held = 0, len;

	do {
		smart_task_yield(w);
		CHECK_OK(smart_rpc_call(g->k2, OP_HELD, NULL, 0, &held,
					sizeof(held), &len));
		CHECK_MSG(ms_since(t0) < 10000, "held %u", held);
	} while (held < 4);
	smart_rpc_close(g->k2);
	CHECK_OK(smart_rpc_send(g->k, OP_RELEASE, NULL, 0));
	g->released = 1;
}

static void test_destroy_dead(void)
{
	struct hold g = { 0 };
	struct rpc_ep a;
	char addr[64];
	uint64_t ms;
	int rfd, st;
	pid_t pid;

	if (!on_shm())
		test_skip("the victim's window and backlog: shm only here");
	pid = victim_start(addr, &rfd);
	client_open(&a);
	CHECK_OK(smart_rpc_connect(a.rpc, addr, &g.k));
	CHECK_OK(smart_rpc_connect(a.rpc, addr, &g.k2));
	/* four requests held: two replies fill k's window at the victim
	 * (2), one its backlog (40 bytes), the fourth fails k there, from
	 * its main context: k waits on the dead list for a next poll */
	for (int i = 0; i < 4; i++)
		CHECK_OK(smart_task_spawn(a.w, hold_task, &g));
	CHECK_OK(smart_task_spawn(a.w, hold_watch, &g));
	CHECK_OK(smart_worker_run(a.w));
	CHECK(g.released);
	CHECK_EQ(g.done, 4);
	ms = victim_end(pid, rfd, &st);
	report("a connection failed outside a poll, then destroy", ms, st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_NE(ms, UINT64_MAX);
	smart_rpc_close(g.k);
	rpc_ep_close(&a);
}

/* ---- destroy_stalled ----------------------------------------------------- */

static void test_destroy_stalled(void)
{
	smart_rpc_conn_t *k[STALLED], *hk;
	struct rpc_ep a, h;
	char addr[64];
	uint64_t ms;
	int rfd, st;
	pid_t pid;

	if (!on_shm())
		test_skip("holding a peer's receives by hand needs shm");
	pid = victim_start(addr, &rfd);
	client_open(&a);
	client_open(&h);
	for (int i = 0; i < STALLED; i++)
		CHECK_OK(smart_rpc_connect(a.rpc, addr, &k[i]));
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	for (int i = 0; i < STALLED; i++)
		seg_stall(k[i]); /* a is polled no more */
	CHECK_OK(smart_rpc_call(hk, OP_EXIT, NULL, 0, NULL, 0, NULL));
	ms = victim_end(pid, rfd, &st);
	report("16 peers posting no receive", ms, st);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the wait happened (the stalled peers held it its bound), once:
	 * waited in turn, each peer's would take its bound (16 x 100 ms at
	 * least, however fast the machine); together, one bound and the
	 * machine's delays (a loaded 2-core machine: up to ~700 ms seen) */
	CHECK_GE(ms, RPC_CLOSE_WAIT_MS);
	CHECK_LT(ms, STALLED * RPC_CLOSE_WAIT_MS);
	for (int i = 0; i < STALLED; i++)
		smart_rpc_close(k[i]);
	smart_rpc_close(hk);
	rpc_ep_close(&a);
	rpc_ep_close(&h);
}

/* ---- doorbells ---------------------------------------------------------- */

/* A request with no payload on k, behind the library's back, acking
 * nothing. */
static void raw_request(smart_rpc_conn_t *k, uint16_t op, uint32_t call)
{
	uint8_t *b = k->sbuf + (size_t)(call % k->window) * k->msg_len;
	struct smart_tp_wr wr = { 0 };

	smart__msg_put_hdr(b, &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
						       .op = op,
						       .call = call });
	wr.opcode = SMART_TP_SEND;
	wr.local = b;
	wr.len = SMART_MSG_HDR_LEN;
	wr.lkey = k->lkey;
	wr.flags = SMART_TP_IMM; /* unsignalled: no completion */
	wr.imm = smart__msg_imm(SMART_MSG_K_DATA, 0);
	wr.wr_id = UINT64_C(0xffff);
	CHECK_OK(k->rpc->tp->post(k->qp, &wr, 1));
}

/* The victim reposted the receives of want messages on k (it took
 * them). */
static void wait_reposted(smart_rpc_conn_t *k, uint32_t want)
{
	const struct shm_rseg *s = k->qp->peer->seg;
	uint64_t t0 = smart_now_ns();

	while (atomic_load(&s->posted) - k->nrecv < want) {
		CHECK_MSG(ms_since(t0) < 10000, "the victim took %u of %u",
			  atomic_load(&s->posted) - k->nrecv, want);
		sched_yield();
	}
}

/* ---- orphans ------------------------------------------------------------- */

/* A peer that opens a connection, leaves its quota of requests open at a
 * victim whose handler holds them (a long poll), closes it, and does it
 * again, 64 times: every one of the victim's 4096 requests is then held
 * for connections that are gone, and every call of every peer is
 * answered SMART_EBUSY.  The victim asks smart_rpc_req_check of those it
 * holds and answers the gone ones: the slots come back, the honest call
 * is served. */
static void test_orphans(void)
{
	struct rpc_ep a, h;
	smart_rpc_conn_t *k, *hk;
	uint32_t held = 0, len;
	char addr[64];
	int rfd, rc;
	pid_t pid;

	if (!on_shm())
		test_skip("sending requests behind the library's back needs "
			  "shm (wait_reposted reads the peer's segment)");
	pid = victim_start_as("wide", addr, &rfd);
	client_open(&a);
	client_open(&h);
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	for (int cyc = 0; cyc < RPC_REQS / 64; cyc++) {
		rc = smart_rpc_connect(a.rpc, addr, &k);
		CHECK_MSG(rc == 0, "cycle %d: %s", cyc, smart_strerror(rc));
		for (uint32_t r = 1; r <= 64; r++)
			raw_request(k, OP_HOLD, r);
		wait_reposted(k, 64);
		smart_rpc_close(k);
	}
	rc = smart_rpc_call(hk, OP_HELD, NULL, 0, &held, sizeof(held), &len);
	printf("   %d connections gone with 64 requests open each: the "
	       "honest call answered %s",
	       RPC_REQS / 64, smart_strerror(rc));
	CHECK_EQ(rc, SMART_EBUSY); /* the hole, as an application that
					 * never checks meets it */
	CHECK_OK(smart_rpc_send(hk, OP_SWEEP, NULL, 0));
	rc = smart_rpc_call(hk, OP_HELD, NULL, 0, &held, sizeof(held), &len);
	printf("; after the victim's sweep %s, %u held\n", smart_strerror(rc),
	       held);
	CHECK_OK(rc);
	CHECK_EQ(held, 0);
	victim_exit(hk, pid, rfd);
	smart_rpc_close(hk);
	rpc_ep_close(&a);
	rpc_ep_close(&h);
}

/* DOORBELL_PEERS peers leave requests open at the victim (its quota, 64
 * each), posting no receive (from the start: a receive the victim saw
 * posted is one it may fill).  The victim answers them all from its main
 * context, each answer posted at once: a doorbell each on its CQ, waiting
 * for a receive (up to SHM_RNR_NS): 1024, what the victim's CQ (depth
 * 1024) used to queue at most, after which every post of every other
 * connection failed it (the transport's SMART_EAGAIN, and the connection
 * cut).  Then it answers an honest peer's call, which must come back. */
#define DOORBELL_PEERS 16

static void test_doorbells(void)
{
	smart_rpc_conn_t *k[DOORBELL_PEERS], *hk;
	struct smart_tp_wc wc[16];
	struct rpc_ep a, h;
	struct info x;
	uint32_t len = 0, quota, held = 0;
	char addr[64];
	int rfd, rc;
	pid_t pid;

	if (!on_shm())
		test_skip("holding a peer's receives by hand needs shm");
	pid = victim_start_as("wide", addr, &rfd);
	client_open(&a);
	client_open(&h);
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	for (int i = 0; i < DOORBELL_PEERS; i++)
		CHECK_OK(smart_rpc_connect(a.rpc, addr, &k[i]));
	quota = k[0]->swin; /* the victim's: max(64, 4096 / 64) */
	for (int i = 0; i < DOORBELL_PEERS; i++)
		seg_stall(k[i]); /* a's library is polled no more */
	for (uint32_t r = 1; r <= quota; r++) {
		for (int i = 0; i < DOORBELL_PEERS; i++)
			raw_request(k[i], OP_HOLD, r);
		while (a.rpc->tp->poll(a.rpc->cq, wc, 16) > 0)
			;	 /* our SENDs go (shm executes them here) */
		if (r % 32 == 0) /* within the receives it posted */
			for (int i = 0; i < DOORBELL_PEERS; i++)
				wait_reposted(k[i], r);
	}
	CHECK_OK(smart_rpc_call(hk, OP_HELD, NULL, 0, &held, sizeof(held),
				&len));
	CHECK_EQ(held, DOORBELL_PEERS * quota);
	rc = smart_rpc_call(hk, OP_ANSWER, NULL, 0, NULL, 0, NULL);
	printf("   %d peers posting no receive, %u answers each: the honest "
	       "peer's call answered next %s",
	       DOORBELL_PEERS, quota, smart_strerror(rc));
	if (!rc)
		CHECK_OK(smart_rpc_call(hk, OP_INFO, NULL, 0, &x, sizeof(x),
					&len));
	if (!rc)
		printf("; the victim's CQ had %u doorbells queued (room for "
		       "%u)",
		       x.db_queued, x.db_size);
	printf("\n");
	CHECK_OK(rc);
	CHECK_GE(x.db_queued, DOORBELL_PEERS * quota); /* the path ran */
	CHECK_GT(x.db_size, x.db_queued);
	victim_exit(hk, pid, rfd);
	for (int i = 0; i < DOORBELL_PEERS; i++)
		smart_rpc_close(k[i]);
	smart_rpc_close(hk);
	rpc_ep_close(&a);
	rpc_ep_close(&h);
}

/* ---- churn --------------------------------------------------------------- */

static void test_churn(void)
{
	static uint8_t big[BIG];
	struct info x0, x1;
	struct rpc_ep a, h;
	smart_rpc_conn_t *k, *hk;
	uint32_t my_fds, len;
	char addr[64];
	int rfd, rndv = 0;
	pid_t pid;

	pid = victim_start(addr, &rfd);
	client_open(&a);
	client_open(&h);
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	/* one round first: the endpoint's lazily made parts are there */
	CHECK_OK(smart_rpc_connect(a.rpc, addr, &k));
	CHECK_OK(smart_rpc_send(k, OP_SINK, big, BIG));
	CHECK_OK(smart_rpc_call(k, OP_HELD, NULL, 0, &len, sizeof(len), &len));
	smart_rpc_close(k);
	victim_settled(hk, &x0);
	my_fds = fd_count();
	for (int i = 0; i < CYCLES; i++) {
		CHECK_OK(smart_rpc_connect(a.rpc, addr, &k));
		if (i % 10 == 0) {
			/* its descriptor goes, then the CLOSE at once: the
			 * victim READs it or cuts it as the CLOSE comes */
			CHECK_OK(smart_rpc_send(k, OP_SINK, big, BIG));
			smart_rpc_flush(a.rpc);
			rndv++;
		}
		smart_rpc_close(k);
	}
	victim_settled(hk, &x1); /* it has let every one go */
	printf("   %d connections (%d with a rendezvous at their CLOSE): "
	       "the victim's descriptors %u -> %u, resident %" PRIu64
	       " -> %" PRIu64 " KiB; ours %u -> %u\n",
	       CYCLES, rndv, x0.fds, x1.fds, x0.rss_kb, x1.rss_kb, my_fds,
	       fd_count());
	CHECK_EQ(x1.fds, x0.fds);
	CHECK_EQ(fd_count(), my_fds);
	if (RSS_MEANINGFUL)
		CHECK_LT(x1.rss_kb, x0.rss_kb + 8192);
	victim_exit(hk, pid, rfd);
	smart_rpc_close(hk);
	rpc_ep_close(&a);
	rpc_ep_close(&h);
}

/* ---- close_in_handler ------------------------------------------------ */

#define OP_BYE 12

struct bye {
	smart_rpc_conn_t *k;
	void *reuse[64]; /* what the handler allocates after its close */
	int ran;
};

/* An application's handler that closes the connection it serves (its
 * one upstream connection, on the peer's word), then allocates: one of
 * its allocations takes the memory the connection had (zeroed: a state
 * that reads live, no receive array). */
static void h_bye(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct bye *b = a;

	(void)d, (void)n;
	smart_rpc_reply(q, 0, NULL, 0);
	smart_rpc_close(b->k);
	for (int i = 0; i < 64; i++)
		b->reuse[i] = calloc(1, sizeof(struct smart_rpc_conn));
	b->ran++;
}

/* A REQ for op delivered into k's receive queue, as k's peer sends it
 * (shm: its SEND fills our segment's next slot). */
static void forge_request(smart_rpc_conn_t *k, uint16_t op)
{
	struct shm_rq *rq = k->qp->rq;
	uint32_t n = forge_rq_next(rq);
	uint8_t hdr[SMART_MSG_HDR_LEN];

	CHECK_NE(rq->posted, n);
	smart__msg_put_hdr(hdr, &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
							 .op = op,
							 .call = 1 });
	forge_cell(rq->seg, rq->cell_len, rq->nslots, n, sizeof(hdr),
		   smart__msg_imm(SMART_MSG_K_DATA, 0), SHM_RS_IMM, hdr);
}

/* A peer (here the listener side) sends a request our handler answers
 * by closing that very connection: the rest of the receive path must not
 * touch the connection after its handler returns (it used to: a read of
 * the freed connection, then, the memory taken again, its receive
 * reposted through it: SIGSEGV). */
static void test_close_in_handler(void)
{
	struct bye b = { 0 };
	struct rpc_ep a, h;
	smart_rpc_conn_t *hk;
	char addr[64];
	int rfd;
	pid_t pid;

	if (!on_shm())
		test_skip("delivering a request by hand needs shm");
	pid = victim_start(addr, &rfd);
	client_open(&a);
	CHECK_OK(smart_rpc_register(a.rpc, OP_BYE, h_bye, &b));
	CHECK_OK(smart_rpc_connect(a.rpc, addr, &b.k));
	forge_request(b.k, OP_BYE);
	while (!b.ran)
		smart_rpc_progress(a.rpc);
	smart_rpc_progress(a.rpc);
	printf("   a handler closed the connection it served: the endpoint "
	       "goes on with %d connections\n",
	       smart_rpc_conns(a.rpc));
	CHECK_EQ(smart_rpc_conns(a.rpc), 0);
	for (int i = 0; i < 64; i++)
		free(b.reuse[i]);
	client_open(&h);
	CHECK_OK(smart_rpc_connect(h.rpc, addr, &hk));
	victim_exit(hk, pid, rfd);
	smart_rpc_close(hk);
	rpc_ep_close(&h);
	rpc_ep_close(&a);
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = {
		{ "victim", child_victim }, { NULL, NULL }
	};
	int rc;

	if (argc > 2 && !strcmp(argv[1], "--child")) {
		snprintf(secret_path, sizeof(secret_path), "%s",
			 getenv("SMART_RPCA_SECRET"));
		test_children(argc, argv, children);
	}
	rpc_secret_file(secret_path, sizeof(secret_path),
			"/tmp/smart-rpca-XXXXXX", SECRET);
	setenv("SMART_RPCA_SECRET", secret_path, 1);
	rc = test_main(argc, argv,
		       (struct test_case[]){
			       { "destroy_race", test_destroy_race },
			       { "destroy_dead", test_destroy_dead },
			       { "destroy_stalled", test_destroy_stalled },
			       { "doorbells", test_doorbells },
			       { "orphans", test_orphans },
			       { "close_in_handler", test_close_in_handler },
			       { "churn", test_churn },
			       { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
