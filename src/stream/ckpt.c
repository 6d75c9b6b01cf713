/*
 * Exactly-once recovery of a SLASH stream (docs/stream.md §11): each
 * executor's state checkpointed at every epoch end into a part of a blade
 * area it owns through its lease, and the output log those checkpoints
 * commit.
 *
 * The area at base: one part per executor (part_bytes each), a part
 * (a remote layout: one build writes and reads it):
 *   0                  owner word: lease id << 48 | generation (id 0: free)
 *   8                  done word (E > 1): the newest cut written complete
 *   64                 slot 0, then slot 1 (slot_bytes each): a ck_head,
 *                      then (E > 1) E source records (struct ck_peer,
 *                      24 B), then n state entries (struct stream_entry)
 *   64 + 2 slot_bytes  the output log: max_results results of 40 B
 *
 * Invariants:
 *  - checkpoint seq goes to slot seq & 1, so the other slot keeps the
 *    previous complete checkpoint while one is written; a slot is
 *    restored only when its magic, its entry count (bounded by the slot)
 *    and its CRC over head and entries hold: a torn write is never
 *    restored (the words of one WRITE land in no promised order).
 *  - the results a checkpoint commits (log[0, out_n)) are in the log
 *    before its slot is written, and a reader reads no further than the
 *    newest complete checkpoint's out_n: a window fired in an epoch that
 *    was not checkpointed is fired again by the replay and overwrites the
 *    uncommitted tail, so each is in the committed log once.
 *  - only the owner writes: the area is taken by a CAS of the owner word
 *    from a free word or from a holder whose lease is dead, i.e. fenced,
 *    whose ops fail with SMART_EFENCED from then on (docs/leases.md).
 *  - E > 1, aligned cuts: checkpoint c holds the leader state after every
 *    source's epoch c and nothing later (a source's epoch c + 1 is not
 *    taken before it is written), and is written only once every part's
 *    done word is >= c - 1; so the newest cuts of the parts differ by at
 *    most one, and the older slot of every part still holds their minimum.
 *    The results of a cut are logged sorted, so a replay of it writes the
 *    same bytes.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smart/chan.h"

#include "smart/hook.h"
#include "smart/lease.h"
#include "smart/ops.h"
#include "stream/stream_int.h"
#include "util/config.h"

enum { CK_MAGIC = 0x53436b31, CK_SLOTS = 64, CK_DONE = 8 };
#define CK_CUT_WAIT_NS (60ULL * 1000000000ULL)
#define CK_GEN_MASK    ((1ULL << 48) - 1)

struct ck_head {
	uint32_t magic;
	uint32_t crc;	  /* CRC-32C of the head (crc 0), then the entries */
	uint64_t seq;	  /* checkpoint number, from 1 */
	uint64_t owner;	  /* the owner word of its writer */
	uint64_t qsum;	  /* the query and epoch size it was taken with */
	uint64_t epoch;	  /* epochs ended (E > 1: the cut) */
	uint64_t records; /* input records consumed: the replay starts here */
	uint64_t maxts;	  /* the source's largest accepted time */
	uint64_t out_n;	  /* results committed in the log */
	uint64_t filtered, late, implausible, results;
	uint32_t n; /* state entries that follow */
	uint32_t seen;
	uint32_t final; /* E > 1: every source's final epoch is in it */
	uint32_t peers; /* source records before the entries: E or 0 */
	uint64_t spare[2];
};
_Static_assert(sizeof(struct ck_head) == 128, "checkpoint head layout");
_Static_assert(sizeof(struct smart_stream_result) == 40, "log entry layout");
_Static_assert(sizeof(struct stream_entry) == 48, "checkpoint entry layout");

/* E > 1: what the leader knew of source j at the cut (exec's peer[j]). */
struct ck_peer {
	uint64_t epoch, wm;
	uint32_t final, pad;
};
_Static_assert(sizeof(struct ck_peer) == 24, "checkpoint source layout");

/* An area as one worker sees it: the config, the part it works on and a
 * registered buffer of one slot. */
struct ck_area {
	struct smart_stream_ckpt_config c;
	uint64_t slot_bytes, part_bytes;
	uint32_t me;
	uint8_t *buf;
};

