/*
 * Peer handshakes (docs/rpc.md): an endpoint listening for peers, and
 * dialing one.  Out of band over a stream socket, as the blade bootstrap
 * (X-RDMA: TCP setup ~0.1 ms against rdma_cm's ~4 ms):
 *
 *   dialer -> listener   HELLO (version, transport, dialer nonce)
 *   listener -> dialer   CHALLENGE (listener nonce, listener proof)
 *   dialer -> listener   AUTH (dialer proof)
 *   dialer -> listener   PEER_CONNECT (window, max_msg, rndv_max, QP blob,
 *                        staging region blob, tag) [+ fds]
 *                        (AUTH and PEER_CONNECT in one send)
 *   listener -> dialer   PEER_ACCEPT (id, the same of its own, tag)
 *                        [+ fds]
 *   either way           ERROR (status, reason), then close
 *
 * The secret never crosses the socket (wire/auth.h): each side proves it
 * by an HMAC over both fresh nonces and its role.  The listener proves it
 * first, so a dialer sends nothing that needs a genuine listener (its
 * proof, its QP and staging, their descriptors) and maps nothing before;
 * the PEER frames are tagged, so what each side announced cannot be
 * changed on the way.  On shm the other end's uid (SO_PEERCRED) must also
 * be ours, root's or one the configuration allows, both ways: the
 * abstract name can be bound by any local process.
 *
 * On shm the QPs' receive segments and the staging regions (the memory a
 * peer READs rendezvous payloads from) are descriptors that travel with
 * the blobs (SCM_RIGHTS), so the listener is an abstract unix socket
 * "smart-rpc:<port>", the TCP port of the address held (bound, not
 * listening) so that the port is the endpoint's on this host; on verbs it
 * is the TCP address itself.
 *
 * The listener side runs inside the endpoint's poll: every RPC_TICK_NS
 * in full (deadlines, accepts, a read of every handshake), and between
 * ticks as its frames arrive (hs_poll: one epoll_wait tells which sockets
 * are ready, looked at after a poll that found nothing, at most every
 * RPC_HS_NS, and at most PEER_HS_BATCH of them served per look, so that a
 * flood of dialers cannot hold the poll from the data path): non-blocking
 * accepts and reads, at most max_pending handshakes at once
 * (a newcomer evicts the oldest one still unauthenticated, so idle peers
 * without the secret cannot lock real ones out), each bounded by the
 * endpoint's timeout.  Nothing is learnt without the secret: the dialer's
 * proof is checked before the transport name and before any room is
 * looked at.
 *
 * Invariant: every descriptor a peer passes is either given to the
 * transport (which owns it then) or closed; none is kept past its
 * handshake.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>

#include "msg/msg_int.h"
#include "util/log.h"
#include "util/mutant.h"
#include "util/sockio.h"

#define PEER_ACCEPTS_PER_TICK 16
#define PEER_HS_BATCH	      4 /* accepts and reads per look between ticks */
#define PEER_LFD_KEY                                                           \
	UINT32_MAX	     /* the listening socket in hfd; a handshake
				 * socket is its slot's index */
#define PEER_REFUSED_MS 1000 /* a refused dialer's time to read why */

/* "smart-rpc:<port>" as an abstract unix address. */
static uint32_t unix_addr(uint16_t port, struct sockaddr_un *un)
{
	char name[32];

	snprintf(name, sizeof(name), "smart-rpc:%u", port);
	return smart__sock_abstract(name, un);
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

/* shm: the uid at the other end of fd (as it was at its connect or
 * listen) is ours, root's (who can read our memory anyway) or one that
 * cfg.allow_uid names. */
static int uid_ok(const struct smart_rpc *rpc, int fd, unsigned *uid)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	*uid = ~0u;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    len != sizeof(cr))
		return 0;
	*uid = cr.uid;
	if (SMART_M_RPC_NO_PEERCRED || cr.uid == 0 || cr.uid == geteuid())
		return 1;
	for (size_t i = 0; i < SMART_ARRAY_SIZE(rpc->cfg.allow_uid); i++)
		if (rpc->cfg.allow_uid[i] && rpc->cfg.allow_uid[i] == cr.uid)
			return 1;
	return 0;
}

/* Who dialed us on fd, for the connection's peer name (smart-stat's PEER
 * column, the log): its address on TCP, its pid and uid on a unix socket
 * (shm), "peer N" (our count of accepted peers) when neither can be told.
 * Issue 29: "peer 1" said nothing about who it was. */
static void peer_name(int fd, unsigned id, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ucred cr;
	socklen_t cl = sizeof(cr);

	snprintf(out, len, "peer %u", id);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
		smart__sock_addr_text(&ss, out, len);
	else if (ss.ss_family == AF_UNIX &&
		 !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) &&
		 cl == sizeof(cr))
		snprintf(out, len, "pid %d uid %u", (int)cr.pid,
			 (unsigned)cr.uid);
}

/*
 * The key of one proof: the ctx's secret as it is now, under the ctx's
 * lock until key_drop.  smart_ctx_set_secret may rotate it from any thread
 * (the old one wiped and freed), so a handshake keeps only its nonces
 * (n) and never a pointer to the secret across its waits: a kept one
 * would prove with freed memory, whatever reused it.
 */
static void key_take(struct smart_rpc *rpc, const struct smart__auth *n,
		     struct smart__auth *a)
{
	*a = *n;
	smart__ctx_lock(rpc->ctx);
	if (SMART_M_RPC_KEY_KEPT && n->key)
		return;
	a->key = (const uint8_t *)smart__ctx_secret(rpc->ctx, &a->key_len);
}

static void key_drop(struct smart_rpc *rpc, struct smart__auth *a)
{
	smart__ctx_unlock(rpc->ctx);
	explicit_bzero(a, sizeof(*a));
}

