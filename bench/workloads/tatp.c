/*
 * TATP's tables, population, draws and transactions (tatp.h).
 * Invariants: every value written is sealed (its magic over its key and
 * bytes) and every value read is checked (got, tp_verify) before it is
 * used; the s_id found through the index must be the subscriber's.
 */
#include <string.h>

#include "tatp.h"

#define TATP_MAGIC 0x54410000u /* "TA" + the table */

struct sub_val {
	uint32_t magic, vlr_location, msc_location;
	uint16_t bits;	/* bit_1..bit_10 */
	uint8_t hex[5]; /* hex_1..hex_10, 4 bits each */
	uint8_t byte2[10];
	uint8_t pad[3];
	uint64_t sub_nbr;
};
struct sec_val {
	uint32_t magic, s_id;
};
struct ai_val {
	uint32_t magic;
	uint8_t data1, data2;
	char data3[3], data4[5];
	uint8_t pad[2];
};
/* data_b[5] cut to its first byte: room for the magic in 8 bytes */
struct sf_val {
	uint32_t magic;
	uint8_t is_active, error_cntrl, data_a, data_b0;
};
struct cf_val {
	uint32_t magic;
	uint8_t end_time;
	char numberx[15];
	uint8_t pad[4];
};
_Static_assert(sizeof(struct sub_val) == 40, "SUBSCRIBER is 40 B");
_Static_assert(sizeof(struct sec_val) == 8, "the index is 8 B");
_Static_assert(sizeof(struct ai_val) == 16, "ACCESS_INFO is 16 B");
_Static_assert(sizeof(struct sf_val) == 8, "SPECIAL_FACILITY is 8 B");
_Static_assert(sizeof(struct cf_val) == 24, "CALL_FORWARDING is 24 B");

static const uint32_t val_size[TP_NTABLES] = {
	sizeof(struct sub_val), sizeof(struct sec_val), sizeof(struct ai_val),
	sizeof(struct sf_val),	sizeof(struct cf_val),
};

const struct wl_type tp_types[TP_NTYPES] = {
	[TP_GET_SUB] = { "get_subscriber_data", "GetSubscriberData", 35 },
	[TP_GET_ACCESS] = { "get_access_data", "GetAccessData", 35 },
	[TP_GET_DEST] = { "get_new_destination", "GetNewDestination", 10 },
	[TP_UPD_SUB] = { "update_subscriber_data", "UpdateSubscriberData", 2 },
	[TP_UPD_LOC] = { "update_location", "UpdateLocation", 14 },
	[TP_INS_CF] = { "insert_call_forwarding", "InsertCallForwarding", 2 },
	[TP_DEL_CF] = { "delete_call_forwarding", "DeleteCallForwarding", 2 },
};

const char *const tp_table_names[TP_NTABLES] = {
	"subscriber",	    "sec_subscriber",  "access_info",
	"special_facility", "call_forwarding",
};

/* The magic of table/key's value val (val_size[table] bytes): from the
 * table and key, and a hash of the bytes after it. */
static uint32_t magic(uint32_t table, uint64_t key, const void *val)
{
	return wl_magic(TATP_MAGIC + table, key) ^
	       (uint32_t)smart_hash64((const char *)val + 4,
				      val_size[table] - 4, 0x7461);
}

/* val's magic set for table/key, after its other bytes. */
static void seal(uint32_t table, uint64_t key, void *val)
{
	uint32_t m = magic(table, key, val);

	memcpy(val, &m, sizeof(m));
}

/* ---- keys ---- */

/* The s_id's decimal digits, 4 bits each: the sub_nbr as a key. */
static uint64_t sub_nbr(uint64_t s_id)
{
	uint64_t k = 0;
	int i;

	for (i = 0; i < 15; i++, s_id /= 10)
		k |= (s_id % 10) << (4 * i);
	return k;
}

static uint64_t ai_key(uint64_t s, unsigned type)
{
	return s * 4 + type - 1;
}

