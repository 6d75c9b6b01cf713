/*
 * smart-perf's output: the perftest-like table (a header, one row per
 * run), and the result as a record for --json (one object) and --csv
 * (one line per run).
 *
 * Invariants: the JSON keys and their order are smart-perf's documented
 * interface (README): new keys go at the end; the CSV columns are fixed
 * for every op, so that runs of different ops share one file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

/* perftest's names on a transport with RDMA (verbs), plain ones else */
static const char *const op_titles[][2] = {
	{ "Read", "RDMA_Read" },
	{ "Write", "RDMA_Write" },
	{ "Atomic CMP_AND_SWAP", "Atomic CMP_AND_SWAP" },
	{ "Atomic FETCH_AND_ADD", "Atomic FETCH_AND_ADD" },
	{ "CAS-increment (read + CAS loop)",
	  "CAS-increment (read + CAS loop)" },
};

/* What moved the bytes, for the title: a run on shm has no RDMA. */
static const char *transport_words(const struct perf *p)
{
	const char *tp = smart_ctx_transport(p->env.ctx);

	if (p->cfg->raw)
		return "raw CPU loads and stores, no framework";
	if (!strcmp(tp, "verbs"))
		return "over verbs (RDMA)";
	if (p->env.nic_model[0])
		return "over shm with a modelled RNIC, no RDMA";
	return "over shm (shared memory, no RDMA)";
}

/* Digits of the widest --size of the run, for the #bytes column. */
static int bytes_width(const struct perf_cfg *c)
{
	char b[24];
	int n = snprintf(b, sizeof(b), "%" PRIu64, c->size);

	return n < 7 ? 7 : n;
}

static const struct kit_col perf_csv[] = {
	{ "op", "op", NULL },
	{ "size", "size", NULL },
	{ "threads", "threads", NULL },
	{ "depth", "depth", NULL },
	{ "raw", "raw", NULL },
	{ "batch", "batch", NULL },
	{ "dynamic_ms", "dynamic_ms", NULL },
	{ "techniques", "techniques", NULL },
	{ "qp_mode", "qp_mode_effective", NULL },
	{ "transport", "transport", NULL },
	{ "nic_model", "nic_model", "off" },
	{ "keys", "keys", NULL },
	{ "zipf", "zipf", NULL },
	{ "seconds", "seconds", NULL },
	{ "mops", "mops", NULL },
	{ "mb_per_s", "mb_per_s", NULL },
	{ "p50_us", "p50_us", NULL },
	{ "p99_us", "p99_us", NULL },
	{ "p999_us", "p999_us", NULL },
	{ "ratio_vs_raw", "ratio_vs_raw", NULL },
	{ "retries_per_op", "retries_per_op", NULL },
	{ "credit_cap", "credit_cap", NULL },
	{ "db_contended", "db_contended", NULL },
	{ "mib_per_s", "mib_per_s", NULL },
	{ NULL, NULL, NULL },
};

void perf_print_header(const struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	int verbs = !strcmp(smart_ctx_transport(p->env.ctx), "verbs");

	kit_rule();
	printf("                    %s BW Test %s (smart-perf %s)\n",
	       op_titles[c->op][verbs], transport_words(p),
	       SMART_VERSION_STRING);
	kit_head_env(&c->com, &p->env, NULL);
	kit_head("Threads x depth", "%d x %d (one op in flight per coroutine)",
		 c->com.threads, c->depth);
	kit_head("Duration",
		 "%.1f s per run, random %u-byte-aligned offsets "
		 "over %.0f MiB",
		 c->com.seconds, (unsigned)p->stride,
		 (double)p->span_len / (1024.0 * 1024.0));
	kit_head("Units", "MB = 2^20 bytes (perftest's MB/sec); latency "
			  "quantiles to 3 digits");
	kit_rule();
	printf(" %-6s %-*s %-13s %-18s %-14s %-15s %s\n", "mode",
	       bytes_width(c), "#bytes", "#iterations", "BW average[MB/sec]",
	       "MsgRate[Mpps]", "t_typical[usec]", "99% percentile[usec]");
}

void perf_print_row(const struct perf *p, const struct perf_result *r, int raw)
{
	char m[32], t50[32], t99[32];

	printf(" %-6s %-*" PRIu64 " %-13" PRIu64 " %-18.2f %-14s %-15s %s\n",
	       raw ? "raw" : "smart", bytes_width(p->cfg), r->size, r->ops,
	       r->mib_per_s, kit_fmt_sig(r->mops, m, sizeof(m)),
	       kit_fmt_sig(r->lat.p50_us, t50, sizeof(t50)),
	       kit_fmt_sig(r->lat.p99_us, t99, sizeof(t99)));
	if (!raw)
		kit_library_line(&r->win.st);
}

void perf_print_lat_header(const struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	int verbs = !strcmp(smart_ctx_transport(p->env.ctx), "verbs");

	kit_rule();
	printf("                    %s Latency Test %s (smart-perf %s)\n",
	       op_titles[c->op][verbs], transport_words(p),
	       SMART_VERSION_STRING);
	kit_head_env(&c->com, &p->env, NULL);
	kit_head("Duration",
		 "%.1f s per size, one op in flight, every op "
		 "timed",
		 c->com.seconds);
	kit_head("Units", "usec; 3 significant digits (a histogram bucket "
			  "is up to 3.1%% wide)");
	kit_rule();
	printf(" %-*s %-13s %-12s %-12s %-15s %-12s %-21s %s\n", bytes_width(c),
	       "#bytes", "#iterations", "t_min[usec]", "t_max[usec]",
	       "t_typical[usec]", "t_avg[usec]", "99% percentile[usec]",
	       "99.9% percentile[usec]");
}

