/*
 * Smart-DTX: creating, opening and dropping a database; the local object,
 * its counters and the transaction objects' log slots (docs/dtx.md §2).
 *
 * Invariants: a descriptor is written whole before its root entry names
 * it, and every table copy and log area is zeroed before that, so an
 * opener sees all of it or nothing; a log slot is claimed by a CAS of its
 * owner word (0, or a dead owner's after what it left is resolved).
 */
#include <stdlib.h>

#include "ds/common/ds_common.h"
#include "ds/dtx/dtx_internal.h"

void smart_dtx_config_init(struct smart_dtx_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
	cfg->replicas = -1;
	cfg->log_slots = 256;
	cfg->max_writes = 16;
	cfg->cache_entries = 1u << 20;
}

void smart__dtx_count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

int smart__dtx_hook(smart_worker_t *w, const char *point)
{
	void *arg;
	smart_hook_fn fn = smart_ctx_hook(smart_worker_ctx(w), &arg);

	return fn ? fn(w, point, arg) : 0;
}

int smart__dtx_own(const smart_dtx_t *d, const smart_worker_t *w)
{
	return w &&
	       (smart_worker_ctx(w) == d->ctx || SMART_M_DTX_FOREIGN_WORKER);
}

const struct dtx_table *smart__dtx_table(const smart_dtx_t *d, uint32_t table)
{
	return table < SMART_DTX_TABLES_MAX ? d->by_id[table] : NULL;
}

int smart__dtx_blade_index(const smart_dtx_t *d, uint16_t blade)
{
	unsigned i;

	for (i = 0; i < d->nblades; i++)
		if (d->blades[i] == blade)
			return (int)i;
	return -1;
}

uint16_t smart__dtx_lease(const smart_dtx_t *d, uint16_t blade)
{
	int i = smart__dtx_blade_index(d, blade);

	return i < 0 ? 0 : d->lease[i];
}

static unsigned rec_size_of(uint32_t value_size)
{
	return (unsigned)sizeof(struct dtx_rec) + ((value_size + 7) & ~7u);
}

static uint64_t table_bytes(const struct dtx_meta_table *t)
{
	return (uint64_t)t->buckets * SMART_DTX_BUCKET_SLOTS * t->rec_size;
}

/* The number of backups cfg asks for, or -1 when that is not possible. */
static int replicas_of(const struct smart_dtx_config *c, unsigned nblades)
{
	int r = c->replicas < 0 ? (nblades >= 2) : c->replicas;

	if (r > SMART_DTX_REPLICAS_MAX || (unsigned)r >= nblades)
		return -1;
	return r;
}

static int config_check(const struct smart_dtx_config *c)
{
	unsigned i, j, nb = c->blades ? c->nblades : 1;
	uint32_t seen = 0;

	if (!nb || nb > SMART_DTX_BLADES_MAX || replicas_of(c, nb) < 0 ||
	    !c->tables || !c->ntables || c->ntables > SMART_DTX_TABLES_MAX ||
	    !c->log_slots || c->log_slots > DTX_SLOTS_MAX || !c->max_writes ||
	    c->max_writes > SMART_DTX_ITEMS_MAX ||
	    (c->cache_entries & (c->cache_entries - 1)))
		return SMART_EINVAL;
	for (i = 0; c->blades && i < nb; i++)
		for (j = 0; j < i; j++)
			if (c->blades[i] == c->blades[j])
				return SMART_EINVAL;
	for (i = 0; i < c->ntables; i++) {
		const struct smart_dtx_table *t = &c->tables[i];

		if (t->id >= SMART_DTX_TABLES_MAX || (seen >> t->id & 1) ||
		    !t->value_size || t->value_size > SMART_DTX_VALUE_MAX ||
		    !t->buckets || t->buckets > (1u << 26) || t->primary < -1 ||
		    (t->primary >= 0 && (unsigned)t->primary >= nb))
			return SMART_EINVAL;
		seen |= 1u << t->id;
	}
	return 0;
}

/* The descriptor, read (write 0) or written. */
static int meta_io(smart_worker_t *w, smart_gaddr_t a, struct dtx_meta *m,
		   int write)
{
	return smart__ds_copy(w, a, m, sizeof(*m), write);
}

