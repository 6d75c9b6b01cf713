/*
 * Remote memory that comes back (docs/design.md §5.1): the blade-wide free
 * lists, what a destroyed worker gives back, runs of chunks, splitting a
 * bigger class when the blade has no chunk left, usage as any client and
 * the blade itself see it, and a concurrent soak in which every block
 * carries a tag that is checked when it is freed (a block handed out
 * twice would have its tag overwritten).  Device memory: runs handed out
 * and given back, ops on it, its bounds, a double free refused.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "services/alloc_int.h"
#include "harness/blade_fixture.h"
#include "harness/test.h"
#include "smart/hook.h"
#include "smart/smart.h"
#include "wire/services.h"

#define CHUNK (64 << 10)

static uint64_t stat_of(smart_ctx_t *ctx, enum smart_stat id)
{
	smart_stats_t st;

	CHECK_OK(smart_stats_snapshot(ctx, &st));
	return st.c[id];
}

static void usage(smart_worker_t *w, uint16_t blade,
		  struct smart_alloc_usage *u)
{
	CHECK_OK(smart_alloc_usage(w, blade, u));
	CHECK_EQ(u->free, u->unclaimed + u->pooled);
	CHECK_EQ(u->reserved + u->unclaimed + u->pooled + u->cached + u->used,
		 u->size);
}

/* Claimed and not given back: in use or held in a cache. */
static uint64_t held(const struct smart_alloc_usage *u)
{
	return u->used + u->cached;
}

static void test_given_back(void)
{
	struct fixture f;
	struct smart_alloc_usage u0, u;
	smart_worker_t *a, *b;
	static smart_gaddr_t g[3000];
	uint64_t claimed;
	int i;

	fixture_start(&f, 16 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &a));
	usage(a, f.id, &u0);
	CHECK_EQ(u0.reserved, CHUNK);
	CHECK_EQ(u0.clients, 1);
	CHECK_EQ(held(&u0), 0);
	for (i = 0; i < 2000; i++)
		CHECK_OK(smart_alloc(a, f.id, 64, &g[i]));
	for (; i < 3000; i++)
		CHECK_OK(smart_alloc(a, f.id, 1000, &g[i]));
	usage(a, f.id, &u);
	CHECK_GT(held(&u), 2000 * 64 + 1000 * 1024 - 1);
	for (i = 0; i < 3000; i++)
		CHECK_OK(smart_free(a, g[i], i < 2000 ? 64 : 1000));
	/* a destroyed worker gives its caches and bump regions back */
	CHECK_OK(smart_worker_destroy(a));
	CHECK_OK(smart_worker_create(f.ctx, &b));
	usage(b, f.id, &u);
	CHECK_EQ(held(&u), 0);
	CHECK_GT(u.pooled, 0);
	CHECK_EQ(u.free, u0.free);
	/* and another worker takes it from the blade, claiming nothing */
	claimed = stat_of(f.ctx, SMART_STAT_CHUNKS_CLAIMED);
	for (i = 0; i < 2000; i++)
		CHECK_OK(smart_alloc(b, f.id, 64, &g[i]));
	for (; i < 3000; i++)
		CHECK_OK(smart_alloc(b, f.id, 1000, &g[i]));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_CHUNKS_CLAIMED), claimed);
	for (i = 0; i < 3000; i++)
		CHECK_OK(smart_free(b, g[i], i < 2000 ? 64 : 1000));
	CHECK_OK(smart_worker_destroy(b));
	fixture_stop(&f);
}

/* Two tasks freeing into one class cache (RA_CACHE blocks): A fills it
 * and its next free spills a batch; at the hook "alloc.spill.pushing"
 * (the batch out of the cache, the push's syncs next) A waits while B
 * fills the cache again exactly (SMART_FREE_BATCH frees).  When A's spill
 * returns the cache is full once more, and A's block must still find
 * room (a spill again), never go past the cache nor be dropped: after the
 * worker is destroyed every byte is free. */
struct refill {
	smart_gaddr_t g[RA_CACHE + 1 + SMART_FREE_BATCH];
	int a_spilling, b_done, hooked;
};

