/*
 * `smart-bench stream`: windowed stream aggregation (include/smart/stream.h,
 * docs/stream.md) with the engines alternated in one run: slash and uppar
 * with --procs executor processes (one executor each, channels between
 * them), local with --procs threads in one process, and one: a single
 * executor reading the same partitions interleaved record by record.
 *
 * --chan footer runs slash and uppar with FOOTER channels (polled footer
 * and CRC, smart/chan.h) as the engines slash-ft and uppar-ft; --chan
 * both runs them in both modes, alternated with the others in each
 * round, so the IMM and FOOTER figures share the machine's state; their
 * "x slash" and "x uppar" columns are the FOOTER / IMM ratios.  --pareto
 * draws the keys from the generator's bounded Pareto law (shape ALPHA).
 *
 * Every engine reads the same input: --procs partitions of --records
 * records each, generated once before the first fork (seeded, per
 * partition).  An engine's time runs from a start byte every executor
 * process waits for (after its channels are open) to its last result;
 * the parent only waits on pipes meanwhile, so --procs 2 keeps at most 2
 * busy threads.  Each engine's results are collected; --check compares
 * every engine's sorted multiset with the one-thread run's (test_stream
 * checks that against an independent sequential reference).
 *
 * Clock-free columns: channel bytes and slots per input record, entries
 * shipped per epoch (SLASH: delta entries, UPPAR: records), epochs.
 * Trigger lag: p50/p99 of the time from the epoch end (swap) that
 * completed a window to its emission, in round 0 (one host's clock; with
 * several executors the largest of theirs).  Progress: executor 0 of each
 * engine prints its pushed records on stderr once a second and at the
 * end of its input (kit_progress, like the other workloads).
 *
 * Cross-host (--executor I --peer A0 --peer A1 ...): this process is
 * executor I of E = the number of --peer, listening at the I-th address
 * (secret from --secret-file, the same on every host), running one
 * engine (slash or uppar) once.  Before its executor opens any channel
 * it waits until every peer listens: a probe dial from an endpoint of a
 * ctx of its own, repeated while refused, up to --dial-wait seconds.
 * The probe never polls the executor's endpoint, so no peer's channel
 * can reach it before smart_stream_create listens for channels.  Its
 * results are reduced to a count and an order-independent digest (the
 * sum and xor of a hash per result); --check computes the reference
 * locally (the one-thread run over all E partitions, generated here from
 * the same seeds, before the endpoint listens) and compares the digest
 * of the results of the keys this executor leads.  Every executor
 * checking its own share checks the whole: the shares are disjoint and
 * cover the reference.
 *
 * Invariants: the figures of an engine are the median of its rounds;
 * --check that finds a difference fails the run.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "smart/chan.h"
#include "smart/rpc.h"
#include "smart/secret.h"
#include "smart/stream.h"

#define E_SLASH	   0
#define E_UPPAR	   1
#define E_LOCAL	   2
#define E_ONE	   3
#define E_SLASH_FT 4 /* slash and uppar over FOOTER channels */
#define E_UPPAR_FT 5
#define E_SLASH_CK 6 /* slash checkpointing (--recover) */
#define NENG	   7
#define CH_IMM	   0 /* --chan */
#define CH_FOOTER  1
#define CH_BOTH	   2
#define PROCS_MAX  8
#define ROUNDS_MAX 16
#define ADDR	   64
#define CHUNK	   256
#define PROBE_MS   500
#define PROBE_GAP  100000 /* us between refused probe dials */

static const char *const eng_choices[] = { "all",   "slash", "uppar",
					   "local", "one",   NULL };
static const char *const eng_names[NENG] = { "slash",	"uppar",    "local",
					     "one",	"slash-ft", "uppar-ft",
					     "slash-ck" };
static const char *const prog_names[NENG] = {
	"stream slash executor 0",    "stream uppar executor 0",
	"stream local thread 0",      "stream one",
	"stream slash-ft executor 0", "stream uppar-ft executor 0",
	"stream slash-ck executor 0"
};
static const char *const chan_names[] = { "imm", "footer", "both", NULL };
static const char *const wl_names[] = { "ysb",	"cm",  "nb7", "ro",
					"nb11", "nb8", NULL };
static const char *const lag_keys[NENG] = {
	"slash_lag_p99_ms",   "uppar_lag_p99_ms",    "local_lag_p99_ms",
	"one_lag_p99_ms",     "slash_ft_lag_p99_ms", "uppar_ft_lag_p99_ms",
	"slash_ck_lag_p99_ms"
};
static const uint32_t eng_kind[NENG] = { SMART_STREAM_SLASH, SMART_STREAM_UPPAR,
					 SMART_STREAM_LOCAL, SMART_STREAM_LOCAL,
					 SMART_STREAM_SLASH, SMART_STREAM_UPPAR,
					 SMART_STREAM_SLASH };

/* An order-independent reduction of a multiset of results. */
struct digest {
	uint64_t n, sum, xor;
};

struct rep {
	uint64_t ns, nres;
	struct smart_stream_stats st;
};

struct sb {
	struct bench_run *run;
	int wl, engine, procs, rounds, check, chan, recover;
	uint64_t records, keys, epoch, window;
	double zipf, pareto;
	char secret[32];
	struct smart_stream_query q;
	uint8_t *in[PROCS_MAX], *mixed;
	double rps[NENG][ROUNDS_MAX];
	struct smart_stream_stats st[NENG];
	struct smart_stream_result *res[NENG];
	size_t nres[NENG];
	double med[NENG];
	int differs[NENG];
	/* cross-host */
	struct kit_strs peer;
	int executor, dial_wait;
	uint64_t dial_retries, xns;
	struct digest mine, ref;
	struct smart_stream_stats xst;
	/* --recover: slash-ck's checkpoint area, on an embedded blade */
	smart_blade_t *blade;
	char blade_addr[ADDR];
	smart_ctx_t *ck_ctx; /* the parent's: allocates and zeroes the area */
	smart_worker_t *ck_w;
	struct smart_stream_ckpt_config ck;
	uint64_t ck_bytes;
};

