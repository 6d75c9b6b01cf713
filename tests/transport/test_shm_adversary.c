/*
 * Tests of the shm transport's adversarial mode (docs/transport.md
 * "Adversarial mode") beyond the conformance suite, which
 * test_transport_shm_adversarial runs on it: that the hostility is real
 * (torn 64-byte reads between threads, a READ showing a later unfenced
 * WRITE of its chain, completions of two QPs arriving against posting
 * order), that it stays within the contract (a fence holds, atomics run
 * once, one QP's completions keep their order through errors, a destroyed
 * QP's completions still arrive, unaligned ends copy right), that a seed
 * replays, that the spec is checked, and that the counters show the paths
 * were taken.
 *
 * Invariants: every case but torn_reads is single-threaded, so its outcome
 * depends only on the seeds it names; torn_reads bounds its reads and its
 * time, so a loaded machine makes it slower, never wrong.  Every wait is
 * bounded (the conformance fixture's waits).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "harness/test.h"
#include "smart/options.h"
#include "transport/conformance/suite.h"
#include "transport/shm/shm.h"

/* An environment whose client domains get the adversary of spec (cfg is
 * the caller's, to outlive the environment). */
static struct smart_conf_env adv_env(struct smart_tp_cfg *cfg, const char *spec)
{
	*cfg = (struct smart_tp_cfg){ .gid_index = -1,
				      .shm_adversarial = spec };
	return (struct smart_conf_env){ .ops = &smart__tp_shm_ops,
					.client_cfg = cfg };
}

static struct shm_adv_stats adv_stats(const struct fx *f)
{
	struct shm_adv_stats s;

	CHECK_OK(smart__shm_adv_stats(f->idom, &s));
	return s;
}

static void print_stats(const struct fx *f)
{
	struct shm_adv_stats s = adv_stats(f);

	printf("   pauses %" PRIu64 " (yields %" PRIu64 "), scrambled %" PRIu64
	       ", reexecs %" PRIu64 ", late %" PRIu64 ", reordered %" PRIu64
	       "\n",
	       s.pauses, s.yields, s.scrambled, s.reexecs, s.late, s.reordered);
}

/* ---- spec: parsing, ranges, "off", the model excluded, the option ---- */

static int open_with(const char *adv, const char *model)
{
	struct smart_tp_cfg cfg = { .gid_index = -1,
				    .nic_model = model,
				    .shm_adversarial = adv };
	struct smart_tp_domain *d = NULL;
	int rc = smart__tp_shm_ops.domain_open(&cfg, &d);

	if (!rc)
		smart__tp_shm_ops.domain_close(d);
	return rc;
}

