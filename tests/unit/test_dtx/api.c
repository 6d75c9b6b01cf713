/*
 * test_dtx, the calls: bad configurations and arguments, calls in the
 * wrong state, one-task transactions of every kind, log slots running
 * out, drop; an insert of a present key validated at commit; a peer's
 * forged database descriptor refused.
 */
#include "dtx_test.h"

/* ==== api ================================================================= */

static void fill_bytes(uint8_t *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* One committed single-item transaction's read: status, length, value. */
static int api_get(struct world *wd, smart_dtx_txn_t *x, uint32_t table,
		   uint64_t key, void *buf, size_t cap, size_t *len)
{
	int i, st;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read(x, table, key, buf, cap);
	CHECK_GE(i, 0);
	CHECK_OK(smart_dtx_commit(x, wd->w));
	st = smart_dtx_status(x, i, len);
	CHECK(st == 0 || st == SMART_ENOENT);
	return st;
}

static void api_bad_configs(struct world *wd)
{
	struct smart_dtx_table t[3] = {
		{ .id = 0, .value_size = 8, .buckets = 16, .primary = -1 },
		{ .id = 1, .value_size = 8, .buckets = 16, .primary = -1 },
		{ .id = 2, .value_size = 8, .buckets = 16, .primary = -1 },
	};
	struct smart_dtx_config c;
	const uint16_t dup_blades[2] = { 1, 1 };
	smart_dtx_t *d = NULL;

	cfg_two(&c, t, 0);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	cfg_two(&c, NULL, 1);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	cfg_two(&c, t, SMART_DTX_TABLES_MAX + 1);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[1].id = 0; /* duplicate ids */
	cfg_two(&c, t, 3);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[1].id = SMART_DTX_TABLES_MAX; /* out of range */
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[1].id = 1;
	t[2].value_size = 0;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[2].value_size = SMART_DTX_VALUE_MAX + 1;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[2].value_size = 8;
	t[2].buckets = 0;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[2].buckets = 16;
	t[2].primary = 2; /* only 2 blades */
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	t[2].primary = -1;
	c.replicas = 2; /* replicas >= nblades */
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.replicas = SMART_DTX_REPLICAS_MAX + 1;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.replicas = 1;
	c.nblades = 1; /* 1 blade, 1 backup */
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.nblades = 0;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.nblades = 2;
	c.blades = dup_blades;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.blades = two_blades;
	c.max_writes = 0;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.max_writes = SMART_DTX_ITEMS_MAX + 1;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.max_writes = 16;
	c.log_slots = 0;
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.log_slots = 256;
	c.cache_entries = 1000; /* not a power of two */
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, &d), SMART_EINVAL);
	c.cache_entries = 1024;
	/* NULLs */
	CHECK_EQ(smart_dtx_create(NULL, 1, "bad", &c, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_create(wd->w, 1, NULL, &c, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", NULL, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_create(wd->w, 1, "bad", &c, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_open(NULL, 1, "bad", NULL, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_open(wd->w, 1, NULL, NULL, &d), SMART_EINVAL);
	CHECK_EQ(smart_dtx_open(wd->w, 1, "bad", NULL, NULL), SMART_EINVAL);
	CHECK(d == NULL);
	/* nothing of those was made */
	CHECK_EQ(smart_dtx_open(wd->w, 1, "bad", NULL, &d), SMART_ENOENT);
	/* the good one is fine */
	CHECK_OK(smart_dtx_create(wd->w, 1, "bad", &c, &d));
	CHECK_OK(smart_dtx_drop(d, wd->w));
}

static int api_scan_fn(void *arg, uint64_t key, const void *val, size_t len)
{
	struct api_scan *s = arg;

	CHECK(val || !len);
	s->n++;
	s->keys += key;
	return s->stop ? 42 : 0;
}

void test_api(void)
{
	struct smart_dtx_table t[2] = {
		{ .id = T_SMALL, .value_size = 8, .buckets = 64, .primary = -1 },
		{ .id = T_BIG, .value_size = 1024, .buckets = 16, .primary = 0 },
	};
	static uint8_t big[1024], got[1024 + 64];
	struct smart_dtx_config c;
	struct smart_dtx_stats st;
	struct smart_dtx_cost cost;
	struct world wd;
	smart_dtx_t *d2, *tiny;
	smart_dtx_txn_t *x, *x2, *xs[3];
	uint32_t vs;
	uint16_t prim, backs[SMART_DTX_REPLICAS_MAX];
	unsigned nb;
	uint64_t v8, slot, rv, wv, bad;
	size_t len;
	int i, j, k;

	world_start(&wd, NULL);
	api_bad_configs(&wd);
	cfg_two(&c, t, 2);
	CHECK_OK(smart_dtx_create(wd.w, 1, "api", &c, &wd.d));
	CHECK_EQ(smart_dtx_create(wd.w, 1, "api", &c, &d2), SMART_EEXIST);
	CHECK_EQ(smart_dtx_open(wd.w, 1, "nope", NULL, &d2), SMART_ENOENT);
	/* where the tables live: T_SMALL on blade index 3 % 2 = 1, its backup
	 * on the other; T_BIG where asked */
	CHECK_OK(smart_dtx_table_info(wd.d, T_SMALL, &vs, &prim, backs, &nb));
	CHECK(vs == 8 && prim == 2 && nb == 1 && backs[0] == 1);
	CHECK_OK(smart_dtx_table_info(wd.d, T_BIG, &vs, &prim, backs, &nb));
	CHECK(vs == 1024 && prim == 1 && nb == 1 && backs[0] == 2);
	CHECK_EQ(smart_dtx_table_info(wd.d, 4, &vs, &prim, backs, &nb),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_table_info(wd.d, 99, &vs, &prim, backs, &nb),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_table_info(NULL, T_BIG, &vs, &prim, backs, &nb),
		 SMART_EINVAL);
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_EQ(smart_dtx_txn_new(NULL, wd.w, &x2), SMART_EINVAL);
	CHECK_EQ(smart_dtx_txn_new(wd.d, NULL, &x2), SMART_EINVAL);
	CHECK_EQ(smart_dtx_txn_new(wd.d, wd.w, NULL), SMART_EINVAL);

	/* calls in the wrong state: nothing begun */
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_exec(x, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_commit(x, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_status(x, 0, &len), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, 0, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_delete(x, 0), SMART_EINVAL);
	/* NULLs */
	CHECK_EQ(smart_dtx_begin(NULL), SMART_EINVAL);
	CHECK_OK(smart_dtx_begin(x));
	CHECK_EQ(smart_dtx_read(NULL, T_SMALL, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read_for_update(NULL, T_SMALL, 1, &v8, 8),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(NULL, T_SMALL, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(x, T_SMALL, 1, NULL, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 1, NULL, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_exec(NULL, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_exec(x, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_commit(NULL, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_commit(x, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_abort(NULL, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_status(NULL, 0, &len), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(NULL, 0, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_delete(NULL, 0), SMART_EINVAL);
	CHECK_EQ(smart_dtx_item_versions(NULL, 0, &slot, &rv, &wv),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_last_cost(NULL, &cost), SMART_EINVAL);
	CHECK_EQ(smart_dtx_last_cost(x, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_stats(NULL, NULL, &st), SMART_EINVAL);
	CHECK_EQ(smart_dtx_stats(wd.d, NULL, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_check(NULL, wd.w, &bad), SMART_EINVAL);
	CHECK_EQ(smart_dtx_scan(NULL, wd.w, T_SMALL, NULL, NULL), SMART_EINVAL);
	CHECK_EQ(smart_dtx_recover(NULL, wd.w, SMART_DTX_ALL_BLADES, NULL),
		 SMART_EINVAL);
	CHECK_OK(smart_dtx_close(NULL, NULL));
	CHECK_OK(smart_dtx_txn_free(NULL, wd.w));
	/* bad items: unknown table, value too large, a buffer too small */
	CHECK_EQ(smart_dtx_read(x, 4, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, SMART_DTX_TABLES_MAX, 1, &v8, 8),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_read_for_update(x, 99, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(x, 4, 1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(x, T_SMALL, 1, big, 9), SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(x, T_BIG, 1, big, 1025), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 1, &v8, 7), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, T_BIG, 1, got, 1023), SMART_EINVAL);
	/* the transaction is still fine: nothing was queued */
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	CHECK_EQ(cost.round_trips, 0);

	/* insert, then read it back in a read-only transaction */
	v8 = 0x1111;
	api_put_new(&wd, x, T_SMALL, 10, &v8, 8);
	CHECK_OK(smart_dtx_item_versions(x, 0, &slot, &rv, &wv));
	CHECK_EQ(rv, 0);
	CHECK_GE(wv, 1);
	fill_bytes(big, sizeof(big), 1);
	api_put_new(&wd, x, T_BIG, 10, big, 1024); /* same key, other table */
	v8 = 0;
	CHECK_OK(api_get(&wd, x, T_SMALL, 10, &v8, 8, &len));
	CHECK(len == 8 && v8 == 0x1111);
	memset(got, 0, sizeof(got));
	CHECK_OK(api_get(&wd, x, T_BIG, 10, got, sizeof(got), &len));
	CHECK_EQ(len, 1024);
	CHECK(!memcmp(got, big, 1024));
	/* a value may be shorter than the table's; read with a NULL buffer */
	api_put_new(&wd, x, T_BIG, 11, "abc", 3);
	CHECK_OK(api_get(&wd, x, T_BIG, 11, got, sizeof(got), &len));
	CHECK(len == 3 && !memcmp(got, "abc", 3));
	CHECK_OK(api_get(&wd, x, T_BIG, 11, NULL, 0, &len));
	CHECK_EQ(len, 3);
	/* key 0 is a key like another */
	v8 = 0x2222;
	api_put_new(&wd, x, T_SMALL, 0, &v8, 8);
	CHECK_OK(api_get(&wd, x, T_SMALL, 0, &v8, 8, &len));
	CHECK_EQ(v8, 0x2222);
	/* absent keys */
	CHECK_EQ(api_get(&wd, x, T_SMALL, 12, &v8, 8, &len), SMART_ENOENT);
	CHECK_EQ(api_get(&wd, x, T_BIG, 12, got, sizeof(got), &len),
		 SMART_ENOENT);
	/* insert of a present key: EEXIST from status, nothing changed */
	CHECK_OK(smart_dtx_begin(x));
	v8 = 0x3333;
	i = smart_dtx_insert(x, T_SMALL, 10, &v8, 8);
	CHECK_GE(i, 0);
	CHECK_EQ(smart_dtx_status(x, i, &len), SMART_EINVAL); /* not run */
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_EQ(smart_dtx_status(x, i, &len), SMART_EEXIST);
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(api_get(&wd, x, T_SMALL, 10, &v8, 8, &len));
	CHECK_EQ(v8, 0x1111);
	/* update: read for update, write 1 KiB, commit, read back */
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_BIG, 10, got, sizeof(got));
	CHECK_GE(i, 0);
	j = smart_dtx_read(x, T_SMALL, 10, &v8, 8);
	CHECK_GE(j, 0);
	k = smart_dtx_read_for_update(x, T_SMALL, 12, &v8, 8); /* absent */
	CHECK_GE(k, 0);
	CHECK_EQ(smart_dtx_write(x, i, big, 8), SMART_EINVAL); /* not run */
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_OK(smart_dtx_status(x, i, &len));
	CHECK_EQ(len, 1024);
	CHECK(!memcmp(got, big, 1024));
	CHECK_OK(smart_dtx_status(x, j, &len));
	CHECK_EQ(smart_dtx_status(x, k, &len), SMART_ENOENT);
	CHECK_EQ(smart_dtx_status(x, 3, &len), SMART_EINVAL);
	CHECK_EQ(smart_dtx_status(x, -1, &len), SMART_EINVAL);
	/* a begin while it holds locks */
	CHECK_EQ(smart_dtx_begin(x), SMART_EINVAL);
	/* writes refused: to an item read only, an absent one, out of
	 * range, too long */
	CHECK_EQ(smart_dtx_write(x, j, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_delete(x, j), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, k, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, 3, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, -1, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, SMART_DTX_ITEMS_MAX, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_delete(x, 3), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, i, big, 1025), SMART_EINVAL);
	CHECK_EQ(smart_dtx_write(x, i, NULL, 8), SMART_EINVAL);
	fill_bytes(big, sizeof(big), 2);
	CHECK_OK(smart_dtx_write(x, i, big, 1024));
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(smart_dtx_item_versions(x, i, &slot, &rv, &wv));
	CHECK_GE(rv, 1);
	CHECK_EQ(wv, rv + 1);
	CHECK_OK(smart_dtx_item_versions(x, j, &slot, &rv, &wv));
	CHECK_GE(rv, 1);
	CHECK_EQ(wv, 0);
	CHECK_EQ(smart_dtx_item_versions(x, 3, &slot, &rv, &wv), SMART_EINVAL);
	/* after commit: no more items, no exec */
	CHECK_EQ(smart_dtx_write(x, i, big, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_exec(x, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_commit(x, wd.w), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 1, &v8, 8), SMART_EINVAL);
	CHECK_OK(api_get(&wd, x, T_BIG, 10, got, sizeof(got), &len));
	CHECK_EQ(len, 1024);
	CHECK(!memcmp(got, big, 1024));
	/* shorter again */
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_BIG, 10, NULL, 0);
	CHECK_GE(i, 0);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_OK(smart_dtx_write(x, i, "xy", 2));
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(api_get(&wd, x, T_BIG, 10, got, sizeof(got), &len));
	CHECK(len == 2 && !memcmp(got, "xy", 2));

	/* abort leaves no trace: an update, an insert, a delete */
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_SMALL, 10, &v8, 8);
	j = smart_dtx_insert(x, T_SMALL, 13, &v8, 8);
	k = smart_dtx_read_for_update(x, T_SMALL, 0, &v8, 8);
	CHECK(i >= 0 && j >= 0 && k >= 0);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_OK(smart_dtx_status(x, j, NULL));
	v8 = 0x4444;
	CHECK_OK(smart_dtx_write(x, i, &v8, 8));
	CHECK_OK(smart_dtx_delete(x, k));
	CHECK_OK(smart_dtx_abort(x, wd.w));
	CHECK_EQ(smart_dtx_commit(x, wd.w), SMART_EINVAL);
	CHECK_OK(api_get(&wd, x, T_SMALL, 10, &v8, 8, &len));
	CHECK_EQ(v8, 0x1111);
	CHECK_EQ(api_get(&wd, x, T_SMALL, 13, &v8, 8, &len), SMART_ENOENT);
	CHECK_OK(api_get(&wd, x, T_SMALL, 0, &v8, 8, &len));
	CHECK_EQ(v8, 0x2222);
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad)); /* no lock left */
	CHECK_EQ(bad, 0);
	/* a begin aborts an open transaction that holds no lock */
	CHECK_OK(smart_dtx_begin(x));
	CHECK_GE(smart_dtx_read(x, T_SMALL, 10, &v8, 8), 0);
	CHECK_OK(smart_dtx_begin(x));
	CHECK_OK(smart_dtx_commit(x, wd.w));

	/* delete, then read: absent; insert it again */
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read_for_update(x, T_SMALL, 10, NULL, 0);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_OK(smart_dtx_delete(x, i));
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(smart_dtx_item_versions(x, i, &slot, &rv, &wv));
	CHECK_EQ(wv, rv + 1);
	CHECK_EQ(api_get(&wd, x, T_SMALL, 10, &v8, 8, &len), SMART_ENOENT);
	v8 = 0x5555;
	api_put_new(&wd, x, T_SMALL, 10, &v8, 8);
	CHECK_OK(api_get(&wd, x, T_SMALL, 10, &v8, 8, &len));
	CHECK_EQ(v8, 0x5555);

	/* too many items: SMART_DTX_ITEMS_MAX, then SMART_ERANGE */
	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < SMART_DTX_ITEMS_MAX; i++)
		CHECK_EQ(smart_dtx_read(x, T_SMALL, 1000 + (unsigned)i, NULL,
					0),
			 i);
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 2000, NULL, 0), SMART_ERANGE);
	CHECK_EQ(smart_dtx_insert(x, T_SMALL, 2000, &v8, 8), SMART_ERANGE);
	CHECK_OK(smart_dtx_commit(x, wd.w));
	for (i = 0; i < SMART_DTX_ITEMS_MAX; i++)
		CHECK_EQ(smart_dtx_status(x, i, NULL), SMART_ENOENT);
	/* more writes than max_writes (16): SMART_ERANGE, for an insert, a
	 * write and a delete */
	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < 17; i++) {
		v8 = (uint64_t)i;
		k = smart_dtx_insert(x, T_SMALL, 3000 + (unsigned)i, &v8, 8);
		if (i < 16)
			CHECK_EQ(k, i);
		else
			CHECK_EQ(k, SMART_ERANGE);
	}
	CHECK_OK(smart_dtx_commit(x, wd.w));
	v8 = 16;
	api_put_new(&wd, x, T_SMALL, 3016, &v8, 8);
	CHECK_OK(smart_dtx_begin(x));
	for (i = 0; i < 17; i++)
		CHECK_EQ(smart_dtx_read_for_update(x, T_SMALL,
						   3000 + (unsigned)i, NULL, 0),
			 i);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	for (i = 0; i < 16; i++) {
		v8 = 100 + (uint64_t)i;
		CHECK_OK(smart_dtx_write(x, i, &v8, 8));
	}
	CHECK_OK(smart_dtx_write(x, 3, &v8, 8)); /* again: no new one */
	CHECK_EQ(smart_dtx_write(x, 16, &v8, 8), SMART_ERANGE);
	CHECK_EQ(smart_dtx_delete(x, 16), SMART_ERANGE);
	CHECK_OK(smart_dtx_abort(x, wd.w));
	/* one item per record */
	CHECK_OK(smart_dtx_begin(x));
	CHECK_EQ(smart_dtx_read(x, T_SMALL, 10, &v8, 8), 0);
	CHECK_EQ(smart_dtx_read_for_update(x, T_SMALL, 10, &v8, 8),
		 SMART_EINVAL);
	CHECK_EQ(smart_dtx_insert(x, T_SMALL, 10, &v8, 8), SMART_EINVAL);
	CHECK_EQ(smart_dtx_read(x, T_BIG, 10, NULL, 0), 1);
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(api_get(&wd, x, T_SMALL, 3016, &v8, 8, &len));
	CHECK_EQ(v8, 16);

	/* a second object opens the same database and sees the data */
	CHECK_OK(smart_dtx_open(wd.w, 1, "api", NULL, &d2));
	CHECK_OK(smart_dtx_table_info(d2, T_BIG, &vs, &prim, backs, &nb));
	CHECK(vs == 1024 && prim == 1 && nb == 1 && backs[0] == 2);
	CHECK_OK(smart_dtx_txn_new(d2, wd.w, &x2));
	CHECK_OK(api_get(&wd, x2, T_SMALL, 10, &v8, 8, &len));
	CHECK_EQ(v8, 0x5555);
	CHECK_EQ(smart_dtx_close(d2, NULL), SMART_EBUSY); /* x2 is open */
	CHECK_OK(smart_dtx_txn_free(x2, wd.w));
	CHECK_OK(smart_dtx_close(d2, NULL));

	/* scans: every record of a table once, its value; a non-zero
	 * return stops one */
	{
		struct api_scan sc = { 0, 0, 0 };

		CHECK_OK(smart_dtx_scan(wd.d, wd.w, T_BIG, api_scan_fn, &sc));
		CHECK_EQ(sc.n, 2);
		CHECK_EQ(sc.keys, 10 + 11);
		memset(&sc, 0, sizeof(sc));
		CHECK_OK(smart_dtx_scan(wd.d, wd.w, T_SMALL, api_scan_fn, &sc));
		CHECK_EQ(sc.n, 2 + 17); /* 0, 10, 3000..3016 */
		sc = (struct api_scan){ 0, 0, 1 };
		CHECK_EQ(smart_dtx_scan(wd.d, wd.w, T_SMALL, api_scan_fn, &sc),
			 42);
		CHECK_EQ(sc.n, 1);
		CHECK_EQ(smart_dtx_scan(wd.d, wd.w, 4, api_scan_fn, &sc),
			 SMART_EINVAL);
		CHECK_EQ(smart_dtx_scan(wd.d, wd.w, T_SMALL, NULL, &sc),
			 SMART_EINVAL);
	}
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	print_stats("api", &st);
	CHECK_GT(st.commits, 0);
	CHECK_GT(st.aborts, 0);
	CHECK_OK(smart_dtx_check(wd.d, wd.w, &bad));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));

	/* log slots run out: a database of 2 */
	c.log_slots = 2;
	CHECK_OK(smart_dtx_create(wd.w, 1, "tiny", &c, &tiny));
	CHECK_OK(smart_dtx_txn_new(tiny, wd.w, &xs[0]));
	CHECK_OK(smart_dtx_txn_new(tiny, wd.w, &xs[1]));
	CHECK_EQ(smart_dtx_txn_new(tiny, wd.w, &xs[2]), SMART_EBUSY);
	CHECK_OK(smart_dtx_txn_free(xs[0], wd.w));
	CHECK_OK(smart_dtx_txn_new(tiny, wd.w, &xs[2])); /* given back */
	CHECK_OK(smart_dtx_txn_free(xs[1], wd.w));
	CHECK_OK(smart_dtx_txn_free(xs[2], wd.w));
	CHECK_OK(smart_dtx_drop(tiny, wd.w));
	CHECK_EQ(smart_dtx_open(wd.w, 1, "tiny", NULL, &tiny), SMART_ENOENT);
	/* drop releases the name: it can be made again */
	CHECK_OK(smart_dtx_create(wd.w, 1, "tiny", &c, &tiny));
	CHECK_OK(smart_dtx_drop(tiny, wd.w));
	world_stop(&wd);
}

/* An insert that finds its key present read it: SMART_EEXIST is validated
 * at commit like a read.  x inserts K (present: EEXIST) and a new key N;
 * y deletes K and commits in between; x's commit must abort (else x would
 * say K existed and serialize after y, which removed it), leave N absent,
 * and count a failed validation.  Untouched, the same commits; alone, an
 * EEXIST insert needs no look at commit (its read is its point). */
void test_eexist(void)
{
	struct smart_dtx_table t = {
		.id = T_SMALL, .value_size = 8, .buckets = 64, .primary = -1
	};
	struct smart_dtx_config c;
	struct smart_dtx_stats st0, st;
	struct smart_dtx_cost cost;
	struct world wd;
	smart_dtx_txn_t *x, *y;
	uint64_t v8 = 7;
	size_t len;
	int k, n, i;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "eexist", &c, &wd.d));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &y));
	api_put_new(&wd, x, T_SMALL, 5, &v8, 8);

	/* untouched: EEXIST and the other insert commit */
	CHECK_OK(smart_dtx_begin(x));
	k = smart_dtx_insert(x, T_SMALL, 5, &v8, 8);
	n = smart_dtx_insert(x, T_SMALL, 6, &v8, 8);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_EQ(smart_dtx_status(x, k, NULL), SMART_EEXIST);
	CHECK_OK(smart_dtx_status(x, n, NULL));
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(api_get(&wd, x, T_SMALL, 6, &v8, 8, &len));

	/* K deleted between x's exec and its commit */
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st0));
	CHECK_OK(smart_dtx_begin(x));
	k = smart_dtx_insert(x, T_SMALL, 5, &v8, 8);
	n = smart_dtx_insert(x, T_SMALL, 8, &v8, 8);
	CHECK_OK(smart_dtx_exec(x, wd.w));
	CHECK_EQ(smart_dtx_status(x, k, NULL), SMART_EEXIST);
	CHECK_OK(smart_dtx_begin(y));
	i = smart_dtx_read_for_update(y, T_SMALL, 5, NULL, 0);
	CHECK_OK(smart_dtx_exec(y, wd.w));
	CHECK_OK(smart_dtx_delete(y, i));
	CHECK_OK(smart_dtx_commit(y, wd.w));
	CHECK_EQ(smart_dtx_commit(x, wd.w), SMART_EABORT);
	CHECK_OK(smart_dtx_stats(wd.d, NULL, &st));
	CHECK_GT(st.validate_fails, st0.validate_fails);
	CHECK_EQ(api_get(&wd, x, T_SMALL, 8, &v8, 8, &len), SMART_ENOENT);
	CHECK_EQ(api_get(&wd, x, T_SMALL, 5, &v8, 8, &len), SMART_ENOENT);

	/* alone, an EEXIST insert reads K once and commits without a look */
	CHECK_OK(smart_dtx_begin(x));
	k = smart_dtx_insert(x, T_SMALL, 6, &v8, 8);
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_EQ(smart_dtx_status(x, k, NULL), SMART_EEXIST);
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	printf("   a lone EEXIST insert: %u round trips\n",
	       (unsigned)cost.round_trips);
	CHECK_LE(cost.round_trips, 1);
	CHECK_OK(smart_dtx_txn_free(y, wd.w));
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	world_stop(&wd);
}

