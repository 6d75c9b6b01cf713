/*
 * Exactly-once recovery of a stream of several executors (docs/stream.md
 * §11, "Several executors"): E executor processes (SLASH, NB7 with
 * disorder, partitions of different lengths so that executors go on as
 * leaders after their own input ended) checkpoint aligned cuts into their
 * parts of one blade area.  One of them is killed with SIGKILL at a hook;
 * the survivors fail with SMART_ECONN naming it; the test process rolls
 * the area back to the newest cut every part holds; a new run of E
 * processes attaches (the dead part taken over through its lease),
 * replays from the cut and finishes.  The committed logs of all parts
 * together must equal the sequential reference exactly.  Also: a part
 * ahead of the cut is refused by attach until the rollback ran, a
 * recoverer killed inside its recovery, and a leader that may not take a
 * source's next epoch before its own cut is written.
 */
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

/* SMART_STREAM_SCALE (1..40, `random` sets it for its children): the
 * partitions that many times longer. */
static uint64_t part_len(uint32_t i)
{
	const char *sc = getenv("SMART_STREAM_SCALE");
	uint64_t k = sc ? strtoull(sc, NULL, 0) : 1;

	return (k >= 1 && k <= 40 ? k : 1) * (RECORDS - 200 * i);
}

/* The query and keys of a world: K_MAX, MAX per tumbling window of
 * 200, uniform keys; K_SLIDING, SUM per sliding window of 200 every 50,
 * Pareto keys (shape 1.16); K_SESSION, COUNT per key per session (gap
 * 40), Zipf 0.99 keys; K_JOIN, NB8's pairs per tumbling window of 200
 * (the leader state then holds the JOIN's rows too). */
enum { K_MAX, K_SLIDING, K_SESSION, K_JOIN };

static uint32_t workload_of(int kind)
{
	return kind == K_JOIN ? SMART_STREAM_GEN_NB8 : SMART_STREAM_GEN_NB7;
}

static void query_of(struct smart_stream_query *q, int kind)
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

static uint8_t *input(uint32_t E, uint32_t i, int kind)
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
	in = malloc(part_len(i) * q.record_bytes);
	CHECK(in != NULL);
	CHECK_OK(smart_stream_gen_fill(&g, 0, part_len(i), in));
	return in;
}