static void test_spec(void)
{
	static const char *const bad[] = {
		"yes",
		"seed",
		"seed=",
		"=1",
		",",
		"on,",
		",on",
		"on,,seed=1",
		"seed=-1",
		"seed=0x10",
		"seed=1.5",
		"seed=18446744073709551616",
		"pause_pct=101",
		"pause_ns=1000001",
		"yield_pct=101",
		"reexec_pct=101",
		"hold_pct=101",
		"hold_polls=0",
		"hold_polls=1001",
		"hold_pct=50,hold_pct=60",
		"PAUSE_PCT=1",
		"nic_model=default",
		"reexec_pct= 5",
		"off,seed=1",
	};
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.shm_adversarial = "seed=18446744073709551615"
				   ",pause_pct=0,hold_polls=9"
	};
	const struct shm_adv_params *p;
	struct smart_tp_domain *d;
	smart_opts_t *o;
	char buf[64];
	size_t i;

	for (i = 0; i < SMART_ARRAY_SIZE(bad); i++)
		CHECK_MSG(open_with(bad[i], NULL) == SMART_EINVAL,
			  "spec \"%s\" was not refused", bad[i]);
	CHECK_OK(open_with("on", NULL));
	CHECK_OK(open_with("default", NULL));
	CHECK_OK(open_with("on,seed=3", NULL));
	/* off: no adversary, and then the model may be on */
	CHECK_OK(open_with("off", "default"));
	CHECK_OK(open_with("", "default"));
	CHECK_EQ(open_with("on", "default"), SMART_EINVAL);

	CHECK_OK(smart__tp_shm_ops.domain_open(&cfg, &d));
	p = smart__shm_adv_params(d);
	CHECK(p != NULL);
	CHECK_U64_EQ(p->seed, UINT64_MAX);
	CHECK_U64_EQ(p->pause_pct, 0);
	CHECK_U64_EQ(p->hold_polls, 9);
	CHECK_U64_EQ(p->reexec_pct, 50); /* a default */
	smart__tp_shm_ops.domain_close(d);
	cfg.shm_adversarial = "off";
	CHECK_OK(smart__tp_shm_ops.domain_open(&cfg, &d));
	CHECK(smart__shm_adv_params(d) == NULL);
	smart__tp_shm_ops.domain_close(d);

	/* The library option carries the spec to the transport as is. */
	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_get(o, "shm_adversarial", buf, sizeof(buf)));
	CHECK_STR_EQ(buf, "");
	CHECK_OK(smart_opts_set(o, "shm_adversarial", "seed=5,hold_pct=90"));
	CHECK_OK(smart_opts_get(o, "shm_adversarial", buf, sizeof(buf)));
	CHECK_STR_EQ(buf, "seed=5,hold_pct=90");
	smart_opts_destroy(o);

	/* The adversary is the shm transport's: verbs refuses it. */
	if (smart__tp_find("verbs")) {
		cfg.shm_adversarial = "on";
		CHECK_EQ(smart__tp_find("verbs")->domain_open(&cfg, &d),
			 SMART_EINVAL);
	}
}

/* ---- unaligned: READ/WRITE of every head, tail and length mix ---- */

#define UA_OFF	4096
#define UA_SPAN 512

static void test_unaligned(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=11,pause_pct=0");
	uint64_t rng = 0x11aa;
	uint8_t ref[UA_SPAN + 64];
	struct fx f;
	struct conn c;
	int i;

	fx_open(&f, &env);
	conn_open(&f, NULL, 64, 16, 0, &c);
	memset(f.raddr + UA_OFF, 0, UA_SPAN);
	memset(ref, 0, sizeof(ref));
	for (i = 0; i < 3000; i++) {
		uint32_t off = (uint32_t)(rng_next(&rng) % UA_SPAN);
		uint32_t len = 1 + (uint32_t)(rng_next(&rng) % (UA_SPAN - off));
		uint32_t lo = (uint32_t)(rng_next(&rng) % 8);
		uint8_t *src = f.laddr + 64 + lo, *dst = f.laddr + 4096 + lo;

		rng_fill(&rng, src, len);
		memcpy(ref + off, src, len);
		run1(&c, wr_make(&f.t, SMART_TP_WRITE, 1, UA_OFF + off, src,
				 len, 0));
		CHECK_MEM_EQ(f.raddr + UA_OFF, ref, UA_SPAN, "region");
		memset(dst - 1, 0xc3, len + 2);
		run1(&c, wr_make(&f.t, SMART_TP_READ, 2, UA_OFF + off, dst, len,
				 0));
		CHECK_MEM_EQ(dst, ref + off, len, "READ back");
		CHECK(dst[-1] == 0xc3 && dst[len] == 0xc3);
	}
	CHECK_GT(adv_stats(&f).scrambled, 0);
	print_stats(&f);
	conn_close(&c);
	fx_close(&f);
}

/* ---- torn_reads: a 64-byte block of 8 equal stamps, rewritten by one
 * thread and READ by another, is seen torn within a bound ---- */

#define TR_OFF	     8192
#define TR_WORDS     8
#define TR_MAX_READS 200000
#define TR_WANT	     20 /* torn reads to see */

