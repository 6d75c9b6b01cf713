/*
 * Smart-HT operations: the RACE protocol on one-sided ops (docs/ht.md §3).
 *
 * Round trips (docs/ht.md §4): every operation first reads the key's 4
 * candidate buckets (two 128-byte reads) in one batch, with, as needed,
 * the write of its new KV block, the read of a speculated block, and a
 * fenced read of the subtable's canonical directory entry that validates
 * a miss or a hit on a frozen slot without another round trip.  Then the
 * blocks of the slots whose fingerprint matches (one batch; blocks this
 * operation already knows are not read again), then the CAS.  Search: 2
 * (1 on a SpecLookup hit, 1 on a miss); update and delete: 3; insert: 3
 * (read + block write; CAS tentative + re-read; commit).
 *
 * Insert is two-phase so that of concurrent inserts of one key exactly one
 * succeeds (RACE's "keep the lowest address" alone lets an early inserter
 * return success before a later, lower duplicate appears):
 *   1. (no duplicate, committed or tentative, in sight) CAS an empty slot
 *      from 0 to the new slot value with TENTATIVE set, and re-read the
 *      buckets in the same batch;
 *   2. if a committed duplicate exists, withdraw (CAS back to 0) and
 *      report SMART_EEXIST; if a tentative one at a lower address does,
 *      withdraw and start over; otherwise clear the higher tentative
 *      duplicates (CAS to 0) and commit by CAS TENTATIVE -> committed.  A
 *      commit and a kill of the same slot race on one word, so exactly one
 *      wins.
 * A tentative slot names its holder (the block's owner): one whose holder
 * is dead is cleared by whoever meets it (§7).  Readers, updates and
 * deletes see committed slots only; an insert linearizes at its commit.
 *
 * A CAS whose sync failed may have executed: the slot is re-read to learn
 * whether it did, and a block whose fate stays unknown is left allocated
 * (counted as leaked), never freed while a slot may point at it.
 *
 * Invariants: at most one committed slot per key; a KV block is never
 * written after it was published; a published block is freed only through
 * the epoch scheme (docs/ht.md §6; leaked without it), blocks that were
 * never published are freed at once.
 */
#include <stddef.h>
#include <string.h>

#include "ds/ht/ht_internal.h"

#define HT_RETRY_MAX 4096
#define HT_RETRY_NS  (UINT64_C(5) * 1000000000)
#define HT_STUCK_FIRST                                                         \
	16		/* retries before suspecting a dead
					 * lock holder */
#define HT_NB	      4 /* candidate buckets */
#define HT_CAND_MAX   (HT_NB * HT_SLOTS)
#define HT_KNOWN_MAX  (2 * HT_CAND_MAX)
#define HT_UPSERT_MAX 64
#define HT_MASK48     UINT64_C(0xffffffffffff)

/* op_read flags */
#define RD_BLK 1 /* write the new block (first time) */
#define RD_ENT 2 /* read the canonical entry, fenced */

/* What happened to the op's new block: it decides, at the end, whether
 * it is freed at once, retired or left alone. */
enum { BLK_NONE, BLK_LOCAL, BLK_SEEN, BLK_UNKNOWN };

struct ht_cand {
	smart_gaddr_t addr;	/* slot address */
	uint64_t val;		/* slot value read */
	const struct ht_kv *kv; /* its block, in op->cbuf (or NULL
					 * when known from earlier) */
	int match;		/* the block holds our key */
	uint16_t owner;		/* the block's writer */
};

/* A block this op has read: slot values name immutable blocks, and none
 * can be freed while the op is inside its epoch. */
struct ht_known {
	uint64_t val;
	int match;
	uint16_t owner;
};

