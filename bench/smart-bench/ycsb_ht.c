/*
 * YCSB on Smart-HT (include/smart/ht.h): the table's memory per key, its
 * geometry for the keys to come, its operations, its figures and its
 * drop.
 *
 * Invariants: with --table the table is the named one of the first blade,
 * opened when it exists (else created; a creator that loses the race to
 * another opens the winner's); without, it is named by the first free
 * root entry from HT_ROOT_FIRST on of the first blade (a long-running
 * smartd keeps the tables of earlier runs unless --drop).  A table this
 * run creates is sized at load factor 1/2 for y->capacity keys and
 * sharded over every blade of the run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "smart/ht.h"
#include "ycsb.h"

#define HT_ROOT_FIRST 16 /* root entries tried for the table */

struct ht_handle {
	smart_ht_t *ht;
	unsigned root;
};

/* A KV block (16-byte header, key, value) as the allocator hands it
 * out: a power of two of at least 64 bytes. */
static uint64_t ht_kv_bytes(const struct ycsb *y)
{
	uint64_t n = 16 + (uint64_t)y->key_size + (uint64_t)y->value_size;
	uint64_t p = 64;

	while (p < n)
		p *= 2;
	return p;
}

/* Table bytes per key at load factor 1/2 (7 slots in 64 B, plus the
 * overflow third) and the key's KV block. */
static uint64_t ht_bytes_per_key(const struct ycsb *y)
{
	return 2 * 64 * 3 / (7 * 2) + 1 + ht_kv_bytes(y);
}

/* Geometry at load factor 1/2 (a subtable of nb main buckets, each with
 * half an overflow bucket, holds 10.5 nb slots): subtables big enough that
 * the deepest directory (2^8 of them) holds y->growth keys, and as many at
 * the start as y->capacity keys need; the table splits in between. */
static void ht_geometry(const struct ycsb *y, struct smart_ht_config *hc)
{
	const struct kit_env *e = &y->run->env;
	uint64_t cap = y->capacity / (uint64_t)e->nblades + 1;
	uint64_t grow = y->growth / (uint64_t)e->nblades + 1, nb;
	unsigned depth = 4;

	nb = 4 * grow / (21 << SMART_HT_DEPTH_MAX) + 1;
	nb = (nb + 63) & ~UINT64_C(63);
	if (nb > (1u << 20))
		nb = 1u << 20;
	while (depth < SMART_HT_DEPTH_MAX &&
	       (UINT64_C(21) << depth) * nb < 4 * cap)
		depth++;
	hc->depth = depth;
	hc->buckets = (unsigned)nb;
	hc->blades = e->blade;
	hc->nblades = (unsigned)e->nblades;
}

/* ycsb_place's view of a table being opened or made. */
struct ht_place {
	struct smart_ht_config hc;
	struct ht_handle *h;
};

static int ht_open_named(void *arg, smart_worker_t *w, uint16_t home,
			 const char *name)
{
	struct ht_place *p = arg;

	return smart_ht_open_named(w, home, name, NULL, &p->h->ht);
}

static int ht_create_named(void *arg, smart_worker_t *w, uint16_t home,
			   const char *name)
{
	struct ht_place *p = arg;

	return smart_ht_create_named(w, home, name, &p->hc, &p->h->ht);
}

static int ht_create_at(void *arg, smart_worker_t *w, uint16_t home,
			unsigned root)
{
	struct ht_place *p = arg;

	return smart_ht_create(w, home, root, &p->hc, &p->h->ht);
}

static const struct ycsb_place_ops ht_place_ops = {
	.what = "table",
	.root_first = HT_ROOT_FIRST,
	.open_named = ht_open_named,
	.create_named = ht_create_named,
	.create_at = ht_create_at,
};

