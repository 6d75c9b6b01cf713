/*
 * Messaging against peers that abuse the receive path and the window
 * (docs/rpc.md §14, H1 and H3), each attack played by hand on a connection the
 * library made, behind its back:
 *  - write_imm (H1): a peer plants a DATA header declaring X bytes in a
 *    receive slot (a 16-byte SEND the victim refuses, cutting that
 *    connection), dials again onto the same slab (the victim keeps no QP
 *    cache here, so the slab freed last is the next one taken) and
 *    delivers a WRITE_IMM completion of 16 + X bytes with a DATA
 *    immediate.  A victim that parses the slot for a WRITE_IMM's length
 *    echoes X bytes read past the slot, another honest peer's messages
 *    among them, or dies when X runs past its memory.  It must cut the
 *    connection instead: nothing echoed, nothing disclosed, alive.  On shm
 *    the completion is forged in the victim's receive segment, as any
 *    process holding it can (whatever a staging region allows); elsewhere
 *    the case is skipped (a verbs NIC says which opcode consumed a
 *    receive, and the WRITE's length).
 *  - no_acks (H3): a peer that answers every PING but acks nothing.  A
 *    call that finds the window full returns SMART_ETIMEDOUT at its
 *    deadline (counted from the call's start), from a task and from the
 *    main context, and the connection is cut by the progress keepalive
 *    once nothing was acked for the keepalive bound with data out.
 *  - flood: keepalive verdicts under load.  A connection whose receive
 *    queue holds more than a poll takes before every poll (filled by hand,
 *    as its peer may) must not keep the keepalive from judging another,
 *    silent one: a tick drains the CQ before it judges.
 *
 * Children: the victim and the stalling peer are child processes
 * (test_spawn); each writes its listen address to a pipe.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/rpc_fixture.h"
#include "harness/sched.h"
#include "harness/test.h"
#include "msg/msg_int.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "harness/shm_forge.h"
#include "transport/shm/shm.h"

#define SECRET		"rpc-recv-test-secret"
#define OP_ECHO		1
#define OP_SINK		2 /* one-way: kept nowhere */
#define OP_COUNTS	3
#define OP_EXIT		9
#define MARK		"HONEST-PEER-MESSAGE"
#define PLANT_CALL	7 /* the call id of the planted header */
/* keepalive of the connections nothing here means to cut: far away */
#define KA_QUIET_MS	2000
#define KA_QUIET_MISSES 10
/* the stalling peer's test: a 4-s bound, two 1-s calls well inside it
 * (a loaded machine may stretch each by up to the 500 ms allowed) */
#define KA_MS		400
#define KA_MISSES	10
#define CALL_MS		1000
#define WATCHDOG_MS	8000 /* the old code held the call this long */

static char secret_path[64];

static int on_shm(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	return !t || !strcmp(t, "shm");
}

static smart_ctx_t *ctx_new(void)
{
	return fixture_ctx((const char *[]){ "secret_file", secret_path,
					     "buf_pool", "4M", NULL });
}

/* ---- the victim -------------------------------------------------------- */

struct victim_counts {
	uint64_t echo_calls, echoed, marks, proto_errors, conns_failed;
	uint64_t cut_closes;
};

struct victim {
	smart_rpc_t *rpc;
	struct victim_counts n;
	int stop;
};

static void v_echo(smart_rpc_req_t *q, const void *d, uint32_t len, void *a)
{
	struct victim *v = a;
	const uint8_t *p = d, *end = p + len, *hit;

	v->n.echo_calls++;
	v->n.echoed += len;
	while (p < end &&
	       (hit = memmem(p, (size_t)(end - p), MARK, strlen(MARK)))) {
		v->n.marks++;
		p = hit + 1;
	}
	smart_rpc_reply(q, 0, d, len);
}

static void v_sink(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)q, (void)d, (void)n, (void)a;
}

static void v_counts(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	struct victim *v = a;
	struct smart_rpc_stats st;

	(void)d, (void)n;
	smart_rpc_stats(v->rpc, &st);
	v->n.proto_errors = st.proto_errors;
	v->n.conns_failed = st.conns_failed;
	v->n.cut_closes = st.cut_closes;
	smart_rpc_reply(q, 0, &v->n, sizeof(v->n));
}

static void v_exit(smart_rpc_req_t *q, const void *d, uint32_t n, void *a)
{
	(void)d, (void)n;
	((struct victim *)a)->stop = 1;
	smart_rpc_reply(q, 0, NULL, 0);
}