static void key_tag(struct smart_rpc *rpc, const struct smart__auth *n,
		    int label, const void *msg, size_t len, uint8_t *out)
{
	struct smart__auth a;

	key_take(rpc, n, &a);
	smart__auth_tag(&a, label, msg, len, out);
	key_drop(rpc, &a);
}

static int key_check(struct smart_rpc *rpc, const struct smart__auth *n,
		     int label, const void *msg, size_t len, const uint8_t *tag)
{
	struct smart__auth a;
	int ok;

	key_take(rpc, n, &a);
	ok = smart__auth_check(&a, label, msg, len, tag);
	key_drop(rpc, &a);
	return ok;
}

/* A PEER frame's tag covers the descriptors it goes with (shm: all
 * SMART_SOCK_FDS, verbs: none): a relay cannot pass its own. */
static int peer_nfds(const struct smart_rpc *rpc)
{
	return rpc->passes_fds && !SMART_M_RPC_FDS_UNTAGGED ? SMART_SOCK_FDS :
							      0;
}

static int key_seal(struct smart_rpc *rpc, const struct smart__auth *n,
		    int label, const int *fds, void *frame, size_t len)
{
	struct smart__auth a;
	int rc;

	key_take(rpc, n, &a);
	rc = smart__auth_seal_fds(&a, label, fds, peer_nfds(rpc), frame, len);
	key_drop(rpc, &a);
	return rc;
}

static int key_open(struct smart_rpc *rpc, const struct smart__auth *n,
		    int label, const int *fds, const void *payload, size_t len)
{
	struct smart__auth a;
	int ok;

	key_take(rpc, n, &a);
	ok = smart__auth_open_fds(&a, label, fds, peer_nfds(rpc), payload, len);
	key_drop(rpc, &a);
	return ok;
}

/* ---- listening --------------------------------------------------------- */

/* Put fd in the set of sockets hs_poll looks at, under key. */
static int hs_add(struct smart_rpc *rpc, int fd, uint32_t key)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = key };

	return epoll_ctl(rpc->hfd, EPOLL_CTL_ADD, fd, &ev) ? SMART_ENOMEM : 0;
}

static int hs_open(struct smart_rpc *rpc)
{
	rpc->hfd = epoll_create1(EPOLL_CLOEXEC);
	if (rpc->hfd < 0)
		return SMART_ESYS;
	rpc->hs_next = 0;
	return hs_add(rpc, rpc->lfd, PEER_LFD_KEY);
}

int smart_rpc_listen(smart_rpc_t *rpc, const char *hostport)
{
	struct sockaddr_storage ss, bound;
	uint32_t len;
	int rc, tfd, ufd = -1;

	if (!rpc || !hostport)
		return SMART_EINVAL;
	if (rpc->lfd >= 0)
		return SMART_EEXIST;
	if (smart__proto_parse_addr(hostport, &ss, sizeof(ss), &len))
		return SMART_EINVAL;
	rc = smart__sock_listen(&ss, len, rpc->passes_fds ? 0 : 64, &tfd,
				&bound);
	if (!rc && rpc->passes_fds) {
		struct sockaddr_un un;

		rc = smart__sock_listen(&un, unix_addr(addr_port(&bound), &un),
					64, &ufd, NULL);
		if (rc)
			close(tfd);
	}
	if (rc) {
		smart__err(rpc->log, "rpc: cannot listen at %s: %s", hostport,
			   smart_strerror(rc));
		return rc;
	}
	if (rpc->passes_fds) {
		rpc->lfd = ufd;
		rpc->pfd = tfd;
	} else {
		rpc->lfd = tfd;
	}
	rc = hs_open(rpc);
	if (rc) {
		smart__rpc_listen_close(rpc);
		return rc;
	}
	smart__sock_addr_text(&bound, rpc->laddr, sizeof(rpc->laddr));
	if (smart__rpc_event_add(rpc, rpc->lfd))
		smart__warn(rpc->log,
			    "rpc: the listening socket is "
			    "not in the event descriptor's set: connections "
			    "are served at the next wake");
	if (!smart__ctx_secret(rpc->ctx, &(size_t){ 0 }))
		smart__warn(rpc->log,
			    "rpc: listening at %s without a "
			    "shared secret: any local peer may connect",
			    rpc->laddr);
	return 0;
}

int smart_rpc_listen_addr(const smart_rpc_t *rpc, char *buf, size_t len)
{
	if (!rpc || !buf || !len)
		return SMART_EINVAL;
	if (rpc->lfd < 0)
		return SMART_ENOENT;
	if ((size_t)snprintf(buf, len, "%s", rpc->laddr) >= len)
		return SMART_ERANGE;
	return 0;
}

/* What a slot got from its dialer goes: descriptors, input (an old
 * dialer's HELLO held its secret), nonces. */
static void pend_forget(struct rpc_pend *p)
{
	smart__rpc_fds_close(p->fd_got);
	explicit_bzero(p->in, p->in_len);
	explicit_bzero(&p->auth, sizeof(p->auth));
	p->in_len = 0;
	p->authed = 0;
	p->challenged = 0;
}

/* What a slot's socket still holds goes before it is closed: a
 * descriptor left queued in it would be dropped by the kernel in our
 * thread, its linger with it (smart__rpc_fds_close).  Shut for reading
 * first: a unix stream socket then refuses its peer's sends, so the drain
 * is bounded by what the socket held.  Only where descriptors travel
 * (shm): TCP (verbs) carries none, and would take bytes after the shut. */
static void pend_empty(const struct smart_rpc *rpc, int fd)
{
	int fds[SMART_SOCK_FDS], extra = 0;
	uint8_t b[4096];
	long r;

	if (SMART_M_RPC_CLOSE_UNREAD || !rpc->passes_fds)
		return;
	shutdown(fd, SHUT_RD);
	do {
		smart__rpc_fds_none(fds);
		r = smart__sock_recv_some(fd, b, sizeof(b), fds, SMART_SOCK_FDS,
					  &extra);
		smart__rpc_fds_close(fds);
	} while (r > 0 || (r < 0 && errno == EINTR));
}

