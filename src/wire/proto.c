/*
 * Bootstrap wire format: encoders and strict decoders (docs/protocol.md).
 *
 * Every multi-byte field is little-endian and read or written through the
 * smart__put and smart__get helpers of util/bytes.h, so host byte order and
 * alignment never matter.
 * Decoders walk the payload with a bounds-checked cursor (struct rd); a read
 * past the end marks the cursor bad instead of touching memory, and a
 * decoder succeeds only when the cursor is good and exactly at the end.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "smart/status.h"
#include "util/bytes.h"
#include "wire/limits.h"
#include "wire/proto.h"
#include "wire/superblock.h"

_Static_assert(SMART_PROTO_FRAME_MAX >=
			       SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX &&
		       SMART_PROTO_FRAME_MAX >=
			       SMART_PROTO_HDR_LEN + SMART_PROTO_WELCOME_MAX,
	       "a buffer of FRAME_MAX holds any frame");

/* --- bounds-checked reader --- */

struct rd {
	const uint8_t *p;
	size_t len, off;
	int bad;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
	const uint8_t *q;

	if (r->bad || n > r->len - r->off) {
		r->bad = 1;
		return NULL;
	}
	q = r->p + r->off;
	r->off += n;
	return q;
}

static uint8_t rd8(struct rd *r)
{
	const uint8_t *q = rd_take(r, 1);

	return q ? q[0] : 0;
}

static uint16_t rd16(struct rd *r)
{
	const uint8_t *q = rd_take(r, 2);

	return q ? smart__get16(q) : 0;
}

static uint32_t rd32(struct rd *r)
{
	const uint8_t *q = rd_take(r, 4);

	return q ? smart__get32(q) : 0;
}

static uint64_t rd64(struct rd *r)
{
	const uint8_t *q = rd_take(r, 8);

	return q ? smart__get64(q) : 0;
}

/* Copy n bytes out; dst has room for n + 1 when nul is set. */
static void rd_copy(struct rd *r, void *dst, size_t n, int nul)
{
	const uint8_t *q = rd_take(r, n);

	if (q && n)
		memcpy(dst, q, n);
	if (nul)
		((char *)dst)[q ? n : 0] = '\0';
}

/* Zero reserved field: anything else makes the message non-canonical. */
static void rd_zero(struct rd *r, size_t n)
{
	const uint8_t *q = rd_take(r, n);

	for (size_t i = 0; q && i < n; i++)
		if (q[i])
			r->bad = 1;
}

static int rd_done(const struct rd *r)
{
	return !r->bad && r->off == r->len ? 0 : SMART_EPROTO;
}

/* Names and messages are printable ASCII so that logging them is safe. */
static int printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

int smart__proto_status_ok(int32_t s)
{
	return s <= 0 && s > SMART_E_LAST;
}

/* --- header --- */

/* Largest valid payload of a message type; 0 for an unknown type. */
static size_t smart__proto_max_payload(uint16_t type)
{
	switch (type) {
	case SMART_PROTO_HELLO:
		return SMART_PROTO_HELLO_MAX;
	case SMART_PROTO_WELCOME:
		return SMART_PROTO_WELCOME_MAX;
	case SMART_PROTO_ERROR:
		return SMART_PROTO_ERROR_MAX;
	case SMART_PROTO_QP_CONNECT:
		return SMART_PROTO_QPC_MAX;
	case SMART_PROTO_QP_ACCEPT:
		return SMART_PROTO_QPA_MAX;
	case SMART_PROTO_QP_CLOSE:
		return SMART_PROTO_QPCLOSE_LEN;
	case SMART_PROTO_BYE:
		return SMART_PROTO_BYE_LEN;
	case SMART_PROTO_PEER_CONNECT:
		return SMART_PROTO_PEER_MAX;
	case SMART_PROTO_PEER_ACCEPT:
		return SMART_PROTO_PEER_MAX;
	case SMART_PROTO_CHALLENGE:
		return SMART_PROTO_CHALLENGE_LEN;
	case SMART_PROTO_AUTH:
		return SMART_PROTO_AUTH_LEN;
	default:
		return 0;
	}
}

