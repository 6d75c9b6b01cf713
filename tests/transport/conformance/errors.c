/*
 * Conformance cases on errors: a failing WR completes with an error status
 * even when unsignalled, and the QP flushes what follows (rule 5); a
 * malformed WR is refused or fails alone; a post that does not fit the
 * send queue is refused whole with SMART_EAGAIN.
 *
 * Invariants: each case opens and closes its own fixture, and replaces a
 * QP that went to the error state rather than reusing it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Case: errors — rule 5: a failing WR completes with an error even when
 * unsignalled, later WRs flush, nothing is written, nothing crashes, and
 * a fresh QP on the same CQ works.                                     */

enum { RK_OK, RK_PAST, RK_STRADDLE, RK_HUGE, RK_WRAP, RK_BELOW, RK_MISALIGN };
enum { KK_OK, KK_RKEY, KK_LKEY, KK_UNREG, KK_LSTRADDLE };

#define ERR_ANY	   (-1) /* any error status */
#define ERR_TARGET 512	/* region offset of in-bounds bad WRs */

struct err_spec {
	const char *what;
	uint8_t opcode, rk, kk;
	int expect;
};

static const struct err_spec err_specs[] = {
	{ "WRITE past the end", SMART_TP_WRITE, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ past the end", SMART_TP_READ, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "CAS past the end", SMART_TP_CAS, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE straddling the end", SMART_TP_WRITE, RK_STRADDLE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ straddling the end", SMART_TP_READ, RK_STRADDLE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE at a huge offset", SMART_TP_WRITE, RK_HUGE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "FAA at a huge offset", SMART_TP_FAA, RK_HUGE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE wrapping the address space", SMART_TP_WRITE, RK_WRAP, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ below the region", SMART_TP_READ, RK_BELOW, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE with a wrong rkey", SMART_TP_WRITE, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ with a wrong rkey", SMART_TP_READ, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "CAS with a wrong rkey", SMART_TP_CAS, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "FAA with a wrong rkey", SMART_TP_FAA, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE from an unregistered buffer", SMART_TP_WRITE, RK_OK, KK_UNREG,
	  SMART_TP_WC_LOC_PROT },
	{ "READ into an unregistered buffer", SMART_TP_READ, RK_OK, KK_UNREG,
	  SMART_TP_WC_LOC_PROT },
	{ "FAA into an unregistered buffer", SMART_TP_FAA, RK_OK, KK_UNREG,
	  SMART_TP_WC_LOC_PROT },
	{ "WRITE with a wrong lkey", SMART_TP_WRITE, RK_OK, KK_LKEY,
	  SMART_TP_WC_LOC_PROT },
	{ "READ with a wrong lkey", SMART_TP_READ, RK_OK, KK_LKEY,
	  SMART_TP_WC_LOC_PROT },
	{ "READ straddling the end of the local MR", SMART_TP_READ, RK_OK,
	  KK_LSTRADDLE, SMART_TP_WC_LOC_PROT },
};

/* Does the suite run across a slow or lossy link (SMART_CONF_LOSSY=1,
 * set by tests/verbs/lossy.sh)?  Only there do the three allowances below
 * apply. */
static int lossy_link(void)
{
	const char *l = getenv("SMART_CONF_LOSSY");

	return l && !strcmp(l, "1");
}

/* On a link that loses packets (SMART_CONF_LOSSY=1, tests/verbs/lossy.sh)
 * a remote error may end in RETRY_EXC instead: the responder sends its
 * NAK once and its QP is in error from then on, so a requester whose NAK
 * was lost retries into silence (IB, and rxe, behave so).  Anywhere else
 * the exact status is required. */
static int lost_nak(const struct err_spec *e, int status)
{
	if (!lossy_link() || status != SMART_TP_WC_RETRY_EXC ||
	    e->expect != SMART_TP_WC_REM_ACCESS)
		return 0;
	printf("   RETRY_EXC for REM_ACCESS: its NAK was lost\n");
	return 1;
}

/* On a delayed link (SMART_CONF_LOSSY=1 too) the WRITE posted before the
 * bad WR may still wait for its ACK when the bad WR fails: the QP in error
 * drops that ACK and flushes it, its remote effect unknown (rule 5); rxe
 * then flushes the bad WR too, its cause lost. */
static int early_flush(const struct smart_tp_wc *wc)
{
	if (!lossy_link() || wc->wr_id != 1 || wc->status != SMART_TP_WC_FLUSH)
		return 0;
	printf("   the WRITE before it flushed: its ACK was still due\n");
	return 1;
}

