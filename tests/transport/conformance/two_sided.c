/*
 * Conformance cases of rule 8 (two-sided): receive queues, SEND with and
 * without immediate data, WRITE_IMM (of 0 bytes too, without a region),
 * what consumed a receive (SEND or WRITE_IMM: recv_op in its completion),
 * receiver not ready, a message too
 * long for its receive, a SEND longer than the peer takes, malformed peer
 * blobs, and a peer in another process; and rule 9 (events) on the
 * receiving end of a two-sided QP.
 *
 * Fixture: QP a in the initiator domain and QP b in the responder domain,
 * each with a receive queue and a CQ of its own (with events), connected to each other
 * with qp_connect_peer (blob + qp_fd); a also has the responder's region
 * for the WRITE half of WRITE_IMM.  Buffers: a's in the initiator's local
 * MR, b's in an MR of its own domain.
 *
 * Invariants: every wait is bounded (CONF_WAIT_NS), even the RNR one (the
 * contract bounds it); the cases skip, saying why, on a transport whose
 * caps.max_recv_wr is 0.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

#define TS_RECV_LEN 4096 /* each receive's buffer */
#define TS_MAX_MSG  4096 /* the QPs' max_msg */
#define TS_RQ	    64	 /* receives a queue holds */
#define TS_WIMM_OFF 8192 /* region offset WRITE_IMM writes to */

struct ts_end {
	struct smart_tp_domain *dom;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	uint8_t *buf; /* TS_RQ receive buffers, then send data */
	uint32_t lkey;
	struct smart_tp_mr *mr;	     /* b's own; a uses the fixture's */
	struct smart_tp_wc pend[64]; /* reaped while waiting for the
					 * other end, oldest first */
	int npend;
};

struct ts {
	struct fx f;
	struct ts_end a, b;
};

static void ts_skip_unless(const struct smart_conf_env *env)
{
	struct smart_tp_domain *d;
	struct smart_tp_caps caps;

	memset(&caps, 0, sizeof(caps));
	CHECK_OK(dom_open(env, 0, &d));
	env->ops->query_caps(d, &caps);
	env->ops->domain_close(d);
	if (!caps.max_recv_wr)
		test_skip("no two-sided operations on this transport "
			  "(caps.max_recv_wr 0)");
	CHECK_GE(caps.max_recv_wr, TS_RQ);
	CHECK_GE(caps.max_msg, TS_MAX_MSG);
}

static void ts_qp(struct ts *t, struct ts_end *e, uint32_t max_msg)
{
	const struct smart_tp_ops *ops = t->f.ops;
	struct smart_tp_qp_attr attr = { .max_send_wr = 64,
					 .max_recv_wr = TS_RQ,
					 .max_msg = max_msg };

	CHECK_OK(ops->cq_create(e->dom, 256, SMART_TP_CQ_EVENTS, &e->cq));
	CHECK_OK(ops->qp_create(e->dom, e->cq, &attr, &e->qp));
}

/* Duplicates of the descriptors qp's peer needs (the transport takes
 * those it is given); returns how many. */
static int ts_fds(const struct smart_tp_ops *ops, struct smart_tp_qp *qp,
		  int fds[SMART_TP_PEER_FDS])
{
	int n = ops->qp_fds(qp, fds);

	for (int i = 0; i < n; i++) {
		fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
		CHECK_GE(fds[i], 0);
	}
	return n;
}

/* Connect x to y's QP: y's blob and duplicates of its descriptors. */
static int ts_connect(struct ts *t, struct ts_end *x, struct ts_end *y,
		      struct smart_tp_remote *r)
{
	const struct smart_tp_ops *ops = t->f.ops;
	uint8_t blob[SMART_TP_BLOB_MAX];
	size_t len = sizeof(blob);
	int fds[SMART_TP_PEER_FDS], n = ts_fds(ops, y->qp, fds);

	CHECK_OK(ops->qp_blob(y->qp, blob, &len));
	return ops->qp_connect_peer(x->qp, r, blob, len, fds, n);
}

