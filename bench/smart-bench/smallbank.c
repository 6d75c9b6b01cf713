/*
 * `smart-bench smallbank`: SmallBank (Alomari et al., ICDE'08) with
 * FORD's parameters and mix on Smart-DTX.  Tables: savings (id 0) and
 * checking (id 1), one record per account in each, keyed by the account
 * number; 100 000 accounts of which 4 000 hot, 90% of picks among the hot
 * ones (or scrambled Zipf picks over every account, --zipf).
 *
 * The mix (FORD's): Amalgamate 15, Balance 15, DepositChecking 15,
 * SendPayment 25, TransactSaving 15, WriteCheck 15, with FORD's amounts
 * in integer cents (1.30, 5.00, 20.20, 5.00).  SendPayment with too
 * little money in the payer's checking commits without writes (the
 * "failed" outcome) rather than aborting: the standard leaves it open,
 * and a commit keeps a transaction's every path a commit.  WriteCheck
 * reads the savings (read only), takes the amount from the checking,
 * plus a penalty of 1 cent when both together hold less than the amount
 * (overdrafts are allowed, as in the standard).
 *
 * Invariants: a value is {magic, pad, balance in cents}, 16 bytes, the
 * magic derived from its table and account (dtx_magic), checked on every
 * read; the money of a committed transaction is its delta (Amalgamate
 * and SendPayment move money: delta 0), so the sum of every balance is
 * the load's plus the deltas, exactly (--check).  The two accounts of
 * Amalgamate and SendPayment differ.
 *
 * --ledger (for crash experiments, bench/dtx-crash.sh): a third table,
 * one row per task (inserted by its first deposit), to which every
 * deposit and check adds its delta in the same transaction.  The money
 * counted is the balances minus the ledger, so it stays what was loaded
 * whoever dies, and a client that finds it changed finds a transaction
 * half committed.  Without --ledger the table stays empty.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtx_bench.h"

enum { SAVINGS, CHECKING, LEDGER, NTABLES };

enum { AMALGAMATE, BALANCE, DEPOSIT, PAYMENT, SAVING, CHECK, NTYPES };

#define SB_MAGIC	0x53420000u	/* "SB" + the table */
#define BAL_MIN		1000000		/* FORD's 10 000..50 000, in cents */
#define BAL_MAX		5000000
#define AMT_DEPOSIT	130		/* DepositChecking: 1.30 */
#define AMT_PAYMENT	500		/* SendPayment: 5.00 */
#define AMT_SAVING	2020		/* TransactSaving: 20.20 */
#define AMT_CHECK	500		/* WriteCheck: 5.00 */

struct sb_val {
	uint32_t magic, pad;
	int64_t cents;
};
_Static_assert(sizeof(struct sb_val) == 16, "SmallBank values are 16 B");

static const struct dtx_type sb_types[NTYPES] = {
	[AMALGAMATE] = { "amalgamate", "Amalgamate", 15 },
	[BALANCE] = { "balance", "Balance", 15 },
	[DEPOSIT] = { "deposit_checking", "DepositChecking", 15 },
	[PAYMENT] = { "send_payment", "SendPayment", 25 },
	[SAVING] = { "transact_saving", "TransactSaving", 15 },
	[CHECK] = { "write_check", "WriteCheck", 15 },
};

static const char *const sb_tables[NTABLES] = { "savings", "checking",
						  "ledger" };

static uint32_t magic(uint32_t table, uint64_t acct)
{
	return dtx_magic(SB_MAGIC + table, acct);
}

/* ---- tables and the load ---- */

static void sb_size(struct dtx_bench *b, struct smart_dtx_table *t,
		    uint64_t *records)
{
	int i;

	for (i = 0; i < LEDGER; i++) {
		t[i] = (struct smart_dtx_table){ (uint32_t)i,
			sizeof(struct sb_val),
			(uint32_t)((b->sb.accounts + 3) / 4), -1 };
		records[i] = b->sb.accounts;
	}
	/* rows for 8192 tasks' ledgers (loaded: none) */
	t[LEDGER] = (struct smart_dtx_table){ LEDGER, sizeof(struct sb_val),
					      2048, -1 };
	records[LEDGER] = 0;
}

