/*
 * The transport conformance suite (see conformance.h for how a transport
 * instantiates it).  Each case checks one part of the contract in
 * src/transport/transport.h using the transport directly, with no
 * bootstrap and no core:
 *
 *   responder domain: mr_alloc(region, shareable) -> region_blob
 *   initiator domain: remote_attach(blob, dup(region->fd) or -1),
 *                     mr_alloc(local), cq_create, qp_create, qp_blob
 *   responder:        accept(region, client blob) -> responder blob
 *   initiator:        qp_connect(qp, remote, responder blob)
 *
 * WRs address remote_base(remote) + offset with remote_rkey(remote).  The
 * test reads and writes the region directly through region->addr to check
 * what the transport did, which is valid because the responder domain
 * lives in the test process (or in a forked child that checks it).
 *
 * Built by inclusion: test_transport_<name>.c does
 * `#include "transport/conformance.c"`, so everything here except
 * smart_conformance_run() is static.
 *
 * Invariants: a case never depends on another; every wait is bounded
 * (CONF_WAIT_NS) so a broken transport fails instead of hanging; the
 * outcome of a randomised case depends only on its printed seed, never on
 * thread interleaving; assertions are never about timing (the only
 * time-based check, expect_quiet(), can only catch extra completions).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/test.h"
#include "util/compiler.h"
#include "conformance.h"

#define CONF_REGION_LEN (256u << 10)
#define CONF_LOCAL_LEN (256u << 10)
#define CONF_WAIT_NS (10ull * 1000000000ull)
#define CONF_QUIET_NS (10ull * 1000000ull)
#define CONF_SEED UINT64_C(0x5eed5eedcafef00d)
#define CONF_SIG SMART_TP_SIGNALED

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a tiny, well-distributed generator for test data. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static void rng_fill(uint64_t *s, void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7))
			v = rng_next(s);
		p[i] = (uint8_t)(v >> (8 * (i & 7)));
	}
}

/* The seed of a randomised case: a fixed base (SMART_CONF_SEED overrides
 * it) mixed with the case name, printed so a failure can be replayed. */
static uint64_t case_seed(const char *name)
{
	const char *e = getenv("SMART_CONF_SEED");
	uint64_t base = e ? strtoull(e, NULL, 0) : CONF_SEED;
	uint64_t s = base;

	for (; *name; name++)
		s = (s ^ (uint8_t)*name) * UINT64_C(0x100000001b3);
	printf("   seed base 0x%016" PRIx64 " -> 0x%016" PRIx64 "\n", base, s);
	fflush(stdout);
	return s;
}

static uint32_t scaled(const struct smart_conf_env *env, uint32_t n)
{
	uint64_t pct = env->scale_pct ? env->scale_pct : 100;
	uint64_t v = (uint64_t)n * pct / 100;

	return v ? (uint32_t)v : 1;
}

static const char *wc_name(int s)
{
	static const char *const names[] = {
		"OK", "REM_ACCESS", "LOC_PROT", "BAD_WR", "FLUSH",
		"RETRY_EXC", "FATAL",
	};

	return s >= 0 && s < 7 ? names[s] : "?";
}

#define CHECK_WC(wc, id, st)                                                 \
	do {                                                                 \
		const struct smart_tp_wc *w_ = &(wc);                        \
		if (w_->wr_id != (uint64_t)(id) || w_->status != (st))       \
			TEST_FAIL("completion wr_id %" PRIu64 " status %s, " \
				  "expected wr_id %" PRIu64 " status %s",    \
				  w_->wr_id, wc_name(w_->status),            \
				  (uint64_t)(id), wc_name(st));              \
	} while (0)

/* ------------------------------------------------------------------ */
/* Fixture: a responder with one region, an initiator attached to it  */

struct conf_target {
	uint64_t base;		/* remote_base() */
	uint32_t rkey, lkey;	/* remote_rkey(), local MR lkey */
	size_t rlen;		/* region length */
};

struct fx {
	const struct smart_conf_env *env;
	const struct smart_tp_ops *ops;
	struct smart_tp_domain *rdom, *idom;
	struct smart_tp_mr *region, *lmr;
	struct smart_tp_remote *remote;
	uint8_t blob[SMART_TP_BLOB_MAX];
	size_t blob_len;
	struct conf_target t;
	uint8_t *raddr, *laddr;
};

struct conn {
	const struct smart_tp_ops *ops;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	struct smart_tp_responder *resp;
	int own_cq;
};

static int dom_open(const struct smart_conf_env *env, int blade_side,
		    struct smart_tp_domain **out)
{
	struct smart_tp_cfg cfg = { .gid_index = -1 };

	if (env->open_domain)
		return env->open_domain(env, blade_side, out);
	return env->ops->domain_open(&cfg, out);
}

/* The descriptor remote_attach() takes ownership of. */
static int attach_fd(const struct smart_tp_mr *region)
{
	int fd;

	if (region->fd < 0)
		return -1;
	fd = dup(region->fd);
	CHECK_MSG(fd >= 0, "dup: %s", strerror(errno));
	return fd;
}

static void fx_open(struct fx *f, const struct smart_conf_env *env)
{
	const struct smart_tp_ops *ops = env->ops;

	memset(f, 0, sizeof(*f));
	f->env = env;
	f->ops = ops;
	CHECK_OK(dom_open(env, 1, &f->rdom));
	CHECK_OK(ops->mr_alloc(f->rdom, CONF_REGION_LEN, -1, 1, &f->region));
	CHECK(f->region->addr != NULL);
	CHECK_GE(f->region->len, CONF_REGION_LEN);
	f->blob_len = sizeof(f->blob);
	CHECK_OK(ops->region_blob(f->rdom, f->region, f->blob, &f->blob_len));
	CHECK(f->blob_len > 0 && f->blob_len <= SMART_TP_BLOB_MAX);
	CHECK_OK(dom_open(env, 0, &f->idom));
	CHECK_OK(ops->remote_attach(f->idom, f->blob, f->blob_len,
				    attach_fd(f->region), &f->remote));
	CHECK_OK(ops->mr_alloc(f->idom, CONF_LOCAL_LEN, -1, 0, &f->lmr));
	CHECK(f->lmr->addr != NULL);
	CHECK_GE(f->lmr->len, CONF_LOCAL_LEN);
	f->t.base = ops->remote_base(f->remote);
	f->t.rkey = ops->remote_rkey(f->remote);
	f->t.lkey = f->lmr->lkey;
	f->t.rlen = f->region->len;
	f->raddr = f->region->addr;
	f->laddr = f->lmr->addr;
}

static void fx_close(struct fx *f)
{
	f->ops->mr_free(f->idom, f->lmr);
	f->ops->remote_detach(f->remote);
	f->ops->domain_close(f->idom);
	f->ops->mr_free(f->rdom, f->region);
	f->ops->domain_close(f->rdom);
}

/* A connected QP on cq, or on a new CQ of the given depth when cq is NULL;
 * flags (SMART_TP_SHARED) apply to both. */
static void conn_open(struct fx *f, struct smart_tp_cq *cq, uint32_t depth,
		      uint32_t max_send_wr, uint32_t flags, struct conn *c)
{
	const struct smart_tp_ops *ops = f->ops;
	struct smart_tp_qp_attr attr = {
		.max_send_wr = max_send_wr, .flags = flags,
	};
	uint8_t cb[SMART_TP_BLOB_MAX], pb[SMART_TP_BLOB_MAX];
	size_t cl = sizeof(cb), pl = sizeof(pb);

	memset(c, 0, sizeof(*c));
	c->ops = ops;
	if (!cq) {
		CHECK_OK(ops->cq_create(f->idom, depth, flags, &cq));
		c->own_cq = 1;
	}
	c->cq = cq;
	CHECK_OK(ops->qp_create(f->idom, cq, &attr, &c->qp));
	CHECK_OK(ops->qp_blob(c->qp, cb, &cl));
	CHECK(cl > 0 && cl <= SMART_TP_BLOB_MAX);
	CHECK_OK(ops->accept(f->rdom, f->region, cb, cl, pb, &pl, &c->resp));
	CHECK(pl > 0 && pl <= SMART_TP_BLOB_MAX);
	CHECK_OK(ops->qp_connect(c->qp, f->remote, pb, pl));
	CHECK_EQ(ops->qp_in_error(c->qp), 0);
}

static void conn_close(struct conn *c)
{
	c->ops->qp_destroy(c->qp);
	if (c->resp)
		c->ops->responder_destroy(c->resp);
	if (c->own_cq)
		c->ops->cq_destroy(c->cq);
}

static struct smart_tp_wr wr_make(const struct conf_target *t, uint8_t op,
				  uint64_t id, uint64_t off, void *local,
				  uint32_t len, uint8_t flags)
{
	struct smart_tp_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.remote = t->base + off;
	w.local = local;
	w.len = len;
	w.lkey = t->lkey;
	w.rkey = t->rkey;
	w.opcode = op;
	w.flags = flags;
	return w;
}

