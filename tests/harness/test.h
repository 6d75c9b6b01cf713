/*
 * A tiny test harness (header only): value-printing checks, skips, and a
 * runner for the cases of one test binary.
 *
 *   static void test_foo(void) { CHECK_EQ(1 + 1, 2); }
 *   int main(int argc, char **argv)
 *   { return test_main(argc, argv, (struct test_case[]){
 *           { "foo", test_foo }, { 0 } }); }
 *
 * A failed check prints both values with file:line and exits 1 (the case
 * stops at once: no cascade of follow-up failures).  test_skip() exits 77,
 * which ctest reports as skipped, printing the reason.  The command line:
 *   (nothing)     every case, in the table's order;
 *   PART          the cases whose name contains PART (for people);
 *   =NAME         the case named NAME exactly (what ctest runs: each case
 *                 is its own ctest entry, so a failed case hides none);
 * When more than one case is selected, each runs in a process of its own
 * (a fork of this one, before any case has started a thread), so that a
 * failed or skipped case stops only itself: the run ends with how many
 * passed, were skipped and failed, and exits 1 if any failed, 77 if all
 * were skipped.  (In one process, the first skip used to end the run and
 * hide every case after it.)  One selected case runs in this process, as
 * ctest runs it and as a debugger wants it.
 *   --list        the case names, one a line;
 *   --list-labels the same with " stress" after each stress case: what
 *                 the build reads to register the cases
 *                 (cmake/test-cases.cmake).
 * A selection matching no case fails (exit 1), so a renamed case is found.
 * sleep_ms() and test_now_ms() are the tests' clock.
 *
 * Stress cases: a file whose main() holds heavy workloads (many threads or
 * processes, seconds of CPU) names them before its first #include:
 *   #define TEST_STRESS_CASES "smallbank", "tatp"
 * ctest labels them stress instead of the suite's kind (ctest -L unit is
 * the quick run) and starts them first.
 *
 * Child processes: test_main_children() also takes a table of child roles
 * { "name", fn }; test_spawn() starts one in a fresh image of the test
 * binary (fork, then exec of /proc/self/exe "--child" name args...).  Why not a plain
 * fork: the parent has threads (a blade's, a ctx's keeper), and a fork
 * copies whatever lock one of them held at that instant.  GCC 12's
 * libasan takes no allocator locks around fork, so a child of the ASan
 * build that allocated could wait forever on a lock its parent's keeper
 * held (seen: test_epoch dead_reader hung 6 runs in 60).  Between fork
 * and exec the child calls only async-signal-safe functions.
 */
#ifndef SMART_TEST_H
#define SMART_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "smart/status.h"

struct test_case {
	const char *name;
	void (*fn)(void);
};

/* A child role a case starts with test_spawn(). */
struct test_child {
	const char *name;
	void (*fn)(char **args);
};

#define TEST_SPAWN_ARGS 16

#define TEST_FAIL(...)                                                         \
	do {                                                                   \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);          \
		fprintf(stderr, __VA_ARGS__);                                  \
		fprintf(stderr, "\n");                                         \
		exit(1);                                                       \
	} while (0)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			TEST_FAIL("%s", #cond);                                \
	} while (0)

#define CHECK_MSG(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond))                                                   \
			TEST_FAIL(__VA_ARGS__);                                \
	} while (0)

#define CHECK_OP_(a, op, b)                                                    \
	do {                                                                   \
		int64_t va_ = (int64_t)(a), vb_ = (int64_t)(b);                \
		if (!(va_ op vb_))                                             \
			TEST_FAIL("%s %s %s (%" PRId64 " vs %" PRId64 ")", #a, \
				  #op, #b, va_, vb_);                          \
	} while (0)

#define CHECK_EQ(a, b) CHECK_OP_(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP_(a, !=, b)
#define CHECK_LT(a, b) CHECK_OP_(a, <, b)
#define CHECK_LE(a, b) CHECK_OP_(a, <=, b)
#define CHECK_GT(a, b) CHECK_OP_(a, >, b)
#define CHECK_GE(a, b) CHECK_OP_(a, >=, b)

#define CHECK_U64_EQ(a, b)                                                     \
	do {                                                                   \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);             \
		if (va_ != vb_)                                                \
			TEST_FAIL("%s == %s (0x%" PRIx64 " vs 0x%" PRIx64 ")", \
				  #a, #b, va_, vb_);                           \
	} while (0)

#define CHECK_STR_EQ(a, b)                                                     \
	do {                                                                   \
		const char *sa_ = (a), *sb_ = (b);                             \
		if (!sa_ || !sb_ || strcmp(sa_, sb_))                          \
			TEST_FAIL("%s == %s (\"%s\" vs \"%s\")", #a, #b,       \
				  sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); \
	} while (0)

/* CHECK_OK(expr): expr must return 0; prints the SMART_E* name otherwise. */
#define CHECK_OK(expr)                                                         \
	do {                                                                   \
		int rc_ = (expr);                                              \
		if (rc_ != 0)                                                  \
			TEST_FAIL("%s returned %d (%s)", #expr, rc_,           \
				  smart_status_name(rc_));                     \
	} while (0)

/* Sleep the whole time, signals or not. */
static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Monotonic milliseconds, for measuring (never for ordering events). */
/* The integer in environment variable name when it is within lo..hi,
 * else dflt (unset, not a number, out of range). */
static inline int test_env_int(const char *name, int lo, int hi, int dflt)
{
	const char *e = getenv(name);
	char *end;
	long v;

	if (!e || !*e)
		return dflt;
	v = strtol(e, &end, 10);
	return !*end && v >= lo && v <= hi ? (int)v : dflt;
}

static inline double test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline void test_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	fflush(stdout);
	exit(77);
}

