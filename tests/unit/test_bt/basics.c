/*
 * test_bt, the basics: every call's semantics and bad arguments, a tree
 * grown to several levels and scanned against a model, named trees, bulk
 * loads, shrinking by deletes, drop giving every byte back, a stale root.
 */
#include "bt_test.h"

void test_semantics(void)
{
	struct world wd;
	struct smart_bt_config c;
	smart_bt_t *t2;
	char v[64], big[64];
	size_t n;

	world_start(&wd, NULL, 1024, 16, 32);
	/* insert, search, duplicates, update, upsert, delete */
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "a", 1, "1", 1));
	CHECK_EQ(smart_bt_insert(wd.t, wd.w, "a", 1, "2", 1), SMART_EEXIST);
	CHECK_OK(smart_bt_search(wd.t, wd.w, "a", 1, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == '1');
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "b", 1, v, sizeof(v), &n),
		 SMART_ENOENT);
	CHECK_EQ(smart_bt_update(wd.t, wd.w, "b", 1, "x", 1), SMART_ENOENT);
	CHECK_OK(smart_bt_update(wd.t, wd.w, "a", 1, "xy", 2));
	CHECK_OK(smart_bt_upsert(wd.t, wd.w, "b", 1, "", 0));
	CHECK_OK(smart_bt_search(wd.t, wd.w, "b", 1, v, sizeof(v), &n));
	CHECK_EQ(n, 0);
	CHECK_OK(smart_bt_search(wd.t, wd.w, "a", 1, v, sizeof(v), &n));
	CHECK(n == 2 && !memcmp(v, "xy", 2));
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "a", 1, v, 1, &n), SMART_ERANGE);
	CHECK_EQ(n, 2);
	CHECK_OK(smart_bt_delete(wd.t, wd.w, "a", 1));
	CHECK_EQ(smart_bt_delete(wd.t, wd.w, "a", 1), SMART_ENOENT);
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "a", 1, v, sizeof(v), &n),
		 SMART_ENOENT);
	/* "a" < "ab" < "b": prefixes order first */
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "ab", 2, "2", 1));
	/* bad arguments: errors, no change */
	memset(big, 'z', sizeof(big));
	CHECK_EQ(smart_bt_insert(wd.t, wd.w, big, 17, "x", 1), SMART_EINVAL);
	CHECK_EQ(smart_bt_insert(wd.t, wd.w, "c", 1, big, 33), SMART_EINVAL);
	CHECK_EQ(smart_bt_insert(wd.t, wd.w, "", 0, "x", 1), SMART_EINVAL);
	CHECK_EQ(smart_bt_insert(NULL, wd.w, "c", 1, "x", 1), SMART_EINVAL);
	CHECK_EQ(smart_bt_insert(wd.t, wd.w, "c", 1, NULL, 1), SMART_EINVAL);
	CHECK_EQ(smart_bt_search(wd.t, wd.w, "c", 1, NULL, 4, &n),
		 SMART_EINVAL);
	CHECK_EQ(smart_bt_delete(wd.t, wd.w, NULL, 1), SMART_EINVAL);
	/* integer keys: big-endian, so numeric order is byte order */
	CHECK_OK(smart_bt_insert_u64(wd.t, wd.w, 258, "n", 1));
	CHECK_OK(smart_bt_search_u64(wd.t, wd.w, 258, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == 'n');
	/* configurations refused */
	smart_bt_config_init(&c);
	c.node_size = 1000;
	CHECK_EQ(smart_bt_create(wd.w, 1, 4, &c, &t2), SMART_EINVAL);
	smart_bt_config_init(&c);
	c.key_max = 255;
	c.val_max = 4096; /* not 4 entries in 1 KiB */
	CHECK_EQ(smart_bt_create(wd.w, 1, 4, &c, &t2), SMART_EINVAL);
	smart_bt_config_init(&c);
	c.key_max = 0;
	CHECK_EQ(smart_bt_create(wd.w, 1, 4, &c, &t2), SMART_EINVAL);
	/* the root entry is taken; an empty one holds no tree */
	CHECK_EQ(smart_bt_create(wd.w, 1, 3, NULL, &t2), SMART_EEXIST);
	CHECK_EQ(smart_bt_open(wd.w, 1, 9, NULL, &t2), SMART_ENOENT);
	CHECK_EQ(smart_bt_open(wd.w, 1, 999, NULL, &t2), SMART_EINVAL);
	/* opened again, it is the same tree */
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &t2));
	CHECK_EQ(smart_bt_key_max(t2), 16);
	CHECK_OK(smart_bt_search(t2, wd.w, "ab", 2, v, sizeof(v), &n));
	smart_bt_close(t2, wd.w);
	world_stop(&wd);
}