static struct smart_tp_wr wr_atomic(const struct conf_target *t, uint8_t op,
				    uint64_t id, uint64_t off, uint64_t *local,
				    uint64_t cmp_add, uint64_t swap,
				    uint8_t flags)
{
	struct smart_tp_wr w = wr_make(t, op, id, off, local, 8, flags);

	w.compare_add = cmp_add;
	w.swap = swap;
	return w;
}

static void wait_timeout(const struct smart_tp_wc *wc, int got, int n)
{
	int i;

	for (i = 0; i < got; i++)
		fprintf(stderr, "   got completion wr_id %" PRIu64 " %s\n",
			wc[i].wr_id, wc_name(wc[i].status));
	TEST_FAIL("timed out with %d of %d completions", got, n);
}

/* Collect exactly n completions into wc, in CQ order. */
static void wait_wcs(const struct smart_tp_ops *ops, struct smart_tp_cq *cq,
		     struct smart_tp_wc *wc, int n)
{
	uint64_t deadline = now_ns() + CONF_WAIT_NS;
	int got = 0, r;

	while (got < n) {
		r = ops->poll(cq, wc + got, n - got);
		CHECK_GE(r, 0);
		CHECK_LE(r, n - got);
		got += r;
		if (!r && now_ns() >= deadline)
			wait_timeout(wc, got, n);
	}
}

/* No completion shows up for a while.  Can only catch extra completions;
 * a correct transport never fails it whatever the timing. */
static void expect_quiet(const struct smart_tp_ops *ops,
			 struct smart_tp_cq *cq)
{
	uint64_t end = now_ns() + CONF_QUIET_NS;
	struct smart_tp_wc wc;
	int r;

	do {
		r = ops->poll(cq, &wc, 1);
		CHECK_GE(r, 0);
		CHECK_MSG(r == 0, "unexpected completion wr_id %" PRIu64
			  " status %s", wc.wr_id, wc_name(wc.status));
	} while (now_ns() < end);
}

/* Post a chain whose last WR is signalled; wait for its OK completion. */
static void run_chain(struct conn *c, const struct smart_tp_wr *wrs, int n)
{
	struct smart_tp_wc wc;

	CHECK_OK(c->ops->post(c->qp, wrs, n));
	wait_wcs(c->ops, c->cq, &wc, 1);
	CHECK_WC(wc, wrs[n - 1].wr_id, SMART_TP_WC_OK);
	CHECK_EQ(wc.opcode, wrs[n - 1].opcode);
}

static void run1(struct conn *c, struct smart_tp_wr w)
{
	w.flags |= CONF_SIG;
	run_chain(c, &w, 1);
}

static uint64_t rword(const struct fx *f, size_t off)
{
	return __atomic_load_n((uint64_t *)(f->raddr + off), __ATOMIC_ACQUIRE);
}

static void rword_set(const struct fx *f, size_t off, uint64_t v)
{
	__atomic_store_n((uint64_t *)(f->raddr + off), v, __ATOMIC_RELEASE);
}

/* First differing byte of two buffers, or -1. */
static long first_diff(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

#define CHECK_MEM_EQ(a, b, len, what)                                        \
	do {                                                                 \
		long d_ = first_diff((a), (b), (len));                       \
		CHECK_MSG(d_ < 0, "%s: byte %ld of %zu differs", (what),     \
			  d_, (size_t)(len));                                \
	} while (0)

/* ------------------------------------------------------------------ */
/* Unix-socket messages (fork cases): one SEQPACKET message, optional fd */

static void msg_send(int s, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.b;
		m.msg_controllen = sizeof(u.b);
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	CHECK_MSG(sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)len,
		  "sendmsg: %s", strerror(errno));
}

/* Receive one message (10 s timeout); *fd gets a passed descriptor or -1. */
static size_t msg_recv(int s, void *buf, size_t cap, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.b, .msg_controllen = sizeof(u.b) };
	struct pollfd p = { .fd = s, .events = POLLIN };
	struct cmsghdr *c;
	ssize_t n;

	CHECK_MSG(poll(&p, 1, 10000) == 1, "peer process did not answer");
	n = recvmsg(s, &m, MSG_CMSG_CLOEXEC);
	CHECK_MSG(n > 0, "recvmsg: %s", n ? strerror(errno) : "peer closed");
	if (fd) {
		*fd = -1;
		c = CMSG_FIRSTHDR(&m);
		if (c && c->cmsg_level == SOL_SOCKET &&
		    c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	}
	return (size_t)n;
}

static void check_child_ok(pid_t pid, const char *who)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		TEST_FAIL("%s killed by signal %d", who, WTERMSIG(st));
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "%s exited with %d", who, WEXITSTATUS(st));
}

/* ------------------------------------------------------------------ */
/* Case: objects — the table, fresh memory, keys, two QPs on one CQ    */

static void check_ops_table(const struct smart_tp_ops *o)
{
	CHECK(o->name && o->domain_open && o->domain_close && o->mr_alloc);
	CHECK(o->mr_free && o->cq_create && o->cq_destroy && o->poll);
	CHECK(o->region_blob && o->accept && o->responder_destroy);
	CHECK(o->remote_attach && o->remote_detach && o->remote_base);
	CHECK(o->remote_rkey && o->qp_create && o->qp_blob);
	CHECK(o->qp_connect && o->qp_destroy && o->post && o->qp_in_error);
}

static void case_objects(const struct smart_conf_env *env)
{
	struct fx f;
	struct conn a, b;
	struct smart_tp_mr *m2;
	uint8_t zero[4096] = { 0 };
	size_t off;

	check_ops_table(env->ops);
	fx_open(&f, env);
	for (off = 0; off < f.t.rlen; off += sizeof(zero))
		CHECK_MEM_EQ(f.raddr + off, zero,
			     smart_min(sizeof(zero), f.t.rlen - off),
			     "fresh region not zeroed");
	CHECK_MEM_EQ(f.laddr, zero, sizeof(zero), "fresh local MR not zeroed");
	CHECK_EQ((uintptr_t)f.raddr % 8, 0);
	CHECK_OK(f.ops->mr_alloc(f.idom, 4096, 0, 0, &m2));
	CHECK_EQ(m2->hugepages, 0);
	CHECK_NE(m2->lkey, f.lmr->lkey);

	/* Two QPs on one CQ; the second local MR's lkey works. */
	conn_open(&f, NULL, 16, 8, 0, &a);
	conn_open(&f, a.cq, 0, 8, 0, &b);
	memset(f.laddr, 0x3c, 64);
	run1(&a, wr_make(&f.t, SMART_TP_WRITE, 1, 640, f.laddr, 64, 0));
	{
		struct smart_tp_wr w = wr_make(&f.t, SMART_TP_READ, 2, 640,
					       m2->addr, 64, 0);

		w.lkey = m2->lkey;
		run1(&b, w);
	}
	CHECK_MEM_EQ(m2->addr, f.laddr, 64, "READ through a second MR");
	CHECK_MEM_EQ(f.raddr + 640, f.laddr, 64, "region after WRITE");
	conn_close(&b);
	conn_close(&a);
	f.ops->mr_free(f.idom, m2);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: rw_sizes — READ/WRITE at boundary sizes and offsets            */

#define RW_SRC_OFF 5			/* unaligned local source */
#define RW_DST_OFF ((128u << 10) + 3)	/* unaligned local destination */

static void rw_one(struct fx *f, struct conn *c, uint64_t *rng, size_t off,
		   uint32_t len)
{
	uint8_t *src = f->laddr + RW_SRC_OFF, *dst = f->laddr + RW_DST_OFF;
	uint8_t *r = f->raddr + off;
	int after = off + len < f->t.rlen;

	/* Guards: the byte before and after in both region and dst. */
	if (off)
		r[-1] = 0xa5;
	if (after)
		r[len] = 0x5a;
	rng_fill(rng, src, len);
	run1(c, wr_make(&f->t, SMART_TP_WRITE, off, off, src, len, 0));
	CHECK_MEM_EQ(r, src, len, "region after WRITE");
	CHECK(!off || r[-1] == 0xa5);
	CHECK(!after || r[len] == 0x5a);

	memset(dst - 1, 0xc3, len + 2);
	run1(c, wr_make(&f->t, SMART_TP_READ, len, off, dst, len, 0));
	CHECK_MEM_EQ(dst, src, len, "READ after WRITE");
	CHECK(dst[-1] == 0xc3 && dst[len] == 0xc3);

	/* Data placed directly in the region comes back through READ. */
	rng_fill(rng, r, len);
	run1(c, wr_make(&f->t, SMART_TP_READ, len, off, dst, len, 0));
	CHECK_MEM_EQ(dst, r, len, "READ of data written in place");
	CHECK(dst[-1] == 0xc3 && dst[len] == 0xc3);
}

static void case_rw_sizes(const struct smart_conf_env *env)
{
	static const uint32_t sizes[] = {
		1, 7, 8, 9, 63, 64, 65, 4096, 65536,
	};
	uint64_t rng = case_seed("rw_sizes");
	struct fx f;
	struct conn c;
	size_t i, j, offs[3];

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	for (i = 0; i < SMART_ARRAY_SIZE(sizes); i++) {
		offs[0] = 0;
		offs[1] = 4096 + 3;		/* unaligned, crosses a page */
		offs[2] = f.t.rlen - sizes[i];	/* ends on the last byte */
		for (j = 0; j < 3; j++) {
			printf("   size %u offset %zu\n", sizes[i], offs[j]);
			rw_one(&f, &c, &rng, offs[j], sizes[i]);
		}
	}
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: atomic_basic — CAS/FAA round trips                             */

static void atomic_one(struct fx *f, struct conn *c, uint64_t *rng,
		       size_t off)
{
	uint64_t *loc = (uint64_t *)(f->laddr + 64);
	uint64_t v0 = rng_next(rng), a = rng_next(rng) | 1;
	uint64_t s = rng_next(rng), lo = 0, hi = 0;

	/* Neighbouring words must survive the atomics untouched. */
	if (off >= 8)
		rword_set(f, off - 8, lo = rng_next(rng));
	if (off + 16 <= f->t.rlen)
		rword_set(f, off + 8, hi = rng_next(rng));
	rword_set(f, off, v0);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 1, off, loc, a, 0, 0));
	CHECK_U64_EQ(*loc, v0);
	CHECK_U64_EQ(rword(f, off), v0 + a);
	/* A CAS that does not match changes nothing and returns the value. */
	run1(c, wr_atomic(&f->t, SMART_TP_CAS, 2, off, loc, v0, s, 0));
	CHECK_U64_EQ(*loc, v0 + a);
	CHECK_U64_EQ(rword(f, off), v0 + a);
	run1(c, wr_atomic(&f->t, SMART_TP_CAS, 3, off, loc, v0 + a, s, 0));
	CHECK_U64_EQ(*loc, v0 + a);
	CHECK_U64_EQ(rword(f, off), s);
	*loc = 0;
	run1(c, wr_make(&f->t, SMART_TP_READ, 4, off, loc, 8, 0));
	CHECK_U64_EQ(*loc, s);
	/* FAA wraps modulo 2^64; FAA +0 is an atomic read. */
	rword_set(f, off, UINT64_MAX);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 5, off, loc, 2, 0, 0));
	CHECK_U64_EQ(*loc, UINT64_MAX);
	run1(c, wr_atomic(&f->t, SMART_TP_FAA, 6, off, loc, 0, 0, 0));
	CHECK_U64_EQ(*loc, 1);
	CHECK_U64_EQ(rword(f, off), 1);
	if (off >= 8)
		CHECK_U64_EQ(rword(f, off - 8), lo);
	if (off + 16 <= f->t.rlen)
		CHECK_U64_EQ(rword(f, off + 8), hi);
}