struct ht_op {
	smart_ht_t *t;
	smart_worker_t *w;
	const uint8_t *key;
	size_t klen;
	uint64_t h1, h2;
	uint8_t fp;
	struct ht_shard *sh;
	struct ht_hook hook;
	uint64_t ent; /* directory entry in use */
	unsigned sub;
	unsigned f[2];		    /* combined-bucket indexes */
	smart_gaddr_t baddr[HT_NB]; /* bucket addresses (dups: NULL) */
	struct ht_bucket *bk;	    /* the 4 buckets as read */
	uint64_t *word;		    /* [0] canonical entry as read with
					 * the buckets, [1] a CAS's old value,
					 * [2] a re-read slot */
	int have_ent;
	void *cbuf; /* candidates' KV blocks */
	int ncand, nknown;
	struct ht_kv *blk; /* new KV block (local copy) */
	size_t blk_size;
	smart_gaddr_t blk_addr;
	uint64_t blk_slot;
	int blk_written, blk_state;
	smart_gaddr_t own;	/* insert: our tentative slot */
	int inside;		/* in the shard's epoch domain */
	uint64_t spec;		/* search: speculated slot value */
	struct ht_kv *sbuf;	/* search: speculated block */
	size_t mark, mark_cand; /* scratch: the op's, the attempt's */
	/* last: op_begin does not clear them (ncand, nknown say how much
	 * is valid) */
	struct ht_cand cand[HT_CAND_MAX];
	struct ht_known known[HT_KNOWN_MAX];
};

/* h2 from h1: the 64-bit finaliser of splitmix64 (Steele, Lea and Flood's
 * constants) over h1 and the second seed.  Hashing the key once halves
 * the hashing of an operation; keys whose h1 collide collide in h2 too,
 * which a 64-bit h1 under a secret random seed makes as unlikely as it
 * needs to be. */
