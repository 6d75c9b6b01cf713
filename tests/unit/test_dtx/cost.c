/*
 * test_dtx, round trips of SmallBank's six transactions (smart-bench's,
 * bench/workloads/smallbank.h) counted exactly (2 blades, 1 backup),
 * warm and cold, an insert, an abort.
 */
#include "dtx_test.h"

/* ---- round trips ---------------------------------------------------------- */

/* Bytes a SmallBank transaction updating w records writes (docs/dtx.md
 * §3, "Bytes written"), 2 blades, 1 backup: the undo log to both blades
 * from its head word (24 bytes of header, per record a 32-byte entry and
 * the old bytes [8, rec)), each record's bytes [16, rec) to both copies
 * (its key stays), a lock word of 0 per record. */
static uint64_t wb_want(unsigned w)
{
	const uint64_t rec = 32 + SB_VALUE;

	if (!w)
		return 0;
	return 2 * (24 + w * (32 + rec - 8)) + w * 2 * (rec - 16) + 8 * w;
}

/* One committed run of type on accounts a (and b); its round trips. */
static unsigned rt_of(struct wl_txn *t, const struct sb_cfg *c, int type,
		      uint64_t a, uint64_t b)
{
	struct smart_dtx_cost cost;
	struct wl_outcome o;
	struct wl_params p = { { 0 } };

	p.v[SB_A] = a;
	p.v[SB_B] = b;
	CHECK_OK(sb_once(t, c, type, &p, &o));
	CHECK(!o.failed);
	CHECK_OK(smart_dtx_last_cost(t->x, &cost));
	return cost.round_trips;
}

struct rt_arg {
	struct world *wd;
	struct sb_cfg cfg;
	struct wl_txn t[2]; /* on the warm object; on a cold one */
};

