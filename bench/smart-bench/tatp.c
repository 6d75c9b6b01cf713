/*
 * `smart-bench tatp`: TATP (the Telecom Application Transaction
 * Processing benchmark) with FORD's tables, keys and mix on Smart-DTX.
 *
 * Tables (ids, value bytes): SUBSCRIBER 0 (40), the secondary index
 * SUBSCRIBER by sub_nbr 1 (8: the s_id), ACCESS_INFO 2 (16),
 * SPECIAL_FACILITY 3 (8), CALL_FORWARDING 4 (24).  Keys, as FORD's:
 * s_id; sub_nbr, the s_id's 15 decimal digits 4 bits each (FORD's
 * FastGetSubscribeNumFromSubscribeID); s_id * 4 + ai_type - 1;
 * s_id * 4 + sf_type - 1; (s_id * 4 + sf_type - 1) * 3 + start_time / 8
 * (types 1..4, start times 0, 8, 16, as TATP's).
 *
 * Population (TATP's): each subscriber 1..4 access infos and 1..4 special
 * facilities of distinct random types, a facility active with 85%, 0..3
 * call forwardings per facility at distinct start times, an end time 1..8
 * hours after.  Subscriber ids: TATP's NURand, s_id = ((rand[0, A] |
 * rand[0, N)) mod N), A = 65535 up to 1M subscribers, 1048575 up to 10M,
 * 2097151 beyond (TATP's table; FORD takes the same A).
 *
 * The mix: GetSubscriberData 35, GetAccessData 35, GetNewDestination 10,
 * UpdateSubscriberData 2, UpdateLocation 14, InsertCallForwarding 2,
 * DeleteCallForwarding 2.  The last three find the s_id through the
 * secondary index first (one more round trip, as FORD).  As FORD,
 * InsertCallForwarding reads the special facility in the same round
 * trip as its insert and inserts whether or not the facility exists
 * (TATP's foreign-key failure is not modelled); its key present (TATP's
 * allowed error) is the "failed" outcome.  CALL_FORWARDING is sized for
 * half of its 12 keys per subscriber, where inserts and deletes (2% each)
 * take it, so a long run does not fill its buckets.
 *
 * Invariants: every value starts with a magic derived from its table and
 * key (dtx_magic), checked on every read and by the census; a secondary
 * record's s_id and a subscriber's sub_nbr must match the key's; a record
 * that must exist (a subscriber, its index entry) missing is a
 * validation failure.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtx_bench.h"

enum { SUB, SEC, AI, SF, CF, NTABLES };

enum { GET_SUB, GET_ACCESS, GET_DEST, UPD_SUB, UPD_LOC, INS_CF, DEL_CF,
       NTYPES };

#define TATP_MAGIC	0x54410000u	/* "TA" + the table */