/* The bad WR of a spec; unreg is a 64-byte buffer outside every MR. */
static struct smart_tp_wr err_wr(const struct fx *f, const struct err_spec *e,
				 uint8_t *unreg, uint8_t flags)
{
	int atomic = smart_tp_atomic(e->opcode);
	uint32_t len = atomic ? 8 : 16;
	uint64_t off = ERR_TARGET;
	struct smart_tp_wr w;

	switch (e->rk) {
	case RK_PAST:
		off = f->t.rlen;
		break;
	case RK_STRADDLE:
		off = f->t.rlen - 8;
		break;
	case RK_HUGE:
		off = UINT64_C(1) << 60;
		break;
	case RK_MISALIGN:
		off = ERR_TARGET + 4;
		break;
	}
	w = wr_atomic(&f->t, e->opcode, 2, off, (uint64_t *)(f->laddr + 4096),
		      0, 0xbad, flags);
	w.len = len;
	if (e->opcode == SMART_TP_FAA)
		w.compare_add = 0xbad;
	if (e->rk == RK_WRAP)
		w.remote = UINT64_MAX - 7;
	if (e->rk == RK_BELOW)
		w.remote = f->t.base - 64;
	if (e->kk == KK_RKEY)
		w.rkey = ~f->t.rkey;
	if (e->kk == KK_LKEY)
		w.lkey = ~f->t.lkey;
	if (e->kk == KK_UNREG)
		w.local = unreg;
	if (e->kk == KK_LSTRADDLE)
		w.local = f->laddr + f->lmr->len - 8;
	return w;
}

/* Post [good WRITE, bad, 4 good] then [2 good]: the bad one reports its
 * error, the other six flush; only the first good WRITE took effect.
 * Returns 1 when that WRITE flushed too (early_flush): its effect is then
 * unknown.  The polls are offered room for what the chain completes
 * (room 5) or for more than its six WRs (16): a transport may run a
 * chain whose completions all fit its caller's array another way (shm's
 * one-sided run tests the room and the QP's state once for it), and the
 * WRs behind a failure must flush there too. */
static int err_chain(struct fx *f, struct conn *c, const struct err_spec *e,
		     uint8_t *unreg, uint8_t flags, uint64_t canary, int room)
{
	uint64_t *src = (uint64_t *)(f->laddr + 4096);
	struct smart_tp_wr w[6];
	struct smart_tp_wc wc[16];
	int i, early;

	memset(src, 0xee, 64); /* what a wrong WRITE would write */
	src[8] = canary;
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 1, 0, &src[8], 8, 0);
	w[1] = err_wr(f, e, unreg, flags);
	w[2] = wr_make(&f->t, SMART_TP_WRITE, 3, 64, src, 8, 0);
	w[3] = wr_make(&f->t, SMART_TP_WRITE, 4, 128, src, 8, CONF_SIG);
	w[4] = wr_atomic(&f->t, SMART_TP_FAA, 5, 192, &src[9], 1, 0, 0);
	w[5] = wr_make(&f->t, SMART_TP_READ, 6, 0, &src[10], 8, CONF_SIG);
	CHECK_OK(f->ops->post(c->qp, w, 6));
	wait_wcs_room(f->ops, c->cq, wc, 5, room);
	early = early_flush(&wc[0]);
	if (early) {
		memmove(wc, wc + 1, 4 * sizeof(wc[0]));
		wait_wcs_room(f->ops, c->cq, wc + 4, 1, room - 4);
	}
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_MSG(wc[0].status != SMART_TP_WC_OK &&
			  (wc[0].status != SMART_TP_WC_FLUSH || early) &&
			  (e->expect == ERR_ANY || wc[0].status == e->expect ||
			   lost_nak(e, wc[0].status) ||
			   (early && wc[0].status == SMART_TP_WC_FLUSH)),
		  "bad WR completed with %s, expected %s",
		  wc_name(wc[0].status),
		  e->expect == ERR_ANY ? "an error" : wc_name(e->expect));
	for (i = 1; i < 5; i++)
		CHECK_WC(wc[i], 2 + i, SMART_TP_WC_FLUSH);
	CHECK_EQ(f->ops->qp_in_error(c->qp), 1);

	/* A QP in error accepts WRs and flushes each, signalled or not. */
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 7, 256, src, 8, 0);
	w[1] = wr_atomic(&f->t, SMART_TP_CAS, 8, 320, &src[9], 0, 1, CONF_SIG);
	CHECK_OK(f->ops->post(c->qp, w, 2));
	wait_wcs(f->ops, c->cq, wc, 2);
	CHECK_WC(wc[0], 7, SMART_TP_WC_FLUSH);
	CHECK_WC(wc[1], 8, SMART_TP_WC_FLUSH);
	expect_quiet(f->ops, c->cq);
	CHECK_EQ(f->ops->qp_in_error(c->qp), 1);
	return early;
}