struct tr_state {
	struct fx *f;
	struct conn w, r;
	atomic_int stop;
};

static void *tr_writer(void *arg)
{
	struct tr_state *s = arg;
	uint64_t *b = (uint64_t *)s->f->laddr, v = 0;
	int j;

	while (!atomic_load(&s->stop)) {
		v++;
		for (j = 0; j < TR_WORDS; j++)
			b[j] = v;
		run1(&s->w, wr_make(&s->f->t, SMART_TP_WRITE, v, TR_OFF, b,
				    8 * TR_WORDS, 0));
	}
	return NULL;
}

static void test_torn_reads(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "on");
	uint64_t deadline = now_ns() + 8000000000ull, reads = 0, torn = 0;
	struct tr_state s = { 0 };
	struct shm_adv_stats st;
	uint64_t *b;
	pthread_t th;
	struct fx f;
	int j;

	fx_open(&f, &env);
	s.f = &f;
	b = (uint64_t *)(f.laddr + 4096);
	conn_open(&f, NULL, 16, 8, 0, &s.w);
	conn_open(&f, NULL, 16, 8, 0, &s.r);
	CHECK_EQ(pthread_create(&th, NULL, tr_writer, &s), 0);
	while (torn < TR_WANT && reads < TR_MAX_READS && now_ns() < deadline) {
		run1(&s.r, wr_make(&f.t, SMART_TP_READ, 1, TR_OFF, b,
				   8 * TR_WORDS, 0));
		reads++;
		for (j = 1; j < TR_WORDS && b[j] == b[0]; j++)
			;
		torn += j < TR_WORDS;
	}
	atomic_store(&s.stop, 1);
	CHECK_EQ(pthread_join(th, NULL), 0);
	printf("   %" PRIu64 " torn of %" PRIu64 " reads\n", torn, reads);
	print_stats(&f);
	CHECK_MSG(torn >= TR_WANT, "only %" PRIu64 " torn reads in %" PRIu64,
		  torn, reads);
	st = adv_stats(&f);
	CHECK_GT(st.pauses, 0);
	CHECK_GT(st.scrambled, 0);
	conn_close(&s.r);
	conn_close(&s.w);
	fx_close(&f);
}

/* ---- reexec: READ x then WRITE x in one chain: without a fence the
 * READ may show the WRITE; with SMART_TP_FENCE on the WRITE never ---- */

#define RX_OFF	  1024
#define RX_ROUNDS 200

/* Rounds whose READ returned the chain's later WRITE. */
static int reexec_rounds(struct fx *f, struct conn *c, uint8_t fence)
{
	uint64_t *loc = (uint64_t *)f->laddr, old, *fo = loc + 2;
	struct smart_tp_wr w[4];
	int i, saw = 0;

	for (i = 0; i < RX_ROUNDS; i++) {
		old = 1000 + (uint64_t)i;
		rword_set(f, RX_OFF, old);
		rword_set(f, RX_OFF + 8, 7);
		loc[0] = 0;
		loc[1] = ~old;
		w[0] = wr_make(&f->t, SMART_TP_READ, 1, RX_OFF, &loc[0], 8, 0);
		w[1] = wr_make(&f->t, SMART_TP_WRITE, 2, RX_OFF, &loc[1], 8,
			       fence);
		/* an atomic behind them: it runs once whatever happens */
		w[2] = wr_atomic(&f->t, SMART_TP_FAA, 3, RX_OFF + 8, fo, 1, 0,
				 0);
		w[3] = wr_make(&f->t, SMART_TP_WRITE, 4, RX_OFF + 16, &loc[1],
			       8, CONF_SIG);
		run_chain(c, w, 4);
		CHECK_MSG(loc[0] == old || (loc[0] == ~old && !fence),
			  "round %d: READ returned 0x%" PRIx64, i, loc[0]);
		saw += loc[0] == ~old;
		CHECK_U64_EQ(*fo, 7);
		CHECK_U64_EQ(rword(f, RX_OFF + 8), 8);
	}
	return saw;
}

