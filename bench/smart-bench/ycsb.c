/*
 * `smart-bench ycsb`: YCSB (docs/design.md §9) on a Smart data structure.
 * This file is the module: its flags and their checks, the sizing of the
 * keys to the memory there is, the setup (blades, the structure, a shared
 * table's key space and client id) and the report.  ycsb_run.c has the
 * load, ycsb_share.c what sharing processes agree on, ycsb_<ds>.c the
 * structures.
 *
 * Invariants: the keys are scaled down, never the blade overcommitted
 * silently: a run that may outgrow its blade says so on stderr; the JSON
 * keys and the CSV columns are the documented interface (README): new
 * ones go at the end.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smart/bt.h"
#include "smart/ht.h"
#include "ycsb.h"

/* title, pct {read, update, insert, rmw, scan, delete}, latest, sweep,
 * churn */
const struct ycsb_workload ycsb_workloads[] = {
	{ "YCSB-A (50% read, 50% update)", { 50, 50, 0, 0 }, 0, 0, 0 },
	{ "YCSB-B (95% read, 5% update)", { 95, 5, 0, 0 }, 0, 0, 0 },
	{ "YCSB-C (100% read)", { 100, 0, 0, 0 }, 0, 0, 0 },
	{ "YCSB-D (95% read latest, 5% insert)", { 95, 0, 5, 0 }, 1, 0, 0 },
	{ "YCSB-E (95% scan of 1..100, 5% insert)",
	  { 0, 0, 5, 0, 95 },
	  0,
	  0,
	  0 },
	{ "YCSB-F (50% read, 50% read-modify-write)",
	  { 50, 0, 0, 50 },
	  0,
	  0,
	  0 },
	{ "update-only (100% update)", { 0, 100, 0, 0 }, 0, 0, 0 },
	{ "read-only (100% read)", { 100, 0, 0, 0 }, 0, 0, 0 },
	{ "sweep (every key read, then updated, once)",
	  { 50, 50, 0, 0 },
	  0,
	  1,
	  0 },
	{ "churn (50% insert of new keys, 50% delete of the process's own)",
	  { 0, 0, 50, 0, 0, 50 },
	  0,
	  0,
	  1 },
};

/* --workload's names, in the order of ycsb_workloads. */
static const char *const wl_names[] = {
	"a",	       "b",	    "c",     "d",     "e",  "f",
	"update-only", "read-only", "sweep", "churn", NULL,
};
_Static_assert(sizeof(wl_names) / sizeof(wl_names[0]) - 1 ==
		       sizeof(ycsb_workloads) / sizeof(ycsb_workloads[0]),
	       "a name for every workload");

/* --ds: the structures, built (an adapter) or to come (NULL). */
/* Indexes are SMART_BT_LOCKS_* */
static const char *const lock_memories[] = { "auto", "host", "device", NULL };
static const char *const ds_names[] = { "ht", "bt", NULL };
static const struct ycsb_ds *const ds_impl[] = { &ycsb_ht, &ycsb_bt, NULL };

const char *const ycsb_op_names[] = { "read", "update", "insert",
				      "rmw",  "scan",	"delete" };

#define Y struct ycsb
static const struct kit_flag ycsb_flags[] = {
	KIT_CHOICE("ds", Y, ds, ds_names, "ht|bt", "data structure [ht]"),
	KIT_CHOICE("workload", Y, wl, wl_names,
		   "a|b|c|d|e|f|update-only|read-only|sweep|churn",
		   "the mix; sweep: read, then update, every key once, for "
		   "as long as that takes (not --seconds); churn: inserts "
		   "of new keys and deletes of them, each key deleted by "
		   "the task that inserted it (splits and merges) [a]"),
	KIT_U64("keys", Y, keys, 1, (double)(1ull << 34), "N",
		"keys preloaded (scaled down to fit memory) [100000]"),
	KIT_INT("key-size", Y, key_size, 8, SMART_HT_KEY_MAX, "B",
		"key bytes (\"user\" + digits), 8..255 [16]"),
	KIT_INT("value-size", Y, value_size, 8, SMART_HT_VALUE_MAX, "B",
		"value bytes, 8..8192 (last 4: a CRC) [8]"),
	KIT_DOUBLE("zipf", Y, zipf, 0, 1, "THETA",
		   "scrambled Zipf, theta in [0,1) [0.99]"),
	KIT_FLAG("uniform", Y, uniform, "uniform keys instead of Zipf"),
	KIT_INT("coros", Y, coros, 1, 1024, "C",
		"coroutines per thread, 1..1024 [8]"),
	KIT_STR("table", Y, table, "NAME",
		"a named table other processes may share: opened when it "
		"exists, else created (and preloaded) [a new unnamed one]"),
	KIT_FLAG("no-preload", Y, no_preload,
		 "join --table's table as it is (needs --connect); --keys, "
		 "--key-size and --value-size must be its creator's"),
	KIT_FLAG("drop", Y, drop,
		 "destroy the table at the end of a run "
		 "that passed (no other process may still be using it)"),
	KIT_U64("insert-room", Y, insert_room, 1, (double)(1ull << 40), "N",
		"new keys, of all processes together, a table this run "
		"creates must grow to hold (it starts sized for --keys and "
		"splits as they come) [this run's estimate]"),
	KIT_INT("cache-mb", Y, cache_mb, 0, 1 << 20, "MiB",
		"bt: index cache of internal nodes per process, 0: none "
		"[64]"),
	KIT_INT("hocl", Y, hocl, 0, 1, "0|1",
		"bt: HOCL's local lock table (0: every task CASes the "
		"remote lock itself, as Sherman without HOCL) [1]"),
	KIT_U64("ops", Y, ops_max, 1, (double)(1ull << 50), "N",
		"the run is N operations of all threads together (YCSB's "
		"operationcount), instead of --seconds"),
	KIT_DOUBLE("target", Y, target, 1, 1e10, "OPS",
		   "operations per second of all threads together, each "
		   "coroutine paced to its share (YCSB's -target); latency "
		   "is timed from each op's start [no cap]"),
	KIT_CHOICE("lock-memory", Y, lock_memory, lock_memories,
		   "auto|host|device",
		   "bt: where a new tree's lock tables "
		   "go: the blades' device memory (NIC memory, smartd "
		   "--dm-size) where it has room, host memory always, or "
		   "device memory or fail [auto]"),
	KIT_END,
};
#undef Y