static inline uint64_t ht_h2(uint64_t h1, uint64_t seed)
{
	uint64_t x = h1 ^ seed;

	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static int op_hook(struct ht_op *op, const char *point)
{
	return smart__ht_hook(&op->hook, op->w, point);
}

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static int op_begin(struct ht_op *op, smart_ht_t *t, smart_worker_t *w,
		    const void *key, size_t klen)
{
	int rc;

	if (!t || !smart__ht_own(t, w) || !key || !klen ||
	    klen > SMART_HT_KEY_MAX)
		return SMART_EINVAL;
	/* field by field: a memset of the struct was 3% of a search */
	op->t = t;
	op->w = w;
	op->key = key;
	op->klen = klen;
	op->h1 = smart_hash64(key, klen, t->seed[0]);
	op->h2 = ht_h2(op->h1, t->seed[1]);
	op->fp = (uint8_t)(op->h1 >> 56);
	op->sh = &t->shard[t->nshards == 1 ? 0 : (op->h2 >> 48) % t->nshards];
	op->have_ent = 0;
	op->cbuf = NULL;
	op->ncand = op->nknown = 0;
	op->blk = NULL;
	op->blk_size = 0;
	op->blk_addr = SMART_GADDR_NULL;
	op->blk_slot = 0;
	op->blk_written = op->blk_state = op->inside = 0;
	op->own = SMART_GADDR_NULL;
	op->spec = 0;
	op->sbuf = NULL;
	op->mark_cand = 0;
	smart__ht_hook_load(&op->hook, w);
	/* the op's buffers are the task's scratch: no lock, no malloc */
	op->mark = smart_scratch_mark(w);
	rc = smart_scratch_alloc(w, HT_NB * HT_BUCKET + 4 * sizeof(uint64_t),
				 (void **)&op->bk);
	if (rc)
		return rc; /* nothing is held: op_end is not needed */
	op->word = (uint64_t *)(op->bk + HT_NB);
	return 0;
}

/* Enter the shard's epoch domain: reads of its buckets and blocks from
 * here on are protected (its blade is the domain of its blocks). */
static int op_enter(struct ht_op *op)
{
	int rc;

	if (!op->sh->reclaim || SMART_M_HT_NO_EPOCH)
		return 0;
	rc = smart_epoch_enter(op->w, op->sh->blade);
	op->inside = !rc;
	return rc;
}

static void op_retire(struct ht_op *op, uint64_t slot)
{
	smart__ht_retire(op->w, op->sh, slot);
}

static void op_end(struct ht_op *op)
{
	smart_worker_t *w = op->w;

	if (op->inside)
		smart_epoch_exit(w);
	/* never published: nobody can hold its address */
	if (op->blk_state == BLK_LOCAL)
		smart_free(w, op->blk_addr, op->blk_size);
	else if (op->blk_state == BLK_UNKNOWN)
		count(&op->t->leaked);
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
	op->blk->owner = op->sh->lease;
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
	op->blk_state = BLK_LOCAL;
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
	op->ent = atomic_load_explicit(&sh->ent[op->sub], memory_order_relaxed);
	base = smart_gaddr(sh->blade, HT_ENT_OFF(op->ent));
	op->f[0] = (unsigned)(((op->h1 >> 8) & HT_MASK48) % op->t->buckets);
	op->f[1] = (unsigned)((op->h2 & HT_MASK48) % op->t->buckets);
	for (k = 0; k < 2; k++) {
		/* group = main, overflow, main; odd f reads (overflow, main) */
		pair = smart_gaddr_add(base,
				       (uint64_t)(op->f[k] / 2) * HT_GROUP +
					       (op->f[k] & 1) * HT_BUCKET);
		op->baddr[2 * k] = pair;
		op->baddr[2 * k + 1] = smart_gaddr_add(pair, HT_BUCKET);
	}
	for (b = 2; b < HT_NB; b++)
		for (k = 0; k < b; k++)
			if (op->baddr[b] == op->baddr[k])
				op->baddr[b] = SMART_GADDR_NULL;
}

/* Headers must name the subtable the cached directory sent us to. */
static int op_headers_ok(const struct ht_op *op)
{
	unsigned ld = HT_ENT_DEPTH(op->ent), b;
	uint32_t suffix = op->sub & ((1u << ld) - 1);
	int ok = 1;

	for (b = 0; b < HT_NB; b++)
		if (op->baddr[b] != SMART_GADDR_NULL)
			ok &= op->bk[b].local_depth == ld &&
			      op->bk[b].suffix == suffix;
	return ok || SMART_M_HT_NO_HEADER_CHECK;
}

/* Has a split frozen any of our candidate slots?  (Inserts wait for it;
 * readers and writers look at the slot they use.) */
static int op_frozen(const struct ht_op *op)
{
	uint64_t any = 0;
	unsigned b, j;

	for (b = 0; b < HT_NB; b++)
		if (op->baddr[b] != SMART_GADDR_NULL)
			for (j = 0; j < HT_SLOTS; j++)
				any |= op->bk[b].slot[j];
	return !!(any & HT_SLOT_FROZEN);
}

static smart_gaddr_t op_canon_addr(const struct ht_op *op)
{
	return smart__ht_ent_addr(op->sh, smart__ht_canon(op->ent, op->sub));
}

/* Queue the candidate buckets' reads, plus (flags) the new block's write
 * and the fenced read of the canonical entry, and the speculated block's
 * read.  The entry is read after the buckets: if it still equals the
 * cached entry, the subtable was not republished before the buckets were
 * read (entries never return to an older value). */
static int op_queue_reads(struct ht_op *op, int flags)
{
	unsigned b;
	int rc;

	op_locate(op);
	for (b = 0; b < HT_NB; b++) {
		/* a pair in one read; a bucket shared with pair 0 is skipped */
		size_t len = !(b & 1) && op->baddr[b + 1] != SMART_GADDR_NULL ?
				     HT_PAIR :
				     HT_BUCKET;

		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		rc = smart_read(op->w, op->baddr[b], len, &op->bk[b]);
		if (rc)
			return rc;
		b += len == HT_PAIR;
	}
	if ((flags & RD_BLK) && !op->blk_written) {
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
	if (flags & RD_ENT) {
		rc = smart_fence(op->w);
		if (!rc)
			rc = smart_read(op->w, op_canon_addr(op), 8,
					&op->word[0]);
		if (rc)
			return rc;
	}
	return 0;
}

/* After the sync of op_queue_reads: headers checked, or refresh. */
static int op_reads_done(struct ht_op *op, int flags)
{
	int rc;

	if (flags & RD_BLK)
		op->blk_written = 1;
	op->have_ent = !!(flags & RD_ENT);
	if (op_headers_ok(op))
		return 0;
	/* our directory is stale (or the bucket moved): refresh, retry */
	count(&op->t->header_retries);
	op->have_ent = 0;
	rc = smart__ht_dir_refresh(op->t, op->w, op->sh);
	return rc ? rc : SMART_EAGAIN;
}

/* One round trip: op_queue_reads, sync, check. */
static int op_read(struct ht_op *op, int flags)
{
	int rc = op_queue_reads(op, flags);
	int rc2 = smart_sync(op->w);

	rc = rc ? rc : rc2;
	return rc ? rc : op_reads_done(op, flags);
}

/* A miss, or a hit on a frozen slot, is final only if the subtable was
 * not republished since the cached entry was read: its canonical entry
 * (read with the buckets, or now) must still hold the cached value, the
 * lock aside.  Else refresh and retry (docs/ht.md §5). */
static int op_verify(struct ht_op *op)
{
	int rc = 0;

	if (SMART_M_HT_NO_VERIFY)
		return 0;
	if (!op->have_ent)
		rc = smart_read_sync(op->w, op_canon_addr(op), 8, &op->word[0]);
	if (rc)
		return rc;
	if (HT_ENT_UNLOCKED(op->word[0]) == HT_ENT_UNLOCKED(op->ent))
		return 0;
	count(&op->t->verify_retries);
	op->have_ent = 0;
	rc = smart__ht_dir_refresh(op->t, op->w, op->sh);
	return rc ? rc : SMART_EAGAIN;
}

static int kv_is_key(const struct ht_op *op, const struct ht_kv *kv)
{
	return kv->key_len == op->klen && !memcmp(kv + 1, op->key, op->klen);
}

static smart_gaddr_t slot_addr(const struct ht_op *op, unsigned b, unsigned j)
{
	return smart_gaddr_add(op->baddr[b], 8 + 8 * (uint64_t)j);
}

static const struct ht_known *known_find(const struct ht_op *op, uint64_t v)
{
	int i;

	v &= ~HT_SLOT_FROZEN;
	for (i = 0; i < op->nknown; i++)
		if (op->known[i].val == v)
			return &op->known[i];
	return NULL;
}

static void known_add(struct ht_op *op, uint64_t v, int match, uint16_t owner)
{
	if (op->nknown < HT_KNOWN_MAX && !known_find(op, v))
		op->known[op->nknown++] = (struct ht_known){
			v & ~HT_SLOT_FROZEN, match, owner
		};
}

/* Gather the slots with our fingerprint (committed ones, and tentative
 * ones too if asked) and queue the reads of the blocks of those the op
 * does not know yet (with use_known; a search copies its value out of the
 * block, so it reads every one).  *nread: reads queued. */
static int collect_queue(struct ht_op *op, int tentative, int use_known,
			 int *nread)
{
	size_t total = 0, off = 0;
	unsigned b, j;
	int i, rc;

	op->ncand = 0;
	*nread = 0;
	for (b = 0; b < HT_NB; b++) {
		if (op->baddr[b] == SMART_GADDR_NULL)
			continue;
		for (j = 0; j < HT_SLOTS; j++) {
			uint64_t v = op->bk[b].slot[j];
			const struct ht_known *k;
			struct ht_cand *c;

			if (!v || HT_SLOT_FP(v) != op->fp ||
			    ((v & HT_SLOT_TENT) && !tentative) ||
			    !HT_SLOT_UNITS(v))
				continue;
			c = &op->cand[op->ncand++];
			*c = (struct ht_cand){ .addr = slot_addr(op, b, j),
					       .val = v };
			k = use_known ? known_find(op, v) : NULL;
			if (k) {
				c->match = k->match;
				c->owner = k->owner;
				continue;
			}
			total += HT_SLOT_UNITS(v) * HT_KV_UNIT;
			(*nread)++;
		}
	}
	if (!*nread)
		return 0;
	/* this attempt's blocks replace the last attempt's */
	smart_scratch_release(op->w, op->mark_cand);
	rc = smart_scratch_alloc(op->w, total, &op->cbuf);
	for (i = 0; !rc && i < op->ncand; i++) {
		struct ht_cand *c = &op->cand[i];
		size_t len = HT_SLOT_UNITS(c->val) * HT_KV_UNIT;

		if (use_known && known_find(op, c->val))
			continue;
		c->kv = (const struct ht_kv *)((char *)op->cbuf + off);
		rc = smart_read(op->w,
				smart_gaddr(op->sh->blade, HT_SLOT_PTR(c->val)),
				len, (char *)op->cbuf + off);
		off += len;
	}
	return rc;
}

/* After the sync: check the blocks read and remember what they hold. */
static int collect_done(struct ht_op *op)
{
	int i;

	for (i = 0; i < op->ncand; i++) {
		struct ht_cand *c = &op->cand[i];

		if (!c->kv)
			continue;
		if (!smart__ht_kv_valid(c->kv,
					HT_SLOT_UNITS(c->val) * HT_KV_UNIT))
			return SMART_EAGAIN; /* torn or stale: re-read */
		c->match = kv_is_key(op, c->kv);
		c->owner = c->kv->owner;
		known_add(op, c->val, c->match, c->owner);
	}
	return 0;
}

/* collect_queue, sync, collect_done: one round trip, when any block is
 * to be read. */
static int op_collect(struct ht_op *op, int tentative, int use_known)
{
	int n, rc = collect_queue(op, tentative, use_known, &n), rc2;

	if (!n)
		return rc;
	rc2 = smart_sync(op->w);
	rc = rc ? rc : rc2;
	return rc ? rc : collect_done(op);
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
	return op->t->spec && smart_ctx_technique(smart_worker_ctx(op->w),
						  SMART_TECH_SPEC_LOOKUP);
}

static void spec_store(const struct ht_op *op, uint64_t v)
{
	if (spec_on(op))
		atomic_store_explicit(&op->t->spec[spec_index(op)], v,
				      memory_order_relaxed);
}

/* The key is not in the buckets read: ENOENT once op_verify agrees. */
static int op_absent(struct ht_op *op)
{
	int rc = op_verify(op);

	return rc ? rc : SMART_ENOENT;
}

/* The key's slot among the buckets read into *c (its entry collected);
 * SMART_ENOENT once op_verify agrees that it is absent. */
static int op_key_slot(struct ht_op *op, const struct ht_cand **c)
{
	int rc = op_collect(op, 0, 0);

	if (rc)
		return rc;
	*c = op_find(op);
	return *c ? 0 : op_absent(op);
}

/* Retries are piling up: if the key's subtable is locked by a dead
 * client (a split it will never finish), take the lock over and finish
 * or undo its split (ht_recover.c).  Errors are left to the next try. */
static void op_unstick(struct ht_op *op)
{
	uint64_t *e = &op->word[3];
	unsigned c;

	op_locate(op);
	c = smart__ht_canon(op->ent, op->sub);
	if (smart_read_sync(op->w, smart__ht_ent_addr(op->sh, c), 8, e))
		return;
	if (HT_ENT_LOCKED(*e) &&
	    !smart__ht_recover(op->t, op->w, op->sh, c, *e, 0))
		(void)smart__ht_dir_refresh(op->t, op->w, op->sh);
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
		if (i >= HT_STUCK_FIRST && (!(i & (i - 1)) || !(i & 255)))
			op_unstick(op);
		smart_backoff_retry(op->w);
	}
	smart_backoff_end(op->w);
	return rc;
}

/* ---- uncertain CAS outcomes -------------------------------------------- */

/* A CAS at addr from `from` to `to` whose sync failed may or may not
 * have executed: re-read the slot. */
enum { CAS_DONE, CAS_NOT_DONE, CAS_CHANGED, CAS_UNREADABLE };

static int cas_outcome(struct ht_op *op, smart_gaddr_t addr, uint64_t from,
		       uint64_t to)
{
	uint64_t *v = &op->word[2];

	uint64_t now;

	if (smart_read_sync(op->w, addr, 8, v))
		return CAS_UNREADABLE;
	/* a split may have frozen the slot since: that says nothing about
	 * our CAS */
	now = *v & ~(uint64_t)HT_SLOT_FROZEN;
	return now == to ? CAS_DONE : now == from ? CAS_NOT_DONE : CAS_CHANGED;
}

/* ---- insert ---------------------------------------------------------- */

/* A tentative duplicate: its holder is dead (the block names it), so it
 * will never commit or withdraw: clear it and retire its block (its
 * holder cannot).  1 when cleared (or gone), 0 when its holder lives. */
static int tent_clear_dead(struct ht_op *op, const struct ht_cand *c)
{
	uint64_t *old = &op->word[1];

	if (SMART_M_HT_NO_TENT_RECOVERY || c->owner == op->sh->lease ||
	    smart_lease_alive(op->w, op->sh->blade, c->owner) != 0)
		return 0;
	if (smart_cas_sync(op->w, c->addr, c->val, 0, old))
		return 0;
	if (*old == c->val) {
		op_retire(op, c->val);
		count(&op->t->tent_cleared);
	}
	return 1;
}

/* Before placing (again): what earlier attempts learnt settles it when
 * the key is there (EEXIST) or another insert of it is in flight (wait
 * for it, or clear it if its holder is dead), without a round trip. */
static int place_known(struct ht_op *op)
{
	unsigned b, j;

	for (b = 0; b < HT_NB; b++)
		for (j = 0; j < HT_SLOTS && op->baddr[b] != SMART_GADDR_NULL;
		     j++) {
			uint64_t v = op->bk[b].slot[j];
			const struct ht_known *k = v && HT_SLOT_FP(
								v) == op->fp ?
							   known_find(op, v) :
							   NULL;
			struct ht_cand c;

			if (!k || !k->match)
				continue;
			if (!(v & HT_SLOT_TENT))
				return SMART_EEXIST;
			c = (struct ht_cand){ .addr = slot_addr(op, b, j),
					      .val = v,
					      .match = 1,
					      .owner = k->owner };
			return tent_clear_dead(op, &c), SMART_EAGAIN;
		}
	return 0;
}

/* Place our tentative slot: CAS it, read the blocks of the slots that
 * share our fingerprint (as the first read showed them) and re-read the
 * buckets, all in one batch; insert_resolve decides on that view. */
static int insert_place(struct ht_op *op)
{
	uint64_t tent = op->blk_slot | HT_SLOT_TENT, *old = &op->word[1];
	smart_gaddr_t addr;
	int rc, rc2, n;

	rc = op_read(op, RD_BLK);
	if (!rc)
		rc = op_hook(op, "ht.insert.read");
	if (rc)
		return rc;
	if (op_frozen(op))
		return SMART_EAGAIN; /* wait for the split to settle */
	rc = place_known(op);
	if (rc)
		return rc;
	addr = op_empty(op);
	if (addr == SMART_GADDR_NULL) {
		/* all 28 slots taken: split the subtable, then retry */
		rc = smart__ht_split(op->t, op->w, op->sh, op->sub, op->ent);
		return rc ? rc : SMART_EAGAIN;
	}
	/* from here readers may see the block: it is never freed at once */
	op->blk_state = BLK_SEEN;
	known_add(op, tent, 1, op->sh->lease);
	rc = smart_cas(op->w, addr, 0, tent, old);
	if (!rc)
		rc = collect_queue(op, 1, 1, &n);
	if (!rc)
		rc = op_queue_reads(op, 0);
	rc2 = smart_sync(op->w);
	rc = rc ? rc : rc2;
	if (rc || *old == 0)
		op->own = addr; /* perhaps ours: withdrawn if we give up */
	if (!rc)
		rc = collect_done(op);
	if (rc)
		return rc;
	if (*old)
		return SMART_EAGAIN;
	rc = op_hook(op, "ht.insert.placed");
	return rc ? rc : op_reads_done(op, 0);
}

/* Take our tentative slot back (the CAS fails harmlessly if it was
 * killed or frozen meanwhile). */
static int insert_withdraw(struct ht_op *op)
{
	uint64_t *old = &op->word[1];
	int rc = smart_cas_sync(op->w, op->own, op->blk_slot | HT_SLOT_TENT, 0,
				old);

	op->own = SMART_GADDR_NULL;
	if (rc)
		op->blk_state = BLK_UNKNOWN; /* a slot may still hold it */
	return rc ? rc : SMART_EEXIST;
}

/* Kill the tentative duplicates above us; EAGAIN if one changed.  A
 * killed slot's holder retires its block when it sees the kill; one that
 * is dead cannot, and then we do. */
static int insert_kill_dups(struct ht_op *op)
{
	uint64_t *old = &op->word[1];
	int i, rc;

	for (i = 0; i < op->ncand; i++) {
		const struct ht_cand *c = &op->cand[i];

		if (!c->match || c->addr == op->own)
			continue;
		rc = smart_cas_sync(op->w, c->addr, c->val, 0, old);
		if (rc)
			return rc;
		if (*old != c->val && *old)
			return SMART_EAGAIN;
		if (*old == c->val && !SMART_M_HT_NO_TENT_RECOVERY &&
		    c->owner != op->sh->lease &&
		    smart_lease_alive_now(op->w, op->sh->blade, c->owner) ==
			    0) {
			op_retire(op, c->val);
			count(&op->t->tent_cleared);
		}
	}
	return 0;
}

/* Our tentative slot is gone (killed by a lower duplicate, or frozen or
 * dropped by a split) or no longer where the key lives: start over; a
 * winner that committed is then seen as a duplicate. */
static int insert_restart(struct ht_op *op, int withdraw)
{
	if (withdraw)
		(void)insert_withdraw(op);
	op->own = SMART_GADDR_NULL;
	return SMART_EAGAIN;
}

/* Commit: our tentative slot becomes the key's slot. */
static int insert_commit(struct ht_op *op)
{
	uint64_t tent = op->blk_slot | HT_SLOT_TENT, *old = &op->word[1];
	int rc;

	rc = smart_cas_sync(op->w, op->own, tent, op->blk_slot, old);
	if (!rc)
		rc = op_hook(op, "ht.insert.committed");
	if (rc) {
		int o = cas_outcome(op, op->own, tent, op->blk_slot);

		if (o == CAS_DONE) {
			*old = tent; /* it did commit */
		} else if (o == CAS_NOT_DONE) {
			return SMART_EAGAIN; /* commit again */
		} else {
			/* changed since: killed by a duplicate, or committed
			 * and then replaced or deleted by another client,
			 * who retired our block - or unreadable.  Placing
			 * that block again could link a freed block: give
			 * up on it (leaked, counted) and report the error */
			op->own = SMART_GADDR_NULL;
			op->blk_state = BLK_UNKNOWN;
			return rc;
		}
	}
	if (*old != tent)
		return insert_restart(op, 0);
	op->own = SMART_GADDR_NULL;
	op->blk_state = BLK_NONE; /* the table's now */
	spec_store(op, op->blk_slot);
	return 0;
}

/* Decide on the view just read (our slot placed). */
static int insert_resolve(struct ht_op *op)
{
	uint64_t tent = op->blk_slot | HT_SLOT_TENT, now;
	int i, rc, found;

	now = op_slot_now(op, op->own, &found);
	if (!found)
		return insert_restart(op, 1);
	if (now != tent)
		return insert_restart(op, 0);
	if (op_frozen(op))
		return SMART_EAGAIN;
	if (!SMART_M_HT_NO_DUP_CHECK) {
		rc = op_collect(op, 1, 1);
		if (rc)
			return rc;
		for (i = 0; i < op->ncand; i++) {
			const struct ht_cand *c = &op->cand[i];

			if (!c->match || c->addr == op->own)
				continue;
			if (!(c->val & HT_SLOT_TENT))
				return insert_withdraw(op);
			if (tent_clear_dead(op, c))
				return SMART_EAGAIN; /* re-read, then */
			/* a lower tentative duplicate goes first; we report
			 * EEXIST only once we have seen it committed
			 * (linearizability) */
			if (c->addr < op->own)
				return insert_restart(op, 1);
		}
		rc = insert_kill_dups(op);
		if (rc)
			return rc;
	}
	rc = op_hook(op, "ht.insert.resolved");
	return rc ? rc : insert_commit(op);
}

static int insert_once(struct ht_op *op, void *arg)
{
	int rc;

	(void)arg;
	rc = op->own == SMART_GADDR_NULL ? insert_place(op) : op_read(op, 0);
	return rc ? rc : insert_resolve(op);
}

/* ---- update, delete, search -------------------------------------------- */

/* The CAS old -> repl of the key's slot failed to sync (rc): did it
 * happen?  0: it did (carry on as a success); 1: unknown, but an update
 * may linearize just before whatever changed the slot since (success,
 * both blocks left alone); else the error to return. */
static int replace_uncertain(struct ht_op *op, const struct ht_cand *c,
			     uint64_t repl, int blk_prev, int rc)
{
	int o = SMART_M_HT_UNCERTAIN_FREE ?
			CAS_NOT_DONE :
			cas_outcome(op, c->addr, c->val, repl);

	if (o == CAS_DONE)
		return 0;
	if (o == CAS_NOT_DONE) {
		if (repl)
			op->blk_state = blk_prev; /* not published here */
		return rc;
	}
	/* neither block may be freed by us: one of them may be linked, or
	 * retired by whoever changed the slot since */
	if (repl)
		op->blk_state = BLK_UNKNOWN;
	count(&op->t->leaked);
	/* a delete cannot linearize so (the change may be another delete) */
	return repl && o == CAS_CHANGED ? 1 : rc;
}

/* Swing the key's slot to `repl` (the op's new block, or 0 to delete) by
 * CAS; update and delete differ only in that value and in whether the new
 * block rides along with the bucket reads. */
static int replace_once(struct ht_op *op, int with_block)
{
	uint64_t repl = with_block ? op->blk_slot : 0, *old = &op->word[1];
	const struct ht_cand *c;
	int rc, blk_prev;

	rc = op_read(op, (with_block ? RD_BLK : 0) | RD_ENT);
	if (!rc)
		rc = op_key_slot(op, &c);
	if (rc)
		return rc;
	if (c->val & HT_SLOT_FROZEN)
		return SMART_EAGAIN; /* wait for the split to settle */
	/* perhaps seen from the CAS on; a failed CAS puts back what it was
	 * (an upsert's earlier insert attempt may have published it as a
	 * tentative slot: then it needs a grace period, never a free) */
	blk_prev = op->blk_state;
	if (with_block)
		op->blk_state = BLK_SEEN;
	rc = smart_cas_sync(op->w, c->addr, c->val, repl, old);
	if (!rc)
		rc = op_hook(op,
			     with_block ? "ht.update.cas" : "ht.delete.cas");
	if (rc) {
		rc = replace_uncertain(op, c, repl, blk_prev, rc);
		if (rc == 1)
			return 0; /* done, the old block left alone */
		if (rc)
			return rc;
		*old = c->val; /* it did happen */
	}
	if (*old != c->val) {
		if (with_block)
			op->blk_state = blk_prev;
		return SMART_EAGAIN;
	}
	if (with_block)
		op->blk_state = BLK_NONE; /* the table's now */
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

static int search_copy(const struct ht_kv *kv, struct search_out *o)
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
	if (SMART_M_HT_SPEC_NO_CHECK)
		return 1;
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

	/* a speculation that hits needs no validation: read the entry only
	 * without one (a miss after a failed speculation reads it then) */
	rc = op_read(op, op->spec ? 0 : RD_ENT);
	if (rc)
		return rc;
	rc = op_hook(op, "ht.search.read");
	if (rc)
		return rc;
	if (op->spec && spec_hit(op))
		return search_copy(op->sbuf, arg);
	op->spec = 0; /* missed: plain lookup from here on */
	rc = op_key_slot(op, &c);
	if (rc)
		return rc;
	if (c->val & HT_SLOT_FROZEN) {
		count(&op->t->frozen_hits);
		rc = op_verify(op);
		if (rc)
			return rc;
	} else {
		spec_store(op, c->val);
	}
	return search_copy(c->kv, arg);
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

/* After a failed insert: take our tentative slot back if we can; then a
 * block readers may have seen is retired, unless a slot may still hold it
 * (then whoever clears that slot retires it: we are dead to them). */
static void insert_cleanup(struct ht_op *op)
{
	if (op->own != SMART_GADDR_NULL)
		(void)insert_withdraw(op);
	if (op->blk_state == BLK_SEEN) {
		op_retire(op, op->blk_slot);
		op->blk_state = BLK_NONE;
	}
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
	if (rc)
		insert_cleanup(&op);
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
		rc = insert_once(op, NULL);
		if (rc != SMART_EEXIST)
			return rc;
	}
	for (i = 0; i < HT_UPSERT_MAX; i++) {
		rc = update_once(op, NULL);
		if (rc != SMART_ENOENT)
			return rc;
		rc = insert_once(op, NULL);
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