static void ts_open(struct ts *t, const struct smart_conf_env *env,
		    uint32_t b_max_msg)
{
	memset(t, 0, sizeof(*t));
	fx_open(&t->f, env);
	t->a.dom = t->f.idom;
	t->a.buf = t->f.laddr;
	t->a.lkey = t->f.t.lkey;
	t->b.dom = t->f.rdom;
	CHECK_OK(t->f.ops->mr_alloc(t->b.dom, CONF_LOCAL_LEN, 0, 0, &t->b.mr));
	t->b.buf = t->b.mr->addr;
	t->b.lkey = t->b.mr->lkey;
	ts_qp(t, &t->a, TS_MAX_MSG);
	ts_qp(t, &t->b, b_max_msg);
	CHECK_OK(ts_connect(t, &t->a, &t->b, t->f.remote));
	CHECK_OK(ts_connect(t, &t->b, &t->a, NULL));
}

static void ts_close(struct ts *t)
{
	const struct smart_tp_ops *ops = t->f.ops;
	struct ts_end *e[2] = { &t->a, &t->b };
	int i;

	for (i = 0; i < 2; i++) {
		ops->qp_destroy(e[i]->qp);
		ops->cq_destroy(e[i]->cq);
	}
	ops->mr_free(t->b.dom, t->b.mr);
	fx_close(&t->f);
}

/* Post receive k of end e (its k-th buffer, id 1000 + k). */
static void ts_recv(struct ts *t, struct ts_end *e, uint32_t k, uint32_t len)
{
	struct smart_tp_recv r = { .wr_id = 1000 + k,
				   .local = e->buf + (size_t)k * TS_RECV_LEN,
				   .len = len,
				   .lkey = e->lkey };

	CHECK_OK(t->f.ops->post_recv(e->qp, &r, 1));
}

static struct smart_tp_wr ts_send(struct ts_end *e, uint64_t id, void *src,
				  uint32_t len, uint8_t flags, uint32_t imm)
{
	struct smart_tp_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = SMART_TP_SEND;
	w.local = src;
	w.len = len;
	w.lkey = e->lkey;
	w.flags = flags;
	w.imm = imm;
	return w;
}

/* Collect `want` completions of end e, polling the other end too (its
 * poll is what executes its SENDs when the CQs differ) and keeping what
 * that poll reaps for the other end's own waits. */
static void ts_wait(struct ts *t, struct ts_end *e, struct smart_tp_wc *wc,
		    int want)
{
	uint64_t deadline = now_ns() + CONF_WAIT_NS;
	struct ts_end *o = e == &t->a ? &t->b : &t->a;
	int n = 0, r, room;

	while (n < want && e->npend) {
		wc[n++] = e->pend[0];
		memmove(e->pend, e->pend + 1,
			(size_t)--e->npend * sizeof(e->pend[0]));
	}
	while (n < want) {
		r = t->f.ops->poll(e->cq, wc + n, want - n);
		CHECK_GE(r, 0);
		n += r;
		room = (int)(sizeof(o->pend) / sizeof(o->pend[0])) - o->npend;
		CHECK_MSG(room > 0, "more than %d completions unclaimed",
			  o->npend);
		r = t->f.ops->poll(o->cq, o->pend + o->npend, room);
		CHECK_GE(r, 0);
		o->npend += r;
		CHECK_MSG(now_ns() < deadline, "%d of %d completions", n, want);
	}
}

/* Poll e's CQ (and run the other end) until one completion arrives. */
static struct smart_tp_wc ts_one(struct ts *t, struct ts_end *e)
{
	struct smart_tp_wc wc;

	ts_wait(t, e, &wc, 1);
	return wc;
}

/* ------------------------------------------------------------------ */
/* Case: two_sided — SENDs of every size, with and without immediate,  */
/* inline, after a WRITE of the same QP, and WRITE_IMM                 */