#define R struct sb
static const struct kit_flag sb_flags[] = {
	KIT_CHOICE("workload", R, wl, wl_names, "ysb|cm|nb7|ro|nb11|nb8",
		   "the workload; nb8 emits its join's (window, person, "
		   "auction) pairs, counted and --check'ed [ysb]"),
	KIT_CHOICE("engine", R, engine, eng_choices,
		   "all|slash|uppar|local|one",
		   "engines; all: every one, alternated [all]"),
	KIT_INT("procs", R, procs, 1, PROCS_MAX, "N",
		"executors: processes (slash, uppar), threads (local) [2]"),
	KIT_U64("records", R, records, 1000, 1ULL << 32, "N",
		"input records per executor [1000000]"),
	KIT_U64("keys", R, keys, 1, 1ULL << 40, "N", "distinct keys [10000]"),
	KIT_DOUBLE("zipf", R, zipf, 0, 0.999, "THETA",
		   "key skew, 0: uniform [0]"),
	KIT_DOUBLE("pareto", R, pareto, 0, 100, "ALPHA",
		   "key skew: a bounded Pareto law of this shape (0.001..100; "
		   "not with --zipf), 0: off [0]"),
	KIT_CHOICE("chan", R, chan, chan_names, "imm|footer|both",
		   "slash and uppar's channel mode; both: each engine in "
		   "both, alternated (slash-ft, uppar-ft) [imm]"),
	KIT_U64("epoch", R, epoch, 16, 1ULL << 31, "N",
		"input records per epoch [65536]"),
	KIT_U64("window", R, window, 1, 1ULL << 40, "N",
		"window length (session: gap) in records of a partition "
		"[the workload's]"),
	KIT_INT("rounds", R, rounds, 1, ROUNDS_MAX, "N",
		"rounds, every engine once each, alternated [3]"),
	KIT_FLAG("check", R, check,
		 "compare every engine's results with the one-thread run's"),
	KIT_FLAG("recover", R, recover,
		 "also run slash with exactly-once recovery on (slash-ck: "
		 "a checkpoint per epoch in an embedded blade; "
		 "docs/stream.md §11)"),
	KIT_STRS("peer", R, peer, PROCS_MAX, "HOST:PORT",
		 "cross-host: executor i's address, in order, once each "
		 "(E = how many; needs --executor, --secret-file)"),
	KIT_INT("executor", R, executor, 0, PROCS_MAX - 1, "I",
		"cross-host: which --peer this process is [0]"),
	KIT_INT("dial-wait", R, dial_wait, 1, 3600, "S",
		"cross-host: how long to wait for the peers to listen [60]"),
	KIT_END,
};
#undef R

static const struct kit_col sb_csv[] = {
	{ "workload", "workload", NULL },
	{ "procs", "procs", NULL },
	{ "keys", "keys", NULL },
	{ "slash_rps", "slash_rps", NULL },
	{ "uppar_rps", "uppar_rps", NULL },
	{ "local_rps", "local_rps", NULL },
	{ "one_rps", "one_rps", NULL },
	{ "slash_ft_rps", "slash_ft_rps", NULL },
	{ "uppar_ft_rps", "uppar_ft_rps", NULL },
	{ "slash_ck_rps", "slash_ck_rps", NULL },
	{ "slash_ck_ckpt_bytes_per_rec", "slash_ck_ckpt_bytes_per_rec", NULL },
	{ "slash_bytes_per_rec", "slash_bytes_per_rec", NULL },
	{ "uppar_bytes_per_rec", "uppar_bytes_per_rec", NULL },
	{ "slash_ft_bytes_per_rec", "slash_ft_bytes_per_rec", NULL },
	{ "uppar_ft_bytes_per_rec", "uppar_ft_bytes_per_rec", NULL },
	{ "slash_lag_p99_ms", "slash_lag_p99_ms", NULL },
	{ "uppar_lag_p99_ms", "uppar_lag_p99_ms", NULL },
	{ "check", "check", NULL },
	{ NULL, NULL, NULL },
};

static void *sb_create(struct bench_run *r)
{
	struct sb *b = calloc(1, sizeof(*b));

	if (b)
		b->run = r;
	return b;
}

/* A cross-host run: one engine of the distributed two, E = the peers,
 * once, a secret from a file (the one the peers read). */
static void cross_check(struct sb *b, struct bench_run *r)
{
	if (b->peer.n < 2)
		kit_bad(BENCH_TOOL, "peer", NULL,
			"give every executor's address, at least two");
	if (b->procs != 2 && b->procs != b->peer.n) /* 2: unset, or right */
		kit_bad(BENCH_TOOL, "procs", NULL, "is the number of --peer");
	b->procs = b->peer.n;
	if (b->executor >= b->peer.n)
		kit_bad(BENCH_TOOL, "executor", NULL,
			"is below the number of --peer");
	if (b->engine != E_SLASH + 1 && b->engine != E_UPPAR + 1)
		kit_bad(BENCH_TOOL, "engine", NULL,
			"cross-host runs one engine: slash or uppar");
	if (b->chan == CH_BOTH)
		kit_bad(BENCH_TOOL, "chan", NULL,
			"cross-host runs one mode: imm or footer");
	if (b->rounds != 3 && b->rounds != 1) /* 3: unset */
		kit_bad(BENCH_TOOL, "rounds", NULL, "cross-host runs once");
	b->rounds = 1;
	if (!r->com.secret_file && !getenv("SMART_SECRET_FILE"))
		kit_bad(BENCH_TOOL, "secret-file", NULL,
			"a cross-host run needs the peers' shared secret");
	if (!b->dial_wait)
		b->dial_wait = 60;
}

