/*
 * Smart-BT: creating, opening and dropping a tree; the local tree object
 * and its counters (docs/bt.md §2).
 *
 * Invariants: a descriptor is written whole before the root entry names
 * it (a CAS from 0), so an opener sees all of it or nothing; the root
 * entry goes back to 0 only after every node is freed (drop).
 */
#include <stdlib.h>
#include <sys/random.h>

#include "ds/bt/bt_internal.h"
#include "ds/common/ds_common.h"

void smart_bt_config_init(struct smart_bt_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->key_max = 16;
	cfg->val_max = 16;
	cfg->node_size = 1024;
	cfg->locks = 0; /* by where the tables go: locks_default() */
	cfg->lock_memory = SMART_BT_LOCKS_AUTO;
	cfg->cache_bytes = (size_t)16 << 20;
	cfg->spec_entries = 65536;
	cfg->hocl = 1;
}

/* The entry points' one check: cfg taken over the defaults into *def
 * (docs/api.md, "Extensible structs"); def, or NULL (SMART_EINVAL, nothing
 * done) when the other arguments are bad or struct_size is refused. */
static const struct smart_bt_config *
cfg_or_default(int args_bad, const struct smart_bt_config *cfg,
	       struct smart_bt_config *def)
{
	smart_bt_config_init(def);
	if (args_bad ||
	    (cfg &&
	     smart__ds_config_take(def, sizeof(*def),
				   _Alignof(struct smart_bt_config), cfg)))
		return NULL;
	return def;
}

static unsigned align8(unsigned x)
{
	return (x + 7) & ~7u;
}

/* Node geometry of a (key_max, val_max, node_size); 0 when it leaves
 * fewer than BT_MIN_ENTRIES entries of either kind. */
static int geometry(smart_bt_t *t)
{
	t->fence_len = align8(2 * t->key_max);
	t->ent_off = (unsigned)sizeof(struct bt_node_hdr) + t->fence_len;
	t->leaf_ent = align8((unsigned)sizeof(struct bt_leaf_ent) + t->key_max +
			     t->val_max);
	t->inner_ent = align8((unsigned)offsetof(struct bt_inner_ent, key) +
			      t->key_max);
	if (t->ent_off >= t->node_size)
		return 0;
	t->leaf_cap = (t->node_size - t->ent_off) / t->leaf_ent;
	t->inner_cap = (t->node_size - t->ent_off) / t->inner_ent;
	return t->leaf_cap >= BT_MIN_ENTRIES && t->inner_cap >= BT_MIN_ENTRIES;
}

/* The descriptor, read (write 0) or written. */
static int meta_io(smart_worker_t *w, smart_gaddr_t a, struct bt_meta *m,
		   int write)
{
	return smart__ds_copy(w, a, m, sizeof(*m), write);
}

/* The shape a tree may have, from a config or a peer's descriptor. */
static int shape_ok(unsigned node_size, unsigned key_max, unsigned val_max,
		    unsigned locks)
{
	return node_size >= BT_NODE_MIN && node_size <= BT_NODE_MAX &&
	       !(node_size & (node_size - 1)) && key_max &&
	       key_max <= SMART_BT_KEY_MAX && val_max <= SMART_BT_VALUE_MAX &&
	       locks && !(locks & (locks - 1)) && locks <= BT_LOCKS_MAX;
}

#define BT_DIR_LEN (8 * (size_t)BT_DIR_SLOTS)

static size_t locks_len(const struct bt_meta *m)
{
	return (size_t)m->locks * 8;
}

static int meta_valid(const void *desc)
{
	const struct bt_meta *m = desc;
	unsigned i;

	if (m->magic != BT_MAGIC || m->version != BT_VERSION ||
	    !shape_ok(m->node_size, m->key_max, m->val_max, m->locks) ||
	    !m->nblades || m->nblades > SMART_BT_BLADES_MAX || !m->root ||
	    !m->nonce)
		return 0;
	for (i = 0; i < m->nblades; i++)
		if (!smart__ds_area_ok(m->lock_off[i], locks_len(m)) ||
		    (m->dir_off[i] & SMART_GADDR_DM) ||
		    !smart__ds_area_ok(m->dir_off[i], BT_DIR_LEN))
			return 0;
	return !m->name[sizeof(m->name) - 1];
}

