/*
 * Unit tests of the queries an application asks before it relies on
 * anything: smart_version() (the loaded library's version against the
 * headers') and smart_ctx_query() (what the ctx's transport can do), whose
 * field_mask must keep a caller with an older, smaller struct safe: only
 * the fields asked for are written.
 */
#include <string.h>

#include "harness/test.h"
#include "smart/smart.h"

static void test_version(void)
{
	unsigned major = 99, minor = 99, patch = 99;
	char want[32];
	const char *s;

	s = smart_version(&major, &minor, &patch);
	CHECK_STR_EQ(s, SMART_VERSION_STRING);
	CHECK_EQ(major, SMART_VERSION_MAJOR);
	CHECK_EQ(minor, SMART_VERSION_MINOR);
	CHECK_EQ(patch, SMART_VERSION_PATCH);
	snprintf(want, sizeof(want), "%u.%u.%u", major, minor, patch);
	CHECK_STR_EQ(s, want);
	/* each pointer may be NULL */
	CHECK_STR_EQ(smart_version(NULL, NULL, NULL), SMART_VERSION_STRING);
	minor = 99;
	CHECK(smart_version(NULL, &minor, NULL) == s);
	CHECK_EQ(minor, SMART_VERSION_MINOR);
}

/* A shm ctx with these options (NULL value: none), no blade needed. */
static smart_ctx_t *api_ctx(const char *key, const char *val)
{
	smart_opts_t *o;
	smart_ctx_t *ctx = NULL;

	CHECK_OK(smart_opts_create_defaults(&o));
	CHECK_OK(smart_opts_set(o, "transport", "shm"));
	CHECK_OK(smart_opts_set(o, "qp_mode", "per-thread-db"));
	if (key)
		CHECK_OK(smart_opts_set(o, key, val));
	CHECK_OK(smart_ctx_create(o, &ctx));
	smart_opts_destroy(o);
	return ctx;
}

static void test_ctx_query(void)
{
	smart_ctx_t *ctx = api_ctx(NULL, NULL);
	smart_ctx_attr_t a;

	memset(&a, 0, sizeof(a));
	a.field_mask = SMART_CTX_ATTR_ALL;
	CHECK_OK(smart_ctx_query(ctx, &a));
	CHECK_EQ(a.field_mask, (uint64_t)SMART_CTX_ATTR_ALL);
	CHECK_STR_EQ(a.transport, "shm");
	CHECK_STR_EQ(a.transport, smart_ctx_transport(ctx));
	/* plain shm has no per-QP doorbells: per-thread-db runs as
	 * per-thread, and the caps say why */
	CHECK_STR_EQ(a.qp_mode, "per-thread");
	CHECK_STR_EQ(a.qp_mode, smart_ctx_qp_mode(ctx));
	CHECK_EQ(a.caps,
		 (uint64_t)(SMART_CTX_CAP_ATOMICS | SMART_CTX_CAP_TWO_SIDED |
			    SMART_CTX_CAP_DEVICE_MEMORY |
			    SMART_CTX_CAP_DM_EMULATED |
			    SMART_CTX_CAP_SAME_HOST));
	CHECK(a.max_inline > 0);
	CHECK(a.max_send_wr > 0);
	CHECK(a.max_recv_wr > 0);
	CHECK(a.max_msg > 0);
	CHECK(a.max_dm > 0);
	printf("shm: caps %#llx inline %llu send_wr %llu recv_wr %llu "
	       "msg %llu dm %llu\n",
	       (unsigned long long)a.caps, (unsigned long long)a.max_inline,
	       (unsigned long long)a.max_send_wr,
	       (unsigned long long)a.max_recv_wr, (unsigned long long)a.max_msg,
	       (unsigned long long)a.max_dm);

	/* errors write nothing */
	CHECK_EQ(smart_ctx_query(NULL, &a), SMART_EINVAL);
	CHECK_EQ(smart_ctx_query(ctx, NULL), SMART_EINVAL);
	CHECK_EQ(a.field_mask, (uint64_t)SMART_CTX_ATTR_ALL);
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* The RNIC model gives thread domains and a NIC: the mode asked for
 * holds, and the caps say so. */
static void test_ctx_query_model(void)
{
	smart_ctx_t *ctx = api_ctx("nic_model", "default");
	smart_ctx_attr_t a;

	memset(&a, 0, sizeof(a));
	a.field_mask = SMART_CTX_ATTR_QP_MODE | SMART_CTX_ATTR_CAPS;
	CHECK_OK(smart_ctx_query(ctx, &a));
	CHECK_STR_EQ(a.qp_mode, "per-thread-db");
	CHECK(a.caps & SMART_CTX_CAP_THREAD_DOMAINS);
	CHECK(a.caps & SMART_CTX_CAP_NIC);
	CHECK_OK(smart_ctx_destroy(ctx));
}

/* A caller compiled against older headers asks only for the fields it
 * has: nothing else of its memory is written.  Here the struct is
 * poisoned and two fields asked for; every other byte must keep the
 * poison.  A bit the library does not know (a later release's field)
 * comes back cleared, its memory untouched. */
static void test_ctx_query_mask(void)
{
	smart_ctx_t *ctx = api_ctx(NULL, NULL);
	smart_ctx_attr_t a, poison;
	const uint64_t later = 1ull << 40;
	uint64_t filled;
	size_t untouched = 0, i;

	memset(&poison, 0xa5, sizeof(poison));
	a = poison;
	a.field_mask = SMART_CTX_ATTR_TRANSPORT | SMART_CTX_ATTR_MAX_SEND_WR |
		       later;
	CHECK_OK(smart_ctx_query(ctx, &a));
	filled = a.field_mask;
	CHECK_STR_EQ(a.transport, "shm");
	CHECK(a.max_send_wr > 0 && a.max_send_wr != poison.max_send_wr);
	/* every field not asked for keeps its poison */
	a.field_mask = poison.field_mask;
	a.transport = poison.transport;
	a.max_send_wr = poison.max_send_wr;
	for (i = 0; i < sizeof(a); i++)
		untouched += ((unsigned char *)&a)[i] == 0xa5;
	printf("bytes of the caller's struct not asked for and written: %zu "
	       "of %zu\n",
	       sizeof(a) - untouched, sizeof(a));
	CHECK_EQ(untouched, sizeof(a));
	CHECK_EQ(filled, (uint64_t)(SMART_CTX_ATTR_TRANSPORT |
				    SMART_CTX_ATTR_MAX_SEND_WR));
	CHECK_OK(smart_ctx_destroy(ctx));
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "version", test_version },
		{ "ctx_query", test_ctx_query },
		{ "ctx_query_model", test_ctx_query_model },
		{ "ctx_query_mask", test_ctx_query_mask },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
