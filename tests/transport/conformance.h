/*
 * The transport conformance suite: one set of cases written only against
 * src/transport/transport.h (its header comment, rules 1-6, is the
 * contract checked here), run unchanged on every transport.
 *
 * How a transport uses it: a tests/transport/test_transport_<name>.c file
 * includes this header, fills a struct smart_conf_env and returns
 * smart_conformance_run(&env, argc > 1 ? argv[1] : NULL); the shm runners
 * (plain, RNIC model, adversarial) differ only in their client domains'
 * configuration and call smart_conformance_run_shm().  The suite is
 * the folder conformance/ (one file per case group), which the build
 * makes a library linked into every test of tests/transport.
 *
 * Invariants: the suite touches the transport only through env->ops and
 * env->open_domain; every case opens and closes its own domains, so cases
 * are independent and may run in any order or alone (filter); every wait
 * is bounded, so a broken transport fails a case instead of hanging it.
 */
#ifndef SMART_TESTS_CONFORMANCE_H
#define SMART_TESTS_CONFORMANCE_H

#include "transport/transport.h"

/* The process model of a transport (env->flags). */
enum {
	/* A child forked after the parent opened domains may open its own
	 * domains and use them against the parent's regions (shm: yes; verbs:
	 * yes when the kernel/provider supports fork).  Cases that need a
	 * second process are skipped without it. */
	SMART_CONF_FORK = 1 << 0,
	/* Run each case in its own child process, with a watchdog, so that
	 * one failure or crash does not hide the result of the other cases. */
	SMART_CONF_ISOLATE = 1 << 1,
};

struct smart_conf_env {
	const struct smart_tp_ops *ops;
	/* Open a domain: blade_side 1 for the responder (memory blade), 0 for
	 * an initiator (client).  NULL: ops->domain_open with a default cfg. */
	int (*open_domain)(const struct smart_conf_env *env, int blade_side,
			   struct smart_tp_domain **out);
	void *arg; /* for open_domain */
	/* Without open_domain: the configuration of initiator (client)
	 * domains, NULL = defaults.  Responder (blade) domains always get the
	 * defaults: a blade's own NIC plays no part in one-sided ops. */
	const struct smart_tp_cfg *client_cfg;
	unsigned flags;		 /* SMART_CONF_* */
	unsigned scale_pct;	 /* op counts of the heavy cases; 0 = 100 */
	unsigned case_timeout_s; /* watchdog per isolated case; 0 = 60 */
	/* Cases the device is known to fail (comma-separated names) and why:
	 * they still run, and a failure is reported as a known deviation of
	 * the device instead of failing the suite (needs ISOLATE). */
	const char *deviations;
	const char *deviation_why;
	/* How a case runs: NULL = fn(env) on the calling thread; the sim
	 * transport runs it as a simulated thread (docs/sim.md). */
	void (*run_case)(const struct smart_conf_env *env,
			 void (*fn)(const struct smart_conf_env *env));
};

/*
 * Run the cases filter selects (NULL or "" = all; "=NAME" the case NAME;
 * other text the names containing it; "--list" or "--list-labels" prints
 * the names and runs nothing: tests/harness/test.h's command line).  Prints one
 * "== name" line per case, the seed of randomised cases and a summary.
 * Returns a process exit code: 0 all run cases passed, 1 a case failed or
 * no case matched, 77 every matching case was skipped.  Without
 * SMART_CONF_ISOLATE the first failing check exits the process with 1.
 */
int smart_conformance_run(const struct smart_conf_env *env, const char *filter);

/* The suite on the shm transport, forked and isolated (shm regions are
 * memfds a child can attach), client domains opened with client_cfg (NULL
 * = defaults): the shm runners' one main.  Exits 77 when shm is not built. */
int smart_conformance_run_shm(const struct smart_tp_cfg *client_cfg,
			      const char *filter);

#endif