static void case_atomic_basic(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("atomic_basic");
	struct fx f;
	struct conn c;
	size_t offs[4], i;

	fx_open(&f, env);
	conn_open(&f, NULL, 16, 8, 0, &c);
	offs[0] = 0;
	offs[1] = 8;
	offs[2] = 4096 + 24;
	offs[3] = f.t.rlen - 8;		/* the last word of the region */
	for (i = 0; i < 4; i++)
		atomic_one(&f, &c, &rng, offs[i]);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: signal_selective — only signalled WRs complete                 */

#define SIG_N 16

static void case_signal_selective(const struct smart_conf_env *env)
{
	static const uint8_t ops4[4] = {
		SMART_TP_WRITE, SMART_TP_READ, SMART_TP_FAA, SMART_TP_CAS,
	};
	struct smart_tp_wr w[SIG_N + 1];
	struct smart_tp_wc wc[SIG_N];
	uint64_t *loc;
	struct fx f;
	struct conn c;
	int i;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	loc = (uint64_t *)f.laddr;

	/* N unsignalled + 1 signalled: exactly one completion. */
	for (i = 0; i < SIG_N; i++) {
		loc[i] = 0x1000 + (uint64_t)i;
		w[i] = wr_make(&f.t, SMART_TP_WRITE, 100 + i, 8 * i, &loc[i],
			       8, 0);
	}
	w[SIG_N] = wr_make(&f.t, SMART_TP_READ, 999, 0, &loc[64],
			   8 * SIG_N, CONF_SIG);
	run_chain(&c, w, SIG_N + 1);
	for (i = 0; i < SIG_N; i++)
		CHECK_U64_EQ(loc[64 + i], 0x1000 + (uint64_t)i);
	/* A later signalled WR must be the very next completion. */
	run1(&c, wr_make(&f.t, SMART_TP_READ, 1000, 0, &loc[64], 8, 0));

	/* Unsignalled WRs spread over several posts, then one signalled. */
	for (i = 0; i < 3; i++)
		CHECK_OK(f.ops->post(c.qp, w + 5 * i, 5));
	run1(&c, wr_make(&f.t, SMART_TP_READ, 1001, 0, &loc[64], 8, 0));
	expect_quiet(f.ops, c.cq);

	/* N signalled: N completions in posting order, right opcodes. */
	for (i = 0; i < SIG_N; i++)
		w[i] = wr_atomic(&f.t, ops4[i % 4], 200 + i, 256 + 8 * i,
				 &loc[128 + i], 0, 1, CONF_SIG);
	CHECK_OK(f.ops->post(c.qp, w, SIG_N));
	wait_wcs(f.ops, c.cq, wc, SIG_N);
	for (i = 0; i < SIG_N; i++) {
		CHECK_WC(wc[i], 200 + i, SMART_TP_WC_OK);
		CHECK_EQ(wc[i].opcode, ops4[i % 4]);
	}
	expect_quiet(f.ops, c.cq);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: order_chain — WRs of one QP execute in posting order           */

#define ORD_K 16

static void order_write_read(struct fx *f, struct conn *c, uint64_t *loc)
{
	struct smart_tp_wr w[ORD_K + 1];
	int i;

	for (i = 0; i < ORD_K; i++) {
		loc[i] = (uint64_t)i + 1;
		w[i] = wr_make(&f->t, SMART_TP_WRITE, i, 64, &loc[i], 8, 0);
	}
	loc[ORD_K] = 0;
	w[ORD_K] = wr_make(&f->t, SMART_TP_READ, 77, 64, &loc[ORD_K], 8,
			   CONF_SIG);
	run_chain(c, w, ORD_K + 1);
	CHECK_U64_EQ(loc[ORD_K], ORD_K);
	CHECK_U64_EQ(rword(f, 64), ORD_K);
}

static void order_atomics(struct fx *f, struct conn *c, uint64_t *loc,
			  uint64_t v0)
{
	struct smart_tp_wr w[2 * ORD_K];
	struct smart_tp_wc wc[2 * ORD_K];
	int i;

	/* FAA chain: consecutive old values; CAS chain i -> i+1 all match. */
	rword_set(f, 128, v0);
	rword_set(f, 136, 0);
	for (i = 0; i < ORD_K; i++) {
		w[i] = wr_atomic(&f->t, SMART_TP_FAA, i, 128, &loc[i], 1, 0,
				 CONF_SIG);
		w[ORD_K + i] = wr_atomic(&f->t, SMART_TP_CAS, ORD_K + i, 136,
					 &loc[ORD_K + i], (uint64_t)i,
					 (uint64_t)i + 1, i & 1 ? CONF_SIG : 0);
	}
	w[2 * ORD_K - 1].flags = CONF_SIG;
	CHECK_OK(f->ops->post(c->qp, w, 2 * ORD_K));
	wait_wcs(f->ops, c->cq, wc, ORD_K + ORD_K / 2);
	for (i = 0; i < ORD_K; i++) {
		CHECK_WC(wc[i], i, SMART_TP_WC_OK);
		CHECK_U64_EQ(loc[i], v0 + (uint64_t)i);
		CHECK_U64_EQ(loc[ORD_K + i], i);
	}
	for (i = 0; i < ORD_K / 2; i++)
		CHECK_WC(wc[ORD_K + i], ORD_K + 2 * i + 1, SMART_TP_WC_OK);
	CHECK_U64_EQ(rword(f, 128), v0 + ORD_K);
	CHECK_U64_EQ(rword(f, 136), ORD_K);
}

static void order_mixed(struct fx *f, struct conn *c, uint64_t *loc)
{
	struct smart_tp_wr w[4];

	/* x := 5; FAA x += 3 (old 5); CAS 8 -> 100 (old 8); READ x = 100. */
	loc[0] = 5;
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 1, 192, &loc[0], 8, 0);
	w[1] = wr_atomic(&f->t, SMART_TP_FAA, 2, 192, &loc[1], 3, 0, 0);
	w[2] = wr_atomic(&f->t, SMART_TP_CAS, 3, 192, &loc[2], 8, 100, 0);
	w[3] = wr_make(&f->t, SMART_TP_READ, 4, 192, &loc[3], 8, CONF_SIG);
	run_chain(c, w, 4);
	CHECK_U64_EQ(loc[1], 5);
	CHECK_U64_EQ(loc[2], 8);
	CHECK_U64_EQ(loc[3], 100);
}

static void case_order_chain(const struct smart_conf_env *env)
{
	uint64_t rng = case_seed("order_chain");
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	order_write_read(&f, &c, (uint64_t *)f.laddr);
	order_atomics(&f, &c, (uint64_t *)f.laddr, rng_next(&rng));
	order_mixed(&f, &c, (uint64_t *)f.laddr);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: order_long — many chains in flight across many posts           */

struct long_state {
	struct fx *f;
	struct conn *c;
	uint64_t *rd, *fo;	/* per round: READ result, FAA old value */
	uint32_t done;		/* completions seen */
};

static void long_reap(struct long_state *s, int block)
{
	struct smart_tp_wc wc[16];
	uint64_t deadline = now_ns() + CONF_WAIT_NS;
	int n, i;

	do {
		n = s->f->ops->poll(s->c->cq, wc, 16);
		CHECK_GE(n, 0);
		for (i = 0; i < n; i++)
			CHECK_WC(wc[i], s->done++, SMART_TP_WC_OK);
		if (!n && block)
			CHECK_MSG(now_ns() < deadline, "order_long stuck");
	} while (block && !n);
}

static void case_order_long(const struct smart_conf_env *env)
{
	uint32_t rounds = scaled(env, 4000), r;
	struct long_state s;
	struct smart_tp_wr w[3];
	struct fx f;
	struct conn c;
	uint64_t *x;
	int rc;

	CHECK_LE(rounds * 24u, CONF_LOCAL_LEN);
	fx_open(&f, env);
	conn_open(&f, NULL, 64, 48, 0, &c);
	s = (struct long_state){ .f = &f, .c = &c };
	x = (uint64_t *)f.laddr;
	s.rd = x + rounds;
	s.fo = x + 2 * rounds;
	/* Round r: WRITE x := r, READ x, FAA ctr += 1; only the FAA signals. */
	for (r = 0; r < rounds; r++) {
		x[r] = r;
		w[0] = wr_make(&f.t, SMART_TP_WRITE, ~0ull, 512, &x[r], 8, 0);
		w[1] = wr_make(&f.t, SMART_TP_READ, ~0ull, 512, &s.rd[r], 8, 0);
		w[2] = wr_atomic(&f.t, SMART_TP_FAA, r, 520, &s.fo[r], 1, 0,
				 CONF_SIG);
		while ((rc = f.ops->post(c.qp, w, 3)) == SMART_EAGAIN)
			long_reap(&s, 1);
		CHECK_OK(rc);
		long_reap(&s, 0);
	}
	while (s.done < rounds)
		long_reap(&s, 1);
	expect_quiet(f.ops, c.cq);
	for (r = 0; r < rounds; r++) {
		CHECK_U64_EQ(s.rd[r], r);
		CHECK_U64_EQ(s.fo[r], r);
	}
	CHECK_U64_EQ(rword(&f, 512), rounds - 1);
	CHECK_U64_EQ(rword(&f, 520), rounds);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Atomicity workload: per thread, ATOM_CORO state machines ("coroutines")
 * each with one WR in flight on the thread's QP; even ones loop FAA(+1),
 * odd ones loop READ, CAS(old -> old+1), retry from READ on failure.
 * Every increment records the old value it saw; for each word the
 * recorded values must be exactly 0..count-1 (no lost or doubled update).
 * A coroutine picks its word from its own generator, so the expected
 * count per word depends only on the seed, not on the interleaving. */

#define ATOM_WORDS 4
#define ATOM_CORO 8
#define ATOM_OFF 8192		/* region offset of the shared words */
#define ATOM_SLOTS 4096		/* local bytes per worker (slots) */

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
	uint64_t *slots;	/* ATOM_SLOTS bytes in a local MR */
	uint64_t *rec;		/* ATOM_CORO * iters: word << 48 | old */
	uint32_t iters;
	uint64_t seed, retries;
	struct coro co[ATOM_CORO];
};

static uint64_t coro_seed(uint64_t seed, int i)
{
	return seed ^ ((uint64_t)(i + 1) * UINT64_C(0xd1b54a32d192ed03));
}

static void co_post(struct atom_worker *w, int i, uint8_t op,
		    uint64_t cmp_add, uint64_t swap)
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
		w->rec[(size_t)i * w->iters + c->done++] =
			(uint64_t)c->word << 48 | got;
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
		if (!n)
			CHECK_MSG(now_ns() < deadline, "atomic worker stuck");
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
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
			CHECK_MSG(olds[i] == i, "word %d: increment %zu of %zu "
				  "saw old value %" PRIu64 " (lost or doubled "
				  "update)", k, i, m, olds[i]);
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
	       " CAS retries\n", nw, ATOM_CORO, iters, retries);
	atom_verify(&f, rec, (size_t)nw * per, cnt);
	free(rec);
	fx_close(&f);
}

