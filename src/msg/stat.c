/*
 * The endpoint's control socket, read by smart-stat (docs/rpc.md §8).
 *
 * Every endpoint listens on the abstract unix socket
 * "smart-stat:<pid>:<n>", n the first number from 0 up whose name is free
 * (abstract names are unique per network namespace, so endpoints of one
 * process, and a squatter, simply take other numbers).  A client connects
 * and reads; it sends nothing, so nothing a client writes is ever parsed.
 * The answer is a versioned text document of "key=value" lines: the
 * endpoint, then one line per connection, then "end conns=N" (so a reader
 * knows a truncated answer from a whole one).
 *
 * Invariants (the worker thread serving this must never wait):
 *  - every socket is non-blocking and every send MSG_DONTWAIT; the
 *    listener is looked at every STAT_ACCEPT_TICKS ticks, at most
 *    STAT_ACCEPTS_PER_TICK accepts then, and the kernel's backlog of
 *    STAT_BACKLOG bounds a flood of connects;
 *  - only a client of the endpoint's effective uid, or root (SO_PEERCRED,
 *    as the kernel saw it at connect), gets an answer; any other gets the
 *    line "denied" and is closed;
 *  - at most STAT_CLIENTS answers are in flight, each with a buffer of
 *    STAT_BUF bytes, refilled only once all of it was sent and at most
 *    once per client per look (a tick, or an arm in event mode): a look
 *    writes at most one buffer per client it serves (STAT_CLIENTS, and
 *    STAT_ACCEPTS_PER_TICK new ones with their endpoint line) and a
 *    refill tests at most max_conns pointers for its connections, however
 *    fast the clients read; a new client evicts the oldest one, and a
 *    client that has not taken its answer within STAT_SEND_MS is closed:
 *    it gets a truncated answer (no "end" line) and that is all;
 *  - a connection's line is a snapshot of it at the tick it was written;
 *    an answer that spans several ticks is not one snapshot of the whole.
 * A control socket that cannot be opened (no descriptor, every name taken)
 * is logged and the endpoint goes on without one.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "msg/msg_int.h"
#include "util/log.h"
#include "util/sockio.h"

#define STAT_HEAD	      "smart-stat 1\n" /* the format, version 1 */
#define STAT_NAMES	      1024	       /* n tried at most */
#define STAT_BACKLOG	      8
#define STAT_ACCEPT_TICKS     8 /* the listener: every 8 ms */
#define STAT_ACCEPTS_PER_TICK 4
#define STAT_CLIENTS	      4 /* answers in flight */
#define STAT_BUF	      (16u << 10)
#define STAT_LINE_MAX	      2048 /* longer than any line we write */
#define STAT_SEND_MS	      1000

/* One answer in flight. */
struct stat_client {
	int fd;
	int64_t deadline; /* ms */
	uint32_t next;	  /* the connection index to write next */
	uint32_t lines;	  /* connection lines written */
	int ended;	  /* the "end" line is in buf */
	size_t off, len;  /* sent, written */
	char buf[STAT_BUF];
};

struct rpc_stat {
	char name[48];
	uint64_t born_tsc; /* the endpoint's */
	uint32_t ticks;
	struct stat_client *cl[STAT_CLIENTS]; /* NULL: free */
	uint64_t answers, denied, evicted, truncated;
};

/* ---- the counters' names -------------------------------------------- */

/* Every counter of struct smart_rpc_stats, each named once: the table is
 * indexed by the counter's word, so the order is right by construction,
 * and the count must match, so a counter added to rpc.h without its name
 * here fails the build.  (Laid out by hand: clang-format would fold the
 * list into a staircase.) */
/* clang-format off */
#define STAT_FIELDS(X)							\
	X(msgs_sent) X(msgs_recv) X(bytes_sent) X(bytes_recv)		\
	X(acks_sent) X(calls) X(call_errors) X(call_timeouts)		\
	X(window_stalls) X(backlogged) X(rnr) X(rnr_waits)		\
	X(proto_errors) X(ka_probes) X(ka_failures) X(rndv_sent)	\
	X(rndv_recv) X(rndv_held) X(traced) X(slow_polls)		\
	X(poll_gap_max_ns) X(qp_cache_hits) X(conns_accepted)		\
	X(conns_dialed)							\
	X(conns_failed)							\
	X(handshakes_refused) X(event_sleeps) X(cut_closes)		\
	X(chan_slots_sent) X(chan_slots_recv) X(chan_torn)
