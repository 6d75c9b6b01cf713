/*
 * SmallBank's tables, load, draws and transactions (smallbank.h).
 * Invariants: every balance read is checked whole (sb_value_ok) before it
 * is used, and every item of an attempt is checked (the checks combined
 * with `&`, not `&&`); a write keeps the value's layout, so a record is
 * always whole under its key.
 */
#include <string.h>

#include "smallbank.h"

#define SB_MAGIC    0x53420000u /* "SB" + the table */
#define BAL_MIN	    1000000	/* FORD's 10 000..50 000, in cents */
#define BAL_MAX	    5000000
#define AMT_DEPOSIT 130	 /* DepositChecking: 1.30 */
#define AMT_PAYMENT 500	 /* SendPayment: 5.00 */
#define AMT_SAVING  2020 /* TransactSaving: 20.20 */
#define AMT_CHECK   500	 /* WriteCheck: 5.00 */

struct sb_val {
	uint32_t magic, pad;
	int64_t cents;
};
_Static_assert(sizeof(struct sb_val) == 16, "SmallBank values are 16 B");
_Static_assert(WL_VAL_MAX % 8 == 0, "values are words");

const struct wl_type sb_types[SB_NTYPES] = {
	[SB_AMALGAMATE] = { "amalgamate", "Amalgamate", 15 },
	[SB_BALANCE] = { "balance", "Balance", 15 },
	[SB_DEPOSIT] = { "deposit_checking", "DepositChecking", 15 },
	[SB_PAYMENT] = { "send_payment", "SendPayment", 25 },
	[SB_SAVING] = { "transact_saving", "TransactSaving", 15 },
	[SB_CHECK] = { "write_check", "WriteCheck", 15 },
};

const char *const sb_table_names[SB_NTABLES] = { "savings", "checking",
						 "ledger" };

void sb_cfg_init(struct sb_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->accounts = 100000;
	c->hot = 4000;
	c->hot_pct = 90;
	c->value_size = sizeof(struct sb_val);
	c->bal_min = BAL_MIN;
	c->bal_max = BAL_MAX;
}

/* ---- values ---- */

/* Word i (from 0) after the 16-byte head of an account's value. */
static uint64_t tail_word(uint64_t key, int64_t cents, unsigned i)
{
	return (uint64_t)cents ^
	       (key * 0x9e3779b97f4a7c15ull + (i + 1) * 0x51ull);
}

/* A value's words after its head; none for a size sb_prepare refuses. */
static unsigned tail_words(const struct sb_cfg *c)
{
	if (c->value_size < sizeof(struct sb_val) || c->value_size > WL_VAL_MAX)
		return 0;
	return (unsigned)(c->value_size - sizeof(struct sb_val)) / 8;
}

/* Account a's value of table tb holding cents, into val (value_size). */
static void val_make(const struct sb_cfg *c, void *val, uint32_t tb, uint64_t a,
		     int64_t cents)
{
	struct sb_val v = { wl_magic(SB_MAGIC + tb, a), 0, cents };
	uint64_t w;
	unsigned i;

	memcpy(val, &v, sizeof(v));
	for (i = 0; i < tail_words(c); i++) {
		w = tail_word(a, cents, i);
		memcpy((char *)val + sizeof(v) + 8 * i, &w, sizeof(w));
	}
}

int sb_value_ok(const struct sb_cfg *c, uint32_t table, uint64_t key,
		const void *val, size_t len, int64_t *cents)
{
	struct sb_val v;
	uint64_t w;
	unsigned i;

	if (len != c->value_size || len != sizeof(v) + 8 * tail_words(c) ||
	    table >= SB_NTABLES)
		return 0;
	memcpy(&v, val, sizeof(v));
	if (v.magic != wl_magic(SB_MAGIC + table, key) || v.pad)
		return 0;
	for (i = 0; i < tail_words(c); i++) {
		memcpy(&w, (const char *)val + sizeof(v) + 8 * i, sizeof(w));
		if (w != tail_word(key, v.cents, i))
			return 0;
	}
	*cents = v.cents;
	return 1;
}

