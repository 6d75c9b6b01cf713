/*
 * The per-client session state machine of the blade (docs/protocol.md).
 *
 * A session consumes bytes from its input buffer and appends replies to its
 * output buffer; it never does I/O itself, so the control thread (ctl.c)
 * and the fuzz entry smart__blade_session_feed() drive the same code.
 *
 * States: SESS_HELLO accepts only HELLO (or BYE); a good HELLO is
 * answered with a CHALLENGE (our fresh nonce and our proof of the secret
 * over the HELLO) and moves to SESS_AUTH, which accepts only the client's
 * AUTH (its proof over both nonces), or its ERROR when it refused our
 * proof.  A good AUTH is refused with SMART_EBUSY when the control thread
 * has flagged the blade full (s->no_room), and sets s->authed otherwise
 * (a WELCOME, tagged); SESS_READY accepts QP_CONNECT, QP_CLOSE and BYE;
 * anything else, and any malformed frame, queues an ERROR and moves to
 * SESS_CLOSING, after which no input is interpreted.  The transport and
 * the room are looked at only after the AUTH: nothing is learnt without
 * the secret.  Every frame after the AUTH, either way, is tagged with its
 * type and its sequence number (wire/auth.h): one that is not is refused
 * (SMART_EACCES) before it is looked at.  A frame is handled only when out[] has room for the largest
 * reply, which is what bounds out[] without ever dropping a reply.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "blade/blade_int.h"
#include "smart/status.h"
#include "util/clock.h"
#include "util/mutant.h"

uint64_t smart__blade_now_ms(void)
{
	return smart__mono_ms();
}

/* Who is at the other end of fd, as "host:port" ("[v6]:port", "local"
 * for a unix socket, "fd N" when it cannot be told): what the log names a
 * refused or malformed peer by (issue 29: an fd number tells nothing). */
static void peer_name(int fd, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";

	snprintf(out, len, "fd %d", fd);
	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(a->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, ntohs(a->sin6_port));
	} else if (ss.ss_family == AF_UNIX) {
		snprintf(out, len, "local (fd %d)", fd);
	}
}

struct blade_session *smart__blade_sess_new(struct smart_blade *b, int fd)
{
	struct blade_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fd = fd;
	peer_name(fd, s->peer, sizeof(s->peer));
	s->state = SESS_HELLO;
	s->auth.key = b->secret;
	s->auth.key_len = b->secret_len;
	s->deadline = smart__blade_now_ms() + (uint64_t)b->auth_timeout_ms;
	return s;
}

void smart__blade_sess_free(struct smart_blade *b, struct blade_session *s)
{
	if (!s)
		return;
	/* the responders first: once the lease is fenced, peers may take
	 * over what the client holds, and on a NIC a WR of the client still
	 * arriving on a live responder QP would land under them */
	if (SMART_M_BLADE_FENCE_FIRST)
		smart__blade_lease_end(b, s->lease_id, s->said_bye);
	for (uint32_t i = 0; i < s->resp_cap; i++)
		if (s->resp[i])
			b->ops->responder_destroy(s->resp[i]);
	if (!SMART_M_BLADE_FENCE_FIRST)
		smart__blade_lease_end(b, s->lease_id, s->said_bye);
	free(s->resp);
	if (s->fd >= 0)
		close(s->fd);
	explicit_bzero(s->fetch, sizeof(s->fetch));
	explicit_bzero(&s->auth, sizeof(s->auth));
	free(s);
}

static void out_put(struct blade_session *s, const uint8_t *p, size_t n)
{
	/* Callers reserved BLADE_REPLY_MAX bytes before handling the frame. */
	memcpy(s->out + s->out_len, p, n);
	s->out_len += n;
}

