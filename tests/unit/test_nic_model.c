/*
 * Unit tests of the shm transport's RNIC model (docs/nic-model.md),
 * through the transport table as the core uses it: spec parsing, delayed
 * completion and memory effect, doorbell contention, doorbell mapping and
 * WQE-cache misses.
 *
 * The checks are on counts and on behaviour, never on speed.  The one
 * time-based check (nothing completes before half the modelled round
 * trip) is a guarantee of the model, not a performance figure, and its
 * upper bound is generous.  The contention case runs until it sees a
 * contended acquisition (bounded at 10 s), so a loaded machine only makes
 * it slower.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/test.h"
#include "transport/shm/shm.h"
#include "transport/transport.h"

#define REGION_LEN (64u << 10)
#define LOCAL_LEN  (64u << 10)
#define WAIT_NS	   (10ull * 1000000000ull)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- fixture: a blade domain with a region, a modelled client ---- */

struct fx {
	const struct smart_tp_ops *ops;
	struct smart_tp_domain *rdom, *idom;
	struct smart_tp_mr *region, *lmr;
	struct smart_tp_remote *remote;
	uint64_t base;
	uint32_t rkey;
};

struct conn {
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	struct smart_tp_responder *resp;
};

static int open_spec(const char *spec, struct smart_tp_domain **out)
{
	struct smart_tp_cfg cfg = { .gid_index = -1, .nic_model = spec };

	return smart__tp_shm_ops.domain_open(&cfg, out);
}

static void fx_open(struct fx *f, const char *spec)
{
	uint8_t blob[SMART_TP_BLOB_MAX];
	size_t len = sizeof(blob);
	int fd;

	memset(f, 0, sizeof(*f));
	f->ops = &smart__tp_shm_ops;
	CHECK_OK(open_spec(NULL, &f->rdom));
	CHECK_OK(f->ops->mr_alloc(f->rdom, REGION_LEN, 0, 1, &f->region));
	CHECK_OK(f->ops->region_blob(f->rdom, f->region, blob, &len));
	CHECK_OK(open_spec(spec, &f->idom));
	fd = dup(f->region->fd);
	CHECK_MSG(fd >= 0, "dup: %s", strerror(errno));
	CHECK_OK(f->ops->remote_attach(f->idom, blob, len, fd, &f->remote));
	CHECK_OK(f->ops->mr_alloc(f->idom, LOCAL_LEN, 0, 0, &f->lmr));
	f->base = f->ops->remote_base(f->remote);
	f->rkey = f->ops->remote_rkey(f->remote);
}

static void fx_close(struct fx *f)
{
	f->ops->mr_free(f->idom, f->lmr);
	f->ops->remote_detach(f->remote);
	f->ops->domain_close(f->idom);
	f->ops->mr_free(f->rdom, f->region);
	f->ops->domain_close(f->rdom);
}

/* A connected QP; on cq when given, else on a CQ of its own. */
static void conn_open(struct fx *f, struct smart_tp_cq *cq, uint32_t flags,
		      struct conn *c)
{
	struct smart_tp_qp_attr attr = { .max_send_wr = 256, .flags = flags };
	uint8_t cb[SMART_TP_BLOB_MAX], pb[SMART_TP_BLOB_MAX];
	size_t cl = sizeof(cb), pl = sizeof(pb);

	memset(c, 0, sizeof(*c));
	if (!cq)
		CHECK_OK(f->ops->cq_create(f->idom, 1024, 0, &c->cq));
	CHECK_OK(f->ops->qp_create(f->idom, cq ? cq : c->cq, &attr, &c->qp));
	CHECK_OK(f->ops->qp_blob(c->qp, cb, &cl));
	CHECK_OK(f->ops->accept(f->rdom, f->region, cb, cl, pb, &pl, &c->resp));
	CHECK_OK(f->ops->qp_connect(c->qp, f->remote, pb, pl));
}

static void conn_close(struct fx *f, struct conn *c)
{
	f->ops->qp_destroy(c->qp);
	f->ops->responder_destroy(c->resp);
	if (c->cq)
		f->ops->cq_destroy(c->cq);
}

static struct smart_tp_wr wr_make(const struct fx *f, uint8_t op, uint64_t id,
				  uint64_t off, void *local, uint8_t flags)
{
	struct smart_tp_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.remote = f->base + off;
	w.local = local;
	w.len = 8;
	w.lkey = f->lmr->lkey;
	w.rkey = f->rkey;
	w.opcode = op;
	w.flags = flags;
	return w;
}

