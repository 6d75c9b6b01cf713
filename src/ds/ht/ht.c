/*
 * Smart-HT: table creation, opening and the client-side directory cache.
 *
 * Create builds every shard's directory and subtables (with their bucket
 * headers written, since reused remote memory is not zeroed), then the
 * descriptor, and publishes the descriptor last by CAS on the root entry:
 * a reader that finds the root entry set finds a complete table.  A lost
 * CAS (somebody else created a table there) frees what was built.
 */
#include <stdlib.h>
#include <string.h>

#include "ds/ht/ht_internal.h"

#define HT_SEED0	UINT64_C(0x9e3779b97f4a7c15)
#define HT_SEED1	UINT64_C(0xc2b2ae3d27d4eb4f)
#define HT_FILL_BUF	(64u << 10)

void smart_ht_config_init(struct smart_ht_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->depth = 2;
	cfg->buckets = 1024;
	cfg->spec_cache = 4096;
	/* A store should not leak; with several tasks per worker the
	 * announcements are amortised (YCSB-A 2x8: no measurable cost). */
	cfg->reclaim = 1;
}

static int config_ok(const struct smart_ht_config *c)
{
	if (c->nblades > SMART_HT_SHARDS_MAX || (c->blades && !c->nblades))
		return 0;
	if (c->depth > SMART_HT_DEPTH_MAX)
		return 0;
	if (c->buckets < 2 || c->buckets > HT_BUCKETS_MAX || (c->buckets & 1))
		return 0;
	return !(c->spec_cache & (c->spec_cache - 1));
}

static uint64_t subtable_size(unsigned buckets)
{
	return (uint64_t)(buckets / 2) * HT_GROUP;
}

/* Write subtable `idx` (all buckets: header, empty slots) at dst. */
static int fill_subtable(smart_worker_t *w, struct ht_bucket *buf,
			 smart_gaddr_t dst, uint64_t size, unsigned depth,
			 unsigned idx)
{
	size_t n = HT_FILL_BUF / HT_BUCKET, i;
	uint64_t off;
	int rc = 0;

	memset(buf, 0, HT_FILL_BUF);
	for (i = 0; i < n; i++) {
		buf[i].local_depth = depth;
		buf[i].suffix = idx;
	}
	for (off = 0; off < size && !rc; off += HT_FILL_BUF) {
		uint64_t len = size - off < HT_FILL_BUF ? size - off :
							   HT_FILL_BUF;

		rc = smart_write_sync(w, smart_gaddr_add(dst, off), buf, len);
	}
	return rc;
}

/* Build shard blade's directory and subtables; dir receives its gaddr. */
static int build_shard(smart_worker_t *w, const struct smart_ht_config *c,
		       uint16_t blade, void *fill, struct ht_dir *dir,
		       smart_gaddr_t *dir_addr, smart_gaddr_t *subs)
{
	uint64_t ssz = subtable_size(c->buckets), n = UINT64_C(1) << c->depth;
	uint64_t i;
	int rc;

	rc = smart_alloc(w, blade, ssz * n, subs);
	if (rc)
		return rc;
	rc = smart_alloc(w, blade, sizeof(*dir), dir_addr);
	if (rc)
		goto err_subs;
	memset(dir, 0, sizeof(*dir));
	dir->global_depth = c->depth;
	dir->reclaim = !!c->reclaim;
	for (i = 0; i < HT_DIR_ENTRIES; i++) {
		/* entries beyond 2^depth alias like a doubled directory */
		uint64_t off = smart_gaddr_off(*subs) + (i & (n - 1)) * ssz;

		dir->ent[i] = HT_ENT(c->depth, off);
	}
	for (i = 0; i < n && !rc; i++)
		rc = fill_subtable(w, fill, smart_gaddr_add(*subs, i * ssz),
				   ssz, c->depth, (unsigned)i);
	if (!rc)
		rc = smart_write_sync(w, *dir_addr, dir, sizeof(*dir));
	if (!rc)
		return 0;
	smart_free(w, *dir_addr, sizeof(*dir));
err_subs:
	smart_free(w, *subs, ssz * n);
	return rc;
}

