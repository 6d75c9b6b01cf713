/*
 * verbs transport: the atomics self-test that every domain open runs.
 *
 * Why: a device may say it has atomics (atomic_cap) and still get their
 * byte order wrong.  InfiniBand carries atomic operands and results
 * big-endian; a device or provider that forgets to convert on a
 * little-endian host hands back 0x0807060504030201 for 0x0102030405060708,
 * or adds and compares on swapped words.  Every lock, counter and version
 * word of the data structures would then be silently wrong, so such a
 * device gets atomics off (caps.atomics 0; post refuses CAS/FAA with
 * SMART_ENOTSUP) rather than wrong answers.
 *
 * How: a loopback RC QP pair of the domain (both ends here, connected to
 * each other with smart__verbs_qp_rts, so the NIC runs its own responder
 * path), one registered page holding the target word and the two result
 * words, then one FAA and one CAS in one chain.  Old values and the word
 * afterwards are checked in host order.  The values are chosen so that a
 * swap anywhere shows: the FAA's addend carries across a byte boundary
 * (a swapped add carries the other way), and the CAS compares against the
 * word's host-order value (a swapped compare does not match, and the word
 * stays).
 *
 * Cost: one page registered, a CQ, two QPs taken to RTS, two WRs and
 * their completions; measured at every open and shown in the domain's log
 * line (docs/transport.md gives figures).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/verbs/verbs.h"
#include "util/clock.h"
#include "util/log.h"

#define ST_PATTERN UINT64_C(0x0102030405060708)
#define ST_ADD	   UINT64_C(0x00000000000000f9) /* 0x08 + 0xf9 carries */
#define ST_SWAP	   UINT64_C(0x1112131415161718)
/* Completions of a loopback pair take microseconds on a NIC, a few
 * milliseconds on Soft-RoCE under emulation; only a broken device comes
 * near this, and it then gets atomics off. */
#define ST_WAIT_NS (3ull * 1000000000ull)

struct selftest {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *mr;
	uint64_t *mem; /* [0] the word, [1] FAA's old, [2] CAS's old */
};

/* A QP of the pair: two WRs, nothing inline. */
static struct ibv_qp *st_qp(struct smart_tp_domain *d, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr_ex ia;

	return smart__verbs_qp_make(d, cq, d->pd, 2, 0, 0, NULL, &ia);
}

static void st_close(struct selftest *t)
{
	/* the QPs first: nothing is written into the page after that */
	if (t->a)
		ibv_destroy_qp(t->a);
	if (t->b)
		ibv_destroy_qp(t->b);
	if (t->cq)
		ibv_destroy_cq(t->cq);
	if (t->mr)
		ibv_dereg_mr(t->mr);
	free(t->mem);
}