static void ck_of(struct smart_stream_ckpt_config *c, smart_gaddr_t base,
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

static void send_report(int fd, const struct report *r)
{
	CHECK_EQ(write(fd, r, sizeof(*r)), (ssize_t)sizeof(*r));
}

static int child_hook(smart_worker_t *w, const char *point, void *arg)
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

static int run_stream(smart_stream_t *s, const uint8_t *in, uint64_t from,
		      uint64_t n, uint32_t rb)
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

static struct smart_rpc *rpc_open(smart_worker_t *w, char *addr)
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
static void child_exec(char **a)
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
	c.epoch_records = EPOCH;
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

static void kid_start(struct world *wd, struct kid *k, uint32_t i,
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
static int kid_report(struct kid *k)
{
	if (k->nr == 4 || read(k->up, &k->r[k->nr], sizeof(k->r[0])) !=
				  (ssize_t)sizeof(k->r[0]))
		return 0;
	k->nr++;
	return 1;
}

static int kid_wait(struct kid *k)
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
static void run_start(struct world *wd, struct kid *k,
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

static void run_wait(struct world *wd, struct kid *k)
{
	for (uint32_t i = 0; i < wd->E; i++)
		kid_wait(&k[i]);
}

/* A run with no death: every kid ends XC_OK. */
static void run_clean(struct world *wd)
{
	struct kid k[MAXE];

	run_start(wd, k, NULL);
	run_wait(wd, k);
	for (uint32_t i = 0; i < wd->E; i++)
		CHECK_MSG(k[i].st == XC_OK,
			  "executor %u of a clean run: exit %d", i, k[i].st);
}

static uint64_t rollback(struct world *wd)
{
	struct smart_stream_ckpt_config cc;
	uint64_t line;

	ck_of(&cc, wd->base, wd->E, 0);
	CHECK_OK(smart_stream_ckpt_rollback(wd->w, &cc, &line));
	return line;
}

static void area_zero(struct world *wd)
{
	sp_area_zero(wd->w, wd->base, wd->bytes);
}

/* Every part's committed log, together, equals the reference. */
static void check_output(struct world *wd, const char *what)
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

static void world_open(struct world *wd, uint32_t E, int kind)
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
	CHECK(wd->ref.late > 100 && wd->ref.n > 100);
	for (uint32_t i = 0; i < E; i++)
		free(in[i]);
}

static void world_close(struct world *wd)
{
	free(wd->ref.r);
	CHECK_OK(smart_worker_destroy(wd->w));
	CHECK_OK(smart_ctx_destroy(wd->ctx));
	smart_blade_destroy(wd->b);
}

/* A run in which kid v dies by plan pl: it ends by SIGKILL, every other
 * one with SMART_ECONN naming a peer that left (the dead one, or a
 * survivor that left first), and one names the dead one. */
static void run_death(struct world *wd, uint32_t v, const struct plan *pl,
		      const char *what)
{
	const struct plan *plans[MAXE] = { 0 };
	struct kid k[MAXE];
	int named = 0;

	plans[v] = pl;
	run_start(wd, k, plans);
	run_wait(wd, k);
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

/* The victim (the last executor: the shortest input, so it writes its
 * last cuts as a leader only) killed at each epoch-end hook at its first,
 * a middle and its last own epoch, and at the checkpoint hooks also in
 * a cut it writes after its input ended; then the rollback and a new run. */
static void kills_of(struct world *wd, uint32_t v, int *runs)
{
	int own = (int)((part_len(v) + EPOCH) / EPOCH);
	const int hits[] = { 1, 25, own, CUTS - 3 };

	for (size_t p = 0; p < 4; p++)
		for (size_t h = 0; h < 4; h++) {
			struct plan pl = { { points[p], NULL },
					   { hits[h], 0 },
					   { M_KILL, M_NONE } };
			char what[96];
			uint64_t line;

			if (p == 0 && hits[h] > own)
				continue; /* no own epoch end there */
			snprintf(what, sizeof(what),
				 "E %u, executor %u at %s #%d", wd->E, v,
				 points[p], hits[h]);
			area_zero(wd);
			run_death(wd, v, &pl, what);
			line = rollback(wd);
			run_clean(wd);
			check_output(wd, what);
			(*runs)++;
			printf("%s: killed; survivors SMART_ECONN naming it; "
			       "rolled back to cut %2" PRIu64
			       "; new run: output = reference\n",
			       what, line);
		}
}

static void test_kills(void)
{
	for (uint32_t E = 2; E <= MAXE; E++) {
		struct world wd;
		int runs = 0;

		world_open(&wd, E, K_MAX);
		kills_of(&wd, E - 1, &runs);
		printf("E %u: %d runs with a death, every output equal to the "
		       "reference (%zu results, %" PRIu64 " late); %" PRIu64
		       " survivors failed naming the dead executor at most %" PRIu64
		       " ms after its death (keepalive bound %d ms)\n",
		       E, runs, wd.ref.n, wd.ref.late, wd.detects,
		       wd.detect_max, KA_MS * KA_MISSES);
		CHECK_LE(wd.detect_max, KA_MS * KA_MISSES + SLACK_MS);
		CHECK_EQ(runs, 15);
		world_close(&wd);
	}
}

/* A world of E executors with the query kind, its last executor killed
 * at an epoch end (#20), in a torn slot (#30) and after cut 44 (written
 * after its input ended). */
static void three_deaths(uint32_t E, int kind, const char *label)
{
	static const struct {
		const char *point;
		int hit;
	} at[] = { { "stream.epoch.fired", 20 },
		   { "stream.ckpt.torn", 30 },
		   { "stream.ckpt.written", CUTS - 3 } };
	struct world wd;

	world_open(&wd, E, kind);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		struct plan pl = { { at[i].point, NULL },
				   { at[i].hit, 0 },
				   { M_KILL, M_NONE } };
		uint64_t line;

		area_zero(&wd);
		run_death(&wd, E - 1, &pl, at[i].point);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, at[i].point);
		printf("%s, E %u, executor %u killed at %s #%d: rolled back to "
		       "cut %" PRIu64 ", output = reference (%zu results)\n",
		       label, E, E - 1, at[i].point, at[i].hit, line, wd.ref.n);
	}
	CHECK_EQ(wd.runs, 3);
	world_close(&wd);
}

/* Sliding windows over Pareto keys and session windows over Zipf keys,
 * E 3. */
static void test_queries(void)
{
	three_deaths(3, K_SLIDING, "sliding SUM, Pareto keys");
	three_deaths(3, K_SESSION, "sessions, Zipf keys");
}

/* NB8's join (its rows in the checkpoints), one executor and two. */
static void test_join(void)
{
	three_deaths(1, K_JOIN, "NB8 join");
	three_deaths(2, K_JOIN, "NB8 join");
}

/* Executor 0 (the longest input: its epochs end last) killed inside its
 * own final cut, E 3: the others wrote theirs, and must not report the
 * end (SMART_ENOENT) while part 0 is short of it: they fail with
 * SMART_ECONN, and the rollback and a new run give the reference. */
static void test_final_cut(void)
{
	static const char *const at[] = { "stream.epoch.fired",
					  "stream.ckpt.logged",
					  "stream.ckpt.torn" };
	struct world wd;

	world_open(&wd, 3, K_MAX);
	for (size_t i = 0; i < sizeof(at) / sizeof(*at); i++) {
		int hit = i ? CUTS : (int)((part_len(0) + EPOCH) / EPOCH);
		struct plan pl = { { at[i], NULL },
				   { hit, 0 },
				   { M_KILL, M_NONE } };
		uint64_t line;

		area_zero(&wd);
		run_death(&wd, 0, &pl, at[i]);
		line = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, at[i]);
		printf("executor 0 killed at %s #%d (its final cut): the "
		       "others failed with SMART_ECONN, not the end; rolled "
		       "back to cut %" PRIu64 ", output = reference\n",
		       at[i], hit, line);
		CHECK_EQ(line, CUTS - 1);
	}
	world_close(&wd);
}

