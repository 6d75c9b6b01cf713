/*
 * Rendezvous messages (docs/rpc.md §5): a payload longer than eager_max
 * is copied into the sender's staging region, and a descriptor (offset,
 * length, CRC-32C, rid) goes eagerly in its place; the receiver READs the
 * payload in RPC_FRAG fragments, RPC_RD_MAX in flight, into its private
 * landing region, checks the CRC, delivers it and answers DONE, which
 * gives the staging pages back.
 *
 * Staging is per connection: each connection has a region of cfg.rndv_max
 * bytes cut into RPC_FRAG pages, made with the connection and freed with
 * it, described to that peer only (on shm with its memfd) and open to it
 * for READ only (SMART_TP_MR_PEER_READ: verbs, remote read access alone;
 * shm, a memfd sealed against writes, which the peer can map PROT_READ
 * only).  A peer therefore never sees what we stage for another peer, and
 * cannot change what it READs: what it gets is what we wrote, the CRC
 * checking only the transfer.  A region is never passed to another
 * connection, so a peer's mapping that outlives its connection (shm: it
 * keeps its mapping) shows what was staged for that peer and nothing
 * after.  Landing is one region per endpoint, local only (a peer can
 * never write where we check and deliver).
 *
 * Invariants:
 *  - a peer's staging region is mapped only when its span (transport's
 *    remote_span) is within its rndv_max rounded up to RPC_FRAG (the
 *    protocol's page); a larger one cuts the handshake, nothing mapped;
 *  - a descriptor is checked against the peer's staging length (told in
 *    the handshake) and our landing length before any READ: a peer
 *    pointing outside its buffer is cut off, never READ for;
 *  - one inbound rendezvous per connection at a time; the data messages
 *    that arrive behind it are held (their receives not given back, so
 *    the window bounds them) and handled in order after it;
 *  - at most RPC_CONN_STAGES messages staged per connection (a quota: a
 *    peer that never answers DONE holds its own connection's records and
 *    pages, no one else's); a record lives until the peer's DONE or its
 *    connection's end; a landing until its message was delivered or its
 *    connection ended.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg/msg_int.h"
#include "smart/util.h"
#include "util/log.h"
#include "util/mutant.h"

static void smart__rndv_retry(struct smart_rpc *rpc);

/* ---- regions ----------------------------------------------------------- */

/* shareable: mr_alloc's (SMART_TP_MR_PEER_READ for staging: no huge
 * pages, a hugetlb mapping would reserve them all at once).  An MR
 * already there (RPC_RNDV_STAGE_REUSED) is kept. */
static int pages_open(struct smart_rpc *rpc, int shareable,
		      struct rpc_pages *pg)
{
	pg->n = rpc->cfg.rndv_max / RPC_FRAG;
	pg->free = pg->n;
	pg->used = calloc(pg->n, 1);
	if (!pg->used)
		return SMART_ENOMEM;
	if (pg->mr)
		return 0;
	return rpc->tp->mr_alloc(rpc->dom, (size_t)pg->n * RPC_FRAG,
				 shareable == SMART_TP_MR_PEER_READ ? 0 : -1,
				 shareable, &pg->mr);
}

static void pages_close(struct smart_rpc *rpc, struct rpc_pages *pg)
{
	if (pg->mr)
		rpc->tp->mr_free(rpc->dom, pg->mr);
	free(pg->used);
	memset(pg, 0, sizeof(*pg));
}

/* The first run of n free pages (first fit): 0 with *first, or
 * SMART_EAGAIN while there is none. */
static int pages_get(struct rpc_pages *pg, uint32_t n, uint32_t *first)
{
	uint32_t run = 0;

	if (n > pg->free)
		return SMART_EAGAIN;
	for (uint32_t i = 0; i < pg->n; i++) {
		run = pg->used[i] ? 0 : run + 1;
		if (run == n) {
			*first = i + 1 - n;
			memset(pg->used + *first, 1, n);
			pg->free -= n;
			return 0;
		}
	}
	return SMART_EAGAIN;
}

static void pages_put(struct rpc_pages *pg, uint32_t first, uint32_t n)
{
	memset(pg->used + first, 0, n);
	pg->free += n;
}

static uint8_t *page_addr(const struct rpc_pages *pg, uint32_t page)
{
	return (uint8_t *)pg->mr->addr + (size_t)page * RPC_FRAG;
}

