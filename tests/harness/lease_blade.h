/*
 * A blade with a short lease in this test process, and client ctxs that
 * join it (the test's children included: they connect over loopback like
 * any client), for the tests of liveness: leases, and the structures'
 * recovery from dead clients.  Header only; the secret file is made by the
 * test (smartd_proc.h's secret_file) before any ctx.
 *
 * Time on the lease protocol's own clock (lb_mark, lb_periods_since): a
 * bound the protocol states in leases and renewal periods ("fenced within
 * lease_ms plus a renewal period") is asserted in the renewals the
 * observer's keeper did, plus one period for every period the threads
 * that had to run waited for a CPU (tests/harness/sched.h), not in
 * wall-clock ms: a loaded machine slows the keeper and the test alike,
 * and a late keeper counts fewer periods, never more.
 */
#ifndef SMART_TEST_LEASE_BLADE_H
#define SMART_TEST_LEASE_BLADE_H

#include <string.h>

#include "harness/sched.h"
#include "harness/test.h"
#include "smart/smart.h"

#define LB_SECRET "lease-test-secret-0123"

/* A blade of size bytes, lease_ms, blade id `id`. */
static inline smart_blade_t *lb_blade_start_id(uint64_t size, unsigned lease_ms,
					       uint16_t id)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;

	smart_blade_config_init(&cfg);
	cfg.id = id;
	cfg.size = size;
	cfg.chunk_size = 64 << 10;
	cfg.listen = "127.0.0.1:0";
	cfg.secret = LB_SECRET;
	cfg.secret_len = strlen(LB_SECRET);
	cfg.lease_ms = lease_ms;
	cfg.hugepages = 0;
	CHECK_OK(smart_blade_create(&cfg, &b));
	return b;
}

static inline smart_blade_t *lb_blade_start(uint64_t size, unsigned lease_ms)
{
	return lb_blade_start_id(size, lease_ms, 0);
}

static inline smart_ctx_t *lb_ctx_open(const char *addr,
				       const char *secret_path, uint16_t *blade)
{
	smart_opts_t *o;
	smart_ctx_t *ctx;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "secret_file", secret_path));
	CHECK_OK(smart_opts_set(o, "buf_pool", "4M"));
	CHECK_OK(smart_opts_set(o, "log_level", "error"));
	CHECK_OK(smart_ctx_create(o, &ctx));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_connect(ctx, addr, blade));
	return ctx;
}

static inline uint64_t lb_now_ms(void)
{
	return smart_now_ns() / 1000000;
}

/* A moment: the renewals ctx's keeper had done, and the ns the calling
 * thread (self_ns) and every thread of this process (all_ns) had waited
 * for a CPU. */
struct lb_mark {
	uint64_t renewals, self_ns, all_ns;
};

static inline void lb_mark(smart_ctx_t *ctx, struct lb_mark *m)
{
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot(ctx, &st));
	m->renewals = st.lease_renewals;
	m->self_ns = sched_wait_ns(getpid(), gettid());
	m->all_ns = sched_wait_all_ns(getpid());
}

/* ns (a difference of two waits; a thread that ended takes its share out
 * of a sum) in whole periods, rounded up: a wait shorter than a period
 * may still have cost one. */
static inline uint64_t lb_periods_of(uint64_t now_ns, uint64_t then_ns,
				     unsigned period_ms)
{
	uint64_t w = now_ns > then_ns ? now_ns - then_ns : 0,
		 p = period_ms * 1000000ull;

	return (w + p - 1) / p;
}

/* Renewal periods of ctx's keeper since m0; *waited: the periods the
 * threads that had to run waited for a CPU meanwhile, this thread's
 * (all 0) or every thread's of this process (all 1). */
static inline uint64_t lb_periods_since(smart_ctx_t *ctx,
					const struct lb_mark *m0, int all,
					unsigned period_ms, uint64_t *waited)
{
	struct lb_mark m;

	lb_mark(ctx, &m);
	*waited = all ? lb_periods_of(m.all_ns, m0->all_ns, period_ms) :
			lb_periods_of(m.self_ns, m0->self_ns, period_ms);
	return m.renewals - m0->renewals;
}

#endif
