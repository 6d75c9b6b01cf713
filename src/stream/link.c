/*
 * The executors' links (docs/stream.md §4): one channel (smart/chan.h) from
 * every executor to every other, E(E-1) in all; the epoch's deltas (SLASH)
 * or re-partitioned records (UPPAR) shipped per leader in slots, the last
 * slot of an epoch flagged LAST with the watermark taken at the swap; and
 * the leader's checks of what arrives.
 *
 * Invariants: every epoch sends at least one (LAST) message to every
 * leader, empty or not, so a leader's view of every source's watermark
 * advances even when that source has no key it leads; shipping runs a
 * sender task and a receiver task on the worker, so two executors each
 * waiting for credits from the other still take (and release) each
 * other's slots: no deadlock; a message is checked whole before any of
 * it is merged, and a check that fails cuts the executor off
 * (SMART_EPROTO, counted).
 */
#include <stdlib.h>
#include <string.h>

#include "smart/task.h"
#include "smart/util.h"
#include "stream/stream_int.h"

#define OPEN_WAIT_NS (30ULL * 1000000000ULL)

static void on_accept(smart_chan_t *ch, uint32_t tag, void *arg)
{
	struct smart_stream *s = arg;

	if (tag >= s->cfg.executors || tag == s->cfg.index || s->peer[tag].rx) {
		smart_chan_close(ch);
		return;
	}
	s->peer[tag].rx = ch;
	s->accepted++;
}

int smart__stream_link_open(struct smart_stream *s)
{
	struct smart_chan_config cc;
	uint64_t end;
	int rc;

	smart_chan_config_init(&cc);
	cc.slots = s->cfg.slots;
	cc.slot_bytes = s->cfg.slot_bytes;
	cc.tag = s->cfg.index;
	/* the mode is the producer's choice: our peers' channels to us come
	 * in theirs (chan_footer_slots counts what we took in FOOTER) */
	cc.mode = SMART_M_STREAM_CHAN_MODE_IGNORED ? SMART_CHAN_IMM :
						     s->cfg.chan_mode;
	rc = smart_chan_listen(s->cfg.rpc, on_accept, s);
	for (uint32_t i = 0; i < s->cfg.executors && !rc; i++)
		if (i != s->cfg.index)
			rc = smart_chan_open(s->cfg.rpc, s->cfg.peers[i], &cc,
					     &s->peer[i].tx);
	end = smart_now_ns() + OPEN_WAIT_NS;
	while (!rc && s->accepted + 1 < s->cfg.executors) {
		smart_rpc_progress(s->cfg.rpc);
		if (smart_now_ns() > end)
			rc = SMART_ETIMEDOUT;
	}
	return rc;
}

uint64_t smart__stream_link_footer_slots(const struct smart_stream *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->cfg.executors; i++) {
		struct smart_chan_stats cs;

		if (s->peer[i].rx && !smart_chan_stats(s->peer[i].rx, &cs))
			n += cs.footer_slots;
	}
	return n;
}

void smart__stream_link_close(struct smart_stream *s)
{
	for (uint32_t i = 0; i < s->cfg.executors; i++) {
		smart_chan_close(s->peer[i].tx);
		smart_chan_close(s->peer[i].rx);
		s->peer[i].tx = s->peer[i].rx = NULL;
	}
	if (s->cfg.rpc && s->cfg.executors > 1)
		smart_chan_listen(s->cfg.rpc, NULL, NULL);
}

int smart__stream_peer_add(struct stream_peer *p, const void *e, size_t len)
{
	if (p->buf_n + len > p->buf_cap) {
		size_t c = p->buf_cap ? p->buf_cap * 2 : 4096;
		void *q = realloc(p->buf, c);

		if (!q)
			return SMART_ENOMEM;
		p->buf = q;
		p->buf_cap = c;
	}
	memcpy(p->buf + p->buf_n, e, len);
	p->buf_n += len;
	return 0;
}

struct ship {
	struct smart_stream *s;
	uint64_t wm, stamp;
	int final;
};

static size_t entry_size(const struct smart_stream *s)
{
	return s->cfg.engine == SMART_STREAM_UPPAR ?
		       sizeof(struct stream_rec) :
		       sizeof(struct stream_entry);
}

