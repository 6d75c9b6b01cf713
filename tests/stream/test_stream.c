/*
 * The stream layer (include/smart/stream.h, docs/stream.md) against its
 * sequential reference (tests/harness/stream_ref.h): for each workload
 * (YSB, CM, NB7, RO) x engine (local, slash, uppar) x executors (1, 2, 3)
 * x epoch size (tiny: hundreds of epochs; large: one) x skew (uniform,
 * Zipf 0.99), the multiset of emitted (window, key, value, count) equals
 * the reference's exactly, and so do the late, implausible and filtered
 * counts; also with bounded disorder and sliding windows, with executors
 * as forked processes, under the adversarial shm mode, and for random
 * bytes as records.  A leader fires a window only on the watermark of
 * every source (a helper held back until the leader finished: nothing
 * emitted early, results equal); empty deltas advance a leader's view of
 * an idle source (windows fire before the end, counted); a hostile peer's
 * delta (bad length, a key not led here, a replayed epoch, a watermark
 * going back, a bad magic) cuts it with SMART_EPROTO, counted; a full
 * state gives SMART_ENOSPC.  Sessions (NB11) and the NB8 join, which
 * emits each (window, person, auction) pair: equal to the reference as a
 * multiset, its rows bounded (SMART_ENOSPC) and a peer's rows checked
 * (SMART_EPROTO).  The channels' FOOTER mode (polled footer
 * and CRC) gives the same results, with every slot counted as a FOOTER
 * one, in threads, processes and under the adversarial shm mode; keys of
 * a bounded Pareto law (the generator's third skew) give the reference's
 * results across engines x executors, and the same bytes in any chunking.
 *
 * Executors are threads with an endpoint each, or child processes
 * (test_spawn) that exchange addresses and results over pipes.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "harness/blade_fixture.h"
#include "harness/sched.h"
#include "harness/stream_proc.h"
#include "harness/stream_ref.h"
#include "harness/test.h"
#include "smart/chan.h"
#include "smart/rpc.h"
#include "smart/smart.h"
#include "smart/stream.h"
#include "stream/stream_int.h"

#define SECRET "stream-test-secret-2718"
#define MAXE   3
#define CHUNK  97

static char secret_path[64];
static pid_t secret_owner;

/* The secret file goes with the process that wrote it (executors forked
 * from it exit too, and must not take it from their siblings). */
static void secret_drop(void)
{
	if (getpid() == secret_owner)
		unlink(secret_path);
}

static void secret_init(void)
{
	int fd;

	if (secret_path[0])
		return;
	secret_owner = getpid();
	atexit(secret_drop);
	snprintf(secret_path, sizeof(secret_path), "/tmp/stream-secret-%d",
		 (int)getpid());
	fd = open(secret_path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, SECRET, strlen(SECRET)), (ssize_t)strlen(SECRET));
	close(fd);
}

/* An executor process (test_spawn) reads its parent's file: it makes none,
 * so one it could not remove (it ends by _exit or is killed) is never left. */
static void secret_inherit(void)
{
	snprintf(secret_path, sizeof(secret_path), "/tmp/stream-secret-%d",
		 (int)getppid());
}

struct end {
	smart_ctx_t *ctx;
	smart_worker_t *w;
	smart_rpc_t *rpc;
	char addr[64];
};

/* ka_ms, ka_misses: the endpoint's keepalive (0: its defaults). */
static void end_open_ka(struct end *e, int rpc, uint32_t ka_ms,
			uint32_t ka_misses)
{
	struct smart_rpc_config cfg;

	memset(e, 0, sizeof(*e));
	e->ctx = fixture_ctx((const char *[]){ "secret_file", secret_path,
					       "buf_pool", "4M", NULL });
	CHECK_OK(smart_worker_create(e->ctx, &e->w));
	if (!rpc)
		return;
	smart_rpc_config_init(&cfg);
	cfg.timeout_ms = 60000;
	cfg.keepalive_ms = ka_ms;
	cfg.keepalive_misses = ka_misses;
	CHECK_OK(smart_rpc_create(e->w, &cfg, &e->rpc));
	CHECK_OK(smart_rpc_listen(e->rpc, "127.0.0.1:0"));
	CHECK_OK(smart_rpc_listen_addr(e->rpc, e->addr, sizeof(e->addr)));
}

static void end_open(struct end *e, int rpc)
{
	end_open_ka(e, rpc, 0, 0);
}

static void end_close(struct end *e)
{
	CHECK_OK(smart_rpc_destroy(e->rpc));
	CHECK_OK(smart_worker_destroy(e->w));
	CHECK_OK(smart_ctx_destroy(e->ctx));
}

/* One run: E partitions of generated (or given) records. */
struct run {
	uint32_t engine, E, epoch, max_entries;
	uint32_t chan_mode; /* SMART_CHAN_IMM or _FOOTER */
	uint32_t pareto;    /* gen_input: the Pareto shape x 1000, 0: off */
	struct smart_stream_query q;
	uint8_t *in[MAXE];
	size_t n[MAXE];
	int delay; /* executors > 0 push only after executor 0 finished */
	atomic_int zero_done;
	smart_stream_hub_t *hub;
	pthread_barrier_t bar;
	struct end end[MAXE];
	const char *peers[MAXE];
	struct smart_stream_result *res[MAXE];
	size_t nres[MAXE];
	struct smart_stream_stats st[MAXE];
	int push_rc[MAXE];
	uint32_t ka_ms, ka_misses;     /* the endpoints' keepalive */
	atomic_ulong probes, given_up; /* executor 1's endpoint (keepalive) */
};

/* Executor 1 publishes its endpoint's keepalive counters while it polls
 * (test_keepalive reads them from executor 0's extract callback). */
static void publish_ka(struct run *r, uint32_t i)
{
	struct smart_rpc_stats st;

	if (i != 1 || !r->ka_ms)
		return;
	CHECK_OK(smart_rpc_stats(r->end[i].rpc, &st));
	atomic_store(&r->probes, st.ka_probes);
	atomic_store(&r->given_up, st.ka_failures);
}

static void collect(struct run *r, uint32_t i, smart_stream_t *s)
{
	struct smart_stream_result buf[64];
	uint64_t end = test_now_ms() + 120000;
	size_t k, cap = 0;
	int rc;

	while ((rc = smart_stream_poll(s, buf, 64, &k)) != SMART_ENOENT) {
		publish_ka(r, i);
		if (rc && r->ka_ms) { /* test_keepalive reports it */
			r->push_rc[i] = rc;
			return;
		}
		CHECK_OK(rc);
		if (r->nres[i] + k > cap) {
			cap = (r->nres[i] + k) * 2;
			r->res[i] = realloc(r->res[i], cap * sizeof(*buf));
		}
		if (k) /* no results yet: r->res[i] is still NULL */
			memcpy(r->res[i] + r->nres[i], buf, k * sizeof(*buf));
		r->nres[i] += k;
		if (test_now_ms() > end)
			TEST_FAIL("executor %u: no end of results", i);
	}
}

static void wait_zero(struct run *r, smart_stream_t *s)
{
	uint64_t end = test_now_ms() + 120000;
	size_t k;

	while (!atomic_load(&r->zero_done)) {
		CHECK_OK(smart_stream_poll(s, NULL, 0, &k));
		if (test_now_ms() > end)
			TEST_FAIL("executor 0 never finished");
	}
}

static void exec_one(struct run *r, uint32_t i, struct end *e)
{
	struct smart_stream_config c;
	smart_stream_t *s;
	int rc = 0;

	smart_stream_config_init(&c);
	c.engine = r->engine;
	c.executors = r->E;
	c.index = i;
	c.epoch_records = r->epoch;
	c.max_entries = r->max_entries;
	c.rpc = e->rpc;
	c.peers = r->peers;
	c.hub = r->hub;
	c.slot_bytes = 4096;
	c.query = r->q;
	c.chan_mode = r->chan_mode;
	CHECK_OK(smart_stream_create(e->w, &c, &s));
	if (r->delay && i)
		wait_zero(r, s);
	for (size_t k = 0; k < r->n[i] && !rc; k += CHUNK)
		rc = smart_stream_push(s, r->in[i] + k * r->q.record_bytes,
				       r->n[i] - k < CHUNK ? r->n[i] - k :
							     CHUNK);
	r->push_rc[i] = rc;
	if (!rc && r->ka_ms)
		rc = r->push_rc[i] = smart_stream_finish(s);
	if (!rc) {
		if (!r->ka_ms)
			CHECK_OK(smart_stream_finish(s));
		if (!i)
			atomic_store(&r->zero_done, 1);
		collect(r, i, s);
	}
	CHECK_OK(smart_stream_stats(s, e->w, &r->st[i]));
	CHECK_OK(smart_stream_close(s, e->w));
}

struct targ {
	struct run *r;
	uint32_t i;
};

