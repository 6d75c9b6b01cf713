/*
 * Smart-HT: table creation, opening and the client-side directory cache.
 *
 * Create builds every shard's directory and subtables (with their bucket
 * headers written, since reused remote memory is not zeroed), then the
 * descriptor (with hash seeds drawn at random, so that nobody can choose
 * keys that collide in a table they did not see created), and publishes
 * the descriptor last by CAS on a root entry: a reader that finds the root
 * entry set finds a complete table.  A lost CAS frees what was built
 * (ht_admin.c probes further for a named table instead).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ds/ht/ht_internal.h"
#include "ds/common/ds_common.h"

#define HT_SPLIT_GROUPS 320u /* 60 KiB of buckets per split step */

void smart_ht_config_init(struct smart_ht_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->depth = 2;
	cfg->buckets = 1024;
	/* 128 KiB per table object (a CPU's L2): the hot keys of a skewed
	 * workload; 64 Ki entries hit more but miss the CPU cache */
	cfg->spec_cache = 16384;
	/* A store should not leak; with several tasks per worker the
	 * announcements are amortised (YCSB-A 2x8: no measurable cost). */
	cfg->reclaim = 1;
}

int smart__ht_config_ok(const struct smart_ht_config *c)
{
	if (c->nblades > SMART_HT_SHARDS_MAX || (c->blades && !c->nblades))
		return 0;
	if (c->depth > SMART_HT_DEPTH_MAX)
		return 0;
	if (c->buckets < 2 || c->buckets > HT_BUCKETS_MAX || (c->buckets & 1))
		return 0;
	if (c->split_chunk &&
	    (c->split_chunk < HT_GROUP || c->split_chunk > (16u << 20)))
		return 0;
	return !(c->spec_cache & (c->spec_cache - 1));
}

/* Write subtable `idx` (all buckets: header, empty slots) at dst. */
static int fill_subtable(smart_worker_t *w, struct ht_bucket *buf,
			 smart_gaddr_t dst, uint64_t size, unsigned depth,
			 unsigned idx)
{
	size_t n = HT_BUILD_BUF / HT_BUCKET, i;
	uint64_t off;
	int rc = 0;

	memset(buf, 0, HT_BUILD_BUF);
	for (i = 0; i < n; i++) {
		buf[i].local_depth = depth;
		buf[i].suffix = idx;
	}
	for (off = 0; off < size && !rc; off += HT_BUILD_BUF) {
		uint64_t len = size - off < HT_BUILD_BUF ? size - off :
							   HT_BUILD_BUF;

		rc = smart_write_sync(w, smart_gaddr_add(dst, off), buf, len);
	}
	return rc;
}

/* Build shard blade's directory and subtables (one allocation each, as a
 * split makes them, so that drop frees them alike); *dir_addr receives the
 * directory's gaddr.  On an error nothing stays allocated. */
static int build_shard(smart_worker_t *w, const struct smart_ht_config *c,
		       uint16_t blade, void *fill, struct ht_dir *dir,
		       smart_gaddr_t *dir_addr)
{
	uint64_t ssz = smart__ht_sub_bytes(c->buckets), n = UINT64_C(1)
							    << c->depth;
	uint64_t built, k;
	smart_gaddr_t sub;
	int rc = 0;

	memset(dir, 0, sizeof(*dir));
	dir->global_depth = c->depth;
	dir->reclaim = !!c->reclaim;
	for (built = 0; built < n; built++) {
		rc = smart_alloc(w, blade, ssz, &sub);
		if (rc)
			break;
		rc = fill_subtable(w, fill, sub, ssz, c->depth,
				   (unsigned)built);
		if (rc) {
			smart_free(w, sub, ssz);
			break;
		}
		/* entries beyond 2^depth alias like a doubled directory */
		for (k = built; k < HT_DIR_ENTRIES; k += n)
			dir->ent[k] = HT_ENT(c->depth, smart_gaddr_off(sub));
	}
	if (!rc)
		rc = smart_alloc(w, blade, sizeof(*dir), dir_addr);
	if (!rc) {
		rc = smart_write_sync(w, *dir_addr, dir, sizeof(*dir));
		if (!rc)
			return 0;
		smart_free(w, *dir_addr, sizeof(*dir));
	}
	for (k = 0; k < built; k++)
		smart_free(w, smart_gaddr(blade, HT_ENT_OFF(dir->ent[k])), ssz);
	return rc;
}

/* Random hash seeds: the kernel's (like the blade's tokens); or derived
 * from a chosen seed. */
