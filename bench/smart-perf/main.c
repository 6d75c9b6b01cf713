/*
 * smart-perf: a perftest-like micro-benchmark of one-sided ops.
 *
 * T threads, each with its own worker and D coroutines, each keeping one
 * op in flight at a random aligned offset of one blade (load.c).  Without
 * --connect it starts an embedded blade in the process.  --raw runs the
 * same workload with plain loads, stores and atomics on the blade's
 * mapping (the yardstick); --vs-raw alternates both and reports the
 * medians and their ratio.  This file: the flags, the checks between
 * them, the setup of the blade and the offsets, and the runs.
 *
 * Uses only the public API (include/smart) and the kit.  Exit status: 0;
 * 1 when the run failed (said on stderr); 2 for bad input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

#define TOOL "smart-perf"

const char *const perf_op_names[] = {
	"read", "write", "cas", "faa", "cas-incr", NULL,
};

#define P struct perf_cfg
static const struct kit_flag perf_flags[] = {
	KIT_CHOICE("op", P, op, perf_op_names, "read|write|cas|faa|cas-incr",
		   "operation [read]; cas-incr: read a Zipf-chosen\n"
		   "counter, CAS it +1, retry (guarded)"),
	KIT_SIZE("size", P, size, 1, 1 << 30, "B",
		 "bytes per op (8 for cas/faa) [8]; each coroutine\n"
		 "has a registered buffer of it (rounded up to a power\n"
		 "of two): threads x depth x that beyond 32M grows the\n"
		 "library's pool (buf_pool, 64M) to it + 64M, which\n"
		 "must fit the memory free; --span holds 2 x size"),
	KIT_INT("depth", P, depth, 1, 1024, "D",
		"coroutines per thread, one op in flight each\n"
		"[8; 1 with --lat]"),
	KIT_INT("batch", P, batch, 1, 64, "B",
		"ops queued per sync by each coroutine (1: the op\n"
		"and its sync in one call, smart_read_sync & co.) [1]"),
	KIT_SIZE("span", P, span, 4096, (double)(1ull << 48), "B",
		 "bytes the random offsets spread over, allocated\n"
		 "from the blade and pre-faulted (at most its free\n"
		 "space) [256M]"),
	KIT_INT("dynamic", P, dynamic_ms, 1, 100000, "MS",
		"every MS ms re-draw the active threads from\n"
		"[max(1,3T/8), T] (Smart's Table 1)"),
	KIT_U64("keys", P, keys, 1, (double)(1ull << 32), "N",
		"cas-incr: counters [1000000]"),
	KIT_DOUBLE("zipf", P, zipf, 0, 1, "THETA",
		   "cas-incr: Zipf theta in [0,1), 0 = uniform [0.99]"),
	KIT_FLAG("raw", P, raw,
		 "plain loads/stores/atomics on the mapping,\n"
		 "no framework (embedded shm only): the yardstick"),
	KIT_FLAG("vs-raw", P, vs_raw,
		 "alternate framework and raw runs, report medians"),
	KIT_INT("rounds", P, rounds, 1, 64, "N",
		"runs of each kind for --vs-raw [5]"),
	KIT_FLAG("sweep", P, sweep,
		 "a run per size 2, 4, 8, ... up to --size (perftest's -a;\n"
		 "--size 8M for perftest's range), one row each"),
	KIT_FLAG("lat", P, lat,
		 "idle latency (perftest's *_lat): one thread, one op\n"
		 "in flight, every op timed; min, max, typical, avg,\n"
		 "99% and 99.9%"),
	KIT_END,
};
#undef P

static void perf_cfg_init(struct perf_cfg *c)
{
	memset(c, 0, sizeof(*c));
	kit_common_init(&c->com, TOOL);
	c->com.blade_size = 1 << 30; /* lazy: only the span is touched */
	c->span = 256 << 20;
	c->op = OP_READ;
	c->size = 8;
	c->depth = 0; /* perf_check: 8, or 1 with --lat */
	c->rounds = 5;
	c->keys = 1000000;
	c->zipf = 0.99;
	c->batch = 1;
}

/* The offsets' stride: the op size rounded up to 8 bytes. */
static uint64_t perf_stride(const struct perf_cfg *c)
{
	return c->size < 8 ? 8 : (c->size + 7) & ~UINT64_C(7);
}