/* A socket closed leaves the epoll sets it was in (hfd, efd): nothing
 * else holds it. */
static void pend_close(struct smart_rpc *rpc, struct rpc_pend *p)
{
	if (p->fd >= 0) {
		pend_empty(rpc, p->fd);
		close(p->fd);
		rpc->npend--;
	}
	pend_forget(p);
	p->fd = -1;
	p->refused = 0;
}

void smart__rpc_listen_close(struct smart_rpc *rpc)
{
	if (rpc->lfd < 0)
		return;
	for (uint32_t i = 0; i < rpc->cfg.max_pending; i++)
		pend_close(rpc, &rpc->pend[i]);
	close(rpc->lfd);
	if (rpc->pfd >= 0)
		close(rpc->pfd);
	if (rpc->hfd >= 0)
		close(rpc->hfd);
	rpc->lfd = rpc->pfd = rpc->hfd = -1;
}

/* Refuse a handshake: an ERROR frame, best effort, and our side shut;
 * the slot then drains what the dialer still sends (it may have sent its
 * PEER_CONNECT behind the HELLO) until it closes, for at most
 * PEER_REFUSED_MS: closing a socket with unread input resets it, and the
 * dialer would read that instead of why it was refused.  A refused slot
 * is evicted like an unauthenticated one. */
static void pend_refuse(struct smart_rpc *rpc, struct rpc_pend *p, int status,
			const char *why)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	int64_t until = smart__now_ms() + PEER_REFUSED_MS;
	size_t n;

	rpc->past.handshakes_refused++;
	smart__info(rpc->log, "rpc: handshake refused: %s", why);
	if (!smart__proto_enc_error(status, why, f, sizeof(f), &n) &&
	    send(p->fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		smart__dbg(rpc->log, "rpc: refusal not sent");
	shutdown(p->fd, SHUT_WR);
	pend_forget(p);
	p->refused = 1;
	if (p->deadline > until)
		p->deadline = until;
}

/* A refused slot: read and drop; closed at the dialer's EOF. */
static void pend_drain(struct smart_rpc *rpc, struct rpc_pend *p)
{
	int fds[SMART_SOCK_FDS], extra = 0;
	long r;

	smart__rpc_fds_none(fds);
	for (;;) {
		r = smart__sock_recv_some(p->fd, p->in, sizeof(p->in), fds,
					  SMART_SOCK_FDS, &extra);
		smart__rpc_fds_close(fds);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0) {
			pend_close(rpc, p);
			return;
		}
	}
	explicit_bzero(p->in, sizeof(p->in));
}

/* A HELLO bearing the nonce of one of our own dials in progress: our
 * dial came back to us through a relay. */
static int own_dial(const struct smart_rpc *rpc, const uint8_t *nd)
{
	for (const struct rpc_dialing *d = rpc->dialing; d; d = d->next)
		if (!memcmp(d->nd, nd, sizeof(d->nd)))
			return 1;
	return 0;
}

/* Answer a HELLO with our nonce and our proof over it. */
static int challenge(struct smart_rpc *rpc, struct rpc_pend *p)
{
	struct smart_proto_challenge c;
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_CHALLENGE_LEN];
	size_t n;
	int rc = smart__auth_nonce(p->auth.nl);

	memcpy(c.nonce, p->auth.nl, sizeof(c.nonce));
	key_tag(rpc, &p->auth, SMART_AUTH_L_CHALLENGE, p->hello, p->hello_len,
		c.proof);
	if (!rc)
		rc = smart__proto_enc_challenge(&c, f, sizeof(f), &n);
	/* one small frame to a socket that has sent us all it had */
	if (!rc)
		rc = smart__sock_send_all(p->fd, f, n, NULL, 0,
					  smart__now_ms());
	/* the dialer's turn: a wait poll finding nothing yields to it */
	smart__worker_hand_off(rpc->w);
	return rc;
}

static int hello_in(struct smart_rpc *rpc, struct rpc_pend *p,
		    const uint8_t *pl, size_t len)
{
	struct smart_proto_hello h;
	int rc = smart__proto_dec_hello(pl, len, &h);

	if (rc == SMART_EVERSION) {
		pend_refuse(rpc, p, rc,
			    "protocol version too old or unknown: "
			    "upgrade the dialer");
		return 0;
	}
	if (rc) {
		pend_refuse(rpc, p, SMART_EPROTO, "malformed hello");
		return 0;
	}
	if (!SMART_M_RPC_NO_REFLECT_CHECK && own_dial(rpc, h.nonce)) {
		pend_refuse(rpc, p, SMART_EACCES, "our own dial reflected");
		return 0;
	}
	memcpy(p->hello, pl, len);
	p->hello_len = len;
	memcpy(p->auth.nd, h.nonce, sizeof(p->auth.nd));
	memcpy(p->transport, h.transport, sizeof(p->transport));
	if (SMART_M_RPC_KEY_KEPT) {
		p->auth.key = (const uint8_t *)
			smart__ctx_secret(rpc->ctx, &p->auth.key_len);
	}
	if (challenge(rpc, p)) {
		pend_refuse(rpc, p, SMART_ESYS, "challenge not sent");
		return 0;
	}
	p->challenged = 1;
	/* our side made while the dialer answers (the next poll); one at
	 * most beyond the cache, whoever sent this HELLO */
	if (SMART_M_RPC_AHEAD_UNBOUNDED || (!rpc->nspare && !rpc->ahead_due))
		rpc->ahead_due++;
	return 1;
}

