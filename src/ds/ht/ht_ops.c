/*
 * Smart-HT operations: the RACE protocol on one-sided ops (docs/ht.md).
 *
 * Every operation reads the key's 4 candidate buckets (two 128-byte
 * combined-bucket reads, one round trip; an insert or update queues the
 * write of its new KV block in the same batch), checks the bucket headers
 * against the cached directory, then reads the KV blocks of the slots whose
 * fingerprint matches (CRC-checked; a bad CRC means a stale view: retry).
 * Slots change only by CAS.
 *
 * Insert is two-phase so that of concurrent inserts of one key exactly one
 * succeeds (RACE's "keep the lowest address" alone lets an early inserter
 * return success before a later, lower duplicate appears):
 *   1. (no duplicate, committed or tentative, in sight) CAS an empty slot
 *      from 0 to the new slot value with TENTATIVE set;
 *   2. re-read; if a committed duplicate exists, withdraw (CAS back to 0)
 *      and report SMART_EEXIST; if a tentative one at a lower address
 *      does, withdraw and start over (EEXIST is reported only after a
 *      committed duplicate was seen, so it linearizes); otherwise clear the higher tentative duplicates (CAS to 0) and
 *      commit by CAS TENTATIVE -> committed.  A commit and a kill of the
 *      same slot race on one word, so exactly one of them wins.
 * Readers, updates and deletes see committed slots only; an insert
 * linearizes at its commit.
 *
 * Splits (ht_split.c) freeze slots: writers back off on a FROZEN slot, and
 * a miss or a hit on a frozen slot is confirmed against the canonical
 * directory entry (op_verify); an insert whose tentative slot was killed,
 * frozen or moved starts over (docs/ht.md §3, §5).
 *
 * Invariants: at most one committed slot per key; a KV block is never
 * written after it was published; a published block is freed only through
 * the epoch scheme (ht_epoch.c, docs/ht.md §6; leaked without it), blocks
 * that were never published are freed at once.
 */
#include <string.h>

#include "ds/ht/ht_internal.h"

#define HT_RETRY_MAX	4096
#define HT_RETRY_NS	(UINT64_C(5) * 1000000000)
#define HT_NB		4		/* candidate buckets */
#define HT_CAND_MAX	(HT_NB * HT_SLOTS)
#define HT_UPSERT_MAX	64
#define HT_MASK48	UINT64_C(0xffffffffffff)

struct ht_cand {
	smart_gaddr_t addr;		/* slot address */
	uint64_t val;			/* slot value read */
	const struct ht_kv *kv;		/* its block, in op->cbuf */
	int match;			/* the block holds our key */
};

struct ht_op {
	smart_ht_t *t;
	smart_worker_t *w;
	const uint8_t *key;
	size_t klen;
	uint64_t h1, h2;
	uint8_t fp;
	struct ht_shard *sh;
	uint64_t ent;			/* directory entry in use */
	unsigned sub;
	unsigned f[2];			/* combined-bucket indexes */
	smart_gaddr_t baddr[HT_NB];	/* bucket addresses (dups: NULL) */
	struct ht_bucket *bk;		/* the 4 buckets as read */
	void *cbuf;			/* candidates' KV blocks */
	struct ht_cand cand[HT_CAND_MAX];
	int ncand;
	struct ht_kv *blk;		/* new KV block (local copy) */
	size_t blk_size;
	smart_gaddr_t blk_addr;
	uint64_t blk_slot;
	int blk_written, blk_published;
	int frozen;			/* a candidate bucket is being split */
	smart_gaddr_t own;		/* insert: our tentative slot */
	int inside;			/* in the shard's epoch domain */
	uint64_t spec;			/* search: speculated slot value */
	struct ht_kv *sbuf;		/* search: speculated block */
	size_t mark, mark_cand;		/* scratch: the op's, the attempt's */
};