void case_two_sided(const struct smart_conf_env *env)
{
	static const uint32_t sizes[] = { 0,  1,  7,	8,    63,
					  64, 65, 1000, 4095, 4096 };
	const size_t ns = sizeof(sizes) / sizeof(sizes[0]);
	uint64_t rng = case_seed("two_sided");
	struct smart_tp_wr w[2];
	struct smart_tp_wc wc;
	struct smart_tp_caps caps;
	uint8_t *src, stack[64];
	struct ts t;
	uint32_t i;

	ts_skip_unless(env);
	ts_open(&t, env, TS_MAX_MSG);
	memset(&caps, 0, sizeof(caps));
	t.f.ops->query_caps(t.a.dom, &caps);
	src = t.a.buf + 128 * 1024;
	for (i = 0; i < ns; i++)
		ts_recv(&t, &t.b, i, TS_RECV_LEN);
	for (i = 0; i < ns; i++) {
		uint8_t fl = CONF_SIG | (i & 1 ? SMART_TP_IMM : 0);

		rng_fill(&rng, src, sizes[i]);
		CHECK_OK(t.f.ops->post(t.a.qp,
				       (struct smart_tp_wr[]){
					       ts_send(&t.a, i, src, sizes[i],
						       fl, 0xabc000u + i) },
				       1));
		wc = ts_one(&t, &t.a);
		CHECK_WC(wc, i, SMART_TP_WC_OK);
		CHECK_EQ(wc.opcode, SMART_TP_SEND);
		wc = ts_one(&t, &t.b);
		CHECK_WC(wc, 1000 + i, SMART_TP_WC_OK);
		CHECK_EQ(wc.opcode, SMART_TP_RECV);
		CHECK_EQ(wc.len, sizes[i]);
		CHECK_EQ(wc.flags & SMART_TP_IMM, i & 1 ? SMART_TP_IMM : 0);
		if (i & 1)
			CHECK_EQ(wc.imm, 0xabc000u + i);
		CHECK_MEM_EQ(t.b.buf + (size_t)i * TS_RECV_LEN, src, sizes[i],
			     "received bytes");
	}
	printf("   %zu SENDs of 0..4096 bytes\n", ns);

	/* rule 3: a WRITE before a SEND on the QP has landed when the
	 * receive completes */
	ts_recv(&t, &t.b, 20, TS_RECV_LEN);
	memset(src, 0x77, 256);
	w[0] = wr_make(&t.f.t, SMART_TP_WRITE, 50, 4096, src, 256, 0);
	w[1] = ts_send(&t.a, 51, src, 8, CONF_SIG, 0);
	CHECK_OK(t.f.ops->post(t.a.qp, w, 2));
	CHECK_WC(ts_one(&t, &t.b), 1020, SMART_TP_WC_OK);
	CHECK_MEM_EQ(t.f.raddr + 4096, src, 256, "the WRITE before the SEND");
	CHECK_WC(ts_one(&t, &t.a), 51, SMART_TP_WC_OK);

	/* WRITE_IMM: the bytes in the region, a receive of its length + imm */
	ts_recv(&t, &t.b, 21, TS_RECV_LEN);
	rng_fill(&rng, src, 128);
	w[0] = wr_make(&t.f.t, SMART_TP_WRITE_IMM, 52, TS_WIMM_OFF, src, 128,
		       CONF_SIG);
	w[0].imm = 0x5eed;
	CHECK_OK(t.f.ops->post(t.a.qp, w, 1));
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1021, SMART_TP_WC_OK);
	CHECK(wc.len == 128 && (wc.flags & SMART_TP_IMM) && wc.imm == 0x5eed);
	CHECK_MEM_EQ(t.f.raddr + TS_WIMM_OFF, src, 128, "WRITE_IMM's bytes");
	CHECK_WC(ts_one(&t, &t.a), 52, SMART_TP_WC_OK);

	/* inline: the bytes are copied at post, from unregistered memory */
	if (caps.max_inline >= sizeof(stack)) {
		ts_recv(&t, &t.b, 22, TS_RECV_LEN);
		memset(stack, 0x3c, sizeof(stack));
		CHECK_OK(t.f.ops->post(t.a.qp,
				       (struct smart_tp_wr[]){ ts_send(
					       &t.a, 53, stack, sizeof(stack),
					       CONF_SIG | SMART_TP_INLINE, 0) },
				       1));
		memset(stack, 0, sizeof(stack));
		wc = ts_one(&t, &t.b);
		CHECK_WC(wc, 1022, SMART_TP_WC_OK);
		CHECK_EQ(wc.len, sizeof(stack));
		memset(stack, 0x3c, sizeof(stack));
		CHECK_MEM_EQ(t.b.buf + 22 * TS_RECV_LEN, stack, sizeof(stack),
			     "an inline SEND");
		CHECK_WC(ts_one(&t, &t.a), 53, SMART_TP_WC_OK);
	}
	/* the other way: b sends to a */
	ts_recv(&t, &t.a, 0, TS_RECV_LEN);
	memcpy(t.b.buf + 40 * TS_RECV_LEN, "pong", 4);
	CHECK_OK(t.f.ops->post(t.b.qp,
			       (struct smart_tp_wr[]){ ts_send(
				       &t.b, 60, t.b.buf + 40 * TS_RECV_LEN, 4,
				       CONF_SIG, 0) },
			       1));
	wc = ts_one(&t, &t.a);
	CHECK_WC(wc, 1000, SMART_TP_WC_OK);
	CHECK(wc.len == 4 && !memcmp(t.a.buf, "pong", 4));
	CHECK_WC(ts_one(&t, &t.b), 60, SMART_TP_WC_OK);
	/* a zero-byte WRITE_IMM (the keepalive probe) from b, which has no
	 * region of a's: no memory touched, a receive of 0 bytes + imm */
	ts_recv(&t, &t.a, 1, TS_RECV_LEN);
	memset(w, 0, sizeof(w[0]));
	w[0].wr_id = 61;
	w[0].opcode = SMART_TP_WRITE_IMM;
	w[0].flags = CONF_SIG;
	w[0].imm = 0x40000;
	CHECK_OK(t.f.ops->post(t.b.qp, w, 1));
	wc = ts_one(&t, &t.a);
	CHECK_WC(wc, 1001, SMART_TP_WC_OK);
	CHECK(wc.len == 0 && (wc.flags & SMART_TP_IMM) && wc.imm == 0x40000);
	CHECK_WC(ts_one(&t, &t.b), 61, SMART_TP_WC_OK);
	expect_quiet(t.f.ops, t.a.cq);
	expect_quiet(t.f.ops, t.b.cq);
	ts_close(&t);
}

