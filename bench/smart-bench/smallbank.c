/*
 * `smart-bench smallbank`: SmallBank with FORD's parameters and mix on
 * Smart-DTX (bench/workloads/smallbank.h: the tables, the load, the mix
 * and the transactions, shared with test_dtx); here the flags, the glue
 * to the driver (dtx_bench.c) and the report's lines.  100 000 accounts
 * of which 4 000 hot, 90% of picks among the hot ones (or scrambled Zipf
 * picks over every account, --zipf); --check: the sum of every balance
 * is the load's plus the committed transactions' deltas, exactly.
 *
 * --ledger (for crash experiments, bench/dtx-crash.sh): a third table,
 * one row per task (inserted by its first deposit), to which every
 * deposit and check adds its delta in the same transaction.  The money
 * counted is the balances minus the ledger, so it stays what was loaded
 * whoever dies, and a client that finds it changed finds a transaction
 * half committed.  Without --ledger the table stays empty.
 *
 * Invariant: the workload's seed is the run's (--seed), set before the
 * load and the draws use it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtx_bench.h"

/* ---- glue ---- */

static void sb_size(struct dtx_bench *b, struct smart_dtx_table *t,
		    uint64_t *records)
{
	b->sb.seed = b->run->com.seed;
	sb_tables(&b->sb, t, records);
}

static uint64_t sb_units(const struct dtx_bench *b)
{
	return b->sb.accounts;
}

static int sb_load_unit(const struct dtx_bench *b, uint64_t u,
			struct wl_rec *out, int64_t *money)
{
	return sb_unit(&b->sb, u, out, money);
}

static void sb_adopt(struct dtx_bench *b, const struct dtx_census *c)
{
	b->sb.accounts = c->records[SB_SAVINGS];
	if (b->sb.hot > b->sb.accounts)
		b->sb.hot = b->sb.accounts;
}

static int sb_ready(struct dtx_bench *b)
{
	b->sb.seed = b->run->com.seed;
	return sb_prepare(&b->sb);
}

static void sb_draw(struct dtx_task *t, int type, struct wl_params *p)
{
	sb_gen(&t->b->sb, &t->rng, type, p);
}

/* --ledger: the task's row key drawn by each deposit or check until the
 * row is in (the workload's first of them inserts it). */
static int sb_run(struct dtx_task *t, int type, const struct wl_params *p,
		  struct wl_outcome *o)
{
	if (t->b->sb.ledger && !t->wt.ledger_in &&
	    (type == SB_DEPOSIT || type == SB_SAVING || type == SB_CHECK))
		t->wt.ledger_key = smart_rng_next(&t->rng);
	return sb_attempt(&t->wt, &t->b->sb, type, p, o);
}

static int sb_check(const struct dtx_bench *b, uint32_t table, uint64_t key,
		    const void *val, size_t len, int64_t *money)
{
	return sb_verify(&b->sb, table, key, val, len, money);
}

/* ---- the report ---- */

static void sb_describe(const struct dtx_bench *b, char *buf, size_t n)
{
	if (b->sb.zipf > 0)
		snprintf(buf, n,
			 "%" PRIu64 " accounts (savings, checking), "
			 "scrambled Zipf %.2f",
			 b->sb.accounts, b->sb.zipf);
	else
		snprintf(buf, n,
			 "%" PRIu64 " accounts (savings, checking), "
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
	.ntypes = SB_NTYPES,
	.types = sb_types,
	.ntables = SB_NTABLES,
	.tables = sb_table_names,
	.money = 1,
	.fixed = (1u << SB_LEDGER) - 1, /* not the ledger: inserts */
	.size = sb_size,
	.units = sb_units,
	.unit = sb_load_unit,
	.adopt = sb_adopt,
	.prepare = sb_ready,
	.gen = sb_draw,
	.attempt = sb_run,
	.verify = sb_check,
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