void test_grow_and_scan(void)
{
	enum { N = 20000 };
	static unsigned char present[N];
	struct smart_bt_stats st;
	struct world wd;
	struct smart_bt_entry ent[4];
	char k[16], v[16], buf[8];
	size_t n;
	unsigned i, p;
	smart_rng_t r;

	world_start(&wd, NULL, 512, 12, 12);
	smart_rng_seed(&r, 0xb7ee);
	/* random order: splits everywhere, several levels with 512-B nodes */
	for (i = 0; i < N; i++) {
		p = (unsigned)((i * 7919ull) % N);
		key_of(k, p);
		val_of(v, p, 0);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), v,
					 strlen(v)));
		present[p] = 1;
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	printf("%u keys: height %u, %llu leaf, %llu inner, %llu root splits\n",
	       N, st.height, (unsigned long long)st.leaf_splits,
	       (unsigned long long)st.inner_splits,
	       (unsigned long long)st.root_splits);
	CHECK_GE(st.height, 3);
	CHECK_GT(st.inner_splits, 0);
	for (i = 0; i < N; i++)
		expect_val(&wd, i, 0);
	/* delete a third, update a third */
	for (i = 0; i < N; i++) {
		key_of(k, i);
		if (smart_rng_below(&r, 3) == 0) {
			CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
			present[i] = 0;
		} else if (smart_rng_below(&r, 2)) {
			val_of(v, i, 1);
			CHECK_OK(smart_bt_update(wd.t, wd.w, k, strlen(k), v,
						 strlen(v)));
		}
	}
	scan_check(&wd, present, N, 0, N, 64);
	scan_check(&wd, present, N, 1234, 5678, 7);
	scan_check(&wd, present, N, 19990, 20000, 3);
	/* a buffer too small for the first entry; then for the second */
	key_of(k, 0);
	CHECK_EQ(smart_bt_scan(wd.t, wd.w, k, strlen(k), NULL, 0, ent, 4, buf,
			       4, &n),
		 SMART_ERANGE);
	CHECK_EQ(n, 0);
	/* empty ranges */
	CHECK_OK(smart_bt_scan(wd.t, wd.w, "z", 1, NULL, 0, ent, 4, buf,
			       sizeof(buf), &n));
	CHECK_EQ(n, 0);
	CHECK_OK(smart_bt_scan(wd.t, wd.w, "k2", 2, "k1", 2, ent, 4, buf,
			       sizeof(buf), &n));
	CHECK_EQ(n, 0);
	CHECK_EQ(smart_bt_scan(wd.t, wd.w, "k2", 2, "k1", 2, NULL, 4, buf,
			       sizeof(buf), &n),
		 SMART_EINVAL);
	world_stop(&wd);
}

/* Named trees: found by name from another object, one name once (of two
 * threads creating the same names at once exactly one wins each), a
 * hash table of the same name beside, dropped and created again. */
struct race {
	struct world *wd;
	smart_worker_t *w;
	int won;
};

static void *race_main(void *p)
{
	struct race *r = p;
	char name[16];
	smart_bt_t *t;
	int i, rc;

	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "race-%d", i);
		rc = smart_bt_create_named(r->w, 1, name, NULL, &t);
		if (!rc) {
			r->won++;
			smart_bt_close(t, r->w);
		} else {
			CHECK_EQ(rc, SMART_EEXIST);
		}
	}
	return NULL;
}