/* A READ or atomic whose local buffer is bad fails when its response
 * arrives, and on a delayed link (SMART_CONF_LOSSY=1) the WRs posted
 * behind it may have gone out and run by then (rule 5). */
static int late_local_error(const struct err_spec *e)
{
	return lossy_link() && e->opcode != SMART_TP_WRITE &&
	       (e->kk == KK_LKEY || e->kk == KK_UNREG || e->kk == KK_LSTRADDLE);
}

/* The words err_chain's WRs behind the bad one write (0xee.. at 64 and
 * 128, FAA +1 at 192): each unchanged or as that WR leaves it. */
static void behind_may_have_run(const struct fx *f, uint8_t *snap)
{
	static const size_t off[3] = { 64, 128, 192 };
	uint64_t was, now;
	int i;

	for (i = 0; i < 3; i++) {
		memcpy(&was, snap + off[i], 8);
		now = rword(f, off[i]);
		CHECK_MSG(now == was || (i < 2 ? now == 0xeeeeeeeeeeeeeeeeull :
						 now == was + 1),
			  "word %zu behind a late local error: %#" PRIx64,
			  off[i], now);
		memcpy(snap + off[i], &now, 8);
	}
}

static void err_run(struct fx *f, struct smart_tp_cq *cq,
		    const struct err_spec *e, uint8_t flags, uint64_t canary,
		    int room)
{
	uint8_t *snap = malloc(f->t.rlen), *unreg = malloc(64), back[64];
	uint64_t old0;
	struct conn c;
	uint64_t *loc = (uint64_t *)(f->laddr + 8192);

	CHECK(snap && unreg);
	printf("   %s, %s, room %d\n", e->what,
	       flags ? "signalled" : "unsignalled", room);
	fflush(stdout);
	memset(unreg, 0x77, 64);
	memcpy(back, unreg, 64);
	conn_open(f, cq, 0, 16, 0, &c);
	memcpy(snap, f->raddr, f->t.rlen);
	memcpy(&old0, snap, 8);
	memcpy(snap, &canary, 8); /* the WRITE before the bad one */
	if (err_chain(f, &c, e, unreg, flags, canary, room)) {
		/* it flushed: it may or may not have run */
		CHECK(rword(f, 0) == canary || rword(f, 0) == old0);
		memcpy(snap, f->raddr, 8);
	}
	if (late_local_error(e))
		behind_may_have_run(f, snap);
	/* An atomic whose local result buffer is bad may have executed at
	 * the responder before the requester fails to store the old value:
	 * that is verbs semantics (the local SGE is written by the response),
	 * so its target word alone may change. */
	if (e->kk == KK_UNREG && smart_tp_atomic(e->opcode))
		memcpy(snap + ERR_TARGET, f->raddr + ERR_TARGET, 8);
	CHECK_MEM_EQ(f->raddr, snap, f->t.rlen,
		     "region after a failed chain (only word 0 may change)");
	CHECK_MEM_EQ(unreg, back, 64, "unregistered buffer was written");
	conn_close(&c);

	/* A fresh QP on the same CQ and domain works. */
	conn_open(f, cq, 0, 16, 0, &c);
	loc[0] = canary + 1;
	run1(&c, wr_make(&f->t, SMART_TP_WRITE, 9, 64, loc, 8, 0));
	run1(&c, wr_make(&f->t, SMART_TP_READ, 10, 64, &loc[1], 8, 0));
	CHECK_U64_EQ(loc[1], canary + 1);
	rword_set(f, 64, 0);
	conn_close(&c);
	free(unreg);
	free(snap);
}

void case_errors(const struct smart_conf_env *env)
{
	/* a lossy link may complete a sixth WR (early_flush), which a
	 * poll offered room for more than five would return at once */
	int big = lossy_link() ? 5 : 16;
	struct smart_tp_cq *cq;
	struct fx f;
	size_t i;

	fx_open(&f, env);
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < SMART_ARRAY_SIZE(err_specs); i++) {
		err_run(&f, cq, &err_specs[i], CONF_SIG, 4 * i + 1, 5);
		err_run(&f, cq, &err_specs[i], 0, 4 * i + 2, 5);
		err_run(&f, cq, &err_specs[i], CONF_SIG, 4 * i + 3, big);
		err_run(&f, cq, &err_specs[i], 0, 4 * i + 4, big);
	}
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* A malformed opcode: either post() refuses it with SMART_EINVAL and
 * nothing posted (the QP stays usable), or it completes with BAD_WR and
 * the QP enters the error state.  Either way no crash, nothing written. */
