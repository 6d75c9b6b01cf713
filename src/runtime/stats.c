/*
 * Statistics: merge per-worker counters on demand and print them.
 *
 * Workers bump their own counters with relaxed stores (no lock prefix);
 * a snapshot reads them with relaxed loads under ctx->lock, which keeps
 * the worker list stable.  The sync latency histogram is kept in TSC
 * cycles and converted with the ctx's calibrated clock when printed.
 * Its buckets are read without synchronisation: a snapshot taken while
 * workers run may be off by the syncs in progress, never more.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/core.h"
#include "util/config.h"

_Static_assert(SMART_STAT__COUNT <= SMART_STAT_MAX,
	       "smart_stats_t.c[] has no room for a new counter");

static const char *const stat_names[SMART_STAT__COUNT] = {
	[SMART_STAT_READS] = "reads",
	[SMART_STAT_WRITES] = "writes",
	[SMART_STAT_CASES] = "cas",
	[SMART_STAT_FAAS] = "faa",
	[SMART_STAT_CAS_FAILS] = "cas_fails",
	[SMART_STAT_BYTES_READ] = "bytes_read",
	[SMART_STAT_BYTES_WRITTEN] = "bytes_written",
	[SMART_STAT_WRS_POSTED] = "wrs_posted",
	[SMART_STAT_DOORBELLS] = "doorbells",
	[SMART_STAT_COMPLETIONS] = "completions",
	[SMART_STAT_POLLS] = "polls",
	[SMART_STAT_SYNCS] = "syncs",
	[SMART_STAT_BOUNCES] = "bounces",
	[SMART_STAT_QP_FULL] = "qp_full",
	[SMART_STAT_CREDIT_WAITS] = "credit_waits",
	[SMART_STAT_RETRIES] = "retries",
	[SMART_STAT_BACKOFF_CYCLES] = "backoff_cycles",
	[SMART_STAT_ERRORS] = "errors",
	[SMART_STAT_RECONNECTS] = "reconnects",
	[SMART_STAT_TASK_SWITCHES] = "task_switches",
	[SMART_STAT_TASKS_SPAWNED] = "tasks_spawned",
	[SMART_STAT_CHUNKS_CLAIMED] = "chunks_claimed",
	[SMART_STAT_ALLOCS] = "allocs",
	[SMART_STAT_FREES] = "frees",
	[SMART_STAT_WRS_DONE] = "wrs_done",
	[SMART_STAT_GUARDED_OPS] = "guarded_ops",
	[SMART_STAT_ADMISSION_WAITS] = "admission_waits",
	[SMART_STAT_TUNER_EPOCHS] = "tuner_epochs",
	[SMART_STAT_POOL_LOCKS] = "pool_locks",
	[SMART_STAT_EPOCH_ENTERS] = "epoch_enters",
	[SMART_STAT_EPOCH_ANNOUNCES] = "epoch_announces",
	[SMART_STAT_EPOCH_RETIRED] = "epoch_retired",
	[SMART_STAT_EPOCH_FREED] = "epoch_freed",
	[SMART_STAT_EPOCH_SCANS] = "epoch_scans",
	[SMART_STAT_EPOCH_TAKEN_BACK] = "epoch_taken_back",
	[SMART_STAT_EPOCH_LEAKED] = "epoch_leaked",
	[SMART_STAT_ROUND_TRIPS] = "round_trips",
	[SMART_STAT_ALLOC_ROUND_TRIPS] = "alloc_round_trips",
	[SMART_STAT_CACHE_HITS] = "cache_hits",
	[SMART_STAT_CACHE_MISSES] = "cache_misses",
	[SMART_STAT_SPEC_HITS] = "spec_hits",
	[SMART_STAT_SPEC_MISSES] = "spec_misses",
	[SMART_STAT_CQ_FAILURES] = "cq_failures",
	[SMART_STAT_YIELDS] = "yields",
	[SMART_STAT_NMAX_CUTS] = "nmax_cuts",
	[SMART_STAT_NMAX_RAISES] = "nmax_raises",
	[SMART_STAT_CREDIT_PARKS] = "credit_parks",
};

void smart_stat_add(smart_worker_t *w, enum smart_stat id, uint64_t n)
{
	if (w && (unsigned)id < SMART_STAT__COUNT)
		SMART_STAT_ADD(w, id, n);
}

const char *smart_stat_name(enum smart_stat id)
{
	if ((unsigned)id >= SMART_STAT__COUNT)
		return "unknown";
	return stat_names[id];
}

void smart__stats_add_folded(const struct smart_worker *w, uint64_t *c)
{
	uint64_t posts1 = __atomic_load_n(&w->posts1, __ATOMIC_RELAXED);
	uint64_t waited = __atomic_load_n(&w->syncs_waited, __ATOMIC_RELAXED);
	uint64_t sync_ops = __atomic_load_n(&w->sync_ops, __ATOMIC_RELAXED);

	c[SMART_STAT_WRS_POSTED] += posts1 + sync_ops;
	c[SMART_STAT_DOORBELLS] += posts1 + sync_ops;
	c[SMART_STAT_SYNCS] += waited + sync_ops;
	c[SMART_STAT_ROUND_TRIPS] += waited + sync_ops;
}

static void sum_worker(smart_stats_t *s, smart_hist_t *h,
		       const struct smart_worker *w)
{
	int i;

	for (i = 0; i < SMART_STAT__COUNT; i++)
		s->c[i] += __atomic_load_n(&w->stats[i], __ATOMIC_RELAXED);
	smart__stats_add_folded(w, s->c);
	for (i = 0; i < SMART_RETRY_HIST; i++)
		s->retry_hist[i] += __atomic_load_n(&w->retry_hist[i],
						    __ATOMIC_RELAXED);
	if (!s->workers) {
		s->backoff_cmax = w->bo.level < 0 ?
					  0 :
					  (w->bo.unit ? w->bo.unit :
							SMART_BACKOFF_C0)
						  << w->bo.level;
		s->backoff_nmax = w->bo.nmax;
	}
	smart_hist_merge(h, w->hist);
	s->workers++;
}

static int stats_fill(smart_ctx_t *ctx, smart_stats_t *out)
{
	smart_hist_t *h;
	const struct smart_worker *w;
	double ns_per_cycle;
	int i;

	h = malloc(sizeof(*h));
	if (!h)
		return SMART_ENOMEM;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ctx->lock);
	memcpy(h, ctx->retired_hist, sizeof(*h));
	for (i = 0; i < SMART_STAT__COUNT; i++)
		out->c[i] = ctx->retired_stats[i];
	for (i = 0; i < SMART_RETRY_HIST; i++)
		out->retry_hist[i] = ctx->retired_retry_hist[i];
	for (w = ctx->workers; w; w = w->next)
		sum_worker(out, h, w);
	ctx->svc->stats(ctx, out->c);
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->tp->domain_stats) {
		struct smart_tp_stats ts = { 0 };

		ctx->tp->domain_stats(ctx->dom, &ts);
		out->db_rings = ts.db_rings;
		out->db_contended = ts.db_contended;
		out->wqe_misses = ts.wqe_misses;
	}
	snprintf(out->techniques, sizeof(out->techniques), "%s",
		 ctx->tech_names);
	out->lease_renewals = atomic_load(&ctx->lease_renewals);
	out->leases_fenced = atomic_load(&ctx->leases_fenced);
	out->fenced = atomic_load(&ctx->fenced);
	smart__tuner_describe(ctx, &out->credit_cap, out->throttle_phase,
			      sizeof(out->throttle_phase));
	out->retries_per_op =
		out->c[SMART_STAT_GUARDED_OPS] ?
			(double)out->c[SMART_STAT_RETRIES] /
				(double)out->c[SMART_STAT_GUARDED_OPS] :
			0;
	ns_per_cycle = ctx->clock.use_tsc ? 1.0 / ctx->clock.cycles_per_ns :
					    1.0;
	out->sync_count = h->count;
	out->sync_p50_ns = smart_hist_quantile(h, 0.50) * ns_per_cycle;
	out->sync_p99_ns = smart_hist_quantile(h, 0.99) * ns_per_cycle;
	out->sync_p999_ns = smart_hist_quantile(h, 0.999) * ns_per_cycle;
	out->sync_mean_ns = smart_hist_mean(h) * ns_per_cycle;
	free(h);
	return 0;
}

int smart_stats_snapshot_sized(smart_ctx_t *ctx, smart_stats_t *out,
			       size_t size)
{
	smart_stats_t full;
	int rc = ctx && out ? stats_fill(ctx, &full) : SMART_EINVAL;

	return rc ? rc : smart__out_give(out, size, &full, sizeof(full));
}

/* A caller's snapshot of `size` bytes as this library's struct (zeros for
 * the fields an older one lacks), or NULL for a size no struct has.  Its
 * strings are the caller's bytes: terminated here, so that printing one
 * reads nothing past its array (nor past the struct). */