/* A log slot's bytes: the header and max_writes entries of the largest
 * record (derived, never taken from a peer as it is). */
static unsigned log_size_of(unsigned max_writes, unsigned rec_max)
{
	unsigned n = (unsigned)sizeof(struct dtx_log_hdr) +
		     max_writes * ((unsigned)sizeof(struct dtx_log_ent) +
				   rec_max - 8);

	return (n + 63) & ~63u;
}

/* A descriptor's shape: counts and sizes in range. */
static int shape_ok(const struct dtx_meta *m)
{
	unsigned i;

	if (m->magic != DTX_MAGIC || m->version != DTX_VERSION || !m->ntables ||
	    m->ntables > SMART_DTX_TABLES_MAX || !m->nblades ||
	    m->nblades > SMART_DTX_BLADES_MAX || !m->log_slots ||
	    m->log_slots > DTX_SLOTS_MAX || !m->max_writes ||
	    m->max_writes > SMART_DTX_ITEMS_MAX || m->name[sizeof(m->name) - 1])
		return 0;
	for (i = 0; i < m->ntables; i++) {
		const struct dtx_meta_table *t = &m->t[i];

		if (t->id >= SMART_DTX_TABLES_MAX || !t->value_size ||
		    t->value_size > SMART_DTX_VALUE_MAX ||
		    t->rec_size != rec_size_of(t->value_size) || !t->buckets ||
		    t->buckets > (1u << 26) || !t->ncopies ||
		    t->ncopies > 1 + SMART_DTX_REPLICAS_MAX)
			return 0;
	}
	return 1;
}

/* Every area a (well shaped) descriptor names lies inside its blade's
 * region, and the log slots are the size its tables give: a peer's
 * descriptor is input, checked before any address is made from it. */
static int areas_ok(const struct dtx_meta *m)
{
	unsigned i, c, rec_max = 0;

	if (!smart__ds_area_ok(m->owner_off, (uint64_t)m->log_slots * 8))
		return 0;
	for (i = 0; i < m->ntables; i++) {
		const struct dtx_meta_table *t = &m->t[i];

		for (c = 0; c < t->ncopies; c++)
			if (!smart__ds_area_ok(t->off[c], table_bytes(t)))
				return 0;
		if (t->rec_size > rec_max)
			rec_max = t->rec_size;
	}
	if (m->log_size != log_size_of(m->max_writes, rec_max))
		return 0;
	for (i = 0; i < m->nblades; i++)
		if (!smart__ds_area_ok(m->log_off[i],
				       (uint64_t)m->log_slots * m->log_size))
			return 0;
	return 1;
}

static int meta_valid(const void *desc)
{
	const struct dtx_meta *m = desc;

	return shape_ok(m) && (SMART_M_DTX_NO_DESC_CHECK || areas_ok(m));
}

/* The descriptor root entry value maddr points to, if it is a database's
 * on blade (SMART_ENOENT: not one). */
static int meta_get(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		    struct dtx_meta *m)
{
	return smart__ds_desc_get(w, blade, maddr, m, sizeof(*m), meta_valid);
}

static int dtx_name_of(smart_worker_t *w, uint16_t blade, uint64_t maddr,
		       char *name, void *arg)
{
	struct dtx_meta m, *mp = arg ? arg : &m;
	int rc = meta_get(w, blade, maddr, mp);

	if (!rc)
		memcpy(name, mp->name, SMART_ROOT_NAME_MAX);
	return rc;
}

/* Zero len bytes at a with chained WRITEs of a registered zero page. */
static int zero_fill(smart_worker_t *w, smart_gaddr_t a, uint64_t len)
{
	const size_t chunk = 65536;
	size_t mark = smart_scratch_mark(w);
	uint64_t done = 0;
	unsigned queued = 0;
	void *zero;
	int rc = smart_scratch_alloc(w, chunk, &zero);

	if (!rc)
		memset(zero, 0, chunk);
	while (!rc && done < len) {
		size_t n = len - done < chunk ? (size_t)(len - done) : chunk;

		rc = smart_write(w, smart_gaddr_add(a, done), zero, n);
		done += n;
		if (!rc && ++queued % 32 == 0)
			rc = smart_sync(w);
	}
	if (!rc)
		rc = smart_sync(w);
	else
		(void)smart_sync(w); /* nothing still reads `zero` */
	smart_scratch_release(w, mark);
	return rc;
}

