/*
 * Smart-DTX commit (docs/dtx.md §3): validation and the undo log in one
 * round, the records' new bytes to their primaries and backups in the
 * next, then the unlocks posted and not waited for (dtx_unlock.c checks
 * them later).  Abort releases the locks.
 *
 * Invariants:
 * - Nothing of a transaction reaches a record before its undo log has
 *   landed on every blade holding a copy of a record it writes, so a
 *   recoverer that finds any of its locks finds the log beside it.
 * - No lock is released before every copy of every record it writes has
 *   landed: a lock seen released means the commit reached every replica
 *   (recovery rolls such a transaction forward).
 * - An undo log is posted only once every unlock of the object's last
 *   commit is seen landed: a slot's log outlives every lock naming it.
 * - A lock over a record the transaction wrote is released only over
 *   bytes that are whole: the new ones on every copy (committed) or the
 *   old ones (put back).  One a failure leaves held keeps the object
 *   stuck (no next transaction, so the slot keeps the log that explains
 *   the lock) until smart_dtx_abort lets it go; and while one record's
 *   undo is unfinished, the records put back stay locked too (a released
 *   one is recovery's evidence of a finished commit).
 * - Versions only grow: each commit of a record adds 1 (a delete too).
 * - Validation happens with every lock of the transaction held, after
 *   its reads: a read-only record whose version and free lock word are
 *   unchanged, and a key still absent from its buckets, were so at that
 *   point, which is the transaction's serialization point.
 */
#include "ds/common/ds_common.h"
#include "ds/dtx/dtx_internal.h"

/* The source of lock releases: it must outlive the WRITEs (until sync). */
static const uint64_t dtx_zero;

/* ---- release ------------------------------------------------------- */

/* Let every lock the transaction holds go (a CAS from our stamp where a
 * failed op left it unsure whether we hold it), but those of a stuck
 * undo (stuck 2: their undo failed, their bytes are not the old ones;
 * stuck 1: put back beside such a record, write_undo). */
static int release(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0, any = 0, rc2;

	/* an insert's intent stays: a free record with a key is free */
	any = 0;
	for (i = 0; i < x->n; i++) {
		struct dtx_item *it = &x->item[i];
		smart_gaddr_t lw = smart__dtx_rec_addr(it->t, 0, it->slot);
		int r = 0;

		if (it->stuck)
			continue;
		if (it->locked == 1)
			r = smart__dtx_write(x, w, lw, &dtx_zero, 8);
		else if (it->locked) /* uncertain: only our own stamp */
			r = smart_cas(w, lw,
				      DTX_LOCK(smart__dtx_lease(
						       x->d,
						       smart_gaddr_blade(lw)),
					       x->slot, x->seq),
				      0, NULL);
		if (it->locked) {
			x->ops++;
			any = 1;
		}
		rc = rc ? rc : r;
	}
	if (any) {
		rc2 = smart_sync(w);
		rc = rc ? rc : rc2;
	}
	/* after a failure, whatever is still ours goes by a CAS next time */
	for (i = 0; i < x->n; i++)
		if (!x->item[i].stuck)
			x->item[i].locked = rc && x->item[i].locked ? 2 : 0;
	return rc;
}

/* The transaction is over: a lock it still holds after its log was posted
 * keeps it stuck (the slot's next log would overwrite the only thing that
 * explains that lock, docs/dtx.md §5); others are let go for good (no
 * log: a finder releases them alone once we are gone). */
static void keep_stuck(smart_dtx_txn_t *x)
{
	int i;

	x->stuck = 0;
	for (i = 0; i < x->n; i++) {
		struct dtx_item *it = &x->item[i];

		if (it->locked && x->logged && !it->stuck)
			it->stuck = 1;
		if (it->stuck) {
			it->locked = 2; /* ours: released by a CAS */
			x->stuck++;
		} else {
			it->locked = 0;
		}
	}
}

void smart__dtx_finish(smart_dtx_txn_t *x, smart_worker_t *w, int rc)
{
	if (rc)
		(void)release(x, w);
	keep_stuck(x);
	smart__dtx_count(rc ? &x->d->aborts : &x->d->commits);
	if (x->started) {
		x->cost.round_trips =
			(unsigned)(smart_task_round_trips(w, NULL) - x->rt0);
		x->cost.bytes = smart_task_bytes(w) - x->bytes0;
	} else {
		memset(&x->cost, 0, sizeof(x->cost));
	}
	x->cost.ops = x->ops;
	x->cost.write_bytes = x->wbytes;
	if (!rc) { /* the READ-backs of our unlocks, to come (dtx_unlock.c) */
		x->cost.ops += (unsigned)x->nunl;
		x->cost.bytes += 8u * (unsigned)x->nunl;
	}
	x->open = 0;
}