/* The run after a death killed too, inside its recovery (at attach's
 * hooks) and in a cut it replays: a third run finishes. */
static void test_recoverer(void)
{
	static const struct {
		const char *point;
		int hit;
	} rec[] = { { "stream.recover.owned", 1 },
		    { "stream.recover.restored", 1 },
		    { "stream.ckpt.torn", 12 } };
	struct world wd;

	world_open(&wd, 2, K_MAX);
	for (size_t i = 0; i < sizeof(rec) / sizeof(*rec); i++) {
		struct plan first = { { "stream.ckpt.written", NULL },
				      { 10, 0 },
				      { M_KILL, M_NONE } };
		struct plan second = { { rec[i].point, NULL },
				       { rec[i].hit, 0 },
				       { M_KILL, M_NONE } };
		uint64_t l1, l2;

		area_zero(&wd);
		run_death(&wd, 1, &first, "first death");
		l1 = rollback(&wd);
		run_death(&wd, 0, &second, rec[i].point);
		l2 = rollback(&wd);
		run_clean(&wd);
		check_output(&wd, rec[i].point);
		printf("executor 1 killed at stream.ckpt.written #10 (cut %" PRIu64
		       "), then executor 0 of the recovering run at %s #%d "
		       "(cut %" PRIu64 "): a third run: output = reference\n",
		       l1, rec[i].point, rec[i].hit, l2);
		CHECK_GE(l2, l1);
	}
	world_close(&wd);
}

