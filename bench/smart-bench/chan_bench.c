/*
 * `smart-bench chan`: one-sided channels (include/smart/chan.h, docs/rpc.md
 * §17) against smart_rpc_send and an in-process memcpy of the same bytes,
 * alternated in one run: each round runs every method once, in turn, over
 * --mib MiB of slots of --size bytes (--slots in the ring; payload size -
 * 24 bytes a slot, what a FOOTER slot holds, for every method).
 *
 * The consumer is a second process (forked before this one makes its
 * ctx, with the same fresh secret): it accepts the two channels (IMM and
 * FOOTER) and serves the one-way op, takes every slot in order, checks its
 * sequence word, releases it, and reports each method's round on a pipe:
 * GB/s and slots/s between its first and last slot, and the p50/p99 of
 * commit -> next (CLOCK_MONOTONIC, one host).  memcpy is timed here: one
 * copy of the payload into a ring of the same shape.
 *
 * Copies and bytes per slot are read from the code paths (clock-free):
 * memcpy 1; IMM 1 on shm (the WRITE into the mapped ring; 0 on verbs,
 * the NIC reads the slot); FOOTER the same plus a CRC-32C pass on each
 * side, its WRITE always the whole slot; smart_rpc_send eager 3 on shm
 * (send slot, receive segment, posted buffer), rendezvous 2 (staging,
 * landing) plus a CRC-32C pass on each side.
 *
 * Invariants: the figures of a method are the median of its rounds; a
 * slot out of sequence is an error (the run fails).
 */
#include <inttypes.h>
#include <poll.h>
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

#define M_MEMCPY   0
#define M_IMM	   1
#define M_FOOTER   2
#define M_RPC	   3
#define NMETHODS   4
#define ROUNDS_MAX 32
#define OP_SLOT	   7

static const char *const method_name[NMETHODS] = { "memcpy", "chan-imm",
						   "chan-footer", "rpc-send" };

struct chan_res {
	double gbps, rps, p50_us, p99_us;
};

struct chan_bench {
	struct bench_run *run;
	uint64_t size;
	int slots, rounds, mib;
	uint64_t n; /* slots per method per round */
	uint32_t payload;
	char secret[32];
	pid_t child;
	int rfd; /* the consumer's reports */
	char addr[64];
	struct chan_res res[NMETHODS][ROUNDS_MAX];
	struct chan_res med[NMETHODS];
	uint64_t errors;
};

#define R struct chan_bench
static const struct kit_flag chan_flags[] = {
	KIT_SIZE("size", R, size, 4096, 1u << 20, "B",
		 "slot bytes, K/M suffixes; a multiple of 64 [32K]"),
	KIT_INT("slots", R, slots, 2, 64, "N", "ring slots (credits) [8]"),
	KIT_INT("rounds", R, rounds, 1, ROUNDS_MAX, "N",
		"rounds, every method once each, alternated [3]"),
	KIT_INT("mib", R, mib, 1, 65536, "MiB",
		"payload per method per round [256]"),
	KIT_END,
};
#undef R

static const struct kit_col chan_csv[] = {
	{ "size", "size", NULL },
	{ "slots", "slots", NULL },
	{ "memcpy_gbps", "memcpy_gbps", NULL },
	{ "imm_gbps", "imm_gbps", NULL },
	{ "footer_gbps", "footer_gbps", NULL },
	{ "rpc_gbps", "rpc_gbps", NULL },
	{ "imm_p99_us", "imm_p99_us", NULL },
	{ "transport", "transport", NULL },
	{ NULL, NULL, NULL },
};

static void *chan_create(struct bench_run *r)
{
	struct chan_bench *b = calloc(1, sizeof(*b));

	if (b)
		b->run = r;
	return b;
}