void smart__blade_sess_refuse(struct smart_blade *b, struct blade_session *s,
			      int status, const char *msg)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	size_t n;

	if (s->state == SESS_CLOSING || s->state == SESS_DEAD)
		return;
	if (!smart__proto_enc_error(status, msg, f, sizeof(f), &n) &&
	    BLADE_OUT_CAP - s->out_len >= n)
		out_put(s, f, n);
	s->state = SESS_CLOSING;
	s->token_live = 0;
	s->deadline = smart__blade_now_ms() + BLADE_LINGER_MS;
}

static void malformed(struct smart_blade *b, struct blade_session *s,
		      const char *why)
{
	atomic_fetch_add_explicit(&b->n_malformed, 1, memory_order_relaxed);
	smart__info(&b->log, "session %s: malformed input: %s", s->peer, why);
	smart__blade_sess_refuse(b, s, SMART_EPROTO, why);
}

static void refused(struct smart_blade *b, struct blade_session *s, int status,
		    const char *msg)
{
	atomic_fetch_add_explicit(&b->n_refused, 1, memory_order_relaxed);
	smart__info(&b->log, "session %s: refused: %s", s->peer, msg);
	smart__blade_sess_refuse(b, s, status, msg);
}

static void welcome(struct smart_blade *b, struct blade_session *s)
{
	struct smart_proto_welcome w;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_WELCOME_MAX];
	size_t n;

	memset(&w, 0, sizeof(w));
	if (smart__blade_lease_assign(b, &s->lease_id)) {
		smart__warn(&b->log, "session %s: every lease slot is live",
			    s->peer);
		smart__blade_sess_refuse(b, s, SMART_EBUSY,
					 "too many clients: no lease slot");
		return;
	}
	w.lease_id = s->lease_id;
	w.lease_ms = b->lease_ms;
	w.blade_id = b->id;
	w.chunk_shift = b->chunk_shift;
	w.region_size = b->size;
	memcpy(w.blob, b->blob, b->blob_len);
	w.blob_len = b->blob_len;
	if (b->uname_len) {
		if (getrandom(w.token, sizeof(w.token), 0) !=
		    (ssize_t)sizeof(w.token)) {
			smart__err(&b->log, "getrandom: %s", strerror(errno));
			smart__blade_sess_refuse(b, s, SMART_ESYS,
						 "blade cannot make a token");
			return;
		}
		w.flags = SMART_PROTO_WF_FETCH_FD;
		smart__auth_tag(&s->auth, SMART_AUTH_D_FETCH, w.token,
				sizeof(w.token), s->fetch);
		memcpy(w.sock, b->uname, b->uname_len + 1);
		w.sock_len = b->uname_len;
		s->token_live = 1;
	}
	if (smart__proto_enc_welcome(&w, f, sizeof(f), &n)) {
		smart__err(&b->log, "cannot encode welcome");
		smart__blade_sess_refuse(b, s, SMART_ESYS, "internal error");
		return;
	}
	explicit_bzero(w.token, sizeof(w.token));
	smart__auth_seal(&s->auth, SMART_AUTH_L_WELCOME, f, n);
	out_put(s, f, n);
	s->state = SESS_READY;
	s->authed = 1;
	s->deadline = 0;
	atomic_fetch_add_explicit(&b->n_authenticated, 1, memory_order_relaxed);
}

/* Our nonce (a socketless fuzz session's is zero) and our proof. */
static int challenge(struct smart_blade *b, struct blade_session *s)
{
	struct smart_proto_challenge c;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_CHALLENGE_LEN];
	size_t n;

	if (s->fixed_nonce)
		memset(s->auth.nl, 0, sizeof(s->auth.nl));
	else if (smart__auth_nonce(s->auth.nl))
		return SMART_ESYS;
	memcpy(c.nonce, s->auth.nl, sizeof(c.nonce));
	smart__auth_tag(&s->auth, SMART_AUTH_L_CHALLENGE, s->hello,
			s->hello_len, c.proof);
	if (smart__proto_enc_challenge(&c, f, sizeof(f), &n))
		return SMART_ESYS;
	out_put(s, f, n);
	return 0;
}