/* A peer's descriptor is input: one whose table would run past the
 * region's top (record addresses carrying into the device-memory bit and
 * the blade field), or whose log slots claim another size than its
 * tables give, is no database; put back, it opens again. */
void test_forged_descriptor(void)
{
	static const struct smart_dtx_table t = { 0, 8, 8, -1 };
	static const struct {
		unsigned off; /* in the descriptor (dtx_layout.h) */
		uint64_t val;
	} forge[] = {
		{ 208 + 24, SMART_GADDR_DM - 8 },     /* t[0].off[0] */
		{ 24, 1u << 29 },		      /* log_size */
		{ 80, SMART_GADDR_OFF_MASK & ~7ull }, /* log_off[0] */
		{ 40, SMART_GADDR_DM - 16 },	      /* owner_off */
	};
	struct smart_dtx_config c;
	struct world wd;
	smart_dtx_t *d;
	uint64_t meta = 0, e;
	unsigned i;

	world_start(&wd, NULL);
	smart_dtx_config_init(&c);
	c.tables = &t;
	c.ntables = 1;
	CHECK_OK(smart_dtx_create(wd.w, 1, "forge", &c, &wd.d));
	for (i = SMART_ROOT_NAMED_FIRST; i < SMART_ROOT_ENTRIES && !meta; i++) {
		CHECK_OK(smart_root_get(wd.w, 1, i, &e));
		if (e && e != SMART_ROOT_TOMB)
			meta = e; /* the only named structure here */
	}
	CHECK(meta != 0);
	for (i = 0; i < sizeof(forge) / sizeof(forge[0]); i++) {
		uint64_t real, bad = forge[i].val;
		size_t n = forge[i].off == 24 ? 4 : 8;

		CHECK_OK(smart_read_sync(wd.w, meta + forge[i].off, n, &real));
		CHECK_OK(smart_write_sync(wd.w, meta + forge[i].off, &bad, n));
		CHECK_EQ(smart_dtx_open(wd.w, 1, "forge", NULL, &d),
			 SMART_ENOENT);
		CHECK_OK(smart_write_sync(wd.w, meta + forge[i].off, &real, n));
		CHECK_OK(smart_dtx_open(wd.w, 1, "forge", NULL, &d));
		CHECK_OK(smart_dtx_close(d, NULL));
	}
	world_stop(&wd);
}