/* The descriptor root entry value maddr points to, if it is a tree's on
 * blade (SMART_ENOENT: not one). */
static int meta_get(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		    struct bt_meta *m)
{
	return smart__ds_desc_get(w, blade, maddr, m, sizeof(*m), meta_valid);
}

/* Give back blade i's lock table and redo directory, what m names of
 * them. */
static int tables_free(smart_worker_t *w, const struct bt_meta *m, unsigned i)
{
	smart_gaddr_t a = smart_gaddr(m->blades[i], m->lock_off[i]);
	int rc = 0, rc2 = 0;

	if (m->lock_off[i])
		rc = smart_gaddr_is_dm(a) ? smart_dm_free(w, a, locks_len(m)) :
					    smart_free(w, a, locks_len(m));
	if (m->dir_off[i]) /* whatever the table's fate */
		rc2 = smart_free(w, smart_gaddr(m->blades[i], m->dir_off[i]),
				 BT_DIR_LEN);
	return rc ? rc : rc2;
}

/* The local object for descriptor m (at maddr), with cfg's caches. */
static int tree_new(smart_worker_t *w, const struct bt_meta *m,
		    smart_gaddr_t maddr, uint16_t home, unsigned root_idx,
		    const struct smart_bt_config *cfg, smart_bt_t **out)
{
	smart_ctx_t *ctx = smart_worker_ctx(w);
	smart_bt_t *t = aligned_alloc(64, (sizeof(*t) + 63) & ~(size_t)63);
	unsigned i;
	int rc = 0;

	if (!t)
		return SMART_ENOMEM;
	memset(t, 0, sizeof(*t));
	t->ctx = ctx;
	t->home = home;
	t->root_idx = root_idx;
	t->meta = maddr;
	/* binds every node and entry crc to this tree (bt_layout.h) */
	t->salt = (uint32_t)bt_mix(maddr ^ bt_mix(m->nonce));
	t->node_size = m->node_size;
	t->key_max = m->key_max;
	t->val_max = m->val_max;
	t->locks = m->locks;
	t->nblades = m->nblades;
	for (i = 0; i < m->nblades && !rc; i++) {
		t->blades[i] = m->blades[i];
		t->lock_off[i] = m->lock_off[i];
		t->dir_off[i] = m->dir_off[i];
		/* our id on that blade names the locks we hold there */
		rc = smart_lease_id(ctx, m->blades[i], &t->lease[i]);
	}
	if (!rc && !geometry(t))
		rc = SMART_EINVAL;
	t->hocl = cfg->hocl != 0;
	if (!rc)
		rc = smart__bt_cache_init(t, cfg->cache_bytes,
					  cfg->spec_entries);
	if (!rc)
		rc = smart__bt_redo_claim(t, w);
	if (rc) {
		smart__bt_cache_fini(t);
		free(t);
		return rc;
	}
	atomic_store(&t->root, m->root);
	atomic_store(&t->rng, (uint64_t)(uintptr_t)t ^ smart_now_ns());
	*out = t;
	return 0;
}

static int config_check(const struct smart_bt_config *c)
{
	unsigned i, j;

	if (!shape_ok(c->node_size, c->key_max, c->val_max,
		      c->locks ? c->locks : 1) ||
	    c->lock_memory < SMART_BT_LOCKS_AUTO ||
	    c->lock_memory > SMART_BT_LOCKS_DEVICE)
		return SMART_EINVAL;
	if (c->blades && (!c->nblades || c->nblades > SMART_BT_BLADES_MAX))
		return SMART_EINVAL;
	for (i = 0; c->blades && i < c->nblades; i++)
		for (j = 0; j < i; j++)
			if (c->blades[i] == c->blades[j])
				return SMART_EINVAL;
	return 0;
}

/* Free what a failed create allocated (best effort). */
static void create_undo(smart_worker_t *w, const struct bt_meta *m,
			smart_gaddr_t maddr)
{
	unsigned i;

	for (i = 0; i < m->nblades; i++)
		(void)tables_free(w, m, i);
	if (m->root)
		(void)smart_free(w, m->root, m->node_size);
	if (maddr)
		(void)smart_free(w, maddr, sizeof(*m));
}

