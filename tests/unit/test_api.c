/*
 * The conventions every public object keeps (docs/api.md): extensible
 * config structs (struct_size set by the init function; a larger size
 * whose unknown tail is not zero refused with SMART_EINVAL and nothing
 * done, a smaller older size given the defaults for the fields it lacks,
 * an uninitialised one refused), output structs written to the size the
 * caller's header gave (an older caller's memory past it untouched, a
 * newer caller's unknown fields zeroed), and close/stats taking (object,
 * worker, output) with NULL as documented.  Each refused config is shown
 * to have had no side effect (no root entry taken, no blade serving).
 */
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/bt.h"
#include "smart/dtx.h"
#include "smart/ht.h"
#include "smart/rpc.h"

#define BLADE_SIZE (32u << 20)

/* A caller built against a newer header: the struct and a field this
 * library does not know. */
#define NEWER(type)                                                            \
	struct {                                                               \
		type c;                                                        \
		uint64_t newer;                                                \
	}

static void test_ht_config(void)
{
	NEWER(struct smart_ht_config) n;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *t = NULL;
	uint64_t root;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	memset(&n, 0, sizeof(n));
	smart_ht_config_init(&n.c);
	CHECK_EQ(n.c.struct_size, sizeof(n.c));
	n.c.buckets = 64;
	n.c.struct_size = sizeof(n);
	n.newer = 1; /* a setting this library would ignore */
	CHECK_EQ(smart_ht_create(w, 1, 5, &n.c, &t), SMART_EINVAL);
	CHECK_OK(smart_root_get(w, 1, 5, &root));
	CHECK_EQ(root, 0); /* no side effect */
	n.newer = 0;	   /* absent: taken */
	CHECK_OK(smart_ht_create(w, 1, 5, &n.c, &t));
	CHECK_OK(smart_ht_drop(t, w));
	/* an older caller: split_chunk beyond its size takes the default
	 * (1 would be refused) */
	n.c.struct_size = offsetof(struct smart_ht_config, split_chunk);
	n.c.split_chunk = 1;
	CHECK_OK(smart_ht_create(w, 1, 6, &n.c, &t));
	CHECK_OK(smart_ht_close(t, w));
	/* open takes a config too (this process's settings) */
	CHECK_OK(smart_ht_open(w, 1, 6, &n.c, &t));
	CHECK_OK(smart_ht_close(t, w));
	CHECK_OK(smart_ht_open(w, 1, 6, NULL, &t));
	CHECK_OK(smart_ht_close(t, NULL));
	n.c.struct_size = 0; /* never initialised */
	CHECK_EQ(smart_ht_open(w, 1, 6, &n.c, &t), SMART_EINVAL);
	CHECK_EQ(smart_ht_create(w, 1, 7, &n.c, &t), SMART_EINVAL);
	CHECK_EQ(smart_ht_create_named(w, 1, "x", &n.c, &t), SMART_EINVAL);
	CHECK_OK(smart_root_get(w, 1, 7, &root));
	CHECK_EQ(root, 0);
	CHECK_OK(smart_ht_close(NULL, NULL));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_bt_config(void)
{
	NEWER(struct smart_bt_config) n;
	struct smart_bt_stats st;
	struct fixture f;
	smart_worker_t *w;
	smart_bt_t *t = NULL;
	uint64_t root;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	memset(&n, 0, sizeof(n));
	smart_bt_config_init(&n.c);
	n.c.cache_bytes = 1 << 20;
	n.c.struct_size = sizeof(n);
	n.newer = 7;
	CHECK_EQ(smart_bt_create(w, 1, 5, &n.c, &t), SMART_EINVAL);
	CHECK_EQ(smart_bt_open(w, 1, 5, &n.c, &t), SMART_EINVAL);
	CHECK_OK(smart_root_get(w, 1, 5, &root));
	CHECK_EQ(root, 0);
	/* older (a header without spec_entries and hocl: its sizeof, a
	 * multiple of the alignment): hocl beyond its size takes the
	 * default (on); key_max 0 inside it would be refused, so the fields
	 * it has are read */
	n.c.struct_size = offsetof(struct smart_bt_config, spec_entries);
	n.c.hocl = 0;
	n.c.key_max = 0;
	CHECK_EQ(smart_bt_create(w, 1, 5, &n.c, &t), SMART_EINVAL);
	n.c.key_max = 8;
	CHECK_OK(smart_bt_create(w, 1, 5, &n.c, &t));
	CHECK_EQ(smart_bt_key_max(t), 8);
	CHECK_OK(smart_bt_stats(t, NULL, &st)); /* local: w may be NULL */
	CHECK_OK(smart_bt_stats(t, w, &st));
	CHECK_EQ(smart_bt_stats(t, w, NULL), SMART_EINVAL);
	CHECK_OK(smart_bt_drop(t, w));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_dtx_config(void)
{
	static const struct smart_dtx_table tab = {
		.id = 0,
		.value_size = 8,
		.buckets = 16,
		.primary = -1,
	};
	NEWER(struct smart_dtx_config) n;
	struct smart_dtx_stats st;
	struct fixture f;
	smart_worker_t *w;
	smart_dtx_t *d = NULL;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	memset(&n, 0, sizeof(n));
	smart_dtx_config_init(&n.c);
	n.c.tables = &tab;
	n.c.ntables = 1;
	n.c.log_slots = 4;
	n.c.struct_size = sizeof(n);
	n.newer = 1;
	CHECK_EQ(smart_dtx_create(w, 1, "db", &n.c, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_open(w, 1, "db", NULL, &d), SMART_ENOENT);
	/* older (without max_writes and cache_entries: offsetof
	 * cache_entries is no sizeof, it is not a multiple of 8):
	 * cache_entries beyond its size takes the default (3 would be
	 * refused: not a power of two) */
	n.c.struct_size = offsetof(struct smart_dtx_config, max_writes);
	n.c.cache_entries = 3;
	CHECK_OK(smart_dtx_create(w, 1, "db", &n.c, &d));
	CHECK_OK(smart_dtx_stats(d, NULL, &st));
	CHECK_EQ(st.commits, 0);
	CHECK_OK(smart_dtx_close(d, w));
	CHECK_OK(smart_dtx_open(w, 1, "db", &n.c, &d));
	n.c.struct_size = 2; /* not even its own member */
	CHECK_EQ(smart_dtx_open(w, 1, "db", &n.c, &d), SMART_EINVAL);
	CHECK_OK(smart_dtx_drop(d, w));
	CHECK_OK(smart_dtx_close(NULL, NULL));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_rpc_config(void)
{
	NEWER(struct smart_rpc_config) n;
	struct smart_rpc_config lit = { SMART_RPC_CONFIG_INIT, .window = 8 };
	smart_ctx_t *ctx = fixture_ctx(NULL);
	smart_worker_t *w;
	smart_rpc_t *rpc = NULL;

	CHECK_OK(smart_worker_create(ctx, &w));
	memset(&n, 0, sizeof(n));
	smart_rpc_config_init(&n.c);
	CHECK_EQ(n.c.struct_size, sizeof(n.c));
	n.c.struct_size = sizeof(n);
	n.newer = 1;
	CHECK_EQ(smart_rpc_create(w, &n.c, &rpc), SMART_EINVAL);
	CHECK(rpc == NULL);
	n.newer = 0;
	CHECK_OK(smart_rpc_create(w, &n.c, &rpc)); /* so none was left */
	CHECK_OK(smart_rpc_destroy(rpc));
	/* older: busy_us beyond its size takes the default (2 s would be
	 * refused) */
	n.c.struct_size = offsetof(struct smart_rpc_config, busy_us);
	n.c.busy_us = 2000000;
	CHECK_OK(smart_rpc_create(w, &n.c, &rpc));
	CHECK_OK(smart_rpc_flush(rpc));
	CHECK_OK(smart_rpc_destroy(rpc));
	CHECK_OK(smart_rpc_create(w, &lit, &rpc));
	CHECK_OK(smart_rpc_destroy(rpc));
	n.c.struct_size = 0;
	CHECK_EQ(smart_rpc_create(w, &n.c, &rpc), SMART_EINVAL);
	CHECK_OK(smart_rpc_close(NULL));
	CHECK_EQ(smart_rpc_flush(NULL), SMART_EINVAL);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
}

static void test_blade_config(void)
{
	NEWER(struct smart_blade_config) n;
	struct smart_blade_stats st;
	smart_blade_t *b = NULL;

	memset(&n, 0, sizeof(n));
	fixture_blade_config(&n.c, BLADE_SIZE, 3);
	n.c.struct_size = sizeof(n);
	n.newer = 1;
	CHECK_EQ(smart_blade_create(&n.c, &b), SMART_EINVAL);
	CHECK(b == NULL);
	/* older: gid_type beyond its size takes the default */
	n.c.struct_size = offsetof(struct smart_blade_config, gid_type);
	n.c.gid_type = "no such type";
	CHECK_OK(smart_blade_create(&n.c, &b));
	CHECK_OK(smart_blade_stats(b, &st));
	CHECK_EQ(smart_blade_stats(NULL, &st), SMART_EINVAL);
	CHECK_OK(smart_blade_destroy(b));
}

/* A struct_size that is no size a header ever had: it cuts a field, so
 * that the library would take the field's first bytes from the caller
 * and the rest from its default (a pointer of two halves, a count neither
 * side chose).  Every struct's sizeof, older or newer, is a multiple of
 * its alignment, so a size that is not is refused, and nothing done. */
#define CUT(type, field, plus) ((uint32_t)(offsetof(type, field) + (plus)))

static void test_config_cut(void)
{
	static const struct smart_dtx_table tab = {
		.id = 0,
		.value_size = 8,
		.buckets = 16,
		.primary = -1,
	};
	struct smart_ht_config hc;
	struct smart_bt_config bc;
	struct smart_dtx_config dc;
	struct smart_rpc_config rc;
	struct smart_blade_config blc;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *ht = NULL;
	smart_bt_t *bt = NULL;
	smart_dtx_t *d = NULL;
	smart_rpc_t *rpc = NULL;
	smart_blade_t *b = NULL;
	uint64_t root;
	int accepted = 0;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&hc);
	hc.buckets = 64;
	hc.split_chunk = 4096;
	/* the last field's last byte, and the pointer's upper half */
	hc.struct_size = CUT(struct smart_ht_config, split_chunk, 3);
	accepted += smart_ht_create(w, 1, 5, &hc, &ht) != SMART_EINVAL;
	hc.struct_size = CUT(struct smart_ht_config, blades, 4);
	accepted += smart_ht_create_named(w, 1, "cut", &hc, &ht) !=
		    SMART_EINVAL;
	accepted += smart_ht_open(w, 1, 5, &hc, &ht) != SMART_EINVAL;
	accepted += smart_ht_open_named(w, 1, "cut", &hc, &ht) != SMART_EINVAL;
	smart_bt_config_init(&bc);
	bc.cache_bytes = 1 << 20;
	bc.struct_size = CUT(struct smart_bt_config, cache_bytes, 4);
	accepted += smart_bt_create(w, 1, 6, &bc, &bt) != SMART_EINVAL;
	accepted += smart_bt_open(w, 1, 6, &bc, &bt) != SMART_EINVAL;
	smart_dtx_config_init(&dc);
	dc.tables = &tab;
	dc.ntables = 1;
	dc.log_slots = 4;
	dc.struct_size = (uint32_t)sizeof(dc) - 1;
	accepted += smart_dtx_create(w, 1, "cut", &dc, &d) != SMART_EINVAL;
	accepted += smart_dtx_open(w, 1, "cut", &dc, &d) != SMART_EINVAL;
	smart_rpc_config_init(&rc);
	rc.struct_size = CUT(struct smart_rpc_config, busy_us, 2);
	accepted += smart_rpc_create(w, &rc, &rpc) != SMART_EINVAL;
	fixture_blade_config(&blc, BLADE_SIZE, 3);
	blc.struct_size = CUT(struct smart_blade_config, id, 1);
	accepted += smart_blade_create(&blc, &b) != SMART_EINVAL;
	printf("configs of a size that cuts a field accepted: %d of 10\n",
	       accepted);
	CHECK_EQ(accepted, 0);
	CHECK(ht == NULL && bt == NULL && d == NULL && rpc == NULL &&
	      b == NULL);
	for (unsigned i = 5; i <= 6; i++) { /* no side effect */
		CHECK_OK(smart_root_get(w, 1, i, &root));
		CHECK_EQ(root, 0);
	}
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* Blades 1 and 2's free bytes (unclaimed + pooled) once worker w is
 * destroyed (a destroyed worker gives its cached blocks back), read
 * through obs. */
static uint64_t free_after(smart_worker_t *obs, smart_worker_t *w)
{
	struct smart_alloc_usage u1, u2;

	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_alloc_usage(obs, 1, &u1));
	CHECK_OK(smart_alloc_usage(obs, 2, &u2));
	return u1.free + u2.free;
}

enum { NOSPACE_HT, NOSPACE_BT, NOSPACE_DTX };

/* Create one structure too large for the blade on a fresh worker. */
static int create_too_large(smart_worker_t *w, int kind)
{
	static const struct smart_dtx_table tabs[2] = {
		{ .id = 0, .value_size = 8, .buckets = 1u << 10, .primary = -1 },
		{ .id = 1,
		  .value_size = 4096,
		  .buckets = 1u << 16,
		  .primary = -1 },
	};
	static const uint16_t two[2] = { 1, 2 };
	struct smart_ht_config hc;
	struct smart_bt_config bc;
	struct smart_dtx_config dc;
	smart_ht_t *ht = NULL;
	smart_bt_t *bt = NULL;
	smart_dtx_t *d = NULL;
	int rc;

	switch (kind) {
	case NOSPACE_HT:
		smart_ht_config_init(&hc);
		hc.depth = 6;
		hc.buckets = 1u << 16;
		rc = smart_ht_create(w, 1, 5, &hc, &ht);
		break;
	case NOSPACE_BT:
		smart_bt_config_init(&bc);
		/* a lock table of 1 MiB on each blade: the second, of
		 * 1 MiB, has no room for its own */
		bc.blades = two;
		bc.nblades = 2;
		bc.locks = 1u << 17;
		bc.lock_memory = SMART_BT_LOCKS_HOST;
		bc.cache_bytes = 1 << 20;
		rc = smart_bt_create(w, 1, 5, &bc, &bt);
		break;
	default:
		smart_dtx_config_init(&dc);
		dc.tables = tabs;
		dc.ntables = 2;
		dc.log_slots = 4;
		rc = smart_dtx_create(w, 1, "big", &dc, &d);
		break;
	}
	CHECK(ht == NULL && bt == NULL && d == NULL);
	return rc;
}

/* A create that fails part way for want of blade memory (the first
 * subtables or tables allocated, a later one not) has no side effect:
 * every block it took is freed and no root entry is taken. */
static void test_create_nospace(void)
{
	static const char *const kinds[] = { "ht", "bt", "dtx" };
	struct fixture f;
	smart_worker_t *obs, *w;
	smart_blade_t *small;
	uint64_t before, after, root, allocs, frees;
	smart_stats_t s0, s1;
	int rc;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	small = fixture_add_blade(&f, 1u << 20, 2);
	CHECK_OK(smart_worker_create(f.ctx, &obs));
	CHECK_OK(smart_worker_create(f.ctx, &w));
	before = free_after(obs, w);
	for (int k = NOSPACE_HT; k <= NOSPACE_DTX; k++) {
		CHECK_OK(smart_stats_snapshot(f.ctx, &s0));
		CHECK_OK(smart_worker_create(f.ctx, &w));
		rc = create_too_large(w, k);
		CHECK_OK(smart_root_get(obs, 1, 5, &root));
		after = free_after(obs, w);
		CHECK_OK(smart_stats_snapshot(f.ctx, &s1));
		allocs = s1.c[SMART_STAT_ALLOCS] - s0.c[SMART_STAT_ALLOCS];
		frees = s1.c[SMART_STAT_FREES] - s0.c[SMART_STAT_FREES];
		printf("%s: %s after %llu allocations, %llu frees; free "
		       "bytes %llu, %llu before\n",
		       kinds[k], smart_status_name(rc),
		       (unsigned long long)allocs, (unsigned long long)frees,
		       (unsigned long long)after, (unsigned long long)before);
		CHECK(rc < 0);
		CHECK(allocs > 0); /* it failed part way */
		CHECK_EQ(root, 0);
		CHECK_EQ(after, before);
	}
	CHECK_OK(smart_worker_destroy(obs));
	fixture_stop(&f);
	CHECK_OK(smart_blade_destroy(small));
}

/* Length of the value after `key` in text (up to the end of line, or to
 * the closing quote after a JSON "key":"), or 0 when key is absent. */
static size_t printed_len(const char *text, const char *key, char end)
{
	const char *v = strstr(text, key);

	if (!v)
		return 0;
	v += strlen(key);
	return strcspn(v, end == '"' ? "\"" : "\n");
}

/* smart_stats_print reads a caller's snapshot: its strings are the
 * caller's bytes, unterminated in a hostile or corrupt one.  What is
 * printed of each stays inside its array (63 and 7 characters), nothing
 * read past the struct. */
static void test_stats_print_hostile(void)
{
	smart_stats_t s;
	char *text = NULL;
	size_t len = 0, tech, phase, jtech, jphase;
	FILE *f;

	memset(&s, 'A', sizeof(s));
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	CHECK_OK(smart_stats_print(&s, f));
	CHECK_OK(smart_stats_print_json(&s, f));
	CHECK(fclose(f) == 0);
	tech = printed_len(text, "techniques       ", '\n');
	phase = printed_len(text, "credit_cap       ", '\n');
	jtech = printed_len(text, "\"techniques\":\"", '"');
	jphase = printed_len(text, "\"throttle_phase\":\"", '"');
	printf("printed of techniques[64]: %zu and %zu (json) bytes, of "
	       "throttle_phase[8]: %zu (json)\n",
	       tech, jtech, jphase);
	CHECK_EQ(tech, 63);
	CHECK_EQ(jtech, 63);
	CHECK_EQ(jphase, 7);
	/* "1094795585 (AAAAAAA)": credit_cap's 'A's, then the phase */
	CHECK(phase == strlen("1094795585 (AAAAAAA)"));
	free(text);
}

/* A page whose next page is PROT_NONE: a struct placed at its end (an
 * older caller's, smaller than the library's) faults on any access past
 * its size. */
static unsigned char *guard_pages(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char *m = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(m != MAP_FAILED);
	CHECK(mprotect(m + pg, (size_t)pg, PROT_NONE) == 0);
	return m;
}

/* The last `size` bytes of the guarded page, 0xab but for the copy of
 * `from` (a config) or nothing (an output). */
static void *page_end(unsigned char *m, size_t size, const void *from)
{
	unsigned char *p = m + sysconf(_SC_PAGESIZE) - size;

	memset(m, 0xab, (size_t)sysconf(_SC_PAGESIZE));
	if (from)
		memcpy(p, from, size);
	return p;
}

/* Older callers' structs end at a guard page: a config of an older size,
 * an output of an older size; every config and output function keeps to
 * the size it was given (a read or write past it would fault). */
static void test_guard_page(void)
{
	static const struct smart_dtx_table tab = {
		.id = 0,
		.value_size = 8,
		.buckets = 16,
		.primary = -1,
	};
	unsigned char *m = guard_pages();
	struct smart_ht_config hc;
	struct smart_bt_config bc;
	struct smart_dtx_config dc;
	struct smart_rpc_config rc;
	struct smart_blade_config blc;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *ht;
	smart_bt_t *bt;
	smart_dtx_t *d;
	smart_rpc_t *rpc;
	smart_blade_t *b;
	void *p;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_ht_config_init(&hc);
	hc.struct_size = 8;
	CHECK_OK(smart_ht_create(w, 1, 5, page_end(m, 8, &hc), &ht));
	CHECK_OK(smart_ht_stats_sized(ht, w, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_ht_drop(ht, w));
	smart_bt_config_init(&bc);
	bc.cache_bytes = 1 << 20;
	bc.struct_size = offsetof(struct smart_bt_config, spec_entries);
	p = page_end(m, bc.struct_size, &bc);
	CHECK_OK(smart_bt_create(w, 1, 6, p, &bt));
	CHECK_OK(smart_bt_stats_sized(bt, w, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_bt_drop(bt, w));
	smart_dtx_config_init(&dc);
	dc.tables = &tab;
	dc.ntables = 1;
	dc.log_slots = 4;
	dc.struct_size = offsetof(struct smart_dtx_config, max_writes);
	p = page_end(m, dc.struct_size, &dc);
	CHECK_OK(smart_dtx_create(w, 1, "guard", p, &d));
	CHECK_OK(smart_dtx_stats_sized(d, w, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_dtx_drop(d, w));
	smart_rpc_config_init(&rc);
	rc.struct_size = 4;
	CHECK_OK(smart_rpc_create(w, page_end(m, 4, &rc), &rpc));
	CHECK_OK(smart_rpc_stats_sized(rpc, page_end(m, 8, NULL), 8));
	CHECK_EQ(smart_rpc_traces_sized(rpc, page_end(m, 8, NULL), 1, 8), 0);
	CHECK_OK(smart_rpc_destroy(rpc));
	CHECK_OK(smart_stats_snapshot_sized(f.ctx, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_alloc_usage_sized(w, 1, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_ctx_blade_info_sized(f.ctx, 1, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_blade_stats_sized(f.blade, page_end(m, 8, NULL), 8));
	CHECK_OK(smart_blade_usage_sized(f.blade, page_end(m, 8, NULL), 8));
	fixture_blade_config(&blc, BLADE_SIZE, 3);
	blc.struct_size = offsetof(struct smart_blade_config, gid_type);
	p = page_end(m, blc.struct_size, &blc);
	CHECK_OK(smart_blade_create(p, &b));
	CHECK_OK(smart_blade_destroy(b));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
	CHECK(munmap(m, 2 * (size_t)sysconf(_SC_PAGESIZE)) == 0);
}

/* NULL where docs/api.md §3 allows it and where it refuses it: stats of a
 * Smart-BT or Smart-DTX handle with no worker (their own counters), of a
 * Smart-HT one only with its worker (the directory is re-read); close of
 * NULL a no-op, close with no worker allowed; NULL handles refused. */
static void test_null_worker(void)
{
	static const struct smart_dtx_table tab = {
		.id = 0,
		.value_size = 8,
		.buckets = 16,
		.primary = -1,
	};
	struct smart_dtx_config dc;
	struct smart_ht_stats hs;
	struct smart_bt_stats bs;
	struct smart_dtx_stats ds;
	struct fixture f;
	smart_worker_t *w;
	smart_ht_t *ht;
	smart_bt_t *bt;
	smart_dtx_t *d;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_ht_create(w, 1, 5, NULL, &ht));
	CHECK_EQ(smart_ht_stats(ht, NULL, &hs), SMART_EINVAL);
	CHECK_EQ(smart_ht_stats(NULL, w, &hs), SMART_EINVAL);
	CHECK_OK(smart_ht_stats(ht, w, &hs));
	CHECK(hs.subtables > 0);
	CHECK_OK(smart_ht_close(ht, NULL));
	CHECK_OK(smart_bt_create(w, 1, 6, NULL, &bt));
	CHECK_OK(smart_bt_stats(bt, NULL, &bs));
	CHECK_EQ(smart_bt_stats(NULL, w, &bs), SMART_EINVAL);
	CHECK_OK(smart_bt_close(bt, w));
	CHECK_OK(smart_bt_close(NULL, w));
	smart_dtx_config_init(&dc);
	dc.tables = &tab;
	dc.ntables = 1;
	dc.log_slots = 4;
	CHECK_OK(smart_dtx_create(w, 1, "nul", &dc, &d));
	CHECK_OK(smart_dtx_stats(d, NULL, &ds));
	CHECK_EQ(smart_dtx_stats(NULL, w, &ds), SMART_EINVAL);
	CHECK_EQ(smart_dtx_stats(d, w, NULL), SMART_EINVAL);
	CHECK_OK(smart_dtx_close(d, NULL));
	CHECK_OK(smart_dtx_close(NULL, w));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* An output of `size` bytes inside a buffer of 0xab: what lies past it
 * must stay 0xab (an older caller's memory). */
static int tail_kept(const unsigned char *buf, size_t size, size_t all)
{
	for (size_t i = size; i < all; i++)
		if (buf[i] != 0xab)
			return 0;
	return 1;
}

static void test_stats_size(void)
{
	union {
		struct smart_bt_stats bt;
		struct smart_rpc_stats rpc;
		smart_stats_t st;
		unsigned char b[sizeof(smart_stats_t) + 64];
	} u;
	size_t old_bt = offsetof(struct smart_bt_stats, merges);
	size_t old_rpc = offsetof(struct smart_rpc_stats, traced);
	struct smart_bt_stats full;
	struct smart_bt_config c;
	struct fixture f;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_bt_t *t;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	smart_bt_config_init(&c);
	c.cache_bytes = 1 << 20;
	CHECK_OK(smart_bt_create(w, 1, 5, &c, &t));
	/* an older caller (src/ds's copy of the rule) */
	CHECK_OK(smart_bt_insert(t, w, "k", 1, "v", 1));
	CHECK_OK(smart_bt_stats(t, w, &full));
	memset(&u, 0xab, sizeof(u));
	CHECK_OK(smart_bt_stats_sized(t, w, &u.bt, old_bt));
	CHECK(!memcmp(&u.bt, &full, old_bt));
	CHECK(tail_kept(u.b, old_bt, sizeof(u)));
	/* a newer one: what this library does not know reads 0 */
	memset(&u, 0xab, sizeof(u));
	CHECK_OK(smart_bt_stats_sized(t, w, &u.bt, sizeof(u.bt) + 16));
	CHECK(u.b[sizeof(u.bt)] == 0 && u.b[sizeof(u.bt) + 15] == 0);
	CHECK(tail_kept(u.b, sizeof(u.bt) + 16, sizeof(u)));
	CHECK_EQ(smart_bt_stats_sized(t, w, &u.bt, 0), SMART_EINVAL);
	CHECK_OK(smart_bt_drop(t, w));
	/* src/util's copy: an endpoint's counters, the ctx's snapshot */
	CHECK_OK(smart_rpc_create(w, NULL, &rpc));
	memset(&u, 0xab, sizeof(u));
	CHECK_OK(smart_rpc_stats_sized(rpc, &u.rpc, old_rpc));
	CHECK_EQ(u.rpc.msgs_sent, 0);
	CHECK(tail_kept(u.b, old_rpc, sizeof(u)));
	CHECK_EQ(smart_rpc_stats_sized(rpc, &u.rpc, 0), SMART_EINVAL);
	CHECK_OK(smart_rpc_destroy(rpc));
	memset(&u, 0xab, sizeof(u));
	CHECK_OK(smart_stats_snapshot_sized(f.ctx, &u.st, 64));
	CHECK(tail_kept(u.b, 64, sizeof(u)));
	CHECK_OK(smart_stats_snapshot(f.ctx, &u.st));
	CHECK(u.st.c[SMART_STAT_MAX - 1] == 0 && u.st.workers == 1);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* A worker of another ctx (on the same blade) refused by every Smart-HT
 * and Smart-BT call that takes a worker, with nothing done: its leases
 * would name our locks with another id and its redo records go to
 * another area.  (Smart-DTX refuses it too: test_dtx_unlock:foreign.) */
static void test_foreign_worker(void)
{
	struct smart_ht_stats hs;
	struct smart_bt_stats bs;
	struct smart_bt_entry e[4];
	struct fixture f;
	smart_worker_t *w, *v;
	smart_ctx_t *c2;
	smart_ht_t *ht;
	smart_bt_t *bt;
	char val[16], buf[64];
	size_t n;
	int refused = 0, calls = 0;

	fixture_start(&f, BLADE_SIZE, 1, NULL);
	c2 = fixture_ctx_at(smart_blade_address(f.blade), 1);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_worker_create(c2, &v));
	CHECK_OK(smart_ht_create(w, 1, 5, NULL, &ht));
	CHECK_OK(smart_bt_create(w, 1, 6, NULL, &bt));
	CHECK_OK(smart_ht_insert(ht, w, "k", 1, "v", 1));
	CHECK_OK(smart_bt_insert(bt, w, "k", 1, "v", 1));
#define FOREIGN(call) (calls++, refused += (call) == SMART_EINVAL)
	FOREIGN(smart_ht_search(ht, v, "k", 1, val, sizeof(val), &n));
	FOREIGN(smart_ht_insert(ht, v, "j", 1, "v", 1));
	FOREIGN(smart_ht_update(ht, v, "k", 1, "w", 1));
	FOREIGN(smart_ht_upsert(ht, v, "k", 1, "w", 1));
	FOREIGN(smart_ht_delete(ht, v, "k", 1));
	FOREIGN(smart_ht_stats(ht, v, &hs));
	FOREIGN(smart_ht_sweep(ht, v));
	FOREIGN(smart_ht_drop(ht, v));
	FOREIGN(smart_ht_close(ht, v));
	FOREIGN(smart_bt_search(bt, v, "k", 1, val, sizeof(val), &n));
	FOREIGN(smart_bt_insert(bt, v, "j", 1, "v", 1));
	FOREIGN(smart_bt_update(bt, v, "k", 1, "w", 1));
	FOREIGN(smart_bt_upsert(bt, v, "k", 1, "w", 1));
	FOREIGN(smart_bt_delete(bt, v, "k", 1));
	FOREIGN(smart_bt_scan(bt, v, "a", 1, NULL, 0, e, 4, buf, sizeof(buf),
			      &n));
	FOREIGN(smart_bt_stats(bt, v, &bs));
	FOREIGN(smart_bt_drop(bt, v));
	FOREIGN(smart_bt_close(bt, v));
#undef FOREIGN
	printf("calls with a worker of another ctx refused: %d of %d\n",
	       refused, calls);
	CHECK_EQ(refused, calls);
	/* nothing done: both still hold k -> v, and close with theirs */
	CHECK_OK(smart_ht_search(ht, w, "k", 1, val, sizeof(val), &n));
	CHECK(n == 1 && val[0] == 'v');
	CHECK_OK(smart_bt_search(bt, w, "k", 1, val, sizeof(val), &n));
	CHECK(n == 1 && val[0] == 'v');
	CHECK_OK(smart_ht_drop(ht, w));
	CHECK_OK(smart_bt_drop(bt, w));
	CHECK_OK(smart_worker_destroy(v));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(c2));
	fixture_stop(&f);
}

int main(int argc, char **argv)
{
	static const struct test_case cases[] = {
		{ "ht_config", test_ht_config },
		{ "bt_config", test_bt_config },
		{ "dtx_config", test_dtx_config },
		{ "rpc_config", test_rpc_config },
		{ "blade_config", test_blade_config },
		{ "stats_size", test_stats_size },
		{ "config_cut", test_config_cut },
		{ "create_nospace", test_create_nospace },
		{ "stats_print_hostile", test_stats_print_hostile },
		{ "guard_page", test_guard_page },
		{ "null_worker", test_null_worker },
		{ "foreign_worker", test_foreign_worker },
		{ NULL, NULL },
	};

	return test_main(argc, argv, cases);
}