static void listen_tell(smart_rpc_t *rpc, int fd)
{
	char addr[64];

	CHECK_OK(smart_rpc_listen(rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(rpc, addr, sizeof(addr)));
	CHECK_EQ(write(fd, addr, strlen(addr) + 1), (ssize_t)strlen(addr) + 1);
}

/* args: pipe fd.  No QP cache: every accept takes the slab freed last. */
static void child_victim(char **args)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.qp_cache = UINT32_MAX,
					.keepalive_ms = KA_QUIET_MS,
					.keepalive_misses = KA_QUIET_MISSES };
	struct victim v = { 0 };
	smart_ctx_t *ctx = ctx_new();
	smart_worker_t *w;
	int fd = atoi(args[0]);

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &cfg, &v.rpc));
	CHECK_OK(smart_rpc_register(v.rpc, OP_ECHO, v_echo, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_SINK, v_sink, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_COUNTS, v_counts, &v));
	CHECK_OK(smart_rpc_register(v.rpc, OP_EXIT, v_exit, &v));
	listen_tell(v.rpc, fd);
	close(fd);
	while (!v.stop)
		smart_rpc_progress(v.rpc);
	CHECK_OK(smart_rpc_destroy(v.rpc));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* ---- the stalling peer ------------------------------------------------- */

static struct smart_rpc_conn *live_conn(struct smart_rpc *rpc)
{
	for (uint32_t i = 0; i < rpc->cfg.max_conns; i++)
		if (rpc->conns[i] && rpc->conns[i]->state == RPC_C_LIVE)
			return rpc->conns[i];
	return NULL;
}

/* One receive of c taken by hand: a PING answered with a PONG carrying
 * the ack the library last sent (never more), the receive given back. */
static void stall_recv(struct smart_rpc_conn *c, const struct smart_tp_wc *wc)
{
	uint32_t slot = (uint32_t)(wc->wr_id >> 34);
	struct smart_tp_recv r = { .wr_id = wc->wr_id,
				   .len = c->msg_len,
				   .lkey = c->lkey,
				   .local = c->rbuf +
					    (size_t)slot * c->msg_len };
	struct smart_tp_wr pong = { .opcode = SMART_TP_WRITE_IMM,
				    .flags = SMART_TP_IMM,
				    .wr_id = UINT64_C(0xffff) };

	if ((wc->imm >> 16 & 0xf) == SMART_MSG_K_PING) {
		pong.imm = smart__msg_imm(SMART_MSG_K_PONG, c->rx_acked_sent);
		CHECK_OK(c->rpc->tp->post(c->qp, &pong, 1));
	}
	CHECK_OK(c->rpc->tp->post_recv(c->qp, &r, 1));
}

/* args: pipe fd.  Accepts one connection with the library, says so on
 * the pipe, then polls its CQ by hand for good: PONGs, no acks, no
 * handler, ever.  The parent kills it. */
static void child_stall(char **args)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = KA_QUIET_MS,
					.keepalive_misses = KA_QUIET_MISSES };
	smart_ctx_t *ctx = ctx_new();
	struct smart_tp_wc wc[16];
	struct smart_rpc_conn *c;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	int fd = atoi(args[0]);

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_rpc_create(w, &cfg, &rpc));
	listen_tell(rpc, fd);
	while (!(c = live_conn(rpc)))
		smart_rpc_progress(rpc);
	CHECK_EQ(write(fd, "r", 1), 1);
	for (;;) {
		int n = rpc->tp->poll(rpc->cq, wc, 16);

		CHECK_GE(n, 0);
		for (int i = 0; i < n; i++)
			if (wc[i].status == SMART_TP_WC_OK &&
			    (wc[i].wr_id & 0xffff) == c->index &&
			    (wc[i].wr_id >> 32 & 3) == RPC_WR_RECV)
				stall_recv(c, &wc[i]);
	}
}

/* ---- the client side ----------------------------------------------------- */

static void client_open(struct rpc_ep *c, const struct smart_rpc_config *cfg)
{
	struct smart_rpc_config x =
		cfg ? *cfg :
		      (struct smart_rpc_config){
			      SMART_RPC_CONFIG_INIT,
			      .keepalive_ms = KA_QUIET_MS,
			      .keepalive_misses = KA_QUIET_MISSES
		      };

	rpc_ep_open(c, ctx_new(), &x);
}