static void on_hello(struct smart_blade *b, struct blade_session *s,
		     const uint8_t *p, size_t len)
{
	struct smart_proto_hello h;
	char msg[SMART_PROTO_ERRMSG_MAX + 1];
	int rc = smart__proto_dec_hello(p, len, &h);

	if (rc == SMART_EVERSION) {
		snprintf(msg, sizeof(msg),
			 "protocol version %u too old or "
			 "unknown, blade speaks %d: upgrade the client",
			 h.version, SMART_PROTO_VERSION);
		refused(b, s, SMART_EVERSION, msg);
		return;
	}
	if (rc) {
		malformed(b, s, "malformed hello");
		return;
	}
	memcpy(s->hello, p, len);
	s->hello_len = len;
	memcpy(s->auth.nd, h.nonce, sizeof(s->auth.nd));
	memcpy(s->transport, h.transport, sizeof(s->transport));
	if (challenge(b, s)) {
		smart__err(&b->log, "session %s: cannot make a nonce", s->peer);
		smart__blade_sess_refuse(b, s, SMART_ESYS, "internal error");
		return;
	}
	s->state = SESS_AUTH;
}

static void on_auth(struct smart_blade *b, struct blade_session *s,
		    const uint8_t *p, size_t len)
{
	uint8_t proof[SMART_PROTO_TAG_LEN];
	char msg[SMART_PROTO_ERRMSG_MAX + 1];

	if (smart__proto_dec_auth(p, len, proof)) {
		malformed(b, s, "malformed auth");
		return;
	}
	/* The proof first, so that nothing is learnt without the secret. */
	if (!SMART_M_BOOT_NO_PROOF_CHECK &&
	    !smart__auth_check(&s->auth, SMART_AUTH_D_AUTH, s->hello,
			       s->hello_len, proof)) {
		refused(b, s, SMART_EACCES, "secret refused");
		return;
	}
	if (strcmp(s->transport, b->transport)) {
		snprintf(msg, sizeof(msg),
			 "transport %s not served, blade "
			 "uses %s",
			 s->transport, b->transport);
		refused(b, s, SMART_ENOTSUP, msg);
		return;
	}
	/* Only here, after the secret: a peer without it learns nothing of
	 * the blade's load. */
	if (s->no_room) {
		refused(b, s, SMART_EBUSY, "too many clients");
		return;
	}
	welcome(b, s);
}

/* The client refused our CHALLENGE (the secrets differ): it says why and
 * goes.  Nothing to answer, but what is queued (the CHALLENGE, when both
 * frames came in one read) is still flushed before the half-close, as
 * for any closing session. */
static void on_client_error(struct smart_blade *b, struct blade_session *s,
			    const uint8_t *p, size_t len)
{
	struct smart_proto_error e;

	if (smart__proto_dec_error(p, len, &e)) {
		malformed(b, s, "malformed error");
		return;
	}
	atomic_fetch_add_explicit(&b->n_refused, 1, memory_order_relaxed);
	smart__info(&b->log, "session %s: the client refused us: %s (%s)",
		    s->peer, e.msg, smart_status_name(e.status));
	s->state = SESS_CLOSING;
	s->deadline = smart__blade_now_ms() + BLADE_LINGER_MS;
}

/* Lowest free responder slot, growing the table up to the cap; -1 if full. */
static int resp_slot(struct blade_session *s)
{
	struct smart_tp_responder **t;
	uint32_t cap, old;

	for (uint32_t i = 0; i < s->resp_cap; i++)
		if (!s->resp[i])
			return (int)i;
	if (s->resp_cap >= BLADE_MAX_RESPONDERS)
		return -1;
	cap = s->resp_cap ? s->resp_cap * 2 : 8;
	t = realloc(s->resp, cap * sizeof(*t));
	if (!t)
		return -1;
	memset(t + s->resp_cap, 0, (cap - s->resp_cap) * sizeof(*t));
	s->resp = t;
	old = s->resp_cap;
	s->resp_cap = cap;
	return (int)old;
}