static const struct kit_col ycsb_csv[] = {
	{ "workload", "workload", NULL },
	{ "ds", "ds", NULL },
	{ "techniques", "techniques", NULL },
	{ "threads", "threads", NULL },
	{ "coros", "coros", NULL },
	{ "keys", "keys", NULL },
	{ "value_size", "value_size", NULL },
	{ "zipf", "zipf", NULL },
	{ "mops", "mops", NULL },
	{ "p50_us", "p50_us", NULL },
	{ "p99_us", "p99_us", NULL },
	{ "p999_us", "p999_us", NULL },
	{ "retries_per_op", "retries_per_op", NULL },
	{ "rdma_ops_per_op", "rdma_ops_per_op", NULL },
	{ "bytes_per_op", "bytes_per_op", NULL },
	{ "errors", "errors", NULL },
	{ "validation_failures", "validation_failures", NULL },
	{ "qp_mode", "qp_mode_effective", NULL },
	{ "transport", "transport", NULL },
	{ "nic_model", "nic_model", "off" },
	{ NULL, NULL, NULL },
};

static int place_named(struct ycsb *y, smart_worker_t *w,
		       const struct ycsb_place_ops *ops, void *arg)
{
	uint16_t home = y->run->env.blade[0];
	int rc = ops->open_named(arg, w, home, y->table);

	y->joined = !rc;
	if (rc != SMART_ENOENT || y->no_preload)
		return rc;
	rc = ops->create_named(arg, w, home, y->table);
	if (rc == SMART_EEXIST) {
		rc = ops->open_named(arg, w, home, y->table);
		y->joined = !rc;
	}
	return rc;
}

int ycsb_place(struct ycsb *y, smart_worker_t *w,
	       const struct ycsb_place_ops *ops, void *arg, unsigned *root)
{
	unsigned r;
	int rc = SMART_EEXIST;

	if (y->table)
		rc = place_named(y, w, ops, arg);
	/* numbered entries only: 64..255 are named ones' probe range, where
	 * a dropped structure would leave a tombstone */
	for (r = ops->root_first;
	     !y->table && r < SMART_ROOT_NAMED_FIRST && rc == SMART_EEXIST;
	     r++) {
		rc = ops->create_at(arg, w, y->run->env.blade[0], r);
		*root = r;
	}
	if (y->table && rc == SMART_ENOENT)
		fprintf(stderr,
			BENCH_TOOL ": --no-preload: there is no %s %s "
				   "to join (start its creator first, without "
				   "--no-preload)\n",
			ops->what, y->table);
	else if (rc)
		fprintf(stderr, BENCH_TOOL ": %s the %s: %s%s\n",
			y->no_preload ? "opening" : "creating", ops->what,
			smart_strerror(rc),
			y->lock_memory == SMART_BT_LOCKS_DEVICE &&
					(rc == SMART_ENOTSUP ||
					 rc == SMART_ENOSPC) ?
				" (--lock-memory device: a blade has no device memory "
				"left; smartd --dm-size)" :
				"");
	return rc;
}

static void *ycsb_create(struct bench_run *r)
{
	struct ycsb *y = calloc(1, sizeof(*y));

	if (!y)
		return NULL;
	y->run = r;
	y->keys = 100000;
	y->key_size = 16;
	y->value_size = 8;
	y->zipf = 0.99;
	y->coros = 8;
	y->cache_mb = 64;
	y->hocl = 1;
	atomic_flag_clear(&y->ack_lock);
	return y;
}

