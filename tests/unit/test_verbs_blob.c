/*
 * Unit tests of the verbs transport's connection blobs, no device needed:
 * the QP blob (version 4) round trip, its wire layout (LID in network
 * byte order, the longest message in 24 bits), the refusal of every malformed field (truncated, wrong
 * magic or version, bad link layer, GID type that does not fit, huge
 * depths, unknown flags), the peer check (link layer, RoCE version) and
 * the read/atomic depth negotiation; the region blob's refusals.  Also the
 * one piece of completion arithmetic that needs no device: how far a
 * completed ring slot moves a QP's head, late slots included; and post1's
 * refusals, which read nothing of a QP they refuse; and a shared CQ's
 * pollers taking turns, on a CQ whose device is a function of the test
 * (send and receive completions, plain and extended CQ).
 *
 * Built only with the verbs transport (CMake skips tests named *verbs*
 * without libibverbs).  Deterministic: the mutation sweep walks every
 * byte with fixed values.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "harness/test.h"
#include "transport/verbs/verbs.h"
#include "util/log.h"

static struct verbs_qp_info eth_info(void)
{
	struct verbs_qp_info in;
	int i;

	memset(&in, 0, sizeof(in));
	in.qpn = 0xabcdef;
	in.psn = 0x123456;
	in.lid = 0;
	in.mtu = IBV_MTU_1024;
	in.has_gid = 1;
	for (i = 0; i < 16; i++)
		in.gid[i] = (uint8_t)(0xa0 + i);
	in.link = VERBS_LINK_ETH;
	in.gid_type = VERBS_GID_ROCE_V2;
	in.resp_depth = 16;
	in.init_depth = 8;
	in.flags = VERBS_QPF_ATOMICS;
	return in; /* max_msg 0: a one-sided QP */
}

static struct verbs_qp_info ib_info(void)
{
	struct verbs_qp_info in;

	memset(&in, 0, sizeof(in));
	in.qpn = 0x17;
	in.psn = 0xffffff;
	in.lid = 0x1234;
	in.mtu = IBV_MTU_4096;
	in.link = VERBS_LINK_IB;
	in.gid_type = VERBS_GID_NONE;
	in.resp_depth = 4;
	in.init_depth = 16;
	in.max_msg = 0x023456; /* a receive queue's */
	return in;
}

static void check_same(const struct verbs_qp_info *a,
		       const struct verbs_qp_info *b)
{
	CHECK_EQ(a->qpn, b->qpn);
	CHECK_EQ(a->psn, b->psn);
	CHECK_EQ(a->lid, b->lid);
	CHECK_EQ(a->mtu, b->mtu);
	CHECK_EQ(a->has_gid, b->has_gid);
	CHECK(!memcmp(a->gid, b->gid, 16));
	CHECK_EQ(a->link, b->link);
	CHECK_EQ(a->gid_type, b->gid_type);
	CHECK_EQ(a->resp_depth, b->resp_depth);
	CHECK_EQ(a->init_depth, b->init_depth);
	CHECK_EQ(a->flags, b->flags);
	CHECK_EQ(a->max_msg, b->max_msg);
}

static void refused(const uint8_t *b, size_t len, const char *what)
{
	struct verbs_qp_info out;
	const char *why = NULL;

	CHECK_MSG(smart__verbs_info_unpack(b, len, &out, &why) == SMART_EPROTO,
		  "%s: accepted", what);
	CHECK_MSG(why && why[0], "%s: refused without a reason", what);
}

/* A valid Ethernet blob with byte i set to v. */
static void refused_with(size_t i, uint8_t v, const char *what)
{
	struct verbs_qp_info in = eth_info();
	uint8_t b[VERBS_QP_BLOB_LEN];

	smart__verbs_info_pack(&in, b);
	b[i] = v;
	refused(b, sizeof(b), what);
}

static void test_round_trip(void)
{
	struct verbs_qp_info in, out;
	uint8_t b[SMART_TP_BLOB_MAX];
	const char *why = NULL;
	int k;

	for (k = 0; k < 2; k++) {
		in = k ? ib_info() : eth_info();
		memset(b, 0xee, sizeof(b));
		CHECK_EQ(smart__verbs_info_pack(&in, b), VERBS_QP_BLOB_LEN);
		CHECK_EQ(b[VERBS_QP_BLOB_LEN], 0xee); /* nothing beyond */
		memset(&out, 0x55, sizeof(out));
		CHECK_OK(smart__verbs_info_unpack(b, VERBS_QP_BLOB_LEN, &out,
						  &why));
		check_same(&in, &out);
	}
	/* the IB LID goes in network byte order, at 16 */
	CHECK_EQ(b[16], 0x12);
	CHECK_EQ(b[17], 0x34);
	CHECK_EQ(b[4], VERBS_QP_BLOB_VERSION);
	CHECK_EQ(VERBS_QP_BLOB_VERSION, 4);
	/* the longest message, 24 bits little-endian at 41 */
	CHECK(b[41] == 0x56 && b[42] == 0x34 && b[43] == 0x02);
	CHECK(VERBS_QP_BLOB_LEN <= SMART_TP_BLOB_MAX);
}

