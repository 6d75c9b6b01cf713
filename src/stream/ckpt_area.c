/*
 * The checkpoint area of a stream (docs/stream.md §11): its layout, its
 * slots read and checked, its owner word taken and given back through
 * the lease, its committed output read, and the rollback of every part
 * to one cut.  What an executor writes there is ckpt.c's.
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
 *  - only the owner writes: a part is taken by a CAS of the owner word
 *    from a free word or from a holder whose lease is dead, i.e. fenced,
 *    whose ops fail with SMART_EFENCED from then on (docs/leases.md).
 *  - a part's done word is written after the slot it names, so its
 *    newest complete cut is never below it.
 */
#include <string.h>
#include <time.h>

#include "smart/hook.h"
#include "smart/lease.h"
#include "smart/ops.h"
#include "stream/ckpt_int.h"
#include "util/config.h"

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

uint32_t smart__ck_peers_of(const struct smart_stream_ckpt_config *c)
{
	return c->executors > 1 ? c->executors : 0;
}

static uint64_t slot_bytes(const struct smart_stream_ckpt_config *c)
{
	return sizeof(struct ck_head) +
	       (uint64_t)smart__ck_peers_of(c) * sizeof(struct ck_peer) +
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

smart_gaddr_t smart__ck_part_addr(const struct ck_area *ar, uint32_t part)
{
	return smart_gaddr_add(ar->c.base, part * ar->part_bytes);
}

smart_gaddr_t smart__ck_slot_addr(const struct ck_area *ar, uint32_t part,
				  uint64_t i)
{
	return smart_gaddr_add(smart__ck_part_addr(ar, part),
			       CK_SLOTS + i * ar->slot_bytes);
}

smart_gaddr_t smart__ck_log_addr(const struct ck_area *ar, uint64_t i)
{
	return smart_gaddr_add(smart__ck_part_addr(ar, ar->me),
			       CK_SLOTS + 2 * ar->slot_bytes +
				       i * sizeof(struct smart_stream_result));
}

int smart__ck_area_open(smart_worker_t *w,
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

int smart__ck_hook_w(smart_worker_t *w, const char *point)
{
	void *arg = NULL;
	smart_hook_fn fn = smart_ctx_hook(smart_worker_ctx(w), &arg);

	return fn ? fn(w, point, arg) : 0;
}

/* The bytes after the head: source records, then entries. */
size_t smart__ck_body_len(const struct ck_head *h)
{
	return (size_t)h->peers * sizeof(struct ck_peer) +
	       (size_t)h->n * sizeof(struct stream_entry);
}

uint32_t smart__ck_head_crc(const struct ck_head *h, const uint8_t *body)
{
	struct ck_head c = *h;

	c.crc = 0;
	return smart_crc32c(smart_crc32c(0, &c, sizeof(c)), body,
			    smart__ck_body_len(h));
}

/* Part j's done word. */
int smart__ck_done_read(smart_worker_t *w, struct ck_area *ar, uint32_t j,
			uint64_t *d)
{
	int rc = smart_read_sync(w,
				 smart_gaddr_add(smart__ck_part_addr(ar, j),
						 CK_DONE),
				 sizeof(*d), ar->buf);

	if (!rc)
		memcpy(d, ar->buf, sizeof(*d));
	return rc;
}

/* The smallest done word of the other parts. */
int smart__ck_dones_min(smart_worker_t *w, struct ck_area *ar, uint64_t *min)
{
	*min = UINT64_MAX;
	for (uint32_t j = 0; j < ar->c.executors; j++) {
		uint64_t d;
		int rc = j == ar->me ? 0 : smart__ck_done_read(w, ar, j, &d);

		if (rc)
			return rc;
		if (j != ar->me && d < *min)
			*min = d;
	}
	return 0;
}

/* Slot i into ar->buf: 1 when it holds a complete checkpoint (*h its
 * head), 0 when not (never written, torn, or not ours), or an error. */
int smart__ck_slot_read(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			uint64_t i, struct ck_head *h)
{
	smart_gaddr_t a = smart__ck_slot_addr(ar, part, i);
	int rc = smart_read_sync(w, a, sizeof(*h), ar->buf);

	if (rc)
		return rc;
	memcpy(h, ar->buf, sizeof(*h));
	if (h->magic != CK_MAGIC || h->peers != smart__ck_peers_of(&ar->c))
		return 0;
	/* bounds first: a corrupt count read no entry, a corrupt out_n no
	 * result, past its slot or its part's log */
	if (!SMART_M_STREAM_CKPT_NO_BOUNDS &&
	    (h->n > ar->c.max_entries || h->out_n > ar->c.max_results))
		return 0;
	if (smart__ck_body_len(h))
		rc = smart_read_sync(w, smart_gaddr_add(a, sizeof(*h)),
				     smart__ck_body_len(h),
				     ar->buf + sizeof(*h));
	if (rc)
		return rc;
	return SMART_M_STREAM_CKPT_NO_CRC ||
	       smart__ck_head_crc(h, ar->buf + sizeof(*h)) == h->crc;
}

/* The newest complete checkpoint, left in ar->buf: 1 (*h its head), 0
 * none, or an error. */
int smart__ck_best_slot(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			struct ck_head *h)
{
	struct ck_head h0, h1;
	int ok0 = smart__ck_slot_read(w, ar, part, 0, &h0), ok1;

	if (ok0 < 0)
		return ok0;
	ok1 = smart__ck_slot_read(w, ar, part, 1, &h1);
	if (ok1 < 0)
		return ok1;
	if (ok1 && (!ok0 || h1.seq > h0.seq)) {
		*h = h1;
		return 1;
	}
	if (!ok0)
		return 0;
	*h = h0;
	return smart__ck_slot_read(w, ar, part, 0, &h0); /* back into buf */
}

static int log_read(smart_worker_t *w, struct ck_area *ar,
		    struct smart_stream_result *out, size_t n)
{
	size_t per = ar->slot_bytes / sizeof(*out);

	for (size_t i = 0; i < n; i += per) {
		size_t m = n - i < per ? n - i : per;
		int rc = smart_read_sync(w, smart__ck_log_addr(ar, i),
					 m * sizeof(*out), ar->buf);

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
	rc = smart__ck_area_open(w, c, &ar);
	if (rc)
		return rc;
	rc = smart__ck_best_slot(w, &ar, ar.me, &h);
	if (rc >= 0) {
		*total = rc ? h.out_n : 0;
		*final = rc && h.final;
		*n = *total < max ? (size_t)*total : max;
		rc = log_read(w, &ar, out, *n);
	}
	smart_buf_free(w, ar.buf);
	return rc;
}

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
int smart__ck_take_area(smart_worker_t *w, struct ck_area *ar, uint32_t part,
			uint64_t *owner)
{
	smart_gaddr_t a = smart__ck_part_addr(ar, part);
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
		rc = smart__ck_hook_w(
			w, "stream.recover.seen"); /* a racer may win here */
		if (!rc)
			rc = smart_cas_sync(w, a, cur, *owner, &old);
		if (!rc && old == cur)
			return 0;
		*owner = 0; /* lost (or failed): not ours to release */
	}
	return rc;
}

void smart__ck_release(smart_worker_t *w, struct ck_area *ar, uint32_t part,
		       uint64_t *owner)
{
	uint64_t old;

	if (*owner)
		(void)smart_cas_sync(w, smart__ck_part_addr(ar, part), *owner,
				     *owner & CK_GEN_MASK, &old);
	*owner = 0;
}

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
		ok[i] = smart__ck_slot_read(w, ar, part, i, &h[i]);
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
			rc = smart_write_sync(w,
					      smart__ck_slot_addr(ar, j,
								  v[j].slot),
					      ar->buf, sizeof(uint64_t));
		memcpy(ar->buf, &line, sizeof(line));
		if (!rc)
			rc = smart_write_sync(
				w,
				smart_gaddr_add(smart__ck_part_addr(ar, j),
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
	rc = smart__ck_area_open(w, c, &ar);
	if (rc)
		return rc;
	E = ar.c.executors;
	/* owning every part keeps executors out while the parts change */
	for (uint32_t j = 0; j < E && !rc; j++)
		rc = smart__ck_take_area(w, &ar, j, &owner[j]);
	for (uint32_t j = 0; j < E && !rc; j++)
		rc = part_view(w, &ar, j, &v[j]);
	if (!rc)
		rc = line_of(v, E, &l);
	if (!rc)
		rc = roll_parts(w, &ar, v, l);
	for (uint32_t j = 0; j < E; j++)
		smart__ck_release(w, &ar, j, &owner[j]);
	smart_buf_free(w, ar.buf);
	if (!rc)
		*line = l;
	return rc;
}
