/*
 * SmallBank (Alomari et al., ICDE'08) with FORD's parameters and mix on
 * Smart-DTX, shared by `smart-bench smallbank` and test_dtx (workload.h).
 * Tables: savings (id 0) and checking (id 1), one record per account
 * 0..accounts-1 in each, keyed by the account number; a third, the ledger
 * (id 2), only with --ledger.  Picks: hot_pct% among the accounts
 * 0..hot-1, else any (FORD's: 4 000 of 100 000, 90%), or scrambled Zipf
 * over every account (zipf > 0).
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
 * A value is value_size bytes (16, FORD's, up to WL_VAL_MAX, a multiple
 * of 8): {magic, pad 0, balance in cents}, then words each derived from
 * the key, the balance and its place, so that a torn read (words of two
 * versions) shows; the magic derived from its table and account.  The
 * money of a committed transaction is its delta (Amalgamate and
 * SendPayment move money: delta 0), so the sum of every balance is the
 * load's plus the deltas, exactly.  The two accounts of Amalgamate and
 * SendPayment differ.
 *
 * ledger (for crash experiments, bench/dtx-crash.sh): one row per
 * transaction object (inserted by its first deposit, under
 * t->ledger_key, which the caller draws), to which every deposit and
 * check adds its delta in the same transaction.  The money counted is the
 * balances minus the ledger, so it stays what was loaded whoever dies.
 */
#ifndef SMART_WORKLOAD_SMALLBANK_H
#define SMART_WORKLOAD_SMALLBANK_H

#include "workload.h"

enum { SB_SAVINGS, SB_CHECKING, SB_LEDGER, SB_NTABLES };

enum {
	SB_AMALGAMATE,
	SB_BALANCE,
	SB_DEPOSIT,
	SB_PAYMENT,
	SB_SAVING,
	SB_CHECK,
	SB_NTYPES
};

/* The params: v[SB_A] and v[SB_B] the accounts; v[SB_SPLIT] (Balance,
 * when t->gap is set): its two reads in two execs with t->gap called
 * between them with this value; 0: one exec. */
enum { SB_A, SB_B, SB_SPLIT };

extern const struct wl_type sb_types[SB_NTYPES];
extern const char *const sb_table_names[SB_NTABLES];

struct sb_cfg {
	uint64_t accounts, hot;
	int hot_pct;
	double zipf;	/* > 0: Zipf picks instead of the hot set */
	smart_zipf_t z; /* sb_prepare's */
	uint64_t seed;	/* the load's balances, Zipf's scramble */
	uint32_t value_size;
	int64_t bal_min, bal_max; /* a loaded balance, cents */
	int ledger; /* deposits and checks also move a ledger row */
};

/* FORD's: 100 000 accounts, 4 000 hot, 90%, 16-byte values, balances
 * 10 000.00..50 000.00, no ledger. */
void sb_cfg_init(struct sb_cfg *c);

/* The tables (ids 0..SB_NTABLES-1, buckets for the accounts at 4 records
 * a bucket; the ledger's for 8192 rows) and the records the load inserts
 * into each. */
void sb_tables(const struct sb_cfg *c, struct smart_dtx_table *t,
	       uint64_t *records);

/* Account u's two records, drawn from its own stream of c->seed (the
 * same whichever thread loads it), their money added to *money; 2. */
int sb_unit(const struct sb_cfg *c, uint64_t u, struct wl_rec *out,
	    int64_t *money);

/* Before drawing: 0, SMART_EINVAL for a value_size outside 16..WL_VAL_MAX
 * or not a multiple of 8, SMART_ENOENT without two accounts, or Zipf's
 * error. */
int sb_prepare(struct sb_cfg *c);

/* The inputs of a transaction of type (SB_SPLIT left 0). */
void sb_gen(const struct sb_cfg *c, smart_rng_t *r, int type,
	    struct wl_params *p);

/* One attempt (workload.h): 0 committed (o filled), SMART_EABORT, or an
 * error. */
int sb_attempt(struct wl_txn *t, const struct sb_cfg *c, int type,
	       const struct wl_params *p, struct wl_outcome *o);

/* A value of table/key: 1 whole (*cents its balance), 0 wrong. */
int sb_value_ok(const struct sb_cfg *c, uint32_t table, uint64_t key,
		const void *val, size_t len, int64_t *cents);

/* The check of one record: 1 right, 0 wrong; its money added to *money
 * (the ledger's subtracted). */
int sb_verify(const struct sb_cfg *c, uint32_t table, uint64_t key,
	      const void *val, size_t len, int64_t *money);

#endif