static int op_begin(struct ht_op *op, smart_ht_t *t, smart_worker_t *w,
		    const void *key, size_t klen)
{
	int rc;

	if (!t || !w || !key || !klen || klen > SMART_HT_KEY_MAX)
		return SMART_EINVAL;
	memset(op, 0, sizeof(*op));
	op->t = t;
	op->w = w;
	op->key = key;
	op->klen = klen;
	op->h1 = smart_hash64(key, klen, t->seed[0]);
	op->h2 = smart_hash64(key, klen, t->seed[1]);
	op->fp = (uint8_t)(op->h1 >> 56);
	op->sh = &t->shard[(op->h2 >> 48) % t->nshards];
	op->blk_addr = SMART_GADDR_NULL;
	op->own = SMART_GADDR_NULL;
	/* the op's buffers are the task's scratch: no lock, no malloc */
	op->mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, HT_NB * HT_BUCKET, (void **)&op->bk);
	return rc;	/* on error nothing is held: op_end is not needed */
}

/* Enter the shard's epoch domain: reads of its buckets and blocks from
 * here on are protected (its blade is the domain of its blocks). */
static int op_enter(struct ht_op *op)
{
	int rc;

	if (!op->sh->reclaim)
		return 0;
	rc = smart_epoch_enter(op->w, op->sh->blade);
	op->inside = !rc;
	return rc;
}

static void op_end(struct ht_op *op)
{
	smart_worker_t *w = op->w;

	if (op->inside)
		smart_epoch_exit(w);
	/* never published: nobody can hold its address */
	if (op->blk_addr != SMART_GADDR_NULL && !op->blk_published)
		smart_free(w, op->blk_addr, op->blk_size);
	smart_scratch_release(w, op->mark);
}

/* Build the new KV block locally and allocate its remote home.  Called
 * before any op is queued (smart_alloc may sync). */
static int op_block(struct ht_op *op, const void *val, size_t vlen)
{
	size_t n = sizeof(struct ht_kv) + op->klen + vlen;
	uint8_t *p;
	int rc;

	op->blk_size = (n + HT_KV_UNIT - 1) & ~(size_t)(HT_KV_UNIT - 1);
	rc = smart_scratch_alloc(op->w, op->blk_size, (void **)&op->blk);
	if (rc)
		return rc;
	memset(op->blk, 0, op->blk_size);
	op->blk->key_len = (uint16_t)op->klen;
	op->blk->val_len = (uint32_t)vlen;
	p = (uint8_t *)(op->blk + 1);
	memcpy(p, op->key, op->klen);
	if (vlen)
		memcpy(p + op->klen, val, vlen);
	op->blk->crc = smart__ht_kv_crc(op->blk);
	rc = smart_alloc(op->w, op->sh->blade, op->blk_size, &op->blk_addr);
	if (rc) {
		op->blk_addr = SMART_GADDR_NULL;
		return rc;
	}
	op->blk_slot = HT_SLOT(op->fp, op->blk_size / HT_KV_UNIT,
			       smart_gaddr_off(op->blk_addr));
	return 0;
}

/* Find the key's subtable and candidate buckets in the cached directory. */
static void op_locate(struct ht_op *op)
{
	struct ht_shard *sh = op->sh;
	smart_gaddr_t base, pair;
	unsigned k, b;

	/* every directory entry is kept valid (aliases of a shallower
	 * subtable included), so index by the deepest possible suffix */
	op->sub = (unsigned)(op->h1 & (HT_DIR_ENTRIES - 1));
	op->ent = atomic_load_explicit(&sh->ent[op->sub],
				       memory_order_relaxed);
	base = smart_gaddr(sh->blade, HT_ENT_OFF(op->ent));
	op->f[0] = (unsigned)(((op->h1 >> 8) & HT_MASK48) % op->t->buckets);
	op->f[1] = (unsigned)((op->h2 & HT_MASK48) % op->t->buckets);
	for (k = 0; k < 2; k++) {
		/* group = main, overflow, main; odd f reads (overflow, main) */
		pair = smart_gaddr_add(base, (uint64_t)(op->f[k] / 2) *
				       HT_GROUP + (op->f[k] & 1) * HT_BUCKET);
		op->baddr[2 * k] = pair;
		op->baddr[2 * k + 1] = smart_gaddr_add(pair, HT_BUCKET);
	}
	for (b = 2; b < HT_NB; b++)
		for (k = 0; k < b; k++)
			if (op->baddr[b] == op->baddr[k])
				op->baddr[b] = SMART_GADDR_NULL;
}

