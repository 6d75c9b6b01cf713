/*
 * `smart-bench chan`: one-sided channels (include/smart/chan.h, docs/rpc.md
 * §17) against smart_rpc_send, an in-process memcpy of the same bytes and
 * the floor of any cross-process channel, alternated in one run: each
 * round runs every method once, in turn, over --mib MiB of slots of
 * --size bytes (--slots in the ring; payload size - 24 bytes a slot, what
 * a FOOTER slot holds, for every method).
 *
 * The consumer is a second process: forked before this one makes its ctx
 * (same fresh secret), or with --connect ADDR a `smart-bench chan
 * --serve` anywhere (the secret then from --secret-file on both sides).
 * It accepts the two channels (IMM and FOOTER, tags 0 and 1) and serves
 * the one-way op, takes every slot in order, checks its sequence word,
 * reads every payload word (sums them; --seq-only: only the sequence
 * word), with --check compares every byte with the slot's seeded content,
 * releases the slot.  At the end of each method's round the producer asks
 * it (an RPC call on the one-way op's connection) for that round's
 * figures, measured at the consumer: GB/s and slots/s between its first
 * and last slot, and the p50/p99 of commit -> next (CLOCK_MONOTONIC: one
 * host, or two guests with the same clock).
 *
 * memcpy is timed here: one copy of the payload into a ring of the same
 * shape.  floor (without --connect) is the least any cross-process
 * channel on this host costs: a ring of the same shape in memory both
 * processes map, the producer memcpys a payload into the next slot and
 * bumps a counter, the consumer (a process forked for the round) reads
 * the slot as above and bumps the credit counter; either side out of
 * slots or credits yields at once, as a channel does.  One copy and one
 * read per slot, no library.
 *
 * Copies and bytes per slot are read from the code paths (clock-free):
 * memcpy 1; IMM 1 on shm (the WRITE into the mapped ring; 0 on verbs,
 * the NIC reads the slot); FOOTER the same plus a CRC-32C pass on each
 * side, its WRITE always the whole slot; smart_rpc_send eager 3 on shm
 * (send slot, receive segment, posted buffer), rendezvous 2 (staging,
 * landing) plus a CRC-32C pass on each side; floor 1.
 *
 * Invariants: the figures of a method are the median of its rounds; a
 * slot out of sequence or (--check) changed is an error (the run fails).
 */
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "smart/chan.h"
#include "smart/rpc.h"
#include "smart/secret.h"

#define M_MEMCPY   0
#define M_IMM	   1
#define M_FOOTER   2
#define M_RPC	   3
#define M_FLOOR	   4
#define NMETHODS   5
#define ROUNDS_MAX 32
#define OP_SLOT	   7
#define OP_REPORT  8
#define STALE_MAX  8

static const char *const method_name[NMETHODS] = { "memcpy", "chan-imm",
						   "chan-footer", "rpc-send",
						   "floor" };

struct chan_res {
	double gbps, rps, p50_us, p99_us;
};

/* The consumer's answer to OP_REPORT (one host's layout: both ends are
 * this program). */
struct chan_report {
	struct chan_res r;
	uint64_t errors;
};

struct chan_ask { /* OP_REPORT's request */
	uint32_t m, zero;
	uint64_t n;
};

/* The floor's shared page: the counters on lines of their own, the ring
 * after them. */
struct floor_sh {
	_Alignas(64) _Atomic uint64_t head; /* slots written */
	_Alignas(64) _Atomic uint64_t tail; /* slots read: credits */
	_Alignas(64) struct chan_report out;
};