/* ------------------------------------------------------------------ */
/* Case: two_sided_kind — a receive's completion says what consumed it  */
/* (rule 8): SEND (its bytes in the buffer, len within the receive) or  */
/* WRITE_IMM (the WRITE's length, nothing in the buffer); failed and    */
/* flushed receives say neither                                         */

/* Receive k of b, its buffer filled with a pattern first. */
static void ts_recv_marked(struct ts *t, uint32_t k)
{
	memset(t->b.buf + (size_t)k * TS_RECV_LEN, 0xa5, TS_RECV_LEN);
	ts_recv(t, &t->b, k, TS_RECV_LEN);
}

/* Receive k's buffer still holds only the pattern. */
static void ts_untouched(const struct ts *t, uint32_t k)
{
	const uint8_t *p = t->b.buf + (size_t)k * TS_RECV_LEN;

	for (uint32_t i = 0; i < TS_RECV_LEN; i++)
		CHECK_MSG(p[i] == 0xa5,
			  "receive %u: byte %u written by a "
			  "WRITE_IMM",
			  k, i);
}

void case_two_sided_kind(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("two_sided_kind");
	struct smart_tp_wr w;
	struct smart_tp_wc wc;
	uint8_t *src;
	struct ts t;

	ts_skip_unless(env);
	ts_open(&t, env, TS_MAX_MSG);
	src = t.a.buf + 128 * 1024;
	for (uint32_t k = 0; k < 4; k++)
		ts_recv_marked(&t, k);
	/* SENDs, with and without immediate: their bytes, their length */
	rng_fill(&rng, src, 100);
	CHECK_OK(t.f.ops->post(t.a.qp,
			       (struct smart_tp_wr[]){
				       ts_send(&t.a, 1, src, 100, CONF_SIG, 0),
				       ts_send(&t.a, 2, src, 0,
					       CONF_SIG | SMART_TP_IMM, 7) },
			       2));
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1000, SMART_TP_WC_OK);
	CHECK(wc.recv_op == SMART_TP_SEND && wc.len == 100 && !wc.flags);
	CHECK_MEM_EQ(t.b.buf, src, 100, "a SEND's bytes");
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1001, SMART_TP_WC_OK);
	CHECK(wc.recv_op == SMART_TP_SEND && wc.len == 0 &&
	      (wc.flags & SMART_TP_IMM) && wc.imm == 7);
	/* WRITE_IMMs of 128 and 0 bytes: the WRITE's length, nothing in
	 * the receive's buffer */
	w = wr_make(&t.f.t, SMART_TP_WRITE_IMM, 3, TS_WIMM_OFF, src, 128,
		    CONF_SIG);
	w.imm = 0x10000;
	CHECK_OK(t.f.ops->post(t.a.qp, &w, 1));
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1002, SMART_TP_WC_OK);
	CHECK(wc.recv_op == SMART_TP_WRITE_IMM && wc.len == 128 &&
	      (wc.flags & SMART_TP_IMM) && wc.imm == 0x10000);
	ts_untouched(&t, 2);
	CHECK_MEM_EQ(t.f.raddr + TS_WIMM_OFF, src, 128, "WRITE_IMM's bytes");
	memset(&w, 0, sizeof(w));
	w.wr_id = 4;
	w.opcode = SMART_TP_WRITE_IMM;
	w.flags = CONF_SIG;
	w.imm = 0x40000;
	CHECK_OK(t.f.ops->post(t.a.qp, &w, 1));
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1003, SMART_TP_WC_OK);
	CHECK(wc.recv_op == SMART_TP_WRITE_IMM && wc.len == 0 &&
	      wc.imm == 0x40000);
	ts_untouched(&t, 3);
	for (uint64_t id = 1; id <= 4; id++)
		CHECK_WC(ts_one(&t, &t.a), id, SMART_TP_WC_OK);
	/* a message too long for its receive: that receive fails, the
	 * next flushes, neither consumed by anything */
	ts_recv(&t, &t.b, 4, 16);
	ts_recv(&t, &t.b, 5, 64);
	CHECK_OK(t.f.ops->post(t.a.qp,
			       (struct smart_tp_wr[]){
				       ts_send(&t.a, 5, src, 64, CONF_SIG, 0) },
			       1));
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1004, SMART_TP_WC_LOC_PROT);
	CHECK_EQ(wc.recv_op, 0);
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1005, SMART_TP_WC_FLUSH);
	CHECK_EQ(wc.recv_op, 0);
	CHECK_EQ(ts_one(&t, &t.a).wr_id, 5);
	printf("   SEND and WRITE_IMM receives told apart; a WRITE_IMM left "
	       "its receive's buffer alone\n");
	ts_close(&t);
}