static void test_reexec(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=21");
	struct fx f;
	struct conn c;
	int unfenced, fenced;

	fx_open(&f, &env);
	conn_open(&f, NULL, 64, 16, 0, &c);
	unfenced = reexec_rounds(&f, &c, 0);
	fenced = reexec_rounds(&f, &c, SMART_TP_FENCE);
	printf("   READ showed the later WRITE: %d of %d rounds unfenced, "
	       "%d fenced\n",
	       unfenced, RX_ROUNDS, fenced);
	print_stats(&f);
	CHECK_GT(unfenced, 0);
	CHECK_EQ(fenced, 0);
	CHECK_GT(adv_stats(&f).reexecs, 0);
	conn_close(&c);
	fx_close(&f);
}

/* ---- reorder: completions of two QPs on one CQ come against posting
 * order, each QP's own in order ---- */

#define RO_QPS	  3
#define RO_CHAIN  4
#define RO_ROUNDS 100

/* Post one chain of RO_CHAIN signalled FAAs on each QP (wr_id: qp << 8 |
 * index), collect every completion and check each QP's are in order;
 * returns 1 when a later QP's completion came before an earlier one's. */
static int reorder_round(struct fx *f, struct conn *c, struct smart_tp_cq *cq,
			 uint64_t *polls)
{
	struct smart_tp_wr w[RO_CHAIN];
	struct smart_tp_wc wc[RO_QPS * RO_CHAIN];
	uint64_t *loc = (uint64_t *)f->laddr;
	int next[RO_QPS] = { 0 }, q, i, got = 0, n, inverted = 0, maxq = -1;
	uint64_t deadline = now_ns() + CONF_WAIT_NS;

	for (q = 0; q < RO_QPS; q++) {
		for (i = 0; i < RO_CHAIN; i++)
			w[i] = wr_atomic(&f->t, SMART_TP_FAA,
					 (uint64_t)q << 8 | (uint64_t)i,
					 64 + 8 * (uint64_t)q, &loc[i], 1, 0,
					 CONF_SIG);
		CHECK_OK(f->ops->post(c[q].qp, w, RO_CHAIN));
	}
	while (got < RO_QPS * RO_CHAIN) {
		n = f->ops->poll(cq, wc, RO_QPS * RO_CHAIN - got);
		CHECK_GE(n, 0);
		(*polls)++;
		for (i = 0; i < n; i++) {
			q = (int)(wc[i].wr_id >> 8);
			CHECK_EQ(wc[i].status, SMART_TP_WC_OK);
			CHECK_MSG(q < RO_QPS &&
					  (int)(wc[i].wr_id & 0xff) == next[q],
				  "QP %d: completion %" PRIu64 " out of order",
				  q, wc[i].wr_id & 0xff);
			next[q]++;
			inverted |= q < maxq;
			maxq = smart_max(maxq, q);
		}
		got += n;
		CHECK_MSG(n || now_ns() < deadline, "completions lost");
	}
	return inverted;
}

static void test_reorder(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=31");
	struct conn c[RO_QPS];
	struct smart_tp_cq *cq;
	uint64_t polls = 0;
	struct shm_adv_stats st;
	struct fx f;
	int i, inv = 0;

	fx_open(&f, &env);
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < RO_QPS; i++)
		conn_open(&f, cq, 0, 16, 0, &c[i]);
	for (i = 0; i < RO_ROUNDS; i++)
		inv += reorder_round(&f, c, cq, &polls);
	expect_quiet(f.ops, cq);
	printf("   %d of %d rounds delivered a later QP's completion first "
	       "(%" PRIu64 " polls)\n",
	       inv, RO_ROUNDS, polls);
	print_stats(&f);
	st = adv_stats(&f);
	CHECK_GT(inv, 0);
	CHECK_GT(st.reordered, 0);
	CHECK_GT(st.late, 0);
	for (i = 0; i < RO_QPS; i++) {
		CHECK_U64_EQ(rword(&f, 64 + 8 * (size_t)i),
			     RO_ROUNDS * RO_CHAIN);
		conn_close(&c[i]);
	}
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* ---- error_order: an error and its flushes keep their QP's order
 * while another QP's completions are shuffled in between ---- */