/* clang-format on */
#define STAT_NAME(f) [offsetof(struct smart_rpc_stats, f) / 8] = #f,
#define STAT_ONE(f)  +1
#define STAT_NFIELDS (sizeof(struct smart_rpc_stats) / sizeof(uint64_t))

static const char *const stat_fields[STAT_NFIELDS] = { STAT_FIELDS(STAT_NAME) };
_Static_assert(0 STAT_FIELDS(STAT_ONE) == STAT_NFIELDS,
	       "every counter of smart_rpc_stats needs its name here");

/* The longest connection line line_conn can write, its NUL included:
 * every number at its widest, every string at its longest, each byte of
 * the peer escaped.  Checked against STAT_LINE_MAX, so a connection line
 * always fits the room refill makes for it. */
#define STAT_U64W	20 /* digits of UINT64_MAX */
#define STAT_KEYW(k, w) (sizeof(" " k "=") - 1 + (w))
#define STAT_CTR_W(f)	+STAT_KEYW(#f, STAT_U64W)
#define STAT_CONN_LINE_MAX                                                     \
	(sizeof("conn") - 1 + STAT_KEYW("index", 10) + STAT_KEYW("gen", 5) +   \
	 STAT_KEYW("state", 6) + STAT_KEYW("role", 8) +                        \
	 STAT_KEYW("peer",                                                     \
		   3 * (sizeof(((struct smart_rpc_conn *)0)->peer) - 1)) +     \
	 STAT_KEYW("window", 10) + STAT_KEYW("swin", 10) +                     \
	 STAT_KEYW("inflight", STAT_U64W) +                                    \
	 STAT_KEYW("backlog_bytes", STAT_U64W) +                               \
	 STAT_KEYW("rtt_ns", STAT_U64W) + STAT_KEYW("idle_ms", STAT_U64W) +    \
	 STAT_KEYW("age_ms", STAT_U64W) STAT_FIELDS(STAT_CTR_W) + 2)
_Static_assert(STAT_CONN_LINE_MAX <= STAT_LINE_MAX,
	       "a connection line must fit STAT_LINE_MAX");

const char *smart_rpc_stats_field(unsigned i)
{
	return i < STAT_NFIELDS ? stat_fields[i] : NULL;
}

int smart_rpc_stat_name(const smart_rpc_t *rpc, char *buf, size_t len)
{
	if (!rpc || !buf || !len)
		return SMART_EINVAL;
	if (rpc->sfd < 0)
		return SMART_ENOENT;
	if ((size_t)snprintf(buf, len, "%s", rpc->ctl->name) >= len)
		return SMART_ERANGE;
	return 0;
}

/* ---- writing lines ------------------------------------------------------ */

/* A line being written into a client's buffer; full once it did not fit. */
struct stat_line {
	char *p;
	size_t len, cap;
	int full;
};

__attribute__((format(printf, 2, 3))) static void put(struct stat_line *l,
						      const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->p + l->len, l->cap - l->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= l->cap - l->len)
		l->full = 1;
	else
		l->len += (size_t)n;
}

/* " key=value" with the value's bytes outside '!'..'~', '%' and '='
 * written as %XX, so that a value never holds a space or a newline.  The
 * bytes are appended directly (a printf per byte costs more than the
 * rest of the line); full as put() would be: the NUL must fit too. */
static void put_str(struct stat_line *l, const char *key, const char *v)
{
	static const char hexd[] = "0123456789ABCDEF";

	put(l, " %s=", key);
	for (const unsigned char *s = (const unsigned char *)v; *s; s++) {
		int plain = *s > ' ' && *s < 0x7f && *s != '%' && *s != '=';
		size_t need = plain ? 1 : 3;

		if (l->full || need >= l->cap - l->len) {
			l->full = 1;
			return;
		}
		if (plain) {
			l->p[l->len++] = (char)*s;
		} else {
			l->p[l->len++] = '%';
			l->p[l->len++] = hexd[*s >> 4];
			l->p[l->len++] = hexd[*s & 15];
		}
	}
}

static void put_stats(struct stat_line *l, const struct smart_rpc_stats *st)
{
	const uint64_t *v = (const uint64_t *)st;

	for (size_t i = 0; i < STAT_NFIELDS; i++)
		put(l, " %s=%" PRIu64, stat_fields[i], v[i]);
}

static uint64_t cyc_ms(const struct smart_rpc *rpc, uint64_t from, uint64_t to)
{
	if (to <= from)
		return 0;
	return smart__rpc_ns(rpc, to - from) / 1000000;
}

