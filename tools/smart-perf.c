/*
 * smart-perf: a perftest-like micro-benchmark of one-sided ops.
 *
 * T threads, each with its own worker and D tasks (coroutines); each task
 * keeps one op in flight: pick a random aligned offset, queue the op, sync.
 * With no --connect it starts an embedded blade in the process.  --raw runs
 * the same random-offset workload with plain loads, stores and CPU atomics
 * on the blade's mapping, D accesses per round and no framework: the
 * physical limit of the shm transport.  --vs-raw alternates both and
 * reports the medians and their ratio.
 *
 * Uses only the public API (include/smart).  No global mutable state: the
 * run's state lives in struct perf, passed to the threads.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smart/smart.h"

enum op_kind { OP_READ, OP_WRITE, OP_CAS, OP_FAA, OP_CAS_INCR, OP__N };
static const char *const op_names[] = { "read", "write", "cas", "faa",
					"cas-incr" };
static const char *const op_titles[] = { "RDMA_Read", "RDMA_Write",
					 "Atomic CMP_AND_SWAP",
					 "Atomic FETCH_AND_ADD",
					 "CAS-increment (read + CAS loop)" };

struct perf_cfg {
	int op;
	uint32_t size;
	int threads;
	int depth;
	double seconds;
	const char *qp_mode;
	const char *connect;
	const char *transport;
	const char *secret_file;
	uint64_t blade_size;
	int raw;
	int vs_raw;
	int rounds;
	int json;
	uint64_t seed;
	const char *opts[32];	/* key=value pairs from --opt */
	int nopts;
	const char *techniques;	/* --techniques */
	const char *credit;	/* --credit */
	const char *nic_model;	/* --nic-model */
	const char *device;	/* --device (verbs) */
	int batch;		/* ops per sync per coroutine */
	int dynamic_ms;		/* re-draw the active threads this often */
	uint64_t keys;		/* cas-incr: counters */
	double zipf;		/* cas-incr: theta, 0 = uniform */
};

struct perf;

struct perf_thread {
	struct perf *p;
	int idx;
	pthread_t th;
	smart_worker_t *w;
	uint64_t ops;
	smart_hist_t hist;	/* op latency in cycles */
	int err;
};

struct perf {
	const struct perf_cfg *cfg;
	smart_ctx_t *ctx;
	smart_blade_t *blade;
	uint16_t blade_id;
	uint64_t region_size;
	uint8_t *raw_base;	/* embedded blade's mapping, for --raw */
	uint64_t lo, slots;	/* offsets: lo + slot * stride */
	uint64_t stride;
	atomic_int start, stop;
	atomic_int active;	/* --dynamic: threads below this index run */
	struct perf_thread *t;
	int raw;		/* this run */
	smart_zipf_t zipf;	/* cas-incr key popularity */
	char secret[32];	/* the embedded blade's */
};

struct perf_task {
	struct perf_thread *pt;
	smart_rng_t rng;
	void *buf;
};

struct perf_result {
	uint64_t ops;
	double secs, mops, mb_per_s, p50_us, p99_us, p999_us;
	smart_stats_t st;	/* the library's stats of the run */
};

static uint64_t perf_offset(struct perf *p, smart_rng_t *r)
{
	return p->lo + smart_rng_below(r, p->slots) * p->stride;
}

static int perf_issue(struct perf *p, smart_worker_t *w, struct perf_task *t,
		      uint64_t off)
{
	smart_gaddr_t ga = smart_gaddr(p->blade_id, off);

	switch (p->cfg->op) {
	case OP_READ:
		return smart_read(w, ga, p->cfg->size, t->buf);
	case OP_WRITE:
		return smart_write(w, ga, t->buf, p->cfg->size);
	case OP_CAS:
		return smart_cas(w, ga, 0, off, t->buf);
	default:
		return smart_faa(w, ga, 1, t->buf);
	}
}

/* Latency is sampled on one op in PERF_LAT_SAMPLE (the raw runs record one
 * entry per round of depth ops): a clock read and a histogram update cost
 * a noticeable share of an 8-byte shm op, and sampling by op index does not
 * bias the distribution. */
#define PERF_LAT_SAMPLE 8

/* One cas-incr op: read a Zipf-chosen counter, then CAS it to old + 1
 * until that succeeds, inside a conflict-avoidance guard. */