static int auth_in(struct smart_rpc *rpc, struct rpc_pend *p, const uint8_t *pl,
		   size_t len)
{
	uint8_t proof[SMART_PROTO_TAG_LEN];

	if (smart__proto_dec_auth(pl, len, proof)) {
		pend_refuse(rpc, p, SMART_EPROTO, "malformed auth");
		return 0;
	}
	if (!SMART_M_RPC_NO_SECRET_CHECK &&
	    !key_check(rpc, &p->auth, SMART_AUTH_D_AUTH, p->hello, p->hello_len,
		       proof)) {
		pend_refuse(rpc, p, SMART_EACCES, "secret refused");
		return 0;
	}
	if (strcmp(p->transport, rpc->tp->name)) {
		pend_refuse(rpc, p, SMART_ENOTSUP, "transport not served");
		return 0;
	}
	p->authed = 1;
	return 1;
}

/* The dialer refused our proof (the secrets differ): it says why. */
static void dialer_error(struct smart_rpc *rpc, struct rpc_pend *p,
			 const uint8_t *pl, size_t len)
{
	struct smart_proto_error e;

	rpc->past.handshakes_refused++;
	if (!smart__proto_dec_error(pl, len, &e))
		smart__info(rpc->log,
			    "rpc: a dialer refused us: %s "
			    "(%s)",
			    e.msg, smart_status_name(e.status));
	pend_close(rpc, p);
}

/* Our side of a connection, as a PEER frame tells it: window, message
 * sizes, the QP's blob and the blob of this connection's staging region. */
static int peer_fill(struct smart_rpc_conn *c, struct smart_proto_peer *m)
{
	struct smart_rpc *rpc = c->rpc;
	int rc;

	m->window = c->window;
	m->max_msg = c->msg_len;
	m->blob_len = sizeof(m->blob);
	if (c->chan)
		smart__chan_fill(c, m);
	if (c->chan && !c->chan->producer) {
		/* a consumer's ring takes the staging region's place: it
		 * sends the producer no data, so nothing to READ */
		rc = m->ring_len ? 0 : SMART_EPROTO;
	} else {
		m->rndv_max = rpc->cfg.rndv_max;
		m->rblob_len = sizeof(m->rblob);
		rc = smart__rndv_blob(c, m->rblob, &m->rblob_len);
	}
	return rc ? rc : smart__rpc_conn_blob(c, m->blob, &m->blob_len);
}

/* A PEER frame goes with the descriptors a peer on shm needs: the
 * staging region's memfd, the QP's receive segment and its wake socket
 * (the endpoint's CQ always has one on shm). */
static int send_peer(struct smart_rpc_conn *c, int fd, const void *f, size_t n,
		     int64_t deadline, const struct smart__sock_idle *idle)
{
	int fds[SMART_SOCK_FDS];

	smart__rpc_conn_fds(c, fds);
	return smart__sock_send_all_w(fd, f, n, fds,
				      c->rpc->passes_fds ? SMART_SOCK_FDS : 0,
				      deadline, idle);
}

/* The descriptors a PEER frame came with are those it says: all on shm
 * (smart__rpc_conn_fds), none on verbs. */
static int fds_as_told(const struct smart_rpc *rpc,
		       const struct smart_proto_peer *m, const int *fds)
{
	for (int i = 0; i < SMART_SOCK_FDS; i++)
		if ((fds[i] >= 0) != (rpc->passes_fds != 0))
			return 0;
	return !rpc->passes_fds || m->rndv_max || m->ring_len;
}

/* A PEER_CONNECT: make our side of the connection and answer. */
static void on_connect(struct smart_rpc *rpc, struct rpc_pend *p,
		       const uint8_t *pl, size_t len)
{
	struct smart_proto_peer in, outm = { 0 };
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX];
	struct smart_rpc_conn *c;
	int fds[SMART_SOCK_FDS], rc;
	size_t n;

	if (!key_open(rpc, &p->auth, SMART_AUTH_D_PEER, p->fd_got, pl, len)) {
		pend_refuse(rpc, p, SMART_EACCES,
			    "peer_connect (or its "
			    "descriptors) not tagged with this session's "
			    "proof");
		return;
	}
	if (smart__proto_dec_peer(SMART_PROTO_PEER_CONNECT, pl, len, &in)) {
		pend_refuse(rpc, p, SMART_EPROTO, "malformed peer_connect");
		return;
	}
	if (!fds_as_told(rpc, &in, p->fd_got)) {
		pend_refuse(rpc, p, SMART_EPROTO,
			    "descriptors missing or "
			    "unexpected");
		return;
	}
	rc = smart__rpc_conn_new(rpc, 1, &c);
	if (rc) {
		pend_refuse(rpc, p, rc, "no room for a connection");
		return;
	}
	if (in.chan) {
		rc = smart__chan_accept_prep(c, &in);
		if (rc) {
			smart__rpc_conn_free(c);
			pend_refuse(rpc, p, rc,
				    "channel refused (none "
				    "listened for, or slots above our window)");
			return;
		}
	}
	rc = peer_fill(c, &outm);
	if (!rc) {
		/* the transport owns them from here, even on error */
		rc = smart__rpc_conn_up(c, &in, p->fd_got);
	}
	outm.id = ++rpc->next_peer_id;
	if (!rc)
		rc = smart__proto_enc_peer(SMART_PROTO_PEER_ACCEPT, &outm, f,
					   sizeof(f), &n);
	if (!rc) {
		smart__rpc_conn_fds(c, fds);
		rc = key_seal(rpc, &p->auth, SMART_AUTH_L_PEER, fds, f, n);
	}
	/* one small frame to a socket that has sent us all it had: it
	 * fits, or the dialer is not reading and gets nothing */
	if (!rc)
		rc = send_peer(c, p->fd, f, n, smart__now_ms(), NULL);
	if (rc) {
		if (c->chan)
			smart__chan_free(c->chan);
		smart__rpc_conn_free(c);
		pend_refuse(rpc, p, SMART_EPROTO, "connection setup failed");
		return;
	}
	rpc->past.conns_accepted++;
	smart__worker_hand_off(rpc->w); /* its first call comes next */
	peer_name(p->fd, outm.id, c->peer, sizeof(c->peer));
	smart__info(rpc->log, "rpc: %s connected (window %u/%u)", c->peer,
		    c->swin, c->window);
	pend_close(rpc, p);
	if (c->chan)
		smart__chan_accepted(c); /* the application's now */
}