static uint64_t sb_units(const struct dtx_bench *b)
{
	return b->sb.accounts;
}

static void rec_make(struct dtx_rec *r, uint32_t table, uint64_t acct,
		     int64_t cents)
{
	struct sb_val v = { magic(table, acct), 0, cents };

	r->table = table;
	r->key = acct;
	r->len = sizeof(v);
	memcpy(r->val, &v, sizeof(v));
}

/* Account u: its two balances, drawn from its own stream (the same
 * whichever thread loads it). */
static int sb_unit(const struct dtx_bench *b, uint64_t u, struct dtx_rec *out,
		   int64_t *money)
{
	uint64_t k[2] = { b->run->com.seed, u };
	smart_rng_t r;
	int64_t s, c;

	smart_rng_seed(&r, smart_hash64(k, sizeof(k), 0x5b));
	s = BAL_MIN + (int64_t)smart_rng_below(&r, BAL_MAX - BAL_MIN + 1);
	c = BAL_MIN + (int64_t)smart_rng_below(&r, BAL_MAX - BAL_MIN + 1);
	rec_make(&out[0], SAVINGS, u, s);
	rec_make(&out[1], CHECKING, u, c);
	*money += s + c;
	return 2;
}

static void sb_adopt(struct dtx_bench *b, const struct dtx_census *c)
{
	b->sb.accounts = c->records[SAVINGS];
	if (b->sb.hot > b->sb.accounts)
		b->sb.hot = b->sb.accounts;
}

static int sb_prepare(struct dtx_bench *b)
{
	if (b->sb.accounts < 2)
		return SMART_ENOENT;	/* an opened database without them */
	return b->sb.zipf > 0 ? smart_zipf_init(&b->sb.z, b->sb.accounts,
						b->sb.zipf) : 0;
}

/* ---- inputs ---- */

/* FORD's pick: the hot set with hot-pct%, else any account; with --zipf
 * a Zipf rank scrambled over the accounts (as YCSB), so that the hot
 * accounts are not 0, 1, ... */
static uint64_t acct_pick(const struct dtx_bench *b, smart_rng_t *r)
{
	uint64_t z;

	if (b->sb.zipf > 0) {
		z = smart_zipf_next(&b->sb.z, r);
		return smart_hash64(&z, sizeof(z), b->run->com.seed) %
		       b->sb.accounts;
	}
	if ((int)smart_rng_below(r, 100) < b->sb.hot_pct)
		return smart_rng_below(r, b->sb.hot);
	return smart_rng_below(r, b->sb.accounts);
}

static void sb_gen(struct dtx_task *t, int type, struct dtx_params *p)
{
	const struct dtx_bench *b = t->b;

	p->v[0] = acct_pick(b, &t->rng);
	if (type != AMALGAMATE && type != PAYMENT)
		return;
	do
		p->v[1] = acct_pick(b, &t->rng);
	while (p->v[1] == p->v[0]);
}

/* ---- transactions ---- */

/* Queue account a of table tb, for update or read only, into slot. */
static int q(struct dtx_task *t, int upd, uint32_t tb, uint64_t a, int slot)
{
	void *buf = t->buf[slot];

	return dtx_q(t, upd ? smart_dtx_read_for_update(t->x, tb, a, buf,
							DTX_VAL_MAX) :
			 smart_dtx_read(t->x, tb, a, buf, DTX_VAL_MAX));
}

/* The balance an executed item read: 0 (and a validation failure) when
 * the account is missing or its record wrong.  Callers combine them with
 * `&`, not `&&`, so that every item is checked. */