/* A free slot an insert of ours locked (its intent not written yet, its
 * key word 0) met by a later insert of key 0 in the same bucket: no
 * insert of key 0 by a live holder, but a slot of ours for another key.
 * Before the fix the second exec aborted, and so did every retry (the
 * bench's and test_dtx's TATP load of subscriber 0 met it). */
void test_insert_zero(void)
{
	struct smart_dtx_table t = {
		.id = 0, .value_size = 8, .buckets = 1, .primary = -1
	};
	struct smart_dtx_config c;
	struct world wd;
	smart_dtx_txn_t *x;
	uint64_t v1 = 11, v0 = 10, got;
	size_t len;
	int i, j, rc;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1); /* one bucket: every key's two choices */
	CHECK_OK(smart_dtx_create(wd.w, 1, "zero", &c, &wd.d));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_insert(x, 0, 1, &v1, 8);
	CHECK_OK(smart_dtx_exec(x, wd.w)); /* key 1's free slot locked */
	j = smart_dtx_insert(x, 0, 0, &v0, 8);
	rc = smart_dtx_exec(x, wd.w);
	printf("insert of key 0 beside our locked free slot: %s\n",
	       smart_status_name(rc));
	CHECK_OK(rc);
	CHECK_OK(smart_dtx_status(x, i, NULL));
	CHECK_OK(smart_dtx_status(x, j, NULL));
	CHECK_OK(smart_dtx_commit(x, wd.w));
	CHECK_OK(api_get(&wd, x, 0, 0, &got, 8, &len));
	CHECK_EQ(got, v0);
	CHECK_OK(api_get(&wd, x, 0, 1, &got, 8, &len));
	CHECK_EQ(got, v1);
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	world_stop(&wd);
}