int smart_dtx_abort(smart_dtx_txn_t *x, smart_worker_t *w)
{
	if (!x || !smart__dtx_own(x->d, w))
		return SMART_EINVAL;
	if (!x->open && x->stuck)
		return smart__dtx_unstick(x, w);
	if (!x->open) /* the last commit's unlocks: seen landed */
		return smart__dtx_unlock_reap(x, w);
	smart__dtx_finish(x, w, SMART_EABORT);
	return 0;
}

int smart_dtx_last_cost_sized(const smart_dtx_txn_t *x,
			      struct smart_dtx_cost *out, size_t size)
{
	if (!x || !out)
		return SMART_EINVAL;
	return smart__ds_out_give(out, size, &x->cost, sizeof(x->cost));
}

/* ---- validation ------------------------------------------------------ */

static int is_written(const struct dtx_item *it)
{
	return it->written && !it->status && it->locked;
}

/* Does item it need a look at commit, and is it a whole-bucket one? */
static int needs_buckets(const struct dtx_item *it)
{
	return it->kind == DTX_INS ? is_written(it) :
				     it->status == SMART_ENOENT;
}

/* A record read: its version must not have moved by commit.  An insert
 * that found its key present read it too (SMART_EEXIST says the key was
 * there, which a delete committed since would make a lie). */
static int needs_version(const struct dtx_item *it)
{
	return (it->kind == DTX_RO && !it->status) ||
	       (it->kind == DTX_INS && it->status == SMART_EEXIST &&
		!SMART_M_DTX_NO_EEXIST_CHECK);
}

/* Queue the READ of item it's {lock, key, version} into it->io: the lock
 * word, then (fenced) key and version, on the record's QP.  The lock is
 * then read no later than the version: a free lock then an unchanged
 * version mean the record was free and unchanged at the lock's READ
 * (versions only grow).  One 24-byte READ has no order among its words
 * (contract rule 4): its version can be read before a commit lands and
 * its lock after the unlock, a write skew (docs/dtx.md §3, test_dtx
 * skew).  Chained on one QP, the two READs cost no round trip more. */
static int version_post(smart_dtx_txn_t *x, smart_worker_t *w,
			struct dtx_item *it)
{
	smart_gaddr_t a = smart__dtx_rec_addr(it->t, 0, it->slot);
	int rc;

	x->ops++;
	if (SMART_M_DTX_VALIDATE_ONE_READ)
		return smart_read(w, a, 24, it->io);
	x->ops++;
	rc = smart_read(w, a, 8, it->io);
	rc = rc ? rc : smart_fence(w);
	return rc ? rc :
		    smart_read(w, smart_gaddr_add(a, 8), 16,
			       (uint8_t *)it->io + 8);
}

static int validate_post(smart_dtx_txn_t *x, smart_worker_t *w, int skip_ro)
{
	int i, k, rc = 0;

	for (i = 0; i < x->n && !rc; i++) {
		struct dtx_item *it = &x->item[i];
		const struct dtx_table *t = it->t;
		size_t bsz = (size_t)SMART_DTX_BUCKET_SLOTS * t->rec_size;

		it->io = NULL;
		if (it->kind == DTX_INS && it->intent && !it->status) {
			/* the intent first, on the QP of the buckets read
			 * next (the slot is one of theirs): it lands before
			 * they are read (Dekker's half, docs/dtx.md §3) */
			rc = smart__dtx_write(
				x, w,
				smart_gaddr_add(smart__dtx_rec_addr(t, 0,
								    it->slot),
						8),
				it->intent_img, 24);
			x->ops++;
		}
		if (rc)
			break;
		if (needs_buckets(it) && !(skip_ro && it->kind != DTX_INS)) {
			rc = smart_scratch_alloc(w, 2 * bsz, &it->io);
			for (k = 0; !rc && k < 2; k++, x->ops++)
				rc = smart_read(
					w,
					smart__dtx_rec_addr(
						t, 0,
						it->bucket[k] *
							SMART_DTX_BUCKET_SLOTS),
					bsz, (uint8_t *)it->io + k * bsz);
		} else if (needs_version(it) && !skip_ro) {
			rc = smart_scratch_alloc(w, 24, &it->io);
			rc = rc ? rc : version_post(x, w, it);
		}
	}
	return rc;
}