static void case_atomic_threads_w2(const struct smart_conf_env *env)
{
	atomic_threads(env, 2, "atomic_threads_w2");
}

static void case_atomic_threads_w4(const struct smart_conf_env *env)
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
	msg_recv(s, b, sizeof(b), NULL);	/* go */
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

static void case_atomic_fork(const struct smart_conf_env *env)
{
	uint64_t seed = case_seed("atomic_fork"), cnt[ATOM_WORDS] = { 0 };
	uint32_t iters = scaled(env, 10000);
	size_t per = (size_t)ATOM_CORO * iters, bytes = 2 * FORK_W * per * 8;
	struct smart_tp_responder *resp[FORK_W];
	struct atom_worker w[FORK_W];
	struct conn c[FORK_W];
	struct fx f;
	uint64_t *rec;
	int sv[2], i;
	pid_t pid;

	rec = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(rec != MAP_FAILED);
	fx_open(&f, env);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	CHECK_GE(pid, 0);
	if (!pid) {
		close(sv[0]);
		atom_child(env, &f, sv[1], rec + FORK_W * per, iters, seed);
	}
	close(sv[1]);
	accept_child_qps(&f, sv[0], resp);
	for (i = 0; i < FORK_W; i++) {
		conn_open(&f, NULL, 32, 16, 0, &c[i]);
		atom_init(&w[i], f.ops, &c[i], &f.t, f.laddr + i * ATOM_SLOTS,
			  rec + i * per, iters, seed + (uint64_t)i);
		atom_expect(seed + (uint64_t)i, iters, cnt);
		atom_expect(seed + 100 + (uint64_t)i, iters, cnt);
	}
	msg_send(sv[0], "g", 1, -1);
	run_workers(w, FORK_W);
	check_child_ok(pid, "atomic child process");
	printf("   2 processes x %d threads x %d coroutines x %u increments\n",
	       FORK_W, ATOM_CORO, iters);
	atom_verify(&f, rec, 2 * FORK_W * per, cnt);
	for (i = 0; i < FORK_W; i++) {
		conn_close(&c[i]);
		f.ops->responder_destroy(resp[i]);
	}
	close(sv[0]);
	fx_close(&f);
	munmap(rec, bytes);
}

/* ------------------------------------------------------------------ */
/* Case: tearing — aligned 8-byte words never tear (rule 4)             */

#define TEAR_OFF 16384
#define TEAR_BLOCK 64
#define TEAR_CHAIN 4

struct tear_state {
	struct fx *f;
	struct conn wc, rc;	/* writer's and reader's connections */
	uint32_t nwrites;
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
			uint64_t *b = buf + i * (TEAR_BLOCK / 8);

