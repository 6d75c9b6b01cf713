/*
 * Conformance cases on atomicity: threads, and a forked process with its
 * own domains, race CAS and FAA on shared words and no update may be lost
 * or doubled; aligned 8-byte words never tear under concurrent WRITE and
 * READ (rule 4).
 *
 * Invariants: the expected count per word depends only on the seed, never
 * on the interleaving; the fork case runs only with SMART_CONF_FORK.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suite.h"

/* ------------------------------------------------------------------ */
/* Atomicity workload: per thread, ATOM_CORO state machines ("coroutines")
 * each with one WR in flight on the thread's QP; even ones loop FAA(+1),
 * odd ones loop READ, CAS(old -> old+1), retry from READ on failure.
 * Every increment records the old value it saw; for each word the
 * recorded values must be exactly 0..count-1 (no lost or doubled update).
 * A coroutine picks its word from its own generator, so the expected
 * count per word depends only on the seed, not on the interleaving. */

#define ATOM_WORDS 4
#define ATOM_CORO  8
#define ATOM_OFF   8192 /* region offset of the shared words */
#define ATOM_SLOTS 4096 /* local bytes per worker (slots) */

enum { CO_IDLE, CO_FAA, CO_READ, CO_CAS, CO_DONE };

struct coro {
	int state;
	uint32_t done, word;
	uint64_t expect, rng;
	uint64_t *slot;
};

struct atom_worker {
	const struct smart_tp_ops *ops;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	struct conf_target t;
	uint64_t *slots; /* ATOM_SLOTS bytes in a local MR */
	uint64_t *rec;	 /* ATOM_CORO * iters: word << 48 | old */
	uint32_t iters;
	uint64_t seed, retries;
	struct coro co[ATOM_CORO];
};

static uint64_t coro_seed(uint64_t seed, int i)
{
	return seed ^ ((uint64_t)(i + 1) * UINT64_C(0xd1b54a32d192ed03));
}

static void co_post(struct atom_worker *w, int i, uint8_t op, uint64_t cmp_add,
		    uint64_t swap)
{
	struct coro *c = &w->co[i];
	struct smart_tp_wr wr = wr_atomic(&w->t, op, (uint64_t)i,
					  ATOM_OFF + 8 * c->word, c->slot,
					  cmp_add, swap, CONF_SIG);

	CHECK_OK(w->ops->post(w->qp, &wr, 1));
}

/* Start the next increment; 0 when the coroutine has done all. */
static int co_start(struct atom_worker *w, int i)
{
	struct coro *c = &w->co[i];

	if (c->done == w->iters) {
		c->state = CO_DONE;
		return 0;
	}
	c->word = (uint32_t)(rng_next(&c->rng) % ATOM_WORDS);
	if (i & 1) {
		c->state = CO_READ;
		co_post(w, i, SMART_TP_READ, 0, 0);
	} else {
		c->state = CO_FAA;
		co_post(w, i, SMART_TP_FAA, 1, 0);
	}
	return 1;
}

/* Advance coroutine i on its completion; 0 when it finished. */
static int co_step(struct atom_worker *w, int i)
{
	struct coro *c = &w->co[i];
	uint64_t got = *c->slot;

	switch (c->state) {
	case CO_READ:
		c->expect = got;
		c->state = CO_CAS;
		co_post(w, i, SMART_TP_CAS, got, got + 1);
		return 1;
	case CO_CAS:
		if (got != c->expect) {
			w->retries++;
			c->state = CO_READ;
			co_post(w, i, SMART_TP_READ, 0, 0);
			return 1;
		}
		/* The CAS matched: record it as an FAA would be. */
		/* fallthrough */
	case CO_FAA:
		CHECK_LT(got, UINT64_C(1) << 48);
		w->rec[(size_t)i * w->iters + c->done++] = (uint64_t)c->word
								   << 48 |
							   got;
		return co_start(w, i);
	default:
		TEST_FAIL("completion for idle coroutine %d", i);
	}
	return 0;
}

