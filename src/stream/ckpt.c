/*
 * Exactly-once recovery of a one-executor SLASH stream (docs/stream.md
 * §11): the executor's state checkpointed at every epoch end into a blade
 * area it owns through its lease, and the output log those checkpoints
 * commit.
 *
 * The area at base (a remote layout: one build writes and reads it):
 *   0                  owner word: lease id << 48 | generation (id 0: free)
 *   64                 slot 0, then slot 1 (slot_bytes each): a ck_head,
 *                      then n state entries (struct stream_entry, 48 B)
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
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "smart/hook.h"
#include "smart/lease.h"
#include "smart/ops.h"
#include "stream/stream_int.h"
#include "util/config.h"

enum { CK_MAGIC = 0x53436b31, CK_SLOTS = 64 };
#define CK_GEN_MASK ((1ULL << 48) - 1)

struct ck_head {
	uint32_t magic;
	uint32_t crc;	  /* CRC-32C of the head (crc 0), then the entries */
	uint64_t seq;	  /* checkpoint number, from 1 */
	uint64_t owner;	  /* the owner word of its writer */
	uint64_t qsum;	  /* the query and epoch size it was taken with */
	uint64_t epoch;	  /* epochs ended */
	uint64_t records; /* input records consumed: the replay starts here */
	uint64_t maxts;	  /* the source's largest accepted time */
	uint64_t out_n;	  /* results committed in the log */
	uint64_t filtered, late, implausible, results;
	uint32_t n; /* state entries that follow */
	uint32_t seen, final, pad;
	uint64_t spare[2];
};
_Static_assert(sizeof(struct ck_head) == 128, "checkpoint head layout");
_Static_assert(sizeof(struct smart_stream_result) == 40, "log entry layout");
_Static_assert(sizeof(struct stream_entry) == 48, "checkpoint entry layout");

/* An area as one worker sees it: the config and a registered buffer of
 * one slot. */
struct ck_area {
	struct smart_stream_ckpt_config c;
	uint64_t slot_bytes;
	uint8_t *buf;
};

struct stream_ckpt {
	struct ck_area ar;
	uint64_t owner; /* our owner word */
	uint64_t seq;	/* the last checkpoint written or restored */
	uint64_t out_c; /* results it committed */
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
	if (c->max_entries > 1u << 24 || c->max_results > 1u << 28 ||
	    (smart_gaddr_off(c->base) & 7))
		return SMART_EINVAL;
	return 0;
}

static uint64_t slot_bytes(const struct smart_stream_ckpt_config *c)
{
	return sizeof(struct ck_head) +
	       (uint64_t)c->max_entries * sizeof(struct stream_entry);
}

int smart_stream_ckpt_bytes(const struct smart_stream_ckpt_config *in,
			    uint64_t *bytes)
{
	struct smart_stream_ckpt_config c;

	if (!bytes || cfg_take(in, &c))
		return SMART_EINVAL;
	*bytes = CK_SLOTS + 2 * slot_bytes(&c) +
		 (uint64_t)c.max_results * sizeof(struct smart_stream_result);
	return 0;
}

static smart_gaddr_t slot_addr(const struct ck_area *ar, uint64_t i)
{
	return smart_gaddr_add(ar->c.base, CK_SLOTS + i * ar->slot_bytes);
}