/* ------------------------------------------------------------------ */
/* Case: two_sided_flow — more messages than receives: the sender waits */
/* for receives (not an error while they come in time); every message  */
/* arrives once and in order                                           */

void case_two_sided_flow(const struct smart_conf_env *env)
{
	uint32_t total = scaled(env, 5000), posted = 0, got = 0, sent = 0;
	struct smart_tp_wc wc[16];
	struct ts t;
	int n, i;

	ts_skip_unless(env);
	ts_open(&t, env, TS_MAX_MSG);
	for (; posted < 16; posted++)
		ts_recv(&t, &t.b, posted % TS_RQ, 64);
	uint64_t deadline = now_ns() + CONF_WAIT_NS;

	while (got < total) {
		/* a keeps 32 SENDs in flight, twice the receives posted */
		while (sent < total && sent - got < 32) {
			uint64_t *p = (uint64_t *)(t.a.buf + 8 * (sent % 64));
			int rc;

			*p = sent;
			rc = t.f.ops->post(t.a.qp,
					   (struct smart_tp_wr[]){ ts_send(
						   &t.a, sent, p, 8,
						   sent % 8 == 7 ? CONF_SIG : 0,
						   0) },
					   1);
			if (rc == SMART_EAGAIN)
				break;
			CHECK_OK(rc);
			sent++;
		}
		n = t.f.ops->poll(t.a.cq, wc, 16);
		CHECK_GE(n, 0);
		for (i = 0; i < n; i++)
			CHECK_EQ(wc[i].status, SMART_TP_WC_OK);
		n = t.f.ops->poll(t.b.cq, wc, 16);
		CHECK_GE(n, 0);
		for (i = 0; i < n; i++, got++) {
			uint32_t k = (uint32_t)(wc[i].wr_id - 1000);
			uint64_t v;

			CHECK_WC(wc[i], 1000 + got % TS_RQ, SMART_TP_WC_OK);
			CHECK_EQ(wc[i].len, 8);
			memcpy(&v, t.b.buf + (size_t)k * TS_RECV_LEN, 8);
			CHECK_MSG(v == got, "message %u carried %" PRIu64, got,
				  v);
			ts_recv(&t, &t.b, posted++ % TS_RQ, 64);
		}
		if (n)
			deadline = now_ns() + CONF_WAIT_NS;
		CHECK_MSG(now_ns() < deadline, "flow stuck at %u", got);
	}
	printf("   %u messages through 16 receives, in order\n", total);
	ts_close(&t);
}

