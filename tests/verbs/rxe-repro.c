/*
 * tests/verbs/rxe-repro.c - a standalone raw-libibverbs reproducer for
 * Soft-RoCE (rdma_rxe) under packet loss and reordering.
 *
 * Purpose: evidence, independent of the Smart library (this file uses
 * nothing but libibverbs), of whether rxe on a lossy, reordering wire
 * (netem loss + jitter) completes atomics without having written their
 * result, returns corrupt READ data, or exhausts its retries on
 * multi-packet READs.  One process opens two rxe devices (default rxe0
 * and rxe1), makes one RC QP on each and connects them by hand (RoCE v2,
 * path MTU 1024, timeout 14, retry_cnt 6, rnr_retry 7, 16 outstanding
 * reads/atomics).  Device A's QP posts everything; device B's QP only
 * responds, its memory region is the target.  Tests:
 *
 *   faa      rounds of the chain WRITE 8 B of r to word X (unsignaled),
 *            READ 8 B of X (unsignaled), FETCH_AND_ADD +1 on word C
 *            (signaled), up to 16 chains in flight.  Every FAA old value
 *            must be its round number (counted from C's value when the
 *            QPs were connected), every READ must return a value in
 *            [r, rounds), C must end at the number of rounds.
 *   rw       WRITE a 4096-byte pattern, READ it back (signaled), compare;
 *            16 chains in flight, each slot its own target area.
 *   bigread  one 65536-byte READ at a time (64 response packets),
 *            compared with the target.
 *
 * An error completion breaks the QP: the test drains every outstanding
 * work request, makes a fresh pair of QPs and goes on with the next
 * round (the rounds whose chain failed are not checked).  Every wait for
 * a completion has a deadline: 60 s without one is reported as "stuck".
 * One line per test: "name: N ops, M bad, K error completions".  Exit
 * status 0 when every check passed and no completion was an error, 1
 * when anything bad was seen, 2 on setup errors.
 *
 * Build and run (the host has no RDMA device; run it in the Soft-RoCE VM):
 *
 *   cc -O2 -Wall -Wextra -o /tmp/rxe-repro tests/verbs/rxe-repro.c -libverbs
 *   tests/vm/vm-run.sh --link -- bash tests/verbs/rxe-repro.sh
 *   SMART_VM_KERNEL_SUITE=bookworm-backports \
 *       tests/vm/vm-run.sh --link -- bash tests/verbs/rxe-repro.sh
 *
 * rxe-repro.sh runs it on the clean wire, then with netem
 * "loss 1% delay 10ms 5ms" on both NICs (SMART_VM_NETEM overrides).
 *
 * Found (TCG guest, default rounds and options, Debian 12 guest kernels
 * 6.1.0-56 and 6.12.95 from bookworm-backports; netem dropped ~1% of the
 * packets on each NIC):
 *
 *   clean link, both kernels: every test passes (faa 4000, rw 500,
 *   bigread 50 ops, 0 bad, 0 error completions).
 *
 *   lossy link, 6.1: faa 4000 ops, 301 bad (327 in an earlier run), 0 error
 *   completions: 301 FETCH_AND_ADDs completed with IBV_WC_SUCCESS while
 *   their result slot still held the poison 0xdeadbeefdeadbeef (e.g.
 *   rounds 8, 30, 45, 47, 59), never written later either; C still ended
 *   at 4000, so each atomic ran once at the responder but its result never
 *   reached the requester's memory.  The READs were fine.  rw and bigread
 *   passed (0 bad, 0 errors).
 *
 *   lossy link, 6.12: faa the same (263 successful FAAs with their slot
 *   still poison, C = 4000, 0 error completions).  rw 500 ops, 26-27 bad,
 *   764-780 error completions: a 4096-byte READ completed with
 *   IBV_WC_SUCCESS with only its first 1-3 of 4 response packets placed
 *   (e.g. round 2: first difference at offset 1024, 384 of 512 words still
 *   poison); right after each such READ the QP was found in ERR without
 *   any error completion of its own (the next WR is the first to report,
 *   as "Work Request Flushed Error"), no async event, the responder's QP
 *   still RTS.  About one QP pair in 20 rounds broke this way.
 *
 *   bigread, both kernels, lossy: 50 ops, 0 bad, 0 error completions, but
 *   ~3.6 s per 64 KiB READ (0.01 s on the clean link): retries did not run
 *   out with retry_cnt 6 (presumably because a retried READ that makes
 *   some progress starts its count again; not checked in the kernel
 *   source), they are just slow.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#define POISON	       0xdeadbeefdeadbeefULL
#define POISON_BYTE    0xee
#define STUCK_SECONDS  60
#define MAX_RECONNECTS 200
#define MAX_EXAMPLES   5
#define SQ_DEPTH       64
#define CQ_DEPTH       256
#define PORT	       1
#define ACCESS                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |                     \
	 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

enum { EXIT_OK = 0, EXIT_BAD = 1, EXIT_SETUP = 2 };

/* --- options ------------------------------------------------------------ */