/* The objects, and a connected to b. */
static int st_open(struct smart_tp_domain *d, struct selftest *t, char *why,
		   size_t len)
{
	struct verbs_qp_info ia, ib;

	if (posix_memalign((void **)&t->mem, 4096, 4096)) {
		t->mem = NULL;
		snprintf(why, len, "no memory");
		return SMART_ENOMEM;
	}
	memset(t->mem, 0, 4096);
	t->mr = ibv_reg_mr(d->pd, t->mem, 4096,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	t->cq = ibv_create_cq(d->ctx, 4, NULL, NULL, 0);
	t->a = t->cq ? st_qp(d, t->cq) : NULL;
	t->b = t->cq ? st_qp(d, t->cq) : NULL;
	if (!t->mr || !t->cq || !t->a || !t->b) {
		snprintf(why, len, "cannot create its %s: %s",
			 !t->mr ? "MR" :
			 !t->cq ? "CQ" :
				  "QPs",
			 strerror(errno));
		return SMART_ENOMEM;
	}
	if (smart__verbs_qp_init(d, t->a) || smart__verbs_qp_init(d, t->b)) {
		snprintf(why, len,
			 "cannot take its QPs to INIT with remote "
			 "atomic rights: %s",
			 strerror(errno));
		return SMART_ESYS;
	}
	smart__verbs_local_info(d, t->a, 1, &ia);
	smart__verbs_local_info(d, t->b, 2, &ib);
	if (smart__verbs_qp_rts(d, t->a, 1, &ib) ||
	    smart__verbs_qp_rts(d, t->b, 2, &ia)) {
		snprintf(why, len, "cannot connect a loopback QP pair");
		return SMART_ESYS;
	}
	return 0;
}

/* FAA then CAS from a to the word, both signalled; their completions. */
static int st_run(struct selftest *t, char *why, size_t len)
{
	uint64_t word = (uint64_t)(uintptr_t)t->mem;
	struct ibv_sge sg[2] = {
		{ .addr = word + 8, .length = 8, .lkey = t->mr->lkey },
		{ .addr = word + 16, .length = 8, .lkey = t->mr->lkey },
	};
	struct ibv_send_wr wr[2], *bad = NULL;
	struct ibv_wc wc[2];
	uint64_t deadline = smart__mono_ns() + ST_WAIT_NS;
	int got = 0, n, i;

	memset(wr, 0, sizeof(wr));
	__atomic_store_n(&t->mem[0], ST_PATTERN, __ATOMIC_RELEASE);
	for (i = 0; i < 2; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.atomic.remote_addr = word;
		wr[i].wr.atomic.rkey = t->mr->rkey;
	}
	wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[0].wr.atomic.compare_add = ST_ADD;
	wr[0].next = &wr[1];
	wr[1].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr[1].wr.atomic.compare_add = ST_PATTERN + ST_ADD;
	wr[1].wr.atomic.swap = ST_SWAP;
	n = ibv_post_send(t->a, wr, &bad);
	if (n) {
		snprintf(why, len, "ibv_post_send: %s", strerror(n));
		return SMART_ESYS;
	}
	while (got < 2) {
		n = ibv_poll_cq(t->cq, 2 - got, wc + got);
		if (n < 0) {
			snprintf(why, len, "ibv_poll_cq failed");
			return SMART_ESYS;
		}
		got += n;
		if (!n && smart__mono_ns() > deadline) {
			snprintf(why, len, "no completion within %llu s",
				 ST_WAIT_NS / 1000000000ull);
			return SMART_ETIMEDOUT;
		}
	}
	for (i = 0; i < 2; i++)
		if (wc[i].status != IBV_WC_SUCCESS) {
			snprintf(why, len, "its %s completed with %s",
				 wc[i].wr_id ? "CAS" : "FAA",
				 ibv_wc_status_str(wc[i].status));
			return SMART_ENOTSUP;
		}
	return 0;
}

/* What the device did, in host order; a word that is the expected one
 * byte-swapped is named as such. */
static int st_check(const struct selftest *t, char *why, size_t len)
{
	static const char *const what[3] = { "the word after FAA and CAS",
					     "FAA's old value",
					     "CAS's old value" };
	const uint64_t want[3] = { ST_SWAP, ST_PATTERN, ST_PATTERN + ST_ADD };
	uint64_t got;
	int i;

	for (i = 0; i < 3; i++) {
		got = __atomic_load_n(&t->mem[i], __ATOMIC_ACQUIRE);
		if (got == want[i])
			continue;
		snprintf(why, len,
			 "%s is 0x%016" PRIx64 ", want 0x%016" PRIx64 "%s",
			 what[i], got, want[i],
			 got == __builtin_bswap64(want[i]) ? ": byte-swapped" :
							     "");
		return SMART_ENOTSUP;
	}
	return 0;
}

int smart__verbs_atomics_selftest(struct smart_tp_domain *d, char *why,
				  size_t len)
{
	struct selftest t;
	int rc;

	memset(&t, 0, sizeof(t));
	rc = st_open(d, &t, why, len);
	if (!rc)
		rc = st_run(&t, why, len);
	if (!rc)
		rc = st_check(&t, why, len);
	st_close(&t);
	return rc;
}