/* The registered pool the coroutines' buffers need (each a power of two
 * of at least --size, aligned to its size in the pool: one block more
 * covers the alignment) when the library's default (64M, which it
 * shares with its own bounce and scratch memory) is short: theirs +
 * 64M; 0 when the default does. */
static uint64_t perf_pool(const struct perf_cfg *c)
{
	uint64_t b = 64, need;

	while (b < c->size)
		b <<= 1;
	need = b * ((uint64_t)c->depth * (uint64_t)c->com.threads + 1);
	return need > (UINT64_C(32) << 20) ? need + (UINT64_C(64) << 20) : 0;
}

/* What no single flag can say alone; refusals exit 2. */
static void perf_check(struct perf_cfg *c)
{
	if (!c->depth)
		c->depth = c->lat ? 1 : 8;
	const char *tp = c->com.transport;

	if (c->op >= OP_CAS && c->size != 8)
		kit_bad(TOOL, "size", NULL,
			"--op %s works on 8 bytes, not %" PRIu64,
			perf_op_names[c->op], c->size);
	if ((c->raw || c->vs_raw) &&
	    (c->com.connect.n || (tp && strcmp(tp, "shm"))))
		kit_bad(TOOL, c->raw ? "raw" : "vs-raw", NULL,
			"needs the "
			"embedded shm blade (no --connect, transport shm)");
	if (c->lat && (c->com.threads > 1 || c->depth > 1 || c->batch > 1))
		kit_bad(TOOL, "lat", NULL,
			"times one op at a time: no --threads, --depth or "
			"--batch above 1");
	if ((c->sweep || c->lat) && (c->raw || c->vs_raw || c->dynamic_ms))
		kit_bad(TOOL, c->sweep ? "sweep" : "lat", NULL,
			"not with --raw, --vs-raw or --dynamic");
	if (c->sweep && c->op >= OP_CAS)
		kit_bad(TOOL, "sweep", NULL, "--op %s has one size, 8",
			perf_op_names[c->op]);
	if (c->com.connect.n > 1)
		kit_bad(TOOL, "connect", c->com.connect.v[1],
			"smart-perf "
			"uses one blade");
	if (c->span < 2 * perf_stride(c))
		kit_bad(TOOL, "span", NULL,
			"%" PRIu64 " bytes hold no 2 ops of --size %" PRIu64,
			c->span, c->size);
	if (perf_pool(c) && kit_mem_available() &&
	    perf_pool(c) > kit_mem_available())
		kit_bad(TOOL, "size", NULL,
			"threads x depth x %" PRIu64 " bytes need a "
			"registered pool of %" PRIu64 " MiB, more than the "
			"memory free (%" PRIu64 " MiB)",
			c->size, perf_pool(c) >> 20, kit_mem_available() >> 20);
}

/* Blades are lazy (a page is allocated when first touched): touch every
 * page of the span before the runs, so that no fault lands in a measured
 * window.  Through the embedded blade's mapping for --raw, and with a
 * READ per page through the framework for this process's own mapping of
 * the blade (the first access of a page there faults too). */
static int perf_prefault(struct perf *p)
{
	uint64_t end = p->lo + p->span_len, off, v;
	int rc = 0, n = 0;

	if (p->raw_base)
		for (off = p->lo; off < end; off += 4096)
			((volatile uint8_t *)p->raw_base)[off] = 0;
	for (off = p->lo; !rc && off < end; off += 4096) {
		rc = smart_read(p->w0, smart_gaddr(p->env.blade[0], off), 8,
				&v);
		if (!rc && ++n % 16 == 0)
			rc = smart_sync(p->w0);
	}
	if (!rc)
		rc = smart_sync(p->w0);
	if (rc)
		fprintf(stderr, TOOL ": pre-faulting the span: %s\n",
			smart_strerror(rc));
	return rc;
}

/* The span is allocated from the blade like any client's memory: the ops
 * must not land on what other clients (or the blade's free lists) own
 * when smart-perf runs against a shared smartd.  As much of --span as the
 * blade can give in one piece, halving on SMART_ENOSPC. */