static void test_refusals(void)
{
	struct verbs_qp_info in = eth_info(), out;
	uint8_t b[VERBS_QP_BLOB_LEN + 8];
	size_t len;

	smart__verbs_info_pack(&in, b);
	for (len = 0; len < VERBS_QP_BLOB_LEN; len++)
		refused(b, len, "truncated");
	refused(b, VERBS_QP_BLOB_LEN + 1, "too long");
	refused(NULL, VERBS_QP_BLOB_LEN, "NULL");
	CHECK_EQ(smart__verbs_info_unpack(b, 3, &out, NULL), SMART_EPROTO);

	refused_with(0, 0, "bad magic");
	refused_with(4, 3, "version 3 (the QP blob before this one)");
	refused_with(4, 5, "version 5");
	refused_with(11, 1, "QP number beyond 24 bits");
	refused_with(15, 1, "PSN beyond 24 bits");
	refused_with(18, 0, "MTU 0");
	refused_with(18, IBV_MTU_4096 + 1, "MTU beyond 4096");
	refused_with(19, 2, "has_gid 2");
	refused_with(19, 0, "Ethernet without a GID");
	refused_with(36, 0, "link layer 0");
	refused_with(36, 3, "link layer 3");
	refused_with(36, 0xff, "link layer 255");
	refused_with(37, VERBS_GID_NONE, "RoCE without a GID type");
	refused_with(37, VERBS_GID_IB, "RoCE with an IB GID");
	refused_with(37, 4, "GID type 4");
	refused_with(38, VERBS_MAX_RD_ATOM + 1, "responder depth 17");
	refused_with(38, 0xff, "responder depth 255");
	refused_with(39, VERBS_MAX_RD_ATOM + 1, "initiator depth 17");
	refused_with(39, 0xff, "initiator depth 255");
	refused_with(38, 0, "responder depth 0");
	refused_with(39, 0, "initiator depth 0");
	refused_with(40, 2, "unknown flag");
	refused_with(40, 0x80, "unknown flag");
	refused_with(43, 0x11, "a longest message beyond 1 MiB");
	refused_with(43, 0xff, "a longest message beyond 1 MiB");
	refused_with(17, 1, "a LID on Ethernet");
}

static void test_refusals_ib(void)
{
	struct verbs_qp_info in = ib_info();
	uint8_t b[VERBS_QP_BLOB_LEN];

	smart__verbs_info_pack(&in, b);
	b[16] = b[17] = 0;
	refused(b, sizeof(b), "IB without a LID");
	smart__verbs_info_pack(&in, b);
	b[16] = 0xc0;
	refused(b, sizeof(b), "IB with a multicast LID");
	smart__verbs_info_pack(&in, b);
	b[37] = VERBS_GID_ROCE_V2;
	refused(b, sizeof(b), "IB with a RoCE GID type");
	smart__verbs_info_pack(&in, b);
	b[37] = VERBS_GID_IB;
	refused(b, sizeof(b), "IB GID type without a GID");
	smart__verbs_info_pack(&in, b);
	b[25] = 1;
	refused(b, sizeof(b), "GID bytes without has_gid");
	/* with a GRH it is fine */
	in.has_gid = 1;
	in.gid[0] = 0xfe;
	in.gid_type = VERBS_GID_IB;
	smart__verbs_info_pack(&in, b);
	CHECK_OK(smart__verbs_info_unpack(b, sizeof(b), &in, NULL));
}

/* Every byte set to every value: unpack never crashes, and what it takes
 * packs back to the very same bytes (one encoding per meaning). */
static void test_mutations(void)
{
	struct verbs_qp_info in, out;
	uint8_t b[VERBS_QP_BLOB_LEN], again[VERBS_QP_BLOB_LEN];
	unsigned taken = 0;
	size_t i;
	int v, k;

	for (k = 0; k < 2; k++) {
		in = k ? ib_info() : eth_info();
		for (i = 0; i < VERBS_QP_BLOB_LEN; i++)
			for (v = 0; v < 256; v++) {
				smart__verbs_info_pack(&in, b);
				b[i] = (uint8_t)v;
				if (smart__verbs_info_unpack(b, sizeof(b), &out,
							     NULL))
					continue;
				taken++;
				smart__verbs_info_pack(&out, again);
				CHECK_MSG(!memcmp(b, again, sizeof(b)),
					  "byte %zu = %d: repacked differently",
					  i, v);
			}
	}
	CHECK_GT(taken, 0);
}