/* create_undo, and t's redo areas and t itself first (t may be NULL). */
static void build_undo(smart_worker_t *w, smart_bt_t *t,
		       const struct bt_meta *m, smart_gaddr_t maddr)
{
	unsigned i;

	for (i = 0; t && i < t->nblades; i++)
		if (t->area[i])
			(void)smart__bt_redo_drop(t, w, i);
	smart_bt_close(t, NULL);
	create_undo(w, m, maddr);
}

/* The first root: an empty leaf covering every key. */
static int root_write(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a)
{
	struct bt_node *n;
	int rc = smart_buf_alloc(w, t->node_size, (void **)&n);

	if (rc)
		return rc;
	smart__bt_node_init(t, n, 0);
	n->h.flags = BT_F_LOW_INF | BT_F_HIGH_INF;
	smart__bt_seal(t, n);
	rc = smart_write_sync(w, a, n, t->node_size);
	smart_buf_free(w, n);
	return rc;
}

/* The lock count of a config that leaves it to us: the most whose table
 * fits every blade's device memory, when the tables may go there and each
 * blade has at least BT_DM_LOCKS_MIN words of it (DEVICE: any), as
 * Sherman's 32768 in 256 KiB; else BT_LOCKS_DEFAULT in host memory.  The
 * count is the tree's, every blade alike, so the smallest device memory
 * decides, from its size, not what is free: a table that then finds no
 * room (lock_table_alloc) goes to host memory with that count. */
static unsigned locks_default(smart_worker_t *w,
			      const struct smart_bt_config *c,
			      const struct bt_meta *m)
{
	struct smart_blade_info bi;
	uint64_t least = UINT64_MAX;
	unsigned i, n = BT_LOCKS_DEFAULT;

	if (c->lock_memory == SMART_BT_LOCKS_HOST)
		return n;
	for (i = 0; i < m->nblades; i++) {
		if (smart_ctx_blade_info(smart_worker_ctx(w), m->blades[i],
					 &bi))
			bi.dm_size = 0;
		if (bi.dm_size < least)
			least = bi.dm_size;
	}
	/* AUTO goes to host memory rather than take a tiny table */
	if (least / 8 <
	    (c->lock_memory == SMART_BT_LOCKS_DEVICE ? 1 : BT_DM_LOCKS_MIN))
		return n;
	while ((uint64_t)n * 8 > least)
		n /= 2;
	return n;
}

/* One blade's lock table: in its device memory unless cfg says host
 * memory (or, AUTO, the blade has none or no room left), else in its
 * region.  SMART_BT_LOCKS_DEVICE takes device memory or fails. */
static int lock_table_alloc(smart_worker_t *w, const struct smart_bt_config *c,
			    uint16_t blade, size_t len, smart_gaddr_t *out)
{
	int rc;

	if (c->lock_memory != SMART_BT_LOCKS_HOST) {
		rc = smart_dm_alloc(w, blade, len, out);
		if (!rc || c->lock_memory == SMART_BT_LOCKS_DEVICE ||
		    (rc != SMART_ENOTSUP && rc != SMART_ENOSPC &&
		     rc != SMART_EINVAL))
			return rc;
	}
	return smart_alloc(w, blade, len, out);
}

/* Zeros over [a, a + len) from the zeroed page `zero`, then a sync. */
static int zero_fill(smart_worker_t *w, smart_gaddr_t a, size_t len,
		     const void *zero)
{
	size_t off;
	int rc = 0;

	for (off = 0; !rc && off < len; off += 4096)
		rc = smart_write(w, smart_gaddr_add(a, off), zero,
				 len - off < 4096 ? len - off : 4096);
	return rc ? rc : smart_sync(w);
}

/* Build a tree for cfg on blade's memory: lock tables, the first root,
 * the descriptor (named `name`, "" for none); everything but the root
 * entry.  On success *tp is its local object and m its descriptor (at
 * t->meta); on an error nothing stays allocated. */