/* Is lock (a record's lock word in a bucket of item it's table) ours?
 * Our other inserts' slots may not hold their keys yet (their intents
 * land in the same round, some after this item's READ): a slot we lock
 * is no other insert's intent. */
static int own_lock(smart_dtx_txn_t *x, const struct dtx_item *it,
		    uint64_t lock)
{
	smart_gaddr_t a = smart__dtx_rec_addr(it->t, 0, it->slot);

	return !SMART_M_DTX_OWN_AS_OTHER &&
	       lock == DTX_LOCK(smart__dtx_lease(x->d, smart_gaddr_blade(a)),
				x->slot, x->seq);
}

/* The buckets read at validation: is the key still absent (an insert:
 * present nowhere but in our slot, and nobody else inserting it)? */
static int buckets_ok(smart_dtx_txn_t *x, const struct dtx_item *it)
{
	int j;

	for (j = 0; j < 2 * SMART_DTX_BUCKET_SLOTS; j++) {
		const uint8_t *rec = (const uint8_t *)it->io +
				     (size_t)j * it->t->rec_size;
		uint32_t slot = it->bucket[j / SMART_DTX_BUCKET_SLOTS] *
					SMART_DTX_BUCKET_SLOTS +
				j % SMART_DTX_BUCKET_SLOTS;
		enum dtx_look l = smart__dtx_rec_look(x->d, it->t, rec,
						      it->key);
		struct dtx_rec h;

		memcpy(&h, rec, sizeof(h));
		if (it->kind == DTX_INS && slot == it->slot)
			continue;
		/* a locked record with the key: a commit of it in flight,
		 * or another insert's intent (Dekker's half: each insert
		 * writes its intent before this read) */
		if (l == DTX_L_KEY || l == DTX_L_TORN ||
		    (h.lock && h.key == it->key && !own_lock(x, it, h.lock) &&
		     !SMART_M_DTX_NO_INTENT_CHECK))
			return 0;
	}
	return 1;
}

static int validate_check(smart_dtx_txn_t *x)
{
	int i;

	for (i = 0; i < x->n; i++) {
		const struct dtx_item *it = &x->item[i];
		struct dtx_rec h;

		if (!it->io)
			continue;
		if (needs_buckets(it)) {
			if (!buckets_ok(x, it)) {
				smart__dtx_count(
					it->kind == DTX_INS ?
						&x->d->insert_conflicts :
						&x->d->validate_fails);
				return SMART_EABORT;
			}
			continue;
		}
		memcpy(&h, it->io, 24);
		if (h.lock || h.key != it->key || h.version != it->read_ver) {
			smart__dtx_count(&x->d->validate_fails);
			return SMART_EABORT;
		}
	}
	return 0;
}

/* ---- the undo log ----------------------------------------------------- */

/* Build the log image (from its head word on) in scratch: entries for
 * every record written, their old bytes [8, rec_size). */