static smart_gaddr_t log_addr(const struct ck_area *ar, uint64_t i)
{
	return smart_gaddr_add(ar->c.base,
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
	rc = smart_buf_alloc(w, ar->slot_bytes, &b);
	ar->buf = rc ? NULL : b;
	return rc;
}

static int hook(struct smart_stream *s, const char *point)
{
	void *arg = NULL;
	smart_hook_fn fn = smart_ctx_hook(smart_worker_ctx(s->w), &arg);

	return fn ? fn(s->w, point, arg) : 0;
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

static uint32_t head_crc(const struct ck_head *h, const uint8_t *ent)
{
	struct ck_head c = *h;

	c.crc = 0;
	return smart_crc32c(smart_crc32c(0, &c, sizeof(c)), ent,
			    (size_t)h->n * sizeof(struct stream_entry));
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

	for (size_t i = 0; i < k->pend_n; i += per) {
		size_t m = k->pend_n - i < per ? k->pend_n - i : per;
		int rc;

		memcpy(k->ar.buf, k->pend + i, m * sizeof(*k->pend));
		rc = smart_write_sync(s->w, log_addr(&k->ar, at + i), k->ar.buf,
				      m * sizeof(*k->pend));
		if (rc)
			return rc;
	}
	return 0;
}

static uint32_t fill_entries(const struct smart_stream *s, uint8_t *dst)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->lead.cap; i++) {
		const struct stream_entry *e = &s->lead.e[i];

		if (e->wstart != UINT64_MAX)
			memcpy(dst + (size_t)n++ * sizeof(*e), e, sizeof(*e));
	}
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
	h->epoch = s->epoch;
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
}

/* Slot seq & 1, in two WRITEs with a hook between (a torn write). */
static int slot_write(struct smart_stream *s, int final)
{
	struct stream_ckpt *k = s->ck;
	struct ck_head h;
	smart_gaddr_t a = slot_addr(&k->ar, (k->seq + 1) & 1);
	size_t len, half;
	int rc;

	if (s->lead.n > k->ar.c.max_entries)
		return SMART_ENOSPC;
	head_fill(s, &h, fill_entries(s, k->ar.buf + sizeof(h)), final);
	h.crc = head_crc(&h, k->ar.buf + sizeof(h));
	memcpy(k->ar.buf, &h, sizeof(h));
	len = sizeof(h) + (size_t)h.n * sizeof(struct stream_entry);
	half = (len / 2) & ~(size_t)7;
	rc = smart_write_sync(s->w, a, k->ar.buf, half);
	if (!rc)
		rc = hook(s, "stream.ckpt.torn");
	if (!rc)
		rc = smart_write_sync(s->w, smart_gaddr_add(a, half),
				      k->ar.buf + half, len - half);
	if (rc)
		return rc;
	k->seq = h.seq;
	k->out_c = h.out_n;
	return 0;
}

int smart__stream_ckpt_epoch(struct smart_stream *s, int final)
{
	struct stream_ckpt *k = s->ck;
	uint64_t at = k->out_c;
	int rc = hook(s, "stream.epoch.fired");

	/* the results first, then the slot that commits them (its out_n) */
	if (!rc)
		rc = SMART_M_STREAM_CKPT_SLOT_FIRST ? slot_write(s, final) :
						      log_pending(s, at);
	if (!rc)
		rc = hook(s, "stream.ckpt.logged");
	if (!rc)
		rc = SMART_M_STREAM_CKPT_SLOT_FIRST ? log_pending(s, at) :
						      slot_write(s, final);
	if (rc)
		return rc;
	k->pend_n = 0;
	return hook(s, "stream.ckpt.written");
}

/* ---- reading ------------------------------------------------------------- */

/* Slot i into ar->buf: 1 when it holds a complete checkpoint (*h its
 * head), 0 when not (never written, torn, or not ours), or an error. */
static int slot_read(smart_worker_t *w, struct ck_area *ar, uint64_t i,
		     struct ck_head *h)
{
	smart_gaddr_t a = slot_addr(ar, i);
	int rc = smart_read_sync(w, a, sizeof(*h), ar->buf);

	if (rc)
		return rc;
	memcpy(h, ar->buf, sizeof(*h));
	if (h->magic != CK_MAGIC)
		return 0;
	if (!SMART_M_STREAM_CKPT_NO_BOUNDS && h->n > ar->c.max_entries)
		return 0;
	if (h->n)
		rc = smart_read_sync(w, smart_gaddr_add(a, sizeof(*h)),
				     (size_t)h->n * sizeof(struct stream_entry),
				     ar->buf + sizeof(*h));
	if (rc)
		return rc;
	return SMART_M_STREAM_CKPT_NO_CRC ||
	       head_crc(h, ar->buf + sizeof(*h)) == h->crc;
}