static void ycsb_check(void *m, struct bench_run *r)
{
	struct ycsb *y = m;
	int blades;
	double room = 1;
	int i;

	y->w = &ycsb_workloads[y->wl];
	y->dsi = ds_impl[y->ds];
	if (!y->dsi)
		kit_bad(BENCH_TOOL, "ds", NULL, "ds %s is not built yet",
			ds_names[y->ds]);
	if (y->dsi == &ycsb_bt &&
	    (y->value_size > SMART_BT_VALUE_MAX || !ycsb_bt_node_size(y)))
		kit_bad(BENCH_TOOL, "value-size", NULL,
			"bt takes values of at "
			"most %d bytes, with 4 entries (key + value + 8) in a "
			"node of at most %d",
			SMART_BT_VALUE_MAX, SMART_BT_NODE_MAX);

	if (y->w->pct[OP_SCAN] && !y->dsi->scan)
		kit_bad(BENCH_TOOL, "workload", NULL,
			"workload %s is not "
			"supported by %s (no range scans)",
			wl_names[y->wl], y->dsi->name);
	for (i = 4; i < y->key_size && room < 1e19; i++)
		room *= 10;
	if ((double)y->keys * 5 >= room)
		kit_bad(BENCH_TOOL, "key-size", NULL,
			"%d leaves %d digits: "
			"too few for %" PRIu64 " keys",
			y->key_size, y->key_size - 4, y->keys);
	blades = y->dsi == &ycsb_bt ? SMART_BT_BLADES_MAX : SMART_HT_SHARDS_MAX;
	if (r->com.connect.n > blades)
		kit_bad(BENCH_TOOL, "connect", NULL, "at most %d blades",
			blades);
	if (y->table && !smart_root_name_ok(y->table))
		kit_bad(BENCH_TOOL, "table", y->table,
			"want a name of 1..%d "
			"bytes",
			SMART_ROOT_NAME_MAX);
	if (y->no_preload && !y->table)
		kit_bad(BENCH_TOOL, "no-preload", NULL,
			"needs --table (the "
			"table to join)");
	if (y->no_preload && !r->com.connect.n)
		kit_bad(BENCH_TOOL, "no-preload", NULL,
			"needs --connect (an "
			"embedded blade holds no table to join)");
	if (y->ops_max && y->w->sweep)
		kit_bad(BENCH_TOOL, "ops", NULL,
			"the sweep's operations are its keys (--keys)");
	y->keys_asked = y->keys;
}

/* ---- sizing ---- */

/* What the allocator's workers hold for reuse (a bump region of up to a
 * 1-MiB chunk and up to 126 freed blocks for each size class in use: KV
 * blocks, subtables, batch nodes, directories: 4 counted), the blade's
 * own area and the structure's directories. */
static uint64_t headroom(const struct ycsb *y)
{
	uint64_t per_worker = 4 * ((UINT64_C(1) << 20) +
				   126 * y->dsi->bytes_per_write(y));

	return (UINT64_C(8) << 20) +
	       (uint64_t)(y->run->com.threads + 1) * per_worker;
}

/* MemAvailable, or 4 GiB when it cannot be read. */
static uint64_t mem_available(void)
{
	uint64_t m = kit_mem_available();

	return m ? m : UINT64_C(4) << 30;
}

/* Inserts while the run lasts: a generous estimate of how many (the
 * workload's share of 3 Mops per thread; D: 5%). */
static uint64_t insert_estimate(const struct ycsb *y)
{
	return (uint64_t)(y->w->pct[OP_INSERT] / 100.0 * 3e6 *
			  y->run->com.threads * y->run->com.seconds);
}

/* New keys the table must hold: --insert-room (a shared table's, for
 * every process), else this run's estimate.  The blade gets room for all
 * of them (a lazy blade costs only what is touched); the table is built
 * for at most 4 N more of this run's own and splits beyond
 * (insert_table_room), or, given --insert-room, for the N keys alone: it
 * grows by splits as the others insert (the splits are part of what a
 * shared table is run for). */
static uint64_t insert_room(const struct ycsb *y)
{
	return y->insert_room ? y->insert_room : insert_estimate(y);
}

static uint64_t insert_table_room(const struct ycsb *y)
{
	uint64_t est = insert_estimate(y), cap = y->keys * 4;

	if (y->insert_room)
		return 0;
	return est < cap ? est : cap;
}

/* Writes allocate a new KV block out of place; the old one comes back
 * after its grace period (the core's epochs, docs/epochs.md): room for
 * what may wait for it at once, 4096 blocks per worker (its bounded
 * retired list) and as many with the keeper. */
static uint64_t write_room(const struct ycsb *y)
{
	const int *p = y->w->pct;

	if (!p[OP_UPDATE] && !p[OP_RMW])
		return 0;
	return (uint64_t)(y->run->com.threads + 1) * 2 * 4096 *
	       y->dsi->bytes_per_write(y);
}

/* Keys are scaled down when the structure would take more than half of
 * the memory there is (embedded: 60% of what the machine has available;
 * connected blades: their regions).  Says so on stderr.  A run that
 * joins a table (--no-preload) finds its keys there already: they are the
 * table's, never scaled, and cost it nothing more. */