static const smart_stats_t *stats_take(const smart_stats_t *s, size_t size,
				       smart_stats_t *full)
{
	memset(full, 0, sizeof(*full));
	if (!s || !size || size > SMART__CONFIG_SIZE_MAX)
		return NULL;
	memcpy(full, s, size < sizeof(*full) ? size : sizeof(*full));
	if (!SMART_M_STATS_PRINT_UNTERMINATED) {
		full->techniques[sizeof(full->techniques) - 1] = '\0';
		full->throttle_phase[sizeof(full->throttle_phase) - 1] = '\0';
	}
	return full;
}

int smart_stats_print_sized(const smart_stats_t *caller, size_t size, FILE *f)
{
	smart_stats_t full;
	const smart_stats_t *s = stats_take(caller, size, &full);
	int i;

	if (!s || !f)
		return SMART_EINVAL;
	for (i = 0; i < SMART_STAT__COUNT; i++)
		fprintf(f, "%-16s %" PRIu64 "\n", stat_names[i], s->c[i]);
	fprintf(f, "%-16s %d\n", "workers", s->workers);
	fprintf(f, "%-16s %" PRIu64 " (contended %" PRIu64 ")\n", "db_rings",
		s->db_rings, s->db_contended);
	fprintf(f, "%-16s %" PRIu64 "\n", "wqe_misses", s->wqe_misses);
	fprintf(f, "%-16s %s\n", "techniques", s->techniques);
	fprintf(f, "%-16s %d (%s)\n", "credit_cap", s->credit_cap,
		s->throttle_phase);
	fprintf(f,
		"%-16s %.3f (backoff cap %" PRIu64 " cycles, %d admitted)"
		"\n",
		"retries_per_op", s->retries_per_op, s->backoff_cmax,
		s->backoff_nmax);
	fprintf(f,
		"%-16s %" PRIu64 " (p50 %.0f ns, p99 %.0f ns, "
		"p99.9 %.0f ns, mean %.0f ns)\n",
		"sync_latency", s->sync_count, s->sync_p50_ns, s->sync_p99_ns,
		s->sync_p999_ns, s->sync_mean_ns);
	fprintf(f, "%-16s %" PRIu64 " renewals, %" PRIu64 " peers fenced%s\n",
		"leases", s->lease_renewals, s->leases_fenced,
		s->fenced ? ", THIS CLIENT IS FENCED" : "");
	return 0;
}