static void line_endpoint(struct smart_rpc *rpc, struct stat_line *l)
{
	struct rpc_stat *s = rpc->ctl;
	struct smart_rpc_stats st;

	smart_rpc_stats(rpc, &st);
	put(l, STAT_HEAD "endpoint pid=%ld", (long)getpid());
	put_str(l, "name", s->name);
	put_str(l, "listen", rpc->lfd >= 0 ? rpc->laddr : "-");
	put_str(l, "transport", rpc->tp->name);
	put(l,
	    " live=%d max_conns=%u window=%u eager_max=%u "
	    "keepalive_ms=%u keepalive_misses=%u uptime_ms=%" PRIu64
	    " stat_answers=%" PRIu64 " stat_denied=%" PRIu64
	    " stat_evicted=%" PRIu64 " stat_truncated=%" PRIu64,
	    smart_rpc_conns(rpc), rpc->cfg.max_conns, rpc->cfg.window,
	    rpc->cfg.eager_max, rpc->cfg.keepalive_ms,
	    rpc->cfg.keepalive_misses,
	    cyc_ms(rpc, s->born_tsc, smart__worker_now(rpc->w)), s->answers,
	    s->denied, s->evicted, s->truncated);
	put_stats(l, &st);
	put(l, "\n");
}

static void line_conn(struct smart_rpc *rpc, const struct smart_rpc_conn *c,
		      struct stat_line *l)
{
	uint64_t now = smart__worker_now(rpc->w);

	put(l, "conn index=%u gen=%u", c->index, c->gen);
	put_str(l, "state", c->state == RPC_C_LIVE ? "live" : "failed");
	put_str(l, "role", c->accepted ? "accepted" : "dialed");
	put_str(l, "peer", c->peer[0] ? c->peer : "-");
	put(l,
	    " window=%u swin=%u inflight=%" PRIu64 " backlog_bytes=%zu "
	    "rtt_ns=%" PRIu64 " idle_ms=%" PRIu64 " age_ms=%" PRIu64,
	    c->window, c->swin, c->tx_seq - c->tx_acked, c->bl_bytes, c->rtt_ns,
	    cyc_ms(rpc, c->last_rx, now),
	    c->born ? cyc_ms(rpc, c->born, now) : 0); /* 0: not up yet */
	put_stats(l, &c->st);
	put(l, "\n");
}

/* Write the next lines of a client's answer into its buffer, as many as
 * fit (the connections as they are now).  Every line gets STAT_LINE_MAX
 * of room, more than any needs (STAT_CONN_LINE_MAX, checked by the
 * build; the "end" line is short), so none is ever cut. */
static void refill(struct smart_rpc *rpc, struct stat_client *k)
{
	while (!k->ended) {
		struct stat_line l = { k->buf + k->len, 0,
				       sizeof(k->buf) - k->len, 0 };

		if (l.cap < STAT_LINE_MAX)
			return; /* room once what is there is sent */
		while (k->next < rpc->cfg.max_conns &&
		       (!rpc->conns[k->next] || rpc->conns[k->next]->spare))
			k->next++;
		if (k->next < rpc->cfg.max_conns) {
			line_conn(rpc, rpc->conns[k->next++], &l);
			k->lines++;
		} else {
			put(&l, "end conns=%u\n", k->lines);
			k->ended = 1;
		}
		k->len += l.len;
	}
}

/* ---- serving ------------------------------------------------------------ */

static void client_close(struct rpc_stat *s, int i)
{
	struct stat_client *k = s->cl[i];

	if (!k->ended || k->off < k->len)
		s->truncated++;
	close(k->fd);
	free(k);
	s->cl[i] = NULL;
}

/* Send what fits, refilling the buffer at most once (a call per client
 * per look: that bounds a look's work, not the socket's buffer); 1 when
 * the client is done with (answered or gone). */
static int client_send(struct smart_rpc *rpc, struct stat_client *k)
{
	int refilled = 0;

	for (;;) {
		ssize_t n;

		if (k->off == k->len) {
			if (k->ended)
				return 1;
			if (refilled)
				return 0; /* the rest at the next look */
			k->off = k->len = 0;
			refill(rpc, k);
			refilled = 1;
			if (!k->len)
				return 0; /* nothing this look */
		}
		n = send(k->fd, k->buf + k->off, k->len - k->off,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno != EAGAIN && errno != EWOULDBLOCK;
		k->off += (size_t)n;
	}
}

/* Same effective uid as ours, or root: the only ones answered. */
static int peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) ||
	    len != sizeof(cr))
		return 0;
	return cr.uid == 0 || cr.uid == geteuid();
}

