/*
 * test_bt, what an operation costs: round trips of each call, warm and
 * cold, and the bytes a warm update moves (docs/bt.md §6).
 */
#include "bt_test.h"

static uint64_t bytes_read(smart_ctx_t *ctx)
{
	return ctx_stat(ctx, SMART_STAT_BYTES_READ);
}

/* Round trips and bytes of one op on t, counted (not timed). */
#define COUNT(wd, t, call, rt, by)                                             \
	do {                                                                   \
		uint64_t rt0_ = smart_task_round_trips((wd)->w, NULL);         \
		uint64_t by0_ = bytes_read((wd)->f.ctx);                       \
		CHECK_OK(call);                                                \
		(rt) = smart_task_round_trips((wd)->w, NULL) - rt0_;           \
		(by) = bytes_read((wd)->f.ctx) - by0_;                         \
	} while (0)

#define UB_WRITTEN (8 + 32 + 32 + 40 + 32 + 8 + 40 + 8 + 8)

/* Bytes one warm update moves (docs/bt.md §6), default geometry (16-byte
 * keys and values, 1 KiB nodes: 40-byte entries), counted by the core:
 * written, the stamp (8), the redo record (its header, the entry's patch
 * and the first word's: 32 + 32 + 40 + 32 + 8), the entry (40), the
 * first word (8) and the unlock (8); read, the leaf under the lock
 * (1024); the lock's CAS counts neither. */
static void ub_task(smart_worker_t *w, void *arg)
{
	struct world *wd = arg;
	struct smart_bt_config c;
	smart_bt_t *t;
	char k[17], v[17];
	uint64_t w0, r0, wr, rd;
	unsigned i;

	smart_bt_config_init(&c);
	CHECK_OK(smart_bt_create(w, 1, 4, &c, &t));
	for (i = 0; i < 2000; i++) {
		snprintf(k, sizeof(k), "key%013u", i);
		CHECK_OK(smart_bt_insert(t, w, k, 16, k, 16));
	}
	snprintf(k, sizeof(k), "key%013u", 777u);
	snprintf(v, sizeof(v), "val%013u", 0u);
	CHECK_OK(smart_bt_update(t, w, k, 16, v, 16)); /* warm */
	w0 = ctx_stat(wd->f.ctx, SMART_STAT_BYTES_WRITTEN);
	r0 = bytes_read(wd->f.ctx);
	for (i = 1; i <= 100; i++) {
		snprintf(v, sizeof(v), "val%013u", i);
		CHECK_OK(smart_bt_update(t, w, k, 16, v, 16));
	}
	wr = ctx_stat(wd->f.ctx, SMART_STAT_BYTES_WRITTEN) - w0;
	rd = bytes_read(wd->f.ctx) - r0;
	printf("a warm update (16-byte key and value, 1 KiB leaf): %llu "
	       "bytes written, %llu read\n",
	       (unsigned long long)wr / 100, (unsigned long long)rd / 100);
	CHECK_EQ(wr, 100 * (uint64_t)UB_WRITTEN);
	CHECK_EQ(rd, 100 * (uint64_t)1024);
	CHECK_OK(smart_bt_drop(t, w));
}

void test_update_bytes(void)
{
	struct world wd;

	world_start(&wd, NULL, 512, 12, 12);
	CHECK_OK(smart_task_spawn(wd.w, ub_task, &wd));
	CHECK_OK(smart_worker_run(wd.w));
	world_stop(&wd);
}

/* Round trips per operation, counted (not timed), one client.  Without
 * caches a search reads one node per level; a write reads the internal
 * levels, takes the lock and reads the leaf under it (the CAS and the
 * READ in one chain), and writes the entry back with the unlock in one
 * chain.  With a warm index cache
 * the internal levels cost nothing; a speculative lookup reads one entry
 * (one round trip, leaf_ent bytes), and when the entry it remembered
 * moved (a split) it pays one more round trip, then remembers again. */
