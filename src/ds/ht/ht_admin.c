/*
 * Smart-HT tables by name, and dropping a table.
 *
 * Names live in the descriptors; the core's named root entries
 * (smart_root_find, smart_root_publish: src/services/root.c) find them and
 * settle races between creators of one name.
 *
 * Drop: the root entry goes first (no new opens), then every block any
 * slot names (collected, sorted and de-duplicated: during a split a block
 * is named by its frozen slot in S and by its copy in N), the subtables,
 * the directories and the descriptor.
 */
#include <stdlib.h>
#include <string.h>

#include "ds/ht/ht_internal.h"
#include "ds/common/ds_common.h"

_Static_assert(HT_NAME_MAX == SMART_ROOT_NAME_MAX, "names fit the core's");

/* The name of the table whose descriptor is at maddr (smart_root_*). */
static int ht_name_of(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		      char *name, void *arg)
{
	size_t mark = smart_scratch_mark(w);
	struct ht_meta *m;
	int rc = smart_scratch_alloc(w, sizeof(*m), (void **)&m);

	(void)arg;
	if (!rc)
		rc = smart__ht_meta_read(w, blade, maddr, m);
	if (!rc)
		memcpy(name, m->name, HT_NAME_MAX);
	smart_scratch_release(w, mark);
	return rc;
}

int smart_ht_open_named(smart_worker_t *w, uint16_t blade, const char *name,
			const struct smart_ht_config *cfg, smart_ht_t **out)
{
	struct smart_ht_config def;
	uint64_t maddr;
	unsigned idx;
	int rc;

	smart_ht_config_init(&def);
	if (!w || !out || !smart_root_name_ok(name) ||
	    (cfg &&
	     smart__ds_config_take(&def, sizeof(def), HT_CFG_ALIGN, cfg)) ||
	    !smart__ht_config_ok(&def))
		return SMART_EINVAL;
	rc = smart_root_find(w, blade, name, ht_name_of, NULL, &idx, &maddr);
	return rc ? rc : smart__ht_open_at(w, blade, idx, maddr, &def, out);
}

int smart_ht_create_named(smart_worker_t *w, uint16_t blade, const char *name,
			  const struct smart_ht_config *cfg, smart_ht_t **out)
{
	struct smart_ht_config def;
	struct ht_build b;
	uint64_t maddr;
	unsigned idx;
	int rc;

	smart_ht_config_init(&def);
	if (cfg && smart__ds_config_take(&def, sizeof(def), HT_CFG_ALIGN, cfg))
		return SMART_EINVAL;
	cfg = &def;
	if (!w || !out || !smart_root_name_ok(name) ||
	    !smart__ht_config_ok(cfg))
		return SMART_EINVAL;
	/* taken already: no table built for nothing */
	rc = smart_root_find(w, blade, name, ht_name_of, NULL, &idx, &maddr);
	if (rc != SMART_ENOENT)
		return rc ? rc : SMART_EEXIST;
	rc = smart__ht_build_begin(w, &b);
	if (rc)
		return rc;
	rc = smart__ht_build(w, blade, cfg, name, &b);
	if (!rc)
		rc = smart_root_publish(w, blade, name, ht_name_of, NULL,
					b.maddr, &idx);
	if (rc)
		smart__ht_build_free(w, cfg, &b);
	else
		rc = smart__ht_table_open(w, blade, idx, b.maddr, b.meta, cfg,
					  out);
	smart_scratch_release(w, b.mark);
	return rc;
}

const char *smart_ht_name(const smart_ht_t *t)
{
	return t ? t->name : "";
}

/* ---- drop ---------------------------------------------------------------- */

struct drop_blk {
	uint64_t off;
	uint64_t size;
};

struct drop {
	smart_worker_t *w;
	uint16_t blade;
	struct drop_blk *blk;
	size_t n, cap;
	uint64_t *subs; /* distinct subtable offsets */
	size_t nsubs;
};

static int blk_add(struct drop *d, uint64_t slot)
{
	if (d->n == d->cap) {
		size_t cap = d->cap ? 2 * d->cap : 4096;
		void *p = realloc(d->blk, cap * sizeof(*d->blk));

		if (!p)
			return SMART_ENOMEM;
		d->blk = p;
		d->cap = cap;
	}
	d->blk[d->n++] = (struct drop_blk){ HT_SLOT_PTR(slot),
					    HT_SLOT_UNITS(slot) * HT_KV_UNIT };
	return 0;
}

