/*
 * Smart-DTX execution (docs/dtx.md §3): queueing items, and running them
 * in rounds of one doorbell per blade until each is done.  An item whose
 * slot is cached is read (read-only) or locked and read (CAS + READ in
 * one chain) at once; the others read both their buckets first.  An
 * insert locks a free slot; its key goes there (its intent) in the
 * validation round, just before its buckets are read (dtx_commit.c), so
 * that of two concurrent inserts of one key the later reader finds the
 * other's.
 *
 * Invariants: a lock is taken only with a CAS from 0 and the stamp of
 * this transaction; an item marked locked holds it until commit or abort
 * releases it; a record read under our lock is stable (nobody else writes
 * a locked record), so what it shows is what commit's undo log saves.
 * A lock met whose holder is dead is resolved (dtx_recover.c) before the
 * record is read again; one whose holder lives aborts this transaction.
 */
#include "ds/dtx/dtx_internal.h"

int smart_dtx_begin(smart_dtx_txn_t *x)
{
	int i;

	if (!x)
		return SMART_EINVAL;
	if (x->stuck) /* smart_dtx_abort finishes the undo first */
		return SMART_EBUSY;
	for (i = 0; x->open && i < x->n; i++)
		if (x->item[i].locked)
			return SMART_EINVAL; /* smart_dtx_abort first */
	x->open = 1;
	x->n = 0;
	x->nwrites = 0;
	x->started = 0;
	x->ops = 0;
	x->wbytes = 0;
	x->logged = 0;
	x->seq++;
	x->rounds_left = DTX_ROUNDS_MAX;
	return 0;
}

static int queue(smart_dtx_txn_t *x, uint32_t table, uint64_t key,
		 enum dtx_kind kind, void *buf, size_t cap)
{
	const struct dtx_table *t;
	struct dtx_item *it;
	int i;

	if (!x || !x->open)
		return SMART_EINVAL;
	t = smart__dtx_table(x->d, table);
	if (!t || (!buf && cap) || (buf && cap < t->value_size))
		return SMART_EINVAL;
	for (i = 0; i < x->n && !SMART_M_DTX_SAME_KEY_TWICE; i++)
		if (x->item[i].t == t && x->item[i].key == key)
			return SMART_EINVAL; /* one item per record */
	if (x->n >= SMART_DTX_ITEMS_MAX ||
	    (kind == DTX_INS && (unsigned)x->nwrites >= x->d->max_writes))
		return SMART_ERANGE;
	it = &x->item[x->n];
	memset(it, 0, sizeof(*it));
	it->t = t;
	it->key = key;
	it->kind = kind;
	it->buf = buf;
	it->status = SMART_EINVAL; /* not executed */
	it->old = x->old_arena + (size_t)x->n * x->d->rec_max;
	it->val = x->val_arena +
		  (size_t)x->n * (x->d->rec_max - sizeof(struct dtx_rec));
	smart__dtx_buckets(x->d, t, key, it->bucket);
	return x->n++;
}

int smart_dtx_read(smart_dtx_txn_t *x, uint32_t table, uint64_t key, void *buf,
		   size_t cap)
{
	return queue(x, table, key, DTX_RO, buf, cap);
}

int smart_dtx_read_for_update(smart_dtx_txn_t *x, uint32_t table, uint64_t key,
			      void *buf, size_t cap)
{
	return queue(x, table, key, DTX_RW, buf, cap);
}

int smart_dtx_insert(smart_dtx_txn_t *x, uint32_t table, uint64_t key,
		     const void *val, size_t len)
{
	const struct dtx_table *t = x ? smart__dtx_table(x->d, table) : NULL;
	int i;

	if (!t || (!val && len) || len > t->value_size)
		return SMART_EINVAL;
	i = queue(x, table, key, DTX_INS, NULL, 0);
	if (i < 0)
		return i;
	if (len)
		memcpy(x->item[i].val, val, len);
	x->item[i].len = len;
	x->item[i].written = 1;
	x->nwrites++;
	return i;
}

static struct dtx_item *done_item(const smart_dtx_txn_t *x, int i)
{
	if (!x || i < 0 || i >= x->n || x->item[i].step != DTX_S_DONE)
		return NULL;
	return (struct dtx_item *)&x->item[i];
}