static struct {
	const char *dev_a, *dev_b;
	int gid; /* -1: scan */
	int retry;
	long rounds;	   /* 0: each test's default */
	const char *tests; /* NULL: all */
} opt = { "rxe0", "rxe1", -1, 6, 0, NULL };

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [options]\n"
		"Raw-verbs reproducer: two rxe devices in one process, one RC QP on each,\n"
		"A posts, B's memory is the target.  Tests: faa, rw, bigread (all by default).\n"
		"  --test NAME    run only NAME (repeatable, or a comma-separated list)\n"
		"  --rounds N     rounds per test (defaults: faa 4000, rw 500, bigread 50)\n"
		"  --dev-a NAME   requester device (default rxe0)\n"
		"  --dev-b NAME   responder device (default rxe1)\n"
		"  --gid N        GID index on both devices (default: the first IPv4-mapped\n"
		"                 RoCE v2 entry of each)\n"
		"  --retry N      QP retry_cnt, 0..7 (default 6; rxe takes 7 as forever)\n"
		"  --help         this text\n"
		"Prints one line per test: \"name: N ops, M bad, K error completions\".\n"
		"Exit status: 0 all checks passed and no error completion, 1 something bad\n"
		"was seen (or a wait got stuck), 2 setup error.\n",
		prog);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* --- small helpers ------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *alloc_buf(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, len ? len : 8))
		return NULL;
	memset(p, 0, len);
	return p;
}

static void gid_str(const union ibv_gid *g, char *buf, size_t len)
{
	const uint8_t *r = g->raw;
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff };

	if (!memcmp(r, v4map, 12))
		snprintf(buf, len, "::ffff:%u.%u.%u.%u", r[12], r[13], r[14],
			 r[15]);
	else
		snprintf(buf, len,
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			 r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
			 r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
}

/* --- devices and QPs ---------------------------------------------------- */

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	int gid_index;
	union ibv_gid gid;
};

static struct side A, B;

static int is_v4_mapped(const union ibv_gid *g)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, v4map, 12);
}

static int open_side(struct side *s, const char *name, struct ibv_device **list)
{
	struct ibv_device **d;
	int i;

	s->name = name;
	for (d = list; *d; d++)
		if (!strcmp(ibv_get_device_name(*d), name))
			break;
	if (!*d) {
		fprintf(stderr, "setup: no RDMA device named %s\n", name);
		return -1;
	}
	s->ctx = ibv_open_device(*d);
	if (!s->ctx) {
		fprintf(stderr, "setup: ibv_open_device(%s): %s\n", name,
			strerror(errno));
		return -1;
	}
	if (ibv_query_device(s->ctx, &s->dattr)) {
		fprintf(stderr, "setup: ibv_query_device(%s) failed\n", name);
		return -1;
	}
	if (ibv_query_port(s->ctx, PORT, &s->pattr)) {
		fprintf(stderr, "setup: ibv_query_port(%s, %d) failed\n", name,
			PORT);
		return -1;
	}
	if (s->pattr.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "setup: %s port %d is not ACTIVE (state %d)\n",
			name, PORT, (int)s->pattr.state);
		return -1;
	}
	if (s->pattr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		fprintf(stderr, "setup: %s is not RoCE (link layer %d)\n", name,
			(int)s->pattr.link_layer);
		return -1;
	}
	if (s->dattr.atomic_cap == IBV_ATOMIC_NONE) {
		fprintf(stderr, "setup: %s has no atomics\n", name);
		return -1;
	}
	if (s->dattr.max_qp_rd_atom < 16 || s->dattr.max_qp_init_rd_atom < 16) {
		fprintf(stderr,
			"setup: %s allows only %d/%d outstanding reads, need 16\n",
			name, s->dattr.max_qp_rd_atom,
			s->dattr.max_qp_init_rd_atom);
		return -1;
	}
	s->gid_index = -1;
	if (opt.gid >= 0) {
		if (ibv_query_gid(s->ctx, PORT, opt.gid, &s->gid)) {
			fprintf(stderr, "setup: %s has no GID index %d\n", name,
				opt.gid);
			return -1;
		}
		s->gid_index = opt.gid;
	} else {
		for (i = 0; i < s->pattr.gid_tbl_len; i++) {
			struct ibv_gid_entry e;

			if (ibv_query_gid_ex(s->ctx, PORT, (uint32_t)i, &e, 0))
				continue;
			if (e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
			    is_v4_mapped(&e.gid)) {
				s->gid_index = i;
				s->gid = e.gid;
				break;
			}
		}
		if (s->gid_index < 0) {
			fprintf(stderr,
				"setup: %s has no IPv4-mapped RoCE v2 GID "
				"(is an IPv4 address on its netdev?); try --gid N\n",
				name);
			return -1;
		}
	}
	i = fcntl(s->ctx->async_fd, F_GETFL);
	if (i < 0 || fcntl(s->ctx->async_fd, F_SETFL, i | O_NONBLOCK) < 0) {
		fprintf(stderr, "setup: %s: async fd: %s\n", name,
			strerror(errno));
		return -1;
	}
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd) {
		fprintf(stderr, "setup: ibv_alloc_pd(%s) failed\n", name);
		return -1;
	}
	return 0;
}