struct stream_ckpt {
	struct ck_area ar;
	uint64_t owner; /* our owner word */
	uint64_t seq;	/* the last checkpoint written or restored */
	uint64_t out_c; /* results it committed */
	uint64_t cut;	/* E > 1: the cut of that checkpoint */
	int src_final;	/* E > 1: restored with the own input finished */
	int last;	/* E > 1: the final cut is written */
	struct smart_stream_result *pend; /* fired since, not yet logged */
	size_t pend_n, pend_cap;
};

void smart_stream_ckpt_config_init(struct smart_stream_ckpt_config *c)
{
	memset(c, 0, sizeof(*c));
	c->struct_size = sizeof(*c);
}

static int cfg_take(const struct smart_stream_ckpt_config *in,
		    struct smart_stream_ckpt_config *c)
{
	smart_stream_ckpt_config_init(c);
	if (!in || smart__config_take(c, sizeof(*c), _Alignof(*c), in))
		return SMART_EINVAL;
	if (!c->max_entries)
		c->max_entries = 4096;
	if (!c->max_results)
		c->max_results = 65536;
	if (!c->executors)
		c->executors = 1;
	if (c->max_entries > 1u << 24 || c->max_results > 1u << 28 ||
	    (smart_gaddr_off(c->base) & 7) ||
	    c->executors > SMART_STREAM_MAX_EXECUTORS ||
	    c->index >= c->executors)
		return SMART_EINVAL;
	return 0;
}

static uint32_t peers_of(const struct smart_stream_ckpt_config *c)
{
	return c->executors > 1 ? c->executors : 0;
}

static uint64_t slot_bytes(const struct smart_stream_ckpt_config *c)
{
	return sizeof(struct ck_head) +
	       (uint64_t)peers_of(c) * sizeof(struct ck_peer) +
	       (uint64_t)c->max_entries * sizeof(struct stream_entry);
}

static uint64_t part_bytes(const struct smart_stream_ckpt_config *c)
{
	return CK_SLOTS + 2 * slot_bytes(c) +
	       (uint64_t)c->max_results * sizeof(struct smart_stream_result);
}

int smart_stream_ckpt_bytes(const struct smart_stream_ckpt_config *in,
			    uint64_t *bytes)
{
	struct smart_stream_ckpt_config c;

	if (!bytes || cfg_take(in, &c))
		return SMART_EINVAL;
	*bytes = c.executors * part_bytes(&c);
	return 0;
}

static smart_gaddr_t part_addr(const struct ck_area *ar, uint32_t part)
{
	return smart_gaddr_add(ar->c.base, part * ar->part_bytes);
}

static smart_gaddr_t slot_addr(const struct ck_area *ar, uint32_t part,
			       uint64_t i)
{
	return smart_gaddr_add(part_addr(ar, part),
			       CK_SLOTS + i * ar->slot_bytes);
}

static smart_gaddr_t log_addr(const struct ck_area *ar, uint64_t i)
{
	return smart_gaddr_add(part_addr(ar, ar->me),
			       CK_SLOTS + 2 * ar->slot_bytes +
				       i * sizeof(struct smart_stream_result));
}

static int area_open(smart_worker_t *w,
		     const struct smart_stream_ckpt_config *in,
		     struct ck_area *ar)
{
	void *b;
	int rc = cfg_take(in, &ar->c);

	if (rc)
		return rc;
	ar->slot_bytes = slot_bytes(&ar->c);
	ar->part_bytes = part_bytes(&ar->c);
	ar->me = ar->c.index;
	rc = smart_buf_alloc(w, ar->slot_bytes, &b);
	ar->buf = rc ? NULL : b;
	return rc;
}

static int hook_w(smart_worker_t *w, const char *point)
{
	void *arg = NULL;
	smart_hook_fn fn = smart_ctx_hook(smart_worker_ctx(w), &arg);

	return fn ? fn(w, point, arg) : 0;
}