static uint64_t ms_since(uint64_t t0)
{
	return (smart_now_ns() - t0) / 1000000;
}

/* ---- write_imm (H1) ---------------------------------------------------- */

/* The victim's counters over the honest connection h; 0, or the call's
 * error (the victim died). */
static int victim_counts(smart_rpc_conn_t *h, struct victim_counts *n)
{
	uint32_t len = 0;
	int rc = smart_rpc_call(h, OP_COUNTS, NULL, 0, n, sizeof(*n), &len);

	if (!rc)
		CHECK_EQ(len, sizeof(*n));
	return rc;
}

/* A 16-byte SEND on k's QP behind the library's back: a REQ header
 * declaring x payload bytes that are not there (the victim refuses it and
 * cuts k; the header stays in its receive slot 0). */
static void plant(smart_rpc_conn_t *k, uint32_t x)
{
	uint8_t *b = k->sbuf + (size_t)(k->window - 1) * k->msg_len;
	struct smart_tp_wr wr = { 0 };

	smart__msg_put_hdr(b, &(struct smart_msg_hdr){ .type = SMART_MSG_REQ,
						       .op = OP_ECHO,
						       .call = PLANT_CALL,
						       .len = x });
	wr.opcode = SMART_TP_SEND;
	wr.local = b;
	wr.len = SMART_MSG_HDR_LEN;
	wr.lkey = k->lkey;
	wr.flags = SMART_TP_IMM | SMART_TP_SIGNALED;
	wr.imm = smart__msg_imm(SMART_MSG_K_DATA, 0);
	wr.wr_id = UINT64_C(0xffff); /* no connection of ours */
	CHECK_OK(k->rpc->tp->post(k->qp, &wr, 1));
}

/* What a WRITE_IMM of len bytes with immediate imm delivers into the
 * peer's next receive, forged in its shm receive segment as the sender's
 * transport would (shm_recv.c exec_send): the cell's length and
 * immediate, then its seq with the flags released. */
static void forge_write_imm(smart_rpc_conn_t *k, uint32_t len, uint32_t imm)
{
	struct shm_peer *pe = k->qp->peer;
	uint32_t n = pe->sent;

	pe->posted = atomic_load(&pe->seg->posted);
	CHECK_NE(pe->posted, n);
	forge_cell(pe->seg, pe->cell_len, pe->nslots, n, len, imm,
		   SHM_RS_IMM | SHM_RS_WRITE, NULL);
	pe->sent = n + 1; /* our transport's next SEND goes behind it */
}

/* Wait (at most 10 s) until the victim has answered or refused one more
 * message than *was; 0, or the error of the honest call (it died). */
static int victim_moved(smart_rpc_conn_t *h, struct victim_counts *was)
{
	uint64_t t0 = smart_now_ns();
	struct victim_counts n;
	int rc;

	do {
		rc = victim_counts(h, &n);
		if (rc)
			return rc;
		if (n.proto_errors > was->proto_errors ||
		    n.echo_calls > was->echo_calls) {
			*was = n;
			return 0;
		}
	} while (ms_since(t0) < 10000);
	TEST_FAIL("the victim neither echoed nor refused in 10 s");
}

struct round {
	uint64_t echoed, marks;
	int dead_sig; /* the signal that killed the victim, or 0 */
};

/* One attack with x payload bytes: plant on a first connection, forge the
 * WRITE_IMM on the next; what the victim echoed meanwhile. */
static struct round attack(struct rpc_ep *c, const char *addr,
			   smart_rpc_conn_t *h, pid_t victim, uint32_t x)
{
	struct victim_counts before, n;
	struct round r = { 0 };
	smart_rpc_conn_t *k;
	int st;

	CHECK_OK(victim_counts(h, &before));
	n = before;
	CHECK_OK(smart_rpc_connect(c->rpc, addr, &k));
	plant(k, x);
	CHECK_OK(victim_moved(h, &n));
	CHECK_U64_EQ(n.proto_errors, before.proto_errors + 1);
	smart_rpc_close(k);
	/* the slab of k is the victim's next */
	CHECK_OK(smart_rpc_connect(c->rpc, addr, &k));
	forge_write_imm(k, SMART_MSG_HDR_LEN + x,
			smart__msg_imm(SMART_MSG_K_DATA, 0));
	if (victim_moved(h, &n)) {
		CHECK_EQ(waitpid(victim, &st, 0), victim);
		r.dead_sig = WIFSIGNALED(st) ? WTERMSIG(st) : -1;
		printf("   X = %u: the victim died (signal %d)\n", x,
		       r.dead_sig);
		return r;
	}
	r.echoed = n.echoed - before.echoed;
	r.marks = n.marks - before.marks;
	printf("   X = %u: %" PRIu64 " bytes echoed, the honest peer's "
	       "messages in them %" PRIu64 " times; the victim refused %" PRIu64
	       " messages\n",
	       x, r.echoed, r.marks, n.proto_errors - before.proto_errors);
	smart_rpc_close(k);
	return r;
}