static void *atom_run(void *arg)
{
	struct atom_worker *w = arg;
	struct smart_tp_wc wc[ATOM_CORO];
	uint64_t deadline = now_ns() + 3 * CONF_WAIT_NS;
	int active = 0, i, n;

	for (i = 0; i < ATOM_CORO; i++) {
		w->co[i] = (struct coro){ .rng = coro_seed(w->seed, i),
					  .slot = w->slots + 8 * i };
		active += co_start(w, i);
	}
	while (active) {
		n = w->ops->poll(w->cq, wc, ATOM_CORO);
		CHECK_GE(n, 0);
		for (i = 0; i < n; i++) {
			CHECK_WC(wc[i], wc[i].wr_id, SMART_TP_WC_OK);
			CHECK_LT(wc[i].wr_id, ATOM_CORO);
			active -= !co_step(w, (int)wc[i].wr_id);
		}
		/* a hang check, not a speed target: stuck is no completion
		 * for 3 x CONF_WAIT_NS (a lossy link makes the whole run
		 * minutes long) */
		if (n)
			deadline = now_ns() + 3 * CONF_WAIT_NS;
		else
			CHECK_MSG(now_ns() < deadline,
				  "atomic worker stuck: "
				  "no completion for %d s",
				  (int)(3 * CONF_WAIT_NS / 1000000000));
	}
	return NULL;
}

static void atom_init(struct atom_worker *w, const struct smart_tp_ops *ops,
		      const struct conn *c, const struct conf_target *t,
		      uint8_t *slots, uint64_t *rec, uint32_t iters,
		      uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	w->ops = ops;
	w->cq = c->cq;
	w->qp = c->qp;
	w->t = *t;
	w->slots = (uint64_t *)slots;
	w->rec = rec;
	w->iters = iters;
	w->seed = seed;
}

/* Add the increments worker seed will make to cnt[word]. */
static void atom_expect(uint64_t seed, uint32_t iters, uint64_t *cnt)
{
	uint64_t rng;
	uint32_t j;
	int i;

	for (i = 0; i < ATOM_CORO; i++) {
		rng = coro_seed(seed, i);
		for (j = 0; j < iters; j++)
			cnt[rng_next(&rng) % ATOM_WORDS]++;
	}
}

static void atom_verify(const struct fx *f, const uint64_t *rec, size_t n,
			const uint64_t *cnt)
{
	uint64_t *olds = calloc(n ? n : 1, sizeof(*olds));
	size_t i, m;
	int k;

	CHECK(olds != NULL);
	for (k = 0; k < ATOM_WORDS; k++) {
		for (i = 0, m = 0; i < n; i++)
			if (rec[i] >> 48 == (uint64_t)k)
				olds[m++] = rec[i] & ((UINT64_C(1) << 48) - 1);
		CHECK_EQ(m, cnt[k]);
		qsort(olds, m, sizeof(*olds), cmp_u64);
		for (i = 0; i < m; i++)
			CHECK_MSG(olds[i] == i,
				  "word %d: increment %zu of %zu "
				  "saw old value %" PRIu64 " (lost or doubled "
				  "update)",
				  k, i, m, olds[i]);
		CHECK_U64_EQ(rword(f, ATOM_OFF + 8 * (size_t)k), cnt[k]);
	}
	free(olds);
}

static void run_workers(struct atom_worker *w, int n)
{
	pthread_t th[8];
	int i;

	for (i = 0; i < n; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, atom_run, &w[i]), 0);
	for (i = 0; i < n; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
}

