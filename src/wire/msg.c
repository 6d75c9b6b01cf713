/*
 * The messaging wire format (msg.h): header encoding and the strict
 * decoder every received SEND goes through before anything trusts it.
 */
#include <string.h>

#include "smart/status.h"
#include "util/bytes.h"
#include "util/mutant.h"
#include "wire/msg.h"

void smart__msg_put_hdr(void *buf, const struct smart_msg_hdr *h)
{
	uint8_t *p = buf;

	p[0] = h->type;
	p[1] = h->flags;
	smart__put16(p + 2, h->op);
	smart__put32(p + 4, h->call);
	smart__put32(p + 8, (uint32_t)h->status);
	smart__put32(p + 12, h->len);
}

void smart__msg_put_rndv(void *buf, const struct smart_msg_rndv *d)
{
	uint8_t *p = buf;

	smart__put64(p, d->off);
	smart__put32(p + 8, d->len);
	smart__put32(p + 12, d->crc);
	smart__put32(p + 16, d->rid);
	smart__put32(p + 20, 0);
}

static int status_valid(int32_t st)
{
	return st <= 0 && st > SMART_E_LAST;
}

static int hdr_valid(const struct smart_msg_hdr *h)
{
	if (h->flags & ~(SMART_MSG_F_RNDV | SMART_MSG_F_TRACE))
		return 0;
	if ((h->flags & SMART_MSG_F_TRACE) && h->type != SMART_MSG_REQ)
		return 0;
	if ((h->flags & SMART_MSG_F_RNDV) && h->len != SMART_MSG_RNDV_LEN)
		return 0;
	switch (h->type) {
	case SMART_MSG_REQ:
		return h->status == 0;
	case SMART_MSG_RESP:
		return status_valid(h->status);
	case SMART_MSG_ONEWAY:
		return h->status == 0 && h->call == 0;
	case SMART_MSG_DONE:
		return !h->flags && !h->len && status_valid(h->status);
	default:
		return 0;
	}
}

/* A descriptor's fields; a length of 0 or a reserved word set is not one
 * a sender makes. */
static int rndv_parse(const uint8_t *p, struct smart_msg_rndv *d)
{
	d->off = smart__get64(p);
	d->len = smart__get32(p + 8);
	d->crc = smart__get32(p + 12);
	d->rid = smart__get32(p + 16);
	return d->len && !smart__get32(p + 20) ? 0 : SMART_EPROTO;
}

int smart__msg_parse(const void *buf, uint32_t got, int has_imm, uint32_t imm,
		     struct smart_msg *m)
{
	const uint8_t *p = buf;
	struct smart_msg t;

	if (!has_imm || (imm >> 20))
		return SMART_EPROTO;
	memset(&t, 0, sizeof(t));
	t.kind = (int)(imm >> 16);
	t.ack = (uint16_t)imm;
	if (t.kind >= SMART_MSG_K_ACK && t.kind <= SMART_MSG_K_PONG) {
		if (got)
			return SMART_EPROTO;
		*m = t;
		return 0;
	}
	if (t.kind != SMART_MSG_K_DATA || got < SMART_MSG_HDR_LEN)
		return SMART_EPROTO;
	t.h.type = p[0];
	t.h.flags = p[1];
	t.h.op = smart__get16(p + 2);
	t.h.call = smart__get32(p + 4);
	t.h.status = (int32_t)smart__get32(p + 8);
	t.h.len = smart__get32(p + 12);
	/* the declared length is exactly what arrived, never more */
	if ((t.h.len != got - SMART_MSG_HDR_LEN &&
	     !SMART_M_WIRE_MSG_TRUSTS_LEN) ||
	    !hdr_valid(&t.h))
		return SMART_EPROTO;
	t.payload = p + SMART_MSG_HDR_LEN;
	if ((t.h.flags & SMART_MSG_F_RNDV) && rndv_parse(t.payload, &t.rndv))
		return SMART_EPROTO;
	*m = t;
	return 0;
}
