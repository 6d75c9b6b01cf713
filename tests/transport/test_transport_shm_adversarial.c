/*
 * The transport conformance suite (conformance/) run on the shm transport
 * in adversarial mode (docs/transport.md "Adversarial mode"): words copied
 * in a random order with pauses, READs executed again after later WRs,
 * completions held back and reordered across QPs.  The mode stays within
 * the contract, so every case must pass unchanged.
 *
 * Initiator domains get the mode; the responder (blade) domain does not:
 * it executes nothing.  The spec is the defaults ("on") unless
 * SMART_SHM_ADVERSARIAL names another one, e.g. "seed=7,pause_pct=50" to
 * replay or harden a run.
 * Usage: test_transport_shm_adversarial [case-name-substring]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/conformance.h"

int main(int argc, char **argv)
{
	const char *spec = getenv("SMART_SHM_ADVERSARIAL");
	struct smart_tp_cfg cfg = {
		.gid_index = -1,
		.shm_adversarial = spec && *spec ? spec : "on",
	};

	if (argc < 2 || strncmp(argv[1], "--list", 6))
		printf("shm adversarial spec: %s\n", cfg.shm_adversarial);
	return smart_conformance_run_shm(&cfg, argc > 1 ? argv[1] : NULL);
}