static void test_write_imm(void)
{
	static const uint32_t xs[] = { 300000, 1000000, 8u << 20 };
	struct victim_counts n;
	struct round r[3];
	struct rpc_ep c;
	smart_rpc_conn_t *h;
	uint8_t msg[4000];
	char addr[64];
	pid_t victim;
	int st;

	if (!on_shm())
		test_skip("forging a receive's completion needs shm (a verbs "
			  "NIC reports what consumed a receive itself)");
	victim = rpc_child_start("victim", NULL, addr, NULL);
	client_open(&c, NULL);
	/* the honest peer: its messages fill every receive slot of its
	 * slab, the first the victim made (so the one after the attacker's
	 * in memory) */
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &h));
	for (size_t i = 0; i + strlen(MARK) <= sizeof(msg); i += strlen(MARK))
		memcpy(msg + i, MARK, strlen(MARK));
	for (int i = 0; i < 200; i++)
		CHECK_OK(smart_rpc_send(h, OP_SINK, msg, sizeof(msg)));
	for (int i = 0; i < 3; i++) {
		r[i] = attack(&c, addr, h, victim, xs[i]);
		if (r[i].dead_sig)
			break;
	}
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(r[i].dead_sig, 0);
		CHECK_U64_EQ(r[i].echoed, 0);
		CHECK_U64_EQ(r[i].marks, 0);
	}
	/* the path taken: the plant and the WRITE_IMM of each round were
	 * both refused, nothing else was */
	CHECK_OK(victim_counts(h, &n));
	CHECK_U64_EQ(n.proto_errors, 6);
	CHECK_U64_EQ(n.echo_calls, 0);
	CHECK_OK(smart_rpc_call(h, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(victim, &st, 0), victim);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	smart_rpc_close(h);
	rpc_ep_close(&c);
}

/* ---- cut_close ----------------------------------------------------------- */

/* A peer that breaks the protocol is cut and told so: its connection ends
 * at the CLOSE, not at its keepalive bound (4 s here) with what it holds
 * for the victim kept meanwhile.  Watched for 2 s. */
static void test_cut_close(void)
{
	struct victim_counts before, n;
	struct rpc_ep c;
	smart_rpc_conn_t *h, *k;
	char addr[64];
	uint64_t t0, ms;
	pid_t victim;
	int status;

	victim = rpc_child_start("victim", NULL, addr, NULL);
	client_open(&c, NULL);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &h));
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &k));
	CHECK_OK(victim_counts(h, &before));
	n = before;
	plant(k, 100); /* a declared length that did not arrive */
	CHECK_OK(victim_moved(h, &n));
	CHECK_U64_EQ(n.proto_errors, before.proto_errors + 1);
	t0 = smart_now_ns();
	while (k->state == RPC_C_LIVE && ms_since(t0) < 2000)
		smart_rpc_progress(c.rpc);
	ms = ms_since(t0);
	printf("   the cut peer's connection: %s after %" PRIu64 " ms\n",
	       k->state == RPC_C_LIVE ? "still live" : "closed", ms);
	CHECK_NE(k->state, RPC_C_LIVE);
	CHECK_U64_EQ(n.cut_closes, before.cut_closes + 1); /* the path */
	CHECK_OK(smart_rpc_call(h, OP_EXIT, NULL, 0, NULL, 0, NULL));
	CHECK_EQ(waitpid(victim, &status, 0), victim);
	smart_rpc_close(k);
	smart_rpc_close(h);
	rpc_ep_close(&c);
}

/* ---- no_acks (H3) ------------------------------------------------------ */

struct stalled_call {
	smart_rpc_conn_t *k;
	pid_t peer;
	int rc, done;
	uint64_t ms;
};