/* Headers must name the subtable the cached directory sent us to; note
 * whether a split has frozen any of our slots. */
static int op_headers_ok(struct ht_op *op)
{
	unsigned ld = HT_ENT_DEPTH(op->ent), b, j;
	uint32_t suffix = op->sub & ((1u << ld) - 1);

	op->frozen = 0;
	for (b = 0; b < HT_NB; b++) {
		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		if (op->bk[b].local_depth != ld || op->bk[b].suffix != suffix)
			return 0;
		for (j = 0; j < HT_SLOTS; j++)
			if (op->bk[b].slot[j] & HT_SLOT_FROZEN)
				op->frozen = 1;
	}
	return 1;
}

/* A miss, or a hit on a frozen slot, is final only if the subtable was
 * not republished since the cached entry was read: its canonical entry
 * (the alias below 2^depth, which carries the lock) must still hold the
 * cached value.  Else refresh and retry (docs/ht.md §5). */
static int op_verify(struct ht_op *op)
{
	unsigned ld = HT_ENT_DEPTH(op->ent);
	uint64_t e;
	int rc;

	rc = smart_read_sync(op->w, smart__ht_ent_addr(op->sh,
				op->sub & ((1u << ld) - 1)), sizeof(e), &e);
	if (rc)
		return rc;
	if (HT_ENT_UNLOCKED(e) == HT_ENT_UNLOCKED(op->ent))
		return 0;
	rc = smart__ht_dir_refresh(op->t, op->w, op->sh);
	return rc ? rc : SMART_EAGAIN;
}

/* One round trip: the candidate buckets, plus the new block's write
 * (first time) or the speculated block's read. */
static int op_read(struct ht_op *op, int with_blk)
{
	unsigned b;
	int rc;

	op_locate(op);
	for (b = 0; b < HT_NB; b++) {
		/* a pair in one read; a bucket shared with pair 0 is skipped */
		size_t len = !(b & 1) && op->baddr[b + 1] != SMART_GADDR_NULL ?
			     HT_PAIR : HT_BUCKET;

		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		rc = smart_read(op->w, op->baddr[b], len, &op->bk[b]);
		if (rc)
			return rc;
		b += len == HT_PAIR;
	}
	if (with_blk && !op->blk_written) {
		rc = smart_write(op->w, op->blk_addr, op->blk, op->blk_size);
		if (rc)
			return rc;
	}
	if (op->spec) {
		smart_gaddr_t a = smart_gaddr(op->sh->blade,
					      HT_SLOT_PTR(op->spec));

		rc = smart_read(op->w, a, HT_SLOT_UNITS(op->spec) * HT_KV_UNIT,
				op->sbuf);
		if (rc)
			return rc;
	}
	rc = smart_sync(op->w);
	if (rc)
		return rc;
	if (with_blk)
		op->blk_written = 1;
	if (op_headers_ok(op))
		return 0;
	/* our directory is stale (or the bucket moved): refresh, retry */
	rc = smart__ht_dir_refresh(op->t, op->w, op->sh);
	return rc ? rc : SMART_EAGAIN;
}

static int kv_is_key(const struct ht_op *op, const struct ht_kv *kv)
{
	return kv->key_len == op->klen &&
	       !memcmp(kv + 1, op->key, op->klen);
}

static smart_gaddr_t slot_addr(const struct ht_op *op, unsigned b,
			       unsigned j)
{
	return smart_gaddr_add(op->baddr[b], 8 + 8 * (uint64_t)j);
}

/* Gather the slots with our fingerprint (committed ones, and tentative
 * ones too if asked) and read their blocks in one round trip. */