void perf_print_lat_row(const struct perf *p, const struct perf_result *r)
{
	const struct kit_lat *l = &r->lat;
	char b[6][32];

	printf(" %-*" PRIu64 " %-13" PRIu64 " %-12s %-12s %-15s %-12s %-21s "
	       "%s\n",
	       bytes_width(p->cfg), r->size, r->ops,
	       kit_fmt_sig(l->min_us, b[0], sizeof(b[0])),
	       kit_fmt_sig(l->max_us, b[1], sizeof(b[1])),
	       kit_fmt_sig(l->p50_us, b[2], sizeof(b[2])),
	       kit_fmt_sig(l->avg_us, b[3], sizeof(b[3])),
	       kit_fmt_sig(l->p99_us, b[4], sizeof(b[4])),
	       kit_fmt_sig(l->p999_us, b[5], sizeof(b[5])));
}

/* cas-incr's conflict-avoidance fields. */
static void rec_cas_incr(struct kit_rec *rec, const struct perf_cfg *c,
			 const smart_stats_t *st)
{
	kit_rec_num(rec, "keys", "%" PRIu64, c->keys);
	kit_rec_num(rec, "zipf", "%.3f", c->zipf);
	kit_rec_num(rec, "retries_per_op", "%.4f", st->retries_per_op);
	kit_rec_num(rec, "guarded_ops", "%" PRIu64,
		    st->c[SMART_STAT_GUARDED_OPS]);
	kit_rec_num(rec, "backoff_cmax", "%" PRIu64, st->backoff_cmax);
	kit_rec_num(rec, "backoff_nmax", "%d", st->backoff_nmax);
	kit_rec_num(rec, "admission_waits", "%" PRIu64,
		    st->c[SMART_STAT_ADMISSION_WAITS]);
}

static void perf_record(const struct perf *p, const struct perf_result *r,
			int raw, double ratio, struct kit_rec *rec)
{
	const struct perf_cfg *c = p->cfg;
	const smart_stats_t *st = &r->win.st;
	smart_ctx_t *ctx = p->env.ctx;

	kit_rec_init(rec);
	kit_rec_str(rec, "op", perf_op_names[c->op]);
	kit_rec_num(rec, "size", "%" PRIu64, r->size);
	kit_rec_num(rec, "threads", "%d", c->com.threads);
	kit_rec_num(rec, "depth", "%d", c->depth);
	kit_rec_num(rec, "seconds", "%.3f", r->win.secs);
	kit_rec_str(rec, "transport", smart_ctx_transport(ctx));
	kit_rec_str(rec, "qp_mode", c->com.qp_mode ? c->com.qp_mode : "auto");
	kit_rec_str(rec, "qp_mode_effective", smart_ctx_qp_mode(ctx));
	kit_rec_num(rec, "raw", "%s", raw ? "true" : "false");
	kit_rec_num(rec, "ops", "%" PRIu64, r->ops);
	kit_rec_num(rec, "mops", "%.4f", r->mops);
	kit_rec_num(rec, "mb_per_s", "%.3f", r->mb_per_s); /* 10^6 B/s */
	kit_rec_lat(rec, &r->lat);
	if (ratio >= 0)
		kit_rec_num(rec, "ratio_vs_raw", "%.4f", ratio);
	kit_rec_str(rec, "techniques", st->techniques);
	kit_rec_library(rec, st);
	kit_rec_num(rec, "db_rings", "%" PRIu64, st->db_rings);
	kit_rec_num(rec, "wqe_misses", "%" PRIu64, st->wqe_misses);
	kit_rec_str(rec, "nic_model", p->env.nic_model);
	kit_rec_str(rec, "shm_adversarial", p->env.adversarial);
	kit_rec_num(rec, "batch", "%d", c->batch);
	kit_rec_num(rec, "dynamic_ms", "%d", c->dynamic_ms);
	if (c->op == OP_CAS_INCR)
		rec_cas_incr(rec, c, st);
	/* issue 29's keys, after every older one (the order is the
	 * interface): perftest's unit, 2^20 bytes per second */
	kit_rec_num(rec, "mib_per_s", "%.3f", r->mib_per_s);
	kit_rec_num(rec, "sweep", "%s", c->sweep ? "true" : "false");
	kit_rec_num(rec, "lat", "%s", c->lat ? "true" : "false");
	kit_rec_num(rec, "min_us", "%.4g", r->lat.min_us);
	kit_rec_num(rec, "avg_us", "%.4g", r->lat.avg_us);
	kit_rec_num(rec, "max_us", "%.4g", r->lat.max_us);
	kit_rec_provenance(rec, &c->com);
}

int perf_report(const struct perf *p, const struct perf_result *r, int raw,
		double ratio)
{
	const struct perf_cfg *c = p->cfg;
	struct kit_rec rec;

	perf_record(p, r, raw, ratio, &rec);
	if (c->com.json)
		kit_rec_json(&rec, stdout);
	return c->com.csv ?
		       kit_rec_csv(&rec, perf_csv, c->com.csv, c->com.tool) :
		       0;
}
