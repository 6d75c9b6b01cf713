/*
 * The transport conformance suite (conformance/) run on the shm
 * transport.  shm regions are memfds, so a forked child can attach them
 * (the fd is passed or inherited): both fork cases run.  Each case runs in
 * its own child process so one failure does not hide the others.
 *
 * Usage: test_transport_shm [case-name-substring]
 */
#include "harness/test.h"
#include "transport/conformance.h"

int main(int argc, char **argv)
{
	struct smart_conf_env env = {
		.ops = smart_tp_find("shm"),
		.flags = SMART_CONF_FORK | SMART_CONF_ISOLATE,
		.scale_pct = 100,
		.case_timeout_s = 60,
	};

	if (!env.ops)
		test_skip("the shm transport is not built");
	return smart_conformance_run(&env, argc > 1 ? argv[1] : NULL);
}
