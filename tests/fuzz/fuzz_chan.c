/*
 * Fuzz target for a channel's consumer (src/msg/chan.c, docs/rpc.md §17):
 * everything a hostile producer controls after the handshake, i.e. the
 * immediate word, length and opcode of each WRITE_IMM's completion
 * (smart__chan_landed) and every byte of the ring (the slot headers,
 * payloads and footers), in any order with the consumer's next and
 * release.
 *
 * Input: byte 0 the channel's shape (bit 0 the mode, bits 1-2 slots 2, 4,
 * 8 or 16, bit 3 slot bytes 4096 or 8192), then operations, each a byte
 * (its value mod 7) and its operands:
 *   0 landed   u32 imm, u32 len, u8 (bit 0: by WRITE_IMM, else SEND)
 *   1 write    u32 offset (mod the ring), u16 n, n bytes into the ring
 *   2 next
 *   3 release
 *   4 a well-formed slot: the next expected one written as a producer
 *     would, u16 length, u64 user (IMM: its completion delivered too)
 *   5 a torn slot: (4), then u16 offset into it (mod the slot) and one
 *     byte xored there
 *   6 a misnamed slot: (4) with u8 delta added to the slot it names (IMM:
 *     the immediate's index; FOOTER: the footer's seq, its CRC right)
 * The ring is a heap block of exactly slots x bytes (ASan sees any read
 * past it); the channel has no connection (a cut sets its error and
 * counts it in the endpoint's account of past connections only).
 *
 * Properties (abort() on violation): a slot next returns lies inside its
 * own slot of the ring, in order (slot taken % slots), with a length at
 * most the slot's capacity and (FOOTER) a footer naming that slot whose
 * CRC-32C matches; a well-formed slot is returned unchanged; once
 * next said SMART_EPROTO it says so for ever; the consumer never has more
 * than `slots` slots landed and not released; release succeeds only for a
 * slot taken; a torn slot is re-polled a bounded number of times (the
 * re-poll bound is 0 cycles here: its second torn poll cuts).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "msg/msg_int.h"
#include "smart/chan.h"
#include "smart/status.h"
#include "smart/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct in {
	const uint8_t *p;
	size_t n;
};

struct fz {
	struct smart_chan ch;
	struct smart_rpc_conn conn; /* only for smart__chan_landed */
	struct smart_rpc rpc;	    /* only its account of past
				     * connections (what a channel without
				     * one counts) */
	struct smart_tp_mr mr;
	uint8_t *ring;
	size_t ring_len;
	uint64_t taken, released;
	int cut, torn_run;
	/* the last well-formed slot written, to compare with next's */
	uint64_t good_seq, good_user;
	uint32_t good_len;
	int good;
};

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_chan: property violated: %s\n", what);
	abort();
}

static int take(struct in *in, void *out, size_t n)
{
	if (in->n < n)
		return 0;
	memcpy(out, in->p, n);
	in->p += n;
	in->n -= n;
	return 1;
}

static uint8_t *slot_of(struct fz *f, uint64_t seq)
{
	return f->ring + (size_t)(seq & (f->ch.slots - 1)) * f->ch.bytes;
}

/* A completion arrives; one refused cuts the producer off, as messaging
 * does (rpc.c on_chan: the channel's error, its connection failed). */
static void landed(struct fz *f, const struct smart_tp_wc *wc)
{
	if (smart__chan_landed(&f->conn, wc) && !f->ch.err) {
		f->ch.err = SMART_EPROTO;
		f->ch.st.proto_errors++;
	}
}

static void op_landed(struct fz *f, struct in *in)
{
	struct smart_tp_wc wc = { .flags = SMART_TP_IMM };
	uint8_t how;

	if (!take(in, &wc.imm, 4) || !take(in, &wc.len, 4) ||
	    !take(in, &how, 1))
		return;
	wc.recv_op = how & 1 ? SMART_TP_WRITE_IMM : SMART_TP_SEND;
	landed(f, &wc);
	if (f->ch.mode == SMART_CHAN_IMM &&
	    f->ch.landed - f->ch.released > f->ch.slots)
		fail("more slots landed than credits");
}

static void op_write(struct fz *f, struct in *in)
{
	uint32_t off;
	uint16_t n;

	if (!take(in, &off, 4) || !take(in, &n, 2))
		return;
	off %= (uint32_t)f->ring_len;
	if (n > in->n)
		n = (uint16_t)in->n;
	if (n > f->ring_len - off)
		n = (uint16_t)(f->ring_len - off);
	memcpy(f->ring + off, in->p, n);
	f->good = 0; /* the slot written last may have changed */
	in->p += n;
	in->n -= n;
}

/* The next slot a producer would write (seq = what the consumer awaits
 * after those landed), its bytes seeded by seq. */
static void put_good(struct fz *f, uint16_t len16, uint64_t user, uint8_t delta)
{
	uint64_t seq = f->ch.mode == SMART_CHAN_IMM ? f->ch.landed : f->ch.seq;
	uint8_t *s = slot_of(f, seq);
	uint32_t hdr = f->ch.mode == SMART_CHAN_IMM ? SMART_CHAN_IMM_HDR : 0;
	uint32_t cap = f->ch.bytes - (f->ch.mode == SMART_CHAN_IMM ?
					      SMART_CHAN_IMM_HDR :
					      SMART_CHAN_FOOTER_LEN);
	uint32_t len = len16 % (cap + 1);

	for (uint32_t k = 0; k < len; k++)
		s[hdr + k] = (uint8_t)(seq * 131 + k);
	if (f->ch.mode == SMART_CHAN_IMM) {
		uint32_t h[4] = { len, 0, (uint32_t)user,
				  (uint32_t)(user >> 32) };
		struct smart_tp_wc wc = { .flags = SMART_TP_IMM,
					  .recv_op = SMART_TP_WRITE_IMM,
					  .len = SMART_CHAN_IMM_HDR + len };

		memcpy(s, h, sizeof(h));
		wc.imm = (uint32_t)((seq + delta) & (f->ch.slots - 1))
			 << SMART_MSG_CHAN_SLOT_SHIFT;
		landed(f, &wc);
	} else {
		uint64_t ft[3] = { user, len, seq + 1 + delta };
		uint32_t crc = smart_crc32c(0, s, len);

		crc = smart_crc32c(crc, ft, 12);
		crc = smart_crc32c(crc, &ft[2], 8);
		ft[1] |= (uint64_t)crc << 32;
		memcpy(s + f->ch.bytes - SMART_CHAN_FOOTER_LEN, ft, sizeof(ft));
	}
	f->good = !delta;
	f->good_seq = seq;
	f->good_len = len;
	f->good_user = user;
}

