/*
 * YCSB on Smart-BT (include/smart/bt.h): the tree's memory per key, its
 * configuration for the run, its bulk-loaded preload, its operations
 * (scans for workload E), its figures and its drop.
 *
 * Invariants: with --table the tree is the named one of the first blade,
 * opened when it exists (else created; a creator that loses the race to
 * another opens the winner's); without, it is named by the first free
 * root entry from BT_ROOT_FIRST on of the first blade.  Its nodes spread
 * over every blade of the run; keys and values are at most the run's sizes (the tree's
 * maxima), so an entry is 8 + key + value bytes, rounded up to 8.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "smart/bt.h"
#include "ycsb.h"

#define BT_ROOT_FIRST 32    /* root entries tried for the tree */
#define BT_NODE	      1024u /* nodes: 1 KiB, or larger for big entries */

struct bt_handle {
	smart_bt_t *bt;
	unsigned root;
	const char *name; /* --table's, or NULL */
};

/* The tree's key and value maxima: the run's sizes, and for a shared
 * tree room for ycsb_share.c's records (keys up to 25 bytes, the key
 * space line up to 60). */
static unsigned key_max(const struct ycsb *y)
{
	return y->table && y->key_size < 32 ? 32 : (unsigned)y->key_size;
}

static unsigned val_max(const struct ycsb *y)
{
	return y->table && y->value_size < 64 ? 64 : (unsigned)y->value_size;
}

static uint64_t bt_entry(const struct ycsb *y)
{
	return (8 + (uint64_t)key_max(y) + val_max(y) + 7) & ~UINT64_C(7);
}

/* A node's 32-byte header and its two fences (key_max bytes each, rounded
 * up to 8 together: bt_layout.h). */
static uint64_t bt_fences(const struct ycsb *y)
{
	return 32 + ((2 * (uint64_t)key_max(y) + 7) & ~UINT64_C(7));
}

unsigned ycsb_bt_node_size(const struct ycsb *y)
{
	uint64_t fences = bt_fences(y);
	uint64_t inner = (10 + (uint64_t)key_max(y) + 7) & ~UINT64_C(7);
	uint64_t need = fences +
			4 * (bt_entry(y) > inner ? bt_entry(y) : inner);
	unsigned n = BT_NODE;

	while (n < need && n < SMART_BT_NODE_MAX)
		n *= 2;
	return n < need ? 0 : n;
}

/* Leaves half full after splits (the worst case; random inserts leave
 * them about 70% full), plus a node's header and fences and a share of
 * the internal levels: 2.5 entries' worth per key. */
static uint64_t bt_bytes_per_key(const struct ycsb *y)
{
	return bt_entry(y) * 5 / 2;
}

/* Updates write in place; an insert may split a leaf: a node per half a
 * leaf of inserts. */
static uint64_t bt_bytes_per_write(const struct ycsb *y)
{
	uint64_t node = ycsb_bt_node_size(y);
	uint64_t per_leaf = (node - bt_fences(y)) / bt_entry(y);

	return node / (per_leaf / 2 ? per_leaf / 2 : 1);
}

/* Speculative lookup slots: two per key there will be, a power of two. */
static unsigned spec_slots(const struct ycsb *y)
{
	uint64_t want = 2 * y->growth, n = 1024;

	while (n < want && n < (UINT64_C(1) << 24))
		n *= 2;
	return (unsigned)n;
}

/* ycsb_place's view of a tree being opened or made. */
struct bt_place {
	struct smart_bt_config c;
	struct bt_handle *h;
};

static int bt_open_named(void *arg, smart_worker_t *w, uint16_t home,
			 const char *name)
{
	struct bt_place *p = arg;

	return smart_bt_open_named(w, home, name, &p->c, &p->h->bt);
}

static int bt_create_named(void *arg, smart_worker_t *w, uint16_t home,
			   const char *name)
{
	struct bt_place *p = arg;

	return smart_bt_create_named(w, home, name, &p->c, &p->h->bt);
}

static int bt_create_at(void *arg, smart_worker_t *w, uint16_t home,
			unsigned root)
{
	struct bt_place *p = arg;

	return smart_bt_create(w, home, root, &p->c, &p->h->bt);
}

static const struct ycsb_place_ops bt_place_ops = {
	.what = "tree",
	.root_first = BT_ROOT_FIRST,
	.open_named = bt_open_named,
	.create_named = bt_create_named,
	.create_at = bt_create_at,
};

static int bt_create(struct ycsb *y, smart_worker_t *w, void **out)
{
	const struct kit_env *e = &y->run->env;
	struct bt_place p = { .h = calloc(1, sizeof(*p.h)) };
	int rc;

	if (!p.h)
		return SMART_ENOMEM;
	smart_bt_config_init(&p.c);
	p.c.key_max = key_max(y);
	p.c.val_max = val_max(y);
	p.c.node_size = ycsb_bt_node_size(y);
	p.c.blades = e->blade;
	p.c.nblades = (unsigned)e->nblades;
	p.c.cache_bytes = (size_t)y->cache_mb << 20;
	p.c.spec_entries = spec_slots(y);
	p.c.hocl = y->hocl;
	p.c.lock_memory = y->lock_memory;
	p.h->name = y->table;
	rc = ycsb_place(y, w, &bt_place_ops, &p, &p.h->root);
	if (rc) {
		free(p.h);
		return rc;
	}
	*out = p.h;
	return 0;
}

static void bt_close(void *h)
{
	struct bt_handle *t = h;

	if (t)
		smart_bt_close(t->bt, NULL); /* area adopted once we are gone */
	free(t);
}