static int perf_cas_incr(struct perf *p, smart_worker_t *w,
			 struct perf_task *t)
{
	uint64_t k = smart_zipf_next(&p->zipf, &t->rng);
	smart_gaddr_t ga = smart_gaddr(p->blade_id, p->lo + k * 8);
	uint64_t *v = t->buf, old;
	int rc;

	smart_backoff_begin(w);
	rc = smart_read_sync(w, ga, 8, v);
	while (!rc) {
		old = *v;
		rc = smart_cas_sync(w, ga, old, old + 1, v);
		if (rc || *v == old)
			break;
		smart_backoff_retry(w);
	}
	smart_backoff_end(w);
	return rc;
}

static void perf_sleep(double secs)
{
	struct timespec ts = { (time_t)secs,
			       (long)((secs - (double)(time_t)secs) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Queue --batch ops at random offsets and sync them together. */
static int perf_batch(struct perf *p, smart_worker_t *w, struct perf_task *t)
{
	int i, rc = 0;

	for (i = 0; i < p->cfg->batch && !rc; i++)
		rc = perf_issue(p, w, t, perf_offset(p, &t->rng));
	return rc ? rc : smart_sync(w);
}

/* --dynamic: threads at or above the active count sit idle. */
static void perf_idle_if_inactive(struct perf *p, struct perf_thread *pt)
{
	while (pt->idx >= atomic_load_explicit(&p->active,
					       memory_order_relaxed) &&
	       !atomic_load_explicit(&p->stop, memory_order_relaxed))
		perf_sleep(0.0002);
}

static void perf_task_fn(smart_worker_t *w, void *arg)
{
	struct perf_task *t = arg;
	struct perf_thread *pt = t->pt;
	struct perf *p = pt->p;
	uint64_t t0 = 0, n = 0;
	int rc;

	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		if (__builtin_expect(p->cfg->dynamic_ms != 0, 0))
			perf_idle_if_inactive(p, pt);
		if (!(n & (PERF_LAT_SAMPLE - 1)))
			t0 = smart_cycles();
		rc = p->cfg->op == OP_CAS_INCR ? perf_cas_incr(p, w, t) :
		     perf_batch(p, w, t);
		if (rc) {
			pt->err = rc;
			break;
		}
		if (!(n++ & (PERF_LAT_SAMPLE - 1)))
			smart_hist_add(&pt->hist, smart_cycles() - t0);
	}
	pt->ops += n * (uint64_t)(p->cfg->op == OP_CAS_INCR ? 1 :
				   p->cfg->batch);
}

static int perf_thread_framework(struct perf_thread *pt)
{
	struct perf *p = pt->p;
	struct perf_task *tasks;
	int i, rc;

	tasks = calloc((size_t)p->cfg->depth, sizeof(*tasks));
	if (!tasks)
		return SMART_ENOMEM;
	rc = smart_worker_create(p->ctx, &pt->w);
	for (i = 0; !rc && i < p->cfg->depth; i++) {
		tasks[i].pt = pt;
		smart_rng_seed(&tasks[i].rng, p->cfg->seed +
			       (uint64_t)pt->idx * 1000 + (uint64_t)i);
		rc = smart_buf_alloc(pt->w, p->cfg->size < 8 ? 8 : p->cfg->size,
				     &tasks[i].buf);
		if (!rc) {
			memset(tasks[i].buf, 0x11, p->cfg->size);
			rc = smart_task_spawn(pt->w, perf_task_fn, &tasks[i]);
		}
	}
	while (!atomic_load(&p->start))
		;
	if (!rc)
		rc = smart_worker_run(pt->w);
	for (i = 0; pt->w && i < p->cfg->depth; i++)
		if (tasks[i].buf)
			smart_buf_free(pt->w, tasks[i].buf);
	if (pt->w)
		smart_worker_destroy(pt->w);
	pt->w = NULL;
	free(tasks);
	return rc;
}

/* One raw round: depth independent accesses, so the CPU overlaps their
 * misses the way in-flight RDMA ops overlap. */
static void raw_round(struct perf *p, smart_rng_t *r, uint8_t *local,
		      uint64_t *sink)
{
	const struct perf_cfg *c = p->cfg;
	uint64_t acc = 0;
	int i;

	for (i = 0; i < c->depth; i++) {
		uint8_t *a = p->raw_base + perf_offset(p, r);

		switch (c->op) {
		case OP_READ:
			if (c->size == 8)
				acc += *(volatile uint64_t *)a;
			else
				memcpy(local, a, c->size), acc += local[0];
			break;
		case OP_WRITE:
			if (c->size == 8)
				*(volatile uint64_t *)a = acc;
			else
				memcpy(a, local, c->size);
			break;
		case OP_CAS_INCR: {
			uint64_t k = smart_zipf_next(&p->zipf, r), e;
			uint64_t *ctr = (uint64_t *)(p->raw_base + p->lo + k * 8);

			e = __atomic_load_n(ctr, __ATOMIC_RELAXED);
			while (!__atomic_compare_exchange_n(ctr, &e, e + 1, 0,
							    __ATOMIC_SEQ_CST,
							    __ATOMIC_SEQ_CST))
				;
			acc += e;
			break;
		}
		case OP_CAS: {
			uint64_t e = 0;

			__atomic_compare_exchange_n((uint64_t *)a, &e, acc, 0,
						    __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			acc += e;
			break;
		}
		default:
			acc += __atomic_fetch_add((uint64_t *)a, 1,
						  __ATOMIC_SEQ_CST);
		}
	}
	*sink += acc;
}

static int perf_thread_raw(struct perf_thread *pt)
{
	struct perf *p = pt->p;
	uint8_t *local = malloc(p->cfg->size + 64);
	uint64_t sink = 0, t0, t1;
	smart_rng_t r;

	if (!local)
		return SMART_ENOMEM;
	memset(local, 0x22, p->cfg->size + 64);
	smart_rng_seed(&r, p->cfg->seed + (uint64_t)pt->idx * 1000);
	while (!atomic_load(&p->start))
		;
	t0 = smart_cycles();
	while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
		raw_round(p, &r, local, &sink);
		t1 = smart_cycles();
		/* every op of a round took the round's time; one entry per
		 * round keeps the yardstick's own overhead minimal */
		smart_hist_add(&pt->hist, t1 - t0);
		t0 = t1;
		pt->ops += (uint64_t)p->cfg->depth;
	}
	free(local);
	__asm__ __volatile__("" : : "r"(sink));	/* keep the loads alive */
	return 0;
}

static void *perf_thread_main(void *arg)
{
	struct perf_thread *pt = arg;
	int rc = pt->p->raw ? perf_thread_raw(pt) : perf_thread_framework(pt);

	if (rc && !pt->err)
		pt->err = rc;
	return NULL;
}


/* Table 1's dynamic phase: every interval, the number of active threads is
 * re-drawn uniformly from [max(1, 3T/8), T] (Smart: 36..95 of 96). */
static void perf_dynamic(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	double left = c->seconds, step = c->dynamic_ms / 1000.0;
	int lo = c->threads * 3 / 8 > 1 ? c->threads * 3 / 8 : 1;
	smart_rng_t r;

	smart_rng_seed(&r, c->seed ^ 0xd1ce);
	while (left > 0) {
		atomic_store(&p->active, lo + (int)smart_rng_below(&r,
			     (uint64_t)(c->threads - lo + 1)));
		perf_sleep(left < step ? left : step);
		left -= step;
	}
}

/* The library's stats of one run: counters as differences. */
static void perf_stats_delta(struct perf *p, const smart_stats_t *s0,
			     smart_stats_t *d)
{
	int i;

	smart_stats_snapshot(p->ctx, d);
	for (i = 0; i < SMART_STAT__COUNT; i++)
		d->c[i] -= s0->c[i];
	for (i = 0; i < 17; i++)
		d->retry_hist[i] -= s0->retry_hist[i];
	d->db_rings -= s0->db_rings;
	d->db_contended -= s0->db_contended;
	d->wqe_misses -= s0->wqe_misses;
	d->retries_per_op = d->c[SMART_STAT_GUARDED_OPS] ?
		(double)d->c[SMART_STAT_RETRIES] /
		(double)d->c[SMART_STAT_GUARDED_OPS] : 0;
}

static int perf_run_once(struct perf *p, int raw, struct perf_result *res)
{
	const struct perf_cfg *c = p->cfg;
	smart_hist_t h;
	double cps = smart_cycles_per_sec();
	uint64_t t0, t1;
	int i, err = 0;

	smart_stats_t s0;

	p->raw = raw;
	atomic_store(&p->active, c->threads);
	smart_stats_snapshot(p->ctx, &s0);
	atomic_store(&p->start, 0);
	atomic_store(&p->stop, 0);
	memset(p->t, 0, sizeof(*p->t) * (size_t)c->threads);
	smart_hist_init(&h);
	for (i = 0; i < c->threads; i++) {
		p->t[i].p = p;
		p->t[i].idx = i;
		smart_hist_init(&p->t[i].hist);
		if (pthread_create(&p->t[i].th, NULL, perf_thread_main, &p->t[i]))
			return SMART_ESYS;
	}
	perf_sleep(0.05);	/* let workers and tasks get ready */
	t0 = smart_now_ns();
	atomic_store(&p->start, 1);
	if (c->dynamic_ms)
		perf_dynamic(p);
	else
		perf_sleep(c->seconds);
	atomic_store(&p->stop, 1);
	t1 = smart_now_ns();
	memset(res, 0, sizeof(*res));
	for (i = 0; i < c->threads; i++) {
		pthread_join(p->t[i].th, NULL);
		res->ops += p->t[i].ops;
		smart_hist_merge(&h, &p->t[i].hist);
		if (p->t[i].err && !err)
			err = p->t[i].err;
	}
	res->secs = (double)(t1 - t0) / 1e9;
	res->mops = (double)res->ops / res->secs / 1e6;
	res->mb_per_s = res->mops * c->size;
	res->p50_us = smart_hist_quantile(&h, 0.5) / cps * 1e6;
	res->p99_us = smart_hist_quantile(&h, 0.99) / cps * 1e6;
	res->p999_us = smart_hist_quantile(&h, 0.999) / cps * 1e6;
	perf_stats_delta(p, &s0, &res->st);
	return err;
}

static int perf_setup_ctx(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	smart_opts_t *o;
	char kv[256];
	int i, rc = smart_opts_create(&o);

	if (rc)
		return rc;
	if (c->qp_mode)
		rc = smart_opts_set(o, "qp_mode", c->qp_mode);
	if (!rc && c->techniques)
		rc = smart_opts_set(o, "techniques", c->techniques);
	if (!rc && c->credit)
		rc = smart_opts_set(o, "credit", c->credit);
	if (!rc && c->nic_model)
		rc = smart_opts_set(o, "nic_model", c->nic_model);
	if (!rc && c->device)
		rc = smart_opts_set(o, "device", c->device);
	if (!rc && c->transport)
		rc = smart_opts_set(o, "transport", c->transport);
	if (!rc && c->secret_file)
		rc = smart_opts_set(o, "secret_file", c->secret_file);
	if (!rc && (uint64_t)c->depth * 2 > 64) {
		snprintf(kv, sizeof(kv), "%d", c->depth < 1024 ? c->depth : 1024);
		rc = smart_opts_set(o, "max_tasks", kv);
	}
	for (i = 0; !rc && i < c->nopts; i++) {
		rc = smart_opts_set_kv(o, c->opts[i]);
		if (rc)
			fprintf(stderr, "smart-perf: --opt %s: %s (want "
				"key=value, keys in --list-options)\n",
				c->opts[i], smart_strerror(rc));
	}
	if (!rc)
		rc = smart_ctx_create(o, &p->ctx);
	smart_opts_destroy(o);
	return rc;
}

/* An embedded blade needs a secret like any other: a random one, handed
 * to our own ctx directly (smart_ctx_set_secret). */
static int perf_embedded_blade(struct perf *p)
{
	struct smart_blade_config bc;
	void *base;
	int rc = smart_secret_generate(p->secret, sizeof(p->secret));

	if (rc)
		return rc;
	smart_blade_config_init(&bc);
	bc.size = p->cfg->blade_size;
	bc.listen = "127.0.0.1:0";
	bc.secret = p->secret;
	bc.secret_len = sizeof(p->secret);
	bc.transport = p->cfg->transport;
	bc.device = p->cfg->device;
	rc = smart_blade_create(&bc, &p->blade);
	if (rc)
		return rc;
	rc = smart_blade_region(p->blade, &base, &p->region_size);
	p->raw_base = base;
	return rc;
}

static int perf_setup(struct perf *p, struct perf_cfg *c)
{
	struct smart_blade_info info;
	const char *addr = c->connect;
	int rc = 0;

	if (!addr) {
		rc = perf_embedded_blade(p);
		if (rc)
			return rc;
		addr = smart_blade_address(p->blade);
	}
	rc = perf_setup_ctx(p);
	if (!rc && !c->connect)
		rc = smart_ctx_set_secret(p->ctx, p->secret,
					  sizeof(p->secret));
	if (!rc)
		rc = smart_ctx_connect(p->ctx, addr, &p->blade_id);
	if (rc)
		return rc;
	rc = smart_ctx_blade_info(p->ctx, p->blade_id, &info);
	if (rc)
		return rc;
	p->region_size = info.size;
	/* Stay clear of the blade's own area; align to the op size. */
	p->stride = c->size < 8 ? 8 : (c->size + 7) & ~7u;
	p->lo = info.reserved;
	if (p->region_size < p->lo + 2 * p->stride)
		return SMART_ENOSPC;
	p->slots = (p->region_size - p->lo - p->stride) / p->stride;
	if (c->op == OP_CAS_INCR) {
		if (c->keys > p->slots)
			return SMART_ENOSPC;
		rc = smart_zipf_init(&p->zipf, c->keys, c->zipf);
	}
	return rc;
}

static void perf_print_header(const struct perf *p)
{
	const struct perf_cfg *c = p->cfg;

	printf("---------------------------------------------------------------"
	       "------------------------\n");
	printf("                    %s BW Test (smart-perf %s)\n",
	       op_titles[c->op], SMART_VERSION_STRING);
	printf(" Transport      : %s\n", smart_ctx_transport(p->ctx));
	printf(" QP mode        : %s (requested %s)\n",
	       smart_ctx_qp_mode(p->ctx), c->qp_mode ? c->qp_mode : "default");
	printf(" Blade          : %s, %" PRIu64 " MiB\n",
	       c->connect ? c->connect : "embedded", p->region_size >> 20);
	printf(" Threads x depth: %d x %d (one op in flight per coroutine)\n",
	       c->threads, c->depth);
	printf(" Duration       : %.1f s per run, random %u-byte-aligned "
	       "offsets\n", c->seconds, (unsigned)p->stride);
	printf("---------------------------------------------------------------"
	       "------------------------\n");
	printf(" %-6s %-6s %-12s %-18s %-14s %-14s %-14s\n", "mode", "#bytes",
	       "#iterations", "BW average[MB/sec]", "MsgRate[Mpps]",
	       "t_typical[usec]", "99% percentile[usec]");
}

static void perf_print_row(const struct perf *p, const struct perf_result *r,
			   int raw)
{
	printf(" %-6s %-6u %-12" PRIu64 " %-18.2f %-14.3f %-14.3f %-14.3f\n",
	       raw ? "raw" : "smart", p->cfg->size, r->ops, r->mb_per_s,
	       r->mops, r->p50_us, r->p99_us);
	if (raw)
		return;
	printf("        techniques %s, credit cap %d (%s), doorbells rung %" PRIu64
	       " (contended %" PRIu64 ")", r->st.techniques, r->st.credit_cap,
	       r->st.throttle_phase, r->st.db_rings, r->st.db_contended);
	if (p->cfg->op == OP_CAS_INCR)
		printf(", retries/op %.3f", r->st.retries_per_op);
	printf("\n");
}

static void perf_print_json(const struct perf *p, const struct perf_result *r,
			    int raw, double ratio)
{
	const struct perf_cfg *c = p->cfg;

	printf("{\"op\":\"%s\",\"size\":%u,\"threads\":%d,\"depth\":%d,"
	       "\"seconds\":%.3f,\"transport\":\"%s\",\"qp_mode\":\"%s\","
	       "\"qp_mode_effective\":\"%s\",\"raw\":%s,\"ops\":%" PRIu64 ","
	       "\"mops\":%.4f,\"mb_per_s\":%.3f,\"p50_us\":%.4f,"
	       "\"p99_us\":%.4f,\"p999_us\":%.4f",
	       op_names[c->op], c->size, c->threads, c->depth, r->secs,
	       smart_ctx_transport(p->ctx), c->qp_mode ? c->qp_mode :
	       "auto", smart_ctx_qp_mode(p->ctx), raw ? "true" : "false",
	       r->ops, r->mops, r->mb_per_s, r->p50_us, r->p99_us, r->p999_us);
	if (ratio >= 0)
		printf(",\"ratio_vs_raw\":%.4f", ratio);
	printf(",\"techniques\":\"%s\",\"credit_cap\":%d,\"throttle_phase\":"
	       "\"%s\",\"db_contended\":%" PRIu64 ",\"db_rings\":%" PRIu64
	       ",\"wqe_misses\":%" PRIu64 ",\"nic_model\":\"%s\"",
	       r->st.techniques, r->st.credit_cap, r->st.throttle_phase,
	       r->st.db_contended, r->st.db_rings, r->st.wqe_misses,
	       c->nic_model ? c->nic_model : "");
	printf(",\"batch\":%d,\"dynamic_ms\":%d", c->batch, c->dynamic_ms);
	if (c->op == OP_CAS_INCR)
		printf(",\"keys\":%" PRIu64 ",\"zipf\":%.3f,"
		       "\"retries_per_op\":%.4f,\"guarded_ops\":%" PRIu64
		       ",\"backoff_cmax\":%" PRIu64 ",\"backoff_nmax\":%d,"
		       "\"admission_waits\":%" PRIu64,
		       c->keys, c->zipf, r->st.retries_per_op,
		       r->st.c[SMART_STAT_GUARDED_OPS], r->st.backoff_cmax,
		       r->st.backoff_nmax, r->st.c[SMART_STAT_ADMISSION_WAITS]);
	printf("}\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Alternate framework and raw runs; report both medians and the ratio. */
static int perf_vs_raw(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	double fm[64], rm[64], ratio;
	struct perf_result r, best[2];
	int i, k, rc;

	for (i = 0; i < c->rounds; i++) {
		for (k = 0; k < 2; k++) {
			rc = perf_run_once(p, k, &r);
			if (rc)
				return rc;
			(k ? rm : fm)[i] = r.mops;
			best[k] = r;
			if (!c->json)
				perf_print_row(p, &r, k);
		}
	}
	best[0].mops = median(fm, c->rounds);
	best[1].mops = median(rm, c->rounds);
	ratio = best[0].mops / best[1].mops;
	if (c->json) {
		perf_print_json(p, &best[0], 0, ratio);
	} else {
		printf("---------------------------------------------------------"
		       "------------------------------\n");
		printf(" median of %d alternating runs: smart %.3f Mops, raw "
		       "%.3f Mops, ratio %.1f%%\n", c->rounds, best[0].mops,
		       best[1].mops, 100 * ratio);
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: smart-perf [options]\n"
"  One-sided op micro-benchmark (perftest style).  Without --connect an\n"
"  embedded blade is started in this process.\n"
"  --op read|write|cas|faa|cas-incr   operation [read]; cas-incr: read a\n"
"                            Zipf-chosen counter, CAS it +1, retry (guarded)\n"
"  --keys N                  cas-incr: counters [1000000]\n"
"  --zipf THETA              cas-incr: Zipf theta in [0,1), 0 = uniform [0.99]\n"
"  --techniques LIST               techniques: ThrdAwareAlloc,WorkReqThrot,\n"
"                            ConflictAvoid,SpecLookup or None [all]\n"
"  --credit N                fixed cap on WRs in flight per thread (tuner off)\n"
"  --batch B                 ops queued per sync by each coroutine [1]\n"
"  --dynamic MS              every MS ms re-draw the active threads from\n"
"                            [max(1,3T/8), T] (Smart's Table 1)\n"
"  --nic-model SPEC          shm RNIC model: default or key=value,...\n"
"  --batch B                 ops queued per sync by each coroutine [1]\n"
"  --dynamic MS              every MS ms re-draw the active threads from\n"
"                            [max(1,3T/8), T] (Smart's Table 1)\n"
"  --size B                  bytes per op (8 for cas/faa) [8]\n"
"  --threads T               worker threads [1]\n"
"  --depth D                 coroutines per thread, one op in flight each [8]\n"
"  --seconds S               duration of each run [3]\n"
"  --qp-mode M               shared | mux:K | per-thread | per-thread-db\n"
"  --transport NAME          shm | verbs [shm]\n"
"  --device NAME             verbs: RDMA device [first with an active port]\n"
"  --connect HOST:PORT       use a running smartd instead of an embedded blade\n"
"  --secret-file F           secret for --connect (or SMART_SECRET_FILE)\n"
"  --blade-size SIZE         embedded blade region [1G]\n"
"  --raw                     plain loads/stores/atomics on the mapping, no\n"
"                            framework (embedded shm only): the yardstick\n"
"  --vs-raw                  alternate framework and raw runs, report medians\n"
"  --rounds N                runs of each kind for --vs-raw [5]\n"
"  --opt KEY=VALUE           any library option (see --list-options)\n"
"  --seed N                  RNG seed [1]\n"
"  --json                    one JSON object instead of the table\n"
"  --list-options            print the library options and exit\n"
"  --help, --version\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		return -1;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (errno || *end || v > (UINT64_MAX >> 1) >> shift)
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int parse_op(const char *s)
{
	int i;

	for (i = 0; i < OP__N; i++)
		if (!strcmp(s, op_names[i]))
			return i;
	return -1;
}

static int bad_arg(const char *opt, const char *val)
{
	fprintf(stderr, "smart-perf: bad value '%s' for --%s (see --help)\n",
		val ? val : "", opt);
	return 2;
}

enum { O_OP = 256, O_SIZE, O_THREADS, O_DEPTH, O_SECONDS, O_QPMODE,
       O_TRANSPORT, O_CONNECT, O_SECRET, O_BSIZE, O_RAW, O_VSRAW, O_ROUNDS,
       O_OPT, O_SEED, O_JSON, O_LIST, O_HELP, O_VERSION, O_OPTS, O_CREDIT,
       O_NIC, O_KEYS, O_ZIPF, O_BATCH, O_DYNAMIC, O_DEVICE };

static const struct option long_opts[] = {
	{ "op", 1, 0, O_OP }, { "size", 1, 0, O_SIZE },
	{ "threads", 1, 0, O_THREADS }, { "depth", 1, 0, O_DEPTH },
	{ "seconds", 1, 0, O_SECONDS }, { "qp-mode", 1, 0, O_QPMODE },
	{ "transport", 1, 0, O_TRANSPORT }, { "connect", 1, 0, O_CONNECT },
	{ "secret-file", 1, 0, O_SECRET }, { "blade-size", 1, 0, O_BSIZE },
	{ "raw", 0, 0, O_RAW }, { "vs-raw", 0, 0, O_VSRAW },
	{ "rounds", 1, 0, O_ROUNDS }, { "opt", 1, 0, O_OPT },
	{ "seed", 1, 0, O_SEED }, { "json", 0, 0, O_JSON },
	{ "list-options", 0, 0, O_LIST }, { "help", 0, 0, O_HELP },
	{ "version", 0, 0, O_VERSION }, { "techniques", 1, 0, O_OPTS },
	{ "credit", 1, 0, O_CREDIT }, { "nic-model", 1, 0, O_NIC },
	{ "keys", 1, 0, O_KEYS }, { "zipf", 1, 0, O_ZIPF },
	{ "batch", 1, 0, O_BATCH }, { "dynamic", 1, 0, O_DYNAMIC },
	{ "device", 1, 0, O_DEVICE },
	{ 0, 0, 0, 0 },
};

/* Numeric options: name, bounds, where to store. */
static int set_num(int id, const char *arg, struct perf_cfg *c)
{
	uint64_t v;
	char *end;
	double d;

	if (id == O_ZIPF) {
		d = strtod(arg, &end);
		if (*end || !(d >= 0 && d < 1))
			return -1;
		c->zipf = d;
		return 0;
	}
	if (id == O_SECONDS) {
		d = strtod(arg, &end);
		if (*end || !(d > 0 && d <= 86400))
			return -1;
		c->seconds = d;
		return 0;
	}
	if (parse_u64(arg, &v))
		return -1;
	switch (id) {
	case O_SIZE: if (!v || v > (1u << 30)) return -1; c->size = (uint32_t)v; break;
	case O_THREADS: if (!v || v > 1024) return -1; c->threads = (int)v; break;
	case O_DEPTH: if (!v || v > 1024) return -1; c->depth = (int)v; break;
	case O_BSIZE: if (v < (4u << 20)) return -1; c->blade_size = v; break;
	case O_ROUNDS: if (!v || v > 64) return -1; c->rounds = (int)v; break;
	case O_KEYS: if (!v || v > (UINT64_C(1) << 32)) return -1; c->keys = v; break;
	case O_BATCH: if (!v || v > 64) return -1; c->batch = (int)v; break;
	case O_DYNAMIC: if (!v || v > 100000) return -1; c->dynamic_ms = (int)v; break;
	default: c->seed = v; break;
	}
	return 0;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, struct perf_cfg *c)
{
	int ch;

	while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		switch (ch) {
		case O_OP:
			c->op = parse_op(optarg);
			if (c->op < 0)
				return bad_arg("op", optarg);
			break;
		case O_QPMODE: c->qp_mode = optarg; break;
		case O_TRANSPORT: c->transport = optarg; break;
		case O_CONNECT: c->connect = optarg; break;
		case O_SECRET: c->secret_file = optarg; break;
		case O_RAW: c->raw = 1; break;
		case O_OPTS: c->techniques = optarg; break;
		case O_CREDIT: c->credit = optarg; break;
		case O_NIC: c->nic_model = optarg; break;
		case O_DEVICE: c->device = optarg; break;
		case O_VSRAW: c->vs_raw = 1; break;
		case O_JSON: c->json = 1; break;
		case O_OPT:
			if (c->nopts == 32)
				return bad_arg("opt", optarg);
			c->opts[c->nopts++] = optarg;
			break;
		case O_LIST: return 1000;
		case O_HELP: usage(stdout); return 0;
		case O_VERSION: printf("smart-perf %s\n", SMART_VERSION_STRING);
			return 0;
		case '?': usage(stderr); return 2;
		default:
			if (set_num(ch, optarg, c))
				return bad_arg(long_opts[ch - O_OP].name, optarg);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "smart-perf: unexpected argument '%s'\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

static int check_cfg(struct perf_cfg *c)
{
	if (c->op >= OP_CAS && c->size != 8) {
		fprintf(stderr, "smart-perf: --op %s works on 8 bytes\n",
			op_names[c->op]);
		return 2;
	}
	if ((c->raw || c->vs_raw) && (c->connect || (c->transport &&
				      strcmp(c->transport, "shm")))) {
		fprintf(stderr, "smart-perf: --raw needs the embedded shm "
			"blade (no --connect, transport shm)\n");
		return 2;
	}
	if (!c->secret_file)
		c->secret_file = getenv("SMART_SECRET_FILE");
	return -1;
}

static int list_options(void)
{
	smart_opts_t *o;

	if (smart_opts_create(&o))
		return 2;
	smart_opts_print(o, stdout);
	smart_opts_destroy(o);
	return 0;
}

static int perf_main(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	struct perf_result r;
	int rc;

	p->t = calloc((size_t)c->threads, sizeof(*p->t));
	if (!p->t)
		return SMART_ENOMEM;
	if (!c->json)
		perf_print_header(p);
	if (c->vs_raw)
		return perf_vs_raw(p);
	rc = perf_run_once(p, c->raw, &r);
	if (rc)
		return rc;
	if (c->json)
		perf_print_json(p, &r, c->raw, -1);
	else
		perf_print_row(p, &r, c->raw);
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_cfg cfg = { .op = OP_READ, .size = 8, .threads = 1,
				.depth = 8, .seconds = 3, .blade_size = 1 << 30,
				.rounds = 5, .seed = 1, .keys = 1000000,
				.zipf = 0.99, .batch = 1 };
	struct perf p = { .cfg = &cfg };
	int rc = parse_args(argc, argv, &cfg);

	if (rc == 1000)
		return list_options();
	if (rc >= 0)
		return rc;
	rc = check_cfg(&cfg);
	if (rc >= 0)
		return rc;
	rc = perf_setup(&p, &cfg);
	if (!rc)
		rc = perf_main(&p);
	if (rc)
		fprintf(stderr, "smart-perf: %s\n", smart_strerror(rc));
	free(p.t);
	if (p.ctx)
		smart_ctx_destroy(p.ctx);
	if (p.blade)
		smart_blade_destroy(p.blade);
	return rc ? 1 : 0;
}
