/*
 * Conformance cases on ordering: the WRs of one QP execute in posting order,
 * within a chain and across many chains in flight.
 *
 * Invariants: each case opens and closes its own fixture; the expected
 * final memory depends only on the seed.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Case: order_chain — WRs of one QP execute in posting order           */

#define ORD_K 16

static void order_write_read(struct fx *f, struct conn *c, uint64_t *loc)
{
	struct smart_tp_wr w[ORD_K + 1];
	int i;

	for (i = 0; i < ORD_K; i++) {
		loc[i] = (uint64_t)i + 1;
		w[i] = wr_make(&f->t, SMART_TP_WRITE, i, 64, &loc[i], 8, 0);
	}
	loc[ORD_K] = 0;
	w[ORD_K] = wr_make(&f->t, SMART_TP_READ, 77, 64, &loc[ORD_K], 8,
			   CONF_SIG);
	run_chain(c, w, ORD_K + 1);
	CHECK_U64_EQ(loc[ORD_K], ORD_K);
	CHECK_U64_EQ(rword(f, 64), ORD_K);
}

static void order_atomics(struct fx *f, struct conn *c, uint64_t *loc,
			  uint64_t v0)
{
	struct smart_tp_wr w[2 * ORD_K];
	struct smart_tp_wc wc[2 * ORD_K];
	int i;

	/* FAA chain: consecutive old values; CAS chain i -> i+1 all match. */
	rword_set(f, 128, v0);
	rword_set(f, 136, 0);
	for (i = 0; i < ORD_K; i++) {
		w[i] = wr_atomic(&f->t, SMART_TP_FAA, i, 128, &loc[i], 1, 0,
				 CONF_SIG);
		w[ORD_K + i] = wr_atomic(&f->t, SMART_TP_CAS, ORD_K + i, 136,
					 &loc[ORD_K + i], (uint64_t)i,
					 (uint64_t)i + 1, i & 1 ? CONF_SIG : 0);
	}
	w[2 * ORD_K - 1].flags = CONF_SIG;
	CHECK_OK(f->ops->post(c->qp, w, 2 * ORD_K));
	wait_wcs(f->ops, c->cq, wc, ORD_K + ORD_K / 2);
	for (i = 0; i < ORD_K; i++) {
		CHECK_WC(wc[i], i, SMART_TP_WC_OK);
		CHECK_U64_EQ(loc[i], v0 + (uint64_t)i);
		CHECK_U64_EQ(loc[ORD_K + i], i);
	}
	for (i = 0; i < ORD_K / 2; i++)
		CHECK_WC(wc[ORD_K + i], ORD_K + 2 * i + 1, SMART_TP_WC_OK);
	CHECK_U64_EQ(rword(f, 128), v0 + ORD_K);
	CHECK_U64_EQ(rword(f, 136), ORD_K);
}

static void order_mixed(struct fx *f, struct conn *c, uint64_t *loc)
{
	struct smart_tp_wr w[4];

	/* x := 5; FAA x += 3 (old 5); CAS 8 -> 100 (old 8); READ x = 100. */
	loc[0] = 5;
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 1, 192, &loc[0], 8, 0);
	w[1] = wr_atomic(&f->t, SMART_TP_FAA, 2, 192, &loc[1], 3, 0, 0);
	w[2] = wr_atomic(&f->t, SMART_TP_CAS, 3, 192, &loc[2], 8, 100, 0);
	w[3] = wr_make(&f->t, SMART_TP_READ, 4, 192, &loc[3], 8, CONF_SIG);
	run_chain(c, w, 4);
	CHECK_U64_EQ(loc[1], 5);
	CHECK_U64_EQ(loc[2], 8);
	CHECK_U64_EQ(loc[3], 100);
}

void case_order_chain(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("order_chain");
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	order_write_read(&f, &c, (uint64_t *)f.laddr);
	order_atomics(&f, &c, (uint64_t *)f.laddr, rng_next(&rng));
	order_mixed(&f, &c, (uint64_t *)f.laddr);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: order_long — many chains in flight across many posts           */

struct long_state {
	struct fx *f;
	struct conn *c;
	uint64_t *rd, *fo; /* per round: READ result, FAA old value */
	uint32_t done;	   /* completions seen */
};

static void long_reap(struct long_state *s, int block)
{
	struct smart_tp_wc wc[16];
	uint64_t deadline = now_ns() + CONF_WAIT_NS;
	int n, i;

	do {
		n = s->f->ops->poll(s->c->cq, wc, 16);
		CHECK_GE(n, 0);
		for (i = 0; i < n; i++)
			CHECK_WC(wc[i], s->done++, SMART_TP_WC_OK);
		if (!n && block)
			CHECK_MSG(now_ns() < deadline, "order_long stuck");
	} while (block && !n);
}

void case_order_long(const struct smart_conf_env *env)
{
	uint32_t rounds = scaled(env, 4000), r;
	struct long_state s;
	struct smart_tp_wr w[3];
	struct fx f;
	struct conn c;
	uint64_t *x;
	int rc;

	CHECK_LE(rounds * 24u, CONF_LOCAL_LEN);
	fx_open(&f, env);
	conn_open(&f, NULL, 64, 48, 0, &c);
	s = (struct long_state){ .f = &f, .c = &c };
	x = (uint64_t *)f.laddr;
	s.rd = x + rounds;
	s.fo = x + 2 * rounds;
	/* Round r: WRITE x := r, READ x, FAA ctr += 1; only the FAA signals. */
	for (r = 0; r < rounds; r++) {
		x[r] = r;
		w[0] = wr_make(&f.t, SMART_TP_WRITE, ~0ull, 512, &x[r], 8, 0);
		w[1] = wr_make(&f.t, SMART_TP_READ, ~0ull, 512, &s.rd[r], 8, 0);
		w[2] = wr_atomic(&f.t, SMART_TP_FAA, r, 520, &s.fo[r], 1, 0,
				 CONF_SIG);
		while ((rc = f.ops->post(c.qp, w, 3)) == SMART_EAGAIN)
			long_reap(&s, 1);
		CHECK_OK(rc);
		long_reap(&s, 0);
	}
	while (s.done < rounds)
		long_reap(&s, 1);
	expect_quiet(f.ops, c.cq);
	/* rule 3: a READ may run again after later WRs of its QP (its
	 * response was lost), so it may show a later round's WRITE, never
	 * an earlier one; atomics run once */
	for (r = 0; r < rounds; r++) {
		CHECK_GE(s.rd[r], (uint64_t)r);
		CHECK_LT(s.rd[r], (uint64_t)rounds);
		CHECK_U64_EQ(s.fo[r], r);
	}
	CHECK_U64_EQ(rword(&f, 512), rounds - 1);
	CHECK_U64_EQ(rword(&f, 520), rounds);
	conn_close(&c);
	fx_close(&f);
}