static void call_task(smart_worker_t *w, void *p)
{
	struct stalled_call *s = p;
	uint64_t b = 1, t0 = smart_now_ns();
	uint32_t n;

	(void)w;
	s->rc = smart_rpc_call(s->k, OP_ECHO, &b, 8, &b, 8, &n);
	s->ms = ms_since(t0);
	s->done = 1;
}

/* The old code held the call until the peer went: kill it then, so that
 * the case fails instead of hanging. */
static void watchdog_task(smart_worker_t *w, void *p)
{
	struct stalled_call *s = p;
	uint64_t t0 = smart_now_ns();

	while (!s->done && ms_since(t0) < WATCHDOG_MS)
		smart_task_yield(w);
	if (!s->done) {
		printf("   the call was still held after %d ms: the peer "
		       "killed\n",
		       WATCHDOG_MS);
		kill(s->peer, SIGKILL);
	}
}

static void test_no_acks(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.timeout_ms = CALL_MS, .window = 4,
					.keepalive_ms = KA_MS,
					.keepalive_misses = KA_MISSES };
	struct stalled_call s = { 0 };
	struct smart_rpc_stats st;
	struct pollfd pf = { .events = POLLIN };
	uint64_t w0;
	double late;
	struct rpc_ep c;
	uint64_t t0, b = 2, cut_ms;
	uint32_t n;
	char addr[64], ready;
	int status;

	s.peer = rpc_child_start("stall", NULL, addr, &pf.fd);
	client_open(&c, &cfg);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &s.k));
	while (poll(&pf, 1, 0) == 0) /* its hand-polling has begun */
		smart_rpc_progress(c.rpc);
	CHECK_EQ(read(pf.fd, &ready, 1), 1);
	close(pf.fd);
	/* the window filled: one-way messages the peer never acks */
	t0 = smart_now_ns();
	for (uint32_t i = 0; i < s.k->swin; i++)
		CHECK_OK(smart_rpc_send(s.k, OP_SINK, &b, 8));
	/* a call from a task: SMART_ETIMEDOUT at its deadline */
	CHECK_OK(smart_task_spawn(c.w, call_task, &s));
	CHECK_OK(smart_task_spawn(c.w, watchdog_task, &s));
	w0 = sched_wait_all_ns(getpid());
	CHECK_OK(smart_worker_run(c.w));
	late = sched_waited_ms(w0);
	printf("   call from a task: %s after %" PRIu64 " ms (timeout %d "
	       "ms; threads waited %.0f ms for a CPU)\n",
	       smart_strerror(s.rc), s.ms, CALL_MS, late);
	CHECK_EQ(s.rc, SMART_ETIMEDOUT);
	/* at its deadline: not before; after, by 500 ms and what this
	 * process waited for a CPU */
	CHECK_GE(s.ms, CALL_MS);
	CHECK_LE(s.ms, CALL_MS + 500 + late);
	/* from the main context */
	w0 = sched_wait_all_ns(getpid());
	s.ms = smart_now_ns();
	s.rc = smart_rpc_call(s.k, OP_ECHO, &b, 8, &b, 8, &n);
	s.ms = ms_since(s.ms);
	late = sched_waited_ms(w0);
	printf("   call from the main context: %s after %" PRIu64 " ms (%.0f "
	       "ms waited)\n",
	       smart_strerror(s.rc), s.ms, late);
	CHECK_EQ(s.rc, SMART_ETIMEDOUT);
	CHECK_GE(s.ms, CALL_MS);
	CHECK_LE(s.ms, CALL_MS + 500 + late);
	CHECK_OK(smart_rpc_conn_stats(s.k, &st));
	CHECK_U64_EQ(st.call_timeouts, 2);
	CHECK_U64_EQ(st.ka_failures, 0);
	/* the peer answers PINGs, acks nothing: cut after the bound */
	while (smart_rpc_conns(c.rpc) > 0 && ms_since(t0) < 10000)
		smart_rpc_progress(c.rpc);
	cut_ms = ms_since(t0);
	CHECK_OK(smart_rpc_conn_stats(s.k, &st));
	printf("   the peer answered %" PRIu64 " PINGs and acked nothing: "
	       "cut after %" PRIu64 " ms (bound %d ms)\n",
	       st.ka_probes, cut_ms, KA_MS * KA_MISSES);
	CHECK_EQ(smart_rpc_conns(c.rpc), 0);
	CHECK_GT(st.ka_probes, 1); /* PONGs came: it was not silent */
	CHECK_U64_EQ(st.ka_failures, 1);
	CHECK_GE(cut_ms, KA_MS * KA_MISSES);
	CHECK_EQ(smart_rpc_call(s.k, OP_ECHO, &b, 8, &b, 8, &n), SMART_ECONN);
	smart_rpc_close(s.k);
	rpc_ep_close(&c);
	kill(s.peer, SIGKILL);
	CHECK_EQ(waitpid(s.peer, &status, 0), s.peer);
}