/* Wait (bounded) for one completion and check it is OK and wr_id id. */
static void wait_one(struct fx *f, struct smart_tp_cq *cq, uint64_t id)
{
	uint64_t deadline = now_ns() + WAIT_NS;
	struct smart_tp_wc wc;
	int r;

	while ((r = f->ops->poll(cq, &wc, 1)) == 0)
		CHECK_MSG(now_ns() < deadline, "no completion for %" PRIu64,
			  id);
	CHECK_EQ(r, 1);
	CHECK_U64_EQ(wc.wr_id, id);
	CHECK_EQ(wc.status, SMART_TP_WC_OK);
}

static struct smart_tp_stats dom_stats(struct fx *f)
{
	struct smart_tp_stats s;

	f->ops->domain_stats(f->idom, &s);
	return s;
}

/* ---- spec parsing ---- */

static void test_spec_off_and_default(void)
{
	struct smart_tp_domain *d;
	struct smart_tp_caps caps;
	struct smart_tp_stats st = { 1, 1, 1, 1 };
	const struct shm_model_params *p;

	CHECK(smart__tp_shm_ops.domain_stats != NULL);
	CHECK_OK(open_spec(NULL, &d));
	CHECK(smart__shm_model_params(d) == NULL);
	smart__tp_shm_ops.query_caps(d, &caps);
	CHECK_EQ(caps.thread_domains, 0);
	smart__tp_shm_ops.domain_stats(d, &st);
	CHECK_U64_EQ(st.db_rings + st.db_contended + st.wqe_misses, 0);
	smart__tp_shm_ops.domain_close(d);
	CHECK_OK(open_spec("", &d));
	CHECK(smart__shm_model_params(d) == NULL);
	smart__tp_shm_ops.domain_close(d);

	CHECK_OK(open_spec("default", &d));
	p = smart__shm_model_params(d);
	CHECK(p != NULL);
	CHECK_U64_EQ(p->rtt_ns, 2000);
	CHECK(p->mops == 4.0);
	CHECK_U64_EQ(p->doorbells, 16);
	CHECK_U64_EQ(p->db_hold_ns, 1000);
	CHECK_U64_EQ(p->wqe_cache, 32);
	CHECK_U64_EQ(p->miss_ns, 1000);
	smart__tp_shm_ops.query_caps(d, &caps);
	CHECK_EQ(caps.thread_domains, 1);
	smart__tp_shm_ops.domain_close(d);
}

static void test_spec_overrides(void)
{
	struct smart_tp_domain *d;
	const struct shm_model_params *p;

	CHECK_OK(open_spec("doorbells=1,wqe_cache=16", &d));
	p = smart__shm_model_params(d);
	CHECK_U64_EQ(p->doorbells, 1);
	CHECK_U64_EQ(p->wqe_cache, 16);
	CHECK_U64_EQ(p->rtt_ns, 2000);
	CHECK(p->mops == 4.0);
	smart__tp_shm_ops.domain_close(d);

	CHECK_OK(open_spec("default,mops=2.5,rtt_ns=0,db_hold_ns=0,"
			   "miss_ns=0,wqe_cache=0",
			   &d));
	p = smart__shm_model_params(d);
	CHECK(p->mops == 2.5);
	CHECK_U64_EQ(p->rtt_ns, 0);
	CHECK_U64_EQ(p->db_hold_ns, 0);
	CHECK_U64_EQ(p->miss_ns, 0);
	CHECK_U64_EQ(p->wqe_cache, 0);
	CHECK_U64_EQ(p->doorbells, 16);
	smart__tp_shm_ops.domain_close(d);

	CHECK_OK(open_spec("mops=1000,doorbells=1024,rtt_ns=1000000000", &d));
	smart__tp_shm_ops.domain_close(d);
	CHECK_OK(open_spec("mops=.5", &d));
	CHECK(smart__shm_model_params(d)->mops == 0.5);
	smart__tp_shm_ops.domain_close(d);
}

