/*
 * The harness of the tests of a stream of several executors with
 * recovery on (docs/stream.md §11; test_stream_cuts.c,
 * test_stream_cuts_hostile.c): executor processes (the role "exec": each
 * attaches to its part of a checkpoint area on the test process's blade,
 * runs its partition of a generated query, polls until the end, and acts
 * at hooks as a plan tells it: killed, held, or reporting), started in
 * runs of E, a death and the survivors' failures checked, the rollback,
 * and the committed logs of all parts checked against the sequential
 * reference.
 */
#ifndef SMART_TEST_STREAM_CUTS_H
#define SMART_TEST_STREAM_CUTS_H

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/lease_blade.h"
#include "harness/smartd_proc.h"
#include "harness/stream_proc.h"
#include "harness/stream_ref.h"
#include "harness/test.h"
#include "smart/smart.h"
#include "smart/stream.h"

#define LEASE_MS  1000
#define KA_MS	  200
#define KA_MISSES 5
#define SLACK_MS  3000 /* scheduling on a loaded machine */
#define MAXE	  3
#define RECORDS	  1500 /* partition i: RECORDS - 200 i records */
#define EPOCH	  32   /* partition 0: 46 full epochs and the final one */
#define CUTS	  47   /* the cuts every executor writes */
#define CHUNK	  29
#define CK_ENTRY  4096
#define CK_RESULT 65536
#define ADDR	  64

static char secret_path[] = "/tmp/smart-strcut-secret-XXXXXX";

enum { M_NONE, M_KILL, M_BLOCK, M_NOTE };
/* child exit codes */
enum { XC_OK = 0, XC_NOT_HIT = 3, XC_CONN = 4, XC_ATTACH = 6, XC_RUN = 7 };

struct report {
	int32_t rc, what; /* what: 0 attach, 1 end, 2 in a hook, 3 dying */
	uint64_t resume, records, late, gone;
	uint64_t t_ms; /* 1, 3: when (lb_now_ms: one clock for the host) */
};

/* The partitions' lengths and the epoch of the current world, set in the
 * environment (the executor processes inherit it): STREAM_CUTS_LENS
 * "a,b,c" (each partition's records), else RECORDS - 200 i times
 * STREAM_CUTS_SCALE (1..40); STREAM_CUTS_EPOCH, else EPOCH. */
static inline uint64_t part_len(uint32_t i)
{
	const char *e = getenv("STREAM_CUTS_LENS");
	const char *sc = getenv("STREAM_CUTS_SCALE");
	uint64_t k = sc ? strtoull(sc, NULL, 0) : 1;

	for (uint32_t j = 0; e && *e; j++) {
		char *end;
		uint64_t x = strtoull(e, &end, 10);

		if (j == i)
			return x;
		e = *end ? end + 1 : end;
	}
	return (k >= 1 && k <= 40 ? k : 1) * (RECORDS - 200 * i);
}

static inline uint32_t epoch_of(void)
{
	return (uint32_t)test_env_int("STREAM_CUTS_EPOCH", 1, 1 << 20, EPOCH);
}

/* The query and keys of a world: K_MAX, MAX per tumbling window of
 * 200, uniform keys; K_SLIDING, SUM per sliding window of 200 every 50,
 * Pareto keys (shape 1.16); K_SESSION, COUNT per key per session (gap
 * 40), Zipf 0.99 keys; K_JOIN, NB8's pairs per tumbling window of 200
 * (the leader state then holds the JOIN's rows too). */
enum { K_MAX, K_SLIDING, K_SESSION, K_JOIN };

static inline uint32_t workload_of(int kind)
{
	return kind == K_JOIN ? SMART_STREAM_GEN_NB8 : SMART_STREAM_GEN_NB7;
}

static inline void query_of(struct smart_stream_query *q, int kind)
{
	CHECK_OK(smart_stream_gen_query(workload_of(kind), q));
	q->lateness = 25;
	q->size = 200;
	if (kind == K_SLIDING) {
		q->window = SMART_STREAM_SLIDING;
		q->slide = 50;
		q->agg = SMART_STREAM_SUM;
	} else if (kind == K_SESSION) {
		q->window = SMART_STREAM_SESSION;
		q->size = 40;
		q->agg = SMART_STREAM_COUNT;
	}
}

