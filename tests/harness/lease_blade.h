/*
 * A blade with a short lease in this test process, and client ctxs that
 * join it (the test's children included: they connect over loopback like
 * any client), for the tests of liveness: leases, and the structures'
 * recovery from dead clients.  Header only; the secret file is made by the
 * test (smartd_proc.h's secret_file) before any ctx.
 */
#ifndef SMART_TEST_LEASE_BLADE_H
#define SMART_TEST_LEASE_BLADE_H

#include <string.h>

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

#endif
