/*
 * Test fixture: an embedded blade on 127.0.0.1 (any port) plus a ctx
 * connected to it, using only the public API.  Header only.
 * SMART_TEST_TRANSPORT (shm by default; verbs inside the test VM) picks the
 * transport of both the blade and the ctx; SMART_SHM_ADVERSARIAL, when set,
 * is the ctx's shm_adversarial option (docs/transport.md), so that a
 * structure's tests can be run on the hostile transport as they are.
 */
#ifndef SMART_TEST_BLADE_FIXTURE_H
#define SMART_TEST_BLADE_FIXTURE_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/test.h"
#include "smart/smart.h"

#define FIXTURE_SECRET "test-secret-0123456789"

struct fixture {
	smart_blade_t *blade;
	smart_ctx_t *ctx;
	uint16_t id;
};

/* 1 when SMART_SHM_ADVERSARIAL turns shm's adversarial mode on (set,
 * not empty, not "off": the library's reading of its shm_adversarial
 * option).  The library refuses the mode with the RNIC model, so a case
 * may not ask for the model then (fixture_opts skips a case that asks
 * anyway; one with other parts runs them and leaves out its model's). */
static inline int fixture_adversarial(void)
{
	const char *a = getenv("SMART_SHM_ADVERSARIAL");

	return a && a[0] && strcmp(a, "off");
}

/* A client's options: defaults, an 8 MiB buffer pool, the transport of
 * SMART_TEST_TRANSPORT and the adversarial mode of SMART_SHM_ADVERSARIAL
 * when set, then the "key=value" pairs kv (NULL-ended); a case whose kv
 * asks for the RNIC model skips under SMART_SHM_ADVERSARIAL. */
static inline smart_opts_t *fixture_opts(const char *const *kv)
{
	smart_opts_t *o;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "buf_pool", "8M"));
	if (getenv("SMART_TEST_TRANSPORT"))
		CHECK_OK(smart_opts_set(o, "transport",
					getenv("SMART_TEST_TRANSPORT")));
	if (getenv("SMART_SHM_ADVERSARIAL"))
		CHECK_OK(smart_opts_set(o, "shm_adversarial",
					getenv("SMART_SHM_ADVERSARIAL")));
	for (; kv && kv[0]; kv += 2) {
		/* the library refuses the two together (the model times
		 * WRs, the adversary reorders them): the case is not run */
		if (fixture_adversarial() && !strcmp(kv[0], "nic_model") &&
		    kv[1][0])
			test_skip("the case runs on the RNIC model, which "
				  "SMART_SHM_ADVERSARIAL cannot be combined "
				  "with");
		CHECK_OK(smart_opts_set(o, kv[0], kv[1]));
	}
	return o;
}

/* A ctx of fixture_opts(kv): a client of a blade of the tests' own
 * (kv names its secret_file) or a messaging peer. */
static inline smart_ctx_t *fixture_ctx(const char *const *kv)
{
	smart_opts_t *o = fixture_opts(kv);
	smart_ctx_t *ctx;

	CHECK_OK(smart_ctx_create(o, &ctx));
	smart_opts_destroy(o);
	return ctx;
}

/* A fixture blade's config: loopback, any port, the fixture's secret,
 * 64 KiB chunks, the transport of SMART_TEST_TRANSPORT and (verbs) the
 * device of SMART_TEST_BLADE_DEVICE when set (the ctx's is the first
 * device: tests/verbs/lossy.sh puts the blade on the other end of a link). */
static inline void fixture_blade_config(struct smart_blade_config *cfg,
					uint64_t size, uint16_t id)
{
	smart_blade_config_init(cfg);
	cfg->size = size;
	cfg->listen = "127.0.0.1:0";
	cfg->id = id;
	cfg->secret = FIXTURE_SECRET;
	cfg->secret_len = sizeof(FIXTURE_SECRET) - 1;
	cfg->chunk_size = 64 << 10;
	cfg->transport = getenv("SMART_TEST_TRANSPORT");
	cfg->device = getenv("SMART_TEST_BLADE_DEVICE");
}

/* Start a blade of size bytes with blade id `id` and dm_size bytes of
 * device memory (-1: the transport's default) and connect a ctx whose
 * options are defaults plus the given "key=value" pairs (NULL-ended). */
static inline void fixture_start_dm(struct fixture *f, uint64_t size,
				    uint16_t id, int64_t dm_size,
				    const char *const *kv)
{
	struct smart_blade_config cfg;
	smart_opts_t *o;
	char secret_path[] = "/tmp/smart-test-secret-XXXXXX";
	int fd;

	fixture_blade_config(&cfg, size, id);
	cfg.dm_size = dm_size;
	CHECK_OK(smart_blade_create(&cfg, &f->blade));

	fd = mkstemp(secret_path);
	CHECK(fd >= 0);
	CHECK(write(fd, FIXTURE_SECRET, sizeof(FIXTURE_SECRET) - 1) ==
	      (ssize_t)(sizeof(FIXTURE_SECRET) - 1));
	close(fd);
	o = fixture_opts(kv);
	CHECK_OK(smart_opts_set(o, "secret_file", secret_path));
	CHECK_OK(smart_ctx_create(o, &f->ctx));
	smart_opts_destroy(o);
	unlink(secret_path);
	CHECK_OK(smart_ctx_connect(f->ctx, smart_blade_address(f->blade),
				   &f->id));
	CHECK_EQ(f->id, id);
}

static inline void fixture_start(struct fixture *f, uint64_t size, uint16_t id,
				 const char *const *kv)
{
	fixture_start_dm(f, size, id, -1, kv);
}

/* Another blade of size bytes and blade id `id`, joined to the fixture's
 * ctx (a structure over several blades); destroy it after the fixture. */
static inline smart_blade_t *fixture_add_blade(struct fixture *f, uint64_t size,
					       uint16_t id)
{
	struct smart_blade_config cfg;
	smart_blade_t *b;
	uint16_t got;

	fixture_blade_config(&cfg, size, id);
	CHECK_OK(smart_blade_create(&cfg, &b));
	CHECK_OK(smart_ctx_connect(f->ctx, smart_blade_address(b), &got));
	CHECK_EQ(got, id);
	return b;
}

/* A ctx with the fixture's options plus kv (NULL: none) and its secret,
 * connected to the blade at addr; the blade's id in *id. */
static inline smart_ctx_t *
fixture_ctx_kv_at(const char *addr, const char *const *kv, uint16_t *id)
{
	smart_opts_t *o = fixture_opts(kv);
	smart_ctx_t *c;

	CHECK_OK(smart_ctx_create(o, &c));
	smart_opts_destroy(o);
	CHECK_OK(smart_ctx_set_secret(c, FIXTURE_SECRET,
				      sizeof(FIXTURE_SECRET) - 1));
	CHECK_OK(smart_ctx_connect(c, addr, id));
	return c;
}

/* Another ctx (another client: its own lease) on the fixture's blade at
 * addr, whose id must be `blade`: what a child process of a test opens. */
static inline smart_ctx_t *fixture_ctx_at(const char *addr, uint16_t blade)
{
	uint16_t id;
	smart_ctx_t *c = fixture_ctx_kv_at(addr, NULL, &id);

	CHECK_EQ(id, blade);
	return c;
}

static inline void fixture_stop(struct fixture *f)
{
	CHECK_OK(smart_ctx_destroy(f->ctx));
	smart_blade_destroy(f->blade);
}

#endif