static void sb_check(void *m, struct bench_run *r)
{
	struct sb *b = m;

	(void)r;
	if (!b->procs)
		b->procs = 2;
	if (!b->records)
		b->records = 1000000;
	if (!b->keys)
		b->keys = 10000;
	if (!b->epoch)
		b->epoch = 65536;
	if (!b->rounds)
		b->rounds = 3;
	if (b->pareto && b->zipf)
		kit_bad(BENCH_TOOL, "pareto", NULL, "is not with --zipf");
	if (b->pareto && b->pareto < 0.001)
		kit_bad(BENCH_TOOL, "pareto", NULL, "is 0 or 0.001..100");
	if (b->recover &&
	    (b->peer.n || (b->engine && b->engine != E_SLASH + 1)))
		kit_bad(BENCH_TOOL, "recover", NULL,
			"runs slash on one host (--engine all or slash)");
	if (b->peer.n)
		cross_check(b, r);
	else if (b->executor || b->dial_wait)
		kit_bad(BENCH_TOOL, b->executor ? "executor" : "dial-wait",
			NULL, "is for a cross-host run (--peer)");
}

/* Engine e runs: chosen by --engine (slash-ft, uppar-ft with slash and
 * uppar) and, for slash and uppar, by --chan. */
static int on(const struct sb *b, int e)
{
	int base = e >= E_SLASH_FT ? e - E_SLASH_FT : e;

	if (e == E_SLASH_CK)
		return b->recover;
	if (b->engine && b->engine - 1 != base)
		return 0;
	if (e >= E_SLASH_FT)
		return b->chan != CH_IMM;
	return e > E_UPPAR || b->chan != CH_FOOTER;
}

/* Slash and uppar: one executor process each, over channels. */
static int distributed(int e)
{
	return eng_kind[e] != SMART_STREAM_LOCAL;
}

/* The channel mode of engine e (cross-host: --chan's). */
static uint32_t chan_mode(const struct sb *b, int e)
{
	if (e == E_SLASH_CK)
		return SMART_CHAN_IMM;
	return e >= E_SLASH_FT || (b->peer.n && b->chan == CH_FOOTER) ?
		       SMART_CHAN_FOOTER :
		       SMART_CHAN_IMM;
}

static int recover_setup(struct sb *b);

static int sb_setup(void *m, struct bench_run *r)
{
	struct sb *b = m;
	size_t rb;

	if ((!b->peer.n &&
	     smart_secret_generate(b->secret, sizeof(b->secret))) ||
	    smart_stream_gen_query((uint32_t)b->wl, &b->q))
		return SMART_ESYS;
	if (b->window)
		b->q.size = b->window;
	rb = b->q.record_bytes;
	b->mixed = malloc(b->records * b->procs * rb);
	if (!b->mixed)
		return SMART_ENOMEM;
	for (int p = 0; p < b->procs; p++) {
		struct smart_stream_gen g = { (uint32_t)b->wl,
					      (uint32_t)b->procs,
					      (uint32_t)p,
					      r->com.seed,
					      b->keys,
					      (uint32_t)(b->zipf * 1000),
					      0,
					      (uint32_t)(b->pareto * 1000 +
							 0.5) };

		b->in[p] = malloc(b->records * rb);
		if (!b->in[p] ||
		    smart_stream_gen_fill(&g, 0, b->records, b->in[p]))
			return SMART_EINVAL;
		for (uint64_t i = 0; i < b->records; i++)
			memcpy(b->mixed + (i * b->procs + p) * rb,
			       b->in[p] + i * rb, rb);
	}
	return b->recover ? recover_setup(b) : 0;
}

/* --recover: the checkpoint area's sizes (every part holds at most every
 * result of the run, and its leader state a few open windows of every
 * key, NB8 also a window's rows: more is SMART_ENOSPC, said by the
 * executor), and an embedded blade holding it. */
#define CK_AREA_MAX (2ULL << 30)
static int ctx_make(struct sb *b, smart_ctx_t **ctx);

static int recover_setup(struct sb *b)
{
	struct smart_blade_config bc;
	uint64_t all = b->records * (uint64_t)b->procs,
		 ent = 4 * b->keys + 4096 +
		       (b->wl == SMART_STREAM_GEN_NB8 ? 4 * b->q.size : 0);
	uint16_t blade;
	int rc;

	smart_stream_ckpt_config_init(&b->ck);
	b->ck.executors = (uint32_t)b->procs;
	b->ck.max_entries = (uint32_t)(ent < (1u << 24) ? ent : (1u << 24));
	b->ck.max_results = (uint32_t)(all < (1u << 28) ? all : (1u << 28));
	if (smart_stream_ckpt_bytes(&b->ck, &b->ck_bytes))
		return SMART_EINVAL;
	if (b->ck_bytes > CK_AREA_MAX) {
		fprintf(stderr,
			BENCH_TOOL " stream: --recover: the checkpoint area "
				   "would take %" PRIu64 " MiB (at most %llu): "
				   "fewer --records or --keys\n",
			b->ck_bytes >> 20, CK_AREA_MAX >> 20);
		return SMART_ENOSPC;
	}
	smart_blade_config_init(&bc);
	bc.size = b->ck_bytes + (64ULL << 20);
	bc.listen = "127.0.0.1:0";
	bc.secret = b->secret;
	bc.secret_len = sizeof(b->secret);
	rc = smart_blade_create(&bc, &b->blade);
	if (rc)
		return rc;
	snprintf(b->blade_addr, sizeof(b->blade_addr), "%s",
		 smart_blade_address(b->blade));
	rc = ctx_make(b, &b->ck_ctx);
	if (!rc)
		rc = smart_ctx_connect(b->ck_ctx, b->blade_addr, &blade);
	if (!rc)
		rc = smart_worker_create(b->ck_ctx, &b->ck_w);
	if (!rc)
		rc = smart_alloc(b->ck_w, blade, b->ck_bytes, &b->ck.base);
	return rc;
}