/* One key inserted twice by one transaction (with an exec between, and
 * both queued together): the second is refused when queued (one item per
 * record, SMART_EINVAL, nothing queued).  Were it taken, both could take
 * a slot, and a delete would leave the other copy. */
static void insert_twice_on(struct world *wd, smart_dtx_txn_t *x, uint64_t key,
			    int exec_between)
{
	uint64_t v1 = 21, v2 = 22, got;
	int i, j, si, sj, rc, left;
	size_t len;

	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_insert(x, 0, key, &v1, 8);
	CHECK_GE(i, 0);
	if (exec_between)
		CHECK_OK(smart_dtx_exec(x, wd->w));
	j = smart_dtx_insert(x, 0, key, &v2, 8);
	rc = smart_dtx_commit(x, wd->w);
	si = smart_dtx_status(x, i, NULL);
	sj = j < 0 ? j : smart_dtx_status(x, j, NULL);
	CHECK_OK(smart_dtx_begin(x)); /* delete what a read finds */
	i = smart_dtx_read_for_update(x, 0, key, &got, 8);
	CHECK_OK(smart_dtx_exec(x, wd->w));
	if (!smart_dtx_status(x, i, &len))
		CHECK_OK(smart_dtx_delete(x, i));
	CHECK_OK(smart_dtx_commit(x, wd->w));
	left = api_get(wd, x, 0, key, &got, 8, &len) == 0;
	printf("insert_twice (%s): commit %s, the inserts %s and %s; after "
	       "one delete the key is %s\n",
	       exec_between ? "exec between" : "queued together",
	       smart_status_name(rc), smart_status_name(si),
	       smart_status_name(sj), left ? "STILL THERE" : "gone");
	CHECK(!left);
	CHECK_EQ(j, SMART_EINVAL);
	CHECK_OK(rc); /* the first went through alone */
	CHECK_OK(si);
}

void test_insert_twice(void)
{
	struct smart_dtx_table t = {
		.id = 0, .value_size = 8, .buckets = 4, .primary = -1
	};
	struct smart_dtx_config c;
	struct world wd;
	smart_dtx_txn_t *x;

	world_start(&wd, NULL);
	cfg_two(&c, &t, 1);
	CHECK_OK(smart_dtx_create(wd.w, 1, "twice", &c, &wd.d));
	CHECK_OK(smart_dtx_txn_new(wd.d, wd.w, &x));
	insert_twice_on(&wd, x, 5, 1);
	insert_twice_on(&wd, x, 6, 0);
	insert_twice_on(&wd, x, 0, 1);
	CHECK_OK(smart_dtx_txn_free(x, wd.w));
	world_stop(&wd);
}