static void deny(struct rpc_stat *s, int fd)
{
	static const char no[] = STAT_HEAD "denied\n";

	s->denied++;
	/* best effort: it is closed either way */
	(void)send(fd, no, sizeof(no) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

/* A slot for a newcomer: a free one, else the oldest client's. */
static int client_slot(struct rpc_stat *s)
{
	int old = 0;

	for (int i = 0; i < STAT_CLIENTS; i++) {
		if (!s->cl[i])
			return i;
		if (s->cl[i]->deadline < s->cl[old]->deadline)
			old = i;
	}
	s->evicted++;
	client_close(s, old);
	return old;
}

static void client_new(struct smart_rpc *rpc, int fd, int64_t now)
{
	struct rpc_stat *s = rpc->ctl;
	struct stat_client *k = malloc(sizeof(*k));
	struct stat_line l;
	int i;

	if (!k) {
		close(fd); /* no answer rather than a wait */
		return;
	}
	k->fd = fd;
	k->deadline = now + STAT_SEND_MS;
	k->next = k->lines = 0;
	k->ended = 0;
	k->off = 0;
	l = (struct stat_line){ k->buf, 0, sizeof(k->buf), 0 };
	s->answers++;
	line_endpoint(rpc, &l);
	k->len = l.full ? 0 : l.len;
	i = client_slot(s);
	s->cl[i] = k;
	if (client_send(rpc, k))
		client_close(s, i);
}

static void accept_some(struct smart_rpc *rpc, int64_t now)
{
	for (int i = 0; i < STAT_ACCEPTS_PER_TICK; i++) {
		int fd = accept4(rpc->sfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return; /* EAGAIN, or out of descriptors: later */
		if (!peer_allowed(fd))
			deny(rpc->ctl, fd);
		else
			client_new(rpc, fd, now);
	}
}

int smart__rpc_stat_clients(const struct smart_rpc *rpc)
{
	int n = 0;

	for (int i = 0; rpc->ctl && i < STAT_CLIENTS; i++)
		n += rpc->ctl->cl[i] != NULL;
	return n;
}

/* Every tick; `at_once`: accept now (event mode, before sleeping: the
 * socket would keep the endpoint's descriptor readable). */
void smart__rpc_stat_service(struct smart_rpc *rpc, int at_once)
{
	struct rpc_stat *s = rpc->ctl;
	int64_t now;

	if (rpc->sfd < 0)
		return;
	if (!at_once && !smart__rpc_stat_clients(rpc) &&
	    ++s->ticks % STAT_ACCEPT_TICKS)
		return; /* one accept4 per 8 ms while nobody asks */
	now = smart__now_ms();
	for (int i = 0; i < STAT_CLIENTS; i++) {
		if (!s->cl[i])
			continue;
		if (now > s->cl[i]->deadline || client_send(rpc, s->cl[i]))
			client_close(s, i);
	}
	accept_some(rpc, now);
}

/* ---- opening and closing ----------------------------------------------- */

/* Listen at the first free "smart-stat:<pid>:<n>". */
static int stat_bind(struct rpc_stat *s, int *fd)
{
	struct sockaddr_un un;
	int rc = SMART_EEXIST;

	for (int n = 0; n < STAT_NAMES && rc == SMART_EEXIST; n++) {
		snprintf(s->name, sizeof(s->name), "smart-stat:%ld:%d",
			 (long)getpid(), n);
		rc = smart__sock_listen(&un, smart__sock_abstract(s->name, &un),
					STAT_BACKLOG, fd, NULL);
	}
	return rc;
}

int smart__rpc_stat_open(struct smart_rpc *rpc)
{
	struct rpc_stat *s = calloc(1, sizeof(*s));
	int rc;

	rpc->sfd = -1;
	rpc->ctl = s;
	if (!s)
		return SMART_ENOMEM;
	s->born_tsc = smart__rdtsc();
	rc = stat_bind(s, &rpc->sfd);
	if (rc) {
		smart__warn(rpc->log,
			    "rpc: no control socket for "
			    "smart-stat (%s): the endpoint goes on without",
			    smart_strerror(rc));
		rpc->sfd = -1;
	}
	return 0;
}

void smart__rpc_stat_close(struct smart_rpc *rpc)
{
	struct rpc_stat *s = rpc->ctl;

	if (rpc->sfd >= 0)
		close(rpc->sfd);
	rpc->sfd = -1;
	if (!s)
		return;
	for (int i = 0; i < STAT_CLIENTS; i++)
		if (s->cl[i])
			client_close(s, i);
	free(s);
	rpc->ctl = NULL;
}
