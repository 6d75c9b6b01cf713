/*
 * The verbs transport on a device without atomics, played by a real one:
 * domains are opened normally and then have their atomics switched off,
 * as domain open does for a device with atomic_cap NONE or one that fails
 * the byte-order self-test.  That happens before any QP or region exists,
 * so they are made the way such a device gets them (no remote atomic
 * rights on QPs and served regions).
 *
 * 1. Both sides without atomics: the conformance cases that hold without
 *    them must pass: atomics_byte_order (CAS and FAA refused with
 *    SMART_ENOTSUP at post, nothing posted, READ still served), rw_sizes,
 *    inline_limit.
 * 2. Only the responder (blade) without: the initiator may post a CAS, but
 *    the responder's NIC must refuse it (an error completion, never a
 *    success) and leave the word alone; READ/WRITE on a new QP work.
 *
 * Like test_transport_verbs it skips without an RDMA device; the VM runs
 * it (tests/verbs/in-vm.sh).  Usage: test_transport_verbs_noatomics (its
 * --list names no case: one fixed sequence, one ctest entry)
 */
#include <infiniband/verbs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness/test.h"
#include "transport/conformance/suite.h"
#include "transport/verbs/verbs.h"

/* which sides lose their atomics: bit 0 the initiator, bit 1 the blade */
static unsigned off_sides;

static int open_domain(const struct smart_conf_env *env, int blade_side,
		       struct smart_tp_domain **out)
{
	const char *t = getenv("SMART_IB_TIMEOUT"),
		   *r = getenv("SMART_IB_RETRY");
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.ib_timeout = t ? atoi(t) : 14,
		.ib_retry = r ? atoi(r) : 6,
		.device = getenv("SMART_DEVICE"),
	};
	int rc = env->ops->domain_open(&cfg, out);

	if (!rc && (off_sides & (blade_side ? 2u : 1u)))
		(*out)->atomics = 0;
	return rc;
}

/* The responder has no atomics, the initiator does. */
static void blade_without(const struct smart_conf_env *env)
{
	const size_t off = 8192;
	struct smart_tp_caps caps;
	struct smart_tp_wc wc;
	uint64_t *loc;
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	memset(&caps, 0, sizeof(caps));
	f.ops->query_caps(f.idom, &caps);
	CHECK_EQ(caps.atomics, 1);
	f.ops->query_caps(f.rdom, &caps);
	CHECK_EQ(caps.atomics, 0);
	conn_open(&f, NULL, 16, 8, 0, &c);
	loc = (uint64_t *)f.laddr;
	rword_set(&f, off, 7);
	CHECK_OK(f.ops->post(c.qp,
			     &(struct smart_tp_wr){ .wr_id = 1,
						    .remote = f.t.base + off,
						    .local = loc,
						    .len = 8,
						    .lkey = f.t.lkey,
						    .rkey = f.t.rkey,
						    .opcode = SMART_TP_CAS,
						    .flags = CONF_SIG,
						    .compare_add = 7,
						    .swap = 8 },
			     1));
	wait_wcs(f.ops, c.cq, &wc, 1);
	CHECK_MSG(wc.status != SMART_TP_WC_OK, "a CAS on a blade without "
					       "atomics succeeded");
	printf("   CAS to a blade without atomics: %s\n", wc_name(wc.status));
	CHECK_U64_EQ(rword(&f, off), 7);
	conn_close(&c);
	/* READ and WRITE still work, on a fresh QP */
	conn_open(&f, NULL, 16, 8, 0, &c);
	loc[0] = 0x1122334455667788;
	run1(&c, wr_make(&f.t, SMART_TP_WRITE, 2, off, &loc[0], 8, 0));
	run1(&c, wr_make(&f.t, SMART_TP_READ, 3, off, &loc[1], 8, 0));
	CHECK_U64_EQ(loc[1], 0x1122334455667788);
	conn_close(&c);
	fx_close(&f);
}

int main(int argc, char **argv)
{
	static const char *const cases[] = { "rw_sizes", "atomics_byte_order",
					     "inline_limit" };
	struct smart_conf_env env = {
		.ops = smart__tp_find("verbs"),
		.open_domain = open_domain,
		.flags = SMART_CONF_ISOLATE,
		.scale_pct = 10,
		.case_timeout_s = 300,
	};
	struct ibv_device **l;
	size_t i;
	int n = 0, rc = 0;

	/* one fixed sequence, no case to pick: one ctest entry */
	if (argc > 1 && !strncmp(argv[1], "--list", 6))
		return 0;
	if (!env.ops)
		test_skip("the verbs transport is not built (libibverbs-dev)");
	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	if (!l || n == 0)
		test_skip("no RDMA device on this host; `make test` runs this "
			  "inside the Soft-RoCE VM (tests/vm)");
	off_sides = 3;
	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		if (smart_conformance_run(&env, cases[i]))
			rc = 1;
	off_sides = 2;
	printf("== blade_without_atomics\n");
	fflush(stdout);
	blade_without(&env);
	printf("   blade_without_atomics ok\n");
	return rc;
}