static void test_peer_check(void)
{
	struct smart_tp_domain *d = calloc(1, sizeof(*d));
	struct verbs_qp_info peer = eth_info();
	const char *why = NULL;

	CHECK(d);
	d->link_eth = 1;
	d->gid_type = VERBS_GID_ROCE_V2;
	CHECK_OK(smart__verbs_peer_check(d, &peer, &why));
	peer.gid_type = VERBS_GID_ROCE_V1;
	CHECK_EQ(smart__verbs_peer_check(d, &peer, &why), SMART_EPROTO);
	CHECK(why && strstr(why, "RoCE v1"));
	peer = ib_info();
	why = NULL;
	CHECK_EQ(smart__verbs_peer_check(d, &peer, &why), SMART_EPROTO);
	CHECK(why && strstr(why, "InfiniBand"));
	/* an IB end: LID routed or with a GRH, both fine; RoCE is not */
	d->link_eth = 0;
	d->gid_type = VERBS_GID_NONE;
	CHECK_OK(smart__verbs_peer_check(d, &peer, &why));
	peer.has_gid = 1;
	peer.gid_type = VERBS_GID_IB;
	CHECK_OK(smart__verbs_peer_check(d, &peer, &why));
	peer = eth_info();
	CHECK_EQ(smart__verbs_peer_check(d, &peer, &why), SMART_EPROTO);
	free(d);
}

static void test_depths(void)
{
	struct smart_tp_domain *d = calloc(1, sizeof(*d));
	struct verbs_qp_info peer = eth_info();
	uint8_t init = 99, dest = 99;

	CHECK(d);
	d->resp_depth = 16;
	d->init_depth = 16;
	peer.resp_depth = 4; /* the peer takes 4 at once */
	peer.init_depth = 8; /* and sends at most 8 */
	smart__verbs_rd_depths(d, &peer, &init, &dest);
	CHECK_EQ(init, 4);
	CHECK_EQ(dest, 8);
	d->resp_depth = 2;
	d->init_depth = 1;
	smart__verbs_rd_depths(d, &peer, &init, &dest);
	CHECK_EQ(init, 1);
	CHECK_EQ(dest, 2);
	free(d);
}

static void test_region_blob(void)
{
	static uint8_t mem[4096];
	struct smart_tp_mr mr = {
		.addr = mem, .len = sizeof(mem), .rkey = 0x42, .fd = -1
	};
	struct smart_tp_remote *r = NULL;
	uint8_t b[SMART_TP_BLOB_MAX];
	size_t len = sizeof(b);

	CHECK_OK(smart__verbs_region_blob(NULL, &mr, b, &len));
	CHECK_EQ(len, VERBS_REGION_BLOB_LEN);
	CHECK_EQ(b[4], VERBS_REGION_BLOB_VERSION);
	CHECK_EQ(smart__verbs_remote_attach(NULL, b, len - 1, -1, &r),
		 SMART_EPROTO);
	b[4] = VERBS_QP_BLOB_VERSION;
	CHECK_EQ(smart__verbs_remote_attach(NULL, b, len, -1, &r),
		 SMART_EPROTO);
	b[4] = VERBS_REGION_BLOB_VERSION;
	CHECK_OK(smart__verbs_remote_attach(NULL, b, len, -1, &r));
	CHECK_U64_EQ(smart__verbs_remote_base(r), (uint64_t)(uintptr_t)mem);
	CHECK_EQ(smart__verbs_remote_rkey(r), 0x42);
	smart__verbs_remote_detach(r);
}

/* A completion's slot is 16 bits of a 32-bit counter.  Slots ahead of
 * head move it to just past them; slots behind it (a shared CQ's other
 * poller already retired past them) move it by nothing, across the
 * 16-bit and 32-bit wraps; completions taken in any order leave head at
 * the tail and never beyond it. */
static void test_slot_ahead(void)
{
	static const uint32_t heads[] = { 0,	   1,	       0x7fff,
					  0xfff0,  0xffff,     0x10000,
					  0x1fffe, 0xfffffff0, 0xffffffff };
	uint32_t head, tail, d, order[64], i, j, base = 0xffe0;
	size_t h;

	for (h = 0; h < sizeof(heads) / sizeof(heads[0]); h++) {
		head = heads[h];
		for (d = 1; d <= VERBS_MAX_SEND_WR; d++)
			CHECK_EQ(smart__verbs_slot_ahead(head, (head + d - 1) &
								       0xffff),
				 d);
		for (d = 0; d < VERBS_MAX_SEND_WR; d++)
			CHECK_EQ(smart__verbs_slot_ahead(head, (head - 1 - d) &
								       0xffff),
				 0);
	}
	/* 64 slots across the 16-bit wrap completed in a scrambled order
	 * (a fixed permutation: i * 37 mod 64) */
	for (i = 0; i < 64; i++)
		order[i] = i * 37 % 64;
	head = base;
	tail = base + 64;
	for (i = 0; i < 64; i++) {
		for (j = 0; j < 2; j++) /* twice: the same slot seen late */
			head += smart__verbs_slot_ahead(head,
							(base + order[i]) &
								0xffff);
		CHECK_LE(tail - head, 64);
	}
	CHECK_EQ(head, tail);
}

