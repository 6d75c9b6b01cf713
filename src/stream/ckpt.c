/*
 * Exactly-once recovery of a SLASH stream (docs/stream.md §11), the
 * executor's side: its state checkpointed at every epoch end (E > 1: at
 * every aligned cut) into its part of the area (ckpt_area.c has the
 * layout), the results it fired logged before the slot that commits them,
 * and attach: the part taken over through the lease and the state
 * restored.
 *
 * Invariants:
 *  - the results a checkpoint commits (log[0, out_n)) are in the log
 *    before its slot is written, and a reader reads no further than the
 *    newest complete checkpoint's out_n: a window fired in an epoch that
 *    was not checkpointed is fired again by the replay and overwrites the
 *    uncommitted tail, so each is in the committed log once.
 *  - E > 1, aligned cuts: checkpoint c holds the leader state after every
 *    source's epoch c and nothing later (a source's epoch c + 1 is not
 *    taken before it is written), and is written only once every part's
 *    done word is >= c - 1; so the newest cuts of the parts differ by at
 *    most one, and the older slot of every part still holds their minimum.
 *    The results of a cut are logged sorted, so a replay of it writes the
 *    same bytes.
 *  - an executor reports the end only once every part holds the final cut.
 */
#include <stdlib.h>
#include <string.h>

#include "smart/ops.h"
#include "stream/ckpt_int.h"
#include "stream/stream_int.h"

#define CK_CUT_WAIT_NS (60ULL * 1000000000ULL)

struct stream_ckpt {
	struct ck_area ar;
	uint64_t owner; /* our owner word */
	uint64_t seq;	/* the last checkpoint written or restored */
	uint64_t out_c; /* results it committed */
	uint64_t cut;	/* E > 1: the cut of that checkpoint */
	int src_final;	/* E > 1: restored with the own input finished */
	int last;	/* E > 1: the final cut is written */
	uint64_t lag0;	/* E > 1, in poll: when a lagging part was seen */
	struct smart_stream_result *pend; /* fired since, not yet logged */
	size_t pend_n, pend_cap;
};

static int hook(struct smart_stream *s, const char *point)
{
	return smart__ck_hook_w(s->w, point);
}

/* What the checkpoint's state means depends on the query and the epoch
 * size: a taker with others would replay into different windows. */
static uint64_t qsum(const struct smart_stream *s)
{
	struct smart_stream_query q;

	memcpy(&q, &s->q, sizeof(q));
	q.extract = NULL;
	q.extract_arg = NULL;
	return smart_crc32c(smart_crc32c(0, &q, sizeof(q)),
			    &s->cfg.epoch_records,
			    sizeof(s->cfg.epoch_records));
}

static int res_cmp(const void *a, const void *b)
{
	const struct smart_stream_result *x = a, *y = b;

	if (x->wstart != y->wstart)
		return x->wstart < y->wstart ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->wend != y->wend)
		return x->wend < y->wend ? -1 : 1;
	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return x->count < y->count ? -1 : x->count > y->count;
}

/* ---- writing ------------------------------------------------------------- */

int smart__stream_ckpt_note(struct smart_stream *s,
			    const struct smart_stream_result *r, size_t n)
{
	struct stream_ckpt *k = s->ck;

	if (!n)
		return 0;
	if (k->out_c + k->pend_n + n > k->ar.c.max_results)
		return SMART_ENOSPC;
	if (k->pend_n + n > k->pend_cap) {
		size_t c = k->pend_cap * 2 > k->pend_n + n ? k->pend_cap * 2 :
							     k->pend_n + n + 64;
		void *p = realloc(k->pend, c * sizeof(*k->pend));

		if (!p)
			return SMART_ENOMEM;
		k->pend = p;
		k->pend_cap = c;
	}
	memcpy(k->pend + k->pend_n, r, n * sizeof(*r));
	k->pend_n += n;
	return 0;
}