/* Give back what m names (the parts allocated: non-zero offsets). */
static void meta_free(smart_worker_t *w, const struct dtx_meta *m,
		      uint16_t home)
{
	unsigned i, c;

	for (i = 0; i < m->ntables; i++)
		for (c = 0; c < m->t[i].ncopies; c++)
			if (m->t[i].off[c])
				(void)smart_free(w,
						 smart_gaddr(m->t[i].blade[c],
							     m->t[i].off[c]),
						 table_bytes(&m->t[i]));
	for (i = 0; i < m->nblades; i++)
		if (m->log_off[i])
			(void)smart_free(w,
					 smart_gaddr(m->blades[i],
						     m->log_off[i]),
					 (uint64_t)m->log_slots * m->log_size);
	if (m->owner_off)
		(void)smart_free(w, smart_gaddr(home, m->owner_off),
				 (uint64_t)m->log_slots * 8);
}

/* Allocate and zero len bytes on blade; the offset into *off. */
static int area_new(smart_worker_t *w, uint16_t blade, uint64_t len,
		    uint64_t *off)
{
	smart_gaddr_t a;
	int rc = smart_alloc(w, blade, len, &a);

	if (rc)
		return rc;
	*off = smart_gaddr_off(a);
	return zero_fill(w, a, len);
}

static int meta_build(smart_worker_t *w, uint16_t home, const char *name,
		      const struct smart_dtx_config *c, struct dtx_meta *m)
{
	unsigned i, k, rec_max = 0;
	int r, rc = 0;

	memset(m, 0, sizeof(*m));
	m->magic = DTX_MAGIC;
	m->version = DTX_VERSION;
	m->nblades = c->blades ? c->nblades : 1;
	r = replicas_of(c, m->nblades);
	for (i = 0; i < m->nblades; i++)
		m->blades[i] = c->blades ? c->blades[i] : home;
	m->ntables = c->ntables;
	m->log_slots = c->log_slots;
	m->max_writes = c->max_writes;
	m->salt = (uint32_t)smart_now_ns() | 1;
	strncpy(m->name, name, sizeof(m->name) - 1);
	for (i = 0; i < c->ntables; i++) {
		const struct smart_dtx_table *ct = &c->tables[i];
		struct dtx_meta_table *t = &m->t[i];
		unsigned p = ct->primary >= 0 ? (unsigned)ct->primary :
						ct->id % m->nblades;

		t->id = ct->id;
		t->value_size = ct->value_size;
		t->buckets = ct->buckets;
		t->rec_size = rec_size_of(ct->value_size);
		t->ncopies = (uint16_t)(1 + r);
		for (k = 0; k < t->ncopies; k++)
			t->blade[k] = m->blades[(p + k) % m->nblades];
		if (t->rec_size > rec_max)
			rec_max = t->rec_size;
	}
	m->log_size = log_size_of(m->max_writes, rec_max);
	for (i = 0; !rc && i < m->ntables; i++)
		for (k = 0; !rc && k < m->t[i].ncopies; k++)
			rc = area_new(w, m->t[i].blade[k],
				      table_bytes(&m->t[i]), &m->t[i].off[k]);
	for (i = 0; !rc && i < m->nblades; i++)
		rc = area_new(w, m->blades[i],
			      (uint64_t)m->log_slots * m->log_size,
			      &m->log_off[i]);
	if (!rc)
		rc = area_new(w, home, (uint64_t)m->log_slots * 8,
			      &m->owner_off);
	return rc;
}

