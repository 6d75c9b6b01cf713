/*
 * The transport conformance suite (conformance/) run on the verbs
 * transport, over whatever RDMA device is there: rxe0 inside the test VM
 * (tests/vm/vm-run.sh), a real NIC on a real host.  On a host without any
 * RDMA device it skips, saying so; `make test` runs it inside the VM.
 *
 * Fork cases are skipped (a verbs process must not use its parent's
 * verbs objects after fork).  Soft-RoCE under qemu's software emulation
 * does ~10k ops/s, so the heavy cases are scaled down (SMART_CONF_SCALE,
 * percent, default 10).  Usage: test_transport_verbs [case-substring]
 */
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#include "harness/test.h"
#include "transport/conformance.h"

/* 1 with any RDMA device; *soft = 1 when the first one is Soft-RoCE. */
static int have_rdma_device(int *soft)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	*soft = l && n > 0 && !strncmp(ibv_get_device_name(l[0]), "rxe", 3);
	if (l)
		ibv_free_device_list(l);
	return l && n > 0;
}

/* Timeouts from the environment: Soft-RoCE under software emulation can
 * stall for tens of milliseconds, so the VM run may give it more room.
 * The device: SMART_DEVICE for initiators, SMART_DEVICE_BLADE (when set)
 * for responders, so that the two sides can sit on two devices joined by
 * a real link (tests/verbs/lossy.sh) instead of one device's loopback. */
static int open_domain(const struct smart_conf_env *env, int blade_side,
		       struct smart_tp_domain **out)
{
	const char *t = getenv("SMART_IB_TIMEOUT"),
		   *r = getenv("SMART_IB_RETRY");
	const char *bd = getenv("SMART_DEVICE_BLADE");
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.ib_timeout = t ? atoi(t) : 14,
		.ib_retry = r ? atoi(r) : 6,
		.device = blade_side && bd && *bd ? bd : getenv("SMART_DEVICE"),
	};

	return env->ops->domain_open(&cfg, out);
}

int main(int argc, char **argv)
{
	const char *scale = getenv("SMART_CONF_SCALE");
	int soft = 0;
	struct smart_conf_env env = {
		.ops = smart__tp_find("verbs"),
		.open_domain = open_domain,
		.flags = SMART_CONF_ISOLATE,
		.scale_pct = scale ? (unsigned)atoi(scale) : 10,
		.case_timeout_s = 300,
	};

	if (!env.ops)
		test_skip("the verbs transport is not built (libibverbs-dev)");
	if (!have_rdma_device(&soft))
		test_skip("no RDMA device on this host; `make test` runs this "
			  "suite inside the Soft-RoCE VM (tests/vm)");
	/* Measured on rxe (Linux 6.1): a READ racing a WRITE can return an
	 * aligned 8-byte word that mixes two written values (rxe copies with
	 * the kernel's memcpy), which breaks rule 4; real RC NICs move
	 * aligned words whole. */
	if (soft) {
		env.deviations = "tearing,tearing_bulk";
		env.deviation_why = "Soft-RoCE (rxe) copies payloads with "
				    "memcpy: aligned words can tear";
	}
	return smart_conformance_run(&env, argc > 1 ? argv[1] : NULL);
}