/* The results fired since the last checkpoint, into log[at, ...). */
static int log_pending(struct smart_stream *s, uint64_t at)
{
	struct stream_ckpt *k = s->ck;
	size_t per = k->ar.slot_bytes / sizeof(struct smart_stream_result);

	/* one order whatever order the merges fired them in: a replay of
	 * the cut writes the bytes a reader may already have read */
	if (k->pend_n > 1) /* none: pend may be NULL */
		qsort(k->pend, k->pend_n, sizeof(*k->pend), res_cmp);
	for (size_t i = 0; i < k->pend_n; i += per) {
		size_t m = k->pend_n - i < per ? k->pend_n - i : per;
		int rc;

		memcpy(k->ar.buf, k->pend + i, m * sizeof(*k->pend));
		rc = smart_write_sync(s->w, smart__ck_log_addr(&k->ar, at + i),
				      k->ar.buf, m * sizeof(*k->pend));
		if (rc)
			return rc;
		s->st.ckpt_bytes += m * sizeof(*k->pend);
	}
	return 0;
}

/* E > 1: what this leader knows of each source, into dst. */
static void fill_peers(const struct smart_stream *s, uint8_t *dst)
{
	for (uint32_t j = 0; j < s->cfg.executors; j++) {
		struct ck_peer p = { s->peer[j].epoch, s->peer[j].wm,
				     (uint32_t)s->peer[j].final, 0 };

		memcpy(dst + j * sizeof(p), &p, sizeof(p));
	}
}

/* The leader table's buckets, then (JOIN) its rows: entries of count 0,
 * as in a delta (stream_int.h), told apart from buckets on restore. */
static uint32_t fill_entries(const struct smart_stream *s, uint8_t *dst)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->lead.cap; i++) {
		const struct stream_entry *e = &s->lead.e[i];

		if (e->wstart != UINT64_MAX)
			memcpy(dst + (size_t)n++ * sizeof(*e), e, sizeof(*e));
	}
	for (uint32_t i = 0; i < s->lead.rows && !SMART_M_STREAM_CKPT_NO_ROWS;
	     i++)
		memcpy(dst + (size_t)n++ * sizeof(*s->lead.row),
		       &s->lead.row[i], sizeof(*s->lead.row));
	return n;
}

static void head_fill(const struct smart_stream *s, struct ck_head *h,
		      uint32_t n, int final)
{
	const struct stream_ckpt *k = s->ck;

	memset(h, 0, sizeof(*h));
	h->magic = CK_MAGIC;
	h->seq = k->seq + 1;
	h->owner = k->owner;
	h->qsum = qsum(s);
	h->epoch = k->ar.c.executors > 1 ? k->cut + 1 : s->epoch;
	h->records = s->st.records;
	h->maxts = s->maxts;
	h->out_n = k->out_c + k->pend_n;
	h->filtered = s->st.filtered;
	h->late = s->st.late;
	h->implausible = s->st.implausible;
	h->results = s->st.results;
	h->n = n;
	h->seen = (uint32_t)s->seen;
	h->final = (uint32_t) final;
	h->peers = smart__ck_peers_of(&k->ar.c);
}

/* Slot seq & 1, in two WRITEs with a hook between (a torn write). */
static int slot_write(struct smart_stream *s, int final)
{
	struct stream_ckpt *k = s->ck;
	struct ck_head h;
	smart_gaddr_t a = smart__ck_slot_addr(&k->ar, k->ar.me,
					      (k->seq + 1) & 1);
	size_t len, half,
		po = smart__ck_peers_of(&k->ar.c) * sizeof(struct ck_peer);
	int rc;

	if ((uint64_t)s->lead.n + s->lead.rows > k->ar.c.max_entries)
		return SMART_ENOSPC;
	fill_peers(s, k->ar.buf + sizeof(h));
	head_fill(s, &h, fill_entries(s, k->ar.buf + sizeof(h) + po), final);
	h.crc = smart__ck_head_crc(&h, k->ar.buf + sizeof(h));
	memcpy(k->ar.buf, &h, sizeof(h));
	len = sizeof(h) + smart__ck_body_len(&h);
	half = (len / 2) & ~(size_t)7;
	rc = smart_write_sync(s->w, a, k->ar.buf, half);
	if (!rc)
		rc = hook(s, "stream.ckpt.torn");
	if (!rc)
		rc = smart_write_sync(s->w, smart_gaddr_add(a, half),
				      k->ar.buf + half, len - half);
	if (rc)
		return rc;
	s->st.ckpt_bytes += len;
	s->st.ckpts++;
	k->seq = h.seq;
	k->out_c = h.out_n;
	return 0;
}