static void free_shards(smart_worker_t *w, const struct smart_ht_config *c,
			const struct ht_meta *m, const smart_gaddr_t *subs,
			unsigned n)
{
	uint64_t ssz = subtable_size(c->buckets) << c->depth;
	unsigned i;

	for (i = 0; i < n; i++) {
		smart_free(w, m->dir[i], sizeof(struct ht_dir));
		smart_free(w, subs[i], ssz);
	}
}

static int table_new(const struct ht_meta *m, uint16_t home, unsigned root,
		     unsigned spec_cache, smart_ht_t **out)
{
	smart_ht_t *t = calloc(1, sizeof(*t));
	unsigned i;

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
	t->home = home;
	t->root = root;
	t->nshards = m->nshards;
	t->buckets = m->buckets;
	t->seed[0] = m->seed[0];
	t->seed[1] = m->seed[1];
	for (i = 0; i < m->nshards; i++) {
		t->shard[i].blade = smart_gaddr_blade(m->dir[i]);
		t->shard[i].dir = m->dir[i];
	}
	*out = t;
	return 0;
}

static int load_dirs(smart_ht_t *t, smart_worker_t *w)
{
	unsigned i;
	int rc;

	for (i = 0; i < t->nshards; i++) {
		rc = smart__ht_dir_refresh(t, w, &t->shard[i]);
		if (rc)
			return rc;
	}
	return 0;
}

static void meta_init(struct ht_meta *m, const struct smart_ht_config *c,
		      unsigned nshards)
{
	memset(m, 0, sizeof(*m));
	m->magic = HT_MAGIC;
	m->version = HT_VERSION;
	m->nshards = nshards;
	m->depth = c->depth;
	m->buckets = c->buckets;
	m->seed[0] = HT_SEED0;
	m->seed[1] = HT_SEED1;
}

/* Build all shards and the descriptor; publish it at the root entry. */
static int create_remote(smart_worker_t *w, uint16_t home, unsigned root,
			 const struct smart_ht_config *c, struct ht_meta *m,
			 struct ht_dir *dir, void *fill)
{
	smart_gaddr_t subs[SMART_HT_SHARDS_MAX], maddr;
	unsigned n = c->blades ? c->nblades : 1, i;
	uint64_t old;
	int rc = 0;

	meta_init(m, c, n);
	for (i = 0; i < n && !rc; i++) {
		rc = build_shard(w, c, c->blades ? c->blades[i] : home, fill,
				 dir, &m->dir[i], &subs[i]);
		if (rc)
			break;
	}
	if (rc) {
		free_shards(w, c, m, subs, i);
		return rc;
	}
	rc = smart_alloc(w, home, sizeof(*m), &maddr);
	if (!rc) {
		rc = smart_write_sync(w, maddr, m, sizeof(*m));
		if (!rc)
			rc = smart_root_cas(w, home, root, 0, maddr, &old);
		if (!rc && old)
			rc = SMART_EEXIST;
		if (rc)
			smart_free(w, maddr, sizeof(*m));
	}
	if (rc)
		free_shards(w, c, m, subs, n);
	return rc;
}