static void chan_check(void *m, struct bench_run *r)
{
	struct chan_bench *b = m;

	(void)r;
	if (!b->size)
		b->size = 32u << 10;
	if (!b->slots)
		b->slots = 8;
	if (!b->rounds)
		b->rounds = 3;
	if (!b->mib)
		b->mib = 256;
	if (b->size % 64)
		kit_bad(BENCH_TOOL, "size", "", "a multiple of 64");
	if (b->slots & (b->slots - 1))
		kit_bad(BENCH_TOOL, "slots", "", "a power of two");
	b->payload = (uint32_t)b->size - SMART_CHAN_FOOTER_LEN;
	b->n = ((uint64_t)b->mib << 20) / b->payload;
	if (b->n < 16)
		b->n = 16;
}

static int ctx_make(struct chan_bench *b, smart_ctx_t **ctx)
{
	const char *const kvs[] = { "buf_pool=4M", NULL };
	smart_opts_t *so;
	int rc = kit_opts_build(&b->run->com, kvs, &so);

	if (rc)
		return rc;
	rc = smart_ctx_create(so, ctx);
	smart_opts_destroy(so);
	if (!rc)
		rc = smart_ctx_set_secret(*ctx, b->secret, sizeof(b->secret));
	return rc;
}

static struct smart_rpc_config rpc_cfg(void)
{
	/* rendezvous for payloads over 4 KiB, up to a 1-MiB slot */
	return (struct smart_rpc_config){ SMART_RPC_CONFIG_INIT,
					  .rndv_max = 4u << 20,
					  .timeout_ms = 60000 };
}

/* ---- the consumer process ---------------------------------------------- */

struct cons {
	struct chan_bench *b;
	smart_chan_t *ch[2];
	uint64_t got[NMETHODS], t0[NMETHODS];
	smart_hist_t lat[NMETHODS];
	int wfd;
	uint64_t errors;
};

static void cons_accept(smart_chan_t *ch, uint32_t tag, void *arg)
{
	struct cons *c = arg;

	if (tag < 2)
		c->ch[tag] = ch;
}

/* One slot of method m: its sequence word, its latency; at the round's
 * last, the report. */
static void cons_slot(struct cons *c, int m, const void *buf, uint64_t ts)
{
	uint64_t now = smart_now_ns(), seq;
	char line[160];
	int n;

	memcpy(&seq, buf, sizeof(seq));
	if (seq != c->got[m])
		c->errors++;
	if (!c->got[m]++) {
		c->t0[m] = now;
		smart_hist_init(&c->lat[m]);
	}
	smart_hist_add(&c->lat[m], now > ts ? now - ts : 0);
	if (c->got[m] < c->b->n)
		return;
	{
		double s = (double)(now - c->t0[m]) / 1e9,
		       k = (double)(c->b->n - 1);

		n = snprintf(line, sizeof(line),
			     "%d %.4f %.1f %.2f %.2f %" PRIu64 "\n", m,
			     s > 0 ? k * c->b->payload / s / 1e9 : 0,
			     s > 0 ? k / s : 0,
			     smart_hist_quantile(&c->lat[m], 0.5) / 1e3,
			     smart_hist_quantile(&c->lat[m], 0.99) / 1e3,
			     c->errors);
	}
	if (write(c->wfd, line, (size_t)n) != n)
		_exit(1);
	c->got[m] = 0;
}

static void cons_op(smart_rpc_req_t *q, const void *d, uint32_t len, void *arg)
{
	uint64_t ts;

	(void)q;
	if (len < 16)
		return;
	memcpy(&ts, (const uint8_t *)d + 8, sizeof(ts));
	cons_slot(arg, M_RPC, d, ts);
}