static int known_type(uint16_t t)
{
	return t >= SMART_PROTO_HELLO && t <= SMART_PROTO_AUTH;
}

int smart__proto_hdr_check(const void *buf, size_t avail,
			   struct smart_proto_hdr *h)
{
	static const uint8_t magic[4] = { 'S', 'M', 'R', 'T' };
	const uint8_t *p = buf;
	struct smart_proto_hdr t;

	/* Refuse garbage as soon as its first bytes arrive. */
	if (avail && memcmp(p, magic, avail < 4 ? avail : 4))
		return SMART_EPROTO;
	if (avail >= 6 && !known_type(smart__get16(p + 4)))
		return SMART_EPROTO;
	if (avail < SMART_PROTO_HDR_LEN)
		return SMART_EAGAIN;
	t.magic = smart__get32(p);
	t.type = smart__get16(p + 4);
	t.flags = smart__get16(p + 6);
	t.len = smart__get32(p + 8);
	if (t.flags || t.len > SMART_PROTO_MAX_PAYLOAD ||
	    t.len > smart__proto_max_payload(t.type))
		return SMART_EPROTO;
	*h = t;
	return 0;
}

/* Reserve a frame of payload length plen in buf; returns the payload. */
static uint8_t *frame(void *buf, size_t cap, uint16_t type, size_t plen,
		      size_t *len)
{
	uint8_t *p = buf;

	if (cap < SMART_PROTO_HDR_LEN || plen > cap - SMART_PROTO_HDR_LEN)
		return NULL;
	memset(p, 0, SMART_PROTO_HDR_LEN + plen);
	smart__put32(p, SMART_PROTO_MAGIC);
	smart__put16(p + 4, type);
	smart__put32(p + 8, (uint32_t)plen);
	*len = SMART_PROTO_HDR_LEN + plen;
	return p + SMART_PROTO_HDR_LEN;
}

/* --- HELLO / CHALLENGE / AUTH --- */

/* HELLO: version u16, transport length u8, 5 zero bytes, the dialer's
 * nonce, the transport name.  Nothing else: no secret. */
int smart__proto_enc_hello(const struct smart_proto_hello *m, void *buf,
			   size_t cap, size_t *len)
{
	size_t tl = strnlen(m->transport, sizeof(m->transport));
	uint8_t *p;

	if (tl == 0 || tl > SMART_PROTO_TRANSPORT_MAX ||
	    !printable(m->transport, tl))
		return SMART_EINVAL;
	p = frame(buf, cap, SMART_PROTO_HELLO, SMART_PROTO_HELLO_LEN(tl), len);
	if (!p)
		return SMART_ERANGE;
	smart__put16(p, m->version);
	p[2] = (uint8_t)tl;
	memcpy(p + 8, m->nonce, SMART_PROTO_NONCE_LEN);
	memcpy(p + 8 + SMART_PROTO_NONCE_LEN, m->transport, tl);
	return 0;
}

