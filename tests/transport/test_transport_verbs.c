/*
 * The transport conformance suite (conformance.c) run on the verbs
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

#include "transport/conformance.c"

static int have_rdma_device(void)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);

	if (l)
		ibv_free_device_list(l);
	return l && n > 0;
}

int main(int argc, char **argv)
{
	const char *scale = getenv("SMART_CONF_SCALE");
	struct smart_conf_env env = {
		.ops = smart_tp_find("verbs"),
		.flags = SMART_CONF_ISOLATE,
		.scale_pct = scale ? (unsigned)atoi(scale) : 10,
		.case_timeout_s = 300,
	};

	if (!env.ops)
		test_skip("the verbs transport is not built (libibverbs-dev)");
	if (!have_rdma_device())
		test_skip("no RDMA device on this host; `make test` runs this "
			  "suite inside the Soft-RoCE VM (tests/vm)");
	return smart_conformance_run(&env, argc > 1 ? argv[1] : NULL);
}