static void atomic_threads(const struct smart_conf_env *env, int nw,
			   const char *name)
{
	uint64_t seed = case_seed(name), cnt[ATOM_WORDS] = { 0 }, retries = 0;
	uint32_t iters = scaled(env, 10000);
	size_t per = (size_t)ATOM_CORO * iters;
	struct atom_worker w[4];
	struct conn c[4];
	uint64_t *rec = calloc((size_t)nw * per, sizeof(*rec));
	struct fx f;
	int i;

	CHECK(rec != NULL);
	fx_open(&f, env);
	for (i = 0; i < nw; i++) {
		conn_open(&f, NULL, 32, 16, 0, &c[i]);
		atom_init(&w[i], f.ops, &c[i], &f.t, f.laddr + i * ATOM_SLOTS,
			  rec + i * per, iters, seed + (uint64_t)i);
		atom_expect(seed + (uint64_t)i, iters, cnt);
	}
	run_workers(w, nw);
	for (i = 0; i < nw; i++) {
		retries += w[i].retries;
		conn_close(&c[i]);
	}
	printf("   %d threads x %d coroutines x %u increments, %" PRIu64
	       " CAS retries\n",
	       nw, ATOM_CORO, iters, retries);
	atom_verify(&f, rec, (size_t)nw * per, cnt);
	free(rec);
	fx_close(&f);
}

void case_atomic_threads_w2(const struct smart_conf_env *env)
{
	atomic_threads(env, 2, "atomic_threads_w2");
}

void case_atomic_threads_w4(const struct smart_conf_env *env)
{
	atomic_threads(env, 4, "atomic_threads_w4");
}

/* ------------------------------------------------------------------ */
/* Case: atomic_fork — a second process with its own domains does the
 * same workload on the same region at the same time.                 */

#define FORK_W 2

/* The child: its own initiator domain, QPs accepted by the parent. */
static void atom_child(const struct smart_conf_env *env, const struct fx *pf,
		       int s, uint64_t *rec, uint32_t iters, uint64_t seed)
{
	const struct smart_tp_ops *ops = env->ops;
	struct smart_tp_domain *d;
	struct smart_tp_remote *rem;
	struct smart_tp_mr *lmr;
	struct conf_target t;
	struct atom_worker w[FORK_W];
	struct conn c[FORK_W];
	uint8_t b[SMART_TP_BLOB_MAX];
	struct smart_tp_qp_attr attr = { .max_send_wr = 16 };
	size_t bl;
	int i;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CHECK_OK(dom_open(env, 0, &d));
	CHECK_OK(ops->remote_attach(d, pf->blob, pf->blob_len,
				    attach_fd(pf->region), &rem));
	CHECK_OK(ops->mr_alloc(d, CONF_LOCAL_LEN, -1, 0, &lmr));
	t = (struct conf_target){ ops->remote_base(rem), ops->remote_rkey(rem),
				  lmr->lkey, pf->t.rlen };
	for (i = 0; i < FORK_W; i++) {
		c[i] = (struct conn){ .ops = ops, .own_cq = 1 };
		CHECK_OK(ops->cq_create(d, 32, 0, &c[i].cq));
		CHECK_OK(ops->qp_create(d, c[i].cq, &attr, &c[i].qp));
		bl = sizeof(b);
		CHECK_OK(ops->qp_blob(c[i].qp, b, &bl));
		msg_send(s, b, bl, -1);
		bl = msg_recv(s, b, sizeof(b), NULL);
		CHECK_OK(ops->qp_connect(c[i].qp, rem, b, bl));
		atom_init(&w[i], ops, &c[i], &t,
			  (uint8_t *)lmr->addr + i * ATOM_SLOTS,
			  rec + (size_t)i * ATOM_CORO * iters, iters,
			  seed + 100 + (uint64_t)i);
	}
	msg_recv(s, b, sizeof(b), NULL); /* go */
	run_workers(w, FORK_W);
	for (i = 0; i < FORK_W; i++)
		conn_close(&c[i]);
	ops->mr_free(d, lmr);
	ops->remote_detach(rem);
	ops->domain_close(d);
	fflush(stdout);
	_exit(0);
}