/* The newest complete checkpoint, left in ar->buf: 1 (*h its head), 0
 * none, or an error. */
static int best_slot(smart_worker_t *w, struct ck_area *ar, struct ck_head *h)
{
	struct ck_head h0, h1;
	int ok0 = slot_read(w, ar, 0, &h0), ok1;

	if (ok0 < 0)
		return ok0;
	ok1 = slot_read(w, ar, 1, &h1);
	if (ok1 < 0)
		return ok1;
	if (ok1 && (!ok0 || h1.seq > h0.seq)) {
		*h = h1;
		return 1;
	}
	if (!ok0)
		return 0;
	*h = h0;
	return slot_read(w, ar, 0, &h0); /* back into buf */
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
	rc = best_slot(w, &ar, &h);
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
static int take_area(struct smart_stream *s, struct stream_ckpt *k)
{
	smart_gaddr_t a = k->ar.c.base;
	uint16_t blade = smart_gaddr_blade(a), me;
	uint64_t end = smart_now_ns() + k->ar.c.wait_ms * 1000000ULL, cur, old;
	int rc = smart_lease_id(smart_worker_ctx(s->w), blade, &me);

	while (!rc) {
		rc = smart_read_sync(s->w, a, sizeof(cur), &cur);
		if (!rc)
			rc = holder_gone(s->w, blade, cur);
		if (rc < 0)
			return rc;
		if (!rc) {
			if (smart_now_ns() >= end)
				return SMART_EBUSY;
			nap_ms();
			continue;
		}
		k->owner = (uint64_t)me << 48 | ((cur + 1) & CK_GEN_MASK);
		rc = hook(s, "stream.recover.seen"); /* a racer may win here */
		if (!rc)
			rc = smart_cas_sync(s->w, a, cur, k->owner, &old);
		if (!rc && old == cur)
			return 0;
		k->owner = 0; /* lost (or failed): not ours to release */
	}
	return rc;
}

static void release(struct smart_stream *s, struct stream_ckpt *k)
{
	uint64_t old;

	if (k->owner)
		(void)smart_cas_sync(s->w, k->ar.c.base, k->owner,
				     k->owner & CK_GEN_MASK, &old);
	k->owner = 0;
}

static void ck_free(struct smart_stream *s, struct stream_ckpt *k)
{
	release(s, k);
	smart_buf_free(s->w, k->ar.buf);
	free(k->pend);
	free(k);
}

/* The checkpoint's state into s: the table first (cleared if it fails,
 * so an error leaves s as it was), then the scalars. */
static int restore(struct smart_stream *s, struct stream_ckpt *k,
		   const struct ck_head *h)
{
	const uint8_t *ent = k->ar.buf + sizeof(*h);
	int rc = 0;

	if (h->qsum != qsum(s))
		return SMART_EINVAL;
	for (uint32_t i = 0; i < h->n && !rc; i++) {
		struct stream_entry e;

		memcpy(&e, ent + (size_t)i * sizeof(e), sizeof(e));
		rc = smart__stream_table_merge(&s->lead, e.wstart, e.key, &e.a);
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
	s->peer[s->cfg.index].epoch = h->epoch;
	s->peer[s->cfg.index].wm = smart__stream_wm(s);
	k->seq = h->seq;
	k->out_c = h->out_n;
	return 0;
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
	if (s->cfg.engine != SMART_STREAM_SLASH || s->cfg.executors != 1)
		return SMART_ENOTSUP;
	/* a JOIN's rows are not in the checkpoint's layout: refused, not
	 * restored without them (docs/stream.md §9) */
	if (s->q.agg == SMART_STREAM_JOIN && !SMART_M_STREAM_CKPT_JOIN_OK)
		return SMART_ENOTSUP;
	k = calloc(1, sizeof(*k));
	if (!k)
		return SMART_ENOMEM;
	rc = area_open(s->w, c, &k->ar);
	if (!rc)
		rc = take_area(s, k);
	if (!rc)
		rc = hook(s, "stream.recover.owned");
	if (!rc)
		rc = best_slot(s->w, &k->ar, &h);
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