static int tree_build(smart_worker_t *w, uint16_t blade, const char *name,
		      const struct smart_bt_config *cfg, struct bt_meta *m,
		      smart_bt_t **tp)
{
	smart_gaddr_t maddr = 0, a;
	smart_bt_t *t = NULL;
	void *zero = NULL;
	unsigned i;
	int rc = config_check(cfg);

	if (rc)
		return rc;
	memset(m, 0, sizeof(*m));
	m->magic = BT_MAGIC;
	m->version = BT_VERSION;
	m->node_size = cfg->node_size;
	m->key_max = (uint16_t)cfg->key_max;
	m->val_max = (uint16_t)cfg->val_max;
	m->nblades = (uint16_t)(cfg->blades ? cfg->nblades : 1);
	strncpy(m->name, name, sizeof(m->name) - 1);
	/* the kernel's randomness: a tree made again at this address gets
	 * another salt, so nodes of its earlier life do not check */
	while (!m->nonce)
		if (getrandom(&m->nonce, sizeof(m->nonce), 0) !=
		    (ssize_t)sizeof(m->nonce))
			return SMART_ESYS;
	for (i = 0; i < m->nblades; i++)
		m->blades[i] = cfg->blades ? cfg->blades[i] : blade;
	m->locks = cfg->locks ? cfg->locks : locks_default(w, cfg, m);
	/* tables start zeroed: write zeros, a scratch page at a time */
	rc = smart_buf_alloc(w, 4096, &zero);
	if (!rc)
		memset(zero, 0, 4096);
	for (i = 0; !rc && i < m->nblades; i++) {
		rc = lock_table_alloc(w, cfg, m->blades[i], locks_len(m), &a);
		if (!rc) {
			m->lock_off[i] = smart_gaddr_off(a);
			rc = zero_fill(w, a, locks_len(m), zero);
		}
		if (!rc)
			rc = smart_alloc(w, m->blades[i], BT_DIR_LEN, &a);
		if (!rc) {
			m->dir_off[i] = smart_gaddr_off(a);
			rc = zero_fill(w, a, BT_DIR_LEN, zero);
		}
	}
	if (rc)
		(void)smart_sync(w); /* no WRITE still reads `zero` */
	if (zero)
		smart_buf_free(w, zero);
	if (!rc)
		rc = smart_alloc(w, blade, sizeof(*m), &maddr);
	if (!rc)
		rc = tree_new(w, m, maddr, blade, 0, cfg, &t);
	if (!rc)
		rc = smart__bt_redo_spares(t, w);
	if (!rc)
		rc = smart__bt_node_alloc(t, w, &m->root);
	if (!rc)
		rc = root_write(t, w, m->root);
	if (!rc) {
		atomic_store(&t->root, m->root);
		rc = meta_io(w, maddr, m, 1);
	}
	if (rc) {
		build_undo(w, t, m, maddr);
		return rc;
	}
	*tp = t;
	return 0;
}

/* A built tree t (descriptor m) whose publication ended with rc: on
 * success it is named by root entry idx and handed out, else undone. */
static int tree_done(smart_worker_t *w, smart_bt_t *t, struct bt_meta *m,
		     int rc, unsigned idx, smart_bt_t **out)
{
	if (rc) {
		build_undo(w, t, m, t->meta);
		return rc;
	}
	t->root_idx = idx;
	*out = t;
	return 0;
}

int smart_bt_create(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		    const struct smart_bt_config *cfg, smart_bt_t **out)
{
	struct smart_bt_config def;
	struct bt_meta m;
	smart_bt_t *t;
	uint64_t old = 0;
	int rc;

	cfg = cfg_or_default(!w || !out || root_idx >= SMART_ROOT_ENTRIES, cfg,
			     &def);
	if (!cfg)
		return SMART_EINVAL;
	rc = config_check(cfg);
	if (!rc)
		rc = smart_root_get(w, blade, root_idx, &old);
	if (!rc && old)
		return SMART_EEXIST;
	if (!rc)
		rc = tree_build(w, blade, "", cfg, &m, &t);
	if (rc)
		return rc;
	rc = smart_root_cas(w, blade, root_idx, 0, t->meta, &old);
	if (!rc && old)
		rc = SMART_EEXIST; /* another creator won */
	return tree_done(w, t, &m, rc, root_idx, out);
}

/* The name of the tree whose descriptor is at maddr (smart_root_*); the
 * descriptor into arg (a struct bt_meta) when not NULL: smart_root_find
 * stops at the one it found, so the last one read is that one. */
