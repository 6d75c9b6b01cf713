/*
 * Fuzz target for the messaging wire format (src/wire/msg.h) and the peer
 * handshake frames (PEER_CONNECT / PEER_ACCEPT of src/wire/proto.h): the
 * parsers every byte a peer sends goes through before anything trusts it.
 *
 * Input: 4 bytes of immediate word, 1 byte "came with an immediate", then
 * the received bytes.  Properties (abort() on violation): the parser never
 * reads past what was received (ASan), a message it accepts declares
 * exactly the bytes that arrived and re-encodes to the same header (and a
 * rendezvous descriptor to the same bytes, its length never 0), a bare
 * message (ACK, CLOSE, PING, PONG) carries no bytes, a channel's
 * WRITE_IMM (kind CHAN) is never taken for a message; the peer decoders
 * are canonical (what decodes re-encodes to the same payload) and a
 * channel section they let through is in range.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smart/status.h"
#include "wire/msg.h"
#include "wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_msg: property violated: %s\n", what);
	abort();
}

static void check_msg(const uint8_t *data, size_t size)
{
	uint8_t hdr[SMART_MSG_HDR_LEN], *buf;
	struct smart_msg m;
	uint32_t imm, got;

	if (size < 5)
		return;
	memcpy(&imm, data, 4);
	got = (uint32_t)(size - 5);
	/* a copy of exactly the received bytes: ASan sees any overread */
	buf = malloc(got ? got : 1);
	if (!buf)
		return;
	memcpy(buf, data + 5, got);
	if (!smart__msg_parse(buf, got, data[4] & 1, imm, &m)) {
		if (m.kind == SMART_MSG_K_DATA) {
			if (m.h.len + SMART_MSG_HDR_LEN != got ||
			    m.payload != buf + SMART_MSG_HDR_LEN)
				fail("accepted length is not what arrived");
			smart__msg_put_hdr(hdr, &m.h);
			if (memcmp(hdr, buf, SMART_MSG_HDR_LEN))
				fail("header does not re-encode");
			if (m.h.flags & SMART_MSG_F_RNDV) {
				uint8_t d[SMART_MSG_RNDV_LEN];

				smart__msg_put_rndv(d, &m.rndv);
				if (m.h.len != SMART_MSG_RNDV_LEN ||
				    !m.rndv.len ||
				    memcmp(d, buf + SMART_MSG_HDR_LEN,
					   sizeof(d)))
					fail("descriptor does not re-encode");
			}
		} else if (got) {
			fail("a bare message with bytes");
		}
		if (smart__msg_imm(m.kind, m.ack) != imm)
			fail("immediate does not re-encode");
		if (m.kind == SMART_MSG_K_CHAN)
			fail("a channel's immediate parsed as a message");
	}
	free(buf);
}

/* A channel section that decodes asks for a ring the consumer may make
 * (src/msg/chan.c allocates slots x bytes from it before anything else
 * checks it): slots a power of two and bytes a multiple of 64, both in
 * range, a mode there is, window = slots; a CONNECT carries no ring, an
 * ACCEPT one of at most a blob and no staging region. */
static void check_chan(uint16_t t, const struct smart_proto_peer *m)
{
	if (!m->chan) {
		if (m->ring_len)
			fail("a ring without a channel section");
		return;
	}
	if (m->ch_slots < SMART_PROTO_CHAN_SLOTS_MIN ||
	    m->ch_slots > SMART_PROTO_CHAN_SLOTS_MAX ||
	    (m->ch_slots & (m->ch_slots - 1)) ||
	    m->ch_bytes < SMART_PROTO_CHAN_BYTES_MIN ||
	    m->ch_bytes > SMART_PROTO_CHAN_BYTES_MAX || m->ch_bytes % 64 ||
	    m->ch_mode >= SMART_PROTO_CHAN_MODES || m->window != m->ch_slots)
		fail("a channel section out of range");
	if (t == SMART_PROTO_PEER_CONNECT ?
		    m->ring_len != 0 :
		    !m->ring_len || m->rndv_max ||
			    m->ring_len > SMART_PROTO_BLOB_MAX)
		fail("a channel section's ring out of place");
}

static void check_peer(const uint8_t *data, size_t size)
{
	static uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX];
	struct smart_proto_peer m;
	size_t n;

	for (uint16_t t = SMART_PROTO_PEER_CONNECT;
	     t <= SMART_PROTO_PEER_ACCEPT; t++) {
		if (smart__proto_dec_peer(t, data, size, &m))
			continue;
		check_chan(t, &m);
		if (smart__proto_enc_peer(t, &m, f, sizeof(f), &n) ||
		    n != SMART_PROTO_HDR_LEN + size ||
		    memcmp(f + SMART_PROTO_HDR_LEN, data, size))
			fail("peer frame is not canonical");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_msg(data, size);
	check_peer(data, size);
	return 0;
}