struct conn {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_qp *qp_a, *qp_b;
	unsigned generation;
};

static struct ibv_qp *make_qp(struct side *s, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 0;
	ia.cap.max_send_wr = SQ_DEPTH;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(s->pd, &ia);
	if (!qp)
		fprintf(stderr, "setup: ibv_create_qp(%s): %s\n", s->name,
			strerror(errno));
	return qp;
}

static int to_rts(struct side *s, struct ibv_qp *qp, struct side *peer,
		  uint32_t peer_qpn, uint32_t my_psn, uint32_t peer_psn)
{
	struct ibv_qp_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = PORT;
	a.qp_access_flags = ACCESS;
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS);
	if (r) {
		fprintf(stderr, "setup: %s QP -> INIT: %s\n", s->name,
			strerror(r));
		return -1;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = peer_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.flow_label = 0;
	a.ah_attr.grh.traffic_class = 0;
	a.ah_attr.dlid = 0;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = PORT;
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER);
	if (r) {
		fprintf(stderr, "setup: %s QP -> RTR: %s\n", s->name,
			strerror(r));
		return -1;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = (uint8_t)opt.retry;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	r = ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC);
	if (r) {
		fprintf(stderr, "setup: %s QP -> RTS: %s\n", s->name,
			strerror(r));
		return -1;
	}
	return 0;
}

static void conn_drop_qps(struct conn *c)
{
	if (c->qp_a)
		ibv_destroy_qp(c->qp_a);
	if (c->qp_b)
		ibv_destroy_qp(c->qp_b);
	c->qp_a = c->qp_b = NULL;
}

/* A fresh pair of connected QPs (the CQs stay). */
static int conn_qps(struct conn *c)
{
	uint32_t psn_a, psn_b;

	conn_drop_qps(c);
	c->generation++;
	c->qp_a = make_qp(&A, c->cq_a);
	c->qp_b = make_qp(&B, c->cq_b);
	if (!c->qp_a || !c->qp_b)
		return -1;
	psn_a = (0x1000u + 0x3579u * c->generation) & 0xffffffu;
	psn_b = (0x8000u + 0x2468u * c->generation) & 0xffffffu;
	if (to_rts(&A, c->qp_a, &B, c->qp_b->qp_num, psn_a, psn_b) ||
	    to_rts(&B, c->qp_b, &A, c->qp_a->qp_num, psn_b, psn_a))
		return -1;
	return 0;
}

static int conn_open(struct conn *c)
{
	memset(c, 0, sizeof(*c));
	c->ch = ibv_create_comp_channel(A.ctx);
	if (!c->ch) {
		fprintf(stderr, "setup: ibv_create_comp_channel(%s) failed\n",
			A.name);
		return -1;
	}
	c->cq_a = ibv_create_cq(A.ctx, CQ_DEPTH, NULL, c->ch, 0);
	c->cq_b = ibv_create_cq(B.ctx, 16, NULL, NULL, 0);
	if (!c->cq_a || !c->cq_b) {
		fprintf(stderr, "setup: ibv_create_cq failed\n");
		return -1;
	}
	if (ibv_req_notify_cq(c->cq_a, 0)) {
		fprintf(stderr, "setup: ibv_req_notify_cq failed\n");
		return -1;
	}
	return conn_qps(c);
}

static void conn_close(struct conn *c)
{
	conn_drop_qps(c);
	if (c->cq_a)
		ibv_destroy_cq(c->cq_a);
	if (c->cq_b)
		ibv_destroy_cq(c->cq_b);
	if (c->ch)
		ibv_destroy_comp_channel(c->ch);
	memset(c, 0, sizeof(*c));
}

/*
 * Wait for completions on A's CQ: returns the number polled (> 0), 0 when
 * the deadline passed, -1 on an error of the verbs calls.
 */
static int wait_cq(struct conn *c, struct ibv_wc *wc, int n, double deadline)
{
	for (;;) {
		int k = ibv_poll_cq(c->cq_a, n, wc);
		struct pollfd pfd;
		struct ibv_cq *ecq;
		void *ectx;
		double left;
		int r;

		if (k != 0)
			return k < 0 ? -1 : k;
		left = deadline - now_s();
		if (left <= 0)
			return 0;
		pfd.fd = c->ch->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		r = poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0) {
			if (ibv_get_cq_event(c->ch, &ecq, &ectx))
				return -1;
			ibv_ack_cq_events(ecq, 1);
			if (ibv_req_notify_cq(c->cq_a, 0))
				return -1;
		}
	}
}

/* --- the round engine ---------------------------------------------------- */

