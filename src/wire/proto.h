/*
 * The bootstrap wire format (docs/protocol.md): pure encoders and strict
 * decoders for the framed messages that a client and a blade exchange over
 * TCP before and beside the one-sided data path.  No I/O happens here.
 *
 * Invariants:
 *  - A frame is a 12-byte header {magic "SMRT", type u16, flags u16,
 *    length u32} and `length` payload bytes; everything is little-endian.
 *  - Decoders accept exactly one canonical encoding: every length field is
 *    checked against its limit and against the bytes actually present,
 *    reserved fields and flags must be zero, trailing bytes are an error.
 *    Anything else is SMART_EPROTO.  Decoding what an encoder produced and
 *    encoding it again gives the same bytes (the fuzz target checks this).
 *  - No frame carries the shared secret (since version 3): the
 *    handshakes prove it by challenge-response (wire/auth.h).  The frames
 *    that carry a tag (WELCOME, PEER_CONNECT, PEER_ACCEPT, and every frame
 *    of a blade session after it: QP_CONNECT, QP_ACCEPT, QP_CLOSE, BYE)
 *    end with it; these functions only carry it, wire/auth.c makes and
 *    checks it.
 *
 * Thread safety: every function is pure and thread safe.
 */
#ifndef SMART_WIRE_PROTO_H
#define SMART_WIRE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SMART_PROTO_MAGIC 0x54524d53u /* "SMRT" as bytes on the wire */
#define SMART_PROTO_VERSION                                                    \
	3 /* 2: WELCOME carries the lease id;
					 * 3: challenge-response, no secret
					 * on the wire, tagged parameters */
#define SMART_PROTO_HDR_LEN	  12
#define SMART_PROTO_MAX_PAYLOAD	  65536
#define SMART_PROTO_TRANSPORT_MAX 15 /* transport name bytes */
#define SMART_PROTO_NONCE_LEN	  32 /* wire/auth.h */
#define SMART_PROTO_TAG_LEN	  32 /* an HMAC-SHA-256 */
/* A version-2 HELLO carried the secret (4096 bytes at most): HELLOs this
 * long are still read whole, so that an old peer is told its version is
 * refused (an ERROR it can decode) instead of "malformed". */
#define SMART_PROTO_V2_HELLO_MAX  (8 + SMART_PROTO_TRANSPORT_MAX + 4096)
#define SMART_PROTO_SOCK_MAX	  107 /* abstract socket name, no leading NUL */
#define SMART_PROTO_TOKEN_LEN	  16
/* What a client sends on the blade's unix socket to fetch the region's
 * fd: its proof over the WELCOME's token (wire/auth.h), never the token
 * itself, which whoever relayed the TCP session saw. */
#define SMART_PROTO_FETCH_LEN	  32
#define SMART_PROTO_ERRMSG_MAX	  200
/* Largest transport connection blob carried (the transport's
 * SMART_TP_BLOB_MAX; the layers that see both check they agree). */
#define SMART_PROTO_BLOB_MAX	  256

enum smart_proto_type {
	SMART_PROTO_HELLO = 1,	      /* client -> blade */
	SMART_PROTO_WELCOME = 2,      /* blade -> client */
	SMART_PROTO_ERROR = 3,	      /* blade -> client, then close */
	SMART_PROTO_QP_CONNECT = 4,   /* client -> blade */
	SMART_PROTO_QP_ACCEPT = 5,    /* blade -> client */
	SMART_PROTO_QP_CLOSE = 6,     /* client -> blade, no reply */
	SMART_PROTO_BYE = 7,	      /* client -> blade, no reply */
	SMART_PROTO_PEER_CONNECT = 8, /* dialer -> listening peer */
	SMART_PROTO_PEER_ACCEPT = 9,  /* listening peer -> dialer */
	SMART_PROTO_CHALLENGE = 10,   /* listener -> dialer: its nonce and
					 * proof, after a HELLO */
	SMART_PROTO_AUTH = 11,	      /* dialer -> listener: its proof */
};

/* WELCOME flags. */
#define SMART_PROTO_WF_FETCH_FD 0x01 /* fetch the region fd (unix socket) */

/* Largest payload of each type; the largest frame any peer has to buffer
 * is SMART_PROTO_HDR_LEN + SMART_PROTO_HELLO_MAX (an old HELLO's). */