static int do_accept(struct smart_blade *b, struct blade_session *s,
		     const struct smart_proto_qp_connect *c,
		     struct smart_proto_qp_accept *a)
{
	struct smart_tp_responder *r;
	int slot = resp_slot(s), rc;

	if (slot < 0)
		return SMART_EBUSY;
	a->blob_len = sizeof(a->blob);
	rc = b->ops->accept(b->dom, b->mr, c->blob, c->blob_len, a->blob,
			    &a->blob_len, &r);
	if (rc)
		return rc < 0 && rc > SMART_E_LAST ? rc : SMART_ESYS;
	if (a->blob_len == 0 || a->blob_len > SMART_TP_BLOB_MAX) {
		b->ops->responder_destroy(r);
		return SMART_ESYS;
	}
	s->resp[slot] = r;
	s->nresp++;
	a->responder_id = (uint32_t)slot;
	return 0;
}

static void on_qp_connect(struct smart_blade *b, struct blade_session *s,
			  const uint8_t *p, size_t len)
{
	struct smart_proto_qp_connect c;
	struct smart_proto_qp_accept a;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_QPA_MAX];
	size_t n;

	if (smart__proto_dec_qp_connect(p, len, &c)) {
		malformed(b, s, "malformed qp_connect");
		return;
	}
	memset(&a, 0, sizeof(a));
	a.req_id = c.req_id;
	a.status = do_accept(b, s, &c, &a);
	if (a.status) {
		smart__info(&b->log, "session %s: qp accept failed: %s",
			    s->peer, smart_strerror(a.status));
		a.blob_len = 0;
		a.responder_id = 0;
	}
	if (smart__proto_enc_qp_accept(&a, f, sizeof(f), &n)) {
		smart__blade_sess_refuse(b, s, SMART_ESYS, "internal error");
		return;
	}
	smart__auth_seal_seq(&s->auth, SMART_AUTH_L_SESSION, s->seq_out++, f,
			     n);
	out_put(s, f, n);
}

static void on_qp_close(struct smart_blade *b, struct blade_session *s,
			const uint8_t *p, size_t len)
{
	uint8_t tag[SMART_PROTO_TAG_LEN];
	uint32_t id;

	if (smart__proto_dec_qp_close(p, len, &id, tag)) {
		malformed(b, s, "malformed qp_close");
		return;
	}
	/* Closing an unknown id is harmless: the client may retry a close. */
	if (id >= s->resp_cap || !s->resp[id]) {
		smart__dbg(&b->log, "session %s: close of unknown qp %u",
			   s->peer, id);
		return;
	}
	b->ops->responder_destroy(s->resp[id]);
	s->resp[id] = NULL;
	s->nresp--;
}

/* A frame of an authenticated session: its tag must be the client's for
 * this type and the next sequence number.  A BYE before the WELCOME has
 * nothing to tag it with and nothing to release. */
static int session_tag_ok(struct smart_blade *b, struct blade_session *s,
			  uint16_t type, const uint8_t *p, size_t len)
{
	if (s->state != SESS_READY || SMART_M_BOOT_NO_SESSION_TAG)
		return 1;
	if (smart__auth_open_seq(&s->auth, SMART_AUTH_D_SESSION, s->seq_in,
				 type, p, len)) {
		s->seq_in++;
		return 1;
	}
	refused(b, s, SMART_EACCES,
		"frame not tagged with this session's "
		"proof");
	return 0;
}