/* kill -9 at a random moment, not at a hook: each round a world of 2 or
 * 3 executors and one of the four queries; executor r of it killed by
 * the test process after a seeded delay within its run (the run may have
 * ended by then: the output is checked all the same); rollback, a new
 * run, the output must be the reference.  Rounds: SMART_CRASH_ROUNDS
 * (3), seed SMART_CRASH_SEED (1); the delay is what varies, never what
 * is asserted.  bench/stream-crash.sh runs it for minutes. */
static void test_random(void)
{
	const char *rs = getenv("SMART_CRASH_ROUNDS"),
		   *ss = getenv("SMART_CRASH_SEED");
	int rounds = rs ? atoi(rs) : 3, deaths = 0;
	smart_rng_t rng;

	smart_rng_seed(&rng, ss ? strtoull(ss, NULL, 0) : 1);
	CHECK_EQ(setenv("SMART_STREAM_SCALE", "20", 1), 0); /* ~0.5 s runs */
	for (int round = 0; round < rounds; round++) {
		uint32_t E = 2 + (uint32_t)smart_rng_below(&rng, 2);
		int kind = (int)smart_rng_below(&rng, 4);
		uint32_t v = (uint32_t)smart_rng_below(&rng, E);
		/* within the run (from every executor attached): about 50 ms
		 * at E 2, 300 ms at E 3 here */
		uint64_t ms = smart_rng_below(&rng, E == 2 ? 50 : 300),
			 line = 0, t0, run_ms;
		struct world wd;
		struct kid k[MAXE];
		int died;

		world_open(&wd, E, kind);
		area_zero(&wd);
		t0 = lb_now_ms();
		run_start(&wd, k, NULL);
		for (uint32_t i = 0; i < E; i++) /* every one attached */
			CHECK(kid_report(&k[i]) && k[i].r[0].what == 0);
		usleep((useconds_t)ms * 1000); /* the moment, not a sync */
		kill(k[v].pid, SIGKILL);
		run_wait(&wd, k);
		run_ms = lb_now_ms() - t0;
		died = k[v].st == -SIGKILL;
		for (uint32_t i = 0; i < E; i++)
			CHECK_MSG(k[i].st == XC_OK || k[i].st == XC_CONN ||
					  (i == v && died),
				  "round %d: executor %u exit %d", round, i,
				  k[i].st);
		if (died) {
			line = rollback(&wd);
			run_clean(&wd);
			deaths++;
		}
		check_output(&wd, "random");
		printf("round %d: E %u, query %d, executor %u killed %" PRIu64
		       " ms in (run %" PRIu64 " ms): %s; output = reference\n",
		       round, E, kind, v, ms, run_ms,
		       died ? "died, rolled back and rerun" : "had ended");
		(void)line;
		world_close(&wd);
	}
	CHECK_EQ(unsetenv("SMART_STREAM_SCALE"), 0);
	printf("%d rounds, %d with a death, every output = reference\n", rounds,
	       deaths);
}

/* A part ahead of the others' cut is refused by attach until the
 * rollback made every part restart from one cut. */