/* One slot: header and up to what fits of p's remaining bytes. */
static int send_one(struct smart_stream *s, struct stream_peer *p, size_t *off,
		    const struct ship *sh)
{
	size_t es = entry_size(s), k;
	struct stream_msg m = {
		STREAM_MAGIC, (uint16_t)s->cfg.index, 0, s->epoch, 0, 0, 0
	};
	uint32_t cap;
	void *buf;
	int rc = smart_chan_reserve(p->tx, &buf, &cap);

	if (rc)
		return rc;
	k = (cap - sizeof(m)) / es;
	if (k > (p->buf_n - *off) / es)
		k = (p->buf_n - *off) / es;
	m.n = (uint32_t)k;
	if (*off + k * es == p->buf_n) {
		m.flags = STREAM_F_LAST | (sh->final ? STREAM_F_FINAL : 0);
		m.wm = sh->wm;
	}
	if (s->cfg.engine == SMART_STREAM_UPPAR)
		m.flags |= STREAM_F_RECORDS;
	memcpy(buf, &m, sizeof(m));
	if (k) /* an empty delta: p->buf may be NULL */
		memcpy((uint8_t *)buf + sizeof(m), p->buf + *off, k * es);
	*off += k * es;
	rc = smart_chan_commit(p->tx, (uint32_t)(sizeof(m) + k * es),
			       sh->stamp);
	s->st.chan_slots += !rc;
	s->st.chan_bytes += rc ? 0 : sizeof(m) + k * es;
	return rc;
}

/* A peer whose connection failed before its last epoch is named (bit i
 * of gone): the survivors' SMART_ECONN says which executor died. */
int smart__stream_gone(struct smart_stream *s, uint32_t i, int rc)
{
	if (rc == SMART_ECONN && !SMART_M_STREAM_NO_DEAD_NAME)
		s->st.gone |= 1ULL << i;
	return rc;
}

static int send_peer(struct smart_stream *s, struct stream_peer *p,
		     const struct ship *sh)
{
	size_t off = 0;
	int rc = 0;

	if (SMART_M_STREAM_NO_EMPTY_DELTA && !p->buf_n && !sh->final)
		return 0;
	do
		rc = send_one(s, p, &off, sh);
	while (!rc && off < p->buf_n);
	p->buf_n = 0;
	return smart__stream_gone(s, (uint32_t)(p - s->peer), rc);
}

static void sender(smart_worker_t *w, void *arg)
{
	const struct ship *sh = arg;
	struct smart_stream *s = sh->s;
	int rc = 0;

	(void)w;
	for (uint32_t i = 0; i < s->cfg.executors && !rc; i++)
		if (i != s->cfg.index)
			rc = send_peer(s, &s->peer[i], sh);
	if (rc && !s->failed)
		s->failed = rc;
	s->sending = 0;
}

static void receiver(smart_worker_t *w, void *arg)
{
	struct smart_stream *s = arg;

	while (s->sending && !s->failed) {
		int rc = smart__stream_link_drain(s);

		if (rc && !s->failed)
			s->failed = rc;
		smart_task_yield(w);
	}
}

int smart__stream_link_ship(struct smart_stream *s, uint64_t wm, int final,
			    uint64_t stamp)
{
	struct ship sh = { s, wm, stamp, final };
	int rc;

	s->sending = 1;
	rc = smart_task_spawn(s->w, sender, &sh);
	if (!rc)
		rc = smart_task_spawn(s->w, receiver, s);
	if (rc) {
		s->sending = 0;
		smart_worker_run(s->w);
		return rc;
	}
	rc = smart_worker_run(s->w);
	return rc ? rc : s->failed;
}

static int cut(struct smart_stream *s)
{
	s->st.proto_errors++;
	return SMART_EPROTO;
}

static int head_ok(const struct smart_stream *s, const struct stream_msg *m,
		   uint32_t len, uint32_t src)
{
	const struct stream_peer *p = &s->peer[src];
	int records = s->cfg.engine == SMART_STREAM_UPPAR;
	size_t es = entry_size(s);

	if (m->magic != STREAM_MAGIC || m->src != src || p->final)
		return 0;
	if (!!(m->flags & STREAM_F_RECORDS) != records || (m->flags & ~7u))
		return 0;
	if (!SMART_M_STREAM_NO_EPOCH_CHECK && m->epoch != p->epoch + 1)
		return 0;
	if (!SMART_M_STREAM_DELTA_NO_BOUNDS &&
	    (size_t)m->n * es != len - sizeof(*m))
		return 0;
	if (!(m->flags & STREAM_F_LAST))
		return !(m->flags & STREAM_F_FINAL);
	if (!(m->flags & STREAM_F_FINAL) && m->wm == UINT64_MAX)
		return 0;
	return SMART_M_STREAM_WM_BACKWARDS || m->wm >= p->wm;
}