static int op_collect(struct ht_op *op, int tentative)
{
	size_t total = 0, off = 0;
	unsigned b, j;
	int i, rc;

	op->ncand = 0;
	for (b = 0; b < HT_NB; b++) {
		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		for (j = 0; j < HT_SLOTS; j++) {
			uint64_t v = op->bk[b].slot[j];

			if (!v || HT_SLOT_FP(v) != op->fp ||
			    ((v & HT_SLOT_TENT) && !tentative) ||
			    !HT_SLOT_UNITS(v))
				continue;
			op->cand[op->ncand++] = (struct ht_cand){
				.addr = slot_addr(op, b, j), .val = v };
			total += HT_SLOT_UNITS(v) * HT_KV_UNIT;
		}
	}
	if (!op->ncand)
		return 0;
	/* this attempt's blocks replace the last attempt's */
	smart_scratch_release(op->w, op->mark_cand);
	rc = smart_scratch_alloc(op->w, total, &op->cbuf);
	if (rc)
		return rc;
	for (i = 0; i < op->ncand; i++) {
		size_t len = HT_SLOT_UNITS(op->cand[i].val) * HT_KV_UNIT;

		op->cand[i].kv = (const struct ht_kv *)((char *)op->cbuf + off);
		rc = smart_read(op->w, smart_gaddr(op->sh->blade,
					    HT_SLOT_PTR(op->cand[i].val)),
				len, (char *)op->cbuf + off);
		if (rc)
			return rc;
		off += len;
	}
	rc = smart_sync(op->w);
	if (rc)
		return rc;
	for (i = 0; i < op->ncand; i++) {
		size_t len = HT_SLOT_UNITS(op->cand[i].val) * HT_KV_UNIT;

		if (!smart__ht_kv_valid(op->cand[i].kv, len))
			return SMART_EAGAIN;	/* torn or stale: re-read */
		op->cand[i].match = kv_is_key(op, op->cand[i].kv);
	}
	return 0;
}

static const struct ht_cand *op_find(const struct ht_op *op)
{
	int i;

	for (i = 0; i < op->ncand; i++)
		if (op->cand[i].match && !(op->cand[i].val & HT_SLOT_TENT))
			return &op->cand[i];
	return NULL;
}

/* First empty slot, main buckets before the shared overflow buckets. */
static smart_gaddr_t op_empty(const struct ht_op *op)
{
	unsigned order[HT_NB], b, j, k;

	for (k = 0; k < 2; k++) {
		order[k] = 2 * k + (op->f[k] & 1);
		order[2 + k] = 2 * k + !(op->f[k] & 1);
	}
	for (k = 0; k < HT_NB; k++) {
		b = order[k];
		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		for (j = 0; j < HT_SLOTS; j++)
			if (!op->bk[b].slot[j])
				return slot_addr(op, b, j);
	}
	return SMART_GADDR_NULL;
}

/* The value of the slot at addr as last read; 0 if it is not in our
 * candidate buckets (*found says which). */
static uint64_t op_slot_now(const struct ht_op *op, smart_gaddr_t addr,
			    int *found)
{
	unsigned b, j;

	*found = 1;
	for (b = 0; b < HT_NB; b++)
		for (j = 0; j < HT_SLOTS && op->baddr[b] != SMART_GADDR_NULL;
		     j++)
			if (slot_addr(op, b, j) == addr)
				return op->bk[b].slot[j];
	*found = 0;
	return 0;
}

static uint64_t spec_index(const struct ht_op *op)
{
	return (op->h2 ^ (op->h1 >> 17)) & op->t->spec_mask;
}

static int spec_on(const struct ht_op *op)
{
	return op->t->spec &&
	       smart_ctx_technique(smart_worker_ctx(op->w),
				   SMART_TECH_SPEC_LOOKUP);
}

static void spec_store(const struct ht_op *op, uint64_t v)
{
	if (spec_on(op))
		atomic_store_explicit(&op->t->spec[spec_index(op)], v,
				      memory_order_relaxed);
}

/* Retire the block of a slot value whose unlink has completed: the core
 * frees it once no reader of any client can hold it (docs/epochs.md);
 * without reclamation it is leaked. */
static void op_retire(struct ht_op *op, uint64_t slot)
{
	if (!op->sh->reclaim)
		return;
	if (!smart_epoch_retire(op->w, op->sh->blade,
				smart_gaddr(op->sh->blade, HT_SLOT_PTR(slot)),
				HT_SLOT_UNITS(slot) * HT_KV_UNIT))
		atomic_fetch_add_explicit(&op->t->retired, 1,
					  memory_order_relaxed);
}

