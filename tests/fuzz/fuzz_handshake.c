/*
 * Fuzz target for the bootstrap protocol: the input goes through every
 * decoder of src/util/proto.c (as a frame and as a bare payload), and then
 * through the blade's real session state machine as if a client had sent
 * it (smart__blade_session_feed on an in-process shm blade).
 *
 * Properties checked (abort() on violation, which libFuzzer and the replay
 * driver both report): decoders never crash and are canonical (what
 * decodes re-encodes to the same bytes), and everything the blade sends
 * back is a well-formed WELCOME, ERROR or QP_ACCEPT frame.
 *
 * The blade is created once per process and kept (a fuzz target's only
 * way to amortise its set-up); the secret is "fuzz-secret-0123", as in
 * the seed corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blade/blade_int.h"
#include "smart/blade.h"
#include "smart/status.h"
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
	if (!smart__proto_dec_qp_close(p, len, &id)) {
		rc = smart__proto_enc_qp_close(id, scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "qp_close not canonical");
	}
	if (!smart__proto_dec_bye(p, len)) {
		rc = smart__proto_enc_bye(scratch, sizeof(scratch), &n);
		same(rc, n, p, len, "bye not canonical");
	}
}

/* Everything the blade answers must parse as a blade->client frame. */
static void check_replies(const uint8_t *p, size_t n, void *arg)
{
	struct smart_proto_hdr h;
	struct smart_proto_welcome w;
	struct smart_proto_error e;
	struct smart_proto_qp_accept a;
	int rc;

	(void)arg;
	while (n) {
		if (smart__proto_hdr_check(p, n, &h) ||
		    n < SMART_PROTO_HDR_LEN + h.len)
			fail("blade sent a bad frame header");
		p += SMART_PROTO_HDR_LEN;
		n -= SMART_PROTO_HDR_LEN;
		if (h.type == SMART_PROTO_WELCOME)
			rc = smart__proto_dec_welcome(p, h.len, &w);
		else if (h.type == SMART_PROTO_ERROR)
			rc = smart__proto_dec_error(p, h.len, &e);
		else if (h.type == SMART_PROTO_QP_ACCEPT)
			rc = smart__proto_dec_qp_accept(p, h.len, &a);
		else
			rc = SMART_EPROTO;
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

	payload_decoders(data, size);
	if (!smart__proto_hdr_check(data, size, &h) &&
	    size >= SMART_PROTO_HDR_LEN + h.len)
		payload_decoders(data + SMART_PROTO_HDR_LEN, h.len);
	smart__blade_session_feed(fuzz_blade(), data, size, check_replies,
				  NULL);
	return 0;
}