static int blk_cmp(const void *a, const void *b)
{
	const struct drop_blk *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Every block a slot of the subtable at off names (size bytes). */
static int drop_scan(struct drop *d, uint64_t off, uint64_t size,
		     struct ht_bucket *buf)
{
	uint64_t pos;
	int rc = 0;

	for (pos = 0; pos < size && !rc; pos += HT_BUILD_BUF) {
		size_t len = size - pos < HT_BUILD_BUF ? size - pos :
							 HT_BUILD_BUF,
		       b;
		unsigned j;

		rc = smart_read_sync(d->w, smart_gaddr(d->blade, off + pos),
				     len, buf);
		for (b = 0; !rc && b < len / HT_BUCKET; b++)
			for (j = 0; !rc && j < HT_SLOTS; j++)
				if (HT_SLOT_UNITS(buf[b].slot[j]))
					rc = blk_add(d, buf[b].slot[j]);
	}
	return rc;
}

static int sub_add(struct drop *d, uint64_t off)
{
	size_t i;

	for (i = 0; i < d->nsubs; i++)
		if (d->subs[i] == off)
			return 0;
	d->subs[d->nsubs++] = off;
	return 1;
}

int smart__ht_shard_free(smart_worker_t *w, uint16_t blade,
			 smart_gaddr_t dir_addr, uint64_t ssz,
			 struct ht_dir *dir, void *buf)
{
	uint64_t subs[2 * HT_DIR_ENTRIES];
	struct drop d = { w, blade, NULL, 0, 0, subs, 0 };
	size_t i;
	int rc;

	rc = smart_read_sync(w, dir_addr, sizeof(*dir), dir);
	for (i = 0; !rc && i < HT_DIR_ENTRIES; i++) {
		uint64_t sib = dir->sib[i];

		if (sub_add(&d, HT_ENT_OFF(dir->ent[i])))
			rc = drop_scan(&d, HT_ENT_OFF(dir->ent[i]), ssz, buf);
		/* a dead splitter's sibling is a subtable too, freed; its
		 * slots name blocks only once it was built (PUBLISH): before,
		 * they are whatever the memory held, and every committed
		 * block is still in S */
		if (!rc && sib && sub_add(&d, HT_SIB_OFF(sib)) &&
		    HT_SIB_PHASE(sib) == HT_SIB_PUBLISH)
			rc = drop_scan(&d, HT_SIB_OFF(sib), ssz, buf);
	}
	if (!rc) {
		if (d.n) /* a table with no block has d.blk NULL */
			qsort(d.blk, d.n, sizeof(*d.blk), blk_cmp);
		for (i = 0; i < d.n; i++)
			if (!i || d.blk[i].off != d.blk[i - 1].off)
				smart_free(w, smart_gaddr(blade, d.blk[i].off),
					   d.blk[i].size);
		for (i = 0; i < d.nsubs; i++)
			smart_free(w, smart_gaddr(blade, d.subs[i]), ssz);
		smart_free(w, dir_addr, sizeof(*dir));
	}
	free(d.blk);
	return rc;
}

int smart_ht_drop(smart_ht_t *t, smart_worker_t *w)
{
	struct ht_dir *dir;
	struct ht_bucket *buf;
	uint64_t maddr;
	unsigned i;
	size_t mark;
	int rc;

	if (!t || !smart__ht_own(t, w))
		return SMART_EINVAL;
	/* SMART_ENOENT: not this table's entry any more */
	maddr = t->maddr;
	rc = smart_root_release(w, t->home, t->root, maddr);
	if (rc)
		return rc;
	mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, sizeof(*dir) + HT_BUILD_BUF, (void **)&dir);
	buf = (struct ht_bucket *)(dir + 1);
	for (i = 0; !rc && i < t->nshards; i++)
		rc = smart__ht_shard_free(w, t->shard[i].blade, t->shard[i].dir,
					  smart__ht_sub_size(t), dir, buf);
	smart_scratch_release(w, mark);
	if (rc)
		return rc;
	smart_free(w, maddr, sizeof(struct ht_meta));
	return smart_ht_close(t, w);
}