static int perf_span_alloc(struct perf *p)
{
	const struct smart_blade_info *bi = &p->env.info[0];
	uint64_t want = p->cfg->span, min = 2 * p->stride;
	struct smart_alloc_usage u;
	int rc = smart_worker_create(p->env.ctx, &p->w0);

	if (rc)
		return rc;
	if (!smart_alloc_usage(p->w0, p->env.blade[0], &u) && u.free < want)
		want = u.free;
	if (want > bi->alloc_max)
		want = bi->alloc_max;
	if (min < 4096)
		min = 4096;
	for (rc = SMART_ENOSPC; want >= min; want /= 2) {
		rc = smart_alloc(p->w0, p->env.blade[0], want, &p->span_ga);
		if (rc != SMART_ENOSPC)
			break;
	}
	if (rc) {
		fprintf(stderr,
			TOOL ": the blade has no %" PRIu64 " free "
			     "bytes in one piece for the ops (%s)\n",
			min, smart_strerror(rc));
		return rc;
	}
	p->span_len = want;
	p->lo = smart_gaddr_off(p->span_ga);
	return 0;
}

static void perf_span_free(struct perf *p)
{
	if (p->w0 && p->span_len)
		smart_free(p->w0, p->span_ga, p->span_len);
	smart_worker_destroy(p->w0);
	p->w0 = NULL;
	p->span_len = 0;
}

/* The blade, and the offsets the ops go to: a span allocated from the
 * blade, aligned to the op size. */
static int perf_setup(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	char kv[2][48];
	const char *kvs[3] = { NULL };
	uint64_t size;
	void *base;
	int rc, n = 0;

	/* every coroutine is a task; the library's default is 64 */
	snprintf(kv[0], sizeof(kv[0]), "max_tasks=%d", c->depth);
	snprintf(kv[1], sizeof(kv[1]), "buf_pool=%" PRIu64, perf_pool(c));
	if (c->depth > 64)
		kvs[n++] = kv[0];
	if (perf_pool(c))
		kvs[n++] = kv[1];
	rc = kit_env_open(&p->env, &c->com, kvs);
	if (rc)
		return rc;
	/* the transport in force (--opt and SMART_TRANSPORT included) */
	if ((c->raw || c->vs_raw) &&
	    strcmp(smart_ctx_transport(p->env.ctx), "shm")) {
		fprintf(stderr,
			TOOL ": --%s needs the embedded shm blade, not "
			     "transport %s\n",
			c->raw ? "raw" : "vs-raw",
			smart_ctx_transport(p->env.ctx));
		return SMART_EINVAL;
	}
	if (p->env.embedded &&
	    smart_blade_region(p->env.embedded, &base, &size)) {
		fprintf(stderr, TOOL ": the embedded blade has no region\n");
		return SMART_EINVAL;
	}
	p->raw_base = p->env.embedded ? base : NULL;
	p->stride = perf_stride(c);
	rc = perf_span_alloc(p);
	if (rc)
		return rc;
	p->slots = (p->span_len - p->stride) / p->stride;
	if (c->op == OP_CAS_INCR && c->keys > p->slots) {
		fprintf(stderr,
			TOOL ": --keys %" PRIu64 " is more counters "
			     "than the span holds (%" PRIu64 ")\n",
			c->keys, p->slots);
		return SMART_ENOSPC;
	}
	if (c->op == OP_CAS_INCR)
		rc = smart_zipf_init(&p->zipf, c->keys, c->zipf);
	if (rc) {
		fprintf(stderr, TOOL ": zipf: %s\n", smart_strerror(rc));
		return rc;
	}
	return perf_prefault(p);
}

/* The run at the median rank (the lower one for an even count), so that
 * its mops, bytes and latencies are one run's. */
static const struct perf_result *median_run(const struct perf_result *v, int n)
{
	int i, j, below, same, want = (n - 1) / 2;

	for (i = 0; i < n; i++) {
		for (j = 0, below = 0, same = 0; j < n; j++) {
			below += v[j].mops < v[i].mops;
			same += v[j].mops == v[i].mops && j < i;
		}
		if (below + same == want)
			return &v[i];
	}
	return &v[0];
}

/* A run that failed reports no result: one line says when and why
 * (kit_runner_stopped).  Returns SMART_EAGAIN: the failure is said
 * (perf_body says no more). */
