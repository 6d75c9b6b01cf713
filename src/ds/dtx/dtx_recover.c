/*
 * Smart-DTX recovery (docs/dtx.md §5): a transaction whose coordinator is
 * dead (its lease fenced) is resolved from its undo log by whoever meets
 * one of its locks, or adopts its log slot, or runs smart_dtx_recover().
 *
 * The decision: forward when every record the log lists is either
 * released (the coordinator had begun unlocking, which it does only once
 * every copy is written) or new on every copy (version one above the
 * logged one, crc right); back otherwise.  Recoverers may race: the first
 * CAS of the decision word (on the blade of entry 0's primary, in the log
 * slot's header) wins and every recoverer follows it.  Back: each record
 * still locked by the transaction is taken over (CAS to our stamp with
 * the transaction's slot and number, so that our own death leaves a lock
 * the next recoverer resolves from the same log), its old bytes written to
 * every copy, then released.  Forward: the locks are released.
 *
 * Invariants: nothing is written to a record without holding its lock;
 * a log that is torn (crc wrong) or of another transaction means the one
 * that the lock names never wrote a record (its log lands first), so its
 * lock is simply released; a lock the log does not list guards a record
 * the transaction did not write, and is released alone.  A slot's log is
 * overwritten only once no lock names its transaction (its owner starts
 * the next one only after letting every lock go; an adopter adopts only
 * what it resolved itself, never a record a live recoverer holds), so a
 * dead recoverer's stamp always finds its log; and a log no lock names
 * decides nothing (the decision word may be a newer transaction's).
 */
#include "ds/dtx/dtx_internal.h"

struct dtx_log {
	struct dtx_log_hdr hdr;
	unsigned n;
	const uint8_t *ent[SMART_DTX_ITEMS_MAX]; /* into the buffer */
};

static smart_gaddr_t log_addr(const smart_dtx_t *d, int b, unsigned slot)
{
	return smart_gaddr(d->blades[b],
			   d->log_off[b] + (uint64_t)slot * d->log_size);
}

/* Parse a log slot read into buf: 1 when it holds a whole log of seq
 * (any seq when want_any), 0 when not. */
static int log_parse(const smart_dtx_t *d, const uint8_t *buf, uint32_t seq,
		     int want_any, struct dtx_log *lg)
{
	const uint8_t *p, *end;
	unsigned i;

	memcpy(&lg->hdr, buf, sizeof(lg->hdr));
	if (!DTX_HEAD_OK(lg->hdr.head) ||
	    (!want_any && DTX_HEAD_SEQ(lg->hdr.head) != seq) ||
	    lg->hdr.bytes < sizeof(lg->hdr) || lg->hdr.bytes > d->log_size ||
	    DTX_HEAD_N(lg->hdr.head) > d->max_writes ||
	    lg->hdr.crc != smart_crc32c(smart_crc32c(d->salt, &lg->hdr.head, 8),
					buf + sizeof(lg->hdr),
					lg->hdr.bytes - sizeof(lg->hdr)))
		return 0;
	lg->n = DTX_HEAD_N(lg->hdr.head);
	p = buf + sizeof(lg->hdr);
	end = buf + lg->hdr.bytes;
	for (i = 0; i < lg->n; i++) {
		struct dtx_log_ent e;
		const struct dtx_table *t;

		if (end - p < (long)sizeof(e))
			return 0;
		memcpy(&e, p, sizeof(e));
		t = smart__dtx_table(d, e.table);
		if (!t || e.slot >= t->buckets * SMART_DTX_BUCKET_SLOTS ||
		    e.rec != smart__dtx_rec_addr(t, 0, e.slot) ||
		    end - p < (long)(sizeof(e) + t->rec_size - 8))
			return 0; /* not a log we wrote */
		lg->ent[i] = p;
		p += sizeof(e) + t->rec_size - 8;
	}
	return p == end;
}

static void ent_get(const struct dtx_log *lg, unsigned i, struct dtx_log_ent *e)
{
	memcpy(e, lg->ent[i], sizeof(*e));
}

/* The logged (old) version of entry i: bytes [8, rec_size) of the
 * record follow the entry, so the version is at +8 of them. */
static uint64_t ent_old_version(const struct dtx_log *lg, unsigned i)
{
	uint64_t v;

	memcpy(&v, lg->ent[i] + sizeof(struct dtx_log_ent) + 8, 8);
	return v;
}

/* Is entry i released, or new on every copy?  Reads them; *held |= its
 * lock still names the transaction. */