/* E > 1: the done word of our part, after the slot it names. */
static int done_write(struct smart_stream *s, uint64_t cut)
{
	struct stream_ckpt *k = s->ck;

	memcpy(k->ar.buf, &cut, sizeof(cut));
	s->st.ckpt_bytes += sizeof(cut);
	return smart_write_sync(
		s->w,
		smart_gaddr_add(smart__ck_part_addr(&k->ar, k->ar.me), CK_DONE),
		k->ar.buf, sizeof(cut));
}

/* Log the pending results, then the slot that commits them (its
 * out_n); E > 1: then the done word, the cut complete. */
static int commit(struct smart_stream *s, int final)
{
	struct stream_ckpt *k = s->ck;
	uint64_t at = k->out_c;
	int rc = SMART_M_STREAM_CKPT_SLOT_FIRST ? slot_write(s, final) :
						  log_pending(s, at);

	if (!rc)
		rc = hook(s, "stream.ckpt.logged");
	if (!rc)
		rc = SMART_M_STREAM_CKPT_SLOT_FIRST ? log_pending(s, at) :
						      slot_write(s, final);
	if (!rc && k->ar.c.executors > 1) {
		k->cut++;
		k->last = final;
		rc = done_write(s, k->cut);
	}
	if (rc)
		return rc;
	k->pend_n = 0;
	return hook(s, "stream.ckpt.written");
}

static int all_final(const struct smart_stream *s)
{
	for (uint32_t j = 0; j < s->cfg.executors; j++)
		if (!s->peer[j].final)
			return 0;
	return 1;
}

/* E > 1: 1 when cut + 1 can be taken: every source (this one included)
 * ended its epoch cut + 1 here, or its final one before. */
static int cut_ready(const struct smart_stream *s)
{
	if (s->ck->last)
		return 0;
	for (uint32_t j = 0; j < s->cfg.executors; j++)
		if (!s->peer[j].final && s->peer[j].epoch <= s->ck->cut)
			return 0;
	return 1;
}

/* E > 1: every other part holds cut (so the parts' newest cuts never
 * differ by two: the older slot of each keeps their minimum).  A part
 * behind whose executor's channel closed (after its final epoch: its
 * input ended, its leader part did not) never gets there: it died. */
static int cut_aligned(struct smart_stream *s, int *ok)
{
	struct stream_ckpt *k = s->ck;
	int rc = 0;

	*ok = 1;
	for (uint32_t j = 0; j < s->cfg.executors && !rc; j++) {
		uint64_t d;

		if (j == k->ar.me || SMART_M_STREAM_CKPT_NO_ALIGN)
			continue;
		rc = smart__ck_done_read(s->w, &k->ar, j, &d);
		if (rc || d >= k->cut)
			continue;
		*ok = 0;
		if (s->peer[j].closed)
			rc = smart__stream_gone(s, j, SMART_ECONN);
	}
	return rc;
}

/* E > 1: fire what the cut's watermarks allow and commit it. */
static int cut_write(struct smart_stream *s)
{
	int rc = smart__stream_fire(s, smart_now_ns());

	return rc ? rc : commit(s, all_final(s));
}