static void test_spec_bad(void)
{
	static const char *const bad[] = {
		"defaults",
		"foo=1",
		"rtt_ns",
		"rtt_ns=",
		"=5",
		",",
		"doorbells=1,",
		",doorbells=1",
		"doorbells=1,,mops=2",
		"doorbells=0",
		"doorbells=1025",
		"doorbells=-1",
		"doorbells=+1",
		"doorbells=1.5",
		"doorbells=0x10",
		"doorbells= 1",
		"doorbells=1 ",
		"DOORBELLS=1",
		"mops=0",
		"mops=0.0001",
		"mops=1001",
		"mops=-1",
		"mops=abc",
		"mops=1e3",
		"mops=nan",
		"mops=inf",
		"mops=1..2",
		"mops=.",
		"rtt_ns=1000000001",
		"rtt_ns=99999999999999999999999",
		"db_hold_ns=1000001",
		"miss_ns=1000001",
		"wqe_cache=16777217",
		"doorbells=1,doorbells=2",
		"doorbells=1=2",
		"rtt_ns=000000000000000000000000000000000000000000000"
		"00000000000001",
	};
	struct smart_tp_domain *d = NULL;
	struct shm_model_params p;
	size_t i;

	for (i = 0; i < SMART_ARRAY_SIZE(bad); i++) {
		int rc = open_spec(bad[i], &d);

		CHECK_MSG(rc == SMART_EINVAL,
			  "spec \"%s\" gave %d, not "
			  "SMART_EINVAL",
			  bad[i], rc);
		CHECK_EQ(smart__shm_model_parse(bad[i], &p, NULL),
			 SMART_EINVAL);
	}
	CHECK_EQ(smart__shm_model_parse(NULL, &p, NULL), SMART_EINVAL);
	CHECK_OK(smart__shm_model_parse("miss_ns=7", &p, NULL));
	CHECK_U64_EQ(p.miss_ns, 7);
	/* Long but within an item's limit: leading zeros are fine. */
	CHECK_OK(smart__shm_model_parse(
		"rtt_ns=0000000000000000000000000000000000000000000000000001",
		&p, NULL));
	CHECK_U64_EQ(p.rtt_ns, 1);
	/* "sim" first: the sim transport's calibrated base (docs/sim.md
	 * §2), keys still override it; "default" stays shm's */
	CHECK_OK(smart__shm_model_parse("sim", &p, NULL));
	CHECK(p.mops == 110 && p.wqe_cache == 1024 && p.miss_ns == 3);
	CHECK_OK(smart__shm_model_parse("sim,miss_ns=7", &p, NULL));
	CHECK(p.mops == 110 && p.miss_ns == 7);
	CHECK_OK(smart__shm_model_parse("default", &p, NULL));
	CHECK(p.mops == 4.0 && p.wqe_cache == 32);
	CHECK_EQ(smart__shm_model_parse("simx", &p, NULL), SMART_EINVAL);
}

/* ---- completion time and memory effect ---- */

/* rtt 2 ms: a WRITE posted at t0 neither completes nor lands in the
 * region before t0 + 1 ms, and does within 500 ms.  The time is read
 * after each poll, so a preempted test can only see fewer early polls,
 * never a false early completion. */
static void test_rtt_delay(void)
{
	struct fx f;
	struct conn c;
	struct smart_tp_wc wc;
	struct smart_tp_wr w;
	uint64_t *loc, t0, t, early = 0;
	volatile uint64_t *rw;
	int r;

	fx_open(&f, "rtt_ns=2000000,db_hold_ns=0");
	conn_open(&f, NULL, 0, &c);
	loc = f.lmr->addr;
	rw = (volatile uint64_t *)((uint8_t *)f.region->addr + 64);
	*loc = 0x1234;
	w = wr_make(&f, SMART_TP_WRITE, 7, 64, loc, SMART_TP_SIGNALED);
	t0 = now_ns();
	CHECK_OK(f.ops->post(c.qp, &w, 1));
	for (;;) {
		r = f.ops->poll(c.cq, &wc, 1);
		t = now_ns();
		CHECK_GE(r, 0);
		if (r)
			break;
		/* Only this thread polls, so nothing ran: memory unchanged. */
		CHECK_U64_EQ(*rw, 0);
		early += t < t0 + 1000000;
		CHECK_MSG(t < t0 + 500000000ull,
			  "no completion within 500 ms of a 2 ms round trip");
	}
	CHECK_MSG(t >= t0 + 1000000,
		  "completed %.3f ms after the post, "
		  "within half the 2 ms round trip",
		  (double)(t - t0) / 1e6);
	CHECK_U64_EQ(wc.wr_id, 7);
	CHECK_EQ(wc.status, SMART_TP_WC_OK);
	CHECK_U64_EQ(*rw, 0x1234);
	printf("   %" PRIu64 " empty polls in the first ms; done after "
	       "%.2f ms\n",
	       early, (double)(t - t0) / 1e6);
	conn_close(&f, &c);
	fx_close(&f);
}