static int log_build(smart_dtx_txn_t *x, smart_worker_t *w, uint8_t **img,
		     uint32_t *bytes)
{
	struct dtx_log_hdr hdr;
	uint8_t *p;
	unsigned n = 0;
	int i, rc = smart_scratch_alloc(w, x->d->log_size, (void **)&p);

	if (rc)
		return rc;
	*img = p;
	p += sizeof(hdr);
	for (i = 0; i < x->n; i++) {
		const struct dtx_item *it = &x->item[i];
		struct dtx_log_ent e;

		if (!is_written(it))
			continue;
		memset(&e, 0, sizeof(e));
		e.rec = smart__dtx_rec_addr(it->t, 0, it->slot);
		e.lock = DTX_LOCK(smart__dtx_lease(x->d,
						   smart_gaddr_blade(e.rec)),
				  x->slot, x->seq);
		e.table = it->t->id;
		e.slot = it->slot;
		memcpy(p, &e, sizeof(e));
		memcpy(p + sizeof(e), it->old + 8, it->t->rec_size - 8);
		p += sizeof(e) + it->t->rec_size - 8;
		n++;
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.head = DTX_HEAD(x->seq, n);
	hdr.bytes = (uint32_t)(p - *img);
	hdr.crc = smart_crc32c(smart_crc32c(x->d->salt, &hdr.head, 8),
			       *img + sizeof(hdr), hdr.bytes - sizeof(hdr));
	memcpy(*img, &hdr, sizeof(hdr));
	*bytes = hdr.bytes;
	return 0;
}

/* Write the log to every blade holding a copy of a written record. */
static int log_post(smart_dtx_txn_t *x, smart_worker_t *w)
{
	uint32_t seen = 0, bytes;
	uint8_t *img;
	int i, b, rc = log_build(x, w, &img, &bytes);
	unsigned k;

	for (i = 0; i < x->n && !rc; i++) {
		const struct dtx_item *it = &x->item[i];

		if (!is_written(it))
			continue;
		for (k = 0; k < it->t->ncopies && !rc; k++) {
			b = smart__dtx_blade_index(x->d,
						   smart_gaddr_blade(
							   it->t->copy[k]));
			if (b < 0 || (seen >> b & 1))
				continue;
			seen |= 1u << b;
			x->ops++;
			/* from the head word on: the decision word is the
			 * recoverers' */
			rc = smart__dtx_write(
				x, w,
				smart_gaddr(x->d->blades[b],
					    x->d->log_off[b] +
						    (uint64_t)x->slot *
							    x->d->log_size +
						    8),
				img + 8, bytes - 8);
		}
	}
	return rc;
}

/* ---- commit writes ----------------------------------------------------- */

/* Where a split copy's second WRITE starts: after the version. */
#define DTX_SPLIT_HEAD 24u

/* Where item it's commit WRITEs start.  The crc covers key, version, meta
 * and the value, and all but the key change; a record read for update and
 * found holds its key on every copy already (only an insert puts a key in
 * a slot, on every copy; a delete keeps it), so an update or a delete
 * starts at the version: 8 bytes fewer per copy (docs/dtx.md §3, "Bytes
 * written").  An insert writes the key: its backups have none yet. */
static size_t write_from(const struct dtx_item *it)
{
	return it->kind == DTX_RW || SMART_M_DTX_INSERT_KEY_KEPT ?
		       offsetof(struct dtx_rec, version) :
		       offsetof(struct dtx_rec, key);
}

/* Queue item it's new record to every copy (the primary's lock word is
 * not written: bytes [write_from, rec_size)).  split (tests): the last
 * copy gets the bytes before its meta only (the version); the image stays
 * in it->io for write_split. */
static int write_post(smart_dtx_txn_t *x, smart_worker_t *w,
		      struct dtx_item *it, int split)
{
	const struct dtx_table *t = it->t;
	uint64_t ver = it->read_ver + !SMART_M_DTX_NO_VERSION_BUMP;
	uint8_t *rec;
	unsigned k;
	int rc = smart_scratch_alloc(w, t->rec_size, (void **)&rec);

	if (rc)
		return rc;
	memset(rec, 0, sizeof(struct dtx_rec));
	smart__dtx_rec_seal(x->d, t, rec, it->key, ver, it->val, it->len,
			    !it->deleted);
	it->write_ver = ver;
	it->io = rec;
	for (k = 0; k < t->ncopies && !rc; k++) {
		size_t end = split && k + 1 == t->ncopies ? DTX_SPLIT_HEAD :
							    t->rec_size;

		x->ops++;
		rc = smart__dtx_write(
			x, w,
			smart_gaddr_add(smart__dtx_rec_addr(t, k, it->slot),
					write_from(it)),
			rec + write_from(it), end - write_from(it));
		if (!rc && k == 0 && SMART_M_DTX_UNLOCK_EARLY) {
			rc = smart__dtx_write(x, w,
					      smart__dtx_rec_addr(t, 0,
								  it->slot),
					      &dtx_zero, 8);
			it->locked = 0;
		}
	}
	return rc;
}

/* The second round of a split record (tests): everything but the head
 * landed elsewhere; its last copy holds the new version (and key) over
 * the old meta and value (a torn copy: crc wrong), then "dtx.commit.inside"
 * (a test kills the coordinator there, inside a WRITE), then the rest. */
static int write_split(smart_dtx_txn_t *x, smart_worker_t *w,
		       struct dtx_item *it)
{
	const struct dtx_table *t = it->t;
	int rc = write_post(x, w, it, 1);

	rc = rc ? rc : smart_sync(w);
	rc = rc ? rc : smart__dtx_hook(w, "dtx.commit.inside");
	x->ops++;
	return rc ? rc :
		    smart__dtx_write(x, w,
				     smart_gaddr_add(smart__dtx_rec_addr(
							     t, t->ncopies - 1,
							     it->slot),
						     DTX_SPLIT_HEAD),
				     (uint8_t *)it->io + DTX_SPLIT_HEAD,
				     t->rec_size - DTX_SPLIT_HEAD);
}

/* Every written record's copies.  With a hook set (tests), in rounds a
 * test can stop between: the first record alone, then
 * "dtx.commit.torn" (a test kills the coordinator there, half committed,
 * or fails the rest with the hook's return, as a transport error
 * would); then every other record but the second, whose last copy is
 * written in two halves (write_split), as a doorbell's WRITEs to several
 * blades and the words of one may land in any order. */
static int write_all(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0, first = -1, second = -1,
	       hook = smart_ctx_hook(smart_worker_ctx(w), NULL) != NULL;

	for (i = 0; i < x->n && !rc; i++) {
		if (!is_written(&x->item[i]))
			continue;
		if (hook && first < 0) {
			first = i;
			rc = write_post(x, w, &x->item[i], 0);
			rc = rc ? rc : smart_sync(w);
			rc = rc ? rc : smart__dtx_hook(w, "dtx.commit.torn");
		} else if (hook && second < 0) {
			second = i; /* posted last */
		} else {
			rc = write_post(x, w, &x->item[i], 0);
		}
	}
	if (!rc && second >= 0)
		rc = write_split(x, w, &x->item[second]);
	return rc ? rc : smart_sync(w);
}

/* Put item it's old bytes back on every copy (a test fails it at
 * "dtx.undo.record", as if its WRITEs could not be posted). */
static int put_back(smart_dtx_txn_t *x, smart_worker_t *w,
		    const struct dtx_item *it)
{
	unsigned k;
	int rc = smart__dtx_hook(w, "dtx.undo.record");

	for (k = 0; !rc && k < it->t->ncopies; k++)
		rc = smart__dtx_write(
			x, w,
			smart_gaddr_add(smart__dtx_rec_addr(it->t, k, it->slot),
					8),
			it->old + 8, it->t->rec_size - 8);
	if (rc)
		(void)smart_sync(w); /* nothing posted still reads it */
	return rc ? rc : smart_sync(w);
}

/* Let stuck item it's lock go (its bytes are whole). */
static int unstick_one(smart_dtx_txn_t *x, smart_worker_t *w,
		       struct dtx_item *it)
{
	smart_gaddr_t lw = smart__dtx_rec_addr(it->t, 0, it->slot);
	int rc = smart_cas_sync(
		w, lw,
		DTX_LOCK(smart__dtx_lease(x->d, smart_gaddr_blade(lw)), x->slot,
			 x->seq),
		0, NULL);

	if (!rc) {
		it->stuck = 0;
		it->locked = 0;
		x->stuck--;
	}
	return rc;
}

/* Commit's writes failed midway: put every copy back as it was, record
 * by record (an error path: a round trip each).  A record not put back
 * keeps its lock (stuck 2): released over the aborted transaction's
 * bytes it would show them committed; held, it stays ours to finish
 * (smart_dtx_abort) or, once we are dead, a recoverer's to roll back from
 * the log, which stays since the slot starts nothing new meanwhile. */
static void write_undo(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, failed = 0;

	for (i = 0; i < x->n; i++) {
		struct dtx_item *it = &x->item[i];

		if (is_written(it) && put_back(x, w, it) &&
		    !SMART_M_DTX_UNDO_IGNORED)
			it->stuck = 2, failed = 1;
	}
	/* one undo failed: the records put back keep their locks too
	 * (stuck 1: their bytes are whole).  Released, they would be the
	 * evidence of a commit that reached every replica, and a recoverer
	 * finding the rest new on every copy would roll it all forward
	 * over their old bytes (docs/dtx.md §5) */
	for (i = 0; failed && !SMART_M_DTX_RELEASE_PUT_BACK && i < x->n; i++)
		if (is_written(&x->item[i]) && !x->item[i].stuck)
			x->item[i].stuck = 1;
}

/* The lock is ours (x's stamp) until we let it go: a CAS from the stamp
 * (one that finds another word: a recoverer had it, we were fenced).
 * Every record whose undo failed is put back first; only then does any
 * lock go: one released while another record still holds the new bytes
 * reads, to a recoverer after our death, as a commit that reached every
 * replica (write_undo). */
int smart__dtx_unstick(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int i, rc = 0;

	for (i = 0; !rc && i < x->n; i++) {
		struct dtx_item *it = &x->item[i];

		if (it->stuck == 2 && !(rc = put_back(x, w, it)))
			it->stuck = 1; /* whole again, still held */
		if (!rc && it->stuck == 1 && SMART_M_DTX_UNSTICK_EARLY)
			rc = unstick_one(x, w, it);
	}
	for (i = 0; !rc && i < x->n; i++)
		if (x->item[i].stuck)
			rc = unstick_one(x, w, &x->item[i]);
	return rc;
}

/* Committed: every copy is written.  The unlocks are posted, not waited
 * for (dtx_unlock.c); the worker is polled once (smart_poll), which on
 * shm executes them as a NIC would on its own.  They are remembered
 * beside the object's earlier unlocks not yet seen landed: a writing
 * commit saw those landed before its log, and one that wrote nothing
 * posted no log, so nothing is waited for here.  If they do not fit, or
 * one cannot be posted, the locks are released the waited way, tried once
 * more; the outcome stands, and what is still held keeps the object stuck
 * (finish). */
static void unlock(smart_dtx_txn_t *x, smart_worker_t *w)
{
	if (SMART_M_DTX_UNLOCK_WAITED ||
	    (SMART_M_DTX_UNLOCK_REAP_FIRST && smart__dtx_unlock_reap(x, w)) ||
	    smart__dtx_unlock_post(x, w)) {
		if (release(x, w))
			(void)release(x, w);
		return;
	}
	/* a test kills us here: committed, the unlocks not landed */
	(void)smart__dtx_hook(w, "dtx.commit.unlocking");
	(void)smart_poll(w);
}

static int commit(smart_dtx_txn_t *x, smart_worker_t *w)
{
	size_t mark = smart_scratch_mark(w);
	int i, rc, writes = 0, one_ro;

	for (i = 0; i < x->n; i++)
		writes += is_written(&x->item[i]);
	/* a read-only transaction of one record: its read is its point
	 * (an insert that found its key present wrote nothing either) */
	one_ro = x->n == 1 && (x->item[0].kind == DTX_RO ||
			       x->item[0].status == SMART_EEXIST);
	/* the slot's last log must outlive its locks (dtx_unlock.c) */
	rc = writes && !SMART_M_DTX_LOG_BEFORE_UNLOCKED ?
		     smart__dtx_unlock_reap(x, w) :
		     0;
	rc = rc ? rc : validate_post(x, w, one_ro || SMART_M_DTX_NO_VALIDATE);
	if (!rc && writes && !SMART_M_DTX_LOG_AFTER_COMMIT) {
		x->logged = 1;
		rc = log_post(x, w);
	}
	if (!rc)
		rc = smart_sync(w);
	if (!rc)
		rc = validate_check(x);
	if (!rc) /* a test commits another transaction here */
		rc = smart__dtx_hook(w, "dtx.commit.validated");
	if (!rc && writes) {
		rc = write_all(x, w);
		if (rc) {
			write_undo(x, w);
		} else if (SMART_M_DTX_LOG_AFTER_COMMIT) {
			x->logged = 1;
			rc = log_post(x, w);
			rc = rc ? rc : smart_sync(w);
		}
		if (!rc) /* a test may kill us here: all written */
			(void)smart__dtx_hook(w, "dtx.commit.written");
	}
	if (!rc) {
		for (i = 0; i < x->n; i++) {
			struct dtx_item *it = &x->item[i];

			if (it->kind == DTX_INS && is_written(it))
				smart__dtx_cache_put(x->d, it->t, it->key,
						     it->slot);
			it->intent = 0; /* the key is final */
		}
		unlock(x, w);
	}
	smart_scratch_release(w, mark);
	return rc;
}

int smart_dtx_commit(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int rc;

	if (!x || !smart__dtx_own(x->d, w) || !x->open)
		return SMART_EINVAL;
	rc = smart__dtx_exec(x, w);
	if (!rc)
		rc = smart__dtx_hook(w, "dtx.exec.done");
	if (!rc)
		rc = commit(x, w);
	smart__dtx_finish(x, w, rc);
	return rc;
}