static int seeds_draw(uint64_t seed[2], uint64_t chosen)
{
	if (chosen) {
		seed[0] = smart_hash64(&chosen, sizeof(chosen), 1);
		seed[1] = smart_hash64(&chosen, sizeof(chosen), 2);
		return 0;
	}
	return getrandom(seed, 2 * sizeof(*seed), 0) ==
			       (ssize_t)(2 * sizeof(*seed)) ?
		       0 :
		       SMART_ESYS;
}

/* Free shards 0..n-1 of a table that was built but not published. */
static void unbuild(smart_worker_t *w, const struct smart_ht_config *c,
		    struct ht_build *b, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		(void)smart__ht_shard_free(w,
					   smart_gaddr_blade(b->meta->dir[i]),
					   b->meta->dir[i],
					   smart__ht_sub_bytes(c->buckets),
					   b->dir, b->fill);
}

int smart__ht_build(smart_worker_t *w, uint16_t home,
		    const struct smart_ht_config *c, const char *name,
		    struct ht_build *b)
{
	unsigned n = c->blades ? c->nblades : 1, i;
	struct ht_meta *m = b->meta;
	int rc;

	memset(m, 0, sizeof(*m));
	m->magic = HT_MAGIC;
	m->version = HT_VERSION;
	m->nshards = n;
	m->depth = c->depth;
	m->buckets = c->buckets;
	if (name)
		strncpy(m->name, name, HT_NAME_MAX);
	rc = seeds_draw(m->seed, c->seed);
	for (i = 0; i < n && !rc; i++) {
		rc = build_shard(w, c, c->blades ? c->blades[i] : home, b->fill,
				 b->dir, &m->dir[i]);
		if (rc)
			break;
	}
	if (rc) {
		unbuild(w, c, b, i);
		return rc;
	}
	rc = smart_alloc(w, home, sizeof(*m), &b->maddr);
	if (!rc) {
		rc = smart_write_sync(w, b->maddr, m, sizeof(*m));
		if (rc)
			smart_free(w, b->maddr, sizeof(*m));
	}
	if (rc)
		unbuild(w, c, b, n);
	return rc;
}

void smart__ht_build_free(smart_worker_t *w, const struct smart_ht_config *c,
			  struct ht_build *b)
{
	smart_free(w, b->maddr, sizeof(*b->meta));
	unbuild(w, c, b, b->meta->nshards);
}

int smart__ht_build_begin(smart_worker_t *w, struct ht_build *b)
{
	void *p;
	int rc;

	b->mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w,
				 HT_BUILD_BUF + sizeof(struct ht_dir) +
					 sizeof(struct ht_meta),
				 &p);
	if (rc)
		return rc;
	b->fill = p;
	b->dir = (struct ht_dir *)((char *)p + HT_BUILD_BUF);
	b->meta = (struct ht_meta *)(b->dir + 1);
	return 0;
}

static int table_new(smart_worker_t *w, const struct ht_meta *m, uint64_t maddr,
		     uint16_t home, unsigned root, unsigned spec_cache,
		     unsigned split_chunk, smart_ht_t **out)
{
	smart_ctx_t *ctx = smart_worker_ctx(w);
	smart_ht_t *t = calloc(1, sizeof(*t));
	unsigned i;
	int rc = 0;

	if (!t)
		return SMART_ENOMEM;
	if (spec_cache) {
		t->spec = calloc(spec_cache, sizeof(*t->spec));
		if (!t->spec) {
			free(t);
			return SMART_ENOMEM;
		}
		t->spec_mask = spec_cache - 1;
	}
	t->ctx = ctx;
	t->home = home;
	t->root = root;
	t->maddr = maddr;
	t->nshards = m->nshards;
	t->buckets = m->buckets;
	t->split_groups = split_chunk ? split_chunk / HT_GROUP :
					HT_SPLIT_GROUPS;
	t->seed[0] = m->seed[0];
	t->seed[1] = m->seed[1];
	memcpy(t->name, m->name, sizeof(t->name));
	t->name[HT_NAME_MAX] = 0;
	for (i = 0; i < m->nshards && !rc; i++) {
		t->shard[i].blade = smart_gaddr_blade(m->dir[i]);
		t->shard[i].dir = m->dir[i];
		/* our id on that blade names our locks and tentative slots */
		rc = smart_lease_id(ctx, t->shard[i].blade, &t->shard[i].lease);
	}
	for (i = 0; i < t->nshards && !rc; i++) {
		uint64_t reclaim;

		/* written once at create: read once, at open */
		rc = smart_read_sync(w,
				     smart_gaddr_add(t->shard[i].dir,
						     offsetof(struct ht_dir,
							      reclaim)),
				     8, &reclaim);
		t->shard[i].reclaim = !rc && reclaim != 0;
		if (!rc)
			rc = smart__ht_dir_refresh(t, w, &t->shard[i]);
	}
	if (rc) {
		smart_ht_close(t, NULL);
		return rc == SMART_EREMOTE ? SMART_ENOENT : rc;
	}
	*out = t;
	return 0;
}