/* ---- doorbell contention ---- */

struct db_thread {
	struct fx *f;
	struct conn c;
	pthread_t th;
	int idx;
	atomic_int *go, *stop;
	uint64_t posts, min_posts;
};

/* Post single READs, one in flight, until told to stop and at least
 * min_posts of them are done. */
static void *db_run(void *arg)
{
	struct db_thread *t = arg;
	uint64_t *loc = (uint64_t *)t->f->lmr->addr + 64 * t->idx;
	struct smart_tp_wr w;

	while (!atomic_load(t->go))
		;
	while (!atomic_load(t->stop) || t->posts < t->min_posts) {
		w = wr_make(t->f, SMART_TP_READ, t->posts, 8, loc,
			    SMART_TP_SIGNALED);
		CHECK_OK(t->f->ops->post(t->c.qp, &w, 1));
		wait_one(t->f, t->c.cq, t->posts);
		t->posts++;
	}
	return NULL;
}

/* Two threads, each with its own QP and CQ, post concurrently; returns
 * the domain's counters once each posted min_posts and, when
 * until_contended, the domain saw a contended acquisition (or 10 s). */
static struct smart_tp_stats db_race(struct fx *f, uint32_t flags,
				     uint64_t min_posts, int until_contended)
{
	struct db_thread t[2];
	atomic_int go = 0, stop = 0;
	uint64_t deadline = now_ns() + WAIT_NS;
	struct smart_tp_stats s;
	int i;

	for (i = 0; i < 2; i++) {
		t[i] = (struct db_thread){ .f = f,
					   .idx = i,
					   .go = &go,
					   .stop = &stop,
					   .min_posts = min_posts };
		conn_open(f, NULL, flags, &t[i].c);
		CHECK_EQ(pthread_create(&t[i].th, NULL, db_run, &t[i]), 0);
	}
	atomic_store(&go, 1);
	while (until_contended && dom_stats(f).db_contended == 0 &&
	       now_ns() < deadline)
		usleep(1000);
	atomic_store(&stop, 1);
	for (i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(t[i].th, NULL), 0);
	s = dom_stats(f);
	CHECK_U64_EQ(s.db_rings, t[0].posts + t[1].posts);
	for (i = 0; i < 2; i++)
		conn_close(f, &t[i].c);
	return s;
}

static void test_db_contention(void)
{
	struct smart_tp_stats s;
	struct fx f;

	fx_open(&f, "doorbells=1,db_hold_ns=20000,rtt_ns=1000,mops=100");
	s = db_race(&f, 0, 100, 1);
	printf("   one shared doorbell: %" PRIu64 " rings, %" PRIu64
	       " contended\n",
	       s.db_rings, s.db_contended);
	CHECK_GT(s.db_contended, 0);
	fx_close(&f);

	fx_open(&f, "doorbells=1,db_hold_ns=20000,rtt_ns=1000,mops=100");
	s = db_race(&f, SMART_TP_OWN_DOORBELL, 300, 0);
	printf("   own doorbells: %" PRIu64 " rings, %" PRIu64 " contended\n",
	       s.db_rings, s.db_contended);
	CHECK_U64_EQ(s.db_contended, 0);
	fx_close(&f);
}

/* ---- doorbell mapping ---- */

static int qp_db(struct fx *f, struct smart_tp_cq *cq, uint32_t flags,
		 struct smart_tp_qp **qp)
{
	struct smart_tp_qp_attr attr = { .max_send_wr = 8, .flags = flags };

	CHECK_OK(f->ops->qp_create(f->idom, cq, &attr, qp));
	return smart__shm_qp_doorbell(*qp);
}