struct chan_bench {
	struct bench_run *run;
	uint64_t size;
	int slots, rounds, mib;
	int serve, check, seq_only;
	const char *listen;
	uint64_t n; /* slots per method per round */
	uint32_t payload;
	char secret[32];
	int own_secret;
	pid_t child;
	char addr[64];
	struct floor_sh *fl; /* NULL with --connect */
	size_t fl_len;
	int have[NMETHODS];
	int at; /* the method running (said when it fails) */
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
	KIT_FLAG("check", R, check,
		 "the producer fills every payload with bytes seeded\n"
		 "by its slot number, the consumer compares every byte"),
	KIT_FLAG("seq-only", R, seq_only,
		 "the consumer reads only each payload's sequence\n"
		 "word (default: every word, summed)"),
	KIT_FLAG("serve", R, serve,
		 "be the consumer only: print its address, serve\n"
		 "producers (--connect) until SIGINT/SIGTERM"),
	KIT_STR("listen", R, listen, "HOST:PORT",
		"with --serve: where [127.0.0.1:0]"),
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
	{ "floor_gbps", "floor_gbps", NULL },
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
	if (b->serve && r->com.connect.n)
		kit_bad(BENCH_TOOL, "serve", NULL,
			"--serve and --connect exclude each other");
	if (b->listen && !b->serve)
		kit_bad(BENCH_TOOL, "listen", b->listen, "is for --serve");
	if (!b->listen)
		b->listen = "127.0.0.1:0";
	b->payload = (uint32_t)b->size - SMART_CHAN_FOOTER_LEN;
	b->n = ((uint64_t)b->mib << 20) / b->payload;
	if (b->n < 16)
		b->n = 16;
	b->own_secret = !b->serve && !r->com.connect.n;
	for (int k = 0; k < NMETHODS; k++)
		b->have[k] = k != M_FLOOR || !r->com.connect.n;
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
	if (!rc && b->own_secret)
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

/* ---- a slot's content -------------------------------------------------- */

static uint64_t seeded(uint64_t seq, uint32_t k)
{
	uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ULL ^ k;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ULL;
	return x ^ (x >> 29);
}

/* Words 2.. of a payload (words 0 and 1: sequence number and time). */
static void fill(uint64_t *w, uint32_t words, uint64_t seq)
{
	for (uint32_t k = 2; k < words; k++)
		w[k] = seeded(seq, k);
}

/* What the consumer does with a slot's payload (len bytes at p, the
 * producer's sequence number seq): the number of bad words.  The sum
 * and the check are loops of their own. */
static uint64_t consume(const struct chan_bench *b, const uint8_t *p,
			uint32_t len, uint64_t seq, uint64_t *sink)
{
	uint64_t bad = 0, sum[4] = { 0 }, w[4];
	uint32_t k = 0;

	if (b->seq_only && !b->check)
		return 0;
	for (; k + 32 <= len; k += 32) { /* four chains of adds */
		memcpy(w, p + k, sizeof(w));
		sum[0] += w[0];
		sum[1] += w[1];
		sum[2] += w[2];
		sum[3] += w[3];
	}
	for (; k + 8 <= len; k += 8) {
		memcpy(w, p + k, sizeof(w[0]));
		sum[0] += w[0];
	}
	*sink += sum[0] + sum[1] + sum[2] + sum[3];
	for (k = 16; b->check && k + 8 <= len; k += 8) {
		memcpy(w, p + k, sizeof(w[0]));
		bad += w[0] != seeded(seq, k / 8);
	}
	return bad;
}

/* ---- the consumer's meter (one per method) ----------------------------- */

struct meter {
	uint64_t got, t0, tlast, errors, sink;
	smart_hist_t lat;
};

static void meter_slot(const struct chan_bench *b, struct meter *mt,
		       const void *buf, uint32_t len, uint64_t ts)
{
	uint64_t now = smart_now_ns(), seq;

	memcpy(&seq, buf, sizeof(seq));
	if (seq != mt->got)
		mt->errors++;
	mt->errors += consume(b, buf, len, seq, &mt->sink);
	if (!mt->got++) {
		mt->t0 = now;
		smart_hist_init(&mt->lat);
	}
	mt->tlast = now;
	smart_hist_add(&mt->lat, now > ts ? now - ts : 0);
}

/* The round's figures (n slots of payload bytes); the meter restarts. */
static struct chan_report meter_take(struct meter *mt, uint32_t payload)
{
	struct chan_report rep = { .errors = mt->errors };
	double s = (double)(mt->tlast - mt->t0) / 1e9,
	       k = (double)(mt->got - 1);

