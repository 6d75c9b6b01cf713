/*
 * The messaging wire format (docs/rpc.md): what one SEND of a peer
 * connection carries.  Pure encoders and a strict decoder; no I/O.
 *
 * Every SEND carries an immediate word:
 *   bits 0..15   ack: how many of the peer's data messages this side has
 *                consumed and given the receive back for, modulo 2^16 (the
 *                seq-ack window: a sender keeps at most `window` data
 *                messages unacknowledged, so a receive is always posted)
 *   bits 16..19  kind: DATA (a header and payload follow in the buffer),
 *                ACK (0 bytes: an ack alone, sent when no data message
 *                goes back to carry it), CLOSE (0 bytes: the sender is
 *                closing the connection), PING (a zero-byte WRITE with
 *                immediate: the keepalive probe, after silence) and PONG
 *                (a zero-byte WRITE with immediate: the answer to a PING),
 *                and CHAN (a channel's WRITE_IMM into its consumer's ring)
 *   bits 20..31  zero; CHAN: the ring slot the WRITE landed in
 * A DATA message is a 16-byte header and `len` payload bytes, exactly
 * the bytes received:
 *   u8 type (REQ, RESP, ONEWAY, DONE)   u8 flags (RNDV, TRACE: REQ only)
 *   u16 op (handler id)
 *   u32 call (REQ/RESP: the caller's call id; ONEWAY: 0; DONE: the rid)
 *   i32 status (RESP, DONE: 0 or a negative SMART_E*; else 0)
 *   u32 len
 * A REQ, RESP or ONEWAY with flag RNDV carries not its payload but a
 * 24-byte rendezvous descriptor: the receiver READs the payload from the
 * sender's staging region and answers DONE (no payload) once it has:
 *   u64 off (in the sender's staging region)   u32 len (> 0)
 *   u32 crc (CRC-32C of the payload)   u32 rid (the sender's name for it)
 *   u32 zero
 * All little-endian.  Anything else is SMART_EPROTO: a peer sending it is
 * hostile or broken, and its connection is closed.
 *
 * Thread safety: every function is pure.
 */
#ifndef SMART_WIRE_MSG_H
#define SMART_WIRE_MSG_H

#include <stddef.h>
#include <stdint.h>

#define SMART_MSG_HDR_LEN 16

enum smart_msg_kind {
	SMART_MSG_K_DATA = 1,
	SMART_MSG_K_ACK = 2,
	SMART_MSG_K_CLOSE = 3,
	SMART_MSG_K_PING = 4,
	SMART_MSG_K_PONG = 5,
	SMART_MSG_K_CHAN = 6, /* a channel's WRITE_IMM (docs/rpc.md §17):
				 * bits 20..31 the ring slot; handled by
				 * messaging before smart__msg_parse, which
				 * refuses it */
};
#define SMART_MSG_CHAN_SLOT_SHIFT 20

enum smart_msg_type {
	SMART_MSG_REQ = 1,
	SMART_MSG_RESP = 2,
	SMART_MSG_ONEWAY = 3,
	SMART_MSG_DONE = 4,
};

#define SMART_MSG_F_RNDV 1 /* the payload is a descriptor */
#define SMART_MSG_F_TRACE                                                      \
	2 /* REQ: the caller traces this call;
					 * the handler's side is traced too */
#define SMART_MSG_RNDV_LEN 24

/* A rendezvous descriptor (flag RNDV). */
struct smart_msg_rndv {
	uint64_t off;
	uint32_t len;
	uint32_t crc;
	uint32_t rid;
};

struct smart_msg_hdr {
	uint8_t type;
	uint8_t flags;
	uint16_t op;
	uint32_t call;
	int32_t status;
	uint32_t len;
};

_Static_assert(sizeof(struct smart_msg_hdr) == SMART_MSG_HDR_LEN,
	       "the header is 16 bytes on the wire");
_Static_assert(offsetof(struct smart_msg_hdr, call) == 4 &&
		       offsetof(struct smart_msg_hdr, status) == 8 &&
		       offsetof(struct smart_msg_hdr, len) == 12,
	       "header layout");

/* What one received SEND says. */
struct smart_msg {
	int kind;		    /* SMART_MSG_K_* */
	uint16_t ack;		    /* the peer's consumed count, mod 2^16 */
	struct smart_msg_hdr h;	    /* DATA only */
	const uint8_t *payload;	    /* DATA only: h.len bytes in the buffer */
	struct smart_msg_rndv rndv; /* flag RNDV only */
};

static inline uint32_t smart__msg_imm(int kind, uint16_t ack)
{
	return (uint32_t)kind << 16 | ack;
}

/* Write a DATA header into buf (SMART_MSG_HDR_LEN bytes). */
void smart__msg_put_hdr(void *buf, const struct smart_msg_hdr *h);

/* Write a rendezvous descriptor into buf (SMART_MSG_RNDV_LEN bytes). */
void smart__msg_put_rndv(void *buf, const struct smart_msg_rndv *d);

/*
 * Decode one received SEND: `got` bytes in buf, immediate imm (has_imm 0:
 * it came without one).  0 with *m filled, or SMART_EPROTO.
 */
int smart__msg_parse(const void *buf, uint32_t got, int has_imm, uint32_t imm,
		     struct smart_msg *m);

#endif