static int ent_done(smart_dtx_t *d, smart_worker_t *w, const struct dtx_log *lg,
		    unsigned i, int *done, int *held)
{
	struct dtx_log_ent e;
	const struct dtx_table *t;
	size_t mark = smart_scratch_mark(w);
	uint8_t *buf;
	unsigned k;
	int rc;

	ent_get(lg, i, &e);
	t = smart__dtx_table(d, e.table);
	rc = smart_scratch_alloc(w, (size_t)t->ncopies * t->rec_size,
				 (void **)&buf);
	for (k = 0; !rc && k < t->ncopies; k++)
		rc = smart_read(w, smart__dtx_rec_addr(t, k, e.slot),
				t->rec_size, buf + (size_t)k * t->rec_size);
	rc = rc ? rc : smart_sync(w);
	if (!rc) {
		struct dtx_rec h;

		memcpy(&h, buf, sizeof(h));
		*done = DTX_LOCK_TXN(h.lock) != DTX_LOCK_TXN(e.lock);
		*held |= !*done;
		for (k = 0; !*done && k < t->ncopies; k++) {
			const uint8_t *r = buf + (size_t)k * t->rec_size;
			enum dtx_look l;
			struct dtx_rec hk;

			memcpy(&hk, r, sizeof(hk));
			memset(&hk.lock, 0, 8);
			l = smart__dtx_rec_look(d, t, r, hk.key);
			/* a copy torn by a WRITE its coordinator died in
			 * (version new, crc wrong) is not new */
			if (hk.version != ent_old_version(lg, i) + 1 ||
			    (!SMART_M_DTX_TORN_AS_NEW &&
			     (l == DTX_L_TORN || l == DTX_L_BUSY)))
				break;
		}
		if (!*done)
			*done = k == t->ncopies;
	}
	smart_scratch_release(w, mark);
	return rc;
}

/* The decision for the transaction of log lg (slot, seq): the one on
 * record, or ours from the evidence, CASed in; 0 when no lock names the
 * transaction any more (nothing to decide: it is over, and the word may
 * hold a newer transaction's decision, which must stand). */
static int decide(smart_dtx_t *d, smart_worker_t *w, const struct dtx_log *lg,
		  unsigned slot, uint32_t seq, unsigned *dec)
{
	struct dtx_log_ent e0;
	smart_gaddr_t dw;
	uint64_t cur, old;
	unsigned i;
	int b, rc, done = 1, held = 0;

	ent_get(lg, 0, &e0);
	b = smart__dtx_blade_index(d, smart_gaddr_blade(e0.rec));
	if (b < 0)
		return SMART_EPROTO;
	dw = log_addr(d, b, slot); /* the decision word: offset 0 */
	rc = smart_read_sync(w, dw, 8, &cur);
	/* one decision for all: a recoverer that came later follows it,
	 * whatever it sees now (the rollback of others changes that) */
	if (!rc && cur >> 32 == seq && (uint32_t)cur &&
	    !SMART_M_DTX_IGNORE_DECISION) {
		*dec = (uint32_t)cur;
		return 0;
	}
	/* the word is read before the evidence: a newer transaction of
	 * the slot decides only after every lock of this one is gone, so
	 * if the evidence shows one held, a newer decision made since
	 * fails our CAS */
	for (i = 0; !rc && done && i < lg->n; i++)
		rc = ent_done(d, w, lg, i, &done, &held);
	if (rc)
		return rc;
	if (!held && !SMART_M_DTX_DECIDE_SETTLED) {
		smart__dtx_count(&d->logs_settled);
		*dec = 0;
		return 0;
	}
	*dec = done ? DTX_DEC_FORWARD : DTX_DEC_BACK;
	rc = smart_cas_sync(w, dw, cur, DTX_DEC(seq, *dec), &old);
	if (!rc && old != cur) { /* another recoverer was first */
		if (old >> 32 != seq || !(uint32_t)old)
			return SMART_EAGAIN;
		*dec = (uint32_t)old;
	}
	return rc;
}

/* Roll entry i back if the transaction (or a dead recoverer of it) still
 * holds its lock: 0 when it is rolled back or was released, 1 when a live
 * recoverer holds it (it is that one's to finish), or an error. */