int sb_verify(const struct sb_cfg *c, uint32_t table, uint64_t key,
	      const void *val, size_t len, int64_t *money)
{
	int64_t cents = 0;

	if (!sb_value_ok(c, table, key, val, len, &cents))
		return 0;
	*money += table == SB_LEDGER ? -cents : cents;
	return 1;
}

/* ---- tables and the load ---- */

void sb_tables(const struct sb_cfg *c, struct smart_dtx_table *t,
	       uint64_t *records)
{
	int i;

	for (i = 0; i < SB_LEDGER; i++) {
		t[i] = (struct smart_dtx_table){
			(uint32_t)i, c->value_size,
			(uint32_t)((c->accounts + 3) / 4), -1
		};
		records[i] = c->accounts;
	}
	/* rows for 8192 transaction objects' ledgers (loaded: none) */
	t[SB_LEDGER] = (struct smart_dtx_table){ SB_LEDGER, c->value_size, 2048,
						 -1 };
	records[SB_LEDGER] = 0;
}

static void rec_make(const struct sb_cfg *c, struct wl_rec *r, uint32_t tb,
		     uint64_t a, int64_t cents)
{
	r->table = tb;
	r->key = a;
	r->len = c->value_size;
	val_make(c, r->val, tb, a, cents);
}

int sb_unit(const struct sb_cfg *c, uint64_t u, struct wl_rec *out,
	    int64_t *money)
{
	uint64_t k[2] = { c->seed, u };
	uint64_t span = (uint64_t)(c->bal_max - c->bal_min) + 1;
	smart_rng_t r;
	int64_t s, ck;

	smart_rng_seed(&r, smart_hash64(k, sizeof(k), 0x5b));
	s = c->bal_min + (int64_t)smart_rng_below(&r, span);
	ck = c->bal_min + (int64_t)smart_rng_below(&r, span);
	rec_make(c, &out[0], SB_SAVINGS, u, s);
	rec_make(c, &out[1], SB_CHECKING, u, ck);
	*money += s + ck;
	return 2;
}

int sb_prepare(struct sb_cfg *c)
{
	if (c->value_size < sizeof(struct sb_val) ||
	    c->value_size > WL_VAL_MAX || c->value_size % 8)
		return SMART_EINVAL;
	if (c->accounts < 2)
		return SMART_ENOENT; /* an opened database without them */
	return c->zipf > 0 ? smart_zipf_init(&c->z, c->accounts, c->zipf) : 0;
}

/* ---- inputs ---- */

/* FORD's pick: the hot set with hot_pct%, else any account; with zipf a
 * Zipf rank scrambled over the accounts (as YCSB), so that the hot
 * accounts are not 0, 1, ... */
static uint64_t acct_pick(const struct sb_cfg *c, smart_rng_t *r)
{
	uint64_t z;

	if (c->zipf > 0) {
		z = smart_zipf_next(&c->z, r);
		return smart_hash64(&z, sizeof(z), c->seed) % c->accounts;
	}
	if ((int)smart_rng_below(r, 100) < c->hot_pct)
		return smart_rng_below(r, c->hot);
	return smart_rng_below(r, c->accounts);
}

void sb_gen(const struct sb_cfg *c, smart_rng_t *r, int type,
	    struct wl_params *p)
{
	memset(p, 0, sizeof(*p));
	p->v[SB_A] = acct_pick(c, r);
	if (type != SB_AMALGAMATE && type != SB_PAYMENT)
		return;
	do
		p->v[SB_B] = acct_pick(c, r);
	while (p->v[SB_B] == p->v[SB_A]);
}

/* ---- transactions ---- */

/* The balance an executed item read: 0 (and a bad value) when the
 * account is missing or its record wrong. */
static int bal(struct wl_txn *t, const struct sb_cfg *c, int item, int slot,
	       uint64_t a, int64_t *cents)
{
	int f = wl_found(t, item, c->value_size);
	uint32_t tb = t->item[item].table;

	if (f == 0)
		wl_bad(t, tb, a); /* every account exists */
	if (f <= 0)
		return 0;
	if (!sb_value_ok(c, tb, a, t->buf[slot], c->value_size, cents)) {
		wl_bad(t, tb, a);
		return 0;
	}
	return 1;
}