/* Before each slash-ck run: the area zero (a fresh stream's). */
static int recover_zero(struct sb *b)
{
	const uint64_t chunk = 64 << 10;
	void *buf;
	int rc = smart_buf_alloc(b->ck_w, chunk, &buf);

	if (rc)
		return rc;
	memset(buf, 0, chunk);
	for (uint64_t off = 0; off < b->ck_bytes && !rc; off += chunk)
		rc = smart_write_sync(b->ck_w, smart_gaddr_add(b->ck.base, off),
				      buf,
				      b->ck_bytes - off < chunk ?
					      b->ck_bytes - off :
					      chunk);
	smart_buf_free(b->ck_w, buf);
	return rc;
}

static int ctx_make(struct sb *b, smart_ctx_t **ctx)
{
	char pool[40];
	const char *const kvs[] = { pool, NULL };
	smart_opts_t *so;
	int rc;

	uint64_t slot = 1ULL << 20;

	/* --recover: attach registers a buffer of one checkpoint slot (the
	 * pool hands out powers of two: room for two of them) */
	while (b->recover && slot < (uint64_t)b->ck.max_entries * 48 + 4096)
		slot <<= 1;
	snprintf(pool, sizeof(pool), "buf_pool=%" PRIu64 "M",
		 4 + (b->recover ? 2 * (slot >> 20) : 0));
	rc = kit_opts_build(&b->run->com, kvs, &so);

	if (rc)
		return rc;
	rc = smart_ctx_create(so, ctx);
	smart_opts_destroy(so);
	if (!rc && !b->peer.n) /* cross-host: the ctx read --secret-file */
		rc = smart_ctx_set_secret(*ctx, b->secret, sizeof(b->secret));
	return rc;
}

static void io(int fd, const void *p, size_t n, int wr)
{
	for (size_t k = 0; k < n;) {
		ssize_t got = wr ? write(fd, (const char *)p + k, n - k) :
				   read(fd, (char *)p + k, n - k);

		if (got <= 0) {
			fprintf(stderr, BENCH_TOOL " stream: an executor "
						   "process failed\n");
			_exit(3);
		}
		k += (size_t)got;
	}
}

/* ---- an executor (a child process, or a thread of one) ----------------- */

struct ex {
	struct sb *b;
	int e, index, E;
	const uint8_t *in;
	uint64_t n;
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_stream_hub_t *hub;
	const char *const *peers;
	smart_stream_t *s;
	struct smart_stream_result *res;
	size_t nres, cap;
	struct smart_stream_stats st;
	int rc;
};

static int ex_open(struct ex *x)
{
	struct smart_rpc_config rc = { SMART_RPC_CONFIG_INIT,
				       .timeout_ms = 60000 };
	int err = ctx_make(x->b, &x->ctx);

	if (!err && x->e == E_SLASH_CK) {
		uint16_t blade;

		err = smart_ctx_connect(x->ctx, x->b->blade_addr, &blade);
	}
	if (!err)
		err = smart_worker_create(x->ctx, &x->w);
	if (!err && x->peers)
		err = smart_rpc_create(x->w, &rc, &x->rpc);
	return err;
}

/* slash-ck: the executor's part of the (zeroed) area, fresh. */
static int ex_attach(struct ex *x)
{
	uint64_t resume = 1;
	int rc;

	if (x->e != E_SLASH_CK)
		return 0;
	rc = smart_stream_ckpt_attach(x->s, &x->b->ck, &resume);
	return rc ? rc : resume ? SMART_EPROTO : 0;
}

static int ex_create(struct ex *x)
{
	struct smart_stream_config c;

	smart_stream_config_init(&c);
	c.engine = eng_kind[x->e];
	c.executors = (uint32_t)x->E;
	c.index = (uint32_t)x->index;
	c.epoch_records = (uint32_t)x->b->epoch;
	c.rpc = x->rpc;
	c.peers = x->peers;
	c.hub = x->hub;
	c.max_entries = 1u << 26;
	c.query = x->b->q;
	if (distributed(x->e))
		c.chan_mode = chan_mode(x->b, x->e);
	return smart_stream_create(x->w, &c, &x->s);
}

static int ex_collect(struct ex *x)
{
	struct smart_stream_result buf[256];
	size_t k;
	int rc;

	while ((rc = smart_stream_poll(x->s, buf, 256, &k)) == 0) {
		if (x->nres + k > x->cap) {
			x->cap = (x->nres + k) * 2;
			x->res = realloc(x->res, x->cap * sizeof(*buf));
			if (!x->res)
				return SMART_ENOMEM;
		}
		if (k) /* nothing yet: x->res may still be NULL */
			memcpy(x->res + x->nres, buf, k * sizeof(*buf));
		x->nres += k;
	}
	return rc == SMART_ENOENT ? 0 : rc;
}

/* Executor 0 of each engine reports its own input on stderr, at most
 * once a second and once at its end (the others run alike). */
static int ex_push(struct ex *x)
{
	size_t rb = x->b->q.record_bytes;
	struct kit_progress p;
	int rc = 0;

	if (!x->index)
		kit_progress_start(&p, prog_names[x->e], "records", x->n);
	for (uint64_t i = 0; i < x->n && !rc; i += CHUNK) {
		rc = smart_stream_push(x->s, x->in + i * rb,
				       x->n - i < CHUNK ? x->n - i : CHUNK);
		if (!x->index) {
			atomic_store(&p.done, i);
			kit_progress_tick(&p);
		}
	}
	if (!x->index && !rc) {
		atomic_store(&p.done, x->n);
		kit_progress_end(&p);
	}
	return rc;
}

static int ex_run(struct ex *x)
{
	int rc = ex_push(x);

	if (!rc)
		rc = smart_stream_finish(x->s);
	if (!rc)
		rc = ex_collect(x);
	smart_stream_stats(x->s, x->w, &x->st);
	return rc;
}

static void ex_close(struct ex *x)
{
	smart_stream_close(x->s, x->w);
	smart_rpc_destroy(x->rpc);
	smart_worker_destroy(x->w);
	smart_ctx_destroy(x->ctx);
}

/* Counters add up; the lag percentiles of several executors are
 * reported as the largest (a bound, not a merged percentile). */