/* The local object for descriptor m at maddr. */
static int dtx_new(smart_worker_t *w, const struct dtx_meta *m,
		   smart_gaddr_t maddr, uint16_t home, unsigned root_idx,
		   unsigned cache_entries, smart_dtx_t **out)
{
	smart_ctx_t *ctx = smart_worker_ctx(w);
	smart_dtx_t *d = calloc(1, sizeof(*d));
	unsigned i, k;
	int rc = 0;

	if (!d)
		return SMART_ENOMEM;
	d->ctx = ctx;
	d->home = home;
	d->root_idx = root_idx;
	d->meta = maddr;
	d->salt = m->salt;
	d->nblades = m->nblades;
	d->ntables = m->ntables;
	d->log_slots = m->log_slots;
	d->log_size = m->log_size;
	d->max_writes = m->max_writes;
	d->owner = smart_gaddr(home, m->owner_off);
	for (i = 0; i < m->nblades && !rc; i++) {
		d->blades[i] = m->blades[i];
		d->log_off[i] = m->log_off[i];
		/* our id on that blade names the locks we take there */
		rc = smart_lease_id(ctx, m->blades[i], &d->lease[i]);
	}
	for (i = 0; i < m->ntables && !rc; i++) {
		struct dtx_table *t = &d->tables[i];

		t->id = m->t[i].id;
		t->value_size = m->t[i].value_size;
		t->buckets = m->t[i].buckets;
		t->rec_size = m->t[i].rec_size;
		t->ncopies = m->t[i].ncopies;
		for (k = 0; k < t->ncopies; k++) {
			t->copy[k] = smart_gaddr(m->t[i].blade[k],
						 m->t[i].off[k]);
			if (smart__dtx_blade_index(d, m->t[i].blade[k]) < 0)
				rc = SMART_EPROTO;
		}
		if (d->by_id[t->id])
			rc = SMART_EPROTO;
		d->by_id[t->id] = t;
		if (t->rec_size > d->rec_max)
			d->rec_max = t->rec_size;
	}
	if (!rc && cache_entries) {
		d->cache = calloc(cache_entries, sizeof(*d->cache));
		d->cmask = cache_entries - 1;
		if (!d->cache)
			rc = SMART_ENOMEM;
	}
	if (rc) {
		free(d->cache);
		free(d);
		return rc;
	}
	atomic_store(&d->rng, (uint64_t)(uintptr_t)d ^ smart_now_ns());
	*out = d;
	return 0;
}

int smart_dtx_create(smart_worker_t *w, uint16_t home, const char *name,
		     const struct smart_dtx_config *cfg, smart_dtx_t **out)
{
	struct smart_dtx_config def;
	struct dtx_meta *m;
	smart_gaddr_t maddr = 0;
	uint64_t found;
	unsigned idx;
	int rc;

	smart_dtx_config_init(&def);
	if (!w || !out || !cfg || !smart_root_name_ok(name) ||
	    smart__ds_config_take(&def, sizeof(def),
				  _Alignof(struct smart_dtx_config), cfg))
		return SMART_EINVAL;
	cfg = &def;
	rc = config_check(cfg);
	if (rc)
		return rc;
	rc = smart_root_find(w, home, name, dtx_name_of, NULL, &idx, &found);
	if (rc != SMART_ENOENT)
		return rc ? rc : SMART_EEXIST;
	m = calloc(1, sizeof(*m));
	if (!m)
		return SMART_ENOMEM;
	rc = meta_build(w, home, name, cfg, m);
	if (!rc)
		rc = smart_alloc(w, home, sizeof(*m), &maddr);
	if (!rc)
		rc = meta_io(w, maddr, m, 1);
	if (!rc)
		rc = smart_root_publish(w, home, name, dtx_name_of, NULL, maddr,
					&idx);
	if (!rc)
		rc = dtx_new(w, m, maddr, home, idx, cfg->cache_entries, out);
	if (rc) {
		meta_free(w, m, home);
		if (maddr)
			(void)smart_free(w, maddr, sizeof(*m));
	}
	free(m);
	return rc;
}