void test_named(void)
{
	struct world wd;
	struct race r[2];
	pthread_t th[2];
	smart_bt_t *a, *b;
	smart_ht_t *h;
	char v[16];
	size_t n;
	int i;

	world_start(&wd, NULL, 512, 12, 12);
	CHECK_OK(smart_bt_create_named(wd.w, 1, "orders", NULL, &a));
	CHECK_EQ(smart_bt_create_named(wd.w, 1, "orders", NULL, &b),
		 SMART_EEXIST);
	CHECK_OK(smart_ht_create_named(wd.w, 1, "orders", NULL, &h));
	smart_ht_close(h, NULL);
	CHECK_OK(smart_bt_open_named(wd.w, 1, "orders", NULL, &b));
	CHECK_OK(smart_bt_insert(a, wd.w, "k", 1, "v", 1));
	CHECK_OK(smart_bt_search(b, wd.w, "k", 1, v, sizeof(v), &n));
	CHECK(n == 1 && v[0] == 'v');
	CHECK_EQ(smart_bt_open_named(wd.w, 1, "none", NULL, &b), SMART_ENOENT);
	CHECK_EQ(smart_bt_create_named(wd.w, 1, "", NULL, &b), SMART_EINVAL);
	CHECK_EQ(smart_bt_create_named(wd.w, 1, NULL, NULL, &b), SMART_EINVAL);
	smart_bt_close(b, wd.w);
	CHECK_OK(smart_bt_drop(a, wd.w));
	CHECK_EQ(smart_bt_open_named(wd.w, 1, "orders", NULL, &b),
		 SMART_ENOENT);
	CHECK_OK(smart_ht_open_named(wd.w, 1, "orders", NULL, &h)); /* still */
	smart_ht_close(h, NULL);
	CHECK_OK(smart_bt_create_named(wd.w, 1, "orders", NULL, &a));
	CHECK_EQ(smart_bt_search(a, wd.w, "k", 1, v, sizeof(v), &n),
		 SMART_ENOENT);
	smart_bt_close(a, wd.w);
	for (i = 0; i < 2; i++) {
		r[i].wd = &wd;
		r[i].won = 0;
		CHECK_OK(smart_worker_create(wd.f.ctx, &r[i].w));
		CHECK_EQ(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
	}
	for (i = 0; i < 2; i++) {
		CHECK_EQ(pthread_join(th[i], NULL), 0);
		CHECK_OK(smart_worker_destroy(r[i].w));
	}
	CHECK_EQ(r[0].won + r[1].won, 20);
	world_stop(&wd);
}

/* A client whose cached root is an old one (a leaf that has split since)
 * still finds every key: it moves right past the high fence (B-link). */
void test_stale_root(void)
{
	struct smart_bt_stats st;
	struct world wd;
	smart_bt_t *stale;
	char k[16], v[16];
	size_t n;
	unsigned i;

	world_start(&wd, NULL, 512, 12, 12);
	CHECK_OK(smart_bt_open(wd.w, 1, 3, NULL, &stale)); /* root: one leaf */
	for (i = 0; i < 100; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_GE(st.height, 2);
	for (i = 0; i < 100; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(stale, wd.w, k, strlen(k), v,
					 sizeof(v), &n));
	}
	CHECK_OK(smart_bt_stats(stale, NULL, &st));
	CHECK_GT(st.move_rights, 0);
	smart_bt_close(stale, wd.w);
	world_stop(&wd);
}

/* Bulk load: keys key_of(0..n-1) ascending (or out of order at `bad`),
 * value = key. */
struct feed {
	unsigned i, n, bad;
	char k[16];
};

static int feed_next(void *arg, const void **key, size_t *klen,
		     const void **val, size_t *vlen)
{
	struct feed *f = arg;

	if (f->i == f->n)
		return 0;
	key_of(f->k, f->bad && f->i == f->bad ? 0 : f->i);
	f->i++;
	*key = *val = f->k;
	*klen = strlen(f->k);
	*vlen = 9;
	return 1;
}

/* The root's level (*level) and its children (0: a leaf). */
static unsigned root_children(struct world *wd, unsigned *level)
{
	uint64_t meta, root;
	uint8_t *p;
	uint16_t count;

	CHECK_OK(smart_root_get(wd->w, 1, 3, &meta));
	CHECK_OK(smart_read_sync(wd->w, meta + 32, 8, &root));
	CHECK_OK(smart_buf_alloc(wd->w, 512, (void **)&p));
	CHECK_OK(smart_read_sync(wd->w, root, 512, p));
	*level = p[8];
	memcpy(&count, p + 10, 2);
	smart_buf_free(wd->w, p);
	return *level ? count + 1u : 0;
}

/* A bulk load builds the tree in a round trip per node, every key found
 * and scanned in order, what the one leaf held merged in; writes split
 * it like any tree afterwards; a bad input, a key held already or a tree
 * past one leaf changes nothing; drop gives every node back. */
void test_bulk(void)
{
	struct smart_alloc_usage u0;
	struct smart_bt_config c;
	struct smart_bt_stats st;
	struct feed f = { 0, 20000, 0, "" };
	struct smart_bt_entry e[64];
	char k[16], v[16], buf[64 * 32];
	uint64_t loaded, rt;
	struct world wd;
	smart_bt_t *t;
	size_t n;
	unsigned i, level, children;

	fresh_tree(&wd, &u0);
	/* out of order: refused, nothing changed (nothing left allocated:
	 * only the tree's own, which the drop below gives back) */
	f.bad = 777;
	CHECK_EQ(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 70, &loaded),
		 SMART_EINVAL);
	CHECK_EQ(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 5, &loaded),
		 SMART_EINVAL);
	/* what the one leaf holds is merged in; a key in both is refused */
	key_of(k, 5);
	CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), "dup", 3));
	f = (struct feed){ 0, 20000, 0, "" };
	CHECK_EQ(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 70, &loaded),
		 SMART_EEXIST);
	CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
	CHECK_OK(smart_bt_insert(wd.t, wd.w, "k00000100z", 10, "mid", 3));
	key_of(k, 1);
	CHECK_EQ(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v), &n),
		 SMART_ENOENT);
	/* the load */
	f = (struct feed){ 0, 20000, 0, "" };
	rt = smart_task_round_trips(wd.w, NULL);
	CHECK_OK(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 70, &loaded));
	rt = smart_task_round_trips(wd.w, NULL) - rt;
	CHECK_EQ(loaded, 20000);
	CHECK_OK(smart_bt_search(wd.t, wd.w, "k00000100z", 10, v, sizeof(v),
				 &n));
	CHECK(n == 3 && !memcmp(v, "mid", 3));
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	children = root_children(&wd, &level);
	printf("bulk load of 20000 keys: height %u, %llu round trips, a root "
	       "of %u children\n",
	       st.height, (unsigned long long)rt, children);
	/* 2223 leaves, 159 parents (14 children each at 70%), 12 above:
	 * the root names those 12 (no root with a single child) */
	CHECK_EQ(st.height, 4);
	CHECK_EQ(level + 1u, st.height);
	CHECK_GT(children, 1);
	/* leaves of 70% of 14 entries: 9 keys, 2223 leaves; a write each,
	 * and an allocation now and then */
	CHECK_LE(rt, 20000 / 9 * 2);
	f = (struct feed){ 0, 10, 0, "" };
	CHECK_EQ(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 70, &loaded),
		 SMART_EEXIST);
	/* every key, through another object too */
	smart_bt_config_init(&c);
	c.cache_bytes = 0;
	CHECK_OK(smart_bt_open(wd.w, 1, 3, &c, &t));
	for (i = 0; i < 20000; i += 7) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
		CHECK(n == 9 && !memcmp(v, k, 9));
	}
	key_of(k, 19990);
	CHECK_OK(smart_bt_scan(t, wd.w, k, strlen(k), NULL, 0, e, 64, buf,
			       sizeof(buf), &n));
	CHECK_EQ(n, 10);
	for (i = 0; i < n; i++) {
		key_of(k, 19990 + i);
		CHECK(e[i].key_len == strlen(k) &&
		      !memcmp(e[i].key, k, e[i].key_len));
	}
	/* writes after it: splits reach the root, which now has entries */
	for (i = 0; i < 20000; i++) {
		snprintf(k, sizeof(k), "k%08ux", i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	for (i = 0; i < 20000; i += 13) {
		snprintf(k, sizeof(k), "k%08ux", i);
		CHECK_OK(smart_bt_search(t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
		key_of(k, i);
		CHECK_OK(smart_bt_search(t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	smart_bt_close(t, wd.w);
	drop_back_to(&wd, &u0);
	/* an input that fits one leaf: the root is that leaf */
	fresh_tree(&wd, &u0);
	f = (struct feed){ 0, 5, 0, "" };
	CHECK_OK(smart_bt_bulk_load(wd.t, wd.w, feed_next, &f, 70, &loaded));
	CHECK_EQ(loaded, 5);
	CHECK_EQ(root_children(&wd, &level), 0);
	CHECK_EQ(level, 0);
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_EQ(st.height, 1);
	for (i = 0; i < 5; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	drop_back_to(&wd, &u0);
}

/* Deletes that empty leaves free nodes: 20 000 keys, then all but every
 * 100th deleted; the emptied leaves took their neighbours in and the
 * neighbours went back to the blade through the epochs; every key left is
 * found and scanned in order; the space is reused by new inserts; drop
 * gives back exactly what the tree held. */
void test_shrink(void)
{
	struct smart_alloc_usage u0, u1, u2;
	struct smart_bt_stats st;
	uint64_t freed;
	struct smart_bt_entry e[256];
	char k[16], v[16], buf[256 * 32];
	struct world wd;
	size_t n, got = 0;
	unsigned i;

	fresh_tree(&wd, &u0);
	for (i = 0; i < 20000; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	CHECK_OK(smart_alloc_usage(wd.w, 1, &u1));
	for (i = 0; i < 20000; i++) {
		if (i % 100 == 0)
			continue;
		key_of(k, i);
		CHECK_OK(smart_bt_delete(wd.t, wd.w, k, strlen(k)));
	}
	CHECK_OK(smart_epoch_drain(wd.w, 1, 5000));
	CHECK_OK(smart_bt_stats(wd.t, NULL, &st));
	CHECK_OK(smart_worker_destroy(wd.w)); /* its caches back */
	CHECK_OK(smart_worker_create(wd.f.ctx, &wd.w));
	CHECK_OK(smart_alloc_usage(wd.w, 1, &u2));
	freed = ctx_stat(wd.f.ctx, SMART_STAT_EPOCH_FREED);
	printf("20000 keys, 19800 deleted: %llu merges (%llu skipped), "
	       "%llu nodes freed through the epochs; used %.1f -> %.1f KiB\n",
	       (unsigned long long)st.merges,
	       (unsigned long long)st.merge_skips, (unsigned long long)freed,
	       (double)(u1.used + u1.cached) / 1024,
	       (double)(u2.used + u2.cached) / 1024);
	CHECK_GT(st.merges, 1000);
	CHECK_EQ(freed, st.merges); /* every neighbour taken in */
	CHECK_LT(u2.used + u2.cached, (u1.used + u1.cached) / 2);
	for (i = 0; i < 20000; i += 100) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
		key_of(k, i + 1);
		CHECK_EQ(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n),
			 SMART_ENOENT);
	}
	key_of(k, 0);
	CHECK_OK(smart_bt_scan(wd.t, wd.w, k, strlen(k), NULL, 0, e, 256, buf,
			       sizeof(buf), &got));
	CHECK_EQ(got, 200);
	for (i = 0; i < got; i++) {
		key_of(k, i * 100);
		CHECK(e[i].key_len == strlen(k) &&
		      !memcmp(e[i].key, k, e[i].key_len));
	}
	/* the room comes back for new keys */
	for (i = 0; i < 20000; i++) {
		if (i % 100 == 0)
			continue;
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), "again", 5));
	}
	for (i = 0; i < 20000; i += 37) {
		key_of(k, i);
		CHECK_OK(smart_bt_search(wd.t, wd.w, k, strlen(k), v, sizeof(v),
					 &n));
	}
	drop_back_to(&wd, &u0);
}

/* Drop gives back every node and the lock table. */
void test_drop(void)
{
	struct smart_alloc_usage u0;
	struct world wd;
	smart_bt_t *t;
	uint64_t e;
	char k[16];
	unsigned i;

	fresh_tree(&wd, &u0);
	for (i = 0; i < 5000; i++) {
		key_of(k, i);
		CHECK_OK(smart_bt_insert(wd.t, wd.w, k, strlen(k), k, 9));
	}
	/* in the named range a dropped tree leaves a tombstone, so that
	 * named structures' probes that passed it still go on */
	CHECK_OK(smart_bt_create(wd.w, 1, 70, NULL, &t));
	CHECK_OK(smart_bt_drop(t, wd.w));
	CHECK_OK(smart_root_get(wd.w, 1, 70, &e));
	CHECK_EQ(e, SMART_ROOT_TOMB);
	CHECK_EQ(smart_bt_open(wd.w, 1, 70, NULL, &t), SMART_ENOENT);
	drop_back_to(&wd, &u0);
}