static int size_memory(struct ycsb *y, uint64_t budget)
{
	struct kit_common *c = &y->run->com;
	uint64_t per = y->dsi->bytes_per_key(y);
	uint64_t hr = headroom(y) * (uint64_t)(c->connect.n ? c->connect.n : 1);
	uint64_t live = y->no_preload ? 0 : y->keys;
	uint64_t need = (live + insert_room(y)) * per + hr, fit;

	if (need > budget / 2 && !y->no_preload) {
		fit = budget / 2 > hr ? (budget / 2 - hr) / per : 0;
		if (y->w->pct[OP_INSERT])
			fit /= 5;
		/* before the clamp: a --keys below 1000 that fits is fine */
		if (fit < 1000 && fit < y->keys) {
			fprintf(stderr,
				BENCH_TOOL ": not enough memory for "
					   "even 1000 keys (%" PRIu64 " MiB)\n",
				budget >> 20);
			return SMART_ENOSPC;
		}
		if (fit >= y->keys) /* the inserts to come do not fit */
			fit = y->keys;
		if (fit < y->keys)
			fprintf(stderr,
				BENCH_TOOL ": scaling keys down from %" PRIu64
					   " to %" PRIu64 " to fit %" PRIu64
					   " MiB\n",
				y->keys, fit, budget >> 20);
		y->keys = fit;
	}
	y->capacity = y->keys + insert_table_room(y);
	y->growth = y->keys + insert_room(y);
	/* keys inserted beyond the table's first size cost a split's worth
	 * (subtables left half full): twice their share */
	need = (live + 2 * insert_room(y)) * per + hr + write_room(y);
	if (need > budget)
		fprintf(stderr,
			BENCH_TOOL ": the run may outgrow the blade "
				   "(%" PRIu64 " MiB free)\n",
			budget >> 20);
	if (!c->connect.n && !c->blade_size)
		c->blade_size = need < budget ? need : budget;
	if (c->blade_size && c->blade_size < (16u << 20))
		c->blade_size = 16u << 20;
	return 0;
}

/* Connected blades: the budget is what the one with the least free space
 * can still give (other clients may be using it), times their number
 * (the keys are sharded evenly). */
static uint64_t connected_budget(const struct kit_env *e, smart_worker_t *w)
{
	struct smart_alloc_usage u;
	uint64_t min = UINT64_MAX;
	int i;

	for (i = 0; i < e->nblades; i++) {
		uint64_t f = smart_alloc_usage(w, e->blade[i], &u) ?
				     e->info[i].alloc_max :
				     u.free;

		min = f < min ? f : min;
	}
	return min * (uint64_t)e->nblades;
}

/* ---- setup ---- */

/* What the run needs in this process: the key generator, the threads'
 * and D's bookkeeping.  (The worker that creates the structure is made
 * before, for the sizing, and stays for the run.) */
static int setup_local(struct ycsb *y, struct bench_run *r)
{
	int rc = y->uniform ? 0 :
			      smart_zipf_init(&y->zipf_gen, y->keys, y->zipf);

	y->t = calloc((size_t)r->com.threads, sizeof(*y->t));
	y->ack_done = calloc(YCSB_ACK_WINDOW, sizeof(*y->ack_done));
	if (!rc && (!y->t || !y->ack_done))
		rc = SMART_ENOMEM;
	if (rc)
		fprintf(stderr, BENCH_TOOL ": setup: %s\n", smart_strerror(rc));
	return rc;
}

/* New keys: "u" + client + "-" + j (ycsb.h); j gets the digits left. */
static int new_keys_room(struct ycsb *y)
{
	int i;

	y->new_prefix_len = snprintf(y->new_prefix, sizeof(y->new_prefix),
				     "u%d-", y->client);
	y->new_digits = y->key_size - y->new_prefix_len;
	y->new_max = 1;
	for (i = 0; i < y->new_digits && y->new_max < UINT64_C(1) << 60; i++)
		y->new_max *= 10;
	if (!y->w->pct[OP_INSERT] || insert_estimate(y) < y->new_max)
		return 0;
	fprintf(stderr,
		BENCH_TOOL
		": --key-size: %d bytes leave client %d "
		"room for %" PRIu64 " new keys; this run may insert about "
		"%" PRIu64 " (inserts beyond fail with SMART_ERANGE)\n",
		y->key_size, y->client, y->new_max, insert_estimate(y));
	return 0;
}

/* A named table: a new one is preloaded by this run; an existing one is
 * joined only when asked (--no-preload) and when its key space is this
 * run's; a run that inserts claims a client id for its new keys. */
static int share_setup(struct ycsb *y)
{
	int rc = 0;

	if (!y->table)
		return new_keys_room(y);
	if (y->joined && !y->no_preload) {
		fprintf(stderr,
			BENCH_TOOL
			": --table: table %s exists: join "
			"it with --no-preload (or drop it: --no-preload "
			"--drop)\n",
			y->table);
		return SMART_EEXIST;
	}
	if (y->no_preload)
		rc = ycsb_share_check(y, y->main_worker);
	if (!rc && y->w->pct[OP_INSERT])
		rc = ycsb_share_claim(y, y->main_worker);
	return rc ? rc : new_keys_room(y);
}