static void *exec_thread(void *arg)
{
	struct targ *t = arg;
	struct run *r = t->r;
	struct end *e = &r->end[t->i];

	end_open_ka(e, r->engine != SMART_STREAM_LOCAL, r->ka_ms, r->ka_misses);
	r->peers[t->i] = e->addr;
	pthread_barrier_wait(&r->bar);
	exec_one(r, t->i, e);
	end_close(e);
	return NULL;
}

static void run_threads(struct run *r)
{
	pthread_t th[MAXE];
	struct targ t[MAXE];

	atomic_store(&r->zero_done, 0);
	if (r->engine == SMART_STREAM_LOCAL)
		CHECK_OK(
			smart_stream_hub_create(r->E, r->max_entries, &r->hub));
	pthread_barrier_init(&r->bar, NULL, r->E);
	for (uint32_t i = 0; i < r->E; i++) {
		t[i] = (struct targ){ r, i };
		CHECK_EQ(pthread_create(&th[i], NULL, exec_thread, &t[i]), 0);
	}
	for (uint32_t i = 0; i < r->E; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&r->bar);
	smart_stream_hub_destroy(r->hub);
	r->hub = NULL;
}

static void gen_input(struct run *r, uint32_t workload, size_t n, uint32_t zipf,
		      uint64_t disorder, uint64_t keys)
{
	for (uint32_t p = 0; p < r->E; p++) {
		struct smart_stream_gen g = { .workload = workload,
					      .parts = r->E,
					      .part = p,
					      .seed = 77 + workload,
					      .keys = keys,
					      .zipf_milli = zipf,
					      .disorder = disorder,
					      .pareto_milli = r->pareto };

		r->n[p] = n;
		r->in[p] = malloc(n * r->q.record_bytes);
		CHECK_OK(smart_stream_gen_fill(&g, 0, n, r->in[p]));
	}
}

static void run_free(struct run *r)
{
	for (uint32_t i = 0; i < MAXE; i++) {
		free(r->in[i]);
		free(r->res[i]);
		r->in[i] = NULL;
		r->res[i] = NULL;
		r->nres[i] = 0;
	}
}

/* The emitted multiset and the drop counts against the reference. */
static void check_ref(struct run *r, const char *what)
{
	struct smart_stream_result *all;
	struct ref_out o;
	uint64_t late = 0, impl = 0, filt = 0;
	size_t n = 0;

	ref_run(&r->q, r->E, (const uint8_t *const *)r->in, r->n, &o);
	for (uint32_t i = 0; i < r->E; i++) {
		CHECK_OK(r->push_rc[i]);
		n += r->nres[i];
		late += r->st[i].late;
		impl += r->st[i].implausible;
		filt += r->st[i].filtered;
	}
	all = malloc((n ? n : 1) * sizeof(*all));
	n = 0;
	for (uint32_t i = 0; i < r->E; i++) {
		if (r->nres[i]) /* an executor with no results: NULL */
			memcpy(all + n, r->res[i], r->nres[i] * sizeof(*all));
		n += r->nres[i];
	}
	qsort(all, n, sizeof(*all), ref_res_cmp);
	if (n != o.n || (n && memcmp(all, o.r, n * sizeof(*all))) ||
	    late != o.late || impl != o.implausible || filt != o.filtered)
		TEST_FAIL("%s: %zu results (reference %zu), late %" PRIu64
			  " (%" PRIu64 "), implausible %" PRIu64 " (%" PRIu64
			  "), filtered %" PRIu64 " (%" PRIu64 ")",
			  what, n, o.n, late, o.late, impl, o.implausible, filt,
			  o.filtered);
	free(all);
	free(o.r);
}

static const char *const engines[] = { "local", "slash", "uppar" };
static const char *const workloads[] = {
	"ysb", "cm", "nb7", "ro", "nb11", "nb8"
};

static void matrix(uint32_t engine)
{
	static const uint32_t epochs[] = { 16, 1u << 20 };
	static const uint32_t zipf[] = { 0, 990 };
	uint64_t epochs_seen = 0;

	secret_init();
	for (uint32_t wl = 0; wl < 4; wl++)
		for (uint32_t E = 1; E <= MAXE; E++)
			for (int ep = 0; ep < 2; ep++)
				for (int z = 0; z < 2; z++) {
					struct run r = { .engine = engine,
							 .E = E,
							 .epoch = epochs[ep] };
					char what[96];

					CHECK_OK(smart_stream_gen_query(wl,
									&r.q));
					r.q.size = wl == SMART_STREAM_GEN_RO ?
							   r.q.size :
							   300;
					gen_input(&r, wl, 2000, zipf[z], 0,
						  500);
					run_threads(&r);
					snprintf(what, sizeof(what),
						 "%s %s E=%u epoch=%u zipf=%u",
						 engines[engine], workloads[wl],
						 E, epochs[ep], zipf[z]);
					check_ref(&r, what);
					if (ep == 0)
						epochs_seen += r.st[0].epochs;
					run_free(&r);
				}
	/* the tiny epochs forced hundreds of epochs per executor */
	CHECK(epochs_seen > 100 * 24);
}

static void test_local(void)
{
	matrix(SMART_STREAM_LOCAL);
}

static void test_slash(void)
{
	matrix(SMART_STREAM_SLASH);
}

static void test_uppar(void)
{
	matrix(SMART_STREAM_UPPAR);
}

/* Bounded disorder: records shifted back up to 60, lateness 25: some are
 * late, dropped and counted as the reference does; sliding windows too. */
static void test_disorder(void)
{
	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (int sliding = 0; sliding < 2; sliding++) {
			struct run r = { .engine = engine,
					 .E = 2,
					 .epoch = 40 };
			uint64_t late = 0;

			CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_NB7,
							&r.q));
			r.q.lateness = 25;
			r.q.size = 200;
			if (sliding) {
				r.q.window = SMART_STREAM_SLIDING;
				r.q.slide = 50;
				r.q.agg = SMART_STREAM_SUM;
			}
			gen_input(&r, SMART_STREAM_GEN_NB7, 3000, 0, 60, 100);
			run_threads(&r);
			check_ref(&r, engines[engine]);
			for (uint32_t i = 0; i < r.E; i++)
				late += r.st[i].late;
			CHECK(late > 100);
			printf("%s sliding=%d: late %" PRIu64 "\n",
			       engines[engine], sliding, late);
			run_free(&r);
		}
}

/* Any bit pattern is a record: random bytes, keys of one byte, times of
 * two (many late) and of eight (most implausible). */
static void test_fuzz(void)
{
	secret_init();
	for (uint64_t seed = 1; seed <= 3; seed++)
		for (uint32_t tsize = 2; tsize <= 8; tsize += 6) {
			struct run r = { .engine = SMART_STREAM_SLASH,
					 .E = 2,
					 .epoch = 64 };
			smart_rng_t g;

			smart_stream_query_init(&r.q);
			r.q.record_bytes = 16;
			r.q.key = (struct smart_stream_field){ 0, 1 };
			r.q.time = (struct smart_stream_field){ 1, tsize };
			r.q.value = (struct smart_stream_field){ 8, 8 };
			r.q.agg = SMART_STREAM_MIN;
			r.q.size = 4096;
			r.q.lateness = 1000;
			smart_rng_seed(&g, seed);
			for (uint32_t p = 0; p < 2; p++) {
				r.n[p] = 3000;
				r.in[p] = malloc(3000 * 16);
				for (size_t k = 0; k < 3000 * 2; k++)
					((uint64_t *)r.in[p])[k] =
						smart_rng_next(&g);
			}
			run_threads(&r);
			check_ref(&r, "fuzz");
			CHECK(r.st[0].late + r.st[0].implausible > 0);
			run_free(&r);
		}
}

/* The helper (executor 1) starts only after the leader finished: the
 * leader's own watermark is infinite, yet it must not fire a window
 * before the helper's deltas for it came (results equal, and nothing
 * fired before executor 1's watermark moved). */
static void test_delayed_helper(void)
{
	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++) {
		struct run r = {
			.engine = engine, .E = 2, .epoch = 50, .delay = 1
		};

		CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_YSB, &r.q));
		r.q.size = 300;
		gen_input(&r, SMART_STREAM_GEN_YSB, 2000, 0, 0, 50);
		run_threads(&r);
		check_ref(&r, engines[engine]);
		run_free(&r);
	}
}

/* Empty deltas: partition p has only keys led by executor p, and executor
 * 1 runs after executor 0 finished, so every delta from 1 to 0 is empty;
 * leader 0 must still see 1's watermark move each epoch and fire windows
 * before 1 ends (early results counted). */
