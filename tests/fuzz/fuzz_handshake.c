/*
 * Fuzz target for the bootstrap protocol: the input goes through every
 * decoder of src/util/proto.c (as a frame and as a bare payload), and then
 * through the blade's real session state machine as if a client had sent
 * it (smart__blade_session_feed on an in-process shm blade).
 *
 * Properties checked (abort() on violation, which libFuzzer and the replay
 * driver both report): decoders never crash and are canonical (what
 * decodes re-encodes to the same bytes), everything the blade sends back
 * is a well-formed CHALLENGE, WELCOME, ERROR or QP_ACCEPT frame, and a
 * WELCOME goes out only when the input held the AUTH that proves the
 * secret over its HELLO (the secret itself is never sent since protocol
 * version 3).
 *
 * The blade is created once per process and kept (a fuzz target's only
 * way to amortise its set-up); the secret is "fuzz-secret-0123", and a
 * socketless session's nonce is zero, as in the seed corpus
 * (tests/fuzz/make-corpus.py writes it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blade/blade_int.h"
#include "smart/blade.h"
#include "smart/status.h"
#include "wire/auth.h"
#include "wire/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_SECRET "fuzz-secret-0123"

static uint8_t scratch[SMART_PROTO_HDR_LEN + SMART_PROTO_MAX_PAYLOAD];

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_handshake: property violated: %s\n", what);
	abort();
}

/* Re-encoded frame must carry exactly the decoded payload bytes. */
static void same(int rc, size_t n, const uint8_t *p, size_t len,
		 const char *what)
{
	if (rc || n != SMART_PROTO_HDR_LEN + len ||
	    (len && memcmp(scratch + SMART_PROTO_HDR_LEN, p, len)))
		fail(what);
}

static void payload_decoders(const uint8_t *p, size_t len)
{
	struct smart_proto_hello h;
	struct smart_proto_welcome w;
	struct smart_proto_error e;
	struct smart_proto_qp_connect c;
	struct smart_proto_qp_accept a;
	struct smart_proto_challenge ch;
	uint8_t proof[SMART_PROTO_TAG_LEN];
	uint32_t id;
	size_t n = 0;
	int rc;

	/* rc is taken before same() reads n: argument order is unspecified. */
	if (!smart__proto_dec_hello(p, len, &h)) {
		rc = smart__proto_enc_hello(&h, scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "hello not canonical");
	}
	if (!smart__proto_dec_welcome(p, len, &w)) {
		rc = smart__proto_enc_welcome(&w, scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "welcome not canonical");
	}
	if (!smart__proto_dec_error(p, len, &e) &&
	    e.version == SMART_PROTO_VERSION) {
		rc = smart__proto_enc_error(e.status, e.msg, scratch,
					    sizeof(scratch), &n);
		same(rc, n, p, len, "error not canonical");
	}
	if (!smart__proto_dec_qp_connect(p, len, &c)) {
		rc = smart__proto_enc_qp_connect(&c, scratch, sizeof(scratch),
						 &n);
		same(rc, n, p, len, "qp_connect not canonical");
	}
	if (!smart__proto_dec_qp_accept(p, len, &a)) {
		rc = smart__proto_enc_qp_accept(&a, scratch, sizeof(scratch),
						&n);
		same(rc, n, p, len, "qp_accept not canonical");
	}
	if (!smart__proto_dec_qp_close(p, len, &id, proof)) {
		rc = smart__proto_enc_qp_close(id, proof, scratch,
					       sizeof(scratch), &n);
		same(rc, n, p, len, "qp_close not canonical");
	}
	if (!smart__proto_dec_challenge(p, len, &ch)) {
		rc = smart__proto_enc_challenge(&ch, scratch, sizeof(scratch),
						&n);
		same(rc, n, p, len, "challenge not canonical");
	}
	if (!smart__proto_dec_auth(p, len, proof)) {
		rc = smart__proto_enc_auth(proof, scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "auth not canonical");
	}
	if (!smart__proto_dec_bye(p, len, proof)) {
		rc = smart__proto_enc_bye(proof, scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "bye not canonical");
	}
}