#define SMART_PROTO_HELLO_MAX	  SMART_PROTO_V2_HELLO_MAX
#define SMART_PROTO_HELLO_LEN(tl) (8 + SMART_PROTO_NONCE_LEN + (tl))
#define SMART_PROTO_CHALLENGE_LEN (SMART_PROTO_NONCE_LEN + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_AUTH_LEN	  SMART_PROTO_TAG_LEN
#define SMART_PROTO_WELCOME_MAX                                                \
	(44 + SMART_PROTO_BLOB_MAX + SMART_PROTO_SOCK_MAX + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_ERROR_MAX	(8 + SMART_PROTO_ERRMSG_MAX)
#define SMART_PROTO_QPC_MAX	(8 + SMART_PROTO_BLOB_MAX + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_QPA_MAX	(16 + SMART_PROTO_BLOB_MAX + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_QPCLOSE_LEN (4 + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_BYE_LEN	SMART_PROTO_TAG_LEN
#define SMART_PROTO_PEER_MAX                                                   \
	(20 + 2 * SMART_PROTO_BLOB_MAX + SMART_PROTO_PEER_CHAN_LEN +           \
	 SMART_PROTO_BLOB_MAX + SMART_PROTO_TAG_LEN)
#define SMART_PROTO_FRAME_MAX (SMART_PROTO_HDR_LEN + SMART_PROTO_HELLO_MAX)

/* Peer connections (messaging, docs/rpc.md): the receive window (receives
 * each side keeps posted for the other's data messages) and the largest
 * message each side takes. */
#define SMART_PROTO_PEER_WINDOW_MAX 4096
#define SMART_PROTO_PEER_MSG_MIN    64
#define SMART_PROTO_PEER_MSG_MAX    (1u << 20)
#define SMART_PROTO_PEER_RNDV_MAX   (1u << 30)
/* The channel section of a PEER frame (docs/rpc.md §17): flags, slots,
 * slot_bytes, mode, tag (u32 each), ring blob length (u16), zero (u16). */
#define SMART_PROTO_PEER_CHAN_LEN   24
#define SMART_PROTO_CHAN_SLOTS_MIN  2
#define SMART_PROTO_CHAN_SLOTS_MAX  4096
#define SMART_PROTO_CHAN_BYTES_MIN  4096
#define SMART_PROTO_CHAN_BYTES_MAX  (1u << 20)
#define SMART_PROTO_CHAN_MODES	    2 /* 0 IMM, 1 FOOTER */

struct smart_proto_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t flags;
	uint32_t len;
};

struct smart_proto_hello {
	uint16_t version;
	char transport[SMART_PROTO_TRANSPORT_MAX + 1]; /* NUL-terminated */
	uint8_t nonce[SMART_PROTO_NONCE_LEN];	       /* the dialer's, fresh */
};

/* CHALLENGE: the listener's fresh nonce and its proof over the HELLO. */
struct smart_proto_challenge {
	uint8_t nonce[SMART_PROTO_NONCE_LEN];
	uint8_t proof[SMART_PROTO_TAG_LEN];
};

struct smart_proto_welcome {
	int32_t status; /* 0 or a negative SMART_E* */
	uint16_t blade_id;
	uint8_t chunk_shift;
	uint8_t flags; /* SMART_PROTO_WF_* */
	uint64_t region_size;
	uint16_t lease_id; /* the client's lease on the blade, 1..65535 */
	uint32_t lease_ms; /* the blade's lease duration, 10..600000 */
	uint8_t token[SMART_PROTO_TOKEN_LEN];
	uint8_t blob[SMART_PROTO_BLOB_MAX];
	size_t blob_len;
	char sock[SMART_PROTO_SOCK_MAX + 1]; /* NUL-terminated, no leading NUL */
	size_t sock_len;
	uint8_t tag[SMART_PROTO_TAG_LEN]; /* the blade's, over the rest */
};

struct smart_proto_error {
	int32_t status;	  /* negative SMART_E* */
	uint16_t version; /* the sender's protocol version */
	char msg[SMART_PROTO_ERRMSG_MAX + 1]; /* NUL-terminated */
};

struct smart_proto_qp_connect {
	uint32_t req_id;
	uint8_t blob[SMART_PROTO_BLOB_MAX];
	size_t blob_len; /* 1..SMART_PROTO_BLOB_MAX */
	uint8_t tag[SMART_PROTO_TAG_LEN];
};

struct smart_proto_qp_accept {
	uint32_t req_id;
	int32_t status; /* 0, or an error and then no blob */
	uint32_t responder_id;
	uint8_t blob[SMART_PROTO_BLOB_MAX];
	size_t blob_len;
	uint8_t tag[SMART_PROTO_TAG_LEN];
};

/* PEER_CONNECT (id 0) and PEER_ACCEPT (id: the listener's name for the
 * connection, for its logs and smart-stat): one side's two-sided QP. */
struct smart_proto_peer {
	uint32_t id;
	uint32_t window;  /* 1..SMART_PROTO_PEER_WINDOW_MAX */
	uint32_t max_msg; /* PEER_MSG_MIN..PEER_MSG_MAX */
	uint8_t blob[SMART_PROTO_BLOB_MAX];
	size_t blob_len;   /* 1..SMART_PROTO_BLOB_MAX */
	uint32_t rndv_max; /* the longest rendezvous message the sender
				 * takes (0: none; else max_msg..
				 * SMART_PROTO_PEER_RNDV_MAX) */
	uint8_t rblob[SMART_PROTO_BLOB_MAX]; /* the sender's rendezvous
						 * region: peers READ there */
	size_t rblob_len; /* 0 iff rndv_max is 0, else 1..BLOB_MAX */
	/* The channel section (present iff chan): a CONNECT asks for a
	 * ring of slots x slot_bytes (slots a power of two, CHAN_SLOTS_MIN..
	 * MAX and equal to window; slot_bytes a multiple of 64, CHAN_BYTES_
	 * MIN..MAX; mode < CHAN_MODES) and carries no ring; an ACCEPT
	 * repeats them with the ring's blob (1..BLOB_MAX bytes) and, being
	 * the consumer's, no rendezvous region (rndv_max 0). */
	uint32_t chan; /* 0: an ordinary connection; 1: a channel */
	uint32_t ch_slots, ch_bytes, ch_mode, ch_tag;
	uint8_t ring[SMART_PROTO_BLOB_MAX];
	size_t ring_len;
	uint8_t tag[SMART_PROTO_TAG_LEN]; /* the sender's, over the rest */
};

