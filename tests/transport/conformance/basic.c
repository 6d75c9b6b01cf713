/*
 * Conformance cases on single operations: the ops table and fresh objects,
 * READ/WRITE at boundary sizes and offsets, CAS/FAA round trips, the byte
 * order of atomics, selective signalling, and poll() handing out
 * completions in small batches.
 *
 * Invariants: each case opens and closes its own fixture; data is seeded
 * (case_seed), so a failure replays.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Case: objects — the table, fresh memory, keys, two QPs on one CQ    */

static void check_ops_table(const struct smart_tp_ops *o)
{
	CHECK(o->name && o->domain_open && o->domain_close && o->mr_alloc);
	CHECK(o->mr_free && o->cq_create && o->cq_destroy && o->poll);
	CHECK(o->region_blob && o->accept && o->responder_destroy);
	CHECK(o->remote_attach && o->remote_detach && o->remote_base);
	CHECK(o->remote_rkey && o->qp_create && o->qp_blob);
	CHECK(o->qp_connect && o->qp_destroy && o->post && o->qp_in_error);
	CHECK(o->dm_attach && o->remote_dm);
}

void case_objects(const struct smart_conf_env *env)
{
	struct fx f;
	struct conn a, b;
	struct smart_tp_mr *m2;
	uint8_t zero[4096] = { 0 };
	size_t off;

	check_ops_table(env->ops);
	fx_open(&f, env);
	for (off = 0; off < f.t.rlen; off += sizeof(zero))
		CHECK_MEM_EQ(f.raddr + off, zero,
			     smart_min(sizeof(zero), f.t.rlen - off),
			     "fresh region not zeroed");
	CHECK_MEM_EQ(f.laddr, zero, sizeof(zero), "fresh local MR not zeroed");
	CHECK_EQ((uintptr_t)f.raddr % 8, 0);
	CHECK_OK(f.ops->mr_alloc(f.idom, 4096, 0, 0, &m2));
	CHECK_EQ(m2->hugepages, 0);
	CHECK_NE(m2->lkey, f.lmr->lkey);

	/* Two QPs on one CQ; the second local MR's lkey works. */
	conn_open(&f, NULL, 16, 8, 0, &a);
	conn_open(&f, a.cq, 0, 8, 0, &b);
	memset(f.laddr, 0x3c, 64);
	run1(&a, wr_make(&f.t, SMART_TP_WRITE, 1, 640, f.laddr, 64, 0));
	{
		struct smart_tp_wr w = wr_make(&f.t, SMART_TP_READ, 2, 640,
					       m2->addr, 64, 0);

		w.lkey = m2->lkey;
		run1(&b, w);
	}
	CHECK_MEM_EQ(m2->addr, f.laddr, 64, "READ through a second MR");
	CHECK_MEM_EQ(f.raddr + 640, f.laddr, 64, "region after WRITE");
	conn_close(&b);
	conn_close(&a);
	f.ops->mr_free(f.idom, m2);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: rw_sizes — READ/WRITE at boundary sizes and offsets            */

#define RW_SRC_OFF 5		      /* unaligned local source */
#define RW_DST_OFF ((128u << 10) + 3) /* unaligned local destination */

static void rw_one(struct fx *f, struct conn *c, uint64_t *rng, size_t off,
		   uint32_t len)
{
	uint8_t *src = f->laddr + RW_SRC_OFF, *dst = f->laddr + RW_DST_OFF;
	uint8_t *r = f->raddr + off;
	int after = off + len < f->t.rlen;

	/* Guards: the byte before and after in both region and dst. */
	if (off)
		r[-1] = 0xa5;
	if (after)
		r[len] = 0x5a;
	rng_fill(rng, src, len);
	run1(c, wr_make(&f->t, SMART_TP_WRITE, off, off, src, len, 0));
	CHECK_MEM_EQ(r, src, len, "region after WRITE");
	CHECK(!off || r[-1] == 0xa5);
	CHECK(!after || r[len] == 0x5a);

	memset(dst - 1, 0xc3, len + 2);
	run1(c, wr_make(&f->t, SMART_TP_READ, len, off, dst, len, 0));
	CHECK_MEM_EQ(dst, src, len, "READ after WRITE");
	CHECK(dst[-1] == 0xc3 && dst[len] == 0xc3);

	/* Data placed directly in the region comes back through READ. */
	rng_fill(rng, r, len);
	run1(c, wr_make(&f->t, SMART_TP_READ, len, off, dst, len, 0));
	CHECK_MEM_EQ(dst, r, len, "READ of data written in place");
	CHECK(dst[-1] == 0xc3 && dst[len] == 0xc3);
}

void case_rw_sizes(const struct smart_conf_env *env)
{
	static const uint32_t sizes[] = {
		1, 7, 8, 9, 63, 64, 65, 4096, 65536,
	};
	uint64_t rng = case_seed("rw_sizes");
	struct fx f;
	struct conn c;
	size_t i, j, offs[3];

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	for (i = 0; i < SMART_ARRAY_SIZE(sizes); i++) {
		offs[0] = 0;
		offs[1] = 4096 + 3;	       /* unaligned, crosses a page */
		offs[2] = f.t.rlen - sizes[i]; /* ends on the last byte */
		for (j = 0; j < 3; j++) {
			printf("   size %u offset %zu\n", sizes[i], offs[j]);
			rw_one(&f, &c, &rng, offs[j], sizes[i]);
		}
	}
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: word_writes — 8-B WRITEs at every remote and local alignment   */
/* ------------------------------------------------------------------ */
/* An 8-B WRITE has its own way on shm (one copy at the post, one store
 * at execution when the remote word is aligned): each remote offset 0-15
 * and local offset 0-7, inline and not, by post and by post1, lands its
 * bytes and no others, and an inline WRITE's bytes are taken at the
 * post; then a chain of four mixing both at aligned and unaligned
 * offsets.  Inline WRITEs only where caps.max_inline allows 8 bytes. */

#define WW_ROFF 8192u /* the region's window */
#define WW_LOFF 1024u /* the sources, in the local MR */

static void ww_check(struct fx *f, uint32_t roff, const uint8_t *want,
		     const char *how)
{
	const uint8_t *r = f->raddr + WW_ROFF;
	uint32_t i;

	for (i = 0; i < 64; i++) {
		uint8_t exp = i >= roff && i < roff + 8 ? want[i - roff] : 0xa5;

		CHECK_MSG(r[i] == exp,
			  "%s: remote offset %u, byte %u is 0x%02x, want 0x%02x",
			  how, roff, i, r[i], exp);
	}
}

/* One 8-B WRITE from local offset loff to remote offset roff, its
 * completion waited for, the window checked. */
static void ww_one(struct fx *f, struct conn *c, uint64_t *rng, uint32_t roff,
		   uint32_t loff, int inl, int by_post1)
{
	uint8_t want[8], *src = f->laddr + WW_LOFF + loff;
	uint64_t id = roff * 8 + loff;
	struct smart_tp_wr w;
	struct smart_tp_wc wc;
	int rc = SMART_ENOTSUP;

	rng_fill(rng, src, 8);
	memcpy(want, src, 8);
	memset(f->raddr + WW_ROFF, 0xa5, 64);
	w = wr_make(&f->t, SMART_TP_WRITE, id, WW_ROFF + roff, src, 8,
		    CONF_SIG | (inl ? SMART_TP_INLINE : 0));
	if (by_post1 && f->ops->post1)
		rc = f->ops->post1(c->qp, &w);
	if (rc == SMART_ENOTSUP) /* no post1, or not this QP's */
		rc = f->ops->post(c->qp, &w, 1);
	CHECK_OK(rc);
	if (inl)
		memset(src, 0x11, 8); /* taken at the post */
	wait_wcs(f->ops, c->cq, &wc, 1);
	CHECK_WC(wc, id, SMART_TP_WC_OK);
	ww_check(f, roff, want, by_post1 ? "post1" : "post");
}

void case_word_writes(const struct smart_conf_env *env)
{
	static const uint32_t offs[4] = { 1, 11, 20, 29 };
	uint64_t rng = case_seed("word_writes");
	struct smart_tp_caps caps = { 0 };
	struct smart_tp_wr w[4];
	struct smart_tp_wc wc;
	uint8_t wants[4][8], *src, *r;
	uint32_t roff, loff;
	int inl, by, i, inl_ok;
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	f.ops->query_caps(f.idom, &caps);
	inl_ok = caps.max_inline >= 8;
	conn_open(&f, NULL, 64, 16, 0, &c);
	for (by = 0; by < 2; by++)
		for (inl = 0; inl <= inl_ok; inl++)
			for (roff = 0; roff < 16; roff++)
				for (loff = 0; loff < 8; loff++)
					ww_one(&f, &c, &rng, roff, loff, inl,
					       by);
	/* a chain: unaligned, unaligned, aligned, unaligned; every other
	 * WR inline */
	r = f.raddr + WW_ROFF;
	memset(r, 0xa5, 64);
	for (i = 0; i < 4; i++) {
		src = f.laddr + WW_LOFF + 64 + 17 * (uint32_t)i;
		rng_fill(&rng, src, 8);
		memcpy(wants[i], src, 8);
		w[i] = wr_make(&f.t, SMART_TP_WRITE, 500 + (uint64_t)i,
			       WW_ROFF + offs[i], src, 8,
			       (i & 1) && inl_ok ? SMART_TP_INLINE : 0);
	}
	w[3].flags |= CONF_SIG;
	CHECK_OK(f.ops->post(c.qp, w, 4));
	wait_wcs(f.ops, c.cq, &wc, 1);
	CHECK_WC(wc, 503, SMART_TP_WC_OK);
	for (i = 0; i < 4; i++)
		CHECK_MEM_EQ(r + offs[i], wants[i], 8, "a chain's word");
	CHECK(r[0] == 0xa5 && r[9] == 0xa5 && r[10] == 0xa5 && r[19] == 0xa5 &&
	      r[28] == 0xa5 && r[37] == 0xa5);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: atomic_basic — CAS/FAA round trips                             */

static void atomic_one(struct fx *f, struct conn *c, uint64_t *rng, size_t off)
{
	uint64_t *loc = (uint64_t *)(f->laddr + 64);
	uint64_t v0 = rng_next(rng), a = rng_next(rng) | 1;
	uint64_t s = rng_next(rng), lo = 0, hi = 0;

	/* Neighbouring words must survive the atomics untouched. */
	if (off >= 8)
		rword_set(f, off - 8, lo = rng_next(rng));
	if (off + 16 <= f->t.rlen)
		rword_set(f, off + 8, hi = rng_next(rng));
	rword_set(f, off, v0);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 1, off, loc, a, 0, 0));
	CHECK_U64_EQ(*loc, v0);
	CHECK_U64_EQ(rword(f, off), v0 + a);
	/* A CAS that does not match changes nothing and returns the value. */
	run1(c, wr_atomic(&f->t, SMART_TP_CAS, 2, off, loc, v0, s, 0));
	CHECK_U64_EQ(*loc, v0 + a);
	CHECK_U64_EQ(rword(f, off), v0 + a);
	run1(c, wr_atomic(&f->t, SMART_TP_CAS, 3, off, loc, v0 + a, s, 0));
	CHECK_U64_EQ(*loc, v0 + a);
	CHECK_U64_EQ(rword(f, off), s);
	*loc = 0;
	run1(c, wr_make(&f->t, SMART_TP_READ, 4, off, loc, 8, 0));
	CHECK_U64_EQ(*loc, s);
	/* FAA wraps modulo 2^64; FAA +0 is an atomic read. */
	rword_set(f, off, UINT64_MAX);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 5, off, loc, 2, 0, 0));
	CHECK_U64_EQ(*loc, UINT64_MAX);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 6, off, loc, 0, 0, 0));
	CHECK_U64_EQ(*loc, 1);
	CHECK_U64_EQ(rword(f, off), 1);
	if (off >= 8)
		CHECK_U64_EQ(rword(f, off - 8), lo);
	if (off + 16 <= f->t.rlen)
		CHECK_U64_EQ(rword(f, off + 8), hi);
}

