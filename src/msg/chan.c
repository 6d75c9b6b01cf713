/*
 * One-sided channels (include/smart/chan.h, docs/rpc.md §17): a
 * connection whose consumer registered a ring of slots x bytes for that
 * one producer, which WRITEs slot seq % slots from its own registered
 * copy of the ring.  Credits are the connection's seq-ack window with
 * window = slots (docs/rpc.md §4): the consumer acks a slot only when the
 * application releases it, so the producer never writes a slot still
 * being read, and a WRITE_IMM always finds a receive.
 *
 * Ring slot layout (the consumer's region, slot i at i x bytes):
 *   IMM     [0, 16) {u32 len, u32 0, u64 user}, [16, 16 + len) payload;
 *           the WRITE_IMM's length must be 16 + len
 *   FOOTER  [0, len) payload; [bytes - 24, bytes) {u64 user, u32 len,
 *           u32 crc, u64 seq}, crc = CRC-32C(payload, user, len, seq),
 *           seq = the slot's sequence number + 1 (never 0: the ring
 *           starts zeroed)
 * All little-endian (the hosts' order: the library runs on x86-64 and
 * arm64 little-endian only).
 *
 * Invariants (also msg_int.h, struct smart_chan): every word the producer
 * wrote is read once into a local and checked before anything is
 * addressed with it; every address is within the ring (slot < slots,
 * len <= bytes - header or footer).  A failed check cuts the producer off
 * (SMART_EPROTO, counted) and every later next returns it.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "msg/msg_int.h"
#include "util/config.h"
#include "util/log.h"
#include "util/mutant.h"

_Static_assert(SMART_CHAN_IMM_HDR == 16 && SMART_CHAN_FOOTER_LEN == 24,
	       "slot layouts (docs/rpc.md §17)");

struct chan_hdr { /* IMM: a slot's first 16 bytes */
	uint32_t len, zero;
	uint64_t user;
};

struct chan_footer { /* FOOTER: a slot's last 24 bytes */
	uint64_t user;
	uint32_t len, crc;
	uint64_t seq;
};

_Static_assert(sizeof(struct chan_hdr) == SMART_CHAN_IMM_HDR &&
		       sizeof(struct chan_footer) == SMART_CHAN_FOOTER_LEN &&
		       offsetof(struct chan_footer, seq) == 16,
	       "the remote layouts of a slot");

void smart_chan_config_init(struct smart_chan_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->struct_size = sizeof(*cfg);
}

/* The caller's config with its defaults, checked (wire/proto.h ranges). */
static int cfg_fill(const struct smart_chan_config *in,
		    struct smart_chan_config *o)
{
	smart_chan_config_init(o);
	if (in && smart__config_take(o, sizeof(*o),
				     _Alignof(struct smart_chan_config), in))
		return SMART_EINVAL;
	if (!o->slots)
		o->slots = 8;
	if (!o->slot_bytes)
		o->slot_bytes = 32u << 10;
	if (o->slots < SMART_PROTO_CHAN_SLOTS_MIN ||
	    o->slots > SMART_PROTO_CHAN_SLOTS_MAX ||
	    (o->slots & (o->slots - 1)) ||
	    o->slot_bytes < SMART_PROTO_CHAN_BYTES_MIN ||
	    o->slot_bytes > SMART_PROTO_CHAN_BYTES_MAX || o->slot_bytes % 64 ||
	    o->mode >= SMART_PROTO_CHAN_MODES)
		return SMART_EINVAL;
	return 0;
}

static uint8_t *slot_at(const struct smart_chan *ch, uint64_t seq)
{
	return (uint8_t *)ch->mr->addr +
	       (size_t)(seq & (ch->slots - 1)) * ch->bytes;
}

/* A channel of ours, its ring (consumer: shareable, for the producer's
 * WRITEs; producer: private, the WRITEs' source). */