/* Start child role `name` with the NULL-ended string args (at most
 * TEST_SPAWN_ARGS) in a fresh image of this binary; returns its pid (or
 * -1).  File descriptors without FD_CLOEXEC stay open in it: a pipe's end
 * goes over as its number.  The child is killed if this thread exits. */
static inline pid_t test_spawn(const char *name, const char *const *args)
{
	const char *argv[TEST_SPAWN_ARGS + 4] = { "test-child", "--child",
						  name };
	int n = 3;
	pid_t pid, parent;

	for (; args && *args; args++) {
		if (n == TEST_SPAWN_ARGS + 3)
			TEST_FAIL("test_spawn %s: too many arguments", name);
		argv[n++] = *args;
	}
	argv[n] = NULL;
	fflush(NULL);
	parent = getpid();
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1); /* died before the signal was set */
		execv("/proc/self/exe", (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The child side of test_spawn(): run the role; it ends the process. */
static inline int test_child_run(char **argv, const struct test_child *children)
{
	for (const struct test_child *c = children; c && c->name; c++)
		if (!strcmp(c->name, argv[2])) {
			c->fn(argv + 3);
			fflush(NULL);
			_exit(0);
		}
	fprintf(stderr, "no child role \"%s\"\n", argv[2]);
	return 2;
}

/* If this process was started as a child role, run it (which ends the
 * process).  A main() that arms a guard or makes files before its cases
 * calls this first, so that its children do neither. */
static inline void test_children(int argc, char **argv,
				 const struct test_child *children)
{
	if (argc > 2 && !strcmp(argv[1], "--child"))
		exit(test_child_run(argv, children));
}

/* Does the command-line selection sel (NULL: none) pick case name?
 * "=NAME" picks NAME alone, anything else the names containing it. */
static inline int test_selects(const char *sel, const char *name)
{
	if (!sel || !*sel)
		return 1;
	return sel[0] == '=' ? !strcmp(sel + 1, name) : !!strstr(name, sel);
}

/* The file's TEST_STRESS_CASES (NULL-ended), checked against the table:
 * a stress name that is no case fails the listing, and so the build. */
static inline const char *const *test_stress(const struct test_case *cases)
{
#ifdef TEST_STRESS_CASES
	static const char *const stress[] = { TEST_STRESS_CASES, NULL };

	for (const char *const *s = stress; *s; s++) {
		const struct test_case *c = cases;

		while (c->name && strcmp(c->name, *s))
			c++;
		if (!c->name)
			TEST_FAIL("TEST_STRESS_CASES: no case \"%s\"", *s);
	}
	return stress;
#else
	static const char *const none[] = { NULL };

	(void)cases;
	return none;
#endif
}

static inline int test_in(const char *const *names, const char *name)
{
	for (; *names; names++)
		if (!strcmp(*names, name))
			return 1;
	return 0;
}

/* --list / --list-labels: print the cases; 1 when argv asked for it. */
static inline int test_list(int argc, char **argv,
			    const struct test_case *cases)
{
	int labels = argc > 1 && !strcmp(argv[1], "--list-labels");
	const char *const *stress;

	if (argc < 2 || (!labels && strcmp(argv[1], "--list")))
		return 0;
	stress = test_stress(cases);
	for (const struct test_case *c = cases; c->name; c++)
		printf("%s%s\n", c->name,
		       labels && test_in(stress, c->name) ? " stress" : "");
	fflush(stdout);
	return 1;
}

/* Secret files: test_secret_file() makes one from a mkstemp template
 * (mode 0600, holding s) and removes it when the process that made it
 * exits, a failed check's exit(1) included (a failing case skips its
 * own cleanup: mutant runs left dozens in /tmp).  Only the maker removes
 * it (a child started by fork alone inherits the handler), and only the
 * file it made (device, inode and change time: the name may be reused
 * after an explicit unlink, and the inode number with it).  At most TEST_SECRETS per process.  tmpl may be
 * path itself. */
#define TEST_SECRETS 8

struct test_secret {
	char path[96];
	dev_t dev;
	ino_t ino;
	struct timespec ctime; /* an inode number is reused at once */
};

static struct {
	struct test_secret f[TEST_SECRETS];
	int n;
	pid_t maker;
} test_secrets;

static inline void test_secrets_remove(void)
{
	struct stat st;

	if (getpid() != test_secrets.maker)
		return;
	for (int i = 0; i < test_secrets.n; i++) {
		struct test_secret *f = &test_secrets.f[i];

		if (!stat(f->path, &st) && st.st_dev == f->dev &&
		    st.st_ino == f->ino &&
		    st.st_ctim.tv_sec == f->ctime.tv_sec &&
		    st.st_ctim.tv_nsec == f->ctime.tv_nsec)
			unlink(f->path);
	}
	test_secrets.n = 0;
}

static inline void test_secret_file(char *path, size_t len, const char *tmpl,
				    const char *s)
{
	struct test_secret *f;
	struct stat st;
	int fd;

	if (strlen(tmpl) >= len || strlen(tmpl) >= sizeof(f->path))
		TEST_FAIL("secret file template %s: too long", tmpl);
	if (path != tmpl) /* the template may be path itself */
		memcpy(path, tmpl, strlen(tmpl) + 1);
	if (test_secrets.n == TEST_SECRETS)
		TEST_FAIL("more than %d secret files", TEST_SECRETS);
	fd = mkstemp(path);
	if (fd < 0)
		TEST_FAIL("mkstemp(%s): %s", path, strerror(errno));
	/* the change time after the write: what the file keeps */
	if (fchmod(fd, 0600) || write(fd, s, strlen(s)) != (ssize_t)strlen(s) ||
	    fstat(fd, &st))
		TEST_FAIL("secret file %s: %s", path, strerror(errno));
	close(fd);
	if (test_secrets.maker != getpid()) { /* first, or a forked child */
		test_secrets.maker = getpid();
		test_secrets.n = 0;
		atexit(test_secrets_remove);
	}
	f = &test_secrets.f[test_secrets.n++];
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->ctime = st.st_ctim;
}

/* Case c in a process of its own: 0 passed, 77 skipped, else failed.
 * exit(), not _exit(): the case's files and leak checks are the child's
 * at-exit work, as they are a single case's. */
static inline int test_case_forked(const struct test_case *c)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		TEST_FAIL("fork for case %s: %s", c->name, strerror(errno));
	if (pid == 0) {
		c->fn();
		fflush(NULL);
		exit(0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			TEST_FAIL("waitpid for case %s: %s", c->name,
				  strerror(errno));
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	printf("   case %s: killed by signal %d\n", c->name, WTERMSIG(st));
	return 1;
}

static inline int test_main_children(int argc, char **argv,
				     const struct test_case *cases,
				     const struct test_child *children)
{
	const char *sel = argc > 1 ? argv[1] : NULL;
	int ran = 0, picked = 0, skipped = 0, failed = 0;

	test_children(argc, argv, children);
	if (test_list(argc, argv, cases))
		return 0;
	for (const struct test_case *c = cases; c->name; c++)
		picked += test_selects(sel, c->name);
	for (const struct test_case *c = cases; c->name; c++) {
		int rc;

		if (!test_selects(sel, c->name))
			continue;
		printf("== %s\n", c->name);
		fflush(stdout);
		ran++;
		if (picked == 1) {
			c->fn();
			continue;
		}
		rc = test_case_forked(c);
		if (rc == 77) {
			skipped++;
		} else if (rc) {
			failed++;
			printf("FAILED: %s (exit status %d)\n", c->name, rc);
		}
	}
	if (!ran) {
		fprintf(stderr, "no case matches \"%s\"\n", sel ? sel : "");
		return 1;
	}
	if (picked == 1) {
		printf("1 cases passed\n");
		return 0;
	}
	printf("%d cases passed, %d skipped, %d failed\n",
	       ran - skipped - failed, skipped, failed);
	return failed ? 1 : skipped == ran ? 77 : 0;
}

/* 1 where a test may assert a bound on elapsed time (protocol periods
 * plus measured scheduling), 0 in a sanitizer build: its instrumented
 * code runs several times slower, so such a bound there measures the
 * sanitizer; the case still runs, prints its figure and asserts all the
 * rest, and the plain build (`make test`) asserts the bound. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_TIMED 0
#else
#define TEST_TIMED 1
#endif

/* A case that leaks on purpose (an object its user never frees, the
 * scenario it tests): what is allocated between test_leak_begin() and
 * test_leak_end() is no leak to LeakSanitizer, nor what only those
 * allocations reach.  Nothing without ASan. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
static inline void test_leak_begin(void)
{
	__lsan_disable();
}
static inline void test_leak_end(void)
{
	__lsan_enable();
}
#else
static inline void test_leak_begin(void)
{
}
static inline void test_leak_end(void)
{
}
#endif

static inline int test_main(int argc, char **argv,
			    const struct test_case *cases)
{
	return test_main_children(argc, argv, cases, NULL);
}

#endif
