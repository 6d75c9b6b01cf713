/*
 * The transport conformance suite (conformance/) run on the sim transport
 * (docs/sim.md): each case, in its own child process, runs as a simulated
 * thread of a fresh engine, so its domains (responder and initiator) are
 * opened in virtual time and every post and poll is a sync point of the
 * engine.  The contract must hold unchanged: sim is shm with its RNIC
 * model in virtual time.
 *
 * Cases whose real threads or forked processes post (atomic_threads_*,
 * atomic_fork, tearing, shared_objects) are known deviations: the sim
 * transport aborts a data-path call from a thread that is not simulated,
 * by design (a real thread would inject real time into the model).
 * Usage: test_transport_sim [case-name-substring]
 */
#include <stdio.h>
#include <stdlib.h>

#include "transport/conformance.h"
#include "util/sim.h"

struct sim_case {
	const struct smart_conf_env *env;
	void (*fn)(const struct smart_conf_env *env);
};

static void sim_case_fiber(void *arg)
{
	struct sim_case *c = arg;

	c->fn(c->env);
}

static void sim_run_case(const struct smart_conf_env *env,
			 void (*fn)(const struct smart_conf_env *env))
{
	struct smart__sim_cfg cfg = { .seed = 1,
				      .sync_ns = 100,
				      .jitter_ns = 50 };
	struct sim_case c = { env, fn };
	struct smart__sim *s;

	if (smart__sim_create(&cfg, &s) ||
	    smart__sim_spawn(s, sim_case_fiber, &c, 1000000000) ||
	    smart__sim_run(s)) {
		fprintf(stderr, "sim engine failed\n");
		exit(1);
	}
	smart__sim_destroy(s);
}

int main(int argc, char **argv)
{
	struct smart_conf_env env = {
		.ops = smart__tp_find("sim"),
		.flags = SMART_CONF_FORK | SMART_CONF_ISOLATE,
		.scale_pct = 100,
		.case_timeout_s = 60,
		.deviations = "atomic_threads_w2,atomic_threads_w4,"
			      "atomic_fork,tearing,tearing_bulk,shared_objects",
		.deviation_why = "real threads post; the sim transport "
				 "accepts only simulated threads",
		.run_case = sim_run_case,
	};

	if (!env.ops)
		return 77;
	return smart_conformance_run(&env, argc > 1 ? argv[1] : NULL);
}