/* The key is not in the buckets read: ENOENT once op_verify agrees. */
static int op_absent(struct ht_op *op)
{
	int rc = op_verify(op);

	return rc ? rc : SMART_ENOENT;
}

/* Run once() with the conflict-avoidance guard until it stops asking
 * for a retry. */
static int op_run(struct ht_op *op, int (*once)(struct ht_op *, void *),
		  void *arg)
{
	uint64_t t0 = 0;
	int rc, i;

	/* blocks of candidates are this attempt's: from here on */
	op->mark_cand = smart_scratch_mark(op->w);
	smart_backoff_begin(op->w);
	for (i = 0;; i++) {
		rc = once(op, arg);
		if (rc != SMART_EAGAIN)
			break;
		/* give up after many retries and a long time both: a split
		 * in progress makes waiters retry fast (ConflictAvoid may
		 * back off little or not at all) for milliseconds */
		if (i == HT_RETRY_MAX)
			t0 = smart_now_ns();
		if (i > HT_RETRY_MAX && smart_now_ns() - t0 > HT_RETRY_NS) {
			rc = SMART_ERETRY;
			break;
		}
		smart_backoff_retry(op->w);
	}
	smart_backoff_end(op->w);
	return rc;
}

/* ---- insert ---------------------------------------------------------- */

/* Another insert of our key is in flight (tentative slot). */
static int op_tentative_dup(const struct ht_op *op)
{
	int i;

	for (i = 0; i < op->ncand; i++)
		if (op->cand[i].match && (op->cand[i].val & HT_SLOT_TENT))
			return 1;
	return 0;
}

static int insert_place(struct ht_op *op)
{
	smart_gaddr_t addr;
	uint64_t old;
	int rc;

	rc = op_read(op, 1);
	if (!rc)
		rc = op_collect(op, 1);
	if (rc)
		return rc;
	if (op->frozen)
		return SMART_EAGAIN;	/* wait for the split to settle */
	if (op_find(op))
		return SMART_EEXIST;
	if (op_tentative_dup(op))
		return SMART_EAGAIN;	/* let that insert finish first */
	addr = op_empty(op);
	if (addr == SMART_GADDR_NULL) {
		/* all 28 slots taken: split the subtable, then retry */
		rc = smart__ht_split(op->t, op->w, op->sh, op->sub, op->ent);
		return rc ? rc : SMART_EAGAIN;
	}
	rc = smart_cas_sync(op->w, addr, 0, op->blk_slot | HT_SLOT_TENT, &old);
	if (rc)
		return rc;
	if (old)
		return SMART_EAGAIN;
	op->own = addr;
	op->blk_published = 1;
	return 0;
}

static int insert_withdraw(struct ht_op *op)
{
	int rc = smart_cas_sync(op->w, op->own, op->blk_slot | HT_SLOT_TENT,
				0, NULL);

	op->own = SMART_GADDR_NULL;
	return rc ? rc : SMART_EEXIST;
}

/* Kill the tentative duplicates above us; EAGAIN if one changed. */
static int insert_kill_dups(struct ht_op *op)
{
	uint64_t old;
	int i, rc;

	for (i = 0; i < op->ncand; i++) {
		const struct ht_cand *c = &op->cand[i];

		if (!c->match || c->addr == op->own)
			continue;
		rc = smart_cas_sync(op->w, c->addr, c->val, 0, &old);
		if (rc)
			return rc;
		if (old != c->val && old)
			return SMART_EAGAIN;
	}
	return 0;
}

/* Our tentative slot is gone (killed by a lower duplicate, or frozen or
 * dropped by a split) or no longer where the key lives: start over; a
 * winner that committed is then seen as a duplicate. */
static int insert_restart(struct ht_op *op, int withdraw)
{
	if (withdraw)
		(void)smart_cas_sync(op->w, op->own,
				     op->blk_slot | HT_SLOT_TENT, 0, NULL);
	op->own = SMART_GADDR_NULL;
	return SMART_EAGAIN;
}