/* Serve the complete frames of a handshake's input. */
static void pend_process(struct smart_rpc *rpc, struct rpc_pend *p)
{
	struct smart_proto_hdr h;
	size_t flen;
	int rc;

	while (p->fd >= 0) {
		rc = smart__proto_hdr_check(p->in, p->in_len, &h);
		if (rc == SMART_EAGAIN)
			return;
		if (rc) {
			pend_refuse(rpc, p, SMART_EPROTO, "malformed frame");
			return;
		}
		flen = SMART_PROTO_HDR_LEN + h.len;
		if (p->in_len < flen)
			return;
		if (!p->challenged && h.type == SMART_PROTO_HELLO) {
			if (!hello_in(rpc, p, p->in + SMART_PROTO_HDR_LEN,
				      h.len))
				return;
		} else if (p->challenged && !p->authed &&
			   h.type == SMART_PROTO_AUTH) {
			if (!auth_in(rpc, p, p->in + SMART_PROTO_HDR_LEN,
				     h.len))
				return;
		} else if (p->challenged && !p->authed &&
			   h.type == SMART_PROTO_ERROR) {
			dialer_error(rpc, p, p->in + SMART_PROTO_HDR_LEN,
				     h.len);
			return;
		} else if (p->authed && h.type == SMART_PROTO_PEER_CONNECT) {
			on_connect(rpc, p, p->in + SMART_PROTO_HDR_LEN, h.len);
			return;
		} else {
			pend_refuse(rpc, p, SMART_EPROTO, "unexpected message");
			return;
		}
		memmove(p->in, p->in + flen, p->in_len - flen);
		p->in_len -= flen;
		explicit_bzero(p->in + p->in_len, flen);
	}
}

static void pend_read(struct smart_rpc *rpc, struct rpc_pend *p)
{
	int extra = 0;
	long r;

	if (p->refused) {
		pend_drain(rpc, p);
		return;
	}
	while (p->in_len < sizeof(p->in)) {
		r = smart__sock_recv_some(p->fd, p->in + p->in_len,
					  sizeof(p->in) - p->in_len, p->fd_got,
					  SMART_SOCK_FDS, &extra);
		if (extra) {
			pend_refuse(rpc, p, SMART_EPROTO,
				    "descriptors not asked for");
			return;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r <= 0) {
			/* the peer went; a dialer that refused our proof
			 * said why just before */
			if (r == 0 && p->challenged && !p->authed)
				pend_process(rpc, p);
			if (p->fd >= 0)
				pend_close(rpc, p);
			return;
		}
		p->in_len += (size_t)r;
	}
	pend_process(rpc, p);
}

/* A slot for a newcomer: a free one, else the oldest unauthenticated. */
static struct rpc_pend *pend_slot(struct smart_rpc *rpc)
{
	struct rpc_pend *old = NULL;

	for (uint32_t i = 0; i < rpc->cfg.max_pending; i++) {
		struct rpc_pend *p = &rpc->pend[i];

		if (p->fd < 0)
			return p;
		if (!p->authed && (!old || p->deadline < old->deadline))
			old = p;
	}
	if (old) {
		rpc->past.handshakes_refused += !old->refused;
		pend_close(rpc, old);
	}
	return old;
}

static void uid_refuse(struct smart_rpc *rpc, struct rpc_pend *p, unsigned uid)
{
	char why[96];

	snprintf(why, sizeof(why),
		 "uid %u not allowed (ours, root's or "
		 "allow_uid)",
		 uid);
	pend_refuse(rpc, p, SMART_EACCES, why);
}

/* Take one connection from the listening socket into a slot: 0 when
 * none waits (or out of descriptors: the next look), else 1 and *out its
 * slot (NULL: refused, every slot authenticated). */