int smart_dtx_open(smart_worker_t *w, uint16_t home, const char *name,
		   const struct smart_dtx_config *cfg, smart_dtx_t **out)
{
	struct smart_dtx_config def;
	struct dtx_meta *m;
	uint64_t maddr;
	unsigned idx;
	int rc;

	smart_dtx_config_init(&def);
	if (cfg &&
	    smart__ds_config_take(&def, sizeof(def),
				  _Alignof(struct smart_dtx_config), cfg))
		return SMART_EINVAL;
	cfg = &def;
	if (!w || !out || !smart_root_name_ok(name) ||
	    (cfg->cache_entries & (cfg->cache_entries - 1)))
		return SMART_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return SMART_ENOMEM;
	rc = smart_root_find(w, home, name, dtx_name_of, m, &idx, &maddr);
	if (!rc)
		rc = dtx_new(w, m, maddr, home, idx, cfg->cache_entries, out);
	free(m);
	return rc;
}

int smart_dtx_table_info(const smart_dtx_t *d, uint32_t table,
			 uint32_t *value_size, uint16_t *primary,
			 uint16_t *backups, unsigned *nbackups)
{
	const struct dtx_table *t = d ? smart__dtx_table(d, table) : NULL;
	unsigned k;

	if (!t)
		return SMART_EINVAL;
	if (value_size)
		*value_size = t->value_size;
	if (primary)
		*primary = smart_gaddr_blade(t->copy[0]);
	for (k = 1; backups && k < t->ncopies; k++)
		backups[k - 1] = smart_gaddr_blade(t->copy[k]);
	if (nbackups)
		*nbackups = t->ncopies - 1;
	return 0;
}

int smart_dtx_close(smart_dtx_t *d, smart_worker_t *w)
{
	(void)w; /* log slots go with their transaction objects */
	if (!d)
		return 0;
	if (atomic_load(&d->txns))
		return SMART_EBUSY;
	free(d->cache);
	free(d);
	return 0;
}

int smart_dtx_drop(smart_dtx_t *d, smart_worker_t *w)
{
	struct dtx_meta *m;
	int rc;

	if (!d || !w)
		return SMART_EINVAL;
	if (atomic_load(&d->txns))
		return SMART_EBUSY;
	m = calloc(1, sizeof(*m));
	if (!m)
		return SMART_ENOMEM;
	rc = meta_io(w, d->meta, m, 0);
	if (!rc && !meta_valid(m))
		rc = SMART_EPROTO;
	if (!rc)
		rc = smart_root_release(w, d->home, d->root_idx, d->meta);
	if (!rc) {
		meta_free(w, m, d->home);
		(void)smart_free(w, d->meta, sizeof(*m));
	}
	free(m);
	return rc ? rc : smart_dtx_close(d, w);
}

static int dtx_stats_fill(const smart_dtx_t *d, smart_worker_t *w,
			  struct smart_dtx_stats *o)
{
	(void)w; /* the counters are this object's: nothing to read */
	if (!d || !o)
		return SMART_EINVAL;
#define LD(f)                                                                  \
	o->f = atomic_load_explicit(&((smart_dtx_t *)d)->f,                    \
				    memory_order_relaxed)
	LD(commits);
	LD(aborts);
	LD(lock_conflicts);
	LD(validate_fails);
	LD(insert_conflicts);
	LD(cache_hits);
	LD(cache_misses);
	LD(crc_retries);
	LD(recoveries);
	LD(rolled_back);
	LD(rolled_forward);
	LD(locks_recovered);
	LD(slots_adopted);
	LD(adopt_deferred);
	LD(logs_settled);
	LD(unlocks_checked);
	LD(unlocks_redone);
	LD(unlocks_waited);
#undef LD
	return 0;
}

int smart_dtx_stats_sized(const smart_dtx_t *d, smart_worker_t *w,
			  struct smart_dtx_stats *out, size_t size)
{
	struct smart_dtx_stats full;
	int rc = out ? dtx_stats_fill(d, w, &full) : SMART_EINVAL;

	return rc ? rc : smart__ds_out_give(out, size, &full, sizeof(full));
}

/* ---- transaction objects and their log slots ---------------------- */

/* Claim a free log slot, or adopt one of a dead owner.  Reads the whole
 * owner table (8 bytes a slot) from a random start. */