static int chan_new(struct smart_rpc *rpc, int producer,
		    const struct rpc_chan_hs *hs, struct smart_chan **out)
{
	struct smart_chan *ch = calloc(1, sizeof(*ch));
	int rc;

	if (!ch)
		return SMART_ENOMEM;
	ch->rpc = rpc;
	ch->producer = producer;
	ch->slots = hs->slots;
	ch->bytes = hs->bytes;
	ch->mode = hs->mode;
	ch->tag = hs->tag;
	/* FOOTER: a slot still landing after the keepalive bound has a
	 * producer that is stopped, dead or lying */
	ch->torn_cycles = rpc->ka_cycles * rpc->cfg.keepalive_misses;
	if (!producer && hs->mode == SMART_CHAN_IMM)
		ch->lens = calloc(hs->slots, sizeof(*ch->lens));
	rc = !producer && hs->mode == SMART_CHAN_IMM && !ch->lens ?
		     SMART_ENOMEM :
		     rpc->tp->mr_alloc(rpc->dom, (size_t)hs->slots * hs->bytes,
				       0, !producer, &ch->mr);
	if (rc) {
		free(ch->lens);
		free(ch);
		return rc;
	}
	*out = ch;
	return 0;
}

void smart__chan_free(struct smart_chan *ch)
{
	if (!ch->producer && ch->mode == SMART_CHAN_FOOTER)
		ch->rpc->footer_chans--;
	if (ch->conn)
		ch->conn->chan = NULL;
	if (ch->mr)
		ch->rpc->tp->mr_free(ch->rpc->dom, ch->mr);
	free(ch->lens);
	free(ch);
}

/* ---- handshake (peer.c) ------------------------------------------------ */

int smart_chan_listen(smart_rpc_t *rpc, smart_chan_accept_fn fn, void *arg)
{
	if (!rpc)
		return SMART_EINVAL;
	rpc->chan_fn = fn;
	rpc->chan_arg = arg;
	return 0;
}

/* A PEER_CONNECT asking for a channel (checked by the wire decoder):
 * accepted when the application listens for channels and our window
 * (the receives and send queue c was made with) holds its slots. */
int smart__chan_accept_prep(struct smart_rpc_conn *c,
			    const struct smart_proto_peer *in)
{
	struct rpc_chan_hs hs = { in->ch_slots, in->ch_bytes, in->ch_mode,
				  in->ch_tag };
	struct smart_chan *ch;
	int rc;

	if (!c->rpc->chan_fn || in->ch_slots > c->window)
		return SMART_EACCES;
	rc = chan_new(c->rpc, 0, &hs, &ch);
	if (rc)
		return rc;
	ch->conn = c;
	c->chan = ch;
	smart__rpc_set_window(c, ch->slots);
	if (ch->mode == SMART_CHAN_FOOTER)
		c->rpc->footer_chans++;
	return 0;
}

/* The handshake is done: the channel goes to the application. */
void smart__chan_accepted(struct smart_rpc_conn *c)
{
	struct smart_rpc *rpc = c->rpc;

	rpc->chan_fn(c->chan, c->chan->tag, rpc->chan_arg);
}

/* Our PEER frame's channel section (the consumer's with its ring). */
void smart__chan_fill(const struct smart_rpc_conn *c,
		      struct smart_proto_peer *m)
{
	const struct smart_chan *ch = c->chan;

	m->chan = 1;
	m->ch_slots = ch->slots;
	m->ch_bytes = ch->bytes;
	m->ch_mode = ch->mode;
	m->ch_tag = ch->tag;
	m->ring_len = 0;
	if (ch->producer)
		return;
	m->ring_len = sizeof(m->ring);
	if (c->rpc->tp->region_blob(c->rpc->dom, ch->mr, m->ring, &m->ring_len))
		m->ring_len = 0; /* peer_fill refuses it */
}

int smart__chan_fd(const struct smart_rpc_conn *c)
{
	return c->chan->mr->fd;
}

/* The consumer's ACCEPT (producer side): the channel we asked for, and
 * its ring, which may span what we asked rounded up to 2 MiB (a huge
 * page, the largest a transport rounds a region to) and no more. */