static void test_empty_deltas(void)
{
	struct run r = {
		.engine = SMART_STREAM_SLASH, .E = 2, .epoch = 50, .delay = 1
	};
	uint64_t own[2][8];
	uint32_t got[2] = { 0, 0 };

	secret_init();
	for (uint64_t k = 1; got[0] < 8 || got[1] < 8; k++) {
		uint32_t o = smart_stream_key_owner(k, 2);

		if (got[o] < 8)
			own[o][got[o]++] = k;
	}
	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_RO, &r.q));
	r.q.size = 100;
	for (uint32_t p = 0; p < 2; p++) {
		r.n[p] = 3000;
		r.in[p] = malloc(3000 * 16);
		for (uint64_t i = 0; i < 3000; i++) {
			uint64_t rec[2] = { own[p][i % 8], i };

			memcpy(r.in[p] + i * 16, rec, 16);
		}
	}
	run_threads(&r);
	check_ref(&r, "empty deltas");
	printf("leader 0: %" PRIu64 " results, %" PRIu64
	       " before every source ended\n",
	       r.st[0].results, r.st[0].early_results);
	CHECK(r.st[0].early_results > 0);
	CHECK(r.st[0].lag_p99_ns >= r.st[0].lag_p50_ns && r.st[0].lag_p50_ns);
	run_free(&r);
}

/* A long epoch keeps its peers (commit 67f5579): executor 0 pushes
 * KA_BLOCKS x 1024 records in one epoch while executor 1 (done, polling)
 * probes it after every KA_MS of silence and gives it up after KA_MS x
 * KA_MISSES.  Executor 0's extract callback, in the middle of each block
 * of 1024 records, waits until executor 1 sent a new PING (or gave it
 * up, or 3 probe periods passed: ka_wait): the push then lasts at least
 * KA_BLOCKS probe periods, longer than the bound, and only push's poll
 * every 1024 records answers the PINGs.
 * Without it the first PING stays unanswered and executor 1 gives 0 up. */
#define KA_MS	  100
#define KA_MISSES 10
#define KA_BLOCKS 16

struct ka_arg {
	struct run *r;
	uint64_t calls, seen;
};

/* Until executor 1's next PING, for 3 probe periods at most: it sends
 * one only once the last is answered, and the PONG may leave only at the
 * push's next poll (shm sends it at once only when nothing else is
 * queued and, under its adversarial mode, never), which waiting longer
 * here would hold back.  The test's check that executor 1 probed at
 * least KA_BLOCKS times still fails a push that answers none. */
static void ka_wait(struct ka_arg *a)
{
	double slack = test_now_ms() + 3 * KA_MS;

	while (atomic_load(&a->r->probes) <= a->seen &&
	       !atomic_load(&a->r->given_up) && test_now_ms() < slack)
		;
	a->seen = atomic_load(&a->r->probes);
}

static int ka_extract(const void *rec, uint32_t len, uint64_t *key,
		      uint64_t *ts, uint64_t *value, void *arg)
{
	struct ka_arg *a = arg;
	uint64_t c = a->calls++;

	(void)len;
	if (c % STREAM_POLL_EVERY == STREAM_POLL_EVERY / 2 &&
	    c / STREAM_POLL_EVERY < KA_BLOCKS)
		ka_wait(a);
	memcpy(key, rec, 8);
	memcpy(ts, (const uint8_t *)rec + 8, 8);
	*value = 0;
	return 1;
}

static void test_keepalive(void)
{
	struct run r = { .engine = SMART_STREAM_SLASH,
			 .E = 2,
			 .epoch = 1u << 20,
			 .ka_ms = KA_MS,
			 .ka_misses = KA_MISSES };
	struct ka_arg a = { &r, 0, 0 };
	double t0;

	secret_init();
	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_RO, &r.q));
	r.q.size = 1000;
	r.q.extract = ka_extract;
	r.q.extract_arg = &a;
	gen_input(&r, SMART_STREAM_GEN_RO, KA_BLOCKS * STREAM_POLL_EVERY + 100,
		  0, 0, 500);
	r.n[1] = 0; /* executor 1 only polls (and probes) */
	t0 = test_now_ms();
	run_threads(&r);
	printf("one epoch of %zu records pushed in %.0f ms (keepalive bound %u ms): executor 1 sent %lu PINGs, "
	       "ka_failures %lu; push %d %d\n",
	       r.n[0], test_now_ms() - t0, KA_MS * KA_MISSES,
	       atomic_load(&r.probes), atomic_load(&r.given_up), r.push_rc[0],
	       r.push_rc[1]);
	CHECK_EQ(atomic_load(&r.given_up), 0);
	CHECK(atomic_load(&r.probes) >= KA_BLOCKS);
	CHECK_EQ(r.st[0].epochs, 1);
	check_ref(&r, "keepalive");
	run_free(&r);
}

/* A full state table: SMART_ENOSPC, and the executor stays failed. */
static void test_enospc(void)
{
	struct run r = { .engine = SMART_STREAM_LOCAL,
			 .E = 1,
			 .epoch = 1000,
			 .max_entries = 64 };

	secret_init();
	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_RO, &r.q));
	gen_input(&r, SMART_STREAM_GEN_RO, 2000, 0, 0, 1000);
	run_threads(&r);
	CHECK_EQ(r.push_rc[0], SMART_ENOSPC);
	run_free(&r);
}

/* A hostile executor 1 (the test's main thread, a raw channel producer)
 * against a real executor 0 (a thread) that only polls. */
struct hostile {
	struct run r;
	struct end fake;
	smart_chan_t *in; /* executor 0's channel to us */
	atomic_int done;
	int rc;
	struct smart_stream_stats st;
};

static void *hostile_exec(void *arg)
{
	struct hostile *h = arg;
	struct smart_stream_config c;
	struct end *e = &h->r.end[0];
	uint64_t end = test_now_ms() + 60000;
	smart_stream_t *s;
	size_t k;

	smart_stream_config_init(&c);
	c.engine = SMART_STREAM_SLASH;
	c.executors = 2;
	c.rpc = e->rpc;
	c.peers = h->r.peers;
	c.query = h->r.q;
	CHECK_OK(smart_stream_create(e->w, &c, &s));
	h->rc = smart_stream_finish(s); /* no input of its own */
	while (!h->rc && (h->rc = smart_stream_poll(s, NULL, 0, &k)) == 0)
		if (test_now_ms() > end)
			TEST_FAIL("the forged delta was never refused");
	CHECK_OK(smart_stream_stats(s, e->w, &h->st));
	CHECK_OK(smart_stream_close(s, e->w));
	atomic_store(&h->done, 1);
	return NULL;
}

static void hostile_accept(smart_chan_t *ch, uint32_t tag, void *arg)
{
	struct hostile *h = arg;

	CHECK_EQ(tag, 0);
	h->in = ch;
}

static void forge(smart_chan_t *ch, uint64_t epoch, uint16_t flags, uint64_t wm,
		  uint32_t n, uint32_t sent, uint64_t key, uint32_t magic)
{
	struct stream_msg m = { magic, 1, flags, epoch, wm, n, 0 };
	struct stream_entry e = { 0, key, { 1, 5, 5, 5 } };
	uint32_t cap;
	void *buf;

	CHECK_OK(smart_chan_reserve(ch, &buf, &cap));
	memcpy(buf, &m, sizeof(m));
	for (uint32_t i = 0; i < sent; i++)
		memcpy((uint8_t *)buf + sizeof(m) + i * sizeof(e), &e,
		       sizeof(e));
	CHECK_OK(smart_chan_commit(ch, sizeof(m) + sent * sizeof(e), 0));
}

static uint64_t key_of(uint32_t owner)
{
	uint64_t k = 1;

	while (smart_stream_key_owner(k, 2) != owner)
		k++;
	return k;
}

static void hostile_case(int how)
{
	static const char *const names[] = {
		"count past the length", "a key led by another",
		"a replayed epoch", "a watermark going back", "a bad magic"
	};
	struct hostile h = { .r = { .engine = SMART_STREAM_SLASH, .E = 2 } };
	struct smart_chan_config cc;
	uint64_t mine = key_of(0);
	smart_chan_t *out;
	pthread_t th;

	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_RO, &h.r.q));
	h.r.q.size = 100;
	end_open(&h.r.end[0], 1);
	end_open(&h.fake, 1);
	CHECK_OK(smart_chan_listen(h.fake.rpc, hostile_accept, &h));
	h.r.peers[0] = h.r.end[0].addr;
	h.r.peers[1] = h.fake.addr;
	CHECK_EQ(pthread_create(&th, NULL, hostile_exec, &h), 0);
	smart_chan_config_init(&cc);
	cc.tag = 1;
	CHECK_OK(smart_chan_open(h.fake.rpc, h.r.end[0].addr, &cc, &out));
	while (!h.in)
		smart_rpc_progress(h.fake.rpc);
	if (how == 0)
		forge(out, 1, STREAM_F_LAST, 10, 40, 2, mine, STREAM_MAGIC);
	if (how == 1)
		forge(out, 1, STREAM_F_LAST, 10, 1, 1, key_of(1), STREAM_MAGIC);
	if (how == 2 || how == 3) {
		forge(out, 1, STREAM_F_LAST, 500, 1, 1, mine, STREAM_MAGIC);
		forge(out, how == 2 ? 1 : 2, STREAM_F_LAST,
		      how == 2 ? 600 : 400, 1, 1, mine, STREAM_MAGIC);
	}
	if (how == 4)
		forge(out, 1, STREAM_F_LAST, 10, 0, 0, mine, 0x1234);
	/* a proper end: an executor that took the forgery ends (ENOENT) */
	forge(out, how >= 2 ? 3 : 2, STREAM_F_LAST | STREAM_F_FINAL, UINT64_MAX,
	      0, 0, mine, STREAM_MAGIC);
	while (!atomic_load(&h.done))
		smart_rpc_progress(h.fake.rpc);
	pthread_join(th, NULL);
	printf("%s: %d, proto_errors %" PRIu64 "\n", names[how], h.rc,
	       h.st.proto_errors);
	CHECK_EQ(h.rc, SMART_EPROTO);
	CHECK_EQ(h.st.proto_errors, 1);
	CHECK_OK(smart_chan_close(out));
	CHECK_OK(smart_chan_close(h.in));
	end_close(&h.fake);
	end_close(&h.r.end[0]);
}