/* post1 takes only what post would post without its lock or a chain: a
 * shared QP, a SEND or a WRITE_IMM is refused (SMART_ENOTSUP) before
 * anything else of the QP is read, so a QP with no device, no CQ and no
 * ring answers it (mutant VERBS_POST1_ANY_QP: the shared QP's post runs
 * without its lock, here into the missing device QP). */
static void test_post1_refusals(void)
{
	struct smart_tp_qp q;
	struct smart_tp_wr wr;

	memset(&q, 0, sizeof(q));
	memset(&wr, 0, sizeof(wr));
	q.flags = SMART_TP_SHARED;
	wr.opcode = SMART_TP_READ;
	wr.len = 8;
	CHECK_EQ(smart__verbs_post1(&q, &wr), SMART_ENOTSUP);
	q.flags = 0;
	wr.opcode = SMART_TP_SEND;
	CHECK_EQ(smart__verbs_post1(&q, &wr), SMART_ENOTSUP);
	wr.opcode = SMART_TP_WRITE_IMM;
	CHECK_EQ(smart__verbs_post1(&q, &wr), SMART_ENOTSUP);
}

/* A connected private QP whose device is a function of the test: its
 * post_send copies what it was handed, WR by WR, along the next links
 * (bounded), or refuses the first WR with `refuse`. */
struct fake_sq {
	struct ibv_context ctx;
	struct ibv_qp qp;
	int calls, n, refuse;
	struct ibv_send_wr wr[VERBS_MAX_CHAIN + 1];
	struct ibv_sge sge[VERBS_MAX_CHAIN + 1];
};

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			  struct ibv_send_wr **bad)
{
	struct fake_sq *f = (struct fake_sq *)((char *)qp -
					       offsetof(struct fake_sq, qp));

	f->calls++;
	f->n = 0;
	if (f->refuse) {
		*bad = wr;
		return f->refuse;
	}
	for (; wr && f->n <= VERBS_MAX_CHAIN; wr = wr->next, f->n++) {
		f->wr[f->n] = *wr;
		if (wr->num_sge > 0)
			f->sge[f->n] = wr->sg_list[0];
	}
	*bad = NULL;
	return 0;
}

/* Every field a device reads of a one-sided WR (libibverbs; rxe's
 * post_one_send, mlx5's _mlx5_post_send): the same in post1's WR (a) as
 * in post's (b) of the same smart_tp_wr, posted at the next slot. */
static void same_one_sided(const struct fake_sq *f, const struct ibv_send_wr *a,
			   const struct ibv_sge *sa)
{
	const struct ibv_send_wr *b = &f->wr[0];
	const struct ibv_sge *sb = &f->sge[0];

	CHECK_EQ(f->n, 1);
	CHECK_U64_EQ(a->wr_id + 1, b->wr_id); /* the QP, the next slot */
	CHECK(a->next == NULL);
	CHECK_EQ(a->num_sge, b->num_sge);
	CHECK_EQ(a->opcode, b->opcode);
	CHECK_EQ(a->send_flags, b->send_flags);
	CHECK_U64_EQ(sa->addr, sb->addr);
	CHECK_EQ(sa->length, sb->length);
	CHECK_EQ(sa->lkey, sb->lkey);
	if (a->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    a->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		CHECK_U64_EQ(a->wr.atomic.remote_addr,
			     b->wr.atomic.remote_addr);
		CHECK_EQ(a->wr.atomic.rkey, b->wr.atomic.rkey);
		CHECK_U64_EQ(a->wr.atomic.compare_add,
			     b->wr.atomic.compare_add);
		if (a->opcode == IBV_WR_ATOMIC_CMP_AND_SWP)
			CHECK_U64_EQ(a->wr.atomic.swap, b->wr.atomic.swap);
	} else {
		CHECK_U64_EQ(a->wr.rdma.remote_addr, b->wr.rdma.remote_addr);
		CHECK_EQ(a->wr.rdma.rkey, b->wr.rdma.rkey);
	}
}

/* ... and what the smart_tp_wr asked for (a fault both ways share). */
static void as_asked(const struct ibv_send_wr *a, const struct ibv_sge *sa,
		     const struct smart_tp_wr *w)
{
	static const int op[] = { [SMART_TP_READ] = IBV_WR_RDMA_READ,
				  [SMART_TP_WRITE] = IBV_WR_RDMA_WRITE,
				  [SMART_TP_CAS] = IBV_WR_ATOMIC_CMP_AND_SWP,
				  [SMART_TP_FAA] = IBV_WR_ATOMIC_FETCH_AND_ADD };
	unsigned flags = (w->flags & SMART_TP_SIGNALED ? IBV_SEND_SIGNALED :
							 0) |
			 (w->flags & SMART_TP_FENCE ? IBV_SEND_FENCE : 0) |
			 (w->flags & SMART_TP_INLINE &&
					  w->opcode == SMART_TP_WRITE ?
				  IBV_SEND_INLINE :
				  0);

	CHECK_EQ(a->opcode, op[w->opcode]);
	CHECK_EQ(a->send_flags, flags);
	CHECK_EQ(a->num_sge, 1);
	CHECK_U64_EQ(sa->addr, (uint64_t)(uintptr_t)w->local);
	CHECK_EQ(sa->length, w->len);
	CHECK_EQ(sa->lkey, w->lkey);
	if (smart_tp_atomic(w->opcode)) {
		CHECK_U64_EQ(a->wr.atomic.remote_addr, w->remote);
		CHECK_EQ(a->wr.atomic.rkey, w->rkey);
		CHECK_U64_EQ(a->wr.atomic.compare_add, w->compare_add);
		if (w->opcode == SMART_TP_CAS)
			CHECK_U64_EQ(a->wr.atomic.swap, w->swap);
	} else {
		CHECK_U64_EQ(a->wr.rdma.remote_addr, w->remote);
		CHECK_EQ(a->wr.rdma.rkey, w->rkey);
	}
}