int smart_dtx_status(const smart_dtx_txn_t *x, int i, size_t *len)
{
	const struct dtx_item *it = done_item(x, i);

	if (!it)
		return SMART_EINVAL;
	if (len)
		*len = it->status ? 0 : it->len;
	return it->status;
}

/* Item i, read for update and found, open to a write or delete: 0 and
 * *out, SMART_ERANGE when it would be one written record too many,
 * SMART_EINVAL otherwise. */
static int writable(smart_dtx_txn_t *x, int i, struct dtx_item **out)
{
	struct dtx_item *it = done_item(x, i);

	if (!it || !x->open || it->kind != DTX_RW || it->status)
		return SMART_EINVAL;
	if (!it->written && (unsigned)x->nwrites >= x->d->max_writes)
		return SMART_ERANGE;
	*out = it;
	return 0;
}

int smart_dtx_write(smart_dtx_txn_t *x, int i, const void *val, size_t len)
{
	struct dtx_item *it;
	int rc = writable(x, i, &it);

	if (rc)
		return rc;
	if ((!val && len) || len > it->t->value_size)
		return SMART_EINVAL;
	if (!it->written)
		x->nwrites++;
	if (len)
		memmove(it->val, val, len);
	it->len = len;
	it->written = 1;
	it->deleted = 0;
	return 0;
}

int smart_dtx_delete(smart_dtx_txn_t *x, int i)
{
	struct dtx_item *it;
	int rc = writable(x, i, &it);

	if (rc)
		return rc;
	if (!it->written)
		x->nwrites++;
	it->len = 0;
	it->written = 1;
	it->deleted = 1;
	return 0;
}

int smart_dtx_item_versions(const smart_dtx_txn_t *x, int i, uint64_t *slot,
			    uint64_t *read_ver, uint64_t *write_ver)
{
	const struct dtx_item *it = done_item(x, i);

	if (!it)
		return SMART_EINVAL;
	if (slot) /* blade, table, record index: one number */
		*slot = (uint64_t)smart_gaddr_blade(it->t->copy[0]) << 48 |
			(uint64_t)it->t->id << 40 | it->slot;
	if (read_ver)
		*read_ver = it->status ? 0 : it->read_ver;
	if (write_ver)
		*write_ver = it->write_ver;
	return 0;
}

/* ---- rounds ---------------------------------------------------------- */

static uint64_t my_lock(const smart_dtx_txn_t *x, const struct dtx_table *t)
{
	return DTX_LOCK(smart__dtx_lease(x->d, smart_gaddr_blade(t->copy[0])),
			x->slot, x->seq);
}

/* Queue this round's ops of item it. */
static int post(smart_dtx_txn_t *x, smart_worker_t *w, struct dtx_item *it)
{
	const struct dtx_table *t = it->t;
	size_t bsz = (size_t)SMART_DTX_BUCKET_SLOTS * t->rec_size;
	smart_gaddr_t rec;
	int k, rc;

	if (it->step == DTX_S_QUEUED) {
		int hit = it->kind != DTX_INS &&
			  smart__dtx_cache_get(x->d, t, it->key, &it->slot);

		smart__dtx_count(hit ? &x->d->cache_hits : &x->d->cache_misses);
		it->step = hit ? DTX_S_SLOT : DTX_S_SEARCH;
	}
	switch (it->step) {
	case DTX_S_SEARCH:
		rc = smart_scratch_alloc(w, 2 * bsz, &it->io);
		for (k = 0; !rc && k < 2; k++, x->ops++)
			rc = smart_read(w,
					smart__dtx_rec_addr(
						t, 0,
						it->bucket[k] *
							SMART_DTX_BUCKET_SLOTS),
					bsz, (uint8_t *)it->io + k * bsz);
		return rc;
	case DTX_S_SLOT:
		rec = smart__dtx_rec_addr(t, 0, it->slot);
		rc = smart_scratch_alloc(w, t->rec_size, &it->io);
		it->cas_old = 0;
		if (!rc && it->kind != DTX_RO && !SMART_M_DTX_NO_LOCK) {
			rc = smart_cas(w, rec, 0, my_lock(x, t), &it->cas_old);
			x->ops++;
		}
		x->ops++;
		return rc ? rc : smart_read(w, rec, t->rec_size, it->io);
	default:
		return 0;
	}
}

/* A lock word `lock` met at lockw (a record's): 1 when its holder is
 * alive (a conflict), 0 when it was dead and what it left is resolved
 * (read the record again), or an error. */