static void dispatch(struct smart_blade *b, struct blade_session *s,
		     uint16_t type, const uint8_t *p, size_t len)
{
	uint8_t tag[SMART_PROTO_TAG_LEN];

	if ((type == SMART_PROTO_BYE || type == SMART_PROTO_QP_CONNECT ||
	     type == SMART_PROTO_QP_CLOSE) &&
	    !session_tag_ok(b, s, type, p, len))
		return;
	if (type == SMART_PROTO_BYE) {
		if (smart__proto_dec_bye(p, len, tag)) {
			malformed(b, s, "malformed bye");
		} else {
			s->said_bye = 1;
			s->state = SESS_DEAD;
		}
	} else if (s->state == SESS_HELLO && type == SMART_PROTO_HELLO) {
		on_hello(b, s, p, len);
	} else if (s->state == SESS_AUTH && type == SMART_PROTO_AUTH) {
		on_auth(b, s, p, len);
	} else if (s->state == SESS_AUTH && type == SMART_PROTO_ERROR) {
		on_client_error(b, s, p, len);
	} else if (s->state == SESS_READY && type == SMART_PROTO_QP_CONNECT) {
		on_qp_connect(b, s, p, len);
	} else if (s->state == SESS_READY && type == SMART_PROTO_QP_CLOSE) {
		on_qp_close(b, s, p, len);
	} else {
		malformed(b, s, "unexpected message type");
	}
}

void smart__blade_sess_process(struct smart_blade *b, struct blade_session *s)
{
	struct smart_proto_hdr h;
	size_t flen;
	int rc;

	while (s->state == SESS_HELLO || s->state == SESS_AUTH ||
	       s->state == SESS_READY) {
		rc = smart__proto_hdr_check(s->in, s->in_len, &h);
		if (rc == SMART_EAGAIN)
			return;
		if (rc) {
			/* Includes an oversized length: the payload is never
			 * read, the session closes after the ERROR. */
			malformed(b, s, "malformed frame header");
			return;
		}
		flen = SMART_PROTO_HDR_LEN + h.len;
		if (s->in_len < flen ||
		    BLADE_OUT_CAP - s->out_len < BLADE_REPLY_MAX)
			return;
		dispatch(b, s, h.type, s->in + SMART_PROTO_HDR_LEN, h.len);
		memmove(s->in, s->in + flen, s->in_len - flen);
		s->in_len -= flen;
		/* an old client's HELLO held its secret: keep no copy */
		explicit_bzero(s->in + s->in_len, flen);
	}
}

int smart__blade_token_take(struct smart_blade *b, const uint8_t *fetch,
			    uint8_t tag[SMART_PROTO_TAG_LEN])
{
	struct blade_session *hit = NULL;

	for (int i = 0; i < b->nsess; i++) {
		struct blade_session *s = b->sess[i];
		volatile uint8_t diff = 0;

		for (size_t k = 0; k < SMART_PROTO_FETCH_LEN; k++)
			diff |= (uint8_t)(s->fetch[k] ^ fetch[k]);
		if (diff == 0 && s->token_live && s->state == SESS_READY)
			hit = s;
	}
	if (!hit)
		return SMART_EACCES;
	hit->token_live = 0;
	explicit_bzero(hit->fetch, sizeof(hit->fetch));
	/* the client takes the descriptor only with our proof over it: one
	 * a squatter of our socket's name passes instead has none */
	return smart__auth_fd_tag(&hit->auth, SMART_AUTH_L_FETCH, b->mr->fd,
				  tag);
}

int smart__blade_session_feed(struct smart_blade *b, const uint8_t *data,
			      size_t len,
			      void (*sink)(const uint8_t *, size_t, void *),
			      void *arg)
{
	struct blade_session *s = smart__blade_sess_new(b, -1);
	int state;

	if (!s)
		return SMART_ENOMEM;
	s->fixed_nonce = 1;
	while (s->state == SESS_HELLO || s->state == SESS_AUTH ||
	       s->state == SESS_READY) {
		size_t room = BLADE_IN_CAP - s->in_len;
		size_t n = len < room ? len : room;

		if (n)
			memcpy(s->in + s->in_len, data, n);
		s->in_len += n;
		data += n;
		len -= n;
		smart__blade_sess_process(b, s);
		if (sink && s->out_len)
			sink(s->out, s->out_len, arg);
		s->out_len = 0;
		if (n == 0)
			break;
	}
	if (sink && s->out_len)
		sink(s->out, s->out_len, arg);
	state = s->state;
	smart__blade_sess_free(b, s);
	return state;
}