static void stats_add(struct smart_stream_stats *d,
		      const struct smart_stream_stats *a)
{
	uint64_t p50 = d->lag_p50_ns > a->lag_p50_ns ? d->lag_p50_ns :
						       a->lag_p50_ns,
		 p99 = d->lag_p99_ns > a->lag_p99_ns ? d->lag_p99_ns :
						       a->lag_p99_ns;

	for (size_t k = 0; k < sizeof(*d) / 8; k++)
		((uint64_t *)d)[k] += ((const uint64_t *)a)[k];
	d->lag_p50_ns = p50;
	d->lag_p99_ns = p99;
}

static void send_rep(int fd, uint64_t ns, struct ex *xs, int n)
{
	struct rep r = { ns, 0, { 0 } };

	for (int i = 0; i < n; i++) {
		stats_add(&r.st, &xs[i].st);
		r.nres += xs[i].nres;
	}
	io(fd, &r, sizeof(r), 1);
	for (int i = 0; i < n; i++)
		io(fd, xs[i].res, xs[i].nres * sizeof(*xs[i].res), 1);
}

static void child_fail(int e, int index, const char *what, int rc, int st)
{
	fprintf(stderr, BENCH_TOOL " stream: %s executor %d: %s: %s\n",
		eng_names[e], index, what, smart_strerror(rc));
	_exit(st);
}

/* A distributed executor process: its address up, every address down,
 * ready up, the start byte down, then its report up. */
static void child_dist(struct sb *b, int e, int index, int up, int down)
{
	char addrs[PROCS_MAX][ADDR] = { { 0 } }, addr[ADDR] = { 0 }, go;
	const char *peers[PROCS_MAX];
	struct ex x = { .b = b,
			.e = e,
			.index = index,
			.E = b->procs,
			.in = b->in[index],
			.n = b->records };
	uint64_t t0;
	int rc;

	for (int i = 0; i < b->procs; i++)
		peers[i] = addrs[i];
	x.peers = peers;
	if (ex_open(&x) || smart_rpc_listen(x.rpc, "127.0.0.1:0") ||
	    smart_rpc_listen_addr(x.rpc, addr, sizeof(addr)))
		_exit(4);
	io(up, addr, ADDR, 1);
	io(down, addrs, sizeof(addrs), 0);
	rc = ex_create(&x);
	if (!rc)
		rc = ex_attach(&x);
	if (rc)
		child_fail(e, index, "setup", rc, 5);
	io(up, "r", 1, 1);
	io(down, &go, 1, 0);
	t0 = smart_now_ns();
	rc = ex_run(&x);
	if (rc)
		child_fail(e, index, "run", rc, 6);
	send_rep(up, smart_now_ns() - t0, &x, 1);
	ex_close(&x);
	_exit(0);
}

struct lgroup {
	struct ex x[PROCS_MAX];
	pthread_barrier_t ready, go;
};

static void *local_thread(void *arg)
{
	struct ex *x = arg;
	struct lgroup *g = (void *)(x - x->index);

	x->rc = ex_open(x);
	if (!x->rc)
		x->rc = ex_create(x);
	pthread_barrier_wait(&g->ready);
	pthread_barrier_wait(&g->go);
	if (!x->rc)
		x->rc = ex_run(x);
	return NULL;
}

/* LOCAL (threads) or ONE (one thread, the interleaved input). */
static void child_local(struct sb *b, int e, int up, int down)
{
	static struct lgroup g;
	int T = e == E_ONE ? 1 : b->procs;
	pthread_t th[PROCS_MAX];
	smart_stream_hub_t *hub;
	uint64_t t0;
	char go;

	if (smart_stream_hub_create((uint32_t)T, 1u << 26, &hub))
		_exit(4);
	pthread_barrier_init(&g.ready, NULL, (unsigned)T + 1);
	pthread_barrier_init(&g.go, NULL, (unsigned)T + 1);
	for (int i = 0; i < T; i++) {
		g.x[i] = (struct ex){ .b = b,
				      .e = e,
				      .index = i,
				      .E = T,
				      .in = e == E_ONE ? b->mixed : b->in[i],
				      .n = e == E_ONE ? b->records * b->procs :
							b->records };
		g.x[i].hub = hub;
		pthread_create(&th[i], NULL, local_thread, &g.x[i]);
	}
	pthread_barrier_wait(&g.ready);
	io(up, (char[ADDR]){ 0 }, ADDR, 1);
	io(up, "r", 1, 1);
	io(down, &go, 1, 0);
	t0 = smart_now_ns();
	pthread_barrier_wait(&g.go);
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		if (g.x[i].rc)
			_exit(6);
	}
	send_rep(up, smart_now_ns() - t0, g.x, T);
	_exit(0);
}

/* ---- the parent ----------------------------------------------------- */

struct kid {
	pid_t pid;
	int up, down;
};

static int spawn(struct sb *b, int e, int index, struct kid *k)
{
	int u[2], d[2];

	if (pipe(u) || pipe(d))
		return SMART_ESYS;
	fflush(NULL);
	k->pid = fork();
	if (k->pid < 0)
		return SMART_ESYS;
	if (!k->pid) {
		close(u[0]);
		close(d[1]);
		if (distributed(e))
			child_dist(b, e, index, u[1], d[0]);
		child_local(b, e, u[1], d[0]);
	}
	close(u[1]);
	close(d[0]);
	k->up = u[0];
	k->down = d[1];
	return 0;
}

static int take_rep(struct sb *b, int e, struct kid *k, uint64_t *ns, int keep)
{
	struct rep r = { 0 }; /* io() exits on a short read; GCC under ASan
			       * cannot see that */
	size_t bytes;
	void *res;
	int st;

	io(k->up, &r, sizeof(r), 0);
	bytes = r.nres * sizeof(struct smart_stream_result);
	res = malloc(bytes ? bytes : 1);
	if (!res)
		return SMART_ENOMEM;
	io(k->up, res, bytes, 0);
	*ns = r.ns > *ns ? r.ns : *ns;
	if (keep) {
		void *p = realloc(b->res[e],
				  (b->nres[e] + r.nres) * sizeof(*b->res[e]) +
					  1);

		if (!p) {
			free(res);
			return SMART_ENOMEM;
		}
		b->res[e] = p;
		if (bytes) /* none: res may be NULL */
			memcpy(b->res[e] + b->nres[e], res, bytes);
		b->nres[e] += r.nres;
		stats_add(&b->st[e], &r.st);
	}
	free(res);
	waitpid(k->pid, &st, 0);
	close(k->up);
	close(k->down);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : SMART_ECONN;
}