static int ent_back(smart_dtx_t *d, smart_worker_t *w, const struct dtx_log *lg,
		    unsigned i)
{
	struct dtx_log_ent e;
	const struct dtx_table *t;
	uint16_t blade;
	uint64_t cur, got = 0, mine;
	unsigned k;
	int rc;

	ent_get(lg, i, &e);
	t = smart__dtx_table(d, e.table);
	blade = smart_gaddr_blade(e.rec);
	mine = DTX_LOCK(smart__dtx_lease(d, blade), DTX_LOCK_SLOT(e.lock),
			DTX_LOCK_SEQ(e.lock));
	rc = smart_read_sync(w, e.rec, 8, &cur);
	if (rc || DTX_LOCK_TXN(cur) != DTX_LOCK_TXN(e.lock))
		return rc; /* released: nothing of it to undo */
	if (cur != e.lock && cur != mine) {
		int alive = smart_lease_alive(w, blade, DTX_LOCK_ID(cur));

		if (alive) /* a live recoverer is at it */
			return alive < 0 ? alive : 1;
	}
	rc = smart_cas_sync(w, e.rec, cur, mine, &got);
	if (rc || got != cur)
		return rc;
	/* a test stops or kills a recoverer here, the lock taken over */
	(void)smart__dtx_hook(w, "dtx.recover.taken");
	for (k = 0; !rc && k < t->ncopies; k++)
		rc = smart_write(
			w,
			smart_gaddr_add(smart__dtx_rec_addr(t, k, e.slot), 8),
			lg->ent[i] + sizeof(e), t->rec_size - 8);
	rc = rc ? rc : smart_sync(w);
	if (!rc)
		rc = smart_cas_sync(w, e.rec, mine, 0, NULL);
	if (!rc)
		smart__dtx_count(&d->locks_recovered);
	return rc;
}

static int ent_forward(smart_dtx_t *d, smart_worker_t *w,
		       const struct dtx_log *lg, unsigned i)
{
	struct dtx_log_ent e;
	uint64_t got = 0;
	int rc;

	ent_get(lg, i, &e);
	rc = smart_cas_sync(w, e.rec, e.lock, 0, &got);
	if (!rc && got == e.lock)
		smart__dtx_count(&d->locks_recovered);
	return rc;
}

/* Resolve the transaction of a parsed log: 0 when no lock names it any
 * more, 1 when a live recoverer still holds one of its records (rolling
 * it back), or an error. */
static int resolve(smart_dtx_t *d, smart_worker_t *w, const struct dtx_log *lg,
		   unsigned slot)
{
	uint32_t seq = DTX_HEAD_SEQ(lg->hdr.head);
	unsigned dec = 0, i;
	int rc, r, busy = 0;

	if (!lg->n)
		return 0;
	rc = decide(d, w, lg, slot, seq, &dec);
	if (!rc && !dec)
		return 0; /* over: no lock names it */
	for (i = 0; !rc && i < lg->n; i++) {
		r = dec == DTX_DEC_FORWARD ? ent_forward(d, w, lg, i) :
					     ent_back(d, w, lg, i);
		busy |= r == 1;
		rc = r < 0 ? r : 0;
	}
	if (!rc)
		smart__dtx_count(dec == DTX_DEC_FORWARD ? &d->rolled_forward :
							  &d->rolled_back);
	return rc ? rc : busy;
}

/* Read log slot `slot` on blade index b into scratch. */
static int log_read(smart_dtx_t *d, smart_worker_t *w, int b, unsigned slot,
		    uint8_t **buf)
{
	int rc = smart_scratch_alloc(w, d->log_size, (void **)buf);

	return rc ? rc :
		    smart_read_sync(w, log_addr(d, b, slot), d->log_size, *buf);
}

int smart__dtx_recover_lock(smart_dtx_t *d, smart_worker_t *w, uint16_t blade,
			    smart_gaddr_t lockw, uint64_t lock)
{
	size_t mark = smart_scratch_mark(w);
	struct dtx_log log, *lg = &log; /* small: on the task's stack */
	unsigned slot = DTX_LOCK_SLOT(lock), i, listed = 0;
	int b = smart__dtx_blade_index(d, blade), rc = 0;
	uint8_t *buf;
	uint64_t got = 0;

	smart__dtx_count(&d->recoveries);
	if (b >= 0 && slot < d->log_slots) {
		rc = log_read(d, w, b, slot, &buf);
		if (!rc && log_parse(d, buf, DTX_LOCK_SEQ(lock), 0, lg)) {
			for (i = 0; i < lg->n; i++) {
				struct dtx_log_ent e;

				ent_get(lg, i, &e);
				listed |= e.rec == lockw;
			}
			/* 1, a record a live recoverer holds: the caller
			 * meets that one's lock next, a conflict */
			if (listed && (rc = resolve(d, w, lg, slot)) > 0)
				rc = 0;
		}
	}
	if (!rc && !listed) { /* it never wrote this record */
		rc = smart_cas_sync(w, lockw, lock, 0, &got);
		if (!rc && got == lock)
			smart__dtx_count(&d->locks_recovered);
	}
	smart_scratch_release(w, mark);
	return rc;
}