static void consumer(struct chan_bench *b, int wfd, int afd)
{
	struct smart_rpc_config cfg = rpc_cfg();
	struct cons c = { .b = b, .wfd = wfd };
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	char addr[64];

	if (ctx_make(b, &ctx) || smart_worker_create(ctx, &w) ||
	    smart_rpc_create(w, &cfg, &rpc) ||
	    smart_rpc_register(rpc, OP_SLOT, cons_op, &c) ||
	    smart_chan_listen(rpc, cons_accept, &c) ||
	    smart_rpc_listen(rpc, "127.0.0.1:0") ||
	    smart_rpc_listen_addr(rpc, addr, sizeof(addr)))
		_exit(1);
	if (write(afd, addr, strlen(addr) + 1) < 0)
		_exit(1);
	close(afd);
	for (;;) {
		smart_rpc_progress(rpc);
		for (int t = 0; t < 2; t++) {
			const void *buf;
			uint32_t len;
			uint64_t user;

			while (c.ch[t] &&
			       !smart_chan_next(c.ch[t], &buf, &len, &user)) {
				cons_slot(&c, M_IMM + t, buf, user);
				smart_chan_release(c.ch[t]);
			}
		}
	}
}

static int chan_setup(void *m, struct bench_run *r)
{
	struct chan_bench *b = m;
	int rp[2], ap[2];
	ssize_t n;

	(void)r;
	if (smart_secret_generate(b->secret, sizeof(b->secret)) || pipe(rp) ||
	    pipe(ap))
		return SMART_ESYS;
	fflush(NULL);
	b->child = fork();
	if (b->child < 0)
		return SMART_ESYS;
	if (b->child == 0) {
		close(rp[0]);
		close(ap[0]);
		consumer(b, rp[1], ap[1]);
		_exit(0);
	}
	close(rp[1]);
	close(ap[1]);
	b->rfd = rp[0];
	n = read(ap[0], b->addr, sizeof(b->addr) - 1);
	close(ap[0]);
	if (n <= 0) {
		fprintf(stderr,
			BENCH_TOOL " chan: the consumer did not start\n");
		return SMART_ESYS;
	}
	return 0;
}

/* ---- the producer (this process) --------------------------------------- */

/* The consumer's report of method m's round, progressing meanwhile. */
static int wait_report(struct chan_bench *b, smart_rpc_t *rpc, int m,
		       struct chan_res *out)
{
	struct pollfd pf = { .fd = b->rfd, .events = POLLIN };
	char line[160];
	int got, k;
	uint64_t errs;
	ssize_t n;

	while (poll(&pf, 1, 0) == 0)
		smart_rpc_progress(rpc);
	n = read(b->rfd, line, sizeof(line) - 1);
	if (n <= 0)
		return SMART_ECONN;
	line[n] = 0;
	k = sscanf(line, "%d %lf %lf %lf %lf %" SCNu64, &got, &out->gbps,
		   &out->rps, &out->p50_us, &out->p99_us, &errs);
	if (k != 6 || got != m)
		return SMART_EPROTO;
	b->errors = errs;
	return 0;
}

static void run_memcpy(struct chan_bench *b, uint8_t *src, uint8_t *ring,
		       struct chan_res *out)
{
	smart_hist_t h;
	uint64_t t0 = smart_now_ns(), t;

	smart_hist_init(&h);
	for (uint64_t i = 0; i < b->n; i++) {
		uint64_t a = smart_now_ns();

		memcpy(ring + (i & (uint64_t)(b->slots - 1)) * b->size, src,
		       b->payload);
		smart_hist_add(&h, smart_now_ns() - a);
	}
	t = smart_now_ns() - t0;
	out->gbps = (double)b->n * b->payload / (double)t;
	out->rps = (double)b->n / ((double)t / 1e9);
	out->p50_us = smart_hist_quantile(&h, 0.5) / 1e3;
	out->p99_us = smart_hist_quantile(&h, 0.99) / 1e3;
	if (ring[0] != src[0])
		b->errors++;
}

static int run_chan(struct chan_bench *b, smart_chan_t *ch)
{
	for (uint64_t i = 0; i < b->n; i++) {
		void *buf;
		uint32_t cap;
		int rc = smart_chan_reserve(ch, &buf, &cap);

		if (rc)
			return rc;
		memcpy(buf, &i, sizeof(i)); /* the producer's own write */
		rc = smart_chan_commit(ch, b->payload, smart_now_ns());
		if (rc)
			return rc;
	}
	return 0;
}