/* One malformed WR: post may refuse it (SMART_EINVAL, nothing posted, the
 * QP still works) or accept it and complete it with BAD_WR; either way the
 * region is untouched. */
static void malformed_one(struct fx *f, struct smart_tp_wr w, const char *what)
{
	struct smart_tp_wc wc;
	struct conn c;
	int rc;

	conn_open(f, NULL, 16, 8, 0, &c);
	rc = f->ops->post(c.qp, &w, 1);
	if (rc == SMART_EINVAL) {
		printf("   %s: post refused it\n", what);
		CHECK_EQ(f->ops->qp_in_error(c.qp), 0);
		expect_quiet(f->ops, c.cq);
		run1(&c,
		     wr_make(&f->t, SMART_TP_READ, 2, 0, f->laddr + 64, 8, 0));
	} else {
		CHECK_OK(rc);
		printf("   %s: error completion\n", what);
		wait_wcs(f->ops, c.cq, &wc, 1);
		CHECK_WC(wc, 1, SMART_TP_WC_BAD_WR);
		CHECK_EQ(f->ops->qp_in_error(c.qp), 1);
	}
	CHECK_U64_EQ(rword(f, ERR_TARGET), 0);
	conn_close(&c);
}

void case_error_bad_opcode(const struct smart_conf_env *env)
{
	static const uint8_t bad[] = { 0, SMART_TP_RECV, SMART_TP_RECV + 1, 99,
				       255 };
	struct smart_tp_wr w;
	char what[64];
	struct fx f;
	size_t i;

	fx_open(&f, env);
	memset(f.laddr, 0xee, 64);
	for (i = 0; i < sizeof(bad); i++) {
		w = wr_make(&f.t, SMART_TP_WRITE, 1, ERR_TARGET, f.laddr, 16,
			    0);
		w.opcode = bad[i];
		snprintf(what, sizeof(what), "opcode %u", bad[i]);
		malformed_one(&f, w, what);
	}
	/* Atomics on a misaligned word. */
	malformed_one(&f,
		      wr_atomic(&f.t, SMART_TP_CAS, 1, ERR_TARGET + 4,
				(uint64_t *)(f.laddr + 128), 0, 1, 0),
		      "CAS on a misaligned address");
	malformed_one(&f,
		      wr_atomic(&f.t, SMART_TP_FAA, 1, ERR_TARGET + 4,
				(uint64_t *)(f.laddr + 128), 1, 0, 0),
		      "FAA on a misaligned address");
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: eagain — a post that does not fit is refused whole            */

#define EAG_MAX_WR   16
#define EAG_FILL_OFF 16384 /* fill WR k writes k+1 to word k here */

static struct smart_tp_wr eag_wr(struct fx *f, uint64_t k, uint8_t flags)
{
	uint64_t *src = (uint64_t *)f->laddr + k;

	*src = k + 1;
	return wr_make(&f->t, SMART_TP_WRITE, k, EAG_FILL_OFF + 8 * k, src, 8,
		       flags);
}

/* Post signalled singles without polling until the queue is full. */
static int eag_fill(struct fx *f, struct conn *c)
{
	struct smart_tp_wr w;
	int k, rc;

	for (k = 0;; k++) {
		w = eag_wr(f, (uint64_t)k, CONF_SIG);
		rc = f->ops->post(c->qp, &w, 1);
		if (rc == SMART_EAGAIN)
			break;
		CHECK_OK(rc);
		CHECK_MSG(k < 256,
			  "send queue of max_send_wr %d never filled "
			  "(only poll() may free room)",
			  EAG_MAX_WR);
	}
	return k;
}

void case_eagain(const struct smart_conf_env *env)
{
	struct smart_tp_wr w[257];
	struct smart_tp_wc wc[256];
	struct fx f;
	struct conn c;
	int cap, i, k;

	fx_open(&f, env);
	conn_open(&f, NULL, 256, EAG_MAX_WR, 0, &c);
	cap = eag_fill(&f, &c);
	printf("   send queue took %d WRs (max_send_wr %d)\n", cap, EAG_MAX_WR);
	CHECK_GE(cap, EAG_MAX_WR);
	w[0] = eag_wr(&f, (uint64_t)cap, CONF_SIG);
	w[1] = eag_wr(&f, (uint64_t)cap + 1, CONF_SIG);
	CHECK_EQ(f.ops->post(c.qp, w, 2), SMART_EAGAIN);

	/* Polling a completion makes room again.  How much is the
	 * transport's business (verbs frees a slot per completion handed
	 * out, shm every WR its poll executed), so only one WR is assumed. */
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], 0, SMART_TP_WC_OK);
	CHECK_OK(f.ops->post(c.qp, w, 1));
	wait_wcs(f.ops, c.cq, wc, cap);
	for (i = 0; i < cap; i++)
		CHECK_WC(wc[i], i + 1, SMART_TP_WC_OK);
	expect_quiet(f.ops, c.cq);
	for (k = 0; k <= cap + 1; k++)
		CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * (size_t)k),
			     k <= cap ? (uint64_t)k + 1 : 0);

	/* A chain longer than the whole queue is refused on an empty QP;
	 * unsignalled WRs hold their slots until a later completion is
	 * polled. */
	memset(f.raddr + EAG_FILL_OFF, 0, 8 * ((size_t)cap + 2));
	for (k = 0; k <= cap; k++)
		w[k] = eag_wr(&f, (uint64_t)k, 0);
	CHECK_EQ(f.ops->post(c.qp, w, cap + 1), SMART_EAGAIN);
	expect_quiet(f.ops, c.cq);
	/* nothing of it went out: a signalled WRITE posted behind it
	 * completes after everything posted before it (RC order) */
	run1(&c, eag_wr(&f, (uint64_t)cap + 1, CONF_SIG));
	for (k = 0; k <= cap; k++)
		CHECK_MSG(rword(&f, EAG_FILL_OFF + 8 * (size_t)k) == 0,
			  "WR %d of a refused chain executed", k);
	w[cap - 1].flags = CONF_SIG;
	CHECK_OK(f.ops->post(c.qp, w, cap));
	CHECK_EQ(f.ops->post(c.qp, &w[cap], 1), SMART_EAGAIN);
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], cap - 1, SMART_TP_WC_OK);
	run_chain(&c, w, cap);
	expect_quiet(f.ops, c.cq);
	CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * (size_t)cap), 0);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: post1 — post's one-call way for one one-sided WR (where a
 * transport has it): it posts as post would while the queue has room and
 * never beyond it, refuses what post would refuse, and leaves to post
 * (SMART_ENOTSUP, nothing posted) a QP not connected and a SEND */