static int ycsb_setup(void *m, struct bench_run *r)
{
	struct ycsb *y = m;
	char kv[32];
	const char *const kvs[] = { kv, NULL };
	int rc = 0;

	/* every coroutine is a task: room for twice --coros over 32 (the
	 * library's default is 64) */
	snprintf(kv, sizeof(kv), "max_tasks=%d",
		 y->coros * 2 > 1024 ? 1024 : y->coros * 2);
	if (!r->com.connect.n)
		rc = size_memory(y, r->com.blade_size ?
					    r->com.blade_size :
					    mem_available() / 10 * 6);
	if (!rc)
		rc = kit_env_open(&r->env, &r->com, y->coros > 32 ? kvs : NULL);
	if (!rc)
		rc = smart_worker_create(r->env.ctx, &y->main_worker);
	if (!rc && r->com.connect.n)
		rc = size_memory(y, connected_budget(&r->env, y->main_worker));
	if (!rc)
		rc = setup_local(y, r);
	if (!rc)
		rc = y->dsi->create(y, y->main_worker, &y->h);
	if (!rc)
		rc = share_setup(y);
	return rc;
}

static void ycsb_destroy(void *m)
{
	struct ycsb *y = m;

	if (y->h)
		y->dsi->close(y->h);
	smart_worker_destroy(y->main_worker);
	free(y->t);
	free((void *)y->ack_done);
	free(y);
}

/* ---- report ---- */

/* The Blades line's note: where the table is and what became of it (taken
 * before a drop, which closes the structure). */
static void table_note(const struct ycsb *y, char *note, size_t len)
{
	size_t n;

	y->dsi->note(y->h, note, len);
	n = strlen(note);
	if (y->table)
		snprintf(note + n, len - n, " (%s)",
			 y->joined ? "joined" : "created and preloaded");
	n = strlen(note);
	if (y->w->pct[OP_INSERT])
		snprintf(note + n, len - n, ", new keys u%d-*", y->client);
}

static void print_header(const struct ycsb *y, const struct bench_run *r,
			 const char *note)
{
	char dist[48];

	if (y->uniform)
		snprintf(dist, sizeof(dist), "uniform");
	else
		snprintf(dist, sizeof(dist), "scrambled Zipf %.2f", y->zipf);
	kit_rule();
	printf("                %s on %s (smart-bench %s)\n", y->w->title,
	       y->dsi->title, SMART_VERSION_STRING);
	kit_head_env(&r->com, &r->env, note);
	kit_head("Keys", "%" PRIu64 "%s x (%d B key, %d B value), %s", y->keys,
		 y->keys != y->keys_asked ? " (scaled down)" : "", y->key_size,
		 y->value_size, dist);
	kit_head("Threads x coros",
		 "%d x %d (one operation in flight per "
		 "coroutine)",
		 r->com.threads, y->coros);
	if (y->no_preload)
		snprintf(dist, sizeof(dist), "no preload (joined)");
	else
		snprintf(dist, sizeof(dist), "a %.2f s preload", y->load.secs);
	kit_head("Duration",
		 y->w->sweep ? "%.2f s (one pass) after %s" :
		 y->ops_max  ? "%.2f s (the --ops) after %s" :
			       "%.1f s after %s",
		 y->win.secs, dist);
	if (y->target > 0)
		kit_head("Target", "%.0f ops/s (achieved %.0f)", y->target,
			 y->res.mops * 1e6);
	kit_rule();
}

/* Round trips per op of each kind the run did, then the allocator's. */
static void print_rt(const struct ycsb_result *s)
{
	const char *sep = "";
	int k;

	printf(" round trips per op:");
	for (k = 0; k < OP__N; k++)
		if (s->n[k]) {
			printf("%s %s %.3f", sep, ycsb_op_names[k], s->rt[k]);
			sep = ",";
		}
	printf("; of all ops %.3f, of which the allocator's %.4f\n",
	       s->rt_per_op, s->alloc_rt_per_op);
}

/* YCSB's per-operation lines: each kind's count and latency (min, avg,
 * max exact; the quantiles from one op in KIT_LAT_SAMPLE, three
 * significant digits). */