static int ht_create(struct ycsb *y, smart_worker_t *w, void **out)
{
	struct ht_place p = { .h = calloc(1, sizeof(*p.h)) };
	int rc;

	if (!p.h)
		return SMART_ENOMEM;
	smart_ht_config_init(&p.hc);
	ht_geometry(y, &p.hc);
	/* simulated (docs/sim.md): the run's seed picks the hash seeds too,
	 * so that a seed gives the same table and the same run */
	if (smart_sim_active())
		p.hc.seed = y->run->com.seed | 1;
	rc = ycsb_place(y, w, &ht_place_ops, &p, &p.h->root);
	if (rc) {
		free(p.h);
		return rc;
	}
	*out = p.h;
	return 0;
}

static void ht_close(void *h)
{
	struct ht_handle *t = h;

	if (t)
		smart_ht_close(t->ht, NULL);
	free(t);
}

static void ht_note(void *h, char *buf, size_t len)
{
	struct ht_handle *t = h;

	if (*smart_ht_name(t->ht))
		snprintf(buf, len, ", table %s", smart_ht_name(t->ht));
	else
		snprintf(buf, len, ", table at root %u", t->root);
}

/* The table's shape and what this process's object saw happen to it:
 * splits, and the work of dead clients it finished or undid. */
static void ht_report(void *h, smart_worker_t *w, struct kit_rec *rec,
		      char *line, size_t len)
{
	struct smart_ht_stats s;

	*line = 0;
	if (smart_ht_stats(((struct ht_handle *)h)->ht, w, &s))
		return;
	kit_rec_num(rec, "ht_subtables", "%u", s.subtables);
	kit_rec_num(rec, "ht_global_depth", "%u", s.global_depth);
	kit_rec_num(rec, "ht_splits", "%" PRIu64, s.splits);
	kit_rec_num(rec, "ht_recovered", "%" PRIu64, s.recovered);
	kit_rec_num(rec, "ht_tent_cleared", "%" PRIu64, s.tent_cleared);
	kit_rec_num(rec, "ht_leaked", "%" PRIu64, s.leaked);
	snprintf(line, len,
		 "Smart-HT: %u subtables (global depth %u); "
		 "this process: %" PRIu64 " splits, %" PRIu64 " dead "
		 "clients' splits recovered, %" PRIu64 " of their tentative "
		 "slots cleared, %" PRIu64 " blocks leaked",
		 s.subtables, s.global_depth, s.splits, s.recovered,
		 s.tent_cleared, s.leaked);
}

static int ht_drop(void *h, smart_worker_t *w)
{
	struct ht_handle *t = h;
	int rc = smart_ht_drop(t->ht, w);

	if (!rc)
		free(t);
	return rc;
}

static int ht_search(void *h, smart_worker_t *w, const char *key, size_t klen,
		     void *val, size_t cap, size_t *len)
{
	return smart_ht_search(((struct ht_handle *)h)->ht, w, key, klen, val,
			       cap, len);
}

static int ht_insert(void *h, smart_worker_t *w, const char *key, size_t klen,
		     const void *val, size_t vlen)
{
	return smart_ht_insert(((struct ht_handle *)h)->ht, w, key, klen, val,
			       vlen);
}

static int ht_update(void *h, smart_worker_t *w, const char *key, size_t klen,
		     const void *val, size_t vlen)
{
	return smart_ht_update(((struct ht_handle *)h)->ht, w, key, klen, val,
			       vlen);
}

static int ht_del(void *h, smart_worker_t *w, const char *key, size_t klen)
{
	return smart_ht_delete(((struct ht_handle *)h)->ht, w, key, klen);
}

const struct ycsb_ds ycsb_ht = {
	.name = "ht",
	.title = "Smart-HT",
	.bytes_per_key = ht_bytes_per_key,
	.bytes_per_write = ht_kv_bytes,
	.create = ht_create,
	.close = ht_close,
	.note = ht_note,
	.search = ht_search,
	.insert = ht_insert,
	.update = ht_update,
	.del = ht_del,
	.report = ht_report,
	.drop = ht_drop,
};