static int accept_one(struct smart_rpc *rpc, int64_t now, struct rpc_pend **out)
{
	int fd = accept4(rpc->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rpc_pend *p;
	unsigned uid;

	*out = NULL;
	if (fd < 0)
		return 0;
	p = pend_slot(rpc);
	if (!p) {
		pend_empty(rpc, fd); /* a HELLO may wait with descriptors */
		close(fd);
		rpc->past.handshakes_refused++;
		return 1;
	}
	p->fd = fd;
	rpc->npend++;
	smart__rpc_fds_none(p->fd_got);
	p->authed = p->challenged = 0;
	p->in_len = 0;
	p->deadline = now + rpc->cfg.timeout_ms;
	/* its bytes make it ready for hs_poll, and in event mode wake the
	 * endpoint */
	if (hs_add(rpc, fd, (uint32_t)(p - rpc->pend)) ||
	    smart__rpc_event_add(rpc, fd))
		pend_refuse(rpc, p, SMART_EBUSY, "out of memory");
	else if (rpc->passes_fds && !uid_ok(rpc, fd, &uid))
		uid_refuse(rpc, p, uid);
	*out = p;
	return 1;
}

static void accept_some(struct smart_rpc *rpc, int64_t now)
{
	struct rpc_pend *p;

	for (int i = 0; i < PEER_ACCEPTS_PER_TICK; i++)
		if (!accept_one(rpc, now, &p))
			return;
}

void smart__rpc_listen_service(struct smart_rpc *rpc)
{
	int64_t now;

	if (rpc->lfd < 0)
		return;
	now = smart__now_ms();
	accept_some(rpc, now);
	for (uint32_t i = 0; i < rpc->cfg.max_pending; i++) {
		struct rpc_pend *p = &rpc->pend[i];

		if (p->fd < 0)
			continue;
		if (now > p->deadline) {
			rpc->past.handshakes_refused += !p->refused;
			pend_close(rpc, p);
			continue;
		}
		pend_read(rpc, p);
	}
}

/* Accept up to max newcomers and read each at once (a dialer sends its
 * HELLO as it connects); how many were taken. */
static int accept_fast(struct smart_rpc *rpc, int max)
{
	int64_t now = smart__now_ms();
	struct rpc_pend *p;
	int n = 0;

	while (n < max && accept_one(rpc, now, &p)) {
		n++;
		if (p && p->fd >= 0)
			pend_read(rpc, p);
	}
	return n;
}

/* The handshake sockets that are ready, at most PEER_HS_BATCH accepts
 * and reads in all: a flood of dialers costs the data path this much per
 * look, and the others wait for the next look (epoll's ready list is
 * served in turn).  Deadlines are the tick's. */
static void hs_ready(struct smart_rpc *rpc)
{
	struct epoll_event ev[PEER_ACCEPTS_PER_TICK];
	int left = SMART_M_RPC_HS_UNBOUNDED ? PEER_ACCEPTS_PER_TICK :
					      PEER_HS_BATCH;
	int n = epoll_wait(rpc->hfd, ev, left, 0);

	if (n > 0) /* a handshake is traffic: the cache refill waits */
		rpc->last_busy = smart__worker_now(rpc->w);
	for (int i = 0; i < n && left > 0; i++) {
		uint32_t k = ev[i].data.u32;

		if (k == PEER_LFD_KEY) {
			left -= accept_fast(rpc, left);
		} else if (k < rpc->cfg.max_pending && rpc->pend[k].fd >= 0) {
			pend_read(rpc, &rpc->pend[k]);
			left--;
		}
	}
}

/* The QP cache is refilled in idle time: no handshake in progress,
 * either way, and no message nor handshake step for busy_us (a new
 * connection's first call follows its handshake).  Making a connection
 * takes ~30 us (memfds, mappings, a socket pair: shm) that a handshake's
 * next frame or a call's answer would otherwise wait. */
static int cache_due(const struct smart_rpc *rpc)
{
	return rpc->nspare < rpc->cfg.qp_cache && !rpc->npend &&
	       !rpc->dialing &&
	       smart__worker_now(rpc->w) - rpc->last_busy > rpc->busy_cycles;
}

/* Between ticks, after a poll that found nothing: the handshake frames
 * that came, then one connection for the QP cache if it is due.  A
 * dialing-only endpoint with its cache full has nothing to look at until
 * a connection takes a cached one (conn_new sets hs_next again). */
void smart__rpc_hs_poll(struct smart_rpc *rpc)
{
	smart__rpc_ahead_make(rpc);
	if (rpc->hfd >= 0)
		hs_ready(rpc);
	if (cache_due(rpc))
		smart__rpc_cache_fill(rpc);
	rpc->hs_next = rpc->hfd >= 0 || rpc->nspare < rpc->cfg.qp_cache ?
			       smart__rdtsc() + rpc->hs_cycles :
			       UINT64_MAX;
}

/* ---- dialing ----------------------------------------------------------- */

/* While a dial waits for its socket the endpoint goes on, so that its
 * peers hear it (keepalive) and its calls are answered: from a task the
 * scheduler runs, and polls the worker; from the main context the worker
 * is polled here (handlers run, as in any wait of the main context).
 * Each frame the dial sends hands the CPU off (dial_sent): a poll that
 * then finds nothing yields it, so that a listener sharing this CPU
 * answers now, not after our spin of SMART_SOCK_SPIN_NS (measured at
 * load 4 on 2 cores: a listener took ~250 us to read each frame while
 * the dial spun; on a core of its own a yield returns at once).
 * 0 when the poll found nothing: the wait may then sleep on the socket
 * (sockio.c), which its answer ends at once, not a fixed pause. */
static int dial_idle(void *arg)
{
	struct smart_worker *w = ((struct smart_rpc *)arg)->w;

	if (smart__worker_task(w)) {
		smart_task_yield(w);
		return 1;
	}
	if (SMART_M_RPC_DIAL_SPINS)
		return smart__worker_poll(w) > 0;
	return smart__worker_wait_poll(w) > 0;
}

/* The dial sent the listener what it waits for: see dial_idle. */
static void dial_sent(struct smart_rpc *rpc)
{
	smart__worker_hand_off(rpc->w);
}

/* Dials may overlap (from tasks): each leaves the list when done. */
static void dialing_drop(struct smart_rpc *rpc, struct rpc_dialing *me)
{
	struct rpc_dialing **pp = &rpc->dialing;

	while (*pp && *pp != me)
		pp = &(*pp)->next;
	if (*pp)
		*pp = me->next;
}

static int dial_socket(struct smart_rpc *rpc, const char *hostport,
		       int64_t deadline, const struct smart__sock_idle *idle,
		       int *fd)
{
	struct sockaddr_storage ss;
	struct sockaddr_un un;
	uint32_t len;
	unsigned uid;
	int rc;

	if (smart__proto_parse_addr(hostport, &ss, sizeof(ss), &len))
		return SMART_EINVAL;
	if (!rpc->passes_fds)
		return smart__sock_connect_w(&ss, len, deadline, idle, fd);
	rc = smart__sock_connect_w(&un, unix_addr(addr_port(&ss), &un),
				   deadline, idle, fd);
	/* Anyone may bind the abstract name: who did? */
	if (!rc && !uid_ok(rpc, *fd, &uid)) {
		smart__warn(rpc->log,
			    "rpc: %s is held by uid %u, not "
			    "ours, root's or an allowed one: not a peer of "
			    "ours",
			    hostport, uid);
		rc = SMART_EACCES;
	}
	return rc;
}

/* Read one frame of at most cap bytes into f (descriptors into fds, when
 * fds is not NULL; else any is dropped); an ERROR gives its status. */
static int dial_frame(struct smart_rpc *rpc, int fd, int64_t deadline,
		      const struct smart__sock_idle *idle, uint8_t *f,
		      size_t cap, int *fds, struct smart_proto_hdr *h)
{
	int nfds = fds ? SMART_SOCK_FDS : 0;
	struct smart_proto_error e;
	int rc;

	rc = smart__sock_recv_exact_w(fd, f, SMART_PROTO_HDR_LEN, fds, nfds,
				      deadline, idle);
	if (!rc)
		rc = smart__proto_hdr_check(f, SMART_PROTO_HDR_LEN, h);
	if (!rc && h->len > cap - SMART_PROTO_HDR_LEN)
		rc = SMART_EPROTO;
	if (!rc)
		rc = smart__sock_recv_exact_w(fd, f + SMART_PROTO_HDR_LEN,
					      h->len, fds, nfds, deadline,
					      idle);
	if (rc)
		return rc == SMART_EAGAIN ? SMART_EPROTO : rc;
	if (h->type != SMART_PROTO_ERROR)
		return 0;
	if (smart__proto_dec_error(f + SMART_PROTO_HDR_LEN, h->len, &e))
		return SMART_EPROTO;
	if (e.status == SMART_EVERSION)
		smart__err(rpc->log,
			   "rpc: the peer speaks protocol "
			   "version %u, we speak %d (%s): upgrade the %s",
			   e.version, SMART_PROTO_VERSION, e.msg,
			   e.version < SMART_PROTO_VERSION ? "peer" : "dialer");
	else
		smart__warn(rpc->log, "rpc: peer refused: %s (%s)", e.msg,
			    smart_status_name(e.status));
	return e.status;
}

/* HELLO with our fresh nonce; its payload kept in hello[] (both proofs
 * cover it). */
static int dial_hello(struct smart_rpc *rpc, int fd, int64_t deadline,
		      const struct smart__sock_idle *idle,
		      struct smart__auth *a, uint8_t *hello, size_t *hlen)
{
	struct smart_proto_hello h = { .version = SMART_PROTO_VERSION };
	uint8_t f[SMART_PROTO_HDR_LEN +
		  SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	size_t n;
	int rc = smart__auth_nonce(a->nd);

	snprintf(h.transport, sizeof(h.transport), "%s", rpc->tp->name);
	memcpy(h.nonce, a->nd, sizeof(h.nonce));
	if (!rc)
		rc = smart__proto_enc_hello(&h, f, sizeof(f), &n);
	if (rc)
		return rc;
	*hlen = n - SMART_PROTO_HDR_LEN;
	memcpy(hello, f + SMART_PROTO_HDR_LEN, *hlen);
	rc = smart__sock_send_all_w(fd, f, n, NULL, 0, deadline, idle);
	dial_sent(rpc);
	return rc;
}

/* The listener failed its proof: say so (best effort: it may be our
 * peer with another secret, whose operator wants to know) and wait until
 * it hangs up, at most until our deadline, so that by the time the dial
 * fails the listener has counted the refusal. */
static int dial_refuse(struct smart_rpc *rpc, int fd, int64_t deadline,
		       const struct smart__sock_idle *idle)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	size_t n;

	smart__warn(rpc->log,
		    "rpc: the listener did not prove our "
		    "secret: a wrong secret on one side, or not the peer we "
		    "meant; nothing sent");
	if (!smart__proto_enc_error(SMART_EACCES, "listener proof refused", f,
				    sizeof(f), &n) &&
	    send(fd, f, n, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		smart__dbg(rpc->log, "rpc: refusal not sent");
	else if (shutdown(fd, SHUT_WR) == 0)
		(void)smart__sock_recv_exact_w(fd, f, 1, NULL, 0, deadline,
					       idle);
	return SMART_EACCES;
}

/* The listener's CHALLENGE: its proof is checked before anything of ours
 * that needs a genuine listener goes out. */
static int dial_challenge(struct smart_rpc *rpc, int fd, int64_t deadline,
			  const struct smart__sock_idle *idle,
			  struct smart__auth *a, const uint8_t *hello,
			  size_t hlen)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_ERROR_MAX];
	struct smart_proto_challenge c;
	struct smart_proto_hdr h;
	int fds[SMART_SOCK_FDS], got, rc;

	/* descriptors taken, not left to the kernel to drop: their last
	 * close is ours, with their linger off (smart__rpc_fds_close) */
	smart__rpc_fds_none(fds);
	rc = dial_frame(rpc, fd, deadline, idle, f, sizeof(f), fds, &h);
	got = fds[0] >= 0;
	smart__rpc_fds_close(fds);
	if (!rc && got)
		rc = SMART_EPROTO; /* none goes with a CHALLENGE */
	if (rc)
		return rc;
	if (h.type != SMART_PROTO_CHALLENGE ||
	    smart__proto_dec_challenge(f + SMART_PROTO_HDR_LEN, h.len, &c))
		return SMART_EPROTO;
	memcpy(a->nl, c.nonce, sizeof(a->nl));
	if (!SMART_M_RPC_NO_LISTENER_PROOF &&
	    !key_check(rpc, a, SMART_AUTH_L_CHALLENGE, hello, hlen, c.proof))
		return dial_refuse(rpc, fd, deadline, idle);
	return 0;
}

/* Our proof, then our side of the connection, tagged: the two frames
 * in one send (one system call, and the listener reads both at once;
 * its descriptors go with the first byte). */
static int dial_connect(struct smart_rpc *rpc, struct smart_rpc_conn *c, int fd,
			int64_t deadline, const struct smart__sock_idle *idle,
			const struct smart__auth *a, const uint8_t *hello,
			size_t hlen)
{
	uint8_t proof[SMART_PROTO_TAG_LEN];
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_AUTH_LEN +
		  SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX];
	struct smart_proto_peer m = { 0 };
	int fds[SMART_SOCK_FDS], rc;
	size_t na, n;

	key_tag(rpc, a, SMART_AUTH_D_AUTH, hello, hlen, proof);
	rc = smart__proto_enc_auth(proof, f, sizeof(f), &na);
	if (!rc)
		rc = peer_fill(c, &m);
	if (!rc)
		rc = smart__proto_enc_peer(SMART_PROTO_PEER_CONNECT, &m, f + na,
					   sizeof(f) - na, &n);
	if (!rc) {
		smart__rpc_conn_fds(c, fds);
		rc = key_seal(rpc, a, SMART_AUTH_D_PEER, fds, f + na, n);
	}
	if (!rc)
		rc = send_peer(c, fd, f, na + n, deadline, idle);
	dial_sent(rpc);
	return rc;
}