static void test_hostile(void)
{
	secret_init();
	for (int how = 0; how < 5; how++)
		hostile_case(how);
}

/* Executors as processes: executor 0 is this process, the others children
 * (test_spawn) that generate their own partition, send their address up a
 * pipe, read every address from another, run, and send their results
 * and counters back up. */
#define ADDR 64

static void proc_setup(struct run *r, uint32_t wl, uint32_t E, uint32_t engine,
		       size_t n)
{
	r->engine = engine;
	r->E = E;
	r->epoch = 16;
	CHECK_OK(smart_stream_gen_query(wl, &r->q));
	if (wl != SMART_STREAM_GEN_RO)
		r->q.size = 300;
	gen_input(r, wl, n, r->pareto ? 0 : 990, 0, 500);
}

/* args: engine E index up down workload n chan_mode pareto */
static void child_exec(char **a)
{
	struct run r = { 0 };
	uint32_t i = (uint32_t)atoi(a[2]);
	int up = atoi(a[3]), down = atoi(a[4]);
	char addrs[MAXE][ADDR];
	uint64_t n;

	secret_inherit();
	r.chan_mode = (uint32_t)atoi(a[7]);
	r.pareto = (uint32_t)atoi(a[8]);
	proc_setup(&r, (uint32_t)atoi(a[5]), (uint32_t)atoi(a[1]),
		   (uint32_t)atoi(a[0]), (size_t)atoi(a[6]));
	end_open(&r.end[i], 1);
	sp_full_io(up, r.end[i].addr, ADDR, 1);
	sp_full_io(down, addrs, sizeof(addrs), 0);
	for (uint32_t k = 0; k < r.E; k++)
		r.peers[k] = addrs[k];
	exec_one(&r, i, &r.end[i]);
	n = r.nres[i];
	sp_full_io(up, &n, sizeof(n), 1);
	sp_full_io(up, r.res[i], n * sizeof(*r.res[i]), 1);
	sp_full_io(up, &r.st[i], sizeof(r.st[i]), 1);
	end_close(&r.end[i]);
	run_free(&r);
}

/* E executors as processes, channels in mode chan (SMART_CHAN_*), keys
 * Zipf 0.99 or, with pareto (the shape x 1000) != 0, Pareto. */
static struct run run_procs_gen(uint32_t wl, uint32_t E, uint32_t engine,
				uint32_t chan, uint32_t pareto)
{
	struct run r = { .chan_mode = chan, .pareto = pareto };
	char addrs[MAXE][ADDR] = { { 0 } };
	int up[MAXE][2], down[MAXE][2];
	pid_t pid[MAXE];
	char what[64];

	proc_setup(&r, wl, E, engine, 1500);
	end_open(&r.end[0], 1);
	memcpy(addrs[0], r.end[0].addr, ADDR);
	for (uint32_t i = 1; i < E; i++) {
		char args[9][24];

		CHECK_EQ(pipe(up[i]), 0);
		CHECK_EQ(pipe(down[i]), 0);
		snprintf(args[0], 24, "%u", engine);
		snprintf(args[1], 24, "%u", E);
		snprintf(args[2], 24, "%u", i);
		snprintf(args[3], 24, "%d", up[i][1]);
		snprintf(args[4], 24, "%d", down[i][0]);
		snprintf(args[5], 24, "%u", wl);
		snprintf(args[6], 24, "%d", 1500);
		snprintf(args[7], 24, "%u", chan);
		snprintf(args[8], 24, "%u", pareto);
		pid[i] = test_spawn("exec",
				    (const char *[]){ args[0], args[1], args[2],
						      args[3], args[4], args[5],
						      args[6], args[7], args[8],
						      NULL });
		CHECK(pid[i] > 0);
		close(up[i][1]);
		close(down[i][0]);
		sp_full_io(up[i][0], addrs[i], ADDR, 0);
	}
	for (uint32_t i = 1; i < E; i++)
		sp_full_io(down[i][1], addrs, sizeof(addrs), 1);
	for (uint32_t k = 0; k < E; k++)
		r.peers[k] = addrs[k];
	exec_one(&r, 0, &r.end[0]);
	for (uint32_t i = 1; i < E; i++) {
		uint64_t n;
		int st;

		sp_full_io(up[i][0], &n, sizeof(n), 0);
		r.nres[i] = n;
		r.res[i] = malloc((n ? n : 1) * sizeof(*r.res[i]));
		sp_full_io(up[i][0], r.res[i], n * sizeof(*r.res[i]), 0);
		sp_full_io(up[i][0], &r.st[i], sizeof(r.st[i]), 0);
		CHECK_EQ(waitpid(pid[i], &st, 0), pid[i]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(up[i][0]);
		close(down[i][1]);
	}
	end_close(&r.end[0]);
	snprintf(what, sizeof(what), "%s %s E=%u processes %s %s",
		 engines[engine], workloads[wl], E,
		 chan == SMART_CHAN_FOOTER ? "footer" : "imm",
		 pareto ? "pareto" : "zipf");
	check_ref(&r, what);
	printf("%s: %zu results at executor 0, %" PRIu64 " epochs, %" PRIu64
	       " channel bytes, %" PRIu64 " FOOTER slots taken\n",
	       what, r.nres[0], r.st[0].epochs, r.st[0].chan_bytes,
	       r.st[0].chan_footer_slots);
	run_free(&r);
	return r;
}

static struct run run_procs_mode(uint32_t wl, uint32_t E, uint32_t engine,
				 uint32_t chan)
{
	return run_procs_gen(wl, E, engine, chan, 0);
}

static void run_procs(uint32_t wl, uint32_t E, uint32_t engine)
{
	run_procs_mode(wl, E, engine, SMART_CHAN_IMM);
}

static void test_procs(void)
{
	secret_init();
	for (uint32_t engine = 1; engine < 3; engine++)
		for (uint32_t E = 2; E <= MAXE; E++)
			for (uint32_t wl = 0; wl < 4; wl += 3)
				run_procs(wl, E, engine);
}

/* Pareto keys (shape 1.16) with executors as processes: slash and uppar,
 * 2 and 3 executors, YSB and NB7. */
static void test_pareto_procs(void)
{
	secret_init();
	for (uint32_t engine = 1; engine < 3; engine++)
		for (uint32_t E = 2; E <= MAXE; E++)
			for (uint32_t wl = 0; wl < 4; wl += 2)
				run_procs_gen(wl, E, engine, SMART_CHAN_IMM,
					      1160);
}

/* The adversarial shm mode (docs/transport.md: WRITEs in scrambled word
 * order with pauses, completions held), 2 processes. */
static void test_adversarial(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	if (t && strcmp(t, "shm"))
		test_skip("shm only");
	secret_init();
	setenv("SMART_SHM_ADVERSARIAL", "seed=11,pause_pct=50", 1);
	run_procs(SMART_STREAM_GEN_YSB, 2, SMART_STREAM_SLASH);
	run_procs(SMART_STREAM_GEN_NB7, 2, SMART_STREAM_UPPAR);
	unsetenv("SMART_SHM_ADVERSARIAL");
}

/* Every slot the executors committed was taken as a FOOTER slot (the
 * channel layer counts the mode its channels ran), or none in IMM. */
static void footer_used(const struct run *r, const char *what)
{
	uint64_t slots = 0, footer = 0;

	for (uint32_t i = 0; i < r->E; i++) {
		slots += r->st[i].chan_slots;
		footer += r->st[i].chan_footer_slots;
	}
	if (r->chan_mode == SMART_CHAN_FOOTER ? !slots || footer != slots :
						footer != 0)
		TEST_FAIL("%s: %" PRIu64 " slots committed, %" PRIu64
			  " taken in FOOTER mode",
			  what, slots, footer);
}

/* The engines that use channels, E executors as threads, in FOOTER mode
 * (and one IMM run: no FOOTER slot), each equal to the reference. */
static void test_footer(void)
{
	static const uint32_t wls[] = { SMART_STREAM_GEN_YSB,
					SMART_STREAM_GEN_NB7,
					SMART_STREAM_GEN_NB11 };
	struct smart_stream_config c;
	smart_stream_hub_t *hub;
	struct end e;
	smart_stream_t *s;

	secret_init();
	for (uint32_t engine = 1; engine < 3; engine++)
		for (uint32_t E = 2; E <= MAXE; E++)
			for (uint32_t k = 0; k < 3; k++) {
				struct run r = {
					.engine = engine,
					.E = E,
					.epoch = 16,
					.chan_mode = SMART_CHAN_FOOTER
				};
				char what[96];

				CHECK_OK(smart_stream_gen_query(wls[k], &r.q));
				r.q.size = 300;
				gen_input(&r, wls[k], 2000, 990, 0, 500);
				run_threads(&r);
				snprintf(what, sizeof(what),
					 "%s %s E=%u footer", engines[engine],
					 workloads[wls[k]], E);
				check_ref(&r, what);
				footer_used(&r, what);
				if (k ==
				    0) { /* the same in IMM: no FOOTER slot */
					run_free(&r);
					r.chan_mode = SMART_CHAN_IMM;
					gen_input(&r, wls[k], 2000, 990, 0,
						  500);
					run_threads(&r);
					check_ref(&r, what);
					footer_used(&r, what);
				}
				run_free(&r);
			}
	/* a mode out of range, or set where no channel is opened */
	end_open(&e, 0);
	smart_stream_config_init(&c);
	c.executors = 1;
	CHECK_OK(smart_stream_hub_create(1, 0, &hub));
	c.hub = hub;
	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_RO, &c.query));
	c.chan_mode = SMART_CHAN_FOOTER;
	CHECK_EQ(smart_stream_create(e.w, &c, &s), SMART_EINVAL);
	CHECK_OK(smart_stream_hub_destroy(hub));
	c.engine = SMART_STREAM_SLASH;
	c.hub = NULL;
	c.chan_mode = SMART_CHAN_FOOTER + 1;
	CHECK_EQ(smart_stream_create(e.w, &c, &s), SMART_EINVAL);
	c.chan_mode = SMART_CHAN_FOOTER; /* E = 1: no channel, a valid mode */
	CHECK_OK(smart_stream_create(e.w, &c, &s));
	CHECK_OK(smart_stream_close(s, e.w));
	end_close(&e);
}