/* op 4 (how 0), 5 (how 1: torn) or 6 (how 2: misnamed) */
static void op_good(struct fz *f, struct in *in, int how)
{
	uint16_t len, at;
	uint64_t user;
	uint8_t x = 0;

	if (!take(in, &len, 2) || !take(in, &user, 8) ||
	    (how == 2 && !take(in, &x, 1)))
		return;
	put_good(f, len, user, x);
	if (how != 1 || !take(in, &at, 2) || !take(in, &x, 1))
		return;
	slot_of(f, f->good_seq)[at % f->ch.bytes] ^= x;
	f->good = 0; /* no longer what we wrote */
}

static void check_taken(struct fz *f, const uint8_t *buf, uint32_t len,
			uint64_t user)
{
	const uint8_t *s = slot_of(f, f->taken);
	uint32_t hdr = f->ch.mode == SMART_CHAN_IMM ? SMART_CHAN_IMM_HDR : 0;
	uint32_t cap = f->ch.bytes - (f->ch.mode == SMART_CHAN_IMM ?
					      SMART_CHAN_IMM_HDR :
					      SMART_CHAN_FOOTER_LEN);

	if (buf != s + hdr || len > cap)
		fail("a slot outside its place in the ring");
	if (f->ch.mode == SMART_CHAN_FOOTER) {
		const uint8_t *ft = s + f->ch.bytes - SMART_CHAN_FOOTER_LEN;
		uint32_t crc, want;
		uint64_t named;

		memcpy(&named, ft + 16, sizeof(named));
		memcpy(&want, ft + 12, sizeof(want));
		if (named != f->taken + 1)
			fail("a slot taken whose footer names another");
		crc = smart_crc32c(smart_crc32c(0, s, len), ft, 12);
		if (smart_crc32c(crc, ft + 16, 8) != want)
			fail("a slot taken whose CRC does not match");
	}
	if (f->good && f->good_seq == f->taken) {
		if (len != f->good_len || user != f->good_user)
			fail("a well-formed slot changed");
		for (uint32_t k = 0; k < len; k++)
			if (buf[k] != (uint8_t)(f->taken * 131 + k))
				fail("a well-formed slot's bytes changed");
	}
	f->taken++;
	f->torn_run = 0;
}

static void op_next(struct fz *f)
{
	const void *buf;
	uint32_t len;
	uint64_t user, torn = f->ch.st.torn_repolls;
	int rc = smart_chan_next(&f->ch, &buf, &len, &user);

	if ((f->cut || f->ch.err) && rc != SMART_EPROTO)
		fail("next after a cut is not SMART_EPROTO");
	if (rc == SMART_EPROTO)
		f->cut = 1;
	else if (rc == 0)
		check_taken(f, buf, len, user);
	else if (rc != SMART_ECONN && rc != SMART_EAGAIN)
		fail("next gave an unexpected status");
	if (f->ch.st.torn_repolls != torn && ++f->torn_run > 2)
		fail("a torn slot re-polled past its bound");
}

static void op_release(struct fz *f)
{
	int rc = smart_chan_release(&f->ch);

	if (!rc != (f->released < f->taken))
		fail("release of a slot not taken, or refused");
	if (!rc)
		f->released++;
}

static int setup(struct fz *f, uint8_t shape)
{
	memset(f, 0, sizeof(*f));
	f->ch.mode = shape & 1 ? SMART_CHAN_FOOTER : SMART_CHAN_IMM;
	f->ch.slots = 2u << (shape >> 1 & 3);
	f->ch.bytes = shape & 8 ? 8192 : 4096;
	f->ring_len = (size_t)f->ch.slots * f->ch.bytes;
	f->ring = calloc(1, f->ring_len);
	f->ch.lens = calloc(f->ch.slots, sizeof(*f->ch.lens));
	if (!f->ring || !f->ch.lens) {
		free(f->ring);
		free(f->ch.lens);
		return -1;
	}
	f->mr.addr = f->ring;
	f->mr.len = f->ring_len;
	f->mr.fd = -1;
	f->ch.mr = &f->mr;
	f->ch.torn_cycles = 0; /* the second torn poll of a slot cuts */
	f->ch.rpc = &f->rpc;
	f->conn.chan = &f->ch;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f; /* large: not on the stack */
	struct in in = { data + 1, size ? size - 1 : 0 };
	uint8_t op;

	if (!size || setup(&f, data[0]))
		return 0;
	while (take(&in, &op, 1)) {
		switch (op % 7) {
		case 0:
			op_landed(&f, &in);
			break;
		case 1:
			op_write(&f, &in);
			break;
		case 2:
			op_next(&f);
			break;
		case 3:
			op_release(&f);
			break;
		default:
			op_good(&f, &in, op % 6 == 5);
			break;
		}
	}
	free(f.ring);
	free(f.ch.lens);
	return 0;
}