static int bal(struct dtx_task *t, int item, int slot, uint32_t tb,
	       uint64_t a, int64_t *cents)
{
	struct sb_val v;
	int f = dtx_found(t, item, slot, sizeof(v), magic(tb, a));

	if (f == 0)
		dtx_vfail(t);	/* every account exists */
	if (f <= 0)
		return 0;
	memcpy(&v, t->buf[slot], sizeof(v));
	*cents = v.cents;
	return 1;
}

/* A new balance for an item read for update (a failed write is kept,
 * dtx_q, for the commit to return). */
static void set(struct dtx_task *t, int item, int slot, uint32_t tb,
		uint64_t a, int64_t cents)
{
	struct sb_val v = { magic(tb, a), 0, cents };

	memcpy(t->wbuf[slot], &v, sizeof(v));
	dtx_q(t, smart_dtx_write(t->x, item, t->wbuf[slot], sizeof(v)));
}

/* a's savings and checking go to b's checking. */
static int amalgamate(struct dtx_task *t, const struct dtx_params *p,
		      struct dtx_outcome *o)
{
	uint64_t a = p->v[0], b = p->v[1];
	int64_t sa = 0, ca = 0, cb = 0;
	int is, ic, ib, rc = dtx_begin(t);

	if (rc)
		return rc;
	is = q(t, 1, SAVINGS, a, 0);
	ic = q(t, 1, CHECKING, a, 1);
	ib = q(t, 1, CHECKING, b, 2);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (bal(t, is, 0, SAVINGS, a, &sa) & bal(t, ic, 1, CHECKING, a, &ca) &
	    bal(t, ib, 2, CHECKING, b, &cb)) {
		set(t, is, 0, SAVINGS, a, 0);
		set(t, ic, 1, CHECKING, a, 0);
		set(t, ib, 2, CHECKING, b, cb + sa + ca);
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

/* Read only: one commit (the library runs the reads and validates). */
static int balance(struct dtx_task *t, const struct dtx_params *p,
		   struct dtx_outcome *o)
{
	uint64_t a = p->v[0];
	int64_t s = 0, c = 0;
	int is, ic, rc = dtx_begin(t);

	if (rc)
		return rc;
	is = q(t, 0, SAVINGS, a, 0);
	ic = q(t, 0, CHECKING, a, 1);
	rc = dtx_commit(t);
	if (!rc && !(bal(t, is, 0, SAVINGS, a, &s) &
		     bal(t, ic, 1, CHECKING, a, &c)))
		o->failed = 1;
	return rc;
}

/* --ledger: this task's ledger row exists (a transaction of its own the
 * first time: an insert of 0, retried on conflicts). */
static int ledger_ready(struct dtx_task *t)
{
	struct sb_val v;
	int rc = SMART_EABORT, n;

	if (!t->b->sb.ledger || t->ledger_in)
		return 0;
	t->ledger_key = smart_rng_next(&t->rng);
	v = (struct sb_val){ magic(LEDGER, t->ledger_key), 0, 0 };
	for (n = 0; rc == SMART_EABORT && n < 1000; n++) {
		rc = smart_dtx_begin(t->x);
		if (!rc && smart_dtx_insert(t->x, LEDGER, t->ledger_key, &v,
					    sizeof(v)) < 0)
			rc = SMART_EINVAL;
		rc = rc ? rc : smart_dtx_commit(t->x, t->w);
	}
	t->ledger_in = !rc;
	return rc;
}

/* --ledger: queue the task's row for update (item -1 without). */
static int ledger_q(struct dtx_task *t)
{
	return t->b->sb.ledger ? q(t, 1, LEDGER, t->ledger_key, 3) : -1;
}

/* --ledger: add amount to the row queued as item il. */
static void ledger_add(struct dtx_task *t, int il, int64_t amount)
{
	int64_t v = 0;

	if (il >= 0 && bal(t, il, 3, LEDGER, t->ledger_key, &v))
		set(t, il, 3, LEDGER, t->ledger_key, v + amount);
}

/* One balance of a, read for update, plus amount (DepositChecking,
 * TransactSaving). */
static int add_to(struct dtx_task *t, uint32_t tb, uint64_t a,
		  int64_t amount, struct dtx_outcome *o)
{
	int64_t v = 0;
	int it, il, rc = ledger_ready(t);

	rc = rc ? rc : dtx_begin(t);
	if (rc)
		return rc;
	it = q(t, 1, tb, a, 0);
	il = ledger_q(t);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (bal(t, it, 0, tb, a, &v)) {
		set(t, it, 0, tb, a, v + amount);
		ledger_add(t, il, amount);
		o->delta = il >= 0 ? 0 : amount;
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

/* AMT_PAYMENT from a's checking to b's, if a has it. */
static int send_payment(struct dtx_task *t, const struct dtx_params *p,
			struct dtx_outcome *o)
{
	uint64_t a = p->v[0], b = p->v[1];
	int64_t ca = 0, cb = 0;
	int ia, ib, rc = dtx_begin(t);

	if (rc)
		return rc;
	ia = q(t, 1, CHECKING, a, 0);
	ib = q(t, 1, CHECKING, b, 1);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if ((bal(t, ia, 0, CHECKING, a, &ca) &
	     bal(t, ib, 1, CHECKING, b, &cb)) && ca >= AMT_PAYMENT) {
		set(t, ia, 0, CHECKING, a, ca - AMT_PAYMENT);
		set(t, ib, 1, CHECKING, b, cb + AMT_PAYMENT);
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

/* A check of AMT_CHECK on a's checking; 1 cent more when a's savings and
 * checking together hold less. */
static int write_check(struct dtx_task *t, const struct dtx_params *p,
		       struct dtx_outcome *o)
{
	uint64_t a = p->v[0];
	int64_t s = 0, c = 0, amount;
	int is, ic, il, rc = ledger_ready(t);

	rc = rc ? rc : dtx_begin(t);
	if (rc)
		return rc;
	is = q(t, 0, SAVINGS, a, 0);
	ic = q(t, 1, CHECKING, a, 1);
	il = ledger_q(t);
	rc = dtx_exec(t);
	if (rc)
		return rc;
	if (bal(t, is, 0, SAVINGS, a, &s) & bal(t, ic, 1, CHECKING, a, &c)) {
		amount = s + c < AMT_CHECK ? AMT_CHECK + 1 : AMT_CHECK;
		set(t, ic, 1, CHECKING, a, c - amount);
		ledger_add(t, il, -amount);
		o->delta = il >= 0 ? 0 : -amount;
	} else {
		o->failed = 1;
	}
	return dtx_commit(t);
}

static int sb_attempt(struct dtx_task *t, int type, const struct dtx_params *p,
		      struct dtx_outcome *o)
{
	switch (type) {
	case AMALGAMATE:
		return amalgamate(t, p, o);
	case BALANCE:
		return balance(t, p, o);
	case DEPOSIT:
		return add_to(t, CHECKING, p->v[0], AMT_DEPOSIT, o);
	case PAYMENT:
		return send_payment(t, p, o);
	case SAVING:
		return add_to(t, SAVINGS, p->v[0], AMT_SAVING, o);
	default:
		return write_check(t, p, o);
	}
}

/* ---- the check and the report ---- */

static int sb_verify(uint32_t table, uint64_t key, const void *val,
		     size_t len, int64_t *money)
{
	struct sb_val v;

	if (len != sizeof(v) || table >= NTABLES)
		return 0;
	memcpy(&v, val, sizeof(v));
	*money += table == LEDGER ? -v.cents : v.cents;
	return v.magic == magic(table, key);
}

static void sb_describe(const struct dtx_bench *b, char *buf, size_t n)
{
	if (b->sb.zipf > 0)
		snprintf(buf, n, "%" PRIu64 " accounts (savings, checking), "
			 "scrambled Zipf %.2f", b->sb.accounts, b->sb.zipf);
	else
		snprintf(buf, n, "%" PRIu64 " accounts (savings, checking), "
			 "%d%% of picks among %" PRIu64 " hot",
			 b->sb.accounts, b->sb.hot_pct, b->sb.hot);
}

static void sb_record(const struct dtx_bench *b, struct kit_rec *rec)
{
	kit_rec_num(rec, "accounts", "%" PRIu64, b->sb.accounts);
	kit_rec_num(rec, "hot", "%" PRIu64, b->sb.hot);
	kit_rec_num(rec, "hot_pct", "%d", b->sb.zipf > 0 ? 0 : b->sb.hot_pct);
	kit_rec_num(rec, "zipf", "%.3f", b->sb.zipf);
}

static const struct dtx_workload dtx_smallbank = {
	.name = "smallbank",
	.title = "SmallBank",
	.ntypes = NTYPES,
	.types = sb_types,
	.ntables = NTABLES,
	.tables = sb_tables,
	.money = 1,
	.fixed = (1u << LEDGER) - 1,	/* not the ledger: inserts */
	.size = sb_size,
	.units = sb_units,
	.unit = sb_unit,
	.adopt = sb_adopt,
	.prepare = sb_prepare,
	.gen = sb_gen,
	.attempt = sb_attempt,
	.verify = sb_verify,
	.describe = sb_describe,
	.record = sb_record,
};

/* ---- the module ---- */

#define B struct dtx_bench
static const struct kit_flag sb_flags[] = {
	KIT_U64("accounts", B, sb.accounts, 2, (double)(1u << 28), "N",
		"accounts [100000]"),
	KIT_U64("hot", B, sb.hot, 1, (double)(1u << 28), "N",
		"hot accounts (0..N-1) [4000]"),
	KIT_INT("hot-pct", B, sb.hot_pct, 0, 100, "P",
		"percent of picks among the hot accounts [90]"),
	KIT_DOUBLE("zipf", B, sb.zipf, 0, 1, "THETA",
		   "scrambled Zipf picks over every account instead of the "
		   "hot set; 0: the hot set [0]"),
	KIT_FLAG("ledger", B, sb.ledger,
		 "deposits and checks also add to a ledger row of the task in "
		 "the same transaction: the balances minus the ledger stay "
		 "what was loaded whoever dies (bench/dtx-crash.sh)"),
	DTX_COMMON_FLAGS(B),
	KIT_END,
};
#undef B

static void *sb_create(struct bench_run *r)
{
	return dtx_bench_create(r, &dtx_smallbank);
}

const struct bench_module bench_smallbank = {
	.name = "smallbank",
	.summary = "SmallBank on Smart-DTX (FORD's mix; --check: money adds "
		   "up)",
	.about = "  SmallBank on Smart-DTX, FORD's parameters: savings and "
		 "checking of --accounts\n  accounts; Amalgamate 15%, Balance "
		 "15%, DepositChecking 15%, SendPayment 25%,\n  TransactSaving "
		 "15%, WriteCheck 15%.  Without --connect, replicas + 1 "
		 "embedded blades\n  are started in this process; --connect "
		 "(repeatable) uses smartd blades.  The\n  database is loaded "
		 "and checked, then each coroutine runs one transaction at a\n"
		 "  time, an aborted one retried (counted) after Smart's "
		 "backoff.  --check: at the\n  end every balance sums to the "
		 "load's plus the committed transactions' deltas.\n"
		 "  SIGINT/SIGTERM end the measured window early; the run "
		 "still reports.\n",
	.flags = sb_flags,
	.csv = dtx_bench_csv,
	.create = sb_create,
	.check = dtx_bench_check,
	.setup = dtx_bench_setup,
	.run = dtx_bench_run,
	.report = dtx_bench_report,
	.destroy = dtx_bench_destroy,
};