			for (j = 0; j < TEAR_BLOCK / 8; j++)
				b[j] = tear_pattern(v + 1 + (uint64_t)i);
			w[i] = wr_make(&s->f->t, SMART_TP_WRITE, v + 1 + i,
				       TEAR_OFF, b, TEAR_BLOCK,
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

	for (j = 0; j < TEAR_BLOCK / 8; j++) {
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
	uint64_t *buf = (uint64_t *)(s->f->laddr + 8192);
	struct smart_tp_wr w[TEAR_CHAIN];
	int i, last = 0;

	while (!last) {
		last = atomic_load(&s->writer_done);
		for (i = 0; i < TEAR_CHAIN; i++)
			w[i] = wr_make(&s->f->t, SMART_TP_READ, (uint64_t)i,
				       TEAR_OFF, buf + i * (TEAR_BLOCK / 8),
				       TEAR_BLOCK,
				       i == TEAR_CHAIN - 1 ? CONF_SIG : 0);
		run_chain(&s->rc, w, TEAR_CHAIN);
		for (i = 0; i < TEAR_CHAIN; i++)
			tear_check(s, buf + i * (TEAR_BLOCK / 8));
		s->reads += TEAR_CHAIN;
	}
	return NULL;
}

static void case_tearing(const struct smart_conf_env *env)
{
	struct tear_state s;
	pthread_t tw, tr;
	struct fx f;
	int j;

	fx_open(&f, env);
	memset(&s, 0, sizeof(s));
	s.f = &f;
	s.nwrites = scaled(env, 200000) / TEAR_CHAIN * TEAR_CHAIN;
	for (j = 0; j < TEAR_BLOCK / 8; j++)
		rword_set(&f, TEAR_OFF + 8 * (size_t)j, tear_pattern(0));
	conn_open(&f, NULL, 16, 8, 0, &s.wc);
	conn_open(&f, NULL, 16, 8, 0, &s.rc);
	CHECK_EQ(pthread_create(&tw, NULL, tear_writer, &s), 0);
	CHECK_EQ(pthread_create(&tr, NULL, tear_reader, &s), 0);
	CHECK_EQ(pthread_join(tw, NULL), 0);
	CHECK_EQ(pthread_join(tr, NULL), 0);
	printf("   %u writes, %" PRIu64 " block reads, %" PRIu64
	       " words from a different write than word 0\n",
	       s.nwrites, s.reads, s.mixed);
	for (j = 0; j < TEAR_BLOCK / 8; j++)
		CHECK_U64_EQ(rword(&f, TEAR_OFF + 8 * (size_t)j),
			     tear_pattern(s.nwrites));
	conn_close(&s.rc);
	conn_close(&s.wc);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: errors — rule 5: a failing WR completes with an error even when
 * unsignalled, later WRs flush, nothing is written, nothing crashes, and
 * a fresh QP on the same CQ works.                                     */

enum { RK_OK, RK_PAST, RK_STRADDLE, RK_HUGE, RK_WRAP, RK_BELOW, RK_MISALIGN };
enum { KK_OK, KK_RKEY, KK_LKEY, KK_UNREG, KK_LSTRADDLE };

#define ERR_ANY (-1)		/* any error status */
#define ERR_TARGET 512		/* region offset of in-bounds bad WRs */

struct err_spec {
	const char *what;
	uint8_t opcode, rk, kk;
	int expect;
};

static const struct err_spec err_specs[] = {
	{ "WRITE past the end", SMART_TP_WRITE, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ past the end", SMART_TP_READ, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "CAS past the end", SMART_TP_CAS, RK_PAST, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE straddling the end", SMART_TP_WRITE, RK_STRADDLE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ straddling the end", SMART_TP_READ, RK_STRADDLE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE at a huge offset", SMART_TP_WRITE, RK_HUGE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "FAA at a huge offset", SMART_TP_FAA, RK_HUGE, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE wrapping the address space", SMART_TP_WRITE, RK_WRAP, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ below the region", SMART_TP_READ, RK_BELOW, KK_OK,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE with a wrong rkey", SMART_TP_WRITE, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "READ with a wrong rkey", SMART_TP_READ, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "CAS with a wrong rkey", SMART_TP_CAS, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "FAA with a wrong rkey", SMART_TP_FAA, RK_OK, KK_RKEY,
	  SMART_TP_WC_REM_ACCESS },
	{ "WRITE from an unregistered buffer", SMART_TP_WRITE, RK_OK,
	  KK_UNREG, SMART_TP_WC_LOC_PROT },
	{ "READ into an unregistered buffer", SMART_TP_READ, RK_OK, KK_UNREG,
	  SMART_TP_WC_LOC_PROT },
	{ "FAA into an unregistered buffer", SMART_TP_FAA, RK_OK, KK_UNREG,
	  SMART_TP_WC_LOC_PROT },
	{ "WRITE with a wrong lkey", SMART_TP_WRITE, RK_OK, KK_LKEY,
	  SMART_TP_WC_LOC_PROT },
	{ "READ with a wrong lkey", SMART_TP_READ, RK_OK, KK_LKEY,
	  SMART_TP_WC_LOC_PROT },
	{ "READ straddling the end of the local MR", SMART_TP_READ, RK_OK,
	  KK_LSTRADDLE, SMART_TP_WC_LOC_PROT },
};

/* The bad WR of a spec; unreg is a 64-byte buffer outside every MR. */
static struct smart_tp_wr err_wr(const struct fx *f, const struct err_spec *e,
				 uint8_t *unreg, uint8_t flags)
{
	int atomic = e->opcode == SMART_TP_CAS || e->opcode == SMART_TP_FAA;
	uint32_t len = atomic ? 8 : 16;
	uint64_t off = ERR_TARGET;
	struct smart_tp_wr w;

	switch (e->rk) {
	case RK_PAST: off = f->t.rlen; break;
	case RK_STRADDLE: off = f->t.rlen - 8; break;
	case RK_HUGE: off = UINT64_C(1) << 60; break;
	case RK_MISALIGN: off = ERR_TARGET + 4; break;
	}
	w = wr_atomic(&f->t, e->opcode, 2, off, (uint64_t *)(f->laddr + 4096),
		      0, 0xbad, flags);
	w.len = len;
	if (e->opcode == SMART_TP_FAA)
		w.compare_add = 0xbad;
	if (e->rk == RK_WRAP)
		w.remote = UINT64_MAX - 7;
	if (e->rk == RK_BELOW)
		w.remote = f->t.base - 64;
	if (e->kk == KK_RKEY)
		w.rkey = ~f->t.rkey;
	if (e->kk == KK_LKEY)
		w.lkey = ~f->t.lkey;
	if (e->kk == KK_UNREG)
		w.local = unreg;
	if (e->kk == KK_LSTRADDLE)
		w.local = f->laddr + f->lmr->len - 8;
	return w;
}

/* Post [good WRITE, bad, 4 good] then [2 good]: the bad one reports its
 * error, the other six flush; only the first good WRITE took effect. */
static void err_chain(struct fx *f, struct conn *c, const struct err_spec *e,
		      uint8_t *unreg, uint8_t flags, uint64_t canary)
{
	uint64_t *src = (uint64_t *)(f->laddr + 4096);
	struct smart_tp_wr w[6];
	struct smart_tp_wc wc[7];
	int i;

	memset(src, 0xee, 64);		/* what a wrong WRITE would write */
	src[8] = canary;
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 1, 0, &src[8], 8, 0);
	w[1] = err_wr(f, e, unreg, flags);
	w[2] = wr_make(&f->t, SMART_TP_WRITE, 3, 64, src, 8, 0);
	w[3] = wr_make(&f->t, SMART_TP_WRITE, 4, 128, src, 8, CONF_SIG);
	w[4] = wr_atomic(&f->t, SMART_TP_FAA, 5, 192, &src[9], 1, 0, 0);
	w[5] = wr_make(&f->t, SMART_TP_READ, 6, 0, &src[10], 8, CONF_SIG);
	CHECK_OK(f->ops->post(c->qp, w, 6));
	wait_wcs(f->ops, c->cq, wc, 5);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK_MSG(wc[0].status != SMART_TP_WC_OK &&
		  wc[0].status != SMART_TP_WC_FLUSH &&
		  (e->expect == ERR_ANY || wc[0].status == e->expect),
		  "bad WR completed with %s, expected %s",
		  wc_name(wc[0].status),
		  e->expect == ERR_ANY ? "an error" : wc_name(e->expect));
	for (i = 1; i < 5; i++)
		CHECK_WC(wc[i], 2 + i, SMART_TP_WC_FLUSH);
	CHECK_EQ(f->ops->qp_in_error(c->qp), 1);

	/* A QP in error accepts WRs and flushes each, signalled or not. */
	w[0] = wr_make(&f->t, SMART_TP_WRITE, 7, 256, src, 8, 0);
	w[1] = wr_atomic(&f->t, SMART_TP_CAS, 8, 320, &src[9], 0, 1, CONF_SIG);
	CHECK_OK(f->ops->post(c->qp, w, 2));
	wait_wcs(f->ops, c->cq, wc, 2);
	CHECK_WC(wc[0], 7, SMART_TP_WC_FLUSH);
	CHECK_WC(wc[1], 8, SMART_TP_WC_FLUSH);
	expect_quiet(f->ops, c->cq);
	CHECK_EQ(f->ops->qp_in_error(c->qp), 1);
}

static void err_run(struct fx *f, struct smart_tp_cq *cq,
		    const struct err_spec *e, uint8_t flags, uint64_t canary)
{
	uint8_t *snap = malloc(f->t.rlen), *unreg = malloc(64), back[64];
	struct conn c;
	uint64_t *loc = (uint64_t *)(f->laddr + 8192);

	CHECK(snap && unreg);
	printf("   %s, %s\n", e->what, flags ? "signalled" : "unsignalled");
	fflush(stdout);
	memset(unreg, 0x77, 64);
	memcpy(back, unreg, 64);
	conn_open(f, cq, 0, 16, 0, &c);
	memcpy(snap, f->raddr, f->t.rlen);
	memcpy(snap, &canary, 8);	/* the WRITE before the bad one */
	err_chain(f, &c, e, unreg, flags, canary);
	/* An atomic whose local result buffer is bad may have executed at
	 * the responder before the requester fails to store the old value:
	 * that is verbs semantics (the local SGE is written by the response),
	 * so its target word alone may change. */
	if (e->kk == KK_UNREG && (e->opcode == SMART_TP_CAS ||
				  e->opcode == SMART_TP_FAA))
		memcpy(snap + ERR_TARGET, f->raddr + ERR_TARGET, 8);
	CHECK_MEM_EQ(f->raddr, snap, f->t.rlen,
		     "region after a failed chain (only word 0 may change)");
	CHECK_MEM_EQ(unreg, back, 64, "unregistered buffer was written");
	conn_close(&c);

	/* A fresh QP on the same CQ and domain works. */
	conn_open(f, cq, 0, 16, 0, &c);
	loc[0] = canary + 1;
	run1(&c, wr_make(&f->t, SMART_TP_WRITE, 9, 64, loc, 8, 0));
	run1(&c, wr_make(&f->t, SMART_TP_READ, 10, 64, &loc[1], 8, 0));
	CHECK_U64_EQ(loc[1], canary + 1);
	rword_set(f, 64, 0);
	conn_close(&c);
	free(unreg);
	free(snap);
}

static void case_errors(const struct smart_conf_env *env)
{
	struct smart_tp_cq *cq;
	struct fx f;
	size_t i;

	fx_open(&f, env);
	CHECK_OK(f.ops->cq_create(f.idom, 64, 0, &cq));
	for (i = 0; i < SMART_ARRAY_SIZE(err_specs); i++) {
		err_run(&f, cq, &err_specs[i], CONF_SIG, 2 * i + 1);
		err_run(&f, cq, &err_specs[i], 0, 2 * i + 2);
	}
	f.ops->cq_destroy(cq);
	fx_close(&f);
}

/* A malformed opcode: either post() refuses it with SMART_EINVAL and
 * nothing posted (the QP stays usable), or it completes with BAD_WR and
 * the QP enters the error state.  Either way no crash, nothing written. */
/* One malformed WR: post may refuse it (SMART_EINVAL, nothing posted, the
 * QP still works) or accept it and complete it with BAD_WR; either way the
 * region is untouched. */
static void malformed_one(struct fx *f, struct smart_tp_wr w, const char *what)
{
	struct smart_tp_wc wc;
	struct conn c;
	int rc;

	conn_open(f, NULL, 16, 8, 0, &c);
	rc = f->ops->post(c.qp, &w, 1);
	if (rc == SMART_EINVAL) {
		printf("   %s: post refused it\n", what);
		CHECK_EQ(f->ops->qp_in_error(c.qp), 0);
		expect_quiet(f->ops, c.cq);
		run1(&c, wr_make(&f->t, SMART_TP_READ, 2, 0, f->laddr + 64, 8,
				 0));
	} else {
		CHECK_OK(rc);
		printf("   %s: error completion\n", what);
		wait_wcs(f->ops, c.cq, &wc, 1);
		CHECK_WC(wc, 1, SMART_TP_WC_BAD_WR);
		CHECK_EQ(f->ops->qp_in_error(c.qp), 1);
	}
	CHECK_U64_EQ(rword(f, ERR_TARGET), 0);
	conn_close(&c);
}

static void case_error_bad_opcode(const struct smart_conf_env *env)
{
	static const uint8_t bad[] = { 0, 5, 99, 255 };
	struct smart_tp_wr w;
	char what[64];
	struct fx f;
	size_t i;

	fx_open(&f, env);
	memset(f.laddr, 0xee, 64);
	for (i = 0; i < sizeof(bad); i++) {
		w = wr_make(&f.t, SMART_TP_WRITE, 1, ERR_TARGET, f.laddr, 16,
			    0);
		w.opcode = bad[i];
		snprintf(what, sizeof(what), "opcode %u", bad[i]);
		malformed_one(&f, w, what);
	}
	/* Atomics on a misaligned word. */
	malformed_one(&f, wr_atomic(&f.t, SMART_TP_CAS, 1, ERR_TARGET + 4,
				    (uint64_t *)(f.laddr + 128), 0, 1, 0),
		      "CAS on a misaligned address");
	malformed_one(&f, wr_atomic(&f.t, SMART_TP_FAA, 1, ERR_TARGET + 4,
				    (uint64_t *)(f.laddr + 128), 1, 0, 0),
		      "FAA on a misaligned address");
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: eagain — a post that does not fit is refused whole            */

#define EAG_MAX_WR 16
#define EAG_FILL_OFF 16384	/* fill WR k writes k+1 to word k here */

static struct smart_tp_wr eag_wr(struct fx *f, uint64_t k, uint8_t flags)
{
	uint64_t *src = (uint64_t *)f->laddr + k;

	*src = k + 1;
	return wr_make(&f->t, SMART_TP_WRITE, k, EAG_FILL_OFF + 8 * k, src, 8,
		       flags);
}

/* Post signalled singles without polling until the queue is full. */
static int eag_fill(struct fx *f, struct conn *c)
{
	struct smart_tp_wr w;
	int k, rc;

	for (k = 0;; k++) {
		w = eag_wr(f, (uint64_t)k, CONF_SIG);
		rc = f->ops->post(c->qp, &w, 1);
		if (rc == SMART_EAGAIN)
			break;
		CHECK_OK(rc);
		CHECK_MSG(k < 256, "send queue of max_send_wr %d never filled "
			  "(only poll() may free room)",
			  EAG_MAX_WR);
	}
	return k;
}

static void case_eagain(const struct smart_conf_env *env)
{
	struct smart_tp_wr w[257];
	struct smart_tp_wc wc[256];
	struct fx f;
	struct conn c;
	int cap, i, k;

	fx_open(&f, env);
	conn_open(&f, NULL, 256, EAG_MAX_WR, 0, &c);
	cap = eag_fill(&f, &c);
	printf("   send queue took %d WRs (max_send_wr %d)\n", cap,
	       EAG_MAX_WR);
	CHECK_GE(cap, EAG_MAX_WR);
	w[0] = eag_wr(&f, (uint64_t)cap, CONF_SIG);
	w[1] = eag_wr(&f, (uint64_t)cap + 1, CONF_SIG);
	CHECK_EQ(f.ops->post(c.qp, w, 2), SMART_EAGAIN);

	/* Polling a completion makes room again.  How much is the
	 * transport's business (verbs frees a slot per completion handed
	 * out, shm every WR its poll executed), so only one WR is assumed. */
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], 0, SMART_TP_WC_OK);
	CHECK_OK(f.ops->post(c.qp, w, 1));
	wait_wcs(f.ops, c.cq, wc, cap);
	for (i = 0; i < cap; i++)
		CHECK_WC(wc[i], i + 1, SMART_TP_WC_OK);
	expect_quiet(f.ops, c.cq);
	for (k = 0; k <= cap + 1; k++)
		CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * (size_t)k),
			     k <= cap ? (uint64_t)k + 1 : 0);

	/* A chain longer than the whole queue is refused on an empty QP;
	 * unsignalled WRs hold their slots until a later completion is
	 * polled. */
	memset(f.raddr + EAG_FILL_OFF, 0, 8 * ((size_t)cap + 2));
	for (k = 0; k <= cap; k++)
		w[k] = eag_wr(&f, (uint64_t)k, 0);
	CHECK_EQ(f.ops->post(c.qp, w, cap + 1), SMART_EAGAIN);
	expect_quiet(f.ops, c.cq);
	w[cap - 1].flags = CONF_SIG;
	CHECK_OK(f.ops->post(c.qp, w, cap));
	CHECK_EQ(f.ops->post(c.qp, &w[cap], 1), SMART_EAGAIN);
	wait_wcs(f.ops, c.cq, wc, 1);
	CHECK_WC(wc[0], cap - 1, SMART_TP_WC_OK);
	run_chain(&c, w, cap);
	expect_quiet(f.ops, c.cq);
	CHECK_U64_EQ(rword(&f, EAG_FILL_OFF + 8 * (size_t)cap), 0);
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: shared_objects — one SMART_TP_SHARED QP and CQ, two threads    */