int smart__chan_attach(struct smart_rpc_conn *c,
		       const struct smart_proto_peer *peer, int fd)
{
	struct smart_rpc *rpc = c->rpc;
	const struct smart_chan *ch = c->chan;
	uint64_t need = (uint64_t)ch->slots * ch->bytes, span;
	uint64_t allow = (need + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);

	if (peer->ch_slots != ch->slots || peer->ch_bytes != ch->bytes ||
	    peer->ch_mode != ch->mode || peer->ch_tag != ch->tag ||
	    rpc->tp->remote_span(peer->ring, peer->ring_len, &span) ||
	    span < need || span > allow) {
		smart__rpc_fd_drop(fd);
		c->st.proto_errors++;
		return SMART_EPROTO;
	}
	return rpc->tp->remote_attach(rpc->dom, peer->ring, peer->ring_len, fd,
				      &c->remote);
}

/* ---- producer ---------------------------------------------------------- */

int smart_chan_open(smart_rpc_t *rpc, const char *hostport,
		    const struct smart_chan_config *cfg, smart_chan_t **out)
{
	struct smart_chan_config o;
	struct rpc_chan_hs hs;
	struct smart_chan *ch;
	struct smart_rpc_conn *c;
	int rc;

	if (!rpc || !hostport || !out || rpc->in_handler || cfg_fill(cfg, &o) ||
	    o.slots > rpc->cfg.window)
		return SMART_EINVAL;
	hs = (struct rpc_chan_hs){ o.slots, o.slot_bytes, o.mode, o.tag };
	rc = chan_new(rpc, 1, &hs, &ch);
	if (rc)
		return rc;
	rc = smart__rpc_dial(rpc, hostport, ch, &c);
	if (rc) {
		smart__chan_free(ch);
		return rc;
	}
	*out = ch;
	return 0;
}

static uint32_t chan_cap(const struct smart_chan *ch)
{
	return ch->bytes - (ch->mode == SMART_CHAN_IMM ? SMART_CHAN_IMM_HDR :
							 SMART_CHAN_FOOTER_LEN);
}

int smart_chan_reserve(smart_chan_t *ch, void **buf, uint32_t *cap)
{
	int rc;

	if (!ch || !buf || !cap || !ch->producer)
		return SMART_EINVAL;
	if (ch->reserved)
		return SMART_EBUSY;
	if (!ch->conn)
		return SMART_ECONN;
	if (!smart__rpc_chan_room_now(ch->conn))
		ch->st.credit_stalls++;
	rc = smart__rpc_chan_room(ch->conn);
	if (rc)
		return rc;
	ch->reserved = 1;
	*buf = slot_at(ch, ch->seq) +
	       (ch->mode == SMART_CHAN_IMM ? SMART_CHAN_IMM_HDR : 0);
	*cap = chan_cap(ch);
	return 0;
}

/* FOOTER's CRC: the payload, then user, len and seq as they lie in the
 * footer (the first 12 bytes, then the last 8). */
static uint32_t footer_crc(const uint8_t *payload, const struct chan_footer *f)
{
	uint32_t crc = smart_crc32c(0, payload, f->len);

	crc = smart_crc32c(crc, f, 12);
	return smart_crc32c(crc, &f->seq, sizeof(f->seq));
}

int smart_chan_commit(smart_chan_t *ch, uint32_t len, uint64_t user)
{
	struct smart_rpc_conn *c;
	struct smart_tp_wr wr = { 0 };
	uint8_t *slot;

	if (!ch || !ch->producer || !ch->reserved || len > chan_cap(ch))
		return SMART_EINVAL;
	c = ch->conn;
	ch->reserved = 0;
	if (!c || c->state != RPC_C_LIVE)
		return SMART_ECONN;
	slot = slot_at(ch, ch->seq);
	if (ch->mode == SMART_CHAN_IMM) {
		struct chan_hdr h = { len, 0, user };

		memcpy(slot, &h, sizeof(h));
		wr.opcode = SMART_TP_WRITE_IMM;
		wr.len = SMART_CHAN_IMM_HDR + len;
	} else {
		struct chan_footer f = { user, len, 0, ch->seq + 1 };

		f.crc = footer_crc(slot, &f);
		memcpy(slot + ch->bytes - SMART_CHAN_FOOTER_LEN, &f, sizeof(f));
		wr.opcode = SMART_TP_WRITE;
		wr.len = ch->bytes;
	}
	wr.local = slot;
	wr.lkey = ch->mr->lkey;
	wr.remote = c->rpc->tp->remote_base(c->remote) +
		    (uint64_t)(slot - (uint8_t *)ch->mr->addr);
	wr.rkey = c->rpc->tp->remote_rkey(c->remote);
	smart__rpc_chan_post(c, &wr, (uint32_t)(ch->seq & (ch->slots - 1)));
	ch->seq++;
	ch->st.slots++;
	ch->st.footer_slots += ch->mode == SMART_CHAN_FOOTER;
	ch->st.bytes += len;
	c->st.bytes_sent += len;
	return 0;
}

