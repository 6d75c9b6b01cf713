/*
 * The conformance suite's runner: the table of cases, in a fixed order,
 * and smart_conformance_run(), which runs the cases matching a filter
 * (tests/harness/test.h's selection: PART, =NAME, or --list to name them),
 * each alone in a child process with a watchdog when the transport asks
 * for isolation.
 *
 * Invariants: a case that needs fork is skipped, never run, without
 * SMART_CONF_FORK; a known deviation of a device is reported as such and
 * counts neither as a pass nor as a failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* The runner                                                          */

enum { NEEDS_FORK = 1 };

struct conf_case {
	const char *name;
	void (*fn)(const struct smart_conf_env *env);
	unsigned needs;
};

static const struct conf_case conf_cases[] = {
	{ "objects", case_objects, 0 },
	{ "rw_sizes", case_rw_sizes, 0 },
	{ "atomic_basic", case_atomic_basic, 0 },
	{ "atomics_byte_order", case_atomics_byte_order, 0 },
	{ "signal_selective", case_signal_selective, 0 },
	{ "order_chain", case_order_chain, 0 },
	{ "order_long", case_order_long, 0 },
	{ "atomic_threads_w2", case_atomic_threads_w2, 0 },
	{ "atomic_threads_w4", case_atomic_threads_w4, 0 },
	{ "atomic_fork", case_atomic_fork, NEEDS_FORK },
	{ "tearing", case_tearing, 0 },
	{ "tearing_bulk", case_tearing_bulk, 0 },
	{ "errors", case_errors, 0 },
	{ "error_bad_opcode", case_error_bad_opcode, 0 },
	{ "peer_read", case_peer_read, 0 },
	{ "eagain", case_eagain, 0 },
	{ "post1", case_post1, 0 },
	{ "mr_freed", case_mr_freed, 0 },
	{ "inline_limit", case_inline_limit, 0 },
	{ "word_writes", case_word_writes, 0 },
	{ "shared_objects", case_shared_objects, 0 },
	{ "one_sided_sigstop", case_one_sided_sigstop, NEEDS_FORK },
	{ "poll_small_max", case_poll_small_max, 0 },
	{ "cq_small", case_cq_small, 0 },
	{ "device_memory", case_device_memory, 0 },
	{ "two_sided", case_two_sided, 0 },
	{ "two_sided_kind", case_two_sided_kind, 0 },
	{ "two_sided_flow", case_two_sided_flow, 0 },
	{ "two_sided_errors", case_two_sided_errors, 0 },
	{ "two_sided_blobs", case_two_sided_blobs, 0 },
	{ "two_sided_events", case_two_sided_events, 0 },
};

static void run_case(const struct smart_conf_env *env,
		     const struct conf_case *c)
{
	if (env->run_case)
		env->run_case(env, c->fn);
	else
		c->fn(env);
}

/* Run one case in a child process with a watchdog; 0 pass, 77 skip,
 * 1 fail. */
static int run_isolated(const struct smart_conf_env *env,
			const struct conf_case *c)
{
	unsigned timeout = env->case_timeout_s ? env->case_timeout_s : 60;
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		alarm(timeout);
		run_case(env, c);
		fflush(stdout);
		exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "%s: killed by signal %d%s\n", c->name,
			WTERMSIG(st),
			WTERMSIG(st) == SIGALRM ? " (case watchdog: hung)" :
						  "");
		return 1;
	}
	return WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77 ? WEXITSTATUS(st) :
							       1;
}

/* Is the case listed in env->deviations (comma separated names)? */
static int is_known_deviation(const struct smart_conf_env *env,
			      const char *name)
{
	const char *p = env->deviations;
	size_t n = strlen(name);

	if (!(env->flags & SMART_CONF_ISOLATE))
		return 0;
	while (p && *p) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

/* --list, --list-labels (tests/harness/test.h): the case names, one a
 * line (none is a stress case). */
static int is_list(const char *filter)
{
	return filter &&
	       (!strcmp(filter, "--list") || !strcmp(filter, "--list-labels"));
}

static int list_cases(void)
{
	size_t i;

	for (i = 0; i < SMART_ARRAY_SIZE(conf_cases); i++)
		printf("%s\n", conf_cases[i].name);
	fflush(stdout);
	return 0;
}

int smart_conformance_run(const struct smart_conf_env *env, const char *filter)
{
	int pass = 0, fail = 0, skip = 0, known = 0, rc;
	uint64_t t0;
	size_t i;

	if (is_list(filter))
		return list_cases();
	if (!env || !env->ops) {
		fprintf(stderr, "conformance: no transport\n");
		return 1;
	}
	for (i = 0; i < SMART_ARRAY_SIZE(conf_cases); i++) {
		const struct conf_case *c = &conf_cases[i];

		if (!test_selects(filter, c->name))
			continue;
		if ((c->needs & NEEDS_FORK) &&
		    !(env->flags & SMART_CONF_FORK)) {
			printf("== %s: SKIP (needs SMART_CONF_FORK)\n",
			       c->name);
			skip++;
			continue;
		}
		printf("== %s\n", c->name);
		t0 = now_ns();
		if (env->flags & SMART_CONF_ISOLATE) {
			rc = run_isolated(env, c);
		} else {
			run_case(env, c);
			rc = 0;
		}
		if (rc && rc != 77 && is_known_deviation(env, c->name)) {
			printf("   %s KNOWN DEVIATION of this device: %s\n",
			       c->name, env->deviation_why);
			known++;
			continue;
		}
		printf("   %s %s (%.2f s)\n", c->name,
		       rc == 0	? "ok" :
		       rc == 77 ? "skipped" :
				  "FAILED",
		       (double)(now_ns() - t0) / 1e9);
		pass += rc == 0;
		skip += rc == 77;
		fail += rc != 0 && rc != 77;
	}
	printf("conformance (%s): %d passed, %d failed, %d skipped, %d known "
	       "deviations\n",
	       env->ops->name, pass, fail, skip, known);
	fflush(stdout);
	/* nothing run is a failure; only skips or known deviations (a case
	 * selected alone, as ctest runs each) is a skip, its reason printed */
	if (fail || (!pass && !skip && !known))
		return 1;
	return pass ? 0 : 77;
}

int smart_conformance_run_shm(const struct smart_tp_cfg *client_cfg,
			      const char *filter)
{
	struct smart_conf_env env = {
		.ops = smart__tp_find("shm"),
		.client_cfg = client_cfg,
		.flags = SMART_CONF_FORK | SMART_CONF_ISOLATE,
		.scale_pct = 100,
		.case_timeout_s = 60,
	};

	if (is_list(filter))
		return list_cases();
	if (!env.ops)
		test_skip("the shm transport is not built");
	return smart_conformance_run(&env, filter);
}