/* E > 1, at an epoch end: wait (taking what the sources ship, up to this
 * epoch: smart__stream_ckpt_limit) for the cut, then write it. */
static int cut_wait(struct smart_stream *s)
{
	uint64_t end = smart_now_ns() + CK_CUT_WAIT_NS;
	int rc = 0, ok = 0;

	while (!rc) {
		if (cut_ready(s)) {
			rc = cut_aligned(s, &ok);
			if (rc || ok)
				break;
		}
		if (smart_now_ns() > end)
			return SMART_ETIMEDOUT;
		rc = smart__stream_link_drain(s);
	}
	return rc ? rc : cut_write(s);
}

int smart__stream_ckpt_epoch(struct smart_stream *s, int final)
{
	int rc = hook(s, "stream.epoch.fired");

	if (rc)
		return rc;
	return s->ck->ar.c.executors > 1 ? cut_wait(s) : commit(s, final);
}

/* cut_aligned from poll, which does not block: a part that stays behind
 * while its executor looks alive (it answers the keepalive, writes
 * nothing) fails this one after the same bound as cut_wait's. */
static int aligned_in_poll(struct smart_stream *s, int *ok)
{
	struct stream_ckpt *k = s->ck;
	uint64_t now;
	int rc = cut_aligned(s, ok);

	if (rc || *ok) {
		k->lag0 = 0;
		return rc;
	}
	now = smart_now_ns();
	if (!k->lag0)
		k->lag0 = now;
	return now - k->lag0 > CK_CUT_WAIT_NS ? SMART_ETIMEDOUT : 0;
}

int smart__stream_ckpt_poll(struct smart_stream *s)
{
	int rc = 0, ok = 1;

	if (!s->ck || s->ck->ar.c.executors < 2)
		return 0;
	while (!rc && ok && cut_ready(s)) {
		rc = aligned_in_poll(s, &ok);
		if (!rc && ok)
			rc = cut_write(s);
	}
	return rc;
}

uint64_t smart__stream_ckpt_limit(const struct smart_stream *s)
{
	if (!s->ck || s->ck->ar.c.executors < 2 ||
	    SMART_M_STREAM_CKPT_TAKE_AHEAD)
		return UINT64_MAX;
	return s->ck->cut + 1;
}

/* The end is every part's: an executor that wrote the final cut still
 * waits until every other part holds it too, so that an executor dying
 * inside its own final cut fails the others (SMART_ECONN, cut_aligned)
 * instead of leaving its part short while they report the end. */
int smart__stream_ckpt_done(struct smart_stream *s)
{
	int rc, ok;

	if (!s->ck || s->ck->ar.c.executors < 2)
		return 1;
	if (!s->ck->last)
		return 0;
	if (SMART_M_STREAM_CKPT_END_EARLY)
		return 1;
	rc = aligned_in_poll(s, &ok);
	return rc ? rc : ok;
}

int smart__stream_ckpt_src_final(const struct smart_stream *s)
{
	return s->ck && s->ck->src_final;
}

static void ck_free(struct smart_stream *s, struct stream_ckpt *k)
{
	smart__ck_release(s->w, &k->ar, k->ar.me, &k->owner);
	smart_buf_free(s->w, k->ar.buf);
	free(k->pend);
	free(k);
}

/* E > 1: every source as the cut left it, this one's epochs included. */
static void restore_peers(struct smart_stream *s, struct stream_ckpt *k,
			  const struct ck_head *h)
{
	for (uint32_t j = 0; j < h->peers; j++) {
		struct ck_peer p;

		memcpy(&p, k->ar.buf + sizeof(*h) + j * sizeof(p), sizeof(p));
		s->peer[j].epoch = p.epoch;
		s->peer[j].wm = p.wm;
		s->peer[j].final = !!p.final;
	}
	s->epoch = s->st.epochs = s->peer[s->cfg.index].epoch;
	k->cut = h->epoch;
	k->last = !!h->final;
	k->src_final = s->peer[s->cfg.index].final;
}