static uint64_t sf_key(uint64_t s, unsigned type)
{
	return s * 4 + type - 1;
}

static uint64_t cf_key(uint64_t s, unsigned sf_type, unsigned start)
{
	return sf_key(s, sf_type) * 3 + start / 8;
}

/* ---- the population ---- */

static void rec_put(struct wl_rec *r, uint32_t table, uint64_t key, void *val)
{
	seal(table, key, val);
	r->table = table;
	r->key = key;
	r->len = val_size[table];
	memcpy(r->val, val, r->len);
}

static void fill(smart_rng_t *r, void *p, size_t n)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < n; i += sizeof(v)) {
		v = smart_rng_next(r);
		memcpy((char *)p + i, &v,
		       n - i < sizeof(v) ? n - i : sizeof(v));
	}
}

/* The first n of 1..4 in a random order: distinct types. */
static void types_pick(smart_rng_t *r, unsigned *ty)
{
	unsigned i, j, x;

	for (i = 0; i < 4; i++)
		ty[i] = i + 1;
	for (i = 3; i > 0; i--) {
		j = (unsigned)smart_rng_below(r, i + 1);
		x = ty[i], ty[i] = ty[j], ty[j] = x;
	}
}

static int sub_recs(uint64_t s, smart_rng_t *r, struct wl_rec *out)
{
	struct sub_val v;
	struct sec_val x = { 0, (uint32_t)s };

	fill(r, &v, sizeof(v));
	memset(v.pad, 0, sizeof(v.pad));
	v.sub_nbr = sub_nbr(s);
	rec_put(&out[0], TP_SUB, s, &v);
	rec_put(&out[1], TP_SEC, sub_nbr(s), &x);
	return 2;
}

static int ai_recs(uint64_t s, smart_rng_t *r, struct wl_rec *out)
{
	unsigned ty[4], i, n = 1 + (unsigned)smart_rng_below(r, 4);
	struct ai_val v;

	types_pick(r, ty);
	for (i = 0; i < n; i++) {
		fill(r, &v, sizeof(v));
		memset(v.pad, 0, sizeof(v.pad));
		rec_put(&out[i], TP_AI, ai_key(s, ty[i]), &v);
	}
	return (int)n;
}

/* A facility's call forwardings: 0..3 at distinct start times. */
static int cf_recs(uint64_t s, unsigned sf_type, smart_rng_t *r,
		   struct wl_rec *out)
{
	unsigned n = (unsigned)smart_rng_below(r, 4), first, i, start;
	struct cf_val v;

	first = (unsigned)smart_rng_below(r, 3);
	for (i = 0; i < n; i++) {
		start = (first + i) % 3 * 8;
		fill(r, &v, sizeof(v));
		memset(v.pad, 0, sizeof(v.pad));
		v.end_time = (uint8_t)(start + 1 + smart_rng_below(r, 8));
		rec_put(&out[i], TP_CF, cf_key(s, sf_type, start), &v);
	}
	return (int)n;
}

static int sf_recs(uint64_t s, smart_rng_t *r, struct wl_rec *out)
{
	unsigned ty[4], i, n = 1 + (unsigned)smart_rng_below(r, 4);
	struct sf_val v;
	int k = 0;

	types_pick(r, ty);
	for (i = 0; i < n; i++) {
		fill(r, &v, sizeof(v));
		v.is_active = smart_rng_below(r, 100) < 85;
		rec_put(&out[k++], TP_SF, sf_key(s, ty[i]), &v);
		k += cf_recs(s, ty[i], r, &out[k]);
	}
	return k;
}

int tp_unit(const struct tp_cfg *c, uint64_t u, struct wl_rec *out)
{
	uint64_t k[2] = { c->seed, u };
	smart_rng_t r;
	int n;

	smart_rng_seed(&r, smart_hash64(k, sizeof(k), 0x7a));
	n = sub_recs(u, &r, out);
	n += ai_recs(u, &r, out + n);
	n += sf_recs(u, &r, out + n);
	return n;
}