/* Read the listener's answer: its PEER_ACCEPT, tagged. */
static int dial_answer(struct smart_rpc *rpc, int fd, int64_t deadline,
		       const struct smart__sock_idle *idle,
		       const struct smart__auth *a, struct smart_proto_peer *m,
		       int *fds)
{
	uint8_t f[SMART_PROTO_HDR_LEN + SMART_PROTO_PEER_MAX +
		  SMART_PROTO_ERROR_MAX];
	const uint8_t *pl = f + SMART_PROTO_HDR_LEN;
	struct smart_proto_hdr h;
	int rc;

	rc = dial_frame(rpc, fd, deadline, idle, f, sizeof(f), fds, &h);
	if (rc)
		return rc;
	if (h.type != SMART_PROTO_PEER_ACCEPT)
		return SMART_EPROTO;
	if (!SMART_M_RPC_NO_ACCEPT_TAG &&
	    !key_open(rpc, a, SMART_AUTH_L_PEER, fds, pl, h.len)) {
		smart__warn(rpc->log,
			    "rpc: the peer_accept (or its "
			    "descriptors) is not tagged with this session's "
			    "proof: altered on the way");
		return SMART_EACCES;
	}
	if (smart__proto_dec_peer(h.type, pl, h.len, m))
		return SMART_EPROTO;
	return fds_as_told(rpc, m, fds) ? 0 : SMART_EPROTO;
}