/* FOOTER between processes, on plain shm and under the adversarial mode
 * (a slot's words land in any order: the CRC and re-poll make it right). */
static void test_footer_procs(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");
	struct run r;

	secret_init();
	r = run_procs_mode(SMART_STREAM_GEN_YSB, 2, SMART_STREAM_SLASH,
			   SMART_CHAN_FOOTER);
	CHECK(r.st[0].chan_footer_slots > 0 && r.st[1].chan_footer_slots > 0);
	r = run_procs_mode(SMART_STREAM_GEN_NB7, 3, SMART_STREAM_UPPAR,
			   SMART_CHAN_FOOTER);
	CHECK(r.st[0].chan_footer_slots > 0 && r.st[2].chan_footer_slots > 0);
	if (t && strcmp(t, "shm"))
		return;
	setenv("SMART_SHM_ADVERSARIAL", "seed=13,pause_pct=50", 1);
	r = run_procs_mode(SMART_STREAM_GEN_YSB, 2, SMART_STREAM_SLASH,
			   SMART_CHAN_FOOTER);
	CHECK(r.st[0].chan_footer_slots > 0);
	r = run_procs_mode(SMART_STREAM_GEN_NB7, 2, SMART_STREAM_UPPAR,
			   SMART_CHAN_FOOTER);
	CHECK(r.st[0].chan_footer_slots > 0);
	unsetenv("SMART_SHM_ADVERSARIAL");
}

/* Pareto keys (shape 1.16 and 0.5) across engines x executors: equal to
 * the reference; the input really skewed (key 0 far above its uniform
 * share). */
static void test_pareto(void)
{
	static const uint32_t shapes[] = { 1160, 500 };

	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t wl = 0; wl < 5; wl++)
			for (uint32_t E = 1; E <= MAXE; E++) {
				struct run r = {
					.engine = engine,
					.E = E,
					.epoch = 16,
					.pareto = shapes[(wl + E) % 2]
				};
				char what[96];

				CHECK_OK(smart_stream_gen_query(wl, &r.q));
				if (wl != SMART_STREAM_GEN_RO)
					r.q.size = 300;
				gen_input(&r, wl, 2000, 0, 0, 500);
				run_threads(&r);
				snprintf(what, sizeof(what),
					 "%s %s E=%u pareto=%u",
					 engines[engine], workloads[wl], E,
					 r.pareto);
				check_ref(&r, what);
				run_free(&r);
			}
}

/* The generator's Pareto option: validated, the same bytes in any
 * chunking, keys in range and skewed. */
static void test_gen_pareto(void)
{
	struct smart_stream_gen g = { .workload = SMART_STREAM_GEN_RO,
				      .parts = 2,
				      .part = 1,
				      .seed = 5,
				      .keys = 1000,
				      .pareto_milli = 1160 };
	enum { N = 20000 };
	uint8_t *a = malloc(N * 16), *b = malloc(N * 16);
	uint64_t zero = 0, top = 0;

	CHECK_OK(smart_stream_gen_fill(&g, 0, N, a));
	CHECK_OK(smart_stream_gen_fill(&g, 0, 7, b));
	CHECK_OK(smart_stream_gen_fill(&g, 7, 9000, b + 7 * 16));
	CHECK_OK(smart_stream_gen_fill(&g, 9007, N - 9007, b + 9007 * 16));
	CHECK(memcmp(a, b, N * 16) == 0);
	for (size_t i = 0; i < N; i++) {
		uint64_t key;

		memcpy(&key, a + i * 16, 8);
		CHECK(key < g.keys);
		zero += key == 0;
		top = key > top ? key : top;
	}
	/* P(key 0) = (1 - 2^-1.16) / (1 - 1001^-1.16), about 0.55: far
	 * above the uniform 1/1000; and the tail is reached */
	CHECK(zero > N / 3 && zero < 2 * N / 3);
	CHECK(top > 100);
	g.pareto_milli = 100; /* a flatter law: key 0 much rarer */
	CHECK_OK(smart_stream_gen_fill(&g, 0, N, b));
	CHECK(memcmp(a, b, N * 16) != 0);
	g.pareto_milli = 100001;
	CHECK_EQ(smart_stream_gen_fill(&g, 0, N, b), SMART_EINVAL);
	g.pareto_milli = 1160;
	g.zipf_milli = 990;
	CHECK_EQ(smart_stream_gen_fill(&g, 0, N, b), SMART_EINVAL);
	free(a);
	free(b);
}

/* A dead executor (docs/stream.md §8): executor 1, a child process,
 * pushes DEAD_EPOCHS epochs, tells the test so, then only polls; executor
 * 0 (this process) polls until it emitted results, the test then kills
 * (SIGKILL) or stops (SIGSTOP) the child, and executor 0 goes on pushing
 * and polling.  Its next failing call must return SMART_ECONN within the
 * keepalive bound (DEAD_KA_MS x DEAD_KA_MISSES; the margin only absorbs
 * the machine's scheduling), stats.gone must name executor 1, every later
 * call must return the same, and everything it emitted must be in the
 * reference's output (windows the dead executor's input completed). */
#define DEAD_EPOCHS    3
#define DEAD_KA_MS     100
#define DEAD_KA_MISSES 5
#define DEAD_N	       1500

static void dead_setup(struct run *r)
{
	proc_setup(r, SMART_STREAM_GEN_RO, 2, SMART_STREAM_SLASH, DEAD_N);
	r->q.size = 10;
}

static smart_stream_t *dead_create(struct run *r, uint32_t i)
{
	struct smart_stream_config c;
	smart_stream_t *s;

	smart_stream_config_init(&c);
	c.engine = SMART_STREAM_SLASH;
	c.executors = 2;
	c.index = i;
	c.epoch_records = r->epoch;
	c.rpc = r->end[i].rpc;
	c.peers = r->peers;
	c.slot_bytes = 4096;
	c.query = r->q;
	CHECK_OK(smart_stream_create(r->end[i].w, &c, &s));
	return s;
}