static uint32_t npages_of(uint32_t len)
{
	return (uint32_t)(((uint64_t)len + RPC_FRAG - 1) / RPC_FRAG);
}

/* The endpoint's landing region. */
int smart__rndv_open(struct smart_rpc *rpc)
{
	/* landing "shareable" on shm only: there that makes it a memfd
	 * whose pages come as they are touched, where a private MR is
	 * populated at once (an endpoint would cost rndv_max of memory
	 * before any message) and its blob is never given to anyone; on
	 * verbs it would open the region to remote access for nothing */
	return pages_open(rpc, rpc->passes_fds, &rpc->land_pg);
}

void smart__rndv_close(struct smart_rpc *rpc)
{
	pages_close(rpc, &rpc->land_pg);
	if (rpc->stage_spare)
		rpc->tp->mr_free(rpc->dom, rpc->stage_spare);
	rpc->stage_spare = NULL;
}

/* c's staging region, a fresh one (RPC_RNDV_STAGE_REUSED: the last
 * connection's, which its peer may still have mapped).  Made with the
 * connection where a transport passes descriptors (shm: a memfd's pages
 * come as they are touched, so a QP-cache spare costs a descriptor),
 * at its handshake elsewhere (verbs: registration pins rndv_max bytes,
 * which a spare must not).  Idempotent; on error nothing is kept but
 * what smart__rndv_conn_drop frees. */
int smart__rndv_conn_open(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_pages *pg = &c->stage_pg;
	int rc;

	if (pg->mr)
		return 0;
	if (!c->stages)
		c->stages = calloc(RPC_CONN_STAGES, sizeof(*c->stages));
	if (!c->stages)
		return SMART_ENOMEM;
	if (SMART_M_RPC_RNDV_STAGE_REUSED && rpc->stage_spare) {
		pg->mr = rpc->stage_spare;
		rpc->stage_spare = NULL;
	}
	rc = pages_open(rpc, SMART_TP_MR_PEER_READ, pg);
	if (rc)
		pages_close(rpc, pg);
	return rc;
}

/* The blob of c's staging region, for its peer's PEER frame. */
int smart__rndv_blob(struct smart_rpc_conn *c, void *blob, size_t *len)
{
	int rc = smart__rndv_conn_open(c);

	return rc ? rc :
		    c->rpc->tp->region_blob(c->rpc->dom, c->stage_pg.mr, blob,
					    len);
}

/* c's staging descriptor for its peer (shm), or -1. */
int smart__rndv_fd(const struct smart_rpc_conn *c)
{
	return c->stage_pg.mr ? c->stage_pg.mr->fd : -1;
}

/* ---- sender ------------------------------------------------------------ */

/* Stage len bytes for c's peer: *d describes them.  SMART_EAGAIN while
 * c's staging region (or its records) has no room. */
int smart__rndv_stage(struct smart_rpc_conn *c, const void *data, uint32_t len,
		      struct smart_msg_rndv *d)
{
	uint32_t n = npages_of(len), slot, first;
	struct rpc_stage *s = NULL;

	for (slot = 0; c->stages && slot < RPC_CONN_STAGES; slot++)
		if (!c->stages[slot].conn) {
			s = &c->stages[slot];
			break;
		}
	if (!s || pages_get(&c->stage_pg, n, &first))
		return SMART_EAGAIN;
	memcpy(page_addr(&c->stage_pg, first), data, len);
	s->conn = c;
	s->page = first;
	s->npages = n;
	s->gen = ++c->stage_gen;
	d->off = (uint64_t)first * RPC_FRAG;
	d->len = len;
	d->crc = smart_crc32c(0, data, len);
	d->rid = (uint32_t)s->gen << 16 | slot;
	c->st.rndv_sent++;
	return 0;
}

static void stage_free(struct smart_rpc_conn *c, struct rpc_stage *s)
{
	pages_put(&c->stage_pg, s->page, s->npages);
	s->conn = NULL;
}

/* The record of rid on c, or NULL: none staged under that name. */
static struct rpc_stage *stage_of(struct smart_rpc_conn *c, uint32_t rid)
{
	uint32_t slot = rid & 0xffff;
	struct rpc_stage *s;