static void print_op_lat(const struct ycsb_result *s)
{
	const struct kit_lat *l;
	char b[7][32];
	int k;

	printf(" %-12s %-11s %-8s %-8s %-8s %-8s %-8s %-9s %s\n", "op", "#ops",
	       "min[us]", "avg[us]", "p50[us]", "p95[us]", "p99[us]",
	       "p999[us]", "max[us]");
	for (k = 0; k < OP__N; k++) {
		if (!s->n[k])
			continue;
		l = &s->op_lat[k];
		printf(" %-12s %-11" PRIu64 " %-8s %-8s %-8s %-8s %-8s %-9s "
		       "%s\n",
		       ycsb_op_names[k], s->n[k],
		       kit_fmt_sig(l->min_us, b[0], sizeof(b[0])),
		       kit_fmt_sig(l->avg_us, b[1], sizeof(b[1])),
		       kit_fmt_sig(l->p50_us, b[2], sizeof(b[2])),
		       kit_fmt_sig(l->p95_us, b[3], sizeof(b[3])),
		       kit_fmt_sig(l->p99_us, b[4], sizeof(b[4])),
		       kit_fmt_sig(l->p999_us, b[5], sizeof(b[5])),
		       kit_fmt_sig(l->max_us, b[6], sizeof(b[6])));
	}
}

static void print_table(const struct ycsb *y, const struct bench_run *r,
			const char *note, const char *ds_line)
{
	const struct ycsb_result *s = &y->res;
	int k;

	char b[3][32];

	print_header(y, r, note);
	printf(" %-12s %-11s %-8s %-8s %-8s %-8s %-9s %-11s %-11s %-7s %-9s "
	       "%s\n",
	       "workload", "#ops", "Mops", "p50[us]", "p99[us]", "p999[us]",
	       "max[us]", "retries/op", "rdma-ops/op", "rt/op", "bytes/op",
	       "errors");
	printf(" %-12s %-11" PRIu64 " %-8.3f %-8s %-8s %-8s %-9.0f "
	       "%-11.4f %-11.2f %-7.3f %-9.1f %" PRIu64 "\n",
	       wl_names[y->wl], s->ops, s->mops,
	       kit_fmt_sig(s->lat.p50_us, b[0], sizeof(b[0])),
	       kit_fmt_sig(s->lat.p99_us, b[1], sizeof(b[1])),
	       kit_fmt_sig(s->lat.p999_us, b[2], sizeof(b[2])), s->max_us,
	       s->retries_per_op, s->rdma_ops_per_op, s->rt_per_op,
	       s->bytes_per_op, s->errors);
	print_op_lat(s);
	kit_rule();
	print_rt(s);
	printf(" mix:");
	for (k = 0; k < OP__N; k++)
		if (s->n[k])
			printf(" %s %.1f%%", ycsb_op_names[k],
			       100.0 * (double)s->n[k] / (double)s->ops);
	printf("; validation failures %" PRIu64 "; %.3f Mops per thread\n",
	       s->vfail, s->mops / r->com.threads);
	if (s->retired)
		printf(" reclamation: %" PRIu64 " blocks retired, %" PRIu64
		       " freed (%.2f%%) by the end of the run\n",
		       s->retired, s->freed,
		       100.0 * (double)s->freed / (double)s->retired);
	if (s->mem_ok) {
		char line[256];

		kit_usage_format(&s->mem, line, sizeof(line));
		printf(" blade memory at the end: %s\n", line);
	}
	kit_library_line(&y->win.st);
	if (*ds_line)
		printf(" %s\n", ds_line);
	if (y->w->sweep)
		printf(" sweep: %" PRIu64 " of %" PRIu64 " keys read and "
		       "updated\n",
		       s->swept, y->keys);
	if (y->drop)
		printf(" table dropped: %s\n", y->h ? "no" : "yes");
	if (s->errors)
		printf(" errors: %" PRIu64 ", the first %s (%s)\n", s->errors,
		       smart_status_name(s->first_err),
		       smart_strerror(s->first_err));
}

static void record_run(const struct ycsb *y, const struct bench_run *r,
		       struct kit_rec *rec)
{
	kit_rec_str(rec, "workload", wl_names[y->wl]);
	kit_rec_str(rec, "ds", y->dsi->name);
	kit_rec_num(rec, "threads", "%d", r->com.threads);
	kit_rec_num(rec, "coros", "%d", y->coros);
	kit_rec_num(rec, "keys", "%" PRIu64, y->keys);
	kit_rec_num(rec, "keys_asked", "%" PRIu64, y->keys_asked);
	kit_rec_num(rec, "key_size", "%d", y->key_size);
	kit_rec_num(rec, "value_size", "%d", y->value_size);
	kit_rec_num(rec, "zipf", "%.3f", y->uniform ? 0 : y->zipf);
	kit_rec_str(rec, "distribution", y->uniform ? "uniform" : "zipf");
	kit_rec_num(rec, "seconds", "%.3f", y->win.secs);
}