struct stats {
	long ops;	    /* rounds posted */
	long bad;	    /* data checks that failed */
	long errors;	    /* error completions */
	long failed_rounds; /* rounds whose chain ended in an error */
	long reconnects;
	long async_events;
	long examples; /* bad examples printed */
	long by_status[IBV_WC_GENERAL_ERR + 2];
	int stuck;
	int setup_failed;
	int ended_broken; /* the last QP pair broke and was not replaced */
};

struct test;
typedef int (*post_fn)(struct test *t, struct conn *c, long round, int slot);
typedef void (*done_fn)(struct test *t, long round, int slot);

struct test {
	const char *name;
	long rounds;
	int depth;     /* chains in flight */
	int chain_len; /* WRs per chain; the last is signaled */
	post_fn post;
	done_fn done; /* the chain completed successfully */
	void (*connected)(struct test *t, long next_round);
	struct stats st;
	void *priv;
};

#define WRID(round, slot, kind)                                                \
	(((uint64_t)(round) << 16) | ((uint64_t)(slot) << 4) | (kind))
#define WR_ROUND(id) ((long)((id) >> 16))
#define WR_SLOT(id)  ((int)(((id) >> 4) & 0xfff))
#define WR_KIND(id)  ((int)((id)&0xf))

static void bad_example(struct test *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bad_example(struct test *t, const char *fmt, ...)
{
	va_list ap;

	if (t->st.examples++ >= MAX_EXAMPLES)
		return;
	printf("  %s: ", t->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static const char *qp_state_str(struct ibv_qp *qp)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS",
					     "SQD",   "SQE",  "ERR" };
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (!qp || ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return "?";
	return (unsigned)a.qp_state < 7 ? names[a.qp_state] : "?";
}

/* Print and count the async events both devices have queued. */
static void drain_async(struct test *t)
{
	struct side *sides[2] = { &A, &B };
	struct ibv_async_event ev;
	int i;

	for (i = 0; i < 2; i++) {
		while (!ibv_get_async_event(sides[i]->ctx, &ev)) {
			if (t->st.async_events++ < 10)
				printf("  %s: async event on %s: %s\n", t->name,
				       sides[i]->name,
				       ibv_event_type_str(ev.event_type));
			ibv_ack_async_event(&ev);
		}
	}
}

static int post_one(struct conn *c, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *badwr = NULL;
	int r = ibv_post_send(c->qp_a, wr, &badwr);

	if (r)
		fprintf(stderr, "ibv_post_send: %s\n", strerror(r));
	return r;
}

static void run_rounds(struct test *t, struct conn *c)
{
	long *slot_round = calloc((size_t)t->depth, sizeof(long));
	long next = 0, last_done = -1;
	int inflight = 0, broken = 0, i;
	double deadline;
	struct ibv_wc wc[32];

	if (!slot_round) {
		t->st.setup_failed = 1;
		return;
	}
	for (i = 0; i < t->depth; i++)
		slot_round[i] = -1;
	if (t->connected)
		t->connected(t, 0);
	deadline = now_s() + STUCK_SECONDS;
	while (next < t->rounds || inflight > 0) {
		int k;

		while (!broken && next < t->rounds && inflight < t->depth) {
			int s;

			for (s = 0; s < t->depth && slot_round[s] >= 0; s++)
				;
			if (t->post(t, c, next, s)) {
				/* a refused post: treat like a broken QP */
				printf("  %s: round %ld: ibv_post_send refused the chain\n",
				       t->name, next);
				t->st.bad++;
				broken = 1;
				break;
			}
			slot_round[s] = next++;
			inflight++;
			t->st.ops++;
		}
		if (inflight == 0) {
			if (broken) {
				if (t->st.reconnects >= MAX_RECONNECTS) {
					printf("  %s: giving up after %ld reconnects\n",
					       t->name, t->st.reconnects);
					t->st.bad++;
					break;
				}
				drain_async(t);
				if (conn_qps(c)) {
					t->st.setup_failed = 1;
					break;
				}
				t->st.reconnects++;
				broken = 0;
				if (t->connected)
					t->connected(t, next);
			}
			continue;
		}
		k = wait_cq(c, wc, 32, deadline);
		if (k < 0) {
			fprintf(stderr, "%s: polling the CQ failed\n", t->name);
			t->st.setup_failed = 1;
			break;
		}
		if (k == 0) {
			printf("  %s: stuck: no completion for %d s with %d chains "
			       "in flight (next round %ld, QP generation %u)\n",
			       t->name, STUCK_SECONDS, inflight, next,
			       c->generation);
			t->st.stuck = 1;
			break;
		}
		deadline = now_s() + STUCK_SECONDS;
		for (i = 0; i < k; i++) {
			long round = WR_ROUND(wc[i].wr_id);
			int slot = WR_SLOT(wc[i].wr_id);
			int kind = WR_KIND(wc[i].wr_id);
			int last = kind == t->chain_len - 1;

			if (slot >= t->depth || slot_round[slot] != round) {
				bad_example(
					t,
					"completion for round %ld slot %d kind %d "
					"that is not in flight (status %s)",
					round, slot, kind,
					ibv_wc_status_str(wc[i].status));
				t->st.bad++;
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				int st = (int)wc[i].status;

				if (st < 0 || st > IBV_WC_GENERAL_ERR)
					st = IBV_WC_GENERAL_ERR + 1;
				t->st.by_status[st]++;
				t->st.errors++;
				if (!broken && t->st.reconnects < 5)
					printf("  %s: QP pair %u broke: first error "
					       "completion round %ld WR %d: %s (vendor_err "
					       "0x%x); QP states A %s, B %s\n",
					       t->name, c->generation, round,
					       kind,
					       ibv_wc_status_str(wc[i].status),
					       wc[i].vendor_err,
					       qp_state_str(c->qp_a),
					       qp_state_str(c->qp_b));
				if (!broken) {
					struct ibv_qp_attr a;

					/* make sure everything behind it is flushed */
					broken = 1;
					memset(&a, 0, sizeof(a));
					a.qp_state = IBV_QPS_ERR;
					ibv_modify_qp(c->qp_a, &a,
						      IBV_QP_STATE);
				}
				if (last) {
					t->st.failed_rounds++;
					slot_round[slot] = -1;
					inflight--;
					if (round <= last_done) {
						bad_example(
							t,
							"round %ld completed after round %ld",
							round, last_done);
						t->st.bad++;
					}
					last_done = round;
				}
				continue;
			}
			if (!last) {
				bad_example(
					t,
					"successful completion of unsignaled WR %d "
					"of round %ld",
					kind, round);
				t->st.bad++;
				continue;
			}
			if (round <= last_done) {
				bad_example(
					t,
					"round %ld completed after round %ld",
					round, last_done);
				t->st.bad++;
			}
			last_done = round;
			t->done(t, round, slot);
			slot_round[slot] = -1;
			inflight--;
		}
	}
	t->st.ended_broken = broken;
	drain_async(t);
	free(slot_round);
}

/* --- faa ---------------------------------------------------------------- */

struct faa {
	uint64_t *target; /* B: X at [0], C at [8] */
	struct ibv_mr *mr_b;
	uint64_t *local; /* A: faa[rounds], rd[rounds], src[depth] */
	struct ibv_mr *mr_a;
	uint64_t *faa, *rd, *src;
	uint64_t *expect;	 /* expected FAA old value per round */
	uint64_t *at_completion; /* the FAA slot when its completion came */
	unsigned char *ok;	 /* round completed successfully */
	uint64_t c_base;
	long r_base;
};

static void faa_connected(struct test *t, long next)
{
	struct faa *f = t->priv;

	f->c_base = __atomic_load_n(&f->target[8], __ATOMIC_SEQ_CST);
	f->r_base = next;
}

/* One WR of a chain with its one SGE: a READ, a WRITE or an FAA (+1) of
 * len bytes between local (lkey) and raddr (rkey), linked to next. */
static void wr_set(struct ibv_send_wr *wr, struct ibv_sge *sg, uint64_t id,
		   enum ibv_wr_opcode op, void *local, uint32_t len,
		   uint32_t lkey, uint64_t raddr, uint32_t rkey,
		   struct ibv_send_wr *next)
{
	memset(sg, 0, sizeof(*sg));
	memset(wr, 0, sizeof(*wr));
	sg->addr = (uintptr_t)local;
	sg->length = len;
	sg->lkey = lkey;
	wr->wr_id = id;
	wr->sg_list = sg;
	wr->num_sge = 1;
	wr->opcode = op;
	wr->next = next;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.compare_add = 1;
		wr->wr.atomic.rkey = rkey;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
	}
}

static int faa_post(struct test *t, struct conn *c, long r, int slot)
{
	struct faa *f = t->priv;
	struct ibv_sge sg[3];
	struct ibv_send_wr wr[3];
	uint64_t raddr = (uintptr_t)f->target;
	uint32_t lkey = f->mr_a->lkey, rkey = f->mr_b->rkey;

	f->faa[r] = POISON;
	f->rd[r] = POISON;
	f->src[slot] = (uint64_t)r;
	f->expect[r] = f->c_base + (uint64_t)(r - f->r_base);
	wr_set(&wr[0], &sg[0], WRID(r, slot, 0), IBV_WR_RDMA_WRITE,
	       &f->src[slot], 8, lkey, raddr, rkey, &wr[1]);
	wr_set(&wr[1], &sg[1], WRID(r, slot, 1), IBV_WR_RDMA_READ, &f->rd[r], 8,
	       lkey, raddr, rkey, &wr[2]);
	wr_set(&wr[2], &sg[2], WRID(r, slot, 2), IBV_WR_ATOMIC_FETCH_AND_ADD,
	       &f->faa[r], 8, lkey, raddr + 64, rkey, NULL);
	wr[2].send_flags = IBV_SEND_SIGNALED;
	return post_one(c, wr);
}

static void faa_done(struct test *t, long r, int slot)
{
	struct faa *f = t->priv;

	(void)slot;
	f->ok[r] = 1;
	f->at_completion[r] = __atomic_load_n(&f->faa[r], __ATOMIC_SEQ_CST);
}

static int faa_run(struct test *t, struct conn *c)
{
	struct faa f;
	size_t n = (size_t)t->rounds;
	long r, late = 0, rd_exact = 0, checked = 0;
	long faa_poison = 0, faa_wrong = 0, rd_poison = 0, rd_wrong = 0;
	uint64_t cfinal, cwant;

	memset(&f, 0, sizeof(f));
	f.target = alloc_buf(4096);
	f.local = alloc_buf((2 * n + (size_t)t->depth) * 8);
	f.expect = calloc(n, 8);
	f.at_completion = calloc(n, 8);
	f.ok = calloc(n, 1);
	if (!f.target || !f.local || !f.expect || !f.at_completion || !f.ok) {
		fprintf(stderr, "setup: out of memory\n");
		return -1;
	}
	f.faa = f.local;
	f.rd = f.local + n;
	f.src = f.local + 2 * n;
	f.mr_b = ibv_reg_mr(B.pd, f.target, 4096, ACCESS);
	f.mr_a = ibv_reg_mr(A.pd, f.local, (2 * n + (size_t)t->depth) * 8,
			    ACCESS);
	if (!f.mr_a || !f.mr_b) {
		fprintf(stderr, "setup: ibv_reg_mr: %s\n", strerror(errno));
		return -1;
	}
	t->priv = &f;
	run_rounds(t, c);

	for (r = 0; r < t->st.ops; r++) {
		uint64_t v = f.faa[r], d = f.rd[r];

		if (!f.ok[r])
			continue;
		checked++;
		if (v != f.at_completion[r])
			late++;
		if (v != f.expect[r]) {
			if (v == POISON)
				faa_poison++;
			else
				faa_wrong++;
			t->st.bad++;
			bad_example(t,
				    "round %ld: old value %" PRIu64
				    " (0x%" PRIx64 "), expected %" PRIu64 "%s",
				    r, v, v, f.expect[r],
				    v != f.at_completion[r] ?
					    " (changed after its completion)" :
					    "");
		}
		if (d < (uint64_t)r || d >= (uint64_t)t->rounds) {
			if (d == POISON)
				rd_poison++;
			else
				rd_wrong++;
			t->st.bad++;
			bad_example(t,
				    "round %ld: READ returned %" PRIu64
				    " (0x%" PRIx64 "), expected %ld..%ld",
				    r, d, d, r, t->rounds - 1);
		} else if (d == (uint64_t)r) {
			rd_exact++;
		}
	}
	cfinal = __atomic_load_n(&f.target[8], __ATOMIC_SEQ_CST);
	cwant = f.c_base + (uint64_t)(t->st.ops - f.r_base);
	if (t->st.failed_rounds == 0)
		cwant = (uint64_t)t->st.ops;
	if (t->st.stuck || t->st.setup_failed || t->st.ended_broken) {
		printf("  faa: final C = %" PRIu64
		       " not checked (the last QP pair "
		       "broke)\n",
		       cfinal);
	} else if (cfinal != cwant) {
		t->st.bad++;
		printf("  faa: final C = %" PRIu64 ", expected %" PRIu64 "\n",
		       cfinal, cwant);
	}
	printf("  faa: %ld rounds checked, final C = %" PRIu64 " (%ld posted); "
	       "FAA old values: %ld still poison, %ld other wrong, %ld changed "
	       "after their completion; READs: %ld still poison, %ld out of "
	       "range, %ld exactly their round\n",
	       checked, cfinal, t->st.ops, faa_poison, faa_wrong, late,
	       rd_poison, rd_wrong, rd_exact);

	ibv_dereg_mr(f.mr_a);
	ibv_dereg_mr(f.mr_b);
	free(f.target);
	free(f.local);
	free(f.expect);
	free(f.at_completion);
	free(f.ok);
	t->priv = NULL;
	return 0;
}

/* --- rw and bigread ----------------------------------------------------- */

struct rw {
	size_t len;
	int with_write;
	unsigned char *target; /* B: depth * len */
	unsigned char *local;  /* A: src depth*len, dst depth*len */
	struct ibv_mr *mr_a, *mr_b;
};

static uint64_t pattern_word(long round, size_t i)
{
	uint64_t x = ((uint64_t)round + 1) * 0x9e3779b97f4a7c15ULL ^
		     (uint64_t)i * 0xc2b2ae3d27d4eb4fULL;

	x ^= x >> 29;
	return x ^ ((uint64_t)round << 40) ^ i;
}

static void fill_pattern(unsigned char *p, size_t len, long round)
{
	size_t i;

	for (i = 0; i < len / 8; i++) {
		uint64_t w = pattern_word(round, i);

		memcpy(p + i * 8, &w, 8);
	}
}

static int rw_post(struct test *t, struct conn *c, long r, int slot)
{
	struct rw *w = t->priv;
	unsigned char *src = w->local + (size_t)slot * w->len;
	unsigned char *dst = w->local +
			     ((size_t)t->depth + (size_t)slot) * w->len;
	unsigned char *tgt = w->target + (size_t)slot * w->len;
	struct ibv_sge sg[2];
	struct ibv_send_wr wr[2], *rd;

	memset(dst, POISON_BYTE, w->len);
	if (w->with_write)
		fill_pattern(src, w->len, r);
	else /* no op in flight touches the target: write it here */
		fill_pattern(tgt, w->len, r);
	wr_set(&wr[0], &sg[0], WRID(r, slot, 0), IBV_WR_RDMA_WRITE, src,
	       (uint32_t)w->len, w->mr_a->lkey, (uintptr_t)tgt, w->mr_b->rkey,
	       &wr[1]);
	wr_set(&wr[1], &sg[1], WRID(r, slot, w->with_write ? 1 : 0),
	       IBV_WR_RDMA_READ, dst, (uint32_t)w->len, w->mr_a->lkey,
	       (uintptr_t)tgt, w->mr_b->rkey, NULL);
	wr[1].send_flags = IBV_SEND_SIGNALED;
	rd = w->with_write ? &wr[0] : &wr[1];
	return post_one(c, rd);
}

static void rw_done(struct test *t, long r, int slot)
{
	struct rw *w = t->priv;
	unsigned char *dst = w->local +
			     ((size_t)t->depth + (size_t)slot) * w->len;
	size_t i, first = w->len, ndiff = 0;

	for (i = 0; i < w->len / 8; i++) {
		uint64_t want = pattern_word(r, i), got;

		memcpy(&got, dst + i * 8, 8);
		if (got != want) {
			if (first == w->len)
				first = i * 8;
			ndiff++;
		}
	}
	if (ndiff) {
		uint64_t got, want = pattern_word(r, first / 8);

		memcpy(&got, dst + first, 8);
		t->st.bad++;
		bad_example(t,
			    "round %ld: first difference at offset %zu "
			    "(got 0x%016" PRIx64 ", want 0x%016" PRIx64 "), "
			    "%zu of %zu words differ",
			    r, first, got, want, ndiff, w->len / 8);
	}
}

static int rw_run(struct test *t, struct conn *c, size_t len, int with_write)
{
	struct rw w;
	size_t tlen = (size_t)t->depth * len, llen = 2 * tlen;

	memset(&w, 0, sizeof(w));
	w.len = len;
	w.with_write = with_write;
	w.target = alloc_buf(tlen);
	w.local = alloc_buf(llen);
	if (!w.target || !w.local) {
		fprintf(stderr, "setup: out of memory\n");
		return -1;
	}
	w.mr_b = ibv_reg_mr(B.pd, w.target, tlen, ACCESS);
	w.mr_a = ibv_reg_mr(A.pd, w.local, llen, ACCESS);
	if (!w.mr_a || !w.mr_b) {
		fprintf(stderr, "setup: ibv_reg_mr: %s\n", strerror(errno));
		return -1;
	}
	t->priv = &w;
	run_rounds(t, c);
	ibv_dereg_mr(w.mr_a);
	ibv_dereg_mr(w.mr_b);
	free(w.target);
	free(w.local);
	t->priv = NULL;
	return 0;
}

/* --- main --------------------------------------------------------------- */

enum { T_FAA, T_RW, T_BIGREAD, T_N };
static const char *const test_names[T_N] = { "faa", "rw", "bigread" };
static const long test_rounds[T_N] = { 4000, 500, 50 };

static int select_tests(const char *list, int *sel)
{
	char buf[256], *tok, *save = NULL;
	int i;

	if (strlen(list) >= sizeof(buf))
		return -1;
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < T_N; i++)
			if (!strcmp(tok, test_names[i]))
				break;
		if (i == T_N) {
			fprintf(stderr,
				"unknown test '%s' (faa, rw, bigread)\n", tok);
			return -1;
		}
		sel[i] = 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int sel[T_N] = { 0 }, any_sel = 0, i, rc = EXIT_OK, ndev = 0;
	struct ibv_device **list;
	char ga[64], gb[64];

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		long n;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout, argv[0]);
			return EXIT_OK;
		}
		if (!v) {
			fprintf(stderr,
				"%s: unknown option or missing value: %s\n",
				argv[0], a);
			usage(stderr, argv[0]);
			return EXIT_SETUP;
		}
		i++;
		if (!strcmp(a, "--test")) {
			if (select_tests(v, sel))
				return EXIT_SETUP;
			any_sel = 1;
		} else if (!strcmp(a, "--rounds")) {
			if (parse_long(v, 1, 1L << 30, &n)) {
				fprintf(stderr, "bad --rounds %s\n", v);
				return EXIT_SETUP;
			}
			opt.rounds = n;
		} else if (!strcmp(a, "--dev-a")) {
			opt.dev_a = v;
		} else if (!strcmp(a, "--dev-b")) {
			opt.dev_b = v;
		} else if (!strcmp(a, "--gid")) {
			if (parse_long(v, 0, 255, &n)) {
				fprintf(stderr, "bad --gid %s\n", v);
				return EXIT_SETUP;
			}
			opt.gid = (int)n;
		} else if (!strcmp(a, "--retry")) {
			if (parse_long(v, 0, 7, &n)) {
				fprintf(stderr, "bad --retry %s (0..7)\n", v);
				return EXIT_SETUP;
			}
			opt.retry = (int)n;
		} else {
			fprintf(stderr, "%s: unknown option %s\n", argv[0], a);
			usage(stderr, argv[0]);
			return EXIT_SETUP;
		}
	}
	if (!any_sel)
		for (i = 0; i < T_N; i++)
			sel[i] = 1;
	if (!strcmp(opt.dev_a, opt.dev_b)) {
		fprintf(stderr, "setup: --dev-a and --dev-b must differ\n");
		return EXIT_SETUP;
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0) {
		fprintf(stderr, "setup: no RDMA devices (%s)\n",
			list ? "the list is empty" : strerror(errno));
		return EXIT_SETUP;
	}
	if (open_side(&A, opt.dev_a, list) || open_side(&B, opt.dev_b, list)) {
		ibv_free_device_list(list);
		return EXIT_SETUP;
	}
	ibv_free_device_list(list);
	gid_str(&A.gid, ga, sizeof(ga));
	gid_str(&B.gid, gb, sizeof(gb));
	printf("rxe-repro: A %s gid[%d] %s -> B %s gid[%d] %s; mtu 1024, "
	       "timeout 14, retry_cnt %d, rnr_retry 7, rd_atomic 16\n",
	       A.name, A.gid_index, ga, B.name, B.gid_index, gb, opt.retry);
	if (!memcmp(&A.gid, &B.gid, sizeof(A.gid))) {
		fprintf(stderr, "setup: both devices have the same GID %s\n",
			ga);
		return EXIT_SETUP;
	}

	for (i = 0; i < T_N; i++) {
		struct test t;
		struct conn c;
		double t0;
		int r, s;

		if (!sel[i])
			continue;
		memset(&t, 0, sizeof(t));
		t.name = test_names[i];
		t.rounds = opt.rounds ? opt.rounds : test_rounds[i];
		if (conn_open(&c)) {
			conn_close(&c);
			return EXIT_SETUP;
		}
		t0 = now_s();
		switch (i) {
		case T_FAA:
			t.depth = 16;
			t.chain_len = 3;
			t.post = faa_post;
			t.done = faa_done;
			t.connected = faa_connected;
			r = faa_run(&t, &c);
			break;
		case T_RW:
			t.depth = 16;
			t.chain_len = 2;
			t.post = rw_post;
			t.done = rw_done;
			r = rw_run(&t, &c, 4096, 1);
			break;
		default:
			t.depth = 1;
			t.chain_len = 1;
			t.post = rw_post;
			t.done = rw_done;
			r = rw_run(&t, &c, 65536, 0);
			break;
		}
		conn_close(&c);
		if (r || t.st.setup_failed) {
			fprintf(stderr, "%s: setup failed\n", t.name);
			return EXIT_SETUP;
		}
		printf("%s: %ld ops, %ld bad, %ld error completions\n", t.name,
		       t.st.ops, t.st.bad, t.st.errors);
		if (t.st.errors || t.st.reconnects || t.st.failed_rounds ||
		    t.st.async_events) {
			printf("  %s: %ld rounds failed, %ld reconnects, %ld async "
			       "events; errors:",
			       t.name, t.st.failed_rounds, t.st.reconnects,
			       t.st.async_events);
			for (s = 0; s <= IBV_WC_GENERAL_ERR + 1; s++)
				if (t.st.by_status[s])
					printf(" %ld %s;", t.st.by_status[s],
					       s <= IBV_WC_GENERAL_ERR ?
						       ibv_wc_status_str(
							       (enum ibv_wc_status)
								       s) :
						       "unknown status");
			putchar('\n');
		}
		printf("  %s: %.1f s\n", t.name, now_s() - t0);
		if (t.st.bad || t.st.errors || t.st.stuck)
			rc = EXIT_BAD;
		if (t.st.stuck) {
			printf("rxe-repro: stuck; stopping\n");
			break;
		}
	}
	ibv_dealloc_pd(A.pd);
	ibv_dealloc_pd(B.pd);
	ibv_close_device(A.ctx);
	ibv_close_device(B.ctx);
	printf("rxe-repro: %s\n",
	       rc == EXIT_OK ? "all checks passed" : "FAILURES seen");
	return rc;
}