static void test_unrolled(void)
{
	struct plan pl = { { "stream.ckpt.logged", NULL },
			   { 10, 0 },
			   { M_KILL, M_NONE } };
	struct world wd;
	struct kid k[2];
	uint64_t line;

	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	/* executor 1 dies with cut 10 logged, not written; executor 0 had
	 * every source's epoch 10 and part 1 held cut 9: it wrote cut 10 */
	run_death(&wd, 1, &pl, "unrolled");
	run_start(&wd, k, NULL);
	run_wait(&wd, k);
	CHECK_MSG(k[0].st == XC_ATTACH && k[0].r[0].rc == SMART_EINVAL,
		  "the part ahead attached: exit %d, rc %d", k[0].st,
		  k[0].r[0].rc);
	line = rollback(&wd);
	CHECK_EQ(line, 9);
	run_clean(&wd);
	check_output(&wd, "unrolled");
	printf("part 0 at cut 10, part 1 at cut 9: attach of part 0 refused "
	       "(SMART_EINVAL) before the rollback; rolled back to cut %" PRIu64
	       ", new run: output = reference\n",
	       line);
	world_close(&wd);
}

/* A leader may not take a source's epoch past the cut it builds.
 * Executor 1 is held after shipping its epoch N - 1, so executor 0 ends
 * its epoch N (shipped) with nothing of executor 1's epoch N, and is held
 * there (before it waits for its cut).  Executor 1, released, writes cut
 * N - 1, ships epoch N, writes cut N (executor 0's epoch N is in) and
 * ships epoch N + 1 (it says so at that epoch end's hook).  Executor 0,
 * released, finds epochs N and N + 1 in its channel and must leave N + 1
 * there until its cut N is written; it dies right after that cut: cut N
 * is the line of both parts, and the new run replays N + 1 once. */
static void test_take_ahead(void)
{
	enum { N = 12 };
	struct plan p0 = { { "stream.epoch.fired", "stream.ckpt.written" },
			   { N, N },
			   { M_BLOCK, M_KILL } };
	struct plan p1 = { { "stream.epoch.fired", "stream.epoch.fired" },
			   { N - 1, N + 1 },
			   { M_BLOCK, M_NOTE } };
	const struct plan *plans[2] = { &p0, &p1 };
	struct world wd;
	struct kid k[2];
	uint64_t line;

	world_open(&wd, 2, K_MAX);
	area_zero(&wd);
	run_start(&wd, k, plans);
	CHECK(kid_report(&k[1]) && kid_report(&k[1])); /* attached; held */
	CHECK_EQ(k[1].r[1].what, 2);
	CHECK(kid_report(&k[0]) && kid_report(&k[0])); /* attached; held */
	CHECK_EQ(k[0].r[1].what, 2);
	close(k[1].hold); /* executor 1 goes on */
	k[1].hold = -1;
	CHECK(kid_report(&k[1])); /* it shipped N + 1 */
	CHECK_EQ(k[1].r[2].what, 2);
	run_wait(&wd, k); /* executor 0 goes on, and dies */
	CHECK_MSG(k[0].st == -SIGKILL, "executor 0: exit %d", k[0].st);
	CHECK_MSG(k[1].st == XC_CONN, "executor 1: exit %d", k[1].st);
	line = rollback(&wd);
	CHECK_EQ(line, N);
	run_clean(&wd);
	check_output(&wd, "take ahead");
	printf("executor 1 shipped epochs %d and %d while executor 0 was held "
	       "before its cut %d; executor 0 killed after it: rolled back "
	       "to cut %" PRIu64 ", new run: output = reference\n",
	       N, N + 1, N, line);
	world_close(&wd);
}

int main(int argc, char **argv)
{
	const char *rounds = getenv("SMART_CRASH_ROUNDS");

	test_children(argc, argv,
		      (struct test_child[]){ { "exec", child_exec }, { 0 } });
	/* `random` for minutes (bench/stream-crash.sh): a few s a round */
	guard_init(300 + (rounds ? 5 * (unsigned)atoi(rounds) : 0));
	secret_file(secret_path, LB_SECRET);
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "kills", test_kills },
				 { "queries", test_queries },
				 { "join", test_join },
				 { "final_cut", test_final_cut },
				 { "recoverer", test_recoverer },
				 { "unrolled", test_unrolled },
				 { "take_ahead", test_take_ahead },
				 { "random", test_random },
				 { 0 } });
}