static int bt_name_of(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		      char *name, void *arg)
{
	struct bt_meta m, *mp = arg ? arg : &m;
	int rc = meta_get(w, blade, maddr, mp);

	if (!rc)
		memcpy(name, mp->name, SMART_ROOT_NAME_MAX);
	return rc;
}

int smart_bt_create_named(smart_worker_t *w, uint16_t blade, const char *name,
			  const struct smart_bt_config *cfg, smart_bt_t **out)
{
	struct smart_bt_config def;
	struct bt_meta m;
	smart_bt_t *t;
	uint64_t maddr;
	unsigned idx;
	int rc;

	cfg = cfg_or_default(!w || !out || !smart_root_name_ok(name), cfg,
			     &def);
	if (!cfg)
		return SMART_EINVAL;
	/* taken already: no tree built for nothing */
	rc = smart_root_find(w, blade, name, bt_name_of, NULL, &idx, &maddr);
	if (rc != SMART_ENOENT)
		return rc ? rc : SMART_EEXIST;
	rc = tree_build(w, blade, name, cfg, &m, &t);
	if (rc)
		return rc;
	rc = smart_root_publish(w, blade, name, bt_name_of, NULL, t->meta,
				&idx);
	return tree_done(w, t, &m, rc, idx, out);
}

int smart_bt_open_named(smart_worker_t *w, uint16_t blade, const char *name,
			const struct smart_bt_config *cfg, smart_bt_t **out)
{
	struct smart_bt_config def;
	struct bt_meta m;
	uint64_t maddr;
	unsigned idx;
	int rc;

	cfg = cfg_or_default(!w || !out || !smart_root_name_ok(name), cfg,
			     &def);
	if (!cfg)
		return SMART_EINVAL;
	rc = smart_root_find(w, blade, name, bt_name_of, &m, &idx, &maddr);
	return rc ? rc : tree_new(w, &m, maddr, blade, idx, cfg, out);
}

int smart_bt_open(smart_worker_t *w, uint16_t blade, unsigned root_idx,
		  const struct smart_bt_config *cfg, smart_bt_t **out)
{
	struct smart_bt_config def;
	struct bt_meta m;
	uint64_t maddr;
	int rc;

	cfg = cfg_or_default(!w || !out || root_idx >= SMART_ROOT_ENTRIES, cfg,
			     &def);
	if (!cfg)
		return SMART_EINVAL;
	rc = smart_root_get(w, blade, root_idx, &maddr);
	if (!rc)
		rc = meta_get(w, blade, maddr, &m);
	return rc ? rc : tree_new(w, &m, maddr, blade, root_idx, cfg, out);
}

unsigned smart_bt_key_max(const smart_bt_t *t)
{
	return t ? t->key_max : 0;
}

unsigned smart_bt_val_max(const smart_bt_t *t)
{
	return t ? t->val_max : 0;
}

int smart__bt_own(const smart_bt_t *t, const smart_worker_t *w)
{
	return w &&
	       (smart_worker_ctx(w) == t->ctx || SMART_M_BT_FOREIGN_WORKER);
}

static int bt_stats_fill(smart_bt_t *t, smart_worker_t *w,
			 struct smart_bt_stats *out)
{
	unsigned i;

	/* the counters are this object's: w, NULL or t's, reads nothing */
	if (!t || !out || (w && !smart__bt_own(t, w)))
		return SMART_EINVAL;
	memset(out, 0, sizeof(*out));
	out->height = atomic_load(&t->height);
	out->leaf_splits = atomic_load(&t->leaf_splits);
	out->inner_splits = atomic_load(&t->inner_splits);
	out->root_splits = atomic_load(&t->root_splits);
	out->crc_retries = atomic_load(&t->crc_retries);
	out->move_rights = atomic_load(&t->move_rights);
	out->lock_retries = atomic_load(&t->lock_retries);
	out->handovers = atomic_load(&t->handovers);
	out->cache_drops = atomic_load(&t->cache_drops);
	out->lock_takeovers = atomic_load(&t->lock_takeovers);
	out->merges = atomic_load(&t->merges);
	out->merge_skips = atomic_load(&t->merge_skips);
	out->repairs = atomic_load(&t->repairs);
	out->rec_waits = atomic_load(&t->rec_waits);
	out->uncommitted = atomic_load(&t->uncommitted);
	out->sep_fixes = atomic_load(&t->sep_fixes);
	out->scan_ahead = atomic_load(&t->scan_ahead);
	for (i = 0; i < t->nblades; i++)
		out->dm_lock_tables += !!(t->lock_off[i] & SMART_GADDR_DM);
	return 0;
}