static void test_db_mapping(void)
{
	struct smart_tp_qp *qp[24], *own[2], *extra;
	struct smart_tp_cq *cq;
	struct fx f;
	int i;

	/* mlx5-like 16: QPs 0-3 get dedicated 0-3, then 4..15 round robin;
	 * an own-doorbell QP gets 16, 17, ... */
	fx_open(&f, "default");
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < 24; i++) {
		int want = i < 4 ? i : 4 + (i - 4) % 12;

		CHECK_EQ(qp_db(&f, cq, 0, &qp[i]), want);
	}
	CHECK_EQ(qp_db(&f, cq, SMART_TP_OWN_DOORBELL, &own[0]), 16);
	CHECK_EQ(qp_db(&f, cq, SMART_TP_OWN_DOORBELL, &own[1]), 17);
	/* A destroyed QP's dedicated register goes to the next QP. */
	f.ops->qp_destroy(qp[1]);
	CHECK_EQ(qp_db(&f, cq, 0, &qp[1]), 1);
	CHECK_EQ(qp_db(&f, cq, 0, &extra), 12);
	f.ops->qp_destroy(extra);
	for (i = 0; i < 24; i++)
		f.ops->qp_destroy(qp[i]);
	f.ops->qp_destroy(own[0]);
	f.ops->qp_destroy(own[1]);
	f.ops->cq_destroy(cq);
	fx_close(&f);

	/* One register: it is shared by all; two: one dedicated. */
	fx_open(&f, "doorbells=1");
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < 3; i++)
		CHECK_EQ(qp_db(&f, cq, 0, &qp[i]), 0);
	CHECK_EQ(qp_db(&f, cq, SMART_TP_OWN_DOORBELL, &own[0]), 1);
	for (i = 0; i < 3; i++)
		f.ops->qp_destroy(qp[i]);
	f.ops->qp_destroy(own[0]);
	f.ops->cq_destroy(cq);
	fx_close(&f);

	fx_open(&f, "doorbells=2");
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < 3; i++)
		CHECK_EQ(qp_db(&f, cq, 0, &qp[i]), i ? 1 : 0);
	for (i = 0; i < 3; i++)
		f.ops->qp_destroy(qp[i]);
	f.ops->cq_destroy(cq);
	fx_close(&f);

	/* Without the model there is no doorbell to speak of. */
	fx_open(&f, NULL);
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	CHECK_EQ(qp_db(&f, cq, SMART_TP_OWN_DOORBELL, &qp[0]), -1);
	f.ops->qp_destroy(qp[0]);
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* ---- WQE cache ---- */

/* A chain of n READs, the last signalled, with ids base.. */
static void post_chain(struct fx *f, struct conn *c, int n, uint64_t base)
{
	struct smart_tp_wr w[32];
	uint64_t *loc = f->lmr->addr;
	int i;

	for (i = 0; i < n; i++)
		w[i] = wr_make(f, SMART_TP_READ, base + (uint64_t)i,
			       8 * (uint64_t)i, &loc[i],
			       i == n - 1 ? SMART_TP_SIGNALED : 0);
	CHECK_OK(f->ops->post(c->qp, w, n));
}

static void test_wqe_misses(void)
{
	struct conn a, b;
	struct fx f;

	fx_open(&f, "wqe_cache=8,rtt_ns=1000,mops=100,db_hold_ns=0");
	conn_open(&f, NULL, 0, &a);
	conn_open(&f, NULL, 0, &b);
	/* Up to the cache: no miss. */
	post_chain(&f, &a, 8, 100);
	wait_one(&f, a.cq, 107);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 0);
	/* 12 outstanding: the last 4 miss. */
	post_chain(&f, &a, 12, 200);
	wait_one(&f, a.cq, 211);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 4);
	/* Outstanding WRs of all QPs count: 6 + 6 -> 4 more misses. */
	post_chain(&f, &a, 6, 300);
	post_chain(&f, &b, 6, 400);
	wait_one(&f, a.cq, 305);
	wait_one(&f, b.cq, 405);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 8);
	/* Executed WRs left the device: 8 again fit. */
	post_chain(&f, &b, 8, 500);
	wait_one(&f, b.cq, 507);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 8);
	/* WRs of a destroyed QP leave the device too. */
	post_chain(&f, &a, 8, 600);
	conn_close(&f, &a);
	post_chain(&f, &b, 8, 700);
	wait_one(&f, b.cq, 707);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 8);
	/* Counters of a destroyed own-doorbell QP are kept. */
	conn_open(&f, NULL, SMART_TP_OWN_DOORBELL, &a);
	post_chain(&f, &a, 10, 800);
	wait_one(&f, a.cq, 809);
	conn_close(&f, &a);
	CHECK_U64_EQ(dom_stats(&f).wqe_misses, 10);
	CHECK_U64_EQ(dom_stats(&f).db_rings, 8);
	conn_close(&f, &b);
	fx_close(&f);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "spec_off_and_default",
				   test_spec_off_and_default },
				 { "spec_overrides", test_spec_overrides },
				 { "spec_bad", test_spec_bad },
				 { "rtt_delay", test_rtt_delay },
				 { "db_contention", test_db_contention },
				 { "db_mapping", test_db_mapping },
				 { "wqe_misses", test_wqe_misses },
				 { 0 } });
}