static inline uint8_t *input(uint32_t E, uint32_t i, int kind)
{
	struct smart_stream_gen g = { .workload = workload_of(kind),
				      .parts = E,
				      .part = i,
				      .seed = 83,
				      .keys = 100,
				      .zipf_milli = kind == K_SESSION ? 990 : 0,
				      .disorder = 60,
				      .pareto_milli = kind == K_SLIDING ? 1160 :
									  0 };
	struct smart_stream_query q;
	uint8_t *in;

	query_of(&q, kind);
	in = malloc((part_len(i) + 1) * q.record_bytes); /* 0: not NULL */
	CHECK(in != NULL);
	CHECK_OK(smart_stream_gen_fill(&g, 0, part_len(i), in));
	return in;
}

static inline void ck_of(struct smart_stream_ckpt_config *c, smart_gaddr_t base,
			 uint32_t E, uint32_t index)
{
	smart_stream_ckpt_config_init(c);
	c->max_entries = CK_ENTRY;
	c->max_results = CK_RESULT;
	c->base = base;
	c->executors = E;
	c->index = index;
	c->wait_ms = 4 * LEASE_MS;
}

/* ---- the executor process ------------------------------------------------ */

/* Up to two actions at hooks: (point, hit, mode). */
struct act {
	const char *point;
	int hit, hits, mode;
};
struct child_hook {
	struct act a[2];
	int report, hold;
};

static inline void send_report(int fd, const struct report *r)
{
	CHECK_EQ(write(fd, r, sizeof(*r)), (ssize_t)sizeof(*r));
}

static inline int child_hook(smart_worker_t *w, const char *point, void *arg)
{
	struct child_hook *h = arg;

	(void)w;
	for (int i = 0; i < 2; i++) {
		struct act *a = &h->a[i];
		struct report r = { .what = 2 };
		char c;

		if (a->mode == M_NONE || strcmp(point, a->point) ||
		    ++a->hits != a->hit)
			continue;
		if (a->mode == M_KILL) {
			r.what = 3;
			r.t_ms = lb_now_ms();
			send_report(h->report, &r);
			raise(SIGKILL);
		}
		send_report(h->report, &r);
		if (a->mode == M_BLOCK)
			while (read(h->hold, &c, 1) > 0)
				;
	}
	return 0;
}

static inline int run_stream(smart_stream_t *s, const uint8_t *in,
			     uint64_t from, uint64_t n, uint32_t rb)
{
	struct smart_stream_result out[64];
	size_t got;
	int rc = 0;

	for (uint64_t i = from; i < n && !rc; i += CHUNK)
		rc = smart_stream_push(s, in + i * rb,
				       n - i < CHUNK ? n - i : CHUNK);
	if (!rc)
		rc = smart_stream_finish(s);
	while (!rc)
		rc = smart_stream_poll(s, out, 64, &got);
	return rc == SMART_ENOENT ? 0 : rc;
}