static int hook(struct smart_stream *s, const char *point)
{
	return hook_w(s->w, point);
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

/* The bytes after the head: source records, then entries. */
static size_t body_len(const struct ck_head *h)
{
	return (size_t)h->peers * sizeof(struct ck_peer) +
	       (size_t)h->n * sizeof(struct stream_entry);
}

static uint32_t head_crc(const struct ck_head *h, const uint8_t *body)
{
	struct ck_head c = *h;

	c.crc = 0;
	return smart_crc32c(smart_crc32c(0, &c, sizeof(c)), body, body_len(h));
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
		rc = smart_write_sync(s->w, log_addr(&k->ar, at + i), k->ar.buf,
				      m * sizeof(*k->pend));
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
	h->peers = peers_of(&k->ar.c);
}

/* Slot seq & 1, in two WRITEs with a hook between (a torn write). */
static int slot_write(struct smart_stream *s, int final)
{
	struct stream_ckpt *k = s->ck;
	struct ck_head h;
	smart_gaddr_t a = slot_addr(&k->ar, k->ar.me, (k->seq + 1) & 1);
	size_t len, half, po = peers_of(&k->ar.c) * sizeof(struct ck_peer);
	int rc;

	if ((uint64_t)s->lead.n + s->lead.rows > k->ar.c.max_entries)
		return SMART_ENOSPC;
	fill_peers(s, k->ar.buf + sizeof(h));
	head_fill(s, &h, fill_entries(s, k->ar.buf + sizeof(h) + po), final);
	h.crc = head_crc(&h, k->ar.buf + sizeof(h));
	memcpy(k->ar.buf, &h, sizeof(h));
	len = sizeof(h) + body_len(&h);
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
	return smart_write_sync(s->w,
				smart_gaddr_add(part_addr(&k->ar, k->ar.me),
						CK_DONE),
				k->ar.buf, sizeof(cut));
}

/* Part j's done word. */
static int done_read(smart_worker_t *w, struct ck_area *ar, uint32_t j,
		     uint64_t *d)
{
	int rc = smart_read_sync(w, smart_gaddr_add(part_addr(ar, j), CK_DONE),
				 sizeof(*d), ar->buf);

	if (!rc)
		memcpy(d, ar->buf, sizeof(*d));
	return rc;
}

/* The smallest done word of the other parts. */
static int dones_min(smart_worker_t *w, struct ck_area *ar, uint64_t *min)
{
	*min = UINT64_MAX;
	for (uint32_t j = 0; j < ar->c.executors; j++) {
		uint64_t d;
		int rc = j == ar->me ? 0 : done_read(w, ar, j, &d);

		if (rc)
			return rc;
		if (j != ar->me && d < *min)
			*min = d;
	}
	return 0;
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
		rc = done_read(s->w, &k->ar, j, &d);
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

int smart__stream_ckpt_poll(struct smart_stream *s)
{
	int rc = 0, ok = 1;

	if (!s->ck || s->ck->ar.c.executors < 2)
		return 0;
	while (!rc && ok && cut_ready(s)) {
		rc = cut_aligned(s, &ok);
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
	rc = cut_aligned(s, &ok);
	return rc ? rc : ok;
}

int smart__stream_ckpt_src_final(const struct smart_stream *s)
{
	return s->ck && s->ck->src_final;
}

/* ---- reading ------------------------------------------------------------- */

/* Slot i into ar->buf: 1 when it holds a complete checkpoint (*h its
 * head), 0 when not (never written, torn, or not ours), or an error. */
static int slot_read(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		     uint64_t i, struct ck_head *h)
{
	smart_gaddr_t a = slot_addr(ar, part, i);
	int rc = smart_read_sync(w, a, sizeof(*h), ar->buf);

	if (rc)
		return rc;
	memcpy(h, ar->buf, sizeof(*h));
	if (h->magic != CK_MAGIC || h->peers != peers_of(&ar->c))
		return 0;
	if (!SMART_M_STREAM_CKPT_NO_BOUNDS && h->n > ar->c.max_entries)
		return 0;
	if (body_len(h))
		rc = smart_read_sync(w, smart_gaddr_add(a, sizeof(*h)),
				     body_len(h), ar->buf + sizeof(*h));
	if (rc)
		return rc;
	return SMART_M_STREAM_CKPT_NO_CRC ||
	       head_crc(h, ar->buf + sizeof(*h)) == h->crc;
}

/* The newest complete checkpoint, left in ar->buf: 1 (*h its head), 0
 * none, or an error. */
static int best_slot(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		     struct ck_head *h)
{
	struct ck_head h0, h1;
	int ok0 = slot_read(w, ar, part, 0, &h0), ok1;

	if (ok0 < 0)
		return ok0;
	ok1 = slot_read(w, ar, part, 1, &h1);
	if (ok1 < 0)
		return ok1;
	if (ok1 && (!ok0 || h1.seq > h0.seq)) {
		*h = h1;
		return 1;
	}
	if (!ok0)
		return 0;
	*h = h0;
	return slot_read(w, ar, part, 0, &h0); /* back into buf */
}

static int log_read(smart_worker_t *w, struct ck_area *ar,
		    struct smart_stream_result *out, size_t n)
{
	size_t per = ar->slot_bytes / sizeof(*out);

	for (size_t i = 0; i < n; i += per) {
		size_t m = n - i < per ? n - i : per;
		int rc = smart_read_sync(w, log_addr(ar, i), m * sizeof(*out),
					 ar->buf);

		if (rc)
			return rc;
		memcpy(out + i, ar->buf, m * sizeof(*out));
	}
	return 0;
}

int smart_stream_ckpt_output(smart_worker_t *w,
			     const struct smart_stream_ckpt_config *c,
			     struct smart_stream_result *out, size_t max,
			     size_t *n, uint64_t *total, int *final)
{
	struct ck_area ar;
	struct ck_head h;
	int rc;

	if (!w || !n || !total || !final || (!out && max))
		return SMART_EINVAL;
	*n = 0;
	rc = area_open(w, c, &ar);
	if (rc)
		return rc;
	rc = best_slot(w, &ar, ar.me, &h);
	if (rc >= 0) {
		*total = rc ? h.out_n : 0;
		*final = rc && h.final;
		*n = *total < max ? (size_t)*total : max;
		rc = log_read(w, &ar, out, *n);
	}
	smart_buf_free(w, ar.buf);
	return rc;
}

/* ---- taking over --------------------------------------------------------- */

/* 1 when the owner word names nobody or a holder whose lease is dead. */
static int holder_gone(smart_worker_t *w, uint16_t blade, uint64_t word)
{
	uint16_t id = (uint16_t)(word >> 48);
	int alive;

	if (!id || SMART_M_STREAM_CKPT_TAKE_LIVE)
		return 1;
	alive = smart_lease_alive_now(w, blade, id);
	return alive < 0 ? alive : !alive;
}

static void nap_ms(void)
{
	struct timespec ts = { 0, 1000000 };

	nanosleep(&ts, NULL);
}

/* The owner word, CASed from a free or dead holder's to ours; a live
 * holder is waited for until wait_ms (its lease runs out: fenced).  A
 * lost CAS looks again at once: the word then names the winner, alive
 * (refused or waited for) unless it died too; so the loop runs once more
 * per racer that won and died, and ends. */
static int take_area(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		     uint64_t *owner)
{
	smart_gaddr_t a = part_addr(ar, part);
	uint16_t blade = smart_gaddr_blade(a), me;
	uint64_t end = smart_now_ns() + ar->c.wait_ms * 1000000ULL, cur, old;
	int rc = smart_lease_id(smart_worker_ctx(w), blade, &me);

	while (!rc) {
		rc = smart_read_sync(w, a, sizeof(cur), &cur);
		if (!rc)
			rc = holder_gone(w, blade, cur);
		if (rc < 0)
			return rc;
		if (!rc) {
			if (smart_now_ns() >= end)
				return SMART_EBUSY;
			nap_ms();
			continue;
		}
		*owner = (uint64_t)me << 48 | ((cur + 1) & CK_GEN_MASK);
		rc = hook_w(w,
			    "stream.recover.seen"); /* a racer may win here */
		if (!rc)
			rc = smart_cas_sync(w, a, cur, *owner, &old);
		if (!rc && old == cur)
			return 0;
		*owner = 0; /* lost (or failed): not ours to release */
	}
	return rc;
}

static void release(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		    uint64_t *owner)
{
	uint64_t old;

	if (*owner)
		(void)smart_cas_sync(w, part_addr(ar, part), *owner,
				     *owner & CK_GEN_MASK, &old);
	*owner = 0;
}

static void ck_free(struct smart_stream *s, struct stream_ckpt *k)
{
	release(s->w, &k->ar, k->ar.me, &k->owner);
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
	rc = dones_min(s->w, &k->ar, &min);
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
	rc = area_open(s->w, c, &k->ar);
	k->ar.me = s->cfg.index;
	if (!rc && k->ar.c.executors != s->cfg.executors)
		rc = SMART_EINVAL;
	if (!rc)
		rc = take_area(s->w, &k->ar, k->ar.me, &k->owner);
	if (!rc)
		rc = hook(s, "stream.recover.owned");
	if (!rc)
		rc = best_slot(s->w, &k->ar, k->ar.me, &h);
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

/* ---- rolling back to a cut (E > 1) ---------------------------------------- */

/* What one part holds: its newest complete cut (0: none), the slot it is
 * in, and the cut in the other slot (0: none complete). */
struct part_view {
	uint64_t newest, older;
	uint32_t slot;
};

static int part_view(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		     struct part_view *v)
{
	struct ck_head h[2];
	int ok[2];

	for (uint32_t i = 0; i < 2; i++) {
		ok[i] = slot_read(w, ar, part, i, &h[i]);
		if (ok[i] < 0)
			return ok[i];
	}
	v->slot = ok[1] && (!ok[0] || h[1].seq > h[0].seq);
	v->newest = ok[v->slot] ? h[v->slot].epoch : 0;
	v->older = ok[!v->slot] ? h[!v->slot].epoch : 0;
	return 0;
}

/* The line, checked: aligned parts differ by at most one cut, and a part
 * one ahead still holds the line in its other slot. */
static int line_of(const struct part_view *v, uint32_t E, uint64_t *line)
{
	*line = UINT64_MAX;
	for (uint32_t j = 0; j < E; j++)
		*line = v[j].newest < *line ? v[j].newest : *line;
	for (uint32_t j = 0; j < E; j++)
		if (v[j].newest > *line + 1 ||
		    (v[j].newest > *line && *line && v[j].older != *line))
			return SMART_EPROTO;
	return 0;
}

/* Every part at the line: a newer slot made unreadable (its magic
 * zeroed), the done word set to it. */
static int roll_parts(smart_worker_t *w, struct ck_area *ar,
		      const struct part_view *v, uint64_t line)
{
	int rc = 0;

	for (uint32_t j = 0; j < ar->c.executors && !rc; j++) {
		memset(ar->buf, 0, sizeof(uint64_t));
		if (v[j].newest > line)
			rc = smart_write_sync(w, slot_addr(ar, j, v[j].slot),
					      ar->buf, sizeof(uint64_t));
		memcpy(ar->buf, &line, sizeof(line));
		if (!rc)
			rc = smart_write_sync(w,
					      smart_gaddr_add(part_addr(ar, j),
							      CK_DONE),
					      ar->buf, sizeof(line));
	}
	return rc;
}

int smart_stream_ckpt_rollback(smart_worker_t *w,
			       const struct smart_stream_ckpt_config *c,
			       uint64_t *line)
{
	struct part_view v[SMART_STREAM_MAX_EXECUTORS];
	uint64_t owner[SMART_STREAM_MAX_EXECUTORS] = { 0 }, l = 0;
	struct ck_area ar;
	uint32_t E;
	int rc;

	if (!w || !line)
		return SMART_EINVAL;
	rc = area_open(w, c, &ar);
	if (rc)
		return rc;
	E = ar.c.executors;
	/* owning every part keeps executors out while the parts change */
	for (uint32_t j = 0; j < E && !rc; j++)
		rc = take_area(w, &ar, j, &owner[j]);
	for (uint32_t j = 0; j < E && !rc; j++)
		rc = part_view(w, &ar, j, &v[j]);
	if (!rc)
		rc = line_of(v, E, &l);
	if (!rc)
		rc = roll_parts(w, &ar, v, l);
	for (uint32_t j = 0; j < E; j++)
		release(w, &ar, j, &owner[j]);
	smart_buf_free(w, ar.buf);
	if (!rc)
		*line = l;
	return rc;
}
