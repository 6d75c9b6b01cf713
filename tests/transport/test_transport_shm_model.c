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
#include <string.h>

#include "transport/conformance.h"

int main(int argc, char **argv)
{
	const char *spec = getenv("SMART_NIC_MODEL");
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.nic_model = spec && *spec ? spec : "default",
	};

	if (argc < 2 || strncmp(argv[1], "--list", 6))
		printf("RNIC model spec: %s\n", cfg.nic_model);
	return smart_conformance_run_shm(&cfg, argc > 1 ? argv[1] : NULL);
}