static void rt_task(smart_worker_t *w, void *arg)
{
	static const unsigned want[SB_NTYPES] = {
		[SB_AMALGAMATE] = 3, [SB_BALANCE] = 2, [SB_DEPOSIT] = 3,
		[SB_PAYMENT] = 3,    [SB_SAVING] = 3,  [SB_CHECK] = 3
	};
	static const unsigned writes[SB_NTYPES] = {
		[SB_AMALGAMATE] = 3, [SB_BALANCE] = 0, [SB_DEPOSIT] = 1,
		[SB_PAYMENT] = 2,    [SB_SAVING] = 1,  [SB_CHECK] = 1
	};
	struct rt_arg *a = arg;
	const struct sb_cfg *sc = &a->cfg;
	struct smart_dtx_config c;
	struct smart_dtx_cost cost;
	struct smart_dtx_stats st;
	smart_dtx_t *cold, *none;
	smart_dtx_txn_t *x, *y;
	struct wl_rec r[2];
	uint8_t v[SB_VALUE];
	unsigned t, rt, bad = 0;
	int64_t cents;
	size_t len;
	int i;

	CHECK_OK(smart_dtx_txn_new(a->wd->d, w, &x));
	a->t[0].x = x;
	a->t[0].w = w;
	for (t = 0; t < SB_NTYPES; t++) {
		rt_of(&a->t[0], sc, (int)t, 1 + t, 2 + t); /* cached */
		rt = rt_of(&a->t[0], sc, (int)t, 1 + t, 2 + t);
		CHECK_OK(smart_dtx_last_cost(x, &cost));
		printf("round trips: %-16s %u (want %u), %u ops, %" PRIu64
		       " bytes, %" PRIu64 " written (want %" PRIu64 ")\n",
		       sb_types[t].label, rt, want[t], cost.ops, cost.bytes,
		       cost.write_bytes, wb_want(writes[t]));
		if (rt != want[t] || cost.write_bytes != wb_want(writes[t]))
			bad++;
	}
	/* a read-only transaction of one record: no validation */
	CHECK_OK(smart_dtx_begin(x));
	i = smart_dtx_read(x, SB_SAVINGS, 3, v, sizeof(v));
	CHECK_OK(smart_dtx_commit(x, w));
	CHECK_OK(smart_dtx_status(x, i, &len));
	CHECK(sb_value_ok(sc, SB_SAVINGS, 3, v, len, &cents));
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	printf("round trips: read-only of 1     %u (want 1)\n",
	       cost.round_trips);
	bad += cost.round_trips != 1;
	/* an aborted transaction: exec (locks), abort (unlock) */
	CHECK_OK(smart_dtx_begin(x));
	CHECK_GE(smart_dtx_read_for_update(x, SB_CHECKING, 3, v, sizeof(v)), 0);
	CHECK_OK(smart_dtx_exec(x, w));
	CHECK_OK(smart_dtx_abort(x, w));
	CHECK_OK(smart_dtx_last_cost(x, &cost));
	printf("round trips: exec + abort       %u (want 2)\n",
	       cost.round_trips);
	bad += cost.round_trips != 2;
	/* cold: another object of the database, its cache empty; a key
	 * never looked up costs its bucket read, once */
	smart_dtx_config_init(&c);
	CHECK_OK(smart_dtx_open(w, 1, "sb", &c, &cold));
	CHECK_OK(smart_dtx_txn_new(cold, w, &y));
	a->t[1].x = y;
	a->t[1].w = w;
	rt = rt_of(&a->t[1], sc, SB_DEPOSIT, 9, 0);
	printf("round trips: cold deposit       %u (want 4)\n", rt);
	bad += rt != 4;
	rt = rt_of(&a->t[1], sc, SB_DEPOSIT, 9, 0);
	printf("round trips: then warm          %u (want 3)\n", rt);
	bad += rt != 3;
	rt = rt_of(&a->t[1], sc, SB_BALANCE, 10, 0);
	/* read-only items take their records from the bucket READ: no
	 * round trip more when cold (docs/dtx.md §3) */
	printf("round trips: cold balance       %u (want 2)\n", rt);
	bad += rt != 2;
	rt = rt_of(&a->t[1], sc, SB_AMALGAMATE, 11, 12);
	printf("round trips: cold amalgamate    %u (want 4: three "
	       "cold items, one round)\n",
	       rt);
	bad += rt != 4;
	/* an insert: both buckets, lock + read a free slot; then the
	 * intent with validation + log, commit (the unlock not waited) */
	cents = 0;
	sb_unit(sc, 100, r, &cents);
	CHECK_OK(smart_dtx_begin(y));
	CHECK_GE(smart_dtx_insert(y, SB_SAVINGS, 100, r[0].val, r[0].len), 0);
	CHECK_OK(smart_dtx_commit(y, w));
	CHECK_OK(smart_dtx_status(y, 0, NULL));
	CHECK_OK(smart_dtx_last_cost(y, &cost));
	printf("round trips: insert             %u (want 4)\n",
	       cost.round_trips);
	bad += cost.round_trips != 4;
	CHECK_OK(smart_dtx_txn_free(y, w));
	CHECK_OK(smart_dtx_close(cold, NULL));
	/* no cache at all: every item is cold every time */
	c.cache_entries = 0;
	CHECK_OK(smart_dtx_open(w, 1, "sb", &c, &none));
	CHECK_OK(smart_dtx_txn_new(none, w, &y));
	a->t[1].x = y;
	for (i = 0; i < 2; i++) {
		rt = rt_of(&a->t[1], sc, SB_PAYMENT, 13, 14);
		printf("round trips: no cache, send     %u (want 4)\n", rt);
		bad += rt != 4;
	}
	CHECK_OK(smart_dtx_txn_free(y, w));
	CHECK_OK(smart_dtx_close(none, NULL));
	CHECK_OK(smart_dtx_txn_free(x, w));
	/* the unlocks were not waited for: seen landed by READ-backs */
	CHECK_OK(smart_dtx_stats(a->wd->d, NULL, &st));
	printf("round trips: %" PRIu64 " unlocks seen landed afterwards\n",
	       st.unlocks_checked);
	CHECK_GT(st.unlocks_checked, 0);
	CHECK_MSG(!bad, "%u round-trip counts differ from the protocol's", bad);
}

void test_round_trips(void)
{
	struct smart_dtx_table t[SB_NTABLES];
	uint64_t records[SB_NTABLES];
	struct smart_dtx_config c;
	struct world wd;
	struct rt_arg *a = calloc(1, sizeof(*a));

	CHECK(a);
	a->wd = &wd;
	world_start(&wd, NULL);
	sb_test_cfg(&a->cfg, 32, 1000000);
	sb_tables(&a->cfg, t, records);
	t[SB_SAVINGS].buckets = t[SB_CHECKING].buckets = 64;
	cfg_two(&c, t, 2); /* no ledger */
	CHECK_OK(smart_dtx_create(wd.w, 1, "sb", &c, &wd.d));
	sb_load(wd.d, wd.w, &a->cfg, NULL);
	CHECK_OK(smart_task_spawn(wd.w, rt_task, a));
	CHECK_OK(smart_worker_run(wd.w));
	world_stop(&wd);
	free(a);
}