static int smart__dtx_lock_met(smart_dtx_t *d, smart_worker_t *w,
			       smart_gaddr_t lockw, uint64_t lock)
{
	uint16_t blade = smart_gaddr_blade(lockw);
	int alive;

	if (SMART_M_DTX_NO_RECOVERY)
		return 1;
	alive = smart_lease_alive(w, blade, DTX_LOCK_ID(lock));
	if (alive)
		return alive; /* 1, or an error */
	return smart__dtx_recover_lock(d, w, blade, lockw, lock);
}

/* A lock `lock` met at item it's slot: SMART_EABORT when its holder
 * lives, 0 when it is resolved (the item goes back to `step`). */
static int lock_conflict(smart_dtx_txn_t *x, smart_worker_t *w,
			 struct dtx_item *it, uint32_t slot, uint64_t lock,
			 enum dtx_step step)
{
	int rc = smart__dtx_lock_met(x->d, w,
				     smart__dtx_rec_addr(it->t, 0, slot), lock);

	if (rc == 1) {
		smart__dtx_count(it->kind == DTX_INS ? &x->d->insert_conflicts :
						       &x->d->lock_conflicts);
		return SMART_EABORT;
	}
	it->step = step;
	return rc;
}

/* A record of our key found readable: copy it out. */
static void found(smart_dtx_txn_t *x, struct dtx_item *it, const uint8_t *rec)
{
	struct dtx_rec h;

	memcpy(&h, rec, sizeof(h));
	memcpy(it->old, rec, it->t->rec_size);
	it->read_ver = h.version;
	it->len = DTX_META_LEN(h.meta);
	if (it->buf)
		memcpy(it->buf, rec + sizeof(h), it->len);
	it->status = 0;
	it->step = DTX_S_DONE;
	smart__dtx_cache_put(x->d, it->t, it->key, it->slot);
}

/* Release the lock just taken on a slot that turned out not to be ours
 * to use, and search the buckets. */
static int unlock_and_search(smart_dtx_txn_t *x, smart_worker_t *w,
			     struct dtx_item *it)
{
	uint64_t zero = 0;

	it->locked = 0;
	it->step = DTX_S_SEARCH;
	x->ops++;
	return smart_write_sync(w, smart__dtx_rec_addr(it->t, 0, it->slot),
				&zero, 8);
}

/* Has another insert of this transaction chosen that free slot? */
static int claimed(const smart_dtx_txn_t *x, const struct dtx_item *it,
		   uint32_t slot)
{
	int i;

	for (i = 0; i < x->n; i++) {
		const struct dtx_item *o = &x->item[i];

		if (o != it && o->kind == DTX_INS && o->t == it->t &&
		    o->slot == slot && o->step != DTX_S_SEARCH &&
		    o->step != DTX_S_QUEUED && !o->status)
			return 1;
	}
	return 0;
}

/* Is slot, locked with `lock`, a free slot another insert of ours locked
 * for another key?  Its key word is not a key yet (the intent is written
 * at validation): 0 there is no insert of key 0 by a live holder. */
static int own_other(const smart_dtx_txn_t *x, const struct dtx_item *it,
		     uint32_t slot, uint64_t lock)
{
	int i, ours = 0;

	if (SMART_M_DTX_OWN_FREE_AS_BUSY || lock != my_lock(x, it->t))
		return 0;
	for (i = 0; i < x->n; i++) {
		const struct dtx_item *o = &x->item[i];

		if (o == it || o->t != it->t || o->slot != slot ||
		    o->step == DTX_S_SEARCH || o->step == DTX_S_QUEUED)
			continue; /* not (yet) at that slot */
		if (o->key == it->key)
			return 0; /* the same key twice: in the way */
		ours = 1;
	}
	return ours;
}

/* The buckets of an item read: find its key, a lock in the way, or (an
 * insert) a free slot. */
static int after_search(smart_dtx_txn_t *x, smart_worker_t *w,
			struct dtx_item *it)
{
	const struct dtx_table *t = it->t;
	int j, keyat = -1, torn = 0, freeb = -1, nfree[2] = { 0, 0 };
	uint32_t freeslot[2] = { 0, 0 }, busyslot = 0;
	uint64_t busy = 0;