static struct smart_tp_wr p1_wr(uint8_t op, uint64_t id, uint64_t *buf,
				uint32_t len, uint8_t flags)
{
	struct smart_tp_wr w;

	memset(&w, 0, sizeof(w));
	w.wr_id = id;
	w.opcode = op;
	w.local = buf;
	w.len = len;
	w.lkey = 0x1000 + (uint32_t)id;
	w.rkey = 0x2000 + (uint32_t)id;
	w.remote = 0x100000 + 64 * id;
	w.flags = flags;
	if (op == SMART_TP_WRITE_IMM || (flags & SMART_TP_IMM))
		w.imm = 0xabcd0000u + (uint32_t)id;
	else if (smart_tp_atomic(op)) {
		w.compare_add = 0x1111 * id;
		w.swap = 0x2222 * id;
	}
	return w;
}

/* post1 fills its one WR over whatever the QP's last post left in
 * q->wr[0] (a chain's link to wr[1], a SEND's or an IMM's fields, an
 * atomic's operands, an inline flag): after any post, the WR it hands
 * the device reads, field by field, as post's WR of the same smart_tp_wr
 * reads, and it is the only WR handed over.  Its refusals hand the device
 * nothing and leave the ring and tail as they were, with post's answer
 * for the same WR (the core's fallback, ops.c op_sync_post_turn). */