/* A new balance for an item read for update (a failed write is kept,
 * wl_q, for the commit to return). */
static void set(struct wl_txn *t, const struct sb_cfg *c, int item, int slot,
		uint64_t a, int64_t cents)
{
	uint8_t v[WL_VAL_MAX];

	val_make(c, v, t->item[item].table, a, cents);
	wl_write(t, item, slot, v, c->value_size);
}

/* a's savings and checking go to b's checking. */
static int amalgamate(struct wl_txn *t, const struct sb_cfg *c,
		      const struct wl_params *p, struct wl_outcome *o)
{
	uint64_t a = p->v[SB_A], b = p->v[SB_B];
	int64_t sa = 0, ca = 0, cb = 0;
	int is, ic, ib, rc = wl_begin(t);

	if (rc)
		return rc;
	is = wl_read(t, 1, SB_SAVINGS, a, 0);
	ic = wl_read(t, 1, SB_CHECKING, a, 1);
	ib = wl_read(t, 1, SB_CHECKING, b, 2);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (bal(t, c, is, 0, a, &sa) & bal(t, c, ic, 1, a, &ca) &
	    bal(t, c, ib, 2, b, &cb)) {
		set(t, c, is, 0, a, 0);
		set(t, c, ic, 1, a, 0);
		set(t, c, ib, 2, b, cb + sa + ca);
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

/* A Balance item after its commit returned rc: committed, it must be
 * there and whole (bal); aborted, a value found must still be whole (a
 * torn one would fail validation but for luck). */
static int balance_item(struct wl_txn *t, const struct sb_cfg *c, int rc,
			int item, int slot, uint64_t a)
{
	int64_t cents;
	size_t len = 0;

	if (!rc)
		return bal(t, c, item, slot, a, &cents);
	if (item >= 0 && smart_dtx_status(t->x, item, &len) == 0 &&
	    !sb_value_ok(c, t->item[item].table, a, t->buf[slot], len, &cents))
		wl_bad(t, t->item[item].table, a);
	return 0;
}

/* Read only: one commit (the library runs the reads and validates), or
 * with a split, the savings in an exec of its own and t->gap before the
 * checking is read. */
static int balance(struct wl_txn *t, const struct sb_cfg *c,
		   const struct wl_params *p, struct wl_outcome *o)
{
	uint64_t a = p->v[SB_A];
	int is, ic, rc = wl_begin(t);

	if (rc)
		return rc;
	is = wl_read(t, 0, SB_SAVINGS, a, 0);
	if (p->v[SB_SPLIT] && t->gap) {
		rc = wl_exec(t);
		if (rc)
			return rc;
		t->gap(t, (unsigned)p->v[SB_SPLIT]);
	}
	ic = wl_read(t, 0, SB_CHECKING, a, 1);
	rc = wl_commit(t);
	if (!(balance_item(t, c, rc, is, 0, a) &
	      balance_item(t, c, rc, ic, 1, a)) &&
	    !rc)
		o->failed = 1;
	return rc;
}

/* ledger: this transaction object's row exists (a transaction of its
 * own the first time: an insert of 0, retried on conflicts). */
static int ledger_ready(struct wl_txn *t, const struct sb_cfg *c)
{
	uint8_t v[WL_VAL_MAX];
	int rc = SMART_EABORT, n;

	if (!c->ledger || t->ledger_in)
		return 0;
	val_make(c, v, SB_LEDGER, t->ledger_key, 0);
	for (n = 0; rc == SMART_EABORT && n < 1000; n++) {
		rc = smart_dtx_begin(t->x);
		if (!rc && smart_dtx_insert(t->x, SB_LEDGER, t->ledger_key, v,
					    c->value_size) < 0)
			rc = SMART_EINVAL;
		rc = rc ? rc : smart_dtx_commit(t->x, t->w);
	}
	t->ledger_in = !rc;
	return rc;
}

/* ledger: queue the row for update (item -1 without). */
static int ledger_q(struct wl_txn *t, const struct sb_cfg *c)
{
	return c->ledger ? wl_read(t, 1, SB_LEDGER, t->ledger_key, 3) : -1;
}

/* ledger: add amount to the row queued as item il. */
static void ledger_add(struct wl_txn *t, const struct sb_cfg *c, int il,
		       int64_t amount)
{
	int64_t v = 0;

	if (il >= 0 && bal(t, c, il, 3, t->ledger_key, &v))
		set(t, c, il, 3, t->ledger_key, v + amount);
}

/* One balance of a, read for update, plus amount (DepositChecking,
 * TransactSaving). */
static int add_to(struct wl_txn *t, const struct sb_cfg *c, uint32_t tb,
		  uint64_t a, int64_t amount, struct wl_outcome *o)
{
	int64_t v = 0;
	int it, il, rc = ledger_ready(t, c);

	rc = rc ? rc : wl_begin(t);
	if (rc)
		return rc;
	it = wl_read(t, 1, tb, a, 0);
	il = ledger_q(t, c);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (bal(t, c, it, 0, a, &v)) {
		set(t, c, it, 0, a, v + amount);
		ledger_add(t, c, il, amount);
		o->delta = il >= 0 ? 0 : amount;
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

/* AMT_PAYMENT from a's checking to b's, if a has it. */
static int send_payment(struct wl_txn *t, const struct sb_cfg *c,
			const struct wl_params *p, struct wl_outcome *o)
{
	uint64_t a = p->v[SB_A], b = p->v[SB_B];
	int64_t ca = 0, cb = 0;
	int ia, ib, rc = wl_begin(t);

	if (rc)
		return rc;
	ia = wl_read(t, 1, SB_CHECKING, a, 0);
	ib = wl_read(t, 1, SB_CHECKING, b, 1);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if ((bal(t, c, ia, 0, a, &ca) & bal(t, c, ib, 1, b, &cb)) &&
	    ca >= AMT_PAYMENT) {
		set(t, c, ia, 0, a, ca - AMT_PAYMENT);
		set(t, c, ib, 1, b, cb + AMT_PAYMENT);
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

/* A check of AMT_CHECK on a's checking; 1 cent more when a's savings and
 * checking together hold less. */
static int write_check(struct wl_txn *t, const struct sb_cfg *c,
		       const struct wl_params *p, struct wl_outcome *o)
{
	uint64_t a = p->v[SB_A];
	int64_t s = 0, ck = 0, amount;
	int is, ic, il, rc = ledger_ready(t, c);

	rc = rc ? rc : wl_begin(t);
	if (rc)
		return rc;
	is = wl_read(t, 0, SB_SAVINGS, a, 0);
	ic = wl_read(t, 1, SB_CHECKING, a, 1);
	il = ledger_q(t, c);
	rc = wl_exec(t);
	if (rc)
		return rc;
	if (bal(t, c, is, 0, a, &s) & bal(t, c, ic, 1, a, &ck)) {
		amount = s + ck < AMT_CHECK ? AMT_CHECK + 1 : AMT_CHECK;
		set(t, c, ic, 1, a, ck - amount);
		ledger_add(t, c, il, -amount);
		o->delta = il >= 0 ? 0 : -amount;
	} else {
		o->failed = 1;
	}
	return wl_commit(t);
}

int sb_attempt(struct wl_txn *t, const struct sb_cfg *c, int type,
	       const struct wl_params *p, struct wl_outcome *o)
{
	switch (type) {
	case SB_AMALGAMATE:
		return amalgamate(t, c, p, o);
	case SB_BALANCE:
		return balance(t, c, p, o);
	case SB_DEPOSIT:
		return add_to(t, c, SB_CHECKING, p->v[SB_A], AMT_DEPOSIT, o);
	case SB_PAYMENT:
		return send_payment(t, c, p, o);
	case SB_SAVING:
		return add_to(t, c, SB_SAVINGS, p->v[SB_A], AMT_SAVING, o);
	default:
		return write_check(t, c, p, o);
	}
}