/* ---- consumer ---------------------------------------------------------- */

/* A WRITE_IMM of kind CHAN arrived on c (rpc.c): 0 when it is the next
 * slot, in the producer's credits, of a length the slot holds. */
int smart__chan_landed(struct smart_rpc_conn *c, const struct smart_tp_wc *wc)
{
	struct smart_chan *ch = c->chan;
	uint32_t slot = wc->imm >> SMART_MSG_CHAN_SLOT_SHIFT;

	if (!ch || ch->producer || ch->mode != SMART_CHAN_IMM)
		return SMART_EPROTO;
	if (!SMART_M_RPC_CHAN_TRUSTS_SLOT &&
	    (wc->recv_op != SMART_TP_WRITE_IMM ||
	     slot != (ch->landed & (ch->slots - 1)) ||
	     wc->len < SMART_CHAN_IMM_HDR || wc->len > ch->bytes ||
	     ch->landed - ch->released >= ch->slots))
		return SMART_EPROTO;
	ch->lens[ch->landed & (ch->slots - 1)] = wc->len;
	ch->landed++;
	return 0;
}

/* Where the endpoint counts what the channel does (smart_rpc_stats,
 * smart-stat): its connection, or once that is gone the endpoint's
 * account of past connections; slots that landed are still taken, and a
 * torn one still cut, after the producer left. */
static struct smart_rpc_stats *chan_rs(struct smart_chan *ch)
{
	return ch->conn ? &ch->conn->st : &ch->rpc->past;
}

/* Cut the producer off: it broke the protocol. */
static int chan_cut(struct smart_chan *ch, const char *why)
{
	ch->err = SMART_EPROTO;
	ch->st.proto_errors++;
	if (ch->conn || !SMART_M_RPC_CHAN_UNCOUNTED_GONE)
		chan_rs(ch)->proto_errors++;
	if (ch->conn)
		smart__rpc_fail(ch->conn, SMART_EPROTO, why);
	return SMART_EPROTO;
}

/* Nothing (more) to take: the producer gone, or not yet. */
static int chan_none(const struct smart_chan *ch)
{
	return !ch->conn || ch->conn->state != RPC_C_LIVE ? SMART_ECONN :
							    SMART_EAGAIN;
}

static void chan_took(struct smart_chan *ch, uint32_t len)
{
	ch->seq++;
	ch->st.slots++;
	ch->st.footer_slots += ch->mode == SMART_CHAN_FOOTER;
	ch->st.bytes += len;
	if (ch->conn || !SMART_M_RPC_CHAN_UNCOUNTED_GONE) {
		chan_rs(ch)->chan_slots_recv++;
		chan_rs(ch)->bytes_recv += len;
	}
	if (SMART_M_RPC_CHAN_ACK_EARLY && ch->conn)
		smart__rpc_chan_release(ch->conn);
}

static int next_imm(struct smart_chan *ch, const void **buf, uint32_t *len,
		    uint64_t *user)
{
	const uint8_t *slot = slot_at(ch, ch->seq);
	struct chan_hdr h;

	if (ch->seq == ch->landed)
		return chan_none(ch);
	memcpy(&h, slot, sizeof(h)); /* read once: the producer's */
	if ((h.zero || h.len != ch->lens[ch->seq & (ch->slots - 1)] -
					SMART_CHAN_IMM_HDR) &&
	    !SMART_M_RPC_CHAN_TRUSTS_HDR)
		return chan_cut(ch, "a channel slot's header does not match "
				    "its WRITE");
	*buf = slot + SMART_CHAN_IMM_HDR;
	*len = h.len;
	*user = h.user;
	chan_took(ch, h.len);
	return 0;
}