int smart__dtx_slot_adopt(smart_dtx_t *d, smart_worker_t *w, unsigned slot,
			  uint64_t dead, uint64_t mine)
{
	size_t mark = smart_scratch_mark(w);
	struct dtx_log log, *lg = &log;
	uint64_t got = 0;
	uint8_t *buf;
	unsigned b;
	int rc = 0;

	for (b = 0; !rc && b < d->nblades; b++) {
		rc = log_read(d, w, (int)b, slot, &buf);
		if (!rc && log_parse(d, buf, 0, 1, lg))
			rc = resolve(d, w, lg, slot);
		/* a live recoverer is still rolling a record of this log
		 * back: the log must stay until it is done (or dead, when
		 * the next adopter takes its lock over), since a recoverer
		 * that dies leaves a lock only this log explains */
		if (rc == 1 && !SMART_M_DTX_ADOPT_UNRESOLVED) {
			smart__dtx_count(&d->adopt_deferred);
			rc = SMART_EAGAIN;
		} else if (rc == 1) {
			rc = 0;
		}
	}
	if (!rc)
		rc = smart_cas_sync(w, smart_gaddr_add(d->owner, 8ull * slot),
				    dead, mine, &got);
	if (!rc && got != dead)
		rc = SMART_EAGAIN; /* another client adopted it */
	if (!rc)
		smart__dtx_count(&d->slots_adopted);
	smart_scratch_release(w, mark);
	return rc;
}

/* ---- walking a table's records ----------------------------------------- */

#define DTX_CHUNK_RECS 512u

/* Call fn for each record of copy `copy` of t, with the matching bytes of
 * the other copies (NULL when one copy), chunk by chunk. */
typedef int (*rec_fn)(smart_dtx_t *d, smart_worker_t *w,
		      const struct dtx_table *t, uint32_t slot,
		      const uint8_t *rec, const uint8_t *const *others,
		      void *arg);

static int walk(smart_dtx_t *d, smart_worker_t *w, const struct dtx_table *t,
		int all_copies, rec_fn fn, void *arg)
{
	uint32_t nrec = t->buckets * SMART_DTX_BUCKET_SLOTS, s0, s, n;
	unsigned k, nc = all_copies ? t->ncopies : 1;
	int rc = 0;

	for (s0 = 0; !rc && s0 < nrec; s0 += DTX_CHUNK_RECS) {
		size_t mark = smart_scratch_mark(w);
		uint8_t *buf;
		const uint8_t *others[1 + SMART_DTX_REPLICAS_MAX];

		n = nrec - s0 < DTX_CHUNK_RECS ? nrec - s0 : DTX_CHUNK_RECS;
		rc = smart_scratch_alloc(w, (size_t)nc * n * t->rec_size,
					 (void **)&buf);
		for (k = 0; !rc && k < nc; k++)
			rc = smart_read(w, smart__dtx_rec_addr(t, k, s0),
					(size_t)n * t->rec_size,
					buf + (size_t)k * n * t->rec_size);
		rc = rc ? rc : smart_sync(w);
		for (s = 0; !rc && s < n; s++) {
			for (k = 1; k < nc; k++)
				others[k - 1] = buf + ((size_t)k * n + s) *
							      t->rec_size;
			rc = fn(d, w, t, s0 + s, buf + (size_t)s * t->rec_size,
				others, arg);
		}
		smart_scratch_release(w, mark);
	}
	return rc;
}

static int recover_one(smart_dtx_t *d, smart_worker_t *w,
		       const struct dtx_table *t, uint32_t slot,
		       const uint8_t *rec, const uint8_t *const *others,
		       void *arg)
{
	smart_gaddr_t a = smart__dtx_rec_addr(t, 0, slot);
	uint64_t lock;
	int alive;

	memcpy(&lock, rec, 8);
	if (!lock)
		return 0;
	/* an operator's pass decides from the lease word as it is now, not
	 * from the keeper's last look (up to lease_ms / 8 old) */
	alive = smart_lease_alive_now(w, smart_gaddr_blade(a),
				      DTX_LOCK_ID(lock));
	if (alive)
		return alive < 0 ? alive : 0;
	return smart__dtx_recover_lock(d, w, smart_gaddr_blade(a), a, lock);
}