/* ---- flood (keepalive verdicts under load) ------------------------------- */

/* Fill every receive of k that is posted and not yet completed with a
 * bare ACK, as its peer may (its SENDs land in our receive segment; the
 * peer is stopped here, so nothing else writes it); how many receives
 * then wait for the next poll. */
static uint32_t flood(smart_rpc_conn_t *k)
{
	struct shm_rq *rq = k->qp->rq;
	uint32_t n = forge_rq_next(rq);

	CHECK_EQ(atomic_load(&rq->seg->closed), 0);
	for (; n != rq->posted; n++)
		forge_cell(rq->seg, rq->cell_len, rq->nslots, n, 0,
			   smart__msg_imm(SMART_MSG_K_ACK,
					  (uint16_t)k->tx_acked),
			   SHM_RS_IMM, NULL);
	return n - rq->taken;
}

/* Two connections to a server, which is then stopped: one of them kept
 * busy with more messages than a poll takes (a batch, 32) before every
 * poll, the other silent.  The silent one is given up after the
 * keepalive bound all the same (a tick drains the CQ before it judges);
 * the busy one lives. */
static void test_flood(void)
{
	struct smart_rpc_config cfg = { SMART_RPC_CONFIG_INIT,
					.keepalive_ms = 100,
					.keepalive_misses = 10 };
	struct smart_rpc_stats st;
	struct rpc_ep c;
	smart_rpc_conn_t *busy, *quiet;
	uint64_t t0, polls = 0, ms;
	char addr[64];
	pid_t pid;
	int status;

	if (!on_shm())
		test_skip("flooding a receive queue by hand needs shm");
	pid = rpc_child_start("victim", NULL, addr, NULL);
	client_open(&c, &cfg);
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &busy));
	CHECK_OK(smart_rpc_connect(c.rpc, addr, &quiet));
	CHECK_EQ(kill(pid, SIGSTOP), 0);
	t0 = smart_now_ns();
	while (quiet->state == RPC_C_LIVE && ms_since(t0) < 5000) {
		CHECK_GT(flood(busy), SMART_POLL_BATCH);
		smart_rpc_progress(c.rpc);
		polls++;
	}
	ms = ms_since(t0);
	CHECK_OK(smart_rpc_conn_stats(quiet, &st));
	printf("   %" PRIu64 " polls, each finding more than a batch: the "
	       "silent peer %s after %" PRIu64 " ms (bound %u ms)\n",
	       polls, quiet->state == RPC_C_LIVE ? "still kept" : "given up",
	       ms, cfg.keepalive_ms * cfg.keepalive_misses);
	CHECK_NE(quiet->state, RPC_C_LIVE);
	CHECK_U64_EQ(st.ka_failures, 1);
	CHECK_EQ(busy->state, RPC_C_LIVE);
	smart_rpc_close(quiet);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	smart_rpc_close(busy);
	rpc_ep_close(&c);
}

int main(int argc, char **argv)
{
	static const struct test_child children[] = { { "victim",
							child_victim },
						      { "stall", child_stall },
						      { NULL, NULL } };
	int rc;

	if (argc > 2 && !strcmp(argv[1], "--child")) {
		/* the children read the parent's secret file: its path is
		 * in their environment */
		snprintf(secret_path, sizeof(secret_path), "%s",
			 getenv("SMART_RPCR_SECRET"));
		test_children(argc, argv, children);
	}
	rpc_secret_file(secret_path, sizeof(secret_path),
			"/tmp/smart-rpcr-XXXXXX", SECRET);
	setenv("SMART_RPCR_SECRET", secret_path, 1);
	rc = test_main(argc, argv,
		       (struct test_case[]){ { "write_imm", test_write_imm },
					     { "cut_close", test_cut_close },
					     { "no_acks", test_no_acks },
					     { "flood", test_flood },
					     { NULL, NULL } });
	unlink(secret_path);
	return rc;
}
