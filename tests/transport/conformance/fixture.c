/*
 * The conformance suite's fixture and helpers: test data, seeds, opening a
 * responder and an initiator domain attached to one region, connected QPs,
 * WRs, bounded waits for completions, and the messages of the fork cases.
 *
 * Invariants: every wait is bounded (CONF_WAIT_NS, msg_recv's 10 s) so a
 * broken transport fails a check instead of hanging; a failed check exits
 * the case's process (harness/test.h), so nothing here cleans up after one.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "suite.h"
#include "util/sockio.h"

/* ------------------------------------------------------------------ */
/* Small helpers                                                      */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a tiny, well-distributed generator for test data. */
uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void rng_fill(uint64_t *s, void *buf, size_t len)
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

/* qsort() order of 64-bit words. */
int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The seed of a randomised case: a fixed base (SMART_CONF_SEED overrides
 * it) mixed with the case name, printed so a failure can be replayed. */
uint64_t case_seed(const char *name)
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

uint32_t scaled(const struct smart_conf_env *env, uint32_t n)
{
	uint64_t pct = env->scale_pct ? env->scale_pct : 100;
	uint64_t v = (uint64_t)n * pct / 100;

	return v ? (uint32_t)v : 1;
}

const char *wc_name(int s)
{
	static const char *const names[] = {
		"OK",	 "REM_ACCESS", "LOC_PROT", "BAD_WR",
		"FLUSH", "RETRY_EXC",  "FATAL",
	};

	return s >= 0 && s < 7 ? names[s] : "?";
}

/* ------------------------------------------------------------------ */
/* Fixture: a responder with one region, an initiator attached to it  */

int dom_open(const struct smart_conf_env *env, int blade_side,
	     struct smart_tp_domain **out)
{
	struct smart_tp_cfg cfg = { .gid_index = -1 };

	if (env->open_domain)
		return env->open_domain(env, blade_side, out);
	return env->ops->domain_open(
		!blade_side && env->client_cfg ? env->client_cfg : &cfg, out);
}

/* The descriptor remote_attach() takes ownership of. */
int attach_fd(const struct smart_tp_mr *region)
{
	int fd;

	if (region->fd < 0)
		return -1;
	fd = dup(region->fd);
	CHECK_MSG(fd >= 0, "dup: %s", strerror(errno));
	return fd;
}

void fx_open(struct fx *f, const struct smart_conf_env *env)
{
	CHECK_OK(fx_open_dm(f, env, 0));
}

int fx_open_dm(struct fx *f, const struct smart_conf_env *env, size_t dm_len)
{
	const struct smart_tp_ops *ops = env->ops;
	int rc;

	memset(f, 0, sizeof(*f));
	f->env = env;
	f->ops = ops;
	CHECK_OK(dom_open(env, 1, &f->rdom));
	CHECK_OK(ops->mr_alloc(f->rdom, CONF_REGION_LEN, -1, 1, &f->region));
	CHECK(f->region->addr != NULL);
	CHECK_GE(f->region->len, CONF_REGION_LEN);
	CHECK_U64_EQ(f->region->dm_len, 0);
	rc = dm_len ? ops->dm_attach(f->rdom, f->region, dm_len) : 0;
	if (rc) {
		CHECK_U64_EQ(f->region->dm_len, 0); /* no side effect */
		ops->mr_free(f->rdom, f->region);
		ops->domain_close(f->rdom);
		return rc;
	}
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
	f->dm.rlen = ops->remote_dm(f->remote, &f->dm.rkey);
	f->dm.lkey = f->lmr->lkey; /* base 0: addresses from 0 */
	return 0;
}

void fx_close(struct fx *f)
{
	f->ops->mr_free(f->idom, f->lmr);
	f->ops->remote_detach(f->remote);
	f->ops->domain_close(f->idom);
	f->ops->mr_free(f->rdom, f->region);
	f->ops->domain_close(f->rdom);
}

/* A connected QP on cq, or on a new CQ of the given depth when cq is NULL;
 * flags (SMART_TP_SHARED) apply to both. */
