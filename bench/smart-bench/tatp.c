/*
 * `smart-bench tatp`: TATP with FORD's tables, keys and mix on Smart-DTX
 * (bench/workloads/tatp.h: the tables, the population, the mix and the
 * transactions, shared with test_dtx); here the flags, the glue to the
 * driver (dtx_bench.c) and the report's lines.  CALL_FORWARDING is sized
 * for half of its 12 keys per subscriber, where inserts and deletes (2%
 * each) take it, so a long run does not fill its buckets.
 *
 * Invariant: the workload's seed is the run's (--seed), set before the
 * load and the draws use it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dtx_bench.h"

/* ---- glue ---- */

static void tatp_size(struct dtx_bench *b, struct smart_dtx_table *t,
		      uint64_t *records)
{
	b->tp.seed = b->run->com.seed;
	tp_tables(&b->tp, t, records);
}

static uint64_t tatp_units(const struct dtx_bench *b)
{
	return b->tp.subscribers;
}

static int tatp_unit(const struct dtx_bench *b, uint64_t u, struct wl_rec *out,
		     int64_t *money)
{
	(void)money;
	return tp_unit(&b->tp, u, out);
}

static void tatp_adopt(struct dtx_bench *b, const struct dtx_census *c)
{
	b->tp.subscribers = c->records[TP_SUB];
}

static int tatp_prepare(struct dtx_bench *b)
{
	b->tp.seed = b->run->com.seed;
	return tp_prepare(&b->tp);
}

static void tatp_gen(struct dtx_task *t, int type, struct wl_params *p)
{
	tp_gen(&t->b->tp, &t->rng, type, p);
}

static int tatp_attempt(struct dtx_task *t, int type, const struct wl_params *p,
			struct wl_outcome *o)
{
	return tp_attempt(&t->wt, type, p, o);
}

static int tatp_verify(const struct dtx_bench *b, uint32_t table, uint64_t key,
		       const void *val, size_t len, int64_t *money)
{
	(void)b;
	(void)money;
	return tp_verify(table, key, val, len);
}

/* ---- the report ---- */

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
	.ntypes = TP_NTYPES,
	.types = tp_types,
	.ntables = TP_NTABLES,
	.tables = tp_table_names,
	.money = 0,
	.fixed = (1u << TP_CF) - 1, /* all but CALL_FORWARDING */
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