/* The slot is still landing (its words come in any order, transport
 * rule 4): again later, up to the bound. */
static int footer_torn(struct smart_chan *ch)
{
	uint64_t now = smart__rdtsc();

	ch->st.torn_repolls++;
	if (ch->conn || !SMART_M_RPC_CHAN_UNCOUNTED_GONE)
		chan_rs(ch)->chan_torn++;
	if (!ch->torn_since) {
		ch->torn_since = now;
		return SMART_EAGAIN;
	}
	if (now - ch->torn_since > ch->torn_cycles)
		return chan_cut(ch, "a channel slot never settled (its CRC "
				    "stays wrong)");
	return SMART_EAGAIN;
}

static int next_footer(struct smart_chan *ch, const void **buf, uint32_t *len,
		       uint64_t *user)
{
	const uint8_t *slot = slot_at(ch, ch->seq);
	const uint8_t *fp = slot + ch->bytes - SMART_CHAN_FOOTER_LEN;
	uint64_t want = ch->seq + 1,
		 old = ch->seq >= ch->slots ? want - ch->slots : 0;
	struct chan_footer f;

	/* the seq word: one aligned 8-byte load, atomic by rule 4 */
	f.seq = __atomic_load_n((const uint64_t *)(fp + 16), __ATOMIC_ACQUIRE);
	if (f.seq == old && !SMART_M_RPC_CHAN_TRUSTS_FOOTER)
		return chan_none(ch);
	if (f.seq != want && !SMART_M_RPC_CHAN_TRUSTS_FOOTER)
		return chan_cut(ch, "a channel slot's footer names another "
				    "slot");
	memcpy(&f, fp, 16); /* read once: the producer's */
	if (f.len > chan_cap(ch)) {
		if (SMART_M_RPC_CHAN_TRUSTS_FOOTER)
			f.len = chan_cap(ch); /* the mutant's own bound */
		else
			return chan_cut(ch, "a channel slot's footer length "
					    "is out of range");
	}
	if (footer_crc(slot, &f) != f.crc && !SMART_M_RPC_CHAN_NO_CRC)
		return footer_torn(ch);
	ch->torn_since = 0;
	*buf = slot;
	*len = f.len;
	*user = f.user;
	chan_took(ch, f.len);
	return 0;
}

int smart_chan_next(smart_chan_t *ch, const void **buf, uint32_t *len,
		    uint64_t *user)
{
	if (!ch || !buf || !len || !user || ch->producer)
		return SMART_EINVAL;
	if (ch->err)
		return ch->err;
	return ch->mode == SMART_CHAN_IMM ? next_imm(ch, buf, len, user) :
					    next_footer(ch, buf, len, user);
}

int smart_chan_release(smart_chan_t *ch)
{
	if (!ch || ch->producer || ch->released == ch->seq)
		return SMART_EINVAL;
	ch->released++;
	if (ch->conn && !SMART_M_RPC_CHAN_ACK_EARLY)
		smart__rpc_chan_release(ch->conn);
	return 0;
}

/* ---- both -------------------------------------------------------------- */

int smart_chan_close(smart_chan_t *ch)
{
	struct smart_rpc_conn *c;

	if (!ch)
		return 0;
	c = ch->conn;
	if (c) {
		c->chan = NULL;
		ch->conn = NULL;
		smart__rpc_chan_conn_close(c);
	}
	smart__chan_free(ch);
	return 0;
}

int smart_chan_stats_sized(const smart_chan_t *ch, struct smart_chan_stats *out,
			   size_t size)
{
	struct smart_chan_stats s;

	if (!ch || !out)
		return SMART_EINVAL;
	s = ch->st;
	return smart__out_give(out, size, &s, sizeof(s));
}