/* The whole exchange on a connected socket; *c gets our side (made, or
 * taken from the QP cache, once the HELLO is out: while the listener
 * answers it), *m and fds the listener's. */
static int dial_handshake(struct smart_rpc *rpc, struct smart_chan *ch,
			  struct smart_rpc_conn **c, int fd, int64_t deadline,
			  const struct smart__sock_idle *idle,
			  struct smart_proto_peer *m, int *fds)
{
	uint8_t hello[SMART_PROTO_HELLO_LEN(SMART_PROTO_TRANSPORT_MAX)];
	struct smart__auth a = { 0 }; /* nonces; the key: key_take */
	struct rpc_dialing me = { .next = rpc->dialing };
	size_t hlen = 0;
	int rc;

	rc = dial_hello(rpc, fd, deadline, idle, &a, hello, &hlen);
	memcpy(me.nd, a.nd, sizeof(me.nd));
	rpc->dialing = &me; /* our listener refuses this nonce */
	if (!rc)
		rc = smart__rpc_conn_new(rpc, 0, c);
	if (!rc && ch) {
		(*c)->chan = ch;
		ch->conn = *c;
		smart__rpc_set_window(*c, ch->slots);
	}
	if (!rc)
		rc = dial_challenge(rpc, fd, deadline, idle, &a, hello, hlen);
	if (!rc)
		rc = dial_connect(rpc, *c, fd, deadline, idle, &a, hello, hlen);
	if (!rc)
		rc = dial_answer(rpc, fd, deadline, idle, &a, m, fds);
	/* a channel is accepted as one, an ordinary connection as one */
	if (!rc && !ch != !m->chan)
		rc = SMART_EPROTO;
	dialing_drop(rpc, &me);
	explicit_bzero(&a, sizeof(a));
	return rc;
}

/* The endpoint is polled while the dial waits (dial_idle), and the dial
 * counts as a waiter (destroy is refused meanwhile). */
int smart__rpc_dial(struct smart_rpc *rpc, const char *hostport,
		    struct smart_chan *ch, struct smart_rpc_conn **out)
{
	int64_t deadline = smart__now_ms() + rpc->cfg.timeout_ms;
	const struct smart__sock_idle idle = { dial_idle, rpc },
				      *wait = SMART_M_RPC_DIAL_BLOCKS ? NULL :
									&idle;
	struct smart_proto_peer m;
	struct smart_rpc_conn *c = NULL;
	int fd = -1, fds[SMART_SOCK_FDS], rc;

	smart__rpc_fds_none(fds);
	rpc->waiting++;
	rc = dial_socket(rpc, hostport, deadline, wait, &fd);
	if (!rc)
		rc = dial_handshake(rpc, ch, &c, fd, deadline, wait, &m, fds);
	rpc->waiting--;
	/* its first call comes next: the cache refill waits (cache_due) */
	rpc->last_busy = smart__rdtsc();
	if (!rc)
		rc = smart__rpc_conn_up(c, &m, fds); /* owns them */
	smart__rpc_fds_close(fds);
	if (fd >= 0) {
		/* what the listener sent after the handshake (descriptors
		 * included) goes first, not at the kernel's close */
		pend_empty(rpc, fd);
		close(fd);
	}
	if (rc) {
		smart__warn(rpc->log, "rpc: cannot connect to %s: %s", hostport,
			    smart_strerror(rc));
		if (c)
			smart__rpc_conn_free(c);
		return rc;
	}
	rpc->past.conns_dialed++;
	snprintf(c->peer, sizeof(c->peer), "%s", hostport);
	*out = c;
	return 0;
}