void tp_cfg_init(struct tp_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->subscribers = 100000;
}

void tp_tables(const struct tp_cfg *c, struct smart_dtx_table *t,
	       uint64_t *records)
{
	struct wl_rec out[WL_UNIT_RECS];
	uint64_t u, room;
	int i, n;

	memset(records, 0, TP_NTABLES * sizeof(*records));
	for (u = 0; u < c->subscribers; u++) {
		n = tp_unit(c, u, out);
		for (i = 0; i < n; i++)
			records[out[i].table]++;
	}
	for (i = 0; i < TP_NTABLES; i++) {
		room = records[i];
		if (i == TP_CF && room < 6 * c->subscribers)
			room = 6 * c->subscribers;
		t[i] = (struct smart_dtx_table){ (uint32_t)i, val_size[i],
						 (uint32_t)((room + 3) / 4),
						 -1 };
	}
}

int tp_prepare(struct tp_cfg *c)
{
	uint64_t n = c->subscribers;

	if (!n)
		return SMART_ENOENT; /* an opened database without them */
	c->a = n <= 1000000 ? 65535 : n <= 10000000 ? 1048575 : 2097151;
	return 0;
}

/* ---- inputs ---- */

static uint64_t s_id_pick(const struct tp_cfg *c, smart_rng_t *r)
{
	uint64_t n = c->subscribers;

	return (smart_rng_below(r, c->a + 1) | smart_rng_below(r, n)) % n;
}

/* v[0] s_id; v[1] a type 1..4; v[2] a start time 0, 8, 16; v[3] an end
 * time 1..24 (GetNewDestination) or hours after the start, 1..8
 * (InsertCallForwarding); v[4] random bits for what is written. */
void tp_gen(const struct tp_cfg *c, smart_rng_t *r, int type,
	    struct wl_params *p)
{
	memset(p, 0, sizeof(*p));
	p->v[0] = s_id_pick(c, r);
	p->v[1] = 1 + smart_rng_below(r, 4);
	p->v[2] = smart_rng_below(r, 3) * 8;
	p->v[3] = type == TP_GET_DEST ? 1 + smart_rng_below(r, 24) :
					1 + smart_rng_below(r, 8);
	p->v[4] = smart_rng_next(r);
}

/* ---- transactions ---- */

static int rd(struct wl_txn *t, uint32_t table, uint64_t key, int slot)
{
	return wl_read(t, 0, table, key, slot);
}

static int rfu(struct wl_txn *t, uint32_t table, uint64_t key, int slot)
{
	return wl_read(t, 1, table, key, slot);
}

/* An executed item of table/key: 1 there and right, else 0 (a wrong one
 * counted by wl_bad; a missing one too when it must exist). */
static int got(struct wl_txn *t, int item, int slot, uint32_t table,
	       uint64_t key, int must)
{
	int f = wl_found(t, item, val_size[table]);

	if (f == 0 && must)
		wl_bad(t, table, key);
	if (f > 0 && !tp_verify(table, key, t->buf[slot], val_size[table])) {
		wl_bad(t, table, key);
		return 0;
	}
	return f > 0;
}

/* Read only, one commit: the subscriber. */
static int get_subscriber(struct wl_txn *t, const struct wl_params *p,
			  struct wl_outcome *o)
{
	int it, rc = wl_begin(t);

	(void)o;
	if (rc)
		return rc;
	it = rd(t, TP_SUB, p->v[0], 0);
	rc = wl_commit(t);
	if (!rc) /* its sub_nbr its own: tp_verify */
		(void)got(t, it, 0, TP_SUB, p->v[0], 1);
	return rc;
}

static int get_access(struct wl_txn *t, const struct wl_params *p,
		      struct wl_outcome *o)
{
	uint64_t k = ai_key(p->v[0], (unsigned)p->v[1]);
	int it, rc = wl_begin(t);

