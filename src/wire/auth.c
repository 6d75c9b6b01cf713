/*
 * Handshake proofs (wire/auth.h): HMAC-SHA-256 from libsodium, chosen
 * for being small, well kept and misuse resistant, with exactly these
 * primitives and no global configuration (docs/protocol.md).
 */
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>

#include "smart/status.h"
#include "util/mutant.h"
#include "wire/auth.h"
#include "wire/proto.h"

_Static_assert(SMART_AUTH_TAG_LEN == crypto_auth_hmacsha256_BYTES,
	       "a tag is one HMAC-SHA-256");
_Static_assert(SMART_AUTH_TAG_LEN == SMART_PROTO_TAG_LEN &&
		       SMART_AUTH_NONCE_LEN == SMART_PROTO_NONCE_LEN,
	       "the wire carries whole nonces and tags");

static const char domain[] = "SMART-AUTH-3";

int smart__auth_nonce(uint8_t out[SMART_AUTH_NONCE_LEN])
{
	/* Thread safe and idempotent: 0 the first time, 1 after. */
	if (sodium_init() < 0)
		return SMART_ESYS;
	randombytes_buf(out, SMART_AUTH_NONCE_LEN);
	return 0;
}

/* HMAC(key, domain | label | nd | nl | pre | msg). */
static void mac(const struct smart__auth *a, int label, const uint8_t *pre,
		size_t plen, const void *msg, size_t len,
		uint8_t out[SMART_AUTH_TAG_LEN])
{
	static const uint8_t nokey[1];
	crypto_auth_hmacsha256_state st;
	/* The role is bound unless the mutant leaves it out: then the
	 * listener's proof of a HELLO is also the dialer's. */
	uint8_t l = (uint8_t)(SMART_M_WIRE_AUTH_NO_ROLE &&
					      label <= SMART_AUTH_D_AUTH ?
				      0 :
				      label);

	crypto_auth_hmacsha256_init(&st, a->key_len ? a->key : nokey,
				    a->key_len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)domain,
				      sizeof(domain) - 1);
	crypto_auth_hmacsha256_update(&st, &l, 1);
	crypto_auth_hmacsha256_update(&st, a->nd, sizeof(a->nd));
	crypto_auth_hmacsha256_update(&st, a->nl, sizeof(a->nl));
	if (plen)
		crypto_auth_hmacsha256_update(&st, pre, plen);
	crypto_auth_hmacsha256_update(&st, msg, len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

void smart__auth_tag(const struct smart__auth *a, int label, const void *msg,
		     size_t len, uint8_t out[SMART_AUTH_TAG_LEN])
{
	mac(a, label, NULL, 0, msg, len, out);
}

/* type u16 | seq u64, little-endian, as every integer of the wire. */
static void seq_prefix(uint16_t type, uint64_t seq, uint8_t pre[10])
{
	pre[0] = (uint8_t)type;
	pre[1] = (uint8_t)(type >> 8);
	for (int i = 0; i < 8; i++)
		pre[2 + i] = (uint8_t)(seq >> (8 * i));
}

/* st_dev u64 | st_ino u64 of each descriptor, in order, into ids: what
 * names the open file itself, the same in every process holding it. */
static int fd_ids(const int *fds, int nfds, uint8_t *ids)
{
	struct stat st;

	for (int k = 0; k < nfds; k++, ids += 16) {
		if (fds[k] < 0 || fstat(fds[k], &st))
			return SMART_ESYS;
		for (int i = 0; i < 8; i++) {
			ids[i] = (uint8_t)((uint64_t)st.st_dev >> (8 * i));
			ids[8 + i] = (uint8_t)((uint64_t)st.st_ino >> (8 * i));
		}
	}
	return 0;
}

/* want == tag, in constant time; want is wiped either way. */
static int tag_eq(uint8_t want[SMART_AUTH_TAG_LEN],
		  const uint8_t tag[SMART_AUTH_TAG_LEN])
{
	int ok = sodium_memcmp(want, tag, SMART_AUTH_TAG_LEN) == 0;

	sodium_memzero(want, SMART_AUTH_TAG_LEN);
	return ok;
}

/* A frame of n bytes whose last SMART_AUTH_TAG_LEN get the tag over pre
 * (plen bytes) and the payload before them. */
static void seal_pre(const struct smart__auth *a, int label, const uint8_t *pre,
		     size_t plen, void *frame, size_t n)
{
	uint8_t *p = (uint8_t *)frame + SMART_PROTO_HDR_LEN;
	size_t len = n - SMART_PROTO_HDR_LEN - SMART_AUTH_TAG_LEN;

	mac(a, label, pre, plen, p, len, p + len);
}

/* Does the payload (a peer's, len bytes) end in the tag over pre and the
 * bytes before it?  0 for one too short to hold a tag. */
static int open_pre(const struct smart__auth *a, int label, const uint8_t *pre,
		    size_t plen, const void *payload, size_t len)
{
	uint8_t want[SMART_AUTH_TAG_LEN];
	const uint8_t *p = payload;

	if (len < SMART_AUTH_TAG_LEN)
		return 0;
	len -= SMART_AUTH_TAG_LEN;
	mac(a, label, pre, plen, p, len, want);
	return tag_eq(want, p + len);
}

int smart__auth_check(const struct smart__auth *a, int label, const void *msg,
		      size_t len, const uint8_t tag[SMART_AUTH_TAG_LEN])
{
	uint8_t want[SMART_AUTH_TAG_LEN];

	smart__auth_tag(a, label, msg, len, want);
	return tag_eq(want, tag);
}

void smart__auth_seal(const struct smart__auth *a, int label, void *frame,
		      size_t n)
{
	seal_pre(a, label, NULL, 0, frame, n);
}

int smart__auth_open(const struct smart__auth *a, int label,
		     const void *payload, size_t len)
{
	return open_pre(a, label, NULL, 0, payload, len);
}

void smart__auth_seal_seq(const struct smart__auth *a, int label, uint64_t seq,
			  void *frame, size_t n)
{
	const uint8_t *f = frame;
	uint8_t pre[10];

	seq_prefix((uint16_t)(f[4] | f[5] << 8), seq, pre);
	seal_pre(a, label, pre, sizeof(pre), frame, n);
}

int smart__auth_open_seq(const struct smart__auth *a, int label, uint64_t seq,
			 uint16_t type, const void *payload, size_t len)
{
	uint8_t pre[10];

	seq_prefix(type, seq, pre);
	return open_pre(a, label, pre, sizeof(pre), payload, len);
}

int smart__auth_fd_tag(const struct smart__auth *a, int label, int fd,
		       uint8_t out[SMART_AUTH_TAG_LEN])
{
	uint8_t id[16];

	if (fd_ids(&fd, 1, id))
		return SMART_ESYS;
	smart__auth_tag(a, label, id, sizeof(id), out);
	return 0;
}

int smart__auth_fd_check(const struct smart__auth *a, int label, int fd,
			 const uint8_t tag[SMART_AUTH_TAG_LEN])
{
	uint8_t want[SMART_AUTH_TAG_LEN];

	if (smart__auth_fd_tag(a, label, fd, want))
		return 0;
	return tag_eq(want, tag);
}

int smart__auth_seal_fds(const struct smart__auth *a, int label, const int *fds,
			 int nfds, void *frame, size_t n)
{
	uint8_t ids[16 * SMART_AUTH_FDS_MAX];

	if (nfds < 0 || nfds > SMART_AUTH_FDS_MAX || fd_ids(fds, nfds, ids))
		return SMART_ESYS;
	seal_pre(a, label, ids, 16 * (size_t)nfds, frame, n);
	return 0;
}

int smart__auth_open_fds(const struct smart__auth *a, int label, const int *fds,
			 int nfds, const void *payload, size_t len)
{
	uint8_t ids[16 * SMART_AUTH_FDS_MAX];

	if (nfds < 0 || nfds > SMART_AUTH_FDS_MAX || fd_ids(fds, nfds, ids))
		return 0;
	return open_pre(a, label, ids, 16 * (size_t)nfds, payload, len);
}