int smart_ht_create(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		    const struct smart_ht_config *cfg, smart_ht_t **out)
{
	struct smart_ht_config def;
	struct ht_meta *m;
	struct ht_dir *dir;
	smart_ht_t *t;
	uint64_t old;
	size_t mark;
	void *fill;
	int rc;

	if (!cfg) {
		smart_ht_config_init(&def);
		cfg = &def;
	}
	if (!w || !out || root_idx >= SMART_ROOT_ENTRIES || !config_ok(cfg))
		return SMART_EINVAL;
	rc = smart_root_get(w, blade, root_idx, &old);
	if (rc)
		return rc;
	if (old)
		return SMART_EEXIST;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, HT_FILL_BUF + sizeof(*dir) + sizeof(*m),
				 &fill);
	if (rc)
		return rc;
	dir = (struct ht_dir *)((char *)fill + HT_FILL_BUF);
	m = (struct ht_meta *)(dir + 1);
	rc = create_remote(w, blade, root_idx, cfg, m, dir, fill);
	if (!rc)
		rc = table_new(m, blade, root_idx, cfg->spec_cache, &t);
	if (!rc) {
		rc = load_dirs(t, w);
		if (rc)
			smart_ht_close(t);
	}
	smart_scratch_release(w, mark);
	if (!rc)
		*out = t;
	return rc;
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
	for (i = 0; i < m->nshards; i++)
		if (m->dir[i] == SMART_GADDR_NULL || (m->dir[i] & 7))
			return 0;
	return 1;
}

int smart_ht_open(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		  smart_ht_t **out)
{
	smart_ht_t *t = NULL;
	struct ht_meta *m;
	uint64_t maddr;
	size_t mark;
	int rc;

	if (!w || !out || root_idx >= SMART_ROOT_ENTRIES)
		return SMART_EINVAL;
	rc = smart_root_get(w, blade, root_idx, &maddr);
	if (rc)
		return rc;
	if (!maddr || maddr == SMART_GADDR_NULL ||
	    smart_gaddr_blade(maddr) != blade)
		return SMART_ENOENT;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, sizeof(*m), (void **)&m);
	if (rc)
		return rc;
	rc = smart_read_sync(w, maddr, sizeof(*m), m);
	if (rc == SMART_EREMOTE || (!rc && !meta_valid(m)))
		rc = SMART_ENOENT;
	if (!rc)
		rc = table_new(m, blade, root_idx, 4096, &t);
	smart_scratch_release(w, mark);
	if (!rc) {
		rc = load_dirs(t, w);
		if (rc == SMART_EREMOTE)
			rc = SMART_ENOENT;
		if (rc)
			smart_ht_close(t);
	}
	if (!rc)
		*out = t;
	return rc;
}

int smart_ht_close(smart_ht_t *t)
{
	if (!t)
		return 0;
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

int smart_ht_stats(smart_ht_t *t, smart_worker_t *w,
		   struct smart_ht_stats *out)
{
	smart_stats_t st;
	unsigned i, d;
	int rc;

	if (!t || !w || !out)
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
	out->retired = atomic_load(&t->retired);
	rc = smart_stats_snapshot(smart_worker_ctx(w), &st);
	if (rc)
		return rc;
	out->freed = st.c[SMART_STAT_EPOCH_FREED];
	return 0;
}

unsigned smart_ht_shards(const smart_ht_t *t)
{
	return t ? t->nshards : 0;
}

int smart__ht_dir_refresh(smart_ht_t *t, smart_worker_t *w,
			  struct ht_shard *sh)
{
	struct ht_dir *d;
	size_t mark;
	unsigned i;
	int rc;

	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, sizeof(*d), (void **)&d);
	if (rc)
		return rc;
	rc = smart_read_sync(w, sh->dir, sizeof(*d), d);
	if (!rc && (d->global_depth & ~HT_DIR_LOCK) > SMART_HT_DEPTH_MAX)
		rc = SMART_EPROTO;
	if (!rc) {
		for (i = 0; i < HT_DIR_ENTRIES; i++)
			atomic_store_explicit(&sh->ent[i], d->ent[i],
					      memory_order_relaxed);
		atomic_store_explicit(&sh->depth,
				      d->global_depth & ~HT_DIR_LOCK,
				      memory_order_relaxed);
		/* written once at create: every refresh stores the same */
		sh->reclaim = d->reclaim != 0;
	}
	smart_scratch_release(w, mark);
	return rc;
}