static void bt_note(void *h, char *buf, size_t len)
{
	struct bt_handle *t = h;

	if (t->name)
		snprintf(buf, len, ", tree %s", t->name);
	else
		snprintf(buf, len, ", tree at root %u", t->root);
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

/* The tree's shape and what this process's object saw: the caches' hit
 * rates, HOCL's hand-overs and the remote lock CASes that failed. */
static void bt_report(void *h, smart_worker_t *w, struct kit_rec *rec,
		      char *line, size_t len)
{
	struct smart_bt_stats s;
	smart_stats_t c;
	uint64_t ch, cm, sh, sm;

	*line = 0;
	if (smart_bt_stats(((struct bt_handle *)h)->bt, NULL, &s) ||
	    smart_stats_snapshot(smart_worker_ctx(w), &c))
		return;
	ch = c.c[SMART_STAT_CACHE_HITS];
	cm = c.c[SMART_STAT_CACHE_MISSES];
	sh = c.c[SMART_STAT_SPEC_HITS];
	sm = c.c[SMART_STAT_SPEC_MISSES];
	kit_rec_num(rec, "bt_height", "%u", s.height);
	kit_rec_num(rec, "bt_leaf_splits", "%" PRIu64, s.leaf_splits);
	kit_rec_num(rec, "cache_hit_rate", "%.4f", ratio(ch, ch + cm));
	kit_rec_num(rec, "spec_hit_rate", "%.4f", ratio(sh, sh + sm));
	kit_rec_num(rec, "lock_handovers", "%" PRIu64, s.handovers);
	kit_rec_num(rec, "remote_lock_retries", "%" PRIu64, s.lock_retries);
	kit_rec_num(rec, "bt_torn_reads", "%" PRIu64, s.crc_retries);
	kit_rec_num(rec, "bt_move_rights", "%" PRIu64, s.move_rights);
	kit_rec_num(rec, "bt_lock_takeovers", "%" PRIu64, s.lock_takeovers);
	kit_rec_num(rec, "bt_repairs", "%" PRIu64, s.repairs);
	kit_rec_num(rec, "bt_merges", "%" PRIu64, s.merges);
	kit_rec_num(rec, "bt_dm_lock_tables", "%u", s.dm_lock_tables);
	snprintf(line, len,
		 "Smart-BT: height %u; this process: %" PRIu64
		 " leaf splits, index cache hits %.1f%%, speculative hits "
		 "%.1f%%, %" PRIu64 " lock hand-overs, %" PRIu64 " failed "
		 "remote lock CASes, %" PRIu64 " torn reads retried",
		 s.height, s.leaf_splits, 100 * ratio(ch, ch + cm),
		 100 * ratio(sh, sh + sm), s.handovers, s.lock_retries,
		 s.crc_retries);
}

static int bt_drop(void *h, smart_worker_t *w)
{
	struct bt_handle *t = h;
	int rc = smart_bt_drop(t->bt, w);

	if (!rc)
		free(t);
	return rc;
}

static int bt_search(void *h, smart_worker_t *w, const char *key, size_t klen,
		     void *val, size_t cap, size_t *len)
{
	return smart_bt_search(((struct bt_handle *)h)->bt, w, key, klen, val,
			       cap, len);
}

static int bt_insert(void *h, smart_worker_t *w, const char *key, size_t klen,
		     const void *val, size_t vlen)
{
	return smart_bt_insert(((struct bt_handle *)h)->bt, w, key, klen, val,
			       vlen);
}

static int bt_update(void *h, smart_worker_t *w, const char *key, size_t klen,
		     const void *val, size_t vlen)
{
	return smart_bt_update(((struct bt_handle *)h)->bt, w, key, klen, val,
			       vlen);
}

static int bt_del(void *h, smart_worker_t *w, const char *key, size_t klen)
{
	return smart_bt_delete(((struct bt_handle *)h)->bt, w, key, klen);
}

/* The entries land on the task's stack (2.4 KiB), then in kv[]. */
static int bt_scan(void *h, smart_worker_t *w, const char *key, size_t klen,
		   unsigned max, struct ycsb_kv *kv, void *buf, size_t cap,
		   unsigned *n)
{
	struct smart_bt_entry e[YCSB_SCAN_MAX];
	size_t got = 0, i;
	int rc;

	if (max > YCSB_SCAN_MAX)
		max = YCSB_SCAN_MAX;
	rc = smart_bt_scan(((struct bt_handle *)h)->bt, w, key, klen, NULL, 0,
			   e, max, buf, cap, &got);
	for (i = 0; i < got; i++) {
		kv[i].key = e[i].key;
		kv[i].klen = e[i].key_len;
		kv[i].val = e[i].val;
		kv[i].vlen = e[i].val_len;
	}
	*n = (unsigned)got;
	return rc;
}

/* Leaves 70% full: room for inserts before they split. */
static int bt_bulk(void *h, smart_worker_t *w,
		   int (*next)(void *arg, const void **key, size_t *klen,
			       const void **val, size_t *vlen),
		   void *arg, uint64_t *loaded)
{
	return smart_bt_bulk_load(((struct bt_handle *)h)->bt, w, next, arg, 70,
				  loaded);
}

const struct ycsb_ds ycsb_bt = {
	.name = "bt",
	.title = "Smart-BT",
	.bytes_per_key = bt_bytes_per_key,
	.bytes_per_write = bt_bytes_per_write,
	.create = bt_create,
	.close = bt_close,
	.note = bt_note,
	.search = bt_search,
	.insert = bt_insert,
	.update = bt_update,
	.del = bt_del,
	.scan = bt_scan,
	.bulk = bt_bulk,
	.report = bt_report,
	.drop = bt_drop,
};