/* The parent's half of the child's connection setup: accept its QPs. */
static void accept_child_qps(struct fx *f, int s,
			     struct smart_tp_responder **resp)
{
	uint8_t cb[SMART_TP_BLOB_MAX], pb[SMART_TP_BLOB_MAX];
	size_t cl, pl;
	int i;

	for (i = 0; i < FORK_W; i++) {
		cl = msg_recv(s, cb, sizeof(cb), NULL);
		pl = sizeof(pb);
		CHECK_OK(f->ops->accept(f->rdom, f->region, cb, cl, pb, &pl,
					&resp[i]));
		msg_send(s, pb, pl, -1);
	}
}

void case_atomic_fork(const struct smart_conf_env *env)
{
	uint64_t seed = case_seed("atomic_fork"), cnt[ATOM_WORDS] = { 0 };
	uint32_t iters = scaled(env, 10000);
	size_t per = (size_t)ATOM_CORO * iters, bytes = 2 * FORK_W * per * 8;
	struct smart_tp_responder *resp[FORK_W];
	struct atom_worker w[FORK_W];
	struct conn c[FORK_W];
	struct fx f;
	uint64_t *rec;
	int s, i;
	pid_t pid;

	rec = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rec != MAP_FAILED);
	fx_open(&f, env);
	pid = fork_peer(&s);
	if (!pid)
		atom_child(env, &f, s, rec + FORK_W * per, iters, seed);
	accept_child_qps(&f, s, resp);
	for (i = 0; i < FORK_W; i++) {
		conn_open(&f, NULL, 32, 16, 0, &c[i]);
		atom_init(&w[i], f.ops, &c[i], &f.t, f.laddr + i * ATOM_SLOTS,
			  rec + i * per, iters, seed + (uint64_t)i);
		atom_expect(seed + (uint64_t)i, iters, cnt);
		atom_expect(seed + 100 + (uint64_t)i, iters, cnt);
	}
	msg_send(s, "g", 1, -1);
	run_workers(w, FORK_W);
	check_child_ok(pid, "atomic child process");
	printf("   2 processes x %d threads x %d coroutines x %u increments\n",
	       FORK_W, ATOM_CORO, iters);
	atom_verify(&f, rec, 2 * FORK_W * per, cnt);
	for (i = 0; i < FORK_W; i++) {
		conn_close(&c[i]);
		f.ops->responder_destroy(resp[i]);
	}
	close(s);
	fx_close(&f);
	munmap(rec, bytes);
}

/* ------------------------------------------------------------------ */
/* Case: tearing — aligned 8-byte words never tear (rule 4)             */

#define TEAR_OFF      16384
#define TEAR_BLOCK    64
#define TEAR_BULK     4096 /* shm: past SHM_BULK_WORDS, one `rep movsq` */
#define TEAR_CHAIN    4
#define TEAR_READ_BUF (64u << 10)

struct tear_state {
	struct fx *f;
	struct conn wc, rc;	 /* writer's and reader's connections */
	uint32_t nwrites, block; /* bytes a WR moves */
	atomic_int writer_done;
	uint64_t reads, mixed;
};

/* Version v in the high half, a hash of v in the low half: a word made
 * of bytes from two different versions fails the hash check. */
static uint64_t tear_pattern(uint64_t v)
{
	uint64_t s = v ^ UINT64_C(0x7ea27ea27ea27ea2);

	return v << 32 | (uint32_t)(rng_next(&s) | 1);
}