/* ------------------------------------------------------------------ */
/* Case: two_sided_errors — receiver not ready, too long, too big      */

void case_two_sided_errors(const struct smart_conf_env *env)
{
	struct smart_tp_wc wc;
	struct conn c;
	struct ts t;
	uint64_t t0;

	ts_skip_unless(env);
	/* no receive: the SEND fails RNR within the bound, its QP in
	 * error, what follows flushes; a receive posted later gets nothing */
	ts_open(&t, env, TS_MAX_MSG);
	t0 = now_ns();
	CHECK_OK(t.f.ops->post(
		t.a.qp,
		(struct smart_tp_wr[]){
			ts_send(&t.a, 1, t.a.buf, 8, CONF_SIG, 0),
			ts_send(&t.a, 2, t.a.buf, 8, CONF_SIG, 0) },
		2));
	CHECK_WC(ts_one(&t, &t.a), 1, SMART_TP_WC_RNR);
	CHECK_WC(ts_one(&t, &t.a), 2, SMART_TP_WC_FLUSH);
	printf("   receiver not ready: RNR after %.0f ms\n",
	       (double)(now_ns() - t0) / 1e6);
	CHECK_EQ(t.f.ops->qp_in_error(t.a.qp), 1);
	ts_recv(&t, &t.b, 0, 64);
	expect_quiet(t.f.ops, t.b.cq);
	ts_close(&t);

	/* a message longer than the receive: the SEND REM_ACCESS, the
	 * receive LOC_PROT, the receiver's other receives flush */
	ts_open(&t, env, TS_MAX_MSG);
	ts_recv(&t, &t.b, 0, 16);
	ts_recv(&t, &t.b, 1, 64);
	CHECK_OK(t.f.ops->post(t.a.qp,
			       (struct smart_tp_wr[]){ ts_send(
				       &t.a, 3, t.a.buf, 64, CONF_SIG, 0) },
			       1));
	wc = ts_one(&t, &t.a);
	CHECK_MSG(wc.wr_id == 3 && (wc.status == SMART_TP_WC_REM_ACCESS ||
				    wc.status == SMART_TP_WC_BAD_WR),
		  "a SEND too long for its receive: wr_id %" PRIu64 " %s",
		  wc.wr_id, wc_name(wc.status));
	CHECK_WC(ts_one(&t, &t.b), 1000, SMART_TP_WC_LOC_PROT);
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1001, SMART_TP_WC_FLUSH);
	CHECK_EQ(wc.opcode, SMART_TP_RECV);
	CHECK_EQ(t.f.ops->qp_in_error(t.a.qp), 1);
	CHECK_EQ(t.f.ops->qp_in_error(t.b.qp), 1);
	ts_close(&t);

	/* longer than the peer's max_msg: refused at post, nothing sent;
	 * receives refused: a NULL buffer, a QP without a receive queue */
	ts_open(&t, env, 256);
	conn_open(&t.f, NULL, 16, 16, 0, &c);
	CHECK_EQ(t.f.ops->post_recv(c.qp,
				    (struct smart_tp_recv[]){
					    { .wr_id = 9,
					      .local = t.a.buf,
					      .len = 8,
					      .lkey = t.a.lkey } },
				    1),
		 SMART_ENOTSUP);
	/* and no SEND on it: it has no peer */
	CHECK_EQ(t.f.ops->post(c.qp,
			       (struct smart_tp_wr[]){ ts_send(
				       &t.a, 8, t.a.buf, 8, CONF_SIG, 0) },
			       1),
		 SMART_EINVAL);
	CHECK_EQ(t.f.ops->qp_in_error(c.qp), 0);
	conn_close(&c);
	ts_recv(&t, &t.b, 0, TS_RECV_LEN);
	CHECK_EQ(t.f.ops->post(t.a.qp,
			       (struct smart_tp_wr[]){
				       ts_send(&t.a, 4, t.a.buf, 8, 0, 0),
				       ts_send(&t.a, 5, t.a.buf, 257, CONF_SIG,
					       0) },
			       2),
		 SMART_EINVAL);
	CHECK_EQ(t.f.ops->post_recv(t.b.qp,
				    (struct smart_tp_recv[]){ { .wr_id = 9,
								.local = NULL,
								.len = 8 } },
				    1),
		 SMART_EINVAL);
	CHECK_OK(t.f.ops->post(t.a.qp,
			       (struct smart_tp_wr[]){ ts_send(
				       &t.a, 6, t.a.buf, 256, CONF_SIG, 0) },
			       1));
	CHECK_WC(ts_one(&t, &t.a), 6, SMART_TP_WC_OK);
	wc = ts_one(&t, &t.b);
	CHECK_WC(wc, 1000, SMART_TP_WC_OK);
	CHECK_EQ(wc.len, 256);
	ts_close(&t);
}