	rep.r.gbps = s > 0 ? k * payload / s / 1e9 : 0;
	rep.r.rps = s > 0 ? k / s : 0;
	rep.r.p50_us = smart_hist_quantile(&mt->lat, 0.5) / 1e3;
	rep.r.p99_us = smart_hist_quantile(&mt->lat, 0.99) / 1e3;
	mt->got = 0;
	mt->errors = 0;
	return rep;
}

/* ---- the consumer process ---------------------------------------------- */

struct cons {
	struct chan_bench *b;
	smart_chan_t *ch[2];
	smart_chan_t *stale[STALE_MAX]; /* a former producer's, to close */
	struct meter mt[NMETHODS];
	uint32_t len[NMETHODS]; /* the round's payload */
};

static void cons_accept(smart_chan_t *ch, uint32_t tag, void *arg)
{
	struct cons *c = arg;

	if (tag >= 2) {
		for (int k = 0; k < STALE_MAX; k++)
			if (!c->stale[k]) {
				c->stale[k] = ch;
				return;
			}
		return; /* kept open: a bench peer sends no such tag */
	}
	for (int k = 0; k < STALE_MAX && c->ch[tag]; k++)
		if (!c->stale[k]) {
			c->stale[k] = c->ch[tag];
			c->ch[tag] = NULL;
		}
	c->ch[tag] = ch;
}

static void cons_op(smart_rpc_req_t *q, const void *d, uint32_t len, void *arg)
{
	struct cons *c = arg;
	uint64_t ts;

	(void)q;
	if (len < 16)
		return;
	memcpy(&ts, (const uint8_t *)d + 8, sizeof(ts));
	c->len[M_RPC] = len;
	meter_slot(c->b, &c->mt[M_RPC], d, len, ts);
}

/* The producer asks for method m's round of n slots: not yet (EAGAIN)
 * until all n were taken. */
static void cons_report(smart_rpc_req_t *q, const void *d, uint32_t len,
			void *arg)
{
	struct cons *c = arg;
	struct chan_report rep;
	struct chan_ask a;

	if (!q)
		return;
	if (len != sizeof(a)) {
		smart_rpc_reply(q, SMART_EINVAL, NULL, 0);
		return;
	}
	memcpy(&a, d, sizeof(a));
	if (a.m < M_IMM || a.m > M_RPC || !a.n) {
		smart_rpc_reply(q, SMART_EINVAL, NULL, 0);
		return;
	}
	if (c->mt[a.m].got < a.n) {
		smart_rpc_reply(q, SMART_EAGAIN, NULL, 0);
		return;
	}
	rep = meter_take(&c->mt[a.m], c->len[a.m]);
	smart_rpc_reply(q, 0, &rep, sizeof(rep));
}

/* Every slot that landed on channel t; a channel whose producer is gone
 * is closed. */
static void cons_drain(struct cons *c, int t)
{
	const void *buf;
	uint32_t len;
	uint64_t user;
	int rc = SMART_EAGAIN;

	while (c->ch[t] &&
	       !(rc = smart_chan_next(c->ch[t], &buf, &len, &user))) {
		c->len[M_IMM + t] = len;
		meter_slot(c->b, &c->mt[M_IMM + t], buf, len, user);
		smart_chan_release(c->ch[t]);
	}
	if (c->ch[t] && rc != SMART_EAGAIN) {
		smart_chan_close(c->ch[t]);
		c->ch[t] = NULL;
	}
}

static void cons_poll(struct cons *c, smart_rpc_t *rpc)
{
	smart_rpc_progress(rpc);
	for (int k = 0; k < STALE_MAX; k++)
		if (c->stale[k]) {
			smart_chan_close(c->stale[k]);
			c->stale[k] = NULL;
		}
	cons_drain(c, 0);
	cons_drain(c, 1);
}

/* SIGINT or SIGTERM pending (blocked by main: kit_signals_block). */
static int stop_asked(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	return sigtimedwait(&set, NULL, &zero) > 0;
}

/* The consumer: its address on afd (then closed; -1: a line on stdout),
 * then slots for ever (forked) or until a stop signal (--serve). */
static int consumer(struct chan_bench *b, int afd, const char *listen)
{
	struct smart_rpc_config cfg = rpc_cfg();
	struct cons c = { .b = b };
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	char addr[64];

	if (ctx_make(b, &ctx) || smart_worker_create(ctx, &w) ||
	    smart_rpc_create(w, &cfg, &rpc) ||
	    smart_rpc_register(rpc, OP_SLOT, cons_op, &c) ||
	    smart_rpc_register(rpc, OP_REPORT, cons_report, &c) ||
	    smart_chan_listen(rpc, cons_accept, &c) ||
	    smart_rpc_listen(rpc, listen) ||
	    smart_rpc_listen_addr(rpc, addr, sizeof(addr)))
		return SMART_ESYS;
	if (afd < 0) { /* --serve: on stdout, a line */
		printf("%s\n", addr);
		fflush(stdout);
	} else if (write(afd, addr, strlen(addr) + 1) < 0) {
		return SMART_ESYS;
	} else {
		close(afd);
	}
	for (uint64_t i = 1; !b->serve || (i % 4096) || !stop_asked(); i++)
		cons_poll(&c, rpc);
	for (int t = 0; t < 2; t++)
		smart_chan_close(c.ch[t]);
	smart_rpc_destroy(rpc);
	smart_worker_destroy(w);
	smart_ctx_destroy(ctx);
	return 0;
}

static int chan_setup(void *m, struct bench_run *r)
{
	struct chan_bench *b = m;
	int ap[2];
	ssize_t n;

	if (b->serve)
		return 0;
	if (b->own_secret &&
	    smart_secret_generate(b->secret, sizeof(b->secret)))
		return SMART_ESYS;
	if (!r->com.connect.n) {
		void *p;

		b->fl_len = sizeof(struct floor_sh) +
			    (size_t)b->slots * b->size;
		p = mmap(NULL, b->fl_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return SMART_ENOMEM;
		b->fl = p;
	} else {
		snprintf(b->addr, sizeof(b->addr), "%s", r->com.connect.v[0]);
		return 0;
	}
	if (pipe(ap))
		return SMART_ESYS;
	fflush(NULL);
	b->child = fork();
	if (b->child < 0)
		return SMART_ESYS;
	if (b->child == 0) {
		close(ap[0]);
		_exit(consumer(b, ap[1], "127.0.0.1:0") ? 1 : 0);
	}
	close(ap[1]);
	n = read(ap[0], b->addr, sizeof(b->addr) - 1);
	close(ap[0]);
	if (n <= 0) {
		fprintf(stderr,
			BENCH_TOOL " chan: the consumer did not start\n");
		return SMART_ESYS;
	}
	return 0;
}

/* ---- the floor --------------------------------------------------------- */

static uint8_t *floor_slot(struct chan_bench *b, uint64_t i)
{
	return (uint8_t *)(b->fl + 1) +
	       (i & (uint64_t)(b->slots - 1)) * b->size;
}

/* The floor's consumer (a process of its own for the round). */
static void floor_consumer(struct chan_bench *b)
{
	struct floor_sh *f = b->fl;
	struct meter mt = { 0 };

	for (uint64_t i = 0; i < b->n; i++) {
		uint64_t ts;
		const uint8_t *p = floor_slot(b, i);

		while (atomic_load_explicit(&f->head, memory_order_acquire) ==
		       i)
			sched_yield();
		memcpy(&ts, p + 8, sizeof(ts));
		meter_slot(b, &mt, p, b->payload, ts);
		atomic_store_explicit(&f->tail, i + 1, memory_order_release);
	}
	f->out = meter_take(&mt, b->payload);
}

static int run_floor(struct chan_bench *b, uint64_t *src, struct chan_res *out)
{
	struct floor_sh *f = b->fl;
	pid_t pid;
	int st;

	atomic_store(&f->head, 0);
	atomic_store(&f->tail, 0);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return SMART_ESYS;
	if (pid == 0) {
		floor_consumer(b);
		_exit(0);
	}
	for (uint64_t i = 0; i < b->n; i++) {
		while (i - atomic_load_explicit(&f->tail,
						memory_order_acquire) >=
		       (uint64_t)b->slots)
			sched_yield();
		src[0] = i;
		src[1] = smart_now_ns();
		if (b->check)
			fill(src, b->payload / 8, i);
		memcpy(floor_slot(b, i), src, b->payload);
		atomic_store_explicit(&f->head, i + 1, memory_order_release);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return SMART_ESYS;
	*out = f->out.r;
	b->errors += f->out.errors;
	return 0;
}

/* ---- the producer (this process) --------------------------------------- */

/* The consumer's figures of method m's round, asked until it has them. */
static int ask_report(struct chan_bench *b, smart_rpc_conn_t *k, int m,
		      struct chan_res *out)
{
	struct chan_ask a = { (uint32_t)m, 0, b->n };
	struct chan_report rep;
	uint32_t got;
	int rc;

	while ((rc = smart_rpc_call(k, OP_REPORT, &a, sizeof(a), &rep,
				    sizeof(rep), &got)) == SMART_EAGAIN)
		;
	if (rc)
		return rc;
	if (got != sizeof(rep))
		return SMART_EPROTO;
	*out = rep.r;
	b->errors += rep.errors;
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
		memcpy(buf, &i, sizeof(i)); /* the producer's own writes */
		if (b->check)
			fill(buf, b->payload / 8, i);
		rc = smart_chan_commit(ch, b->payload, smart_now_ns());
		if (rc)
			return rc;
	}
	return 0;
}

static int run_rpc(struct chan_bench *b, smart_rpc_conn_t *k, uint64_t *src)
{
	for (uint64_t i = 0; i < b->n; i++) {
		int rc;

		src[0] = i;
		src[1] = smart_now_ns();
		if (b->check)
			fill(src, b->payload / 8, i);
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
	uint64_t *src;
	uint8_t *ring;
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

	run_memcpy(b, (uint8_t *)p->src, p->ring, &b->res[M_MEMCPY][round]);
	for (int m = M_IMM; m <= M_RPC && !rc; m++) {
		b->at = m;
		rc = m == M_RPC ? run_rpc(b, p->k, p->src) :
				  run_chan(b, p->ch[m - M_IMM]);
		if (!rc)
			rc = ask_report(b, p->k, m, &b->res[m][round]);
	}
	b->at = M_FLOOR;
	if (!rc && b->have[M_FLOOR])
		rc = run_floor(b, p->src, &b->res[M_FLOOR][round]);
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
	int rc;

	if (b->serve)
		return consumer(b, -1, b->listen);
	rc = prod_open(b, &p);
	for (int round = 0; round < b->rounds && !rc; round++)
		rc = run_round(b, &p, round);
	prod_close(&p);
	if (rc)
		fprintf(stderr, BENCH_TOOL " chan: %s: %s\n",
			b->at ? method_name[b->at] : "setup",
			smart_strerror(rc));
	(void)r;
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
	case M_FLOOR:
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

static void print_table(const struct chan_bench *b)
{
	const char *copies;
	uint64_t bytes;

	printf("chan: %" PRIu64 "-B slots (payload %u B), %d slots, "
	       "%" PRIu64 " slots x %d rounds per method, medians; the "
	       "consumer reads %s%s\n",
	       b->size, b->payload, b->slots, b->n, b->rounds,
	       b->seq_only && !b->check ? "the sequence word" : "every word",
	       b->check ? ", checks every byte (seeded)" : "");
	printf("%-12s %8s %8s %12s %9s %9s  %-18s %s\n", "method", "GB/s",
	       "x memcpy", "slots/s", "p50 us", "p99 us", "copies/slot",
	       "bytes/slot");
	for (int k = 0; k < NMETHODS; k++) {
		if (!b->have[k])
			continue;
		per_slot(b, k, &copies, &bytes);
		printf("%-12s %8.2f %8.2f %12.0f %9.2f %9.2f  %-18s %" PRIu64
		       "\n",
		       method_name[k], b->med[k].gbps,
		       b->med[k].gbps / b->med[M_MEMCPY].gbps, b->med[k].rps,
		       b->med[k].p50_us, b->med[k].p99_us, copies, bytes);
	}
	printf("chan-imm / rpc-send %.2fx, chan-footer / rpc-send %.2fx",
	       b->med[M_IMM].gbps / b->med[M_RPC].gbps,
	       b->med[M_FOOTER].gbps / b->med[M_RPC].gbps);
	if (b->have[M_FLOOR])
		printf("; chan-imm / floor %.2fx, chan-footer / floor %.2fx, "
		       "floor / memcpy %.2fx",
		       b->med[M_IMM].gbps / b->med[M_FLOOR].gbps,
		       b->med[M_FOOTER].gbps / b->med[M_FLOOR].gbps,
		       b->med[M_FLOOR].gbps / b->med[M_MEMCPY].gbps);
	printf("\n");
}

static int chan_report(void *m, struct bench_run *r, struct kit_rec *rec)
{
	struct chan_bench *b = m;

	if (b->serve)
		return 0;
	if (!r->com.json)
		print_table(b);
	kit_rec_num(rec, "size", "%" PRIu64, b->size);
	kit_rec_num(rec, "slots", "%d", b->slots);
	kit_rec_num(rec, "memcpy_gbps", "%.6f", b->med[M_MEMCPY].gbps);
	kit_rec_num(rec, "imm_gbps", "%.6f", b->med[M_IMM].gbps);
	kit_rec_num(rec, "footer_gbps", "%.6f", b->med[M_FOOTER].gbps);
	kit_rec_num(rec, "rpc_gbps", "%.6f", b->med[M_RPC].gbps);
	kit_rec_num(rec, "imm_p99_us", "%.2f", b->med[M_IMM].p99_us);
	kit_rec_str(rec, "transport",
		    r->com.transport ? r->com.transport : "shm");
	kit_rec_num(rec, "floor_gbps", "%.6f",
		    b->have[M_FLOOR] ? b->med[M_FLOOR].gbps : 0);
	kit_rec_num(rec, "imm_p50_us", "%.2f", b->med[M_IMM].p50_us);
	kit_rec_num(rec, "footer_p50_us", "%.2f", b->med[M_FOOTER].p50_us);
	kit_rec_num(rec, "slots_per_method", "%" PRIu64, b->n * b->rounds);
	kit_rec_num(rec, "checked", "%d", b->check);
	kit_rec_num(rec, "errors", "%" PRIu64, b->errors);
	if (b->errors) {
		fprintf(stderr,
			BENCH_TOOL " chan: %" PRIu64 " slots out of "
				   "sequence or changed\n",
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
	if (b->fl)
		munmap(b->fl, b->fl_len);
	free(b);
}

const struct bench_module bench_chan = {
	.name = "chan",
	.summary = "one-sided channels vs rpc_send vs memcpy, by slot size",
	.about = "  Slots of --size bytes (--slots in the ring) through an IMM "
		 "and a FOOTER\n  channel to a consumer process, against "
		 "smart_rpc_send of the same payload,\n  an in-process "
		 "memcpy and the floor of any cross-process channel (a\n"
		 "  shared ring, memcpy in, read out, counters), alternated, "
		 "--rounds times;\n  medians.  GB/s and slots/s at the "
		 "consumer; p50/p99 commit -> next.\n"
		 "  --serve runs the consumer alone (its address on stdout) "
		 "for --connect\n  HOST:PORT from elsewhere (no floor then); "
		 "--check: every byte checked.\n",
	.flags = chan_flags,
	.csv = chan_csv,
	.create = chan_create,
	.check = chan_check,
	.setup = chan_setup,
	.run = chan_run,
	.report = chan_report,
	.destroy = chan_destroy,
};