static int run_engine(struct sb *b, int e, int round)
{
	int n = distributed(e) ? b->procs : 1, rc = 0;
	char addrs[PROCS_MAX][ADDR] = { { 0 } }, c;
	struct kid k[PROCS_MAX];
	uint64_t ns = 0;

	if (e == E_SLASH_CK)
		rc = recover_zero(b);
	for (int i = 0; i < n && !rc; i++)
		rc = spawn(b, e, i, &k[i]);
	if (rc)
		return rc;
	for (int i = 0; i < n; i++)
		io(k[i].up, addrs[i], ADDR, 0);
	if (distributed(e))
		for (int i = 0; i < n; i++)
			io(k[i].down, addrs, sizeof(addrs), 1);
	for (int i = 0; i < n; i++)
		io(k[i].up, &c, 1, 0);
	for (int i = 0; i < n; i++)
		io(k[i].down, "g", 1, 1);
	for (int i = 0; i < n && !rc; i++)
		rc = take_rep(b, e, &k[i], &ns, round == 0);
	b->rps[e][round] = ns ? (double)(b->records * b->procs) / (ns / 1e9) :
				0;
	return rc;
}

/* ---- cross-host: one executor of E, its peers elsewhere ------------- */

static void digest_add(struct digest *d, const struct smart_stream_result *r)
{
	uint64_t h = smart_hash64(r, sizeof(*r), 0x5d16e57);

	d->n++;
	d->sum += h;
	d->xor ^= h;
}

/* The reference share of this executor: the one-thread run over every
 * partition (in this process, before the endpoint listens), its results
 * of the keys this executor leads. */
static int cross_reference(struct sb *b)
{
	struct ex x = { .b = b,
			.e = E_ONE,
			.E = 1,
			.in = b->mixed,
			.n = b->records * b->procs };
	uint32_t E = (uint32_t)b->procs;
	int rc = smart_stream_hub_create(1, 1u << 26, &x.hub);

	if (!rc)
		rc = ex_open(&x);
	if (!rc)
		rc = ex_create(&x);
	if (!rc)
		rc = ex_run(&x);
	for (size_t i = 0; !rc && i < x.nres; i++)
		if (smart_stream_key_owner(x.res[i].key, E) ==
		    (uint32_t)b->executor)
			digest_add(&b->ref, &x.res[i]);
	ex_close(&x);
	smart_stream_hub_destroy(x.hub);
	free(x.res);
	return rc;
}

/* One probe dial: 0 when addr listens (the handshake done, or left
 * waiting: a peer before its smart_stream_create does not poll),
 * SMART_ECONN while refused, else the error. */
static int probe_once(smart_rpc_t *rpc, const char *addr)
{
	smart_rpc_conn_t *c;
	int rc = smart_rpc_connect(rpc, addr, &c);

	if (!rc)
		smart_rpc_close(c);
	return rc == SMART_ETIMEDOUT ? 0 : rc;
}

static int probe_all(struct sb *b, smart_rpc_t *rpc)
{
	uint64_t end = smart_now_ns() + (uint64_t)b->dial_wait * 1000000000ULL;
	int rc = 0;

	for (int i = 0; i < b->peer.n && !rc; i++) {
		while (i != b->executor &&
		       (rc = probe_once(rpc, b->peer.v[i])) == SMART_ECONN &&
		       smart_now_ns() < end) {
			if (!b->dial_retries++)
				fprintf(stderr,
					BENCH_TOOL " stream: waiting for %s "
						   "(not listening yet)\n",
					b->peer.v[i]);
			usleep(PROBE_GAP);
		}
		if (rc)
			fprintf(stderr, BENCH_TOOL " stream: peer %s: %s\n",
				b->peer.v[i], smart_strerror(rc));
	}
	return rc;
}

/* Every peer listening, probed from an endpoint of its own ctx (its
 * dials poll only that worker, never the executor's endpoint). */
static int cross_wait_peers(struct sb *b)
{
	struct smart_rpc_config c = { SMART_RPC_CONFIG_INIT,
				      .timeout_ms = PROBE_MS };
	smart_ctx_t *ctx = NULL;
	smart_worker_t *w = NULL;
	smart_rpc_t *rpc = NULL;
	int rc = ctx_make(b, &ctx);

	if (!rc)
		rc = smart_worker_create(ctx, &w);
	if (!rc)
		rc = smart_rpc_create(w, &c, &rpc);
	if (!rc)
		rc = probe_all(b, rpc);
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return rc;
}

static int cross_run(struct sb *b)
{
	struct ex x = { .b = b,
			.e = b->engine - 1,
			.index = b->executor,
			.E = b->procs,
			.in = b->in[b->executor],
			.n = b->records,
			.peers = b->peer.v };
	uint64_t t0;
	int rc = b->check ? cross_reference(b) : 0;

	if (!rc)
		rc = ex_open(&x);
	if (!rc)
		rc = smart_rpc_listen(x.rpc, b->peer.v[b->executor]);
	if (!rc) /* nothing polls x.rpc until smart_stream_create */
		rc = cross_wait_peers(b);
	if (!rc)
		rc = ex_create(&x);
	t0 = smart_now_ns();
	if (!rc)
		rc = ex_run(&x);
	b->xns = smart_now_ns() - t0;
	b->xst = x.st;
	for (size_t i = 0; i < x.nres; i++)
		digest_add(&b->mine, &x.res[i]);
	ex_close(&x);
	free(x.res);
	if (rc)
		fprintf(stderr, BENCH_TOOL " stream: executor %d: %s\n",
			b->executor, smart_strerror(rc));
	return rc;
}