int smart_bt_stats_sized(smart_bt_t *t, smart_worker_t *w,
			 struct smart_bt_stats *out, size_t size)
{
	struct smart_bt_stats full;
	int rc = out ? bt_stats_fill(t, w, &full) : SMART_EINVAL;

	return rc ? rc : smart__ds_out_give(out, size, &full, sizeof(full));
}

int smart_bt_close(smart_bt_t *t, smart_worker_t *w)
{
	if (t && w && !smart__bt_own(t, w))
		return SMART_EINVAL;
	if (t) {
		smart__bt_redo_release(t, w);
		smart__bt_cache_fini(t);
	}
	free(t);
	return 0;
}

/* Free every node of level `level` (-1: the root's, whatever it is),
 * left to right from a, its leftmost; *down is the leftmost child of a
 * (0 at the leaves).  Each node must be of that level and start where the
 * node before it ends, so that a chain a peer bent into a cycle is not
 * freed twice: SMART_EPROTO otherwise. */
static int drop_level(smart_bt_t *t, smart_worker_t *w, smart_gaddr_t a,
		      int level, struct bt_node *n, smart_gaddr_t *down)
{
	uint8_t high[SMART_BT_KEY_MAX];
	size_t high_len = 0;
	smart_gaddr_t next;
	int rc = smart__bt_read(t, w, a, n), first = 1;

	*down = 0;
	if (!rc && level < 0)
		level = n->h.level;
	if (!rc && n->h.level)
		*down = n->h.leftmost;
	while (!rc) {
		if (n->h.level != level ||
		    (!first &&
		     ((n->h.flags & BT_F_LOW_INF) ||
		      bt_keycmp(bt_low(t, n), n->h.low_len, high, high_len))))
			return SMART_EPROTO;
		first = 0;
		next = (n->h.flags & BT_F_HIGH_INF) ? 0 : n->h.sibling;
		high_len = n->h.high_len;
		memcpy(high, bt_high(t, n), high_len);
		rc = smart_free(w, a, t->node_size);
		if (rc || !next)
			break;
		a = next;
		rc = smart__bt_read(t, w, a, n);
	}
	return rc;
}

int smart_bt_drop(smart_bt_t *t, smart_worker_t *w)
{
	struct bt_meta m;
	struct bt_node *n;
	smart_gaddr_t a, down;
	size_t mark;
	unsigned i;
	int rc, level;

	if (!t || !smart__bt_own(t, w))
		return SMART_EINVAL;
	/* the root entry first, if it still names this tree (of two
	 * droppers one goes on): nobody opens it any more */
	rc = smart_root_release(w, t->home, t->root_idx, t->meta);
	if (!rc)
		rc = meta_io(w, t->meta, &m, 0);
	if (!rc && !meta_valid(&m))
		rc = SMART_EPROTO;
	/* the leaves merges killed and nobody retired (a merger killed
	 * after its unlock): while the nodes that would name them are
	 * still there to show that none does */
	for (i = 0; !rc && i < m.nblades && !SMART_M_BT_NO_DROP_RETIRE; i++)
		rc = smart__bt_redo_dead(t, w, i);
	mark = smart_scratch_mark(w);
	if (!rc)
		rc = smart_scratch_alloc(w, t->node_size, (void **)&n);
	/* the root's leftmost path gives each level's first node, one
	 * level lower each time */
	for (a = rc ? 0 : m.root, level = -1; a && !rc; a = down) {
		rc = drop_level(t, w, a, level, n, &down);
		level = rc ? 0 : (int)n->h.level - 1;
	}
	smart_scratch_release(w, mark);
	for (i = 0; !rc && i < m.nblades; i++)
		rc = smart__bt_redo_drop(t, w, i);
	for (i = 0; !rc && i < m.nblades; i++)
		rc = tables_free(w, &m, i);
	if (!rc)
		rc = smart_free(w, t->meta, sizeof(m));
	if (!rc)
		smart_bt_close(t, NULL); /* its areas went with the rest */
	return rc;
}