	if (!c->stages || slot >= RPC_CONN_STAGES)
		return NULL;
	s = &c->stages[slot];
	return s->conn == c && s->gen == (uint16_t)(rid >> 16) ? s : NULL;
}

/* A staged message that never went (its send failed): given back. */
void smart__rndv_unstage(struct smart_rpc_conn *c, uint32_t rid)
{
	struct rpc_stage *s = stage_of(c, rid);

	if (s)
		stage_free(c, s);
}

/* The peer READ what rid staged: its pages come back.  A DONE for
 * anything else is a protocol error. */
void smart__rndv_done(struct smart_rpc_conn *c, uint32_t rid)
{
	struct rpc_stage *s = stage_of(c, rid);

	if (!s) {
		c->st.proto_errors++;
		smart__rpc_fail(c, SMART_EPROTO, "DONE for nothing staged");
		return;
	}
	stage_free(c, s);
}

/* ---- receiver ---------------------------------------------------------- */

/* The peer's staging region may span its rndv_max rounded up to our
 * page, no more: it is told the peer's longest message, and a region
 * larger than that would only take our address space (shm maps it). */
static int rndv_span_ok(struct smart_rpc_conn *c,
			const struct smart_proto_peer *peer)
{
	uint64_t span, allow = ((uint64_t)peer->rndv_max + RPC_FRAG - 1) /
			       RPC_FRAG * RPC_FRAG;

	if (c->rpc->tp->remote_span(peer->rblob, peer->rblob_len, &span))
		return 0;
	if (span > allow && !SMART_M_RPC_RNDV_NO_SIZE_CHECK) {
		c->st.proto_errors++;
		smart__warn(c->rpc->log,
			    "rpc: a peer's staging region "
			    "of %llu bytes refused: its rndv_max allows %llu",
			    (unsigned long long)span,
			    (unsigned long long)allow);
		return 0;
	}
	return 1;
}

/* Take the peer's staging region (its blob; on shm its descriptor). */
int smart__rndv_connect(struct smart_rpc_conn *c,
			const struct smart_proto_peer *peer, int fd)
{
	struct smart_rpc *rpc = c->rpc;
	int rc;

	if (!peer->rndv_max) {
		if (fd >= 0)
			close(fd);
		return 0; /* the peer takes eager messages only */
	}
	if (!rndv_span_ok(c, peer)) {
		if (fd >= 0)
			close(fd);
		return SMART_EPROTO;
	}
	rc = rpc->tp->remote_attach(rpc->dom, peer->rblob, peer->rblob_len, fd,
				    &c->remote);
	if (rc)
		return rc;
	c->peer_rndv = peer->rndv_max;
	return 0;
}

/* The peer may have its staging pages of rid back (we READ them, or
 * there was nothing to READ them for). */
void smart__rndv_send_done(struct smart_rpc_conn *c, uint32_t rid)
{
	struct smart_msg_hdr h = { .type = SMART_MSG_DONE, .call = rid };

	smart__rpc_queue(c, &h, NULL);
}

static void post_reads(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_rin *r = &c->rin;
	uint64_t base = rpc->tp->remote_base(c->remote) + r->d.off;
	uint8_t *land = page_addr(&rpc->land_pg, r->page);

	while (r->posted < r->nfrag && r->posted - r->done < RPC_RD_MAX &&
	       c->state == RPC_C_LIVE) {
		uint64_t at = (uint64_t)r->posted * RPC_FRAG;
		struct smart_tp_wr *wr = smart__rpc_wr(c, RPC_WR_READ,
						       r->posted);

		if (!wr)
			return;
		wr->opcode = SMART_TP_READ;
		wr->remote = base + at;
		wr->rkey = rpc->tp->remote_rkey(c->remote);
		wr->local = land + at;
		wr->len = r->d.len - at < RPC_FRAG ? (uint32_t)(r->d.len - at) :
						     RPC_FRAG;
		wr->lkey = rpc->land_pg.mr->lkey;
		wr->flags = SMART_TP_SIGNALED;
		r->posted++;
	}
}