/*
 * Header.  smart__proto_hdr_check() looks at the first `avail` bytes of a
 * stream: SMART_EAGAIN while fewer than 12 bytes are present and those seen
 * so far are plausible (so garbage is refused before a full header
 * arrives), SMART_EPROTO for a bad magic, unknown type, non-zero flags or a
 * length above the limit of its type, else 0 with *h filled.
 */
int smart__proto_hdr_check(const void *buf, size_t avail,
			   struct smart_proto_hdr *h);

/*
 * Encoders write one whole frame into buf (capacity cap) and its length to
 * *len.  SMART_EINVAL for a field out of range, SMART_ERANGE when cap is too
 * small; nothing useful is written on error.
 */
int smart__proto_enc_hello(const struct smart_proto_hello *m, void *buf,
			   size_t cap, size_t *len);
int smart__proto_enc_welcome(const struct smart_proto_welcome *m, void *buf,
			     size_t cap, size_t *len);
int smart__proto_enc_error(int32_t status, const char *msg, void *buf,
			   size_t cap, size_t *len);
int smart__proto_enc_qp_connect(const struct smart_proto_qp_connect *m,
				void *buf, size_t cap, size_t *len);
int smart__proto_enc_qp_accept(const struct smart_proto_qp_accept *m, void *buf,
			       size_t cap, size_t *len);
int smart__proto_enc_qp_close(uint32_t responder_id,
			      const uint8_t tag[SMART_PROTO_TAG_LEN], void *buf,
			      size_t cap, size_t *len);
int smart__proto_enc_bye(const uint8_t tag[SMART_PROTO_TAG_LEN], void *buf,
			 size_t cap, size_t *len);
int smart__proto_enc_challenge(const struct smart_proto_challenge *m, void *buf,
			       size_t cap, size_t *len);
int smart__proto_enc_auth(const uint8_t proof[SMART_PROTO_TAG_LEN], void *buf,
			  size_t cap, size_t *len);
/* type: SMART_PROTO_PEER_CONNECT or SMART_PROTO_PEER_ACCEPT */
int smart__proto_enc_peer(uint16_t type, const struct smart_proto_peer *m,
			  void *buf, size_t cap, size_t *len);

/*
 * Decoders take one payload (the bytes after the header).  SMART_EPROTO for
 * anything malformed.  smart__proto_dec_hello() returns SMART_EVERSION, with
 * only m->version set, when the version is not SMART_PROTO_VERSION: the rest
 * of a HELLO of another version is not interpreted.
 */
int smart__proto_dec_hello(const void *p, size_t len,
			   struct smart_proto_hello *m);
int smart__proto_dec_welcome(const void *p, size_t len,
			     struct smart_proto_welcome *m);
int smart__proto_dec_error(const void *p, size_t len,
			   struct smart_proto_error *m);
int smart__proto_dec_qp_connect(const void *p, size_t len,
				struct smart_proto_qp_connect *m);
int smart__proto_dec_qp_accept(const void *p, size_t len,
			       struct smart_proto_qp_accept *m);
int smart__proto_dec_qp_close(const void *p, size_t len, uint32_t *id,
			      uint8_t tag[SMART_PROTO_TAG_LEN]);
int smart__proto_dec_bye(const void *p, size_t len,
			 uint8_t tag[SMART_PROTO_TAG_LEN]);
int smart__proto_dec_peer(uint16_t type, const void *p, size_t len,
			  struct smart_proto_peer *m);
int smart__proto_dec_challenge(const void *p, size_t len,
			       struct smart_proto_challenge *m);
int smart__proto_dec_auth(const void *p, size_t len,
			  uint8_t proof[SMART_PROTO_TAG_LEN]);

/* 1 when s is a status a peer may send: SMART_E_LAST < s <= 0. */
int smart__proto_status_ok(int32_t s);

/*
 * Parse a listen/connect address "host:port" strictly: host is dotted IPv4,
 * "localhost" (127.0.0.1) or a bracketed IPv6 literal "[::1]"; port is
 * 1..5 decimal digits, 0..65535.  Fills a struct sockaddr_storage (passed as
 * void * to keep socket headers out of this one) and its length.
 * SMART_EINVAL on anything else.
 */
int smart__proto_parse_addr(const char *hostport, void *ss, size_t ss_cap,
			    uint32_t *ss_len);
#endif