	for (j = 0; j < 2 * SMART_DTX_BUCKET_SLOTS; j++) {
		const uint8_t *rec = (const uint8_t *)it->io +
				     (size_t)j * t->rec_size;
		uint32_t slot = it->bucket[j / SMART_DTX_BUCKET_SLOTS] *
					SMART_DTX_BUCKET_SLOTS +
				j % SMART_DTX_BUCKET_SLOTS;
		struct dtx_rec h;
		enum dtx_look l = smart__dtx_rec_look(x->d, t, rec, it->key);

		memcpy(&h, rec, sizeof(h));
		if (j >= SMART_DTX_BUCKET_SLOTS &&
		    it->bucket[1] == it->bucket[0])
			break; /* one bucket only */
		if (l == DTX_L_KEY && keyat < 0) {
			keyat = j;
			it->slot = slot;
		} else if (h.lock && h.key == it->key && !busy &&
			   !own_other(x, it, slot, h.lock)) {
			busy = h.lock; /* being inserted or written */
			busyslot = slot;
		} else if (l == DTX_L_TORN) {
			torn = 1;
		} else if (l == DTX_L_EMPTY && !h.lock &&
			   !claimed(x, it, slot) &&
			   !nfree[j / SMART_DTX_BUCKET_SLOTS]++) {
			freeslot[j / SMART_DTX_BUCKET_SLOTS] = slot;
		}
	}
	if (keyat >= 0) {
		const uint8_t *rec = (const uint8_t *)it->io +
				     (size_t)keyat * t->rec_size;
		struct dtx_rec h;

		memcpy(&h, rec, sizeof(h));
		if (it->kind == DTX_INS) {
			/* a read of the key: its version is validated at
			 * commit (dtx_commit.c, needs_version) */
			it->read_ver = h.version;
			it->status = SMART_EEXIST;
			it->step = DTX_S_DONE;
			return 0;
		}
		if (it->kind == DTX_RW) {
			it->step = DTX_S_SLOT; /* lock it next round */
			return 0;
		}
		if (h.lock)
			return lock_conflict(x, w, it, it->slot, h.lock,
					     DTX_S_SEARCH);
		found(x, it, rec);
		return 0;
	}
	if (busy)
		return lock_conflict(x, w, it, busyslot, busy, DTX_S_SEARCH);
	if (torn) {
		smart__dtx_count(&x->d->crc_retries);
		return 0; /* read the buckets again */
	}
	if (it->kind != DTX_INS) {
		it->status = SMART_ENOENT; /* validated at commit */
		it->step = DTX_S_DONE;
		return 0;
	}
	if (nfree[0] || nfree[1])
		freeb = nfree[1] > nfree[0];
	if (freeb < 0) {
		it->status = SMART_ENOSPC;
		it->step = DTX_S_DONE;
		return 0;
	}
	it->slot = freeslot[freeb];
	it->step = DTX_S_SLOT;
	return 0;
}

/* An insert's intent: the free record it locked, with its key, still
 * not valid and with a right crc, so that it stays a consistent free
 * record whoever finds it unlocked later (an abort leaves it so). */
static void intent_build(smart_dtx_txn_t *x, struct dtx_item *it)
{
	uint8_t head[20]; /* key, version, meta's high half: 0 */
	uint64_t ver;
	uint32_t c;

	memcpy(&ver, it->old + offsetof(struct dtx_rec, version), 8);
	memcpy(head, &it->key, 8);
	memcpy(head + 8, &ver, 8);
	memset(head + 16, 0, 4);
	/* the crc smart__dtx_rec_crc computes, over these bytes */
	c = smart_crc32c(x->d->salt ^ it->t->id, head, 20);
	c = smart_crc32c(c, it->old + sizeof(struct dtx_rec),
			 it->t->rec_size - sizeof(struct dtx_rec));
	it->intent_img[0] = it->key;
	it->intent_img[1] = ver;
	it->intent_img[2] = DTX_META(c, 0, 0);
}

/* The slot of an item read (and locked, unless read-only). */
static int after_slot(smart_dtx_txn_t *x, smart_worker_t *w,
		      struct dtx_item *it)
{
	const uint8_t *rec = it->io;
	enum dtx_look l = smart__dtx_rec_look(x->d, it->t, rec, it->key);
	struct dtx_rec h;