static void record_result(const struct ycsb *y, struct kit_rec *rec)
{
	const struct ycsb_result *s = &y->res;

	kit_rec_num(rec, "ops", "%" PRIu64, s->ops);
	kit_rec_num(rec, "mops", "%.4f", s->mops);
	kit_rec_lat(rec, &s->lat);
	kit_rec_num(rec, "retries_per_op", "%.4f", s->retries_per_op);
	kit_rec_num(rec, "rdma_ops_per_op", "%.4f", s->rdma_ops_per_op);
	kit_rec_num(rec, "bytes_per_op", "%.2f", s->bytes_per_op);
	kit_rec_num(rec, "reads", "%" PRIu64, s->n[OP_READ]);
	kit_rec_num(rec, "updates", "%" PRIu64, s->n[OP_UPDATE]);
	kit_rec_num(rec, "inserts", "%" PRIu64, s->n[OP_INSERT]);
	kit_rec_num(rec, "rmws", "%" PRIu64, s->n[OP_RMW]);
	kit_rec_num(rec, "scans", "%" PRIu64, s->n[OP_SCAN]);
	kit_rec_num(rec, "scanned_entries", "%" PRIu64, s->scanned);
	kit_rec_num(rec, "deletes", "%" PRIu64, s->n[OP_DELETE]);
	kit_rec_num(rec, "errors", "%" PRIu64, s->errors);
	kit_rec_str(rec, "first_error",
		    s->errors ? smart_status_name(s->first_err) : "");
	kit_rec_num(rec, "validation_failures", "%" PRIu64, s->vfail);
	kit_rec_num(rec, "epoch_retired", "%" PRIu64, s->retired);
	kit_rec_num(rec, "epoch_freed", "%" PRIu64, s->freed);
	if (s->mem_ok) {
		kit_rec_num(rec, "mem_used_bytes", "%" PRIu64, s->mem.used);
		kit_rec_num(rec, "mem_free_bytes", "%" PRIu64, s->mem.free);
		kit_rec_num(rec, "mem_cached_bytes", "%" PRIu64, s->mem.cached);
	}
}

static void record_env(const struct ycsb *y, const struct bench_run *r,
		       struct kit_rec *rec)
{
	const smart_stats_t *st = &y->win.st;
	smart_ctx_t *ctx = r->env.ctx;

	kit_rec_str(rec, "techniques", smart_ctx_techniques(ctx));
	kit_rec_str(rec, "qp_mode_effective", smart_ctx_qp_mode(ctx));
	kit_rec_str(rec, "transport", smart_ctx_transport(ctx));
	kit_rec_str(rec, "nic_model", r->env.nic_model);
	kit_rec_str(rec, "shm_adversarial", r->env.adversarial);
	kit_rec_num(rec, "blades", "%d", r->env.nblades);
	kit_rec_num(rec, "embedded", "%s", r->env.embedded ? "true" : "false");
	kit_rec_num(rec, "load_secs", "%.3f", y->load.secs);
	kit_rec_library(rec, st);
	kit_rec_num(rec, "guarded_retries_per_op", "%.4f", st->retries_per_op);
	kit_rec_num(rec, "reads_per_op", "%.4f",
		    (double)st->c[SMART_STAT_READS] /
			    (double)(y->res.ops ? y->res.ops : 1));
}

/* Round trips and bytes moved per op (null for a kind the run did not
 * do), the slowest op, the table and what became of it. */
static void record_rt(const struct ycsb *y, struct kit_rec *rec)
{
	static const char *const keys[OP__N] = { "rt_read",   "rt_update",
						 "rt_insert", "rt_rmw",
						 "rt_scan",   "rt_delete" };
	static const char *const bkeys[OP__N] = {
		"bytes_read", "bytes_update", "bytes_insert",
		"bytes_rmw",  "bytes_scan",   "bytes_delete"
	};
	const struct ycsb_result *s = &y->res;
	int k;

	kit_rec_num(rec, "round_trips_per_op", "%.4f", s->rt_per_op);
	kit_rec_num(rec, "alloc_round_trips_per_op", "%.6f",
		    s->alloc_rt_per_op);
	for (k = 0; k < OP__N; k++)
		if (s->n[k])
			kit_rec_num(rec, keys[k], "%.4f", s->rt[k]);
		else
			kit_rec_num(rec, keys[k], "null");
	for (k = 0; k < OP__N; k++)
		if (s->n[k])
			kit_rec_num(rec, bkeys[k], "%.1f", s->bytes[k]);
		else
			kit_rec_num(rec, bkeys[k], "null");
	kit_rec_num(rec, "max_us", "%.1f", s->max_us);
	kit_rec_str(rec, "table", y->table ? y->table : "");
	kit_rec_num(rec, "joined", "%s", y->joined ? "true" : "false");
	kit_rec_num(rec, "client_id", "%d", y->client);
	kit_rec_num(rec, "dropped", "%s", y->drop && !y->h ? "true" : "false");
	kit_rec_num(rec, "swept", "%" PRIu64, s->swept);
	kit_rec_num(rec, "stop_signal", "%d", s->stop_sig);
}