/* post1 of w, and its completion: OK, under its wr_id. */
static void post1_run(struct fx *f, struct conn *c, struct smart_tp_wr w)
{
	struct smart_tp_wc wc;

	CHECK_OK(f->ops->post1(c->qp, &w));
	wait_wcs(f->ops, c->cq, &wc, 1);
	CHECK_WC(wc, w.wr_id, SMART_TP_WC_OK);
}

#define P1_OFF (EAG_FILL_OFF + 8 * 240) /* remote words 240-243 */
#define P1_LOC 240			/* local words 240-249 */

/* Every one-sided opcode in turn on one QP, each WR given to post1 right
 * behind one of another kind: a transport that reuses its WR's memory
 * from post to post (verbs fills its ibv_send_wr over the last one
 * without clearing it) must leave nothing of one in the next (an atomic's
 * operands, an inline flag, a length). */
static void post1_mixed(struct fx *f, struct conn *c)
{
	uint64_t *loc = (uint64_t *)f->laddr + P1_LOC;
	struct smart_tp_wr ch[2];
	struct smart_tp_caps caps;

	memset(&caps, 0, sizeof(caps));
	f->ops->query_caps(f->idom, &caps);
	memset(loc, 0, 8 * 8);
	rword_set(f, P1_OFF, 5);
	rword_set(f, P1_OFF + 8, 6);
	if (caps.atomics) {
		post1_run(f, c,
			  wr_atomic(&f->t, SMART_TP_CAS, 300, P1_OFF, &loc[0],
				    5, 7, CONF_SIG));
		CHECK_U64_EQ(loc[0], 5);
		post1_run(f, c,
			  wr_make(&f->t, SMART_TP_READ, 301, P1_OFF, &loc[1], 8,
				  CONF_SIG));
		CHECK_U64_EQ(loc[1], 7);
		post1_run(f, c,
			  wr_atomic(&f->t, SMART_TP_FAA, 302, P1_OFF, &loc[2],
				    3, 0, CONF_SIG));
		CHECK_U64_EQ(loc[2], 7);
		CHECK_U64_EQ(rword(f, P1_OFF), 10);
	}
	loc[3] = 42;
	post1_run(f, c,
		  wr_make(&f->t, SMART_TP_WRITE, 303, P1_OFF, &loc[3], 8,
			  CONF_SIG));
	loc[4] = 43;
	post1_run(f, c,
		  wr_make(&f->t, SMART_TP_WRITE, 304, P1_OFF + 8, &loc[4], 8,
			  CONF_SIG | SMART_TP_INLINE));
	loc[4] = 0; /* taken at the post */
	post1_run(f, c,
		  wr_make(&f->t, SMART_TP_READ, 305, P1_OFF, &loc[5], 16,
			  CONF_SIG));
	CHECK_U64_EQ(loc[5], 42);
	CHECK_U64_EQ(loc[6], 43);
	CHECK_U64_EQ(loc[7], 0); /* a READ of 16 bytes wrote 16 */
	if (caps.atomics) {
		post1_run(f, c,
			  wr_atomic(&f->t, SMART_TP_CAS, 306, P1_OFF + 8,
				    &loc[7], 1, 9, CONF_SIG));
		CHECK_U64_EQ(loc[7], 43); /* no swap: 43 is not 1 */
		CHECK_U64_EQ(rword(f, P1_OFF + 8), 43);
	}
	expect_quiet(f->ops, c->cq);
	/* a chain of two by post (verbs links its first WR to the second:
	 * wr[0].next), then post1: post1's one WR goes out, nothing of the
	 * chain again (the chain's second WRITE is signalled: a second
	 * posting would complete once more and write its word again) */
	rword_set(f, P1_OFF + 16, 0);
	rword_set(f, P1_OFF + 24, 0);
	loc[8] = 44;
	loc[9] = 45;
	ch[0] = wr_make(&f->t, SMART_TP_WRITE, 307, P1_OFF + 16, &loc[8], 8, 0);
	ch[1] = wr_make(&f->t, SMART_TP_WRITE, 308, P1_OFF + 24, &loc[9], 8,
			CONF_SIG);
	run_chain(c, ch, 2);
	CHECK_U64_EQ(rword(f, P1_OFF + 16), 44);
	CHECK_U64_EQ(rword(f, P1_OFF + 24), 45);
	rword_set(f, P1_OFF + 16, 0);
	rword_set(f, P1_OFF + 24, 0);
	loc[5] = 0;
	post1_run(f, c,
		  wr_make(&f->t, SMART_TP_READ, 309, P1_OFF, &loc[5], 8,
			  CONF_SIG));
	CHECK_U64_EQ(loc[5], 42);
	expect_quiet(f->ops, c->cq);
	CHECK_U64_EQ(rword(f, P1_OFF + 16), 0);
	CHECK_U64_EQ(rword(f, P1_OFF + 24), 0);
}