static void test_post1_fill(void)
{
	struct fake_sq *f = calloc(1, sizeof(*f));
	struct smart_tp_qp *q = calloc(1, sizeof(*q));
	struct smart_tp_domain *d = calloc(1, sizeof(*d));
	struct smart_tp_cq *cq = calloc(1, sizeof(*cq));
	struct verbs_slot *ring = calloc(64, sizeof(*ring));
	struct smart__log quiet = { .level = -1 };
	uint64_t buf[16] = { 0 };
	struct smart_tp_wr before[4][3], after[6], w;
	int nbefore[4] = { 2, 3, 1, 1 }, i, j, k;
	struct ibv_send_wr x;
	struct ibv_sge xs;
	uint32_t tail;

	CHECK(f && q && d && cq && ring);
	d->atomics = 1;
	d->log = &quiet;
	f->ctx.ops.post_send = fake_post_send;
	f->qp.context = &f->ctx;
	f->qp.state = IBV_QPS_RTS;
	q->d = d;
	q->cq = cq;
	q->qp = &f->qp;
	q->ring = ring;
	q->mask = 63;
	q->room = 16;
	q->max_inline = 16;
	q->peer_max_msg = 64; /* SEND and WRITE_IMM in the chains */
	/* what the post before leaves: a linked chain with a SEND's IMM
	 * and inline flag, and a CAS's operands; one with a WRITE_IMM; an
	 * inline fenced WRITE; an unsignalled FAA */
	before[0][0] = p1_wr(SMART_TP_SEND, 1, &buf[0], 8,
			     SMART_TP_IMM | SMART_TP_INLINE | SMART_TP_FENCE);
	before[0][1] = p1_wr(SMART_TP_CAS, 2, &buf[1], 8, SMART_TP_SIGNALED);
	before[1][0] = p1_wr(SMART_TP_WRITE_IMM, 3, &buf[2], 16, 0);
	before[1][1] = p1_wr(SMART_TP_FAA, 4, &buf[4], 8, SMART_TP_FENCE);
	before[1][2] = p1_wr(SMART_TP_READ, 5, &buf[5], 24, SMART_TP_SIGNALED);
	before[2][0] = p1_wr(SMART_TP_WRITE, 6, &buf[8], 16,
			     SMART_TP_INLINE | SMART_TP_FENCE |
				     SMART_TP_SIGNALED);
	before[3][0] = p1_wr(SMART_TP_FAA, 7, &buf[10], 8, 0);
	after[0] = p1_wr(SMART_TP_READ, 10, &buf[11], 8, SMART_TP_SIGNALED);
	after[1] = p1_wr(SMART_TP_WRITE, 11, &buf[12], 32, 0);
	after[2] = p1_wr(SMART_TP_WRITE, 12, &buf[13], 8,
			 SMART_TP_INLINE | SMART_TP_SIGNALED);
	after[3] = p1_wr(SMART_TP_CAS, 13, &buf[14], 8, SMART_TP_SIGNALED);
	after[4] = p1_wr(SMART_TP_FAA, 14, &buf[15], 8, SMART_TP_FENCE);
	after[5] = p1_wr(SMART_TP_READ, 15, &buf[11], 8, 0);
	for (i = 0; i < 4; i++)
		for (j = 0; j < 6; j++) {
			atomic_store(&q->head, q->tail);
			CHECK_OK(smart__verbs_post(q, before[i], nbefore[i]));
			CHECK_EQ(f->n, nbefore[i]);
			tail = q->tail;
			CHECK_OK(smart__verbs_post1(q, &after[j]));
			CHECK_EQ(q->tail, tail + 1);
			CHECK_U64_EQ(ring[tail & q->mask].wr_id,
				     after[j].wr_id);
			CHECK_EQ(f->n, 1);
			CHECK_U64_EQ(f->wr[0].wr_id & 0xffff, tail & 0xffff);
			x = f->wr[0];
			xs = f->sge[0];
			as_asked(&x, &xs, &after[j]);
			CHECK_OK(smart__verbs_post(q, &after[j], 1));
			same_one_sided(f, &x, &xs);
		}
	/* post1 right behind post1, every pair */
	for (i = 0; i < 6; i++)
		for (j = 0; j < 6; j++) {
			atomic_store(&q->head, q->tail);
			CHECK_OK(smart__verbs_post1(q, &after[i]));
			CHECK_OK(smart__verbs_post1(q, &after[j]));
			x = f->wr[0];
			xs = f->sge[0];
			as_asked(&x, &xs, &after[j]);
			CHECK_OK(smart__verbs_post(q, &after[j], 1));
			same_one_sided(f, &x, &xs);
		}
	/* refusals: nothing handed over, ring and tail unchanged, post's
	 * answer the same (each behind a chain that filled wr[0]) */
	for (k = 0; k < 5; k++) {
		int want[5] = { SMART_EINVAL, SMART_EINVAL, SMART_ENOTSUP,
				SMART_EQP, SMART_EAGAIN };

		d->atomics = 1;
		atomic_store(&cq->dead, 0);
		atomic_store(&q->head, q->tail);
		CHECK_OK(smart__verbs_post(q, before[0], 2));
		w = after[k == 2 ? 3 : 2];
		if (k == 0)
			w.len = q->max_inline + 8; /* inline over the limit */
		if (k == 1) {
			w = after[4];
			w.remote += 4; /* a misaligned atomic */
		}
		d->atomics = k != 2;
		atomic_store(&cq->dead, k == 3 ? SMART_ECONN : 0);
		if (k == 4)
			atomic_store(&q->head, q->tail - q->room);
		tail = q->tail;
		i = f->calls;
		ring[tail & q->mask].wr_id = 777;
		CHECK_EQ(smart__verbs_post1(q, &w), want[k]);
		CHECK_EQ(f->calls, i);
		CHECK_EQ(q->tail, tail);
		CHECK_U64_EQ(ring[tail & q->mask].wr_id, 777);
		CHECK_EQ(smart__verbs_post(q, &w, 1), want[k]);
		CHECK_EQ(f->calls, i);
		CHECK_EQ(q->tail, tail);
		CHECK_EQ(atomic_load(&q->error), 0);
	}
	d->atomics = 1;
	atomic_store(&cq->dead, 0);
	/* the device's refusal: SMART_EQP, nothing counted posted, the QP
	 * in error; post, called then, says the same */
	atomic_store(&q->head, q->tail);
	f->refuse = EINVAL;
	tail = q->tail;
	CHECK_EQ(smart__verbs_post1(q, &after[0]), SMART_EQP);
	CHECK_EQ(q->tail, tail);
	CHECK_EQ(atomic_load(&q->error), 1);
	CHECK_EQ(smart__verbs_post(q, &after[0], 1), SMART_EQP);
	CHECK_EQ(q->tail, tail);
	free(ring);
	free(cq);
	free(d);
	free(q);
	free(f);
}

/* A shared CQ with no device behind it: ibv_poll_cq calls the context's
 * poll_cq, here one handing out the CQEs the test queued, in order; or,
 * as an extended CQ (cq->ppd set: a SMART_TP_SHARED CQ that also asked
 * for a doorbell of its own), start_poll/next_poll hand them out one at a
 * time through the ibv_cq_ex's wr_id, as mlx5 does. */
struct fake_cq {
	struct ibv_context ctx;
	struct ibv_cq cq;
	struct ibv_cq_ex cqx;
	struct smart_tp_cq tcq;
	pthread_mutex_t mu;
	uint64_t cqe[8]; /* device wr_ids, in completion order */
	int ncqe, next, recv;
	/* the hook's rendezvous: the first poller stops in its turn */
	pthread_cond_t cv;
	int stopped, go;
	atomic_int b_done;
};