static void *tear_writer(void *arg)
{
	struct tear_state *s = arg;
	struct smart_tp_wr w[TEAR_CHAIN];
	uint64_t *buf = (uint64_t *)s->f->laddr, v = 0;
	int i, j;

	while (v < s->nwrites) {
		for (i = 0; i < TEAR_CHAIN; i++) {
			uint64_t *b = buf + i * (s->block / 8);

			for (j = 0; j < (int)s->block / 8; j++)
				b[j] = tear_pattern(v + 1 + (uint64_t)i);
			w[i] = wr_make(&s->f->t, SMART_TP_WRITE, v + 1 + i,
				       TEAR_OFF, b, s->block,
				       i == TEAR_CHAIN - 1 ? CONF_SIG : 0);
		}
		run_chain(&s->wc, w, TEAR_CHAIN);
		v += TEAR_CHAIN;
	}
	atomic_store(&s->writer_done, 1);
	return NULL;
}

static void tear_check(struct tear_state *s, const uint64_t *b)
{
	uint64_t v;
	int j;

	for (j = 0; j < (int)s->block / 8; j++) {
		v = b[j] >> 32;
		CHECK_MSG(v <= s->nwrites && b[j] == tear_pattern(v),
			  "torn word %d: 0x%016" PRIx64 " is no written value",
			  j, b[j]);
		s->mixed += j && b[j] != b[0];
	}
}

static void *tear_reader(void *arg)
{
	struct tear_state *s = arg;
	uint64_t *buf = (uint64_t *)(s->f->laddr + TEAR_READ_BUF);
	struct smart_tp_wr w[TEAR_CHAIN];
	int i, last = 0;

	while (!last) {
		last = atomic_load(&s->writer_done);
		for (i = 0; i < TEAR_CHAIN; i++)
			w[i] = wr_make(&s->f->t, SMART_TP_READ, (uint64_t)i,
				       TEAR_OFF, buf + i * (s->block / 8),
				       s->block,
				       i == TEAR_CHAIN - 1 ? CONF_SIG : 0);
		run_chain(&s->rc, w, TEAR_CHAIN);
		for (i = 0; i < TEAR_CHAIN; i++)
			tear_check(s, buf + i * (s->block / 8));
		s->reads += TEAR_CHAIN;
	}
	return NULL;
}

static void tear_run(const struct smart_conf_env *env, uint32_t block,
		     uint32_t writes)
{
	struct tear_state s;
	pthread_t tw, tr;
	struct fx f;
	int j;

	fx_open(&f, env);
	memset(&s, 0, sizeof(s));
	s.f = &f;
	s.block = block;
	s.nwrites = scaled(env, writes) / TEAR_CHAIN * TEAR_CHAIN;
	for (j = 0; j < (int)block / 8; j++)
		rword_set(&f, TEAR_OFF + 8 * (size_t)j, tear_pattern(0));
	conn_open(&f, NULL, 16, 8, 0, &s.wc);
	conn_open(&f, NULL, 16, 8, 0, &s.rc);
	CHECK_EQ(pthread_create(&tw, NULL, tear_writer, &s), 0);
	CHECK_EQ(pthread_create(&tr, NULL, tear_reader, &s), 0);
	CHECK_EQ(pthread_join(tw, NULL), 0);
	CHECK_EQ(pthread_join(tr, NULL), 0);
	printf("   %u-byte blocks: %u writes, %" PRIu64 " block reads, %" PRIu64
	       " words from a different write than word 0\n",
	       block, s.nwrites, s.reads, s.mixed);
	for (j = 0; j < (int)block / 8; j++)
		CHECK_U64_EQ(rword(&f, TEAR_OFF + 8 * (size_t)j),
			     tear_pattern(s.nwrites));
	conn_close(&s.rc);
	conn_close(&s.wc);
	fx_close(&f);
}

void case_tearing(const struct smart_conf_env *env)
{
	tear_run(env, TEAR_BLOCK, 200000);
}

/* The same with 4-KiB WRITEs and READs: on shm they take the bulk copy
 * (`rep movsq` on x86-64), whose stores are atomic per aligned word but
 * come in no promised order (docs/transport.md, rule 4). */
void case_tearing_bulk(const struct smart_conf_env *env)
{
	tear_run(env, TEAR_BULK, 20000);
}
