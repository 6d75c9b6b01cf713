/*
 * Conformance case device_memory: rule 7 of src/transport/transport.h.
 * A region given device memory (dm_attach) serves a second range, zeroed,
 * addressed from 0 with a key of its own, where READ, WRITE, CAS and FAA
 * behave as on the region and leave the region alone; bounds and keys are
 * checked as for the region (rule 5).  Skipped, saying so, where the
 * device has no device memory (rxe; docs/transport.md).
 *
 * Everything is checked through the initiator's own READs: device memory
 * is on the NIC, the test cannot look at it directly.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "suite.h"

#define DM_CASE_LEN (64u << 10) /* or what the device has, if less */

/* The device memory to ask for: DM_CASE_LEN or the device's, in 4 KiB. */
static size_t dm_case_len(const struct smart_conf_env *env)
{
	struct smart_tp_domain *d;
	struct smart_tp_caps caps = { 0 };

	CHECK_OK(dom_open(env, 1, &d));
	env->ops->query_caps(d, &caps);
	env->ops->domain_close(d);
	if (caps.max_dm < 4096)
		return 0;
	return caps.max_dm < DM_CASE_LEN ? caps.max_dm / 4096 * 4096 :
					   DM_CASE_LEN;
}

/* A WR that must fail with a remote access error, nothing else done. */
static void dm_refused(struct fx *f, struct smart_tp_wr w, const char *what)
{
	struct smart_tp_wc wc;
	struct conn c;

	printf("   refused: %s\n", what);
	conn_open(f, NULL, 16, 8, 0, &c);
	w.flags |= CONF_SIG;
	CHECK_OK(f->ops->post(c.qp, &w, 1));
	wait_wcs(f->ops, c.cq, &wc, 1);
	CHECK_WC(wc, w.wr_id, SMART_TP_WC_REM_ACCESS);
	CHECK_EQ(f->ops->qp_in_error(c.qp), 1);
	conn_close(&c);
}

/* Attaching: refused past the device's size and a second time, with
 * nothing changed; then the remote sees the length and a key of its own. */
static void dm_attach_rules(const struct smart_conf_env *env, size_t len,
			    struct fx *f)
{
	struct smart_tp_caps caps = { 0 };
	struct fx g;

	CHECK_OK(dom_open(env, 1, &g.rdom));
	env->ops->query_caps(g.rdom, &caps);
	env->ops->domain_close(g.rdom);
	CHECK_EQ(fx_open_dm(&g, env, (size_t)caps.max_dm + 4096), SMART_ENOMEM);
	CHECK_OK(fx_open_dm(f, env, len));
	CHECK_U64_EQ(f->region->dm_len, len);
	CHECK_EQ(f->ops->dm_attach(f->rdom, f->region, len), SMART_EINVAL);
	CHECK_U64_EQ(f->region->dm_len, len);
	CHECK_U64_EQ(f->dm.rlen, len);
	CHECK(f->dm.rkey != f->t.rkey);
}

void case_device_memory(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("device_memory");
	size_t len = dm_case_len(env), i;
	uint8_t *loc, *pat;
	uint64_t *w8, region0;
	struct fx f;
	struct conn c;

	if (!len)
		test_skip("the device has no device memory (caps.max_dm 0)");
	dm_attach_rules(env, len, &f);
	conn_open(&f, NULL, 64, 32, 0, &c);
	loc = f.laddr;
	pat = f.laddr + (128u << 10);
	w8 = (uint64_t *)(f.laddr + (200u << 10));
	rword_set(&f, 0, UINT64_C(0x0123456789abcdef));
	region0 = rword(&f, 0);

	/* zeroed at attach */
	memset(loc, 0xee, len);
	run1(&c, wr_make(&f.dm, SMART_TP_READ, 1, 0, loc, (uint32_t)len, 0));
	for (i = 0; i < len; i++)
		CHECK_MSG(!loc[i], "device memory byte %zu is %u, not 0", i,
			  loc[i]);

	/* WRITE then READ back, whole and in pieces at odd places */
	rng_fill(&rng, pat, len);
	run1(&c, wr_make(&f.dm, SMART_TP_WRITE, 2, 0, pat, (uint32_t)len, 0));
	memset(loc, 0, len);
	run1(&c, wr_make(&f.dm, SMART_TP_READ, 3, 0, loc, (uint32_t)len, 0));
	CHECK_MEM_EQ(loc, pat, len, "device memory after a WRITE");
	memset(loc, 0, 64);
	run1(&c, wr_make(&f.dm, SMART_TP_READ, 4, len - 13, loc, 13, 0));
	CHECK_MEM_EQ(loc, pat + len - 13, 13, "the last 13 bytes");

	/* CAS and FAA on a word of it, old values returned */
	memcpy(&w8[1], pat + 64, 8);
	run1(&c, wr_atomic(&f.dm, SMART_TP_CAS, 5, 64, &w8[0], w8[1], 7, 0));
	CHECK_U64_EQ(w8[0], w8[1]);
	run1(&c, wr_atomic(&f.dm, SMART_TP_CAS, 6, 64, &w8[0], 8, 9, 0));
	CHECK_U64_EQ(w8[0], 7); /* failed: compare was 8 */
	run1(&c, wr_atomic(&f.dm, SMART_TP_FAA, 7, 64, &w8[0], 5, 0, 0));
	CHECK_U64_EQ(w8[0], 7);
	run1(&c, wr_make(&f.dm, SMART_TP_READ, 8, 64, &w8[2], 8, 0));
	CHECK_U64_EQ(w8[2], 12);
	run1(&c, wr_atomic(&f.dm, SMART_TP_FAA, 9, len - 8, &w8[0], 1, 0, 0));
	memcpy(&w8[1], pat + len - 8, 8);
	CHECK_U64_EQ(w8[0], w8[1]);

	/* the region kept its own bytes */
	CHECK_U64_EQ(rword(&f, 0), region0);
	CHECK_U64_EQ(rword(&f, 64), 0);
	conn_close(&c);

	/* bounds and keys */
	dm_refused(&f, wr_make(&f.dm, SMART_TP_READ, 10, len - 8, loc, 16, 0),
		   "a READ across the end");
	dm_refused(&f, wr_atomic(&f.dm, SMART_TP_FAA, 11, len, &w8[0], 1, 0, 0),
		   "an FAA just past the end");
	{
		struct conf_target wrong = f.dm;

		wrong.rkey = f.t.rkey; /* device address, region's key */
		dm_refused(&f, wr_make(&wrong, SMART_TP_READ, 12, 0, loc, 8, 0),
			   "the region's key on device memory");
	}
	conn_open(&f, NULL, 16, 8, 0, &c);
	run1(&c, wr_make(&f.dm, SMART_TP_READ, 13, 64, &w8[2], 8, 0));
	CHECK_U64_EQ(w8[2], 12); /* nothing refused changed it */
	conn_close(&c);
	printf("   %zu bytes of device memory checked\n", len);
	fx_close(&f);
}