static int insert_resolve(struct ht_op *op)
{
	uint64_t tent = op->blk_slot | HT_SLOT_TENT, old, now;
	int i, rc, found;

	rc = op_read(op, 0);
	if (rc)
		return rc;
	now = op_slot_now(op, op->own, &found);
	if (!found)
		return insert_restart(op, 1);
	if (now != tent)
		return insert_restart(op, 0);
	if (op->frozen)
		return SMART_EAGAIN;
	rc = op_collect(op, 1);
	if (rc)
		return rc;
	for (i = 0; i < op->ncand; i++) {
		const struct ht_cand *c = &op->cand[i];

		if (!c->match || c->addr == op->own)
			continue;
		if (!(c->val & HT_SLOT_TENT))
			return insert_withdraw(op);
		/* a lower tentative duplicate goes first; we report EEXIST
		 * only once we have seen it committed (linearizability) */
		if (c->addr < op->own)
			return insert_restart(op, 1);
	}
	rc = insert_kill_dups(op);
	if (rc)
		return rc;
	rc = smart_cas_sync(op->w, op->own, tent, op->blk_slot, &old);
	if (rc)
		return rc;
	if (old != tent)
		return insert_restart(op, 0);
	op->own = SMART_GADDR_NULL;
	spec_store(op, op->blk_slot);
	return 0;
}

static int insert_once(struct ht_op *op, void *arg)
{
	int rc;

	(void)arg;
	if (op->own == SMART_GADDR_NULL) {
		rc = insert_place(op);
		if (rc)
			return rc;
	}
	return insert_resolve(op);
}

/* ---- update, delete, search -------------------------------------------- */

/* Swing the key's slot to `repl` (the op's new block, or 0 to delete) by
 * CAS; update and delete differ only in that value and in whether the new
 * block rides along with the bucket reads. */
static int replace_once(struct ht_op *op, int with_block)
{
	uint64_t repl = with_block ? op->blk_slot : 0, old;
	const struct ht_cand *c;
	int rc;

	rc = op_read(op, with_block);
	if (!rc)
		rc = op_collect(op, 0);
	if (rc)
		return rc;
	c = op_find(op);
	if (!c)
		return op_absent(op);
	if (c->val & HT_SLOT_FROZEN)
		return SMART_EAGAIN;	/* wait for the split to settle */
	rc = smart_cas_sync(op->w, c->addr, c->val, repl, &old);
	if (rc)
		return rc;
	if (old != c->val)
		return SMART_EAGAIN;
	if (with_block)
		op->blk_published = 1;
	op_retire(op, c->val);
	spec_store(op, repl);
	return 0;
}

static int update_once(struct ht_op *op, void *arg)
{
	(void)arg;
	return replace_once(op, 1);
}

static int delete_once(struct ht_op *op, void *arg)
{
	(void)arg;
	return replace_once(op, 0);
}

struct search_out {
	void *val;
	size_t cap;
	size_t *val_len;
};

static int search_copy(const struct ht_op *op, const struct ht_kv *kv,
		       struct search_out *o)
{
	*o->val_len = kv->val_len;
	if (kv->val_len > o->cap)
		return SMART_ERANGE;
	if (kv->val_len)
		memcpy(o->val, (const uint8_t *)(kv + 1) + kv->key_len,
		       kv->val_len);
	return 0;
}

/* The speculated slot is still in a bucket and its block is ours. */
static int spec_hit(const struct ht_op *op)
{
	unsigned b, j;

	if (!smart__ht_kv_valid(op->sbuf,
				HT_SLOT_UNITS(op->spec) * HT_KV_UNIT) ||
	    !kv_is_key(op, op->sbuf))
		return 0;
	for (b = 0; b < HT_NB; b++)
		for (j = 0; j < HT_SLOTS && op->baddr[b] != SMART_GADDR_NULL;
		     j++)
			if (op->bk[b].slot[j] == op->spec)
				return 1;
	return 0;
}

static int search_once(struct ht_op *op, void *arg)
{
	const struct ht_cand *c;
	int rc;

	rc = op_read(op, 0);
	if (rc)
		return rc;
	if (op->spec && spec_hit(op))
		return search_copy(op, op->sbuf, arg);
	op->spec = 0;		/* missed: plain lookup from here on */
	rc = op_collect(op, 0);
	if (rc)
		return rc;
	c = op_find(op);
	if (!c)
		return op_absent(op);
	if (c->val & HT_SLOT_FROZEN) {
		rc = op_verify(op);
		if (rc)
			return rc;
	} else {
		spec_store(op, c->val);
	}
	return search_copy(op, c->kv, arg);
}