#define SH_THREADS 2
#define SH_DEPTH 8		/* chains in flight per thread */

struct sh_state {
	struct fx *f;
	struct conn c;
	uint32_t chains;	/* per thread */
	uint64_t *olds;		/* [thread][chain][2] in the local MR */
	atomic_uchar *seen;	/* [thread][chain] */
	atomic_int inflight[SH_THREADS];
	atomic_uint done;
};

struct sh_arg {
	struct sh_state *s;
	int me;
};

static void sh_reap(struct sh_state *s)
{
	struct smart_tp_wc wc[4];
	uint64_t t, j;
	int n, i;

	n = s->f->ops->poll(s->c.cq, wc, 4);
	CHECK_GE(n, 0);
	for (i = 0; i < n; i++) {
		CHECK_WC(wc[i], wc[i].wr_id, SMART_TP_WC_OK);
		t = wc[i].wr_id >> 32;
		j = wc[i].wr_id & 0xffffffffu;
		CHECK_MSG(t < SH_THREADS && j < s->chains,
			  "bad wr_id 0x%" PRIx64, wc[i].wr_id);
		CHECK_MSG(!atomic_exchange(&s->seen[t * s->chains + j], 1),
			  "wr_id 0x%" PRIx64 " completed twice", wc[i].wr_id);
		atomic_fetch_sub(&s->inflight[t], 1);
		atomic_fetch_add(&s->done, 1);
	}
}