/* Each entry of a message copied out of the slot once, checked, then
 * merged: the producer can still write its slot, so a second read could
 * differ from the one checked.  Checked: keys led here, window starts on
 * the query's grid and a session bucket's times inside it (SLASH,
 * smart__stream_entry_ok), event times below the limit (UPPAR).  A bad
 * entry cuts the producer, which fails this executor for good (exec.c
 * fail), so the entries merged before it are never fired. */
static int entry_ok(const struct smart_stream *s, uint64_t key, uint64_t t)
{
	if (!SMART_M_STREAM_NO_KEY_CHECK &&
	    smart_stream_key_owner(key, s->cfg.executors) != s->cfg.index)
		return 0;
	return t < SMART_STREAM_TS_LIMIT;
}

static int take_body(struct smart_stream *s, const uint8_t *body, uint32_t n)
{
	int rc = 0;

	for (uint32_t i = 0; i < n && !rc; i++) {
		if (s->cfg.engine == SMART_STREAM_UPPAR) {
			struct stream_rec r;

			memcpy(&r, body + (size_t)i * sizeof(r), sizeof(r));
			if (!entry_ok(s, r.key, r.ts))
				return cut(s);
			rc = smart__stream_assign(&s->q, &s->lead, r.key, r.ts,
						  r.value);
		} else {
			struct stream_entry e;

			memcpy(&e, body + (size_t)i * sizeof(e), sizeof(e));
			if (!smart__stream_entry_ok(&s->q, &e) ||
			    !entry_ok(s, e.key, e.wstart))
				return cut(s);
			if (smart__stream_is_row(&s->q, &e)) /* JOIN */
				rc = smart__stream_table_row(&s->lead, e.wstart,
							     e.key, e.a.sum);
			else
				rc = smart__stream_table_merge(&s->lead,
							       e.wstart, e.key,
							       &e.a);
		}
	}
	return rc;
}

/* One message from src, read from the slot once (the header copied);
 * stamp: the producer's word, its swap time (only the lag uses it). */
static int take(struct smart_stream *s, const uint8_t *buf, uint32_t len,
		uint32_t src, uint64_t stamp)
{
	struct stream_peer *p = &s->peer[src];
	struct stream_msg m;
	int rc;

	if (len < sizeof(m))
		return cut(s);
	memcpy(&m, buf, sizeof(m));
	if (!head_ok(s, &m, len, src))
		return cut(s);
	rc = take_body(s, buf + sizeof(m), m.n);
	if (rc || !(m.flags & STREAM_F_LAST))
		return rc;
	p->epoch = m.epoch;
	p->wm = m.wm;
	p->final = !!(m.flags & STREAM_F_FINAL);
	p->stamp = stamp;
	return smart__stream_fire(s, stamp);
}

static int drain_peer(struct smart_stream *s, uint32_t i)
{
	struct stream_peer *p = &s->peer[i];

	for (;;) {
		const void *buf;
		uint32_t len;
		uint64_t user;
		int rc;

		/* aligned checkpoints: the rest waits in the channel */
		if (!p->final && p->epoch >= smart__stream_ckpt_limit(s))
			return 0;
		rc = smart_chan_next(p->rx, &buf, &len, &user);

		if (rc == SMART_EAGAIN)
			return 0;
		if (rc == SMART_ECONN && p->final) {
			p->closed = 1; /* ckpt.c: its part may still lag */
			return 0;
		}
		if (rc)
			return smart__stream_gone(s, i, rc);
		rc = take(s, buf, len, i, user);
		smart_chan_release(p->rx);
		if (rc)
			return rc;
	}
}

int smart__stream_link_drain(struct smart_stream *s)
{
	int rc = 0;

	smart_rpc_progress(s->cfg.rpc);
	for (uint32_t i = 0; i < s->cfg.executors && !rc; i++)
		if (i != s->cfg.index && s->peer[i].rx)
			rc = drain_peer(s, i);
	return rc;
}