int smart_stats_print_json_sized(const smart_stats_t *caller, size_t size,
				 FILE *f)
{
	smart_stats_t full;
	const smart_stats_t *s = stats_take(caller, size, &full);
	int i;

	if (!s || !f)
		return SMART_EINVAL;
	fputc('{', f);
	for (i = 0; i < SMART_STAT__COUNT; i++)
		fprintf(f, "\"%s\":%" PRIu64 ",", stat_names[i], s->c[i]);
	fprintf(f,
		"\"techniques\":\"%s\",\"credit_cap\":%d,\"throttle_phase\":"
		"\"%s\",\"retries_per_op\":%.4f,\"backoff_cmax\":%" PRIu64
		",\"backoff_nmax\":%d,\"retry_hist\":[",
		s->techniques, s->credit_cap, s->throttle_phase,
		s->retries_per_op, s->backoff_cmax, s->backoff_nmax);
	for (i = 0; i < 17; i++)
		fprintf(f, "%s%" PRIu64, i ? "," : "", s->retry_hist[i]);
	fprintf(f, "],");
	fprintf(f,
		"\"db_rings\":%" PRIu64 ",\"db_contended\":%" PRIu64
		",\"wqe_misses\":%" PRIu64 ",",
		s->db_rings, s->db_contended, s->wqe_misses);
	fprintf(f,
		"\"lease_renewals\":%" PRIu64 ",\"leases_fenced\":%" PRIu64
		",\"fenced\":%d,",
		s->lease_renewals, s->leases_fenced, s->fenced);
	fprintf(f,
		"\"workers\":%d,\"sync_count\":%" PRIu64 ",\"sync_p50_ns\""
		":%.1f,\"sync_p99_ns\":%.1f,\"sync_p999_ns\":%.1f,"
		"\"sync_mean_ns\":%.1f}",
		s->workers, s->sync_count, s->sync_p50_ns, s->sync_p99_ns,
		s->sync_p999_ns, s->sync_mean_ns);
	return 0;
}