/* ------------------------------------------------------------------ */
/* Case: two_sided_blobs — a peer's malformed blob is refused, never    */
/* trusted: no crash, the descriptor taken, the QP still connectable   */

void case_two_sided_blobs(const struct smart_conf_env *env)
{
	const struct smart_tp_ops *ops = env->ops;
	uint8_t good[SMART_TP_BLOB_MAX], bad[SMART_TP_BLOB_MAX];
	size_t len = sizeof(good), i, j;
	struct ts t;
	int fds[SMART_TP_PEER_FDS], n, rc, refused = 0;

	ts_skip_unless(env);
	memset(&t, 0, sizeof(t));
	fx_open(&t.f, env);
	t.a.dom = t.f.idom;
	t.b.dom = t.f.rdom;
	ts_qp(&t, &t.a, TS_MAX_MSG);
	ts_qp(&t, &t.b, TS_MAX_MSG);
	CHECK_OK(ops->qp_blob(t.b.qp, good, &len));
	n = ops->qp_fds(t.b.qp, fds);
	/* every byte of the blob set to 0x00, 0xff and 0x80 in turn, the
	 * blob cut short: each connect fails or succeeds, never crashes;
	 * one that succeeds leaves the QP connected (no more connects) */
	for (i = 0; i < len + 1; i++) {
		for (j = 0; j < 3; j++) {
			size_t l = i < len ? len : len - 1;

			memcpy(bad, good, len);
			if (i < len)
				bad[i] = (uint8_t[]){ 0x00, 0xff, 0x80 }[j];
			if (i < len && bad[i] == good[i])
				continue; /* no change */
			n = ts_fds(ops, t.b.qp, fds);
			rc = ops->qp_connect_peer(t.a.qp, NULL, bad, l, fds, n);
			if (rc == 0)
				goto connected;
			refused++;
			CHECK_EQ(ops->qp_in_error(t.a.qp), 0);
		}
	}
	/* a descriptor of something smaller than the blob says */
	if (n > 0) {
		int small[1] = { open("/dev/null", O_RDWR | O_CLOEXEC) };

		CHECK_GE(small[0], 0);
		CHECK(ops->qp_connect_peer(t.a.qp, NULL, good, len, small, 1) <
		      0);
	}
	n = ts_fds(ops, t.b.qp, fds);
	CHECK_OK(ops->qp_connect_peer(t.a.qp, NULL, good, len, fds, n));
connected:
	printf("   %d malformed peer blobs refused\n", refused);
	CHECK_GE(refused, 1);
	ops->qp_destroy(t.a.qp);
	ops->qp_destroy(t.b.qp);
	ops->cq_destroy(t.a.cq);
	ops->cq_destroy(t.b.cq);
	fx_close(&t.f);
}

/* Is fd readable within ms? */
static int ts_readable(int fd, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	return poll(&pf, 1, ms) == 1;
}