	if (rc)
		return rc;
	it = rd(t, TP_AI, k, 0);
	rc = wl_commit(t);
	if (!rc && !got(t, it, 0, TP_AI, k, 0))
		o->failed = 1;
	return rc;
}

/* The facility and its call forwardings starting up to the start time:
 * found when the facility is active and one of them ends after the end
 * time. */
static int get_destination(struct wl_txn *t, const struct wl_params *p,
			   struct wl_outcome *o)
{
	uint64_t s = p->v[0];
	unsigned ty = (unsigned)p->v[1], st = (unsigned)p->v[2], i,
		 n = st / 8 + 1;
	int it[4], rc = wl_begin(t), found = 0;
	struct sf_val sf;
	struct cf_val cf;

	if (rc)
		return rc;
	it[0] = rd(t, TP_SF, sf_key(s, ty), 0);
	for (i = 0; i < n; i++)
		it[1 + i] = rd(t, TP_CF, cf_key(s, ty, i * 8), (int)(1 + i));
	rc = wl_commit(t);
	if (rc)
		return rc;
	memcpy(&sf, t->buf[0], sizeof(sf));
	if (!got(t, it[0], 0, TP_SF, sf_key(s, ty), 0))
		sf.is_active = 0;
	for (i = 0; i < n; i++) { /* every item checked, found or not */
		memcpy(&cf, t->buf[1 + i], sizeof(cf));
		if (got(t, it[1 + i], (int)(1 + i), TP_CF, cf_key(s, ty, i * 8),
			0) &&
		    sf.is_active && cf.end_time > p->v[3])
			found = 1;
	}
	o->failed = !found;
	return 0;
}

/* A new value for an item read for update (kept in the slot's write
 * buffer until the commit). */
static void put(struct wl_txn *t, int item, int slot, void *val)
{
	uint32_t table = t->item[item].table;

	seal(table, t->item[item].key, val);
	wl_write(t, item, slot, val, val_size[table]);
}

/* The subscriber's bit_1 and the facility's data_a; nothing when the
 * facility is not there (TATP's allowed error). */
static int update_subscriber(struct wl_txn *t, const struct wl_params *p,
			     struct wl_outcome *o)
{
	uint64_t s = p->v[0], k = sf_key(s, (unsigned)p->v[1]);
	int is, if_, rc = wl_begin(t);
	struct sub_val sv;
	struct sf_val fv;