struct sub_val {
	uint32_t magic, vlr_location, msc_location;
	uint16_t bits;			/* bit_1..bit_10 */
	uint8_t hex[5];			/* hex_1..hex_10, 4 bits each */
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

static const uint32_t val_size[NTABLES] = {
	sizeof(struct sub_val), sizeof(struct sec_val), sizeof(struct ai_val),
	sizeof(struct sf_val), sizeof(struct cf_val),
};

static const struct dtx_type tatp_types[NTYPES] = {
	[GET_SUB] = { "get_subscriber_data", "GetSubscriberData", 35 },
	[GET_ACCESS] = { "get_access_data", "GetAccessData", 35 },
	[GET_DEST] = { "get_new_destination", "GetNewDestination", 10 },
	[UPD_SUB] = { "update_subscriber_data", "UpdateSubscriberData", 2 },
	[UPD_LOC] = { "update_location", "UpdateLocation", 14 },
	[INS_CF] = { "insert_call_forwarding", "InsertCallForwarding", 2 },
	[DEL_CF] = { "delete_call_forwarding", "DeleteCallForwarding", 2 },
};

static const char *const tatp_tables[NTABLES] = {
	"subscriber", "sec_subscriber", "access_info", "special_facility",
	"call_forwarding",
};

static uint32_t magic(uint32_t table, uint64_t key)
{
	return dtx_magic(TATP_MAGIC + table, key);
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

static void rec_put(struct dtx_rec *r, uint32_t table, uint64_t key,
		    void *val)
{
	uint32_t m = magic(table, key);

	memcpy(val, &m, sizeof(m));
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
		memcpy((char *)p + i, &v, n - i < sizeof(v) ? n - i : sizeof(v));
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

static int sub_recs(uint64_t s, smart_rng_t *r, struct dtx_rec *out)
{
	struct sub_val v;
	struct sec_val x = { 0, (uint32_t)s };

	fill(r, &v, sizeof(v));
	memset(v.pad, 0, sizeof(v.pad));
	v.sub_nbr = sub_nbr(s);
	rec_put(&out[0], SUB, s, &v);
	rec_put(&out[1], SEC, sub_nbr(s), &x);
	return 2;
}

static int ai_recs(uint64_t s, smart_rng_t *r, struct dtx_rec *out)
{
	unsigned ty[4], i, n = 1 + (unsigned)smart_rng_below(r, 4);
	struct ai_val v;

	types_pick(r, ty);
	for (i = 0; i < n; i++) {
		fill(r, &v, sizeof(v));
		memset(v.pad, 0, sizeof(v.pad));
		rec_put(&out[i], AI, ai_key(s, ty[i]), &v);
	}
	return (int)n;
}

/* A facility's call forwardings: 0..3 at distinct start times. */
static int cf_recs(uint64_t s, unsigned sf_type, smart_rng_t *r,
		   struct dtx_rec *out)
{
	unsigned n = (unsigned)smart_rng_below(r, 4), first, i, start;
	struct cf_val v;

	first = (unsigned)smart_rng_below(r, 3);
	for (i = 0; i < n; i++) {
		start = (first + i) % 3 * 8;
		fill(r, &v, sizeof(v));
		memset(v.pad, 0, sizeof(v.pad));
		v.end_time = (uint8_t)(start + 1 + smart_rng_below(r, 8));
		rec_put(&out[i], CF, cf_key(s, sf_type, start), &v);
	}
	return (int)n;
}

static int sf_recs(uint64_t s, smart_rng_t *r, struct dtx_rec *out)
{
	unsigned ty[4], i, n = 1 + (unsigned)smart_rng_below(r, 4);
	struct sf_val v;
	int k = 0;

	types_pick(r, ty);
	for (i = 0; i < n; i++) {
		fill(r, &v, sizeof(v));
		v.is_active = smart_rng_below(r, 100) < 85;
		rec_put(&out[k++], SF, sf_key(s, ty[i]), &v);
		k += cf_recs(s, ty[i], r, &out[k]);
	}
	return k;
}

/* Subscriber u and what belongs to it, from its own stream (the same
 * whichever thread loads it, and for the sizing). */
static int tatp_unit(const struct dtx_bench *b, uint64_t u,
		     struct dtx_rec *out, int64_t *money)
{
	uint64_t k[2] = { b->run->com.seed, u };
	smart_rng_t r;
	int n;

	(void)money;
	smart_rng_seed(&r, smart_hash64(k, sizeof(k), 0x7a));
	n = sub_recs(u, &r, out);
	n += ai_recs(u, &r, out + n);
	n += sf_recs(u, &r, out + n);
	return n;
}

/* The records the load inserts, counted by generating them (a few
 * hundred ns a subscriber); the buckets: records / 4, rounded up. */
static void tatp_size(struct dtx_bench *b, struct smart_dtx_table *t,
		      uint64_t *records)
{
	struct dtx_rec out[DTX_UNIT_RECS];
	uint64_t u, room;
	int64_t none = 0;
	int i, n;

	memset(records, 0, NTABLES * sizeof(*records));
	for (u = 0; u < b->tp.subscribers; u++) {
		n = tatp_unit(b, u, out, &none);
		for (i = 0; i < n; i++)
			records[out[i].table]++;
	}
	for (i = 0; i < NTABLES; i++) {
		room = records[i];
		if (i == CF && room < 6 * b->tp.subscribers)
			room = 6 * b->tp.subscribers;
		t[i] = (struct smart_dtx_table){ (uint32_t)i, val_size[i],
						 (uint32_t)((room + 3) / 4),
						 -1 };
	}
}

static uint64_t tatp_units(const struct dtx_bench *b)
{
	return b->tp.subscribers;
}

static void tatp_adopt(struct dtx_bench *b, const struct dtx_census *c)
{
	b->tp.subscribers = c->records[SUB];
}

static int tatp_prepare(struct dtx_bench *b)
{
	uint64_t n = b->tp.subscribers;

	if (!n)
		return SMART_ENOENT;	/* an opened database without them */
	b->tp.a = n <= 1000000 ? 65535 : n <= 10000000 ? 1048575 : 2097151;
	return 0;
}

/* ---- inputs ---- */

static uint64_t s_id_pick(const struct dtx_bench *b, smart_rng_t *r)
{
	uint64_t n = b->tp.subscribers;

	return (smart_rng_below(r, b->tp.a + 1) | smart_rng_below(r, n)) % n;
}

/* v[0] s_id; v[1] a type 1..4; v[2] a start time 0, 8, 16; v[3] an end
 * time 1..24 (GetNewDestination) or hours after the start, 1..8
 * (InsertCallForwarding); v[4] random bits for what is written. */
static void tatp_gen(struct dtx_task *t, int type, struct dtx_params *p)
{
	smart_rng_t *r = &t->rng;

	p->v[0] = s_id_pick(t->b, r);
	p->v[1] = 1 + smart_rng_below(r, 4);
	p->v[2] = smart_rng_below(r, 3) * 8;
	p->v[3] = type == GET_DEST ? 1 + smart_rng_below(r, 24) :
		  1 + smart_rng_below(r, 8);
	p->v[4] = smart_rng_next(r);
}

/* ---- transactions ---- */

static int rd(struct dtx_task *t, uint32_t table, uint64_t key, int slot)
{
	return dtx_q(t, smart_dtx_read(t->x, table, key, t->buf[slot],
				       DTX_VAL_MAX));
}

static int rfu(struct dtx_task *t, uint32_t table, uint64_t key, int slot)
{
	return dtx_q(t, smart_dtx_read_for_update(t->x, table, key,
						  t->buf[slot], DTX_VAL_MAX));
}

/* An executed item of table/key: 1 there and right, else 0 (a wrong one
 * counted by dtx_found; a missing one too when it must exist). */
static int got(struct dtx_task *t, int item, int slot, uint32_t table,
	       uint64_t key, int must)
{
	int f = dtx_found(t, item, slot, val_size[table], magic(table, key));

	if (f == 0 && must)
		dtx_vfail(t);
	return f > 0;
}

/* Read only, one commit: the subscriber, whose sub_nbr must be its own. */
static int get_subscriber(struct dtx_task *t, const struct dtx_params *p,
			  struct dtx_outcome *o)
{
	struct sub_val v;
	int it, rc = dtx_begin(t);

	if (rc)
		return rc;
	it = rd(t, SUB, p->v[0], 0);
	rc = dtx_commit(t);
	if (rc || !got(t, it, 0, SUB, p->v[0], 1))
		return rc;
	memcpy(&v, t->buf[0], sizeof(v));
	if (v.sub_nbr != sub_nbr(p->v[0]))
		dtx_vfail(t);
	return 0;
}

static int get_access(struct dtx_task *t, const struct dtx_params *p,
		      struct dtx_outcome *o)
{
	uint64_t k = ai_key(p->v[0], (unsigned)p->v[1]);
	int it, rc = dtx_begin(t);

	if (rc)
		return rc;
	it = rd(t, AI, k, 0);
	rc = dtx_commit(t);
	if (!rc && !got(t, it, 0, AI, k, 0))
		o->failed = 1;
	return rc;
}

/* The facility and its call forwardings starting up to the start time:
 * found when the facility is active and one of them ends after the end
 * time. */
static int get_destination(struct dtx_task *t, const struct dtx_params *p,
			   struct dtx_outcome *o)
{
	uint64_t s = p->v[0];
	unsigned ty = (unsigned)p->v[1], st = (unsigned)p->v[2], i, n = st / 8 + 1;
	int it[4], rc = dtx_begin(t), found = 0;
	struct sf_val sf;
	struct cf_val cf;

	if (rc)
		return rc;
	it[0] = rd(t, SF, sf_key(s, ty), 0);
	for (i = 0; i < n; i++)
		it[1 + i] = rd(t, CF, cf_key(s, ty, i * 8), (int)(1 + i));
	rc = dtx_commit(t);
	if (rc)
		return rc;
	memcpy(&sf, t->buf[0], sizeof(sf));
	if (!got(t, it[0], 0, SF, sf_key(s, ty), 0))
		sf.is_active = 0;
	for (i = 0; i < n; i++) {	/* every item checked, found or not */
		memcpy(&cf, t->buf[1 + i], sizeof(cf));
		if (got(t, it[1 + i], (int)(1 + i), CF, cf_key(s, ty, i * 8),
			0) && sf.is_active && cf.end_time > p->v[3])
			found = 1;
	}
	o->failed = !found;
	return 0;
}

/* A new value for an item read for update (kept in the slot's write
 * buffer until the commit). */
static void put(struct dtx_task *t, int item, int slot, const void *val,
		size_t len)
{
	memcpy(t->wbuf[slot], val, len);
	dtx_q(t, smart_dtx_write(t->x, item, t->wbuf[slot], len));
}

/* The subscriber's bit_1 and the facility's data_a; nothing when the
 * facility is not there (TATP's allowed error). */
static int update_subscriber(struct dtx_task *t, const struct dtx_params *p,
			     struct dtx_outcome *o)
{
	uint64_t s = p->v[0], k = sf_key(s, (unsigned)p->v[1]);
	int is, if_, rc = dtx_begin(t);
	struct sub_val sv;
	struct sf_val fv;

	if (rc)
		return rc;
	is = rfu(t, SUB, s, 0);
	if_ = rfu(t, SF, k, 1);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (got(t, is, 0, SUB, s, 1) & got(t, if_, 1, SF, k, 0)) {
		memcpy(&sv, t->buf[0], sizeof(sv));
		sv.bits = (uint16_t)((sv.bits & ~1u) | (p->v[4] & 1));
		memcpy(&fv, t->buf[1], sizeof(fv));
		fv.data_a = (uint8_t)(p->v[4] >> 8);
		put(t, is, 0, &sv, sizeof(sv));
		put(t, if_, 1, &fv, sizeof(fv));
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

/* The s_id of subscriber s through the secondary index (one exec); -1
 * when the index has it wrong or not (a validation failure). */
static int sec_lookup(struct dtx_task *t, uint64_t s, int *rc)
{
	struct sec_val v;
	int it;

	*rc = dtx_begin(t);
	if (*rc)
		return -1;
	it = rd(t, SEC, sub_nbr(s), 0);
	*rc = dtx_exec(t);
	if (*rc || !got(t, it, 0, SEC, sub_nbr(s), 1))
		return -1;
	memcpy(&v, t->buf[0], sizeof(v));
	if (v.s_id != s) {
		dtx_vfail(t);
		return -1;
	}
	return 0;
}

/* After a failed lookup: its error, or (the index wrong, counted) a
 * commit of what was read, with no write. */
static int lookup_failed(struct dtx_task *t, int rc, struct dtx_outcome *o)
{
	if (rc)
		return rc;
	o->failed = 1;
	return dtx_commit(t);
}

static int update_location(struct dtx_task *t, const struct dtx_params *p,
			   struct dtx_outcome *o)
{
	uint64_t s = p->v[0];
	struct sub_val v;
	int it, rc;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	it = rfu(t, SUB, s, 1);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (got(t, it, 1, SUB, s, 1)) {
		memcpy(&v, t->buf[1], sizeof(v));
		v.vlr_location = (uint32_t)p->v[4];
		put(t, it, 1, &v, sizeof(v));
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

/* The facility read and the forwarding inserted in one exec (FORD);
 * the key present, or its buckets full, is the failed outcome. */
static int insert_forwarding(struct dtx_task *t, const struct dtx_params *p,
			     struct dtx_outcome *o)
{
	uint64_t s = p->v[0];
	unsigned ty = (unsigned)p->v[1], st = (unsigned)p->v[2];
	uint64_t k = cf_key(s, ty, st);
	struct cf_val v;
	int is, ic, rc, st_ins;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	memset(&v, 0, sizeof(v));
	v.magic = magic(CF, k);
	v.end_time = (uint8_t)(st + p->v[3]);
	memcpy(v.numberx, &p->v[4], sizeof(p->v[4]));
	memcpy(t->wbuf[2], &v, sizeof(v));
	is = rd(t, SF, sf_key(s, ty), 1);
	ic = dtx_q(t, smart_dtx_insert(t->x, CF, k, t->wbuf[2], sizeof(v)));
	rc = dtx_exec(t);
	if (rc)
		return rc;
	(void)got(t, is, 1, SF, sf_key(s, ty), 0);
	st_ins = smart_dtx_status(t->x, ic, NULL);
	o->full = st_ins == SMART_ENOSPC;
	o->failed = st_ins != 0;
	if (st_ins && st_ins != SMART_EEXIST && st_ins != SMART_ENOSPC)
		dtx_vfail(t);
	return dtx_commit(t);
}

static int delete_forwarding(struct dtx_task *t, const struct dtx_params *p,
			     struct dtx_outcome *o)
{
	uint64_t s = p->v[0];
	uint64_t k = cf_key(s, (unsigned)p->v[1], (unsigned)p->v[2]);
	int it, rc;

	if (sec_lookup(t, s, &rc))
		return lookup_failed(t, rc, o);
	it = rfu(t, CF, k, 1);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (got(t, it, 1, CF, k, 0))
		dtx_q(t, smart_dtx_delete(t->x, it));
	else
		o->failed = 1;
	return dtx_commit(t);
}

static int tatp_attempt(struct dtx_task *t, int type,
			const struct dtx_params *p, struct dtx_outcome *o)
{
	switch (type) {
	case GET_SUB:
		return get_subscriber(t, p, o);
	case GET_ACCESS:
		return get_access(t, p, o);
	case GET_DEST:
		return get_destination(t, p, o);
	case UPD_SUB:
		return update_subscriber(t, p, o);
	case UPD_LOC:
		return update_location(t, p, o);
	case INS_CF:
		return insert_forwarding(t, p, o);
	default:
		return delete_forwarding(t, p, o);
	}
}

/* ---- the check and the report ---- */

static int tatp_verify(uint32_t table, uint64_t key, const void *val,
		       size_t len, int64_t *money)
{
	uint32_t m;
	struct sub_val sv;
	struct sec_val xv;

	(void)money;
	if (table >= NTABLES || len != val_size[table])
		return 0;
	memcpy(&m, val, sizeof(m));
	if (m != magic(table, key))
		return 0;
	if (table == SUB) {
		memcpy(&sv, val, sizeof(sv));
		return sv.sub_nbr == sub_nbr(key);
	}
	if (table == SEC) {
		memcpy(&xv, val, sizeof(xv));
		return sub_nbr(xv.s_id) == key;
	}
	return 1;
}

static void tatp_describe(const struct dtx_bench *b, char *buf, size_t n)
{
	snprintf(buf, n, "%" PRIu64 " subscribers, NURand A = %" PRIu64,
		 b->tp.subscribers, b->tp.a);
}

static void tatp_record(const struct dtx_bench *b, struct kit_rec *rec)
{
	kit_rec_num(rec, "subscribers", "%" PRIu64, b->tp.subscribers);
	kit_rec_num(rec, "nurand_a", "%" PRIu64, b->tp.a);
}

static const struct dtx_workload dtx_tatp = {
	.name = "tatp",
	.title = "TATP",
	.ntypes = NTYPES,
	.types = tatp_types,
	.ntables = NTABLES,
	.tables = tatp_tables,
	.money = 0,
	.fixed = (1u << CF) - 1,	/* all but CALL_FORWARDING */
	.size = tatp_size,
	.units = tatp_units,
	.unit = tatp_unit,
	.adopt = tatp_adopt,
	.prepare = tatp_prepare,
	.gen = tatp_gen,
	.attempt = tatp_attempt,
	.verify = tatp_verify,
	.describe = tatp_describe,
	.record = tatp_record,
};

/* ---- the module ---- */

#define B struct dtx_bench
static const struct kit_flag tatp_flags[] = {
	KIT_U64("subscribers", B, tp.subscribers, 1, 5e7, "N",
		"subscribers [100000]"),
	DTX_COMMON_FLAGS(B),
	KIT_END,
};
#undef B

static void *tatp_create(struct bench_run *r)
{
	return dtx_bench_create(r, &dtx_tatp);
}

const struct bench_module bench_tatp = {
	.name = "tatp",
	.summary = "TATP on Smart-DTX (FORD's tables and mix)",
	.about = "  TATP on Smart-DTX, FORD's tables, keys and mix: "
		 "GetSubscriberData 35%,\n  GetAccessData 35%, "
		 "GetNewDestination 10%, UpdateSubscriberData 2%,\n  "
		 "UpdateLocation 14%, InsertCallForwarding 2%, "
		 "DeleteCallForwarding 2%;\n  subscribers by TATP's NURand "
		 "(A = 65535 up to 1M of them).  Without --connect,\n  "
		 "replicas + 1 embedded blades are started in this process.  "
		 "Every record\n  carries a magic checked on every read.  "
		 "--check: at the end every record is\n  right, the backups "
		 "equal the primaries and no lock is held.\n"
		 "  SIGINT/SIGTERM end the measured window early; the run "
		 "still reports.\n",
	.flags = tatp_flags,
	.csv = dtx_bench_csv,
	.create = tatp_create,
	.check = dtx_bench_check,
	.setup = dtx_bench_setup,
	.run = dtx_bench_run,
	.report = dtx_bench_report,
	.destroy = dtx_bench_destroy,
};