static void *sh_thread(void *arg)
{
	struct sh_arg *a = arg;
	struct sh_state *s = a->s;
	uint64_t deadline = now_ns() + 3 * CONF_WAIT_NS, id;
	uint64_t *o = s->olds + (size_t)a->me * s->chains * 2;
	struct smart_tp_wr w[2];
	uint32_t posted = 0;

	while (atomic_load(&s->done) < SH_THREADS * s->chains) {
		if (posted < s->chains &&
		    atomic_load(&s->inflight[a->me]) < SH_DEPTH) {
			id = (uint64_t)a->me << 32 | posted;
			w[0] = wr_atomic(&s->f->t, SMART_TP_FAA, ~0ull, 0,
					 &o[2 * posted], 1, 0, 0);
			w[1] = wr_atomic(&s->f->t, SMART_TP_FAA, id, 0,
					 &o[2 * posted + 1], 1, 0, CONF_SIG);
			atomic_fetch_add(&s->inflight[a->me], 1);
			CHECK_OK(s->f->ops->post(s->c.qp, w, 2));
			posted++;
		}
		sh_reap(s);
		CHECK_MSG(now_ns() < deadline, "shared QP/CQ stuck");
	}
	return NULL;
}

static void case_shared_objects(const struct smart_conf_env *env)
{
	struct sh_arg args[SH_THREADS];
	pthread_t th[SH_THREADS];
	struct sh_state s;
	struct fx f;
	uint64_t *all, n;
	size_t i;

	fx_open(&f, env);
	memset(&s, 0, sizeof(s));
	s.f = &f;
	s.chains = scaled(env, 8000);
	n = (uint64_t)SH_THREADS * s.chains;
	CHECK_LE(n * 16, CONF_LOCAL_LEN);
	s.olds = (uint64_t *)f.laddr;
	s.seen = calloc(n, 1);
	all = calloc(2 * n, sizeof(*all));
	CHECK(s.seen && all);
	conn_open(&f, NULL, 64, 2 * SH_THREADS * SH_DEPTH, SMART_TP_SHARED,
		  &s.c);
	for (i = 0; i < SH_THREADS; i++) {
		args[i] = (struct sh_arg){ &s, (int)i };
		CHECK_EQ(pthread_create(&th[i], NULL, sh_thread, &args[i]), 0);
	}
	for (i = 0; i < SH_THREADS; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	expect_quiet(f.ops, s.c.cq);
	/* A chain is posted whole: its two FAAs are adjacent in QP order. */
	for (i = 0; i < n; i++)
		CHECK_MSG(s.olds[2 * i + 1] == s.olds[2 * i] + 1,
			  "chain %zu interleaved: olds %" PRIu64 ", %" PRIu64,
			  i, s.olds[2 * i], s.olds[2 * i + 1]);
	memcpy(all, s.olds, 2 * n * sizeof(*all));
	qsort(all, 2 * n, sizeof(*all), cmp_u64);
	for (i = 0; i < 2 * n; i++)
		CHECK_MSG(all[i] == i, "FAA %zu saw old value %" PRIu64
			  " (lost or doubled update)", i, all[i]);
	CHECK_U64_EQ(rword(&f, 0), 2 * n);
	printf("   %d threads x %u chains of 2 FAA on one shared QP and CQ\n",
	       SH_THREADS, s.chains);
	conn_close(&s.c);
	free(all);
	free(s.seen);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* Case: one_sided_sigstop — rule 6: the data path needs no blade CPU.
 * A forked child is the blade (responder domain, region, accept); it
 * stops itself with SIGSTOP and the parent's READ/WRITE/CAS/FAA still
 * complete.  After SIGCONT the child checks its region.               */

#define STOP_IMG 2048		/* region prefix the child verifies */
#define STOP_CAS 1024		/* CAS counter word */
#define STOP_FAA 1032		/* FAA counter word */

static void blade_child(const struct smart_conf_env *env, int s)
{
	const struct smart_tp_ops *ops = env->ops;
	struct smart_tp_domain *d;
	struct smart_tp_mr *r;
	struct smart_tp_responder *resp;
	uint8_t b[SMART_TP_BLOB_MAX], cb[SMART_TP_BLOB_MAX], img[STOP_IMG];
	size_t bl = sizeof(b), cl;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CHECK_OK(dom_open(env, 1, &d));
	CHECK_OK(ops->mr_alloc(d, CONF_REGION_LEN, -1, 1, &r));
	CHECK_OK(ops->region_blob(d, r, b, &bl));
	msg_send(s, b, bl, r->fd);
	cl = msg_recv(s, cb, sizeof(cb), NULL);
	bl = sizeof(b);
	CHECK_OK(ops->accept(d, r, cb, cl, b, &bl, &resp));
	msg_send(s, b, bl, -1);
	raise(SIGSTOP);
	CHECK_EQ(msg_recv(s, img, sizeof(img), NULL), sizeof(img));
	CHECK_MEM_EQ(r->addr, img, sizeof(img),
		     "blade region after the client's ops");
	ops->responder_destroy(resp);
	ops->mr_free(d, r);
	ops->domain_close(d);
	fflush(stdout);
	_exit(0);
}

/* The client side of the handshake with the blade child: a domain
 * attached to the child's region and one connected QP. */
static void stop_client_open(const struct smart_conf_env *env, int s,
			     struct fx *f, struct conn *c)
{
	const struct smart_tp_ops *ops = env->ops;
	struct smart_tp_qp_attr attr = { .max_send_wr = 16 };
	uint8_t b[SMART_TP_BLOB_MAX];
	size_t bl;
	int fd;

	memset(f, 0, sizeof(*f));
	f->env = env;
	f->ops = ops;
	f->blob_len = msg_recv(s, f->blob, sizeof(f->blob), &fd);
	CHECK_OK(dom_open(env, 0, &f->idom));
	CHECK_OK(ops->remote_attach(f->idom, f->blob, f->blob_len, fd,
				    &f->remote));
	CHECK_OK(ops->mr_alloc(f->idom, CONF_LOCAL_LEN, -1, 0, &f->lmr));
	f->t = (struct conf_target){ ops->remote_base(f->remote),
				     ops->remote_rkey(f->remote),
				     f->lmr->lkey, CONF_REGION_LEN };
	f->laddr = f->lmr->addr;
	*c = (struct conn){ .ops = ops, .own_cq = 1 };
	CHECK_OK(ops->cq_create(f->idom, 32, 0, &c->cq));
	CHECK_OK(ops->qp_create(f->idom, c->cq, &attr, &c->qp));
	bl = sizeof(b);
	CHECK_OK(ops->qp_blob(c->qp, b, &bl));
	msg_send(s, b, bl, -1);
	bl = msg_recv(s, b, sizeof(b), NULL);
	CHECK_OK(ops->qp_connect(c->qp, f->remote, b, bl));
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	CHECK_MSG(fp != NULL, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	p = strrchr(buf, ')');
	CHECK(p && p[1] == ' ');
	return p[2];
}

/* Ops against the stopped blade; img gets what its region must hold. */
static void stop_ops(struct fx *f, struct conn *c, uint8_t *img)
{
	uint8_t *src = f->laddr, *dst = f->laddr + 8192;
	uint64_t *old = (uint64_t *)(f->laddr + 16384), rng = 7;
	uint64_t i, rounds = 500;

	memset(img, 0, STOP_IMG);
	for (i = 0; i < rounds; i++) {
		rng_fill(&rng, src, STOP_CAS);
		run1(c, wr_make(&f->t, SMART_TP_WRITE, 1, 0, src, STOP_CAS, 0));
		run1(c, wr_make(&f->t, SMART_TP_READ, 2, 0, dst, STOP_CAS, 0));
		CHECK_MEM_EQ(dst, src, STOP_CAS, "READ from a stopped blade");
		run1(c, wr_atomic(&f->t, SMART_TP_CAS, 3, STOP_CAS, old, i,
				  i + 1, 0));
		CHECK_U64_EQ(*old, i);
		run1(c, wr_atomic(&f->t, SMART_TP_FAA, 4, STOP_FAA, old, 3, 0,
				  0));
		CHECK_U64_EQ(*old, 3 * i);
	}
	memcpy(img, src, STOP_CAS);
	memcpy(img + STOP_CAS, &rounds, 8);
	i = 3 * rounds;
	memcpy(img + STOP_FAA, &i, 8);
}

static void case_one_sided_sigstop(const struct smart_conf_env *env)
{
	uint8_t img[STOP_IMG];
	struct fx f;
	struct conn c;
	int sv[2], st;
	pid_t pid;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	fflush(stdout);
	pid = fork();
	CHECK_GE(pid, 0);
	if (!pid) {
		close(sv[0]);
		blade_child(env, sv[1]);
	}
	close(sv[1]);
	stop_client_open(env, sv[0], &f, &c);
	CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
	CHECK_MSG(WIFSTOPPED(st), "blade child did not stop (status 0x%x)",
		  st);
	CHECK_EQ(proc_state(pid), 'T');
	stop_ops(&f, &c, img);
	CHECK_EQ(proc_state(pid), 'T');
	printf("   blade pid %d stopped throughout 500 rounds of "
	       "WRITE/READ/CAS/FAA\n", (int)pid);
	CHECK_EQ(kill(pid, SIGCONT), 0);
	msg_send(sv[0], img, sizeof(img), -1);
	check_child_ok(pid, "blade child");
	close(sv[0]);
	conn_close(&c);
	f.ops->mr_free(f.idom, f.lmr);
	f.ops->remote_detach(f.remote);
	f.ops->domain_close(f.idom);
}

/* ------------------------------------------------------------------ */
/* Case: poll_small_max — poll(max) hands out ready completions over
 * several calls, in order, never more than max, none lost.           */

#define PS_N 40
#define PS_WC 16

static void case_poll_small_max(const struct smart_conf_env *env)
{
	static const int maxes[] = { 1, 2, 3, 5, 7 };
	struct smart_tp_wr w[PS_N];
	struct smart_tp_wc wc[PS_WC];
	uint64_t deadline, *loc;
	int round, got, r, i, mx, calls;
	struct fx f;
	struct conn c;

	fx_open(&f, env);
	conn_open(&f, NULL, 64, 64, 0, &c);
	loc = (uint64_t *)f.laddr;
	for (round = 0; round < 2; round++) {
		for (i = 0; i < PS_N; i++)
			w[i] = wr_atomic(&f.t, i & 1 ? SMART_TP_FAA :
					 SMART_TP_READ, 500 + i, 8, &loc[i],
					 1, 0, CONF_SIG);
		CHECK_OK(f.ops->post(c.qp, w, PS_N));
		deadline = now_ns() + CONF_WAIT_NS;
		for (got = 0, calls = 0; got < PS_N; calls++) {
			mx = maxes[calls % 5];
			for (i = 0; i < PS_WC; i++)
				wc[i] = (struct smart_tp_wc){ .wr_id = 0xdead,
							      .status = 99 };
			r = f.ops->poll(c.cq, wc, mx);
			CHECK_GE(r, 0);
			CHECK_LE(r, mx);
			for (i = 0; i < r; i++)
				CHECK_WC(wc[i], 500 + got + i, SMART_TP_WC_OK);
			for (i = r; i < PS_WC; i++)
				CHECK_MSG(wc[i].wr_id == 0xdead &&
					  wc[i].status == 99,
					  "poll wrote wc[%d] beyond its "
					  "return %d", i, r);
			got += r;
			CHECK_MSG(got >= PS_N || now_ns() < deadline,
				  "only %d of %d completions", got, PS_N);
		}
		expect_quiet(f.ops, c.cq);
		CHECK_U64_EQ(rword(&f, 8), (uint64_t)(round + 1) * PS_N / 2);
	}
	conn_close(&c);
	fx_close(&f);
}

/* ------------------------------------------------------------------ */
/* The runner                                                          */

enum { NEEDS_FORK = 1 };

struct conf_case {
	const char *name;
	void (*fn)(const struct smart_conf_env *env);
	unsigned needs;
};

static const struct conf_case conf_cases[] = {
	{ "objects", case_objects, 0 },
	{ "rw_sizes", case_rw_sizes, 0 },
	{ "atomic_basic", case_atomic_basic, 0 },
	{ "signal_selective", case_signal_selective, 0 },
	{ "order_chain", case_order_chain, 0 },
	{ "order_long", case_order_long, 0 },
	{ "atomic_threads_w2", case_atomic_threads_w2, 0 },
	{ "atomic_threads_w4", case_atomic_threads_w4, 0 },
	{ "atomic_fork", case_atomic_fork, NEEDS_FORK },
	{ "tearing", case_tearing, 0 },
	{ "errors", case_errors, 0 },
	{ "error_bad_opcode", case_error_bad_opcode, 0 },
	{ "eagain", case_eagain, 0 },
	{ "shared_objects", case_shared_objects, 0 },
	{ "one_sided_sigstop", case_one_sided_sigstop, NEEDS_FORK },
	{ "poll_small_max", case_poll_small_max, 0 },
};

/* Run one case in a child process with a watchdog; 0 pass, 77 skip,
 * 1 fail. */
static int run_isolated(const struct smart_conf_env *env,
			const struct conf_case *c)
{
	unsigned timeout = env->case_timeout_s ? env->case_timeout_s : 60;
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fork: %s\n", strerror(errno));
		return 1;
	}
	if (!pid) {
		alarm(timeout);
		c->fn(env);
		fflush(stdout);
		exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "%s: killed by signal %d%s\n", c->name,
			WTERMSIG(st), WTERMSIG(st) == SIGALRM ?
			" (case watchdog: hung)" : "");
		return 1;
	}
	return WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 77 ?
		WEXITSTATUS(st) : 1;
}

/* Is the case listed in env->deviations (comma separated names)? */
static int is_known_deviation(const struct smart_conf_env *env,
			      const char *name)
{
	const char *p = env->deviations;
	size_t n = strlen(name);

	if (!(env->flags & SMART_CONF_ISOLATE))
		return 0;
	while (p && *p) {
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

int smart_conformance_run(const struct smart_conf_env *env,
			  const char *filter)
{
	int pass = 0, fail = 0, skip = 0, known = 0, rc;
	uint64_t t0;
	size_t i;

	if (!env || !env->ops) {
		fprintf(stderr, "conformance: no transport\n");
		return 1;
	}
	for (i = 0; i < SMART_ARRAY_SIZE(conf_cases); i++) {
		const struct conf_case *c = &conf_cases[i];

		if (filter && *filter && !strstr(c->name, filter))
			continue;
		if ((c->needs & NEEDS_FORK) &&
		    !(env->flags & SMART_CONF_FORK)) {
			printf("== %s: SKIP (needs SMART_CONF_FORK)\n",
			       c->name);
			skip++;
			continue;
		}
		printf("== %s\n", c->name);
		t0 = now_ns();
		if (env->flags & SMART_CONF_ISOLATE) {
			rc = run_isolated(env, c);
		} else {
			c->fn(env);
			rc = 0;
		}
		if (rc && rc != 77 && is_known_deviation(env, c->name)) {
			printf("   %s KNOWN DEVIATION of this device: %s\n",
			       c->name, env->deviation_why);
			known++;
			continue;
		}
		printf("   %s %s (%.2f s)\n", c->name, rc == 0 ? "ok" :
		       rc == 77 ? "skipped" : "FAILED",
		       (double)(now_ns() - t0) / 1e9);
		pass += rc == 0;
		skip += rc == 77;
		fail += rc != 0 && rc != 77;
	}
	printf("conformance (%s): %d passed, %d failed, %d skipped, %d known "
	       "deviations\n", env->ops->name, pass, fail, skip, known);
	fflush(stdout);
	if (fail || (!pass && !skip))
		return 1;
	return pass ? 0 : 77;
}