void case_post1(const struct smart_conf_env *env)
{
	struct smart_tp_qp_attr attr = { .max_send_wr = EAG_MAX_WR };
	struct smart_tp_wc wc[256];
	struct smart_tp_wr w;
	struct smart_tp_qp *idle;
	struct fx f;
	struct conn c;
	int cap, k, rc;

	fx_open(&f, env);
	if (!f.ops->post1) {
		printf("   %s has no post1 (post only)\n", f.ops->name);
		fx_close(&f);
		return;
	}
	conn_open(&f, NULL, 256, EAG_MAX_WR, 0, &c);
	/* a QP not connected yet is post's (which refuses it): nothing
	 * queued on it, nothing completes */
	CHECK_OK(f.ops->qp_create(f.idom, c.cq, &attr, &idle));
	w = eag_wr(&f, 210, CONF_SIG);
	CHECK_EQ(f.ops->post1(idle, &w), SMART_ENOTSUP);
	f.ops->qp_destroy(idle);
	w = eag_wr(&f, 200, CONF_SIG);
	rc = f.ops->post1(c.qp, &w);
	if (rc == SMART_ENOTSUP) { /* the model's, the adversary's QPs */
		printf("   this QP takes post's general way (no post1)\n");
		expect_quiet(f.ops, c.cq);
		conn_close(&c);
		fx_close(&f);
		return;
	}
	CHECK_OK(rc);
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], 200, SMART_TP_WC_OK);
	CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * 200), 201);
	/* an inline WRITE's data is taken at the post */
	w = eag_wr(&f, 202, CONF_SIG | SMART_TP_INLINE);
	CHECK_OK(f.ops->post1(c.qp, &w));
	((uint64_t *)f.laddr)[202] = 99;
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], 202, SMART_TP_WC_OK);
	CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * 202), 203);
	post1_mixed(&f, &c);
	/* what post would refuse is refused, and a SEND is post's:
	 * nothing posted either way */
	w = eag_wr(&f, 203, CONF_SIG | SMART_TP_INLINE);
	w.len = 1u << 20;
	CHECK_EQ(f.ops->post1(c.qp, &w), SMART_EINVAL);
	w = eag_wr(&f, 203, CONF_SIG);
	w.opcode = SMART_TP_SEND;
	CHECK_EQ(f.ops->post1(c.qp, &w), SMART_ENOTSUP);
	expect_quiet(f.ops, c.cq);
	CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * 203), 0);
	/* singles until the queue is full, as post's would fill it */
	for (cap = 0;; cap++) {
		CHECK_MSG(cap < 256,
			  "post1 posted more than 256 WRs on a send queue of "
			  "max_send_wr %d (only poll() frees room)",
			  EAG_MAX_WR);
		w = eag_wr(&f, (uint64_t)cap, CONF_SIG);
		rc = f.ops->post1(c.qp, &w);
		if (rc == SMART_EAGAIN)
			break;
		CHECK_OK(rc);
	}
	printf("   post1 took %d WRs (max_send_wr %d)\n", cap, EAG_MAX_WR);
	CHECK_GE(cap, EAG_MAX_WR);
	w = eag_wr(&f, (uint64_t)cap, CONF_SIG);
	CHECK_EQ(f.ops->post(c.qp, &w, 1), SMART_EAGAIN);
	wait_wcs(f.ops, c.cq, wc, cap);
	for (k = 0; k < cap; k++) {
		CHECK_WC(wc[k], k, SMART_TP_WC_OK);
		CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * (size_t)k),
			     (uint64_t)k + 1);
	}
	expect_quiet(f.ops, c.cq);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: mr_freed — a WR naming a local MR freed since an earlier WR of
 * its QP went through it fails LOC_PROT, nothing read or written there,
 * however the transport remembers the MRs its WRs used (shm keeps a QP's
 * last one)                                                            */