static int refill_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct refill *r = arg;

	if (strcmp(point, "alloc.spill.pushing") || r->hooked)
		return 0;
	r->hooked = 1; /* A's first spill only */
	r->a_spilling = 1;
	while (!r->b_done)
		smart_task_yield(w);
	return 0;
}

static void refill_a(smart_worker_t *w, void *p)
{
	struct refill *r = p;
	int i;

	for (i = 0; i < RA_CACHE + 1; i++)
		CHECK_OK(smart_free(w, r->g[i], 64));
}

static void refill_b(smart_worker_t *w, void *p)
{
	struct refill *r = p;
	int i;

	while (!r->a_spilling)
		smart_task_yield(w);
	for (i = 0; i < SMART_FREE_BATCH; i++) /* no spill: room for all */
		CHECK_OK(smart_free(w, r->g[RA_CACHE + 1 + i], 64));
	r->b_done = 1;
}

static void test_spill_refill(void)
{
	static struct refill r;
	struct smart_alloc_usage u0, u;
	struct fixture f;
	smart_worker_t *w;
	size_t i;

	fixture_start(&f, 16 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	usage(w, f.id, &u0);
	for (i = 0; i < SMART_ARRAY_SIZE(r.g); i++)
		CHECK_OK(smart_alloc(w, f.id, 64, &r.g[i]));
	CHECK_OK(smart_ctx_set_hook(f.ctx, refill_hook, &r));
	CHECK_OK(smart_task_spawn(w, refill_a, &r));
	CHECK_OK(smart_task_spawn(w, refill_b, &r));
	CHECK_OK(smart_worker_run(w));
	CHECK_OK(smart_ctx_set_hook(f.ctx, NULL, NULL));
	CHECK(r.hooked && r.b_done);
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_worker_create(f.ctx, &w));
	usage(w, f.id, &u);
	CHECK_EQ(held(&u), 0);
	CHECK_EQ(u.free, u0.free); /* no block dropped */
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_runs(void)
{
	struct fixture f;
	struct smart_alloc_usage u;
	smart_worker_t *w;
	smart_gaddr_t x, y, z;
	uint64_t claimed;

	fixture_start(&f, 4 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_alloc(w, f.id, 3 * CHUNK, &x));
	CHECK_OK(smart_free(w, x, 3 * CHUNK));
	usage(w, f.id, &u);
	CHECK_EQ(u.pooled, 3 * CHUNK);
	claimed = stat_of(f.ctx, SMART_STAT_CHUNKS_CLAIMED);
	/* two of the three come back; the third goes back as a run */
	CHECK_OK(smart_alloc(w, f.id, 2 * CHUNK, &y));
	CHECK_U64_EQ(y, x);
	usage(w, f.id, &u);
	CHECK_EQ(u.pooled, CHUNK);
	CHECK_OK(smart_alloc(w, f.id, CHUNK, &z));
	CHECK_U64_EQ(z, smart_gaddr_add(x, 2 * CHUNK));
	CHECK_EQ(stat_of(f.ctx, SMART_STAT_CHUNKS_CLAIMED), claimed);
	CHECK_OK(smart_free(w, y, 2 * CHUNK));
	CHECK_OK(smart_free(w, z, CHUNK));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* Freed 4-KiB blocks serve 64-byte requests once no chunk is left. */
static void test_split(void)
{
	struct fixture f;
	struct smart_alloc_usage u;
	smart_worker_t *w;
	static smart_gaddr_t g[1024];
	smart_gaddr_t s;
	int n = 0, m = 0, rc, i;

	fixture_start(&f, 2 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	while ((rc = smart_alloc(w, f.id, 4096, &g[n])) == 0)
		n++;
	CHECK_EQ(rc, SMART_ENOSPC);
	usage(w, f.id, &u);
	CHECK_EQ(u.free, 0);
	CHECK_GE(n, (2 << 20) / 4096 - 16 - 1);
	for (i = 0; i < n; i++)
		CHECK_OK(smart_free(w, g[i], 4096));
	while (smart_alloc(w, f.id, 64, &s) == 0)
		m++;
	printf("%d 4-KiB blocks, then %d 64-byte blocks out of them\n", n, m);
	CHECK_EQ(m, n * 64);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

static void test_blade_view(void)
{
	struct fixture f;
	struct smart_alloc_usage uc, ub;
	smart_worker_t *w;
	smart_gaddr_t g;

	fixture_start(&f, 4 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_alloc(w, f.id, 300 << 10, &g));
	CHECK_OK(smart_free(w, g, 300 << 10));
	usage(w, f.id, &uc);
	CHECK_OK(smart_blade_usage(f.blade, &ub));
	CHECK_EQ(ub.size, uc.size);
	CHECK_EQ(ub.unclaimed, uc.unclaimed);
	CHECK_EQ(ub.pooled, uc.pooled);
	CHECK_EQ(ub.pooled, 5 * CHUNK);
	CHECK_EQ(ub.clients, 1);
	CHECK_EQ(smart_blade_usage(NULL, &ub), SMART_EINVAL);
	CHECK_EQ(smart_alloc_usage(w, 9, &uc), SMART_ENOENT);
	CHECK_EQ(smart_alloc_usage(w, f.id, NULL), SMART_EINVAL);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* ---- soak: threads x tasks allocating and freeing, tags checked ------- */

#define SOAK_THREADS 3
#define SOAK_TASKS   6
#define SOAK_LIVE    48
#define SOAK_OPS     3000

struct soak {
	smart_ctx_t *ctx;
	uint16_t blade;
	int thread;
};

struct soak_task {
	uint16_t blade;
	uint64_t seed;
	int bad;
};

static size_t soak_size(smart_rng_t *r)
{
	static const size_t sizes[] = { 16, 64, 100, 512, 700, 4096, 20000 };

	return sizes[smart_rng_below(r, sizeof(sizes) / sizeof(*sizes))];
}

static void soak_task_fn(smart_worker_t *w, void *p)
{
	struct soak_task *t = p;
	smart_gaddr_t g[SOAK_LIVE];
	size_t sz[SOAK_LIVE];
	uint64_t tag[SOAK_LIVE], v;
	smart_rng_t r;
	int i, k;

	smart_rng_seed(&r, t->seed);
	for (i = 0; i < SOAK_LIVE; i++)
		g[i] = SMART_GADDR_NULL;
	for (i = 0; i < SOAK_OPS; i++) {
		k = (int)smart_rng_below(&r, SOAK_LIVE);
		if (g[k] != SMART_GADDR_NULL) {
			CHECK_OK(smart_read_sync(w, g[k], 8, &v));
			t->bad += v != tag[k];
			CHECK_OK(smart_free(w, g[k], sz[k]));
			g[k] = SMART_GADDR_NULL;
			continue;
		}
		sz[k] = soak_size(&r);
		CHECK_OK(smart_alloc(w, t->blade, sz[k], &g[k]));
		tag[k] = t->seed << 32 | (uint64_t)i;
		CHECK_OK(smart_write_sync(w, g[k], &tag[k], 8));
	}
	for (k = 0; k < SOAK_LIVE; k++)
		if (g[k] != SMART_GADDR_NULL) {
			CHECK_OK(smart_read_sync(w, g[k], 8, &v));
			t->bad += v != tag[k];
			CHECK_OK(smart_free(w, g[k], sz[k]));
		}
}

static void *soak_thread(void *p)
{
	struct soak *s = p;
	struct soak_task t[SOAK_TASKS];
	smart_worker_t *w;
	int i, bad = 0;

	CHECK_OK(smart_worker_create(s->ctx, &w));
	for (i = 0; i < SOAK_TASKS; i++) {
		t[i] = (struct soak_task){ s->blade,
					   (uint64_t)s->thread * 100 + i + 1,
					   0 };
		CHECK_OK(smart_task_spawn(w, soak_task_fn, &t[i]));
	}
	CHECK_OK(smart_worker_run(w));
	for (i = 0; i < SOAK_TASKS; i++)
		bad += t[i].bad;
	CHECK_EQ(bad, 0);
	CHECK_OK(smart_worker_destroy(w));
	return NULL;
}

static void test_soak(void)
{
	struct fixture f;
	struct soak s[SOAK_THREADS];
	struct smart_alloc_usage u;
	pthread_t th[SOAK_THREADS];
	smart_worker_t *w;
	int i;

	fixture_start(&f, 16 << 20, 3, NULL);
	for (i = 0; i < SOAK_THREADS; i++) {
		s[i] = (struct soak){ f.ctx, f.id, i };
		CHECK_EQ(pthread_create(&th[i], NULL, soak_thread, &s[i]), 0);
	}
	for (i = 0; i < SOAK_THREADS; i++)
		pthread_join(th[i], NULL);
	/* every worker is gone: everything came back to the blade */
	CHECK_OK(smart_worker_create(f.ctx, &w));
	usage(w, f.id, &u);
	printf("soak: %llu bytes pooled, %llu never claimed, %llu held\n",
	       (unsigned long long)u.pooled, (unsigned long long)u.unclaimed,
	       (unsigned long long)held(&u));
	CHECK_EQ(held(&u), 0);
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);
}

/* A batch node on a class list is written by another client: one that
 * names a block outside the blade's chunks is refused (SMART_EPROTO), not
 * handed out, and the blade serves on. */
static void test_corrupt_node(void)
{
	struct fixture f;
	smart_worker_t *a, *b;
	static smart_gaddr_t g[200];
	uint64_t head, bad, node;
	smart_gaddr_t x;
	int i;

	fixture_start(&f, 16 << 20, 3, NULL);
	CHECK_OK(smart_worker_create(f.ctx, &a));
	for (i = 0; i < 200; i++)
		CHECK_OK(smart_alloc(a, f.id, 64, &g[i]));
	for (i = 0; i < 200; i++)
		CHECK_OK(smart_free(a, g[i], 64));
	CHECK_OK(smart_worker_destroy(a)); /* batches go to the list */
	CHECK_OK(smart_worker_create(f.ctx, &b));
	CHECK_OK(smart_read_sync(b, smart_gaddr(f.id, SMART_FREE_CLS_OFF(6)), 8,
				 &head));
	node = smart_free_head_off(head);
	CHECK_GT(node, 0);
	/* its first block: past the end of the region */
	bad = UINT64_C(1) << 40;
	CHECK_OK(smart_write_sync(
		b,
		smart_gaddr(f.id, node + offsetof(struct smart_free_node, off)),
		&bad, 8));
	CHECK_EQ(smart_alloc(b, f.id, 64, &x), SMART_EPROTO);
	/* the bad batch is dropped; the next allocation is served */
	CHECK_OK(smart_alloc(b, f.id, 64, &x));
	CHECK_OK(smart_write_sync(b, x, &bad, 8));
	CHECK_OK(smart_free(b, x, 64));
	CHECK_OK(smart_worker_destroy(b));
	fixture_stop(&f);
}

/* Device memory of 4 units: runs placed lowest first, full is ENOSPC, a
 * double free or a run never handed out is refused (nothing freed), ops
 * work on it and stop at its end; a blade without it says ENOTSUP. */
static void test_device_memory(void)
{
	struct smart_blade_info bi;
	struct fixture f, g;
	smart_worker_t *w, *v;
	smart_gaddr_t a, b, c, d;
	uint64_t x = 0, old = 0, buf[2];

	fixture_start_dm(&f, 16 << 20, 3, 4 * SMART_DM_UNIT, NULL);
	CHECK_OK(smart_ctx_blade_info(f.ctx, f.id, &bi));
	CHECK_U64_EQ(bi.dm_size, 4 * SMART_DM_UNIT);
	CHECK_OK(smart_worker_create(f.ctx, &w));
	CHECK_OK(smart_dm_alloc(w, f.id, 100, &a)); /* one unit */
	CHECK_OK(smart_dm_alloc(w, f.id, 2 * SMART_DM_UNIT, &b));
	CHECK(smart_gaddr_is_dm(a) && smart_gaddr_is_dm(b));
	CHECK_U64_EQ(smart_gaddr_off(a), SMART_GADDR_DM);
	CHECK_U64_EQ(smart_gaddr_off(b), SMART_GADDR_DM + SMART_DM_UNIT);
	CHECK_EQ(smart_dm_alloc(w, f.id, 2 * SMART_DM_UNIT, &c), SMART_ENOSPC);
	CHECK_OK(smart_dm_alloc(w, f.id, SMART_DM_UNIT, &c));
	CHECK_EQ(smart_dm_alloc(w, f.id, 1, &d), SMART_ENOSPC);
	CHECK_EQ(smart_dm_alloc(w, f.id, 0, &d), SMART_EINVAL);
	CHECK_EQ(smart_dm_alloc(w, f.id, SMART_DM_MAX + 1, &d), SMART_EINVAL);

	/* ops: a word written, CASed, added to; the last word of b */
	x = 41;
	CHECK_OK(smart_write_sync(w, b, &x, 8));
	CHECK_OK(smart_cas_sync(w, b, 41, 42, &old));
	CHECK_U64_EQ(old, 41);
	CHECK_OK(smart_faa_sync(w, b, 1, &old));
	CHECK_U64_EQ(old, 42);
	CHECK_OK(smart_read_sync(w, b, 8, &x));
	CHECK_U64_EQ(x, 43);
	CHECK_OK(smart_write_sync(w, smart_gaddr_add(c, SMART_DM_UNIT - 8), &x,
				  8));
	/* past the end of the device memory: refused before it is sent */
	CHECK_EQ(smart_read_sync(w, smart_gaddr_add(c, SMART_DM_UNIT - 8), 16,
				 buf),
		 SMART_EREMOTE);
	CHECK_EQ(smart_read_sync(w, smart_gaddr_add(c, SMART_DM_UNIT), 8, buf),
		 SMART_EREMOTE);
	/* device memory is not the epochs' to free */
	CHECK_EQ(smart_epoch_retire(w, f.id, b, 8), SMART_EINVAL);
	/* the region's offset 0 is not the device memory's */
	CHECK_OK(smart_read_sync(w, smart_gaddr(f.id, 0), 8, &x));
	CHECK(x != 43);

	/* freeing: a double free and a run never handed out change nothing */
	CHECK_OK(smart_dm_free(w, b, 2 * SMART_DM_UNIT));
	CHECK_EQ(smart_dm_free(w, b, 2 * SMART_DM_UNIT), SMART_EINVAL);
	CHECK_EQ(smart_dm_free(w, smart_gaddr_add(a, 8), 8), SMART_EINVAL);
	CHECK_EQ(smart_dm_free(w, smart_gaddr(f.id, 4096), 4096), SMART_EINVAL);
	CHECK_OK(smart_dm_alloc(w, f.id, 2 * SMART_DM_UNIT, &d));
	CHECK_U64_EQ(d, b); /* the run came back, once */
	CHECK_EQ(smart_dm_alloc(w, f.id, 1, &d), SMART_ENOSPC);
	CHECK_OK(smart_dm_free(w, a, 100));
	CHECK_OK(smart_dm_free(w, b, 2 * SMART_DM_UNIT));
	CHECK_OK(smart_dm_free(w, c, SMART_DM_UNIT));
	CHECK_OK(smart_dm_alloc(w, f.id, 4 * SMART_DM_UNIT, &d));
	CHECK_OK(smart_dm_free(w, d, 4 * SMART_DM_UNIT));
	CHECK_OK(smart_worker_destroy(w));
	fixture_stop(&f);

	/* a blade without device memory (shm's default) */
	fixture_start_dm(&g, 16 << 20, 4, 0, NULL);
	CHECK_OK(smart_ctx_blade_info(g.ctx, g.id, &bi));
	CHECK_U64_EQ(bi.dm_size, 0);
	CHECK_OK(smart_worker_create(g.ctx, &v));
	CHECK_EQ(smart_dm_alloc(v, g.id, 64, &a), SMART_ENOTSUP);
	CHECK_EQ(smart_read_sync(v, smart_gaddr(g.id, SMART_GADDR_DM), 8, &x),
		 SMART_EREMOTE);
	CHECK_OK(smart_worker_destroy(v));
	fixture_stop(&g);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "given_back", test_given_back },
				 { "spill_refill", test_spill_refill },
				 { "runs", test_runs },
				 { "split", test_split },
				 { "blade_view", test_blade_view },
				 { "soak", test_soak },
				 { "corrupt_node", test_corrupt_node },
				 { "device_memory", test_device_memory },
				 { 0 } });
}