/* Rule 9: an armed CQ that a poll found empty signals its descriptor
 * when the peer's SEND lands, with nothing but the sender polled; the arm
 * consumes the signal; a CQ that must be polled (shm: a WR of its own
 * waits to run) refuses to arm; a CQ made without events has none. */
void case_two_sided_events(const struct smart_conf_env *env)
{
	const struct smart_tp_ops *ops = env->ops;
	/* sim is shm in virtual time: it runs WRs as shm does */
	int nic = strcmp(ops->name, "shm") && strcmp(ops->name, "sim"), fd, rc;
	struct smart_tp_wc wc;
	struct smart_tp_cq *plain;
	uint64_t deadline;
	uint8_t *src;
	struct ts t;

	ts_skip_unless(env);
	if (!ops->cq_arm)
		test_skip("no events on this transport (rule 9)");
	ts_open(&t, env, TS_MAX_MSG);
	src = t.a.buf + 128 * 1024;
	memset(src, 0x3c, 64);
	fd = ops->cq_event_fd(t.b.cq);
	CHECK_GE(fd, 0);
	ts_recv(&t, &t.b, 0, TS_RECV_LEN);
	ts_recv(&t, &t.a, 0, TS_RECV_LEN);

	/* armed, then polled empty: nothing signals */
	CHECK_OK(ops->cq_arm(t.b.cq));
	CHECK_EQ(ops->poll(t.b.cq, &wc, 1), 0);
	CHECK(!ts_readable(fd, 0));
	/* the peer's SEND, only the sender polling: b's descriptor */
	CHECK_OK(ops->post(t.a.qp,
			   (struct smart_tp_wr[]){
				   ts_send(&t.a, 1, src, 64, CONF_SIG, 0) },
			   1));
	deadline = now_ns() + CONF_WAIT_NS;
	while ((rc = ops->poll(t.a.cq, &wc, 1)) == 0)
		CHECK_MSG(now_ns() < deadline, "the SEND did not complete");
	CHECK_EQ(rc, 1);
	CHECK_WC(wc, 1, SMART_TP_WC_OK);
	CHECK_MSG(ts_readable(fd, (int)(CONF_WAIT_NS / 1000000)),
		  "an armed CQ was not signalled by its peer's SEND");
	CHECK_WC(ts_one(&t, &t.b), 1000, SMART_TP_WC_OK);
	/* the arm takes the signal; polled empty again, quiet */
	CHECK_OK(ops->cq_arm(t.b.cq));
	CHECK_EQ(ops->poll(t.b.cq, &wc, 1), 0);
	CHECK(!ts_readable(fd, 0));

	/* b's own SEND posted: shm runs it only at b's poll, so the CQ
	 * cannot sleep; a NIC runs it and its completion signals */
	CHECK_OK(ops->post(t.b.qp,
			   (struct smart_tp_wr[]){ ts_send(&t.b, 2,
							   t.b.buf + 64 * 1024,
							   8, CONF_SIG, 0) },
			   1));
	rc = ops->cq_arm(t.b.cq);
	if (nic) {
		/* the contract's poll after the arm: the completion may have
		 * come before it (and then signals nothing) */
		CHECK_OK(rc);
		rc = ops->poll(t.b.cq, &wc, 1);
		CHECK_GE(rc, 0);
		if (!rc) {
			CHECK(ts_readable(fd, (int)(CONF_WAIT_NS / 1000000)));
			wc = ts_one(&t, &t.b);
		}
	} else {
		CHECK_EQ(rc, SMART_EAGAIN);
		wc = ts_one(&t, &t.b);
	}
	CHECK_WC(wc, 2, SMART_TP_WC_OK);
	CHECK_WC(ts_one(&t, &t.a), 1000, SMART_TP_WC_OK);
	printf("   armed CQ signalled by its peer's SEND; %s\n",
	       nic ? "its own SEND's completion signals too" :
		     "its own SEND waiting to run refuses the arm");

	/* a CQ without events */
	CHECK_OK(ops->cq_create(t.b.dom, 16, 0, &plain));
	CHECK_EQ(ops->cq_event_fd(plain), -1);
	CHECK_EQ(ops->cq_arm(plain), SMART_EINVAL);
	ops->cq_destroy(plain);
	ts_close(&t);
}