static void rt_task(smart_worker_t *w, void *arg)
{
	struct world wd = *(struct world *)arg;
	struct smart_bt_config c;
	struct smart_bt_stats st;
	static struct smart_bt_entry ent[100];
	static char sbuf[100 * 32];
	smart_bt_t *cold;
	char k[16], v[16];
	uint64_t rt, by, spec_by, srt, ahead;
	size_t n;
	unsigned i;

	wd.w = w; /* the task's worker: the world's */
	for (i = 0; i < 3000; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_GE(st.height, 3);
	/* no caches */
	smart_bt_config_init(&c);
	c.cache_bytes = 0;
	c.spec_entries = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &cold));
	key_of(k, 1234);
	COUNT(&wd, cold,
	      smart_bt_search(cold, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK_EQ(rt, st.height);
	/* the nodes, and the epoch G read behind a one-task worker's
	 * announcement (docs/epochs.md) */
	CHECK(by >= 512 * st.height && by <= 512 * st.height + 8);
	COUNT(&wd, cold, smart_bt_update(cold, wd.w, k, strlen(k), "u", 1), rt,
	      by);
	CHECK_EQ(rt, st.height + 1);
	COUNT(&wd, cold, smart_bt_delete(cold, wd.w, k, strlen(k)), rt, by);
	CHECK_EQ(rt, st.height + 1);
	COUNT(&wd, cold, smart_bt_insert(cold, wd.w, k, strlen(k), "i", 1), rt,
	      by);
	CHECK_EQ(rt, st.height + 1);
	printf("no caches, height %u: search %u, update/delete/insert %u "
	       "round trips\n",
	       st.height, st.height, st.height + 1);
	smart_bt_close(cold, wd.w);
	/* warm: wd.t cached the internal nodes it read and wrote */
	key_of(k, 2345);
	COUNT(&wd, wd.t,
	      smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK_LE(rt, 2); /* its remembered entry may have moved */
	COUNT(&wd, wd.t,
	      smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK_EQ(rt, 1);
	CHECK_LE(by, 48); /* one entry: 8 + 12 + 12 bytes, rounded; G */
	spec_by = by;
	CHECK(n == 9 && !memcmp(v, k, 9));
	COUNT(&wd, wd.t, smart_bt_update(wd.t, wd.w, k, strlen(k), "w", 1), rt,
	      by);
	CHECK_EQ(rt, 2); /* lock + leaf, write-back + unlock */
	COUNT(&wd, wd.t,
	      smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK(rt == 1 && n == 1 && v[0] == 'w');
	/* a scan of 100 keys (15 leaves, under 2 or 3 parents): the leaf
	 * covering its start, then its parent's next leaves read at once,
	 * and so on per parent */
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	ahead = st.scan_ahead;
	key_of(k, 1000);
	COUNT(&wd, wd.t,
	      smart_bt_scan(wd.t, wd.w, k, strlen(k), NULL, 0, ent, 100, sbuf,
			    sizeof(sbuf), &n),
	      srt, by);
	CHECK_EQ(n, 100);
	for (i = 0; i < n; i++) {
		key_of(k, 1000 + i);
		CHECK(ent[i].key_len == strlen(k) &&
		      !memcmp(ent[i].key, k, ent[i].key_len));
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_GE(st.scan_ahead - ahead, 10);
	CHECK_LE(srt, 6);
	/* a key never looked up: the leaf, through cached parents */
	key_of(k, 17);
	smart_bt_config_init(&c);
	c.spec_entries = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &cold));
	COUNT(&wd, cold,
	      smart_bt_search(cold, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK_EQ(rt, st.height); /* it fills its cache... */
	COUNT(&wd, cold,
	      smart_bt_search(cold, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	CHECK(rt == 1 && by >= 512 && by <= 520); /* ...the leaf only */
	CHECK_GT(ctx_stat(wd.f.ctx, SMART_STAT_CACHE_HITS), 0);
	CHECK_GT(ctx_stat(wd.f.ctx, SMART_STAT_SPEC_HITS), 0);
	smart_bt_close(cold, wd.w);
	printf("warm: search 1 round trip (%" PRIu64 " bytes), update 2, "
	       "scan of 100 keys %" PRIu64 " (%" PRIu64 " leaves read ahead); "
	       "index cache only: search 1 (%" PRIu64 " bytes)\n",
	       spec_by, srt, st.scan_ahead - ahead, by);
}

/* A tree over two blades: a warm search whose entry the speculative cache
 * holds costs its one READ, not a wait for the epoch announcement first
 * (the speculative read needs no epoch section). */
static void rt2_task(smart_worker_t *w, void *arg)
{
	struct world wd = *(struct world *)arg;
	char k[16], v[16];
	uint64_t rt, by;
	size_t n;

	wd.w = w;
	fill(&wd, 0, 200);
	key_of(k, 123);
	CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n));
	COUNT(&wd, wd.t,
	      smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n), rt,
	      by);
	printf("two blades, warm: search %llu round trip(s), %llu bytes\n",
	       (unsigned long long)rt, (unsigned long long)by);
	CHECK_EQ(rt, 1);
	CHECK(n == 1 && v[0] == 'v');
	CHECK_GT(ctx_stat(wd.f.ctx, SMART_STAT_SPEC_HITS), 0);
}

/* In a task: the main context waits for each operation's epoch exit (an
 * idle WRITE nothing would poll for later), a task does not. */
void test_round_trips(void)
{
	struct world wd;
	smart_blade_t *b2;

	world_start(&wd, NULL, 512, 12, 12);
	CHECK_OK(smart_task_spawn(wd.w, rt_task, &wd));
	CHECK_OK(smart_worker_run(wd.w));
	world_stop(&wd);
	world2_start(&wd, &b2);
	CHECK_OK(smart_task_spawn(wd.w, rt2_task, &wd));
	CHECK_OK(smart_worker_run(wd.w));
	world_stop(&wd);
	smart_blade_destroy(b2);
}