static int run_rpc(struct chan_bench *b, smart_rpc_conn_t *k, uint8_t *src)
{
	for (uint64_t i = 0; i < b->n; i++) {
		uint64_t ts = smart_now_ns();
		int rc;

		memcpy(src, &i, sizeof(i));
		memcpy(src + 8, &ts, sizeof(ts));
		rc = smart_rpc_send(k, OP_SLOT, src, b->payload);
		if (rc)
			return rc;
	}
	return 0;
}

struct prod {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	smart_chan_t *ch[2];
	smart_rpc_conn_t *k;
	uint8_t *src, *ring;
};

static int prod_open(struct chan_bench *b, struct prod *p)
{
	struct smart_rpc_config cfg = rpc_cfg();
	int rc;

	p->src = calloc(1, b->payload);
	p->ring = calloc((size_t)b->slots, b->size);
	if (!p->src || !p->ring)
		return SMART_ENOMEM;
	memset(p->src, 0x5a, b->payload);
	rc = ctx_make(b, &p->ctx);
	if (!rc)
		rc = smart_worker_create(p->ctx, &p->w);
	if (!rc)
		rc = smart_rpc_create(p->w, &cfg, &p->rpc);
	for (uint32_t t = 0; t < 2 && !rc; t++) {
		struct smart_chan_config cc = { SMART_CHAN_CONFIG_INIT,
						.slots = (uint32_t)b->slots,
						.slot_bytes = (uint32_t)b->size,
						.mode = t, .tag = t };

		rc = smart_chan_open(p->rpc, b->addr, &cc, &p->ch[t]);
	}
	return rc ? rc : smart_rpc_connect(p->rpc, b->addr, &p->k);
}

static void prod_close(struct prod *p)
{
	smart_chan_close(p->ch[0]);
	smart_chan_close(p->ch[1]);
	smart_rpc_close(p->k);
	smart_rpc_destroy(p->rpc);
	smart_worker_destroy(p->w);
	smart_ctx_destroy(p->ctx);
	free(p->src);
	free(p->ring);
}