/* args: up down */
static void child_dead(char **a)
{
	struct run r = { 0 };
	int up = atoi(a[0]), down = atoi(a[1]);
	char addrs[2][ADDR], one = 1;
	struct smart_stream_result res[64];
	double end = test_now_ms() + 60000;
	smart_stream_t *s;
	size_t k;

	secret_inherit();
	dead_setup(&r);
	end_open_ka(&r.end[1], 1, DEAD_KA_MS, DEAD_KA_MISSES);
	sp_full_io(up, r.end[1].addr, ADDR, 1);
	sp_full_io(down, addrs, sizeof(addrs), 0);
	r.peers[0] = addrs[0];
	r.peers[1] = addrs[1];
	s = dead_create(&r, 1);
	CHECK_OK(smart_stream_push(s, r.in[1], DEAD_EPOCHS * r.epoch));
	sp_full_io(up, &one, 1, 1);
	while (!smart_stream_poll(s, res, 64, &k)) /* until killed */
		if (test_now_ms() > end)
			_exit(3);
	_exit(4);
}

static void dead_gather(struct run *r, smart_stream_t *s, int *rc)
{
	struct smart_stream_result buf[64];
	size_t k;

	*rc = smart_stream_poll(s, buf, 64, &k);
	r->res[0] = realloc(r->res[0], (r->nres[0] + k + 1) * sizeof(*buf));
	memcpy(r->res[0] + r->nres[0], buf, k * sizeof(*buf));
	r->nres[0] += k;
}

/* Every result emitted is one of the reference's (multiset inclusion). */
static void dead_check_emitted(struct run *r)
{
	struct ref_out o;
	size_t j = 0;

	ref_run(&r->q, 2, (const uint8_t *const *)r->in, r->n, &o);
	qsort(r->res[0], r->nres[0], sizeof(*r->res[0]), ref_res_cmp);
	for (size_t i = 0; i < r->nres[0]; i++, j++) {
		while (j < o.n && ref_res_cmp(&o.r[j], &r->res[0][i]) < 0)
			j++;
		if (j == o.n || ref_res_cmp(&o.r[j], &r->res[0][i]))
			TEST_FAIL("emitted result %zu is not the reference's",
				  i);
	}
	free(o.r);
}

/* Executor 0 until the child reached its point and results came. */
static void dead_until_point(struct run *r, smart_stream_t *s, int up)
{
	double end = test_now_ms() + 60000;
	struct pollfd pf = { up, POLLIN, 0 };
	int rc, point = 0;
	char one;

	CHECK_OK(smart_stream_push(s, r->in[0], DEAD_EPOCHS * r->epoch));
	while (!point || !r->nres[0]) {
		dead_gather(r, s, &rc);
		CHECK_OK(rc);
		if (!point && poll(&pf, 1, 0) == 1) {
			sp_full_io(up, &one, 1, 0);
			point = 1;
		}
		if (test_now_ms() > end)
			TEST_FAIL("no point or no results before the kill");
	}
}

/* Push the rest, finish, poll: the first error. */
static int dead_run_on(struct run *r, smart_stream_t *s)
{
	size_t off = DEAD_EPOCHS * r->epoch;
	double end = test_now_ms() + 60000;
	int rc = 0;

	while (!rc && off < r->n[0]) {
		size_t k = r->n[0] - off < CHUNK ? r->n[0] - off : CHUNK;

		rc = smart_stream_push(s, r->in[0] + off * r->q.record_bytes,
				       k);
		off += k;
		if (!rc)
			dead_gather(r, s, &rc);
	}
	if (!rc)
		rc = smart_stream_finish(s);
	while (!rc) {
		dead_gather(r, s, &rc);
		if (test_now_ms() > end)
			TEST_FAIL("the dead executor was never detected");
	}
	return rc;
}

static void dead_case(int sig)
{
	struct run r = { 0 };
	char addrs[2][ADDR] = { { 0 } }, args[2][24];
	int up[2], down[2], rc, st;
	smart_stream_t *s;
	double t0, ms, late;
	uint64_t w0;
	pid_t pid;
	size_t k;

	dead_setup(&r);
	end_open_ka(&r.end[0], 1, DEAD_KA_MS, DEAD_KA_MISSES);
	memcpy(addrs[0], r.end[0].addr, ADDR);
	CHECK_EQ(pipe(up), 0);
	CHECK_EQ(pipe(down), 0);
	snprintf(args[0], 24, "%d", up[1]);
	snprintf(args[1], 24, "%d", down[0]);
	pid = test_spawn("dead", (const char *[]){ args[0], args[1], NULL });
	CHECK(pid > 0);
	close(up[1]);
	close(down[0]);
	sp_full_io(up[0], addrs[1], ADDR, 0);
	sp_full_io(down[1], addrs, sizeof(addrs), 1);
	r.peers[0] = addrs[0];
	r.peers[1] = addrs[1];
	s = dead_create(&r, 0);
	dead_until_point(&r, s, up[0]);
	w0 = sched_wait_all_ns(getpid());
	t0 = test_now_ms();
	CHECK_EQ(kill(pid, sig), 0);
	rc = dead_run_on(&r, s);
	ms = test_now_ms() - t0;
	late = sched_waited_ms(w0);
	CHECK_OK(smart_stream_stats(s, r.end[0].w, &r.st[0]));
	printf("%s at epoch %u: detected in %.0f ms (keepalive bound %u ms): "
	       "%d, gone 0x%" PRIx64 ", %zu results emitted before, all the "
	       "reference's\n",
	       sig == SIGKILL ? "killed" : "stopped", DEAD_EPOCHS, ms,
	       DEAD_KA_MS * DEAD_KA_MISSES, rc, r.st[0].gone, r.nres[0]);
	CHECK_EQ(rc, SMART_ECONN);
	CHECK_EQ(r.st[0].gone, 1ULL << 1);
	/* the keepalive's bound, 2 s, and what this process's threads
	 * waited for a CPU meanwhile (printed: an idle machine adds 0) */
	printf("(threads waited %.0f ms for a CPU)\n", late);
	CHECK(ms < DEAD_KA_MS * DEAD_KA_MISSES + 2000 + late);
	CHECK_EQ(smart_stream_poll(s, NULL, 0, &k), SMART_ECONN);
	CHECK_EQ(smart_stream_finish(s), SMART_ECONN);
	dead_check_emitted(&r);
	CHECK_OK(smart_stream_close(s, r.end[0].w));
	if (sig != SIGKILL)
		CHECK_EQ(kill(pid, SIGKILL), 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(up[0]);
	close(down[1]);
	end_close(&r.end[0]);
	run_free(&r);
}

static void test_killed(void)
{
	secret_init();
	dead_case(SIGKILL);
}

static void test_stopped(void)
{
	secret_init();
	dead_case(SIGSTOP);
}

/* ---- session windows (docs/stream.md §2) ------------------------------ */

#define SESSION_GAP 300

static void session_query(struct run *r, uint32_t wl, uint32_t agg,
			  uint64_t gap)
{
	CHECK_OK(smart_stream_gen_query(wl, &r->q));
	r->q.window = SMART_STREAM_SESSION;
	r->q.size = gap;
	r->q.agg = agg;
}

/* Sessions whose records span buckets (first and last in different
 * gap-long buckets): the path that joins buckets was taken. */
static uint64_t sessions_joined(const struct run *r)
{
	uint64_t n = 0, g = r->q.size;

	for (uint32_t i = 0; i < r->E; i++)
		for (size_t k = 0; k < r->nres[i]; k++) {
			const struct smart_stream_result *x = &r->res[i][k];

			n += x->wstart / g != (x->wend - g) / g;
		}
	return n;
}

/* Every engine x executors 1..3 x epoch 16 and 2^20 x uniform and Zipf
 * 0.99 keys, COUNT per key (RO), MAX price per auction (NB7, the values'
 * second entry) and NB11 (bids per bidder) per session of gap 300. */
static void test_session(void)
{
	static const uint32_t wls[] = { SMART_STREAM_GEN_RO,
					SMART_STREAM_GEN_NB7,
					SMART_STREAM_GEN_NB11 };
	static const uint32_t aggs[] = { SMART_STREAM_COUNT, SMART_STREAM_MAX,
					 SMART_STREAM_COUNT };
	uint64_t epochs_seen = 0, joined = 0, results = 0;

	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t w = 0; w < 3; w++)
			for (uint32_t E = 1; E <= MAXE; E++)
				for (int cfg = 0; cfg < 4; cfg++) {
					struct run r = {
						.engine = engine,
						.E = E,
						.epoch = cfg & 1 ? 1u << 20 : 16
					};
					char what[96];

					session_query(&r, wls[w], aggs[w],
						      SESSION_GAP);
					gen_input(&r, wls[w], 2000,
						  cfg & 2 ? 990 : 0, 0, 500);
					run_threads(&r);
					snprintf(what, sizeof(what),
						 "session %s %s E=%u cfg=%d",
						 engines[engine],
						 workloads[wls[w]], E, cfg);
					check_ref(&r, what);
					epochs_seen += cfg & 1 ? 0 :
								 r.st[0].epochs;
					joined += sessions_joined(&r);
					for (uint32_t i = 0; i < E; i++)
						results += r.nres[i];
					run_free(&r);
				}
	printf("sessions: %" PRIu64 " emitted, %" PRIu64
	       " spanning buckets; %" PRIu64 " epochs at executor 0\n",
	       results, joined, epochs_seen);
	CHECK(joined > 0);
	CHECK(epochs_seen > 100 * 27);
}