static void test_error_order(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=41,hold_pct=80");
	uint64_t *loc;
	struct smart_tp_wr w[6], g[3];
	struct smart_tp_wc wc[9];
	struct smart_tp_cq *cq;
	struct conn bad, good;
	struct fx f;
	int round, i, nb, ng;

	fx_open(&f, &env);
	loc = (uint64_t *)f.laddr;
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (round = 0; round < 50; round++) {
		conn_open(&f, cq, 0, 16, 0, &bad);
		conn_open(&f, cq, 0, 16, 0, &good);
		for (i = 0; i < 6; i++)
			w[i] = wr_make(&f.t, SMART_TP_WRITE, 10 + i, 0, loc, 8,
				       i == 0 || i == 5 ? CONF_SIG : 0);
		w[2].remote = f.t.base + f.t.rlen; /* out of bounds */
		for (i = 0; i < 3; i++)
			g[i] = wr_make(&f.t, SMART_TP_READ, 20 + i, 0, loc + 1,
				       8, CONF_SIG);
		CHECK_OK(f.ops->post(bad.qp, w, 6));
		CHECK_OK(f.ops->post(good.qp, g, 3));
		wait_wcs(f.ops, cq, wc, 8);
		expect_quiet(f.ops, cq);
		/* bad: 10 OK, 12 REM_ACCESS, 13..15 FLUSH; good: 20..22 OK */
		for (i = 0, nb = 0, ng = 0; i < 8; i++) {
			if (wc[i].wr_id >= 20) {
				CHECK_WC(wc[i], 20 + ng, SMART_TP_WC_OK);
				ng++;
				continue;
			}
			CHECK_WC(wc[i], nb ? 11 + nb : 10,
				 nb == 0 ? SMART_TP_WC_OK :
				 nb == 1 ? SMART_TP_WC_REM_ACCESS :
					   SMART_TP_WC_FLUSH);
			nb++;
		}
		CHECK_EQ(nb, 5);
		CHECK_EQ(ng, 3);
		CHECK_EQ(f.ops->qp_in_error(bad.qp), 1);
		conn_close(&bad);
		conn_close(&good);
	}
	print_stats(&f);
	CHECK_GT(adv_stats(&f).late, 0);
	CHECK_GT(adv_stats(&f).reordered, 0);
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* ---- destroy: completions a QP's WRs produced arrive after the QP is
 * destroyed, in order ---- */

static void test_destroy(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=51,hold_pct=100,"
						  "hold_polls=20");
	struct smart_tp_wr w[8];
	struct smart_tp_wc wc[8];
	struct smart_tp_cq *cq;
	struct conn c;
	struct fx f;
	int i;

	fx_open(&f, &env);
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	conn_open(&f, cq, 0, 16, 0, &c);
	for (i = 0; i < 8; i++)
		w[i] = wr_atomic(&f.t, SMART_TP_FAA, 100 + i, 0,
				 (uint64_t *)f.laddr + i, 1, 0, CONF_SIG);
	CHECK_OK(f.ops->post(c.qp, w, 8));
	/* a poll with no room executes everything and delivers nothing:
	 * every completion is held when the QP goes */
	CHECK_EQ(f.ops->poll(cq, wc, 0), 0);
	CHECK_U64_EQ(rword(&f, 0), 8);
	conn_close(&c);
	wait_wcs(f.ops, cq, wc, 8);
	for (i = 0; i < 8; i++)
		CHECK_WC(wc[i], 100 + i, SMART_TP_WC_OK);
	expect_quiet(f.ops, cq);
	CHECK_GT(adv_stats(&f).late, 0);
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* ---- replay: the same seed makes the same choices ---- */

#define RP_QPS 3

/* A fingerprint of which completion came at which poll, over rounds of
 * chains on RP_QPS QPs of one CQ. */
static uint64_t replay_trace(const char *spec)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, spec);
	uint64_t h = UINT64_C(1469598103934665603), *loc;
	struct smart_tp_wr w[2];
	struct smart_tp_wc wc[2 * RP_QPS];
	struct smart_tp_cq *cq;
	struct conn c[RP_QPS];
	struct fx f;
	int round, q, got, n, i, polls;

	fx_open(&f, &env);
	loc = (uint64_t *)f.laddr;
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (q = 0; q < RP_QPS; q++)
		conn_open(&f, cq, 0, 16, 0, &c[q]);
	for (round = 0; round < 50; round++) {
		for (q = 0; q < RP_QPS; q++) {
			for (i = 0; i < 2; i++)
				w[i] = wr_make(&f.t, SMART_TP_READ,
					       (uint64_t)(q * 2 + i), 0,
					       &loc[q * 2 + i], 8, CONF_SIG);
			CHECK_OK(f.ops->post(c[q].qp, w, 2));
		}
		for (got = 0, polls = 0; got < 2 * RP_QPS; polls++) {
			n = f.ops->poll(cq, wc, 2 * RP_QPS - got);
			CHECK_GE(n, 0);
			CHECK_LT(polls, 10000);
			for (i = 0; i < n; i++)
				h = (h ^
				     (wc[i].wr_id << 16 | (uint64_t)polls)) *
				    UINT64_C(1099511628211);
			got += n;
		}
	}
	for (q = 0; q < RP_QPS; q++)
		conn_close(&c[q]);
	f.ops->cq_destroy(cq);
	fx_close(&f);
	return h;
}