static int run_round(struct chan_bench *b, struct prod *p, int round)
{
	int rc = 0;

	run_memcpy(b, p->src, p->ring, &b->res[M_MEMCPY][round]);
	for (int m = M_IMM; m <= M_RPC && !rc; m++) {
		rc = m == M_RPC ? run_rpc(b, p->k, p->src) :
				  run_chan(b, p->ch[m - M_IMM]);
		if (!rc)
			rc = wait_report(b, p->rpc, m, &b->res[m][round]);
	}
	return rc;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(struct chan_bench *b, int m, size_t off)
{
	double v[ROUNDS_MAX];

	for (int r = 0; r < b->rounds; r++)
		v[r] = *(const double *)((const char *)&b->res[m][r] + off);
	qsort(v, (size_t)b->rounds, sizeof(v[0]), cmp_d);
	return v[b->rounds / 2];
}

static int chan_run(void *m, struct bench_run *r)
{
	struct chan_bench *b = m;
	struct prod p = { 0 };
	int rc = prod_open(b, &p);

	(void)r;
	for (int round = 0; round < b->rounds && !rc; round++)
		rc = run_round(b, &p, round);
	prod_close(&p);
	if (rc)
		fprintf(stderr, BENCH_TOOL " chan: %s\n", smart_strerror(rc));
	for (int k = 0; k < NMETHODS && !rc; k++) {
		b->med[k].gbps = median(b, k, offsetof(struct chan_res, gbps));
		b->med[k].rps = median(b, k, offsetof(struct chan_res, rps));
		b->med[k].p50_us = median(b, k,
					  offsetof(struct chan_res, p50_us));
		b->med[k].p99_us = median(b, k,
					  offsetof(struct chan_res, p99_us));
	}
	return rc;
}

/* Copies and wire bytes per slot (the module's opening comment). */
static void per_slot(const struct chan_bench *b, int m, const char **copies,
		     uint64_t *bytes)
{
	int rndv = b->payload > 4096;

	switch (m) {
	case M_MEMCPY:
		*copies = "1";
		*bytes = b->payload;
		break;
	case M_IMM:
		*copies = "1 (shm; 0 verbs)";
		*bytes = 16 + b->payload;
		break;
	case M_FOOTER:
		*copies = "1 + 2 CRC";
		*bytes = b->size;
		break;
	default:
		*copies = rndv ? "2 + 2 CRC" : "3";
		*bytes = 16 + b->payload + (rndv ? 24 + 16 : 0);
	}
}

static int chan_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct chan_bench *b = m;
	const char *copies;
	uint64_t bytes;

	if (!r->com.json) {
		printf("chan: %" PRIu64 "-B slots (payload %u B), %d slots, "
		       "%" PRIu64 " slots x %d rounds per method, medians\n",
		       b->size, b->payload, b->slots, b->n, b->rounds);
		printf("%-12s %8s %8s %12s %9s %9s  %-18s %s\n", "method",
		       "GB/s", "x memcpy", "slots/s", "p50 us", "p99 us",
		       "copies/slot", "bytes/slot");
		for (int k = 0; k < NMETHODS; k++) {
			per_slot(b, k, &copies, &bytes);
			printf("%-12s %8.2f %8.2f %12.0f %9.2f %9.2f  %-18s %" PRIu64
			       "\n",
			       method_name[k], b->med[k].gbps,
			       b->med[k].gbps / b->med[M_MEMCPY].gbps,
			       b->med[k].rps, b->med[k].p50_us,
			       b->med[k].p99_us, copies, bytes);
		}
		printf("chan-imm / rpc-send %.2fx, chan-footer / rpc-send "
		       "%.2fx\n",
		       b->med[M_IMM].gbps / b->med[M_RPC].gbps,
		       b->med[M_FOOTER].gbps / b->med[M_RPC].gbps);
	}
	kit_rec_num(rec, "size", "%" PRIu64, b->size);
	kit_rec_num(rec, "slots", "%d", b->slots);
	kit_rec_num(rec, "memcpy_gbps", "%.3f", b->med[M_MEMCPY].gbps);
	kit_rec_num(rec, "imm_gbps", "%.3f", b->med[M_IMM].gbps);
	kit_rec_num(rec, "footer_gbps", "%.3f", b->med[M_FOOTER].gbps);
	kit_rec_num(rec, "rpc_gbps", "%.3f", b->med[M_RPC].gbps);
	kit_rec_num(rec, "imm_p99_us", "%.2f", b->med[M_IMM].p99_us);
	kit_rec_str(rec, "transport",
		    r->com.transport ? r->com.transport : "shm");
	if (b->errors) {
		fprintf(stderr,
			BENCH_TOOL " chan: %" PRIu64 " slots out of "
				   "sequence\n",
			b->errors);
		return SMART_EPROTO;
	}
	return 0;
}

static void chan_destroy(void *m)
{
	struct chan_bench *b = m;
	int st;

	if (b->child > 0) {
		kill(b->child, SIGKILL);
		waitpid(b->child, &st, 0);
	}
	if (b->rfd > 0)
		close(b->rfd);
	free(b);
}

const struct bench_module bench_chan = {
	.name = "chan",
	.summary = "one-sided channels vs rpc_send vs memcpy, by slot size",
	.about = "  Slots of --size bytes (--slots in the ring) through an IMM "
		 "and a FOOTER\n  channel to a consumer process, against "
		 "smart_rpc_send of the same payload\n  and an in-process "
		 "memcpy, alternated, --rounds times; medians.  GB/s and\n"
		 "  slots/s at the consumer; p50/p99 commit -> next.\n",
	.flags = chan_flags,
	.csv = chan_csv,
	.create = chan_create,
	.check = chan_check,
	.setup = chan_setup,
	.run = chan_run,
	.report = chan_report,
	.destroy = chan_destroy,
};
