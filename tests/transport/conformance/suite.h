/*
 * Inside the transport conformance suite: the fixture, the helpers and the
 * cases that the files of this folder share.  The suite's one entry point
 * for a transport is smart_conformance_run() (../conformance.h).  Besides
 * the files of this folder, only the tests of tests/transport that check
 * one transport beyond the contract (test_shm_adversary.c) use this
 * fixture and these helpers, which the build links into every test there.
 *
 * Each case checks one part of the contract in src/transport/transport.h
 * using the transport directly, with no bootstrap and no core:
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
 * Files, by case group: basic.c (objects, READ/WRITE sizes, CAS/FAA,
 * selective signalling, polling), ordering.c, atomicity.c (threads and
 * processes racing on words, torn words), errors.c (error completions,
 * malformed WRs, EAGAIN), concurrency.c (shared QP and CQ), one_sided.c
 * (a stopped blade), device_memory.c (rule 7), two_sided.c (rule 8),
 * fixture.c (what they share), runner.c (the table of cases and
 * smart_conformance_run).
 *
 * Invariants: a case never depends on another; every wait is bounded
 * (CONF_WAIT_NS) so a broken transport fails instead of hanging; the
 * outcome of a randomised case depends only on its printed seed, never on
 * thread interleaving; assertions are never about timing (the only
 * time-based check, expect_quiet(), can only catch extra completions).
 */
#ifndef SMART_TESTS_CONFORMANCE_SUITE_H
#define SMART_TESTS_CONFORMANCE_SUITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness/test.h"
#include "util/compiler.h"
#include "transport/conformance.h"

#define CONF_REGION_LEN (256u << 10)
#define CONF_LOCAL_LEN	(256u << 10)
#define CONF_WAIT_NS	(10ull * 1000000000ull)
#define CONF_QUIET_NS	(10ull * 1000000ull)
#define CONF_SEED	UINT64_C(0x5eed5eedcafef00d)
#define CONF_SIG	SMART_TP_SIGNALED

/* ---- small helpers (fixture.c) ---- */

uint64_t now_ns(void);
/* splitmix64: a tiny, well-distributed generator for test data. */
uint64_t rng_next(uint64_t *s);
void rng_fill(uint64_t *s, void *buf, size_t len);
/* qsort() order of 64-bit words. */
int cmp_u64(const void *a, const void *b);
/* The seed of a randomised case, printed so a failure can be replayed. */
uint64_t case_seed(const char *name);
/* n scaled by env->scale_pct (the heavy cases on slow devices), >= 1. */
uint32_t scaled(const struct smart_conf_env *env, uint32_t n);
const char *wc_name(int s);

#define CHECK_WC(wc, id, st)                                                   \
	do {                                                                   \
		const struct smart_tp_wc w_ = (wc);                            \
		if (w_.wr_id != (uint64_t)(id) || w_.status != (st))           \
			TEST_FAIL("completion wr_id %" PRIu64 " status %s, "   \
				  "expected wr_id %" PRIu64 " status %s",      \
				  w_.wr_id, wc_name(w_.status),                \
				  (uint64_t)(id), wc_name(st));                \
	} while (0)

/* ---- the fixture: a responder with one region, an initiator attached
 * to it, and connected QPs ---- */

struct conf_target {
	uint64_t base;	     /* remote_base() */
	uint32_t rkey, lkey; /* remote_rkey(), local MR lkey */
	size_t rlen;	     /* region length */
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
	struct conf_target dm; /* the region's device memory; rlen 0: none */
	uint8_t *raddr, *laddr;
};

struct conn {
	const struct smart_tp_ops *ops;
	struct smart_tp_cq *cq;
	struct smart_tp_qp *qp;
	struct smart_tp_responder *resp;
	int own_cq;
};

int dom_open(const struct smart_conf_env *env, int blade_side,
	     struct smart_tp_domain **out);
/* The descriptor remote_attach() takes ownership of. */
int attach_fd(const struct smart_tp_mr *region);
void fx_open(struct fx *f, const struct smart_conf_env *env);
/* fx_open with dm_len bytes of device memory attached to the region
 * (none for 0): dm_attach's error, with nothing left open, or 0. */
int fx_open_dm(struct fx *f, const struct smart_conf_env *env, size_t dm_len);
void fx_close(struct fx *f);
/* A connected QP on cq, or on a new CQ of the given depth when cq is NULL;
 * flags (SMART_TP_SHARED) apply to both. */