static int meta_valid(const struct ht_meta *m)
{
	unsigned i;

	if (m->magic != HT_MAGIC || m->version != HT_VERSION)
		return 0;
	if (!m->nshards || m->nshards > SMART_HT_SHARDS_MAX ||
	    m->depth > SMART_HT_DEPTH_MAX || m->buckets < 2 ||
	    m->buckets > HT_BUCKETS_MAX || (m->buckets & 1))
		return 0;
	if (m->name[HT_NAME_MAX])
		return 0;
	for (i = 0; i < m->nshards; i++)
		if (m->dir[i] == SMART_GADDR_NULL || (m->dir[i] & 7))
			return 0;
	return 1;
}

int smart__ht_meta_read(smart_worker_t *w, uint16_t blade, uint64_t maddr,
			struct ht_meta *m)
{
	int rc;

	if (!maddr || maddr == SMART_ROOT_TOMB || maddr == SMART_GADDR_NULL ||
	    smart_gaddr_blade(maddr) != blade || (maddr & 7))
		return SMART_ENOENT;
	rc = smart_read_sync(w, maddr, sizeof(*m), m);
	if (rc == SMART_EREMOTE || (!rc && !meta_valid(m)))
		rc = SMART_ENOENT;
	return rc;
}

int smart__ht_table_open(smart_worker_t *w, uint16_t blade, unsigned root,
			 uint64_t maddr, const struct ht_meta *m,
			 const struct smart_ht_config *c, smart_ht_t **out)
{
	return table_new(w, m, maddr, blade, root, c ? c->spec_cache : 16384,
			 c ? c->split_chunk : 0, out);
}

int smart_ht_create(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		    const struct smart_ht_config *cfg, smart_ht_t **out)
{
	struct smart_ht_config def;
	struct ht_build b;
	uint64_t cur, old;
	int rc;

	smart_ht_config_init(&def);
	if (cfg && smart__ds_config_take(&def, sizeof(def), HT_CFG_ALIGN, cfg))
		return SMART_EINVAL;
	cfg = &def;
	if (!w || !out || root_idx >= SMART_ROOT_ENTRIES ||
	    !smart__ht_config_ok(cfg))
		return SMART_EINVAL;
	rc = smart_root_get(w, blade, root_idx, &cur);
	if (rc)
		return rc;
	/* free, or the tombstone of a dropped table */
	if (cur && cur != SMART_ROOT_TOMB)
		return SMART_EEXIST;
	rc = smart__ht_build_begin(w, &b);
	if (!rc)
		rc = smart__ht_build(w, blade, cfg, NULL, &b);
	if (!rc) {
		rc = smart_root_cas(w, blade, root_idx, cur, b.maddr, &old);
		if (!rc && old != cur)
			rc = SMART_EEXIST;
		if (rc)
			smart__ht_build_free(w, cfg, &b);
	}
	if (!rc)
		rc = smart__ht_table_open(w, blade, root_idx, b.maddr, b.meta,
					  cfg, out);
	smart_scratch_release(w, b.mark);
	return rc;
}

int smart__ht_open_at(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		      uint64_t maddr, const struct smart_ht_config *cfg,
		      smart_ht_t **out)
{
	struct ht_meta *m;
	size_t mark = smart_scratch_mark(w);
	int rc = smart_scratch_alloc(w, sizeof(*m), (void **)&m);

	if (!rc)
		rc = smart__ht_meta_read(w, blade, maddr, m);
	if (!rc)
		rc = smart__ht_table_open(w, blade, root_idx, maddr, m, cfg,
					  out);
	smart_scratch_release(w, mark);
	return rc;
}