/* Sessions with bounded disorder (shifts up to 60, lateness 25, gap 40):
 * late records dropped and counted as the reference does; SUM and MIN. */
static void test_session_disorder(void)
{
	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t agg = SMART_STREAM_SUM; agg <= SMART_STREAM_MIN;
		     agg++) {
			struct run r = { .engine = engine,
					 .E = 2,
					 .epoch = 40 };
			uint64_t late = 0;

			session_query(&r, SMART_STREAM_GEN_NB7, agg, 40);
			r.q.lateness = 25;
			gen_input(&r, SMART_STREAM_GEN_NB7, 3000, 0, 60, 100);
			run_threads(&r);
			check_ref(&r, engines[engine]);
			for (uint32_t i = 0; i < r.E; i++)
				late += r.st[i].late;
			printf("%s agg %u: late %" PRIu64 ", %" PRIu64
			       " sessions spanning buckets\n",
			       engines[engine], agg, late, sessions_joined(&r));
			CHECK(late > 100);
			CHECK(sessions_joined(&r) > 0);
			run_free(&r);
		}
}

/* Random bytes as records under a session query (MIN, gap 50): keys of
 * one byte, times of two bytes (many late) and of eight (implausible). */
static void test_session_fuzz(void)
{
	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t tsize = 2; tsize <= 8; tsize += 6) {
			struct run r = { .engine = engine,
					 .E = 2,
					 .epoch = 64 };
			smart_rng_t g;

			smart_stream_query_init(&r.q);
			r.q.record_bytes = 16;
			r.q.key = (struct smart_stream_field){ 0, 1 };
			r.q.time = (struct smart_stream_field){ 1, tsize };
			r.q.value = (struct smart_stream_field){ 8, 8 };
			r.q.agg = SMART_STREAM_MIN;
			r.q.window = SMART_STREAM_SESSION;
			r.q.size = 50;
			r.q.lateness = 1000;
			smart_rng_seed(&g, 40 + tsize + engine);
			for (uint32_t p = 0; p < 2; p++) {
				r.n[p] = 3000;
				r.in[p] = malloc(3000 * 16);
				for (size_t k = 0; k < 3000 * 2; k++)
					((uint64_t *)r.in[p])[k] =
						smart_rng_next(&g);
			}
			run_threads(&r);
			check_ref(&r, "session fuzz");
			CHECK(r.st[0].late + r.st[0].implausible > 0);
			run_free(&r);
		}
}

/* NB11 with executors as processes (E = 2, 3; slash, uppar; epoch 16,
 * Zipf 0.99, gap 300), and on shm under the adversarial mode. */
static void test_session_procs(void)
{
	const char *t = getenv("SMART_TEST_TRANSPORT");

	secret_init();
	for (uint32_t engine = 1; engine < 3; engine++)
		for (uint32_t E = 2; E <= MAXE; E++)
			run_procs(SMART_STREAM_GEN_NB11, E, engine);
	if (t && strcmp(t, "shm"))
		return;
	setenv("SMART_SHM_ADVERSARIAL", "seed=13,pause_pct=50", 1);
	run_procs(SMART_STREAM_GEN_NB11, 2, SMART_STREAM_SLASH);
	unsetenv("SMART_SHM_ADVERSARIAL");
}

/* One key's session longer than the table: a bucket per 2 time units
 * (gap 2), 64 entries at most: SMART_ENOSPC, never an unbounded table. */
static void test_session_enospc(void)
{
	struct run r = { .engine = SMART_STREAM_LOCAL,
			 .E = 1,
			 .epoch = 1000,
			 .max_entries = 64 };

	secret_init();
	session_query(&r, SMART_STREAM_GEN_RO, SMART_STREAM_COUNT, 2);
	gen_input(&r, SMART_STREAM_GEN_RO, 2000, 0, 0, 1);
	run_threads(&r);
	CHECK_EQ(r.push_rc[0], SMART_ENOSPC);
	run_free(&r);
}

/* A hostile executor 1 ships session buckets (gap 100) that lie about
 * their times or count: each cuts it (SMART_EPROTO, proto_errors 1); the
 * same message without the lie is taken (the executor ends normally). */
static void forge_entry(smart_chan_t *ch, uint64_t epoch, uint16_t flags,
			uint64_t wm, const struct stream_entry *e, uint32_t n)
{
	struct stream_msg m = { STREAM_MAGIC, 1, flags, epoch, wm, n, 0 };
	uint32_t cap;
	void *buf;

	CHECK_OK(smart_chan_reserve(ch, &buf, &cap));
	memcpy(buf, &m, sizeof(m));
	memcpy((uint8_t *)buf + sizeof(m), e, n * sizeof(*e));
	CHECK_OK(smart_chan_commit(ch, sizeof(m) + n * sizeof(*e), 0));
}

static void session_hostile_case(int how)
{
	static const char *const names[] = {
		"first after last",	    "last past the bucket",
		"first before the bucket",  "no record",
		"a values entry for COUNT", "no lie"
	};
	struct hostile h = { .r = { .engine = SMART_STREAM_SLASH, .E = 2 } };
	struct smart_chan_config cc;
	uint64_t mine = key_of(0);
	struct stream_entry e[2] = { { 200, mine, { 2, 9, 210, 250 } },
				     { 300, mine, { 1, 9, 300, 300 } } };
	smart_chan_t *out;
	pthread_t th;

	session_query(&h.r, SMART_STREAM_GEN_RO, SMART_STREAM_COUNT, 100);
	if (how == 0)
		e[1].a = (struct stream_agg){ 2, 9, 350, 340 };
	if (how == 1)
		e[1].a.max = 400;
	if (how == 2)
		e[1].a.min = 299;
	if (how == 3)
		e[1].a.count = 0;
	if (how == 4)
		e[1].wstart = 301;
	end_open(&h.r.end[0], 1);
	end_open(&h.fake, 1);
	CHECK_OK(smart_chan_listen(h.fake.rpc, hostile_accept, &h));
	h.r.peers[0] = h.r.end[0].addr;
	h.r.peers[1] = h.fake.addr;
	CHECK_EQ(pthread_create(&th, NULL, hostile_exec, &h), 0);
	smart_chan_config_init(&cc);
	cc.tag = 1;
	CHECK_OK(smart_chan_open(h.fake.rpc, h.r.end[0].addr, &cc, &out));
	while (!h.in)
		smart_rpc_progress(h.fake.rpc);
	forge_entry(out, 1, STREAM_F_LAST, 100, e, 2);
	forge_entry(out, 2, STREAM_F_LAST | STREAM_F_FINAL, UINT64_MAX, e, 0);
	while (!atomic_load(&h.done))
		smart_rpc_progress(h.fake.rpc);
	pthread_join(th, NULL);
	printf("session, %s: %d, proto_errors %" PRIu64 "\n", names[how], h.rc,
	       h.st.proto_errors);
	CHECK_EQ(h.rc, how < 5 ? SMART_EPROTO : SMART_ENOENT);
	CHECK_EQ(h.st.proto_errors, how < 5);
	CHECK_OK(smart_chan_close(out));
	CHECK_OK(smart_chan_close(h.in));
	end_close(&h.fake);
	end_close(&h.r.end[0]);
}

static void test_session_hostile(void)
{
	secret_init();
	for (int how = 0; how < 6; how++)
		session_hostile_case(how);
}

/* ---- NB8: a windowed join of persons and auctions (docs/stream.md §2) -- */

/* Every engine x executors 1..3 x epoch 16 and 2^20 x tumbling windows of
 * 300 and sliding 300 every 100, in order and with shifts up to 60 under
 * a lateness of 25: the emitted (window, person, auction, L) pairs equal
 * the reference's as a multiset, the late records dropped are the same,
 * and auctions whose seller did not register in the window emit nothing
 * (the reference drops them too). */