static int cross_report(struct sb *b, struct kit_rec *rec, int json)
{
	int equal = b->mine.n == b->ref.n && b->mine.sum == b->ref.sum &&
		    b->mine.xor == b->ref.xor
		;
	double rps = b->xns ? (double)b->records / (b->xns / 1e9) : 0;
	const char *ck = !b->check ? "off" : equal ? "equal" : "differs";
	char hex[40];

	if (!json)
		printf("stream %s %s: executor %d of %d, %" PRIu64
		       " records in %.3f s, %.0f records/s, %.3f chB/rec, "
		       "%" PRIu64 " epochs\nresults %" PRIu64
		       " digest %016" PRIx64 "/%016" PRIx64
		       "; reference (keys led here) %" PRIu64
		       " digest %016" PRIx64 "/%016" PRIx64 ": check %s\n",
		       wl_names[b->wl], eng_names[b->engine - 1], b->executor,
		       b->procs, b->records, b->xns / 1e9, rps,
		       (double)b->xst.chan_bytes / (double)b->records,
		       b->xst.epochs, b->mine.n, b->mine.sum, b->mine.xor,
		       b->ref.n, b->ref.sum, b->ref.xor, ck);
	kit_rec_str(rec, "workload", wl_names[b->wl]);
	kit_rec_str(rec, "engine", eng_names[b->engine - 1]);
	kit_rec_num(rec, "executor", "%d", b->executor);
	kit_rec_num(rec, "executors", "%d", b->procs);
	kit_rec_num(rec, "records", "%" PRIu64, b->records);
	kit_rec_num(rec, "ns", "%" PRIu64, b->xns);
	kit_rec_num(rec, "rps", "%.0f", rps);
	kit_rec_num(rec, "bytes_per_rec", "%.3f",
		    (double)b->xst.chan_bytes / (double)b->records);
	kit_rec_num(rec, "epochs", "%" PRIu64, b->xst.epochs);
	kit_rec_num(rec, "dial_retries", "%" PRIu64, b->dial_retries);
	kit_rec_num(rec, "results", "%" PRIu64, b->mine.n);
	snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64, b->mine.sum,
		 b->mine.xor);
	kit_rec_str(rec, "digest", hex);
	kit_rec_num(rec, "ref_results", "%" PRIu64, b->ref.n);
	snprintf(hex, sizeof(hex), "%016" PRIx64 "%016" PRIx64, b->ref.sum,
		 b->ref.xor);
	kit_rec_str(rec, "ref_digest", hex);
	kit_rec_str(rec, "check", ck);
	if (b->check && !equal)
		fprintf(stderr, BENCH_TOOL " stream: results differ\n");
	return b->check && !equal ? SMART_EPROTO : 0;
}

static int cmp_res(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct smart_stream_result));
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int sb_run(void *m, struct bench_run *r)
{
	struct sb *b = m;
	int rc = 0;

	(void)r;
	if (b->peer.n)
		return cross_run(b);
	for (int round = 0; round < b->rounds && !rc; round++)
		for (int e = 0; e < NENG && !rc; e++)
			if (on(b, e) || (b->check && e == E_ONE))
				rc = run_engine(b, e, round);
	if (rc) {
		fprintf(stderr, BENCH_TOOL " stream: %s\n", smart_strerror(rc));
		return rc;
	}
	for (int e = 0; e < NENG; e++) {
		double v[ROUNDS_MAX];

		memcpy(v, b->rps[e], sizeof(v));
		qsort(v, (size_t)b->rounds, sizeof(v[0]), cmp_d);
		b->med[e] = v[b->rounds / 2];
		if (b->nres[e]) /* an engine not run has none (NULL) */
			qsort(b->res[e], b->nres[e], sizeof(*b->res[e]),
			      cmp_res);
	}
	for (int e = 0; e < NENG && b->check; e++)
		b->differs[e] = b->nres[e] != b->nres[E_ONE] ||
				(b->nres[e] &&
				 memcmp(b->res[e], b->res[E_ONE],
					b->nres[e] * sizeof(*b->res[e])));
	return 0;
}

static double per_rec(const struct sb *b, int e, uint64_t v)
{
	return (double)v / (double)(b->records * b->procs);
}

static void print_engine(const struct sb *b, int e)
{
	const struct smart_stream_stats *s = &b->st[e];
	double gbps = b->med[e] * b->q.record_bytes / 1e9;

	printf("%-8s %12.0f %7.3f", eng_names[e], b->med[e], gbps);
	for (int o = 0; o <= E_ONE; o++) /* slash-ft, uppar-ft: vs IMM */
		if (on(b, o) && b->med[o] > 0)
			printf(" %7.2f", b->med[e] / b->med[o]);
		else
			printf(" %7s", "-");
	printf(" %9.3f %9.5f %10.1f %7" PRIu64 " %9" PRIu64 " %8.2f %8.2f %s\n",
	       per_rec(b, e, s->chan_bytes), per_rec(b, e, s->chan_slots),
	       s->epochs ? (double)s->delta_entries / (double)s->epochs : 0,
	       s->epochs, s->results, s->lag_p50_ns / 1e6, s->lag_p99_ns / 1e6,
	       !b->check     ? "-" :
	       b->differs[e] ? "DIFFERS" :
			       "equal");
}

/* NB8 emits its join's pairs (docs/stream.md §2): each result is one
 * (window, person, auction) with count L; --check compared them as a
 * multiset with the one-thread run's. */
static const char *const pair_keys[NENG] = { "slash_pairs",    "uppar_pairs",
					     "local_pairs",    "one_pairs",
					     "slash_ft_pairs", "uppar_ft_pairs",
					     "slash_ck_pairs" };

static void nb8_pairs(const struct sb *b)
{
	printf("nb8 join: (window, person, auction) pairs emitted (round 0):");
	for (int e = 0; e < NENG; e++)
		if (on(b, e))
			printf(" %s %zu%s", eng_names[e], b->nres[e],
			       !b->check     ? "" :
			       b->differs[e] ? " DIFFERS" :
					       " equal");
	printf("\n");
}