	memcpy(&h, rec, sizeof(h));
	if (it->kind == DTX_RO) {
		if ((l == DTX_L_KEY || l == DTX_L_BUSY) && h.lock &&
		    h.key == it->key)
			return lock_conflict(x, w, it, it->slot, h.lock,
					     DTX_S_SLOT);
		if (l == DTX_L_KEY) {
			found(x, it, rec);
			return 0;
		}
		if (l == DTX_L_TORN) {
			smart__dtx_count(&x->d->crc_retries);
			return 0;
		}
		it->step = DTX_S_SEARCH; /* the cache was stale */
		return 0;
	}
	if (it->cas_old == my_lock(x, it->t)) {
		it->step = DTX_S_SEARCH; /* another item of ours has it */
		return 0;
	}
	if (it->cas_old)
		return lock_conflict(x, w, it, it->slot, it->cas_old,
				     DTX_S_SLOT);
	it->locked = 1;
	if (it->kind == DTX_RW && l == DTX_L_KEY) {
		found(x, it, rec);
		return 0;
	}
	if (it->kind == DTX_INS && l == DTX_L_EMPTY) {
		memcpy(it->old, rec, it->t->rec_size);
		it->read_ver = h.version;
		intent_build(x, it); /* written by the validation round */
		it->intent = 1;
		it->status = 0;
		it->step = DTX_S_DONE;
		return 0;
	}
	return unlock_and_search(x, w, it); /* not what we looked for */
}

static int after(smart_dtx_txn_t *x, smart_worker_t *w, struct dtx_item *it,
		 enum dtx_step step)
{
	switch (step) {
	case DTX_S_SEARCH:
		return after_search(x, w, it);
	case DTX_S_SLOT:
		return after_slot(x, w, it);
	default:
		return 0;
	}
}

/* The first round's sync covered the READ-backs of the last commit's
 * unlocks (they ride it: no round trip of their own): settle them.  One
 * still in flight on another worker is checked again before our log. */
static int unlocks_seen(smart_dtx_txn_t *x, smart_worker_t *w, int *check)
{
	int rc = *check ? smart__dtx_unlock_settle(x, w) : 0;

	*check = 0;
	return rc == SMART_EBUSY ? 0 : rc;
}

int smart__dtx_exec(smart_dtx_txn_t *x, smart_worker_t *w)
{
	enum dtx_step was[SMART_DTX_ITEMS_MAX];
	int i, rc = 0, pending = 1, check = 0;

	if (!x->started) {
		x->rt0 = smart_task_round_trips(w, NULL);
		x->bytes0 = smart_task_bytes(w);
		x->started = 1;
		/* counted as the last transaction's bytes, not ours */
		check = x->nunl && x->n && !x->unl_nofold;
		if (check && smart__dtx_unlock_check_post(x, w))
			x->unl_nofold = 1, check = 0; /* a blade gone */
		else if (check)
			x->bytes0 += 8u * (unsigned)x->nunl;
	}
	while (!rc && pending) {
		size_t mark = smart_scratch_mark(w);

		pending = 0;
		for (i = 0; !rc && i < x->n; i++) {
			struct dtx_item *it = &x->item[i];

			if (it->step == DTX_S_DONE)
				continue;
			rc = post(x, w, it);
			was[i] = it->step;
			pending = 1;
		}
		if (pending) {
			int rc2 = smart_sync(w);

			rc = rc ? rc : rc2;
			x->unl_nofold |= rc && check;
			rc = rc ? rc : unlocks_seen(x, w, &check);
		}
		for (i = 0; pending && i < x->n; i++) {
			struct dtx_item *it = &x->item[i];

			if (it->step == DTX_S_DONE)
				continue;
			if (!rc)
				rc = after(x, w, it, was[i]);
			else if (it->step == DTX_S_SLOT && it->kind != DTX_RO)
				/* its CAS may have landed: released by a
				 * CAS from our stamp, never blindly */
				it->locked = 2;
		}
		smart_scratch_release(w, mark);
		if (!rc && pending && !--x->rounds_left)
			rc = SMART_ERETRY;
		/* a test runs another transaction between our rounds */
		if (!rc && pending)
			rc = smart__dtx_hook(w, "dtx.exec.round");
	}
	return rc;
}

int smart_dtx_exec(smart_dtx_txn_t *x, smart_worker_t *w)
{
	int rc;

	if (!x || !smart__dtx_own(x->d, w) || !x->open)
		return SMART_EINVAL;
	rc = smart__dtx_exec(x, w);
	if (rc)
		smart__dtx_finish(x, w, rc);
	return rc;
}