void case_mr_freed(const struct smart_conf_env *env)
{
	const uint64_t v = 0x1122334455667788ull;
	struct smart_tp_mr *m2;
	struct smart_tp_wr w;
	struct smart_tp_wc wc;
	struct fx f;
	struct conn c;
	uint8_t *old;
	uint32_t lkey;
	void *p;

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	CHECK_OK(f.ops->mr_alloc(f.idom, 4096, 0, 0, &m2));
	rword_set(&f, ERR_TARGET, v);
	w = wr_make(&f.t, SMART_TP_READ, 1, ERR_TARGET, m2->addr, 8, 0);
	w.lkey = m2->lkey;
	run1(&c, w);
	CHECK_MEM_EQ(m2->addr, &v, 8, "READ into the second MR");
	old = m2->addr;
	lkey = m2->lkey;
	f.ops->mr_free(f.idom, m2);
	/* its pages mapped again, ours: a READ run through the freed MR
	 * lands here (when the address is free to take) instead of
	 * faulting */
	p = mmap(old, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != MAP_FAILED && p != (void *)old) {
		munmap(p, 4096);
		p = MAP_FAILED;
	}
	if (p == MAP_FAILED)
		printf("   the freed MR's pages could not be mapped again\n");
	w = wr_make(&f.t, SMART_TP_READ, 2, ERR_TARGET, old, 8, CONF_SIG);
	w.lkey = lkey;
	CHECK_OK(f.ops->post(c.qp, &w, 1));
	wait_wcs(f.ops, c.cq, &wc, 1);
	CHECK_WC(wc, 2, SMART_TP_WC_LOC_PROT);
	if (p != MAP_FAILED) {
		CHECK_U64_EQ(*(volatile uint64_t *)p, 0);
		munmap(p, 4096);
	}
	CHECK_EQ(f.ops->qp_in_error(c.qp), 1);
	expect_quiet(f.ops, c.cq);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: inline_limit — an inline WRITE up to caps.max_inline bytes is  */
/* sent from unregistered memory; one byte more is refused by post,     */
/* the whole chain with it, and the QP stays usable                     */

void case_inline_limit(const struct smart_conf_env *env)
{
	struct smart_tp_caps caps = { 0 };
	uint8_t src[1024], zero[2048];
	struct smart_tp_wr w[2];
	struct fx f;
	struct conn c;
	uint32_t max;

	fx_open(&f, env);
	f.ops->query_caps(f.idom, &caps);
	max = caps.max_inline;
	printf("   max_inline %u\n", max);
	if (!max || max >= sizeof(src))
		test_skip("no inline WRITEs, or a limit this case cannot pass");
	memset(src, 0x5a, sizeof(src));
	memset(zero, 0, sizeof(zero));
	conn_open(&f, NULL, 16, 8, 0, &c);
	run1(&c,
	     wr_make(&f.t, SMART_TP_WRITE, 1, 0, src, max, SMART_TP_INLINE));
	CHECK_MEM_EQ(f.raddr, src, max, "an inline WRITE of max_inline bytes");
	memset(f.raddr, 0, 2048);
	w[0] = wr_make(&f.t, SMART_TP_WRITE, 2, 1024, src, 8, SMART_TP_INLINE);
	w[1] = wr_make(&f.t, SMART_TP_WRITE, 3, 0, src, max + 1,
		       SMART_TP_INLINE | CONF_SIG);
	CHECK_EQ(f.ops->post(c.qp, w, 2), SMART_EINVAL);
	CHECK_EQ(f.ops->qp_in_error(c.qp), 0);
	expect_quiet(f.ops, c.cq);
	CHECK_MEM_EQ(f.raddr, zero, 2048, "the region after a refused chain");
	run1(&c, wr_make(&f.t, SMART_TP_WRITE, 4, 8, src, 8, SMART_TP_INLINE));
	CHECK_U64_EQ(rword(&f, 8), UINT64_C(0x5a5a5a5a5a5a5a5a));
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: peer_read — a region made with SMART_TP_MR_PEER_READ (a
 * messaging connection's rendezvous staging) is READ by its peer and
 * nothing else: a WRITE, CAS or FAA to it fails with REM_ACCESS and
 * changes no byte; remote_span tells its size from its blob alone and
 * refuses a malformed blob.                                           */

/* One WR of opcode op to the read-only target t, on a fresh QP: its
 * completion's status. */
static int peer_read_try(struct fx *f, uint8_t op)
{
	uint64_t *src = (uint64_t *)(f->laddr + 4096);
	struct smart_tp_wc wc;
	struct conn c;

	memset(src, 0xee, 16);
	conn_open(f, NULL, 64, 16, 0, &c);
	CHECK_OK(f->ops->post(c.qp,
			      (struct smart_tp_wr[]){
				      wr_atomic(&f->t, op, 9, 64, src, 0, 0xbad,
						CONF_SIG) },
			      1));
	wait_wcs(f->ops, c.cq, &wc, 1);
	CHECK_EQ(wc.wr_id, 9);
	conn_close(&c);
	return wc.status;
}

void case_peer_read(const struct smart_conf_env *env)
{
	static const uint8_t bad[] = { SMART_TP_WRITE, SMART_TP_CAS,
				       SMART_TP_FAA };
	struct smart_tp_mr *pr, *region;
	struct smart_tp_remote *r, *remote;
	struct conf_target t;
	struct smart_tp_caps caps;
	uint8_t blob[SMART_TP_BLOB_MAX], *want = malloc(CONF_REGION_LEN);
	size_t bl = sizeof(blob);
	uint64_t span, seed = case_seed("peer_read");
	struct fx f;
	struct conn c;
	int st;

	CHECK(want != NULL);
	fx_open(&f, env);
	f.ops->query_caps(f.idom, &caps);
	CHECK_OK(f.ops->mr_alloc(f.rdom, CONF_REGION_LEN, 0,
				 SMART_TP_MR_PEER_READ, &pr));
	rng_fill(&seed, want, CONF_REGION_LEN);
	memcpy(pr->addr, want, CONF_REGION_LEN); /* the owner writes */
	CHECK_OK(f.ops->region_blob(f.rdom, pr, blob, &bl));
	CHECK_OK(f.ops->remote_span(blob, bl, &span));
	CHECK_U64_EQ(span, CONF_REGION_LEN);
	CHECK_EQ(f.ops->remote_span(blob, bl - 1, &span), SMART_EPROTO);
	CHECK_OK(f.ops->remote_attach(f.idom, blob, bl, attach_fd(pr), &r));
	/* the fixture's connections go to this region now */
	region = f.region;
	remote = f.remote;
	t = f.t;
	f.region = pr;
	f.remote = r;
	f.t.base = f.ops->remote_base(r);
	f.t.rkey = f.ops->remote_rkey(r);
	f.t.rlen = CONF_REGION_LEN;
	conn_open(&f, NULL, 64, 16, 0, &c);
	run1(&c, wr_make(&f.t, SMART_TP_READ, 1, 0, f.laddr, 4096, CONF_SIG));
	CHECK_MEM_EQ(f.laddr, want, 4096, "READ of a peer-read region");
	conn_close(&c);
	for (size_t i = 0; i < sizeof(bad); i++) {
		if (smart_tp_atomic(bad[i]) && !caps.atomics)
			continue;
		st = peer_read_try(&f, bad[i]);
		CHECK_MSG(st == SMART_TP_WC_REM_ACCESS ||
				  (lossy_link() && st == SMART_TP_WC_RETRY_EXC),
			  "opcode %u to a peer-read region completed %s",
			  bad[i], wc_name(st));
	}
	CHECK_MEM_EQ(pr->addr, want, CONF_REGION_LEN, "a peer-read region");
	f.region = region;
	f.remote = remote;
	f.t = t;
	f.ops->remote_detach(r);
	f.ops->mr_free(f.rdom, pr);
	fx_close(&f);
	free(want);
}