	if (rc)
		return rc;
	is = rfu(t, TP_SUB, s, 0);
	if_ = rfu(t, TP_SF, k, 1);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (got(t, is, 0, TP_SUB, s, 1) & got(t, if_, 1, TP_SF, k, 0)) {
		memcpy(&sv, t->buf[0], sizeof(sv));
		sv.bits = (uint16_t)((sv.bits & ~1u) | (p->v[4] & 1));
		memcpy(&fv, t->buf[1], sizeof(fv));
		fv.data_a = (uint8_t)(p->v[4] >> 8);
		put(t, is, 0, &sv);
		put(t, if_, 1, &fv);
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

/* The s_id of subscriber s through the secondary index (one exec); -1
 * when the index has it wrong or not (a validation failure). */
static int sec_lookup(struct wl_txn *t, uint64_t s, int *rc)
{
	struct sec_val v;
	int it;

	*rc = wl_begin(t);
	if (*rc)
		return -1;
	it = rd(t, TP_SEC, sub_nbr(s), 0);
	*rc = wl_exec(t);
	if (*rc || !got(t, it, 0, TP_SEC, sub_nbr(s), 1))
		return -1;
	memcpy(&v, t->buf[0], sizeof(v));
	if (v.s_id != s) {
		wl_bad(t, TP_SEC, sub_nbr(s));
		return -1;
	}
	return 0;
}

/* After a failed lookup: its error, or (the index wrong, counted) a
 * commit of what was read, with no write. */
static int lookup_failed(struct wl_txn *t, int rc, struct wl_outcome *o)
{
	if (rc)
		return rc;
	o->failed = 1;
	return wl_commit(t);
}

static int update_location(struct wl_txn *t, const struct wl_params *p,
			   struct wl_outcome *o)
{
	uint64_t s = p->v[0];
	struct sub_val v;
	int it, rc;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	it = rfu(t, TP_SUB, s, 1);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (got(t, it, 1, TP_SUB, s, 1)) {
		memcpy(&v, t->buf[1], sizeof(v));
		v.vlr_location = (uint32_t)p->v[4];
		put(t, it, 1, &v);
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

/* The facility read and the forwarding inserted in one exec (FORD);
 * the key present, or its buckets full, is the failed outcome. */
static int insert_forwarding(struct wl_txn *t, const struct wl_params *p,
			     struct wl_outcome *o)
{
	uint64_t s = p->v[0];
	unsigned ty = (unsigned)p->v[1], st = (unsigned)p->v[2];
	uint64_t k = cf_key(s, ty, st);
	struct cf_val v;
	int is, ic, rc, st_ins;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	memset(&v, 0, sizeof(v));
	v.end_time = (uint8_t)(st + p->v[3]);
	memcpy(v.numberx, &p->v[4], sizeof(p->v[4]));
	seal(TP_CF, k, &v);
	memcpy(t->wbuf[2], &v, sizeof(v));
	is = rd(t, TP_SF, sf_key(s, ty), 1);
	ic = wl_q(t, smart_dtx_insert(t->x, TP_CF, k, t->wbuf[2], sizeof(v)),
		  WL_INSERT, TP_CF, k);
	rc = wl_exec(t);
	if (rc)
		return rc;
	(void)got(t, is, 1, TP_SF, sf_key(s, ty), 0);
	st_ins = smart_dtx_status(t->x, ic, NULL);
	o->full = st_ins == SMART_ENOSPC;
	o->failed = st_ins != 0;
	if (st_ins && st_ins != SMART_EEXIST && st_ins != SMART_ENOSPC)
		wl_bad(t, TP_CF, k);
	return wl_commit(t);
}

static int delete_forwarding(struct wl_txn *t, const struct wl_params *p,
			     struct wl_outcome *o)
{
	uint64_t s = p->v[0];
	uint64_t k = cf_key(s, (unsigned)p->v[1], (unsigned)p->v[2]);
	int it, rc;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	it = rfu(t, TP_CF, k, 1);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (got(t, it, 1, TP_CF, k, 0))
		wl_delete(t, it);
	else
		o->failed = 1;
	return wl_commit(t);
}

int tp_attempt(struct wl_txn *t, int type, const struct wl_params *p,
	       struct wl_outcome *o)
{
	switch (type) {
	case TP_GET_SUB:
		return get_subscriber(t, p, o);
	case TP_GET_ACCESS:
		return get_access(t, p, o);
	case TP_GET_DEST:
		return get_destination(t, p, o);
	case TP_UPD_SUB:
		return update_subscriber(t, p, o);
	case TP_UPD_LOC:
		return update_location(t, p, o);
	case TP_INS_CF:
		return insert_forwarding(t, p, o);
	default:
		return delete_forwarding(t, p, o);
	}
}

/* ---- the check ---- */

int tp_verify(uint32_t table, uint64_t key, const void *val, size_t len)
{
	uint32_t m;
	struct sub_val sv;
	struct sec_val xv;

	if (table >= TP_NTABLES || len != val_size[table])
		return 0;
	memcpy(&m, val, sizeof(m));
	if (m != magic(table, key, val))
		return 0;
	if (table == TP_SUB) {
		memcpy(&sv, val, sizeof(sv));
		return sv.sub_nbr == sub_nbr(key);
	}
	if (table == TP_SEC) {
		memcpy(&xv, val, sizeof(xv));
		return sub_nbr(xv.s_id) == key;
	}
	return 1;
}