/* Each kind's latency, for the kinds the run did: <op>_<stat>_us. */
static void record_op_lat(const struct ycsb *y, struct kit_rec *rec)
{
#define LAT_KEYS(op)                                                           \
	{                                                                      \
		op "_min_us", op "_avg_us", op "_p50_us", op "_p95_us",        \
			op "_p99_us", op "_p999_us", op "_max_us"              \
	}
	static const char *const keys[OP__N][7] = {
		LAT_KEYS("read"), LAT_KEYS("update"), LAT_KEYS("insert"),
		LAT_KEYS("rmw"),  LAT_KEYS("scan"),   LAT_KEYS("delete"),
	};
#undef LAT_KEYS
	const struct ycsb_result *s = &y->res;
	char b[32];
	int k, i;

	for (k = 0; k < OP__N; k++) {
		const struct kit_lat *l = &s->op_lat[k];
		double v[7] = { l->min_us, l->avg_us,  l->p50_us, l->p95_us,
				l->p99_us, l->p999_us, l->max_us };

		if (!s->n[k])
			continue;
		for (i = 0; i < 7; i++)
			kit_rec_num(rec, keys[k][i], "%s",
				    kit_fmt_sig(v[i], b, sizeof(b)));
	}
}

/* --drop, after the structure's figures are taken (they need it). */
static void drop(struct ycsb *y)
{
	y->res.drop_rc = y->dsi->drop(y->h, y->main_worker);
	if (y->res.drop_rc)
		fprintf(stderr, BENCH_TOOL ": --drop: %s\n",
			smart_strerror(y->res.drop_rc));
	else
		y->h = NULL;
}

/* What makes a measured run a failure (said on stderr when loud); 0 if
 * none. */
static int verdict(const struct ycsb *y, int loud)
{
	const struct ycsb_result *s = &y->res;

	if (!loud)
		return (y->w->sweep && s->swept < y->keys) || s->errors ||
				       s->vfail || s->first_err ?
			       SMART_EPROTO :
			       s->drop_rc;
	if (y->w->sweep && s->swept < y->keys) {
		fprintf(stderr,
			BENCH_TOOL ": the sweep stopped after %" PRIu64
				   " of %" PRIu64 " keys\n",
			s->swept, y->keys);
		return SMART_EAGAIN;
	}
	if (s->errors || s->vfail || s->first_err) {
		const char *cause = kit_env_cause(&y->run->env);

		fprintf(stderr,
			BENCH_TOOL ": the run failed: %" PRIu64
				   " errors%s%s, %" PRIu64
				   " validation failures%s%s\n",
			s->errors, s->first_err ? ", the first " : "",
			s->first_err ? smart_strerror(s->first_err) : "",
			s->vfail, *cause ? "; the library: " : "", cause);
		return s->vfail	    ? SMART_EPROTO :
		       s->first_err ? s->first_err :
				      SMART_EPROTO;
	}
	return s->drop_rc;
}

/* A run with errors or failed validations, an unfinished sweep or a
 * failed drop is a failed run, its results printed all the same.  A
 * failed run keeps its table (--drop is not done: it stays for a look).
 * The blades' memory is taken after the drop: it shows what came back. */
static int ycsb_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct ycsb *y = m;
	struct kit_rec ds;
	char ds_line[320], note[128];
	int i;

	table_note(y, note, sizeof(note));
	kit_rec_init(&ds);
	y->dsi->report(y->h, y->main_worker, &ds, ds_line, sizeof(ds_line));
	if (y->drop && !verdict(y, 0))
		drop(y);
	else if (y->drop)
		fprintf(stderr, BENCH_TOOL ": --drop: not done: the run failed "
					   "(the table stays for a look)\n");
	ycsb_mem_fill(y);
	if (!r->com.json)
		print_table(y, r, note, ds_line);
	record_run(y, r, rec);
	record_result(y, rec);
	record_env(y, r, rec);
	record_rt(y, rec);
	for (i = 0; i < ds.n; i++)
		if (ds.f[i].str)
			kit_rec_str(rec, ds.f[i].key, ds.f[i].val);
		else
			kit_rec_num(rec, ds.f[i].key, "%s", ds.f[i].val);
	/* issue 29's keys, after every older one (the order is the interface) */
	kit_rec_num(rec, "ops_asked", "%" PRIu64, y->ops_max);
	kit_rec_num(rec, "target_ops_per_s", "%.0f", y->target);
	record_op_lat(y, rec);
	return verdict(y, 1);
}

const struct bench_module bench_ycsb = {
	.name = "ycsb",
	.summary = "YCSB a-f on Smart-HT or (--ds bt) Smart-BT",
	.about = "  YCSB on a Smart data structure.  Without --connect an "
		 "embedded blade is\n  started in this process (sized from "
		 "the keys unless --blade-size);\n  several --connect (up to "
		 "16) shard the table over blades.\n"
		 "  Sharing a table: the first process creates and preloads "
		 "it (--table NAME),\n  the others join it (--table NAME "
		 "--no-preload) with the same --keys,\n  --key-size and "
		 "--value-size (checked against the table); each process that\n"
		 "  inserts claims a client id in the table, so new keys never "
		 "collide.\n  SIGINT/SIGTERM end the measured window early; "
		 "the run still reports.\n",
	.flags = ycsb_flags,
	.csv = ycsb_csv,
	.create = ycsb_create,
	.check = ycsb_check,
	.setup = ycsb_setup,
	.run = ycsb_run,
	.report = ycsb_report,
	.destroy = ycsb_destroy,
};