int smart__proto_dec_hello(const void *p, size_t len,
			   struct smart_proto_hello *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_hello t;
	size_t tl;

	memset(&t, 0, sizeof(t));
	t.version = rd16(&r);
	if (r.bad)
		return SMART_EPROTO;
	if (t.version != SMART_PROTO_VERSION) {
		m->version = t.version;
		return SMART_EVERSION;
	}
	tl = rd8(&r);
	rd_zero(&r, 5);
	if (tl == 0 || tl > SMART_PROTO_TRANSPORT_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.nonce, SMART_PROTO_NONCE_LEN, 0);
	rd_copy(&r, t.transport, tl, 1);
	if (rd_done(&r) || !printable(t.transport, tl))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

int smart__proto_enc_challenge(const struct smart_proto_challenge *m, void *buf,
			       size_t cap, size_t *len)
{
	uint8_t *p = frame(buf, cap, SMART_PROTO_CHALLENGE,
			   SMART_PROTO_CHALLENGE_LEN, len);

	if (!p)
		return SMART_ERANGE;
	memcpy(p, m->nonce, SMART_PROTO_NONCE_LEN);
	memcpy(p + SMART_PROTO_NONCE_LEN, m->proof, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_challenge(const void *p, size_t len,
			       struct smart_proto_challenge *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_challenge t;

	rd_copy(&r, t.nonce, SMART_PROTO_NONCE_LEN, 0);
	rd_copy(&r, t.proof, SMART_PROTO_TAG_LEN, 0);
	if (rd_done(&r))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

int smart__proto_enc_auth(const uint8_t proof[SMART_PROTO_TAG_LEN], void *buf,
			  size_t cap, size_t *len)
{
	uint8_t *p = frame(buf, cap, SMART_PROTO_AUTH, SMART_PROTO_AUTH_LEN,
			   len);

	if (!p)
		return SMART_ERANGE;
	memcpy(p, proof, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_auth(const void *p, size_t len,
			  uint8_t proof[SMART_PROTO_TAG_LEN])
{
	struct rd r = { p, len, 0, 0 };
	uint8_t t[SMART_PROTO_TAG_LEN];

	rd_copy(&r, t, sizeof(t), 0);
	if (rd_done(&r))
		return SMART_EPROTO;
	memcpy(proof, t, sizeof(t));
	return 0;
}

/* --- WELCOME --- */

static int welcome_valid(const struct smart_proto_welcome *m)
{
	static const uint8_t zero[SMART_PROTO_TOKEN_LEN];
	int fetch = m->flags & SMART_PROTO_WF_FETCH_FD;

	if (!smart__proto_status_ok(m->status) ||
	    m->blob_len > SMART_PROTO_BLOB_MAX ||
	    m->sock_len > SMART_PROTO_SOCK_MAX ||
	    (m->flags & ~SMART_PROTO_WF_FETCH_FD))
		return 0;
	if (m->status) /* a refusal carries nothing else */
		return !m->blade_id && !m->chunk_shift && !m->flags &&
		       !m->region_size && !m->blob_len && !m->sock_len &&
		       !m->lease_id && !m->lease_ms &&
		       !memcmp(m->token, zero, sizeof(zero));
	if (m->blade_id > SMART_WIRE_BLADE_ID_MAX ||
	    m->chunk_shift < SMART_CHUNK_SHIFT_MIN ||
	    m->chunk_shift > SMART_CHUNK_SHIFT_MAX ||
	    m->region_size < SMART_WIRE_REGION_MIN ||
	    m->region_size > SMART_WIRE_REGION_MAX ||
	    (m->region_size >> m->chunk_shift) < 2 || m->blob_len == 0 ||
	    m->lease_id == 0 || m->lease_ms < SMART_WIRE_LEASE_MS_MIN ||
	    m->lease_ms > SMART_WIRE_LEASE_MS_MAX)
		return 0;
	if (fetch)
		return m->sock_len > 0 && printable(m->sock, m->sock_len);
	return m->sock_len == 0 && !memcmp(m->token, zero, sizeof(zero));
}

int smart__proto_enc_welcome(const struct smart_proto_welcome *m, void *buf,
			     size_t cap, size_t *len)
{
	uint8_t *p;

	if (!welcome_valid(m) ||
	    strnlen(m->sock, sizeof(m->sock)) != m->sock_len)
		return SMART_EINVAL;
	p = frame(buf, cap, SMART_PROTO_WELCOME,
		  44 + m->blob_len + m->sock_len + SMART_PROTO_TAG_LEN, len);
	if (!p)
		return SMART_ERANGE;
	smart__put32(p, (uint32_t)m->status);
	smart__put16(p + 4, m->blade_id);
	p[6] = m->chunk_shift;
	p[7] = m->flags;
	smart__put64(p + 8, m->region_size);
	memcpy(p + 16, m->token, SMART_PROTO_TOKEN_LEN);
	smart__put16(p + 32, (uint16_t)m->blob_len);
	p[34] = (uint8_t)m->sock_len;
	smart__put16(p + 36, m->lease_id);
	smart__put32(p + 40, m->lease_ms);
	memcpy(p + 44, m->blob, m->blob_len);
	memcpy(p + 44 + m->blob_len, m->sock, m->sock_len);
	memcpy(p + 44 + m->blob_len + m->sock_len, m->tag, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_welcome(const void *p, size_t len,
			     struct smart_proto_welcome *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_welcome t;

	memset(&t, 0, sizeof(t));
	t.status = (int32_t)rd32(&r);
	t.blade_id = rd16(&r);
	t.chunk_shift = rd8(&r);
	t.flags = rd8(&r);
	t.region_size = rd64(&r);
	rd_copy(&r, t.token, SMART_PROTO_TOKEN_LEN, 0);
	t.blob_len = rd16(&r);
	t.sock_len = rd8(&r);
	rd_zero(&r, 1);
	t.lease_id = rd16(&r);
	rd_zero(&r, 2);
	t.lease_ms = rd32(&r);
	if (r.bad || t.blob_len > SMART_PROTO_BLOB_MAX ||
	    t.sock_len > SMART_PROTO_SOCK_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.blob, t.blob_len, 0);
	rd_copy(&r, t.sock, t.sock_len, 1);
	rd_copy(&r, t.tag, SMART_PROTO_TAG_LEN, 0);
	if (rd_done(&r) || !welcome_valid(&t))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

/* --- ERROR --- */

int smart__proto_enc_error(int32_t status, const char *msg, void *buf,
			   size_t cap, size_t *len)
{
	size_t ml = msg ? strnlen(msg, SMART_PROTO_ERRMSG_MAX + 1) : 0;
	uint8_t *p;

	if (status >= 0 || !smart__proto_status_ok(status) ||
	    ml > SMART_PROTO_ERRMSG_MAX || !printable(msg, ml))
		return SMART_EINVAL;
	p = frame(buf, cap, SMART_PROTO_ERROR, 8 + ml, len);
	if (!p)
		return SMART_ERANGE;
	smart__put32(p, (uint32_t)status);
	smart__put16(p + 4, SMART_PROTO_VERSION);
	smart__put16(p + 6, (uint16_t)ml);
	if (ml)
		memcpy(p + 8, msg, ml);
	return 0;
}

int smart__proto_dec_error(const void *p, size_t len,
			   struct smart_proto_error *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_error t;
	size_t ml;

	memset(&t, 0, sizeof(t));
	t.status = (int32_t)rd32(&r);
	t.version = rd16(&r);
	ml = rd16(&r);
	if (r.bad || ml > SMART_PROTO_ERRMSG_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.msg, ml, 1);
	if (rd_done(&r) || t.status >= 0 || !smart__proto_status_ok(t.status) ||
	    t.version == 0 || !printable(t.msg, ml))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

/* --- QP_CONNECT / QP_ACCEPT / QP_CLOSE / BYE --- */

int smart__proto_enc_qp_connect(const struct smart_proto_qp_connect *m,
				void *buf, size_t cap, size_t *len)
{
	uint8_t *p;

	if (m->blob_len == 0 || m->blob_len > SMART_PROTO_BLOB_MAX)
		return SMART_EINVAL;
	p = frame(buf, cap, SMART_PROTO_QP_CONNECT,
		  8 + m->blob_len + SMART_PROTO_TAG_LEN, len);
	if (!p)
		return SMART_ERANGE;
	smart__put32(p, m->req_id);
	smart__put16(p + 4, (uint16_t)m->blob_len);
	memcpy(p + 8, m->blob, m->blob_len);
	memcpy(p + 8 + m->blob_len, m->tag, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_qp_connect(const void *p, size_t len,
				struct smart_proto_qp_connect *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_qp_connect t;

	memset(&t, 0, sizeof(t));
	t.req_id = rd32(&r);
	t.blob_len = rd16(&r);
	rd_zero(&r, 2);
	if (r.bad || t.blob_len == 0 || t.blob_len > SMART_PROTO_BLOB_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.blob, t.blob_len, 0);
	rd_copy(&r, t.tag, SMART_PROTO_TAG_LEN, 0);
	if (rd_done(&r))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

/* --- PEER_CONNECT / PEER_ACCEPT --- */

/* The channel section, when there is one (wire/proto.h). */
static int chan_valid(uint16_t type, const struct smart_proto_peer *m)
{
	if (!m->chan)
		return m->ring_len == 0;
	return m->chan == 1 && m->ch_slots >= SMART_PROTO_CHAN_SLOTS_MIN &&
	       m->ch_slots <= SMART_PROTO_CHAN_SLOTS_MAX &&
	       !(m->ch_slots & (m->ch_slots - 1)) && m->window == m->ch_slots &&
	       m->ch_bytes >= SMART_PROTO_CHAN_BYTES_MIN &&
	       m->ch_bytes <= SMART_PROTO_CHAN_BYTES_MAX &&
	       !(m->ch_bytes % 64) && m->ch_mode < SMART_PROTO_CHAN_MODES &&
	       (type == SMART_PROTO_PEER_CONNECT ?
			m->ring_len == 0 :
			m->ring_len >= 1 &&
				m->ring_len <= SMART_PROTO_BLOB_MAX &&
				m->rndv_max == 0);
}

static int peer_valid(uint16_t type, const struct smart_proto_peer *m)
{
	return chan_valid(type, m) &&
	       (type == SMART_PROTO_PEER_ACCEPT ||
		(type == SMART_PROTO_PEER_CONNECT && m->id == 0)) &&
	       m->window >= 1 && m->window <= SMART_PROTO_PEER_WINDOW_MAX &&
	       m->max_msg >= SMART_PROTO_PEER_MSG_MIN &&
	       m->max_msg <= SMART_PROTO_PEER_MSG_MAX && m->blob_len >= 1 &&
	       m->blob_len <= SMART_PROTO_BLOB_MAX &&
	       (m->rndv_max ?
			m->rndv_max >= m->max_msg &&
				m->rndv_max <= SMART_PROTO_PEER_RNDV_MAX &&
				m->rblob_len >= 1 &&
				m->rblob_len <= SMART_PROTO_BLOB_MAX :
			m->rblob_len == 0);
}

int smart__proto_enc_peer(uint16_t type, const struct smart_proto_peer *m,
			  void *buf, size_t cap, size_t *len)
{
	uint8_t *p;

	if (!peer_valid(type, m))
		return SMART_EINVAL;
	size_t cl = m->chan ? SMART_PROTO_PEER_CHAN_LEN + m->ring_len : 0;

	p = frame(buf, cap, type,
		  20 + m->blob_len + m->rblob_len + cl + SMART_PROTO_TAG_LEN,
		  len);
	if (!p)
		return SMART_ERANGE;
	smart__put32(p, m->id);
	smart__put32(p + 4, m->window);
	smart__put32(p + 8, m->max_msg);
	smart__put16(p + 12, (uint16_t)m->blob_len);
	smart__put16(p + 14, (uint16_t)m->rblob_len);
	smart__put32(p + 16, m->rndv_max);
	memcpy(p + 20, m->blob, m->blob_len);
	memcpy(p + 20 + m->blob_len, m->rblob, m->rblob_len);
	p += 20 + m->blob_len + m->rblob_len;
	if (m->chan) {
		smart__put32(p, m->chan);
		smart__put32(p + 4, m->ch_slots);
		smart__put32(p + 8, m->ch_bytes);
		smart__put32(p + 12, m->ch_mode);
		smart__put32(p + 16, m->ch_tag);
		smart__put16(p + 20, (uint16_t)m->ring_len);
		smart__put16(p + 22, 0);
		memcpy(p + 24, m->ring, m->ring_len);
		p += cl;
	}
	memcpy(p, m->tag, SMART_PROTO_TAG_LEN);
	return 0;
}

/* The channel section: there iff more than the tag is left. */
static void chan_dec(struct rd *r, struct smart_proto_peer *t)
{
	if (r->bad || r->len - r->off <= SMART_PROTO_TAG_LEN)
		return;
	t->chan = rd32(r);
	t->ch_slots = rd32(r);
	t->ch_bytes = rd32(r);
	t->ch_mode = rd32(r);
	t->ch_tag = rd32(r);
	t->ring_len = rd16(r);
	rd_zero(r, 2);
	if (!t->chan || t->ring_len > SMART_PROTO_BLOB_MAX)
		r->bad = 1; /* a section is there: it says so */
	else
		rd_copy(r, t->ring, t->ring_len, 0);
}

int smart__proto_dec_peer(uint16_t type, const void *p, size_t len,
			  struct smart_proto_peer *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_peer t;

	memset(&t, 0, sizeof(t));
	t.id = rd32(&r);
	t.window = rd32(&r);
	t.max_msg = rd32(&r);
	t.blob_len = rd16(&r);
	t.rblob_len = rd16(&r);
	t.rndv_max = rd32(&r);
	if (r.bad || t.blob_len > SMART_PROTO_BLOB_MAX ||
	    t.rblob_len > SMART_PROTO_BLOB_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.blob, t.blob_len, 0);
	rd_copy(&r, t.rblob, t.rblob_len, 0);
	chan_dec(&r, &t);
	rd_copy(&r, t.tag, SMART_PROTO_TAG_LEN, 0);
	if (rd_done(&r) || !peer_valid(type, &t))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

static int qpa_valid(const struct smart_proto_qp_accept *m)
{
	if (!smart__proto_status_ok(m->status) ||
	    m->blob_len > SMART_PROTO_BLOB_MAX)
		return 0;
	if (m->status)
		return m->blob_len == 0 && m->responder_id == 0;
	return m->blob_len > 0;
}

int smart__proto_enc_qp_accept(const struct smart_proto_qp_accept *m, void *buf,
			       size_t cap, size_t *len)
{
	uint8_t *p;

	if (!qpa_valid(m))
		return SMART_EINVAL;
	p = frame(buf, cap, SMART_PROTO_QP_ACCEPT,
		  16 + m->blob_len + SMART_PROTO_TAG_LEN, len);
	if (!p)
		return SMART_ERANGE;
	smart__put32(p, m->req_id);
	smart__put32(p + 4, (uint32_t)m->status);
	smart__put32(p + 8, m->responder_id);
	smart__put16(p + 12, (uint16_t)m->blob_len);
	memcpy(p + 16, m->blob, m->blob_len);
	memcpy(p + 16 + m->blob_len, m->tag, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_qp_accept(const void *p, size_t len,
			       struct smart_proto_qp_accept *m)
{
	struct rd r = { p, len, 0, 0 };
	struct smart_proto_qp_accept t;

	memset(&t, 0, sizeof(t));
	t.req_id = rd32(&r);
	t.status = (int32_t)rd32(&r);
	t.responder_id = rd32(&r);
	t.blob_len = rd16(&r);
	rd_zero(&r, 2);
	if (r.bad || t.blob_len > SMART_PROTO_BLOB_MAX)
		return SMART_EPROTO;
	rd_copy(&r, t.blob, t.blob_len, 0);
	rd_copy(&r, t.tag, SMART_PROTO_TAG_LEN, 0);
	if (rd_done(&r) || !qpa_valid(&t))
		return SMART_EPROTO;
	*m = t;
	return 0;
}

int smart__proto_enc_qp_close(uint32_t responder_id,
			      const uint8_t tag[SMART_PROTO_TAG_LEN], void *buf,
			      size_t cap, size_t *len)
{
	uint8_t *p = frame(buf, cap, SMART_PROTO_QP_CLOSE,
			   SMART_PROTO_QPCLOSE_LEN, len);

	if (!p)
		return SMART_ERANGE;
	smart__put32(p, responder_id);
	memcpy(p + 4, tag, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_qp_close(const void *p, size_t len, uint32_t *id,
			      uint8_t tag[SMART_PROTO_TAG_LEN])
{
	struct rd r = { p, len, 0, 0 };
	uint8_t t[SMART_PROTO_TAG_LEN];
	uint32_t v = rd32(&r);

	rd_copy(&r, t, sizeof(t), 0);
	if (rd_done(&r))
		return SMART_EPROTO;
	*id = v;
	memcpy(tag, t, sizeof(t));
	return 0;
}

int smart__proto_enc_bye(const uint8_t tag[SMART_PROTO_TAG_LEN], void *buf,
			 size_t cap, size_t *len)
{
	uint8_t *p = frame(buf, cap, SMART_PROTO_BYE, SMART_PROTO_BYE_LEN, len);

	if (!p)
		return SMART_ERANGE;
	memcpy(p, tag, SMART_PROTO_TAG_LEN);
	return 0;
}

int smart__proto_dec_bye(const void *p, size_t len,
			 uint8_t tag[SMART_PROTO_TAG_LEN])
{
	if (len != SMART_PROTO_BYE_LEN)
		return SMART_EPROTO;
	memcpy(tag, p, SMART_PROTO_TAG_LEN);
	return 0;
}

/* --- addresses --- */

/* Port: 1..5 digits, no sign, no spaces, at most 65535. */
static int parse_port(const char *s, uint16_t *port)
{
	uint32_t v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 5)
		return SMART_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return SMART_EINVAL;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v > 65535)
		return SMART_EINVAL;
	*port = (uint16_t)v;
	return 0;
}

static int addr_v6(const char *host, size_t hl, uint16_t port, void *ss,
		   uint32_t *ss_len)
{
	struct sockaddr_in6 a;
	char h[INET6_ADDRSTRLEN];

	if (hl >= sizeof(h))
		return SMART_EINVAL;
	memcpy(h, host, hl);
	h[hl] = '\0';
	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons(port);
	if (inet_pton(AF_INET6, h, &a.sin6_addr) != 1)
		return SMART_EINVAL;
	memcpy(ss, &a, sizeof(a));
	*ss_len = sizeof(a);
	return 0;
}

static int addr_v4(const char *host, size_t hl, uint16_t port, void *ss,
		   uint32_t *ss_len)
{
	struct sockaddr_in a;
	char h[INET_ADDRSTRLEN];

	if (hl == 9 && !memcmp(host, "localhost", 9)) {
		host = "127.0.0.1";
		hl = 9;
	}
	if (hl >= sizeof(h))
		return SMART_EINVAL;
	memcpy(h, host, hl);
	h[hl] = '\0';
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	/* inet_pton takes only the strict dotted-quad form. */
	if (inet_pton(AF_INET, h, &a.sin_addr) != 1)
		return SMART_EINVAL;
	memcpy(ss, &a, sizeof(a));
	*ss_len = sizeof(a);
	return 0;
}

int smart__proto_parse_addr(const char *hostport, void *ss, size_t ss_cap,
			    uint32_t *ss_len)
{
	const char *colon, *host = hostport;
	size_t hl;
	uint16_t port;

	if (!hostport || !ss || ss_cap < sizeof(struct sockaddr_storage))
		return SMART_EINVAL;
	colon = strrchr(hostport, ':');
	if (!colon || parse_port(colon + 1, &port))
		return SMART_EINVAL;
	hl = (size_t)(colon - hostport);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']')
		return addr_v6(host + 1, hl - 2, port, ss, ss_len);
	return addr_v4(host, hl, port, ss, ss_len);
}