static void test_join(void)
{
	uint64_t pairs = 0, late = 0, paired = 0, rights = 0;

	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t E = 1; E <= MAXE; E++)
			for (int cfg = 0; cfg < 8; cfg++) {
				struct run r = { .engine = engine,
						 .E = E,
						 .epoch = cfg & 1 ? 1u << 20 :
								    16 };
				char what[96];

				CHECK_OK(smart_stream_gen_query(
					SMART_STREAM_GEN_NB8, &r.q));
				r.q.size = 300;
				if (cfg & 2) {
					r.q.window = SMART_STREAM_SLIDING;
					r.q.slide = 100;
				}
				r.q.lateness = cfg & 4 ? 25 : 0;
				gen_input(&r, SMART_STREAM_GEN_NB8, 2000, 0,
					  cfg & 4 ? 60 : 0, 500);
				run_threads(&r);
				snprintf(what, sizeof(what),
					 "join %s E=%u cfg=%d", engines[engine],
					 E, cfg);
				check_ref(&r, what);
				for (uint32_t i = 0; i < E; i++) {
					late += r.st[i].late;
					for (size_t k = 0; k < r.nres[i]; k++) {
						pairs++;
						CHECK(r.res[i][k].value != 0);
						CHECK(r.res[i][k].count == 1);
					}
				}
				/* auctions of the tumbling in-order input,
				 * each right record x its windows: some
				 * had no person in their window */
				if (cfg == 0)
					for (uint32_t p = 0; p < E; p++)
						rights += r.n[p] -
							  (r.n[p] + 3) / 4;
				if (cfg == 0)
					for (uint32_t i = 0; i < E; i++)
						paired += r.nres[i];
				run_free(&r);
			}
	printf("join: %" PRIu64 " pairs, %" PRIu64
	       " late; tumbling in order: %" PRIu64 " auctions, %" PRIu64
	       " paired\n",
	       pairs, late, rights, paired);
	CHECK(pairs > 0);
	CHECK(late > 0);
	CHECK(paired < rights); /* some auctions found no person: dropped */
}

/* Random bytes under a JOIN: keys of one byte, values of one byte, 0 (a
 * left record) or 1 (a right one), several of each per (window, key):
 * L > 1 and equal pairs (the multiset counts them); times
 * of two and eight bytes (late and implausible records); every engine. */
static void test_join_fuzz(void)
{
	uint64_t multi = 0;

	secret_init();
	for (uint32_t engine = 0; engine < 3; engine++)
		for (uint32_t tsize = 2; tsize <= 8; tsize += 6) {
			struct run r = { .engine = engine,
					 .E = 2,
					 .epoch = 64 };
			smart_rng_t g;

			smart_stream_query_init(&r.q);
			r.q.record_bytes = 16;
			r.q.key = (struct smart_stream_field){ 0, 1 };
			r.q.time = (struct smart_stream_field){ 1, tsize };
			r.q.value = (struct smart_stream_field){ 9, 1 };
			r.q.agg = SMART_STREAM_JOIN;
			r.q.size = 4096;
			r.q.lateness = 1000;
			smart_rng_seed(&g, 5 + engine);
			for (uint32_t p = 0; p < 2; p++) {
				r.n[p] = 3000;
				r.in[p] = malloc(3000 * 16);
				for (size_t k = 0; k < 3000 * 2; k++)
					((uint64_t *)r.in[p])[k] =
						smart_rng_next(&g) &
						(k % 2 ? ~0xfe00ULL : ~0ULL);
			}
			run_threads(&r);
			check_ref(&r, "join_fuzz");
			CHECK(r.st[0].late + r.st[0].implausible > 0);
			for (uint32_t i = 0; i < 2; i++)
				for (size_t k = 0; k < r.nres[i]; k++)
					multi += r.res[i][k].count > 1;
			run_free(&r);
		}
	printf("join_fuzz: %" PRIu64 " pairs with L > 1\n", multi);
	CHECK(multi > 0);
}

/* JOIN rows are bounded: 64 entries, every record an auction of one
 * person in one window (one bucket, a row each): SMART_ENOSPC. */
static void test_join_enospc(void)
{
	for (uint32_t engine = 0; engine < 3; engine++) {
		struct run r = { .engine = engine,
				 .E = 1,
				 .epoch = 1000,
				 .max_entries = 64 };

		secret_init();
		CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_NB8, &r.q));
		gen_input(&r, SMART_STREAM_GEN_NB8, 400, 0, 0, 1);
		for (size_t k = 0; k < r.n[0]; k++) {
			uint8_t *rec = r.in[0] + k * r.q.record_bytes;

			memset(rec + 8, 0, 8); /* person 0 */
			rec[0] |= 1;	       /* an auction (an id != 0) */
		}
		run_threads(&r);
		CHECK_EQ(r.push_rc[0], SMART_ENOSPC);
		run_free(&r);
	}
}

/* A hostile executor 1 ships a JOIN bucket (one person, one auction) and
 * the auction's row: a row of id 0, a row with a nonzero min, a bucket
 * with more right records than records (L would wrap), a row off the
 * window grid: each cuts it (SMART_EPROTO, proto_errors 1); without the
 * lie the pair is emitted (results 1). */
static void join_hostile_case(int how)
{
	static const char *const names[] = { "row id 0", "row min set",
					     "right > records", "row off grid",
					     "no lie" };
	struct hostile h = { .r = { .engine = SMART_STREAM_SLASH, .E = 2 } };
	struct smart_chan_config cc;
	uint64_t mine = key_of(0);
	struct stream_entry e[2] = { { 0, mine, { 2, 1, 0, 1 } },
				     { 0, mine, { 0, 77, 0, 0 } } };
	smart_chan_t *out;
	pthread_t th;

	CHECK_OK(smart_stream_gen_query(SMART_STREAM_GEN_NB8, &h.r.q));
	h.r.q.size = 300;
	if (how == 0)
		e[1].a.sum = 0;
	if (how == 1)
		e[1].a.min = 5;
	if (how == 2)
		e[0].a.sum = 3;
	if (how == 3)
		e[1].wstart = 150;
	end_open(&h.r.end[0], 1);
	end_open(&h.fake, 1);
	CHECK_OK(smart_chan_listen(h.fake.rpc, hostile_accept, &h));
	h.r.peers[0] = h.r.end[0].addr;
	h.r.peers[1] = h.fake.addr;
	CHECK_EQ(pthread_create(&th, NULL, hostile_exec, &h), 0);
	smart_chan_config_init(&cc);
	cc.tag = 1;
	CHECK_OK(smart_chan_open(h.fake.rpc, h.r.end[0].addr, &cc, &out));
	while (!h.in)
		smart_rpc_progress(h.fake.rpc);
	forge_entry(out, 1, STREAM_F_LAST, 100, e, 2);
	forge_entry(out, 2, STREAM_F_LAST | STREAM_F_FINAL, UINT64_MAX, e, 0);
	while (!atomic_load(&h.done))
		smart_rpc_progress(h.fake.rpc);
	pthread_join(th, NULL);
	printf("join, %s: %d, proto_errors %" PRIu64 ", results %" PRIu64 "\n",
	       names[how], h.rc, h.st.proto_errors, h.st.results);
	CHECK_EQ(h.rc, how < 4 ? SMART_EPROTO : SMART_ENOENT);
	CHECK_EQ(h.st.proto_errors, how < 4);
	CHECK_EQ(h.st.results, how == 4);
	CHECK_OK(smart_chan_close(out));
	CHECK_OK(smart_chan_close(h.in));
	end_close(&h.fake);
	end_close(&h.r.end[0]);
}

static void test_join_hostile(void)
{
	secret_init();
	for (int how = 0; how < 5; how++)
		join_hostile_case(how);
}

/* Recovery does not cover a JOIN (its rows are not checkpointed): the
 * attach is refused before it touches any area. */
/* NB8 with executors as processes (E = 2, 3; slash, uppar; epoch 16). */
static void test_join_procs(void)
{
	secret_init();
	for (uint32_t engine = 1; engine < 3; engine++)
		for (uint32_t E = 2; E <= MAXE; E++)
			run_procs(SMART_STREAM_GEN_NB8, E, engine);
}

int main(int argc, char **argv)
{
	return test_main_children(
		argc, argv,
		(struct test_case[]){
			{ "local", test_local },
			{ "slash", test_slash },
			{ "uppar", test_uppar },
			{ "disorder", test_disorder },
			{ "fuzz", test_fuzz },
			{ "delayed_helper", test_delayed_helper },
			{ "empty_deltas", test_empty_deltas },
			{ "enospc", test_enospc },
			{ "keepalive", test_keepalive },
			{ "hostile", test_hostile },
			{ "procs", test_procs },
			{ "adversarial", test_adversarial },
			{ "killed", test_killed },
			{ "stopped", test_stopped },
			{ "session", test_session },
			{ "session_disorder", test_session_disorder },
			{ "session_fuzz", test_session_fuzz },
			{ "session_enospc", test_session_enospc },
			{ "session_hostile", test_session_hostile },
			{ "session_procs", test_session_procs },
			{ "join", test_join },
			{ "join_fuzz", test_join_fuzz },
			{ "join_enospc", test_join_enospc },
			{ "join_hostile", test_join_hostile },
			{ "join_procs", test_join_procs },
			{ "footer", test_footer },
			{ "footer_procs", test_footer_procs },
			{ "pareto", test_pareto },
			{ "gen_pareto", test_gen_pareto },
			{ "pareto_procs", test_pareto_procs },
			{ 0 } },
		(struct test_child[]){ { "exec", child_exec },
				       { "dead", child_dead },
				       { 0 } });
}