static void fake_fill(struct fake_cq *f, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = f->cqe[f->next++];
	wc->status = IBV_WC_SUCCESS;
	wc->opcode = f->recv ? IBV_WC_RECV : IBV_WC_RDMA_READ;
	wc->byte_len = f->recv ? 8 : 0;
}

static int fake_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fake_cq *f = (struct fake_cq *)((char *)cq -
					       offsetof(struct fake_cq, cq));
	int k = 0;

	pthread_mutex_lock(&f->mu);
	for (; k < n && f->next < f->ncqe; k++)
		fake_fill(f, &wc[k]);
	pthread_mutex_unlock(&f->mu);
	return k;
}

static struct fake_cq *fake_of_ex(struct ibv_cq_ex *x)
{
	return (struct fake_cq *)((char *)x - offsetof(struct fake_cq, cqx));
}

/* The next CQE into the ibv_cq_ex's fields (ENOENT: none). */
static int fake_next_poll(struct ibv_cq_ex *x)
{
	struct fake_cq *f = fake_of_ex(x);
	struct ibv_wc wc;
	int rc = ENOENT;

	pthread_mutex_lock(&f->mu);
	if (f->next < f->ncqe) {
		fake_fill(f, &wc);
		x->wr_id = wc.wr_id;
		x->status = wc.status;
		rc = 0;
	}
	pthread_mutex_unlock(&f->mu);
	return rc;
}

static int fake_start_poll(struct ibv_cq_ex *x, struct ibv_poll_cq_attr *a)
{
	(void)a;
	return fake_next_poll(x);
}

static void fake_end_poll(struct ibv_cq_ex *x)
{
	(void)x;
}

static enum ibv_wc_opcode fake_read_opcode(struct ibv_cq_ex *x)
{
	return fake_of_ex(x)->recv ? IBV_WC_RECV : IBV_WC_RDMA_READ;
}

static uint32_t fake_read_byte_len(struct ibv_cq_ex *x)
{
	return fake_of_ex(x)->recv ? 8 : 0;
}

static unsigned int fake_read_wc_flags(struct ibv_cq_ex *x)
{
	(void)x;
	return 0;
}

static __be32 fake_read_imm_data(struct ibv_cq_ex *x)
{
	(void)x;
	return 0;
}

/* The first poller's turn stops between its CQE and its wr_id until the
 * test says go; later turns pass. */
static void stop_hook(struct smart_tp_cq *cq, void *arg)
{
	struct fake_cq *f = arg;

	(void)cq;
	pthread_mutex_lock(&f->mu);
	if (!f->stopped) {
		f->stopped = 1;
		pthread_cond_broadcast(&f->cv);
		while (!f->go)
			pthread_cond_wait(&f->cv, &f->mu);
	}
	pthread_mutex_unlock(&f->mu);
}

struct poller {
	struct fake_cq *f;
	struct smart_tp_qp *qp;
	struct smart_tp_wc wc;
	int n;
};

static void *poller_a(void *arg)
{
	struct poller *p = arg;

	p->n = smart__verbs_poll(&p->f->tcq, &p->wc, 1);
	return NULL;
}

/* The second poller takes the next CQE, then posts as post (or
 * post_recv) does: into every slot the ring's head (rtaken) has freed. */
static void *poller_b(void *arg)
{
	struct poller *p = arg;
	struct smart_tp_qp *q = p->qp;

	p->n = smart__verbs_poll(&p->f->tcq, &p->wc, 1);
	if (p->f->recv) {
		while (q->rposted - atomic_load(&q->rtaken) < q->rroom) {
			q->rring[q->rposted & q->rmask].wr_id = 200 +
								q->rposted;
			q->rposted++;
		}
	} else {
		while (q->tail - atomic_load(&q->head) < q->room) {
			q->ring[q->tail & q->mask].wr_id = 200 + q->tail;
			q->tail++;
		}
	}
	atomic_store(&p->f->b_done, 1);
	return NULL;
}

/* Two pollers of one shared CQ, the first stopped after its CQE (slot 0)
 * came back and before it read slot 0's wr_id: the second's poll waits
 * for the first's turn to end (counted in poll_waits).  Without the turns
 * (mutant VERBS_SHARED_POLL_UNLOCKED) the second takes slot 1, retires the
 * ring past slot 0, a post reuses slot 0, and the first reports the new
 * WR's wr_id.  The test waits for either thing, not for a time.  recv: the
 * same with two receives' completions (the receive ring, rtaken); ex: on
 * an extended CQ (poll_ex). */