void conn_open(struct fx *f, struct smart_tp_cq *cq, uint32_t depth,
	       uint32_t max_send_wr, uint32_t flags, struct conn *c)
{
	const struct smart_tp_ops *ops = f->ops;
	struct smart_tp_qp_attr attr = {
		.max_send_wr = max_send_wr,
		.flags = flags,
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

void conn_close(struct conn *c)
{
	c->ops->qp_destroy(c->qp);
	if (c->resp)
		c->ops->responder_destroy(c->resp);
	if (c->own_cq)
		c->ops->cq_destroy(c->cq);
}

struct smart_tp_wr wr_make(const struct conf_target *t, uint8_t op, uint64_t id,
			   uint64_t off, void *local, uint32_t len,
			   uint8_t flags)
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

struct smart_tp_wr wr_atomic(const struct conf_target *t, uint8_t op,
			     uint64_t id, uint64_t off, uint64_t *local,
			     uint64_t cmp_add, uint64_t swap, uint8_t flags)
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

/* Collect exactly n completions into wc, in CQ order, each poll
 * offered room for up to room - got of them (room >= n: a poll may then
 * be offered more than n, and none past n may come). */
void wait_wcs_room(const struct smart_tp_ops *ops, struct smart_tp_cq *cq,
		   struct smart_tp_wc *wc, int n, int room)
{
	uint64_t deadline = now_ns() + CONF_WAIT_NS;
	int got = 0, r;

	while (got < n) {
		r = ops->poll(cq, wc + got, room - got);
		CHECK_GE(r, 0);
		CHECK_LE(r, n - got);
		got += r;
		if (!r && now_ns() >= deadline)
			wait_timeout(wc, got, n);
	}
}

/* Collect exactly n completions into wc, in CQ order. */
void wait_wcs(const struct smart_tp_ops *ops, struct smart_tp_cq *cq,
	      struct smart_tp_wc *wc, int n)
{
	wait_wcs_room(ops, cq, wc, n, n);
}

/* No completion shows up for a while.  Can only catch extra completions;
 * a correct transport never fails it whatever the timing. */
void expect_quiet(const struct smart_tp_ops *ops, struct smart_tp_cq *cq)
{
	uint64_t end = now_ns() + CONF_QUIET_NS;
	struct smart_tp_wc wc;
	int r;

	do {
		r = ops->poll(cq, &wc, 1);
		CHECK_GE(r, 0);
		CHECK_MSG(r == 0,
			  "unexpected completion wr_id %" PRIu64 " status %s",
			  wc.wr_id, wc_name(wc.status));
	} while (now_ns() < end);
}

/* Post a chain whose last WR is signalled; wait for its OK completion. */
void run_chain(struct conn *c, const struct smart_tp_wr *wrs, int n)
{
	struct smart_tp_wc wc;

	CHECK_OK(c->ops->post(c->qp, wrs, n));
	wait_wcs(c->ops, c->cq, &wc, 1);
	CHECK_WC(wc, wrs[n - 1].wr_id, SMART_TP_WC_OK);
	CHECK_EQ(wc.opcode, wrs[n - 1].opcode);
}

void run1(struct conn *c, struct smart_tp_wr w)
{
	w.flags |= CONF_SIG;
	run_chain(c, &w, 1);
}

uint64_t rword(const struct fx *f, size_t off)
{
	return __atomic_load_n((uint64_t *)(f->raddr + off), __ATOMIC_ACQUIRE);
}

void rword_set(const struct fx *f, size_t off, uint64_t v)
{
	__atomic_store_n((uint64_t *)(f->raddr + off), v, __ATOMIC_RELEASE);
}

/* First differing byte of two buffers, or -1. */
long first_diff(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Unix-socket messages (fork cases): one SEQPACKET message, optional fd */

void msg_send(int s, const void *buf, size_t len, int fd)
{
	/* blocking socket: MSG_DONTWAIT has nothing to wait for on a
	 * SEQPACKET pair with room */
	CHECK_MSG(smart__sock_send_some(s, buf, len, &fd, fd >= 0) ==
			  (ssize_t)len,
		  "sendmsg: %s", strerror(errno));
}

/* Receive one message (10 s timeout); *fd gets a passed descriptor or -1. */
size_t msg_recv(int s, void *buf, size_t cap, int *fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.b,
			    .msg_controllen = sizeof(u.b) };
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

pid_t fork_peer(int *s)
{
	int sv[2];
	pid_t pid;

	/* a plain fork (atomic_fork's peer uses this process's region and
	 * mappings): no thread can hold a lock here, as each case runs in a
	 * process of its own (run_isolated) and shm starts no thread */
	CHECK_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	fflush(stdout); /* or the child prints it again */
	pid = fork();
	CHECK_GE(pid, 0);
	close(sv[pid ? 1 : 0]);
	*s = sv[pid ? 0 : 1];
	return pid;
}

void check_child_ok(pid_t pid, const char *who)
{
	int st;

	CHECK_EQ(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st))
		TEST_FAIL("%s killed by signal %d", who, WTERMSIG(st));
	CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s exited with %d",
		  who, WEXITSTATUS(st));
}