static int perf_stopped(struct perf *p, const struct perf_result *r, int rc)
{
	kit_runner_stopped(&p->run, &r->win, p->cfg->com.seconds, &p->env, TOOL,
			   NULL, rc, r->ops, "ops had succeeded");
	return SMART_EAGAIN;
}

/* Alternate framework and raw runs; report the median run of each and
 * the ratio of their rates. */
static int perf_vs_raw(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	struct perf_result *runs;
	const struct perf_result *fw, *raw;
	double ratio;
	int i, k, rc = 0;

	runs = calloc(2 * (size_t)c->rounds, sizeof(*runs));
	if (!runs)
		return SMART_ENOMEM;
	for (i = 0; i < c->rounds && !rc; i++)
		for (k = 0; k < 2; k++) {
			struct perf_result *r = &runs[k * c->rounds + i];

			rc = perf_run_once(p, k, r);
			if (rc) {
				rc = perf_stopped(p, r, rc);
				break;
			}
			if (!c->com.json)
				perf_print_row(p, r, k);
		}
	if (!rc) {
		fw = median_run(runs, c->rounds);
		raw = median_run(runs + c->rounds, c->rounds);
		ratio = fw->mops / raw->mops;
		if (!c->com.json) {
			kit_rule();
			printf(" median of %d alternating runs: smart %.3f Mops, "
			       "raw %.3f Mops, ratio %.1f%%\n",
			       c->rounds, fw->mops, raw->mops, 100 * ratio);
		}
		rc = perf_report(p, fw, 0, ratio);
	}
	free(runs);
	return rc;
}

static int perf_main(struct perf *p)
{
	const struct perf_cfg *c = p->cfg;
	struct perf_result r;
	int rc;

	uint64_t size = c->sweep ? 2 : c->size;

	p->t = calloc((size_t)c->com.threads, sizeof(*p->t));
	if (!p->t)
		return SMART_ENOMEM;
	p->size = c->size;
	if (!c->com.json && c->lat)
		perf_print_lat_header(p);
	else if (!c->com.json)
		perf_print_header(p);
	fflush(stdout); /* the header before a long run */
	if (c->vs_raw)
		return perf_vs_raw(p);
	for (rc = 0; !rc && size <= c->size; size *= 2) {
		p->size = size;
		rc = perf_run_once(p, c->raw, &r);
		if (rc)
			return perf_stopped(p, &r, rc);
		if (!c->com.json && c->lat)
			perf_print_lat_row(p, &r);
		else if (!c->com.json)
			perf_print_row(p, &r, c->raw);
		fflush(stdout);
		rc = perf_report(p, &r, c->raw, -1);
		if (!c->sweep)
			break;
	}
	return rc;
}

/* Setup, the run and teardown: on the main thread, or (--sim) as the
 * first simulated thread. */
static void perf_body(void *arg)
{
	struct perf *p = arg;

	p->rc = perf_setup(p);
	if (!p->rc) {
		p->rc = perf_main(p);
		if (p->rc && p->rc != SMART_EAGAIN)
			fprintf(stderr, TOOL ": %s\n", smart_strerror(p->rc));
	}
	free(p->t);
	perf_span_free(p);
	kit_env_close(&p->env);
}

int main(int argc, char **argv)
{
	struct perf_cfg cfg;
	struct perf p = { .cfg = &cfg };
	struct kit_cli cli = {
		.tool = TOOL,
		.synopsis = TOOL " [flags]",
		.about = "  One-sided op micro-benchmark (perftest style).  "
			 "Without --connect an\n  embedded blade (1G unless "
			 "--blade-size) is started in this process;\n  the ops "
			 "spread over --span bytes allocated from it.\n",
		.group = { { perf_flags, &cfg, NULL },
			   { kit_common_flags, &cfg.com, "common flags" } },
	};
	int rc;

	perf_cfg_init(&cfg);
	kit_common_command(&cfg.com, argc, argv, 1);
	kit_parse(&cli, argc, argv);
	perf_check(&cfg);
	rc = kit_sim_main(&cfg.com, perf_body, &p);
	if (rc)
		fprintf(stderr, TOOL ": --sim: %s\n", smart_strerror(rc));
	return rc || p.rc ? 1 : 0;
}