int smart_dtx_recover(smart_dtx_t *d, smart_worker_t *w, uint16_t blade,
		      uint64_t *found)
{
	uint64_t before, *own = NULL;
	size_t mark;
	unsigned i;
	int rc = 0;

	if (!d || !smart__dtx_own(d, w) ||
	    (blade != SMART_DTX_ALL_BLADES &&
	     smart__dtx_blade_index(d, blade) < 0))
		return SMART_EINVAL;
	before = atomic_load(&d->locks_recovered);
	for (i = 0; !rc && i < d->ntables; i++)
		if (blade == SMART_DTX_ALL_BLADES ||
		    smart_gaddr_blade(d->tables[i].copy[0]) == blade)
			rc = walk(d, w, &d->tables[i], 0, recover_one, NULL);
	/* then the log slots dead clients still own: resolved and freed */
	mark = smart_scratch_mark(w);
	if (!rc)
		rc = smart_scratch_alloc(w, (size_t)d->log_slots * 8,
					 (void **)&own);
	if (!rc)
		rc = smart_read_sync(w, d->owner, (size_t)d->log_slots * 8,
				     own);
	for (i = 0; !rc && i < d->log_slots; i++) {
		int alive;

		if (!own[i])
			continue;
		alive = smart_lease_alive_now(w, d->home,
					      (uint16_t)(own[i] >> 48));
		if (alive < 0)
			rc = alive;
		else if (!alive) {
			rc = smart__dtx_slot_adopt(d, w, i, own[i], 0);
			if (rc == SMART_EAGAIN)
				rc = 0;
		}
	}
	smart_scratch_release(w, mark);
	if (found)
		*found = atomic_load(&d->locks_recovered) - before;
	return rc;
}

/* ---- checks and scans -------------------------------------------------- */

static int check_one(smart_dtx_t *d, smart_worker_t *w,
		     const struct dtx_table *t, uint32_t slot,
		     const uint8_t *rec, const uint8_t *const *others,
		     void *arg)
{
	uint64_t *bad = arg;
	struct dtx_rec h;
	enum dtx_look l;
	unsigned k;
	int wrong;

	memcpy(&h, rec, sizeof(h));
	l = smart__dtx_rec_look(d, t, rec, h.key);
	wrong = h.lock != 0 || l == DTX_L_TORN;
	/* a valid record is on every copy byte for byte; a free one may
	 * differ (an aborted insert's intent is on the primary only) but
	 * must be free everywhere */
	for (k = 1; !wrong && k < t->ncopies; k++) {
		struct dtx_rec o;

		memcpy(&o, others[k - 1], sizeof(o));
		wrong = l == DTX_L_KEY ?
				memcmp(rec + 8, others[k - 1] + 8,
				       t->rec_size - 8) != 0 :
				smart__dtx_rec_look(d, t, others[k - 1],
						    o.key) != DTX_L_EMPTY;
	}
	*bad += wrong;
	return 0;
}

int smart_dtx_check(smart_dtx_t *d, smart_worker_t *w, uint64_t *bad)
{
	uint64_t n = 0;
	unsigned i;
	int rc = 0;

	if (!d || !w)
		return SMART_EINVAL;
	for (i = 0; !rc && i < d->ntables; i++)
		rc = walk(d, w, &d->tables[i], 1, check_one, &n);
	if (bad)
		*bad = n;
	return rc ? rc : n ? SMART_EPROTO : 0;
}

struct scan_arg {
	smart_dtx_scan_fn fn;
	void *arg;
};

static int scan_one(smart_dtx_t *d, smart_worker_t *w,
		    const struct dtx_table *t, uint32_t slot,
		    const uint8_t *rec, const uint8_t *const *others, void *arg)
{
	const struct scan_arg *a = arg;
	struct dtx_rec h;

	memcpy(&h, rec, sizeof(h));
	if (smart__dtx_rec_look(d, t, rec, h.key) != DTX_L_KEY)
		return 0;
	return a->fn(a->arg, h.key, rec + sizeof(h), DTX_META_LEN(h.meta));
}

int smart_dtx_scan(smart_dtx_t *d, smart_worker_t *w, uint32_t table,
		   smart_dtx_scan_fn fn, void *arg)
{
	const struct dtx_table *t = d ? smart__dtx_table(d, table) : NULL;
	struct scan_arg a = { fn, arg };

	if (!t || !w || !fn)
		return SMART_EINVAL;
	return walk(d, w, t, 0, scan_one, &a);
}