static void shared_turns(int recv, int ex)
{
	struct fake_cq *f = calloc(1, sizeof(*f));
	struct smart_tp_qp *q = calloc(1, sizeof(*q));
	struct verbs_slot ring[4] = { { 0 } }, rring[4] = { { 0 } };
	struct verbs_slot *r = recv ? rring : ring;
	uint64_t bit = recv ? VERBS_RECV_BIT : 0;
	struct poller a, b;
	pthread_t ta, tb;
	double deadline;

	CHECK(f && q);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	f->recv = recv;
	f->ctx.ops.poll_cq = fake_poll;
	f->cq.context = &f->ctx;
	f->tcq.cq = &f->cq;
	if (ex) {
		f->cqx.context = &f->ctx;
		f->cqx.start_poll = fake_start_poll;
		f->cqx.next_poll = fake_next_poll;
		f->cqx.end_poll = fake_end_poll;
		f->cqx.read_opcode = fake_read_opcode;
		f->cqx.read_byte_len = fake_read_byte_len;
		f->cqx.read_wc_flags = fake_read_wc_flags;
		f->cqx.read_imm_data = fake_read_imm_data;
		f->tcq.cqx = &f->cqx;
		f->tcq.cq = ibv_cq_ex_to_cq(&f->cqx);
		/* only tested for NULL by a poll */
		f->tcq.ppd = (struct ibv_pd *)&f->ctx;
	}
	f->tcq.flags = SMART_TP_SHARED;
	smart_spin_init(&f->tcq.lock);
	smart_spin_init(&f->tcq.poll_lock);
	f->tcq.take_hook = stop_hook;
	f->tcq.take_arg = f;
	q->cq = &f->tcq;
	q->flags = SMART_TP_SHARED;
	q->ring = ring;
	q->mask = 3;
	q->room = 4;
	q->rring = rring;
	q->rmask = 3;
	q->rroom = 4;
	r[0].wr_id = 100; /* two signalled WRs (receives) posted, both done */
	r[1].wr_id = 101;
	if (recv)
		q->rposted = 2;
	else
		q->tail = 2;
	f->cqe[0] = bit | (uint64_t)(uintptr_t)q << 16 | 0;
	f->cqe[1] = bit | (uint64_t)(uintptr_t)q << 16 | 1;
	f->ncqe = 2;

	a = (struct poller){ f, q, { 0 }, -1 };
	b = a;
	CHECK_EQ(pthread_create(&ta, NULL, poller_a, &a), 0);
	pthread_mutex_lock(&f->mu);
	while (!f->stopped)
		pthread_cond_wait(&f->cv, &f->mu);
	pthread_mutex_unlock(&f->mu);
	CHECK_EQ(pthread_create(&tb, NULL, poller_b, &b), 0);
	/* bounded only so that a poll that waits without counting fails
	 * (poll_waits below) instead of hanging: either comes at once */
	deadline = test_now_ms() + 60000;
	while (!atomic_load(&f->b_done) &&
	       !atomic_load_explicit(&f->tcq.poll_waits,
				     memory_order_relaxed) &&
	       test_now_ms() < deadline)
		sched_yield();
	pthread_mutex_lock(&f->mu);
	f->go = 1;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	CHECK_EQ(pthread_join(ta, NULL), 0);
	CHECK_EQ(pthread_join(tb, NULL), 0);
	CHECK_EQ(a.n, 1);
	CHECK_EQ(b.n, 1);
	CHECK_U64_EQ(a.wc.wr_id, 100);
	CHECK_U64_EQ(b.wc.wr_id, 101);
	CHECK_EQ(a.wc.status, SMART_TP_WC_OK);
	CHECK_EQ(b.wc.status, SMART_TP_WC_OK);
	CHECK_EQ(a.wc.opcode, recv ? SMART_TP_RECV : SMART_TP_READ);
	CHECK_EQ(b.wc.opcode, recv ? SMART_TP_RECV : SMART_TP_READ);
	CHECK_U64_EQ(atomic_load(&f->tcq.poll_waits), 1);
	if (recv) {
		CHECK_EQ(atomic_load(&q->rtaken), 2);
		CHECK_EQ(q->rposted, 6);
	} else {
		CHECK_EQ(atomic_load(&q->head), 2);
		CHECK_EQ(q->tail, 6);
	}
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(q);
	free(f);
}

static void test_shared_poll_turns(void)
{
	shared_turns(0, 0);
}

static void test_turns_recv(void)
{
	shared_turns(1, 0);
}

static void test_turns_ex(void)
{
	shared_turns(0, 1);
	shared_turns(1, 1);
}

int main(int argc, char **argv)
{
	return test_main(argc, argv,
			 (struct test_case[]){
				 { "round_trip", test_round_trip },
				 { "refusals", test_refusals },
				 { "refusals_ib", test_refusals_ib },
				 { "mutations", test_mutations },
				 { "peer_check", test_peer_check },
				 { "depths", test_depths },
				 { "region_blob", test_region_blob },
				 { "slot_ahead", test_slot_ahead },
				 { "post1_refusals", test_post1_refusals },
				 { "post1_fill", test_post1_fill },
				 { "shared_poll_turns",
				   test_shared_poll_turns },
				 { "shared_poll_turns_recv", test_turns_recv },
				 { "shared_poll_turns_ex", test_turns_ex },
				 { 0 } });
}