static int slot_claim(smart_dtx_t *d, smart_worker_t *w, unsigned *out)
{
	size_t mark = smart_scratch_mark(w);
	uint64_t *own, mine = (uint64_t)smart__dtx_lease(d, d->home) << 48 | 1;
	uint64_t r = atomic_fetch_add(&d->rng, 0x9e3779b97f4a7c15ull);
	unsigned i, s, start = (unsigned)(r % d->log_slots);
	int pass, rc = smart_scratch_alloc(w, (size_t)d->log_slots * 8,
					   (void **)&own);

	if (!rc)
		rc = smart_read_sync(w, d->owner, (size_t)d->log_slots * 8,
				     own);
	for (pass = 0; !rc && pass < 2; pass++) {
		for (i = 0; i < d->log_slots; i++) {
			uint64_t old = 0;

			s = (start + i) % d->log_slots;
			if (pass == 0 && own[s])
				continue;
			if (pass == 1) {
				int alive = smart_lease_alive(
					w, d->home, (uint16_t)(own[s] >> 48));
				if (alive != 0)
					continue; /* alive, or an error */
				rc = smart__dtx_slot_adopt(d, w, s, own[s],
							   mine);
				if (rc == SMART_EAGAIN) {
					rc = 0;
					continue;
				}
				if (!rc)
					*out = s;
				goto done;
			}
			rc = smart_cas_sync(w,
					    smart_gaddr_add(d->owner, 8ull * s),
					    0, mine, &old);
			if (rc || !old) {
				if (!rc)
					*out = s;
				goto done;
			}
		}
	}
	if (!rc)
		rc = SMART_EBUSY;
done:
	smart_scratch_release(w, mark);
	return rc;
}

int smart_dtx_txn_new(smart_dtx_t *d, smart_worker_t *w, smart_dtx_txn_t **out)
{
	smart_dtx_txn_t *x;
	unsigned vmax;
	int rc;

	if (!d || !smart__dtx_own(d, w) || !out)
		return SMART_EINVAL;
	vmax = d->rec_max - (unsigned)sizeof(struct dtx_rec);
	x = calloc(1, sizeof(*x));
	if (!x)
		return SMART_ENOMEM;
	x->d = d;
	x->old_arena = malloc((size_t)SMART_DTX_ITEMS_MAX * d->rec_max);
	x->val_arena = malloc((size_t)SMART_DTX_ITEMS_MAX * vmax);
	rc = x->old_arena && x->val_arena ? 0 : SMART_ENOMEM;
	if (!rc)
		rc = slot_claim(d, w, &x->slot);
	if (rc) {
		free(x->old_arena);
		free(x->val_arena);
		free(x);
		return rc;
	}
	x->seq = (uint32_t)atomic_fetch_add(&d->rng, 0x9e3779b97f4a7c15ull);
	atomic_fetch_add(&d->txns, 1);
	*out = x;
	return 0;
}

int smart_dtx_txn_free(smart_dtx_txn_t *x, smart_worker_t *w)
{
	smart_dtx_t *d;
	int rc = 0;

	if (!x)
		return 0;
	d = x->d;
	if (w && !smart__dtx_own(d, w))
		return SMART_EINVAL;
	if (x->open && w)
		rc = smart_dtx_abort(x, w);
	/* locks a failure left: the slot (its log) stays ours until they
	 * are gone, or our lease ends and an adopter resolves them */
	if (w && !rc && x->stuck)
		rc = smart__dtx_unstick(x, w);
	/* the last commit's unlocks seen landed (on their worker: another
	 * cannot tell a lost one from one in flight) */
	if (w && !rc)
		rc = smart__dtx_unlock_reap(x, w);
	/* locks we could not let go name our lease ids: our sessions must
	 * not end with the BYE that gives them to a newcomer */
	if ((x->stuck || x->nunl || (x->open && !w)) && !SMART_M_DTX_NO_TAINT)
		(void)smart_ctx_taint(d->ctx);
	if (w && !rc) {
		uint64_t mine = (uint64_t)smart__dtx_lease(d, d->home) << 48 |
				1;
		uint64_t old;

		rc = smart_cas_sync(w,
				    smart_gaddr_add(d->owner, 8ull * x->slot),
				    mine, 0, &old);
	}
	smart__dtx_unlock_hold(x, 0); /* what is left: tainted above */
	atomic_fetch_sub(&d->txns, 1);
	free(x->old_arena);
	free(x->val_arena);
	free(x);
	return rc;
}
