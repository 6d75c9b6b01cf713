/*
 * The transport conformance suite (conformance/) run on the shm
 * transport with the RNIC model on (docs/nic-model.md): delayed
 * completions, a rate-limited device, doorbell spinlocks and WQE-cache
 * misses must not change any rule of the contract.
 *
 * Initiator domains get the model; the responder (blade) domain does not,
 * as a blade's own NIC plays no part in one-sided ops.  The spec is the
 * documented defaults unless SMART_NIC_MODEL names another one, e.g.
 * "doorbells=1,wqe_cache=4" to run the suite under heavy contention.
 * Usage: test_transport_shm_model [case-name-substring]
 */
#include <stdio.h>
#include <stdlib.h>

#include "harness/test.h"
#include "transport/conformance.h"

static int model_open(const struct smart_conf_env *env, int blade_side,
		      struct smart_tp_domain **out)
{
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.nic_model = blade_side ? NULL : (const char *)env->arg,
	};

	return env->ops->domain_open(&cfg, out);
}

int main(int argc, char **argv)
{
	const char *spec = getenv("SMART_NIC_MODEL");
	struct smart_conf_env env = {
		.ops = smart_tp_find("shm"),
		.open_domain = model_open,
		.arg = (void *)(spec && *spec ? spec : "default"),
		.flags = SMART_CONF_FORK | SMART_CONF_ISOLATE,
		.scale_pct = 100,
		.case_timeout_s = 60,
	};

	if (!env.ops)
		test_skip("the shm transport is not built");
	printf("RNIC model spec: %s\n", (const char *)env.arg);
	return smart_conformance_run(&env, argc > 1 ? argv[1] : NULL);
}
