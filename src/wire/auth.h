/*
 * Handshake authentication (docs/protocol.md §Authentication): the
 * mutual challenge-response by which a dialer and a listener that share a
 * secret prove it to each other without the secret, or anything a party
 * without it could replay, ever crossing the socket.
 *
 * Every proof is HMAC-SHA-256 keyed by the shared secret (libsodium) over
 *   "SMART-AUTH-3" | label | dialer nonce | listener nonce | message
 * where the label names who speaks and what (SMART_AUTH_*: the listener's
 * CHALLENGE, the dialer's AUTH, the WELCOME, the PEER_CONNECT, the
 * PEER_ACCEPT), so a proof is valid for one role and one frame only (a
 * reflected proof fails), and the two fresh 32-byte nonces make it valid
 * for one session only (a replayed one fails).  The message is the frame's
 * payload (its tag excluded): what each side announced is bound, so a
 * party in the middle can change nothing unnoticed.
 *
 * Invariants: a key of length 0 (no secret configured) is a valid, public
 * key: it authenticates nothing, and both sides must then have none.
 * Tags are compared in constant time (sodium_memcmp).
 *
 * Thread safety: every function is thread safe.
 */
#ifndef SMART_WIRE_AUTH_H
#define SMART_WIRE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define SMART_AUTH_NONCE_LEN 32
#define SMART_AUTH_TAG_LEN   32
#define SMART_AUTH_FDS_MAX   4 /* descriptors one tag can cover */

/* Who proves what (one byte of every proof's input). */
enum smart_auth_label {
	SMART_AUTH_L_CHALLENGE = 1, /* listener: over the HELLO */
	SMART_AUTH_D_AUTH = 2,	    /* dialer: over the HELLO */
	SMART_AUTH_L_WELCOME = 3,   /* blade: its WELCOME */
	SMART_AUTH_D_PEER = 4,	    /* dialer: its PEER_CONNECT */
	SMART_AUTH_L_PEER = 5,	    /* listener: its PEER_ACCEPT */
	SMART_AUTH_D_FETCH = 6,	    /* client: the WELCOME's token, to
					 * fetch the region's fd */
	SMART_AUTH_D_SESSION = 7,   /* client: a frame after the AUTH
					 * (QP_CONNECT, QP_CLOSE, BYE) */
	SMART_AUTH_L_SESSION = 8,   /* blade: a QP_ACCEPT */
	SMART_AUTH_L_FETCH = 9,	    /* blade: the descriptor its fd
					 * reply passes */
};

/* One session's authentication state: the key and both nonces. */
struct smart__auth {
	const uint8_t *key; /* the shared secret; NULL iff key_len 0 */
	size_t key_len;
	uint8_t nd[SMART_AUTH_NONCE_LEN]; /* the dialer's */
	uint8_t nl[SMART_AUTH_NONCE_LEN]; /* the listener's */
};

/* A fresh random nonce (libsodium's randombytes).  SMART_ESYS when the
 * library cannot be initialised. */
int smart__auth_nonce(uint8_t out[SMART_AUTH_NONCE_LEN]);

/* The proof of label over msg[0..len). */
void smart__auth_tag(const struct smart__auth *a, int label, const void *msg,
		     size_t len, uint8_t out[SMART_AUTH_TAG_LEN]);

/* 1 when tag is the proof of label over msg[0..len), in constant time. */
int smart__auth_check(const struct smart__auth *a, int label, const void *msg,
		      size_t len, const uint8_t tag[SMART_AUTH_TAG_LEN]);

/*
 * A frame whose payload ends with a tag (WELCOME, PEER_CONNECT,
 * PEER_ACCEPT): seal writes the tag over the rest of the payload into its
 * last SMART_AUTH_TAG_LEN bytes; open checks it (1 when good).  frame and
 * n are a whole encoded frame; payload and len one received payload.
 */
void smart__auth_seal(const struct smart__auth *a, int label, void *frame,
		      size_t n);
int smart__auth_open(const struct smart__auth *a, int label,
		     const void *payload, size_t len);

/*
 * The same for the frames of a session after its handshake: the tag also
 * covers the frame's type and its sequence number in its direction (0, 1,
 * ... from the first frame after the AUTH, resp. the WELCOME), so a frame
 * can be neither changed, retyped, replayed, reordered nor dropped
 * unnoticed (a dropped one fails the next).
 */
void smart__auth_seal_seq(const struct smart__auth *a, int label, uint64_t seq,
			  void *frame, size_t n);
int smart__auth_open_seq(const struct smart__auth *a, int label, uint64_t seq,
			 uint16_t type, const void *payload, size_t len);

/*
 * The proof of label over a descriptor's identity (st_dev u64 | st_ino
 * u64 of fstat, the same in every process that holds it): what the sender
 * passed is what the receiver got, not one a party that relayed or
 * squatted the socket put in its place.  SMART_ESYS when fstat fails.
 */
int smart__auth_fd_tag(const struct smart__auth *a, int label, int fd,
		       uint8_t out[SMART_AUTH_TAG_LEN]);
/*
 * seal/open for a frame that goes with descriptors (PEER_CONNECT and
 * PEER_ACCEPT on shm): the tag also covers the identity of each of
 * fds[0..nfds), in order, before the payload, so a party that relays the
 * socket cannot pass descriptors of its own with a genuine frame.  seal:
 * SMART_ESYS when a descriptor cannot be looked at; open: 0 then.
 */
int smart__auth_seal_fds(const struct smart__auth *a, int label, const int *fds,
			 int nfds, void *frame, size_t n);
int smart__auth_open_fds(const struct smart__auth *a, int label, const int *fds,
			 int nfds, const void *payload, size_t len);

/* 1 when tag is that proof over fd, in constant time. */
int smart__auth_fd_check(const struct smart__auth *a, int label, int fd,
			 const uint8_t tag[SMART_AUTH_TAG_LEN]);

#endif