void case_atomic_basic(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("atomic_basic");
	struct fx f;
	struct conn c;
	size_t offs[4], i;

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	offs[0] = 0;
	offs[1] = 8;
	offs[2] = 4096 + 24;
	offs[3] = f.t.rlen - 8; /* the last word of the region */
	for (i = 0; i < 4; i++)
		atomic_one(&f, &c, &rng, offs[i]);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: atomics_byte_order — old values and memory in host order      */

/* Words whose bytes all differ, so that a byte-swapped value is never the
 * right one; the FAA addends carry across a byte boundary, which a swapped
 * add would carry the other way. */
#define BO_PATTERN UINT64_C(0x0102030405060708)
#define BO_ADD	   UINT64_C(0x00000000000000f9)
#define BO_SWAP	   UINT64_C(0x1112131415161718)
#define BO_OTHER   UINT64_C(0x2122232425262728)
#define BO_HIGH	   UINT64_C(0xf0e0d0c0b0a09080)
#define BO_ADD2	   UINT64_C(0x0000000000000180)

static void check_word(uint64_t got, uint64_t want, const char *what)
{
	CHECK_MSG(got == want, "%s: 0x%016" PRIx64 ", want 0x%016" PRIx64 "%s",
		  what, got, want,
		  got == __builtin_bswap64(want) ? " (byte-swapped)" : "");
}

/* A transport without atomics (caps.atomics 0) must refuse CAS and FAA at
 * post, with nothing posted, and still serve READs on the same QP. */
static void atomics_refused(struct fx *f, struct conn *c, size_t off)
{
	uint64_t *loc = (uint64_t *)f->laddr;
	struct smart_tp_wr w = wr_atomic(&f->t, SMART_TP_FAA, 1, off, loc, 1, 0,
					 CONF_SIG);

	CHECK_EQ(f->ops->post(c->qp, &w, 1), SMART_ENOTSUP);
	w.opcode = SMART_TP_CAS;
	CHECK_EQ(f->ops->post(c->qp, &w, 1), SMART_ENOTSUP);
	expect_quiet(f->ops, c->cq);
	CHECK_EQ(f->ops->qp_in_error(c->qp), 0);
	rword_set(f, off, BO_PATTERN);
	run1(c, wr_make(&f->t, SMART_TP_READ, 2, off, loc, 8, 0));
	check_word(loc[0], BO_PATTERN, "READ beside refused atomics");
	printf("   no atomics on this domain: CAS/FAA refused with "
	       "SMART_ENOTSUP, READ served\n");
}

void case_atomics_byte_order(const struct smart_conf_env *env)
{
	const size_t off = 4096 + 64;
	struct smart_tp_caps caps;
	uint64_t *loc;
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	loc = (uint64_t *)f.laddr;
	memset(&caps, 0, sizeof(caps));
	f.ops->query_caps(f.idom, &caps);
	if (!caps.atomics) {
		atomics_refused(&f, &c, off);
		conn_close(&c);
		fx_close(&f);
		return;
	}
	memset(loc, 0, 64);
	rword_set(&f, off, BO_PATTERN);
	/* FAA: the old value as the host reads it, the sum in host order */
	run1(&c, wr_atomic(&f.t, SMART_TP_FAA, 1, off, &loc[0], BO_ADD, 0, 0));
	check_word(loc[0], BO_PATTERN, "FAA's old value");
	check_word(rword(&f, off), BO_PATTERN + BO_ADD, "the word after FAA");
	/* CAS whose compare matches in host order only: it swaps */
	run1(&c, wr_atomic(&f.t, SMART_TP_CAS, 2, off, &loc[1],
			   BO_PATTERN + BO_ADD, BO_SWAP, 0));
	check_word(loc[1], BO_PATTERN + BO_ADD, "CAS's old value");
	check_word(rword(&f, off), BO_SWAP, "the word after a matching CAS");
	/* CAS whose compare matches byte-swapped only: it must not swap */
	run1(&c, wr_atomic(&f.t, SMART_TP_CAS, 3, off, &loc[2],
			   __builtin_bswap64(BO_SWAP), BO_OTHER, 0));
	check_word(loc[2], BO_SWAP, "a failed CAS's old value");
	check_word(rword(&f, off), BO_SWAP, "the word after a failed CAS");
	/* high bits set (no sign trouble), and a carry through two bytes */
	run1(&c, wr_atomic(&f.t, SMART_TP_CAS, 4, off, &loc[3], BO_SWAP,
			   BO_HIGH, 0));
	check_word(loc[3], BO_SWAP, "CAS's old value");
	run1(&c, wr_atomic(&f.t, SMART_TP_FAA, 5, off, &loc[4], BO_ADD2, 0, 0));
	check_word(loc[4], BO_HIGH, "FAA's old value (high bits)");
	check_word(rword(&f, off), BO_HIGH + BO_ADD2, "the word after FAA");
	/* the bytes as laid out in memory, not only the value */
	{
		uint64_t want = BO_HIGH + BO_ADD2;

		CHECK_MEM_EQ(f.raddr + off, &want, 8, "the word's bytes");
		want = BO_HIGH;
		CHECK_MEM_EQ(&loc[4], &want, 8, "the old value's bytes");
	}
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: signal_selective — only signalled WRs complete                 */

#define SIG_N 16

void case_signal_selective(const struct smart_conf_env *env)
{
	static const uint8_t ops4[4] = {
		SMART_TP_WRITE,
		SMART_TP_READ,
		SMART_TP_FAA,
		SMART_TP_CAS,
	};
	struct smart_tp_wr w[SIG_N + 1];
	struct smart_tp_wc wc[SIG_N];
	uint64_t *loc;
	struct fx f;
	struct conn c;
	int i;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	loc = (uint64_t *)f.laddr;

	/* N unsignalled + 1 signalled: exactly one completion. */
	for (i = 0; i < SIG_N; i++) {
		loc[i] = 0x1000 + (uint64_t)i;
		w[i] = wr_make(&f.t, SMART_TP_WRITE, 100 + i, 8 * i, &loc[i], 8,
			       0);
	}
	w[SIG_N] = wr_make(&f.t, SMART_TP_READ, 999, 0, &loc[64], 8 * SIG_N,
			   CONF_SIG);
	run_chain(&c, w, SIG_N + 1);
	for (i = 0; i < SIG_N; i++)
		CHECK_U64_EQ(loc[64 + i], 0x1000 + (uint64_t)i);
	/* A later signalled WR must be the very next completion. */
	run1(&c, wr_make(&f.t, SMART_TP_READ, 1000, 0, &loc[64], 8, 0));

	/* Unsignalled WRs spread over several posts, then one signalled. */
	for (i = 0; i < 3; i++)
		CHECK_OK(f.ops->post(c.qp, w + 5 * i, 5));
	run1(&c, wr_make(&f.t, SMART_TP_READ, 1001, 0, &loc[64], 8, 0));
	expect_quiet(f.ops, c.cq);

	/* N signalled: N completions in posting order, right opcodes. */
	for (i = 0; i < SIG_N; i++)
		w[i] = wr_atomic(&f.t, ops4[i % 4], 200 + i, 256 + 8 * i,
				 &loc[128 + i], 0, 1, CONF_SIG);
	CHECK_OK(f.ops->post(c.qp, w, SIG_N));
	wait_wcs(f.ops, c.cq, wc, SIG_N);
	for (i = 0; i < SIG_N; i++) {
		CHECK_WC(wc[i], 200 + i, SMART_TP_WC_OK);
		CHECK_EQ(wc[i].opcode, ops4[i % 4]);
	}
	expect_quiet(f.ops, c.cq);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: poll_small_max — poll(max) hands out ready completions over
 * several calls, in order, never more than max, none lost.           */

#define PS_N  40
#define PS_WC 16

void case_poll_small_max(const struct smart_conf_env *env)
{
	static const int maxes[] = { 1, 2, 3, 5, 7 };
	struct smart_tp_wr w[PS_N];
	struct smart_tp_wc wc[PS_WC];
	uint64_t deadline, *loc;
	int round, got, r, i, mx, calls;
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	loc = (uint64_t *)f.laddr;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < PS_N; i++)
			w[i] = wr_atomic(&f.t,
					 i & 1 ? SMART_TP_FAA : SMART_TP_READ,
					 500 + i, 8, &loc[i], 1, 0, CONF_SIG);
		CHECK_OK(f.ops->post(c.qp, w, PS_N));
		deadline = now_ns() + CONF_WAIT_NS;
		for (got = 0, calls = 0; got < PS_N; calls++) {
			mx = maxes[calls % 5];
			for (i = 0; i < PS_WC; i++)
				wc[i] = (struct smart_tp_wc){ .wr_id = 0xdead,
							      .status = 99 };
			r = f.ops->poll(c.cq, wc, mx);
			CHECK_GE(r, 0);
			CHECK_LE(r, mx);
			for (i = 0; i < r; i++)
				CHECK_WC(wc[i], 500 + got + i, SMART_TP_WC_OK);
			for (i = r; i < PS_WC; i++)
				CHECK_MSG(wc[i].wr_id == 0xdead &&
						  wc[i].status == 99,
					  "poll wrote wc[%d] beyond its "
					  "return %d",
					  i, r);
			got += r;
			CHECK_MSG(got >= PS_N || now_ns() < deadline,
				  "only %d of %d completions", got, PS_N);
		}
		expect_quiet(f.ops, c.cq);
		CHECK_U64_EQ(rword(&f, 8), (uint64_t)(round + 1) * PS_N / 2);
	}
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: cq_small — a CQ made smaller than what its QP's send queue can
 * complete at once: the transport grows it, or refuses the QP
 * (SMART_ENOMEM), or holds the work back until polls make room (shm runs
 * a WR only while its ring has room for the completion): polled one at a
 * time, every completion comes, in order, none lost or repeated.      */

#define CS_N 24

void case_cq_small(const struct smart_conf_env *env)
{
	struct smart_tp_qp_attr attr = { .max_send_wr = 32 };
	uint8_t cb[SMART_TP_BLOB_MAX], pb[SMART_TP_BLOB_MAX];
	size_t cl = sizeof(cb), pl = sizeof(pb);
	struct smart_tp_wr w[CS_N];
	struct smart_tp_wc wc[2];
	struct smart_tp_responder *resp = NULL;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	uint64_t deadline, *loc;
	int got, r, i, rc;
	struct fx f;

	fx_open(&f, env);
	CHECK_OK(f.ops->cq_create(f.idom, 4, 0, &cq));
	rc = f.ops->qp_create(f.idom, cq, &attr, &qp);
	if (rc == SMART_ENOMEM) {
		printf("   %s refuses a QP its CQ cannot hold\n", f.ops->name);
		f.ops->cq_destroy(cq);
		fx_close(&f);
		return;
	}
	CHECK_OK(rc);
	CHECK_OK(f.ops->qp_blob(qp, cb, &cl));
	CHECK_OK(f.ops->accept(f.rdom, f.region, cb, cl, pb, &pl, &resp));
	CHECK_OK(f.ops->qp_connect(qp, f.remote, pb, pl));
	loc = (uint64_t *)f.laddr;
	for (i = 0; i < CS_N; i++)
		w[i] = wr_make(&f.t, SMART_TP_READ, 700 + (uint64_t)i,
			       8 * (uint64_t)i, &loc[i], 8, CONF_SIG);
	CHECK_OK(f.ops->post(qp, w, CS_N));
	deadline = now_ns() + CONF_WAIT_NS;
	for (got = 0; got < CS_N;) {
		wc[1] = (struct smart_tp_wc){ .wr_id = 0xdead, .status = 99 };
		r = f.ops->poll(cq, wc, 1);
		CHECK_GE(r, 0);
		CHECK_LE(r, 1);
		CHECK_MSG(wc[1].wr_id == 0xdead, "poll wrote beyond max 1");
		if (r)
			CHECK_WC(wc[0], 700 + (uint64_t)got, SMART_TP_WC_OK);
		got += r;
		CHECK_MSG(got >= CS_N || now_ns() < deadline,
			  "only %d of %d completions (a CQ of 4)", got, CS_N);
	}
	expect_quiet(f.ops, cq);
	f.ops->qp_destroy(qp);
	f.ops->responder_destroy(resp);
	f.ops->cq_destroy(cq);
	fx_close(&f);
}