static int sb_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct sb *b = m;
	int bad = 0;

	if (b->peer.n)
		return cross_report(b, rec, r->com.json);
	if (!r->com.json) {
		printf("stream %s: %d executors x %" PRIu64
		       " records (%u B), %" PRIu64
		       " keys, zipf %.3f, pareto %.3f, epoch %" PRIu64
		       ", window %" PRIu64 ", %d rounds (medians)\n",
		       wl_names[b->wl], b->procs, b->records, b->q.record_bytes,
		       b->keys, b->zipf, b->pareto, b->epoch, b->q.size,
		       b->rounds);
		printf("%-8s %12s %7s %7s %7s %7s %7s %9s %9s %10s %7s %9s "
		       "%8s %8s %s\n",
		       "engine", "records/s", "GB/s", "x slash", "x uppar",
		       "x local", "x one", "chB/rec", "slots/rec", "ent/epoch",
		       "epochs", "results", "lag50ms", "lag99ms", "check");
		for (int e = 0; e < NENG; e++)
			if (on(b, e))
				print_engine(b, e);
		if (b->wl == SMART_STREAM_GEN_NB8)
			nb8_pairs(b);
		if (b->recover)
			printf("slash-ck: %" PRIu64 " checkpoints (aligned "
			       "cuts, all executors), %.3f checkpoint bytes "
			       "per input record (round 0)\n",
			       b->st[E_SLASH_CK].ckpts,
			       per_rec(b, E_SLASH_CK,
				       b->st[E_SLASH_CK].ckpt_bytes));
	}
	if (b->wl == SMART_STREAM_GEN_NB8)
		for (int e = 0; e < NENG; e++) /* the key pointer is kept */
			if (on(b, e))
				kit_rec_num(rec, pair_keys[e], "%zu",
					    b->nres[e]);
	kit_rec_str(rec, "workload", wl_names[b->wl]);
	kit_rec_num(rec, "procs", "%d", b->procs);
	kit_rec_num(rec, "keys", "%" PRIu64, b->keys);
	kit_rec_num(rec, "slash_rps", "%.0f", b->med[E_SLASH]);
	kit_rec_num(rec, "uppar_rps", "%.0f", b->med[E_UPPAR]);
	kit_rec_num(rec, "local_rps", "%.0f", b->med[E_LOCAL]);
	kit_rec_num(rec, "one_rps", "%.0f", b->med[E_ONE]);
	kit_rec_num(rec, "slash_ft_rps", "%.0f", b->med[E_SLASH_FT]);
	kit_rec_num(rec, "uppar_ft_rps", "%.0f", b->med[E_UPPAR_FT]);
	kit_rec_num(rec, "slash_ck_rps", "%.0f", b->med[E_SLASH_CK]);
	kit_rec_num(rec, "slash_ck_ckpts", "%" PRIu64, b->st[E_SLASH_CK].ckpts);
	kit_rec_num(rec, "slash_ck_ckpt_bytes_per_rec", "%.3f",
		    per_rec(b, E_SLASH_CK, b->st[E_SLASH_CK].ckpt_bytes));
	kit_rec_num(rec, "slash_bytes_per_rec", "%.3f",
		    per_rec(b, E_SLASH, b->st[E_SLASH].chan_bytes));
	kit_rec_num(rec, "uppar_bytes_per_rec", "%.3f",
		    per_rec(b, E_UPPAR, b->st[E_UPPAR].chan_bytes));
	kit_rec_num(rec, "slash_ft_bytes_per_rec", "%.3f",
		    per_rec(b, E_SLASH_FT, b->st[E_SLASH_FT].chan_bytes));
	kit_rec_num(rec, "uppar_ft_bytes_per_rec", "%.3f",
		    per_rec(b, E_UPPAR_FT, b->st[E_UPPAR_FT].chan_bytes));
	for (int e = 0; e < NENG; e++) /* the record keeps the key pointer */
		kit_rec_num(rec, lag_keys[e], "%.3f",
			    b->st[e].lag_p99_ns / 1e6);
	for (int e = 0; e < NENG; e++)
		bad |= on(b, e) && b->differs[e];
	kit_rec_str(rec, "check",
		    !b->check ? "off" :
		    bad	      ? "differs" :
				"equal");
	if (bad)
		fprintf(stderr, BENCH_TOOL " stream: results differ\n");
	return bad ? SMART_EPROTO : 0;
}

static void sb_destroy(void *m)
{
	struct sb *b = m;

	for (int p = 0; p < PROCS_MAX; p++)
		free(b->in[p]);
	for (int e = 0; e < NENG; e++)
		free(b->res[e]);
	free(b->mixed);
	if (b->ck_w)
		smart_worker_destroy(b->ck_w);
	if (b->ck_ctx)
		smart_ctx_destroy(b->ck_ctx);
	if (b->blade)
		smart_blade_destroy(b->blade);
	free(b);
}

const struct bench_module bench_stream = {
	.name = "stream",
	.summary = "windowed stream aggregation: slash vs uppar vs local vs one",
	.about = "  --procs partitions of --records generated records each; "
		 "slash and uppar\n  with one executor process per partition, "
		 "local with a thread each, one\n  with one thread reading "
		 "them interleaved; alternated --rounds times,\n  medians.  "
		 "Input records/s and GB/s, ratios, and the clock-free "
		 "channel\n  bytes and slots per record, entries per epoch.  "
		 "--chan footer|both: slash\n  and uppar over FOOTER "
		 "channels (slash-ft, uppar-ft).  --recover: slash with "
		 "exactly-once\n  recovery on (slash-ck).\n",
	.flags = sb_flags,
	.csv = sb_csv,
	.create = sb_create,
	.check = sb_check,
	.setup = sb_setup,
	.run = sb_run,
	.report = sb_report,
	.destroy = sb_destroy,
};