static void test_replay(void)
{
	uint64_t a = replay_trace("seed=61,pause_pct=0");
	uint64_t b = replay_trace("seed=61,pause_pct=0");
	uint64_t c = replay_trace("seed=62,pause_pct=0");

	printf("   seed 61: %016" PRIx64 " twice %016" PRIx64
	       ", seed 62: %016" PRIx64 "\n",
	       a, b, c);
	CHECK_U64_EQ(a, b);
	CHECK_NE(a, c);
}

/* ---- pauses: every kind of pause is taken ---- */

static void test_pauses(void)
{
	struct smart_tp_cfg cfg;
	struct smart_conf_env env = adv_env(&cfg, "seed=71,pause_pct=100,"
						  "pause_ns=100,yield_pct=50");
	struct shm_adv_stats st;
	struct fx f;
	struct conn c;

	fx_open(&f, &env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	run1(&c, wr_make(&f.t, SMART_TP_WRITE, 1, 3, f.laddr, 100, 0));
	run1(&c, wr_make(&f.t, SMART_TP_READ, 2, 3, f.laddr + 256, 100, 0));
	st = adv_stats(&f);
	print_stats(&f);
	/* 100 bytes at offset 3: a head of 5 bytes, 11 words and a tail of
	 * 7 bytes, 13 units (under SHM_ADV_PAUSES_MAX) a copy, each paused
	 * before; a redo of the READ may add some */
	CHECK_GE(st.pauses, 26);
	CHECK_GT(st.yields, 0);
	CHECK_LT(st.yields, st.pauses);
	conn_close(&c);
	fx_close(&f);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "spec", test_spec },
				 { "unaligned", test_unaligned },
				 { "torn_reads", test_torn_reads },
				 { "reexec", test_reexec },
				 { "reorder", test_reorder },
				 { "error_order", test_error_order },
				 { "destroy", test_destroy },
				 { "replay", test_replay },
				 { "pauses", test_pauses },
				 { 0 },
			 });
}