/* Prepare a speculative read of the slot value cached for this key. */
static void spec_prepare(struct ht_op *op)
{
	uint64_t v;

	if (!spec_on(op))
		return;
	v = atomic_load_explicit(&op->t->spec[spec_index(op)],
				 memory_order_relaxed);
	if (!v || (v & HT_SLOT_TENT) || HT_SLOT_FP(v) != op->fp ||
	    !HT_SLOT_UNITS(v))
		return;
	if (smart_scratch_alloc(op->w, HT_SLOT_UNITS(v) * HT_KV_UNIT,
				(void **)&op->sbuf))
		return;
	op->spec = v;
}

/* ---- public entry points ----------------------------------------------- */

static int value_ok(const void *val, size_t vlen)
{
	return vlen <= SMART_HT_VALUE_MAX && (val || !vlen);
}

/* Our block was published as a tentative slot that is now withdrawn or
 * killed (the CAS that cleared it completed): readers may still hold it,
 * so it is retired, not freed. */
static void op_retire_dead(struct ht_op *op)
{
	op_retire(op, op->blk_slot);
	op->blk_addr = SMART_GADDR_NULL;	/* no longer ours to free */
}

static int write_op(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t klen, const void *val, size_t vlen,
		    int (*once)(struct ht_op *, void *))
{
	struct ht_op op;
	int rc;

	if (!value_ok(val, vlen))
		return SMART_EINVAL;
	rc = op_begin(&op, t, w, key, klen);
	if (rc)
		return rc;
	rc = op_block(&op, val, vlen);
	if (!rc)
		rc = op_enter(&op);
	if (!rc)
		rc = op_run(&op, once, NULL);
	/* gave up half way: take our tentative slot back */
	if (op.own != SMART_GADDR_NULL)
		insert_withdraw(&op);
	/* published, not committed: our tentative block is dead */
	if (rc && op.blk_published)
		op_retire_dead(&op);
	op_end(&op);
	return rc;
}

int smart_ht_insert(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, key, key_len, val, val_len, insert_once);
}

int smart_ht_update(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, key, key_len, val, val_len, update_once);
}

/* Update, or insert when absent; a lost race in either turns to the
 * other, with the same new block. */
static int upsert_once(struct ht_op *op, void *arg)
{
	int rc, i;

	(void)arg;
	if (op->own != SMART_GADDR_NULL) {
		/* an insert attempt is half done: finish it first */
		rc = insert_resolve(op);
		if (rc != SMART_EEXIST)
			return rc;
	}
	for (i = 0; i < HT_UPSERT_MAX; i++) {
		rc = update_once(op, NULL);
		if (rc != SMART_ENOENT)
			return rc;
		rc = op->own == SMART_GADDR_NULL ? insert_place(op) : 0;
		if (!rc)
			rc = insert_resolve(op);
		if (rc != SMART_EEXIST)
			return rc;
	}
	return SMART_EAGAIN;
}

int smart_ht_upsert(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, const void *val, size_t val_len)
{
	return write_op(t, w, key, key_len, val, val_len, upsert_once);
}

int smart_ht_delete(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len)
{
	struct ht_op op;
	int rc;

	rc = op_begin(&op, t, w, key, key_len);
	if (rc)
		return rc;
	rc = op_enter(&op);
	if (!rc)
		rc = op_run(&op, delete_once, NULL);
	op_end(&op);
	return rc;
}

int smart_ht_search(smart_ht_t *t, smart_worker_t *w, const void *key,
		    size_t key_len, void *val, size_t cap, size_t *val_len)
{
	struct search_out o = { val, cap, val_len };
	struct ht_op op;
	int rc;

	if (!val_len || (!val && cap))
		return SMART_EINVAL;
	rc = op_begin(&op, t, w, key, key_len);
	if (rc)
		return rc;
	spec_prepare(&op);
	rc = op_enter(&op);
	if (!rc)
		rc = op_run(&op, search_once, &o);
	op_end(&op);
	return rc;
}