void conn_open(struct fx *f, struct smart_tp_cq *cq, uint32_t depth,
	       uint32_t max_send_wr, uint32_t flags, struct conn *c);
void conn_close(struct conn *c);

struct smart_tp_wr wr_make(const struct conf_target *t, uint8_t op, uint64_t id,
			   uint64_t off, void *local, uint32_t len,
			   uint8_t flags);
struct smart_tp_wr wr_atomic(const struct conf_target *t, uint8_t op,
			     uint64_t id, uint64_t off, uint64_t *local,
			     uint64_t cmp_add, uint64_t swap, uint8_t flags);
/* Collect exactly n completions into wc, in CQ order. */
void wait_wcs(const struct smart_tp_ops *ops, struct smart_tp_cq *cq,
	      struct smart_tp_wc *wc, int n);
/* The same, each poll offered room for room - got (room >= n). */
void wait_wcs_room(const struct smart_tp_ops *ops, struct smart_tp_cq *cq,
		   struct smart_tp_wc *wc, int n, int room);
/* No completion shows up for a while. */
void expect_quiet(const struct smart_tp_ops *ops, struct smart_tp_cq *cq);
/* Post a chain whose last WR is signalled; wait for its OK completion. */
void run_chain(struct conn *c, const struct smart_tp_wr *wrs, int n);
void run1(struct conn *c, struct smart_tp_wr w);
/* A word of the region, read and written as the NIC would see it. */
uint64_t rword(const struct fx *f, size_t off);
void rword_set(const struct fx *f, size_t off, uint64_t v);
/* First differing byte of two buffers, or -1. */
long first_diff(const void *a, const void *b, size_t len);

#define CHECK_MEM_EQ(a, b, len, what)                                          \
	do {                                                                   \
		long d_ = first_diff((a), (b), (len));                         \
		CHECK_MSG(d_ < 0, "%s: byte %ld of %zu differs", (what), d_,   \
			  (size_t)(len));                                      \
	} while (0)

/* ---- messages between the processes of the fork cases: one SEQPACKET
 * message, with an optional descriptor ---- */

void msg_send(int s, const void *buf, size_t len, int fd);
/* Receive one message (10 s timeout); *fd gets a passed descriptor or -1. */
size_t msg_recv(int s, void *buf, size_t cap, int *fd);
/* Fork a peer process joined by a SEQPACKET socket: *s is the caller's
 * end in both processes; returns 0 in the child, its pid in the parent. */
pid_t fork_peer(int *s);
void check_child_ok(pid_t pid, const char *who);

/* ---- the cases, in the order runner.c runs them ---- */

void case_objects(const struct smart_conf_env *env);
void case_rw_sizes(const struct smart_conf_env *env);
void case_word_writes(const struct smart_conf_env *env);
void case_atomic_basic(const struct smart_conf_env *env);
void case_atomics_byte_order(const struct smart_conf_env *env);
void case_signal_selective(const struct smart_conf_env *env);
void case_order_chain(const struct smart_conf_env *env);
void case_order_long(const struct smart_conf_env *env);
void case_atomic_threads_w2(const struct smart_conf_env *env);
void case_atomic_threads_w4(const struct smart_conf_env *env);
void case_atomic_fork(const struct smart_conf_env *env);
void case_tearing(const struct smart_conf_env *env);
void case_tearing_bulk(const struct smart_conf_env *env);
void case_errors(const struct smart_conf_env *env);
void case_error_bad_opcode(const struct smart_conf_env *env);
void case_peer_read(const struct smart_conf_env *env);
void case_eagain(const struct smart_conf_env *env);
void case_post1(const struct smart_conf_env *env);
void case_mr_freed(const struct smart_conf_env *env);
void case_cq_small(const struct smart_conf_env *env);
void case_shared_objects(const struct smart_conf_env *env);
void case_one_sided_sigstop(const struct smart_conf_env *env);
void case_poll_small_max(const struct smart_conf_env *env);
void case_device_memory(const struct smart_conf_env *env);
void case_inline_limit(const struct smart_conf_env *env);
void case_two_sided(const struct smart_conf_env *env);
void case_two_sided_kind(const struct smart_conf_env *env);
void case_two_sided_flow(const struct smart_conf_env *env);
void case_two_sided_errors(const struct smart_conf_env *env);
void case_two_sided_blobs(const struct smart_conf_env *env);
void case_two_sided_events(const struct smart_conf_env *env);

#endif