static inline struct smart_rpc *rpc_open(smart_worker_t *w, char *addr)
{
	struct smart_rpc_config cfg;
	smart_rpc_t *rpc;

	smart_rpc_config_init(&cfg);
	cfg.timeout_ms = 60000;
	cfg.keepalive_ms = KA_MS; /* a test holds a peer in a hook */
	cfg.keepalive_misses = KA_MISSES;
	CHECK_OK(smart_rpc_create(w, &cfg, &rpc));
	CHECK_OK(smart_rpc_listen(rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(rpc, addr, ADDR));
	return rpc;
}

/* args: blade, base, E, index, up fd, down fd, hold fd, secret, two
 * actions (point, hit, mode), the world's kind.  Sends its address up, reads every
 * address, attaches, reports, runs to the end (polling until the final
 * cut), reports again. */
static inline void child_exec(char **a)
{
	struct child_hook h = { { { a[8], atoi(a[9]), 0, atoi(a[10]) },
				  { a[11], atoi(a[12]), 0, atoi(a[13]) } },
				atoi(a[4]),
				atoi(a[6]) };
	uint32_t E = (uint32_t)atoi(a[2]), me = (uint32_t)atoi(a[3]);
	int kind = atoi(a[14]);
	char addrs[MAXE][ADDR], my[ADDR];
	const char *peers[MAXE];
	struct smart_stream_config c;
	struct smart_stream_ckpt_config cc;
	struct smart_stream_stats st;
	struct report r = { 0 };
	smart_worker_t *w;
	smart_stream_t *s;
	smart_rpc_t *rpc;
	uint16_t blade;
	smart_ctx_t *ctx = lb_ctx_open(a[0], a[7], &blade);
	uint8_t *in = input(E, me, kind);
	int rc;

	CHECK_OK(smart_worker_create(ctx, &w));
	CHECK_OK(smart_ctx_set_hook(ctx, child_hook, &h));
	rpc = rpc_open(w, my);
	sp_full_io(h.report, my, ADDR, 1);
	sp_full_io(atoi(a[5]), addrs, sizeof(addrs), 0);
	for (uint32_t k = 0; k < E; k++)
		peers[k] = addrs[k];
	smart_stream_config_init(&c);
	c.engine = SMART_STREAM_SLASH;
	c.executors = E;
	c.index = me;
	c.epoch_records = epoch_of();
	c.rpc = rpc;
	c.peers = peers;
	query_of(&c.query, kind);
	rc = smart_stream_create(w, &c, &s);
	/* a peer died while the channels opened: gone, or never accepted
	 * our channel (the open's deadline) */
	if (rc == SMART_ECONN || rc == SMART_ETIMEDOUT)
		_exit(XC_CONN);
	CHECK_OK(rc);
	ck_of(&cc, strtoull(a[1], NULL, 0), E, me);
	rc = smart_stream_ckpt_attach(s, &cc, &r.resume);
	r.rc = rc;
	send_report(h.report, &r);
	if (rc)
		_exit(XC_ATTACH);
	rc = run_stream(s, in, r.resume, part_len(me), c.query.record_bytes);
	r.t_ms = lb_now_ms();
	CHECK_OK(smart_stream_stats(s, w, &st));
	r.what = 1;
	r.rc = rc;
	r.records = st.records;
	r.late = st.late;
	r.gone = st.gone;
	send_report(h.report, &r);
	CHECK_OK(smart_stream_close(s, w));
	CHECK_OK(smart_rpc_destroy(rpc));
	CHECK_OK(smart_worker_destroy(w));
	CHECK_OK(smart_ctx_destroy(ctx));
	free(in);
	if (rc)
		_exit(rc == SMART_ECONN ? XC_CONN : XC_RUN);
	for (int i = 0; i < 2; i++)
		if (h.a[i].mode != M_NONE && h.a[i].hits < h.a[i].hit)
			_exit(XC_NOT_HIT);
	_exit(XC_OK);
}

/* ---- the test ------------------------------------------------------------ */

struct world {
	smart_blade_t *b;
	uint16_t blade;
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_gaddr_t base;
	uint64_t bytes;
	uint32_t E;
	int kind;
	struct ref_out ref;
	int runs;
	uint64_t detect_max, detects; /* survivors naming the dead one */
};

struct kid {
	pid_t pid;
	int up, down, hold; /* our ends */
	struct report r[4];
	int nr, st;
};

/* What a kid does at its hooks. */
struct plan {
	const char *point[2];
	int hit[2], mode[2];
};

static inline void kid_start(struct world *wd, struct kid *k, uint32_t i,
			     const struct plan *pl)
{
	char base[24], e[12], ix[12], up[12], dn[12], hd[12], h[2][12],
		m[2][12], kd[12];
	int p[2], d[2], q[2];

	memset(k, 0, sizeof(*k));
	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(d, O_CLOEXEC), 0);
	CHECK_EQ(pipe2(q, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(p[1], F_SETFD, 0), 0);
	CHECK_EQ(fcntl(d[0], F_SETFD, 0), 0);
	CHECK_EQ(fcntl(q[0], F_SETFD, 0), 0);
	snprintf(base, sizeof(base), "0x%" PRIx64, (uint64_t)wd->base);
	snprintf(e, sizeof(e), "%u", wd->E);
	snprintf(ix, sizeof(ix), "%u", i);
	snprintf(up, sizeof(up), "%d", p[1]);
	snprintf(dn, sizeof(dn), "%d", d[0]);
	snprintf(hd, sizeof(hd), "%d", q[0]);
	snprintf(kd, sizeof(kd), "%d", wd->kind);
	for (int j = 0; j < 2; j++) {
		snprintf(h[j], sizeof(h[j]), "%d", pl ? pl->hit[j] : 0);
		snprintf(m[j], sizeof(m[j]), "%d", pl ? pl->mode[j] : M_NONE);
	}
	k->pid = test_spawn("exec",
			    (const char *[]){
				    smart_blade_address(wd->b), base, e, ix, up,
				    dn, hd, secret_path,
				    pl && pl->point[0] ? pl->point[0] : "-",
				    h[0], m[0],
				    pl && pl->point[1] ? pl->point[1] : "-",
				    h[1], m[1], kd, NULL });
	CHECK_GE(k->pid, 0);
	guard_add(k->pid);
	close(p[1]);
	close(d[0]);
	close(q[0]);
	k->up = p[0];
	k->down = d[1];
	k->hold = q[1];
}

/* The next report of a kid: 0 when it closed its pipe first. */
static inline int kid_report(struct kid *k)
{
	if (k->nr == 4 || read(k->up, &k->r[k->nr], sizeof(k->r[0])) !=
				  (ssize_t)sizeof(k->r[0]))
		return 0;
	k->nr++;
	return 1;
}

static inline int kid_wait(struct kid *k)
{
	int st;

	if (k->hold >= 0)
		close(k->hold);
	k->hold = -1;
	while (kid_report(k))
		;
	close(k->up);
	close(k->down);
	CHECK_EQ(waitpid(k->pid, &st, 0), k->pid);
	guard_del(k->pid);
	k->st = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
	return k->st;
}

/* E kids, started and told each other's addresses; plan[i] for kid i. */
static inline void run_start(struct world *wd, struct kid *k,
			     const struct plan *const *plan)
{
	char addrs[MAXE][ADDR] = { { 0 } };

	for (uint32_t i = 0; i < wd->E; i++) {
		kid_start(wd, &k[i], i, plan ? plan[i] : NULL);
		sp_full_io(k[i].up, addrs[i], ADDR, 0);
	}
	for (uint32_t i = 0; i < wd->E; i++)
		sp_full_io(k[i].down, addrs, sizeof(addrs), 1);
}

static inline void run_wait(struct world *wd, struct kid *k)
{
	for (uint32_t i = 0; i < wd->E; i++)
		kid_wait(&k[i]);
}

/* A run with no death: every kid ends XC_OK. */
static inline void run_clean(struct world *wd)
{
	struct kid k[MAXE];

	run_start(wd, k, NULL);
	run_wait(wd, k);
	for (uint32_t i = 0; i < wd->E; i++)
		CHECK_MSG(k[i].st == XC_OK,
			  "executor %u of a clean run: exit %d", i, k[i].st);
}

static inline uint64_t rollback(struct world *wd)
{
	struct smart_stream_ckpt_config cc;
	uint64_t line;

	ck_of(&cc, wd->base, wd->E, 0);
	CHECK_OK(smart_stream_ckpt_rollback(wd->w, &cc, &line));
	return line;
}

static inline void area_zero(struct world *wd)
{
	sp_area_zero(wd->w, wd->base, wd->bytes);
}

/* Every part's committed log, together, equals the reference. */
static inline void check_output(struct world *wd, const char *what)
{
	struct smart_stream_result *out = calloc(CK_RESULT, sizeof(*out));
	size_t n = 0;

	for (uint32_t i = 0; i < wd->E; i++) {
		struct smart_stream_ckpt_config cc;
		uint64_t total;
		size_t got;
		int final;

		ck_of(&cc, wd->base, wd->E, i);
		CHECK_OK(smart_stream_ckpt_output(wd->w, &cc, out + n,
						  CK_RESULT - n, &got, &total,
						  &final));
		CHECK_MSG(final, "%s: part %u: no final cut", what, i);
		n += got;
	}
	qsort(out, n, sizeof(*out), ref_res_cmp);
	CHECK_MSG(n == wd->ref.n, "%s: %zu results, reference %zu", what, n,
		  wd->ref.n);
	CHECK_MSG(!memcmp(out, wd->ref.r, n * sizeof(*out)),
		  "%s: results differ from the reference", what);
	free(out);
	wd->runs++;
}

static inline void world_open(struct world *wd, uint32_t E, int kind)
{
	struct smart_stream_ckpt_config cc;
	struct smart_stream_query q;
	uint8_t *in[MAXE];
	size_t n[MAXE];

	memset(wd, 0, sizeof(*wd));
	wd->E = E;
	wd->kind = kind;
	wd->b = lb_blade_start(64 << 20, LEASE_MS);
	wd->ctx = lb_ctx_open(smart_blade_address(wd->b), secret_path,
			      &wd->blade);
	CHECK_OK(smart_worker_create(wd->ctx, &wd->w));
	ck_of(&cc, 0, E, 0);
	CHECK_OK(smart_stream_ckpt_bytes(&cc, &wd->bytes));
	CHECK_OK(smart_alloc(wd->w, wd->blade, wd->bytes, &wd->base));
	query_of(&q, kind);
	for (uint32_t i = 0; i < E; i++) {
		in[i] = input(E, i, kind);
		n[i] = part_len(i);
	}
	ref_run(&q, E, (const uint8_t *const *)in, n, &wd->ref);
	CHECK(wd->ref.n > 0);
	for (uint32_t i = 0; i < E; i++)
		free(in[i]);
}

static inline void world_close(struct world *wd)
{
	free(wd->ref.r);
	CHECK_OK(smart_worker_destroy(wd->w));
	CHECK_OK(smart_ctx_destroy(wd->ctx));
	smart_blade_destroy(wd->b);
}

/* A run in which kid v dies by plan pl: it ends by SIGKILL, every other
 * one with SMART_ECONN naming a peer that left (the dead one, or a
 * survivor that left first), and one names the dead one. */
static inline void run_death(struct world *wd, uint32_t v,
			     const struct plan *pl, const char *what)
{
	const struct plan *plans[MAXE] = { 0 };
	struct kid k[MAXE];
	int named = 0;

	plans[v] = pl;
	run_start(wd, k, plans);
	run_wait(wd, k);
	if (getenv("STREAM_CUTS_LOOSE")) { /* a death after the end: */
		CHECK_MSG(k[v].st == -SIGKILL, "%s: the victim's exit %d", what,
			  k[v].st);
		for (uint32_t i = 0; i < wd->E; i++) /* survivors may end */
			CHECK_MSG(i == v || k[i].st == XC_CONN ||
					  k[i].st == XC_OK,
				  "%s: survivor %u: exit %d", what, i, k[i].st);
		return;
	}
	CHECK_MSG(k[v].st == -SIGKILL, "%s: the victim's exit %d", what,
		  k[v].st);
	for (uint32_t i = 0; i < wd->E; i++) {
		struct report *end = k[i].nr ? &k[i].r[k[i].nr - 1] : NULL;

		if (i == v)
			continue;
		CHECK_MSG(k[i].st == XC_CONN && end && end->what == 1 &&
				  end->gone && !(end->gone >> wd->E) &&
				  !(end->gone & 1ULL << i),
			  "%s: survivor %u: exit %d, gone %#" PRIx64, what, i,
			  k[i].st, end ? end->gone : 0);
		if (end->gone & 1ULL << v) {
			const struct report *d = &k[v].r[k[v].nr - 1];
			uint64_t ms;

			CHECK(k[v].nr && d->what == 3 && end->t_ms >= d->t_ms);
			ms = end->t_ms - d->t_ms;
			wd->detect_max = ms > wd->detect_max ? ms :
							       wd->detect_max;
			wd->detects++;
			named++;
		}
	}
	CHECK_MSG(named || wd->E == 1,
		  "%s: no survivor named the dead executor", what);
}

static const char *const points[] = { "stream.epoch.fired",
				      "stream.ckpt.logged", "stream.ckpt.torn",
				      "stream.ckpt.written" };

#endif