/* Landing pages for the rendezvous waiting on c; the READs go. */
static void rin_begin(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_rin *r = &c->rin;

	r->npages = npages_of(r->d.len);
	if (pages_get(&rpc->land_pg, r->npages, &r->page)) {
		if (r->state != RPC_RIN_WAIT_MEM)
			rpc->land_waiters++;
		r->state = RPC_RIN_WAIT_MEM;
		return;
	}
	if (r->state == RPC_RIN_WAIT_MEM)
		rpc->land_waiters--;
	r->state = RPC_RIN_READING;
	r->nfrag = r->npages;
	r->posted = r->done = 0;
	post_reads(c);
}

/* A descriptor arrived (m, already checked by the parser): check it
 * against both regions, then READ, or answer at once when there is
 * nothing to READ for (a call gone, a response longer than asked). */
void smart__rndv_start(struct smart_rpc_conn *c, const struct smart_msg *m)
{
	const struct smart_msg_rndv *d = &m->rndv;

	if (!c->peer_rndv ||
	    ((d->off > c->peer_rndv || d->len > c->peer_rndv - d->off) &&
	     !SMART_M_RPC_NO_RNDV_BOUNDS)) {
		c->st.proto_errors++;
		smart__rpc_fail(c, SMART_EPROTO,
				"rendezvous outside the "
				"peer's staging region");
		return;
	}
	if (d->len > c->rpc->cfg.rndv_max) {
		c->st.proto_errors++;
		smart__rpc_fail(c, SMART_EPROTO,
				"rendezvous longer than we "
				"take");
		return;
	}
	c->rin.h = m->h;
	c->rin.d = *d;
	c->rin.t_start = smart__worker_now(c->rpc->w);
	c->rin.state = RPC_RIN_NONE;
	rin_begin(c);
}

static void rin_end(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_rin *r = &c->rin;

	if (r->state == RPC_RIN_READING)
		pages_put(&rpc->land_pg, r->page, r->npages);
	else if (r->state == RPC_RIN_WAIT_MEM)
		rpc->land_waiters--;
	r->state = RPC_RIN_NONE;
}

/* A READ fragment completed: more go; after the last, the CRC is checked
 * and the message delivered, DONE sent and what was held handled. */
void smart__rndv_read_done(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;
	struct rpc_rin *r = &c->rin;
	struct smart_msg_hdr h;
	const uint8_t *land;

	if (r->state != RPC_RIN_READING || r->done == r->posted)
		return;
	if (++r->done < r->nfrag) {
		post_reads(c);
		return;
	}
	land = page_addr(&rpc->land_pg, r->page);
	if (smart_crc32c(0, land, r->d.len) != r->d.crc &&
	    !SMART_M_RPC_NO_RNDV_CRC) {
		c->st.proto_errors++;
		smart__rpc_fail(c, SMART_EPROTO,
				"rendezvous payload corrupt "
				"(CRC-32C mismatch)");
		return;
	}
	h = r->h; /* flags kept: RNDV and TRACE tell the trace */
	h.len = r->d.len;
	c->st.rndv_recv++;
	smart__rpc_deliver(c, &h, land, r->d.len);
	if (c->state != RPC_C_LIVE)
		return;
	smart__rndv_send_done(c, r->d.rid);
	rin_end(c);
	if (rpc->land_waiters)
		smart__rndv_retry(rpc);
	smart__rpc_held_drain(c);
}

/* Landing pages came back: the connections waiting for some try again. */
static void smart__rndv_retry(struct smart_rpc *rpc)
{
	for (uint32_t i = 0; i < rpc->cfg.max_conns && rpc->land_waiters; i++) {
		struct smart_rpc_conn *c = rpc->conns[i];

		if (c && c->state == RPC_C_LIVE &&
		    c->rin.state == RPC_RIN_WAIT_MEM)
			rin_begin(c);
	}
}

/* c ends: its staging region (a fresh one per connection: the peer may
 * keep its mapping; RPC_RNDV_STAGE_REUSED hands it on), its landing and
 * the peer's region go.  Idempotent. */
void smart__rndv_conn_drop(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;

	if (SMART_M_RPC_RNDV_STAGE_REUSED && !rpc->stage_spare) {
		rpc->stage_spare = c->stage_pg.mr;
		c->stage_pg.mr = NULL;
	}
	pages_close(rpc, &c->stage_pg);
	free(c->stages);
	c->stages = NULL;
	rin_end(c);
	if (c->remote) {
		rpc->tp->remote_detach(c->remote);
		c->remote = NULL;
	}
	if (rpc->land_waiters)
		smart__rndv_retry(rpc);
}