/* The checkpoint's state into s: the table first (cleared if it fails,
 * so an error leaves s as it was), then the scalars. */
static int restore(struct smart_stream *s, struct stream_ckpt *k,
		   const struct ck_head *h)
{
	const uint8_t *ent = k->ar.buf + sizeof(*h) +
			     (size_t)h->peers * sizeof(struct ck_peer);
	int rc = 0;

	if (h->qsum != qsum(s))
		return SMART_EINVAL;
	for (uint32_t i = 0; i < h->n && !rc; i++) {
		struct stream_entry e;

		memcpy(&e, ent + (size_t)i * sizeof(e), sizeof(e));
		if (smart__stream_is_row(&s->q, &e)) /* JOIN */
			rc = smart__stream_table_row(&s->lead, e.wstart, e.key,
						     e.a.sum);
		else
			rc = smart__stream_table_merge(&s->lead, e.wstart,
						       e.key, &e.a);
	}
	if (rc) {
		smart__stream_table_clear(&s->lead);
		return rc;
	}
	s->epoch = s->st.epochs = h->epoch;
	s->st.records = h->records;
	if (!SMART_M_STREAM_CKPT_NO_WM) {
		s->maxts = h->maxts;
		s->seen = (int)h->seen;
	}
	s->st.filtered = h->filtered;
	s->st.late = h->late;
	s->st.implausible = h->implausible;
	s->st.results = h->results;
	if (h->peers)
		restore_peers(s, k, h);
	else {
		s->peer[s->cfg.index].epoch = h->epoch;
		s->peer[s->cfg.index].wm = smart__stream_wm(s);
	}
	k->seq = h->seq;
	k->out_c = h->out_n;
	return 0;
}

/* E > 1: a part whose newest cut is ahead of another part's done word
 * was not rolled back: restoring it would merge a replayed epoch twice.
 * 1 to go on. */
static int line_check(struct smart_stream *s, struct stream_ckpt *k,
		      const struct ck_head *h)
{
	uint64_t min;
	int rc;

	if (k->ar.c.executors < 2 || SMART_M_STREAM_CKPT_NO_LINE)
		return 1;
	rc = smart__ck_dones_min(s->w, &k->ar, &min);
	if (rc)
		return rc;
	return h->epoch <= min ? 1 : SMART_EINVAL;
}

int smart_stream_ckpt_attach(smart_stream_t *s,
			     const struct smart_stream_ckpt_config *c,
			     uint64_t *resume)
{
	struct stream_ckpt *k;
	struct ck_head h;
	int rc;

	if (!s || !resume || s->ck || s->st.records || s->finished || s->failed)
		return SMART_EINVAL;
	if (s->cfg.engine != SMART_STREAM_SLASH)
		return SMART_ENOTSUP;
	k = calloc(1, sizeof(*k));
	if (!k)
		return SMART_ENOMEM;
	rc = smart__ck_area_open(s->w, c, &k->ar);
	k->ar.me = s->cfg.index;
	if (!rc && k->ar.c.executors != s->cfg.executors)
		rc = SMART_EINVAL;
	if (!rc)
		rc = smart__ck_take_area(s->w, &k->ar, k->ar.me, &k->owner);
	if (!rc)
		rc = hook(s, "stream.recover.owned");
	if (!rc)
		rc = smart__ck_best_slot(s->w, &k->ar, k->ar.me, &h);
	if (rc == 1)
		rc = line_check(s, k, &h);
	if (rc == 1)
		rc = restore(s, k, &h);
	if (!rc)
		rc = hook(s, "stream.recover.restored");
	if (rc) {
		ck_free(s, k);
		return rc;
	}
	s->ck = k;
	*resume = s->st.records;
	return 0;
}

void smart__stream_ckpt_close(struct smart_stream *s)
{
	if (s->ck)
		ck_free(s, s->ck);
	s->ck = NULL;
}
