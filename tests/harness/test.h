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
 * which ctest reports as skipped, printing the reason.  An argument on the
 * command line runs only the cases whose name contains it.  sleep_ms()
 * and test_now_ms() are the tests' clock.
 */
#ifndef SMART_TEST_H
#define SMART_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smart/status.h"

struct test_case {
	const char *name;
	void (*fn)(void);
};

#define TEST_FAIL(...)                                                       \
	do {                                                                 \
		fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);        \
		fprintf(stderr, __VA_ARGS__);                                \
		fprintf(stderr, "\n");                                       \
		exit(1);                                                     \
	} while (0)

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond))                                                 \
			TEST_FAIL("%s", #cond);                              \
	} while (0)

#define CHECK_MSG(cond, ...)                                                 \
	do {                                                                 \
		if (!(cond))                                                 \
			TEST_FAIL(__VA_ARGS__);                              \
	} while (0)

#define CHECK_OP_(a, op, b)                                                  \
	do {                                                                 \
		int64_t va_ = (int64_t)(a), vb_ = (int64_t)(b);              \
		if (!(va_ op vb_))                                           \
			TEST_FAIL("%s %s %s (%" PRId64 " vs %" PRId64 ")",   \
				  #a, #op, #b, va_, vb_);                    \
	} while (0)

#define CHECK_EQ(a, b) CHECK_OP_(a, ==, b)
#define CHECK_NE(a, b) CHECK_OP_(a, !=, b)
#define CHECK_LT(a, b) CHECK_OP_(a, <, b)
#define CHECK_LE(a, b) CHECK_OP_(a, <=, b)
#define CHECK_GT(a, b) CHECK_OP_(a, >, b)
#define CHECK_GE(a, b) CHECK_OP_(a, >=, b)

#define CHECK_U64_EQ(a, b)                                                   \
	do {                                                                 \
		uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);           \
		if (va_ != vb_)                                              \
			TEST_FAIL("%s == %s (0x%" PRIx64 " vs 0x%" PRIx64 ")", \
				  #a, #b, va_, vb_);                         \
	} while (0)

#define CHECK_STR_EQ(a, b)                                                   \
	do {                                                                 \
		const char *sa_ = (a), *sb_ = (b);                           \
		if (!sa_ || !sb_ || strcmp(sa_, sb_))                        \
			TEST_FAIL("%s == %s (\"%s\" vs \"%s\")", #a, #b,     \
				  sa_ ? sa_ : "(null)", sb_ ? sb_ : "(null)"); \
	} while (0)

/* CHECK_OK(expr): expr must return 0; prints the SMART_E* name otherwise. */
#define CHECK_OK(expr)                                                       \
	do {                                                                 \
		int rc_ = (expr);                                            \
		if (rc_ != 0)                                                \
			TEST_FAIL("%s returned %d (%s)", #expr, rc_,         \
				  smart_status_name(rc_));                   \
	} while (0)

/* Sleep the whole time, signals or not. */
static inline void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Monotonic milliseconds, for measuring (never for ordering events). */
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

static inline int test_main(int argc, char **argv,
			    const struct test_case *cases)
{
	int ran = 0;

	for (const struct test_case *c = cases; c->name; c++) {
		if (argc > 1 && !strstr(c->name, argv[1]))
			continue;
		printf("== %s\n", c->name);
		fflush(stdout);
		c->fn();
		ran++;
	}
	printf("%d cases passed\n", ran);
	return ran ? 0 : 1;
}

#endif