int smart_ht_open(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		  const struct smart_ht_config *cfg, smart_ht_t **out)
{
	struct smart_ht_config def;
	uint64_t maddr;
	int rc;

	smart_ht_config_init(&def);
	if (!w || !out || root_idx >= SMART_ROOT_ENTRIES ||
	    (cfg &&
	     smart__ds_config_take(&def, sizeof(def), HT_CFG_ALIGN, cfg)) ||
	    !smart__ht_config_ok(&def))
		return SMART_EINVAL;
	rc = smart_root_get(w, blade, root_idx, &maddr);
	return rc ? rc :
		    smart__ht_open_at(w, blade, root_idx, maddr, &def, out);
}

int smart__ht_own(const smart_ht_t *t, const smart_worker_t *w)
{
	return w &&
	       (smart_worker_ctx(w) == t->ctx || SMART_M_HT_FOREIGN_WORKER);
}

int smart_ht_close(smart_ht_t *t, smart_worker_t *w)
{
	/* nothing remote to give back (the table stays): w may be NULL */
	if (!t)
		return 0;
	if (w && !smart__ht_own(t, w))
		return SMART_EINVAL;
	free(t->spec);
	free(t);
	return 0;
}

/* Distinct subtables among the first 2^depth directory entries. */
static unsigned count_subtables(const struct ht_shard *sh, unsigned depth)
{
	unsigned n = 1u << depth, i, j, distinct = 0;

	for (i = 0; i < n; i++) {
		uint64_t off = HT_ENT_OFF(atomic_load(&sh->ent[i]));

		for (j = 0; j < i; j++)
			if (HT_ENT_OFF(atomic_load(&sh->ent[j])) == off)
				break;
		distinct += j == i;
	}
	return distinct;
}

static int ht_stats_fill(smart_ht_t *t, smart_worker_t *w,
			 struct smart_ht_stats *out)
{
	smart_stats_t st;
	unsigned i, d;
	int rc;

	if (!t || !smart__ht_own(t, w) || !out)
		return SMART_EINVAL;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < t->nshards; i++) {
		rc = smart__ht_dir_refresh(t, w, &t->shard[i]);
		if (rc)
			return rc;
		d = (unsigned)atomic_load(&t->shard[i].depth);
		out->global_depth = d > out->global_depth ? d :
							    out->global_depth;
		out->subtables += count_subtables(&t->shard[i], d);
	}
	out->splits = atomic_load(&t->splits);
	out->recovered = atomic_load(&t->recovered);
	out->tent_cleared = atomic_load(&t->tent_cleared);
	out->leaked = atomic_load(&t->leaked);
	out->header_retries = atomic_load(&t->header_retries);
	out->verify_retries = atomic_load(&t->verify_retries);
	out->frozen_hits = atomic_load(&t->frozen_hits);
	rc = smart_stats_snapshot(smart_worker_ctx(w), &st);
	if (rc)
		return rc;
	out->retired = st.c[SMART_STAT_EPOCH_RETIRED];
	out->freed = st.c[SMART_STAT_EPOCH_FREED];
	return 0;
}

int smart_ht_stats_sized(smart_ht_t *t, smart_worker_t *w,
			 struct smart_ht_stats *out, size_t size)
{
	struct smart_ht_stats full;
	int rc = out ? ht_stats_fill(t, w, &full) : SMART_EINVAL;

	return rc ? rc : smart__ds_out_give(out, size, &full, sizeof(full));
}

unsigned smart_ht_shards(const smart_ht_t *t)
{
	return t ? t->nshards : 0;
}

int smart__ht_dir_refresh(smart_ht_t *t, smart_worker_t *w, struct ht_shard *sh)
{
	struct ht_dir *d;
	size_t mark;
	unsigned i;
	int rc;

	(void)t; /* the same signature as the other shard calls */
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, HT_DIR_CACHED, (void **)&d);
	if (rc)
		return rc;
	rc = smart_read_sync(w, sh->dir, HT_DIR_CACHED, d);
	/* another client's writing: checked before it is trusted */
	if (!rc && d->global_depth > SMART_HT_DEPTH_MAX)
		rc = SMART_EPROTO;
	for (i = 0; !rc && i < HT_DIR_ENTRIES; i++)
		if (!smart__ht_ent_ok(d->ent[i]))
			rc = SMART_EPROTO;
	if (!rc) {
		for (i = 0; i < HT_DIR_ENTRIES; i++)
			atomic_store_explicit(&sh->ent[i], d->ent[i],
					      memory_order_relaxed);
		atomic_store_explicit(&sh->depth, d->global_depth,
				      memory_order_relaxed);
	}
	smart_scratch_release(w, mark);
	return rc;
}