/* 1 when the frames of the input, in order, hold a HELLO and after it
 * an AUTH proving the secret over it (the session's nonce is zero). */
static int proven(const uint8_t *p, size_t n)
{
	struct smart__auth a = { (const uint8_t *)FUZZ_SECRET,
				 sizeof(FUZZ_SECRET) - 1,
				 { 0 },
				 { 0 } };
	struct smart_proto_hello hi;
	struct smart_proto_hdr h;
	uint8_t proof[SMART_PROTO_TAG_LEN];
	const uint8_t *hello = NULL;
	size_t hlen = 0;

	while (!smart__proto_hdr_check(p, n, &h) &&
	       n >= SMART_PROTO_HDR_LEN + h.len) {
		const uint8_t *pl = p + SMART_PROTO_HDR_LEN;

		if (!hello && h.type == SMART_PROTO_HELLO &&
		    !smart__proto_dec_hello(pl, h.len, &hi)) {
			hello = pl;
			hlen = h.len;
			memcpy(a.nd, hi.nonce, sizeof(a.nd));
		} else if (hello && h.type == SMART_PROTO_AUTH &&
			   !smart__proto_dec_auth(pl, h.len, proof)) {
			return smart__auth_check(&a, SMART_AUTH_D_AUTH, hello,
						 hlen, proof);
		}
		p += SMART_PROTO_HDR_LEN + h.len;
		n -= SMART_PROTO_HDR_LEN + h.len;
	}
	return 0;
}

/* Everything the blade answers must parse as a blade->client frame; a
 * WELCOME only after the secret was proven (arg: the input). */
static void check_replies(const uint8_t *p, size_t n, void *arg)
{
	const struct {
		const uint8_t *p;
		size_t n;
	} *in = arg;
	struct smart_proto_hdr h;
	struct smart_proto_welcome w;
	struct smart_proto_error e;
	struct smart_proto_qp_accept a;
	struct smart_proto_challenge c;
	int rc;

	while (n) {
		if (smart__proto_hdr_check(p, n, &h) ||
		    n < SMART_PROTO_HDR_LEN + h.len)
			fail("blade sent a bad frame header");
		p += SMART_PROTO_HDR_LEN;
		n -= SMART_PROTO_HDR_LEN;
		if (h.type == SMART_PROTO_WELCOME) {
			rc = smart__proto_dec_welcome(p, h.len, &w);
			if (!proven(in->p, in->n))
				fail("blade welcomed without a proof");
		} else if (h.type == SMART_PROTO_CHALLENGE) {
			rc = smart__proto_dec_challenge(p, h.len, &c);
		} else if (h.type == SMART_PROTO_ERROR) {
			rc = smart__proto_dec_error(p, h.len, &e);
		} else if (h.type == SMART_PROTO_QP_ACCEPT) {
			rc = smart__proto_dec_qp_accept(p, h.len, &a);
		} else {
			rc = SMART_EPROTO;
		}
		if (rc)
			fail("blade sent a bad frame");
		p += h.len;
		n -= h.len;
	}
}

static struct smart_blade *fuzz_blade(void)
{
	static struct smart_blade *b;
	struct smart_blade_config cfg;

	if (b)
		return b;
	smart_blade_config_init(&cfg);
	cfg.size = 2u << 20;
	cfg.listen = "127.0.0.1:0";
	cfg.hugepages = 0;
	cfg.secret = FUZZ_SECRET;
	cfg.secret_len = strlen(FUZZ_SECRET);
	if (smart_blade_create(&cfg, &b))
		fail("cannot create the blade");
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct smart_proto_hdr h;
	struct {
		const uint8_t *p;
		size_t n;
	} in = { data, size };

	payload_decoders(data, size);
	if (!smart__proto_hdr_check(data, size, &h) &&
	    size >= SMART_PROTO_HDR_LEN + h.len)
		payload_decoders(data + SMART_PROTO_HDR_LEN, h.len);
	smart__blade_session_feed(fuzz_blade(), data, size, check_replies, &in);
	return 0;
}
